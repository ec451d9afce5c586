"""LightGBM parity when the rows are cut into many compute partitions.

Each pass sums one partial histogram per partition in a fan-in tree (consecutive pairs, levels
of ``split_every``, a last sum), in process, on two shards that each sum a pass's partials
themselves, and on three shards that share the split search out by feature blocks. Whatever the
path, the model must be LightGBM's: the same split features, thresholds, default sides, node and
leaf row counts, every training row in the same leaf, and leaf values and predictions equal up
to float64 summation order. A reduction that loses or repeats one partition's partial changes
the totals of thousands of rows' gradients, and so the trees.

Tolerances. oocgbdt adds the same float64 gradients as LightGBM in a different order (within a
partition, then across partitions, where LightGBM goes row by row), so a leaf's sums differ by
rounding alone: a few ulps of the sum of the leaf's absolute gradients. Relative to a tree's
largest leaf value that was at most 1e-14 on these data; :data:`LEAF_RTOL` keeps a margin of
10,000 above it, while one partition's rows lost or counted twice change the row counts and
splits themselves (checked exactly) and leaf values by orders of magnitude more. A raw score
adds one leaf per tree: its rounding stays below 1e-15 of the largest score here, and
:data:`SCORE_RTOL` bounds it at 1e-12 of that scale.
"""
import dask.array as da
import numpy as np
import pytest

import oocgbdt
import oocgbdt.core.boosting as boosting
from tests.conftest import load_lightgbm_tsv, load_pmlb
from tests.core.test_split_counts import _assert_same_trees, _lgb_nodes

lgb = pytest.importorskip("lightgbm")

#: Leaf values: tolerance relative to the tree's largest |leaf value| (see the module docstring).
LEAF_RTOL = 1e-10
#: Raw scores: tolerance relative to the largest |score| (see the module docstring).
SCORE_RTOL = 1e-12

PARAMS = dict(num_leaves=31, learning_rate=0.1, max_bin=255)


def _lightgbm(objective, X, y, n_trees):
    """LightGBM with oocgbdt's settings: no bundling (oocgbdt bundles only where LightGBM's
    exact histograms are kept), one thread and ``deterministic`` (its own sums in row order)."""
    return lgb.train(dict(PARAMS, objective=objective, enable_bundle=False, deterministic=True,
                          num_threads=1, verbose=-1),
                     lgb.Dataset(X, y), num_boost_round=n_trees)


def _assert_lightgbm_trees(ours, model, X, Xt, n_trees):
    """``_assert_same_trees`` (structure, row counts, every training row's leaf), then the
    stricter checks of this module: every threshold equal to LightGBM's, leaf values within
    :data:`LEAF_RTOL` of each tree's scale, and raw scores on ``X`` and ``Xt`` within
    :data:`SCORE_RTOL`."""
    assert len(ours.trees) == n_trees
    _assert_same_trees(ours, model, X, n_trees)
    dump = model.dump_model()["tree_info"]
    init = float(np.atleast_1d(ours.init_score)[0])
    for i, tree in enumerate(ours.trees):
        nodes, leaves = _lgb_nodes(dump[i])
        n_split = tree.n_leaves - 1
        # Thresholds are bin bounds of the same bin mapper: the same split is the same number.
        np.testing.assert_array_equal([nodes[j]["threshold"] for j in range(n_split)],
                                      tree.threshold[:n_split], err_msg=f"tree {i}")
        theirs = np.array([leaves[j]["leaf_value"] for j in range(tree.n_leaves)])
        scale = np.abs(theirs).max()
        if i == 0 and tree.n_leaves > 1:  # LightGBM's first tree holds the init score
            theirs = theirs - init
        np.testing.assert_allclose(tree.leaf_value, theirs, rtol=0, atol=LEAF_RTOL * scale,
                                   err_msg=f"tree {i}")
    for rows in (X, Xt):
        theirs = model.predict(rows, raw_score=True, num_iteration=n_trees)
        np.testing.assert_allclose(ours.predict(rows, raw_score=True), theirs, rtol=0,
                                   atol=SCORE_RTOL * np.abs(theirs).max())


@pytest.fixture(scope="module")
def binary(shared_data):
    """lightgbm_binary (HIGGS rows, 7,000 x 28): train and test rows."""
    X, y = load_lightgbm_tsv(shared_data / "lightgbm_binary" / "binary.train")
    Xt, _ = load_lightgbm_tsv(shared_data / "lightgbm_binary" / "binary.test")
    return X, y, Xt


@pytest.fixture(scope="module")
def binary_lightgbm(binary):
    """LightGBM's 50 trees on :func:`binary` (the tests compare as many as they train)."""
    X, y, _ = binary
    return _lightgbm("binary", X, y, 50)


@pytest.fixture
def executors(monkeypatch):
    """``(executor class name, shards or None, feature blocks or None)`` of each search set-up
    of the fits in the test: which path ran (in process, shards, shared search)."""
    seen = []
    real = boosting._scatter_feature_blocks

    def spy(executor, meta, n_feature_blocks):
        out = real(executor, meta, n_feature_blocks)
        seen.append((type(executor).__name__, getattr(executor, "n_shards", None),
                     None if out[1] is None else len(out[1])))
        return out

    monkeypatch.setattr(boosting, "_scatter_feature_blocks", spy)
    return seen


@pytest.mark.parametrize("chunk_rows, partition_rows, n_partitions", [
    (500, 1000, 7),   # 2 chunks a partition; pairs, then one sum of 4
    (250, 250, 28),   # more than 2 x split_every: a level of sums of 8, then one sum of 4
])
def test_binary_in_process_on_many_partitions_equals_lightgbm(binary, binary_lightgbm, executors,
                                                               chunk_rows, partition_rows,
                                                               n_partitions):
    """NumPy input, in process: 50 trees equal LightGBM's."""
    X, y, Xt = binary
    ours = oocgbdt.train(dict(PARAMS, objective="binary", n_estimators=50, chunk_rows=chunk_rows,
                              partition_rows=partition_rows), X, y, verbose=False)
    assert ours.cache_report["n_partitions"] == {"train": n_partitions}
    assert ours.cache_report["partition_rows"]["train"] == \
        [partition_rows] * (n_partitions - 1) + [len(y) - partition_rows * (n_partitions - 1)]
    assert executors and {e[0] for e in executors} == {"LocalExecutor"}
    _assert_lightgbm_trees(ours, binary_lightgbm, X, Xt, 50)


def test_regression_in_process_on_many_partitions_equals_lightgbm(shared_data):
    """california_housing (20,640 x 8, targets up to 5e5), L2 regression in 11 partitions of
    at most 2,000 rows (pairs, then one sum of 6): 30 trees equal LightGBM's."""
    X, y = load_pmlb(shared_data / "california_housing" / "537_houses.tsv.gz")
    n_trees = 30
    ours = oocgbdt.train(dict(PARAMS, objective="regression", n_estimators=n_trees,
                              chunk_rows=2000, partition_rows=2000), X, y, verbose=False)
    assert ours.cache_report["n_partitions"] == {"train": 11}
    model = _lightgbm("regression", X, y, n_trees)
    _assert_lightgbm_trees(ours, model, X, X[::7], n_trees)


@pytest.mark.parametrize("n_sample, seeds", [
    (2000, {}),                          # one draw per row (k > n / log2(k))
    (300, {}),                           # Floyd's algorithm
    (2000, {"seed": 7}),                 # data_random_seed derived from seed, as LightGBM
    (300, {"data_random_seed": 11}),
])
def test_binary_on_a_bin_sample_equals_lightgbm(binary, n_sample, seeds):
    """More rows than ``bin_construct_sample_cnt``: the bins come from LightGBM's own sample
    of the rows (``Random(data_random_seed).Sample``), so 10 trees are LightGBM's, for
    NumPy input in process and for a Dask array on the threaded scheduler (the sample's rows
    read chunk by chunk). Another sample gives other bounds, hence other thresholds."""
    X, y, Xt = binary
    n_trees = 10
    params = dict(PARAMS, objective="binary", bin_construct_sample_cnt=n_sample, **seeds)
    model = lgb.train(dict(params, enable_bundle=False, deterministic=True, num_threads=1,
                           verbose=-1), lgb.Dataset(X, y), num_boost_round=n_trees)
    ours = oocgbdt.train(dict(params, n_estimators=n_trees), X, y, verbose=False)
    _assert_lightgbm_trees(ours, model, X, Xt, n_trees)
    import dask
    with dask.config.set(scheduler="threads"):
        chunked = oocgbdt.train(dict(params, n_estimators=n_trees, partition_rows=1500),
                                da.from_array(X, chunks=(1500, -1)),
                                da.from_array(y, chunks=1500), verbose=False)
    _assert_lightgbm_trees(chunked, model, X, Xt, n_trees)


def _train_on_cluster(n_workers, X, y, chunk_rows, n_trees):
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        return oocgbdt.train(dict(PARAMS, objective="binary", n_estimators=n_trees,
                                  partition_rows=chunk_rows),
                             da.from_array(X, chunks=(chunk_rows, -1)),
                             da.from_array(y, chunks=chunk_rows), client=client, verbose=False)


def test_binary_on_two_workers_with_14_partitions_equals_lightgbm(binary, binary_lightgbm,
                                                                   executors):
    """Dask array input on a 2-worker cluster, one partition per 500-row chunk (14, 7 a
    shard): every shard sums each pass's 7 pair sums itself and searches every feature. 30
    trees equal LightGBM's."""
    X, y, Xt = binary
    ours = _train_on_cluster(2, X, y, 500, 30)
    assert ours.cache_report["n_partitions"] == {"train": 14}
    assert executors and set(executors) == {("SpmdExecutor", 2, None)}
    _assert_lightgbm_trees(ours, binary_lightgbm, X, Xt, 30)


def test_binary_on_three_workers_sharing_the_search_equals_lightgbm(binary, binary_lightgbm,
                                                                     executors):
    """Dask array input on a 3-worker cluster, one partition per 700-row chunk (10, in pairs
    summed where they are): the split search is shared out by 3 feature blocks, each shard
    summing its block's slices of the 5 pair sums and searching its features, and the split
    records are exchanged. 30 trees equal LightGBM's."""
    X, y, Xt = binary
    ours = _train_on_cluster(3, X, y, 700, 30)
    assert ours.cache_report["n_partitions"] == {"train": 10}
    assert executors and set(executors) == {("SpmdExecutor", 3, 3)}
    _assert_lightgbm_trees(ours, binary_lightgbm, X, Xt, 30)


def test_first_tree_children_sums_are_lightgbms_to_the_bit():
    """A split's children hold LightGBM's sums, computed with its arithmetic to the last bit
    (``FindBestThresholdSequentially``: the left hessian sum minus ``kEpsilon``, the right one
    ``sum_h + 2 kEpsilon - left - kEpsilon``, outputs from the sums with ``kEpsilon`` in): in
    one partition the first tree's leaf values and hessian sums equal LightGBM's exactly
    (weighted logloss, hessians that differ row to row). Ties between splits that are
    mathematically equal then fall as in LightGBM."""
    rng = np.random.default_rng(2)
    n = 3000
    X = rng.normal(size=(n, 5)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] ** 2 + rng.normal(size=n) > 1).astype(np.float32)
    w = rng.uniform(0.5, 2.0, n).astype(np.float32)
    params = dict(objective="binary", num_leaves=15, boost_from_average=False,
                  min_data_in_leaf=10)
    ours = oocgbdt.train(dict(params, n_estimators=1), X, y, sample_weight=w, verbose=False)
    model = lgb.train(dict(params, verbose=-1, deterministic=True, num_threads=1,
                           enable_bundle=False), lgb.Dataset(X, y, weight=w), num_boost_round=1)
    _, leaves = _lgb_nodes(model.dump_model()["tree_info"][0])
    tree = ours.trees[0]
    np.testing.assert_array_equal(tree.leaf_value,
                                  [leaves[j]["leaf_value"] for j in range(tree.n_leaves)])
    np.testing.assert_array_equal(tree.leaf_weight,
                                  [leaves[j]["leaf_weight"] for j in range(tree.n_leaves)])
