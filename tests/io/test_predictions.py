"""Tests of prediction files (oocgbdt.io.predictions): outputs written atomically, replaced only
with overwrite and only when they hold predictions; CSV and Zarr feature inputs."""
import dask.array as da
import numpy as np
import pandas as pd
import pytest
import zarr

from oocgbdt.io.dataset import open_dataset, write_dataset
from oocgbdt.io.predictions import (PREDICTIONS_FORMAT, csv_features, open_features,
                                    prediction_columns, write_predictions)


def _values(n, k, seed=0):
    """float64 values over many magnitudes and signs: a lossy text format would show."""
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, k)) * 10.0 ** rng.integers(-12, 12, size=(n, k))
    return v[:, 0] if k == 1 else v


def _read(path):
    if path.suffix in (".csv", ".tsv"):
        # Python's float parser, exact for 17 significant digits.
        frame = pd.read_csv(path, sep="\t" if path.suffix == ".tsv" else ",",
                            dtype=np.float64, engine="python")
        values = frame.to_numpy()
        return list(frame.columns), values[:, 0] if values.shape[1] == 1 else values
    arr = zarr.open_array(str(path), mode="r")
    return list(arr.attrs["columns"]), arr[:]


def _leftovers(directory):
    return sorted(p.name for p in directory.iterdir() if ".tmp-" in p.name or ".old-" in p.name)


@pytest.mark.parametrize("name", ["p.csv", "p.tsv", "p.zarr"])
@pytest.mark.parametrize("source", ["dask", "blocks"])
@pytest.mark.parametrize("k", [1, 3])
def test_predictions_read_back_exactly(tmp_path, name, source, k):
    """Oracle: the float64 values given; text uses %.17g, which round-trips float64 exactly."""
    values = _values(50, k)
    if source == "dask":
        preds = da.from_array(values, chunks=((20, 20, 10),) + ((k,) if k > 1 else ()))
    else:
        preds = (values[i:i + 16] for i in range(0, 50, 16))
    out = tmp_path / name
    columns = prediction_columns(k, raw_score=k == 3)
    assert write_predictions(out, preds, columns, attrs={"model": "m.json"}, chunk_rows=16) == 50
    got_columns, got = _read(out)
    assert got_columns == columns
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, values)
    if name.endswith(".zarr"):
        attrs = zarr.open_array(str(out), mode="r").attrs
        assert attrs["format"] == PREDICTIONS_FORMAT and attrs["model"] == "m.json"
    assert _leftovers(tmp_path) == []


def test_prediction_columns():
    assert prediction_columns(1) == ["prediction"]
    assert prediction_columns(2, raw_score=True) == ["raw_score_class_0", "raw_score_class_1"]


@pytest.mark.parametrize("name", ["p.csv", "p.zarr"])
def test_a_failed_write_leaves_the_old_output_and_no_temporary(tmp_path, name):
    out = tmp_path / name
    old = _values(10, 1, seed=1)
    write_predictions(out, [old], ["prediction"])

    def failing():
        yield _values(10, 1, seed=2)
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        write_predictions(out, failing(), ["prediction"], overwrite=True)
    np.testing.assert_array_equal(_read(out)[1], old)
    assert _leftovers(tmp_path) == []
    new = _values(10, 1, seed=3)
    write_predictions(out, [new], ["prediction"], overwrite=True)
    np.testing.assert_array_equal(_read(out)[1], new)
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("name", ["p.csv", "p.zarr"])
def test_outputs_are_replaced_only_with_overwrite_and_only_when_predictions(tmp_path, name):
    out = tmp_path / name
    write_predictions(out, [np.zeros(3)], ["prediction"])
    with pytest.raises(FileExistsError, match="overwrite"):
        write_predictions(out, [np.ones(3)], ["prediction"])
    np.testing.assert_array_equal(_read(out)[1], np.zeros(3))

    # something else than predictions is never replaced, even with overwrite
    other = tmp_path / ("mine.csv" if name.endswith(".csv") else "mine.zarr")
    if name.endswith(".csv"):
        other.write_text("a,b\n1,2\n")
    else:
        write_dataset(other, np.zeros((3, 2), np.float32), np.zeros(3))
    with pytest.raises(ValueError, match="refusing to overwrite"):
        write_predictions(other, [np.ones(3)], ["prediction"], overwrite=True)
    if name.endswith(".csv"):
        assert other.read_text() == "a,b\n1,2\n"
    else:
        assert open_dataset(other).n_rows == 3

    with pytest.raises(FileNotFoundError, match="does not exist"):
        write_predictions(tmp_path / "no" / name, [np.ones(3)], ["prediction"])


def test_an_empty_folder_may_become_a_zarr_output_and_a_folder_is_no_text_output(tmp_path):
    (tmp_path / "empty.zarr").mkdir()
    write_predictions(tmp_path / "empty.zarr", [np.ones(2)], ["prediction"], overwrite=True)
    np.testing.assert_array_equal(_read(tmp_path / "empty.zarr")[1], np.ones(2))
    (tmp_path / "dir.csv").mkdir()
    with pytest.raises(IsADirectoryError):
        write_predictions(tmp_path / "dir.csv", [np.ones(2)], ["prediction"], overwrite=True)


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


@pytest.fixture
def frame():
    rng = np.random.default_rng(0)
    f = pd.DataFrame(rng.normal(size=(30, 3)).round(6), columns=["a", "b", "c"])
    f.iloc[2, 1] = np.nan
    f.insert(0, "id", np.arange(30))
    f["label"] = rng.integers(0, 2, size=30)
    return f


def test_csv_features_by_name_in_the_model_order(tmp_path, frame):
    """Oracle: pandas' frame, columns picked by name in the model's order."""
    src = tmp_path / "d.csv"
    frame[["c", "label", "id", "a", "b"]].to_csv(src, index=False)
    features = csv_features(src, ["a", "b", "c"], label="label")
    assert features.by_name and features.columns == ["a", "b", "c"]
    assert features.ignored == ["id"]
    got = np.concatenate(list(features.blocks(chunk_rows=8)))
    assert got.dtype == np.float64  # compared with the thresholds in float64, as LightGBM
    np.testing.assert_array_equal(got, frame[["a", "b", "c"]].to_numpy(np.float64))


def test_csv_features_by_position_without_a_header(tmp_path, frame):
    src = tmp_path / "d.csv"
    frame[["label", "a", "b", "c"]].to_csv(src, index=False, header=False)
    features = csv_features(src, ["a", "b", "c"], label=0)
    assert not features.by_name and features.columns == [1, 2, 3]
    got = np.concatenate(list(features.blocks(chunk_rows=7)))
    np.testing.assert_array_equal(got, frame[["a", "b", "c"]].to_numpy(np.float64))
    with pytest.raises(ValueError, match="has 4 feature column.*expects 3.*label"):
        csv_features(src, ["a", "b", "c"])  # the label column left in


def test_csv_features_refuses_a_header_naming_some_features(tmp_path, frame):
    """With as many columns as features, matching by position would feed wrong columns."""
    src = tmp_path / "d.csv"
    frame[["b", "a", "c"]].rename(columns={"c": "other"}).to_csv(src, index=False)
    with pytest.raises(ValueError, match=r"names some of the model's features.*\['c'\]"):
        csv_features(src, ["a", "b", "c"])


def test_csv_features_names_text_columns(tmp_path, frame):
    src = tmp_path / "d.csv"
    frame.assign(b=["x"] * 30).to_csv(src, index=False)
    features = csv_features(src, ["a", "b", "c"], label="label", drop=["id"])
    with pytest.raises(ValueError, match=r"\['b'\] hold text, but the model was trained on numbers"):
        list(features.blocks(chunk_rows=10))
    # With the model's map, the text is coded by value: "x" is category 1 of ["w", "x"].
    blocks = np.concatenate(list(features.blocks(chunk_rows=10, categories={1: ["w", "x"]})))
    np.testing.assert_array_equal(blocks[:, 1], np.ones(30, dtype=np.float32))


def test_open_features(tmp_path):
    X = np.arange(12, dtype=np.float32).reshape(4, 3)
    write_dataset(tmp_path / "ds.zarr", X, np.zeros(4), feature_names=["p", "q", "r"])
    lazy, names = open_features(tmp_path / "ds.zarr")
    assert names == ("p", "q", "r")
    np.testing.assert_array_equal(lazy.compute(), X)
    zarr.save_array(str(tmp_path / "plain.zarr"), X)
    assert open_features(tmp_path / "plain.zarr") == (str(tmp_path / "plain.zarr"), None)
    (tmp_path / "notzarr").mkdir()
    with pytest.raises(ValueError, match="neither a CSV file nor a Zarr store"):
        open_features(tmp_path / "notzarr")
