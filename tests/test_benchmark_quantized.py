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
