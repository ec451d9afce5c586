"""``num_threads`` (LightGBM's name; aliases ``n_jobs``, ``nthread``...): the threads a fit uses,
in process and on each worker; the model does not depend on it."""
import numpy as np
import pytest

import oocgbdt
from oocgbdt import GBDTClassifier
from oocgbdt.core import executor as executor_mod
from oocgbdt.core.executor import fit_threads


@pytest.mark.parametrize("n", [-3, -2, -1, 1, 2, 5])
def test_negative_counts_back_from_the_cores_as_joblib(n):
    joblib = pytest.importorskip("joblib")
    import os
    assert fit_threads(n) == (max(1, joblib.effective_n_jobs(n)) if n < 0 else n)
    assert fit_threads(0) == (os.cpu_count() or 1)
    assert fit_threads(n, available=8) == (8 + 1 + n if n < 0 else n)
    assert fit_threads(-20, available=4) == 1


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 6)).astype(np.float32)
    y = (X[:, 0] - X[:, 1] + rng.normal(scale=0.5, size=3000) > 0).astype(float)
    return X, y


def _spy(monkeypatch, cls, attr="n_threads"):
    seen = []
    init = cls.__init__

    def spied(self, *args, **kwargs):
        init(self, *args, **kwargs)
        seen.append(getattr(self, attr))

    monkeypatch.setattr(cls, "__init__", spied)
    return seen


def test_in_process_fit_uses_the_threads_asked_and_the_same_model(monkeypatch):
    X, y = _data()
    params = dict(objective="binary", num_leaves=7, n_estimators=5, chunk_rows=500)
    default = oocgbdt.train(params, X, y)
    seen = _spy(monkeypatch, executor_mod.LocalExecutor)
    one = oocgbdt.train(dict(params, num_threads=1), X, y)
    assert seen == [1]
    assert one == default
    est = GBDTClassifier(n_estimators=5, num_leaves=7, n_jobs=1).fit(X, y)
    assert seen == [1, 1]
    np.testing.assert_array_equal(est.predict_proba(X)[:, 1], default.predict(X))


def test_each_shard_on_a_cluster_uses_the_threads_asked(monkeypatch):
    from distributed import Client, LocalCluster

    from oocgbdt.runtime.shard import Shard
    X, y = _data()
    params = dict(objective="binary", num_leaves=7, n_estimators=3, chunk_rows=500,
                  partition_rows=1000)
    seen = _spy(monkeypatch, Shard, "executor")
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        default = oocgbdt.train(params, X, y, client=client)
        assert [e.n_threads for e in seen] == [2, 2]
        one = oocgbdt.train(dict(params, n_jobs=1), X, y, client=client)
        assert [e.n_threads for e in seen[2:]] == [1, 1]
    assert one == default
