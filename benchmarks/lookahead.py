"""Wall time of a fit on two workers for each ``lookahead_leaves`` (how many leaves each pass
splits ahead of their turn): the measurement behind the auto value on several workers.

Usage::

    python -m benchmarks.lookahead [--quick] [--rows N] [--features N] [--trees N]
                                   [--values 0 1 2] [--repeats 3]

Data: :func:`benchmarks.synthetic_1m.make_data` (``make_classification``, seed 0, float32), by
default 1,000,000 x 100, as Dask arrays of 125,000-row chunks on a ``LocalCluster`` of 2 worker
processes with 1 thread each (memory cache). Every fit trains a binary model with 31 leaves,
learning rate 0.1 and 255 bins; the values alternate, in reversed order every other repeat,
after one untimed warm-up fit. Per value: the median wall time of the fit, the passes and the
histograms built over all trees (``tree_stats``), and the ratio to the best median. Every value
grows the same trees (splitting ahead never changes one), which the script checks on the
predictions. ``--quick``: 20,000 x 10, 5 trees, 1 repeat (a smoke run). The load average is
printed before and after.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from benchmarks._common import machine_info, markdown_table


def run(rows, features, trees, values, repeats, out=sys.stdout):
    """Fit once per value and repeat; returns ``{value: dict(seconds=[...], passes, built)}``."""
    import dask.array as da
    from distributed import Client, LocalCluster

    import oocgbdt
    from benchmarks.synthetic_1m import make_data

    X, y, _, _ = make_data(rows, features)
    chunk = min(125_000, max(1, rows // 8))
    params = dict(objective="binary", num_leaves=31, learning_rate=0.1, max_bin=255,
                  verbose=False)
    print(f"# lookahead_leaves on 2 workers x 1 thread: {rows:,} x {features}, {trees} trees, "
          f"{repeats} repeat(s)", file=out)
    print(f"machine before: {machine_info()}", file=out, flush=True)
    results = {v: dict(seconds=[]) for v in values}
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        Xd, yd = da.from_array(X, chunks=(chunk, features)), da.from_array(y, chunks=chunk)
        oocgbdt.train(dict(params, n_estimators=2), Xd, yd, client=client)  # warm-up
        reference = None
        for rep in range(repeats):
            for v in (values if rep % 2 == 0 else values[::-1]):
                t0 = time.perf_counter()
                booster = oocgbdt.train(dict(params, n_estimators=trees, lookahead_leaves=v), Xd,
                                        yd, client=client)
                seconds = time.perf_counter() - t0
                stats = booster.tree_stats
                r = results[v]
                r["seconds"].append(seconds)
                r["passes"] = sum(s["n_passes"] for s in stats)
                r["built"] = sum(s["n_hist_built"] for s in stats)
                pred = booster.predict(X[:2000], raw_score=True)
                if reference is None:
                    reference = pred
                elif not np.array_equal(pred, reference):
                    raise AssertionError(f"lookahead_leaves={v} grew other trees")
                print(f"  repeat {rep + 1}/{repeats} lookahead_leaves={v}: {seconds:.2f} s",
                      file=out, flush=True)
    best = min(statistics.median(r["seconds"]) for r in results.values())
    table = []
    for v, r in results.items():
        med = statistics.median(r["seconds"])
        table.append([v, f"{med:.2f}", " ".join(f"{s:.2f}" for s in r["seconds"]), r["passes"],
                      r["built"], f"{med / best:.3f}x"])
    print("", file=out)
    print(markdown_table(["lookahead_leaves", "median s", "runs s", "passes", "histograms built",
                          "vs best"], table), file=out)
    print(f"machine after: {machine_info()}", file=out)
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=100)
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--values", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    if a.quick:
        a.rows, a.features, a.trees, a.repeats = 20_000, 10, 5, 1
    run(a.rows, a.features, a.trees, a.values, a.repeats)


if __name__ == "__main__":
    main()
