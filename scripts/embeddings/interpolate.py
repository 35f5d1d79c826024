#!/usr/bin/env python3
"""Blends two static tables of the same vocabulary row by row: (1 - alpha) x FROM + alpha x TO.

Training on code pulls plain-English sentences apart a little with every epoch (memory and
skill search compare English with English). Averaging the trained table with the one it was
trained from keeps most of what training gained on code and most of what the start knew about
English (weight-space interpolation, "WiSE-FT"). The built-in table is the five-language table
blended half-way with the Rust stage it started from (README.md, "Five languages").

    python3 scripts/embeddings/interpolate.py --from RUST.bin --to FIVE.bin --alpha 0.5 \
        --out assets/embeddings/static-minilm.bin

Both tables must share the vocabulary and the extra words; the output has the same format,
size and dimension (weights folded into the rows, flags 4, int8 per row). numpy only.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from statictable import Table, quantise, write_table  # noqa: E402


def blend(start: Table, trained: Table, alpha: float) -> np.ndarray:
    """The effective rows (weight x row) of the blend, in float64."""
    if start.mat.shape != trained.mat.shape or start.extra != trained.extra or start.n_base != trained.n_base:
        raise SystemExit("the two tables do not share a vocabulary")
    return (1.0 - alpha) * start.mat.astype(np.float64) + alpha * trained.mat.astype(np.float64)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from", dest="start", required=True, type=Path, help="the table training started from")
    ap.add_argument("--to", dest="trained", required=True, type=Path, help="the trained table")
    ap.add_argument("--alpha", type=float, default=0.5, help="share of the trained table (0..1)")
    ap.add_argument("--out", required=True, type=Path)
    a = ap.parse_args()
    if not 0.0 <= a.alpha <= 1.0:
        raise SystemExit("--alpha must be between 0 and 1")
    start, trained = Table(a.start), Table(a.trained)
    q, scales, weights = quantise(blend(start, trained, a.alpha))
    extra = sorted(start.extra, key=start.extra.get)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    write_table(a.out, q, scales, weights, start.n_base, extra, flags=4)
    vocab = Path(str(a.trained).removesuffix(".bin") + ".vocab.txt")
    out_vocab = Path(str(a.out).removesuffix(".bin") + ".vocab.txt")
    if vocab.exists() and vocab.resolve() != out_vocab.resolve():
        shutil.copyfile(vocab, out_vocab)
    print(f"wrote {a.out} ({a.out.stat().st_size / 1e6:.2f} MB, alpha {a.alpha})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
