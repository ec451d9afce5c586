"""Sparse input out of core: scipy.sparse in memory, Dask arrays of scipy.sparse chunks, and the
sparse Zarr layout written by `oocgbdt convert` for LibSVM files."""
import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
import zarr
from sklearn.datasets import load_svmlight_file

import oocgbdt
from oocgbdt.cli import main
from oocgbdt.io.convert import convert
from oocgbdt.io.dataset import DATASET_VERSION, open_dataset, write_dataset


def _data(seed=0, n=3000):
    """One-hot groups, a signed sparse column with NaN, and one dense column."""
    rng = np.random.default_rng(seed)
    cols = []
    for g in (6, 4):
        level = rng.integers(-1, g, size=n)
        cols += [(level == k).astype(np.float32) for k in range(g)]
    signed = np.where(rng.random(n) < 0.1, rng.normal(size=n), 0.0)
    signed[rng.random(n) < 0.02] = np.nan
    X = np.stack(cols + [signed, rng.normal(size=n)], axis=1).astype(np.float32)
    y = X[:, :6] @ np.arange(6) + np.nan_to_num(X[:, 10]) + X[:, 11] + rng.normal(scale=0.1, size=n)
    return X, y


def _csr(X):
    m = sp.csr_matrix(np.nan_to_num(X, nan=999.0))
    m.data[m.data == 999.0] = np.nan
    return m


def test_scipy_sparse_trains_the_dense_model():
    X, y = _data()
    params = dict(objective="regression", n_estimators=15, chunk_rows=700)
    dense = oocgbdt.train(params, X, y, eval_set=[(X[:500], y[:500])], verbose=False)
    for m in (_csr(X), _csr(X).tocsc(), _csr(X).tocoo()):
        sparse = oocgbdt.train(params, m, y, eval_set=[(_csr(X[:500]), y[:500])], verbose=False)
        assert sparse == dense and sparse.bundles_ == dense.bundles_
        assert sparse.evals_result == dense.evals_result
        np.testing.assert_array_equal(sparse.predict(_csr(X)), dense.predict(X))
    unbundled = oocgbdt.train(dict(params, enable_bundle=False), _csr(X), y, verbose=False)
    np.testing.assert_allclose(unbundled.predict(X), dense.predict(X), rtol=1e-9, atol=1e-9)


def test_bin_sample_of_sparse_chunks_is_numpys_row_selection():
    """The bin sample of scipy.sparse chunks (stacked chunk by chunk in one task) holds the
    rows ``sample_row_indices`` draws, in order, as NumPy's selection of the dense rows:
    every row when the sample covers them, a sample that skips whole chunks, one chunk."""
    import dask
    from oocgbdt.dask.binning import bin_sample, sample_row_indices
    X, _ = _data(n=3000)
    compute = lambda a: dask.compute(a, scheduler="sync")[0]  # noqa: E731
    for chunk_rows, count in ((700, 200000), (700, 3), (500, 900), (3000, 1000)):
        Xd = da.from_array(_csr(X), chunks=(chunk_rows, X.shape[1]), asarray=False)
        params = dict(bin_construct_sample_cnt=count, data_random_seed=3)
        got = bin_sample(Xd, params, compute)
        idx = sample_row_indices(X.shape[0], count, 3)
        want = X if idx is None else X[idx]
        assert sp.issparse(got) and got.format == "csr" and got.dtype == np.float32
        np.testing.assert_array_equal(got.toarray(), want)


def test_bin_sample_of_in_memory_input_is_numpys_row_selection():
    """In-memory input is sampled without Dask: the same rows as NumPy's selection (every row,
    or the drawn ones), from a CSR matrix or a NumPy array; a derived Dask array (a cast) is
    sampled through Dask, with the same values."""
    import dask
    from oocgbdt.dask.binning import bin_sample, sample_row_indices
    from oocgbdt.dask.inputs import as_row_chunked, in_memory_source
    X, _ = _data(n=3000)
    compute = lambda a: dask.compute(a, scheduler="sync")[0]  # noqa: E731
    for count in (200000, 1000):
        params = dict(bin_construct_sample_cnt=count, data_random_seed=3)
        idx = sample_row_indices(X.shape[0], count, 3)
        want = X if idx is None else X[idx]
        for source in (_csr(X), X.copy()):
            Xd = as_row_chunked(source, chunk_rows=700)
            assert in_memory_source(Xd) is not None
            got = bin_sample(Xd, params, compute)
            assert sp.issparse(got) == sp.issparse(source) and got.dtype == np.float32
            np.testing.assert_array_equal(got.toarray() if sp.issparse(got) else got, want)
            derived = Xd.astype(np.float64)  # no longer the input itself
            assert in_memory_source(derived) is None
            through_dask = bin_sample(derived, params, compute)
            np.testing.assert_array_equal(
                through_dask.toarray() if sp.issparse(through_dask) else through_dask, want)


def test_training_never_writes_to_in_memory_input():
    """The input's buffers may be read by the fit (the bin sample reads them in place), never
    written: a fit on read-only NumPy and CSR buffers gives the model of writable copies."""
    X, y = _data(n=2000)
    params = dict(objective="regression", n_estimators=5, verbose=False)
    frozen = np.nan_to_num(X)
    frozen.flags.writeable = False
    m = _csr(X)
    for a in (m.data, m.indices, m.indptr):
        a.flags.writeable = False
    assert oocgbdt.train(params, frozen, y) == oocgbdt.train(params, frozen.copy(), y)
    assert oocgbdt.train(params, m, y) == oocgbdt.train(params, _csr(X), y)


def test_dask_array_of_sparse_chunks_on_a_cluster(client):
    X, y = _data(1)
    Xd = da.from_array(_csr(X), chunks=(800, X.shape[1]), asarray=False)
    yd = da.from_array(y, chunks=800)
    params = dict(objective="regression", n_estimators=10, chunk_rows=800)
    remote = oocgbdt.train(params, Xd, yd, client=client, verbose=False)
    local = oocgbdt.train(params, X, y, verbose=False)
    assert remote == local
    lazy = remote.predict(Xd)
    assert isinstance(lazy, da.Array)
    np.testing.assert_array_equal(lazy.compute(), local.predict(X))


def test_sparse_store_roundtrip_and_layout(tmp_path):
    X, y = _data(2, n=1000)
    m = _csr(X)
    ds = write_dataset(tmp_path / "s", m, y, chunk_rows=300)
    assert ds.sparse and ds.X.chunks[0] == (300, 300, 300, 100)
    g = zarr.open_group(str(tmp_path / "s"), mode="r")
    assert g.attrs["version"] == DATASET_VERSION == 2
    assert g["X"].attrs["layout"] == "csr" and g["X"].attrs["shape"] == [1000, 12]
    assert g["X/indptr"].shape == (1001,) and g["X/data"].shape == (m.nnz,)
    block = ds.X.blocks[1].compute()
    assert sp.issparse(block) and block.shape == (300, 12)
    back = ds.X.compute()
    np.testing.assert_array_equal(back.toarray(), m.toarray())
    np.testing.assert_array_equal(ds.y.compute(), y)
    # dense and sparse stores of the same data train the same model, from their paths too
    dense_ds = write_dataset(tmp_path / "d", X, y, chunk_rows=300)
    assert not dense_ds.sparse
    params = dict(objective="regression", n_estimators=5, chunk_rows=300)
    a = oocgbdt.train(params, str(tmp_path / "s"), ds.y, verbose=False)
    b = oocgbdt.train(params, dense_ds.X, dense_ds.y, verbose=False)
    assert a == b


def _write_libsvm(path, X, y):
    with open(path, "w") as fh:
        for row, label in zip(X, y):
            nz = np.flatnonzero(row)
            fh.write(f"{label:g} " + " ".join(f"{j + 1}:{row[j]:g}" for j in nz) + "\n")


def test_convert_libsvm_picks_the_sparse_layout_for_sparse_files(tmp_path):
    rng = np.random.default_rng(3)
    X = np.where(rng.random((400, 50)) < 0.04, rng.integers(1, 5, size=(400, 50)), 0).astype(np.float32)
    y = rng.integers(0, 2, size=400).astype(float)
    src = tmp_path / "sparse.svm"
    _write_libsvm(src, X, y)
    X_ref, y_ref = load_svmlight_file(str(src), n_features=50, zero_based=False, dtype=np.float32)
    ds = convert(src, tmp_path / "auto", chunk_rows=128)
    assert ds.sparse and ds.n_features == 50
    np.testing.assert_array_equal(ds.X.compute().toarray(), X_ref.toarray())
    np.testing.assert_array_equal(ds.y.compute(), y_ref)
    # with n_features and the index base given there is no first pass: the first block decides
    ds2 = convert(src, tmp_path / "given", chunk_rows=128, n_features=50, zero_based=False)
    assert ds2.sparse
    assert not convert(src, tmp_path / "dense", chunk_rows=128, sparse=False).sparse
    with pytest.raises(ValueError, match="sparse"):
        convert(src, tmp_path / "bad", sparse="yes")
    assert main(["convert", str(src), str(tmp_path / "cli"), "--layout", "dense"]) == 0
    assert not open_dataset(tmp_path / "cli").sparse


def test_insteval_from_a_libsvm_converted_sparse_store(shared_data, tmp_path):
    """insteval's one-hot LibSVM file (0.15% dense) converts to the sparse layout; its 4,126
    columns (2,480 not trivial) form 6 bundles, one per attribute, and the model is the same
    with bundling on and off."""
    src = shared_data / "insteval" / "insteval_onehot.svm"
    ds = convert(src, tmp_path / "insteval", chunk_rows=20_000)
    assert ds.sparse and (ds.n_rows, ds.n_features) == (73_421, 4_126)
    full = oocgbdt.train(dict(objective="regression", n_estimators=2), ds.X, ds.y, verbose=False)
    assert len(full.bundles_) == 6
    blocks = [range(0, 2972), range(2972, 4100), range(4100, 4104), range(4104, 4110),
              range(4110, 4112), range(4112, 4126)]
    for bundle in full.bundles_:
        assert sum(set(bundle) <= set(b) for b in blocks) == 1
    # bundling on/off on a row subset (the unbundled run holds 4,126 binned columns)
    X, y = ds.X[:15_000].compute(), ds.y[:15_000].compute()
    params = dict(objective="regression", n_estimators=8, num_leaves=15)
    on = oocgbdt.train(params, X, y, verbose=False)
    off = oocgbdt.train(dict(params, enable_bundle=False), X, y, verbose=False)
    assert on == off
    np.testing.assert_array_equal(on.predict(X), off.predict(X))
