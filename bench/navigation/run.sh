#!/usr/bin/env bash
# Type-resolved navigation against pyright's own answers (issue 26): see navigation.py.
# Uses $LODE_BIN, else target/release/lode or target/debug/lode, whichever has
# `lode lsp --navigation-timeout-ms` (release first).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec python3 "$here/navigation.py" "$@"
