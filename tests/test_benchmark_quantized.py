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
