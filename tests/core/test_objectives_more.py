"""Tests for the objectives beyond L2/binary/softmax: names and aliases, label checks, init scores
against LightGBM's, gradients through the objective against the kernels' NumPy twins, output
transforms against LightGBM's predictions."""
import pickle

import numpy as np
import pytest

from oocgbdt.core import objectives as O
from oocgbdt.core.objectives import get_objective
from oocgbdt.kernels import loss as L
from oocgbdt.params import DEFAULT_METRIC, resolve_params

NEW = ["regression_l1", "huber", "fair", "quantile", "mape", "poisson", "gamma", "tweedie",
       "cross_entropy", "cross_entropy_lambda", "multiclassova"]


def _labels(name, n, rng):
    if name in ("poisson", "tweedie"):
        return rng.poisson(2.0, n).astype(np.float32)
    if name == "gamma":
        return (rng.gamma(2.0, size=n) + 0.1).astype(np.float32)
    if name.startswith("cross_entropy"):
        return rng.random(n).astype(np.float32)
    if name == "multiclassova":
        return rng.integers(0, 3, n).astype(np.float32)
    return (rng.normal(size=n) * 2 + 1).astype(np.float32)


def _params(name, **kw):
    p = {"objective": name, **kw}
    if name == "multiclassova":
        p["num_class"] = 3
    return p


@pytest.mark.parametrize("alias, name", [
    ("mae", "regression_l1"), ("l1", "regression_l1"), ("mean_absolute_error", "regression_l1"),
    ("mean_absolute_percentage_error", "mape"), ("xentropy", "cross_entropy"),
    ("xentlambda", "cross_entropy_lambda"), ("ova", "multiclassova"), ("ovr", "multiclassova"),
    ("multiclass_ova", "multiclassova"), ("rmse", "regression"), ("huber", "huber"),
])
def test_aliases(alias, name):
    p = resolve_params(_params(alias) if name != "multiclassova" else
                       {"objective": alias, "num_class": 3})
    assert p["objective"] == name
    assert get_objective(p).name == name


@pytest.mark.parametrize("name", NEW)
def test_default_metric_is_lightgbms_and_objects_pickle(name):
    obj = get_objective(_params(name))
    expected = {"regression_l1": "l1", "multiclassova": "multi_logloss"}.get(name, name)
    assert obj.default_metric == DEFAULT_METRIC[name] == expected
    assert resolve_params(_params(name))["metric"] == [expected]
    assert pickle.loads(pickle.dumps(obj)) == obj


def test_parameter_checks():
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\) when objective is 'quantile'"):
        resolve_params({"objective": "quantile", "alpha": 1.5})
    with pytest.raises(ValueError, match=r"tweedie_variance_power must be"):
        resolve_params({"objective": "tweedie", "tweedie_variance_power": 2.0})
    with pytest.raises(ValueError, match=r"is_unbalance=True and scale_pos_weight=2.0"):
        resolve_params({"objective": "binary", "is_unbalance": True, "scale_pos_weight": 2.0})
    with pytest.raises(ValueError, match=r"num_class must be an integer >= 2 when objective is "
                                         r"'multiclassova'"):
        resolve_params({"objective": "ova"})
    assert resolve_params({"objective": "binary", "unbalance": True})["is_unbalance"] is True


@pytest.mark.parametrize("name, bad, pattern", [
    ("poisson", [1.0, -0.5], r"y must be >= 0 for objective 'poisson'.*-0.5"),
    ("gamma", [-2.0], r"y must be >= 0 for objective 'gamma'"),
    ("tweedie", [-1.0, 3.0], r"y must be >= 0 for objective 'tweedie'"),
    ("cross_entropy", [0.5, 1.5], r"y must be in \[0, 1\] for objective 'cross_entropy'.*1.5"),
    ("cross_entropy_lambda", [-0.1], r"y must be in \[0, 1\] for objective 'cross_entropy_lambda'"),
    ("multiclassova", [0.0, 3.0], r"integer class labels in \[0, num_class\)"),
])
def test_label_checks(name, bad, pattern):
    with pytest.raises(ValueError, match=pattern):
        get_objective(_params(name)).check_labels(np.array(bad))


def test_poisson_labels_summing_to_zero():
    obj = get_objective({"objective": "poisson"})
    with pytest.raises(ValueError, match=r"labels sum to 0"):
        obj.init_score(np.zeros(5, np.float32))


@pytest.mark.parametrize("name", ["huber", "fair", "poisson", "gamma", "tweedie", "cross_entropy",
                                  "cross_entropy_lambda", "multiclassova"])
@pytest.mark.parametrize("weighted", [False, True])
def test_init_score_matches_lightgbm(name, weighted):
    """LightGBM's BoostFromScore: its one-leaf model's raw prediction is the init score."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(4)
    n = 400
    y = _labels(name, n, rng)
    w = (rng.random(n) + 0.5).astype(np.float32) if weighted else None
    X = rng.normal(size=(n, 1))
    params = dict(_params(name), verbose=-1, min_data_in_leaf=n + 1, num_threads=1)
    booster = lgb.train(params, lgb.Dataset(X, y, weight=w), num_boost_round=1)
    expected = booster.predict(X[:1], raw_score=True).reshape(-1)
    obj = get_objective(_params(name))
    ours = obj.init_score(y, w)
    np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", NEW)
def test_transform_matches_lightgbm_prediction(name):
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(5)
    n = 300
    y = _labels(name, n, rng)
    X = rng.normal(size=(n, 3))
    params = dict(_params(name), verbose=-1, num_leaves=4, num_threads=1)
    booster = lgb.train(params, lgb.Dataset(X, y), num_boost_round=3)
    raw = booster.predict(X, raw_score=True)
    obj = get_objective(_params(name))
    np.testing.assert_allclose(obj.transform(raw), booster.predict(X), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name, naive, extra", [
    ("regression_l1", L.gradients_l1_naive, ()),
    ("huber", L.gradients_huber_naive, (0.9,)),
    ("fair", L.gradients_fair_naive, (1.0,)),
    ("quantile", L.gradients_quantile_naive, (0.9,)),
    ("mape", L.gradients_mape_naive, ()),
    ("poisson", L.gradients_poisson_naive, (0.7,)),
    ("gamma", L.gradients_gamma_naive, ()),
    ("tweedie", L.gradients_tweedie_naive, (1.5,)),
    ("cross_entropy", L.gradients_cross_entropy_naive, ()),
    ("cross_entropy_lambda", L.gradients_cross_entropy_lambda_naive, ()),
])
def test_objective_gradients_use_the_parameters(name, naive, extra):
    rng = np.random.default_rng(6)
    y = _labels(name, 200, rng)
    w = (rng.random(200) + 0.5).astype(np.float32)
    raw = rng.normal(size=(200, 1))
    obj = get_objective(_params(name))
    g = np.empty((200, 1), np.float32)
    h = np.empty((200, 1), np.float32)
    obj.gradients(y, raw, w, g, h)
    g0 = np.empty(200, np.float32)
    h0 = np.empty(200, np.float32)
    naive(y, raw[:, 0], w, *extra, g0, h0)
    np.testing.assert_allclose(g[:, 0], g0, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(h[:, 0], h0, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("kw, expected", [
    ({"is_unbalance": True}, (3.0, 1.0)),  # 30 positives, 10 negatives: negatives weigh 3
    ({"scale_pos_weight": 2.5}, (1.0, 2.5)),
    ({}, (1.0, 1.0)),
])
def test_binary_label_weights_from_global_counts(kw, expected):
    y = np.array([1.0] * 30 + [0.0] * 10, np.float32)
    obj = get_objective({"objective": "binary", **kw})
    stats = obj.label_stats(y[:15]) + obj.label_stats(y[15:])  # merged over two chunks
    fitted = obj.with_label_stats(stats)
    assert fitted.label_weights == expected
    raw = np.linspace(-1, 1, 40)
    g = np.empty(40, np.float32)
    h = np.empty(40, np.float32)
    fitted.gradients(y, raw, None, g, h)
    g0 = np.empty(40, np.float32)
    h0 = np.empty(40, np.float32)
    L.gradients_binary_naive(y, raw, None, g0, h0)
    lw = np.where(y > 0, expected[1], expected[0])
    np.testing.assert_allclose(g, g0 * lw, rtol=1e-6)
    np.testing.assert_allclose(h, h0 * lw, rtol=1e-6)


def test_multiclassova_need_train_and_stats_merge():
    obj = get_objective({"objective": "ova", "num_class": 3})
    y = np.array([0, 0, 1, 1, 1], np.float32)
    stats = obj.label_stats(y[:2]) + obj.label_stats(y[2:])
    np.testing.assert_array_equal(stats, obj.label_stats(y))
    assert obj.need_train_from_stats(stats).tolist() == [True, True, False]


def test_reg_sqrt_is_turned_off_where_lightgbm_turns_it_off():
    with pytest.warns(UserWarning, match="reg_sqrt does not apply to objective 'huber'"):
        obj = get_objective({"objective": "huber", "reg_sqrt": True})
    assert not obj.reg_sqrt and obj.lightgbm_objective_string == "huber"
    assert not get_objective({"objective": "cross_entropy", "reg_sqrt": True}).reg_sqrt
    obj = get_objective({"objective": "regression", "reg_sqrt": True})
    y = np.array([-4.0, 0.0, 2.25], dtype=np.float32)
    np.testing.assert_array_equal(obj.objective_labels(y), [-2.0, 0.0, 1.5])
    np.testing.assert_array_equal(obj.transform(np.array([-2.0, 0.0, 1.5])), [-4.0, 0.0, 2.25])


@pytest.mark.parametrize("name", ["regression", "huber", "fair", "poisson", "gamma", "tweedie",
                                  "cross_entropy", "cross_entropy_lambda", "binary",
                                  "multiclass", "multiclassova"])
def test_weighted_gradients_are_lightgbms_bit_for_bit(name):
    """LightGBM trained on our weighted gradients (a custom objective) grows the model of its
    own objective, bit for bit, over several rounds: the same float32 gradients and hessians
    (e.g. L2's ``float32(s - y) * weight`` is a float32 product there)."""
    import json

    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(3)
    n = 1000
    X = rng.normal(size=(n, 4))
    base = X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(size=n) * 0.3
    y = {"poisson": rng.poisson(np.exp(base / 2)), "tweedie": rng.poisson(np.exp(base / 2)),
         "gamma": np.exp(base / 2) + 0.1, "binary": base > 0.5,
         "multiclass": np.digitize(base, [0, 1]), "multiclassova": np.digitize(base, [0, 1]),
         }.get(name, 1 / (1 + np.exp(-base)) if name.startswith("cross") else base * 3)
    y = np.asarray(y, dtype=np.float32)
    w = rng.uniform(0.5, 2.0, n).astype(np.float32)
    params = _params(name, **({"num_class": 3} if name == "multiclass" else {}))
    obj = get_objective(params)
    obj = obj.with_label_stats(obj.label_stats(y, w))
    k = obj.num_tree_per_iteration

    def fobj(raw, _data):
        g, h = np.empty((n, k), np.float32), np.empty((n, k), np.float32)
        obj.gradients(y, np.asarray(raw).reshape(n, k), w, g, h)
        return (g[:, 0], h[:, 0]) if k == 1 else (g, h)

    common = dict(params, num_leaves=7, boost_from_average=False, deterministic=True,
                  num_threads=1, verbose=-1)
    trees = [json.dumps(lgb.train(dict(common, objective=o), lgb.Dataset(X, y, weight=w),
                                  num_boost_round=6).dump_model()["tree_info"])
             for o in (name, fobj)]
    assert trees[0] == trees[1]
