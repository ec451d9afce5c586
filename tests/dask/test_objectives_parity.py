"""The objectives beyond L2/binary/softmax against LightGBM on real data, and leaf renewal out of
core.

Parity: the same trees as LightGBM (split features, thresholds, row counts, every training row's
leaf) and leaf values and raw scores within the tolerances of ``test_lightgbm_parity.py`` (float64
summation order), for a regression loss with renewed leaves (``regression_l1``, with weights),
a smooth one (``huber``), count losses (``poisson``, ``tweedie``), ``cross_entropy`` and
``multiclassova``, on rows cut into several partitions; ``reg_sqrt`` with the losses it applies
to (small synthetic data, labels of both signs).

Renewal: leaf values of ``regression_l1``, ``quantile`` and ``mape`` are exact weighted
percentiles selected from reduced counts, so the model is the same, bit for bit, for 1, 3 and 8
partitions and on 1 and 2 workers.
"""
import dask.array as da
import numpy as np
import pytest

import oocgbdt
from tests.conftest import load_lightgbm_tsv, load_pmlb
from tests.core.test_split_counts import _leaf_of_rows
from tests.dask.test_lightgbm_parity import _assert_lightgbm_trees

lgb = pytest.importorskip("lightgbm")

PARAMS = dict(num_leaves=15, learning_rate=0.1, max_bin=255)
N_ROWS = 4000  # a slice of california_housing, for speed


@pytest.fixture(scope="module")
def housing(shared_data):
    """california_housing, the first 4,000 rows; target in units of 100k (positive)."""
    X, y = load_pmlb(shared_data / "california_housing" / "537_houses.tsv.gz")
    return X[:N_ROWS], (y[:N_ROWS] / 1e5).astype(np.float32)


def _lightgbm(params, X, y, n_trees, weight=None):
    return lgb.train(dict(PARAMS, **params, enable_bundle=False, deterministic=True,
                          num_threads=1, verbose=-1),
                     lgb.Dataset(X, y, weight=weight), num_boost_round=n_trees)


@pytest.mark.parametrize("params, weighted", [
    ({"objective": "regression_l1"}, True),
    ({"objective": "quantile", "alpha": 0.7}, False),
    ({"objective": "huber", "alpha": 0.5}, False),
    ({"objective": "poisson"}, False),
    ({"objective": "tweedie", "tweedie_variance_power": 1.3}, True),
])
def test_regression_losses_equal_lightgbm(housing, params, weighted):
    X, y = housing
    w = np.random.default_rng(0).uniform(0.5, 2.0, len(y)).astype(np.float32) if weighted else None
    n_trees = 12
    ours = oocgbdt.train(dict(PARAMS, **params, n_estimators=n_trees, chunk_rows=1000,
                              partition_rows=1000), X, y, sample_weight=w, verbose=False)
    assert ours.cache_report["n_partitions"] == {"train": 4}
    _assert_lightgbm_trees(ours, _lightgbm(params, X, y, n_trees, w), X, X[::5], n_trees)


def test_cross_entropy_and_multiclassova_equal_lightgbm(shared_data):
    X, y = load_lightgbm_tsv(shared_data / "lightgbm_binary" / "binary.train")
    X, y = X[:3000], y[:3000]
    # Probability labels: the binary label softened by a feature.
    p = np.clip(0.8 * y + 0.1 * (X[:, 0] > 1), 0, 1).astype(np.float32)
    ours = oocgbdt.train(dict(PARAMS, objective="cross_entropy", n_estimators=10,
                              chunk_rows=1000), X, p, verbose=False)
    _assert_lightgbm_trees(ours, _lightgbm({"objective": "cross_entropy"}, X, p, 10), X, X[::3], 10)
    X, y = load_lightgbm_tsv(shared_data / "lightgbm_multiclass" / "multiclass.train")
    X, y = X[:2000], y[:2000]
    params = {"objective": "multiclassova", "num_class": 5}
    ours = oocgbdt.train(dict(PARAMS, **params, n_estimators=4, chunk_rows=700), X, y,
                         verbose=False)
    model = _lightgbm(params, X, y, 4)
    np.testing.assert_allclose(ours.predict(X, raw_score=True),
                               model.predict(X, raw_score=True), rtol=0, atol=1e-10)
    np.testing.assert_allclose(ours.predict(X), model.predict(X), rtol=0, atol=1e-10)


def _renewal_fit(X, y, w, params, chunk_rows, client=None):
    Xd, yd, wd = X, y, w
    if client is not None:
        Xd = da.from_array(X, chunks=(chunk_rows, -1))
        yd = da.from_array(y, chunks=chunk_rows)
        wd = None if w is None else da.from_array(w, chunks=chunk_rows)
    return oocgbdt.train(dict(PARAMS, **params, n_estimators=6, chunk_rows=chunk_rows,
                              partition_rows=chunk_rows), Xd, yd, sample_weight=wd,
                         client=client, verbose=False)


@pytest.mark.parametrize("params, weighted", [
    ({"objective": "regression_l1"}, True),
    ({"objective": "quantile", "alpha": 0.3, "bagging_fraction": 0.7, "bagging_freq": 1}, False),
    ({"objective": "mape"}, False),
])
def test_renewed_leaves_do_not_depend_on_partitions_or_workers(housing, params, weighted):
    from distributed import Client, LocalCluster

    X, y = housing
    X, y = X[:2400], y[:2400]
    w = np.random.default_rng(1).uniform(0.2, 3.0, len(y)).astype(np.float32) if weighted else None
    fits = {n: _renewal_fit(X, y, w, params, len(y) // n) for n in (1, 3, 8)}
    assert fits[8].cache_report["n_partitions"] == {"train": 8}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        fits["2 workers"] = _renewal_fit(X, y, w, params, 300, client=client)
    ref = fits[1]
    for name, fit in fits.items():
        assert len(fit.trees) == len(ref.trees) == 6
        np.testing.assert_array_equal(fit.init_score, ref.init_score, err_msg=str(name))
        for a, b in zip(fit.trees, ref.trees):
            np.testing.assert_array_equal(a.split_feature, b.split_feature, err_msg=str(name))
            np.testing.assert_array_equal(a.leaf_value, b.leaf_value, err_msg=str(name))
    # The oracle: each leaf of the first tree is the definition's percentile of its rows'
    # residuals from the init score, times the learning rate.
    from oocgbdt.core.percentile import lightgbm_percentile
    from oocgbdt.core.objectives import get_objective

    obj = get_objective(params)
    tree = ref.trees[0]
    leaf = _leaf_of_rows(tree, X)
    res = y.astype(np.float64) - ref.init_score[0]
    pw = obj.percentile_weights(y, w)
    if "bagging_fraction" not in params:  # with bagging, only the bagged rows count
        for lf in range(tree.n_leaves):
            m = leaf == lf
            expected = lightgbm_percentile(res[m], None if pw is None else pw[m], obj.renew_alpha)
            assert tree.leaf_value[lf] == expected * 0.1


@pytest.mark.parametrize("name, weighted", [
    ("regression", True), ("regression_l1", False), ("fair", False), ("quantile", True),
    ("mape", False),
])
def test_reg_sqrt_trains_as_lightgbm(name, weighted):
    """``reg_sqrt``: the same model as LightGBM's (labels of both signs), predictions squared
    back with their sign, the objective line ``"<name> sqrt"``, which LightGBM reads back."""
    rng = np.random.default_rng(11)
    n = 400
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = ((X[:, 0] * 3 + X[:, 1] ** 2 + rng.normal(size=n)) * 5).astype(np.float32)
    w = rng.uniform(0.5, 2.0, n).astype(np.float32) if weighted else None
    params = dict(objective=name, reg_sqrt=True, num_leaves=7, min_data_in_leaf=5,
                  learning_rate=0.2)
    ours = oocgbdt.train(dict(params, n_estimators=6), X, y, sample_weight=w, verbose=False)
    model = lgb.train(dict(params, verbose=-1, deterministic=True, num_threads=1),
                      lgb.Dataset(X, y, weight=w), num_boost_round=6)
    raw = model.predict(X, raw_score=True)
    np.testing.assert_allclose(ours.predict(X, raw_score=True), raw, rtol=0, atol=1e-9)
    np.testing.assert_allclose(ours.predict(X), np.sign(raw) * raw * raw, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ours.predict(X), model.predict(X), rtol=1e-9, atol=1e-9)
    assert ours.objective.lightgbm_objective_string == f"{name} sqrt"
    exported = lgb.Booster(model_str=ours.model_to_string(format="lightgbm"))
    np.testing.assert_allclose(exported.predict(X), ours.predict(X), rtol=1e-12, atol=1e-12)


def test_multiclass_auc_mu_evals_equal_lightgbm(shared_data):
    """``metric=auc_mu`` with ``auc_mu_weights``, evaluated in chunks during training on a
    validation set with sample weights: LightGBM's ``evals_result_`` round by round."""
    X, y = load_lightgbm_tsv(shared_data / "lightgbm_multiclass" / "multiclass.train")
    X, y, Xv, yv = X[:1500], y[:1500], X[1500:2100], y[1500:2100]
    wv = np.random.default_rng(4).uniform(0.5, 2.0, len(yv)).astype(np.float32)
    params = {"objective": "multiclass", "num_class": 5, "metric": ["multi_logloss", "auc_mu"],
              "auc_mu_weights": list(range(25))}
    ours = oocgbdt.train(dict(PARAMS, **params, n_estimators=3, chunk_rows=200), X, y,
                         eval_set=[(Xv, yv)], eval_sample_weight=[wv], verbose=False)
    evals = {}
    train = lgb.Dataset(X, y)
    lgb.train(dict(PARAMS, **params, enable_bundle=False, deterministic=True, num_threads=1,
                   verbose=-1), train, num_boost_round=3,
              valid_sets=[lgb.Dataset(Xv, yv, weight=wv, reference=train)],
              valid_names=["valid_0"], callbacks=[lgb.record_evaluation(evals)])
    for name in ("multi_logloss", "auc_mu"):
        np.testing.assert_allclose(ours.evals_result["valid_0"][name], evals["valid_0"][name],
                                   rtol=0, atol=1e-12, err_msg=name)
