"""Search GBDTClassifier's hyper-parameters with dask-ml's GridSearchCV on a Dask cluster.

Demonstrates that ``oocgbdt.GBDTClassifier`` is a scikit-learn estimator that dask-ml's searches
take as it is: ``dask_ml.model_selection.GridSearchCV`` builds one task graph for every
(candidate, fold) pair, shares the fold splits between candidates, runs the fits as tasks spread
over a ``LocalCluster``'s workers, and refits the best candidate on all the training rows.
The data are generated (``--rows`` rows, 8 features, a binary label), held as Dask arrays; the
search scores each candidate by 3-fold stratified cross-validated ROC AUC, and the refitted best
model's lazy ``predict_proba`` is scored on held-out rows. It prints every candidate's mean
cross-validated AUC, the best parameters and the test AUC.

In a dask-ml search every fit is one task, so each fold's rows are gathered into one worker's
memory and that fit trains in-process there (NumPy input, no client). That suits a search over
data that fits a worker; to tune on data larger than a worker's memory, call ``fit`` per
candidate on the Dask arrays instead, so that each fit spans the cluster. A fit inside a task
never sends work to the cluster it runs on (it would wait for the worker it occupies): without a
``client=`` it trains in the task's process, on worker processes or threads alike.

Needs ``dask-ml`` (``pip install ".[examples]"``).

Run::

    python examples/dask_ml_search.py                 # 20,000 rows
    python examples/dask_ml_search.py --rows 3000
    OOCGBDT_EXAMPLE_ROWS=3000 python examples/dask_ml_search.py
"""
import argparse
import os

import dask.array as da
import numpy as np
from dask_ml.model_selection import GridSearchCV
from distributed import Client, LocalCluster
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

import oocgbdt

#: The grid searched: 4 candidates.
PARAM_GRID = {"num_leaves": [7, 31], "learning_rate": [0.05, 0.2]}


def make_data(rows, seed=0):
    """``rows`` x 8 standard normal float32 features and 0/1 labels with log-odds
    ``x0 - x1**2 + x2 * x3`` plus logistic noise; the last fifth of the rows is the test set.

    Returns
    -------
    X_train, y_train, X_test, y_test : numpy.ndarray
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, 8)).astype(np.float32)
    y = (X[:, 0] - X[:, 1] ** 2 + X[:, 2] * X[:, 3] + rng.logistic(size=rows) > 0).astype(np.int64)
    n_train = rows - rows // 5
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int,
                        default=int(os.environ.get("OOCGBDT_EXAMPLE_ROWS", 20_000)),
                        help="rows, a fifth of them held out (default 20,000; env "
                             "OOCGBDT_EXAMPLE_ROWS)")
    parser.add_argument("--n-estimators", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)

    X_train, y_train, X_test, y_test = make_data(args.rows)
    chunks = max(1, -(-len(y_train) // 4))
    X_train, y_train = da.from_array(X_train, chunks=(chunks, 8)), da.from_array(y_train, chunks)
    X_test = da.from_array(X_test, chunks=(chunks, 8))
    print(f"train rows: {X_train.shape[0]}, test rows: {X_test.shape[0]}, features: 8")

    with LocalCluster(n_workers=args.workers, threads_per_worker=1,
                      dashboard_address=":0") as cluster, Client(cluster):
        search = GridSearchCV(oocgbdt.GBDTClassifier(n_estimators=args.n_estimators),
                              PARAM_GRID, scoring="roc_auc", cv=StratifiedKFold(n_splits=3))
        search.fit(X_train, y_train)
        results = search.cv_results_
        for params, score in zip(results["params"], results["mean_test_score"]):
            print(f"candidate {params}: mean CV AUC {score:.4f}")
        print(f"best parameters: {search.best_params_}")
        print(f"best mean CV AUC: {search.best_score_:.4f}")
        proba = search.predict_proba(X_test)   # lazy: a Dask array
        print(f"predict_proba returned {type(proba).__module__}.{type(proba).__name__}")
        auc = roc_auc_score(y_test, proba[:, 1].compute())
    print(f"test AUC of the refitted best model: {auc:.4f}")


if __name__ == "__main__":
    main()
