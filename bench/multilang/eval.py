#!/usr/bin/env python3
"""Evaluates `lode search` on the per-language sets that build.py made (issue 27).

For each language: `lode index` over bench/out/multilang/<lang>/corpus, then every query of
queries.jsonl through `lode search --json --limit 10 [--mode M] QUERY` for each mode asked
(default: lexical, semantic, hybrid, and the default mode, `auto`). A hit counts when its path is
the gold path, its line range overlaps the gold function, and it is not much larger than the
function (at most twice its lines plus 20: a whole-file or whole-class hit does not count).
Reported per language and mode: MRR@10, R@1, R@10, and MRR@10 over the queries that share no
word with the function's name. Written to bench/out/multilang/results.json and printed as a
Markdown table.

    bench/multilang/eval.py [--lang python ...] [--mode lexical ...] [--fusion SPEC] [--no-reindex]
                            [--search-arg=--boosts=2,1,1]
                            [--jobs 2]

Needs a lode binary: LODE_BIN, else target/release/lode. Standard library only.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUT = HERE.parent / "out" / "multilang"
LODE = Path(os.environ.get("LODE_BIN", ROOT / "target" / "release" / "lode"))
LANGS = ["python", "javascript", "typescript", "go", "rust", "java", "c", "cpp", "csharp", "ruby", "php"]
MODES = ["lexical", "semantic", "hybrid", "auto"]
# Where build.py writes each split's sets (--keep-doc-rest adds keep-rest/ under its split).
SET_DIRS = {"eval": OUT, "train": OUT / "train", "keep-rest": OUT / "keep-rest",
            "train-keep-rest": OUT / "train" / "keep-rest"}


def is_hit(hit: dict, gold: dict) -> bool:
    if str(hit.get("path", "")).replace("\\", "/") != gold["path"]:
        return False
    start, end = int(hit.get("start_line", 0)), int(hit.get("end_line", 0))
    if start > gold["end_line"] or end < gold["start_line"]:
        return False
    gold_lines = gold["end_line"] - gold["start_line"] + 1
    return end - start + 1 <= 2 * gold_lines + 20


LODE_ARGS: list[str] = []  # --lode-arg: global options for every lode run (index and search)
SEARCH_ARGS: list[str] = []  # --search-arg: options of `lode search` only (e.g. --boosts)


def search(corpus: Path, query: str, mode: str, fusion: str | None) -> list[dict]:
    command = [str(LODE), *LODE_ARGS, "search", *SEARCH_ARGS, "--json", "--limit", "10", "--no-refresh"]
    if mode != "auto":
        command += ["--mode", mode]
    if fusion and mode in ("hybrid", "auto"):
        command += ["--fusion", fusion]
    command += ["--", query]
    done = subprocess.run(command, cwd=corpus, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(command)}: {done.stderr.strip()[-500:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def metrics(ranks: list[int | None], overlap: list[bool]) -> dict:
    def mrr(selected):
        return sum(1 / r for r in selected if r) / max(len(selected), 1)
    return {
        "n": len(ranks),
        "mrr10": round(mrr(ranks), 4),
        "r1": round(sum(1 for r in ranks if r == 1) / max(len(ranks), 1), 4),
        "r10": round(sum(1 for r in ranks if r) / max(len(ranks), 1), 4),
        "no_name_mrr10": round(mrr([r for r, o in zip(ranks, overlap) if not o]), 4),
    }


def evaluate(lang: str, modes: list[str], fusion: str | None, reindex: bool, jobs: int,
             sets: Path = OUT) -> dict:
    corpus = sets / lang / "corpus"
    queries = [json.loads(line) for line in (sets / lang / "queries.jsonl").read_text().splitlines()]
    result = {"language": lang, "queries": len(queries), "modes": {}}
    if reindex:
        started = time.perf_counter()
        done = subprocess.run([str(LODE), *LODE_ARGS, "index", "."], cwd=corpus, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"eval.py: lode index failed in {corpus}: {done.stderr[-1000:]}")
        result["index_seconds"] = round(time.perf_counter() - started, 2)
        result["index_summary"] = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    overlap = [q["name_overlap"] for q in queries]
    for mode in modes:
        def rank(q):
            hits = search(corpus, q["query"], mode, fusion)
            return next((i + 1 for i, h in enumerate(hits) if is_hit(h, q["gold"])), None)
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            ranks = list(pool.map(rank, queries))
        result["modes"][mode] = metrics(ranks, overlap)
        result["modes"][mode]["ranks"] = ranks
        print(f"  {lang} {mode}: {json.dumps({k: v for k, v in result['modes'][mode].items() if k != 'ranks'})}",
              file=sys.stderr)
    return result


def table(results: list[dict]) -> str:
    lines = ["| language | queries | mode | MRR@10 | R@1 | R@10 | no-name-overlap MRR |",
             "|---|---|---|---|---|---|---|"]
    for result in results:
        for mode, m in result["modes"].items():
            lines.append(f"| {result['language']} | {result['queries']} | {mode} | {m['mrr10']:.3f} | "
                         f"{m['r1']:.3f} | {m['r10']:.3f} | {m['no_name_mrr10']:.3f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lang", action="append", choices=LANGS)
    parser.add_argument("--mode", action="append", choices=MODES)
    parser.add_argument("--fusion", help="passed to lode search --fusion for hybrid and auto")
    parser.add_argument("--no-reindex", action="store_true")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--lode-arg", action="append", default=[],
                        help="a global option for every lode run, e.g. --lode-arg=--chunk-sizes=300,1200,50 "
                             "(delete the corpora's .lode first: a chunking change alone does not re-index)")
    parser.add_argument("--search-arg", action="append", default=[],
                        help="an option of lode search, e.g. --search-arg=--boosts=2,1,1")
    parser.add_argument("--split", choices=list(SET_DIRS), default="eval",
                        help="train: the sets of build.py --split train (for fitting weights); keep-rest: "
                             "build.py --keep-doc-rest (docs kept but for the query's sentence); "
                             "train-keep-rest: both")
    parser.add_argument("--output", type=Path, default=OUT / "results.json")
    args = parser.parse_args()
    LODE_ARGS.extend(args.lode_arg)
    SEARCH_ARGS.extend(args.search_arg)
    if not LODE.is_file():
        sys.exit(f"eval.py: no lode binary at {LODE} (build with cargo build --release -p lode, or set LODE_BIN)")
    sets = SET_DIRS[args.split]
    results = [evaluate(lang, args.mode or MODES, args.fusion, not args.no_reindex, args.jobs, sets)
               for lang in args.lang or LANGS]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"lode": str(LODE), "fusion": args.fusion, "results": results}) + "\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
