#!/usr/bin/env python3
"""Tests of signals.py: its callable prior must tell chunks apart as hybrid.rs's callable_prior
does (the cases of hybrid.rs's test), and its name words must split identifiers.

    python3 bench/multilang/test_signals.py
(scripts/test.sh runs it; the table is not loaded.)
"""
from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import signals  # noqa: E402

CALLABLES = {"function", "method", "section", "NULL"}


class CallablePrior(unittest.TestCase):
    ROWS = {
        1: ("java", ("openWithRetries", "method", [])),
        2: ("java", ("retryLimit", "field", [])),
        3: ("java", ("RetryPolicy", "class", [])),
        4: ("markdown", ("Retrying", "section", [])),
        5: ("python", ("", "", [])),
        6: ("javascript", ("baseEach", "variable", [])),
        7: ("typescript", ("defaults", "variable", [])),
        8: ("c", ("MAX_RETRIES", "macro", [])),
    }

    def favoured(self, query: str) -> list[int]:
        return [key for key, (lang, row) in self.ROWS.items()
                if signals.does_something(lang, row, CALLABLES,
                                                 signals.names_in_code_form(query))]

    def test_declarations_are_not_favoured_unless_named_in_code_form(self):
        self.assertEqual(self.favoured("retry the connection until the limit"), [1, 4, 5, 6])
        self.assertEqual(self.favoured("where is `RetryPolicy` built, and what is retryLimit?"),
                         [1, 2, 3, 4, 5, 6])
        self.assertEqual(self.favoured("the retry policy"), [1, 4, 5, 6])

    def test_identifier_like_words(self):
        for word in ["parse_config", "HashMap::new", "parseConfig", "a.b", "src/lib.rs", "f(x)"]:
            self.assertTrue(signals.identifier_like(word), word)
        for word in ["retry", "HTTP", "Retry", "(", "the"]:
            self.assertFalse(signals.identifier_like(word), word)


class NameWords(unittest.TestCase):
    def test_identifiers_split_at_underscores_and_case(self):
        self.assertEqual(signals.words("parseHTTPResponse_body"),
                         ["parse", "http", "response", "body"])
        self.assertEqual(signals.name_share(signals.stems("Parse the response body"),
                                            "parseResponseBody"), 1.0)
        self.assertEqual(signals.name_share(set(), ""), 0.0)


if __name__ == "__main__":
    unittest.main()
