"""Leaf-output constraints and regularizers: oocgbdt against LightGBM with the same parameters.

Usage::

    python -m benchmarks.constraints [--n-estimators 100] [--quick] [--sets NAME ...]

Two real sets, each trained by both libraries in process on the same float32 arrays with the
same parameters (num_leaves=31, learning_rate=0.1, max_bin=255; LightGBM with
``deterministic=True`` and one thread):

====================  ======  ===============================================================
set                   metric  constraints
====================  ======  ===============================================================
california_housing    RMSE    increasing in median_income
adult                 AUC     increasing in education-num, capital-gain and hours-per-week;
                              its eight integer-coded columns declared categorical
====================  ======  ===============================================================

Rows per set: ``monotone_constraints`` with the basic method, the same with
``monotone_penalty``, ``path_smooth`` and ``max_delta_step`` (a fifth of the largest absolute
root output on california_housing, where outputs are in dollars; 0.5 on adult).

Columns: both test metrics and their relative difference (``result`` PASS within 1% of
LightGBM's); ``trees equal`` (same split features, category sets, thresholds within 1e-9
relative, leaf counts, leaf values within 1e-6 relative; the comparison of
``benchmarks.categorical``) and the first tree that is not; the largest raw-score difference on
the test rows over LightGBM's largest |raw score|; and, for monotone rows, ``violations``: for
every test row and every constrained feature, the feature swept over a dense grid (every
threshold either model puts on it, the float32 values just below and above each, and 64 evenly
spaced values over the training range) with the other features fixed, the number of (row,
feature) sweeps whose predictions step against the constraint anywhere (oocgbdt / LightGBM).
Exit code 1 if a metric is outside 1% or oocgbdt has a violation. ``--quick`` is a smoke run:
10 rounds, at most 3,000 training rows and 100 test rows swept.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from benchmarks._common import (Timer, _pmlb, data_dir, load_dataset, machine_info,
                                print_table, split_rows, subsample_rows)
from benchmarks.categorical import ADULT_CATEGORICAL, lightgbm_agreement

COMMON = dict(num_leaves=31, learning_rate=0.1, max_bin=255)
ADULT_MONOTONE = ["education-num", "capital-gain", "hours-per-week"]


SETS = ("california_housing", "adult")


def _sets(quick, names=SETS):
    root = data_dir()
    if "california_housing" in names:
        yield _california(root, quick)
    if "adult" in names:
        yield _adult(root, quick)


def _california(root, quick):
    d = load_dataset("california_housing", root)
    X, y = subsample_rows(d.X_train, d.y_train, 3_000 if quick else None)
    mono = [0] * d.n_features
    mono[d.feature_names.index("median_income")] = 1
    # L2 outputs are in dollars here: a cap at a fifth of the root's output binds
    cap = 0.2 * float(np.abs(y - y.mean()).max())
    return "california_housing", "regression", "rmse", X, y, d.X_test, d.y_test, [], mono, cap


def _adult(root, quick):
    X, y, names = _pmlb(root / "adult" / "adult.tsv.gz")
    X, y = subsample_rows(X, y, 3_750 if quick else None)
    X, y, Xt, yt = split_rows(X, y)
    mono = [1 if n in ADULT_MONOTONE else 0 for n in names]
    return ("adult", "binary", "auc", X, y, Xt, yt, [names.index(c) for c in ADULT_CATEGORICAL],
            mono, 0.5)


def _grid(f, X, models):
    """The sweep values of feature ``f``: every numerical threshold on it in ``models``, the
    float32 neighbours of each, and 64 values over the training range."""
    t = [np.asarray(m.threshold[:m.n_leaves - 1])[
        (np.asarray(m.split_feature[:m.n_leaves - 1]) == f)
        & ((np.asarray(m.decision_type[:m.n_leaves - 1]) & 1) == 0)] for m in models]
    t = np.concatenate(t + [np.linspace(X[:, f].min(), X[:, f].max(), 64)]).astype(np.float32)
    return np.unique(np.concatenate([t, np.nextafter(t, np.float32(np.inf)),
                                     np.nextafter(t, np.float32(-np.inf))]))


def _violations(predict, rows, mono, grids, chunk=200_000):
    """Number of (row, constrained feature) sweeps whose predictions step against it."""
    bad = 0
    for f in np.flatnonzero(mono):
        grid = grids[f]
        per = max(1, chunk // len(grid))
        for lo in range(0, len(rows), per):
            block = rows[lo:lo + per]
            sweep = np.repeat(block, len(grid), axis=0)
            sweep[:, f] = np.tile(grid, len(block))
            pred = np.asarray(predict(sweep)).reshape(len(block), len(grid))
            bad += int((mono[f] * np.diff(pred, axis=1) < 0).any(axis=1).sum())
    return bad


def main(argv=None) -> int:
    import lightgbm as lgb

    import oocgbdt

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-estimators", type=int, default=100)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sets", nargs="+", choices=SETS, default=list(SETS))
    args = ap.parse_args(argv)
    n_trees = 10 if args.quick else args.n_estimators
    print(machine_info())
    rows, failed = [], False
    for name, objective, metric, X, y, Xt, yt, cat, mono, cap in _sets(args.quick, args.sets):
        variants = [("monotone basic", dict(monotone_constraints=mono)),
                    ("monotone basic, monotone_penalty=1",
                     dict(monotone_constraints=mono, monotone_penalty=1.0)),
                    ("path_smooth=10", dict(path_smooth=10.0)),
                    (f"max_delta_step={cap:.6g}", dict(max_delta_step=cap))]
        for label, extra in variants:
            params = dict(COMMON, objective=objective, **extra)
            with Timer() as t_ours:
                ours = oocgbdt.train(dict(params, n_estimators=n_trees, categorical_feature=cat),
                                     X, y, verbose=False)
            with Timer() as t_lgb:
                theirs = lgb.train(dict(params, verbose=-1, deterministic=True, num_threads=1),
                                   lgb.Dataset(X, y, categorical_feature=cat or "auto"),
                                   num_boost_round=n_trees)
            a, b, raw_diff, same = lightgbm_agreement(ours, theirs, Xt, yt, metric)
            first = next((i for i, s in enumerate(same) if not s), None)
            ok = abs(a - b) <= 0.01 * abs(b)
            violations = "-"
            if "monotone_constraints" in extra:
                swept = subsample_rows(Xt, yt, 100 if args.quick else None)[0]
                grids = {f: _grid(f, X, ours.trees) for f in np.flatnonzero(mono)}
                ours_bad = _violations(lambda s: ours.predict(s, raw_score=True), swept, mono,
                                       grids)
                lgb_bad = _violations(lambda s: theirs.predict(s, raw_score=True), swept, mono,
                                      grids)
                n_sweeps = len(swept) * int(np.count_nonzero(mono))
                violations = f"{ours_bad} / {lgb_bad} of {n_sweeps}"
                ok &= ours_bad == 0
            failed |= not ok
            rows.append([name, label, len(y), metric, a, b, (a - b) / abs(b),
                         f"{sum(same)}/{len(same)}", "-" if first is None else first, raw_diff,
                         violations, "PASS" if ok else "FAIL", t_ours.seconds, t_lgb.seconds])
    print_table(["set", "parameters", "train rows", "metric", "oocgbdt", "LightGBM",
                 "rel. difference", "trees equal", "first other tree",
                 "max raw score diff (rel.)", "violations (oocgbdt / LightGBM)", "result",
                 "oocgbdt s", "LightGBM s"], rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
