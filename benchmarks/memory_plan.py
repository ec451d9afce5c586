"""Memory plan benchmark: a fit that cannot fit fails at once with the numbers, and a fit planned
near the limit trains without a worker being paused or restarted.

``python -m benchmarks.memory_plan [--quick] [--limit MIB] [--features N] [--rounds N]``

On a LocalCluster of 2 worker processes (nannies) x 1 thread with ``memory_limit`` = ``--limit``
MiB, over a synthetic Zarr store (float32, ``--features`` columns, written chunk by chunk, binary
labels), few columns so that the per-row state is the plan's largest term after the baseline:

1. ``too large``: rows chosen so that the plan (:func:`oocgbdt.dask.memory_plan.plan_memory`)
   exceeds the usable share of the limit (:func:`~oocgbdt.dask.memory_plan.usable_fraction`)
   by about 15% (``rows alone``: the baselines and per-row state are over before the bins are
   known,
   :func:`~oocgbdt.dask.memory_plan.check_rows`, before any task) and by one storage chunk
   (``whole plan``: found once the bins are fitted on their sample; on a client's cluster
   the labels are read after the plan): the time until ``train`` raises ``MemoryError``, and
   its message.
2. ``fits (memory)``/``fits (disk)``: rows chosen (a search over the plan) so that the planned
   peak is about ``--share`` (0.9) of the usable share of the limit, then trained, each case
   on fresh workers. The workers'
   and nannies' logs (``Client.get_worker_logs``) are searched for Dask's "Pausing worker" and
   for restarts, and the workers' pids are compared before and after.

The table gives per case the rows, the planned peak per worker (the fit's own plan, from
``booster.memory_report``), the limit, the measured peak per worker (RSS sampled every 5 ms on
each worker from loading to the last tree, ``oocgbdt/runtime/rss.py``, and the largest RSS of
each worker process over the whole fit sampled here every 50 ms, bin sample included), paused?,
restarted? and the wall time. Exit status 1 when the failing case does not fail within 10 s or
a fitting case pauses, restarts, fails or is planned over the usable share.

``--quick``: a 384 MiB limit, 2 rounds, the memory cache only and no ``whole plan`` case.
"""
from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
import threading
import time

import numpy as np

CHUNK_ROWS = 2 ** 17


def write_store(path, rows, features, seed=0):
    """A Zarr group ``X`` (float32, ``CHUNK_ROWS``-row chunks) and ``y`` (float64 0/1), written
    chunk by chunk (never the whole array in memory)."""
    import zarr
    root = zarr.open_group(path, mode="w")
    X = root.create_array("X", shape=(rows, features), chunks=(CHUNK_ROWS, features),
                          dtype="float32")
    y = root.create_array("y", shape=(rows,), chunks=(CHUNK_ROWS,), dtype="float64")
    w = np.linspace(1.0, 0.2, features)
    for i, a in enumerate(range(0, rows, CHUNK_ROWS)):
        b = min(rows, a + CHUNK_ROWS)
        rng = np.random.default_rng([seed, i])
        x = rng.normal(size=(b - a, features)).astype(np.float32)
        X[a:b] = x
        y[a:b] = (x @ w + rng.normal(size=b - a) > 0).astype(np.float64)


def fit_params(mode, rounds):
    return dict(objective="binary", num_leaves=31, n_estimators=rounds, cache=mode,
                verbose=False)


def planned(rows, features, params, n_workers, threads):
    """The plan of a fit on ``rows`` x ``features`` dense rows (as ``train`` makes it, with one
    byte a binned row and column and ``max_bin`` + 1 histogram bins a feature: an estimate of
    the bins the fit will find, used only to choose rows; the table shows the fit's own plan)."""
    import dask.array as da

    from oocgbdt.dask.memory_plan import plan_memory
    from oocgbdt.dask.partitions import partition_bounds, partition_groups
    from oocgbdt.dask.training import _lookahead
    from oocgbdt.params import resolve_params
    p = resolve_params(params)
    X = da.zeros((rows, features), chunks=(CHUNK_ROWS, features), dtype=np.float32)
    groups = partition_groups(X, p, features)
    bounds = partition_bounds(X.chunks[0], groups)
    return plan_memory(_lookahead(p, n_workers, p["cache"]),
                       partition_rows={"train": np.diff(bounds).astype(int).tolist()},
                       n_outputs=1, n_features=features, row_bytes=features,
                       n_hist_bins=features * (int(p["max_bin"]) + 1), mode=p["cache"],
                       n_places=n_workers, threads=threads, weighted={})


def rows_for(share, usable, features, params, n_workers, threads):
    """The most rows (a multiple of ``CHUNK_ROWS``) whose largest planned peak is at most
    ``share x usable`` bytes (bisection: the peak grows with the rows)."""
    def peak(rows):
        return max(p["peak"] for p in planned(rows, features, params, n_workers, threads))
    lo, hi = 1, 2
    while peak(hi * CHUNK_ROWS) <= share * usable:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if peak(mid * CHUNK_ROWS) <= share * usable else (lo, mid)
    return lo * CHUNK_ROWS


def rows_alone_over(share, usable, params, n_workers):
    """The fewest rows (a multiple of ``CHUNK_ROWS``) whose workers' baselines and per-row
    state (:func:`oocgbdt.dask.memory_plan.check_rows`'s bound) exceed ``share`` x the
    ``usable`` bytes of each of ``n_workers`` workers together."""
    from oocgbdt.dask.memory_plan import WORKER_BASELINE_BYTES, _train_row_state
    from oocgbdt.params import resolve_params
    per_row = _train_row_state(resolve_params(params), 1, False)
    rows = n_workers * (share * usable - WORKER_BASELINE_BYTES) / per_row
    return (math.floor(rows / CHUNK_ROWS) + 1) * CHUNK_ROWS


PAUSE = re.compile(r"Pausing worker", re.I)
RESTART = re.compile(r"restart|exceeded \d+% memory budget|killed|Worker process \d+ was "
                     r"killed|Nanny asking worker to close", re.I)


def log_lines(client):
    """Every worker's and nanny's log lines, ``[(source, level, message)]``."""
    out = []
    for nanny in (False, True):
        try:
            logs = client.get_worker_logs(nanny=nanny)
        except Exception as e:  # a lost worker's logs are gone: say so
            out.append(("nanny" if nanny else "worker", "ERROR", f"logs unavailable: {e}"))
            continue
        for address, lines in logs.items():
            out += [(("nanny " if nanny else "worker ") + address, level, msg)
                    for level, msg in lines]
    return out


def pids(client):
    return client.run(os.getpid)


def run_fit(client, params, X, y, timeout):
    """``oocgbdt.train`` on a thread, ``(booster or None, error or None, seconds)``; a fit still
    running after ``timeout`` seconds (a paused worker never finishes its tasks) is reported as
    an error (the caller closes the cluster)."""
    import oocgbdt
    box = {}

    def target():
        try:
            box["booster"] = oocgbdt.train(params, X, y, client=client)
        except BaseException as e:  # reported in the table
            box["error"] = e
    t0 = time.perf_counter()
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    seconds = time.perf_counter() - t0
    if thread.is_alive():
        return None, TimeoutError(f"fit still running after {timeout:.0f} s"), seconds
    return box.get("booster"), box.get("error"), seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory_plan",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="384 MiB workers, 2 rounds, memory cache only")
    parser.add_argument("--limit", type=int, default=None, help="memory_limit per worker, MiB "
                        "(default 512; --quick 384)")
    parser.add_argument("--features", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=None, help="default 5; --quick 2")
    parser.add_argument("--share", type=float, default=0.9,
                        help="planned peak of the fitting cases, a share of the usable limit")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds before a fitting case counts as hung")
    args = parser.parse_args(argv)
    limit_mib = args.limit or (384 if args.quick else 512)
    rounds = args.rounds or (2 if args.quick else 5)
    modes = ["memory"] if args.quick else ["memory", "disk"]
    n_workers, threads = 2, 1

    import dask.array as da
    import psutil
    from distributed import Client, LocalCluster

    from benchmarks._common import ProcessTreeMemory
    from oocgbdt.dask.memory_plan import usable_fraction

    limit = limit_mib * 2 ** 20
    usable = usable_fraction() * limit
    mib = lambda n: f"{n / 2 ** 20:.0f}"  # noqa: E731
    print(f"# Memory plan: {n_workers} worker processes x {threads} thread, memory_limit "
          f"{limit_mib} MiB (usable {usable_fraction():g} x: {mib(usable)} MiB), "
          f"{args.features} float32 features, {rounds} rounds; load average "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    fitting = {m: rows_for(args.share, usable, args.features, fit_params(m, rounds), n_workers,
                           threads) for m in modes}
    # about 15% over the usable share by the rows alone (baselines and per-row state, the
    # bound checked before any data is read): the plan, not a guess, says it cannot fit
    too_large = rows_alone_over(1.15, usable, fit_params("memory", rounds), n_workers)
    # one chunk over the usable share by the whole plan, under it by the rows alone
    just_over = rows_for(1.0, usable, args.features, fit_params("memory", rounds), n_workers,
                         threads) + CHUNK_ROWS
    store_rows = max(([] if args.quick else [just_over]) + list(fitting.values()))
    status = 0
    table = []
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "data.zarr")
        t0 = time.perf_counter()
        write_store(store, store_rows, args.features)
        print(f"store: {store_rows:,} rows written in {time.perf_counter() - t0:.1f} s",
              flush=True)
        X_all = da.from_zarr(store, component="X")
        y_all = da.from_zarr(store, component="y")
        def cluster():
            return LocalCluster(n_workers=n_workers, threads_per_worker=threads, processes=True,
                                memory_limit=f"{limit_mib}MiB", dashboard_address=":0")

        def too_large_case(label, rows, client):
            """A fit that cannot fit: the seconds until its MemoryError, its message."""
            params = fit_params("memory", rounds)
            # rows past the store's (never read: the rows alone are over) repeat it
            X = da.concatenate([X_all] * math.ceil(rows / store_rows))[:rows]
            y = da.concatenate([y_all] * math.ceil(rows / store_rows))[:rows]
            booster, error, seconds = run_fit(client, params, X, y, min(args.timeout, 60.0))
            ok = isinstance(error, MemoryError) and seconds < 10
            plan = max(p["peak"] for p in planned(rows, args.features, params, n_workers,
                                                  threads))
            table.append((f"{label} (memory)", rows, mib(plan) + " (estimate)", limit_mib,
                          "-", "-", "-", f"{seconds:.1f} s to {type(error).__name__}"))
            print(f"\n{label}: {rows:,} rows: {type(error).__name__} after {seconds:.2f} s"
                  f"{'' if ok else ' (EXPECTED a MemoryError within 10 s)'}:\n  {error}\n",
                  flush=True)
            return ok

        # 1. cannot fit by the whole plan (checked after the bin sample, before the label
        # check: fresh workers); by the rows alone, below, on the workers of the first fitting
        # case (checked before anything runs on them)
        if not args.quick:
            with cluster() as lc, Client(lc) as client:
                status |= not too_large_case("too large: whole plan", just_over, client)
        # 2. fits, each on fresh workers (the plan's baseline is a fresh worker's)
        for mode in modes:
            rows = fitting[mode]
            params = fit_params(mode, rounds)
            with cluster() as lc, Client(lc) as client:
                if mode == modes[0]:
                    status |= not too_large_case("too large: rows alone", too_large, client)
                before = pids(client)
                watcher = ProcessTreeMemory(interval=0.05).start()
                t0 = time.time()
                booster, error, seconds = run_fit(client, params, X_all[:rows], y_all[:rows],
                                                  args.timeout)
                t1 = time.time()
                watcher.stop()
                lines = log_lines(client)
                try:
                    after = pids(client)
                except Exception:
                    after = {}
            paused = [m for _, _, m in lines if PAUSE.search(m)]
            restarted = [f"{s}: {m}" for s, _, m in lines
                         if s.startswith("nanny") and RESTART.search(m)]
            changed = sorted(set(before.values()) ^ set(after.values()))
            whole = watcher.pid_peaks(t0, t1)
            if booster is not None:
                report = booster.memory_report["workers"]
                plan_peak = "/".join(mib(w["planned"]["peak"]) for w in report)
                over = any(w["planned"]["peak"] > usable for w in report)
                measured = "/".join(
                    f"{mib(w['rss_peak'])} ({mib(whole.get(before.get(w['address']), 0))})"
                    for w in report)
                for w in report:
                    print(f"{mode}: {w['address']}: planned "
                          + ", ".join(f"{k} {mib(v)}" for k, v in w["planned"].items()
                                      if k not in ("partitions", "rows"))
                          + f" MiB; measured start {mib(w['rss_start'])} peak "
                          f"{mib(w['rss_peak'])} MiB", flush=True)
            else:
                over = True
                plan_peak, measured = "-", "-"
                print(f"{mode}: fit failed: {type(error).__name__}: {str(error)[:500]}",
                      flush=True)
            status |= bool(paused or restarted or changed or over or error is not None)
            table.append((f"fits ({mode})", rows, plan_peak, limit_mib, measured,
                          "yes" if paused else "no",
                          "yes" if (restarted or changed) else "no", f"{seconds:.1f} s"))
            print(f"{mode}: worker pids before {sorted(before.values())}, after "
                  f"{sorted(after.values())}; {len(lines)} log lines searched", flush=True)
            for line in paused[:3] + restarted[:3]:
                print(f"  log: {line}", flush=True)
    print("\n| case | rows | planned peak per worker, MiB | memory_limit, MiB | measured peak "
          "per worker, MiB: loading to last tree (whole fit) | paused? | restarted? | wall |\n"
          "|---|---:|---:|---:|---:|---|---|---:|")
    for row in table:
        r = list(row)
        r[1] = f"{r[1]:,}"
        print("| " + " | ".join(str(c) for c in r) + " |")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}; pause at "
          f"{__import__('dask').config.get('distributed.worker.memory.pause')} x memory_limit, "
          f"terminate at {__import__('dask').config.get('distributed.worker.memory.terminate')}"
          f" x; total memory {psutil.virtual_memory().total / 2 ** 30:.0f} GiB", flush=True)
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
