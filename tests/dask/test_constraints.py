"""Leaf-output constraints end to end: with categorical features (LightGBM's trees on adult),
on two workers (the same model as in process, whether the shards replicate the search or share
it by feature blocks), and the checks ``train`` makes before any work."""
import dask.array as da
import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import oocgbdt
import oocgbdt.runtime.spmd as spmd
from tests.conftest import load_lightgbm_tsv
from tests.dask.test_categorical import ADULT_CATEGORICAL, _pair, adult, assert_lightgbm_trees  # noqa: F401
from tests.dask.test_lightgbm_parity import executors  # noqa: F401

lgb = pytest.importorskip("lightgbm")


def test_categorical_splits_with_smoothing_cap_and_bounds_equal_lightgbm(adult):
    """path_smooth and max_delta_step change categorical gains and outputs too, and with
    monotone constraints on numerical columns, categorical outputs are clamped into the leaf's
    bounds (LightGBM's ``USE_MC`` in ``FindBestThresholdCategoricalInner``)."""
    X, y, Xt, yt = adult
    mono = [0] * X.shape[1]
    mono[4] = 1   # education-num
    mono[12] = 1  # hours-per-week
    n_trees = 6
    ours, theirs = _pair(dict(objective="binary", num_leaves=31, learning_rate=0.1,
                              path_smooth=3.0, max_delta_step=0.6, monotone_constraints=mono),
                         X, y, ADULT_CATEGORICAL, n_trees)
    assert assert_lightgbm_trees(ours, theirs, n_trees) > 0
    np.testing.assert_allclose(ours.predict(Xt, raw_score=True),
                               theirs.predict(Xt, raw_score=True), rtol=0, atol=1e-9)
    assert abs(roc_auc_score(yt, ours.predict(Xt)) - roc_auc_score(yt, theirs.predict(Xt))) < 1e-6


def test_two_workers_give_the_in_process_model(shared_data, monkeypatch, executors):
    """Each leaf's output, bounds and depth travel inside its parent's split record: the
    model is the same, bit for bit, on 2 workers replicating the search and on 2 workers
    sharing it by feature blocks."""
    from distributed import Client, LocalCluster
    X, y = load_lightgbm_tsv(shared_data / "lightgbm_regression" / "regression.train")
    X, y = X[:3000], y[:3000]
    params = dict(objective="regression", num_leaves=15, n_estimators=5, partition_rows=500,
                  monotone_constraints=[1, -1, 1] + [0] * 25, monotone_penalty=0.5,
                  path_smooth=2.0, max_delta_step=0.2)
    Xd, yd = da.from_array(X, chunks=(500, -1)), da.from_array(y, chunks=500)
    local = oocgbdt.train(params, X, y, verbose=False)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cl, Client(cl, set_as_default=False) as c:
        replicated = oocgbdt.train(params, Xd, yd, client=c, verbose=False)
        monkeypatch.setattr(spmd, "REPLICATE_MAX_SHARDS", 1)
        blocks = oocgbdt.train(params, Xd, yd, client=c, verbose=False)
    assert executors == [("LocalExecutor", None, None), ("SpmdExecutor", 2, None),
                         ("SpmdExecutor", 2, None), ("SpmdExecutor", 2, 2), ("SpmdExecutor", 2, 2)]
    assert local == replicated == blocks
    for other in (replicated, blocks):
        np.testing.assert_array_equal(local.predict(X, raw_score=True),
                                      other.predict(X, raw_score=True))


@pytest.mark.parametrize("params, match", [
    (dict(monotone_constraints=[1, 0]), "expected 3, got 2"),
    (dict(monotone_constraints=[1, 0, -1], categorical_feature=[2]),
     r"categorical feature\(s\) \[2\]"),
])
def test_train_refuses_bad_constraints_before_any_work(params, match):
    X = np.random.default_rng(0).integers(0, 5, (100, 3)).astype(np.float32)
    with pytest.raises(ValueError, match=match):
        oocgbdt.train(params, X, X[:, 0], verbose=False)
