#!/usr/bin/env bash
# Installs the language servers the LSP-client tests drive, into target/test-tools (idempotent).
#
# pyright (npm) gives `pyright-langserver --stdio` and `pyright --outputjson`. Tests look for it at
# target/test-tools/node_modules/.bin (or $LODE_TEST_TOOLS) and skip, saying so, when it is missing.
# Needs Node 18+ and npm; installs nothing outside target/.
set -euo pipefail
cd "$(dirname "$0")/.."

tools="${LODE_TEST_TOOLS:-$PWD/target/test-tools}"
pyright_version="1.1.414"

if ! command -v npm >/dev/null 2>&1; then
    echo "install-test-tools: npm is not installed; the pyright tests will be skipped" >&2
    exit 0
fi

mkdir -p "$tools"
installed="$(node -e "try { console.log(require('$tools/node_modules/pyright/package.json').version) } catch { }" 2>/dev/null || true)"
if [ "$installed" = "$pyright_version" ]; then
    echo "install-test-tools: pyright $pyright_version already in $tools"
    exit 0
fi

echo "install-test-tools: installing pyright $pyright_version into $tools"
npm install --prefix "$tools" --no-audit --no-fund --no-save --loglevel=error "pyright@$pyright_version" >&2
"$tools/node_modules/.bin/pyright" --version
