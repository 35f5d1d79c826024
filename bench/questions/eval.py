#!/usr/bin/env python3
"""Repository questions (issue 45): a developer's question -> the function that answers it, asked
of whole packages as shipped (tests, fixtures, data and all), through the `lode` binary.

    bench/questions/eval.py --lode target/release/lode [--split train|check|all]
        [--demotions W[,W...]] [--mode lexical|hybrid] [--work DIR] [--no-reindex]

Each `--demotions` value (a weight for every role, or TEST,FIXTURE,GENERATED,DATA,HEADER joined
by `/` instead of commas) is one run; `none` runs without the knob, i.e. with the shipped weights.
A hit answers when it is in a gold file and either names the gold function or holds its
definition line. Prints MRR@10 and top-1 per run, overall and per repository.
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def read_corpora():
    corpora = {}
    for line in (HERE / "corpora.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, source, locator, split = line.split()
        corpora[name] = (source, locator, split)
    return corpora


def prepare(name, source, locator, work: Path) -> Path:
    """The package's full tree under work/NAME (made once)."""
    target = work / name
    if target.exists():
        return target
    downloads = work / "_downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    if source == "crate":
        found = glob.glob(os.path.expanduser(f"~/.cargo/registry/src/*/{locator}"))
        if not found:
            sys.exit(f"{locator} is not in cargo's registry cache (cargo fetch a crate that uses it)")
        shutil.copytree(found[0], target)
    elif source == "pypi":
        subprocess.run(["pip", "download", "--quiet", "--no-binary", ":all:", "--no-deps",
                        "--dest", str(downloads), locator], check=True)
        package, version = locator.split("==")
        archive = next(p for p in downloads.iterdir()
                       if p.name.lower().replace("_", "-").startswith(f"{package.lower()}-{version}"))
        with tarfile.open(archive) as tar:
            tar.extractall(downloads / name, filter="data")
        (inner,) = list((downloads / name).iterdir())
        shutil.move(str(inner), target)
    elif source == "deb":
        package, directory = locator.split(":")
        subprocess.run(["apt-get", "download", package], cwd=downloads, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deb = next(downloads.glob(f"{package}_*.deb"))
        unpacked = downloads / f"{name}-deb"
        subprocess.run(["dpkg", "-x", str(deb), str(unpacked)], check=True)
        shutil.copytree(unpacked / "usr/share/gocode/src" / directory, target)
    elif source == "self":
        target.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", "HEAD"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    else:
        sys.exit(f"unknown source {source}")
    return target


def definition_lines(path: Path, symbol: str):
    pattern = re.compile(rf"\b(def|fn|func)\b.*?\b{re.escape(symbol)}\s*[(<\[]")
    lines = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if pattern.search(line):
            lines.append(number)
    return lines


def answers(hit, golds):
    for path, symbol, lines in golds:
        if hit["path"] != path:
            continue
        if hit.get("symbol") == symbol:
            return True
        if any(hit["start_line"] <= line <= hit["end_line"] for line in lines):
            return True
    return False


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lode", default=str(REPO / "target/release/lode"))
    parser.add_argument("--split", default="train", choices=["train", "check", "all"])
    parser.add_argument("--demotions", default="none")
    parser.add_argument("--mode", default=None)
    parser.add_argument("--work", default=str(REPO / "bench/out/questions"))
    parser.add_argument("--no-reindex", action="store_true")
    parser.add_argument("--show", action="store_true", help="print each question's rank and top hit")
    args = parser.parse_args()
    corpora = read_corpora()
    questions = [json.loads(line) for line in (HERE / "questions.jsonl").read_text().splitlines() if line.strip()]
    questions = [q for q in questions if args.split == "all" or corpora[q["repo"]][2] == args.split]
    work = Path(args.work)
    roots = {}
    for name in sorted({q["repo"] for q in questions}):
        source, locator, _ = corpora[name]
        roots[name] = prepare(name, source, locator, work)
        if not args.no_reindex:
            subprocess.run([args.lode, "index", str(roots[name])], check=True,
                           stdout=subprocess.DEVNULL)
    for question in questions:
        root = roots[question["repo"]]
        golds = []
        for path, symbol in question["gold"]:
            lines = definition_lines(root / path, symbol)
            if not lines:
                sys.exit(f"{question['repo']}: no definition of {symbol} in {path}")
            golds.append((path, symbol, lines))
        question["resolved"] = golds
    results = {}
    for demotions in args.demotions.split(","):
        ranks = []
        for question in questions:
            command = [args.lode, "search", "--root", str(roots[question["repo"]]), "--json",
                       "--limit", "10"]
            if demotions != "none":
                command += ["--demotions", demotions.replace("/", ",")]
            if args.mode:
                command += ["--mode", args.mode]
            command += ["--", question["query"]]
            output = subprocess.run(command, capture_output=True, text=True).stdout
            hits = [json.loads(line) for line in output.splitlines() if line.strip()]
            rank = next((i + 1 for i, hit in enumerate(hits) if answers(hit, question["resolved"])), None)
            ranks.append((question, rank))
            if args.show:
                top = hits[0] if hits else {}
                print(f"  [{demotions}] {rank or '-':>2} {question['repo']}: {question['query']}"
                      f"  (top: {top.get('path')}:{top.get('start_line')} {top.get('symbol')})")
        mrr = sum(1 / r for _, r in ranks if r) / len(ranks)
        top1 = sum(1 for _, r in ranks if r == 1) / len(ranks)
        per_repo = {}
        for question, rank in ranks:
            per_repo.setdefault(question["repo"], []).append(rank)
        detail = " ".join(f"{repo}={sum(1 / r for r in rs if r) / len(rs):.2f}"
                          for repo, rs in sorted(per_repo.items()))
        print(f"demotions {demotions:>10}  mode {args.mode or 'auto':>7}  questions {len(ranks)}  "
              f"MRR@10 {mrr:.3f}  top-1 {top1:.3f}   {detail}", flush=True)
        results[demotions] = {"mrr10": mrr, "top1": top1, "ranks": [r for _, r in ranks]}
    print(json.dumps({"split": args.split, "mode": args.mode or "auto", "results": results}))


if __name__ == "__main__":
    main()
