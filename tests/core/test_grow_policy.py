"""Growth policies (depth-wise, batched leaf-wise) and the bounded histogram pool.

Oracle: :func:`_naive_grow`, a tree grower written here from NumPy alone. It histograms every
leaf directly from its rows (``np.bincount``, no subtraction, no chunks), searches it with the
brute-force :func:`~oocgbdt.kernels.splitting.find_best_thresholds_naive` and routes rows with
LightGBM's decision rule, following each policy's rule as documented in
:mod:`oocgbdt.core.grower`. The grower under test histograms the smaller child per chunk, reduces
partials in a fan-in tree and derives siblings by subtraction, so its sums differ from the
oracle's only in rounding: structures must be equal and leaf values equal within 1e-9 relative
(sums of a few thousand float32 gradients in float64 differ by ~1e-13 relative; 1e-9 leaves a
margin for the division by the hessian sum and still catches any misrouted row, which moves a
leaf value by far more). Whole fits run on the core alone
(:func:`tests.core._helpers.fit_in_process`); through ``train`` and on a cluster:
tests/dask/test_grow_policy.py.
"""
import numpy as np
import pytest

from oocgbdt.core.executor import LocalExecutor
from oocgbdt.core.bin_mapper import BinMapper
from oocgbdt.core.boosting import histogram_pool_capacity
from oocgbdt.core.partition import PartitionData
from oocgbdt.core.grower import TreeGrower
from oocgbdt.core.histogram_source import HistogramSource
from oocgbdt.core.split import FeatureMeta, SplitParams
from oocgbdt.kernels.splitting import find_best_thresholds_naive
from oocgbdt.params import resolve_params
from tests.core._helpers import fit_in_process

RTOL = 1e-9


# ---- data and the grower under test -------------------------------------------------------------

def _data(n=6000, n_features=6, seed=0):
    """Continuous features (one with NaN, one with many exact zeros) and L2 gradients of the
    first tree (g = mean(y) - y, h = 1): every leaf has a split with a positive gain."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features)).astype(np.float32)
    X[rng.random(n) < 0.1, 1] = np.nan
    X[rng.random(n) < 0.3, 2] = 0.0
    f = 2 * X[:, 0] + np.sin(3 * np.nan_to_num(X[:, 1])) + X[:, 2] * X[:, 3] + np.abs(X[:, 4])
    y = f + rng.normal(scale=0.5, size=n)
    bm = BinMapper(max_bin=63).fit(X, n)
    Xb = bm.transform(X)
    g = (y.mean() - y).astype(np.float32)[None, :]
    h = np.ones((1, n), np.float32)
    return bm, Xb, g, h


def _chunks(Xb, g, h, sizes):
    out, start = [], 0
    for s in sizes:
        sl = slice(start, start + s)
        out.append(PartitionData(Xb[sl], np.zeros(s, np.float32), None, np.zeros((1, s)),
                             np.ascontiguousarray(g[:, sl]), np.ascontiguousarray(h[:, sl])))
        start += s
    return out


def _grow(bm, Xb, g, h, *, num_leaves, max_depth=-1, policy="leafwise", k=1, max_cached=None,
          source_cls=HistogramSource, sizes=(1000, 2500, 1500, 1000), split_every=2,
          lookahead=0):
    """Grow one tree with the code under test (4 chunks, fan-in 2: the reduction has levels)."""
    meta = FeatureMeta.from_bin_mapper(bm)
    sp = SplitParams.from_params(resolve_params(dict(min_data_in_leaf=20)))
    chunks = _chunks(Xb, g, h, sizes)
    source = source_cls(chunks, 0, meta, sp, num_leaves * (2 if lookahead else 1),
                        executor=LocalExecutor(), key="t", split_every=split_every,
                        max_cached=max_cached)
    grower = TreeGrower(source, sp, meta.missing_types, num_leaves, max_depth, grow_policy=policy,
                        max_leaves_per_pass=k, lookahead_leaves=lookahead)
    tree, builder = grower.grow(bm.bin_upper_bounds_, 1.0, 0)
    return tree, source


# ---- the oracle ---------------------------------------------------------------------------------

def _goes_left(col, threshold_bin, default_left, missing_type, default_bin, nan_bin):
    missing = ((missing_type == 2) & (col == nan_bin)) | ((missing_type == 1) & (col == default_bin))
    return np.where(missing, default_left, col <= threshold_bin)


def _naive_search(Xb, g, h, rows, meta, sp, allowed=None):
    """Best split of the leaf ``rows`` from a directly built histogram over the features in
    ``allowed`` (those with a valid split in the parent; None: all); (gain, f, t, dl, features
    with a valid split here) or None."""
    hist = np.zeros((meta.n_total_bins, 3))
    gg, hh = g[rows].astype(np.float64), h[rows].astype(np.float64)
    for f in range(Xb.shape[1]):
        b = Xb[rows, f].astype(np.int64) + meta.bin_offsets[f]
        hist[:, 0] += np.bincount(b, gg, meta.n_total_bins)
        hist[:, 1] += np.bincount(b, hh, meta.n_total_bins)
        hist[:, 2] += np.bincount(b, None, meta.n_total_bins)
    out = np.empty((Xb.shape[1], 6))
    find_best_thresholds_naive(hist, meta.bin_offsets, meta.n_bins, meta.missing_types,
                               meta.default_bins, meta.search_most_freq_bins(),
                               meta.feature_mask if allowed is None else meta.feature_mask & allowed,
                               gg.sum(), hh.sum(),
                               float(len(rows)), sp.lambda_l1, sp.lambda_l2, sp.min_data_in_leaf,
                               sp.min_sum_hessian_in_leaf, sp.min_gain_to_split, out)
    f = int(np.argmax(out[:, 0]))
    if not np.isfinite(out[f, 0]) or not out[f, 0] > 0:
        return None
    return float(out[f, 0]), f, int(out[f, 1]), bool(out[f, 2]), np.isfinite(out[:, 0])


def _naive_grow(bm, Xb, g, h, *, num_leaves, max_depth=-1, policy="leafwise", k=1):
    """Reference grower: per round, the open leaves with a positive gain, largest first (ties:
    lower leaf index), at most k (leaf-wise) or all (depth-wise) within the leaf budget; splits
    applied in that order, right child = next leaf id. Returns (nodes, leaf rows, rounds)."""
    meta = FeatureMeta.from_bin_mapper(bm)
    sp = SplitParams.from_params(resolve_params(dict(min_data_in_leaf=20)))
    g, h = g[0], h[0]
    leaf_rows = [np.arange(Xb.shape[0])]
    depth = [0]
    can = lambda d: max_depth <= 0 or d < max_depth
    best = {0: _naive_search(Xb, g, h, leaf_rows[0], meta, sp)}
    nodes, rounds = [], []
    allowed = {}  # split leaf -> features its children may split on (LightGBM's is_splittable)
    while len(leaf_rows) < num_leaves:
        ranked = sorted((l for l, s in best.items() if s is not None), key=lambda l: (-best[l][0], l))
        budget = num_leaves - len(leaf_rows)
        chosen = ranked[:budget if policy == "depthwise" else min(k, budget)]
        if not chosen:
            break
        rounds.append(chosen)
        children = []
        for leaf in chosen:
            gain, f, t, dl, valid = best.pop(leaf)
            allowed[leaf] = valid
            rows = leaf_rows[leaf]
            left = _goes_left(Xb[rows, f].astype(np.int64), t, dl, meta.missing_types[f],
                              meta.default_bins[f], meta.n_bins[f] - 1)
            leaf_rows[leaf] = rows[left]
            children += [leaf, len(leaf_rows)]
            leaf_rows.append(rows[~left])
            depth[leaf] += 1
            depth.append(depth[leaf])
            nodes.append((f, t, dl))
        small = 2 * sp.min_data_in_leaf  # LightGBM: siblings both below 2 x min_data: no search
        for left, right in zip(children[::2], children[1::2]):
            both_small = len(leaf_rows[left]) < small and len(leaf_rows[right]) < small
            for child in (left, right):
                best[child] = (_naive_search(Xb, g, h, leaf_rows[child], meta, sp, allowed[left])
                               if can(depth[child]) and not both_small else None)
    return nodes, leaf_rows, rounds


def _assert_same_tree(tree, nodes, leaf_rows, g, h):
    np.testing.assert_array_equal(tree.split_feature, [n[0] for n in nodes])
    np.testing.assert_array_equal(tree.threshold_bin, [n[1] for n in nodes])
    np.testing.assert_array_equal(tree.default_left, [n[2] for n in nodes])
    np.testing.assert_array_equal(tree.leaf_count, [len(r) for r in leaf_rows])
    # L2, lambda 0: leaf value = -sum(g) / sum(h) over the leaf's rows (shrinkage 1).
    expected = [-g[0, r].astype(np.float64).sum() / h[0, r].astype(np.float64).sum()
                for r in leaf_rows]
    np.testing.assert_allclose(tree.leaf_value, expected, rtol=RTOL, atol=0)


# ---- recording source ---------------------------------------------------------------------------

class RecordingSource(HistogramSource):
    """Records, per round of splits, the open leaves' gains before it, the leaves split, whether
    a pass was made, and the leaves whose histograms are kept after it."""

    def root(self):
        totals, split = super().root()
        self.open = {0: split}
        self.rounds = []
        self.kept_after = [self.kept_leaves]
        return totals, split

    def split_many(self, requests):
        before = {l: s.gain for l, s in self.open.items() if s is not None and s.gain > 0}
        passes = self.n_passes
        out = super().split_many(requests)
        for (leaf, right, _, _), (ls, rs) in zip(requests, out):
            del self.open[leaf]
            self.open[leaf], self.open[right] = ls, rs
        self.rounds.append(dict(open=before, split=[r[0] for r in requests],
                                passed=self.n_passes > passes))
        self.kept_after.append(self.kept_leaves)
        return out


def _expected_passes_leafwise(num_leaves, k):
    """Passes when every open leaf has a positive gain and depth is unbounded: the root pass,
    then one per round of min(k, open, budget) splits, except the round that fills the tree."""
    n = n_open = passes = 1
    while n < num_leaves:
        s = min(k, n_open, num_leaves - n)
        n, n_open = n + s, n_open + s
        passes += n < num_leaves
    return passes


# ---- leaf-wise k = 1: the best-first algorithm, bit for bit -------------------------------------

def _best_first(source, sp, missing_types, num_leaves, max_depth, bin_upper_bounds):
    """The best-first loop as it was before batched passes (one split per pass, through
    ``HistogramSource.split``/``forget``): the k = 1 reference."""
    from oocgbdt.core.tree import TreeBuilder
    can = lambda d: max_depth <= 0 or d < max_depth
    totals, root_split = source.root()
    builder = TreeBuilder(totals, sp.output(totals.sum_gradients, totals.sum_hessians))
    best = {0: root_split if can(0) else None}
    while builder.n_leaves < num_leaves:
        leaf, split = None, None
        for l in sorted(best):
            s = best[l]
            if s is not None and s.gain > 0 and (split is None or s.gain > split.gain):
                leaf, split = l, s
        if split is None:
            break
        right_leaf = builder.split(leaf, split, int(missing_types[split.feature]),
                                   builder.leaf_value[leaf],
                                   sp.output(split.left.sum_gradients, split.left.sum_hessians),
                                   sp.output(split.right.sum_gradients, split.right.sum_hessians))
        if can(builder.leaf_depth[leaf]) and builder.n_leaves < num_leaves:
            best[leaf], best[right_leaf] = source.split(leaf, right_leaf, split)
        else:
            source.forget(leaf)
            best[leaf] = best[right_leaf] = None
    return builder.build(bin_upper_bounds, 1.0, 0), source.n_passes


@pytest.mark.parametrize("num_leaves,max_depth", [(31, -1), (20, 4), (2, -1)])
def test_leafwise_k1_is_bit_identical_to_best_first(num_leaves, max_depth):
    bm, Xb, g, h = _data()
    tree, source = _grow(bm, Xb, g, h, num_leaves=num_leaves, max_depth=max_depth)
    meta = FeatureMeta.from_bin_mapper(bm)
    sp = SplitParams.from_params(resolve_params(dict(min_data_in_leaf=20)))
    ref_source = HistogramSource(_chunks(Xb, g, h, (1000, 2500, 1500, 1000)), 0, meta, sp,
                                 num_leaves, executor=LocalExecutor(), key="r", split_every=2)
    ref, ref_passes = _best_first(ref_source, sp, meta.missing_types, num_leaves, max_depth,
                                  bm.bin_upper_bounds_)
    assert tree == ref  # every array exactly equal
    assert source.n_passes == ref_passes
    nodes, leaf_rows, _ = _naive_grow(bm, Xb, g, h, num_leaves=num_leaves, max_depth=max_depth)
    _assert_same_tree(tree, nodes, leaf_rows, g, h)


# ---- depth-wise -----------------------------------------------------------------------------------

@pytest.mark.parametrize("num_leaves,max_depth", [
    (16, 4),    # full depth: one pass per level
    (11, -1),   # the budget ends the tree inside a level: largest gains first
    (31, 3),    # max_depth stops it at 8 leaves
    (31, -1),
])
def test_depthwise_matches_naive_oracle(num_leaves, max_depth):
    bm, Xb, g, h = _data()
    tree, source = _grow(bm, Xb, g, h, num_leaves=num_leaves, max_depth=max_depth,
                         policy="depthwise", source_cls=RecordingSource)
    nodes, leaf_rows, rounds = _naive_grow(bm, Xb, g, h, num_leaves=num_leaves,
                                           max_depth=max_depth, policy="depthwise")
    _assert_same_tree(tree, nodes, leaf_rows, g, h)
    assert [r["split"] for r in source.rounds] == rounds
    # One pass per level whose children may still be split: depth d (root 0) is searched iff
    # d < max_depth and the tree is not yet full.
    levels = int(np.ceil(np.log2(num_leaves)))
    if max_depth > 0:
        levels = min(levels, max_depth)
    assert source.n_passes == levels
    assert tree.n_leaves == min(num_leaves, 2 ** (max_depth if max_depth > 0 else 99))
    depth = _leaf_depths(tree)
    assert max(depth) == levels
    if max_depth > 0:
        assert max(depth) <= max_depth


def _leaf_depths(tree):
    depth = {}
    stack = [(0, 0)]
    while stack:
        node, d = stack.pop()
        for c in (tree.left_child[node], tree.right_child[node]):
            if c < 0:
                depth[~c] = d + 1
            else:
                stack.append((c, d + 1))
    return [depth[i] for i in range(tree.n_leaves)]


def test_depthwise_splits_every_open_leaf_each_pass():
    bm, Xb, g, h = _data()
    tree, source = _grow(bm, Xb, g, h, num_leaves=24, policy="depthwise",
                         source_cls=RecordingSource)
    n_leaves = 1
    for r in source.rounds:
        ranked = sorted(r["open"], key=lambda l: (-r["open"][l], l))
        assert r["split"] == ranked[:24 - n_leaves]
        assert len(r["split"]) == min(len(ranked), 24 - n_leaves)
        n_leaves += len(r["split"])
    assert tree.n_leaves == 24
    assert [len(r["split"]) for r in source.rounds] == [1, 2, 4, 8, 8]  # the budget cuts level 4


# ---- batched leaf-wise ----------------------------------------------------------------------------

@pytest.mark.parametrize("k", [2, 3, 4, 8])
def test_batched_leafwise_splits_the_k_best_open_leaves(k):
    num_leaves = 31
    bm, Xb, g, h = _data()
    tree, source = _grow(bm, Xb, g, h, num_leaves=num_leaves, k=k, source_cls=RecordingSource)
    done = 1
    for r in source.rounds:
        ranked = sorted(r["open"], key=lambda l: (-r["open"][l], l))
        assert r["split"] == ranked[:min(k, num_leaves - done)]
        done += len(r["split"])
    assert tree.n_leaves == num_leaves
    assert source.n_passes == _expected_passes_leafwise(num_leaves, k)
    nodes, leaf_rows, rounds = _naive_grow(bm, Xb, g, h, num_leaves=num_leaves, k=k)
    assert [r["split"] for r in source.rounds] == rounds
    _assert_same_tree(tree, nodes, leaf_rows, g, h)


# ---- splitting ahead (lookahead_leaves) ----------------------------------------------------------

@pytest.mark.parametrize("num_leaves,max_depth", [(31, -1), (7, -1), (31, 3), (63, -1)])
def test_splitting_ahead_grows_the_same_tree_in_fewer_passes(num_leaves, max_depth):
    """Leaves split ahead of their turn: the same tree, bit for bit, and the same feature gains
    (only applied splits count), as exact best-first growth without it, which the oracle checks;
    passes only fall."""
    bm, Xb, g, h = _data()
    exact, exact_source = _grow(bm, Xb, g, h, num_leaves=num_leaves, max_depth=max_depth)
    nodes, leaf_rows, _ = _naive_grow(bm, Xb, g, h, num_leaves=num_leaves, max_depth=max_depth)
    _assert_same_tree(exact, nodes, leaf_rows, g, h)
    passes = [exact_source.n_passes]
    for lookahead in (1, 2, 5):
        tree, source = _grow(bm, Xb, g, h, num_leaves=num_leaves, max_depth=max_depth,
                             lookahead=lookahead)
        for name in ("split_feature", "threshold_bin", "default_left", "left_child",
                     "right_child", "leaf_value", "leaf_count", "internal_value",
                     "internal_count", "split_gain"):
            np.testing.assert_array_equal(getattr(tree, name), getattr(exact, name), name)
        np.testing.assert_array_equal(source.feature_gains, exact_source.feature_gains)
        passes.append(source.n_passes)
    assert passes[1] <= passes[0] and passes[2] <= passes[0]
    if num_leaves >= 31 and max_depth <= 0:
        assert passes[2] < 0.6 * passes[0], passes


def test_splitting_ahead_with_a_bounded_pool_matches_the_oracle():
    """With 2 kept histograms, leaves split ahead compete for the pool and some are histogrammed
    from both children's rows: the tree is still best-first growth's (oracle, within rounding)."""
    bm, Xb, g, h = _data()
    nodes, leaf_rows, _ = _naive_grow(bm, Xb, g, h, num_leaves=31)
    tree, source = _grow(bm, Xb, g, h, num_leaves=31, max_cached=2, lookahead=2)
    assert source.n_hist_dropped > 0 and source.max_hist_kept <= 2
    _assert_same_tree(tree, nodes, leaf_rows, g, h)


def test_a_bounded_pool_turns_splitting_ahead_off():
    """With a bounded histogram pool, evictions would depend on the leaves split ahead (and a
    child built from rows rounds differently from one subtracted): lookahead_leaves is then
    ignored, so the model and the passes are those of lookahead_leaves=0. The case: weights
    over 8 orders of magnitude, where splitting ahead under this pool changes leaf values."""
    r = np.random.RandomState(11)
    X = r.randn(3000, 10).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 2] ** 2 + 0.3 * r.randn(3000) > 0).astype(float)
    w = 10.0 ** np.random.RandomState(5).uniform(-5, 5, 3000)
    base = dict(objective="binary", num_leaves=63, n_estimators=1, max_bin=63,
                min_data_in_leaf=5, verbose=False)
    fits = {}
    for pool in (-1.0, 0.02):
        for lookahead in (0, 2):
            b = fit_in_process(dict(base, histogram_pool_size=pool, lookahead_leaves=lookahead),
                               X, y, sample_weight=w)
            d = b.to_dict()
            d["params"].pop("lookahead_leaves")
            fits[pool, lookahead] = (d, b.tree_stats[0]["n_passes"], b.tree_stats[0]["n_hist_dropped"])
    assert fits[0.02, 0][2] > 0  # the pool evicts
    assert fits[0.02, 2][0] == fits[0.02, 0][0] and fits[0.02, 2][1] == fits[0.02, 0][1]
    assert fits[-1.0, 2][0] == fits[-1.0, 0][0] and fits[-1.0, 2][1] < fits[-1.0, 0][1]


def test_expected_passes_formula():
    assert _expected_passes_leafwise(31, 1) == 30  # 1 root pass + 29 split passes
    assert _expected_passes_leafwise(31, 2) == 16
    assert _expected_passes_leafwise(31, 100) == 5  # a depth-wise tree: 1, 2, 4, 8 open leaves


def test_tree_stats_passes_for_every_policy():
    """``tree_stats[i]['n_passes']`` of the boosting loop on data where every leaf splits."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(8000, 5)).astype(np.float32)
    y = X @ np.arange(1, 6) + np.sin(3 * X[:, 0]) + rng.normal(size=8000)
    base = dict(objective="regression", n_estimators=3, chunk_rows=3000, num_leaves=31)
    cases = [(dict(max_leaves_per_pass=1, lookahead_leaves=0), 30), (dict(max_leaves_per_pass=4), 9),
             (dict(grow_policy="depthwise"), 5), (dict(grow_policy="depthwise", max_depth=3), 3)]
    for extra, passes in cases:
        booster = fit_in_process(dict(base, **extra), X, y)
        for st in booster.tree_stats:
            assert st["n_passes"] == passes, extra
            # Unbounded pool: per searched split one child built, one derived by subtraction.
            assert st["n_hist_subtracted"] == st["n_hist_built"] - 1 > 0
            assert st["n_hist_dropped"] == 0
    assert _expected_passes_leafwise(31, 4) == 9


# ---- the bounded histogram pool -------------------------------------------------------------------

@pytest.mark.parametrize("policy,k", [("leafwise", 1), ("leafwise", 4), ("depthwise", 1)])
@pytest.mark.parametrize("max_cached", [0, 1, 3])
def test_bounded_pool_gives_the_same_tree_and_respects_the_bound(policy, k, max_cached):
    bm, Xb, g, h = _data()
    free, free_src = _grow(bm, Xb, g, h, num_leaves=31, policy=policy, k=k,
                           source_cls=RecordingSource)
    tree, src = _grow(bm, Xb, g, h, num_leaves=31, policy=policy, k=k, max_cached=max_cached,
                      source_cls=RecordingSource)
    for name in ("split_feature", "threshold_bin", "decision_type", "left_child", "right_child",
                 "leaf_count"):
        np.testing.assert_array_equal(getattr(tree, name), getattr(free, name))
    np.testing.assert_allclose(tree.leaf_value, free.leaf_value, rtol=RTOL, atol=0)
    assert src.n_passes == free_src.n_passes
    assert all(len(kept) <= max_cached for kept in src.kept_after)
    assert src.max_hist_kept <= max_cached < free_src.max_hist_kept
    assert src.n_hist_dropped > 0 and free_src.n_hist_dropped == 0
    # Every searched child is histogrammed: directly, or as parent minus sibling.
    searched = 2 * sum(len(r["split"]) for r in src.rounds if r["passed"])
    assert src.n_hist_built + src.n_hist_subtracted == 1 + searched
    assert free_src.n_hist_built == 1 + searched // 2  # unbounded: one built child per split
    if max_cached == 0:
        assert src.n_hist_subtracted == 0


def test_histograms_of_leaves_that_will_not_be_split_are_freed():
    """Unbounded pool: after each pass only open leaves with a positive gain keep histograms."""
    bm, Xb, g, h = _data(n=1500)  # small leaves: many children without a valid split
    tree, src = _grow(bm, Xb, g, h, num_leaves=31, source_cls=RecordingSource,
                      sizes=(500, 500, 500))
    # kept_after[j + 1] is the state after round j; round j + 1 recorded the open leaves with a
    # positive gain before it.
    for j in range(len(src.rounds) - 1):
        assert src.kept_after[j + 1] == sorted(src.rounds[j + 1]["open"])
    positive = sorted(l for l, s in src.open.items() if s is not None and s.gain > 0)
    assert src.kept_after[-1] == positive
    unsplittable = sum(1 for s in src.open.values() if s is None or not s.gain > 0)
    assert unsplittable > 0  # the case is exercised
    src.close()
    assert src.kept_leaves == []


# ---- with bundling, GOSS, multiclass, screening -----------------------------------------------------

def _mixed_data(n=4000, seed=3):
    """Non-negative features: 3 one-hot groups of 6 (bundled by EFB) and 4 |normal| columns.
    With non-negative data every feature's default bin is bin 0, so bundling is bit-identical
    to no bundling (docs/architecture.md)."""
    rng = np.random.default_rng(seed)
    cats = rng.integers(0, 6, size=(n, 3))
    onehot = np.zeros((n, 18), np.float32)
    for j in range(3):
        onehot[np.arange(n), 6 * j + cats[:, j]] = 1.0
    dense = np.abs(rng.normal(size=(n, 4))).astype(np.float32)
    X = np.hstack([onehot, dense])
    score = dense[:, 0] - dense[:, 1] + (cats[:, 0] % 3) * 0.7 - (cats[:, 1] == 2)
    y = np.digitize(score + rng.normal(scale=0.3, size=n), [0.0, 0.8]).astype(np.float64)
    return X, y


@pytest.mark.parametrize("extra", [dict(grow_policy="depthwise", max_depth=4),
                                   dict(grow_policy="depthwise"),
                                   dict(max_leaves_per_pass=3),
                                   dict(max_leaves_per_pass=3, histogram_pool_size=1e-4)])
def test_policies_with_bundling_goss_and_multiclass(extra):
    X, y = _mixed_data()
    base = dict(objective="multiclass", num_class=3, n_estimators=12, learning_rate=0.3,
                data_sample_strategy="goss", chunk_rows=700, num_leaves=15, **extra)
    bundled = fit_in_process(base, X, y)
    assert len(bundled.bundles_) < X.shape[1]  # the one-hot groups were bundled
    plain = fit_in_process(dict(base, enable_bundle=False), X, y)
    for a, b in zip(bundled.trees, plain.trees):
        for name in ("split_feature", "threshold_bin", "decision_type", "left_child",
                     "right_child", "leaf_count"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        np.testing.assert_allclose(a.leaf_value, b.leaf_value, rtol=RTOL)
    if "histogram_pool_size" not in extra:
        assert bundled == plain
    goss_rounds = [st for st in bundled.tree_stats[3 * int(1 / 0.3):]]
    assert goss_rounds and all(st["n_rows"] < 0.5 * len(y) for st in goss_rounds)
    if extra.get("grow_policy") == "depthwise":
        for t, st in zip(bundled.trees, bundled.tree_stats):
            if t.n_leaves > 1:
                assert max(_leaf_depths(t)) <= extra.get("max_depth", 99)
                assert st["n_passes"] <= max(_leaf_depths(t))
    acc = np.mean(np.argmax(bundled.predict(X), axis=1) == y)
    assert acc > 0.8


def test_policies_with_feature_screening():
    X, y = _mixed_data()
    base = dict(objective="multiclass", num_class=3, n_estimators=8, chunk_rows=1000,
                feature_screening="ema", screening_warmup=2, screening_ratio=0.5)
    for extra in (dict(grow_policy="depthwise"), dict(max_leaves_per_pass=4)):
        booster = fit_in_process(dict(base, **extra), X, y)
        assert np.mean(np.argmax(booster.predict(X), axis=1) == y) > 0.8


# ---- bad input ------------------------------------------------------------------------------------

def test_max_leaves_per_pass_with_depthwise_is_an_error():
    with pytest.raises(ValueError, match="max_leaves_per_pass=4.*grow_policy='depthwise'"):
        resolve_params(dict(grow_policy="depthwise", max_leaves_per_pass=4))
    resolve_params(dict(grow_policy="depthwise", max_leaves_per_pass=1))
    with pytest.raises(ValueError, match="max_leaves_per_pass"):
        resolve_params(dict(max_leaves_per_pass=0))
    with pytest.raises(ValueError, match="grow_policy"):
        resolve_params(dict(grow_policy="lossguide"))
    bm, Xb, g, h = _data(n=500)
    with pytest.raises(ValueError, match="max_leaves_per_pass=2"):
        _grow(bm, Xb, g, h, num_leaves=4, policy="depthwise", k=2, sizes=(500,))


# ---- applying a finished tree through its rows' grouping ---------------------------------------

@pytest.mark.parametrize("extra", [
    dict(),                                                   # exact leaf-wise, no lookahead
    dict(lookahead_leaves=2),                                 # leaves split ahead (some unused)
    dict(lookahead_leaves=3, max_depth=3),                    # depth-limited: unrouted splits
    dict(grow_policy="depthwise", max_depth=4),
    dict(max_leaves_per_pass=4, num_leaves=9),                # last round's splits unrouted
    dict(num_leaves=2),
    dict(objective="multiclass", num_class=3),
    dict(bagging_fraction=0.5, bagging_freq=1),               # sampled: left-out rows routed
    dict(bagging_fraction=0.5, bagging_freq=1, sparse=True),  # sampled, bundled
    dict(data_sample_strategy="goss", learning_rate=0.5),     # GOSS after its warm-up rounds
    dict(bagging_fraction=0.4, bagging_freq=1, feature_screening="ema", screening_warmup=1,
         sparse=True),                                        # sampled, bundled, compact columns
    dict(feature_screening="ema", screening_warmup=1, sparse=True),  # bundles, compact columns
    dict(min_gain_to_split=1e9),                              # no split at all
])
def test_applying_a_tree_through_its_row_segments_equals_walking_every_row(monkeypatch, extra):
    """``partition_apply_tree`` given the rows' grouping by leaf finds each row's leaf with one
    decision (``leaves_by_segment``), and in sampled rounds routes the rows left out down the
    tree from column-major bins (``leaves_by_routing``, bins in memory) or walks them from
    row-major ones (``leaves_by_walk``, as with the disk cache): the same leaves as walking
    every row from the root, so the same model bit for bit (the oracle: training with the
    grouping withheld), whatever the growth policy, lookahead, depth limit, bundling, sampling
    or number of outputs."""
    import oocgbdt.core.partition as partition_mod
    extra = dict(extra)
    sparse = extra.pop("sparse", False)
    rng = np.random.default_rng(21)
    n = 5000
    X = rng.normal(size=(n, 8)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    if sparse:  # a one-hot block that EFB bundles
        hot = rng.integers(0, 8, n)
        X = np.hstack([X, np.stack([(hot == j) * rng.integers(1, 4, n) for j in range(5)],
                                   axis=1).astype(np.float32)])
    z = np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1]) ** 2 + np.isnan(X[:, 2])
    if sparse:  # splits on the bundled features, inside their bundle's range
        z = z + 1.5 * (X[:, 8] == 1) - 1.5 * (X[:, 9] >= 2)
    y = np.digitize(z, [-1.0, 0.0]).astype(np.float64)
    if extra.get("objective") != "multiclass":
        y = (y > 0).astype(np.float64)
    params = dict(dict(objective="binary", n_estimators=6, num_leaves=15, min_data_in_leaf=5,
                       chunk_rows=1200, verbose=False), **extra)
    used, routed_rows, walked_rows = [], [], []
    kernel, router = partition_mod.leaves_by_segment, partition_mod.leaves_by_routing
    walker = partition_mod.leaves_by_walk

    def spy(*args):
        used.append(1)
        return kernel(*args)

    def spy_routing(X, rows, *args):
        routed_rows.append(rows.shape[0])
        return router(X, rows, *args)

    def spy_walk(X, rows, *args):
        walked_rows.append(rows.shape[0])
        return walker(X, rows, *args)

    monkeypatch.setattr(partition_mod, "leaves_by_segment", spy)
    monkeypatch.setattr(partition_mod, "leaves_by_routing", spy_routing)
    monkeypatch.setattr(partition_mod, "leaves_by_walk", spy_walk)
    fast = fit_in_process(params, X, y, executor=LocalExecutor(n_threads=2))
    n_fast = len(used)
    import oocgbdt.core.boosting as boosting_mod
    apply = boosting_mod.partition_apply_tree
    assert (sum(walked_rows) > 0) is False  # bins in memory: left-out rows are routed

    def by_walk(data, arrays, class_idx, rows=None, by_column=True):
        return apply(data, arrays, class_idx, rows, False)  # as with the disk cache's bins

    monkeypatch.setattr(boosting_mod, "partition_apply_tree", by_walk)
    one_thread = fit_in_process(params, X, y, executor=LocalExecutor(n_threads=1))
    # Without the grower's routed flags every row of a segment is decided at its last split.

    def without_flags(data, arrays, class_idx, rows=None, by_column=True):
        return apply(data, {k: v for k, v in arrays.items() if k != "routed"}, class_idx, rows,
                     by_column)

    monkeypatch.setattr(boosting_mod, "partition_apply_tree", without_flags)
    decided = fit_in_process(params, X, y)
    monkeypatch.setattr(boosting_mod, "partition_apply_tree", apply)
    monkeypatch.setattr(HistogramSource, "rows",
                        property(lambda self: [None] * len(self.partitions)))
    used.clear()
    walked = fit_in_process(params, X, y)
    assert len(used) == 0
    assert n_fast > 0  # the segments were used
    sampled = "bagging_fraction" in extra or "data_sample_strategy" in extra
    assert (sum(routed_rows) > 0) == sampled  # left-out rows were routed in sampled rounds
    assert (sum(walked_rows) > 0) == sampled  # and walked when asked
    for got in (fast, one_thread, decided):
        assert got.to_dict() == walked.to_dict()
        np.testing.assert_array_equal(got.predict(X, raw_score=True),
                                      walked.predict(X, raw_score=True))
