"""This module contains quantized training (``use_quantized_grad``): the task bodies that
discretize each partition's gradients once per tree, the caller's :class:`GradientQuantizer`
(global scales, the rounding streams, the ``is_constant_hessian`` rule), and the leaf renewal of
``quant_train_renew_leaf``.

Source: LightGBM 4.x ``src/treelearner/gradient_discretizer.cpp`` (``DiscretizeGradients``,
``RenewIntGradTreeOutput``) and ``serial_tree_learner.cpp`` (``Train``: discretize once per tree,
renew at its end). Kernels: :mod:`oocgbdt.kernels.quantize`.

Data flow position: per tree, after the round's gradients and row sampling: one small gather of
each partition's largest ``|g|`` and ``|h|`` gives the scales (LightGBM's ``GlobalSyncUpByMax``);
every partition then packs its rows' integer pairs into ``PartitionData.quantized``, which the
histogram passes of :mod:`oocgbdt.core.partition` add instead of float pairs.

Differences from LightGBM: stochastic rounding draws its uniforms from a counter-based stream
(seed, tree number, global row; :func:`oocgbdt.kernels.sampling.uniforms`), so it is
independent of how rows are partitioned but not LightGBM's draws (LightGBM's depend on its
thread count). Every row is discretized, sampled or not, as in LightGBM.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from oocgbdt.core.partition import PartitionData, binned_leaves, partition_bins
from oocgbdt.kernels.quantize import discretize, gradient_max_abs, quant_scales
from oocgbdt.kernels.sampling import uniforms
from oocgbdt.kernels.splitting import leaf_output_ex

__all__ = ["GradientQuantizer", "partition_gradient_max", "lightgbm_uses_subset", "partition_quantize",
           "partition_leaf_gradient_sums", "renewed_leaf_values", "CONSTANT_HESSIAN"]

#: Objectives whose hessians LightGBM treats as constant (``IsConstantHessian`` of
#: ``src/objective/regression_objective.hpp``): L2, L1, Huber and quantile without sample
#: weights, MAPE always. Their integer hessians are all 1 and ``hess_scale`` is ``max |h|``.
CONSTANT_HESSIAN = {"regression": "unweighted", "regression_l1": "unweighted",
                    "huber": "unweighted", "quantile": "unweighted", "mape": "always"}

_GOLDEN = 0x9E3779B97F4A7C15
_MIX = 0xD1B54A32D192ED03
_MASK64 = 0xFFFFFFFFFFFFFFFF


def partition_gradient_max(data: PartitionData, class_idx: int, sampled_only: bool) -> np.ndarray:
    """``[max |g|, max |h|]`` (float64) of output ``class_idx`` over every row of the partition,
    or with ``sampled_only`` over the round's sampled rows (``data.rows``) when it samples."""
    g, h = data.gradients[class_idx], data.hessians[class_idx]
    if sampled_only and data.rows is not None:
        g, h = g[data.rows], h[data.rows]
    return np.array(gradient_max_abs(g, h))


def lightgbm_uses_subset(params: dict, n_feature_groups: int) -> bool:
    """Whether LightGBM trains a sampled round's trees on a copy of the sampled rows
    (``is_use_subset_`` of ``src/boosting/bagging.hpp`` and ``goss.hpp``): then its
    ``DiscretizeGradients`` sees only those rows, so the scales come from their maxima.
    Bagging: ``bagging_fraction / bagging_freq <= 0.5`` and fewer than 100 feature groups
    (here: the histogram's columns); GOSS: ``top_rate + other_rate <= 0.5``."""
    if params["data_sample_strategy"] == "goss":
        return params["top_rate"] + params["other_rate"] <= 0.5
    if params["bagging_freq"] <= 0:
        return False
    rate = float(params["bagging_fraction"]) / int(params["bagging_freq"])
    return rate <= 0.5 and n_feature_groups < 100


def partition_quantize(data: PartitionData, class_idx: int, inverse_scales: tuple,
                       constant_hessian: bool, keys, row_offset: int) -> PartitionData:
    """The partition with ``quantized`` set: its rows' packed integer pairs for output
    ``class_idx`` (:func:`oocgbdt.kernels.quantize.discretize`).

    ``inverse_scales`` ``(1 / grad_scale, 1 / hess_scale)``; ``keys`` ``(gradient key, hessian
    key)`` uint64 of the tree's rounding streams, or None to round to nearest; ``row_offset``
    the partition's first global row.
    """
    g, h = data.gradients[class_idx], data.hessians[class_idx]
    n = g.shape[0]
    rand_g = rand_h = np.empty(0)
    if keys is not None:
        rand_g = np.empty(n)
        uniforms(np.uint64(keys[0]), int(row_offset), rand_g)
        rand_h = rand_g
        if not constant_hessian:
            rand_h = np.empty(n)
            uniforms(np.uint64(keys[1]), int(row_offset), rand_h)
    out = np.empty(n, dtype=np.int64)
    discretize(g, h, float(inverse_scales[0]), float(inverse_scales[1]), bool(constant_hessian),
               rand_g, rand_h, out)
    return replace(data, quantized=out)


def partition_leaf_gradient_sums(data: PartitionData, tree_arrays: dict, class_idx: int
                                 ) -> np.ndarray:
    """Per leaf of the tree just grown (``tree_arrays``: its binned arrays, as
    :func:`~oocgbdt.core.partition.partition_apply_tree` takes them), the sums of the round's
    rows' true gradients and hessians: shape (n_leaves, 2), float64
    (``RenewIntGradTreeOutput``'s ``leaf_grad_hess_stats_``, over the leaf's rows of
    ``DataPartition``: the sampled rows when the round samples). Every row's leaf is walked
    from the root (the last pass leaves unrouted segments)."""
    n_leaves = tree_arrays["leaf_value"].shape[0]
    leaf = binned_leaves(partition_bins(data), tree_arrays)
    g, h = data.gradients[class_idx], data.hessians[class_idx]
    if data.rows is not None:
        leaf, g, h = leaf[data.rows], g[data.rows], h[data.rows]
    out = np.empty((n_leaves, 2))
    out[:, 0] = np.bincount(leaf, weights=g.astype(np.float64), minlength=n_leaves)
    out[:, 1] = np.bincount(leaf, weights=h.astype(np.float64), minlength=n_leaves)
    return out


def renewed_leaf_values(sums: np.ndarray, params: dict) -> np.ndarray:
    """LightGBM's ``RenewIntGradTreeOutput`` outputs (before shrinkage):
    ``CalculateSplittedLeafOutput<USE_L1, USE_MAX_OUTPUT, no smoothing>`` of each leaf's true
    sums, ``sums`` of shape (n_leaves, 2); shape (n_leaves,). Without smoothing the leaf's row
    count does not enter; monotone bounds are not applied (as in LightGBM)."""
    l1, l2 = float(params["lambda_l1"]), float(params["lambda_l2"])
    mds = float(params["max_delta_step"])
    return np.array([leaf_output_ex(float(s[0]), float(s[1]), l1, l2, mds, 0.0, 0.0, 0.0)
                     for s in sums])


@dataclass(frozen=True)
class GradientQuantizer:
    """The caller's side of quantized training: one :meth:`scales` per tree.

    Attributes
    ----------
    num_bins : int
        ``num_grad_quant_bins``.
    constant_hessian : bool
        LightGBM's ``is_constant_hessian`` (:data:`CONSTANT_HESSIAN`).
    stochastic : bool
        ``stochastic_rounding``.
    seed : int
        ``seed``: the rounding streams' seed.
    subset_scales : bool
        Scales from a sampled round's rows only (:func:`lightgbm_uses_subset`).
    """

    num_bins: int
    constant_hessian: bool
    stochastic: bool
    seed: int
    subset_scales: bool = False

    @classmethod
    def from_params(cls, params: dict, objective_name: str, weighted: bool,
                    n_feature_groups: int = 0):
        """None without ``use_quantized_grad``."""
        if not params.get("use_quantized_grad"):
            return None
        rule = CONSTANT_HESSIAN.get(objective_name)
        constant = rule == "always" or (rule == "unweighted" and not weighted)
        return cls(int(params["num_grad_quant_bins"]), constant,
                   bool(params["stochastic_rounding"]), int(params.get("seed") or 0),
                   lightgbm_uses_subset(params, n_feature_groups))

    def check_rows(self, n_rows: int) -> None:
        """Integer sums must fit their 32-bit fields (as in LightGBM): a hessian sum is at most
        ``n_rows * (num_bins + 1)``.

        Raises
        ------
        ValueError
            When ``n_rows * (num_grad_quant_bins + 1) >= 2**31``.
        """
        if int(n_rows) * (self.num_bins + 1) >= 2 ** 31:
            raise ValueError(
                f"use_quantized_grad: {n_rows} training rows x (num_grad_quant_bins="
                f"{self.num_bins} + 1) exceed the 32-bit integer sums of quantized histograms "
                f"(2**31); use fewer levels (num_grad_quant_bins) or use_quantized_grad=False")

    def scales(self, maxima) -> tuple:
        """``(grad_scale, hess_scale, 1 / grad_scale, 1 / hess_scale)`` from the partitions'
        ``[max |g|, max |h|]`` rows (``maxima``, shape (n_partitions, 2))."""
        m = np.max(np.asarray(maxima, dtype=np.float64).reshape(-1, 2), axis=0)
        return quant_scales(m[0], m[1], self.num_bins, self.constant_hessian)

    def keys(self, tree_index: int):
        """``(gradient key, hessian key)`` of tree ``tree_index``'s rounding streams, or None
        (round to nearest)."""
        if not self.stochastic:
            return None
        base = (int(self.seed) * _GOLDEN + (2 * int(tree_index) + 1) * _MIX) & _MASK64
        return base, (base ^ _GOLDEN) * _MIX & _MASK64
