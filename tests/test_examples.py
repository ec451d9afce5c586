"""The scripts in ``examples/`` run at a small size and print figures that independent code
reproduces: each script runs as a subprocess (this interpreter) and must exit with 0; the metric
it prints is then recomputed with LightGBM (same data, same parameters) or NumPy.

Tolerances. oocgbdt grows LightGBM's trees (same binning, same split rule), so on the same rows
and parameters the two models differ only where histogram sums in another order make two
near-equal split gains swap, or where equal gains are broken towards another bin boundary;
over 10-20 trees that moves a test RMSE by well under 1% and a test AUC by well under 0.005,
the tolerances used by tests/dask/test_training.py for the same comparison. Figures that
involve no training (row counts, the share of non-zero cells, a baseline) are compared to the
precision the script prints them with.
"""
import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
#: Seconds one example may take at its test size (a few seconds to a minute on 2 cores).
TIMEOUT = 300


def run_example(name, *args, env=None, timeout=TIMEOUT):
    """Run ``examples/<name>`` with ``args``; its stdout, after checking it exited with 0."""
    full_env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    proc = subprocess.run([sys.executable, str(EXAMPLES / name), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=full_env)
    assert proc.returncode == 0, (f"{name} exited with {proc.returncode}\n--- stdout\n"
                                  f"{proc.stdout}\n--- stderr\n{proc.stderr[-5000:]}")
    return proc.stdout


def figure(out, label):
    """The number printed after ``label:`` at the start of a line of ``out``."""
    m = re.search(rf"^\s*{re.escape(label)}: ([-+0-9.eE]+)", out, re.MULTILINE)
    assert m, f"no line starting with {label!r} in:\n{out}"
    return float(m.group(1))


def load_example(name):
    """The module of ``examples/<name>`` (its ``main`` guarded, so importing runs nothing)."""
    spec = importlib.util.spec_from_file_location(f"example_{Path(name).stem}", EXAMPLES / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lgb_params(**extra):
    return dict(num_leaves=31, learning_rate=0.1, verbose=-1, deterministic=True, num_threads=1,
                **extra)


def auc(y, score):
    from sklearn.metrics import roc_auc_score
    return roc_auc_score(y, score)


def housing_rmse_oracle(rows, n_estimators):
    """LightGBM's test RMSE and the mean-label baseline on the housing examples' split (the
    first ``rows`` rows of the shipped file, read with pandas; every fifth row held out)."""
    from oocgbdt.datasets import QUICKSTART_LABEL, quickstart_path
    frame = pd.read_csv(quickstart_path(), sep="\t")
    y = frame.pop(QUICKSTART_LABEL).to_numpy(np.float64)[:rows]
    X = frame.to_numpy(np.float32)[:rows]
    X_test, y_test = X[4::5], y[4::5]
    X_train = np.concatenate([X[i::5] for i in range(4)])
    y_train = np.concatenate([y[i::5] for i in range(4)])
    model = lgb.train(lgb_params(objective="regression"), lgb.Dataset(X_train, y_train),
                      num_boost_round=n_estimators)
    rmse = float(np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2)))
    baseline = float(np.sqrt(np.mean((y_train.mean() - y_test) ** 2)))
    return rmse, baseline, len(y_train), len(y_test)


def check_housing_output(out, rows, n_estimators):
    rmse, baseline, n_train, n_test = housing_rmse_oracle(rows, n_estimators)
    assert f"train rows: {n_train}, test rows: {n_test}" in out, out
    ours = figure(out, "test RMSE")
    # Printed with 4 decimals: the baseline involves no training.
    assert figure(out, "baseline RMSE (mean training label)") == pytest.approx(baseline, abs=1e-3)
    assert ours < 0.7 * baseline, (ours, baseline)
    assert abs(ours - rmse) / rmse < 0.01, (ours, rmse)


def test_zarr_estimator_matches_lightgbm():
    """convert -> GBDTRegressor on a LocalCluster -> lazy predict: test RMSE within 1% of
    LightGBM's on the same split, well below the mean-label baseline. The size comes from the
    environment variable, as the script documents."""
    rows, n_estimators = 4000, 20
    out = run_example("zarr_estimator.py", "--n-estimators", n_estimators,
                      env={"OOCGBDT_EXAMPLE_ROWS": str(rows)})
    assert "predict returned dask.array" in out, out
    check_housing_output(out, rows, n_estimators)


def test_larger_than_memory_uses_the_disk_cache(tmp_path):
    """cache="disk" on a memory-limited 2-worker cluster: the bins lived on disk, one byte per
    cell (255 bins), the workers stayed under their limit, and the test AUC is LightGBM's
    within 0.005 on the stores the script wrote (exact leaf-wise growth, as LightGBM)."""
    rows, features, n_estimators = 20_000, 10, 10
    out = run_example("larger_than_memory.py", "--rows", rows, "--features", features,
                      "--n-estimators", n_estimators, "--grow-policy", "leafwise",
                      "--workdir", tmp_path)
    assert re.search(r"^\s*mode: disk$", out, re.MULTILINE), out
    assert figure(out, "bytes_binned") == rows * features
    assert figure(out, "bytes_on_disk") > 0
    raw_mib = float(re.search(rf"^training store: {rows} rows x {features} features, "
                              rf"([0-9.]+) MiB raw", out, re.MULTILINE).group(1))
    assert raw_mib == pytest.approx(rows * features * 4 / 2 ** 20, abs=0.05)  # 1 decimal
    limit_mib = 768.0  # the script's floor, as the store is small
    assert f"2 x {limit_mib:.1f} MiB" in out, out
    peaks = [float(v) for v in re.findall(r"^peak memory of worker \S+: ([0-9.]+) MiB", out,
                                          re.MULTILINE)]
    assert len(peaks) == 2 and all(0 < p < limit_mib for p in peaks), peaks

    from oocgbdt.io.dataset import open_dataset
    train, test = open_dataset(tmp_path / "train.zarr"), open_dataset(tmp_path / "test.zarr")
    X, y = np.asarray(train.X), np.asarray(train.y)
    X_test, y_test = np.asarray(test.X), np.asarray(test.y)
    assert figure(out, "test rows") == len(y_test)
    model = lgb.train(lgb_params(objective="binary"), lgb.Dataset(X, y),
                      num_boost_round=n_estimators)
    theirs = auc(y_test, model.predict(X_test))
    ours = figure(out, "test AUC")
    assert abs(ours - theirs) < 0.005, (ours, theirs)


def test_dask_ml_search_matches_lightgbm_cross_validation():
    """dask-ml's GridSearchCV over GBDTClassifier: every candidate's mean CV AUC is LightGBM's
    (scikit-learn's cross_val_score on the same folds) within 0.005, and the refitted best
    model's test AUC is that of LightGBM refitted with the printed best parameters."""
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    rows, n_estimators = 3000, 20
    out = run_example("dask_ml_search.py", "--rows", rows, "--n-estimators", n_estimators)
    example = load_example("dask_ml_search.py")
    X, y, X_test, y_test = example.make_data(rows)
    candidates = [(ast.literal_eval(p), float(s)) for p, s in
                  re.findall(r"^candidate (\{.*\}): mean CV AUC ([0-9.]+)$", out, re.MULTILINE)]
    assert len(candidates) == 4, out
    for params, ours in candidates:
        theirs = cross_val_score(
            lgb.LGBMClassifier(n_estimators=n_estimators, verbose=-1, deterministic=True,
                               n_jobs=1, **params),
            X, y, cv=StratifiedKFold(n_splits=3), scoring="roc_auc").mean()
        assert abs(ours - theirs) < 0.005, (params, ours, theirs)
    best = ast.literal_eval(re.search(r"^best parameters: (\{.*\})$", out, re.MULTILINE).group(1))
    assert figure(out, "best mean CV AUC") == max(s for _, s in candidates)
    assert best in [p for p, _ in candidates]
    model = lgb.LGBMClassifier(n_estimators=n_estimators, verbose=-1, deterministic=True,
                               n_jobs=1, **best).fit(X, y)
    theirs = auc(y_test, model.predict_proba(X_test)[:, 1])
    ours = figure(out, "test AUC of the refitted best model")
    assert abs(ours - theirs) < 0.005, (ours, theirs)


def test_sparse_libsvm_bundles_and_matches_lightgbm(tmp_path):
    """LibSVM -> sparse Zarr -> GBDTClassifier: the printed share of non-zero cells is the
    files', the one-hot features were bundled (no bundle can join two categorical columns,
    whose features are non-zero together), and the test AUC is LightGBM's within 0.005 on the
    files the script wrote."""
    from sklearn.datasets import load_svmlight_file
    rows, n_estimators = 5000, 20
    out = run_example("sparse_libsvm.py", "--rows", rows, "--n-estimators", n_estimators,
                      "--chunk-rows", 1000, "--workdir", tmp_path)
    example = load_example("sparse_libsvm.py")
    n_features = sum(example.CARDINALITIES)
    X, y = load_svmlight_file(str(tmp_path / "train.svm"), n_features=n_features,
                              zero_based=False)
    X_test, y_test = load_svmlight_file(str(tmp_path / "test.svm"), n_features=n_features,
                                        zero_based=False)
    assert X.shape[0] == rows
    assert "sparse=True" in out, out
    assert figure(out, "nnz fraction") == pytest.approx(X.nnz / (X.shape[0] * n_features),
                                                        abs=1e-6)
    n_bundles = int(re.search(r"^bundles: (\d+) from (\d+) features$", out, re.MULTILINE).group(1))
    assert len(example.CARDINALITIES) <= n_bundles < n_features, out
    model = lgb.train(lgb_params(objective="binary"), lgb.Dataset(X.astype(np.float32), y),
                      num_boost_round=n_estimators)
    theirs = auc(y_test, model.predict(X_test.astype(np.float32)))
    ours = figure(out, "test AUC")
    assert abs(ours - theirs) < 0.005, (ours, theirs)


def test_slurm_job_script_asks_for_one_single_threaded_worker(tmp_path):
    """--show-job-script builds the SLURMCluster and prints its batch script without
    submitting: one task, one CPU, the memory and partition asked for, one worker thread."""
    out = run_example("slurm_cluster.py", "--show-job-script", "--memory", "3GB", "--queue",
                      "debug", "--walltime", "00:05:00", "--workdir", tmp_path)
    for line in ("#SBATCH -p debug", "#SBATCH --cpus-per-task=1", "#SBATCH --mem=3G",
                 "#SBATCH -t 00:05:00", "#SBATCH -n 1"):
        assert line in out, out
    assert "--nthreads 1" in out, out


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="SLURM's sbatch is not on the PATH")
def test_slurm_cluster_matches_lightgbm(tmp_path):
    """2 SLURM jobs of one worker each: test RMSE within 1% of LightGBM's on the same split.
    The dataset goes to ``$OOCGBDT_SLURM_WORKDIR`` when set (a folder the compute nodes see),
    else to pytest's temporary folder."""
    rows, n_estimators = 4000, 20
    workdir = Path(os.environ.get("OOCGBDT_SLURM_WORKDIR") or tmp_path)
    out = run_example("slurm_cluster.py", "--rows", rows, "--n-estimators", n_estimators,
                      "--workdir", workdir, "--timeout", 500, timeout=900)
    assert len(re.findall(r"^worker \S+: 1 thread", out, re.MULTILINE)) == 2, out
    check_housing_output(out, rows, n_estimators)
