"""min_data_in_leaf on LightGBM's hessian-estimated row counts (as on kddcup99).

LightGBM checks ``min_data_in_leaf`` against counts estimated from hessians
(``FindBestThresholdSequentially``: per bin ``RoundInt(hess * num_data / sum_hessian)``), not
against true row counts. For logloss and softmax, rows with large hessians count as several
rows, so LightGBM keeps leaves of fewer than ``min_data_in_leaf`` rows. These tests pin the
kernel against its brute-force twin on such histograms, and oocgbdt's trees against LightGBM's
where they used to differ.
"""
import numpy as np
import pytest

from oocgbdt.kernels.splitting import find_best_thresholds, find_best_thresholds_naive
from tests.conftest import load_lightgbm_tsv
from tests.core._helpers import fit_in_process

# --------------------------------------------------------------------------------------------
# kernel
# --------------------------------------------------------------------------------------------


def _skewed_case(rng, n_features=6, n_rows=300):
    """A histogram whose hessians span four orders of magnitude (a misfit minority with
    hessians near 0.25 among rows near 1e-3, as in a softmax round), so estimated counts are
    far from true counts."""
    nb = rng.integers(3, 24, size=n_features).astype(np.int32)
    offsets = np.concatenate([[0], np.cumsum(nb)]).astype(np.int64)
    g = rng.normal(size=n_rows)
    h = np.where(rng.random(n_rows) < 0.1, rng.uniform(0.1, 0.25, n_rows),
                 rng.uniform(1e-4, 1e-2, n_rows))
    hist = np.zeros((offsets[-1], 3))
    for f in range(n_features):
        bins = rng.choice(nb[f], size=n_rows, p=rng.dirichlet(np.full(nb[f], 0.4)))
        np.add.at(hist[:, 0], offsets[f] + bins, g)
        np.add.at(hist[:, 1], offsets[f] + bins, h)
        np.add.at(hist[:, 2], offsets[f] + bins, 1)
    mts = rng.integers(0, 3, size=n_features).astype(np.uint8)
    dbins = np.array([rng.integers(0, b) for b in nb], dtype=np.int32)
    mfbs = np.where(rng.random(n_features) < 0.5, 0, dbins).astype(np.int32)
    return hist, offsets, nb, mts, dbins, mfbs, g.sum(), h.sum(), float(n_rows)


def test_kernel_matches_brute_force_with_estimated_counts():
    """Kernel == naive twin on 300 skewed-hessian histograms (both scans, every missing type,
    most frequent bin 0 or not), and the estimated rule really is exercised: some chosen splits
    leave fewer than min_data_in_leaf true rows on a side, which exact counts would refuse."""
    rng = np.random.default_rng(2)
    below_min_data = 0
    for case in range(300):
        hist, offsets, nb, mts, dbins, mfbs, G, H, N = _skewed_case(rng)
        min_data = float(rng.choice([5, 20, 40]))
        mask = np.ones(len(nb), bool)
        out, ref = np.empty((len(nb), 6)), np.empty((len(nb), 6))
        args = (hist, offsets, nb, mts, dbins, mfbs, mask, G, H, N, 0.0, 0.0, min_data, 1e-3, 0.0)
        find_best_thresholds(*args, out)
        find_best_thresholds_naive(*args, ref)
        np.testing.assert_array_equal(np.isfinite(out[:, 0]), np.isfinite(ref[:, 0]))
        ok = np.isfinite(out[:, 0])
        np.testing.assert_allclose(out[ok, 0], ref[ok, 0], rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(out[ok, 1:3], ref[ok, 1:3])
        np.testing.assert_allclose(out[ok, 3:], ref[ok, 3:], rtol=1e-9, atol=1e-9)
        # the returned left count is the estimate (compared with the twin above); the true
        # count (this test's count column, which the kernel does not read) can be far from it
        for f in np.flatnonzero(ok):
            lo, b = offsets[f], int(out[f, 1])
            left = np.arange(nb[f]) <= b
            missing_bin = nb[f] - 1 if mts[f] == 2 else (dbins[f] if mts[f] == 1 else -1)
            if missing_bin >= 0:
                left[missing_bin] = bool(out[f, 2])
            true_left = hist[lo:lo + nb[f]][left, 2].sum()
            below_min_data += min(true_left, N - true_left) < min_data
    assert below_min_data > 20


def _one_feature(hist, mt=0, default_bin=0, most_freq_bin=-1, min_data=20.0):
    hist = np.asarray(hist, dtype=np.float64)
    out = np.empty((1, 6))
    find_best_thresholds(hist, np.array([0, len(hist)], np.int64), np.array([len(hist)], np.int32),
                         np.array([mt], np.uint8), np.array([default_bin], np.int32),
                         np.array([most_freq_bin], np.int32), np.array([True]),
                         hist[:, 0].sum(), hist[:, 1].sum(), hist[:, 2].sum(), 0.0, 0.0,
                         min_data, 1e-3, 0.0, out)
    return out[0]


def test_five_rows_with_large_hessians_count_as_many():
    """100 rows: 95 fitted (hessians summing to 0.95) and 5 misfit (hessians summing to 1.0).
    With cnt_factor = 100 / 1.95, the 5-row bin is estimated at RoundInt(51.28) = 51 rows, so
    it may be split off under min_data_in_leaf = 20, as LightGBM does; the left count returned
    is LightGBM's estimate, 100 - 51 = 49 (the true count, 95, comes from routing the rows)."""
    rec = _one_feature([[-0.95, 0.95, 95.0], [4.0, 1.0, 5.0]])
    assert np.isfinite(rec[0]) and rec[1] == 0 and rec[5] == 49.0
    # the same rows with unit hessians (estimates = true counts): no split
    assert _one_feature([[-0.95, 95.0, 95.0], [4.0, 5.0, 5.0]])[0] == -np.inf
    # 5 rows with tiny hessians count as RoundInt(0.01 * 100 / 19.01) = 0 rows: no split even
    # under min_data_in_leaf = 1
    assert _one_feature([[-0.95, 19.0, 95.0], [4.0, 0.01, 5.0]], min_data=1.0)[0] == -np.inf


def test_forward_scan_counts_of_a_nan_feature_with_most_frequent_bin_zero():
    """A NaN-type feature whose most frequent bin is 0: LightGBM's scan F takes the left count
    as num_data minus the estimates of every other bin (NaN bin included), which can round
    differently from the estimate of bin 0 itself. Bins: 0, 1, NaN."""
    # 60 rows, cnt_factor = 60 / 6.0 = 10: estimates 26.34 -> 26, 26.33 -> 26, 7.33 -> 7
    hist = [[-3.0, 2.634, 30.0], [2.0, 2.633, 24.0], [1.0, 0.733, 6.0]]
    # min_data 27: "bin 0 left, bin 1 and NaN right" (scan F, threshold 0) has 26 estimated
    # rows from bin 0's own estimate, 60 - 26 - 7 = 27 by LightGBM's subtraction.
    without = _one_feature(hist, mt=2, most_freq_bin=1, min_data=27.0)
    with_offset = _one_feature(hist, mt=2, most_freq_bin=0, min_data=27.0)
    assert without[0] == -np.inf
    assert np.isfinite(with_offset[0]) and with_offset[1] == 0 and with_offset[2] == 0.0
    assert with_offset[5] == 27.0  # the estimate by subtraction (30 true rows)


# --------------------------------------------------------------------------------------------
# trees against LightGBM
# --------------------------------------------------------------------------------------------


def _lgb_nodes(tree):
    nodes, leaves = {}, {}

    def walk(n):
        if "leaf_index" in n:
            leaves[n["leaf_index"]] = n
        else:
            nodes[n["split_index"]] = n
            walk(n["left_child"])
            walk(n["right_child"])

    walk(tree["tree_structure"])
    return nodes, leaves


def _leaf_of_rows(tree, X):
    """Leaf index of each row of ``X`` (no NaN) in an oocgbdt tree."""
    out = np.zeros(len(X), dtype=np.int64)
    if tree.n_leaves == 1:
        return out
    node = np.zeros(len(X), dtype=np.int64)
    active = np.arange(len(X))
    while active.size:
        nd = node[active]
        left = X[active, tree.split_feature[nd]] <= tree.threshold[nd]
        child = np.where(left, tree.left_child[nd], tree.right_child[nd])
        done = child < 0
        out[active[done]] = ~child[done]
        node[active[~done]] = child[~done]
        active = active[~done]
    return out


def _assert_same_trees(ours, model, X, n_trees):
    """The first ``n_trees`` trees: same split features, default sides, node and leaf row
    counts, every training row in the same leaf, leaf values up to float rounding (tree 0's
    LightGBM leaves hold the init score, oocgbdt keeps it apart), and the same thresholds
    except where the two differ only by bins empty in the node (the same partition of the
    training rows: which of such equal-gain thresholds wins is float rounding)."""
    dump = model.dump_model()["tree_info"]
    assert len(ours.trees) >= n_trees and len(dump) >= n_trees
    lgb_leaf = model.predict(X, pred_leaf=True).reshape(len(X), -1)
    init = np.atleast_1d(ours.init_score)
    k = ours.n_outputs
    n_thresholds = n_same = 0
    for i in range(n_trees):
        t, (nodes, leaves) = ours.trees[i], _lgb_nodes(dump[i])
        assert t.n_leaves == len(leaves), f"tree {i}"
        for j in range(t.n_leaves - 1):
            a = nodes[j]
            assert (a["split_feature"], bool(a["default_left"]), a["internal_count"]) == \
                (t.split_feature[j], bool(t.default_left[j]), t.internal_count[j]), \
                f"tree {i} node {j}"
            n_thresholds += 1
            n_same += bool(np.isclose(a["threshold"], t.threshold[j], rtol=1e-6))
        counts = [leaves[j]["leaf_count"] for j in range(t.n_leaves)]
        np.testing.assert_array_equal(counts, t.leaf_count, err_msg=f"tree {i}")
        np.testing.assert_array_equal(_leaf_of_rows(t, X), lgb_leaf[:, i], err_msg=f"tree {i}")
        values = np.array([leaves[j]["leaf_value"] for j in range(t.n_leaves)])
        if i < k and t.n_leaves > 1:
            values = values - init[i]
        np.testing.assert_allclose(values, t.leaf_value, rtol=1e-6, atol=1e-9,
                                   err_msg=f"tree {i}")
    assert n_same >= 0.95 * n_thresholds


def _lgb_leaf_counts(model, n_trees):
    return [n["leaf_count"] for t in model.dump_model()["tree_info"][:n_trees]
            for n in _lgb_nodes(t)[1].values()]


def _rare_class_data(n=4000, seed=0):
    """Softmax on 4 continuous features with a rare class (1.5% of rows, overlapping the
    others): from round 1 its misfit rows have hessians far above the fitted rows', the
    kddcup99 situation in small. Random row weights make every row's gradient distinct, so no
    two candidate splits tie exactly (unweighted, round 0's gradients take one value per class
    and different splits with the same class counts tie; which one wins is float rounding)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(np.float64)
    rare = rng.random(n) < 0.015
    y[rare & (X[:, 1] > 0)] = 2
    y[rare & (X[:, 1] <= 0) & (X[:, 2] > 0.5)] = 2
    w = np.random.default_rng(seed + 1).uniform(0.5, 2.0, n).astype(np.float32)
    return X, y, w


def test_trees_equal_lightgbm_where_estimated_counts_admit_small_leaves():
    """Multiclass with a rare class: the first 30 rounds (90 trees) equal LightGBM's, with
    over a hundred leaves of fewer than min_data_in_leaf = 20 true rows, which exact counts
    forbade (with exact counts the first difference was in tree 0; without LightGBM's rule that
    children skip the features with no valid split in their parent, in tree 44)."""
    lgb = pytest.importorskip("lightgbm")
    X, y, w = _rare_class_data()
    params = dict(objective="multiclass", num_class=3, num_leaves=31, learning_rate=0.1,
                  max_bin=255)
    rounds = 30
    ours = fit_in_process(dict(params, n_estimators=rounds), X, y, sample_weight=w)
    model = lgb.train(dict(params, enable_bundle=False, deterministic=True, num_threads=1,
                           verbose=-1), lgb.Dataset(X, y, weight=w), num_boost_round=rounds)
    assert sum(c < 20 for c in _lgb_leaf_counts(model, 3 * rounds)) > 100
    _assert_same_trees(ours, model, X, 3 * rounds)


def test_lightgbm_binary_first_trees_still_equal_lightgbm(shared_data):
    """lightgbm_binary at the benchmark's parameters (logloss, so estimated counts differ from
    true counts): the first 30 trees equal LightGBM's."""
    lgb = pytest.importorskip("lightgbm")
    X, y = load_lightgbm_tsv(shared_data / "lightgbm_binary" / "binary.train")
    params = dict(objective="binary", num_leaves=31, learning_rate=0.1, max_bin=255)
    n = 30
    ours = fit_in_process(dict(params, n_estimators=n), X, y)
    model = lgb.train(dict(params, enable_bundle=False, deterministic=True, num_threads=1,
                           verbose=-1), lgb.Dataset(X, y), num_boost_round=n)
    _assert_same_trees(ours, model, X, n)


def test_zero_hessian_sides_with_min_sum_hessian_0_train_as_lightgbm():
    """min_sum_hessian_in_leaf=0 with logloss at learning_rate 1: hessians underflow to exactly
    0 in float32 and a candidate side can hold rows but no hessian. Its gain is 0/0 (NaN) in
    LightGBM's C++ and never chosen (not a ZeroDivisionError in the kernel). The trees equal
    LightGBM's."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 8)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=1500) > 0).astype(float)
    params = dict(objective="binary", learning_rate=1.0, num_leaves=7, max_bin=255,
                  min_sum_hessian_in_leaf=0.0)
    ours = fit_in_process(dict(params, n_estimators=3), X, y)
    model = lgb.train(dict(params, enable_bundle=False, deterministic=True, num_threads=1,
                           verbose=-1), lgb.Dataset(X, y), num_boost_round=3)
    _assert_same_trees(ours, model, X, 3)


def test_kernel_skips_a_side_without_hessian():
    """A bin whose rows have zero hessians: with min_sum_hessian 0 the threshold that leaves it
    alone on one side has a 0/0 gain, which is not chosen; the best split is another one."""
    # Hessian sums of 400: the kEpsilon offsets vanish in float64, so the threshold putting bin
    # 0 alone on the left has a left side of exactly 0 gradient and 0 hessian (gain 0/0).
    hist = np.array([[0.0, 0.0, 0.0], [-300.0, 200.0, 0.0], [300.0, 200.0, 0.0]])
    out = np.empty((1, 6))
    find_best_thresholds(hist, np.array([0, 3], np.int64), np.array([3], np.int32),
                         np.array([0], np.uint8), np.array([0], np.int32),
                         np.array([-1], np.int32), np.array([True]), 0.0, 400.0, 30.0, 0.0, 0.0,
                         0.0, 0.0, 0.0, out)
    assert out[0, 1] == 1.0  # bins 0-1 left, bin 2 right
    np.testing.assert_allclose(out[0, 0], 900.0)  # 300^2 / 200 on each side, parent gain 0
