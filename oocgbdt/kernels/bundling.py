"""This module contains the Exclusive Feature Bundling kernels: merge, decode, route and predict.

Data flow position: after binning. :class:`oocgbdt.core.bundler.FeatureBundler` decides which
features share a column; these kernels write the bundled columns (``X_bundled``) of each chunk,
decode one feature's bin from its bundle column when a split routes rows or a finished tree is
walked, and expand a bundle histogram back to the per-feature layout that split search reads.

Layout of one feature ``f`` (arrays built by the bundler, one entry per ORIGINAL feature):

* ``feature_bundle[f]``: its bundle (column of ``X_bundled``), ``-1`` if it has none (trivial).
* ``feature_raw[f]``: True if ``f`` is alone in its bundle. The column then holds ``f``'s own
  bins unchanged (no offset, nothing recovered by subtraction).
* ``feature_start[f]``: in a bundle of several features, ``f``'s offset (the paper's and the
  seeds' ``binRanges``): a row whose bin ``b`` is not ``f``'s default bin ``d`` is stored as
  ``start + 1 + (b if b < d else b - 1)``, i.e. ``start + b`` when ``d == 0``. Bundle bin 0
  means every member is at its default bin; the default bin itself is never stored.

Conflicts (two members of one bundle off their default bin in the same row) resolve to the
member with the HIGHER feature index, which is the last one written when members are merged in
feature order (the paper's Algorithm 4; LightGBM's dense bins). The losing values are counted.

Every kernel has a plain NumPy/Python ``_naive`` twin used by the tests.
"""
import math

import numpy as np

from oocgbdt._dtypes import MISSING_NAN
from oocgbdt.kernels._jit import njit
from oocgbdt.kernels.binning import value_to_bin
from oocgbdt.kernels.routing import (feature_bin_from_bundle, goes_left_bin,
                                     goes_left_bin_naive, split_segment)

__all__ = [
    "encode_bin", "feature_bin_from_bundle",
    "bundle_columns", "bundle_columns_naive",
    "bundle_sparse_rows", "bundle_sparse_rows_naive", "bundle_sparse_rows_guided",
    "guided_value_to_bin", "value_guides",
    "bin_sparse_entries", "bin_sparse_entries_naive",
    "nondefault_counts", "nondefault_csr", "nondefault_csr_naive",
    "count_pairs", "count_pairs_naive", "complement_columns", "complement_columns_naive",
    "sparse_nondefault", "sparse_nondefault_naive", "count_pairs_masked", "greedy_bundle_of",
    "count_pairs_masked_naive",
    "decode_feature_column", "decode_feature_column_naive",
    "split_rows_bundled", "split_rows_bundled_naive",
    "next_node_bundled", "predict_binned_bundled", "predict_binned_bundled_naive",
    "expand_histogram", "expand_histogram_naive",
]


@njit
def encode_bin(b, start, default_bin, raw):
    """Bundle bin of feature bin ``b`` (``b != default_bin`` unless ``raw``)."""
    if raw:
        return b
    if b < default_bin:
        return start + 1 + b
    return start + b


def _encode_bin_py(b, start, default_bin, raw):
    if raw:
        return int(b)
    return int(start + 1 + b) if b < default_bin else int(start + b)


def _feature_bin_py(v, start, n_bins, default_bin, raw):
    v = int(v)
    if raw:
        return v
    if v <= start or v > start + n_bins - 1:
        return int(default_bin)
    r = v - start - 1
    return r if r < default_bin else r + 1


# ---------------------------------------------------------------------------------------------
# Merge: binned rows -> bundled rows
# ---------------------------------------------------------------------------------------------


@njit
def bundle_columns(X_binned, feature_bundle, feature_start, feature_raw, default_bins, fill, out):
    """Merge a binned chunk into its bundle columns; returns ``(conflict_rows, lost_values)``.

    Parameters
    ----------
    X_binned : ndarray of shape (n_rows, n_features), dtype uint8 or uint16    # IN
    feature_bundle : ndarray of shape (n_features,), dtype int64               # IN  -1: no column
    feature_start : ndarray of shape (n_features,), dtype int64                # IN
    feature_raw : ndarray of shape (n_features,), dtype bool                   # IN
    default_bins : ndarray of shape (n_features,), dtype int32                 # IN
    fill : ndarray of shape (n_columns,), dtype int64                          # IN  value of a row
        whose members are all at their default bin: 0, or a raw feature's default bin.
    out : ndarray of shape (n_rows, n_columns), dtype uint8 or uint16          # OUT

    Returns
    -------
    conflict_rows : int
        Rows where at least one value was overwritten by a later member of the same bundle.
    lost_values : int
        Values overwritten (each reads as its feature's default bin afterwards).
    """
    n_rows = X_binned.shape[0]
    n_features = X_binned.shape[1]
    n_columns = out.shape[1]
    conflict_rows = 0
    lost = 0
    for i in range(n_rows):
        for c in range(n_columns):
            out[i, c] = fill[c]
        row_lost = 0
        for f in range(n_features):
            c = feature_bundle[f]
            if c < 0:
                continue
            b = X_binned[i, f]
            if feature_raw[f]:
                out[i, c] = b
                continue
            d = default_bins[f]
            if b == d:
                continue
            if out[i, c] != 0:
                row_lost += 1
            out[i, c] = encode_bin(b, feature_start[f], d, False)
        if row_lost:
            conflict_rows += 1
            lost += row_lost
    return conflict_rows, lost


def bundle_columns_naive(X_binned, feature_bundle, feature_start, feature_raw, default_bins, fill,
                         out):
    """Plain-Python twin of :func:`bundle_columns`."""
    conflict_rows = lost = 0
    for i in range(X_binned.shape[0]):
        row = [int(v) for v in fill]
        written = [False] * len(row)
        row_lost = 0
        for f in range(X_binned.shape[1]):
            c = int(feature_bundle[f])
            if c < 0:
                continue
            b = int(X_binned[i, f])
            if feature_raw[f]:
                row[c] = b
                continue
            if b == default_bins[f]:
                continue
            if written[c]:
                row_lost += 1
            written[c] = True
            row[c] = _encode_bin_py(b, int(feature_start[f]), int(default_bins[f]), False)
        out[i, :] = row
        if row_lost:
            conflict_rows += 1
            lost += row_lost
    return conflict_rows, lost




@njit
def nondefault_counts(X_binned, default_bins, out):
    """``out[i]`` = number of features of row ``i`` off their default bin.

    Parameters
    ----------
    X_binned : ndarray of shape (n_rows, n_features), dtype uint8 or uint16    # IN
    default_bins : ndarray of shape (n_features,), dtype int32                 # IN
    out : ndarray of shape (n_rows,), dtype int64                              # OUT
    """
    for i in range(X_binned.shape[0]):
        k = 0
        for f in range(X_binned.shape[1]):
            if X_binned[i, f] != default_bins[f]:
                k += 1
        out[i] = k


@njit
def nondefault_csr(X_binned, default_bins, indptr, indices):
    """Column indices of the non-default cells of each row (a CSR pattern, sorted per row).

    Parameters
    ----------
    X_binned : ndarray of shape (n_rows, n_features), dtype uint8 or uint16    # IN
    default_bins : ndarray of shape (n_features,), dtype int32                 # IN
    indptr : ndarray of shape (n_rows + 1,), dtype int64                       # IN  from the
        cumulative :func:`nondefault_counts`
    indices : ndarray of shape (indptr[-1],), dtype int32                      # OUT
    """
    for i in range(X_binned.shape[0]):
        k = indptr[i]
        for f in range(X_binned.shape[1]):
            if X_binned[i, f] != default_bins[f]:
                indices[k] = f
                k += 1


def nondefault_csr_naive(X_binned, default_bins, indptr, indices):
    """NumPy twin of :func:`nondefault_csr`."""
    r, c = np.nonzero(np.asarray(X_binned) != np.asarray(default_bins)[None, :])
    indices[:] = c


@njit
def count_pairs(indptr, indices, out):
    """Add each row's pairs of non-default features to an upper-triangular count matrix.

    For every row and every pair ``f <= g`` of its entries (``f == g`` included, so the
    diagonal counts each feature's rows), ``out[f, g] += 1``. Releases the GIL, so chunks are
    counted in parallel (scipy's sparse product does not).

    Parameters
    ----------
    indptr : ndarray of shape (n_rows + 1,), integer     # IN  CSR pattern
    indices : ndarray of shape (nnz,), integer            # IN  sorted within each row
    out : ndarray of shape (n_features, n_features), int32  # IN and OUT (added to)
    """
    n_features = out.shape[1]
    flat = out.reshape(-1)
    for i in range(indptr.shape[0] - 1):
        lo = indptr[i]
        hi = indptr[i + 1]
        for a in range(lo, hi):
            base = np.int64(indices[a]) * n_features
            for b in range(a, hi):
                # an unsigned index: no test for a negative one (see count_pairs_masked)
                flat[np.uint64(base + indices[b])] += 1


def count_pairs_naive(indptr, indices, out):
    """Twin of :func:`count_pairs` through a dense 0/1 product."""
    n_rows, n_features = len(indptr) - 1, out.shape[0]
    P = np.zeros((n_rows, n_features), dtype=np.int64)
    for i in range(n_rows):
        P[i, indices[indptr[i]:indptr[i + 1]]] = 1
    out += np.triu(P.T @ P).astype(out.dtype)


@njit
def complement_columns(indptr, indices, complemented, out_indptr, out_indices):
    """CSR pattern with the ``complemented`` columns flipped (present <-> absent); returns nnz.

    Each row keeps its entries of other columns and gains the complemented columns it lacks,
    in increasing column order. Call once with ``out_indices`` of length 0 to size it (only
    ``out_indptr`` is written), then again to fill it.

    Parameters
    ----------
    indptr, indices : CSR pattern, indices sorted within each row            # IN
    complemented : ndarray of shape (n_features,), bool                       # IN
    out_indptr : ndarray of shape (n_rows + 1,), int64                        # OUT
    out_indices : ndarray of shape (nnz_out,), int32, or of length 0          # OUT
    """
    comp_cols = np.flatnonzero(complemented)
    n_comp = comp_cols.shape[0]
    fill = out_indices.shape[0] > 0
    k = 0
    out_indptr[0] = 0
    for i in range(indptr.shape[0] - 1):
        a = indptr[i]
        hi = indptr[i + 1]
        c = 0
        while a < hi or c < n_comp:
            if c < n_comp and (a >= hi or comp_cols[c] < indices[a]):
                if fill:
                    out_indices[k] = comp_cols[c]
                k += 1
                c += 1
            elif c < n_comp and comp_cols[c] == indices[a]:
                a += 1
                c += 1
            else:
                if not complemented[indices[a]]:
                    if fill:
                        out_indices[k] = indices[a]
                    k += 1
                a += 1
        out_indptr[i + 1] = k
    return k


def complement_columns_naive(indptr, indices, complemented, out_indptr, out_indices):
    """Twin of :func:`complement_columns` through a dense boolean pattern."""
    n_rows, n_features = len(indptr) - 1, len(complemented)
    P = np.zeros((n_rows, n_features), dtype=bool)
    for i in range(n_rows):
        P[i, indices[indptr[i]:indptr[i + 1]]] = True
    P[:, np.asarray(complemented, dtype=bool)] ^= True
    r, c = np.nonzero(P)
    out_indptr[:] = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=n_rows))])
    if len(out_indices):
        out_indices[:] = c
    return int(len(c))


@njit
def sparse_nondefault(indptr, indices, data, lo, hi, first, last, nan_off, mask, nnz):
    """Mark the stored entries of a CSR matrix that are off their feature's default bin, and
    count them per feature, without binning them: ``data[k]`` of feature ``f`` is in the
    default bin ``d`` iff ``(d == 0 or x > lo[f]) and (d == n_search - 1 or x <= hi[f])`` with
    ``lo[f], hi[f]`` the bounds ``d - 1`` and ``d`` (``first[f]``: ``d == 0``, ``last[f]``:
    ``d == n_search - 1``), as ``ValueToBin``'s search over increasing bounds gives; NaN is off
    it only for a NaN-type feature (``nan_off[f]``; otherwise NaN is binned as 0.0, whose bin
    is the default bin).

    Parameters
    ----------
    indptr, indices, data : CSR arrays (any integer / float types)              # IN
    lo, hi : ndarray of shape (n_features,), float64                              # IN
    first, last, nan_off : ndarray of shape (n_features,), bool                   # IN
    mask : ndarray of shape (nnz,), bool                                          # OUT
    nnz : ndarray of shape (n_features,), int64                                   # IN/OUT (added to)
    """
    for k in range(indices.shape[0]):
        # unsigned index, bitwise tests: no branch per entry (a NaN fails both comparisons,
        # and is then off exactly where nan_off says)
        f = np.uint64(indices[k])
        x = np.float64(data[k])
        inside = (first[f] | (x > lo[f])) & (last[f] | (x <= hi[f]))
        off = (not inside) & ((x == x) | nan_off[f])
        mask[k] = off
        nnz[f] += off


def sparse_nondefault_naive(indptr, indices, data, lo, hi, first, last, nan_off, mask, nnz):
    """Twin of :func:`sparse_nondefault` in NumPy."""
    f = np.asarray(indices)
    x = np.asarray(data, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        inside = (first[f] | (x > lo[f])) & (last[f] | (x <= hi[f]))
    off = np.where(np.isnan(x), nan_off[f], ~inside)
    mask[:] = off
    nnz += np.bincount(f[off], minlength=nnz.shape[0])


def count_pairs_masked_naive(indptr, indices, mask, complemented, r0, r1, out):
    """Twin of :func:`count_pairs_masked` through a dense boolean pattern and a 0/1 product."""
    n_features = complemented.shape[0]
    P = np.zeros((r1 - r0, n_features), dtype=np.int64)
    for i in range(r0, r1):
        for k in range(indptr[i], indptr[i + 1]):
            if mask[k]:
                P[i - r0, indices[k]] = 1
    P[:, np.asarray(complemented, dtype=bool)] ^= 1
    out += np.triu(P.T @ P).astype(out.dtype)


@njit
def count_pairs_masked(indptr, indices, mask, complemented, r0, r1, out):
    """:func:`count_pairs` of rows ``r0 <= i < r1`` of the pattern "stored entry with
    ``mask``" of a CSR matrix (indices sorted within each row), with the ``complemented``
    columns flipped (as :func:`complement_columns` of that pattern), without building either
    pattern: each row's non-default features are merged with the complemented columns in
    increasing order and every pair ``f <= g`` adds one to ``out[f, g]``.

    Parameters
    ----------
    indptr, indices : CSR arrays, indices sorted within each row                   # IN
    mask : ndarray of shape (nnz,), bool   # IN  entries off their default bin (sparse_nondefault)
    complemented : ndarray of shape (n_features,), bool                             # IN
    r0, r1 : int                                                                    # IN
    out : ndarray of shape (n_features, n_features), uint16 or int32   # IN/OUT (added to)
    """
    comp_cols = np.flatnonzero(complemented)
    n_comp = comp_cols.shape[0]
    n_features = complemented.shape[0]
    flat = out.reshape(-1)
    buf = np.empty(n_features, dtype=np.int64)
    for i in range(r0, r1):
        a = indptr[i]
        hi = indptr[i + 1]
        c = 0
        m = 0
        while a < hi or c < n_comp:
            if c < n_comp and (a >= hi or comp_cols[c] < indices[a]):
                buf[m] = comp_cols[c]  # absent: in the complement
                m += 1
                c += 1
            elif c < n_comp and comp_cols[c] == indices[a]:
                if not mask[a]:
                    buf[m] = comp_cols[c]  # stored at its default bin: in the complement
                    m += 1
                a += 1
                c += 1
            else:
                f = indices[a]
                if mask[a] and not complemented[f]:
                    buf[m] = f
                    m += 1
                a += 1
        for p in range(m):
            base = buf[p] * n_features
            for q in range(p, m):
                # An unsigned index into the flat counts: numba then adds no test for a negative
                # index per pair (38 -> 27 ms per 65,535 rows of the 1,205-column one-hot table).
                flat[np.uint64(base + buf[q])] += 1


@njit
def bin_sparse_entries(indices, data, bin_upper_bounds, bound_offsets, n_bins, missing_types, out):
    """Bin the stored entries of a sparse matrix: ``out[k]`` = bin of ``data[k]`` in feature
    ``indices[k]`` (LightGBM's ``ValueToBin``, as :func:`oocgbdt.kernels.binning.map_to_bins`).

    Parameters
    ----------
    indices : ndarray of shape (nnz,), integer             # IN  feature of each entry
    data : ndarray of shape (nnz,), float32 or float64     # IN
    bin_upper_bounds, bound_offsets, n_bins, missing_types # IN  BinMapper arrays
    out : ndarray of shape (nnz,), integer                  # OUT
    """
    for k in range(indices.shape[0]):
        f = indices[k]
        out[k] = value_to_bin(np.float64(data[k]), bin_upper_bounds, bound_offsets[f], n_bins[f],
                               missing_types[f])


def bin_sparse_entries_naive(indices, data, bin_upper_bounds, bound_offsets, n_bins, missing_types,
                             out):
    """Twin of :func:`bin_sparse_entries` through :func:`map_to_bins_naive`, one entry at a time."""
    from oocgbdt.kernels.binning import map_to_bins_naive
    for k in range(len(indices)):
        f = int(indices[k])
        one = np.empty((1, 1), dtype=np.int64)
        map_to_bins_naive(np.array([[data[k]]], dtype=np.float64),
                          bin_upper_bounds[bound_offsets[f]:bound_offsets[f] + n_bins[f]],
                          np.array([0, n_bins[f]], dtype=np.int64), n_bins[f:f + 1],
                          missing_types[f:f + 1], one)
        out[k] = one[0, 0]


#: Features with at least this many searchable bins get a guide table (:func:`value_guides`).
GUIDE_MIN_BINS = 16
#: Largest guide table of one feature.
GUIDE_MAX_SIZE = 1024


@njit
def guided_value_to_bin(x, bounds, start, nb, missing_type, table, t_start, t_size, lo, scale):
    """:func:`oocgbdt.kernels.binning.value_to_bin` started from a guess: the bin of the left
    edge of ``x``'s bucket in a table of ``t_size`` equal-width buckets from ``lo``
    (``t_size == 0``: no table, the plain search). The guess is walked down while
    ``x <= bounds[g - 1]`` and up while ``x > bounds[g]``: it ends at the first searchable bin
    with ``x <= bound`` (the last one if none), exactly the search's bin whatever the guess, in
    a step or two instead of ``log2(nb)`` hard-to-predict branches.
    """
    is_nan_type = missing_type == MISSING_NAN
    if np.isnan(x):
        if is_nan_type:
            return nb - 1
        x = 0.0
    if t_size == 0:
        return value_to_bin(x, bounds, start, nb, missing_type)
    n_search = nb - 1 if is_nan_type else nb
    u = (x - lo) * scale
    if u > 0.0:
        t = t_size - 1 if u >= t_size else int(u)
    else:
        t = 0
    g = table[t_start + t]
    while g > 0 and x <= bounds[start + g - 1]:
        g -= 1
    while g < n_search - 1 and x > bounds[start + g]:
        g += 1
    return g


@njit
def _fill_guides(bin_upper_bounds, bound_offsets, n_bins, missing_types, offsets, sizes, lo,
                 scale, table):
    for f in range(n_bins.shape[0]):
        size = sizes[f]
        for t in range(size):
            x = lo[f] + t / scale[f]
            table[offsets[f] + t] = value_to_bin(x, bin_upper_bounds, bound_offsets[f], n_bins[f],
                                                 missing_types[f])


def value_guides(bin_upper_bounds, bound_offsets, n_bins, missing_types):
    """Guide tables for :func:`guided_value_to_bin`, one per feature with at least
    ``GUIDE_MIN_BINS`` searchable bins and finite, increasing first and last finite bounds.

    Returns
    -------
    table : ndarray of shape (sum of sizes,), int32
        ``table[offsets[f] + t]``: the bin of ``lo[f] + t / scale[f]``.
    offsets, sizes : ndarray of shape (n_features,), int64
        ``sizes[f]``: a power of two, about four buckets per bin, at most ``GUIDE_MAX_SIZE``;
        0 for no guide.
    lo, scale : ndarray of shape (n_features,), float64
        Buckets of width ``1 / scale[f]`` from ``lo[f]``, the first bound, to the last finite
        searchable bound.
    """
    n_bins = np.asarray(n_bins, dtype=np.int64)
    offs = np.asarray(bound_offsets, dtype=np.int64)[:n_bins.shape[0]]
    n_search = n_bins - (np.asarray(missing_types) == MISSING_NAN)
    sizes = np.zeros(n_bins.shape[0], dtype=np.int64)
    lo = np.zeros(n_bins.shape[0], dtype=np.float64)
    scale = np.zeros(n_bins.shape[0], dtype=np.float64)
    for f in np.flatnonzero(n_search >= GUIDE_MIN_BINS):
        a = float(bin_upper_bounds[offs[f]])
        b = float(bin_upper_bounds[offs[f] + n_search[f] - 2])
        if not (math.isfinite(a) and math.isfinite(b) and b > a):
            continue
        size = min(GUIDE_MAX_SIZE, 1 << int(math.ceil(math.log2(4 * int(n_search[f])))))
        sc = size / (b - a)
        if not (math.isfinite(sc) and sc > 0.0):
            continue
        sizes[f], lo[f], scale[f] = size, a, sc
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    table = np.zeros(int(sizes.sum()), dtype=np.int32)
    _fill_guides(np.asarray(bin_upper_bounds, dtype=np.float64), offs, n_bins,
                 np.asarray(missing_types), offsets, sizes, lo, scale, table)
    return table, offsets, sizes, lo, scale


@njit
def bundle_sparse_rows_guided(indptr, indices, data, bin_upper_bounds, bound_offsets, n_bins,
                              missing_types, feature_bundle, feature_start, feature_raw,
                              default_bins, fill, guide_table, guide_offsets, guide_sizes,
                              guide_lo, guide_scale, out):
    """:func:`bundle_sparse_rows`, each entry binned by :func:`guided_value_to_bin` with the
    guides of :func:`value_guides` (the same bins; fewer mispredicted branches for features
    with many bins). Returns ``(conflict_rows, lost_values)``.

    Implicit zeros are at their feature's default bin (the bin of 0.0), so only the stored
    entries are binned; no dense float copy of the chunk is made. Conflicts resolve to the
    member with the higher feature index whatever the order of ``indices`` within a row, so
    the result equals :func:`bundle_columns` on the densely binned rows.

    Parameters
    ----------
    indptr : ndarray of shape (n_rows + 1,), integer                            # IN  CSR
    indices : ndarray of shape (nnz,), integer                                  # IN
    data : ndarray of shape (nnz,), float32 or float64                          # IN
    bin_upper_bounds, bound_offsets, n_bins, missing_types                      # IN  BinMapper
        As for :func:`oocgbdt.kernels.binning.map_to_bins`.
    feature_bundle, feature_start, feature_raw, default_bins, fill              # IN
        As for :func:`bundle_columns`.
    guide_table, guide_offsets, guide_sizes, guide_lo, guide_scale              # IN
        From :func:`value_guides` of the same BinMapper arrays.
    out : ndarray of shape (n_rows, n_columns), dtype uint8 or uint16           # OUT
    """
    # Each feature's fields in one 64-byte record (and its guide's in a second one, read only
    # for features with a guide): an entry then reads one cache line of feature data instead
    # of one per field array. With 1,205 one-hot features, whose fields do not stay in L1,
    # 19 -> 10 ns per stored entry (65k rows x 29 entries, one thread).
    n_features = n_bins.shape[0]
    rec = np.empty((n_features, 8), dtype=np.int64)
    guide = np.empty((n_features, 3), dtype=np.float64)
    for f in range(n_features):
        rec[f, 0] = feature_bundle[f]
        rec[f, 1] = bound_offsets[f]
        rec[f, 2] = n_bins[f]
        rec[f, 3] = missing_types[f]
        rec[f, 4] = feature_raw[f]
        rec[f, 5] = default_bins[f]
        rec[f, 6] = feature_start[f]
        rec[f, 7] = guide_sizes[f]
        guide[f, 0] = guide_lo[f]
        guide[f, 1] = guide_scale[f]
        guide[f, 2] = guide_offsets[f]
    n_rows = indptr.shape[0] - 1
    n_columns = out.shape[1]
    writer = np.full(n_columns, -1, dtype=np.int64)  # feature that wrote column c in this row
    conflict_rows = 0
    lost = 0
    for i in range(n_rows):
        for c in range(n_columns):
            out[i, c] = fill[c]
        row_lost = 0
        for k in range(indptr[i], indptr[i + 1]):
            f = indices[k]
            c = rec[f, 0]
            if c < 0:
                continue
            t_size = rec[f, 7]
            if t_size > 0:
                b = guided_value_to_bin(np.float64(data[k]), bin_upper_bounds, rec[f, 1],
                                        rec[f, 2], rec[f, 3], guide_table, np.int64(guide[f, 2]),
                                        t_size, guide[f, 0], guide[f, 1])
            else:
                b = value_to_bin(np.float64(data[k]), bin_upper_bounds, rec[f, 1], rec[f, 2],
                                 rec[f, 3])
            if rec[f, 4]:
                out[i, c] = b
                continue
            d = rec[f, 5]
            if b == d:
                continue
            if writer[c] >= 0:
                row_lost += 1
                if writer[c] > f:
                    continue  # the higher feature index keeps the value
            writer[c] = f
            out[i, c] = encode_bin(b, rec[f, 6], d, False)
        for k in range(indptr[i], indptr[i + 1]):
            c = rec[indices[k], 0]
            if c >= 0:
                writer[c] = -1
        if row_lost:
            conflict_rows += 1
            lost += row_lost
    return conflict_rows, lost


@njit
def bundle_sparse_rows(indptr, indices, data, bin_upper_bounds, bound_offsets, n_bins, missing_types,
                       feature_bundle, feature_start, feature_raw, default_bins, fill, out):
    """Bin and merge CSR rows straight into bundle columns; returns ``(conflict_rows, lost_values)``.

    Implicit zeros are at their feature's default bin (the bin of 0.0), so only the stored
    entries are binned; no dense float copy of the chunk is made. Conflicts resolve to the
    member with the higher feature index whatever the order of ``indices`` within a row, so
    the result equals :func:`bundle_columns` on the densely binned rows.

    Parameters
    ----------
    indptr : ndarray of shape (n_rows + 1,), integer                            # IN  CSR
    indices : ndarray of shape (nnz,), integer                                  # IN
    data : ndarray of shape (nnz,), float32 or float64                          # IN
    bin_upper_bounds, bound_offsets, n_bins, missing_types                      # IN  BinMapper
        As for :func:`oocgbdt.kernels.binning.map_to_bins`.
    feature_bundle, feature_start, feature_raw, default_bins, fill              # IN
        As for :func:`bundle_columns`.
    out : ndarray of shape (n_rows, n_columns), dtype uint8 or uint16           # OUT
    """
    empty = np.zeros(0, dtype=np.int32)
    none = np.zeros(bound_offsets.shape[0], dtype=np.int64)
    return bundle_sparse_rows_guided(indptr, indices, data, bin_upper_bounds, bound_offsets,
                                     n_bins, missing_types, feature_bundle, feature_start,
                                     feature_raw, default_bins, fill, empty, none, none,
                                     np.zeros(bound_offsets.shape[0]),
                                     np.zeros(bound_offsets.shape[0]), out)


def bundle_sparse_rows_naive(indptr, indices, data, bin_upper_bounds, bound_offsets, n_bins,
                             missing_types, feature_bundle, feature_start, feature_raw,
                             default_bins, fill, out):
    """Twin of :func:`bundle_sparse_rows`: densify, bin with NumPy, then merge naively."""
    from oocgbdt.kernels.binning import map_to_bins_naive
    n_rows = len(indptr) - 1
    n_features = len(n_bins)
    dense = np.zeros((n_rows, n_features), dtype=np.float64)
    for i in range(n_rows):
        for k in range(indptr[i], indptr[i + 1]):
            dense[i, indices[k]] = data[k]
    binned = np.empty((n_rows, n_features), dtype=np.int64)
    map_to_bins_naive(dense, bin_upper_bounds, bound_offsets, n_bins, missing_types, binned)
    return bundle_columns_naive(binned, feature_bundle, feature_start, feature_raw, default_bins,
                                fill, out)


# ---------------------------------------------------------------------------------------------
# Decode: one feature's bins from its bundle column
# ---------------------------------------------------------------------------------------------


@njit
def decode_feature_column(column, start, n_bins, default_bin, raw, out):
    """``out[i] = feature_bin_from_bundle(column[i], ...)`` for every row of a chunk.

    Parameters
    ----------
    column : ndarray of shape (n_rows,), dtype uint8 or uint16    # IN  the feature's bundle column
    start, n_bins, default_bin : int; raw : bool                  # IN  the feature's layout
    out : ndarray of shape (n_rows,), dtype uint8 or uint16       # OUT the feature's bins
    """
    for i in range(column.shape[0]):
        out[i] = feature_bin_from_bundle(column[i], start, n_bins, default_bin, raw)


def decode_feature_column_naive(column, start, n_bins, default_bin, raw, out):
    """Plain-Python twin of :func:`decode_feature_column`."""
    for i in range(len(column)):
        out[i] = _feature_bin_py(column[i], start, n_bins, default_bin, raw)


@njit
def split_rows_bundled(column, order, begin, count, threshold_bin, default_left, missing_type,
                       default_bin, nan_bin, cat_boundaries, cat_threshold, start, n_bins, raw,
                       out_order, skewed=False, rowmap=None):
    """:func:`oocgbdt.kernels.routing.split_rows` on a feature read off its bundle column.

    Parameters are those of ``split_rows`` (``column`` is the bundle column, ``rowmap`` where
    it holds each row), plus the split feature's layout ``start``, ``n_bins`` and ``raw`` (see
    the module docstring).
    """
    return split_segment(column, order, begin, count, threshold_bin, default_left, missing_type,
                         default_bin, nan_bin, cat_boundaries, cat_threshold, start, n_bins, raw,
                         out_order, skewed, rowmap)


def split_rows_bundled_naive(column, order, begin, count, threshold_bin, default_left, missing_type,
                             default_bin, nan_bin, cat_boundaries, cat_threshold, start, n_bins,
                             raw, out_order):
    """Twin of :func:`split_rows_bundled`: decode with Python, then partition with NumPy."""
    from oocgbdt.kernels.routing import split_rows_naive
    decoded = np.array([_feature_bin_py(v, start, n_bins, default_bin, raw) for v in column],
                       dtype=np.int64)
    return split_rows_naive(decoded, order, begin, count, threshold_bin, default_left,
                            missing_type, default_bin, nan_bin, cat_boundaries, cat_threshold,
                            out_order)


@njit
def next_node_bundled(X_bundled, r, node, split_column, split_start, split_n_bins, split_raw,
                      threshold_bin, default_left, missing_type, default_bin, nan_bin, left_child,
                      right_child, cat_boundaries, cat_threshold):
    """The child of internal node ``node`` that row ``r`` of bundled rows goes to (an internal
    node, or ``~leaf``): the node's feature read off its bundle column, then
    :func:`~oocgbdt.kernels.routing.goes_left_bin`. Per-node arrays as for
    :func:`predict_binned_bundled`."""
    b = feature_bin_from_bundle(X_bundled[r, split_column[node]], split_start[node],
                                split_n_bins[node], default_bin[node], split_raw[node])
    if goes_left_bin(b, threshold_bin[node], default_left[node], missing_type[node],
                     default_bin[node], nan_bin[node], cat_boundaries, cat_threshold):
        return left_child[node]
    return right_child[node]


@njit
def predict_binned_bundled(X_bundled, split_column, split_start, split_n_bins, split_raw,
                           threshold_bin, default_left, missing_type, default_bin, nan_bin,
                           left_child, right_child, leaf_value, cat_boundaries, cat_threshold,
                           out):
    """:func:`oocgbdt.kernels.predict.predict_binned` on bundled rows.

    Each node's split feature is read off its bundle column ``split_column[node]`` with that
    feature's layout (``split_start``, ``split_n_bins``, ``split_raw``); the other arrays are
    those of ``predict_binned``. ``out`` (n_rows,) float64 is added to.
    """
    n_nodes = split_column.shape[0]
    for i in range(X_bundled.shape[0]):
        if n_nodes == 0:
            out[i] += leaf_value[0]
            continue
        node = 0
        while node >= 0:
            node = next_node_bundled(X_bundled, i, node, split_column, split_start, split_n_bins,
                                     split_raw, threshold_bin, default_left, missing_type,
                                     default_bin, nan_bin, left_child, right_child,
                                     cat_boundaries, cat_threshold)
        out[i] += leaf_value[~node]


def predict_binned_bundled_naive(X_bundled, split_column, split_start, split_n_bins, split_raw,
                                 threshold_bin, default_left, missing_type, default_bin, nan_bin,
                                 left_child, right_child, leaf_value, cat_boundaries,
                                 cat_threshold, out):
    """Plain-Python twin of :func:`predict_binned_bundled`."""
    for i in range(X_bundled.shape[0]):
        node = 0 if len(split_column) else -1
        while node >= 0:
            b = _feature_bin_py(X_bundled[i, split_column[node]], split_start[node],
                                split_n_bins[node], default_bin[node], split_raw[node])
            left = goes_left_bin_naive(b, threshold_bin[node], default_left[node],
                                       missing_type[node], default_bin[node], nan_bin[node],
                                       cat_boundaries, cat_threshold)
            node = left_child[node] if left else right_child[node]
        out[i] += leaf_value[~node]


# ---------------------------------------------------------------------------------------------
# Histograms: bundle layout -> per-feature layout
# ---------------------------------------------------------------------------------------------


@njit
def expand_histogram(hist, expand_index, bin_offsets, n_bins, default_bins, feature_raw,
                     feature_mask, sum_g, sum_h, out):
    """Per-feature histogram of one leaf from its bundle histogram: the gradient and hessian
    fields (histograms hold no per-bin counts, see :mod:`oocgbdt.kernels.histogram`; the count
    field of ``out`` is not written).

    Feature ``f``'s bin ``b`` is copied from row ``expand_index[bin_offsets[f] + b]`` of
    ``hist``. The default bin of a bundled (not raw) feature is not stored (its index is -1):
    it is recovered as the leaf totals minus the feature's other bins, summed in bin order.

    Parameters
    ----------
    hist : ndarray of shape (n_bundle_bins, 2), dtype float64         # IN  bundle histogram
    expand_index : ndarray of shape (n_total_bins,), dtype int64      # IN  -1: recovered bin
    bin_offsets : ndarray of shape (n_features + 1,), dtype int64     # IN  per-feature layout
    n_bins, default_bins : ndarray of shape (n_features,), int32      # IN
    feature_raw, feature_mask : ndarray of shape (n_features,), bool  # IN  only masked features
    sum_g, sum_h : float                                              # IN  leaf totals
    out : ndarray of shape (n_total_bins, 2), dtype float64           # OUT masked features' rows
    """
    for f in range(n_bins.shape[0]):
        if not feature_mask[f]:
            continue
        lo = bin_offsets[f]
        nb = n_bins[f]
        acc_g = 0.0
        acc_h = 0.0
        for b in range(nb):
            src = expand_index[lo + b]
            if src >= 0:
                out[lo + b, 0] = hist[src, 0]
                out[lo + b, 1] = hist[src, 1]
                acc_g += hist[src, 0]
                acc_h += hist[src, 1]
        if not feature_raw[f]:
            d = lo + default_bins[f]
            out[d, 0] = sum_g - acc_g
            out[d, 1] = sum_h - acc_h


def expand_histogram_naive(hist, expand_index, bin_offsets, n_bins, default_bins, feature_raw,
                           feature_mask, sum_g, sum_h, out):
    """NumPy twin of :func:`expand_histogram`."""
    for f in range(len(n_bins)):
        if not feature_mask[f]:
            continue
        lo, hi = int(bin_offsets[f]), int(bin_offsets[f] + n_bins[f])
        idx = np.asarray(expand_index[lo:hi])
        stored = idx >= 0
        out[lo:hi, :2][stored] = hist[idx[stored], :2]
        if not feature_raw[f]:
            d = lo + int(default_bins[f])
            total = np.array([sum_g, sum_h])
            out[d, :2] = (total - np.add.reduce(hist[idx[stored], :2], axis=0) if stored.any()
                          else total)


# ---------------------------------------------------------------------------------------------
# Greedy bundling on a dense pairwise count matrix
# ---------------------------------------------------------------------------------------------


@njit
def greedy_bundle_of(order, pairs, budget, n_bins, max_bins, dense, nnz, bundle_of):
    """The greedy bundling of ``oocgbdt.core.bundler.greedy_bundles`` on a dense symmetric
    count matrix: each feature of ``order`` joins the first bundle (in creation order) whose
    accumulated conflicts plus its conflicts with the members stay within ``budget``, with at
    most ``nnz[f] // 2`` conflicts, and whose column stays within ``max_bins``; else it opens
    a new bundle (always, for a ``dense`` feature).

    Parameters
    ----------
    order : ndarray of shape (n_order,), int64                       # IN  placement order
    pairs : ndarray of shape (F, F), integer                         # IN  diagonal ignored
    budget, max_bins : int                                           # IN
    n_bins, nnz : ndarray of shape (F,), int64                       # IN
    dense : ndarray of shape (F,), bool                              # IN
    bundle_of : ndarray of shape (F,), int64                         # OUT bundle of each feature
                                                                     #     placed, -1 elsewhere

    Returns
    -------
    n_bundles : int
    capped : bool
        True if the bin cap (and not conflicts) kept some feature out of every bundle it fitted.

    Notes
    -----
    Conflicts are summed as int64 (exact), as the Python version's float64 sums of integer
    counts are below 2**53. Source: LightGBM ``FindGroups`` (``src/io/dataset.cpp``) as
    restated in ``oocgbdt.core.bundler``'s module docstring.
    """
    n_features = n_bins.shape[0]
    for g in range(n_features):
        bundle_of[g] = -1
    n_order = order.shape[0]
    conflicts = np.zeros(n_order, dtype=np.int64)
    bins = np.zeros(n_order, dtype=np.int64)
    conf = np.zeros(n_order, dtype=np.int64)
    n_b = 0
    capped = False
    for i in range(n_order):
        f = order[i]
        nb = n_bins[f]
        chosen = -1
        if not dense[f] and n_b > 0:
            for b in range(n_b):
                conf[b] = 0
            for g in range(n_features):
                b = bundle_of[g]
                if b >= 0 and g != f:
                    conf[b] += pairs[f, g]
            cap_hit = False
            half = nnz[f] // 2
            for b in range(n_b):
                if conflicts[b] + conf[b] <= budget and conf[b] <= half:
                    if bins[b] + nb - 1 <= max_bins:
                        chosen = b
                        break
                    cap_hit = True
            if chosen >= 0:
                conflicts[chosen] += conf[chosen]
                bins[chosen] += nb - 1
            elif cap_hit:
                capped = True
        if chosen < 0:
            chosen = n_b
            n_b += 1
            conflicts[chosen] = 0
            bins[chosen] = nb
        bundle_of[f] = chosen
    return n_b, capped
