"""A deterministic synthetic, dense, fraud-like binary task for the feature-screening benchmark.

Usage::

    from benchmarks.make_fraud import make_fraud, make_fraud_train_test
    X, y = make_fraud(n_rows=500_000, n_features=500, informative_share=0.1, seed=0)
    X, y, X_test, y_test = make_fraud_train_test(n_train=500_000, n_test=200_000)

What it looks like (the defaults: 500 features, 50 of them informative):

* **Imbalanced label**: about 4% positives. ``y`` is drawn as Bernoulli(sigmoid(logit)); the
  intercept is calibrated once per structure (on a fixed 100,000-row calibration sample, so
  train and test share it) to give a 4% mean probability. Because the label is a coin flip
  even given every feature, the task is not separable (LightGBM with 31 leaves reaches a test
  AUC of about 0.855 after 30 trees on 500,000 rows, and 0.88 after 200 trees on 200,000).
* **Informative features** (``round(informative_share * n_features)``, at random column
  positions, see :func:`fraud_structure`): every column is a monotone or coded transform
  ``x = g(u)`` of a latent ``u ~ N(0, 1)``; informative latents are correlated through three
  shared factors (rho in [0.2, 0.5]). The logit sums

  - a non-linear **main effect** ``a_j * f_j(u_j)`` per informative feature, ``f`` one of: a
    step ``1[u > t]`` (a high-tail risk, like a large amount), a hinge ``max(u - t, 0)``, a bump
    ``exp(-(u - c)^2 / (2 w^2))``, a U shape ``(u^2 - 1) / 2``, a wave ``sin(k u + phi)`` or a
    saturating ``tanh(2 u)``; weights ``|a_j|`` decay geometrically with the feature's rank
    (a few strong signals, a long weak tail), random signs. About 10% of the informative
    features have no main effect at all and act only through interactions;
  - **pairwise interactions** (``n_inf`` of them) ``b * s(u_i) * s(u_j)`` with ``s`` a one-sided
    indicator ``1[u > t]``/``1[u < t]`` or ``tanh``, and **three-way** interactions
    (``n_inf // 10``) of three indicators ("new account AND large amount AND night-time");
  - for informative features with missing values, a **missingness effect**: where ``x`` is NaN,
    the main effect is replaced by a constant (hidden information is often suspicious);

  scaled so that the signal part has standard deviation 2.2 on the calibration sample.
* **Noise features** (the rest) are independent of the label, with the same family of realistic
  marginals, and come in correlated blocks (three to eight columns sharing one factor, like the
  redundant V-columns of IEEE-CIS).
* **Marginals** (``g``), for every column: normal with a random location/scale; lognormal
  (heavy right tail, like amounts); signed power ``sign(u)|u|^p`` (heavy two-sided tails);
  two-component mixture (a gap-shifted bimodal); zero-inflated lognormal (a point mass at 0);
  integer counts ``floor(exp(m + s u))``; integer-coded categoricals (``K`` in 3..60 codes,
  assigned to the latent's quantiles in a random order, so the effect of the code is not
  monotone); binary flags; uniform. About 30% of the columns have missing values (NaN), at a
  rate of 1-10% or, for a few, 20-60%.

Determinism: the structure (which columns are informative, every effect, every marginal) comes
from ``default_rng([seed, 0])``; rows are generated in fixed blocks of 65,536 with
``default_rng([seed, 1 + part, block])`` (``part`` 0 = training rows, 1 = test rows), so the same
arguments give bit-identical arrays, a test set is independent of the training rows and shares
their distribution, and the first ``n`` rows do not depend on ``n_rows``.

Cost: about 1 GB of float32 for 500,000 x 500 (plus ~300 MB of per-block scratch); 500,000
training + 200,000 test rows take about 30 s on one core of a loaded machine.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, ndtr

__all__ = ["FraudStructure", "fraud_structure", "make_fraud", "make_fraud_train_test"]

#: Rows per generation block (fixed: the random streams are keyed by block).
BLOCK = 65_536
#: Target share of positives (mean predicted probability on the calibration sample).
POSITIVE_RATE = 0.04
#: Standard deviation of the logit's signal part on the calibration sample.
SIGNAL_STD = 2.2
#: Rows of the calibration sample that fixes the signal scale and the intercept.
CALIBRATION_ROWS = 100_000

_MARGINALS = ("normal", "lognormal", "power", "mixture", "zero_inflated", "count", "categorical",
              "binary", "uniform")
_MARGINAL_P = np.array([0.18, 0.16, 0.10, 0.12, 0.10, 0.10, 0.10, 0.07, 0.07])
_EFFECTS = ("step", "hinge", "bump", "ushape", "wave", "tanh")


@dataclass
class FraudStructure:
    """Everything that defines the task except the rows (see :func:`fraud_structure`)."""

    n_features: int
    informative: np.ndarray          # sorted column indices of the informative features
    marginal: list                   # per column: (kind, params dict)
    nan_rate: np.ndarray             # per column: share of NaN
    factor_of: np.ndarray            # per column: index of its latent factor (-1: none)
    factor_rho: np.ndarray           # per column: loading on that factor
    n_factors: int
    main: list                       # (col, kind, params, weight, missing_effect)
    pairs: list                      # (col_i, kind_i, t_i, col_j, kind_j, t_j, weight)
    triples: list                    # ((col, side, t) x 3, weight)
    scale: float = 1.0               # multiplies the raw signal
    intercept: float = 0.0


def _side_term(u, kind, t):
    if kind == "gt":
        return (u > t).astype(np.float64)
    if kind == "lt":
        return (u < t).astype(np.float64)
    return np.tanh(u - t)


def _main_term(u, kind, p):
    if kind == "step":
        return (u > p["t"]).astype(np.float64)
    if kind == "hinge":
        return np.maximum(u - p["t"], 0.0)
    if kind == "bump":
        return np.exp(-((u - p["c"]) ** 2) / (2 * p["w"] ** 2))
    if kind == "ushape":
        return 0.5 * (u * u - 1.0)
    if kind == "wave":
        return np.sin(p["k"] * u + p["phi"])
    return np.tanh(2.0 * u)


def _observe(u, kind, p):
    """The column's observed value ``g(u)`` (float64; NaN is injected later)."""
    if kind == "normal":
        return p["loc"] + p["scale"] * u
    if kind == "lognormal":
        return np.exp(p["mu"] + p["sigma"] * u)
    if kind == "power":
        return p["scale"] * np.sign(u) * np.abs(u) ** p["p"]
    if kind == "mixture":
        return u + p["gap"] * (u > p["c"])
    if kind == "zero_inflated":
        return np.where(u < p["c"], 0.0, np.exp(p["mu"] + p["sigma"] * (u - p["c"])))
    if kind == "count":
        return np.floor(np.exp(p["m"] + p["s"] * u))
    if kind == "categorical":
        code = np.minimum((ndtr(u) * p["k"]).astype(np.int64), p["k"] - 1)
        return p["perm"][code].astype(np.float64)
    if kind == "binary":
        return (u > p["t"]).astype(np.float64)
    return p["lo"] + p["width"] * ndtr(u)  # uniform


def _marginal_params(rng, kind):
    if kind == "normal":
        return dict(loc=float(rng.normal(0, 50)), scale=float(rng.lognormal(0, 1.5)))
    if kind == "lognormal":
        return dict(mu=float(rng.normal(3, 1.5)), sigma=float(rng.uniform(0.5, 2.0)))
    if kind == "power":
        return dict(scale=float(rng.lognormal(0, 1)), p=float(rng.uniform(2.0, 4.0)))
    if kind == "mixture":
        return dict(c=float(rng.normal(0, 0.8)), gap=float(rng.uniform(2.0, 8.0)))
    if kind == "zero_inflated":
        return dict(c=float(rng.uniform(-0.5, 1.5)), mu=float(rng.normal(2, 1)),
                    sigma=float(rng.uniform(0.5, 1.5)))
    if kind == "count":
        return dict(m=float(rng.uniform(0.0, 3.0)), s=float(rng.uniform(0.3, 1.0)))
    if kind == "categorical":
        k = int(rng.integers(3, 61))
        return dict(k=k, perm=rng.permutation(k))
    if kind == "binary":
        return dict(t=float(rng.uniform(0.0, 1.8)))
    return dict(lo=float(rng.normal(0, 10)), width=float(rng.lognormal(0, 1)))


def fraud_structure(n_features=500, informative_share=0.1, seed=0) -> FraudStructure:
    """The task's structure for ``seed``, with its signal scale and intercept calibrated."""
    if n_features < 1:
        raise ValueError(f"n_features must be >= 1, got {n_features}")
    if not 0.0 < informative_share <= 1.0:
        raise ValueError(f"informative_share must be in (0, 1], got {informative_share}")
    rng = np.random.default_rng([seed, 0])
    n_inf = min(n_features, max(1, int(round(informative_share * n_features))))
    informative = np.sort(rng.permutation(n_features)[:n_inf])
    is_inf = np.zeros(n_features, dtype=bool)
    is_inf[informative] = True

    kinds = rng.choice(len(_MARGINALS), size=n_features, p=_MARGINAL_P)
    marginal = [(_MARGINALS[k], _marginal_params(rng, _MARGINALS[k])) for k in kinds]
    nan_draw = rng.random(n_features)
    nan_rate = np.where(nan_draw < 0.70, 0.0,
                        np.where(nan_draw < 0.95, rng.uniform(0.01, 0.10, n_features),
                                 rng.uniform(0.20, 0.60, n_features)))

    # Latent factors: three shared by the informative features, blocks of 3-8 noise columns.
    factor_of = np.full(n_features, -1)
    factor_rho = np.zeros(n_features)
    factor_of[informative] = rng.integers(0, 3, n_inf)
    factor_rho[informative] = rng.uniform(0.2, 0.5, n_inf)
    noise = rng.permutation(np.flatnonzero(~is_inf))
    n_factors, i = 3, 0
    while i < noise.size:
        size = int(rng.integers(3, 9))
        if rng.random() < 0.5:  # half of the noise columns are in correlated blocks
            block = noise[i:i + size]
            factor_of[block] = n_factors
            factor_rho[block] = rng.uniform(0.5, 0.95, block.size)
            n_factors += 1
        i += size

    # Main effects: geometric importance by rank, ~10% interaction-only features.
    order = rng.permutation(informative)
    n_inter_only = n_inf // 10
    main = []
    for rank, col in enumerate(order[n_inter_only:]):
        kind = _EFFECTS[int(rng.integers(len(_EFFECTS)))]
        p = dict(t=float(rng.uniform(0.3, 2.0)), c=float(rng.normal(0, 1)),
                 w=float(rng.uniform(0.3, 0.8)), k=float(rng.uniform(1.5, 3.5)),
                 phi=float(rng.uniform(0, 2 * np.pi)))
        weight = float(rng.choice([-1.0, 1.0], p=[0.3, 0.7]) * 0.93 ** rank)
        missing_effect = float(rng.uniform(-0.5, 1.0) * abs(weight))
        main.append((int(col), kind, p, weight, missing_effect))
    pairs = []
    inter_pool = np.concatenate([order[:n_inter_only], order])  # interaction-only ones first
    for m in range(n_inf if n_inf > 1 else 0):
        i_col = int(inter_pool[m % inter_pool.size])
        j_col = int(rng.choice(informative[informative != i_col]))
        side = lambda: ("gt", "lt", "tanh")[int(rng.integers(3))]
        pairs.append((i_col, side(), float(rng.uniform(-0.5, 1.5)),
                      j_col, side(), float(rng.uniform(-0.5, 1.5)),
                      float(rng.choice([-1.0, 1.0], p=[0.25, 0.75]) * rng.uniform(0.4, 1.2))))
    triples = []
    for _ in range(n_inf // 10 if n_inf >= 3 else 0):
        cols = rng.choice(informative, size=3, replace=False)
        terms = tuple((int(c), ("gt", "lt")[int(rng.integers(2))], float(rng.uniform(-0.3, 1.0)))
                      for c in cols)
        triples.append((terms, float(rng.uniform(1.0, 2.5))))

    s = FraudStructure(n_features, informative, marginal, nan_rate, factor_of, factor_rho,
                       n_factors, main, pairs, triples)
    # Calibrate on a fixed sample: signal std SIGNAL_STD, mean probability POSITIVE_RATE.
    raw = _signal(s, *_latent_block(s, np.random.default_rng([seed, 99]), CALIBRATION_ROWS))
    s.scale = SIGNAL_STD / max(float(raw.std()), 1e-12)
    z = s.scale * (raw - raw.mean())
    lo, hi = -30.0, 30.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if expit(z + mid).mean() < POSITIVE_RATE else (lo, mid)
    s.intercept = 0.5 * (lo + hi) - s.scale * float(raw.mean())
    return s


def _latent_block(s: FraudStructure, rng, n):
    """Latents (n_features, n) float32 and the NaN mask (n_features, n) of one block.

    Feature-major, so that every per-column operation reads contiguous memory; float32 draws
    halve the cost of the dominant step (drawing n_features * n normals).
    """
    factors = rng.standard_normal((s.n_factors, n), dtype=np.float32)
    u = rng.standard_normal((s.n_features, n), dtype=np.float32)
    for j in np.flatnonzero(s.factor_of >= 0):
        rho = s.factor_rho[j]
        u[j] *= np.float32(np.sqrt(1.0 - rho ** 2))
        u[j] += np.float32(rho) * factors[s.factor_of[j]]
    missing = np.zeros((s.n_features, n), dtype=bool)
    with_nan = np.flatnonzero(s.nan_rate > 0)
    missing[with_nan] = (rng.random((with_nan.size, n), dtype=np.float32)
                         < s.nan_rate[with_nan, None])
    return u, missing


def _signal(s: FraudStructure, u, missing):
    """The logit's signal part (before scale and intercept)."""
    out = np.zeros(u.shape[1])
    for col, kind, p, weight, missing_effect in s.main:
        term = weight * _main_term(u[col].astype(np.float64), kind, p)
        out += np.where(missing[col], missing_effect, term)
    for ci, ki, ti, cj, kj, tj, weight in s.pairs:
        out += (weight * _side_term(u[ci].astype(np.float64), ki, ti)
                * _side_term(u[cj].astype(np.float64), kj, tj))
    for terms, weight in s.triples:
        t = np.ones(u.shape[1])
        for col, side, thr in terms:
            t *= _side_term(u[col].astype(np.float64), side, thr)
        out += weight * t
    return out


def _make(s: FraudStructure, n_rows, seed, part):
    X = np.empty((n_rows, s.n_features), dtype=np.float32)
    y = np.empty(n_rows, dtype=np.float64)
    for b, start in enumerate(range(0, n_rows, BLOCK)):
        n = min(BLOCK, n_rows - start)
        rng = np.random.default_rng([seed, 1 + part, b])
        u, missing = _latent_block(s, rng, BLOCK)  # full block: rows independent of n_rows
        u, missing = u[:, :n], missing[:, :n]
        logit = s.intercept + s.scale * _signal(s, u, missing)
        y[start:start + n] = (rng.random(BLOCK)[:n] < expit(logit)).astype(np.float64)
        obs = np.empty((s.n_features, n), dtype=np.float32)
        for j, (kind, p) in enumerate(s.marginal):
            obs[j] = _observe(u[j].astype(np.float64), kind, p)
        obs[missing] = np.nan
        X[start:start + n] = obs.T
    return X, y


def make_fraud(n_rows=500_000, n_features=500, informative_share=0.1, seed=0, *, part=0):
    """Rows of the fraud-like task.

    Parameters
    ----------
    n_rows, n_features : int
    informative_share : float in (0, 1]
        Share of the features that enter the label's logit (``round(share * n_features)``).
    seed : int
        Seed of the structure and of the rows.
    part : int, default 0
        Row stream: 0 for training rows, 1 for the test set (same structure, other rows).

    Returns
    -------
    X : ndarray of shape (n_rows, n_features), float32, C order (NaN = missing)
    y : ndarray of shape (n_rows,), float64 in {0, 1}
    """
    s = fraud_structure(n_features, informative_share, seed)
    return _make(s, int(n_rows), seed, int(part))


def make_fraud_train_test(n_train=500_000, n_test=200_000, n_features=500, informative_share=0.1,
                          seed=0):
    """Training rows (``part=0``) and a separate test set (``part=1``): X, y, X_test, y_test."""
    s = fraud_structure(n_features, informative_share, seed)
    X, y = _make(s, int(n_train), seed, 0)
    Xt, yt = _make(s, int(n_test), seed, 1)
    return X, y, Xt, yt
