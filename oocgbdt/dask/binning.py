"""This module contains the bins of a fit: a BinMapper fitted on a row sample.

Data flow position: after input normalization. The sample is one small compute: row indices are
drawn on the client from ``data_random_seed`` over the GLOBAL row range, as LightGBM's
``Random::Sample`` draws them (so the sample, and hence the bins, are LightGBM's and do not
depend on chunking), and only those rows are read. Each partition's loading task then
bins its rows (:func:`oocgbdt.dask.partitions.load_partition`).
"""
from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import scipy.sparse as sp

from oocgbdt.core.bin_mapper import BinMapper, sample_row_indices
from oocgbdt.core.executor import fit_threads
from oocgbdt.dask.inputs import in_memory_source

__all__ = ["sample_row_indices", "sampled_chunks", "bin_sample", "sample_key", "fit_bin_mapper"]


def sampled_chunks(X: da.Array, idx):
    """Per row chunk of ``X`` holding rows of the sample ``idx`` (sorted global row indices,
    or None for every row): ``(chunk index, its delayed block, the sampled rows' indices in the
    chunk or None for all, how many)``, in row order; chunks without sampled rows are skipped."""
    bounds = np.concatenate(([0], np.cumsum(X.chunks[0]))).astype(np.int64)
    for i, block in enumerate(X.to_delayed().ravel()):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        if idx is None:
            local, n_local = None, hi - lo
        else:
            a, b = np.searchsorted(idx, [lo, hi])
            local, n_local = idx[a:b] - lo, int(b - a)
        if n_local:
            yield i, block, local, n_local


def _sampled_rows(block, local_rows):
    """Task body: a chunk's sampled rows (all of them for ``local_rows=None``)."""
    return block if local_rows is None else block[local_rows]


def _stack_rows(blocks):
    """Task body: the sampled rows of every chunk, in order, as one CSR matrix."""
    return blocks[0].tocsr() if len(blocks) == 1 else sp.vstack(blocks, format="csr")


def bin_sample(X: da.Array, params: dict, compute):
    """The rows of ``X`` that the bin sample takes (:func:`sample_row_indices` with
    ``bin_construct_sample_cnt`` and ``data_random_seed``; every row of a smaller ``X``),
    computed with ``compute`` (Dask collection -> NumPy or scipy.sparse).

    In-memory input (:func:`~oocgbdt.dask.inputs.in_memory_source`) is read here, without a
    Dask compute: the input itself when the sample is every row (read only, never written),
    else one selection of its rows. Through Dask, each chunk is a copy of the input's rows
    (CSR) and the chunks' rows are copied again into one array; on the 160,000 x 1,205 one-hot
    rows of ``benchmarks.setup`` that was 24-106 ms (five calls, threaded scheduler).

    Chunks of scipy.sparse rows are stacked in one task (``scipy.sparse.vstack``): Dask's own
    concatenation of a sparse array first stacks each row of chunks along the columns (a
    general, slow stack even of one chunk) and then the rows; on the 160,000 x 1,205 one-hot
    rows of ``benchmarks.setup``, 13-439 ms over 40 repeats (one in six above 150 ms) against
    10-23 ms (threaded scheduler, measured).
    """
    idx = sample_row_indices(int(X.shape[0]), int(params["bin_construct_sample_cnt"]),
                             int(params["data_random_seed"]))
    source = in_memory_source(X)
    if source is not None:
        if idx is None:
            return source
        return source[idx] if sp.issparse(source) else source.take(idx, axis=0)
    if not sp.issparse(getattr(X, "_meta", None)) or X.numblocks[1] != 1:
        return compute(X if idx is None else X[idx])
    parts = [dask.delayed(_sampled_rows, pure=True)(block, local)
             for _, block, local, _ in sampled_chunks(X, idx)]
    if not parts:  # no row at all: Dask's own (empty) result
        return compute(X if idx is None else X[idx])
    return compute(dask.delayed(_stack_rows, pure=True)(parts))


def sample_key(X: da.Array, params: dict) -> tuple:
    """What determines the bin sample of ``X``: its Dask name and shape, and the sampling
    parameters (``bin_construct_sample_cnt``, ``data_random_seed``; see
    :func:`sample_row_indices`)."""
    return (X.name, tuple(int(n) for n in X.shape), int(params["bin_construct_sample_cnt"]),
            int(params["data_random_seed"]))


def fit_bin_mapper(X: da.Array, params: dict, compute, on_sample=None) -> BinMapper:
    """Fit LightGBM-style bins on ``bin_construct_sample_cnt`` sampled rows of ``X``.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features), float32, chunked by rows
        NumPy or scipy.sparse chunks (a sparse sample stays sparse).
    params : dict of resolved parameters
    compute : callable
        Computes a Dask array to NumPy (a client's, or the threaded scheduler's).
    on_sample : callable, optional
        Called with the sampled rows (ndarray or scipy.sparse, float32) before fitting; the
        disk cache hashes them into its fingerprint.

    Returns
    -------
    BinMapper
        Fitted on the sample, with ``_sample_key = sample_key(X, params)``: the EFB layer
        (:func:`oocgbdt.dask.bundling.fit_bundler`) uses the mapper's per-feature non-default
        counts of the sample only when it is the bin sample of the same ``X``.
    """
    n_rows = X.shape[0]
    sample = bin_sample(X, params, compute)
    if on_sample is not None:
        on_sample(sample)
    mapper = BinMapper.from_params(params)
    mapper.fit(sample if sp.issparse(sample) else np.asarray(sample), n_rows,
               n_threads=fit_threads(params["num_threads"]))
    mapper._sample_key = sample_key(X, params)
    return mapper
