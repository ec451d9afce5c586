"""The scikit-learn estimators: scikit-learn's own estimator checks, labels, lazy Dask
prediction, model selection, pickling, cluster vs in-process training, and parity with
LightGBM's LGBMRegressor / LGBMClassifier on real data."""
import pickle
import re

import dask
import dask.array as da
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV
from sklearn.utils.estimator_checks import parametrize_with_checks

from oocgbdt import GBDTClassifier, GBDTRegressor
from tests.conftest import load_lightgbm_tsv

# ---------------------------------------------------------------------------------------------
# scikit-learn's estimator checks
# ---------------------------------------------------------------------------------------------

# n_estimators=10 only keeps the ~120 checks fast (each check fits a few times); the checks are
# about the estimator contract, not about model quality, and the defaults go through the same
# code. Every check passes, so ``expected_failed_checks`` is empty. Note on
# check_sample_weight_equivalence_on_dense_data: it passes, but only because its 15-row data
# set cannot be split under min_child_samples=20 (the model is the weighted label average).
# With splits, integer weights are NOT equivalent to repeated rows, as in LightGBM: bins are
# found on unweighted rows and min_child_samples counts rows, not weight.


def _expected_failed_checks(estimator):
    """{check name: reason} of checks marked xfail; none: every check passes."""
    return {}


@parametrize_with_checks([GBDTRegressor(n_estimators=10), GBDTClassifier(n_estimators=10)],
                         expected_failed_checks=_expected_failed_checks)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# ---------------------------------------------------------------------------------------------
# helpers and fixtures
# ---------------------------------------------------------------------------------------------


def _classification(n=600, f=5, n_classes=2, seed=0):
    """Separable-ish synthetic classes from the sign pattern of two features."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f)).astype(np.float32)
    score = X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=n)
    edges = np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1])
    return X, np.searchsorted(edges, score)


def _regression(n=600, f=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f)).astype(np.float32)
    y = X[:, 0] - 2 * X[:, 1] ** 2 + 0.1 * rng.normal(size=n)
    return X, y


@pytest.fixture(scope="module")
def cluster():
    """A small in-process cluster whose client is NOT the default client.

    Not the default, so that estimators given NumPy input without ``client=`` still train
    in-process; tests pass ``client=`` explicitly.
    """
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                      dashboard_address=":0") as lc, Client(lc, set_as_default=False) as c:
        yield c


# ---------------------------------------------------------------------------------------------
# labels
# ---------------------------------------------------------------------------------------------

LABEL_SETS = {
    "binary-int": np.array([3, 7]),
    "binary-str": np.array(["no", "yes"]),
    "multi-int": np.array([-1, 2, 5]),
    "multi-str": np.array(["cat", "ant", "bee", "dog"]),  # not sorted on purpose
}


@pytest.mark.parametrize("kind", list(LABEL_SETS))
def test_classifier_returns_original_labels(kind):
    labels = LABEL_SETS[kind]
    X, idx = _classification(n_classes=len(labels))
    y = labels[idx]
    clf = GBDTClassifier(n_estimators=20).fit(X, y)

    np.testing.assert_array_equal(clf.classes_, np.sort(labels))
    assert clf.n_classes_ == len(labels)
    pred = clf.predict(X)
    assert pred.dtype == clf.classes_.dtype
    assert set(pred) <= set(labels)
    assert np.mean(pred == y) > 0.8
    proba = clf.predict_proba(X)
    assert proba.shape == (len(y), len(labels))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(pred, clf.classes_[np.argmax(proba, axis=1)])

    # The labels are only names: the same model as training on their positions in classes_.
    codes = np.searchsorted(clf.classes_, y)
    ref = GBDTClassifier(n_estimators=20).fit(X, codes)
    np.testing.assert_array_equal(ref.predict_proba(X), proba)


def test_lazy_label_helpers_equal_numpy_on_the_whole_array():
    """The estimators' lazy label handling (oocgbdt.dask.inputs.map_rows, distinct_values)
    gives, per row chunk, what NumPy gives on the whole array (the oracle): irregular row
    chunks, and a 2-D input split into column chunks (an argmax over part of a row's columns
    would pick wrong labels)."""
    from functools import partial

    from oocgbdt.dask.inputs import distinct_values, map_rows

    rng = np.random.default_rng(0)
    labels = rng.choice(np.array(["dog", "ant", "cat"]), size=23)
    y = da.from_array(labels, chunks=((3, 12, 8),))
    np.testing.assert_array_equal(distinct_values(y), np.unique(labels))
    np.testing.assert_array_equal(distinct_values(list(labels)), np.unique(labels))

    p = rng.random(23)
    two = map_rows(lambda b: np.column_stack([1.0 - b, b]), da.from_array(p, chunks=((5, 10, 8),)),
                   dtype=np.float64, n_columns=2)
    assert two.chunks == ((5, 10, 8), (2,))
    np.testing.assert_array_equal(two.compute(), np.column_stack([1.0 - p, p]))

    P = rng.random((23, 4))
    argmax = partial(np.argmax, axis=1)
    picked = map_rows(argmax, da.from_array(P, chunks=(6, 2)), dtype=np.int64)
    assert picked.chunks == ((6, 6, 6, 5),)
    np.testing.assert_array_equal(picked.compute(), np.argmax(P, axis=1))
    np.testing.assert_array_equal(map_rows(argmax, P, dtype=np.int64), np.argmax(P, axis=1))


# ---------------------------------------------------------------------------------------------
# Dask input: lazy prediction, cluster vs in-process
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("task", ["regression", "binary", "multiclass"])
def test_dask_input_gives_lazy_predictions_equal_to_numpy(task, cluster):
    if task == "regression":
        X, y = _regression()
        est = GBDTRegressor(n_estimators=10, chunk_rows=200)
    else:
        X, y = _classification(n_classes=2 if task == "binary" else 3)
        if task == "binary":
            y = np.array(["neg", "pos"])[y]  # string labels in a Dask array
        est = GBDTClassifier(n_estimators=10, chunk_rows=200)
    Xd, yd = da.from_array(X, chunks=(200, -1)), da.from_array(y, chunks=200)
    est.fit(Xd, yd, client=cluster)
    assert est.n_features_in_ == X.shape[1]

    methods = ["predict"] + (["predict_proba"] if task != "regression" else [])
    for method in methods:
        lazy = getattr(est, method)(Xd)
        assert dask.is_dask_collection(lazy), method
        eager = getattr(est, method)(X)
        assert isinstance(eager, np.ndarray)
        assert lazy.shape == eager.shape
        np.testing.assert_array_equal(lazy.compute(), eager)
    if task == "binary":
        np.testing.assert_array_equal(est.classes_, ["neg", "pos"])


@pytest.mark.parametrize("Est", [GBDTRegressor, GBDTClassifier])
def test_cluster_training_equals_in_process_training(Est, cluster):
    """Same data, same chunking (chunk_rows == the Dask chunks): the same model."""
    X, y = _regression() if Est is GBDTRegressor else _classification(n_classes=3)
    params = dict(n_estimators=10, num_leaves=7, chunk_rows=150)
    # NumPy, no client: in-process threads. An in-process cluster's worker may have registered
    # a default client in this process, which ``train`` would find: hide it.
    from unittest import mock

    import oocgbdt.dask.training as training
    with mock.patch.object(training, "find_client", lambda client=None: client):
        local = Est(**params).fit(X, y)
    on_numpy = Est(**params).fit(X, y, client=cluster)
    on_dask = Est(**params).fit(da.from_array(X, chunks=(150, -1)), da.from_array(y, chunks=150),
                                client=cluster)
    assert local.booster_ == on_numpy.booster_ == on_dask.booster_
    for other in (on_numpy, on_dask):
        np.testing.assert_array_equal(other.predict(X), local.predict(X))


# ---------------------------------------------------------------------------------------------
# model selection and pickling
# ---------------------------------------------------------------------------------------------


def test_clone_and_grid_search_over_num_leaves():
    X, y = _regression(n=400)
    est = GBDTRegressor(n_estimators=10, num_leaves=5, learning_rate=0.2)
    copy = clone(est)
    assert copy.get_params() == est.get_params()
    search = GridSearchCV(est, {"num_leaves": [2, 15]}, cv=3).fit(X, y)
    assert search.best_params_["num_leaves"] in (2, 15)
    assert search.best_estimator_.num_leaves == search.best_params_["num_leaves"]
    assert search.best_estimator_.learning_rate == 0.2
    assert not hasattr(est, "booster_")  # the search fitted clones only
    # 15 leaves fit y = x0 - 2 x1^2 better than stumps
    assert search.best_params_["num_leaves"] == 15

    Xc, yc = _classification(n=400, n_classes=3)
    search = GridSearchCV(GBDTClassifier(n_estimators=10), {"num_leaves": [2, 7]}, cv=3)
    assert search.fit(Xc, yc).best_estimator_.predict(Xc).shape == (400,)


# ---------------------------------------------------------------------------------------------
# row sampling (bagging, GOSS), histogram_pool_size and partition_rows
# ---------------------------------------------------------------------------------------------

#: The new parameters with LightGBM's scikit-learn defaults (histogram_pool_size and
#: partition_rows: LightGBM's "no bound" and oocgbdt's "chosen from the data").
SAMPLING_DEFAULTS = dict(subsample=1.0, subsample_freq=0, data_sample_strategy="bagging",
                         top_rate=0.2, other_rate=0.1, histogram_pool_size=-1.0,
                         partition_rows=None)
SAMPLING_SET = dict(subsample=0.7, subsample_freq=3, data_sample_strategy="goss", top_rate=0.3,
                    other_rate=0.25, histogram_pool_size=2.5, partition_rows=1000)


@pytest.mark.parametrize("Est", [GBDTRegressor, GBDTClassifier])
def test_sampling_params_defaults_clone_and_set_params(Est):
    est = Est()
    params = est.get_params()
    for name, default in SAMPLING_DEFAULTS.items():
        assert params[name] == default and type(params[name]) is type(default), name

    est = Est(**SAMPLING_SET)
    copy = clone(est)
    assert copy is not est and copy.get_params() == est.get_params()
    assert {k: copy.get_params()[k] for k in SAMPLING_SET} == SAMPLING_SET

    est = Est().set_params(**SAMPLING_SET)
    assert {k: getattr(est, k) for k in SAMPLING_SET} == SAMPLING_SET
    est.set_params(**SAMPLING_DEFAULTS)
    assert {k: est.get_params()[k] for k in SAMPLING_DEFAULTS} == SAMPLING_DEFAULTS


def _independent(Est, X, y, params):
    """The same model through oocgbdt.train, with LightGBM's names (y as the codes of classes_)."""
    import oocgbdt
    if Est is GBDTRegressor:
        return oocgbdt.train(dict(params, objective="regression"), X, y, verbose=False)
    codes = np.searchsorted(np.unique(y), y)
    return oocgbdt.train(dict(params, objective="binary"), X, codes, verbose=False)


def _predict(est, X):
    return est.predict(X) if isinstance(est, GBDTRegressor) else est.predict_proba(X)[:, 1]


# learning_rate 0.5: GOSS starts after int(1 / learning_rate) = 2 rounds, so 8 of 10 sample.
SAMPLING_BASE = dict(n_estimators=10, num_leaves=7, learning_rate=0.5, chunk_rows=150)


@pytest.mark.parametrize("Est", [GBDTRegressor, GBDTClassifier])
@pytest.mark.parametrize("sampling", ["bagging", "goss"])
def test_sampling_equals_train_with_lightgbm_names(Est, sampling):
    """subsample/subsample_freq are bagging_fraction/bagging_freq, and random_state is the seed
    (which derives bagging_seed as LightGBM); GOSS's rates pass through unchanged."""
    X, y = _regression() if Est is GBDTRegressor else _classification()
    if sampling == "bagging":
        ours, theirs = dict(subsample=0.5, subsample_freq=1), dict(bagging_fraction=0.5,
                                                                   bagging_freq=1)
    else:
        ours = dict(data_sample_strategy="goss", top_rate=0.3, other_rate=0.2)
        theirs = dict(data_sample_strategy="goss", top_rate=0.3, other_rate=0.2)
    est = Est(**SAMPLING_BASE, **ours, random_state=7).fit(X, y)
    ref = _independent(Est, X, y, dict(SAMPLING_BASE, **theirs, seed=7))
    assert est.booster_ == ref
    np.testing.assert_array_equal(_predict(est, X), ref.predict(X))

    # Sampling reached training: the unsampled model, and another seed, give other models.
    plain = Est(**SAMPLING_BASE, random_state=7).fit(X, y)
    other_seed = Est(**SAMPLING_BASE, **ours, random_state=8).fit(X, y)
    assert not np.array_equal(_predict(plain, X), _predict(est, X))
    assert not np.array_equal(_predict(other_seed, X), _predict(est, X))
    # random_state=None gives no seed, as LightGBM's estimators: the seeds keep their defaults
    default_seed = Est(**SAMPLING_BASE, **ours).fit(X, y)
    assert default_seed.booster_ == _independent(Est, X, y, dict(SAMPLING_BASE, **theirs))


def test_histogram_pool_size_and_partition_rows_reach_training():
    X, y = _regression()
    params = dict(SAMPLING_BASE, num_leaves=15)
    est = GBDTRegressor(**params, histogram_pool_size=1e-4, partition_rows=300).fit(X, y)
    ref = _independent(GBDTRegressor, X, y, dict(params, histogram_pool_size=1e-4,
                                                 partition_rows=300))
    np.testing.assert_array_equal(est.predict(X), ref.predict(X))
    # 600 rows in chunks of 150 grouped by at least 300 rows: two partitions of 300
    assert est.booster_.cache_report["partition_rows"]["train"] == [300, 300]
    # a pool smaller than one histogram keeps none: both children of every split are
    # histogrammed, none derived by subtraction (an unbounded pool derives one per split)
    bounded = [s["n_hist_subtracted"] for s in est.booster_.tree_stats]
    free = GBDTRegressor(**params).fit(X, y).booster_
    assert sum(bounded) == 0 < sum(s["n_hist_subtracted"] for s in free.tree_stats)


BAD_SAMPLING = [
    (dict(top_rate=0), "top_rate"),
    (dict(other_rate=0.0, data_sample_strategy="goss"), "other_rate"),
    (dict(data_sample_strategy="goss", top_rate=0.7, other_rate=0.4), "top_rate + other_rate"),
    (dict(subsample=0), "'subsample'"),
    (dict(subsample=1.5, subsample_freq=1), "'subsample'"),
    (dict(subsample_freq=-1), "'subsample_freq'"),
    (dict(data_sample_strategy="gos"), "data_sample_strategy"),
    (dict(data_sample_strategy="goss", subsample=0.5, subsample_freq=1), "'subsample_freq'"),
    (dict(histogram_pool_size=float("nan")), "histogram_pool_size"),
    (dict(partition_rows=0), "partition_rows"),
]


@pytest.mark.parametrize("Est", [GBDTRegressor, GBDTClassifier])
@pytest.mark.parametrize("bad, named", BAD_SAMPLING, ids=[str(b) for b, _ in BAD_SAMPLING])
def test_bad_sampling_values_fail_before_training(Est, bad, named, monkeypatch):
    import oocgbdt.sklearn
    called = []
    monkeypatch.setattr(oocgbdt.sklearn, "train", lambda *a, **k: called.append(1))
    X, y = _regression(n=50) if Est is GBDTRegressor else _classification(n=50)
    # lazy y: the classifier would compute its labels first if validation came later
    yd = da.from_array(y, chunks=25).map_blocks(lambda b: called.append(2) or b, dtype=y.dtype,
                                                meta=np.empty((0,), dtype=y.dtype))
    with pytest.raises(ValueError, match=re.escape(named)):
        Est(**bad).fit(X, yd)
    assert called == []


def _holds_a_client(obj, seen=None):
    from distributed import Client
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return False
    seen.add(id(obj))
    if isinstance(obj, Client):
        return True
    if isinstance(obj, dict):
        return any(_holds_a_client(v, seen) for v in obj.values())
    if isinstance(obj, (list, tuple, set)):
        return any(_holds_a_client(v, seen) for v in obj)
    if hasattr(obj, "__dict__"):
        return _holds_a_client(vars(obj), seen)
    return False


@pytest.mark.parametrize("Est", [GBDTRegressor, GBDTClassifier])
def test_pickle_round_trip_without_client(Est, cluster):
    X, y = _regression() if Est is GBDTRegressor else _classification(n_classes=3)
    est = Est(n_estimators=10, chunk_rows=200).fit(da.from_array(X, chunks=(200, -1)),
                                                   da.from_array(y, chunks=200), client=cluster)
    assert not _holds_a_client(est)
    payload = pickle.dumps(est)
    assert b"distributed" not in payload  # no Client (nor any other distributed object)
    loaded = pickle.loads(payload)
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    if Est is GBDTClassifier:
        np.testing.assert_array_equal(loaded.predict_proba(X), est.predict_proba(X))
    assert loaded.get_params() == est.get_params()


def test_random_state_generator_gives_one_draw_of_the_seed():
    """A numpy Generator is one draw of the seed, as a RandomState is (LightGBM takes both)."""
    X, y = _regression()
    params = dict(n_estimators=5, subsample=0.5, subsample_freq=1)
    from_generator = GBDTRegressor(random_state=np.random.default_rng(7), **params).fit(X, y)
    seed = int(np.random.default_rng(7).integers(0, 2**31 - 1))
    from_int = GBDTRegressor(random_state=seed, **params).fit(X, y)
    other = GBDTRegressor(random_state=seed + 1, **params).fit(X, y)
    np.testing.assert_array_equal(from_generator.predict(X), from_int.predict(X))
    assert not np.array_equal(other.predict(X), from_int.predict(X))  # the seed matters here


# ---------------------------------------------------------------------------------------------
# parity with LightGBM on real data (../shared/data)
# ---------------------------------------------------------------------------------------------

PARITY = dict(n_estimators=50, num_leaves=15, learning_rate=0.1, min_child_samples=20)


def _lgbm(cls_name, **params):
    lgb = pytest.importorskip("lightgbm")
    return getattr(lgb, cls_name)(**params, enable_bundle=False, deterministic=True,
                                  n_jobs=1, verbose=-1)  # OpenMP spin-waits when CPUs are busy


def _n_splits(booster):
    return sum(t.n_leaves - 1 for t in booster.trees)


def test_regressor_matches_lgbmregressor(shared_data):
    """lightgbm_regression (HIGGS rows, 7,000 x 28): the same trees as LightGBM.

    The L2 objective has hessian 1, so LightGBM's hessian-estimated row counts are exact and
    every split decision is the same: predictions agree to float rounding and the split
    importances are equal.
    """
    X, y = load_lightgbm_tsv(shared_data / "lightgbm_regression" / "regression.train")
    Xt, _ = load_lightgbm_tsv(shared_data / "lightgbm_regression" / "regression.test")
    ours = GBDTRegressor(**PARITY).fit(X, y)
    theirs = _lgbm("LGBMRegressor", **PARITY).fit(X, y)
    np.testing.assert_allclose(ours.predict(Xt), theirs.predict(Xt), rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(ours.feature_importances_,
                                  theirs.booster_.feature_importance("split"))


def test_classifier_matches_lgbmclassifier_binary(shared_data):
    """lightgbm_binary (HIGGS rows, 7,000 x 28): the same trees as LightGBM, with
    min_child_samples=1 and with the default 20.

    Predictions agree to float rounding and split importances are equal. With 20, this holds
    because min_data_in_leaf is checked on LightGBM's hessian-estimated counts (see
    :mod:`oocgbdt.kernels.splitting`); with exact row counts one split near the 20-row
    boundary differed in tree 24.
    """
    X, y = load_lightgbm_tsv(shared_data / "lightgbm_binary" / "binary.train")
    Xt, yt = load_lightgbm_tsv(shared_data / "lightgbm_binary" / "binary.test")

    for params in (dict(PARITY, min_child_samples=1), PARITY):
        ours = GBDTClassifier(**params).fit(X, y)
        theirs = _lgbm("LGBMClassifier", **params).fit(X, y)
        np.testing.assert_allclose(ours.predict_proba(Xt), theirs.predict_proba(Xt), rtol=1e-6,
                                   atol=1e-9)
        np.testing.assert_array_equal(ours.feature_importances_,
                                      theirs.booster_.feature_importance("split"))
    p, q = ours.predict_proba(Xt), theirs.predict_proba(Xt)
    assert abs(roc_auc_score(yt, p[:, 1]) - roc_auc_score(yt, q[:, 1])) < 1e-9
    assert ours.feature_importances_.sum() == _n_splits(ours.booster_)


def test_classifier_matches_lgbmclassifier_multiclass(shared_data):
    """lightgbm_multiclass (7,000 x 28, 5 classes; probably synthetic, with a weak signal).

    All 50 rounds (250 trees) are LightGBM's: predictions agree to float rounding and split
    importances are equal. With exact row counts for min_data_in_leaf (before LightGBM's
    hessian-estimated counts were used) a split near the boundary differed in round 7, and with
    a weak signal the later trees differed a lot (prediction correlation ~0.94 after 50 rounds).
    """
    X, y = load_lightgbm_tsv(shared_data / "lightgbm_multiclass" / "multiclass.train")
    Xt, yt = load_lightgbm_tsv(shared_data / "lightgbm_multiclass" / "multiclass.test")
    ours = GBDTClassifier(**PARITY).fit(X, y)
    theirs = _lgbm("LGBMClassifier", **PARITY).fit(X, y)
    np.testing.assert_array_equal(ours.classes_, theirs.classes_)
    np.testing.assert_allclose(ours.predict_proba(Xt), theirs.predict_proba(Xt), rtol=1e-6,
                               atol=1e-9)
    np.testing.assert_array_equal(ours.feature_importances_,
                                  theirs.booster_.feature_importance("split"))
    assert ours.feature_importances_.sum() == _n_splits(ours.booster_)


def test_classifier_auc_mu_weights_as_lgbmclassifier(shared_data):
    """``auc_mu_weights`` sized for the classes the labels give (num_class is known only at
    fit): the eval metric is LGBMClassifier's, round by round."""
    X, y = load_lightgbm_tsv(shared_data / "lightgbm_multiclass" / "multiclass.train")
    params = dict(PARITY, n_estimators=3, metric="auc_mu", auc_mu_weights=list(range(25)))
    fit = dict(eval_set=[(X[1500:2100], y[1500:2100])], eval_names=["v"])
    ours = GBDTClassifier(**params).fit(X[:1500], y[:1500], **fit)
    theirs = _lgbm("LGBMClassifier", **params).fit(X[:1500], y[:1500], **fit)
    np.testing.assert_allclose(ours.evals_result_["v"]["auc_mu"],
                               theirs.evals_result_["v"]["auc_mu"], rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match=r"auc_mu_weights must have num_class\*\*2 = 25"):
        GBDTClassifier(**dict(params, auc_mu_weights=[1.0] * 9)).fit(X[:300], y[:300])


# ---------------------------------------------------------------------------------------------
# DataFrames with category and text columns
# ---------------------------------------------------------------------------------------------


def _table(n=600, seed=0):
    import pandas as pd
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "x": rng.normal(size=n),
        "shop": rng.choice(["north", "south", "east"], size=n),
        "tier": pd.Categorical(rng.choice(["gold", "silver", "bronze"], size=n),
                               categories=["gold", "silver", "bronze"]),
        "n": pd.array(rng.integers(0, 4, n), dtype="Int64"),
    })
    y = df["x"] + (df["shop"] == "east") * 2 + (df["tier"] == "gold") - 0.5
    return df, y.to_numpy()


@pytest.mark.parametrize("Est", [GBDTRegressor, GBDTClassifier])
def test_dataframe_with_text_columns_fits_and_predicts_by_value(Est):
    import pandas as pd
    df, y = _table()
    target = y if Est is GBDTRegressor else np.where(y > 0, "up", "down")
    est = Est(n_estimators=5, num_leaves=7).fit(df, target, eval_set=[(df.iloc[:100], target[:100])])
    assert list(est.feature_names_in_) == list(df.columns) == est.booster_.feature_names
    assert est.n_features_in_ == 4
    np.testing.assert_array_equal(est.feature_importances_,
                                  est.booster_.feature_importance("split"))
    assert est.booster_.pandas_categorical == [
        sorted(df["shop"].unique()), list(df["tier"].cat.categories)]
    other = df.copy()
    other["tier"] = other["tier"].cat.reorder_categories(["bronze", "gold", "silver"])
    other["shop"] = other["shop"].astype("category")  # text given as a category column
    np.testing.assert_array_equal(est.predict(other), est.predict(df))
    # Oracle for unseen values: the rows with the column missing, as NumPy codes.
    codes = np.column_stack([df["x"], pd.Categorical(df["shop"], categories=sorted(
        df["shop"].unique())).codes, df["tier"].cat.codes, df["n"].astype(float)])
    codes[:, 1] = np.nan
    unseen = df.assign(shop="west")
    np.testing.assert_array_equal(est.booster_.predict(unseen), est.booster_.predict(codes))
    with pytest.raises(ValueError, match="shop"):
        est.predict(df.drop(columns="shop"))


def test_dask_dataframe_fits_as_the_pandas_frame():
    import pandas as pd
    dd = pytest.importorskip("dask.dataframe")
    from distributed import Client, LocalCluster
    df, y = _table()
    labels = np.where(y > 0, "up", "down")
    local = GBDTClassifier(n_estimators=5, num_leaves=7).fit(df, labels)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as lc, Client(lc, set_as_default=False) as c:
        est = GBDTClassifier(n_estimators=5, num_leaves=7).fit(
            dd.from_pandas(df, npartitions=3), dd.from_pandas(pd.Series(labels), npartitions=3),
            client=c)
        assert list(est.feature_names_in_) == list(df.columns)
        assert est.booster_ == local.booster_
        lazy = est.predict(dd.from_pandas(df, npartitions=2))
        np.testing.assert_array_equal(lazy.compute(scheduler="sync"), local.predict(df))


def test_lightgbm_keywords_are_parameters_as_in_lgbmmodel(shared_data):
    """LightGBM's own names as keywords, as LGBMModel takes them: kept by get_params,
    set_params and clone, searched over by GridSearchCV, and training as LightGBM does with
    the same keywords (oracle: LGBMRegressor given them)."""
    est = GBDTRegressor(n_estimators=5, min_data_in_leaf=50, max_conflict_rate=0.0)
    assert est.get_params()["min_data_in_leaf"] == 50
    assert clone(est).get_params() == est.get_params()
    assert est.set_params(min_data_in_leaf=40).min_data_in_leaf == 40
    with pytest.raises(ValueError, match="Unknown parameter 'min_data_in_lef'"):
        GBDTRegressor(min_data_in_lef=3).fit(np.zeros((30, 2)), np.arange(30.0))

    X, y = load_lightgbm_tsv(shared_data / "lightgbm_regression" / "regression.train")
    Xt, _ = load_lightgbm_tsv(shared_data / "lightgbm_regression" / "regression.test")
    kw = dict(min_data_in_leaf=200, lambda_l2=1.0)
    ours = GBDTRegressor(**PARITY, **kw).fit(X, y)
    theirs = _lgbm("LGBMRegressor", **PARITY, **kw).fit(X, y)
    np.testing.assert_allclose(ours.predict(Xt), theirs.predict(Xt), rtol=1e-6, atol=1e-9)
    # min_data_in_leaf=200 is not the default 20: leaves hold at least 200 rows.
    assert min(t.leaf_count.min() for t in ours.booster_.trees) >= 200
    # A keyword wins over the estimator's argument for the same parameter, with a warning.
    with pytest.warns(UserWarning, match="min_data_in_leaf=200 is used instead of the "
                                         "argument min_child_samples=7"):
        both = GBDTRegressor(**dict(PARITY, min_child_samples=7), **kw).fit(X, y)
    np.testing.assert_array_equal(both.predict(Xt), ours.predict(Xt))

    search = GridSearchCV(GBDTRegressor(n_estimators=3, min_data_in_leaf=20),
                          {"min_data_in_leaf": [5, 500]}, cv=2).fit(X[:2000], y[:2000])
    assert search.best_params_["min_data_in_leaf"] in (5, 500)
    assert search.best_estimator_.get_params()["min_data_in_leaf"] == \
        search.best_params_["min_data_in_leaf"]
