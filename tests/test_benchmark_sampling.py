"""Smoke run of ``python -m benchmarks.sampling --quick`` (small data, no targets).

In a subprocess: the benchmark sets OMP_WAIT_POLICY before LightGBM's OpenMP runtime loads,
which this test process (where other tests import LightGBM) could not honour.
"""
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("lightgbm")
ROOT = Path(__file__).resolve().parents[1]


def test_sampling_benchmark_quick(shared_data):
    from benchmarks import sampling
    run = subprocess.run([sys.executable, "-m", "benchmarks.sampling", "--quick"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "OOCGBDT_DATA": str(shared_data)})
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    for name in sampling.DATASETS:
        assert f"## {name}:" in out
    rows = [line.split("|") for line in out.splitlines() if line.startswith("| ")]
    runs = [(r[1].strip(), r[2].strip()) for r in rows if r[1].strip() in sampling.RUNNERS]
    assert sorted(runs) == sorted((lib, st) for lib in sampling.RUNNERS
                                  for st in sampling.STRATEGIES for _ in sampling.DATASETS)
    verdicts = out.count("GOSS beats bagging") + out.count("GOSS does not beat bagging")
    assert verdicts == 2 * 4  # two libraries x (AUC, AUC, multi_logloss, multi_error)
    assert "SE)" in out  # lightgbm_binary runs 2 seeds in the quick run: an error bar
    assert "OMP_WAIT_POLICY=PASSIVE" in out
