"""Train on a sparse LibSVM file through a sparse Zarr dataset, with Exclusive Feature Bundling.

Demonstrates the sparse path: a LibSVM file is converted (the Python form of ``oocgbdt convert
SOURCE DEST --format libsvm --layout sparse``) to a Zarr dataset that stores ``X`` as CSR per row
chunk, so that no dense copy is ever made; ``GBDTClassifier`` trains on its Dask array of
scipy.sparse chunks on a ``LocalCluster``, merging features that are never non-zero together
(one-hot levels) into bundles; the lazy ``predict_proba`` is scored on a test file. It prints the
share of non-zero cells, the bundles (``booster.bundles_`` and ``booster.bundle_report``) and
the test AUC.

Without ``--data``, a one-hot data set of ``--rows`` rows (default 50,000; 10 categorical
columns, 184 one-hot features, about 5% non-zero) is generated and written as ``train.svm`` and
``test.svm`` with ``sklearn.datasets.dump_svmlight_file``. With ``--data FILE`` that LibSVM file
is used, with ``--test FILE`` as the test set (without it, every fifth row of ``FILE`` is held
out). Binary labels (0/1 or -1/+1) are expected.

Run::

    python examples/sparse_libsvm.py                         # generated, 50,000 rows
    python examples/sparse_libsvm.py --rows 5000
    OOCGBDT_EXAMPLE_ROWS=5000 python examples/sparse_libsvm.py
    python examples/sparse_libsvm.py --data a9a --test a9a.t # LIBSVM's adult data

``--workdir DIR`` keeps the files and datasets in ``DIR`` (default: a temporary folder, removed).
"""
import argparse
import os
import tempfile
from pathlib import Path

import dask.array as da
import numpy as np
import scipy.sparse as sp
from distributed import Client, LocalCluster
from sklearn.datasets import dump_svmlight_file
from sklearn.metrics import roc_auc_score

import oocgbdt
from oocgbdt.io.convert import convert

#: Levels of the generated categorical columns (184 one-hot features in all).
CARDINALITIES = (2, 3, 5, 8, 10, 16, 20, 30, 40, 50)


def make_onehot(rows, seed=0):
    """A one-hot binary classification set: CSR ``X`` (rows x 184) and 0/1 labels ``y``.

    Each categorical column draws a level per row (skewed towards the first levels) and gets
    one 1.0 in its block of one-hot features; the label's log-odds are a sum of random effects
    of the levels of the first six columns plus logistic noise.
    """
    rng = np.random.default_rng(seed)
    cols, logit, offset = [], np.zeros(rows), 0
    for j, k in enumerate(CARDINALITIES):
        p = 1.0 / np.arange(1, k + 1)
        level = rng.choice(k, size=rows, p=p / p.sum())
        if j < 6:
            logit += rng.normal(scale=1.0, size=k)[level]
        cols.append(offset + level)
        offset += k
    indices = np.column_stack(cols).ravel()
    indptr = np.arange(0, rows * len(CARDINALITIES) + 1, len(CARDINALITIES))
    X = sp.csr_matrix((np.ones(len(indices)), indices, indptr), shape=(rows, offset))
    y = (logit + rng.logistic(size=rows) > 0).astype(np.int64)
    return X, y


def nnz_fraction(X):
    """Share of the cells of a Dask array of scipy.sparse chunks that are stored (non-zero)."""
    nnz = X.map_blocks(lambda b: np.array([[b.nnz]]), chunks=(1, 1), dtype=np.int64,
                       meta=np.empty((0, 0), dtype=np.int64)).sum()
    return int(nnz.compute()) / (X.shape[0] * X.shape[1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=None, help="a LibSVM training file (default: generated)")
    parser.add_argument("--test", default=None, help="a LibSVM test file (with --data)")
    parser.add_argument("--rows", type=int,
                        default=int(os.environ.get("OOCGBDT_EXAMPLE_ROWS", 50_000)),
                        help="generated training rows (default 50,000; env OOCGBDT_EXAMPLE_ROWS)")
    parser.add_argument("--chunk-rows", type=int, default=8_192)
    parser.add_argument("--n-estimators", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--workdir", default=None, help="folder for the files and datasets (kept)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(args.workdir or tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        if args.data is None:
            X, y = make_onehot(args.rows + args.rows // 4, seed=0)
            train_file, test_file = workdir / "train.svm", workdir / "test.svm"
            dump_svmlight_file(X[:args.rows], y[:args.rows], str(train_file), zero_based=False)
            dump_svmlight_file(X[args.rows:], y[args.rows:], str(test_file), zero_based=False)
            print(f"generated {train_file} ({args.rows} rows) and {test_file} "
                  f"({X.shape[0] - args.rows} rows), {X.shape[1]} one-hot features")
        else:
            train_file, test_file = Path(args.data), args.test and Path(args.test)

        # LibSVM -> Zarr, CSR per row chunk (`oocgbdt convert ... --layout sparse`). sparse=True
        # asks for CSR whatever the density; "auto" (the default) picks it for files with at
        # most 10% non-zero cells (a9a has 11.3%).
        train = convert(train_file, workdir / "train.zarr", fmt="libsvm", sparse=True,
                        chunk_rows=args.chunk_rows, overwrite=True)
        print(f"converted {train_file.name} -> {train}")
        X_train, y_train = train.X, train.y
        if test_file:
            # The test file may not reach the last feature: give the training set's width.
            test = convert(test_file, workdir / "test.zarr", fmt="libsvm", sparse=True,
                           n_features=train.n_features, chunk_rows=args.chunk_rows,
                           overwrite=True)
            X_test, y_test = test.X, test.y
        else:  # every fifth row is a test row
            X_test, y_test = X_train[4::5], y_train[4::5]
            X_train = da.concatenate([train.X[i::5] for i in range(4)])
            y_train = da.concatenate([train.y[i::5] for i in range(4)])
        print(f"train rows: {X_train.shape[0]}, test rows: {X_test.shape[0]}")
        print(f"nnz fraction: {nnz_fraction(train.X):.6f}")

        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=False,
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            model = oocgbdt.GBDTClassifier(n_estimators=args.n_estimators, num_leaves=31,
                                           learning_rate=0.1)
            model.fit(X_train, y_train)   # sparse chunks are binned from their non-zeros
            booster = model.booster_
            report = booster.bundle_report
            if booster.bundles_ is None:  # trained with enable_bundle=False
                print("bundles: none (feature bundling is off)")
            else:
                print(f"bundles: {len(booster.bundles_)} from {train.n_features} features")
                print(f"bundle_report: {report['summary']}")
                print(f"  binned bytes per feature: {report['bytes_binned']}, bundled: "
                      f"{report['bytes_bundled']} ({report['layout']})")
                for i, bundle in enumerate(booster.bundles_[:5]):
                    names = [train.feature_names[f] for f in bundle]
                    print(f"  bundle {i}: {len(bundle)} features "
                          f"{', '.join(names[:4])}{', ...' if len(names) > 4 else ''}")
            proba = model.predict_proba(X_test)[:, 1]   # lazy: a Dask array
            proba, labels = client.compute([proba, y_test], sync=True)
        auc = roc_auc_score(labels == model.classes_[1], proba)
        print(f"test AUC: {auc:.4f}")


if __name__ == "__main__":
    main()
