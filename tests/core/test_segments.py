"""Tests of the split search shared out by feature blocks (LightGBM's data-parallel learner):
``feature_blocks``, ``merge_block_records`` and training with segments, whose models must be
bit for bit those of one search over all features (the oracle: the same training without
segments)."""
import numpy as np
import pytest

from oocgbdt.core.executor import LocalExecutor
from oocgbdt.core.histogram_source import merge_block_records
from oocgbdt.core.split import FeatureMeta, LeafTotals, SplitInfo, feature_blocks
from tests.core._helpers import fit_in_process


def _meta(n_bins, mask=None):
    n_bins = np.asarray(n_bins, dtype=np.int32)
    offsets = np.concatenate([[1], 1 + np.cumsum(n_bins)]).astype(np.int64)  # after the count row
    mask = np.ones(n_bins.size, bool) if mask is None else np.asarray(mask, bool)
    return FeatureMeta(bin_offsets=offsets, n_bins=n_bins,
                       missing_types=np.zeros(n_bins.size, np.uint8),
                       default_bins=np.zeros(n_bins.size, np.int32), feature_mask=mask)


@pytest.mark.parametrize("n_feature_blocks", [2, 3])
def test_feature_segments_cover_the_histogram_in_balanced_feature_blocks(n_feature_blocks):
    rng = np.random.default_rng(0)
    n_bins = rng.integers(2, 256, size=40)
    mask = rng.random(40) > 0.2
    meta = _meta(n_bins, mask)
    segs = feature_blocks(meta, n_feature_blocks)
    assert len(segs) == n_feature_blocks
    assert segs[0][0] == 1 and segs[-1][1] == meta.n_total_bins
    searched = np.zeros(40, bool)
    weights = []
    for (lo, hi, m), nxt in zip(segs, segs[1:] + [(meta.n_total_bins,)]):
        assert lo < hi == nxt[0]  # contiguous, no gap, no overlap
        own = np.flatnonzero(m.feature_mask)
        assert own.size and not searched[own].any()
        searched[own] = True
        # The segment's features lie in its rows; offsets are shifted to the slice after the
        # count row (histogram_rows).
        np.testing.assert_array_equal(m.bin_offsets, meta.bin_offsets - lo + 1)
        assert meta.bin_offsets[own.min()] >= lo and meta.bin_offsets[own.max() + 1] <= hi
        weights.append(n_bins[own].sum())
    np.testing.assert_array_equal(searched, mask)  # every searchable feature, once
    # Balanced to within one feature's bins of an equal share.
    assert max(weights) - min(weights) <= 2 * n_bins.max()


def test_feature_segments_decline_what_they_cannot_share():
    assert feature_blocks(_meta([5, 5, 5]), 1) is None
    assert feature_blocks(_meta([5, 5, 5], [True, False, False]), 2) is None  # one searchable
    bundled = FeatureMeta(  # two features merged in one bundle: not the per-feature layout
        bin_offsets=np.array([0, 4, 8], np.int64), n_bins=np.array([4, 4], np.int32),
        missing_types=np.zeros(2, np.uint8), default_bins=np.zeros(2, np.int32),
        feature_mask=np.ones(2, bool), bundle_offsets=np.array([0, 7], np.int64),
        feature_bundle=np.array([0, 0]), feature_start=np.array([0, 3]),
        feature_raw=np.array([False, False]), expand_index=np.arange(8) - 1)
    assert feature_blocks(bundled, 2) is None


def _rec(gain, feature, flags):
    t = LeafTotals(0.0, 1.0, 10.0)
    return SplitInfo(gain=gain, feature=feature, threshold_bin=0, default_left=False, left=t,
                     right=t, splittable=np.array(flags, bool))


def test_merge_segment_records_takes_the_best_and_the_lower_feature_on_ties():
    seg0 = [(_rec(2.0, 0, [1, 0, 0, 0]), _rec(1.0, 1, [0, 1, 0, 0])), (None, None)]
    seg1 = [(_rec(2.0, 2, [0, 0, 1, 0]), _rec(3.0, 3, [0, 0, 0, 1])), (_rec(0.5, 2, [0, 0, 1, 1]), None)]
    gains = [np.array([[2.0, 1.0, -np.inf, -np.inf], [-np.inf] * 4]),
             np.array([[-np.inf, -np.inf, 2.0, 3.0], [-np.inf, -np.inf, 0.5, 0.1]])]
    records, merged = merge_block_records([seg0, seg1], gains)
    (left, right), (left2, right2) = records
    assert left.feature == 0  # tie at 2.0: the lower feature, as argmax over all features
    assert right.feature == 3 and right.gain == 3.0
    np.testing.assert_array_equal(left.splittable, [1, 0, 1, 0])
    np.testing.assert_array_equal(right.splittable, [0, 1, 0, 1])
    assert left2.feature == 2 and right2 is None
    np.testing.assert_array_equal(left2.splittable, [0, 0, 1, 1])
    np.testing.assert_array_equal(merged, np.maximum(gains[0], gains[1]))


def _segmented_backend(n):
    class Segmented(LocalExecutor):
        n_feature_blocks = n
    return Segmented


CASES = {
    "binary, NaN, lookahead": (
        dict(objective="binary", num_leaves=31, min_data_in_leaf=5, lookahead_leaves=2), "nan"),
    "weighted logloss, min_data 50": (
        dict(objective="binary", num_leaves=15, min_data_in_leaf=50), "weights"),
    "regression, depth, l1/l2": (
        dict(objective="regression", num_leaves=31, max_depth=4, lambda_l1=0.5, lambda_l2=2.0,
             min_sum_hessian_in_leaf=0.0), None),
    "multiclass, goss, screening": (
        dict(objective="multiclass", num_class=3, num_leaves=15, data_sample_strategy="goss",
             feature_screening="ema", screening_warmup=2, screening_ratio=0.5,
             lookahead_leaves=2), None),
    "EFB bundles (segments declined)": (
        dict(objective="binary", num_leaves=15), "onehot"),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("n_feature_blocks", [2, 3])
def test_training_with_segments_gives_the_same_model(case, n_feature_blocks):
    """Every histogram value is added in the same order and every feature searched with the
    same totals, so the model is bit for bit the one searched in one step (the oracle), and so
    are the per-tree pass counts."""
    params, kind = CASES[case]
    rng = np.random.default_rng(7)
    n = 4000
    X = rng.normal(size=(n, 12)).astype(np.float32)
    w = None
    if kind == "nan":
        X[rng.random((n, 12)) < 0.1] = np.nan
    elif kind == "weights":
        w = rng.uniform(0.5, 2.0, n)
    elif kind == "onehot":
        onehot = np.zeros((n, 5), np.float32)
        onehot[np.arange(n), rng.integers(0, 5, n)] = 1.0
        X = np.hstack([X, onehot])
    signal = np.nan_to_num(X[:, 0]) + np.sin(2 * np.nan_to_num(X[:, 1])) + 0.3 * rng.normal(size=n)
    if params["objective"] == "regression":
        y = signal
    elif params["objective"] == "binary":
        y = (signal > 0.2).astype(float)
    else:
        y = np.digitize(signal, [-0.5, 0.7])
    params = dict(params, n_estimators=5, chunk_rows=1000, verbose=False)
    ref = fit_in_process(params, X, y, sample_weight=w)
    made = []

    class Spy(_segmented_backend(n_feature_blocks)):
        def submit(self, fn, *args, key=None, place=None):
            if place is not None:
                made.append(place)
            return super().submit(fn, *args, key=key, place=place)

    got = fit_in_process(params, X, y, sample_weight=w, executor=Spy(n_threads=2))
    assert got.to_dict() == ref.to_dict()
    assert [s["n_passes"] for s in got.tree_stats] == [s["n_passes"] for s in ref.tree_stats]
    if kind == "onehot":
        assert not made  # merged bundles: one search over every feature
    else:
        assert set(made) == set(range(n_feature_blocks))  # the search was shared out
