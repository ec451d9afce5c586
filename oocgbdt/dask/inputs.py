"""This module contains input normalization: every accepted input becomes a row-chunked Dask array.

Data flow position: the first step of training and prediction. Accepted: NumPy arrays, scipy.sparse
matrices, Dask arrays (NumPy or scipy.sparse chunks), Zarr arrays, and paths to Zarr stores (an
array, or an oocgbdt dataset group whose ``X`` is used, dense or sparse). Output:
``dask.array.Array`` chunked along rows only (columns in one chunk), known chunk sizes, float32
for features; sparse inputs stay sparse (CSR chunks), never densified. Every check here is cheap (metadata only) except
:func:`check_values`, which is one small reduction over ``y`` and the weights.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import scipy.sparse as sp
import zarr

from oocgbdt._dtypes import X_DTYPE, as_float_if_frame
from oocgbdt.runtime.cluster import find_client

__all__ = ["is_lazy", "is_sparse", "as_dask_array", "as_row_chunked", "align_rows", "check_values",
           "TrainingInputs", "training_inputs", "check_labels_and_weights", "check_group",
           "query_chunks", "align_to_queries", "map_rows",
           "distinct_values"]


def is_lazy(obj) -> bool:
    """True for inputs that the Dask layer reads lazily (Dask arrays, Zarr arrays and paths)."""
    return isinstance(obj, (da.Array, zarr.Array, str, os.PathLike))


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
        Rows per chunk for in-memory input (NumPy); ignored for Dask and Zarr input.
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
        rows = max(1, int(chunk_rows or a.shape[0] or 1))
        arr = da.from_array(a, chunks=(rows, max(a.shape[1], 1)), asarray=False)
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
        rows = max(1, int(chunk_rows or a.shape[0] or 1))
        arr = da.from_array(a, chunks=(rows,) + a.shape[1:])
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
                 compute=dask.compute):
    """One small reduction: reject NaN/inf labels and NaN/inf/negative/all-zero weights.

    Raises
    ------
    ValueError
        Naming the argument, what was expected and how many values break it.
    """
    checks = [(~da.isfinite(y)).sum()]
    if weight is not None:
        checks += [(~da.isfinite(weight)).sum(), (weight < 0).sum(), (weight > 0).sum()]
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
    """

    X: da.Array
    y: da.Array
    weight: da.Array | None
    evals: list
    lazy: bool
    queries: dict | None = None

    @property
    def sets(self) -> list:
        """``[(set name, X, y, weight)]``: ``"train"``, then ``"eval_0"``, ``"eval_1"``, ..."""
        return [("train", self.X, self.y, self.weight)] + [
            (f"eval_{i}", Xe, ye, we) for i, (_, Xe, ye, we) in enumerate(self.evals)]


def training_inputs(X, y, sample_weight, eval_set, eval_names, eval_sample_weight,
                    feature_names, chunk_rows) -> TrainingInputs:
    """Check and normalize the inputs of a fit (see :func:`oocgbdt.dask.training.train`); cheap,
    metadata only.

    Raises
    ------
    ValueError, TypeError
        Naming the argument, what was expected and what was found.
    """
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
        Xe = as_row_chunked(pair[0], f"eval_set[{i}] X", chunk_rows)
        if Xe.shape[1] != n_features:
            raise ValueError(f"eval_set[{i}] X has {Xe.shape[1]} features but X has "
                             f"{n_features}; they must match.")
        ye = align_rows(Xe, pair[1], f"eval_set[{i}] y", chunk_rows)
        we = None
        if eval_sample_weight is not None and eval_sample_weight[i] is not None:
            we = align_rows(Xe, eval_sample_weight[i], f"eval_sample_weight[{i}]", chunk_rows)
        evals.append((eval_names[i], Xe, ye, we))
    lazy = any(is_lazy(v) for v in [X, y, sample_weight] + [p for e in eval_set for p in e])
    return TrainingInputs(Xd, yd, wd, evals, lazy)


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
    return TrainingInputs(X, y, w, evals, inputs.lazy, groups or None)


def check_labels_and_weights(inputs: TrainingInputs, objective, compute) -> None:
    """Reject NaN/inf labels, bad weights and labels the objective cannot take (small computes,
    ``compute(*arrays)`` -> tuple of values).

    Raises
    ------
    ValueError
        Naming the set and what its labels or weights break.
    """
    evals = inputs.evals
    check_values(inputs.y, inputs.weight, compute=compute)
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
