#!/usr/bin/env bash
# Sandbox start-up cost per command: the wall time of one spawn through
# `lode sandbox-exec` against the same command spawned unconfined, in one invocation
# (target: under 5 ms more than the unconfined spawn).
#
#   bench/sandbox/startup.sh [--bin PATH] [--baseline PATH] [--spawns N] [--rounds R]
#                            [--warmup N] [--variants a,b,...] [--pin CPU|none] [--phases N]
#                            [--keep]
#
# What it does:
#   1. builds the release binary (`cargo build --release -p lode`) unless --bin PATH (or
#      LODE_BIN) names a lode binary to test;
#   2. makes a scratch workspace: a git repository with one commit, so workspace-write mode
#      takes its real path (user + mount namespace, .git/ and .lode/ bind-mounted read-only);
#   3. checks that the sandbox really confines there (LODE_SANDBOX is set, a write to .git/ is
#      refused, a write to the workspace is refused in read-only mode), and stops if not;
#   4. runs bench/sandbox/spawn_bench.py, which times each spawn itself (posix_spawn + wait4,
#      perf_counter_ns; no shell in between), --warmup untimed spawns per variant, then
#      --rounds rounds of --spawns spawns per variant, the variants' order rotating each round.
#
# Variants (cwd = the workspace, stdio = /dev/null, the caller's environment):
#   true           /bin/true, unconfined (reference)
#   true-ws        lode sandbox-exec --root WS -- /bin/true          (workspace-write, default)
#   true-ro        lode sandbox-exec --mode read-only --root WS -- /bin/true
#   sh             sh -c 'true', unconfined (reference)
#   sh-ws          lode sandbox-exec --mode workspace-write --root WS -- sh -c 'true'
#                  (what run_command spawns; sh found on PATH in both sh variants)
#   lode-version   lode --version: the cost of exec'ing the lode binary at all
#   launcher-exit  lode sandbox-exec with an unknown option: exec of lode, main() and the
#                  launcher's argument parsing, exit 125 before the kernel probe (the floor
#                  of every sandboxed spawn)
#
# Reported per variant: median and p95 ms per spawn over all rounds, the range of the
# per-round medians, the child's median CPU ms (user + system, from wait4), and for the
# confined variants the delta over the reference in ms and the ratio; OK/MISS against the
# 5 ms target for true-ws, true-ro and sh-ws; how much of true-ws is the exec of lode alone
# (launcher-exit). Results: bench/out/sandbox-startup.json.
#
# Then, when `perf` can trace system calls here, bench/sandbox/phases.py cuts --phases traced
# spawns per mode (workspace-write, read-only) into phases at the launcher's own system calls
# (lode's start-up, the user-namespace probe, plan, namespace and mounts, Landlock + seccomp,
# capabilities, exec of the command, the command, exit) and prints the median and p90 of
# each; tracing adds a microsecond or two per system call. Results:
# bench/out/sandbox-phases.json.
#
# Options:
#   --bin PATH        lode binary to test (no build); LODE_BIN=PATH does the same
#   --baseline PATH   another lode binary (an older commit's release build): its true-ws, true-ro,
#                     sh-ws and launcher-exit run in the same rounds as NAME@base, and each of
#                     this lode's is reported against it (target: at most 1 ms more). To build
#                     one: `git worktree add /tmp/base COMMIT`, then in it
#                     `CARGO_TARGET_DIR=… cargo build --release -p lode --bins` and copy
#                     lode and lode-full out
#   --spawns N        timed spawns per variant per round (default 200)
#   --rounds R        rounds (default 5)
#   --warmup N        untimed spawns per variant before the first round (default 20)
#   --variants LIST   comma-separated subset of the variants above (default: all)
#   --phases N        traced spawns per mode for the phase breakdown (default 100; 0: skip)
#   --pin CPU|none    the CPU the driver and every spawn run on (default: the last one). On
#                     a loaded machine a child woken on another, busy, CPU can wait for that
#                     CPU's next scheduler tick (4 ms at HZ=250); pinning measures the
#                     sandbox's own cost, `none` what a spawn costs among other work
#   --keep            keep the scratch workspace (its path is printed)
#
# Needs Linux with Landlock, seccomp and unprivileged user namespaces, git and python3;
# `perf` (linux-perf) for the phase breakdown, which is skipped without it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

bin="${LODE_BIN:-}"
keep=0
pin=auto
phases=100
pass=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --bin) [[ $# -ge 2 ]] || die "--bin needs a path"; bin="$2"; shift 2 ;;
    --spawns|--rounds|--warmup|--variants|--baseline)
      [[ $# -ge 2 ]] || die "$1 needs a value"; pass+=("$1" "$2"); shift 2 ;;
    --phases) [[ $# -ge 2 ]] || die "--phases needs a value"; phases="$2"; shift 2 ;;
    --pin) [[ $# -ge 2 ]] || die "--pin needs a value"; pin="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done

if [[ -z "$bin" ]]; then
  echo "building the release binary (cargo build --release -p lode) ..." >&2
  (cd "$ROOT" && cargo build --release -p lode) || die "release build failed"
  bin="$ROOT/target/release/lode"
fi
LODE="$(cd "$(dirname "$bin")" && pwd -P)/$(basename "$bin")"
require_lode
command -v git >/dev/null || die "git is required"
command -v python3 >/dev/null || die "python3 is required"
# The interpreter itself, not a version manager's shim (which would spawn helpers of its own).
python="$(python3 -c 'import sys; print(sys.executable)')"

ws="$(mktemp -d "${TMPDIR:-/tmp}/lode-sandbox-bench.XXXXXX")"
ws="$(cd "$ws" && pwd -P)"   # the launcher wants canonical roots
cleanup() {
  if [[ $keep == 1 ]]; then echo "kept the scratch workspace $ws" >&2; else rm -rf "$ws"; fi
}
trap cleanup EXIT
(
  cd "$ws"
  git init -q .
  printf 'fn main() {}\n' > main.rs
  git add main.rs
  git -c user.name=bench -c user.email=bench@localhost -c commit.gpgsign=false \
    commit -q -m scratch
)

"$python" "$BENCH/sandbox/spawn_bench.py" --lode "$LODE" --workspace "$ws" \
  --pin "$pin" --json "$OUT/sandbox-startup.json" ${pass[@]+"${pass[@]}"}

[[ $phases -gt 0 ]] || exit 0
events=raw_syscalls:sys_enter,raw_syscalls:sys_exit,sched:sched_process_exec
trace="$ws/.phases"
mkdir -p "$trace"
if ! command -v perf >/dev/null \
   || ! perf record -q -e "$events" -o "$trace/probe.data" -- /bin/true >/dev/null 2>&1; then
  echo "phase breakdown skipped: perf cannot record system-call tracepoints here" >&2
  exit 0
fi
echo
rm -f "$OUT/sandbox-phases.json"
for mode in workspace-write read-only; do
  perf record -q -e "$events" -o "$trace/$mode.data" -- \
    "$python" "$BENCH/sandbox/phases.py" spawn --lode "$LODE" --workspace "$ws" \
      --mode "$mode" --runs "$phases" --pin "$pin" --pid-file "$trace/$mode.pid"
  perf script -i "$trace/$mode.data" 2>/dev/null \
    | "$python" "$BENCH/sandbox/phases.py" report --pid-file "$trace/$mode.pid" --mode "$mode" \
        --json "$OUT/sandbox-phases.json"
done
echo "wrote $OUT/sandbox-phases.json"
