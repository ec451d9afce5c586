"""When a split pass should be shared out to the threads in process: each pass's routing and
histograms timed shared (:meth:`~oocgbdt.core.executor.KernelThreads.share`) and on the loop's
thread alone, by the pass's size, to set ``MIN_SHARED_PASS_CELLS`` in
``oocgbdt/core/histogram_source.py``; with ``--choice blocks``, each shared pass timed with its
partitions cut into column blocks for the threads and built whole, to set
``MIN_PARTITION_BLOCK_CELLS`` in ``oocgbdt/core/partition.py``.

Usage::

    python -m benchmarks.shared_passes [--quick] [--cases NAME ...] [--repeats R] [--seed S]
        [--choice share|blocks]

Cases (``--cases``; default the three dense ones): ``400k_x_50`` (400,000 rows x 50 features,
100 trees), ``400k_x_100`` (400,000 x 100, 60 trees), ``1m_x_100`` (1,000,000 x 100, 40 trees),
rows of :func:`benchmarks.synthetic_1m.make_data`; ``onehot_160k``: 160,000 rows of
:func:`benchmarks.bundling.synthetic_onehot` (1,205 sparse columns in 29 bundles, the one-hot
fit of ``benchmarks.setup``), 90 trees. ``--quick``: 20,000 x 20, 5 trees, for the smoke
test.

Each case trains ``oocgbdt.train`` in process on every core (binary, 31 leaves, 255 bins, the
rest at its defaults), ``--repeats`` times (default 1). Every split pass is shared or not by a
coin flip (seeded by ``--seed``) instead of by its size, and its routing and histogram building
(:meth:`HistogramSource._run_pass`) is timed; both ways make the same kernel calls on the same
inputs, so every fit must train the model the default rule trains (checked). A pass's size is
what the default rule reads: the cells it builds (rows of the built children, from the split
records' counts, x built columns). The table gives per band of sizes (powers of two) the passes
of each kind, their median microseconds, and shared / alone: the threshold should sit where the
ratio crosses 1. Coin flips over the same fits compare the two ways on the same passes and the
same load; the load average is printed before and after.

``--choice blocks``: every pass the default rule shares is shared, and the coin decides whether
each partition's histograms are cut into column blocks (``block_count`` without the
partitions-per-thread rule: a block per thread, none under ``MIN_BLOCK_CELLS``) or built whole
by the thread that routed it; the table's ratio is then with blocks / whole.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from benchmarks._common import machine_info, print_table
from benchmarks.synthetic_1m import make_data

CASES = {
    "400k_x_50": (400_000, 50, 100),
    "400k_x_100": (400_000, 100, 60),
    "1m_x_100": (1_000_000, 100, 40),
    "onehot_160k": (160_000, 1205, 90),
}
#: Cases run when ``--cases`` is not given.
DEFAULT_CASES = ("400k_x_50", "400k_x_100", "1m_x_100")
QUICK_CASES = {"quick_20k_x_20": (20_000, 20, 5)}
PARAMS = dict(objective="binary", num_leaves=31, learning_rate=0.1, max_bin=255, verbose=-1)


def timed_fit(X, y, trees, rng, choice="share"):
    """``(model, [(cells, first way, seconds), ...])``: one in-process fit whose split passes
    are shared or not by ``rng`` (``choice="share"``), or, ``"blocks"``, whose shared passes
    cut partitions into column blocks or not by ``rng`` (what is patched is restored after)."""
    import oocgbdt
    from oocgbdt.core import histogram_source
    from oocgbdt.core.histogram_source import HistogramSource, pass_cells
    log = []
    real = HistogramSource._run_pass
    real_count = histogram_source.block_count
    state = {"blocks": None}

    def block_count(cells, n_threads, n_partitions=1):
        if state["blocks"] is None:
            return real_count(cells, n_threads, n_partitions)
        # with blocks: the rule as for a single partition (a block per thread)
        return real_count(cells, n_threads) if state["blocks"] else 1

    def run_pass(self, task, start, finish, iterables, key, consume=None, shared=True):
        if task.__name__ != "partition_split_many" or (choice == "blocks" and not shared):
            return real(self, task, start, finish, iterables, key, consume, shared)
        first = bool(rng.random() < 0.5)
        if choice == "share":
            shared = first
        else:
            state["blocks"] = first
        cells = pass_cells(iterables[4][0], len(self.meta.hist_columns))
        t = time.perf_counter()
        try:
            out = real(self, task, start, finish, iterables, key, consume, shared)
        finally:
            state["blocks"] = None
        log.append((cells, first, time.perf_counter() - t))
        return out

    HistogramSource._run_pass = run_pass
    histogram_source.block_count = block_count
    try:
        model = oocgbdt.train(dict(PARAMS, num_iterations=trees), X, y)
    finally:
        HistogramSource._run_pass = real
        histogram_source.block_count = real_count
    return model, log


def bands(log):
    """Rows of the table: per power-of-two band of cells, ``(lo, hi, n_shared, n_alone,
    median shared s, median alone s)`` where both kinds have at least 3 passes."""
    cells = np.array([c for c, _, _ in log], dtype=float)
    shared = np.array([s for _, s, _ in log], dtype=bool)
    secs = np.array([t for _, _, t in log], dtype=float)
    out = []
    if not len(log):
        return out
    top = int(np.ceil(np.log2(max(cells.max(), 2.0)))) + 1
    for k in range(10, top):
        lo, hi = (0 if k == 10 else 2 ** k), 2 ** (k + 1)
        m = (cells >= lo) & (cells < hi)
        a, b = secs[m & shared], secs[m & ~shared]
        if len(a) >= 3 and len(b) >= 3:
            out.append((lo, hi, len(a), len(b), float(np.median(a)), float(np.median(b))))
    return out


def crossover(rows):
    """The lowest band's lower bound from which sharing is faster in every band above (None:
    in none)."""
    best = None
    for lo, _, _, _, a, b in reversed(rows):
        if a < b:
            best = lo
        else:
            break
    return best


def case_data(name, n_rows, n_features):
    """``(X, y)`` of a case: one-hot CSR rows for ``onehot_*`` (the one-hot table of
    ``benchmarks.setup``), else dense rows."""
    if name.startswith("onehot"):
        from benchmarks.bundling import synthetic_onehot
        from benchmarks.setup import ONEHOT_LAYOUT
        X, y = synthetic_onehot(n_rows, **ONEHOT_LAYOUT)
        if X.shape[1] != n_features:
            raise AssertionError(f"{name}: {X.shape[1]} columns, expected {n_features}")
        return X, y
    X, y, _, _ = make_data(n_rows, n_features)
    return X, y


def run_case(name, n_rows, n_features, trees, repeats, seed, choice="share", log=print):
    import oocgbdt
    X, y = case_data(name, n_rows, n_features)
    oocgbdt.train(dict(PARAMS, num_iterations=2), X[:5000], y[:5000])  # compile, load caches
    ref = oocgbdt.train(dict(PARAMS, num_iterations=trees), X, y)  # the default rule's model
    rng = np.random.default_rng(seed)
    passes = []
    for rep in range(repeats):
        model, got = timed_fit(X, y, trees, rng, choice)
        if model != ref:
            raise AssertionError(f"{name}: a fit with passes decided at random ({choice}) "
                                 f"trained another model than the default rule")
        passes += got
        log(f"  {name} repeat {rep + 1}/{repeats}: {len(got)} split passes timed")
    return passes


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 20,000 x 20, 5 trees")
    ap.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(DEFAULT_CASES))
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--choice", choices=("share", "blocks"), default="share",
                    help="share: shared or alone; blocks: shared passes with column blocks "
                         "or whole partitions")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error(f"--repeats must be >= 1; got {args.repeats}")
    return args


def main(argv=None) -> int:
    from oocgbdt.core.histogram_source import MIN_SHARED_PASS_CELLS
    from oocgbdt.core.partition import MIN_PARTITION_BLOCK_CELLS
    args = parse_args(argv)
    cases = QUICK_CASES if args.quick else {k: CASES[k] for k in args.cases}
    ways = ("shared", "alone") if args.choice == "share" else ("with blocks", "whole")
    print(f"# split passes {ways[0]} or {ways[1]} in process: {machine_info()}")
    print(f"load average before {os.getloadavg()}")
    print(f"MIN_SHARED_PASS_CELLS = {MIN_SHARED_PASS_CELLS:,}, "
          f"MIN_PARTITION_BLOCK_CELLS = {MIN_PARTITION_BLOCK_CELLS:,}")
    for name, (n_rows, n_features, trees) in cases.items():
        passes = run_case(name, n_rows, n_features, trees, args.repeats, args.seed, args.choice)
        rows = bands(passes)
        print(f"\n## {name}: {n_rows:,} x {n_features}, {trees} trees, "
              f"{len(passes)} split passes timed\n")
        print_table(["cells", f"passes {ways[0]}", f"passes {ways[1]}", f"{ways[0]} us",
                     f"{ways[1]} us", f"{ways[0]} / {ways[1]}"],
                    [[f"[{lo:,}, {hi:,})", a, b, f"{1e6 * sa:.0f}", f"{1e6 * sb:.0f}",
                      f"{sa / sb:.2f}"] for lo, hi, a, b, sa, sb in rows])
        c = crossover(rows)
        print(f"\n{name}: {ways[0]} is faster in every band from {c:,} cells up"
              if c is not None else f"\n{name}: no band where {ways[0]} is faster throughout")
    print(f"\nload average after {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
