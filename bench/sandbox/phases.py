#!/usr/bin/env python3
"""Where a `lode sandbox-exec` spawn spends its time, from a system-call trace.

Run by bench/sandbox/startup.sh --phases N (see its header), in two steps:

  phases.py spawn --lode L --workspace WS --mode M --runs N --pid-file F
      spawns `L sandbox-exec --mode M --root WS -- /bin/true` N times (10 ms apart), the way
      spawn_bench.py does (pinned to one CPU likewise, --pin); startup.sh runs it under
      `perf record -e raw_syscalls:sys_enter,raw_syscalls:sys_exit,sched:sched_process_exec`.
  phases.py report --pid-file F --mode M [--json OUT] < `perf script` output
      cuts every spawn into phases at the launcher's own system calls and prints the median
      and p90 of each phase.

The phases (x86-64 system-call numbers; the launcher's code is server/sandbox/src/launcher.rs
and linux/*.rs):

  spawn     caller's clone until the launcher's exec event (spawning a process and exec'ing
            the lode binary)
  start     lode's exec until its first landlock_create_ruleset (the Landlock ABI check):
            ld.so and relocations, library constructors, Rust runtime, mimalloc, main(),
            argument parsing
  plan      from there to unshare: private temp dir, .git/.lode checks, the toolchain and
            credential-file listing, environment scrub (the user-namespace probe that used
            to fork here went in 68b3716: a failing unshare now says the sandbox is unavailable)
  mounts    unshare until prctl(PR_SET_NO_NEW_PRIVS): uid/gid maps, the read-only view of
            the file system with the writable paths (and .git/.lode) mounted again
  confine   prctl until seccomp(SET_MODE_FILTER) returns: the Landlock ruleset (one
            open/add_rule/close per path) and the seccomp filter
  caps      until the launcher's execve: dropping capabilities, building the environment
  exec      execve until the command's exec event (loading it, dropping lode's mappings)
  command   the command's exec until its exit_group
  exit      exit_group until the caller's wait4 returns (includes tearing down the
            namespaces)

Tracing every system call adds a microsecond or two to each, so phases with many calls
(start, confine) read a little high. Standard library only.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

NR_CLONE, NR_VFORK, NR_CLONE3 = 56, 58, 435
NR_EXECVE, NR_WAIT4, NR_EXIT_GROUP = 59, 61, 231
NR_PRCTL, NR_UNSHARE, NR_SECCOMP = 157, 272, 317
NR_LANDLOCK_CREATE_RULESET = 444

PHASES = [
    ("spawn", "caller_clone", "launcher_exec", "spawn + exec of lode"),
    ("start", "launcher_exec", "probe_start", "ld.so, constructors, Rust runtime, main, arguments"),
    ("plan", "probe_start", "plan_done", "temp dir, .git/.lode checks, paths, environment"),
    ("mounts", "unshare", "no_new_privs", "user + mount namespace, uid/gid maps, mounts"),
    ("confine", "no_new_privs", "seccomp_done", "Landlock ruleset + seccomp filter"),
    ("caps", "seccomp_done", "execve", "capabilities dropped, environment"),
    ("exec", "execve", "command_exec", "execve of the command (drops lode's mappings)"),
    ("command", "command_exec", "command_exit", "the command itself (/bin/true)"),
    ("exit", "command_exit", "caller_wait", "exit (namespace teardown) until the caller's wait4"),
    ("total", "caller_clone", "caller_wait", "total"),
]


def spawn(args: argparse.Namespace) -> None:
    Path(args.pid_file).write_text(str(os.getpid()))
    if args.pin != "none":  # as spawn_bench.py does
        cpus = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {max(cpus) if args.pin == "auto" else int(args.pin)})
    ws = os.path.realpath(args.workspace)
    os.chdir(ws)
    null = os.open(os.devnull, os.O_RDWR)
    actions = [(os.POSIX_SPAWN_DUP2, null, fd) for fd in (0, 1, 2)]
    argv = [args.lode, "sandbox-exec", "--mode", args.mode, "--root", ws, "--", "/bin/true"]
    for _ in range(args.runs):
        pid = os.posix_spawn(argv[0], argv, dict(os.environ), file_actions=actions)
        _, status, _ = os.wait4(pid, 0)
        if status != 0:
            sys.exit(f"phases.py: the launcher exited with status {status}")
        time.sleep(0.01)


EVENT = re.compile(r"^\s*(?P<comm>.*?)\s+(?P<pid>\d+)\s+\[\d+\]\s+(?P<time>[\d.]+):\s+"
                   r"(?P<name>[\w:]+):\s*(?P<args>.*)$")
NR = re.compile(r"NR (\d+)")


def report(args: argparse.Namespace) -> None:
    driver = int(Path(args.pid_file).read_text())
    runs, current = [], None
    for line in sys.stdin:
        match = EVENT.match(line)
        if not match:
            continue
        pid, name, rest = int(match["pid"]), match["name"], match["args"]
        t = float(match["time"]) * 1e3
        number = NR.search(rest)
        nr = int(number.group(1)) if number else None
        enter, leave = name.endswith("sys_enter"), name.endswith("sys_exit")
        if pid == driver:
            if enter and nr in (NR_CLONE, NR_CLONE3, NR_VFORK) and current is None:
                current = {"caller_clone": t, "pid": None}
            elif leave and nr == NR_WAIT4 and current is not None:
                current["caller_wait"] = t
                runs.append(current)
                current = None
            continue
        if current is None:
            continue
        if name == "sched:sched_process_exec":
            if current["pid"] is None:
                current["pid"], current["launcher_exec"] = pid, t
            elif pid == current["pid"]:
                current["command_exec"] = t
            continue
        if pid != current["pid"]:
            continue
        started = "probe_start" in current
        if enter and nr == NR_LANDLOCK_CREATE_RULESET and not started:
            current["probe_start"] = t
        elif enter and nr == NR_UNSHARE and started and "unshare" not in current:
            current["unshare"] = current["plan_done"] = t
        elif enter and nr == NR_PRCTL and started and "no_new_privs" not in current:
            # The first prctl after the ABI check is confine()'s PR_SET_NO_NEW_PRIVS.
            current["no_new_privs"] = t
            current.setdefault("plan_done", t)
        elif leave and nr == NR_SECCOMP and "no_new_privs" in current \
                and "seccomp_done" not in current:
            current["seccomp_done"] = t
        elif enter and nr == NR_EXECVE and "seccomp_done" in current \
                and "execve" not in current:
            current["execve"] = t
        elif enter and nr == NR_EXIT_GROUP and "command_exec" in current:
            current["command_exit"] = t
    # Only the launcher's spawns (python3 may be a shim that spawned helpers in the same pid).
    needed = ("probe_start", "no_new_privs", "seccomp_done", "command_exec")
    runs = [r for r in runs if all(key in r for key in needed)]
    if not runs:
        sys.exit("phases.py: no launcher spawns found in the trace")
    rows = {}
    print(f"{args.mode}: {len(runs)} traced spawns (ms)")
    print(f"  {'phase':<8} {'median':>7} {'p90':>7}  what")
    for phase, start, end, what in PHASES:
        values = sorted(r[end] - r[start] for r in runs if start in r and end in r)
        if not values:
            continue
        row = {"median_ms": statistics.median(values),
               "p90_ms": values[min(len(values) - 1, int(len(values) * 0.9))],
               "runs": len(values), "what": what}
        rows[phase] = row
        print(f"  {phase:<8} {row['median_ms']:7.3f} {row['p90_ms']:7.3f}  {what}")
    if args.json:
        path = Path(args.json)
        data = json.loads(path.read_text()) if path.exists() else {}
        data[args.mode] = rows
        path.write_text(json.dumps(data, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    spawner = sub.add_parser("spawn")
    spawner.add_argument("--lode", required=True)
    spawner.add_argument("--workspace", required=True)
    spawner.add_argument("--mode", default="workspace-write")
    spawner.add_argument("--runs", type=int, default=100)
    spawner.add_argument("--pid-file", required=True)
    spawner.add_argument("--pin", default="auto")
    reporter = sub.add_parser("report")
    reporter.add_argument("--pid-file", required=True)
    reporter.add_argument("--mode", default="workspace-write")
    reporter.add_argument("--json", default="")
    args = parser.parse_args()
    spawn(args) if args.command == "spawn" else report(args)


if __name__ == "__main__":
    main()
