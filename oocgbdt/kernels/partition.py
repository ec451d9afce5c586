"""This module contains the row-routing kernel: split one leaf's rows into its two children.

Data flow position: per chunk, at the start of each boosting pass. Rows are kept grouped by leaf in
an ``order`` array (LightGBM's DataPartition): leaf ``l`` owns ``order[leaf_begin[l]:leaf_begin[l] +
leaf_count[l]]``. Splitting a leaf stably partitions its segment, left rows first.
"""
import numpy as np

from oocgbdt.kernels._jit import njit

__all__ = ["split_rows", "split_rows_naive", "goes_left_bin"]


@njit
def goes_left_bin(b, threshold_bin, default_left, missing_type, default_bin, nan_bin):
    """Decision on a bin: missing rows go to the default side, others left iff ``b <= threshold_bin``."""
    if missing_type == 2 and b == nan_bin:
        return default_left
    if missing_type == 1 and b == default_bin:
        return default_left
    return b <= threshold_bin


@njit
def split_rows(column, order, begin, count, threshold_bin, default_left, missing_type, default_bin,
               nan_bin, out_order):
    """Stably partition ``order[begin:begin+count]`` by the split; returns the number of left rows.

    Parameters
    ----------
    column : ndarray of shape (n_rows,), dtype uint8 or uint16      # IN  binned values of the split feature
    order : ndarray of shape (n_rows,), dtype int32                 # IN  rows grouped by leaf
    begin, count : int                                              # IN  the leaf's segment of ``order``
    threshold_bin : int; default_left : bool; missing_type : int (0 None, 1 Zero, 2 NaN)
    default_bin : int (the bin of 0.0); nan_bin : int (the NaN bin, ``n_bins - 1``)
    out_order : ndarray of shape (n_rows,), dtype int32              # OUT  only the segment is written
    """
    n_left = 0
    for i in range(begin, begin + count):
        r = order[i]
        if goes_left_bin(column[r], threshold_bin, default_left, missing_type, default_bin, nan_bin):
            n_left += 1
    left_pos = begin
    right_pos = begin + n_left
    for i in range(begin, begin + count):
        r = order[i]
        if goes_left_bin(column[r], threshold_bin, default_left, missing_type, default_bin, nan_bin):
            out_order[left_pos] = r
            left_pos += 1
        else:
            out_order[right_pos] = r
            right_pos += 1
    return n_left


def split_rows_naive(column, order, begin, count, threshold_bin, default_left, missing_type,
                     default_bin, nan_bin, out_order):
    """NumPy twin of :func:`split_rows`, used by tests."""
    seg = order[begin:begin + count]
    b = column[seg].astype(np.int64)
    left = b <= threshold_bin
    if missing_type == 2:
        left = np.where(b == nan_bin, bool(default_left), left)
    elif missing_type == 1:
        left = np.where(b == default_bin, bool(default_left), left)
    out_order[begin:begin + count] = np.concatenate([seg[left], seg[~left]])
    return int(left.sum())
