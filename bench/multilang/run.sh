#!/usr/bin/env bash
# Builds the per-language retrieval sets and evaluates `lode search` on them (issue 27):
#   bench/multilang/run.sh [eval.py options...]     e.g. --lang python --mode hybrid
# The grammars come from PyPI into target/test-tools/bench-venv (as scripts/install-test-tools.sh
# makes it); the packages from PyPI, npm and Debian (cached in bench/corpus/multilang). Issue 43's
# languages (java, c, cpp, csharp, ruby, php) read their docs through lode-syntax's doc_spans
# example, which lode_docs.py builds with cargo when target/ has none.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv="${LODE_TEST_TOOLS:-$PWD/target/test-tools}/bench-venv"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet -r bench/multilang/requirements.txt
fi
"$venv/bin/python" bench/multilang/build.py
python3 bench/multilang/eval.py "$@"
