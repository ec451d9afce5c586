"""LightGBM's training callbacks. Oracles: LightGBM's own callbacks driven with the same
evaluation lists, and LightGBM's ``train`` with the same callbacks on the same data (the same
trees, so the same stopping round and the same model)."""
import numpy as np
import pytest

import oocgbdt
from oocgbdt.core import callback as cb
from tests.conftest import load_lightgbm_tsv

lgb = pytest.importorskip("lightgbm")

PARAMS = dict(objective="binary", num_leaves=15, learning_rate=0.3, max_bin=255,
              metric=["binary_logloss", "auc"])


def _lightgbm_params():
    return dict(PARAMS, enable_bundle=False, deterministic=True, num_threads=1, verbose=-1)


def _drive(make, results, begin=0):
    """Feed a callback one evaluation list per round; the (stop round, best iteration, best
    score) of its EarlyStopException, or None."""
    end = begin + len(results)
    callback = make()
    for i, res in enumerate(results, start=begin):
        env_cls = cb.CallbackEnv if make.__module__.startswith("oocgbdt") else \
            lgb.callback.CallbackEnv
        env = env_cls(model=None, params={}, iteration=i, begin_iteration=begin,
                      end_iteration=end, evaluation_result_list=res)
        try:
            callback(env)
        except (cb.EarlyStopException, lgb.callback.EarlyStopException) as e:
            return i, e.best_iteration, [tuple(x)[:4] for x in e.best_score]
    return None


@pytest.mark.parametrize("kwargs", [dict(stopping_rounds=3), dict(stopping_rounds=4),
                                    dict(stopping_rounds=3, first_metric_only=True),
                                    dict(stopping_rounds=2, min_delta=0.05),
                                    dict(stopping_rounds=2, min_delta=[0.05, 0.0])])
def test_early_stopping_stops_where_lightgbms_callback_does(kwargs):
    rng = np.random.default_rng(1)
    for _ in range(40):
        n = int(rng.integers(3, 15))
        loss = np.cumsum(rng.normal(-0.02, 0.05, size=(n, 2)), axis=0)
        auc = np.cumsum(rng.normal(0.01, 0.03, size=(n, 2)), axis=0)
        rows = [[("valid_0", "binary_logloss", loss[i, 0], False),
                 ("valid_0", "auc", auc[i, 0], True),
                 ("valid_1", "binary_logloss", loss[i, 1], False),
                 ("valid_1", "auc", auc[i, 1], True)] for i in range(n)]
        ours = _drive(lambda: oocgbdt.early_stopping(verbose=False, **kwargs),
                      [[cb.EvalResult(*r) for r in res] for res in rows])
        theirs = _drive(lambda: lgb.early_stopping(verbose=False, **kwargs),
                        [[lgb.callback.EvalResult(*r) for r in res] for res in rows])
        assert ours == theirs


def test_record_evaluation_and_a_callable_see_every_round_in_order():
    X, y = load_lightgbm_tsv_small()
    record, seen = {}, []
    booster = oocgbdt.train(dict(PARAMS, n_estimators=6), X[:3000], y[:3000],
                            eval_set=[(X[3000:], y[3000:])],
                            callbacks=[oocgbdt.record_evaluation(record),
                                       lambda env: seen.append((env.iteration,
                                                                env.end_iteration))])
    assert record == booster.evals_result
    assert seen == [(i, 6) for i in range(6)]


def load_lightgbm_tsv_small():
    from tests.conftest import _shared_data_path
    path = _shared_data_path() / "lightgbm_binary"
    if not path.exists():
        pytest.skip(f"real data not found at {path} (set OOCGBDT_DATA to its folder)")
    X, y = load_lightgbm_tsv(path / "binary.train")
    return X, y


def _cluster_train(params, X, y, eval_set, callbacks, n_workers):
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        return oocgbdt.train(params, X, y, eval_set=eval_set, callbacks=callbacks, client=client)


@pytest.mark.parametrize("where", ["in process", "one worker", "two workers"])
def test_early_stopping_callback_gives_lightgbms_model(where):
    """The callback stops where LightGBM's does, with LightGBM's trees and best iteration; on
    workers the callbacks run in this process and the rounds trained after the stop are
    dropped, so the model is the in-process one."""
    X, y = load_lightgbm_tsv_small()
    Xt, yt = X[5000:], y[5000:]
    X, y = X[:5000], y[:5000]
    n = 60
    theirs = lgb.train(dict(_lightgbm_params(), num_iterations=n), lgb.Dataset(X, y),
                       valid_sets=[lgb.Dataset(Xt, yt)],
                       callbacks=[lgb.early_stopping(5, verbose=False)])
    params = dict(PARAMS, n_estimators=n, chunk_rows=1000)
    calls = []
    callbacks = [oocgbdt.early_stopping(5, verbose=False), lambda env: calls.append(env.iteration)]
    if where == "in process":
        ours = oocgbdt.train(params, X, y, eval_set=[(Xt, yt)], callbacks=callbacks)
    else:
        ours = _cluster_train(params, X, y, [(Xt, yt)], callbacks, 1 if where == "one worker" else 2)
    assert theirs.best_iteration < n  # it did stop early
    assert ours.best_iteration == theirs.best_iteration
    # Training ends after the round that stopped, 5 rounds past the best (LightGBM's train
    # then keeps the best rounds only; oocgbdt keeps every tree, as its own early stopping).
    assert ours.num_iterations() == ours.best_iteration + 5
    assert calls == list(range(ours.num_iterations()))
    np.testing.assert_allclose(ours.predict(Xt, raw_score=True),
                               theirs.predict(Xt, raw_score=True), rtol=0, atol=1e-9)
    assert len(ours.evals_result["valid_0"]["auc"]) == ours.num_iterations()


def test_reset_parameter_learning_rates_give_lightgbms_trees():
    X, y = load_lightgbm_tsv_small()
    X, y = X[:4000], y[:4000]
    rates = [0.3 * 0.8 ** i for i in range(8)]
    theirs = lgb.train(dict(_lightgbm_params(), num_iterations=8), lgb.Dataset(X, y),
                       callbacks=[lgb.reset_parameter(learning_rate=rates)])
    ours = oocgbdt.train(dict(PARAMS, n_estimators=8), X, y,
                         callbacks=[oocgbdt.reset_parameter(learning_rate=lambda i: rates[i])])
    assert [t.shrinkage for t in ours.trees] == rates
    np.testing.assert_allclose(ours.predict(X, raw_score=True), theirs.predict(X, raw_score=True),
                               rtol=0, atol=1e-9)


def test_bad_callbacks_fail_before_training():
    X = np.zeros((50, 2), dtype=np.float32)
    y = np.arange(50) % 2
    with pytest.raises(TypeError, match=r"callbacks\[0\] must be callable"):
        oocgbdt.train(PARAMS, X, y, callbacks=[3])
    with pytest.raises(ValueError, match="learning_rate only"):
        oocgbdt.train(PARAMS, X, y, callbacks=[oocgbdt.reset_parameter(num_leaves=[3] * 100)])
    with pytest.raises(ValueError, match="one per round"):
        oocgbdt.train(dict(PARAMS, n_estimators=3), X, y,
                      callbacks=[oocgbdt.reset_parameter(learning_rate=[0.1])])
    with pytest.raises(ValueError, match="at least one eval set"):
        oocgbdt.train(dict(PARAMS, n_estimators=3), X, y, callbacks=[oocgbdt.early_stopping(2)])


def test_estimators_take_callbacks():
    X, y = load_lightgbm_tsv_small()
    record = {}
    est = oocgbdt.GBDTClassifier(n_estimators=4).fit(
        X[:3000], y[:3000], eval_set=[(X[3000:4000], y[3000:4000])],
        callbacks=[oocgbdt.record_evaluation(record)])
    assert record == est.evals_result_


def test_rounds_seen_by_callbacks_after_an_init_model_are_lightgbms():
    """Continuing a model, callbacks see the rounds numbered after the model's, from
    begin_iteration to end_iteration, as LightGBM's train with init_model shows them."""
    X, y = load_lightgbm_tsv_small()
    X, y = X[:3000], y[:3000]
    first = oocgbdt.train(dict(PARAMS, n_estimators=3), X, y)
    ours, theirs = [], []
    oocgbdt.train(dict(PARAMS, n_estimators=4), X, y, init_model=first,
                  callbacks=[lambda env: ours.append((env.iteration, env.begin_iteration,
                                                      env.end_iteration))])
    start = lgb.train(dict(_lightgbm_params(), num_iterations=3), lgb.Dataset(X, y))
    lgb.train(dict(_lightgbm_params(), num_iterations=4), lgb.Dataset(X, y), init_model=start,
              callbacks=[lambda env: theirs.append((env.iteration, env.begin_iteration,
                                                    env.end_iteration))])
    assert ours == theirs == [(i, 3, 7) for i in range(3, 7)]
