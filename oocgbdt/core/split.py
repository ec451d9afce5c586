"""This module contains split records and the per-leaf split search built on the kernels.

Data flow position: the final task of each tree-reduced histogram pass calls :func:`best_split`
on the worker that holds the histogram; only the small :class:`SplitInfo` travels to the client.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from functools import cached_property

import numpy as np

from oocgbdt.kernels.bundling import expand_histogram
from oocgbdt.kernels.categorical import find_best_categorical_splits
from oocgbdt.kernels.quantize import QUANT_DTYPE, find_best_thresholds_int, unpack
from oocgbdt.kernels.splitting import (K_EPSILON, _find_best_thresholds, canonical_leaf_terms,
                                      leaf_output, leaf_output_ex, monotone_penalty_factor)

__all__ = ["FeatureMeta", "SplitParams", "SplitInfo", "LeafTotals", "LeafContext", "best_split",
           "best_split_int",
           "leaf_totals", "feature_blocks", "check_monotone_constraints"]


@dataclass(frozen=True)
class FeatureMeta:
    """Per-feature binning metadata that split search and row routing need (NumPy only).

    Attributes
    ----------
    bin_offsets : ndarray of shape (n_features + 1,), dtype int64
        Feature ``f``'s bins are rows ``[bin_offsets[f], bin_offsets[f + 1])`` of a histogram;
        ``bin_offsets[0] == 1``: row 0 is the count row (see :mod:`oocgbdt.kernels.histogram`).
    n_bins : ndarray of shape (n_features,), dtype int32
        Bins per feature, including the NaN bin (always the last one) for NaN-type features.
    missing_types : ndarray of shape (n_features,), dtype uint8
        0 None, 1 Zero, 2 NaN (LightGBM's MissingType).
    default_bins : ndarray of shape (n_features,), dtype int32
        The bin of 0.0.
    feature_mask : ndarray of shape (n_features,), dtype bool
        Features that may be split on (not trivial).
    most_freq_bins : ndarray of shape (n_features,), dtype int32, or None
        The most frequent bin (LightGBM's ``GetMostFreqBin``): split search estimates counts of
        a NaN-type feature whose most frequent bin is 0 as LightGBM does (see
        :mod:`oocgbdt.kernels.splitting`). None: unknown, taken as never 0.

    With Exclusive Feature Bundling (``from_bin_mapper(bin_mapper, bundler)``), histograms are
    built per bundle column and these are set too (see :mod:`oocgbdt.kernels.bundling`):

    bundle_offsets : ndarray of shape (n_bundles + 1,), dtype int64
        Bundle ``c``'s bins are rows ``[bundle_offsets[c], bundle_offsets[c + 1])`` of a
        histogram (``bundle_offsets[0] == 1``, after the count row).
    feature_bundle, feature_start : ndarray of shape (n_features,), dtype int64
        Each feature's bundle (-1: none) and offset in it.
    feature_raw : ndarray of shape (n_features,), dtype bool
        Features alone in their bundle (stored with their own bins).
    expand_index : ndarray of shape (n_total_bins,), dtype int64
        Bundle histogram row of each (feature, bin) (row 0: the count row, 0); -1 where the
        bin is recovered by subtraction.
    is_categorical : ndarray of shape (n_features,), dtype bool, or None
        Features split by category sets (:mod:`oocgbdt.kernels.categorical`); None: none.
        Categorical features are never bundled with others, so their bins are read as built.
    """

    bin_offsets: np.ndarray
    n_bins: np.ndarray
    missing_types: np.ndarray
    default_bins: np.ndarray
    feature_mask: np.ndarray
    bundle_offsets: np.ndarray | None = None
    feature_bundle: np.ndarray | None = None
    feature_start: np.ndarray | None = None
    feature_raw: np.ndarray | None = None
    expand_index: np.ndarray | None = None
    most_freq_bins: np.ndarray | None = None
    is_categorical: np.ndarray | None = None

    @classmethod
    def from_bin_mapper(cls, bin_mapper, bundler=None) -> "FeatureMeta":
        # Histogram rows start after the count row (row 0).
        bin_offsets = np.asarray(bin_mapper.bin_offsets_, dtype=np.int64)
        extra = {}
        if bundler is not None:
            index = bundler.expand_index(bin_offsets)
            extra = dict(bundle_offsets=np.asarray(bundler.bundle_offsets_, dtype=np.int64) + 1,
                         feature_bundle=np.asarray(bundler.feature_bundle_, dtype=np.int64),
                         feature_start=np.asarray(bundler.feature_start_, dtype=np.int64),
                         feature_raw=np.asarray(bundler.feature_raw_, dtype=bool),
                         expand_index=np.concatenate(([0], np.where(index >= 0, index + 1, -1)))
                         .astype(np.int64))
        return cls(
            bin_offsets=bin_offsets + 1,
            n_bins=np.asarray(bin_mapper.n_bins_, dtype=np.int32),
            missing_types=np.asarray(bin_mapper.missing_types_, dtype=np.uint8),
            default_bins=np.asarray(bin_mapper.default_bins_, dtype=np.int32),
            feature_mask=~np.asarray(bin_mapper.is_trivial_, dtype=bool),
            most_freq_bins=np.asarray(bin_mapper.most_freq_bins_, dtype=np.int32),
            is_categorical=(np.asarray(bin_mapper.is_categorical_, dtype=bool)
                            if getattr(bin_mapper, "is_categorical_", None) is not None
                            and bin_mapper.is_categorical_.any() else None),
            **extra,
        )

    def with_feature_mask(self, mask: np.ndarray) -> "FeatureMeta":
        """This metadata with ``feature_mask`` replaced by ``mask`` (same layout): what
        ``dataclasses.replace(self, feature_mask=mask)`` gives, without its field
        introspection and checks (about 10 us against 1; a split's children call it per
        pass). Cached values that depend on the mask are left to be recomputed; the one that
        follows from the layout alone, :attr:`expand_is_copy` (a check over every bin, about
        30 us on 50 x 255 bins), is carried over."""
        out = object.__new__(type(self))
        values, source = out.__dict__, self.__dict__
        for name in _META_FIELDS:
            values[name] = source[name]
        values["feature_mask"] = mask
        if "expand_is_copy" in source:
            values["expand_is_copy"] = source["expand_is_copy"]
        return out

    def search_most_freq_bins(self) -> np.ndarray:
        """:attr:`most_freq_bins`, or ``-1`` per feature when unknown (never bin 0)."""
        if self.most_freq_bins is None:
            return np.full(self.n_bins.shape[0], -1, dtype=np.int32)
        return self.most_freq_bins

    @property
    def n_total_bins(self) -> int:
        return int(self.bin_offsets[-1])

    @property
    def bundled(self) -> bool:
        """True when histograms are built per bundle column."""
        return self.bundle_offsets is not None

    @property
    def hist_offsets(self) -> np.ndarray:
        """Histogram layout of the built columns: bundles' offsets, or features' offsets."""
        return self.bundle_offsets if self.bundled else self.bin_offsets

    @property
    def n_hist_bins(self) -> int:
        """Rows of a leaf histogram as built and reduced."""
        return int(self.hist_offsets[-1])

    @property
    def built_columns(self) -> np.ndarray:
        """Features whose histograms are searched: the searchable features, or the first
        feature with bins in the layout when none is (its slice still gives the leaf totals).
        Without bundling these are also the columns built."""
        cols = np.flatnonzero(self.feature_mask)
        return cols if cols.size else np.flatnonzero(np.diff(self.bin_offsets) > 0)[:1]

    def screened(self, mask: np.ndarray) -> "FeatureMeta":
        """This metadata for a tree that may split only on ``mask`` (feature screening,
        ``feature_fraction``): ``feature_mask & mask``, and, where histograms have the
        per-feature layout (no bundling, or EFB found nothing to merge), a layout with the
        features outside it at zero width, so that every histogram of the tree (built,
        exchanged, kept in the pool, subtracted and searched) holds the searchable features'
        bins only. Bins, routing and split search read the same values: the trees are the same.

        Parameters
        ----------
        mask : ndarray of shape (n_features,), dtype bool

        Returns
        -------
        FeatureMeta
        """
        meta = replace(self, feature_mask=self.feature_mask & mask)
        if self.bundled and not self.expand_is_copy:
            return meta
        kept = np.zeros(self.n_bins.shape[0], dtype=bool)
        kept[meta.built_columns] = True
        width = np.where(kept, np.diff(self.bin_offsets), 0)
        offsets = np.concatenate(([0], np.cumsum(width))).astype(np.int64) + self.bin_offsets[0]
        if not self.bundled:
            return replace(meta, bin_offsets=offsets)
        # EFB left every feature alone in its own column, in order: the column layout is the
        # per-feature one, and stays so.
        return replace(meta, bin_offsets=offsets, bundle_offsets=offsets,
                       expand_index=np.arange(int(offsets[-1]), dtype=np.int64))

    @cached_property
    def hist_columns(self) -> np.ndarray:
        """Columns whose histograms are built: :attr:`built_columns` without bundling; with
        bundling, every bundle holding a searchable feature (a bundle is built when any of its
        members is selected), or the bundle of feature :attr:`built_columns` ``[0]``."""
        if not self.bundled:
            return self.built_columns
        cols = self.feature_bundle[self.feature_mask]
        cols = np.unique(cols[cols >= 0])
        if not cols.size:
            c = int(self.feature_bundle[self.built_columns[0]])
            cols = np.array([max(c, 0)], dtype=np.int64)
        return cols.astype(np.int64)

    @property
    def totals_feature(self) -> int:
        """The feature whose histogram slice gives a root leaf's totals."""
        return int(self.built_columns[0])

    def node_arrays(self, split_feature) -> dict:
        """Per-node layout of the split features, for walking bundled rows."""
        f = np.asarray(split_feature, dtype=np.int64)
        return dict(split_column=self.feature_bundle[f], split_start=self.feature_start[f],
                    split_n_bins=self.n_bins[f].astype(np.int64), split_raw=self.feature_raw[f])

    @cached_property
    def expand_is_copy(self) -> bool:
        """True when every feature is alone in its bundle with its own bins, in feature order
        (dense data: EFB found nothing to merge), so the bundle layout is the per-feature one."""
        return (self.bundled and bool(np.all(self.feature_raw))
                and np.array_equal(self.expand_index, np.arange(self.n_total_bins)))

    def expand(self, hist: np.ndarray, totals: "LeafTotals") -> np.ndarray:
        """The per-feature histogram (``(n_total_bins, 2)``, the count row copied) of a bundle
        histogram; rows of features outside ``feature_mask`` are left at zero, or, when
        :attr:`expand_is_copy`, ``hist`` itself is returned (rows of features outside the mask
        as built: the split search never reads them)."""
        if self.expand_is_copy:
            return hist
        out = np.zeros((self.n_total_bins, 2), dtype=hist.dtype)
        out[0] = hist[0]
        expand_histogram(hist, self.expand_index, self.bin_offsets, self.n_bins,
                         self.default_bins, self.feature_raw, self.feature_mask,
                         totals.sum_gradients, totals.sum_hessians, out)
        return out


#: FeatureMeta's field names (:meth:`FeatureMeta.with_feature_mask` copies them).
_META_FIELDS = tuple(f.name for f in fields(FeatureMeta))


def feature_blocks(meta: FeatureMeta, n_feature_blocks: int):
    """Share a leaf's split search out by features: ``n_feature_blocks`` contiguous feature ranges
    with about equal numbers of searchable bins (LightGBM's data-parallel learner gives each
    machine a block of features to reduce and search, ``DataParallelTreeLearner``).

    Returns
    -------
    list of ``(lo, hi, search_meta)``, or None
        Per block, its histogram rows ``[lo, hi)`` and the metadata that searches that slice
        after the count row (:func:`oocgbdt.core.partition.histogram_rows`) alone: feature offsets
        shifted by ``lo - 1`` and only the block's features searchable.
        None when there is less than one searchable feature per block, or when the histogram
        layout is not the per-feature one (bundles merged by EFB).
    """
    if n_feature_blocks < 2 or (meta.bundled and not meta.expand_is_copy):
        return None
    searchable = meta.feature_mask & (meta.n_bins > 1)
    if np.count_nonzero(searchable) < n_feature_blocks:
        return None
    weight = np.where(searchable, meta.n_bins, 0).astype(np.float64)
    cum = np.cumsum(weight)
    n_features = meta.n_bins.shape[0]
    # Segment k starts at the first feature whose cumulative weight passes k / n_feature_blocks of it.
    bounds = [0] + [int(np.searchsorted(cum, cum[-1] * k / n_feature_blocks, side="right"))
                    for k in range(1, n_feature_blocks)] + [n_features]
    out = []
    for f_lo, f_hi in zip(bounds[:-1], bounds[1:]):
        if not (f_lo < f_hi and weight[f_lo:f_hi].any()):
            return None
        lo, hi = int(meta.bin_offsets[f_lo]), int(meta.bin_offsets[f_hi])
        mask = np.zeros_like(meta.feature_mask)
        mask[f_lo:f_hi] = meta.feature_mask[f_lo:f_hi]
        out.append((lo, hi, FeatureMeta(
            bin_offsets=meta.bin_offsets - lo + 1, n_bins=meta.n_bins,
            missing_types=meta.missing_types, default_bins=meta.default_bins,
            feature_mask=mask, most_freq_bins=meta.most_freq_bins,
            is_categorical=meta.is_categorical)))
    return out


def check_monotone_constraints(params: dict, n_features: int, categorical=()) -> None:
    """Check ``params["monotone_constraints"]`` against the data: one entry per feature, and
    none non-zero on a categorical feature (LightGBM's ``DatasetLoader`` refuses those too).

    Parameters
    ----------
    params : dict (resolved)
    n_features : int
    categorical : sequence of int
        The categorical features' indices.

    Raises
    ------
    ValueError
        On a length other than ``n_features``, or a constrained categorical feature.
    """
    mono = params.get("monotone_constraints")
    if mono is None:
        return
    if len(mono) != n_features:
        raise ValueError(f"monotone_constraints must have one entry (-1, 0 or 1) per feature: "
                         f"expected {n_features}, got {len(mono)}")
    bad = [int(f) for f in categorical if mono[int(f)] != 0]
    if bad:
        raise ValueError(f"monotone_constraints must be 0 for categorical features: the output "
                         f"cannot be monotone in a category code; got non-zero constraints on "
                         f"categorical feature(s) {bad}")


@dataclass(frozen=True)
class SplitParams:
    """The LightGBM parameters of split search (names as in :mod:`oocgbdt.params`)."""

    lambda_l1: float = 0.0
    lambda_l2: float = 0.0
    min_data_in_leaf: float = 20
    min_sum_hessian_in_leaf: float = 1e-3
    min_gain_to_split: float = 0.0
    max_cat_to_onehot: int = 4
    max_cat_threshold: int = 32
    cat_l2: float = 10.0
    cat_smooth: float = 10.0
    min_data_per_group: int = 100
    #: LightGBM's max_delta_step (<= 0: no cap) and path_smooth (<= kEpsilon: none).
    max_delta_step: float = 0.0
    path_smooth: float = 0.0
    #: Per feature -1/0/1 (monotone_constraints), or None: no constraints. Given (even all
    #: zeros), every leaf carries output bounds and gains are LightGBM's ``USE_MC`` ones.
    monotone: tuple | None = None
    monotone_penalty: float = 0.0
    #: Quantized training: the tree's ``(grad_scale, hess_scale)`` (float64; one per tree, from
    #: :func:`oocgbdt.kernels.quantize.quant_scales`); histograms are then integer ones and
    #: searched by :func:`best_split_int`. None: float histograms.
    quant_scales: tuple | None = None

    @classmethod
    def from_params(cls, params: dict) -> "SplitParams":
        base = [float(params[k]) for k in
                ("lambda_l1", "lambda_l2", "min_data_in_leaf", "min_sum_hessian_in_leaf",
                 "min_gain_to_split")]
        mono = params.get("monotone_constraints")
        cat = dict(max_cat_to_onehot=int(params.get("max_cat_to_onehot", 4)),
                   max_cat_threshold=int(params.get("max_cat_threshold", 32)),
                   cat_l2=float(params.get("cat_l2", 10.0)),
                   cat_smooth=float(params.get("cat_smooth", 10.0)),
                   min_data_per_group=int(params.get("min_data_per_group", 100)),
                   max_delta_step=float(params.get("max_delta_step", 0.0)),
                   path_smooth=float(params.get("path_smooth", 0.0)),
                   monotone=None if mono is None else tuple(int(m) for m in mono),
                   monotone_penalty=float(params.get("monotone_penalty", 0.0)))
        return cls(*base, **cat)

    @cached_property
    def kernel_terms(self) -> tuple:
        """``(lambda_l1, lambda_l2, min_data_in_leaf, min_sum_hessian_in_leaf,
        min_gain_to_split)`` as floats, in the order the split search kernels take them."""
        return (float(self.lambda_l1), float(self.lambda_l2), float(self.min_data_in_leaf),
                float(self.min_sum_hessian_in_leaf), float(self.min_gain_to_split))

    @cached_property
    def monotone_array(self):
        """:attr:`monotone` as an int8 array, or None."""
        return None if self.monotone is None else np.asarray(self.monotone, dtype=np.int8)

    def root_context(self, totals: "LeafTotals") -> "LeafContext":
        """The root's :class:`LeafContext`: its output capped by max_delta_step and not
        smoothed (LightGBM's ``SerialTreeLearner::GetParentOutput`` for a one-leaf tree),
        unbounded, depth 0."""
        if not totals.sum_hessians + self.lambda_l2 > 0:
            return LeafContext()
        return LeafContext(output=float(leaf_output_ex(
            totals.sum_gradients, totals.sum_hessians, self.lambda_l1, self.lambda_l2,
            self.max_delta_step, 0.0, totals.count, 0.0)))

    def output(self, sum_g: float, sum_h: float, extra_l2: float = 0.0) -> float:
        """Leaf output ``-T(G) / (H + lambda_l2 + extra_l2)`` (LightGBM
        ``CalculateSplittedLeafOutput``; ``extra_l2`` is ``cat_l2`` for the children of a
        many-vs-many categorical split)."""
        return float(leaf_output(sum_g, sum_h, self.lambda_l1, self.lambda_l2 + extra_l2))


@dataclass(frozen=True)
class LeafTotals:
    """Sum of gradients, sum of hessians and row count of one leaf."""

    sum_gradients: float
    sum_hessians: float
    count: float
    #: Quantized training: the leaf's exact packed integer sums (``g * 2**32 + h``, see
    #: :mod:`oocgbdt.kernels.quantize`); the float sums are then ``g * grad_scale`` and
    #: ``h * hess_scale``, as LightGBM's. None with float histograms.
    packed: int | None = None


@dataclass(frozen=True)
class LeafContext:
    """What a leaf's split search needs beyond its histogram and totals: its own output (the
    ``parent_output`` its children are smoothed towards with path_smooth, LightGBM's
    ``LeafSplits::weight``), its output bounds (monotone constraints, LightGBM's
    ``BasicConstraintEntry``) and its depth (monotone_penalty). It travels inside the parent's
    :class:`SplitInfo` (:meth:`SplitInfo.child_contexts`), so it reaches wherever the children
    are searched."""

    output: float = 0.0
    lower: float = -np.inf
    upper: float = np.inf
    depth: int = 0


@dataclass(frozen=True)
class SplitInfo:
    """The best split of one leaf: what travels from workers to the client.

    ``threshold_bin``: rows with ``bin <= threshold_bin`` go left; missing rows (NaN bin for
    NaN-type features, the zero bin for Zero-type features) go left iff ``default_left``.
    ``gain`` is LightGBM's split gain ``gain(L) + gain(R) - gain(parent)``.

    A categorical split has ``cat_bins``, the bins whose rows go left (in LightGBM's order;
    every other bin, bin 0 included, goes right), ``threshold_bin`` 0, ``default_left`` False,
    and ``extra_l2`` the ``cat_l2`` its children's outputs use (many-vs-many) or 0.
    """

    gain: float
    feature: int
    threshold_bin: int
    default_left: bool
    left: LeafTotals
    right: LeafTotals
    #: (n_features,) bool: the features with a valid split in this leaf. Its children search
    #: only these (LightGBM's ``FeatureHistogram::is_splittable``, inherited from the parent in
    #: ``SerialTreeLearner::FindBestSplits``). None: no restriction.
    splittable: np.ndarray | None = field(default=None, compare=False, repr=False)
    cat_bins: tuple | None = None
    extra_l2: float = 0.0
    #: The children's outputs as LightGBM's search computes them (``SplitInfo::left_output``,
    #: ``right_output``: capped, smoothed, clamped into the leaf's bounds): the tree's values.
    left_output: float = 0.0
    right_output: float = 0.0
    #: The searched leaf's context (its bounds and depth), for its children's.
    context: LeafContext = field(default_factory=LeafContext)

    def child_contexts(self, params: "SplitParams") -> tuple:
        """The children's :class:`LeafContext` once this split is applied: each child's output;
        the parent's bounds, narrowed at the mid output ``(left + right) / 2`` after a
        numerical split on a monotone feature (LightGBM's ``BasicLeafConstraints::Update``:
        increasing: the left child's upper bound and the right child's lower bound; decreasing:
        the other way); depth + 1."""
        ctx = self.context
        lo_l = lo_r = ctx.lower
        hi_l = hi_r = ctx.upper
        mono = 0 if params.monotone is None or self.cat_bins is not None \
            else params.monotone[self.feature]
        if mono != 0:
            mid = (self.left_output + self.right_output) / 2.0
            if mono < 0:
                lo_l, hi_r = max(lo_l, mid), min(hi_r, mid)
            else:
                hi_l, lo_r = min(hi_l, mid), max(lo_r, mid)
        depth = ctx.depth + 1
        return (LeafContext(self.left_output, lo_l, hi_l, depth),
                LeafContext(self.right_output, lo_r, hi_r, depth))

    def child_meta(self, meta):
        """``meta`` restricted to the features its children may split on."""
        if self.splittable is None:
            return meta
        mask = meta.feature_mask & self.splittable
        # the same features? (compared as bytes: a fifth of np.array_equal's time on 50)
        if mask.tobytes() == meta.feature_mask.tobytes():
            return meta  # the same features: no new metadata
        return meta.with_feature_mask(mask)


def leaf_totals(hist: np.ndarray, meta: FeatureMeta, params: "SplitParams | None" = None
                ) -> LeafTotals:
    """Totals of a leaf read off its histogram: sums of gradients and hessians over one built
    feature's slice (every slice sums to the leaf), the row count from the count row,
    ``hist[0, 0]`` (see :mod:`oocgbdt.kernels.histogram`).

    With bundling, a root histogram carries the slice of feature ``meta.totals_feature``
    decoded from its bundle after its ``n_hist_bins`` rows (see
    :func:`oocgbdt.core.partition.partition_root`); summing it exactly as without bundling gives
    bit-identical totals.

    An integer histogram (quantized training, ``params.quant_scales`` set) gives the exact
    packed sum and its float sums scaled as LightGBM's ``LeafSplits::Init``.
    """
    if params is not None and params.quant_scales is not None and hist.dtype == QUANT_DTYPE:
        # Every row of the leaf is in one bin of each built column (bundle or feature), and
        # integer sums are exact: any column's slice gives the totals.
        c = int(meta.hist_columns[0])
        packed = int(hist[meta.hist_offsets[c]:meta.hist_offsets[c + 1], 0].sum())
        g, h = unpack(packed)
        gs, hs = params.quant_scales
        return LeafTotals(g * gs, h * hs, float(hist[0, 0]), packed)
    if meta.bundled:
        s = hist[meta.n_hist_bins:].sum(axis=0)
    else:
        f = meta.built_columns[0]
        lo, hi = meta.bin_offsets[f], meta.bin_offsets[f + 1]
        s = hist[lo:hi].sum(axis=0)
    return LeafTotals(float(s[0]), float(s[1]), float(hist[0, 0]))


def best_split(hist: np.ndarray, totals: LeafTotals, meta: FeatureMeta,
               params: SplitParams, context: LeafContext | None = None, node_mask=None,
               rand_states=None):
    """Best split of a leaf over the searchable features.

    Ties between features go to the lower feature index (LightGBM ``SplitInfo::operator>``).
    With ``monotone_penalty``, the gain of a split on a monotone feature is multiplied by
    LightGBM's ``ComputeMonotoneSplitGainPenalty`` of the leaf's depth, applied (as in
    ``SerialTreeLearner::ComputeBestSplitForFeature``) to the gain net of
    ``min_gain_to_split``.

    Parameters
    ----------
    hist : ndarray of shape (n_hist_bins, 2), dtype float64
        Per feature, or per bundle (expanded here to the per-feature layout).
    totals : LeafTotals of the leaf
    meta : FeatureMeta
    params : SplitParams
    context : LeafContext, default None
        The leaf's output, bounds and depth; None: the root's (:meth:`SplitParams.root_context`).
    node_mask : ndarray of shape (n_features,), dtype bool, or None
        The features this leaf may split on (``interaction_constraints``,
        ``feature_fraction_bynode``; :mod:`oocgbdt.core.node_sampling`). Every feature of
        ``meta`` is still searched, so ``splittable`` and the gains cover them all, as in
        LightGBM's ``ComputeBestSplitForFeature``; only the choice is restricted. None: all.
    rand_states : ndarray of shape (n_features,), dtype int64, or None
        extra_trees: each feature's random stream state, advanced in place by the search
        (:func:`oocgbdt.kernels.splitting.find_best_thresholds`). None: every threshold.

    Returns
    -------
    split : SplitInfo, or None when no split is valid
        With ``node_mask``: a record with gain ``-inf`` (never applied) when splits are valid
        but none on an allowed feature.
    feature_gains : ndarray of shape (n_features,), dtype float64
        Each feature's best split gain in this leaf: ``-inf`` where it was not searched or has no
        valid split (feature screening learns from these).
    """
    if hist.dtype == QUANT_DTYPE:
        return best_split_int(hist, totals, meta, params, context, node_mask, rand_states)
    if meta.bundled:
        hist = meta.expand(hist[:meta.n_hist_bins], totals)
    if context is None:
        context = params.root_context(totals)
    per_feature = np.empty((meta.n_bins.shape[0], 8))
    numerical = meta.feature_mask
    cat_mask = None
    if meta.is_categorical is not None:
        cat_mask = meta.feature_mask & meta.is_categorical
        numerical = meta.feature_mask & ~meta.is_categorical
    mono = params.monotone_array
    # The kernel itself (find_best_thresholds without its wrapper: SplitParams and LeafTotals
    # hold floats), as this runs twice per pass on the loop's thread.
    _find_best_thresholds(hist, meta.bin_offsets, meta.n_bins, meta.missing_types,
                          meta.default_bins, meta.search_most_freq_bins(), numerical,
                          float(totals.sum_gradients), float(totals.sum_hessians),
                          float(totals.count), *params.kernel_terms, per_feature,
                          *canonical_leaf_terms(mono, params.max_delta_step, params.path_smooth,
                                                context.output, context.lower, context.upper,
                                                rand_states))
    cat_bins = None
    if cat_mask is not None and cat_mask.any():
        cat_bins = np.zeros((meta.n_bins.shape[0], max(1, params.max_cat_threshold)),
                            dtype=np.int64)
        find_best_categorical_splits(hist, meta.bin_offsets, meta.n_bins, cat_mask,
                                     totals.sum_gradients, totals.sum_hessians, totals.count,
                                     params.lambda_l1, params.lambda_l2,
                                     params.min_data_in_leaf, params.min_sum_hessian_in_leaf,
                                     params.min_gain_to_split, params.max_cat_to_onehot,
                                     params.max_cat_threshold, params.cat_l2, params.cat_smooth,
                                     params.min_data_per_group, per_feature, cat_bins,
                                     params.max_delta_step, params.path_smooth, context.output,
                                     mono is not None, context.lower, context.upper,
                                     rand_states=rand_states)
    gains = per_feature[:, 0].copy()
    if mono is not None and params.monotone_penalty > 0:
        penalized = (mono != 0) & numerical & np.isfinite(gains)
        factor = monotone_penalty_factor(context.depth, params.monotone_penalty)
        gains[penalized] = ((gains[penalized] - params.min_gain_to_split) * factor
                            + params.min_gain_to_split)
    chosen = gains if node_mask is None else np.where(node_mask, gains, -np.inf)
    f = int(chosen.argmax())
    rec = per_feature[f].tolist()
    if not math.isfinite(chosen[f]):
        if node_mask is not None and np.isfinite(gains).any():
            # Valid splits, none allowed here: no split (LightGBM's kMinScore), but the record
            # still carries the splittable features, which a feature block's merge needs.
            return SplitInfo(gain=-np.inf, feature=-1, threshold_bin=0, default_left=False,
                             left=LeafTotals(0.0, 0.0, 0.0), right=totals,
                             splittable=np.isfinite(gains), context=context), gains
        return None, gains
    # LightGBM's arithmetic, to the last bit (FindBestThresholdSequentially, and the categorical
    # search alike): with H = the leaf's hessian sum + 2 kEpsilon and L = the scan's left sum
    # (kEpsilon included), the children hold L - kEpsilon and H - L - kEpsilon; their outputs
    # (computed by the kernels from L and H - L) are rec[6] and rec[7].
    sum_h2 = totals.sum_hessians + 2.0 * K_EPSILON
    left_h = rec[4]
    left = LeafTotals(rec[3], left_h - K_EPSILON, rec[5])
    right = LeafTotals(totals.sum_gradients - left.sum_gradients,
                       sum_h2 - left_h - K_EPSILON, totals.count - left.count)
    if cat_bins is not None and cat_mask[f]:
        n_left = int(rec[1])
        onehot = int(meta.n_bins[f]) <= params.max_cat_to_onehot
        return SplitInfo(gain=float(gains[f]), feature=f, threshold_bin=0, default_left=False,
                         left=left, right=right, splittable=np.isfinite(gains),
                         cat_bins=tuple(int(b) for b in cat_bins[f, :n_left]),
                         extra_l2=0.0 if onehot else float(params.cat_l2),
                         left_output=rec[6], right_output=rec[7], context=context), gains
    return SplitInfo(gain=float(gains[f]), feature=f, threshold_bin=int(rec[1]),
                     default_left=bool(rec[2]), left=left, right=right,
                     splittable=np.isfinite(gains), left_output=rec[6],
                     right_output=rec[7], context=context), gains


def best_split_int(hist: np.ndarray, totals: LeafTotals, meta: FeatureMeta,
                   params: SplitParams, context: LeafContext | None = None, node_mask=None,
                   rand_states=None):
    """:func:`best_split` on an integer histogram (quantized training): LightGBM's
    ``FindBestThresholdInt`` per feature (:func:`oocgbdt.kernels.quantize.find_best_thresholds_int`)
    with the tree's ``params.quant_scales``; the children's totals carry their exact packed
    sums (the right one is the leaf's minus the left one) and float sums scaled from them, as
    LightGBM's ``SplitInfo`` (no ``kEpsilon``).

    Parameters
    ----------
    hist : ndarray of shape (n_hist_bins, 1), dtype int64
    totals : LeafTotals with ``packed`` set
    meta, params, context, node_mask, rand_states
        As :func:`best_split`. Numerical features only; a bundle histogram is expanded to the
        per-feature layout first (:func:`_expand_int`).

    Returns
    -------
    (split or None, feature_gains) as :func:`best_split`.

    Raises
    ------
    ValueError
        With categorical features (not implemented for integer histograms).
    """
    if meta.is_categorical is not None and meta.is_categorical.any():
        raise ValueError("use_quantized_grad supports numerical features only: found "
                         "categorical features (use_quantized_grad=False)")
    if meta.bundled and not meta.expand_is_copy:
        hist = _expand_int(hist, meta, totals)
    if context is None:
        context = params.root_context(totals)
    gs, hs = params.quant_scales
    n_features = meta.n_bins.shape[0]
    per_feature = np.empty((n_features, 8))
    lefts = np.empty(n_features, dtype=np.int64)
    mono = params.monotone_array
    find_best_thresholds_int(hist, meta.bin_offsets, meta.n_bins, meta.missing_types,
                             meta.default_bins, meta.feature_mask, totals.packed, gs, hs,
                             totals.count, params.lambda_l1, params.lambda_l2,
                             params.min_data_in_leaf, params.min_sum_hessian_in_leaf,
                             params.min_gain_to_split, per_feature, lefts, mono,
                             params.max_delta_step, params.path_smooth, context.output,
                             context.lower, context.upper, rand_states=rand_states)
    gains = per_feature[:, 0].copy()
    if mono is not None and params.monotone_penalty > 0:
        penalized = (mono != 0) & meta.feature_mask & np.isfinite(gains)
        factor = monotone_penalty_factor(context.depth, params.monotone_penalty)
        gains[penalized] = ((gains[penalized] - params.min_gain_to_split) * factor
                            + params.min_gain_to_split)
    chosen = gains if node_mask is None else np.where(node_mask, gains, -np.inf)
    f = int(np.argmax(chosen))
    rec = per_feature[f]
    if not np.isfinite(chosen[f]):
        if node_mask is not None and np.isfinite(gains).any():
            return SplitInfo(gain=-np.inf, feature=-1, threshold_bin=0, default_left=False,
                             left=LeafTotals(0.0, 0.0, 0.0), right=totals,
                             splittable=np.isfinite(gains), context=context), gains
        return None, gains
    left_packed = int(lefts[f])
    right_packed = int(totals.packed) - left_packed
    rg, rh = unpack(right_packed)
    left = LeafTotals(float(rec[3]), float(rec[4]), float(rec[5]), left_packed)
    # LightGBM's best_right_count: RoundInt(int_h(right) * cnt_factor), not count - left
    right_count = float(np.floor(rh * (totals.count / float(unpack(totals.packed)[1])) + 0.5))
    right = LeafTotals(rg * gs, rh * hs, right_count, right_packed)
    return SplitInfo(gain=float(gains[f]), feature=f, threshold_bin=int(rec[1]),
                     default_left=bool(rec[2]), left=left, right=right,
                     splittable=np.isfinite(gains), left_output=float(rec[6]),
                     right_output=float(rec[7]), context=context), gains


def _expand_int(hist: np.ndarray, meta: FeatureMeta, totals: LeafTotals) -> np.ndarray:
    """The per-feature integer histogram (shape (n_total_bins, 1), int64 packed) of a bundle
    integer histogram: :func:`oocgbdt.kernels.bundling.expand_histogram` on the unpacked
    fields as float64 (integers below 2**53: every sum and difference is exact), packed
    again. A bundled feature's default bin is the leaf's total minus its other bins, as
    LightGBM's ``FixHistogramInt``."""
    g, h = unpack(hist[:meta.n_hist_bins, 0])
    fields = np.stack([g, h], axis=1).astype(np.float64)
    out = np.zeros((meta.n_total_bins, 2))
    out[0] = fields[0]
    tg, th = unpack(totals.packed)
    expand_histogram(fields, meta.expand_index, meta.bin_offsets, meta.n_bins, meta.default_bins,
                     meta.feature_raw, meta.feature_mask, float(tg), float(th), out)
    ints = out.astype(np.int64)
    return ((ints[:, 0] << 32) + ints[:, 1]).reshape(-1, 1)
