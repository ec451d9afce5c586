"""This module contains :class:`TreeGrower`: leaf-wise (best-first) growth of one tree.

Data flow position: on the client, once per tree. The grower decides which leaf to split next; a
histogram source (:class:`~oocgbdt.core.histogram_source.HistogramSource`) does the passes over
the rows and returns split records. The grower knows nothing about where rows live.

Growth follows LightGBM's ``SerialTreeLearner::Train`` (``src/treelearner/serial_tree_learner.cpp``):
split the leaf with the largest gain (ties: lower leaf index) until ``num_leaves`` leaves or no
positive gain; the left child keeps the parent's id, the right child gets the next id; children at
``max_depth`` are not split further.
"""
from __future__ import annotations

import time

import numpy as np

from oocgbdt.core.tree import Tree, TreeBuilder

__all__ = ["TreeGrower"]


class TreeGrower:
    """Grow one tree from a histogram source.

    Parameters
    ----------
    source : HistogramSource
    split_params : SplitParams (a local copy; the source has its own handle)
    missing_types : ndarray of shape (n_features,), dtype uint8
    num_leaves : int
    max_depth : int
        <= 0 means no limit.

    Attributes
    ----------
    n_passes : int
        Passes over the data made for this tree.
    time_waiting : float
        Seconds spent waiting for split records (histogram building, reduction and split search
        on the workers, plus scheduling).
    """

    def __init__(self, source, split_params, missing_types, num_leaves, max_depth):
        self.source = source
        self.split_params = split_params
        self.missing_types = np.asarray(missing_types)
        self.num_leaves = int(num_leaves)
        self.max_depth = int(max_depth)
        self.time_waiting = 0.0

    def _can_split_at(self, depth):
        return self.max_depth <= 0 or depth < self.max_depth

    def grow(self, bin_upper_bounds, shrinkage, class_idx) -> tuple[Tree, TreeBuilder]:
        """Grow the tree; returns the :class:`Tree` and the builder (leaf values before shrinkage)."""
        sp = self.split_params
        t0 = time.perf_counter()
        totals, root_split = self.source.root()
        self.time_waiting += time.perf_counter() - t0
        root_value = (sp.output(totals.sum_gradients, totals.sum_hessians)
                      if totals.sum_hessians + sp.lambda_l2 > 0 else 0.0)
        builder = TreeBuilder(totals, root_value)
        best = {0: root_split if self._can_split_at(0) else None}
        while builder.n_leaves < self.num_leaves:
            leaf, split = None, None
            for l in sorted(best):
                s = best[l]
                if s is not None and s.gain > 0 and (split is None or s.gain > split.gain):
                    leaf, split = l, s
            if split is None:
                break
            parent_value = builder.leaf_value[leaf]
            left_value = sp.output(split.left.sum_gradients, split.left.sum_hessians)
            right_value = sp.output(split.right.sum_gradients, split.right.sum_hessians)
            f = split.feature
            right_leaf = builder.split(leaf, split, int(self.missing_types[f]), parent_value,
                                       left_value, right_value)
            if self._can_split_at(builder.leaf_depth[leaf]) and builder.n_leaves < self.num_leaves:
                t0 = time.perf_counter()
                best[leaf], best[right_leaf] = self.source.split(leaf, right_leaf, split)
                self.time_waiting += time.perf_counter() - t0
            else:
                # Neither child will be split: no pass is needed. Rows reach their final leaves
                # when the finished tree is applied to the chunks.
                self.source.forget(leaf)
                best[leaf] = best[right_leaf] = None
        if builder.n_leaves == 1:
            # No split: the tree adds nothing, as in LightGBM (gbdt.cpp TrainOneIter keeps a
            # one-leaf tree's output at 0; only its first iteration would hold the init score,
            # which oocgbdt keeps apart in Booster.init_score).
            builder.leaf_value[0] = 0.0
        tree = builder.build(bin_upper_bounds, shrinkage, class_idx)
        return tree, builder
