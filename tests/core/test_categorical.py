"""Categorical features in core: which columns (``resolve_categorical_feature``), their bins
against LightGBM's (``feature_infos`` lists each bin's category, ``feature_num_bin`` the bins),
the trees' categorical fields through save and load, and EFB leaving them alone."""
import json

import numpy as np
import pytest

from oocgbdt.core.bin_mapper import BinMapper
from oocgbdt.core.bundler import FeatureBundler, chunk_conflicts, sample_pattern
from oocgbdt.core.categorical import find_categorical_bin, resolve_categorical_feature
from oocgbdt.core.tree import Tree
from oocgbdt.params import resolve_params


# ---- resolve_categorical_feature -----------------------------------------------------------

def test_resolve_indices_names_and_cli_strings():
    names = ["a", "b", "c", "d"]
    assert resolve_categorical_feature(None, names, 4) == ()
    assert resolve_categorical_feature([3, 1, 3], names, 4) == (1, 3)
    assert resolve_categorical_feature(["d", "a"], names, 4) == (0, 3)
    for text, expected in (("0,2", (0, 2)), ("name:b,c", (1, 2))):
        value = resolve_params({"cat_feature": text})["categorical_feature"]
        assert resolve_categorical_feature(value, names, 4) == expected


def test_resolve_auto_uses_the_dataframe_columns_only():
    assert resolve_categorical_feature("auto", None, 5) == ()
    assert resolve_categorical_feature("auto", None, 5, auto=(4, 2)) == (2, 4)


@pytest.mark.parametrize("value, names, match", [
    (["zz"], ["a", "b"], "'zz', which is not a feature name"),
    (["a"], None, "has no feature names"),
    ([2], ["a", "b"], "index 2 is out of range: X has 2 columns"),
    ([-1], ["a", "b"], "index -1 is out of range"),
    ([1.5], ["a", "b"], "must list int indices or str names"),
])
def test_resolve_refuses_bad_values(value, names, match):
    with pytest.raises(ValueError, match=match):
        resolve_categorical_feature(value, names, 2)


def test_params_refuse_mixed_or_malformed_values():
    with pytest.raises(TypeError, match="categorical_feature"):
        resolve_params({"categorical_feature": [0, "a"]})
    with pytest.raises(TypeError, match="categorical_feature"):
        resolve_params({"categorical_column": "0,x"})


def test_fractional_codes_are_truncated_as_lightgbm():
    """Fractional values of a categorical column are categories truncated toward zero, as
    LightGBM's ``static_cast<int>``: (-1, 0) is category 0, -1 and below are missing. The bins
    are LightGBM's, every value is binned as its truncation, and one warning names the columns
    that hold fractions."""
    rng = np.random.default_rng(3)
    n = 2000
    X = np.column_stack([
        rng.integers(0, 5, n),                          # integer codes: no warning
        rng.uniform(-2.0, 6.0, n),                      # fractions, negative ones too
        np.where(rng.random(n) < 0.1, np.nan, rng.integers(0, 4, n) + 0.5),
    ]).astype(np.float32)
    infos, num_bin = _lightgbm_infos(X, [0, 1, 2])
    with pytest.warns(UserWarning) as record:
        bm = BinMapper(categorical_features=[0, 1, 2]).fit(X, n)
    messages = [str(w.message) for w in record]
    assert len(messages) == 1 and "column(s) 1 (e.g." in messages[0] and ", 2 (e.g." in messages[0]
    assert "truncated toward zero" in messages[0]
    assert bm.feature_infos_ == infos
    assert list(bm.n_bins_) == num_bin
    as_int = np.where(np.isnan(X), np.nan, np.trunc(X))
    np.testing.assert_array_equal(bm.transform(X), bm.transform(as_int.astype(np.float32)))
    assert bm.transform(np.array([[0, -0.5, 0]], np.float32))[0, 1] == \
        bm.transform(np.array([[0, 0, 0]], np.float32))[0, 1] != 0


# ---- bins against LightGBM ---------------------------------------------------------------

def _lightgbm_infos(X, cat, **params):
    """LightGBM's ``feature_infos`` (categories of each bin, ``:``-joined, or ``none``) and
    ``feature_num_bin`` for the categorical columns ``cat``."""
    lgb = pytest.importorskip("lightgbm")
    p = dict(dict(verbose=-1, num_threads=1, min_data_in_leaf=20, max_bin=255), **params)
    ds = lgb.Dataset(X, np.arange(len(X)) % 2, categorical_feature=cat, params=p,
                     free_raw_data=False)
    booster = lgb.train(dict(p, objective="regression"), ds, num_boost_round=1)
    line = next(l for l in booster.model_to_string().splitlines() if l.startswith("feature_infos="))
    infos = line[len("feature_infos="):].split(" ")
    return infos, [ds.feature_num_bin(f) for f in range(X.shape[1])]


def _categorical_columns(seed, n=3000):
    rng = np.random.default_rng(seed)
    cols = []
    # skewed, with NaN and negatives (missing), a rare tail dropped at 99%, sparse codes
    z = rng.zipf(1.6, n).astype(np.float64)
    z[z > 400] = 400 + rng.integers(0, 3, (z > 400).sum())
    z[rng.random(n) < 0.05] = np.nan
    z[rng.random(n) < 0.02] = -1
    cols.append(z - 1)
    cols.append(rng.integers(0, 3, n).astype(np.float64))               # few levels, no missing
    cols.append(rng.integers(0, 600, n).astype(np.float64))             # more categories than max_bin
    cols.append(np.where(rng.random(n) < 0.97, 0.0, rng.integers(1, 4, n)))  # mostly zero
    cols.append(np.where(rng.random(n) < 0.5, np.nan, 7.0))              # one category + NaN
    return np.column_stack(cols).astype(np.float32)


@pytest.mark.parametrize("params", [
    dict(),
    dict(max_bin=15, min_data_in_bin=1),
    dict(use_missing=False),
    dict(zero_as_missing=True, min_data_in_bin=5),
])
@pytest.mark.parametrize("seed", [0, 1])
def test_categorical_bins_equal_lightgbm(seed, params):
    X = _categorical_columns(seed)
    cat = list(range(X.shape[1]))
    infos, num_bin = _lightgbm_infos(X, cat, **params)
    bm = BinMapper(categorical_features=cat, **params).fit(X, len(X))
    assert bm.feature_infos_ == infos
    for f in cat:
        if infos[f] != "none":
            assert bm.n_bins_[f] == num_bin[f], f"feature {f}"
    # transform puts each category in the bin feature_infos lists it at, everything else in 0
    Xb = bm.transform(X)
    for f in cat:
        if infos[f] == "none":
            continue
        position = {int(c): b for b, c in enumerate(infos[f].split(":")) if b > 0}
        expected = [position.get(int(v), 0) if np.isfinite(v) and v >= 0 else 0 for v in X[:, f]]
        np.testing.assert_array_equal(Xb[:, f], expected, err_msg=f"feature {f}")


def test_categorical_bins_beyond_max_bin_use_uint16_and_round_trip():
    X = _categorical_columns(3)[:, [2]]
    bm = BinMapper(max_bin=255, categorical_features=[0]).fit(X, len(X))
    infos, num_bin = _lightgbm_infos(X, [0])
    assert bm.n_bins_[0] == num_bin[0] > 256  # 99% of the rows: more bins than max_bin
    assert bm.transform(X).dtype == np.uint16
    back = BinMapper.from_dict(json.loads(json.dumps(bm.to_dict())))
    np.testing.assert_array_equal(back.transform(X), bm.transform(X))
    assert back.feature_infos_ == bm.feature_infos_ == infos


def test_find_categorical_bin_drops_the_rare_tail_as_lightgbm():
    # 6 zeros, five 2s, two 9s, one NaN, one -3: after two kept categories a category with
    # fewer than min_data_in_bin rows ends the list (9 is dropped, so the feature has missing
    # values: NaN type), and category 0's bin is the default bin
    col = np.array([0] * 6 + [2] * 5 + [9] * 2 + [np.nan, -3], np.float32)
    infos, _ = _lightgbm_infos(np.tile(col, 4)[:, None], [0], min_data_in_bin=12,
                               min_data_in_leaf=1)
    cats, mt, default_bin, most_freq, trivial, lo, hi = find_categorical_bin(
        np.tile(col, 4), 4 * len(col), 255, 12, True, False, True, 0)
    assert ":".join(str(c) for c in cats) == infos[0]
    assert 9 not in cats and mt == 2 and not trivial
    assert default_bin == cats.tolist().index(0)
    assert (lo, hi) == (-3.0, 9.0)
    # the most frequent bin (category 0, 40% of the rows) is under LightGBM's 70%: default bin
    assert most_freq == default_bin


# ---- trees and EFB -----------------------------------------------------------------------

def _tree_with_categorical_node():
    return Tree(split_feature=[2, 0], threshold=[0.0, 1.5], threshold_bin=[0, 3],
                decision_type=[1 | (2 << 2), 2], left_child=[1, ~0], right_child=[~1, ~2],
                split_gain=[5.0, 1.0], internal_value=[0.0, 0.1], internal_weight=[10, 6],
                internal_count=[10, 6], leaf_value=[1.0, 2.0, 3.0], leaf_weight=[3, 4, 3],
                leaf_count=[3, 4, 3], cat_boundaries=[0, 2], cat_threshold=[0b1010, 1],
                cat_boundaries_inner=[0, 1], cat_threshold_inner=[0b110])


def test_tree_categorical_fields_round_trip_and_count_in_equality():
    t = _tree_with_categorical_node()
    back = Tree.from_dict(json.loads(json.dumps(t.to_dict())))
    assert back == t
    assert back.cat_threshold.dtype == np.uint32 and back.cat_boundaries.dtype == np.int32
    other = Tree.from_dict(dict(t.to_dict(), cat_threshold=[0b1000, 1]))
    assert other != t


def test_tree_dict_without_categorical_fields_still_loads():
    d = _tree_with_categorical_node().to_dict()
    d["decision_type"] = [2 << 2, 2]
    for k in ("cat_boundaries", "cat_threshold", "cat_boundaries_inner", "cat_threshold_inner"):
        del d[k]
    t = Tree.from_dict(d)
    assert t.cat_boundaries.tolist() == [0] and t.cat_threshold.size == 0


def test_bundler_never_bundles_a_categorical_feature():
    rng = np.random.default_rng(0)
    n = 2000
    # four mutually exclusive sparse columns: EFB merges them all unless told otherwise
    which = rng.integers(0, 5, n)
    X = np.zeros((n, 4), np.float32)
    for f in range(4):
        X[which == f, f] = rng.integers(1, 6, (which == f).sum())
    for cat in ([], [1], [0, 3]):
        bm = BinMapper(categorical_features=cat).fit(X, n)
        counts = chunk_conflicts(sample_pattern(X, None, bm))
        b = FeatureBundler().fit(counts, bm.n_bins_, bm.default_bins_, bm.is_trivial_,
                                 bm.is_categorical_)
        for f in cat:
            assert [f] in [list(x) for x in b.bundles_], (cat, b.bundles_)
        together = [x for x in b.bundles_ if len(x) > 1]
        assert len(together) == 1 and sorted(together[0]) == sorted(set(range(4)) - set(cat))


def test_sparse_category_codes_warn():
    col = np.repeat(np.array([0.0, 1.0, 5000.0], np.float32), 20)[:, None]
    with pytest.warns(UserWarning, match="sparse codes"):
        bm = BinMapper(categorical_features=[0]).fit(col, len(col))
    assert bm.bin_categories_[0].tolist() == [-1, 0, 1, 5000]
