"""Split-search kernel against a brute-force enumeration of every partition."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from oocgbdt.kernels.splitting import find_best_thresholds, find_best_thresholds_naive


def _random_case(rng, n_features, missing_types):
    nb = rng.integers(2, 20, size=n_features).astype(np.int32)
    offsets = np.concatenate([[0], np.cumsum(nb)]).astype(np.int64)
    n_rows = 400
    hist = np.zeros((offsets[-1], 3))
    g = rng.normal(size=n_rows)
    h = rng.uniform(0.05, 1.0, size=n_rows)
    for f in range(n_features):
        # skewed bin distribution, with some empty bins
        p = rng.dirichlet(np.full(nb[f], 0.5))
        bins = rng.choice(nb[f], size=n_rows, p=p)
        np.add.at(hist[:, 0], offsets[f] + bins, g)
        np.add.at(hist[:, 1], offsets[f] + bins, h)
        np.add.at(hist[:, 2], offsets[f] + bins, 1)
    default_bins = np.array([rng.integers(0, b) for b in nb], dtype=np.int32)
    return hist, offsets, nb, np.asarray(missing_types, np.uint8), default_bins, g.sum(), h.sum(), n_rows


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), l1=st.sampled_from([0.0, 0.5]), l2=st.sampled_from([0.0, 1.0]),
       min_data=st.sampled_from([1, 20, 100]), min_gain=st.sampled_from([0.0, 1.0]))
def test_kernel_matches_brute_force(seed, l1, l2, min_data, min_gain):
    rng = np.random.default_rng(seed)
    mts = rng.integers(0, 3, size=6)
    hist, offsets, nb, mts, dbins, G, H, N = _random_case(rng, 6, mts)
    mfbs = np.where(rng.random(6) < 0.5, 0, dbins).astype(np.int32)
    mask = rng.random(6) < 0.85
    out = np.empty((6, 6))
    ref = np.empty((6, 6))
    args = (hist, offsets, nb, mts, dbins, mfbs, mask, G, H, float(N), l1, l2, float(min_data), 1e-3,
            min_gain)
    find_best_thresholds(*args, out)
    find_best_thresholds_naive(*args, ref)
    np.testing.assert_array_equal(np.isfinite(out[:, 0]), np.isfinite(ref[:, 0]))
    ok = np.isfinite(out[:, 0])
    np.testing.assert_allclose(out[ok, 0], ref[ok, 0], rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(out[ok, 1:3], ref[ok, 1:3])
    np.testing.assert_allclose(out[ok, 3:], ref[ok, 3:], rtol=1e-9, atol=1e-7)
    assert not np.isfinite(out[~mask, 0]).any()


def test_gain_formula_on_hand_made_histogram():
    # one feature, 3 bins, no missing: rows with g = [-2, -2, +4] per bin, h = 1 each
    hist = np.array([[-2.0, 1, 1], [-2.0, 1, 1], [4.0, 1, 1]])
    out = np.empty((1, 6))
    find_best_thresholds(hist, np.array([0, 3], np.int64), np.array([3], np.int32),
                         np.array([0], np.uint8), np.array([0], np.int32), np.array([0], np.int32),
                         np.array([True]),
                         0.0, 3.0, 3.0, 0.0, 0.0, 1.0, 0.0, 0.0, out)
    # best: bins {0,1} left (G=-4,H=2) vs {2} right (G=4,H=1): gain = 16/2 + 16/1 - 0/3 = 24
    assert out[0, 0] == pytest.approx(24.0, rel=1e-12)
    assert out[0, 1] == 1 and out[0, 5] == 2


def test_nan_feature_with_two_bins_sends_nan_right():
    # bin 0 = all values, bin 1 = NaN: the only split separates NaN rows, default_left False
    hist = np.array([[-3.0, 3, 3], [3.0, 3, 3]])
    out = np.empty((1, 6))
    find_best_thresholds(hist, np.array([0, 2], np.int64), np.array([2], np.int32),
                         np.array([2], np.uint8), np.array([0], np.int32), np.array([0], np.int32),
                         np.array([True]),
                         0.0, 6.0, 6.0, 0.0, 0.0, 1.0, 0.0, 0.0, out)
    assert np.isfinite(out[0, 0]) and out[0, 1] == 0 and out[0, 2] == 0.0


def _wide_case(rng, n_features, n_rows, missing_types):
    """Features of 16-255 bins (the search's phased scan), skewed, with runs of empty bins."""
    nb = rng.integers(16, 256, size=n_features).astype(np.int32)
    offsets = np.concatenate([[0], np.cumsum(nb)]).astype(np.int64)
    hist = np.zeros((offsets[-1], 2))
    g = rng.normal(size=n_rows)
    h = rng.uniform(0.05, 1.0, size=n_rows)
    for f in range(n_features):
        p = rng.dirichlet(np.full(nb[f], 0.3))
        bins = rng.choice(nb[f], size=n_rows, p=p)
        np.add.at(hist[:, 0], offsets[f] + bins, g)
        np.add.at(hist[:, 1], offsets[f] + bins, h)
    default_bins = np.array([rng.integers(0, b) for b in nb], dtype=np.int32)
    return (hist, offsets, nb, np.asarray(missing_types, np.uint8), default_bins,
            hist[offsets[0]:offsets[1], 0].sum(), hist[offsets[0]:offsets[1], 1].sum(), n_rows)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), l1=st.sampled_from([0.0, 0.5]), l2=st.sampled_from([0.0, 1.0]),
       min_data=st.sampled_from([1, 20, 300]), min_gain=st.sampled_from([0.0, 1.0]))
def test_kernel_matches_brute_force_on_wide_features(seed, l1, l2, min_data, min_gain):
    # Scans of 16 bins and more run in phases (stored running sums, vectorized gains, then the
    # first largest); the brute-force enumeration checks them, every missing type included.
    rng = np.random.default_rng(seed)
    n_features = 6
    hist, offsets, nb, mts, dbins, G, H, N = _wide_case(rng, n_features, 3000,
                                                         rng.integers(0, 3, size=n_features))
    mfbs = np.where(rng.random(n_features) < 0.5, 0, dbins).astype(np.int32)
    mask = np.ones(n_features, dtype=bool)
    out = np.empty((n_features, 6))
    ref = np.empty((n_features, 6))
    args = (hist, offsets, nb, mts, dbins, mfbs, mask, G, H, float(N), l1, l2, float(min_data),
            1e-3, min_gain)
    find_best_thresholds(*args, out)
    find_best_thresholds_naive(*args, ref)
    np.testing.assert_array_equal(np.isfinite(out[:, 0]), np.isfinite(ref[:, 0]))
    ok = np.isfinite(out[:, 0])
    assert ok.sum() >= 1
    np.testing.assert_allclose(out[ok, 0], ref[ok, 0], rtol=1e-9, atol=1e-9)
    for f in np.flatnonzero(ok):
        if (out[f, 1:3] == ref[f, 1:3]).all():
            np.testing.assert_allclose(out[f, 3:], ref[f, 3:], rtol=1e-9, atol=1e-7)
            continue
        # With empty bins, scan R and scan F can reach the same split of the rows with the
        # sides swapped (e.g. R: the missing bin alone on the left; F: the same bin alone on
        # the right). The scans' running sums round differently, so either may come out ahead
        # by more than the search's 1e-12 margin; the split chosen must still be the same one.
        occupied = hist[offsets[f]:offsets[f + 1], 1] > 0
        sides = [_left_bins(nb[f], mts[f], dbins[f], int(r[1]), bool(r[2])) & occupied
                 for r in (out[f], ref[f])]
        assert (sides[0] == sides[1]).all() or (sides[0] == (occupied & ~sides[1])).all(), f


def _left_bins(n_bins, missing_type, default_bin, threshold, default_left):
    """The bins a split sends left: those up to the threshold, the missing bin (the NaN bin,
    or the zero bin for a Zero-type feature) by ``default_left``."""
    left = np.arange(n_bins) <= threshold
    missing = n_bins - 1 if missing_type == 2 else (default_bin if missing_type == 1 else -1)
    if missing >= 0:
        left[missing] = default_left
    return left


def _scan_r_sequential(h, sum_g, sum_h, count, l2, min_data, min_hess, min_gain):
    """LightGBM's FindBestThresholdSequentially, scan R of a feature without missing values,
    transcribed loop for loop in Python floats (the same operations in the same order, so the
    same bits): ``(gain - parent gain, threshold, left g, left h, left count)`` or None."""
    eps = 1e-15
    sum_h2 = sum_h + 2 * eps
    cnt_factor = count / sum_h2
    parent = sum_g * sum_g / (sum_h2 + l2)
    shift = parent + min_gain
    acc_g, acc_h, acc_e = 0.0, eps, 0.0
    best = None
    for t in range(h.shape[0] - 1, 0, -1):
        acc_g += float(h[t, 0])
        acc_h += float(h[t, 1])
        acc_e += float(np.floor(float(h[t, 1]) * cnt_factor + 0.5))
        if acc_e < min_data or acc_h < min_hess:
            continue
        if count - acc_e < min_data:
            break
        lh = sum_h2 - acc_h
        if lh < min_hess:
            break
        lg = sum_g - acc_g
        gain = lg * lg / (lh + l2) + acc_g * acc_g / (acc_h + l2)
        if gain > shift and (best is None or gain > best[0]):
            best = (gain, t - 1, lg, lh, count - acc_e)
    return None if best is None else (best[0] - parent,) + best[1:]


@pytest.mark.parametrize("negative", [False, True])
def test_wide_scan_keeps_lightgbms_stops_with_negative_hessians(negative):
    # A custom objective may give negative hessians: the running sums then fall as well as
    # rise, and LightGBM's scan ends at the first candidate that leaves too little on the
    # other side, even if a later one would pass. The search must give what LightGBM's loop
    # gives, bit for bit, whether or not a hessian is negative.
    rng = np.random.default_rng(7)
    nb = 200
    g = rng.normal(size=nb) * 0.5
    h = rng.uniform(0.5, 1.5, size=nb)
    g[:10] = -10.0  # the best partition by far: bins 0-9 left
    h[:10] = 10.0
    if negative:
        # Bins 10-19 take the left side's hessian from 100 down to 10 and its gradient from
        # -100 back to 0: scanning down from the top, the scan meets a left side under
        # min_sum_hessian at threshold 19 and stops there, before the far better threshold 9.
        g[10:20] = 10.0
        h[10:20] = -9.0
    hist = np.stack([g, h], axis=1)
    sum_g, sum_h = float(g.sum()), float(h.sum())
    count, l2, min_data, min_hess = 2000.0, 1.0, 10.0, 20.0
    out = np.empty((1, 6))
    find_best_thresholds(hist, np.array([0, nb], np.int64), np.array([nb], np.int32),
                         np.zeros(1, np.uint8), np.zeros(1, np.int32), np.zeros(1, np.int32),
                         np.ones(1, bool), sum_g, sum_h, count, 0.0, l2, min_data, min_hess,
                         0.0, out)
    ref = _scan_r_sequential(hist, sum_g, sum_h, count, l2, min_data, min_hess, 0.0)
    assert ref is not None and (ref[1] == 9) != negative
    assert out[0, 0] == ref[0] and out[0, 1] == ref[1]
    assert (out[0, 3], out[0, 4], out[0, 5]) == ref[2:]
