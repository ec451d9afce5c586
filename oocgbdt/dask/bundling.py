"""This module contains blockwise Exclusive Feature Bundling: count conflicts, then bundle lazily.

Data flow position: after binning (:mod:`oocgbdt.dask.binning`). :func:`fit_bundler` is one small
compute: every row chunk bins its rows of the bin sample (the same ``bin_construct_sample_cnt``
rows, LightGBM's draw from ``data_random_seed`` over the global row range, all rows when fewer)
and counts where features are off their default bin and where two are off it together
(:func:`oocgbdt.core.bundler.sparse_chunk_conflicts`, which is
:func:`~oocgbdt.core.bundler.chunk_conflicts` of the sampled pattern); the counts are added in a fan-in tree of
``split_every`` (:func:`oocgbdt.core.bundler.merge_conflicts`) and only the merged counts reach
the client, which runs the greedy bundling. When the bin mapper's non-default counts of the same
sample already prove that no two features can share a bundle (dense data), that compute is
skipped. Each partition's loading task then bins and merges its rows into bundles
(:func:`oocgbdt.dask.partitions.load_partition`).
"""
from __future__ import annotations

import dask
import dask.array as da
import numpy as np

from oocgbdt.core.bundler import (ConflictCounts, FeatureBundler, conflict_mode,
                                  merge_conflicts, no_bundle_possible, sparse_chunk_conflicts)
from oocgbdt.dask.binning import sample_key, sample_row_indices, sampled_chunks

__all__ = ["fit_bundler", "conflict_counts", "sample_nondefault_counts"]


def _count_chunk(block, local_rows, bin_mapper, mode, row_offset):
    """Task body: the non-default counts of one chunk's sampled rows."""
    return sparse_chunk_conflicts(block, local_rows, bin_mapper, mode, row_offset)


def conflict_counts(X: da.Array, bin_mapper, params: dict, compute, key="oocgbdt-efb") -> ConflictCounts:
    """Tree-reduced non-default counts of the bin sample of ``X`` (one small compute).

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features), chunked by rows
        Raw features (NumPy or scipy.sparse chunks).
    bin_mapper : fitted BinMapper
    params : dict of resolved parameters (``bin_construct_sample_cnt``, ``data_random_seed``,
        ``split_every``)
    compute : callable
        Computes one Dask collection (a client's, or the threaded scheduler's).
    """
    n_rows, n_features = X.shape
    idx = sample_row_indices(n_rows, int(params["bin_construct_sample_cnt"]),
                             int(params["data_random_seed"]))
    mode = conflict_mode(n_features)
    bm = dask.delayed(bin_mapper, pure=True)
    parts, offset = [], 0
    for i, block, local, n_local in sampled_chunks(X, idx):
        parts.append(dask.delayed(_count_chunk, pure=True)(block, local, bm, mode, offset,
                                                           dask_key_name=f"{key}-count-{i}"))
        offset += n_local
    split_every = int(params["split_every"])
    level = 0
    while len(parts) > 1:
        parts = [dask.delayed(merge_conflicts, pure=True)(parts[j:j + split_every],
                                                          dask_key_name=f"{key}-merge-{level}-{j}")
                 for j in range(0, len(parts), split_every)]
        level += 1
    return compute(parts[0])


def sample_nondefault_counts(X: da.Array, bin_mapper, params: dict):
    """The non-default counts :func:`conflict_counts` would find (``ConflictCounts.nnz``), known
    without reading ``X`` again, or None.

    They are the mapper's ``sample_nondefault_counts_`` when the mapper was fitted by
    :func:`oocgbdt.dask.binning.fit_bin_mapper` on the bin sample of this same ``X`` (same Dask
    name, shape, ``bin_construct_sample_cnt`` and ``data_random_seed``), ``X`` is float32 (the
    sparse conflict pass bins stored entries at their own precision, the mapper saw them as
    float32) and every count is known; otherwise None.
    """
    counts = getattr(bin_mapper, "sample_nondefault_counts_", None)
    if counts is None or getattr(bin_mapper, "_sample_key", None) != sample_key(X, params):
        return None
    n_rows, n_sample = int(X.shape[0]), int(params["bin_construct_sample_cnt"])
    if bin_mapper.n_samples_fit_ != min(n_rows, n_sample):  # the rows conflict_counts reads
        return None
    if X.dtype != np.float32 or (np.asarray(counts) < 0).any():
        return None
    return np.asarray(counts, dtype=np.int64)


def fit_bundler(X: da.Array, bin_mapper, params: dict, compute, key="oocgbdt-efb") -> FeatureBundler:
    """Count conflicts blockwise (:func:`conflict_counts`) and fit a :class:`FeatureBundler`.

    When the bin mapper already knows the non-default counts of this sample
    (:func:`sample_nondefault_counts`) and they prove that no feature can join another's bundle
    (:func:`oocgbdt.core.bundler.no_bundle_possible`, e.g. dense continuous columns), the pass
    over ``X`` is skipped: :meth:`FeatureBundler.fit_unbundled` gives the bundler the counts
    would give.
    """
    rate = float(params["max_conflict_rate"])
    nnz = sample_nondefault_counts(X, bin_mapper, params)
    if nnz is not None and no_bundle_possible(nnz, bin_mapper.n_samples_fit_, rate, bin_mapper.is_trivial_):
        return FeatureBundler(rate).fit_unbundled(
            bin_mapper.n_samples_fit_, bin_mapper.n_bins_, bin_mapper.default_bins_,
            bin_mapper.is_trivial_, pair_counts=conflict_mode(X.shape[1]) == "counts")
    counts = conflict_counts(X, bin_mapper, params, compute, key=key)
    return FeatureBundler(rate).fit(
        counts, bin_mapper.n_bins_, bin_mapper.default_bins_, bin_mapper.is_trivial_,
        getattr(bin_mapper, "is_categorical_", None))
