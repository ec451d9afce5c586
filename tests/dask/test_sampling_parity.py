"""Bagging, per-tree feature_fraction and ``seed`` draw LightGBM's random numbers: the same
trees as LightGBM (the oracle) on sampled configurations, whatever the partitioning."""
import numpy as np
import pytest

import oocgbdt
from tests.conftest import load_lightgbm_tsv
from tests.core.test_split_counts import _assert_same_trees
from tests.dask.test_node_sampling import _both

lgb = pytest.importorskip("lightgbm")

N_TREES = 8


@pytest.fixture(scope="module")
def binary(shared_data):
    """2,500 rows of lightgbm_binary: three bagging blocks of 1024 rows, the last one short."""
    X, y = load_lightgbm_tsv(shared_data / "lightgbm_binary" / "binary.train")
    return X[:2500], y[:2500]


@pytest.mark.parametrize("extra", [
    dict(bagging_fraction=0.7, bagging_freq=1),
    dict(bagging_fraction=0.5, bagging_freq=3, bagging_seed=11),
    dict(feature_fraction=0.7),
    dict(feature_fraction=0.7, bagging_fraction=0.7, bagging_freq=1),
    dict(seed=7, feature_fraction=0.6, bagging_fraction=0.8, bagging_freq=2),
    dict(feature_fraction=0.7, feature_fraction_bynode=0.5),
    dict(pos_bagging_fraction=0.5, neg_bagging_fraction=0.8, bagging_freq=1),
], ids=["bagging", "bagging_freq3", "feature_fraction", "both", "seed", "bytree_bynode",
        "balanced"])
def test_sampled_trees_equal_lightgbm(binary, extra):
    X, y = binary
    ours, model = _both(X, y, extra)
    _assert_same_trees(ours, model, X, N_TREES)
    theirs = model.predict(X, raw_score=True)
    np.testing.assert_allclose(ours.predict(X, raw_score=True), theirs, rtol=0,
                               atol=1e-12 * np.abs(theirs).max())


def test_multiclass_feature_fraction_draws_per_tree_as_lightgbm():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 8))
    y = np.digitize(X[:, 0] + X[:, 3] + 0.5 * rng.normal(size=1500), [-0.5, 0.5]).astype(float)
    ours, model = _both(X, y, dict(num_class=3, feature_fraction=0.6, bagging_fraction=0.7,
                                   bagging_freq=2, seed=3), objective="multiclass")
    _assert_same_trees(ours, model, X, 3 * N_TREES)


def test_seed_derives_lightgbm_s_seeds_and_given_ones_win():
    """LightGBM writes the seeds it derived into its model file."""
    from oocgbdt.params import resolve_params
    X = np.random.default_rng(0).normal(size=(100, 3))
    model = lgb.train(dict(seed=7, bagging_seed=3, verbose=-1), lgb.Dataset(X, X[:, 0]),
                      num_boost_round=1)
    text = model.model_to_string()
    ours = resolve_params(dict(seed=7, bagging_seed=3))
    for name in ("bagging_seed", "feature_fraction_seed", "objective_seed", "extra_seed"):
        assert f"[{name}: {ours[name]}]" in text
    assert resolve_params({})["bagging_seed"] == 3  # no seed: LightGBM's defaults


def test_sampled_model_does_not_depend_on_the_partitioning(binary):
    """Consistency (LightGBM is the oracle above): 1 partition and 4 partitions of uneven
    chunks, which cut the 1024-row bagging blocks, give the same model bit for bit."""
    X, y = binary
    p = dict(objective="binary", num_leaves=15, n_estimators=6, feature_fraction=0.7,
             pos_bagging_fraction=0.6, neg_bagging_fraction=0.7, bagging_freq=2)
    one = oocgbdt.train(p, X, y, verbose=False)
    many = oocgbdt.train(dict(p, chunk_rows=333, partition_rows=666), X, y, verbose=False)
    assert one == many


@pytest.mark.parametrize("objective, fraction", [("binary", 0.3), ("regression", 0.7),
                                                 ("multiclass", 0.4)])
def test_weighted_bagging_equals_lightgbm(binary, objective, fraction):
    """A bagging round computes the gradients of its rows alone, with their weights: LightGBM
    (every row's gradients) grows the same trees. 0.3 and 0.4: the tree copies its rows
    compactly; 0.7: it reads them in place."""
    from tests.dask.test_node_sampling import PARAMS
    X, y = binary
    rng = np.random.default_rng(8)
    w = rng.uniform(0.2, 3.0, y.shape[0]).astype(np.float32)
    if objective == "regression":
        y = X[:, 0] + X[:, 1] * y
    elif objective == "multiclass":
        y = np.digitize(X[:, 0] + y, np.quantile(X[:, 0] + y, [0.33, 0.66])).astype(float)
    params = dict(PARAMS, objective=objective, bagging_fraction=fraction, bagging_freq=1,
                  bagging_seed=5)
    if objective == "multiclass":
        params["num_class"] = 3
    model = lgb.train(dict(params, enable_bundle=False, deterministic=True, num_threads=1,
                           verbose=-1), lgb.Dataset(X, y, weight=w), num_boost_round=N_TREES)
    ours = oocgbdt.train(dict(params, n_estimators=N_TREES), X, y, sample_weight=w,
                         verbose=False)
    if objective != "multiclass":
        _assert_same_trees(ours, model, X, N_TREES)
    theirs = model.predict(X, raw_score=True)
    np.testing.assert_allclose(ours.predict(X, raw_score=True), theirs, rtol=0,
                               atol=1e-12 * np.abs(theirs).max())
