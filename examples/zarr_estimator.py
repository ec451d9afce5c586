"""Train a scikit-learn style estimator on a Zarr dataset, on a local Dask cluster.

Demonstrates the whole path from a file on disk to a test metric, with nothing held in the
client's memory:

1. ``oocgbdt.io.convert.convert`` streams the California housing table shipped with the package
   (``oocgbdt.datasets.quickstart_path()``; 20,640 rows, 8 features, label ``target``) into a
   row-chunked Zarr dataset;
2. every fifth row is held out as the test set (the file is sorted by region, so a strided
   split gives both sets the same mix of regions), both sets as lazy Dask arrays over the store;
3. ``oocgbdt.GBDTRegressor.fit`` trains on a ``LocalCluster`` of 2 single-threaded workers
   (``--workers``), the default client's cluster;
4. ``predict`` returns a lazy Dask array; the test RMSE is computed on the cluster and compared
   with a trivial baseline that predicts the mean training label.

Run::

    python examples/zarr_estimator.py                  # all 20,640 rows
    python examples/zarr_estimator.py --rows 5000      # the first 5,000 rows only
    OOCGBDT_EXAMPLE_ROWS=5000 python examples/zarr_estimator.py

``--workdir DIR`` keeps the Zarr dataset in ``DIR`` (default: a temporary folder, removed).
"""
import argparse
import os
import tempfile
from pathlib import Path

import dask.array as da
from distributed import Client, LocalCluster

import oocgbdt
from oocgbdt.datasets import QUICKSTART_LABEL, quickstart_path
from oocgbdt.io.convert import convert


def strided_split(X, y, k=5):
    """Rows ``i % k == k - 1`` as the test set, the others as the training set (lazy)."""
    X_test, y_test = X[k - 1::k], y[k - 1::k]
    X_train = da.concatenate([X[i::k] for i in range(k - 1)])
    y_train = da.concatenate([y[i::k] for i in range(k - 1)])
    return X_train, y_train, X_test, y_test


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=int(os.environ.get("OOCGBDT_EXAMPLE_ROWS", 0)),
                        help="use the first N rows of the table (default: all; env "
                             "OOCGBDT_EXAMPLE_ROWS)")
    parser.add_argument("--n-estimators", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--workdir", default=None, help="folder for the Zarr dataset (kept)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(args.workdir or tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        # 1. CSV/TSV -> Zarr, streamed 4,000 rows at a time (each becomes one storage chunk).
        ds = convert(quickstart_path(), workdir / "houses.zarr", label=QUICKSTART_LABEL,
                     chunk_rows=4_000, overwrite=True)
        print(f"converted {quickstart_path().name} -> {ds.path}: {ds.n_rows} rows x "
              f"{ds.n_features} features in {len(ds.X.chunks[0])} chunks")
        # 2. the test set: every fifth row (lazy slices of the store).
        X, y = ds.X, ds.y
        if args.rows:
            X, y = X[:args.rows], y[:args.rows]
        X_train, y_train, X_test, y_test = strided_split(X, y)
        print(f"train rows: {X_train.shape[0]}, test rows: {X_test.shape[0]} (every 5th row)")

        # In-process workers (processes=False) start in a moment; drop it to give each worker
        # its own process, as on a real cluster.
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=False,
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            print(f"cluster: {args.workers} workers at {cluster.scheduler_address}")
            # 3. fit: the Client just made is the default one, so fit trains on its cluster.
            model = oocgbdt.GBDTRegressor(n_estimators=args.n_estimators, num_leaves=31,
                                          learning_rate=0.1)
            model.fit(X_train, y_train)
            print(f"trained {model.n_iter_} rounds")

            # 4. lazy predict: a Dask array, nothing computed yet.
            pred = model.predict(X_test)
            print(f"predict returned {type(pred).__module__}.{type(pred).__name__} with "
                  f"{pred.numblocks[0]} blocks")

            # ... and the metrics, computed on the cluster.
            rmse = da.sqrt(((pred - y_test) ** 2).mean())
            baseline = da.sqrt(((y_test - y_train.mean()) ** 2).mean())
            rmse, baseline = client.compute([rmse, baseline], sync=True)
        print(f"test RMSE: {float(rmse):.4f}")
        print(f"baseline RMSE (mean training label): {float(baseline):.4f}")
        print(f"RMSE / baseline: {float(rmse) / float(baseline):.3f}")


if __name__ == "__main__":
    main()
