"""``init_score`` and ``eval_init_score``: LightGBM's trees and predictions given the same
starting scores (LightGBM trained on ``Dataset(init_score=...)`` is the oracle), for NumPy,
pandas and Dask inputs, in process and on two workers; wrong shapes fail before training."""
import dask.array as da
import numpy as np
import pandas as pd
import pytest

import oocgbdt
from oocgbdt import GBDTClassifier, GBDTRanker, GBDTRegressor
from tests.core.test_split_counts import _assert_same_trees

lgb = pytest.importorskip("lightgbm")

N, ROUNDS = 1200, 4
LGB = dict(num_leaves=8, verbose=-1, enable_bundle=False, deterministic=True, num_threads=1)


def _data(objective, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, 5)).astype(np.float32)
    signal = X[:, 0] + 0.5 * rng.normal(size=N)
    k = 3 if objective == "multiclass" else 1
    if objective == "binary":
        y = (signal > 0).astype(float)
    elif objective == "multiclass":
        y = np.digitize(signal, [-0.5, 0.5]).astype(float)
    else:
        y = signal
    init = rng.normal(size=(N, k)) if k > 1 else rng.normal(size=N)
    return X, y, init, k


def _lightgbm(objective, X, y, init, k, valid=None):
    params = dict(LGB, objective=objective, **({"num_class": k} if k > 1 else {}))
    return lgb.train(params, lgb.Dataset(X, y, init_score=init), num_boost_round=ROUNDS,
                     valid_sets=valid or [])


@pytest.mark.parametrize("objective", ["regression", "regression_l1", "binary", "multiclass"])
def test_init_score_gives_lightgbm_trees(objective):
    """LightGBM skips boost_from_average with an init score and its model leaves the scores
    out; so does oocgbdt (the L1 objective's renewed leaves read residuals from them)."""
    X, y, init, k = _data(objective)
    params = dict(objective=objective, num_leaves=8, n_estimators=ROUNDS, chunk_rows=400,
                  enable_bundle=False, verbose=False, **({"num_class": k} if k > 1 else {}))
    ours = oocgbdt.train(params, X, y, init_score=init)
    theirs = _lightgbm(objective, X, y, init, k)
    assert np.all(ours.init_score == 0)
    _assert_same_trees(ours, theirs, X, ROUNDS * k)
    np.testing.assert_allclose(ours.predict(X, raw_score=True),
                               theirs.predict(X, raw_score=True), rtol=0, atol=1e-12)


def test_eval_init_score_gives_lightgbm_metrics():
    X, y, init, k = _data("binary", seed=1)
    Xe, ye, ie = X[:300], y[:300], init[:300] + 1.0
    rec = {}
    theirs = lgb.train(dict(LGB, objective="binary", metric="binary_logloss"),
                       lgb.Dataset(X, y, init_score=init), num_boost_round=ROUNDS,
                       valid_sets=[lgb.Dataset(Xe, ye, init_score=ie)], valid_names=["v"],
                       callbacks=[lgb.record_evaluation(rec)])
    ours = oocgbdt.train(dict(objective="binary", num_leaves=8, n_estimators=ROUNDS,
                              enable_bundle=False, verbose=False),
                         X, y, init_score=init, eval_set=[(Xe, ye)], eval_names=["v"],
                         eval_init_score=[ie])
    np.testing.assert_allclose(ours.evals_result["v"]["binary_logloss"],
                               rec["v"]["binary_logloss"], rtol=1e-12)
    assert theirs.num_trees() == len(ours.trees)


def test_dask_pandas_and_flattened_scores_give_the_numpy_model():
    """A multiclass init score as (n, k) NumPy, pandas DataFrame, Dask array with other row
    chunks than X, and LightGBM's class-major (n * k,) vector: one model."""
    X, y, init, k = _data("multiclass", seed=2)
    params = dict(objective="multiclass", num_class=3, num_leaves=8, n_estimators=2,
                  chunk_rows=400, verbose=False)
    ref = oocgbdt.train(params, X, y, init_score=init)
    for given in (pd.DataFrame(init), init.ravel(order="F"),
                  da.from_array(init, chunks=(500, 1))):
        got = oocgbdt.train(params, X, y, init_score=given)
        assert got.trees == ref.trees
    Xd = da.from_array(X, chunks=(400, -1))
    yd = da.from_array(y, chunks=400)
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        on_two = oocgbdt.train(params, Xd, yd, client=client,
                               init_score=da.from_array(init.ravel(order="F"), chunks=700))
    assert on_two.trees == ref.trees


def test_one_output_scores_as_series_dask_series_and_zarr(tmp_path):
    import dask.dataframe as dd
    import zarr
    X, y, init, _ = _data("regression", seed=5)
    params = dict(num_leaves=8, n_estimators=2, chunk_rows=400, verbose=False)
    ref = oocgbdt.train(params, X, y, init_score=init)
    z = zarr.open(str(tmp_path / "init.zarr"), mode="w", shape=init.shape, chunks=(300,),
                  dtype="f8")
    z[:] = init
    for given in (pd.Series(init), dd.from_pandas(pd.Series(init), npartitions=3), z,
                  str(tmp_path / "init.zarr")):
        assert oocgbdt.train(params, X, y, init_score=given).trees == ref.trees


def test_estimators_take_init_score():
    X, y, init, _ = _data("regression", seed=3)
    ours = GBDTRegressor(n_estimators=ROUNDS, num_leaves=8, enable_bundle=False).fit(
        X, y, init_score=init)
    theirs = lgb.LGBMRegressor(n_estimators=ROUNDS, **LGB).fit(X, y, init_score=init)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=1e-12)
    yc = (y > 0).astype(int)
    ours = GBDTClassifier(n_estimators=ROUNDS, num_leaves=8, enable_bundle=False).fit(
        X, yc, init_score=init)
    theirs = lgb.LGBMClassifier(n_estimators=ROUNDS, **LGB).fit(X, yc, init_score=init)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=0,
                               atol=1e-12)
    group = np.full(N // 20, 20)
    rel = np.clip(np.round(y + 1), 0, 3).astype(int)
    ours = GBDTRanker(n_estimators=ROUNDS, num_leaves=8, enable_bundle=False).fit(
        X, rel, group=group, init_score=init)
    theirs = lgb.LGBMRanker(n_estimators=ROUNDS, **LGB).fit(X, rel, group=group,
                                                            init_score=init)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=1e-9)


def test_wrong_init_score_is_refused_before_training():
    X, y, init, _ = _data("regression", seed=4)
    with pytest.raises(ValueError, match="init_score must have shape"):
        oocgbdt.train(dict(n_estimators=2), X, y, init_score=init[:-1])
    with pytest.raises(ValueError, match=r"eval_init_score\[0\] must have shape"):
        oocgbdt.train(dict(n_estimators=2), X, y, eval_set=[(X[:10], y[:10])],
                      eval_init_score=[init])
    with pytest.raises(ValueError, match="eval_init_score has 2 entries"):
        oocgbdt.train(dict(n_estimators=2), X, y, eval_set=[(X[:10], y[:10])],
                      eval_init_score=[None, None])
    bad = init.copy()
    bad[[3, 5]] = [np.nan, np.inf]
    with pytest.raises(ValueError, match="init_score must be finite; found 2"):
        oocgbdt.train(dict(n_estimators=2), X, y, init_score=bad)
    first = oocgbdt.train(dict(n_estimators=2, verbose=False), X, y)
    with pytest.raises(ValueError, match="init_model"):
        oocgbdt.train(dict(n_estimators=2), X, y, init_score=init, init_model=first)
