"""Tests for the losses beyond L2/logloss/softmax in oocgbdt.kernels.loss: each kernel against its
NumPy twin, and gradients/hessians against finite differences of the loss they derive from."""
import numpy as np
import pytest

from oocgbdt._dtypes import G_H_DTYPE
from oocgbdt.kernels import loss as L

N = 301

# name -> (kernel args after weight, label kind)
CASES = {
    "l1": ((), "real"),
    "huber": ((0.7,), "real"),
    "fair": ((1.3,), "real"),
    "quantile": ((0.8,), "real"),
    "mape": ((), "real"),
    "poisson": ((0.7,), "count"),
    "gamma": ((), "positive"),
    "tweedie": ((1.4,), "count"),
    "cross_entropy": ((), "probability"),
    "cross_entropy_lambda": ((), "probability"),
    "sigmoid_logloss": ((-1, 1.7, 1.5, 0.6), "binary"),
}


def _data(kind, n=N, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "real":
        y = rng.normal(size=n) * 3
        raw = y + rng.normal(size=n)
    elif kind == "count":
        y = rng.poisson(2.0, n).astype(np.float64)
        raw = rng.normal(size=n)
    elif kind == "positive":
        y = rng.gamma(2.0, size=n) + 0.05
        raw = rng.normal(size=n)
    elif kind == "probability":
        y = rng.random(n)
        raw = rng.normal(size=n) * 2
    else:
        y = rng.integers(0, 2, n).astype(np.float64)
        raw = rng.normal(size=n) * 2
    weight = (rng.random(n) * 2 + 0.1).astype(np.float32)
    return y.astype(np.float32), raw, weight


def _run(fn, y, raw, weight, args):
    g = np.full(raw.shape, np.nan, dtype=G_H_DTYPE)
    h = np.full(raw.shape, np.nan, dtype=G_H_DTYPE)
    fn(y, raw, weight, *args, g, h)
    return g, h


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("weighted", [False, True])
def test_kernel_matches_naive(name, weighted):
    args, kind = CASES[name]
    y, raw, weight = _data(kind)
    w = weight if weighted else None
    g, h = _run(getattr(L, f"gradients_{name}"), y, raw, w, args)
    g0, h0 = _run(getattr(L, f"gradients_{name}_naive"), y, raw, w, args)
    # The naive twins are written from the formulas (p - y forms, plain float64), the kernels
    # follow LightGBM's order of operations: they agree to float32 rounding.
    np.testing.assert_allclose(g, g0, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(h, h0, rtol=2e-6, atol=2e-6)


def _losses():
    def pinball(a):
        return lambda y, s: np.where(y - s < 0, (a - 1) * (y - s), a * (y - s))

    def tweedie(rho):
        return lambda y, s: -y * np.exp((1 - rho) * s) / (1 - rho) + np.exp((2 - rho) * s) / (2 - rho)

    return {
        "huber": lambda y, s: np.where(np.abs(s - y) <= 0.7, 0.5 * (s - y) ** 2,
                                       0.7 * (np.abs(s - y) - 0.35)),
        "fair": lambda y, s: 1.3 * np.abs(s - y) - 1.69 * np.log1p(np.abs(s - y) / 1.3),
        "poisson": lambda y, s: np.exp(s) - y * s,
        "gamma": lambda y, s: y * np.exp(-s) + s,
        "tweedie": tweedie(1.4),
        "cross_entropy": lambda y, s: np.logaddexp(0, s) - y * s,
        "l1": lambda y, s: np.abs(s - y),
        "quantile": pinball(0.8),
    }


@pytest.mark.parametrize("name", ["huber", "fair", "poisson", "gamma", "tweedie", "cross_entropy",
                                  "l1", "quantile"])
def test_gradient_is_the_loss_derivative(name):
    args, kind = CASES[name]
    y, raw, weight = _data(kind, n=64, seed=1)
    g, h = _run(getattr(L, f"gradients_{name}"), y, raw, weight, args)
    loss = _losses()[name]
    y64 = y.astype(np.float64)
    eps = 1e-5
    fd_g = (loss(y64, raw + eps) - loss(y64, raw - eps)) / (2 * eps) * weight
    np.testing.assert_allclose(g, fd_g, rtol=1e-4, atol=1e-4)
    if name in ("fair", "gamma", "tweedie", "cross_entropy"):
        fd_h = (loss(y64, raw + eps) - 2 * loss(y64, raw) + loss(y64, raw - eps)) / eps**2 * weight
        np.testing.assert_allclose(h, fd_h, rtol=2e-3, atol=2e-3)
    if name in ("huber", "l1", "quantile"):  # LightGBM's constant hessian: the weight
        np.testing.assert_array_equal(h, weight)
    if name == "poisson":  # the hessian carries exp(poisson_max_delta_step)
        np.testing.assert_allclose(h, np.exp(raw + 0.7) * weight, rtol=1e-6)


def test_cross_entropy_lambda_weighted_is_the_loss_derivative():
    y, raw, weight = _data("probability", n=64, seed=2)
    g, h = _run(L.gradients_cross_entropy_lambda, y, raw, weight, ())
    y64, w = y.astype(np.float64), weight.astype(np.float64)

    def loss(s):
        z = 1 - np.exp(-w * np.log1p(np.exp(s)))
        return -(y64 * np.log(z) + (1 - y64) * np.log(1 - z))

    eps = 1e-5
    np.testing.assert_allclose(g, (loss(raw + eps) - loss(raw - eps)) / (2 * eps), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(h, (loss(raw + eps) - 2 * loss(raw) + loss(raw - eps)) / eps**2,
                               rtol=2e-3, atol=2e-3)


def test_sigmoid_logloss_matches_binary_kernel_at_defaults_and_ova_classes():
    y, raw, weight = _data("binary")
    g1, h1 = _run(L.gradients_binary, y, raw, weight, ())
    g2, h2 = _run(L.gradients_sigmoid_logloss, y, raw, weight, (-1, 1.0, 1.0, 1.0))
    np.testing.assert_array_equal(g1, g2)
    np.testing.assert_array_equal(h1, h2)
    # One-vs-all: class k's positives are the rows with int(y) == k.
    labels = np.array([0, 1, 2, 2, 1, 0], dtype=np.float32)
    s = np.linspace(-1, 1, 6)
    g, _ = _run(L.gradients_sigmoid_logloss, labels, s, None, (2, 1.0, 1.0, 1.0))
    g_bin, _ = _run(L.gradients_binary, (labels == 2).astype(np.float32), s, None, ())
    np.testing.assert_array_equal(g, g_bin)


def test_mape_label_weight():
    y = np.array([-3.0, -0.5, 0.0, 0.5, 2.0], dtype=np.float32)
    out = np.empty(5, dtype=np.float32)
    L.mape_label_weight(y, None, out)
    np.testing.assert_array_equal(out, np.float32(1) / np.maximum(1, np.abs(y)))
    L.mape_label_weight(y, np.full(5, 2, np.float32), out)
    np.testing.assert_array_equal(out, np.float32(2) / np.maximum(1, np.abs(y)))
