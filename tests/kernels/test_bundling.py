"""EFB kernels against their naive twins, and the seeds' worked offset example."""
import numpy as np
import pytest
import scipy.sparse as sp

from oocgbdt.kernels.binning import map_to_bins
from oocgbdt.kernels.bundling import (
    bin_sparse_entries, bin_sparse_entries_naive, bundle_columns, bundle_columns_naive,
    bundle_sparse_rows, bundle_sparse_rows_naive, complement_columns, complement_columns_naive,
    count_pairs, count_pairs_masked, count_pairs_masked_naive, count_pairs_naive,
    decode_feature_column, sparse_nondefault, sparse_nondefault_naive,
    decode_feature_column_naive, encode_bin, expand_histogram, expand_histogram_naive,
    feature_bin_from_bundle, nondefault_counts, nondefault_csr, nondefault_csr_naive,
    predict_binned_bundled, predict_binned_bundled_naive, split_rows_bundled,
    split_rows_bundled_naive)
from oocgbdt.kernels.histogram import build_histogram
from oocgbdt.kernels.routing import split_rows
from oocgbdt.kernels.predict import predict_binned

#: the bitset arguments of numerical nodes (never read)
NC = (np.zeros(1, np.int64), np.zeros(0, np.uint32))


def _layout(bundles, n_bins, default_bins):
    """feature_bundle, feature_start, feature_raw, fill, column bins for given bundles."""
    F = len(n_bins)
    col = np.full(F, -1, np.int64)
    start = np.zeros(F, np.int64)
    raw = np.zeros(F, bool)
    fill, nb_col = [], []
    for c, members in enumerate(bundles):
        col[members] = c
        if len(members) == 1:
            raw[members[0]] = True
            fill.append(default_bins[members[0]])
            nb_col.append(n_bins[members[0]])
        else:
            s = 0
            for f in members:
                start[f] = s
                s += n_bins[f] - 1
            fill.append(0)
            nb_col.append(1 + s)
    return col, start, raw, np.asarray(fill, np.int64), np.asarray(nb_col, np.int64)


def test_seed_offset_example_and_conflicting_row():
    """Seed 000: F0 (bins 0..3) and F3 (bins 0..4) give binRanges [0, 3, 7]; a non-zero F0 bin
    b lands on b, a non-zero F3 bin b on b + 3; the conflicting row keeps F3 (the last)."""
    n_bins = np.array([4, 5], np.int32)
    default = np.array([0, 0], np.int32)
    col, start, raw, fill, nb_col = _layout([[0, 1]], n_bins, default)
    assert start.tolist() == [0, 3] and nb_col.tolist() == [8]  # binRanges [0, 3, 7], bins 0..7
    X = np.array([[1, 0], [3, 0], [0, 1], [0, 4], [0, 0], [2, 0], [0, 3], [0, 2], [1, 4]], np.uint8)
    out = np.empty((len(X), 1), np.uint8)
    rows, lost = bundle_columns(X, col, start, raw, default, fill, out)
    assert out[:, 0].tolist() == [1, 3, 4, 7, 0, 2, 6, 5, 7]   # row 8: F0's 1 is overwritten by 4+3
    assert (rows, lost) == (1, 1)
    # prediction-time decoding: F0 = 3 -> bundle 3 -> F0 bin 3; F3 = 3 -> bundle 6 -> F3 bin 3
    assert feature_bin_from_bundle(3, 0, 4, 0, False) == 3 and feature_bin_from_bundle(3, 3, 5, 0, False) == 0
    assert feature_bin_from_bundle(6, 3, 5, 0, False) == 3 and feature_bin_from_bundle(6, 0, 4, 0, False) == 0
    # the conflicting row reads as F0 at its default bin, F3 = 4
    assert feature_bin_from_bundle(7, 0, 4, 0, False) == 0 and feature_bin_from_bundle(7, 3, 5, 0, False) == 4


def _random_binned(rng, n, n_bins, default_bins, density):
    X = np.empty((n, len(n_bins)), np.uint8)
    for f, (nb, d) in enumerate(zip(n_bins, default_bins)):
        v = rng.integers(0, nb, size=n)
        X[:, f] = np.where(rng.random(n) < density, v, d)
    return X


@pytest.mark.parametrize("density", [0.05, 0.4])
def test_bundle_columns_matches_naive_and_decodes(density):
    rng = np.random.default_rng(1)
    n_bins = np.array([2, 5, 3, 7, 2, 4, 9], np.int32)
    default = np.array([0, 2, 0, 3, 1, 0, 0], np.int32)
    bundles = [[0, 2, 5], [1], [3, 4], [6]]
    col, start, raw, fill, _ = _layout(bundles, n_bins, default)
    X = _random_binned(rng, 300, n_bins, default, density)
    out, ref = np.empty((300, 4), np.uint8), np.empty((300, 4), np.uint8)
    got = bundle_columns(X, col, start, raw, default, fill, out)
    want = bundle_columns_naive(X, col, start, raw, default, fill, ref)
    np.testing.assert_array_equal(out, ref)
    assert tuple(got) == tuple(want)
    # decoding gives each feature's bin except where a higher-index member won a conflict
    for f in range(len(n_bins)):
        dec = np.empty(300, np.uint8)
        decode_feature_column(out[:, col[f]], start[f], n_bins[f], default[f], raw[f], dec)
        ref_dec = np.empty(300, np.uint8)
        decode_feature_column_naive(out[:, col[f]], start[f], n_bins[f], default[f], raw[f], ref_dec)
        np.testing.assert_array_equal(dec, ref_dec)
        later = [g for g in bundles[col[f]] if g > f]
        overwritten = np.zeros(300, bool)
        for g in later:
            overwritten |= X[:, g] != default[g]
        ok = ~overwritten | (X[:, f] == default[f])
        np.testing.assert_array_equal(dec[ok], X[ok, f])
        assert (dec[~ok] == default[f]).all()
    # lost values: every non-default member value below the highest non-default member of a row
    lost = 0
    for members in bundles:
        if len(members) > 1:
            nd = (X[:, members] != default[members]).sum(axis=1)
            lost += np.maximum(nd - 1, 0).sum()
    assert got[1] == lost


def test_encode_decode_roundtrip():
    for nb in (2, 3, 9):
        for d in range(nb):
            for b in range(nb):
                if b == d:
                    continue
                v = encode_bin(b, 5, d, False)
                assert 6 <= v <= 5 + nb - 1
                assert feature_bin_from_bundle(v, 5, nb, d, False) == b
            assert feature_bin_from_bundle(0, 5, nb, d, False) == d
            assert feature_bin_from_bundle(5 + nb, 5, nb, d, False) == d


def _bounds(rng, n_features):
    """Random BinMapper-like bounds (some NaN-type features), for raw-value kernels."""
    n_bins, missing, bounds = [], [], []
    for f in range(n_features):
        k = int(rng.integers(1, 5))
        up = sorted(rng.uniform(-2, 2, size=k).tolist())
        if f % 3 == 0:
            bounds.append(up + [np.inf, np.nan])
            missing.append(2)
        else:
            bounds.append(up + [np.inf])
            missing.append(0)
        n_bins.append(len(bounds[-1]))
    flat = np.concatenate([np.asarray(b, float) for b in bounds])
    offsets = np.concatenate([[0], np.cumsum(n_bins)]).astype(np.int64)
    return flat, offsets, np.asarray(n_bins, np.int32), np.asarray(missing, np.uint8)


def test_sparse_rows_match_dense_binning_and_bundling():
    """Binning and merging CSR rows (unsorted indices, explicit zeros, NaN) equals binning the
    dense rows with map_to_bins and merging them with bundle_columns."""
    rng = np.random.default_rng(2)
    F, n = 9, 400
    flat, offsets, n_bins, missing = _bounds(rng, F)
    dense = np.where(rng.random((n, F)) < 0.2, rng.uniform(-3, 3, size=(n, F)), 0.0).astype(np.float32)
    dense[rng.random((n, F)) < 0.02] = np.nan
    binned = np.empty((n, F), np.uint8)
    map_to_bins(dense, flat, offsets, n_bins, missing, binned)
    default = np.empty((1, F), np.uint8)
    map_to_bins(np.zeros((1, F), np.float32), flat, offsets, n_bins, missing, default)
    default = default[0].astype(np.int32)
    csr = sp.csr_matrix(np.nan_to_num(dense, nan=7.0))
    csr.data[csr.data == 7.0] = np.nan
    csr.data[::11] = 0.0          # explicit zeros are zeros
    csr_dense_equiv = csr.toarray()
    binned2 = np.empty((n, F), np.uint8)
    map_to_bins(csr_dense_equiv.astype(np.float32), flat, offsets, n_bins, missing, binned2)
    # shuffle the indices within each row: conflicts must not depend on their order
    for i in range(n):
        lo, hi = csr.indptr[i], csr.indptr[i + 1]
        p = rng.permutation(hi - lo)
        csr.indices[lo:hi] = csr.indices[lo:hi][p]
        csr.data[lo:hi] = csr.data[lo:hi][p]
    for bundles in ([[0, 4, 5], [1, 2], [3], [6, 7, 8]], [[f] for f in range(F)]):
        col, start, raw, fill, _ = _layout(bundles, n_bins, default)
        out = np.empty((n, len(bundles)), np.uint8)
        ref = np.empty_like(out)
        naive = np.empty_like(out)
        got = bundle_sparse_rows(csr.indptr, csr.indices, csr.data, flat, offsets, n_bins, missing,
                                 col, start, raw, default, fill, out)
        want = bundle_columns(binned2, col, start, raw, default, fill, ref)
        nv = bundle_sparse_rows_naive(csr.indptr, csr.indices, csr.data, flat, offsets, n_bins,
                                      missing, col, start, raw, default, fill, naive)
        np.testing.assert_array_equal(out, ref)
        np.testing.assert_array_equal(out, naive)
        assert tuple(got) == tuple(want) == tuple(nv)
    # identity layout (no bundling) reproduces the dense binned chunk
    np.testing.assert_array_equal(out, binned2)
    entries = np.empty(csr.nnz, np.int64)
    ref_entries = np.empty(csr.nnz, np.int64)
    bin_sparse_entries(csr.indices, csr.data, flat, offsets, n_bins, missing, entries)
    bin_sparse_entries_naive(csr.indices, csr.data, flat, offsets, n_bins, missing, ref_entries)
    np.testing.assert_array_equal(entries, ref_entries)


def test_nondefault_csr_matches_naive():
    rng = np.random.default_rng(3)
    n_bins = np.array([3, 2, 6, 4], np.int32)
    default = np.array([0, 1, 2, 0], np.int32)
    X = _random_binned(rng, 200, n_bins, default, 0.3)
    counts = np.empty(200, np.int64)
    nondefault_counts(X, default, counts)
    np.testing.assert_array_equal(counts, (X != default).sum(axis=1))
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    ind, ref = np.empty(indptr[-1], np.int32), np.empty(indptr[-1], np.int32)
    nondefault_csr(X, default, indptr, ind)
    nondefault_csr_naive(X, default, indptr, ref)
    np.testing.assert_array_equal(ind, ref)


def _conflict_free_bundled(rng, n, n_bins, default, bundles):
    """Binned rows where each bundle has at most one non-default member per row."""
    X = np.array([[d] * n for d in default], dtype=np.uint8).T.copy()
    for members in bundles:
        who = rng.integers(-1, len(members), size=n)
        for k, f in enumerate(members):
            rows = who == k
            X[rows, f] = rng.integers(0, n_bins[f], size=rows.sum())
    col, start, raw, fill, nb_col = _layout(bundles, n_bins, default)
    out = np.empty((n, len(bundles)), np.uint8)
    assert bundle_columns(X, col, start, raw, default, fill, out) == (0, 0)
    return X, out, col, start, raw, nb_col


def test_split_rows_and_predict_on_bundles_match_unbundled():
    rng = np.random.default_rng(4)
    n_bins = np.array([3, 4, 2, 5, 6], np.int32)
    default = np.array([0, 1, 0, 0, 2], np.int32)
    missing = np.array([0, 1, 2, 0, 0], np.uint8)
    bundles = [[0, 1, 3], [2], [4]]
    X, Xc, col, start, raw, _ = _conflict_free_bundled(rng, 500, n_bins, default, bundles)
    order = rng.permutation(500).astype(np.int32)
    for f in range(5):
        for t in range(n_bins[f] - 1):
            for dl, skewed in ((False, False), (True, False), (False, True), (True, True)):
                a, b, c = order.copy(), order.copy(), order.copy()
                n1 = split_rows(X[:, f], order, 50, 300, t, dl, missing[f], default[f], n_bins[f] - 1,
                                *NC, a, skewed)
                n2 = split_rows_bundled(Xc[:, col[f]], order, 50, 300, t, dl, missing[f], default[f],
                                        n_bins[f] - 1, *NC, start[f], n_bins[f], raw[f], b,
                                        not skewed)
                n3 = split_rows_bundled_naive(Xc[:, col[f]], order, 50, 300, t, dl, missing[f],
                                              default[f], n_bins[f] - 1, *NC, start[f], n_bins[f],
                                              raw[f], c)
                assert n1 == n2 == n3
                np.testing.assert_array_equal(a, b)
                np.testing.assert_array_equal(a, c)
    # a random tree walked on bins and on bundles
    sf = np.array([3, 0, 4, 1], np.int32)
    tb = np.array([1, 0, 2, 1], np.int32)
    dlf = np.array([True, False, True, False])
    lc = np.array([1, ~0, 3, ~2], np.int32)
    rc = np.array([2, ~1, ~3, ~4], np.int32)
    leaf = rng.normal(size=5)
    ref, got, naive = np.zeros(500), np.zeros(500), np.zeros(500)
    predict_binned(X, sf, tb, dlf, missing[sf], default[sf], n_bins[sf] - 1, lc, rc, leaf, *NC, ref)
    args = (col[sf], start[sf], n_bins[sf].astype(np.int64), raw[sf], tb, dlf, missing[sf],
            default[sf], n_bins[sf] - 1, lc, rc, leaf, *NC)
    predict_binned_bundled(Xc, *args, got)
    predict_binned_bundled_naive(Xc, *args, naive)
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(naive, ref)


def test_expand_histogram_recovers_per_feature_histogram():
    rng = np.random.default_rng(5)
    n_bins = np.array([3, 4, 2, 5, 6], np.int32)
    default = np.array([0, 1, 0, 0, 2], np.int32)
    bundles = [[0, 1, 3], [2], [4]]
    X, Xc, col, start, raw, nb_col = _conflict_free_bundled(rng, 400, n_bins, default, bundles)
    g = rng.normal(size=400).astype(np.float32)
    h = rng.uniform(0.5, 1, size=400).astype(np.float32)
    rows = np.sort(rng.choice(400, 250, replace=False)).astype(np.int32)
    # row 0 of both layouts: the count row
    f_off = np.concatenate([[1], 1 + np.cumsum(n_bins)]).astype(np.int64)
    c_off = np.concatenate([[1], 1 + np.cumsum(nb_col)]).astype(np.int64)
    direct = np.zeros((f_off[-1], 2))
    build_histogram(X, f_off, np.arange(5, dtype=np.int64), g, h, rows, direct)
    bundle_hist = np.zeros((c_off[-1], 2))
    build_histogram(Xc, c_off, np.arange(3, dtype=np.int64), g, h, rows, bundle_hist)
    index = np.full(f_off[-1], -1, np.int64)
    for f in range(5):
        for b in range(n_bins[f]):
            if raw[f]:
                index[f_off[f] + b] = c_off[col[f]] + b
            elif b != default[f]:
                index[f_off[f] + b] = c_off[col[f]] + encode_bin(b, start[f], default[f], False)
    tot = direct[f_off[0]:f_off[1]].sum(axis=0)
    mask = np.array([True, True, True, False, True])
    out = np.zeros_like(direct)
    ref = np.zeros_like(direct)
    expand_histogram(bundle_hist, index, f_off, n_bins, default, raw, mask, *tot, out)
    expand_histogram_naive(bundle_hist, index, f_off, n_bins, default, raw, mask, *tot, ref)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-9)
    for f in range(5):
        sl = slice(f_off[f], f_off[f + 1])
        if not mask[f]:
            assert not out[sl].any()
            continue
        np.testing.assert_allclose(out[sl], direct[sl], rtol=1e-9, atol=1e-9)
        stored = index[sl] >= 0
        np.testing.assert_array_equal(out[sl][stored], direct[sl][stored])  # exact copies
    assert not out[0].any()  # the kernel writes features' rows only (FeatureMeta.expand copies
    # the count row)


def test_count_pairs_and_complement_columns_match_naive():
    rng = np.random.default_rng(6)
    n, F = 300, 25
    P = rng.random((n, F)) < np.linspace(0.02, 0.9, F)[None, :]
    csr = sp.csr_matrix(P.astype(np.int32))
    for dtype in (np.uint16, np.int32):
        out, ref = np.zeros((F, F), dtype), np.zeros((F, F), dtype)
        count_pairs(csr.indptr, csr.indices, out)
        count_pairs_naive(csr.indptr, csr.indices, ref)
        np.testing.assert_array_equal(out, ref)
        np.testing.assert_array_equal(out, np.triu(P.T.astype(int) @ P.astype(int)))
    comp = P.mean(axis=0) > 0.5
    ptr, ref_ptr = np.empty(n + 1, np.int64), np.empty(n + 1, np.int64)
    total = complement_columns(csr.indptr.astype(np.int64), csr.indices, comp, ptr, np.zeros(0, np.int32))
    ind, ref_ind = np.empty(total, np.int32), np.empty(total, np.int32)
    complement_columns(csr.indptr.astype(np.int64), csr.indices, comp, ptr, ind)
    assert complement_columns_naive(csr.indptr, csr.indices, comp, ref_ptr, ref_ind) == total
    np.testing.assert_array_equal(ptr, ref_ptr)
    np.testing.assert_array_equal(ind, ref_ind)


def test_sparse_nondefault_and_masked_pairs_match_naive():
    """Default-bin test of stored entries (NaN, +-inf, values on the interval's ends) and the
    masked, complemented pair counts against their NumPy twins, over row ranges."""
    rng = np.random.default_rng(8)
    n, F = 400, 12
    lo = np.concatenate([[-np.inf, 0.5, -1.0], rng.normal(size=F - 3)])
    hi = lo + rng.exponential(size=F)
    first = rng.random(F) < 0.3
    last = rng.random(F) < 0.3
    nan_off = rng.random(F) < 0.5
    X = np.where(rng.random((n, F)) < 0.4, rng.normal(size=(n, F)), 0.0)
    X[rng.random((n, F)) < 0.05] = np.nan
    X[:, 1] = np.where(rng.random(n) < 0.5, 0.5, X[:, 1])  # on lo: outside (lo, hi]
    X[:5, 2] = [-np.inf, np.inf, -1.0, hi[2], np.nextafter(hi[2], np.inf)]
    csr = sp.csr_matrix(X.astype(np.float32))
    mask, ref_mask = np.empty(csr.nnz, bool), np.empty(csr.nnz, bool)
    nnz, ref_nnz = np.zeros(F, np.int64), np.zeros(F, np.int64)
    sparse_nondefault(csr.indptr, csr.indices, csr.data, lo, hi, first, last, nan_off, mask, nnz)
    sparse_nondefault_naive(csr.indptr, csr.indices, csr.data, lo, hi, first, last, nan_off,
                            ref_mask, ref_nnz)
    np.testing.assert_array_equal(mask, ref_mask)
    np.testing.assert_array_equal(nnz, ref_nnz)
    assert 0 < mask.sum() < csr.nnz
    comp = nnz * 2 > n // 3
    assert comp.any() and not comp.all()
    for r0, r1 in [(0, n), (37, 201)]:
        out = np.zeros((F, F), np.uint16)
        ref = np.zeros((F, F), np.int64)
        count_pairs_masked(csr.indptr.astype(np.int64), csr.indices, mask, comp, r0, r1, out)
        count_pairs_masked_naive(csr.indptr, csr.indices, mask, comp, r0, r1, ref)
        np.testing.assert_array_equal(out, ref)


def test_guided_sparse_binning_equals_the_plain_search():
    """Guide tables only change where the search starts: on values around every bound, +-inf,
    NaN, +-0 and far outside the bounds, guided bins equal value_to_bin's for features with
    and without a guide (few bins, NaN bin, infinite or equal first and last bounds)."""
    from oocgbdt.kernels.binning import value_to_bin
    from oocgbdt.kernels.bundling import (bundle_sparse_rows_guided, guided_value_to_bin,
                                          value_guides)
    rng = np.random.default_rng(9)
    layouts = [
        (np.concatenate([np.sort(rng.normal(size=40)), [np.inf]]), 0),
        (np.concatenate([np.sort(rng.exponential(size=60) ** 3), [np.inf, np.nan]]), 2),
        (np.concatenate([np.sort(rng.normal(size=25)) * 1e30, [np.inf]]), 1),
        (np.array([-1e-35, 1e-35, 0.5, np.inf]), 0),                    # few bins: no guide
        (np.concatenate([[-1e300], np.linspace(-1, 1, 30), [np.inf]]), 0),  # very uneven
    ]
    bounds = np.concatenate([b for b, _ in layouts])
    n_bins = np.array([len(b) for b, _ in layouts], dtype=np.int32)
    offsets = np.concatenate([[0], np.cumsum(n_bins)]).astype(np.int64)
    missing = np.array([m for _, m in layouts], dtype=np.uint8)
    table, t_off, t_size, lo, scale = value_guides(bounds, offsets, n_bins, missing)
    assert t_size[0] > 0 and t_size[3] == 0
    for f, (b, _) in enumerate(layouts):
        finite = b[np.isfinite(b)]
        xs = np.concatenate([finite, np.nextafter(finite, np.inf), np.nextafter(finite, -np.inf),
                             rng.uniform(finite.min(), finite.max(), 300),
                             [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e308, -1e308]])
        for x in xs:
            want = value_to_bin(float(x), bounds, offsets[f], n_bins[f], missing[f])
            got = guided_value_to_bin(float(x), bounds, offsets[f], n_bins[f], missing[f], table,
                                      t_off[f], t_size[f], lo[f], scale[f])
            assert got == want, (f, x)
    # the row kernel: identity layout gives the same binned rows as the unguided kernel
    F = len(layouts)
    X = np.where(rng.random((200, F)) < 0.7, rng.normal(size=(200, F)) * 2, 0.0)
    X[rng.random((200, F)) < 0.05] = np.nan
    csr = sp.csr_matrix(X.astype(np.float32))
    args = (csr.indptr, csr.indices, csr.data, bounds, offsets, n_bins, missing,
            np.arange(F, dtype=np.int64), np.zeros(F, np.int64), np.ones(F, bool),
            np.zeros(F, np.int32), np.zeros(F, np.int64))
    out, ref = np.empty((200, F), np.uint8), np.empty((200, F), np.uint8)
    bundle_sparse_rows_guided(*args, table, t_off, t_size, lo, scale, out)
    bundle_sparse_rows(*args, ref)
    np.testing.assert_array_equal(out, ref)
    # and bundled, against the naive twin (dense binning, then the merge): features 0, 3 and 4
    # in one column (conflicts resolved to the higher index), implicit zeros at default bins
    default = np.zeros((1, F), np.uint8)
    map_to_bins(np.zeros((1, F), np.float32), bounds, offsets, n_bins, missing, default)
    default = default[0].astype(np.int32)
    col, start, raw, fill, _ = _layout([[0, 3, 4], [1], [2]], n_bins, default)
    args = args[:7] + (col, start, raw, default, fill)
    out, naive = np.empty((200, 3), np.uint16), np.empty((200, 3), np.uint16)
    got = bundle_sparse_rows_guided(*args, table, t_off, t_size, lo, scale, out)
    want = bundle_sparse_rows_naive(*args, naive)
    np.testing.assert_array_equal(out, naive)
    assert tuple(got) == tuple(want) and got[0] > 0
