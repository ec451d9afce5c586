"""Tests for oocgbdt.kernels.ranking: LambdaRank gradients against the NumPy twin (exact
sigmoid, float64 sums), DCG against scikit-learn's."""
import numpy as np
import pytest

from oocgbdt._dtypes import G_H_DTYPE
from oocgbdt.kernels.ranking import (dcg_at, default_label_gain, discounts, gradients_lambdarank,
                                     gradients_lambdarank_naive, max_dcg_at, sigmoid_table)


def _queries(seed, n_queries=12):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 25, n_queries)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    y = rng.integers(0, 5, n).astype(np.float32)
    raw = rng.normal(size=n)
    w = (rng.random(n) + 0.5).astype(np.float32)
    return y, raw, w, offsets


@pytest.mark.parametrize("norm", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("sigmoid, truncation", [(1.0, 30), (2.0, 5)])
def test_lambdarank_matches_naive(norm, weighted, sigmoid, truncation):
    y, raw, w, offsets = _queries(int(norm) + 2 * int(weighted))
    w = w if weighted else None
    gain = default_label_gain()
    out = [np.full(len(y), np.nan, G_H_DTYPE) for _ in range(4)]
    table, lo, hi, factor = sigmoid_table(sigmoid)
    gradients_lambdarank(y, raw, w, offsets, gain, discounts(), table, lo, hi, factor, sigmoid,
                         norm, truncation, out[0], out[1])
    gradients_lambdarank_naive(y, raw, w, offsets, gain, sigmoid, norm, truncation, out[2],
                               out[3])
    # The kernel reads the sigmoid off LightGBM's 2**20-bin table over [-25/s, 25/s] (a step of
    # 5e-5/s in the input, so p is off by at most ~1.2e-5) and sums in float32.
    np.testing.assert_allclose(out[0], out[2], rtol=1e-3, atol=2e-4)
    np.testing.assert_allclose(out[1], out[3], rtol=1e-3, atol=2e-4)
    # Lambdas of a query sum to zero (each pair adds +l and -l); norm and weights scale them.
    if not weighted:
        for a, b in zip(offsets[:-1], offsets[1:]):
            assert abs(out[0][a:b].astype(np.float64).sum()) < 1e-5


def test_dcg_matches_sklearn():
    from sklearn.metrics import dcg_score

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 5, 30).astype(np.float64)
    scores = rng.normal(size=30)
    gain = default_label_gain()
    out = np.zeros(3)
    dcg_at(np.array([1, 3, 10], np.int64), labels, scores, gain, discounts(), out)
    for k, v in zip([1, 3, 10], out):
        assert v == pytest.approx(dcg_score([gain[labels.astype(int)]], [scores], k=k), rel=1e-12)
    best = max_dcg_at(10, labels, gain, discounts())
    assert best == pytest.approx(dcg_score([gain[labels.astype(int)]], [gain[labels.astype(int)]],
                                           k=10), rel=1e-12)


def test_lcg_jump_equals_stepping():
    from oocgbdt.kernels.ranking import lcg_jump

    for seed, steps in [(5, 0), (5, 1), (123, 1000), (2**32 - 1, 77777)]:
        x = seed
        for _ in range(steps):
            x = (214013 * x + 2531011) & 0xFFFFFFFF
        assert lcg_jump(seed, steps) == x


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("iteration, first_query", [(0, 0), (3, 7)])
def test_xendcg_matches_naive(weighted, iteration, first_query):
    from oocgbdt.kernels.ranking import gradients_xendcg, gradients_xendcg_naive

    y, raw, w, offsets = _queries(11)
    w = w if weighted else None
    out = [np.full(len(y), np.nan, G_H_DTYPE) for _ in range(4)]
    gradients_xendcg(y, raw, w, offsets, first_query, 5, iteration, out[0], out[1])
    gradients_xendcg_naive(y, raw, w, offsets, first_query, 5, iteration, out[2], out[3])
    # The kernel sums its three terms in float32 as LightGBM; the twin in float64.
    np.testing.assert_allclose(out[0], out[2], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[1], out[3], rtol=1e-6, atol=1e-7)


def test_tables_use_the_c_library_as_lightgbm():
    """The sigmoid table and the discounts hold, entry for entry, the C library's ``exp`` and
    ``log2`` (LightGBM's ``ConstructSigmoidTable`` and ``DCGCalculator::Init``), not NumPy's
    vectorized functions, which differ in the last bit of some entries."""
    import math

    table, lo, _, factor = sigmoid_table(1.0)
    idx = np.random.default_rng(0).choice(table.shape[0], 50_000, replace=False)
    expected = [1.0 / (1.0 + math.exp(float(i) / factor + lo)) for i in idx]
    np.testing.assert_array_equal(table[idx], expected)
    disc = discounts()
    np.testing.assert_array_equal(disc, [1.0 / math.log2(2.0 + k) for k in range(disc.shape[0])])


@pytest.mark.parametrize("weighted", [False, True])
def test_lambdarank_gradients_are_lightgbms_bit_for_bit(weighted):
    """LightGBM trained on these gradients (a custom objective) grows its own lambdarank model,
    bit for bit: the same float32 gradients and hessians every round."""
    import json

    lgb = pytest.importorskip("lightgbm")
    from oocgbdt.core.objectives import get_objective

    y, _, w, offsets = _queries(7, n_queries=40)
    w = w if weighted else None
    X = np.random.default_rng(1).normal(size=(len(y), 4)) + y[:, None] * 0.3
    group = np.diff(offsets)
    objective = get_objective({"objective": "lambdarank"})

    def fobj(raw, _data):
        g, h = np.empty(len(y), G_H_DTYPE), np.empty(len(y), G_H_DTYPE)
        objective.rank_gradients(y, raw, w, offsets, g, h)
        return g, h

    params = dict(num_leaves=7, min_data_in_leaf=5, deterministic=True, num_threads=1,
                  verbose=-1)
    models = [lgb.train(dict(params, objective=obj), lgb.Dataset(X, y, weight=w, group=group),
                        num_boost_round=10) for obj in ("lambdarank", fobj)]
    trees = [json.dumps(m.dump_model()["tree_info"]) for m in models]
    assert trees[0] == trees[1]
