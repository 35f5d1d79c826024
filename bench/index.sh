#!/usr/bin/env bash
# Index throughput: cold `lode index` (wall, MB/s of source, peak RSS), no-change
# re-index (target <= 1% of cold), one-file-changed re-index, and the
# `lode parse-only` reference (target: cold <= 2.0x parse-only in CPU seconds).
#
#   bench/index.sh [PATH] [--runs N] [--reindex-runs N] [--no-parse-only] [--no-touch] [--keep-index]
#
# PATH defaults to bench/corpus/rust-vendor. Results: bench/out/index.json.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
case "${1:-}" in -h|--help) exec python3 "$BENCH/lib/index_bench.py" --help ;; esac
require_lode
ensure_tool rg ripgrep          # file listing with the same ignore rules as lode
ensure_tool /usr/bin/time time  # peak RSS
exec python3 "$BENCH/lib/index_bench.py" "$@"
