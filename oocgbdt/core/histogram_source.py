"""This module contains the histogram source: where the tree grower gets split candidates.

Data flow position: between the grower (which only decides which leaves to split) and the partitions
(which hold rows). Each request is one pass over the rows it touches: per partition, route the rows
of every leaf split in the pass and histogram the children to build (one fused task,
:func:`~oocgbdt.core.partition.partition_split_many`); tree-reduce the stacked partial histograms; in the
final task, derive each sibling by subtraction and search both children of every split.
Histograms stay where the executor keeps them; only :class:`~oocgbdt.core.split.SplitInfo`
records reach the caller.

Kept histograms (the histogram pool). Between passes the source keeps the histogram of each open
leaf, so that splitting it later histograms only its smaller child. ``max_cached`` bounds how
many are kept (LightGBM's ``histogram_pool_size``, converted to histograms by the caller). Leaves
whose best split has no positive gain are never split (the grower's rule), so their histograms
are dropped as soon as their split records arrive. When the pool is still over the bound, the
histograms of the open leaves with the SMALLEST best-split gain are dropped first (ties: the
higher leaf index, which loses ties when the grower picks leaves): both growth policies split
open leaves in decreasing gain order, so these are the last to be split, and under the
``num_leaves`` budget the likeliest never to be. LightGBM's ``HistogramPool`` evicts the least
recently used slot instead, which in leaf-wise growth is roughly the oldest leaf, not the least
promising one. A leaf split after its histogram was dropped gets both children histogrammed in
the pass (no subtraction).
"""
from __future__ import annotations

import time
from functools import partial

from dataclasses import replace

import numpy as np

from oocgbdt.core.executor import EVERYWHERE, LocalExecutor, reduce_levels
from oocgbdt.core.node_sampling import merge_block_samplers
from oocgbdt.core.partition import (BUILD_BOTH, BUILD_LEFT, BUILD_RIGHT, SplitPlan, block_count,
                                build_block, finish_pass, finish_root, finish_split_many,
                                finish_split_pass, histogram_rows, histograms_only,
                                partition_root, partition_split_many, pass_histogram,
                                pass_records, start_root, start_split_many, sum_histograms,
                                tree_rows_only)

__all__ = ["HistogramSource", "merge_block_records", "pass_cells", "start_pass_work"]


#: In process, a split pass is shared out to the threads only when it builds at least this
#: many histogram cells (rows x columns, from the split records' row counts): below it, the
#: hand-offs between threads cost more than the second thread saves. ``python -m
#: benchmarks.shared_passes`` (each pass shared or not by a coin flip, 2 threads): from 2^17 to
#: 2^18 cells a shared pass took 1.16-1.37x the time of one on the loop's thread alone (400k x
#: 50 and x 100), from 2^18 to 2^19 0.93x on 400k x 50 and 1.05-1.18x on 400k and 1M x 100,
#: and above 2^19 0.48-0.80x everywhere. With each partition then built whole by one thread
#: (``MIN_PARTITION_BLOCK_CELLS``), 2^17 to 2^18 cells were even (0.98x on 400k x 50) and
#: 2^18 to 2^19 0.83-0.87x (400k x 50, 1M x 100).
MIN_SHARED_PASS_CELLS = 2 ** 18


def pass_cells(plan, n_columns: int) -> float:
    """The histogram cells a split pass builds, estimated from its splits' row counts (the
    split records' estimates): the smaller child of each split whose parent histogram is kept,
    both children otherwise, times ``n_columns`` built columns. What
    :data:`MIN_SHARED_PASS_CELLS` is compared with."""
    rows = sum(min(s.left.count, s.right.count) if b != BUILD_BOTH
               else s.left.count + s.right.count for s, b in zip(plan.splits, plan.build))
    return float(rows) * n_columns


def start_pass_work(start, n_threads, works, i, *args):
    """``works[i] = start(*args)`` (a :class:`~oocgbdt.core.partition.PassWork`: one
    partition's rows routed), and the calls that build its column blocks
    (:func:`~oocgbdt.core.partition.block_count` on ``n_threads``, for a pass over
    ``len(works)`` partitions), to be shared out
    (:meth:`~oocgbdt.core.executor.KernelThreads.share`); a block too small to share is built
    here, and no call is returned."""
    work = works[i] = start(*args)
    k = block_count(work.cells, n_threads, len(works))
    if k == 1:
        build_block(work, 0, 1)
        return None
    return [partial(build_block, work, j, k) for j in range(k)]


def merge_block_records(records, gains):
    """Merge the finish steps' results of the feature blocks of one pass into what a single
    finish step gives (:func:`~oocgbdt.core.partition.finish_split_many`).

    Parameters
    ----------
    records : list over feature_blocks (in feature order) of lists of ``(left, right)`` SplitInfo or None
    gains : list over feature_blocks of ndarray of shape (n_splits, n_features)
        ``-inf`` outside each block's features.

    Returns
    -------
    (records, gains)
        Per split and child, the best block's SplitInfo (the higher gain; on a tie the lower
        feature, which is in the earlier block, as ``np.argmax`` picks over all features),
        its ``splittable`` the union of the feature_blocks' (each is False outside its features);
        the gains are the elementwise maximum over feature_blocks.
    """
    merged = []
    for per_split in zip(*records):
        pair = []
        for side in (0, 1):
            best, splittable = None, None
            for rec in (seg[side] for seg in per_split):
                if rec is None:
                    continue
                splittable = rec.splittable if splittable is None else splittable | rec.splittable
                if best is None or rec.gain > best.gain:
                    best = rec
            pair.append(None if best is None else replace(best, splittable=splittable))
        merged.append(tuple(pair))
    return merged, np.maximum.reduce(list(gains))


class HistogramSource:
    """Histograms of one tree's leaves over a list of partitions, computed through a executor.

    Parameters
    ----------
    partitions : list of handles to :class:`~oocgbdt.core.partition.PartitionData` (gradients computed)
    class_idx : int
        Which output's gradients this tree fits.
    meta, params : handles to FeatureMeta and SplitParams (scattered once)
    max_leaves : int
    executor : LocalExecutor or the Dask layer's executor, default LocalExecutor()
    split_every : int, default 8
        Fan-in of the histogram reduction.
    key : str
        Prefix of task keys (unique per tree).
    max_cached : int or None, default None
        At most this many leaf histograms are kept between passes (None: no bound; 0: none, so
        every split histograms both children).
    feature_blocks : list of ``(lo, hi, search meta handle)``, or None
        Share each split pass's reduction and search out by feature blocks (see
        :func:`~oocgbdt.core.split.feature_blocks`; ``meta`` must carry their count rows):
        block ``k``'s slices of the partial histograms are summed and searched on the
        executor's place ``k`` (a shard), where its slice of every kept histogram stays, and
        the caller merges the feature_blocks' best splits. The splits found are the same, and every
        histogram value is added in the same order. None: one final step sums and searches all.
    replicate : bool, default False
        Without feature_blocks: run the final steps (sum the last reduction level, search, keep the
        children's histograms) at every place of the executor (``place=EVERYWHERE``), each on
        its own copy of the partials, so that the split records and the kept histograms are
        already everywhere (see :class:`~oocgbdt.runtime.spmd.SpmdExecutor`). The same values
        as one final step.
    node : NodeSampler or None
        Per-node feature rules and their random streams (:mod:`oocgbdt.core.node_sampling`),
        for this tree (:meth:`~oocgbdt.core.node_sampling.NodeSampler.for_tree`); every final
        step gets it with the branch features of the leaves it searches, and the source keeps
        the sampler each pass returns (:attr:`node`, read by the loop for the next tree).

    Attributes
    ----------
    n_passes : int
        Passes over the data (the root pass included).
    n_hist_built, n_hist_subtracted : int
        Leaf histograms built from rows (root included) and derived as parent minus sibling.
    n_hist_dropped : int
        Kept histograms dropped to respect ``max_cached`` (leaves without a positive gain, whose
        histograms are always freed, are not counted).
    max_hist_kept : int
        Most leaf histograms kept at once between passes.
    feature_gains : ndarray of shape (n_features,), dtype float64, or None
        Per feature, the best split gain seen in the root and in the children of every
        committed split (:meth:`commit`) of this tree.
    """

    def __init__(self, partitions, class_idx, meta, params, max_leaves, *, executor=None,
                 split_every=8, key="oocgbdt", max_cached=None, feature_blocks=None,
                 replicate=False, node=None):
        self.executor = executor if executor is not None else LocalExecutor()
        self.partitions = list(partitions)
        self.class_idx = class_idx
        self.meta = meta
        self.params = params
        self.max_leaves = max_leaves
        self.split_every = split_every
        self.key = key
        self.max_cached = None if max_cached is None else max(0, int(max_cached))
        self.feature_blocks = list(feature_blocks) if feature_blocks else None
        self.replicate = bool(replicate) and self.feature_blocks is None
        # In process a step is never run again and each partial or parent histogram is read
        # once: sums and siblings are then made in their inputs' arrays.
        self._consume = isinstance(self.executor, LocalExecutor)
        # Where the final steps run: every place at once (each sums the partials and searches
        # on its own copy, so split records need not travel), or where their inputs are.
        self._final = EVERYWHERE if self.replicate else None
        self._rows = None           # per-partition handles of (TreeRows, histograms)
        self._hist = {}             # leaf -> handle of its histogram (a list: one per feature block)
        self._gain = {}             # leaf -> best split gain of a leaf in _hist (pool priority)
        self.n_passes = 0
        self.n_hist_built = 0
        self.n_hist_subtracted = 0
        self.n_hist_dropped = 0
        self.max_hist_kept = 0
        self.feature_gains = None
        self._split_gains = {}      # split leaf -> its children's per-feature gains (uncommitted)
        self.node = node
        self._branch = {0: ()}      # leaf -> features on its branch (interaction constraints)

    def _record(self, gains):
        self.feature_gains = gains if self.feature_gains is None else np.maximum(self.feature_gains, gains)

    def _keep(self, leaf, split):
        """After a pass: keep ``leaf``'s histogram only if it may be split (positive gain)."""
        if split is None or not split.gain > 0:
            self._hist.pop(leaf, None)
        else:
            self._gain[leaf] = split.gain

    def _bound_pool(self):
        """Drop kept histograms, least promising first, down to ``max_cached``."""
        for leaf in [l for l in self._gain if l not in self._hist]:
            del self._gain[leaf]
        if self.max_cached is not None and len(self._hist) > self.max_cached:
            ranked = sorted(self._hist, key=lambda l: (self._gain[l], -l))
            for leaf in ranked[:len(self._hist) - self.max_cached]:
                del self._hist[leaf]
                del self._gain[leaf]
                self.n_hist_dropped += 1
        self.max_hist_kept = max(self.max_hist_kept, len(self._hist))

    @property
    def kept_leaves(self) -> list:
        """Leaves whose histograms are kept right now (sorted)."""
        return sorted(self._hist)

    def root(self):
        """Histogram all rows into leaf 0; returns ``(LeafTotals, SplitInfo or None)``."""
        b = self.executor
        n = len(self.partitions)
        self._rows = self._run_pass(partition_root, start_root, finish_pass,
                                    (self.partitions, [self.class_idx] * n, [self.meta] * n,
                                     [self.max_leaves] * n), f"{self.key}-root")
        parts = self._sum_pass(self._rows, f"{self.key}-sum-root")
        found = b.submit(finish_root, parts, self.meta, self.params, self.node,
                         key=f"{self.key}-find-root", place=self._final)
        res = b.submit(pass_records, found, key=f"{self.key}-records-root", place=self._final)
        hist = b.submit(pass_histogram, found, key=f"{self.key}-hist-root", place=self._final)
        if self.feature_blocks is not None:  # views on the root's shard, pushed where searched
            hist = [b.submit(histogram_rows, hist, lo, hi, key=f"{self.key}-hist-root-{k}")
                    for k, (lo, hi, _) in enumerate(self.feature_blocks)]
        self._hist = {0: hist}
        self.n_passes += 1
        self.n_hist_built += 1
        self._drop_partials()  # queued before the wait: see _drop_partials
        totals, split, gains, self.node = b.gather(res)
        self._record(gains)
        self._keep(0, split)
        self._bound_pool()
        return totals, split

    def _run_pass(self, task, start, finish, iterables, key, consume=None, shared=True):
        """Handles of a pass's per-partition results: ``task`` per partition, or, on an
        executor whose threads share a pass (:attr:`LocalExecutor.kernel_threads`), ``start``
        per partition (routing), each adding its histograms' column blocks
        (:func:`build_block`) to the shared calls as soon as it is routed (so unequal
        partitions keep every thread busy and no thread waits for the slowest routing; see
        :func:`start_pass_work`), then ``finish``.
        The same values. ``shared`` False: a small pass, run on this thread alone (same values)."""
        b = self.executor
        threads = getattr(b, "kernel_threads", None)
        if threads is None:
            return b.map(task, *iterables, key=key, consume=consume)
        t0 = time.perf_counter()
        n = len(iterables[0])
        works = [None] * n
        calls = [partial(start_pass_work, start, threads.n_threads if shared else 1, works, i,
                         *args) for i, args in enumerate(zip(*iterables))]
        if shared:
            threads.share(calls, spawns=True)
        else:
            for call in calls:
                call()
        out = b.map(finish, works, key=f"{key}-finish")
        # the pass's time under the one-task name, as remote executors report it (tree_stats)
        b.seconds[task.__name__] += time.perf_counter() - t0
        return out

    def _sum_pass(self, results, key):
        """The pass's partial histograms summed once, as a one-element list: consecutive pairs,
        then the fan-in levels (``split_every``), then the last level summed in one step, which
        the finish step reads. The reduction reads the partial histograms alone
        (:func:`histograms_only`): a partial sent to another worker does not carry the partition's
        row order."""
        b = self.executor
        consume = (self._consume,)  # sums made in the first part's array (see __init__)
        hists = b.map(histograms_only, results, key=f"{key}-hists")
        if 2 < len(hists) <= 2 * self.split_every:
            # Consecutive pairs first: partitions sit on workers in contiguous blocks, so a pair
            # is summed where both partials are and only half of them move (the grouping
            # depends on the number of partitions alone, never on the workers). Only for a few
            # partitions, where a pass is short and the move is a large part of it: the pair
            # sums are one more array per pair held during the pass, which with many
            # partitions (data larger than memory) would add half the partials' memory.
            hists = [b.submit(sum_histograms, hists[i:i + 2], *consume,
                              key=f"{key}-pair-{i // 2}")
                     if i + 1 < len(hists) else hists[i] for i in range(0, len(hists), 2)]
        parts = reduce_levels(b, sum_histograms, hists, self.split_every, key, extra=consume)
        if self.feature_blocks is not None or self.replicate:
            return parts  # summed by the finish steps (per feature block: see _finish_blocks)
        return [b.submit(sum_histograms, parts, *consume, key=f"{key}-last")]

    def _drop_partials(self):
        """Keep only each partition's row grouping between passes: its partial histograms (one per
        partition and built child, p x k x n_hist_bins x 16 bytes in all) are consumed by this
        pass's reduction. Called before the pass's split records are gathered: a deferring
        executor (the actor executor) then runs it in the same batch as the pass, so the partials
        are released by the next pass's call, before that pass makes its own (issued after the
        gather, it would run with the next pass and the partials of two passes be held at once).
        Every step that reads the pass's results was issued before it, so they are consumed."""
        self._rows = self.executor.map(tree_rows_only, self._rows,
                                      key=f"{self.key}-p{self.n_passes}-keep", consume=0)

    def split_many(self, requests):
        """Apply several splits in one pass; returns each split's children's best splits.

        Parameters
        ----------
        requests : list of ``(leaf, right_leaf, SplitInfo, search)``
            ``search`` False: the children will never be split (depth or leaf budget), so the
            split needs no rows routed and no histograms; the leaf's histogram is freed.

        Returns
        -------
        list of ``(left SplitInfo or None, right SplitInfo or None)``, one per request
            ``(None, None)`` where ``search`` is False. No pass is made when no request
            searches.

        Per searched split, the child with fewer rows is histogrammed (the right one on a tie)
        and its sibling is the parent's kept histogram minus it; both children are histogrammed
        when the parent's histogram was not kept.
        """
        out = [(None, None)] * len(requests)
        todo = []
        for idx, (leaf, right_leaf, split, search) in enumerate(requests):
            parent = self._hist.pop(leaf, None)
            branch = self._branch.get(leaf, ()) + (int(split.feature),)
            self._branch[leaf] = self._branch[right_leaf] = branch
            if search:
                todo.append((idx, leaf, right_leaf, split, parent))
        if not todo:
            self._bound_pool()
            return out
        b = self.executor
        n = len(self.partitions)
        build = []
        for _, _, _, split, parent in todo:
            if parent is None:
                build.append(BUILD_BOTH)
            else:
                build.append(BUILD_LEFT if split.left.count < split.right.count else BUILD_RIGHT)
        plan = SplitPlan(tuple(t[1] for t in todo), tuple(t[2] for t in todo),
                         tuple(t[3] for t in todo), tuple(build))
        tag = f"{self.key}-p{self.n_passes}"
        threads = getattr(b, "kernel_threads", None)
        shared = True
        if threads is not None:  # in process: is the pass worth sharing out?
            shared = pass_cells(plan, len(self.meta.hist_columns)) >= MIN_SHARED_PASS_CELLS
        self._rows = self._run_pass(partition_split_many, start_split_many, finish_split_pass,
                                    (self.partitions, self._rows, [self.class_idx] * n,
                                     [self.meta] * n, [plan] * n), f"{tag}-route", consume=1,
                                    shared=shared)
        parts = self._sum_pass(self._rows, f"{tag}-sum")
        parents = [t[4] for t in todo]
        branches = tuple(self._branch[t[1]] for t in todo) if self.node is not None else None
        if self.feature_blocks is None:
            found = b.submit(finish_split_many, parents, parts, plan, self.meta, self.params,
                             self.node, branches, threads, self._consume, key=f"{tag}-find",
                             place=self._final)
            res = b.submit(pass_records, found, key=f"{tag}-records", place=self._final)
            for i, (_, leaf, right_leaf, _, _) in enumerate(todo):
                for side, child in ((0, leaf), (1, right_leaf)):
                    self._hist[child] = b.submit(pass_histogram, found, i, side,
                                                 key=f"{tag}-hist-{child}", place=self._final)
        else:
            res = self._finish_blocks(parents, parts, plan, todo, tag, branches)
        built = plan.built()
        self.n_passes += 1
        self.n_hist_built += len(built)
        self.n_hist_subtracted += 2 * len(todo) - len(built)
        self._drop_partials()  # queued before the wait: see _drop_partials
        if self.feature_blocks is None:
            records, gains, self.node = b.gather(res)
        else:
            got = b.gather(res)
            records, gains = merge_block_records([g[0] for g in got], [g[1] for g in got])
            if self.node is not None:
                self.node = merge_block_samplers([g[2] for g in got], self.node)
        for (idx, leaf, right_leaf, _, _), (left, right), g in zip(todo, records, gains):
            self._split_gains[leaf] = g
            out[idx] = (left, right)
            self._keep(leaf, left)
            self._keep(right_leaf, right)
        self._bound_pool()
        return out

    def _finish_blocks(self, parents, parts, plan, todo, tag, branches):
        """Queue one finish step per feature block, on the block's place: it sums the
        block's slices of ``parts`` (the same additions, in the same order, as one final sum)
        and searches the block's features of every split's children, whose block slices it
        keeps. Returns the handles of the feature_blocks' records."""
        b = self.executor
        res = []
        # Every slice first: each shard then sends the others theirs before it waits for its own.
        slices = [[b.submit(histogram_rows, p, lo, hi, key=f"{tag}-slice-{k}-{j}")
                   for j, p in enumerate(parts)] for k, (lo, hi, _) in enumerate(self.feature_blocks)]
        for k, (lo, hi, block_meta) in enumerate(self.feature_blocks):
            seg_parents = [None if p is None else p[k] for p in parents]
            found = b.submit(finish_split_many, seg_parents, slices[k], plan, block_meta, self.params,
                             self.node, branches, key=f"{tag}-find-{k}", place=k)
            res.append(b.submit(pass_records, found, key=f"{tag}-records-{k}", place=k))
            for i, (_, leaf, right_leaf, _, _) in enumerate(todo):
                for side, child in ((0, leaf), (1, right_leaf)):
                    if k == 0:
                        self._hist[child] = []
                    self._hist[child].append(b.submit(pass_histogram, found, i, side,
                                                      key=f"{tag}-hist-{child}-{k}", place=k))
        return res

    def commit(self, leaf):
        """Count the split of ``leaf`` made by the last :meth:`split_many` that split it into
        :attr:`feature_gains` (its children's best gains per feature): the grower calls this for
        each split it applies to the tree. A split never committed (made ahead of its turn and
        then not needed) leaves no trace in the gains that feature screening reads."""
        gains = self._split_gains.pop(leaf, None)
        if gains is not None:
            self._record(gains)

    def split(self, leaf, right_leaf, split):
        """Apply one split (a one-request :meth:`split_many`, committed); returns
        ``(left, right)``."""
        out = self.split_many([(leaf, right_leaf, split, True)])[0]
        self.commit(leaf)
        return out

    def forget(self, leaf):
        """Free the histogram of a leaf that will not be split."""
        self._hist.pop(leaf, None)
        self._gain.pop(leaf, None)

    @property
    def rows(self) -> list:
        """Handles of each partition's :class:`~oocgbdt.core.partition.TreeRows` after the last pass (the
        rows grouped by the leaves the passes routed them to), until :meth:`close`."""
        return list(self._rows)

    def close(self):
        """Drop every handle of this tree (histograms and row partitions)."""
        self._rows = None
        self._hist.clear()
        self._gain.clear()
        self._split_gains.clear()
