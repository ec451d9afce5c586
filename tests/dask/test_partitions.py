"""Compute partitions: the grouping rule, the data-only default, and models that depend only on
the partitions (not on the storage chunks inside them, nor on the cluster)."""
import dask.array as da
import numpy as np
import pytest

import oocgbdt
from oocgbdt.core.partitioning import (MAX_BINNED_BYTES, MAX_RAW_BYTES, default_partition_rows,
                                      group_chunks, partition_bounds)
from oocgbdt.io.dataset import open_dataset, write_dataset
from tests.dask.test_training import _synthetic


@pytest.mark.parametrize("seed", range(6))
def test_group_chunks_covers_in_order_and_closes_at_the_first_chunk_reaching_the_target(seed):
    rng = np.random.default_rng(seed)
    chunks = tuple(int(c) for c in rng.integers(1, 400, size=rng.integers(1, 40)))
    target = int(rng.integers(1, 1500))
    groups = group_chunks(chunks, target)
    # Every chunk exactly once, in order, whole (groups are chunk index ranges).
    assert [i for a, b in groups for i in range(a, b)] == list(range(len(chunks)))
    for j, (a, b) in enumerate(groups):
        rows = sum(chunks[a:b])
        if j < len(groups) - 1:
            assert rows >= target                   # at least the target...
            assert rows - chunks[b - 1] < target    # ...and no chunk more than needed
        else:
            assert sum(chunks[a:b - 1]) < target    # the last one too (it may fall short)
    bounds = partition_bounds(chunks, groups)
    assert bounds[0] == 0 and bounds[-1] == sum(chunks)
    assert np.diff(bounds).tolist() == [sum(chunks[a:b]) for a, b in groups]


def test_group_chunks_never_splits_a_large_chunk_and_rejects_a_bad_target():
    assert group_chunks((10, 5000, 10, 10), 100) == [(0, 2), (2, 4)]
    assert group_chunks((5000,), 100) == [(0, 1)]
    with pytest.raises(ValueError, match="partition_rows"):
        group_chunks((10,), 0)


def test_default_partition_rows_by_hand():
    # the fewest even partitions (at least 2, at most 4) within 2**18 rows, clipped to
    # [2**16, 2**18]
    assert default_partition_rows(1_000_000, 100, 400) == 250_000
    assert default_partition_rows(600_000, 100, 400) == 200_000
    assert default_partition_rows(400_000, 100, 400) == 200_000
    assert default_partition_rows(524_288, 100, 400) == 2 ** 18
    assert default_partition_rows(200_000, 100, 400) == 100_000
    assert default_partition_rows(100_000, 100, 400) == 2 ** 16
    assert default_partition_rows(10_000_000, 100, 400) == 2 ** 18
    assert default_partition_rows(3000, 6, 24) == 2 ** 16
    # binned bytes: 2000 uint8 columns -> 64 MiB / 2000 bytes per row
    assert default_partition_rows(10_000_000, 2000, None) == MAX_BINNED_BYTES // 2000 == 33554
    # raw dense bytes: 4126 float32 features bundled into 6 uint16 columns -> 256 MiB / 16504
    assert default_partition_rows(10_000_000, 12, 4126 * 4) == MAX_RAW_BYTES // 16504 == 16264
    # ...but sparse raw rows are not capped (never densified)
    assert default_partition_rows(10_000_000, 12, None) == 2 ** 18
    # 1M rows in 16 chunks of 65,536 -> 4 partitions (the measured case)
    chunks = (65536,) * 15 + (1_000_000 - 15 * 65536,)
    groups = group_chunks(chunks, default_partition_rows(1_000_000, 100, 400))
    assert np.diff(partition_bounds(chunks, groups)).tolist() == [262144, 262144, 262144, 213568]


@pytest.mark.parametrize("n_rows,n_partitions", [
    (131_072, 2), (131_073, 2), (160_000, 2), (200_000, 2), (262_144, 2), (300_000, 2),
    (400_000, 2), (400_001, 2), (524_288, 2), (524_289, 3), (777_777, 3), (786_433, 4),
    (1_000_000, 4), (1_048_576, 4)])
def test_in_memory_rows_in_the_even_range_make_even_partitions(n_rows, n_partitions):
    """NumPy and sparse rows of 131,072 to 1,048,576 are cut into even chunks of at most
    chunk_rows rows, so the default rule makes the fewest partitions (2 to 4) of at most 2**18
    rows, differing by less than one row per chunk (exactly chunk_rows-row chunks left
    400,000 rows partitions of 262,144 and 137,856, and 160,000 rows 131,072 and 28,928)."""
    import scipy.sparse as sp
    from oocgbdt.dask.inputs import as_row_chunked
    for X in (np.zeros((n_rows, 1), np.float32), sp.csr_matrix((n_rows, 3), dtype=np.float32)):
        chunks = as_row_chunked(X, "X", 65536).chunks[0]
        assert max(chunks) <= 65536 and len(chunks) % n_partitions == 0
        groups = group_chunks(chunks, default_partition_rows(n_rows, 100, 400))
        sizes = np.diff(partition_bounds(chunks, groups))
        assert len(sizes) == n_partitions and sizes.max() - sizes.min() < len(chunks)
        assert sizes.max() <= 2 ** 18


def test_in_memory_chunks_outside_the_four_partition_range_are_chunk_rows():
    from oocgbdt.dask.inputs import as_row_chunked
    for n_rows, chunk_rows, want in ((131_071, 65536, 65536), (2_000_000, 65536, 65536),
                                     (400_000, 10 ** 6, 400_000), (3000, 700, 700)):
        chunks = as_row_chunked(np.zeros((n_rows, 1), np.float32), "X", chunk_rows).chunks[0]
        assert chunks[0] == want and sum(chunks) == n_rows


def test_partitioned_model_equals_the_model_on_data_stored_in_those_partitions(client):
    """Oracle: grouping chunks of 500 rows into partitions of >= 1200 rows (1500, 1500, 1500,
    500) trains the model of data stored in chunks of exactly those sizes (one per partition),
    in-process and on the cluster, NumPy and Dask input alike."""
    X, y = _synthetic(n=5000)
    Xv, yv = _synthetic(n=1300, seed=1)
    params = dict(objective="binary", num_leaves=15, n_estimators=5)
    grouped = oocgbdt.train(dict(params, chunk_rows=500, partition_rows=1200), X, y,
                            eval_set=[(Xv, yv)], verbose=False)
    assert grouped.cache_report["partition_rows"] == {"train": [1500, 1500, 1500, 500],
                                                      "eval_0": [1300]}
    stored = oocgbdt.train(dict(params, chunk_rows=1500, partition_rows=1), X, y,
                           eval_set=[(Xv, yv)], verbose=False)
    assert stored.cache_report["partition_rows"]["train"] == [1500, 1500, 1500, 500]
    on_cluster = oocgbdt.train(dict(params, partition_rows=1200),
                               da.from_array(X, chunks=(500, 6)), y, client=client,
                               eval_set=[(Xv, yv)], verbose=False)
    assert grouped == stored == on_cluster
    assert grouped.evals_result == stored.evals_result == on_cluster.evals_result
    np.testing.assert_array_equal(grouped.predict(X, raw_score=True),
                                  on_cluster.predict(X, raw_score=True))


def test_default_partitions_come_from_the_data_not_the_cluster(tmp_path):
    """130,000 rows in chunks of 20,000 (NumPy input under 131,072 rows keeps chunks of
    chunk_rows): the default target is MIN_ROWS = 65,536 rows, so 4 chunks make the first
    partition and the remaining 50,000 rows the second, on 1 worker, 2 workers and in-process;
    the three models are bit-identical (NumPy, Zarr)."""
    from distributed import Client, LocalCluster
    rng = np.random.default_rng(5)
    X = rng.normal(size=(130_000, 4)).astype(np.float32)
    y = X[:, 0] - X[:, 1] ** 2 + rng.normal(scale=0.3, size=130_000)
    ds = open_dataset(write_dataset(tmp_path / "d", X, y, chunk_rows=20_000).path)
    params = dict(objective="regression", num_leaves=15, n_estimators=3, chunk_rows=20_000)
    models = []
    for n_workers in (1, 2):
        with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=False,
                          dashboard_address=":0") as cl, Client(cl) as c:
            models.append(oocgbdt.train(params, ds.X, ds.y, client=c, verbose=False))
    models.append(oocgbdt.train(params, X, y, verbose=False))
    for m in models:
        assert m.cache_report["partition_rows"] == {"train": [80_000, 50_000]}
        assert m.cache_report["mode"] == "memory"
    assert models[0] == models[1] == models[2]
    np.testing.assert_array_equal(models[0].predict(X[:1000]), models[2].predict(X[:1000]))
