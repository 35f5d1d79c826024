#!/usr/bin/env python3
"""Tests of reference.py, issue 27's plain-BM25 reference: every function of a file becomes one
document spanning the lines build.py gives a gold function (real tree-sitter grammars), the two
tokenizers split as documented, and BM25 ranks by term rarity and document length.

    target/test-tools/bench-venv/bin/python bench/multilang/test_reference.py
(scripts/test.sh runs it; scripts/install-test-tools.sh makes the virtualenv.)
"""
from __future__ import annotations

import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build  # noqa: E402
import reference  # noqa: E402

SOURCES = {
    "python": (
        b'class Shape:\n'
        b'    @property\n'
        b'    def area(self):\n'
        b'        def inner():\n'
        b'            return 1\n'
        b'        return inner()\n',
        {(2, 6), (4, 5)},
    ),
    "javascript": (
        b'export function merge(a, b) {\n'
        b'  return a;\n'
        b'}\n'
        b'const twice = (x) => x * 2;\n'
        b'class Box {\n'
        b'  open() {\n'
        b'    return 1;\n'
        b'  }\n'
        b'}\n'
        b'module.exports.shut = function () {};\n'
        b'const answer = 42;\n',
        {(1, 3), (4, 4), (6, 8), (10, 10)},
    ),
    "typescript": (
        b'export function pick(a: string): string;\n'
        b'export function pick(a: number): number;\n'
        b'export function pick(a: any): any {\n'
        b'  return a;\n'
        b'}\n'
        b'interface Door {\n'
        b'  open(): void;\n'
        b'}\n',
        # each signature alone, and with the rest of its overload set; the interface's method
        {(1, 1), (1, 5), (2, 2), (2, 5), (3, 5), (7, 7)},
    ),
    "go": (
        b'package box\n\n'
        b'func Open() int {\n'
        b'\treturn 1\n'
        b'}\n\n'
        b'func (b *Box) Shut() {\n'
        b'}\n',
        {(3, 5), (7, 8)},
    ),
    "rust": (
        b'#[inline]\n'
        b'#[must_use]\n'
        b'fn open() -> u32 {\n'
        b'    1\n'
        b'}\n'
        b'impl Door {\n'
        b'    fn shut(&self) {}\n'
        b'}\n',
        {(1, 5), (7, 7)},
    ),
}


class FunctionSpans(unittest.TestCase):
    def test_every_function_spans_the_lines_a_gold_would(self):
        for lang, (source, expected) in SOURCES.items():
            with self.subTest(lang=lang):
                tree = build.parser_for(lang).parse(source)
                self.assertEqual(set(reference.function_spans(lang, tree)), expected)

    def test_functions_of_reads_only_the_languages_files_with_their_text(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "pkg").mkdir()
            (root / "pkg" / "door.go").write_bytes(SOURCES["go"][0])
            (root / "pkg" / "notes.md").write_text("func Ignored() {}\n")
            found = reference.functions_of("go", root)
        self.assertEqual([(f.path, f.start_line, f.end_line) for f in found],
                         [("pkg/door.go", 3, 5), ("pkg/door.go", 7, 8)])
        self.assertEqual(found[1].text, "func (b *Box) Shut() {\n}")

    def test_issue_43_languages_take_every_function_lode_syntax_finds(self):
        # Java through lode-syntax (the doc_spans example): methods and constructors, an
        # annotation inside the range, the class and its field not documents.
        source = (b'package demo;\n'
                  b'class Door {\n'
                  b'    int width;\n'
                  b'    Door() {}\n'
                  b'    @Override\n'
                  b'    public String toString() {\n'
                  b'        return "";\n'
                  b'    }\n'
                  b'}\n')
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "pkg").mkdir()
            (root / "pkg" / "Door.java").write_bytes(source)
            (root / "pkg" / "Door.txt").write_bytes(source)
            found = reference.functions_of("java", root)
        self.assertEqual([(f.path, f.start_line, f.end_line) for f in found],
                         [("pkg/Door.java", 4, 4), ("pkg/Door.java", 5, 8)])
        self.assertTrue(found[1].text.startswith("    @Override\n    public String toString()"))


class Tokenize(unittest.TestCase):
    def test_plain_keeps_identifiers_whole(self):
        self.assertEqual(reference.tokenize("def get_user(self): return getUserName()"),
                         ["def", "get_user", "self", "return", "getusername"])

    def test_split_identifiers_splits_snake_and_camel_case(self):
        self.assertEqual(reference.tokenize("get_user getUserName HTTPServer x2Y", split_identifiers=True),
                         ["get", "user", "get", "user", "name", "httpserver", "x2", "y"])


class Bm25(unittest.TestCase):
    def test_rare_terms_outweigh_common_ones(self):
        index = reference.Bm25([["parse", "config"], ["parse", "file"], ["parse", "url"], ["write", "file"]])
        self.assertEqual(index.top(["parse", "url"], 2), [2, 0])

    def test_shorter_document_wins_on_equal_counts(self):
        index = reference.Bm25([["cache"] + ["pad"] * 20, ["cache", "pad"], ["other"]])
        self.assertEqual(index.top(["cache"], 10), [1, 0])

    def test_unknown_terms_find_nothing(self):
        self.assertEqual(reference.Bm25([["a"]]).top(["zzz"], 10), [])


if __name__ == "__main__":
    unittest.main(verbosity=1)
