"""Check that LightGBM reads oocgbdt's exported models and predicts what oocgbdt predicts.

For each dataset: train oocgbdt in process, export it in LightGBM's text format
(``Booster.save_model(path, format="lightgbm")``), load it with ``lightgbm.Booster(model_file=)``
and print

* max |LightGBM raw score - oocgbdt raw score| over the test rows (float64 rows; target 0: the
  same trees, the same float64 comparisons, the same summation order);
* max |LightGBM pred_contrib - oocgbdt pred_contrib| over the first ``CONTRIB_ROWS`` test rows
  (target <= 1e-9: the same TreeSHAP recursion; the initial score sits in the first tree on one
  side and in the bias column on the other, so sums may differ in the last bits).

Datasets (``../shared/data`` or ``$OOCGBDT_DATA``): lightgbm_binary, a9a (as scipy.sparse CSR),
kddcup99 (23 classes), nycflights13 (with 5% of its feature cells set to NaN, seeded: the
loader's rows have no NaN left, see :mod:`benchmarks._common`) and california_housing.

Run: ``python -m benchmarks.interop`` (or ``python benchmarks/interop.py``).
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import load_dataset  # noqa: E402

#: Rows whose SHAP values are compared (TreeSHAP costs O(leaves x depth^2) per tree and row).
CONTRIB_ROWS = 2000
#: Rounds per dataset: enough trees to exercise every node kind, small enough to run in minutes.
ROUNDS = {"kddcup99": 10}
DEFAULT_ROUNDS = 30
NAN_SHARE = 0.05


def _prepare(name):
    d = load_dataset(name)
    X, Xt = d.X_train, d.X_test
    if name == "nycflights13":
        rng = np.random.default_rng(0)
        X, Xt = X.copy(), Xt.copy()
        X[rng.random(X.shape) < NAN_SHARE] = np.nan
        Xt[rng.random(Xt.shape) < NAN_SHARE] = np.nan
    if name == "a9a":
        import scipy.sparse as sp
        X, Xt = sp.csr_matrix(X), sp.csr_matrix(Xt.astype(np.float64))
    else:
        Xt = np.asarray(Xt, dtype=np.float64)
    params = dict(objective=d.objective, n_estimators=ROUNDS.get(name, DEFAULT_ROUNDS),
                  num_leaves=31, verbose=False)
    if d.objective == "multiclass":
        params["num_class"] = d.num_class
    return X, d.y_train, Xt, params


def _dense(a):
    return a.toarray() if hasattr(a, "toarray") else np.asarray(a)


def check(name, workdir):
    import lightgbm as lgb

    import oocgbdt
    X, y, Xt, params = _prepare(name)
    t0 = time.perf_counter()
    booster = oocgbdt.train(params, X, y)
    seconds_train = time.perf_counter() - t0
    path = booster.save_model(Path(workdir) / f"{name}.txt", format="lightgbm")
    theirs = lgb.Booster(model_file=str(path))
    raw_diff = np.abs(theirs.predict(Xt, raw_score=True) - booster.predict(Xt, raw_score=True)).max()
    rows = Xt[:CONTRIB_ROWS]
    t0 = time.perf_counter()
    ours_contrib = booster.predict(rows, pred_contrib=True)
    seconds_contrib = time.perf_counter() - t0
    their_contrib = theirs.predict(rows, pred_contrib=True)
    if isinstance(their_contrib, list):  # sparse multiclass input: one matrix per class
        their_contrib = np.hstack([_dense(c) for c in their_contrib])
    contrib_diff = np.abs(_dense(their_contrib) - ours_contrib).max()
    return dict(dataset=name, rows_test=Xt.shape[0], trees=booster.num_trees(),
                raw=float(raw_diff), contrib=float(contrib_diff),
                seconds_train=seconds_train, seconds_contrib=seconds_contrib)


def main(names=("lightgbm_binary", "a9a", "kddcup99", "nycflights13", "california_housing")):
    print(f"{'dataset':<20}{'test rows':>10}{'trees':>7}{'max|raw diff|':>16}"
          f"{'max|contrib diff|':>20}  (train s, oocgbdt pred_contrib s on {CONTRIB_ROWS} rows)")
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        for name in names:
            r = check(name, workdir)
            results.append(r)
            print(f"{r['dataset']:<20}{r['rows_test']:>10}{r['trees']:>7}{r['raw']:>16.3g}"
                  f"{r['contrib']:>20.3g}  ({r['seconds_train']:.1f}, {r['seconds_contrib']:.2f})",
                  flush=True)
    ok = all(r["raw"] == 0 and r["contrib"] <= 1e-9 for r in results)
    print("all targets met (raw diff 0, contrib diff <= 1e-9)" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(tuple(sys.argv[1:]) or ("lightgbm_binary", "a9a", "kddcup99", "nycflights13",
                                           "california_housing")))
