"""A task body sharing its kernels out to threads (KernelThreads) gives what it gives on one
thread, checked against the kernels' NumPy twins and against the one-thread results."""
import numpy as np
import pytest

from oocgbdt.core import partition
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


@pytest.mark.parametrize("columns", [None, [1, 2, 3, 7, 8, 11]])
def test_build_histograms_on_threads_equals_one_thread_and_numpy(monkeypatch, columns):
    monkeypatch.setattr(partition, "MIN_BLOCK_CELLS", 64)  # share out even this small pass
    rng, offsets, X, g, h = _data()
    cols = np.arange(X.shape[1], dtype=np.int64) if columns is None else np.array(columns, np.int64)
    row_lists = [np.sort(rng.choice(X.shape[0], m, replace=False)).astype(np.int32)
                 for m in (1500, 700)]
    one = np.zeros((2, offsets[-1], 2))
    partition.build_histograms(X, offsets, cols, g, h, row_lists, one, None)
    threads = KernelThreads(3)
    try:
        many = np.zeros_like(one)
        partition.build_histograms(X, offsets, cols, g, h, row_lists, many, threads)
    finally:
        threads.close()
    np.testing.assert_array_equal(many, one)
    for j, rows in enumerate(row_lists):
        ref = np.zeros((offsets[-1], 2))
        build_histogram_naive(X, offsets, cols, g, h, rows, ref)
        np.testing.assert_allclose(many[j], ref, rtol=1e-12, atol=1e-9)
        assert many[j, 0, 0] == len(rows)  # the count row added once, not once per block


def test_kernel_threads_run_every_call_and_raise_after_all_ended():
    threads = KernelThreads(2)
    done = []
    try:
        assert threads.run([lambda i=i: i * i for i in range(5)]) == [0, 1, 4, 9, 16]

        def bad():
            raise ValueError("boom")

        with pytest.raises(ValueError, match="boom"):
            threads.run([bad] + [lambda i=i: done.append(i) for i in range(4)])
        assert sorted(done) == [0, 1, 2, 3]
    finally:
        threads.close()


def test_local_executor_shares_kernels_only_with_several_threads():
    one, two = LocalExecutor(1), LocalExecutor(2)
    try:
        assert one.kernel_threads is None
        assert isinstance(two.kernel_threads, KernelThreads)
    finally:
        one.close()
        two.close()


def test_in_process_fit_on_threads_equals_one_thread_and_lightgbm(monkeypatch):
    """Histogram blocks and the children's searches on kernel threads change no bit of the
    model; LightGBM on the same rows is the oracle for the trees themselves."""
    lgb = pytest.importorskip("lightgbm")
    import oocgbdt
    monkeypatch.setattr(partition, "MIN_BLOCK_CELLS", 256)
    rng = np.random.default_rng(5)
    X = rng.normal(size=(4000, 8)).astype(np.float32)
    y = (X[:, 0] + np.sin(3 * X[:, 1]) + 0.3 * rng.normal(size=4000) > 0).astype(float)
    params = dict(objective="binary", num_leaves=15, learning_rate=0.2, num_iterations=8,
                  min_data_in_leaf=20, verbose=-1, enable_bundle=False)
    one = oocgbdt.train(dict(params, num_threads=1), X, y)
    two = oocgbdt.train(dict(params, num_threads=2), X, y)
    np.testing.assert_array_equal(one.predict(X, raw_score=True), two.predict(X, raw_score=True))
    ref = lgb.train(dict(params, num_threads=1, deterministic=True), lgb.Dataset(X, y))
    np.testing.assert_allclose(two.predict(X, raw_score=True), ref.predict(X, raw_score=True),
                               rtol=1e-9, atol=1e-9)
