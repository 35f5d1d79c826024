# Shared helpers for the bench/*.sh scripts. Source it; do not run it.
# Sets: BENCH ROOT OUT CORPUS LODE
BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROOT="$(cd "$BENCH/.." && pwd)"
OUT="$BENCH/out"
CORPUS="${LODE_BENCH_CORPUS:-$BENCH/corpus}"
# LODE_BIN overrides the binary under test (e.g. a debug build or an older release).
LODE="${LODE_BIN:-$ROOT/target/release/lode}"
export BENCH ROOT OUT CORPUS LODE
mkdir -p "$OUT"

die() { echo "$(basename "$0"): $*" >&2; exit 1; }

require_lode() {
  [[ -x "$LODE" ]] || die "lode binary not found at $LODE
  build it first:  (cd $ROOT && cargo build --release -p lode)
  or point LODE_BIN at a lode binary."
}

require_corpus() { # require_corpus DIR
  [[ -d "$1" ]] || die "corpus directory $1 does not exist; run bench/corpus.sh first"
}

# ensure_tool CMD APT_PACKAGE: install a Debian package when CMD is missing (root only).
ensure_tool() {
  command -v "$1" >/dev/null 2>&1 && return 0
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    echo "installing $2 (apt) for '$1' ..." >&2
    { apt-get install -y -qq "$2" || { apt-get update -qq && apt-get install -y -qq "$2"; }; } >/dev/null 2>&1 \
      || die "could not install $2 with apt-get"
  fi
  command -v "$1" >/dev/null 2>&1 || die "'$1' is required: apt-get install $2"
}
