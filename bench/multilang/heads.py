#!/usr/bin/env python3
"""Offline study of chunk heads as a third signal of hybrid fusion (issue 27).

    bench/multilang/heads.py [--lang python ...] [--split train|eval ...] [--head VIEW ...]
                             [--weights 0.2,0.3,0.4]

A chunk's vector sums every word of its text; its head (the symbol, the scope labels, the first
non-blank line) says what it is. For each query of fusion.py's cached lists this embeds the
head of every candidate (both lists' top 50) with the built-in table, as lode does at query
time (`crate::heads`), and adds W x the standard score of the head's cosine to the query to
fusion.py's `standard` rule at lode's per-language semantic weight. The spread of the head
cosines is pooled like the others (typical 0.14, the median over the evaluation sets; at least
0.02). Heads compared (`--head`):

`--semantic-weights` fits the cosine's weight beside the heads (issue 43's languages: each
weight of the grid with each head weight, on the training split).

- `symbol-scope-line`: the symbol, its scope labels and the first line (what lode embeds,
  weighed 0.3, or 0.1 in Rust workspaces);
- `symbol`, `symbol-scope`, `symbol-line`: parts of it;
- `line`: the first line alone;
- `naming-line`: the first of the first 8 lines that holds the symbol's name.

Reads the lists (run fusion.py first), each set's catalog (bench/out/multilang/.../corpus/
.lode/index/catalog.sqlite, written by lode) and the table in assets/embeddings. Needs numpy
(the bench venv: scripts/install-test-tools.sh).
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "scripts" / "embeddings"))
import fusion  # noqa: E402
from eval import LANGS, SET_DIRS  # noqa: E402

TABLE = ROOT / "assets" / "embeddings" / "static-minilm.bin"
# hybrid.rs's calibrated_semantic_weight, with the heads.
SEMANTIC_WEIGHT = {"python": 0.5, "javascript": 0.5, "go": 0.5, "typescript": 1.0, "rust": 1.5,
                   "java": 1.0, "c": 0.5, "cpp": 0.5, "csharp": 1.0, "ruby": 0.75, "php": 0.5}
# hybrid.rs's heads_weight.
HEADS_WEIGHT = {"javascript": 0.5, "rust": 0.1}
TYPICAL_HEAD_SPREAD = 0.14  # hybrid.rs's spread_prior::HEAD_COSINE
SCOPE_SEPARATOR = "\x1f"  # the catalog's separator of scope labels
VIEWS = ["symbol-scope-line", "symbol", "symbol-scope", "symbol-line", "line", "naming-line"]


def first_line(text: str) -> str:
    """The first non-blank line, trimmed (embed/text.rs's chunk_head_text)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def head_text(view: str, symbol: str | None, scope: list[str], text: str) -> str:
    """A chunk's head as `view` sees it; `symbol-scope-line` is lode's chunk_head_text."""
    symbol_part = [symbol] if symbol else []
    if view == "symbol-scope-line":
        return " ".join(symbol_part + scope + [first_line(text)])
    if view == "symbol":
        return symbol or ""
    if view == "symbol-scope":
        return " ".join(symbol_part + scope)
    if view == "symbol-line":
        return " ".join(symbol_part + [first_line(text)])
    if view == "line":
        return first_line(text)
    if view == "naming-line":
        lines = [line.strip() for line in text.splitlines() if line.strip()][:8]
        naming = [line for line in lines if symbol and symbol in line]
        return naming[0] if naming else (lines[0] if lines else "")
    raise ValueError(view)


def head_vectors(table, split: str, lang: str, view: str):
    """Chunk key ("path:start-end") -> row index, and the heads' vectors."""
    catalog = SET_DIRS[split] / lang / "corpus" / ".lode" / "index" / "catalog.sqlite"
    db = sqlite3.connect(catalog)
    keys, texts = [], []
    for path, start, end, symbol, scope, text in db.execute(
            "SELECT f.path, c.start_line, c.end_line, c.symbol, c.scope, c.text "
            "FROM chunks c JOIN files f ON f.id = c.file_id"):
        labels = [label for label in scope.split(SCOPE_SEPARATOR) if label]
        keys.append(f"{path}:{start}-{end}")
        texts.append(head_text(view, symbol, labels, text))
    db.close()
    return {key: at for at, key in enumerate(keys)}, table.embed(texts)


def with_heads(row: dict, lang: str, weight: float, cosine_of,
               semantic_weight: float | None = None) -> list[bool]:
    """The top 10 (hit flags) of `standard` (at the language's semantic weight, or
    `semantic_weight`) plus `weight` x the heads' standard scores."""
    if semantic_weight is None:
        semantic_weight = SEMANTIC_WEIGHT[lang]
    candidates, hit, fused = fusion.fused_scores(row, "standard", semantic_weight)
    if weight > 0 and candidates:
        add_heads(fused, {c: cosine_of(c) for c in candidates}, weight)
    return fusion.top_flags(candidates, hit, fused)


def add_heads(fused: dict, cosines: dict, weight: float) -> None:
    """Adds `weight` x the standard score of each candidate's head cosine to its `fused` score
    (a cosine of None, a chunk no longer in the catalog, adds nothing): hybrid.rs's heads."""
    known = [value for value in cosines.values() if value is not None]
    mean, spread = fusion.standardised(known, TYPICAL_HEAD_SPREAD, fusion.MIN_COSINE_SPREAD)
    for c, value in cosines.items():
        if value is not None:
            fused[c] += weight * (value - mean) / spread


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lang", action="append", choices=LANGS)
    parser.add_argument("--split", action="append", choices=["train", "eval"])
    parser.add_argument("--head", action="append", choices=VIEWS)
    parser.add_argument("--weights", default="0.2,0.3,0.4")
    parser.add_argument("--semantic-weights",
                        help="fit the cosine's weight too: try each of these (e.g. 0.5,1,1.5) "
                             "instead of the language's SEMANTIC_WEIGHT, with each head weight")
    args = parser.parse_args()
    from statictable import Table  # numpy: imported only when the study runs

    table = Table(TABLE)
    weights = [0.0] + [float(w) for w in args.weights.split(",")]
    semantic_weights = ([float(w) for w in args.semantic_weights.split(",")]
                        if args.semantic_weights else [None])
    langs, splits = args.lang or LANGS, args.split or ["train", "eval"]
    report: dict = {}
    for view in args.head or ["symbol-scope-line"]:
        for split in splits:
            for lang in langs:
                rows = fusion.lists_for(lang, split, 2, False)
                index, vectors = head_vectors(table, split, lang, view)
                queries = [json.loads(line) for line in
                           (SET_DIRS[split] / lang / "queries.jsonl").read_text().splitlines()]
                query_vectors = table.embed([q["query"] for q in queries])
                single = max(fusion.mrr([[f for _, _, f in r["lexical"]] for r in rows]),
                             fusion.mrr([[f for _, _, f in r["semantic"]] for r in rows]))
                for semantic_weight in semantic_weights:
                    for weight in weights:
                        flags = []
                        for row, query_vector in zip(rows, query_vectors):
                            def cosine_of(key, query_vector=query_vector):
                                at = index.get(key)
                                return None if at is None else float(vectors[at] @ query_vector)
                            flags.append(with_heads(row, lang, weight, cosine_of, semantic_weight))
                        value = fusion.mrr(flags)
                        name = str(weight) if semantic_weight is None else f"{weight} S={semantic_weight}"
                        report.setdefault(view, {}).setdefault(name, {})[f"{split} {lang}"] = {
                            "mrr": value, "ratio": value / single}
        for weight, cells in report[view].items():
            mean = sum(cell["ratio"] for cell in cells.values()) / len(cells)
            line = "  ".join(f"{name} {cell['mrr']:.3f} ({cell['ratio']:.2f}x)"
                             for name, cell in cells.items())
            print(f"{view} W={weight}: mean {mean:.3f}x best single | {line}", flush=True)
    out = fusion.OUT / "heads.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
