"""Smoke run of ``python -m benchmarks.run --suite smoke``: every tool of every scenario has a
record (ok, or failed with its message) and the JSON, markdown and PNG outputs exist.

In a subprocess, as a user runs it: the suite owns a LocalCluster of worker processes and sets
OMP_WAIT_POLICY before LightGBM's OpenMP runtime loads. The smoke suite takes well under a
minute on a quiet 2-core machine; the timeout leaves room for a busy one.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("lightgbm")
pytest.importorskip("xgboost")
pytest.importorskip("matplotlib")
pytest.importorskip("psutil")
ROOT = Path(__file__).resolve().parents[1]


def test_benchmark_suite_smoke(tmp_path):
    from benchmarks import run as suite
    out = tmp_path / "out"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    proc = subprocess.run([sys.executable, "-m", "benchmarks.run", "--suite", "smoke", "--out",
                           str(out), "--data-dir", str(tmp_path / "data")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for name in ("results.json", "results.md", "time_per_tree_vs_rows.png",
                 "memory_inmemory.png", "memory_throughput.png", "memory_larger_than_memory.png"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    res = json.loads((out / "results.json").read_text())
    for key in ("cores", "ram_bytes", "load_start", "load_end", "versions"):
        assert key in res["machine"], key
    runs = res["runs"]
    assert all(r["tool"] != "harness" for r in runs), [r["error"] for r in runs]
    for r in runs:
        assert r["status"] in ("ok", "failed"), r
        if r["status"] == "failed":
            assert r["error"], r
        else:
            assert r["wall_seconds"] > 0 and 0.5 < r["test_auc"] <= 1.0, r
            assert r["peak_memory_bytes"] > 0 and r["seconds_per_tree"] > 0, r
        for key in ("rows", "features", "n_trees", "memory_series", "scenario", "label"):
            assert key in r, key
    # every tool on the in-memory scenario, oocgbdt's two caches at every throughput size,
    # and the four larger-than-memory runs plus oocgbdt's in-memory reference
    assert {r["tool"] for r in runs if r["scenario"] == "inmemory"} == set(suite.TOOLS)
    screened = [r for r in runs if r["label"] == suite.SCREENED_LABEL]
    assert len(screened) == 1 and screened[0]["extra"]["params"]["feature_screening"] == "ema"
    # each peer beside it, building the same share of the features per tree its own way
    for tool, name in suite.PEER_FRACTION_PARAMS.items():
        peer = [r for r in runs if r["label"] == suite.peer_fraction_label(tool)]
        assert len(peer) == 1 and peer[0]["tool"] == tool, tool
        if peer[0]["status"] == "ok":
            assert peer[0]["extra"]["params"][name] == suite.SCREENED_SHARE, peer[0]
    sizes = suite.SUITES["smoke"]["throughput"]["rows"]
    assert sorted((r["label"], r["rows"]) for r in runs if r["scenario"] == "throughput") == \
        sorted((f"oocgbdt cache={c}", n) for n in sizes for c in ("memory", "disk"))
    assert {r["tool"] for r in runs if r["scenario"] == "larger_than_memory"} == \
        {"oocgbdt", "lightgbm.dask", "xgboost.dask", "xgboost.extmem"}
    md = (out / "results.md").read_text()
    for line in ("## inmemory", "## throughput", "## larger_than_memory", "oocgbdt / lightgbm",
                 "oocgbdt / lightgbm.dask", "oocgbdt / xgboost.dask", "disk / memory",
                 f"{suite.SCREENED_LABEL} / lightgbm.dask", f"{suite.SCREENED_LABEL} / xgboost.dask",
                 f"{suite.SCREENED_LABEL} / lightgbm.dask feature_fraction=0.3",
                 f"{suite.SCREENED_LABEL} / xgboost colsample_bytree=0.3",
                 "linear", "worker restarts"):
        assert line in md, line
    assert "load average" in proc.stdout


def test_failed_runs_are_recorded(tmp_path):
    """A run that exceeds its timeout is killed and recorded as failed with the reason; the
    suite goes on to the next run."""
    out = tmp_path / "out"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    proc = subprocess.run([sys.executable, "-m", "benchmarks.run", "--suite", "smoke", "--out",
                           str(out), "--data-dir", str(tmp_path / "data"), "--scenarios",
                           "inmemory", "--tools", "oocgbdt", "lightgbm", "--timeout", "0.5"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    runs = json.loads((out / "results.json").read_text())["runs"]
    # oocgbdt at its defaults and screened, LightGBM at its defaults and with feature_fraction
    assert [r["tool"] for r in runs] == ["oocgbdt", "oocgbdt", "lightgbm", "lightgbm"]
    assert all(r["status"] == "failed" and "timeout" in r["error"] for r in runs), runs


def test_process_tree_memory_sees_children():
    """The sampler sums the RSS of this process and its children and keeps each pid's peak."""
    import gc
    import time

    from benchmarks._common import ProcessTreeMemory
    # Garbage left by earlier tests of this process would be freed during the sampling window,
    # lowering this process's RSS by as much as the child adds: free it before the baseline.
    gc.collect()
    code = "import numpy, time; a = numpy.ones(64 * 2**20 // 8); time.sleep(1.5)"
    with ProcessTreeMemory(interval=0.05, rescan=0.1) as mem:
        t0 = time.time()
        child = subprocess.Popen([sys.executable, "-c", code])
        child.wait(timeout=60)
        t1 = time.time()
    peaks = mem.pid_peaks(t0, t1)
    assert peaks.get(child.pid, 0) >= 64 * 2**20
    # The sample where the child held its array: the tree's total is this process's RSS plus
    # the child's. (Compared with this process's RSS in the same sample, not with the total
    # before the child started: a test process holding gigabytes can give back more than 64
    # MB meanwhile.)
    when, total, per = max(mem.samples, key=lambda s: s[2].get(child.pid, 0))
    assert t0 <= when <= t1 + 0.2
    assert total == sum(per.values()) and set(per) >= {os.getpid(), child.pid}
    assert total - per[os.getpid()] >= 64 * 2**20
    assert mem.peak(t0, t1) >= total
    series = mem.series(t0, t1)
    assert series and all(0 <= t <= t1 - t0 + 1 for t, _ in series)


def test_alternating_rounds_and_median_run():
    """Repeated runs rotate the order (every tool runs first once in len(tools) rounds) and the
    ratios read the median run of each label."""
    from benchmarks import run as suite
    kinds = ["a", "b", "c"]
    pairs = suite.alternating_rounds(kinds, 3)
    assert [k for k, _ in pairs] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    rounds = [[x for k, x in pairs if k == r] for r in range(3)]
    assert [r[0] for r in rounds] == ["a", "b", "c"]
    assert all(sorted(r) == kinds for r in rounds)
    recs = [dict(scenario="inmemory", label="a", status="ok", wall_seconds=w, repeat=i)
            for i, w in enumerate([30.0, 10.0, 20.0])]
    assert suite._median_run(recs, "inmemory", "a")["wall_seconds"] == 20.0
    recs[2]["status"] = "failed"  # two ok runs left: the lower middle
    assert suite._median_run(recs, "inmemory", "a")["wall_seconds"] == 10.0
    assert suite._median_run(recs, "inmemory", "b") is None


def test_peers_skip_the_share_of_features_that_ema_fs_builds():
    """The peers' feature_fraction / colsample_bytree runs use EMA-FS's default share."""
    from benchmarks import run as suite
    from oocgbdt.params import resolve_params
    assert suite.SCREENED_SHARE == resolve_params(dict(objective="binary"))["screening_ratio"]
    assert suite.peer_fraction_label("lightgbm.dask") == "lightgbm.dask feature_fraction=0.3"
