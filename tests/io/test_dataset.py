"""Tests of the on-disk dataset layout (oocgbdt.io.dataset)."""
import json

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest
import zarr

from oocgbdt.io.dataset import (
    DATASET_FORMAT,
    DATASET_VERSION,
    Dataset,
    DatasetWriter,
    open_dataset,
    write_dataset,
)


def _leftovers(tmp_path):
    return sorted(p.name for p in tmp_path.iterdir() if ".tmp-" in p.name or ".old-" in p.name)


@pytest.fixture
def arrays():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(53, 4))
    X[rng.random(X.shape) < 0.2] = 0.0
    X[3, 1] = np.nan
    y = rng.integers(0, 2, size=53).astype(np.int64)
    w = rng.random(53).astype(np.float32)
    return X, y, w


def test_roundtrip_numpy(tmp_path, arrays):
    X, y, w = arrays
    path = tmp_path / "ds.zarr"
    ds = write_dataset(path, X, y, w, feature_names=list("abcd"), label="target", chunk_rows=10)
    assert isinstance(ds, Dataset)
    assert ds.path == path.absolute()
    assert ds.X.dtype == np.float32 and ds.y.dtype == np.float64 and ds.weight.dtype == np.float32
    assert ds.X.chunks == ((10,) * 5 + (3,), (4,))
    assert ds.y.chunks == ((10,) * 5 + (3,),) and ds.weight.chunks == ds.y.chunks
    np.testing.assert_array_equal(ds.X.compute(), X.astype(np.float32))
    np.testing.assert_array_equal(ds.y.compute(), y.astype(np.float64))
    np.testing.assert_array_equal(ds.weight.compute(), w)
    assert ds.feature_names == ("a", "b", "c", "d")
    assert ds.label == "target" and ds.source is None
    assert (ds.n_rows, ds.n_features, ds.chunk_rows) == (53, 4, 10)
    assert "n_rows=53" in repr(ds)
    # The layout as specified: group attrs and zarr v3 arrays with row chunks.
    g = zarr.open_group(str(path), mode="r")
    assert g.attrs["format"] == DATASET_FORMAT and g.attrs["version"] == DATASET_VERSION
    assert g.attrs["feature_names"] == list("abcd") and g.attrs["label"] == "target"
    assert g["X"].chunks == (10, 4) and g["y"].chunks == (10,)
    assert g.metadata.zarr_format == 3
    assert json.loads((path / "zarr.json").read_text())["attributes"]["format"] == DATASET_FORMAT
    assert _leftovers(tmp_path) == []


def test_defaults_no_y_no_weight(tmp_path, arrays):
    X, _, _ = arrays
    ds = write_dataset(tmp_path / "d", X, chunk_rows=100)
    assert ds.y is None and ds.weight is None and ds.label is None
    assert ds.feature_names == ("Column_0", "Column_1", "Column_2", "Column_3")
    assert ds.X.chunks == ((53,), (4,))


def test_weight_dtypes(tmp_path, arrays):
    X, y, _ = arrays
    ds64 = write_dataset(tmp_path / "a", X, y, np.ones(53), chunk_rows=20)
    assert ds64.weight.dtype == np.float64 and ds64.label == "label"
    dsint = write_dataset(tmp_path / "b", X, y, np.ones(53, dtype=np.int32), chunk_rows=20)
    assert dsint.weight.dtype == np.float64


def test_dataframe_gives_feature_names(tmp_path, arrays):
    X, y, _ = arrays
    df = pd.DataFrame(X, columns=["p", "q", "r", "s"])
    ds = write_dataset(tmp_path / "d", df, pd.Series(y), chunk_rows=16)
    assert ds.feature_names == ("p", "q", "r", "s")
    np.testing.assert_array_equal(ds.X.compute(), X.astype(np.float32))


def test_dask_input_is_rechunked_and_streamed(tmp_path, arrays):
    X, y, w = arrays
    Xd = da.from_array(X, chunks=((7, 20, 26), (2, 2)))  # irregular rows, split columns
    yd = da.from_array(y, chunks=11)
    calls = []

    def spy(block):
        calls.append(block.shape[0])
        return block

    Xd = Xd.map_blocks(spy, dtype=Xd.dtype)
    ds = write_dataset(tmp_path / "d", Xd, yd, w, chunk_rows=8)
    assert ds.X.chunks[0] == (8,) * 6 + (5,) and ds.X.chunks[1] == (4,)
    np.testing.assert_array_equal(ds.X.compute(), X.astype(np.float32))
    np.testing.assert_array_equal(ds.y.compute(), y)
    np.testing.assert_array_equal(ds.weight.compute(), w)
    # the dask input was computed block by block (each source block once per use), never whole
    assert max(calls) <= 26 and len(calls) >= 3


def test_store_to_store_predict_style(tmp_path, arrays):
    """A lazy transformation of one store written to another (what predict output does)."""
    X, y, _ = arrays
    src = write_dataset(tmp_path / "src", X, y, chunk_rows=10)
    out = write_dataset(tmp_path / "out", src.X * 2, chunk_rows=10)
    np.testing.assert_array_equal(out.X.compute(), 2 * X.astype(np.float32))
    # same with a distributed-free threaded scheduler explicitly
    with dask.config.set(scheduler="threads"):
        out2 = write_dataset(tmp_path / "out2", src.X[:, :2], src.y, chunk_rows=25)
    assert out2.X.chunks == ((25, 25, 3), (2,))


def test_refuses_existing_without_overwrite(tmp_path, arrays):
    X, y, _ = arrays
    path = tmp_path / "d"
    write_dataset(path, X, y)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        write_dataset(path, X[:5], y[:5])
    ds = write_dataset(path, X[:5], y[:5], overwrite=True)
    assert ds.n_rows == 5
    assert _leftovers(tmp_path) == []


def test_overwrite_never_deletes_a_foreign_directory(tmp_path, arrays):
    X, y, _ = arrays
    foreign = tmp_path / "mydir"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("keep me")
    with pytest.raises(ValueError, match="neither"):
        write_dataset(foreign, X, y, overwrite=True)
    assert (foreign / "precious.txt").read_text() == "keep me"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert write_dataset(empty, X, y, overwrite=True).n_rows == 53


def test_never_writes_inside_an_input_store(tmp_path, arrays):
    X, y, _ = arrays
    src = write_dataset(tmp_path / "src", X, y, chunk_rows=10)
    with pytest.raises(ValueError, match="input"):
        write_dataset(tmp_path / "src", src.X + 1, src.y, overwrite=True)
    with pytest.raises(ValueError, match="input"):
        write_dataset(tmp_path / "src" / "inner", src.X, src.y)
    np.testing.assert_array_equal(open_dataset(tmp_path / "src").X.compute(), X.astype(np.float32))


def test_write_failure_leaves_nothing(tmp_path, arrays):
    X, _, _ = arrays

    def boom(block):
        raise RuntimeError("boom")

    Xd = da.from_array(X, chunks=10).map_blocks(boom, dtype=X.dtype)
    with pytest.raises(RuntimeError, match="boom"):
        write_dataset(tmp_path / "d", Xd, chunk_rows=10)
    assert not (tmp_path / "d").exists()
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(y=np.zeros(3)), "y has 3 rows but X has 53"),
        (dict(weight=np.zeros(60)), "weight has 60 rows"),
        (dict(feature_names=["a"]), "feature_names has 1 names"),
        (dict(feature_names=["a", "a", "b", "c"]), "unique"),
        (dict(chunk_rows=0), "chunk_rows"),
        (dict(y=np.zeros((53, 2))), "1-D"),
    ],
)
def test_write_bad_inputs(tmp_path, arrays, kwargs, match):
    X, _, _ = arrays
    with pytest.raises(ValueError, match=match):
        write_dataset(tmp_path / "d", X, **kwargs)
    assert not (tmp_path / "d").exists()


def test_write_rejects_non_numeric_1d_and_unknown_chunks(tmp_path):
    with pytest.raises(ValueError, match="numeric"):
        write_dataset(tmp_path / "a", np.array([["a", "b"]], dtype=object))
    with pytest.raises(ValueError, match="2-D"):
        write_dataset(tmp_path / "b", np.zeros(5))
    x = da.from_array(np.arange(20.0).reshape(10, 2), chunks=5)
    x = x[x[:, 0] > 3]
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        write_dataset(tmp_path / "c", x)


# ------------------------------------------------------------------------------------------
# open_dataset errors
# ------------------------------------------------------------------------------------------


def test_open_missing_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        open_dataset(tmp_path / "nope")


def test_open_regular_file(tmp_path):
    f = tmp_path / "data.csv"
    f.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="regular file"):
        open_dataset(f)


def test_open_plain_directory(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(ValueError, match="not a Zarr group"):
        open_dataset(tmp_path / "d")


def test_open_foreign_zarr_group(tmp_path):
    g = zarr.open_group(str(tmp_path / "g"), mode="w")
    g.create_array("data", shape=(3,), dtype="f8")
    with pytest.raises(ValueError, match=r"format=None and members \['data'\]"):
        open_dataset(tmp_path / "g")


def _hand_made(path, n_x=10, n_y=10, names=None, version=1):
    g = zarr.open_group(str(path), mode="w")
    g.create_array("X", shape=(n_x, 2), chunks=(4, 2), dtype="f4")
    g.create_array("y", shape=(n_y,), chunks=(4,), dtype="f8")
    g.attrs.update({"format": DATASET_FORMAT, "version": version,
                    "feature_names": names or ["a", "b"], "label": "t", "source": None})
    return path


def test_open_hand_made_ok(tmp_path):
    ds = open_dataset(_hand_made(tmp_path / "g"))
    assert ds.X.chunks == ((4, 4, 2), (2,)) and ds.y.chunks == ((4, 4, 2),)


def test_open_mismatched_lengths(tmp_path):
    with pytest.raises(ValueError, match="'y' has 9 rows but 'X' has 10 rows"):
        open_dataset(_hand_made(tmp_path / "g", n_y=9))


def test_open_bad_feature_names_and_version(tmp_path):
    with pytest.raises(ValueError, match="feature_names has 3 names"):
        open_dataset(_hand_made(tmp_path / "g", names=["a", "b", "c"]))
    with pytest.raises(ValueError, match="version 99"):
        open_dataset(_hand_made(tmp_path / "h", version=99))


# ------------------------------------------------------------------------------------------
# DatasetWriter
# ------------------------------------------------------------------------------------------


def test_writer_aligns_chunks_across_odd_blocks(tmp_path, arrays):
    X, y, w = arrays
    path = tmp_path / "w"
    with DatasetWriter(path, 4, chunk_rows=10, weight_dtype=np.float32, label="y", source="mem") as wr:
        for lo, hi in [(0, 3), (3, 17), (17, 17), (17, 40), (40, 53)]:
            wr.append(X[lo:hi], y[lo:hi], w[lo:hi])
            # only whole chunks reach the disk before commit
            assert wr.n_rows % 10 == 0
        assert not path.exists()
    ds = open_dataset(path)
    assert ds.X.chunks[0] == (10,) * 5 + (3,)
    np.testing.assert_array_equal(ds.X.compute(), X.astype(np.float32))
    np.testing.assert_array_equal(ds.y.compute(), y)
    assert ds.source == "mem" and ds.label == "y"


def test_writer_aborts_on_error(tmp_path, arrays):
    X, y, _ = arrays
    with pytest.raises(RuntimeError):
        with DatasetWriter(tmp_path / "w", 4, chunk_rows=5) as wr:
            wr.append(X, y)
            raise RuntimeError("stop")
    assert not (tmp_path / "w").exists() and _leftovers(tmp_path) == []


def test_writer_checks_blocks(tmp_path, arrays):
    X, y, _ = arrays
    wr = DatasetWriter(tmp_path / "w", 4, chunk_rows=5)
    with pytest.raises(ValueError, match=r"shape \(k, 4\)"):
        wr.append(X[:, :3], y)
    with pytest.raises(ValueError, match="pass y="):
        wr.append(X)
    with pytest.raises(ValueError, match="without 'weight'"):
        wr.append(X, y, y)
    wr.abort()
    with pytest.raises(RuntimeError, match="closed"):
        wr.append(X, y)
    assert _leftovers(tmp_path) == []


def test_warns_about_huge_chunks(tmp_path):
    with pytest.warns(UserWarning, match="GiB"):
        wr = DatasetWriter(tmp_path / "w", 4000, chunk_rows=100_000)
    wr.abort()
    assert _leftovers(tmp_path) == []


def test_write_dataset_codes_a_frame_like_training(tmp_path):
    """A DataFrame with text written to Zarr holds the features training makes of the frame
    (oracle: pandas' codes) and the same map."""
    from oocgbdt.dask.inputs import frame_inputs
    rng = np.random.default_rng(3)
    n = 400
    df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.choice(["x", "y", "z"], size=n),
                       "c": pd.Categorical(rng.choice(["q", "p"], size=n), categories=["q", "p"])})
    y = df["a"] + (df["b"] == "y") * 2
    ds = write_dataset(tmp_path / "d.zarr", df, y, chunk_rows=100)
    assert ds.categorical_features == (1, 2)
    assert ds.pandas_categorical == [["x", "y", "z"], ["q", "p"]]
    codes = pd.Categorical(df["b"], categories=["x", "y", "z"]).codes
    np.testing.assert_array_equal(ds.X[:, 1].compute(), codes.astype(np.float32))
    np.testing.assert_array_equal(ds.X[:, 2].compute(), df["c"].cat.codes.to_numpy(np.float32))
    X, cmap = frame_inputs(df)
    np.testing.assert_array_equal(ds.X.compute(), X)
    assert cmap.categories == ds.pandas_categorical and cmap.coded == ds.categorical_features
