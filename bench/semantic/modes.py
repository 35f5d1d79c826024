#!/usr/bin/env python3
"""Semantic index benchmarks: retrieval quality per search mode, query latency of hybrid vs
lexical, the cold-index cost of adding vectors, and the static embedder's throughput.

    python3 bench/semantic/modes.py [--no-reindex] [--suites small,large] [--skip-cost] [--skip-latency]
        [--skip-throughput] [--cost-crates tokio,syn,...] [--latency-root PATH] [--runs N]
        [--embedder static|minilm]

--embedder (default static) selects the embedder of every part: quality runs retrieval.py with
it (minilm: on its own copies, bench/out/retrieval-minilm/), the cold-index cost compares it with
`--embedder none`, and throughput measures it (minilm: `cargo bench --bench embed -- --minilm`,
all cores, $LODE_MINILM_DIR or target/test-tools/minilm). MiniLM is slow on a small machine:
use e.g. `--embedder minilm --cost-crates regex-automata,tokio --runs 1 --skip-latency`.

1. Quality: bench/retrieval.py once per suite and mode (lexical, semantic, hybrid): the small
   suite (300 doc-comment -> function queries over the stripped regex-automata and tokio
   copies) and the large one (1500 queries over 10 other crates, --suites); the index is
   built by `lode index` with the default (static) embedder, or the table named by
   LODE_STATIC_TABLE. MRR@10 and Recall@10.
2. Latency: `lode search --no-refresh --limit 10` with --mode lexical and --mode hybrid for each
   query of bench/search-queries.txt plus the first 20 retrieval queries, on --latency-root
   (default: bench/corpus/rust-vendor, the large corpus; it is indexed first if it has no
   vectors). Median of --runs per query; the ratio is the geometric mean of hybrid/lexical.
3. Cold-index cost: a copy of --cost-crates (default: tokio, syn, hyper, regex-automata,
   tantivy, rustls from the corpus) indexed from scratch with `--embedder none` and with the
   static embedder, alternating, --runs each; ratio of the medians (target <= 1.3).
4. Throughput: `cargo bench -p lode-index --bench embed` (one thread, chunk texts from the
   corpus catalog; target >= 50,000 chunks/s).

Writes bench/out/semantic/modes.json. Ratios are what to compare: absolute times on a shared
2-core VM move by +-30% between runs.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "bench" / "out"
LODE = Path(os.environ.get("LODE_BIN", ROOT / "target" / "release" / "lode"))
CORPUS = ROOT / "bench" / "corpus" / "rust-vendor"
DEFAULT_COST_CRATES = "tokio,syn,hyper,regex-automata,tantivy,rustls"


def die(message: str) -> None:
    print(f"modes.py: {message}", file=sys.stderr)
    sys.exit(2)


def quality(suite: str, modes: list[str], reindex: bool, embedder: str) -> dict:
    results = {}
    suffix = "" if embedder == "static" else f"-{embedder}"
    for i, mode in enumerate(modes):
        name = f"retrieval{suffix}-{mode}" if suite == "small" else f"retrieval-{suite}{suffix}-{mode}"
        out = OUT / "semantic" / f"{name}.json"
        cmd = [sys.executable, str(ROOT / "bench" / "retrieval.py"), "--suite", suite, "--mode", mode,
               "--out", str(out), "--embedder", embedder]
        if i > 0 or not reindex:
            cmd.append("--no-reindex")
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            die(f"retrieval.py --mode {mode} failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        data = json.loads(out.read_text())
        o = data["overall"]
        results[mode] = {"mrr@10": o["mrr@10"], "recall@10": o["recall@10"], "recall@1": o["recall@1"],
                         "no_fn_name_mrr@10": data["split"]["query_does_not_mention_fn_name"].get("mrr@10"),
                         "latency_mean_ms": data["latency_ms"]["mean"]}
        print(f"  {suite:<5} {mode:<9} MRR@10 {o['mrr@10']:.3f}  R@1 {o['recall@1']:.3f}  R@10 {o['recall@10']:.3f}")
    if "lexical" in results:
        base = results["lexical"]["mrr@10"]
        for mode, r in results.items():
            r["mrr_vs_lexical"] = r["mrr@10"] / base if base else None
    return results


def time_run(cmd: list[str], cwd: Path | None = None) -> float:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if p.returncode not in (0, 1):
        die(f"{' '.join(cmd[:6])}... failed (exit {p.returncode}):\n{p.stderr[-2000:]}")
    return elapsed


def latency(root: Path, runs: int) -> dict:
    if not (root / ".lode" / "index" / "vectors" / "manifest.json").exists():
        print(f"  indexing {root} with vectors first (one time)...")
        t = time_run([str(LODE), "index", str(root)])
        print(f"  indexed in {t:.1f}s")
    else:
        subprocess.run([str(LODE), "index", str(root)], capture_output=True)
    queries = [l.strip() for l in (ROOT / "bench" / "search-queries.txt").read_text().splitlines()
               if l.strip() and not l.startswith("#")]
    qfile = OUT / "retrieval-queries.jsonl"
    if qfile.exists():
        queries += [json.loads(l)["query"] for l in qfile.read_text().splitlines()[:20] if l.strip()]
    rows, ratios = [], []
    for q in queries:
        med = {}
        for mode in ("lexical", "hybrid"):
            cmd = [str(LODE), "search", "--root", str(root), "--no-refresh", "--json", "--limit", "10",
                   "--mode", mode, "--", q]
            time_run(cmd)  # warm-up
            med[mode] = statistics.median(time_run(cmd) for _ in range(runs))
        ratios.append(med["hybrid"] / med["lexical"])
        rows.append({"query": q, "lexical_ms": 1000 * med["lexical"], "hybrid_ms": 1000 * med["hybrid"]})
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    lex = statistics.median(r["lexical_ms"] for r in rows)
    hyb = statistics.median(r["hybrid_ms"] for r in rows)
    print(f"  {len(rows)} queries on {root.name}: lexical median {lex:.1f} ms, hybrid median {hyb:.1f} ms, "
          f"hybrid/lexical (geometric mean) {geo:.2f}x")
    return {"root": str(root), "queries": rows, "hybrid_over_lexical": geo,
            "lexical_median_ms": lex, "hybrid_median_ms": hyb}


def cold_cost(crates: list[str], runs: int, embedder: str) -> dict:
    # One copy per crate list (an existing copy is reused as it is).
    default = crates == DEFAULT_COST_CRATES.split(",")
    work = OUT / "semantic" / ("cost-corpus" if default else "cost-corpus-" + "+".join(crates))
    if not work.exists():
        work.mkdir(parents=True)
        for c in crates:
            src = CORPUS / c
            if not src.is_dir():
                die(f"no {src}: run bench/corpus.sh first")
            shutil.copytree(src, work / c)
    times: dict[str, list[float]] = {"none": [], embedder: []}
    summary = ""
    for _ in range(runs):
        for name in ("none", embedder):
            shutil.rmtree(work / ".lode", ignore_errors=True)
            t0 = time.perf_counter()
            p = subprocess.run([str(LODE), "--embedder", name, "index", "-v", str(work)],
                               capture_output=True, text=True)
            times[name].append(time.perf_counter() - t0)
            if p.returncode != 0:
                die(f"lode index failed:\n{p.stderr[-2000:]}")
            if name == embedder:
                summary = p.stderr.strip()
    shutil.rmtree(work / ".lode", ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med[embedder] / med["none"]
    target = " (target <= 1.3)" if embedder == "static" else ""
    print(f"  cold index of {', '.join(crates)}: without vectors {med['none']:.2f}s, with {embedder} vectors "
          f"{med[embedder]:.2f}s: {ratio:.2f}x{target}")
    return {"crates": crates, "seconds": times, "median_s": med, "ratio": ratio, "last_summary": summary}


def throughput(embedder: str) -> dict:
    extra = []
    if embedder == "minilm":
        # The retrieval copies' catalog: indexing all of rust-vendor with MiniLM takes hours here.
        extra = ["--", "--minilm", str(OUT / "retrieval-minilm" / "tokio" / ".lode" / "index" / "catalog.sqlite")]
    p = subprocess.run(["cargo", "bench", "-q", "-p", "lode-index", "--bench", "embed", *extra], cwd=ROOT,
                       capture_output=True, text=True)
    line = next((l for l in p.stdout.splitlines() if "chunks/s" in l), None)
    if line is None:
        die(f"embed bench printed no figure:\n{p.stdout[-1000:]}\n{p.stderr[-2000:]}")
    print(f"  {line}")
    m = re.search(r"([0-9.]+) chunks/s", line)
    return {"line": line, "chunks_per_s": float(m.group(1)) if m else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-reindex", action="store_true", help="reuse the retrieval copies and indexes")
    ap.add_argument("--modes", default="lexical,semantic,hybrid")
    ap.add_argument("--suites", default="small,large", help="retrieval suites (bench/retrieval.py --suite)")
    ap.add_argument("--skip-quality", action="store_true")
    ap.add_argument("--skip-cost", action="store_true")
    ap.add_argument("--skip-latency", action="store_true")
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--cost-crates", default=DEFAULT_COST_CRATES)
    ap.add_argument("--latency-root", default=str(CORPUS))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--embedder", default="static", help="static (default), minilm, ...")
    a = ap.parse_args()
    if a.embedder == "minilm":
        os.environ.setdefault("LODE_MINILM_DIR", str(ROOT / "target" / "test-tools" / "minilm"))
    if not LODE.exists():
        die(f"no lode binary at {LODE}: cargo build --release -p lode")
    res: dict = {"lode": str(LODE), "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    if not a.skip_quality:
        print(f"retrieval quality (bench/retrieval.py, {a.embedder} embedder):")
        res["quality"] = {suite: quality(suite, a.modes.split(","), not a.no_reindex, a.embedder)
                          for suite in a.suites.split(",")}
    if not a.skip_cost:
        print("cold-index cost of vectors:")
        res["cold_index"] = cold_cost(a.cost_crates.split(","), a.runs, a.embedder)
    if not a.skip_latency:
        print("query latency, hybrid vs lexical:")
        res["latency"] = latency(Path(a.latency_root), a.runs)
    if not a.skip_throughput:
        print(f"{a.embedder} embedder throughput:")
        res["throughput"] = throughput(a.embedder)
    res["embedder"] = a.embedder
    out = OUT / "semantic" / ("modes.json" if a.embedder == "static" else f"modes-{a.embedder}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2))
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
