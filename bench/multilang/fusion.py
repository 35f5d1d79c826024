#!/usr/bin/env python3
"""Offline study of hybrid fusion on the per-language sets (issue 27).

    bench/multilang/fusion.py [--lang python ...] [--split train|eval ...] [--refresh-lists]

For every query of the sets that build.py made it takes a deep lexical list (`--mode lexical
--limit 2000`; the fusions take its top 50) and a deep semantic list (`--mode semantic
--limit 2000`, every chunk above the table's floor up to that depth), once, and caches them in
bench/out/multilang/lists/. Then it scores fusions of the two without running lode again, so
that a fusion rule can be chosen on the training split and checked on the evaluation split:

- `scaled`: BM25 / best BM25 + W x cosine over the two lists' top 50 (what lode did until
  issue 27's fusion work; a chunk missing from a list adds nothing for it);
- `complete`: the same, with every candidate's cosine known (read from the deep list), as
  lode's table signal already does for other embedders;
- `standard`: each list's scores as standard scores over its own top 50 (the spread pooled
  with a typical one worth 5 candidates, cosines' at least 0.02), every candidate's cosine known, a chunk BM25 did not list counted as its
  lowest score and one under the table's floor as the floor: what lode does since issue 27
  (`FusionMethod::Standardised`), so a list whose best hits stand out for a query gets the
  larger say for it;
- `standard-exact`: the same, but a candidate BM25 did not list in its top 50 gets its own
  BM25 from the deep list (0 when it holds no query word), not the list's lowest score.

A hit counts by eval.py's rule (`is_hit`). The corpora must be indexed by the binary that
answers (LODE_BIN, else target/release/lode): run eval.py first, or `lode index` in each.
Standard library only.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from eval import LANGS, LODE, OUT, SET_DIRS, is_hit  # noqa: E402

LISTS = OUT / "lists"
LEXICAL_DEPTH = 2000  # deep, so that the BM25 of a semantic candidate is known too
SEMANTIC_DEPTH = 2000
TOP = 50  # candidates taken from each list, as lode's hybrid search does (candidate_depth)
TABLE_FLOOR = 0.3  # the built-in table's relevance floor (STATIC_RELEVANCE_FLOOR)
# hybrid.rs's spread_prior: a list's spread is pooled with a typical one worth 5 scores.
SPREAD_PRIOR_WEIGHT = 5.0
TYPICAL_COSINE_SPREAD = 0.05
TYPICAL_BM25_SPREAD = 0.12  # of the query's best BM25 score
MIN_COSINE_SPREAD = 0.02


def ranked(corpus: Path, query: str, mode: str, depth: int) -> list[dict]:
    command = [str(LODE), "search", "--json", "--no-refresh", "--mode", mode, "--limit",
               str(depth), "--", query]
    done = subprocess.run(command, cwd=corpus, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(command)}: {done.stderr.strip()[-500:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def collect(lang: str, split: str, jobs: int) -> list[dict]:
    """One row per query: its gold, the lexical list and the deep semantic list, each as
    [key, score, hit] with key = "path:start-end"."""
    sets = SET_DIRS[split]
    corpus = sets / lang / "corpus"
    queries = [json.loads(line) for line in (sets / lang / "queries.jsonl").read_text().splitlines()]

    def compact(hits, gold):
        return [[f"{h['path']}:{h['start_line']}-{h['end_line']}", h["score"], is_hit(h, gold)]
                for h in hits]

    def row(q):
        return {"query": q["query"],
                "lexical": compact(ranked(corpus, q["query"], "lexical", LEXICAL_DEPTH), q["gold"]),
                "semantic": compact(ranked(corpus, q["query"], "semantic", SEMANTIC_DEPTH), q["gold"])}

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(row, queries))


def lists_for(lang: str, split: str, jobs: int, refresh: bool) -> list[dict]:
    path = LISTS / f"{split}-{lang}.json"
    if refresh or not path.is_file():
        rows = collect(lang, split, jobs)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"lode": str(LODE), "rows": rows}))
        return rows
    return json.loads(path.read_text())["rows"]


def standardised(scores: list[float], typical: float, min_spread: float = 0.0) -> tuple[float, float]:
    """The mean of `scores` and their spread pooled with `typical` (worth SPREAD_PRIOR_WEIGHT
    scores), at least `min_spread`: hybrid.rs's `Spread::of`."""
    if not scores:
        return 0.0, 1.0
    mean = sum(scores) / len(scores)
    squares = sum((s - mean) ** 2 for s in scores)
    pooled = (squares + SPREAD_PRIOR_WEIGHT * typical ** 2) / (len(scores) + SPREAD_PRIOR_WEIGHT)
    return mean, max(math.sqrt(pooled), min_spread) or 1.0


def fuse(row: dict, rule: str, weight: float) -> list[bool]:
    """The fused top 10 of a row, as hit flags."""
    candidates, hit, fused = fused_scores(row, rule, weight)
    return top_flags(candidates, hit, fused)


def top_flags(candidates: list[str], hit: dict, fused: dict) -> list[bool]:
    """The hit flags of the 10 best `candidates` by `fused` score."""
    order = sorted(candidates, key=lambda c: -fused[c])
    return [hit[c] for c in order[:10]]


def fused_scores(row: dict, rule: str, weight: float) -> tuple[list[str], dict, dict]:
    """A row's candidates (both lists' top 50), whether each is a hit, and its fused score."""
    lexical = row["lexical"][:TOP]
    semantic_top = row["semantic"][:TOP]
    cosine = {key: score for key, score, _ in row["semantic"]}
    hit = {key: flag for key, _, flag in lexical + semantic_top}
    candidates = list(hit)
    bm25 = {key: score for key, score, _ in lexical}
    if rule == "scaled":
        best = lexical[0][1] if lexical and lexical[0][1] > 0 else 1.0
        top_cosine = {key: score for key, score, _ in semantic_top}
        fused = {c: bm25.get(c, 0.0) / best + weight * top_cosine.get(c, 0.0) for c in candidates}
    elif rule == "complete":
        best = lexical[0][1] if lexical and lexical[0][1] > 0 else 1.0
        fused = {c: bm25.get(c, 0.0) / best + weight * cosine.get(c, 0.0) for c in candidates}
    elif rule in ("standard", "standard-exact"):
        semantic_mean, semantic_spread = standardised([s for _, s, _ in semantic_top],
                                                      TYPICAL_COSINE_SPREAD, MIN_COSINE_SPREAD)
        lexical_mean, lexical_spread = standardised(
            [s for _, s, _ in lexical], TYPICAL_BM25_SPREAD * (lexical[0][1] if lexical else 0.0))
        lowest_bm25 = lexical[-1][1] if lexical else 0.0
        if rule == "standard-exact":
            # A candidate BM25 did not list in its top 50 scored by BM25 all the same (0 when
            # it holds no query term), instead of counted as the list's lowest score.
            deep = {key: score for key, score, _ in row["lexical"]}
            bm25 = {c: deep.get(c, 0.0) for c in candidates}
        fused = {c: (((bm25.get(c, lowest_bm25) - lexical_mean) / lexical_spread if lexical else 0.0)
                     + weight * ((cosine.get(c, TABLE_FLOOR) - semantic_mean) / semantic_spread
                                 if semantic_top else 0.0))
                 for c in candidates}
    else:
        raise ValueError(rule)
    return candidates, hit, fused


def mrr(flag_lists: list[list[bool]]) -> float:
    total = 0.0
    for flags in flag_lists:
        rank = next((i + 1 for i, f in enumerate(flags[:10]) if f), None)
        total += 1.0 / rank if rank else 0.0
    return total / max(len(flag_lists), 1)


RULES = {
    "scaled": [0.25, 0.5, 0.75, 1.0, 1.5, 2.0],
    "complete": [0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0],
    "standard": [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0],
    "standard-exact": [0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lang", action="append", choices=LANGS)
    parser.add_argument("--split", action="append", choices=["train", "eval"])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--refresh-lists", action="store_true",
                        help="query lode again instead of reading the cached lists")
    args = parser.parse_args()
    report: dict = {}
    for split in args.split or ["train", "eval"]:
        for lang in args.lang or LANGS:
            rows = lists_for(lang, split, args.jobs, args.refresh_lists)
            results = {
                "lexical": mrr([[f for _, _, f in r["lexical"]] for r in rows]),
                "semantic": mrr([[f for _, _, f in r["semantic"]] for r in rows]),
            }
            for rule, weights in RULES.items():
                for weight in weights:
                    results[f"{rule} w={weight}"] = mrr([fuse(r, rule, weight) for r in rows])
            report.setdefault(split, {})[lang] = results
            single = max(results["lexical"], results["semantic"])
            print(f"{split} {lang} ({len(rows)} queries): lexical {results['lexical']:.3f}, "
                  f"semantic {results['semantic']:.3f}")
            for name, value in sorted(results.items(), key=lambda kv: -kv[1])[:8]:
                print(f"  {name:<20} MRR@10 {value:.3f}  ({value / single:.2f} x best single)")
    out = OUT / "fusion.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
