"""Quantized training benchmark: float vs quantized gradients (``use_quantized_grad``), oocgbdt
next to LightGBM's own quantized mode.

Usage::

    python -m benchmarks.quantized [--quick] [--repeats N] [--datasets NAME ...] [--rounds N]
                                   [--seeds N]

Datasets: ``synthetic_1m`` (1,000,000 x 100 dense float32 N(0, 1), binary labels from a
nonlinear function of 10 features; :func:`benchmarks.sampling.synthetic`; 200,000 test rows),
and from ``../shared/data`` (``$OOCGBDT_DATA``): ``a9a`` (32,561 x 123 one-hot, bundled) and
``lightgbm_binary`` (7,000 x 28 HIGGS rows, 500 test rows: its AUC is noisy).

Runs, alternated within each repeat (``float``, ``quant`` for oocgbdt, then LightGBM's two):
num_leaves=31, learning_rate=0.1, max_bin=255, ``use_quantized_grad`` with its defaults (4
levels, stochastic rounding) for ``quant``; oocgbdt on NumPy input (in process, 2 threads),
LightGBM with ``num_threads=2``. Per run: the whole fit's wall seconds; oocgbdt's histogram
seconds (the sum over trees of ``tree_stats[i]["seconds_histogram"]``: the root and split
passes' histogram tasks, summed over partitions, so thread time, not wall; in process, where a
pass's column blocks run on the executor's threads, the passes' wall time) and its quantization
seconds (``seconds_quantize``); the fit's CPU seconds of this process, every thread
(``time.process_time``: other processes do not inflate it, so on a busy machine it is the
steadier measure); the test AUC. Medians over ``--repeats`` (default 3).

Targets (full run, synthetic_1m, printed with a verdict): oocgbdt's histogram time at least
1.6x faster quantized, the whole fit at least 1.4x, the AUC within 0.002 of float. The load
average is printed before and after: on a shared machine every time is indicative only.
``--quick``: 10,000 synthetic rows and lightgbm_binary, 5 rounds, 1 repeat (a smoke test).
An untimed warm-up fit per library and mode comes first (JIT compilation, imports).

``--seeds N`` adds, per dataset, the AUC difference of quantized against float training with
``seed`` = 0, ..., N-1 (the stochastic rounding's draws follow it in both libraries): each
seed's difference, their mean and standard deviation, for oocgbdt and LightGBM. On a small test
set (lightgbm_binary's 500 rows) one seed's difference is mostly noise; the mean over seeds is
the accuracy cost.
"""
from __future__ import annotations

import os
import argparse
import statistics
import sys
import time
import warnings

import numpy as np

COMMON = dict(objective="binary", num_leaves=31, learning_rate=0.1, max_bin=255)
MODES = {"float": {}, "quant": dict(use_quantized_grad=True)}
TARGETS = dict(histogram=1.6, fit=1.4, auc=0.002)
DATASETS = ("synthetic_1m", "a9a", "lightgbm_binary")
N_THREADS = 2


def load(name, quick):
    if name == "synthetic_1m":
        from benchmarks.sampling import synthetic
        n = 10_000 if quick else 1_000_000
        return synthetic(n_train=n, n_features=100, n_test=max(n // 5, 5000))
    from benchmarks._common import load_dataset
    d = load_dataset(name)
    return d.X_train, d.y_train, d.X_test, d.y_test


def fit_oocgbdt(params, X, y, Xt, yt, rounds):
    import oocgbdt
    from sklearn.metrics import roc_auc_score
    t0, c0 = time.perf_counter(), time.process_time()
    b = oocgbdt.train(dict(params, n_estimators=rounds, num_threads=N_THREADS), X, y,
                      verbose=False)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    stats = b.tree_stats
    return dict(fit=seconds, cpu=cpu, histogram=sum(s["seconds_histogram"] for s in stats),
                quantize=sum(s.get("seconds_quantize", 0.0) for s in stats),
                auc=roc_auc_score(yt, b.predict(Xt)))


def fit_lightgbm(params, X, y, Xt, yt, rounds):
    import lightgbm as lgb
    from sklearn.metrics import roc_auc_score
    t0, c0 = time.perf_counter(), time.process_time()
    ds = lgb.Dataset(X, y, free_raw_data=False)
    b = lgb.train(dict(params, verbose=-1, num_threads=N_THREADS), ds, num_boost_round=rounds)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return dict(fit=seconds, cpu=cpu, histogram=float("nan"), quantize=float("nan"),
                auc=roc_auc_score(yt, b.predict(Xt)))


RUNNERS = {"oocgbdt": fit_oocgbdt, "lightgbm": fit_lightgbm}


def seed_differences(name, quick, rounds, n_seeds):
    """Per library, the test AUC of quantized training with ``seed`` = 0 .. n_seeds - 1 minus
    that of float training (which no seed changes here: no sampling), printed with their mean
    and standard deviation; returns ``{library: [difference per seed]}``."""
    X, y, Xt, yt = load(name, quick)
    out = {}
    print(f"\n## {name}: quantized - float test AUC over seeds 0..{n_seeds - 1}, "
          f"{rounds} rounds\n")
    print("| library | " + " | ".join(f"seed {k}" for k in range(n_seeds)) + " | mean | sd |")
    print("|---|" + "---|" * (n_seeds + 2))
    for lib, fn in RUNNERS.items():
        base = fn(dict(COMMON), X, y, Xt, yt, rounds)["auc"]
        diffs = [fn(dict(COMMON, **MODES["quant"], seed=k), X, y, Xt, yt, rounds)["auc"] - base
                 for k in range(n_seeds)]
        out[lib] = diffs
        sd = statistics.stdev(diffs) if n_seeds > 1 else float("nan")
        print(f"| {lib} | " + " | ".join(f"{d:+.5f}" for d in diffs)
              + f" | {statistics.fmean(diffs):+.5f} | {sd:.5f} |")
    return out


def warm_up():
    """One tiny fit per library and mode, untimed: JIT compilation and imports stay out of the
    first measured fit."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 5)).astype(np.float32)
    y = (X[:, 0] > 0).astype(float)
    for fn in RUNNERS.values():
        for extra in MODES.values():
            fn(dict(COMMON, **extra), X, y, X, y, 2)


def run_dataset(name, quick, repeats, rounds):
    X, y, Xt, yt = load(name, quick)
    runs = {(lib, mode): [] for lib in RUNNERS for mode in MODES}
    for _ in range(repeats):
        for lib, fn in RUNNERS.items():
            for mode, extra in MODES.items():
                runs[(lib, mode)].append(fn(dict(COMMON, **extra), X, y, Xt, yt, rounds))
    med = {k: {m: statistics.median(r[m] for r in v) for m in v[0]} for k, v in runs.items()}
    print(f"\n## {name}: {X.shape[0]} x {X.shape[1]}, {rounds} rounds, {repeats} repeat(s)\n")
    print("| library | mode | fit s | fit cpu s | histogram s | quantize s | test AUC |")
    print("|---|---|---|---|---|---|---|")
    for (lib, mode), m in med.items():
        print(f"| {lib} | {mode} | {m['fit']:.2f} | {m['cpu']:.2f} | {m['histogram']:.2f} "
              f"| {m['quantize']:.2f} | {m['auc']:.5f} |")
    out = {}
    for lib in RUNNERS:
        f, q = med[(lib, "float")], med[(lib, "quant")]
        out[lib] = dict(fit=f["fit"] / q["fit"], cpu=f["cpu"] / q["cpu"],
                        histogram=(f["histogram"] / q["histogram"]
                                   if f["histogram"] > 0 and q["histogram"] > 0 else float("nan")),
                        auc=q["auc"] - f["auc"])
        print(f"\n{lib}: quantized fit {out[lib]['fit']:.2f}x faster (cpu {out[lib]['cpu']:.2f}x)"
              + (f", histogram {out[lib]['histogram']:.2f}x faster" if lib == "oocgbdt" else "")
              + f", AUC {out[lib]['auc']:+.5f} vs float")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--datasets", nargs="*", default=None)
    ap.add_argument("--seeds", type=int, default=0,
                    help="also the quantized - float AUC difference over seeds 0..N-1")
    args = ap.parse_args(argv)
    if args.seeds < 0:
        ap.error(f"--seeds must be >= 0, got {args.seeds}")
    warnings.simplefilter("ignore")
    repeats = args.repeats or (1 if args.quick else 3)
    rounds = args.rounds or (5 if args.quick else 100)
    names = args.datasets or (("synthetic_1m", "lightgbm_binary") if args.quick else DATASETS)
    print(f"# quantized training: cores {os.cpu_count()}, load average before "
          f"{tuple(round(x, 2) for x in os.getloadavg())}; OMP_WAIT_POLICY="
          f"{os.environ.get('OMP_WAIT_POLICY')}")
    warm_up()
    results = {n: run_dataset(n, args.quick, repeats, rounds) for n in names}
    if args.seeds:
        for n in names:
            seed_differences(n, args.quick, rounds, args.seeds)
    print(f"\nload average after {tuple(round(x, 2) for x in os.getloadavg())}")
    if args.quick or "synthetic_1m" not in results:
        return 0
    r = results["synthetic_1m"]["oocgbdt"]
    ok = (r["histogram"] >= TARGETS["histogram"], r["fit"] >= TARGETS["fit"],
          abs(r["auc"]) <= TARGETS["auc"])
    print(f"targets on synthetic_1m (oocgbdt): histogram >= {TARGETS['histogram']}x: "
          f"{'met' if ok[0] else 'MISSED'}; fit >= {TARGETS['fit']}x: "
          f"{'met' if ok[1] else 'MISSED'}; |AUC difference| <= {TARGETS['auc']}: "
          f"{'met' if ok[2] else 'MISSED'}")
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
