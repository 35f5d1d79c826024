#!/usr/bin/env python3
"""Evaluate static embedding tables on the doc-comment -> function retrieval benchmark.

    python3 bench/semantic/eval.py TABLE.bin [TABLE.bin ...] [--out bench/out/semantic/eval.json]

Uses the stripped crate copies and queries written by bench/retrieval.py
(bench/out/retrieval/<crate>/ with .lode/index/catalog.sqlite, bench/out/retrieval-queries.jsonl).
For each table:
  * every chunk of the crate's catalog is embedded from
    "path scope symbol text" (identifiers split into words, see statictable.split_words);
  * each query is embedded the same way; cosine top-k per crate = semantic ranking;
  * lexical = `lode search --root COPY --no-refresh --json --limit 50 -- QUERY` (cached in
    bench/out/semantic/bm25-top50.json);
  * hybrid = reciprocal rank fusion (k=60) of lexical top-50 and semantic top-50,
    chunks keyed by (path, start_line, end_line);
  * hit rule = bench/retrieval.py is_hit; MRR@10, Recall@1/10 reported.
Also reports embedding throughput (one thread, numpy, word memo cold per table) and table size.
Needs numpy + tokenizers.
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("RAYON_NUM_THREADS", "1")
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "embeddings"))
sys.path.insert(0, str(ROOT / "bench"))
from statictable import Table  # noqa: E402
from retrieval import is_hit  # noqa: E402  (same hit rule as the lexical benchmark)

OUT = ROOT / "bench" / "out"
LODE = Path(os.environ.get("LODE_BIN", ROOT / "target" / "release" / "lode"))


def load_chunks(copy: Path) -> list[dict]:
    con = sqlite3.connect(f"file:{copy / '.lode' / 'index' / 'catalog.sqlite'}?mode=ro", uri=True)
    rows = con.execute("SELECT f.path, c.start_line, c.end_line, c.symbol, c.scope, c.text "
                       "FROM chunks c JOIN files f ON f.id = c.file_id ORDER BY c.id").fetchall()
    return [{"path": p, "start_line": s, "end_line": e, "symbol": sym, "scope": sc, "text": t}
            for p, s, e, sym, sc, t in rows]


TEXT_MODE = "full"


def chunk_text(c: dict) -> str:
    if TEXT_MODE == "nopath":
        return " ".join([c["scope"] or "", c["symbol"] or "", c["text"]])
    if TEXT_MODE == "stem":  # file stem instead of the whole path
        return " ".join([Path(c["path"]).stem, c["scope"] or "", c["symbol"] or "", c["text"]])
    return " ".join([c["path"], c["scope"] or "", c["symbol"] or "", c["text"]])


def bm25(queries: list[dict], work: Path, depth: int) -> dict:
    cache_path = OUT / "semantic" / f"bm25-top{depth}.json"
    cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    changed = False
    for q in queries:
        key = f"{q['crate']}\t{q['query']}"
        if key in cache:
            continue
        r = subprocess.run([str(LODE), "search", "--root", str(work / q["crate"]), "--no-refresh", "--json",
                            "--limit", str(depth), "--", q["query"]], capture_output=True, text=True, check=True)
        cache[key] = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
        changed = True
    if changed:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        cache_path.write_text(json.dumps(cache))
    return cache


def rank_of(hits: list[dict], gold: dict, k: int) -> int | None:
    for i, h in enumerate(hits[:k]):
        if is_hit(h, gold):
            return i + 1
    return None


def metrics(ranks: list[int | None], k: int) -> dict:
    n = len(ranks)
    return {"n": n,
            f"mrr@{k}": round(sum(1.0 / r for r in ranks if r and r <= k) / n, 4),
            "recall@1": round(sum(1 for r in ranks if r == 1) / n, 4),
            f"recall@{k}": round(sum(1 for r in ranks if r and r <= k) / n, 4)}


def rrf(lists: list[list[dict]], k: int = 60, weights: list[float] | None = None) -> list[dict]:
    score, item = {}, {}
    for j, hits in enumerate(lists):
        wt = weights[j] if weights else 1.0
        for i, h in enumerate(hits):
            key = (h["path"], int(h["start_line"]), int(h["end_line"]))
            score[key] = score.get(key, 0.0) + wt / (k + i + 1)
            item.setdefault(key, h)
    return [item[key] for key in sorted(score, key=lambda x: -score[x])]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tables", nargs="+")
    ap.add_argument("--queries", default=str(OUT / "retrieval-queries.jsonl"))
    ap.add_argument("--work", default=str(OUT / "retrieval"))
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--depth", type=int, default=50, help="list depth fused by RRF")
    ap.add_argument("--rrf-k", type=int, default=60)
    ap.add_argument("--sem-weights", default="0.25,0.5",
                    help="extra weighted-RRF runs: weight of the semantic list (lexical = 1)")
    ap.add_argument("--text", default="full", choices=["full", "nopath", "stem"],
                    help="chunk embedding text: path+scope+symbol+text (full), without path, or file stem only")
    ap.add_argument("--remove-pc", type=int, default=0,
                    help="SIF common-component removal: project out the top N principal directions "
                         "of each crate's chunk embeddings (from chunks and queries)")
    ap.add_argument("--out", default=str(OUT / "semantic" / "eval.json"))
    a = ap.parse_args()

    global TEXT_MODE
    TEXT_MODE = a.text
    work = Path(a.work)
    queries = [json.loads(l) for l in Path(a.queries).read_text().splitlines() if l.strip()]
    crates = sorted({q["crate"] for q in queries})
    chunks = {c: load_chunks(work / c) for c in crates}
    lex = bm25(queries, work, a.depth)
    lex_ranks = [rank_of(lex[f"{q['crate']}\t{q['query']}"], q["gold"], a.k) for q in queries]
    results = {"lexical": metrics(lex_ranks, a.k), "tables": []}
    print(f"{'variant':34s} {'size MB':>7s} {'chunk/s':>8s} | {'sem MRR':>7s} {'sem R10':>7s} | "
          f"{'hyb MRR':>7s} {'hyb R10':>7s} | weighted RRF (sem weight: MRR R10)  (lexical MRR {results['lexical'][f'mrr@{a.k}']:.3f} "
          f"R10 {results['lexical'][f'recall@{a.k}']:.3f})")
    for tp in a.tables:
        t = Table(Path(tp))
        t0 = time.perf_counter()
        mats = {c: t.embed([chunk_text(x) for x in chunks[c]]) for c in crates}
        dt = time.perf_counter() - t0
        nch = sum(len(chunks[c]) for c in crates)
        qv = t.embed([q["query"] for q in queries])
        pcs = {}
        if a.remove_pc:
            for c in crates:
                _, _, vt = np.linalg.svd(mats[c], full_matrices=False)
                pcs[c] = vt[:a.remove_pc]
                m = mats[c] - (mats[c] @ pcs[c].T) @ pcs[c]
                mats[c] = m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-9)
        sws = [float(x) for x in a.sem_weights.split(",") if x]
        sem_ranks, hyb_ranks, wr = [], [], {w: [] for w in sws}
        for q, v in zip(queries, qv):
            if a.remove_pc:
                pc = pcs[q["crate"]]
                v = v - (pc @ v) @ pc
                v = v / max(float(np.linalg.norm(v)), 1e-9)
            sims = mats[q["crate"]] @ v
            top = np.argsort(-sims)[:a.depth]
            sem = [chunks[q["crate"]][i] for i in top]
            sem_ranks.append(rank_of(sem, q["gold"], a.k))
            fused = rrf([lex[f"{q['crate']}\t{q['query']}"], sem], a.rrf_k)
            hyb_ranks.append(rank_of(fused, q["gold"], a.k))
            for w in sws:
                wr[w].append(rank_of(rrf([lex[f"{q['crate']}\t{q['query']}"], sem], a.rrf_k, [1.0, w]), q["gold"], a.k))
        r = {"table": tp, "size_bytes": t.size, "dims": t.dims, "rows": len(t.mat),
             "embed_chunks_per_s": round(nch / dt, 1), "chunks": nch,
             "semantic": metrics(sem_ranks, a.k), "hybrid": metrics(hyb_ranks, a.k),
             "hybrid_weighted": {str(w): metrics(wr[w], a.k) for w in sws}}
        results["tables"].append(r)
        print(f"{Path(tp).stem:34s} {t.size / 1e6:7.2f} {r['embed_chunks_per_s']:8.0f} | "
              f"{r['semantic'][f'mrr@{a.k}']:7.3f} {r['semantic'][f'recall@{a.k}']:7.3f} | "
              f"{r['hybrid'][f'mrr@{a.k}']:7.3f} {r['hybrid'][f'recall@{a.k}']:7.3f} | "
              + " | ".join(f"w{w}: {m[f'mrr@{a.k}']:.3f} {m[f'recall@{a.k}']:.3f}"
                           for w, m in zip(sws, r["hybrid_weighted"].values())), flush=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
