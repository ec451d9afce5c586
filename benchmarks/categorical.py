"""Categorical features: oocgbdt against LightGBM on the same categorical columns.

Usage::

    python -m benchmarks.categorical [--n-estimators 100] [--quick]

Three sets, each trained by both libraries in process on the same float32 arrays, with the same
categorical columns and parameters (num_leaves=31, learning_rate=0.1, max_bin=255; LightGBM
with ``deterministic=True`` and one thread):

=================  ==========  ==========================================================
set                metric      categorical columns
=================  ==========  ==========================================================
adult              AUC         workclass, education, marital-status, occupation,
                               relationship, race, sex, native-country (integer codes)
nycflights13       RMSE        carrier, tailnum (4k levels), origin, dest (pandas codes,
                               by name); the features and split of benchmarks._common; its
                               262k training rows exceed the 200k-row bin sample, which both
                               libraries draw as LightGBM's Random::Sample
adult few levels   AUC         workclass, marital-status, relationship, race, sex, plus age
                               and hours-per-week; once with max_cat_to_onehot=4 and once
                               with 10 (every column one-vs-rest)
=================  ==========  ==========================================================

For each set the table gives both metrics on the test split, their difference, and how many
trees are LightGBM's: same split features, same category sets, numerical thresholds within 1e-9
relative, same leaf counts and leaf values within 1e-6 relative (``trees equal``; ``first
other tree`` is the first that is not), and the largest difference of the raw scores on the test
rows over LightGBM's largest |raw score|. Timings are
printed for information only. Exit code 1 if a metric is outside its tolerance (0.2% of
LightGBM's RMSE, 0.002 of AUC). ``--quick`` is a smoke run: 10 rounds, at most 10,000 rows.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from benchmarks._common import (Timer, _pmlb, data_dir, load_dataset, machine_info,
                                print_table, split_rows, subsample_rows)

COMMON = dict(num_leaves=31, learning_rate=0.1, max_bin=255)
ADULT_CATEGORICAL = ["workclass", "education", "marital-status", "occupation", "relationship",
                     "race", "sex", "native-country"]
FEW_LEVELS = ["workclass", "marital-status", "relationship", "race", "sex"]
NYC_CATEGORICAL = ["carrier", "tailnum", "origin", "dest"]


def _bitset_values(words):
    return {32 * i + b for i, w in enumerate(words) for b in range(32) if (int(w) >> b) & 1}


def _lgb_nodes(tree):
    nodes, leaves = {}, {}

    def walk(n):
        if "leaf_index" in n:
            leaves[n["leaf_index"]] = n
        else:
            nodes[n["split_index"]] = n
            walk(n["left_child"])
            walk(n["right_child"])

    walk(tree["tree_structure"])
    return nodes, leaves


def _same_tree(t, dump, init):
    """Whether oocgbdt's tree ``t`` is LightGBM's ``dump`` (see the module docstring)."""
    nodes, leaves = _lgb_nodes(dump)
    if t.n_leaves != len(leaves):
        return False
    for j in range(t.n_leaves - 1):
        a = nodes[j]
        if a["split_feature"] != t.split_feature[j]:
            return False
        if (a["decision_type"] == "==") != bool(t.decision_type[j] & 1):
            return False
        if a["decision_type"] == "==":
            k = int(t.threshold[j])
            ours = _bitset_values(t.cat_threshold[t.cat_boundaries[k]:t.cat_boundaries[k + 1]])
            if ours != {int(v) for v in str(a["threshold"]).split("||")}:
                return False
        elif not np.isclose(a["threshold"], t.threshold[j], rtol=1e-9, atol=0):
            return False
    counts = [leaves[j]["leaf_count"] for j in range(t.n_leaves)]
    values = np.array([leaves[j]["leaf_value"] for j in range(t.n_leaves)]) - init
    return (np.array_equal(counts, t.leaf_count)
            and np.allclose(values, t.leaf_value, rtol=1e-6, atol=1e-12))


def _sets(quick):
    root = data_dir()
    X, y, names = _pmlb(root / "adult" / "adult.tsv.gz")
    X, y = subsample_rows(X, y, 10_000 if quick else None)
    X, y, Xt, yt = split_rows(X, y)
    yield ("adult", "binary", "auc", X, y, Xt, yt, [names.index(c) for c in ADULT_CATEGORICAL],
           None, {})
    cols = [names.index(c) for c in FEW_LEVELS + ["age", "hours-per-week"]]
    for onehot in (4, 10):
        yield (f"adult few levels, max_cat_to_onehot={onehot}", "binary", "auc", X[:, cols], y,
               Xt[:, cols], yt, list(range(len(FEW_LEVELS))), None,
               dict(max_cat_to_onehot=onehot))
    d = load_dataset("nycflights13", root)
    X, y = subsample_rows(d.X_train, d.y_train, 10_000 if quick else None)
    nyc_cat = [d.feature_names.index(c) for c in NYC_CATEGORICAL]
    yield ("nycflights13", "regression", "rmse", X, y, d.X_test, d.y_test, nyc_cat,
           d.feature_names, {})


def _score(metric, y, p):
    if metric == "auc":
        from sklearn.metrics import roc_auc_score
        return float(roc_auc_score(y, p))
    return float(np.sqrt(np.mean((p - y) ** 2)))


def lightgbm_agreement(ours, theirs, Xt, yt, metric):
    """``(oocgbdt's metric, LightGBM's metric, max |raw score difference| relative to
    LightGBM's largest raw score, [tree i equal to LightGBM's tree i, ...])`` on the test rows
    ``Xt``, ``yt`` (``ours`` a Booster, ``theirs`` a ``lightgbm.Booster``)."""
    a, b = _score(metric, yt, ours.predict(Xt)), _score(metric, yt, theirs.predict(Xt))
    raw_theirs = theirs.predict(Xt, raw_score=True)
    raw_diff = float(np.abs(ours.predict(Xt, raw_score=True) - raw_theirs).max()
                     / np.abs(raw_theirs).max())
    dump = theirs.dump_model()["tree_info"]
    init = float(np.atleast_1d(ours.init_score)[0])
    same = [_same_tree(t, dump[i], init if i == 0 and t.n_leaves > 1 else 0.0)
            for i, t in enumerate(ours.trees)]
    return a, b, raw_diff, same


def main(argv=None) -> int:
    import lightgbm as lgb

    import oocgbdt

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-estimators", type=int, default=100)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    n_trees = 10 if args.quick else args.n_estimators
    print(machine_info())
    rows, failed = [], False
    for name, objective, metric, X, y, Xt, yt, cat, names, extra in _sets(args.quick):
        params = dict(COMMON, objective=objective, **extra)
        # oocgbdt takes nycflights13's columns by name, LightGBM by index: the same columns
        ours_cat = [names[c] for c in cat] if names is not None else cat
        with Timer() as t_ours:
            ours = oocgbdt.train(dict(params, n_estimators=n_trees, categorical_feature=ours_cat),
                                 X, y, feature_names=names, verbose=False)
        with Timer() as t_lgb:
            theirs = lgb.train(dict(params, verbose=-1, deterministic=True, num_threads=1),
                               lgb.Dataset(X, y, categorical_feature=cat), num_boost_round=n_trees)
        a, b, raw_diff, same = lightgbm_agreement(ours, theirs, Xt, yt, metric)
        n_cat_nodes = sum(int((t.decision_type & 1).sum()) for t in ours.trees)
        ok = abs(a - b) <= (0.002 * b if metric == "rmse" else 0.002)
        failed |= not ok
        first = next((i for i, s in enumerate(same) if not s), None)
        rows.append([name, len(y), metric, a, b, a - b, f"{sum(same)}/{len(same)}",
                     "-" if first is None else first, raw_diff, n_cat_nodes,
                     "PASS" if ok else "FAIL", t_ours.seconds, t_lgb.seconds])
    print_table(["set", "train rows", "metric", "oocgbdt", "LightGBM", "difference",
                 "trees equal", "first other tree", "max raw score diff (rel.)",
                 "categorical nodes", "result", "oocgbdt s", "LightGBM s"], rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
