#!/usr/bin/env bash
# Runs every check and test of the repository. This is the README's test command and what CI runs.
# Everything the tests need comes from the registries; nothing is assumed to be installed
# beyond the Rust toolchain (cargo, rustfmt, clippy).
set -euo pipefail
cd "$(dirname "$0")/.."

# Each section's wall time, printed at the end: where CI's minutes go.
timings=()
current=""
section_start=$SECONDS
section() {
    [ -n "$current" ] && timings+=("$(printf '%5ds  %s' $((SECONDS - section_start)) "$current")")
    current="$1"
    section_start=$SECONDS
    if [ -n "$1" ]; then echo "== $1"; fi
}
print_timings() {
    section ""
    echo "== wall time per section (total ${SECONDS}s)"
    printf '%s\n' "${timings[@]}"
}
trap print_timings EXIT

section "cargo fmt --check"
cargo fmt --all -- --check

section "test tools (pyright, Neovim, acpx; cached in target/test-tools)"
./scripts/install-test-tools.sh

section "bench builders (bench/multilang: per-language retrieval sets, real tree-sitter grammars; the offline fusion rules; the table trainer's gradients)"
target/test-tools/bench-venv/bin/python bench/multilang/test_build.py
target/test-tools/bench-venv/bin/python bench/multilang/test_fusion.py
target/test-tools/bench-venv/bin/python scripts/embeddings/test_train.py

# Clippy lints the workspace's crates while they compile for the tests: clippy-driver as
# cargo's workspace wrapper is what `cargo clippy` runs, with the same -D warnings, but here it
# also generates code, so the tree is compiled once instead of once to check and once to test
# (a separate `cargo clippy --all-targets` checks every dependency a second time). Every target
# is built (--all-targets: libraries, binaries, tests, benches, examples), as clippy would
# check them. The wrapper is cargo configuration, not an exported variable, so the `cargo`
# that some tests run on fixture crates does not lint them; the test run passes the same
# configuration, so nothing is rebuilt.
clippy_while_building=(--config "build.rustc-workspace-wrapper=\"$(rustc --print sysroot)/bin/clippy-driver\"")
clippy_args="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"

section "build and clippy (every target, -D warnings; target/debug/lode for the VS Code extension's chat tests)"
CLIPPY_ARGS="$clippy_args" cargo "${clippy_while_building[@]}" test --workspace --all-targets --locked --no-run

section "VS Code extension (editors/vscode: npm ci, tsc, plain-node tests, vsce package)"
# Fails when npm is missing: the extension's TypeScript must compile wherever the tests run.
(
    cd editors/vscode
    command -v npm >/dev/null || { echo "npm is missing (scripts/install-test-tools.sh installs it)" >&2; exit 1; }
    npm ci --no-audit --no-fund --loglevel=error
    npm test
    npm run package
)

section "cargo test"
log="$(mktemp)"
trap 'rm -f "$log"; print_timings' EXIT
set +e
CLIPPY_ARGS="$clippy_args" cargo "${clippy_while_building[@]}" test --workspace --locked 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# One closing line with the totals over every test binary.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
