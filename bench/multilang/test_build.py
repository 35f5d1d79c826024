#!/usr/bin/env python3
"""Tests of build.py's per-language extraction and blanking on tiny fixtures, with the real
tree-sitter grammars: the query is the doc's first sentence, the gold range is the function's,
the blanked text keeps every line, parses no worse, and no longer holds the query.

    target/test-tools/bench-venv/bin/python bench/multilang/test_build.py
(scripts/test.sh runs it; scripts/install-test-tools.sh makes the virtualenv.)
"""
from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build  # noqa: E402

FIXTURES = {
    "python": (
        b'import os\n\n'
        b'class Shape:\n'
        b'    @property\n'
        b'    def area(self):\n'
        b'        """Compute the area of the shape in square units.\n\n'
        b'        More text that is not the query.\n'
        b'        """\n'
        b'        return 0\n\n'
        b'def only_doc():\n'
        b'    """Return nothing at all, ever, for anyone."""\n',
        [("area", 4, 10, "Compute the area of the shape in square units"),
         ("only_doc", 12, 13, "Return nothing at all, ever, for anyone")],
    ),
    "javascript": (
        b'/**\n'
        b' * Merges two sorted arrays into one {@link Array}.\n'
        b' * @param {Array} a\n'
        b' */\n'
        b'function mergeSorted(a, b) {\n'
        b'  return a.concat(b).sort();\n'
        b'}\n'
        b'/** Adds one to every number in the list. */\n'
        b'var addOne = curry(function addOne(list) { return list.map(x => x + 1); });\n',
        [("mergeSorted", 5, 7, "Merges two sorted arrays into one Array"),
         ("addOne", 9, 9, "Adds one to every number in the list")],
    ),
    "typescript": (
        b'/**\n'
        b' * Parses a duration string into milliseconds.\n'
        b' */\n'
        b'export function parse(text: string): number;\n'
        b'export function parse(text: string, unit: string): number;\n'
        b'export function parse(text: string, unit?: string): number {\n'
        b'  return Number(text);\n'
        b'}\n',
        [("parse", 4, 8, "Parses a duration string into milliseconds")],
    ),
    "go": (
        b'package demo\n\n'
        b'// Reader wraps a stream.\n'
        b'type Reader struct{}\n\n'
        b'// Next returns the next token from the underlying stream.\n'
        b'// It blocks until one is ready.\n'
        b'func (r *Reader) Next() string {\n'
        b'\treturn ""\n'
        b'}\n',
        [("Next", 8, 10, "Returns the next token from the underlying stream")],
    ),
    "rust": (
        b'/// Counts the words of a sentence, splitting on whitespace.\n'
        b'///\n'
        b'/// # Examples\n'
        b'#[inline]\n'
        b'pub fn count_words(text: &str) -> usize {\n'
        b'    text.split_whitespace().count()\n'
        b'}\n',
        [("count_words", 4, 7, "Counts the words of a sentence, splitting on whitespace")],
    ),
}


class Extraction(unittest.TestCase):
    def assert_blanked(self, parser, source: bytes, blanked: bytes, expected) -> None:
        """Same lines, parses no worse, and no query is left in the text."""
        self.assertEqual(blanked.count(b"\n"), source.count(b"\n"))
        self.assertLessEqual(build.errors(parser.parse(blanked)), build.errors(parser.parse(source)))
        text = build.normalize(blanked.decode())
        for _, _, _, query in expected:
            self.assertNotIn(build.normalize(query), text)

    def test_every_language(self):
        for lang, (source, expected) in FIXTURES.items():
            with self.subTest(lang=lang):
                parser = build.parser_for(lang)
                blanked, documented = build.process_file(lang, parser, source)
                got = [(d.name, d.start_line, d.end_line, d.query) for d in documented]
                self.assertEqual(sorted(got), sorted(expected))
                self.assert_blanked(parser, source, blanked, expected)
                # The code itself is untouched: every non-doc line is the same.
                for before, after in zip(source.split(b"\n"), blanked.split(b"\n")):
                    if after.strip() and after.strip() != b'""':
                        self.assertEqual(before, after)

    def test_keep_doc_rest_blanks_only_the_query(self):
        rests = {"go": b"It blocks until one is ready.", "rust": b"# Examples",
                 "typescript": None, "javascript": None}  # its first doc has a {@link}: whole
        for lang, (source, expected) in FIXTURES.items():
            with self.subTest(lang=lang):
                parser = build.parser_for(lang)
                blanked, documented = build.process_file(lang, parser, source, keep_doc_rest=True)
                self.assertEqual(len(documented), len(expected))
                self.assert_blanked(parser, source, blanked, expected)
                if rests.get(lang):
                    self.assertIn(rests[lang], blanked)
        # A query whose words the doc does not hold in order (markup removed) blanks the whole doc.
        source = b'/** Merges into one {@link Array} quickly, always. More text here. */\nfunction m(a) {}\n'
        blanked, documented = build.process_file("javascript", build.parser_for("javascript"), source, True)
        self.assertEqual([d.query for d in documented], ["Merges into one Array quickly, always"])
        self.assertNotIn(b"More text", blanked)

    def test_an_ambiguous_or_short_doc_is_not_a_query(self):
        self.assertIsNone(build.first_sentence(["Does it."]))
        self.assertIsNone(build.first_sentence(["@param x the thing"]))
        self.assertEqual(build.first_sentence(["See the [docs](http://x) for `foo` usage here."]),
                         None)
        self.assertEqual(build.first_sentence(["Uses :func:`os.path.join` to build the path. More."]),
                         "Uses os.path.join to build the path")

    def test_the_package_list_parses_and_has_every_language(self):
        packages = build.read_packages(build.HERE / "packages.txt")
        self.assertEqual({p.lang for p in packages}, set(build.LANGS))
        self.assertEqual(len({(p.lang, p.name) for p in packages}), len(packages))
        train = build.read_packages(build.HERE / "packages.txt", "train")
        self.assertEqual({p.lang for p in train}, set(build.LANGS))
        # Nothing that fits weights is evaluated on.
        self.assertFalse({p.name for p in train} & {p.name for p in packages})


if __name__ == "__main__":
    unittest.main()
