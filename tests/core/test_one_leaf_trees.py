"""Trees that cannot split: output 0 (LightGBM) and no crash when every hessian is 0."""
import numpy as np
import pytest

from oocgbdt.kernels.splitting import find_best_thresholds, find_best_thresholds_naive
from tests.core._helpers import fit_in_process


def _classes(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = np.digitize(X[:, 0], [-0.5, 0.5]).astype(np.float64)
    return X, y


def test_a_tree_without_split_adds_nothing_as_in_lightgbm():
    """Class 3 has no rows: every tree of it has one leaf; LightGBM keeps that leaf at 0."""
    lgb = pytest.importorskip("lightgbm")
    X, y = _classes()
    y[0] = 4  # a one-row class next to the empty one
    booster = fit_in_process(dict(objective="multiclass", num_class=5, n_estimators=30), X, y)
    empty = [t for t in booster.trees if t.class_idx == 3]
    assert len(empty) == 30 and all(t.n_leaves == 1 and t.leaf_value[0] == 0.0 for t in empty)
    model = lgb.train(dict(objective="multiclass", num_class=5, verbose=-1, num_threads=1),
                      lgb.Dataset(X, y), 30)
    ours, theirs = booster.predict(X, raw_score=True), model.predict(X, raw_score=True)
    # Equal up to the init score's last digits (log of LightGBM's kEpsilon prior, 1e-10
    # relative); 30 trees of -0.08 each would move it by 2.4.
    np.testing.assert_allclose(ours[:, 3], theirs[:, 3], rtol=1e-9)


def test_hessians_that_underflow_to_zero_stop_splits_instead_of_crashing():
    """A one-row class at a high learning rate: its float32 hessians all reach exactly 0."""
    X, y = _classes()
    y[0] = 3
    booster = fit_in_process(dict(objective="multiclass", num_class=4, n_estimators=40,
                                  learning_rate=0.5), X, y)
    assert np.isfinite(booster.predict(X, raw_score=True)).all()


@pytest.mark.parametrize("kernel", [find_best_thresholds, find_best_thresholds_naive])
def test_split_search_of_a_zero_hessian_leaf_finds_nothing(kernel):
    hist = np.zeros((4, 3))
    hist[:, 0] = [1.0, -2.0, 0.5, 0.5]
    hist[:, 2] = 30.0
    out = np.empty((1, 6))
    kernel(hist, np.array([0, 4]), np.array([4], np.int32), np.zeros(1, np.uint8),
           np.zeros(1, np.int32), np.zeros(1, np.int32), np.ones(1, bool), 0.0, 0.0, 120.0, 0.0,
           0.0, 20.0, 0.0, 0.0, out)
    assert out[0, 0] == -np.inf
