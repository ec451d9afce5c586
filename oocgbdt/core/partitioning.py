"""This module contains the compute partitions' rule: which consecutive storage chunks become one
partition, from the data's shape alone.

A *storage chunk* is a row chunk of the input (a Dask/Zarr chunk, or ``chunk_rows`` rows of a
NumPy array); a *compute partition* is a run of consecutive storage chunks that becomes one
:class:`~oocgbdt.core.partition.PartitionData`, so every pass runs one task per partition.

Why: each pass costs, per task, a histogram of every bin to zero, send and add in the fan-in
(612 KB on 100 features x 255 bins) and a scheduler round trip on a cluster, whatever the number
of rows. Measured on 1M x 100 (2 cores), 16 chunks of 65,536 rows gave a GOSS tree a floor of
about 0.2 s per tree from that alone; 4 partitions of 262,144 rows removed most of it.

The default rule (``partition_rows=None``, :func:`default_partition_rows`) reads the data's
shape alone, never the cluster, so the same data and chunking give the same partitions, hence
the same floating-point summation order and a bit-identical model, on any number of workers:

1. aim at the fewest partitions, at least ``MIN_PARTITIONS`` = 2, that keep each within
   ``TARGET_ROWS`` = 2**18 rows (:func:`partition_count`: 2, 3 or 4 partitions of even size up
   to 4 x 2**18 rows, partitions of 2**18 rows beyond), but at least ``MIN_ROWS`` = 2**16 rows
   per partition (below that the per-task cost dominates);
2. lower it so that a partition's binned bytes (rows x histogram columns x itemsize: the bins,
   or the bundles with EFB) stay within ``MAX_BINNED_BYTES`` = 64 MiB, and, for dense input,
   its raw float32 bytes (what the loading task holds) within ``MAX_RAW_BYTES`` = 256 MiB;
3. group chunks greedily in order: a partition closes as soon as it holds at least that many
   rows (:func:`group_chunks`). A chunk is never split, so a chunk larger than the target is a
   partition of its own; the last partition may be smaller.

An explicit ``partition_rows`` skips steps 1 and 2.
"""
from __future__ import annotations

import numpy as np

__all__ = ["TARGET_ROWS", "MIN_ROWS", "MIN_PARTITIONS", "MAX_EVEN_PARTITIONS", "MAX_BINNED_BYTES",
           "MAX_RAW_BYTES", "partition_count", "default_partition_rows", "group_chunks", "partition_bounds"]

#: Largest default partition, in rows.
TARGET_ROWS = 2 ** 18
#: Smallest default target, in rows (unless the byte caps ask for less).
MIN_ROWS = 2 ** 16
#: The fewest partitions the default rule aims at (for at least ``MIN_PARTITIONS * MIN_ROWS``
#: rows). Two, not four: in process, every pass is shared out to the threads by column blocks
#: whatever the partitions, and each partition costs a pass its own routing, histograms and
#: their sum (``python -m benchmarks.inprocess``, 400,000 x 50 rows: 1.20x -> 1.09x
#: LightGBM's time; ``docs/decisions/compute-partitions.md``); on a cluster, one partition per
#: worker of two.
MIN_PARTITIONS = 2
#: Up to ``MAX_EVEN_PARTITIONS * TARGET_ROWS`` rows, the default rule aims at even partitions
#: (:func:`partition_count`); beyond, at partitions of ``TARGET_ROWS`` rows.
MAX_EVEN_PARTITIONS = 4
#: Cap on a partition's binned bytes (what every pass reads).
MAX_BINNED_BYTES = 64 * 2 ** 20
#: Cap on a dense partition's raw float32 bytes (what the loading task holds at once).
MAX_RAW_BYTES = 256 * 2 ** 20


def partition_count(n_rows: int) -> int:
    """How many even partitions the default rule aims at for ``n_rows`` rows: the fewest, at
    least :data:`MIN_PARTITIONS`, of at most :data:`TARGET_ROWS` rows each, and at most
    :data:`MAX_EVEN_PARTITIONS` (more rows make partitions of ``TARGET_ROWS``)."""
    return min(MAX_EVEN_PARTITIONS, max(MIN_PARTITIONS, -(-int(n_rows) // TARGET_ROWS)))


def default_partition_rows(n_rows: int, binned_row_bytes: int, raw_row_bytes: int | None = None) -> int:
    """The default target rows per partition, from the data's shape alone (module docstring).

    Parameters
    ----------
    n_rows : int
        Rows of the data set (training, or one eval set).
    binned_row_bytes : int
        Bytes of one binned row: histogram columns x itemsize (1 for uint8, 2 for uint16).
    raw_row_bytes : int, optional
        Bytes of one raw dense row (n_features x 4 for float32); None for sparse input, whose
        chunks are never densified.

    Returns
    -------
    int
        Target rows, >= 1.
    """
    target = min(TARGET_ROWS, max(MIN_ROWS, -(-int(n_rows) // partition_count(n_rows))))
    target = min(target, max(1, MAX_BINNED_BYTES // max(1, int(binned_row_bytes))))
    if raw_row_bytes:
        target = min(target, max(1, MAX_RAW_BYTES // int(raw_row_bytes)))
    return int(target)


def group_chunks(chunk_rows, partition_rows: int) -> list:
    """Group consecutive chunks into partitions of at least ``partition_rows`` rows.

    Parameters
    ----------
    chunk_rows : sequence of int
        Rows of each storage chunk, in order (``dask_array.chunks[0]``).
    partition_rows : int
        Minimum rows per partition (the last one may hold fewer). A chunk is never split.

    Returns
    -------
    list of (int, int)
        ``(first chunk, stop chunk)`` index ranges covering every chunk once, in order.
    """
    if int(partition_rows) < 1:
        raise ValueError(f"partition_rows must be >= 1, got {partition_rows}.")
    groups, start, rows = [], 0, 0
    for i, r in enumerate(chunk_rows):
        rows += int(r)
        if rows >= partition_rows:
            groups.append((start, i + 1))
            start, rows = i + 1, 0
    if start < len(chunk_rows):
        groups.append((start, len(chunk_rows)))
    return groups


def partition_bounds(chunk_rows, groups) -> np.ndarray:
    """Row offsets of the partitions: int64 array of shape (n_partitions + 1,)."""
    edges = np.concatenate(([0], np.cumsum(np.asarray(chunk_rows, dtype=np.int64))))
    return np.array([0] + [int(edges[b]) for _, b in groups], dtype=np.int64)
