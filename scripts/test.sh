#!/usr/bin/env bash
# Runs every check and test of the repository. This is the README's test command and what CI runs.
# Everything the tests need comes from the registries; nothing is assumed to be installed
# beyond the Rust toolchain (cargo, rustfmt, clippy).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo test"
cargo test --workspace --locked
