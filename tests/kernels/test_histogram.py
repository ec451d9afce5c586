"""Histogram and row-routing kernels against their NumPy twins."""
import numpy as np
import pytest

from oocgbdt.kernels.bundling import split_rows_bundled
from oocgbdt.kernels.histogram import (add_consecutive, build_histogram, build_histogram_block,
                                       build_histogram_naive)
from oocgbdt.kernels.routing import (COPY_BLOCK_ROWS, column_major_copy, decision_table,
                                     goes_left_bin_naive, prefetch_pays, split_rows,
                                     split_rows_naive)


@pytest.mark.parametrize("dtype,n_bins", [(np.uint8, 256), (np.uint16, 1000)])
def test_build_histogram_matches_naive(dtype, n_bins):
    rng = np.random.default_rng(0)
    n, F = 500, 7
    nb = rng.integers(2, n_bins, size=F)
    offsets = np.concatenate([[1], 1 + np.cumsum(nb)]).astype(np.int64)  # row 0: the count
    X = np.stack([rng.integers(0, b, size=n) for b in nb], axis=1).astype(dtype)
    g = rng.normal(size=n).astype(np.float32)
    h = rng.uniform(0.1, 1, size=n).astype(np.float32)
    rows = np.sort(rng.choice(n, 300, replace=False)).astype(np.int32)
    out = np.zeros((offsets[-1], 2))
    ref = np.zeros_like(out)
    cols = np.arange(F, dtype=np.int64)
    build_histogram(X, offsets, cols, g, h, rows, out)
    build_histogram_naive(X, offsets, cols, g, h, rows, ref)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-9)
    # The every-column fast path and the general path (the same columns listed out of order)
    # add each bin's rows in the same order: bit-identical.
    general = np.zeros_like(out)
    build_histogram(X, offsets, rng.permutation(F).astype(np.int64), g, h, rows, general)
    np.testing.assert_array_equal(out, general)
    # every feature's slice sums to the selected rows' totals (numpy oracle); the row count
    # is the count row's field 0 (no per-bin counts)
    for f in range(F):
        s = out[offsets[f]:offsets[f + 1]].sum(axis=0)
        np.testing.assert_allclose(s, [g[rows].astype(float).sum(), h[rows].astype(float).sum()],
                                   rtol=1e-10)
    assert out[0, 0] == len(rows) and out[0, 1] == 0


@pytest.mark.parametrize("consecutive", [True, False])
def test_every_row_without_a_row_list_matches_naive(consecutive):
    """``row_indices=None`` adds every row in order: the naive twin on all rows, and the same
    bits as the kernel given the full row list (on a column block or listed columns)."""
    rng = np.random.default_rng(11)
    n, F = 400, 6
    nb = rng.integers(2, 40, size=F)
    offsets = np.concatenate([[1], 1 + np.cumsum(nb)]).astype(np.int64)
    X = np.stack([rng.integers(0, b, size=n) for b in nb], axis=1).astype(np.uint8)
    g = rng.normal(size=n).astype(np.float32)
    h = rng.uniform(0.1, 1, size=n).astype(np.float32)
    cols = np.arange(1, 5, dtype=np.int64) if consecutive else np.array([4, 0, 2], np.int64)
    everything = np.arange(n, dtype=np.int32)
    out, listed, ref = (np.zeros((offsets[-1], 2)) for _ in range(3))
    build_histogram_block(X, offsets, cols, g, h, None, out, True)
    build_histogram_block(X, offsets, cols, g, h, everything, listed, True)
    build_histogram_naive(X, offsets, cols, g, h, everything, ref)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(out, listed)
    assert out[0, 0] == n


def test_build_histogram_adds_rows_in_order_into_a_stacked_slot():
    """Each bin's sum is the float64 sum of its rows' values in row order (a plain Python
    oracle, compared bit for bit), also when ``out`` is one slot of a stacked array."""
    rng = np.random.default_rng(3)
    n, F = 300, 4
    offsets = np.array([1, 6, 10, 17, 21], dtype=np.int64)
    X = np.stack([rng.integers(0, offsets[f + 1] - offsets[f], size=n) for f in range(F)],
                 axis=1).astype(np.uint8)
    g = (rng.normal(size=n) * 10.0 ** rng.integers(-6, 6, size=n)).astype(np.float32)
    h = rng.uniform(0.1, 1, size=n).astype(np.float32)
    rows = np.sort(rng.choice(n, 200, replace=False)).astype(np.int32)
    stacked = np.zeros((3, offsets[-1], 2))
    build_histogram(X, offsets, np.arange(F, dtype=np.int64), g, h, rows, stacked[1])
    expect = [[0.0, 0.0] for _ in range(offsets[-1])]
    for r in rows:
        for f in range(F):
            b = offsets[f] + X[r, f]
            expect[b][0] += float(g[r])
            expect[b][1] += float(h[r])
    expect[0][0] = float(len(rows))  # the leaf's row count, in the count row
    np.testing.assert_array_equal(stacked[1], np.array(expect))
    assert not stacked[0].any() and not stacked[2].any()


def test_build_histogram_only_touches_listed_columns():
    rng = np.random.default_rng(5)
    X = rng.integers(0, 4, size=(50, 5)).astype(np.uint8)
    offsets = np.arange(1, 25, 4, dtype=np.int64)
    g = rng.normal(size=50).astype(np.float32)
    h = np.ones(50, np.float32)
    rows = np.arange(50, dtype=np.int32)
    cols = np.array([1, 3], dtype=np.int64)
    out = np.full((21, 2), 7.0)  # sentinel: unlisted columns keep it
    ref = np.full((21, 2), 7.0)
    build_histogram(X, offsets, cols, g, h, rows, out)
    build_histogram_naive(X, offsets, cols, g, h, rows, ref)
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    # unlisted columns keep the sentinel; the row count is added to the count row
    np.testing.assert_array_equal(out[0], [7.0 + 50, 7.0])
    for j in (0, 2, 4):
        assert (out[offsets[j]:offsets[j + 1]] == 7.0).all()
    np.testing.assert_allclose(out[5:9, 0], 7.0 + np.bincount(X[:, 1], g, minlength=4))
    np.testing.assert_allclose(out[5:9, 1], 7.0 + np.bincount(X[:, 1], minlength=4))


def test_build_histogram_accepts_readonly_and_empty():
    X = np.zeros((4, 2), dtype=np.uint8)
    X.setflags(write=False)
    g = np.ones(4, np.float32)
    out = np.zeros((5, 2))
    offsets = np.array([1, 3, 5], dtype=np.int64)
    cols = np.arange(2, dtype=np.int64)
    build_histogram(X, offsets, cols, g, g, np.zeros(0, np.int32), out)
    assert not out.any()
    build_histogram(X, offsets, cols, g, g, np.arange(4, dtype=np.int32), out)
    np.testing.assert_array_equal(out[:, 0], [4, 4, 0, 4, 0])  # count row, then bin 0s


@pytest.mark.parametrize("missing_type", [0, 1, 2])
@pytest.mark.parametrize("default_left", [False, True])
@pytest.mark.parametrize("layout, count, in_place", [
    ("contiguous", 200, False),
    ("contiguous", 200, True),   # the training path routes in place
    ("strided", 200, True),      # a column of row-major bins read at most rows
    ("strided", 60, False),      # ... at few rows: prefetched (prefetch_pays)
])
@pytest.mark.parametrize("skewed", [False, True])
def test_split_rows_matches_naive(missing_type, default_left, layout, count, in_place, skewed):
    rng = np.random.default_rng(missing_type * 2 + default_left)
    n, nb = 300, 12
    bins = rng.integers(0, nb, size=(n, 3)).astype(np.uint8)
    col = np.ascontiguousarray(bins[:, 1]) if layout == "contiguous" else bins[:, 1]
    assert prefetch_pays(col, count) == (layout == "strided" and count == 60)
    order = rng.permutation(n).astype(np.int32)
    begin = 40
    given = order.copy()
    out = order if in_place else order.copy()
    ref = given.copy()
    k = split_rows(col, order, begin, count, 5, default_left, missing_type, 3, nb - 1,
                   np.zeros(1, np.int64), np.zeros(0, np.uint32), out, skewed)
    k_ref = split_rows_naive(col, given, begin, count, 5, default_left, missing_type, 3, nb - 1,
                             np.zeros(1, np.int64), np.zeros(0, np.uint32), ref)
    assert k == k_ref
    np.testing.assert_array_equal(out, ref)
    # rows outside the segment untouched; the segment is a permutation of itself
    np.testing.assert_array_equal(out[:begin], given[:begin])
    np.testing.assert_array_equal(out[begin + count:], given[begin + count:])
    assert sorted(out[begin:begin + count]) == sorted(given[begin:begin + count])


@pytest.mark.parametrize("missing_type", [0, 1, 2])
@pytest.mark.parametrize("skewed", [False, True])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_split_rows_through_a_row_map_matches_naive_on_the_gathered_column(missing_type, skewed,
                                                                           dtype):
    """A compact subset routed from the whole partition's column: row ``r`` of ``order`` reads
    ``column[rowmap[r]]``; the NumPy twin reads the subset's own column ``column[rowmap]``."""
    rng = np.random.default_rng(10 + missing_type * 2 + skewed)
    n, nb = 1000, 12
    column = rng.integers(0, nb, size=n).astype(dtype)
    rowmap = np.sort(rng.choice(n, size=300, replace=False)).astype(np.int32)
    subset_column = column[rowmap]
    order = rng.permutation(rowmap.shape[0]).astype(np.int32)
    begin, count = 20, 250
    out, ref = order.copy(), order.copy()
    args = (5, True, missing_type, 3, nb - 1, np.zeros(1, np.int64), np.zeros(0, np.uint32))
    k = split_rows(column, order, begin, count, *args, out, skewed, rowmap)
    k_ref = split_rows_naive(subset_column, order, begin, count, *args, ref)
    assert k == k_ref
    np.testing.assert_array_equal(out, ref)
    # the bundled kernel routes a raw (unbundled) column the same way
    out_b = order.copy()
    assert split_rows_bundled(column, order, begin, count, *args, 0, nb, True, out_b, skewed,
                              rowmap) == k_ref
    np.testing.assert_array_equal(out_b, ref)


def _bin_of_value(v, start, n_bins, default_bin, raw):
    # a feature's bin read off a column value, written out from the bundle layout
    if raw:
        return v
    if start < v <= start + n_bins - 1:
        r = v - start - 1
        return r if r < default_bin else r + 1
    return default_bin


@pytest.mark.parametrize("raw", [True, False])
@pytest.mark.parametrize("missing_type", [0, 1, 2, 3])
def test_decision_table_is_the_decision_of_every_value(raw, missing_type):
    """``decision_table``: entry ``v`` is the split's decision on the bin that value reads as,
    for every uint8 value, and every uint16 value up to 300 past the feature's range and a few
    larger ones."""
    from oocgbdt.kernels.categorical import construct_bitset
    rng = np.random.default_rng(missing_type + 10 * raw)
    for _ in range(20):
        n_bins = int(rng.integers(2, 40))
        start = 0 if raw else int(rng.integers(0, 200))
        default_bin = int(rng.integers(0, n_bins))
        nan_bin = n_bins - 1
        if missing_type == 3:
            cats = sorted(set(rng.integers(1, n_bins, size=3).tolist()))
            bits = construct_bitset(cats)
            bounds = np.array([0, bits.shape[0]], dtype=np.int64)
            threshold = 0
        else:
            bits, bounds = np.zeros(0, np.uint32), np.zeros(1, np.int64)
            threshold = int(rng.integers(0, n_bins - 1))
        dl = bool(rng.integers(0, 2))
        for n_values, values in ((256, range(256)),
                                 (2 ** 16, list(range(start + n_bins + 300))
                                  + [1000, 4095, 2 ** 16 - 1])):
            table = decision_table(n_values, start, n_bins, raw, threshold, dl, missing_type,
                                   default_bin, nan_bin, bounds, bits)
            assert table.shape == (n_values,)
            for v in values:
                want = goes_left_bin_naive(_bin_of_value(v, start, n_bins, default_bin, raw),
                                           threshold, dl, missing_type, default_bin, nan_bin,
                                           bounds, bits)
                assert table[v] == want, (v, start, n_bins, default_bin)


def test_add_pair_is_two_scalar_additions_bit_for_bit():
    """``add_pair`` (one two-lane vector add) against plain Python float additions: the same
    bits in the two target cells, every other cell untouched, at every offset of a flat view of
    a (n, 3) array (so pairs start at both 16-byte-aligned and unaligned addresses)."""
    import numba

    from oocgbdt.kernels._jit import add_pair

    @numba.njit
    def apply(flat, index, first, second):
        for k in range(index.shape[0]):
            add_pair(flat, index[k], first[k], second[k])

    rng = np.random.default_rng(5)
    base = rng.normal(size=(40, 3)) * 10.0 ** rng.integers(-8, 8, size=(40, 3))
    index = rng.integers(0, base.size - 1, size=500)
    first = rng.normal(size=500) * 10.0 ** rng.integers(-8, 8, size=500)
    second = rng.normal(size=500)
    out = base.copy()
    apply(out.reshape(-1), index, first, second)
    expect = [float(v) for v in base.reshape(-1)]
    for i, a, b in zip(index, first, second):
        expect[i] += float(a)
        expect[i + 1] += float(b)
    np.testing.assert_array_equal(out.reshape(-1), np.array(expect))
    untouched = np.ones(base.size, dtype=bool)
    untouched[index] = untouched[index + 1] = False
    np.testing.assert_array_equal(out.reshape(-1)[untouched], base.reshape(-1)[untouched])


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("layout", ["C", "column slice", "F"])
@pytest.mark.parametrize("listed", [False, True])
def test_bins_read_by_words_give_the_row_by_row_sums(dtype, layout, listed):
    """``add_consecutive`` reading a row's bins a word at a time (uint8: 8 per word, uint16: 4),
    on blocks of every width around the word's (a tail of single bins, none, a block ending at
    the row's last column), against plain Python float additions in row order, bit for bit,
    and against its own bin-by-bin reads. A Fortran-ordered X (columns not contiguous in a
    row) is read bin by bin."""
    rng = np.random.default_rng([np.dtype(dtype).itemsize, len(layout), listed])
    n, F = 120, 21
    nb = rng.integers(2, 300 if dtype == np.uint16 else 256, size=F)
    offsets = np.concatenate([[1], 1 + np.cumsum(nb)]).astype(np.int64)
    X = np.stack([rng.integers(0, b, size=n) for b in nb], axis=1).astype(dtype)
    if layout == "column slice":  # rows wider than the bins given: a view with a row stride
        X = np.concatenate([X, rng.integers(0, 2, size=(n, 5)).astype(dtype)], axis=1)[:, :F]
    elif layout == "F":
        X = np.asfortranarray(X)
    g = (rng.normal(size=n) * 10.0 ** rng.integers(-6, 6, size=n)).astype(np.float32)
    h = rng.uniform(0.1, 1, size=n).astype(np.float32)
    rows = np.sort(rng.choice(n, 70, replace=False)).astype(np.int32) if listed else None
    start = rng.normal(size=(offsets[-1], 2))  # the kernel adds to what is there
    for c0, width in [(0, F), (0, 8), (3, 4), (5, 3), (1, 17), (13, 8), (9, 12), (20, 1)]:
        words, single = start.copy(), start.copy()
        add_consecutive(X, offsets, c0, width, g, h, rows, words.reshape(-1))
        add_consecutive(X, offsets, c0, width, g, h, rows, single.reshape(-1), False)
        expect = [[float(a), float(b)] for a, b in start]
        for r in (range(n) if rows is None else rows):
            for j in range(c0, c0 + width):
                cell = offsets[j] + X[r, j]
                expect[cell][0] += float(g[r])
                expect[cell][1] += float(h[r])
        np.testing.assert_array_equal(words, np.array(expect), err_msg=f"{c0}, {width}")
        np.testing.assert_array_equal(single, words)


@pytest.mark.parametrize("consecutive", [True, False])
def test_column_blocks_add_up_to_one_histogram(consecutive):
    """A histogram built as column blocks (the count row added by one of them) equals one
    build_histogram call bit for bit, and the naive twin within float64 rounding."""
    from oocgbdt.kernels.histogram import build_histogram_block
    rng = np.random.default_rng(3)
    n, F = 700, 9
    nb = rng.integers(2, 256, size=F)
    offsets = np.concatenate([[1], 1 + np.cumsum(nb)]).astype(np.int64)
    X = np.stack([rng.integers(0, b, size=n) for b in nb], axis=1).astype(np.uint8)
    g = rng.normal(size=n).astype(np.float32)
    h = rng.uniform(0.1, 1, size=n).astype(np.float32)
    rows = np.sort(rng.choice(n, 400, replace=False)).astype(np.int32)
    cols = np.arange(F, dtype=np.int64) if consecutive else np.array([0, 2, 3, 5, 8], np.int64)
    whole = np.zeros((offsets[-1], 2))
    build_histogram(X, offsets, cols, g, h, rows, whole)
    blocks = np.zeros_like(whole)
    for k, part in enumerate(np.array_split(cols, 3)):
        build_histogram_block(X, offsets, part, g, h, rows, blocks, k == 1)
    np.testing.assert_array_equal(blocks, whole)
    assert blocks[0, 0] == len(rows)
    ref = np.zeros_like(whole)
    build_histogram_naive(X, offsets, cols, g, h, rows, ref)
    np.testing.assert_allclose(blocks, ref, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("n_rows", [0, 1, COPY_BLOCK_ROWS - 1, COPY_BLOCK_ROWS, 3 * COPY_BLOCK_ROWS + 5])
def test_column_major_copy_is_numpys_fortran_copy(dtype, n_rows):
    """Every row count around the copy's block size (a partial last block, none, one row):
    the same array as ``np.asfortranarray``."""
    X = np.random.default_rng(n_rows).integers(0, np.iinfo(dtype).max, (n_rows, 7)).astype(dtype)
    out_t = np.full((7, n_rows), 3, dtype=dtype)
    column_major_copy(X, out_t)
    np.testing.assert_array_equal(out_t.T, np.asfortranarray(X))
    assert out_t.T.flags.f_contiguous
