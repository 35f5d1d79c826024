#!/usr/bin/env bash
# Repo map: `lode map` vs aider's repo map (aider.repomap.RepoMap, no LLM) on the same
# repository and token budget. Cold = `lode map` with no .lode/ (it indexes first) vs aider with its
# .aider.tags.cache.v* removed, each a new process. Target: lode >= 10x faster cold.
# Writes bench/out/map.json and the side-by-side bench/out/map-compare.md.
#
#   bench/map.sh [REPO] [--tokens N] [--focus FILE]... [--mention IDENT]... [--runs N]
#
# REPO defaults to bench/corpus/rust-vendor/tokio. aider is installed on first use into
# bench/out/aider-venv (pip, PyPI; AIDER_VERSION overrides the pinned version).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
case "${1:-}" in -h|--help) exec python3 "$BENCH/lib/map_bench.py" --help ;; esac
require_lode
ensure_tool rg ripgrep
ensure_tool /usr/bin/time time
AIDER_VERSION="${AIDER_VERSION:-0.86.2}"
VENV="$OUT/aider-venv"
if ! "$VENV/bin/python" -c 'import aider.repomap' >/dev/null 2>&1; then
  echo "installing aider-chat==$AIDER_VERSION into $VENV ..." >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip >&2
  "$VENV/bin/pip" install -q "aider-chat==$AIDER_VERSION" >&2 || die "pip install aider-chat failed"
fi
export AIDER_PY="$VENV/bin/python"
exec python3 "$BENCH/lib/map_bench.py" "$@"
