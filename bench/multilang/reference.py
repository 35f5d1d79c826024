#!/usr/bin/env python3
"""Plain BM25 over ideal function chunks: issue 27's reference for the table (semantic mode).

Issue 27 asks that `lode search --mode semantic` reach "plain BM25 over ideal function
chunks" in every language. This builds that reference on the sets build.py made: every
function or method of the blanked corpus (bench/out/multilang/<lang>/corpus) is one document,
spanning exactly the lines build.py gives a gold function (a Python function with its
decorators, a JS/TS declaration with its `export`, a TypeScript overload signature alone and
with the signatures and implementation after it, a Rust function with its attributes; in
issue 43's languages every function and method lode-syntax finds, from its signature's first
token, annotations and attributes included), and nothing else is indexed. Each query of queries.jsonl is scored with Okapi BM25 (k1 1.2,
b 0.75, Lucene's idf) and judged by eval.py's rule, so a hit is the gold function or a nested
function inside it.

"Plain" means the standard word tokenizer: lower-cased runs of letters, digits and `_` (as
Lucene's standard analyzer and scikit-learn split text), no stemming, no stop words, so
`get_user` and `getUser` stay one word each. `--split-identifiers` also splits them at `_` and
at lower-to-upper case changes, for a stronger reference.

    bench/multilang/reference.py [--lang python ...] [--split train|keep-rest|...] [--split-identifiers]

Needs the tree-sitter grammars (the bench virtualenv that bench/multilang/run.sh makes).
Writes bench/out/multilang/reference.json and prints a Markdown table.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import lode_docs
from build import (EXTENSIONS, JS_FUNCTIONS, LANGS, OUT, first_attribute, js_declared_name, overload_end,
                   parser_for, with_decorators)
from eval import SET_DIRS, is_hit, metrics

K1 = 1.2
B = 0.75
WORD = re.compile(r"\w+")
CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@dataclass
class Function:
    path: str
    start_line: int
    end_line: int
    text: str


def tokenize(text: str, split_identifiers: bool = False) -> list[str]:
    words = WORD.findall(text)
    if not split_identifiers:
        return [w.lower() for w in words]
    tokens = []
    for word in words:
        for part in word.split("_"):
            tokens.extend(p.lower() for p in CAMEL_BOUNDARY.split(part) if p)
    return tokens


def _line_span(start_node, end_node) -> tuple[int, int]:
    return start_node.start_point[0] + 1, end_node.end_point[0] + 1


def function_spans(lang: str, tree) -> list[tuple[int, int]]:
    """The 1-based line range of every function or method, as build.py draws a gold's range."""
    spans = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.named_children)
        if lang == "python" and node.type == "function_definition":
            outer = with_decorators(node)
            spans.append(_line_span(outer, outer))
        elif lang in ("javascript", "typescript") and node.type in JS_FUNCTIONS:
            name = js_declared_name(node)
            if name is None:
                continue
            outer = node.parent if node.parent is not None and node.parent.type == "export_statement" else node
            spans.append(_line_span(outer, outer))
            if node.type == "function_signature":  # a documented overload is its own signature
                spans.append(_line_span(outer, overload_end(outer, name)))
        elif lang == "go" and node.type in ("function_declaration", "method_declaration"):
            spans.append(_line_span(node, node))
        elif lang == "rust" and node.type == "function_item":
            spans.append(_line_span(first_attribute(node), node))
    return spans


def lode_function_spans(paths: list[Path], lang: str) -> list[list[tuple[int, int]]]:
    """Issue 43's languages: every function and method lode-syntax finds in each file (its
    definition's own lines, as build.py draws a gold's range there)."""
    return [sorted({tuple(s["lines"]) for s in record["symbols"] if s["kind"] in lode_docs.FUNCTION_KINDS})
            if record["language"] == lang else []
            for record in lode_docs.doc_spans(paths)]


def functions_of(lang: str, corpus: Path) -> list[Function]:
    paths = sorted(p for p in corpus.rglob("*") if p.is_file() and p.suffix in EXTENSIONS[lang])
    if lang in lode_docs.LANGS:
        spans = lode_function_spans(paths, lang)
    else:
        parser = parser_for(lang)
        spans = [sorted(set(function_spans(lang, parser.parse(path.read_bytes())))) for path in paths]
    found = []
    for path, file_spans in zip(paths, spans):
        lines = path.read_bytes().decode("utf-8", "replace").split("\n")
        relative = path.relative_to(corpus).as_posix()
        for start, end in file_spans:
            found.append(Function(relative, start, end, "\n".join(lines[start - 1:end])))
    return found


class Bm25:
    """Okapi BM25 over a fixed list of documents (an inverted index of term frequencies)."""

    def __init__(self, documents: list[list[str]]):
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.lengths = [len(d) for d in documents]
        self.average = sum(self.lengths) / max(len(documents), 1)
        for doc_id, tokens in enumerate(documents):
            for term, tf in Counter(tokens).items():
                self.postings[term].append((doc_id, tf))
        n = len(documents)
        self.idf = {t: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5)) for t, p in self.postings.items()}

    def top(self, query: list[str], limit: int) -> list[int]:
        scores: dict[int, float] = defaultdict(float)
        for term in set(query):
            idf = self.idf.get(term)
            if idf is None:
                continue
            for doc_id, tf in self.postings[term]:
                norm = K1 * (1 - B + B * self.lengths[doc_id] / self.average)
                scores[doc_id] += idf * tf * (K1 + 1) / (tf + norm)
        return sorted(scores, key=lambda d: (-scores[d], d))[:limit]


def evaluate(lang: str, sets: Path, split_identifiers: bool) -> dict:
    corpus = sets / lang / "corpus"
    queries = [json.loads(line) for line in (sets / lang / "queries.jsonl").read_text().splitlines()]
    functions = functions_of(lang, corpus)
    index = Bm25([tokenize(f.text, split_identifiers) for f in functions])
    ranks = []
    for q in queries:
        hits = [functions[d] for d in index.top(tokenize(q["query"], split_identifiers), 10)]
        ranks.append(next((i + 1 for i, f in enumerate(hits)
                           if is_hit({"path": f.path, "start_line": f.start_line, "end_line": f.end_line},
                                     q["gold"])), None))
    result = metrics(ranks, [q["name_overlap"] for q in queries])
    result.update({"language": lang, "functions": len(functions), "ranks": ranks})
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lang", action="append", choices=LANGS)
    parser.add_argument("--split", choices=list(SET_DIRS), default="eval")
    parser.add_argument("--split-identifiers", action="store_true")
    parser.add_argument("--output", type=Path, default=OUT / "reference.json")
    args = parser.parse_args()
    sets = SET_DIRS[args.split]
    results = []
    for lang in args.lang or LANGS:
        if not (sets / lang / "queries.jsonl").is_file():
            sys.exit(f"reference.py: no set for {lang} in {sets}; run bench/multilang/build.py first")
        results.append(evaluate(lang, sets, args.split_identifiers))
        print(f"  {lang}: {json.dumps({k: v for k, v in results[-1].items() if k != 'ranks'})}", file=sys.stderr)
    args.output.write_text(json.dumps({"split_identifiers": args.split_identifiers, "results": results}) + "\n")
    print("| language | functions | queries | MRR@10 | R@1 | R@10 | no-name-overlap MRR |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['language']} | {r['functions']} | {r['n']} | {r['mrr10']:.3f} | {r['r1']:.3f} | "
              f"{r['r10']:.3f} | {r['no_name_mrr10']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
