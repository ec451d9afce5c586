"""How many bytes of histogram one kernel call should add into: the histogram kernel's time per
cell when a pass's columns are built as consecutive sub-blocks of a given histogram size, one
after the other on one thread (what ``HIST_BLOCK_BYTES`` and ``EVERY_ROW_BLOCK_BYTES`` in
``oocgbdt/core/partition.py`` choose).

Usage::

    python -m benchmarks.histogram_blocks [--quick] [--rows N] [--features F ...]
        [--fractions X ...] [--repeats R]
    python -m benchmarks.histogram_blocks --fit [--quick] [--rows N] [--features F ...]
        [--trees T] [--repeats R]

Data: ``--rows`` (default 200,000) rows of uniform uint8 bins 0..254 (what quantile binning of
a continuous feature gives: every bin about as full), float32 gradients and hessians, 255 bins
per column (4,080 bytes of float64 pairs each). Per column count (``--features``, default 50
and 100) and share of the rows (``--fractions``, default 0.1, 0.3 and 1.0: a sorted random
subset read through a row list, or at 1.0 every row in order without one, as a root), every
row's cells are added by :func:`oocgbdt.kernels.histogram.build_histogram_block` with the
columns cut into 1, 2, 3, 4, 6 and 8 consecutive sub-blocks. Each cell gets the same additions
in the same row order whatever the cut, so only the time changes; the table gives the median
(over ``--repeats``, default 7) ns per cell of each cut, with its sub-block's histogram KiB,
and marks the fastest cut per row. One thread; the load average is printed.

``--fit`` times the choice in fits instead: ``oocgbdt.train`` in process on one thread
(``num_threads=1``; binary, 31 leaves, ``--trees`` trees, default 20) on
:func:`benchmarks.synthetic_1m.make_data` rows (``--rows``, per ``--features``), with
``HIST_BLOCK_BYTES`` (row lists) and ``EVERY_ROW_BLOCK_BYTES`` (every row) of
``oocgbdt.core.partition`` set to each pair of :data:`FIT_BOUNDS`, alternating the pairs over
``--repeats`` rounds (default 3); the table gives the median over the rounds of the mean
``seconds_histogram`` per tree (routing and histograms, the trees after the first two), and
checks that every pair trains the same model.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from benchmarks._common import machine_info, print_table

CUTS = (1, 2, 3, 4, 6, 8)
N_BINS = 255
#: ``(HIST_BLOCK_BYTES, EVERY_ROW_BLOCK_BYTES)`` pairs that ``--fit`` compares.
FIT_BOUNDS = ((2 ** 18, 2 ** 18), (2 ** 17, 2 ** 18), (2 ** 18, 2 ** 16), (2 ** 17, 2 ** 16))


def make_bins(rows: int, features: int, seed: int = 0):
    """``(X, gradients, hessians, offsets)``: uniform uint8 bins and the flat layout's offsets."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, N_BINS, size=(rows, features), dtype=np.uint8)
    g = rng.normal(size=rows).astype(np.float32)
    h = rng.random(rows).astype(np.float32)
    offsets = (1 + N_BINS * np.arange(features + 1)).astype(np.int64)
    return X, g, h, offsets


def time_cuts(X, g, h, offsets, rows, cuts=CUTS, repeats=7):
    """Median seconds of building every column of ``X`` over ``rows`` (a row list, or None for
    every row in order) as ``k`` consecutive sub-blocks, for each ``k`` of ``cuts``
    (alternating the cuts within each repeat). Returns ``({k: seconds}, {k: histogram})``."""
    from oocgbdt.kernels.histogram import build_histogram_block
    F = X.shape[1]
    times = {k: [] for k in cuts}
    hists = {}
    for rep in range(repeats + 1):  # the first round compiles and warms the caches
        for k in cuts:
            out = np.zeros((int(offsets[-1]), 2))
            t = time.perf_counter()
            for b in range(k):
                cols = np.arange(F * b // k, F * (b + 1) // k, dtype=np.int64)
                build_histogram_block(X, offsets, cols, g, h, rows, out, b == 0)
            if rep:
                times[k].append(time.perf_counter() - t)
            hists[k] = out
    return {k: float(np.median(v)) for k, v in times.items()}, hists


def run(rows, features, fractions, repeats, log=print):
    """Rows of the table: per (features, fraction), the ns per cell of each cut."""
    out = []
    rng = np.random.default_rng(1)
    for F in features:
        X, g, h, offsets = make_bins(rows, F)
        for frac in fractions:
            if frac >= 1.0:
                row_list, n = None, rows
            else:
                n = max(1, int(frac * rows))
                row_list = np.sort(rng.choice(rows, n, replace=False)).astype(np.int32)
            cuts = [k for k in CUTS if k <= F]
            secs, hists = time_cuts(X, g, h, offsets, row_list, cuts, repeats)
            ref = hists[cuts[0]]
            for k in cuts[1:]:  # the cut changes no value
                if not np.array_equal(hists[k], ref):
                    raise AssertionError(f"{F} columns in {k} sub-blocks differ from one block")
            ns = {k: 1e9 * s / (n * F) for k, s in secs.items()}
            best = min(ns, key=ns.get)
            kib = {k: 16 * N_BINS * F / k / 1024 for k in cuts}
            out.append(dict(features=F, fraction=frac, ns=ns, kib=kib, best=best))
            log(f"  {F} columns, {frac:g} of the rows: best {best} sub-blocks "
                f"({kib[best]:.0f} KiB), {ns[best]:.3f} ns per cell")
    return out


def fit_seconds(X, y, trees, bounds):
    """``(mean seconds_histogram per tree after the first two, model)`` of one in-process fit on
    one thread with the partition module's block bounds set to ``bounds`` (restored after)."""
    import oocgbdt
    from oocgbdt.core import partition
    saved = partition.HIST_BLOCK_BYTES, partition.EVERY_ROW_BLOCK_BYTES
    partition.HIST_BLOCK_BYTES, partition.EVERY_ROW_BLOCK_BYTES = bounds
    try:
        model = oocgbdt.train(dict(objective="binary", num_leaves=31, learning_rate=0.1,
                                   max_bin=255, num_iterations=trees, num_threads=1,
                                   verbose=-1), X, y)
    finally:
        partition.HIST_BLOCK_BYTES, partition.EVERY_ROW_BLOCK_BYTES = saved
    stats = model.tree_stats[2:] or model.tree_stats
    return float(np.mean([s["seconds_histogram"] for s in stats])), model


def run_fits(rows, features, trees, repeats, log=print):
    """Per feature count, the median (over ``repeats`` alternating rounds) of each pair's ms
    of passes per tree. Raises AssertionError if two pairs train different models."""
    from benchmarks.synthetic_1m import make_data
    out = []
    for F in features:
        X, y, _, _ = make_data(rows, F)
        fit_seconds(X[:5000], y[:5000], 2, FIT_BOUNDS[0])  # compile and load the kernels
        times = {b: [] for b in FIT_BOUNDS}
        ref = None
        for rep in range(repeats):
            order = FIT_BOUNDS if rep % 2 == 0 else FIT_BOUNDS[::-1]
            for bounds in order:
                sec, model = fit_seconds(X, y, trees, bounds)
                if ref is None:
                    ref = model
                elif model != ref:
                    raise AssertionError(f"block bounds {bounds} trained another model")
                times[bounds].append(sec)
                log(f"  {rows} x {F}, round {rep + 1}: row lists {bounds[0] // 1024} KiB, "
                    f"every row {bounds[1] // 1024} KiB: {1e3 * sec:.1f} ms per tree")
        out.append(dict(features=F, ms={b: 1e3 * float(np.median(v)) for b, v in times.items()}))
    return out


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 5,000 rows, 2 repeats")
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--features", type=int, nargs="+", default=[50, 100])
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.1, 0.3, 1.0])
    ap.add_argument("--repeats", type=int, default=None,
                    help="default 7 (3 with --fit)")
    ap.add_argument("--fit", action="store_true",
                    help="time the bounds in fits (one thread) instead of the kernel alone")
    ap.add_argument("--trees", type=int, default=20)
    args = ap.parse_args(argv)
    if args.repeats is None:
        args.repeats = 3 if args.fit else 7
    if args.rows < 1 or args.repeats < 1 or min(args.features) < 1 or args.trees < 3:
        ap.error(f"--rows, --repeats and --features must be >= 1 and --trees >= 3; got "
                 f"{args.rows}, {args.repeats}, {args.features}, {args.trees}")
    if not all(0.0 < f <= 1.0 for f in args.fractions):
        ap.error(f"--fractions must be in (0, 1]; got {args.fractions}")
    if args.quick:
        args.rows, args.repeats, args.trees = (20_000, 1, 3) if args.fit else (5_000, 2, args.trees)
    return args


def fit_table(results):
    """``(title, header, rows)`` of the ``--fit`` table: ms of passes per tree per bound pair."""
    header = ["columns"] + [f"row lists {a // 1024} KiB, every row {b // 1024} KiB"
                            for a, b in FIT_BOUNDS]
    rows = []
    for r in results:
        best = min(r["ms"], key=r["ms"].get)
        rows.append([r["features"]] + [f"{r['ms'][b]:.1f}" + (" *" if b == best else "")
                                       for b in FIT_BOUNDS])
    return "ms of passes per tree", header, rows


def cut_table(results):
    """``(title, header, rows)`` of the kernel table: ns per cell per cut."""
    header = ["columns", "rows"] + [f"{k} sub-blocks" for k in CUTS] + ["fastest"]
    rows = []
    for r in results:
        cells = []
        for k in CUTS:
            if k in r["ns"]:
                mark = " *" if k == r["best"] else ""
                cells.append(f"{r['ns'][k]:.3f} ({r['kib'][k]:.0f} KiB){mark}")
            else:
                cells.append("")
        rows.append([r["features"], f"{r['fraction']:g}"] + cells
                    + [f"{r['kib'][r['best']]:.0f} KiB"])
    return "ns per cell (sub-block histogram size)", header, rows


def main(argv=None) -> int:
    args = parse_args(argv)
    print(machine_info())
    if args.fit:
        title, header, rows = fit_table(run_fits(args.rows, args.features, args.trees,
                                                 args.repeats))
        title += (f", {args.rows} rows, one thread, {args.trees} trees "
                  f"(medians of {args.repeats})")
    else:
        title, header, rows = cut_table(run(args.rows, args.features, args.fractions,
                                            args.repeats))
    print()
    print(f"{title}; * fastest")
    print_table(header, rows)
    load = os.getloadavg()
    print(f"load average after {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
