"""This module contains the binning kernels: raw float values to bin indices, and bin finding.

Data flow position: first stage after input. :class:`oocgbdt.core.bin_mapper.BinMapper` finds
each feature's bin upper bounds once, on a row sample, with the helpers below
(:func:`split_sample_columns`, :func:`find_distinct_values`,
:func:`greedy_find_bin`, :func:`find_bin_with_zero_as_one_bin`, :func:`counts_in_bins`); every
chunk is then binned by the numba kernel :func:`map_to_bins`. The ``*_naive`` functions are
NumPy/Python twins of the numba ones, used by the tests.

All of it follows LightGBM (``src/io/bin.cpp`` and ``include/LightGBM/bin.h`` of
``microsoft/LightGBM``; see ``/work/shared/reference/lightgbm-algorithms.md`` section 1):

- ``split_sample_columns``: the values ``FindBin`` is given (``|v| > kZeroThreshold``, not
  NaN) and the NaN count of each feature.
- ``find_distinct_values``: the distinct-value pass of ``BinMapper::FindBin``
  (``bin.cpp:342-378``), including the 1-ulp merge and the implicit-zero insertion.
- ``greedy_find_bin``: ``GreedyFindBin`` (``bin.cpp:80-160``).
- ``find_bin_with_zero_as_one_bin``: ``FindBinWithZeroAsOneBin`` (``bin.cpp:246-302``).
- ``counts_in_bins``: the sampled count of each bin (``cnt_in_bin`` of ``FindBin``).
- ``map_to_bins``: ``BinMapper::ValueToBin`` (``bin.h:612-650``), numerical bins only, with
  a branch-free search that gives the same bins (``value_to_bin`` keeps LightGBM's).

The bin-finding helpers run once per feature on at most ``bin_construct_sample_cnt`` values.
``BinMapper.fit`` runs them without a Python step per feature: :func:`split_sample_columns` /
:func:`split_csc_columns` split a group of features into their kept values, and
:func:`fit_numerical_values` runs every step of ``FindBin`` (distinct values, the bounds of
``FindBinWithZeroAsOneBin`` / ``GreedyFindBin``, counts per bin, ``NeedFilter``, default and
most frequent bin) for the whole group in numba, with LightGBM's double arithmetic in its order
of operations. The Python versions (:func:`greedy_find_bin`,
:func:`find_bin_with_zero_as_one_bin`) are kept for one feature and for the tests.
"""
import math

import numpy as np

from oocgbdt._dtypes import K_ZERO_THRESHOLD, MISSING_NAN
from oocgbdt.kernels._jit import njit, njit_keeping_cmov

__all__ = [
    "value_to_bin",
    "map_to_bins",
    "map_to_bins_naive",
    "find_distinct_values",
    "find_distinct_values_naive",
    "distinct_of_sorted",
    "split_sample_columns",
    "counts_in_bins",
    "count_at_most",
    "greedy_find_bin",
    "greedy_find_bin_naive",
    "find_bin_with_zero_as_one_bin",
    "split_csc_columns",
    "csr_column_values",
    "csr_column_counts",
    "csr_scatter_columns",
    "shell_sort",
    "unsorted_runs",
    "fit_numerical_values",
]

_INF = math.inf


# ---------------------------------------------------------------------------------------------
# Value -> bin
# ---------------------------------------------------------------------------------------------


@njit
def value_to_bin(x, bounds, start, nb, missing_type):
    """LightGBM's ``ValueToBin`` for one float64 value of a feature whose ``nb`` bounds start at
    ``bounds[start]``, as a plain binary search with LightGBM's midpoint ``(l + r - 1) // 2``
    (``include/LightGBM/bin.h:612-650``).

    Used by the sparse bundling kernels, which bin one stored entry at a time. It gives the same
    bin as :func:`map_to_bins`; that kernel bins a block of rows at a time with a branch-free
    search instead, because this search's data-dependent branches are mispredicted about half
    of the time.
    """
    is_nan_type = missing_type == MISSING_NAN
    if np.isnan(x):
        if is_nan_type:
            return nb - 1
        x = 0.0
    lo = 0
    hi = nb - 1
    if is_nan_type:
        hi -= 1
    while lo < hi:
        mid = (hi + lo - 1) // 2
        if x <= bounds[start + mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


#: Rows binned together by :func:`map_to_bins`: a block's values of one feature are searched in
#: lockstep (measured on 250k x 100 float32 with 255 bins: 6.2 ns/value at 32 and 64 rows,
#: 6.5 at 256). 64 rows of 100 float32 features (25.6 kB) stay in L1.
_SEARCH_BLOCK = 64


@njit(inline="always")
def _lower_bound_block(bounds, n_search, xs, pos, n_values):
    """Branch-free lower bound of ``n_values`` values at once in one sorted run of bounds.

    On entry ``pos[j]`` is the index of the run's first bound (the same for every ``j``); on
    exit it is advanced by ``#{b < n_search : bounds[pos[j] + b] < xs[j]}``, i.e. to the first
    of the ``n_search`` bounds with ``xs[j] <= bound``, or past all of them.

    The classic branch-free lower bound (e.g. Khuong & Morin, "Array layouts for
    comparison-based searching", 2017): the range shrinks by ``half = n // 2`` whatever the
    comparison says, so the number of steps depends only on ``n_search``, and the comparison is
    only added (``pos += half * (bound < x)``). The values are stepped together, the inner loop
    over ``j``, so each step's loads are independent and overlap. The kernel that inlines this
    is compiled with :func:`~oocgbdt.kernels._jit.njit_keeping_cmov`: LLVM's x86 back end
    would otherwise turn the conditional move back into a branch. Unsigned indices avoid
    numba's negative-index wraparound.
    ``xs`` must hold no NaN; ``n_search >= 1``.
    """
    n = np.uint64(n_search)
    one = np.uint64(1)
    zero = np.uint64(0)
    while n > one:
        half = n >> one
        for j in range(n_values):
            pos[j] += half if bounds[pos[j] + half] < xs[j] else zero
        n -= half
    for j in range(n_values):
        pos[j] += one if bounds[pos[j]] < xs[j] else zero


@njit_keeping_cmov
def map_to_bins(
    X,  # IN: (n_samples, n_features) float32, any layout, may be read-only
    bin_upper_bounds,  # IN: (n_total_bins,) float64, all features' bounds concatenated
    bound_offsets,  # IN: (n_features + 1,) int64, feature f's bounds are [off[f], off[f + 1])
    n_bins,  # IN: (n_features,) int32, bins per feature including the NaN bin
    missing_types,  # IN: (n_features,) uint8, MISSING_NONE / MISSING_ZERO / MISSING_NAN
    out,  # OUT: (n_samples, n_features) uint8 or uint16
):
    """Map raw values to bin indices, as LightGBM's ``BinMapper::ValueToBin``.

    For feature ``f`` with bounds ``u = bin_upper_bounds[off[f]:off[f + 1]]``:

    - NaN goes to the last bin ``n_bins[f] - 1`` if ``missing_types[f] == MISSING_NAN``;
      otherwise NaN is treated as 0.0.
    - Any other ``x`` goes to the first non-NaN bin ``b`` with ``x <= u[b]`` (compared in
      float64). The last non-NaN bound is ``+inf``, so ``+inf`` goes there too; the search never
      looks at that last bound (nor at a NaN-type feature's NaN bound), so the bin is at most
      the last non-NaN one whatever the bound holds.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype float32
        Raw values; C- or F-ordered or strided, possibly read-only.
    bin_upper_bounds : ndarray of shape (n_total_bins,), dtype float64
        Concatenated per-feature upper bounds, increasing within a feature (a NaN-type
        feature's last bound is NaN).
    bound_offsets : ndarray of shape (n_features + 1,), dtype int64
        Cumulative ``n_bins``: feature ``f`` owns ``bin_upper_bounds[off[f]:off[f + 1]]``.
    n_bins : ndarray of shape (n_features,), dtype int32
        Number of bins of each feature, including the NaN bin.
    missing_types : ndarray of shape (n_features,), dtype uint8
        ``oocgbdt._dtypes.MISSING_*`` of each feature.
    out : ndarray of shape (n_samples, n_features), dtype uint8 or uint16
        Written with the bin indices. Must be able to hold ``max(n_bins) - 1``.

    Notes
    -----
    Source: ``include/LightGBM/bin.h:612-650`` (``BinMapper::ValueToBin``). LightGBM's binary
    search (midpoint ``(l + r - 1) // 2``, kept in :func:`value_to_bin`) finds the first bound
    ``>= x`` among the increasing bounds it compares, which is the number of those bounds
    ``< x``: this kernel counts it with a branch-free lower bound
    (:func:`_lower_bound_block`), stepping the ``_SEARCH_BLOCK`` values of one feature in a
    block of rows together. LightGBM's search mispredicts about half of its branches: 56 ns per
    value on 250k x 100 float32 with 255 bins, against 6.2 ns here (same bins).
    """
    n_samples = X.shape[0]
    n_features = X.shape[1]
    xs = np.empty(_SEARCH_BLOCK, dtype=np.float64)
    pos = np.empty(_SEARCH_BLOCK, dtype=np.uint64)
    for i0 in range(0, n_samples, _SEARCH_BLOCK):
        n_block = min(n_samples - i0, _SEARCH_BLOCK)
        for f in range(n_features):
            nb = n_bins[f]
            is_nan_type = missing_types[f] == MISSING_NAN
            # bounds compared: all but the last non-NaN one (LightGBM's r = num_bin - 1)
            n_search = nb - 2 if is_nan_type else nb - 1
            start = np.uint64(bound_offsets[f])
            for j in range(n_block):
                x = np.float64(X[i0 + j, f])
                xs[j] = 0.0 if np.isnan(x) else x
                pos[j] = start
            if n_search > 0:
                _lower_bound_block(bin_upper_bounds, n_search, xs, pos, n_block)
            for j in range(n_block):
                out[i0 + j, f] = pos[j] - start
            if is_nan_type:
                nan_bin = nb - 1
                for j in range(n_block):
                    if np.isnan(X[i0 + j, f]):
                        out[i0 + j, f] = nan_bin


def map_to_bins_naive(X, bin_upper_bounds, bound_offsets, n_bins, missing_types, out):
    """NumPy twin of :func:`map_to_bins` (``np.searchsorted``), used by tests.

    Same parameters and result as :func:`map_to_bins`.
    """
    X = np.asarray(X)
    for f in range(X.shape[1]):
        nb = int(n_bins[f])
        bounds = np.asarray(bin_upper_bounds[bound_offsets[f]:bound_offsets[f] + nb], dtype=np.float64)
        is_nan_type = int(missing_types[f]) == MISSING_NAN
        searchable = bounds[:-1] if is_nan_type else bounds
        x = X[:, f].astype(np.float64)
        nan = np.isnan(x)
        x = np.where(nan, 0.0, x)
        # first b with x <= bounds[b]; clipped like the C++ search, which never looks past r
        b = np.minimum(np.searchsorted(searchable, x, side="left"), len(searchable) - 1)
        if is_nan_type:
            b = np.where(nan, nb - 1, b)
        out[:, f] = b


# ---------------------------------------------------------------------------------------------
# Bin finding (run once per feature on the sample; plain Python for exact double arithmetic)
# ---------------------------------------------------------------------------------------------


def _next_up(a):
    """``Common::GetDoubleUpperBound``: the next double above ``a``."""
    return math.nextafter(a, _INF)


def _div(a, b):
    """C++ ``double / double``: division by zero gives +-inf or NaN instead of raising."""
    a = float(a)
    b = float(b)
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(_INF, a) * math.copysign(1.0, b)
    return a / b


def find_distinct_values(values, zero_cnt):
    """Sorted distinct values and their counts, LightGBM-style (``bin.cpp:342-378``).

    Parameters
    ----------
    values : ndarray of shape (n_values,), float
        The sampled non-NaN values of one feature with ``|v| > kZeroThreshold``. Zeros (and
        ``|v| <= kZeroThreshold``) are implicit: they are counted by ``zero_cnt``. A float32
        array is sorted as float32 (the same order as its exact float64 values, and 1.7x faster
        to sort); anything else is sorted as float64.
    zero_cnt : int
        Number of sampled rows that hold a zero.

    Returns
    -------
    distinct_values : ndarray of shape (n_distinct,), dtype float64
        Sorted. Neighbours within one ulp (``b <= nextafter(a, +inf)``, comparing consecutive
        sorted values) are merged and keep the larger value. 0.0 is inserted with count
        ``zero_cnt``: at the front if all values are positive and ``zero_cnt > 0`` (or if there
        are no values), between the negatives and the positives (even when ``zero_cnt == 0``),
        or at the end if all values are negative and ``zero_cnt > 0``.
    counts : ndarray of shape (n_distinct,), dtype int64

    Notes
    -----
    The merge and the insertion run in one pass of the numba kernel :func:`_distinct_sorted`;
    :func:`find_distinct_values_naive` is the same in NumPy (the test oracle).
    """
    values = np.asarray(values)
    v = np.sort(values if values.dtype == np.float32 else values.astype(np.float64))
    return distinct_of_sorted(v, zero_cnt)


def distinct_of_sorted(v, zero_cnt):
    """:func:`find_distinct_values` of values already sorted (float32 or float64 ndarray).

    Parameters
    ----------
    v : ndarray of shape (n_values,), float32 or float64
        Sorted ascending.
    zero_cnt : int

    Returns
    -------
    distinct_values, counts
        As :func:`find_distinct_values`.
    """
    zero_cnt = int(zero_cnt)
    n = v.shape[0]
    if n == 0:
        return np.zeros(1, dtype=np.float64), np.array([zero_cnt], dtype=np.int64)
    distinct = np.empty(n + 1, dtype=np.float64)
    counts = np.empty(n + 1, dtype=np.int64)
    m = _distinct_sorted(v, zero_cnt, distinct, counts)
    return distinct[:m], counts[:m]


@njit(inline="always")
def _above_next_up(a, b):
    """``b > nextafter(a, +inf)``, with the libm call only when ``b`` is within a few ulps of
    ``a`` (or either is NaN or infinite): ``t = a + |a| * 2**-50`` is at least one ulp above a
    finite nonzero normal ``a``, so ``t > a`` and ``b > t`` prove it."""
    if b <= a:
        return False
    t = a + abs(a) * 8.881784197001252e-16
    if t > a and b > t:
        return True
    return b > np.nextafter(a, np.inf)


@njit
def _distinct_sorted(v, zero_cnt, out_values, out_counts):
    """One pass over sorted values: merged distinct values, their counts and the inserted zero
    (the steps of :func:`find_distinct_values_naive`, compared in float64). Writes
    ``out_values`` / ``out_counts`` (length ``len(v) + 1``) and returns their used length.
    ``len(v) >= 1``.
    """
    n = v.shape[0]
    m = 0
    begin = 0
    n_negative = 0
    for i in range(1, n + 1):
        # a new group starts at i unless v[i] <= nextafter(v[i - 1], +inf) (NaN: no new group)
        if i == n or _above_next_up(np.float64(v[i - 1]), np.float64(v[i])):
            d = np.float64(v[i - 1])
            out_values[m] = d
            out_counts[m] = i - begin
            if d < 0.0:
                n_negative += 1
            m += 1
            begin = i
    first = np.float64(v[0])
    last = np.float64(v[n - 1])
    if first > 0.0:
        insert_at = 0 if zero_cnt > 0 else -1
    elif last < 0.0:
        insert_at = m if zero_cnt > 0 else -1
    else:
        insert_at = n_negative
    if insert_at < 0:
        return m
    for k in range(m, insert_at, -1):
        out_values[k] = out_values[k - 1]
        out_counts[k] = out_counts[k - 1]
    out_values[insert_at] = 0.0
    out_counts[insert_at] = zero_cnt
    return m + 1


def find_distinct_values_naive(values, zero_cnt):
    """NumPy reference of :func:`find_distinct_values` (the test oracle): same arguments, same
    result, with a float64 sort (``bin.cpp:342-378``)."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    n = v.shape[0]
    zero_cnt = int(zero_cnt)
    if n == 0:
        return np.zeros(1, dtype=np.float64), np.array([zero_cnt], dtype=np.int64)
    new_group = v[1:] > np.nextafter(v[:-1], np.inf)
    starts = np.concatenate(([0], np.flatnonzero(new_group) + 1))
    ends = np.concatenate((starts[1:], [n]))
    distinct = v[ends - 1]
    counts = (ends - starts).astype(np.int64)
    n_negative = int(np.count_nonzero(distinct < 0.0))
    if v[0] > 0.0:
        insert_at = 0 if zero_cnt > 0 else -1
    elif v[-1] < 0.0:
        insert_at = len(distinct) if zero_cnt > 0 else -1
    else:
        insert_at = n_negative
    if insert_at >= 0:
        distinct = np.insert(distinct, insert_at, 0.0)
        counts = np.insert(counts, insert_at, zero_cnt)
    return distinct, counts


#: Rows per block of :func:`split_sample_columns` (256 rows of 100 float32 features: 100 kB).
_SPLIT_BLOCK = 256


@njit
def split_sample_columns(X, f0, f1, values, n_values, n_nan, n_tiny):
    """Per feature of ``X[:, f0:f1]``, its non-NaN values with ``|v| > kZeroThreshold`` (the
    values ``FindBin`` sees; the rest are zeros), its number of NaNs and its number of
    "tiny" values ``0 < |v| <= kZeroThreshold`` (zeros for ``FindBin``, but binned by value).

    Parameters
    ----------
    X : ndarray of shape (K, n_features), float32, any layout
        The bin sample.
    f0, f1 : int
        The features handled, ``f0 <= f < f1``.
    values : ndarray of shape (>= f1 - f0, >= K), float32
        OUT: ``values[f - f0, :n_values[f - f0]]`` in row order.
    n_values, n_nan, n_tiny : ndarray of shape (>= f1 - f0,), int64
        OUT.

    Notes
    -----
    Source: LightGBM's ``c_api.cpp`` / ``dataset_loader.cpp`` pass only ``|v| > kZeroThreshold``
    and NaN to ``BinMapper::FindBin``. Blocks of ``_SPLIT_BLOCK`` rows are read feature by
    feature (a block stays in cache, so a C-ordered sample is not read once per feature), and
    every value is written at the feature's cursor, which advances only for a kept value (no
    data-dependent branch).
    """
    n_f = f1 - f0
    n = X.shape[0]
    for g in range(n_f):
        n_values[g] = 0
        n_nan[g] = 0
        n_tiny[g] = 0
    for i0 in range(0, n, _SPLIT_BLOCK):
        i1 = min(n, i0 + _SPLIT_BLOCK)
        for g in range(n_f):
            f = f0 + g
            k = n_values[g]
            nan = n_nan[g]
            tiny = n_tiny[g]
            for i in range(i0, i1):
                x = X[i, f]
                is_nan = np.isnan(x)
                a = abs(np.float64(x))
                values[g, k] = x  # overwritten unless kept; k <= i < K
                k += a > K_ZERO_THRESHOLD  # False for NaN
                nan += is_nan
                tiny += (a <= K_ZERO_THRESHOLD) and a != 0.0
            n_values[g] = k
            n_nan[g] = nan
            n_tiny[g] = tiny


@njit
def count_at_most(sorted_values, t):
    """``#{i : float64(sorted_values[i]) <= t}`` by binary search (float32 values are compared
    as float64, as :func:`map_to_bins` compares them with a bound; ``np.searchsorted`` would
    round a Python-float ``t`` to float32).

    Parameters
    ----------
    sorted_values : ndarray of shape (n,), float32 or float64
        Sorted ascending, no NaN.
    t : float
    """
    lo = 0
    hi = sorted_values.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if np.float64(sorted_values[mid]) <= t:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit
def counts_in_bins(distinct_values, counts, bounds, n_searchable, out):
    """Add each distinct value's count to its bin: ``out[b] += counts[i]`` with ``b`` the first
    of the ``n_searchable`` bounds with ``v[i] <= bound`` (the last one if none), i.e.
    ``np.bincount(np.minimum(np.searchsorted(bounds[:n_searchable], v, "left"),
    n_searchable - 1), counts)``, by one merge of the two sorted sequences.

    Parameters
    ----------
    distinct_values : ndarray of shape (n,), float64
        Sorted, no NaN.
    counts : ndarray of shape (n,), int64
    bounds : ndarray of shape (>= n_searchable,), float64
        Increasing over the first ``n_searchable`` entries.
    n_searchable : int
        ``>= 1``.
    out : ndarray of shape (>= n_searchable,), int64
        IN/OUT.
    """
    b = 0
    last = n_searchable - 1
    for i in range(distinct_values.shape[0]):
        x = distinct_values[i]
        while b < last and not x <= bounds[b]:
            b += 1
        out[b] += counts[i]


def greedy_find_bin(distinct_values, counts, max_bin, total_cnt, min_data_in_bin):
    """Upper bounds of at most ``max_bin`` bins over sorted distinct values (``GreedyFindBin``).

    Parameters
    ----------
    distinct_values : sequence of float, length n
        Sorted distinct values.
    counts : sequence of int, length n
        Their counts.
    max_bin : int
        Bin budget (> 0).
    total_cnt : int
        Sum of ``counts``.
    min_data_in_bin : int
        Minimum count per bin.

    Returns
    -------
    list of float
        Strictly increasing upper bounds, the last one ``+inf``. Each finite bound is
        ``nextafter((v[i] + v[i + 1]) / 2, +inf)`` at a cut between ``v[i]`` and ``v[i + 1]``.

    Raises
    ------
    ValueError
        ``max_bin <= 0``.

    Notes
    -----
    Source: ``src/io/bin.cpp:80-160`` (``GreedyFindBin``). If ``n <= max_bin`` every gap with
    at least ``min_data_in_bin`` accumulated rows gets a bound. Otherwise values with a count of
    at least the mean bin size get their own bin and the rest are cut greedily at the running
    mean size (or half of it just before a big value); that scan over the n values runs in
    :func:`_greedy_cuts` (numba; a continuous feature has as many distinct values as sampled
    rows, 200,000 by default), :func:`greedy_find_bin_naive` is the same in Python.
    """
    max_bin = int(max_bin)
    total_cnt = int(total_cnt)
    min_data_in_bin = int(min_data_in_bin)
    if max_bin <= 0:
        raise ValueError(f"max_bin must be > 0, found {max_bin}")
    n = len(distinct_values)
    if n <= max_bin:
        return greedy_find_bin_naive(distinct_values, counts, max_bin, total_cnt, min_data_in_bin)
    v = np.ascontiguousarray(distinct_values, dtype=np.float64)
    c = np.ascontiguousarray(counts, dtype=np.int64)
    if min_data_in_bin > 0:
        max_bin = min(max_bin, total_cnt // min_data_in_bin)
        max_bin = max(max_bin, 1)
    mean_bin_size = _div(total_cnt, max_bin)
    is_big = c >= mean_bin_size
    rest_bin_cnt = max_bin - int(is_big.sum())
    rest_sample_cnt = total_cnt - int(c[is_big].sum())
    cut_upper = np.empty(max_bin, dtype=np.float64)
    cut_lower = np.empty(max_bin, dtype=np.float64)
    m = _greedy_cuts(v, c, is_big, max_bin, rest_bin_cnt, rest_sample_cnt, cut_upper, cut_lower)
    bounds = []
    for up, low in zip(cut_upper[:m].tolist(), cut_lower[:m].tolist()):
        val = _next_up((up + low) / 2.0)
        if not bounds or not val <= _next_up(bounds[-1]):
            bounds.append(val)
    bounds.append(_INF)
    return bounds


@njit
def _div_nb(a, b):
    """:func:`_div` for the numba kernels (C++ double division semantics)."""
    if b == 0.0:
        if a == 0.0 or a != a:
            return np.nan
        return math.copysign(np.inf, a) * math.copysign(1.0, b)
    return a / b


@njit
def _greedy_cuts(v, c, is_big, max_bin, rest_bin_cnt, rest_sample_cnt, cut_upper, cut_lower):
    """The greedy scan of ``GreedyFindBin`` when there are more distinct values than bins.

    Writes ``v[i]`` and ``v[i + 1]`` of each cut into ``cut_upper`` / ``cut_lower`` (length
    ``max_bin``) and returns the number of cuts. Same steps and float64 arithmetic as the loop
    of :func:`greedy_find_bin_naive`.
    """
    n = v.shape[0]
    mean_bin_size = _div_nb(float(rest_sample_cnt), float(rest_bin_cnt))
    m = 0
    cur_cnt_inbin = 0
    for i in range(n - 1):
        if not is_big[i]:
            rest_sample_cnt -= c[i]
        cur_cnt_inbin += c[i]
        half = mean_bin_size * 0.5
        if (is_big[i] or cur_cnt_inbin >= mean_bin_size
                or (is_big[i + 1] and cur_cnt_inbin >= (half if half > 1.0 else 1.0))):
            # (half if half > 1.0 else 1.0) is Python's max(1.0, half), NaN included
            cut_upper[m] = v[i]
            cut_lower[m] = v[i + 1]
            m += 1
            if m + 1 >= max_bin:
                break
            cur_cnt_inbin = 0
            if not is_big[i]:
                rest_bin_cnt -= 1
                mean_bin_size = _div_nb(float(rest_sample_cnt), float(rest_bin_cnt))
    return m


def greedy_find_bin_naive(distinct_values, counts, max_bin, total_cnt, min_data_in_bin):
    """Pure-Python reference of :func:`greedy_find_bin` (the test oracle): same arguments,
    same result, one Python step per distinct value (``GreedyFindBin``, ``bin.cpp:80-160``)."""
    v = [float(a) for a in distinct_values]
    c = [int(a) for a in counts]
    n = len(v)
    max_bin = int(max_bin)
    total_cnt = int(total_cnt)
    min_data_in_bin = int(min_data_in_bin)
    if max_bin <= 0:
        raise ValueError(f"max_bin must be > 0, found {max_bin}")
    bounds = []
    if n <= max_bin:
        cur_cnt_inbin = 0
        for i in range(n - 1):
            cur_cnt_inbin += c[i]
            if cur_cnt_inbin >= min_data_in_bin:
                val = _next_up((v[i] + v[i + 1]) / 2.0)
                if not bounds or not val <= _next_up(bounds[-1]):
                    bounds.append(val)
                    cur_cnt_inbin = 0
        bounds.append(_INF)
        return bounds

    if min_data_in_bin > 0:
        max_bin = min(max_bin, total_cnt // min_data_in_bin)
        max_bin = max(max_bin, 1)
    mean_bin_size = _div(total_cnt, max_bin)
    rest_bin_cnt = max_bin
    rest_sample_cnt = total_cnt
    is_big = [cnt >= mean_bin_size for cnt in c]
    for i in range(n):
        if is_big[i]:
            rest_bin_cnt -= 1
            rest_sample_cnt -= c[i]
    mean_bin_size = _div(rest_sample_cnt, rest_bin_cnt)
    cut_upper = []  # v[i] at each cut
    cut_lower = []  # v[i + 1] at each cut
    cur_cnt_inbin = 0
    for i in range(n - 1):
        if not is_big[i]:
            rest_sample_cnt -= c[i]
        cur_cnt_inbin += c[i]
        if (is_big[i] or cur_cnt_inbin >= mean_bin_size
                or (is_big[i + 1] and cur_cnt_inbin >= max(1.0, mean_bin_size * 0.5))):
            cut_upper.append(v[i])
            cut_lower.append(v[i + 1])
            if len(cut_upper) + 1 >= max_bin:
                break
            cur_cnt_inbin = 0
            if not is_big[i]:
                rest_bin_cnt -= 1
                mean_bin_size = _div(rest_sample_cnt, rest_bin_cnt)
    for up, low in zip(cut_upper, cut_lower):
        val = _next_up((up + low) / 2.0)
        if not bounds or not val <= _next_up(bounds[-1]):
            bounds.append(val)
    bounds.append(_INF)
    return bounds


def find_bin_with_zero_as_one_bin(distinct_values, counts, max_bin, total_sample_cnt, min_data_in_bin):
    """Upper bounds with zero in a bin of its own, ``(-kZ, kZ]`` (``FindBinWithZeroAsOneBin``).

    Parameters
    ----------
    distinct_values : ndarray of shape (n,), float64
        Output of :func:`find_distinct_values`.
    counts : ndarray of shape (n,), int
    max_bin : int
        Bin budget (the NaN bin, if any, is not part of it).
    total_sample_cnt : int
        Number of non-NaN sampled rows (NaN rows included when the feature has no NaN bin).
    min_data_in_bin : int

    Returns
    -------
    list of float
        At most ``max_bin`` increasing upper bounds ending in ``+inf``. Negatives get
        ``max(1, int(L / (T - Z) * (max_bin - 1)))`` bins closed by ``-kZ``; positives follow
        ``+kZ`` with the remaining ``max_bin - 1 - len(bounds)`` bins (kZ = kZeroThreshold).

    Notes
    -----
    Source: ``src/io/bin.cpp:246-302``.
    """
    v = np.asarray(distinct_values, dtype=np.float64)
    c = np.asarray(counts, dtype=np.int64)
    n = v.shape[0]
    kz = K_ZERO_THRESHOLD
    left = v <= -kz
    right = v > kz
    left_cnt_data = int(c[left].sum())
    right_cnt_data = int(c[right].sum())
    cnt_zero = int(c[~left & ~right].sum())
    above = np.flatnonzero(v > -kz)
    left_cnt = int(above[0]) if above.size else n
    bounds = []
    if left_cnt > 0 and max_bin > 1:
        left_max_bin = int(_div(left_cnt_data, int(total_sample_cnt) - cnt_zero) * (max_bin - 1))
        left_max_bin = max(1, left_max_bin)
        bounds = greedy_find_bin(v[:left_cnt], c[:left_cnt], left_max_bin, left_cnt_data, min_data_in_bin)
        bounds[-1] = -kz
    right_idx = np.flatnonzero(right[left_cnt:])
    right_start = left_cnt + int(right_idx[0]) if right_idx.size else -1
    right_max_bin = max_bin - 1 - len(bounds)
    if right_start >= 0 and right_max_bin > 0:
        bounds.append(kz)
        bounds.extend(greedy_find_bin(v[right_start:], c[right_start:], right_max_bin, right_cnt_data,
                                      min_data_in_bin))
    else:
        bounds.append(_INF)
    return bounds


# ---------------------------------------------------------------------------------------------
# Whole-feature bin finding (numba): BinMapper.fit's per-feature steps in one kernel call per
# group of features
# ---------------------------------------------------------------------------------------------


@njit
def _greedy_bounds(v, c, lo, hi, max_bin, total_cnt, min_data_in_bin, out, start):
    """:func:`greedy_find_bin` of ``v[lo:hi]`` / ``c[lo:hi]`` written to ``out[start:]``;
    returns the index after the last bound written (``GreedyFindBin``, ``bin.cpp:80-160``).
    The de-duplication of close bounds compares only the bounds of this call, as
    :func:`greedy_find_bin` does on its own list. ``max_bin > 0``."""
    n = hi - lo
    k = start
    if n <= max_bin:
        cur_cnt_inbin = 0
        for i in range(lo, hi - 1):
            cur_cnt_inbin += c[i]
            if cur_cnt_inbin >= min_data_in_bin:
                val = np.nextafter((v[i] + v[i + 1]) / 2.0, np.inf)
                if k == start or not val <= np.nextafter(out[k - 1], np.inf):
                    out[k] = val
                    k += 1
                    cur_cnt_inbin = 0
        out[k] = np.inf
        return k + 1
    if min_data_in_bin > 0:
        max_bin = min(max_bin, total_cnt // min_data_in_bin)
        max_bin = max(max_bin, 1)
    mean_bin_size = _div_nb(float(total_cnt), float(max_bin))
    vv = v[lo:hi]
    cc = c[lo:hi]
    is_big = np.empty(n, dtype=np.bool_)
    rest_bin_cnt = max_bin
    rest_sample_cnt = total_cnt
    for i in range(n):
        big = cc[i] >= mean_bin_size
        is_big[i] = big
        if big:
            rest_bin_cnt -= 1
            rest_sample_cnt -= cc[i]
    cut_upper = np.empty(max_bin, dtype=np.float64)
    cut_lower = np.empty(max_bin, dtype=np.float64)
    m = _greedy_cuts(vv, cc, is_big, max_bin, rest_bin_cnt, rest_sample_cnt, cut_upper, cut_lower)
    for j in range(m):
        val = np.nextafter((cut_upper[j] + cut_lower[j]) / 2.0, np.inf)
        if k == start or not val <= np.nextafter(out[k - 1], np.inf):
            out[k] = val
            k += 1
    out[k] = np.inf
    return k + 1


@njit
def _zero_as_one_bin_bounds(v, c, n, max_bin, total_sample_cnt, min_data_in_bin, out):
    """:func:`find_bin_with_zero_as_one_bin` of ``v[:n]`` / ``c[:n]`` written to ``out``;
    returns the number of bounds (``FindBinWithZeroAsOneBin``, ``bin.cpp:246-302``)."""
    kz = K_ZERO_THRESHOLD
    # int64 from the start: a literal 0 would have numba compile _greedy_bounds once more, for
    # the literal types its type inference sees first
    left_cnt_data = np.int64(0)
    right_cnt_data = np.int64(0)
    cnt_zero = np.int64(0)
    left_cnt = n
    for i in range(n):
        x = v[i]
        if x <= -kz:
            left_cnt_data += c[i]
        elif x > kz:
            right_cnt_data += c[i]
        else:
            cnt_zero += c[i]
    for i in range(n):
        if v[i] > -kz:
            left_cnt = i
            break
    k = np.int64(0)
    if left_cnt > 0 and max_bin > 1:
        left_max_bin = int(_div_nb(float(left_cnt_data), float(total_sample_cnt - cnt_zero))
                           * (max_bin - 1))
        left_max_bin = max(1, left_max_bin)
        k = _greedy_bounds(v, c, np.int64(0), left_cnt, left_max_bin, left_cnt_data,
                            min_data_in_bin, out, np.int64(0))
        out[k - 1] = -kz
    right_start = -1
    for i in range(left_cnt, n):
        if v[i] > kz:
            right_start = i
            break
    right_max_bin = max_bin - 1 - k
    if right_start >= 0 and right_max_bin > 0:
        out[k] = kz
        k += 1
        k = _greedy_bounds(v, c, right_start, n, right_max_bin, right_cnt_data, min_data_in_bin,
                           out, k)
    else:
        out[k] = np.inf
        k += 1
    return k


@njit
def _fit_numerical(vals, n_nan, n_tiny, max_bin, min_data_in_bin, use_missing, zero_as_missing,
                   pre_filter, filter_cnt, total_sample_cnt, g, out_bounds, n_bounds, missing,
                   default_bins, most_freq_bins, trivial, vmin, vmax, nondefault):
    """One numerical feature of ``BinMapper.fit`` from its kept sampled values ``vals``
    (``|v| > kZ``, not NaN; sorted ascending), its NaN count and its count of values
    ``0 < |v| <= kZ``; results in row / entry ``g`` of the outputs (see
    :func:`fit_numerical_dense`). The steps of ``oocgbdt.core.bin_mapper._find_bin_of_values``
    (LightGBM ``BinMapper::FindBin``, ``bin.cpp:315-512``)."""
    if not use_missing:
        mt = 0
    elif zero_as_missing:
        mt = 1
    else:
        mt = 2 if n_nan > 0 else 0
    na_cnt = n_nan if mt == 2 else 0
    n = vals.shape[0]
    zero_cnt = total_sample_cnt - n - na_cnt
    distinct = np.empty(n + 1, dtype=np.float64)
    counts = np.empty(n + 1, dtype=np.int64)
    if n == 0:
        distinct[0] = 0.0
        counts[0] = zero_cnt
        m = 1
    else:
        m = _distinct_sorted(vals, zero_cnt, distinct, counts)
    vmin[g] = distinct[0]
    vmax[g] = distinct[m - 1]
    bounds = out_bounds[g]
    if mt == 2:
        k = _zero_as_one_bin_bounds(distinct, counts, m, max_bin - 1, total_sample_cnt - na_cnt,
                                    min_data_in_bin, bounds)
        bounds[k] = np.nan
        k += 1
        n_search = k - 1
    else:
        k = _zero_as_one_bin_bounds(distinct, counts, m, max_bin, total_sample_cnt,
                                    min_data_in_bin, bounds)
        if mt == 1 and k == 2:
            mt = 0
        n_search = k
    n_bounds[g] = k
    missing[g] = mt
    cnt = np.zeros(k, dtype=np.int64)
    counts_in_bins(distinct[:m], counts[:m], bounds, n_search, cnt)
    if mt == 2:
        cnt[k - 1] = na_cnt
    is_trivial = k <= 1
    if not is_trivial and pre_filter:
        # NeedFilter (bin.cpp:56-78): no boundary leaves filter_cnt rows on both sides
        need = True
        s = 0
        for b in range(k - 1):
            s += cnt[b]
            if s >= filter_cnt and total_sample_cnt - s >= filter_cnt:
                need = False
                break
        is_trivial = need
    trivial[g] = is_trivial
    d = n_search
    for b in range(n_search):
        if bounds[b] >= 0.0:
            d = b
            break
    d = min(d, n_search - 1)
    default_bins[g] = d
    mf = 0
    for b in range(1, k):
        if cnt[b] > cnt[mf]:
            mf = b
    if mf != d and cnt[mf] / total_sample_cnt < 0.7:  # kSparseThreshold
        mf = d
    most_freq_bins[g] = mf
    if n_tiny == 0:
        hi = n if d == n_search - 1 else count_at_most(vals, bounds[d])
        lo = 0 if d == 0 else count_at_most(vals, bounds[d - 1])
        nondefault[g] = n - (hi - lo) + na_cnt
    else:
        nondefault[g] = -1


@njit
def csr_column_values(indptr, indices, data, col_ptr, out):
    """The stored values of a CSR matrix regrouped by column, in row order within a column
    (the ``data`` of its CSC form): :func:`csr_column_counts` and :func:`csr_scatter_columns`
    over all rows, on this thread.

    Parameters
    ----------
    indptr, indices, data : CSR arrays (any integer / float types)              # IN
    col_ptr : ndarray of shape (n_features + 1,), int64                          # OUT
        Cumulative stored entries per column (``[0] + cumsum(bincount(indices))``).
    out : ndarray of shape (nnz,), float32                                       # OUT
    """
    n_rows = indptr.shape[0] - 1
    col_ptr[:] = 0
    csr_column_counts(indptr, indices, 0, n_rows, col_ptr[1:])
    for f in range(1, col_ptr.shape[0]):
        col_ptr[f] += col_ptr[f - 1]
    pos = col_ptr[:-1].copy()
    csr_scatter_columns(indptr, indices, data, 0, n_rows, pos, out)


@njit
def csr_column_counts(indptr, indices, r0, r1, counts):
    """Add to ``counts[f]`` the stored entries of column ``f`` in the CSR rows
    ``r0 <= i < r1``.

    Parameters
    ----------
    indptr, indices : CSR arrays (any integer types)                             # IN
    r0, r1 : int                                                                 # IN
    counts : ndarray of shape (n_features,), int64                               # IN and OUT
    """
    for k in range(indptr[r0], indptr[r1]):
        # unsigned indices: numba then adds no test for a negative index per entry
        counts[np.uint64(indices[k])] += 1


@njit
def csr_scatter_columns(indptr, indices, data, r0, r1, pos, out):
    """Write the stored values of the CSR rows ``r0 <= i < r1`` column by column: an entry of
    column ``f`` goes to ``out[pos[f]]``, and ``pos[f]`` moves on by one. Row blocks given
    consecutive positions per column (each block's ``pos`` its column starts plus the counts of
    the blocks before it) fill ``out`` as :func:`csr_column_values` does, block by block on
    separate threads.

    Parameters
    ----------
    indptr, indices, data : CSR arrays (any integer / float types)              # IN
    r0, r1 : int                                                                 # IN
    pos : ndarray of shape (n_features,), int64                                  # IN and OUT
    out : ndarray of shape (nnz,), float32                                       # OUT
    """
    for i in range(r0, r1):
        for k in range(indptr[i], indptr[i + 1]):
            f = np.uint64(indices[k])
            out[np.uint64(pos[f])] = data[k]
            pos[f] += 1


@njit
def split_csc_columns(data, indptr, f0, f1, values, n_values, n_nan, n_tiny):
    """:func:`split_sample_columns` of the columns ``f0 <= f < f1`` of a CSC sample (stored
    entries only; the rest are zeros): feature ``f``'s kept values (``|v| > kZ``, not NaN, in
    stored order) go to ``values[indptr[f] - indptr[f0]:][:n_values[f - f0]]``.

    Parameters
    ----------
    data : ndarray of shape (nnz,), float32
    indptr : ndarray of shape (n_features + 1,), int64
    f0, f1 : int
    values : ndarray of shape (>= indptr[f1] - indptr[f0],), float32
        OUT.
    n_values, n_nan, n_tiny : ndarray of shape (>= f1 - f0,), int64
        OUT: kept values, NaNs and values ``0 < |v| <= kZ`` per feature.
    """
    base = indptr[f0]
    for f in range(f0, f1):
        k = indptr[f] - base
        k0 = k
        nan = 0
        tiny = 0
        for j in range(indptr[f], indptr[f + 1]):
            x = data[j]
            a = abs(np.float64(x))
            values[k] = x  # overwritten unless kept
            k += a > K_ZERO_THRESHOLD  # False for NaN
            nan += np.isnan(x)
            tiny += (a <= K_ZERO_THRESHOLD) and a != 0.0
        n_values[f - f0] = k - k0
        n_nan[f - f0] = nan
        n_tiny[f - f0] = tiny


@njit
def unsorted_runs(values, starts, lengths, out):
    """``out[g] = True`` where ``values[starts[g]:starts[g] + lengths[g]]`` is not sorted
    ascending (no NaN in it)."""
    for g in range(starts.shape[0]):
        s = starts[g]
        u = False
        for i in range(s + 1, s + lengths[g]):
            if values[i] < values[i - 1]:
                u = True
                break
        out[g] = u


#: Shell sort's gaps (Ciura, "Best Increments for the Average Case of Shellsort", 2001).
_SHELL_GAPS = (701, 301, 132, 57, 23, 10, 4, 1)


@njit
def shell_sort(v):
    """Sort ``v`` (1-D, no NaN) ascending in place, by shell sort with Ciura's gaps.

    For the short runs of sampled values :func:`fit_numerical_values` sorts itself (the long
    ones are sorted by NumPy first): the same values as ``np.sort`` (values without NaN are
    ordered by ``<`` alone), and a few loops to compile, where numba's ``ndarray.sort``
    compiles its quicksort for about 2 s on a newcomer's first fit."""
    n = v.shape[0]
    for gap in _SHELL_GAPS:
        if gap >= n:
            continue
        for i in range(gap, n):
            x = v[i]
            j = i
            while j >= gap and v[j - gap] > x:
                v[j] = v[j - gap]
                j -= gap
            v[j] = x


@njit
def fit_numerical_values(values, starts, lengths, n_nan, n_tiny, total_sample_cnt, max_bin,
                         min_data_in_bin, use_missing, zero_as_missing, pre_filter, filter_cnt,
                         out_bounds, n_bounds, missing, default_bins, most_freq_bins, trivial,
                         vmin, vmax, nondefault):
    """Numerical bins of a group of features, from their kept sampled values, in one call.

    Parameters
    ----------
    values : ndarray, float32
        Feature ``g``'s kept sampled values (``|v| > kZ``, not NaN; from
        :func:`split_sample_columns` or :func:`split_csc_columns`) in
        ``values[starts[g]:starts[g] + lengths[g]]``; a run that is not sorted ascending is
        sorted in place (:func:`shell_sort`: meant for short runs).
    starts, lengths, n_nan, n_tiny : ndarray of shape (n_group,), int64
        Runs, and each feature's sampled NaNs and values ``0 < |v| <= kZ``.
    total_sample_cnt : int
        K, the sampled rows (the values not in a run, NaN or tiny are zeros).
    max_bin, min_data_in_bin : int
    use_missing, zero_as_missing, pre_filter : bool
    filter_cnt : int
        ``NeedFilter``'s count (``int(min_data_in_leaf * K / N)``).
    out_bounds : ndarray of shape (n_group, >= max_bin + 1), float64
        OUT: feature ``g``'s upper bounds in ``out_bounds[g, :n_bounds[g]]``.
    n_bounds, missing, default_bins, most_freq_bins, nondefault : ndarray of shape (n_group,), int64
        OUT: bins, missing type (``MISSING_NONE`` / ``ZERO`` / ``NAN`` = 0 / 1 / 2), default
        bin, most frequent bin, sampled values off the default bin (-1: unknown, when the
        feature has tiny values).
    trivial : ndarray of shape (n_group,), bool
    vmin, vmax : ndarray of shape (n_group,), float64
        OUT.

    Notes
    -----
    Source: LightGBM ``BinMapper::FindBin`` (``src/io/bin.cpp:315-512``) with
    ``FindBinWithZeroAsOneBin`` / ``GreedyFindBin`` (``bin.cpp:80-302``) and ``NeedFilter``
    (``bin.cpp:56-78``): the steps of ``oocgbdt.core.bin_mapper._find_bin_of_values`` (whose
    NumPy twin, ``_find_bin_naive``, is the test oracle), without a Python step per feature.
    Long unsorted runs are better sorted by NumPy first (its SIMD sort is faster than numba's),
    as ``BinMapper.fit`` does (:func:`unsorted_runs`).
    """
    for g in range(starts.shape[0]):
        v = values[starts[g]:starts[g] + lengths[g]]
        for i in range(1, v.shape[0]):
            if v[i] < v[i - 1]:
                shell_sort(v)
                break
        _fit_numerical(v, n_nan[g], n_tiny[g], max_bin, min_data_in_bin, use_missing,
                       zero_as_missing, pre_filter, filter_cnt, total_sample_cnt, g, out_bounds,
                       n_bounds, missing, default_bins, most_freq_bins, trivial, vmin, vmax,
                       nondefault)
