"""Per-node rules against LightGBM: interaction_constraints, extra_trees, feature_fraction_bynode.

Usage::

    python -m benchmarks.node_sampling [--quick] [--rounds N]

Datasets (``../shared/data`` or ``$OOCGBDT_DATA``): ``lightgbm_binary`` (7,000 / 500 HIGGS
rows, 28 features, test AUC) and ``california_housing`` (20,640 rows, 8 features, seeded 80/20
split, test RMSE). 100 rounds, ``--quick`` 20.

Both libraries train on the same float32 arrays with num_leaves=31, learning_rate=0.1,
max_bin=255 and every other parameter at its default, plus the rule under test; LightGBM with
``deterministic=True``, ``enable_bundle=False`` and ``num_threads=2``. Rules:

- ``interaction_constraints``: the features cut into three contiguous groups, the last feature
  of each group also in the next one (a shared feature joins two groups);
- ``extra_trees`` (``extra_seed=11``);
- ``feature_fraction_bynode=0.5`` (``feature_fraction_seed=5``).

Columns: the test metric of each library; ``same trees``: every tree has LightGBM's split
features, node row counts and leaf row counts, and the raw test scores agree within 1e-9 of
their scale; ``path violations`` (interaction_constraints): root-to-leaf paths of the saved and
reloaded model whose features lie in no single group; ``1 vs 2 workers``: the model trained on
a 2-worker LocalCluster (Dask input, 1,000-row chunks) equals the in-process one bit for bit;
``chunkings``: in process with ``chunk_rows`` 1,000 and 1,500, bit for bit. Exit code 1 when
any check fails.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from benchmarks._common import load_dataset, machine_info, print_table

DATASETS = ("lightgbm_binary", "california_housing")
BASE = dict(num_leaves=31, learning_rate=0.1, max_bin=255)


def groups_of(n_features: int) -> list:
    """Three contiguous groups, each sharing its last feature with the next one."""
    cuts = np.linspace(0, n_features, 4).astype(int)
    out = []
    for k in range(3):
        hi = cuts[k + 1] + (1 if k < 2 else 0)
        out.append(list(range(int(cuts[k]), min(int(hi), n_features))))
    return out


RULES = {
    "interaction_constraints": lambda n: dict(interaction_constraints=groups_of(n)),
    "extra_trees": lambda n: dict(extra_trees=True, extra_seed=11),
    "feature_fraction_bynode": lambda n: dict(feature_fraction_bynode=0.5, feature_fraction_seed=5),
}


def _metric(data, raw):
    if data.objective == "binary":
        from sklearn.metrics import roc_auc_score
        return "AUC", float(roc_auc_score(data.y_test, raw))
    return "RMSE", float(np.sqrt(np.mean((raw - data.y_test) ** 2)))


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


def same_trees(ours, model, X_test) -> bool:
    """Every tree: LightGBM's split features, node and leaf row counts; raw test scores within
    1e-9 of their scale."""
    dump = model.dump_model()["tree_info"]
    if len(dump) != len(ours.trees):
        return False
    for t, d in zip(ours.trees, dump):
        nodes, leaves = _lgb_nodes(d)
        if t.n_leaves != len(leaves):
            return False
        theirs = [(nodes[j]["split_feature"], nodes[j]["internal_count"])
                  for j in range(len(nodes))]
        mine = [(int(t.split_feature[j]), int(t.internal_count[j]))
                for j in range(t.n_leaves - 1)]
        if theirs != mine or [leaves[j]["leaf_count"] for j in range(t.n_leaves)] != \
                [int(c) for c in t.leaf_count]:
            return False
    a, b = ours.predict(X_test, raw_score=True), model.predict(X_test, raw_score=True)
    return bool(np.abs(a - b).max() <= 1e-9 * max(1.0, np.abs(b).max()))


def path_violations(booster, groups) -> int:
    """Root-to-leaf paths whose split features lie in no single group."""
    bad = 0
    for t in booster.trees:
        if t.n_leaves == 1:
            continue
        stack = [(0, frozenset())]
        while stack:
            node, used = stack.pop()
            if node < 0:
                bad += not any(used <= set(g) for g in groups)
                continue
            used = used | {int(t.split_feature[node])}
            stack += [(int(t.left_child[node]), used), (int(t.right_child[node]), used)]
    return bad


def run(data, rule, rounds, client, tmp):
    import dask.array as da
    import lightgbm as lgb

    import oocgbdt
    from oocgbdt.core.booster import Booster

    extra = RULES[rule](data.n_features)
    params = dict(BASE, objective=data.objective, **extra)
    model = lgb.train(dict(params, deterministic=True, enable_bundle=False, num_threads=2,
                           verbose=-1), lgb.Dataset(data.X_train, data.y_train),
                      num_boost_round=rounds)
    ours = oocgbdt.train(dict(params, n_estimators=rounds, chunk_rows=1000), data.X_train,
                         data.y_train, verbose=False)
    other_chunks = oocgbdt.train(dict(params, n_estimators=rounds, chunk_rows=1500),
                                 data.X_train, data.y_train, verbose=False)
    two = oocgbdt.train(dict(params, n_estimators=rounds, partition_rows=1000),
                        da.from_array(data.X_train, chunks=(1000, -1)),
                        da.from_array(data.y_train, chunks=1000), client=client, verbose=False)
    name, ours_metric = _metric(data, ours.predict(data.X_test, raw_score=True))
    _, lgb_metric = _metric(data, model.predict(data.X_test, raw_score=True))
    violations = None
    if "interaction_constraints" in extra:
        saved = Booster.load_model(ours.save_model(f"{tmp}/{data.name}-{rule}.json"))
        violations = path_violations(saved, extra["interaction_constraints"])
    return dict(dataset=data.name, rule=rule, metric=name, oocgbdt=ours_metric,
                lightgbm=lgb_metric, same=same_trees(ours, model, data.X_test),
                violations=violations, workers=two == ours, chunks=other_chunks == ours)


def main(argv=None) -> int:
    import tempfile

    from distributed import Client, LocalCluster

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="20 rounds")
    ap.add_argument("--rounds", type=int, default=None)
    args = ap.parse_args(argv)
    rounds = args.rounds or (20 if args.quick else 100)
    print(f"# per-node rules vs LightGBM, {rounds} rounds; {machine_info()}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                         dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        for name in DATASETS:
            data = load_dataset(name)
            for rule in RULES:
                rows.append(run(data, rule, rounds, client, tmp))
                print(f"  done: {name} {rule}", file=sys.stderr, flush=True)
    yes = lambda v: "yes" if v else "NO"
    print_table(["dataset", "rule", "metric", "oocgbdt", "LightGBM", "same trees",
                 "path violations", "1 vs 2 workers", "chunkings"],
                [[r["dataset"], r["rule"], r["metric"], round(r["oocgbdt"], 6),
                  round(r["lightgbm"], 6), yes(r["same"]), r["violations"], yes(r["workers"]),
                  yes(r["chunks"])] for r in rows])
    ok = all(r["workers"] and r["chunks"] and r["violations"] in (None, 0) for r in rows)
    ok = ok and all(r["same"] for r in rows)
    print("\nall checks passed" if ok else "\nSOME CHECKS FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
