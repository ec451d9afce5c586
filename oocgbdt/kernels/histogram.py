"""This module contains the histogram kernels: per-bin sums of gradients and hessians, and the
leaf's row count.

Data flow position: per chunk and per boosting pass, for the rows of one leaf. Histograms use one
flat layout over all columns, an array of shape ``(n_hist_bins, 2)``, float64, whose fields are
(sum_gradients, sum_hessians): column ``j`` owns rows ``[bin_offsets[j], bin_offsets[j + 1])``,
and row 0, before every column (``bin_offsets[0] >= 1``), is the count row: field 0 holds the
number of rows added (field 1 stays 0). The count sums across chunks, and a sibling's histogram
derived as parent minus child carries the sibling's true row count, so every leaf's exact count
travels with its histogram. Per-bin counts are not accumulated: like LightGBM, the split search
estimates them from hessians.

Each cell's two additions are one aligned two-lane vector add
(:func:`~oocgbdt.kernels._jit.add_pair`), with the same results as two scalar additions. Measured
on 500k uint8 bins per row, one thread: a third field per bin (a per-bin count) makes the
kernel 1.2-1.3x slower; the two fields as a pair in a 24-byte cell (a count field kept but
unused) take 0.83 ns per cell on every row of 100 columns and 0.83 on 30 columns; in a 16-byte
cell (this layout, LightGBM's ``hist_t`` pair) 0.74 and 0.67, and 1.12 and 0.71 on a tenth of
the rows.
"""
import numpy as np

from oocgbdt.kernels._jit import (PREFETCH_ROWS, add_pair, bin_bits, load_word, njit, prefetch,
                                  whole_words, word_bin)

__all__ = ["build_histogram", "build_histogram_block", "add_consecutive",
           "build_histogram_naive"]


@njit
def build_histogram(X_binned, bin_offsets, column_indices, gradients, hessians, row_indices, out):
    """Add the rows ``row_indices`` of a binned chunk into ``out``, for the listed columns only,
    and their number into the count row ``out[0, 0]`` (see the module docstring).

    Columns not listed are never read (feature screening builds only the selected ones); their
    rows of ``out`` are left as they are.

    Parameters
    ----------
    X_binned : ndarray of shape (n_rows, n_columns), dtype uint8 or uint16   # IN
    bin_offsets : ndarray of shape (n_columns + 1,), dtype int64, >= 1       # IN
    column_indices : ndarray of shape (n_built,), dtype int64                # IN  columns to build
    gradients, hessians : ndarray of shape (n_rows,), dtype float32          # IN
    row_indices : ndarray of shape (n_selected,), dtype int32, or None       # IN  None: every
        row of ``X_binned`` in order
    out : ndarray of shape (n_hist_bins, 2), dtype float64, C-contiguous     # IN and OUT (added to)
    """
    build_histogram_block(X_binned, bin_offsets, column_indices, gradients, hessians,
                          row_indices, out, True)


@njit
def build_histogram_block(X_binned, bin_offsets, column_indices, gradients, hessians,
                          row_indices, out, count_rows):
    """:func:`build_histogram` for one block of the listed columns, the count row added only
    when ``count_rows``: the histogram of a leaf built as several column blocks (each on its own
    thread, ``count_rows`` True for one of them) holds the same values as one call, since every
    cell's additions happen in the same row order whichever block adds them.

    Parameters are :func:`build_histogram`'s, plus ``count_rows`` (bool); ``row_indices`` None
    adds every row of ``X_binned`` in order. A ``column_indices`` that is a run of consecutive
    columns reads each row as one contiguous slice.
    """
    n_built = column_indices.shape[0]
    # One flat view of ``out`` (bin b's fields at 2b, 2b + 1): the same additions in the same
    # order as indexing out[b, field], about 8% faster measured (250k x 100).
    flat = out.reshape(-1)
    if row_indices is None:
        n_rows = X_binned.shape[0]
    else:
        n_rows = row_indices.shape[0]
    if count_rows:
        flat[0] += n_rows
    if n_built == 0:
        return
    c0 = column_indices[0]
    consecutive = True
    for k in range(n_built):
        if column_indices[k] != c0 + k:
            consecutive = False
    if consecutive:
        # A run of consecutive columns (every column, without screening, or a block of them):
        # read each row as one contiguous slice, without the column indirection (1.3x faster
        # measured on 250k x 100; same summation order).
        add_consecutive(X_binned, bin_offsets, c0, n_built, gradients, hessians, row_indices,
                        flat)
        return
    last = column_indices[n_built - 1]
    for i in range(n_rows):
        if row_indices is None:
            r = i
        else:
            if i + PREFETCH_ROWS < n_rows:
                ahead = row_indices[i + PREFETCH_ROWS]
                prefetch(X_binned, (ahead, c0))
                prefetch(X_binned, (ahead, last))
                prefetch(gradients, ahead)
                prefetch(hessians, ahead)
            r = row_indices[i]
        g = np.float64(gradients[r])
        h = np.float64(hessians[r])
        for k in range(n_built):
            j = column_indices[k]
            add_pair(flat, 2 * (bin_offsets[j] + X_binned[r, j]), g, h)


@njit
def add_consecutive(X_binned, bin_offsets, c0, n_built, gradients, hessians, row_indices, flat,
                    use_words=True):
    """Add the rows ``row_indices`` (None: every row in order) of the consecutive columns
    ``c0 .. c0 + n_built - 1`` into the flat histogram ``flat`` (``out.reshape(-1)`` of
    :func:`build_histogram`; the count row is the caller's), each row's slice read without the
    column indirection.

    Where the row's columns are contiguous in memory and the machine little-endian
    (``use_words``, :func:`~oocgbdt.kernels._jit.whole_words`), a row's bins are read 8
    (uint8) or 4 (uint16) at a time as one word (:func:`~oocgbdt.kernels._jit.load_word`) and
    taken from it by shifts, one load per word instead of one per bin. Every cell gets the same
    additions in the same row order either way, so the sums are bit-identical. Over a row list
    the row's gradient and hessian are prefetched with the row: a small leaf's rows are far
    apart, and each would otherwise miss the cache (``python -m benchmarks.histogram_blocks``,
    200k x 100, one thread, with both changes: 1% of the rows 1.30 -> 1.17 ns per cell, 10%
    1.14 -> 1.06, every row 1.01 -> 0.93; ``docs/decisions/histogram-kernel.md``).

    Parameters
    ----------
    X_binned : ndarray of shape (n_rows, n_columns), dtype uint8 or uint16   # IN
    bin_offsets : ndarray of shape (n_columns + 1,), dtype int64             # IN
    c0, n_built : int                                                        # IN  the columns
    gradients, hessians : ndarray of shape (n_rows,), dtype float32          # IN
    row_indices : ndarray of shape (n_selected,), dtype int32, or None       # IN
    flat : ndarray of shape (2 * n_hist_bins,), dtype float64                # IN and OUT
    use_words : bool                                                         # IN  False: one
        load per bin (tests compare both)
    """
    c1 = c0 + n_built
    n_words = whole_words(X_binned, n_built, use_words)
    tail = n_words * (64 // bin_bits(X_binned))
    # Loops from 0 over views of the block (a loop from c0 measured 1.4x slower per cell).
    offsets = bin_offsets[c0:c1]
    block = X_binned[:, c0:c1]
    # the columns after the last whole word, as views looped from 0 (numba tests an index
    # from a loop that starts elsewhere for being negative)
    tail_offsets = offsets[tail:]
    tail_block = block[:, tail:]
    if row_indices is None:
        # Every row in order (a root): no index to read, nothing to prefetch (0.73 -> 0.59 ns
        # per cell measured on 131k x 25 columns, one thread).
        for r in range(X_binned.shape[0]):
            _add_row(flat, block, offsets, n_words, tail_block, tail_offsets, r,
                     np.float64(gradients[r]), np.float64(hessians[r]))
        return
    n_rows = row_indices.shape[0]
    for i in range(n_rows):
        if i + PREFETCH_ROWS < n_rows:  # inline: about 5% faster than a helper, measured
            ahead = row_indices[i + PREFETCH_ROWS]
            prefetch(X_binned, (ahead, c0))
            prefetch(X_binned, (ahead, c1 - 1))
            prefetch(gradients, ahead)
            prefetch(hessians, ahead)
        # the row's index unsigned: numba then adds no test for a negative one
        r = np.uint64(row_indices[i])
        _add_row(flat, block, offsets, n_words, tail_block, tail_offsets, r,
                 np.float64(gradients[r]), np.float64(hessians[r]))


@njit(inline="always")
def _add_row(flat, block, offsets, n_words, tail_block, tail_offsets, r, g, h):
    # Row r of the block: its first n_words words of bins, then the tail's bins one by one.
    bits = bin_bits(block)  # a constant of the compiled function: the word loop unrolls
    per_word = 64 // bits
    for w in range(n_words):
        word = load_word(block, (r, w * per_word))
        for k in range(per_word):
            add_pair(flat, 2 * (offsets[w * per_word + k] + word_bin(word, k, bits)), g, h)
    row = tail_block[r]
    for j in range(tail_offsets.shape[0]):
        add_pair(flat, 2 * (tail_offsets[j] + row[j]), g, h)


def build_histogram_naive(X_binned, bin_offsets, column_indices, gradients, hessians, row_indices,
                          out):
    """NumPy twin of :func:`build_histogram` (``np.add.at``), used by tests."""
    rows = np.asarray(row_indices)
    cols = np.asarray(column_indices, dtype=np.int64)
    out[0, 0] += rows.size
    if rows.size == 0 or cols.size == 0:
        return
    flat = (X_binned[np.ix_(rows, cols)].astype(np.int64) + bin_offsets[cols][None, :]).ravel()
    n_columns = cols.size
    np.add.at(out[:, 0], flat, np.repeat(gradients[rows].astype(np.float64), n_columns))
    np.add.at(out[:, 1], flat, np.repeat(hessians[rows].astype(np.float64), n_columns))
