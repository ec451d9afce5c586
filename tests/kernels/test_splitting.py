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
