"""Quantized training benchmark: float vs quantized gradients (``use_quantized_grad``), oocgbdt
next to LightGBM's own quantized mode.

Usage::

    python -m benchmarks.quantized [--quick] [--repeats N] [--datasets NAME ...] [--rounds N]
                                   [--seeds N]
    python -m benchmarks.quantized --kernels [--quick] [--repeats N] [--rows N]

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

``--kernels`` times the histogram kernels alone, one thread, in ns per cell (a cell: one row's
bin of one column; medians of ``--repeats``, default 7): on ``--rows`` (default 400,000) rows
of uniform uint8 bins 0..254 (:func:`benchmarks.histogram_blocks.make_bins`), 50 and 100
columns, a tenth, three tenths (sorted row lists) and every row (no list, as a root): the
float kernel (:func:`oocgbdt.kernels.histogram.build_histogram_block`), the integer one on
the packed pairs of 4-level stochastic rounding
(:func:`oocgbdt.kernels.quantize.build_histogram_int`), and a floor (:func:`count_floor`):
the same bins read the same way with a 32-bit count added per cell, no gradient read, no
widening. A kernel that reads row-major bins this way into LightGBM's narrowest integer
cells (16-bit gradient and 16-bit hessian sums in one 32-bit cell) makes at least that
read-modify-write of a 32-bit cell per cell, so float / floor bounds the histogram speed-up
such a kernel can reach on this machine; the table prints it beside the integer kernel's.
"""
from __future__ import annotations

import os
import argparse
import statistics
import sys
import time
import warnings

import numpy as np

from oocgbdt.kernels._jit import PREFETCH_ROWS, load_word, njit, prefetch, whole_words, word_bin

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

#: ``--kernels`` cases: columns, and the share of the rows each histogram adds.
KERNEL_FEATURES = (50, 100)
KERNEL_FRACTIONS = (0.1, 0.3, 1.0)


@njit
def count_floor(X, offsets, rows, cells):
    """Add 1 to ``cells[offsets[j] + X[r, j]]`` for every row ``r`` of ``rows`` (None: every
    row of ``X`` in order) and column ``j``: a histogram of counts, in the integer kernel's
    loop (a row's bins read a word at a time, listed rows prefetched) with the least work per
    cell, nothing read per row but its bins.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_columns), dtype uint8, C-contiguous
    offsets : ndarray of shape (n_columns,), dtype int64
    rows : ndarray of shape (n_selected,), dtype int32, or None
    cells : ndarray of shape (n_cells,), dtype int32 (added to)
    """
    n_cols = X.shape[1]
    per_word = 8
    n_words = whole_words(X, n_cols, True)
    n = X.shape[0] if rows is None else rows.shape[0]
    for i in range(n):
        if rows is None:
            r = np.uint64(i)
        else:
            if i + PREFETCH_ROWS < n:  # the row's first and last bins, as the kernels do
                ahead = rows[i + PREFETCH_ROWS]
                prefetch(X, (ahead, 0))
                prefetch(X, (ahead, n_cols - 1))
            r = np.uint64(rows[i])
        for w in range(n_words):
            word = load_word(X, (r, w * per_word))
            for k in range(per_word):
                cells[np.uint64(offsets[w * per_word + k] + word_bin(word, k, 8))] += 1
        for j in range(n_words * per_word, n_cols):
            cells[np.uint64(offsets[j] + X[r, j])] += 1


def kernel_cases(rows, repeats, features=KERNEL_FEATURES, fractions=KERNEL_FRACTIONS):
    """``--kernels``: per (columns, share of rows), the ns per cell of the float kernel, the
    integer kernel and the floor (see the module docstring), one thread; returns a list of
    dicts."""
    from benchmarks._common import alternating_rounds
    from benchmarks.histogram_blocks import make_bins
    from oocgbdt.kernels.histogram import build_histogram_block
    from oocgbdt.kernels.quantize import (QUANT_DTYPE, build_histogram_int, discretize,
                                          gradient_max_abs, quant_scales)
    out = []
    for n_cols in features:
        X, g, h, offsets = make_bins(rows, n_cols)
        rng = np.random.default_rng(1)
        max_g, max_h = gradient_max_abs(g, h)
        _, _, inv_g, inv_h = quant_scales(max_g, max_h, 4, False)
        packed = np.empty(rows, dtype=QUANT_DTYPE)
        discretize(g, h, inv_g, inv_h, False, rng.random(rows), rng.random(rows), packed)
        cols = np.arange(n_cols, dtype=np.int64)
        for share in fractions:
            listed = None if share >= 1.0 else np.sort(
                rng.choice(rows, max(1, int(share * rows)), replace=False)).astype(np.int32)
            cells = (rows if listed is None else listed.shape[0]) * n_cols
            hist = np.zeros((int(offsets[-1]), 2))
            ints = np.zeros((int(offsets[-1]), 1), dtype=QUANT_DTYPE)
            counts = np.zeros(int(offsets[-1]), dtype=np.int32)
            runs = {
                "float": lambda: build_histogram_block(X, offsets, cols, g, h, listed, hist,
                                                       True),
                "integer": lambda: build_histogram_int(X, offsets, cols, packed, listed, ints,
                                                       True),
                "floor": lambda: count_floor(X, offsets[:-1], listed, counts),
            }
            times = {name: [] for name in runs}
            for fn in runs.values():
                fn()  # compiled and warm
            for _, name in alternating_rounds(list(runs), repeats):
                t0 = time.perf_counter()
                runs[name]()
                times[name].append(time.perf_counter() - t0)
            out.append(dict(columns=n_cols, share=share,
                            **{name: statistics.median(t) / cells * 1e9
                               for name, t in times.items()}))
    return out


def print_kernel_cases(cases, log=print):
    log("| columns | rows | float ns/cell | integer ns/cell | floor ns/cell "
        "| float / integer | float / floor |")
    log("|---|---|---|---|---|---|---|")
    for c in cases:
        rows = "every row" if c["share"] >= 1.0 else f"{c['share']:.0%} listed"
        log(f"| {c['columns']} | {rows} | {c['float']:.3f} | {c['integer']:.3f} "
            f"| {c['floor']:.3f} | {c['float'] / c['integer']:.2f}x "
            f"| {c['float'] / c['floor']:.2f}x |")
    best = max(c["float"] / c["floor"] for c in cases)
    log("\nthe most a kernel adding 32-bit cells this way could gain on histograms here: "
        f"{best:.2f}x (target {TARGETS['histogram']}x)")


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
    ap.add_argument("--kernels", action="store_true",
                    help="time the float and integer histogram kernels and their floor instead")
    ap.add_argument("--rows", type=int, default=None, help="--kernels: rows (400,000)")
    args = ap.parse_args(argv)
    if args.seeds < 0:
        ap.error(f"--seeds must be >= 0, got {args.seeds}")
    if args.rows is not None and (not args.kernels or args.rows < 1):
        ap.error(f"--rows takes a positive count, with --kernels only; got {args.rows}")
    if args.kernels:
        fit_only = [f"--{name}" for name in ("datasets", "rounds", "seeds")
                    if getattr(args, name) not in (None, 0)]
        if fit_only:
            ap.error(f"--kernels times no fit: {', '.join(fit_only)} would be ignored")
    warnings.simplefilter("ignore")
    if args.kernels:
        rows = args.rows or (5_000 if args.quick else 400_000)
        repeats = args.repeats or (2 if args.quick else 7)
        print(f"# histogram kernels, one thread: {rows} rows, medians of {repeats}; cores "
              f"{os.cpu_count()}, load average before "
              f"{tuple(round(x, 2) for x in os.getloadavg())}\n")
        print_kernel_cases(kernel_cases(rows, repeats))
        print(f"\nload average after {tuple(round(x, 2) for x in os.getloadavg())}")
        return 0
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
