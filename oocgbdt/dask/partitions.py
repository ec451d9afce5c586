"""This module contains the compute partitions' Dask graphs: one loading task per partition (read
-> bin -> bundle -> :class:`~oocgbdt.core.partition.PartitionData`), over the partitions the rule
of :mod:`oocgbdt.core.partitioning` groups from the storage chunks.

Data flow position: after the bins (and bundles) are fitted, before the per-row state is loaded.
"""
from __future__ import annotations

from dataclasses import replace

import dask
import numpy as np

from oocgbdt.core.bundler import bundle_chunk
from oocgbdt.core.partition import partition_from_raw, partition_init
from oocgbdt.core.partitioning import default_partition_rows, group_chunks, partition_bounds
from oocgbdt.dask.inputs import is_sparse

__all__ = ["default_partition_rows", "group_chunks", "partition_bounds", "partition_groups",
           "set_layout", "load_partition", "bin_raw_blocks", "row_blocks", "partition_tasks"]



def set_layout(set_name: str, n_features: int, bin_mapper, bundler=None):
    """How the binned rows of the set ``set_name`` are stored: ``(bundler or None, n_columns,
    dtype)``.

    The training set (``"train"``) is merged into the bundler's bundles (when there is one);
    an eval set is binned one column per feature, never bundled, as LightGBM's validation data
    (``Dataset::CreateValid``, ``src/io/dataset.cpp``, gives each feature its own group). The
    bundles are fitted on the training sample: an eval row may have two features of one bundle
    off their default bins, and a bundle column keeps only one of them, which would evaluate
    another row than the one ``Booster.predict`` sees.
    """
    if set_name == "train" and bundler is not None:
        return bundler, int(bundler.n_bundles), np.dtype(bundler.dtype_)
    return None, int(n_features), np.dtype(bin_mapper.binned_dtype_)


def load_partition(blocks, y_blocks, w_blocks, n_outputs: int, bin_mapper, bundler=None):
    """Task body: read -> bin -> (bundle) -> :class:`~oocgbdt.core.partition.PartitionData` of one partition.

    Each raw block is binned on its own (never a float copy of the whole partition) and the
    binned rows are concatenated; binning is row by row, so the result equals binning the
    concatenated rows, and one block gives exactly :func:`~oocgbdt.core.partition.partition_from_raw`.

    Parameters
    ----------
    blocks : list of ndarray or scipy.sparse matrix, each of shape (rows_i, n_features)
    y_blocks, w_blocks : list of ndarray of shape (rows_i,), or None
    n_outputs : int
    bin_mapper, bundler : fitted BinMapper and FeatureBundler (or None)

    Returns
    -------
    PartitionData
        ``conflicts`` summed over the blocks.
    """
    if len(blocks) == 1:
        return partition_from_raw(blocks[0], y_blocks[0], None if w_blocks is None else w_blocks[0],
                              n_outputs, bin_mapper, bundler)
    cols, conflicts = bin_raw_blocks(blocks, bin_mapper, bundler)
    y = np.concatenate([np.asarray(v) for v in y_blocks])
    w = None if w_blocks is None else np.concatenate([np.asarray(v) for v in w_blocks])
    return replace(partition_init(cols, y, w, n_outputs), conflicts=conflicts)


def bin_raw_blocks(blocks, bin_mapper, bundler=None):
    """Bin (and bundle) consecutive raw blocks one at a time and concatenate the binned rows.

    Returns
    -------
    cols : ndarray of shape (sum of rows, n_columns), uint8 or uint16, C-contiguous
    conflicts : tuple of int
        ``(conflicting rows, lost values)`` of the EFB merge, summed over the blocks.
    """
    cols, conflict_rows, lost = [], 0, 0
    for b in blocks:
        c, r, v = bundle_chunk(b, bin_mapper, bundler)
        cols.append(c)
        conflict_rows += int(r)
        lost += int(v)
    out = cols[0] if len(cols) == 1 else np.concatenate(cols)
    return np.ascontiguousarray(out), (conflict_rows, lost)


def partition_groups(X, params, binned_row_bytes) -> list:
    """Chunk index ranges ``[(a, b), ...]`` of the compute partitions of ``X``: ``partition_rows``
    rows each if given, else :func:`default_partition_rows` (from the shape alone)."""
    target = params["partition_rows"]
    if target is None:
        raw_row_bytes = None if is_sparse(X) else X.shape[1] * np.dtype(X.dtype).itemsize
        target = default_partition_rows(X.shape[0], binned_row_bytes, raw_row_bytes)
    return group_chunks(X.chunks[0], int(target))


def row_blocks(arr):
    """One delayed object per row chunk of ``arr`` (None stays None)."""
    return None if arr is None else list(arr.to_delayed().ravel())


def partition_tasks(X, y, weight, bin_mapper, bundler, n_outputs, key, groups=None):
    """Delayed :class:`~oocgbdt.core.partition.PartitionData` per compute partition, with its
    bins in memory: read -> bin -> bundle -> state, fused per partition (:func:`load_partition`),
    under the Dask key ``f"{key}-{i}"``.

    ``groups``: chunk index ranges of the partitions (None: one per chunk). ``key`` stays the
    last positional argument: benchmarks wrap this function to share the binned training
    partitions between runs.
    """
    if groups is None:
        groups = [(i, i + 1) for i in range(len(X.chunks[0]))]
    Xs, ys, ws = row_blocks(X), row_blocks(y), row_blocks(weight)
    bm = dask.delayed(bin_mapper, pure=True)
    bd = dask.delayed(bundler, pure=True) if bundler is not None else None
    return [dask.delayed(load_partition, pure=True)(Xs[a:b], ys[a:b],
                                                    None if ws is None else ws[a:b],
                                                    n_outputs, bm, bd, dask_key_name=f"{key}-{i}")
            for i, (a, b) in enumerate(groups)]
