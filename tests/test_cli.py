"""Tests of the ``oocgbdt`` command line, run in-process through :func:`oocgbdt.cli.main`."""
import re

import numpy as np
import pandas as pd
import pytest
import zarr

from oocgbdt.cli import main, parse_param
from oocgbdt.dask.predict import Booster
from oocgbdt.dask.cache import inspect_cache_path
from oocgbdt.io.dataset import open_dataset

N_ROWS, N_FEATURES = 600, 4


def _make_csv(path, n=N_ROWS, seed=0, classes=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N_FEATURES))
    X[rng.random(size=X.shape) < 0.02] = np.nan
    signal = np.nan_to_num(X[:, 0]) * 2.0 + np.nan_to_num(X[:, 1]) ** 2
    if classes is None:
        y = signal + 0.1 * rng.normal(size=n)
    else:
        y = np.digitize(signal, np.quantile(signal, np.linspace(0, 1, classes + 1)[1:-1]))
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(N_FEATURES)])
    frame.insert(0, "row_id", np.arange(n))
    frame["target"] = y
    frame.to_csv(path, index=False)
    return path


def _read_csv_exact(path):
    """Read predictions back with Python's float parser (exact for 17 significant digits)."""
    return pd.read_csv(path, dtype=np.float64, engine="python")


def _err_line(capsys, command):
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"oocgbdt {command}: error: "), err
    return lines[0]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """train.csv/valid.csv converted to Zarr, and a 5-round regression model."""
    d = tmp_path_factory.mktemp("cli")
    for name, seed, n in (("train", 0, N_ROWS), ("valid", 1, 200)):
        _make_csv(d / f"{name}.csv", n=n, seed=seed)
        assert main(["convert", str(d / f"{name}.csv"), str(d / f"{name}.zarr"), "--label",
                     "target", "--drop", "row_id", "--chunk-rows", "128"]) == 0
    rc = main(["train", str(d / "train.zarr"), "--model", str(d / "model.json"),
               "--valid", str(d / "valid.zarr"), "--param", "n_estimators=5", "num_leaves=7",
               "--param", "min_data_in_leaf=5", "--quiet"])
    assert rc == 0
    return d


# --------------------------------------------------------------------------------------------
# convert
# --------------------------------------------------------------------------------------------


def test_convert_prints_rows_features_chunks_and_path(tmp_path, capsys):
    src = _make_csv(tmp_path / "data.csv", n=300)
    dest = tmp_path / "data.zarr"
    assert main(["convert", str(src), str(dest), "--label", "target", "--drop", "row_id",
                 "--chunk-rows", "100"]) == 0
    out = capsys.readouterr().out
    assert "300 rows x 4 features" in out
    assert "3 chunks of up to 100 rows" in out
    assert str(dest) in out
    ds = open_dataset(dest)
    assert ds.feature_names == ("f0", "f1", "f2", "f3") and ds.label == "target"
    expected = pd.read_csv(src)
    np.testing.assert_array_equal(ds.y.compute(), expected["target"].to_numpy())

    # an existing destination is refused without --overwrite, replaced with it
    assert main(["convert", str(src), str(dest), "--label", "target", "--drop", "row_id"]) == 2
    assert "--overwrite" in _err_line(capsys, "convert")
    assert main(["convert", str(src), str(dest), "--label", "target", "--drop", "row_id",
                 "--overwrite"]) == 0


def test_convert_errors(tmp_path, capsys):
    src = _make_csv(tmp_path / "data.csv", n=50)
    assert main(["convert", str(tmp_path / "missing.csv"), str(tmp_path / "o.zarr"),
                 "--label", "target"]) == 2
    assert "does not exist" in _err_line(capsys, "convert")
    assert main(["convert", str(src), str(tmp_path / "o.zarr")]) == 2
    assert "--label" in _err_line(capsys, "convert")
    assert main(["convert", str(src), str(tmp_path / "o.zarr"), "--label", "targte"]) == 2
    assert "not found" in _err_line(capsys, "convert")
    assert not (tmp_path / "o.zarr").exists()


# --------------------------------------------------------------------------------------------
# train
# --------------------------------------------------------------------------------------------


def test_train_prints_every_round_and_saves(workspace, tmp_path, capsys):
    model = tmp_path / "m.json"
    assert main(["train", str(workspace / "train.zarr"), "--model", str(model),
                 "--valid", str(workspace / "valid.zarr"), "--param", "num_iterations=4",
                 "metric=l2,rmse", "num_leaves=7", "min_data_in_leaf=5"]) == 0
    out = capsys.readouterr().out
    booster = Booster.load_model(model)
    rounds = re.findall(r"^\[(\d+)\]\tvalid_0's l2: (\S+)\tvalid_0's rmse: (\S+)$", out, re.M)
    assert [int(r[0]) for r in rounds] == [1, 2, 3, 4]
    scores = booster.evals_result["valid_0"]["l2"]
    np.testing.assert_allclose([float(r[1]) for r in rounds], scores, rtol=1e-5)
    assert booster.num_iterations() == 4
    assert f"Saved model to {model}" in out
    assert booster.feature_names == ["f0", "f1", "f2", "f3"]


def test_train_refuses_existing_model(workspace, capsys):
    model = workspace / "model.json"
    before = model.read_bytes()
    assert main(["train", str(workspace / "train.zarr"), "--model", str(model),
                 "--param", "n_estimators=2"]) == 2
    line = _err_line(capsys, "train")
    assert "already exists" in line and "--overwrite" in line
    assert model.read_bytes() == before


def test_train_overwrite_replaces_only_a_model_file(workspace, tmp_path, capsys):
    train = str(workspace / "train.zarr")
    data = tmp_path / "mydata.tsv"
    data.write_text("a\tb\n1\t2\n")
    assert main(["train", train, "--model", str(data), "--overwrite", "--quiet",
                 "--param", "n_estimators=1"]) == 2
    line = _err_line(capsys, "train")
    assert "refusing to overwrite" in line and "not" in line and "model file" in line
    assert data.read_text() == "a\tb\n1\t2\n"
    model = tmp_path / "m.json"
    for _ in range(2):  # a new model file, then --overwrite replaces the model file
        assert main(["train", train, "--model", str(model), "--overwrite", "--quiet",
                     "--param", "n_estimators=1"]) == 0
    assert Booster.load_model(model).num_trees() == 1


def test_train_cache_path_overlapping_the_model_fails_before_training(workspace, tmp_path,
                                                                      capsys):
    train, model = str(workspace / "train.zarr"), tmp_path / "m.json"
    for cache in (model, tmp_path):  # the model's own path, or a folder holding it
        assert main(["train", train, "--model", str(model), "--cache", "disk",
                     "--cache-path", str(cache), "--param", "n_estimators=1"]) == 2
        line = _err_line(capsys, "train")
        assert "overlap" in line and "--cache-path" in line
        assert capsys.readouterr().out == ""  # nothing trained
    assert not model.exists() and list(tmp_path.iterdir()) == []


def test_train_says_when_a_named_cache_path_was_not_used(workspace, tmp_path, capsys):
    cache = tmp_path / "c"
    assert main(["train", str(workspace / "train.zarr"), "--model", str(tmp_path / "m.json"),
                 "--cache-path", str(cache), "--param", "n_estimators=1", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"nothing was written to --cache-path '{cache}'" in out and "in memory" in out
    assert not cache.exists()


def test_train_errors(workspace, tmp_path, capsys):
    train = str(workspace / "train.zarr")
    model = str(tmp_path / "m.json")
    assert main(["train", str(tmp_path / "nope.zarr"), "--model", model]) == 2
    assert "nope.zarr" in _err_line(capsys, "train")
    assert main(["train", train, "--model", model, "--param", "num_leafs=7"]) == 2
    line = _err_line(capsys, "train")
    assert "num_leafs" in line and "did you mean" in line and "num_leaves" in line
    assert main(["train", train, "--model", model, "--param", "num_leaves=many"]) == 2
    assert "num_leaves" in _err_line(capsys, "train")
    assert main(["train", train, "--model", model, "--param", "num_leaves"]) == 2
    assert "NAME=VALUE" in _err_line(capsys, "train")
    assert main(["train", train, "--model", model, "--objective", "binary",
                 "--param", "objective=regression"]) == 2
    assert "conflicts" in _err_line(capsys, "train")
    assert main(["train", train, "--model", str(tmp_path / "no" / "m.json")]) == 2
    assert "does not exist" in _err_line(capsys, "train")
    assert not (tmp_path / "m.json").exists()


def test_train_resume_continues_a_checkpoint_to_the_uninterrupted_model(workspace, tmp_path):
    """--checkpoint FILE --checkpoint-every 2 on a 3-round run writes round 2; --resume with
    n_estimators=5 continues it to the workspace's 5-round model, tree for tree; --resume
    without a checkpoint, or --checkpoint naming the --model file, is an error (exit 2)."""
    ckpt = tmp_path / "fit.ckpt"
    common = ["train", str(workspace / "train.zarr"), "--valid", str(workspace / "valid.zarr"),
              "--param", "num_leaves=7", "min_data_in_leaf=5", "--quiet", "--checkpoint",
              str(ckpt)]
    assert main(common + ["--resume", "--model", str(tmp_path / "none.json"),
                          "--param", "n_estimators=5"]) == 2
    assert main(common + ["--model", str(ckpt), "--param", "n_estimators=5"]) == 2
    assert main(common + ["--checkpoint-every", "2", "--model", str(tmp_path / "three.json"),
                          "--param", "n_estimators=3"]) == 0
    assert main(common + ["--resume", "--model", str(tmp_path / "five.json"),
                          "--param", "n_estimators=5"]) == 0
    resumed = Booster.load_model(tmp_path / "five.json")
    whole = Booster.load_model(workspace / "model.json")
    assert resumed.num_iterations() == 5 and resumed.trees == whole.trees
    assert resumed.evals_result == whole.evals_result


def test_train_on_a_running_scheduler_closes_only_its_client(workspace, tmp_path):
    """--scheduler ADDRESS trains there: the model is the one of the embedded cluster (the data
    and its chunking decide the model, not the cluster), and the scheduler keeps running."""
    from distributed import Client, LocalCluster

    common = ["train", str(workspace / "train.zarr"), "--param", "n_estimators=3",
              "num_leaves=7", "min_data_in_leaf=5", "--quiet"]
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster:
        assert main(common + ["--model", str(tmp_path / "remote.json"),
                              "--scheduler", cluster.scheduler_address]) == 0
        with Client(cluster, set_as_default=False) as client:
            assert len(client.scheduler_info()["workers"]) == 1
    assert main(common + ["--model", str(tmp_path / "local.json")]) == 0
    assert Booster.load_model(tmp_path / "remote.json") == Booster.load_model(tmp_path / "local.json")


def test_train_disk_cache_is_kept_reused_and_gives_the_memory_model(workspace, tmp_path, capsys):
    cache = tmp_path / "train.cache"
    common = ["train", str(workspace / "train.zarr"), "--param", "n_estimators=5",
              "num_leaves=7", "min_data_in_leaf=5", "--quiet"]
    assert main(common + ["--model", str(tmp_path / "disk.json"), "--cache", "disk",
                          "--cache-path", str(cache)]) == 0
    out = capsys.readouterr().out
    assert f"Disk cache of the binned rows at {cache} (written" in out
    stored = inspect_cache_path(cache)  # an oocgbdt cache, complete (else it raises)
    assert stored is not None and stored["complete"]

    # --param cache=... keeps working; the same path given by --cache-path and --param agrees
    assert main(common + ["--model", str(tmp_path / "again.json"), "--param", "cache=disk",
                          f"cache_path={cache}", "--cache-path", str(cache)]) == 0
    out = capsys.readouterr().out
    assert f"Disk cache of the binned rows at {cache} (reused" in out

    assert main(common + ["--model", str(tmp_path / "memory.json"), "--cache", "memory"]) == 0
    assert "Disk cache" not in capsys.readouterr().out
    disk, again, memory = (Booster.load_model(tmp_path / f"{n}.json")
                           for n in ("disk", "again", "memory"))
    assert disk == memory and again == memory
    X = open_dataset(workspace / "valid.zarr").X.compute()
    np.testing.assert_array_equal(disk.predict(X), memory.predict(X))


def test_train_cache_flags_conflicting_with_param(workspace, tmp_path, capsys):
    train, model = str(workspace / "train.zarr"), str(tmp_path / "m.json")
    assert main(["train", train, "--model", model, "--cache", "disk",
                 "--param", "cache=memory"]) == 2
    line = _err_line(capsys, "train")
    assert "--cache disk conflicts with --param cache=memory" in line
    assert main(["train", train, "--model", model, "--cache-path", str(tmp_path / "a"),
                 "--param", f"cache_path={tmp_path / 'b'}"]) == 2
    line = _err_line(capsys, "train")
    assert "--cache-path" in line and "conflicts" in line and "cache_path=" in line
    assert main(["train", train, "--model", model, "--cache", "ssd"]) == 2
    assert "invalid choice" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists() and not (tmp_path / "a").exists()


def test_parse_param_types():
    assert parse_param("num_leaves=63") == ("num_leaves", 63)
    assert parse_param("learning_rate=0.05") == ("learning_rate", 0.05)
    assert parse_param("use_missing=false") == ("use_missing", False)
    assert parse_param("use_missing=0") == ("use_missing", False)
    assert parse_param("metric=auc,rmse") == ("metric", "auc,rmse")
    assert parse_param("objective=binary") == ("objective", "binary")
    assert parse_param("early_stopping_rounds=None") == ("early_stopping_rounds", None)
    assert parse_param("unknown_thing=3") == ("unknown_thing", 3)
    # None for str parameters that accept it (was refused: the text 'none' was kept)
    assert parse_param("feature_screening=none") == ("feature_screening", None)
    assert parse_param("feature_screening=ema") == ("feature_screening", "ema")
    assert parse_param("metric=None") == ("metric", "None")  # 'None' means no metric


# --------------------------------------------------------------------------------------------
# predict
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("out_name", ["pred.csv", "pred.zarr"])
@pytest.mark.parametrize("raw", [False, True])
def test_predict_from_zarr_matches_booster(workspace, tmp_path, capsys, out_name, raw):
    out = tmp_path / out_name
    model = workspace / "model.json"
    args = ["predict", str(model), str(workspace / "valid.zarr"), str(out)]
    assert main(args + (["--raw-score"] if raw else [])) == 0
    assert str(out) in capsys.readouterr().out
    X = open_dataset(workspace / "valid.zarr").X.compute()
    expected = Booster.load_model(model).predict(X, raw_score=raw)
    if out_name.endswith(".csv"):
        got = _read_csv_exact(out)
        assert list(got.columns) == ["raw_score" if raw else "prediction"]
        got = got.iloc[:, 0].to_numpy()
    else:
        got = zarr.open_array(str(out), mode="r")[:]
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, expected)

    # never overwritten without --overwrite
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert main(args) == 2
    assert "--overwrite" in _err_line(capsys, "predict")
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert main(args + ["--overwrite"]) == 0


@pytest.mark.parametrize("out_name", ["pred.csv", "pred.zarr"])
def test_predict_from_csv_matches_booster(workspace, tmp_path, out_name):
    out = tmp_path / out_name
    model = workspace / "model.json"
    # the label and id columns are named, so the model's features are matched by name
    assert main(["predict", str(model), str(workspace / "valid.csv"), str(out),
                 "--label", "target", "--drop", "row_id", "--chunk-rows", "64"]) == 0
    X = open_dataset(workspace / "valid.zarr").X.compute()
    expected = Booster.load_model(model).predict(X)
    if out_name.endswith(".csv"):
        got = _read_csv_exact(out).iloc[:, 0].to_numpy()
    else:
        got = zarr.open_array(str(out), mode="r")[:]
    np.testing.assert_array_equal(got, expected)


def test_predict_csv_naming_only_some_features_is_refused(workspace, tmp_path, capsys):
    """With as many columns as features, a header naming only some of them was matched by
    position: every column fed to a wrong feature, exit 0."""
    frame = pd.read_csv(workspace / "valid.csv").drop(columns=["row_id", "target"])
    cols = list(frame.columns)
    partial = frame.rename(columns={cols[-1]: "other"})[[cols[1], cols[0]] + cols[2:-1] + ["other"]]
    src = tmp_path / "partial.csv"
    partial.to_csv(src, index=False)
    out = tmp_path / "p.csv"
    assert main(["predict", str(workspace / "model.json"), str(src), str(out)]) == 2
    line = _err_line(capsys, "predict")
    assert "names some of the model's features" in line and f"['{cols[-1]}']" in line
    assert not out.exists()


def test_predict_errors(workspace, tmp_path, capsys):
    model = str(workspace / "model.json")
    out = str(tmp_path / "p.csv")
    assert main(["predict", model, str(tmp_path / "missing.zarr"), out]) == 2
    assert "does not exist" in _err_line(capsys, "predict")
    assert main(["predict", str(tmp_path / "missing.json"), str(workspace / "valid.zarr"), out]) == 2
    assert "missing.json" in _err_line(capsys, "predict")
    # a header-less CSV with one column too many (the label) and no --label
    headerless = tmp_path / "h.csv"
    pd.read_csv(workspace / "valid.csv").drop(columns=["row_id"]).to_csv(
        headerless, index=False, header=False)
    assert main(["predict", model, str(headerless), out]) == 2
    assert "--label" in _err_line(capsys, "predict")
    assert not (tmp_path / "p.csv").exists()


def test_predict_overwrite_replaces_only_predictions(workspace, tmp_path, capsys):
    model, data = str(workspace / "model.json"), str(workspace / "valid.zarr")
    user_file = tmp_path / "mine.csv"
    user_file.write_text("a,b\n1,2\n")
    assert main(["predict", model, data, str(user_file), "--overwrite"]) == 2
    assert "refusing to overwrite" in _err_line(capsys, "predict")
    assert user_file.read_text() == "a,b\n1,2\n"
    out = tmp_path / "p.tsv"
    for flag in ([], ["--raw-score"]):  # new, then replaced by predict's own output
        assert main(["predict", model, data, str(out), "--overwrite"] + flag) == 0
    assert out.read_text().splitlines()[0] == "raw_score"


def test_predict_multiclass_csv_columns(tmp_path, capsys):
    src = _make_csv(tmp_path / "mc.csv", n=300, classes=3)
    assert main(["convert", str(src), str(tmp_path / "mc.zarr"), "--label", "target",
                 "--drop", "row_id", "--chunk-rows", "100"]) == 0
    assert main(["train", str(tmp_path / "mc.zarr"), "--model", str(tmp_path / "mc.json"),
                 "--objective", "multiclass", "--num-class", "3", "--param", "n_estimators=3",
                 "num_leaves=4", "min_data_in_leaf=5", "--quiet"]) == 0
    out = tmp_path / "p.csv"
    assert main(["predict", str(tmp_path / "mc.json"), str(tmp_path / "mc.zarr"), str(out)]) == 0
    got = _read_csv_exact(out)
    assert list(got.columns) == [f"prediction_class_{k}" for k in range(3)]
    X = open_dataset(tmp_path / "mc.zarr").X.compute()
    np.testing.assert_array_equal(got.to_numpy(), Booster.load_model(tmp_path / "mc.json").predict(X))
    np.testing.assert_allclose(got.to_numpy().sum(axis=1), 1.0)


# --------------------------------------------------------------------------------------------
# quickstart, help, version
# --------------------------------------------------------------------------------------------


def test_quickstart_beats_the_baseline(tmp_path, capsys):
    workdir = tmp_path / "qs"
    assert main(["quickstart", "--workdir", str(workdir), "--quiet"]) == 0
    out = capsys.readouterr().out
    rmse = float(re.search(r"^Test RMSE:\s+([\d,.]+)", out, re.M).group(1).replace(",", ""))
    baseline = float(re.search(r"^Baseline RMSE:\s+([\d,.]+)", out, re.M).group(1).replace(",", ""))
    assert rmse < 0.5 * baseline  # 0.39 with the defaults (100 rounds of 31 leaves)
    for name in ("train.zarr", "test.zarr", "model.json"):
        assert (workdir / name).exists() and str(workdir / name) in out
    assert open_dataset(workdir / "train.zarr").n_rows + open_dataset(workdir / "test.zarr").n_rows == 20640
    assert len(open_dataset(workdir / "train.zarr").X.chunks[0]) == 8

    # a non-empty workdir is not reused without --overwrite
    assert main(["quickstart", "--workdir", str(workdir), "--n-estimators", "2"]) == 2
    assert "--overwrite" in _err_line(capsys, "quickstart")

    # the printed next step works, also after a rerun that leaves its predictions behind
    for rerun in (False, True):
        if rerun:
            assert main(["quickstart", "--workdir", str(workdir), "--n-estimators", "2",
                         "--overwrite", "--quiet"]) == 0
            out = capsys.readouterr().out
        hint = re.search(r"^Next: oocgbdt (predict .*)$", out, re.M).group(1).split()
        assert ("--overwrite" in hint) == rerun
        assert main(hint) == 0
        assert "Wrote predictions" in capsys.readouterr().out


@pytest.mark.parametrize("command", [[], ["convert"], ["train"], ["predict"], ["quickstart"]])
def test_help_exits_zero(command, capsys):
    assert main(command + ["--help"]) == 0
    assert "usage: oocgbdt" in capsys.readouterr().out


def test_train_help_explains_per_round_output(capsys):
    assert main(["train", "--help"]) == 0
    assert "evals_result" in capsys.readouterr().out


def test_version(capsys):
    import oocgbdt

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"oocgbdt {oocgbdt.__version__}"


def test_usage_errors_exit_two(capsys):
    assert main(["train"]) == 2  # DATA and --model missing
    assert "oocgbdt train: error:" in capsys.readouterr().err
    assert main([]) == 2
    assert main(["frobnicate"]) == 2


def test_export_writes_a_model_lightgbm_predicts_alike(tmp_path, capsys):
    lgb = pytest.importorskip("lightgbm")
    import oocgbdt
    rng = np.random.default_rng(7)
    X = rng.normal(size=(600, 4))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) > 0).astype(float)
    model = oocgbdt.train(dict(objective="binary", n_estimators=4, num_leaves=6), X, y)
    src = model.save_model(tmp_path / "model.json")
    out = tmp_path / "model.txt"
    assert main(["export", str(src), str(out)]) == 0
    assert "LightGBM text model" in capsys.readouterr().out
    theirs = lgb.Booster(model_file=str(out))
    assert np.array_equal(theirs.predict(X, raw_score=True), model.predict(X, raw_score=True))
    # the export reads back as a model (`oocgbdt predict` takes it too)
    # (probabilities: NumPy's exp against the C library's, a few ulps)
    assert np.abs(Booster.load_model(out).predict(X) - theirs.predict(X)).max() <= 1e-15
    assert main(["export", str(src), str(out)]) != 0  # exists: --overwrite needed
    assert "already exists" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# text columns: convert -> train -> predict with no hand encoding
# --------------------------------------------------------------------------------------------


def _text_frame(n, seed):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "dist": rng.normal(size=n).round(4),
        "carrier": rng.choice(["UA", "AA", "DL", "B6"], size=n),
        "origin": rng.choice(["JFK", "LGA", "EWR"], size=n),
    })
    frame.loc[rng.random(n) < 0.05, "carrier"] = None
    frame["delay"] = (frame["dist"] * 3 + (frame["carrier"] == "DL") * 2
                      + (frame["origin"] == "LGA") + 0.1 * rng.normal(size=n)).round(4)
    return frame


def test_text_columns_convert_train_predict_match_the_python_api(tmp_path, capsys):
    train_csv, valid_csv = tmp_path / "train.csv", tmp_path / "valid.csv"
    train = _text_frame(500, 0)
    train.to_csv(train_csv)  # with pandas' unnamed index column, left out by convert
    valid = _text_frame(150, 1)
    valid.loc[:9, "carrier"] = "ZZ"  # never seen in training: missing at predict
    valid.loc[:, "origin"] = valid["origin"].where(valid["origin"] != "EWR", None)
    valid.to_csv(valid_csv, index=False)
    assert main(["convert", str(train_csv), str(tmp_path / "train.zarr"), "--label", "delay",
                 "--chunk-rows", "128"]) == 0
    out = capsys.readouterr().out
    assert "'Unnamed: 0'" in out and "carrier (4)" in out and "origin (3)" in out
    # The validation file converted alone has other categories: mapped to training's by value.
    assert main(["convert", str(valid_csv), str(tmp_path / "valid.zarr"), "--label", "delay",
                 "--chunk-rows", "64"]) == 0
    model = tmp_path / "m.json"
    assert main(["train", str(tmp_path / "train.zarr"), "--model", str(model),
                 "--valid", str(tmp_path / "valid.zarr"),
                 "--param", "n_estimators=5", "num_leaves=7", "min_data_in_leaf=5",
                 "--quiet"]) == 0
    booster = Booster.load_model(model)
    features = valid.drop(columns="delay")
    import oocgbdt
    api = oocgbdt.train(dict(n_estimators=5, num_leaves=7, min_data_in_leaf=5),
                        train.drop(columns="delay"), train["delay"],
                        eval_set=[(features, valid["delay"])])
    assert booster.pandas_categorical == api.pandas_categorical == [
        ["AA", "B6", "DL", "UA"], ["EWR", "JFK", "LGA"]]
    assert booster == api
    assert booster.evals_result["valid_0"] == api.evals_result["valid_0"]
    expected = api.predict(features)
    valid_parquet = tmp_path / "valid.parquet"
    valid[["origin", "delay", "dist", "carrier"]].astype({"origin": "category"}).to_parquet(
        valid_parquet)  # columns in another order, a category column: matched by name and value
    for data in (valid_csv, tmp_path / "valid.zarr", valid_parquet):
        pred = tmp_path / f"pred-{data.suffix[1:]}.csv"
        args = ["predict", str(model), str(data), str(pred)]
        assert main(args + (["--label", "delay"] if data.suffix != ".zarr" else [])) == 0
        np.testing.assert_array_equal(_read_csv_exact(pred).iloc[:, 0].to_numpy(), expected)


def test_text_errors_name_cli_flags(tmp_path, capsys):
    src = tmp_path / "t.csv"
    _text_frame(60, 0).to_csv(src, index=False)
    assert main(["convert", str(src), str(tmp_path / "o.zarr"), "--label", "delay",
                 "--categorical", "none"]) == 2
    line = _err_line(capsys, "convert")
    assert "['carrier', 'origin'] hold text" in line and "--categorical carrier,origin" in line
    assert "categorical=" not in line and "drop=" not in line  # CLI terms, not Python syntax
    assert main(["convert", str(src), str(tmp_path / "o.zarr"), "--label", "delay",
                 "--categorical", "carrier"]) == 2
    assert "--categorical origin" in _err_line(capsys, "convert")
    assert main(["convert", str(src), str(tmp_path / "o.zarr"), "--label", "delay",
                 "--categorical", "carrier,origin"]) == 0
    capsys.readouterr()
    assert main(["train", str(tmp_path / "o.zarr"), "--model", str(tmp_path / "m.json"),
                 "--param", "n_estimators=2", "--quiet"]) == 0
    capsys.readouterr()
    bad = tmp_path / "bad.csv"
    _text_frame(20, 1).assign(dist="far").to_csv(bad, index=False)
    assert main(["predict", str(tmp_path / "m.json"), str(bad), str(tmp_path / "p.csv"),
                 "--label", "delay"]) == 2
    line = _err_line(capsys, "predict")
    assert "['dist'] hold text" in line and "--drop" not in line


def test_train_init_score_files_give_the_functional_model(workspace, tmp_path, capsys):
    """--init-score (LightGBM's .init text, or a Zarr array) and --valid-init-score give the
    model and metrics of train(init_score=..., eval_init_score=...)."""
    import zarr

    import oocgbdt
    from oocgbdt.io.dataset import open_dataset
    ds, valid = open_dataset(workspace / "train.zarr"), open_dataset(workspace / "valid.zarr")
    rng = np.random.default_rng(7)
    init, vinit = rng.normal(size=ds.n_rows), rng.normal(size=valid.n_rows)
    np.savetxt(tmp_path / "train.init", init, fmt="%.17g")
    z = zarr.open(str(tmp_path / "valid_init.zarr"), mode="w", shape=vinit.shape, dtype="f8")
    z[:] = vinit
    params = dict(n_estimators=3, num_leaves=7, min_data_in_leaf=5)
    model = tmp_path / "m.json"
    assert main(["train", str(workspace / "train.zarr"), "--model", str(model), "--quiet",
                 "--valid", str(workspace / "valid.zarr"), "--init-score",
                 str(tmp_path / "train.init"), "--valid-init-score",
                 str(tmp_path / "valid_init.zarr"), "--param"]
                + [f"{k}={v}" for k, v in params.items()]) == 0
    ref = oocgbdt.train(dict(params, verbose=False), ds.X, ds.y, init_score=init,
                        eval_set=[(valid.X, valid.y)], eval_init_score=[vinit])
    got = Booster.load_model(model)
    assert got.trees == ref.trees and np.all(got.init_score == 0)
    assert got.evals_result == ref.evals_result
    assert main(["train", str(workspace / "train.zarr"), "--model", str(tmp_path / "n.json"),
                 "--init-score", str(tmp_path / "valid_init.zarr")]) == 2
    assert "init_score must have shape" in _err_line(capsys, "train")
