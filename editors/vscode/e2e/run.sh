#!/usr/bin/env bash
# The extension in a real VS Code: runs e2e/chat.e2e.test.mjs (node's test runner, with the
# Node 24 of the VS Code tools), which starts code-server with the packaged extension only,
# drives it in Debian's Chromium through playwright-core, and talks to the real `lode acp`
# (target/debug/lode) and scripted models. Screenshots and code-server's log: target/vscode-e2e/.
#   editors/vscode/e2e/run.sh          (scripts/test.sh runs it after the build)
# Needs: scripts/install-test-tools.sh (the tools in target/test-tools/vscode, or
# $LODE_VSCODE_TOOLS), `cargo build -p lode`, and `npm run package` in editors/vscode.
set -euo pipefail
cd "$(dirname "$0")/../../.."
tools="${LODE_VSCODE_TOOLS:-$PWD/target/test-tools/vscode}"
node="$tools/bin/node"
if [ ! -x "$node" ]; then
    if [ -n "${CI:-}" ]; then
        echo "run.sh: $node is missing: run scripts/install-test-tools.sh" >&2
        exit 1
    fi
    # The test itself says what is missing and skips.
    node="$(command -v node)"
fi
exec "$node" --test --test-reporter=spec editors/vscode/e2e/chat.e2e.test.mjs
