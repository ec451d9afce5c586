"""Train on a Zarr store larger than the memory of the Dask cluster, with the disk cache.

Demonstrates ``cache="disk"``: a generated binary classification store is written chunk by chunk
(never held in memory), then a ``LocalCluster`` of 2 worker processes is started with a
``memory_limit`` per worker set from the data size, so that the raw store is about ``--ratio``
times (default 2) the cluster's total memory limit. Training bins the store once into a disk
cache and streams each compute partition's bins back on every pass (depth-wise growth by
default: one pass per tree level); the workers hold only the per-row state (label, scores,
gradients, hessians: about 24 bytes a row) and a partition or two at a time. The script prints
the store's size against the workers' memory limits, ``booster.cache_report`` (where the bins
lived, their size on disk, the write time), the peak memory each worker process reached, and
the test AUC.

A worker process needs memory of its own (Python, NumPy, numba, Dask: about 250 MB), so the
limit is never set below ``--min-worker-memory`` (default 768 MiB). The default store, 8,000,000
rows x 100 features (3.2 GB of float32), is then about 2x the cluster's 2 x 768 MiB; at small
``--rows`` the store fits in the limit, and the script says so. The default run writes 3.2 GB to
the work folder and 0.8 GB of disk cache to the system's temporary folder (removed after
training), and takes a few minutes on 2 cores, the workers peaking near 550 MiB each.

Run::

    python examples/larger_than_memory.py                              # 3.2 GB, 2 x 768 MiB
    python examples/larger_than_memory.py --rows 200000 --n-estimators 5   # a quick look
    OOCGBDT_EXAMPLE_ROWS=200000 python examples/larger_than_memory.py

``--workdir DIR`` keeps the generated stores in ``DIR`` (default: a temporary folder, removed).
"""
import argparse
import os
import tempfile
import time
from pathlib import Path

import dask
import dask.array as da
import numpy as np
from distributed import Client, LocalCluster
from sklearn.metrics import roc_auc_score

import oocgbdt
from oocgbdt.io.dataset import open_dataset, write_dataset

MiB = 2 ** 20


def make_store(path, rows, features, chunk_rows, seed):
    """Write a generated binary classification store chunk by chunk; returns the Dataset.

    Features are standard normal; ``y = 1`` when ``x0 - x1**2 + x2 * x3 + logistic noise > 0``.
    Each chunk is generated, labelled and written on its own, so memory holds a few chunks.
    """
    X = da.random.default_rng(seed).standard_normal((rows, features), chunks=(chunk_rows, features),
                                                     dtype=np.float32)
    noise = da.random.default_rng(seed + 1).logistic(size=rows, chunks=chunk_rows)
    logit = X[:, 0] - X[:, 1] ** 2 + X[:, 2] * X[:, 3] + noise
    y = (logit > 0).astype(np.float64)
    with dask.config.set(scheduler="threads"):
        write_dataset(path, X, y, chunk_rows=chunk_rows, overwrite=True)
    return open_dataset(path)


def peak_memory(dask_worker, since):
    """Largest process memory (RSS) the worker's system monitor sampled since ``since``
    (a ``time.time()``); the monitor samples about twice a second."""
    q = dask_worker.monitor.quantities
    return float(max((m for t, m in zip(q["time"], q["memory"]) if t >= since), default=0.0))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int,
                        default=int(os.environ.get("OOCGBDT_EXAMPLE_ROWS", 8_000_000)),
                        help="training rows (default 8,000,000; env OOCGBDT_EXAMPLE_ROWS)")
    parser.add_argument("--features", type=int, default=100)
    parser.add_argument("--chunk-rows", type=int, default=None,
                        help="rows per storage chunk (default: rows / 16, at most 250,000)")
    parser.add_argument("--test-rows", type=int, default=None,
                        help="rows of the test store (default: rows / 10, at most 200,000)")
    parser.add_argument("--n-estimators", type=int, default=20)
    parser.add_argument("--grow-policy", choices=["depthwise", "leafwise"], default="depthwise",
                        help="depthwise (default): one pass over the store per tree level; "
                             "leafwise: LightGBM's best-first growth, more passes per tree")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ratio", type=float, default=2.0,
                        help="raw store size / the cluster's total memory limit (default 2)")
    parser.add_argument("--min-worker-memory", type=int, default=768,
                        help="lowest memory limit per worker, MiB (default 768)")
    parser.add_argument("--workdir", default=None, help="folder for the stores (kept)")
    args = parser.parse_args(argv)
    chunk_rows = args.chunk_rows or max(1, min(250_000, -(-args.rows // 16)))
    test_rows = args.test_rows or max(1, min(200_000, args.rows // 10))

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(args.workdir or tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        train = make_store(workdir / "train.zarr", args.rows, args.features, chunk_rows, seed=0)
        test = make_store(workdir / "test.zarr", test_rows, args.features, chunk_rows, seed=100)
        raw_bytes = train.n_rows * train.n_features * train.X.dtype.itemsize
        print(f"training store: {train.n_rows} rows x {train.n_features} features, "
              f"{raw_bytes / MiB:.1f} MiB raw float32, {len(train.X.chunks[0])} chunks of "
              f"{train.chunk_rows} rows ({time.perf_counter() - t0:.1f} s to write)")

        worker_memory = max(int(raw_bytes / args.ratio / args.workers),
                            args.min_worker_memory * MiB)
        # Worker processes (the default) so that each memory limit applies to one process.
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, memory_limit=worker_memory,
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            limits = [w["memory_limit"] for w in client.scheduler_info()["workers"].values()]
            total = sum(limits)
            print(f"workers' memory limit: {len(limits)} x {limits[0] / MiB:.1f} MiB = "
                  f"{total / MiB:.1f} MiB in all")
            print(f"data size / total memory limit: {raw_bytes / total:.2f}"
                  + ("" if raw_bytes > total else
                     "  (the store fits at this size: raise --rows to exceed the memory)"))
            since = time.time()
            t0 = time.perf_counter()
            booster = oocgbdt.train({"objective": "binary", "n_estimators": args.n_estimators,
                                     "num_leaves": 31, "learning_rate": 0.1, "cache": "disk",
                                     "grow_policy": args.grow_policy},
                                    train.X, train.y)
            seconds = time.perf_counter() - t0
            peaks = client.run(peak_memory, since=since)
            score = client.compute(booster.predict(test.X)).result()
            y_test = test.y.compute()
        report = booster.cache_report
        print(f"trained {booster.num_iterations()} rounds in {seconds:.1f} s")
        print("cache_report:")
        for key, value in report.items():
            print(f"  {key}: {value}")
        for address, peak in sorted(peaks.items()):
            print(f"peak memory of worker {address}: {peak / MiB:.1f} MiB "
                  f"(limit {worker_memory / MiB:.1f} MiB)")
        print(f"test rows: {len(y_test)}")
        print(f"test AUC: {roc_auc_score(y_test, score):.4f}")


if __name__ == "__main__":
    main()
