"""The benchmark suite: oocgbdt against LightGBM, XGBoost, scikit-learn, lightgbm.dask,
xgboost.dask and XGBoost external memory, on the same data and the same LocalCluster, with
results as JSON, markdown and plots.

Usage::

    python -m benchmarks.run --suite smoke|quick|full [--out DIR] [--scenarios NAME ...]
        [--tools NAME ...] [--ltm-rows N] [--ltm-features N] [--ltm-worker-memory 1.5GiB]
        [--ltm-growth depthwise|leafwise8] [--timeout S] [--peer-timeout S] [--data-dir DIR]
        [--repeats N]

Sizes (``SUITES``):

- ``smoke``: a few thousand rows, 2 trees of 4 leaves, every scenario on one cluster of 1 GiB
  workers, runs in sequence in one subprocess per scenario; about 35-45 s on a quiet 2-core
  machine (80 s at load 8). ``tests/test_benchmark_run.py`` runs it and checks the files.
- ``quick``: inmemory 250k x 100, 50 trees; throughput 250k/500k/1M x 100, 20 trees;
  larger_than_memory 13M x 50 (2.6 GB raw, 3.1x of 2 workers x 400 MiB), 10 trees. About
  30-60 minutes here, depending on how the out-of-core runs fail or finish.
- ``full``: the acceptance sizes: inmemory 1M x 100, 100 trees; throughput 1M/2M/4M x 100,
  50 trees; larger_than_memory 25M x 100 (10 GB raw, 3.1x of 2 workers x 1.5 GiB), 20 trees. Hours;
  needs a quiet machine.

Check ``uptime`` first: the load average is printed at the start and the end (and a warning when
it exceeds the cores), and timings are only as good as the quiet the run got.

Outputs go to ``--out`` (default ``benchmarks/results/<suite>-<YYYYmmdd-HHMMSS>/``, gitignored):

- ``results.json``: ``machine`` (cores, RAM, load averages at start and end, library versions,
  git commit), ``suite`` and its sizes, and ``runs``: one record per tool and scenario with
  ``tool``, ``label``, ``scenario``, ``rows``, ``features``, ``n_trees`` (requested and built),
  ``wall_seconds`` (the fit), ``seconds_per_tree`` (wall / trees built), ``peak_memory_bytes``
  (peak RSS summed over the whole process tree during the fit: this process with the scheduler,
  every nanny and worker, and the run's own subprocess), ``peak_job_bytes`` (the run's
  subprocess alone), ``worker_peak_bytes``, ``worker_restarts``, ``cluster_events`` (memory and
  restart lines from the worker and nanny logs), ``test_auc``, ``status`` (``ok``/``failed``),
  ``error`` and ``memory_series`` (sampled process-tree RSS over the run);
- ``results.md``: the markdown tables, ratio lines and PASS/FAIL targets (also printed);
- ``time_per_tree_vs_rows.png``, ``memory_<scenario>.png``: plots (matplotlib, Agg);
- ``results.partial.json``: the runs so far, rewritten after each run (kept if the suite
  itself is killed);
- ``logs/``: each run's subprocess output, and ``cluster.log`` (what the scheduler and the
  workers printed; memory, restart, warning and error lines of a run are copied into its
  ``cluster_events``).

Scenarios:

- ``inmemory``: ``benchmarks.synthetic_1m.make_data`` (make_classification, seed 0), written to a
  Zarr store once (cached in ``--data-dir``, default ``benchmarks/results/data``), 100 trees of 31
  leaves, learning rate 0.1, 255 bins, every tool; oocgbdt runs twice, at its defaults and with
  its feature screening (``feature_screening="ema"``, label ``oocgbdt feature_screening=ema``),
  and every ratio is printed and judged for both. Beside the screened run, each peer also runs
  with its own way of skipping features at the same share of them (:data:`SCREENED_SHARE`, EMA-FS's
  default ``screening_ratio``): LightGBM and lightgbm.dask with ``feature_fraction``, XGBoost and
  xgboost.dask with ``colsample_bytree`` (a new draw per tree in both), labelled e.g.
  ``lightgbm.dask feature_fraction=0.3``; their ratios to the screened run are printed, not
  judged. Targets: oocgbdt wall time <= 1.5x LightGBM,
  <= 0.8x lightgbm.dask and xgboost.dask, test AUC within 0.002 of LightGBM. With ``--repeats N``
  (default 3 in full, 1 otherwise) every tool runs N times, in rounds that each start one tool
  later in the list (no tool always runs first, on memory the machine has just reclaimed), and
  the ratios compare median wall times.
- ``throughput``: oocgbdt ``cache="memory"`` against ``cache="disk"`` (rows x trees per second;
  target disk >= 0.5x memory) and seconds per tree at 1x, 2x, 4x rows for oocgbdt and the peers
  (target for oocgbdt: time per tree from 1x to 4x rows <= 1.1x linear, measured on
  ``tree_stats`` seconds, i.e. the trees without set-up). The data is the chunk-seeded generator
  below, one store of 4x rows read by prefixes.
- ``larger_than_memory``: a dense binary task generated chunk by chunk (chunk ``i`` from
  ``default_rng([seed, i])``: float32 N(0, 1) features, label ``Bernoulli(sigmoid(f(x)))`` with
  ``f`` a nonlinear function of the first 10 features) and written to Zarr without ever being
  held whole; its raw float32 size is about 3x the limited cluster's total ``memory_limit`` in
  the full suite (25M x 100 = 10 GB against 2 workers x 1.5 GiB = 3.2 GB; quick: 13M x 100 =
  5.2 GB against 2 x 768 MiB). A 200k-row test set (separate
  seeds) is kept in memory. oocgbdt trains 20 trees with ``cache="disk"`` and
  ``grow_policy="depthwise"`` (or ``max_leaves_per_pass=8``: ``--ltm-growth leafwise8``) on the
  limited cluster; recorded: worker restarts (worker pids before and after, nanny logs),
  each worker's peak RSS against its limit, the process-tree peak against total limit + 1 GiB,
  passes per tree and the test AUC, compared with oocgbdt ``cache="memory"`` on an unlimited
  cluster (AUC within 0.002). lightgbm.dask and xgboost.dask run on the limited cluster (expected
  to fail; how they fail is recorded) and XGBoost external memory (``ExtMemQuantileDMatrix`` from
  a ``DataIter`` over the Zarr chunks) in its own process.

Every run is a subprocess (``python -m benchmarks.run --job ...``; quick and full: one per run,
smoke: one per scenario, runs in sequence) with a timeout, so a crash, an out-of-memory kill or a
hang of one tool is recorded as ``failed`` with its message and the suite goes on. The Dask tools
connect to the LocalCluster (2 worker processes x 1 thread, nannies) that this process owns, so
one sampler here sees the whole process tree. Workers are restarted after every Dask run in
quick and full (clean memory for the next one) and after any failure. In-process tools get 2
threads; their ``peak_memory_bytes`` includes the idle cluster, ``peak_job_bytes`` does not.

Tool parameters (every other one at its library's default): oocgbdt ``num_leaves=31,
learning_rate=0.1, max_bin=255``; LightGBM and lightgbm.dask the same with
``enable_bundle=False``; XGBoost, xgboost.dask, XGBoost external memory ``tree_method="hist",
grow_policy="lossguide", max_leaves=31, max_depth=0, eta=0.1, max_bin=255`` (depthwise
``max_depth=5`` when oocgbdt grows depthwise); scikit-learn ``HistGradientBoostingClassifier(
max_leaf_nodes=31, learning_rate=0.1, max_bins=255, early_stopping=False)``. Each run first fits
2 rounds on 5,000 rows, untimed (JIT caches, OpenMP and worker start-up), except in smoke.

Exit code 1 when a target is missed (quick and full; smoke judges nothing).
"""
from __future__ import annotations

import os
import argparse
import json
import math
import platform
import shutil
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

from benchmarks._common import ProcessTreeMemory, alternating_rounds, markdown_table, machine_info

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ("oocgbdt", "lightgbm", "xgboost", "sklearn", "lightgbm.dask", "xgboost.dask",
         "xgboost.extmem")
DASK_TOOLS = ("oocgbdt", "lightgbm.dask", "xgboost.dask")
SCENARIOS = ("inmemory", "throughput", "larger_than_memory")
GiB = 2**30

#: Sizes per suite. ``timeout``: seconds per run; ``peer_timeout``: lightgbm.dask and
#: xgboost.dask on the limited cluster (expected to fail, possibly by hanging).
SUITES = {
    "smoke": dict(
        inmemory=dict(rows=4_000, features=5, n_trees=2),
        throughput=dict(rows=[2_000, 8_000], features=5, n_trees=2, tools=["oocgbdt"]),
        larger_than_memory=dict(rows=4_000, features=5, chunk_rows=1_000, test_rows=1_000,
                                n_trees=2, worker_memory="1GiB"),
        common=dict(num_leaves=4), one_cluster="1GiB", prepare_inprocess=True,
        timeout=120, peer_timeout=60, isolate=False, warmup=False, reset=False, interval=0.05,
        repeats=1),
    "quick": dict(
        inmemory=dict(rows=250_000, features=100, n_trees=50),
        throughput=dict(rows=[250_000, 500_000, 1_000_000], features=100, n_trees=20,
                        tools=list(TOOLS)),
        larger_than_memory=dict(rows=13_000_000, features=100, chunk_rows=250_000,
                                test_rows=200_000, n_trees=10, worker_memory="768MiB",
                                timeout=900),
        timeout=1200, peer_timeout=240, isolate=True, warmup=True, reset=True, interval=0.2,
        repeats=1),
    "full": dict(
        inmemory=dict(rows=1_000_000, features=100, n_trees=100),
        throughput=dict(rows=[1_000_000, 2_000_000, 4_000_000], features=100, n_trees=50,
                        tools=list(TOOLS)),
        larger_than_memory=dict(rows=25_000_000, features=100, chunk_rows=250_000,
                                test_rows=200_000, n_trees=20, worker_memory="1.5GiB",
                                timeout=1800),
        timeout=2400, peer_timeout=600, isolate=True, warmup=True, reset=True, interval=0.2,
        repeats=3),
}

TARGETS = dict(vs_lightgbm=1.5, vs_dask_peers=0.8, auc=0.002, disk_vs_memory=0.5,
               growth_vs_linear=1.1)
COMMON = dict(num_leaves=31, learning_rate=0.1, max_bin=255)
#: The in-memory scenario's second oocgbdt run: EMA-FS at its defaults (screening_ratio 0.3,
#: screening_warmup 5), every other parameter as in the first.
SCREENED_PARAMS = dict(feature_screening="ema")
SCREENED_LABEL = "oocgbdt feature_screening=ema"
#: The share of features the screened run builds per tree (oocgbdt's default ``screening_ratio``),
#: and each peer's parameter for building that share per tree: the runs that put the peers' own
#: way of skipping features beside EMA-FS.
SCREENED_SHARE = 0.3
PEER_FRACTION_PARAMS = {"lightgbm": "feature_fraction", "lightgbm.dask": "feature_fraction",
                        "xgboost": "colsample_bytree", "xgboost.dask": "colsample_bytree"}
WARMUP_ROWS, WARMUP_ROUNDS = 5_000, 2
LOG_KEYWORDS = ("memory", "restart", "pausing", "paused", "killed", "terminat", "spill",
                "exceed", "died", "lost")


def peer_fraction_label(tool):
    """The label of ``tool``'s run at :data:`SCREENED_SHARE` of the features per tree."""
    return f"{tool} {PEER_FRACTION_PARAMS[tool]}={SCREENED_SHARE}"


# ============================================================================================
# Data (runs in a subprocess: this process stays small, its RSS is part of every measurement)
# ============================================================================================


def chunk_task(rng, n, features):
    """Rows of the chunked synthetic task: float32 N(0, 1) features, label
    Bernoulli(sigmoid(f(x))) with f a nonlinear function of the first 10 features
    (``benchmarks.sampling.synthetic``'s, generated per chunk)."""
    X = rng.standard_normal((n, features), dtype=np.float32)
    x = X[:, np.arange(10) % features].astype(np.float64)  # fewer than 10 features: repeats
    f = (1.2 * x[:, 0] - 0.8 * x[:, 1] + np.sin(2 * x[:, 2]) + x[:, 3] * x[:, 4]
         + 0.7 * np.abs(x[:, 5]) - 0.5 * x[:, 6] ** 2 + 0.5 * (x[:, 7] > 0) * x[:, 8]
         + 0.3 * x[:, 9])
    y = (f + rng.logistic(size=n) > 0).astype(np.float64)
    return X, y


def write_chunked_store(path, rows, features, chunk_rows, seed=0):
    """Write the chunked task to a Zarr dataset chunk by chunk (chunk i from
    ``default_rng([seed, i])``); never more than one chunk in memory."""
    from oocgbdt.io.dataset import DatasetWriter
    with DatasetWriter(path, features, chunk_rows=chunk_rows) as w:
        for i in range(math.ceil(rows / chunk_rows)):
            n = min(chunk_rows, rows - i * chunk_rows)
            X, y = chunk_task(np.random.default_rng([seed, i]), n, features)
            w.append(X, y)


def write_chunked_test(path, rows, features, seed=0, chunk_rows=100_000):
    """The held-out set of the chunked task: the same law, seeds ``[seed, 10**9 + i]``."""
    parts = [chunk_task(np.random.default_rng([seed, 10**9 + i]),
                        min(chunk_rows, rows - i * chunk_rows), features)
             for i in range(math.ceil(rows / chunk_rows))]
    np.savez(path, X=np.concatenate([p[0] for p in parts]),
             y=np.concatenate([p[1] for p in parts]))


def prepare(spec):
    """Write one data set (``spec``: kind, store, test, sizes) unless it exists already."""
    store, test = Path(spec["store"]), Path(spec["test"])
    if store.is_dir() and test.is_file():
        return
    if store.exists():
        shutil.rmtree(store)
    store.parent.mkdir(parents=True, exist_ok=True)
    if spec["kind"] == "make_classification":
        from benchmarks.synthetic_1m import make_data
        from oocgbdt.io.dataset import write_dataset
        X, y, Xt, yt = make_data(spec["rows"], spec["features"], seed=spec["seed"])
        write_dataset(store, X, y, chunk_rows=spec["chunk_rows"])
        np.savez(test, X=Xt, y=yt)
    else:
        write_chunked_store(store, spec["rows"], spec["features"], spec["chunk_rows"],
                            spec["seed"])
        write_chunked_test(test, spec["test_rows"], spec["features"], spec["seed"])


def data_spec(kind, data_dir, rows, features, chunk_rows, test_rows=None, seed=0):
    if kind == "make_classification":
        name = f"synth1m-{rows}x{features}-c{chunk_rows}-s{seed}"
        test = f"{name}-test.npz"
    else:
        name = f"chunked-{rows}x{features}-c{chunk_rows}-s{seed}"
        test = f"chunked-test-{test_rows}x{features}-s{seed}.npz"
    return dict(kind=kind, store=str(Path(data_dir) / f"{name}.zarr"),
                test=str(Path(data_dir) / test), rows=rows, features=features,
                chunk_rows=chunk_rows, test_rows=test_rows, seed=seed)


# ============================================================================================
# The tools (each runs inside a job subprocess)
# ============================================================================================


def _load_test(run):
    d = np.load(run["data"]["test"])
    return d["X"], d["y"]


def _lazy_train(run):
    from oocgbdt.io.dataset import open_dataset
    ds = open_dataset(run["data"]["store"])
    n = run["rows"]
    return ds.X[:n], ds.y[:n]


def _numpy_train(run):
    import dask
    X, y = _lazy_train(run)
    return dask.compute(X, y, scheduler="threads")


def _auc(y, p):
    from sklearn.metrics import roc_auc_score
    return float(roc_auc_score(y, p))


def _xgb_params(run, nthread=None):
    p = dict(objective="binary:logistic", tree_method="hist", eta=run["common"]["learning_rate"],
             max_bin=run["common"]["max_bin"], seed=0)
    if run.get("xgb_depthwise"):
        p.update(grow_policy="depthwise", max_depth=5, max_leaves=run["common"]["num_leaves"])
    else:
        p.update(grow_policy="lossguide", max_leaves=run["common"]["num_leaves"], max_depth=0)
    if nthread:
        p["nthread"] = nthread
    p.update(run.get("params", {}))  # the run's own (e.g. colsample_bytree)
    return p


def tool_oocgbdt(run, fit, client):
    import oocgbdt
    params = dict(objective="binary", n_estimators=run["n_trees"], verbose=False, **run["common"],
                  **run.get("params", {}))
    X, y = _lazy_train(run)
    if run["warmup"]:
        oocgbdt.train(dict(params, n_estimators=WARMUP_ROUNDS), X[:WARMUP_ROWS], y[:WARMUP_ROWS],
                      client=client)
    with fit:
        model = oocgbdt.train(params, X, y, client=client)
    Xt, yt = _load_test(run)
    stats = list(getattr(model, "tree_stats", None) or [])
    extra = dict(params=params)
    if stats:
        extra.update(tree_seconds=[float(s["seconds"]) for s in stats],
                     n_passes=[int(s["n_passes"]) for s in stats],
                     tree_seconds_mean=float(np.mean([s["seconds"] for s in stats])),
                     passes_per_tree=float(np.mean([s["n_passes"] for s in stats])))
    report = getattr(model, "cache_report", None)
    if report is not None:
        extra["cache_report"] = json.loads(json.dumps(report, default=str))
    return dict(n_trees_built=int(model.num_trees()), test_auc=_auc(yt, model.predict(Xt)),
                extra=extra)


def tool_lightgbm(run, fit, client):
    import lightgbm as lgb
    X, y = _numpy_train(run)
    params = dict(objective="binary", num_threads=2, enable_bundle=False, verbose=-1,
                  **run["common"], **run.get("params", {}))
    if run["warmup"]:
        lgb.train(params, lgb.Dataset(X[:WARMUP_ROWS], y[:WARMUP_ROWS]), WARMUP_ROUNDS)
    with fit:
        model = lgb.train(params, lgb.Dataset(X, y), num_boost_round=run["n_trees"])
    Xt, yt = _load_test(run)
    return dict(n_trees_built=int(model.num_trees()), test_auc=_auc(yt, model.predict(Xt)),
                extra=dict(params=params))


def tool_xgboost(run, fit, client):
    import xgboost as xgb
    X, y = _numpy_train(run)
    params = _xgb_params(run, nthread=2)
    if run["warmup"]:
        xgb.train(params, xgb.QuantileDMatrix(X[:WARMUP_ROWS], y[:WARMUP_ROWS], max_bin=255),
                  WARMUP_ROUNDS)
    with fit:
        model = xgb.train(params, xgb.QuantileDMatrix(X, y, max_bin=run["common"]["max_bin"]),
                          num_boost_round=run["n_trees"])
    Xt, yt = _load_test(run)
    return dict(n_trees_built=int(model.num_boosted_rounds()),
                test_auc=_auc(yt, model.inplace_predict(Xt)), extra=dict(params=params))


def tool_sklearn(run, fit, client):
    from sklearn.ensemble import HistGradientBoostingClassifier
    X, y = _numpy_train(run)
    make = lambda n: HistGradientBoostingClassifier(
        max_leaf_nodes=run["common"]["num_leaves"],
        learning_rate=run["common"]["learning_rate"], max_iter=n,
        early_stopping=False, max_bins=run["common"]["max_bin"], random_state=0)
    if run["warmup"]:
        make(WARMUP_ROUNDS).fit(X[:WARMUP_ROWS], y[:WARMUP_ROWS])
    with fit:
        model = make(run["n_trees"]).fit(X, y)
    Xt, yt = _load_test(run)
    return dict(n_trees_built=int(model.n_iter_), test_auc=_auc(yt, model.predict_proba(Xt)[:, 1]),
                extra=dict(params=model.get_params()))


def tool_lightgbm_dask(run, fit, client):
    import lightgbm.dask as lgbd
    X, y = _lazy_train(run)
    extra = run.get("params", {})
    make = lambda n: lgbd.DaskLGBMClassifier(client=client, n_estimators=n, enable_bundle=False,
                                             verbose=-1, **run["common"], **extra)
    if run["warmup"]:
        make(WARMUP_ROUNDS).fit(X[:WARMUP_ROWS], y[:WARMUP_ROWS])
    with fit:
        model = make(run["n_trees"]).fit(X, y)
    Xt, yt = _load_test(run)
    local = model.to_local()
    return dict(n_trees_built=int(local.booster_.num_trees()),
                test_auc=_auc(yt, local.predict_proba(Xt)[:, 1]),
                extra=dict(params=dict(run["common"], enable_bundle=False, **extra)))


def tool_xgboost_dask(run, fit, client):
    import xgboost.dask as xgbd
    X, y = _lazy_train(run)
    params = _xgb_params(run)
    if run["warmup"]:
        xgbd.train(client, params, xgbd.DaskQuantileDMatrix(client, X[:WARMUP_ROWS],
                                                            y[:WARMUP_ROWS], max_bin=255),
                   num_boost_round=WARMUP_ROUNDS)
    with fit:
        dtrain = xgbd.DaskQuantileDMatrix(client, X, y, max_bin=run["common"]["max_bin"])
        booster = xgbd.train(client, params, dtrain, num_boost_round=run["n_trees"])["booster"]
    Xt, yt = _load_test(run)
    return dict(n_trees_built=int(booster.num_boosted_rounds()),
                test_auc=_auc(yt, booster.inplace_predict(Xt)), extra=dict(params=params))


def tool_xgboost_extmem(run, fit, client):
    import tempfile

    import xgboost as xgb
    import zarr

    group = zarr.open_group(run["data"]["store"], mode="r")
    Xz, yz = group["X"], group["y"]
    n_rows, step = run["rows"], int(Xz.chunks[0])

    class ZarrChunks(xgb.DataIter):
        """One batch per stored chunk, read from the Zarr store when XGBoost asks for it."""

        def __init__(self, stop, cache_dir):
            self._stop, self._i = stop, 0
            super().__init__(cache_prefix=os.path.join(cache_dir, "cache"))

        def next(self, input_data):
            a = self._i * step
            if a >= self._stop:
                return False
            b = min(a + step, self._stop)
            input_data(data=np.asarray(Xz[a:b]), label=np.asarray(yz[a:b]))
            self._i += 1
            return True

        def reset(self):
            self._i = 0

    params = _xgb_params(run, nthread=2)
    cache_root = run.get("scratch") or None
    if run["warmup"]:
        with tempfile.TemporaryDirectory(dir=cache_root) as tmp:
            xgb.train(params, xgb.ExtMemQuantileDMatrix(ZarrChunks(min(n_rows, step), tmp),
                                                        max_bin=255), WARMUP_ROUNDS)
    with tempfile.TemporaryDirectory(prefix="xgb-extmem-", dir=cache_root) as tmp:
        with fit:
            dtrain = xgb.ExtMemQuantileDMatrix(ZarrChunks(n_rows, tmp),
                                               max_bin=run["common"]["max_bin"], nthread=2)
            booster = xgb.train(params, dtrain, num_boost_round=run["n_trees"])
        del dtrain
    Xt, yt = _load_test(run)
    return dict(n_trees_built=int(booster.num_boosted_rounds()),
                test_auc=_auc(yt, booster.inplace_predict(Xt)),
                extra=dict(params=params, batch_rows=step))


RUNNERS = {"oocgbdt": tool_oocgbdt, "lightgbm": tool_lightgbm, "xgboost": tool_xgboost,
           "sklearn": tool_sklearn, "lightgbm.dask": tool_lightgbm_dask,
           "xgboost.dask": tool_xgboost_dask, "xgboost.extmem": tool_xgboost_extmem}


# ============================================================================================
# Job subprocess: runs its runs in order, reporting events to a JSON-lines progress file
# ============================================================================================


class _Emitter:
    def __init__(self, path):
        self.path = path

    def __call__(self, **event):
        event.setdefault("t", time.time())
        with open(self.path, "a") as f:
            f.write(json.dumps(event, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())


class _FitWindow:
    """Context manager: reports the fit's start and end (wall clock) and times it."""

    def __init__(self, emit, run_id):
        self.emit, self.run_id, self.seconds = emit, run_id, None

    def __enter__(self):
        self.t0 = time.time()
        self._p0 = time.perf_counter()
        self.emit(event="fit_start", id=self.run_id, t=self.t0)
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self._p0
        self.emit(event="fit_end", id=self.run_id, t=time.time(), seconds=self.seconds)
        return False


def _wait_go(control, run_id, timeout=3600):
    """Block until the orchestrator writes ``run_id`` into the control file (it checks and
    maybe restarts the workers between runs)."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        if Path(control).is_file() and run_id in Path(control).read_text().split():
            return
        time.sleep(0.02)
    raise TimeoutError("no go from the orchestrator")


def job_main(spec_path):
    spec = json.loads(Path(spec_path).read_text())
    emit = _Emitter(spec["progress"])
    for run in spec["runs"]:
        _wait_go(spec["control"], run["id"])
        emit(event="start", id=run["id"], pid=os.getpid())
        client = None
        try:
            if run["tool"] in DASK_TOOLS:
                from distributed import Client
                client = Client(run["scheduler"], timeout=60)
            fit = _FitWindow(emit, run["id"])
            out = RUNNERS[run["tool"]](run, fit, client)
            out["wall_seconds"] = fit.seconds
            emit(event="done", id=run["id"], result=out)
        except BaseException as e:  # noqa: BLE001 - every failure is a result
            msg = f"{type(e).__name__}: {e}"
            emit(event="error", id=run["id"], error=msg[:2000],
                 traceback=traceback.format_exc()[-4000:])
        finally:
            if client is not None:
                try:
                    client.close(timeout=10)
                except Exception:  # noqa: BLE001
                    pass
    return 0


# ============================================================================================
# Orchestrator: clusters, jobs with timeouts, measurements
# ============================================================================================


class Cluster:
    """A LocalCluster of 2 worker processes x 1 thread (nannies) owned by this process."""

    def __init__(self, name, memory_limit="auto", n_workers=2):
        self.name, self.memory_limit, self.n_workers = name, memory_limit, n_workers
        self._start()

    def _start(self):
        import logging

        from distributed import Client, LocalCluster

        self.cluster = LocalCluster(n_workers=self.n_workers, threads_per_worker=1,
                                    processes=True, memory_limit=self.memory_limit,
                                    dashboard_address=":0", silence_logs=logging.WARNING)
        self.client = Client(self.cluster)
        self.client.wait_for_workers(self.n_workers, timeout=120)
        self.address = self.cluster.scheduler_address

    def worker_pids(self):
        return _bounded(lambda: {a: int(p) for a, p in self.client.run(os.getpid).items()}, {})

    def memory_limits(self):
        info = _bounded(lambda: self.client.scheduler_info(n_workers=-1)["workers"], {})
        return {a: int(w.get("memory_limit") or 0) for a, w in info.items()}

    def log_lines(self):
        """Every worker and nanny log line so far, as ``{source: [message, ...]}``."""
        out = {}
        for nanny in (False, True):
            logs = _bounded(lambda: self.client.get_worker_logs(nanny=nanny), None)
            if logs is None:
                continue
            for addr, lines in logs.items():
                out[("nanny " if nanny else "worker ") + addr] = [m for _, m in lines]
        return out

    def reset(self):
        """Restart the workers (fresh memory); recreate the cluster if that fails."""
        try:
            self.client.restart(timeout=90, wait_for_workers=True)
            self.client.wait_for_workers(self.n_workers, timeout=120)
            return "restarted workers"
        except Exception as e:  # noqa: BLE001
            self.close()
            self._start()
            return f"recreated cluster ({type(e).__name__}: {e})"

    def close(self):
        for obj in (getattr(self, "client", None), getattr(self, "cluster", None)):
            try:
                obj.close(timeout=60)
            except Exception:  # noqa: BLE001
                pass


def _bounded(fn, default, seconds=60):
    """``fn()`` in a helper thread; ``default`` when it raises or takes longer than
    ``seconds`` (a hung or dead worker must not hang the suite)."""
    import concurrent.futures
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        return pool.submit(fn).result(timeout=seconds)
    except Exception:  # noqa: BLE001
        return default
    finally:
        pool.shutdown(wait=False)


def _new_log_lines(before, after):
    """Memory/restart lines of ``after`` not in ``before`` (worker and nanny logs are bounded
    deques, newest first; each line starts with its timestamp), oldest first."""
    lines = []
    for src, msgs in after.items():
        old = set(before.get(src, []))
        for m in msgs:
            if m not in old and any(w in m.lower() for w in LOG_KEYWORDS):
                lines.append((m[:23], f"{src}: {m[:300]}"))
    return [text for _, text in sorted(lines)]


class Suite:
    def __init__(self, args, out):
        self.args, self.out = args, out
        self.cfg = SUITES[args.suite]
        self.mem = ProcessTreeMemory(interval=self.cfg["interval"]).start()
        self.clusters = {}
        self.records = []
        self.logs = out / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.jobs = 0

    # ---- clusters -------------------------------------------------------------------------
    def cluster(self, name, memory_limit="auto"):
        if self.cfg.get("one_cluster"):  # smoke: every scenario on one cluster (start-up costs)
            name, memory_limit = "main", self.cfg["one_cluster"]
        if name not in self.clusters:
            self.clusters[name] = Cluster(name, memory_limit)
        return self.clusters[name]

    def close_cluster(self, name, final=False):
        if self.cfg.get("one_cluster") and not final:
            return
        c = self.clusters.pop(name, None)
        if c is not None:
            c.close()

    # ---- data -----------------------------------------------------------------------------
    def prepare(self, spec):
        if Path(spec["store"]).is_dir() and Path(spec["test"]).is_file():
            print(f"data: reusing {spec['store']}", flush=True)
            return
        t0 = time.perf_counter()
        f = self.logs / f"prepare-{Path(spec['store']).stem}.log"
        if self.cfg.get("prepare_inprocess"):  # smoke: tiny data, no subprocess start-up
            prepare(spec)
            return
        with open(f, "w") as log:
            p = subprocess.run([sys.executable, "-m", "benchmarks.run", "--prepare",
                                json.dumps(spec)], cwd=ROOT, stdout=log, stderr=log)
        if p.returncode != 0:
            raise RuntimeError(f"writing {spec['store']} failed; see {f}")
        print(f"data: wrote {spec['rows']:,} x {spec['features']} to {spec['store']} in "
              f"{time.perf_counter() - t0:.1f} s", flush=True)

    # ---- runs -----------------------------------------------------------------------------
    def make_run(self, scenario, tool, data, rows, n_trees, cluster=None, label=None,
                 params=None, timeout=None, peer=False, **kw):
        """One run's spec. Timeout: ``--peer-timeout`` (else the suite's) for ``peer`` runs
        (the Dask peers on the limited cluster), else ``--timeout``, else ``timeout``, else
        the suite's."""
        if peer:
            timeout = self.args.peer_timeout or self.cfg["peer_timeout"]
        else:
            timeout = self.args.timeout or timeout or self.cfg["timeout"]
        run = dict(id=f"r{len(self.records) + len(getattr(self, '_pending', [])):03d}",
                   scenario=scenario, tool=tool, label=label or tool, data=data, rows=int(rows),
                   features=data["features"], n_trees=int(n_trees), params=params or {},
                   cluster=(("main" if self.cfg.get("one_cluster") else cluster)
                            if tool in DASK_TOOLS else None),
                   timeout=float(timeout), warmup=self.cfg["warmup"],
                   scratch=str(self.out / "scratch"),
                   common=dict(COMMON, **self.cfg.get("common", {})), **kw)
        self._pending = getattr(self, "_pending", []) + [run]
        return run

    def execute(self, runs):
        """Run ``runs`` (in subprocesses, with timeouts), append their records, return them."""
        self._pending = []
        runs = [r for r in runs if r["tool"] in self.args.tools]
        batches = [[r] for r in runs] if self.cfg["isolate"] else ([runs] if runs else [])
        done = []
        for batch in batches:
            remaining = list(batch)
            while remaining:
                finished = self._job(remaining)
                done += finished
                remaining = remaining[len(finished):]
        return done

    def _job(self, runs):
        """One subprocess over ``runs`` in order; returns the records of the runs it finished
        (ok or failed), at least one: the run it was on when it died counts as failed."""
        self.jobs += 1
        for r in runs:  # the current address: a failed restart recreates the cluster
            if r["cluster"]:
                r["scheduler"] = self.clusters[r["cluster"]].address
        jdir = self.out / "scratch" / f"job{self.jobs:03d}"
        jdir.mkdir(parents=True, exist_ok=True)
        progress, control = jdir / "progress.jsonl", jdir / "control"
        spec = dict(runs=runs, progress=str(progress), control=str(control))
        (jdir / "spec.json").write_text(json.dumps(spec, default=str))
        log = open(self.logs / f"job{self.jobs:03d}-{runs[0]['id']}.log", "w")
        proc = subprocess.Popen([sys.executable, "-m", "benchmarks.run", "--job",
                                 str(jdir / "spec.json")], cwd=ROOT, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        records, seen, i = [], 0, 0
        state = self._begin(runs[0], control)
        try:
            while i < len(runs):
                run = runs[i]
                events = []
                if progress.is_file():
                    lines = progress.read_text().splitlines()
                    events, seen = [json.loads(x) for x in lines[seen:] if x.strip()], len(lines)
                for ev in events:
                    if ev.get("id") != run["id"]:
                        continue
                    state[ev["event"]] = ev
                end = state.get("done") or state.get("error")
                failure = None
                if end is None:
                    if proc.poll() is not None:
                        time.sleep(0.3)  # let a last event land
                        if progress.is_file() and len(progress.read_text().splitlines()) > seen:
                            continue
                        failure = (f"process died with exit code {proc.returncode}"
                                   + (f" ({signal.Signals(-proc.returncode).name})"
                                      if proc.returncode < 0 else "")
                                   + f"; log tail: {self._tail(log.name)}")
                    elif time.time() - state["t_begin"] > run["timeout"]:
                        self._kill(proc)
                        failure = f"timeout after {run['timeout']:.0f} s (killed)"
                    else:
                        time.sleep(0.1)
                        continue
                if failure is None and i == len(runs) - 1:
                    try:  # let the job's client disconnect before the workers are restarted
                        proc.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        pass
                rec = self._finish(run, state, failure)
                records.append(rec)
                i += 1
                if failure is not None:
                    break
                if rec.get("cluster_reset", "").startswith("recreated"):
                    self._kill(proc)  # the next runs need the new scheduler address
                    break
                if i < len(runs):
                    state = self._begin(runs[i], control)
        finally:
            if proc.poll() is None:
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self._kill(proc)
            log.close()
        return records

    def _cluster_log_size(self):
        try:
            return (self.logs / "cluster.log").stat().st_size
        except OSError:
            return 0

    def _cluster_log_events(self, offset):
        """Warning, error and memory/restart lines the workers and the scheduler wrote to
        logs/cluster.log since ``offset`` (traceback bodies left out, repeats counted)."""
        try:
            with open(self.logs / "cluster.log", "rb") as f:
                f.seek(offset)
                text = f.read(50_000_000).decode(errors="replace")
        except OSError:
            return []
        out, counts = [], {}
        for line in text.splitlines():
            if not line.strip() or line[:1].isspace():
                continue
            low = line.lower()
            if not (" - error - " in low or " - warning - " in low or " - critical - " in low
                    or any(w in low for w in LOG_KEYWORDS)):
                continue
            key = line[line.find(" - ") + 3:] if " - " in line else line  # without timestamp
            counts[key] = counts.get(key, 0) + 1
            if counts[key] == 1:
                out.append(key)
        return [f"cluster.log: {k[:300]}" + (f" (x{counts[k]})" if counts[k] > 1 else "")
                for k in out]

    @staticmethod
    def _kill(proc):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()

    @staticmethod
    def _tail(path, n=600):
        try:
            return Path(path).read_text()[-n:].replace("\n", " | ")
        except OSError:
            return ""

    def _begin(self, run, control):
        state = dict(t_begin=time.time())
        c = self.clusters.get(run["cluster"]) if run["cluster"] else None
        if c is not None:
            state["pids"] = c.worker_pids()
            state["logs"] = c.log_lines()
            state["limits"] = c.memory_limits()
            state["log_offset"] = self._cluster_log_size()
        print(f"[{run['scenario']}] {run['label']}: {run['rows']:,} rows x {run['features']}, "
              f"{run['n_trees']} trees ...", end=" ", flush=True)
        with open(control, "a") as f:
            f.write(run["id"] + "\n")
        state["t_begin"] = time.time()
        return state

    def _finish(self, run, state, failure):
        now = time.time()
        t0 = state.get("fit_start", {}).get("t", state.get("start", {}).get("t", state["t_begin"]))
        t1 = state.get("fit_end", {}).get("t", now)
        result = (state.get("done") or {}).get("result", {})
        rec = {k: run[k] for k in ("id", "scenario", "tool", "label", "rows", "features",
                                   "cluster")}
        rec["repeat"] = run.get("repeat", 0)
        rec.update(n_trees=run["n_trees"], n_trees_built=result.get("n_trees_built"),
                   wall_seconds=result.get("wall_seconds"), test_auc=result.get("test_auc"),
                   extra=result.get("extra", {}), params_extra=run["params"])
        rec["seconds_per_tree"] = (rec["wall_seconds"] / rec["n_trees_built"]
                                   if rec["wall_seconds"] and rec["n_trees_built"] else None)
        rec["peak_memory_bytes"] = self.mem.peak(t0, t1)
        rec["baseline_memory_bytes"] = self.mem.at(t0)
        peaks = self.mem.pid_peaks(t0, t1)
        rec["peak_job_bytes"] = peaks.get(state.get("start", {}).get("pid"))
        rec["memory_series"] = self.mem.series(state["t_begin"], now)
        rec["fit_window"] = [t0 - state["t_begin"], t1 - state["t_begin"]]
        if failure is None and "error" in state:
            failure = state["error"]["error"]
            rec["traceback"] = state["error"].get("traceback")
        c = self.clusters.get(run["cluster"]) if run["cluster"] else None
        if c is not None:
            if failure is not None:
                try:
                    c.client.wait_for_workers(c.n_workers, timeout=30)
                except Exception:  # noqa: BLE001
                    pass
            after = c.worker_pids()
            before = state.get("pids", {})
            rec["worker_restarts"] = len(set(before.values()) - set(after.values()))
            # workers alive at the start (a restarted worker's successor is listed by its pid)
            rec["worker_peak_bytes"] = {a: peaks.get(pid, 0) for a, pid in before.items()}
            for a, pid in after.items():
                if pid not in before.values():
                    rec["worker_peak_bytes"][f"{a} (new pid {pid})"] = peaks.get(pid, 0)
            rec["worker_memory_limit_bytes"] = state.get("limits", {})
            nanny_lines = _new_log_lines(state.get("logs", {}), c.log_lines())
            rec["cluster_events"] = (nanny_lines[-30:]
                                     + self._cluster_log_events(state.get("log_offset", 0))[-20:])
            # a worker restarted twice has one successor pid: count the nannies' exit lines too
            exits = sum(1 for e in nanny_lines if e.startswith("nanny ") and "Worker process" in e
                        and ("was killed" in e or "exited with status" in e))
            rec["worker_restarts"] = max(rec["worker_restarts"], exits)
            if self.cfg["reset"] or failure is not None or rec["worker_restarts"]:
                rec["cluster_reset"] = c.reset()
        rec["status"] = "ok" if failure is None else "failed"
        rec["error"] = failure
        if failure is None:
            print(f"ok: fit {rec['wall_seconds']:.2f} s, AUC {rec['test_auc']:.5f}, peak "
                  f"{rec['peak_memory_bytes'] / 2**20:,.0f} MB", flush=True)
        else:
            print(f"FAILED: {failure[:300]}", flush=True)
        self.records.append(rec)
        # if this process is killed, the runs so far survive (results.json comes at the end)
        tmp = self.out / "results.partial.json.tmp"
        tmp.write_text(json.dumps(dict(runs=self.records), default=str))
        os.replace(tmp, self.out / "results.partial.json")
        return rec


# ============================================================================================
# Scenarios
# ============================================================================================


def scenario_inmemory(s):
    c = s.cfg["inmemory"]
    rows, features = c["rows"], c["features"]
    chunk_rows = min(125_000, math.ceil(rows / 8))
    data = data_spec("make_classification", s.args.data_dir, rows, features, chunk_rows)
    s.prepare(data)
    s.cluster("main")
    # oocgbdt twice: at its defaults and with its own feature screening (EMA-FS); every ratio
    # is printed for both.
    kinds = [dict(tool=t) for t in TOOLS if t in s.args.tools]
    if "oocgbdt" in s.args.tools:
        kinds.insert(1, dict(tool="oocgbdt", label=SCREENED_LABEL, params=SCREENED_PARAMS))
        # the peers' own way of building a share of the features per tree, beside EMA-FS
        kinds += [dict(tool=t, label=peer_fraction_label(t),
                       params={PEER_FRACTION_PARAMS[t]: SCREENED_SHARE})
                  for t in TOOLS if t in PEER_FRACTION_PARAMS and t in s.args.tools]
    runs = [s.make_run("inmemory", kind["tool"], data, rows, c["n_trees"], cluster="main",
                       label=kind.get("label"), params=kind.get("params"), repeat=k)
            for k, kind in alternating_rounds(kinds, s.args.repeats or s.cfg["repeats"])]
    return s.execute(runs)


def scenario_throughput(s):
    c = s.cfg["throughput"]
    sizes, features = list(c["rows"]), c["features"]
    chunk_rows = max(1, sizes[0] // 8)
    data = data_spec("chunked", s.args.data_dir, max(sizes), features, chunk_rows,
                     test_rows=min(200_000, max(1, sizes[0] // 5)))
    s.prepare(data)
    s.cluster("main")
    runs = []
    for n in sizes:
        for t in c["tools"]:
            if t == "oocgbdt":
                for cache in ("memory", "disk"):
                    runs.append(s.make_run("throughput", t, data, n, c["n_trees"], cluster="main",
                                           label=f"oocgbdt cache={cache}",
                                           params=dict(cache=cache)))
            else:
                runs.append(s.make_run("throughput", t, data, n, c["n_trees"], cluster="main"))
    return s.execute(runs)


def scenario_larger_than_memory(s):
    c = dict(s.cfg["larger_than_memory"])
    a = s.args
    c["rows"] = a.ltm_rows or c["rows"]
    c["features"] = a.ltm_features or c["features"]
    c["worker_memory"] = a.ltm_worker_memory or c["worker_memory"]
    data = data_spec("chunked", a.data_dir, c["rows"], c["features"], c["chunk_rows"],
                     test_rows=c["test_rows"])
    s.prepare(data)
    growth = (dict(grow_policy="depthwise") if a.ltm_growth == "depthwise"
              else dict(max_leaves_per_pass=8))
    depthwise = a.ltm_growth == "depthwise"
    # the main cluster is not needed any more: free its memory before the limited one starts
    s.close_cluster("main")
    lim = s.cluster("limited", c["worker_memory"])
    limits = lim.memory_limits()
    total_limit = sum(limits.values())
    raw = c["rows"] * c["features"] * 4
    s.ltm_info = dict(rows=c["rows"], features=c["features"], chunk_rows=c["chunk_rows"],
                      n_trees=c["n_trees"], raw_bytes=raw, total_limit_bytes=total_limit,
                      worker_limits=limits,
                      ratio=raw / total_limit if total_limit else None, growth=a.ltm_growth)
    print(f"larger_than_memory: raw float32 {raw / GiB:.2f} GiB = "
          f"{s.ltm_info['ratio']:.2f}x the limited cluster's total memory_limit "
          f"({total_limit / GiB:.2f} GiB over {len(limits)} workers)", flush=True)
    to = c.get("timeout")
    n = c["n_trees"]
    runs = [s.make_run("larger_than_memory", "oocgbdt", data, c["rows"], n, cluster="limited",
                       label="oocgbdt cache=disk (limited)", params=dict(cache="disk", **growth),
                       timeout=to),
            s.make_run("larger_than_memory", "lightgbm.dask", data, c["rows"], n,
                       cluster="limited", label="lightgbm.dask (limited)", peer=True),
            s.make_run("larger_than_memory", "xgboost.dask", data, c["rows"], n,
                       cluster="limited", label="xgboost.dask (limited)", peer=True,
                       xgb_depthwise=depthwise),
            s.make_run("larger_than_memory", "xgboost.extmem", data, c["rows"], n,
                       label="xgboost.extmem", xgb_depthwise=depthwise, timeout=to)]
    out = s.execute(runs)
    s.close_cluster("limited")
    s.cluster("unlimited", 0)
    out += s.execute([s.make_run("larger_than_memory", "oocgbdt", data, c["rows"], n,
                                 cluster="unlimited", label="oocgbdt cache=memory (unlimited)",
                                 params=dict(cache="memory", **growth), timeout=to)])
    s.close_cluster("unlimited")
    return out


SCENARIO_FUNCS = {"inmemory": scenario_inmemory, "throughput": scenario_throughput,
                  "larger_than_memory": scenario_larger_than_memory}


# ============================================================================================
# Report: markdown, targets, plots
# ============================================================================================


def _mb(b):
    return None if b is None else b / 2**20


def _verdict(ok):
    return "PASS" if ok else "FAIL"


def _get(records, scenario, label, rows=None):
    for r in records:
        if (r["scenario"] == scenario and r["label"] == label
                and (rows is None or r["rows"] == rows)):
            return r
    return None


def _get_all(records, scenario, label):
    return [r for r in records if r["scenario"] == scenario and r["label"] == label]


def _median_run(records, scenario, label):
    """The run of ``label`` with the median wall time (the lower middle of an even count), or a
    failed run when every run of it failed; None when it did not run."""
    runs = _get_all(records, scenario, label)
    ok = sorted((r for r in runs if r["status"] == "ok"), key=lambda r: r["wall_seconds"])
    if ok:
        return ok[(len(ok) - 1) // 2]
    return runs[0] if runs else None


def runs_table(records):
    rows = []
    several = any(r.get("repeat") for r in records)
    for r in records:
        rows.append([r["label"] + (f" #{r.get('repeat', 0) + 1}" if several else ""),
                     f"{r['rows']:,}", r["features"],
                     r["n_trees_built"] if r["n_trees_built"] is not None else "-",
                     r["wall_seconds"], r["seconds_per_tree"], _mb(r["peak_memory_bytes"]),
                     _mb(r["peak_job_bytes"]), r["test_auc"],
                     r["status"] if r["status"] == "ok" else f"failed: {(r['error'] or '')[:120]}"])
    return markdown_table(["tool", "rows", "features", "trees", "wall s", "s/tree",
                           "peak tree MB", "peak job MB", "test AUC", "status"], rows)


def report_inmemory(records, lines, verdicts):
    lines.append(runs_table([r for r in records if r["scenario"] == "inmemory"]))
    lines.append("")
    n = max((r.get("repeat", 0) + 1 for r in records if r["scenario"] == "inmemory"),
            default=1)
    if n > 1:
        lines.append(f"Ratios below: median wall times over {n} alternating runs of each tool "
                     "(the lower middle run when some failed).")
        lines.append("")
    for label in ("oocgbdt", SCREENED_LABEL):
        ooc = _median_run(records, "inmemory", label)
        if ooc is None:
            continue
        if ooc["status"] != "ok":
            lines.append(f"{label} failed: no ratios.")
            verdicts.append((f"inmemory: {label} ran", False))
            continue
        lines.append(f"{label}:")
        _inmemory_ratios(records, ooc, label, lines, verdicts)


def _inmemory_ratios(records, ooc, label, lines, verdicts):
    peers = [("lightgbm", TARGETS["vs_lightgbm"]), ("xgboost", None), ("sklearn", None),
             ("lightgbm.dask", TARGETS["vs_dask_peers"]),
             ("xgboost.dask", TARGETS["vs_dask_peers"]), ("xgboost.extmem", None)]
    if label == SCREENED_LABEL:  # and each peer skipping the same share of features
        peers += [(peer_fraction_label(t), None) for t in PEER_FRACTION_PARAMS]
    for peer, target in peers:
        p = _median_run(records, "inmemory", peer)
        if p is None:
            continue
        if p["status"] != "ok":
            lines.append(f"- {label} / {peer}: {peer} failed ({(p['error'] or '')[:200]})")
            continue
        ratio = ooc["wall_seconds"] / p["wall_seconds"]
        line = (f"- {label} / {peer} wall time: {ratio:.2f}x ({ooc['wall_seconds']:.2f} s vs "
                f"{p['wall_seconds']:.2f} s); AUC difference "
                f"{ooc['test_auc'] - p['test_auc']:+.5f}")
        if target is not None:
            ok = ratio <= target
            line += f"; target <= {target}x: {_verdict(ok)}"
            verdicts.append((f"inmemory: {label} / {peer} <= {target}x", ok))
        if peer == "lightgbm":
            d = ooc["test_auc"] - p["test_auc"]
            ok = abs(d) <= TARGETS["auc"]
            line += f"; |AUC difference| <= {TARGETS['auc']}: {_verdict(ok)}"
            verdicts.append((f"inmemory: {label} |AUC - LightGBM| <= {TARGETS['auc']}", ok))
        lines.append(line)


def report_throughput(records, lines, verdicts):
    recs = [r for r in records if r["scenario"] == "throughput"]
    lines.append(runs_table(recs))
    lines.append("")
    sizes = sorted({r["rows"] for r in recs})
    for n in sizes:
        m = _get(records, "throughput", "oocgbdt cache=memory", n)
        d = _get(records, "throughput", "oocgbdt cache=disk", n)
        if not (m and d and m["status"] == d["status"] == "ok"):
            lines.append(f"- {n:,} rows: memory/disk comparison incomplete (a run failed)")
            continue
        tm = n * m["n_trees_built"] / m["wall_seconds"]
        td = n * d["n_trees_built"] / d["wall_seconds"]
        ok = td >= TARGETS["disk_vs_memory"] * tm
        lines.append(f"- {n:,} rows: oocgbdt rows x trees / s: cache=memory {tm:,.0f}, cache=disk "
                     f"{td:,.0f}, disk / memory {td / tm:.2f} (target >= "
                     f"{TARGETS['disk_vs_memory']}): {_verdict(ok)}")
        verdicts.append((f"throughput {n:,} rows: disk >= {TARGETS['disk_vs_memory']}x memory", ok))
        if d["extra"].get("cache_report") is None:
            lines.append("  (no cache_report on the Booster: this oocgbdt may ignore cache=)")
    if len(sizes) >= 2:
        lo, hi = sizes[0], sizes[-1]
        lines.append(f"Time per tree growth from {lo:,} to {hi:,} rows ({hi / lo:.0f}x), "
                     f"relative to linear (1.00 = linear; s/tree = wall / trees):")
        for label in sorted({r["label"] for r in recs}):
            a, b = _get(records, "throughput", label, lo), _get(records, "throughput", label, hi)
            if not (a and b and a["status"] == b["status"] == "ok"):
                lines.append(f"- {label}: incomplete (a run failed)")
                continue
            g = (b["seconds_per_tree"] / a["seconds_per_tree"]) / (hi / lo)
            line = f"- {label}: {g:.2f}x linear (wall / trees)"
            if label.startswith("oocgbdt") and "tree_seconds_mean" in a["extra"]:
                gt = (b["extra"]["tree_seconds_mean"] / a["extra"]["tree_seconds_mean"]) / (hi / lo)
                ok = gt <= TARGETS["growth_vs_linear"]
                line += (f"; trees only (tree_stats): {gt:.2f}x linear (target <= "
                         f"{TARGETS['growth_vs_linear']}): {_verdict(ok)}")
                if label == "oocgbdt cache=memory" or label == "oocgbdt cache=disk":
                    verdicts.append((f"throughput: {label} growth <= "
                                     f"{TARGETS['growth_vs_linear']}x linear", ok))
            lines.append(line)


def _over_limit(r):
    """Workers of a run that went over their memory_limit: sampled RSS above it, or killed by
    their nanny at 95% of it (the sampler rarely sees those: the kill comes first)."""
    wp = r.get("worker_peak_bytes") or {}
    lims = r.get("worker_memory_limit_bytes") or {}
    sampled = sum(1 for a, v in wp.items() if lims.get(a) and v > lims[a])
    events = r.get("cluster_events") or []
    nanny = [e for e in events if e.startswith("nanny ")] or events  # no double counting
    killed = sum(1 for e in nanny if "memory budget" in e)
    return sampled + killed


def report_ltm(records, lines, verdicts, info):
    recs = [r for r in records if r["scenario"] == "larger_than_memory"]
    if info:
        lines.append(f"Data: raw float32 {info['raw_bytes'] / GiB:.2f} GiB = {info['ratio']:.2f}x "
                     f"the limited cluster's total memory_limit "
                     f"({info['total_limit_bytes'] / GiB:.2f} GiB); growth: {info['growth']}")
    lines.append(runs_table(recs))
    lines.append("")
    limit = info.get("total_limit_bytes") if info else None
    for r in recs:
        head = f"- {r['label']}: {r['status']}"
        if r["status"] != "ok":
            head += f" ({(r['error'] or '')[:300]})"
        lines.append(head)
        if r.get("cluster") in ("limited", "main") and "unlimited" not in r["label"]:
            wp = r.get("worker_peak_bytes") or {}
            lims = r.get("worker_memory_limit_bytes") or {}
            lines.append(f"  worker restarts {r.get('worker_restarts')}; worker peak RSS "
                         + ", ".join(f"{v / 2**20:,.0f} MB" for v in wp.values())
                         + f" (limit {max(lims.values(), default=0) / 2**20:,.0f} MB each); "
                         f"over the limit (sampled RSS above it, or the nanny's 95% kill): "
                         f"{_over_limit(r)}")
            if r.get("cluster_events"):
                lines.append(f"  cluster events ({len(r['cluster_events'])}, last 3): "
                             + " || ".join(e[:200] for e in r["cluster_events"][-3:]))
        if r["tool"] == "oocgbdt" and r["status"] == "ok" and r["extra"].get("n_passes"):
            lines.append(f"  passes per tree: mean {r['extra']['passes_per_tree']:.1f}, "
                         f"per tree {r['extra']['n_passes']}")
    disk = _get(records, "larger_than_memory", "oocgbdt cache=disk (limited)")
    mem = _get(records, "larger_than_memory", "oocgbdt cache=memory (unlimited)")
    if disk is not None:
        ok = disk["status"] == "ok" and not disk.get("worker_restarts")
        ok_w = _over_limit(disk) == 0
        lines.append(f"- oocgbdt cache=disk finished without worker restarts: {_verdict(ok)}; "
                     f"no worker above its memory_limit: {_verdict(ok_w)}")
        verdicts += [("larger_than_memory: oocgbdt ok, no restarts", ok),
                     ("larger_than_memory: no worker above memory_limit", ok_w)]
        if limit and disk["peak_memory_bytes"]:
            ok_p = disk["peak_memory_bytes"] <= limit + GiB
            lines.append(f"- process-tree peak {disk['peak_memory_bytes'] / GiB:.2f} GiB vs total "
                         f"limit + 1 GiB = {(limit + GiB) / GiB:.2f} GiB: {_verdict(ok_p)}")
            verdicts.append(("larger_than_memory: tree peak <= limit + 1 GiB", ok_p))
        if disk["extra"].get("cache_report") is None and disk["status"] == "ok":
            lines.append("  (no cache_report on the Booster: this oocgbdt may ignore cache=)")
    if disk and mem and disk["status"] == mem["status"] == "ok":
        d = disk["test_auc"] - mem["test_auc"]
        ok = abs(d) <= TARGETS["auc"]
        lines.append(f"- AUC cache=disk (limited) - cache=memory (unlimited): {d:+.5f} "
                     f"(target |d| <= {TARGETS['auc']}): {_verdict(ok)}")
        verdicts.append(("larger_than_memory: AUC disk vs memory", ok))


def plot_time_per_tree(records, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    recs = [r for r in records if r["scenario"] == "throughput"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label in sorted({r["label"] for r in recs}):
        pts = sorted((r["rows"], r["seconds_per_tree"]) for r in recs
                     if r["label"] == label and r["status"] == "ok" and r["seconds_per_tree"])
        if pts:
            ax.plot(*zip(*pts), marker="o", label=label)
        failed = [r["rows"] for r in recs if r["label"] == label and r["status"] != "ok"]
        if failed:
            ax.scatter(failed, [ax.get_ylim()[0]] * len(failed), marker="x", color="red")
    base = sorted((r["rows"], r["seconds_per_tree"]) for r in recs
                  if r["label"] == "oocgbdt cache=memory" and r["status"] == "ok")
    if base:
        xs = sorted({r["rows"] for r in recs})
        ax.plot(xs, [base[0][1] * x / base[0][0] for x in xs], "k:", label="linear (oocgbdt 1x)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training rows")
    ax.set_ylabel("seconds per tree (wall / trees)")
    ax.set_title("Time per tree against rows (x: failed)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_memory(records, scenario, path, limit=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    recs = [r for r in records if r["scenario"] == scenario]
    if scenario == "throughput" and recs:
        top = max(r["rows"] for r in recs)
        recs = [r for r in recs if r["rows"] == top]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for r in recs:
        if r["memory_series"]:
            t, b = zip(*r["memory_series"])
            ax.plot(t, np.asarray(b) / GiB, label=f"{r['label']}" + ("" if r["status"] == "ok"
                                                                      else " (failed)"))
    if limit:
        ax.axhline(limit / GiB, color="red", ls="--", label="total worker memory_limit")
        ax.axhline((limit + GiB) / GiB, color="red", ls=":", label="limit + 1 GiB")
    ax.set_xlabel("seconds since the run started")
    ax.set_ylabel("RSS of the process tree (GiB)")
    ax.set_title(f"Memory over time: {scenario}" + (f" ({recs[0]['rows']:,} rows)" if recs else ""))
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ============================================================================================
# Environment
# ============================================================================================


def environment():
    import psutil
    versions = {}
    for name in ("numpy", "numba", "dask", "distributed", "zarr", "lightgbm", "xgboost",
                 "sklearn", "psutil", "matplotlib", "oocgbdt"):
        try:
            versions[name] = __import__(name).__version__
        except Exception as e:  # noqa: BLE001
            versions[name] = f"unavailable ({type(e).__name__})"
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = None
    return dict(cores=os.cpu_count(), ram_bytes=psutil.virtual_memory().total,
                python=platform.python_version(), platform=platform.platform(),
                versions=versions, git_commit=commit, load_start=list(os.getloadavg()),
                summary_start=machine_info(),
                omp_wait_policy=os.environ.get("OMP_WAIT_POLICY"))


# ============================================================================================
# Driver
# ============================================================================================


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.run",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--suite", choices=list(SUITES), default="smoke")
    p.add_argument("--out", type=Path, default=None,
                   help="output folder (default benchmarks/results/<suite>-<timestamp>)")
    p.add_argument("--data-dir", type=Path, default=ROOT / "benchmarks" / "results" / "data",
                   help="where the generated Zarr stores are kept and reused")
    p.add_argument("--scenarios", nargs="+", choices=SCENARIOS, default=list(SCENARIOS))
    p.add_argument("--tools", nargs="+", choices=TOOLS, default=list(TOOLS))
    p.add_argument("--ltm-rows", type=int, default=None, help="larger_than_memory rows")
    p.add_argument("--ltm-features", type=int, default=None,
                   help="larger_than_memory features")
    p.add_argument("--ltm-worker-memory", default=None,
                   help="memory_limit of each of the 2 limited workers (e.g. 1.5GiB)")
    p.add_argument("--ltm-growth", choices=["depthwise", "leafwise8"], default="depthwise",
                   help="oocgbdt growth out of core: grow_policy='depthwise' or "
                        "max_leaves_per_pass=8")
    p.add_argument("--timeout", type=float, default=None, help="seconds per run (all runs)")
    p.add_argument("--peer-timeout", type=float, default=None,
                   help="seconds for lightgbm.dask / xgboost.dask on the limited cluster")
    p.add_argument("--repeats", type=int, default=None,
                   help="runs of each tool in the inmemory scenario, alternating; ratios of "
                        "medians (default: 3 in full, 1 otherwise)")
    p.add_argument("--job", help=argparse.SUPPRESS)
    p.add_argument("--prepare", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.job:
        return job_main(args.job)
    if args.prepare:
        prepare(json.loads(args.prepare))
        return 0
    t_start = time.perf_counter()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = args.out or ROOT / "benchmarks" / "results" / f"{args.suite}-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    env = environment()
    print(f"# oocgbdt benchmark suite: {args.suite}")
    print(f"machine: {env['summary_start']}; python {env['python']}; "
          + ", ".join(f"{k} {v}" for k, v in env["versions"].items())
          + f"; git {env['git_commit']}; OMP_WAIT_POLICY={env['omp_wait_policy']}")
    if env["load_start"][0] > (os.cpu_count() or 1) * 0.75:
        print(f"WARNING: load average {env['load_start'][0]:.2f} on {os.cpu_count()} cores: "
              f"timings will be inflated by other processes")
    print(f"output: {out}", flush=True)
    suite = Suite(args, out)
    suite.ltm_info = None
    # The workers (spawned, and respawned on restarts, from this process: LocalCluster's
    # nannies live here) and the scheduler write to file descriptors 1 and 2: point those at
    # logs/cluster.log and keep this script's own printing on the terminal.
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    py_streams = sys.stdout, sys.stderr
    sys.stdout = os.fdopen(os.dup(1), "w", buffering=1)
    sys.stderr = os.fdopen(os.dup(2), "w", buffering=1)
    fd = os.open(out / "logs" / "cluster.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    try:
        for name in args.scenarios:
            t0 = time.perf_counter()
            print(f"\n## {name}", flush=True)
            try:
                SCENARIO_FUNCS[name](suite)
            except Exception as e:  # noqa: BLE001 - the suite goes on; the error is reported
                print(f"scenario {name} aborted: {type(e).__name__}: {e}", flush=True)
                suite.records.append(dict(
                    id=f"x-{name}", scenario=name, tool="harness", label="harness",
                    rows=0, features=0, cluster=None, n_trees=0, n_trees_built=None,
                    wall_seconds=None, seconds_per_tree=None, test_auc=None, extra={},
                    params_extra={}, peak_memory_bytes=0, peak_job_bytes=None,
                    baseline_memory_bytes=0, memory_series=[], status="failed",
                    error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc()))
            print(f"({name}: {time.perf_counter() - t0:.0f} s)", flush=True)
    finally:
        for name in list(suite.clusters):
            suite.close_cluster(name, final=True)
        suite.mem.stop()
        shutil.rmtree(out / "scratch", ignore_errors=True)
        sys.stdout.flush()
        sys.stderr.flush()
        for k, dup in zip((1, 2), saved):
            os.dup2(dup, k)
            os.close(dup)
        sys.stdout.close()
        sys.stderr.close()
        sys.stdout, sys.stderr = py_streams

    records = suite.records
    lines, verdicts = [f"# oocgbdt benchmark suite: {args.suite}", "",
                       f"machine at start: {env['summary_start']}"], []
    for name in args.scenarios:
        lines += ["", f"## {name}", ""]
        if name == "inmemory":
            report_inmemory(records, lines, verdicts)
        elif name == "throughput":
            report_throughput(records, lines, verdicts)
        else:
            report_ltm(records, lines, verdicts, suite.ltm_info)
    harness = [r for r in records if r["tool"] == "harness"]
    for r in harness:
        lines.append(f"- scenario {r['scenario']} aborted: {r['error']}")
    env["load_end"] = list(os.getloadavg())
    env["summary_end"] = machine_info()
    lines += ["", f"machine at the end: {env['summary_end']}",
              f"total {time.perf_counter() - t_start:.0f} s"]
    if verdicts and args.suite != "smoke":
        lines += ["", "## Targets", ""] + [f"- {_verdict(ok)}: {what}" for what, ok in verdicts]
    md = "\n".join(lines) + "\n"
    (out / "results.md").write_text(md)
    plots = []
    try:
        if "throughput" in args.scenarios:
            plot_time_per_tree(records, out / "time_per_tree_vs_rows.png")
            plots.append("time_per_tree_vs_rows.png")
        for name in args.scenarios:
            limit = (suite.ltm_info or {}).get("total_limit_bytes") \
                if name == "larger_than_memory" else None
            plot_memory(records, name, out / f"memory_{name}.png", limit)
            plots.append(f"memory_{name}.png")
    except Exception as e:  # noqa: BLE001
        print(f"plotting failed: {type(e).__name__}: {e}")
    (out / "results.json").write_text(json.dumps(
        dict(suite=args.suite, sizes=SUITES[args.suite], args={k: str(v) for k, v in
                                                                vars(args).items()},
             machine=env, larger_than_memory=suite.ltm_info, targets=TARGETS,
             verdicts=[dict(target=w, ok=bool(ok)) for w, ok in verdicts], plots=plots,
             runs=records), indent=1, default=str))
    print("\n" + md, flush=True)
    print(f"wrote {out / 'results.json'}, {out / 'results.md'}, " + ", ".join(plots), flush=True)
    if args.suite == "smoke":
        return 0
    return 0 if all(ok for _, ok in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
