"""This module contains the bins of a fit: a BinMapper fitted on a row sample.

Data flow position: after input normalization. The sample is one small compute: row indices are
drawn on the client from ``seed`` over the GLOBAL row range (so the sample, and hence the bins,
do not depend on chunking), and only those rows are read. Each partition's loading task then
bins its rows (:func:`oocgbdt.dask.partitions.load_partition`).
"""
from __future__ import annotations

import dask.array as da
import numpy as np
import scipy.sparse as sp

from oocgbdt.core.bin_mapper import BinMapper, sample_row_indices
from oocgbdt.core.executor import fit_threads

__all__ = ["sample_row_indices", "bin_sample", "sample_key", "fit_bin_mapper"]


def bin_sample(X: da.Array, params: dict, compute):
    """The rows of ``X`` that the bin sample takes (:func:`sample_row_indices` with
    ``bin_construct_sample_cnt`` and ``seed``; every row of a smaller ``X``), computed with
    ``compute`` (Dask array -> NumPy or scipy.sparse)."""
    idx = sample_row_indices(int(X.shape[0]), int(params["bin_construct_sample_cnt"]),
                             int(params["seed"]))
    return compute(X if idx is None else X[idx])


def sample_key(X: da.Array, params: dict) -> tuple:
    """What determines the bin sample of ``X``: its Dask name and shape, and the sampling
    parameters (``bin_construct_sample_cnt``, ``seed``; see :func:`sample_row_indices`)."""
    return (X.name, tuple(int(n) for n in X.shape), int(params["bin_construct_sample_cnt"]),
            int(params["seed"]))


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
