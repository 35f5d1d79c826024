#!/usr/bin/env bash
# Build the benchmark corpus reproducibly.
#
#   bench/corpus.sh [--no-mixed] [--force]
#
# 1. bench/corpus/rust-vendor  `cargo vendor` of bench/corpus-spec (a dummy package that
#                              depends on ~50 well-known crates; versions pinned by the
#                              committed bench/corpus-spec/Cargo.lock).
# 2. bench/corpus/mixed        (optional) a small JS / TS / Python / Go tree: pinned npm
#                              tarballs (`npm pack`), pinned PyPI sdists (`pip download`)
#                              and Debian golang-*-dev source packages, unpacked.
#
# The script is idempotent: a part that already exists and matches its pins is kept
# (--force rebuilds it). At the end it prints sizes and file counts and writes them to
# bench/out/corpus.json.
#
# Env: LODE_BENCH_CORPUS overrides the corpus directory (default bench/corpus).
set -euo pipefail

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CORPUS="${LODE_BENCH_CORPUS:-$BENCH/corpus}"
OUT="$BENCH/out"
SPEC="$BENCH/corpus-spec"
MIXED=1
FORCE=0
for a in "$@"; do
  case "$a" in
    --no-mixed) MIXED=0 ;;
    --force) FORCE=1 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "corpus.sh: unknown argument: $a" >&2; exit 2 ;;
  esac
done

need() { command -v "$1" >/dev/null 2>&1 || { echo "corpus.sh: '$1' is required but not installed${2:+ ($2)}" >&2; exit 1; }; }
need cargo "install Rust (rustup)"
need python3
mkdir -p "$CORPUS" "$OUT"

# Pinned versions of the optional mixed tree. Change them only together with the README.
NPM_PKGS=(express@4.21.2 lodash@4.17.21 axios@1.7.9 zod@3.24.1 vue@3.5.13 react-dom@18.3.1)
PYPI_PKGS=(requests==2.32.3 flask==3.1.0 click==8.1.8 rich==13.9.4 django==5.1.4)
DEB_GO_PKGS=(golang-github-spf13-cobra-dev golang-github-gorilla-mux-dev golang-github-stretchr-testify-dev)

# ---------------------------------------------------------------- rust-vendor
lock_hash() { sha256sum "$SPEC/Cargo.lock" "$SPEC/Cargo.toml" | sha256sum | cut -c1-16; }
RV="$CORPUS/rust-vendor"
STAMP="$RV/.lode-bench-stamp"
want="$(lock_hash)"
if [[ $FORCE == 0 && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
  echo "rust-vendor: up to date ($RV)"
else
  echo "rust-vendor: cargo vendor (pinned by corpus-spec/Cargo.lock) -> $RV"
  rm -rf "$RV.tmp"
  # --locked: fail instead of silently re-resolving if Cargo.lock is stale.
  cargo vendor --locked --manifest-path "$SPEC/Cargo.toml" "$RV.tmp" >/dev/null
  rm -rf "$RV"
  mv "$RV.tmp" "$RV"
  echo "$want" > "$STAMP"
fi

# ---------------------------------------------------------------- mixed
if [[ $MIXED == 1 ]]; then
  MX="$CORPUS/mixed"
  MSTAMP="$MX/.lode-bench-stamp"
  mwant="$(printf '%s\n' "${NPM_PKGS[@]}" "${PYPI_PKGS[@]}" "${DEB_GO_PKGS[@]}" | sha256sum | cut -c1-16)"
  if [[ $FORCE == 0 && -f "$MSTAMP" && "$(cat "$MSTAMP")" == "$mwant" ]]; then
    echo "mixed: up to date ($MX)"
  else
    echo "mixed: npm / PyPI / Debian Go sources -> $MX"
    rm -rf "$MX.tmp"; mkdir -p "$MX.tmp"/{js,python,go}
    TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
    manifest="$MX.tmp/MANIFEST.txt"; : > "$manifest"
    if command -v npm >/dev/null; then
      for p in "${NPM_PKGS[@]}"; do
        name="${p%@*}"
        if tgz="$(cd "$TMP" && npm pack --silent "$p" 2>/dev/null | tail -1)" && [[ -f "$TMP/$tgz" ]]; then
          mkdir -p "$MX.tmp/js/$name"
          tar -xzf "$TMP/$tgz" -C "$MX.tmp/js/$name" --strip-components=1
          echo "npm $p" >> "$manifest"
        else
          echo "  warning: npm pack $p failed; skipped" >&2
        fi
      done
    else
      echo "  warning: npm not installed; JS part skipped" >&2
    fi
    for p in "${PYPI_PKGS[@]}"; do
      name="${p%%==*}"
      d="$TMP/pypi-$name"; mkdir -p "$d"
      # sdist first (it has tests and docs like a real checkout; pip fetches the build
      # backend from PyPI to read its metadata); a pure-Python wheel as fallback.
      if python3 -m pip download -q --no-deps --no-binary :all: -d "$d" "$p" >/dev/null 2>&1 \
         || python3 -m pip download -q --no-deps --only-binary :all: -d "$d" "$p" >/dev/null 2>&1; then
        f="$(ls "$d" | head -1)"
        mkdir -p "$MX.tmp/python/$name"
        case "$f" in
          *.tar.gz) tar -xzf "$d/$f" -C "$MX.tmp/python/$name" --strip-components=1 ;;
          *.whl|*.zip) python3 -c 'import sys,zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$d/$f" "$MX.tmp/python/$name" ;;
        esac
        echo "pypi $p $f" >> "$manifest"
      else
        echo "  warning: pip download $p failed; skipped" >&2
      fi
    done
    if command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null; then
      for p in "${DEB_GO_PKGS[@]}"; do
        if (cd "$TMP" && apt-get download -qq "$p" >/dev/null 2>&1); then
          deb="$(ls "$TMP"/"${p}"_*.deb | head -1)"
          x="$TMP/x-$p"; dpkg-deb -x "$deb" "$x"
          if [[ -d "$x/usr/share/gocode/src" ]]; then
            cp -a "$x/usr/share/gocode/src/." "$MX.tmp/go/"
            echo "deb $(basename "$deb")" >> "$manifest"
          fi
        else
          echo "  warning: apt-get download $p failed (run apt-get update?); skipped" >&2
        fi
      done
    fi
    rm -rf "$MX"; mv "$MX.tmp" "$MX"
    echo "$mwant" > "$MSTAMP"
  fi
fi

# ---------------------------------------------------------------- report
python3 - "$CORPUS" "$OUT/corpus.json" <<'PY'
import json, os, sys
from collections import Counter
root, out = sys.argv[1], sys.argv[2]
# extensions lode indexes (DESIGN.md: Rust, Python, JavaScript, TypeScript, Go at least)
SRC = {".rs": "rust", ".py": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
       ".jsx": "javascript", ".ts": "typescript", ".tsx": "typescript", ".mts": "typescript",
       ".cts": "typescript", ".go": "go"}
report = {}
for part in sorted(os.listdir(root)):
    p = os.path.join(root, part)
    if not os.path.isdir(p) or part.startswith("."):
        continue
    files = total = src_files = src_bytes = 0
    by_lang = Counter(); by_lang_bytes = Counter()
    for d, dirs, fs in os.walk(p):
        dirs[:] = [x for x in dirs if x != ".lode"]
        for f in fs:
            try:
                sz = os.lstat(os.path.join(d, f)).st_size
            except OSError:
                continue
            files += 1; total += sz
            lang = SRC.get(os.path.splitext(f)[1].lower())
            if lang:
                src_files += 1; src_bytes += sz
                by_lang[lang] += 1; by_lang_bytes[lang] += sz
    report[part] = {
        "files": files, "bytes": total, "mb": round(total / 2**20, 1),
        "source_files": src_files, "source_mb": round(src_bytes / 2**20, 1),
        "by_language": {k: {"files": by_lang[k], "mb": round(by_lang_bytes[k] / 2**20, 1)} for k in sorted(by_lang)},
    }
    if part == "rust-vendor":
        report[part]["crates"] = sum(1 for x in os.listdir(p) if os.path.isdir(os.path.join(p, x)))
os.makedirs(os.path.dirname(out), exist_ok=True)
with open(out, "w") as fh:
    json.dump(report, fh, indent=2)
print()
print(f"{'part':<14}{'files':>9}{'MB':>9}{'src files':>11}{'src MB':>9}  languages")
for part, r in report.items():
    langs = ", ".join(f"{k} {v['files']}/{v['mb']}MB" for k, v in r["by_language"].items())
    print(f"{part:<14}{r['files']:>9}{r['mb']:>9}{r['source_files']:>11}{r['source_mb']:>9}  {langs}")
if "rust-vendor" in report:
    print(f"\nrust-vendor: {report['rust-vendor']['crates']} crate directories")
print(f"written {out}")
PY
echo "du -sh:"; du -sh "$CORPUS"/*/ 2>/dev/null
