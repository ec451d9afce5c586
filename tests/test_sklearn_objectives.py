"""GBDTRegressor/GBDTClassifier with LightGBM's objectives and class weights, against
LGBMRegressor/LGBMClassifier on the same data."""
import numpy as np
import pytest

from oocgbdt import GBDTClassifier, GBDTRegressor

lgb = pytest.importorskip("lightgbm")

RNG = np.random.default_rng(0)
X = RNG.normal(size=(800, 4))
Y_POS = np.exp(0.5 * X[:, 0]) + RNG.random(800)
Y_BIN = (X[:, 1] + RNG.normal(size=800) > 1).astype(int)
Y_3 = np.digitize(X[:, 2] + 0.3 * RNG.normal(size=800), [-0.5, 0.5])
# Predictions: the same trees, so equal up to float64 summation order of the leaf sums.
ATOL = 1e-9


@pytest.mark.parametrize("kw", [
    {"objective": "quantile", "alpha": 0.3},
    {"objective": "mae"},
    {"objective": "gamma"},
    {"objective": "tweedie", "tweedie_variance_power": 1.2},
    {"objective": "fair", "fair_c": 0.5},
])
def test_regressor_objectives_match_lgbm(kw):
    ours = GBDTRegressor(n_estimators=8, **kw).fit(X, Y_POS)
    theirs = lgb.LGBMRegressor(n_estimators=8, verbose=-1, **kw).fit(X, Y_POS)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=ATOL)


@pytest.mark.parametrize("kw", [
    {"class_weight": "balanced"},
    {"class_weight": {0: 1.0, 1: 3.0}},
    {"is_unbalance": True},
    {"scale_pos_weight": 2.5, "sigmoid": 0.7},
])
def test_classifier_imbalance_matches_lgbm(kw):
    ours = GBDTClassifier(n_estimators=8, **kw).fit(X, Y_BIN)
    theirs = lgb.LGBMClassifier(n_estimators=8, verbose=-1, **kw).fit(X, Y_BIN)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=0, atol=ATOL)


def test_classifier_ova_and_balanced_multiclass_match_lgbm():
    for kw in ({"objective": "multiclassova"}, {"class_weight": "balanced"}):
        ours = GBDTClassifier(n_estimators=6, **kw).fit(X, Y_3)
        theirs = lgb.LGBMClassifier(n_estimators=6, verbose=-1, **kw).fit(X, Y_3)
        np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=0,
                                   atol=1e-8)
        np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))


def test_class_weight_is_sample_weight_times_class_weight():
    sw = RNG.random(800) + 0.5
    a = GBDTClassifier(n_estimators=5, class_weight={1: 2.0}).fit(X, Y_BIN, sample_weight=sw)
    b = GBDTClassifier(n_estimators=5).fit(X, Y_BIN, sample_weight=sw * np.where(Y_BIN == 1, 2, 1))
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_bad_objectives_and_class_weights():
    with pytest.raises(ValueError, match=r"GBDTRegressor cannot train objective='binary'"):
        GBDTRegressor(objective="binary").fit(X, Y_POS)
    with pytest.raises(ValueError, match=r"class_weight applies to GBDTClassifier only"):
        GBDTRegressor(class_weight="balanced").fit(X, Y_POS)
    with pytest.raises(ValueError, match=r"GBDTClassifier cannot train objective='poisson'"):
        GBDTClassifier(objective="poisson").fit(X, Y_BIN)
    with pytest.raises(ValueError, match=r"class_weight has label\(s\) \[7\]"):
        GBDTClassifier(class_weight={7: 2.0}).fit(X, Y_BIN)
    with pytest.raises(ValueError, match=r"class_weight must be a dict, 'balanced' or None"):
        GBDTClassifier(class_weight="heavy").fit(X, Y_BIN)
    with pytest.raises(ValueError, match=r"objective must be one of"):
        GBDTRegressor(objective="nope").fit(X, Y_POS)
    with pytest.raises(ValueError, match=r"y must be >= 0 for objective 'poisson'"):
        GBDTRegressor(objective="poisson").fit(X, Y_POS - 10)
