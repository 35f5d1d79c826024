"""Search latency: `lode search` vs ripgrep over the same tree; run through bench/search.sh."""
from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from benchlib import (BENCH, CORPUS, LODE, OUT, die, fmt_s, last_line, machine, require_dir,
                      require_lode, run_timed, table, write_json)

TARGET_RATIO = 20.0
# rg file types matching the languages lode indexes, so both tools read the same files.
RG_TYPES = ["-t", "rust", "-t", "py", "-t", "js", "-t", "ts", "-t", "go"]


def load_queries(p: Path) -> list[str]:
    qs = []
    for line in p.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            qs.append(line)
    return qs


def rg_args(q: str, mode: str) -> list[str]:
    words = [w for w in re.split(r"\s+", q) if w]
    if mode == "first":
        pats = words[:1]
    elif mode == "alt":
        pats = words
    else:  # phrase
        pats = [q]
    out = []
    for w in pats:
        out += ["-e", w]
    return out


def hyperfine(cmds: list[list[str]], names: list[str], cwd: Path, runs: int, warmup: int) -> list[dict]:
    hf = shutil.which("hyperfine")
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tf:
        jf = tf.name
    # -i: both rg and lode exit 1 when nothing matches (grep convention)
    args = [hf, "-N", "-i", "--style", "none", "--output=pipe", "--warmup", str(warmup), "--runs", str(runs),
            "--export-json", jf]
    for n in names:
        args += ["--command-name", n]
    args += [" ".join(shlex_quote(c) for c in cmd) for cmd in cmds]
    p = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        die(f"hyperfine failed:\n{p.stderr[-3000:]}")
    data = json.loads(Path(jf).read_text())
    Path(jf).unlink()
    return data["results"]


def shlex_quote(s) -> str:
    import shlex
    return shlex.quote(str(s))


def main() -> int:
    ap = argparse.ArgumentParser(prog="bench/search.sh", description=__doc__)
    ap.add_argument("path", nargs="?", default=str(CORPUS / "rust-vendor"),
                    help="indexed tree (default bench/corpus/rust-vendor)")
    ap.add_argument("--queries", default=str(BENCH / "search-queries.txt"))
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--runs", type=int, default=10, help="hyperfine runs per command (default 10)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rg-mode", choices=["first", "alt", "phrase"], default="first",
                    help="how a multi-word query becomes an rg pattern: first word (default), "
                         "alternation of all words, or the literal phrase")
    ap.add_argument("--rg-all-files", action="store_true",
                    help="let rg search every file, not only lode's languages")
    ap.add_argument("--mode", help="passed to `lode search --mode` (lexical|semantic|hybrid)")
    ap.add_argument("--reindex", action="store_true", help="rebuild the index before measuring")
    ap.add_argument("--refresh-only", action="store_true",
                    help="time only the default `lode search` (skip the --no-refresh variant)")
    ap.add_argument("--out", default=str(OUT / "search.json"))
    a = ap.parse_args()

    require_lode()
    if not shutil.which("hyperfine"):
        die("hyperfine is required: apt-get install hyperfine")
    path = require_dir(Path(a.path).resolve())
    queries = load_queries(Path(a.queries))
    if not queries:
        die(f"no queries in {a.queries}")

    index_run = None
    if a.reindex or not (path / ".lode" / "index").exists():
        if a.reindex:
            shutil.rmtree(path / ".lode", ignore_errors=True)
        print(f"indexing {path} ...")
        index_run = run_timed([LODE, "index", path]).check()
        print(f"  {fmt_s(index_run.wall_s)}  [{last_line(index_run.stderr)}]")
        if not (path / ".lode").exists():
            die(f"`lode index` created no {path}/.lode; is {LODE} the real lode binary?")

    extra = ["--mode", a.mode] if a.mode else []
    rg_types = [] if a.rg_all_files else RG_TYPES
    rows, results = [], []
    print(f"tree: {path}\nrg: rg -n -i {' '.join(rg_types)} <{a.rg_mode}> .   lode: lode search --root PATH --limit {a.limit} --json"
          f"{' ' + ' '.join(extra) if extra else ''}   ({a.runs} runs, {a.warmup} warm-up, output piped)\n")
    for q in queries:
        lode_cmd = [LODE, "search", "--root", path, "--limit", str(a.limit), "--json"] + extra + ["--", q]
        lode_nr = [LODE, "search", "--root", path, "--no-refresh", "--limit", str(a.limit), "--json"] + extra + ["--", q]
        rg_cmd = ["rg", "-n", "-i"] + rg_types + rg_args(q, a.rg_mode) + ["."]
        # one plain run of each to check it works and count what it returns
        lr = run_timed(lode_cmd, cwd=path)
        if lr.rc not in (0, 1) or (lr.rc == 1 and lr.stdout.strip()):
            die(f"lode search failed for {q!r} (exit {lr.rc}):\n{lr.stderr[-2000:]}")
        hits = [l for l in lr.stdout.splitlines() if l.strip()]
        bad = 0
        for l in hits:
            try:
                h = json.loads(l)
                if not {"path", "start_line", "end_line"} <= h.keys():
                    bad += 1
            except json.JSONDecodeError:
                bad += 1
        rr = subprocess.run(rg_cmd, cwd=path, capture_output=True, text=True)
        rg_lines = rr.stdout.count("\n")
        cmds, names = [lode_cmd, rg_cmd], ["lode", "rg"]
        if not a.refresh_only:
            cmds.append(lode_nr)
            names.append("lode --no-refresh")
        hr = hyperfine(cmds, names, path, a.runs, a.warmup)
        lode_ms = hr[0]["median"] * 1000
        rg_ms = hr[1]["median"] * 1000
        nr_ms = hr[2]["median"] * 1000 if len(hr) > 2 else None
        ratio = rg_ms / lode_ms if lode_ms > 0 else float("inf")
        nr_ratio = rg_ms / nr_ms if nr_ms else None
        results.append({"query": q, "rg_pattern": rg_args(q, a.rg_mode)[1::2], "lode_ms": lode_ms,
                        "lode_ms_mean": hr[0]["mean"] * 1000, "lode_ms_stddev": (hr[0].get("stddev") or 0) * 1000,
                        "rg_ms": rg_ms, "rg_ms_mean": hr[1]["mean"] * 1000,
                        "ratio": ratio, "lode_no_refresh_ms": nr_ms, "ratio_no_refresh": nr_ratio,
                        "lode_hits": len(hits), "lode_bad_lines": bad,
                        "lode_top": json.loads(hits[0]).get("path") if hits and not bad else None,
                        "rg_matching_lines": rg_lines})
        rows.append([q, f"{lode_ms:.1f}", f"{nr_ms:.1f}" if nr_ms else "-", f"{rg_ms:.1f}", f"{ratio:.1f}x",
                     f"{nr_ratio:.1f}x" if nr_ratio else "-", str(len(hits)), str(rg_lines)])
        print(f"  {q!r}: lode {lode_ms:.1f} ms ({len(hits)} hits)"
              + (f", no-refresh {nr_ms:.1f} ms" if nr_ms else "")
              + f", rg {rg_ms:.1f} ms ({rg_lines} lines) -> {ratio:.1f}x"
              + (f"  WARNING: {bad} non-JSON/incomplete lines" if bad else ""))

    ratios = [r["ratio"] for r in results]
    gm = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))
    geo = gm(ratios)
    worst = min(ratios)
    nr = [r["ratio_no_refresh"] for r in results if r["ratio_no_refresh"]]
    geo_nr = gm(nr) if nr else None
    print()
    print(table(rows, ["query", "lode ms", "no-refresh ms", "rg ms", "rg/lode", "rg/no-refresh", "hits", "rg lines"]))
    print(f"\ngeometric mean rg/lode = {geo:.1f}x, worst query {worst:.1f}x  (target >= {TARGET_RATIO:.0f}x)  "
          f"{'OK' if geo >= TARGET_RATIO else 'MISS'}")
    if geo_nr:
        print(f"geometric mean rg/(lode --no-refresh) = {geo_nr:.1f}x (index used as is, no freshness walk)")
    res = {"tree": str(path), "machine": machine(), "limit": a.limit, "runs": a.runs, "rg_mode": a.rg_mode,
           "rg_types": rg_types, "lode_mode": a.mode, "queries": results,
           "geomean_ratio": geo, "worst_ratio": worst, "geomean_ratio_no_refresh": geo_nr, "target_ratio": TARGET_RATIO,
           "meets_target": geo >= TARGET_RATIO,
           "index_s": index_run.wall_s if index_run else None}
    write_json(Path(a.out), res)
    print(f"written {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
