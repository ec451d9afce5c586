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
from oocgbdt.params import METRIC_OBJECTIVES

RNG = np.random.default_rng(7)
OBJECTIVES = {
    "regression": get_objective({"objective": "regression"}),
    "binary": get_objective({"objective": "binary"}),
    "multiclass": get_objective({"objective": "multiclass", "num_class": 3}),
}


def _problem(name, n, rng=RNG, ties=False):
    """Labels, raw scores (n, K) and weights for an objective."""
    if name == "regression":
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
        for objective in objectives:
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
        assert cls().name == name
        assert cls().higher_is_better == (name in ("auc", "average_precision"))
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
    with pytest.raises(ValueError, match=r"Unknown metric 'ndcg'"):
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
