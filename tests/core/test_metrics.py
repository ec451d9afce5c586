"""Tests for oocgbdt.core.metrics (oracles: scikit-learn, NumPy, LightGBM; merge invariance)."""
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, log_loss, mean_squared_error, roc_auc_score

from oocgbdt.core.metrics import (
    METRIC_CLASSES,
    AUCMetric,
    BinaryLoglossMetric,
    L2Metric,
    MultiErrorMetric,
    MultiLoglossMetric,
    RMSEMetric,
    get_metrics,
)
from oocgbdt.core.objectives import get_objective
from oocgbdt.params import METRIC_OBJECTIVES, MULTICLASS_OBJECTIVES
from oocgbdt.params import OBJECTIVES as OBJECTIVE_NAMES

RNG = np.random.default_rng(7)
OBJECTIVES = {
    name: get_objective({"objective": name, "num_class": 3 if name in MULTICLASS_OBJECTIVES else 1})
    for name in OBJECTIVE_NAMES
}
_POSITIVE = ("poisson", "gamma", "tweedie")
_PROBABILITY = ("cross_entropy", "cross_entropy_lambda")


def _problem(name, n, rng=RNG, ties=False):
    """Labels, raw scores (n, K) and weights for an objective."""
    if name in _POSITIVE:
        y = rng.gamma(2.0, size=n) + 0.01
        raw = np.log(y)[:, None] + rng.normal(size=(n, 1)) * 0.3
    elif name in _PROBABILITY:
        y = rng.random(n)
        raw = (y - 0.5)[:, None] + rng.normal(size=(n, 1))
    elif name not in ("binary",) + MULTICLASS_OBJECTIVES:
        y = rng.normal(size=n)
        raw = y[:, None] + rng.normal(size=(n, 1))
    elif name == "binary":
        y = rng.integers(0, 2, n).astype(np.float64)
        raw = (y - 0.5)[:, None] + rng.normal(size=(n, 1)) * 2
    else:
        y = rng.integers(0, 3, n).astype(np.float64)
        raw = rng.normal(size=(n, 3)) * 2
        raw[np.arange(n), y.astype(int)] += 1
    if ties:
        raw = np.round(raw)
    w = rng.random(n) * 2
    return y, raw, w


def _metric_objective_pairs():
    for metric, objectives in METRIC_OBJECTIVES.items():
        if metric in ("ndcg", "map"):  # per query: tests/core/test_ranking.py
            continue
        for objective in objectives:
            if objective == "custom":  # raw scores of a callable: tests/test_custom_objective.py
                continue
            yield metric, objective


# --------------------------------------------------------------------------------------------
# Values against scikit-learn / NumPy
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("weighted", [False, True])
def test_l2_and_rmse(weighted):
    y, raw, w = _problem("regression", 500)
    w = w if weighted else None
    obj = OBJECTIVES["regression"]
    mse = mean_squared_error(y, raw[:, 0], sample_weight=w)
    assert L2Metric()(y, raw, w, obj) == pytest.approx(mse, rel=1e-12)
    assert RMSEMetric()(y, raw, w, obj) == pytest.approx(np.sqrt(mse), rel=1e-12)
    # 1-D raw scores and no objective (identity) give the same value.
    assert L2Metric()(y, raw[:, 0], w) == pytest.approx(mse, rel=1e-12)


def test_l2_on_binary_uses_probabilities():
    y, raw, w = _problem("binary", 300)
    p = 1 / (1 + np.exp(-raw[:, 0]))
    assert L2Metric()(y, raw, w, OBJECTIVES["binary"]) == pytest.approx(
        mean_squared_error(y, p, sample_weight=w), rel=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_binary_logloss(weighted):
    y, raw, w = _problem("binary", 500)
    w = w if weighted else None
    p = 1 / (1 + np.exp(-raw[:, 0]))
    expected = log_loss(y, p, sample_weight=w, labels=[0, 1])
    ours = BinaryLoglossMetric()(y, raw, w, OBJECTIVES["binary"])
    assert ours == pytest.approx(expected, rel=1e-12)
    assert BinaryLoglossMetric()(y, raw, w) == pytest.approx(expected, rel=1e-12)


def test_binary_logloss_clips_like_lightgbm():
    # p(true class) below 1e-15 costs -log(1e-15), as LightGBM's BinaryLoglossMetric.
    y = np.array([0.0, 1.0, 1.0, 0.0])
    raw = np.array([100.0, -100.0, 100.0, -100.0])
    expected = (2 * -np.log(1e-15) + 2 * -np.log(1 / (1 + np.exp(-100.0)))) / 4
    assert BinaryLoglossMetric()(y, raw) == pytest.approx(expected, rel=1e-12)
    assert np.isfinite(BinaryLoglossMetric()(np.array([0.0]), np.array([1e6])))


@pytest.mark.parametrize("weighted", [False, True])
def test_multi_logloss_and_error(weighted):
    y, raw, w = _problem("multiclass", 600)
    w = w if weighted else None
    e = np.exp(raw)
    p = e / e.sum(axis=1, keepdims=True)
    obj = OBJECTIVES["multiclass"]
    assert MultiLoglossMetric()(y, raw, w, obj) == pytest.approx(
        log_loss(y, p, sample_weight=w, labels=[0, 1, 2]), rel=1e-12)
    assert MultiErrorMetric()(y, raw, w, obj) == pytest.approx(
        1 - accuracy_score(y, p.argmax(axis=1), sample_weight=w), rel=1e-12)


def test_multi_error_counts_ties_as_errors():
    """LightGBM's MultiErrorMetric: an error when another class has probability >= the true one."""
    y = np.array([0.0, 1.0, 2.0])
    raw = np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 1.0], [3.0, 3.0, 3.0]])
    assert MultiErrorMetric()(y, raw) == pytest.approx(2 / 3)


def test_multi_logloss_clips():
    y = np.array([2.0])
    raw = np.array([[1000.0, 0.0, -1000.0]])
    assert MultiLoglossMetric()(y, raw) == pytest.approx(-np.log(1e-15))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ties", [False, True])
def test_auc(weighted, ties):
    y, raw, w = _problem("binary", 500, ties=ties)
    w = w if weighted else None
    expected = roc_auc_score(y, raw[:, 0], sample_weight=w)
    assert AUCMetric()(y, raw, w) == pytest.approx(expected, rel=1e-12)
    assert AUCMetric()(y, raw[:, 0], w, OBJECTIVES["binary"]) == pytest.approx(expected, rel=1e-12)


def test_auc_regression_labels_positive_when_above_zero():
    y, raw, w = _problem("regression", 300)
    expected = roc_auc_score(y > 0, raw[:, 0], sample_weight=w)
    assert AUCMetric()(y, raw, w, OBJECTIVES["regression"]) == pytest.approx(expected, rel=1e-12)


def test_auc_edge_cases():
    auc = AUCMetric()
    assert auc(np.ones(4), np.arange(4.0)) == 1.0  # one class only: 1.0 as LightGBM
    assert auc(np.zeros(4), np.arange(4.0)) == 1.0
    assert auc(np.array([0.0, 1.0]), np.array([0.5, 0.5])) == 0.5  # all tied
    assert auc(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == 0.0
    # Zero-weight rows do not count.
    assert auc(np.array([0.0, 1.0, 0.0]), np.array([0.0, 1.0, 2.0]),
               np.array([1.0, 1.0, 0.0])) == 1.0
    scores, pos, neg = auc.partial(np.array([1.0, 0.0, 1.0]), np.array([2.0, 1.0, 2.0]))
    np.testing.assert_array_equal(scores, [1.0, 2.0])
    np.testing.assert_array_equal(pos, [0.0, 2.0])
    np.testing.assert_array_equal(neg, [1.0, 0.0])


def test_empty_set_gives_nan_for_means():
    m = L2Metric()
    assert np.isnan(m.finalize(m.partial(np.zeros(0), np.zeros(0))))


def test_attributes_and_pickle():
    assert [(m.name, m.higher_is_better) for m in map(lambda c: c(), METRIC_CLASSES.values())][:6] == [
        ("l2", False), ("rmse", False), ("binary_logloss", False), ("auc", True),
        ("multi_logloss", False), ("multi_error", False)]
    for name, cls in METRIC_CLASSES.items():
        # ndcg and map are one metric per position: named ndcg@k, map@k.
        assert cls().name == (f"{name}@1" if name in ("ndcg", "map") else name)
        assert cls().higher_is_better == (name in ("auc", "average_precision", "ndcg", "map",
                                                   "auc_mu"))
    for cls in METRIC_CLASSES.values():
        m = cls()
        assert pickle.loads(pickle.dumps(m)) == m


def test_bad_shapes():
    with pytest.raises(ValueError, match=r"raw_score must have shape \(3,\) or \(3, n_classes\)"):
        L2Metric().partial(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match=r"weight must have shape \(3,\)"):
        L2Metric().partial(np.zeros(3), np.zeros(3), np.ones(2))
    with pytest.raises(ValueError, match=r"y must be a 1-D array"):
        L2Metric().partial(np.zeros((3, 1)), np.zeros(3))
    with pytest.raises(ValueError, match=r"metric 'auc' needs one score per row"):
        AUCMetric().partial(np.zeros(3), np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"n_classes >= 2 for a multiclass metric"):
        MultiLoglossMetric().partial(np.zeros(3), np.zeros(3))


# --------------------------------------------------------------------------------------------
# get_metrics
# --------------------------------------------------------------------------------------------


def test_get_metrics():
    reg, binary, multi = OBJECTIVES["regression"], OBJECTIVES["binary"], OBJECTIVES["multiclass"]
    assert [m.name for m in get_metrics(None, reg)] == ["l2"]
    assert [m.name for m in get_metrics(None, binary)] == ["binary_logloss"]
    assert [m.name for m in get_metrics(None, multi)] == ["multi_logloss"]
    assert get_metrics("None", reg) == [] and get_metrics([], binary) == []
    names = [m.name for m in get_metrics(["mse", "l2_root", "l2", "auc"], reg)]
    assert names == ["l2", "rmse", "auc"]
    assert [m.name for m in get_metrics("binary,auc", binary)] == ["binary_logloss", "auc"]
    assert [m.name for m in get_metrics(["multi_error", "softmax"], multi)] == [
        "multi_error", "multi_logloss"]
    with pytest.raises(ValueError, match=r"Unknown metric 'ndcgx'"):
        get_metrics("ndcgx", reg)
    with pytest.raises(ValueError, match=r"metric 'ndcg' cannot be computed for objective "
                                         r"'regression'; it needs objective 'lambdarank'"):
        get_metrics("ndcg", reg)
    with pytest.raises(ValueError, match=r"metric 'multi_error' cannot be computed for objective "
                                         r"'binary'; it needs objective 'multiclass'"):
        get_metrics("multi_error", binary)


# --------------------------------------------------------------------------------------------
# Mergeability: chunked + merged in any tree order == one piece
# --------------------------------------------------------------------------------------------


def _random_tree_merge(metric, parts, rng):
    """Merge partial stats pairwise in a random order and a random tree shape."""
    parts = list(parts)
    while len(parts) > 1:
        i, j = sorted(rng.choice(len(parts), size=2, replace=False))
        a, b = (parts[i], parts[j]) if rng.random() < 0.5 else (parts[j], parts[i])
        merged = metric.merge(a, b)
        del parts[j]
        parts[i] = merged
    return parts[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pair=st.sampled_from(sorted(_metric_objective_pairs())),
    n=st.integers(1, 120),
    n_cuts=st.integers(0, 8),
    weighted=st.booleans(),
    ties=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_merge_invariance(pair, n, n_cuts, weighted, ties, seed):
    metric_name, objective_name = pair
    rng = np.random.default_rng(seed)
    metric = METRIC_CLASSES[metric_name]()
    objective = OBJECTIVES[objective_name]
    y, raw, w = _problem(objective_name, n, rng=rng, ties=ties)
    w = w if weighted else None
    whole = metric.finalize(metric.partial(y, raw, w, objective))
    # Random cut points (empty chunks allowed).
    cuts = np.sort(rng.integers(0, n + 1, size=n_cuts))
    parts = [
        metric.partial(yc, rc, None if w is None else wc, objective)
        for yc, rc, wc in zip(np.split(y, cuts), np.split(raw, cuts),
                              np.split(w if w is not None else y, cuts))
    ]
    merged = metric.finalize(_random_tree_merge(metric, parts, rng))
    if np.isnan(whole):
        assert np.isnan(merged)
    else:
        assert merged == pytest.approx(whole, rel=1e-12, abs=1e-14)


# --------------------------------------------------------------------------------------------
# LightGBM parity: LightGBM's own eval results on its own raw predictions
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "objective_name, metrics",
    [
        ("regression", ["l2", "rmse", "auc"]),
        ("binary", ["binary_logloss", "auc", "l2"]),
        ("multiclass", ["multi_logloss", "multi_error"]),
    ],
)
def test_matches_lightgbm_eval(objective_name, metrics):
    lgb = pytest.importorskip("lightgbm")
    n, n_train = 500, 300
    X = RNG.normal(size=(n, 4))
    # LightGBM stores labels and weights as float32: feed float32 to both sides.
    w = (RNG.random(n) + 0.5).astype(np.float32)
    if objective_name == "regression":
        y = (X[:, 0] * 3 + RNG.normal(size=n)).astype(np.float32)
    elif objective_name == "binary":
        y = (X[:, 0] + RNG.normal(size=n) > 0).astype(np.float32)
    else:
        y = np.digitize(X[:, 0] + RNG.normal(size=n), [-0.5, 0.5]).astype(np.float32)
    params = {"objective": objective_name, "metric": metrics, "num_leaves": 7, "verbose": -1,
              "num_threads": 1}
    if objective_name == "multiclass":
        params["num_class"] = 3
    train = lgb.Dataset(X[:n_train], y[:n_train], weight=w[:n_train])
    valid = lgb.Dataset(X[n_train:], y[n_train:], weight=w[n_train:], reference=train)
    evals = {}
    booster = lgb.train(params, train, num_boost_round=5, valid_sets=[valid], valid_names=["v"],
                        callbacks=[lgb.record_evaluation(evals)])
    raw = booster.predict(X[n_train:], raw_score=True)
    objective = get_objective({k: v for k, v in params.items() if k != "num_threads"})
    for metric in get_metrics(params["metric"], objective):
        ours = metric(y[n_train:], raw, w[n_train:], objective)
        assert ours == pytest.approx(evals["v"][metric.name][-1], rel=1e-9), metric.name


# --------------------------------------------------------------------------------------------
# The metrics beyond l2/logloss/auc: scikit-learn / NumPy formulas, and LightGBM's evaluation
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("weighted", [False, True])
def test_regression_losses_against_sklearn_and_numpy(weighted):
    from sklearn.metrics import mean_absolute_error, mean_gamma_deviance, mean_pinball_loss

    y, raw, w = _problem("regression", 400)
    w = w if weighted else None
    ww = np.ones_like(y) if w is None else w
    s = raw[:, 0]
    obj = OBJECTIVES["regression"]
    params = {"alpha": 0.7, "fair_c": 1.3, "tweedie_variance_power": 1.4}
    metric = {m.name: m for m in get_metrics(
        ["l1", "quantile", "huber", "fair", "mape"], obj, _defaults() | params)}
    assert metric["l1"](y, raw, w, obj) == pytest.approx(
        mean_absolute_error(y, s, sample_weight=w), rel=1e-12)
    assert metric["quantile"](y, raw, w, obj) == pytest.approx(
        mean_pinball_loss(y, s, alpha=0.7, sample_weight=w), rel=1e-12)
    d = s - y
    huber = np.where(np.abs(d) <= 0.7, 0.5 * d * d, 0.7 * (np.abs(d) - 0.35))
    assert metric["huber"](y, raw, w, obj) == pytest.approx(np.average(huber, weights=ww))
    fair = 1.3 * np.abs(d) - 1.3 ** 2 * np.log(1 + np.abs(d) / 1.3)
    assert metric["fair"](y, raw, w, obj) == pytest.approx(np.average(fair, weights=ww))
    mape = np.abs(d) / np.maximum(1.0, np.abs(y))
    assert metric["mape"](y, raw, w, obj) == pytest.approx(np.average(mape, weights=ww))
    # Log-link losses on positive labels, predictions exp(raw).
    y, raw, _ = _problem("gamma", 400)
    pos = {m.name: m for m in get_metrics(["gamma", "gamma_deviance", "poisson", "tweedie"],
                                          OBJECTIVES["gamma"], _defaults() | params)}
    mu = np.exp(raw[:, 0])
    assert pos["gamma_deviance"](y, raw, w, OBJECTIVES["gamma"]) == pytest.approx(
        mean_gamma_deviance(y, mu + 1e-9, sample_weight=w) * ww.sum(), rel=1e-9)
    # LightGBM's gamma keeps a float32 rounding residue of log(y) (one float32 ulp, ~6e-8 of
    # log y per row), hence the tolerance.
    assert pos["gamma"](y, raw, w, OBJECTIVES["gamma"]) == pytest.approx(
        np.average(y / mu + np.log(mu), weights=ww), rel=1e-6)
    assert pos["poisson"](y, raw, w, OBJECTIVES["gamma"]) == pytest.approx(
        np.average(mu - y * np.log(mu), weights=ww), rel=1e-12)
    rho = 1.4
    tw = -y * mu ** (1 - rho) / (1 - rho) + mu ** (2 - rho) / (2 - rho)
    assert pos["tweedie"](y, raw, w, OBJECTIVES["gamma"]) == pytest.approx(
        np.average(tw, weights=ww), rel=1e-10)


def _defaults():
    from oocgbdt.params import resolve_params
    return resolve_params({})


@pytest.mark.parametrize("weighted", [False, True])
def test_binary_error_and_average_precision_against_sklearn(weighted):
    from sklearn.metrics import average_precision_score

    y, raw, w = _problem("binary", 500)
    w = w if weighted else None
    obj = OBJECTIVES["binary"]
    err, ap = get_metrics(["binary_error", "average_precision"], obj, _defaults())
    p = 1 / (1 + np.exp(-raw[:, 0]))
    assert err(y, raw, w, obj) == pytest.approx(
        1 - accuracy_score(y, p > 0.5, sample_weight=w), rel=1e-12)
    # Ties included: sklearn groups tied scores into one threshold, as LightGBM does.
    raw_t = np.round(raw * 2) / 2
    assert ap(y, raw_t, w, obj) == pytest.approx(
        average_precision_score(y, raw_t[:, 0], sample_weight=w), rel=1e-12)
    assert ap.higher_is_better


def test_cross_entropy_family_against_numpy():
    y, raw, w = _problem("cross_entropy", 300)
    # Labels k/64: 1 - y is exact in float32 too (LightGBM computes it on float32 labels).
    y = np.clip(np.round(y * 64), 1, 63) / 64
    obj = OBJECTIVES["cross_entropy"]
    xe, kl = get_metrics(["cross_entropy", "kullback_leibler"], obj, _defaults())
    p = 1 / (1 + np.exp(-raw[:, 0]))
    loss = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    assert xe(y, raw, w, obj) == pytest.approx(np.average(loss, weights=w), rel=1e-12)
    ent = y * np.log(y) + (1 - y) * np.log(1 - y)
    assert kl(y, raw, w, obj) == pytest.approx(np.average(loss + ent, weights=w), rel=1e-12)
    lam_obj = OBJECTIVES["cross_entropy_lambda"]
    (lam,) = get_metrics(["cross_entropy_lambda"], lam_obj, _defaults())
    z = 1 - np.exp(-w * np.log1p(np.exp(raw[:, 0])))
    ref = np.mean(-(y * np.log(z) + (1 - y) * np.log(1 - z)))  # a mean over rows
    assert lam(y, raw, w, lam_obj) == pytest.approx(ref, rel=1e-12)


def test_multi_error_top_k_against_sklearn():
    from sklearn.metrics import top_k_accuracy_score

    y, raw, w = _problem("multiclass", 400)
    obj = OBJECTIVES["multiclass"]
    (m,) = get_metrics(["multi_error"], obj, _defaults() | {"multi_error_top_k": 2})
    assert m.name == "multi_error@2"
    assert m(y, raw, w, obj) == pytest.approx(
        1 - top_k_accuracy_score(y, raw, k=2, sample_weight=w, labels=[0, 1, 2]), rel=1e-12)


@pytest.mark.parametrize(
    "objective_name, metrics, extra",
    [
        ("regression_l1", ["l1", "quantile", "huber", "fair", "mape"], {"alpha": 0.6}),
        ("poisson", ["poisson", "gamma", "gamma_deviance", "tweedie"], {}),
        ("cross_entropy", ["cross_entropy", "kullback_leibler", "binary_error",
                           "average_precision"], {}),
        ("cross_entropy_lambda", ["cross_entropy_lambda"], {}),
        ("multiclassova", ["multi_logloss", "multi_error"], {"multi_error_top_k": 2}),
    ],
)
def test_new_metrics_match_lightgbm_eval(objective_name, metrics, extra):
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(3)
    n, n_train = 500, 300
    X = rng.normal(size=(n, 4))
    w = (rng.random(n) + 0.5).astype(np.float32)
    if objective_name == "poisson":
        y = rng.poisson(np.exp(0.5 * X[:, 0])).astype(np.float32) + 1
    elif objective_name.startswith("cross_entropy"):
        y = (1 / (1 + np.exp(-X[:, 0] - rng.normal(size=n)))).astype(np.float32)
    elif objective_name == "multiclassova":
        y = np.digitize(X[:, 0] + rng.normal(size=n), [-0.5, 0.5]).astype(np.float32)
    else:
        y = (X[:, 0] * 3 + rng.normal(size=n)).astype(np.float32)
    params = {"objective": objective_name, "metric": metrics, "num_leaves": 7, "verbose": -1,
              "num_threads": 1, **extra}
    if objective_name == "multiclassova":
        params["num_class"] = 3
    train = lgb.Dataset(X[:n_train], y[:n_train], weight=w[:n_train])
    valid = lgb.Dataset(X[n_train:], y[n_train:], weight=w[n_train:], reference=train)
    evals = {}
    booster = lgb.train(params, train, num_boost_round=5, valid_sets=[valid], valid_names=["v"],
                        callbacks=[lgb.record_evaluation(evals)])
    raw = booster.predict(X[n_train:], raw_score=True)
    ours_params = {k: v for k, v in params.items() if k != "num_threads"}
    objective = get_objective(ours_params)
    from oocgbdt.params import resolve_params
    for metric in get_metrics(params["metric"], objective, resolve_params(ours_params)):
        ours = metric(y[n_train:], raw, w[n_train:], objective)
        # LightGBM sums the weights of cross_entropy and kullback_leibler in float32
        # (ObtainMinMaxSum over label_t): 200 weights near 1 carry a relative rounding of
        # ~1e-7; the mergeable sums here are float64.
        rel = 1e-6 if metric.name in ("cross_entropy", "kullback_leibler") else 1e-9
        assert ours == pytest.approx(evals["v"][metric.name][-1], rel=rel), metric.name


# --------------------------------------------------------------------------------------------
# auc_mu: LightGBM's evaluation, tied scores, weights, parameter checks
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("class_weights", [None, "custom"])
@pytest.mark.parametrize("weighted", [False, True])
def test_auc_mu_matches_lightgbm_eval(class_weights, weighted):
    """Every round of LightGBM's ``auc_mu`` on its own raw predictions; few leaves and coarse
    bins give many rows with tied scores. The custom matrix is asymmetric with a nonzero
    diagonal (which LightGBM reads as 0)."""
    lgb = pytest.importorskip("lightgbm")
    from oocgbdt.params import resolve_params
    rng = np.random.default_rng(5)
    n, n_train, k = 700, 400, 4
    X = np.round(rng.normal(size=(n, 3)), 1)
    y = np.digitize(X[:, 0] + X[:, 1] * 0.5 + rng.normal(size=n), [-1, 0, 1]).astype(np.float32)
    w = (rng.random(n) + 0.5).astype(np.float32) if weighted else None
    params = {"objective": "multiclass", "num_class": k, "metric": "auc_mu", "num_leaves": 4,
              "max_bin": 15, "verbose": -1}
    if class_weights:
        params["auc_mu_weights"] = list(rng.uniform(0.2, 3.0, k * k).round(2))
    rows = slice(n_train, None)
    train = lgb.Dataset(X[:n_train], y[:n_train], weight=None if w is None else w[:n_train])
    valid = lgb.Dataset(X[rows], y[rows], weight=None if w is None else w[rows], reference=train)
    evals = {}
    booster = lgb.train(dict(params, num_threads=1), train, num_boost_round=4,
                        valid_sets=[valid], valid_names=["v"],
                        callbacks=[lgb.record_evaluation(evals)])
    resolved = resolve_params(params)
    objective = get_objective(resolved)
    (metric,) = get_metrics("auc_mu", objective, resolved)
    for it in range(4):
        raw = booster.predict(X[rows], raw_score=True, num_iteration=it + 1)
        assert len(np.unique(raw, axis=0)) < 0.8 * len(raw)  # ties are exercised
        ours = metric(y[rows], raw, None if w is None else w[rows], objective)
        assert ours == pytest.approx(evals["v"]["auc_mu"][it], rel=0, abs=1e-12), it


def test_auc_mu_against_pairwise_definition():
    """The Kleiman-Page definition written out over all pairs of rows (NumPy)."""
    rng = np.random.default_rng(2)
    n, k = 90, 3
    y = rng.integers(0, k, n)
    raw = np.round(rng.normal(size=(n, k)), 1)
    w = rng.random(n) + 0.1
    W = rng.uniform(0.5, 2.0, (k, k))
    np.fill_diagonal(W, 0)
    expected = 0.0
    for i in range(k):
        for j in range(i + 1, k):
            v = W[i] - W[j]
            d = (v[i] - v[j]) * (raw @ v)
            a, b = y == i, y == j
            gt = (d[a][:, None] > d[b][None, :]) + 0.5 * (d[a][:, None] == d[b][None, :])
            expected += (w[a] @ gt @ w[b]) / (w[a].sum() * w[b].sum())
    expected *= 2 / (k * (k - 1))
    ours = METRIC_CLASSES["auc_mu"](W.ravel())(y, raw, w)
    assert ours == pytest.approx(expected, rel=1e-12)


def test_auc_mu_weights_checks():
    from oocgbdt.params import resolve_params
    base = {"objective": "multiclass", "num_class": 3}
    ok = resolve_params(dict(base, auc_mu_weights="5,1,2,1,0,1,2,1,7"))
    assert ok["auc_mu_weights"] == [0.0, 1.0, 2.0, 1.0, 0.0, 1.0, 2.0, 1.0, 0.0]
    with pytest.raises(ValueError, match=r"auc_mu_weights must have num_class\*\*2 = 9 entries"):
        resolve_params(dict(base, auc_mu_weights=[1.0] * 4))
    with pytest.raises(ValueError, match=r"auc_mu_weights must be nonzero off the diagonal, got "
                                         r"0 at position 5 \(row 1, column 2\)"):
        resolve_params(dict(base, auc_mu_weights=[0, 1, 1, 1, 0, 0, 1, 1, 0]))
    with pytest.raises(ValueError, match=r"metric 'auc_mu' cannot be computed for objective "
                                         r"'binary'"):
        resolve_params({"objective": "binary", "metric": "auc_mu"})
    with pytest.raises(ValueError, match=r"metric 'auc_mu' needs one score per class"):
        METRIC_CLASSES["auc_mu"]().partial(np.zeros(3), np.zeros(3))
