"""Ranking (lambdarank, ndcg@k, map@k) on LightGBM's lambdarank example data: LightGBM's trees
and evaluation values; a model that does not depend on the chunking (1 and 3 chunks, NumPy vs
Zarr, storage chunk boundaries inside queries, in process vs 2 workers); GBDTRanker as
LGBMRanker; bad input."""
import dask.array as da
import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

import oocgbdt
from oocgbdt.io.dataset import open_dataset, write_dataset
from tests.dask.test_lightgbm_parity import _assert_lightgbm_trees

lgb = pytest.importorskip("lightgbm")

PARAMS = dict(objective="lambdarank", num_leaves=15, learning_rate=0.1, max_bin=255,
              eval_at=[1, 3, 5])
N_TREES = 8


@pytest.fixture(scope="module")
def rank(shared_data):
    """rank.train (3,005 x 300, 201 queries) and rank.test (768 rows, 50 queries), dense."""
    root = shared_data / "lightgbm_lambdarank"

    def load(name):
        X, y = load_svmlight_file(str(root / name), n_features=300, dtype=np.float32)
        return X.toarray(), y.astype(np.float32), np.loadtxt(root / f"{name}.query", dtype=int)

    return load("rank.train") + load("rank.test")


@pytest.fixture(scope="module")
def lightgbm_model(rank):
    X, y, g, Xt, yt, gt = rank
    evals = {}
    train = lgb.Dataset(X, y, group=g)
    model = lgb.train(dict(PARAMS, enable_bundle=False, deterministic=True, num_threads=1,
                           verbose=-1, metric=["ndcg", "map"]),
                      train, num_boost_round=N_TREES,
                      valid_sets=[lgb.Dataset(Xt, yt, group=gt, reference=train)],
                      valid_names=["test"], callbacks=[lgb.record_evaluation(evals)])
    return model, evals["test"]


def _fit(X, y, g, Xt, yt, gt, **kw):
    return oocgbdt.train(dict(PARAMS, n_estimators=N_TREES, metric=["ndcg", "map"],
                              **kw.pop("params", {})),
                         X, y, group=g, eval_set=[(Xt, yt)], eval_names=["test"],
                         eval_group=[gt], verbose=False, **kw)


@pytest.mark.parametrize("chunk_rows, n_partitions", [(100_000, 1), (1000, 3)])
def test_lambdarank_equals_lightgbm(rank, lightgbm_model, chunk_rows, n_partitions):
    X, y, g, Xt, yt, gt = rank
    ours = _fit(X, y, g, Xt, yt, gt, params=dict(chunk_rows=chunk_rows, partition_rows=chunk_rows))
    assert ours.cache_report["n_partitions"]["train"] == n_partitions
    model, evals = lightgbm_model
    _assert_ranking_equal(ours, model, evals, X, Xt)


def test_rank_xendcg_equals_lightgbm_for_1_and_3_partitions(rank):
    """XE-NDCG's per-query random draws follow each query (seed + query index, advanced per
    round), not the partition: LightGBM's trees whatever the partitioning."""
    X, y, g, Xt, yt, gt = rank
    params = dict(PARAMS, objective="rank_xendcg")
    evals = {}
    train = lgb.Dataset(X, y, group=g)
    model = lgb.train(dict(params, enable_bundle=False, deterministic=True, num_threads=1,
                           verbose=-1, metric=["ndcg", "map"]), train, num_boost_round=N_TREES,
                      valid_sets=[lgb.Dataset(Xt, yt, group=gt, reference=train)],
                      valid_names=["test"], callbacks=[lgb.record_evaluation(evals)])
    for rows in (100_000, 1000):
        ours = _fit(X, y, g, Xt, yt, gt, params=dict(objective="rank_xendcg", chunk_rows=rows,
                                                     partition_rows=rows))
        _assert_ranking_equal(ours, model, evals["test"], X, Xt)


def _assert_ranking_equal(ours, model, evals, X, Xt):
    _assert_lightgbm_trees(ours, model, X, Xt, N_TREES)
    for name in ("ndcg@1", "ndcg@3", "ndcg@5", "map@1", "map@3", "map@5"):
        # Per-query sums in another order than LightGBM's: rounding only.
        np.testing.assert_allclose(ours.evals_result["test"][name], evals[name], rtol=1e-12,
                                   err_msg=name)


def test_same_model_from_chunks_inside_queries_zarr_and_two_workers(rank, tmp_path):
    """Storage chunks of 400 rows cut through queries; the rows are read across them, so every
    partition holds whole queries, and the model is the same as from NumPy in one piece (up to
    the summation order of the histograms over partitions: equal trees, scores to 1e-12). The
    rows have positions (unbiased LambdaRank): the bias factors' sums are added over partitions
    and workers."""
    from distributed import Client, LocalCluster

    X, y, g, Xt, yt, gt = rank
    position = np.concatenate([np.arange(s) % 7 for s in g])
    ref = _fit(X, y, g, Xt, yt, gt, position=position)
    ds = open_dataset(write_dataset(tmp_path / "rank", X, y, chunk_rows=400).path)
    assert not set(np.cumsum(ds.X.chunks[0])) <= set(np.cumsum(g))  # a chunk cuts a query
    # several partitions, each of whole queries
    small = dict(params=dict(partition_rows=400), position=position)
    fits = {"zarr": _fit(ds.X, ds.y, g, Xt, yt, gt, **small)}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        fits["2 workers"] = _fit(da.from_array(X, chunks=(400, -1)), da.from_array(y, chunks=400),
                                 g, Xt, yt, gt, client=client, params=dict(partition_rows=400),
                                 position=position)
    assert fits["2 workers"].cache_report["n_partitions"]["train"] > 2
    assert fits["zarr"].cache_report["n_partitions"]["train"] > 2
    for name, fit in fits.items():
        for a, b in zip(fit.trees, ref.trees):
            np.testing.assert_array_equal(a.split_feature, b.split_feature, err_msg=name)
            np.testing.assert_array_equal(a.threshold, b.threshold, err_msg=name)
        p, q = fit.predict(Xt, raw_score=True), ref.predict(Xt, raw_score=True)
        np.testing.assert_allclose(p, q, rtol=0, atol=1e-12 * np.abs(q).max(), err_msg=name)


def test_ranker_estimator_matches_lgbmranker(rank):
    X, y, g, Xt, yt, gt = rank
    ours = oocgbdt.GBDTRanker(n_estimators=5, num_leaves=7).fit(
        X, y, group=g, eval_set=[(Xt, yt)], eval_group=[gt], eval_at=[1, 3])
    theirs = lgb.LGBMRanker(n_estimators=5, num_leaves=7, verbose=-1).fit(
        X, y, group=g, eval_set=[(Xt, yt)], eval_group=[gt], eval_at=[1, 3])
    np.testing.assert_allclose(ours.predict(Xt), theirs.predict(Xt), rtol=0, atol=1e-12)
    for name in ("ndcg@1", "ndcg@3"):
        np.testing.assert_allclose(ours.evals_result_["valid_0"][name],
                                   theirs.evals_result_["valid_0"][name], rtol=1e-12)


def test_ranking_bad_input(rank):
    X, y, g, Xt, yt, gt = rank
    X, y = X[:300], y[:300]
    with pytest.raises(ValueError, match=r"objective 'lambdarank' needs query groups"):
        oocgbdt.train(dict(PARAMS, n_estimators=1), X, y, verbose=False)
    with pytest.raises(ValueError, match=r"group sizes must sum to the number of rows: they sum "
                                         r"to 299 but there are 300 rows"):
        oocgbdt.train(dict(PARAMS, n_estimators=1), X, y, group=[100, 199], verbose=False)
    with pytest.raises(ValueError, match=r"needs the query groups of eval set 'valid_0'"):
        oocgbdt.train(dict(PARAMS, n_estimators=1), X, y, group=[300], eval_set=[(Xt, yt)],
                      verbose=False)
    with pytest.raises(ValueError, match=r"integer relevance labels in \[0, 31\)"):
        oocgbdt.train(dict(PARAMS, n_estimators=1), X, y + 0.5, group=[300], verbose=False)
    with pytest.raises(ValueError, match=r"GBDTRanker.fit needs group"):
        oocgbdt.GBDTRanker().fit(X, y)


def _shown_rows(seed=0, n_queries=60):
    """Queries of 5 to 24 rows shown in a random order; the labels drop with the position shown
    (a position bias), besides depending on two features."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 25, n_queries)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 5)).astype(np.float32)
    position = np.concatenate([rng.permutation(s) for s in sizes])
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + 1.5 - 0.15 * position
                         + rng.normal(size=n) * 0.5), 0, 4).astype(np.float32)
    return X, y, sizes, position


@pytest.mark.parametrize("regularization, rows", [(0.0, 100_000), (0.5, 300)])
def test_position_bias_equals_lightgbm(regularization, rows):
    """Unbiased LambdaRank: LightGBM's trees with the same positions (its ``Dataset(position=)``)
    in one partition and in 3, whose bias sums are added over partitions; the positions change
    the model (LightGBM's without them is another)."""
    X, y, sizes, position = _shown_rows()
    params = dict(objective="lambdarank", num_leaves=7, min_data_in_leaf=5, learning_rate=0.1,
                  lambdarank_position_bias_regularization=regularization)
    n_trees = 12
    ours = oocgbdt.train(dict(params, n_estimators=n_trees, chunk_rows=rows, partition_rows=rows),
                         X, y, group=sizes, position=position, verbose=False)
    assert ours.cache_report["n_partitions"]["train"] == (1 if rows > len(y) else 3)
    lgb_params = dict(params, enable_bundle=False, deterministic=True, num_threads=1, verbose=-1)
    model = lgb.train(lgb_params, lgb.Dataset(X, y, group=sizes, position=position), n_trees)
    _assert_lightgbm_trees(ours, model, X, X[::7], n_trees)
    unbiased = lgb.train(lgb_params, lgb.Dataset(X, y, group=sizes), n_trees)
    assert np.abs(unbiased.predict(X) - ours.predict(X)).max() > 0.1
    if regularization:
        ranker = oocgbdt.GBDTRanker(n_estimators=n_trees, **{k: v for k, v in params.items()
                                                            if k != "objective"})
        ranker.fit(X, y, group=sizes, position=position)
        np.testing.assert_array_equal(ranker.predict(X), ours.predict(X))


def test_position_bad_input():
    X, y, sizes, position = _shown_rows(n_queries=10)
    params = dict(objective="lambdarank", n_estimators=1)
    with pytest.raises(ValueError, match=r"position must be a 1-D array with one value per "
                                         r"training row \(\d+\), got shape \(5,\)"):
        oocgbdt.train(params, X, y, group=sizes, position=position[:5], verbose=False)
    with pytest.raises(ValueError, match=r"position must hold integer positions, got dtype "
                                         r"float64 with non-integer"):
        oocgbdt.train(params, X, y, group=sizes, position=position + 0.5, verbose=False)
    with pytest.raises(ValueError, match=r"position is used by objective 'lambdarank' only .* "
                                         r"got objective 'rank_xendcg'"):
        oocgbdt.train(dict(params, objective="rank_xendcg"), X, y, group=sizes,
                      position=position, verbose=False)
    with pytest.raises(ValueError, match=r"lambdarank_position_bias_regularization"):
        oocgbdt.train(dict(params, lambdarank_position_bias_regularization=-1.0), X, y,
                      group=sizes, position=position, verbose=False)
