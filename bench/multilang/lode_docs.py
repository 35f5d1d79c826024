"""Documented functions as lode-syntax sees them (issue 43): Java, C, C++, C#, Ruby and PHP.

build.py finds Python, JavaScript, TypeScript, Go and Rust docs with the tree-sitter grammars
from PyPI. For the languages of issue 43 it asks lode-syntax itself, through the example
`server/syntax/examples/doc_spans.rs`: every definition of a file, its line range and the doc
comments lode attaches to it (the comments right above it, no blank line between; `full` in
`SymbolSpan`). This module turns those comments into a query (the doc's first sentence, with
Javadoc, XML doc, Doxygen, YARD/RDoc and PHPDoc markup removed) and the byte ranges to blank.

The example binary: LODE_DOC_SPANS, else target/release/examples/doc_spans, else
target/debug/examples/doc_spans, else built with `cargo build -p lode-syntax --example
doc_spans` (into CARGO_TARGET_DIR when set).
"""
from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

LANGS = ["java", "c", "cpp", "csharp", "ruby", "php"]
EXTENSIONS = {
    "java": (".java",),
    "c": (".c", ".h"),
    "cpp": (".cc", ".cpp", ".cxx", ".hh", ".hpp", ".hxx", ".h", ".ipp", ".tpp", ".inl"),
    "csharp": (".cs",),
    "ruby": (".rb",),
    "php": (".php",),
}
FUNCTION_KINDS = {"function", "method"}
# Comments right above a C function are not always about it: licence lines and notes to
# maintainers say nothing a user would ask for.
NOT_A_SUMMARY = ("copyright", "license", "spdx", "xxx", "fixme", "hack", "note that", "nb:",
                 "warning:")


def _target_dir() -> Path:
    return Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


def doc_spans_binary() -> Path:
    explicit = os.environ.get("LODE_DOC_SPANS")
    if explicit:
        return Path(explicit)
    for profile in ("release", "debug"):
        candidate = _target_dir() / profile / "examples" / "doc_spans"
        if candidate.is_file():
            return candidate
    done = subprocess.run(["cargo", "build", "-p", "lode-syntax", "--example", "doc_spans"],
                          cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"lode_docs.py: building the doc_spans example failed:\n{done.stderr[-2000:]}")
    return _target_dir() / "debug" / "examples" / "doc_spans"


def doc_spans(paths: list[Path]) -> list[dict]:
    """One record per path, in order (see doc_spans.rs)."""
    if not paths:
        return []
    done = subprocess.run([str(doc_spans_binary())], input="\n".join(str(p) for p in paths) + "\n",
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"lode_docs.py: doc_spans failed: {done.stderr[-2000:]}")
    records = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    if len(records) != len(paths):
        sys.exit(f"lode_docs.py: doc_spans answered {len(records)} records for {len(paths)} files")
    return records


# ---------------------------------------------------------------------------------------------
# Which comments are docs, and their text


def is_doc_comment(lang: str, text: str) -> bool:
    """Javadoc and PHPDoc are `/** */`; C#'s XML doc is `///`; Ruby's YARD and RDoc are `#`
    lines; C and C++ document with Doxygen (`/** */`, `/*! */`, `///`, `//!`) or, as most C
    code does, plain comments, so every comment lode attaches counts there."""
    if lang in ("java", "php"):
        return text.startswith("/**") and not text.startswith("/**/")
    if lang == "csharp":
        return text.startswith("///") and not text.startswith("////")
    if lang == "ruby":
        return text.startswith("#") and not text.startswith(("#!", "# frozen_string_literal",
                                                            "# -*-", "# encoding:", "#--"))
    return text.startswith(("/*", "//"))


def comment_lines(text: str) -> list[str]:
    """The text of one comment without its delimiters, line by line."""
    if text.startswith("/*"):
        body = re.sub(r"^/\*[*!]?", "", text)
        body = re.sub(r"\*+/$", "", body)
        return [re.sub(r"^\s*\*+\s?", "", line) for line in body.split("\n")]
    lines = []
    for line in text.split("\n"):
        stripped = line.strip()
        lines.append(re.sub(r"^(///?|//!|#+)\s?", "", stripped))
    return lines


XML_DOC = [
    (re.compile(r"<see\s+(?:c?ref|langword|href)\s*=\s*\"(?:[A-Z]:)?([^\"]*?)\"\s*/>"),
     lambda m: re.split(r"[.:]", m.group(1).split("(")[0].split("{")[0].split("`")[0])[-1]),
    (re.compile(r"<(?:paramref|typeparamref)\s+name\s*=\s*\"([^\"]*)\"\s*/>"), r"\1"),
    (re.compile(r"<[^>]+>"), " "),
]
JAVADOC = [
    (re.compile(r"\{@(?:code|literal|value)\s+([^}]*)\}"), r"\1"),
    (re.compile(r"\{@link(?:plain)?\s+[^}\s]*\s+([^}]+)\}"), r"\1"),
    (re.compile(r"\{@link(?:plain)?\s+#?([^}\s]+)\}"),
     lambda m: m.group(1).replace("#", ".").split("(")[0]),
    (re.compile(r"</?(?:code|tt|b|i|em|strong|var|a[^>]*|span[^>]*)>", re.IGNORECASE), ""),
]
DOXYGEN_INLINE = re.compile(r"[\\@](?:c|p|a|e|b|em|ref)\s+(\S+)")
DOXYGEN_BRIEF = re.compile(r"^\s*[\\@](?:brief|short|fn\s+\S.*$|details)\s*", re.IGNORECASE)
RDOC = [
    (re.compile(r"\+([^+\s][^+]*)\+"), r"\1"),
    (re.compile(r"(?<![\w])_([^_\s][^_]*)_(?![\w])"), r"\1"),
]


def doc_text_lines(lang: str, comments: list[str]) -> list[str]:
    """The lines of a definition's doc comments, markup removed, ready for first_sentence."""
    lines: list[str] = []
    for comment in comments:
        lines.extend(comment_lines(comment))
    if lang == "csharp":
        text = "\n".join(lines)
        summary = re.search(r"<summary>(.*?)</summary>", text, re.DOTALL)
        if summary:
            text = summary.group(1)
        elif "<" in text and re.match(r"\s*<(?:inheritdoc|include|param|returns|remarks)", text):
            return []
        for pattern, replacement in XML_DOC:
            text = pattern.sub(replacement, text)
        return html.unescape(text).split("\n")
    out = []
    for line in lines:
        if lang in ("java", "php"):
            if re.match(r"\s*<p\b|\s*<(?:ul|ol|pre|table|h\d)\b", line, re.IGNORECASE):
                out.append("")  # a paragraph break ends the first sentence's paragraph
                line = re.sub(r"^\s*<p>", "", line, flags=re.IGNORECASE)
                if not line.strip():
                    continue
            if "{@inheritDoc}" in line or "{@inheritdoc}" in line:
                return []
            for pattern, replacement in JAVADOC:
                line = pattern.sub(replacement, line)
            line = html.unescape(line)
        elif lang in ("c", "cpp"):
            if re.match(r"\s*[\\@](?!brief|short|details|c\b|p\b|a\b|e\b|b\b|em\b|ref\b)\w+", line):
                out.append("@")  # \param, @return, \note ...: the summary is over
                continue
            line = DOXYGEN_BRIEF.sub("", line)
            line = DOXYGEN_INLINE.sub(r"\1", line)
            if line.strip() in ("\\rst", "\\endrst"):
                continue
        elif lang == "ruby":
            if re.match(r"\s*:[a-z-]+:", line):  # :call-seq:, :nodoc:, :stopdoc:
                if ":nodoc:" in line:
                    return []
                out.append("@")
                continue
            for pattern, replacement in RDOC:
                line = pattern.sub(replacement, line)
        out.append(line)
    return out


def strip_leading_name(lines: list[str], name: str) -> list[str]:
    """C and C++ docs often start with the function's name (`foo - does x`, `foo(): does x`,
    `foo: does x`, `foo returns x`): drop it, as build.py does for Go."""
    for at, line in enumerate(lines):
        if not line.strip():
            continue
        match = re.match(rf"\s*{re.escape(name)}(\(\))?\s*([-:\u2014]+\s*)?", line)
        rest = line[match.end():] if match else ""
        labelled = match and (match.group(1) or match.group(2))
        verb = match and re.match(r"[a-z]+s\b", rest)
        if rest and (labelled or verb):
            lines = lines[:at] + [rest[:1].upper() + rest[1:]] + lines[at + 1:]
        break
    return lines


def documented_in(lang: str, source: bytes, record: dict) -> list:
    """The functions and methods of one file that have a doc with a usable first sentence, as
    build.py's `Documented` (the gold range is the definition's own lines, as lode draws them)."""
    from build import Documented, first_sentence, spaces_for
    found = []
    for symbol in record["symbols"]:
        if symbol["kind"] not in FUNCTION_KINDS or not symbol["docs"]:
            continue
        comments = [(start, end) for start, end in symbol["docs"]
                    if is_doc_comment(lang, source[start:end].decode("utf-8", "replace"))]
        if not comments:
            continue
        name = symbol["path"].rsplit("/", 1)[-1].rsplit("::", 1)[-1]
        lines = doc_text_lines(lang, [source[s:e].decode("utf-8", "replace") for s, e in comments])
        if lang in ("c", "cpp"):
            lines = strip_leading_name(lines, name)
        query = first_sentence(lines)
        if query is None or query.lower().startswith(NOT_A_SUMMARY):
            continue
        blanks = []
        for start, end in comments:
            while end > start and source[end - 1:end] in (b"\n", b"\r"):
                end -= 1
            blanks.append((start, end, spaces_for(source, start, end)))
        start_line, end_line = symbol["lines"]
        found.append(Documented(name, start_line, end_line, query, blanks))
    return found
