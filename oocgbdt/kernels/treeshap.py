"""This module contains tree walks that explain predictions: the leaf each row reaches
(LightGBM's ``pred_leaf``) and exact path-dependent TreeSHAP (LightGBM's ``pred_contrib``).

TreeSHAP is Lundberg, Erion and Lee's algorithm ("Consistent Individualized Feature Attribution
for Tree Ensembles", 2018, Algorithm 2) as LightGBM runs it (``Tree::TreeSHAP``,
``ExtendPath``, ``UnwindPath``, ``UnwoundPathSum`` in ``src/io/tree.cpp``): the Shapley values
of ``v(S)``, the tree's expected output when the features in ``S`` are known and the others are
averaged over the training rows that reached each node (its ``internal_count`` /
``leaf_count`` cover). The expectation of the tree (``Tree::ExpectedValue``) goes to the last
column. Each tree's contributions are added to its class's block of ``n_features + 1``
columns, so rows sum to the raw score.

Trees are packed as in :mod:`oocgbdt.kernels.predict`, plus the counts and LightGBM's
categorical layout: a node with ``decision_type & 1`` is categorical, its ``threshold`` is the
index into the tree's ``cat_boundaries``, and the words ``cat_threshold[b[i]:b[i+1]]`` are the
bitset of the raw category values that go left (``Tree::CategoricalDecision``: a value's
category is the value truncated toward zero; NaN, values <= -1 and values from 2^31 have none
and go right).
"""
import itertools
import math

import numpy as np

from oocgbdt.kernels._jit import njit
from oocgbdt.kernels.categorical import INT32_LIMIT, category_of
from oocgbdt.kernels.predict import K_ZERO_THRESHOLD

__all__ = ["predict_leaf", "predict_leaf_naive", "predict_contrib", "predict_contrib_naive",
           "tree_depths"]


@njit
def _next_node(x, k, threshold, decision_type, left_child, right_child, cat_boundaries, cb0,
               cat_threshold, ct0):
    """The child of node ``k`` (global index) that a row with value ``x`` goes to."""
    dt = decision_type[k]
    if dt & 1:
        ix = category_of(x)  # truncated toward zero, as static_cast<int>
        if ix < 0:
            return right_child[k]
        ci = np.int64(threshold[k])
        lo = cat_boundaries[cb0 + ci]
        n_words = cat_boundaries[cb0 + ci + 1] - lo
        word = ix // 32
        if word >= n_words:
            return right_child[k]
        if (cat_threshold[ct0 + lo + word] >> np.uint32(ix % 32)) & np.uint32(1):
            return left_child[k]
        return right_child[k]
    missing_type = (dt >> 2) & 3
    if np.isnan(x) and missing_type != 2:
        x = 0.0
    if (missing_type == 1 and abs(x) <= K_ZERO_THRESHOLD) or (missing_type == 2 and np.isnan(x)):
        if dt & 2:
            return left_child[k]
        return right_child[k]
    if x <= threshold[k]:
        return left_child[k]
    return right_child[k]


@njit
def predict_leaf(X, split_feature, threshold, decision_type, left_child, right_child,
                 node_offsets, cat_boundaries, cb_offsets, cat_threshold, ct_offsets, out):
    """The leaf index of every row in every tree.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32 or float64                  # IN
    split_feature : int32, threshold : float64, decision_type : uint8,
    left_child, right_child : int32 -- arrays of shape (n_nodes_total,)            # IN
    node_offsets : ndarray of shape (n_trees + 1,), int64                          # IN
    cat_boundaries : int32, cat_threshold : uint32 -- every tree's, concatenated    # IN
    cb_offsets, ct_offsets : ndarray of shape (n_trees + 1,), int64                # IN
    out : ndarray of shape (n_rows, n_trees), int32                               # OUT
    """
    n_trees = node_offsets.shape[0] - 1
    for i in range(X.shape[0]):
        for t in range(n_trees):
            n0 = node_offsets[t]
            if node_offsets[t + 1] == n0:
                out[i, t] = 0
                continue
            node = 0
            while node >= 0:
                k = n0 + node
                node = _next_node(np.float64(X[i, split_feature[k]]), k, threshold,
                                  decision_type, left_child, right_child, cat_boundaries,
                                  cb_offsets[t], cat_threshold, ct_offsets[t])
            out[i, t] = ~node


def _next_node_naive(x, k, threshold, decision_type, left_child, right_child, cat_boundaries,
                     cb0, cat_threshold, ct0):
    dt = int(decision_type[k])
    x = float(x)
    if dt & 1:
        if math.isnan(x) or x <= -1.0 or x >= INT32_LIMIT:  # no int category: right
            return int(right_child[k])
        ix, ci = int(x), int(threshold[k])  # int(): truncation toward zero, (-1, 0) -> 0
        lo, hi = int(cat_boundaries[cb0 + ci]), int(cat_boundaries[cb0 + ci + 1])
        words = [int(w) for w in cat_threshold[ct0 + lo:ct0 + hi]]
        in_set = ix // 32 < len(words) and (words[ix // 32] >> (ix % 32)) & 1
        return int(left_child[k] if in_set else right_child[k])
    mt = (dt >> 2) & 3
    if math.isnan(x) and mt != 2:
        x = 0.0
    if (mt == 1 and abs(x) <= K_ZERO_THRESHOLD) or (mt == 2 and math.isnan(x)):
        return int(left_child[k] if dt & 2 else right_child[k])
    return int(left_child[k] if x <= threshold[k] else right_child[k])


def predict_leaf_naive(X, split_feature, threshold, decision_type, left_child, right_child,
                       node_offsets, cat_boundaries, cb_offsets, cat_threshold, ct_offsets, out):
    """Plain-Python twin of :func:`predict_leaf`."""
    for i in range(X.shape[0]):
        for t in range(len(node_offsets) - 1):
            n0 = int(node_offsets[t])
            node = 0 if node_offsets[t + 1] > n0 else -1
            while node >= 0:
                k = n0 + node
                node = _next_node_naive(X[i, split_feature[k]], k, threshold, decision_type,
                                        left_child, right_child, cat_boundaries,
                                        int(cb_offsets[t]), cat_threshold, int(ct_offsets[t]))
            out[i, t] = ~node


def tree_depths(left_child, right_child, node_offsets):
    """Depth of each tree (edges on its longest root-to-leaf path; 0 for one leaf):
    ndarray of shape (n_trees,), int64."""
    depths = np.zeros(len(node_offsets) - 1, dtype=np.int64)
    for t in range(len(depths)):
        n0, n1 = int(node_offsets[t]), int(node_offsets[t + 1])
        if n1 == n0:
            continue
        depth = np.zeros(n1 - n0, dtype=np.int64)
        best = 0
        # children have larger node numbers than their parent
        for node in range(n1 - n0):
            for child in (left_child[n0 + node], right_child[n0 + node]):
                if child >= 0:
                    depth[child] = depth[node] + 1
                else:
                    best = max(best, int(depth[node]) + 1)
        depths[t] = best
    return depths


# ------------------------------------------------------------------------------------------
# TreeSHAP
# ------------------------------------------------------------------------------------------
@njit
def _extend_path(pf, pz, po, pw, off, depth, zero_fraction, one_fraction, feature):
    pf[off + depth] = feature
    pz[off + depth] = zero_fraction
    po[off + depth] = one_fraction
    pw[off + depth] = 1.0 if depth == 0 else 0.0
    for i in range(depth - 1, -1, -1):
        pw[off + i + 1] += one_fraction * pw[off + i] * (i + 1) / (depth + 1.0)
        pw[off + i] = zero_fraction * pw[off + i] * (depth - i) / (depth + 1.0)


@njit
def _unwind_path(pf, pz, po, pw, off, depth, path_index):
    one_fraction = po[off + path_index]
    zero_fraction = pz[off + path_index]
    next_one_portion = pw[off + depth]
    for i in range(depth - 1, -1, -1):
        if one_fraction != 0.0:
            tmp = pw[off + i]
            pw[off + i] = next_one_portion * (depth + 1) / ((i + 1) * one_fraction)
            next_one_portion = tmp - pw[off + i] * zero_fraction * (depth - i) / (depth + 1.0)
        else:
            pw[off + i] = (pw[off + i] * (depth + 1)) / (zero_fraction * (depth - i))
    for i in range(path_index, depth):
        pf[off + i] = pf[off + i + 1]
        pz[off + i] = pz[off + i + 1]
        po[off + i] = po[off + i + 1]


@njit
def _unwound_path_sum(pz, po, pw, off, depth, path_index):
    one_fraction = po[off + path_index]
    zero_fraction = pz[off + path_index]
    next_one_portion = pw[off + depth]
    total = 0.0
    for i in range(depth - 1, -1, -1):
        if one_fraction != 0.0:
            tmp = next_one_portion * (depth + 1) / ((i + 1) * one_fraction)
            total += tmp
            next_one_portion = pw[off + i] - tmp * zero_fraction * ((depth - i) / (depth + 1.0))
        else:
            total += (pw[off + i] / zero_fraction) / ((depth - i) / (depth + 1.0))
    return total


@njit
def _count(node, n0, l0, internal_count, leaf_count):
    if node >= 0:
        return internal_count[n0 + node]
    return leaf_count[l0 + ~node]


@njit
def _tree_shap(x, phi, p0, n0, l0, cb0, ct0, split_feature, threshold, decision_type,
               left_child, right_child, leaf_value, leaf_count, internal_count, cat_boundaries,
               cat_threshold, pf, pz, po, pw, st_node, st_depth, st_off, st_zero, st_one,
               st_feat):
    """LightGBM's recursive ``Tree::TreeSHAP`` as a loop over an explicit stack (no calls
    per node): a frame holds a call's arguments. A node's hot child is visited before its
    cold one, as in the recursion; children write their paths only past their parent's, so the
    parent's path is intact when the cold child is popped."""
    top = 0
    st_node[0] = 0
    st_depth[0] = 0
    st_off[0] = 0
    st_zero[0] = 1.0
    st_one[0] = 1.0
    st_feat[0] = -1
    while top >= 0:
        node = st_node[top]
        depth = st_depth[top]
        parent_off = st_off[top]
        parent_zero = st_zero[top]
        parent_one = st_one[top]
        parent_feature = st_feat[top]
        top -= 1
        # this level's copy of the path starts ``depth`` slots after its parent's
        off = parent_off + depth
        if depth > 0:
            for i in range(depth):
                pf[off + i] = pf[parent_off + i]
                pz[off + i] = pz[parent_off + i]
                po[off + i] = po[parent_off + i]
                pw[off + i] = pw[parent_off + i]
        _extend_path(pf, pz, po, pw, off, depth, parent_zero, parent_one, parent_feature)
        if node < 0:
            value = leaf_value[l0 + ~node]
            for i in range(1, depth + 1):
                w = _unwound_path_sum(pz, po, pw, off, depth, i)
                phi[p0 + pf[off + i]] += w * (po[off + i] - pz[off + i]) * value
            continue
        k = n0 + node
        feature = np.int64(split_feature[k])
        hot = np.int64(_next_node(x[feature], k, threshold, decision_type, left_child,
                                  right_child, cat_boundaries, cb0, cat_threshold, ct0))
        cold = np.int64(right_child[k] if hot == left_child[k] else left_child[k])
        w = _count(node, n0, l0, internal_count, leaf_count)
        hot_zero = _count(hot, n0, l0, internal_count, leaf_count) / w
        cold_zero = _count(cold, n0, l0, internal_count, leaf_count) / w
        incoming_zero = 1.0
        incoming_one = 1.0
        path_index = 0
        while path_index <= depth:
            if pf[off + path_index] == feature:
                break
            path_index += 1
        if path_index != depth + 1:
            incoming_zero = pz[off + path_index]
            incoming_one = po[off + path_index]
            _unwind_path(pf, pz, po, pw, off, depth, path_index)
            depth -= 1
        # cold first on the stack, so the hot child is visited first
        top += 1
        st_node[top] = cold
        st_depth[top] = depth + 1
        st_off[top] = off
        st_zero[top] = cold_zero * incoming_zero
        st_one[top] = 0.0
        st_feat[top] = feature
        top += 1
        st_node[top] = hot
        st_depth[top] = depth + 1
        st_off[top] = off
        st_zero[top] = hot_zero * incoming_zero
        st_one[top] = incoming_one
        st_feat[top] = feature


@njit
def predict_contrib(X, split_feature, threshold, decision_type, left_child, right_child,
                    leaf_value, leaf_count, internal_count, node_offsets, leaf_offsets,
                    cat_boundaries, cb_offsets, cat_threshold, ct_offsets, tree_class,
                    max_depth, out):
    """Add every tree's SHAP values for every row to ``out`` (LightGBM's ``PredictContrib``).

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32 or float64                  # IN
    split_feature, threshold, decision_type, left_child, right_child,
    node_offsets, cat_boundaries, cb_offsets, cat_threshold, ct_offsets             # IN
        As for :func:`predict_leaf`.
    leaf_value, leaf_count : float64 of shape (n_leaves_total,)                    # IN
    internal_count : float64 of shape (n_nodes_total,)                             # IN
    leaf_offsets : int64 of shape (n_trees + 1,)                                   # IN
    tree_class : int32 of shape (n_trees,)                                         # IN
    max_depth : int, at least the depth of every tree (:func:`tree_depths`)         # IN
    out : ndarray of shape (n_rows, n_outputs * (n_features + 1)), float64         # IN and OUT
        Class ``c``'s block is columns ``c * (n_features + 1) ..``; its last column gets
        each tree's expected value.
    """
    n_features = X.shape[1]
    n_trees = tree_class.shape[0]
    path_len = max_depth + 2
    size = path_len * (path_len + 1) // 2
    pf = np.empty(size, dtype=np.int64)
    pz = np.empty(size, dtype=np.float64)
    po = np.empty(size, dtype=np.float64)
    pw = np.empty(size, dtype=np.float64)
    stack = 2 * path_len + 2  # at most two pending children per level
    st_node = np.empty(stack, dtype=np.int64)
    st_depth = np.empty(stack, dtype=np.int64)
    st_off = np.empty(stack, dtype=np.int64)
    st_zero = np.empty(stack, dtype=np.float64)
    st_one = np.empty(stack, dtype=np.float64)
    st_feat = np.empty(stack, dtype=np.int64)
    x = np.empty(n_features, dtype=np.float64)
    for i in range(X.shape[0]):
        for f in range(n_features):
            x[f] = X[i, f]
        phi = out[i]
        for t in range(n_trees):
            n0 = node_offsets[t]
            l0 = leaf_offsets[t]
            p0 = tree_class[t] * (n_features + 1)
            n_leaves = leaf_offsets[t + 1] - l0
            if n_leaves == 1:
                phi[p0 + n_features] += leaf_value[l0]
                continue
            total = internal_count[n0]
            expected = 0.0
            for leaf in range(n_leaves):
                expected += (leaf_count[l0 + leaf] / total) * leaf_value[l0 + leaf]
            phi[p0 + n_features] += expected
            _tree_shap(x, phi, p0, n0, l0, cb_offsets[t], ct_offsets[t], split_feature,
                       threshold, decision_type, left_child, right_child, leaf_value,
                       leaf_count, internal_count, cat_boundaries, cat_threshold, pf, pz, po,
                       pw, st_node, st_depth, st_off, st_zero, st_one, st_feat)


def predict_contrib_naive(X, split_feature, threshold, decision_type, left_child, right_child,
                          leaf_value, leaf_count, internal_count, node_offsets, leaf_offsets,
                          cat_boundaries, cb_offsets, cat_threshold, ct_offsets, tree_class,
                          max_depth, out):
    """Twin of :func:`predict_contrib` from the definition: for each tree, ``v(S)`` for every
    subset ``S`` of the tree's features (the cover-weighted average over the children at nodes
    whose feature is not in ``S``), then the Shapley formula
    ``phi_i = sum_S |S|! (M - |S| - 1)! / M! (v(S + i) - v(S))``; ``v({})`` to the last column.
    Exponential in the number of distinct features of a tree: small trees only."""
    n_features = X.shape[1]
    for t in range(len(tree_class)):
        n0, l0 = int(node_offsets[t]), int(leaf_offsets[t])
        p0 = int(tree_class[t]) * (n_features + 1)
        cb0, ct0 = int(cb_offsets[t]), int(ct_offsets[t])

        def count(node):
            return internal_count[n0 + node] if node >= 0 else leaf_count[l0 + ~node]

        feats = sorted({int(f) for f in split_feature[n0:int(node_offsets[t + 1])]})
        m = len(feats)
        for i in range(X.shape[0]):
            row = X[i]

            def value(node, known):
                if node < 0:
                    return float(leaf_value[l0 + ~node])
                k = n0 + node
                if int(split_feature[k]) in known:
                    return value(_next_node_naive(row[split_feature[k]], k, threshold,
                                                  decision_type, left_child, right_child,
                                                  cat_boundaries, cb0, cat_threshold, ct0), known)
                lc, rc = int(left_child[k]), int(right_child[k])
                return (count(lc) * value(lc, known) + count(rc) * value(rc, known)) / count(node)

            root = 0 if node_offsets[t + 1] > n0 else -1
            v = {}
            for r in range(m + 1):
                for subset in itertools.combinations(feats, r):
                    v[frozenset(subset)] = value(root, frozenset(subset))
            out[i, p0 + n_features] += v[frozenset()]
            for f in feats:
                others = [g for g in feats if g != f]
                for r in range(m):
                    weight = math.factorial(r) * math.factorial(m - r - 1) / math.factorial(m)
                    for subset in itertools.combinations(others, r):
                        s = frozenset(subset)
                        out[i, p0 + f] += weight * (v[s | {f}] - v[s])
