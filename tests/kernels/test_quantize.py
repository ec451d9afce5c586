"""Quantized-gradient kernels against their NumPy twins and hand-checked values."""
import numpy as np
import pytest

from oocgbdt.kernels.quantize import (HESS_MASK, NARROW_GRADIENT_MAX, NARROW_HESSIAN_MAX,
                                      build_histogram_int, build_histogram_int_naive,
                                      build_histogram_int_runs, discretize, discretize_naive,
                                      find_best_thresholds_int, find_best_thresholds_int_naive,
                                      gradient_max_abs, quant_scales, unpack)


def _grads(n, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.normal(size=n).astype(np.float32)
    h = rng.uniform(0.01, 0.25, size=n).astype(np.float32)
    return rng, g, h


def test_scales_follow_lightgbm():
    # DiscretizeGradients: grad_scale = max|g| / (bins / 2); hess_scale = max|h| / bins, or
    # max|h| for a constant hessian
    assert quant_scales(3.0, 0.5, 4, False)[:2] == (1.5, 0.125)
    assert quant_scales(3.0, 0.5, 16, True)[:2] == (3.0 / 8, 0.5)
    _, g, h = _grads(100)
    g[17] = -5.0
    assert gradient_max_abs(g, h) == (5.0, float(np.abs(h).max()))


@pytest.mark.parametrize("constant", [False, True])
@pytest.mark.parametrize("stochastic", [False, True])
def test_discretize_matches_naive(constant, stochastic):
    rng, g, h = _grads(1000)
    bins = 8
    _, _, ig, ih = quant_scales(*gradient_max_abs(g, h), bins, constant)
    rg = rng.uniform(size=g.size) if stochastic else np.empty(0)
    rh = rng.uniform(size=g.size) if stochastic else np.empty(0)
    out = np.empty(g.size, np.int64)
    ref = np.empty(g.size, np.int64)
    discretize(g, h, ig, ih, constant, rg, rh, out)
    discretize_naive(g, h, ig, ih, constant, rg, rh, ref)
    np.testing.assert_array_equal(out, ref)
    gi, hi = unpack(out)
    # within the int8 ranges LightGBM's rounding gives: |g| <= bins/2 (+1 stochastic)
    assert np.abs(gi).max() <= bins // 2 + stochastic and hi.min() >= (1 if constant else 0)
    if constant:
        assert (hi == 1).all()
    if not stochastic:
        # round half away from zero of g / scale
        expect = np.trunc(g.astype(np.float64) * ig + np.where(g >= 0, 0.5, -0.5))
        np.testing.assert_array_equal(gi, expect)
    else:
        # unbiased: the mean integer gradient tracks the mean of g / scale
        assert abs(gi.mean() - (g.astype(np.float64) * ig).mean()) < 0.1


def test_packed_arithmetic_is_exact():
    v = np.array([(-3 << 32) + 5, (2 << 32) + 7, (-1 << 32) + 0], dtype=np.int64)
    s = v.sum()
    assert unpack(s) == (-2, 12)
    assert unpack(s - v[0]) == (1, 7)
    assert (v & HESS_MASK).tolist() == [5, 7, 0]


@pytest.mark.parametrize("dtype,n_bins", [(np.uint8, 256), (np.uint16, 1000)])
@pytest.mark.parametrize("F", [7, 19])  # 19: whole words of bins and a tail (uint8 and uint16)
def test_build_histogram_int_matches_naive(dtype, n_bins, F):
    rng, g, h = _grads(500, 1)
    nb = rng.integers(2, n_bins, size=F)
    offsets = np.concatenate([[1], 1 + np.cumsum(nb)]).astype(np.int64)
    X = np.stack([rng.integers(0, b, size=g.size) for b in nb], axis=1).astype(dtype)
    packed = np.empty(g.size, np.int64)
    _, _, ig, ih = quant_scales(*gradient_max_abs(g, h), 4, False)
    discretize(g, h, ig, ih, False, np.empty(0), np.empty(0), packed)
    rows = np.sort(rng.choice(g.size, 300, replace=False)).astype(np.int32)
    cols = np.arange(F, dtype=np.int64)
    out = np.zeros((offsets[-1], 1), np.int64)
    ref = np.zeros_like(out)
    build_histogram_int(X, offsets, cols, packed, rows, out)
    build_histogram_int_naive(X, offsets, cols, packed, rows, ref)
    np.testing.assert_array_equal(out, ref)
    general = np.zeros_like(out)
    build_histogram_int(X, offsets, rng.permutation(F).astype(np.int64), packed, rows, general)
    np.testing.assert_array_equal(out, general)
    assert out[0, 0] == rows.size
    # no row list: every row in order, as the naive twin on all rows (block and listed columns)
    for some in (cols, np.array([5, 1, 3], np.int64)):
        every, ref_every = np.zeros_like(out), np.zeros_like(out)
        build_histogram_int(X, offsets, some, packed, None, every)
        build_histogram_int_naive(X, offsets, some, packed, np.arange(g.size), ref_every)
        np.testing.assert_array_equal(every, ref_every)
    # order independence: two halves built apart and added equal the whole; the other half
    # is the whole minus one half, exactly
    a = np.zeros_like(out)
    b = np.zeros_like(out)
    build_histogram_int(X, offsets, cols, packed, rows[::2], a)
    build_histogram_int(X, offsets, cols, packed, rows[1::2], b)
    np.testing.assert_array_equal(b + a, out)
    np.testing.assert_array_equal(out - a, b)


# Narrow cells: runs of rows summed in 16+16-bit cells, then widened. Small limits give many
# runs (and some rows beyond them, and runs too short for narrow cells) on few rows.
@pytest.mark.parametrize("limits", [(30, 60, 0), (5, 7, 1), (100, 100, 0), (2, 4, 0),
                                    (NARROW_GRADIENT_MAX, NARROW_HESSIAN_MAX, 2)])
@pytest.mark.parametrize("rows_kind", ["every", "list", "permuted_columns"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("F", [6, 21])  # 21: whole words of bins and a tail
def test_histogram_in_runs_of_narrow_cells_matches_naive(limits, rows_kind, dtype, F):
    rng = np.random.default_rng([*limits, len(rows_kind), np.dtype(dtype).itemsize, F])
    n, levels = 2500, 8
    nb = rng.integers(1, 300 if dtype == np.uint16 else 256, size=F)
    offsets = np.concatenate([[1], 1 + np.cumsum(nb)]).astype(np.int64)
    X = np.stack([rng.integers(0, b, size=n) for b in nb], axis=1).astype(dtype)
    packed = ((rng.integers(-levels // 2, levels // 2 + 1, size=n).astype(np.int64) << 32)
              + rng.integers(0, levels + 1, size=n))
    rows = None if rows_kind == "every" else np.sort(
        rng.choice(n, 1800, replace=False)).astype(np.int32)
    cols = (rng.permutation(F)[:4] if rows_kind == "permuted_columns"
            else np.arange(F)).astype(np.int64)
    shape = (offsets[-1], 1)
    start = (rng.integers(-50, 50, size=shape) << 32) + rng.integers(0, 50, size=shape)
    out, ref = start.copy(), start.copy()
    build_histogram_int_runs(X, offsets, cols, packed, rows, out, True, *limits)
    build_histogram_int_naive(X, offsets, cols, packed, np.arange(n) if rows is None else rows,
                              ref)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("g,h", [(2, 1), (-2, 1), (0, 4), (1, 4)])
def test_narrow_cells_hold_sums_up_to_their_limits(g, h):
    """Every row in two bins (one per column) with the same integer pair: runs fill those
    bins' 16-bit fields to their limits (|g| = 2 fills the gradient's to 32,766, h = 4 the
    hessian's to 65,532; one row more would overflow either), and the widened sums are
    exact."""
    n = 4 * 16384 + 5
    X = np.zeros((n, 2), dtype=np.uint8)
    X[:, 1] = 3
    offsets = np.array([1, 6, 12], dtype=np.int64)
    packed = np.full(n, (g << 32) + h, dtype=np.int64)
    cols = np.arange(2, dtype=np.int64)
    for rows in (None, np.arange(n, dtype=np.int32)):
        out = np.zeros((offsets[-1], 1), np.int64)
        ref = np.zeros_like(out)
        build_histogram_int(X, offsets, cols, packed, rows, out)
        build_histogram_int_naive(X, offsets, cols, packed, np.arange(n), ref)
        np.testing.assert_array_equal(out, ref)
        sums = unpack(out[[1, 9], 0])
        assert sums[0].tolist() == [g * n] * 2 and sums[1].tolist() == [h * n] * 2


@pytest.mark.parametrize("missing", [0, 1, 2])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_find_best_thresholds_int_matches_naive(missing, seed):
    rng, g, h = _grads(3000, seed)
    F = 6
    nb = rng.integers(2, 12, size=F).astype(np.int32)
    nb[0] = 2
    offsets = np.concatenate([[1], 1 + np.cumsum(nb)]).astype(np.int64)
    X = np.stack([rng.integers(0, b, size=g.size) for b in nb], axis=1).astype(np.uint8)
    g = (g + 0.8 * (X[:, 1] > 3) - 0.5 * (X[:, 2] == 0)).astype(np.float32)
    packed = np.empty(g.size, np.int64)
    gs, hs, ig, ih = quant_scales(*gradient_max_abs(g, h), 16, False)
    discretize(g, h, ig, ih, False, rng.uniform(size=g.size), rng.uniform(size=g.size), packed)
    hist = np.zeros((offsets[-1], 1), np.int64)
    rows = np.arange(g.size, dtype=np.int32)
    build_histogram_int(X, offsets, np.arange(F, dtype=np.int64), packed, rows, hist)
    total = int(packed.sum())
    mt = np.full(F, missing, np.uint8)
    dbins = np.minimum(2, nb - 1).astype(np.int32)
    mask = np.ones(F, bool)
    args = (hist, offsets, nb, mt, dbins, mask, total, gs, hs, float(g.size), 0.1, 1.0, 50, 1e-3,
            0.0)
    out = np.empty((F, 8))
    left = np.empty(F, np.int64)
    ref = np.empty((F, 8))
    ref_left = np.empty(F, np.int64)
    find_best_thresholds_int(*args, out, left)
    find_best_thresholds_int_naive(*args, ref, ref_left)
    assert np.isfinite(out[:, 0]).sum() >= 2
    np.testing.assert_array_equal(np.isfinite(out[:, 0]), np.isfinite(ref[:, 0]))
    ok = np.isfinite(out[:, 0])
    np.testing.assert_array_equal(out[ok, 1:3], ref[ok, 1:3])
    np.testing.assert_array_equal(left, ref_left)
    # sums are integer sums times the scales: the same products, bit for bit
    np.testing.assert_array_equal(out[ok, 3:6], ref[ok, 3:6])
    # gains are the same formula in another order of additions
    np.testing.assert_allclose(out[ok, 0], ref[ok, 0], rtol=1e-12)


def test_integer_histogram_by_column_blocks_equals_naive():
    """Consecutive column blocks (the count added by one) give the naive twin's integers."""
    from oocgbdt.kernels.quantize import build_histogram_int, build_histogram_int_naive
    rng = np.random.default_rng(11)
    n, F = 600, 7
    nb = rng.integers(2, 256, size=F)
    offsets = np.concatenate([[1], 1 + np.cumsum(nb)]).astype(np.int64)
    X = np.stack([rng.integers(0, b, size=n) for b in nb], axis=1).astype(np.uint8)
    packed = (rng.integers(-8, 9, size=n).astype(np.int64) << 32) + rng.integers(0, 9, size=n)
    rows = np.sort(rng.choice(n, 350, replace=False)).astype(np.int32)
    ref = np.zeros((offsets[-1], 1), dtype=np.int64)
    build_histogram_int_naive(X, offsets, np.arange(F, dtype=np.int64), packed, rows, ref)
    blocks = np.zeros_like(ref)
    for k, cols in enumerate(np.array_split(np.arange(F, dtype=np.int64), 3)):
        build_histogram_int(X, offsets, cols, packed, rows, blocks, k == 2)
    np.testing.assert_array_equal(blocks, ref)
