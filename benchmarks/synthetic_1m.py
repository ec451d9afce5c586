"""Speed and memory on a 1M x 100 dense synthetic binary task: oocgbdt vs LightGBM, XGBoost and
scikit-learn, in one run.

Usage::

    python -m benchmarks.synthetic_1m [--rows 1000000] [--features 100] [--n-estimators 100] [--quick]

Data: ``sklearn.datasets.make_classification`` (seed 0; 20 informative and 10 redundant
features, the rest noise; ``flip_y=0.15`` and ``class_sep=0.5``, which put the test AUC of a
100-tree model near 0.9: the flipped labels cap it), float32, ``--rows`` training rows plus 200k
test rows (20% of ``--rows`` when that is smaller). The training rows are written to a
temporary Zarr store in chunks of 125k rows (at most 1/8 of the rows).

Models, all with 31 leaves, learning rate 0.1, 255 bins, 100 rounds, 2 threads:

- oocgbdt: ``oocgbdt.train`` from the Zarr store on a LocalCluster (1 in-process worker,
  2 threads);
- LightGBM: ``lightgbm.train`` on the in-memory arrays, ``num_threads=2, enable_bundle=False``;
- XGBoost: ``xgboost.train`` on a ``QuantileDMatrix``, ``tree_method="hist",
  grow_policy="lossguide", max_leaves=31, max_depth=0, eta=0.1, max_bin=255, nthread=2``;
- scikit-learn: ``HistGradientBoostingClassifier(max_leaf_nodes=31, learning_rate=0.1,
  max_iter=100, early_stopping=False, max_bins=255)`` (OpenMP over this machine's 2 cores).

Every other parameter keeps its library's default (so minimum leaf sizes differ: LightGBM and
oocgbdt 20 rows, XGBoost a hessian sum of 1, scikit-learn 20 rows).

Measured per model: the wall time of the fit (including the library's own binning / matrix
construction; for oocgbdt everything from the store on), the peak RSS of this process tree
(this process plus children, sampled every 20 ms by a background thread during that fit only,
minus the RSS just before it; freed heap is returned to the OS with ``malloc_trim`` before each
fit so one model's leftovers do not hide the next one's allocations), and the test AUC. Each
library first runs an untimed 2-round fit on 5,000 rows (JIT caches, OpenMP start-up). The
in-memory arrays (used by the three in-memory libraries) are part of every baseline; oocgbdt's
numbers include reading and binning the store. For oocgbdt the per-tree time is split into
histogram building, split finding, reduction and scheduling overhead from Dask's task stream.
"""
from __future__ import annotations

import argparse
import math
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from benchmarks._common import (PeakMemory, Timer, free_memory, local_cluster, machine_info,
                                print_table)

QUICK = dict(rows=100_000, features=20, n_estimators=10)
STORE_CHUNK_ROWS = 125_000
MAX_TEST_ROWS = 200_000
WARMUP_ROWS, WARMUP_ROUNDS = 5_000, 2


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def make_data(rows, features, seed=0):
    """(X_train, y_train, X_test, y_test), float32 features and float64 0/1 labels."""
    from sklearn.datasets import make_classification
    n_test = min(MAX_TEST_ROWS, max(1, rows // 5))
    n_informative = max(2, min(20, features // 2))
    n_redundant = min(10, (features - n_informative) // 2)
    X, y = make_classification(n_samples=rows + n_test, n_features=features,
                               n_informative=n_informative, n_redundant=n_redundant,
                               flip_y=0.15, class_sep=0.5, random_state=seed)
    X = X.astype(np.float32)
    y = y.astype(np.float64)
    return X[:rows], y[:rows], X[rows:], y[rows:]


# --------------------------------------------------------------------------------------------
# The four fits: each returns (fit closure, predict closure) so the harness times the fit only
# --------------------------------------------------------------------------------------------


def fit_oocgbdt(X, y, client, n_estimators):
    import oocgbdt
    return oocgbdt.train(dict(objective="binary", num_leaves=31, learning_rate=0.1, max_bin=255,
                              n_estimators=n_estimators, verbose=False), X, y, client=client)


def fit_lightgbm(X, y, n_estimators):
    import lightgbm as lgb
    params = dict(objective="binary", num_leaves=31, learning_rate=0.1, max_bin=255,
                  num_threads=2, enable_bundle=False, verbose=-1)
    return lgb.train(params, lgb.Dataset(X, y), num_boost_round=n_estimators)


def fit_xgboost(X, y, n_estimators):
    import xgboost as xgb
    params = dict(objective="binary:logistic", tree_method="hist", grow_policy="lossguide",
                  max_leaves=31, max_depth=0, eta=0.1, max_bin=255, nthread=2, seed=0)
    return xgb.train(params, xgb.QuantileDMatrix(X, y, max_bin=255), num_boost_round=n_estimators)


def fit_sklearn(X, y, n_estimators):
    from sklearn.ensemble import HistGradientBoostingClassifier
    return HistGradientBoostingClassifier(max_leaf_nodes=31, learning_rate=0.1,
                                          max_iter=n_estimators, early_stopping=False,
                                          max_bins=255, random_state=0).fit(X, y)


def predict_proba(name, model, X):
    if name == "xgboost":
        return model.inplace_predict(X)
    if name == "scikit-learn":
        return model.predict_proba(X)[:, 1]
    return model.predict(X)


# --------------------------------------------------------------------------------------------
# oocgbdt's per-tree time split from the task stream
# --------------------------------------------------------------------------------------------

_TREE = re.compile(r"-t(\d+)-")


def task_category(key: str) -> str:
    """Category of an oocgbdt task key (see oocgbdt/core/histogram_source.py for the names).

    ``-find``: split search (also sums the last reduce level); ``-sum``/``-built``/``-sibling``/
    ``-hist-root``: reduction and kept histograms; ``-route-``/``-root-``: the per-chunk
    route + histogram tasks; ``-apply``: adding the finished tree to the raw scores.
    """
    if "-find" in key:
        return "find"
    if "-sum" in key or "-built" in key or "-sibling" in key or "-hist-root" in key:
        return "reduce"
    if "-route-" in key or "-root-" in key:
        return "hist"
    if "-apply" in key:
        return "apply"
    return "other"


def tree_time_split(task_records, tree_stats, n_threads):
    """Per-tree seconds: histogram building, split finding, reduction, scheduling overhead.

    Two sources, whichever the run provides:

    - ``tree_stats`` phase timings (``seconds_histogram``/``seconds_split_search``/
      ``seconds_reduce``), written when the boosting loop runs over a executor with timers: a
      LocalExecutor (in-process, or the loop as one task on a one-worker cluster) or the actor
      executor of several workers (the slowest shard's totals). The histogram time is then
      already the parallel wall time of the per-partition tasks.
    - otherwise (a executor without timers, such as a DaskBackend) the task stream
      (``distributed.get_task_stream(...).data``): compute task-seconds per tree key
      ``-t{index}-``; the histogram time on the critical path is taken as task-seconds divided
      by the number of worker threads.

    overhead = wall - (histogram + find + reduce): what the tree's wall time (from
    ``booster.tree_stats``) spends outside that compute (scheduler round trips, client work,
    idle threads). Returns (list of per-tree dicts, source name).
    """
    if tree_stats and all("seconds_histogram" in st for st in tree_stats):
        out = []
        for st in tree_stats:
            row = dict(hist_cpu=None, hist=float(st["seconds_histogram"]),
                       find=float(st["seconds_split_search"]), reduce=float(st["seconds_reduce"]),
                       apply=None)
            out.append(row)
        source = ("booster.tree_stats phase timings (the executor's timers: in-process, the loop "
                  "as one task on the worker, or the per-worker actor shards)")
    else:
        per = defaultdict(lambda: defaultdict(float))
        for rec in task_records:
            key = rec["key"]
            key = key if isinstance(key, str) else str(key)
            m = _TREE.search(key)
            if not m:
                continue
            dur = sum(s["stop"] - s["start"] for s in rec["startstops"] if s["action"] == "compute")
            per[int(m.group(1))][task_category(key)] += dur
        out = []
        for i in range(len(tree_stats)):
            d = per.get(i, {})
            out.append(dict(hist_cpu=float(d.get("hist", 0.0)),
                            hist=float(d.get("hist", 0.0)) / n_threads,
                            find=float(d.get("find", 0.0)), reduce=float(d.get("reduce", 0.0)),
                            apply=float(d.get("apply", 0.0))))
        source = (f"distributed task stream ({len(task_records)} task records; histogram = "
                  f"task-seconds / {n_threads} threads)")
    for row, st in zip(out, tree_stats):
        row.update(wall=float(st["seconds"]), n_passes=int(st["n_passes"]),
                   waiting=float(st["seconds_waiting"]), n_leaves=int(st["n_leaves"]))
        row["overhead"] = row["wall"] - (row["hist"] + row["find"] + row["reduce"])
    return out, source


def print_time_split(split, source):
    keys = ["hist", "find", "reduce", "overhead", "wall"]
    total = {c: sum(r[c] for r in split) for c in keys}
    n = max(1, len(split))
    passes = sum(r["n_passes"] for r in split)
    leaves = sum(r["n_leaves"] for r in split)
    waiting = sum(r["waiting"] for r in split)
    extra_h, extra_mean, extra_total = [], [], []
    if split and split[0]["hist_cpu"] is not None:
        cpu = sum(r["hist_cpu"] for r in split)
        app = sum(r["apply"] for r in split)
        extra_h = ["histogram task-seconds", "apply task-seconds*"]
        extra_mean = [cpu / n * 1000, app / n * 1000]
        extra_total = [cpu, app]
    print(f"\noocgbdt time split: {len(split)} trees, {passes} passes ({passes / n:.1f} per tree), "
          f"{leaves / n:.1f} leaves per tree; source: {source}")
    print("histogram = route rows + build histograms (-route-/-root- tasks, partition_root/"
          "partition_split_many), find = split search (-find*, finish_root/finish_split_many), reduce = "
          "histogram sums and subtraction (-sum/-built/-sibling/-hist-root), overhead = wall - "
          "(histogram + find + reduce): " + (
              "scheduler round trips, client-side grower work and idle threads; *apply tasks run "
              "asynchronously after the tree, outside its wall time" if extra_h else
              "the grower's Python work between passes plus applying the finished tree to the "
              "chunks' raw scores (synchronous on one worker, so inside the tree's wall time)"))
    pct = lambda c: f"{100 * total[c] / total['wall']:.0f}%" if total["wall"] else "-"
    print_table(["", "histogram", "find", "reduce", "overhead", "tree wall", *extra_h],
                [["mean per tree (ms)", *(f"{total[c] / n * 1000:.1f}" for c in keys),
                  *(f"{v:.1f}" for v in extra_mean)],
                 ["total (s)", *(f"{total[c]:.2f}" for c in keys), *(f"{v:.2f}" for v in extra_total)],
                 ["share of tree wall", *(pct(c) for c in keys), *(["-"] * len(extra_h))]])
    if passes:
        print(f"per pass: {total['wall'] / passes * 1000:.2f} ms wall, "
              f"{total['overhead'] / passes * 1000:.2f} ms overhead; the grower waited for split "
              f"records {waiting:.2f} s of {total['wall']:.2f} s tree wall", flush=True)


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.synthetic_1m",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=None, help="training rows (default 1,000,000)")
    ap.add_argument("--features", type=int, default=None, help="features (default 100)")
    ap.add_argument("--n-estimators", type=int, default=None, help="boosting rounds (default 100)")
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run: {QUICK['rows']} rows x {QUICK['features']} features, "
                         f"{QUICK['n_estimators']} rounds")
    ap.add_argument("--models", nargs="+", default=None,
                    choices=["oocgbdt", "lightgbm", "xgboost", "scikit-learn"],
                    help="subset of models (default all; LightGBM is always run as the reference)")
    ap.add_argument("--workers", type=int, default=1,
                    help="in-process Dask workers sharing the 2 threads (default 1; with 2 the "
                         "loop runs on the client and the time split comes from the task stream)")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    defaults = QUICK if args.quick else dict(rows=1_000_000, features=100, n_estimators=100)
    rows = args.rows or defaults["rows"]
    features = args.features or defaults["features"]
    n_est = args.n_estimators or defaults["n_estimators"]
    models = args.models or ["oocgbdt", "lightgbm", "xgboost", "scikit-learn"]
    if "lightgbm" not in models:
        models = ["lightgbm"] + list(models)
    from distributed import get_task_stream
    from sklearn.metrics import roc_auc_score

    from oocgbdt.io.dataset import write_dataset

    print(f"synthetic_1m: {rows} train rows x {features} features, {n_est} rounds, "
          f"{args.workers} Dask worker(s); "
          f"machine: {machine_info()}", flush=True)
    t0 = time.perf_counter()
    with Timer() as t_data:
        X, y, Xt, yt = make_data(rows, features)
    chunk_rows = min(STORE_CHUNK_ROWS, math.ceil(rows / 8))
    results = {}
    with tempfile.TemporaryDirectory(prefix="oocgbdt-synth-") as tmp, local_cluster(
            args.workers, max(1, 2 // args.workers)) as client:
        with Timer() as t_store:
            ds = write_dataset(Path(tmp) / "train", X, y, chunk_rows=chunk_rows)
        print(f"data: {rows} train + {len(yt)} test rows, positive share {y.mean():.3f}, made in "
              f"{t_data.seconds:.1f} s; Zarr store of {len(ds.X.chunks[0])} chunks of "
              f"{chunk_rows} rows written in {t_store.seconds:.1f} s", flush=True)
        n_threads = sum(client.nthreads().values())
        fits = {
            "oocgbdt": lambda X_, y_, n: fit_oocgbdt(X_, y_, client, n),
            "lightgbm": fit_lightgbm,
            "xgboost": fit_xgboost,
            "scikit-learn": fit_sklearn,
        }
        for name in models:  # untimed warm-up
            fits[name](X[:WARMUP_ROWS], y[:WARMUP_ROWS], WARMUP_ROUNDS)
        split = None
        for name in models:
            free_memory()
            if name == "oocgbdt":
                with get_task_stream(client) as ts:
                    with PeakMemory() as mem, Timer() as t:
                        model = fits[name](ds.X, ds.y, n_est)
                split = tree_time_split(ts.data, model.tree_stats, n_threads)
                results["_ooc"] = dict(trees=model.num_trees(), tree_wall=sum(
                    st["seconds"] for st in model.tree_stats))
            else:
                with PeakMemory() as mem, Timer() as t:
                    model = fits[name](X, y, n_est)
            auc = float(roc_auc_score(yt, predict_proba(name, model, Xt)))
            results[name] = dict(seconds=t.seconds, mem=mem.delta_mb, base=mem.baseline / 2**20,
                                 auc=auc)
            print(f"[{name}] fit {t.seconds:.1f} s, peak +{mem.delta_mb:.0f} MB over "
                  f"{mem.baseline / 2**20:.0f} MB, test AUC {auc:.5f}", flush=True)
            del model
    ref = results["lightgbm"]
    table = []
    for name in models:
        r = results[name]
        table.append([name, f"{r['seconds']:.2f}", f"{r['mem']:.0f}", f"{r['base']:.0f}",
                      f"{r['auc']:.5f}", f"{r['seconds'] / ref['seconds']:.2f}",
                      f"{r['mem'] / ref['mem']:.2f}" if ref["mem"] > 0 else "-",
                      f"{r['auc'] - ref['auc']:+.5f}"])
    print()
    print_table(["model", "fit s", "peak MB (over baseline)", "baseline MB", "test AUC",
                 "time / LightGBM", "memory / LightGBM", "AUC - LightGBM"], table)
    if split is not None:
        print_time_split(*split)
        ooc = results["oocgbdt"]
        print(f"oocgbdt fit {ooc['seconds']:.2f} s = {results['_ooc']['tree_wall']:.2f} s in "
              f"trees + {ooc['seconds'] - results['_ooc']['tree_wall']:.2f} s outside them "
              f"(validation, binning, reading the store, gradients, metrics, collecting the "
              f"model)", flush=True)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s; machine at the end: {machine_info()}",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
