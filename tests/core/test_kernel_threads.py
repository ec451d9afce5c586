"""A task body sharing its kernels out to threads (KernelThreads) gives what it gives on one
thread, checked against the kernels' NumPy twins and against the one-thread results."""
import numpy as np
import pytest

from oocgbdt.core import histogram_source, partition
from oocgbdt.core.executor import KernelThreads, LocalExecutor
from oocgbdt.kernels.histogram import build_histogram_naive


def _data(seed=0, n=3000, F=12):
    rng = np.random.default_rng(seed)
    nb = rng.integers(2, 256, size=F)
    offsets = np.concatenate([[1], 1 + np.cumsum(nb)]).astype(np.int64)
    X = np.stack([rng.integers(0, b, size=n) for b in nb], axis=1).astype(np.uint8)
    g = rng.normal(size=n).astype(np.float32)
    h = rng.uniform(0.1, 1, size=n).astype(np.float32)
    return rng, offsets, X, g, h


def _packed(rng, n):
    """``n`` rows' packed integer pairs (gradient in [-8, 8], hessian in [0, 8])."""
    from oocgbdt.kernels.quantize import QUANT_DTYPE
    return ((rng.integers(-8, 9, size=n).astype(np.int64) << 32)
            + rng.integers(0, 9, size=n)).astype(QUANT_DTYPE)


@pytest.mark.parametrize("columns", [None, [1, 2, 3, 7, 8, 11]])
@pytest.mark.parametrize("n_blocks", [2, 3, 5])
@pytest.mark.parametrize("block_bytes", [None, 4096])
def test_a_pass_built_by_column_blocks_equals_one_build_and_numpy(columns, n_blocks,
                                                                  block_bytes, monkeypatch):
    """Column blocks, and the sub-blocks a block is cut into under ``HIST_BLOCK_BYTES`` (4,096
    bytes: blocks of one to three columns here), add what NumPy adds."""
    if block_bytes is not None:
        monkeypatch.setattr(partition, "HIST_BLOCK_BYTES", block_bytes)
    rng, offsets, X, g, h = _data()
    cols = np.arange(X.shape[1], dtype=np.int64) if columns is None else np.array(columns, np.int64)
    row_lists = [np.sort(rng.choice(X.shape[0], m, replace=False)).astype(np.int32)
                 for m in (1500, 700)]

    def work():
        hist = np.zeros((2, offsets[-1], 2))
        return partition.PassWork(None, X, offsets, cols, g, h, row_lists, hist)

    one = work()
    subs = partition.cache_blocks(one, len(cols))
    assert subs == 1 if block_bytes is None else subs >= len(cols) // 3
    partition.build_block(one, 0, 1)
    blocks = work()
    for b in reversed(range(n_blocks)):  # any order: each block owns its columns
        partition.build_block(blocks, b, n_blocks)
    np.testing.assert_array_equal(blocks.hist, one.hist)
    assert blocks.cells == (1500 + 700) * len(cols)
    for j, rows in enumerate(row_lists):
        ref = np.zeros((offsets[-1], 2))
        build_histogram_naive(X, offsets, cols, g, h, rows, ref)
        np.testing.assert_allclose(one.hist[j], ref, rtol=1e-12, atol=1e-9)
        assert one.hist[j, 0, 0] == len(rows)  # the count row added once, not per block


@pytest.mark.parametrize("n_blocks", [1, 2, 3])
def test_a_root_over_every_row_is_cut_finer_and_equals_numpy(n_blocks, monkeypatch):
    """A pass over every row in order (no row list) is cut under ``EVERY_ROW_BLOCK_BYTES``,
    not ``HIST_BLOCK_BYTES``, and its sub-blocks add what NumPy adds over every row."""
    rng, offsets, X, g, h = _data(seed=5)
    cols = np.arange(X.shape[1], dtype=np.int64)
    hist_bytes = int(offsets[-1]) * 16
    # a row list's pass in one call, every row's in at least four
    monkeypatch.setattr(partition, "HIST_BLOCK_BYTES", hist_bytes)
    monkeypatch.setattr(partition, "EVERY_ROW_BLOCK_BYTES", hist_bytes // 4)
    every = np.arange(X.shape[0], dtype=np.int32)

    def work(every_row):
        hist = np.zeros((1, offsets[-1], 2))
        return partition.PassWork(None, X, offsets, cols, g, h, [every], hist,
                                  every_row=every_row)

    listed, whole = work(False), work(True)
    assert partition.cache_blocks(listed, len(cols)) == 1
    assert partition.cache_blocks(whole, len(cols)) >= 4
    for b in range(n_blocks):
        partition.build_block(whole, b, n_blocks)
        partition.build_block(listed, b, n_blocks)
    np.testing.assert_array_equal(whole.hist, listed.hist)
    ref = np.zeros((offsets[-1], 2))
    build_histogram_naive(X, offsets, cols, g, h, every, ref)
    np.testing.assert_allclose(whole.hist[0], ref, rtol=1e-12, atol=1e-9)
    assert whole.hist[0, 0, 0] == X.shape[0]


@pytest.mark.parametrize("block_bytes", [None, 2048])
def test_a_quantized_pass_built_by_column_blocks_equals_numpy(block_bytes, monkeypatch):
    """Integer histograms by blocks and sub-blocks: the naive twin's integers exactly."""
    from oocgbdt.kernels.quantize import QUANT_DTYPE, build_histogram_int_naive
    if block_bytes is not None:
        monkeypatch.setattr(partition, "HIST_BLOCK_BYTES", block_bytes)
    rng, offsets, X, _, _ = _data(seed=3)
    n = X.shape[0]
    packed = _packed(rng, n)
    cols = np.arange(X.shape[1], dtype=np.int64)
    row_lists = [np.sort(rng.choice(n, m, replace=False)).astype(np.int32) for m in (900, 40)]
    hist = np.zeros((2, offsets[-1], 1), dtype=QUANT_DTYPE)
    work = partition.PassWork(None, X, offsets, cols, packed, packed, row_lists, hist)
    assert (partition.cache_blocks(work, len(cols)) > 1) == (block_bytes is not None)
    for b in range(2):
        partition.build_block(work, b, 2)
    for j, rows in enumerate(row_lists):
        ref = np.zeros((offsets[-1], 1), dtype=np.int64)
        build_histogram_int_naive(X, offsets, cols, packed, rows, ref)
        np.testing.assert_array_equal(work.hist[j], ref)


@pytest.mark.parametrize("n_blocks", [1, 2])
def test_a_quantized_root_over_every_row_is_one_sub_block_and_equals_numpy(n_blocks,
                                                                          monkeypatch):
    """A quantized pass over every row in order is not cut under ``EVERY_ROW_BLOCK_BYTES``
    (a float one is: the test above), and adds the naive twin's integers exactly."""
    from oocgbdt.kernels.quantize import QUANT_DTYPE, build_histogram_int_naive
    rng, offsets, X, _, _ = _data(seed=7)
    n = X.shape[0]
    monkeypatch.setattr(partition, "EVERY_ROW_BLOCK_BYTES", 64)
    packed = _packed(rng, n)
    cols = np.arange(X.shape[1], dtype=np.int64)
    every = np.arange(n, dtype=np.int32)
    hist = np.zeros((1, offsets[-1], 1), dtype=QUANT_DTYPE)
    work = partition.PassWork(None, X, offsets, cols, packed, packed, [every], hist,
                              every_row=True)
    assert partition.cache_blocks(work, len(cols)) == 1
    floats = partition.PassWork(None, X, offsets, cols, np.ones(n, np.float32),
                                np.ones(n, np.float32), [every],
                                np.zeros((1, offsets[-1], 2)), every_row=True)
    assert partition.cache_blocks(floats, len(cols)) > 1
    for b in range(n_blocks):
        partition.build_block(work, b, n_blocks)
    ref = np.zeros((offsets[-1], 1), dtype=np.int64)
    build_histogram_int_naive(X, offsets, cols, packed, every, ref)
    np.testing.assert_array_equal(work.hist[0], ref)


def test_block_count_gives_each_thread_a_block_unless_blocks_get_too_small(monkeypatch):
    monkeypatch.setattr(partition, "MIN_BLOCK_CELLS", 1000)
    assert partition.block_count(10 ** 6, 2) == 2
    assert partition.block_count(10 ** 6, 3) == 3
    assert partition.block_count(2500, 4) == 2   # two blocks of 1,250 cells, not four of 625
    assert partition.block_count(999, 2) == 1
    # with a partition per thread, a partition's pass is built whole below
    # MIN_PARTITION_BLOCK_CELLS, and cut as before from it
    monkeypatch.setattr(partition, "MIN_PARTITION_BLOCK_CELLS", 10 ** 5)
    assert partition.block_count(10 ** 5 - 1, 2, 2) == 1
    assert partition.block_count(10 ** 5 - 1, 2, 5) == 1
    assert partition.block_count(10 ** 5, 2, 2) == 2
    assert partition.block_count(10 ** 5 - 1, 2, 1) == 2  # fewer partitions than threads
    assert partition.block_count(10 ** 5 - 1, 4, 3) == 4
    # the uneven partitions of a NumPy fit (131,072 x 3 + 6,784 rows): their blocks, queued
    # one partition after the other, load two threads evenly
    sizes = []
    for cells in [131072] * 3 + [6784]:
        k = partition.block_count(cells, 2)
        sizes += [cells / k] * k
    loads = [0.0, 0.0]
    for s in sizes:  # first in, first out: each to the thread that frees first
        loads[loads.index(min(loads))] += s
    assert max(loads) / (sum(loads) / 2) < 1.05


def test_kernel_threads_run_every_call_and_raise_after_all_ended():
    from concurrent.futures import ThreadPoolExecutor
    pool = ThreadPoolExecutor(2)
    threads = KernelThreads(pool, 2)
    done = []
    try:
        assert threads.run([lambda i=i: i * i for i in range(5)]) == [0, 1, 4, 9, 16]

        def bad():
            raise ValueError("boom")

        with pytest.raises(ValueError, match="boom"):
            threads.run([bad] + [lambda i=i: done.append(i) for i in range(4)])
        assert sorted(done) == [0, 1, 2, 3]
    finally:
        pool.shutdown()


def test_shared_calls_run_the_calls_they_add_on_every_thread_and_raise_after_all_ended():
    """``share``: each call may return more calls (a routed partition its column blocks); all
    run, the caller's thread among the workers; an error (here in an added call) is raised
    once every call has ended."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor
    pool = ThreadPoolExecutor(2)
    threads = KernelThreads(pool, 2)
    ran, where = [], set()
    lock = threading.Lock()

    def leaf(i):
        time.sleep(0.002)  # long enough for the pool's loop to take some
        with lock:
            ran.append(i)
            where.add(threading.get_ident())

    def parent(i):
        leaf(i)
        return [lambda j=j: leaf(j) for j in range(10 * i + 1, 10 * i + 4)]

    try:
        threads.share([lambda i=i: parent(i) for i in range(1, 5)])
        assert sorted(ran) == sorted([i for p in range(1, 5)
                                      for i in [p] + list(range(10 * p + 1, 10 * p + 4))])
        assert threading.get_ident() in where and len(where) == 2
        ran.clear()

        def bad():
            raise ValueError("boom")

        with pytest.raises(ValueError, match="boom"):
            threads.share([lambda: [bad, lambda: leaf(1)], lambda: leaf(2), lambda: leaf(3)])
        assert sorted(ran) == [1, 2, 3]
    finally:
        pool.shutdown()


@pytest.mark.parametrize("spawns", [False, True])
def test_a_single_call_that_spawns_more_is_shared_only_when_said(spawns):
    """One call returning two: with ``spawns`` (a pass over one partition, whose routing
    returns its column blocks) the pool joins in and both threads run the two (they wait for
    each other at a barrier); without, the single call and its two run on this thread."""
    import threading
    from concurrent.futures import ThreadPoolExecutor
    pool = ThreadPoolExecutor(1)
    threads = KernelThreads(pool, 2)
    barrier = threading.Barrier(2, timeout=10)
    where = []

    def block():
        where.append(threading.get_ident())
        if spawns:
            barrier.wait()  # both blocks at once, on two threads

    try:
        threads.share([lambda: [block, block]], spawns=spawns)
    finally:
        pool.shutdown()
    assert len(where) == 2
    assert len(set(where)) == (2 if spawns else 1)
    assert threading.get_ident() in where


def test_a_pass_over_one_partition_is_shared_out(monkeypatch):
    """A fit whose rows make one partition: its large passes' column blocks run on both
    threads (before, the pool never joined a one-call share), and the model is one thread's."""
    import threading
    from tests.core._helpers import fit_in_process
    monkeypatch.setattr(partition, "MIN_BLOCK_CELLS", 256)
    monkeypatch.setattr(histogram_source, "MIN_SHARED_PASS_CELLS", 4000)
    idents = set()
    real = partition.build_block

    def spy(work, block, n_blocks):
        idents.add(threading.get_ident())
        return real(work, block, n_blocks)

    monkeypatch.setattr(histogram_source, "build_block", spy)
    rng = np.random.default_rng(2)
    X = rng.normal(size=(3000, 6)).astype(np.float32)
    y = (X[:, 0] - X[:, 1] > 0).astype(float)
    params = dict(objective="binary", num_leaves=7, num_iterations=3, verbose=-1,
                  enable_bundle=False)
    one = fit_in_process(params, X, y, executor=LocalExecutor(1))
    idents.clear()
    two = fit_in_process(params, X, y, executor=LocalExecutor(2))
    assert threading.get_ident() in idents and len(idents) >= 2  # the pool's threads too
    np.testing.assert_array_equal(one.predict(X, raw_score=True), two.predict(X, raw_score=True))


def test_local_executor_shares_kernels_only_with_several_threads():
    one, two = LocalExecutor(1), LocalExecutor(2)
    try:
        assert one.kernel_threads is None
        assert isinstance(two.kernel_threads, KernelThreads)
    finally:
        one.close()
        two.close()


def test_in_process_fit_on_threads_equals_one_thread_and_lightgbm(monkeypatch):
    """Histogram blocks, column routing and the children's searches on the executor's threads
    change no bit of the model; LightGBM on the same rows is the oracle for the trees."""
    lgb = pytest.importorskip("lightgbm")
    from tests.core._helpers import fit_in_process
    monkeypatch.setattr(partition, "MIN_BLOCK_CELLS", 256)  # blocks even on these few rows
    monkeypatch.setattr(partition, "MIN_PARTITION_BLOCK_CELLS", 256)  # and partitions
    monkeypatch.setattr(partition, "MIN_THREADED_SEARCH_BINS", 1)  # and threaded searches
    # passes of at least 4,000 cells (a smaller child of 500 rows) shared out, the others not
    monkeypatch.setattr(histogram_source, "MIN_SHARED_PASS_CELLS", 4000)
    seen = []  # per partition and pass: the threads its blocks were cut for
    start = histogram_source.start_pass_work
    monkeypatch.setattr(histogram_source, "start_pass_work",
                        lambda s, n_threads, *a: seen.append(n_threads) or start(s, n_threads, *a))
    rng = np.random.default_rng(5)
    X = rng.normal(size=(4000, 8)).astype(np.float32)
    y = (X[:, 0] + np.sin(3 * X[:, 1]) + 0.3 * rng.normal(size=4000) > 0).astype(float)
    params = dict(objective="binary", num_leaves=15, learning_rate=0.2, num_iterations=8,
                  min_data_in_leaf=20, verbose=-1, enable_bundle=False)
    layout = dict(chunk_rows=700, partition_rows=700)  # 6 partitions, the last one smaller
    one = fit_in_process(dict(params, **layout), X, y, executor=LocalExecutor(1))
    two = fit_in_process(dict(params, **layout), X, y, executor=LocalExecutor(2))
    np.testing.assert_array_equal(one.predict(X, raw_score=True), two.predict(X, raw_score=True))
    assert seen.count(2) > 0 and seen.count(1) > 0  # large passes shared, small ones not
    for stats in two.tree_stats:  # the passes' time is reported as on one thread
        assert 0 < stats["seconds_histogram"] <= stats["seconds"]
    ref = lgb.train(dict(params, num_threads=1, deterministic=True), lgb.Dataset(X, y))
    np.testing.assert_allclose(two.predict(X, raw_score=True), ref.predict(X, raw_score=True),
                               rtol=1e-9, atol=1e-9)


def test_a_pass_with_a_partition_per_thread_builds_each_partition_whole(monkeypatch):
    """start_pass_work cuts a partition's pass into blocks for the threads only when the pass
    has fewer partitions than threads, or the partition's pass is large; either way the
    histograms are NumPy's."""
    monkeypatch.setattr(partition, "MIN_BLOCK_CELLS", 100)
    rng, offsets, X, g, h = _data(seed=7)
    cols = np.arange(X.shape[1], dtype=np.int64)
    rows = [np.sort(rng.choice(X.shape[0], 800, replace=False)).astype(np.int32)]
    ref = np.zeros((offsets[-1], 2))
    build_histogram_naive(X, offsets, cols, g, h, rows[0], ref)

    def start():
        return partition.PassWork(None, X, offsets, cols, g, h, rows,
                                  np.zeros((1, offsets[-1], 2)))

    for n_partitions, limit, cut in ((1, 10 ** 9, True), (2, 10 ** 9, False),
                                     (3, 10 ** 9, False), (2, 100, True)):
        monkeypatch.setattr(partition, "MIN_PARTITION_BLOCK_CELLS", limit)
        works = [None] * n_partitions
        calls = histogram_source.start_pass_work(start, 2, works, 0)
        assert (calls is not None) == cut, (n_partitions, limit)
        for call in calls or ():
            call()
        np.testing.assert_allclose(works[0].hist[0], ref, rtol=1e-12, atol=1e-9)


def test_in_process_siblings_are_written_into_their_parents_with_the_same_results(monkeypatch):
    """In process the finish step writes each sibling into its parent's array (the parent is
    never read again): the records, gains and children equal those of the step run on copies
    that it leaves as they were."""
    import copy
    from tests.core._helpers import fit_in_process
    real = histogram_source.finish_split_many
    calls = []

    def spy(parents, parts, plan, meta, params, node=None, branches=None, threads=None,
            consume_parents=False):
        saved = copy.deepcopy((parents, parts))
        untouched = copy.deepcopy(saved[0])
        out = real(parents, parts, plan, meta, params, node, branches, threads, consume_parents)
        ref = real(*saved, plan, meta, params, node, branches, None, False)
        np.testing.assert_array_equal(ref[0][1], out[0][1])  # feature gains
        assert ref[0][0] == out[0][0]  # records
        for got, want in zip(out[1], ref[1]):
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)
        for p, q in zip(saved[0], untouched):  # not consumed: the parents left as they were
            if p is not None:
                np.testing.assert_array_equal(p, q)
        written = [any(c is p for c in pair) for p, pair in zip(parents, out[1])
                   if p is not None]
        calls.append((consume_parents, written))
        return out

    monkeypatch.setattr(histogram_source, "finish_split_many", spy)
    rng = np.random.default_rng(4)
    X = rng.normal(size=(3000, 6)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(float)
    params = dict(objective="binary", num_leaves=15, num_iterations=3, verbose=-1)
    fit_in_process(params, X, y, executor=LocalExecutor(2))
    assert calls and all(consume for consume, _ in calls)
    written = [w for _, ws in calls for w in ws]
    assert written and all(written)


def test_in_process_partial_sums_are_made_in_the_first_partial_with_the_same_values(monkeypatch):
    """In process the reduction sums each group of partials into the first one's array (each
    partial is read by one sum, never run again): the same values as a sum into a new array,
    over pairs and the last sum of several partitions."""
    import copy
    from oocgbdt.core.partition import histograms_only
    from tests.core._helpers import fit_in_process
    real = histogram_source.sum_histograms
    seen = []

    def spy(parts, consume=False):
        saved = copy.deepcopy([histograms_only(p) for p in parts])
        out = real(parts, consume)
        np.testing.assert_array_equal(out, real(saved))
        if len(parts) > 1:
            seen.append((consume, np.shares_memory(out, histograms_only(parts[0]))))
        return out

    monkeypatch.setattr(histogram_source, "sum_histograms", spy)
    rng = np.random.default_rng(6)
    X = rng.normal(size=(4000, 6)).astype(np.float32)
    y = (X[:, 0] - X[:, 3] > 0).astype(float)
    params = dict(objective="binary", num_leaves=7, num_iterations=2, verbose=-1,
                  chunk_rows=700, partition_rows=700)  # 6 partitions: pairs, then the last sum
    fit_in_process(params, X, y, executor=LocalExecutor(2))
    assert seen and all(consume and shared for consume, shared in seen)
