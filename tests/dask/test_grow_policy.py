"""Growth policies and the histogram pool through ``train``: what the Dask layer adds to them
(the auto value of ``lookahead_leaves``, ``hist_pool_size`` in MB, EFB bundles of the fit) and
the same model on a cluster as in process. The policies themselves, against a NumPy oracle,
are tested on the core in tests/core/test_grow_policy.py.
"""
import numpy as np
import pytest

import oocgbdt
from oocgbdt.core.boosting import histogram_pool_capacity
from tests.core.test_grow_policy import _mixed_data

# Leaf values of models whose sums differ only in rounding (a bounded pool histograms children
# from rows instead of subtracting): sums of a few thousand float32 gradients in float64 differ
# by ~1e-13 relative; 1e-9 leaves a margin for the division by the hessian sum and still
# catches a misrouted row, which moves a leaf value by far more.
RTOL = 1e-9


def test_splitting_ahead_through_train_gives_the_same_model():
    """Through ``train``: multiclass with EFB bundles, GOSS and EMA feature screening; the saved
    model is the same for every lookahead_leaves but that parameter itself."""
    rng = np.random.default_rng(3)
    n = 6000
    X = rng.normal(size=(n, 8)).astype(np.float32)
    onehot = np.zeros((n, 6), np.float32)  # mutually exclusive columns: bundled by EFB
    onehot[np.arange(n), rng.integers(0, 6, n)] = rng.integers(1, 4, n)
    X = np.hstack([X, onehot])
    y = (np.digitize(X[:, 0] + X[:, 8] - X[:, 9] + 0.5 * rng.normal(size=n), [-0.5, 0.7]))
    base = dict(objective="multiclass", num_class=3, n_estimators=6, chunk_rows=1500,
                num_leaves=15, min_data_in_leaf=10, data_sample_strategy="goss",
                feature_screening="ema", screening_warmup=2, screening_ratio=0.5, verbose=False)
    models = []
    for lookahead in (0, 2, 4):
        booster = oocgbdt.train(dict(base, lookahead_leaves=lookahead), X, y)
        d = booster.to_dict()
        assert d["params"].pop("lookahead_leaves") == lookahead
        models.append((d, np.mean([s["n_passes"] for s in booster.tree_stats])))
    assert [8, 9, 10, 11, 12, 13] in models[0][0]["bundles"]
    for d, passes in models[1:]:
        assert d == models[0][0]
        assert passes < models[0][1]


def test_lookahead_leaves_auto_is_0_in_process():
    """In process a pass costs little and leaves split ahead cost work: lookahead_leaves=None
    (the default) resolves to 0, which the model records."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 5)).astype(np.float32)
    y = X[:, 0] + np.sin(3 * X[:, 1]) + rng.normal(scale=0.3, size=3000)
    b = oocgbdt.train(dict(objective="regression", num_leaves=15, n_estimators=2,
                           min_data_in_leaf=5, verbose=False), X, y)
    assert b.params["lookahead_leaves"] == 0
    assert [s["n_passes"] for s in b.tree_stats] == [14, 14]


def test_pool_size_in_mb_and_through_train():
    assert histogram_pool_capacity(-1, 100) is None
    assert histogram_pool_capacity(0, 100) is None
    assert histogram_pool_capacity(1.0, 2**20 // 16) == 1  # one (n_bins, 2) float64 histogram
    assert histogram_pool_capacity(0.5, 2**20 // 16) == 0
    assert histogram_pool_capacity(10.0, 1000) == int(10 * 2**20 // 16000)
    rng = np.random.default_rng(2)
    X = rng.normal(size=(4000, 4)).astype(np.float32)
    y = X[:, 0] + np.sin(2 * X[:, 1]) + rng.normal(scale=0.3, size=4000)
    base = dict(objective="regression", n_estimators=4, chunk_rows=1500, max_bin=63)
    free = oocgbdt.train(base, X, y, verbose=False)
    # (4 features x <= 63 bins + the count row) x 16 bytes: 3 histograms fit in
    # 3 * (4 * 63 + 1) * 16 bytes
    pool = 3 * (4 * 63 + 1) * 16 / 2**20
    bounded = oocgbdt.train(dict(base, hist_pool_size=pool), X, y, verbose=False)
    for a, b in zip(free.trees, bounded.trees):
        np.testing.assert_array_equal(a.split_feature, b.split_feature)
        np.testing.assert_array_equal(a.threshold_bin, b.threshold_bin)
        np.testing.assert_allclose(a.leaf_value, b.leaf_value, rtol=RTOL)
    assert all(st["max_hist_kept"] <= 3 for st in bounded.tree_stats)
    assert sum(st["n_hist_dropped"] for st in bounded.tree_stats) > 0


# ---- on a cluster --------------------------------------------------------------------------------

def test_dask_backend_gives_the_same_depthwise_model_as_local_backend():
    """Two workers: every shard runs the loop over its block of partitions (ActorExecutor),
    exchanging partial histograms, and keeps (or, with the bounded pool, drops) its histograms
    there: the model and the passes are those of the in-process fit."""
    da = pytest.importorskip("dask.array")
    from distributed import Client, LocalCluster
    X, y = _mixed_data(n=3000)
    y = (y > 0).astype(np.float64)
    params = dict(objective="binary", n_estimators=4, chunk_rows=500, num_leaves=12,
                  grow_policy="depthwise")
    for extra in (dict(), dict(histogram_pool_size=1e-4)):
        local = oocgbdt.train(dict(params, **extra), X, y, verbose=False)
        with LocalCluster(processes=False, dashboard_address=":0", n_workers=2,
                          threads_per_worker=1) as cl, Client(cl) as c:
            dist = oocgbdt.train(dict(params, **extra), da.from_array(X, chunks=(500, -1)),
                                 da.from_array(y, chunks=500), client=c, verbose=False)
        assert dist == local
        assert [st["n_passes"] for st in dist.tree_stats] == [st["n_passes"] for st in local.tree_stats]

