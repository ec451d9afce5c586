"""In-memory inputs are wrapped as Dask arrays without a copy, and nothing writes to them."""
import numpy as np
import pytest
import scipy.sparse as sp

import oocgbdt
from oocgbdt.dask.inputs import as_dask_array


def _dense(n=3000, f=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + 0.5 * rng.normal(size=n) > 0).astype(np.float64)
    return X, y


def test_numpy_chunks_are_views_of_the_input_and_hold_its_values():
    X, _ = _dense()
    arr = as_dask_array(X, "X", ndim=2, chunk_rows=1000)
    assert arr.chunks[0] == (1000, 1000, 1000)
    blocks = [d.compute(scheduler="sync") for d in arr.to_delayed()[:, 0]]
    np.testing.assert_array_equal(np.concatenate(blocks), X)
    # Views, not a copy made when wrapping (dask.array.from_array copies by default).
    assert all(np.shares_memory(b, X) for b in blocks)


def test_sparse_chunks_hold_the_input_rows():
    rng = np.random.default_rng(1)
    S = sp.random(2500, 40, density=0.05, format="csr", dtype=np.float32, random_state=rng)
    arr = as_dask_array(S, "X", ndim=2, chunk_rows=1000)
    got = sp.vstack([d.compute(scheduler="sync") for d in arr.to_delayed()[:, 0]])
    assert got.shape == S.shape and (got != S).nnz == 0


@pytest.mark.parametrize("sampling", [{}, dict(bagging_fraction=0.5, bagging_freq=1)])
def test_training_and_prediction_leave_read_only_inputs_as_they_were(sampling):
    X, y = _dense()
    w = np.random.default_rng(2).uniform(0.5, 2.0, size=y.shape[0])
    Xv, yv = _dense(800, seed=3)
    S = sp.csr_matrix(np.where(np.isnan(X), 0.0, X) * (np.abs(X) > 1.0))
    saved = [a.copy() for a in (X, y, w, Xv, yv, S.data, S.indices, S.indptr)]
    for a in (X, y, w, Xv, yv, S.data, S.indices, S.indptr):
        a.flags.writeable = False  # a write anywhere raises instead of changing them
    params = dict(objective="binary", n_estimators=5, num_leaves=7, verbose=False, **sampling)
    for data in (X, S):
        booster = oocgbdt.train(params, data, y, sample_weight=w,
                                eval_set=[(Xv, yv)] if data is X else None)
        again = oocgbdt.train(params, data.copy(), y.copy(), sample_weight=w.copy(),
                              eval_set=[(Xv.copy(), yv.copy())] if data is X else None)
        np.testing.assert_array_equal(booster.predict(data), again.predict(data.copy()))
    for before, after in zip(saved, (X, y, w, Xv, yv, S.data, S.indices, S.indptr)):
        np.testing.assert_array_equal(before, after)
