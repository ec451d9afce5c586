"""TreeSHAP and leaf indices against their plain-Python twins on random small trees: the twin
of TreeSHAP enumerates feature subsets (the Shapley formula on path-dependent expectations), so
it shares no code with the recursion it checks."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oocgbdt.kernels.predict import predict_raw_naive
from oocgbdt.kernels.treeshap import (predict_contrib, predict_contrib_naive, predict_leaf,
                                      predict_leaf_naive, tree_depths)
from tests.kernels._trees import random_layout

#: The kernel and the twin sum the same Shapley values in different orders (one through the
#: path weights, one through the subset formula); on leaf values of order 1 and at most 5
#: features a tree, the sums agree far inside this.
TOL = 1e-9


def _random_trees(rng, n_trees, n_features, n_outputs, categorical):
    """Random trees in LightGBM's layout with consistent covers (every count >= 1), random
    missing types and default directions, thresholds on a grid that the rows hit exactly."""
    cols = {k: [] for k in ("split_feature", "threshold", "decision_type", "left_child",
                            "right_child", "leaf_value", "leaf_count", "internal_count")}
    cat_boundaries, cat_threshold = [], []
    node_offsets, leaf_offsets, cb_offsets, ct_offsets = [0], [0], [0], [0]
    for _ in range(n_trees):
        n_leaves = int(rng.integers(1, 9))
        left, right = random_layout(rng, n_leaves)
        m = n_leaves - 1
        leaf_count = rng.integers(1, 50, n_leaves).astype(np.float64)
        internal = np.zeros(m)
        for node in range(m - 1, -1, -1):
            internal[node] = sum(leaf_count[~c] if c < 0 else internal[c]
                                 for c in (left[node], right[node]))
        features = rng.integers(0, n_features, m)
        thresholds = np.round(rng.normal(size=m), 1)
        dtypes = rng.choice([0, 2, 4, 6, 8, 10], size=m)
        bounds, words = [0], []
        for node in range(m):
            if categorical and rng.random() < 0.3:
                n_words = int(rng.integers(1, 3))
                words += [int(w) for w in rng.integers(0, 2 ** 32, n_words, dtype=np.uint64)]
                thresholds[node] = len(bounds) - 1
                bounds.append(bounds[-1] + n_words)
                dtypes[node] = 1
        cols["split_feature"] += list(features)
        cols["threshold"] += list(thresholds)
        cols["decision_type"] += list(dtypes)
        cols["left_child"] += list(left)
        cols["right_child"] += list(right)
        cols["leaf_value"] += list(rng.normal(size=n_leaves))
        cols["leaf_count"] += list(leaf_count)
        cols["internal_count"] += list(internal)
        node_offsets.append(node_offsets[-1] + m)
        leaf_offsets.append(leaf_offsets[-1] + n_leaves)
        if len(bounds) == 1:
            bounds = []
        cat_boundaries += bounds
        cat_threshold += words
        cb_offsets.append(cb_offsets[-1] + len(bounds))
        ct_offsets.append(ct_offsets[-1] + len(words))
    dt = dict(split_feature=np.int32, threshold=np.float64, decision_type=np.uint8,
              left_child=np.int32, right_child=np.int32, leaf_value=np.float64,
              leaf_count=np.float64, internal_count=np.float64)
    a = {k: np.asarray(v, dtype=dt[k]) for k, v in cols.items()}
    a["node_offsets"] = np.asarray(node_offsets, np.int64)
    a["leaf_offsets"] = np.asarray(leaf_offsets, np.int64)
    a["cat_boundaries"] = np.asarray(cat_boundaries, np.int32)
    a["cat_threshold"] = np.asarray(cat_threshold, np.uint32)
    a["cb_offsets"] = np.asarray(cb_offsets, np.int64)
    a["ct_offsets"] = np.asarray(ct_offsets, np.int64)
    a["tree_class"] = (np.arange(n_trees) % n_outputs).astype(np.int32)
    return a


def _random_rows(rng, n_rows, n_features):
    X = np.round(rng.normal(size=(n_rows, n_features)), 1)  # hits thresholds exactly
    X[rng.random(X.shape) < 0.2] = np.nan
    X[rng.random(X.shape) < 0.15] = 0.0
    cats = rng.random(X.shape) < 0.3
    k = int(cats.sum())
    # category codes, some with a fraction (truncated toward zero: -0.5 is category 0)
    X[cats] = rng.integers(-2, 70, k) + np.where(rng.random(k) < 0.3, rng.random(k), 0.0)
    return X


def _leaf_args(a):
    return (a["split_feature"], a["threshold"], a["decision_type"], a["left_child"],
            a["right_child"], a["node_offsets"], a["cat_boundaries"], a["cb_offsets"],
            a["cat_threshold"], a["ct_offsets"])


def _contrib_args(a):
    depth = int(tree_depths(a["left_child"], a["right_child"], a["node_offsets"]).max(initial=0))
    return (a["split_feature"], a["threshold"], a["decision_type"], a["left_child"],
            a["right_child"], a["leaf_value"], a["leaf_count"], a["internal_count"],
            a["node_offsets"], a["leaf_offsets"], a["cat_boundaries"], a["cb_offsets"],
            a["cat_threshold"], a["ct_offsets"], a["tree_class"], depth)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1), n_outputs=st.sampled_from([1, 3]),
       categorical=st.booleans(), n_features=st.integers(1, 5))
def test_treeshap_equals_the_shapley_formula_and_sums_to_the_raw_score(seed, n_outputs,
                                                                       categorical, n_features):
    rng = np.random.default_rng(seed)
    a = _random_trees(rng, int(rng.integers(1, 5)) * n_outputs, n_features, n_outputs,
                      categorical)
    X = _random_rows(rng, 12, n_features)
    width = n_outputs * (n_features + 1)
    fast, slow = np.zeros((12, width)), np.zeros((12, width))
    predict_contrib(X, *_contrib_args(a), fast)
    predict_contrib_naive(X, *_contrib_args(a), slow)
    assert np.abs(fast - slow).max() <= TOL
    # rows sum to the raw score (walked by the twin of the leaf walk)
    leaves = np.zeros((12, len(a["tree_class"])), np.int32)
    predict_leaf_naive(X, *_leaf_args(a), leaves)
    raw = np.zeros((12, n_outputs))
    for t, c in enumerate(a["tree_class"]):
        raw[:, c] += a["leaf_value"][a["leaf_offsets"][t] + leaves[:, t]]
    sums = fast.reshape(12, n_outputs, n_features + 1).sum(axis=2)
    assert np.abs(sums - raw).max() <= TOL


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), categorical=st.booleans())
def test_leaf_walk_equals_its_twin(seed, categorical):
    rng = np.random.default_rng(seed)
    a = _random_trees(rng, 6, 4, 2, categorical)
    X = _random_rows(rng, 30, 4)
    fast = np.zeros((30, 6), np.int32)
    slow = np.zeros((30, 6), np.int32)
    predict_leaf(X, *_leaf_args(a), fast)
    predict_leaf_naive(X, *_leaf_args(a), slow)
    assert np.array_equal(fast, slow)
    if not categorical:  # the numerical walk agrees with the raw-score walk of predict.py
        raw = np.zeros((30, 2))
        predict_raw_naive(X, a["split_feature"], a["threshold"], a["decision_type"],
                          a["left_child"], a["right_child"], a["leaf_value"], a["node_offsets"],
                          a["leaf_offsets"], a["tree_class"], np.zeros(1, np.int64),
                          np.zeros(0, np.uint32), raw)
        mine = np.zeros((30, 2))
        for t, c in enumerate(a["tree_class"]):
            mine[:, c] += a["leaf_value"][a["leaf_offsets"][t] + fast[:, t]]
        assert np.array_equal(mine, raw)

