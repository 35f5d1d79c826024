#!/usr/bin/env bash
# Cold `lode index` of a mixed Java + C/C++ + Ruby corpus (issue 43) against `lode parse-only`
# in CPU seconds (target: <= 2.0x), with bench/index.sh's measurements. The corpus is built from
# the Debian packages pinned in bench/multilang-corpus.txt (about 200 MB downloaded, ~300 MB
# of source) into bench/corpus/multilang-mixed/.
#
#   bench/index-multilang.sh [--keep-corpus] [index.sh options: --runs N --parse-runs N ...]
#
# The corpus and its downloads are removed afterwards unless --keep-corpus is given.
# Results: bench/out/index-multilang.json.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
keep=0
args=()
for arg in "$@"; do
  case "$arg" in
    --keep-corpus) keep=1 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) args+=("$arg") ;;
  esac
done
require_lode
ensure_tool rg ripgrep
ensure_tool /usr/bin/time time
ensure_tool dpkg-deb dpkg
python3 "$BENCH/lib/multilang_corpus.py"
status=0
python3 "$BENCH/lib/index_bench.py" "$CORPUS/multilang-mixed" --out "$OUT/index-multilang.json" "${args[@]}" || status=$?
if [[ $keep == 0 ]]; then
  python3 "$BENCH/lib/multilang_corpus.py" --remove
fi
exit $status
