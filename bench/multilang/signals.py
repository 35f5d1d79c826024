#!/usr/bin/env python3
"""Offline study of further signals for hybrid fusion on sentences (issue 43).

    bench/multilang/signals.py [--lang c ...] [--split train|eval ...] [--depth 100]
                               [--grid kind=0,1,2.5 ...] [--grid name=0,0.2 ...]

On fusion.py's cached lists (run eval.py, then fusion.py --refresh-lists, with the binary that
indexed the sets) it scores lode's standard fusion with the heads (heads.py, symbol-scope-line
at lode's weights) plus signals read from each set's catalog, each weighed by a grid:

- `kind`: hybrid.rs's callable prior (`CALLABLE_WEIGHT`): 1 for a chunk that does something (a
  function or method, a Markdown section, code that defines nothing, a JavaScript variable, a
  chunk whose symbol the query writes in code form), 0 for one that only declares (a type's
  head, fields, constants, a module, a macro), added as it is; `--callables` sets the kinds that
  count (NULL: no definition; function-macro: a C macro with parameters);
- `name`: the share of the candidate symbol's words (split at `_` and case changes) that the
  query holds, a word matching when its first four letters agree, as a standard score (tried
  for issue 43 and left out: it lowered the mean ratio at every weight);
- `semantic`, `heads`: lode's weights by default, or these to refit them beside the others.

`--depth` is the candidates taken from each list (hybrid.rs's candidate_depth: 100 for standard
scores). Prints MRR@10 and the ratio to the best single mode per language for the best points of
the grid, by the mean ratio over the languages asked. Needs numpy (the bench venv).
"""
from __future__ import annotations

import argparse
import itertools
import json
import re
import sqlite3
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "scripts" / "embeddings"))
import fusion  # noqa: E402
import heads  # noqa: E402
from eval import SET_DIRS  # noqa: E402

LANGS = ["java", "c", "cpp", "csharp", "ruby", "php"]
PREFIX = 4
STOP = set("a an the of to in on for and or is are be by with from as at it its this that "
           "if not no into when which than then else all any each was were will can may "
           "return returns returned".split())


def words(text: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", spaced)
    return [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", spaced)]


def stems(text: str) -> set[str]:
    return {w[:PREFIX] for w in words(text) if w not in STOP and len(w) > 1}


def catalog_rows(split: str, lang: str) -> dict:
    catalog = SET_DIRS[split] / lang / "corpus" / ".lode" / "index" / "catalog.sqlite"
    db = sqlite3.connect(catalog)
    rows = {}
    for path, start, end, symbol, kind, text, defined in db.execute(
            "SELECT f.path, c.start_line, c.end_line, c.symbol, c.kind, c.text, c.defined_names "
            "FROM chunks c JOIN files f ON f.id = c.file_id"):
        if kind == "macro" and symbol and re.search(r"#\s*define\s+" + re.escape(symbol) + r"\(", text):
            kind = "function-macro"
        rows[f"{path}:{start}-{end}"] = (symbol or "", kind or "",
                                         [n for n in defined.split(heads.SCOPE_SEPARATOR) if n])
    db.close()
    return rows


def identifier_like(word: str) -> bool:
    """hybrid.rs's identifier_like: snake_case, camelCase, a::b, a.b, a/b, f(."""
    trimmed = word.strip("".join(c for c in map(chr, range(128)) if not (c.isalnum() or c == "_")))
    return ("_" in trimmed or "::" in trimmed or "." in trimmed or "/" in trimmed or "(" in trimmed
            or (any(c.isupper() for c in trimmed[1:]) and any(c.islower() for c in trimmed)))


def names_in_code_form(query: str) -> set[str]:
    """hybrid.rs's names_in_code_form: the query's identifier-like words, stripped of the
    punctuation around them."""
    return {re.sub(r"^[^A-Za-z0-9_]+|[^A-Za-z0-9_]+$", "", word)
            for word in query.split() if identifier_like(word)} - {""}


def does_something(lang: str, row: tuple, callables: set[str], named: set[str]) -> bool:
    """hybrid.rs's callable prior: a callable kind (or none), a JavaScript variable (functions
    are values there), or a chunk whose symbol the query writes in code form."""
    symbol, kind, _ = row
    return ((kind or "NULL") in callables or (lang == "javascript" and kind == "variable")
            or (bool(symbol) and symbol in named))


def name_share(query_stems: set[str], symbol: str) -> float:
    symbol_stems = [w[:PREFIX] for w in words(symbol) if len(w) > 1]
    if not symbol_stems:
        return 0.0
    return sum(1 for s in symbol_stems if s in query_stems) / len(symbol_stems)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lang", action="append")
    parser.add_argument("--split", action="append", choices=["train", "eval"])
    parser.add_argument("--grid", action="append", default=[],
                        help="signal=w1,w2,... (name, kind, semantic, heads)")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--rule", default="standard", choices=["standard", "standard-exact"])
    parser.add_argument("--depth", type=int, default=fusion.TOP,
                        help="candidates taken from each list (lode: candidate_depth)")
    parser.add_argument("--callables", default="function,method,section,NULL",
                        help="the kinds `kind` favours, comma-separated (NULL: no definition; "
                             "function-macro: a C macro with parameters)")
    args = parser.parse_args()
    from statictable import Table

    grid = {"name": [0.0], "kind": [0.0], "semantic": [None], "heads": [None]}
    for spec in args.grid:
        key, values = spec.split("=")
        grid[key] = [float(v) for v in values.split(",")]
    table = Table(heads.TABLE)
    fusion.TOP = args.depth
    callables = set(args.callables.split(","))
    langs, splits = args.lang or LANGS, args.split or ["train"]
    prepared = {}
    for split in splits:
        for lang in langs:
            rows = fusion.lists_for(lang, split, 2, False)
            index, vectors = heads.head_vectors(table, split, lang, "symbol-scope-line")
            catalog = catalog_rows(split, lang)
            queries = [json.loads(line) for line in
                       (SET_DIRS[split] / lang / "queries.jsonl").read_text().splitlines()]
            query_vectors = table.embed([q["query"] for q in queries])
            single = max(fusion.mrr([[f for _, _, f in r["lexical"]] for r in rows]),
                         fusion.mrr([[f for _, _, f in r["semantic"]] for r in rows]))
            per_query = []
            for row, qv in zip(rows, query_vectors):
                candidates = list({k: None for k, _, _ in row["lexical"][:fusion.TOP] +
                                   row["semantic"][:fusion.TOP]})
                head = {}
                for c in candidates:
                    at = index.get(c)
                    head[c] = None if at is None else float(vectors[at] @ qv)
                q_stems = stems(row["query"])
                name = {c: name_share(q_stems, catalog.get(c, ("", "", []))[0]) for c in candidates}
                named = names_in_code_form(row["query"])
                kind = {c: 1.0 if does_something(lang, catalog.get(c, ("", "", [])), callables, named)
                        else 0.0 for c in candidates}
                per_query.append((row, head, name, kind))
            prepared[(split, lang)] = (per_query, single)

    results = []
    keys = list(grid)
    for point in itertools.product(*(grid[k] for k in keys)):
        weights = dict(zip(keys, point))
        cells = {}
        for (split, lang), (per_query, single) in prepared.items():
            semantic = weights["semantic"] if weights["semantic"] is not None else heads.SEMANTIC_WEIGHT[lang]
            head_weight = weights["heads"] if weights["heads"] is not None else heads.HEADS_WEIGHT.get(lang, 0.3)
            flags = []
            for row, head, name, kind in per_query:
                candidates, hit, fused = fusion.fused_scores(row, args.rule, semantic)
                if head_weight:
                    heads.add_heads(fused, head, head_weight)
                name_values = [name[c] for c in candidates]
                name_mean, name_spread = fusion.standardised(name_values, 0.2, 0.05)
                for c in candidates:
                    if weights["name"]:
                        fused[c] += weights["name"] * (name[c] - name_mean) / name_spread
                    if weights["kind"]:
                        fused[c] += weights["kind"] * kind[c]
                flags.append(fusion.top_flags(candidates, hit, fused))
            value = fusion.mrr(flags)
            cells[f"{split} {lang}"] = (value, value / single)
        mean_ratio = sum(r for _, r in cells.values()) / len(cells)
        results.append((mean_ratio, weights, cells))
    results.sort(key=lambda item: -item[0])
    for mean_ratio, weights, cells in results[:args.top]:
        label = " ".join(f"{k}={v}" for k, v in weights.items())
        line = "  ".join(f"{name} {m:.3f} ({r:.3f}x)" for name, (m, r) in cells.items())
        print(f"{label}: mean {mean_ratio:.3f}x | {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
