#!/usr/bin/env python3
"""Train a distilled static table further on code: contrastive (doc sentence, function) pairs.

    python3 scripts/embeddings/train.py --base bench/out/embeddings/distilled.bin \\
        --out assets/embeddings/static-minilm.bin [--epochs 4] [--lr 2e-3] [--seed 7]

1. Pairs: every documented function (`--fns all`, the default; `--fns pub`: only `pub fn`,
   as the benchmark) of the crates of bench/corpus/rust-vendor (pinned by
   bench/corpus-spec/Cargo.lock) and bench/corpus/train-vendor (pinned by
   scripts/embeddings/train-corpus/Cargo.lock), found by the benchmark's own extractor
   (bench/retrieval.py `extract`): the query side is the first sentence of the doc comment,
   the code side is the function with its doc comments removed, prefixed as lode prefixes a
   chunk: path, language and name, the file's first import lines.
   Held out: every crate of BOTH retrieval suites and every crate of the same family
   (same name before the first `-`/`_`, e.g. regex-automata excludes regex and regex-syntax,
   serde excludes serde_core), so the benchmarks stay unseen. A few crates (by a seeded
   hash of the name) are set aside as a validation split.
2. Model: exactly the table's embedding: text -> rows (statictable.split_words + WordPiece
   or whole-word row), sum of weighted rows, L2-normalised. The effective rows
   (weight x row) are the parameters, initialised from the base table; rows of special
   tokens stay 0.
3. Loss: symmetric InfoNCE with in-batch negatives (temperature --tau); batches are drawn
   from one crate at a time where possible, so negatives are the near misses a search in one
   repository has to separate. In the query -> code direction the logits are what lode's
   hybrid search ranks sentences by: cosine + --bm25-weight x BM25 / best BM25 (a rough
   BM25 over the batch, with the crate's statistics). The table then learns to separate
   what BM25 confuses instead of what BM25 already gets right. L2 pull towards the base
   rows (--l2) keeps untrained rows consistent with trained ones.
4. Output: the same file format (weights folded into the rows, weight = 1 for live rows),
   int8; plus the base table's .vocab.txt and .tokenizer.json next to --out.

Deterministic for a given base table, corpus and seed (numpy; the gradients are written out in
`TrainableTable` and `contrastive_step`, checked against finite differences by
test_train.py). Requires numpy; the other languages' pairs need the tree-sitter grammars of
bench/multilang/requirements.txt.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import shutil
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "lib"))
from statictable import Table, quantise, split_words, write_table  # noqa: E402
from retrieval import FN_AFTER_VISIBILITY, FN_RE, extract, suite_crates  # noqa: E402

CACHE = ROOT / "bench" / "out" / "embeddings"


def family(crate: str) -> str:
    return re.split(r"[-_]", crate)[0]


# Generated bindings: huge, nearly undocumented, slow to lex.
GENERATED = re.compile(r"-sys(-[0-9.]+)?$|^windows|^winapi|^linux-raw-sys|^libc$")


def multilang_kept_out_crates() -> set[str]:
    """The vendored crates bench/multilang evaluates on or fits fusion weights on."""
    import multilang_pairs
    return {name for lang, name in multilang_pairs.kept_out_packages() if lang == "rust"}


def training_crates(corpora: list[Path]) -> tuple[list[tuple[Path, str]], list[str]]:
    """(corpus, crate) to mine pairs from, and the held-out benchmark crates. A crate vendored
    in an earlier corpus is taken from there only, and an older version vendored next to a
    current one (`syn-1.0.109` next to `syn`) is skipped."""
    held = {c for s in ("small", "large") for c in suite_crates(s)} | multilang_kept_out_crates()
    fams = {family(c) for c in held}
    found = [(corpus, d.name) for corpus in corpora
             for d in sorted(corpus.iterdir()) if (d / "Cargo.toml").exists()]
    current = {name for _, name in found}
    unversioned = lambda n: re.sub(r"-[0-9][0-9.]*$", "", n)
    keep, seen = [], set()
    for corpus, n in found:
        if (n in seen or family(n) in fams or GENERATED.search(n)
                or (unversioned(n) != n and unversioned(n) in current)):
            continue
        seen.add(n)
        keep.append((corpus, n))
    return keep, sorted(held)


# Any function with a doc comment (private ones and `pub(crate)` too), for `--fns all`.
ANY_FN_RE = re.compile(r'^[ \t]*(?:pub(?:\([^)\n]*\))?[ \t]+)?' + FN_AFTER_VISIBILITY, re.M)

# Close to what lode's `import_lines` (server/embed/src/text.rs) puts in a chunk's text:
# lode reads them from the file's first chunk only, this from the whole file.
IMPORT_LINE = re.compile(r"^[ \t]*((?:pub )?use .*)$", re.M)
MAX_IMPORT_LINES = 5


def crate_pairs(corpus: Path, crate: str, fns: str) -> list[dict]:
    """(sentence, code) pairs of one crate, cached in bench/out/embeddings/pairs-FNS/."""
    cache = CACHE / f"pairs-{fns}" / f"{crate}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    fn_re = FN_RE if fns == "pub" else ANY_FN_RE
    pairs = []
    for p in sorted((corpus / crate).rglob("*.rs")):
        rel = p.relative_to(corpus / crate)
        if any(part.startswith(".") for part in rel.parts):
            continue
        src = p.read_text(encoding="utf-8", errors="surrogateescape")
        if (fns == "pub" and "pub" not in src) or ("///" not in src and "/**" not in src):
            continue  # no documented function: skip the (slow) lexer
        stripped, cands = extract(rel.as_posix(), src, fn_re)
        lines = stripped.split("\n")
        imports = [m.group(1).strip() for m in IMPORT_LINE.finditer(stripped)][:MAX_IMPORT_LINES]
        for x in cands:
            g = x["gold"]
            body = "\n".join(lines[g["start_line"] - 1:g["end_line"]])
            pairs.append({"crate": crate, "query": x["query"], "path": g["path"], "name": g["name"],
                          "imports": imports, "body": body[:4000]})
    # a sentence that documents several functions is ambiguous: keep none of them
    count: dict[str, int] = {}
    for x in pairs:
        count[x["query"].lower()] = count.get(x["query"].lower(), 0) + 1
    pairs = [x for x in pairs if count[x["query"].lower()] == 1]
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(pairs))
    return pairs


def code_text(pair: dict, imports: bool) -> str:
    """The code side as lode embeds a chunk: path, language and name, imports, code."""
    head = f"{pair['path']}\n{pair.get('lang', 'rust')} {pair['name']}\n"
    if imports and pair["imports"]:
        head += "\n".join(pair["imports"]) + "\n"
    return head + pair["body"]


# A rough stand-in for lode's BM25 (server/index/src/tokenizer.rs and lexical.rs): words as
# `split_words` gives them, a few English stop words dropped, plural/verb endings cut. Only
# used to teach the table where BM25 already ranks well (`--bm25-weight`).
STOP_WORDS = set("""a an and are as at be by for from has have if in into is it its of on or
that the this to was were will with which when then than there these those not no can may
must should would could returns return given""".split())


def rough_stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def bm25_terms(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for word in split_words(text):
        if word not in STOP_WORDS:
            term = rough_stem(word)
            counts[term] = counts.get(term, 0) + 1
    return counts


class CrateBm25:
    """BM25 statistics of one crate's code sides (k1 1.2, b 0.75)."""

    def __init__(self, codes: list[dict[str, int]]):
        self.n = len(codes)
        self.df: dict[str, int] = {}
        for c in codes:
            for t in c:
                self.df[t] = self.df.get(t, 0) + 1
        self.avgdl = sum(sum(c.values()) for c in codes) / max(self.n, 1)

    def idf(self, term: str) -> float:
        df = self.df.get(term, 0)
        return float(np.log(1 + (self.n - df + 0.5) / (df + 0.5)))


def bm25_matrix(queries: list[dict[str, int]], codes: list[dict[str, int]], stats: list["CrateBm25"],
                k1: float = 1.2, b: float = 0.75) -> np.ndarray:
    """scores[i, j] of query i against code j, with query i's crate statistics, each row
    divided by its best score (what lode's score fusion does with BM25)."""
    vocab: dict[str, int] = {}
    for q in queries:
        for t in q:
            vocab.setdefault(t, len(vocab))
    tf = np.zeros((len(codes), len(vocab)))
    lengths = np.zeros(len(codes))
    for j, c in enumerate(codes):
        lengths[j] = sum(c.values())
        for t, n in c.items():
            if t in vocab:
                tf[j, vocab[t]] = n
    out = np.zeros((len(queries), len(codes)))
    for i, (q, st) in enumerate(zip(queries, stats)):
        cols = [vocab[t] for t in q]
        idf = np.array([st.idf(t) for t in q])
        f = tf[:, cols]
        norm = k1 * (1 - b + b * lengths / max(st.avgdl, 1.0))
        out[i] = ((f * (k1 + 1)) / (f + norm[:, None]) * idf).sum(1)
        top = out[i].max()
        if top > 0:
            out[i] /= top
    return out


def mine_pairs(crates: list[tuple[Path, str]], fns: str) -> list[dict]:
    return [p for corpus, c in crates for p in crate_pairs(corpus, c, fns)]


PROSE_MIN_WORDS, PROSE_MAX_WORDS = 6, 40
READMES_PER_PACKAGE = 5


def readmes(root: Path) -> list[Path]:
    """The README files of one unpacked package or crate, shallowest first (a Debian Go
    package keeps its sources, README included, five directories down)."""
    found = [p for p in root.rglob("*") if p.name.lower().split(".")[0] == "readme"
             and p.suffix.lower() in ("", ".md", ".rst", ".markdown", ".txt")
             and p.is_file() and p.stat().st_size < 200_000
             and "node_modules" not in p.parts]
    found.sort(key=lambda p: (len(p.parts), str(p)))
    return found[:READMES_PER_PACKAGE]


def prose_sentences(files: list[Path]) -> list[str]:
    """Plain-English sentences from README files: code blocks, tables, headings, links'
    targets and markup dropped. What `--keep-prose` holds still: notes, questions and skill
    descriptions are English like this, not like doc comments, which name parameters and
    return values."""
    sentences: set[str] = set()
    for path in files:
        text = re.sub(r"```.*?```", " ", path.read_text(errors="replace"), flags=re.S)
        lines = []
        for line in text.splitlines():
            stripped = line.strip()
            if (not stripped or line.startswith(("    ", "\t"))
                    or stripped.startswith(("#", "|", "..", ":", "<", "!", "=", "---", "$"))):
                lines.append("")  # a paragraph break: code, headings, tables, directives
            else:
                lines.append(stripped.lstrip("*-+> ").strip())
        text = "\n".join(lines)
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # [words](url) -> words
        text = re.sub(r"`[^`]*`|https?://\S+|[*_]{1,2}", " ", text)
        for paragraph in re.split(r"\n\s*\n", text):
            for sentence in re.split(r"(?<=[.!?])\s+", " ".join(paragraph.split())):
                letters = sum(ch.isalpha() for ch in sentence)
                if (PROSE_MIN_WORDS <= len(sentence.split()) <= PROSE_MAX_WORDS
                        and letters >= 0.7 * len(sentence) and sentence[:1].isupper()):
                    sentences.add(sentence)
    return sorted(sentences)


class TrainableTable:
    """The table's embedding with its effective rows (weight x row) as parameters, trained with
    Adam (betas 0.9 / 0.999, eps 1e-8; a row no batch touched still moves with its moments,
    as a dense Adam step does). numpy only: text -> ids is a bag, a bag's embedding is the sum
    of its rows, L2-normalised (norm floored at 1e-12); the gradients are written out below."""

    def __init__(self, rows0: np.ndarray, live: np.ndarray, lr: float, l2: float):
        self.rows0 = rows0.astype(np.float32)
        self.table = self.rows0.copy()
        self.live = live.astype(np.float32)
        self.lr, self.l2 = lr, l2
        self.m = np.zeros_like(self.table)
        self.v = np.zeros_like(self.table)
        self.steps = 0

    def forward(self, ids: np.ndarray, offs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(unit vectors, norms) of the bags: bag i is ids[offs[i]:offs[i+1]]."""
        return self._bags(self.table, ids, offs)

    def embed(self, ids: np.ndarray, offs: np.ndarray) -> np.ndarray:
        return self.forward(ids, offs)[0]

    def embed_with_base(self, ids: np.ndarray, offs: np.ndarray) -> np.ndarray:
        """The bags' unit vectors under the rows training started from."""
        return self._bags(self.rows0, ids, offs)[0]

    def _bags(self, table: np.ndarray, ids: np.ndarray, offs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sums = np.zeros((len(offs), table.shape[1]), table.dtype)
        ends = np.append(offs[1:], len(ids))
        filled = np.flatnonzero(ends > offs)
        if len(filled):
            rows = table[ids] * self.live[ids, None]
            sums[filled] = np.add.reduceat(rows, offs[filled], axis=0)
        norms = np.maximum(np.linalg.norm(sums, axis=1), 1e-12)
        return sums / norms[:, None], norms

    def backward(self, bags: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]) -> None:
        """One Adam step from the gradients of the unit vectors of several batches of bags:
        each item is (ids, offs, unit vectors, norms, d loss / d unit vectors)."""
        self.adam_step(*self.gradients(bags))

    def gradients(self, bags: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
                  ) -> tuple[np.ndarray, np.ndarray]:
        """(rows touched, d loss / d row for each) from the gradients of the unit vectors."""
        all_ids, all_rows = [], []
        for ids, offs, units, norms, d_units in bags:
            # through the normalisation: d v = (d u - u (u . d u)) / |v|
            d_sums = (d_units - units * (units * d_units).sum(1, keepdims=True)) / norms[:, None]
            counts = np.diff(np.append(offs, len(ids)))
            all_ids.append(ids)
            all_rows.append(np.repeat(d_sums, counts, axis=0))
        ids = np.concatenate(all_ids)
        rows = np.concatenate(all_rows).astype(self.table.dtype)
        order = np.argsort(ids, kind="stable")
        touched, starts = np.unique(ids[order], return_index=True)
        grads = np.add.reduceat(rows[order], starts, axis=0) * self.live[touched, None]
        return touched, grads

    def adam_step(self, touched: np.ndarray, grads: np.ndarray) -> None:
        self.steps += 1
        b1, b2, eps = 0.9, 0.999, 1e-8
        self.m *= b1
        self.v *= b2
        if self.l2:
            dense = 2 * self.l2 * (self.table - self.rows0)
            dense[touched] += grads
            self.m += (1 - b1) * dense
            self.v += (1 - b2) * dense * dense
        else:
            self.m[touched] += (1 - b1) * grads
            self.v[touched] += (1 - b2) * grads * grads
        corrected = self.lr / (1 - b1 ** self.steps)
        denom = np.sqrt(self.v / (1 - b2 ** self.steps)) + eps
        self.table -= corrected * self.m / denom

    def effective_rows(self) -> np.ndarray:
        return self.table * self.live[:, None]


def log_softmax(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max(1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(1, keepdims=True))


def contrastive_step(q: np.ndarray, c: np.ndarray, lexical: np.ndarray | None, tau: float,
                     bm25_weight: float) -> tuple[float, np.ndarray, np.ndarray]:
    """Symmetric InfoNCE over in-batch negatives. Query -> code ranks by cosine + weight x
    BM25 / best BM25 (what hybrid search ranks a sentence query by); code -> query by cosine.
    Returns the loss and its gradients for the query and code unit vectors."""
    n = len(q)
    logits = (q @ c.T) / tau
    fused = logits if lexical is None else logits + bm25_weight * lexical / tau
    lp_rows = log_softmax(fused)          # query -> code
    lp_cols = log_softmax(logits.T)       # code -> query
    loss = (-np.trace(lp_rows) / n - np.trace(lp_cols) / n) / 2
    eye = np.eye(n, dtype=np.float64)
    d_logits = ((np.exp(lp_rows) - eye) + (np.exp(lp_cols) - eye).T) / (2 * n)
    d_q = d_logits @ c / tau
    d_c = d_logits.T @ q / tau
    return float(loss), d_q.astype(np.float32), d_c.astype(np.float32)


def sentence_geometry_step(q: np.ndarray, q_base: np.ndarray, weight: float) -> tuple[float, np.ndarray]:
    """Keeps the English side's geometry: the mean squared difference between the cosines of
    every two sentences of the batch under the table being trained (q) and under the table
    training started from (q_base, fixed), times weight. Training on code moves English words
    towards code words, which spreads plain sentences apart; memory and skill search compare
    English with English. Returns the loss and its gradient for q's unit vectors."""
    n = len(q)
    if n < 2 or not weight:
        return 0.0, np.zeros_like(q)
    diff = q @ q.T - q_base @ q_base.T
    np.fill_diagonal(diff, 0.0)
    pairs = n * (n - 1)
    loss = weight * float((diff * diff).sum()) / pairs
    return loss, (4.0 * weight / pairs) * (diff @ q)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True,
                    help="the table to start from: distill.py's output, or a trained table "
                         "(assets/embeddings/static-minilm.bin) to train further")
    ap.add_argument("--out", required=True)
    ap.add_argument("--corpus", action="append", type=Path,
                    help="a `cargo vendor` directory to mine Rust pairs from (repeatable; default: "
                         "bench/corpus/rust-vendor and, if present, bench/corpus/train-vendor)")
    ap.add_argument("--languages", default="rust",
                    help="comma-separated: rust, python, javascript, typescript, go, java, c, cpp, "
                         "csharp, ruby, php. The other "
                         "languages' pairs come from the table packages of "
                         "bench/multilang/packages.txt (multilang_pairs.py)")
    ap.add_argument("--per-package", type=int, default=1500,
                    help="at most this many pairs from one package of the other languages")
    ap.add_argument("--per-language", type=int, default=0,
                    help="balance: each epoch draws at most this many pairs of each language "
                         "(a fresh seeded sample per epoch; 0: all)")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--tau", type=float, default=0.05)
    ap.add_argument("--l2", type=float, default=0.0, help="pull of the rows towards the base rows")
    ap.add_argument("--keep-sentences", type=float, default=0.0,
                    help="weight of a term keeping the cosines between the batch's sentences what "
                         "they were under --base (English stays English; 0: off)")
    ap.add_argument("--keep-prose", type=int, default=0,
                    help="with --keep-sentences: also hold the cosines between this many README "
                         "sentences of the training packages per batch to --base's (0: off)")
    ap.add_argument("--val-share", type=float, default=0.05, help="share of crates held out for validation")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--fns", choices=["pub", "all"], default="all",
                    help="which documented Rust functions give pairs: `pub fn` (as the benchmark) or all")
    ap.add_argument("--no-imports", action="store_true",
                    help="leave the file's import lines out of the code side")
    ap.add_argument("--bm25-weight", type=float, default=1.0,
                    help="train the query->code direction on cosine + WEIGHT x BM25 / best BM25, "
                         "the score lode's hybrid search ranks by, so the table learns what BM25 misses")
    ap.add_argument("--snapshots", action="store_true",
                    help="experiments: also write OUT-epochN.bin after each epoch but the last")
    ap.add_argument("--only-cached", action="store_true",
                    help="experiments: use only crates whose pairs are already cached")
    a = ap.parse_args()

    rng = random.Random(a.seed)
    t0 = time.time()
    languages = [x.strip() for x in a.languages.split(",") if x.strip()]

    pairs: list[dict] = []
    held: list[str] = []
    if "rust" in languages:
        corpora = a.corpus or [p for p in (ROOT / "bench" / "corpus" / "rust-vendor",
                                           ROOT / "bench" / "corpus" / "train-vendor") if p.is_dir()]
        train_names, held = training_crates(corpora)
        if a.only_cached:
            train_names = [(p, c) for p, c in train_names if (CACHE / f"pairs-{a.fns}" / f"{c}.json").exists()]
        pairs += [dict(p, lang="rust") for p in mine_pairs(train_names, a.fns)]
    others = [x for x in languages if x != "rust"]
    if others:
        import multilang_pairs
        for lang in others:
            pairs += multilang_pairs.language_pairs(lang, a.per_package, a.seed)
    prose: list[str] = []
    if a.keep_prose:
        if not a.keep_sentences:
            sys.exit("train.py: --keep-prose weighs its term by --keep-sentences; set both")
        roots = [corpus / crate for corpus, crate in train_names] if "rust" in languages else []
        if others:
            roots += [multilang_pairs.build.fetch(package) for lang in others
                      for package in multilang_pairs.packages_for_training(lang)]
        # a shared source package (a JDK, glibc) lends many directories: read its READMEs once
        roots = list(dict.fromkeys(roots))
        prose = prose_sentences([f for root in roots for f in readmes(root)])
        print(f"{len(prose)} README sentences from {len(roots)} packages to keep", file=sys.stderr)
    for p in pairs:
        p["code"] = code_text(p, not a.no_imports)
    if a.bm25_weight:
        for p in pairs:
            p["q_terms"], p["c_terms"] = bm25_terms(p["query"]), bm25_terms(p["code"])
        by_crate_terms: dict[str, list[dict[str, int]]] = {}
        for p in pairs:
            by_crate_terms.setdefault(p["crate"], []).append(p["c_terms"])
        crate_stats = {c: CrateBm25(codes) for c, codes in by_crate_terms.items()}
    is_val = lambda c: int(hashlib.sha256(c.encode()).hexdigest()[:8], 16) / 2**32 < a.val_share
    train = [p for p in pairs if not is_val(p["crate"])]
    val = [p for p in pairs if is_val(p["crate"])]
    per_lang = {lang: sum(1 for p in train if p["lang"] == lang) for lang in languages}
    print(f"{len(pairs)} pairs ({', '.join(f'{k} {v}' for k, v in per_lang.items())} to train); "
          f"held out: {', '.join(held) or '-'} and their families; validation {len(val)} "
          f"({time.time() - t0:.0f}s)", file=sys.stderr)

    base = Table(Path(a.base))
    live = np.array(base.weights) > 0
    model = TrainableTable(np.array(base.mat), live, a.lr, a.l2)

    def bags(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        ids, offs = [], []
        for t in texts:
            offs.append(len(ids))
            ids.extend(base.word_ids(split_words(t)))
        return np.array(ids, dtype=np.int64), np.array(offs, dtype=np.int64)

    def epoch_sample(ps: list[dict]) -> list[dict]:
        if not a.per_language:
            return ps
        out = []
        for lang in languages:
            xs = [p for p in ps if p["lang"] == lang]
            out += rng.sample(xs, a.per_language) if len(xs) > a.per_language else xs
        return out

    def make_batches(ps: list[dict]) -> list[list[dict]]:
        by_crate: dict[str, list[dict]] = {}
        for p in ps:
            by_crate.setdefault(p["crate"], []).append(p)
        batches, rest = [], []
        for c in sorted(by_crate):
            xs = by_crate[c][:]
            rng.shuffle(xs)
            while len(xs) >= a.batch // 2:
                batches.append(xs[:a.batch])
                xs = xs[a.batch:]
            rest += xs
        rng.shuffle(rest)
        batches += [rest[i:i + a.batch] for i in range(0, len(rest), a.batch) if len(rest[i:i + a.batch]) > 8]
        rng.shuffle(batches)
        return batches

    def val_mrr() -> dict[str, float]:
        # within-crate retrieval of each validation function by its sentence, per language
        by_crate: dict[str, list[dict]] = {}
        for p in val:
            by_crate.setdefault(p["crate"], []).append(p)
        rr: dict[str, list[float]] = {}
        for xs in by_crate.values():
            q = model.embed(*bags([p["query"] for p in xs]))
            c = model.embed(*bags([p["code"] for p in xs]))
            s = q @ c.T
            rank = (s > np.diag(s)[:, None]).sum(1) + 1
            rr.setdefault(xs[0]["lang"], []).extend(1.0 / r if r <= 10 else 0.0 for r in rank)
        return {lang: sum(v) / len(v) for lang, v in sorted(rr.items())}

    def show(scores: dict[str, float]) -> str:
        return ", ".join(f"{lang} {v:.3f}" for lang, v in scores.items())

    def write(out: Path) -> None:
        q, scales, weights = quantise(model.effective_rows().astype(np.float64), live)
        extra = sorted(base.extra, key=base.extra.get)
        out.parent.mkdir(parents=True, exist_ok=True)
        write_table(out, q, scales, weights, base.n_base, extra, flags=4)
        for suffix in (".vocab.txt", ".tokenizer.json"):
            src = Path(str(a.base).removesuffix(".bin") + suffix)
            dst = Path(str(out).removesuffix(".bin") + suffix)
            if src.exists() and src.resolve() != dst.resolve():
                shutil.copyfile(src, dst)

    prose_rng = random.Random(a.seed + 1)  # apart from the batches' draws, which stay as they were
    print(f"epoch 0: validation MRR@10 {show(val_mrr())}", file=sys.stderr)
    for ep in range(a.epochs):
        total, n = 0.0, 0
        for b in make_batches(epoch_sample(train)):
            qi, qo = bags([p["query"] for p in b])
            ci, co = bags([p["code"] for p in b])
            q, q_norms = model.forward(qi, qo)
            c, c_norms = model.forward(ci, co)
            lexical = None
            if a.bm25_weight:
                lexical = bm25_matrix([p["q_terms"] for p in b], [p["c_terms"] for p in b],
                                      [crate_stats[p["crate"]] for p in b])
            q64 = q.astype(np.float64)
            loss, d_q, d_c = contrastive_step(q64, c.astype(np.float64), lexical, a.tau, a.bm25_weight)
            if a.keep_sentences:
                # The same sentences under the table training started from, which never moves.
                q_base = model.embed_with_base(qi, qo).astype(np.float64)
                kept, d_kept = sentence_geometry_step(q64, q_base, a.keep_sentences)
                loss += kept
                d_q = d_q + d_kept.astype(d_q.dtype)
            groups = [(qi, qo, q, q_norms, d_q), (ci, co, c, c_norms, d_c)]
            if prose:
                pi, po = bags(prose_rng.sample(prose, min(a.keep_prose, len(prose))))
                p_vecs, p_norms = model.forward(pi, po)
                p_base = model.embed_with_base(pi, po).astype(np.float64)
                kept, d_p = sentence_geometry_step(p_vecs.astype(np.float64), p_base, a.keep_sentences)
                loss += kept
                groups.append((pi, po, p_vecs, p_norms, d_p.astype(p_vecs.dtype)))
            model.backward(groups)
            total += loss * len(b)
            n += len(b)
        print(f"epoch {ep + 1}: loss {total / n:.3f}, validation MRR@10 {show(val_mrr())} "
              f"({time.time() - t0:.0f}s)", file=sys.stderr)
        if a.snapshots and ep + 1 < a.epochs:
            write(Path(str(a.out).removesuffix(".bin") + f"-epoch{ep + 1}.bin"))

    out = Path(a.out)
    write(out)

    print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB, {time.time() - t0:.0f}s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
