#!/usr/bin/env bash
# The Qdrant vector store against the embedded one on the same corpus vectors, in one
# invocation: upsert throughput, Qdrant's indexing time, query latency (median, p95) and
# recall@10 of both against an exact f32 search, as a table with ratios.
# See server/qdrant/examples/qdrant_bench.rs.
#
#   bench/qdrant.sh [PATH] [--points N] [--queries N] [--k K] [--runs N] [--release]
#
# PATH (default bench/corpus/rust-vendor) must hold an index with vectors (`lode index PATH`);
# its embedded store's vectors are the data (--points N: an even sample of N rows, default
# 100000; 0 = all). The real Qdrant server is $LODE_QDRANT_BIN or ../shared/bin/qdrant.
# The benchmark binary: target/release/examples/qdrant_bench when it exists (or with
# --release, which builds it), else a dev-profile build with lode-index and lode-qdrant
# optimised; the table says which. Writes bench/out/qdrant.json.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
target="$CORPUS/rust-vendor"
release=0
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --release) release=1; shift ;;
    --points|--queries|--k|--runs) args+=("$1" "$2"); shift 2 ;;
    -*) die "unknown option $1" ;;
    *) target="$1"; shift ;;
  esac
done
require_corpus "$target"
target="$(cd "$target" && pwd)"
store="$target/.lode/index/vectors"
[[ -f "$store/manifest.json" ]] || die "no vector store at $store: run \`lode index $target\`"
for suite in small large; do
  file="$OUT/retrieval-queries.jsonl"
  [[ $suite == large ]] && file="$OUT/retrieval-large-queries.jsonl"
  [[ -f "$file" ]] || python3 "$BENCH/retrieval.py" --suite "$suite" --queries-only >/dev/null
done
cd "$ROOT"
bin="$ROOT/target/release/examples/qdrant_bench"
build="release"
if [[ $release == 1 ]]; then
  cargo build --release -q -p lode-qdrant --example qdrant_bench
elif [[ ! -x "$bin" ]]; then
  # No release build: the dev profile, with the two crates whose code is measured (the
  # embedded store in lode-index, the Qdrant store and this benchmark's exact search in
  # lode-qdrant) optimised; their dependencies (qdrant-client, tonic, prost) are not.
  build="debug (dev profile; lode-index and lode-qdrant at opt-level 3, dependencies unoptimised)"
  echo "qdrant.sh: no release build of the benchmark (target/release/examples/qdrant_bench); using $build" >&2
  cargo build -q -p lode-qdrant --example qdrant_bench \
    --config 'profile.dev.package.lode-index.opt-level=3' \
    --config 'profile.dev.package.lode-qdrant.opt-level=3'
  bin="$ROOT/target/debug/examples/qdrant_bench"
fi
exec "$bin" "${args[@]}" --build "$build" --json "$OUT/qdrant.json" "$store"
