"""This module contains what categorical features need outside the kernels: which columns are
categorical (:func:`resolve_categorical_feature`), the warning about fractional sampled values
(:func:`warn_fractional_categories`) and LightGBM's categorical bin finding on the bin sample
(:func:`find_categorical_bin`).

Data flow position: :func:`resolve_categorical_feature` runs once in
:func:`oocgbdt.dask.training.train`, before binning; the other two run in
:meth:`oocgbdt.core.bin_mapper.BinMapper.fit`. The rules and their LightGBM sources are in
``docs/categorical.md``.
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np

from oocgbdt._dtypes import K_ZERO_THRESHOLD, MISSING_NAN, MISSING_NONE
from oocgbdt.kernels.binning import distinct_of_sorted

__all__ = ["resolve_categorical_feature", "warn_fractional_categories", "find_categorical_bin"]


def resolve_categorical_feature(value, feature_names, n_features, auto=()) -> tuple:
    """The column indices of the categorical features.

    Parameters
    ----------
    value : None, "auto", list of int or list of str
        ``params["categorical_feature"]`` as :func:`oocgbdt.params.resolve_params` leaves it
        (LightGBM's string forms ``"0,1,2"`` and ``"name:a,b"`` are already lists).
    feature_names : list of str or None
        The names of the columns, for a list of names.
    n_features : int
    auto : tuple of int, default ()
        The columns a DataFrame input marks as categorical (pandas ``category`` columns), used
        for ``"auto"``; without a DataFrame it is empty and ``"auto"`` means none.

    Returns
    -------
    tuple of int
        Sorted, distinct indices in ``[0, n_features)``.

    Raises
    ------
    ValueError
        A name not in ``feature_names`` (or names without ``feature_names``), an index out of
        range, or a value of another type.
    """
    if value is None:
        return ()
    if isinstance(value, str):
        if value != "auto":
            raise ValueError(f"categorical_feature must be None, 'auto', a list of int indices "
                             f"or a list of str names, found the string {value!r}")
        value = list(auto)
    out = set()
    for item in value:
        if isinstance(item, str):
            if feature_names is None:
                raise ValueError(f"categorical_feature names a column ({item!r}) but the data "
                                 f"has no feature names; pass feature_names=, or give column "
                                 f"indices")
            names = list(feature_names)
            if item not in names:
                raise ValueError(f"categorical_feature names {item!r}, which is not a feature "
                                 f"name; the feature names are {names[:20]}"
                                 f"{' ...' if len(names) > 20 else ''}")
            out.add(names.index(item))
        elif isinstance(item, (numbers.Integral, np.integer)) and not isinstance(item, bool):
            if not 0 <= int(item) < n_features:
                raise ValueError(f"categorical_feature index {int(item)} is out of range: X has "
                                 f"{n_features} columns (indices 0 to {n_features - 1})")
            out.add(int(item))
        else:
            raise ValueError(f"categorical_feature must list int indices or str names, found "
                             f"{item!r} of type {type(item).__name__}")
    return tuple(sorted(out))


def warn_fractional_categories(X, categorical, stacklevel=3) -> tuple:
    """Warn once about the categorical columns whose sampled values have a fractional part.

    Such values are truncated toward zero to integer categories wherever a value is read (bins,
    raw-value prediction), as LightGBM does with ``static_cast<int>`` (``config.h``: "floating
    point numbers in categorical features will be rounded towards 0"); LightGBM does so
    silently. A fraction in a column declared categorical is often a numerical column declared
    by mistake, hence one warning naming the columns.

    Parameters
    ----------
    X : ndarray of shape (K, n_features), float
        The bin sample.
    categorical : sequence of int
        The categorical columns.
    stacklevel : int
        Passed to :func:`warnings.warn`.

    Returns
    -------
    tuple of int
        The columns that hold a fractional value (NaN and infinities are not fractional).
    """
    found = {}
    for f in categorical:
        v = np.asarray(X[:, f], dtype=np.float64)
        v = v[np.isfinite(v)]
        bad = v[v != np.trunc(v)]
        if bad.size:
            found[f] = float(bad[0])
    if found:
        cols = ", ".join(f"{f} (e.g. {x!r})" for f, x in found.items())
        warnings.warn(f"categorical_feature column(s) {cols} hold fractional values; they are "
                      f"truncated toward zero to integer categories, as LightGBM does",
                      UserWarning, stacklevel=stacklevel)
    return tuple(found)


def find_categorical_bin(column, total_sample_cnt, max_bin, min_data_in_bin, use_missing,
                         zero_as_missing, pre_filter, filter_cnt):
    """LightGBM's ``BinMapper::FindBin`` for a categorical feature, on its sampled values.

    Parameters
    ----------
    column : ndarray of shape (k,), float32
        The feature's sampled values; when ``k < total_sample_cnt`` the other values are zeros
        (a sparse column's stored entries).
    total_sample_cnt : int
        K, the rows of the sample.
    max_bin, min_data_in_bin : int
    use_missing, zero_as_missing, pre_filter : bool
    filter_cnt : int
        ``int(min_data_in_leaf * K / N)``, for the pre-filter.

    Returns
    -------
    tuple
        ``(categories, missing_type, default_bin, most_freq_bin, is_trivial, min_value,
        max_value)``: ``categories`` (int64, one per bin) is LightGBM's ``bin_2_categorical``:
        -1 for bin 0 (NaN, negative and rare categories), then the kept categories by
        decreasing sampled count (ties: smaller category first); the missing type is None when
        every sampled category has a bin and nothing is missing, else NaN.
    """
    x = np.asarray(column, dtype=np.float32)
    is_nan = np.isnan(x)
    values = x[~is_nan & (np.abs(x) > K_ZERO_THRESHOLD)]
    # FindBin's missing type before the categorical branch: NaNs count as missing only for
    # MissingType::NaN; otherwise they are zeros (category 0).
    if use_missing and not zero_as_missing and is_nan.any():
        na_cnt = int(is_nan.sum())
    else:
        na_cnt = 0
    zero_cnt = int(total_sample_cnt) - values.shape[0] - na_cnt
    distinct, counts = distinct_of_sorted(np.sort(values), zero_cnt)
    min_value, max_value = float(distinct[0]), float(distinct[-1])

    # to int categories: negative ints are missing; equal ints merge (they are adjacent)
    cats, cat_counts = [], []
    for v, c in zip(distinct, counts):
        iv = int(v)  # truncation toward zero
        if iv < 0:
            na_cnt += int(c)
        elif cats and cats[-1] == iv:
            cat_counts[-1] += int(c)
        else:
            cats.append(iv)
            cat_counts.append(int(c))
    rest_cnt = int(total_sample_cnt) - na_cnt
    if rest_cnt <= 0:
        # no category at all: one bin, trivial
        categories = np.array([-1], dtype=np.int64)
        return categories, MISSING_NAN, 0, 0, True, min_value, max_value
    if cats[-1] // 100 > len(cats):
        # LightGBM warns alike (bin.cpp:434-438): a split's bitset over raw categories needs
        # one bit per category up to the largest one it holds
        warnings.warn(f"a categorical feature has sparse codes (largest {cats[-1]}, "
                      f"{len(cats)} distinct): renumber its categories 0, 1, 2, ... to keep "
                      f"the model's category bitsets small", stacklevel=3)
    order = np.argsort(-np.asarray(cat_counts, dtype=np.int64), kind="stable")
    cats = np.asarray(cats, dtype=np.int64)[order]
    cat_counts = np.asarray(cat_counts, dtype=np.int64)[order]
    # Common::RoundInt((K - na_cnt) * 0.99f): a float product, then + 0.5 and truncation
    cut_cnt = int(float(np.float32(np.float32(rest_cnt) * np.float32(0.99))) + 0.5)
    distinct_cnt = len(cats) + (1 if na_cnt > 0 else 0)
    max_bin = min(distinct_cnt, int(max_bin))
    kept = [-1]
    cnt_in_bin = [0]
    used_cnt = 0
    i = 0
    while i < len(cats) and (used_cnt < cut_cnt or len(kept) < max_bin):
        if cat_counts[i] < min_data_in_bin and i > 1:
            break
        kept.append(int(cats[i]))
        cnt_in_bin.append(int(cat_counts[i]))
        used_cnt += int(cat_counts[i])
        i += 1
    missing_type = MISSING_NONE if (i == len(cats) and na_cnt == 0) else MISSING_NAN
    cnt_in_bin[0] = int(total_sample_cnt) - used_cnt
    categories = np.asarray(kept, dtype=np.int64)
    n_bins = len(kept)
    is_trivial = n_bins <= 1
    if not is_trivial and pre_filter and n_bins <= 2:
        # NeedFilter, categorical: with two bins, bin 0 against the other must leave filter_cnt
        # sampled rows on both sides
        if not (cnt_in_bin[0] >= filter_cnt and total_sample_cnt - cnt_in_bin[0] >= filter_cnt):
            is_trivial = True
    hit = np.flatnonzero(categories == 0)
    default_bin = int(hit[0]) if hit.size else 0
    most_freq_bin = int(np.argmax(cnt_in_bin))
    if most_freq_bin != default_bin and cnt_in_bin[most_freq_bin] / total_sample_cnt < 0.7:
        most_freq_bin = default_bin
    return categories, missing_type, default_bin, most_freq_bin, is_trivial, min_value, max_value
