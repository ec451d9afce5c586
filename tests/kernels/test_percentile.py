"""Tests for oocgbdt.kernels.percentile: order-preserving keys and the radix/neighbour kernels
against their NumPy twins."""
import numpy as np
import pytest

from oocgbdt.kernels.percentile import (float_keys, key_neighbors, key_neighbors_naive,
                                        key_values, radix_histogram, radix_histogram_naive)


def test_float_keys_preserve_order_and_invert():
    rng = np.random.default_rng(0)
    v = np.concatenate([rng.normal(size=500) * 10.0 ** rng.integers(-30, 30, 500),
                        [0.0, -0.0, np.inf, -np.inf, 5e-324, -5e-324]])
    k = float_keys(v)
    order_v = np.argsort(v, kind="stable")
    assert np.all(np.diff(k[order_v].astype(object)) >= 0)
    assert float_keys(np.array([-0.0]))[0] == float_keys(np.array([0.0]))[0]
    np.testing.assert_array_equal(key_values(k), v + 0.0)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("level", [0, 3, 7, 8, 9])
def test_radix_histogram_matches_naive(weighted, level):
    rng = np.random.default_rng(level)
    n, n_leaves = 400, 3
    leaf = rng.integers(-1, n_leaves, n).astype(np.int32)
    hi = float_keys(np.round(rng.normal(size=n), 1))
    lo = np.arange(n, dtype=np.uint64) << np.uint64(48)
    w = rng.random(n).astype(np.float32) if weighted else None
    # Prefixes taken from a real row of each leaf, so rows match at every level.
    prefix_hi = np.array([hi[np.flatnonzero(leaf == lf)[0]] for lf in range(n_leaves)])
    prefix_lo = np.array([lo[np.flatnonzero(leaf == lf)[0]] for lf in range(n_leaves)])
    active = np.array([True, False, True])
    a = np.zeros((n_leaves, 256, 2))
    b = np.zeros((n_leaves, 256, 2))
    radix_histogram(leaf, hi, lo, w, level, prefix_hi, prefix_lo, active, a)
    radix_histogram_naive(leaf, hi, lo, w, level, prefix_hi, prefix_lo, active, b)
    np.testing.assert_allclose(a, b, rtol=1e-12)
    assert a[1].sum() == 0 and a[0, :, 0].sum() > 0


def test_key_neighbors_matches_naive():
    rng = np.random.default_rng(5)
    n, n_leaves = 300, 4
    leaf = rng.integers(-1, n_leaves, n).astype(np.int32)
    hi = float_keys(np.round(rng.normal(size=n), 1))
    lo = np.arange(n, dtype=np.uint64)
    w = rng.random(n)
    pick = [np.flatnonzero(leaf == lf)[3] for lf in range(n_leaves)]
    item_hi, item_lo = hi[pick], lo[pick]
    active = np.ones(n_leaves, dtype=np.bool_)
    outs = []
    for fn in (key_neighbors, key_neighbors_naive):
        pred = np.zeros((n_leaves, 2), np.uint64)
        succ = np.zeros((n_leaves, 2), np.uint64)
        sw = np.zeros(n_leaves)
        has = np.zeros((n_leaves, 2), np.bool_)
        fn(leaf, hi, lo, w, item_hi, item_lo, active, pred, succ, sw, has)
        outs.append((pred, succ, sw, has))
    (p0, s0, w0, h0), (p1, s1, w1, h1) = outs
    np.testing.assert_array_equal(h0, h1)
    assert h0[:, 0].all() and h0[:, 1].sum() >= 3  # found rows below and above
    np.testing.assert_array_equal(p0, p1)
    np.testing.assert_array_equal(s0, s1)
    np.testing.assert_array_equal(w0, w1)
