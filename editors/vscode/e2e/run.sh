#!/usr/bin/env bash
# The @lode chat participant in a real VS Code: code-server and Chromium (installed by
# ../shared/tools/vscode/setup.sh, or $LODE_VSCODE_TOOLS), the packaged extension, the real
# `lode acp` (target/debug/lode) and a scripted model (`lode llm-script`, fixtures/llm/vscode_chat.json).
#   editors/vscode/e2e/run.sh [TOOLS_DIR]      (needs `cargo build -p lode` and `npm run package` first)
set -euo pipefail
cd "$(dirname "$0")/../../.."
repo=$PWD
shared_tools="${LODE_VSCODE_TOOLS:-$repo/../shared/tools/vscode}"
dir="${1:-$repo/target/test-tools/vscode}"
[ -x "$shared_tools/setup.sh" ] || { echo "run.sh: no $shared_tools/setup.sh (set LODE_VSCODE_TOOLS)" >&2; exit 1; }
"$shared_tools/setup.sh" "$dir" >&2
lode="$repo/target/debug/lode"
[ -x "$lode" ] && [ -x "$repo/target/debug/lode-full" ] || { echo "run.sh: build lode first (cargo build -p lode)" >&2; exit 1; }
vsix="$repo/editors/vscode/lode-0.1.0.vsix"
[ -f "$vsix" ] || { echo "run.sh: package the extension first (cd editors/vscode && npm run package)" >&2; exit 1; }

work="$(mktemp -d)"
out="$repo/target/vscode-e2e"
mkdir -p "$out"
cleanup() {
  [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null || true
  [ -n "${script_pid:-}" ] && kill "$script_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The scripted model.
"$lode" llm-script --script "$repo/fixtures/llm/vscode_chat.json" >"$work/script.out" 2>"$work/script.err" &
script_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$work/script.out" 2>/dev/null && break; sleep 0.1; done
base_url="$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$work/script.out" | head -1)"
[ -n "$base_url" ] || { echo "run.sh: lode llm-script did not start" >&2; cat "$work/script.err" >&2; exit 1; }
base_url="$base_url/v1"

# The workspace, its config naming the scripted model (applies without `lode trust` through
# $LODE_CONFIG, which code-server's extension host and so `lode acp` inherit).
ws="$work/ws"
mkdir -p "$ws/src" "$ws/.git" "$ws/.lode"
printf 'fn main() {\n    println!("hello");\n}\n' >"$ws/src/main.rs"
printf '[[llm.providers]]\nname = "scripted"\nkind = "openai"\nbase_url = "%s"\nmodel = "scripted-1"\ncontext_window = 32000\n' "$base_url" >"$ws/.lode/config.toml"
export LODE_CONFIG="$ws/.lode/config.toml"

export VSCODE_PROFILE="$work/profile"
mkdir -p "$VSCODE_PROFILE/User"
printf '{"workbench.startupEditor": "none", "lode.path": "%s", "lode.chat.extraArgs": ["--no-watch"]}\n' "$lode" >"$VSCODE_PROFILE/User/settings.json"
read -r url server_pid < <("$shared_tools/start.sh" "$dir" "$ws" "$vsix")
"$dir/venv/bin/python" "$repo/editors/vscode/e2e/chat_in_code_server.py" "$url" "$out"
