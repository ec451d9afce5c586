"""This module contains the row-routing kernel: split one leaf's rows into its two children.

Data flow position: per chunk, at the start of each boosting pass. Rows are kept grouped by leaf in
an ``order`` array (LightGBM's DataPartition): leaf ``l`` owns ``order[leaf_begin[l]:leaf_begin[l] +
leaf_count[l]]``. Splitting a leaf stably partitions its segment, left rows first.
"""
import numpy as np

from oocgbdt.kernels._jit import PREFETCH_ROWS, njit, prefetch
from oocgbdt.kernels.categorical import in_bitset, in_bitset_naive

__all__ = ["split_rows", "split_rows_naive", "goes_left_bin", "goes_left_bin_naive",
           "split_segment", "decision_table", "SKEWED_SHARE", "feature_bin_from_bundle", "prefetch_pays",
           "CATEGORICAL_NODE", "column_major_copy", "COPY_BLOCK_ROWS"]

#: ``missing_type`` of a categorical node in bin space (LightGBM's missing types are 0-2).
CATEGORICAL_NODE = 3


@njit
def goes_left_bin(b, threshold_bin, default_left, missing_type, default_bin, nan_bin,
                  cat_boundaries, cat_threshold):
    """Decision on a bin: missing rows go to the default side, others left iff ``b <= threshold_bin``.

    A categorical node (``missing_type == CATEGORICAL_NODE``) sends ``b`` left iff it is in
    the bitset ``cat_threshold[cat_boundaries[threshold_bin]:cat_boundaries[threshold_bin + 1]]``
    (LightGBM's ``CategoricalDecisionInner``); bin 0 (NaN, negative, unseen) is never in it.
    """
    if missing_type == 3:
        return in_bitset(cat_threshold, cat_boundaries[threshold_bin],
                         cat_boundaries[threshold_bin + 1], b)
    if missing_type == 2 and b == nan_bin:
        return default_left
    if missing_type == 1 and b == default_bin:
        return default_left
    return b <= threshold_bin


def goes_left_bin_naive(b, threshold_bin, default_left, missing_type, default_bin, nan_bin,
                        cat_boundaries, cat_threshold):
    """Plain-Python twin of :func:`goes_left_bin`."""
    if missing_type == CATEGORICAL_NODE:
        return in_bitset_naive(cat_threshold, int(cat_boundaries[threshold_bin]),
                               int(cat_boundaries[threshold_bin + 1]), int(b))
    if (missing_type == 2 and b == nan_bin) or (missing_type == 1 and b == default_bin):
        return bool(default_left)
    return b <= threshold_bin


#: A split whose smaller side is expected to get fewer than this share of its rows is routed
#: with a branch per row (see :func:`split_segment`).
SKEWED_SHARE = 0.3


@njit
def split_rows(column, order, begin, count, threshold_bin, default_left, missing_type, default_bin,
               nan_bin, cat_boundaries, cat_threshold, out_order, skewed=False, rowmap=None):
    """Stably partition ``order[begin:begin+count]`` by the split; returns the number of left rows.

    Each row's bin is read once, prefetched a few rows ahead where that pays
    (:func:`prefetch_pays`: a strided column of row-major bins read at a few scattered rows),
    and its side looked up in the split's :func:`decision_table` (see :func:`split_segment`).

    Parameters
    ----------
    column : ndarray of shape (n_rows,), dtype uint8 or uint16      # IN  binned values of the split feature
    order : ndarray of shape (n_rows,), dtype int32                 # IN  rows grouped by leaf
    begin, count : int                                              # IN  the leaf's segment of ``order``
    threshold_bin : int; default_left : bool; missing_type : int (0 None, 1 Zero, 2 NaN)
    default_bin : int (the bin of 0.0); nan_bin : int (the NaN bin, ``n_bins - 1``)
    cat_boundaries : int64, cat_threshold : uint32                  # IN  bin bitsets, read by a
        categorical split (``missing_type == CATEGORICAL_NODE``), see :func:`goes_left_bin`
    out_order : ndarray of shape (n_rows,), dtype int32              # OUT  only the segment is written
    skewed : bool, default False                                    # IN  how to route (not what):
        True when one side is expected to get most rows (:data:`SKEWED_SHARE`)
    rowmap : ndarray of shape (n_order_rows,), dtype int32, or None  # IN  where ``column``
        holds each row of ``order``: row ``r`` reads ``column[rowmap[r]]`` (a tree's compact
        subset of rows routed from the whole partition's column); None: ``column[r]``
    """
    return split_segment(column, order, begin, count, threshold_bin, default_left, missing_type,
                         default_bin, nan_bin, cat_boundaries, cat_threshold, 0, 0, True,
                         out_order, skewed, rowmap)


@njit
def split_segment(column, order, begin, count, threshold_bin, default_left, missing_type,
                  default_bin, nan_bin, cat_boundaries, cat_threshold, start, n_bins, raw,
                  out_order, skewed=False, rowmap=None):
    """:func:`split_rows` on the feature read off ``column`` by
    :func:`feature_bin_from_bundle` (``start``, ``n_bins``, ``raw``: the feature's place in its
    bundle column; ``raw`` True reads ``column`` as the feature's own bins), each row ``r``
    at ``column[rowmap[r]]`` when ``rowmap`` is given.

    A compact subset of a partition's rows (a sampled round's) is routed through ``rowmap``
    from the partition's column-major bins: its ascending rows then read one column of the
    partition (a few hundred kB, in cache) instead of one cache line per row of the subset's
    row-major copy (measured on 1M x 100, 30% bagging, one thread: 15.9 ms of routing per tree
    from the subset's rows, against 11.7 ms for every row of the unsampled tree from the
    columns).

    Each row's side is looked up in the split's :func:`decision_table` (built once per call,
    one entry per column value: no decoding or missing-value tests per row). Left rows go to
    the next left slot, right rows to a buffer copied after them; in place (``out_order is
    order``) is safe, as a row is written at or before the position it was read from.

    ``skewed`` picks one of two loops with the same result. Skewed: a branch per row, each row
    written once; the branch is predicted well when one side gets most rows. Else branch-free:
    each row written to both places, only its side advancing (a branch mispredicts on about
    every other row of a split near the median). Measured per row on the splits of a one-hot
    fit's 53k-65k-row partitions (contiguous uint8 columns, one thread): the branch 1.3-1.4 ns
    on splits sending under 30% of the rows one way, 3.8 ns on splits near the median (4-6 at
    the root); branch-free 2.1-2.3 ns on any split; decoding each row instead of the table,
    branch-free, 3.2 ns. The table has an entry for every value of the column's dtype: a bounds
    test per row instead mispredicted wherever about half the values were past the feature's
    range (up to 5 ns per row).
    """
    table = decision_table(1 << (8 * column.itemsize), start, n_bins, raw, threshold_bin,
                           default_left, missing_type, default_bin, nan_bin, cat_boundaries,
                           cat_threshold)
    right = np.empty(count, dtype=order.dtype)
    left_pos = begin
    n_right = 0
    end = begin + count
    if rowmap is None:
        mapped = False
        where = order  # never read: no array made per call
    else:
        mapped = True
        where = rowmap
    ahead = not mapped and prefetch_pays(column, count)
    # Every index is cast to unsigned: numba then adds no test for a negative index (which
    # would count from the end). Measured per row on 160k uint8 rows, one thread: 2.3 -> 1.0 ns
    # branch-free, 1.6-2.3 -> 0.6-0.9 ns with the branch.
    if skewed:
        for i in range(begin, end):
            if ahead and i + PREFETCH_ROWS < end:
                prefetch(column, order[np.uint64(i + PREFETCH_ROWS)])
            r = order[np.uint64(i)]
            c = where[np.uint64(r)] if mapped else r
            if table[column[np.uint64(c)]]:
                out_order[np.uint64(left_pos)] = r
                left_pos += 1
            else:
                right[np.uint64(n_right)] = r
                n_right += 1
    else:
        for i in range(begin, end):
            if ahead and i + PREFETCH_ROWS < end:
                prefetch(column, order[np.uint64(i + PREFETCH_ROWS)])
            r = order[np.uint64(i)]
            c = where[np.uint64(r)] if mapped else r
            left = np.int64(table[column[np.uint64(c)]])
            out_order[np.uint64(left_pos)] = r
            right[np.uint64(n_right)] = r
            left_pos += left
            n_right += 1 - left
    for i in range(n_right):
        out_order[np.uint64(left_pos + i)] = right[i]
    return left_pos - begin


@njit
def decision_table(n_values, start, n_bins, raw, threshold_bin, default_left, missing_type,
                   default_bin, nan_bin, cat_boundaries, cat_threshold):
    """Which column values of a split go left: ``table[v]`` is :func:`goes_left_bin` of
    :func:`feature_bin_from_bundle` ``(v, ...)``, for every ``v < n_values``.

    Only the values whose decision can differ are decided one by one: a bundled feature's own
    range ``(start, start + n_bins - 1]`` (any other value reads as the default bin); for a raw
    feature, the bins up to the largest of ``nan_bin``, ``default_bin``, ``threshold_bin`` and
    a categorical split's bitset (a larger bin is none of these, above the threshold and
    outside the bitset: right). The others get the decision of one of them.

    Parameters
    ----------
    n_values : int
        Entries of the table: every value of the column's dtype (256 for uint8, 65,536 for
        uint16), so that a column value indexes it without a bounds test.
    start, n_bins, raw, threshold_bin, default_left, missing_type, default_bin, nan_bin,
    cat_boundaries, cat_threshold
        As for :func:`split_segment`.

    Returns
    -------
    table : ndarray of shape (n_values,), dtype bool
    """
    if raw:
        top = max(nan_bin, default_bin, threshold_bin, 0)
        if missing_type == CATEGORICAL_NODE:
            words = cat_boundaries[threshold_bin + 1] - cat_boundaries[threshold_bin]
            top = max(top, 32 * words)
        lo, hi = 0, top + 1  # values decided one by one
        outside = hi
    else:
        lo, hi = start + 1, start + n_bins
        outside = 0  # reads as the default bin
    lo, hi = min(lo, n_values), min(hi, n_values)
    rest = goes_left_bin(feature_bin_from_bundle(outside, start, n_bins, default_bin, raw),
                         threshold_bin, default_left, missing_type, default_bin, nan_bin,
                         cat_boundaries, cat_threshold)
    table = np.empty(n_values, dtype=np.bool_)
    table[:lo] = rest
    table[hi:] = rest
    for v in range(lo, hi):
        b = feature_bin_from_bundle(v, start, n_bins, default_bin, raw)
        table[v] = goes_left_bin(b, threshold_bin, default_left, missing_type, default_bin,
                                 nan_bin, cat_boundaries, cat_threshold)
    return table


@njit
def feature_bin_from_bundle(v, start, n_bins, default_bin, raw):
    """A feature's bin read off its bundle column value ``v`` (inverse of
    :func:`oocgbdt.kernels.bundling.encode_bin`); ``raw``: ``v`` itself (a feature alone in its
    column, or an unbundled one).

    Values outside the feature's range ``(start, start + n_bins - 1]`` belong to another member
    (or to none): the feature is at its default bin there.
    """
    if raw:
        return v
    if v <= start or v > start + n_bins - 1:
        return default_bin
    r = v - start - 1
    if r < default_bin:
        return r
    return r + 1


@njit
def prefetch_pays(column, count):
    """Whether routing ``count`` ascending rows of ``column`` should prefetch rows ahead: only
    for a strided column (a column of row-major bins, one cache line per row) read at under a
    third of its rows. A contiguous column, or one read at most rows, is streamed by the
    hardware prefetcher, and explicit prefetches cost more than they hide (measured on 400k
    rows: contiguous 2.1 ns per row without, 2.8 with; strided, every row 2.6 against 3.3,
    a tenth of the rows 5.0 against 3.6)."""
    return column.strides[0] > 1 and 3 * count < column.shape[0]


#: Rows per block of :func:`column_major_copy`.
COPY_BLOCK_ROWS = 128


@njit
def column_major_copy(X_binned, out_t):
    """Copy row-major bins into a column-major layout: ``out_t[j, i] = X_binned[i, j]``
    (``out_t.T`` is then ``np.asfortranarray(X_binned)``), the copy that routing reads a leaf's
    rows from in process.

    Blocks of :data:`COPY_BLOCK_ROWS` rows are copied column by column, so each block is read
    from cache while every column gets a contiguous run of bytes. Measured on 262,144 x 100
    bins, one thread: uint8 14 ms against 46 ms for ``np.asfortranarray``, uint16 31 against
    65 ms.

    Parameters
    ----------
    X_binned : ndarray of shape (n_rows, n_columns), dtype uint8 or uint16, C-contiguous  # IN
    out_t : ndarray of shape (n_columns, n_rows), same dtype, C-contiguous                 # OUT
    """
    n, m = X_binned.shape
    for i0 in range(0, n, COPY_BLOCK_ROWS):
        i1 = min(i0 + COPY_BLOCK_ROWS, n)
        for j in range(m):
            for i in range(i0, i1):
                out_t[np.uint64(j), np.uint64(i)] = X_binned[np.uint64(i), np.uint64(j)]


def split_rows_naive(column, order, begin, count, threshold_bin, default_left, missing_type,
                     default_bin, nan_bin, cat_boundaries, cat_threshold, out_order):
    """NumPy twin of :func:`split_rows`, used by tests."""
    seg = order[begin:begin + count]
    b = column[seg].astype(np.int64)
    if missing_type == CATEGORICAL_NODE:
        left = np.array([goes_left_bin_naive(x, threshold_bin, False, missing_type, 0, 0,
                                             cat_boundaries, cat_threshold) for x in b], dtype=bool)
        out_order[begin:begin + count] = np.concatenate([seg[left], seg[~left]])
        return int(left.sum())
    left = b <= threshold_bin
    if missing_type == 2:
        left = np.where(b == nan_bin, bool(default_left), left)
    elif missing_type == 1:
        left = np.where(b == default_bin, bool(default_left), left)
    out_order[begin:begin + count] = np.concatenate([seg[left], seg[~left]])
    return int(left.sum())
