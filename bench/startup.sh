#!/usr/bin/env bash
# Start-up cost of the `lode` binary and of a query a `lode daemon` serves, against references
# timed in the same invocation: /bin/true (exec alone) and a Rust "hello world" built here (a
# small Rust binary's runtime start). hyperfine, median of N runs, output discarded.
#
#   bench/startup.sh [PATH] [--runs N]
#
# PATH (default bench/corpus/rust-vendor, indexed) is where the served queries run; a daemon is
# started for it and stopped at the end. `lode watch --version` is `lode --version` with
# transparent huge pages left on (a long-running command's start; see server/cli/src/startup.rs).
# Results: bench/out/startup.json.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
require_lode
ensure_tool hyperfine hyperfine
ensure_tool rustc "rustc (rustup)"
TREE="$CORPUS/rust-vendor"
RUNS=50
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) TREE="$1"; shift ;;
  esac
done
[[ -d "$TREE/.lode/index" ]] || die "$TREE is not indexed: lode index $TREE"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"; (cd "$TREE" && LODE_DAEMON=never "$LODE" daemon stop >/dev/null 2>&1 || true)' EXIT
printf 'fn main() { println!("lode 0.1.0"); }\n' > "$WORK/hello.rs"
rustc -O -C debuginfo=0 "$WORK/hello.rs" -o "$WORK/hello"
cd "$TREE"
export LODE_DAEMON=never
"$LODE" daemon start
"$LODE" search --mode lexical -v parse_config >/dev/null
hyperfine -N --runs "$RUNS" --warmup 5 --export-json "$OUT/startup.json" \
  -n true /bin/true \
  -n rust-hello "$WORK/hello" \
  -n "lode --version" "$LODE --version" \
  -n "lode watch --version (huge pages on)" "$LODE watch --version" \
  -n "served lexical, --no-refresh" "$LODE search --mode lexical --json --no-refresh parse_config" \
  -n "served lexical" "$LODE search --mode lexical --json parse_config" \
  -n "served symbols" "$LODE symbols --json spawn_blocking" \
  -n "served hybrid" "$LODE search --json 'retry with exponential backoff'"
python3 - "$OUT/startup.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
by = {r["command"]: r["median"] * 1000 for r in results}
print(f"\n{'command':40} {'median ms':>10} {'minus true':>11} {'minus hello':>12}")
for name, ms in by.items():
    print(f"{name:40} {ms:10.2f} {ms - by['true']:11.2f} {ms - by['rust-hello']:12.2f}")
PY
