"""Callable objectives and eval metrics (LightGBM's scikit-learn signatures): the same model as
the built-in loss they implement, LightGBM's values, on 1 and 2 workers, and clear errors."""
import warnings

import dask.array as da
import numpy as np
import pytest

import oocgbdt
from oocgbdt import GBDTClassifier, GBDTRegressor

lgb = pytest.importorskip("lightgbm")

RNG = np.random.default_rng(0)
X = RNG.normal(size=(1200, 5))
Y = X[:, 0] * 2 + RNG.normal(size=1200)
W = RNG.random(1200) + 0.5


def l2_weighted(y_true, raw_score, weight):
    # As LightGBM's L2: the difference rounded to float32, times the float32 weight.
    return ((raw_score - y_true).astype(np.float32) * np.asarray(weight).astype(np.float32),
            weight)


def l2(y_true, raw_score):
    return raw_score - y_true, np.ones_like(raw_score)


def mean_abs(y_true, y_pred, weight):
    return "mean_abs", float(np.average(np.abs(y_true - y_pred), weights=weight)), False


def test_callable_l2_gives_the_builtin_model():
    """The callable computes L2's weighted gradients as the built-in kernel does (a float32
    product): the same trees, init score aside (a callable objective starts at 0, as
    in LightGBM, so boost_from_average=False on the built-in side)."""
    params = dict(n_estimators=8, num_leaves=15, chunk_rows=400)
    ours = oocgbdt.train(dict(params, objective=l2_weighted), X, Y, sample_weight=W,
                         verbose=False)
    ref = oocgbdt.train(dict(params, objective="regression", boost_from_average=False), X, Y,
                        sample_weight=W, verbose=False)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))


def test_callable_objective_and_metric_match_lgbm():
    ours = GBDTRegressor(objective=l2_weighted, n_estimators=8, metric=[mean_abs, "l1"]).fit(
        X, Y, sample_weight=W, eval_set=[(X[:300], Y[:300])], eval_sample_weight=[W[:300]])
    theirs = lgb.LGBMRegressor(objective=l2_weighted, n_estimators=8, verbose=-1).fit(
        X, Y, sample_weight=W, eval_set=[(X[:300], Y[:300])], eval_sample_weight=[W[:300]],
        eval_metric=[mean_abs, "l1"])
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=1e-12)
    for name in ("mean_abs", "l1"):
        np.testing.assert_allclose(ours.evals_result_["valid_0"][name],
                                   theirs.evals_result_["valid_0"][name], rtol=1e-12)


def test_multiclass_callable_objective_matches_lgbm():
    y = np.digitize(X[:, 1], [-0.5, 0.5])

    def softmax(y_true, raw):
        e = np.exp(raw - raw.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        return p - np.eye(3)[y_true.astype(int)], 1.5 * p * (1 - p)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # raw scores instead of probabilities, as LightGBM says
        ours = GBDTClassifier(objective=softmax, n_estimators=5).fit(X, y)
        theirs = lgb.LGBMClassifier(objective=softmax, n_estimators=5, verbose=-1).fit(X, y)
        # Measured: up to 2e-8 apart on 0.6% of the raw scores (a float32 rounding of some
        # multiclass gradients differs from LightGBM's); one different split would move raw
        # scores by more than 1e-3.
        np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=0,
                                   atol=1e-6)


def test_callable_objective_on_two_workers_equals_in_process():
    from distributed import Client, LocalCluster

    params = dict(objective=l2, n_estimators=5, num_leaves=7, chunk_rows=300,
                  partition_rows=300, metric=[lambda y, p: ("max_err", float(np.max(np.abs(y - p))), False)])
    ref = oocgbdt.train(params, X, Y, eval_set=[(X, Y)], verbose=False)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        ours = oocgbdt.train(params, da.from_array(X, chunks=(300, -1)),
                             da.from_array(Y, chunks=300), eval_set=[(X, Y)], client=client,
                             verbose=False)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))
    assert ours.evals_result["valid_0"]["max_err"] == ref.evals_result["valid_0"]["max_err"]


@pytest.mark.parametrize("fobj, match", [
    (lambda y, s: (s[:3], s[:3]), r"returned grad of shape \(3,\); expected \(1200,\)"),
    (lambda y, s: (np.full_like(s, np.nan), np.ones_like(s)), r"1200 NaN or infinite grad"),
    (lambda y, s: s, r"must return \(grad, hess\)"),
    (lambda a, b, c, d, e: (a, b), r"takes 5 arguments"),
])
def test_callable_objective_errors(fobj, match):
    with pytest.raises(ValueError, match=match):
        oocgbdt.train({"objective": fobj, "n_estimators": 2}, X, Y, verbose=False)


def test_callable_metric_errors_and_custom_name():
    with pytest.raises(ValueError, match=r"must return \(name, value, is_higher_better\)"):
        oocgbdt.train({"n_estimators": 2, "metric": [lambda y, p: 1.0]}, X, Y,
                      eval_set=[(X, Y)], verbose=False)
    with pytest.raises(ValueError, match=r"needs the callable itself"):
        oocgbdt.train({"objective": "custom", "n_estimators": 2}, X, Y, verbose=False)
