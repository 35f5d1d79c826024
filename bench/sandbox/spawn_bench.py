#!/usr/bin/env python3
"""Per-spawn wall time of commands with and without `lode sandbox-exec`.

Run by bench/sandbox/startup.sh (see its header). Each variant is a fixed argv started with
os.posix_spawn (glibc's clone(CLONE_VM|CLONE_VFORK) + exec, so the driver's own size does not
enter the cost) and reaped with os.wait4; the time of one spawn is perf_counter_ns from just
before posix_spawn to just after wait4 returns, i.e. start, run and exit of the child as the
caller sees it. stdin/stdout/stderr of every child are /dev/null. CPU time (user + system) of
each child comes from wait4's rusage and includes the children it waited for (the launcher's
user-namespace probe forks one).

The driver and so every child run pinned to one CPU (--pin, default the last one): on this
busy 2-core VM a child woken on the other, busy, CPU waited for that CPU's next scheduler tick
(4 ms at HZ=250) in 40-50% of all spawns, whichever the variant, which drowned the
differences being measured. --pin none measures without it.

R rounds of N spawns per variant; the order of the variants rotates every round, so drift of
this VM's speed spreads over all of them. Reported per variant: the median and p95 of all
N x R spawns, the spread of the per-round medians, the median child CPU time, and for every
confined variant the delta over its unconfined reference and the ratio.

Standard library only.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

TARGET_DELTA_MS = 5.0
# With --baseline: a confined spawn of this lode may cost at most this much more than the same
# spawn of the baseline lode (issue 42: within 1 ms of the pre-issue launcher).
TARGET_BASELINE_DELTA_MS = 1.0
# The variants repeated with the baseline binary.
BASELINE_VARIANTS = ("true-ws", "true-ro", "sh-ws", "launcher-exit")


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return ordered[rank - 1]


def variants(lode: str, ws: str) -> list[dict]:
    """name, argv, expected exit code, reference (the unconfined variant it is compared to)."""
    sandbox = [lode, "sandbox-exec"]
    return [
        {"name": "true", "argv": ["/bin/true"], "rc": 0, "ref": None,
         "what": "/bin/true, unconfined"},
        {"name": "true-ws", "argv": sandbox + ["--root", ws, "--", "/bin/true"], "rc": 0,
         "ref": "true", "what": "/bin/true through sandbox-exec, workspace-write (default)"},
        {"name": "true-ro", "argv": sandbox + ["--mode", "read-only", "--root", ws, "--",
                                               "/bin/true"], "rc": 0,
         "ref": "true", "what": "/bin/true through sandbox-exec --mode read-only"},
        # As run_command spawns it: `sh` found on PATH, the mode spelled out.
        {"name": "sh", "argv": ["sh", "-c", "true"], "rc": 0, "ref": None,
         "what": "sh -c 'true', unconfined"},
        {"name": "sh-ws", "argv": sandbox + ["--mode", "workspace-write", "--root", ws, "--",
                                             "sh", "-c", "true"],
         "rc": 0, "ref": "sh",
         "what": "sh -c 'true' through sandbox-exec, workspace-write (run_command)"},
        {"name": "lode-version", "argv": [lode, "--version"], "rc": 0, "ref": "true",
         "what": "lode --version: exec of the lode binary, clap, print"},
        # An unknown launcher option: exec of lode, main(), the launcher's argument parser,
        # then exit 125 before any probe. The floor of any sandbox-exec.
        {"name": "launcher-exit", "argv": sandbox + ["--bench-no-such-option"], "rc": 125,
         "ref": "true", "what": "lode sandbox-exec refusing an unknown option (exec of lode, "
                                "no probe, no confinement)"},
    ]


def pin(choice: str) -> str:
    """Pins this process (and so its children) to one CPU; returns what was done."""
    if choice == "none":
        return "none"
    cpu = max(os.sched_getaffinity(0)) if choice == "auto" else int(choice)
    os.sched_setaffinity(0, {cpu})
    return str(cpu)


def spawn_once(argv: list[str], env: dict, actions: list) -> tuple[int, float, int]:
    """(wall ns, child CPU s, exit status) of one spawn."""
    start = time.perf_counter_ns()
    spawn = os.posix_spawn if argv[0].startswith("/") else os.posix_spawnp
    pid = spawn(argv[0], argv, env, file_actions=actions)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter_ns() - start
    return wall, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def check_confinement(lode: str, ws: str, env: dict) -> dict:
    """The confined variants really confine: a write to WS/.git is refused in workspace-write,
    a write to WS is refused in read-only, and LODE_SANDBOX is set. Returns what was seen."""
    import subprocess

    def run(mode: list[str], script: str) -> subprocess.CompletedProcess:
        return subprocess.run([lode, "sandbox-exec", *mode, "--root", ws, "--", "/bin/sh", "-c",
                               script], env=env, cwd=ws, capture_output=True, text=True)

    seen = {}
    marker = run([], 'printf %s "$LODE_SANDBOX"')
    if marker.returncode != 0:
        sys.exit(f"spawn_bench: the launcher failed (exit {marker.returncode}); is the sandbox "
                 f"available on this machine?\n{marker.stderr.strip()}")
    seen["LODE_SANDBOX"] = marker.stdout
    writes = run([], f'true > "{ws}/bench-probe" && echo ws-ok; true > "{ws}/.git/bench-probe" '
                     f'2>/dev/null && echo git-WRITABLE || echo git-refused')
    seen["workspace_write"] = writes.stdout.split()
    ro = run(["--mode", "read-only"], f'true > "{ws}/bench-probe-ro" 2>/dev/null '
                                      f'&& echo ws-WRITABLE || echo ws-refused')
    seen["read_only"] = ro.stdout.split()
    for leftover in ("bench-probe", "bench-probe-ro", ".git/bench-probe"):
        Path(ws, leftover).unlink(missing_ok=True)
    ok = (seen["LODE_SANDBOX"] == "workspace-write"
          and seen["workspace_write"] == ["ws-ok", "git-refused"]
          and seen["read_only"] == ["ws-refused"])
    if not ok:
        sys.exit(f"spawn_bench: the sandbox does not confine as expected: {seen}")
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lode", required=True)
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--spawns", type=int, default=200, help="spawns per variant per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=20, help="untimed spawns per variant first")
    parser.add_argument("--variants", default="",
                        help="comma-separated subset of the variant names (default: all)")
    parser.add_argument("--pin", default="auto",
                        help="CPU to run on (auto: the last one; none: no pinning)")
    parser.add_argument("--json", default="", help="write the results here")
    parser.add_argument("--baseline", default="",
                        help="another lode binary: its true-ws, true-ro, sh-ws and launcher-exit "
                             "run in the same rounds as NAME@base, and this lode's are compared "
                             "with them")
    args = parser.parse_args()
    pinned = pin(args.pin)

    lode, ws = os.path.abspath(args.lode), os.path.realpath(args.workspace)
    env = dict(os.environ)
    all_variants = variants(lode, ws)
    baseline = os.path.abspath(args.baseline) if args.baseline else ""
    if baseline:
        for variant in variants(baseline, ws):
            if variant["name"] in BASELINE_VARIANTS:
                variant["base_of"] = variant["name"]
                variant["name"] += "@base"
                variant["what"] += " (the baseline binary)"
                all_variants.append(variant)
    if args.variants:
        wanted = args.variants.split(",")
        unknown = set(wanted) - {v["name"] for v in all_variants}
        if unknown:
            sys.exit(f"spawn_bench: unknown variants {sorted(unknown)}; "
                     f"known: {[v['name'] for v in all_variants]}")
        chosen = [v for v in all_variants if v["name"] in wanted]
    else:
        chosen = all_variants
    os.chdir(ws)  # what run_command does: the command runs in the workspace
    confinement = check_confinement(lode, ws, env)
    if baseline:
        confinement["baseline"] = check_confinement(baseline, ws, env)

    null = os.open(os.devnull, os.O_RDWR)
    actions = [(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1),
               (os.POSIX_SPAWN_DUP2, null, 2)]
    for variant in chosen:
        variant["wall_ns"], variant["cpu_s"], variant["round_medians_ms"] = [], [], []
        for _ in range(args.warmup):
            _, _, code = spawn_once(variant["argv"], env, actions)
            if code != variant["rc"]:
                sys.exit(f"spawn_bench: {variant['name']} exited {code}, expected "
                         f"{variant['rc']}: {' '.join(variant['argv'])}")

    started = time.time()
    for round_index in range(args.rounds):
        shift = round_index % len(chosen)
        order = chosen[shift:] + chosen[:shift]
        for variant in order:
            walls = []
            for _ in range(args.spawns):
                wall, cpu, code = spawn_once(variant["argv"], env, actions)
                if code != variant["rc"]:
                    sys.exit(f"spawn_bench: {variant['name']} exited {code}, expected "
                             f"{variant['rc']}")
                walls.append(wall)
                variant["cpu_s"].append(cpu)
            variant["wall_ns"].extend(walls)
            variant["round_medians_ms"].append(statistics.median(walls) / 1e6)
        print(f"round {round_index + 1}/{args.rounds}: "
              + ", ".join(f"{v['name']} {v['round_medians_ms'][-1]:.2f}" for v in chosen)
              + " ms (medians)", file=sys.stderr, flush=True)
    elapsed = time.time() - started

    by_name = {}
    for variant in chosen:
        walls_ms = [ns / 1e6 for ns in variant["wall_ns"]]
        by_name[variant["name"]] = {
            "what": variant["what"],
            "argv": variant["argv"],
            "spawns": len(walls_ms),
            "median_ms": statistics.median(walls_ms),
            "p95_ms": percentile(walls_ms, 95),
            "min_ms": min(walls_ms),
            "round_medians_ms": variant["round_medians_ms"],
            "cpu_median_ms": statistics.median(variant["cpu_s"]) * 1e3,
            "ref": variant["ref"],
        }
    for name, row in by_name.items():
        ref = by_name.get(row["ref"]) if row["ref"] else None
        if ref:
            row["delta_ms"] = row["median_ms"] - ref["median_ms"]
            row["ratio"] = row["median_ms"] / ref["median_ms"]
            row["delta_p95_ms"] = row["p95_ms"] - ref["p95_ms"]
            row["cpu_delta_ms"] = row["cpu_median_ms"] - ref["cpu_median_ms"]

    print()
    print(f"{args.spawns} spawns x {args.rounds} rounds per variant, {elapsed:.0f} s, "
          f"pinned to CPU {pinned}; "
          f"lode: {lode} ({os.path.getsize(lode) / 2**20:.0f} MiB); workspace: {ws}")
    header = (f"{'variant':<14} {'median ms':>9} {'p95 ms':>8} {'rounds (median ms)':>19} "
              f"{'delta ms':>9} {'ratio':>6} {'cpu ms':>7} {'cpu delta':>9}  vs")
    print(header)
    print("-" * len(header))
    for name, row in by_name.items():
        rounds = f"{min(row['round_medians_ms']):.2f}-{max(row['round_medians_ms']):.2f}"
        delta = f"{row['delta_ms']:+9.2f}" if "delta_ms" in row else f"{'':>9}"
        ratio = f"{row['ratio']:6.2f}" if "ratio" in row else f"{'':>6}"
        cpu_delta = f"{row['cpu_delta_ms']:+9.2f}" if "cpu_delta_ms" in row else f"{'':>9}"
        print(f"{name:<14} {row['median_ms']:9.2f} {row['p95_ms']:8.2f} {rounds:>19} "
              f"{delta} {ratio} {row['cpu_median_ms']:7.2f} {cpu_delta}  {row['ref'] or ''}")
    print()
    verdicts = {}
    for name in BASELINE_VARIANTS:
        row, base = by_name.get(name), by_name.get(f"{name}@base")
        if row and base:
            row["vs_baseline_delta_ms"] = row["median_ms"] - base["median_ms"]
            row["vs_baseline_ratio"] = row["median_ms"] / base["median_ms"]
            row["vs_baseline_cpu_delta_ms"] = row["cpu_median_ms"] - base["cpu_median_ms"]
            verdict = ("OK" if row["vs_baseline_delta_ms"] <= TARGET_BASELINE_DELTA_MS
                       else "MISS")
            if name != "launcher-exit":
                verdicts[f"{name} vs baseline"] = verdict
            print(f"{name}: {row['median_ms']:.2f} ms against {base['median_ms']:.2f} ms for "
                  f"the baseline: {row['vs_baseline_delta_ms']:+.2f} ms "
                  f"(x{row['vs_baseline_ratio']:.3f}; CPU "
                  f"{row['vs_baseline_cpu_delta_ms']:+.2f} ms), target <= "
                  f"{TARGET_BASELINE_DELTA_MS:g} ms more: {verdict}")
    for name in ("true-ws", "true-ro", "sh-ws"):
        row = by_name.get(name)
        if row and "delta_ms" in row:
            verdict = "OK" if row["delta_ms"] < TARGET_DELTA_MS else "MISS"
            verdicts[name] = verdict
            print(f"{name}: {row['delta_ms']:+.2f} ms over {row['ref']} "
                  f"(x{row['ratio']:.2f}; CPU {row['cpu_delta_ms']:+.2f} ms), "
                  f"target < {TARGET_DELTA_MS:g} ms: {verdict}")
    if "launcher-exit" in by_name and "true-ws" in by_name:
        floor = by_name["launcher-exit"]["median_ms"]
        confined = by_name["true-ws"]["median_ms"]
        print(f"of true-ws's {confined:.2f} ms (medians): exec of lode to its exit "
              f"{floor:.2f} ms (launcher-exit), everything else the launcher does and "
              f"/bin/true {confined - floor:.2f} ms; see the phase breakdown below")

    if args.json:
        result = {
            "date": time.strftime("%Y-%m-%d %H:%M:%S"),
            "lode": lode,
            "lode_bytes": os.path.getsize(lode),
            "workspace": ws,
            "spawns_per_round": args.spawns,
            "rounds": args.rounds,
            "warmup": args.warmup,
            "cpus": os.cpu_count(),
            "pinned_cpu": pinned,
            "loadavg": os.getloadavg(),
            "kernel": os.uname().release,
            "confinement_check": confinement,
            "target_delta_ms": TARGET_DELTA_MS,
            "baseline": baseline or None,
            "baseline_bytes": os.path.getsize(baseline) if baseline else None,
            "target_baseline_delta_ms": TARGET_BASELINE_DELTA_MS,
            "verdicts": verdicts,
            "variants": by_name,
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
