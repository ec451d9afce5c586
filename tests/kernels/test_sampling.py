"""Row-sampling kernels (GOSS, LightGBM's bagging, LightGBM's bin sample) against their NumPy and
Python twins."""
import numpy as np
import pytest

from oocgbdt.kernels.sampling import (goss_keys, goss_select, goss_select_naive, lcg_jump,
                                      scale_small_rows, scatter_selected_rows,
                                      lightgbm_bag_select, lightgbm_bag_select_naive,
                                      digit_counts, digit_counts_naive, lightgbm_sample,
                                      uniforms, uniforms_naive)
from oocgbdt.kernels.splitting import lcg_step

SEED = np.uint64(0xDEADBEEF12345678)


def test_uniforms_match_numpy_and_splittable_random():
    a, b = np.empty(1000), np.empty(1000)
    uniforms(SEED, 2**40, a)
    uniforms_naive(SEED, 2**40, b)
    np.testing.assert_array_equal(a, b)
    assert a.min() >= 0 and a.max() < 1
    # Java's SplittableRandom(0).nextLong() starts 0xE220A8397B1DCDAF (SplitMix64's published
    # first output for seed 0); the kernel's row 0 under seed 0 is that value's top 53 bits.
    first = np.empty(1)
    uniforms(np.uint64(0), 0, first)
    assert first[0] == (0xE220A8397B1DCDAF >> 11) * 2.0 ** -53


def _bits(n, seed, tied=False):
    rng = np.random.default_rng(seed)
    keys = (rng.integers(0, 5, n) * 0.25 if tied else rng.exponential(size=n)).astype(np.float32)
    return keys.view(np.uint32), rng.random(n)


@pytest.mark.parametrize("tied", [False, True])
def test_digit_counts_match_numpy(tied):
    bits, _ = _bits(5000, 0, tied)
    # every digit of a wide range, a bucket of few keys (sorted and counted by runs), a bucket
    # of one key, and a bucket of none
    for high in (-1, int(np.median(bits)) >> 16, int(bits.max()) >> 16, 0):
        digits = bits >> 16 if high < 0 else (bits[(bits >> 16) == high] & 0xFFFF)
        values, counts = digit_counts(bits, high)
        ref_values, ref_counts = np.unique(digits.astype(np.int64), return_counts=True)
        np.testing.assert_array_equal(values, ref_values)
        np.testing.assert_array_equal(counts, ref_counts)
        assert counts.sum() == digits.size


def test_digit_counts_dense_and_sparse_paths_agree_with_the_naive_twin():
    rng = np.random.default_rng(3)
    # many keys in one high bucket (dense counting) and few keys spread wide (sorted runs)
    dense = (np.uint32(0x3F00) << 16) | rng.integers(0, 300, 20000).astype(np.uint32)
    sparse = (np.uint32(0x3F01) << 16) | rng.integers(0, 1 << 16, 50).astype(np.uint32)
    bits = np.concatenate([dense, sparse])
    for high in (-1, 0x3F00, 0x3F01):
        a = digit_counts(bits, high)
        b = digit_counts_naive(bits, high)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])


@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize("ties", [-1, 0, 1, 37])
@pytest.mark.parametrize("probability", [0.125, 1 / 3, 0.0, 1.0, 1 - 2 ** -40])
def test_goss_select_matches_numpy(tied, ties, probability):
    """The kernel compares each draw's integer with a limit; the twin compares the double
    ``u < probability``: the same rows for any probability."""
    bits, _ = _bits(5000, 1, tied)
    t = int(np.sort(bits)[-1000])
    outs = []
    for kernel in (goss_select, goss_select_naive):
        rows, small = np.full(5000, -1, np.int32), np.zeros(5000, bool)
        m = kernel(bits, SEED, 777, t, ties, probability, rows, small)
        outs.append((rows[:m], small))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    assert np.all(np.diff(outs[0][0]) > 0)


@pytest.mark.parametrize("offset,n,total,bag", [(0, 3000, 3000, 0), (700, 1500, 3000, 2),
                                                  (2048, 952, 3000, 3), (1000, 50, 2000, 1)])
def test_lightgbm_bag_select_jumps_to_what_replaying_every_block_draws(offset, n, total, bag):
    """The jump-ahead kernel against a replay of LightGBM's per-block generators from their
    seeds, for chunks starting inside a block, spanning blocks and ending in the short last
    block; balanced bagging reads the labels."""
    y = (np.arange(n) % 3 == 0).astype(np.float32)
    outs = []
    for kernel in (lightgbm_bag_select, lightgbm_bag_select_naive):
        rows = np.full(n, -1, np.int32)
        m = kernel(3, total, bag, offset, y, 0.7, 0.4, rows)
        outs.append(rows[:m])
    np.testing.assert_array_equal(outs[0], outs[1])
    assert 0.4 * n * 0.8 < len(outs[0]) < 0.7 * n * 1.1


def test_lcg_jump_equals_stepping():
    x = 987654321
    for steps in (0, 1, 2, 1023, 5000):
        y = x
        for _ in range(steps):
            y = lcg_step(y)
        assert lcg_jump(x, steps) == y


@pytest.mark.parametrize("n_outputs", [1, 3])
def test_goss_keys_are_numpys_float32_expression(n_outputs):
    """Per row, |g_k * h_k| summed over outputs in float32, in output order: the same bits as
    NumPy's float32 arithmetic (negative, zero and tiny values included)."""
    rng = np.random.default_rng(n_outputs)
    g = rng.normal(size=(n_outputs, 4001)).astype(np.float32)
    h = rng.random(size=(n_outputs, 4001)).astype(np.float32)
    g[0, :4] = [0.0, -0.0, 1e-30, -3.5]
    ref = np.abs(g[0] * h[0])
    for k in range(1, n_outputs):
        ref = ref + np.abs(g[k] * h[k])
    out = np.full(4001, np.nan, np.float32)
    goss_keys(g, h, out)
    np.testing.assert_array_equal(out.view(np.uint32), ref.view(np.uint32))


def test_scale_small_rows_is_numpys_product_by_a_factor():
    rng = np.random.default_rng(3)
    g = rng.normal(size=(2, 3001)).astype(np.float32)
    h = rng.random(size=(2, 3001)).astype(np.float32)
    small = rng.random(3001) < 0.3
    mult = np.float32(8.0 / 3.0)
    factor = np.where(small, mult, np.float32(1.0))
    g2, h2 = np.empty_like(g), np.empty_like(h)
    scale_small_rows(g, h, small, mult, g2, h2)
    np.testing.assert_array_equal(g2.view(np.uint32), (g * factor).view(np.uint32))
    np.testing.assert_array_equal(h2.view(np.uint32), (h * factor).view(np.uint32))


@pytest.mark.parametrize("n_outputs", [1, 3])
def test_scatter_selected_rows_is_numpys_fancy_assignment(n_outputs):
    rng = np.random.default_rng(4)
    n = 5003
    rows = np.flatnonzero(rng.random(n) < 0.3).astype(np.int32)
    g = rng.normal(size=(rows.shape[0], n_outputs)).astype(np.float32)
    h = rng.random(size=(rows.shape[0], n_outputs)).astype(np.float32)
    before = rng.normal(size=(n_outputs, n)).astype(np.float32)
    out_g, out_h = before.copy(), before.copy()
    scatter_selected_rows(g, h, rows, out_g, out_h)
    want_g, want_h = before.copy(), before.copy()
    want_g[:, rows] = g.T
    want_h[:, rows] = h.T
    np.testing.assert_array_equal(out_g, want_g)  # the other rows' entries untouched too
    np.testing.assert_array_equal(out_h, want_h)


@pytest.mark.parametrize("n, k, seed", [
    (7000, 1500, 1),       # k > n / log2(k): one draw per row
    (300_000, 200_000, 1),
    (7000, 300, 1),        # Floyd's algorithm: one draw per taken row
    (5_000_000, 2000, 4),
    (50, 49, 0xFFFFFFFF),  # the state is the seed mod 2**32
    (20, 1, 5),            # k = 1 is Floyd's (LightGBM tests k > 1 first)
    (10, 10, 1), (10, 12, 1), (10, 0, 1),
])
def test_lightgbm_sample_is_the_python_random_sample(n, k, seed):
    """The kernel against ``Random::Sample`` on Python ints (``LightGBMRandom.sample``, which
    draws feature_fraction's features), and the contract: min(k, n) distinct rows, ascending
    (every row for k > n, where LightGBM's Sample, never asked so by its bin sample, gives
    none)."""
    from oocgbdt.core.node_sampling import LightGBMRandom
    got = lightgbm_sample(n, k, seed)
    if k <= n:
        np.testing.assert_array_equal(got, LightGBMRandom(seed).sample(n, k))
    assert got.dtype == np.int64 and got.shape == (max(0, min(k, n)),)
    assert np.all(np.diff(got) > 0) and (got.size == 0 or (got[0] >= 0 and got[-1] < n))



@pytest.mark.parametrize("probability", [0.125, 1 / 3, 0.1, 2 ** -60, 1 - 2 ** -53, 0.0, 1.0])
def test_draw_limit_is_the_first_integer_draw_not_below_probability(probability):
    """GOSS compares the draw's 53-bit integer ``k`` with the limit: ``k < limit`` must be
    ``k * 2**-53 < probability`` for every ``k``, so at the boundary ``limit - 1`` is kept and
    ``limit`` is not (the double comparison of :func:`uniforms` as the oracle)."""
    from oocgbdt.kernels.sampling import _draw_limit
    limit = int(_draw_limit(probability))
    assert 0 <= limit <= 2 ** 53
    if limit > 0:
        assert (limit - 1) * 2.0 ** -53 < probability
    if limit < 2 ** 53:
        assert not limit * 2.0 ** -53 < probability
