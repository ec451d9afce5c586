"""Benchmark of the set-up before the first tree, against LightGBM's ``Dataset.construct()``.

    python -m benchmarks.setup             # full: 1M x 100 dense, 200k x 1,205 one-hot CSR
    python -m benchmarks.setup --quick     # small sizes, for the smoke test (a few seconds)

Set-up is everything ``oocgbdt.train`` does before the first tree: input wrapping, the bin
sample and bin finding, the EFB conflict counts and bundling, and loading (binning and
bundling) the partitions. It is measured, in process on NumPy/CSR input, as the wall time from
calling ``train`` with one round to its first round's callback, minus that tree's own
``Booster.tree_stats[0]["seconds"]`` (the callback runs right after the round; no eval set is
given, so the round does nothing else worth counting). LightGBM's counterpart is
``lgb.Dataset(X, y, params={"max_bin": 255, ...}).construct()`` (bin sample and bin finding,
feature bundling, and binning every row).

Tables:

* **dense**: 1,000,000 x 100 standard-normal float32, regression label (quick: 20,000 x 20);
* **one-hot**: :func:`benchmarks.bundling.synthetic_onehot` ``(200_000, n_cat=24, levels=50,
  n_dense=5)``: 1,205 columns, sparse CSR, binary label (quick: 4,000 rows, 6 x 10 + 3).

Then the one-hot fit (30 trees, 31 leaves; quick: 5 trees) on an 80/20 split of the one-hot
table: oocgbdt with bundling on and off (``enable_bundle``) against LightGBM's training
``Dataset`` constructed and ``lgb.train`` on it (its defaults but ``num_threads``), with each
one's test AUC. Each fit's seconds are split into set-up (oocgbdt: before the first tree, as
above; LightGBM: the Dataset's ``construct()``) and rounds (the rest), and the fit's ratio to
LightGBM's is printed by part.

Each measurement alternates the tools, repeats ``--repeats`` times (>= 3) and prints medians;
both tools use ``--threads`` threads (default 2). One untimed warm-up run of each tool comes
first (numba's cached kernels and Dask's imports load on a process's first fit). The load
average is printed before and after; the figures are indicative when it exceeds the cores.

The ratios are printed against the set-up targets, with PASS/FAIL:

* set-up of each table <= 1.0 x LightGBM's ``Dataset.construct()``;
* the one-hot fit with bundling <= 1.0 x LightGBM's whole fit;
* the one-hot fit with bundling <= 0.4 x oocgbdt's own fit with bundling off.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from benchmarks._common import load_line, markdown_table
from benchmarks.bundling import split, synthetic_onehot

#: (ratio name, limit) of the targets.
TARGETS = {
    "setup dense / LightGBM construct": 1.0,
    "setup one-hot / LightGBM construct": 1.0,
    "fit one-hot (bundling) / LightGBM fit": 1.0,
    "fit one-hot (bundling) / fit (no bundling)": 0.4,
}


#: The one-hot table's layout (:func:`benchmarks.bundling.synthetic_onehot`): 24 one-hot
#: columns of 50 levels and 5 dense columns, 1,205 columns in all.
ONEHOT_LAYOUT = dict(n_cat=24, levels=50, n_dense=5)


def dense_table(n_rows, n_features, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features)).astype(np.float32)
    y = X[:, 0] - 0.5 * X[:, 1] ** 2 + rng.normal(size=n_rows)
    return X, y


def _train_timed(params, X, y):
    """``(booster, seconds, set-up seconds)`` of ``oocgbdt.train(params, X, y)``: the set-up is
    the wall time to the first round's callback minus that tree's own
    ``tree_stats[0]["seconds"]`` (see the module docstring)."""
    import oocgbdt
    first = []

    def at_first_round(env):
        if not first:
            first.append(time.perf_counter())

    t0 = time.perf_counter()
    booster = oocgbdt.train(params, X, y, callbacks=[at_first_round])
    seconds = time.perf_counter() - t0
    return booster, seconds, first[0] - t0 - float(booster.tree_stats[0]["seconds"])


def oocgbdt_setup(X, y, objective, threads, max_bin=255):
    """Seconds before the first tree (see the module docstring)."""
    return _train_timed(dict(objective=objective, n_estimators=1, num_leaves=31,
                             max_bin=max_bin, num_threads=threads, verbose=False), X, y)[2]


def lightgbm_construct(X, y, threads, max_bin=255):
    import lightgbm as lgb
    t0 = time.perf_counter()
    lgb.Dataset(X, y, params=dict(max_bin=max_bin, num_threads=threads, verbose=-1)).construct()
    return time.perf_counter() - t0


def auc(y, p):
    from sklearn.metrics import roc_auc_score
    return float(roc_auc_score(y, p))


def oocgbdt_fit(X, y, Xt, yt, rounds, threads, enable_bundle):
    """``(seconds, test AUC, set-up seconds, rounds seconds)`` of one whole fit: set-up as
    :func:`oocgbdt_setup` measures it, the rounds the rest of the fit."""
    booster, seconds, setup = _train_timed(
        dict(objective="binary", n_estimators=rounds, num_leaves=31, learning_rate=0.1,
             max_bin=255, num_threads=threads, enable_bundle=enable_bundle, verbose=False),
        X, y)
    return seconds, auc(yt, booster.predict(Xt)), setup, seconds - setup


def lightgbm_fit(X, y, Xt, yt, rounds, threads):
    """As :func:`oocgbdt_fit`: set-up is the training Dataset's ``construct()``, made before
    ``lgb.train`` (with the same ``num_threads``), the rounds ``lgb.train`` on it."""
    import lightgbm as lgb
    t0 = time.perf_counter()
    data = lgb.Dataset(X, y, params=dict(num_threads=threads, verbose=-1)).construct()
    setup = time.perf_counter() - t0
    model = lgb.train(dict(objective="binary", num_threads=threads, verbose=-1), data,
                      num_boost_round=rounds)
    seconds = time.perf_counter() - t0
    return seconds, auc(yt, model.predict(Xt)), setup, seconds - setup


def alternate(runs, repeats):
    """``{name: [result, ...]}``: each callable of ``runs`` once per repeat, in turn."""
    out = {name: [] for name in runs}
    for _ in range(repeats):
        for name, fn in runs.items():
            out[name].append(fn())
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    ap.add_argument("--repeats", type=int, default=3, help="repeats per measurement (>= 3)")
    ap.add_argument("--threads", type=int, default=2, help="threads of both tools")
    args = ap.parse_args(argv)
    if args.repeats < 3:
        ap.error(f"--repeats must be >= 3, found {args.repeats}")
    threads, repeats = args.threads, args.repeats
    if args.quick:
        dense = dense_table(20_000, 20)
        onehot = synthetic_onehot(4_000, n_cat=6, levels=10, n_dense=3)
        rounds = 5
    else:
        dense = dense_table(1_000_000, 100)
        onehot = synthetic_onehot(200_000, **ONEHOT_LAYOUT)
        rounds = 30
    print(f"# Set-up before the first tree{' (quick smoke run)' if args.quick else ''}")
    print(f"{threads} threads per tool, {repeats} repeats, medians; in process, NumPy/CSR input")
    print(load_line("before"), flush=True)

    # warm-up: a process's first fit loads numba's cached kernels and Dask
    Xw, yw = onehot[0][:2000], onehot[1][:2000]
    oocgbdt_setup(Xw, yw, "binary", threads)
    lightgbm_construct(Xw, yw, threads)

    results = {"setup": {}, "fit": {}}
    rows = []
    for name, (X, y), objective in (("dense", dense, "regression"),
                                    ("one-hot", onehot, "binary")):
        r = alternate({"oocgbdt": lambda: oocgbdt_setup(X, y, objective, threads),
                       "lightgbm": lambda: lightgbm_construct(X, y, threads)}, repeats)
        med = {k: statistics.median(v) for k, v in r.items()}
        results["setup"][name] = dict(med, runs=r, shape=tuple(X.shape))
        rows.append([name, f"{X.shape[0]} x {X.shape[1]}", med["oocgbdt"], med["lightgbm"],
                     med["oocgbdt"] / med["lightgbm"]])
    print("\n## Set-up seconds (oocgbdt: before the first tree; LightGBM: Dataset.construct())")
    print(markdown_table(["table", "shape", "oocgbdt", "LightGBM", "ratio"], rows), flush=True)

    X, y, Xt, yt = split(*onehot)
    r = alternate({"bundling on": lambda: oocgbdt_fit(X, y, Xt, yt, rounds, threads, True),
                   "bundling off": lambda: oocgbdt_fit(X, y, Xt, yt, rounds, threads, False),
                   "LightGBM": lambda: lightgbm_fit(X, y, Xt, yt, rounds, threads)}, repeats)
    rows = []
    for name, runs in r.items():
        seconds, setup, rest = (statistics.median(run[i] for run in runs) for i in (0, 2, 3))
        results["fit"][name] = dict(seconds=seconds, auc=runs[0][1], setup=setup, rounds=rest,
                                    runs=runs)
        rows.append([name, seconds, setup, rest, 1e3 * rest / rounds, runs[0][1]])
    print(f"\n## One-hot fit ({X.shape[0]} x {X.shape[1]} train, {rounds} trees, 31 leaves): "
          f"seconds (medians of each column), and test AUC")
    print("Set-up: oocgbdt before the first tree, LightGBM the training Dataset's construct(); "
          "rounds: the rest of the fit.")
    print(markdown_table(["run", "seconds", "set-up", "rounds", "ms per round", "test AUC"],
                         rows), flush=True)

    s, f = results["setup"], results["fit"]
    ratios = {
        "setup dense / LightGBM construct": s["dense"]["oocgbdt"] / s["dense"]["lightgbm"],
        "setup one-hot / LightGBM construct": s["one-hot"]["oocgbdt"] / s["one-hot"]["lightgbm"],
        "fit one-hot (bundling) / LightGBM fit": f["bundling on"]["seconds"] / f["LightGBM"]["seconds"],
        "fit one-hot (bundling) / fit (no bundling)": (f["bundling on"]["seconds"]
                                                       / f["bundling off"]["seconds"]),
    }
    results["ratios"] = ratios
    # where the one-hot fit's ratio comes from (reported, no target)
    results["parts"] = {part: f["bundling on"][part] / f["LightGBM"][part]
                        for part in ("setup", "rounds")}
    results["pass"] = {k: v <= TARGETS[k] for k, v in ratios.items()}
    print("\n## Targets")
    print(markdown_table(["ratio", "value", "target", "result"],
                         [[k, v, f"<= {TARGETS[k]}", "PASS" if results["pass"][k] else "FAIL"]
                          for k, v in ratios.items()]))
    print("\nOne-hot fit (bundling) / LightGBM, by part: set-up "
          f"{results['parts']['setup']:.3f}, rounds {results['parts']['rounds']:.3f}")
    print(load_line("after"), flush=True)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
