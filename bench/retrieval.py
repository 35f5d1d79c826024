#!/usr/bin/env python3
"""Doc-comment -> function retrieval benchmark for `lode search`.

For each crate in bench/retrieval-crates.txt (taken from bench/corpus/rust-vendor):
  1. copy the crate to bench/out/retrieval/<crate>/ with every doc comment (///, //!,
     /** */, /*! */) removed; lines that held only a doc comment are dropped;
  2. for every `pub fn` that had an outer doc comment, the query is the first sentence
     of that doc comment (markdown links/backticks removed); queries of fewer than
     4 words, headings and code are skipped; a sentence that documents more than one
     function is dropped (ambiguous gold);
  3. gold = that function in the stripped copy: file path, name, line range from the
     `pub fn` line to its closing brace;
  4. the query set is sorted, capped (default 300) by a seeded sample and written to
     bench/out/retrieval-queries.jsonl, so runs are comparable;
  5. `lode index` runs on each copy, then `lode search --json --limit 10 QUERY` per
     query with cwd = the copy;
  6. a hit counts when its path equals the gold path and its [start_line, end_line]
     overlaps the gold range, or its "symbol" equals the function name in that file.
     Reported: MRR@10, Recall@1/5/10 (overall, per crate, and split by whether the
     query text contains the function name), written to bench/out/retrieval.json.

    bench/retrieval.py [--suite small|large] [--mode lexical|semantic|hybrid] [--max-queries N]
                       [--seed 1234] [--crates FILE] [--no-reindex] [--queries-only] [--limit 10]
                       [--embedder static|minilm|none|...]

Two suites, built the same way from disjoint crate lists:
  small  bench/retrieval-crates.txt (regex-automata, tokio), 300 queries: the original
         benchmark; outputs bench/out/retrieval{.json,-queries.jsonl}, copies in
         bench/out/retrieval/;
  large  bench/retrieval-crates-large.txt (10 other crates), 1500 queries; outputs
         bench/out/retrieval-large{.json,-queries.jsonl}, copies in bench/out/retrieval-large/.
The static embedding table is trained on crates in neither list (scripts/embeddings/train.py
refuses to train on them), so both suites are held out from its training data.

--embedder is passed to `lode index` and `lode search` (default: lode's default, static); any
other embedder than static indexes its own copies (the suite's directory with -EMBEDDER appended),
so indexes made by different embedders never replace each other. For minilm, $LODE_MINILM_DIR
defaults to target/test-tools/minilm (scripts/install-test-tools.sh fills it).

Standard library only. Needs the lode binary (target/release/lode or LODE_BIN) unless
--queries-only is given.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))
from benchlib import BENCH, CORPUS, LODE, OUT, ROOT, die, last_line, machine, require_lode, write_json  # noqa: E402

MIN_WORDS = 4
NOT_ID = re.compile(r"[^A-Za-z0-9_]")
RAW_STR = re.compile(r'(?:b|c)?r(#*)"')


# ---------------------------------------------------------------- Rust lexing
def lex(src: str):
    """Return (masked, docs): masked is src with comment and literal contents blanked
    (newlines kept, so offsets and line numbers are unchanged); docs is a list of
    (start, end, kind, text) for doc comments, kind in outer_line, inner_line,
    outer_block, inner_block."""
    n = len(src)
    masked = list(src)
    docs = []

    def blank(a, b):
        for k in range(a, min(b, n)):
            if masked[k] != "\n":
                masked[k] = " "

    i = 0
    while i < n:
        c = src[i]
        if c == "/" and i + 1 < n and src[i + 1] == "/":
            j = src.find("\n", i)
            j = n if j < 0 else j
            t = src[i:j]
            if t.startswith("///") and not t.startswith("////"):
                docs.append((i, j, "outer_line", t[3:]))
            elif t.startswith("//!"):
                docs.append((i, j, "inner_line", t[3:]))
            blank(i, j)
            i = j
            continue
        if c == "/" and i + 1 < n and src[i + 1] == "*":
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth += 1
                    j += 2
                elif src.startswith("*/", j):
                    depth -= 1
                    j += 2
                else:
                    j += 1
            t = src[i:j]
            if t.startswith("/**") and not t.startswith("/***") and t != "/**/":
                docs.append((i, j, "outer_block", t[3:-2]))
            elif t.startswith("/*!"):
                docs.append((i, j, "inner_block", t[3:-2]))
            blank(i, j)
            i = j
            continue
        prev_ident = i > 0 and (src[i - 1].isalnum() or src[i - 1] == "_")
        if c in "rbc" and not prev_ident:
            m = RAW_STR.match(src, i)
            if m:
                close = '"' + m.group(1)
                j = src.find(close, m.end())
                j = n if j < 0 else j
                blank(m.end(), j)
                i = j + len(close)
                continue
            if i + 1 < n and src[i + 1] in "\"'" and c in "bc":
                i += 1  # byte / C string or byte char: handle the quote next round
                continue
        if c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            blank(i + 1, j)
            i = j + 1
            continue
        if c == "'":
            if i + 1 < n and src[i + 1] == "\\":
                j = src.find("'", i + 3)
                j = n if j < 0 else j
                blank(i + 1, j)
                i = j + 1
                continue
            if i + 2 < n and src[i + 2] == "'" and src[i + 1] != "\n":
                blank(i + 1, i + 2)
                i += 3
                continue
            i += 1  # lifetime or label
            continue
        i += 1
    return "".join(masked), docs


def strip_docs(src: str, docs) -> tuple[str, list[int | None]]:
    """Remove doc comments. Returns (new_text, line_map) where line_map[old_line0] is the
    new 1-based line number, or None when the line was dropped (it held only doc text)."""
    keep = [True] * len(src)
    for a, b, _, _ in docs:
        for k in range(a, b):
            if src[k] != "\n":
                keep[k] = False
    out_lines, line_map = [], []
    pos = 0
    for line in src.split("\n"):
        seg = [ch for k, ch in enumerate(line) if keep[pos + k]]
        had_doc = len(seg) != len(line)
        new = "".join(seg)
        if had_doc and not new.strip():
            line_map.append(None)
        else:
            out_lines.append(new.rstrip() if had_doc else new)
            line_map.append(len(out_lines))
        pos += len(line) + 1
    return "\n".join(out_lines), line_map


# A function's qualifiers, `fn` and its name (group 1), after any visibility.
FN_AFTER_VISIBILITY = (
    r'(?:(?:const|async|unsafe|default|extern(?:[ \t]*"[^"\n]*")?)[ \t]+)*fn[ \t]+([A-Za-z_][A-Za-z0-9_]*)')
FN_RE = re.compile(r'^[ \t]*pub[ \t]+' + FN_AFTER_VISIBILITY, re.M)


def line_starts(s: str) -> list[int]:
    st = [0]
    for i, ch in enumerate(s):
        if ch == "\n":
            st.append(i + 1)
    return st


def line_of(starts: list[int], off: int) -> int:
    import bisect
    return bisect.bisect_right(starts, off) - 1  # 0-based


def fn_end(masked: str, start: int) -> int | None:
    """Offset of the end of the fn item starting at `start` (closing brace, or ';' for a
    body-less declaration). Brackets are counted so generics/where clauses are skipped."""
    depth_paren = depth_angle_guard = 0
    i, n = start, len(masked)
    while i < n:
        ch = masked[i]
        if ch in "([":
            depth_paren += 1
        elif ch in ")]":
            depth_paren -= 1
        elif ch == ";" and depth_paren == 0:
            return i
        elif ch == "{" and depth_paren == 0:
            depth = 0
            while i < n:
                if masked[i] == "{":
                    depth += 1
                elif masked[i] == "}":
                    depth -= 1
                    if depth == 0:
                        return i
                i += 1
            return None
        i += 1
    del depth_angle_guard
    return None


def clean_markdown(s: str) -> str:
    s = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", s)      # [text](url)
    s = re.sub(r"\[([^\]]+)\]\[[^\]]*\]", r"\1", s)     # [text][ref]
    s = re.sub(r"\[`([^`\]]+)`\]", r"\1", s)            # [`Foo`]
    s = re.sub(r"\[([^\]]+)\]", r"\1", s)              # [Foo]
    s = s.replace("`", "")
    s = re.sub(r"(\*\*|__)(.+?)\1", r"\2", s)
    s = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"\1", s)
    s = re.sub(r"<[^>\n]+>", lambda m: m.group(0) if re.match(r"<[A-Z]", m.group(0)) else "", s)  # html tags
    return re.sub(r"\s+", " ", s).strip()


ABBREV = {"e.g", "i.e", "etc", "vs", "cf", "approx", "resp"}


def first_sentence(doc_lines: list[str]) -> str | None:
    para = []
    for l in doc_lines:
        t = l.strip()
        if not t:
            if para:
                break
            continue
        if t.startswith("#") or t.startswith("```"):
            if para:
                break
            return None
        para.append(t)
    if not para:
        return None
    text = clean_markdown(" ".join(para))
    for m in re.finditer(r"[.!?](?=\s|$)", text):
        word = text[:m.start()].rsplit(" ", 1)[-1].lower()
        if word in ABBREV or re.fullmatch(r"[a-z]", word):
            continue
        text = text[:m.end()]
        break
    text = text.strip()
    if len(text.split()) < MIN_WORDS:
        return None
    return text


def doc_text(kind: str, raw: str) -> list[str]:
    if kind.endswith("_line"):
        return [raw[1:] if raw.startswith(" ") else raw]
    lines = []
    for l in raw.split("\n"):
        l = l.strip()
        if l.startswith("*"):
            l = l[1:].lstrip()
        lines.append(l)
    return lines


def extract(rel: str, src: str, fn_re: re.Pattern = FN_RE):
    """-> (stripped_text, [candidate dict]) for one file. `fn_re` finds the functions whose
    doc comments become queries (group 1 = name); the benchmark's is FN_RE (`pub fn`)."""
    masked, docs = lex(src)
    stripped, line_map = strip_docs(src, docs)
    starts = line_starts(src)
    # outer doc comment text by 0-based line; a block doc registers on its last line
    doc_by_line: dict[int, tuple[int, list[str]]] = {}
    for a, b, kind, raw in docs:
        if kind.startswith("outer"):
            la, lb = line_of(starts, a), line_of(starts, max(a, b - 1))
            doc_by_line[lb] = (la, doc_text(kind, raw))
    mlines = masked.split("\n")
    cands = []
    for m in fn_re.finditer(masked):
        name = m.group(1)
        l0 = line_of(starts, m.start(1))
        # walk upward over attributes to the doc comment
        k = l0 - 1
        while k >= 0 and mlines[k].strip().startswith("#[") and k not in doc_by_line:
            k -= 1
        collected: list[list[str]] = []
        while k >= 0 and k in doc_by_line and not mlines[k].strip():
            first, text = doc_by_line[k]
            collected.insert(0, text)
            k = first - 1
        if not collected:
            continue
        q = first_sentence([l for block in collected for l in block])
        if not q:
            continue
        end = fn_end(masked, m.end())
        if end is None:
            continue
        ls, le = line_map[l0], line_map[line_of(starts, end)]
        if ls is None or le is None:
            continue
        cands.append({"query": q, "gold": {"path": rel, "name": name, "start_line": ls, "end_line": le}})
    return stripped, cands


# ---------------------------------------------------------------- corpus preparation
def read_crates(path: Path) -> list[str]:
    out = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(line)
    return out


def crate_version(d: Path) -> str | None:
    m = re.search(r'(?m)^version\s*=\s*"([^"]+)"', (d / "Cargo.toml").read_text(errors="replace")) \
        if (d / "Cargo.toml").exists() else None
    return m.group(1) if m else None


def prepare(crate: str, src_dir: Path, dst: Path) -> list[dict]:
    if dst.exists():
        shutil.rmtree(dst)
    cands = []
    for p in sorted(src_dir.rglob("*")):
        rel = p.relative_to(src_dir)
        if any(part.startswith(".") for part in rel.parts):
            continue  # .cargo-checksum.json, .cargo_vcs_info.json, ...
        target = dst / rel
        if p.is_dir():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if p.suffix == ".rs":
            src = p.read_text(encoding="utf-8", errors="surrogateescape")
            stripped, cs = extract(rel.as_posix(), src)
            target.write_text(stripped, encoding="utf-8", errors="surrogateescape")
            for c in cs:
                c["crate"] = crate
            cands += cs
        else:
            shutil.copy2(p, target)
    return cands


def check_gold(dst: Path, g: dict) -> bool:
    lines = (dst / g["path"]).read_text(encoding="utf-8", errors="surrogateescape").split("\n")
    return bool(re.search(rf"\bfn\s+{re.escape(g['name'])}\b", lines[g["start_line"] - 1]))


def build_queries(crates: list[str], work: Path, max_q: int, seed: int) -> list[dict]:
    allc = []
    for c in crates:
        src = CORPUS / "rust-vendor" / c
        if not (src / "Cargo.toml").exists():
            die(f"crate {c} not found at {src}; run bench/corpus.sh (or fix bench/retrieval-crates.txt)")
        cs = prepare(c, src, work / c)
        bad = [x for x in cs if not check_gold(work / c, x["gold"])]
        if bad:
            die(f"internal error: {len(bad)} gold ranges do not point at their fn in {c}, e.g. {bad[0]}")
        print(f"  {c} {crate_version(src)}: {len(cs)} documented pub fns -> {work / c}")
        allc += cs
    # drop ambiguous sentences (same text documents several functions)
    count: dict[str, int] = {}
    for x in allc:
        k = (x["crate"], x["query"].lower())
        count[k] = count.get(k, 0) + 1
    uniq = [x for x in allc if count[(x["crate"], x["query"].lower())] == 1]
    uniq.sort(key=lambda x: (x["crate"], x["gold"]["path"], x["gold"]["start_line"]))
    print(f"  {len(allc)} candidates, {len(allc) - len(uniq)} dropped as ambiguous duplicates, {len(uniq)} unique")
    if len(uniq) > max_q:
        uniq = random.Random(seed).sample(uniq, max_q)
        uniq.sort(key=lambda x: (x["crate"], x["gold"]["path"], x["gold"]["start_line"]))
    for i, x in enumerate(uniq):
        x["id"] = i
        x["mentions_name"] = bool(re.search(rf"(?i)\b{re.escape(x['gold']['name'])}\b", x["query"]))
    return uniq


# ---------------------------------------------------------------- suites
class Suite:
    def __init__(self, name: str, crates_file: str, max_queries: int):
        stem = "retrieval" if name == "small" else f"retrieval-{name}"
        self.crates = BENCH / crates_file
        self.max_queries = max_queries
        self.work = OUT / stem
        self.queries = OUT / f"{stem}-queries.jsonl"
        self.out = OUT / f"{stem}.json"


SUITES = {"small": Suite("small", "retrieval-crates.txt", 300),
          "large": Suite("large", "retrieval-crates-large.txt", 1500)}


def suite_crates(name: str) -> list[str]:
    """The crates of a suite (used by the table trainer to keep its data disjoint)."""
    return read_crates(SUITES[name].crates)


# ---------------------------------------------------------------- evaluation
def is_hit(h: dict, g: dict) -> bool:
    path = str(h.get("path", "")).replace("\\", "/")
    if path.startswith("./"):
        path = path[2:]
    if path != g["path"]:
        return False
    if h.get("symbol") == g["name"]:
        return True
    try:
        s, e = int(h["start_line"]), int(h["end_line"])
    except (KeyError, TypeError, ValueError):
        return False
    return s <= g["end_line"] and e >= g["start_line"]


def metrics(rows: list[dict], k: int) -> dict:
    n = len(rows)
    if not n:
        return {"n": 0}
    rr = [1.0 / r["rank"] if r["rank"] and r["rank"] <= k else 0.0 for r in rows]
    at = lambda kk: sum(1 for r in rows if r["rank"] and r["rank"] <= kk) / n
    return {"n": n, f"mrr@{k}": sum(rr) / n, "recall@1": at(1), "recall@5": at(5), f"recall@{k}": at(k)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", choices=sorted(SUITES), default="small",
                    help="which benchmark: its crate list, query cap and output names (see above)")
    ap.add_argument("--crates", help="crate list (default: the suite's)")
    ap.add_argument("--max-queries", type=int, help="query cap (default: the suite's)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--limit", type=int, default=10, help="hits requested per query (k of MRR@k)")
    ap.add_argument("--mode", help="passed through as `lode search --mode MODE` (lexical|semantic|hybrid)")
    ap.add_argument("--work", help="where the stripped copies go (default: the suite's, "
                    "with -EMBEDDER appended for an embedder other than static)")
    ap.add_argument("--embedder", help="passed as `lode --embedder NAME` to index and search")
    ap.add_argument("--no-reindex", action="store_true",
                    help="reuse existing stripped copies and their .lode index (queries are rebuilt only if missing)")
    ap.add_argument("--queries-only", action="store_true", help="build the copies and the query file, then stop")
    ap.add_argument("--out", help="result file (default: the suite's)")
    ap.add_argument("--search-arg", action="append", default=[],
                    help="extra argument for `lode search` (repeatable), e.g. --search-arg=--boosts=2,1,1")
    ap.add_argument("--index-arg", action="append", default=[],
                    help="extra argument for `lode index` (repeatable), e.g. --index-arg=--chunk-sizes=600,1200,100")
    a = ap.parse_args()
    suite = SUITES[a.suite]
    a.crates = a.crates or str(suite.crates)
    a.max_queries = a.max_queries or suite.max_queries
    a.work = a.work or str(suite.work)
    a.out = a.out or str(suite.out)

    crates = read_crates(Path(a.crates))
    work = Path(a.work)
    if a.embedder and a.embedder != "static" and work == Path(suite.work):
        work = work.with_name(f"{work.name}-{a.embedder}")
    embedder = ["--embedder", a.embedder] if a.embedder else []
    if a.embedder == "minilm":
        os.environ.setdefault("LODE_MINILM_DIR", str(ROOT / "target" / "test-tools" / "minilm"))
    index_seconds = {}
    qfile = suite.queries
    if not a.queries_only:
        require_lode()

    if a.no_reindex and qfile.exists() and all((work / c / ".lode").exists() for c in crates):
        queries = [json.loads(l) for l in qfile.read_text().splitlines() if l.strip()]
        print(f"reusing {len(queries)} queries from {qfile} and the existing indexes")
    else:
        print(f"preparing stripped copies under {work}")
        queries = build_queries(crates, work, a.max_queries, a.seed)
        qfile.parent.mkdir(parents=True, exist_ok=True)
        qfile.write_text("".join(json.dumps(q) + "\n" for q in queries))
        print(f"  {len(queries)} queries (cap {a.max_queries}, seed {a.seed}) -> {qfile}")
        if a.queries_only:
            return 0
        for c in crates:
            t0 = time.perf_counter()
            shutil.rmtree(work / c / ".lode", ignore_errors=True)
            p = subprocess.run([str(LODE), *embedder, "index", *a.index_arg, str(work / c)],
                               capture_output=True, text=True)
            if p.returncode != 0:
                die(f"lode index {work / c} failed (exit {p.returncode}):\n{p.stderr[-3000:]}")
            if not (work / c / ".lode").exists():
                die(f"`lode index` created no {work / c}/.lode; is {LODE} the real lode binary?")
            index_seconds[c] = time.perf_counter() - t0
            print(f"  indexed {c} in {index_seconds[c]:.2f}s  [{last_line(p.stderr)}]")

    extra = (["--mode", a.mode] if a.mode else []) + a.search_arg
    rows, lat = [], []
    t_all = time.perf_counter()
    for i, q in enumerate(queries):
        cmd = [str(LODE), *embedder, "search", "--root", str(work / q["crate"]), "--json", "--limit", str(a.limit)] \
            + extra + ["--", q["query"]]
        t0 = time.perf_counter()
        p = subprocess.run(cmd, cwd=work / q["crate"], capture_output=True, text=True)
        lat.append(time.perf_counter() - t0)
        if p.returncode not in (0, 1) or (p.returncode == 1 and p.stdout.strip()):  # 1 = no hits
            die(f"lode search failed (exit {p.returncode}) for query {q['id']} {q['query']!r}:\n{p.stderr[-2000:]}")
        hits = []
        for line in p.stdout.splitlines():
            if line.strip():
                try:
                    hits.append(json.loads(line))
                except json.JSONDecodeError:
                    die(f"lode search printed a non-JSON line for {q['query']!r}: {line[:200]}")
        rank = next((j + 1 for j, h in enumerate(hits[:a.limit]) if is_hit(h, q["gold"])), None)
        rows.append({"id": q["id"], "crate": q["crate"], "query": q["query"], "gold": q["gold"],
                     "mentions_name": q["mentions_name"], "rank": rank, "n_hits": len(hits),
                     "top": [f"{h.get('path')}:{h.get('start_line')}-{h.get('end_line')} {h.get('symbol') or ''}".strip()
                             for h in hits[:3]]})
        if (i + 1) % 50 == 0:
            print(f"  {i + 1}/{len(queries)} queries")
    elapsed = time.perf_counter() - t_all

    k = a.limit
    overall = metrics(rows, k)
    per_crate = {c: metrics([r for r in rows if r["crate"] == c], k) for c in crates}
    split = {"query_mentions_fn_name": metrics([r for r in rows if r["mentions_name"]], k),
             "query_does_not_mention_fn_name": metrics([r for r in rows if not r["mentions_name"]], k)}
    lat_sorted = sorted(lat)
    res = {"suite": a.suite, "mode": a.mode or "default", "embedder": a.embedder or "default",
           "index_seconds": index_seconds, "limit": k, "seed": a.seed, "max_queries": a.max_queries,
           "crates": {c: crate_version(CORPUS / "rust-vendor" / c) for c in crates},
           "queries_file": str(qfile), "machine": machine(), "overall": overall, "per_crate": per_crate,
           "split": split,
           "latency_ms": {"mean": 1000 * sum(lat) / len(lat) if lat else None,
                          "p50": 1000 * lat_sorted[len(lat) // 2] if lat else None,
                          "p95": 1000 * lat_sorted[int(len(lat) * 0.95)] if lat else None},
           "elapsed_s": elapsed, "results": rows}
    write_json(Path(a.out), res)

    def fmt(m):
        if not m.get("n"):
            return "   0 queries"
        return (f"{m['n']:4d} queries  MRR@{k} {m[f'mrr@{k}']:.3f}  R@1 {m['recall@1']:.3f}  "
                f"R@5 {m['recall@5']:.3f}  R@{k} {m[f'recall@{k}']:.3f}")
    print(f"\nmode: {a.mode or 'default'}")
    print(f"overall          {fmt(overall)}")
    for c, m in per_crate.items():
        print(f"{c:<16} {fmt(m)}")
    print(f"{'names fn':<16} {fmt(split['query_mentions_fn_name'])}")
    print(f"{'no fn name':<16} {fmt(split['query_does_not_mention_fn_name'])}")
    if lat:
        print(f"latency per query (process incl.): mean {res['latency_ms']['mean']:.1f} ms, p95 {res['latency_ms']['p95']:.1f} ms")
    print(f"written {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
