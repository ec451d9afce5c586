"""This module contains the histogram source: where the tree grower gets split candidates.

Data flow position: between the grower (which only decides which leaf to split next) and the
chunks (which hold rows). Each request is one pass over the rows it touches: per chunk, route the
split leaf's rows and histogram the smaller child (one fused task); tree-reduce the partial
histograms; in the final task, derive the sibling by subtraction and search both children's best
splits. Histograms stay where the backend keeps them; only :class:`~oocgbdt.core.split.SplitInfo`
records reach the caller.
"""
from __future__ import annotations

import numpy as np

from oocgbdt.core.backend import LocalBackend, reduce_levels
from oocgbdt.core.chunk import (chunk_root, chunk_split, finish_root, finish_split, root_histogram,
                                subtract_parts, sum_histograms)

__all__ = ["HistogramSource"]


class HistogramSource:
    """Histograms of one tree's leaves over a list of chunks, computed through a backend.

    Parameters
    ----------
    chunks : list of handles to :class:`~oocgbdt.core.chunk.ChunkData` (gradients computed)
    class_idx : int
        Which output's gradients this tree fits.
    meta, params : handles to FeatureMeta and SplitParams (scattered once)
    max_leaves : int
    backend : LocalBackend or the Dask layer's backend, default LocalBackend()
    split_every : int, default 8
        Fan-in of the histogram reduction.
    key : str
        Prefix of task keys (unique per tree).
    """

    def __init__(self, chunks, class_idx, meta, params, max_leaves, *, backend=None,
                 split_every=8, key="oocgbdt"):
        self.backend = backend if backend is not None else LocalBackend()
        self.chunks = list(chunks)
        self.class_idx = class_idx
        self.meta = meta
        self.params = params
        self.max_leaves = max_leaves
        self.split_every = split_every
        self.key = key
        self._rows = None           # per-chunk handles of (TreeRows, histogram)
        self._hist = {}             # leaf -> handle of its histogram
        self.n_passes = 0
        self.feature_gains = None   # per feature: best split gain seen in any leaf of this tree

    def _record(self, gains):
        self.feature_gains = gains if self.feature_gains is None else np.maximum(self.feature_gains, gains)

    def root(self):
        """Histogram all rows into leaf 0; returns ``(LeafTotals, SplitInfo or None)``."""
        b = self.backend
        n = len(self.chunks)
        self._rows = b.map(chunk_root, self.chunks, [self.class_idx] * n, [self.meta] * n,
                           [self.max_leaves] * n, key=f"{self.key}-root")
        parts = reduce_levels(b, sum_histograms, self._rows, self.split_every, f"{self.key}-sum-root")
        res = b.submit(finish_root, parts, self.meta, self.params, key=f"{self.key}-find-root")
        self._hist = {0: b.submit(root_histogram, parts, self.meta, key=f"{self.key}-hist-root")}
        self.n_passes += 1
        totals, split, gains = b.gather(res)
        self._record(gains)
        return totals, split

    def split(self, leaf, right_leaf, split):
        """Apply ``split`` to ``leaf``; returns the children's best splits ``(left, right)``.

        The child with fewer rows is histogrammed (the right one on a tie); the other is its
        parent minus it.
        """
        b = self.backend
        n = len(self.chunks)
        build_left = split.left.count < split.right.count
        tag = f"{self.key}-p{self.n_passes}"
        self._rows = b.map(chunk_split, self.chunks, self._rows, [self.class_idx] * n,
                           [self.meta] * n, [leaf] * n, [right_leaf] * n, [split] * n,
                           [build_left] * n, key=f"{tag}-route")
        parts = reduce_levels(b, sum_histograms, self._rows, self.split_every, f"{tag}-sum")
        parent = self._hist.pop(leaf)
        res = b.submit(finish_split, parent, parts, build_left, split, self.meta, self.params,
                       key=f"{tag}-find")
        built = b.submit(sum_histograms, parts, key=f"{tag}-built")
        sibling = b.submit(subtract_parts, parent, parts, key=f"{tag}-sibling")
        self._hist[leaf], self._hist[right_leaf] = (built, sibling) if build_left else (sibling, built)
        self.n_passes += 1
        left, right, gains = b.gather(res)
        self._record(gains)
        return left, right

    def forget(self, leaf):
        """Free the histogram of a leaf that will not be split."""
        self._hist.pop(leaf, None)

    def close(self):
        """Drop every handle of this tree (histograms and row partitions)."""
        self._rows = None
        self._hist.clear()
