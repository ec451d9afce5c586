"""This module contains category maps: table columns as float32 category codes, by value.

Data flow position: where a pandas DataFrame (or a block of one) becomes the float32 matrix that
training and prediction read. A **category map** is LightGBM's ``pandas_categorical``: for each
categorical column, in column order, the list of its category values in code order. A value's
code is its position in that list, as a float32 (0, 1, 2, ...); a missing value and a value not
in the list are NaN (LightGBM's ``_data_from_pandas`` in ``python-package/lightgbm/basic.py``
takes ``cat.codes`` and turns its -1 into NaN).

Which columns are categorical (:func:`categorical_columns`): pandas ``category`` columns (as
LightGBM), and also string and object columns, whose categories are their sorted distinct
values. The codes of a column are always found by value through the map
(:func:`encode_frame`), never from a frame's own codes, so a frame whose categories are in
another order, or hold values never seen, maps to the codes of the model.

pandas is never imported here: the functions read only frames the caller already holds (a
DataFrame's ``dtypes``, ``cat`` and ``to_numpy``), so the core layer stays free of it.
"""
from __future__ import annotations

import numpy as np

from oocgbdt._dtypes import X_DTYPE

__all__ = ["is_frame", "categorical_columns", "auto_categorical", "frame_categories",
           "merge_categories", "encode_column", "encode_frame", "check_frame_columns", "json_categories"]


def is_frame(X) -> bool:
    """True for a pandas DataFrame (duck-typed: ``columns``, ``dtypes`` and ``iloc``)."""
    return (type(X).__module__.split(".")[0] == "pandas" and hasattr(X, "columns")
            and hasattr(X, "dtypes") and hasattr(X, "iloc"))


def _kind(dtype) -> str:
    """``"category"``, ``"ordered"`` (an ordered category dtype), ``"string"`` or ``"number"``."""
    name = getattr(dtype, "name", str(dtype))
    if name == "category":
        return "ordered" if getattr(dtype, "ordered", False) else "category"
    if name == "object" or name.startswith("string") or name == "str" \
            or getattr(dtype, "kind", None) in ("O", "U", "S"):
        return "string"
    return "number"


def categorical_columns(dtypes) -> list[int]:
    """Positions of the columns coded through a category map: ``category`` (ordered or not),
    string and object columns.

    Parameters
    ----------
    dtypes : sequence of dtypes
        A DataFrame's ``dtypes`` (pandas or Dask).
    """
    return [i for i, d in enumerate(dtypes) if _kind(d) != "number"]


def auto_categorical(dtypes) -> tuple[int, ...]:
    """Positions of the columns that ``categorical_feature="auto"`` treats as categorical:
    unordered ``category`` columns (LightGBM's rule: ordered ones are coded but split as
    numbers), string and object columns."""
    return tuple(i for i, d in enumerate(dtypes) if _kind(d) in ("category", "string"))


def _sorted_values(values) -> list:
    """The distinct non-missing values of a column, sorted (by their string form when the
    values cannot be compared, e.g. numbers mixed with text in an object column)."""
    vals = list(_distinct(values))
    try:
        return sorted(vals)
    except TypeError:
        return sorted(vals, key=lambda v: (type(v).__name__, str(v)))


def _distinct(values):
    seen = set()
    for v in values:
        if _missing(v):
            continue
        v = v.item() if isinstance(v, np.generic) else v
        if v not in seen:
            seen.add(v)
            yield v


def frame_categories(frame, columns=None) -> list[list]:
    """The category map of ``frame``: one list of category values per categorical column.

    Parameters
    ----------
    frame : pandas.DataFrame
    columns : list of int, optional
        Positions of the categorical columns (default :func:`categorical_columns`).

    Returns
    -------
    list of list
        A ``category`` column gives its categories in their order; a string or object column
        its sorted distinct values (missing values left out). NumPy scalars become Python ones.
    """
    if columns is None:
        columns = categorical_columns(frame.dtypes)
    out = []
    for i in columns:
        col = frame.iloc[:, i]
        if _kind(col.dtype) in ("category", "ordered"):
            out.append([v.item() if isinstance(v, np.generic) else v
                        for v in col.cat.categories.tolist()])
        else:
            out.append(_sorted_values(col.dropna().unique().tolist()))
    return out


def merge_categories(parts) -> list:
    """The sorted distinct values of several lists of values (categories found per block)."""
    return _sorted_values(v for part in parts for v in part)


def encode_column(values, categories) -> np.ndarray:
    """float32 codes of ``values`` by value: the position in ``categories``, NaN where missing
    or not in ``categories``.

    Parameters
    ----------
    values : pandas.Series, ndarray or sequence
        A ``category`` Series is read through its categories (its own codes are not used).
    categories : list
        Category values in code order.
    """
    cat = getattr(values, "cat", None) if _kind(getattr(values, "dtype", "")) in (
        "category", "ordered") else None
    if cat is not None:
        # Map each of the column's categories once, then index by its codes (-1: missing).
        own = encode_column(np.asarray(cat.categories, dtype=object), categories)
        codes = np.asarray(cat.codes, dtype=np.int64)
        out = np.full(codes.shape[0], np.nan, dtype=X_DTYPE)
        ok = codes >= 0
        out[ok] = own[codes[ok]]
        return out
    lookup = {}
    for code, v in enumerate(categories):
        lookup.setdefault(_key(v), code)
    if hasattr(values, "factorize"):
        # A Series: its distinct values once (hashed by pandas), each looked up once.
        codes, uniques = values.factorize(use_na_sentinel=True)
        own = np.array([np.nan if (c := lookup.get(_key(v))) is None else c
                        for v in np.asarray(uniques, dtype=object)] + [np.nan], dtype=X_DTYPE)
        return own[np.asarray(codes, dtype=np.int64)]  # -1 (missing) reads the last entry
    values = np.asarray(values, dtype=object)
    out = np.empty(values.shape[0], dtype=X_DTYPE)
    for i, v in enumerate(values):
        code = None if _missing(v) else lookup.get(_key(v))
        out[i] = np.nan if code is None else code
    return out


def _missing(v) -> bool:
    return (v is None or (isinstance(v, (float, np.floating)) and v != v)
            or (type(v).__module__.split(".")[0] == "pandas" and str(v) in ("<NA>", "NaT")))


def _key(v):
    """A hashable key equal for equal values (NumPy scalars as Python ones; NaN never matches)."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and v != v:
        return ("nan", id(v))
    if isinstance(v, bool):
        return ("bool", v)
    return v


def check_frame_columns(frame, feature_names, name="X") -> None:
    """Reject a frame whose column names differ from the model's feature names.

    Frames whose column labels are not all strings (a default ``RangeIndex``) and models
    without feature names (``Column_0, ...``) are matched by position, as NumPy input.

    Raises
    ------
    ValueError
        Columns missing, extra, or in another order; the message names them.
    """
    cols = [c for c in frame.columns]
    names = list(feature_names)
    if not all(isinstance(c, str) for c in cols) or names == [f"Column_{i}" for i in range(len(names))]:
        return
    if cols == names:
        return
    missing = [n for n in names if n not in cols]
    extra = [c for c in cols if c not in names]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing column(s) {missing[:10]}")
        if extra:
            parts.append(f"column(s) not in the model {extra[:10]}")
        raise ValueError(f"{name}'s columns differ from the model's features: "
                         f"{'; '.join(parts)}. The model expects {len(names)} column(s): "
                         f"{names[:20]}{' ...' if len(names) > 20 else ''}.")
    raise ValueError(f"{name} has the model's columns in another order; select them as the "
                     f"model has them (X[booster.feature_names]): {names[:20]}"
                     f"{' ...' if len(names) > 20 else ''}.")


def encode_frame(frame, categorical, categories, name="X") -> np.ndarray:
    """A DataFrame as a float32 matrix: categorical columns coded by value through
    ``categories``, the others as numbers (nullable ``pd.NA`` as NaN).

    Parameters
    ----------
    frame : pandas.DataFrame of shape (n_samples, n_features)
    categorical : sequence of int
        Positions of the coded columns, ascending; ``categories[k]`` is the map of column
        ``categorical[k]``.
    categories : list of list
    name : str
        The argument's name in error messages.

    Returns
    -------
    ndarray of float32, shape (n_samples, n_features), C order.

    Raises
    ------
    ValueError
        A column that is not categorical holds text.
    """
    n, m = frame.shape
    out = np.empty((n, m), dtype=X_DTYPE)
    coded = dict(zip(categorical, categories))
    for j in range(m):
        col = frame.iloc[:, j]
        if j in coded:
            out[:, j] = encode_column(col, coded[j])
            continue
        if _kind(col.dtype) != "number":
            raise ValueError(
                f"{name} column {frame.columns[j]!r} (position {j}) has dtype {col.dtype}, but "
                f"the model was trained on numbers in that column; pass numbers, as in training.")
        try:
            out[:, j] = col.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{name} column {frame.columns[j]!r} is not numeric ({e}).") from None
    return out


def json_categories(categories) -> list[list]:
    """A category map with Python scalars only (what JSON stores).

    Raises
    ------
    TypeError
        A category value JSON cannot store (e.g. a timestamp): its type is named.
    """
    out = []
    for cats in categories:
        row = []
        for v in cats:
            v = v.item() if isinstance(v, np.generic) else v
            if not isinstance(v, (str, int, float, bool)):
                raise TypeError(f"category value {v!r} of type {type(v).__name__} cannot be "
                                f"stored in the model file; use str, int, float or bool "
                                f"categories.")
            row.append(v)
        out.append(row)
    return out
