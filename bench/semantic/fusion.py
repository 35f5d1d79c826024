#!/usr/bin/env python3
"""Offline tuning of hybrid fusion on the retrieval benchmark.

    python3 bench/semantic/fusion.py [--suites small,large] [--depth 50] [--floors 0,0.3]
        [--embedder static|minilm]

Needs the copies and queries of a previous `bench/retrieval.py` run (per suite) indexed with
the embedder to tune for (set LODE_STATIC_TABLE the same way as for that run). For every query
it takes lode's lexical and semantic lists (`lode search --mode lexical|semantic --limit DEPTH
--json`) once, then scores fusions of the two without running lode again:

- weighted reciprocal rank fusion, `w / (k + rank)`, over a grid of semantic weights and k
  (what `server/index/src/hybrid.rs` does; lexical weight 1);
- a convex combination of scores, `bm25 / max_bm25 + a * cosine`;

each with the semantic hits below each of `--floors` dropped first.

With another embedder than the built-in table (`--embedder minilm`), lode's hybrid search also
weighs the table's cosine over the candidates of the two lists (`table_signal.rs`). The sweep
then also scores `bm25 / max_bm25 + b * cosine + a * table cosine` over those candidates, the
table's cosines read from the static copies' semantic lists and the embedder's own from its
semantic lists, both `--table-depth` deep (a candidate missing from one counts as under that
embedder's floor; lode reads every candidate's cosine from the stored vectors). The static copies must
be indexed (a previous `bench/retrieval.py` run of the suite with the default embedder).

Prints MRR@10 per setting, best first, and writes bench/out/semantic/fusion.json. A hit is
counted by bench/retrieval.py's own rule (`is_hit`).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "bench" / "out"
LODE = Path(os.environ.get("LODE_BIN", ROOT / "target" / "release" / "lode"))
sys.path.insert(0, str(ROOT / "bench"))
from retrieval import is_hit  # noqa: E402

SUITES = {
    "small": (OUT / "retrieval-queries.jsonl", OUT / "retrieval"),
    "large": (OUT / "retrieval-large-queries.jsonl", OUT / "retrieval-large"),
}


def ranked(copy: Path, query: str, mode: str, depth: int) -> list[dict]:
    p = subprocess.run(
        [str(LODE), "search", "--root", str(copy), "--no-refresh", "--mode", mode, "--limit",
         str(depth), "--json", "--", query],
        capture_output=True, text=True)
    if p.returncode not in (0, 1):
        sys.exit(f"fusion.py: lode search failed: {p.stderr.strip()}")
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]


def key(hit: dict) -> tuple:
    return (hit["path"], hit["start_line"], hit["end_line"])


def rrf(lexical, semantic, weight, k):
    scores = {}
    for w, hits in ((1.0, lexical), (weight, semantic)):
        for rank, hit in enumerate(hits):
            entry = scores.setdefault(key(hit), [0.0, hit])
            entry[0] += w / (k + rank + 1)
    return [hit for _, hit in sorted(scores.values(), key=lambda e: -e[0])]


def convex(lexical, semantic, alpha, relative_to=None):
    """BM25 / best BM25 + alpha * cosine. With `relative_to` (a floor), the cosine is scaled
    to the query's best instead: (cos - floor) / (best cos - floor), so a query whose best
    cosine is low does not lose its semantic say."""
    top = max((h["score"] for h in lexical), default=1.0) or 1.0
    floor, span = 0.0, 1.0
    if relative_to is not None:
        floor = relative_to
        span = (max((h["score"] for h in semantic), default=1.0) - floor) or 1.0
    scores = {}
    for hit in lexical:
        scores.setdefault(key(hit), [0.0, hit])[0] += hit["score"] / top
    for hit in semantic:
        scores.setdefault(key(hit), [0.0, hit])[0] += alpha * (hit["score"] - floor) / span
    return [hit for _, hit in sorted(scores.values(), key=lambda e: -e[0])]


def with_table(lexical, semantic, table, semantic_deep, a, b):
    """What lode does for embedders other than the table: BM25 / best BM25 + b * cosine +
    a * the table's cosine, over the chunks on the lexical or the semantic list; every
    candidate gets both cosines (read from the deep lists)."""
    top = max((h["score"] for h in lexical), default=1.0) or 1.0
    cosine = {key(h): h["score"] for h in semantic_deep}
    table_cosine = {key(h): h["score"] for h in table}
    scores = {}
    for hit in lexical:
        scores.setdefault(key(hit), [0.0, hit])[0] += hit["score"] / top
    for hit in semantic:
        scores.setdefault(key(hit), [0.0, hit])
    for entry_key, entry in scores.items():
        entry[0] += b * cosine.get(entry_key, 0.0) + a * table_cosine.get(entry_key, 0.0)
    return [hit for _, hit in sorted(scores.values(), key=lambda e: -e[0])]


def mrr(rows, fuse) -> float:
    total = 0.0
    for gold, lexical, semantic, *table in rows:
        for rank, hit in enumerate(fuse(lexical, semantic, *table)[:10]):
            if is_hit(hit, gold):
                total += 1.0 / (rank + 1)
                break
    return total / max(len(rows), 1)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--suites", default="small,large")
    ap.add_argument("--depth", type=int, default=50)
    ap.add_argument("--embedder", default="static",
                    help="whose retrieval.py copies to use (minilm: bench/out/retrieval-minilm/)")
    ap.add_argument("--table-depth", type=int, default=3000,
                    help="depth of the semantic lists the table's and the embedder's cosines "
                         "are read from (other embedders only)")
    ap.add_argument("--floors", type=lambda v: [float(x) for x in v.split(",")], default=[0.0],
                    help="semantic relevance floors to try (comma-separated; lode's own floor "
                         "applies first)")
    args = ap.parse_args()
    report = {}
    for suite in args.suites.split(","):
        queries_file, copies = SUITES[suite]
        static_copies = copies
        other = args.embedder != "static"
        if other:
            copies = copies.with_name(f"{copies.name}-{args.embedder}")
        queries = [json.loads(line) for line in queries_file.read_text().splitlines() if line.strip()]

        # Other embedders: the semantic list as deep as the table's, so every candidate's
        # cosine is known (lode reads it from the stored vectors); fusions use its top.
        semantic_depth = args.table_depth if other else args.depth

        def lists(q):
            copy = copies / q["crate"]
            return (q["gold"], ranked(copy, q["query"], "lexical", args.depth),
                    ranked(copy, q["query"], "semantic", semantic_depth))

        def table_list(q):
            return ranked(static_copies / q["crate"], q["query"], "semantic", args.table_depth)

        with ThreadPoolExecutor(max_workers=2) as pool:
            tables = list(pool.map(table_list, queries)) if other else []
            if other:
                os.environ["LODE_EMBEDDER"] = args.embedder
                if args.embedder == "minilm":
                    os.environ.setdefault("LODE_MINILM_DIR", str(ROOT / "target" / "test-tools" / "minilm"))
            deep_rows = list(pool.map(lists, queries))
        os.environ.pop("LODE_EMBEDDER", None)
        rows = [(g, lx, sem[:args.depth]) for g, lx, sem in deep_rows]
        results = {"lexical": mrr(rows, lambda lx, _s: lx), "semantic": mrr(rows, lambda _l, s: s)}
        for floor in args.floors:
            kept = [(g, lx, [h for h in s if h["score"] >= floor]) for g, lx, s in rows]
            at = f" floor={floor}" if len(args.floors) > 1 else ""
            for weight in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0, 1.2):
                for k in (5, 10, 20, 40, 60):
                    results[f"rrf w={weight} k={k}{at}"] = mrr(kept, lambda lx, s: rrf(lx, s, weight, k))
            for alpha in (0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0):
                results[f"convex a={alpha}{at}"] = mrr(kept, lambda lx, s: convex(lx, s, alpha))
                for base in (0.0, 0.3):
                    results[f"relative a={alpha} base={base}{at}"] = mrr(
                        kept, lambda lx, s: convex(lx, s, alpha, relative_to=base))
        if tables:
            with_tables = [(g, lx, sem[:args.depth], table, sem)
                           for (g, lx, sem), table in zip(deep_rows, tables)]
            for a in (0.0, 1.0, 1.5, 2.0, 2.5):
                for b in (0.0, 0.5, 0.75, 1.0, 1.5):
                    results[f"table a={a} b={b}"] = mrr(
                        with_tables, lambda lx, s, table, deep: with_table(lx, s, table, deep, a, b))
        best = sorted(results.items(), key=lambda kv: -kv[1])
        print(f"{suite} ({len(rows)} queries): lexical {results['lexical']:.3f}, semantic {results['semantic']:.3f}")
        for name, value in best[:12]:
            print(f"  {name:<34} MRR@10 {value:.3f}  ({value / results['lexical'] - 1:+.0%} over lexical)")
        report[suite] = results
    suffix = "" if args.embedder == "static" else f"-{args.embedder}"
    out = OUT / "semantic" / f"fusion{suffix}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
