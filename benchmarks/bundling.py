"""Benchmark of Exclusive Feature Bundling.

    python -m benchmarks.bundling            # full: insteval one-hot + a 1M-row one-hot table
    python -m benchmarks.bundling --quick    # small sizes, for the smoke test (< 60 s)

Prints, per dataset:

* histogram-building seconds per tree (routing + histograms of every pass, summed over chunks'
  wall time, from ``Booster.tree_stats``) with bundling on and off, and their ratio;
* end-to-end training seconds (binning, conflict counting, bundling and boosting; from the
  in-memory CSR matrix) of oocgbdt, LightGBM (its bundling on) and XGBoost (``hist``), run one
  after the other in this process with the same number of threads;
* bytes of ``X_binned`` (one uint8/uint16 column per feature) against ``X_bundled`` (what
  oocgbdt holds with bundling);
* test metrics of all three;

and, for insteval, the histogram time with uint8 bundle columns against uint16 ones (the
measurement behind ``WIDE_COLUMN_COST``), and the peak memory (RSS) of a fresh process that
trains from the LibSVM file converted to oocgbdt's sparse Zarr layout, against the size of a
dense float32 copy of X.

Datasets: ``insteval_onehot.svm`` from ``../shared/data`` (or ``$OOCGBDT_DATA``), split 80/20 by
a seeded permutation; and a synthetic table of 40 categorical variables with 50 equally likely
levels each, one-hot encoded (2,000 columns), plus 20 dense standard-normal columns, with a
binary label from 10 of the categoricals and 4 of the numeric columns.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

THREADS = os.cpu_count() or 1


def data_dir() -> Path:
    env = os.environ.get("OOCGBDT_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------


def synthetic_onehot(n_rows, n_cat=40, levels=50, n_dense=20, seed=0):
    """One-hot categoricals plus dense numeric columns, as CSR float32; binary label."""
    rng = np.random.default_rng(seed)
    lv = rng.integers(0, levels, size=(n_rows, n_cat), dtype=np.int32)
    dense = rng.normal(size=(n_rows, n_dense)).astype(np.float32)
    k = n_cat + n_dense
    indices = np.empty((n_rows, k), np.int32)
    indices[:, :n_cat] = lv + (np.arange(n_cat, dtype=np.int32) * levels)[None, :]
    indices[:, n_cat:] = n_cat * levels + np.arange(n_dense, dtype=np.int32)[None, :]
    values = np.empty((n_rows, k), np.float32)
    values[:, :n_cat] = 1.0
    values[:, n_cat:] = dense
    X = sp.csr_matrix((values.ravel(), indices.ravel(), np.arange(0, n_rows * k + 1, k, dtype=np.int64)),
                      shape=(n_rows, n_cat * levels + n_dense))
    effect = rng.normal(scale=0.5, size=(n_cat, levels))
    used = min(10, n_cat)
    dense = np.pad(dense, ((0, 0), (0, max(0, 4 - n_dense))))  # the label reads 4 columns
    logit = (effect[np.arange(used)[None, :], lv[:, :used]].sum(axis=1) + dense[:, 0]
             - 0.5 * dense[:, 1] ** 2 + 0.3 * dense[:, 2] * dense[:, 3])
    y = (logit + rng.logistic(size=n_rows) > 0).astype(np.float64)
    return X, y


def insteval(max_rows=None):
    from sklearn.datasets import load_svmlight_file
    path = data_dir() / "insteval" / "insteval_onehot.svm"
    X, y = load_svmlight_file(str(path), n_features=4126, zero_based=False, dtype=np.float32)
    if max_rows:
        X, y = X[:max_rows], y[:max_rows]
    return X.tocsr(), y.astype(np.float64), path


def split(X, y, test_fraction=0.2, seed=0):
    perm = np.random.default_rng(seed).permutation(X.shape[0])
    n_test = int(X.shape[0] * test_fraction)
    te, tr = np.sort(perm[:n_test]), np.sort(perm[n_test:])
    return X[tr], y[tr], X[te], y[te]


# ---------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------


def metrics(task, y, pred):
    from sklearn.metrics import log_loss, roc_auc_score
    if task == "binary":
        p = np.clip(pred, 1e-15, 1 - 1e-15)
        return {"auc": roc_auc_score(y, p), "logloss": log_loss(y, p)}
    return {"rmse": float(np.sqrt(np.mean((y - pred) ** 2)))}


def run_oocgbdt(task, X, y, Xt, yt, rounds, enable_bundle=True):
    import oocgbdt
    params = dict(objective=task, num_leaves=31, learning_rate=0.1, n_estimators=rounds,
                  max_bin=255, enable_bundle=enable_bundle)
    t0 = time.perf_counter()
    booster = oocgbdt.train(params, X, y, verbose=False)
    seconds = time.perf_counter() - t0
    hist = [s["seconds_histogram"] for s in booster.tree_stats]
    return dict(seconds=seconds, hist_per_tree=float(np.mean(hist)), trees=len(hist),
                report=booster.bundle_report, metrics=metrics(task, yt, booster.predict(Xt)),
                booster=booster)


def run_lightgbm(task, X, y, Xt, yt, rounds):
    import lightgbm as lgb
    params = dict(objective=task, num_leaves=31, learning_rate=0.1, max_bin=255,
                  num_threads=THREADS, verbose=-1)
    t0 = time.perf_counter()
    model = lgb.train(params, lgb.Dataset(X, y), num_boost_round=rounds)
    seconds = time.perf_counter() - t0
    return dict(seconds=seconds, metrics=metrics(task, yt, model.predict(Xt)))


def run_xgboost(task, X, y, Xt, yt, rounds):
    import xgboost as xgb
    params = dict(objective="binary:logistic" if task == "binary" else "reg:squarederror",
                  tree_method="hist", grow_policy="lossguide", max_leaves=31, max_depth=0,
                  eta=0.1, max_bin=256, nthread=THREADS)
    t0 = time.perf_counter()
    model = xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=rounds)
    seconds = time.perf_counter() - t0
    return dict(seconds=seconds, metrics=metrics(task, yt, model.predict(xgb.DMatrix(Xt))))


def layout_comparison(X, y, rounds):
    """Histogram seconds per tree with the chosen (uint16) columns and with uint8 columns."""
    from oocgbdt.core import bundler
    out = {}
    saved = bundler.WIDE_COLUMN_COST
    try:
        for name, cost in (("uint16", saved), ("uint8", math.inf)):
            bundler.WIDE_COLUMN_COST = cost
            r = run_oocgbdt("regression", X, y, X[:10], y[:10], rounds)
            out[name] = (r["report"]["n_bundles"], r["report"]["layout"], r["hist_per_tree"])
    finally:
        bundler.WIDE_COLUMN_COST = saved
    return out


_MEMORY_CHILD = r"""
import json, sys, time

def hwm():
    # peak RSS of this process image: VmHWM (ru_maxrss would include the parent's at fork)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

import oocgbdt
import oocgbdt.dask.training
from oocgbdt.io.dataset import open_dataset
ds = open_dataset(sys.argv[1])
before = hwm()
t0 = time.perf_counter()
b = oocgbdt.train(dict(objective="regression", n_estimators=int(sys.argv[2])), ds.X, ds.y,
                  verbose=False)
print(json.dumps(dict(seconds=time.perf_counter() - t0, peak=hwm(), before=before,
                      bundles=len(b.bundles_), sparse=ds.sparse, rows=ds.n_rows,
                      features=ds.n_features)))
"""


def memory_from_sparse_store(svm_path, rounds, workdir):
    """Convert the LibSVM file to the sparse Zarr layout, then train from it in a fresh process
    (embedded LocalCluster, in-process worker) and report that process's peak RSS."""
    from oocgbdt.io.convert import convert
    t0 = time.perf_counter()
    ds = convert(svm_path, Path(workdir) / "insteval.zarr", chunk_rows=20_000)
    convert_seconds = time.perf_counter() - t0
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", _MEMORY_CHILD, str(ds.path), str(rounds)],
                         capture_output=True, text=True, env=env, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["convert_seconds"] = convert_seconds
    res["dense_float32_bytes"] = ds.n_rows * ds.n_features * 4
    return res


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------


def _mb(n):
    return f"{n / 2**20:,.1f} MB"


def _fmt_metrics(m):
    return ", ".join(f"{k} {v:.4f}" for k, v in m.items())


def bench_dataset(name, task, X, y, Xt, yt, rounds, rounds_off):
    print(f"\n== {name}: {X.shape[0]:,} training rows x {X.shape[1]:,} features "
          f"({X.nnz / (X.shape[0] * X.shape[1]):.2%} non-zero), {Xt.shape[0]:,} test rows, "
          f"{task}, {rounds} rounds, num_leaves 31, learning_rate 0.1, {THREADS} threads ==")
    on = run_oocgbdt(task, X, y, Xt, yt, rounds, enable_bundle=True)
    off = run_oocgbdt(task, X, y, Xt, yt, rounds_off, enable_bundle=False)
    lgb_r = run_lightgbm(task, X, y, Xt, yt, rounds)
    xgb_r = run_xgboost(task, X, y, Xt, yt, rounds)
    rep = on["report"]
    print(rep["summary"])
    k = off["trees"]
    same = np.array_equal(on["booster"].predict(Xt, raw_score=True, num_iteration=k),
                          off["booster"].predict(Xt, raw_score=True))
    print(f"test predictions of the first {k} rounds with bundling on and off: "
          f"{'bit-identical' if same else 'DIFFERENT'}")
    speedup = off["hist_per_tree"] / on["hist_per_tree"]
    print(f"histogram building per tree: bundled {on['hist_per_tree']:.3f} s "
          f"({on['trees']} trees), unbundled {off['hist_per_tree']:.3f} s ({off['trees']} trees)"
          f" -> bundling {speedup:.1f}x faster")
    print(f"X_binned {_mb(rep['bytes_binned'])} (one column per feature) vs X_bundled "
          f"{_mb(rep['bytes_bundled'])} ({rep['n_bundles']} {rep['layout']} columns): "
          f"{rep['bytes_binned'] / rep['bytes_bundled']:.0f}x smaller")
    print(f"{'end to end':<28}{'seconds':>9}   test metrics")
    rows = [("oocgbdt (bundling on)", on), ("LightGBM (bundling on)", lgb_r), ("XGBoost (hist)", xgb_r)]
    for label, r in rows:
        print(f"{label:<28}{r['seconds']:>9.2f}   {_fmt_metrics(r['metrics'])}")
    print(f"{'oocgbdt (bundling off)':<28}{off['seconds']:>9.2f}   ({off['trees']} rounds: "
          f"timing only)")
    return dict(name=name, speedup=speedup, identical=same, on=on, off=off, lightgbm=lgb_r,
                xgboost=xgb_r)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    ap.add_argument("--rows", type=int, default=None, help="rows of the synthetic table "
                    "(default 1,000,000; 10,000 with --quick)")
    args = ap.parse_args(argv)
    import oocgbdt
    quick = args.quick
    n_syn = args.rows or (10_000 if quick else 1_000_000)
    rounds = 5 if quick else 20
    rounds_off = 2 if quick else 5
    print(f"oocgbdt {oocgbdt.__version__} from {Path(oocgbdt.__file__).parent}; "
          f"{'quick' if quick else 'full'} run on {THREADS} threads")
    # warm up every library (JIT caches, thread pools) so no timed run pays for loading them
    Xw, yw = synthetic_onehot(2000, n_cat=3, levels=5, n_dense=4)
    run_oocgbdt("binary", Xw, yw, Xw, yw, 2)
    run_oocgbdt("binary", Xw, yw, Xw, yw, 2, enable_bundle=False)
    run_lightgbm("binary", Xw, yw, Xw, yw, 2)
    run_xgboost("binary", Xw, yw, Xw, yw, 2)

    results = []
    t0 = time.perf_counter()
    X, y, svm_path = insteval(6_000 if quick else None)
    Xtr, ytr, Xte, yte = split(X, y)
    results.append(bench_dataset("insteval one-hot (regression on the rating)", "regression",
                                 Xtr, ytr, Xte, yte, rounds if quick else 50, rounds_off))
    layout = None
    if not quick:  # the row subset of --quick fits uint8 columns: nothing to compare
        layout = layout_comparison(Xtr, ytr, 10)
        print("bundle column width on insteval (histogram seconds per tree): " + "; ".join(
            f"{n} {lay} columns {s:.3f} s" for n, lay, s in layout.values()))

    Xs, ys = synthetic_onehot(n_syn)
    Xtr, ytr, Xte, yte = split(Xs, ys)
    del Xs
    results.append(bench_dataset(f"synthetic one-hot ({n_syn:,} rows: 40 categoricals x 50 "
                                 f"levels + 20 dense)", "binary", Xtr, ytr, Xte, yte, rounds,
                                 rounds_off))
    del Xtr, Xte

    with tempfile.TemporaryDirectory(prefix="oocgbdt-bench-") as tmp:
        mem = memory_from_sparse_store(data_dir() / "insteval" / "insteval_onehot.svm",
                                       3 if quick else 20, tmp)
    print(f"\n== insteval from a LibSVM-converted sparse Zarr store (fresh process, embedded "
          f"LocalCluster) ==")
    print(f"convert: {mem['convert_seconds']:.1f} s ({mem['rows']:,} x {mem['features']:,}, "
          f"sparse layout: {mem['sparse']}); train: {mem['seconds']:.1f} s, {mem['bundles']} bundles")
    print(f"peak RSS {_mb(mem['peak'])} (after imports {_mb(mem['before'])}) vs a dense float32 "
          f"copy of X {_mb(mem['dense_float32_bytes'])}: "
          f"{'below' if mem['peak'] < mem['dense_float32_bytes'] else 'NOT below'}")
    syn = results[-1]
    print(f"\nsynthetic histogram speed-up with bundling: {syn['speedup']:.1f}x (target >= 5x: "
          f"{'met' if syn['speedup'] >= 5 else 'NOT met'}); total {time.perf_counter() - t0:.0f} s")
    return dict(results=results, layout=layout, memory=mem)


if __name__ == "__main__":
    main()
