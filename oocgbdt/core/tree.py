"""This module contains :class:`Tree`: one fitted regression tree in LightGBM's node layout.

Internal nodes are numbered in split order; ``left_child``/``right_child`` hold an internal node
index (>= 0) or ``~leaf`` (< 0). ``split_feature`` holds ORIGINAL feature indices and
``threshold`` RAW float thresholds (a bin upper bound), so prediction needs no bin mapper;
``threshold_bin`` keeps the bin-space threshold used during training (eval sets are walked on bins).

Categorical nodes keep LightGBM's layout (``Tree::SplitCategorical``, ``src/io/tree.cpp``):
``decision_type`` bit 0 set, ``threshold`` (and ``threshold_bin``) the node's index ``i`` into
``cat_boundaries``; the node's bitset over raw categories is
``cat_threshold[cat_boundaries[i]:cat_boundaries[i + 1]]`` and over bins
``cat_threshold_inner[cat_boundaries_inner[i]:cat_boundaries_inner[i + 1]]``. A row goes left
iff its category (its bin) is in the set; NaN, negative and unseen categories go right.
"""
from __future__ import annotations

import numpy as np

from oocgbdt._dtypes import MISSING_NAN, MISSING_ZERO
from oocgbdt.kernels.categorical import construct_bitset
from oocgbdt.kernels.routing import CATEGORICAL_NODE

__all__ = ["Tree", "TreeBuilder", "decision_type"]

_INT_FIELDS = ("split_feature", "threshold_bin", "left_child", "right_child")
_FLOAT_FIELDS = ("threshold", "split_gain", "internal_value", "internal_weight", "internal_count",
                 "leaf_value", "leaf_weight", "leaf_count")
#: Categorical split fields (LightGBM's names) and their dtypes; absent from older saved models.
_CAT_FIELDS = (("cat_boundaries", np.int32), ("cat_threshold", np.uint32),
               ("cat_boundaries_inner", np.int32), ("cat_threshold_inner", np.uint32))


def decision_type(default_left, missing_type, categorical=False) -> int:
    """LightGBM's ``decision_type`` byte of one node: bit 0 = categorical, bit 1 = default_left,
    bits 2-3 = missing type. Computed on Python ints (a NumPy form cost about 2 us per node)."""
    return int(bool(categorical)) | (int(bool(default_left)) << 1) | (int(missing_type) << 2)


class Tree:
    """A fitted tree. All arrays are NumPy; ``n_leaves - 1`` internal nodes.

    Attributes
    ----------
    split_feature, threshold_bin, left_child, right_child : ndarray (n_nodes,), int32
    threshold : ndarray (n_nodes,), float64
        Raw float threshold: rows with ``x <= threshold`` go left.
    decision_type : ndarray (n_nodes,), uint8
    split_gain, internal_value, internal_weight, internal_count : ndarray (n_nodes,), float64
    leaf_value : ndarray (n_leaves,), float64
        Output of each leaf, already multiplied by ``shrinkage``.
    leaf_weight, leaf_count : ndarray (n_leaves,), float64
        Sum of hessians and number of training rows of each leaf.
    shrinkage : float
    class_idx : int
        The output (class) this tree adds to.
    cat_boundaries, cat_boundaries_inner : ndarray (n_cat_splits + 1,), int32
    cat_threshold, cat_threshold_inner : ndarray, uint32
        Bitsets of the categorical nodes over raw categories and over bins (module docstring).
    """

    def __init__(self, *, split_feature, threshold, threshold_bin, decision_type, left_child,
                 right_child, split_gain, internal_value, internal_weight, internal_count,
                 leaf_value, leaf_weight, leaf_count, shrinkage=1.0, class_idx=0,
                 cat_boundaries=(0,), cat_threshold=(), cat_boundaries_inner=(0,),
                 cat_threshold_inner=()):
        self.split_feature = np.asarray(split_feature, dtype=np.int32)
        self.threshold = np.asarray(threshold, dtype=np.float64)
        self.threshold_bin = np.asarray(threshold_bin, dtype=np.int32)
        self.decision_type = np.asarray(decision_type, dtype=np.uint8)
        self.left_child = np.asarray(left_child, dtype=np.int32)
        self.right_child = np.asarray(right_child, dtype=np.int32)
        self.split_gain = np.asarray(split_gain, dtype=np.float64)
        self.internal_value = np.asarray(internal_value, dtype=np.float64)
        self.internal_weight = np.asarray(internal_weight, dtype=np.float64)
        self.internal_count = np.asarray(internal_count, dtype=np.float64)
        self.leaf_value = np.asarray(leaf_value, dtype=np.float64)
        self.leaf_weight = np.asarray(leaf_weight, dtype=np.float64)
        self.leaf_count = np.asarray(leaf_count, dtype=np.float64)
        self.shrinkage = float(shrinkage)
        self.class_idx = int(class_idx)
        self.cat_boundaries = np.asarray(cat_boundaries, dtype=np.int32)
        self.cat_threshold = np.asarray(cat_threshold, dtype=np.uint32)
        self.cat_boundaries_inner = np.asarray(cat_boundaries_inner, dtype=np.int32)
        self.cat_threshold_inner = np.asarray(cat_threshold_inner, dtype=np.uint32)

    @property
    def n_leaves(self) -> int:
        return int(self.leaf_value.shape[0])

    def set_leaf_counts(self, leaf_count) -> None:
        """Set the rows of each leaf (shape (n_leaves,)) and each node's count as the sum of
        its subtree's leaves: the true counts, counted when the finished tree is applied to the
        rows (the counts recorded while growing are split search estimates for the last splits,
        which no pass routes)."""
        self.leaf_count = np.asarray(leaf_count, dtype=np.float64).copy()
        internal = np.zeros(self.split_feature.shape[0], dtype=np.float64)

        def count(child):
            return self.leaf_count[~child] if child < 0 else internal[child]

        # children have larger node numbers than their parent (nodes are numbered in split order)
        for node in range(internal.shape[0] - 1, -1, -1):
            internal[node] = count(self.left_child[node]) + count(self.right_child[node])
        self.internal_count = internal

    @property
    def default_left(self) -> np.ndarray:
        return (self.decision_type & 2) != 0

    @property
    def missing_type(self) -> np.ndarray:
        return (self.decision_type >> 2) & 3

    @property
    def is_categorical(self) -> np.ndarray:
        return (self.decision_type & 1) != 0

    def binned_arrays(self, default_bins, n_bins) -> dict:
        """Arrays for :func:`oocgbdt.kernels.predict.predict_binned` (walks binned rows)."""
        f = self.split_feature
        # A categorical node is marked by missing_type CATEGORICAL_NODE; its threshold_bin is
        # its index into cat_boundaries_inner.
        missing = np.where(self.is_categorical, CATEGORICAL_NODE, self.missing_type).astype(np.uint8)
        return dict(split_feature=f, threshold_bin=self.threshold_bin,
                    default_left=self.default_left, missing_type=missing,
                    default_bin=np.asarray(default_bins, dtype=np.int32)[f],
                    nan_bin=(np.asarray(n_bins, dtype=np.int32) - 1)[f],
                    left_child=self.left_child, right_child=self.right_child,
                    leaf_value=self.leaf_value,
                    cat_boundaries=self.cat_boundaries_inner.astype(np.int64),
                    cat_threshold=self.cat_threshold_inner)

    def to_dict(self) -> dict:
        d = {k: getattr(self, k).tolist() for k in _INT_FIELDS + _FLOAT_FIELDS}
        d["decision_type"] = self.decision_type.tolist()
        d["shrinkage"] = self.shrinkage
        d["class_idx"] = self.class_idx
        for k, _ in _CAT_FIELDS:
            d[k] = [int(x) for x in getattr(self, k)]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Tree":
        return cls(**d)

    def __eq__(self, other):
        if not isinstance(other, Tree):
            return NotImplemented
        return all(np.array_equal(getattr(self, k), getattr(other, k), equal_nan=True)
                   for k in _INT_FIELDS + _FLOAT_FIELDS + ("decision_type",)
                   + tuple(k for k, _ in _CAT_FIELDS)) \
            and self.shrinkage == other.shrinkage and self.class_idx == other.class_idx


class TreeBuilder:
    """Records splits in LightGBM's order (``Tree::Split``, ``include/LightGBM/tree.h``)."""

    def __init__(self, root_totals, root_value):
        self.nodes = []                         # dicts per internal node
        self.leaf_parent = [-1]
        self.leaf_value = [root_value]
        self.leaf_weight = [root_totals.sum_hessians]
        self.leaf_count = [root_totals.count]
        self.leaf_depth = [0]
        self.cat_bins = []                      # per categorical node: its left bins

    @property
    def n_leaves(self):
        return len(self.leaf_value)

    def split(self, leaf, split, missing_type, parent_value, left_value, right_value):
        node = len(self.nodes)
        right_leaf = self.n_leaves
        parent = self.leaf_parent[leaf]
        if parent >= 0:
            if self.nodes[parent]["left_child"] == ~leaf:
                self.nodes[parent]["left_child"] = node
            else:
                self.nodes[parent]["right_child"] = node
        categorical = split.cat_bins is not None
        if categorical:
            self.cat_bins.append(tuple(split.cat_bins))
        self.nodes.append(dict(
            split_feature=split.feature,
            threshold_bin=len(self.cat_bins) - 1 if categorical else split.threshold_bin,
            decision_type=decision_type(split.default_left, missing_type, categorical),
            left_child=~leaf, right_child=~right_leaf, split_gain=split.gain,
            internal_value=parent_value, internal_weight=self.leaf_weight[leaf],
            internal_count=self.leaf_count[leaf]))
        depth = self.leaf_depth[leaf] + 1
        self.leaf_parent[leaf] = node
        self.leaf_parent.append(node)
        self.leaf_value[leaf] = left_value
        self.leaf_value.append(right_value)
        self.leaf_weight[leaf] = split.left.sum_hessians
        self.leaf_weight.append(split.right.sum_hessians)
        self.leaf_count[leaf] = split.left.count
        self.leaf_count.append(split.right.count)
        self.leaf_depth[leaf] = depth
        self.leaf_depth.append(depth)
        return right_leaf

    def build(self, bin_upper_bounds, learning_rate, class_idx, bin_categories=None) -> Tree:
        """Finish: shrink outputs and attach raw thresholds (``bin_upper_bounds[f][bin]``); a
        categorical node's threshold is its index into ``cat_boundaries``, and its bitsets are
        built over its bins and over their categories (``bin_categories[f][bin]``,
        LightGBM's ``RealThreshold``)."""
        col = {k: [n[k] for n in self.nodes] for k in
               ("split_feature", "threshold_bin", "decision_type", "left_child", "right_child",
                "split_gain", "internal_value", "internal_weight", "internal_count")}
        threshold = [float(b) if d & 1 else float(bin_upper_bounds[f][b]) for f, b, d in
                     zip(col["split_feature"], col["threshold_bin"], col["decision_type"])]
        cat = dict(cat_boundaries=[0], cat_threshold=[], cat_boundaries_inner=[0],
                   cat_threshold_inner=[])
        cat_features = [f for f, d in zip(col["split_feature"], col["decision_type"]) if d & 1]
        for f, bins in zip(cat_features, self.cat_bins):
            inner = construct_bitset(bins)
            raw = construct_bitset(np.asarray(bin_categories[f], dtype=np.int64)[list(bins)])
            cat["cat_threshold_inner"].extend(inner.tolist())
            cat["cat_boundaries_inner"].append(len(cat["cat_threshold_inner"]))
            cat["cat_threshold"].extend(raw.tolist())
            cat["cat_boundaries"].append(len(cat["cat_threshold"]))
        col["internal_value"] = np.asarray(col["internal_value"], dtype=np.float64) * learning_rate
        return Tree(threshold=threshold,
                    leaf_value=np.asarray(self.leaf_value, dtype=np.float64) * learning_rate,
                    leaf_weight=self.leaf_weight, leaf_count=self.leaf_count,
                    shrinkage=learning_rate, class_idx=class_idx, **cat, **col)
