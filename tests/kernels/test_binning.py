"""Binning kernels: ``map_to_bins`` against its NumPy twin, and the bin-finding helpers by hand."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oocgbdt._dtypes import K_ZERO_THRESHOLD as KZ
from oocgbdt._dtypes import MISSING_NAN, MISSING_NONE, MISSING_ZERO
from oocgbdt.kernels.binning import (
    count_at_most,
    counts_in_bins,
    find_bin_with_zero_as_one_bin,
    find_distinct_values,
    find_distinct_values_naive,
    greedy_find_bin,
    greedy_find_bin_naive,
    map_to_bins,
    map_to_bins_naive,
    shell_sort,
    split_sample_columns,
    value_to_bin,
)

up = math.nextafter


def _random_layout(rng, n_features, max_n_bins):
    """Per-feature bounds as LightGBM builds them: increasing float32-representable finite
    bounds, then +inf, then NaN for NaN-type features. Returns the kernel's flat arguments."""
    bounds, missing = [], []
    for _ in range(n_features):
        mt = int(rng.choice([MISSING_NONE, MISSING_ZERO, MISSING_NAN]))
        n_finite = int(rng.integers(0, max_n_bins - 1))
        finite = np.unique(rng.normal(scale=10.0, size=n_finite).astype(np.float32)).astype(np.float64)
        if rng.random() < 0.5 and finite.size:  # a zero bin (-kZ, kZ] as in LightGBM
            finite = np.unique(np.concatenate([finite, [-KZ, KZ]]))
        b = np.concatenate([finite, [np.inf]])
        if mt == MISSING_NAN:
            b = np.concatenate([b, [np.nan]])
        bounds.append(b)
        missing.append(mt)
    n_bins = np.array([len(b) for b in bounds], dtype=np.int32)
    offsets = np.concatenate([[0], np.cumsum(n_bins)]).astype(np.int64)
    return np.concatenate(bounds), offsets, n_bins, np.array(missing, dtype=np.uint8), bounds


def _values_hitting_bounds(rng, bounds, n):
    """Values exactly at, just below and just above the bounds, plus NaN, +-inf, 0, +-kZ."""
    finite = bounds[np.isfinite(bounds)].astype(np.float32)
    pool = np.concatenate([
        finite, np.nextafter(finite, np.float32(np.inf)), np.nextafter(finite, np.float32(-np.inf)),
        np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, KZ, -KZ, 1e-36, -1e-36, 1e30, -1e30],
                 dtype=np.float32),
        rng.normal(scale=10.0, size=8).astype(np.float32),
    ])
    return rng.choice(pool, size=n)


def _run_both(X, flat, offsets, n_bins, missing, dtype):
    out = np.full(X.shape, 7, dtype=dtype)
    ref = np.full(X.shape, 9, dtype=dtype)
    map_to_bins(X, flat, offsets, n_bins, missing, out)
    map_to_bins_naive(X, flat, offsets, n_bins, missing, ref)
    return out, ref


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_rows=st.integers(0, 200), n_features=st.integers(1, 6),
       wide=st.booleans())
def test_map_to_bins_matches_naive(seed, n_rows, n_features, wide):
    rng = np.random.default_rng(seed)
    max_n_bins = 600 if wide else 40
    flat, offsets, n_bins, missing, bounds = _random_layout(rng, n_features, max_n_bins)
    X = np.stack([_values_hitting_bounds(rng, b, n_rows) for b in bounds], axis=1).reshape(n_rows, n_features)
    dtype = np.uint16 if wide else np.uint8
    if not wide:
        assert n_bins.max() <= 256
    out, ref = _run_both(X, flat, offsets, n_bins, missing, dtype)
    np.testing.assert_array_equal(out, ref)
    # an independent reading of the rule, value by value
    for i in range(min(n_rows, 10)):
        for f in range(n_features):
            x, b = float(X[i, f]), bounds[f]
            if math.isnan(x) and missing[f] == MISSING_NAN:
                assert out[i, f] == len(b) - 1
                continue
            x = 0.0 if math.isnan(x) else x
            expect = next(k for k in range(len(b)) if not math.isnan(b[k]) and x <= b[k])
            assert out[i, f] == expect


@pytest.mark.parametrize("layout", ["readonly", "fortran", "strided", "transposed"])
def test_map_to_bins_non_contiguous_and_readonly(layout):
    rng = np.random.default_rng(1)
    flat, offsets, n_bins, missing, bounds = _random_layout(rng, 5, 50)
    X = np.stack([_values_hitting_bounds(rng, b, 200) for b in bounds], axis=1)
    if layout == "readonly":
        X.setflags(write=False)
    elif layout == "fortran":
        X = np.asfortranarray(X)
    elif layout == "strided":
        big = np.zeros((400, 10), dtype=np.float32)
        big[::2, ::2] = X
        X = big[::2, ::2]
    else:
        X = np.ascontiguousarray(X.T).T
    out, ref = _run_both(X, flat, offsets, n_bins, missing, np.uint8)
    np.testing.assert_array_equal(out, ref)
    out2, _ = _run_both(np.ascontiguousarray(X), flat, offsets, n_bins, missing, np.uint8)
    np.testing.assert_array_equal(out, out2)


def _value_to_bin_all(X, flat, offsets, n_bins, missing, dtype):
    """LightGBM's scalar binary search (``value_to_bin``), value by value: the search
    ``map_to_bins`` used before its branch-free block search."""
    out = np.empty(X.shape, dtype=dtype)
    for i in range(X.shape[0]):
        for f in range(X.shape[1]):
            out[i, f] = value_to_bin(float(X[i, f]), flat, int(offsets[f]), int(n_bins[f]), int(missing[f]))
    return out


def _edge_layout():
    """One feature per corner case of the search: 1 and 2 bins of every missing type, a
    NaN-type feature with only its NaN bin and +inf, zero bins (-kZ, kZ], MISSING_ZERO, bounds
    at -0.0/0.0 and at +-inf-adjacent float32 values, and the largest uint8 feature (256 bins,
    255 compared bounds: a range that is not a power of two)."""
    f32max = float(np.finfo(np.float32).max)
    rng = np.random.default_rng(7)
    many = np.unique(rng.normal(scale=5.0, size=400).astype(np.float32)).astype(np.float64)[:255]
    layout = [
        ([np.inf], MISSING_NONE),
        ([np.inf], MISSING_ZERO),
        ([np.inf, np.nan], MISSING_NAN),
        ([0.5, np.inf], MISSING_NONE),
        ([0.0, np.inf], MISSING_ZERO),
        ([-KZ, np.inf], MISSING_NAN),
        ([KZ, np.inf, np.nan], MISSING_NAN),
        ([-KZ, KZ, np.inf], MISSING_ZERO),
        ([-KZ, KZ, 1.5, np.inf, np.nan], MISSING_NAN),
        ([-f32max, -1.0, -0.0, 1.0, f32max, np.inf], MISSING_NONE),
        ([up(-2.0, -3), -2.0, up(-2.0, 0), KZ, np.inf], MISSING_NONE),  # 1-ulp neighbours
        (list(many) + [np.inf], MISSING_NONE),
        (list(many[:254]) + [np.inf, np.nan], MISSING_NAN),
    ]
    bounds = [np.array(b, dtype=np.float64) for b, _ in layout]
    assert len(bounds[-2]) == 256 and len(bounds[-1]) == 256
    for b in bounds:  # increasing, as BinMapper builds them
        assert (np.diff(b[np.isfinite(b)]) > 0).all()
    n_bins = np.array([len(b) for b in bounds], dtype=np.int32)
    offsets = np.concatenate([[0], np.cumsum(n_bins)]).astype(np.int64)
    missing = np.array([m for _, m in layout], dtype=np.uint8)
    return np.concatenate(bounds), offsets, n_bins, missing, bounds


@pytest.mark.parametrize("n_rows", [1, 63, 64, 65, 130, 1000])
def test_map_to_bins_edge_cases_match_both_oracles(n_rows):
    """Every value a search can trip on (NaN, +-inf, +-0.0, +-kZ, each bound, the float32
    values next to it, the float32 extremes), for every corner-case feature, over row counts
    around the kernel's block of 64 rows: the same bins as the NumPy twin and as LightGBM's
    scalar binary search (``value_to_bin``)."""
    flat, offsets, n_bins, missing, bounds = _edge_layout()
    rng = np.random.default_rng(n_rows)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, KZ, -KZ, 1e-36, -1e-36, 0.5, -0.5,
                        np.finfo(np.float32).max, -np.finfo(np.float32).max,
                        np.finfo(np.float32).tiny, -np.finfo(np.float32).tiny], dtype=np.float32)
    cols = []
    for b in bounds:
        finite = b[np.isfinite(b)].astype(np.float32)
        with np.errstate(over="ignore"):  # next to the float32 extremes: +-inf
            pool = np.concatenate([special, finite, np.nextafter(finite, np.float32(np.inf)),
                                   np.nextafter(finite, np.float32(-np.inf)),
                                   rng.normal(scale=5.0, size=16).astype(np.float32)])
        # every pool value at least once when there is room, in a random order
        col = np.resize(rng.permutation(pool), n_rows) if n_rows >= pool.size else rng.choice(pool, n_rows)
        cols.append(rng.permutation(col))
    X = np.stack(cols, axis=1)
    out, ref = _run_both(X, flat, offsets, n_bins, missing, np.uint8)
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(out, _value_to_bin_all(X, flat, offsets, n_bins, missing, np.uint8))
    # NaN goes to the NaN bin of NaN-type features and to the zero's bin of the others
    nan = np.isnan(X)
    zero_bin = _value_to_bin_all(np.zeros((1, X.shape[1]), np.float32), flat, offsets, n_bins, missing,
                                 np.uint8)[0]
    for f in range(X.shape[1]):
        want = n_bins[f] - 1 if missing[f] == MISSING_NAN else zero_bin[f]
        assert (out[nan[:, f], f] == want).all()


@pytest.mark.parametrize("nb,missing_type", [(257, MISSING_NONE), (4097, MISSING_NAN),
                                             (65536, MISSING_NONE), (65536, MISSING_NAN)])
def test_map_to_bins_wide_features_match_both_oracles(nb, missing_type):
    """uint16 bins up to the 65536-bin limit (65535 or 65534 compared bounds)."""
    rng = np.random.default_rng(nb)
    n_finite = nb - 1 - (missing_type == MISSING_NAN)
    finite = np.unique(rng.normal(scale=100.0, size=3 * nb).astype(np.float32))[:n_finite]
    assert finite.size == n_finite
    b = np.concatenate([finite.astype(np.float64), [np.inf], [np.nan] if missing_type == MISSING_NAN else []])
    flat, offsets = b, np.array([0, nb], dtype=np.int64)
    n_bins, missing = np.array([nb], dtype=np.int32), np.array([missing_type], dtype=np.uint8)
    pool = np.concatenate([finite, np.nextafter(finite, np.float32(np.inf)),
                           np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], dtype=np.float32)])
    X = np.concatenate([pool[-5:], rng.choice(pool, size=3000)])[:, None]  # specials first
    out, ref = _run_both(X, flat, offsets, n_bins, missing, np.uint16)
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(out[:500], _value_to_bin_all(X[:500], flat, offsets, n_bins, missing,
                                                               np.uint16))
    assert out.max() == nb - 1  # the NaN bin, or the +inf bin


def test_map_to_bins_rule_by_hand():
    # feature 0: None type, bounds (-inf,-kZ] (-kZ,kZ] (kZ,1.5] (1.5,inf]
    # feature 1: NaN type, bounds (-inf,0.5] (0.5,inf] NaN
    b0 = [-KZ, KZ, 1.5, np.inf]
    b1 = [0.5, np.inf, np.nan]
    flat = np.array(b0 + b1)
    offsets = np.array([0, 4, 7], dtype=np.int64)
    n_bins = np.array([4, 3], dtype=np.int32)
    missing = np.array([MISSING_NONE, MISSING_NAN], dtype=np.uint8)
    col0 = np.array([-1.0, -KZ, -1e-36, 0.0, KZ, 1e-34, 1.5, np.nextafter(np.float32(1.5), 2), np.inf,
                     -np.inf, np.nan], dtype=np.float32)
    exp0 = [0, 0, 1, 1, 1, 2, 2, 3, 3, 0, 1]  # NaN -> treated as 0.0 -> zero bin
    col1 = np.array([0.5, 0.6, np.nan, np.inf, -np.inf, 0.0, 0.5, 0.5, 7.0, 7.0, 7.0], dtype=np.float32)
    exp1 = [0, 1, 2, 1, 0, 0, 0, 0, 1, 1, 1]  # NaN -> NaN bin, +inf -> last finite bin
    X = np.stack([col0, col1], axis=1)
    out = np.empty(X.shape, dtype=np.uint8)
    map_to_bins(X, flat, offsets, n_bins, missing, out)
    assert out[:, 0].tolist() == exp0
    assert out[:, 1].tolist() == exp1


# ---------------------------------------------------------------------------------------------
# bin-finding helpers
# ---------------------------------------------------------------------------------------------


def test_find_distinct_values_merges_within_one_ulp_and_keeps_larger():
    a = 1.0
    vals = [a, up(a, 2), up(up(a, 2), 2), 2.0, 2.0, 3.0]
    d, c = find_distinct_values(np.array(vals), zero_cnt=0)
    # chain of consecutive 1-ulp neighbours merges into one value, the largest one
    assert d.tolist() == [up(up(a, 2), 2), 2.0, 3.0]
    assert c.tolist() == [3, 2, 1]
    # two ulps apart is not merged
    d, c = find_distinct_values(np.array([a, up(up(a, 2), 2)]), zero_cnt=0)
    assert d.tolist() == [a, up(up(a, 2), 2)]


@pytest.mark.parametrize("values,zero_cnt,expected_d,expected_c", [
    ([], 5, [0.0], [5]),
    ([1.0, 2.0], 0, [1.0, 2.0], [1, 1]),            # all positive, no zeros: no 0 inserted
    ([2.0, 1.0], 3, [0.0, 1.0, 2.0], [3, 1, 1]),     # all positive: 0 in front
    ([-1.0, -2.0], 0, [-2.0, -1.0], [1, 1]),        # all negative, no zeros
    ([-1.0, -2.0], 4, [-2.0, -1.0, 0.0], [1, 1, 4]),  # all negative: 0 at the end
    ([-1.0, 1.0], 0, [-1.0, 0.0, 1.0], [1, 0, 1]),  # mixed: 0 in between even with count 0
    ([3.0, -1.0, 1.0, -1.0], 2, [-1.0, 0.0, 1.0, 3.0], [2, 2, 1, 1]),
])
def test_find_distinct_values_zero_insertion(values, zero_cnt, expected_d, expected_c):
    d, c = find_distinct_values(np.array(values, dtype=np.float64), zero_cnt)
    assert d.tolist() == expected_d
    assert c.tolist() == expected_c
    assert d.dtype == np.float64 and c.sum() == len(values) + zero_cnt


def test_greedy_find_bin_few_distinct_values():
    # n <= max_bin: a bound after each gap once min_data_in_bin rows have accumulated
    v = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    assert greedy_find_bin(v, [1] * 9, 255, 9, 3) == [up(3.5, 9), up(6.5, 9), math.inf]
    assert greedy_find_bin(v, [1] * 9, 255, 9, 1) == [up(x + 0.5, 9) for x in v[:-1]] + [math.inf]
    assert greedy_find_bin([5.0], [10], 255, 10, 3) == [math.inf]


def test_greedy_find_bin_many_distinct_values_by_hand():
    # 10 values, budget 4 bins, min_data_in_bin 1; value 5 is "big" (count 20 >= mean 30/4)
    v = [float(i) for i in range(10)]
    c = [1, 1, 1, 1, 1, 20, 1, 1, 1, 2]
    # mean = 30/4 = 7.5, so value 5 is big: rest_bins 3, rest_cnt 10, mean 10/3.
    # i=0..2: acc 1,2,3 < 3.33. i=3: acc 4 >= 3.33 -> cut (3|4); rest_cnt 6, rest_bins 2, mean 3.
    # i=4: acc 1; next is big but 1 < max(1, 1.5). i=5: big -> cut (5|6) (mean unchanged).
    # i=6,7: acc 1,2. i=8: acc 3 >= 3 -> cut (8|9): 3 cuts = budget - 1, stop.
    got = greedy_find_bin(v, c, 4, sum(c), 1)
    assert got == [up(3.5, 9), up(5.5, 9), up(8.5, 9), math.inf]
    # the walk stops once budget - 1 cuts are made, even with values left:
    # total 24, mean 8 -> value 4 (count 9) is big: rest_bins 2, rest_cnt 15, mean 7.5.
    # i=0: acc 5. i=1: acc 11 -> cut (2|3); rest_cnt 4, rest_bins 1, mean 4.
    # i=2: acc 3, next is big and 3 >= max(1, 2) -> cut (3|4): 2 cuts, stop (no cut at big 4).
    assert greedy_find_bin([1.0, 2.0, 3.0, 4.0, 5.0], [5, 6, 3, 9, 1], 3, 24, 1) == \
        [up(2.5, 9), up(3.5, 9), math.inf]
    # min_data_in_bin caps the budget at total // min_data_in_bin
    assert len(greedy_find_bin(v, c, 255, sum(c), 15)) <= sum(c) // 15


def test_find_bin_with_zero_as_one_bin_mixed():
    d = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    c = np.array([3, 3, 3, 3, 3])
    got = find_bin_with_zero_as_one_bin(d, c, 255, 15, 3)
    assert got == [up(-1.5, 9), -KZ, KZ, up(1.5, 9), math.inf]


def test_find_bin_with_zero_as_one_bin_one_side():
    pos = find_bin_with_zero_as_one_bin(np.array([1.0, 2.0]), np.array([3, 3]), 255, 6, 3)
    assert pos == [KZ, up(1.5, 9), math.inf]  # zero bin (-inf, kZ]
    neg = find_bin_with_zero_as_one_bin(np.array([-2.0, -1.0]), np.array([3, 3]), 255, 6, 3)
    assert neg == [up(-1.5, 9), -KZ, math.inf]  # zero bin (-kZ, +inf)
    only_zero = find_bin_with_zero_as_one_bin(np.array([0.0]), np.array([6]), 255, 6, 3)
    assert only_zero == [math.inf]
    # budget of 1 bin: everything in one bin
    one_bin = find_bin_with_zero_as_one_bin(np.array([-1.0, 0.0, 1.0]), np.array([3, 3, 3]), 1, 9, 3)
    assert one_bin == [math.inf]


@pytest.mark.parametrize("seed", range(6))
def test_greedy_find_bin_equals_the_python_reference_on_many_distinct_values(seed):
    """The numba scan gives the pure-Python reference's bounds exactly: continuous values,
    heavy ties (big values that get bins of their own), tiny budgets and min_data_in_bin."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(300, 20_000))
    v = np.unique(rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4))
    c = rng.integers(1, 4, v.size)
    c[rng.choice(v.size, 5, replace=False)] = rng.integers(v.size // 20, v.size // 4 + 2, 5)
    for max_bin in (1, 2, 15, 63, 255):
        for min_data in (0, 1, 3, 50, 10**9):
            total = int(c.sum())
            got = greedy_find_bin(v, c, max_bin, total, min_data)
            want = greedy_find_bin_naive(v.tolist(), c.tolist(), max_bin, total, min_data)
            assert got == want, (max_bin, min_data)
    with pytest.raises(ValueError, match="max_bin must be > 0"):
        greedy_find_bin(v, c, 0, int(c.sum()), 3)


# ---------------------------------------------------------------------------------------------
# fit-time kernels: distinct values, sample split, counts per bin
# ---------------------------------------------------------------------------------------------


def _awkward_float32(rng, n):
    """float32 values of every kind FindBin sees: wide magnitudes, heavy ties, +-inf, float32
    extremes, values just above kZ; no NaN and no zero."""
    f32 = np.finfo(np.float32)
    parts = [
        (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)).astype(np.float32),
        rng.integers(-5, 6, n).astype(np.float32),  # ties
        np.array([np.inf, -np.inf, f32.max, -f32.max, f32.tiny, -f32.tiny, 1.0, -1.0,
                  np.nextafter(np.float32(KZ), np.float32(1)), -np.nextafter(np.float32(KZ), np.float32(1))],
                 dtype=np.float32),
    ]
    v = rng.permutation(np.concatenate(parts))[:n]
    return v[(v != 0) & (np.abs(v.astype(np.float64)) > KZ)]


@pytest.mark.parametrize("seed", range(8))
def test_find_distinct_values_equals_the_numpy_reference(seed):
    """The numba pass gives find_distinct_values_naive's values and counts exactly, for float32
    input (sorted as float32) and float64 input with 1-ulp chains, for every zero insertion
    case (positive only, negative only, mixed; zero_cnt 0 or not)."""
    rng = np.random.default_rng(seed)
    v32 = _awkward_float32(rng, 3000)
    base = rng.standard_normal(200) * 10.0 ** rng.integers(-300, 300, 200)
    up1 = np.nextafter(base, np.inf)
    chains = np.concatenate([base, up1, np.nextafter(up1, np.inf), np.nextafter(base, -np.inf),
                             [5e-324, -5e-324, 1e-320, np.inf, -np.inf]])
    chains = chains[chains != 0]
    for v in (v32, v32.astype(np.float64), chains, v32[v32 > 0], v32[v32 < 0], chains[chains > 0],
              chains[chains < 0], v32[:1], v32[:2], v32[:0], np.array([np.inf, np.inf, -np.inf])):
        for zero_cnt in (0, 1, 17):
            d, c = find_distinct_values(v, zero_cnt)
            d_ref, c_ref = find_distinct_values_naive(v, zero_cnt)
            np.testing.assert_array_equal(d.view(np.int64), d_ref.view(np.int64))
            np.testing.assert_array_equal(c, c_ref)
            assert d.dtype == np.float64 and c.dtype == np.int64


@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_split_sample_columns_equals_numpy_masks(layout):
    """Per feature: the non-NaN values with |v| > kZ in row order, the NaN count and the count
    of 0 < |v| <= kZ, over row counts around the 256-row block and feature ranges that do not
    start at 0."""
    rng = np.random.default_rng(3)
    pool = np.array([np.nan, 0.0, -0.0, KZ, -KZ, 1e-36, -1e-36, np.float32(KZ) * 2, 1.0, -2.5, np.inf,
                     -np.inf, 1e-45], dtype=np.float32)
    for n in (0, 1, 255, 256, 257, 1000):
        X = np.where(rng.random((n, 7)) < 0.5, rng.choice(pool, (n, 7)),
                     rng.standard_normal((n, 7)).astype(np.float32))
        if layout == "F":
            X = np.asfortranarray(X)
        elif layout == "strided":
            big = np.zeros((2 * n, 14), dtype=np.float32)
            big[::2, ::2] = X
            X = big[::2, ::2]
        for f0, f1 in ((0, 7), (2, 5), (6, 7)):
            values = np.full((f1 - f0, n), 99.0, dtype=np.float32)
            n_values = np.full(f1 - f0, -1, dtype=np.int64)
            n_nan = np.full(f1 - f0, -1, dtype=np.int64)
            n_tiny = np.full(f1 - f0, -1, dtype=np.int64)
            split_sample_columns(X, f0, f1, values, n_values, n_nan, n_tiny)
            for g, f in enumerate(range(f0, f1)):
                col = X[:, f].astype(np.float64)
                keep = ~np.isnan(col) & (np.abs(col) > KZ)
                assert n_nan[g] == np.isnan(col).sum()
                assert n_tiny[g] == ((np.abs(col) <= KZ) & (col != 0)).sum()
                assert n_values[g] == keep.sum()
                np.testing.assert_array_equal(values[g, :n_values[g]].view(np.uint32),
                                              X[:, f][keep].view(np.uint32))


@pytest.mark.parametrize("seed", range(6))
def test_counts_in_bins_equals_searchsorted(seed):
    rng = np.random.default_rng(seed)
    v = _awkward_float32(rng, 2000)
    d, c = find_distinct_values_naive(v, int(rng.integers(0, 50)))
    for bounds in (find_bin_with_zero_as_one_bin(d, c, 255, int(c.sum()), 3) + [np.nan],
                   find_bin_with_zero_as_one_bin(d, c, 7, int(c.sum()), 1),
                   [np.inf], [np.inf, np.nan], [-KZ, KZ, np.inf]):
        bounds = np.asarray(bounds, dtype=np.float64)
        n_searchable = len(bounds) - 1 if np.isnan(bounds[-1]) else len(bounds)
        out = np.zeros(len(bounds), dtype=np.int64)
        counts_in_bins(d, c, bounds, n_searchable, out)
        b = np.minimum(np.searchsorted(bounds[:n_searchable], d, side="left"), n_searchable - 1)
        np.testing.assert_array_equal(out, np.bincount(b, weights=c, minlength=len(bounds)).astype(np.int64))


@pytest.mark.parametrize("seed", range(4))
def test_shell_sort_equals_numpy_sort(seed):
    """Runs of every length around the gaps (0 to 1,500 values), float32 with duplicates,
    negatives, infinities and float32 extremes (`_awkward_float32`), in random, descending
    and nearly sorted order."""
    rng = np.random.default_rng(seed)
    for n in [0, 1, 2, 3, 4, 5, 9, 10, 11, 23, 24, 57, 58, 255, 256, 257, 702, 1500]:
        v = _awkward_float32(rng, n)
        for run in (v.copy(), np.sort(v)[::-1].copy(), np.sort(v)):
            if len(run) > 3:
                run[[0, -1]] = run[[-1, 0]]
            want = np.sort(run)
            shell_sort(run)
            np.testing.assert_array_equal(run, want)


def test_count_at_most_compares_in_float64():
    """float32 values against float64 thresholds that float32 cannot hold (np.searchsorted
    with a Python float would round the threshold to float32)."""
    rng = np.random.default_rng(4)
    v = np.sort(_awkward_float32(rng, 3000))
    v64 = v.astype(np.float64)
    ts = np.concatenate([v64[::50], np.nextafter(v64[::50], np.inf), np.nextafter(v64[::50], -np.inf),
                         [np.inf, -np.inf, 0.0, up(1.0, 2), up(1.0, 0)]])
    for t in ts:
        assert count_at_most(v, float(t)) == np.count_nonzero(v64 <= t), t
    assert count_at_most(v[:0], 1.0) == 0
