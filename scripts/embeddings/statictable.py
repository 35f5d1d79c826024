"""Static embedding table: file format, identifier splitting and text embedding.

Shared by scripts/embeddings/distill.py (writer) and bench/semantic/eval.py (reader).
The file format is documented in scripts/embeddings/README.md; keep the two in sync.
Needs numpy; `tokenizers` only when a .tokenizer.json sits next to the table.
"""
from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np

MAGIC = b"LODESEMB"
VERSION = 1
HEADER = struct.Struct("<8sIIIIII")  # magic, version, dims, rows, n_base, n_extra, flags

# ------------------------------------------------------------------ words
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*|[0-9]+")
# camelCase / PascalCase / ACRONYMWord / digits boundaries
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def split_words(text: str) -> list[str]:
    """Text or code -> lower-case words. Identifiers are split at `_`, camelCase
    humps, acronym ends (`HTTPServer` -> http server) and letter/digit boundaries.
    Punctuation is dropped; pure numbers are dropped."""
    out = []
    for tok in _WORD.findall(text):
        if tok.isdigit():
            continue
        for w in _CAMEL.findall(tok):
            if not w.isdigit():
                out.append(w.lower())
    return out


# ------------------------------------------------------------------ file format
def write_table(path: Path, q: np.ndarray, scales: np.ndarray, weights: np.ndarray,
                n_base: int, extra_words: list[str], flags: int = 0) -> None:
    rows, dims = q.shape
    assert q.dtype == np.int8 and rows == n_base + len(extra_words)
    with open(path, "wb") as f:
        f.write(HEADER.pack(MAGIC, VERSION, dims, rows, n_base, len(extra_words), flags))
        f.write(scales.astype("<f4").tobytes())
        f.write(weights.astype("<f4").tobytes())
        f.write(q.tobytes())
        for w in extra_words:
            b = w.encode("utf-8")
            f.write(struct.pack("<H", len(b)))
            f.write(b)


def quantise(rows: np.ndarray, live: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Effective rows (weight folded in) -> (int8 rows, scale per row, weight per row) for
    `write_table(..., flags=4)`: each row scaled so its largest value is 127. The weight is 1
    for a row in use and 0 for an unused one: `live` when given, else every non-zero row."""
    scales = np.abs(rows).max(1) / 127.0
    if live is None:
        live = scales > 0
    scales[scales == 0] = 1.0
    q = np.clip(np.rint(rows / scales[:, None]), -127, 127).astype(np.int8)
    return q, scales, np.where(live, 1.0, 0.0)


class WordPiece:
    """BERT's WordPiece on one lower-case word: greedy longest match first, continuation
    pieces prefixed with `##`; a word it cannot cover, or longer than 100 characters, is
    `[UNK]`. What lode's Rust reader does (server/embed/src/static_table.rs)."""

    def __init__(self, vocab_path: Path):
        tokens = Path(vocab_path).read_text(encoding="utf-8").split("\n")
        if tokens and tokens[-1] == "":
            tokens.pop()
        self.ids_of = {t: i for i, t in enumerate(tokens)}
        self.unk = self.ids_of["[UNK]"]

    def ids(self, word: str) -> list[int]:
        if len(word) > 100:
            return [self.unk]
        out, start = [], 0
        while start < len(word):
            end, found = len(word), None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.ids_of:
                    found = self.ids_of[piece]
                    break
                end -= 1
            if found is None:
                return [self.unk]
            out.append(found)
            start = end
        return out


class Table:
    def __init__(self, path: Path, tokenizer_path: Path | None = None):
        data = Path(path).read_bytes()
        magic, ver, dims, rows, n_base, n_extra, flags = HEADER.unpack_from(data, 0)
        assert magic == MAGIC and ver == VERSION, "not a lode static embedding table"
        off = HEADER.size
        self.scales = np.frombuffer(data, "<f4", rows, off); off += 4 * rows
        self.weights = np.frombuffer(data, "<f4", rows, off); off += 4 * rows
        q = np.frombuffer(data, np.int8, rows * dims, off).reshape(rows, dims); off += rows * dims
        extra = []
        for _ in range(n_extra):
            (n,) = struct.unpack_from("<H", data, off); off += 2
            extra.append(data[off:off + n].decode("utf-8")); off += n
        assert off == len(data), "trailing bytes"
        self.dims, self.n_base, self.size = dims, n_base, len(data)
        # dequantised rows with the token weight folded in
        self.mat = (q.astype(np.float32) * (self.scales * self.weights)[:, None]).astype(np.float32)
        self.extra = {w: n_base + i for i, w in enumerate(extra)}
        tp = tokenizer_path or Path(str(path).removesuffix(".bin") + ".tokenizer.json")
        vocab = Path(str(path).removesuffix(".bin") + ".vocab.txt")
        if tp.exists():
            from tokenizers import Tokenizer
            self.tok = Tokenizer.from_file(str(tp))
            self.tok.no_padding()
            self.tok.no_truncation()
            self.wordpiece = None
        else:
            # The shipped table has only its vocabulary next to it: the words reaching the
            # tokenizer are lower-case ASCII alphanumerics, so plain WordPiece over the
            # vocabulary gives the same ids as the full BERT tokenizer (README, step 2).
            self.tok = None
            self.wordpiece = WordPiece(vocab)
        self.memo: dict[str, list[int]] = dict((w, [r]) for w, r in self.extra.items())

    def word_ids(self, words: list[str]) -> list[int]:
        new = [w for w in set(words) if w not in self.memo]
        if new and self.wordpiece is not None:
            for w in new:
                self.memo[w] = self.wordpiece.ids(w)
        elif new:
            for w, enc in zip(new, self.tok.encode_batch(new, add_special_tokens=False)):
                self.memo[w] = enc.ids
        ids = []
        for w in words:
            ids.extend(self.memo[w])
        return ids

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dims), np.float32)
        for i, t in enumerate(texts):
            ids = self.word_ids(split_words(t))
            if ids:
                v = self.mat[ids].sum(0)
                n = np.linalg.norm(v)
                if n > 0:
                    out[i] = v / n
        return out
