"""Tests for oocgbdt.core.percentile: the exact distributed percentile equals the in-memory
definition for any partitioning, the unweighted one equals numpy's quantile, and the weighted
definition equals what LightGBM 4.7 computes (its init score)."""
import numpy as np
import pytest

from oocgbdt.core.executor import LocalExecutor
from oocgbdt.core.percentile import (PercentileRows, lightgbm_percentile, lo_levels_for,
                                     weighted_percentiles)
from oocgbdt.kernels.percentile import float_keys


def _rows(values, leaf, weight, bounds, lo_levels):
    out = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        lo = (np.arange(a, b, dtype=np.uint64) << np.uint64(64 - 8 * lo_levels)
              if weight is not None else np.zeros(b - a, np.uint64))
        out.append(PercentileRows(leaf[a:b], float_keys(values[a:b]), lo,
                                  None if weight is None else weight[a:b]))
    return out


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("alpha", [0.5, 0.9, 0.13])
@pytest.mark.parametrize("seed", range(4))
def test_same_values_for_1_3_8_partitions_and_equal_to_the_definition(weighted, alpha, seed):
    rng = np.random.default_rng(seed)
    n, n_leaves = int(rng.integers(2, 400)), 4
    # Rounded values: many ties, which the weighted definition orders by row.
    values = np.round(rng.normal(size=n) * 3, int(rng.integers(0, 3)))
    leaf = rng.integers(0, n_leaves, n).astype(np.int32)
    leaf[rng.random(n) < 0.1] = -1  # rows out of the round (bagging)
    weight = (rng.random(n) * 2.5).astype(np.float32) if weighted else None
    lo = lo_levels_for(n)
    results = []
    ex = LocalExecutor()
    for n_parts in (1, 3, 8):
        bounds = np.linspace(0, n, n_parts + 1).astype(int)
        values_, counts = weighted_percentiles(ex, _rows(values, leaf, weight, bounds, lo),
                                               n_leaves, alpha, weighted, lo, 2, "t")
        results.append(values_)
    ex.close()
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])
    for lf in range(n_leaves):
        m = leaf == lf
        if not m.any():
            assert np.isnan(results[0][lf])
            continue
        ref = lightgbm_percentile(values[m], None if weight is None else weight[m], alpha)
        assert results[0][lf] == ref
        if not weighted:
            assert results[0][lf] == pytest.approx(np.quantile(values[m], alpha), rel=1e-12,
                                                   abs=1e-12)


def test_float32_mode_rounds_like_labels():
    rng = np.random.default_rng(1)
    y = rng.normal(size=101).astype(np.float32).astype(np.float64)
    leaf = np.zeros(101, np.int32)
    ex = LocalExecutor()
    v, _ = weighted_percentiles(ex, _rows(y, leaf, None, [0, 50, 101], 1), 1, 0.3, False, 1, 2,
                                "t", float32=True)
    ex.close()
    assert v[0] == lightgbm_percentile(y, None, 0.3, float32=True)
    assert v[0] == float(np.float32(v[0]))


@pytest.mark.parametrize("objective, alpha", [("quantile", 0.8), ("quantile", 0.3),
                                              ("regression_l1", 0.5)])
@pytest.mark.parametrize("scale", [0.4, 3.0])  # row weights below and above 1
def test_weighted_definition_is_lightgbms(objective, alpha, scale):
    """LightGBM's init score for quantile/L1 with weights is its weighted percentile of the labels
    (a one-leaf model predicts it)."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(int(scale * 10) + int(alpha * 100))
    n = 301
    y = rng.normal(size=n).astype(np.float32)
    w = (rng.random(n) * scale).astype(np.float32)
    X = rng.normal(size=(n, 1))
    params = dict(objective=objective, alpha=alpha, verbose=-1, min_data_in_leaf=n + 1,
                  num_threads=1)
    booster = lgb.train(params, lgb.Dataset(X, y, weight=w), num_boost_round=1)
    a = float(np.float32(alpha)) if objective == "quantile" else alpha
    ours = lightgbm_percentile(y.astype(np.float64), w, a, float32=True)
    assert booster.predict(X[:1])[0] == pytest.approx(ours, rel=1e-7)
    assert float(np.float32(booster.predict(X[:1])[0])) == ours
