#!/usr/bin/env python3
"""Builds the per-language doc-text -> function retrieval sets (issue 27).

For each language of bench/multilang/packages.txt (python, javascript, typescript, go, rust,
and issue 43's java, c, cpp, csharp, ruby, php):
  1. fetch each pinned package into bench/corpus/multilang/<lang>/_dl (cached; PyPI sdists with
     pip, npm tarballs with npm pack, Debian golang-*-dev packages with apt-get download, Rust
     crates from bench/corpus/rust-vendor);
  2. copy the package's source files of that language (no tests, no bundles, no minified or
     generated files) into bench/out/multilang/<lang>/corpus/<package>/;
  3. parse each file with tree-sitter and find every function or method with a doc text:
     a Python docstring, a JSDoc/TSDoc block before the declaration, Go `//` doc lines, Rust
     `///` lines. The query is the doc's first sentence (markup removed; a Go doc's leading
     function name dropped, since Go docs start with it by convention); the gold is the
     function's file and line range;
  4. blank every doc text in the copy: the characters become spaces (a Python docstring becomes
     `""` followed by its line breaks), so line numbers stay and the file still parses;
  5. drop queries of fewer than 4 words, queries whose text occurs twice (ambiguous gold), and
     queries whose text still occurs anywhere in the blanked corpus; then take a seeded sample,
     at most --per-package from each package and --max-queries in all, written to
     bench/out/multilang/<lang>/queries.jsonl.

Issue 43's languages take steps 3 and 4 from lode-syntax instead (lode_docs.py, through the
`doc_spans` example of server/syntax): every function and method with the doc comments lode
attaches to it (Javadoc, XML doc `///`, Doxygen or plain comments in C and C++, YARD/RDoc `#`
lines, PHPDoc), the gold being the definition's own lines as lode draws them; a file lode reads
as another language is left out, and a copy whose blanking adds parse errors is kept as it was,
with no query. Step 5 looks a candidate's text up in the corpus only until its package's share
is full (their corpora are larger), so "unambiguous" in their summary counts texts that occur
once among the candidates.

    bench/multilang/build.py [--lang python ...] [--max-queries 400] [--per-package 60]
                             [--seed 27] [--check FILE...]

Needs the tree-sitter grammars from PyPI: bench/multilang/run.sh makes the virtualenv
(target/bench-venv) from bench/multilang/requirements.txt.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lode_docs  # noqa: E402

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
ROOT = BENCH.parent
CORPUS = BENCH / "corpus" / "multilang"
VENDOR = BENCH / "corpus" / "rust-vendor"
OUT = BENCH / "out" / "multilang"
# Issue 27's five languages, whose docs build.py reads with the PyPI grammars, then issue 43's,
# whose docs lode-syntax attaches (lode_docs.py).
LANGS = ["python", "javascript", "typescript", "go", "rust", *lode_docs.LANGS]
MIN_WORDS = 4
MAX_WORDS = 60
MAX_FILE_BYTES = 300_000

EXTENSIONS = {
    "python": (".py",),
    "javascript": (".js", ".mjs", ".cjs"),
    "typescript": (".ts", ".mts", ".cts"),
    "go": (".go",),
    "rust": (".rs",),
    **lode_docs.EXTENSIONS,
}
SKIP_DIRS = {
    "test", "tests", "testing", "__tests__", "spec", "specs", "dist", "build", "bundles",
    "node_modules", "examples", "example", "benches", "benchmarks", "docs", "doc", "fixtures",
    "testdata", "umd", "min", "locale", "_dl",
}


def parser_for(lang: str):
    import tree_sitter as ts
    if lang == "python":
        import tree_sitter_python as grammar
        language = ts.Language(grammar.language())
    elif lang == "javascript":
        import tree_sitter_javascript as grammar
        language = ts.Language(grammar.language())
    elif lang == "typescript":
        import tree_sitter_typescript as grammar
        language = ts.Language(grammar.language_typescript())
    elif lang == "go":
        import tree_sitter_go as grammar
        language = ts.Language(grammar.language())
    else:
        import tree_sitter_rust as grammar
        language = ts.Language(grammar.language())
    return ts.Parser(language)


# ---------------------------------------------------------------------------------------------
# Packages


@dataclass
class Package:
    lang: str
    source: str
    name: str
    version: str
    subdir: str | None = None
    # A package listed more than once (a JDK's modules, one row each) is told apart by the
    # last part of its dir: openjdk-17-source-util.
    shared: bool = False

    @property
    def archive_slug(self) -> str:
        """The name its download and unpacked copy go by (one per package and version)."""
        return self.name.replace("@", "").replace("/", "-")

    @property
    def slug(self) -> str:
        """The name of its folder in a set's corpus."""
        if self.shared and self.subdir:
            return f"{self.archive_slug}-{Path(self.subdir).name}"
        return self.archive_slug


def read_packages(path: Path, split: str = "eval") -> list[Package]:
    rows = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        lang, source, name, version, row_split, *subdir = line.split()
        rows.append((row_split, Package(lang, source, name, version, subdir[0] if subdir else None)))
    listed: dict[tuple[str, str], int] = {}
    for _, package in rows:
        listed[(package.lang, package.name)] = listed.get((package.lang, package.name), 0) + 1
    for _, package in rows:
        package.shared = listed[(package.lang, package.name)] > 1
    return [package for row_split, package in rows if row_split == split]


def run(cmd: list[str], cwd: Path) -> None:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"build.py: {' '.join(cmd)} failed:\n{done.stderr[-2000:]}")


def sdist_in(downloads: Path, package: Package) -> Path | None:
    """The package's sdist among `downloads`: PyPI normalises names (`PyYAML`, `pyyaml`,
    `python_dateutil`), so compare them case-insensitively with `-`, `_` and `.` alike."""
    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()
    wanted = f"{norm(package.name)}-{package.version}"
    for archive in sorted(downloads.glob("*.tar.gz")):
        stem = archive.name.removesuffix(".tar.gz")
        name, _, version = stem.rpartition("-")
        if f"{norm(name)}-{version}" == wanted:
            return archive
    return None


def fetch(package: Package) -> Path:
    """The unpacked package's directory (fetched and unpacked once)."""
    if package.source == "vendor":
        path = VENDOR / package.name
        if not path.is_dir():
            sys.exit(f"build.py: {path} is missing; run bench/corpus.sh first")
        return path
    downloads = CORPUS / package.lang / "_dl"
    downloads.mkdir(parents=True, exist_ok=True)
    unpacked = CORPUS / package.lang / f"{package.archive_slug}-{package.version}"
    if unpacked.is_dir():
        return unpacked
    if package.source == "pypi":
        archive = sdist_in(downloads, package)
        if archive is None:
            run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                 f"{package.name}=={package.version}", "-d", str(downloads)], downloads)
            archive = sdist_in(downloads, package)
        if archive is None:
            sys.exit(f"build.py: pip downloaded no sdist of {package.name} {package.version}")
    elif package.source == "npm":
        archive = downloads / f"{package.archive_slug}-{package.version}.tgz"
        if not archive.exists():
            run(["npm", "pack", f"{package.name}@{package.version}", "--silent"], downloads)
    elif package.source == "deb":
        archive = next(downloads.glob(f"{package.name}_[0-9]*.deb"), None)
        if archive is None:
            run(["apt-get", "download", f"{package.name}={package.version}"], downloads)
            archive = next(downloads.glob(f"{package.name}_[0-9]*.deb"))
    else:
        sys.exit(f"build.py: unknown source {package.source!r}")
    unpacked.mkdir(parents=True)
    if package.source == "deb":
        run(["dpkg-deb", "-x", str(archive), str(unpacked)], downloads)
        unpack_inner_archives(unpacked)
    else:
        with tarfile.open(archive) as tar:
            tar.extractall(unpacked, filter="data")
    return unpacked


def is_inner_archive(relative: Path) -> bool:
    """A Debian -source package's sources, shipped as one archive: usr/src/<name>.tar.xz,
    usr/src/<dir>/<name>.tar.xz (glibc-source, xorg-server-source, openvswitch-source), or a
    JDK's lib/src.zip (openjdk-17-source, openjfx-source)."""
    parts = relative.parts
    if relative.name == "src.zip":
        return True
    in_usr_src = parts[:2] == ("usr", "src") and len(parts) <= 4
    return in_usr_src and re.search(r"\.(tar\.(xz|gz|bz2)|tgz|zip)$", relative.name) is not None


def unpack_inner_archives(unpacked: Path) -> None:
    """Unpacks each inner archive (is_inner_archive) into `<archive name>.d/` beside it, so a
    package's `dir` column can name a folder inside it."""
    for archive in sorted(p for p in unpacked.rglob("*") if p.is_file()):
        if not is_inner_archive(archive.relative_to(unpacked)):
            continue
        target = archive.parent / f"{archive.name}.d"
        target.mkdir()
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as bundle:
                for member in bundle.infolist():
                    path = Path(member.filename)
                    if path.is_absolute() or ".." in path.parts:
                        sys.exit(f"build.py: {archive} holds an unsafe path {member.filename!r}")
                bundle.extractall(target)
        else:
            with tarfile.open(archive) as tar:
                tar.extractall(target, filter="data")
        archive.unlink()


def source_files(package: Package, root: Path) -> list[Path]:
    files = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.suffix not in EXTENSIONS[package.lang]:
            continue
        parts = set(p.lower() for p in path.relative_to(root).parts[:-1])
        name = path.name
        if parts & SKIP_DIRS or name.endswith((".d.ts", ".min.js", "_test.go", ".test.ts", ".test.js",
                                                ".spec.ts", ".spec.js", "_pb.go")):
            continue
        if package.lang == "python" and (name.startswith("test_") or name == "conftest.py"):
            continue
        if path.stat().st_size > MAX_FILE_BYTES:
            continue
        files.append(path)
    return files


# ---------------------------------------------------------------------------------------------
# Doc text


MARKUP = [
    (re.compile(r"\{@link(?:code|plain)?\s+([^}|\s]+)(?:[\s|][^}]*)?\}"), r"\1"),
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),
    (re.compile(r"\[`?([^\]`]+)`?\]"), r"\1"),
    (re.compile(r":[a-z]+:`~?([^`]+)`"), r"\1"),
    (re.compile(r"`+([^`]*)`+"), r"\1"),
    (re.compile(r"\*\*?([^*]+)\*\*?"), r"\1"),
]


def first_sentence(lines: list[str]) -> str | None:
    paragraph = []
    for line in lines:
        text = line.strip()
        if not text:
            if paragraph:
                break
            continue
        if text.startswith(("@", "#", ">>>", "```", ":param", ":return", "Args:", "Returns:",
                            "Example", "Usage", "..")):
            break
        paragraph.append(text)
    if not paragraph:
        return None
    text = " ".join(paragraph)
    for pattern, replacement in MARKUP:
        text = pattern.sub(replacement, text)
    match = re.search(r"(?<=[a-z0-9)\]'\"])[.!?](\s|$)", text)
    if match:
        text = text[: match.start()]
    text = re.sub(r"\s+", " ", text).strip().rstrip(".:;,")
    words = text.split()
    if len(words) < MIN_WORDS or len(words) > MAX_WORDS:
        return None
    if text.lower().startswith(("todo", "deprecated", "internal", "note:", "see ", "alias")):
        return None
    return text


def python_doc_lines(raw: str) -> list[str]:
    body = re.sub(r"^[rRuUbBfF]*('''|\"\"\"|'|\")", "", raw)
    body = re.sub(r"('''|\"\"\"|'|\")$", "", body)
    lines = body.split("\n")
    return lines


def jsdoc_lines(raw: str) -> list[str]:
    body = raw[3:-2] if raw.startswith("/**") and raw.endswith("*/") else raw
    return [re.sub(r"^\s*\*\s?", "", line) for line in body.split("\n")]


def line_comment_lines(raws: list[str], prefix: str) -> list[str]:
    return [raw[len(prefix):] for raw in raws]


# ---------------------------------------------------------------------------------------------
# Finding documented functions


@dataclass
class Documented:
    name: str
    start_line: int  # 1-based, inclusive
    end_line: int
    query: str
    blanks: list[tuple[int, int, bytes]]  # byte ranges and what replaces them


def spaces_for(source: bytes, start: int, end: int) -> bytes:
    return bytes(b if b == 0x0A else 0x20 for b in source[start:end])


def name_of(node) -> str | None:
    name = node.child_by_field_name("name")
    return name.text.decode("utf-8", "replace") if name is not None else None


def with_decorators(node):
    """A Python function with its decorators: the `decorated_definition` around it, if any."""
    return node.parent if node.parent is not None and node.parent.type == "decorated_definition" else node


def first_attribute(node):
    """The first of the `#[...]` attribute items right above a Rust item (the item itself if none)."""
    first, sibling = node, node.prev_named_sibling
    while sibling is not None and sibling.type == "attribute_item":
        first, sibling = sibling, sibling.prev_named_sibling
    return first


def python_functions(tree, source: bytes) -> list[Documented]:
    found = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(reversed(node.named_children))
        if node.type != "function_definition":
            continue
        body = node.child_by_field_name("body")
        if body is None or not body.named_children:
            continue
        first = body.named_children[0]
        if first.type != "expression_statement" or not first.named_children:
            continue
        string = first.named_children[0]
        if string.type != "string":
            continue
        query = first_sentence(python_doc_lines(string.text.decode("utf-8", "replace")))
        outer = with_decorators(node)
        name = name_of(node)
        if query is None or name is None:
            continue
        newlines = source[string.start_byte:string.end_byte].count(b"\n")
        found.append(Documented(name, outer.start_point[0] + 1, outer.end_point[0] + 1, query,
                                [(string.start_byte, string.end_byte, b'""' + b"\n" * newlines)]))
    return found


JS_FUNCTIONS = {
    "function_declaration", "generator_function_declaration", "method_definition",
    "function_signature", "lexical_declaration", "variable_declaration",
    "public_field_definition", "abstract_method_signature", "method_signature",
    "expression_statement",
}
JS_FUNCTION_VALUES = {"arrow_function", "function_expression", "function", "call_expression",
                      "generator_function"}


def js_declared_name(node) -> str | None:
    if node.type in ("lexical_declaration", "variable_declaration"):
        declarators = [c for c in node.named_children if c.type == "variable_declarator"]
        if len(declarators) != 1:
            return None
        value = declarators[0].child_by_field_name("value")
        if value is None or value.type not in JS_FUNCTION_VALUES:
            return None
        return name_of(declarators[0])
    if node.type == "public_field_definition":
        value = node.child_by_field_name("value")
        if value is None or value.type not in ("arrow_function", "function_expression"):
            return None
        return name_of(node)
    if node.type == "expression_statement":
        # `exports.name = function (...) {...}`, `Foo.prototype.bar = function () {...}`
        expr = node.named_children[0] if node.named_children else None
        if expr is None or expr.type != "assignment_expression":
            return None
        left, right = expr.child_by_field_name("left"), expr.child_by_field_name("right")
        if right is None or right.type not in ("function_expression", "arrow_function", "function"):
            return None
        if left is not None and left.type == "member_expression":
            prop = left.child_by_field_name("property")
            return prop.text.decode("utf-8", "replace") if prop is not None else None
        return None
    return name_of(node)


def overload_end(signature, name: str):
    """The node that ends a TypeScript overload set: the implementation after its signatures."""
    end = signature
    sibling = signature.next_named_sibling
    while sibling is not None:
        inner = sibling.child_by_field_name("declaration") if sibling.type == "export_statement" else sibling
        if inner is None or name_of(inner) != name:
            break
        end = sibling
        if inner.type == "function_declaration":
            break
        sibling = sibling.next_named_sibling
    return end


def js_functions(tree, source: bytes) -> list[Documented]:
    found = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(reversed(node.named_children))
        if node.type != "comment" or not node.text.startswith(b"/**"):
            continue
        target = node.next_named_sibling
        if target is None or target.start_point[0] - node.end_point[0] > 1:
            continue
        if target.type == "export_statement":
            inner = target.child_by_field_name("declaration")
            if inner is None:
                continue
            target_range, target = target, inner
        else:
            target_range = target
        if target.type not in JS_FUNCTIONS:
            continue
        name = js_declared_name(target)
        if name is None:
            continue
        end = target_range.end_point[0] + 1
        if target.type == "function_signature":
            end = overload_end(target_range, name).end_point[0] + 1
        query = first_sentence(jsdoc_lines(node.text.decode("utf-8", "replace")))
        if query is None:
            continue
        found.append(Documented(name, target_range.start_point[0] + 1, end, query,
                                [(node.start_byte, node.end_byte, spaces_for(source, node.start_byte, node.end_byte))]))
    return found


def preceding_line_comments(node, prefix: bytes, skip: set[str]) -> list:
    comments = []
    line = node.start_point[0]
    sibling = node.prev_named_sibling
    while sibling is not None:
        if sibling.type in skip and sibling.end_point[0] < line:
            line = sibling.start_point[0]
            sibling = sibling.prev_named_sibling
            continue
        if sibling.type in ("comment", "line_comment") and sibling.end_point[0] >= line - 1 \
                and sibling.text.startswith(prefix) and not sibling.text.startswith(prefix + b"/"):
            comments.append(sibling)
            line = sibling.start_point[0]
            sibling = sibling.prev_named_sibling
            continue
        break
    comments.reverse()
    return comments


def go_functions(tree, source: bytes) -> list[Documented]:
    found = []
    for node in tree.root_node.named_children:
        if node.type not in ("function_declaration", "method_declaration"):
            continue
        comments = preceding_line_comments(node, b"//", set())
        name = name_of(node)
        if not comments or name is None:
            continue
        lines = line_comment_lines([c.text.decode("utf-8", "replace") for c in comments], "//")
        if lines and lines[0].strip().split(" ", 1)[0] == name:
            lines[0] = lines[0].strip().split(" ", 1)[1] if " " in lines[0].strip() else ""
        query = first_sentence(lines)
        if query is None:
            continue
        query = query[0].upper() + query[1:]
        found.append(Documented(name, node.start_point[0] + 1, node.end_point[0] + 1, query,
                                [(c.start_byte, c.end_byte, spaces_for(source, c.start_byte, c.end_byte)) for c in comments]))
    return found


def rust_functions(tree, source: bytes) -> list[Documented]:
    found = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(reversed(node.named_children))
        if node.type != "function_item":
            continue
        comments = preceding_line_comments(node, b"///", {"attribute_item"})
        name = name_of(node)
        if not comments or name is None:
            continue
        raws = [c.text.decode("utf-8", "replace").rstrip("\n") for c in comments]
        query = first_sentence(line_comment_lines(raws, "///"))
        if query is None:
            continue
        start = first_attribute(node).start_point[0] + 1
        blanks = []
        for c in comments:
            end = c.end_byte - 1 if source[c.end_byte - 1:c.end_byte] == b"\n" else c.end_byte
            blanks.append((c.start_byte, end, spaces_for(source, c.start_byte, end)))
        found.append(Documented(name, start, node.end_point[0] + 1, query, blanks))
    return found


FINDERS = {
    "python": python_functions,
    "javascript": js_functions,
    "typescript": js_functions,
    "go": go_functions,
    "rust": rust_functions,
}


def blank(source: bytes, blanks: list[tuple[int, int, bytes]]) -> bytes:
    out = bytearray(source)
    for start, end, replacement in sorted(blanks, reverse=True):
        out[start:end] = replacement
    return bytes(out)


def errors(tree) -> int:
    count = 0
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            count += 1
        if node.has_error:
            stack.extend(node.children)
    return count


@dataclass
class Candidate:
    package: str
    path: str
    doc: Documented


def first_sentence_blanks(source: bytes, doc: Documented) -> list[tuple[int, int, bytes]]:
    """Blanks for only the query's own words in the doc (the rest of the doc stays), or the
    whole doc when the query cannot be found word for word in it (markup removed from the
    query, such as a link's target, stands between its words)."""
    words = re.findall(rb"[A-Za-z0-9]+", doc.query.encode("utf-8"))
    pattern = re.compile(rb"[^A-Za-z0-9]*".join(re.escape(w) for w in words), re.IGNORECASE)
    for start, end, _ in doc.blanks:
        found = pattern.search(source, start, end) if words else None
        if found:
            return [(found.start(), found.end(), spaces_for(source, found.start(), found.end()))]
    return doc.blanks


def process_file(lang: str, parser, source: bytes, keep_doc_rest: bool = False) -> tuple[bytes, list[Documented]]:
    """The blanked text and the documented functions of one file (checked: same lines, no new
    parse errors). With keep_doc_rest only each doc's first sentence, the query, is blanked."""
    tree = parser.parse(source)
    documented = FINDERS[lang](tree, source)
    if not documented:
        return source, []
    blanked = blank(source, [b for d in documented
                             for b in (first_sentence_blanks(source, d) if keep_doc_rest else d.blanks)])
    if blanked.count(b"\n") != source.count(b"\n"):
        raise ValueError("blanking changed the line count")
    if errors(parser.parse(blanked)) > errors(tree):
        raise ValueError("blanking broke the parse")
    return blanked, documented


def normalize(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower()).strip()


def identifier_words(name: str) -> set[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).replace("_", " ")
    return {w.lower() for w in spaced.split() if len(w) > 1}


def blank_with_lode_docs(lang: str, sources: list[tuple[Path, Path]],
                         keep_doc_rest: bool = False) -> list[tuple[Path, list[Documented]]]:
    """Issue 43's languages: the documented functions of each (source, target) file by
    lode-syntax (lode_docs.py), each blanked copy written to its target. A file lode reads as
    another language (a C++ header in a C package) is left out; a copy whose blanking added
    parse errors is replaced by the original text and gives no query. Returns the targets
    written, with their documented functions."""
    records = lode_docs.doc_spans([source for source, _ in sources])
    written: list[tuple[Path, list[Documented]]] = []
    originals: dict[Path, tuple[bytes, int]] = {}
    for (source_path, target), record in zip(sources, records):
        if record["language"] != lang:
            continue
        source = source_path.read_bytes()
        documented = lode_docs.documented_in(lang, source, record)
        blanks = [b for d in documented
                  for b in (first_sentence_blanks(source, d) if keep_doc_rest else d.blanks)]
        blanked = blank(source, blanks)
        if blanked.count(b"\n") != source.count(b"\n"):
            print(f"  skipped {target}: blanking changed the line count", file=sys.stderr)
            blanked, documented = source, []
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blanked)
        originals[target] = (source, record["errors"])
        written.append((target, documented))
    checked = lode_docs.doc_spans([target for target, _ in written])
    for at, ((target, documented), record) in enumerate(zip(written, checked)):
        source, errors_before = originals[target]
        if documented and record["errors"] > errors_before:
            print(f"  skipped {target}: blanking broke the parse", file=sys.stderr)
            target.write_bytes(source)
            written[at] = (target, [])
    return written


def build(lang: str, packages: list[Package], max_queries: int, per_package: int, seed: int,
          out_root: Path = OUT, keep_doc_rest: bool = False) -> dict:
    parser = None if lang in lode_docs.LANGS else parser_for(lang)
    out = out_root / lang
    corpus = out / "corpus"
    if corpus.exists():
        shutil.rmtree(corpus)
    corpus.mkdir(parents=True)
    candidates: list[Candidate] = []
    texts: list[str] = []
    files = 0
    for package in packages:
        root = fetch(package)
        if package.subdir:
            root = root / package.subdir
        if parser is None:
            pairs = [(path, corpus / package.slug / path.relative_to(root))
                     for path in source_files(package, root)]
            for target, documented in blank_with_lode_docs(lang, pairs, keep_doc_rest):
                rel = target.relative_to(corpus)
                files += 1
                texts.append(normalize(target.read_bytes().decode("utf-8", "replace")))
                candidates.extend(Candidate(package.slug, str(rel), doc) for doc in documented)
            continue
        for path in source_files(package, root):
            rel = Path(package.slug) / path.relative_to(root)
            source = path.read_bytes()
            try:
                blanked, documented = process_file(lang, parser, source, keep_doc_rest)
            except ValueError as problem:
                print(f"  skipped {rel}: {problem}", file=sys.stderr)
                blanked, documented = source, []
            target = corpus / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blanked)
            files += 1
            texts.append(normalize(blanked.decode("utf-8", "replace")))
            candidates.extend(Candidate(package.slug, str(rel), doc) for doc in documented)
    counts: dict[str, int] = {}
    for candidate in candidates:
        key = normalize(candidate.doc.query)
        counts[key] = counts.get(key, 0) + 1
    everything = "\n".join(texts)
    rng = random.Random(seed)
    by_package: dict[str, list[Candidate]] = {}
    sample: list[Candidate] = []
    if parser is not None:
        kept = [c for c in candidates
                if counts[normalize(c.doc.query)] == 1 and normalize(c.doc.query) not in everything]
        for candidate in kept:
            by_package.setdefault(candidate.package, []).append(candidate)
        for package in sorted(by_package):
            group = by_package[package]
            rng.shuffle(group)
            sample.extend(group[:per_package])
    else:
        # Issue 43's corpora are larger (a JDK, Abseil): the text of every candidate is looked
        # for in the whole corpus only until a package's share is full, in the seeded order.
        unique = [c for c in candidates if counts[normalize(c.doc.query)] == 1]
        for candidate in unique:
            by_package.setdefault(candidate.package, []).append(candidate)
        kept = []
        for package in sorted(by_package):
            group = by_package[package]
            rng.shuffle(group)
            taken = []
            for candidate in group:
                if len(taken) == per_package:
                    break
                if normalize(candidate.doc.query) not in everything:
                    taken.append(candidate)
            sample.extend(taken)
            kept.extend(group)
    rng.shuffle(sample)
    sample = sorted(sample[:max_queries], key=lambda c: (c.path, c.doc.start_line))
    with (out / "queries.jsonl").open("w") as queries:
        for c in sample:
            words = set(re.findall(r"[a-z0-9]+", c.doc.query.lower()))
            queries.write(json.dumps({
                "query": c.doc.query,
                "package": c.package,
                "name_overlap": bool(words & identifier_words(c.doc.name)),
                "gold": {"path": c.path, "name": c.doc.name,
                         "start_line": c.doc.start_line, "end_line": c.doc.end_line},
            }) + "\n")
    summary = {"language": lang, "packages": len(packages), "files": files,
               "documented": len(candidates), "unambiguous": len(kept), "queries": len(sample),
               "per_package": {p: sum(1 for c in sample if c.package == p) for p in sorted(by_package)}}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lang", action="append", choices=LANGS)
    parser.add_argument("--max-queries", type=int, default=400)
    parser.add_argument("--per-package", type=int, default=60)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--split", choices=["eval", "train"], default="eval",
                        help="train: the packages that fit weights, into bench/out/multilang/train/")
    parser.add_argument("--keep-doc-rest", action="store_true",
                        help="blank only each doc's first sentence (the query) and keep the rest of the doc, "
                             "into bench/out/multilang/keep-rest/ (a set that can judge the comments field)")
    parser.add_argument("--packages", type=Path, default=HERE / "packages.txt")
    parser.add_argument("--check", nargs="+", metavar=("LANG", "FILE"),
                        help="print the documented functions of FILE and its blanked text (a debugging aid)")
    args = parser.parse_args()
    if args.check:
        lang, *paths = args.check
        if lang in lode_docs.LANGS:
            for path, record in zip(paths, lode_docs.doc_spans([Path(p) for p in paths])):
                for doc in lode_docs.documented_in(lang, Path(path).read_bytes(), record):
                    print(json.dumps({"name": doc.name, "lines": [doc.start_line, doc.end_line],
                                      "query": doc.query}))
            return 0
        ts_parser = parser_for(lang)
        for path in paths:
            blanked, documented = process_file(lang, ts_parser, Path(path).read_bytes())
            for doc in documented:
                print(json.dumps({"name": doc.name, "lines": [doc.start_line, doc.end_line], "query": doc.query}))
            sys.stdout.write(blanked.decode("utf-8", "replace"))
        return 0
    packages = read_packages(args.packages, args.split)
    out_root = OUT if args.split == "eval" else OUT / "train"
    if args.keep_doc_rest:
        out_root = out_root / "keep-rest"
    for lang in args.lang or LANGS:
        summary = build(lang, [p for p in packages if p.lang == lang], args.max_queries,
                        args.per_package, args.seed, out_root, args.keep_doc_rest)
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
