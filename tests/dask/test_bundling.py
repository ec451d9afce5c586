"""Exclusive Feature Bundling end to end: bundle counts on real one-hot data, and the same model
with bundling on and off (max_conflict_rate=0 is lossless)."""
import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

import oocgbdt
from oocgbdt.io.dataset import open_dataset, write_dataset

PARAMS = dict(num_leaves=31, learning_rate=0.1, n_estimators=20)


def _svm(path, n_features):
    X, y = load_svmlight_file(str(path), n_features=n_features, zero_based=False, dtype=np.float32)
    return X, y


def _agaricus_groups(shared_data):
    names = [line.split("\t")[1].split("=")[0]
             for line in (shared_data / "agaricus" / "featmap.txt").read_text().splitlines()]
    groups = {}
    for i, name in enumerate(names):
        groups.setdefault(name, []).append(i)
    return list(groups.values())


def _assert_exclusive(X, bundles):
    """No row has two non-zero members of one bundle (the bundles are lossless on X)."""
    for bundle in bundles:
        assert ((X[:, bundle] != 0).sum(axis=1) <= 1).all(), bundle


def _same_models(a, b, X):
    pa, pb = a.predict(X, raw_score=True), b.predict(X, raw_score=True)
    np.testing.assert_array_equal(pa, pb)
    for ta, tb in zip(a.trees, b.trees):
        np.testing.assert_array_equal(ta.split_feature, tb.split_feature)
        np.testing.assert_array_equal(ta.threshold, tb.threshold)
    assert a == b


def test_agaricus_one_bundle_per_attribute_and_identical_model(shared_data):
    """126 one-hot columns of 22 attributes. veil-type is constant in the training file (its two
    columns are all ones and all zeros), so with the default feature_pre_filter both columns
    are trivial and 21 bundles remain, as many as the other attributes; with
    feature_pre_filter=False the constant column is kept and the count is exactly 22. Bundles
    need not follow the attributes: a rare level (odor=musty) never co-occurs with the levels
    "one" and "two" of ring-number, and the greedy pass finds that exclusive pairing."""
    X, y = _svm(shared_data / "agaricus" / "agaricus.txt.train", 126)
    Xt, _ = _svm(shared_data / "agaricus" / "agaricus.txt.test", 126)
    X, Xt = X.toarray(), Xt.toarray()
    groups = _agaricus_groups(shared_data)
    assert len(groups) == 22
    on = oocgbdt.train(dict(objective="binary", **PARAMS), X, y, verbose=False)
    off = oocgbdt.train(dict(objective="binary", enable_bundle=False, **PARAMS), X, y, verbose=False)
    assert len(on.bundles_) == 21 and off.bundles_ is None
    _assert_exclusive(X, on.bundles_)
    assert on.bundle_report["conflict_rows"] == 0 and on.bundle_report["lost_values"] == 0
    _same_models(on, off, Xt)
    assert ((on.predict(Xt) > 0.5) == _svm(shared_data / "agaricus" / "agaricus.txt.test", 126)[1]).mean() > 0.99
    kept = oocgbdt.train(dict(objective="binary", feature_pre_filter=False, n_estimators=2), X, y,
                         verbose=False)
    assert len(kept.bundles_) == 22
    _assert_exclusive(X, kept.bundles_)


def test_a9a_at_most_14_bundles_and_identical_model(shared_data):
    X, y = _svm(shared_data / "a9a" / "a9a", 123)
    Xt, yt = _svm(shared_data / "a9a" / "a9a.t", 123)
    X, Xt, y = X.toarray(), Xt.toarray(), (y > 0).astype(np.float64)
    dense = int(((X != 0).mean(axis=0) > 0.5).sum())
    on = oocgbdt.train(dict(objective="binary", **PARAMS), X, y, verbose=False)
    off = oocgbdt.train(dict(objective="binary", enable_bundle=False, **PARAMS), X, y, verbose=False)
    assert len(on.bundles_) <= 14 + dense
    assert sum(len(b) for b in on.bundles_) == 123 - 13  # 13 columns are trivial (pre-filter)
    _assert_exclusive(X, on.bundles_)
    _same_models(on, off, Xt)


def test_bundled_training_on_a_cluster_from_zarr(shared_data, tmp_path, client):
    """The Dask path (conflict counts tree-reduced on workers, chunks bundled on workers) gives
    the model of the in-process path."""
    X, y = _svm(shared_data / "agaricus" / "agaricus.txt.train", 126)
    X = X.toarray()
    ds = open_dataset(write_dataset(tmp_path / "d", X, y, chunk_rows=800).path)
    params = dict(objective="binary", n_estimators=10, chunk_rows=800)
    remote = oocgbdt.train(params, ds.X, ds.y, client=client, verbose=False)
    local = oocgbdt.train(params, X, y, verbose=False)
    assert remote.bundles_ == local.bundles_ and len(local.bundles_) == 21
    _same_models(remote, local, X)


def test_signed_sparse_features_and_conflicts():
    """Bundled features whose default bin is not bin 0 (signed values, NaN): the recovered default
    bin is read by split search, so models agree up to rounding; with max_conflict_rate > 0,
    conflicting rows are counted over the full data and reported."""
    rng = np.random.default_rng(0)
    n = 4000
    cols = []
    for g in (5, 8, 3):
        level = rng.integers(-1, g, size=n)
        cols += [np.where(level == k, rng.normal(size=n), 0.0) for k in range(g)]
    X = np.stack(cols, axis=1).astype(np.float32)
    X[(rng.random(n) < 0.02) & (X[:, :5] == 0).all(axis=1), 3] = np.nan  # missing, still exclusive
    X = np.concatenate([X, rng.normal(size=(n, 2)).astype(np.float32)], axis=1)
    y = (X[:, :3].sum(axis=1) + np.nan_to_num(X[:, 3]) + X[:, -1] + rng.logistic(size=n) > 0).astype(float)
    p = dict(objective="binary", n_estimators=15, chunk_rows=1000)
    on = oocgbdt.train(p, X, y, verbose=False)
    off = oocgbdt.train(dict(p, enable_bundle=False), X, y, verbose=False)
    assert len(on.bundles_) == 5  # 3 one-hot groups + 2 dense numeric columns
    np.testing.assert_allclose(on.predict(X, raw_score=True), off.predict(X, raw_score=True),
                               rtol=1e-6, atol=1e-6)
    # A (rows 0-199) and B (rows 150-349) overlap on 50 rows: a conflict budget bundles them, and
    # the 50 overlapping rows keep B's value (the higher feature index), losing A's
    Xab = np.zeros((n, 3), np.float32)
    Xab[:200, 0], Xab[150:350, 1], Xab[:, 2] = 1.0, 2.0, rng.normal(size=n)
    yab = Xab[:, 0] - Xab[:, 1] + Xab[:, 2]
    q = dict(objective="regression", n_estimators=5, chunk_rows=1000)
    exact = oocgbdt.train(q, Xab, yab, verbose=False)
    assert exact.bundles_ == [[0], [1], [2]] and exact.bundle_report["conflict_rows"] == 0
    lossy = oocgbdt.train(dict(q, max_conflict_rate=0.2), Xab, yab, verbose=False)
    assert lossy.bundles_ == [[0, 1], [2]]
    assert lossy.bundle_report["conflict_rows"] == 50
    assert lossy.bundle_report["lost_values"] == 50
    assert "conflicting rows" in lossy.bundle_report["summary"]


def test_bundles_survive_save_load_and_screening(tmp_path):
    rng = np.random.default_rng(1)
    n = 3000
    level = rng.integers(0, 6, size=n)
    X = np.stack([(level == k).astype(np.float32) for k in range(6)]
                 + [rng.normal(size=n).astype(np.float32)], axis=1)
    y = level * 0.5 + X[:, 6] + rng.normal(scale=0.1, size=n)
    b = oocgbdt.train(dict(objective="regression", n_estimators=10, feature_screening="ema",
                           screening_warmup=2, screening_ratio=0.3), X, y, verbose=False)
    assert b.bundles_ == [[0, 1, 2, 3, 4, 5], [6]]
    assert b.feature_importance().shape == (7,)
    path = b.save_model(tmp_path / "m.json")
    again = oocgbdt.Booster.load_model(path)
    assert again.bundles_ == b.bundles_
    np.testing.assert_array_equal(again.predict(X), b.predict(X))
    off = oocgbdt.train(dict(objective="regression", n_estimators=10, feature_screening="ema",
                             screening_warmup=2, screening_ratio=0.3, enable_bundle=False), X, y,
                        verbose=False)
    np.testing.assert_allclose(off.predict(X), b.predict(X), rtol=1e-9)


def test_two_workers_row_sets_lazy_bundles_and_log(shared_data, tmp_path, monkeypatch, caplog):
    """Bundled training on two workers (client-side loop, histograms on workers) equals the
    in-process model; the row-set counting used for very wide data finds the same bundles;
    X_bundled as a lazy map_blocks matches what training holds; one EFB log line."""
    import logging

    import dask.array as da
    from distributed import Client, LocalCluster

    from oocgbdt.core import bundler as bundler_mod
    from oocgbdt.dask.binning import fit_bin_mapper
    from oocgbdt.dask.bundling import fit_bundler
    from oocgbdt.kernels.bundling import decode_feature_column
    from oocgbdt.params import resolve_params

    X, y = _svm(shared_data / "agaricus" / "agaricus.txt.train", 126)
    X = X.toarray()
    params = dict(objective="binary", n_estimators=4, num_leaves=8, chunk_rows=1000)
    with caplog.at_level(logging.INFO, logger="oocgbdt"):
        local = oocgbdt.train(params, X, y, verbose=False)
    assert [r.getMessage() for r in caplog.records if r.getMessage().startswith("EFB:")] == [
        local.bundle_report["summary"]]
    assert local.bundle_report["summary"].startswith("EFB: 126 features -> 21 bundles")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cl, Client(cl) as c:
        Xd = da.from_array(X, chunks=(1000, 126))
        remote = oocgbdt.train(params, Xd, da.from_array(y, chunks=1000), client=c, verbose=False)
    assert remote == local

    p = resolve_params(params)
    Xd = da.from_array(X, chunks=(1000, 126))
    compute = lambda a: a.compute(scheduler="threads")
    bm = fit_bin_mapper(Xd, p, compute)
    counted = fit_bundler(Xd, bm, p, compute)
    monkeypatch.setattr(bundler_mod, "DENSE_COUNTS_BYTES", 0)  # as for F > 8192
    rows = fit_bundler(Xd, bm, p, compute)
    assert [b.tolist() for b in rows.bundles_] == [b.tolist() for b in counted.bundles_]
    assert rows.sample_conflicts_ is None and counted.sample_conflicts_ == 0

    Xb = _bundle_blocks(Xd, bm, counted)
    assert Xb.shape == (X.shape[0], 21) and Xb.dtype == np.uint8 and Xb.chunks[0] == Xd.chunks[0]
    cols = Xb.compute()
    for f in (0, 2, 33, 125):  # decoding a feature from its bundle gives its bins
        out = np.empty(X.shape[0], np.uint8)
        decode_feature_column(cols[:, counted.feature_bundle_[f]], counted.feature_start_[f],
                              bm.n_bins_[f], bm.default_bins_[f], counted.feature_raw_[f], out)
        np.testing.assert_array_equal(out, bm.transform(X)[:, f])
    assert _count_lost_values(Xd, bm, counted).compute().tolist() == [0, 0]


@pytest.mark.parametrize("extra", [dict(data_sample_strategy="goss"),
                                   dict(bagging_fraction=0.5, bagging_freq=1),
                                   dict(feature_screening="ema", screening_warmup=2)],
                         ids=["goss", "bagging", "ema-fs"])
def test_bundling_composes_with_row_sampling_and_screening(shared_data, extra):
    """GOSS and bagging pick rows from gradients and seeds only, and screening builds a bundle
    when any member is selected: bundling on and off still give the same model on a9a."""
    X, y = _svm(shared_data / "a9a" / "a9a", 123)
    X, y = X[:16000].toarray(), (y[:16000] > 0).astype(np.float64)
    # learning_rate 0.5: GOSS samples from round int(1 / 0.5) = 2 on
    p = dict(objective="binary", n_estimators=6, learning_rate=0.5, chunk_rows=4000, **extra)
    on = oocgbdt.train(p, X, y, verbose=False)
    off = oocgbdt.train(dict(p, enable_bundle=False), X, y, verbose=False)
    _same_models(on, off, X)


def _fit_both_ways(Xd, params, monkeypatch=None):
    """fit_bundler, and FeatureBundler.fit on the counts conflict_counts gives (the full path);
    plus whether fit_bundler read X again."""
    import oocgbdt.dask.bundling as dask_bundling
    from oocgbdt.core.bundler import FeatureBundler
    from oocgbdt.dask.binning import fit_bin_mapper
    from oocgbdt.params import resolve_params

    p = resolve_params(params)
    compute = lambda a: a.compute(scheduler="threads")
    bm = fit_bin_mapper(Xd, p, compute)
    calls = []
    real = dask_bundling.conflict_counts
    monkeypatch.setattr(dask_bundling, "conflict_counts", lambda *a, **k: calls.append(1) or real(*a, **k))
    fast = dask_bundling.fit_bundler(Xd, bm, p, compute)
    counts = real(Xd, bm, p, compute)
    full = FeatureBundler(float(p["max_conflict_rate"])).fit(counts, bm.n_bins_, bm.default_bins_,
                                                              bm.is_trivial_)
    return fast, full, bool(calls), bm, counts


def _same_bundler(a, b):
    assert a.to_dict() == b.to_dict()
    for name in ("feature_bundle_", "feature_start_", "feature_raw_", "bundle_n_bins_",
                 "bundle_offsets_", "bundle_fill_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.dtype_ == b.dtype_


@pytest.mark.parametrize("params", [dict(), dict(max_conflict_rate=0.3), dict(max_bin=1000),
                                    dict(bin_construct_sample_cnt=700, seed=3)])
def test_dense_data_skips_the_conflict_pass_with_the_same_bundler(monkeypatch, params):
    """Dense continuous columns (some with NaNs, some with many zeros, one constant): the bin
    mapper's counts prove no bundle is possible, fit_bundler does not read X again, and its
    bundler is the one the full conflict count gives; in row-set mode (very wide data) too."""
    import dask.array as da

    from oocgbdt.core import bundler as bundler_mod

    rng = np.random.default_rng(0)
    n = 3000
    X = rng.normal(size=(n, 12)).astype(np.float32)
    X[rng.random((n, 12)) < 0.05] = np.nan
    X[:, 3] = np.where(rng.random(n) < 0.4, 0.0, X[:, 3])  # 60% off the zero bin: still dense
    X[:, 7] = 5.0  # trivial
    Xd = da.from_array(X, chunks=(700, 12))
    fast, full, read_x, bm, counts = _fit_both_ways(Xd, params, monkeypatch)
    assert not read_x
    np.testing.assert_array_equal(bm.sample_nondefault_counts_, counts.nnz)
    _same_bundler(fast, full)
    assert all(len(b) == 1 for b in fast.bundles_) and fast.n_bundles == 11
    monkeypatch.setattr(bundler_mod, "DENSE_COUNTS_BYTES", 0)  # as for F > 8192
    fast, full, read_x, _, _ = _fit_both_ways(Xd, params, monkeypatch)
    assert not read_x and fast.sample_conflicts_ is None
    _same_bundler(fast, full)


@pytest.mark.parametrize("params", [dict(), dict(max_conflict_rate=0.1), dict(bin_construct_sample_cnt=500)])
def test_sparse_one_hot_data_bundles_as_before(monkeypatch, params):
    """One-hot columns (dense and sparse chunks): bundling is possible, so the conflicts are
    counted, and the bundles are those of the full count."""
    import dask.array as da
    import scipy.sparse as sp

    rng = np.random.default_rng(1)
    n = 2000
    levels = rng.integers(0, 6, size=(n, 4))
    X = np.zeros((n, 24), dtype=np.float32)
    for a in range(4):
        X[np.arange(n), 6 * a + levels[:, a]] = 1.0
    X = np.concatenate([X, rng.normal(size=(n, 2)).astype(np.float32)], axis=1)
    for Xd in (da.from_array(X, chunks=(500, 26)),
               da.from_array(sp.csr_matrix(X), chunks=(500, 26), asarray=False)):
        fast, full, read_x, bm, counts = _fit_both_ways(Xd, params, monkeypatch)
        assert read_x
        _same_bundler(fast, full)
        assert any(len(b) > 1 for b in fast.bundles_)
        np.testing.assert_array_equal(bm.sample_nondefault_counts_, counts.nnz)


def test_no_skip_without_the_mappers_counts_of_this_sample(monkeypatch):
    """A mapper fitted on other rows, rebuilt from a dict, or float64 input: the counts are not
    trusted and the conflicts are counted."""
    import dask.array as da

    import oocgbdt.dask.bundling as dask_bundling
    from oocgbdt.core.bin_mapper import BinMapper
    from oocgbdt.dask.binning import fit_bin_mapper
    from oocgbdt.params import resolve_params

    rng = np.random.default_rng(2)
    X = rng.normal(size=(1000, 5)).astype(np.float32)
    p = resolve_params({})
    compute = lambda a: a.compute(scheduler="threads")
    Xd = da.from_array(X, chunks=(300, 5))
    bm = fit_bin_mapper(Xd, p, compute)
    other = da.from_array(X[::-1].copy(), chunks=(300, 5))
    assert dask_bundling.sample_nondefault_counts(Xd, bm, p) is not None
    assert dask_bundling.sample_nondefault_counts(other, bm, p) is None
    assert dask_bundling.sample_nondefault_counts(
        Xd, bm, dict(p, data_random_seed=p["data_random_seed"] + 1)) is None
    assert dask_bundling.sample_nondefault_counts(Xd, BinMapper.from_dict(bm.to_dict()), p) is None
    X64 = da.from_array(X.astype(np.float64), chunks=(300, 5))  # its own sample and mapper
    assert dask_bundling.sample_nondefault_counts(X64, fit_bin_mapper(X64, p, compute), p) is None
    calls = []
    real = dask_bundling.conflict_counts
    monkeypatch.setattr(dask_bundling, "conflict_counts", lambda *a, **k: calls.append(1) or real(*a, **k))
    dask_bundling.fit_bundler(other, bm, p, compute)
    assert calls


def _bundle_block(block, bin_mapper, bundler):
    from oocgbdt.core.bundler import bundle_chunk
    return bundle_chunk(block, bin_mapper, bundler)[0]


def _bundle_blocks(X, bin_mapper, bundler):
    """The bundles of every row chunk of ``X``, lazily: (n_samples, n_bundles), chunked as X."""
    return X.map_blocks(_bundle_block, bin_mapper=bin_mapper, bundler=bundler,
                        dtype=bundler.dtype_, chunks=(X.chunks[0], (bundler.n_bundles,)),
                        meta=np.empty((0, 0), dtype=bundler.dtype_))


def _lost_block(block, bin_mapper, bundler):
    from oocgbdt.core.bundler import bundle_chunk
    _, rows, values = bundle_chunk(block, bin_mapper, bundler)
    return np.array([[rows, values]], dtype=np.int64)


def _count_lost_values(X, bin_mapper, bundler):
    """Lazy ``[conflicting rows, lost values]`` of bundling all of ``X`` (int64, shape (2,))."""
    per_chunk = X.map_blocks(_lost_block, bin_mapper=bin_mapper, bundler=bundler,
                             dtype=np.int64, chunks=((1,) * X.numblocks[0], (2,)),
                             meta=np.empty((0, 0), dtype=np.int64))
    return per_chunk.sum(axis=0)


def _conflicting_eval_data():
    """Training rows where features 0 and 1 never are non-zero together (bundled with
    max_conflict_rate=0), and eval rows where a third of the rows have both non-zero."""
    rng = np.random.default_rng(7)

    def rows(n, both_share):
        X = np.zeros((n, 3), np.float32)
        level = rng.integers(0, 3, size=n)
        both = rng.random(n) < both_share
        X[(level == 1) | both, 0] = rng.normal(size=((level == 1) | both).sum()) + 3
        X[(level == 2) | both, 1] = rng.normal(size=((level == 2) | both).sum()) - 3
        X[:, 2] = rng.normal(size=n)
        y = (2 * X[:, 0] - 3 * X[:, 1] + X[:, 2] + 0.1 * rng.normal(size=n)).astype(np.float32)
        return X, y

    (X, y), (Xe, ye) = rows(2000, 0.0), rows(400, 0.3)
    return X, y, Xe, ye


_EVAL_PARAMS = dict(objective="regression", num_leaves=7, learning_rate=0.1, min_data_in_leaf=5,
                    max_bin=63, chunk_rows=1000)


@pytest.mark.parametrize("cache", ["memory", "disk"])
def test_eval_rows_with_two_values_in_one_bundle(cache, tmp_path):
    """An eval row with two non-zero features of one training bundle is scored on both values:
    the per-round eval l2 equals LightGBM's (its validation data is binned per feature) and the
    l2 of Booster.predict after each round."""
    import lightgbm as lgb

    X, y, Xe, ye = _conflicting_eval_data()
    rounds = 6
    p = dict(_EVAL_PARAMS, n_estimators=rounds, cache=cache)
    if cache == "disk":
        p["cache_path"] = str(tmp_path / "cache")
    b = oocgbdt.train(p, X, y, eval_set=[(Xe, ye)], verbose=False)
    assert [0, 1] in b.bundles_
    assert ((Xe[:, :2] != 0).sum(axis=1) == 2).sum() > 50  # the conflicting eval rows
    got = np.asarray(b.evals_result["valid_0"]["l2"])

    lp = {k: v for k, v in _EVAL_PARAMS.items() if k != "chunk_rows"}
    train = lgb.Dataset(X, y, params=dict(max_bin=63, verbose=-1))
    res = {}
    lgb.train(dict(lp, verbose=-1), train, rounds,
              valid_sets=[lgb.Dataset(Xe, ye, reference=train)], valid_names=["v"],
              callbacks=[lgb.record_evaluation(res)])
    np.testing.assert_allclose(got, res["v"]["l2"], rtol=1e-12)
    by_predict = [np.mean((b.predict(Xe, num_iteration=k) - ye.astype(np.float64)) ** 2)
                  for k in range(1, rounds + 1)]
    np.testing.assert_allclose(got, by_predict, rtol=1e-12)


def test_eval_rows_with_two_values_in_one_bundle_on_two_workers():
    """The same eval scores with the eval partitions held by two workers."""
    import dask.array as da
    from distributed import Client, LocalCluster

    X, y, Xe, ye = _conflicting_eval_data()
    p = dict(_EVAL_PARAMS, n_estimators=4)
    local = oocgbdt.train(p, X, y, eval_set=[(Xe, ye)], verbose=False)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cl, Client(cl) as c:
        remote = oocgbdt.train(p, da.from_array(X, chunks=(1000, 3)), da.from_array(y, chunks=1000),
                               eval_set=[(da.from_array(Xe, chunks=(200, 3)),
                                          da.from_array(ye, chunks=200))],
                               client=c, verbose=False)
    assert remote == local
    assert remote.evals_result == local.evals_result
    by_predict = [np.mean((local.predict(Xe, num_iteration=k) - ye.astype(np.float64)) ** 2)
                  for k in range(1, 5)]
    np.testing.assert_allclose(local.evals_result["valid_0"]["l2"], by_predict, rtol=1e-12)


def test_conflicts_outside_the_bin_sample_warn_and_unbundled_trees_stay_lightgbms():
    """Sparse features that never share a row in a 300-row bin sample of 6,000 rows but do in
    the other rows: with the default max_conflict_rate=0 the bundles lose values there, which
    is reported (a warning naming the remedies, the lost values in bundle_report). With
    enable_bundle=False the trees are LightGBM's on the same sample; with a sample of every row,
    nothing is lost and bundled trees are LightGBM's too."""
    import warnings

    import scipy.sparse as sp
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(5)
    X = sp.random(6000, 40, density=0.08, random_state=1, format="csr", dtype=np.float32)
    X.data = np.round(X.data * 10) + 1
    y = (np.asarray(X[:, :5].sum(1)).ravel() + rng.normal(size=6000) > 3).astype(float)

    def lightgbm_raw(p):
        model = lgb.train(dict(p, deterministic=True, num_threads=1, verbose=-1),
                          lgb.Dataset(X, y), num_boost_round=4)
        return model.predict(X, raw_score=True)

    p = dict(objective="binary", num_leaves=7, bin_construct_sample_cnt=300)
    with pytest.warns(UserWarning, match=r"enable_bundle: \d+ values .* bin_construct_sample_cnt"):
        bundled = oocgbdt.train(dict(p, n_estimators=4), X, y, verbose=False)
    assert bundled.bundle_report["lost_values"] > 0
    theirs = lightgbm_raw(p)
    exact = oocgbdt.train(dict(p, n_estimators=4, enable_bundle=False), X, y, verbose=False)
    np.testing.assert_allclose(exact.predict(X, raw_score=True), theirs, rtol=0,
                               atol=1e-12 * np.abs(theirs).max())
    p_all = dict(p, bin_construct_sample_cnt=6000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        every_row = oocgbdt.train(dict(p_all, n_estimators=4), X, y, verbose=False)
    assert every_row.bundle_report["lost_values"] == 0
    theirs_all = lightgbm_raw(p_all)
    np.testing.assert_allclose(every_row.predict(X, raw_score=True), theirs_all, rtol=0,
                               atol=1e-12 * np.abs(theirs_all).max())
