"""extra_trees in the split kernels: one drawn threshold per feature, against the naive twins,
and LightGBM's generator against its definition."""
import numpy as np
import pytest

from oocgbdt.kernels.categorical import find_best_categorical, find_best_categorical_naive
from oocgbdt.kernels.splitting import (find_best_thresholds, find_best_thresholds_naive,
                                       lcg_next_int, lcg_next_int_naive)
from tests.kernels.test_categorical import _leaf_hist
from tests.kernels.test_splitting import _random_case


def test_lcg_is_lightgbms_random():
    """``Random::NextInt``: x <- 214013 x + 2531011 mod 2**32, then (x & 0x7FFFFFFF) % n."""
    for seed in (0, 6, 2**31 + 5, 2**32 - 1):
        a, b = np.array([seed], np.int64), [seed]
        x = seed
        for n in (1, 2, 7, 254, 65536):
            x = (214013 * x + 2531011) % 2**32
            expected = (x & 0x7FFFFFFF) % n
            assert lcg_next_int(a, 0, n) == expected == lcg_next_int_naive(b, 0, n)
            assert int(a[0]) == x == b[0]


@pytest.mark.parametrize("seed", range(12))
def test_numerical_kernel_with_drawn_thresholds_matches_naive(seed):
    rng = np.random.default_rng(seed)
    mts = rng.integers(0, 3, size=6)
    hist, offsets, nb, mts, dbins, G, H, N = _random_case(rng, 6, mts)
    mfbs = np.where(rng.random(6) < 0.5, 0, dbins).astype(np.int32)
    mask = rng.random(6) < 0.85
    min_data = float(rng.choice([1, 20]))
    args = (hist, offsets, nb, mts, dbins, mfbs, mask, G, H, float(N), 0.0, 1.0, min_data, 1e-3,
            0.0)
    states = rng.integers(0, 2**32, size=6).astype(np.int64)
    start = states.copy()
    ref_states = states.copy()
    out, ref, full = np.empty((6, 6)), np.empty((6, 6)), np.empty((6, 6))
    find_best_thresholds(*args, out, rand_states=states)
    find_best_thresholds_naive(*args, ref, rand_states=ref_states)
    find_best_thresholds(*args, full)
    np.testing.assert_array_equal(states, ref_states)
    np.testing.assert_array_equal(np.isfinite(out[:, 0]), np.isfinite(ref[:, 0]))
    ok = np.isfinite(out[:, 0])
    np.testing.assert_allclose(out[ok, 0], ref[ok, 0], rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(out[ok, 1:3], ref[ok, 1:3])
    # the split is at the drawn threshold, never better than the full search's
    for f in np.flatnonzero(ok):
        drawn = lcg_next_int_naive([int(start[f])], 0, int(nb[f]) - 2) if nb[f] > 2 else 0
        assert out[f, 1] == drawn
        assert out[f, 0] <= full[f, 0] + 1e-9 * abs(full[f, 0])


def test_numerical_draws_advance_only_searched_features():
    rng = np.random.default_rng(3)
    hist, offsets, nb, mts, dbins, G, H, N = _random_case(rng, 5, np.zeros(5, np.uint8))
    nb[:] = [2, 5, 9, 3, 12]
    offsets = np.concatenate([[0], np.cumsum(nb)]).astype(np.int64)
    hist = np.ones((offsets[-1], 2))
    mask = np.array([True, True, False, True, True])
    states = np.arange(5, dtype=np.int64) + 100
    find_best_thresholds(hist, offsets, nb, mts, dbins, dbins, mask, 0.0, float(offsets[-1]),
                         float(offsets[-1]), 0.0, 0.0, 1.0, 0.0, 0.0, np.empty((5, 6)),
                         rand_states=states)
    step = (214013 * (np.arange(5) + 100) + 2531011) % 2**32
    expected = np.where(mask & (nb > 2), step, np.arange(5) + 100)
    np.testing.assert_array_equal(states, expected)


@pytest.mark.parametrize("seed", range(6))
def test_categorical_kernel_with_drawn_candidate_matches_naive(seed):
    rng = np.random.default_rng(seed)
    for n_bins in (2, 3, 4, 9, 40):
        h, lo, count = _leaf_hist(rng, n_bins, int(rng.integers(50, 3000)), "varied")
        sum_g = float(h[lo:lo + n_bins, 0].sum())
        sum_h2 = float(h[lo:lo + n_bins, 1].sum()) + 2e-15
        parent = sum_g * sum_g / sum_h2
        for onehot, max_thr, smooth, group in ((4, 32, 10.0, 100), (64, 32, 10.0, 100),
                                               (4, 3, 1.0, 5), (4, 32, 0.5, 1)):
            args = (h, lo, n_bins, sum_g, sum_h2, count, count / sum_h2, 0.0, 0.0, 5.0, 1e-3,
                    parent, onehot, max_thr, 2.0, smooth, group)
            state = np.array([int(rng.integers(0, 2**32))], np.int64)
            ref_state = [int(state[0])]
            res, bins = np.empty(5), np.zeros(40, np.int64)
            ref, ref_bins = np.empty(5), np.zeros(40, np.int64)
            full = np.empty(5)
            find_best_categorical(*args, res, bins, rand_state=state)
            find_best_categorical_naive(*args, ref, ref_bins, rand_state=ref_state)
            find_best_categorical(*args, full, np.zeros(40, np.int64))
            assert int(state[0]) == ref_state[0]
            assert res[0] == pytest.approx(ref[0], rel=1e-10) or res[0] == ref[0] == -np.inf
            if np.isfinite(res[0]):
                k = int(res[4])
                assert k == int(ref[4])
                np.testing.assert_array_equal(bins[:k], ref_bins[:k])
                assert res[0] <= full[0] + 1e-9
                if n_bins <= onehot:
                    assert k == 1
