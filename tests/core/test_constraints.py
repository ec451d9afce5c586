"""Leaf-output constraints and regularizers against LightGBM: path_smooth, max_delta_step,
monotone_constraints (basic method) and monotone_penalty give LightGBM's trees, and constrained
models are monotone on a dense grid.

Data: 3,000 rows of lightgbm_regression (HIGGS features, 0/1 label), 10 trees of 31 leaves.
Tolerances as ``tests/dask/test_lightgbm_parity.py``: the trees' structure, row counts and
every training row's leaf exactly; leaf values and raw scores up to float64 summation order
(1e-10 of a tree's largest leaf value, 1e-12 of the largest score). Parameters are chosen
away from ties that rounding alone decides: a cap or bound that clamps both children of every
candidate to one value gives all candidates one gain
(``docs/decisions/leaf-constraints.md``).
"""
import numpy as np
import pytest

from oocgbdt.core.split import check_monotone_constraints
from oocgbdt.params import resolve_params
from tests.conftest import load_lightgbm_tsv
from tests.core._helpers import fit_in_process
from tests.core.test_split_counts import _assert_same_trees, _lgb_nodes

lgb = pytest.importorskip("lightgbm")

LEAF_RTOL = 1e-10
SCORE_RTOL = 1e-12
N_TREES = 10
BASE = dict(objective="regression", num_leaves=31, learning_rate=0.1, max_bin=255)
MONO = [1, -1, 1] + [0] * 25


@pytest.fixture(scope="module")
def data(shared_data):
    X, y = load_lightgbm_tsv(shared_data / "lightgbm_regression" / "regression.train")
    return X[:3000], y[:3000]


def _pair(params, X, y):
    p = dict(BASE, **params)
    theirs = lgb.train(dict(p, enable_bundle=False, deterministic=True, num_threads=1,
                            verbose=-1), lgb.Dataset(X, y), num_boost_round=N_TREES)
    return fit_in_process(dict(p, n_estimators=N_TREES), X, y), theirs


def _assert_lightgbm(ours, theirs, X):
    _assert_same_trees(ours, theirs, X, N_TREES)
    dump = theirs.dump_model()["tree_info"]
    init = float(np.atleast_1d(ours.init_score)[0])
    for i, tree in enumerate(ours.trees[:N_TREES]):
        _, leaves = _lgb_nodes(dump[i])
        values = np.array([leaves[j]["leaf_value"] for j in range(tree.n_leaves)])
        scale = np.abs(values).max()
        if i == 0 and tree.n_leaves > 1:
            values = values - init
        np.testing.assert_allclose(tree.leaf_value, values, rtol=0, atol=LEAF_RTOL * scale,
                                   err_msg=f"tree {i}")
    raw = theirs.predict(X, raw_score=True)
    np.testing.assert_allclose(ours.predict(X, raw_score=True), raw, rtol=0,
                               atol=SCORE_RTOL * np.abs(raw).max())


@pytest.mark.parametrize("params", [
    dict(path_smooth=5.0),
    dict(max_delta_step=0.05),
    dict(path_smooth=2.0, max_delta_step=0.1, lambda_l1=0.5),
    dict(monotone_constraints=MONO),
    dict(monotone_constraints=MONO, monotone_penalty=1.5),
    dict(monotone_constraints=[1, -1, 1, 0, 1, -1, 1] * 4, path_smooth=1.0),
], ids=["path_smooth", "max_delta_step", "smooth+cap+l1", "monotone", "monotone_penalty",
        "monotone+smooth"])
def test_trees_equal_lightgbm(data, params):
    X, y = data
    ours, theirs = _pair(params, X, y)
    _assert_lightgbm(ours, theirs, X)


def test_max_delta_step_caps_every_leaf(data):
    X, y = data
    ours, _ = _pair(dict(max_delta_step=0.05, learning_rate=1.0), X, y)
    values = np.concatenate([t.leaf_value for t in ours.trees])
    assert np.abs(values).max() <= 0.05 + 1e-15
    assert (np.abs(values) > 0.05 - 1e-12).any()  # the cap binds


def _sweep_steps(model, rows, f, X):
    """Prediction steps (rows x 199) along 200 values of feature ``f`` spanning its range
    (and beyond), the other features of each row fixed."""
    grid = np.linspace(X[:, f].min() - 1, X[:, f].max() + 1, 200, dtype=np.float32)
    sweep = np.repeat(rows, len(grid), axis=0)
    sweep[:, f] = np.tile(grid, len(rows))
    return np.diff(model.predict(sweep, raw_score=True).reshape(len(rows), len(grid)), axis=1)


def test_monotone_on_a_dense_grid(data):
    """For 40 rows, each constrained feature swept over 200 values (the others fixed):
    predictions never go against the constraint."""
    X, y = data
    mono = [1, -1, 0, 1] + [0] * 24
    ours, _ = _pair(dict(monotone_constraints=mono, num_leaves=15), X, y)
    rows = X[np.random.default_rng(0).choice(len(X), 40, replace=False)]
    for f in np.flatnonzero(mono):
        assert (mono[f] * _sweep_steps(ours, rows, f, X) >= 0).all(), f"feature {f}"
    # and the constraint binds: the same fit without it is not increasing in feature 0
    free, _ = _pair(dict(num_leaves=15), X, y)
    assert (_sweep_steps(free, rows, 0, X) < 0).any()


def test_monotone_constraints_are_checked_against_the_data():
    params = resolve_params(dict(monotone_constraints=[1, 0, -1]))
    check_monotone_constraints(params, 3)
    with pytest.raises(ValueError, match="monotone_constraints must have one entry.*expected 4, got 3"):
        check_monotone_constraints(params, 4)
    with pytest.raises(ValueError, match=r"categorical feature\(s\) \[2\]"):
        check_monotone_constraints(params, 3, categorical=[1, 2])
    check_monotone_constraints(resolve_params({}), 5)


def test_monotone_length_is_checked_before_training(data):
    X, y = data
    with pytest.raises(ValueError, match="expected 28, got 3"):
        fit_in_process(dict(BASE, monotone_constraints=[1, 0, 1], n_estimators=1), X, y)


@pytest.mark.parametrize("params, match", [
    (dict(monotone_constraints_method="intermediate"), "must be 'basic'.*not implemented"),
    (dict(mc_method="advanced"), "must be 'basic'.*not implemented"),
    (dict(monotone_constraints=[1, 2]), "-1, 0 or 1"),
    (dict(path_smooth=-1.0), "path_smooth"),
    (dict(monotone_penalty=-0.5), "monotone_penalty"),
])
def test_bad_values_are_refused(params, match):
    with pytest.raises(ValueError, match=match):
        resolve_params(params)


def test_lightgbm_aliases():
    p = resolve_params(dict(mc="1,0,-1", max_leaf_output=0.3, mc_penalty=2.0,
                            monotone_constraining_method="basic"))
    assert p["monotone_constraints"] == [1, 0, -1]
    assert p["max_delta_step"] == 0.3 and p["monotone_penalty"] == 2.0
    assert resolve_params(dict(monotonic_cst=[0, 1]))["monotone_constraints"] == [0, 1]
