#!/usr/bin/env python3
"""Tests of fusion.py's offline rules on hand-made lists: the `standard` rule must rank as
lode's `FusionMethod::Standardised` does (server/index/src/hybrid.rs), the cases there included,
or weights fitted with it would not be the weights lode runs.

    python3 bench/multilang/test_fusion.py
(scripts/test.sh runs it.)
"""
from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fusion  # noqa: E402


def row(lexical, semantic, gold):
    """A cached row: [key, score, hit] lists, `gold` the one key that is a hit."""
    return {"query": "q",
            "lexical": [[k, s, k == gold] for k, s in lexical],
            "semantic": [[k, s, k == gold] for k, s in semantic]}


class StandardScores(unittest.TestCase):
    def test_two_candidates_keep_their_margins(self):
        # hybrid.rs's two_candidates_keep_their_margins: BM25 puts the method 2.3 times above
        # the page, the table puts the page a little nearer; pooled spreads keep BM25's margin.
        r = row([("method", 4.24), ("page", 1.84)], [("page", 0.509), ("method", 0.442)], "method")
        for weight in (1.0, 1.25, 1.5):
            self.assertEqual(fusion.fuse(r, "standard", weight)[0], True, weight)

    def test_a_standing_out_cosine_wins_where_scaled_scores_do_not(self):
        # hybrid.rs's standard_scores_give_the_standing_out_list_the_larger_say.
        lexical = [("1", 10.0), ("3", 8.9), ("5", 8.85), ("6", 8.8), ("7", 8.7), ("2", 8.6)]
        semantic = [("3", 0.50), ("5", 0.44), ("6", 0.43), ("7", 0.43), ("8", 0.42), ("1", 0.40)]
        r = row(lexical, semantic, "3")
        self.assertEqual(fusion.fuse(r, "standard", 1.0)[:2], [True, False])
        self.assertEqual(fusion.fuse(r, "scaled", 1.0)[:2], [False, True])

    def test_an_empty_semantic_list_leaves_bm25_order(self):
        r = row([("a", 3.0), ("b", 2.0), ("c", 1.0)], [], "b")
        self.assertEqual(fusion.fuse(r, "standard", 2.0), [False, True, False])

    def test_spread_is_pooled_with_the_typical_one(self):
        mean, spread = fusion.standardised([0.5, 0.4], fusion.TYPICAL_COSINE_SPREAD)
        self.assertAlmostEqual(mean, 0.45)
        expected = ((2 * 0.05 ** 2 + 5 * 0.05 ** 2) / 7) ** 0.5
        self.assertAlmostEqual(spread, expected)
        self.assertEqual(fusion.standardised([], 0.05), (0.0, 1.0))
        self.assertEqual(fusion.standardised([1.0, 1.0], 0.0), (1.0, 1.0))


class ExactBm25(unittest.TestCase):
    def test_a_vector_candidate_gets_its_own_bm25_not_the_lists_lowest(self):
        # "x" is on the semantic list only. Past the lexical top 50 the deep list knows its
        # BM25: 0.0 here, well under the top 50's lowest (5.0), so it loses the place that
        # `standard` gives it at a weight where the lowest score would have carried it.
        lexical = [(f"l{i}", 10.0 - i * 0.1) for i in range(fusion.TOP)] + [("x", 0.0)]
        semantic = [("x", 0.60)] + [(f"l{i}", 0.45) for i in range(10)]
        r = row(lexical, semantic, "x")
        self.assertEqual(fusion.fuse(r, "standard", 2.0)[0], True)
        self.assertEqual(fusion.fuse(r, "standard-exact", 2.0)[0], False)
        # A candidate both lists rank is scored alike by both rules.
        both = row([("a", 3.0), ("b", 2.0)], [("b", 0.5), ("a", 0.4)], "a")
        for weight in (0.5, 1.0, 2.0):
            self.assertEqual(fusion.fuse(both, "standard", weight),
                             fusion.fuse(both, "standard-exact", weight))


class Mrr(unittest.TestCase):
    def test_first_hit_in_the_top_ten_counts(self):
        self.assertAlmostEqual(fusion.mrr([[False, True], [True], [False] * 10 + [True]]),
                               (0.5 + 1.0 + 0.0) / 3)


if __name__ == "__main__":
    unittest.main()
