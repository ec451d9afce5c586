"""Tables in: pandas and Dask DataFrames with category, string and object columns.

Oracles: pandas' own category codes (``astype("category")``, ``pd.Categorical``), LightGBM's
Python package (``_data_from_pandas``: its ``pandas_categorical`` and its float matrix for the
same frame), and models trained on the same rows given as NumPy codes. The assertions hold
whether the coded columns are split as numbers or as categories: they compare the same data in
different containers, or the same values given in another category order.
"""
import numpy as np
import pandas as pd
import pytest

import oocgbdt
from oocgbdt.dask.inputs import frame_inputs, training_inputs

dd = pytest.importorskip("dask.dataframe")

PARAMS = dict(objective="regression", n_estimators=6, num_leaves=7, min_data_in_leaf=5,
              learning_rate=0.3)


def make_frame(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "x": rng.normal(size=n),
        "city": rng.choice(["paris", "oslo", "lima", "rome"], size=n),
        "kind": pd.Categorical(rng.choice(["u", "v", "w"], size=n), categories=["w", "u", "v"]),
        "count": pd.array(np.where(rng.random(n) < 0.1, None, rng.integers(0, 5, n)),
                          dtype="Int64"),
        "flag": rng.random(n) < 0.5,
        "size": pd.Categorical(rng.choice(["S", "M", "L"], size=n), categories=["S", "M", "L"],
                               ordered=True),
    })
    df.loc[::9, "city"] = None
    df.loc[::11, "kind"] = None
    y = (df["x"] * 2 + (df["city"] == "oslo") * 1.5 + (df["kind"] == "u") * 3
         + df["count"].fillna(0).to_numpy(dtype=float) * 0.2 + rng.normal(size=n) * 0.1)
    return df, y.to_numpy()


def lgb_matrix(df, pandas_categorical=None):
    """LightGBM's float matrix and category map for a frame (string columns as pandas'
    categories, which LightGBM needs: it codes ``category`` columns only)."""
    lgb_basic = pytest.importorskip("lightgbm.basic")
    as_cat = df.copy()
    for c in as_cat.columns:
        if as_cat[c].dtype == object or pd.api.types.is_string_dtype(as_cat[c].dtype):
            as_cat[c] = as_cat[c].astype("category")
    data, _, _, cats = lgb_basic._data_from_pandas(as_cat, "auto", "auto", pandas_categorical)
    return np.asarray(data, dtype=np.float64), cats


def test_codes_and_map_match_lightgbm_and_pandas():
    df, _ = make_frame()
    X, cmap = frame_inputs(df)
    expected, cats = lgb_matrix(df)
    assert cmap.categories == cats
    # String columns: pandas' own categories (sorted distinct values).
    assert cmap.categories[0] == list(df["city"].astype("category").cat.categories)
    np.testing.assert_array_equal(X.astype(np.float64), expected.astype(np.float32))
    assert cmap.coded == (1, 2, 5)
    assert cmap.auto == (1, 2)  # ordered categories are coded but split as numbers (LightGBM)
    assert cmap.feature_names == list(df.columns)


def test_predict_frame_maps_categories_by_value():
    df, y = make_frame()
    booster = oocgbdt.train(PARAMS, df, y)
    assert booster.feature_names == list(df.columns)
    assert booster.pandas_categorical == lgb_matrix(df)[1]
    other = df.copy()
    other["kind"] = other["kind"].cat.set_categories(["v", "zz", "w", "u"])  # new order
    other["size"] = other["size"].cat.reorder_categories(["L", "S", "M"])
    other["city"] = other["city"].astype(object)
    X_other, _ = lgb_matrix(other, booster.pandas_categorical)
    # Oracle: LightGBM's coding of the reordered frame with the training map.
    np.testing.assert_array_equal(booster.predict(other), booster.predict(X_other))
    np.testing.assert_array_equal(booster.predict(other), booster.predict(df))


def test_unseen_and_missing_values_predict_as_nan():
    df, y = make_frame()
    booster = oocgbdt.train(PARAMS, df, y)
    X, _ = frame_inputs(df)
    other = df.iloc[:50].copy()
    other["city"] = "atlantis"  # never seen
    other["kind"] = pd.Categorical(["q"] * 50)
    expected = X[:50].copy()
    expected[:, 1] = np.nan
    expected[:, 2] = np.nan
    np.testing.assert_array_equal(booster.predict(other), booster.predict(expected))


def test_predict_checks_column_names():
    df, y = make_frame()
    booster = oocgbdt.train(PARAMS, df, y)
    with pytest.raises(ValueError, match=r"missing column\(s\) \['city'\]"):
        booster.predict(df.drop(columns="city").assign(other=1.0))
    with pytest.raises(ValueError, match="features"):
        booster.predict(df.drop(columns="city"))
    with pytest.raises(ValueError, match="another order"):
        booster.predict(df[df.columns[::-1]])
    with pytest.raises(ValueError, match="trained on numbers"):
        booster.predict(df.assign(x="text"))


def test_model_file_keeps_the_map_and_old_files_load(tmp_path):
    df, y = make_frame()
    booster = oocgbdt.train(PARAMS, df, y)
    path = booster.save_model(tmp_path / "m.json")
    loaded = oocgbdt.Booster.load_model(path)
    assert loaded.pandas_categorical == booster.pandas_categorical
    assert loaded.pandas_categorical_features == [1, 2, 5]
    np.testing.assert_array_equal(loaded.predict(df), booster.predict(df))
    d = booster.to_dict()
    del d["pandas_categorical"], d["pandas_categorical_features"]  # a file from before maps
    old = oocgbdt.Booster.from_dict(d)
    assert old.pandas_categorical is None and old.pandas_categorical_features == []
    X, _ = frame_inputs(df)
    np.testing.assert_array_equal(old.predict(X), booster.predict(df))


def test_frame_features_are_pandas_codes():
    """Oracle: pandas' codes of each column (-1 as NaN), numbers as floats."""
    df, _ = make_frame()
    codes = np.column_stack([
        df["x"].to_numpy(np.float32),
        pd.Categorical(df["city"], categories=sorted(df["city"].dropna().unique())).codes,
        df["kind"].cat.codes, df["count"].to_numpy(np.float64, na_value=np.nan),
        df["flag"].to_numpy(np.float32), df["size"].cat.codes]).astype(np.float32)
    codes[codes[:, 1] == -1, 1] = np.nan
    codes[codes[:, 2] == -1, 2] = np.nan
    np.testing.assert_array_equal(frame_inputs(df)[0], codes)


def test_eval_frame_in_another_category_order_scores_the_same():
    df, y = make_frame()
    ev = df.iloc[:300].copy()
    shuffled = ev.copy()
    shuffled["kind"] = shuffled["kind"].cat.reorder_categories(["v", "w", "u"])
    a = oocgbdt.train(PARAMS, df, y, eval_set=[(ev, y[:300])])
    b = oocgbdt.train(PARAMS, df, y, eval_set=[(shuffled, y[:300])])
    assert a.evals_result == b.evals_result and a.evals_result["valid_0"]["l2"]


def test_training_inputs_fields():
    df, y = make_frame()
    inputs = training_inputs(df, y, None, None, None, None, None, 1000)
    assert inputs.categorical_auto == (1, 2)
    assert inputs.pandas_categorical_features == (1, 2, 5)
    assert inputs.pandas_categorical == lgb_matrix(df)[1]
    assert inputs.feature_names == list(df.columns)
    numeric = training_inputs(df[["x"]], y, None, None, None, None, None, 1000)
    assert numeric.categorical_auto == () and numeric.pandas_categorical is None


@pytest.fixture(scope="module")
def two_workers():
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as c:
        yield c


@pytest.mark.parametrize("categorical", [None, "auto"])
def test_pandas_dask_and_converted_zarr_give_the_same_model(two_workers, tmp_path, categorical):
    """One frame with text columns, three containers: the same map and the same trees, with
    the codes split as numbers (None) or as categories ("auto": the coded columns)."""
    from oocgbdt.io.convert import convert

    PARAMS = dict(globals()["PARAMS"], categorical_feature=categorical)
    df, y = make_frame()
    text = df[["x", "city", "count", "flag"]].assign(
        kind=df["kind"].astype(object), y=y)  # text columns only: CSV keeps no dtype
    features = text.drop(columns="y")
    from_pandas = oocgbdt.train(PARAMS, features, y)
    ddf = dd.from_pandas(text, npartitions=4)
    from_dask = oocgbdt.train(PARAMS, ddf.drop(columns="y"), ddf["y"], client=two_workers)
    text.to_csv(tmp_path / "t.csv", index=False)
    ds = convert(tmp_path / "t.csv", tmp_path / "t.zarr", label="y", chunk_rows=250)
    from_zarr = oocgbdt.train(PARAMS, str(ds.path), ds.y, client=two_workers)
    from_dataset = oocgbdt.train(PARAMS, ds, client=two_workers)  # its labels, map and names
    assert from_pandas.pandas_categorical == from_dask.pandas_categorical \
        == from_zarr.pandas_categorical == from_dataset.pandas_categorical \
        == [sorted(df["city"].dropna().unique()), sorted(df["kind"].dropna().unique())]
    assert from_pandas.feature_names == from_dask.feature_names == from_zarr.feature_names \
        == from_dataset.feature_names
    assert from_pandas == from_dask
    assert from_pandas == from_zarr
    assert from_pandas == from_dataset
    is_cat = [bool(t.decision_type[i] & 1) for t in from_pandas.trees
              for i in range(len(t.split_feature))]
    assert any(is_cat) == (categorical == "auto")  # the coded columns reach the split engine
    expected = from_pandas.predict(features)
    lazy = from_dask.predict(ddf.drop(columns="y"))
    np.testing.assert_array_equal(lazy.compute(scheduler="threads"), expected)
    np.testing.assert_array_equal(from_zarr.predict(str(ds.path)).compute(scheduler="threads"),
                                  expected)
    np.testing.assert_array_equal(from_zarr.predict(ds).compute(scheduler="threads"), expected)


def test_dask_read_parquet_frame_trains_as_pandas(two_workers, tmp_path):
    """A Dask DataFrame read from Parquet (unknown divisions, pyarrow strings)."""
    df, y = make_frame()
    table = df[["x", "city", "count"]].assign(y=y)
    for i, part in enumerate(np.array_split(np.arange(len(table)), 3)):
        table.iloc[part].to_parquet(tmp_path / f"part-{i}.parquet")
    ddf = dd.read_parquet(str(tmp_path / "*.parquet"))
    from_parquet = oocgbdt.train(PARAMS, ddf.drop(columns="y"), ddf["y"], client=two_workers)
    from_pandas = oocgbdt.train(PARAMS, table.drop(columns="y"), y)
    assert from_parquet.pandas_categorical == [sorted(df["city"].dropna().unique())]
    assert from_parquet == from_pandas


def test_dask_frame_lengths_are_counted_once():
    df, y = make_frame()
    ddf = dd.from_pandas(df[["x", "count"]], npartitions=3)
    ys = dd.from_pandas(pd.Series(y), npartitions=3)
    calls = []

    def compute(*objs):
        calls.append(len(objs))
        import dask
        return dask.compute(*objs, scheduler="sync")

    first = training_inputs(ddf, ys, None, None, None, None, None, 1000, compute=compute)
    assert len(calls) == 1
    second = training_inputs(ddf, ys, None, None, None, None, None, 1000, compute=compute)
    assert len(calls) == 1  # cached by collection
    assert first.X.chunks == second.X.chunks and sum(first.X.chunks[0]) == len(df)
    np.testing.assert_array_equal(first.X.compute(scheduler="sync"),
                                  frame_inputs(df[["x", "count"]])[0])
    np.testing.assert_array_equal(first.y.compute(scheduler="sync"), y)


def test_dask_frame_with_unknown_categories_is_refused():
    df, y = make_frame()
    ddf = dd.from_pandas(df[["x", "city"]], npartitions=2).astype({"city": "category"})
    assert not ddf["city"].cat.known
    with pytest.raises(ValueError, match=r"unknown categories.*categorize\(columns=\['city'\]\)"):
        oocgbdt.train(PARAMS, ddf, y)
    known = ddf.categorize(columns=["city"])
    X, cmap = frame_inputs(known, compute=lambda *a: __import__("dask").compute(
        *a, scheduler="sync"))
    assert cmap.categories == [list(known["city"].cat.categories)]


def test_dask_frame_predict_maps_by_value_and_checks_columns():
    df, y = make_frame()
    booster = oocgbdt.train(PARAMS, df, y)
    other = df.copy()
    other["kind"] = other["kind"].cat.reorder_categories(["u", "v", "w"])
    other.loc[:10, "city"] = "atlantis"
    lazy = booster.predict(dd.from_pandas(other, npartitions=3))
    np.testing.assert_array_equal(lazy.compute(scheduler="sync"), booster.predict(other))
    with pytest.raises(ValueError, match=r"missing column\(s\) \['city'\]"):
        booster.predict(dd.from_pandas(df.drop(columns="city").assign(z=1.0), npartitions=2))
    with pytest.raises(ValueError, match=r"\['x'\] hold text or categories.*trained on numbers"):
        booster.predict(dd.from_pandas(df.assign(x="far"), npartitions=2))


def test_datasets_with_other_maps_are_remapped_or_refused(two_workers, tmp_path):
    """An eval or predict dataset written on its own: its codes are mapped to the training
    map by value; a dataset with numbers where training had categories is refused."""
    from oocgbdt.io.dataset import write_dataset

    df, y = make_frame()
    table = df[["x", "city"]]
    train_ds = write_dataset(tmp_path / "train.zarr", table, y, chunk_rows=300)
    part = table.iloc[:200].copy()
    part.loc[part.index[:20], "city"] = "atlantis"  # another map: one more, unseen category
    other_ds = write_dataset(tmp_path / "other.zarr", part, y[:200], chunk_rows=64)
    assert other_ds.pandas_categorical != train_ds.pandas_categorical
    booster = oocgbdt.train(PARAMS, train_ds, eval_set=[(other_ds, y[:200])], client=two_workers)
    reference = oocgbdt.train(PARAMS, table, y, eval_set=[(part, y[:200])])
    assert booster == reference and booster.evals_result == reference.evals_result
    lazy = booster.predict(other_ds)
    np.testing.assert_array_equal(lazy.compute(scheduler="sync"), reference.predict(part))
    numeric = write_dataset(tmp_path / "num.zarr", table.assign(city=1.0), y, chunk_rows=300)
    with pytest.raises(ValueError, match=r"category codes in column\(s\) \['city'\]"):
        booster.predict(numeric)
    with pytest.raises(ValueError, match=r"eval_set\[0\] X holds category codes"):
        oocgbdt.train(PARAMS, train_ds, eval_set=[(numeric, y)], client=two_workers)
