"""This module contains Exclusive Feature Bundling: conflict counts and :class:`FeatureBundler`.

Data flow position: after binning, once per training run. Each row chunk counts, on its rows of
the bin sample, which features are off their default bin (the bin of 0.0) and how often two
features are both off it (:func:`chunk_conflicts`); the Dask layer adds the chunk counts in a
fan-in tree (:func:`merge_conflicts`); :meth:`FeatureBundler.fit` then groups features greedily
and lays out each bundle's column. Merging chunks into bundle columns, decoding a feature back
from its column and expanding bundle histograms are kernels (:mod:`oocgbdt.kernels.bundling`).

Algorithm (Ke et al. 2017, Algorithms 3 and 4; ``reference/lightgbm-algorithms.md`` section 2):

* **Conflicts.** ``conflicts[f, g]`` = sampled rows where features ``f`` and ``g`` are both off
  their default bin; ``nnz[f]`` = sampled rows where ``f`` is. Counted with a dense product of
  the 0/1 pattern (BLAS) when the pattern is dense, a sparse product when it is sparse. When a
  dense ``F x F`` count matrix would not fit in ``DENSE_COUNTS_BYTES`` (256 MB), the sampled
  rows of each feature are kept instead and conflicts are counted against each bundle's row
  set, as LightGBM does.
* **Greedy bundling.** Features are taken by decreasing ``nnz`` (ties: larger conflict-graph
  degree first, then lower index) and each goes into the first bundle (in creation order) whose
  accumulated conflicts plus the feature's conflicts with its members stay within
  ``floor(max_conflict_rate * n_sampled_rows)``, and whose bins stay within the column cap,
  else it opens a new bundle. As in LightGBM (``dataset.cpp``), a feature never joins a bundle
  it conflicts with on more than half of its own non-default rows. A dense feature (off its default bin in more than
  ``min(1/2, 1 - max_conflict_rate)`` of the sampled rows) never joins an existing bundle: it
  opens its own, which sparser features may still join when the budget allows (the dominant
  level of a one-hot attribute hosts the other levels, which never conflict with it).
* **No bundle possible.** Two features off their default bin on ``a`` and ``b`` of ``K``
  sampled rows are both off it on at least ``a + b - K`` rows, so the non-default counts alone
  can prove that no feature joins another's bundle (:func:`no_bundle_possible`; every dense
  column of continuous data): the bundles are then all single features
  (:meth:`FeatureBundler.fit_unbundled`) and the pairwise counts need not be computed.
* **Column cap.** A bundle's column holds ``1 + sum(n_bins - 1)`` bins, capped at 256 (uint8
  columns). uint16 bundles (up to 65536 bins) are used only when they cut the number of columns
  by at least ``WIDE_COLUMN_COST`` (see :meth:`FeatureBundler.fit` and docs/architecture.md).
* **Layout.** Members are stored in increasing feature index. A feature alone in its bundle
  keeps its own bins ("raw"); in a bundle of several, feature ``f`` owns bundle bins
  ``start_f + 1 .. start_f + n_bins_f - 1`` (its non-default bins in order) and bundle bin 0
  means every member is at its default bin. ``start`` is the seeds' ``binRanges``.

Trivial features (``BinMapper.is_trivial_``) are never split on, so they get no column.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from oocgbdt._dtypes import MISSING_NAN, X_BINNED_DTYPE, X_BINNED_DTYPE_WIDE
from oocgbdt.kernels.bundling import (bin_sparse_entries, bundle_columns,
                                       bundle_sparse_rows_guided, complement_columns, count_pairs,
                                       count_pairs_masked, encode_bin, greedy_bundle_of,
                                       nondefault_counts, nondefault_csr, sparse_nondefault)

__all__ = [
    "ConflictCounts", "FeatureBundler", "chunk_conflicts", "sparse_chunk_conflicts",
    "merge_conflicts", "conflict_mode",
    "greedy_bundles", "greedy_bundles_naive", "greedy_bundles_row_sets", "bundling_order",
    "no_bundle_possible",
    "sample_pattern", "bundle_chunk", "DENSE_COUNTS_BYTES", "WIDE_COLUMN_COST",
]

#: Largest dense F x F conflict-count matrix (int32) kept in memory; wider data counts conflicts
#: against per-bundle row sets instead.
DENSE_COUNTS_BYTES = 256 << 20
#: Sparse patterns are counted into a dense per-chunk F x F int32 matrix by a numba kernel up to
#: this size (F <= 4096), and by a scipy sparse product above it.
DENSE_PAIRS_BYTES = 64 << 20
#: uint16 bundles are used only when ``WIDE_COLUMN_COST * n_wide_columns <= n_uint8_columns``.
#: Measured (benchmarks/bundling.py, docs/architecture.md): building histograms costs up to
#: 1.8x more per uint16 column-row than per uint8 column-row (wider loads, larger histograms),
#: so wide bundles pay only when they at least halve the number of columns.
WIDE_COLUMN_COST = 2.0
#: Caps of a bundle column's bins.
MAX_BINS_NARROW = 256
MAX_BINS_WIDE = 65536
_DICT_FORMAT = "oocgbdt.FeatureBundler"
_DICT_VERSION = 1


# ---------------------------------------------------------------------------------------------
# Conflict counts (per chunk, merged in a fan-in tree)
# ---------------------------------------------------------------------------------------------


@dataclass
class ConflictCounts:
    """Non-default counts of a set of sampled rows.

    Attributes
    ----------
    n_rows : int
        Sampled rows counted.
    nnz : ndarray of shape (n_features,), dtype int64
        Rows where each feature is off its default bin.
    pairs : ndarray of shape (n_features, n_features), int32, or scipy.sparse.csr_matrix, or None
        Rows where two features are both off their default bin (the diagonal is ``nnz``).
        None in row-set mode.
    rows : tuple of (ndarray int32, ndarray int32), or None
        Row-set mode only: (sample row, feature) of every non-default cell, rows numbered from
        0 within the sample: 8 bytes per cell, as LightGBM keeps its sample's non-zero rows per
        feature (at most twice the float32 bin sample, which the client holds anyway).
    """

    n_rows: int
    nnz: np.ndarray
    pairs: object = None
    rows: tuple | None = None


def conflict_mode(n_features: int) -> str:
    """``"counts"`` when a dense int32 F x F matrix fits in ``DENSE_COUNTS_BYTES``, else ``"rows"``."""
    return "counts" if n_features * n_features * 4 <= DENSE_COUNTS_BYTES else "rows"


def _dense_product(n_cells, n_rows, n_features) -> bool:
    """Count pairs with a dense BLAS product when rows hold more than F/10 non-default cells on
    average (the sparse product's cost grows with the square of that number)."""
    return n_cells * 10 > n_rows * n_features


def _pattern_csr(pattern) -> sp.csr_matrix:
    """0/1 int32 CSR of a boolean pattern (dense ndarray or CSR)."""
    if sp.issparse(pattern):
        p = sp.csr_matrix(pattern, dtype=np.int32)
        p.data[:] = 1
        return p
    r, c = np.nonzero(pattern)
    return sp.csr_matrix((np.ones(r.shape[0], dtype=np.int32), (r, c)), shape=pattern.shape)


def chunk_conflicts(pattern, mode: str = "counts", row_offset: int = 0) -> ConflictCounts:
    """Non-default counts of one chunk's sampled rows.

    Parameters
    ----------
    pattern : ndarray of shape (n_rows, n_features), dtype bool, or scipy.sparse matrix
        True where a sampled row's bin differs from the feature's default bin (from
        :func:`sample_pattern`).
    mode : {"counts", "rows"}
        ``"counts"``: pairwise counts, by a dense BLAS product when rows hold more than F/10
        non-default cells on average, else by pair enumeration into a dense matrix
        (:func:`oocgbdt.kernels.bundling.count_pairs`, F <= 4096) or a scipy sparse product
        (all give the same counts). ``"rows"``: keep the non-default cells (wide data).
    row_offset : int
        Position of this chunk's first sampled row within the whole sample (row-set mode).
    """
    n_rows, n_features = pattern.shape
    if sp.issparse(pattern):
        p = _pattern_csr(pattern)
        p.eliminate_zeros()
        nnz = np.bincount(p.indices, minlength=n_features).astype(np.int64)
        total = int(p.nnz)
    else:
        pattern = np.asarray(pattern, dtype=bool)
        nnz = pattern.sum(axis=0, dtype=np.int64)
        total = int(nnz.sum())
        p = None
    if mode == "rows":
        if p is None:
            r, f = np.nonzero(pattern)
        else:
            coo = p.tocoo()
            r, f = coo.row, coo.col
        return ConflictCounts(n_rows, nnz, rows=((r + row_offset).astype(np.int32), f.astype(np.int32)))
    if _dense_product(total, n_rows, n_features):
        dense = pattern if p is None else p.toarray().astype(bool)
        dt = np.float32 if n_rows < (1 << 24) else np.float64  # exact integer sums
        a = dense.astype(dt)
        # One BLAS thread: chunks already run in parallel, and OpenBLAS's own threads make this
        # skinny product over 100x slower on a 2-core machine (measured: 1.2 s vs 9 ms).
        with threadpool_limits(limits=1, user_api="blas"):
            pairs = np.rint(a.T @ a).astype(np.int32)
    elif n_features * n_features * 4 <= DENSE_PAIRS_BYTES:
        p = p if p is not None else _pattern_csr(pattern)
        p.sort_indices()
        pairs = _count_pairs_complemented(p, nnz)
        if np.count_nonzero(pairs) * 8 < pairs.size:  # keep partials small until merged
            pairs = sp.csr_matrix(pairs).astype(np.int64)
    else:
        p = p if p is not None else _pattern_csr(pattern)
        pairs = (p.T.tocsr() @ p).tocsr().astype(np.int64)
    return ConflictCounts(n_rows, nnz, pairs=pairs)


def _count_pairs_complemented(p, nnz):
    """Pairwise counts of a sparse CSR pattern with the numba pair enumeration
    (:func:`oocgbdt.kernels.bundling.count_pairs`, which releases the GIL, unlike scipy's
    product), after flipping the columns present in more than half of the rows: their few
    absent rows are enumerated instead, and the counts are mapped back exactly
    (``|P_d & P_f| = nnz_f - |Q_d & P_f|`` and
    ``|P_d & P_e| = nnz_d + nnz_e - n + |Q_d & Q_e|`` with ``Q`` the complement).
    On the 1M-row one-hot benchmark table (20 dense columns) this halves the pairs counted."""
    n_rows, n_features = p.shape
    comp = nnz * 2 > n_rows
    indptr, indices = p.indptr.astype(np.int64), p.indices.astype(np.int32)
    if comp.any():
        out_ptr = np.empty(n_rows + 1, dtype=np.int64)
        total = complement_columns(indptr, indices, comp, out_ptr, np.zeros(0, dtype=np.int32))
        out_ind = np.empty(total, dtype=np.int32)
        complement_columns(indptr, indices, comp, out_ptr, out_ind)
        indptr, indices = out_ptr, out_ind
    # uint16 counters when they cannot overflow: half the bytes, fewer cache misses
    upper = np.zeros((n_features, n_features), dtype=np.uint16 if n_rows < (1 << 16) else np.int32)
    count_pairs(indptr, indices, upper)
    return _counts_from_complemented(upper.astype(np.int32), comp, nnz, n_rows)


def _counts_from_complemented(m, comp, nnz, n_rows):
    """Symmetric pairwise counts (int32, F x F) from the upper-triangular counts ``m`` (int32,
    modified) of the pattern with the ``comp`` columns flipped (see
    :func:`_count_pairs_complemented`)."""
    n_features = m.shape[0]
    diag = np.diagonal(m).copy()
    m += m.T
    m[np.arange(n_features), np.arange(n_features)] = diag
    if comp.any():
        c = np.flatnonzero(comp)
        o = np.flatnonzero(~comp)
        nz = nnz.astype(np.int32)
        cross = nz[o][None, :] - m[np.ix_(c, o)]
        m[np.ix_(c, o)] = cross
        m[np.ix_(o, c)] = cross.T
        m[np.ix_(c, c)] = nz[c][:, None] + nz[c][None, :] - n_rows + m[np.ix_(c, c)]
        m[c, c] = nz[c]
    return m


#: Rows per block of the uint16 pair counters of :func:`sparse_chunk_conflicts` (no overflow).
_PAIR_BLOCK_ROWS = (1 << 16) - 1


def _default_intervals(bin_mapper):
    """Per feature, the default bin's interval ``(lo, hi]`` as :func:`sparse_nondefault` reads
    it: ``lo, hi, first, last, nan_off``."""
    nb = np.asarray(bin_mapper.n_bins_, dtype=np.int64)
    d = np.asarray(bin_mapper.default_bins_, dtype=np.int64)
    nan_off = np.asarray(bin_mapper.missing_types_) == MISSING_NAN
    n_search = nb - nan_off
    start = np.asarray(bin_mapper.bin_offsets_[:-1], dtype=np.int64)
    flat = bin_mapper._flat_bounds
    first = d == 0
    last = d == n_search - 1
    lo = np.where(first, -np.inf, flat[start + np.maximum(d - 1, 0)])
    hi = np.where(last, np.inf, flat[start + np.minimum(d, nb - 1)])
    return lo, hi, first, last, nan_off


def sparse_chunk_conflicts(X_block, local_rows, bin_mapper, mode: str = "counts",
                           row_offset: int = 0) -> ConflictCounts:
    """``chunk_conflicts(sample_pattern(X_block, local_rows, bin_mapper), mode, row_offset)``,
    for a sparse chunk in ``"counts"`` mode without building the pattern.

    The stored entries are tested against their default bin's interval
    (:func:`oocgbdt.kernels.bundling.sparse_nondefault`: two comparisons instead of a bin
    search), and each sampled row's non-default features, with the columns present in more
    than half of the rows complemented, are enumerated pairwise straight from the CSR arrays
    (:func:`oocgbdt.kernels.bundling.count_pairs_masked`) into uint16 counters, blocks of
    ``2**16 - 1`` rows at a time. Other inputs (dense chunks, ``"rows"`` mode, categorical
    features, wide data, patterns dense enough for the BLAS product) take
    :func:`chunk_conflicts` of :func:`sample_pattern`; the result is the same.
    """
    n_features = X_block.shape[1]
    if (not sp.issparse(X_block) or mode != "counts"
            or bool(np.asarray(bin_mapper.is_categorical_).any())
            or n_features * n_features * 4 > DENSE_PAIRS_BYTES):
        return chunk_conflicts(sample_pattern(X_block, local_rows, bin_mapper), mode, row_offset)
    X = _as_csr(X_block)
    if local_rows is not None:
        X = X[np.asarray(local_rows)]
    n_rows = X.shape[0]
    mask = np.empty(X.nnz, dtype=bool)
    nnz = np.zeros(n_features, dtype=np.int64)
    sparse_nondefault(X.indptr, X.indices, X.data, *_default_intervals(bin_mapper), mask, nnz)
    if _dense_product(int(nnz.sum()), n_rows, n_features):
        # copies: eliminate_zeros compacts indices/indptr in place, and X may be the caller's
        p = sp.csr_matrix((mask, X.indices.copy(), X.indptr.copy()), shape=X.shape)
        p.eliminate_zeros()
        return chunk_conflicts(p, mode, row_offset)
    comp = nnz * 2 > n_rows
    indptr = X.indptr.astype(np.int64, copy=False)
    upper = np.zeros((n_features, n_features), dtype=np.uint16)
    total = None
    for r0 in range(0, n_rows, _PAIR_BLOCK_ROWS):
        if r0:
            upper[:] = 0
        count_pairs_masked(indptr, X.indices, mask, comp, r0, min(n_rows, r0 + _PAIR_BLOCK_ROWS),
                           upper)
        total = upper.astype(np.int32) if total is None else total + upper
    if total is None:
        total = np.zeros((n_features, n_features), dtype=np.int32)
    pairs = _counts_from_complemented(total, comp, nnz, n_rows)
    if np.count_nonzero(pairs) * 8 < pairs.size:  # keep partials small until merged
        pairs = sp.csr_matrix(pairs).astype(np.int64)
    return ConflictCounts(n_rows, nnz, pairs=pairs)


def _add_pairs(a, b):
    if a is None:
        return b
    if b is None:
        return a
    if sp.issparse(a) and sp.issparse(b):
        return (a + b).tocsr()
    if sp.issparse(a):
        a, b = b, a
    out = np.array(a, dtype=np.int32, copy=True)
    if sp.issparse(b):
        coo = b.tocoo()
        np.add.at(out, (coo.row, coo.col), coo.data.astype(np.int32))
    else:
        out += b
    return out


def merge_conflicts(parts) -> ConflictCounts:
    """Combine step of the fan-in tree: add the counts of several chunks (in order)."""
    parts = [p for p in parts if p is not None]
    out = parts[0]
    for p in parts[1:]:
        rows = None
        if out.rows is not None or p.rows is not None:
            a = out.rows or (np.zeros(0, np.int32), np.zeros(0, np.int32))
            b = p.rows or (np.zeros(0, np.int32), np.zeros(0, np.int32))
            rows = (np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))
        out = ConflictCounts(out.n_rows + p.n_rows, out.nnz + p.nnz, _add_pairs(out.pairs, p.pairs),
                             rows)
    return out


# ---------------------------------------------------------------------------------------------
# Greedy bundling
# ---------------------------------------------------------------------------------------------


def _degree(pairs, n_features):
    """Conflict-graph degree of each feature (features it conflicts with at least once)."""
    if pairs is None:
        return np.zeros(n_features, dtype=np.int64)
    if sp.issparse(pairs):
        p = pairs.tocsr()
        off = p.copy()
        off.setdiag(0)
        off.eliminate_zeros()
        return np.diff(off.indptr).astype(np.int64)
    off = np.asarray(pairs) > 0
    return off.sum(axis=1).astype(np.int64) - np.diagonal(off).astype(np.int64)


def bundling_order(nnz, degree):
    """Features by decreasing non-default count, then decreasing degree, then index."""
    nnz = np.asarray(nnz, dtype=np.int64)
    degree = np.asarray(degree, dtype=np.int64)
    return np.lexsort((np.arange(nnz.shape[0]), -degree, -nnz))


def greedy_bundles(order, pairs, budget, n_bins, max_bins, dense=None, nnz=None):
    """Greedy bundling on pairwise conflict counts (the paper's Algorithm 3).

    Parameters
    ----------
    order : sequence of int
        Features to bundle, in the order they are placed (trivial features left out).
    pairs : ndarray (F, F) or scipy.sparse matrix
        Pairwise conflict counts (symmetric; the diagonal is ignored).
    budget : int
        Largest accumulated conflict count of one bundle (``max_conflict_rate * rows``).
    n_bins : ndarray of shape (F,), int
        Bins per feature.
    max_bins : int
        Cap on a bundle column's bins (``1 + sum(n_bins - 1)`` over its members).
    dense : ndarray of shape (F,), bool, optional
        Features that never join an existing bundle (they open their own).
    nnz : ndarray of shape (F,), int, optional
        Non-default rows per feature: a feature never joins a bundle it conflicts with on more
        than ``nnz // 2`` rows. Default: the diagonal of ``pairs``.

    Returns
    -------
    bundles : list of lists of int
        In creation order; members in placement order.
    capped : bool
        True if the bin cap (and not conflicts) kept some feature out of a bundle it fitted.
    """
    if sp.issparse(pairs):
        return greedy_bundles_naive(order, pairs, budget, n_bins, max_bins, dense, nnz)
    # dense counts: one numba pass (the same steps; greedy_bundles_naive is its twin)
    n_features = len(n_bins)
    dense = np.zeros(n_features, dtype=bool) if dense is None else np.asarray(dense, dtype=bool)
    pairs = np.asarray(pairs)
    nnz = np.diagonal(pairs) if nnz is None else nnz
    order = np.asarray(order, dtype=np.int64).reshape(-1)
    bundle_of = np.empty(n_features, dtype=np.int64)
    n_b, capped = greedy_bundle_of(order, pairs, int(budget), np.asarray(n_bins, dtype=np.int64),
                                   int(max_bins), dense, np.asarray(nnz, dtype=np.int64),
                                   bundle_of)
    bundles = [[] for _ in range(int(n_b))]
    for f in order.tolist():
        bundles[bundle_of[f]].append(f)
    return bundles, bool(capped)


def greedy_bundles_naive(order, pairs, budget, n_bins, max_bins, dense=None, nnz=None):
    """NumPy version of :func:`greedy_bundles` (one vectorized step per feature): the path of
    sparse counts, and the test oracle of the numba kernel used for dense counts
    (:func:`oocgbdt.kernels.bundling.greedy_bundle_of`). Same arguments and result."""
    n_features = len(n_bins)
    dense = np.zeros(n_features, dtype=bool) if dense is None else np.asarray(dense, dtype=bool)
    csr = pairs.tocsr() if sp.issparse(pairs) else None
    dense_pairs = None if csr is not None else np.asarray(pairs)
    if nnz is None:
        nnz = csr.diagonal() if csr is not None else np.diagonal(dense_pairs)
    nnz = np.asarray(nnz, dtype=np.int64)
    bundle_of = np.full(n_features, -1, dtype=np.int64)
    bundles, conflicts, bins = [], [], []
    capped = False
    for f in order:
        f = int(f)
        nb = int(n_bins[f])
        chosen = -1
        if not dense[f] and bundles:
            if csr is not None:
                lo, hi = csr.indptr[f], csr.indptr[f + 1]
                nbr, cnt = csr.indices[lo:hi], csr.data[lo:hi]
            else:
                nbr = np.flatnonzero(dense_pairs[f])
                cnt = dense_pairs[f, nbr]
            keep = (nbr != f) & (bundle_of[nbr] >= 0)
            conf = np.bincount(bundle_of[nbr[keep]], weights=cnt[keep], minlength=len(bundles))
            acc = np.asarray(conflicts, dtype=np.float64) + conf
            fits_conf = (acc <= budget) & (conf <= nnz[f] // 2)
            new_bins = np.asarray(bins, dtype=np.int64) + (nb - 1)
            fits = fits_conf & (new_bins <= max_bins)
            if (fits_conf & ~fits).any() and not fits.any():
                capped = True
            hits = np.flatnonzero(fits)
            if hits.size:
                chosen = int(hits[0])
                conflicts[chosen] = float(acc[chosen])
                bins[chosen] = int(new_bins[chosen])
                bundles[chosen].append(f)
        if chosen < 0:
            chosen = len(bundles)
            bundles.append([f])
            conflicts.append(0.0)
            bins.append(nb)
        bundle_of[f] = chosen
    return bundles, capped


def greedy_bundles_row_sets(order, row_sets, n_rows, budget, n_bins, max_bins, dense=None):
    """Greedy bundling on sampled row sets, for data too wide for a pairwise count matrix.

    Like :func:`greedy_bundles`, but the conflicts of a feature with a bundle are the sampled
    rows it shares with the bundle's marked rows (LightGBM's ``GreedyGroups``), counted exactly
    for every bundle in creation order.

    Parameters
    ----------
    row_sets : list of ndarray of int64
        ``row_sets[f]``: the sampled rows where feature ``f`` is off its default bin.
    n_rows : int
        Number of sampled rows.
    Other parameters and the return value are those of :func:`greedy_bundles`.
    """
    n_features = len(n_bins)
    dense = np.zeros(n_features, dtype=bool) if dense is None else np.asarray(dense, dtype=bool)
    bundles, conflicts, bins, marked = [], [], [], []
    capped = False
    for f in order:
        f = int(f)
        nb = int(n_bins[f])
        rows = row_sets[f]
        chosen = -1
        if not dense[f]:
            cap_hit = False
            for g in range(len(bundles)):
                new_bins = bins[g] + nb - 1
                c = int(np.count_nonzero(marked[g][rows]))
                if conflicts[g] + c > budget or c > len(rows) // 2:
                    continue
                if new_bins > max_bins:
                    cap_hit = True
                    continue
                chosen = g
                conflicts[g] += c
                bins[g] = new_bins
                marked[g][rows] = True
                bundles[g].append(f)
                break
            capped = capped or (cap_hit and chosen < 0)
        if chosen < 0:
            bundles.append([f])
            conflicts.append(0)
            bins.append(nb)
            m = np.zeros(n_rows, dtype=bool)
            m[rows] = True
            marked.append(m)
    return bundles, capped


def no_bundle_possible(nnz, n_rows, max_conflict_rate, is_trivial) -> bool:
    """True if, whatever the pairwise conflicts, no feature can join another feature's bundle.

    Parameters
    ----------
    nnz : ndarray of shape (n_features,), int
        Sampled rows where each feature is off its default bin (``ConflictCounts.nnz``); a
        negative entry means unknown.
    n_rows : int
        K, the number of sampled rows.
    max_conflict_rate : float
    is_trivial : ndarray of shape (n_features,), bool
        Trivial features are never bundled.

    Returns
    -------
    bool
        True only if every non-trivial feature ``f`` is dense (``nnz_f / K >
        min(1/2, 1 - max_conflict_rate)``, the rule of :meth:`FeatureBundler.fit`: it opens its
        own bundle) or, for every other non-trivial feature ``g``,
        ``max(0, nnz_f + nnz_g - K) > min(budget, nnz_f // 2)`` with
        ``budget = floor(max_conflict_rate * K)``. The left side is a lower bound of the rows
        where ``f`` and ``g`` are both off their default bin (inclusion-exclusion over ``K``
        rows), hence of ``f``'s conflicts with any bundle that holds ``g``; above the budget or
        above half of ``f``'s own rows, :func:`greedy_bundles` and
        :func:`greedy_bundles_row_sets` never put ``f`` there. Then every bundle is a single
        feature: :meth:`FeatureBundler.fit_unbundled` gives :meth:`FeatureBundler.fit`'s
        result without the pairwise counts. False when unknown (a negative or impossible
        count).

    Notes
    -----
    Source of the bundling rule: LightGBM ``FastFeatureBundling`` / ``FindGroups``
    (``src/io/dataset.cpp``), as restated in the module docstring; the bound is oocgbdt's.
    """
    nnz = np.asarray(nnz, dtype=np.int64)
    is_trivial = np.asarray(is_trivial, dtype=bool)
    k = int(n_rows)
    rate = float(max_conflict_rate)
    c = nnz[~is_trivial]
    if c.size <= 1:
        return True
    if (c < 0).any() or (c > k).any():
        return False
    budget = int(math.floor(rate * k))
    dense = c / max(k, 1) > min(0.5, 1.0 - rate)  # as FeatureBundler.fit
    two = np.argsort(c, kind="stable")[:2]
    # smallest count over the other features: the second smallest for the smallest one
    other = np.where(np.arange(c.size) == two[0], c[two[1]], c[two[0]])
    lower = np.maximum(0, c + other - k)
    blocked = dense | (lower > np.minimum(budget, c // 2))
    return bool(blocked.all())


# ---------------------------------------------------------------------------------------------
# FeatureBundler
# ---------------------------------------------------------------------------------------------


def _feature_arrays(n_bins, default_bins, is_trivial):
    """The BinMapper's per-feature arrays as :meth:`FeatureBundler.fit` reads them."""
    return (np.asarray(n_bins, dtype=np.int64), np.asarray(default_bins, dtype=np.int64),
            np.asarray(is_trivial, dtype=bool))


class FeatureBundler:
    """Group features into bundles that share one histogram column, and lay the columns out.

    Parameters
    ----------
    max_conflict_rate : float in [0, 1), default 0.0
        Share of the sampled rows on which the members of one bundle may conflict. 0 bundles
        only features that never conflict in the sample, which is lossless on the sample.

    Attributes
    ----------
    bundles_ : list of ndarray of int64
        Original feature indices of each bundle (column), increasing.
    n_features_in_ : int
    feature_bundle_ : ndarray of shape (n_features,), int64
        Column of each feature; -1 for trivial features (no column).
    feature_start_ : ndarray of shape (n_features,), int64
        Offset of each feature in its bundle (the seeds' ``binRanges``; 0 for raw features).
    feature_raw_ : ndarray of shape (n_features,), bool
        True for a feature alone in its bundle (its column holds its own bins).
    n_bins_, default_bins_ : ndarray of shape (n_features,), int32
        From the BinMapper.
    bundle_n_bins_ : ndarray of shape (n_bundles,), int64
    bundle_offsets_ : ndarray of shape (n_bundles + 1,), int64
        Flat histogram layout over the columns.
    bundle_fill_ : ndarray of shape (n_bundles,), int64
        A column's value on a row whose members are all at their default bin.
    dtype_ : numpy dtype
        uint8 if every column has at most 256 bins, else uint16.
    n_sample_rows_ : int
        Sampled rows the conflicts were counted on.
    max_conflicts_ : int
        ``floor(max_conflict_rate * n_sample_rows_)``: the conflict budget of one bundle.
    sample_conflicts_ : int
        Accumulated pairwise conflicts of the chosen bundles on the sample.
    layout_ : {"uint8", "uint16"}
        The column cap that was chosen (see the module docstring).
    """

    def __init__(self, max_conflict_rate=0.0):
        self.max_conflict_rate = max_conflict_rate

    def _check(self):
        r = self.max_conflict_rate
        if isinstance(r, bool) or not isinstance(r, (int, float, np.integer, np.floating)) \
                or not (0.0 <= float(r) < 1.0):
            raise ValueError(f"max_conflict_rate must be a number in [0, 1), found {r!r}")
        return float(r)

    # ---- fit --------------------------------------------------------------------------------
    def fit(self, counts: ConflictCounts, n_bins, default_bins, is_trivial, is_categorical=None):
        """Choose bundles from merged conflict counts.

        Categorical features (``is_categorical``) are never bundled with others: each is a
        bundle of its own (``docs/categorical.md``).

        Parameters
        ----------
        counts : ConflictCounts
            Counts over the whole sample (:func:`merge_conflicts` of every chunk's
            :func:`chunk_conflicts`).
        n_bins, default_bins, is_trivial : ndarray of shape (n_features,)
            From the fitted BinMapper (``n_bins_``, ``default_bins_``, ``is_trivial_``).
        is_categorical : ndarray of shape (n_features,), bool, optional
            From the fitted BinMapper (``is_categorical_``); None: no categorical feature.

        Returns
        -------
        self
        """
        rate = self._check()
        alone = (np.zeros(len(n_bins), dtype=bool) if is_categorical is None
                 else np.asarray(is_categorical, dtype=bool))
        n_bins, default_bins, is_trivial = _feature_arrays(n_bins, default_bins, is_trivial)
        n_features = n_bins.shape[0]
        k = int(counts.n_rows)
        budget = int(math.floor(rate * k))
        nnz = np.asarray(counts.nnz, dtype=np.int64)
        share = nnz / max(k, 1)
        dense = share > min(0.5, 1.0 - rate)
        degree = _degree(counts.pairs, n_features)
        order = [f for f in bundling_order(nnz, degree) if not is_trivial[f] and not alone[f]]
        singles = [[int(f)] for f in np.flatnonzero(alone & ~is_trivial)]
        if counts.pairs is None:
            r, f = counts.rows if counts.rows is not None else (np.zeros(0, np.int32),) * 2
            srt = np.argsort(f, kind="stable")
            bounds = np.searchsorted(f[srt], np.arange(n_features + 1))
            row_sets = [r[srt[bounds[i]:bounds[i + 1]]] for i in range(n_features)]
            run = lambda cap: greedy_bundles_row_sets(order, row_sets, k, budget, n_bins, cap, dense)
        else:
            run = lambda cap: greedy_bundles(order, counts.pairs, budget, n_bins, cap, dense, nnz)
        if int(n_bins.max(initial=1)) > MAX_BINS_NARROW:
            bundles, _ = run(MAX_BINS_WIDE)
            layout = "uint16"
        else:
            bundles, capped = run(MAX_BINS_NARROW)
            layout = "uint8"
            if capped:
                wide, _ = run(MAX_BINS_WIDE)
                if WIDE_COLUMN_COST * len(wide) <= len(bundles):
                    bundles, layout = wide, "uint16"
        bundles = list(bundles) + singles
        self._set_fitted(bundles, layout, n_bins, default_bins, k, budget)
        self.sample_conflicts_ = self._sample_conflicts(counts)
        return self

    def _set_fitted(self, bundles, layout, n_bins, default_bins, k, budget):
        """The fitted attributes :meth:`fit` and :meth:`fit_unbundled` share."""
        if not bundles:  # every feature is trivial: keep one column for the leaf totals
            bundles = [[0]]
        self._set_layout(bundles, n_bins, default_bins)
        self.layout_ = layout
        self.n_sample_rows_ = k
        self.max_conflicts_ = budget

    def fit_unbundled(self, n_rows, n_bins, default_bins, is_trivial, pair_counts=True):
        """The result of :meth:`fit` when :func:`no_bundle_possible` holds, without the counts.

        Every non-trivial feature is a bundle of its own (one column for the leaf totals if all
        are trivial), with the layout, budget and statistics :meth:`fit` sets then.

        Parameters
        ----------
        n_rows : int
            K, the number of sampled rows (``ConflictCounts.n_rows``).
        n_bins, default_bins, is_trivial : ndarray of shape (n_features,)
            From the fitted BinMapper.
        pair_counts : bool, default True
            Whether :meth:`fit` would have been given pairwise counts (``conflict_mode`` is
            ``"counts"``): ``sample_conflicts_`` is then 0, else None.

        Returns
        -------
        self
        """
        rate = self._check()
        n_bins, default_bins, is_trivial = _feature_arrays(n_bins, default_bins, is_trivial)
        k = int(n_rows)
        bundles = [[int(f)] for f in np.flatnonzero(~is_trivial)]
        # fit: uint16 when a feature has more than 256 bins; else uint8 (single features never
        # hit the cap, so the wide layout is not tried)
        layout = "uint16" if int(n_bins.max(initial=1)) > MAX_BINS_NARROW else "uint8"
        self._set_fitted(bundles, layout, n_bins, default_bins, k, int(math.floor(rate * k)))
        self.sample_conflicts_ = 0 if pair_counts else None
        return self

    def _sample_conflicts(self, counts):
        if counts.pairs is None:
            return None
        total = 0
        for members in self.bundles_:
            if len(members) < 2:
                continue
            if sp.issparse(counts.pairs):
                sub = counts.pairs[members][:, members].toarray()
            else:
                sub = np.asarray(counts.pairs)[np.ix_(members, members)]
            total += int((sub.sum() - np.trace(sub)) // 2)
        return total

    @classmethod
    def from_bundles(cls, bundles, n_bins, default_bins, max_conflict_rate=0.0):
        """A bundler with the given bundles (lists of feature indices); for tests and tools."""
        self = cls(max_conflict_rate)
        self._set_layout([list(b) for b in bundles], np.asarray(n_bins, dtype=np.int64),
                         np.asarray(default_bins, dtype=np.int64))
        self.layout_ = "uint8" if self.dtype_ == X_BINNED_DTYPE else "uint16"
        self.n_sample_rows_ = 0
        self.max_conflicts_ = 0
        self.sample_conflicts_ = None
        return self

    def _set_layout(self, bundles, n_bins, default_bins):
        n_features = n_bins.shape[0]
        order = sorted((sorted(int(f) for f in b) for b in bundles), key=lambda b: b[0])
        self.bundles_ = [np.asarray(b, dtype=np.int64) for b in order]
        self.n_features_in_ = int(n_features)
        self.n_bins_ = np.asarray(n_bins, dtype=np.int32)
        self.default_bins_ = np.asarray(default_bins, dtype=np.int32)
        col = np.full(n_features, -1, dtype=np.int64)
        start = np.zeros(n_features, dtype=np.int64)
        raw = np.zeros(n_features, dtype=bool)
        col_bins, fill = [], []
        for c, members in enumerate(self.bundles_):
            if len(set(members.tolist())) != len(members) or (col[members] >= 0).any():
                raise ValueError("a feature may belong to one bundle only")
            col[members] = c
            if len(members) == 1:
                f = int(members[0])
                raw[f] = True
                col_bins.append(int(n_bins[f]))
                fill.append(int(default_bins[f]))
            else:
                s = 0
                for f in members:
                    start[f] = s
                    s += int(n_bins[f]) - 1
                col_bins.append(1 + s)
                fill.append(0)
        self.feature_bundle_ = col
        self.feature_start_ = start
        self.feature_raw_ = raw
        self.bundle_n_bins_ = np.asarray(col_bins, dtype=np.int64)
        self.bundle_offsets_ = np.concatenate(([0], np.cumsum(self.bundle_n_bins_))).astype(np.int64)
        self.bundle_fill_ = np.asarray(fill, dtype=np.int64)
        self.dtype_ = np.dtype(X_BINNED_DTYPE if self.bundle_n_bins_.max() <= MAX_BINS_NARROW
                               else X_BINNED_DTYPE_WIDE)

    # ---- derived ----------------------------------------------------------------------------
    @property
    def n_bundles(self) -> int:
        return len(self.bundles_)

    def expand_index(self, bin_offsets) -> np.ndarray:
        """For every (feature, bin) of the per-feature histogram layout ``bin_offsets``, the row
        of the bundle histogram holding it; -1 for a bundled feature's default bin (recovered
        by subtraction) and for features without a column."""
        bin_offsets = np.asarray(bin_offsets, dtype=np.int64)
        n_bins = self.n_bins_.astype(np.int64)
        feature = np.repeat(np.arange(self.n_features_in_), n_bins)   # feature of each flat bin
        b = np.arange(int(bin_offsets[-1]), dtype=np.int64) - np.repeat(bin_offsets[:-1], n_bins)
        col = self.feature_bundle_[feature]
        d = self.default_bins_.astype(np.int64)[feature]
        raw = self.feature_raw_[feature]
        base = self.bundle_offsets_[np.maximum(col, 0)]
        # encode_bin, vectorized: b < d -> start + 1 + b; b > d -> start + b
        bundled = self.feature_start_[feature] + b + (b < d)
        out = np.where(raw, base + b, base + bundled)
        out[(~raw & (b == d)) | (col < 0)] = -1
        return out

    def summary(self, conflict_rows=None) -> str:
        """One line such as ``EFB: 4126 features -> 7 bundles, 0 conflicting rows``."""
        n_multi = sum(len(b) > 1 for b in self.bundles_)
        n_used = int((self.feature_bundle_ >= 0).sum())
        text = (f"EFB: {self.n_features_in_} features -> {self.n_bundles} bundles "
                f"({n_multi} of several features, {self.n_bundles - n_multi} single; "
                f"{self.n_features_in_ - n_used} trivial features dropped; {self.layout_} columns)")
        if conflict_rows is not None:
            text += f", {conflict_rows} conflicting rows"
        return text

    # ---- serialization ----------------------------------------------------------------------
    def to_dict(self) -> dict:
        """A JSON-serializable description of the fitted bundler."""
        return {
            "format": _DICT_FORMAT, "version": _DICT_VERSION,
            "max_conflict_rate": float(self.max_conflict_rate),
            "bundles": [b.tolist() for b in self.bundles_],
            "n_bins": self.n_bins_.tolist(), "default_bins": self.default_bins_.tolist(),
            "layout": self.layout_, "n_sample_rows": int(self.n_sample_rows_),
            "max_conflicts": int(self.max_conflicts_),
            "sample_conflicts": self.sample_conflicts_,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "FeatureBundler":
        """Rebuild a bundler from :meth:`to_dict` output."""
        if not isinstance(d, dict) or d.get("format") != _DICT_FORMAT or d.get("version") != _DICT_VERSION:
            raise ValueError(f"d must be a dict produced by FeatureBundler.to_dict() (format "
                             f"{_DICT_FORMAT!r}, version {_DICT_VERSION})")
        self = cls.from_bundles(d["bundles"], d["n_bins"], d["default_bins"], d["max_conflict_rate"])
        self.layout_ = d["layout"]
        self.n_sample_rows_ = d["n_sample_rows"]
        self.max_conflicts_ = d["max_conflicts"]
        self.sample_conflicts_ = d["sample_conflicts"]
        return self

    def __repr__(self):
        if not hasattr(self, "bundles_"):
            return f"FeatureBundler(max_conflict_rate={self.max_conflict_rate!r})"
        return f"<FeatureBundler {self.n_features_in_} features -> {self.n_bundles} bundles>"


# ---------------------------------------------------------------------------------------------
# Per-chunk task bodies: sampled patterns and bundle columns
# ---------------------------------------------------------------------------------------------


def _as_csr(X):
    X = sp.csr_matrix(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


def _sparse_bins(X, bin_mapper):
    """Bins of the stored entries of a CSR matrix (int32, one per entry)."""
    out = np.empty(X.nnz, dtype=np.int32)
    if X.nnz:
        bin_sparse_entries(X.indices, X.data, bin_mapper._flat_bounds, bin_mapper.bin_offsets_,
                           bin_mapper.n_bins_, bin_mapper.missing_types_, out)
    return out


def sample_pattern(X_block, local_rows, bin_mapper):
    """Where the sampled rows of a chunk are off their features' default bins.

    Parameters
    ----------
    X_block : ndarray of shape (n_rows, n_features) or scipy.sparse matrix
        Raw values of one row chunk.
    local_rows : ndarray of int, or None
        The chunk's rows that belong to the sample (None: all rows).
    bin_mapper : fitted BinMapper

    Returns
    -------
    scipy.sparse CSR of shape (n_sampled, n_features) with True entries where a cell is off its
    default bin; or, for dense chunks whose pattern holds more than one cell in ten of a row
    (:func:`chunk_conflicts` then uses a dense product anyway), a bool ndarray.
    """
    if sp.issparse(X_block):
        X = _as_csr(X_block)
        if local_rows is not None:
            X = X[np.asarray(local_rows)]
        bins = _sparse_bins(X, bin_mapper)
        keep = bins != bin_mapper.default_bins_[X.indices]
        # copies: eliminate_zeros compacts indices/indptr in place, and X may be the caller's
        p = sp.csr_matrix((keep, X.indices.copy(), X.indptr.copy()), shape=X.shape)
        p.eliminate_zeros()
        return p
    X = np.asarray(X_block)
    if local_rows is not None:
        X = X[np.asarray(local_rows)]
    Xb = bin_mapper.transform(X)
    n_rows, n_features = Xb.shape
    counts = np.empty(n_rows, dtype=np.int64)
    nondefault_counts(Xb, bin_mapper.default_bins_, counts)
    if _dense_product(int(counts.sum()), n_rows, n_features):
        return Xb != bin_mapper.default_bins_[None, :]
    indptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    nondefault_csr(Xb, bin_mapper.default_bins_, indptr, indices)
    return sp.csr_matrix((np.ones(indices.shape[0], dtype=bool), indices, indptr),
                         shape=(n_rows, n_features))


def bundle_chunk(X_block, bin_mapper, bundler=None):
    """The histogram columns of one raw chunk: bins, then bundles when ``bundler`` is given.

    Dense chunks are binned (``BinMapper.transform``) and then merged into bundle columns
    (:func:`oocgbdt.kernels.bundling.bundle_columns`). Sparse chunks (scipy.sparse) are binned
    and merged in one step from their stored entries
    (:func:`oocgbdt.kernels.bundling.bundle_sparse_rows`): no dense float copy is made. Without
    a bundler, a sparse chunk gives exactly the dense binned chunk.

    Returns
    -------
    X_cols : ndarray of shape (n_rows, n_columns), uint8 or uint16
        ``n_columns`` is the number of bundles, or of features without a bundler.
    conflict_rows, lost_values : int
        Rows where two members of a bundle were both off their default bin, and values lost to
        the member with the higher feature index (0 without a bundler).
    """
    bm = bin_mapper
    if bundler is None:  # dense or sparse, BinMapper.transform bins it (sparse: stored entries)
        return bm.transform(X_block), 0, 0
    column, start, raw, fill = (bundler.feature_bundle_, bundler.feature_start_,
                                bundler.feature_raw_, bundler.bundle_fill_)
    dtype = bundler.dtype_
    n_rows = X_block.shape[0]
    out = np.empty((n_rows, fill.shape[0]), dtype=dtype)
    if sp.issparse(X_block):
        X = _as_csr(X_block)
        if X.shape[1] != bm.n_features_in_:
            raise ValueError(f"X must have n_features_in_={bm.n_features_in_} columns, found "
                             f"{X.shape[1]} (shape {X.shape})")
        conflict_rows, lost = bundle_sparse_rows_guided(
            X.indptr, X.indices, X.data, bm._flat_bounds, bm.bin_offsets_, bm.n_bins_,
            bm.missing_types_, column, start, raw, bm.default_bins_, fill, *bm.value_guides(),
            out) if n_rows else (0, 0)
    else:
        Xb = bm.transform(X_block)
        conflict_rows, lost = bundle_columns(Xb, column, start, raw, bm.default_bins_, fill,
                                             out) if n_rows else (0, 0)
    return out, int(conflict_rows), int(lost)
