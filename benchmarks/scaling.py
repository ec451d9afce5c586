"""Cost model of one tree, fitted to measurements at 1, 2 and 4 workers (``docs/scaling.md``).

Usage::

    python -m benchmarks.scaling [--quick] [--rows N] [--features F] [--trees T]
                                 [--workers 1 2 4] [--json PATH]

What it measures: a synthetic dense binary task (the generator of
:mod:`benchmarks.synthetic_1m`) is written once to a Zarr store (16 row chunks); for every worker
count W, a ``LocalCluster(n_workers=W, threads_per_worker=1, processes=True)`` trains T trees
(num_leaves=31, learning_rate=0.1, max_bin=255) from that store, twice (N and N/2 rows, the first
rows of the store), and per tree we record: wall seconds, passes, tasks, rows histogrammed (the
root's rows plus the smaller child of every split that was histogrammed, from the tree's node
counts), and the compute seconds of histogram building, the reduction (sums and subtractions of
histograms) and the split search (from the executor's timers: the loop's own in-process executor
on one worker, the actor shards' on several; ``booster.tree_stats``).

The model: per tree

    T = P * o(W) + H_cells / (r_h * min(W, cores)) + P * k * p * B / (r_r * min(W, cores))

with P passes per tree, k histograms built per pass (P x k is the tree's ``n_hist_built``),
p partitions (tasks per pass), B bytes of one partial histogram,
H_cells = rows histogrammed x columns, and fitted constants: r_h (cells per second per
thread), r_r (histogram bytes summed per second per thread) and o(W) (everything else per
pass: the split search and the latency between shards; fitted for each worker count, since
one worker runs the loop locally and more workers than cores here share them).
The printed table compares the model's time per tree with the measured one for every run.
Then the model is evaluated, with the assumptions printed beside it, for 1e9 rows x 1,000
features on 100 workers, and the terms are ranked: the largest is where it breaks first.

On this 2-core machine, 4 single-threaded workers share 2 cores: ``min(W, cores)`` is the
parallelism the model assumes, and the 4-worker run measures the cost of more processes (more
transfers, more round trips) rather than more compute.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time

import numpy as np

from benchmarks._common import machine_info, print_table
from benchmarks.synthetic_1m import make_data, tree_time_split

HIST_ENTRY_BYTES = 16  # one (gradient, hessian) float64 pair per bin, plus one count row


def histogram_bytes(n_bins: int) -> int:
    """Bytes of one histogram of ``n_bins`` bins (``oocgbdt.kernels.histogram``: a count row
    before the bins)."""
    return (n_bins + 1) * HIST_ENTRY_BYTES


def rows_histogrammed(tree, n_passes):
    """Rows histogrammed for one tree: the root's rows plus the smaller child's rows of every
    split whose children were searched: every split but the last when the tree has all its
    leaves, every split when it stopped early (one pass per split without lookahead; with
    ``lookahead_leaves`` a pass splits several leaves, so the passes do not count the splits,
    and leaves split ahead that the tree never applied are not counted)."""
    counts_internal = np.asarray(tree.internal_count, dtype=float)
    leaf_counts = np.asarray(tree.leaf_count, dtype=float)
    if counts_internal.size == 0:
        return float(leaf_counts.sum())

    def count(child):
        return leaf_counts[~child] if child < 0 else counts_internal[child]

    total = counts_internal[0]
    n_searched = min(counts_internal.size, max(n_passes - 1, counts_internal.size - 1))
    for node in range(n_searched):
        total += min(count(tree.left_child[node]), count(tree.right_child[node]))
    return float(total)


def write_store(path, rows, features, seed=0):
    import zarr
    X, y, Xt, yt = make_data(rows, features, seed=seed)
    chunk = math.ceil(rows / 16)
    root = zarr.open_group(path, mode="w")
    root.create_array("X", data=X, chunks=(chunk, features))
    root.create_array("y", data=y, chunks=(chunk,))
    return Xt, yt


def run_one(path, n_rows, n_workers, n_trees, params):
    import dask.array as da
    from distributed import Client, LocalCluster, get_task_stream

    import oocgbdt

    X = da.from_zarr(path, component="X")[:n_rows]
    y = da.from_zarr(path, component="y")[:n_rows]
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      memory_limit="4GB", dashboard_address=":0") as cluster, Client(cluster) as client:
        p = dict(params, n_estimators=n_trees)
        t0 = time.perf_counter()
        with get_task_stream(client) as ts:
            booster = oocgbdt.train(p, X, y, client=client)
        wall = time.perf_counter() - t0
        records = ts.data
    split, source = tree_time_split(records, booster.tree_stats, n_workers)
    trees = booster.trees
    out = []
    for tree, st, sp in zip(trees, booster.tree_stats, split):
        out.append(dict(wall=sp["wall"], passes=st["n_passes"], hist=sp["hist"], find=sp["find"],
                        reduce=sp["reduce"], rows_hist=rows_histogrammed(tree, st["n_passes"]),
                        built=st["n_hist_built"]))
    n_parts = booster.cache_report["n_partitions"]["train"]  # one task per partition per pass
    return dict(n_rows=n_rows, n_workers=n_workers, wall_total=wall, trees=out, source=source,
                n_partitions=int(n_parts))


def fit_model(runs, features, n_bins, cores):
    """Least-squares fit of (1/r_h, 1/r_r, o(W) for each W measured) to per-tree wall times
    (non-negative). o(W) is everything per pass besides histogram building and reduction: the
    split search and the latency (a separate search constant would be the sum of the o(W)
    columns, so the two cannot be told apart). ``overhead_many_workers`` is o(W) of the largest
    W > 1 that has a core per worker (on this machine W = 2): the extrapolation's per-pass
    term. Larger W here share the cores, so their o(W) measures oversubscription as much as
    the exchange."""
    from scipy.optimize import nnls
    B = histogram_bytes(n_bins)
    ws = sorted({run["n_workers"] for run in runs})
    rows, target = [], []
    for run in runs:
        par = min(run["n_workers"], cores)
        for t in run["trees"][1:]:  # the first tree pays compilation and warm-up
            P = t["passes"]
            # P x k: the histograms the tree built from rows (one partial per partition each).
            rows.append([t["rows_hist"] * features / par, t["built"] * run["n_partitions"] * B / par]
                        + [P if run["n_workers"] == w else 0.0 for w in ws])
            target.append(t["wall"])
    A, b = np.asarray(rows), np.asarray(target)
    coef, _ = nnls(A, b)
    overhead = {w: float(coef[2 + i]) for i, w in enumerate(ws)}
    many = [w for w in ws if 1 < w <= cores] or [w for w in ws if w > 1]
    w_many = max(many) if many else None
    return dict(sec_per_cell=coef[0], sec_per_hist_byte=coef[1], overhead=overhead,
                overhead_many_workers=overhead.get(w_many, 0.0), overhead_many_from=w_many,
                hist_bytes=B), A, b, coef


def model_tree_seconds(m, *, rows_hist_cells, passes, partitions, workers, cores_per_worker,
                       built_per_pass=1):
    par = workers * cores_per_worker
    terms = {
        "histogram building": rows_hist_cells * m["sec_per_cell"] / par,
        "histogram reduction": (passes * partitions * built_per_pass * m["hist_bytes"]
                                * m["sec_per_hist_byte"] / par),
        "per-pass latency": passes * (m["overhead"].get(1, 0.0) if workers == 1
                                      else m["overhead_many_workers"]),
    }
    return terms


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 40,000 rows, 3 trees")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=100)
    ap.add_argument("--trees", type=int, default=10)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--json", default=None, help="write the measurements and the fit here")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.quick:
        args.rows, args.features, args.trees, args.workers = 40_000, 20, 3, [1, 2]
    cores = os.cpu_count() or 1
    print(f"# scaling: {args.rows:,} rows x {args.features} features, {args.trees} trees, "
          f"workers {args.workers}; {machine_info()}", flush=True)
    params = dict(objective="binary", num_leaves=31, learning_rate=0.1, max_bin=255,
                  verbose=False, cache="memory")
    tmp = tempfile.mkdtemp(prefix="oocgbdt-scaling-")
    try:
        path = os.path.join(tmp, "data.zarr")
        write_store(path, args.rows, args.features)
        runs = []
        for w in args.workers:
            for n in (args.rows // 2, args.rows):
                run = run_one(path, n, w, args.trees, params)
                runs.append(run)
                per = np.mean([t["wall"] for t in run["trees"][1:]]) if len(run["trees"]) > 1 else float("nan")
                passes = np.mean([t["passes"] for t in run["trees"]])
                print(f"  W={w} rows={n:,}: {per * 1000:.1f} ms/tree after the first, {passes:.1f} "
                      f"passes/tree, {run['n_partitions']} partitions, total {run['wall_total']:.1f} s "
                      f"(load {os.getloadavg()[0]:.2f})", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    n_bins = args.features * 256
    m, A, b, coef = fit_model(runs, args.features, n_bins, cores)
    pred = A @ coef
    print("\n## Fitted constants")
    print(f"- histogram building: {1 / m['sec_per_cell'] / 1e6:.1f} M cells (row x column) per "
          f"second per thread" if m["sec_per_cell"] > 0 else "- histogram building: not resolved")
    print(f"- histogram reduction: {1 / m['sec_per_hist_byte'] / 1e9:.2f} GB summed per second per "
          f"thread" if m["sec_per_hist_byte"] > 0 else "- histogram reduction: below resolution (0)")
    print("- per pass besides histograms (split search and latency): " + ", ".join(
        f"{o * 1000:.2f} ms with {w} worker(s)" for w, o in m["overhead"].items())
        + f" (the loop runs on the one worker, or on every shard; the extrapolation uses "
          f"W={m['overhead_many_from']}, the most workers with a core each here)")

    rows_out, i = [], 0
    for run in runs:
        k = len(run["trees"]) - 1
        if k <= 0:
            continue
        meas, mod = b[i:i + k].mean(), pred[i:i + k].mean()
        rows_out.append([run["n_workers"], f"{run['n_rows']:,}", f"{meas * 1000:.1f}",
                         f"{mod * 1000:.1f}", f"{(mod - meas) / meas * 100:+.0f}%"])
        i += k
    print("\n## Model vs measurement (mean seconds per tree after the first)")
    print_table(["workers", "rows", "measured ms/tree", "model ms/tree", "error"], rows_out)

    # Extrapolation: 1e9 rows x 1,000 features, 100 workers.
    from oocgbdt.dask.partitions import default_partition_rows
    N, F, W, c = 1e9, 1000, 100, 8
    mean_frac = np.mean([t["rows_hist"] / r["n_rows"] for r in runs for t in r["trees"][1:]])
    many = [t["passes"] for r in runs if r["n_workers"] > 1 for t in r["trees"]]
    passes_lookahead = round(float(np.mean(many)), 1) if many else 30
    part_rows = default_partition_rows(int(N), F, 4 * F)
    parts = math.ceil(N / part_rows)
    B = histogram_bytes(F * 256)
    big = dict(m, hist_bytes=B)
    disk_bw, net_bw = 1.0e9, 1.25e9  # bytes/s per worker: a local NVMe read, 10 Gb/s Ethernet
    print(f"\n## Extrapolation: {N:.0e} rows x {F} features on {W} workers x {c} threads")
    print(f"assumptions: rows histogrammed per tree = {mean_frac:.2f} x N (measured here, "
          f"leaf-wise 31 leaves); default partitions of {part_rows:,} rows ({parts:,} partitions, "
          f"{parts / W:.0f} per worker); histogram {B / 2**20:.1f} MiB; disk {disk_bw / 1e9:.1f} GB/s "
          f"and network {net_bw / 1e9:.2f} GB/s per worker; fitted constants above")
    rows_out = []
    cross_levels = max(1, math.ceil(math.log(W, 8)))
    for label, passes, k in (("leaf-wise, lookahead_leaves=2 (default)", passes_lookahead,
                              30 / passes_lookahead),
                             ("leaf-wise, lookahead_leaves=0", 30, 1),
                             ("max_leaves_per_pass=8", 5, 6), ("depthwise", 6, 5)):
        # k: mean children histogrammed per pass (30 splits over the passes).
        terms = model_tree_seconds(big, rows_hist_cells=mean_frac * N * F, passes=passes,
                                   partitions=parts, workers=W, cores_per_worker=c,
                                   built_per_pass=k)
        # Per pass: partial histograms made (one per partition and built child); bytes moved
        # between workers by the fan-in: partitions are placed in contiguous blocks, so the
        # first levels are worker-local and each worker sends about one stacked partial per
        # level that crosses workers (log8 W of them); bytes read from a disk cache (every
        # partition, whole); exchanges between shards (on 3+ shards each pass sends the
        # partials' feature slices, then the split records: two per pass, plus gradients and
        # applying the tree).
        hist_made = parts * k * B
        moved = W * cross_levels * k * B
        disk_read = N * F
        terms["disk"] = passes * disk_read / W / disk_bw
        terms["fan-in transfers"] = passes * moved / W / net_bw
        total_mem = sum(v for n_, v in terms.items() if n_ != "disk")
        rows_out.append([label, f"{passes:g}", f"{hist_made / 2**30:.1f} GiB", f"{moved / 2**30:.1f} GiB",
                         f"{disk_read / 1e12:.1f} TB", f"{2 * passes + 3:g}",
                         f"{terms['histogram building']:.1f}", f"{terms['histogram reduction']:.1f}",
                         f"{terms['per-pass latency']:.2f}", f"{terms['fan-in transfers']:.2f}",
                         f"{terms['disk']:.1f}",
                         f"{total_mem:.1f}"])
    print_table(["growth", "passes", "histograms made/pass", "moved between workers/pass",
                 "read/pass (disk cache)", "exchanges/tree", "hist build s", "reduce s",
                 "latency s", "transfer s", "disk s", "tree s (memory cache)"], rows_out)
    terms = model_tree_seconds(big, rows_hist_cells=mean_frac * N * F, passes=30,
                               partitions=parts, workers=W, cores_per_worker=c)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(args=vars(args), runs=runs, fit=m, extrapolation=terms), fh, indent=1,
                      default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
