#!/usr/bin/env python3
"""Tests of heads.py: its head must be the text lode embeds (embed/text.rs's chunk_head_text,
the cases of heads.rs's test), and a head cosine must move a candidate as hybrid.rs does.

    python3 bench/multilang/test_heads.py
(scripts/test.sh runs it; standard library only, the table is not loaded.)
"""
from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import heads  # noqa: E402


class HeadText(unittest.TestCase):
    def test_the_head_is_the_symbol_the_scope_and_the_first_line(self):
        text = "\n   def read_all(self, size):\n        return self.buffer[:size]\n"
        self.assertEqual(heads.head_text("symbol-scope-line", "read_all", ["class Reader"], text),
                         "read_all class Reader def read_all(self, size):")
        self.assertEqual(heads.head_text("symbol-scope-line", None, [], ""), "")
        self.assertEqual(heads.head_text("symbol-scope-line", None, [], "x = 1\ny = 2"), "x = 1")

    def test_the_other_views(self):
        text = "@cached\ndef area(r):\n    return r * r\n"
        self.assertEqual(heads.head_text("symbol", "area", ["mod"], text), "area")
        self.assertEqual(heads.head_text("line", "area", ["mod"], text), "@cached")
        self.assertEqual(heads.head_text("naming-line", "area", [], text), "def area(r):")
        self.assertEqual(heads.head_text("symbol-line", "area", [], text), "area @cached")
        with self.assertRaises(ValueError):
            heads.head_text("body", "area", [], text)


class WithHeads(unittest.TestCase):
    def row(self):
        # BM25 and the table both put "b" a little above "a"; "a" is the hit.
        return {"query": "q",
                "lexical": [["b", 10.0, False], ["a", 9.5, True]],
                "semantic": [["b", 0.52, False], ["a", 0.51, True]]}

    def test_without_heads_the_lists_decide(self):
        flags = heads.with_heads(self.row(), "python", 0.0, lambda key: None)
        self.assertEqual(flags, [False, True])

    def test_a_clearly_nearer_head_lifts_its_chunk(self):
        cosines = {"a": 0.6, "b": 0.1}
        flags = heads.with_heads(self.row(), "python", 0.3, cosines.get)
        self.assertEqual(flags, [True, False])

    def test_a_candidate_without_a_head_is_neutral(self):
        flags = heads.with_heads(self.row(), "python", 0.3, {"b": 0.1}.get)
        self.assertEqual(flags, [False, True])


if __name__ == "__main__":
    unittest.main()
