"""Search latency: `lode search` vs ripgrep over the same tree; run through bench/search.sh."""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from benchlib import (BENCH, CORPUS, LODE, OUT, die, fmt_s, last_line, machine, require_dir,
                      require_lode, run_timed, table, write_json)

TARGET_RATIO = 20.0
# Issue 22's targets for a query served by `lode daemon`, per mode.
DAEMON_TARGETS = {"lexical": 60.0, "default": 30.0}
# Every lode run here starts no background daemon by itself: the "daemon" variant starts one
# explicitly, the others measure a process that answers alone.
os.environ["LODE_DAEMON"] = "never"
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


FRESHNESS = {
    # name: (extra lode flags, holder running: None, "watch" or "daemon")
    "default": ([], None),          # quick check: stat every file of the last walk
    "watched": ([], "watch"),       # `lode watch` holds the lease and answers the query
    "daemon": ([], "daemon"),       # `lode daemon` holds the lease and answers the query
    "no-refresh": (["--no-refresh"], None),
}


class Holder:
    """`lode watch PATH` or `lode daemon start` for the served runs; stopped afterwards."""

    def __init__(self, kind: str, path: Path, log: Path):
        self.kind, self.path = kind, path
        self.log = open(log, "w")
        self.proc = None
        if kind == "watch":
            self.proc = subprocess.Popen([LODE, "watch", path], cwd=path, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=self.log)
        else:
            subprocess.run([LODE, "daemon", "start", "--root", path], cwd=path, stderr=self.log,
                           check=True)
        deadline = time.monotonic() + 600
        while True:  # ready once a query is served
            p = subprocess.run([LODE, "search", "--root", path, "-v", "--mode", "lexical", "--limit", "1",
                                "--", "ready"], cwd=path, capture_output=True, text=True)
            if f"served by lode {kind}" in p.stderr:
                return
            if (self.proc and self.proc.poll() is not None) or time.monotonic() > deadline:
                self.stop()
                die(f"lode {kind} did not start answering (see {log}):\n{p.stderr[-1000:]}")
            time.sleep(0.2)

    def stop(self):
        if self.proc is None:
            subprocess.run([LODE, "daemon", "stop", "--root", self.path], cwd=self.path,
                           stderr=self.log)
        elif self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


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
    ap.add_argument("--modes", default="lexical,default",
                    help="comma-separated `lode search --mode` values to time; `default` passes no "
                         "--mode (hybrid when the index has vectors). Default: lexical,default")
    ap.add_argument("--mode", help="time only this mode (same as --modes MODE)")
    ap.add_argument("--freshness", default="default,watched,daemon,no-refresh",
                    help="comma-separated variants: default (quick stat check), watched (with "
                         "`lode watch` running), daemon (`lode daemon` running), no-refresh. "
                         "Default: all four")
    ap.add_argument("--symbols", action="store_true",
                    help="also time `lode symbols` and `lode refs` for the one-word queries under "
                         "each variant")
    ap.add_argument("--reindex", action="store_true", help="rebuild the index before measuring")
    ap.add_argument("--out", default=str(OUT / "search.json"))
    a = ap.parse_args()

    require_lode()
    if not shutil.which("hyperfine"):
        die("hyperfine is required: apt-get install hyperfine")
    path = require_dir(Path(a.path).resolve())
    queries = load_queries(Path(a.queries))
    if not queries:
        die(f"no queries in {a.queries}")
    modes = [a.mode] if a.mode else [m for m in a.modes.split(",") if m]
    variants = [v for v in a.freshness.split(",") if v]
    for v in variants:
        if v not in FRESHNESS:
            die(f"unknown freshness variant {v!r} (default, watched, daemon, no-refresh)")

    index_run = None
    if a.reindex or not (path / ".lode" / "index").exists():
        if a.reindex:
            shutil.rmtree(path / ".lode", ignore_errors=True)
        print(f"indexing {path} ...")
        index_run = run_timed([LODE, "index", path]).check()
        print(f"  {fmt_s(index_run.wall_s)}  [{last_line(index_run.stderr)}]")
        if not (path / ".lode").exists():
            die(f"`lode index` created no {path}/.lode; is {LODE} the real lode binary?")

    rg_types = [] if a.rg_all_files else RG_TYPES
    print(f"tree: {path}\nrg: rg -n -i {' '.join(rg_types)} <{a.rg_mode}> .   lode: lode search --root PATH "
          f"--limit {a.limit} --json [--mode M] [--no-refresh]   modes {modes}, variants {variants}   "
          f"({a.runs} runs, {a.warmup} warm-up, output piped)\n")

    def lode_cmd(q: str, mode: str, variant: str) -> list:
        flags = FRESHNESS[variant][0] + ([] if mode == "default" else ["--mode", mode])
        return [LODE, "search", "--root", path, "--limit", str(a.limit), "--json"] + flags + ["--", q]

    # Phase 1, no holder: rg, the default quick check and --no-refresh. Then one phase per
    # holder (`lode watch`, `lode daemon`): the same queries, rg again, so each phase carries
    # its own reference.
    holders = [None, "watch", "daemon"]
    phases = [(h, [v for v in variants if FRESHNESS[v][1] == h]) for h in holders]
    per_query: dict[str, dict] = {q: {"query": q, "rg_pattern": rg_args(q, a.rg_mode)[1::2], "lode": {}} for q in queries}
    for holder_kind, phase_variants in phases:
        if not phase_variants:
            continue
        OUT.mkdir(parents=True, exist_ok=True)
        holder = Holder(holder_kind, path, OUT / f"search-{holder_kind}.log") if holder_kind else None
        try:
            for q in queries:
                rec = per_query[q]
                rg_cmd = ["rg", "-n", "-i"] + rg_types + rg_args(q, a.rg_mode) + ["."]
                cmds, names = [rg_cmd], ["rg"]
                commands = [(mode, lode_cmd(q, mode, v), v) for mode in modes for v in phase_variants]
                if a.symbols and " " not in q:
                    for v in phase_variants:
                        for command in ("symbols", "refs"):
                            cmd = [LODE, command, "--root", path, "--json"] + FRESHNESS[v][0] + ["--", q]
                            commands.append((command, cmd, v))
                for mode, cmd, v in commands:
                    lr = run_timed(cmd[:-2] + ["-v"] + cmd[-2:], cwd=path)
                    if lr.rc not in (0, 1) or (lr.rc == 1 and lr.stdout.strip()):
                        die(f"lode failed for {q!r} (exit {lr.rc}):\n{lr.stderr[-2000:]}")
                    if holder_kind and f"served by lode {holder_kind}" not in lr.stderr:
                        die(f"the {v} run of {q!r} was not served by lode {holder_kind}:\n{lr.stderr[-1000:]}")
                    hits = [l for l in lr.stdout.splitlines() if l.strip()]
                    bad = sum(1 for l in hits if mode in modes and not _complete_hit(l))
                    rec["lode"][f"{mode}/{v}"] = {"hits": len(hits), "bad_lines": bad,
                                                  "top": json.loads(hits[0]).get("path") if hits and not bad else None}
                    cmds.append(cmd)
                    names.append(f"{mode}/{v}")
                rr = subprocess.run(rg_cmd, cwd=path, capture_output=True, text=True)
                rec["rg_matching_lines"] = rr.stdout.count("\n")
                hr = hyperfine(cmds, names, path, a.runs, a.warmup)
                rg_ms = hr[0]["median"] * 1000
                rec.setdefault("rg_ms", []).append(rg_ms)
                for name, r in zip(names[1:], hr[1:]):
                    ms = r["median"] * 1000
                    rec["lode"][name].update({"ms": ms, "ms_mean": r["mean"] * 1000,
                                              "ms_stddev": (r.get("stddev") or 0) * 1000,
                                              "rg_ms_same_batch": rg_ms, "ratio": rg_ms / ms if ms > 0 else float("inf")})
                print(f"  {q!r}{f' (lode {holder_kind} running)' if holder_kind else ''}: rg {rg_ms:.1f} ms; "
                      + ", ".join(f"{n} {rec['lode'][n]['ms']:.1f} ms ({rec['lode'][n]['ratio']:.1f}x)" for n in names[1:]))
        finally:
            if holder:
                holder.stop()

    gm = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))
    names = [f"{m}/{v}" for m in modes for v in variants]
    if a.symbols:
        names += [f"{c}/{v}" for c in ("symbols", "refs") for v in variants]
    # A running watcher slows rg itself (notify 8 subscribes to IN_OPEN, so every file rg opens
    # wakes the watcher: 1.5x slower rg on the benchmark corpus). Every ratio is therefore
    # taken against rg timed with no watcher (phase 1), when that phase ran.
    quiet_phase_ran = any(not FRESHNESS[v][1] for v in variants)
    slowdowns = []
    for q in queries:
        rec = per_query[q]
        rg_quiet = rec["rg_ms"][0]
        for n in names:
            if n not in rec["lode"]:
                continue
            if FRESHNESS[n.split("/", 1)[1]][1] and quiet_phase_ran:
                entry = rec["lode"][n]
                slowdowns.append(entry["rg_ms_same_batch"] / rg_quiet)
                entry["rg_ms_with_watcher"] = entry["rg_ms_same_batch"]
                entry["ratio"] = rg_quiet / entry["ms"] if entry["ms"] > 0 else float("inf")
                entry["ratio_against"] = "rg with no watcher running (phase 1)"
    if slowdowns:
        print(f"\nrg with `lode watch` running / rg alone: {gm(slowdowns):.2f}x (geometric mean); "
              "watched ratios below are against rg alone")
    summary = {}
    rows = []
    for n in names:
        timed = [q for q in queries if n in per_query[q]["lode"]]
        ms = [per_query[q]["lode"][n]["ms"] for q in timed]
        ratios = [per_query[q]["lode"][n]["ratio"] for q in timed]
        mode, variant = n.split("/", 1)
        target = DAEMON_TARGETS.get(mode, TARGET_RATIO) if variant == "daemon" else TARGET_RATIO
        summary[n] = {"geomean_ratio": gm(ratios), "worst_ratio": min(ratios), "median_ms": sorted(ms)[len(ms) // 2],
                      "target_ratio": target, "meets_target": gm(ratios) >= target}
        rows.append([n, f"{summary[n]['median_ms']:.1f}", f"{gm(ratios):.1f}x", f"{min(ratios):.1f}x",
                     f"{target:.0f}x " + ("OK" if gm(ratios) >= target else "MISS")])
    rg_all = [ms for q in queries for ms in per_query[q]["rg_ms"]]
    print()
    print(table([[q] + [f"{per_query[q]['lode'][n]['ms']:.1f}" if n in per_query[q]["lode"] else "-" for n in names]
                 + [f"{min(per_query[q]['rg_ms']):.1f}"] for q in queries], ["query"] + [f"{n} ms" for n in names] + ["rg ms"]))
    print()
    print(table(rows, ["lode (mode/freshness)", "median ms", "geomean rg/lode", "worst", "target"]))
    print(f"rg median over all queries and batches: {sorted(rg_all)[len(rg_all) // 2]:.1f} ms")
    res = {"tree": str(path), "machine": machine(), "limit": a.limit, "runs": a.runs, "rg_mode": a.rg_mode,
           "rg_types": rg_types, "modes": modes, "variants": variants, "queries": list(per_query.values()),
           "summary": summary, "target_ratio": TARGET_RATIO,
           "index_s": index_run.wall_s if index_run else None}
    write_json(Path(a.out), res)
    print(f"written {a.out}")
    return 0


def _complete_hit(line: str) -> bool:
    try:
        return {"path", "start_line", "end_line"} <= json.loads(line).keys()
    except json.JSONDecodeError:
        return False


if __name__ == "__main__":
    raise SystemExit(main())
