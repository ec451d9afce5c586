"""FeatureBundler: the seeds' greedy example, conflict counting modes, caps and layout."""
import numpy as np
import pytest
import scipy.sparse as sp

from oocgbdt.core import bundler as bundler_mod
from oocgbdt.core.bin_mapper import BinMapper
from oocgbdt.core.bundler import (ConflictCounts, FeatureBundler, bundle_chunk, bundling_order,
                                  chunk_conflicts, greedy_bundles, greedy_bundles_row_sets,
                                  merge_conflicts, no_bundle_possible, sample_pattern,
                                  sparse_chunk_conflicts)

# Seed 000's five features with a conflict threshold of 1 (edges F0-F1 = 6, F0-F3 = 1 and
# F1-F2 = 1 are the seed's; the other weights are chosen so that every remaining pairing
# breaks the threshold, as in the seed's pruned graph where F4 has no edge left).
SEED_CONFLICTS = np.array([
    #  F0 F1 F2 F3 F4
    [0, 6, 3, 1, 2],   # F0
    [6, 0, 1, 4, 2],   # F1
    [3, 1, 0, 5, 3],   # F2
    [1, 4, 5, 0, 2],   # F3
    [2, 2, 3, 2, 0],   # F4
])
SEED_NNZ = np.array([50, 40, 30, 20, 10])


def test_seed_greedy_example():
    """Features by decreasing non-zero count, each into the first bundle within the budget."""
    order = bundling_order(SEED_NNZ, (SEED_CONFLICTS > 0).sum(axis=1))
    assert order.tolist() == [0, 1, 2, 3, 4]
    n_bins = np.full(5, 2)
    bundles, capped = greedy_bundles(order, SEED_CONFLICTS, 1, n_bins, 256, nnz=SEED_NNZ)
    assert [sorted(b) for b in bundles] == [[0, 3], [1, 2], [4]] and not capped
    # the same with sparse counts and with the row-set method on rows realizing the table
    bundles_sp, _ = greedy_bundles(order, sp.csr_matrix(SEED_CONFLICTS), 1, n_bins, 256, nnz=SEED_NNZ)
    assert bundles_sp == bundles
    with pytest.raises(AssertionError):  # budget 0: F3 cannot join F0
        assert greedy_bundles(order, SEED_CONFLICTS, 0, n_bins, 256, nnz=SEED_NNZ)[0] == bundles


def test_seed_bundles_through_fit_and_offsets():
    counts = ConflictCounts(n_rows=100, nnz=SEED_NNZ, pairs=SEED_CONFLICTS + np.diag(SEED_NNZ))
    b = FeatureBundler(max_conflict_rate=0.01).fit(counts, np.array([4, 3, 3, 5, 2]),
                                                   np.zeros(5, np.int32), np.zeros(5, bool))
    assert b.max_conflicts_ == 1
    assert [x.tolist() for x in b.bundles_] == [[0, 3], [1, 2], [4]]
    # binRanges of {F0 (bins 0..3), F3 (bins 0..4)}: [0, 3, 7]
    assert b.feature_start_[[0, 3]].tolist() == [0, 3]
    assert b.bundle_n_bins_.tolist() == [8, 5, 2]
    assert b.feature_raw_.tolist() == [False, False, False, False, True]
    assert b.sample_conflicts_ == 2
    assert FeatureBundler.from_dict(b.to_dict()).to_dict() == b.to_dict()


def _binned_sample(rng, n, F, density):
    X = np.where(rng.random((n, F)) < density, rng.integers(1, 4, size=(n, F)), 0).astype(np.float32)
    return X


@pytest.mark.parametrize("density", [0.02, 0.5])
def test_conflict_counts_agree_across_methods_and_chunkings(density):
    rng = np.random.default_rng(0)
    X = _binned_sample(rng, 600, 12, density)
    bm = BinMapper(min_data_in_bin=1).fit(X, 600)
    whole = chunk_conflicts(sample_pattern(X, None, bm))
    pattern = (bm.transform(X) != bm.default_bins_).astype(np.int64)
    np.testing.assert_array_equal(whole.nnz, pattern.sum(axis=0))
    ref = pattern.T @ pattern
    got = whole.pairs.toarray() if sp.issparse(whole.pairs) else whole.pairs
    np.testing.assert_array_equal(got, ref)
    # the dense and the sparse product, on pieces merged in a tree, give the same counts
    parts = [chunk_conflicts(sample_pattern(X[i:i + 150], None, bm)) for i in range(0, 600, 150)]
    parts.append(chunk_conflicts(sp.csr_matrix(pattern[:0].astype(bool))))
    merged = merge_conflicts([merge_conflicts(parts[:2]), merge_conflicts(parts[2:])])
    m = merged.pairs.toarray() if sp.issparse(merged.pairs) else merged.pairs
    np.testing.assert_array_equal(m, ref)
    assert merged.n_rows == 600
    dense_part = chunk_conflicts(pattern.astype(bool)[:300])      # forced dense path
    sparse_part = chunk_conflicts(sp.csr_matrix(pattern[300:].astype(bool)))
    mixed = merge_conflicts([dense_part, sparse_part])
    m2 = mixed.pairs.toarray() if sp.issparse(mixed.pairs) else mixed.pairs
    np.testing.assert_array_equal(m2, ref)
    # sparse input gives the same pattern as dense input
    p_sparse = sample_pattern(sp.csr_matrix(X), np.arange(0, 600, 3), bm)
    np.testing.assert_array_equal(p_sparse.toarray(), pattern[::3].astype(bool))


def test_row_set_mode_gives_the_same_bundles():
    """Wide data: conflicts counted against bundles' row sets give the pairwise result (rate 0)."""
    rng = np.random.default_rng(1)
    n, groups = 2000, [5, 8, 3, 6]
    cols = []
    for g in groups:  # one-hot groups: exclusive inside, conflicting across
        level = rng.integers(-1, g, size=n)
        cols += [(level == k).astype(np.float32) for k in range(g)]
    X = np.stack(cols, axis=1)
    bm = BinMapper().fit(X, n)
    p = sample_pattern(X, None, bm)
    pairwise = FeatureBundler().fit(chunk_conflicts(p), bm.n_bins_, bm.default_bins_, bm.is_trivial_)
    halves = [chunk_conflicts(sample_pattern(X[:900], None, bm), "rows", 0),
              chunk_conflicts(sample_pattern(X[900:], None, bm), "rows", 900)]
    rows = FeatureBundler().fit(merge_conflicts(halves), bm.n_bins_, bm.default_bins_, bm.is_trivial_)
    expect = np.split(np.arange(sum(groups)), np.cumsum(groups)[:-1])
    assert [b.tolist() for b in pairwise.bundles_] == [e.tolist() for e in expect]
    assert [b.tolist() for b in rows.bundles_] == [e.tolist() for e in expect]


def test_dense_features_open_bundles_but_never_join():
    # F0 (60%) and F1 (55%) are both dense: F1 never joins F0's bundle even with budget;
    # F2 (10%, exclusive with F0) joins F0's bundle.
    nnz = np.array([60, 55, 10])
    pairs = np.array([[60, 20, 0], [20, 55, 5], [0, 5, 10]])
    b = FeatureBundler(max_conflict_rate=0.3).fit(ConflictCounts(100, nnz, pairs),
                                                  np.full(3, 2), np.zeros(3), np.zeros(3, bool))
    assert [x.tolist() for x in b.bundles_] == [[0, 2], [1]]
    # trivial features get no column
    b = FeatureBundler().fit(ConflictCounts(100, nnz, pairs), np.full(3, 2), np.zeros(3),
                             np.array([False, True, False]))
    assert [x.tolist() for x in b.bundles_] == [[0, 2]] and b.feature_bundle_[1] == -1


def test_bin_cap_and_wide_columns(monkeypatch):
    """300 exclusive 2-bin features: uint8 columns hold 255 features each (2 columns); uint16
    columns are used only when they cut the number of columns by WIDE_COLUMN_COST."""
    F = 300
    counts = ConflictCounts(10_000, np.full(F, 10), sp.csr_matrix(np.diag(np.full(F, 10, np.int64))))
    b = FeatureBundler().fit(counts, np.full(F, 2), np.zeros(F), np.zeros(F, bool))
    assert bundler_mod.WIDE_COLUMN_COST == 2.0  # 1 wide column <= 2 narrow ones / 2
    assert b.layout_ == "uint16" and len(b.bundles_) == 1 and b.dtype_ == np.uint16
    assert b.bundle_n_bins_.tolist() == [301]
    monkeypatch.setattr(bundler_mod, "WIDE_COLUMN_COST", 3.0)
    b = FeatureBundler().fit(counts, np.full(F, 2), np.zeros(F), np.zeros(F, bool))
    assert b.layout_ == "uint8" and [len(x) for x in b.bundles_] == [255, 45]
    assert b.dtype_ == np.uint8 and b.bundle_n_bins_.tolist() == [256, 46]


def test_bundle_chunk_dense_and_sparse_agree():
    rng = np.random.default_rng(2)
    n, groups = 500, [4, 3, 5]
    cols = []
    for g in groups:
        level = rng.integers(-1, g, size=n)
        cols += [np.where(level == k, rng.uniform(0.5, 2, size=n), 0.0) for k in range(g)]
    X = np.stack(cols, axis=1).astype(np.float32)
    bm = BinMapper(min_data_in_bin=1, min_data_in_leaf=1).fit(X, n)
    b = FeatureBundler().fit(chunk_conflicts(sample_pattern(X, None, bm)), bm.n_bins_,
                             bm.default_bins_, bm.is_trivial_)
    assert len(b.bundles_) == 3
    dense_cols, r1, l1 = bundle_chunk(X, bm, b)
    sparse_cols, r2, l2 = bundle_chunk(sp.csr_matrix(X), bm, b)
    np.testing.assert_array_equal(dense_cols, sparse_cols)
    assert (r1, l1) == (r2, l2) == (0, 0)
    # without a bundler, sparse chunks give exactly the dense binned chunk
    np.testing.assert_array_equal(bundle_chunk(sp.csc_matrix(X), bm)[0], bm.transform(X))


def test_sparse_counting_with_dense_columns_is_exact():
    """The pair enumeration flips columns present in more than half of the rows and maps the
    counts back; the result equals the plain product, on every counting path."""
    rng = np.random.default_rng(4)
    n, F = 2000, 80
    P = rng.random((n, F)) < 0.01
    P[:, [3, 40]] = rng.random((n, 2)) < 0.9          # two dense columns
    P[:, 7] = rng.random(n) < 0.6
    ref = P.astype(np.int64).T @ P.astype(np.int64)
    got = chunk_conflicts(sp.csr_matrix(P))           # sparse: numba pairs, complemented
    np.testing.assert_array_equal(got.pairs, ref)
    np.testing.assert_array_equal(got.nnz, P.sum(axis=0))
    monkey = bundler_mod.DENSE_PAIRS_BYTES
    try:
        bundler_mod.DENSE_PAIRS_BYTES = 0              # force scipy's sparse product
        np.testing.assert_array_equal(chunk_conflicts(sp.csr_matrix(P)).pairs.toarray(), ref)
    finally:
        bundler_mod.DENSE_PAIRS_BYTES = monkey


def test_expand_index_points_at_each_feature_bin():
    from oocgbdt.kernels.bundling import encode_bin
    rng = np.random.default_rng(5)
    F = 40
    nb = rng.integers(1, 9, F)
    d = np.array([rng.integers(0, x) for x in nb])
    perm = rng.permutation(F)
    bundles = [perm[:5], perm[5:6], perm[6:20], perm[20:21], perm[21:35]]  # 5 features: no column
    b = FeatureBundler.from_bundles(bundles, nb, d)
    off = np.concatenate([[0], np.cumsum(nb)])
    ref = np.full(off[-1], -1)
    for f in range(F):
        c = b.feature_bundle_[f]
        for k in range(nb[f] if c >= 0 else 0):
            if b.feature_raw_[f]:
                ref[off[f] + k] = b.bundle_offsets_[c] + k
            elif k != d[f]:
                ref[off[f] + k] = b.bundle_offsets_[c] + encode_bin(k, int(b.feature_start_[f]), int(d[f]), False)
    np.testing.assert_array_equal(b.expand_index(off), ref)


# ---------------------------------------------------------------------------------------------
# no_bundle_possible: the non-default counts alone prove that every bundle is a single feature
# ---------------------------------------------------------------------------------------------


def _random_pattern(rng, k, F):
    """Boolean sample patterns with shares of non-default rows drawn around the thresholds that
    matter (1/2, 1 - rate, the budget), complements of each other, and empty/full columns."""
    shares = rng.choice([0.0, 0.01, 0.05, 0.3, 0.45, 0.5, 0.51, 0.55, 0.9, 0.95, 0.99, 1.0], F)
    P = rng.random((k, F)) < shares
    for f in range(1, F):
        if rng.random() < 0.2:  # exact complement of another column: never conflicts with it
            P[:, f] = ~P[:, int(rng.integers(0, f))]
        elif rng.random() < 0.1:  # exactly half of the rows
            P[:, f] = np.arange(k) < k // 2
    return P


def _all_equal(a, b):
    assert a.to_dict() == b.to_dict()
    for name in ("feature_bundle_", "feature_start_", "feature_raw_", "bundle_n_bins_",
                 "bundle_offsets_", "bundle_fill_", "n_bins_", "default_bins_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.dtype_ == b.dtype_ and a.n_bundles == b.n_bundles


def test_no_bundle_possible_is_sound_against_the_greedy_bundling():
    """Whenever the bound says no bundle is possible, FeatureBundler.fit on the real pairwise
    counts (and on row sets) bundles nothing, and fit_unbundled gives the identical bundler;
    over random patterns where the bound fires in some cases and real bundles form in others."""
    fired = bundled = 0
    for seed in range(150):
        rng = np.random.default_rng(seed)
        k, F = int(rng.integers(1, 120)), int(rng.integers(1, 9))
        P = _random_pattern(rng, k, F)
        n_bins = rng.choice([2, 3, 40, 255, 256, 300], F)
        default_bins = rng.integers(0, 2, F)
        for rate in (0.0, 0.01, 0.1, 0.4, 0.6, 0.95):
            trivial = rng.random(F) < 0.15
            for mode in ("counts", "rows"):
                counts = chunk_conflicts(P, mode)
                full = FeatureBundler(rate).fit(counts, n_bins, default_bins, trivial)
                if no_bundle_possible(counts.nnz, k, rate, trivial):
                    fired += 1
                    assert all(len(b) == 1 for b in full.bundles_), (seed, rate, mode)
                    _all_equal(full, FeatureBundler(rate).fit_unbundled(
                        k, n_bins, default_bins, trivial, pair_counts=mode == "counts"))
                else:
                    bundled += any(len(b) > 1 for b in full.bundles_)
    assert fired > 100 and bundled > 100, (fired, bundled)


def test_no_bundle_possible_cases_by_hand():
    k = 100
    no_trivial = np.zeros(3, dtype=bool)
    # dense features (> K/2 non-default rows at rate 0) open their own bundles
    assert no_bundle_possible([51, 100, 60], k, 0.0, no_trivial)
    # two features with exactly half of the rows may be complements: they can share a bundle
    assert not no_bundle_possible([50, 50, 100], k, 0.0, no_trivial)
    # a sparse feature next to a full one conflicts on all its rows (> budget 0): blocked
    assert no_bundle_possible([3, 100, 100], k, 0.0, no_trivial)
    # ... unless the budget allows it: 3 conflicts <= floor(0.05 * 100), but 3 > 3 // 2 rows
    assert no_bundle_possible([3, 100, 100], k, 0.05, no_trivial)
    assert not no_bundle_possible([3, 97, 100], k, 0.05, no_trivial)  # 0 forced conflicts
    # trivial features are never bundled; one non-trivial feature: nothing to bundle
    assert no_bundle_possible([0, 0, 7], k, 0.0, np.array([True, True, False]))
    assert not no_bundle_possible([0, 0, 7], k, 0.0, no_trivial)
    # unknown or impossible counts: no proof
    assert not no_bundle_possible([-1, 100, 100], k, 0.0, no_trivial)
    assert not no_bundle_possible([101, 100, 100], k, 0.0, no_trivial)
    # with a high conflict rate a feature is dense above 1 - rate of the rows; below it, a
    # forced overlap of 15 + 90 - 100 = 5 rows is within half of its own 15 rows
    assert no_bundle_possible([25, 90, 95], k, 0.8, no_trivial)
    assert not no_bundle_possible([15, 90, 95], k, 0.8, no_trivial)
    assert no_bundle_possible([15, 97, 95], k, 0.8, no_trivial)  # 15 + 95 - 100 = 10 > 7


def test_fit_unbundled_layouts():
    """All trivial: one column for the leaf totals; a feature over 256 bins: uint16 layout."""
    n_bins, default_bins = np.array([5, 3, 300]), np.array([0, 1, 0])
    for trivial in ([True, True, True], [False, True, False], [False, False, True]):
        trivial = np.array(trivial)
        for mode in ("counts", "rows"):
            counts = chunk_conflicts(np.ones((10, 3), dtype=bool), mode)
            full = FeatureBundler(0.0).fit(counts, n_bins, default_bins, trivial)
            _all_equal(full, FeatureBundler(0.0).fit_unbundled(10, n_bins, default_bins, trivial,
                                                               pair_counts=mode == "counts"))
    with pytest.raises(ValueError, match="max_conflict_rate"):
        FeatureBundler(1.5).fit_unbundled(10, n_bins, default_bins, np.zeros(3, dtype=bool))


@pytest.mark.parametrize("bundles,copy", [([[0], [1], [2], [3]], True),
                                          ([[0, 3], [1], [2]], False)])
def test_best_split_skips_the_expand_only_where_it_is_a_copy(monkeypatch, bundles, copy):
    """Singleton bundles in feature order (dense data) have the per-feature layout: the split
    search reads the bundle histogram as is; the result equals the one through the expand
    kernel (forced), bit for bit. Any other layout still expands."""
    from oocgbdt.core.split import FeatureMeta, LeafTotals, SplitParams, best_split
    from oocgbdt.kernels.histogram import build_histogram
    rng = np.random.default_rng(8)
    n = 3000
    X = rng.normal(size=(n, 4)).astype(np.float32)
    X[:, 3] = np.where(rng.random(n) < 0.1, X[:, 3], 0)
    X[:, 0] = np.where(X[:, 3] == 0, X[:, 0], 0)
    bm = BinMapper(max_bin=15).fit(X, n)
    b = FeatureBundler.from_bundles(bundles, bm.n_bins_, bm.default_bins_)
    meta = FeatureMeta.from_bin_mapper(bm, b)
    assert meta.expand_is_copy is copy
    Xb = bundle_chunk(X, bm, b)[0]
    g = rng.normal(size=n).astype(np.float32)
    h = (0.5 + rng.random(n)).astype(np.float32)
    hist = np.zeros((meta.n_hist_bins, 2))
    build_histogram(Xb, meta.hist_offsets, meta.hist_columns, g, h,
                    np.arange(n, dtype=np.int32), hist)
    totals = LeafTotals(float(g.astype(np.float64).sum()), float(h.astype(np.float64).sum()), n)
    params = SplitParams(min_data_in_leaf=20)
    got, got_gains = best_split(hist, totals, meta, params)
    monkeypatch.setattr(FeatureMeta, "expand_is_copy", False)
    ref, ref_gains = best_split(hist, totals, meta, params)
    assert (got.feature, got.threshold_bin, got.gain, got.default_left, got.left) == \
        (ref.feature, ref.threshold_bin, ref.gain, ref.default_left, ref.left)
    np.testing.assert_array_equal(got_gains, ref_gains)


@pytest.mark.parametrize("params", [{}, dict(zero_as_missing=True), dict(max_bin=3),
                                    dict(use_missing=False)])
def test_sparse_chunk_conflicts_equal_the_pattern_path(monkeypatch, params):
    """The fused sparse conflict count equals chunk_conflicts of sample_pattern: the same
    non-default counts and pairwise counts (dense or sparse alike), on all rows and on a row
    sample, with columns complemented, and over several uint16 row blocks."""
    rng = np.random.default_rng(3)
    n, F = 700, 30
    X = np.where(rng.random((n, F)) < np.linspace(0.01, 0.8, F)[None, :],
                 rng.choice([1.0, 2.0, -3.0, 0.5, np.nan, 1e-36], size=(n, F)), 0.0)
    X[:, 5] = rng.normal(size=n)  # dense continuous: complemented
    X[:, 7] = np.where(rng.random(n) < 0.1, 0.0, rng.normal(size=n))
    csr = sp.csr_matrix(X.astype(np.float32))
    bm = BinMapper(**params).fit(csr, n)
    local = np.sort(rng.choice(n, 300, replace=False))
    for rows in (None, local):
        ref = chunk_conflicts(sample_pattern(csr, rows, bm))
        for block in (bundler_mod._PAIR_BLOCK_ROWS, 64):
            monkeypatch.setattr(bundler_mod, "_PAIR_BLOCK_ROWS", block)
            got = sparse_chunk_conflicts(csr, rows, bm)
            assert got.n_rows == ref.n_rows
            np.testing.assert_array_equal(got.nnz, ref.nnz)
            assert sp.issparse(got.pairs) == sp.issparse(ref.pairs)
            dense = lambda p: p.toarray() if sp.issparse(p) else np.asarray(p)
            np.testing.assert_array_equal(dense(got.pairs), dense(ref.pairs))
        assert (ref.nnz * 2 > ref.n_rows).any()  # the complement is exercised


def test_sample_pattern_leaves_its_input_unchanged():
    X = sp.csr_matrix(np.where(np.random.default_rng(0).random((50, 6)) < 0.5, 1.0, 0.0)
                      .astype(np.float32))
    X.data[::3] = 0.0  # stored zeros: at the default bin, dropped from the pattern
    before = (X.indptr.copy(), X.indices.copy(), X.data.copy())
    bm = BinMapper(min_data_in_bin=1, min_data_in_leaf=1).fit(X, 50)
    sample_pattern(X, None, bm)
    for a, b in zip(before, (X.indptr, X.indices, X.data)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("seed", range(4))
def test_greedy_bundles_kernel_equals_the_numpy_version(seed):
    """Dense counts go through the numba kernel; it places every feature where the NumPy
    version does (bundles, order within them, the cap flag), whatever the budget, cap and
    dense features."""
    rng = np.random.default_rng(seed)
    F = 60
    P = rng.random((400, F)) < rng.uniform(0.005, 0.3, F)[None, :]
    pairs = (P.T.astype(np.int32) @ P.astype(np.int32))
    nnz = np.diagonal(pairs).astype(np.int64)
    n_bins = rng.integers(2, 40, F)
    dense = rng.random(F) < 0.1
    order = bundling_order(nnz, (pairs > 0).sum(axis=1))[rng.random(F) < 0.9]
    seen_cap = False
    for budget in (0, 3, 40):
        for cap in (30, 256):
            got = greedy_bundles(order, pairs, budget, n_bins, cap, dense, nnz)
            ref = bundler_mod.greedy_bundles_naive(order, pairs, budget, n_bins, cap, dense, nnz)
            assert got == ref
            seen_cap |= ref[1]
    assert seen_cap
