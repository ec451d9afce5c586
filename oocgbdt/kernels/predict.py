"""This module contains the prediction kernels: sum tree outputs over rows.

Trees use LightGBM's node layout (``include/LightGBM/tree.h``): internal nodes ``0..n_leaves-2``
with ``left_child``/``right_child`` >= 0 for an internal node and ``~leaf`` (< 0) for a leaf.
``decision_type`` holds LightGBM's bits: bit 0 (1) = categorical, bit 1 (2) = default_left,
bits 2-3 = missing type (0 None, 1 Zero, 2 NaN). A categorical node's ``threshold`` is its index
into ``cat_boundaries``; the row goes left iff its category is in the node's bitset
(LightGBM's ``Tree::CategoricalDecision``, ``include/LightGBM/tree.h``): NaN, negative values
and categories outside the set go right.

* :func:`predict_raw` walks raw float features with raw float thresholds (the public model).
* :func:`predict_binned` walks binned features with bin thresholds (eval sets during training).
* :func:`leaves_binned` finds the leaf of every row in a tree of numerical splits (four rows
  walked at once).
* :func:`leaves_by_segment` finds the leaf of each training row of a finished tree from the rows'
  grouping by leaf during its growth (one decision per row instead of a walk).
* :func:`leaves_by_routing` finds the leaf of listed rows by routing them down the tree, one
  node's rows at a time (the rows a sampled round left out), and :func:`leaves_by_walk` by
  walking each listed row from the root (the same, faster on row-major bins).
"""
import numpy as np

from oocgbdt.kernels._jit import PREFETCH_ROWS, njit, prefetch
from oocgbdt.kernels.bundling import next_node_bundled
from oocgbdt.kernels.categorical import category_of, in_bitset, in_bitset_naive, INT32_LIMIT
from oocgbdt.kernels.routing import (feature_bin_from_bundle, goes_left_bin, goes_left_bin_naive,
                                     split_segment)

__all__ = ["predict_raw", "predict_raw_naive", "predict_raw_sparse", "predict_raw_sparse_naive",
           "predict_binned", "predict_binned_naive", "leaves_by_segment", "leaves_by_routing",
           "leaves_by_walk", "leaves_binned",
           "add_leaf_values", "K_ZERO_THRESHOLD"]

K_ZERO_THRESHOLD = 1.0000000180025095e-35


@njit
def _goes_left_raw(x, threshold, decision_type, cat_boundaries, cat_threshold):
    if decision_type & 1:
        c = category_of(x)
        if c < 0:
            return False
        i = int(threshold)
        return in_bitset(cat_threshold, cat_boundaries[i], cat_boundaries[i + 1], c)
    missing_type = (decision_type >> 2) & 3
    default_left = (decision_type & 2) != 0
    if np.isnan(x) and missing_type != 2:
        x = 0.0
    if (missing_type == 1 and abs(x) <= K_ZERO_THRESHOLD) or (missing_type == 2 and np.isnan(x)):
        return default_left
    return x <= threshold


@njit
def predict_raw(X, split_feature, threshold, decision_type, left_child, right_child, leaf_value,
                node_offsets, leaf_offsets, tree_class, cat_boundaries, cat_threshold, out):
    """Add every tree's output for every row of ``X`` to ``out``.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), dtype float32 or float64           # IN
    split_feature : int32, threshold : float64, decision_type : uint8,
    left_child, right_child : int32 -- arrays of shape (n_nodes_total,)            # IN  all trees
    leaf_value : ndarray of shape (n_leaves_total,), dtype float64                # IN
    node_offsets, leaf_offsets : ndarray of shape (n_trees + 1,), dtype int64      # IN  tree t's slices
    tree_class : ndarray of shape (n_trees,), dtype int32                         # IN  output column
    cat_boundaries : int64, cat_threshold : uint32                               # IN  bitsets of
        the categorical nodes of all trees (a node's ``threshold`` indexes ``cat_boundaries``)
    out : ndarray of shape (n_rows, n_outputs), dtype float64                     # IN and OUT
    """
    n_trees = tree_class.shape[0]
    for i in range(X.shape[0]):
        for t in range(n_trees):
            n0 = node_offsets[t]
            l0 = leaf_offsets[t]
            if node_offsets[t + 1] == n0:
                out[i, tree_class[t]] += leaf_value[l0]
                continue
            node = 0
            while node >= 0:
                k = n0 + node
                x = np.float64(X[i, split_feature[k]])
                if _goes_left_raw(x, threshold[k], decision_type[k], cat_boundaries,
                                  cat_threshold):
                    node = left_child[k]
                else:
                    node = right_child[k]
            out[i, tree_class[t]] += leaf_value[l0 + ~node]


def predict_raw_naive(X, split_feature, threshold, decision_type, left_child, right_child,
                      leaf_value, node_offsets, leaf_offsets, tree_class, cat_boundaries,
                      cat_threshold, out):
    """Plain-Python twin of :func:`predict_raw`, used by tests."""
    for i in range(X.shape[0]):
        for t in range(len(tree_class)):
            n0, l0 = node_offsets[t], leaf_offsets[t]
            node = 0 if node_offsets[t + 1] > n0 else -1
            while node >= 0:
                k = n0 + node
                x = float(X[i, split_feature[k]])
                if int(decision_type[k]) & 1:
                    j = int(threshold[k])
                    left = (not np.isnan(x) and -1.0 < x < INT32_LIMIT
                            and in_bitset_naive(cat_threshold, int(cat_boundaries[j]),
                                                int(cat_boundaries[j + 1]), int(x)))
                    node = left_child[k] if left else right_child[k]
                    continue
                mt = (int(decision_type[k]) >> 2) & 3
                dl = bool(int(decision_type[k]) & 2)
                if np.isnan(x) and mt != 2:
                    x = 0.0
                if (mt == 1 and abs(x) <= K_ZERO_THRESHOLD) or (mt == 2 and np.isnan(x)):
                    left = dl
                else:
                    left = x <= threshold[k]
                node = left_child[k] if left else right_child[k]
            out[i, tree_class[t]] += leaf_value[l0 + ~node]


@njit
def _csr_value(indptr, indices, data, i, f):
    """Value of column ``f`` in row ``i`` of a canonical CSR matrix (0.0 when not stored)."""
    lo = indptr[i]
    hi = indptr[i + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        if indices[mid] < f:
            lo = mid + 1
        else:
            hi = mid
    if lo < indptr[i + 1] and indices[lo] == f:
        return np.float64(data[lo])
    return 0.0


@njit
def predict_raw_sparse(indptr, indices, data, split_feature, threshold, decision_type, left_child,
                       right_child, leaf_value, node_offsets, leaf_offsets, tree_class,
                       cat_boundaries, cat_threshold, out):
    """:func:`predict_raw` on CSR rows (sorted indices, no duplicates); values not stored are 0.

    Each node looks its feature up by binary search in the row's indices, so no dense copy of
    the rows is made. Other parameters are those of :func:`predict_raw`.
    """
    n_trees = tree_class.shape[0]
    for i in range(indptr.shape[0] - 1):
        for t in range(n_trees):
            n0 = node_offsets[t]
            l0 = leaf_offsets[t]
            if node_offsets[t + 1] == n0:
                out[i, tree_class[t]] += leaf_value[l0]
                continue
            node = 0
            while node >= 0:
                k = n0 + node
                x = _csr_value(indptr, indices, data, i, split_feature[k])
                if _goes_left_raw(x, threshold[k], decision_type[k], cat_boundaries,
                                  cat_threshold):
                    node = left_child[k]
                else:
                    node = right_child[k]
            out[i, tree_class[t]] += leaf_value[l0 + ~node]


def predict_raw_sparse_naive(indptr, indices, data, split_feature, threshold, decision_type,
                             left_child, right_child, leaf_value, node_offsets, leaf_offsets,
                             tree_class, cat_boundaries, cat_threshold, out, n_features=None):
    """Twin of :func:`predict_raw_sparse`: densify the rows, then :func:`predict_raw_naive`."""
    n_rows = len(indptr) - 1
    n_features = n_features or (int(max(indices)) + 1 if len(indices) else 1)
    n_features = max(n_features, int(max(split_feature)) + 1 if len(split_feature) else 1)
    X = np.zeros((n_rows, n_features))
    for i in range(n_rows):
        for k in range(indptr[i], indptr[i + 1]):
            X[i, indices[k]] = data[k]
    predict_raw_naive(X, split_feature, threshold, decision_type, left_child, right_child,
                      leaf_value, node_offsets, leaf_offsets, tree_class, cat_boundaries,
                      cat_threshold, out)


@njit
def predict_binned(X_binned, split_feature, threshold_bin, default_left, missing_type,
                   default_bin, nan_bin, left_child, right_child, leaf_value, cat_boundaries,
                   cat_threshold, out):
    """Add one tree's output for every row of a binned chunk to ``out``.

    Parameters
    ----------
    X_binned : ndarray of shape (n_rows, n_features), dtype uint8 or uint16     # IN
    split_feature, threshold_bin : int32; default_left : bool; missing_type, : uint8;
    default_bin, nan_bin : int32 (of each node's split feature);
    left_child, right_child : int32 -- arrays of shape (n_nodes,)                # IN
    leaf_value : ndarray of shape (n_leaves,), dtype float64                    # IN
    cat_boundaries : int64, cat_threshold : uint32                             # IN  bin bitsets
        of the categorical nodes (``missing_type`` 3, see
        :func:`oocgbdt.kernels.routing.goes_left_bin`)
    out : ndarray of shape (n_rows,), dtype float64                             # IN and OUT
    """
    n_nodes = split_feature.shape[0]
    for i in range(X_binned.shape[0]):
        if n_nodes == 0:
            out[i] += leaf_value[0]
            continue
        node = 0
        while node >= 0:
            b = X_binned[i, split_feature[node]]
            if goes_left_bin(b, threshold_bin[node], default_left[node], missing_type[node],
                             default_bin[node], nan_bin[node], cat_boundaries, cat_threshold):
                node = left_child[node]
            else:
                node = right_child[node]
        out[i] += leaf_value[~node]


def predict_binned_naive(X_binned, split_feature, threshold_bin, default_left, missing_type,
                         default_bin, nan_bin, left_child, right_child, leaf_value,
                         cat_boundaries, cat_threshold, out):
    """Plain-Python twin of :func:`predict_binned`, used by tests."""
    for i in range(X_binned.shape[0]):
        node = 0 if len(split_feature) else -1
        while node >= 0:
            b = int(X_binned[i, split_feature[node]])
            left = goes_left_bin_naive(b, threshold_bin[node], default_left[node],
                                       missing_type[node], default_bin[node], nan_bin[node],
                                       cat_boundaries, cat_threshold)
            node = left_child[node] if left else right_child[node]
        out[i] += leaf_value[~node]


@njit
def leaves_by_segment(X_binned, order, seg_begin, seg_count, split_column, split_start,
                      split_n_bins, split_raw, threshold_bin, default_left, missing_type,
                      default_bin, nan_bin, left_child, right_child, cat_boundaries,
                      cat_threshold, routed, out_leaf):
    """The leaf of every row of a chunk in a finished tree, given the rows grouped as the tree's
    growth routed them: ``order[seg_begin[s]:seg_begin[s] + seg_count[s]]`` are the rows of one
    leaf at the last pass (a :class:`~oocgbdt.core.partition.TreeRows` segment).

    Rows of one segment took the same side at every split a pass routed. A split no pass routed
    has leaves for children (their rows are never histogrammed, so they are never split), so
    it can only be the last split on a path: the segment's first row is walked from the root;
    when its leaf's parent split was routed, the whole segment is that leaf's rows, else every
    row of the segment is decided at that parent (one decision each). The result is the walk
    of :func:`predict_binned` (or of a bundled walk) for every row.

    Parameters
    ----------
    X_binned : ndarray of shape (n_rows, n_columns), dtype uint8 or uint16   # IN  the chunk's bins
    order : ndarray of shape (n_rows,), dtype int32                          # IN  rows by segment
    seg_begin, seg_count : ndarray of shape (n_segments,), dtype int64       # IN  empty ones skipped
    split_column, split_start, split_n_bins : int64; split_raw : bool        # IN  per node: its
        feature's column and layout in it (:func:`~oocgbdt.kernels.bundling.feature_bin_from_bundle`;
        per-feature bins: the feature, 0, its bins, True)
    threshold_bin, default_left, missing_type, default_bin, nan_bin, left_child, right_child
        # IN  per node, as for :func:`predict_binned`
    cat_boundaries, cat_threshold                                            # IN  bin bitsets
        of the categorical nodes, as for :func:`predict_binned`
    routed : ndarray of shape (n_nodes,), dtype bool                         # IN  per node: a
        pass routed the split's rows (:attr:`oocgbdt.core.grower.TreeGrower.routed`; all False
        is always correct, and decides every row at its segment's last split)
    out_leaf : ndarray of shape (n_rows,), dtype intp                         # OUT rows of ``order``
    """
    n_nodes = left_child.shape[0]
    nodes = (split_column, split_start, split_n_bins, split_raw, threshold_bin, default_left,
             missing_type, default_bin, nan_bin, left_child, right_child, cat_boundaries,
             cat_threshold)
    for s in range(seg_begin.shape[0]):
        b = seg_begin[s]
        end = b + seg_count[s]
        if end == b:
            continue
        if n_nodes == 0:
            for i in range(b, end):
                out_leaf[order[i]] = 0
            continue
        start = 0
        node = 0
        r = order[b]
        while node >= 0:
            start = node
            node = next_node_bundled(X_binned, r, node, *nodes)
        if routed[start]:
            leaf = ~node
            for i in range(b, end):
                out_leaf[order[i]] = leaf
            continue
        # Every row decided at ``start``, whose children are leaves: its fields read once,
        # each row's bin prefetched at the split's own column (a walk from the node read
        # every field per row: 20 -> 0.8 ns per row measured on 131k x 50).
        col = split_column[start]
        left_leaf = ~left_child[start]
        right_leaf = ~right_child[start]
        for i in range(b, end):
            if i + PREFETCH_ROWS < end:
                prefetch(X_binned, (order[i + PREFETCH_ROWS], col))
            r = order[i]
            v = feature_bin_from_bundle(X_binned[r, col], split_start[start],
                                        split_n_bins[start], default_bin[start],
                                        split_raw[start])
            if goes_left_bin(v, threshold_bin[start], default_left[start], missing_type[start],
                             default_bin[start], nan_bin[start], cat_boundaries, cat_threshold):
                out_leaf[r] = left_leaf
            else:
                out_leaf[r] = right_leaf




@njit
def leaves_by_routing(X_binned, rows, split_column, split_start, split_n_bins, split_raw,
                      threshold_bin, default_left, missing_type, default_bin, nan_bin, left_child,
                      right_child, cat_boundaries, cat_threshold, out_leaf):
    """The leaf of each of ``rows`` in a finished tree, found by routing the rows down it as
    growth does: each internal node's rows are partitioned by its split
    (:func:`~oocgbdt.kernels.routing.split_segment`, one table look-up per row) and each side
    handed to its child, until every row is at a leaf. The leaves of
    :func:`predict_binned`'s walk.

    A row is read once per level it descends, at one column per node: from a column-major
    copy of the bins (``np.asfortranarray``) each node reads a contiguous column. Measured on
    the rows a 30% bagging round left out of 131,072 x 50 uint8 bins (92k rows, 31 leaves),
    one thread: 0.57-0.89 ms from column-major bins, 0.97-1.48 ms from row-major ones,
    against 1.60-1.87 ms for :func:`leaves_binned` on every row of the partition.

    Parameters
    ----------
    X_binned : ndarray of shape (n_rows, n_columns), dtype uint8 or uint16   # IN  any layout
    rows : ndarray of shape (n_listed,), dtype int32                         # IN and OUT rows
        to place, each < n_rows; permuted in place (grouped by leaf)
    split_column, split_start, split_n_bins : int64; split_raw : bool        # IN  per node, as
        for :func:`leaves_by_segment`
    threshold_bin, default_left, missing_type, default_bin, nan_bin, left_child, right_child
        # IN  per node, as for :func:`predict_binned` (categorical nodes included)
    cat_boundaries, cat_threshold                                            # IN  bin bitsets
    out_leaf : ndarray of shape (n_rows,), integer                           # OUT written at
        ``rows`` only
    """
    n_nodes = left_child.shape[0]
    n = rows.shape[0]
    if n_nodes == 0:
        for i in range(n):
            out_leaf[np.uint64(rows[np.uint64(i)])] = 0
        return
    # Nodes still to route, with their segment of ``rows`` (at most one per internal node).
    todo_node = np.empty(n_nodes, dtype=np.int64)
    todo_begin = np.empty(n_nodes, dtype=np.int64)
    todo_count = np.empty(n_nodes, dtype=np.int64)
    todo_node[0], todo_begin[0], todo_count[0] = 0, 0, n
    top = 1
    while top > 0:
        top -= 1
        k = todo_node[top]
        begin = todo_begin[top]
        count = todo_count[top]
        if count == 0:
            continue
        n_left = split_segment(X_binned[:, split_column[k]], rows, begin, count, threshold_bin[k],
                               default_left[k], missing_type[k], default_bin[k], nan_bin[k],
                               cat_boundaries, cat_threshold, split_start[k], split_n_bins[k],
                               split_raw[k], rows, False)
        for side in range(2):
            child = left_child[k] if side == 0 else right_child[k]
            b = begin if side == 0 else begin + n_left
            c = n_left if side == 0 else count - n_left
            if child >= 0:
                todo_node[top], todo_begin[top], todo_count[top] = child, b, c
                top += 1
            else:
                leaf = ~child
                for i in range(b, b + c):
                    out_leaf[np.uint64(rows[np.uint64(i)])] = leaf


@njit
def _walk_tables_bundled(split_column, split_start, split_n_bins, split_raw, threshold_bin,
                         default_left, missing_type, default_bin, nan_bin, left_child,
                         right_child):
    """Per node, the tables of :func:`leaves_by_walk`: those of :func:`_walk_tables` (each
    node's column in place of its feature) plus each node's bundle layout as bounds, so that
    reading a feature's bin off its bundle is a selection, not a branch
    (:func:`_bin_in_bundle`); a raw column's bounds take every value as it is."""
    column, threshold, missing_bin, default, child = _walk_tables(
        split_column, threshold_bin, default_left, missing_type, default_bin, nan_bin,
        left_child, right_child)
    n_nodes = left_child.shape[0]
    total = column.shape[0]
    big = np.int64(2 ** 62)
    lo = np.full(total, -1, dtype=np.int64)
    hi = np.full(total, big, dtype=np.int64)
    shift_at = np.full(total, big, dtype=np.int64)
    default_b = np.zeros(total, dtype=np.int64)
    categorical = np.zeros(total, dtype=np.bool_)
    for k in range(n_nodes):
        if not split_raw[k]:
            lo[k] = split_start[k]
            hi[k] = split_start[k] + split_n_bins[k] - 1
            shift_at[k] = default_bin[k]
        default_b[k] = default_bin[k]
        categorical[k] = missing_type[k] == 3
    return column, lo, hi, shift_at, default_b, threshold, missing_bin, default, categorical, child


@njit(inline="always")
def _bin_in_bundle(v, lo, hi, shift_at, default_b):
    # feature_bin_from_bundle as selections: values in (lo, hi] are the feature's bins past
    # its default one, others its default bin (a raw column: lo = -1, hi = shift_at = 2**62).
    w = v - lo - 1
    w = w + np.int64(w >= shift_at)
    return w if (v > lo) & (v <= hi) else default_b


@njit(inline="always")
def _step_bundled(X_binned, r, node, column, lo, hi, shift_at, default_b, threshold,
                  missing_bin, default, child):
    # A numerical node of :func:`leaves_by_walk`, written out without a branch (one per node
    # cost about 20 ns per step, measured; a compiled call per node about 40 ns).
    u = np.uint64(node)
    v = _bin_in_bundle(np.int64(X_binned[r, np.uint64(column[u])]), lo[u], hi[u], shift_at[u],
                       default_b[u])
    left = default[u] if v == missing_bin[u] else v <= threshold[u]
    return child[np.uint64(2 * node + 1 - np.int64(left))]


@njit
def leaves_by_walk(X_binned, rows, split_column, split_start, split_n_bins, split_raw,
                   threshold_bin, default_left, missing_type, default_bin, nan_bin, left_child,
                   right_child, cat_boundaries, cat_threshold, out_leaf):
    """The leaf of each of ``rows`` in a finished tree, each row walked from the root: the
    leaves of :func:`leaves_by_routing`, for row-major bins.

    Routing reads a row once per level at one column, so on row-major bins that are not in
    cache each level costs a cache line per row; a walk reads the row's line once for every
    level. Four rows walk in lock step, as in :func:`leaves_binned` (a leaf is a node whose
    children are itself), the rows of the group after next prefetched, each node's feature
    read off its bundle column as :func:`~oocgbdt.kernels.bundling.next_node_bundled` does,
    with selections instead of branches (a branch per node cost about 20 ns per step, a
    compiled call per node about 40). A tree with a categorical node is walked one row at a
    time by ``next_node_bundled``. Measured on the 175k rows a 30% bagging round leaves out of
    250,000 x 100 uint8 row-major bins, 31 leaves, one thread, caches flushed: 3.3 ms against
    7.7-8.8 ms for :func:`leaves_by_routing`.

    Parameters
    ----------
    X_binned : ndarray of shape (n_rows, n_columns), dtype uint8 or uint16   # IN  row-major
    rows : ndarray of shape (n_listed,), dtype int32                         # IN  rows to place,
        each < n_rows (not changed)
    split_column, split_start, split_n_bins, split_raw, threshold_bin, default_left,
    missing_type, default_bin, nan_bin, left_child, right_child, cat_boundaries, cat_threshold
        # IN  per node, as for :func:`leaves_by_routing`
    out_leaf : ndarray of shape (n_rows,), integer                           # OUT written at
        ``rows`` only
    """
    n_nodes = left_child.shape[0]
    n = rows.shape[0]
    if n_nodes == 0:
        for i in range(n):
            out_leaf[np.uint64(rows[np.uint64(i)])] = 0
        return
    (column, lo, hi, shift_at, default_b, threshold, missing_bin, default, categorical,
     child) = _walk_tables_bundled(split_column, split_start, split_n_bins, split_raw,
                                   threshold_bin, default_left, missing_type, default_bin,
                                   nan_bin, left_child, right_child)
    if np.any(categorical):
        for i in range(n):
            r = np.uint64(rows[np.uint64(i)])
            node = np.int64(0)
            while node >= 0:
                node = next_node_bundled(X_binned, r, node, split_column, split_start,
                                         split_n_bins, split_raw, threshold_bin, default_left,
                                         missing_type, default_bin, nan_bin, left_child,
                                         right_child, cat_boundaries, cat_threshold)
            out_leaf[r] = ~node
        return
    end4 = n - n % 4
    last = np.uint64(X_binned.shape[1] - 1)
    for i in range(0, end4, 4):
        if i + PREFETCH_ROWS + 4 <= n:
            for j in range(i + PREFETCH_ROWS, i + PREFETCH_ROWS + 4):
                r = np.uint64(rows[np.uint64(j)])
                prefetch(X_binned, (r, np.uint64(0)))
                prefetch(X_binned, (r, last))
        ra = np.uint64(rows[np.uint64(i)])
        rb = np.uint64(rows[np.uint64(i + 1)])
        rc = np.uint64(rows[np.uint64(i + 2)])
        rd = np.uint64(rows[np.uint64(i + 3)])
        a = np.int64(0)
        b = np.int64(0)
        c = np.int64(0)
        d = np.int64(0)
        while (a < n_nodes) | (b < n_nodes) | (c < n_nodes) | (d < n_nodes):
            a = _step_bundled(X_binned, ra, a, column, lo, hi, shift_at, default_b, threshold,
                              missing_bin, default, child)
            b = _step_bundled(X_binned, rb, b, column, lo, hi, shift_at, default_b, threshold,
                              missing_bin, default, child)
            c = _step_bundled(X_binned, rc, c, column, lo, hi, shift_at, default_b, threshold,
                              missing_bin, default, child)
            d = _step_bundled(X_binned, rd, d, column, lo, hi, shift_at, default_b, threshold,
                              missing_bin, default, child)
        out_leaf[ra] = a - n_nodes
        out_leaf[rb] = b - n_nodes
        out_leaf[rc] = c - n_nodes
        out_leaf[rd] = d - n_nodes
    for i in range(end4, n):
        r = np.uint64(rows[np.uint64(i)])
        a = np.int64(0)
        while a < n_nodes:
            a = _step_bundled(X_binned, r, a, column, lo, hi, shift_at, default_b, threshold,
                              missing_bin, default, child)
        out_leaf[r] = a - n_nodes


@njit
def _walk_tables(split_feature, threshold_bin, default_left, missing_type, default_bin, nan_bin,
                 left_child, right_child):
    """Per node, the tables of :func:`leaves_binned`'s walk: internal nodes ``0 .. n_nodes - 1``,
    then leaf ``l`` as node ``n_nodes + l``, whose children are itself. A node's missing rows
    are those at ``missing_bin`` (-1, never a bin, for none)."""
    n_nodes = split_feature.shape[0]
    total = 2 * n_nodes + 1
    feature = np.zeros(total, dtype=np.int64)
    threshold = np.zeros(total, dtype=np.int64)
    missing_bin = np.full(total, -1, dtype=np.int64)
    default = np.zeros(total, dtype=np.bool_)
    child = np.empty(2 * total, dtype=np.int64)
    for k in range(n_nodes):
        feature[k] = split_feature[k]
        threshold[k] = threshold_bin[k]
        default[k] = default_left[k]
        if missing_type[k] == 2:
            missing_bin[k] = nan_bin[k]
        elif missing_type[k] == 1:
            missing_bin[k] = default_bin[k]
        c = left_child[k]
        child[2 * k] = c if c >= 0 else n_nodes + ~c
        c = right_child[k]
        child[2 * k + 1] = c if c >= 0 else n_nodes + ~c
    for k in range(n_nodes, total):
        child[2 * k] = k
        child[2 * k + 1] = k
    return feature, threshold, missing_bin, default, child


@njit(inline="always")
def _step(X_binned, r, node, feature, threshold, missing_bin, default, child):
    # Unsigned indices: numba then adds no test for a negative index to each step's chain of
    # dependent loads (0.89 -> 0.63 ms per 65,536 x 50 rows, 31 leaves, measured).
    u = np.uint64(node)
    b = np.int64(X_binned[np.uint64(r), np.uint64(feature[u])])
    left = default[u] if b == missing_bin[u] else b <= threshold[u]
    return child[np.uint64(2 * node + 1 - np.int64(left))]


@njit
def leaves_binned(X_binned, split_feature, threshold_bin, default_left, missing_type, default_bin,
                  nan_bin, left_child, right_child, out_leaf):
    """Each row's leaf in a tree of numerical splits, walked on bins: the leaf whose value
    :func:`predict_binned` adds, found faster.

    Four rows walk in lock step until all four reached a leaf (a leaf is a node whose children
    are itself), and each step's side is a selection, not a branch: one row's walk mispredicts
    about every other level and its steps wait on each other's loads, while four independent
    walks keep the core busy (measured on 131,072 x 50 uint8 bins, 31 leaves: 2.2 ms instead
    of 13 ms for :func:`predict_binned`).

    Parameters
    ----------
    X_binned : ndarray of shape (n_rows, n_columns), dtype uint8 or uint16       # IN
    split_feature : ndarray of shape (n_nodes,), integer                          # IN  the column
        each node reads its bin from (a bundle column holding the feature's own bins, raw)
    threshold_bin, default_left, missing_type, default_bin, nan_bin, left_child, right_child
        # IN  as for :func:`predict_binned`; ``missing_type`` 0, 1 or 2 (no categorical node)
    out_leaf : ndarray of shape (n_rows,), dtype int32                            # OUT
    """
    n = X_binned.shape[0]
    n_nodes = split_feature.shape[0]
    if n_nodes == 0:
        out_leaf[:] = 0
        return
    feature, threshold, missing_bin, default, child = _walk_tables(
        split_feature, threshold_bin, default_left, missing_type, default_bin, nan_bin,
        left_child, right_child)
    end4 = n - n % 4
    for i in range(0, end4, 4):
        a = np.int64(0)
        b = np.int64(0)
        c = np.int64(0)
        d = np.int64(0)
        while (a < n_nodes) | (b < n_nodes) | (c < n_nodes) | (d < n_nodes):
            a = _step(X_binned, i, a, feature, threshold, missing_bin, default, child)
            b = _step(X_binned, i + 1, b, feature, threshold, missing_bin, default, child)
            c = _step(X_binned, i + 2, c, feature, threshold, missing_bin, default, child)
            d = _step(X_binned, i + 3, d, feature, threshold, missing_bin, default, child)
        out_leaf[i] = a - n_nodes
        out_leaf[i + 1] = b - n_nodes
        out_leaf[i + 2] = c - n_nodes
        out_leaf[i + 3] = d - n_nodes
    for i in range(end4, n):
        a = np.int64(0)
        while a < n_nodes:
            a = _step(X_binned, i, a, feature, threshold, missing_bin, default, child)
        out_leaf[i] = a - n_nodes


@njit
def add_leaf_values(score, leaf, leaf_value, out):
    """``out[i] = score[i] + leaf_value[leaf[i]]`` (float64; one addition per row, as the walks
    that add a leaf's value).

    Parameters
    ----------
    score : ndarray of shape (n_rows,), dtype float64          # IN
    leaf : ndarray of shape (n_rows,), integer                  # IN  each row's leaf
    leaf_value : ndarray of shape (n_leaves,), dtype float64    # IN
    out : ndarray of shape (n_rows,), dtype float64             # OUT (may be ``score``)
    """
    for i in range(score.shape[0]):
        out[i] = score[i] + leaf_value[leaf[i]]
