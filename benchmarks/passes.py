"""Passes per tree and the accuracy cost of batching: leaf-wise k = 1 (with and without splitting
ahead), 2, 4, 8 and depth-wise.

Usage::

    python -m benchmarks.passes [--quick] [--datasets NAME ...] [--rounds N] [--workers N]

Policies, all with num_leaves=31, learning_rate=0.1, max_bin=255, max_depth unset and every other
parameter at its default:

- ``leafwise k=1``: exact best-first growth (LightGBM's), one pass over the data per split
  (``lookahead_leaves=0``);
- ``leafwise k=1 ahead 2``: the same growth and the same trees, each pass also splitting up to 2
  of the next best open leaves ahead of their turn (``lookahead_leaves=2``, the default with the
  disk cache; 1 on several workers, 0 in process): fewer passes, zero accuracy difference;
- ``leafwise k=2/4/8``: ``max_leaves_per_pass=k``, the k open leaves with the largest gains split
  in one pass;
- ``depthwise``: ``grow_policy="depthwise"``, every open leaf with a positive gain split in one
  pass (the largest gains first when the 31-leaf budget cannot take a whole level).

Datasets (loaders in ``benchmarks/_common.py``; real data in ``../shared/data`` or
``$OOCGBDT_DATA``):

- ``lightgbm_binary``: 7,000 / 500 HIGGS rows, 28 features; AUC; 100 rounds;
- ``california_housing``: 16,512 / 4,128 rows, 8 features; RMSE; 100 rounds;
- ``kddcup99``: 395,216 / 98,804 rows, 41 features, 23 classes (23 trees per round);
  multi_logloss and multi_error (the log loss is dominated by the few test rows of classes with
  0-2 training rows, so it swings; the error rate does not); 10 rounds;
- ``synthetic_1m``: the generator of ``benchmarks/synthetic_1m.py`` (``make_classification``,
  seed 0), 1,000,000 training rows x 100 features, 200,000 test rows; AUC; 30 rounds.

oocgbdt trains on NumPy input (the in-process executor, 2 threads) with ``chunk_rows =
min(65536, ceil(rows / 8))``, so every pass spans at least 8 chunks; ``--workers N`` (N >= 2)
instead trains from Dask arrays of the same chunks on an in-process LocalCluster of N workers
with one thread each, where the loop runs on the client and every pass costs scheduler round
trips (the setting batching is for). Columns, one row per policy:

- ``passes/tree``: mean passes over the data per tree (``tree_stats[i]["n_passes"]``, the root
  pass included);
- ``leaves/tree``: mean leaves per tree;
- ``s/tree``: mean wall seconds per tree (growing it, applying it to every row, and its share of
  the round's gradients), and its ratio to k=1;
- ``cpu s/tree``: the same in CPU seconds of this process, all threads (robust to other jobs on a
  shared machine; meaningless with ``--workers``, where the work runs in the workers' threads
  of this same process but is counted only while the client waits);
- the test metric(s) and the difference from k=1 (``+`` = better): the accuracy cost of batching.

``--quick`` (smoke run): lightgbm_binary and california_housing for 10 rounds, 10,000 kddcup99
training rows for 2 rounds, and 20,000 synthetic rows x 20 features for 10 rounds.
"""
from __future__ import annotations

import argparse
import math
import platform
import sys
import time

import numpy as np

from benchmarks._common import BenchData, load_dataset, machine_info, print_table, subsample_rows

POLICIES = {
    "leafwise k=1": dict(grow_policy="leafwise", max_leaves_per_pass=1, lookahead_leaves=0),
    "leafwise k=1 ahead 2": dict(grow_policy="leafwise", max_leaves_per_pass=1, lookahead_leaves=2),
    "leafwise k=2": dict(grow_policy="leafwise", max_leaves_per_pass=2),
    "leafwise k=4": dict(grow_policy="leafwise", max_leaves_per_pass=4),
    "leafwise k=8": dict(grow_policy="leafwise", max_leaves_per_pass=8),
    "depthwise": dict(grow_policy="depthwise"),
}
BASELINE = "leafwise k=1"
COMMON = dict(num_leaves=31, learning_rate=0.1, max_bin=255)
DATASETS = ("lightgbm_binary", "california_housing", "kddcup99", "synthetic_1m")
ROUNDS = {"lightgbm_binary": 100, "california_housing": 100, "kddcup99": 10, "synthetic_1m": 30}
QUICK_ROUNDS = {"lightgbm_binary": 10, "california_housing": 10, "kddcup99": 2, "synthetic_1m": 10}
METRICS = {"binary": ("auc",), "regression": ("rmse",),
           "multiclass": ("multi_logloss", "multi_error")}
HIGHER_IS_BETTER = {"auc": True, "rmse": False, "multi_logloss": False, "multi_error": False}
N_THREADS = 2


# ---- data ---------------------------------------------------------------------------------------

def load(name: str, quick: bool) -> BenchData:
    if name == "synthetic_1m":
        from benchmarks.synthetic_1m import make_data
        rows, features = (20_000, 20) if quick else (1_000_000, 100)
        X, y, Xt, yt = make_data(rows, features)
        return BenchData("synthetic_1m", X, y, Xt, yt, "binary", "auc",
                         notes=f"benchmarks/synthetic_1m.make_data({rows}, {features})")
    d = load_dataset(name)
    if quick and name == "kddcup99":
        d.X_train, d.y_train = subsample_rows(d.X_train, d.y_train, 10_000)
        d.X_test, d.y_test = subsample_rows(d.X_test, d.y_test, 2_500)
    return d


def score(metric: str, y, pred) -> float:
    if metric == "auc":
        from sklearn.metrics import roc_auc_score
        return float(roc_auc_score(y, pred))
    if metric == "rmse":
        return float(np.sqrt(np.mean((np.asarray(pred) - y) ** 2)))
    if metric == "multi_error":
        return float(np.mean(np.argmax(pred, axis=1) != y.astype(int)))
    p = np.clip(pred, 1e-15, 1.0)
    return float(-np.mean(np.log(p[np.arange(len(y)), y.astype(int)])))


# ---- training -----------------------------------------------------------------------------------

def run_policy(d: BenchData, policy: str, rounds: int, client=None) -> dict:
    import oocgbdt
    chunk = min(65536, math.ceil(len(d.y_train) / 8))
    params = dict(COMMON, objective=d.objective, n_estimators=rounds, chunk_rows=chunk,
                  **POLICIES[policy])
    if d.num_class > 1:
        params["num_class"] = d.num_class
    X, y = d.X_train, d.y_train
    if client is not None:
        import dask.array as da
        X, y = da.from_array(X, chunks=(chunk, -1)), da.from_array(y, chunks=chunk)
    t0 = time.perf_counter()
    booster = oocgbdt.train(params, X, y, client=client, verbose=False)
    fit = time.perf_counter() - t0
    stats = booster.tree_stats
    pred = booster.predict(d.X_test)
    return dict(passes=float(np.mean([s["n_passes"] for s in stats])),
                leaves=float(np.mean([s["n_leaves"] for s in stats])),
                seconds=float(np.mean([s["seconds"] for s in stats])),
                cpu=float(np.mean([s["cpu_seconds"] for s in stats])),
                fit=fit, n_trees=len(stats),
                metrics={m: score(m, d.y_test, pred) for m in METRICS[d.objective]})


def warm_up_jit():
    """Load numba's cached kernels (or compile them) before anything is timed."""
    import oocgbdt
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.float64)
    for p in POLICIES.values():
        oocgbdt.train(dict(objective="binary", n_estimators=2, chunk_rows=1000, **p), X, y,
                      verbose=False)


# ---- report -------------------------------------------------------------------------------------

def _diff(metric, value, base) -> str:
    """Difference from k=1, signed so that ``+`` is better."""
    d = value - base if HIGHER_IS_BETTER[metric] else base - value
    return f"{d:+.4f}"


def report(d: BenchData, results: dict, out) -> None:
    metrics = METRICS[d.objective]
    base = results[BASELINE]
    headers = ["policy", "passes/tree", "leaves/tree", "s/tree", "vs k=1", "cpu s/tree"]
    for m in metrics:
        headers += [f"test {m}", "diff vs k=1 (+ better)"]
    rows = []
    for policy, r in results.items():
        row = [policy, f"{r['passes']:.2f}", f"{r['leaves']:.1f}", f"{r['seconds']:.4f}",
               f"{r['seconds'] / base['seconds']:.2f}x", f"{r['cpu']:.4f}"]
        for m in metrics:
            row += [f"{r['metrics'][m]:.4f}", _diff(m, r["metrics"][m], base["metrics"][m])]
        rows.append(row)
    print_table(headers, rows, file=out)


def run(datasets, quick: bool, rounds_override=None, workers: int = 0, out=sys.stdout) -> dict:
    import numba
    import oocgbdt
    print(f"# Passes per tree: leaf-wise k = 1, 2, 4, 8 and depth-wise "
          f"({'quick smoke run' if quick else 'full run'})", file=out)
    print(f"machine: {platform.processor() or platform.machine()}, {machine_info()}; python "
          f"{platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}, "
          f"oocgbdt {oocgbdt.__version__}", file=out)
    where = (f"LocalCluster of {workers} in-process workers x 1 thread (client-side loop)"
             if workers >= 2 else f"in-process executor, {N_THREADS} threads")
    print(f"settings: num_leaves=31, learning_rate=0.1, max_bin=255, max_depth unset; {where}",
          file=out, flush=True)
    warm_up_jit()
    all_results = {}
    cluster = None
    if workers >= 2:
        from benchmarks._common import local_cluster
        cluster = local_cluster(n_workers=workers, threads_per_worker=1)
        client = cluster.__enter__()
    else:
        client = None
    try:
        for name in datasets:
            t0 = time.perf_counter()
            d = load(name, quick)
            rounds = rounds_override or (QUICK_ROUNDS if quick else ROUNDS)[name]
            print(f"\n## {name}: {len(d.y_train):,} train / {len(d.y_test):,} test rows x "
                  f"{d.n_features} features, {d.objective}, {rounds} rounds "
                  f"(loaded in {time.perf_counter() - t0:.1f} s)", file=out, flush=True)
            results = {p: run_policy(d, p, rounds, client) for p in POLICIES}
            report(d, results, out)
            fits = ", ".join(f"{p} {r['fit']:.1f} s" for p, r in results.items())
            print(f"end-to-end fit: {fits}; load average now {machine_info().split('load average ')[-1]}",
                  file=out, flush=True)
            all_results[name] = results
    finally:
        if cluster is not None:
            cluster.__exit__(None, None, None)
    return all_results


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.passes",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run on small data (seconds)")
    ap.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    ap.add_argument("--rounds", type=int, default=None, help="boosting rounds for every dataset")
    ap.add_argument("--workers", type=int, default=0,
                    help="train on an in-process LocalCluster of N >= 2 workers (client-side loop)")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    run(args.datasets, args.quick, args.rounds, args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
