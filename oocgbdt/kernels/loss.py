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
- L1, Huber, Fair, quantile, MAPE, Poisson, gamma, Tweedie
  (``src/objective/regression_objective.hpp``), cross-entropy and its lambda form
  (``src/objective/xentropy_objective.hpp``), logloss with a sigmoid scale and label weights
  (``binary_objective.hpp``, also one-vs-all): see each kernel's docstring.
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
    "gradients_l1",
    "gradients_l1_naive",
    "gradients_huber",
    "gradients_huber_naive",
    "gradients_fair",
    "gradients_fair_naive",
    "gradients_quantile",
    "gradients_quantile_naive",
    "gradients_mape",
    "gradients_mape_naive",
    "gradients_poisson",
    "gradients_poisson_naive",
    "gradients_gamma",
    "gradients_gamma_naive",
    "gradients_tweedie",
    "gradients_tweedie_naive",
    "gradients_cross_entropy",
    "gradients_cross_entropy_naive",
    "gradients_cross_entropy_lambda",
    "gradients_cross_entropy_lambda_naive",
    "gradients_sigmoid_logloss",
    "gradients_sigmoid_logloss_naive",
    "mape_label_weight",
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
        Written with ``float32(raw_score - y) * float32(weight)`` (a float32 product).
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
            # float32 difference times float32 weight, in float32, as LightGBM
            gradients_out[i] = np.float32(raw_score[i] - y[i]) * np.float32(weight[i])
            hessians_out[i] = weight[i]


def gradients_l2_naive(y, raw_score, weight, gradients_out, hessians_out):
    """NumPy twin of :func:`gradients_l2` (same arguments), used by the tests."""
    g = np.asarray(raw_score, dtype=np.float64) - y
    h = np.ones_like(g)
    if weight is not None:
        g = g.astype(np.float32) * np.asarray(weight).astype(np.float32)
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

    The signs ``l`` are written to ``gradients_out`` by a loop of their own first: in the one
    loop, float32 labels compiled to a branch per row, mispredicted on labels in random order
    (measured on 80,000 rows, one thread: 11.9 ns per row with float32 labels against 7.2 with
    float64 ones or with sorted labels; 7.2 with the separate loop, for both dtypes). ``l`` is
    +-1 exactly in float32 as in float64, so the results are the same bits.
    """
    n_samples = y.shape[0]
    for i in range(n_samples):
        gradients_out[i] = 1.0 if y[i] > 0 else -1.0
    for i in range(n_samples):
        label = np.float64(gradients_out[i])
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


# ---------------------------------------------------------------------------------------------
# Regression losses beyond L2 (src/objective/regression_objective.hpp)
#
# Each kernel takes its loss parameters (floats) between ``weight`` and the outputs. Signs use
# LightGBM's ``Common::Sign``: +1, -1, or 0 for a zero residual.
# ---------------------------------------------------------------------------------------------


@njit
def _sign(x):
    return (x > 0) - (x < 0)


@njit
def gradients_l1(
    y,  # IN: (n_samples,) float32 or float64
    raw_score,  # IN: (n_samples,) float64
    weight,  # IN: (n_samples,) or None
    gradients_out,  # OUT: (n_samples,) float32
    hessians_out,  # OUT: (n_samples,) float32
):
    """L1 loss ``|s - y|``: ``g = sign(s - y) * w``, ``h = w``.

    LightGBM: ``RegressionL1loss::GetGradients`` (``src/objective/regression_objective.hpp``).
    Leaf values are renewed afterwards (weighted median of the residuals).
    """
    for i in range(y.shape[0]):
        diff = raw_score[i] - y[i]
        if weight is None:
            gradients_out[i] = _sign(diff)
            hessians_out[i] = 1.0
        else:
            gradients_out[i] = _sign(diff) * weight[i]
            hessians_out[i] = weight[i]


def gradients_l1_naive(y, raw_score, weight, gradients_out, hessians_out):
    """NumPy twin of :func:`gradients_l1`."""
    g = np.sign(np.asarray(raw_score, dtype=np.float64) - y)
    h = np.ones_like(g)
    if weight is not None:
        g, h = g * weight, h * weight
    gradients_out[:] = g.astype(G_H_DTYPE)
    hessians_out[:] = h.astype(G_H_DTYPE)


@njit
def gradients_huber(
    y,  # IN: (n_samples,)
    raw_score,  # IN: (n_samples,) float64
    weight,  # IN: (n_samples,) or None
    alpha,  # IN: float, the Huber delta
    gradients_out,  # OUT: (n_samples,) float32
    hessians_out,  # OUT: (n_samples,) float32
):
    """Huber loss with delta ``alpha``: ``g = d`` if ``|d| <= alpha`` else ``sign(d) * alpha``
    (times the weight), ``h = w``; ``d = s - y``.

    LightGBM: ``RegressionHuberLoss::GetGradients`` (the weight is rounded to float32 in the
    clipped branch, as there).
    """
    for i in range(y.shape[0]):
        diff = raw_score[i] - y[i]
        if weight is None:
            if abs(diff) <= alpha:
                gradients_out[i] = diff
            else:
                gradients_out[i] = _sign(diff) * alpha
            hessians_out[i] = 1.0
        else:
            if abs(diff) <= alpha:
                gradients_out[i] = diff * weight[i]
            else:
                gradients_out[i] = _sign(diff) * np.float32(weight[i]) * alpha
            hessians_out[i] = weight[i]


def gradients_huber_naive(y, raw_score, weight, alpha, gradients_out, hessians_out):
    """NumPy twin of :func:`gradients_huber`."""
    d = np.asarray(raw_score, dtype=np.float64) - y
    g = np.where(np.abs(d) <= alpha, d, np.sign(d) * alpha)
    h = np.ones_like(d)
    if weight is not None:
        g, h = g * weight, h * weight
    gradients_out[:] = g.astype(G_H_DTYPE)
    hessians_out[:] = h.astype(G_H_DTYPE)


@njit
def gradients_fair(
    y,  # IN: (n_samples,)
    raw_score,  # IN: (n_samples,) float64
    weight,  # IN: (n_samples,) or None
    c,  # IN: float, fair_c
    gradients_out,  # OUT: (n_samples,) float32
    hessians_out,  # OUT: (n_samples,) float32
):
    """Fair loss: ``g = c d / (|d| + c)``, ``h = c**2 / (|d| + c)**2`` (times the weight).

    LightGBM: ``RegressionFairLoss::GetGradients``.
    """
    for i in range(y.shape[0]):
        x = raw_score[i] - y[i]
        g = c * x / (abs(x) + c)
        h = c * c / ((abs(x) + c) * (abs(x) + c))
        if weight is None:
            gradients_out[i] = g
            hessians_out[i] = h
        else:
            gradients_out[i] = g * weight[i]
            hessians_out[i] = h * weight[i]


def gradients_fair_naive(y, raw_score, weight, c, gradients_out, hessians_out):
    """NumPy twin of :func:`gradients_fair`."""
    x = np.asarray(raw_score, dtype=np.float64) - y
    g = c * x / (np.abs(x) + c)
    h = c * c / (np.abs(x) + c) ** 2
    if weight is not None:
        g, h = g * weight, h * weight
    gradients_out[:] = g.astype(G_H_DTYPE)
    hessians_out[:] = h.astype(G_H_DTYPE)


@njit
def gradients_quantile(
    y,  # IN: (n_samples,)
    raw_score,  # IN: (n_samples,) float64
    weight,  # IN: (n_samples,) or None
    alpha,  # IN: float, the quantile in (0, 1)
    gradients_out,  # OUT: (n_samples,) float32
    hessians_out,  # OUT: (n_samples,) float32
):
    """Quantile (pinball) loss: ``g = 1 - alpha`` where ``s >= y`` else ``-alpha`` (times the
    weight), ``h = w``.

    LightGBM: ``RegressionQuantileloss::GetGradients``; ``alpha`` and the residual are rounded
    to float32 first and the products computed in float32, as there.
    """
    a32 = np.float32(alpha)
    above = np.float32(1.0) - a32
    below = -a32
    for i in range(y.shape[0]):
        delta = np.float32(raw_score[i] - y[i])
        if weight is None:
            gradients_out[i] = above if delta >= 0 else below
            hessians_out[i] = 1.0
        else:
            w = np.float32(weight[i])
            gradients_out[i] = above * w if delta >= 0 else below * w
            hessians_out[i] = weight[i]


def gradients_quantile_naive(y, raw_score, weight, alpha, gradients_out, hessians_out):
    """NumPy twin of :func:`gradients_quantile`."""
    a = np.float32(alpha)
    delta = (np.asarray(raw_score, dtype=np.float64) - y).astype(np.float32)
    g = np.where(delta >= 0, np.float32(1.0) - a, -a).astype(np.float32)
    h = np.ones_like(g)
    if weight is not None:
        w = np.asarray(weight).astype(np.float32)
        g, h = g * w, w
    gradients_out[:] = g.astype(G_H_DTYPE)
    hessians_out[:] = h.astype(G_H_DTYPE)


@njit
def mape_label_weight(y, weight, out):
    """MAPE's per-row weight ``w / max(1, |y|)`` in float32 (``RegressionMAPELOSS::Init``)."""
    for i in range(y.shape[0]):
        lw = np.float32(1.0) / max(np.float32(1.0), abs(np.float32(y[i])))
        if weight is None:
            out[i] = lw
        else:
            out[i] = lw * np.float32(weight[i])


@njit
def gradients_mape(
    y,  # IN: (n_samples,)
    raw_score,  # IN: (n_samples,) float64
    weight,  # IN: (n_samples,) or None
    gradients_out,  # OUT: (n_samples,) float32
    hessians_out,  # OUT: (n_samples,) float32
):
    """MAPE loss ``|s - y| / max(1, |y|)``: ``g = sign(s - y) * w / max(1, |y|)``, ``h = w``.

    LightGBM: ``RegressionMAPELOSS::GetGradients`` (the label weight is float32, as there).
    """
    for i in range(y.shape[0]):
        diff = raw_score[i] - y[i]
        lw = np.float32(1.0) / max(np.float32(1.0), abs(np.float32(y[i])))
        if weight is None:
            gradients_out[i] = _sign(diff) * lw
            hessians_out[i] = 1.0
        else:
            gradients_out[i] = _sign(diff) * (lw * np.float32(weight[i]))
            hessians_out[i] = weight[i]


def gradients_mape_naive(y, raw_score, weight, gradients_out, hessians_out):
    """NumPy twin of :func:`gradients_mape`."""
    y = np.asarray(y)
    lw = (np.float32(1.0) / np.maximum(np.float32(1.0), np.abs(y.astype(np.float32)))).astype(
        np.float32)
    if weight is not None:
        lw = lw * np.asarray(weight).astype(np.float32)
    g = np.sign(np.asarray(raw_score, dtype=np.float64) - y) * lw
    h = np.ones_like(g) if weight is None else np.asarray(weight, dtype=np.float64)
    gradients_out[:] = g.astype(G_H_DTYPE)
    hessians_out[:] = h.astype(G_H_DTYPE)


@njit
def gradients_poisson(
    y,  # IN: (n_samples,), non-negative
    raw_score,  # IN: (n_samples,) float64, log of the mean
    weight,  # IN: (n_samples,) or None
    max_delta_step,  # IN: float, poisson_max_delta_step
    gradients_out,  # OUT: (n_samples,) float32
    hessians_out,  # OUT: (n_samples,) float32
):
    """Poisson loss ``exp(s) - y s``: ``g = exp(s) - y``, ``h = exp(s + max_delta_step)``
    (times the weight).

    LightGBM: ``RegressionPoissonLoss::GetGradients`` (``h = exp(s) * exp(max_delta_step)``).
    """
    e_step = np.exp(max_delta_step)
    for i in range(y.shape[0]):
        e = np.exp(raw_score[i])
        if weight is None:
            gradients_out[i] = e - y[i]
            hessians_out[i] = e * e_step
        else:
            gradients_out[i] = (e - y[i]) * weight[i]
            hessians_out[i] = e * e_step * weight[i]


def gradients_poisson_naive(y, raw_score, weight, max_delta_step, gradients_out, hessians_out):
    """NumPy twin of :func:`gradients_poisson`."""
    e = np.exp(np.asarray(raw_score, dtype=np.float64))
    g = e - y
    h = e * np.exp(max_delta_step)
    if weight is not None:
        g, h = g * weight, h * weight
    gradients_out[:] = g.astype(G_H_DTYPE)
    hessians_out[:] = h.astype(G_H_DTYPE)


@njit
def gradients_gamma(
    y,  # IN: (n_samples,), non-negative
    raw_score,  # IN: (n_samples,) float64, log of the mean
    weight,  # IN: (n_samples,) or None
    gradients_out,  # OUT: (n_samples,) float32
    hessians_out,  # OUT: (n_samples,) float32
):
    """Gamma deviance with log link: ``g = 1 - y exp(-s)``, ``h = y exp(-s)`` (times the weight).

    LightGBM: ``RegressionGammaLoss::GetGradients``.
    """
    for i in range(y.shape[0]):
        e = np.exp(-raw_score[i])
        if weight is None:
            gradients_out[i] = 1.0 - y[i] * e
            hessians_out[i] = y[i] * e
        else:
            gradients_out[i] = (1.0 - y[i] * e) * weight[i]
            hessians_out[i] = y[i] * e * weight[i]


def gradients_gamma_naive(y, raw_score, weight, gradients_out, hessians_out):
    """NumPy twin of :func:`gradients_gamma`."""
    e = np.exp(-np.asarray(raw_score, dtype=np.float64))
    g = 1.0 - y * e
    h = y * e
    if weight is not None:
        g, h = g * weight, h * weight
    gradients_out[:] = g.astype(G_H_DTYPE)
    hessians_out[:] = h.astype(G_H_DTYPE)


@njit
def gradients_tweedie(
    y,  # IN: (n_samples,), non-negative
    raw_score,  # IN: (n_samples,) float64, log of the mean
    weight,  # IN: (n_samples,) or None
    rho,  # IN: float, tweedie_variance_power in [1, 2)
    gradients_out,  # OUT: (n_samples,) float32
    hessians_out,  # OUT: (n_samples,) float32
):
    """Tweedie loss with power ``rho``: ``g = -y e1 + e2``, ``h = -y (1 - rho) e1 + (2 - rho) e2``
    with ``e1 = exp((1 - rho) s)``, ``e2 = exp((2 - rho) s)`` (times the weight).

    LightGBM: ``RegressionTweedieLoss::GetGradients``.
    """
    for i in range(y.shape[0]):
        e1 = np.exp((1.0 - rho) * raw_score[i])
        e2 = np.exp((2.0 - rho) * raw_score[i])
        g = -y[i] * e1 + e2
        h = -y[i] * (1.0 - rho) * e1 + (2.0 - rho) * e2
        if weight is None:
            gradients_out[i] = g
            hessians_out[i] = h
        else:
            gradients_out[i] = g * weight[i]
            hessians_out[i] = h * weight[i]


def gradients_tweedie_naive(y, raw_score, weight, rho, gradients_out, hessians_out):
    """NumPy twin of :func:`gradients_tweedie`."""
    s = np.asarray(raw_score, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    e1, e2 = np.exp((1.0 - rho) * s), np.exp((2.0 - rho) * s)
    g = -y * e1 + e2
    h = -y * (1.0 - rho) * e1 + (2.0 - rho) * e2
    if weight is not None:
        g, h = g * weight, h * weight
    gradients_out[:] = g.astype(G_H_DTYPE)
    hessians_out[:] = h.astype(G_H_DTYPE)


# ---------------------------------------------------------------------------------------------
# Cross-entropy (src/objective/xentropy_objective.hpp)
# ---------------------------------------------------------------------------------------------


@njit
def gradients_cross_entropy(
    y,  # IN: (n_samples,), labels in [0, 1]
    raw_score,  # IN: (n_samples,) float64, log-odds
    weight,  # IN: (n_samples,) or None
    gradients_out,  # OUT: (n_samples,) float32
    hessians_out,  # OUT: (n_samples,) float32
):
    """Cross-entropy with probability labels: ``g = p - y``, ``h = p (1 - p)``, ``p = sigmoid(s)``
    (times the weight), in LightGBM's two branches (``s > -37`` or not).

    LightGBM: ``CrossEntropy::GetGradients``.
    """
    for i in range(y.shape[0]):
        s = raw_score[i]
        if s > -37.0:
            e = np.exp(-s)
            g = ((np.float32(1.0) - np.float32(y[i])) - y[i] * e) / (1.0 + e)
            h = e / ((1.0 + e) * (1.0 + e))
        else:
            e = np.exp(s)
            g = e - y[i]
            h = e
        if weight is None:
            gradients_out[i] = g
            hessians_out[i] = h
        else:
            gradients_out[i] = g * weight[i]
            hessians_out[i] = h * weight[i]


def gradients_cross_entropy_naive(y, raw_score, weight, gradients_out, hessians_out):
    """NumPy twin of :func:`gradients_cross_entropy` (the plain ``p - y`` form)."""
    s = np.asarray(raw_score, dtype=np.float64)
    p = 1.0 / (1.0 + np.exp(-s))
    g = p - np.asarray(y, dtype=np.float64)
    h = p * (1.0 - p)
    if weight is not None:
        g, h = g * weight, h * weight
    gradients_out[:] = g.astype(G_H_DTYPE)
    hessians_out[:] = h.astype(G_H_DTYPE)


@njit
def gradients_cross_entropy_lambda(
    y,  # IN: (n_samples,), labels in [0, 1]
    raw_score,  # IN: (n_samples,) float64
    weight,  # IN: (n_samples,) > 0, or None
    gradients_out,  # OUT: (n_samples,) float32
    hessians_out,  # OUT: (n_samples,) float32
):
    """Cross-entropy with the ``lambda = log(1 + exp(s))`` parametrization.

    Without weights it equals :func:`gradients_cross_entropy`'s plain form
    (``z = sigmoid(s)``, ``g = z - y``, ``h = z (1 - z)``); with weights ``w`` the probability is
    ``z = 1 - exp(-w log(1 + exp(s)))`` and the gradient and hessian follow LightGBM's
    ``CrossEntropyLambda::GetGradients`` term by term.
    """
    for i in range(y.shape[0]):
        s = raw_score[i]
        if weight is None:
            z = 1.0 / (1.0 + np.exp(-s))
            gradients_out[i] = z - y[i]
            hessians_out[i] = z * (1.0 - z)
        else:
            w = np.float64(weight[i])
            yy = np.float64(y[i])
            epf = np.exp(s)
            hhat = np.log1p(epf)
            z = 1.0 - np.exp(-w * hhat)
            enf = 1.0 / epf
            gradients_out[i] = (1.0 - yy / z) * w / (1.0 + enf)
            c = 1.0 / (1.0 - z)
            d = 1.0 + epf
            a = w * epf / (d * d)
            d = c - 1.0
            b = (c / (d * d)) * (1.0 + w * epf - c)
            hessians_out[i] = a * (1.0 + yy * b)


def gradients_cross_entropy_lambda_naive(y, raw_score, weight, gradients_out, hessians_out):
    """NumPy twin of :func:`gradients_cross_entropy_lambda`, written from the loss
    ``-y log(z) - (1 - y) log(1 - z)`` with ``z = 1 - exp(-w log(1 + exp(s)))``: ``dz/ds =
    w (1 - z) sigmoid(s)`` gives ``g = w sigmoid(s) (1 - y / z)``, and the hessian is its
    derivative."""
    s = np.asarray(raw_score, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = np.ones_like(s) if weight is None else np.asarray(weight, dtype=np.float64)
    sig = 1.0 / (1.0 + np.exp(-s))
    z = 1.0 - np.exp(-w * np.log1p(np.exp(s)))
    dz = w * (1.0 - z) * sig
    g = w * sig * (1.0 - y / z)
    # d/ds [w sig (1 - y/z)] = w sig (1 - sig) (1 - y/z) + w sig y dz / z**2
    h = w * sig * (1.0 - sig) * (1.0 - y / z) + w * sig * y * dz / z ** 2
    gradients_out[:] = g.astype(G_H_DTYPE)
    hessians_out[:] = h.astype(G_H_DTYPE)


# ---------------------------------------------------------------------------------------------
# Logloss with a sigmoid scale and label weights (binary, multiclassova)
# ---------------------------------------------------------------------------------------------


@njit
def gradients_sigmoid_logloss(
    y,  # IN: (n_samples,)
    raw_score,  # IN: (n_samples,) float64
    weight,  # IN: (n_samples,) or None
    positive_class,  # IN: int; -1: y > 0 is positive; k >= 0: int(y) == k is positive
    sigmoid,  # IN: float > 0
    weight_negative,  # IN: float, label weight of the negative rows
    weight_positive,  # IN: float, label weight of the positive rows
    gradients_out,  # OUT: (n_samples,) float32
    hessians_out,  # OUT: (n_samples,) float32
):
    """Binary logloss of ``p = 1 / (1 + exp(-sigmoid * s))`` with per-class label weights.

    With ``l = +1`` for a positive row and ``-1`` otherwise, ``r = -l sigmoid / (1 + exp(l sigmoid
    s))``, ``g = r lw w``, ``h = |r| (sigmoid - |r|) lw w`` (``lw`` the row's class weight:
    ``is_unbalance``, ``scale_pos_weight``). LightGBM: ``BinaryLogloss::GetGradients``
    (``src/objective/binary_objective.hpp``); ``MulticlassOVA`` runs it per class with
    ``positive_class = k``.

    A row's ``l`` and ``lw`` are read from tables indexed by its class, not chosen by a branch
    (which mispredicts on labels in random order; :func:`gradients_binary`): 13.3 -> 9.3 ns
    per row measured (80,000 rows, one thread).
    """
    labels = np.empty(2)
    labels[0], labels[1] = -1.0, 1.0
    label_weights = np.empty(2)
    label_weights[0], label_weights[1] = weight_negative, weight_positive
    for i in range(y.shape[0]):
        if positive_class < 0:
            pos = np.uint64(y[i] > 0)
        else:
            pos = np.uint64(int(y[i]) == positive_class)
        label = labels[pos]
        lw = label_weights[pos]
        response = -label * sigmoid / (1.0 + np.exp(label * sigmoid * raw_score[i]))
        a = abs(response)
        if weight is None:
            gradients_out[i] = response * lw
            hessians_out[i] = a * (sigmoid - a) * lw
        else:
            gradients_out[i] = response * lw * weight[i]
            hessians_out[i] = a * (sigmoid - a) * lw * weight[i]


def gradients_sigmoid_logloss_naive(y, raw_score, weight, positive_class, sigmoid,
                                    weight_negative, weight_positive, gradients_out,
                                    hessians_out):
    """NumPy twin of :func:`gradients_sigmoid_logloss`, in the ``p - y`` form:
    ``g = sigmoid (p - y) lw w``, ``h = sigmoid**2 p (1 - p) lw w``."""
    y = np.asarray(y)
    pos = (y > 0) if positive_class < 0 else (y.astype(np.int64) == positive_class)
    s = np.asarray(raw_score, dtype=np.float64)
    p = 1.0 / (1.0 + np.exp(-sigmoid * s))
    lw = np.where(pos, weight_positive, weight_negative)
    g = sigmoid * (p - pos) * lw
    h = sigmoid * sigmoid * p * (1.0 - p) * lw
    if weight is not None:
        g, h = g * weight, h * weight
    gradients_out[:] = g.astype(G_H_DTYPE)
    hessians_out[:] = h.astype(G_H_DTYPE)
