"""Quantized training on a cluster: the same model as in process, bit for bit."""
import numpy as np

import oocgbdt


def test_two_workers_give_the_in_process_model():
    """Scales from a gather of per-partition maxima, rounding streams keyed by global row,
    integer histograms: two shards (different partitions and reduction) give the model of an
    in-process fit, with bagging and leaf renewal (float sums gathered per leaf)."""
    import dask.array as da
    from distributed import Client, LocalCluster

    rng = np.random.default_rng(0)
    X = rng.normal(size=(6000, 6)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] ** 2 + rng.normal(size=6000) > 0.5).astype(float)
    params = dict(objective="binary", num_leaves=15, use_quantized_grad=True, n_estimators=6,
                  quant_train_renew_leaf=True, bagging_fraction=0.4, bagging_freq=1)
    local = oocgbdt.train(params, X, y, verbose=False)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cl, Client(cl) as c:
        remote = oocgbdt.train(dict(params, partition_rows=1000),
                               da.from_array(X, chunks=(1000, 6)), da.from_array(y, chunks=1000),
                               client=c, verbose=False)
    np.testing.assert_array_equal(remote.predict(X, raw_score=True),
                                  local.predict(X, raw_score=True))
    plain = oocgbdt.train(dict(params, use_quantized_grad=False), X, y, verbose=False)
    assert np.abs(plain.predict(X, raw_score=True) - local.predict(X, raw_score=True)).max() > 1e-3
