#!/usr/bin/env bash
# Exact against approximate vector search on a built index's embedded store, in one
# invocation: per-query latency (median, p95; resident and fresh store) and recall@50 of the
# approximate search against exact. See server/index/benches/vector_search.rs.
#
#   bench/vectors.sh [PATH] [--queries N] [--k K] [--runs N] [--sweep R1,R2,...] [--stored]
#
# PATH (default bench/corpus/rust-vendor) must hold an index (`lode index PATH`; with
# --index, this script runs it with $LODE_BIN or target/release/lode). Query texts come from
# bench/search-queries.txt and the retrieval suites' query files, which are generated here
# when missing (`bench/retrieval.py --queries-only`, no lode needed). Writes
# bench/out/vectors.json. bench/vectors_e2e.py times whole `lode search` processes the same way.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
target="$CORPUS/rust-vendor"
index=0
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --index) index=1; shift ;;
    --queries|--k|--runs|--sweep) args+=("$1" "$2"); shift 2 ;;
    --stored) args+=("$1"); shift ;;
    -*) die "unknown option $1" ;;
    *) target="$1"; shift ;;
  esac
done
require_corpus "$target"
target="$(cd "$target" && pwd)"
if [[ $index == 1 ]]; then
  require_lode
  "$LODE" index "$target"
fi
store="$target/.lode/index/vectors"
[[ -f "$store/manifest.json" ]] || die "no vector store at $store: run \`lode index $target\` (or pass --index)"
for suite in small large; do
  file="$OUT/retrieval-queries.jsonl"
  [[ $suite == large ]] && file="$OUT/retrieval-large-queries.jsonl"
  [[ -f "$file" ]] || python3 "$BENCH/retrieval.py" --suite "$suite" --queries-only >/dev/null
done
cd "$ROOT"
exec cargo bench -p lode-index --bench vector_search -- "${args[@]}" --json "$OUT/vectors.json" "$store"
