#!/usr/bin/env python3
"""(doc sentence, function) training pairs in Python, JavaScript, TypeScript, Go, and issue 43's
Java, C, C++, C#, Ruby and PHP.

The packages are the `table` rows of bench/multilang/packages.txt. The `eval` rows (the
per-language retrieval sets) and the `train` rows (which fit the fusion weights on a table
that has not seen them) are never read here; `packages_for_training` refuses a package that
is also listed for either. Each package is fetched, parsed and
blanked by bench/multilang/build.py itself (the same extractors as the benchmark: Python
docstrings, JSDoc/TSDoc blocks, Go doc lines; for issue 43's languages the docs lode-syntax
attaches, through the `doc_spans` example that bench/multilang/lode_docs.py runs, so
LODE_DOC_SPANS or a built target/ is needed), so a pair is exactly what the benchmark asks:
the query is the doc's first sentence, the code side is the function as lode embeds its
chunk (path, language and name, the file's first import lines, then the code with its doc
text blanked).

Used by train.py (`--languages`); on its own it prints what each package gives:

    python3 scripts/embeddings/multilang_pairs.py [--lang go ...]

Pairs are cached per package in bench/out/embeddings/pairs-multilang/<lang>/<package>.json.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "bench" / "multilang"))
import build  # noqa: E402  (bench/multilang/build.py)

CACHE = ROOT / "bench" / "out" / "embeddings" / "pairs-multilang"
LANGS = ["python", "javascript", "typescript", "go", *build.lode_docs.LANGS]
TRAINING_SPLITS = ("table",)
KEPT_OUT_SPLITS = ("eval", "train")
MAX_IMPORT_LINES = 5  # server/embed/src/text.rs MAX_IMPORT_LINES
HEAD_LINES = 60  # how much of a file's opening text is searched for import lines
MAX_BODY_CHARS = 4000


def import_lines(head: str) -> list[str]:
    """The first import lines of a file's opening text, as `import_lines` in
    server/embed/src/text.rs picks them."""
    out = []
    for line in head.split("\n"):
        line = line.strip()
        if (line.startswith(("use ", "pub use ", "import ", "#include"))
                or (line.startswith("from ") and " import " in line)
                or ("require(" in line and line.startswith(("const ", "var ", "let ")))):
            out.append(line)
            if len(out) == MAX_IMPORT_LINES:
                break
    return out


def kept_out_packages() -> set[tuple[str, str]]:
    """(language, name) of every package the benchmark evaluates on or fits fusion weights on."""
    return {(p.lang, p.name) for p in kept_out_rows()}


def kept_out_rows() -> list[build.Package]:
    listed = build.HERE / "packages.txt"
    return [p for split in KEPT_OUT_SPLITS for p in build.read_packages(listed, split)]


def within(a: str | None, b: str | None) -> bool:
    """Whether directory `a` of a package is `b` or lies inside it (None: the whole package)."""
    if b is None:
        return True
    if a is None:
        return False
    return Path(a).parts[:len(Path(b).parts)] == Path(b).parts


def overlaps(package: build.Package, other: build.Package) -> bool:
    """Whether two rows can share a file: the same package and one's directory holds the
    other's (a large source package, a JDK or glibc, lends one directory to each split)."""
    return ((package.lang, package.name) == (other.lang, other.name)
            and (within(package.subdir, other.subdir) or within(other.subdir, package.subdir)))


def packages_for_training(lang: str) -> list[build.Package]:
    listed = build.HERE / "packages.txt"
    kept_out = kept_out_rows()
    packages = []
    for split in TRAINING_SPLITS:
        for package in build.read_packages(listed, split):
            if package.lang != lang:
                continue
            if any(overlaps(package, other) for other in kept_out):
                sys.exit(f"multilang_pairs.py: {package.name} {package.subdir or ''} is listed "
                         "for evaluation or fusion fitting too")
            packages.append(package)
    return packages


def package_pairs(lang: str, package: build.Package, parser) -> list[dict]:
    """Every unambiguous documented function of one package, cached."""
    cache = CACHE / lang / f"{package.slug}-{package.version}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    root = build.fetch(package)
    if package.subdir:
        root = root / package.subdir
    if lang in build.lode_docs.LANGS:
        pairs = lode_docs_pairs(lang, package, root)
    else:
        pairs = parsed_pairs(lang, package, root, parser)
    # a sentence that documents several functions is ambiguous: keep none of them
    count: dict[str, int] = {}
    for pair in pairs:
        count[pair["query"].lower()] = count.get(pair["query"].lower(), 0) + 1
    pairs = [p for p in pairs if count[p["query"].lower()] == 1]
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(pairs))
    return pairs


def file_pairs(lang: str, package: build.Package, rel: str, blanked: bytes, documented: list) -> list[dict]:
    """The pairs of one blanked file: each documented function with the file's import lines."""
    lines = blanked.decode("utf-8", "replace").split("\n")
    imports = import_lines("\n".join(lines[:HEAD_LINES]))
    return [{"crate": f"{lang}:{package.slug}", "lang": lang, "query": doc.query, "path": rel,
             "name": doc.name, "imports": imports,
             "body": "\n".join(lines[doc.start_line - 1:doc.end_line])[:MAX_BODY_CHARS]}
            for doc in documented]


def lode_docs_pairs(lang: str, package: build.Package, root: Path) -> list[dict]:
    """Issue 43's languages: the documented functions lode-syntax finds, blanked as the
    benchmark blanks them (build.blank_with_lode_docs writes the copies to a scratch folder)."""
    pairs = []
    with tempfile.TemporaryDirectory(prefix="lode-pairs-") as scratch:
        sources = [(path, Path(scratch) / path.relative_to(root))
                   for path in build.source_files(package, root)]
        for target, documented in build.blank_with_lode_docs(lang, sources):
            if documented:
                rel = (Path(package.slug) / target.relative_to(scratch)).as_posix()
                pairs.extend(file_pairs(lang, package, rel, target.read_bytes(), documented))
    return pairs


def parsed_pairs(lang: str, package: build.Package, root: Path, parser) -> list[dict]:
    """Issue 27's languages: the documented functions build.py's tree-sitter extractors find."""
    pairs = []
    for path in build.source_files(package, root):
        rel = (Path(package.slug) / path.relative_to(root)).as_posix()
        try:
            blanked, documented = build.process_file(lang, parser, path.read_bytes())
        except ValueError:
            continue
        if documented:
            pairs.extend(file_pairs(lang, package, rel, blanked, documented))
    return pairs


def parser_for(lang: str):
    """build.py's tree-sitter parser, or None for issue 43's languages (lode-syntax parses)."""
    return None if lang in build.lode_docs.LANGS else build.parser_for(lang)


def language_pairs(lang: str, per_package: int, seed: int) -> list[dict]:
    """The pairs of one language, at most `per_package` from each package (a seeded sample),
    so one large package (django, sympy, x/tools) does not dominate its language."""
    parser = parser_for(lang)
    rng = random.Random(seed)
    out = []
    for package in packages_for_training(lang):
        pairs = package_pairs(lang, package, parser)
        if len(pairs) > per_package:
            pairs = rng.sample(pairs, per_package)
        out.extend(pairs)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lang", action="append", choices=LANGS)
    ap.add_argument("--per-package", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    for lang in a.lang or LANGS:
        parser = parser_for(lang)
        total = 0
        for package in packages_for_training(lang):
            n = len(package_pairs(lang, package, parser))
            total += min(n, a.per_package)
            print(f"{lang:11} {package.slug:40} {n:6}")
        print(f"{lang:11} {'(all, capped)':40} {total:6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
