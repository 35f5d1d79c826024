#!/usr/bin/env python3
"""Checks train.py's hand-written gradients against finite differences on a tiny table, and
statictable's WordPiece on a few words. Run by scripts/test.sh (numpy from the bench venv)."""
from __future__ import annotations

import sys
import unittest
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import interpolate  # noqa: E402
import train  # noqa: E402
from statictable import Table, WordPiece, quantise, write_table  # noqa: E402


def loss_of(model: train.TrainableTable, batch, lexical, tau, weight) -> float:
    (qi, qo), (ci, co) = batch
    q = model.embed(qi, qo).astype(np.float64)
    c = model.embed(ci, co).astype(np.float64)
    return train.contrastive_step(q, c, lexical, tau, weight)[0]


def numeric_gradient(model: train.TrainableTable, loss) -> np.ndarray:
    """d loss / d table by central differences, one entry at a time."""
    numeric = np.zeros_like(model.table)
    h = 1e-6
    for r in range(model.table.shape[0]):
        for d in range(model.table.shape[1]):
            keep = model.table[r, d]
            model.table[r, d] = keep + h
            up = loss()
            model.table[r, d] = keep - h
            down = loss()
            model.table[r, d] = keep
            numeric[r, d] = (up - down) / (2 * h)
    return numeric


class GradientTest(unittest.TestCase):
    def test_gradients_match_finite_differences(self):
        rng = np.random.default_rng(3)
        rows, dims, n = 12, 5, 4
        live = np.ones(rows, bool)
        live[0] = False  # a special token: never trained
        model = train.TrainableTable(rng.normal(size=(rows, dims)).astype(np.float32), live, 1e-3, 0.0)
        model.table = model.table.astype(np.float64)
        model.live = model.live.astype(np.float64)
        qi = np.array([1, 2, 2, 3, 4, 0, 5, 6], dtype=np.int64)
        qo = np.array([0, 3, 5, 6], dtype=np.int64)
        ci = np.array([7, 8, 9, 1, 10, 11, 3, 2, 0, 4], dtype=np.int64)
        co = np.array([0, 2, 4, 7], dtype=np.int64)
        lexical = rng.uniform(size=(n, n))
        tau, weight = 0.5, 1.0
        q, qn = model.forward(qi, qo)
        c, cn = model.forward(ci, co)
        _, d_q, d_c = train.contrastive_step(q, c, lexical, tau, weight)
        touched, grads = model.gradients([(qi, qo, q, qn, d_q), (ci, co, c, cn, d_c)])
        analytic = np.zeros_like(model.table)
        analytic[touched] = grads
        numeric = numeric_gradient(model, lambda: loss_of(model, ((qi, qo), (ci, co)), lexical, tau, weight))
        np.testing.assert_allclose(analytic, numeric, rtol=1e-4, atol=1e-6)
        self.assertTrue(np.all(analytic[0] == 0), "a row that is not live gets no gradient")

    def test_the_sentence_geometry_gradient_matches_finite_differences(self):
        rng = np.random.default_rng(11)
        rows, dims = 9, 4
        model = train.TrainableTable(rng.normal(size=(rows, dims)).astype(np.float32), np.ones(rows, bool), 1e-3, 0.0)
        model.table = model.table.astype(np.float64)
        model.live = model.live.astype(np.float64)
        qi = np.array([1, 2, 3, 3, 4, 5, 6, 7, 8], dtype=np.int64)
        qo = np.array([0, 2, 4, 7], dtype=np.int64)
        q_base = rng.normal(size=(4, dims))
        q_base /= np.linalg.norm(q_base, axis=1, keepdims=True)
        weight = 0.7

        def loss() -> float:
            return train.sentence_geometry_step(model.embed(qi, qo), q_base, weight)[0]

        q, qn = model.forward(qi, qo)
        value, d_q = train.sentence_geometry_step(q, q_base, weight)
        self.assertGreater(value, 0.0)
        touched, grads = model.gradients([(qi, qo, q, qn, d_q)])
        analytic = np.zeros_like(model.table)
        analytic[touched] = grads
        numeric = numeric_gradient(model, loss)
        np.testing.assert_allclose(analytic, numeric, rtol=1e-4, atol=1e-7)
        # Under the table it started from, the term is zero and pulls nowhere.
        same, d_same = train.sentence_geometry_step(q, q, weight)
        self.assertEqual(same, 0.0)
        self.assertTrue(np.all(d_same == 0))

    def test_an_adam_step_lowers_the_loss(self):
        rng = np.random.default_rng(5)
        model = train.TrainableTable(rng.normal(size=(10, 4)).astype(np.float32), np.ones(10, bool), 1e-2, 0.0)
        qi, qo = np.array([1, 2, 3, 4]), np.array([0, 2])
        ci, co = np.array([5, 6, 7, 8, 9]), np.array([0, 3])
        before = loss_of(model, ((qi, qo), (ci, co)), None, 0.1, 0.0)
        for _ in range(20):
            q, qn = model.forward(qi, qo)
            c, cn = model.forward(ci, co)
            _, d_q, d_c = train.contrastive_step(q.astype(np.float64), c.astype(np.float64), None, 0.1, 0.0)
            model.backward([(qi, qo, q, qn, d_q), (ci, co, c, cn, d_c)])
        self.assertLess(loss_of(model, ((qi, qo), (ci, co)), None, 0.1, 0.0), before)

    def test_an_empty_bag_embeds_as_zero(self):
        model = train.TrainableTable(np.ones((3, 2), np.float32), np.ones(3, bool), 1e-3, 0.0)
        # bags: ids[0:0] (empty), ids[0:2], ids[2:2] (empty)
        units, _ = model.forward(np.array([1, 2]), np.array([0, 0, 2]))
        self.assertTrue(np.all(units[0] == 0) and np.all(units[2] == 0))
        self.assertAlmostEqual(float(np.linalg.norm(units[1])), 1.0, places=6)


class MultilangPairsTest(unittest.TestCase):
    def test_import_lines_as_lode_picks_them(self):
        import multilang_pairs
        head = "#!/usr/bin/env python\nimport os\nfrom a import b\nx = 1\nconst fs = require('fs');\nimport (\n"
        self.assertEqual(multilang_pairs.import_lines(head),
                         ["import os", "from a import b", "const fs = require('fs');", "import ("])

    def test_table_packages_are_never_evaluation_or_fusion_packages(self):
        import multilang_pairs
        listed = multilang_pairs.build.HERE / "packages.txt"
        kept_out = [p for split in ("eval", "train")
                    for p in multilang_pairs.build.read_packages(listed, split)]
        for lang in multilang_pairs.LANGS:
            training = multilang_pairs.packages_for_training(lang)
            self.assertTrue(training, f"no training packages for {lang}")
            for package in training:
                for other in kept_out:
                    self.assertFalse(multilang_pairs.overlaps(package, other),
                                     f"{package.name} {package.subdir} is {other.name} {other.subdir}")

    def test_a_shared_package_lends_disjoint_directories(self):
        import multilang_pairs
        Package = multilang_pairs.build.Package
        jdk = lambda d: Package("java", "deb", "openjdk-17-source", "17", d)
        self.assertTrue(multilang_pairs.overlaps(jdk("src/java.base/java/util"), jdk("src/java.base/java/util/concurrent")))
        self.assertTrue(multilang_pairs.overlaps(jdk("src/java.base/java/util/concurrent"), jdk("src/java.base/java/util")))
        self.assertTrue(multilang_pairs.overlaps(jdk(None), jdk("src/java.base/java/lang")))
        self.assertFalse(multilang_pairs.overlaps(jdk("src/java.base/java/lang"), jdk("src/java.base/java/util")))
        self.assertFalse(multilang_pairs.overlaps(jdk("src/java.net"), jdk("src/java.net.http")))
        other = Package("java", "deb", "openjfx-source", "11", "src/java.base/java/util")
        self.assertFalse(multilang_pairs.overlaps(jdk("src/java.base/java/util"), other))


class ProseTest(unittest.TestCase):
    def test_readme_prose_keeps_sentences_and_drops_code_tables_and_markup(self):
        import tempfile
        readme_text = """# Fancy cache

[![build](https://ci.example/badge.svg)](https://ci.example)

Fancy cache keeps the [recent answers](https://example.com/docs) of a slow service in memory.
It evicts the oldest entry when the memory budget is spent. Tiny line.

```python
cache = FancyCache(budget=1024)  # Stores answers in memory for a while here.
```

    indented = "Code blocks indented by four spaces are not prose either."

| option | meaning of the option in this table |
|---|---|

Install it with `pip install fancy-cache` and read the guide at https://example.com/guide today.
"""
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "pkg" / "docs").mkdir(parents=True)
            (root / "pkg" / "README.md").write_text(readme_text)
            (root / "pkg" / "docs" / "readme.txt").write_text("Deeper notes are found after the top one, always.\n")
            (root / "pkg" / "src.py").write_text("print('not a readme at all, not even close')\n")
            files = train.readmes(root)
            self.assertEqual([f.name for f in files], ["README.md", "readme.txt"])
            sentences = train.prose_sentences(files[:1])
        self.assertEqual(sentences, sorted([
            "Fancy cache keeps the recent answers of a slow service in memory.",
            "It evicts the oldest entry when the memory budget is spent.",
            "Install it with and read the guide at today.",
        ]))


class InterpolateTest(unittest.TestCase):
    def write(self, path: Path, rows: np.ndarray) -> Path:
        q, scales, weights = quantise(rows.astype(np.float64))
        write_table(path, q, scales, weights, len(rows), [], flags=4)
        path.with_suffix(".vocab.txt").write_text("[UNK]\n" + "".join(f"w{i}\n" for i in range(1, len(rows))))
        return path

    def test_the_blend_lies_between_its_tables_and_keeps_empty_rows_empty(self):
        import tempfile
        rng = np.random.default_rng(5)
        start_rows = rng.normal(size=(6, 8))
        trained_rows = rng.normal(size=(6, 8))
        start_rows[0] = trained_rows[0] = 0.0  # a special token
        with tempfile.TemporaryDirectory() as tmp:
            start = Table(self.write(Path(tmp) / "a.bin", start_rows))
            trained = Table(self.write(Path(tmp) / "b.bin", trained_rows))
            for alpha in (0.0, 0.5, 1.0):
                rows = interpolate.blend(start, trained, alpha)
                expected = (1 - alpha) * start.mat + alpha * trained.mat
                np.testing.assert_allclose(rows, expected, rtol=1e-6, atol=1e-6)
            q, scales, weights = quantise(interpolate.blend(start, trained, 0.5))
            self.assertEqual(weights[0], 0.0)
            self.assertTrue((weights[1:] == 1.0).all())
            # int8 per row: each value within half a step of the blend
            back = q.astype(np.float64) * scales[:, None]
            step = scales[:, None]
            self.assertTrue((np.abs(back - interpolate.blend(start, trained, 0.5)) <= 0.5 * step + 1e-9).all())


class WordPieceTest(unittest.TestCase):
    def test_greedy_longest_match_and_unknown_words(self):
        vocab = HERE / "test-vocab.txt"
        vocab.write_text("[PAD]\n[UNK]\npar\n##se\npars\n##e\nx\n")
        try:
            pieces = WordPiece(vocab)
            self.assertEqual(pieces.ids("parse"), [4, 5])  # "pars" + "##e": longest first
            self.assertEqual(pieces.ids("parsex"), [1])  # no "##x": the whole word is unknown
            self.assertEqual(pieces.ids("x" * 101), [1])
        finally:
            vocab.unlink()


if __name__ == "__main__":
    unittest.main()
