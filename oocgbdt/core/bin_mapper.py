"""This module contains :class:`BinMapper`: LightGBM's per-feature bin finding and value binning.

Data flow position: first stage. ``fit`` runs once, on a row sample held in memory (the Dask
layer draws it, ``oocgbdt.dask.binning``); ``transform`` then maps every chunk of raw float32
values to uint8/uint16 bin indices with the numba kernel
:func:`oocgbdt.kernels.binning.map_to_bins`. Split search, row routing and EFB all work on bins;
only the final trees go back to raw thresholds through :meth:`BinMapper.threshold`.

Algorithm reference: LightGBM's ``BinMapper::FindBin`` (``src/io/bin.cpp:315-512``) with
``GreedyFindBin`` / ``FindBinWithZeroAsOneBin`` (``bin.cpp:80-302``), ``NeedFilter``
(``bin.cpp:56-78``) and ``ValueToBin`` (``include/LightGBM/bin.h:612-650``), as restated in
``/work/shared/reference/lightgbm-algorithms.md`` section 1. Categorical features
(``categorical_features``) follow FindBin's categorical branch
(:func:`oocgbdt.core.categorical.find_categorical_bin`, ``docs/categorical.md``).
"""
from __future__ import annotations

import math
import numbers
import os
import uuid
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from oocgbdt._dtypes import (
    K_ZERO_THRESHOLD,
    MISSING_NAN,
    MISSING_NONE,
    MISSING_ZERO,
    X_BINNED_DTYPE,
    X_BINNED_DTYPE_WIDE,
    X_DTYPE,
)
from oocgbdt.core.categorical import find_categorical_bin, warn_fractional_categories
from oocgbdt.kernels.binning import (
    count_at_most,
    counts_in_bins,
    distinct_of_sorted,
    find_bin_with_zero_as_one_bin,
    find_distinct_values_naive,
    csr_column_counts,
    csr_column_values,
    csr_scatter_columns,
    fit_numerical_values,
    map_to_bins,
    split_csc_columns,
    split_sample_columns,
    unsorted_runs,
)
from oocgbdt.kernels.bundling import bundle_sparse_rows_guided, value_guides
from oocgbdt.kernels.categorical import map_categories
from oocgbdt.kernels.sampling import lightgbm_sample

__all__ = ["BinMapper", "sample_row_indices"]

#: LightGBM's ``kSparseThreshold`` (``include/LightGBM/bin.h``): below this share, the most
#: frequent bin falls back to the default (zero) bin.
K_SPARSE_THRESHOLD = 0.7
#: Largest supported ``max_bin``: bins must fit in uint16.
MAX_MAX_BIN = 65536
#: The fewest stored entries of a sparse bin sample regrouped by column on several threads
#: (:meth:`_SparseColumns.from_csr`): below, starting the threads costs more than they save.
MIN_THREADED_REGROUP = 2 ** 18
#: Features per task of :meth:`BinMapper.fit` (one pass over the sample's rows per task).
FIT_FEATURE_GROUP = 8
#: Runs of sampled values longer than this are sorted by NumPy (SIMD sort), shorter ones by numba.
_NUMPY_SORT_MIN = 256
_DICT_FORMAT = "oocgbdt.BinMapper"
_DICT_VERSION = 1


def _check_int(name, value, minimum):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= {minimum}, found {value!r} "
                         f"of type {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, found {value}")
    return int(value)


def _check_bool(name, value):
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a bool, found {value!r} of type {type(value).__name__}")
    return bool(value)


def _encode_float(x):
    """A JSON-safe float: finite values as numbers, +-inf and NaN as the strings 'inf', 'nan'."""
    x = float(x)
    return x if math.isfinite(x) else repr(x)


def _decode_float(x):
    return float(x)


def _format_double(x):
    """C++ ``ostream << setprecision(17) << x`` (LightGBM's ``bin_info_string``)."""
    return format(float(x), ".17g")


def sample_row_indices(n_rows: int, n_sample: int, seed: int) -> np.ndarray | None:
    """The bin sample's rows: LightGBM's ``Random(seed).Sample(n_rows, n_sample)``
    (:func:`~oocgbdt.kernels.sampling.lightgbm_sample`, ascending int64) over the global row
    range, so the sample, and hence the bins, are LightGBM's and do not depend on chunking;
    None means every row (no more than ``n_sample``). ``seed`` is ``data_random_seed``; LightGBM
    keeps it in a 32-bit unsigned state, so it is taken modulo 2**32 (a larger seed draws what
    LightGBM draws from its low 32 bits)."""
    if n_sample >= n_rows:
        return None
    return lightgbm_sample(int(n_rows), int(n_sample), int(seed) & 0xFFFFFFFF)


class BinMapper:
    """Find LightGBM's numerical bins on a sample, then map raw values to bin indices.

    Parameters
    ----------
    max_bin : int, default=255
        Maximum number of bins per feature, including the NaN bin (LightGBM's ``max_bin``);
        2 <= max_bin <= 65536.
    min_data_in_bin : int, default=3
        Minimum number of sampled rows per bin (LightGBM's ``min_data_in_bin``); >= 1.
    use_missing : bool, default=True
        If False, every feature has missing type None and NaN is binned as 0.0.
    zero_as_missing : bool, default=False
        If True (and ``use_missing``), zeros are the missing value (missing type Zero).
    feature_pre_filter : bool, default=True
        Mark as trivial a feature whose bins cannot leave ``filter_cnt`` sampled rows on both
        sides of any boundary, with ``filter_cnt = int(min_data_in_leaf * K / N)``.
    min_data_in_leaf : int, default=20
        Used only by the pre-filter; >= 0.
    categorical_features : sequence of int, default=()
        Columns binned as categories (LightGBM's ``categorical_feature``, resolved to
        indices): bin 0 holds NaN, negative values and the categories left out, bins 1.. the
        kept categories by decreasing sampled count.

    Attributes
    ----------
    bin_upper_bounds_ : list of n_features ndarrays, dtype float64
        ``bin_upper_bounds_[f]`` has length ``n_bins_[f]``; bin ``b`` holds
        ``(upper[b - 1], upper[b]]``. The last non-NaN bound is ``+inf``. A NaN-type feature's
        last bound is NaN (its NaN bin). If the sample has zeros and values on both sides, the
        zero bin is ``(-kZ, kZ]`` with kZ = ``K_ZERO_THRESHOLD``.
    n_bins_ : ndarray of shape (n_features,), dtype int32
        Bins per feature, including the NaN bin. This equals LightGBM's
        ``Dataset.feature_num_bin(f)`` for non-trivial features (LightGBM reports 0 for the
        features it drops).
    missing_types_ : ndarray of shape (n_features,), dtype uint8
        ``MISSING_NONE``, ``MISSING_ZERO`` or ``MISSING_NAN`` (``oocgbdt._dtypes``).
    default_bins_ : ndarray of shape (n_features,), dtype int32
        Bin of the value 0.0.
    most_freq_bins_ : ndarray of shape (n_features,), dtype int32
        Most populated bin of the sample (first one on ties); replaced by ``default_bins_[f]``
        when it differs from it and holds less than ``K_SPARSE_THRESHOLD`` (0.7) of the sample.
    is_trivial_ : ndarray of shape (n_features,), dtype bool
        Features never to split on: a single bin, or removed by the pre-filter.
    min_values_, max_values_ : ndarray of shape (n_features,), dtype float64
        Smallest and largest distinct sampled value (0.0 counts when the sample has zeros).
    feature_infos_ : list of n_features str
        ``"[min:max]"`` (``%.17g``) or ``"none"`` for trivial features, as in LightGBM's model
        file ``feature_infos=`` line.
    binned_dtype_ : type
        ``np.uint8`` if every ``n_bins_ <= 256``, else ``np.uint16``.
    is_categorical_ : ndarray of shape (n_features,), dtype bool
    bin_categories_ : list of n_features (ndarray of int64, or None)
        For a categorical feature, the category of each bin (LightGBM's ``bin_2_categorical``,
        -1 for bin 0); None for numerical features. A categorical feature's
        ``bin_upper_bounds_`` entry is ``0, 1, ..., n_bins - 1`` (a placeholder: it has no
        bounds) and its ``feature_infos_`` entry the categories joined by ``:``, as LightGBM's.
    n_features_in_ : int
    n_total_bins_ : int
        ``n_bins_.sum()``.
    bin_offsets_ : ndarray of shape (n_features + 1,), dtype int64
        Cumulative ``n_bins_``: feature ``f``'s bins occupy
        ``[bin_offsets_[f], bin_offsets_[f + 1])`` of a flat histogram.
    n_samples_fit_ : int
        K, the number of sampled rows ``fit`` saw.
    n_samples_total_ : int
        N, the number of rows of the full data.
    sample_nondefault_counts_ : ndarray of shape (n_features,), dtype int64, or None
        Sampled rows whose bin (as ``transform`` bins them) is not ``default_bins_[f]``; -1
        where ``fit`` cannot tell exactly without binning the sample (the feature has sampled
        values with ``0 < |v| <= kZ``, which ``FindBin`` counts as zeros but ``transform`` bins
        by value; or a sparse sample had duplicate entries). EFB uses these counts to see that
        no two features can share a bundle (:func:`oocgbdt.core.bundler.no_bundle_possible`).
        None on a mapper rebuilt by :meth:`from_dict` (they are not serialized).

    Notes
    -----
    Per feature, ``fit`` follows LightGBM's ``BinMapper::FindBin`` (``src/io/bin.cpp``):

    1. Missing type: None if ``not use_missing``; Zero if ``zero_as_missing``; else NaN if the
       sample has a NaN, otherwise None. NaNs of a None/Zero feature count as zeros.
    2. Values with ``|v| <= kZ`` are zeros; the non-zero values are sorted, merged within one
       ulp, and 0.0 is inserted (:func:`oocgbdt.kernels.binning.find_distinct_values`).
    3. Bounds: ``FindBinWithZeroAsOneBin(max_bin, K)``; for NaN type
       ``FindBinWithZeroAsOneBin(max_bin - 1, K - n_nan)`` followed by a NaN bound. A Zero-type
       feature with only 2 bins is downgraded to None.
    4. Trivial if one bin, or if ``feature_pre_filter`` and ``NeedFilter`` holds.

    ``fit`` casts the sample to float32 first (``X_DTYPE``), as ``transform`` does, so that a
    sampled value is binned by ``transform`` into the bin ``fit`` counted it in. LightGBM given
    the same float32 array finds the same bounds.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [2.0], [np.nan]] * 3)
    >>> bm = BinMapper(min_data_in_bin=1).fit(X, n_samples_total=12)
    >>> bm.transform(X)[:4, 0].tolist()
    [0, 1, 2, 3]
    """

    def __init__(self, max_bin=255, min_data_in_bin=3, use_missing=True, zero_as_missing=False,
                 feature_pre_filter=True, min_data_in_leaf=20, categorical_features=()):
        self.max_bin = max_bin
        self.min_data_in_bin = min_data_in_bin
        self.use_missing = use_missing
        self.zero_as_missing = zero_as_missing
        self.feature_pre_filter = feature_pre_filter
        self.min_data_in_leaf = min_data_in_leaf
        self.categorical_features = categorical_features

    # ---------------------------------------------------------------------------------------
    # parameters
    # ---------------------------------------------------------------------------------------

    def get_params(self):
        """The constructor parameters, as a dict."""
        return {
            "max_bin": self.max_bin,
            "min_data_in_bin": self.min_data_in_bin,
            "use_missing": self.use_missing,
            "zero_as_missing": self.zero_as_missing,
            "feature_pre_filter": self.feature_pre_filter,
            "min_data_in_leaf": self.min_data_in_leaf,
            "categorical_features": [int(f) for f in self.categorical_features],
        }

    def _validate_params(self):
        max_bin = _check_int("max_bin", self.max_bin, 2)
        if max_bin > MAX_MAX_BIN:
            raise ValueError(f"max_bin must be <= {MAX_MAX_BIN} (bins are stored as uint16), "
                             f"found {max_bin}")
        return (max_bin,
                _check_int("min_data_in_bin", self.min_data_in_bin, 1),
                _check_bool("use_missing", self.use_missing),
                _check_bool("zero_as_missing", self.zero_as_missing),
                _check_bool("feature_pre_filter", self.feature_pre_filter),
                _check_int("min_data_in_leaf", self.min_data_in_leaf, 0),
                tuple(sorted({_check_int("categorical_features item", f, 0)
                              for f in self.categorical_features})))

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"BinMapper({args})"

    # ---------------------------------------------------------------------------------------
    # fit
    # ---------------------------------------------------------------------------------------

    @classmethod
    def from_params(cls, params) -> "BinMapper":
        """An unfitted mapper with the bin settings of resolved training ``params``
        (``max_bin``, ``min_data_in_bin``, ``use_missing``, ``zero_as_missing``,
        ``feature_pre_filter``, ``min_data_in_leaf``)."""
        cat = params.get("categorical_feature")
        if cat is None:
            cat = ()
        if isinstance(cat, str) or any(not isinstance(c, numbers.Integral) for c in cat):
            raise ValueError(f"categorical_feature must be resolved to column indices "
                             f"(oocgbdt.core.categorical.resolve_categorical_feature) before "
                             f"binning, found {cat!r}")
        return cls(max_bin=int(params["max_bin"]), min_data_in_bin=int(params["min_data_in_bin"]),
                   use_missing=bool(params["use_missing"]),
                   zero_as_missing=bool(params["zero_as_missing"]),
                   feature_pre_filter=bool(params["feature_pre_filter"]),
                   min_data_in_leaf=int(params["min_data_in_leaf"]),
                   categorical_features=tuple(int(c) for c in cat))

    def fit(self, X_sample, n_samples_total, n_threads=None):
        """Find every feature's bins on a row sample.

        Parameters
        ----------
        X_sample : array-like of shape (K, n_features), real dtype, or scipy.sparse matrix
            The K sampled rows (NaN allowed; +-inf allowed but not meaningful). Cast to float32.
            When the full data has at most ``bin_construct_sample_cnt`` (200000) rows, pass all
            of them: that is LightGBM's sample too. A sparse sample is read column by column
            from its stored entries (implicit zeros are zeros), as LightGBM reads its sample.
        n_samples_total : int
            N, the number of rows in the full data (N >= K); used only for the pre-filter
            count ``filter_cnt = int(min_data_in_leaf * K / N)``.
        n_threads : int, optional
            Threads to fit on (default: one per core).

        Returns
        -------
        self : BinMapper

        Notes
        -----
        Features are fitted in groups (``FIT_FEATURE_GROUP`` dense columns; for a sparse
        sample, about four groups per thread) on up to ``n_threads`` threads, one numba call
        per group (the kernels release the GIL); each feature's result does not depend on the
        grouping (:func:`_find_bin_naive` is the one-feature NumPy reference).

        Raises
        ------
        ValueError
            If a parameter is invalid (e.g. ``max_bin < 2``), if ``X_sample`` is not a 2-D
            real-valued array with at least one row and one column, or if
            ``n_samples_total`` is not an integer >= K.
        """
        (max_bin, min_data_in_bin, use_missing, zero_as_missing, feature_pre_filter,
         min_data_in_leaf, categorical) = self._validate_params()
        duplicates = False
        n_threads = n_threads or os.cpu_count() or 1
        if sp.issparse(X_sample) and X_sample.format == "csr" and X_sample.has_canonical_format:
            # no duplicates: the stored entries regrouped by column (numba, on these threads)
            X = _SparseColumns.from_csr(X_sample, n_threads)
        elif sp.issparse(X_sample):
            n_stored = X_sample.nnz  # duplicates included
            X = sp.csc_matrix(X_sample, dtype=X_DTYPE)
            X.sum_duplicates()
            duplicates = X.nnz != n_stored  # summed here, maybe otherwise by transform
        else:
            X = self._as_float32_2d(X_sample, "X_sample")
        n_sample, n_features = X.shape
        if n_sample == 0:
            raise ValueError("X_sample must have at least one row, found an empty sample of "
                             f"shape {X.shape}")
        if n_features == 0:
            raise ValueError(f"X_sample must have at least one column, found shape {X.shape}")
        n_samples_total = _check_int("n_samples_total", n_samples_total, 1)
        if n_sample > n_samples_total:
            raise ValueError(f"n_samples_total must be >= the number of sampled rows "
                             f"K={n_sample}, found n_samples_total={n_samples_total}")
        # dataset_loader.cpp: int(double(min_data_in_leaf * total_sample_size) / num_data)
        filter_cnt = int(float(min_data_in_leaf * n_sample) / n_samples_total)
        if categorical and categorical[-1] >= n_features:
            raise ValueError(f"categorical_features holds column {categorical[-1]}, but "
                             f"X_sample has {n_features} columns")
        if categorical and _is_sparse_sample(X):
            raise ValueError("categorical_features with a sparse X_sample are not supported; "
                             "pass the categorical columns in a dense array")
        cat_results = {}
        warn_fractional_categories(X, categorical, stacklevel=3)
        for f in categorical:
            cat_results[f] = find_categorical_bin(X[:, f], n_sample, max_bin, min_data_in_bin,
                                                  use_missing, zero_as_missing,
                                                  feature_pre_filter, filter_cnt)

        args = (max_bin, min_data_in_bin, use_missing, zero_as_missing, feature_pre_filter,
                filter_cnt, n_sample)
        size = FIT_FEATURE_GROUP
        if _is_sparse_sample(X):
            # a sparse column costs its stored entries only: a few larger groups per thread
            # (their bound buffers, size x (max_bin + 1) doubles, kept under 8 MB)
            size = max(size, min(-(-n_features // (4 * n_threads)), (1 << 20) // (max_bin + 1)))
        groups = [(f0, min(f0 + size, n_features)) for f0 in range(0, n_features, size)]
        n_threads = min(n_threads, len(groups))
        if n_threads > 1:
            with ThreadPoolExecutor(max_workers=n_threads) as pool:
                results = list(pool.map(lambda g: _find_bins(X, g[0], g[1], *args), groups))
        else:
            results = [_find_bins(X, f0, f1, *args) for f0, f1 in groups]
        res = [r for group in results for r in group]
        categories = [None] * n_features
        for f, (cats, mt, d, mf, t, lo, hi) in cat_results.items():
            categories[f] = cats
            # sampled rows off the default bin, binned as transform bins them
            o = np.argsort(cats[1:], kind="stable")
            binned = np.empty(n_sample, dtype=np.int64)
            map_categories(X[:, f], np.ascontiguousarray(cats[1:][o]), (o + 1).astype(np.int64),
                           binned)
            res[f] = (np.arange(cats.shape[0], dtype=np.float64), mt, d, mf, t, lo, hi,
                      int(np.count_nonzero(binned != d)))
        bounds, missing, default, most_freq, trivial, vmin, vmax, nondefault = (list(a) for a in zip(*res))
        self._set_fitted(bounds, missing, default, most_freq, trivial, vmin, vmax, categories)
        self.n_samples_fit_ = int(n_sample)
        self.n_samples_total_ = int(n_samples_total)
        self.sample_nondefault_counts_ = np.asarray(nondefault, dtype=np.int64)
        if duplicates:
            self.sample_nondefault_counts_[:] = -1
        return self

    def _set_fitted(self, bounds, missing, default, most_freq, trivial, vmin, vmax,
                    categories=None):
        self._token = uuid.uuid4().hex  # see __dask_tokenize__
        self._guides = None  # see value_guides
        self.bin_upper_bounds_ = [np.asarray(b, dtype=np.float64) for b in bounds]
        self.n_bins_ = np.array([len(b) for b in self.bin_upper_bounds_], dtype=np.int32)
        self.missing_types_ = np.asarray(missing, dtype=np.uint8)
        self.default_bins_ = np.asarray(default, dtype=np.int32)
        self.most_freq_bins_ = np.asarray(most_freq, dtype=np.int32)
        self.is_trivial_ = np.asarray(trivial, dtype=bool)
        self.min_values_ = np.asarray(vmin, dtype=np.float64)
        self.max_values_ = np.asarray(vmax, dtype=np.float64)
        self.n_features_in_ = len(self.bin_upper_bounds_)
        self.bin_offsets_ = np.concatenate(([0], np.cumsum(self.n_bins_, dtype=np.int64))).astype(np.int64)
        self.n_total_bins_ = int(self.bin_offsets_[-1])
        self.binned_dtype_ = X_BINNED_DTYPE if int(self.n_bins_.max()) <= 256 else X_BINNED_DTYPE_WIDE
        if categories is None:
            categories = [None] * self.n_features_in_
        self.bin_categories_ = [None if c is None else np.asarray(c, dtype=np.int64)
                                for c in categories]
        self.is_categorical_ = np.array([c is not None for c in self.bin_categories_], dtype=bool)
        # categorical: flat (category, bin) pairs sorted by category, for map_categories
        self._cat_lookup = {}
        for f, c in enumerate(self.bin_categories_):
            if c is not None:
                o = np.argsort(c[1:], kind="stable")
                self._cat_lookup[f] = (np.ascontiguousarray(c[1:][o]),
                                       (o + 1).astype(np.int64))
        self.feature_infos_ = [
            "none" if t else (":".join(str(int(x)) for x in c) if c is not None
                              else f"[{_format_double(lo)}:{_format_double(hi)}]")
            for t, lo, hi, c in zip(self.is_trivial_, self.min_values_, self.max_values_,
                                    self.bin_categories_)
        ]
        # the kernel's flat view of the bounds (bound offsets == bin offsets)
        self._flat_bounds = (np.concatenate(self.bin_upper_bounds_) if self.bin_upper_bounds_
                             else np.zeros(0, dtype=np.float64))

    # ---------------------------------------------------------------------------------------
    # transform
    # ---------------------------------------------------------------------------------------

    def _check_fitted(self):
        if not hasattr(self, "bin_upper_bounds_"):
            raise ValueError("this BinMapper is not fitted yet: call fit(X_sample, n_samples_total) "
                             "or BinMapper.from_dict(d) first")

    @staticmethod
    def _as_float32_2d(X, name):
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"{name} must be a 2-D array of shape (n_samples, n_features), "
                             f"found {X.ndim}-D array of shape {X.shape}")
        if not (np.issubdtype(X.dtype, np.floating) or np.issubdtype(X.dtype, np.integer)
                or X.dtype == np.bool_):
            raise ValueError(f"{name} must hold real numbers (float, int or bool), "
                             f"found dtype {X.dtype}")
        return X.astype(X_DTYPE, copy=False)

    def transform(self, X):
        """Map raw values to bin indices.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in_), real dtype, or scipy.sparse matrix
            Raw values, cast to float32 (no copy if already float32). Any memory layout;
            read-only arrays are fine. A sparse matrix is binned from its stored entries
            (implicit zeros go to each feature's default bin) without a dense float copy.

        Returns
        -------
        X_binned : ndarray of shape (n_samples, n_features_in_), dtype ``binned_dtype_``,
            C-contiguous.

        Raises
        ------
        ValueError
            If the mapper is not fitted, or ``X`` is not 2-D real-valued with
            ``n_features_in_`` columns.
        """
        self._check_fitted()
        if sp.issparse(X):
            return self._transform_sparse(X)
        X = self._as_float32_2d(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have n_features_in_={self.n_features_in_} columns, "
                             f"found {X.shape[1]} (shape {X.shape})")
        out = np.empty(X.shape, dtype=self.binned_dtype_)
        if X.shape[0]:
            map_to_bins(X, self._flat_bounds, self.bin_offsets_, self.n_bins_, self.missing_types_, out)
            for f, (cats, bins) in self._cat_lookup.items():
                map_categories(X[:, f], cats, bins, out[:, f])
        return out

    def _transform_sparse(self, X):
        X = sp.csr_matrix(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have n_features_in_={self.n_features_in_} columns, "
                             f"found {X.shape[1]} (shape {X.shape})")
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        if self._cat_lookup:
            raise ValueError("a BinMapper with categorical features bins dense X only, found "
                             f"a sparse matrix of shape {X.shape}")
        n = self.n_features_in_
        out = np.empty(X.shape, dtype=self.binned_dtype_)
        if X.shape[0]:
            # every feature alone in its own column: the binned matrix itself
            bundle_sparse_rows_guided(
                X.indptr, X.indices, X.data, self._flat_bounds, self.bin_offsets_, self.n_bins_,
                self.missing_types_, np.arange(n, dtype=np.int64), np.zeros(n, dtype=np.int64),
                np.ones(n, dtype=bool), self.default_bins_, self.default_bins_.astype(np.int64),
                *self.value_guides(), out)
        return out

    def threshold(self, feature, bin):
        """The raw threshold of the split "bin index <= ``bin``" on ``feature``.

        Parameters
        ----------
        feature : int
            Feature index in ``[0, n_features_in_)``.
        bin : int
            Bin index in ``[0, n_bins_[feature])``.

        Returns
        -------
        float
            ``bin_upper_bounds_[feature][bin]``: ``x <= threshold`` iff ``x`` falls in a bin
            ``<= bin`` (for non-NaN ``x``), LightGBM's ``BinMapper::BinToValue``.

        Raises
        ------
        ValueError
            If the mapper is not fitted, or ``feature`` / ``bin`` is out of range.
        """
        self._check_fitted()
        feature = _check_int("feature", feature, 0)
        if feature >= self.n_features_in_:
            raise ValueError(f"feature must be in [0, {self.n_features_in_}), found {feature}")
        bin = _check_int("bin", bin, 0)
        if bin >= self.n_bins_[feature]:
            raise ValueError(f"bin must be in [0, {int(self.n_bins_[feature])}) for feature "
                             f"{feature}, found {bin}")
        return float(self.bin_upper_bounds_[feature][bin])

    # ---------------------------------------------------------------------------------------
    # serialization
    # ---------------------------------------------------------------------------------------

    def to_dict(self):
        """A JSON-serializable description of the fitted mapper.

        Returns
        -------
        dict
            Plain Python types only. Floats that are not finite (``inf``, ``-inf``, ``nan``)
            are encoded as those strings, so ``json.dumps(d, allow_nan=False)`` works and
            finite values round-trip exactly.

        Raises
        ------
        ValueError
            If the mapper is not fitted.
        """
        self._check_fitted()
        params = self.get_params()
        return {
            "format": _DICT_FORMAT,
            "version": _DICT_VERSION,
            "params": {k: (bool(v) if isinstance(v, (bool, np.bool_))
                           else v if isinstance(v, list) else int(v))
                       for k, v in params.items()},
            "n_samples_fit": int(self.n_samples_fit_),
            "n_samples_total": int(self.n_samples_total_),
            "bin_upper_bounds": [[_encode_float(x) for x in b] for b in self.bin_upper_bounds_],
            "missing_types": [int(x) for x in self.missing_types_],
            "default_bins": [int(x) for x in self.default_bins_],
            "most_freq_bins": [int(x) for x in self.most_freq_bins_],
            "is_trivial": [bool(x) for x in self.is_trivial_],
            "min_values": [_encode_float(x) for x in self.min_values_],
            "max_values": [_encode_float(x) for x in self.max_values_],
            "bin_categories": [None if c is None else [int(x) for x in c]
                               for c in self.bin_categories_],
        }

    @classmethod
    def from_dict(cls, d):
        """Rebuild a fitted mapper from :meth:`to_dict` output.

        Parameters
        ----------
        d : dict
            As returned by :meth:`to_dict` (possibly through ``json.dumps``/``json.loads``).

        Returns
        -------
        BinMapper

        Raises
        ------
        ValueError
            If ``d`` is not a dict in this format and version, or its per-feature lists are
            inconsistent.
        """
        if not isinstance(d, dict) or d.get("format") != _DICT_FORMAT:
            raise ValueError(f"d must be a dict produced by BinMapper.to_dict() with "
                             f"format={_DICT_FORMAT!r}, found "
                             f"{d.get('format') if isinstance(d, dict) else type(d).__name__!r}")
        if d.get("version") != _DICT_VERSION:
            raise ValueError(f"d['version'] must be {_DICT_VERSION}, found {d.get('version')!r}")
        try:
            mapper = cls(**{k: (tuple(v) if k == "categorical_features" else v)
                            for k, v in d["params"].items()})
            mapper._validate_params()
            bounds = [[_decode_float(x) for x in b] for b in d["bin_upper_bounds"]]
            n_features = len(bounds)
            per_feature = {k: d[k] for k in ("missing_types", "default_bins", "most_freq_bins",
                                             "is_trivial", "min_values", "max_values")}
        except (KeyError, TypeError) as exc:
            raise ValueError(f"d is not a valid BinMapper dict: {exc!r}") from None
        for k, v in per_feature.items():
            if len(v) != n_features:
                raise ValueError(f"d[{k!r}] must have one entry per feature ({n_features}), "
                                 f"found {len(v)}")
        if n_features == 0 or any(len(b) == 0 for b in bounds):
            raise ValueError("d['bin_upper_bounds'] must hold at least one feature, each with "
                             "at least one bound")
        mapper._set_fitted(
            bounds, per_feature["missing_types"], per_feature["default_bins"],
            per_feature["most_freq_bins"], per_feature["is_trivial"],
            [_decode_float(x) for x in per_feature["min_values"]],
            [_decode_float(x) for x in per_feature["max_values"]],
            d.get("bin_categories"))
        mapper.n_samples_fit_ = int(d["n_samples_fit"])
        mapper.n_samples_total_ = int(d["n_samples_total"])
        mapper.sample_nondefault_counts_ = None
        return mapper

    def value_guides(self):
        """The guide tables of the sparse binning kernels
        (:func:`oocgbdt.kernels.bundling.value_guides` of this mapper's bounds), made on first
        use and kept (not pickled)."""
        guides = getattr(self, "_guides", None)
        if guides is None:
            self._check_fitted()
            guides = self._guides = value_guides(self._flat_bounds, self.bin_offsets_,
                                                 self.n_bins_, self.missing_types_)
        return guides

    def __dask_tokenize__(self):
        """A cheap token for Dask's ``delayed(mapper, pure=True)``: one drawn when the mapper
        was fitted (or rebuilt), kept by pickling, instead of hashing every bound array."""
        return ("oocgbdt.BinMapper", getattr(self, "_token", None) or id(self))

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_flat_bounds", None)  # derived; rebuilt on unpickle
        state.pop("_guides", None)  # derived; made again on first use
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "bin_upper_bounds_" in state:
            self._flat_bounds = np.concatenate(self.bin_upper_bounds_)
        if "_cat_lookup" not in state and "bin_upper_bounds_" in state:
            self._set_fitted(self.bin_upper_bounds_, self.missing_types_, self.default_bins_,
                             self.most_freq_bins_, self.is_trivial_, self.min_values_,
                             self.max_values_, getattr(self, "bin_categories_", None))


class _SparseColumns:
    """A sparse sample's stored entries grouped by column (CSC ``data`` and ``indptr`` without
    the row indices, which bin finding does not read)."""

    format = "columns"

    def __init__(self, data, indptr, shape):
        self.data, self.indptr, self.shape = data, indptr, shape

    @classmethod
    def from_csr(cls, X, n_threads=1):
        """From a CSR matrix in canonical format (cast to float32), by
        :func:`oocgbdt.kernels.binning.csr_column_values`: at least
        :data:`MIN_THREADED_REGROUP` stored entries are regrouped as up to ``n_threads`` row
        blocks of about equal stored entries (fewer where the blocks' per-column counts would
        take more bytes than the values), each counted and then written on its own thread
        (:func:`~oocgbdt.kernels.binning.csr_column_counts`,
        :func:`~oocgbdt.kernels.binning.csr_scatter_columns`), the same values in the same
        places."""
        n_rows, n_features = X.shape
        indptr = np.zeros(n_features + 1, dtype=np.int64)
        data = np.empty(X.nnz, dtype=X_DTYPE)
        # per block one count per column: at most as many bytes as the regrouped values
        n_blocks = max(1, min(int(n_threads), X.nnz // MIN_THREADED_REGROUP,
                              X.nnz // (2 * max(1, n_features))))
        if n_blocks == 1:
            csr_column_values(X.indptr, X.indices, X.data, indptr, data)
            return cls(data, indptr, (int(n_rows), int(n_features)))
        # row blocks cut where the stored entries reach each share
        cuts = np.searchsorted(X.indptr, np.arange(1, n_blocks) * (X.nnz / n_blocks))
        bounds = [0, *(int(c) for c in cuts), n_rows]
        counts = np.zeros((n_blocks, n_features), dtype=np.int64)
        with ThreadPoolExecutor(max_workers=n_blocks) as pool:
            list(pool.map(lambda b: csr_column_counts(X.indptr, X.indices, bounds[b],
                                                      bounds[b + 1], counts[b]),
                          range(n_blocks)))
            np.cumsum(counts.sum(axis=0), out=indptr[1:])
            # block b writes column f from its start plus the entries of the blocks before b
            pos = indptr[:-1] + np.cumsum(counts, axis=0) - counts
            list(pool.map(lambda b: csr_scatter_columns(X.indptr, X.indices, X.data,
                                                        bounds[b], bounds[b + 1], pos[b], data),
                          range(n_blocks)))
        return cls(data, indptr, (int(n_rows), int(n_features)))


def _is_sparse_sample(X):
    return sp.issparse(X) or isinstance(X, _SparseColumns)


def _find_bins(X, f0, f1, max_bin, min_data_in_bin, use_missing, zero_as_missing, pre_filter,
               filter_cnt, total_sample_cnt):
    """:func:`_find_bin` of features ``f0 <= f < f1`` of the sample ``X`` (one task of
    :meth:`BinMapper.fit`): a list of its result tuples.

    ``X`` is a dense (K, n_features) float32 array, or a CSC matrix whose column ``f`` holds the
    stored entries of feature ``f`` (the other ``K - nnz`` values are zeros). The group is split
    into its features' kept values in one numba pass
    (:func:`oocgbdt.kernels.binning.split_sample_columns`: one pass over the rows of a dense
    group; :func:`~oocgbdt.kernels.binning.split_csc_columns`), the long unsorted runs are
    sorted by NumPy, and one numba call
    (:func:`~oocgbdt.kernels.binning.fit_numerical_values`) runs the steps of
    :func:`_find_bin_of_values` for every feature; only the results are unpacked in Python.
    """
    n_f = f1 - f0
    n_values, n_nan, n_tiny = (np.empty(n_f, dtype=np.int64) for _ in range(3))
    if _is_sparse_sample(X):
        indptr = X.indptr.astype(np.int64, copy=False)
        values = np.empty(int(indptr[f1] - indptr[f0]), dtype=np.float32)
        split_csc_columns(X.data, indptr, f0, f1, values, n_values, n_nan, n_tiny)
        starts = indptr[f0:f1] - indptr[f0]
    else:
        values = np.empty((n_f, X.shape[0]), dtype=np.float32)
        split_sample_columns(X, f0, f1, values, n_values, n_nan, n_tiny)
        values = values.reshape(-1)
        starts = np.arange(n_f, dtype=np.int64) * X.shape[0]
    unsorted = np.empty(n_f, dtype=np.bool_)
    unsorted_runs(values, starts, n_values, unsorted)
    for g in np.flatnonzero(unsorted & (n_values > _NUMPY_SORT_MIN)):
        values[starts[g]:starts[g] + n_values[g]].sort()  # NumPy's SIMD sort, GIL released
    out_bounds = np.empty((n_f, max_bin + 1), dtype=np.float64)
    n_bounds, missing, default, most_freq, nondefault = (np.empty(n_f, dtype=np.int64)
                                                         for _ in range(5))
    trivial = np.empty(n_f, dtype=np.bool_)
    vmin = np.empty(n_f, dtype=np.float64)
    vmax = np.empty(n_f, dtype=np.float64)
    fit_numerical_values(values, starts, n_values, n_nan, n_tiny, int(X.shape[0]), max_bin,
                         min_data_in_bin, use_missing, zero_as_missing, pre_filter, filter_cnt,
                         out_bounds, n_bounds, missing, default, most_freq, trivial, vmin, vmax,
                         nondefault)
    return [(out_bounds[g, :n_bounds[g]].copy(), int(missing[g]), int(default[g]),
             int(most_freq[g]), bool(trivial[g]), float(vmin[g]), float(vmax[g]),
             int(nondefault[g]))
            for g in range(n_f)]


def _find_bin(column, max_bin, min_data_in_bin, use_missing, zero_as_missing, pre_filter, filter_cnt,
              total_sample_cnt=None):
    """One feature of :meth:`BinMapper.fit` (LightGBM ``BinMapper::FindBin``, numerical).

    Parameters
    ----------
    column : ndarray of shape (K,) or (k <= K,), dtype float32
        The sampled values of one feature; when shorter than ``total_sample_cnt``, the missing
        ``K - k`` values are zeros (a sparse column's stored entries).
    total_sample_cnt : int, optional
        K (default ``len(column)``).

    Returns
    -------
    tuple
        ``(bounds, missing_type, default_bin, most_freq_bin, is_trivial, min_value, max_value,
        nondefault_cnt)``: the first seven as :func:`_find_bin_naive`'s; ``nondefault_cnt`` is
        the number of sampled values ``transform`` does not put in ``default_bin``, or -1 (see
        ``BinMapper.sample_nondefault_counts_``).
    """
    column = np.asarray(column, dtype=np.float32)
    total_sample_cnt = column.shape[0] if total_sample_cnt is None else int(total_sample_cnt)
    values = np.empty((1, column.shape[0]), dtype=np.float32)
    n_values = np.empty(1, dtype=np.int64)
    n_nan = np.empty(1, dtype=np.int64)
    n_tiny = np.empty(1, dtype=np.int64)
    split_sample_columns(column[:, None], 0, 1, values, n_values, n_nan, n_tiny)
    return _find_bin_of_values(values[0, :n_values[0]], int(n_nan[0]), int(n_tiny[0]), max_bin,
                               min_data_in_bin, use_missing, zero_as_missing, pre_filter, filter_cnt,
                               total_sample_cnt)


def _find_bin_of_values(values, n_nan, n_tiny, max_bin, min_data_in_bin, use_missing, zero_as_missing,
                        pre_filter, filter_cnt, total_sample_cnt):
    """:func:`_find_bin` given the feature's sampled values with ``|v| > kZ`` that are not NaN
    (C-contiguous float32 ndarray, any order; sorted in place), its number of sampled NaNs and
    its number of sampled values with ``0 < |v| <= kZ``.

    The float32 values are sorted as float32 (NumPy's sort, in place; the cast to float64 is
    exact and keeps the order, and equal values have equal bits since zeros are excluded) and
    reduced to distinct values by one numba pass
    (:func:`oocgbdt.kernels.binning.distinct_of_sorted`); the bin counts come from one merge of
    the sorted distinct values with the bounds (:func:`oocgbdt.kernels.binning.counts_in_bins`).

    The non-default count is counted as ``transform`` bins: zeros (and the NaNs of a feature
    without a NaN bin, binned as 0.0) are in the default bin by its definition, NaNs of a
    NaN-type feature in the NaN bin, and the sorted values in ``(bounds[d - 1], bounds[d]]``
    (``d`` the default bin; open-ended at the first and last searchable bin) are found by two
    binary searches. Values ``0 < |v| <= kZ`` would need their own search: with any of them the
    count is -1 (unknown).
    """
    missing_type = _missing_type(n_nan > 0, use_missing, zero_as_missing)
    na_cnt = n_nan if missing_type == MISSING_NAN else 0
    zero_cnt = total_sample_cnt - values.shape[0] - na_cnt

    values.sort()
    distinct, counts = distinct_of_sorted(values, zero_cnt)
    min_value = float(distinct[0])
    max_value = float(distinct[-1])

    bounds, missing_type, n_searchable = _bounds(distinct, counts, missing_type, na_cnt, max_bin,
                                                 total_sample_cnt, min_data_in_bin)
    n_bins = bounds.shape[0]

    # counts per bin: distinct value i goes to the first non-NaN bin with v <= bound
    cnt_in_bin = np.zeros(n_bins, dtype=np.int64)
    counts_in_bins(distinct, counts, bounds, n_searchable, cnt_in_bin)
    if missing_type == MISSING_NAN:
        cnt_in_bin[-1] = na_cnt
    is_trivial, default_bin, most_freq_bin = _bin_roles(bounds, n_searchable, cnt_in_bin, pre_filter,
                                                        filter_cnt, total_sample_cnt)

    nondefault_cnt = -1
    if n_tiny == 0:
        n = values.shape[0]
        hi = n if default_bin == n_searchable - 1 else count_at_most(values, bounds[default_bin])
        lo = 0 if default_bin == 0 else count_at_most(values, bounds[default_bin - 1])
        nondefault_cnt = n - (hi - lo) + na_cnt
    return (bounds, missing_type, default_bin, most_freq_bin, is_trivial, min_value, max_value,
            nondefault_cnt)


def _find_bin_naive(column, max_bin, min_data_in_bin, use_missing, zero_as_missing, pre_filter,
                    filter_cnt, total_sample_cnt=None):
    """NumPy reference of :func:`_find_bin` (the test oracle; LightGBM ``BinMapper::FindBin``,
    numerical): the same result, through :func:`find_distinct_values_naive` (float64 sort) and
    ``np.searchsorted``. Parameters as :func:`_find_bin`'s; returns its first seven results.
    """
    x = column.astype(np.float64)
    total_sample_cnt = x.shape[0] if total_sample_cnt is None else int(total_sample_cnt)
    is_nan = np.isnan(x)
    # c_api.cpp: only |v| > kZeroThreshold (and NaN) reach FindBin; the rest are zeros.
    values = x[~is_nan & (np.abs(x) > K_ZERO_THRESHOLD)]
    missing_type = _missing_type(bool(is_nan.any()), use_missing, zero_as_missing)
    na_cnt = int(is_nan.sum()) if missing_type == MISSING_NAN else 0
    zero_cnt = total_sample_cnt - values.shape[0] - na_cnt

    distinct, counts = find_distinct_values_naive(values, zero_cnt)
    min_value = float(distinct[0])
    max_value = float(distinct[-1])

    bounds, missing_type, n_searchable = _bounds(distinct, counts, missing_type, na_cnt, max_bin,
                                                 total_sample_cnt, min_data_in_bin)
    n_bins = bounds.shape[0]

    # counts per bin: distinct value i goes to the first non-NaN bin with v <= bound
    bin_of_value = np.minimum(np.searchsorted(bounds[:n_searchable], distinct, side="left"),
                              n_searchable - 1)
    cnt_in_bin = np.bincount(bin_of_value, weights=counts, minlength=n_bins).astype(np.int64)
    if missing_type == MISSING_NAN:
        cnt_in_bin[-1] = na_cnt
    is_trivial, default_bin, most_freq_bin = _bin_roles(bounds, n_searchable, cnt_in_bin, pre_filter,
                                                        filter_cnt, total_sample_cnt)
    return bounds, missing_type, default_bin, most_freq_bin, is_trivial, min_value, max_value


def _missing_type(has_nan, use_missing, zero_as_missing):
    """LightGBM's missing type of a feature (``BinMapper::FindBin``), before the bounds."""
    if not use_missing:
        return MISSING_NONE
    if zero_as_missing:
        return MISSING_ZERO
    return MISSING_NAN if has_nan else MISSING_NONE


def _bounds(distinct, counts, missing_type, na_cnt, max_bin, total_sample_cnt, min_data_in_bin):
    """``(bounds, missing_type, n_searchable)`` from a feature's distinct sampled values and
    their counts: float64 upper bounds (a NaN-type feature's last one NaN), the missing type
    (a zero-as-missing feature with one non-zero bin has none) and the bins a value can be
    searched in (all but the NaN bin)."""
    if missing_type == MISSING_NAN:
        bounds = find_bin_with_zero_as_one_bin(distinct, counts, max_bin - 1,
                                               total_sample_cnt - na_cnt, min_data_in_bin)
        bounds.append(math.nan)
    else:
        bounds = find_bin_with_zero_as_one_bin(distinct, counts, max_bin, total_sample_cnt,
                                               min_data_in_bin)
        if missing_type == MISSING_ZERO and len(bounds) == 2:
            missing_type = MISSING_NONE
    bounds = np.asarray(bounds, dtype=np.float64)
    n_searchable = bounds.shape[0] - 1 if missing_type == MISSING_NAN else bounds.shape[0]
    return bounds, missing_type, n_searchable


def _bin_roles(bounds, n_searchable, cnt_in_bin, pre_filter, filter_cnt, total_sample_cnt):
    """``(is_trivial, default_bin, most_freq_bin)`` of a feature from its bounds and its
    sampled count per bin."""
    is_trivial = bounds.shape[0] <= 1
    if not is_trivial and pre_filter and _need_filter(cnt_in_bin, total_sample_cnt, filter_cnt):
        is_trivial = True
    # LightGBM computes these only for non-trivial features; they are defined for all here.
    default_bin = int(np.minimum(np.searchsorted(bounds[:n_searchable], 0.0, side="left"),
                                 n_searchable - 1))
    most_freq_bin = int(np.argmax(cnt_in_bin))
    if most_freq_bin != default_bin and cnt_in_bin[most_freq_bin] / total_sample_cnt < K_SPARSE_THRESHOLD:
        most_freq_bin = default_bin
    return is_trivial, default_bin, most_freq_bin


def _need_filter(cnt_in_bin, total_cnt, filter_cnt):
    """LightGBM ``NeedFilter`` (numerical): True if no bin boundary leaves ``filter_cnt`` rows
    on both sides (the NaN bin, last, is never a left side)."""
    sum_left = np.cumsum(cnt_in_bin[:-1])
    return not bool(np.any((sum_left >= filter_cnt) & (total_cnt - sum_left >= filter_cnt)))
