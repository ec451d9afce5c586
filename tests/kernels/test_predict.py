"""Prediction kernels against their plain-Python twins."""
import numpy as np

from oocgbdt.kernels.bundling import predict_binned_bundled_naive
from oocgbdt.kernels.categorical import construct_bitset
from oocgbdt.kernels.predict import (K_ZERO_THRESHOLD, add_leaf_values, leaves_binned,
                                     leaves_by_routing, leaves_by_walk, predict_binned,
                                     predict_binned_naive, predict_raw, predict_raw_naive)
from oocgbdt.kernels.routing import CATEGORICAL_NODE
from tests.kernels._trees import random_layout


def _random_forest(rng, n_trees, n_features, n_outputs):
    cols = {k: [] for k in ("split_feature", "threshold", "decision_type", "left_child",
                            "right_child", "leaf_value")}
    node_offsets, leaf_offsets = [0], [0]
    for t in range(n_trees):
        n_leaves = int(rng.integers(1, 8))
        left, right = random_layout(rng, n_leaves)
        m = n_leaves - 1
        cols["split_feature"] += list(rng.integers(0, n_features, m))
        cols["threshold"] += list(np.round(rng.normal(size=m), 1))
        cols["decision_type"] += list(rng.choice([0, 2, 4, 6, 8, 10], size=m))
        cols["left_child"] += list(left)
        cols["right_child"] += list(right)
        cols["leaf_value"] += list(rng.normal(size=n_leaves))
        node_offsets.append(node_offsets[-1] + m)
        leaf_offsets.append(leaf_offsets[-1] + n_leaves)
    dt = dict(split_feature=np.int32, threshold=np.float64, decision_type=np.uint8,
              left_child=np.int32, right_child=np.int32, leaf_value=np.float64)
    arrays = {k: np.asarray(v, dtype=dt[k]) for k, v in cols.items()}
    arrays["node_offsets"] = np.asarray(node_offsets, np.int64)
    arrays["leaf_offsets"] = np.asarray(leaf_offsets, np.int64)
    arrays["tree_class"] = (np.arange(n_trees) % n_outputs).astype(np.int32)
    return arrays


def test_predict_raw_matches_naive_with_missing_values():
    rng = np.random.default_rng(1)
    f = _random_forest(rng, 25, 4, 3)
    X = np.round(rng.normal(size=(300, 4)), 1).astype(np.float32)  # values on thresholds
    X[rng.random(X.shape) < 0.1] = np.nan
    X[rng.random(X.shape) < 0.1] = 0.0
    X[0, 0] = K_ZERO_THRESHOLD / 2
    args = [f[k] for k in ("split_feature", "threshold", "decision_type", "left_child",
                           "right_child", "leaf_value", "node_offsets", "leaf_offsets", "tree_class")]
    args += [np.zeros(1, np.int64), np.zeros(0, np.uint32)]
    out = np.zeros((300, 3))
    ref = np.zeros((300, 3))
    predict_raw(X, *args, out)
    predict_raw_naive(X, *args, ref)
    np.testing.assert_array_equal(out, ref)


def test_predict_binned_matches_naive():
    rng = np.random.default_rng(2)
    f = _random_forest(rng, 1, 5, 1)
    m = len(f["split_feature"])
    while m == 0:
        f = _random_forest(rng, 1, 5, 1)
        m = len(f["split_feature"])
    Xb = rng.integers(0, 10, size=(200, 5)).astype(np.uint8)
    args = (f["split_feature"], rng.integers(0, 9, m).astype(np.int32), rng.random(m) < 0.5,
            rng.integers(0, 3, m).astype(np.uint8), rng.integers(0, 10, m).astype(np.int32),
            np.full(m, 9, np.int32), f["left_child"], f["right_child"], f["leaf_value"],
            np.zeros(1, np.int64), np.zeros(0, np.uint32))
    out = np.zeros(200)
    ref = np.zeros(200)
    predict_binned(Xb, *args, out)
    predict_binned_naive(Xb, *args, ref)
    np.testing.assert_array_equal(out, ref)


def test_leaves_binned_is_the_naive_walk():
    """Trees of 1 to 40 leaves, missing types None/Zero/NaN on rows at the default and NaN bins,
    row counts not a multiple of the four walked at once: each row's leaf is the one whose
    value the naive walk adds (leaf values = leaf numbers)."""
    rng = np.random.default_rng(5)
    for n_leaves in (1, 2, 3, 7, 40):
        for n_rows in (1, 6, 203):
            left, right = random_layout(rng, n_leaves)
            m = n_leaves - 1
            Xb = rng.integers(0, 10, size=(n_rows, 5)).astype(np.uint16)
            args = (rng.integers(0, 5, m).astype(np.int32), rng.integers(0, 9, m).astype(np.int32),
                    rng.random(m) < 0.5, rng.integers(0, 3, m).astype(np.uint8),
                    rng.integers(0, 10, m).astype(np.int32), np.full(m, 9, np.int32),
                    left, right)
            ref = np.zeros(n_rows)
            predict_binned_naive(Xb, *args, np.arange(n_leaves, dtype=np.float64),
                                 np.zeros(1, np.int64), np.zeros(0, np.uint32), ref)
            out = np.full(n_rows, -1, np.int32)
            leaves_binned(Xb, *args, out)
            np.testing.assert_array_equal(out, ref.astype(np.int32))


def test_leaves_by_routing_and_by_walk_are_the_naive_walk():
    """Listed rows routed (``leaves_by_routing``) or walked (``leaves_by_walk``) down trees of 1
    to 40 leaves, with raw and bundled columns (a feature read off its range of a bundle, the
    default bin anywhere in it), missing types None/Zero/NaN, with and without categorical
    nodes, from row-major and column-major bins: each listed row gets the leaf the naive
    bundled walk reaches, the other rows are not written, and routing permutes the list
    without changing it."""
    rng = np.random.default_rng(8)
    n_columns, n_bins = 4, 9
    for n_leaves in (1, 2, 3, 7, 40):
        for dtype in (np.uint8, np.uint16):
            for with_cat in (False, True):
                n_rows = 257
                lc, rc = random_layout(rng, n_leaves)
                m = n_leaves - 1
                Xb = rng.integers(0, 3 * n_bins, size=(n_rows, n_columns)).astype(dtype)
                column = rng.integers(0, n_columns, m).astype(np.int64)
                raw = rng.random(m) < 0.5
                start = np.where(raw, 0, rng.integers(0, 2 * n_bins, m)).astype(np.int64)
                missing = rng.integers(0, 3, m).astype(np.uint8)
                threshold = rng.integers(0, n_bins - 1, m).astype(np.int32)
                cat = np.flatnonzero(rng.random(m) < 0.25) if with_cat else np.zeros(0, int)
                bits = [construct_bitset(rng.choice(np.arange(1, n_bins), size=3, replace=False))
                        for _ in cat]
                bounds = np.concatenate([[0], np.cumsum([len(b) for b in bits])]).astype(np.int64)
                words = (np.concatenate(bits) if bits else np.zeros(0)).astype(np.uint32)
                missing[cat] = CATEGORICAL_NODE
                threshold[cat] = np.arange(cat.size)
                nodes = (column, start, np.full(m, n_bins, np.int64), raw, threshold,
                         rng.random(m) < 0.5, missing, rng.integers(0, n_bins, m).astype(np.int32),
                         np.full(m, n_bins - 1, np.int32), lc, rc)
                ref = np.zeros(n_rows)
                predict_binned_bundled_naive(Xb, *nodes, np.arange(n_leaves, dtype=np.float64),
                                             bounds, words, ref)
                listed = np.flatnonzero(rng.random(n_rows) < 0.6).astype(np.int32)
                for X in (Xb, np.asfortranarray(Xb)):
                    for kernel in (leaves_by_routing, leaves_by_walk):
                        rows = rng.permutation(listed).astype(np.int32)
                        given = rows.copy()
                        out = np.full(n_rows, -1, np.int64)
                        kernel(X, rows, *nodes, bounds, words, out)
                        np.testing.assert_array_equal(out[listed], ref[listed].astype(np.int64))
                        assert np.all(np.delete(out, listed) == -1)
                        np.testing.assert_array_equal(np.sort(rows), listed)
                        if kernel is leaves_by_walk:
                            np.testing.assert_array_equal(rows, given)


def test_add_leaf_values_is_numpy():
    rng = np.random.default_rng(6)
    score, values = rng.normal(size=101), rng.normal(size=7)
    leaf = rng.integers(0, 7, 101).astype(np.int32)
    out = np.empty(101)
    add_leaf_values(score, leaf, values, out)
    np.testing.assert_array_equal(out, score + values[leaf])
