"""Sparse (scipy.sparse) samples and chunks give exactly the bins of their dense copies."""
import numpy as np
import scipy.sparse as sp

from oocgbdt.core.bin_mapper import BinMapper
from oocgbdt.kernels.predict import predict_raw, predict_raw_sparse, predict_raw_sparse_naive


def _sparse_data(seed=0, n=3000, F=12):
    rng = np.random.default_rng(seed)
    X = np.where(rng.random((n, F)) < 0.15, rng.normal(size=(n, F)) * 3, 0.0).astype(np.float32)
    X[rng.random((n, F)) < 0.01] = np.nan
    X[:, 0] = np.where(rng.random(n) < 0.9, 2.5, 0.0)  # most frequent bin is not the zero bin
    return X


def test_bin_mapper_fit_and_transform_on_sparse_equal_dense():
    X = _sparse_data()
    csr = sp.csr_matrix(np.nan_to_num(X, nan=123.0))
    csr.data[csr.data == 123.0] = np.nan
    for params in (dict(), dict(zero_as_missing=True), dict(max_bin=15, min_data_in_bin=1)):
        dense = BinMapper(**params).fit(X, 5000)
        sparse = BinMapper(**params).fit(csr, 5000)
        assert sparse.to_dict() == dense.to_dict()
        np.testing.assert_array_equal(sparse.transform(csr), dense.transform(X))
        np.testing.assert_array_equal(sparse.transform(csr.tocsc()[:100]), dense.transform(X[:100]))


def test_predict_raw_sparse_matches_dense():
    rng = np.random.default_rng(1)
    X = _sparse_data(1, n=500)
    csr = sp.csr_matrix(np.nan_to_num(X, nan=123.0))
    csr.data[csr.data == 123.0] = np.nan
    csr.sort_indices()
    # two trees of 3 splits over features 0..11, with every missing type and default side
    split_feature = rng.integers(0, 12, size=6).astype(np.int32)
    threshold = rng.normal(size=6)
    threshold[0] = 0.0
    decision_type = np.array([0, 2, 4, 6, 8, 10], np.uint8)
    left = np.array([1, ~0, ~2, 1, ~0, ~1], np.int32)   # child pointers are per tree
    right = np.array([2, ~1, ~3, 2, ~2, ~3], np.int32)
    args = (split_feature, threshold, decision_type, left, right, rng.normal(size=8),
            np.array([0, 3, 6], np.int64), np.array([0, 4, 8], np.int64), np.array([0, 1], np.int32),
            np.zeros(1, np.int64), np.zeros(0, np.uint32))
    ref = np.zeros((500, 2))
    predict_raw(X, *args, ref)
    got = np.zeros((500, 2))
    predict_raw_sparse(csr.indptr, csr.indices, csr.data, *args, got)
    naive = np.zeros((500, 2))
    predict_raw_sparse_naive(csr.indptr, csr.indices, csr.data, *args, naive, n_features=12)
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(naive, ref)
