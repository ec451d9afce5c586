"""End-to-end training on a Dask cluster: parity with LightGBM, determinism, laziness."""
import dask.array as da
import numpy as np
import pytest
from sklearn.metrics import mean_squared_error, roc_auc_score

import oocgbdt
from oocgbdt.io.dataset import open_dataset, write_dataset
from tests.conftest import load_lightgbm_tsv, load_pmlb, train_test_split_rows

lgb = pytest.importorskip("lightgbm")

PARAMS = dict(num_leaves=31, learning_rate=0.1, n_estimators=100, max_bin=255)


def _lightgbm(objective, X, y, **extra):
    model = lgb.train(dict(objective=objective, enable_bundle=False, verbose=-1, num_threads=2,
                           deterministic=True, **{k: v for k, v in PARAMS.items() if k != "n_estimators"},
                           **extra),
                      lgb.Dataset(X, y), num_boost_round=PARAMS["n_estimators"])
    return model


def _to_zarr(tmp_path, name, X, y, n_chunks=8):
    rows = -(-len(y) // n_chunks)  # chunks of at most 1/8 of the rows
    return open_dataset(write_dataset(tmp_path / name, X, y, chunk_rows=rows).path)


def _assert_predictions_equal(ours, theirs):
    """The same 100 trees as LightGBM: oocgbdt adds the same float64 gradients in another
    order than LightGBM's threads, so each leaf value differs by a few ulps at most, and a
    prediction (100 leaves added) by under 1e-15 of the largest one (measured: 2e-16 for
    probabilities, 4e-16 of 5e5 for regression). 1e-12 of that scale leaves a wide margin;
    one different split moves predictions by far more."""
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12 * np.abs(theirs).max())


def test_binary_matches_lightgbm_on_higgs_subset(shared_data, tmp_path, client):
    """lightgbm_binary from Zarr (8 storage chunks): the test set's probabilities equal
    LightGBM's with identical parameters, up to summation order."""
    X, y = load_lightgbm_tsv(shared_data / "lightgbm_binary" / "binary.train")
    Xt, yt = load_lightgbm_tsv(shared_data / "lightgbm_binary" / "binary.test")
    ds = _to_zarr(tmp_path, "train", X, y)
    assert len(ds.X.chunks[0]) >= 8
    booster = oocgbdt.train(dict(objective="binary", **PARAMS), ds.X, ds.y, client=client,
                            verbose=False)
    ours, theirs = booster.predict(Xt), _lightgbm("binary", X, y).predict(Xt)
    _assert_predictions_equal(ours, theirs)
    assert roc_auc_score(yt, ours) > 0.75  # a model that learned (the trees are LightGBM's)


def test_regression_matches_lightgbm_on_california_housing(shared_data, tmp_path, client):
    """california_housing from Zarr: the held-out rows' predictions equal LightGBM's with
    identical parameters, up to summation order."""
    X, y = load_pmlb(shared_data / "california_housing" / "537_houses.tsv.gz")
    X, y, Xt, yt = train_test_split_rows(X, y)
    ds = _to_zarr(tmp_path, "train", X, y)
    booster = oocgbdt.train(dict(objective="regression", **PARAMS), ds.X, ds.y, client=client,
                            verbose=False)
    ours, theirs = booster.predict(Xt), _lightgbm("regression", X, y).predict(Xt)
    _assert_predictions_equal(ours, theirs)
    assert mean_squared_error(yt, ours) < 0.5 * np.var(yt)  # a model that learned


def _synthetic(n=3000, f=6, seed=0, nan_share=0.05):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f)).astype(np.float32)
    X[rng.random(X.shape) < nan_share] = np.nan
    logit = np.nan_to_num(X[:, 0]) - 2 * np.nan_to_num(X[:, 1]) ** 2 + np.isnan(X[:, 2])
    y = (logit + rng.logistic(size=n) > 0).astype(np.float64)
    return X, y


def test_bit_identical_for_1_and_2_workers_and_numpy_vs_zarr(tmp_path):
    """Same data, chunking and seed: the same model on 1 worker, 2 workers and in-process."""
    from distributed import Client, LocalCluster
    X, y = _synthetic()
    ds = open_dataset(write_dataset(tmp_path / "d", X, y, chunk_rows=500).path)
    params = dict(objective="binary", num_leaves=15, n_estimators=8, chunk_rows=500,
                  partition_rows=1000)  # 3 partitions of 2 chunks, spread over the workers
    models = []
    for n_workers in (1, 2):
        with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=False,
                          dashboard_address=":0") as cl, Client(cl) as c:
            models.append(oocgbdt.train(params, ds.X, ds.y, client=c, verbose=False))
    models.append(oocgbdt.train(params, X, y, verbose=False))  # NumPy, in-process
    p = [m.predict(X, raw_score=True) for m in models]
    assert models[0] == models[1] == models[2]
    np.testing.assert_array_equal(p[0], p[1])
    np.testing.assert_array_equal(p[0], p[2])


def test_predict_is_lazy_for_dask_and_zarr_input(tmp_path):
    X, y = _synthetic(n=1000)
    booster = oocgbdt.train(dict(objective="binary", n_estimators=5), X, y, verbose=False)
    ds = open_dataset(write_dataset(tmp_path / "d", X, y, chunk_rows=300).path)
    for inp in (ds.X, da.from_array(X, chunks=(250, 6)), str(tmp_path / "d")):
        out = booster.predict(inp)
        assert isinstance(out, da.Array)
        np.testing.assert_array_equal(out.compute(scheduler="sync"), booster.predict(X))


@pytest.mark.parametrize("num_class", [1, 3])
def test_predict_on_zero_rows_is_empty_for_numpy_and_dask(num_class):
    """An empty Dask array raised "X has 0 rows" (a training check) where NumPy gives an empty
    result."""
    X, y = _synthetic(n=600)
    params = dict(objective="binary", n_estimators=2) if num_class == 1 else dict(
        objective="multiclass", num_class=3, n_estimators=2)
    labels = y if num_class == 1 else np.arange(600) % 3.0
    booster = oocgbdt.train(params, X, labels, verbose=False)
    shape = (0,) if num_class == 1 else (0, 3)
    assert booster.predict(X[:0]).shape == shape
    lazy = booster.predict(da.from_array(X[:0], chunks=(100, -1)))
    assert isinstance(lazy, da.Array) and lazy.shape == shape
    assert lazy.compute(scheduler="sync").shape == shape


def test_multiclass_and_early_stopping():
    """In-process (NumPy input): the boosting loop is the same code on every executor."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(4000, 5)).astype(np.float32)
    noisy = X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.3, size=4000)
    y = np.digitize(noisy, [-0.7, 0.0, 0.7]).astype(np.float64)
    X, Xv, y, yv = X[:3000], X[3000:], y[:3000], y[3000:]
    booster = oocgbdt.train(dict(objective="multiclass", num_class=4, n_estimators=300,
                                 early_stopping_rounds=5, metric=["multi_logloss", "multi_error"],
                                 first_metric_only=True, chunk_rows=400),
                            X, y, eval_set=[(Xv, yv)], verbose=False)
    hist = booster.evals_result["valid_0"]["multi_logloss"]
    assert booster.best_iteration is not None and booster.best_iteration < 300
    assert booster.best_iteration == int(np.argmin(hist)) + 1
    assert len(hist) == booster.best_iteration + 5
    assert len(booster.evals_result["valid_0"]["multi_error"]) == len(hist)
    proba = booster.predict(X)
    assert proba.shape == (3000, 4)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    assert (proba.argmax(axis=1) == y).mean() > 0.85


def test_dataframe_with_nullable_dtypes_trains_and_predicts_as_its_float_values():
    """pd.NA of nullable columns is NaN (np.asarray made an object array no cast accepts)."""
    import pandas as pd
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    X[rng.random(size=X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) + 0.1 * rng.normal(size=400)
    df = pd.DataFrame({"a": pd.array(X[:, 0], dtype="Float64"),
                       "b": pd.array(np.where(np.isnan(X[:, 1]), None, np.round(X[:, 1] * 10)),
                                     dtype="Int64"),
                       "c": X[:, 2]})
    values = df.to_numpy(dtype=np.float64, na_value=np.nan)
    assert np.isnan(values).any()
    params = dict(objective="regression", n_estimators=5, num_leaves=7, min_data_in_leaf=10)
    from_frame = oocgbdt.train(params, df, y, verbose=False)
    from_values = oocgbdt.train(params, values, y, verbose=False)
    assert from_frame == from_values
    np.testing.assert_array_equal(from_frame.predict(df), from_values.predict(values))
