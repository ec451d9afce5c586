"""Tests for oocgbdt.core.objectives (oracles: formulas, the kernels' naive twins, LightGBM)."""
import pickle

import numpy as np
import pytest

from oocgbdt.core.objectives import (
    BinaryLogloss,
    MulticlassSoftmax,
    RegressionL2,
    check_sample_weight,
    get_objective,
)
from oocgbdt.kernels.loss import (
    gradients_binary_naive,
    gradients_l2_naive,
    gradients_multiclass_naive,
)

RNG = np.random.default_rng(12345)


def _labels(name, n, num_class=3, rng=RNG):
    if name == "regression":
        return (rng.normal(size=n) * 2 + 1).astype(np.float32)
    if name == "binary":
        return rng.integers(0, 2, n).astype(np.float32)
    return rng.integers(0, num_class, n).astype(np.float32)


def _objective(name, num_class=3, **kw):
    params = {"objective": name, **kw}
    if name == "multiclass":
        params["num_class"] = num_class
    return get_objective(params)


# --------------------------------------------------------------------------------------------
# Construction and description
# --------------------------------------------------------------------------------------------


def test_get_objective_attributes():
    reg = get_objective(None)
    assert isinstance(reg, RegressionL2)
    assert (reg.name, reg.num_tree_per_iteration, reg.default_metric) == ("regression", 1, "l2")
    assert reg.lightgbm_objective_string == "regression"

    binary = get_objective({"objective": "binary"})
    assert isinstance(binary, BinaryLogloss)
    assert binary.num_tree_per_iteration == 1
    assert binary.default_metric == "binary_logloss"
    assert binary.lightgbm_objective_string == "binary sigmoid:1"

    multi = get_objective({"objective": "softmax", "num_class": 4})
    assert isinstance(multi, MulticlassSoftmax)
    assert multi.num_tree_per_iteration == 4
    assert multi.default_metric == "multi_logloss"
    assert multi.lightgbm_objective_string == "multiclass num_class:4"

    assert get_objective({"objective": "mse"}) == reg
    no_average = get_objective({"application": "binary", "boost_from_average": False})
    assert no_average.boost_from_average is False


def test_get_objective_validates_params():
    with pytest.raises(ValueError, match="num_class must be an integer >= 2"):
        get_objective({"objective": "multiclass"})
    with pytest.raises(ValueError, match="Unknown parameter"):
        get_objective({"objectiv": "binary"})
    with pytest.raises(ValueError, match="num_class must be an integer >= 2 for multiclass"):
        MulticlassSoftmax(num_class=1)


@pytest.mark.parametrize("name", ["regression", "binary", "multiclass"])
def test_objectives_pickle(name):
    obj = _objective(name)
    clone = pickle.loads(pickle.dumps(obj))
    assert clone == obj and hash(clone) == hash(obj) and repr(clone) == repr(obj)


# --------------------------------------------------------------------------------------------
# check_labels
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["regression", "binary", "multiclass"])
def test_check_labels_accepts_valid(name):
    obj = _objective(name)
    obj.check_labels(_labels(name, 50))
    obj.check_labels(_labels(name, 0))
    if name != "regression":
        obj.check_labels(_labels(name, 50).astype(np.int64))
        obj.check_labels(np.array([True, False]))


@pytest.mark.parametrize("name", ["regression", "binary", "multiclass"])
@pytest.mark.parametrize(
    "y, match",
    [
        (np.zeros((3, 2)), r"y must be a 1-D array of shape \(n_samples,\), got shape \(3, 2\)"),
        (np.array(["a", "b"]), r"y must hold numbers .*got dtype <U1"),
        (np.array([0.0, np.nan, 1.0, np.nan]),
         r"y must be finite, found 2 NaN or infinite value\(s\) \(first at index 1: nan\)"),
        (np.array([0.0, 1.0, np.inf]), r"y must be finite, found 1 NaN or infinite value\(s\) "
                                       r"\(first at index 2: inf\)"),
    ],
)
def test_check_labels_common_errors(name, y, match):
    with pytest.raises(ValueError, match=match):
        _objective(name).check_labels(y)


def test_check_labels_binary():
    obj = _objective("binary")
    with pytest.raises(ValueError, match=r"y must contain only the labels 0 and 1 for objective "
                                         r"'binary', found 2 other value\(s\): -1.0, 2.0"):
        obj.check_labels(np.array([0, 1, 2, -1, 2]))
    with pytest.raises(ValueError, match=r"found 7 other value\(s\): .*\(and 2 more\)"):
        obj.check_labels(np.arange(2, 9) + 0.5)


def test_check_labels_multiclass():
    obj = _objective("multiclass", num_class=3)
    obj.check_labels(np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match=r"y must contain integer class labels in \[0, num_class\) "
                                         r"= \[0, 3\) for objective 'multiclass', found 3 other "
                                         r"value\(s\): -1.0, 0.5, 3.0"):
        obj.check_labels(np.array([0.0, 3.0, 0.5, 1.0, -1.0]))
    with pytest.raises(ValueError, match=r"found 1 other value\(s\): 5.0"):
        obj.check_labels(np.array([0, 5, 2], dtype=np.int32))


def test_check_sample_weight():
    check_sample_weight(None, 3)
    check_sample_weight(np.array([0.0, 1.0, 2.5]), 3)
    with pytest.raises(ValueError,
                       match=r"weight must have one value per row: expected length 3, got 2"):
        check_sample_weight(np.ones(2), 3)
    with pytest.raises(ValueError, match=r"weight must be >= 0, found 1 negative value\(s\) "
                                         r"\(first at index 1: -1.0\)"):
        check_sample_weight(np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match=r"weight must be finite"):
        check_sample_weight(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match=r"weight must be a 1-D array"):
        check_sample_weight(np.ones((2, 2)))


# --------------------------------------------------------------------------------------------
# Init score (boost_from_average)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["regression", "binary", "multiclass"])
@pytest.mark.parametrize("weighted", [False, True])
def test_label_stats_merge_by_addition(name, weighted):
    obj = _objective(name)
    n = 1000
    y = _labels(name, n)
    w = RNG.random(n).astype(np.float32) if weighted else None
    full = obj.label_stats(y, w)
    cuts = np.sort(RNG.choice(np.arange(1, n), size=6, replace=False))
    parts = [obj.label_stats(yc, None if w is None else wc)
             for yc, wc in zip(np.split(y, cuts), np.split(w if w is not None else y, cuts))]
    assert full.dtype == np.float64 and full.ndim == 1
    np.testing.assert_allclose(sum(parts), full, rtol=1e-12)
    # An empty chunk is the neutral element.
    np.testing.assert_array_equal(obj.label_stats(y[:0], None if w is None else w[:0]),
                                  np.zeros_like(full))


def test_init_score_formulas():
    y = np.array([1.0, 2.0, 4.0, 8.0])
    w = np.array([1.0, 1.0, 2.0, 0.0])
    reg = _objective("regression")
    np.testing.assert_allclose(reg.init_score(y), [3.75])
    np.testing.assert_allclose(reg.init_score(y, w), [(1 + 2 + 8) / 4])

    yb = np.array([1.0, 0.0, 0.0, 1.0, 1.0])
    wb = np.array([1.0, 2.0, 3.0, 0.5, 0.5])
    binary = _objective("binary")
    np.testing.assert_allclose(binary.init_score(yb), [np.log(0.6 / 0.4)])
    np.testing.assert_allclose(binary.init_score(yb, wb), [np.log(2 / 5)])
    # One class only: p clamped to [1e-15, 1 - 1e-15] as LightGBM.
    np.testing.assert_allclose(binary.init_score(np.zeros(4)), [np.log(1e-15 / (1 - 1e-15))])
    np.testing.assert_allclose(binary.init_score(np.ones(4)), [np.log((1 - 1e-15) / 1e-15)],
                               rtol=1e-3)

    ym = np.array([0.0, 1.0, 1.0, 1.0])
    multi = _objective("multiclass", num_class=3)
    np.testing.assert_allclose(multi.init_score(ym), np.log([0.25, 0.75, 1e-15]))
    np.testing.assert_allclose(multi.init_score(ym, np.array([3.0, 1.0, 1.0, 1.0])),
                               np.log([0.5, 0.5, 1e-15]))


def test_init_score_zero_rules():
    # A near-zero init score is 0 (GBDT::BoostFromAverage skips |s| <= kEpsilon).
    np.testing.assert_array_equal(_objective("binary").init_score(np.array([0.0, 1.0])), [0.0])
    np.testing.assert_array_equal(_objective("regression").init_score(np.array([-1.0, 1.0])), [0.0])
    # boost_from_average=False -> zeros.
    for name in ["regression", "binary", "multiclass"]:
        obj = _objective(name, boost_from_average=False)
        out = obj.init_score(_labels(name, 20))
        np.testing.assert_array_equal(out, np.zeros(obj.num_tree_per_iteration))
        assert out.dtype == np.float64


@pytest.mark.parametrize("name", ["regression", "binary", "multiclass"])
def test_init_score_needs_weight(name):
    obj = _objective(name)
    with pytest.raises(ValueError, match=r"total sample weight must be > 0, got 0.0"):
        obj.init_score(_labels(name, 0))
    with pytest.raises(ValueError, match=r"total sample weight must be > 0"):
        obj.init_score(_labels(name, 3), np.zeros(3))


def test_need_train_from_stats():
    binary = _objective("binary")
    assert binary.need_train_from_stats(binary.label_stats(np.array([0.0, 1.0]))).tolist() == [True]
    assert binary.need_train_from_stats(binary.label_stats(np.zeros(3))).tolist() == [False]
    multi = _objective("multiclass", num_class=3)
    stats = multi.label_stats(np.array([0.0, 0.0, 1.0]))
    assert multi.need_train_from_stats(stats).tolist() == [True, True, False]
    assert _objective("regression").need_train_from_stats(np.array([1.0, 1.0])).tolist() == [True]


def _lightgbm_constant_raw_score(name, y, w, num_class=3):
    """Raw score of a LightGBM model whose single iteration cannot split: the init score."""
    lgb = pytest.importorskip("lightgbm")
    X = RNG.normal(size=(len(y), 2))
    params = {"objective": name, "min_data_in_leaf": len(y), "verbose": -1, "num_threads": 1}
    if name == "multiclass":
        params["num_class"] = num_class
    booster = lgb.train(params, lgb.Dataset(X, y, weight=w), num_boost_round=1)
    return booster.predict(X[:1], raw_score=True).reshape(-1)


@pytest.mark.parametrize("name", ["regression", "binary", "multiclass"])
@pytest.mark.parametrize("weighted", [False, True])
def test_init_score_matches_lightgbm(name, weighted):
    n = 300
    y = _labels(name, n)
    if name == "multiclass":
        y[y == 2] = 0  # an absent class exercises the kEpsilon floor
    w = (RNG.random(n) + 0.5).astype(np.float32) if weighted else None
    expected = _lightgbm_constant_raw_score(name, y, w)
    ours = _objective(name).init_score(y, w)
    np.testing.assert_allclose(ours, expected, rtol=1e-7, atol=1e-9)


# --------------------------------------------------------------------------------------------
# Gradients
# --------------------------------------------------------------------------------------------

NAIVE = {"regression": gradients_l2_naive, "binary": gradients_binary_naive,
         "multiclass": gradients_multiclass_naive}


@pytest.mark.parametrize("name", ["regression", "binary", "multiclass"])
@pytest.mark.parametrize("weighted", [False, True])
def test_gradients_match_naive(name, weighted):
    obj = _objective(name)
    n, k = 200, obj.num_tree_per_iteration
    y = _labels(name, n)
    w = RNG.random(n).astype(np.float32) if weighted else None
    raw = RNG.normal(size=(n, k))
    g = np.empty((n, k), np.float32)
    h = np.empty((n, k), np.float32)
    obj.gradients(y, raw, w, g, h)
    g0, h0 = np.empty_like(g), np.empty_like(h)
    if k == 1:
        NAIVE[name](y, raw[:, 0], w, g0[:, 0], h0[:, 0])
    else:
        NAIVE[name](y, raw, w, g0, h0)
    np.testing.assert_allclose(g, g0, rtol=2e-7, atol=1e-7)
    np.testing.assert_allclose(h, h0, rtol=2e-7, atol=1e-7)


def test_gradients_accepts_1d_and_non_float_inputs():
    obj = _objective("binary")
    y = np.array([0, 1, 1])  # int labels are cast
    raw = np.array([0.0, 1.0, -1.0])
    g1, h1 = np.empty(3, np.float32), np.empty(3, np.float32)
    obj.gradients(y, raw, np.array([1, 2, 1]), g1, h1)
    g2, h2 = np.empty((3, 1), np.float32), np.empty((3, 1), np.float32)
    obj.gradients(y.astype(np.float64), raw[:, None], np.array([1.0, 2.0, 1.0]), g2, h2)
    np.testing.assert_array_equal(g1, g2[:, 0])
    np.testing.assert_array_equal(h1, h2[:, 0])
    # Non-contiguous raw scores are copied, not rejected.
    multi = _objective("multiclass", num_class=3)
    raw3 = np.asfortranarray(RNG.normal(size=(3, 3)))
    g3, h3 = np.empty((3, 3), np.float32), np.empty((3, 3), np.float32)
    multi.gradients(np.array([0.0, 1.0, 2.0]), raw3, None, g3, h3)
    np.testing.assert_allclose(g3.sum(axis=1), 0.0, atol=1e-6)


def test_gradients_validate_buffers():
    obj = _objective("multiclass", num_class=3)
    y = np.array([0.0, 1.0])
    raw = np.zeros((2, 3))
    good = np.empty((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"raw_score must have shape \(2, 3\), got \(2, 2\)"):
        obj.gradients(y, np.zeros((2, 2)), None, good, good.copy())
    with pytest.raises(ValueError, match=r"grad_out must be a float32 ndarray, got float64"):
        obj.gradients(y, raw, None, np.empty((2, 3)), good)
    with pytest.raises(ValueError, match=r"hess_out must have shape \(2, 3\), got \(3, 2\)"):
        obj.gradients(y, raw, None, good, np.empty((3, 2), np.float32))
    with pytest.raises(ValueError, match=r"grad_out must be C-contiguous"):
        obj.gradients(y, raw, None, np.empty((3, 2), np.float32).T, good)
    with pytest.raises(ValueError, match=r"weight must have shape \(2,\), got \(3,\)"):
        obj.gradients(y, raw, np.ones(3), good, good.copy())
    with pytest.raises(ValueError, match=r"grad_out must have shape \(2, 1\), got \(2, 3\)"):
        _objective("regression").gradients(y, np.zeros((2, 1)), None, good, good.copy())


def _tree_leaf_values(tree):
    values = {}

    def walk(node):
        if "leaf_index" in node:
            values[node["leaf_index"]] = node["leaf_value"]
        else:
            walk(node["left_child"])
            walk(node["right_child"])

    walk(tree["tree_structure"])
    return values


@pytest.mark.parametrize("name", ["regression", "binary", "multiclass"])
@pytest.mark.parametrize("weighted", [False, True])
def test_gradients_match_lightgbm_leaf_values(name, weighted):
    """A LightGBM leaf value is -sum(g) / sum(h) over its rows: recompute it from our gradients.

    With boost_from_average=False the first iteration starts at raw score 0; learning_rate=1 and
    no regularization leave the leaf values unscaled. This pins the formulas, including the
    multiclass hessian factor K / (K - 1).
    """
    lgb = pytest.importorskip("lightgbm")
    n = 400
    X = RNG.normal(size=(n, 3))
    y = _labels(name, n)
    w = (RNG.random(n) + 0.5).astype(np.float32) if weighted else None
    params = {"objective": name, "num_leaves": 4, "learning_rate": 1.0, "min_data_in_leaf": 5,
              "min_sum_hessian_in_leaf": 0.0, "boost_from_average": False, "verbose": -1,
              "num_threads": 1}
    if name == "multiclass":
        params["num_class"] = 3
    booster = lgb.train(params, lgb.Dataset(X, y, weight=w), num_boost_round=1)
    obj = get_objective({k: v for k, v in params.items() if k != "num_threads"})
    k = obj.num_tree_per_iteration
    g = np.empty((n, k), np.float32)
    h = np.empty((n, k), np.float32)
    obj.gradients(y, np.zeros((n, k)), w, g, h)
    leaves = booster.predict(X, pred_leaf=True).reshape(n, k)
    for c, tree in enumerate(booster.dump_model()["tree_info"]):
        values = _tree_leaf_values(tree)
        assert len(values) >= 2
        for leaf, value in values.items():
            rows = leaves[:, c] == leaf
            sum_g = g[rows, c].astype(np.float64).sum()
            sum_h = h[rows, c].astype(np.float64).sum()
            np.testing.assert_allclose(value, -sum_g / sum_h, rtol=1e-9, atol=1e-12)


# --------------------------------------------------------------------------------------------
# transform
# --------------------------------------------------------------------------------------------


def test_transform():
    raw = RNG.normal(size=(10, 1)) * 5
    out = _objective("regression").transform(raw)
    assert out.shape == (10,)
    np.testing.assert_array_equal(out, raw[:, 0])
    np.testing.assert_array_equal(_objective("regression").transform(raw[:, 0]), raw[:, 0])

    p = _objective("binary").transform(raw)
    assert p.shape == (10,)
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-raw[:, 0])))
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        np.testing.assert_array_equal(_objective("binary").transform(np.array([-1e4, 1e4])),
                                      [0.0, 1.0])

    raw3 = RNG.normal(size=(10, 3)) * 5
    p3 = _objective("multiclass").transform(raw3)
    assert p3.shape == (10, 3)
    np.testing.assert_allclose(p3.sum(axis=1), 1.0)
    np.testing.assert_allclose(p3, np.exp(raw3) / np.exp(raw3).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(_objective("multiclass").transform(np.array([[1e4, 0.0, -1e4]])),
                               [[1.0, 0.0, 0.0]])

    with pytest.raises(ValueError, match=r"raw_score must have shape \(n_samples, 3\)"):
        _objective("multiclass").transform(raw)
    with pytest.raises(ValueError,
                       match=r"raw_score must have shape \(n_samples,\) or \(n_samples, 1\)"):
        _objective("binary").transform(raw3)


@pytest.mark.parametrize("name", ["binary", "multiclass"])
def test_transform_matches_lightgbm(name):
    lgb = pytest.importorskip("lightgbm")
    n = 200
    X = RNG.normal(size=(n, 3))
    y = _labels(name, n)
    params = {"objective": name, "num_leaves": 4, "verbose": -1, "num_threads": 1}
    if name == "multiclass":
        params["num_class"] = 3
    booster = lgb.train(params, lgb.Dataset(X, y), num_boost_round=3)
    objective = get_objective({k: v for k, v in params.items() if k != "num_threads"})
    ours = objective.transform(booster.predict(X, raw_score=True))
    np.testing.assert_allclose(ours, booster.predict(X), rtol=1e-12, atol=1e-15)
