"""Row sampling on a Dask cluster: bit-identical models whatever the number of workers."""
import numpy as np
import pytest

import oocgbdt
from oocgbdt.io.dataset import open_dataset, write_dataset
from tests.dask.test_training import _synthetic


@pytest.mark.parametrize("sampling", [
    dict(data_sample_strategy="goss", learning_rate=0.5),          # GOSS from round 2
    dict(bagging_fraction=0.4, bagging_freq=2, feature_fraction=0.7, learning_rate=0.5),
    dict(pos_bagging_fraction=0.4, neg_bagging_fraction=0.3, bagging_freq=1, learning_rate=0.5),
], ids=["goss", "bagging", "balanced"])
def test_sampled_model_is_bit_identical_for_1_and_2_workers_and_numpy(tmp_path, sampling):
    """The threshold, the tie quotas and the draws are made the same way on every executor;
    LightGBM's bagging generators are jumped to each partition's rows (3 partitions cut its
    1024-row blocks). The oracles: tests/core/test_sampling.py, test_sampling_parity.py."""
    from distributed import Client, LocalCluster
    X, y = _synthetic()
    ds = open_dataset(write_dataset(tmp_path / "d", X, y, chunk_rows=500).path)
    params = dict(objective="binary", num_leaves=15, n_estimators=6, chunk_rows=500,
                  partition_rows=1000, **sampling)  # 3 partitions of 2 chunks
    models = []
    for n_workers in (1, 2):
        with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=False,
                          dashboard_address=":0") as cl, Client(cl) as c:
            models.append(oocgbdt.train(params, ds.X, ds.y, client=c, verbose=False))
    models.append(oocgbdt.train(params, X, y, verbose=False))  # NumPy, in-process
    rows = [[s["n_rows"] for s in m.tree_stats] for m in models]
    assert rows[0] == rows[1] == rows[2]
    assert max(rows[0][2:]) < 0.5 * len(y)  # the sampled rounds really sampled
    assert models[0] == models[1] == models[2]
    p = [m.predict(X, raw_score=True) for m in models]
    np.testing.assert_array_equal(p[0], p[1])
    np.testing.assert_array_equal(p[0], p[2])
