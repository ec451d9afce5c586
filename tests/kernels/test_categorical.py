"""Categorical kernels against their plain-Python twins: category codes to bins, bitsets, the
category-set split search, and routing and prediction through categorical nodes."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oocgbdt.kernels.bundling import (predict_binned_bundled, predict_binned_bundled_naive,
                                      split_rows_bundled, split_rows_bundled_naive)
from oocgbdt.kernels.categorical import (construct_bitset, find_best_categorical,
                                         find_best_categorical_naive, in_bitset, in_bitset_naive,
                                         map_categories, map_categories_naive)
from oocgbdt.kernels.predict import (leaves_by_segment, predict_binned, predict_binned_naive,
                                     predict_raw, predict_raw_naive, predict_raw_sparse,
                                     predict_raw_sparse_naive)
from oocgbdt.kernels.routing import CATEGORICAL_NODE, split_rows, split_rows_naive

values = st.one_of(st.integers(-3, 70).map(float), st.just(np.nan), st.just(-0.5),
                   st.just(3e9), st.just(2147483647.0))


@settings(max_examples=60, deadline=None)
@given(st.lists(values, min_size=1, max_size=60),
       st.lists(st.integers(0, 80), min_size=0, max_size=20, unique=True))
def test_map_categories_matches_naive(column, kept):
    col = np.asarray(column, dtype=np.float32)
    cats = np.sort(np.asarray(kept, dtype=np.int64))
    bins = np.random.default_rng(len(kept)).permutation(len(kept)).astype(np.int64) + 1
    out = np.empty(len(col), dtype=np.uint16)
    ref = np.empty(len(col), dtype=np.int64)
    map_categories(col, cats, bins, out)
    map_categories_naive(col, cats, bins, ref)
    np.testing.assert_array_equal(out, ref)


def test_map_categories_sends_missing_and_unknown_to_bin_0():
    col = np.array([np.nan, -1.0, -7.0, 5.0, 2.0, 9.0, -0.5], dtype=np.float32)
    out = np.empty(7, dtype=np.uint8)
    map_categories(col, np.array([0, 2, 5], np.int64), np.array([3, 1, 2], np.int64), out)
    # NaN, negatives -> 0; 5 -> 2; 2 -> 1; 9 unseen -> 0; -0.5 truncates to category 0 -> 3
    assert out.tolist() == [0, 0, 0, 2, 1, 0, 3]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 200), max_size=30), st.integers(0, 260))
def test_bitset_matches_a_python_set(members, probe):
    bits = construct_bitset(members)
    assert bits.dtype == np.uint32
    assert len(bits) == (max(members) // 32 + 1 if members else 0)
    padded = np.concatenate([np.zeros(3, np.uint32), bits])  # an offset slice, as in trees
    expected = probe in set(members)
    assert in_bitset(padded, 3, 3 + len(bits), probe) == expected
    assert in_bitset_naive(padded, 3, 3 + len(bits), probe) == expected


def _leaf_hist(rng, n_bins, n_rows, hess_kind):
    """A leaf histogram with rows spread over the bins (some nearly empty)."""
    weights = rng.dirichlet(np.full(n_bins, 0.6))
    cnt = rng.multinomial(n_rows, weights)
    h = np.zeros((n_bins + 3, 2))
    lo = 2
    if hess_kind == "ones":
        h[lo:lo + n_bins, 1] = cnt
    else:
        h[lo:lo + n_bins, 1] = cnt * rng.uniform(0.05, 0.25, n_bins)
    h[lo:lo + n_bins, 0] = rng.normal(size=n_bins) * np.sqrt(cnt + 1) + rng.normal(size=n_bins) * cnt * 0.3
    return h, lo, float(cnt.sum())


@pytest.mark.parametrize("hess_kind", ["ones", "varied"])
@pytest.mark.parametrize("seed", range(12))
def test_find_best_categorical_matches_naive(seed, hess_kind):
    rng = np.random.default_rng(seed)
    for n_bins in (2, 3, 4, 5, 9, 40):
        h, lo, count = _leaf_hist(rng, n_bins, int(rng.integers(50, 3000)), hess_kind)
        sum_g = float(h[lo:lo + n_bins, 0].sum())
        sum_h2 = float(h[lo:lo + n_bins, 1].sum()) + 2e-15
        cnt_factor = count / sum_h2
        l2 = float(rng.choice([0.0, 1.0]))
        parent = sum_g * sum_g / (sum_h2 + l2)
        for onehot, max_thr, smooth, group in ((4, 32, 10.0, 100), (64, 32, 10.0, 100),
                                               (4, 3, 1.0, 5), (4, 32, 0.5, 1)):
            args = (h, lo, n_bins, sum_g, sum_h2, count, cnt_factor, 0.0, l2, 5.0, 1e-3,
                    parent, onehot, max_thr, 2.0, smooth, group)
            res, bins = np.empty(5), np.zeros(40, np.int64)
            ref, ref_bins = np.empty(5), np.zeros(40, np.int64)
            find_best_categorical(*args, res, bins)
            find_best_categorical_naive(*args, ref, ref_bins)
            assert res[0] == pytest.approx(ref[0], rel=1e-10) or res[0] == ref[0] == -np.inf
            if np.isfinite(res[0]):
                k = int(res[4])
                assert k == int(ref[4]) and k >= 1
                np.testing.assert_array_equal(bins[:k], ref_bins[:k])
                assert 0 not in bins[:k]  # bin 0 (missing, rare) never goes left
                np.testing.assert_allclose(res[1:4], ref[1:4], rtol=1e-10, atol=1e-9)


def _cat_tree():
    """A tree with two categorical nodes and one numerical node (LightGBM's layout)."""
    # node 0: categorical on feature 0, left {1, 3, 40}; node 1: numerical f1 <= 0.5;
    # node 2: categorical on feature 2, left {0, 2}
    split_feature = np.array([0, 1, 2], np.int32)
    threshold = np.array([0.0, 0.5, 1.0])  # categorical: index into cat_boundaries
    decision_type = np.array([1 | (2 << 2), 2 | (2 << 2), 1], np.uint8)
    left = np.array([1, ~0, ~2], np.int32)
    right = np.array([2, ~1, ~3], np.int32)
    b0, b1 = construct_bitset([1, 3, 40]), construct_bitset([0, 2])
    boundaries = np.array([0, len(b0), len(b0) + len(b1)], np.int64)
    words = np.concatenate([b0, b1]).astype(np.uint32)
    return split_feature, threshold, decision_type, left, right, boundaries, words


def test_predict_raw_follows_categorical_decision():
    sf, thr, dt, left, right, bounds, words = _cat_tree()
    leaf = np.array([10.0, 20.0, 30.0, 40.0])
    X = np.array([[1, 0.1, 0], [3, 0.9, 0], [40, 0, 0], [2, 0, 0], [np.nan, 0, 2], [-1, 0, 0],
                  [1e10, 0, 5], [2, 0, np.nan], [0.7, 0, 2.9]], dtype=np.float64)
    # row 8: 0.7 -> category 0 (not in {1,3,40}) -> node 2; 2.9 -> category 2 -> left
    expected = [10, 20, 10, 30, 30, 30, 40, 40, 30]
    args = (sf, thr, dt, left, right, leaf, np.array([0, 3], np.int64), np.array([0, 4], np.int64),
            np.array([0], np.int32), bounds, words)
    out, ref = np.zeros((9, 1)), np.zeros((9, 1))
    predict_raw(X, *args, out)
    predict_raw_naive(X, *args, ref)
    assert out[:, 0].tolist() == expected
    np.testing.assert_array_equal(out, ref)
    import scipy.sparse as sp
    csr = sp.csr_matrix(np.nan_to_num(X, nan=-5.0))  # zeros stay implicit, NaN as -5 (missing)
    got, naive = np.zeros((9, 1)), np.zeros((9, 1))
    predict_raw_sparse(csr.indptr, csr.indices, csr.data, *args, got)
    predict_raw_sparse_naive(csr.indptr, csr.indices, csr.data, *args, naive, n_features=3)
    dense = np.zeros((9, 1))
    predict_raw(csr.toarray(), *args, dense)
    np.testing.assert_array_equal(got, dense)
    np.testing.assert_array_equal(naive, dense)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_binned_walks_and_routing_with_categorical_nodes_match_naive(seed):
    rng = np.random.default_rng(seed)
    n_rows, n_features, n_bins = 300, 3, 12
    Xb = rng.integers(0, n_bins, size=(n_rows, n_features)).astype(np.uint8)
    sf = np.array([0, 1, 2, 0], np.int32)
    sets = [rng.choice(np.arange(1, n_bins), size=rng.integers(1, 5), replace=False) for _ in range(3)]
    bits = [construct_bitset(s) for s in sets]
    bounds = np.concatenate([[0], np.cumsum([len(b) for b in bits])]).astype(np.int64)
    words = np.concatenate(bits).astype(np.uint32)
    # nodes 0, 2, 3 categorical (cat index 0, 1, 2), node 1 numerical with NaN bin n_bins - 1
    thr = np.array([0, 5, 1, 2], np.int32)
    missing = np.array([CATEGORICAL_NODE, 2, CATEGORICAL_NODE, CATEGORICAL_NODE], np.uint8)
    dl = rng.random(4) < 0.5
    default = np.zeros(4, np.int32)
    nan_bin = np.full(4, n_bins - 1, np.int32)
    lc = np.array([1, ~0, 3, ~2], np.int32)
    rc = np.array([2, ~1, ~3, ~4], np.int32)
    leaf = rng.normal(size=5)
    out, ref = np.zeros(n_rows), np.zeros(n_rows)
    args = (sf, thr, dl, missing, default, nan_bin, lc, rc, leaf, bounds, words)
    predict_binned(Xb, *args, out)
    predict_binned_naive(Xb, *args, ref)
    np.testing.assert_array_equal(out, ref)
    # the same tree on per-feature "bundles" (every feature alone, raw)
    layout = (sf.astype(np.int64), np.zeros(4, np.int64), np.full(4, n_bins, np.int64),
              np.ones(4, bool))
    got, naive = np.zeros(n_rows), np.zeros(n_rows)
    predict_binned_bundled(Xb, *layout, thr, dl, missing, default, nan_bin, lc, rc, leaf,
                           bounds, words, got)
    predict_binned_bundled_naive(Xb, *layout, thr, dl, missing, default, nan_bin, lc, rc, leaf,
                                 bounds, words, naive)
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(naive, ref)
    # each row's leaf from its rows grouped as growth routed them: nodes 0-2 routed, node 3
    # (children leaves 2 and 4) not, so their rows form one segment decided at node 3
    numbers = np.zeros(n_rows)
    predict_binned_naive(Xb, *args[:-3], np.arange(5.0), bounds, words, numbers)
    true_leaf = numbers.astype(np.intp)
    groups = [np.flatnonzero(np.isin(true_leaf, g)) for g in ([0], [1], [3], [2, 4])]
    order = np.concatenate(groups).astype(np.int32)
    seg_count = np.array([len(g) for g in groups], np.int64)
    seg_begin = np.concatenate([[0], np.cumsum(seg_count)[:-1]]).astype(np.int64)
    leaf_of = np.empty(n_rows, dtype=np.intp)
    routed = np.array([True, True, True, False])
    leaves_by_segment(Xb, order, seg_begin, seg_count, *layout, thr, dl, missing, default,
                      nan_bin, lc, rc, bounds, words, routed, leaf_of)
    np.testing.assert_array_equal(leaf_of, true_leaf)
    # routing one categorical split (the bitset of set 0) of a segment
    order = rng.permutation(n_rows).astype(np.int32)
    one = (np.array([0, len(bits[0])], np.int64), bits[0])
    a, b, c, d = order.copy(), order.copy(), order.copy(), order.copy()
    n1 = split_rows(Xb[:, 0], order, 20, 250, 0, False, CATEGORICAL_NODE, 0, n_bins - 1, *one, a)
    n2 = split_rows_naive(Xb[:, 0], order, 20, 250, 0, False, CATEGORICAL_NODE, 0, n_bins - 1,
                          *one, b)
    n3 = split_rows_bundled(Xb[:, 0], order, 20, 250, 0, False, CATEGORICAL_NODE, 0, n_bins - 1,
                            *one, 0, n_bins, True, c)
    n4 = split_rows_bundled_naive(Xb[:, 0], order, 20, 250, 0, False, CATEGORICAL_NODE, 0,
                                  n_bins - 1, *one, 0, n_bins, True, d)
    seg = order[20:270]
    in_set = np.isin(Xb[seg, 0], sets[0])
    assert n1 == n2 == n3 == n4 == int(in_set.sum())
    for z in (a, b, c, d):
        np.testing.assert_array_equal(z[20:270], np.concatenate([seg[in_set], seg[~in_set]]))


def test_find_best_categorical_splits_is_the_per_feature_search():
    """The per-leaf kernel: each masked feature's row from the naive one-feature search with
    the leaf terms of FindBestThreshold (hessian sum + 2 kEpsilon, parent gain with l2)."""
    from oocgbdt.kernels.categorical import find_best_categorical_splits
    rng = np.random.default_rng(7)
    n_bins = np.array([3, 12, 1, 30], np.int32)
    offsets = np.concatenate([[1], 1 + np.cumsum(n_bins)]).astype(np.int64)
    counts = rng.integers(0, 400, offsets[-1])
    hist = np.c_[rng.normal(size=offsets[-1]) * counts * 0.2, counts * 0.25]
    hist[:1] = 0.0
    lo, hi = offsets[0], offsets[1]
    sum_g, sum_h = float(hist[lo:hi, 0].sum()), float(hist[lo:hi, 1].sum())
    count = float(counts[lo:hi].sum())
    hist[offsets[1]:offsets[2]] *= sum_h / hist[offsets[1]:offsets[2], 1].sum()  # same leaf
    hist[offsets[3]:offsets[4]] *= sum_h / hist[offsets[3]:offsets[4], 1].sum()
    mask = np.array([True, True, True, True])
    out = np.full((4, 6), 99.0)
    out_bins = np.zeros((4, 8), np.int64)
    l2, min_gain = 1.0, 0.5
    find_best_categorical_splits(hist, offsets, n_bins, mask, sum_g, sum_h, count, 0.0, l2, 10.0,
                                 1e-3, min_gain, 4, 8, 3.0, 5.0, 20, out, out_bins)
    sum_h2 = sum_h + 2e-15
    parent = sum_g * sum_g / (sum_h2 + l2)
    assert out[2, 0] == -np.inf  # one bin: nothing to split
    assert np.isfinite(out[[0, 1, 3], 0]).all()  # one-vs-rest (f0) and many-vs-many (f1, f3)
    for f in (0, 1, 3):
        ref, ref_bins = np.empty(5), np.zeros(8, np.int64)
        find_best_categorical_naive(hist, offsets[f], n_bins[f], sum_g, sum_h2, count,
                                    count / sum_h2, 0.0, l2, 10.0, 1e-3, parent + min_gain, 4, 8,
                                    3.0, 5.0, 20, ref, ref_bins)
        if not np.isfinite(ref[0]):
            assert out[f, 0] == -np.inf
            continue
        k = int(ref[4])
        assert out[f, 0] == pytest.approx(ref[0] - parent, rel=1e-9)
        assert int(out[f, 1]) == k and out[f, 2] == 0.0
        np.testing.assert_array_equal(out_bins[f, :k], ref_bins[:k])
        np.testing.assert_allclose(out[f, 3:6], [ref[1], ref[2] - 1e-15, ref[3]], rtol=1e-10)
