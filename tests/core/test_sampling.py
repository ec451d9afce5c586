"""Row sampling (GOSS and bagging) decided globally across chunks, against NumPy oracles.

Random parts are checked with binomial/normal bounds at 5 standard deviations: a correct
implementation fails one of them with probability below 6e-7 (two-sided normal tail), and the
draws are seeded, so the outcome is reproducible.
"""
import numpy as np
import pytest

from oocgbdt.core.executor import LocalExecutor
from oocgbdt.core.objectives import get_objective
from oocgbdt.core.partition import (PartitionData, partition_apply_tree, partition_gradients,
                                    partition_root)
from oocgbdt.core.sampling import (RowSampler, goss_keys, goss_top_k, goss_warmup_rounds,
                                   row_uniforms, sampling_enabled)
from oocgbdt.params import resolve_params
from tests.core._helpers import fit_in_process

Z = 5.0  # standard deviations allowed for random counts


def _chunks(g, h, sizes, X=None):
    """PartitionData per chunk of (n_outputs, N) float32 gradients/hessians split by ``sizes``."""
    n = g.shape[1]
    assert sum(sizes) == n
    X = np.zeros((n, 1), np.uint8) if X is None else X
    out, start = [], 0
    for s in sizes:
        sl = slice(start, start + s)
        out.append(PartitionData(X[sl], np.zeros(s, np.float32), None, np.zeros((g.shape[0], s)),
                             np.ascontiguousarray(g[:, sl]), np.ascontiguousarray(h[:, sl])))
        start += s
    return out


def _sample(params, chunks, rnd):
    """Run the sampler for round ``rnd``; returns (global selected rows, g, h concatenated)."""
    p = resolve_params(params)
    sampler = RowSampler(p, [c.n_rows for c in chunks])
    assert sampler.active(rnd)
    out = sampler.sample(LocalExecutor(), chunks, rnd, key="t")
    rows = np.concatenate([c.rows.astype(np.int64) + off for c, off in zip(out, sampler.offsets)])
    g = np.concatenate([c.gradients for c in out], axis=1)
    h = np.concatenate([c.hessians for c in out], axis=1)
    return rows, g, h


def _oracle_top(key, top_k):
    """The top_k rows by key, ties broken by global row order (NumPy stable sort)."""
    order = np.argsort(-key.astype(np.float64), kind="stable")
    return np.sort(order[:top_k])


def _logloss_like(n, k=1, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, size=(k, n))
    y = rng.random((k, n)) < 0.5
    return (p - y).astype(np.float32), (p * (1 - p)).astype(np.float32)


SIZES = [1, 17_000, 30_000, 5, 23_997, 29_000]  # N = 100,003: uneven chunks, one of 1 row


@pytest.mark.parametrize("n_outputs", [1, 3])
def test_goss_top_set_is_exact_global_top_k_and_small_rows_are_reweighted(n_outputs):
    g, h = _logloss_like(sum(SIZES), n_outputs)
    a, b = 0.2, 0.1
    params = dict(data_sample_strategy="goss", top_rate=a, other_rate=b, learning_rate=0.1)
    rows, g2, h2 = _sample(params, _chunks(g, h, SIZES), rnd=10)
    n = g.shape[1]
    key = np.zeros(n, np.float32)
    for k in range(n_outputs):  # LightGBM: sum over outputs of |g * h|, in float32
        key += np.abs(g[k] * h[k])
    np.testing.assert_array_equal(goss_keys(g, h), key)
    top_k = goss_top_k(n, a)
    assert top_k == int(n * a) == 20_000
    top = _oracle_top(key, top_k)
    selected = np.zeros(n, bool)
    selected[rows] = True
    assert np.all(np.diff(rows) > 0)
    assert selected[top].all()
    # Kept rows: the top set unchanged, the others scaled by (1 - a) / b in float32.
    m = np.float32((1 - a) / b)
    is_top = np.zeros(n, bool)
    is_top[top] = True
    small = selected & ~is_top
    np.testing.assert_array_equal(g2[:, is_top], g[:, is_top])
    np.testing.assert_array_equal(h2[:, is_top], h[:, is_top])
    np.testing.assert_array_equal(g2[:, small], g[:, small] * m)
    np.testing.assert_array_equal(h2[:, small], h[:, small] * m)
    np.testing.assert_array_equal(g2[:, ~selected], g[:, ~selected])
    # The rest is sampled with probability b / (1 - a): a binomial count.
    rest = n - top_k
    p = b / (1 - a)
    assert abs(small.sum() - rest * p) <= Z * np.sqrt(rest * p * (1 - p))
    # ... independently of the key: as many from the rest's upper half as from its lower half.
    rest_idx = np.flatnonzero(~is_top)
    upper = rest_idx[key[rest_idx] >= np.median(key[rest_idx])]
    half = len(upper)
    assert abs(small[upper].sum() - half * p) <= Z * np.sqrt(half * p * (1 - p))
    # The weighted sample estimates every gradient sum without bias (here: the total).
    for k in range(n_outputs):
        est = g2[k, selected].astype(np.float64).sum()
        sd = np.sqrt((g[k, ~is_top].astype(np.float64) ** 2).sum() * (1 - p) / p)
        assert abs(est - g[k].astype(np.float64).sum()) <= Z * sd


def test_goss_rounds_gather_key_counts_once_while_the_threshold_bucket_holds():
    """One sampler over rounds: each round's top set is the exact global top_k (NumPy oracle),
    whether the last round's bucket (gathered with the high counts) holds the threshold or the
    keys moved away from it (a second gather)."""
    n = sum(SIZES)
    sampler = RowSampler(resolve_params(dict(data_sample_strategy="goss", top_rate=0.2,
                                             other_rate=0.1)), SIZES)
    top_k = goss_top_k(n, 0.2)
    g, h = _logloss_like(n, 1, seed=7)
    scales = [1.0, 1.0001, 1.0, 3.0, 3.0]  # the threshold bucket stays, then moves, then stays
    moved = 0
    for rnd, scale in enumerate(scales, start=10):
        gs = (g * np.float32(scale)).astype(np.float32)
        before = sampler.n_second_gathers
        out = sampler.sample(LocalExecutor(), _chunks(gs, h, SIZES), rnd, key="t")
        rows = np.concatenate([c.rows.astype(np.int64) + off
                               for c, off in zip(out, sampler.offsets)])
        selected = np.zeros(n, bool)
        selected[rows] = True
        top = _oracle_top(np.abs(gs[0] * h[0]), top_k)
        assert selected[top].all(), rnd
        moved += sampler.n_second_gathers - before
    # the first round has no bucket to guess; of the others only the jump to 3x moves it
    assert moved == 1


def test_goss_ties_at_the_threshold_fill_top_k_in_global_row_order():
    """L2-like keys with heavy ties: still exactly top_k top rows (LightGBM would keep them all)."""
    rng = np.random.default_rng(1)
    n = sum(SIZES)
    g = (rng.integers(-3, 4, size=(1, n)) * 0.5).astype(np.float32)
    h = np.ones((1, n), np.float32)
    a, b = 0.3, 0.2
    rows, g2, _ = _sample(dict(data_sample_strategy="goss", top_rate=a, other_rate=b),
                          _chunks(g, h, SIZES), rnd=10)
    key = np.abs(g[0])
    top_k = goss_top_k(n, a)
    top = _oracle_top(key, top_k)
    thr = key[top].min()
    assert (key > thr).sum() < top_k < (key >= thr).sum()  # ties straddle the threshold
    is_top = np.zeros(n, bool)
    is_top[top] = True
    selected = np.zeros(n, bool)
    selected[rows] = True
    assert selected[top].all()
    np.testing.assert_array_equal(g2[0, is_top], g[0, is_top])  # top rows are not scaled
    small = selected & ~is_top
    np.testing.assert_array_equal(g2[0, small], g[0, small] * np.float32((1 - a) / b))


def test_goss_selection_does_not_depend_on_the_chunking():
    """Same rows, same round: the same selected rows and weights for 1, 3, 6 and 17 chunks."""
    g, h = _logloss_like(sum(SIZES), 2, seed=4)
    n = g.shape[1]
    params = dict(data_sample_strategy="goss", learning_rate=0.5)
    results = []
    for n_chunks in (1, 3, 6, 17):
        sizes = SIZES if n_chunks == 6 else np.diff(np.linspace(0, n, n_chunks + 1).astype(int)).tolist()
        results.append(_sample(params, _chunks(g, h, sizes), rnd=7))
    for rows, g2, h2 in results[1:]:
        assert len(rows) == len(results[0][0])
        np.testing.assert_array_equal(rows, results[0][0])
        np.testing.assert_array_equal(g2, results[0][1])
        np.testing.assert_array_equal(h2, results[0][2])
    # ... and another round draws another sample.
    other = _sample(params, _chunks(g, h, SIZES), rnd=8)[0]
    assert not np.array_equal(other, results[0][0])


def test_bagging_fraction_rebag_rounds_and_weights():
    n = sum(SIZES)
    g, h = _logloss_like(n)
    params = dict(bagging_fraction=0.3, bagging_freq=3, bagging_seed=5)
    chunks = _chunks(g, h, SIZES)
    bags = {rnd: _sample(params, chunks, rnd) for rnd in range(7)}
    rows, g2, h2 = bags[0]
    assert abs(len(rows) - 0.3 * n) <= Z * np.sqrt(n * 0.3 * 0.7)
    np.testing.assert_array_equal(g2, g)  # bagging keeps the weights
    np.testing.assert_array_equal(h2, h)
    # A bag is drawn at rounds 0, 3, 6 (rnd % bagging_freq == 0, LightGBM) and kept in between.
    for r in (1, 2):
        np.testing.assert_array_equal(bags[r][0], bags[0][0])
    for r in (4, 5):
        np.testing.assert_array_equal(bags[r][0], bags[3][0])
    assert not np.array_equal(bags[3][0], bags[0][0])
    assert not np.array_equal(bags[6][0], bags[3][0])
    # The bag of two consecutive bags overlaps as two independent draws do: 0.3 * 0.3.
    both = len(np.intersect1d(bags[0][0], bags[3][0]))
    assert abs(both - 0.09 * n) <= Z * np.sqrt(n * 0.09 * 0.91)
    # Chunking does not matter; the seeds do.
    even = np.diff(np.linspace(0, n, 5).astype(int)).tolist()
    np.testing.assert_array_equal(_sample(params, _chunks(g, h, even), 0)[0], rows)
    assert not np.array_equal(_sample(dict(params, bagging_seed=6), chunks, 0)[0], rows)
    # seed changes the bag through the bagging_seed it derives (LightGBM's config.cpp), unless
    # bagging_seed is given.
    np.testing.assert_array_equal(_sample(dict(params, seed=1), chunks, 0)[0], rows)
    alone = dict(bagging_fraction=0.3, bagging_freq=3)
    assert not np.array_equal(_sample(dict(alone, seed=1), chunks, 0)[0],
                              _sample(alone, chunks, 0)[0])


def test_row_uniforms_are_one_stream_whatever_the_offset():
    key = 0x0123456789ABCDEF
    full = row_uniforms(key, 0, 1000)
    assert full.min() >= 0 and full.max() < 1
    for off, n in [(0, 7), (1, 10), (3, 5), (4, 9), (997, 3)]:
        np.testing.assert_array_equal(row_uniforms(key, off, n), full[off:off + n])
    # Uniform: every decile holds 10% of 100k draws, within binomial bounds.
    u = row_uniforms(key, 10**12, 100_000)
    counts = np.bincount((u * 10).astype(int), minlength=10)
    assert np.all(np.abs(counts - 10_000) <= Z * np.sqrt(100_000 * 0.1 * 0.9))
    # Neighbouring rows and neighbouring streams are uncorrelated (|r| of 100k pairs: sd 0.0032).
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) <= Z * 0.0032
    v = row_uniforms(key + 1, 10**12, 100_000)
    assert abs(np.corrcoef(u, v)[0, 1]) <= Z * 0.0032


# ---- parameters ---------------------------------------------------------------------------------

def test_goss_with_bagging_is_an_error_that_says_why():
    with pytest.raises(ValueError, match="GOSS already samples") as e:
        resolve_params(dict(data_sample_strategy="goss", subsample=0.8, subsample_freq=1))
    assert "LightGBM forbids" in str(e.value) and "bagging_fraction=1.0" in str(e.value)
    # Either half of bagging alone is inactive in LightGBM, so it is allowed with GOSS.
    resolve_params(dict(data_sample_strategy="goss", bagging_fraction=0.8))
    resolve_params(dict(data_sample_strategy="goss", bagging_freq=1))


@pytest.mark.parametrize("bad, match", [
    (dict(top_rate=0.0), "top_rate must be"),
    (dict(other_rate=0.0), "other_rate must be"),
    (dict(top_rate=-0.1), "top_rate must be"),
    (dict(top_rate=0.7, other_rate=0.4), r"top_rate \+ other_rate must be <= 1"),
    (dict(bagging_fraction=0.0), "bagging_fraction must be"),
    (dict(bagging_fraction=1.5), "bagging_fraction must be"),
    (dict(bagging_freq=-1), "bagging_freq must be"),
    (dict(data_sample_strategy="gos"), "did you mean 'goss'"),
])
def test_sampling_parameter_validation(bad, match):
    with pytest.raises(ValueError, match=match):
        resolve_params({"data_sample_strategy": "goss", **bad})


def test_sampling_parameters_defaults_and_aliases():
    r = resolve_params({})
    assert (r["data_sample_strategy"], r["top_rate"], r["other_rate"]) == ("bagging", 0.2, 0.1)
    assert (r["bagging_fraction"], r["bagging_freq"], r["bagging_seed"]) == (1.0, 0, 3)
    assert not sampling_enabled(r)
    r = resolve_params(dict(subsample=0.5, subsample_freq=2, bagging_fraction_seed=9))
    assert (r["bagging_fraction"], r["bagging_freq"], r["bagging_seed"]) == (0.5, 2, 9)
    assert sampling_enabled(r)
    assert resolve_params(dict(sub_row=0.4, bagging=0.4))["bagging_fraction"] == 0.4
    assert not sampling_enabled(resolve_params(dict(subsample=0.5)))  # no freq: no bagging
    assert resolve_params(dict(top_rate=0.7, other_rate=0.3, data_sample_strategy="goss"))


# ---- warm start --------------------------------------------------------------------------------

@pytest.mark.parametrize("lr", [0.1, 0.25, 0.3, 1 / 3, 0.5, 0.7, 1.5])
def test_warmup_rounds_match_lightgbm(lr):
    """LightGBM trains every row while iter < int(1 / learning_rate): its root counts show it."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 4))
    y = X[:, 0] + X[:, 1] ** 2 + rng.normal(size=2000)
    warm = goss_warmup_rounds(lr)
    model = lgb.train(dict(objective="regression", learning_rate=lr, data_sample_strategy="goss",
                           verbose=-1, num_threads=1), lgb.Dataset(X, y), warm + 3)
    counts = [t["tree_structure"]["internal_count"] for t in model.dump_model()["tree_info"]]
    assert counts[:warm] == [2000] * warm
    assert all(c == 400 + 200 for c in counts[warm:])  # top_k + other_k


def test_warmup_boundary_in_training():
    """Rounds before int(1/lr) are the unsampled model's trees; sampling starts exactly there."""
    rng = np.random.default_rng(2)
    n = 6000
    X = rng.normal(size=(n, 5)).astype(np.float32)
    y = (X[:, 0] + np.sin(2 * X[:, 1]) + rng.logistic(size=n) > 0).astype(np.float64)
    base = dict(objective="binary", learning_rate=0.25, n_estimators=7, num_leaves=7,
                chunk_rows=1000)
    plain = fit_in_process(base, X, y)
    goss = fit_in_process(dict(base, data_sample_strategy="goss"), X, y)
    warm = goss_warmup_rounds(0.25)
    assert warm == 4
    rows = [s["n_rows"] for s in goss.tree_stats]
    assert rows[:warm] == [n] * warm
    for r in rows[warm:]:  # top_k + Binomial(n - top_k, 0.1 / 0.8)
        assert abs(r - 1200 - 4800 * 0.125) <= Z * np.sqrt(4800 * 0.125 * 0.875)
    assert [s["n_rows"] for s in plain.tree_stats] == [n] * 7
    p_trees, g_trees = plain.trees, goss.trees
    for t in range(warm):
        np.testing.assert_array_equal(g_trees[t].leaf_value, p_trees[t].leaf_value)
        np.testing.assert_array_equal(g_trees[t].split_feature, p_trees[t].split_feature)
    assert not np.array_equal(g_trees[warm].leaf_value, p_trees[warm].leaf_value)


# ---- unselected rows: no routing or histogram cost, but scores still updated ---------------------

def test_a_sampled_round_routes_only_selected_rows_and_updates_every_score():
    from oocgbdt.core.bin_mapper import BinMapper
    from oocgbdt.core.grower import TreeGrower
    from oocgbdt.core.histogram_source import HistogramSource
    from oocgbdt.core.split import FeatureMeta, SplitParams
    rng = np.random.default_rng(3)
    n = 5000
    X = rng.normal(size=(n, 3)).astype(np.float32)
    bm = BinMapper(max_bin=31).fit(X, n)
    Xb = bm.transform(X)
    g = (X[:, :1].T + rng.normal(scale=0.1, size=(1, n))).astype(np.float32)
    h = np.ones((1, n), np.float32)
    chunks = _chunks(g, h, [1500, 2000, 1500], X=Xb)
    params = resolve_params(dict(data_sample_strategy="goss", num_leaves=8))
    sampler = RowSampler(params, [c.n_rows for c in chunks])
    executor = LocalExecutor()
    sampled = sampler.sample(executor, chunks, 10, key="t")
    meta, sp = FeatureMeta.from_bin_mapper(bm), SplitParams.from_params(params)
    for c in sampled:
        tree_rows, hist = partition_root(c, 0, meta, 8)
        assert tree_rows.subset is not None  # under half of each chunk's rows: a compact copy
        np.testing.assert_array_equal(tree_rows.partition_rows_of(0), c.rows)
        assert hist[0, 0] == len(c.rows)  # the count row: the leaf's row count
        for f in range(X.shape[1]):  # every feature's slice sums the selected rows' hessians
            lo, hi = meta.bin_offsets[f], meta.bin_offsets[f + 1]
            np.testing.assert_allclose(hist[lo:hi, 1].sum(),
                                       c.hessians[0][c.rows].astype(np.float64).sum(), rtol=1e-12)
    source = HistogramSource(sampled, 0, meta, sp, 8, executor=executor, key="t")
    tree, _ = TreeGrower(source, sp, meta.missing_types, 8, -1).grow(bm.bin_upper_bounds_, 0.1, 0)
    assert tree.n_leaves == 8
    assert tree.leaf_count.sum() == sum(len(c.rows) for c in sampled) < 0.4 * n
    arrays = tree.binned_arrays(meta.default_bins, meta.n_bins)
    after = [partition_apply_tree(c, arrays, 0) for c in sampled]
    delta = np.concatenate([a.raw_score[0] - c.raw_score[0] for a, c in zip(after, sampled)])
    # Every row moved by the tree's output (predicted on raw floats: an independent path).
    from oocgbdt.core.booster import Booster
    expected = Booster([tree], [0.0], params, X.shape[1]).predict(X, raw_score=True)
    np.testing.assert_allclose(delta, expected, rtol=0, atol=1e-12)



@pytest.mark.parametrize("strategy", [dict(data_sample_strategy="goss"),
                                      dict(bagging_fraction=0.3, bagging_freq=1)])
@pytest.mark.parametrize("sparse_columns", [0, 6])
def test_compact_subset_trains_the_same_model_bit_for_bit(monkeypatch, strategy, sparse_columns):
    """A sampled round's compact copy of its rows (``SUBSET_MAX_FRACTION``) changes where the
    rows are read from, not what is added: the model equals the one trained on the whole chunks
    (the subset disabled), bit for bit; with mutually exclusive sparse columns, through EFB
    bundles too."""
    import oocgbdt.core.partition as partition_mod
    rng = np.random.default_rng(11)
    n = 6000
    X = rng.normal(size=(n, 5 + sparse_columns)).astype(np.float32)
    if sparse_columns:  # one-hot-like block: at most one non-zero per row, so EFB bundles it
        hot = rng.integers(0, sparse_columns + 4, n)
        X[:, 5:] = 0
        for j in range(sparse_columns):
            X[hot == j, 5 + j] = rng.integers(1, 6, (hot == j).sum())  # few bins: one uint8 bundle
    y = (X[:, 0] * X[:, 1] + X[:, 2] + (X[:, 5:].sum(axis=1) if sparse_columns else 0)
         + rng.normal(scale=0.5, size=n) > 0).astype(np.float64)
    params = dict(objective="binary", n_estimators=14, num_leaves=12, learning_rate=0.2,
                  chunk_rows=1500, verbose=False, **strategy)

    def fit(fraction):
        monkeypatch.setattr(partition_mod, "SUBSET_MAX_FRACTION", fraction)
        return fit_in_process(params, X, y)

    compact, whole = fit(0.5), fit(0.0)
    if sparse_columns:
        assert any(len(b) > 1 for b in compact.bundles_)  # the one-hot block was bundled
    assert sum(s["n_rows"] for s in compact.tree_stats) < 0.7 * n * 14  # rounds did sample
    assert compact.to_dict() == whole.to_dict()
    np.testing.assert_array_equal(compact.predict(X, raw_score=True),
                                  whole.predict(X, raw_score=True))


def test_balanced_bagging_needs_the_binary_objective_and_bagging_freq():
    """LightGBM balances the bag only when its objective counts positive rows (binary), and
    then whatever bagging_fraction; the aliases are LightGBM's."""
    r = resolve_params(dict(objective="binary", pos_subsample=0.5, neg_bagging=0.9,
                            bagging_freq=1))
    assert (r["pos_bagging_fraction"], r["neg_bagging_fraction"]) == (0.5, 0.9)
    assert sampling_enabled(r)
    assert RowSampler(r, [10]).fractions == (0.5, 0.9)
    assert not sampling_enabled(dict(r, bagging_freq=0))
    assert not sampling_enabled(resolve_params(dict(objective="regression",
                                                    pos_bagging_fraction=0.5, bagging_freq=1)))
    plain = resolve_params(dict(objective="regression", pos_bagging_fraction=0.5,
                                bagging_fraction=0.7, bagging_freq=1))
    assert RowSampler(plain, [10]).fractions == (0.7, 0.7)


@pytest.mark.parametrize("objective, n_class, weighted", [
    ("binary", 1, False), ("regression", 1, True), ("huber", 1, False),
    ("multiclass", 3, True), ("poisson", 1, False)])
def test_gradients_of_the_selected_rows_are_the_every_row_values(objective, n_class, weighted):
    """A bagging round computes the gradients of its rows alone: at those rows, the values of
    the every-row call (the objective applied to NumPy-gathered inputs as the oracle as well),
    and the selection is kept."""
    rng = np.random.default_rng(5)
    n = 4001
    y = (rng.integers(0, n_class, n) if n_class > 1 else
         rng.integers(0, 2, n) if objective == "binary" else rng.poisson(2.0, n)).astype(np.float32)
    raw = rng.normal(size=(n_class, n))
    weight = rng.uniform(0.5, 2.0, n).astype(np.float32) if weighted else None
    rows = np.flatnonzero(rng.random(n) < 0.3).astype(np.int32)
    obj = get_objective(dict(objective=objective, num_class=n_class))
    data = PartitionData(np.zeros((n, 1), np.uint8), y, weight, raw, rows=rows)
    every = partition_gradients(data, obj)
    some = partition_gradients(data, obj, selected_rows=True)
    assert every.rows is None and some.rows is rows
    for name in ("gradients", "hessians"):
        np.testing.assert_array_equal(getattr(some, name)[:, rows], getattr(every, name)[:, rows])
    g = np.empty((rows.shape[0], n_class), np.float32)
    h = np.empty_like(g)
    obj.gradients(y[rows], np.ascontiguousarray(raw[:, rows].T),
                  None if weight is None else weight[rows], g, h)
    np.testing.assert_array_equal(some.gradients[:, rows], g.T)
    np.testing.assert_array_equal(some.hessians[:, rows], h.T)
    # without a selection, every row is computed
    whole = partition_gradients(PartitionData(data.X_binned, y, weight, raw), obj,
                                selected_rows=True)
    np.testing.assert_array_equal(whole.gradients, every.gradients)


@pytest.mark.parametrize("objective, n_class", [("binary", 1), ("multiclass", 3)])
def test_gradients_made_with_goss_keys_select_the_exact_top_set(objective, n_class):
    """A GOSS round's keys made with its gradients are NumPy's float32 sum over outputs of
    |g * h|, and the sampler told they are made selects the exact global top set from them
    (the NumPy oracle), the same rows as when it computes the keys itself."""
    rng = np.random.default_rng(11)
    n = sum(SIZES)
    y = (rng.integers(0, n_class, n) if n_class > 1 else rng.integers(0, 2, n)).astype(np.float32)
    raw = rng.normal(size=(n_class, n))
    obj = get_objective(dict(objective=objective, num_class=n_class))
    chunks, start = [], 0
    for s in SIZES:
        sl = slice(start, start + s)
        chunks.append(PartitionData(np.zeros((s, 1), np.uint8), y[sl], None, raw[:, sl]))
        start += s
    made = [partition_gradients(c, obj, with_goss_keys=True) for c in chunks]
    plain = [partition_gradients(c, obj) for c in chunks]
    assert all(c.goss_bits is None for c in plain)
    g = np.concatenate([c.gradients for c in plain], axis=1)
    h = np.concatenate([c.hessians for c in plain], axis=1)
    key = np.zeros(n, np.float32)
    for k in range(n_class):
        key += np.abs(g[k] * h[k])
    np.testing.assert_array_equal(np.concatenate([c.goss_bits for c in made]),
                                  key.view(np.uint32))
    p = resolve_params(dict(objective=objective, num_class=n_class, data_sample_strategy="goss",
                            top_rate=0.2, other_rate=0.1, learning_rate=0.1))
    rows = []
    for parts, keys_made in ((made, True), (plain, False)):
        sampler = RowSampler(p, SIZES)
        out = sampler.sample(LocalExecutor(), parts, 10, key="t", keys_made=keys_made)
        rows.append(np.concatenate([c.rows.astype(np.int64) + off
                                    for c, off in zip(out, sampler.offsets)]))
    np.testing.assert_array_equal(rows[0], rows[1])
    selected = np.zeros(n, bool)
    selected[rows[0]] = True
    assert selected[_oracle_top(key, goss_top_k(n, 0.2))].all()
