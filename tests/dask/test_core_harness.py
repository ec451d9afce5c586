"""The core tests' harness (:func:`tests.core._helpers.fit_in_process`) trains what
:func:`oocgbdt.train` trains for NumPy input without a client: the same model, bit for bit, so
the core tests exercise the same computation as the library's entry point."""
import numpy as np
import pytest

import oocgbdt
from tests.core._helpers import fit_in_process


def _data(n, n_features=6, n_classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features)).astype(np.float32)
    X[:, 1] = np.where(rng.random(n) < 0.8, 0.0, X[:, 1])  # sparse-ish columns bundle
    X[:, 2] = np.where(X[:, 1] != 0, 0.0, np.abs(X[:, 2]))
    X[rng.random(n) < 0.05, 3] = np.nan
    score = X[:, 0] + 0.5 * np.nan_to_num(X[:, 3]) + rng.normal(scale=0.5, size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y.astype(np.float64), rng.uniform(0.5, 2.0, size=n)


@pytest.mark.parametrize("extra, n_classes, weighted", [
    (dict(chunk_rows=1500, partition_rows=4000), 2, False),
    (dict(chunk_rows=1000, partition_rows=2500, data_sample_strategy="goss"), 3, True),
    (dict(chunk_rows=2000, enable_bundle=False, bagging_fraction=0.5, bagging_freq=1), 2, True),
    (dict(feature_screening="ema", chunk_rows=3000, partition_rows=3000), 2, False),
])
def test_fit_in_process_equals_train(extra, n_classes, weighted):
    X, y, w = _data(12_000, n_classes=n_classes)
    params = dict(objective="binary" if n_classes == 2 else "multiclass", n_estimators=8,
                  num_leaves=15, verbose=False, **extra)
    if n_classes > 2:
        params["num_class"] = n_classes
    w = w if weighted else None
    ref = oocgbdt.train(params, X, y, sample_weight=w)
    got = fit_in_process(params, X, y, sample_weight=w)
    assert got == ref
    np.testing.assert_array_equal(got.predict(X, raw_score=True), ref.predict(X, raw_score=True))


def test_fit_in_process_follows_the_default_partitioning():
    """More rows than one default partition (2**16): two partitions, as train makes."""
    X, y, _ = _data(70_000, n_features=4)
    params = dict(objective="binary", n_estimators=3, num_leaves=7, verbose=False)
    ref = oocgbdt.train(params, X, y)
    assert ref.cache_report["n_partitions"]["train"] == 2
    assert fit_in_process(params, X, y) == ref
