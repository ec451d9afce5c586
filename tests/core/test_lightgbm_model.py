"""LightGBM's text model format, both ways, with LightGBM itself as the oracle: LightGBM reads
oocgbdt's export and predicts the same raw scores (and leaves and SHAP values), and oocgbdt reads
LightGBM's models and predicts as LightGBM does."""
import numpy as np
import pytest

from oocgbdt.core.booster import Booster
from tests.conftest import load_lightgbm_tsv
from tests.core._helpers import fit_in_process

lgb = pytest.importorskip("lightgbm")

#: SHAP values are sums of products of cover fractions; the two implementations run the same
#: recursion, but the initial score sits in a different tree, so sums may differ in the last bits.
SHAP_TOL = 1e-9


@pytest.fixture(scope="module")
def higgs(shared_data):
    X, y = load_lightgbm_tsv(shared_data / "lightgbm_binary" / "binary.train")
    Xt, _ = load_lightgbm_tsv(shared_data / "lightgbm_binary" / "binary.test")
    return X[:3000], y[:3000], Xt.astype(np.float64)


def _nan_regression(seed=0, n=1500, f=6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f))
    X[rng.random(X.shape) < 0.15] = np.nan
    X[rng.random(X.shape) < 0.1] = 0.0
    y = np.nan_to_num(X[:, 0]) * 2 + np.isnan(X[:, 1]) + rng.normal(size=n) * 0.1
    return X, y


#: Fields LightGBM writes with six significant digits (``ArrayToString`` without high
#: precision); oocgbdt writes every double with 17, so they agree once rounded to six.
_LOW_PRECISION = ("split_gain", "internal_value", "internal_weight", "shrinkage")


def _tree_fields(text):
    """``{(tree, key): value text}`` of a model's tree blocks."""
    fields, tree = {}, None
    for line in text[text.index("Tree=0"):text.index("end of trees")].splitlines():
        key, _, value = line.partition("=")
        if key == "Tree":
            tree = int(value)
        elif key:
            fields[tree, key] = value
    return fields


def _assert_same_trees(mine, theirs):
    a, b = _tree_fields(mine), _tree_fields(theirs)
    assert a.keys() == b.keys()
    for (tree, key), value in a.items():
        if key in _LOW_PRECISION:
            value = " ".join(format(float(v), "g") for v in value.split())
        assert value == b[tree, key], (tree, key)


def _check_lightgbm_agrees(booster, X, tmp_path):
    path = booster.save_model(tmp_path / "model.txt", format="lightgbm")
    theirs = lgb.Booster(model_file=str(path))
    raw = booster.predict(X, raw_score=True)
    assert np.array_equal(theirs.predict(X, raw_score=True), raw)
    leaves = booster.predict(X, pred_leaf=True)
    assert leaves.dtype == np.int32
    assert np.array_equal(theirs.predict(X, pred_leaf=True), leaves)
    contrib = booster.predict(X, pred_contrib=True)
    assert np.abs(theirs.predict(X, pred_contrib=True) - contrib).max() <= SHAP_TOL
    k = booster.n_outputs
    sums = contrib.reshape(X.shape[0], k, -1).sum(axis=2)
    assert np.abs(sums - raw.reshape(X.shape[0], k)).max() <= SHAP_TOL
    return theirs


def test_lightgbm_reads_our_binary_model_with_equal_raw_scores(higgs, tmp_path):
    X, y, Xt = higgs
    booster = fit_in_process(dict(objective="binary", n_estimators=15, num_leaves=15), X, y)
    theirs = _check_lightgbm_agrees(booster, Xt, tmp_path)
    # the objective line gives LightGBM's probabilities too
    assert np.abs(theirs.predict(Xt) - booster.predict(Xt)).max() <= 1e-15
    # a round range: start_iteration leaves the initial score out, as LightGBM does
    for start, num in ((0, 5), (4, 6), (10, None)):
        assert np.array_equal(
            theirs.predict(Xt, raw_score=True, start_iteration=start, num_iteration=num),
            booster.predict(Xt, raw_score=True, start_iteration=start, num_iteration=num))


def test_seeds_travel_in_the_lightgbm_file(higgs, tmp_path):
    """The seeds LightGBM knows are written in the file's parameters, so LightGBM and a
    read-back oocgbdt booster see the data_random_seed the bins were sampled with (and the
    derived seeds), not their defaults."""
    X, y, _ = higgs
    params = dict(objective="binary", n_estimators=2, num_leaves=4, seed=3, data_random_seed=9,
                  bin_construct_sample_cnt=500)
    booster = fit_in_process(params, X, y)
    path = booster.save_model(tmp_path / "model.txt", format="lightgbm")
    ours = Booster.load_model(path).params
    theirs = lgb.Booster(model_file=str(path)).params
    for name in ("data_random_seed", "bagging_seed", "feature_fraction_seed", "objective_seed",
                 "extra_seed"):
        assert ours[name] == booster.params[name], name
        assert int(theirs[name]) == booster.params[name], name
    assert ours["data_random_seed"] == 9 and ours["bagging_seed"] != 3


def test_lightgbm_reads_our_multiclass_model(shared_data, tmp_path):
    X, y = load_lightgbm_tsv(shared_data / "lightgbm_multiclass" / "multiclass.train")
    booster = fit_in_process(dict(objective="multiclass", num_class=5, n_estimators=4,
                                  num_leaves=7), X[:2000], y[:2000])
    Xt = X[2000:2400].astype(np.float64)
    theirs = _check_lightgbm_agrees(booster, Xt, tmp_path)
    assert np.abs(theirs.predict(Xt) - booster.predict(Xt)).max() <= 1e-15


def test_lightgbm_reads_our_model_with_nan_and_zero_routing(tmp_path):
    X, y = _nan_regression()
    booster = fit_in_process(dict(objective="regression", n_estimators=10, num_leaves=8,
                                  zero_as_missing=False), X, y)
    assert {int(d) >> 2 & 3 for t in booster.trees for d in t.decision_type} & {2}
    _check_lightgbm_agrees(booster, X, tmp_path)


def test_float64_rows_are_compared_in_float64():
    """A value between a threshold and the float32 below it goes right in float64 (LightGBM)."""
    X, y = _nan_regression(1)
    booster = fit_in_process(dict(objective="regression", n_estimators=1, num_leaves=2), X, y)
    t = booster.trees[0]
    f, thr = int(t.split_feature[0]), float(t.threshold[0])
    row = np.zeros((1, X.shape[1]))
    row[0, f] = np.nextafter(thr, np.inf)
    assert np.float32(row[0, f]) <= thr  # float32 rounding would send it left
    right = t.leaf_value[~t.right_child[0]] if t.right_child[0] < 0 else None
    assert booster.predict(row, raw_score=True)[0] == booster.init_score[0] + right


def test_lightgbm_model_read_in_predicts_as_lightgbm(higgs, tmp_path):
    X, y, Xt = higgs
    theirs = lgb.train(dict(objective="binary", num_leaves=15, verbose=-1), lgb.Dataset(X, y),
                       num_boost_round=10)
    path = tmp_path / "lgb.txt"
    theirs.save_model(str(path))
    ours = Booster.load_model(path)
    assert ours.num_trees() == theirs.num_trees()
    assert np.array_equal(ours.predict(Xt, raw_score=True), theirs.predict(Xt, raw_score=True))
    assert np.abs(ours.predict(Xt) - theirs.predict(Xt)).max() <= 1e-15
    assert np.array_equal(ours.predict(Xt, pred_leaf=True), theirs.predict(Xt, pred_leaf=True))
    assert np.abs(ours.predict(Xt, pred_contrib=True)
                  - theirs.predict(Xt, pred_contrib=True)).max() <= SHAP_TOL
    # written out again: the same trees, LightGBM's own text for each of them
    text = ours.model_to_string(format="lightgbm")
    _assert_same_trees(text, path.read_text())
    # and through oocgbdt's JSON
    again = Booster.load_model(ours.save_model(tmp_path / "ours.json"))
    assert np.array_equal(again.predict(Xt), ours.predict(Xt))


@pytest.mark.parametrize("objective,extra", [("regression", {}),
                                             ("multiclass", {"num_class": 3})])
def test_lightgbm_regression_and_multiclass_read_in(objective, extra, tmp_path):
    X, y = _nan_regression(2)
    if objective == "multiclass":
        y = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    theirs = lgb.train(dict(objective=objective, num_leaves=7, verbose=-1, **extra),
                       lgb.Dataset(X, y), num_boost_round=5)
    ours = Booster.model_from_string(theirs.model_to_string())
    assert np.array_equal(ours.predict(X, raw_score=True), theirs.predict(X, raw_score=True))
    assert np.abs(ours.predict(X) - theirs.predict(X)).max() <= 1e-15


def test_categorical_lightgbm_model_read_in_and_written_out(tmp_path):
    rng = np.random.default_rng(3)
    n = 2000
    X = np.column_stack([rng.integers(0, 40, n), rng.normal(size=n),
                         rng.integers(0, 5, n)]).astype(np.float64)
    X[rng.random(n) < 0.05, 0] = np.nan
    effect = rng.normal(size=40)
    y = effect[np.nan_to_num(X[:, 0], nan=0).astype(int)] + X[:, 1] + rng.normal(size=n) * 0.1
    theirs = lgb.train(dict(objective="regression", num_leaves=15, verbose=-1,
                            min_data_per_group=5, cat_smooth=1),
                       lgb.Dataset(X, y, categorical_feature=[0, 2]), num_boost_round=8)
    text = theirs.model_to_string()
    assert "cat_threshold=" in text
    ours = Booster.model_from_string(text)
    Xq = np.vstack([X[:300], [[-1, 0, 0], [45, 0, 99], [np.nan, 0, np.nan], [3.7, 0, 1]]])
    assert np.array_equal(ours.predict(Xq, raw_score=True), theirs.predict(Xq, raw_score=True))
    assert np.array_equal(ours.predict(Xq, pred_leaf=True), theirs.predict(Xq, pred_leaf=True))
    assert np.abs(ours.predict(Xq, pred_contrib=True)
                  - theirs.predict(Xq, pred_contrib=True)).max() <= SHAP_TOL
    out = ours.model_to_string(format="lightgbm")
    _assert_same_trees(out, text)
    again = lgb.Booster(model_str=out)
    assert np.array_equal(again.predict(Xq, raw_score=True), theirs.predict(Xq, raw_score=True))
    # oocgbdt's JSON keeps the category bitsets
    reloaded = Booster.load_model(ours.save_model(tmp_path / "cat.json"))
    assert np.array_equal(reloaded.predict(Xq, raw_score=True),
                          theirs.predict(Xq, raw_score=True))


def test_pandas_categorical_line_round_trips():
    X, y = _nan_regression(4, n=300)
    booster = fit_in_process(dict(objective="regression", n_estimators=2, num_leaves=4), X, y)
    assert booster.model_to_string(format="lightgbm").rstrip().endswith("pandas_categorical:null")
    booster.pandas_categorical = [["a", "b"], ["x"]]
    text = booster.model_to_string(format="lightgbm")
    assert lgb.Booster(model_str=text).pandas_categorical == [["a", "b"], ["x"]]
    assert Booster.model_from_string(text).pandas_categorical == [["a", "b"], ["x"]]


def test_bad_format_and_bad_text_are_named():
    X, y = _nan_regression(5, n=200)
    booster = fit_in_process(dict(objective="regression", n_estimators=1, num_leaves=4), X, y)
    with pytest.raises(ValueError, match="format must be"):
        booster.model_to_string(format="xgboost")
    text = booster.model_to_string(format="lightgbm").replace("leaf_value=", "leaf_valu=", 1)
    with pytest.raises(ValueError, match="leaf_value"):
        Booster.model_from_string(text)
    with pytest.raises(ValueError, match="pred_leaf and pred_contrib"):
        booster.predict(X, pred_leaf=True, pred_contrib=True)


@pytest.mark.parametrize("objective,extra", [("binary", {}), ("multiclass", {"num_class": 3})])
def test_shap_tree_explainer_agrees_with_pred_contrib(objective, extra):
    shap = pytest.importorskip("shap")
    X, y = _nan_regression(6, n=800)
    if objective == "multiclass":
        y = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    else:
        y = (y > np.median(y)).astype(float)
    booster = fit_in_process(dict(objective=objective, n_estimators=5, num_leaves=8, **extra),
                             X, y)
    explainer = shap.TreeExplainer(booster.to_lightgbm())
    values = np.asarray(explainer.shap_values(X))
    contrib = booster.predict(X, pred_contrib=True)
    width = X.shape[1] + 1
    for k in range(booster.n_outputs):
        block = contrib[:, k * width:(k + 1) * width]
        mine = values if booster.n_outputs == 1 else (
            values[..., k] if values.shape[-1] == booster.n_outputs else values[k])
        assert np.abs(mine - block[:, :-1]).max() <= SHAP_TOL
        expected = np.atleast_1d(explainer.expected_value)[k]
        # SHAP's expected value is the mean of the bias column over the explained rows
        assert abs(expected - block[:, -1].mean()) <= SHAP_TOL


def test_random_forest_and_linear_lightgbm_models_are_refused():
    X, y = _nan_regression(7, n=400)
    X = np.nan_to_num(X)
    rf = lgb.train(dict(boosting="rf", bagging_fraction=0.5, bagging_freq=1, verbose=-1,
                        num_leaves=4), lgb.Dataset(X, y), num_boost_round=2)
    with pytest.raises(ValueError, match="average_output"):
        Booster.model_from_string(rf.model_to_string())
    linear = lgb.train(dict(linear_tree=True, verbose=-1, num_leaves=4), lgb.Dataset(X, y),
                       num_boost_round=2)
    with pytest.raises(ValueError, match="linear tree"):
        Booster.model_from_string(linear.model_to_string())


@pytest.mark.parametrize("init", [1e-16, -3e-36, 0.0])
def test_tiny_initial_scores_still_give_equal_raw_scores(init):
    """LightGBM's training skips scores within kEpsilon and rounds values within
    kZeroThreshold to zero; the export folds every score in exactly instead."""
    X, y = _nan_regression(8, n=400)
    booster = fit_in_process(dict(objective="regression", n_estimators=3, num_leaves=4), X, y)
    booster.init_score = np.array([init])
    booster.trees[0].leaf_value[0] = -init  # a first-tree value that cancels the score
    booster._packed.clear()
    theirs = lgb.Booster(model_str=booster.model_to_string(format="lightgbm"))
    assert np.array_equal(theirs.predict(X, raw_score=True), booster.predict(X, raw_score=True))


def test_a_lightgbm_model_read_in_codes_a_frames_category_columns_as_lightgbm():
    """LightGBM's text keeps the category lists but not their columns: a DataFrame's category
    columns, in order, take them, as LightGBM's Python package does (the oracle)."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(5)
    n = 800
    df = pd.DataFrame({"x": rng.normal(size=n),
                       "c": pd.Categorical(rng.choice(["p", "q", "r", "s"], size=n)),
                       "z": rng.normal(size=n)})
    y = df["x"].to_numpy() + (df["c"] == "q").to_numpy() * 2 + rng.normal(size=n) * 0.1
    theirs = lgb.train(dict(objective="regression", num_leaves=7, verbose=-1, min_data_per_group=5,
                            cat_smooth=1), lgb.Dataset(df, y), num_boost_round=5)
    ours = Booster.model_from_string(theirs.model_to_string())
    assert ours.pandas_categorical == [["p", "q", "r", "s"]]
    query = df.iloc[:50].copy()
    query["c"] = pd.Categorical(query["c"].astype(str), categories=["s", "r", "q", "p"])
    np.testing.assert_array_equal(ours.predict(query, raw_score=True),
                                  theirs.predict(query, raw_score=True))
