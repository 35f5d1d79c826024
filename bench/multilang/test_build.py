#!/usr/bin/env python3
"""Tests of build.py's per-language extraction and blanking on tiny fixtures, with the real
tree-sitter grammars: the query is the doc's first sentence, the gold range is the function's,
the blanked text keeps every line, parses no worse, and no longer holds the query.

    target/test-tools/bench-venv/bin/python bench/multilang/test_build.py
(scripts/test.sh runs it; scripts/install-test-tools.sh makes the virtualenv.)
"""
from __future__ import annotations

import sys
import tarfile
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build  # noqa: E402
import lode_docs  # noqa: E402

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

# Issue 43's languages: the docs are the ones lode-syntax attaches (lode_docs.py, through the
# doc_spans example), each language's markup removed from the query.
LODE_FIXTURES = {
    "java": ("Ring.java",
        b'package demo;\n\n'
        b'public class Ring {\n'
        b'    /**\n'
        b'     * Returns the {@code size} of the ring buffer in <b>bytes</b>.\n'
        b'     * <p>Never negative.\n'
        b'     * @return the size\n'
        b'     */\n'
        b'    @Override\n'
        b'    public int size() {\n'
        b'        return 0;\n'
        b'    }\n\n'
        b'    /** {@inheritDoc} */\n'
        b'    public String toString() { return ""; }\n'
        b'}\n',
        [("size", 9, 12, "Returns the size of the ring buffer in bytes")]),
    "c": ("adler.c",
        b'#include <stddef.h>\n\n'
        b'/* adler32_update - fold the bytes of a buffer into a running checksum.\n'
        b' * Returns the new checksum. */\n'
        b'unsigned adler32_update(unsigned sum, const char *buf, size_t len)\n'
        b'{\n'
        b'    return sum + len;\n'
        b'}\n\n'
        b'/* Copyright 2024 nobody, all rights reserved here */\n'
        b'static int helper(void) { return 1; }\n',
        [("adler32_update", 5, 8, "Fold the bytes of a buffer into a running checksum")]),
    "cpp": ("shape.hpp",
        b'namespace geo {\n'
        b'/// \\brief Computes the \\p area of a polygon given its vertices.\n'
        b'/// \\param points the vertices\n'
        b'template <typename T>\n'
        b'T area(const T* points) {\n'
        b'    return points[0];\n'
        b'}\n'
        b'}\n',
        [("area", 4, 7, "Computes the area of a polygon given its vertices")]),
    "csharp": ("Cache.cs",
        b'namespace Demo {\n'
        b'    public class Cache {\n'
        b'        /// <summary>\n'
        b'        /// Removes the entry for <paramref name="key"/> from the <see cref="T:Demo.Cache"/> store.\n'
        b'        /// </summary>\n'
        b'        [Obsolete]\n'
        b'        public void Evict(string key) {\n'
        b'        }\n'
        b'    }\n'
        b'}\n',
        [("Evict", 6, 8, "Removes the entry for key from the Cache store")]),
    "ruby": ("pool.rb",
        b'module Net\n'
        b'  class Pool\n'
        b'    # Checks a +connection+ back into the pool for _later_ reuse by others.\n'
        b'    #\n'
        b'    # @param conn [Connection]\n'
        b'    def checkin(conn)\n'
        b'      @free << conn\n'
        b'    end\n\n'
        b'    # :nodoc:\n'
        b'    def internal_thing_nobody_calls; end\n'
        b'  end\n'
        b'end\n',
        [("checkin", 6, 8, "Checks a connection back into the pool for later reuse by others")]),
    "php": ("Slug.php",
        b'<?php\n'
        b'namespace App;\n\n'
        b'class Slug\n'
        b'{\n'
        b'    /**\n'
        b'     * Turns a title into a lowercase URL slug with dashes.\n'
        b'     *\n'
        b'     * @param string $title\n'
        b'     */\n'
        b'    public function make(string $title): string\n'
        b'    {\n'
        b'        return strtolower($title);\n'
        b'    }\n'
        b'}\n',
        [("make", 11, 14, "Turns a title into a lowercase URL slug with dashes")]),
}


class LodeLanguages(unittest.TestCase):
    """Issue 43's languages, through lode-syntax (the doc_spans example binary)."""

    def test_every_language(self):
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            for lang, (name, source, expected) in LODE_FIXTURES.items():
                with self.subTest(lang=lang):
                    original = root / "in" / lang / name
                    original.parent.mkdir(parents=True)
                    original.write_bytes(source)
                    target = root / "out" / lang / name
                    [(written, documented)] = build.blank_with_lode_docs(lang, [(original, target)])
                    self.assertEqual(written, target)
                    got = [(d.name, d.start_line, d.end_line, d.query) for d in documented]
                    self.assertEqual(got, expected)
                    blanked = target.read_bytes()
                    self.assertEqual(blanked.count(b"\n"), source.count(b"\n"))
                    text = build.normalize(blanked.decode())
                    for *_, query in expected:
                        self.assertNotIn(build.normalize(query), text)
                    # Only doc comments were blanked: every other line is the same.
                    for before, after in zip(source.split(b"\n"), blanked.split(b"\n")):
                        if after.strip():
                            self.assertEqual(before, after)
                    # The blanked copy parses no worse (doc_spans counts error nodes).
                    [before, after] = lode_docs.doc_spans([original, target])
                    self.assertEqual(before["language"], lang)
                    self.assertLessEqual(after["errors"], before["errors"])

    def test_a_file_lode_reads_as_another_language_is_left_out(self):
        with tempfile.TemporaryDirectory() as scratch:
            header = Path(scratch) / "vec.h"
            header.write_bytes(b'namespace v {\nclass Vec { public: int n; };\n}\n')
            self.assertEqual(build.blank_with_lode_docs("c", [(header, Path(scratch) / "o" / "vec.h")]), [])

    def test_inner_archives_of_source_packages(self):
        self.assertTrue(build.is_inner_archive(Path("usr/src/glibc/glibc-2.36.tar.xz")))
        self.assertTrue(build.is_inner_archive(Path("usr/src/xorg-server.tar.xz")))
        self.assertTrue(build.is_inner_archive(Path("usr/lib/jvm/openjdk-17/lib/src.zip")))
        self.assertFalse(build.is_inner_archive(Path("usr/src/bazel/third_party/x/y/data.zip")))
        self.assertFalse(build.is_inner_archive(Path("usr/share/doc/pkg/changelog.gz")))
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            inner = root / "usr" / "src" / "lib.tar.gz"
            inner.parent.mkdir(parents=True)
            member = root / "lib" / "a.c"
            member.parent.mkdir()
            member.write_bytes(b"int a;\n")
            with tarfile.open(inner, "w:gz") as tar:
                tar.add(member, arcname="lib-1.0/a.c")
            build.unpack_inner_archives(root)
            self.assertEqual((root / "usr/src/lib.tar.gz.d/lib-1.0/a.c").read_bytes(), b"int a;\n")
            self.assertFalse(inner.exists())

    def test_doc_markup(self):
        self.assertEqual(build.first_sentence(lode_docs.doc_text_lines("java", [
            "/** Uses {@link java.util.Map#get(Object) get} and {@link Foo#bar} here. */"])),
            "Uses get and Foo.bar here")
        self.assertEqual(lode_docs.doc_text_lines("php", ["/** {@inheritdoc} */"]), [])
        self.assertEqual(lode_docs.strip_leading_name(["parse_port() - reads a port number"], "parse_port"),
                         ["Reads a port number"])
        self.assertEqual(lode_docs.strip_leading_name(["Parse returns the port"], "Parse"), ["Returns the port"])
        self.assertEqual(lode_docs.strip_leading_name(["Parse the port number"], "Parse"),
                         ["Parse the port number"])


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
        self.assertEqual(len({(p.lang, p.slug) for p in packages}), len(packages))
        train = build.read_packages(build.HERE / "packages.txt", "train")
        self.assertEqual({p.lang for p in train}, set(build.LANGS))
        # Nothing that fits weights is evaluated on: a package in both splits (a JDK) is there
        # by directories, none of them in both or inside another.
        for t in train:
            for e in packages:
                if (t.lang, t.name) != (e.lang, e.name):
                    continue
                self.assertTrue(t.subdir and e.subdir, t.name)
                self.assertFalse(t.subdir == e.subdir or t.subdir.startswith(e.subdir + "/")
                                 or e.subdir.startswith(t.subdir + "/"), t.subdir)


if __name__ == "__main__":
    unittest.main()
