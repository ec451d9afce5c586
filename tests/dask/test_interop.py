"""Continued training (``init_model``) and lazy explanations: a fit continued from a model
equals one longer fit bit for bit (the longer fit is the oracle), in process and on two
workers; lazy ``pred_contrib``/``pred_leaf`` equal the NumPy results."""
import dask.array as da
import numpy as np
import pytest

import oocgbdt
from oocgbdt import GBDTClassifier

#: Bagging, feature screening and a GOSS-free run: the random streams keyed by round and the
#: screening state must carry over for the trees to be the same.
RANDOM = dict(bagging_fraction=0.7, bagging_freq=2, feature_screening="ema",
              screening_warmup=2, screening_ratio=0.5)


def _data(n=2000, f=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) + 0.5 * X[:, 1] + rng.normal(size=n) > 0).astype(float)
    return X, y


def _same(a, b):
    assert len(a.trees) == len(b.trees)
    assert a.trees == b.trees
    assert np.array_equal(a.init_score, b.init_score)


#: LightGBM's own streams: the bagging generators jump to the model's round, and the
#: feature_fraction stream is replayed past the model's trees.
LIGHTGBM_STREAMS = dict(bagging_fraction=0.7, bagging_freq=2, feature_fraction=0.5)


@pytest.mark.parametrize("extra", [{}, RANDOM, LIGHTGBM_STREAMS])
def test_continued_fit_equals_one_longer_fit_in_process(extra, tmp_path):
    X, y = _data()
    Xe, ye = X[:400], y[:400]
    p = dict(objective="binary", num_leaves=8, verbose=False, **extra)
    full = oocgbdt.train(dict(p, n_estimators=12), X, y, eval_set=[(Xe, ye)])
    first = oocgbdt.train(dict(p, n_estimators=6), X, y, eval_set=[(Xe, ye)])
    again = oocgbdt.train(dict(p, n_estimators=6), X, y, eval_set=[(Xe, ye)], init_model=first)
    _same(full, again)
    assert again.evals_result["valid_0"] == {
        m: v[6:] for m, v in full.evals_result["valid_0"].items()}
    if extra:
        assert [h.tolist() for h in again.screening_history_] == \
            [h.tolist() for h in full.screening_history_]
    # from files: oocgbdt's JSON, and LightGBM's text (the initial score folded into the
    # first trees gives the same raw scores, so the same continuation; the text has no
    # feature screening state, so only without screening)
    for fmt in ("json", "lightgbm") if not extra else ("json",):
        path = first.save_model(tmp_path / f"first.{fmt}", format=fmt)
        cont = oocgbdt.train(dict(p, n_estimators=6), X, y, init_model=str(path))
        assert cont.trees[6:] == full.trees[6:]
        assert np.array_equal(cont.predict(X, raw_score=True), full.predict(X, raw_score=True))


def test_continued_fit_equals_one_longer_fit_on_two_workers():
    from distributed import Client, LocalCluster
    X, y = _data(n=1600, seed=1)
    Xd = da.from_array(X, chunks=(400, -1))
    yd = da.from_array(y, chunks=400)
    p = dict(objective="binary", num_leaves=8, verbose=False, **RANDOM)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        full = oocgbdt.train(dict(p, n_estimators=8), Xd, yd, client=client)
        first = oocgbdt.train(dict(p, n_estimators=4), Xd, yd, client=client)
        again = oocgbdt.train(dict(p, n_estimators=4), Xd, yd, client=client, init_model=first)
        _same(full, again)
        # lazy explanations on the cluster equal the NumPy ones
        contrib = full.predict(Xd, pred_contrib=True)
        assert isinstance(contrib, da.Array)
        assert np.array_equal(client.compute(contrib).result(), full.predict(X, pred_contrib=True))


def test_estimator_continues_an_estimator():
    X, y = _data(seed=2)
    full = GBDTClassifier(n_estimators=8, num_leaves=8).fit(X, y)
    first = GBDTClassifier(n_estimators=4, num_leaves=8).fit(X, y)
    again = GBDTClassifier(n_estimators=4, num_leaves=8).fit(X, y, init_model=first)
    _same(full.booster_, again.booster_)
    assert np.array_equal(again.predict_proba(X), full.predict_proba(X))
    # LightGBM's prediction keywords through the estimator
    assert np.array_equal(again.predict(X, raw_score=True), full.booster_.predict(X, raw_score=True))
    assert again.predict(X, pred_contrib=True).shape == (X.shape[0], X.shape[1] + 1)
    with pytest.raises(ValueError, match="features"):
        GBDTClassifier(n_estimators=2).fit(X[:, :3], y, init_model=first)


def test_init_model_of_another_kind_is_refused_before_training():
    X, y = _data(n=300)
    with pytest.raises(TypeError, match="init_model must be"):
        oocgbdt.train(dict(objective="binary", n_estimators=2), X, y, init_model=42)
    reg = oocgbdt.train(dict(objective="regression", n_estimators=2, verbose=False), X, y)
    with pytest.raises(ValueError, match="tree\\(s\\) per round"):
        oocgbdt.train(dict(objective="multiclass", num_class=3, n_estimators=2),
                      X, np.arange(300) % 3, init_model=reg)


@pytest.mark.parametrize("num_class", [1, 3])
def test_lazy_leaves_and_contributions_equal_numpy(num_class):
    X, y = _data(n=900, seed=3)
    params = dict(objective="binary") if num_class == 1 else dict(objective="multiclass",
                                                                   num_class=3)
    labels = y if num_class == 1 else np.arange(900) % 3.0
    booster = oocgbdt.train(dict(params, n_estimators=3, num_leaves=6, verbose=False), X, labels)
    Xd = da.from_array(X, chunks=(250, 3))  # column chunks are joined
    for kw in (dict(pred_leaf=True), dict(pred_contrib=True), dict(raw_score=True),
               dict(raw_score=True, start_iteration=1, num_iteration=1)):
        lazy = booster.predict(Xd, **kw)
        assert isinstance(lazy, da.Array)
        out = lazy.compute(scheduler="sync")
        ref = booster.predict(X, **kw)
        assert out.dtype == ref.dtype and lazy.dtype == ref.dtype
        assert np.array_equal(out, ref)


@pytest.mark.parametrize("kind", ["sparse", "disk cache"])
def test_continued_fit_on_sparse_rows_and_the_disk_cache(kind):
    import scipy.sparse as sp
    rng = np.random.default_rng(4)
    if kind == "sparse":
        X = sp.random(1500, 30, density=0.1, random_state=4, format="csr", dtype=np.float32)
        y = (np.asarray(X[:, :4].sum(axis=1)).ravel() + rng.normal(size=1500) * 0.1 > 0.2)
        extra = {}
    else:
        X, y = _data(n=1500, seed=4)
        extra = dict(cache="disk")
    y = np.asarray(y, dtype=float)
    p = dict(objective="binary", num_leaves=8, verbose=False, **extra)
    full = oocgbdt.train(dict(p, n_estimators=6), X, y)
    first = oocgbdt.train(dict(p, n_estimators=3), X, y)
    again = oocgbdt.train(dict(p, n_estimators=3), X, y, init_model=first)
    _same(full, again)
