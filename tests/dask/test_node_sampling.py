"""interaction_constraints, feature_fraction_bynode and extra_trees: LightGBM's trees (its
per-node rules and random streams replayed in its order), and the same model wherever the split
search runs (in process, 2 workers, feature blocks) and however the rows are chunked."""
import numpy as np
import pytest

import oocgbdt
from oocgbdt.core import executor as executor_module
from oocgbdt.core.booster import Booster
from tests.conftest import load_lightgbm_tsv
from tests.core.test_split_counts import _assert_same_trees, _lgb_nodes

lgb = pytest.importorskip("lightgbm")

PARAMS = dict(num_leaves=15, learning_rate=0.1, max_bin=63)
# 25 (the strongest feature) is in two groups: below a split on it, either group may follow,
# never both on one path.
GROUPS = [[25, 26, 27, 0], [5, 6, 25, 2], [9, 10, 20, 8]]
N_TREES = 8


@pytest.fixture(scope="module")
def binary(shared_data):
    """The first 3,000 rows of lightgbm_binary (28 features)."""
    X, y = load_lightgbm_tsv(shared_data / "lightgbm_binary" / "binary.train")
    return X[:3000], y[:3000]


def _both(X, y, extra, objective="binary", categorical=None, **lgb_data):
    params = dict(PARAMS, **extra)
    if categorical is not None:
        params["categorical_feature"] = categorical
    model = lgb.train(dict(params, objective=objective, enable_bundle=False, deterministic=True,
                           num_threads=1, verbose=-1),
                      lgb.Dataset(X, y, **lgb_data), num_boost_round=N_TREES)
    ours = oocgbdt.train(dict(params, objective=objective, n_estimators=N_TREES), X, y,
                         verbose=False)
    return ours, model


def _paths(tree):
    """The split features of every root-to-leaf path of a tree."""
    out = []

    def walk(node, used):
        if node < 0:
            out.append(used)
            return
        here = used | {int(tree.split_feature[node])}
        walk(int(tree.left_child[node]), here)
        walk(int(tree.right_child[node]), here)

    if tree.n_leaves > 1:
        walk(0, frozenset())
    return out


def test_bad_interaction_constraints_index_fails_before_training():
    X = np.random.default_rng(0).normal(size=(200, 3))
    with pytest.raises(ValueError, match="interaction_constraints.*3"):
        oocgbdt.train(dict(interaction_constraints=[[0, 3]], n_estimators=1), X, X[:, 0])


def test_interaction_constraints_equal_lightgbm_and_no_path_crosses_groups(binary, tmp_path):
    X, y = binary
    ours, model = _both(X, y, dict(interaction_constraints=GROUPS))
    _assert_same_trees(ours, model, X, N_TREES)
    saved = Booster.load_model(ours.save_model(tmp_path / "m.json"))
    paths = [p for t in saved.trees for p in _paths(t)]
    assert paths and max(len(p) for p in paths) >= 3
    violations = [p for p in paths if not any(p <= set(g) for g in GROUPS)]
    assert violations == []
    assert {f for p in paths for f in p} <= set().union(*GROUPS)
    assert any(p & {26, 27, 0} for p in paths) and any(p & {5, 6, 2} for p in paths)


@pytest.mark.parametrize("extra", [
    dict(extra_trees=True, extra_seed=11),
    dict(feature_fraction_bynode=0.3, feature_fraction_seed=5),
    dict(extra_trees=True, feature_fraction_bynode=0.5, interaction_constraints=GROUPS),
], ids=["extra_trees", "bynode", "all_three"])
def test_random_rules_equal_lightgbm(binary, extra):
    X, y = binary
    ours, model = _both(X, y, extra)
    _assert_same_trees(ours, model, X, N_TREES)


def test_extra_trees_categorical_equal_lightgbm():
    """One-vs-rest (3 categories) and many-vs-many (30) draws."""
    rng = np.random.default_rng(0)
    n = 3000
    X = rng.normal(size=(n, 4))
    X[:, 0] = rng.integers(0, 3, n)
    X[:, 1] = rng.integers(0, 30, n)
    y = (X[:, 2] + rng.normal(size=30)[X[:, 1].astype(int)] + 0.5 * (X[:, 0] == 1)
         + rng.normal(size=n) > 0).astype(float)
    ours, model = _both(X, y, dict(extra_trees=True), categorical=[0, 1],
                        categorical_feature=[0, 1])
    dump = model.dump_model()["tree_info"]
    n_categorical = 0
    for i, t in enumerate(ours.trees):
        nodes, leaves = _lgb_nodes(dump[i])
        assert [(nodes[j]["split_feature"], nodes[j]["internal_count"])
                for j in range(len(nodes))] == \
            [(int(t.split_feature[j]), int(t.internal_count[j])) for j in range(t.n_leaves - 1)]
        n_categorical += int(np.isin(t.split_feature[:t.n_leaves - 1], [0, 1]).sum())
    assert n_categorical > 10
    theirs = model.predict(X, raw_score=True)
    np.testing.assert_allclose(ours.predict(X, raw_score=True), theirs, rtol=0,
                               atol=1e-12 * np.abs(theirs).max())


RANDOM = dict(PARAMS, objective="binary", n_estimators=6, extra_trees=True,
              feature_fraction_bynode=0.5, interaction_constraints=GROUPS)


def test_same_model_on_two_workers_in_feature_blocks_and_other_chunkings(binary, monkeypatch):
    """Consistency (the oracle tests are above): 2 workers (each shard searches), in process
    with 3 feature blocks, and two chunkings give the in-process model bit for bit."""
    import dask.array as da
    from distributed import Client, LocalCluster
    X, y = binary
    ref = oocgbdt.train(dict(RANDOM, chunk_rows=500), X, y, verbose=False)
    assert ref == oocgbdt.train(dict(RANDOM, chunk_rows=700), X, y, verbose=False)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        two = oocgbdt.train(dict(RANDOM, partition_rows=500), da.from_array(X, chunks=(500, -1)),
                            da.from_array(y, chunks=500), client=client, verbose=False)
    assert two == ref
    monkeypatch.setattr(executor_module.LocalExecutor, "n_feature_blocks", 3)
    assert oocgbdt.train(dict(RANDOM, chunk_rows=500), X, y, verbose=False) == ref
