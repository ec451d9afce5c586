"""Leaf-output options of the split-search kernels (max_delta_step, path_smooth, monotone
bounds and directions) against their NumPy twins, and hand-checked values."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from oocgbdt.kernels.categorical import find_best_categorical, find_best_categorical_naive
from oocgbdt.kernels.splitting import (find_best_thresholds, find_best_thresholds_naive,
                                       monotone_penalty_factor)
from tests.kernels.test_categorical import _leaf_hist
from tests.kernels.test_splitting import _random_case


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), l1=st.sampled_from([0.0, 0.5]),
       max_delta_step=st.sampled_from([0.0, 0.3]), path_smooth=st.sampled_from([0.0, 3.0]),
       use_mc=st.booleans(), bounded=st.booleans())
def test_numerical_kernel_with_output_options_matches_naive(seed, l1, max_delta_step, path_smooth,
                                                            use_mc, bounded):
    rng = np.random.default_rng(seed)
    n = 6
    hist, offsets, nb, mts, dbins, G, H, N = _random_case(rng, n, rng.integers(0, 3, size=n))
    mfbs = np.where(rng.random(n) < 0.5, 0, dbins).astype(np.int32)
    mask = rng.random(n) < 0.9
    mono = rng.integers(-1, 2, size=n).astype(np.int8) if use_mc else None
    # Caps and bounds around the leaf's own output, as in a tree: a cap or bound that clamps
    # every candidate's two outputs to one value gives them all one gain, a tie that rounding
    # alone decides.
    own = -G / (H + 1.0)
    parent_output = own + float(rng.normal() * 0.05)
    c_min, c_max = (-np.inf, np.inf)
    if use_mc and bounded:
        c_min, c_max = own - rng.uniform(0.05, 0.3), own + rng.uniform(0.05, 0.3)
    out, ref = np.empty((n, 8)), np.empty((n, 8))
    args = (hist, offsets, nb, mts, dbins, mfbs, mask, G, H, float(N), l1, 1.0, 10.0, 1e-3, 0.0)
    extra = (mono, max_delta_step, path_smooth, parent_output, c_min, c_max)
    find_best_thresholds(*args, out, *extra)
    find_best_thresholds_naive(*args, ref, *extra)
    np.testing.assert_array_equal(np.isfinite(out[:, 0]), np.isfinite(ref[:, 0]))
    ok = np.isfinite(out[:, 0])
    np.testing.assert_allclose(out[ok, 0], ref[ok, 0], rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(out[ok, 1:3], ref[ok, 1:3])
    np.testing.assert_allclose(out[ok, 3:], ref[ok, 3:], rtol=1e-9, atol=1e-7)
    if max_delta_step > 0 and path_smooth == 0:
        assert (np.abs(out[ok, 6:8]) <= max_delta_step).all()
    if use_mc:
        assert ((out[ok, 6:8] >= c_min) & (out[ok, 6:8] <= c_max)).all()
        for f in np.flatnonzero(ok):
            if mono[f] != 0 and out[f, 0] > 0 and path_smooth == 0:
                assert mono[f] * (out[f, 7] - out[f, 6]) >= 0  # outputs follow the direction


def test_without_options_the_outputs_are_the_plain_ones_and_gains_unchanged():
    rng = np.random.default_rng(3)
    hist, offsets, nb, mts, dbins, G, H, N = _random_case(rng, 5, [0, 1, 2, 0, 2])
    mfbs = dbins.copy()
    args = (hist, offsets, nb, mts, dbins, mfbs, np.ones(5, bool), G, H, float(N), 0.0, 1.0,
            5.0, 1e-3, 0.0)
    six, eight = np.empty((5, 6)), np.empty((5, 8))
    find_best_thresholds(*args, six)
    find_best_thresholds(*args, eight)
    np.testing.assert_array_equal(six, eight[:, :6])
    ok = np.isfinite(six[:, 0])
    lg, lh = six[ok, 3], six[ok, 4] + 1e-15
    np.testing.assert_allclose(eight[ok, 6], -lg / (lh + 1.0), rtol=1e-12)
    np.testing.assert_allclose(eight[ok, 7], -(G - lg) / (H + 2e-15 - lh + 1.0), rtol=1e-12)


def _two_bins(g_left, g_right):
    """One feature, bins {0} | {1}, 50 rows of hessian 1 each."""
    return np.array([[g_left, 50.0], [g_right, 50.0]])


def _search(hist, **kw):
    out = np.empty((1, 8))
    find_best_thresholds(hist, np.array([0, 2], np.int64), np.array([2], np.int32),
                         np.zeros(1, np.uint8), np.zeros(1, np.int32), np.zeros(1, np.int32),
                         np.ones(1, bool), float(hist[:, 0].sum()), 100.0, 100.0, 0.0, 0.0,
                         1.0, 1e-3, 0.0, out, **kw)
    return out[0]


def test_monotone_direction_rejects_a_split_against_it():
    hist = _two_bins(-50.0, 50.0)  # outputs: left +1, right -1 (decreasing)
    mono = lambda m: np.array([m], np.int8)
    assert _search(hist, monotone=mono(-1))[0] == pytest.approx(100.0)
    assert _search(hist, monotone=mono(0))[0] == pytest.approx(100.0)
    assert _search(hist, monotone=mono(1))[0] == -np.inf  # scores 0 <= the leaf's gain (0)
    # bounds clamp both outputs: left +1 -> 0.25; gain = -(2 G w + H w^2) per side
    r = _search(hist, monotone=mono(-1), c_min=-0.5, c_max=0.25)
    assert r[6] == 0.25 and r[7] == -0.5
    assert r[0] == pytest.approx(-(2 * -50 * 0.25 + 50 * 0.0625) - (2 * 50 * -0.5 + 50 * 0.25))


def test_max_delta_step_and_path_smooth_outputs_by_hand():
    hist = _two_bins(-50.0, 50.0)
    r = _search(hist, max_delta_step=0.4)
    assert r[6] == pytest.approx(0.4) and r[7] == pytest.approx(-0.4)
    # path_smooth 25: w = 50 / 25 = 2, output = 1 * 2/3 + parent / 3
    r = _search(hist, path_smooth=25.0, parent_output=0.3)
    assert r[6] == pytest.approx(2 / 3 + 0.1) and r[7] == pytest.approx(-2 / 3 + 0.1)


@pytest.mark.parametrize("seed", range(6))
def test_categorical_kernel_with_output_options_matches_naive(seed):
    rng = np.random.default_rng(seed)
    for n_bins in (3, 4, 9, 30):
        h, lo, count = _leaf_hist(rng, n_bins, int(rng.integers(200, 3000)), "varied")
        sum_g = float(h[lo:lo + n_bins, 0].sum())
        sum_h2 = float(h[lo:lo + n_bins, 1].sum()) + 2e-15
        own = -sum_g / (sum_h2 + 1.0)
        for cap, smooth, use_mc in ((1.2, 0.0, False), (0.0, 4.0, False), (2.0, 2.0, True)):
            # Caps and bounds around the leaf's own output (see the numerical test above).
            mds = cap * abs(own)
            bounds = ((own - rng.uniform(0.05, 0.5), own + rng.uniform(0.05, 0.5)) if use_mc
                      else (-np.inf, np.inf))
            args = (h, lo, n_bins, sum_g, sum_h2, count, count / sum_h2, 0.0, 1.0, 5.0, 1e-3,
                    float(rng.normal()), 4, 32, 2.0, 1.0, 5)
            extra = (mds, smooth, own + float(rng.normal()) * 0.1, use_mc) + bounds
            res, bins = np.empty(5), np.zeros(40, np.int64)
            ref, ref_bins = np.empty(5), np.zeros(40, np.int64)
            find_best_categorical(*args, res, bins, *extra)
            find_best_categorical_naive(*args, ref, ref_bins, *extra)
            assert res[0] == pytest.approx(ref[0], rel=1e-10) or res[0] == ref[0] == -np.inf
            if np.isfinite(res[0]):
                k = int(res[4])
                assert k == int(ref[4])
                np.testing.assert_array_equal(bins[:k], ref_bins[:k])
                np.testing.assert_allclose(res[1:4], ref[1:4], rtol=1e-10, atol=1e-9)


def test_monotone_penalty_factor_is_lightgbms():
    eps = 1e-15
    assert monotone_penalty_factor(0, 0.0) == 1.0 + eps
    assert monotone_penalty_factor(0, 1.0) == eps            # penalty >= depth + 1
    assert monotone_penalty_factor(2, 1.0) == pytest.approx(1 - 1 / 4)
    assert monotone_penalty_factor(1, 0.5) == pytest.approx(1 - 0.5 / 2)
    assert monotone_penalty_factor(3, 2.0) == pytest.approx(1 - 2.0 ** (2 - 1 - 3))
    assert monotone_penalty_factor(1, 2.0) == eps
