#!/usr/bin/env bash
# Search latency: `lode search` vs `rg -n -i` for the same queries over the same tree,
# timed with hyperfine (median of N runs, output piped). Target: rg/lode >= 20x on the
# large corpus.
#
#   bench/search.sh [PATH] [--queries FILE] [--runs N] [--rg-mode first|alt|phrase]
#                   [--rg-all-files] [--modes lexical,default] [--freshness default,watched,daemon,no-refresh]
#                   [--symbols] [--reindex]
#
# PATH defaults to bench/corpus/rust-vendor (indexed first if PATH/.lode/index is missing).
# Results: bench/out/search.json.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
case "${1:-}" in -h|--help) exec python3 "$BENCH/lib/search_bench.py" --help ;; esac
require_lode
ensure_tool rg ripgrep
ensure_tool hyperfine hyperfine
ensure_tool /usr/bin/time time
exec python3 "$BENCH/lib/search_bench.py" "$@"
