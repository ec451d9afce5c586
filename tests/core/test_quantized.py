"""Quantized training (use_quantized_grad) against LightGBM's quantized mode and against
unquantized training."""
import numpy as np
import pytest

from tests.conftest import load_lightgbm_tsv
from tests.core._helpers import fit_in_process

lgb = pytest.importorskip("lightgbm")


def _data(n=3000, F=6, seed=0, nan=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, F)).astype(np.float32)
    if nan:
        X[rng.uniform(size=X.shape) < nan] = np.nan
    Z = np.nan_to_num(X)
    y = (Z[:, 0] + 0.5 * Z[:, 1] ** 2 - Z[:, 2] * Z[:, 3] + rng.normal(size=n) * 0.5 > 0.3)
    return X, y.astype(np.float64), Z[:, 0] + 2 * Z[:, 1] + rng.normal(size=n)


def _split_lines(model_text):
    return [l for l in model_text.splitlines()
            if l.startswith(("split_feature=", "threshold=", "default_left="))]


# Deterministic rounding (stochastic_rounding=False): LightGBM's quantized trees are a
# function of the data, so they must be reproduced exactly: the same splits, and leaf values
# from the same integer sums times the same scales. Raw scores are compared to 1e-12 (sums of
# 10 leaf values; they came out bit-identical when this was written).
@pytest.mark.parametrize("case", [
    dict(),                                                   # binary, 4 levels
    dict(nan=0.1, quant_train_renew_leaf=True),               # NaN bins, leaf renewal
    dict(objective="regression", num_grad_quant_bins=16),     # constant hessian: int hessian 1
    # min_gain_to_split: this case has leaves whose rows all share one integer gradient; their
    # splits' gains are rounding noise (~1e-13, equal child outputs), whose order among
    # leaves can differ from LightGBM's in the last bits (same predictions).
    dict(objective="multiclass", num_class=3, min_gain_to_split=1e-9),
    dict(lambda_l1=0.5, lambda_l2=1.0, max_delta_step=0.3, path_smooth=2.0),
    dict(bagging_fraction=0.4, bagging_freq=1),               # LightGBM trains on the bag's copy
])
def test_deterministic_quantized_trees_equal_lightgbm(case):
    case = dict(case)
    X, y, y_reg = _data(nan=case.pop("nan", 0.0))
    objective = case.get("objective", "binary")
    target = {"binary": y, "regression": y_reg,
              "multiclass": (X[:, 0] > 0).astype(int) + (np.nan_to_num(X[:, 1]) > 0.5)}[objective]
    params = dict(objective=objective, num_leaves=15, learning_rate=0.1, use_quantized_grad=True,
                  stochastic_rounding=False, verbose=-1, num_threads=1, min_data_in_leaf=20)
    params.update(case)
    ours = fit_in_process(dict(params, n_estimators=10), X, target)
    ref = lgb.train(params, lgb.Dataset(X, target), num_boost_round=10)
    assert _split_lines(ours.model_to_string(format="lightgbm")) == _split_lines(ref.model_to_string())
    np.testing.assert_allclose(ours.predict(X, raw_score=True), ref.predict(X, raw_score=True),
                               rtol=0, atol=1e-12)
    # and the quantization mattered: unquantized LightGBM differs
    plain = lgb.train(dict(params, use_quantized_grad=False), lgb.Dataset(X, target),
                      num_boost_round=10)
    assert np.abs(plain.predict(X, raw_score=True) - ref.predict(X, raw_score=True)).max() > 1e-3


def test_bundled_features_equal_lightgbm(shared_data):
    """Exclusive Feature Bundling: the bundles' integer histograms expanded per feature (the
    default bin as the leaf minus the other bins, exact in integers) give LightGBM's trees."""
    from sklearn.datasets import load_svmlight_file
    Xs, y = load_svmlight_file(str(shared_data / "agaricus" / "agaricus.txt.train"))
    X = Xs.toarray().astype(np.float32)
    params = dict(objective="binary", num_leaves=7, use_quantized_grad=True,
                  stochastic_rounding=False, verbose=-1, num_threads=1, min_data_in_leaf=5)
    ours = fit_in_process(dict(params, n_estimators=5), X, y)
    ref = lgb.train(params, lgb.Dataset(X, y), num_boost_round=5)
    assert any(len(b) > 1 for b in ours.bundles_)  # features were merged into bundles
    assert _split_lines(ours.model_to_string(format="lightgbm")) == _split_lines(ref.model_to_string())
    np.testing.assert_allclose(ours.predict(X, raw_score=True), ref.predict(X, raw_score=True),
                               rtol=0, atol=1e-12)


def test_model_does_not_depend_on_partitioning():
    """Integer histograms add exactly and the rounding streams are keyed by global row: the
    same model, bit for bit, from one partition or many."""
    X, y, _ = _data(n=4000)
    params = dict(objective="binary", num_leaves=15, use_quantized_grad=True, n_estimators=8)
    one = fit_in_process(dict(params, partition_rows=4000, chunk_rows=4000), X, y)
    many = fit_in_process(dict(params, partition_rows=700, chunk_rows=350), X, y)
    np.testing.assert_array_equal(one.predict(X, raw_score=True), many.predict(X, raw_score=True))


def test_stochastic_rounding_auc_close_to_unquantized(shared_data):
    """Stochastic rounding, 4 levels: test AUC within 0.002 of unquantized training (the
    paper's claim; LightGBM's own quantized mode is within 0.001 here) on a9a (16,281 test
    rows)."""
    from sklearn.datasets import load_svmlight_file
    from sklearn.metrics import roc_auc_score

    def load(name):
        Xs, y = load_svmlight_file(str(shared_data / "a9a" / name), n_features=123)
        return Xs.toarray().astype(np.float32), (y > 0).astype(float)

    X, y = load("a9a")
    Xt, yt = load("a9a.t")
    params = dict(objective="binary", num_leaves=31, learning_rate=0.1, n_estimators=60)
    plain = roc_auc_score(yt, fit_in_process(params, X, y).predict(Xt))
    quant = roc_auc_score(yt, fit_in_process(dict(params, use_quantized_grad=True), X, y)
                          .predict(Xt))
    assert abs(quant - plain) < 0.002


def test_stochastic_rounding_changes_the_trees_and_seed_changes_the_draws():
    X, y, _ = _data()
    params = dict(objective="binary", num_leaves=15, use_quantized_grad=True, n_estimators=5)
    near = fit_in_process(dict(params, stochastic_rounding=False), X, y).predict(X, raw_score=True)
    s0 = fit_in_process(params, X, y).predict(X, raw_score=True)
    s1 = fit_in_process(dict(params, seed=1), X, y).predict(X, raw_score=True)
    assert np.abs(s0 - near).max() > 1e-6 and np.abs(s0 - s1).max() > 1e-6


def test_categorical_features_are_refused():
    X, y, _ = _data()
    X[:, 0] = np.floor(np.abs(X[:, 0]) * 3)
    with pytest.raises(ValueError, match="use_quantized_grad.*categorical"):
        fit_in_process(dict(objective="binary", use_quantized_grad=True, n_estimators=2,
                            categorical_feature=[0]), X, y)


def test_num_grad_quant_bins_is_checked():
    with pytest.raises(ValueError, match="num_grad_quant_bins"):
        fit_in_process(dict(objective="binary", use_quantized_grad=True,
                            num_grad_quant_bins=200), *(_data()[:2]))
