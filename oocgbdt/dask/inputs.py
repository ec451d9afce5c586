"""This module contains input normalization: every accepted input becomes a row-chunked Dask array.

Data flow position: the first step of training and prediction. Accepted: NumPy arrays, scipy.sparse
matrices, pandas DataFrames, Dask arrays (NumPy or scipy.sparse chunks), Dask DataFrames and
Series, Zarr arrays, and paths to Zarr stores (an array, or an oocgbdt dataset group whose ``X``
is used, dense or sparse). Output:
``dask.array.Array`` chunked along rows only (columns in one chunk), known chunk sizes, float32
for features; sparse inputs stay sparse (CSR chunks), never densified. Every check here is cheap (metadata only) except
:func:`check_values`, which is one small reduction over ``y`` and the weights, and the one
compute that a Dask DataFrame may need (:func:`frame_inputs`).

Tables: the ``category``, string and object columns of a DataFrame are coded by value through
a category map (:mod:`oocgbdt.core.categories`, LightGBM's ``pandas_categorical``), found on
the training frame and used for its eval sets and at predict time. A pandas frame's map comes
from its own columns; a Dask DataFrame's ``category`` columns must have known categories (their
order is the code order; ``ddf.categorize()`` makes them known), and the sorted distinct values
of its string columns and the lengths of its partitions are found by one compute for all of
the fit's Dask collections, cached by collection so that they are never computed twice.
"""
from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import scipy.sparse as sp
import zarr

from oocgbdt._dtypes import X_DTYPE, as_float_if_frame
from oocgbdt.core.categories import (auto_categorical, categorical_columns, check_frame_columns,
                                     encode_frame, frame_categories, is_frame, merge_categories)
from oocgbdt.core.partitioning import MAX_EVEN_PARTITIONS, MIN_ROWS, TARGET_ROWS, partition_count
from oocgbdt.io.dataset import Dataset
from oocgbdt.runtime.cluster import find_client

__all__ = ["is_lazy", "is_sparse", "is_dask_frame", "CategoryMap", "frame_inputs",
           "partition_lengths", "remap_codes", "dataset_map", "dataset_map_of", "as_dask_array",
           "as_row_chunked", "align_rows", "check_values", "TrainingInputs", "training_inputs",
           "check_labels_and_weights", "check_group", "check_position", "query_chunks",
           "align_to_queries", "init_score_array", "init_score_inputs", "check_init_scores",
           "map_rows", "distinct_values", "in_memory_chunk_rows", "in_memory_source"]


def is_lazy(obj) -> bool:
    """True for inputs that the Dask layer reads lazily (Dask arrays and DataFrames, Zarr arrays
    and paths)."""
    return (isinstance(obj, (da.Array, zarr.Array, str, os.PathLike, Dataset))
            or is_dask_frame(obj))


def is_dask_frame(obj) -> bool:
    """True for a Dask DataFrame or Series."""
    if type(obj).__module__.split(".")[0] not in ("dask", "dask_expr") or isinstance(obj, da.Array):
        return False
    import dask.dataframe as dd
    return isinstance(obj, (dd.DataFrame, dd.Series))


def _is_dask_table(obj) -> bool:
    """True for a Dask DataFrame (not a Series)."""
    import dask.dataframe as dd
    return isinstance(obj, dd.DataFrame)


# ---- tables ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class CategoryMap:
    """How a table's columns become features.

    Attributes
    ----------
    feature_names : list of str
        The column names.
    coded : tuple of int
        Positions of the columns coded through ``categories`` (``category``, string, object).
    auto : tuple of int
        The coded columns that ``categorical_feature="auto"`` splits as categories (ordered
        ``category`` columns are coded but split as numbers, as in LightGBM).
    categories : list of list
        LightGBM's ``pandas_categorical``: one list of values per coded column, in code order.
    """

    feature_names: list
    coded: tuple = ()
    auto: tuple = ()
    categories: list = field(default_factory=list)


#: Partition lengths of Dask collections by collection name (deterministic: a name is a hash of
#: the graph), so that a collection's rows are counted once however often it is converted.
_LENGTHS: OrderedDict = OrderedDict()
_LENGTHS_KEPT = 64


def _collection_key(obj):
    return getattr(obj, "_name", None) or dask.base.tokenize(obj)


def partition_lengths(collections, compute=dask.compute, extra=()) -> tuple:
    """Rows per partition of each Dask DataFrame or Series in ``collections``, counted in one
    compute (with ``extra`` Dask objects computed alongside) unless known already.

    Returns
    -------
    (lengths, extra_values)
        ``lengths``: one tuple of int per collection; ``extra_values``: the computed ``extra``.
    """
    todo = [c for c in collections if _collection_key(c) not in _LENGTHS]
    unique = list({_collection_key(c): c for c in todo}.values())
    counts = [c.map_partitions(len, meta=(None, "int64")) for c in unique]
    values = compute(*counts, *extra) if (counts or extra) else ()
    for c, n in zip(unique, values[:len(unique)]):
        _LENGTHS[_collection_key(c)] = tuple(int(v) for v in n)
        while len(_LENGTHS) > _LENGTHS_KEPT:
            _LENGTHS.popitem(last=False)
    return [_LENGTHS[_collection_key(c)] for c in collections], list(values[len(unique):])


def _encode_partition(part, coded, categories):
    return encode_frame(part, coded, categories)  # by position


def frame_inputs(X, name="X", *, category_map=None, compute=dask.compute, also=()):
    """A pandas or Dask DataFrame as features: (float32 array, :class:`CategoryMap`).

    Parameters
    ----------
    X : pandas.DataFrame or dask.dataframe.DataFrame
    name : str
        The argument's name in error messages.
    category_map : CategoryMap, optional
        The training frame's map (eval sets and prediction): the columns are checked against
        its names and coded by value through its categories. None: found from ``X``.
    compute : callable
        ``compute(*collections) -> tuple``, for a Dask DataFrame's string values and partition
        lengths (one call).
    also : sequence of Dask DataFrames or Series
        Other collections of the fit whose partition lengths are counted in the same call.

    Returns
    -------
    (ndarray or dask.array.Array of float32, CategoryMap)
        A Dask DataFrame gives a Dask array with one row chunk per partition.

    Raises
    ------
    ValueError
        A Dask ``category`` column with unknown categories (the message says to call
        ``ddf.categorize()``); columns that differ from ``category_map``'s; text in a column
        trained on numbers.
    """
    names = [str(c) for c in X.columns]
    if category_map is not None:
        check_frame_columns(X, category_map.feature_names, name)
        cmap = category_map
        strings = []
    else:
        coded = tuple(categorical_columns(X.dtypes))
        strings = [i for i in coded if getattr(X.dtypes.iloc[i], "name", "") != "category"]
        cmap = CategoryMap(names, coded, auto_categorical(X.dtypes), [])
    if not is_dask_frame(X):
        cats = cmap.categories if category_map is not None else frame_categories(X, cmap.coded)
        cmap = CategoryMap(cmap.feature_names, cmap.coded, cmap.auto, cats)
        return encode_frame(X, cmap.coded, cmap.categories, name), cmap
    if category_map is None:
        unknown = [names[i] for i in cmap.coded
                   if i not in strings and not X.iloc[:, i].cat.known]
        if unknown:
            raise ValueError(
                f"{name} is a Dask DataFrame whose category column(s) {unknown} have "
                f"unknown categories; their order gives the codes, so make them known first: "
                f"{name} = {name}.categorize(columns={unknown}) (one pass over "
                f"those columns), or give the columns a CategoricalDtype with the categories.")
    extra = [X.iloc[:, i].dropna().unique() for i in strings]
    (lengths, *_), found = partition_lengths([X, *also], compute, extra)
    if category_map is None:
        found = dict(zip(strings, found))
        cats = [merge_categories([list(found[i])]) if i in found
                else frame_categories(X._meta, [i])[0] for i in cmap.coded]
        cmap = CategoryMap(cmap.feature_names, cmap.coded, cmap.auto, cats)
    m = len(names)
    meta = np.empty((0, m), dtype=X_DTYPE)
    blocks = X.to_delayed()
    encode = dask.delayed(partial(_encode_partition, coded=cmap.coded,
                                  categories=cmap.categories), pure=True)
    arrays = [da.from_delayed(encode(b), shape=(n, m), dtype=X_DTYPE, meta=meta)
              for b, n in zip(blocks, lengths) if n]
    if not arrays:
        arrays = [da.zeros((0, m), dtype=X_DTYPE)]
    return (da.concatenate(arrays, axis=0) if len(arrays) > 1 else arrays[0]), cmap


def _remap_block(block, tables):
    block = np.array(block, dtype=X_DTYPE, copy=True)
    for j, table in tables:
        col = block[:, j]
        ok = np.isfinite(col)
        codes = col[ok].astype(np.int64)
        valid = (codes >= 0) & (codes < table.shape[0])
        out = np.full(codes.shape[0], np.nan, dtype=X_DTYPE)
        out[valid] = table[codes[valid]]
        col[ok] = out
    return block


def remap_codes(X, source: CategoryMap, target: CategoryMap, name="X"):
    """Category codes of ``X`` made with ``source``'s map, as ``target``'s codes, by value
    (a converted dataset predicted or scored with a model whose map came from other data).

    Parameters
    ----------
    X : dask.array.Array of float32, shape (n_samples, n_features), dense
    source, target : CategoryMap

    Returns
    -------
    dask.array.Array
        ``X`` itself when the maps agree; else a lazy copy whose coded columns hold the target's
        code of each value (NaN for a value the target does not know).

    Raises
    ------
    ValueError
        A column coded in one map and not in the other.
    """
    src = dict(zip(source.coded, source.categories))
    dst = dict(zip(target.coded, target.categories))
    if set(src) != set(dst):
        names = target.feature_names or source.feature_names
        differ = sorted(set(src) ^ set(dst))
        raise ValueError(f"{name} holds category codes in column(s) "
                         f"{[names[i] if i < len(names) else i for i in differ]} where the model "
                         f"has {'numbers' if set(src) - set(dst) else 'categories'} (or the "
                         f"reverse); convert it with the same --categorical columns as the "
                         f"training data.")
    from oocgbdt.core.categories import encode_column
    tables = [(j, encode_column(np.asarray(src[j], dtype=object), dst[j]))
              for j in sorted(dst) if list(src[j]) != list(dst[j])]
    if not tables:
        return X
    return X.map_blocks(_remap_block, tables, dtype=X_DTYPE)


def _dask_series_array(v, name):
    """A Dask Series (or one-column DataFrame) as a 1-D Dask array with known chunks, skipping
    empty partitions as :func:`frame_inputs` does (lengths from the cache, else one compute)."""
    if _is_dask_table(v):
        if len(v.columns) != 1:
            raise ValueError(f"{name} must be 1-D of shape (n_samples,), got a Dask DataFrame "
                             f"with {len(v.columns)} columns.")
        v = v.iloc[:, 0]
    (lengths,), _ = partition_lengths([v])
    dtype = v.dtype if isinstance(v.dtype, np.dtype) else np.dtype(object)
    if getattr(v.dtype, "kind", "O") in "biuf" and not isinstance(v.dtype, np.dtype):
        dtype = np.dtype(np.float64)  # nullable numbers: pd.NA as NaN
    to_numpy = dask.delayed(partial(_series_values, dtype=dtype), pure=True)
    arrays = [da.from_delayed(to_numpy(b), shape=(n,), dtype=dtype)
              for b, n in zip(v.to_delayed(), lengths) if n]
    if not arrays:
        return da.zeros((0,), dtype=dtype)
    return da.concatenate(arrays) if len(arrays) > 1 else arrays[0]


def _series_values(s, dtype):
    if dtype.kind == "f":
        return s.to_numpy(dtype=dtype, na_value=np.nan)
    return s.to_numpy(dtype=dtype)


def is_sparse(arr) -> bool:
    """True for scipy.sparse matrices and Dask arrays whose chunks are scipy.sparse."""
    return sp.issparse(arr) or (isinstance(arr, da.Array) and sp.issparse(arr._meta))


def _open_zarr(obj, name):
    path = Path(obj)
    if not path.exists():
        raise FileNotFoundError(f"{name}: no Zarr store at {str(path)!r}.")
    node = zarr.open(str(path), mode="r")
    if isinstance(node, zarr.Group) and isinstance(node.get("X"), zarr.Group):
        from oocgbdt.io.dataset import open_dataset  # a sparse dataset: X is a CSR group
        return open_dataset(path).X
    if isinstance(node, zarr.Group):
        if "X" not in node:
            raise ValueError(f"{name}: the Zarr group at {str(path)!r} has no array 'X'; found "
                             f"{sorted(node.keys())}. Pass the path of an array or of a dataset "
                             f"written by `oocgbdt convert`.")
        node = node["X"]
    return node


#: The fewest rows of in-memory input cut into even chunks: two partitions of at least
#: ``MIN_ROWS``. Fewer rows keep chunks of ``chunk_rows`` rows (at most two of the default
#: 65,536). The chunks of 160,000 one-hot rows were 65,536, 65,536 and 28,928 rows, grouped into
#: partitions of 131,072 and 28,928 rows: a pass's per-partition steps kept one of two threads
#: waiting for most of the pass.
EVEN_CHUNKS_MIN_ROWS = 2 * MIN_ROWS


def in_memory_chunk_rows(n_rows: int, chunk_rows: int) -> int:
    """Rows per chunk of in-memory input (NumPy, scipy.sparse) of ``n_rows`` rows, at most
    ``chunk_rows``.

    Between ``2 * MIN_ROWS`` (131,072) and ``MAX_EVEN_PARTITIONS * TARGET_ROWS`` (1,048,576)
    rows, the default partitioning aims at 2, 3 or 4 even partitions
    (:func:`oocgbdt.core.partitioning.partition_count`), made of whole chunks
    (:mod:`oocgbdt.core.partitioning`); the rows are then cut into a multiple of that many
    chunks of even size, so that the partitions are even. Chunks of exactly ``chunk_rows``
    rows would leave the last partition short: 400,000 rows in chunks of 65,536 make
    partitions of 262,144 and 137,856 rows, whose per-partition steps keep one of two threads
    (or workers) waiting; even chunks of 50,000 make two of 200,000. Outside that range, and
    when one chunk holds every row, the chunks are ``chunk_rows`` rows.

    Parameters
    ----------
    n_rows : int
        Rows of the input.
    chunk_rows : int, >= 1
        Most rows per chunk (the ``chunk_rows`` parameter).

    Returns
    -------
    int
        Rows per chunk (the last chunk may hold fewer), between 1 and ``chunk_rows``.
    """
    n_rows, chunk_rows = int(n_rows), max(1, int(chunk_rows))
    n_chunks = -(-n_rows // chunk_rows)
    if n_chunks <= 1 or not (EVEN_CHUNKS_MIN_ROWS <= n_rows <= MAX_EVEN_PARTITIONS * TARGET_ROWS):
        return chunk_rows
    n_partitions = partition_count(n_rows)
    n_chunks = -(-n_chunks // n_partitions) * n_partitions
    return -(-n_rows // n_chunks)


class _Uncopied:
    """An in-memory array as :func:`dask.array.from_array` reads it, without a copy.

    ``from_array`` copies any array that has a ``copy`` method, so that later changes to the
    input cannot reach a graph computed later. Here the graph is computed within the call that
    made it (training or prediction), and that copy was a serial pass over all of ``X`` before
    anything else: 20 ms for 400,000 x 50 float32; of the set-up before the first tree, about
    0.1 s on 1,000,000 x 100 float32 and 10-20 ms on a 200,000 x 1,205 one-hot CSR matrix
    (``docs/performance.md``). The chunks are still the input's own slices (views of a NumPy
    array, row copies of a CSR matrix), and nothing writes to them.
    """

    __slots__ = ("array", "shape", "dtype", "ndim")

    def __init__(self, array):
        self.array = array
        self.shape = array.shape
        self.dtype = array.dtype
        self.ndim = array.ndim

    def __getitem__(self, key):
        return self.array[key]


def as_dask_array(obj, name: str, *, ndim: int, chunk_rows: int | None = None,
                  numeric: bool = True, allow_empty: bool = False) -> da.Array:
    """Wrap ``obj`` as a Dask array with ``ndim`` dimensions, chunked along rows only.

    Parameters
    ----------
    obj : ndarray, dask.array.Array, zarr.Array, str or path-like (Zarr store), or array-like
    name : str
        Argument name used in error messages (``"X"``, ``"y"``, ...).
    ndim : int
        Expected number of dimensions (2 for features, 1 for labels and weights).
    chunk_rows : int, optional
        Most rows per chunk for in-memory input (NumPy, scipy.sparse;
        :func:`in_memory_chunk_rows`); ignored for Dask and Zarr input.
    numeric : bool, default True
        Require a numeric (or bool) dtype; False for class labels, which may be strings.
    allow_empty : bool, default False
        Accept zero rows (prediction; training needs at least one).

    Raises
    ------
    ValueError
        Wrong number of dimensions, zero rows (unless ``allow_empty``), unknown chunk sizes.
    TypeError
        Non-numeric dtype.
    FileNotFoundError
        A path that does not exist.
    """
    if isinstance(obj, (str, os.PathLike)):
        obj = _open_zarr(obj, name)
    if isinstance(obj, Dataset):
        obj = obj.X
    if is_dask_frame(obj):
        obj = (_dask_series_array(obj, name) if ndim == 1 or not _is_dask_table(obj)
               else frame_inputs(obj, name)[0])
    if isinstance(obj, zarr.Array):
        arr = da.from_zarr(obj)
    elif isinstance(obj, da.Array):
        arr = obj
    elif sp.issparse(obj):
        if ndim != 2:
            raise TypeError(f"{name} is a scipy.sparse matrix; it must be a 1-D array.")
        a = sp.csr_matrix(obj)
        if not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
            raise TypeError(f"{name} must have a numeric dtype, got dtype {a.dtype}.")
        if a.dtype != X_DTYPE:
            a = a.astype(X_DTYPE)
        rows = in_memory_chunk_rows(a.shape[0], chunk_rows or a.shape[0] or 1)
        # name=False: a random name instead of a hash of every stored value (about 30 ms on
        # a 200k x 1,205 one-hot matrix); in-memory data is not deduplicated across graphs
        arr = da.from_array(_Uncopied(a), chunks=(rows, max(a.shape[1], 1)), asarray=False,
                            name=False)
        arr._in_memory_source = a  # see in_memory_source; a derived array has none
    else:
        a = as_float_if_frame(obj) if numeric else np.asarray(obj)
        if a.ndim != ndim:
            _bad_ndim(name, ndim, a.ndim, a.shape)
        if numeric and a.dtype == object:
            # Object arrays of numbers (e.g. from a mixed-type DataFrame) are numeric data;
            # anything else in them (strings, dicts, None) is not.
            try:
                a = a.astype(np.float64)
            except (TypeError, ValueError) as e:
                raise TypeError(f"{name} must be numeric; it is an object array holding a value "
                                f"that is not a number ({e}). Encode strings or categories as "
                                f"numbers first.") from None
        rows = in_memory_chunk_rows(a.shape[0], chunk_rows or a.shape[0] or 1)
        arr = da.from_array(_Uncopied(a), chunks=(rows,) + a.shape[1:], name=False)  # as above
        arr._in_memory_source = a
    if arr.ndim != ndim:
        _bad_ndim(name, ndim, arr.ndim, arr.shape)
    if any(np.isnan(c) for c in arr.chunks[0]):
        raise ValueError(f"{name} has unknown chunk sizes along rows (for example after boolean "
                         f"indexing); call {name} = {name}.compute_chunk_sizes() first.")
    if arr.shape[0] == 0 and not allow_empty:
        raise ValueError(f"{name} has 0 rows; at least 1 row is required.")
    if numeric and (not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool)
                    or arr.dtype.kind == "c"):
        raise TypeError(f"{name} must have a numeric dtype, got dtype {arr.dtype}. "
                        f"Encode strings or categories as numbers first.")
    if ndim == 2:
        if arr.shape[1] == 0:
            raise ValueError(f"{name} has 0 features; at least 1 column is required.")
        if len(arr.chunks[1]) > 1:
            # Column chunking is rechunked away: each task needs whole rows.
            arr = arr.rechunk({1: -1})
        if arr.dtype != X_DTYPE:
            arr = arr.astype(X_DTYPE)
    return arr


def in_memory_source(X: da.Array):
    """The in-memory array (NumPy, or scipy.sparse CSR) that :func:`as_dask_array` wrapped as
    ``X`` unchanged (same values, shape and dtype), or None (Dask or Zarr input, or any Dask
    array derived from the wrapper: a slice, a cast, a rechunk). Read, never written: it is the
    caller's own array, or shares its buffers."""
    return getattr(X, "_in_memory_source", None)


def _bad_ndim(name, ndim, found, shape):
    want = "2-D of shape (n_samples, n_features)" if ndim == 2 else "1-D of shape (n_samples,)"
    raise ValueError(f"{name} must be {want}, got {found} dimension(s) with shape {shape}.")


def as_row_chunked(X, name="X", chunk_rows=None, allow_empty=False) -> da.Array:
    """Features as a float32 Dask array chunked by rows (see :func:`as_dask_array`)."""
    return as_dask_array(X, name, ndim=2, chunk_rows=chunk_rows, allow_empty=allow_empty)


def align_rows(X: da.Array, v, name: str, chunk_rows=None, numeric: bool = True) -> da.Array:
    """A 1-D input (``y``, ``sample_weight``) as a Dask array with ``X``'s row chunks.

    ``numeric=False`` accepts any dtype (class labels before encoding).

    Raises
    ------
    ValueError
        Its length differs from the number of rows of ``X``, or it is not 1-D.
    """
    if v is None:
        return None
    if not isinstance(v, (da.Array, zarr.Array, str, os.PathLike)):
        v = np.asarray(v)
        if v.ndim == 2 and v.shape[1] == 1:
            v = v.ravel()
        if v.ndim == 1 and v.shape[0] != X.shape[0]:
            raise ValueError(f"{name} has {v.shape[0]} rows but X has {X.shape[0]} rows; "
                             f"they must match.")
    arr = as_dask_array(v, name, ndim=1, chunk_rows=chunk_rows, numeric=numeric)
    if arr.shape[0] != X.shape[0]:
        raise ValueError(f"{name} has {arr.shape[0]} rows but X has {X.shape[0]} rows; "
                         f"they must match.")
    if arr.chunks[0] != X.chunks[0]:
        arr = arr.rechunk({0: X.chunks[0]})
    return arr


def check_values(y: da.Array, weight: da.Array | None, y_name="y", weight_name="sample_weight",
                 compute=dask.compute, positive_for=None):
    """One small reduction: reject NaN/inf labels and NaN/inf/negative/all-zero weights, and,
    with ``positive_for`` (an objective's name), any zero weight.

    Raises
    ------
    ValueError
        Naming the argument, what was expected and how many values break it.
    """
    checks = [(~da.isfinite(y)).sum()]
    if weight is not None:
        checks += [(~da.isfinite(weight)).sum(), (weight < 0).sum(), (weight > 0).sum()]
        if positive_for is not None:
            checks.append((weight == 0).sum())
    counts = compute(*checks)
    if counts[0]:
        raise ValueError(f"{y_name} must be finite; found {int(counts[0])} NaN or infinite value(s).")
    if weight is not None:
        if counts[1]:
            raise ValueError(f"{weight_name} must be finite; found {int(counts[1])} NaN or "
                             f"infinite value(s).")
        if counts[2]:
            raise ValueError(f"{weight_name} must be >= 0; found {int(counts[2])} negative value(s).")
        if not counts[3]:
            raise ValueError(f"{weight_name} must have at least one weight > 0; found all "
                             f"{weight.shape[0]} weight(s) equal to zero.")
        if positive_for is not None and counts[4]:
            raise ValueError(f"{weight_name} must be > 0 for objective {positive_for!r} "
                             f"(LightGBM refuses a non-positive weight); found {int(counts[4])} "
                             f"weight(s) equal to zero.")


@dataclass
class TrainingInputs:
    """A fit's inputs as row-chunked Dask arrays (metadata only: nothing is read).

    Attributes
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
    y, weight : dask.array.Array of shape (n_samples,), chunked as ``X`` (weight may be None)
    evals : list of (name, X, y, weight)
        The eval sets, each chunked on its own.
    lazy : bool
        Whether any input is read lazily (Dask, Zarr): such a fit runs on a cluster.
    queries : dict or None
        Ranking: ``{set name: query sizes}`` (int64) of the sets given groups; their arrays are
        rechunked so that every chunk holds whole queries (:func:`align_to_queries`).
    feature_names : list of str or None
        As given, else a DataFrame's column names (or a dataset's names), else None.
    categorical_auto : tuple of int
        Features that ``categorical_feature="auto"`` splits as categories: a DataFrame's
        unordered ``category``, string and object columns (or a dataset's coded columns).
    pandas_categorical : list of list or None
        LightGBM's category map: for each coded column, in column order, its category values in
        code order (None without coded columns).
    pandas_categorical_features : tuple of int
        Positions of the coded columns (``pandas_categorical[k]`` maps column
        ``pandas_categorical_features[k]``).
    """

    X: da.Array
    y: da.Array
    weight: da.Array | None
    evals: list
    lazy: bool
    queries: dict | None = None
    feature_names: list | None = None
    categorical_auto: tuple = ()
    pandas_categorical: list | None = None
    pandas_categorical_features: tuple = ()

    @property
    def sets(self) -> list:
        """``[(set name, X, y, weight)]``: ``"train"``, then ``"eval_0"``, ``"eval_1"``, ..."""
        return [("train", self.X, self.y, self.weight)] + [
            (f"eval_{i}", Xe, ye, we) for i, (_, Xe, ye, we) in enumerate(self.evals)]


def training_inputs(X, y, sample_weight, eval_set, eval_names, eval_sample_weight,
                    feature_names, chunk_rows, compute=dask.compute) -> TrainingInputs:
    """Check and normalize the inputs of a fit (see :func:`oocgbdt.dask.training.train`); cheap,
    metadata only, except for Dask DataFrames: one ``compute`` call counts the rows of every
    partition of the fit's Dask DataFrames and Series and finds the distinct values of X's
    string columns (:func:`frame_inputs`).

    Raises
    ------
    ValueError, TypeError
        Naming the argument, what was expected and what was found.
    """
    eval_list = list(eval_set or []) if isinstance(eval_set, (list, tuple)) else []
    frames = [v for v in [X, y, sample_weight] + [p for e in eval_list
                                                   if isinstance(e, (tuple, list)) for p in e]
              + list(eval_sample_weight if isinstance(eval_sample_weight, (list, tuple)) else [])
              if is_dask_frame(v)]
    if frames and not is_dask_frame(X):
        partition_lengths(frames, compute)  # once, for all of them
    cmap = dataset_map(X) if isinstance(X, (str, os.PathLike)) else None
    if isinstance(X, Dataset):
        # An opened dataset: its map and names, and its labels and weights unless given.
        cmap = _map_of(X)
        y = X.y if y is None else y
        sample_weight = X.weight if sample_weight is None else sample_weight
        X = X.X
    if is_frame(X) or is_dask_frame(X):
        if is_dask_frame(X) and not _is_dask_table(X):
            raise ValueError("X must be 2-D of shape (n_samples, n_features), got a Dask Series; "
                             "pass a Dask DataFrame (series.to_frame()).")
        X, cmap = frame_inputs(X, "X", compute=compute, also=[f for f in frames if f is not X])
        if feature_names is None:
            feature_names = cmap.feature_names
    Xd = as_row_chunked(X, "X", chunk_rows)
    yd = align_rows(Xd, y, "y", chunk_rows)
    if yd is None:
        raise ValueError("y is required: got None.")
    wd = align_rows(Xd, sample_weight, "sample_weight", chunk_rows)
    n_features = Xd.shape[1]
    if feature_names is not None and len(feature_names) != n_features:
        raise ValueError(f"feature_names has {len(feature_names)} names but X has {n_features} "
                         f"features.")
    eval_set = list(eval_set or [])
    if isinstance(eval_names, str):
        raise TypeError(f"eval_names must be a list of str, one per eval set; got the str "
                        f"{eval_names!r}.")
    eval_names = list(eval_names) if eval_names is not None else [f"valid_{i}" for i in range(len(eval_set))]
    if len(eval_names) != len(eval_set):
        raise ValueError(f"eval_names has {len(eval_names)} names for {len(eval_set)} eval sets.")
    repeated = sorted({str(n) for n in eval_names if eval_names.count(n) > 1})
    if repeated:
        raise ValueError(f"eval_names must be distinct (results are keyed by name); "
                         f"{', '.join(map(repr, repeated))} is given more than once.")
    if eval_sample_weight is not None:
        if not isinstance(eval_sample_weight, (list, tuple)):
            raise TypeError(f"eval_sample_weight must be a list with one entry (array-like or "
                            f"None) per eval set; got {type(eval_sample_weight).__name__}.")
        if len(eval_sample_weight) != len(eval_set):
            raise ValueError(f"eval_sample_weight has {len(eval_sample_weight)} entries for "
                             f"{len(eval_set)} eval sets; give one (array-like or None) per set.")
    evals = []
    for i, pair in enumerate(eval_set):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"eval_set[{i}] must be an (X, y) pair, got {type(pair).__name__}.")
        Xe = pair[0]
        if cmap is not None and (is_frame(Xe) or is_dask_frame(Xe)):
            Xe = frame_inputs(Xe, f"eval_set[{i}] X", category_map=cmap, compute=compute)[0]
        elif (emap := dataset_map_of(Xe)) is not None:
            # A dataset converted on its own: its codes, by value, as X's (and no codes where
            # X has none, nor numbers where X has codes).
            Xe = as_row_chunked(getattr(Xe, "X", Xe), f"eval_set[{i}] X", chunk_rows)
            if emap.coded or (cmap is not None and cmap.coded):
                Xe = remap_codes(Xe, emap, cmap or CategoryMap([]), f"eval_set[{i}] X")
        elif cmap is not None and cmap.coded and not is_lazy(Xe) and _has_text(Xe):
            raise TypeError(f"eval_set[{i}] X holds text; pass it as a DataFrame with X's "
                            f"columns, so that its categories are coded as X's.")
        Xe = as_row_chunked(Xe, f"eval_set[{i}] X", chunk_rows)
        if Xe.shape[1] != n_features:
            raise ValueError(f"eval_set[{i}] X has {Xe.shape[1]} features but X has "
                             f"{n_features}; they must match.")
        ye = align_rows(Xe, pair[1], f"eval_set[{i}] y", chunk_rows)
        we = None
        if eval_sample_weight is not None and eval_sample_weight[i] is not None:
            we = align_rows(Xe, eval_sample_weight[i], f"eval_sample_weight[{i}]", chunk_rows)
        evals.append((eval_names[i], Xe, ye, we))
    lazy = any(is_lazy(v) for v in [X, y, sample_weight] + [p for e in eval_set for p in e])
    if cmap is not None and feature_names is None and cmap.feature_names:
        feature_names = list(cmap.feature_names)
    return TrainingInputs(Xd, yd, wd, evals, lazy, feature_names=feature_names,
                          categorical_auto=() if cmap is None else tuple(cmap.auto),
                          pandas_categorical=(list(cmap.categories) if cmap and cmap.coded
                                              else None),
                          pandas_categorical_features=() if cmap is None else tuple(cmap.coded))


def _has_text(X) -> bool:
    kind = getattr(getattr(X, "dtype", None), "kind", None)
    return kind in ("U", "S", "O")


def _map_of(ds) -> CategoryMap:
    """The map of an opened dataset (its names; no coded column when it has none)."""
    return CategoryMap(list(ds.feature_names), tuple(ds.categorical_features),
                       tuple(ds.categorical_features), list(ds.pandas_categorical or []))


def dataset_map(path):
    """The category map stored in an oocgbdt dataset at ``path`` (None: not a dataset, or no
    coded column)."""
    from oocgbdt.io.dataset import dataset_categories
    found = dataset_categories(path)
    if found is None:
        return None
    names, coded, categories = found
    return CategoryMap(list(names), tuple(coded), tuple(coded), list(categories))


def dataset_map_of(obj):
    """The category map of an oocgbdt dataset given opened or by path (with no coded column
    when it has none); None for anything else (a Zarr array, a NumPy array, ...)."""
    if isinstance(obj, (str, os.PathLike)):
        from oocgbdt.io.dataset import _as_path, _is_dataset_dir
        if not _is_dataset_dir(_as_path(obj)):
            return None
        from oocgbdt.io.dataset import open_dataset
        obj = open_dataset(obj)
    return _map_of(obj) if isinstance(obj, Dataset) else None


def check_group(group, n_rows, name="group"):
    """Query sizes as an int64 array, checked: 1-D, positive integers summing to ``n_rows``.

    Raises
    ------
    ValueError
        Naming ``name``, what was expected and what was found.
    """
    g = np.asarray(group)
    if g.ndim != 1 or g.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of query sizes, got shape "
                         f"{g.shape}")
    if g.dtype.kind not in "iuf" or (g.dtype.kind == "f" and not np.all(g == np.floor(g))):
        raise ValueError(f"{name} must hold integer query sizes, got dtype {g.dtype}")
    g = g.astype(np.int64)
    if g.min() < 1:
        raise ValueError(f"{name} must hold query sizes >= 1, found {int(g.min())}")
    if int(g.sum()) != int(n_rows):
        raise ValueError(f"{name} sizes must sum to the number of rows: they sum to "
                         f"{int(g.sum())} but there are {int(n_rows)} rows")
    return g


def check_position(position, n_rows, objective):
    """The training rows' positions (LightGBM's ``Dataset(position=)``) as
    ``(ids, n_positions)``: ``ids`` (int32, shape (n_rows,)) numbers the distinct positions
    ``0 .. n_positions - 1`` in increasing order of their values (LightGBM numbers them by first
    appearance; each position's bias factor is learned alone, so the numbering changes nothing).

    Raises
    ------
    ValueError
        ``position`` not 1-D, of another length than the rows, not integer-valued, or given with
        an objective other than ``lambdarank`` (the only one that uses positions).
    """
    if objective.name != "lambdarank":
        raise ValueError(f"position is used by objective 'lambdarank' only (position bias "
                         f"factors of unbiased LambdaRank), got objective {objective.name!r}")
    p = np.asarray(position)
    if p.ndim != 1 or p.shape[0] != int(n_rows):
        raise ValueError(f"position must be a 1-D array with one value per training row "
                         f"({int(n_rows)}), got shape {p.shape}")
    if p.dtype.kind not in "iuf" or (p.dtype.kind == "f" and not np.all(p == np.floor(p))):
        raise ValueError(f"position must hold integer positions, got dtype {p.dtype}"
                         + (" with non-integer or non-finite values" if p.dtype.kind == "f"
                            else ""))
    values, ids = np.unique(p.astype(np.int64), return_inverse=True)
    return ids.astype(np.int32).reshape(-1), int(values.shape[0])


def query_chunks(group, target_rows):
    """Chunk sizes of whole queries: consecutive queries grouped until a chunk holds at least
    ``target_rows`` rows (a query is never split; the last chunk may be smaller)."""
    chunks, rows = [], 0
    for size in np.asarray(group, dtype=np.int64):
        rows += int(size)
        if rows >= target_rows:
            chunks.append(rows)
            rows = 0
    if rows:
        chunks.append(rows)
    return tuple(chunks)


def align_to_queries(inputs: TrainingInputs, group, eval_group, chunk_rows) -> TrainingInputs:
    """Rechunk every set given query sizes so that chunk (hence partition) bounds are query
    bounds: a storage chunk boundary inside a query is read across (Dask's rechunk), and a
    query's rows always land in one partition, whatever the input's chunking.

    The target chunk is the input's largest chunk (``chunk_rows`` for NumPy input).
    ``chunk_rows`` is kept for the signature's symmetry with :func:`training_inputs`.
    """
    sets = {"train": (inputs.X, inputs.y, inputs.weight)}
    sets.update({name: (Xe, ye, we) for name, Xe, ye, we in inputs.evals})
    groups = {}
    if group is not None:
        groups["train"] = check_group(group, inputs.X.shape[0])
    if eval_group is not None:
        if not isinstance(eval_group, (list, tuple)) or len(eval_group) != len(inputs.evals):
            raise ValueError(f"eval_group must be a list with the query sizes of each eval set "
                             f"({len(inputs.evals)}), got {type(eval_group).__name__}"
                             f"{'' if not isinstance(eval_group, (list, tuple)) else ' of ' + str(len(eval_group))}")
        for (name, Xe, _, _), g in zip(inputs.evals, eval_group):
            if g is not None:
                groups[name] = check_group(g, Xe.shape[0], f"eval_group for {name!r}")
    out = dict(sets)
    for name, g in groups.items():
        X_, y_, w_ = sets[name]
        rows = query_chunks(g, max(max(X_.chunks[0]), 1))
        out[name] = tuple(None if a is None else a.rechunk({0: rows}) for a in (X_, y_, w_))
    evals = [(name,) + out[name] for name, *_ in inputs.evals]
    X, y, w = out["train"]
    return replace(inputs, X=X, y=y, weight=w, evals=evals, queries=groups or None)


def _score_columns(v, name):
    """``v`` as a NumPy or Dask array of float64, 1-D or 2-D, without reading it (a Dask
    DataFrame or Series as a Dask array, its partitions counted once)."""
    if isinstance(v, (str, os.PathLike)):
        if not Path(v).exists():
            raise FileNotFoundError(f"{name}: no Zarr array at {str(v)!r}.")
        v = zarr.open(str(v), mode="r")
        if not isinstance(v, zarr.Array):
            raise ValueError(f"{name}: {str(v.store)!r} is a Zarr group; pass the path of an "
                             f"array of scores.")
    if isinstance(v, zarr.Array):
        v = da.from_zarr(v)
    if is_dask_frame(v):
        if _is_dask_table(v):
            cols = [_dask_series_array(v.iloc[:, j], name) for j in range(len(v.columns))]
            v = cols[0][:, None] if len(cols) == 1 else da.stack(cols, axis=1)
        else:
            v = _dask_series_array(v, name)
    elif not isinstance(v, da.Array):
        try:
            v = np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{name} must hold numbers: {e}") from None
    if v.ndim not in (1, 2):
        raise ValueError(f"{name} must be 1-D or 2-D, got {v.ndim} dimension(s) with shape "
                         f"{v.shape}.")
    if not (np.issubdtype(v.dtype, np.number) or v.dtype == bool) or v.dtype.kind == "c":
        raise TypeError(f"{name} must have a numeric dtype, got dtype {v.dtype}.")
    if isinstance(v, da.Array) and any(np.isnan(c) for c in v.chunks[0]):
        raise ValueError(f"{name} has unknown chunk sizes along rows; call "
                         f"{name} = {name}.compute_chunk_sizes() first.")
    return v.astype(np.float64)


def init_score_array(score, X: da.Array, n_outputs: int, name="init_score") -> da.Array:
    """A starting raw score per row (LightGBM's ``init_score``) as a float64 Dask array of
    shape ``(n_rows, n_outputs)`` chunked along rows as ``X`` (one column chunk); nothing is
    read.

    Parameters
    ----------
    score : array-like, pandas Series or DataFrame, dask.array.Array, Dask Series or DataFrame, zarr.Array or the path of one
        Shape ``(n_rows,)``, ``(n_rows, n_outputs)``, or, flattened class-major as LightGBM
        stores it, ``(n_rows * n_outputs,)`` (every row's score of class 0, then of class 1,
        ...). Source: LightGBM's ``python-package/lightgbm/basic.py`` (``set_field``: a 2-D
        init score is raveled in column order) and ``src/io/metadata.cpp`` (its length must
        be a multiple of the rows).
    X : dask.array.Array
        The rows the scores belong to (their row chunks are used).
    n_outputs : int
        Trees per round (``num_class`` for multiclass objectives, else 1).
    name : str
        The argument's name in error messages.

    Raises
    ------
    ValueError
        A length or shape that does not match ``X``'s rows and ``n_outputs``, or more than
        2 dimensions.
    TypeError
        Values that are not numbers.
    """
    v = _score_columns(score, name)
    n, k = int(X.shape[0]), int(n_outputs)
    want = f"({n},)" if k == 1 else f"({n}, {k}) or ({n * k},) (class-major)"
    if v.ndim == 1 and v.shape[0] == n and k == 1:
        v = v[:, None]
    elif v.ndim == 1 and k > 1 and v.shape[0] == n * k:
        v = (v.reshape(k, n).T if isinstance(v, np.ndarray)
             else da.stack([v[j * n:(j + 1) * n] for j in range(k)], axis=1))
    elif not (v.ndim == 2 and v.shape == (n, k)):
        raise ValueError(f"{name} must have shape {want} for {n} rows and {k} output(s) per "
                         f"row; got shape {tuple(v.shape)}.")
    if isinstance(v, np.ndarray):
        return da.from_array(np.ascontiguousarray(v), chunks=(X.chunks[0], (k,)))
    return v.rechunk({0: X.chunks[0], 1: -1})


def check_init_scores(init_scores: dict, compute=dask.compute) -> None:
    """One small reduction: reject NaN or infinite starting scores (they would make every
    gradient of their rows NaN).

    Raises
    ------
    ValueError
        Naming the set (``init_score``, ``eval_init_score[i]``) and how many values are bad.
    """
    if not init_scores:
        return
    counts = compute(*[(~da.isfinite(a)).sum() for a in init_scores.values()])
    for s, n in zip(init_scores, counts):
        if n:
            name = "init_score" if s == "train" else f"eval_init_score[{s.split('_')[1]}]"
            raise ValueError(f"{name} must be finite; found {int(n)} NaN or infinite value(s).")


def init_score_inputs(inputs: TrainingInputs, init_score, eval_init_score,
                      n_outputs: int) -> dict:
    """``{set name: scores}`` (``"train"``, ``"eval_0"``, ...; see :attr:`TrainingInputs.sets`)
    of the sets given starting raw scores, each from :func:`init_score_array` (chunked as the
    set's rows after any rechunking by :func:`align_to_queries`).

    Raises
    ------
    ValueError, TypeError
        As :func:`init_score_array`; ``eval_init_score`` that is not a list with one entry
        (array-like or None) per eval set.
    """
    out = {}
    if init_score is not None:
        out["train"] = init_score_array(init_score, inputs.X, n_outputs, "init_score")
    if eval_init_score is None:
        return out
    if not isinstance(eval_init_score, (list, tuple)):
        raise TypeError(f"eval_init_score must be a list with one entry (array-like or None) "
                        f"per eval set; got {type(eval_init_score).__name__}.")
    if len(eval_init_score) != len(inputs.evals):
        raise ValueError(f"eval_init_score has {len(eval_init_score)} entries for "
                         f"{len(inputs.evals)} eval sets; give one (array-like or None) per set.")
    for i, ((_, Xe, _, _), s) in enumerate(zip(inputs.evals, eval_init_score)):
        if s is not None:
            out[f"eval_{i}"] = init_score_array(s, Xe, n_outputs, f"eval_init_score[{i}]")
    return out


def check_labels_and_weights(inputs: TrainingInputs, objective, compute) -> None:
    """Reject NaN/inf labels, bad weights and labels the objective cannot take (small computes,
    ``compute(*arrays)`` -> tuple of values).

    Raises
    ------
    ValueError
        Naming the set and what its labels or weights break.
    """
    evals = inputs.evals
    check_values(inputs.y, inputs.weight, compute=compute,
                 positive_for=(objective.name if getattr(objective, "positive_weights", False)
                               else None))
    for name, _, ye, we in evals:
        check_values(ye, we, y_name=f"eval_set {name!r} y", weight_name=f"{name!r} weight",
                     compute=compute)
    if objective.label_check == "values":
        # One compute for the distinct labels of y and of every eval set (LightGBM scores eval
        # labels it would refuse to train on; a multiclass eval label >= num_class then
        # failed late, in the metric, with an IndexError).
        uniques = compute(da.unique(inputs.y), *(da.unique(ye) for _, _, ye, _ in evals))
        objective.check_labels(uniques[0])
        for (name, *_), u in zip(evals, uniques[1:]):
            objective.check_labels(u, name=f"eval_set {name!r} y")
    elif objective.label_check == "range":
        # Non-negative labels (poisson, gamma, tweedie), labels in [0, 1] (cross_entropy): the
        # smallest and largest label of the training set decide (one compute).
        lo, hi = compute(da.min(inputs.y), da.max(inputs.y))
        objective.check_labels(np.array([lo, hi]))


def map_rows(func, arr, *, dtype, n_columns=None):
    """Apply a NumPy function to blocks of rows: directly to NumPy input, blockwise to Dask input.

    ``func`` maps a block of consecutive rows to one output row per input row, so applying it
    to every row chunk of a Dask array (one task per chunk, nothing computed here) gives the
    same values as applying it to the whole array. A 2-D Dask array split into column chunks is
    first rechunked so that each block holds whole rows.

    Parameters
    ----------
    func : callable
        ``func(block) -> ndarray`` with ``len(block)`` rows: 1-D when ``n_columns`` is None,
        else 2-D with ``n_columns`` columns. Use :func:`functools.partial` to bind arguments.
    arr : ndarray or dask.array.Array, 1-D or 2-D
    dtype : dtype
        Dtype of ``func``'s output (the Dask result's dtype, without calling ``func``).
    n_columns : int, optional
        Columns of the output; None for a 1-D output.

    Returns
    -------
    ndarray or dask.array.Array
        ``func(arr)`` for NumPy input; for Dask input a lazy array chunked along rows as ``arr``.
    """
    if not isinstance(arr, da.Array):
        return func(arr)
    if arr.ndim == 2 and len(arr.chunks[1]) > 1:
        arr = arr.rechunk({1: -1})
    dtype = np.dtype(dtype)
    axes = {}
    if n_columns is None:
        chunks, meta = (arr.chunks[0],), np.empty((0,), dtype=dtype)
        if arr.ndim == 2:
            axes["drop_axis"] = 1
    else:
        chunks, meta = (arr.chunks[0], (int(n_columns),)), np.empty((0, 0), dtype=dtype)
        if arr.ndim == 1:
            axes["new_axis"] = 1
    return arr.map_blocks(func, chunks=chunks, dtype=dtype, meta=meta, **axes)


def distinct_values(arr, client=None) -> np.ndarray:
    """The sorted distinct values of a 1-D array (for a Dask array, one small compute).

    Parameters
    ----------
    arr : array-like or dask.array.Array, 1-D
        Any dtype NumPy can sort (class labels: numbers or strings).
    client : distributed.Client, optional
        Where a Dask array's values are computed: this client, else the default client
        (outside a Dask task), else local threads. Never the ``scheduler`` setting alone,
        which a closed client can leave pointing at a cluster that is gone.

    Returns
    -------
    ndarray
        ``numpy.unique(arr)``; a Dask array's distinct values are found per chunk and merged
        by ``dask.array.unique``.
    """
    if isinstance(arr, da.Array):
        values = da.unique(arr)
        client = find_client(client)
        if client is not None:
            return np.unique(client.compute(values, sync=True))
        return np.unique(values.compute(scheduler="threads"))
    return np.unique(arr)
