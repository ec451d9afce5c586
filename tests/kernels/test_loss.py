"""Tests for oocgbdt.kernels.loss: gradient/hessian kernels against NumPy twins and calculus."""
import numpy as np
import pytest

from oocgbdt._dtypes import G_H_DTYPE
from oocgbdt.kernels.loss import (
    gradients_binary,
    gradients_binary_naive,
    gradients_l2,
    gradients_l2_naive,
    gradients_multiclass,
    gradients_multiclass_naive,
)

N = 257


def _data(kind, n=N, n_classes=4, seed=0, label_dtype=np.float32, scale=3.0):
    rng = np.random.default_rng(seed)
    if kind == "l2":
        y = rng.normal(size=n).astype(label_dtype)
        raw = rng.normal(size=n) * scale
    elif kind == "binary":
        y = rng.integers(0, 2, n).astype(label_dtype)
        raw = rng.normal(size=n) * scale
    else:
        y = rng.integers(0, n_classes, n).astype(label_dtype)
        raw = rng.normal(size=(n, n_classes)) * scale
    weight = (rng.random(n) * 2).astype(label_dtype)
    return y, raw, weight


KERNELS = {
    "l2": (gradients_l2, gradients_l2_naive),
    "binary": (gradients_binary, gradients_binary_naive),
    "multiclass": (gradients_multiclass, gradients_multiclass_naive),
}


def _run(fn, y, raw, weight):
    g = np.full(raw.shape, np.nan, dtype=G_H_DTYPE)
    h = np.full(raw.shape, np.nan, dtype=G_H_DTYPE)
    fn(y, raw, weight, g, h)
    return g, h


@pytest.mark.parametrize("kind", sorted(KERNELS))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("label_dtype", [np.float32, np.float64])
def test_kernel_matches_naive(kind, weighted, label_dtype):
    kernel, naive = KERNELS[kind]
    y, raw, weight = _data(kind, label_dtype=label_dtype)
    w = weight if weighted else None
    g, h = _run(kernel, y, raw, w)
    g0, h0 = _run(naive, y, raw, w)
    assert g.dtype == h.dtype == np.float32
    np.testing.assert_allclose(g, g0, rtol=2e-7, atol=1e-7)
    np.testing.assert_allclose(h, h0, rtol=2e-7, atol=1e-7)


@pytest.mark.parametrize("kind", sorted(KERNELS))
def test_read_only_inputs_and_empty_chunk(kind):
    kernel, _ = KERNELS[kind]
    y, raw, weight = _data(kind)
    for a in (y, raw, weight):
        a.setflags(write=False)
    g, h = _run(kernel, y, raw, weight)
    assert np.isfinite(g).all() and np.isfinite(h).all()
    g, h = _run(kernel, y[:0], raw[:0], None)
    assert g.shape[0] == 0


@pytest.mark.parametrize("kind", sorted(KERNELS))
def test_weights_multiply(kind):
    kernel, _ = KERNELS[kind]
    y, raw, weight = _data(kind, label_dtype=np.float64)
    g1, h1 = _run(kernel, y, raw, None)
    gw, hw = _run(kernel, y, raw, weight)
    w = weight[:, None] if raw.ndim == 2 else weight
    np.testing.assert_allclose(gw, g1.astype(np.float64) * w, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(hw, h1.astype(np.float64) * w, rtol=1e-6, atol=1e-7)


def test_l2_formula():
    y, raw, weight = _data("l2", label_dtype=np.float64)
    g, h = _run(gradients_l2, y, raw, weight)
    # LightGBM: the difference rounded to float32, times the float32 weight, in float32.
    np.testing.assert_array_equal(g, (raw - y).astype(np.float32) * weight.astype(np.float32))
    np.testing.assert_array_equal(h, weight.astype(np.float32))
    g, h = _run(gradients_l2, y, raw, None)
    np.testing.assert_array_equal(h, 1.0)


def test_binary_formula():
    y, raw, _ = _data("binary", label_dtype=np.float64)
    g, h = _run(gradients_binary, y, raw, None)
    p = 1.0 / (1.0 + np.exp(-raw))
    np.testing.assert_allclose(g, p - y, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(h, p * (1 - p), rtol=1e-6, atol=1e-7)


def test_multiclass_formula():
    n_classes = 5
    y, raw, _ = _data("multiclass", n_classes=n_classes, label_dtype=np.float64)
    g, h = _run(gradients_multiclass, y, raw, None)
    e = np.exp(raw)
    p = e / e.sum(axis=1, keepdims=True)
    onehot = np.eye(n_classes)[y.astype(int)]
    np.testing.assert_allclose(g, p - onehot, rtol=1e-6, atol=1e-7)
    factor = n_classes / (n_classes - 1)
    np.testing.assert_allclose(h, factor * p * (1 - p), rtol=1e-6, atol=1e-7)
    # Softmax gradients of a row sum to 0.
    np.testing.assert_allclose(g.astype(np.float64).sum(axis=1), 0.0, atol=1e-6)


# --------------------------------------------------------------------------------------------
# Finite differences: g = dL/ds, h = d2L/ds2 (times K/(K-1) for multiclass, as LightGBM)
# --------------------------------------------------------------------------------------------


def _loss_l2(y, s):
    return 0.5 * (s - y) ** 2


def _loss_binary(y, s):
    return np.logaddexp(0.0, s) - y * s


def _loss_multiclass(y, s):  # s: (n, K)
    m = s.max(axis=1)
    lse = m + np.log(np.exp(s - m[:, None]).sum(axis=1))
    return lse - s[np.arange(len(y)), y.astype(int)]


@pytest.mark.parametrize("kind", ["l2", "binary"])
def test_finite_differences_1d(kind):
    kernel = KERNELS[kind][0]
    loss = {"l2": _loss_l2, "binary": _loss_binary}[kind]
    y, raw, weight = _data(kind, n=64, label_dtype=np.float64, scale=2.0)
    g, h = _run(kernel, y, raw, weight)
    eps = 1e-5
    fd_g = (loss(y, raw + eps) - loss(y, raw - eps)) / (2 * eps) * weight
    fd_h = (loss(y, raw + eps) - 2 * loss(y, raw) + loss(y, raw - eps)) / eps**2 * weight
    np.testing.assert_allclose(g, fd_g, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, fd_h, rtol=1e-3, atol=1e-4)


def test_finite_differences_multiclass():
    n_classes = 3
    y, raw, weight = _data("multiclass", n=64, n_classes=n_classes, label_dtype=np.float64,
                           scale=2.0)
    g, h = _run(gradients_multiclass, y, raw, weight)
    eps = 1e-5
    factor = n_classes / (n_classes - 1)
    for k in range(n_classes):
        step = np.zeros_like(raw)
        step[:, k] = eps
        up, mid, down = (_loss_multiclass(y, raw + step), _loss_multiclass(y, raw),
                         _loss_multiclass(y, raw - step))
        np.testing.assert_allclose(g[:, k], (up - down) / (2 * eps) * weight, rtol=1e-5, atol=1e-6)
        fd_h = (up - 2 * mid + down) / eps**2 * weight * factor
        np.testing.assert_allclose(h[:, k], fd_h, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("kind", sorted(KERNELS))
def test_extreme_scores_stay_finite(kind):
    kernel = KERNELS[kind][0]
    y, raw, weight = _data(kind, label_dtype=np.float64)
    raw = np.where(np.arange(raw.size).reshape(raw.shape) % 2 == 0, 1e3, -1e3).astype(np.float64)
    g, h = _run(kernel, y, raw, weight)
    assert np.isfinite(g).all() and np.isfinite(h).all()
    if kind != "l2":
        assert (h >= 0).all()
        assert (np.abs(g) <= weight.reshape(-1, *([1] * (raw.ndim - 1))) + 1e-6).all()


def test_binary_labels_follow_lightgbm_rule():
    """y > 0 is positive (LightGBM's is_pos), so labels 0/1 and -1/1 give the same gradients."""
    raw = np.linspace(-3, 3, 11)
    g01, _ = _run(gradients_binary, np.array([0.0, 1.0] * 5 + [0.0]), raw, None)
    gpm, _ = _run(gradients_binary, np.array([-1.0, 1.0] * 5 + [-1.0]), raw, None)
    np.testing.assert_array_equal(g01, gpm)
