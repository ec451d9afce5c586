"""Smoke run of ``python -m benchmarks.quantized --quick`` (small data, no targets).

In a subprocess: the benchmark sets OMP_WAIT_POLICY before LightGBM's OpenMP runtime loads.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("lightgbm")
ROOT = Path(__file__).resolve().parents[1]


def test_quantized_benchmark_quick(shared_data):
    run = subprocess.run([sys.executable, "-m", "benchmarks.quantized", "--quick"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "OOCGBDT_DATA": str(shared_data)})
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    assert "## synthetic_1m: 10000 x 100" in out and "## lightgbm_binary:" in out
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in out.splitlines()
            if line.startswith("| oocgbdt") or line.startswith("| lightgbm")]
    assert sorted((r[0], r[1]) for r in rows) == sorted(
        (lib, mode) for lib in ("oocgbdt", "lightgbm") for mode in ("float", "quant")
        for _ in range(2))
    for r in rows:
        assert 0.5 < float(r[6]) <= 1.0  # a test AUC
        float(r[3]), float(r[4])  # CPU and histogram seconds are numbers (nan: not timed)
    assert "load average before" in out and "load average after" in out


def test_seed_differences_are_quantized_minus_float_auc_per_seed(shared_data, monkeypatch,
                                                                  capsys):
    """``--seeds``: each printed difference is the quantized fit's test AUC with that seed minus
    the float fit's, checked for LightGBM against its own fits scored by scikit-learn, and the
    mean is the mean of the differences."""
    import statistics

    import lightgbm as lgb
    from sklearn.metrics import roc_auc_score

    from benchmarks import quantized
    monkeypatch.setenv("OOCGBDT_DATA", str(shared_data))
    got = quantized.seed_differences("lightgbm_binary", True, 5, 2)
    X, y, Xt, yt = quantized.load("lightgbm_binary", True)
    params = dict(quantized.COMMON, verbose=-1, num_threads=quantized.N_THREADS)

    def auc(extra):
        booster = lgb.train(dict(params, **extra), lgb.Dataset(X, y), num_boost_round=5)
        return roc_auc_score(yt, booster.predict(Xt))

    base = auc({})
    expected = [auc(dict(use_quantized_grad=True, seed=k)) - base for k in range(2)]
    assert got["lightgbm"] == pytest.approx(expected, abs=1e-12)
    assert set(got) == {"oocgbdt", "lightgbm"} and len(got["oocgbdt"]) == 2
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in capsys.readouterr().out
            .splitlines() if line.startswith("| oocgbdt |") or line.startswith("| lightgbm |")]
    for row in rows:
        diffs = [float(v) for v in row[1:3]]
        assert float(row[3]) == pytest.approx(statistics.fmean(diffs), abs=1e-5)


def test_the_count_floor_counts_each_row_bin_as_numpy_does():
    """``--kernels``' floor adds one per row and column into the cell of the row's bin: NumPy's
    per-column bincounts, over a row list and over every row (no list)."""
    import numpy as np

    from benchmarks.quantized import count_floor
    rng = np.random.default_rng(0)
    for n_cols in (3, 8, 13, 50):  # a tail only, whole words, words and a tail
        X = rng.integers(0, 255, size=(700, n_cols), dtype=np.uint8)
        offsets = (1 + 255 * np.arange(n_cols)).astype(np.int64)
        listed = np.sort(rng.choice(700, 90, replace=False)).astype(np.int32)
        for rows in (listed, None):
            cells = np.zeros(1 + 255 * n_cols, dtype=np.int32)
            count_floor(X, offsets, rows, cells)
            picked = X if rows is None else X[rows]
            expected = np.zeros_like(cells)
            for j in range(n_cols):
                expected[offsets[j]:offsets[j] + 255] = np.bincount(picked[:, j], minlength=255)
            np.testing.assert_array_equal(cells, expected)


def test_kernels_quick_run_prints_each_case_and_the_bound():
    run = subprocess.run([sys.executable, "-m", "benchmarks.quantized", "--kernels", "--quick"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in out.splitlines()
            if line.startswith("| 50 |") or line.startswith("| 100 |")]
    assert [(r[0], r[1]) for r in rows] == [
        (c, s) for c in ("50", "100") for s in ("10% listed", "30% listed", "every row")]
    bounds = []
    for r in rows:
        fl, it, floor = (float(x) for x in r[2:5])
        assert min(fl, it, floor) > 0
        # the ratios are of the unrounded times: the printed times are within 0.0005 of them,
        # which moves a / b by at most 0.0005 * (1 + a / b) / b, and the ratio is printed
        # to 0.005
        for ratio, (a, b) in ((r[5], (fl, it)), (r[6], (fl, floor))):
            tol = 0.005 + 0.0005 * (1 + a / b) / (b - 0.0005) + 1e-9
            assert float(ratio.rstrip("x")) == pytest.approx(a / b, abs=tol)
        bounds.append(r[6])
    assert f"could gain on histograms here: {max(bounds, key=lambda b: float(b[:-1]))}" in out
    assert "load average before" in out and "load average after" in out


@pytest.mark.parametrize("argv, named", [(["--rows", "100"], "--rows"),
                                         (["--kernels", "--rows", "0"], "--rows"),
                                         (["--kernels", "--seeds", "2"], "--seeds"),
                                         (["--kernels", "--datasets", "a9a"], "--datasets")])
def test_options_that_would_be_ignored_are_refused(argv, named):
    run = subprocess.run([sys.executable, "-m", "benchmarks.quantized", *argv],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and named in run.stderr, run.stderr
