"""This module contains the per-partition state and the functions one boosting pass runs on it.

Data flow position: every function here is a task body. The Dask layer (or the in-process
:class:`~oocgbdt.core.executor.LocalExecutor`) runs the ``partition_*`` functions once per partition,
:func:`sum_histograms` at each level of the fan-in tree, and ``finish_*`` once per pass, next to
the histograms. All take and return plain NumPy objects and never mutate their inputs, so a lost
result can be recomputed and runs are deterministic.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from oocgbdt._dtypes import G_H_DTYPE, HIST_DTYPE, LABEL_DTYPE, LEAF_DTYPE, Y_DTYPE
from oocgbdt.core.bundler import bundle_chunk
from oocgbdt.core.executor import inline_task
from oocgbdt.core.sampling import partition_goss_keys
from oocgbdt.core.split import FeatureMeta, LeafTotals, SplitInfo, SplitParams, best_split, leaf_totals
from oocgbdt.kernels.bundling import decode_feature_column, predict_binned_bundled, split_rows_bundled
from oocgbdt.kernels.histogram import build_histogram, build_histogram_block
from oocgbdt.kernels.quantize import QUANT_DTYPE, build_histogram_int
from oocgbdt.kernels.categorical import construct_bitset
from oocgbdt.kernels.sampling import scatter_selected_rows
from oocgbdt.kernels.routing import (CATEGORICAL_NODE, SKEWED_SHARE, column_major_copy,
                                     split_rows)
from oocgbdt.kernels.predict import (add_leaf_values, leaves_binned, leaves_by_routing,
                                     leaves_by_segment, leaves_by_walk, predict_binned)

__all__ = [
    "PartitionData", "TreeRows", "tree_rows_only", "partition_bins", "partition_init", "partition_from_raw", "partition_conflict_stats", "partition_add_score", "partition_set_init_scores", "partition_gradients", "partition_set_positions", "partition_position_sums", "partition_compact_columns", "partition_root",
    "SplitPlan", "BUILD_LEFT", "BUILD_RIGHT", "BUILD_BOTH", "partition_split_many", "binned_leaves", "partition_apply_tree",
    "partition_leaf_counts",
    "histograms_only", "histogram_rows",
    "sum_histograms", "finish_root", "finish_split_many", "pass_records",
    "pass_histogram",
    "partition_label_stats", "partition_metric_partials", "merge_metric_partials",
    "partition_set_queries",
]

#: The bitset arguments of a numerical split (never read).
_NO_CAT_BOUNDS = np.zeros(1, dtype=np.int64)
_NO_CAT_BITS = np.zeros(0, dtype=np.uint32)


@dataclass(frozen=True)
class PartitionData:
    """The rows of one partition as training sees them.

    Attributes
    ----------
    X_binned : ndarray of shape (n_rows, n_columns), dtype uint8 or uint16, or a reference
        The columns histograms are built from: one per feature (its bins), or, with Exclusive
        Feature Bundling, one per bundle (``X_bundled``; see :mod:`oocgbdt.kernels.bundling`).
        With the disk cache it is a reference to the rows in the cache store (any object with
        ``shape`` and ``read() -> ndarray``), read afresh by every task that needs the bins; task
        bodies get the array through :func:`partition_bins`.
    y : ndarray of shape (n_rows,), dtype float32 (LightGBM stores labels as float32)
    weight : ndarray of shape (n_rows,), dtype float32, or None
    raw_score : ndarray of shape (n_outputs, n_rows), dtype float64
    gradients, hessians : ndarray of shape (n_outputs, n_rows), dtype float32, or None before the
        first round
    rows : ndarray of shape (n_selected,), dtype int32, or None
        This round's rows (ascending) when the round samples rows (GOSS, bagging; see
        :mod:`oocgbdt.core.sampling`), else None (every row). The round's trees route and
        histogram only these rows; every row still gets its score updated.
    conflicts : tuple of int
        ``(conflicting rows, lost values)`` of merging this partition into bundles (``(0, 0)``
        without bundling).
    leaf_counts : ndarray of shape (n_leaves,), dtype int64, or None
        Rows of this round (``rows``, else every row) in each leaf of the last tree applied
        (:func:`partition_apply_tree`); None before the first.
    queries : ndarray of shape (n_queries + 1,), dtype int64, or None
        Ranking: the partition's query boundaries (first 0, last ``n_rows``); a query never
        spans two partitions. None without query groups. ``first_query``: the global index
        of its first query.
    positions : ndarray of shape (n_rows,), dtype int32, or None
        Unbiased LambdaRank: each row's position id (``0 .. n_positions - 1``), or None.
    compact : tuple or None
        ``(columns, X_compact)``: the partition's column numbers (int64, ascending) and a copy of
        those columns of ``X_binned``, shape (n_rows, len(columns)), that the round's trees
        histogram (:func:`partition_compact_columns`); None when they histogram many columns.
    quantized : ndarray of shape (n_rows,), dtype int64, or None
        ``use_quantized_grad``: the current tree's discretized gradient and hessian of every row,
        packed (:mod:`oocgbdt.kernels.quantize`, made by
        :func:`oocgbdt.core.quantized.partition_quantize`); histograms then add these
        integers. None otherwise, and after new gradients.
    goss_bits : ndarray of shape (n_rows,), dtype uint32, or None
        GOSS: the float32 bit patterns of the rows' keys, kept between the round's selection
        steps (:func:`oocgbdt.core.sampling.partition_goss_keys`); None otherwise, and once
        the rows are selected.
    """

    X_binned: np.ndarray
    y: np.ndarray
    weight: np.ndarray | None
    raw_score: np.ndarray
    gradients: np.ndarray | None = None
    hessians: np.ndarray | None = None
    rows: np.ndarray | None = None
    conflicts: tuple = (0, 0)
    leaf_counts: np.ndarray | None = None
    compact: tuple | None = None
    queries: np.ndarray | None = None
    first_query: int = 0
    positions: np.ndarray | None = None
    quantized: np.ndarray | None = None
    goss_bits: np.ndarray | None = None
    #: In process only: ``{"X": column-major copy of X_binned}``, made by the first pass that
    #: routes by column (:func:`start_split_many`) and shared by the copies ``replace`` makes.
    column_cache: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def n_rows(self) -> int:
        return self.X_binned.shape[0]


#: A sampled round whose rows are at most this share of a partition's rows copies them into a compact
#: subset (bins, gradients, hessians) for the tree (LightGBM's bagging subset rule,
#: ``average_bag_rate <= 0.5`` in ``src/boosting/bagging.hpp``): every pass then reads
#: consecutive rows instead of every third or fourth row of the partition.
SUBSET_MAX_FRACTION = 0.5

#: A tree that builds histograms of at most this share of a partition's columns (feature screening,
#: ``feature_fraction``) copies those columns into a compact array for the tree, when the bins
#: are held in memory: every histogram then reads whole consecutive rows without the column
#: indirection (measured on 500k x 100 uint8 bins, 30 columns kept: the copy takes 9 ms, and a
#: histogram of every row 12 ms instead of 21, of a tenth of the rows 1.3 ms instead of 2.5).
COLUMNS_MAX_FRACTION = 0.5


@dataclass(frozen=True)
class TreeRows:
    """Rows of one partition grouped by leaf of the tree being grown (LightGBM's DataPartition).

    Leaf ``l`` owns ``order[leaf_begin[l]:leaf_begin[l] + leaf_count[l]]``. These are row
    numbers of the partition, or, when the tree works on a compact subset of the round's rows
    (``subset`` is not None; see :data:`SUBSET_MAX_FRACTION`), positions in that subset:
    ``subset = (rows, X_binned, gradients, hessians)``, the partition's row numbers of the subset
    (ascending) and their bins and this tree's gradients and hessians, copied once at the root.

    When the tree builds few columns (see :data:`COLUMNS_MAX_FRACTION`), ``subset`` holds a
    compact copy of those columns (``rows`` is then None if every row is kept) and ``columns``
    the partition's column numbers of its columns, shape (n_kept,), int64, ascending (the tree's
    :attr:`~oocgbdt.core.split.FeatureMeta.hist_columns`); else ``columns`` is None.
    """

    order: np.ndarray       # (n_rows of this round,) int32
    leaf_begin: np.ndarray  # (n_leaves,) int64
    leaf_count: np.ndarray  # (n_leaves,) int64
    subset: tuple | None = None
    columns: np.ndarray | None = None

    def rows_of(self, leaf: int) -> np.ndarray:
        """Positions of leaf ``leaf``'s rows in the arrays the tree reads (see the class)."""
        b = self.leaf_begin[leaf]
        return self.order[b:b + self.leaf_count[leaf]]

    def partition_rows_of(self, leaf: int) -> np.ndarray:
        """The partition's row numbers of leaf ``leaf``'s rows, shape (leaf_count[leaf],), int32."""
        pos = self.rows_of(leaf)
        return pos if self.subset is None or self.subset[0] is None else self.subset[0][pos]

    def column(self, c: int) -> int:
        """Position of the partition's column ``c`` in the bins the tree reads."""
        return c if self.columns is None else int(np.searchsorted(self.columns, c))

    def hist_layout(self, meta: FeatureMeta) -> tuple:
        """``(bin_offsets, column_indices)`` that :func:`build_histogram` takes for the bins the
        tree reads, writing into the layout of ``meta.hist_offsets``."""
        if self.columns is None:
            return meta.hist_offsets, meta.hist_columns
        n = self.columns.shape[0]
        offsets = np.append(meta.hist_offsets[self.columns], meta.n_hist_bins)
        return offsets, np.arange(n, dtype=np.int64)


def partition_bins(data: PartitionData) -> np.ndarray:
    """The partition's binned columns as an ndarray: ``data.X_binned`` itself when held in memory,
    else read from the cache it references (one read per call: call once per task)."""
    x = data.X_binned
    return x if isinstance(x, np.ndarray) else x.read()


def column_major_bins(data: PartitionData) -> np.ndarray:
    """A column-major copy of the partition's in-memory bins, made once and kept in
    ``data.column_cache`` (one more byte per bin): routing reads a leaf's rows off one
    contiguous column instead of one cache line per row."""
    X = data.column_cache.get("X")
    if X is None:
        rows = data.X_binned
        out_t = np.empty((rows.shape[1], rows.shape[0]), dtype=rows.dtype)
        column_major_copy(np.ascontiguousarray(rows), out_t)
        X = data.column_cache["X"] = out_t.T
    return X


def partition_init(X_binned, y, weight, n_outputs: int) -> PartitionData:
    """Build a partition's :class:`PartitionData`; raw scores start at zero (see :func:`partition_add_score`).

    ``y`` may be None for rows that are only predicted; it is then all zeros.
    """
    n = X_binned.shape[0]
    y = np.zeros(n, dtype=LABEL_DTYPE) if y is None else np.ascontiguousarray(y, dtype=LABEL_DTYPE)
    w = None if weight is None else np.ascontiguousarray(weight, dtype=LABEL_DTYPE)
    return PartitionData(np.ascontiguousarray(X_binned), y, w, np.zeros((n_outputs, n), dtype=Y_DTYPE))


def partition_from_raw(X_block, y, weight, n_outputs: int, bin_mapper, bundler=None) -> PartitionData:
    """Read -> bin -> (bundle) -> :class:`PartitionData`, fused in one task per partition.

    ``X_block`` holds raw values (NumPy, or scipy.sparse binned from its stored entries); see
    :func:`oocgbdt.core.bundler.bundle_chunk`. The conflicts of the merge are kept in
    ``PartitionData.conflicts``.
    """
    cols, conflict_rows, lost = bundle_chunk(X_block, bin_mapper, bundler)
    return replace(partition_init(cols, y, weight, n_outputs), conflicts=(conflict_rows, lost))


def partition_conflict_stats(data: PartitionData) -> tuple:
    """``(conflicting rows, lost values)`` of one partition (gathered for the EFB report)."""
    return data.conflicts


def partition_add_score(data: PartitionData, score) -> PartitionData:
    """Add a per-output constant (shape (n_outputs,)), e.g. the init score, to every raw score."""
    return replace(data, raw_score=data.raw_score + np.asarray(score, dtype=Y_DTYPE)[:, None])


def partition_set_init_scores(data: PartitionData, score_blocks) -> PartitionData:
    """Add given starting raw scores to every row's raw score: a model's predictions on the
    raw rows (``init_model``) or the user's ``init_score``.

    ``score_blocks``: the partition's rows' scores, block by block in row order, each of shape
    (rows_i,) or (rows_i, n_outputs), float64."""
    s = np.concatenate([np.asarray(b, dtype=Y_DTYPE).reshape(len(b), -1) for b in score_blocks])
    if s.shape != data.raw_score.shape[::-1]:
        raise ValueError(f"starting scores of shape {s.shape} for a partition of "
                         f"{data.raw_score.shape[1]} rows and {data.raw_score.shape[0]} outputs.")
    return replace(data, raw_score=data.raw_score + s.T)


def partition_label_stats(data: PartitionData, objective):
    """Per-partition label statistics for ``objective.init_score_from_stats`` (added across partitions)."""
    return objective.label_stats(data.y, data.weight)


def partition_gradients(data: PartitionData, objective, selected_rows: bool = False,
                        with_goss_keys: bool = False) -> PartitionData:
    """Gradients and hessians of every output from the current raw scores (every row; a
    previous round's row selection is dropped).

    ``selected_rows``: only the rows of the round's selection (``data.rows``, set by a
    bagging round's :func:`~oocgbdt.core.sampling.partition_select_rows`, which reads no
    gradient) get gradients, and the selection is kept; the other rows' entries are left
    unset, and nothing reads them (the tree reads its rows alone). For an objective whose
    rows are independent (:attr:`~oocgbdt.core.objectives.Objective.row_wise`): each row's
    values are those of the every-row call, bit for bit. A 30% bag of 200,000 rows (binary):
    0.88 against 1.48 ms.

    ``with_goss_keys`` (every row): the rows' GOSS key bits are computed from the new
    gradients in the same task (:func:`oocgbdt.core.sampling.partition_goss_keys`), which
    saves a GOSS round one task per partition."""
    k, n = data.raw_score.shape
    if selected_rows and data.rows is not None:
        rows = data.rows
        m = rows.shape[0]
        grad = np.empty((m, k), dtype=G_H_DTYPE)
        hess = np.empty((m, k), dtype=G_H_DTYPE)
        weight = None if data.weight is None else data.weight.take(rows)
        objective.gradients(data.y.take(rows), np.ascontiguousarray(data.raw_score[:, rows].T),
                            weight, grad, hess)
        gradients = np.empty((k, n), dtype=G_H_DTYPE)
        hessians = np.empty((k, n), dtype=G_H_DTYPE)
        scatter_selected_rows(grad, hess, rows, gradients, hessians)
        return replace(data, gradients=gradients, hessians=hessians, quantized=None,
                       goss_bits=None)
    grad = np.empty((n, k), dtype=G_H_DTYPE)
    hess = np.empty((n, k), dtype=G_H_DTYPE)
    if getattr(objective, "needs_queries", False):
        if data.queries is None:
            raise ValueError(f"objective {objective.name!r} needs query groups: pass group= "
                             f"(the query sizes of the training rows)")
        extra = {} if data.positions is None else {"positions": data.positions}
        objective.rank_gradients(data.y, np.ascontiguousarray(data.raw_score.T), data.weight,
                                 data.queries, grad, hess, first_query=data.first_query,
                                 **extra)
    else:
        objective.gradients(data.y, np.ascontiguousarray(data.raw_score.T), data.weight, grad,
                            hess)
    out = replace(data, gradients=np.ascontiguousarray(grad.T),
                  hessians=np.ascontiguousarray(hess.T), rows=None, quantized=None,
                  goss_bits=None)
    return partition_goss_keys(out) if with_goss_keys else out


#: In process, a partition's histograms of a pass are cut into column blocks (run on the
#: executor's threads beside the other partitions' blocks) only when each block adds at least
#: this many cells (rows x columns): below it, a hand-off to a thread costs more than the block.
MIN_BLOCK_CELLS = 2 ** 15
#: ... and, when the pass has at least one partition per thread (each thread then has a
#: partition to route and build), only when the partition's pass adds at least this many
#: cells: each call costs Python under the GIL that the other thread waits for. ``python -m
#: benchmarks.shared_passes --choice blocks`` (2 threads; 400k x 50 and x 100: 2 partitions,
#: 1M x 100: 4): passes cut into blocks took 1.10-1.31x the time of whole partitions under
#: 2^20 cells (all partitions'), 1.03-1.12x from 2^20 to 2^21, and 0.94-1.05x above.
MIN_PARTITION_BLOCK_CELLS = 2 ** 20


@dataclass
class PassWork:
    """One partition's histograms of a pass, routed and not yet built: what
    :func:`build_block` adds to by column blocks (each block every row list's cells of its
    columns, the count row with block 0: every cell gets the same additions in the same order
    whatever the blocks, so the histograms are bit-identical to one build), and
    :func:`finish_pass` hands on as the pass's ``(TreeRows, histograms)`` result.

    ``hist`` has shape (len(row_lists), n_hist_bins, 2), float64, zeroed; ``root_extra``: the
    root pass with bundling, ``(feature column, n_bins)`` whose histogram is appended after the
    bundles' (see :func:`partition_root`), else None. ``every_row``: the one row list is every
    row of ``X`` in order (a root), which the kernels then read without the list.
    """

    rows: TreeRows
    X: np.ndarray
    offsets: np.ndarray
    columns: np.ndarray
    gradients: np.ndarray
    hessians: np.ndarray
    row_lists: list
    hist: np.ndarray
    root_extra: tuple | None = None
    root: bool = False
    every_row: bool = False

    @property
    def cells(self) -> int:
        """Histogram cells the pass adds: rows of every list x built columns."""
        return sum(int(r.shape[0]) for r in self.row_lists) * int(self.columns.shape[0])


def build_block(work: PassWork, block: int, n_blocks: int) -> None:
    """Add block ``block`` of ``n_blocks`` consecutive blocks of ``work``'s columns into its
    histograms (in place; every block must be built once before :func:`finish_pass`).

    A block whose histogram slice exceeds :data:`HIST_BLOCK_BYTES` (:data:`EVERY_ROW_BLOCK_BYTES`
    over every row) is added as consecutive sub-blocks under that size, one after another on
    this thread (:func:`cache_blocks`): every cell still gets the same additions in the same
    row order."""
    n = work.columns.shape[0]
    lo, hi = n * block // n_blocks, n * (block + 1) // n_blocks
    k = cache_blocks(work, hi - lo)
    # every row in order (a root on all rows or on a compact subset): the kernels read no index
    lists = [None] if work.every_row else work.row_lists
    quantized = _is_quantized(work.gradients)
    for j, r in enumerate(lists):
        for b in range(k):
            cols = work.columns[lo + (hi - lo) * b // k:lo + (hi - lo) * (b + 1) // k]
            count_rows = block == 0 and b == 0
            if quantized:
                build_histogram_int(work.X, work.offsets, cols, work.gradients, r, work.hist[j],
                                    count_rows)
            else:
                build_histogram_block(work.X, work.offsets, cols, work.gradients,
                                      work.hessians, r, work.hist[j], count_rows)


#: The most bytes of histogram one kernel call adds into (about) over a row list: a partition's
#: pass on 100 x 255 bins (408 KB of float64 pairs) built as two column blocks of 204 KB took
#: 0.125 s per tree on 500k rows and one thread against 0.144 s as one block (a miss in the 64
#: pages the core's first-level TLB maps is the likely cause: the histogram's cells are touched
#: at random). Smaller blocks pay only on large leaves, since each block reads its rows again
#: (``python -m benchmarks.histogram_blocks``, 250,000 rows x 100 columns: 0.923 ns per cell in
#: blocks of 100 KiB against 0.993 in blocks of 199 KiB over a tenth of the rows, 1.452 against
#: 1.160 over 3%); in fits they lose (``--fit``: 128 KiB gave 307 against 293 ms of passes per
#: tree on 1M x 100, 114 against 109 on 400k x 100).
HIST_BLOCK_BYTES = 2 ** 18
#: The same over every row in order (a root, no row list). It was 64 KiB while the kernel read
#: one bin per load: the rows are read in sequence, and smaller blocks paid then. Since a row's
#: bins are read a word at a time (:func:`oocgbdt.kernels.histogram.add_consecutive`), the
#: larger block is faster in fits (``python -m benchmarks.histogram_blocks --fit --features 50
#: 100 --rows 400000``, one thread, ms of passes per tree): 58.4 against 61.0 on 50 columns,
#: 114.1 against 121.3 on 100 (the kernel before words, in its best pair, 64.7 and 124.6).
EVERY_ROW_BLOCK_BYTES = 2 ** 18


def cache_blocks(work: PassWork, n_columns: int) -> int:
    """Sub-blocks that :func:`build_block` cuts ``n_columns`` of ``work``'s columns into, so
    that each adds into at most about :data:`HIST_BLOCK_BYTES` of one histogram
    (:data:`EVERY_ROW_BLOCK_BYTES` when the pass reads every row in order), estimated from the
    histogram's bytes per column of ``work.X``.

    A quantized pass over every row is one block: the integer kernel adds each run of rows
    into narrow cells of 4 bytes per bin, a quarter of a float pair, and every call reads
    the rows' packed gradients again to find its runs. Measured with ``python -m
    benchmarks.quantized --datasets synthetic_1m`` (1M x 100, 2 threads, medians of 3):
    quantized histogram passes 13.77 s in 64 KiB sub-blocks against 12.19 s in one block,
    the fit 17.64 against 15.74 s (float 18.12 and 18.25 s in the same runs)."""
    if n_columns <= 1:
        return 1
    if work.every_row and _is_quantized(work.gradients):
        return 1
    per_column = work.hist[0].nbytes / max(1, work.X.shape[1])
    limit = EVERY_ROW_BLOCK_BYTES if work.every_row else HIST_BLOCK_BYTES
    return int(min(n_columns, max(1, -(-int(n_columns * per_column) // limit))))


def block_count(cells: int, n_threads: int, n_partitions: int = 1) -> int:
    """Column blocks of one partition's pass histograms on ``n_threads`` threads: one per
    thread (each partition's blocks queue behind the others', so unequal partitions still
    keep every thread busy), fewer where blocks would fall under :data:`MIN_BLOCK_CELLS`; one
    when the pass has ``n_partitions >= n_threads`` and this partition's ``cells`` are under
    :data:`MIN_PARTITION_BLOCK_CELLS`."""
    if int(n_partitions) >= int(n_threads) and int(cells) < MIN_PARTITION_BLOCK_CELLS:
        return 1
    return max(1, min(int(n_threads), int(cells) // MIN_BLOCK_CELLS))


def finish_pass(work: PassWork):
    """The pass's ``(TreeRows, histograms)`` result once every block is built: the stacked
    histograms of a split pass, or the root's histogram (with its bundled totals feature
    appended, see :func:`partition_root`)."""
    if not work.root:
        return work.rows, work.hist
    hist = work.hist[0]
    if work.root_extra is None:
        return work.rows, hist
    column, nb, meta = work.root_extra
    if column is not None:
        extra = np.zeros((nb + 1, 2), dtype=HIST_DTYPE)  # its own count row, dropped
        build_histogram(column[:, None], np.array([1, nb + 1], dtype=np.int64),
                        np.zeros(1, dtype=np.int64), work.gradients, work.hessians,
                        None if work.every_row else work.rows.order, extra)
        extra = extra[1:]
    else:  # no searchable feature: the first built column's slice sums to the leaf as well
        c = int(meta.hist_columns[0])
        extra = hist[meta.bundle_offsets[c]:meta.bundle_offsets[c + 1]].copy()
    return work.rows, np.concatenate([hist, extra])


@inline_task
def finish_split_pass(work: PassWork):
    """:func:`finish_pass` of a split pass, which only picks its fields (executors on threads
    run it inline)."""
    return finish_pass(work)


def _built(work: PassWork):
    """``work`` built as one block and finished: the single-thread pass."""
    build_block(work, 0, 1)
    return finish_pass(work)


def _gradient_inputs(data: PartitionData, class_idx: int) -> tuple:
    """The per-row values histograms add: ``(gradients, hessians)`` float32 of output
    ``class_idx``, or with quantized training the packed integers twice (``(packed, packed)``:
    the row selection copies both items, so a subset holds them as it holds float pairs)."""
    if data.quantized is not None:
        return data.quantized, data.quantized
    return data.gradients[class_idx], data.hessians[class_idx]


def _is_quantized(gradients: np.ndarray) -> bool:
    return gradients.dtype == QUANT_DTYPE


def _empty_histograms(n: int, meta: FeatureMeta, gradients: np.ndarray) -> np.ndarray:
    """``n`` zeroed histograms: float64 ``(n, n_hist_bins, 2)``, or with quantized gradients
    int64 ``(n, n_hist_bins, 1)`` packed cells (:mod:`oocgbdt.kernels.quantize`)."""
    if _is_quantized(gradients):
        return np.zeros((n, meta.n_hist_bins, 1), dtype=QUANT_DTYPE)
    return np.zeros((n, meta.n_hist_bins, 2), dtype=HIST_DTYPE)


def _tree_inputs(data: PartitionData, rows: TreeRows, class_idx: int):
    """``(X_binned, gradients, hessians)`` that ``rows`` index: the tree's compact subset, or the
    partition's own arrays (bins read from the cache once per call)."""
    if rows.subset is not None:
        return rows.subset[1:]
    return (partition_bins(data),) + _gradient_inputs(data, class_idx)


def _feature_column(X: np.ndarray, meta: FeatureMeta, f: int) -> np.ndarray:
    """Feature ``f``'s bins on every row of the partition's bins ``X`` (decoded from its bundle when
    bundled)."""
    if not meta.bundled:
        return X[:, f]
    out = np.empty(X.shape[0], dtype=X.dtype)
    decode_feature_column(X[:, meta.feature_bundle[f]], meta.feature_start[f],
                          meta.n_bins[f], meta.default_bins[f], meta.feature_raw[f], out)
    return out


def partition_compact_columns(data: PartitionData, meta: FeatureMeta) -> PartitionData:
    """Keep with the partition the compact copy of the columns the round's trees build
    (``PartitionData.compact``), made only when the selection changes: feature screening usually
    keeps the same features round after round (EMA-FS on the benchmark's 1M x 100 set: the
    same 30 in every round after its warm-up), so each tree's copy (about 9 ms per 500k x 30)
    is made once (``partition_root`` takes its copy from here as well, the kept one when it
    matches). None when the round builds many columns, or with the disk cache."""
    X = data.X_binned
    if (not isinstance(X, np.ndarray)
            or meta.hist_columns.shape[0] > COLUMNS_MAX_FRACTION * X.shape[1]):
        return data if data.compact is None else replace(data, compact=None)
    columns = meta.hist_columns
    if data.compact is not None and np.array_equal(data.compact[0], columns):
        return data
    return replace(data, compact=(columns, X.take(columns, axis=1)))


def partition_root(data: PartitionData, class_idx: int, meta: FeatureMeta, max_leaves: int):
    """Start a tree on a partition: the round's rows (``data.rows``, else every row) in leaf 0;
    returns ``(TreeRows, root histogram)``.

    With bundling, the histogram of feature ``meta.totals_feature`` decoded from its bundle is
    appended after the bundle rows: its sum gives the root totals exactly as without bundling
    (:func:`oocgbdt.core.split.leaf_totals`). :func:`finish_root` drops it again.
    """
    return _built(start_root(data, class_idx, meta, max_leaves))


def start_root(data: PartitionData, class_idx: int, meta: FeatureMeta, max_leaves: int) -> PassWork:
    """:func:`partition_root` up to its histogram: the :class:`PassWork` to build."""
    X = partition_bins(data)
    grad, hess = _gradient_inputs(data, class_idx)
    in_memory = isinstance(data.X_binned, np.ndarray)
    full_X = X
    # The same additions in the same order, on a compact copy of the built columns when the
    # tree builds few (the partition's own when the boosting loop kept one for this selection).
    compact = partition_compact_columns(data, meta).compact
    columns = None
    if compact is not None:
        columns, X = compact
    subset = None
    every_row = True  # order is 0 .. len - 1 over X's rows
    if data.rows is None:
        order = np.arange(data.n_rows, dtype=LEAF_DTYPE)
    elif in_memory and data.rows.shape[0] <= SUBSET_MAX_FRACTION * data.n_rows:
        # A compact copy of the round's rows, in the same (ascending) order: every histogram
        # adds the same values in the same order as on the whole partition. Not with the disk
        # cache, whose bins are read per pass so that memory stays bounded.
        # (take: a row copy per index; X[rows] with int32 indices is about 8 times slower)
        X, grad, hess = (X.take(data.rows, axis=0), grad.take(data.rows),
                         hess.take(data.rows))
        subset = (data.rows, X, grad, hess)
        order = np.arange(data.rows.shape[0], dtype=LEAF_DTYPE)
    else:
        order = data.rows.copy()
        every_row = False
    if columns is not None and subset is None:
        subset = (None, X, grad, hess)
    begin = np.zeros(max_leaves, dtype=np.int64)
    count = np.zeros(max_leaves, dtype=np.int64)
    count[0] = order.shape[0]
    rows = TreeRows(order, begin, count, subset, columns)
    extra = None
    if meta.bundled and not _is_quantized(grad):  # integer totals: any column's slice
        f = meta.totals_feature
        # Every feature alone in its column (dense data): the feature's own slice of the
        # histogram is its histogram, appended as it is (the same sums, no decoding pass).
        if meta.feature_bundle[f] >= 0 and not meta.expand_is_copy:
            if subset is not None and subset[0] is not None:
                # the subset's own copy when it holds every column
                full_X = X if columns is None else full_X.take(subset[0], axis=0)
            extra = (_feature_column(full_X, meta, f), int(meta.n_bins[f]), meta)
        else:
            extra = (None, 0, meta)
    offsets, cols = rows.hist_layout(meta)
    hist = _empty_histograms(1, meta, grad)
    return PassWork(rows, X, offsets, cols, grad, hess, [order], hist, extra, root=True,
                    every_row=every_row and order.shape[0] == X.shape[0])


#: Which children of a split a pass histograms from rows (see :class:`SplitPlan`).
BUILD_LEFT, BUILD_RIGHT, BUILD_BOTH = 0, 1, 2


@dataclass(frozen=True)
class SplitPlan:
    """The splits one pass applies, and which children it histograms directly.

    Split ``i`` turns leaf ``leaves[i]`` into a left child that keeps that id and a right child
    ``right_leaves[i]``, by ``splits[i]``. ``build[i]`` says which children the pass histograms
    from rows: :data:`BUILD_LEFT`, :data:`BUILD_RIGHT` (the other child is the parent's histogram
    minus the built one) or :data:`BUILD_BOTH` (the parent's histogram is not kept).

    The histograms of a pass are stacked in split order, left before right where both are built:
    :meth:`built` lists ``(split index, side)`` per stacked slot (side 0 left, 1 right).
    """

    leaves: tuple
    right_leaves: tuple
    splits: tuple
    build: tuple

    def built(self) -> list:
        """``(split index, side)`` of each stacked histogram slot (side 0 left, 1 right)."""
        out = []
        for i, b in enumerate(self.build):
            if b == BUILD_BOTH:
                out += [(i, 0), (i, 1)]
            else:
                out.append((i, int(b == BUILD_RIGHT)))
        return out


def partition_split_many(data: PartitionData, prev, class_idx: int, meta: FeatureMeta, plan: SplitPlan):
    """Route the rows of every split leaf of ``plan`` and histogram the children it builds, in one
    task per partition.

    ``prev`` is the previous pass's ``(TreeRows, histograms)`` result of this partition, consumed:
    leaves own disjoint segments of ``TreeRows.order``, so each split partitions its segment in
    place; the left child keeps the leaf's id, the right child gets its ``right_leaves`` id.
    Bins held in memory are routed from their column-major copy (:func:`start_split_many`): on
    500k x 100 rows and one thread, 0.124 -> 0.108 s of passes per tree.

    Returns
    -------
    rows : TreeRows
    hist : ndarray of shape (len(plan.built()), n_hist_bins, 2), dtype float64
        The built children's histograms, stacked in :meth:`SplitPlan.built` order (one ndarray,
        so :func:`sum_histograms` adds passes' partials as it adds single histograms).
    """
    return _built(start_split_many(data, prev, class_idx, meta, plan))


def start_split_many(data: PartitionData, prev, class_idx: int, meta: FeatureMeta,
                     plan: SplitPlan) -> PassWork:
    """:func:`partition_split_many` up to its histograms (the rows routed): the
    :class:`PassWork` to build.

    Bins held in memory are routed from their column-major copy (made once per partition,
    ``PartitionData.column_cache``; one more byte per bin): a leaf's ascending rows then read
    one contiguous column instead of one cache line per row (LightGBM routes from its
    per-feature bins too). A tree's compact subset of rows is routed from the same copy, each
    of its rows read where the partition holds it (``rowmap``). The same routing. A tree's
    compact columns, and bins read from the disk cache, are routed as they are.
    """
    rows = tree_rows_only(prev)
    X, grad, hess = _tree_inputs(data, rows, class_idx)
    X_route, rowmap = X, None
    if rows.columns is None and isinstance(data.X_binned, np.ndarray):
        X_route = column_major_bins(data)
        if rows.subset is not None:
            rowmap = rows.subset[0]  # the subset's rows in the partition, ascending
    # Routed in place: the previous pass's grouping is consumed by this pass (nothing reads
    # it again), and each split reads its segment whole before rewriting it (split_rows).
    order = rows.order
    leaf_begin = rows.leaf_begin.copy()
    leaf_count = rows.leaf_count.copy()
    for leaf, right_leaf, split in zip(plan.leaves, plan.right_leaves, plan.splits):
        f = split.feature
        begin, count = int(rows.leaf_begin[leaf]), int(rows.leaf_count[leaf])
        missing_type, bounds, bits = meta.missing_types[f], _NO_CAT_BOUNDS, _NO_CAT_BITS
        if split.cat_bins is not None:  # the bin bitset of the split's left categories
            bits = construct_bitset(split.cat_bins)
            missing_type, bounds = CATEGORICAL_NODE, np.array([0, bits.shape[0]], dtype=np.int64)
        # How to route, from the split's estimated counts (the result is the same either way).
        est_left, est_right = split.left.count, split.right.count
        skewed = min(est_left, est_right) < SKEWED_SHARE * (est_left + est_right)
        if meta.bundled:
            n_left = split_rows_bundled(X_route[:, rows.column(meta.feature_bundle[f])], rows.order, begin, count,
                                        split.threshold_bin, split.default_left,
                                        missing_type, meta.default_bins[f],
                                        meta.n_bins[f] - 1, bounds, bits, meta.feature_start[f],
                                        meta.n_bins[f], meta.feature_raw[f], order, skewed,
                                        rowmap)
        else:
            n_left = split_rows(X_route[:, rows.column(f)], rows.order, begin, count, split.threshold_bin,
                                split.default_left, missing_type, meta.default_bins[f],
                                meta.n_bins[f] - 1, bounds, bits, order, skewed, rowmap)
        leaf_count[leaf] = n_left
        leaf_begin[right_leaf] = begin + n_left
        leaf_count[right_leaf] = count - n_left
    new_rows = TreeRows(order, leaf_begin, leaf_count, rows.subset, rows.columns)
    built = plan.built()
    hist = _empty_histograms(len(built), meta, grad)
    offsets, columns = new_rows.hist_layout(meta)
    row_lists = [new_rows.rows_of(plan.right_leaves[i] if side else plan.leaves[i])
                 for i, side in built]
    return PassWork(new_rows, X, offsets, columns, grad, hess, row_lists, hist)


def histogram_rows(hist: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """The count row and rows ``[lo, hi)`` of a histogram, or of each of stacked histograms:
    one feature block (:func:`oocgbdt.core.split.feature_blocks`) with the leaf's row
    count. A view for the first segment (``lo == 1``), else a copy."""
    if lo == 1:
        return hist[..., :hi, :]
    return np.concatenate([hist[..., :1, :], hist[..., lo:hi, :]], axis=-2)


@inline_task
def tree_rows_only(prev) -> TreeRows:
    """A partition's pass result without its partial histograms (which the reduction has consumed):
    what is kept until the next pass, so partial histograms do not outlive their pass."""
    return prev[0] if isinstance(prev, tuple) else prev


@inline_task
def histograms_only(result):
    """A partition's pass result without its row grouping: the partial histograms alone (the same
    array, not a copy). The reduction reads these, so a partial sent to another worker carries
    no ``TreeRows`` (whose order array is 4 bytes per row)."""
    return result[1] if isinstance(result, tuple) else result


def sum_histograms(parts, consume=False) -> np.ndarray:
    """Combine step of the fan-in tree: add histograms (or ``(TreeRows, histogram)`` results).
    One part is returned as it is, not copied: nothing modifies a histogram it does not own
    (a step that consumes its inputs, below, owns them), so a copy would only cost its bytes.

    ``consume``: the parts are never read again (in process, where a step is never run twice):
    the sum is made in the first part's array instead of a fresh one (the same additions in the
    same order)."""
    hists = [histograms_only(p) for p in parts]
    if len(hists) == 1:
        return hists[0]
    # one pass over the two first parts (not a copy, then an add)
    out = np.add(hists[0], hists[1], out=hists[0] if consume else None)
    for h in hists[2:]:
        out += h
    return out


def _without_totals_rows(hist: np.ndarray, meta: FeatureMeta) -> np.ndarray:
    return hist[:meta.n_hist_bins] if hist.shape[0] > meta.n_hist_bins else hist


def finish_root(parts, meta: FeatureMeta, params: SplitParams, node=None):
    """Final task of the root pass: ``((totals, best split or None, feature_gains, node),
    histogram)``.

    ``parts`` are the last level's partial histograms (or partition results), summed here once.
    ``feature_gains`` (n_features,) is each feature's best split gain (``-inf``: none). ``node``
    is the :class:`~oocgbdt.core.node_sampling.NodeSampler` (or None), returned advanced past
    the root's draws. The first item is what the client reads (small; :func:`pass_records`);
    the second is the root's histogram, shape (n_hist_bins, 2), kept for later passes
    (:func:`pass_histogram`), without the totals rows of :func:`partition_root`.
    """
    hist = sum_histograms(parts)
    totals = leaf_totals(hist, meta, params)
    kept = _without_totals_rows(hist, meta)
    if totals.count < 2 * params.min_data_in_leaf:  # LightGBM's BeforeFindBestSplit, see below
        return (totals, None, np.full(meta.n_bins.shape[0], -np.inf), node), kept
    node_mask = None
    states = None
    if node is not None:
        (node_mask,), node = node.node_masks((), meta.n_bins.shape[0], 1)
        states = node.extra_copy()
    split, gains = best_split(hist, totals, meta, params, node_mask=node_mask,
                              rand_states=states)
    if node is not None:
        node = node.with_extra(states)
    return (totals, split, gains, node), kept


def pass_records(result):
    """The small part of a :func:`finish_root` / :func:`finish_split_many` result: what the
    client waits for (split records and feature gains)."""
    return result[0]


def pass_histogram(result, *index):
    """A histogram kept from a :func:`finish_root` (no ``index``) or :func:`finish_split_many`
    (``index = (split, side)``) result: the same array, not a copy."""
    hist = result[1]
    for i in index:
        hist = hist[i]
    return hist


def _with_count(totals: LeafTotals, count: float) -> LeafTotals:
    """``totals`` with the row count ``count`` (``dataclasses.replace`` without its ~6 us of
    field introspection, twice per pass)."""
    return LeafTotals(totals.sum_gradients, totals.sum_hessians, count, totals.packed)


def finish_split_many(parents, parts, plan: SplitPlan, meta: FeatureMeta, params: SplitParams,
                      node=None, branches=None, threads=None, consume_parents=False):
    """Final task of a split pass: both children's best splits for every split of ``plan``, and
    both children's histograms.

    Parameters
    ----------
    parents : sequence of ndarray of shape (n_hist_bins, 2), or None, one per split
        The split leaf's histogram where one child is built (the other is parent minus it);
        None where both children are built.
    parts : list
        The last reduction level's stacked partial histograms (or partition results), summed here.
    plan : SplitPlan
    meta, params : FeatureMeta, SplitParams
    node : NodeSampler or None
        Per-node feature rules (:mod:`oocgbdt.core.node_sampling`): each searched split draws
        its children's node masks, the smaller child's first (fewer true rows; the right one on
        a tie), and searches them in that order (the extra_trees streams advance per search).
    branches : sequence of tuple of int, one per split, or None
        The features on the branch of each split's children (the parent's branch and the
        split's feature): what ``interaction_constraints`` read.
    threads : KernelThreads or None
        Without per-node rules (``node`` None: no search draws random numbers) and with at
        least :data:`MIN_THREADED_SEARCH_BINS` bins, the children's searches run on these
        threads at once; each is the same call on the same inputs.
    consume_parents : bool, default False
        Write each sibling (parent minus the built child) into its parent's array, which the
        caller then no longer reads: no new array for it, and its parent's memory is written
        once instead of read into a fresh one (in process: 35 -> 18 us per pass on 50 x 255
        bins, and the sibling's search reads warmer memory). Only for a caller that passes
        each parent once and never runs the step again (the in-process executor); a step that
        may be retried must leave its inputs as they were.

    Returns
    -------
    ((records, feature_gains, node), children)
        ``records``: list of ``(left SplitInfo or None, right SplitInfo or None)``, one per
        split, searched with the children's true row counts (read off their histograms; the
        split's own SplitInfo estimates them from hessians); ``feature_gains``: ndarray of
        shape (n_splits, n_features), dtype float64, per split each feature's best split gain
        over its two children (``-inf``: none; per split, so that a grower splitting leaves
        ahead of their turn counts only the splits it applies, see
        :meth:`~oocgbdt.core.histogram_source.HistogramSource.commit`). This first item is
        what the client reads (:func:`pass_records`), with ``node`` advanced past the pass's
        draws (None without one). ``children``: per split, ``[left, right]``
        histograms of shape (n_hist_bins, 2), float64, the built one summed from ``parts`` and
        its sibling as parent minus it, made once here for the search and kept for later passes
        without a copy (:func:`pass_histogram`).
    """
    built = sum_histograms(parts)
    children = [[None, None] for _ in plan.leaves]
    for j, (i, side) in enumerate(plan.built()):
        # one slot: the summed array itself; several: a copy each, so a kept child does not
        # hold its pass's other slots alive (the histogram pool counts histograms)
        children[i][side] = built[j] if built.shape[0] == 1 else built[j].copy()
    for i, pair in enumerate(children):
        if pair[0] is None or pair[1] is None:
            side = 0 if pair[0] is None else 1
            out = parents[i] if consume_parents else None
            pair[side] = np.subtract(parents[i], pair[1 - side], out=out)
    gains = np.empty((len(plan.splits), meta.n_bins.shape[0]))
    gains.fill(-np.inf)  # np.full's Python wrapper cost twice this in fits
    small = 2 * params.min_data_in_leaf
    if threads is not None and node is None and meta.n_hist_bins >= MIN_THREADED_SEARCH_BINS:
        return _search_children_at_once(children, plan, meta, params, gains, small, threads)
    records = []
    for i, split in enumerate(plan.splits):
        pair = children[i]
        # The children's true row counts (the split's own are estimated from hessians).
        counts = (float(pair[0][0, 0]), float(pair[1][0, 0]))
        if counts[0] < small and counts[1] < small:
            # LightGBM (SerialTreeLearner::BeforeFindBestSplit) searches neither sibling when
            # both hold fewer than 2 x min_data_in_leaf rows (true counts): with min_data_in_leaf
            # checked on hessian-estimated counts, a search could otherwise still split them.
            records.append((None, None))
            continue
        child_meta = split.child_meta(meta)  # features without a valid split here are skipped below
        masks = [None, None]
        states = None
        # LightGBM searches the smaller child first (SerialTreeLearner::Split).
        order = (0, 1) if counts[0] < counts[1] else (1, 0)
        if node is not None:
            drawn, node = node.node_masks(branches[i], meta.n_bins.shape[0], 2)
            masks[order[0]], masks[order[1]] = drawn
            states = node.extra_copy()
        contexts = split.child_contexts(params)
        found = [None, None]
        for side in order:
            child = split.left if side == 0 else split.right
            found[side] = best_split(pair[side], _with_count(child, counts[side]), child_meta,
                                     params, contexts[side], node_mask=masks[side],
                                     rand_states=states)
        if node is not None:
            node = node.with_extra(states)
        (left, left_gains), (right, right_gains) = found
        np.maximum(left_gains, right_gains, out=gains[i])
        records.append((left, right))
    return (records, gains, node), children


#: A pass's children are searched on the executor's threads at once only when each search
#: reads at least this many histogram bins: the split scan costs about 5 ns per bin, and a
#: hand-off to a thread and back about 0.1 ms (measured in process: on 50 features of 255
#: bins, searching on two threads made the passes' final steps 40% slower).
MIN_THREADED_SEARCH_BINS = 2 ** 15


def _search_children_at_once(children, plan, meta, params, gains, small, threads):
    """:func:`finish_split_many`'s searches without per-node rules, every child's on
    ``threads`` at once: the same :func:`best_split` calls as one after the other."""
    calls, slots = [], []
    for i, split in enumerate(plan.splits):
        pair = children[i]
        counts = (float(pair[0][0, 0]), float(pair[1][0, 0]))
        if counts[0] < small and counts[1] < small:
            continue  # neither sibling is searched (see finish_split_many)
        child_meta = split.child_meta(meta)
        contexts = split.child_contexts(params)
        for side, child in ((0, split.left), (1, split.right)):
            calls.append(lambda h=pair[side], t=_with_count(child, counts[side]),
                         m=child_meta, c=contexts[side]: best_split(h, t, m, params, c))
            slots.append((i, side))
    found = threads.run(calls)
    records = [[None, None] for _ in plan.splits]
    for (i, side), (rec, g) in zip(slots, found):
        records[i][side] = rec
        gains[i] = np.maximum(gains[i], g)
    return ([tuple(r) for r in records], gains, None), children


# ---- finished trees and evaluation --------------------------------------------------------------------------


def _node_layout(t) -> tuple:
    """``(split_column, split_start, split_n_bins, split_raw)`` of the tree of binned arrays
    ``t``: its own with bundles, else per-feature bins (each node's feature, raw)."""
    if "split_column" in t:
        return t["split_column"], t["split_start"], t["split_n_bins"], t["split_raw"]
    n_nodes = t["split_feature"].shape[0]
    return (t["split_feature"].astype(np.int64), np.zeros(n_nodes, dtype=np.int64),
            np.zeros(n_nodes, dtype=np.int64), np.ones(n_nodes, dtype=np.bool_))


def binned_leaves(X, t) -> np.ndarray:
    """Each row's leaf (int32, shape (n_rows,)) in the tree of binned arrays ``t``
    (:meth:`~oocgbdt.core.tree.Tree.binned_arrays`, bundled or not), every row walked: by
    :func:`~oocgbdt.kernels.predict.leaves_binned` when every split is numerical and reads its
    feature's own bins (no bundle merges it with others), else by a walk that adds leaf numbers
    into zeros."""
    if (not np.any(t["missing_type"] == CATEGORICAL_NODE)
            and ("split_column" not in t or bool(np.all(t["split_raw"])))):
        leaf = np.empty(X.shape[0], dtype=np.int32)
        leaves_binned(X, t["split_column" if "split_column" in t else "split_feature"],
                      t["threshold_bin"], t["default_left"], t["missing_type"], t["default_bin"],
                      t["nan_bin"], t["left_child"], t["right_child"], leaf)
        return leaf
    leaf = np.zeros(X.shape[0], dtype=np.float64)
    numbers = np.arange(t["leaf_value"].shape[0], dtype=np.float64)
    if "split_column" in t:
        predict_binned_bundled(X, t["split_column"], t["split_start"], t["split_n_bins"],
                               t["split_raw"], t["threshold_bin"], t["default_left"],
                               t["missing_type"], t["default_bin"], t["nan_bin"],
                               t["left_child"], t["right_child"], numbers,
                               t["cat_boundaries"], t["cat_threshold"], leaf)
    else:
        predict_binned(X, t["split_feature"], t["threshold_bin"], t["default_left"],
                       t["missing_type"], t["default_bin"], t["nan_bin"], t["left_child"],
                       t["right_child"], numbers, t["cat_boundaries"], t["cat_threshold"], leaf)
    return leaf.astype(np.int32)


def partition_apply_tree(data: PartitionData, tree_arrays: dict, class_idx: int,
                         rows: TreeRows | None = None, by_column: bool = True) -> PartitionData:
    """Add one finished tree's output (walked on bins, values already shrunk) to the raw scores,
    and count the round's rows in each leaf (``PartitionData.leaf_counts``).

    ``tree_arrays`` comes from :meth:`oocgbdt.core.tree.Tree.binned_arrays`, plus, for bundled
    partitions, :meth:`oocgbdt.core.split.FeatureMeta.node_arrays` (each node's feature is then read
    off its bundle column). Used for training and evaluation partitions alike (eval partitions
    are never bundled: they get the arrays without the node arrays); returns a new PartitionData.

    ``rows``: this partition's :class:`TreeRows` after the tree's last pass. When the round used
    every row, each row's leaf is read off its segment
    (:func:`~oocgbdt.kernels.predict.leaves_by_segment`, with ``tree_arrays["routed"]``, the
    grower's :attr:`~oocgbdt.core.grower.TreeGrower.routed`): only the rows of segments whose
    last split no pass routed are decided, at that split, instead of every row walked from the
    root. The same leaves. In a sampled round (``data.rows`` set), the round's rows are placed
    so from their segments and the rows it left out are walked from the root on the row-major
    bins (:func:`~oocgbdt.kernels.predict.leaves_by_walk`). Without ``rows`` (evaluation
    partitions) every row is walked.

    ``by_column`` (default): route the left-out rows down the finished tree from the
    partition's column-major copy of the bins instead
    (:func:`~oocgbdt.kernels.predict.leaves_by_routing`; ``PartitionData.column_cache``, made
    here if the passes have not made it; bins in memory only: the disk cache's are walked), as
    the passes route (:func:`start_split_many`). About half the time of walking every row
    (131,072 x 50 bins, 30% bagging); on 2 workers (1M x 100, 30% bagging) a tree took 0.122 s
    against 0.128-0.138 s with the walk. The same leaves.
    """
    t = tree_arrays
    X = partition_bins(data)
    n_leaves = t["leaf_value"].shape[0]
    if rows is not None:
        leaf = np.empty(X.shape[0], dtype=np.intp)
        layout = _node_layout(t)
        nodes = (t["threshold_bin"], t["default_left"], t["missing_type"], t["default_bin"],
                 t["nan_bin"], t["left_child"], t["right_child"], t["cat_boundaries"],
                 t["cat_threshold"])
        routed = t.get("routed")
        if routed is None:  # always correct: decide each row at its segment's last split
            routed = np.zeros(t["left_child"].shape[0], dtype=np.bool_)
        order = rows.order
        if rows.subset is not None and rows.subset[0] is not None:
            order = rows.subset[0][order]  # positions in the round's subset -> row numbers
        leaves_by_segment(X, order, rows.leaf_begin, rows.leaf_count, *layout, *nodes, routed,
                          leaf)
        if data.rows is not None:
            left_out = np.ones(X.shape[0], dtype=np.bool_)
            left_out[data.rows] = False
            left_out = np.flatnonzero(left_out).astype(LEAF_DTYPE)
            if by_column and isinstance(data.X_binned, np.ndarray):
                leaves_by_routing(column_major_bins(data), left_out, *layout, *nodes, leaf)
            else:
                leaves_by_walk(X, left_out, *layout, *nodes, leaf)
    else:
        # One walk gives each row's leaf; the score then gets its leaf's value, the same single
        # addition per row as adding the value in the walk.
        leaf = binned_leaves(X, t)
    raw = np.empty_like(data.raw_score)
    for c in range(raw.shape[0]):
        if c != class_idx:
            raw[c] = data.raw_score[c]
    add_leaf_values(data.raw_score[class_idx], leaf, t["leaf_value"], raw[class_idx])
    counted = leaf if data.rows is None else leaf.take(data.rows)
    return replace(data, raw_score=raw, leaf_counts=np.bincount(counted, minlength=n_leaves))


def partition_leaf_counts(data: PartitionData) -> np.ndarray:
    """``data.leaf_counts`` (gathered, and added over partitions, for the tree's true leaf counts)."""
    return data.leaf_counts


def partition_metric_partials(data: PartitionData, metrics, objective):
    """Per-partition partial statistics of every metric (merged by :func:`merge_metric_partials`)."""
    raw = np.ascontiguousarray(data.raw_score.T)
    return [m.partial(data.y, raw, data.weight, objective, queries=data.queries)
            if getattr(m, "needs_queries", False) else m.partial(data.y, raw, data.weight, objective)
            for m in metrics]


def partition_set_queries(data: PartitionData, queries) -> PartitionData:
    """Attach the partition's query boundaries (ranking; see :attr:`PartitionData.queries`):
    ``(offsets, first_query)``, or the offsets alone (first query 0)."""
    first = 0
    if isinstance(queries, tuple):
        queries, first = queries
    queries = np.asarray(queries, dtype=np.int64)
    if queries[0] != 0 or queries[-1] != data.n_rows:
        raise ValueError(f"query boundaries must run from 0 to the partition's {data.n_rows} "
                         f"rows, got {queries[0]} to {queries[-1]}")
    return replace(data, queries=queries, first_query=int(first))


def partition_set_positions(data: PartitionData, positions) -> PartitionData:
    """Attach the rows' position ids (unbiased LambdaRank; see :attr:`PartitionData.positions`)."""
    positions = np.asarray(positions, dtype=np.int32)
    if positions.shape != (data.n_rows,):
        raise ValueError(f"positions must have one id per row of the partition ({data.n_rows}), "
                         f"got shape {positions.shape}")
    return replace(data, positions=positions)


def partition_position_sums(data: PartitionData, n_positions: int) -> np.ndarray:
    """Per position id, over the partition's rows: the sum of the gradients, the sum of the
    hessians (float64 sums of the float32 values, in row order, as LightGBM's
    ``UpdatePositionBiasFactors`` with one thread) and the row count; shape (3, n_positions),
    added over partitions."""
    out = np.empty((3, n_positions), dtype=np.float64)
    out[0] = np.bincount(data.positions, weights=data.gradients[0].astype(np.float64),
                         minlength=n_positions)
    out[1] = np.bincount(data.positions, weights=data.hessians[0].astype(np.float64),
                         minlength=n_positions)
    out[2] = np.bincount(data.positions, minlength=n_positions)
    return out


def merge_metric_partials(parts, metrics):
    """Combine step for metric partials: merge lists of per-metric statistics."""
    out = list(parts[0])
    for p in parts[1:]:
        out = [m.merge(a, b) for m, a, b in zip(metrics, out, p)]
    return out
