"""This module contains the row-routing kernel: split one leaf's rows into its two children.

Data flow position: per chunk, at the start of each boosting pass. Rows are kept grouped by leaf in
an ``order`` array (LightGBM's DataPartition): leaf ``l`` owns ``order[leaf_begin[l]:leaf_begin[l] +
leaf_count[l]]``. Splitting a leaf stably partitions its segment, left rows first.
"""
import numpy as np

from oocgbdt.kernels._jit import PREFETCH_ROWS, njit, prefetch
from oocgbdt.kernels.categorical import in_bitset, in_bitset_naive

__all__ = ["split_rows", "split_rows_naive", "goes_left_bin", "goes_left_bin_naive",
           "route_segment", "CATEGORICAL_NODE"]

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


@njit
def route_segment(order, begin, goes_left, out_order):
    """Stably partition ``order[begin:begin + len(goes_left)]`` into ``out_order`` (same
    positions), rows with ``goes_left`` first; returns the number of left rows.

    ``goes_left`` : ndarray of shape (count,), dtype bool, the decision for each row of the
    segment, in segment order.
    """
    # Branch-free: every row is written to both the next left slot and the next right slot of
    # a buffer, and only the side it goes to advances (a branch on the decision mispredicts on
    # about every other row of a split near the median). Routing in training, 500k x 100, one
    # thread: 38 -> 32-36 ms per tree.
    count = goes_left.shape[0]
    right = np.empty(count, dtype=order.dtype)
    left_pos = begin
    n_right = 0
    for i in range(count):
        r = order[begin + i]
        left = goes_left[i]
        out_order[left_pos] = r
        right[n_right] = r
        left_pos += left
        n_right += 1 - left
    for i in range(n_right):
        out_order[left_pos + i] = right[i]
    return left_pos - begin


@njit
def split_rows(column, order, begin, count, threshold_bin, default_left, missing_type, default_bin,
               nan_bin, cat_boundaries, cat_threshold, out_order):
    """Stably partition ``order[begin:begin+count]`` by the split; returns the number of left rows.

    Each row's bin is read once, prefetched a few rows ahead (a leaf's rows are scattered over
    the chunk, and ``column`` is usually a strided column of the bins).

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
    """
    goes_left = np.empty(count, dtype=np.bool_)
    end = begin + count
    for i in range(begin, end):
        if i + PREFETCH_ROWS < end:
            prefetch(column, order[i + PREFETCH_ROWS])
        goes_left[i - begin] = goes_left_bin(column[order[i]], threshold_bin, default_left,
                                             missing_type, default_bin, nan_bin, cat_boundaries,
                                             cat_threshold)
    return route_segment(order, begin, goes_left, out_order)


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
