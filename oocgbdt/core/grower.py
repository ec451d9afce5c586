"""This module contains :class:`TreeGrower`: growth of one tree, one pass over the data per round
of splits.

Data flow position: on the client, once per tree. The grower decides which leaves to split; a
histogram source (:class:`~oocgbdt.core.histogram_source.HistogramSource`) does the passes over
the rows and returns split records. The grower knows nothing about where rows live.

Policies (``grow_policy``):

- ``"leafwise"`` with ``max_leaves_per_pass=1``: LightGBM's best-first growth
  (``SerialTreeLearner::Train``, ``src/treelearner/serial_tree_learner.cpp``): split the open
  leaf with the largest gain (ties: lower leaf index) until ``num_leaves`` leaves or no positive
  gain.
- ``"leafwise"`` with ``max_leaves_per_pass=k``: each pass splits the k open leaves with the
  largest gains (same order and tie rule, within the ``num_leaves`` budget).
- ``"depthwise"``: each pass splits every open leaf with a positive gain, so one pass per level;
  when the budget cannot take them all, the largest gains go first (same tie rule).

Within a pass, splits are applied in that order (decreasing gain, then leaf index): the left
child keeps the parent's id, the right child gets the next id, and internal nodes are numbered in
the same order. So when the k chosen leaves are also the next k that best-first growth would
split, the trees are identical. Children at ``max_depth`` are not split further, and a split whose
children will never be split (depth, or the tree full after the pass) needs no pass: rows reach
their final leaves when the finished tree is applied.

Splitting ahead (``lookahead_leaves``, exact best-first growth only). A leaf's best split
depends on its own rows alone, so it is the same whenever the leaf is split. A pass that must
split the best open leaf also splits, in the data, up to ``lookahead_leaves`` of the next best
open leaves (routing their rows, histogramming their children and searching them) without
applying them to the tree. The grower still applies splits one at a time, best first: when the
best open leaf was split ahead, its children's splits are known and the step costs no pass.
Every leaf's histogram adds the same rows in the same order either way, so the tree is identical
to the one grown without splitting ahead; only the passes differ (and the work of leaves split
ahead that the ``num_leaves`` budget never reaches). The data layer names leaves by the order it
splits them, which is not the tree's order; the grower keeps the map.
"""
from __future__ import annotations

import time

import numpy as np

from oocgbdt.core.tree import Tree, TreeBuilder

__all__ = ["TreeGrower", "GROW_POLICIES"]

GROW_POLICIES = ("leafwise", "depthwise")


class TreeGrower:
    """Grow one tree from a histogram source.

    Parameters
    ----------
    source : HistogramSource
        Anything with ``root()`` and ``split_many(requests)`` (see
        :meth:`~oocgbdt.core.histogram_source.HistogramSource.split_many`).
    split_params : SplitParams (a local copy; the source has its own handle)
    missing_types : ndarray of shape (n_features,), dtype uint8
    num_leaves : int
    max_depth : int
        <= 0 means no limit.
    grow_policy : {"leafwise", "depthwise"}, default "leafwise"
    max_leaves_per_pass : int, default 1
        Leaves split per pass with ``"leafwise"`` (1: exact best-first growth). Must be 1 with
        ``"depthwise"``, which splits every open leaf with a positive gain.
    lookahead_leaves : int, default 0
        With exact best-first growth (``"leafwise"``, ``max_leaves_per_pass=1``): open leaves
        split in the data ahead of their turn by each pass (see the module docstring; the tree
        does not change). The source's ``max_leaves`` must then be at least
        ``2 * num_leaves``. Ignored by the other policies.

    Attributes
    ----------
    n_rounds : int
        Rounds of splits made for this tree (a round without open children makes no pass).
    time_waiting : float
        Seconds spent waiting for split records (histogram building, reduction and split search
        on the workers, plus scheduling).
    routed : list of bool
        Per internal node of the grown tree (in node order): whether a pass routed the split's
        rows to its children. A split is not routed when its children can never be split (leaf
        budget, depth): they stay leaves, so only the last split on a path can be unrouted
        (:func:`~oocgbdt.kernels.predict.leaves_by_segment` relies on this).
    """

    def __init__(self, source, split_params, missing_types, num_leaves, max_depth, *,
                 grow_policy="leafwise", max_leaves_per_pass=1, lookahead_leaves=0):
        if grow_policy not in GROW_POLICIES:
            raise ValueError(f"grow_policy must be one of {GROW_POLICIES}, got {grow_policy!r}")
        if int(max_leaves_per_pass) < 1:
            raise ValueError(f"max_leaves_per_pass must be >= 1, got {max_leaves_per_pass}")
        if grow_policy == "depthwise" and int(max_leaves_per_pass) != 1:
            raise ValueError(f"max_leaves_per_pass={max_leaves_per_pass} applies to "
                             f"grow_policy='leafwise' only; grow_policy='depthwise' splits every "
                             f"open leaf with a positive gain in each pass")
        self.source = source
        self.split_params = split_params
        self.missing_types = np.asarray(missing_types)
        self.num_leaves = int(num_leaves)
        self.max_depth = int(max_depth)
        self.grow_policy = grow_policy
        self.max_leaves_per_pass = int(max_leaves_per_pass)
        if int(lookahead_leaves) < 0:
            raise ValueError(f"lookahead_leaves must be >= 0, got {lookahead_leaves}")
        self.lookahead_leaves = int(lookahead_leaves)
        self.n_rounds = 0
        self.time_waiting = 0.0
        self.routed = []

    def _can_split_at(self, depth):
        return self.max_depth <= 0 or depth < self.max_depth

    def _choose(self, best, budget):
        """The leaves to split in this round: open leaves with a positive gain, largest gain
        first, ties to the lower leaf index; at most ``budget`` (and ``max_leaves_per_pass``
        when leaf-wise)."""
        ranked = sorted((l for l, s in best.items() if s is not None and s.gain > 0),
                        key=lambda l: (-best[l].gain, l))
        k = budget if self.grow_policy == "depthwise" else min(budget, self.max_leaves_per_pass)
        return ranked[:k]

    def _apply(self, builder, leaf, split, routed):
        """Apply ``split`` of ``leaf`` to the tree (``routed``: whether a pass routes, or has
        routed, its rows); returns the right child's id."""
        self.routed.append(bool(routed))
        # The children's values are the outputs the search computed (LightGBM's
        # SplitInfo::left_output / right_output: capped, smoothed and bounded as it chose them).
        return builder.split(leaf, split, int(self.missing_types[split.feature]),
                             builder.leaf_value[leaf], split.left_output, split.right_output)

    def _split_pass(self, requests):
        self.n_rounds += 1
        t0 = time.perf_counter()
        records = self.source.split_many(requests)
        self.time_waiting += time.perf_counter() - t0
        return records

    def _grow_in_rounds(self, builder, best):
        """Batched leaf-wise and depth-wise growth: every chosen split is applied, one pass per
        round."""
        while builder.n_leaves < self.num_leaves:
            chosen = self._choose(best, self.num_leaves - builder.n_leaves)
            if not chosen:
                break
            # Children are searched only if they may be split: below max_depth and room left
            # in the tree after this round. Otherwise no rows need routing for them.
            room = builder.n_leaves + len(chosen) < self.num_leaves
            search = [room and self._can_split_at(builder.leaf_depth[leaf] + 1)
                      for leaf in chosen]
            applied = [(leaf, self._apply(builder, leaf, best[leaf], s), best.pop(leaf))
                       for leaf, s in zip(chosen, search)]
            requests = [(leaf, right_leaf, split, s)
                        for (leaf, right_leaf, split), s in zip(applied, search)]
            records = self._split_pass(requests)
            for (leaf, right_leaf, _, _), (left, right) in zip(requests, records):
                self.source.commit(leaf)
                best[leaf], best[right_leaf] = left, right

    def _grow_best_first(self, builder, best):
        """Exact best-first growth, splitting up to ``lookahead_leaves`` leaves ahead in each
        pass (see the module docstring)."""
        data_id = {0: 0}  # tree leaf -> the source's id of that leaf
        ahead = {}        # tree leaf -> (source id of its right child, left record, right record)
        next_id = 1
        while builder.n_leaves < self.num_leaves:
            ranked = sorted((l for l, s in best.items() if s is not None and s.gain > 0),
                            key=lambda l: (-best[l].gain, l))
            if not ranked:
                break
            leaf = ranked[0]
            remaining = self.num_leaves - builder.n_leaves  # splits left, this one included
            if leaf not in ahead:
                # At most the splits left after this one. Each split in the data takes a new
                # source id: this pass's, plus at most remaining - 1 later ones, must stay
                # below the source's 2 * num_leaves.
                room_ahead = min(self.lookahead_leaves, remaining - 1,
                                 2 * self.num_leaves - next_id - remaining)
                extra = [l for l in ranked[1:] if l not in ahead][:max(0, room_ahead)]
                requests = []
                for l in [leaf] + extra:
                    # The best leaf's children are searched if the tree has room after it; a
                    # leaf split ahead is applied only while there is room, so always search.
                    search = (self._can_split_at(builder.leaf_depth[l] + 1)
                              and (l != leaf or remaining > 1))
                    requests.append((data_id[l], next_id, best[l], search))
                    next_id += 1
                records = self._split_pass(requests)
                for l, (_, right_id, _, search), (left, right) in zip([leaf] + extra, requests,
                                                                      records):
                    ahead[l] = (right_id, left, right, search)
            right_id, left, right, routed = ahead.pop(leaf)
            right_leaf = self._apply(builder, leaf, best.pop(leaf), routed)
            data_id[right_leaf] = right_id
            if remaining > 1:
                # The last split's children are never searched without splitting ahead either:
                # their gains must not reach feature screening.
                self.source.commit(data_id[leaf])
            best[leaf], best[right_leaf] = left, right

    def grow(self, bin_upper_bounds, learning_rate, class_idx,
             bin_categories=None) -> tuple[Tree, TreeBuilder]:
        """Grow the tree; returns the :class:`Tree` and the builder (leaf values before the learning rate)."""
        sp = self.split_params
        t0 = time.perf_counter()
        totals, root_split = self.source.root()
        self.time_waiting += time.perf_counter() - t0
        root_value = (sp.output(totals.sum_gradients, totals.sum_hessians)
                      if totals.sum_hessians + sp.lambda_l2 > 0 else 0.0)
        builder = TreeBuilder(totals, root_value)
        best = {0: root_split if self._can_split_at(0) else None}
        if self.grow_policy == "leafwise" and self.max_leaves_per_pass == 1:
            self._grow_best_first(builder, best)
        else:
            self._grow_in_rounds(builder, best)
        if builder.n_leaves == 1:
            # No split: the tree adds nothing, as in LightGBM (gbdt.cpp TrainOneIter keeps a
            # one-leaf tree's output at 0; only its first iteration would hold the init score,
            # which oocgbdt keeps apart in Booster.init_score).
            builder.leaf_value[0] = 0.0
        tree = builder.build(bin_upper_bounds, learning_rate, class_idx, bin_categories)
        return tree, builder
