"""This module contains the gradient/hessian kernels of the objectives.

It sits at the start of every boosting iteration: per chunk, the raw scores (float64, the sum
of the trees so far) and the labels give float32 gradients and hessians, which the histogram
kernels then sum. ``oocgbdt.core.objectives`` wraps these kernels; nothing else should call them.

Every kernel follows the house signature: inputs first (``y``, ``raw_score``, ``weight``),
preallocated outputs last (``gradients_out``, ``hessians_out``), nothing returned. ``weight``
may be None (no sample weights); numba compiles a separate specialization for None and prunes
the branch. Arithmetic is done in float64 and rounded once to float32 on store, in the same
order of operations as LightGBM, so that float32 labels and weights reproduce LightGBM's
gradients bit for bit (LightGBM stores labels and weights as float32, ``label_t``). Each kernel
has a ``_naive`` NumPy twin used by the tests.

Formulas (LightGBM source files):

- L2: ``g = (s - y) * w``, ``h = w`` (``src/objective/regression_objective.hpp``,
  ``RegressionL2loss::GetGradients``).
- Binary logloss with ``sigmoid = 1``: with ``l = +1`` if ``y > 0`` else ``-1``,
  ``r = -l / (1 + exp(l * s))``, ``g = r * w``, ``h = |r| * (1 - |r|) * w``; that is
  ``g = p - y`` and ``h = p (1 - p)`` with ``p = sigmoid(s)``
  (``src/objective/binary_objective.hpp``, ``BinaryLogloss::GetGradients``).
- Multiclass softmax: ``p = softmax(s_row)`` (max-shifted, ``Common::Softmax``),
  ``g_k = (p_k - [y == k]) * w``, ``h_k = K / (K - 1) * p_k * (1 - p_k) * w``
  (``src/objective/multiclass_objective.hpp``, ``MulticlassSoftmax::GetGradients``).
"""
import numpy as np

from oocgbdt._dtypes import G_H_DTYPE
from oocgbdt.kernels._jit import njit

__all__ = [
    "gradients_l2",
    "gradients_l2_naive",
    "gradients_binary",
    "gradients_binary_naive",
    "gradients_multiclass",
    "gradients_multiclass_naive",
]


# ---------------------------------------------------------------------------------------------
# L2
# ---------------------------------------------------------------------------------------------


@njit
def gradients_l2(
    y,  # IN: (n_samples,) float32 or float64
    raw_score,  # IN: (n_samples,) float64
    weight,  # IN: (n_samples,) float32 or float64, or None
    gradients_out,  # OUT: (n_samples,) float32
    hessians_out,  # OUT: (n_samples,) float32
):
    """Gradients and hessians of the L2 loss ``(s - y)**2 / 2``.

    Parameters
    ----------
    y : ndarray of shape (n_samples,), dtype=float32 or float64
        Labels.
    raw_score : ndarray of shape (n_samples,), dtype=float64
        Raw scores.
    weight : ndarray of shape (n_samples,), dtype=float32 or float64, or None
        Sample weights; None means every weight is 1.
    gradients_out : ndarray of shape (n_samples,), dtype=float32
        Written with ``(raw_score - y) * weight``.
    hessians_out : ndarray of shape (n_samples,), dtype=float32
        Written with ``weight`` (1 when ``weight`` is None).

    Notes
    -----
    LightGBM: ``src/objective/regression_objective.hpp`` (``RegressionL2loss::GetGradients``).
    """
    n_samples = y.shape[0]
    if weight is None:
        for i in range(n_samples):
            gradients_out[i] = raw_score[i] - y[i]
            hessians_out[i] = 1.0
    else:
        for i in range(n_samples):
            gradients_out[i] = (raw_score[i] - y[i]) * weight[i]
            hessians_out[i] = weight[i]


def gradients_l2_naive(y, raw_score, weight, gradients_out, hessians_out):
    """NumPy twin of :func:`gradients_l2` (same arguments), used by the tests."""
    g = np.asarray(raw_score, dtype=np.float64) - y
    h = np.ones_like(g)
    if weight is not None:
        g = g * weight
        h = h * weight
    gradients_out[:] = g.astype(G_H_DTYPE)
    hessians_out[:] = h.astype(G_H_DTYPE)


# ---------------------------------------------------------------------------------------------
# Binary logloss (sigmoid = 1)
# ---------------------------------------------------------------------------------------------


@njit
def gradients_binary(
    y,  # IN: (n_samples,) float32 or float64, labels 0/1
    raw_score,  # IN: (n_samples,) float64
    weight,  # IN: (n_samples,) float32 or float64, or None
    gradients_out,  # OUT: (n_samples,) float32
    hessians_out,  # OUT: (n_samples,) float32
):
    """Gradients and hessians of the binary logloss, with LightGBM's ``sigmoid = 1``.

    Parameters
    ----------
    y : ndarray of shape (n_samples,), dtype=float32 or float64
        Labels; ``y > 0`` is the positive class (LightGBM's rule), so 0/1 labels are expected.
    raw_score : ndarray of shape (n_samples,), dtype=float64
        Raw scores (log-odds).
    weight : ndarray of shape (n_samples,), dtype=float32 or float64, or None
        Sample weights; None means every weight is 1.
    gradients_out : ndarray of shape (n_samples,), dtype=float32
        Written with ``(p - y) * weight``, ``p = 1 / (1 + exp(-raw_score))``.
    hessians_out : ndarray of shape (n_samples,), dtype=float32
        Written with ``p * (1 - p) * weight``.

    Notes
    -----
    LightGBM: ``src/objective/binary_objective.hpp`` (``BinaryLogloss::GetGradients``); the
    response form ``r = -l / (1 + exp(l * s))`` with ``l = +-1`` is used, as there.
    """
    n_samples = y.shape[0]
    for i in range(n_samples):
        label = 1.0 if y[i] > 0 else -1.0
        response = -label / (1.0 + np.exp(label * raw_score[i]))
        abs_response = abs(response)
        if weight is None:
            gradients_out[i] = response
            hessians_out[i] = abs_response * (1.0 - abs_response)
        else:
            gradients_out[i] = response * weight[i]
            hessians_out[i] = abs_response * (1.0 - abs_response) * weight[i]


def gradients_binary_naive(y, raw_score, weight, gradients_out, hessians_out):
    """NumPy twin of :func:`gradients_binary` (same arguments), used by the tests."""
    raw_score = np.asarray(raw_score, dtype=np.float64)
    p = 1.0 / (1.0 + np.exp(-raw_score))
    g = p - (np.asarray(y) > 0)
    h = p * (1.0 - p)
    if weight is not None:
        g = g * weight
        h = h * weight
    gradients_out[:] = g.astype(G_H_DTYPE)
    hessians_out[:] = h.astype(G_H_DTYPE)


# ---------------------------------------------------------------------------------------------
# Multiclass softmax
# ---------------------------------------------------------------------------------------------


@njit
def gradients_multiclass(
    y,  # IN: (n_samples,) float32 or float64, integer-valued labels in [0, n_classes)
    raw_score,  # IN: (n_samples, n_classes) float64, C-contiguous
    weight,  # IN: (n_samples,) float32 or float64, or None
    gradients_out,  # OUT: (n_samples, n_classes) float32
    hessians_out,  # OUT: (n_samples, n_classes) float32
):
    """Gradients and hessians of the softmax cross-entropy, as LightGBM's ``MulticlassSoftmax``.

    Parameters
    ----------
    y : ndarray of shape (n_samples,), dtype=float32 or float64
        Class labels, integer-valued in ``[0, n_classes)`` (truncated to int, as LightGBM does;
        not checked here, see ``Objective.check_labels``).
    raw_score : ndarray of shape (n_samples, n_classes), dtype=float64, C-contiguous
        Raw scores, one column per class; ``n_classes >= 2``.
    weight : ndarray of shape (n_samples,), dtype=float32 or float64, or None
        Sample weights; None means every weight is 1.
    gradients_out : ndarray of shape (n_samples, n_classes), dtype=float32
        Written with ``(p_k - [y == k]) * weight`` where ``p = softmax(raw_score[i])``.
    hessians_out : ndarray of shape (n_samples, n_classes), dtype=float32
        Written with ``K / (K - 1) * p_k * (1 - p_k) * weight``, ``K = n_classes``.

    Notes
    -----
    LightGBM: ``src/objective/multiclass_objective.hpp`` (``MulticlassSoftmax::GetGradients``,
    ``factor_ = num_class / (num_class - 1)``) and ``include/LightGBM/utils/common.h``
    (``Softmax``). One scratch row of ``n_classes`` float64 values is allocated per call.
    """
    n_samples, n_classes = raw_score.shape
    factor = n_classes / (n_classes - 1.0)
    prob = np.empty(n_classes, dtype=np.float64)
    for i in range(n_samples):
        max_score = raw_score[i, 0]
        for k in range(1, n_classes):
            max_score = max(raw_score[i, k], max_score)
        sum_exp = 0.0
        for k in range(n_classes):
            prob[k] = np.exp(raw_score[i, k] - max_score)
            sum_exp += prob[k]
        for k in range(n_classes):
            prob[k] /= sum_exp
        label = int(y[i])
        for k in range(n_classes):
            p = prob[k]
            g = p - 1.0 if k == label else p
            h = factor * p * (1.0 - p)
            if weight is None:
                gradients_out[i, k] = g
                hessians_out[i, k] = h
            else:
                gradients_out[i, k] = g * weight[i]
                hessians_out[i, k] = h * weight[i]


def gradients_multiclass_naive(y, raw_score, weight, gradients_out, hessians_out):
    """NumPy twin of :func:`gradients_multiclass` (same arguments), used by the tests."""
    raw_score = np.asarray(raw_score, dtype=np.float64)
    n_samples, n_classes = raw_score.shape
    e = np.exp(raw_score - raw_score.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    onehot = np.asarray(y).astype(np.int64)[:, None] == np.arange(n_classes)[None, :]
    g = p - onehot
    h = n_classes / (n_classes - 1.0) * p * (1.0 - p)
    if weight is not None:
        w = np.asarray(weight)[:, None]
        g = g * w
        h = h * w
    gradients_out[:] = g.astype(G_H_DTYPE)
    hessians_out[:] = h.astype(G_H_DTYPE)
