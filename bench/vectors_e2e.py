#!/usr/bin/env python3
"""Whole-process `lode search` (hybrid, the default mode) with exact against approximate vector
search: the same binary and index, the embedded store's threshold moved with
LODE_VECTORS_EXACT_BELOW (exact: 1e9; approximate: lode's default).

    bench/vectors_e2e.py [PATH] [--rounds N] [--no-daemon-phase]

PATH (default bench/corpus/rust-vendor) must hold an index made by a lode with binary codes in
its vector segments (bench/vectors.sh prints whether it does). Per query of
bench/search-queries.txt, medians over --rounds (default 7) after one warm-up, the two variants
interleaved (alternating which goes first):

  1. `lode search --no-refresh`, no daemon (LODE_DAEMON=never): the query's own cost;
  2. `lode search`, no daemon: with the freshness check (a stat walk of the tree);
  3. served by `lode daemon` (started for each variant with its environment, so the daemon
     searches as that variant does; stopped afterwards), in blocks per variant, twice.

Also checks that both variants print the same top 10 (phases 1 and 2). Writes
bench/out/vectors-e2e.json. Standard library only; needs the lode binary (target/release/lode
or LODE_BIN).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))
from benchlib import BENCH, CORPUS, LODE, OUT, die, require_lode, write_json  # noqa: E402

EXACT = {"LODE_VECTORS_EXACT_BELOW": "1000000000"}
APPROXIMATE: dict[str, str] = {}


def lode(args: list[str], env: dict[str, str]) -> tuple[float, bytes]:
    full = dict(os.environ)
    full.update(env)
    start = time.perf_counter()
    p = subprocess.run([str(LODE), *args], env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed = (time.perf_counter() - start) * 1e3
    if p.returncode != 0:
        die(f"lode {' '.join(args)} failed: {p.stderr.decode(errors='replace')[-800:]}")
    return elapsed, p.stdout


def interleaved(root: Path, queries: list[str], extra: list[str], env: dict[str, str], rounds: int):
    variants = {"exact": {**env, **EXACT}, "approximate": {**env, **APPROXIMATE}}
    times = {name: {q: [] for q in queries} for name in variants}
    outputs = {}
    for q in queries:
        for name, venv in variants.items():
            _, outputs[(name, q)] = lode(["search", "--root", str(root), "--limit", "10", "--json", *extra, "--", q], venv)
    for r in range(rounds):
        for i, q in enumerate(queries):
            order = list(variants.items())
            if (r + i) % 2:
                order.reverse()
            for name, venv in order:
                ms, _ = lode(["search", "--root", str(root), "--limit", "10", "--json", *extra, "--", q], venv)
                times[name][q].append(ms)
    same = sum(1 for q in queries if outputs[("exact", q)] == outputs[("approximate", q)])
    return times, same


def daemon_phase(root: Path, queries: list[str], rounds: int):
    times = {"exact": {q: [] for q in queries}, "approximate": {q: [] for q in queries}}
    for block in [("exact", EXACT), ("approximate", APPROXIMATE), ("approximate", APPROXIMATE), ("exact", EXACT)]:
        name, env = block
        subprocess.run([str(LODE), "daemon", "stop", "--root", str(root)], capture_output=True)
        lode(["daemon", "start", "--root", str(root)], env)
        for q in queries:  # warm-up (and wait until the daemon answers)
            lode(["search", "--root", str(root), "--limit", "10", "--json", "--", q], {})
        for _ in range(rounds):
            for q in queries:
                ms, _ = lode(["search", "--root", str(root), "--limit", "10", "--json", "--", q], {})
                times[name][q].append(ms)
    subprocess.run([str(LODE), "daemon", "stop", "--root", str(root)], capture_output=True)
    return times


def report(label: str, queries: list[str], times, same: int | None) -> dict:
    print(f"\n{label}: per-query medians (ms)")
    print("| query | exact | approximate |")
    print("|---|---|---|")
    med = {name: [statistics.median(times[name][q]) for q in queries] for name in times}
    for j, q in enumerate(queries):
        print(f"| {q} | {med['exact'][j]:.1f} | {med['approximate'][j]:.1f} |")
    e, a = statistics.median(med["exact"]), statistics.median(med["approximate"])
    tail = f"; identical top 10 for {same}/{len(queries)} queries" if same is not None else ""
    print(f"| median | {e:.1f} | {a:.1f} |\n{e / a:.2f}x{tail}")
    return {"exact_median_ms": e, "approximate_median_ms": a, "identical_top10": same,
            "per_query_ms": {name: dict(zip(queries, v)) for name, v in med.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", nargs="?", default=str(CORPUS / "rust-vendor"))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--no-daemon-phase", action="store_true")
    a = ap.parse_args()
    require_lode()
    root = Path(a.path).resolve()
    if not (root / ".lode" / "index" / "vectors" / "manifest.json").exists():
        die(f"no vector store under {root}/.lode: run `lode index {root}` first")
    queries = [l.strip() for l in (BENCH / "search-queries.txt").read_text().splitlines()
               if l.strip() and not l.startswith("#")]
    result = {"path": str(root), "rounds": a.rounds}
    no_daemon = {"LODE_DAEMON": "never"}
    times, same = interleaved(root, queries, ["--no-refresh"], no_daemon, a.rounds)
    result["no_refresh"] = report("lode search --no-refresh, no daemon", queries, times, same)
    times, same = interleaved(root, queries, [], no_daemon, a.rounds)
    result["freshness_check"] = report("lode search, no daemon (freshness check)", queries, times, same)
    if not a.no_daemon_phase:
        result["daemon"] = report("lode search served by lode daemon", queries, daemon_phase(root, queries, a.rounds), None)
    write_json(OUT / "vectors-e2e.json", result)
    print(f"\nwrote {OUT / 'vectors-e2e.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
