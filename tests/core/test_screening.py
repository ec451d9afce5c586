"""Feature screening (EMA-FS, S-EMA-FS) and per-tree feature_fraction."""
import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from oocgbdt.core.node_sampling import LightGBMRandom
from oocgbdt.core.screening import FeatureScreener
from oocgbdt.params import resolve_params
from tests.core._helpers import fit_in_process


def _screener(method, n=20, **kw):
    usable = np.ones(n, dtype=bool)
    return FeatureScreener(method, usable, **kw)


def test_warmup_uses_all_usable_features():
    usable = np.array([True, False, True, True, True, True])
    s = FeatureScreener("ema", usable, ratio=0.3, warmup=3)
    for r in range(3):
        np.testing.assert_array_equal(s.select(r), usable)
        s.update(usable, np.arange(6, dtype=float))
    assert s.select(3).sum() == math.ceil(0.3 * 5)


@pytest.mark.parametrize("ratio,n", [(0.3, 20), (0.5, 7), (0.01, 10), (1.0, 9)])
def test_top_k_picks_exactly_k_highest(ratio, n):
    s = _screener("ema", n=n, ratio=ratio, warmup=0)
    gains = np.random.default_rng(1).permutation(n).astype(float)
    s.update(np.ones(n, bool), gains)
    mask = s.select(0)
    k = max(1, math.ceil(ratio * n))
    assert mask.sum() == k
    np.testing.assert_array_equal(np.sort(np.flatnonzero(mask)), np.sort(np.argsort(-gains)[:k]))


def test_ties_break_by_lower_index_and_unsearched_features_keep_scores():
    s = _screener("ema", n=6, ratio=0.5, warmup=0, alpha=0.5)
    s.update(np.ones(6, bool), np.array([1.0, 2.0, 2.0, 2.0, 0.5, -np.inf]))
    assert np.flatnonzero(s.select(0)).tolist() == [1, 2, 3]
    before = s.scores_.copy()
    searched = np.array([1, 1, 1, 0, 0, 0], bool)
    s.update(searched, np.array([5.0, 0.0, 0.0, 9.0, 9.0, 9.0]))
    np.testing.assert_array_equal(s.scores_[3:], before[3:])
    assert s.scores_[5] == 0.0  # searched once with no valid split -> gain 0


def test_ema_arithmetic_on_hand_made_gain_sequence():
    s = _screener("ema", n=2, alpha=0.3)
    seq = [4.0, 1.0, 10.0, 0.0]
    expected = seq[0]
    s.update(np.ones(2, bool), np.array([seq[0], 0.0]))
    for g in seq[1:]:
        s.update(np.ones(2, bool), np.array([g, 0.0]))
        expected = 0.3 * g + 0.7 * expected
    assert s.scores_[0] == pytest.approx(expected, rel=1e-15)
    assert expected == pytest.approx(0.3 * 0 + 0.7 * (0.3 * 10 + 0.7 * (0.3 * 1 + 0.7 * 4)))


def test_beta_zero_is_uniform_by_chi_square():
    n, k, rounds = 10, 3, 4000
    s = _screener("stochastic", n=n, ratio=k / n, warmup=0, beta=0.0, seed=7)
    s.update(np.ones(n, bool), np.linspace(0, 100, n))  # very unequal gains: ignored at beta 0
    counts = np.zeros(n)
    for r in range(rounds):
        counts += s.select(r)
    # each feature is chosen with probability k/n per round; reject at the 0.1% level
    assert stats.chisquare(counts, np.full(n, rounds * k / n)).pvalue > 1e-3


def test_large_beta_reduces_to_top_k():
    n = 30
    gains = np.random.default_rng(3).gamma(2.0, size=n)
    ema = _screener("ema", n=n, ratio=0.2, warmup=0)
    sto = _screener("stochastic", n=n, ratio=0.2, warmup=0, beta=1e4)
    for s in (ema, sto):
        s.update(np.ones(n, bool), gains)
    for r in range(20):
        np.testing.assert_array_equal(sto.select(r), ema.select(r))


def test_stochastic_draws_are_deterministic_given_seed_and_differ_by_round():
    a = _screener("stochastic", n=40, warmup=0, seed=5)
    b = _screener("stochastic", n=40, warmup=0, seed=5)
    ma = [a.select(r) for r in range(5)]
    mb = [b.select(r) for r in range(5)]
    assert all((x == y).all() for x, y in zip(ma, mb))
    assert any((ma[0] != m).any() for m in ma[1:])


def test_feature_fraction_and_screening_together_is_an_error():
    with pytest.raises(ValueError, match="feature_screening='ema' and feature_fraction=0.5"):
        resolve_params({"feature_screening": "ema", "feature_fraction": 0.5})


@pytest.mark.parametrize("params", [
    {"feature_screening": "ema", "screening_warmup": 2},
    {"feature_screening": "stochastic", "screening_warmup": 2, "screening_ratio": 0.5},
    {"feature_fraction": 0.4},
])
def test_trees_only_split_on_the_round_s_features(params):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 12)).astype(np.float32)
    y = (X[:, :6].sum(axis=1) + rng.logistic(size=3000) > 0).astype(float)
    b = fit_in_process(dict(objective="binary", n_estimators=8, num_leaves=7, **params), X, y)
    hist = b.screening_history_
    assert len(hist) == 8
    warm = params.get("screening_warmup", 0)
    ratio = params.get("screening_ratio", params.get("feature_fraction", 0.3))
    for r, (tree, chosen) in enumerate(zip(b.trees, hist)):
        assert len(chosen) == (12 if r < warm else math.ceil(ratio * 12))
        assert set(tree.split_feature.tolist()) <= set(chosen.tolist())


def test_multiclass_round_shares_one_selection():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2000, 10)).astype(np.float32)
    y = np.digitize(X[:, 0] + X[:, 3], [-0.5, 0.5]).astype(float)
    b = fit_in_process(dict(objective="multiclass", num_class=3, n_estimators=6, num_leaves=5,
                            feature_screening="ema", screening_warmup=1), X, y)
    assert len(b.screening_history_) == 6
    for r, chosen in enumerate(b.screening_history_):
        for tree in b.trees[3 * r:3 * r + 3]:
            assert set(tree.split_feature.tolist()) <= set(chosen.tolist())


@pytest.mark.parametrize("params", [
    dict(feature_screening="ema", screening_warmup=2),
    dict(feature_fraction=0.4, bagging_fraction=0.3, bagging_freq=1),
    dict(feature_screening="stochastic", screening_warmup=1, data_sample_strategy="goss"),
])
@pytest.mark.parametrize("sparse_columns", [0, 6])
@pytest.mark.parametrize("enable_bundle", [True, False])
def test_screened_trees_compact_layout_and_columns_give_the_same_model(monkeypatch, params,
                                                                      sparse_columns,
                                                                      enable_bundle):
    """A screened tree's histograms leave out the features it cannot split on
    (:meth:`FeatureMeta.screened`), and a tree that builds few columns copies them into a
    compact array (``COLUMNS_MAX_FRACTION``). Both change where values are stored and read,
    not what is added: with either or both turned off, the model is the same, bit for bit;
    through EFB bundles (where the layout stays whole) and sampled rows too."""
    import oocgbdt.core.partition as partition_mod
    from oocgbdt.core.split import FeatureMeta
    rng = np.random.default_rng(12)
    n, dense = 5000, 14
    X = rng.normal(size=(n, dense + sparse_columns)).astype(np.float32)
    if sparse_columns:  # one-hot-like block: at most one non-zero per row, so EFB bundles it
        hot = rng.integers(0, sparse_columns + 4, n)
        X[:, dense:] = 0
        for j in range(sparse_columns):
            X[hot == j, dense + j] = rng.integers(1, 6, (hot == j).sum())
    y = (X[:, 0] * X[:, 1] + X[:, 2] - X[:, 7] + (X[:, dense:].sum(axis=1) if sparse_columns else 0)
         + rng.normal(scale=0.5, size=n) > 0).astype(np.float64)
    full = dict(objective="binary", n_estimators=10, num_leaves=9, learning_rate=0.2,
                chunk_rows=1250, verbose=False, enable_bundle=enable_bundle, **params)
    screened, layout = FeatureMeta.screened, partition_mod.TreeRows.hist_layout
    seen = dict(copies=0, compact=0)

    def spy_layout(self, meta):
        seen["copies"] += self.columns is not None
        return layout(self, meta)

    def spy_screened(self, mask):
        out = screened(self, mask)
        seen["compact"] += out.n_hist_bins < self.n_hist_bins
        return out

    def mask_only(self, mask):
        return replace(self, feature_mask=self.feature_mask & mask)

    monkeypatch.setattr(partition_mod.TreeRows, "hist_layout", spy_layout)

    def fit(copy_columns, compact_layout):
        monkeypatch.setattr(partition_mod, "COLUMNS_MAX_FRACTION", 0.5 if copy_columns else 0.0)
        monkeypatch.setattr(FeatureMeta, "screened", spy_screened if compact_layout else mask_only)
        seen.update(copies=0, compact=0)
        booster = fit_in_process(full, X, y)
        return booster, dict(seen)

    ref, none = fit(False, False)
    assert none == dict(copies=0, compact=0)
    if sparse_columns and enable_bundle:
        assert any(len(b) > 1 for b in ref.bundles_)
    for copy_columns, compact_layout in ((True, False), (False, True), (True, True)):
        got, did = fit(copy_columns, compact_layout)
        # each was used when turned on (the layout stays whole when EFB merged columns)
        assert (did["copies"] > 0) == copy_columns
        assert (did["compact"] > 0) == (compact_layout and not (sparse_columns and enable_bundle))
        assert got.to_dict() == ref.to_dict()
        np.testing.assert_array_equal(got.predict(X, raw_score=True),
                                      ref.predict(X, raw_score=True))


def test_the_compact_columns_are_copied_once_per_selection_and_kept_with_the_chunk(monkeypatch):
    """``partition_compact_columns`` makes a chunk's compact copy when the round's selection of
    columns changes and keeps it otherwise: one copy per chunk and distinct consecutive
    selection, counted against the model's own screening history; the model is the one
    trained with every tree copying its columns (the copy not kept)."""
    import oocgbdt.core.boosting as boosting_mod
    rng = np.random.default_rng(5)
    n, f = 4000, 12
    X = rng.normal(size=(n, f)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] - X[:, 3] + rng.normal(scale=0.5, size=n) > 0).astype(float)
    params = dict(objective="binary", n_estimators=12, num_leaves=7, chunk_rows=1000,
                  partition_rows=1000, feature_screening="ema", screening_warmup=2,
                  screening_ratio=0.3, verbose=False)
    keep = boosting_mod.partition_compact_columns
    copies = []

    def counting(data, meta):
        out = keep(data, meta)
        copies.append(out.compact is not None and out.compact is not data.compact)
        return out

    monkeypatch.setattr(boosting_mod, "partition_compact_columns", counting)
    kept = fit_in_process(params, X, y)
    history = kept.screening_history_
    small = [len(h) <= 0.5 * f for h in history]
    changes = sum(1 for r, h in enumerate(history)
                  if small[r] and (r == 0 or not small[r - 1]
                                   or not np.array_equal(h, history[r - 1])))
    assert 1 <= changes < sum(small)  # the selection repeats, so copies are saved
    n_chunks = len(copies) // len(history)  # one call per chunk and round
    assert n_chunks == 4 and len(copies) == n_chunks * len(history)
    assert sum(copies) == n_chunks * changes
    monkeypatch.setattr(boosting_mod, "partition_compact_columns", lambda data, meta: data)
    copied = fit_in_process(params, X, y)
    assert kept.to_dict() == copied.to_dict()


def test_feature_fraction_draws_are_lightgbm_s_stream_of_feature_fraction_seed():
    """``colsample_bytree`` (feature_fraction) draws come from LightGBM's
    ``Random(feature_fraction_seed)``: one ``Sample`` when training starts, then one per tree.
    ``random_state`` changes them through the feature_fraction_seed it derives, unless that
    is given. (Trees equal to LightGBM's: tests/dask/test_sampling_parity.py.)"""
    usable = np.ones(40, dtype=bool)

    def draws(**params):
        s = FeatureScreener.from_params(resolve_params(dict(feature_fraction=0.25, **params)),
                                        usable)
        return [tuple(np.flatnonzero(s.select(r))) for r in range(6)]

    base = draws()
    assert draws() == base and draws(feature_fraction_seed=2) == base
    assert draws(random_state=1) != base
    assert draws(random_state=1, feature_fraction_seed=2) == base  # given: kept
    derived = resolve_params(dict(seed=1))["feature_fraction_seed"]
    assert draws(random_state=1) == draws(feature_fraction_seed=derived)
    assert draws(feature_fraction_seed=3) != base
    rng = LightGBMRandom(2)
    expected = [tuple(rng.sample(40, 10)) for _ in range(7)][1:]  # the first draw is at start
    assert base == expected and all(len(m) == 10 for m in base)
