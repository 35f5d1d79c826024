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

# The outside tools (downloads and unpacking), the bench builders' tests and the VS Code
# extension's npm install, compile and package need little CPU, so they run in the background
# while cargo compiles, which keeps both cores busy. Their output goes to a log, printed when
# they are waited for; the extension's tests, which drive target/debug/lode, run after the build.
logs="$(mktemp -d)"
background=""
# A failed build must not leave the background work running after the script.
trap '[ -z "$background" ] || kill "$background" 2>/dev/null || true; rm -rf "$logs"; print_timings' EXIT
section "start in the background: test tools, bench builders, VS Code extension build"
(
    set -euo pipefail
    started=$SECONDS
    echo "-- test tools (pyright, Neovim, acpx, VS Code; cached in target/test-tools)"
    ./scripts/install-test-tools.sh
    echo "-- bench builders (bench/multilang: per-language retrieval sets, real tree-sitter grammars; the offline fusion rules, heads and callable prior; the table trainer's gradients)"
    target/test-tools/bench-venv/bin/python bench/multilang/test_build.py
    target/test-tools/bench-venv/bin/python bench/multilang/test_fusion.py
    target/test-tools/bench-venv/bin/python bench/multilang/test_heads.py
    target/test-tools/bench-venv/bin/python bench/multilang/test_signals.py
    target/test-tools/bench-venv/bin/python bench/multilang/test_reference.py
    target/test-tools/bench-venv/bin/python scripts/embeddings/test_train.py
    echo "-- VS Code extension (editors/vscode: npm ci, tsc, vsce package)"
    cd editors/vscode
    # Fails when npm is missing: the extension's TypeScript must compile wherever the tests run.
    command -v npm >/dev/null || { echo "npm is missing (scripts/install-test-tools.sh installs it)" >&2; exit 1; }
    npm ci --no-audit --no-fund --loglevel=error
    npm run compile
    npm run package
    echo "-- background work took $((SECONDS - started))s"
) >"$logs/background.log" 2>&1 &
background=$!

# Clippy lints the workspace's crates while they compile for the tests: clippy-driver as
# cargo's workspace wrapper is what `cargo clippy` runs, with the same -D warnings, but here it
# also generates code, so the tree is compiled once instead of once to check and once to test
# (a separate `cargo clippy --all-targets` checks every dependency a second time). The wrapper
# is cargo configuration, not an exported variable, so the `cargo` that some tests run on
# fixture crates does not lint them; the test runs pass the same configuration, so nothing is
# rebuilt. The first build is exactly what `cargo test --workspace` runs (libraries, binaries,
# unit and integration tests, examples as the binaries some tests start); the second adds the
# benches, which clippy --all-targets would check too. (`--all-targets` would build the
# examples as tests, a second time, since `cargo test` builds them as binaries.)
clippy_while_building=(--config "build.rustc-workspace-wrapper=\"$(rustc --print sysroot)/bin/clippy-driver\"")
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
cargo_test() { cargo "${clippy_while_building[@]}" test --workspace --locked "$@"; }

section "build and clippy (every target, -D warnings; target/debug/lode for the VS Code extension's chat tests)"
cargo_test --no-run
cargo_test --benches --no-run

section "wait for the background work"
background_status=0
wait "$background" || background_status=$?
cat "$logs/background.log"
if [ "$background_status" != 0 ]; then
    echo "the background work (test tools, bench builders or the VS Code extension) failed" >&2
    exit "$background_status"
fi

section "VS Code extension tests (plain node, the chat participant against target/debug/lode)"
(cd editors/vscode && node --test out/test/)

# --- VS Code (editors/vscode/e2e) -------------------------------------------------------------
# The packaged extension in a real VS Code (code-server in Chromium, from target/test-tools/vscode),
# with no other extension: lode's models in the picker, @lode's answer, an edit behind the
# confirmation, the picked model. Alone, not beside the cargo lanes: a browser and an editor on
# a loaded machine would only make its waits longer (about 45 s on an idle machine).
section "VS Code extension in a real VS Code (code-server, Chromium; screenshots in target/vscode-e2e)"
editors/vscode/e2e/run.sh
# --- end of VS Code ---------------------------------------------------------------------------

# Two lanes: the end-to-end suite (about 200 s alone, mostly processes started by its tests)
# and every crate's own tests (about 130 s alone). One after the other, the machine idles while
# a lane's last slow tests finish; side by side, the crates' tests fill those gaps. The crates'
# lane prints as it runs; the end-to-end lane's output follows when it is done.
section "cargo test (two lanes: tests/e2e, and every crate's unit and integration tests)"
# The crates' integration-test targets, from cargo metadata (an assignment, so a failure here
# stops the script instead of silently running no integration tests).
integration_tests="$(cargo metadata --no-deps --format-version 1 --locked \
    | python3 -c 'import json, sys; print("\n".join(sorted({t["name"] for p in json.load(sys.stdin)["packages"] for t in p["targets"] if "test" in t["kind"]} - {"e2e"})))')"
if [ -z "$integration_tests" ]; then
    echo "cargo metadata lists no integration tests besides e2e: refusing to run a partial suite" >&2
    exit 1
fi
crate_targets=(--lib --bins)
for name in $integration_tests; do
    crate_targets+=(--test "$name")
done
set +e
cargo_test --test e2e >"$logs/e2e.log" 2>&1 &
e2e=$!
cargo_test "${crate_targets[@]}" 2>&1 | tee "$logs/crates.log"
crates_status=${PIPESTATUS[0]}
wait "$e2e"
e2e_status=$?
set -e
echo "== end-to-end lane (tests/e2e)"
cat "$logs/e2e.log"
# One closing line with the totals over every test binary.
cat "$logs/crates.log" "$logs/e2e.log" | awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }'
if [ "$crates_status" != 0 ] || [ "$e2e_status" != 0 ]; then
    echo "cargo test failed: crates' lane exit $crates_status, end-to-end lane exit $e2e_status" >&2
    exit 1
fi
