"""This module contains the exact weighted percentile over partitions, and leaf renewal.

``regression_l1``, ``quantile`` and ``mape`` start from a weighted percentile of the labels and,
after each tree, set every leaf's value to a weighted percentile of its rows' residuals
``y - score`` (LightGBM's ``BoostFromScore`` and ``RenewTreeOutput``,
``src/objective/regression_objective.hpp``, called from ``GBDT::TrainOneIter`` in
``src/boosting/gbdt.cpp`` before shrinkage). Here the rows are spread over partitions and
workers, and no worker sees them all: the percentile is selected centrally from reduced
statistics, exactly.

How: each value gets an order-preserving 64-bit key (and, for the weighted definition, a second
key word, the global row number, so ties are ordered as LightGBM's stable sort orders them). Each
pass (:func:`percentile_histogram`, one task per partition) counts rows and their weight per leaf
in the 256 buckets of the next 8 key bits under the leaf's prefix; the counts are added over
partitions (:func:`sum_arrays`, a fan-in) and :func:`weighted_percentiles` picks, per leaf, the
bucket in which the cumulative count (or weight) passes the target, then descends. 8 passes fix
the value (plus 1 to 5 for the row word when weighted) and one more (:func:`percentile_neighbors`)
finds the neighbouring values the definition interpolates with. Per pass, a partition sends
``n_leaves x 256 x 2`` float64 (126 KiB at 31 leaves), whatever its size. Counts are exact,
weight sums are float64 sums of float32 weights (exact in practice), so the selected rows do not
depend on the partitioning or the number of workers.

The definitions (:func:`lightgbm_percentile`, the in-memory reference):

- unweighted (``PercentileFun``): with ``n`` values sorted in decreasing order,
  ``p = (n - 1) * (1 - alpha)``, ``i = floor(p) + 1``, the value is
  ``v[i-1] - (v[i-1] - v[i]) * (p - i + 1)``; that is numpy's ``quantile(values, alpha)``
  (linear), up to rounding.
- weighted (``WeightedPercentileFun``): values sorted increasingly (stable), ``cdf`` their
  cumulative weights, ``t = cdf[-1] * alpha``, ``i`` the first index with ``cdf[i] > t``
  (clamped to ``n - 1``); ``v[i]`` when ``i`` is 0 or ``n - 1``, else, if the row's weight
  ``cdf[i] - cdf[i-1] >= 1``, ``v[i-1] + (t - cdf[i-1]) / (cdf[i] - cdf[i-1]) * (v[i] - v[i-1])``,
  else ``v[i-1]``. This is what LightGBM 4.7.0 computes (measured: its init scores and leaf
  values for ``quantile`` and ``regression_l1`` with weights, ``tests/core/test_percentile.py``);
  the macro in the 4.6.0.99 source tree interpolates from ``cdf[i]`` with ``cdf[i+1]`` instead,
  which 4.7.0's values do not follow.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oocgbdt.core.executor import tree_reduce
from oocgbdt.core.partition import binned_leaves, partition_bins
from oocgbdt.kernels.percentile import (HI_LEVELS, float_keys, key_neighbors, key_values,
                                        radix_histogram)

__all__ = [
    "PercentileRows",
    "lightgbm_percentile",
    "percentile_rows_of_labels",
    "percentile_rows_of_tree",
    "percentile_histogram",
    "percentile_neighbors",
    "sum_arrays",
    "merge_neighbors",
    "weighted_percentiles",
    "lo_levels_for",
]


@dataclass(frozen=True)
class PercentileRows:
    """One partition's rows as the percentile select reads them.

    ``leaf`` (int32, -1: left out), ``key_hi`` (uint64 keys of the values), ``key_lo`` (uint64,
    the global row number in the top bits; zeros when unweighted), ``weight`` (per-row weights of
    the weighted definition, or None).
    """

    leaf: np.ndarray
    key_hi: np.ndarray
    key_lo: np.ndarray
    weight: np.ndarray | None


def lo_levels_for(total_rows: int) -> int:
    """8-bit levels the row word needs for ``total_rows`` rows."""
    bits = max(1, int(max(total_rows, 1) - 1).bit_length())
    return (bits + 7) // 8


def _row_keys(row_offset, n, lo_levels):
    shift = np.uint64(64 - 8 * lo_levels)
    return (np.arange(n, dtype=np.uint64) + np.uint64(row_offset)) << shift


def percentile_rows_of_labels(data, objective, row_offset: int, lo_levels: int) -> PercentileRows:
    """Every row in leaf 0, valued by its label: the init score's percentile."""
    y = np.asarray(objective.objective_labels(data.y), dtype=np.float64)
    w = objective.percentile_weights(data.y, data.weight)
    lo = _row_keys(row_offset, y.shape[0], lo_levels) if w is not None else np.zeros(
        y.shape[0], dtype=np.uint64)
    return PercentileRows(np.zeros(y.shape[0], dtype=np.int32), float_keys(y), lo, w)


def percentile_rows_of_tree(data, tree_arrays: dict, class_idx: int, objective, row_offset: int,
                            lo_levels: int) -> PercentileRows:
    """The round's rows (``data.rows``, else every row) by leaf of the new tree, valued by their
    residual ``y - score`` (the score before the tree), for leaf renewal."""
    leaf = binned_leaves(partition_bins(data), tree_arrays)
    if data.rows is not None:
        keep = np.full(leaf.shape[0], -1, dtype=np.int32)
        keep[data.rows] = leaf[data.rows]
        leaf = keep
    residual = (np.asarray(objective.objective_labels(data.y), dtype=np.float64)
                - data.raw_score[class_idx])
    w = objective.percentile_weights(data.y, data.weight)
    lo = _row_keys(row_offset, leaf.shape[0], lo_levels) if w is not None else np.zeros(
        leaf.shape[0], dtype=np.uint64)
    return PercentileRows(leaf, float_keys(residual), lo, w)


def percentile_histogram(rows: PercentileRows, level, prefix_hi, prefix_lo, active):
    """Task: (n_leaves, 256, 2) rows and weight per bucket of ``level`` (see the module)."""
    out = np.zeros((active.shape[0], 256, 2), dtype=np.float64)
    radix_histogram(rows.leaf, rows.key_hi, rows.key_lo, rows.weight, int(level), prefix_hi,
                    prefix_lo, active, out)
    return out


def sum_arrays(parts):
    """Combine step: the sum of arrays, in order."""
    out = parts[0]
    for p in parts[1:]:
        out = out + p
    return out


def percentile_neighbors(rows: PercentileRows, item_hi, item_lo, active):
    """Task: per leaf the nearest keys below and above the selected ones (see
    :func:`~oocgbdt.kernels.percentile.key_neighbors`)."""
    n_leaves = active.shape[0]
    pred = np.zeros((n_leaves, 2), dtype=np.uint64)
    succ = np.zeros((n_leaves, 2), dtype=np.uint64)
    succ_w = np.zeros(n_leaves, dtype=np.float64)
    has = np.zeros((n_leaves, 2), dtype=np.bool_)
    key_neighbors(rows.leaf, rows.key_hi, rows.key_lo, rows.weight, item_hi, item_lo, active,
                  pred, succ, succ_w, has)
    return pred, succ, succ_w, has


def _less(a, b):
    return (a[:, 0] < b[:, 0]) | ((a[:, 0] == b[:, 0]) & (a[:, 1] < b[:, 1]))


def merge_neighbors(parts):
    """Combine step of :func:`percentile_neighbors`: the largest predecessor, smallest successor."""
    pred, succ, succ_w, has = (np.array(a) for a in parts[0])
    for p2, s2, w2, h2 in parts[1:]:
        take = h2[:, 0] & (~has[:, 0] | _less(pred, p2))
        pred[take] = p2[take]
        take = h2[:, 1] & (~has[:, 1] | _less(s2, succ))
        succ[take] = s2[take]
        succ_w[take] = w2[take]
        has |= h2
    return pred, succ, succ_w, has


def weighted_percentiles(executor, row_handles, n_leaves: int, alpha: float, weighted: bool,
                         lo_levels: int, split_every: int, key: str, float32: bool = False):
    """Per-leaf percentiles of the rows behind ``row_handles`` (:class:`PercentileRows`).

    Parameters
    ----------
    executor : Executor
    row_handles : list of handles to PercentileRows, one per partition
    n_leaves : int
    alpha : float in (0, 1)
    weighted : bool
        LightGBM's weighted definition (rows carry weights and row keys), else the unweighted one.
    lo_levels : int
        Levels of the row word (:func:`lo_levels_for`); used when ``weighted``.
    split_every, key
        Fan-in of the reductions, and the task-key prefix.
    float32 : bool
        Interpolate in LightGBM's float32 (label) arithmetic and round the result to float32, as
        ``BoostFromScore`` does on labels; residuals use float64.

    Returns
    -------
    values : ndarray of shape (n_leaves,), float64 (NaN for a leaf without rows)
    counts : ndarray of shape (n_leaves,), float64, rows per leaf
    """
    levels = HI_LEVELS + (lo_levels if weighted else 0)
    prefix = np.zeros((n_leaves, 2), dtype=np.uint64)
    active = np.ones(n_leaves, dtype=np.bool_)
    n = len(row_handles)

    def histogram(level):
        parts = executor.map(percentile_histogram, row_handles, [level] * n,
                             [prefix[:, 0].copy()] * n, [prefix[:, 1].copy()] * n,
                             [active.copy()] * n, key=f"{key}-radix{level}")
        return executor.gather(tree_reduce(executor, sum_arrays, parts, split_every,
                                           f"{key}-radixsum{level}"))

    hist = histogram(0)
    counts = hist[:, :, 0].sum(axis=1)
    totals = hist[:, :, 1].sum(axis=1)
    active &= counts > 0
    by_weight = np.zeros(n_leaves, dtype=np.bool_)
    target = np.zeros(n_leaves, dtype=np.float64)
    bias = np.zeros(n_leaves, dtype=np.float64)
    direct = np.zeros(n_leaves, dtype=np.bool_)  # the value is the selected row's
    threshold = totals * alpha
    for lf in np.flatnonzero(active):
        c = counts[lf]
        if c <= 1:
            direct[lf] = True  # the single row: rank 0
            continue
        if weighted:
            if threshold[lf] < totals[lf]:
                by_weight[lf] = True
                target[lf] = threshold[lf]
            else:  # upper_bound found nothing: clamped to the last row
                target[lf] = c - 1
                direct[lf] = True
        else:
            float_pos = (c - 1) * (1.0 - alpha)
            pos = int(float_pos) + 1
            if pos < c:
                target[lf] = c - 1 - pos  # rank of v[pos] in increasing order
                bias[lf] = float_pos - (pos - 1)
            else:  # the minimum: rank 0
                direct[lf] = True
    before = np.zeros((n_leaves, 2), dtype=np.float64)
    item = np.zeros((n_leaves, 2), dtype=np.float64)
    remaining = target.copy()
    for level in range(levels):
        if level > 0:
            hist = histogram(level)
        word = 0 if level < HI_LEVELS else 1
        shift = np.uint64(56 - 8 * (level - word * HI_LEVELS))
        for lf in np.flatnonzero(active):
            col = 1 if by_weight[lf] else 0
            cum = np.cumsum(hist[lf, :, col])
            d = int(np.searchsorted(cum, remaining[lf], side="right"))
            if d >= 256 or hist[lf, d, 0] == 0:  # float rounding at the top: the last bucket
                d = int(np.flatnonzero(hist[lf, :, 0])[-1])
            if d > 0:
                remaining[lf] -= cum[d - 1]
                before[lf] += hist[lf, :d].sum(axis=0)
            prefix[lf, word] |= np.uint64(d) << shift
            item[lf] = hist[lf, d]
    parts = executor.map(percentile_neighbors, row_handles, [prefix[:, 0].copy()] * n,
                         [prefix[:, 1].copy()] * n, [active.copy()] * n, key=f"{key}-neighbors")
    pred, succ, succ_w, has = executor.gather(tree_reduce(executor, merge_neighbors, parts,
                                                          split_every, f"{key}-neighborsum"))
    values = np.full(n_leaves, np.nan)
    v2s = key_values(prefix[:, 0])
    cast = np.float32 if float32 else np.float64
    for lf in np.flatnonzero(active):
        c = counts[lf]
        v2 = cast(v2s[lf])
        if direct[lf]:
            values[lf] = v2
            continue
        if not weighted:
            # v1 = the next value up: a tie of v2 or the successor.
            if before[lf, 0] + item[lf, 0] > target[lf] + 1:
                v1 = v2
            else:
                v1 = cast(key_values(succ[lf:lf + 1, 0])[0])
            values[lf] = cast(float(v1) - float(cast(v1 - v2)) * bias[lf])
            continue
        pos = before[lf, 0]
        if pos == 0 or pos == c - 1:
            values[lf] = v2
            continue
        v1 = cast(key_values(pred[lf:lf + 1, 0])[0])
        w_item = item[lf, 1]  # cdf[pos] - cdf[pos - 1]
        if w_item >= 1.0:
            values[lf] = cast((threshold[lf] - before[lf, 1]) / w_item * float(cast(v2 - v1))
                              + float(v1))
        else:
            values[lf] = v1
    return values, counts


def lightgbm_percentile(values, weights, alpha: float, float32: bool = False) -> float:
    """LightGBM's percentile of ``values`` (in row order) on one machine: the reference.

    ``weights`` None gives ``PercentileFun``, else ``WeightedPercentileFun`` (see the module).
    """
    cast = np.float32 if float32 else np.float64
    v = np.asarray(values, dtype=np.float64)
    n = v.shape[0]
    if n <= 1:
        return float(cast(v[0]))
    if weights is None:
        desc = np.sort(v)[::-1]
        float_pos = (n - 1) * (1.0 - alpha)
        pos = int(float_pos) + 1
        if pos >= n:
            return float(cast(desc[-1]))
        b = float_pos - (pos - 1)
        v1, v2 = cast(desc[pos - 1]), cast(desc[pos])
        return float(cast(float(v1) - float(cast(v1 - v2)) * b))
    order = np.argsort(v, kind="stable")
    sv = v[order]
    cdf = np.cumsum(np.asarray(weights, dtype=np.float64)[order])
    t = cdf[-1] * alpha
    pos = min(int(np.searchsorted(cdf, t, side="right")), n - 1)
    if pos == 0 or pos == n - 1:
        return float(cast(sv[pos]))
    v1, v2 = cast(sv[pos - 1]), cast(sv[pos])
    if cdf[pos] - cdf[pos - 1] >= 1.0:
        return float(cast((t - cdf[pos - 1]) / (cdf[pos] - cdf[pos - 1]) * float(cast(v2 - v1))
                          + float(v1)))
    return float(v1)
