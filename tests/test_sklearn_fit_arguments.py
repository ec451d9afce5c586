"""The estimators' ``eval_metric`` (LightGBM's ``LGBMModel.fit`` argument: names merged into
``metric``, callables with 2 to 4 arguments) against LightGBM's ``evals_result_`` and NumPy,
and ``early_stopping_min_delta`` against LightGBM's ``best_iteration``."""
import warnings

import numpy as np
import pytest

import oocgbdt
from oocgbdt import GBDTClassifier, GBDTRanker, GBDTRegressor

lgb = pytest.importorskip("lightgbm")

rng = np.random.default_rng(0)
X = rng.normal(size=(1200, 5)).astype(np.float32)
Y = X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=1200)


def _lgb_fit(model, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LightGBM 4.7 prefers eval_X/eval_y to eval_set
        return model.fit(*args, **kwargs)


def _same_evals(ours, theirs):
    assert list(ours) == list(theirs)  # the metrics, in LightGBM's order
    for m in theirs:
        np.testing.assert_allclose(ours[m], theirs[m], rtol=1e-10, err_msg=m)


def test_regressor_eval_metric_name_joins_the_default_metric():
    kw = dict(n_estimators=4, num_leaves=8)
    fit = dict(eval_set=[(X[:300], Y[:300])], eval_metric="l1")
    ours = GBDTRegressor(**kw).fit(X, Y, **fit)
    theirs = _lgb_fit(lgb.LGBMRegressor(verbose=-1, **kw), X, Y, **fit)
    _same_evals(ours.evals_result_["valid_0"], theirs.evals_result_["valid_0"])
    # with a metric set on the estimator: eval_metric's new names come first
    ours = GBDTRegressor(metric="huber", **kw).fit(X, Y, **dict(fit, eval_metric=["l2", "huber"]))
    theirs = _lgb_fit(lgb.LGBMRegressor(metric="huber", verbose=-1, **kw), X, Y,
                      **dict(fit, eval_metric=["l2", "huber"]))
    _same_evals(ours.evals_result_["valid_0"], theirs.evals_result_["valid_0"])


def test_classifier_renames_eval_metric_and_runs_callables():
    y = np.digitize(X[:, 1] + 0.3 * X[:, 0], [-0.5, 0.5])

    def accuracy(y_true, y_pred, weight):
        return "accuracy", float(np.mean(np.argmax(y_pred, axis=1) == y_true)), True

    kw = dict(n_estimators=3, num_leaves=8)
    fit = dict(eval_set=[(X[:400], y[:400])], eval_metric=["logloss", "error", accuracy])
    ours = GBDTClassifier(**kw).fit(X, y, **fit)
    theirs = _lgb_fit(lgb.LGBMClassifier(verbose=-1, **kw), X, y, **fit)
    _same_evals(ours.evals_result_["valid_0"], theirs.evals_result_["valid_0"])
    # the callable's last value is the model's accuracy, computed by NumPy here
    assert ours.evals_result_["valid_0"]["accuracy"][-1] == np.mean(
        ours.predict(X[:400]) == y[:400])


def test_ranker_callable_metric_receives_the_query_sizes():
    group = np.full(60, 20)
    rel = np.clip(np.round(Y + 1), 0, 3).astype(int)
    seen = []

    def best_first(y_true, y_pred, weight, group):
        seen.append(group.copy())
        starts = np.concatenate([[0], np.cumsum(group)[:-1]])
        top = [y_true[s + np.argmax(y_pred[s:s + g])] for s, g in zip(starts, group)]
        return "top_relevance", float(np.mean(top)), True

    ours = GBDTRanker(n_estimators=3, num_leaves=8).fit(
        X, rel, group=group, eval_set=[(X[:400], rel[:400])], eval_group=[group[:20]],
        eval_metric=best_first)
    np.testing.assert_array_equal(seen[-1], group[:20])
    pred = ours.predict(X[:400])
    expected = np.mean([rel[s:s + 20][np.argmax(pred[s:s + 20])] for s in range(0, 400, 20)])
    assert ours.evals_result_["valid_0"]["top_relevance"][-1] == expected
    assert "ndcg@1" in ours.evals_result_["valid_0"]  # the default metric stays


def test_bad_eval_metric_is_refused():
    with pytest.raises(TypeError, match="eval_metric"):
        GBDTRegressor(n_estimators=2).fit(X, Y, eval_set=[(X, Y)], eval_metric=[3])
    with pytest.raises(ValueError, match="arguments"):
        GBDTRegressor(n_estimators=2).fit(X, Y, eval_set=[(X, Y)],
                                          eval_metric=lambda a, b, c, d, e: ("x", 0.0, True))


@pytest.mark.parametrize("min_delta", [0.0, 0.002, 0.05])
def test_early_stopping_min_delta_gives_lightgbm_best_iteration(min_delta):
    p = dict(objective="regression", num_leaves=8, early_stopping_round=3,
             early_stopping_min_delta=min_delta, enable_bundle=False)
    theirs = lgb.train(dict(p, verbose=-1), lgb.Dataset(X[300:], Y[300:]), num_boost_round=60,
                       valid_sets=[lgb.Dataset(X[:300], Y[:300])])
    ours = oocgbdt.train(dict(p, n_estimators=60, verbose=False), X[300:], Y[300:],
                         eval_set=[(X[:300], Y[:300])])
    assert ours.best_iteration == theirs.best_iteration


def test_negative_early_stopping_min_delta_is_refused():
    with pytest.raises(ValueError, match="early_stopping_min_delta"):
        oocgbdt.train(dict(early_stopping_min_delta=-0.1), X, Y)
