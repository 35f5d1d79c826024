#!/usr/bin/env bash
# Rebuild the built-in static embedding table from scratch, in one command:
#
#   scripts/embeddings/build.sh
#
# 1. a venv (target/embed-venv, or $LODE_EMBED_VENV) with the pinned requirements.txt;
# 2. bench/corpus.sh --no-mixed: the Rust crates pinned by bench/corpus-spec/Cargo.lock
#    (frequency corpus of the distillation, training pairs of train.py);
# 3. a release lode and `lode --embedder none index bench/corpus/rust-vendor` (distill.py
#    reads the chunk texts from its catalog);
# 4. distill.py -> bench/out/embeddings/distilled.bin (MiniLM -> static table);
# 5. `cargo vendor` of scripts/embeddings/train-corpus (a second set of pinned crates, for more
#    training pairs) -> bench/corpus/train-vendor;
# 6. train.py -> bench/out/embeddings/rust.bin (contrastive training on doc-sentence/function
#    pairs of crates outside both retrieval benchmarks and bench/multilang's Rust sets);
# 7. train.py --languages (all five) from that table -> bench/out/embeddings/multi/: pairs of
#    the packages of bench/multilang/packages.txt's `table` split too (fetched from PyPI, npm
#    and Debian by bench/multilang/build.py's own fetcher);
# 8. interpolate.py: the Rust table and the five-language one blended half-way ->
#    bench/out/embeddings/blend.bin (README.md, "Five languages": the blend keeps what the Rust
#    table knew about plain English);
# 9. train.py from the blend, 5 epochs, with the cosines between doc sentences and between
#    README sentences held to the blend's -> assets/embeddings/static-minilm.{bin,vocab.txt},
#    the built-in table (README.md, "More TypeScript, README prose held still").
# Slow steps cache their results under bench/out/embeddings/ (delete it to start over).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
VENV="${LODE_EMBED_VENV:-$ROOT/target/embed-venv}"
[[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q -r scripts/embeddings/requirements.txt -r bench/multilang/requirements.txt
bench/corpus.sh --no-mixed
cargo build --release -p lode
[[ -f bench/corpus/rust-vendor/.lode/index/catalog.sqlite ]] \
  || target/release/lode --embedder none index bench/corpus/rust-vendor
"$VENV/bin/python" scripts/embeddings/distill.py --out bench/out/embeddings/distilled.bin
TRAIN_VENDOR=bench/corpus/train-vendor
if [[ ! -d $TRAIN_VENDOR ]]; then
  rm -rf "$TRAIN_VENDOR.tmp"
  cargo vendor --locked --manifest-path scripts/embeddings/train-corpus/Cargo.toml "$TRAIN_VENDOR.tmp" >/dev/null
  mv "$TRAIN_VENDOR.tmp" "$TRAIN_VENDOR"
fi
"$VENV/bin/python" scripts/embeddings/train.py --base bench/out/embeddings/distilled.bin \
  --out bench/out/embeddings/rust.bin
"$VENV/bin/python" scripts/embeddings/train.py --base bench/out/embeddings/rust.bin \
  --out bench/out/embeddings/multi/static-minilm.bin \
  --languages rust,python,javascript,typescript,go --per-language 10000 --epochs 8 \
  --seed 7
"$VENV/bin/python" scripts/embeddings/interpolate.py --from bench/out/embeddings/rust.bin \
  --to bench/out/embeddings/multi/static-minilm.bin --alpha 0.5 \
  --out bench/out/embeddings/blend.bin
"$VENV/bin/python" scripts/embeddings/train.py --base bench/out/embeddings/blend.bin \
  --out assets/embeddings/static-minilm.bin --corpus bench/corpus/rust-vendor \
  --languages rust,python,javascript,typescript,go --per-language 10000 --epochs 5 \
  --keep-sentences 400 --keep-prose 64 --seed 7
