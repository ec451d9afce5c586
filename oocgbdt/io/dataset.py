"""The on-disk dataset layout of oocgbdt and its reader/writer helpers.

An oocgbdt dataset is a directory holding one Zarr v3 group::

    <path>/                      group attrs: {"format": "oocgbdt-dataset", "version": 2,
                                               "feature_names": [...], "label": name or None,
                                               "source": original path or None,
                                               ["categorical_features": [positions],
                                                "pandas_categorical": [[values], ...]]}
        X       float32 (n_rows, n_features), chunks (chunk_rows, n_features)
        y       float64 (n_rows,),            chunks (chunk_rows,)        [optional]
        weight  float32 or float64 (n_rows,), chunks (chunk_rows,)        [optional]

Arrays are chunked by rows only (all columns of a row sit in one chunk), so one chunk is one
unit of work for the Dask layer, and compressed with Zarr's default codec. Zero-filled chunks
are not written (Zarr's ``write_empty_chunks=False``), which keeps sparse data small on disk.

Version 2 adds a sparse ``X`` (``sparse=True``; LibSVM conversion picks it for sparse files):
``X`` is then a group holding one CSR matrix read by row chunks::

        X/      group attrs: {"layout": "csr", "shape": [n_rows, n_features], "chunk_rows": c}
            indptr   int64 (n_rows + 1,)  chunks (c,)   entries of row r: [indptr[r], indptr[r+1])
            indices  int32 (nnz,)         chunks (2**20,)  column of each entry, sorted per row
            data     float32 (nnz,)       chunks (2**20,)  value of each entry

Row chunk ``i`` (rows ``[i*c, (i+1)*c)``) reads its slice of ``indptr`` and then only the entries
``[indptr[i*c], indptr[(i+1)*c])``: one CSR matrix per row chunk, never a dense copy.
:func:`open_dataset` returns ``X`` as a Dask array of scipy.sparse CSR chunks. Dense stores are
written exactly as in version 1 (only the ``version`` attribute differs); readers accept 1 and 2.

Stores are written to a temporary sibling directory (``<path>.tmp-<random>``) and renamed
into place once complete, so a reader never sees a half-written dataset and a failed write
leaves nothing behind. An existing dataset is replaced only when asked (``overwrite=True``),
and never when it is one of the inputs being written.

Columns converted from text hold category codes (0, 1, 2, ... as float32; NaN where missing):
the optional attributes ``categorical_features`` (their positions) and ``pandas_categorical``
(for each, its category values in code order, LightGBM's name and meaning) are the map that
training keeps in the model and prediction reads text through. Stores without them (all
earlier ones) have numeric columns only.

Only local (or shared-filesystem) paths are supported.
"""
from __future__ import annotations

import dataclasses
import os
import secrets
import shutil
import warnings
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import dask
import dask.array as da
import numpy as np
import scipy.sparse as sp
import zarr

from oocgbdt._dtypes import X_DTYPE, Y_DTYPE
from oocgbdt.core.categories import categorical_columns, encode_frame, frame_categories, is_frame
from oocgbdt.params import DEFAULT_CHUNK_ROWS

__all__ = [
    "DATASET_FORMAT",
    "DATASET_VERSION",
    "DEFAULT_CHUNK_ROWS",
    "Dataset",
    "DatasetWriter",
    "open_dataset",
    "write_dataset",
    "default_feature_names",
    "dataset_categories",
]

#: Value of the ``format`` group attribute that marks an oocgbdt dataset.
DATASET_FORMAT = "oocgbdt-dataset"
#: Layout version written by this module (readers accept versions <= this one).
#: Version 2: ``X`` may be a sparse CSR group (see the module docstring).
DATASET_VERSION = 2
#: Entries per Zarr chunk of a sparse ``X``'s ``indices`` and ``data`` (4 MiB each).
SPARSE_ENTRY_CHUNK = 1 << 20
#: Default number of rows per stored chunk. At 100 float32 features this is 40 MB raw per chunk.

_WEIGHT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def default_feature_names(n_features: int) -> list[str]:
    """Names given to features that have none: ``Column_0 ... Column_{n-1}`` (LightGBM's).

    Parameters
    ----------
    n_features : int
        Number of features (columns of ``X``).

    Returns
    -------
    list of str
    """
    return [f"Column_{i}" for i in range(n_features)]


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class Dataset:
    """An opened oocgbdt dataset: lazy Dask arrays over a Zarr store.

    Nothing is read from disk until the arrays are computed.

    Attributes
    ----------
    X : dask.array.Array of shape (n_rows, n_features), dtype float32
        Features, chunked by rows (the store's ``chunk_rows``), all columns in one chunk,
        known chunk sizes. For a sparse store, the chunks are scipy.sparse CSR matrices.
    y : dask.array.Array of shape (n_rows,), dtype float64, or None
        Labels, chunked like the rows of ``X``. None if the store has no labels.
    weight : dask.array.Array of shape (n_rows,), dtype float32 or float64, or None
        Sample weights, chunked like the rows of ``X``. None if the store has no weights.
    feature_names : tuple of str, length n_features
    label : str or None
        Name of the label column in the source (``"label"`` when the source did not name it).
    path : pathlib.Path
        Absolute path of the store directory.
    source : str or None
        Path of the file the store was converted from, if any.
    categorical_features : tuple of int
        Positions of the columns holding category codes (empty when none).
    pandas_categorical : list of list or None
        For each of ``categorical_features``, its category values in code order.
    """

    X: da.Array
    y: Optional[da.Array]
    weight: Optional[da.Array]
    feature_names: tuple
    label: Optional[str]
    path: Path
    source: Optional[str] = None
    categorical_features: tuple = ()
    pandas_categorical: Optional[list] = None

    @property
    def n_rows(self) -> int:
        """Number of rows (samples)."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of features (columns of ``X``)."""
        return int(self.X.shape[1])

    @property
    def sparse(self) -> bool:
        """True when ``X`` is stored sparse (its chunks are scipy.sparse CSR matrices)."""
        return sp.issparse(self.X._meta)

    @property
    def chunk_rows(self) -> int:
        """Rows per stored chunk (the last chunk may be shorter)."""
        return int(self.X.chunks[0][0]) if self.X.chunks[0] else 0

    def __repr__(self) -> str:
        parts = [
            f"path={str(self.path)!r}",
            f"n_rows={self.n_rows}",
            f"n_features={self.n_features}",
            f"chunk_rows={self.chunk_rows}",
            f"label={self.label!r}",
            f"weight={'yes' if self.weight is not None else 'no'}",
        ] + (["sparse=True"] if self.sparse else [])
        return f"Dataset({', '.join(parts)})"


def _as_path(path: Any) -> Path:
    if isinstance(path, str) and "://" in path:
        raise ValueError(
            f"Only local or shared-filesystem paths are supported for oocgbdt datasets, got the URL {path!r}."
        )
    return Path(os.path.expanduser(os.fspath(path))).absolute()


def _expected() -> str:
    return (
        f"expected a directory holding a Zarr group with attribute format={DATASET_FORMAT!r} "
        "and arrays 'X' (float32, 2-D) and optionally 'y' and 'weight' (1-D); "
        "create one with oocgbdt.io.convert.convert (CLI: `oocgbdt convert`) or "
        "oocgbdt.io.dataset.write_dataset"
    )


def _is_dataset_dir(path: Path) -> bool:
    """True if ``path`` holds an oocgbdt dataset (cheap check of the group attributes)."""
    if not path.is_dir():
        return False
    try:
        group = zarr.open_group(str(path), mode="r")
        return group.attrs.get("format") == DATASET_FORMAT
    except Exception:
        return False


def open_dataset(path: str | os.PathLike) -> Dataset:
    """Open an oocgbdt dataset store lazily.

    Parameters
    ----------
    path : str or path-like
        Directory of the Zarr group (see the module docstring for the layout).

    Returns
    -------
    Dataset
        ``X`` float32 (n_rows, n_features), ``y`` float64 (n_rows,) or None, ``weight``
        (n_rows,) or None, as Dask arrays chunked by rows with known chunk sizes.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If ``path`` is not a Zarr group, is not an oocgbdt dataset (wrong or missing ``format``
        attribute, newer ``version``), lacks ``X``, or has arrays of the wrong rank or of
        mismatched lengths, or feature names that do not match the number of columns.
    """
    p = _as_path(path)
    if not p.exists():
        raise FileNotFoundError(f"No oocgbdt dataset at '{p}': the path does not exist ({_expected()}).")
    if not p.is_dir():
        raise ValueError(f"'{p}' is not an oocgbdt dataset: {_expected()}; found a regular file.")
    try:
        group = zarr.open_group(str(p), mode="r")
    except Exception as exc:  # zarr raises several types here (FileNotFoundError, GroupNotFoundError, ...)
        raise ValueError(
            f"'{p}' is not an oocgbdt dataset: {_expected()}; found a directory that is not a Zarr group "
            f"({type(exc).__name__}: {exc})."
        ) from exc
    attrs = dict(group.attrs)
    fmt = attrs.get("format")
    if fmt != DATASET_FORMAT:
        members = sorted(group.keys())
        raise ValueError(
            f"'{p}' is not an oocgbdt dataset: {_expected()}; found a Zarr group with format={fmt!r} "
            f"and members {members}."
        )
    version = attrs.get("version")
    if not isinstance(version, int) or version < 1 or version > DATASET_VERSION:
        raise ValueError(
            f"'{p}' has oocgbdt dataset layout version {version!r}; this oocgbdt reads versions 1.."
            f"{DATASET_VERSION}. Upgrade oocgbdt or re-convert the data."
        )
    members = set(group.keys())
    if "X" not in members:
        raise ValueError(f"'{p}' is an oocgbdt dataset without its 'X' array (found members {sorted(members)}).")
    zX = group["X"]
    if isinstance(zX, zarr.Group) and zX.attrs.get("layout") == "csr":
        X = _open_csr(zX, p)
        n_rows, n_features = X.shape
        row_chunk = int(zX.attrs["chunk_rows"])
    elif not isinstance(zX, zarr.Array) or zX.ndim != 2:
        raise ValueError(
            f"'{p}': expected 'X' to be a 2-D array of shape (n_rows, n_features) or a sparse "
            f"CSR group; found {'a group' if not isinstance(zX, zarr.Array) else f'shape {zX.shape}'}."
        )
    else:
        X = None
        n_rows, n_features = (int(s) for s in zX.shape)
        row_chunk = int(zX.chunks[0])

    def _open_1d(name: str) -> Optional[da.Array]:
        if name not in members:
            return None
        arr = group[name]
        if not isinstance(arr, zarr.Array) or arr.ndim != 1:
            raise ValueError(f"'{p}': expected '{name}' to be a 1-D array of shape ({n_rows},); found "
                             f"{'a group' if not isinstance(arr, zarr.Array) else f'shape {arr.shape}'}.")
        if int(arr.shape[0]) != n_rows:
            raise ValueError(
                f"'{p}': '{name}' has {arr.shape[0]} rows but 'X' has {n_rows} rows; "
                "the store is inconsistent (re-create it)."
            )
        d = da.from_zarr(arr)
        if d.chunks[0] != _row_chunks(n_rows, row_chunk):
            d = d.rechunk({0: _row_chunks(n_rows, row_chunk)})
        return d

    if X is None:
        X = da.from_zarr(zX)
        if len(X.chunks[1]) > 1:  # written by another tool with column chunks: keep columns together
            X = X.rechunk({1: -1})
    y = _open_1d("y")
    weight = _open_1d("weight")

    names = attrs.get("feature_names")
    if names is None:
        names = default_feature_names(n_features)
    if len(names) != n_features:
        raise ValueError(
            f"'{p}': attribute feature_names has {len(names)} names but 'X' has {n_features} columns."
        )
    label = attrs.get("label")
    coded = tuple(int(i) for i in attrs.get("categorical_features") or ())
    categories = attrs.get("pandas_categorical")
    if len(coded) != len(categories or []) or any(not 0 <= i < n_features for i in coded):
        raise ValueError(
            f"'{p}': attributes categorical_features ({list(coded)}) and pandas_categorical "
            f"({len(categories or [])} list(s)) do not match {n_features} columns; re-create the "
            "store.")
    return Dataset(
        X=X,
        y=y,
        weight=weight,
        feature_names=tuple(str(n) for n in names),
        label=None if label is None else str(label),
        path=p,
        source=attrs.get("source"),
        categorical_features=coded,
        pandas_categorical=[list(c) for c in categories] if coded else None,
    )


def dataset_categories(path: str | os.PathLike) -> Optional[tuple]:
    """``(feature_names, categorical_features, pandas_categorical)`` of the oocgbdt dataset at
    ``path``; None when ``path`` is not a dataset or has no coded columns (attributes only)."""
    p = _as_path(path)
    if not _is_dataset_dir(p):
        return None
    ds = open_dataset(p)
    if not ds.categorical_features:
        return None
    return ds.feature_names, ds.categorical_features, ds.pandas_categorical


def _read_csr_rows(indptr, indices, data, start: int, stop: int, n_features: int) -> sp.csr_matrix:
    """Rows ``[start, stop)`` of a sparse ``X`` group as one CSR matrix (a task body)."""
    ptr = np.asarray(indptr[start:stop + 1], dtype=np.int64)
    lo, hi = int(ptr[0]), int(ptr[-1])
    return sp.csr_matrix((np.asarray(data[lo:hi], dtype=X_DTYPE),
                          np.asarray(indices[lo:hi], dtype=np.int32), ptr - lo),
                         shape=(stop - start, n_features))


def _open_csr(g: zarr.Group, path: Path) -> da.Array:
    """A sparse ``X`` group as a Dask array of CSR row chunks (lazy: nothing is read here)."""
    try:
        n_rows, n_features = (int(v) for v in g.attrs["shape"])
        chunk_rows = int(g.attrs["chunk_rows"])
        indptr, indices, data = g["indptr"], g["indices"], g["data"]
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"'{path}': the sparse 'X' group is incomplete ({exc!r}); expected attrs "
                         f"shape and chunk_rows and arrays indptr, indices, data.") from None
    if int(indptr.shape[0]) != n_rows + 1 or int(indices.shape[0]) != int(data.shape[0]):
        raise ValueError(f"'{path}': the sparse 'X' group is inconsistent (indptr has "
                         f"{indptr.shape[0]} entries for {n_rows} rows; {indices.shape[0]} indices, "
                         f"{data.shape[0]} values).")
    meta = sp.csr_matrix((0, n_features), dtype=X_DTYPE)
    token = da.core.tokenize(str(path), n_rows, n_features, chunk_rows, int(data.shape[0]))
    blocks = []
    for i, start in enumerate(range(0, n_rows, chunk_rows)):
        stop = min(start + chunk_rows, n_rows)
        task = dask.delayed(_read_csr_rows, pure=True)(indptr, indices, data, start, stop, n_features,
                                                       dask_key_name=f"oocgbdt-csr-{token}-{i}")
        blocks.append(da.from_delayed(task, shape=(stop - start, n_features), dtype=X_DTYPE, meta=meta))
    if not blocks:
        return da.from_array(meta, chunks=((0,), (n_features,)), asarray=False)
    return blocks[0] if len(blocks) == 1 else da.concatenate(blocks, axis=0)


def _row_chunks(n_rows: int, chunk_rows: int) -> tuple:
    if n_rows == 0:
        return (0,)
    full, rest = divmod(n_rows, chunk_rows)
    return (chunk_rows,) * full + ((rest,) if rest else ())


# --------------------------------------------------------------------------------------------
# Safe destination handling (shared with convert.py)
# --------------------------------------------------------------------------------------------


def _is_within(child: Path, parent: Path) -> bool:
    try:
        child.resolve().relative_to(parent.resolve())
        return True
    except ValueError:
        return False


def _check_destination(dest: Path, overwrite: bool, inputs: Iterable[Path] = ()) -> None:
    """Fail fast if writing ``dest`` would clobber something it should not.

    Raises
    ------
    FileExistsError
        ``dest`` exists and ``overwrite`` is False.
    ValueError
        ``dest`` is, contains or lies inside one of ``inputs``; or ``overwrite`` is True but
        ``dest`` is neither an oocgbdt dataset nor an empty directory (it is never deleted then).
    """
    for src in inputs:
        if _is_within(dest, src) or _is_within(src, dest):
            raise ValueError(
                f"Refusing to write the dataset to '{dest}': it would overlap the input '{src}'. "
                "Input stores are never written to; choose a destination outside it."
            )
    if dest.exists() or dest.is_symlink():
        if not overwrite:
            raise FileExistsError(
                f"'{dest}' already exists; pass overwrite=True (CLI: --overwrite) to replace it, "
                "or choose another destination."
            )
        if not (_is_dataset_dir(dest) or (dest.is_dir() and not any(dest.iterdir()))):
            raise ValueError(
                f"Refusing to overwrite '{dest}': overwrite=True only replaces an existing oocgbdt dataset "
                "or an empty directory, and this path is neither. Remove it yourself or choose another "
                "destination."
            )
    if not dest.parent.is_dir():
        raise FileNotFoundError(f"Cannot write '{dest}': its parent directory '{dest.parent}' does not exist.")


def _staging_path(dest: Path) -> Path:
    return dest.with_name(f"{dest.name}.tmp-{secrets.token_hex(4)}")


def _commit_staged(tmp: Path, dest: Path, overwrite: bool) -> None:
    """Move the finished store ``tmp`` to ``dest`` (replacing an existing dataset if allowed)."""
    if dest.exists():
        if not overwrite:  # something appeared meanwhile
            raise FileExistsError(f"'{dest}' appeared while writing; pass overwrite=True to replace it.")
        old = dest.with_name(f"{dest.name}.old-{secrets.token_hex(4)}")
        os.rename(dest, old)
        os.rename(tmp, dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, dest)


def _zarr_input_paths(arrays: Iterable[Any]) -> list[Path]:
    """Local directories of the Zarr stores that the given (dask or zarr) arrays read from."""
    paths: list[Path] = []

    def _add(z: Any) -> None:
        root = getattr(getattr(z, "store", None), "root", None)
        if root is not None:
            paths.append(Path(root).absolute())

    for a in arrays:
        if isinstance(a, zarr.Array):
            _add(a)
        elif isinstance(a, da.Array):
            for value in dict(a.__dask_graph__()).values():
                if isinstance(value, zarr.Array):
                    _add(value)
                for arg in getattr(value, "args", None) or ():  # tasks reading a sparse store
                    if isinstance(arg, zarr.Array):
                        _add(arg)
    return paths


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def _write_attrs(group: zarr.Group, feature_names: Sequence[str], label: Optional[str], source: Optional[str],
                 categories: Optional[dict] = None) -> None:
    attrs = {
        "format": DATASET_FORMAT,
        "version": DATASET_VERSION,
        "feature_names": [str(n) for n in feature_names],
        "label": label,
        "source": source,
    }
    if categories:
        coded = sorted(int(i) for i in categories)
        attrs["categorical_features"] = coded
        attrs["pandas_categorical"] = [list(categories[i]) for i in coded]
    group.attrs.update(attrs)


def _check_chunk_rows(chunk_rows: Any) -> int:
    if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, (int, np.integer)) or chunk_rows < 1:
        raise ValueError(f"chunk_rows must be a positive integer (rows per chunk), got {chunk_rows!r}.")
    return int(chunk_rows)


#: Chunks of X larger than this (bytes, uncompressed) trigger a warning: every task of the Dask
#: layer holds at least one chunk in memory.
_LARGE_CHUNK_BYTES = 1 << 30


def _warn_large_chunks(chunk_rows: int, n_features: int, n_rows: Optional[int] = None) -> None:
    rows = chunk_rows if n_rows is None else min(chunk_rows, n_rows)
    nbytes = rows * n_features * np.dtype(X_DTYPE).itemsize
    if nbytes > _LARGE_CHUNK_BYTES:
        suggested = max(1, (256 << 20) // max(n_features * np.dtype(X_DTYPE).itemsize, 1))
        warnings.warn(
            f"chunk_rows={chunk_rows} with {n_features} features makes chunks of X of {nbytes / 2**30:.1f} GiB "
            f"(uncompressed float32); every task holds at least one chunk in memory. Consider "
            f"chunk_rows={suggested} (about 256 MiB per chunk).",
            UserWarning,
            stacklevel=3,
        )


def _check_feature_names(feature_names: Optional[Sequence[str]], n_features: int) -> list[str]:
    if feature_names is None:
        return default_feature_names(n_features)
    names = [str(n) for n in feature_names]
    if len(names) != n_features:
        raise ValueError(f"feature_names has {len(names)} names but X has {n_features} columns.")
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"feature_names must be unique; duplicated: {dup}.")
    return names


class DatasetWriter:
    """Stream row blocks into a new oocgbdt dataset store.

    Rows are buffered until a full chunk (``chunk_rows`` rows) is available, so every write is
    one whole, aligned Zarr chunk; memory is bounded by about two chunks plus one appended
    block. The store is built in ``<path>.tmp-<random>`` and moved to ``path`` by
    :meth:`commit`; :meth:`abort` (or leaving a ``with`` block by an exception) removes it.

    Parameters
    ----------
    path : str or path-like
        Destination directory.
    n_features : int
        Number of columns of ``X``.
    feature_names : sequence of str, optional
        Defaults to ``Column_0 ... Column_{n_features-1}``.
    label : str, optional
        Name of the label column (stored as an attribute).
    chunk_rows : int, default 65_536
        Rows per stored chunk.
    has_y : bool, default True
        Whether a ``y`` array (float64) is written; then every :meth:`append` needs ``y``.
    weight_dtype : numpy dtype (float32 or float64), optional
        Dtype of the ``weight`` array; None (default) writes no weights.
    source : str, optional
        Original path, stored as an attribute.
    overwrite : bool, default False
        Replace an existing dataset at ``path``.
    inputs : iterable of path-like, optional
        Paths the data is read from; ``path`` may not overlap any of them.
    sparse : bool, default False
        Store ``X`` as CSR (layout version 2, see the module docstring); :meth:`append` then
        takes scipy.sparse blocks (dense blocks are converted).
    categories : dict of int to list, optional
        The columns holding category codes: position -> category values in code order
        (stored as the attributes ``categorical_features`` and ``pandas_categorical``).

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is False.
    ValueError
        Bad ``chunk_rows``/``feature_names``/``weight_dtype``, or ``path`` overlaps an input,
        or ``overwrite=True`` would delete something that is not an oocgbdt dataset.

    Examples
    --------
    >>> with DatasetWriter(path, n_features=3) as w:      # doctest: +SKIP
    ...     for X_block, y_block in blocks:
    ...         w.append(X_block, y_block)
    >>> ds = open_dataset(path)                          # doctest: +SKIP
    """

    def __init__(
        self,
        path: str | os.PathLike,
        n_features: int,
        *,
        feature_names: Optional[Sequence[str]] = None,
        label: Optional[str] = None,
        chunk_rows: int = DEFAULT_CHUNK_ROWS,
        has_y: bool = True,
        weight_dtype: Any = None,
        source: Optional[str] = None,
        overwrite: bool = False,
        inputs: Iterable[str | os.PathLike] = (),
        sparse: bool = False,
        categories: Optional[dict] = None,
    ):
        self.path = _as_path(path)
        self.categories = dict(categories or {})
        self.sparse = bool(sparse)
        self.n_features = int(n_features)
        self.chunk_rows = _check_chunk_rows(chunk_rows)
        self.feature_names = _check_feature_names(feature_names, self.n_features)
        self.label = label
        self.source = source
        self.overwrite = bool(overwrite)
        self.has_y = bool(has_y)
        self.weight_dtype = None if weight_dtype is None else np.dtype(weight_dtype)
        if self.weight_dtype is not None and self.weight_dtype not in _WEIGHT_DTYPES:
            raise ValueError(f"weight_dtype must be float32 or float64, got {self.weight_dtype}.")
        _check_destination(self.path, self.overwrite, [_as_path(i) for i in inputs])
        if not self.sparse:
            _warn_large_chunks(self.chunk_rows, self.n_features)

        self.tmp_path = _staging_path(self.path)
        self.n_rows = 0  # rows written to disk so far
        self._buffer: list[tuple] = []
        self._buffered = 0
        self._done = False
        try:
            self._group = zarr.open_group(str(self.tmp_path), mode="w-", zarr_format=3)
            c = self.chunk_rows
            if self.sparse:
                gX = self._group.create_group("X")
                gX.attrs.update({"layout": "csr", "shape": [0, self.n_features], "chunk_rows": c})
                self._X = gX
                self._indptr = gX.create_array("indptr", shape=(1,), chunks=(c,), dtype=np.int64)
                self._indptr[:] = 0
                self._indices = gX.create_array("indices", shape=(0,), chunks=(SPARSE_ENTRY_CHUNK,),
                                                dtype=np.int32)
                self._data = gX.create_array("data", shape=(0,), chunks=(SPARSE_ENTRY_CHUNK,),
                                             dtype=X_DTYPE)
                self._nnz = 0
            else:
                self._X = self._group.create_array(
                    "X", shape=(0, self.n_features), chunks=(c, max(self.n_features, 1)), dtype=X_DTYPE
                )
            self._y = self._group.create_array("y", shape=(0,), chunks=(c,), dtype=Y_DTYPE) if self.has_y else None
            self._w = (
                self._group.create_array("weight", shape=(0,), chunks=(c,), dtype=self.weight_dtype)
                if self.weight_dtype is not None
                else None
            )
        except BaseException:
            shutil.rmtree(self.tmp_path, ignore_errors=True)
            raise

    # -- context manager -----------------------------------------------------------------------
    def __enter__(self) -> "DatasetWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()

    # -- writing -------------------------------------------------------------------------------
    def append(self, X: Any, y: Any = None, weight: Any = None) -> None:
        """Append a block of rows.

        Parameters
        ----------
        X : array-like of shape (k, n_features)
            Cast to float32.
        y : array-like of shape (k,), optional
            Cast to float64. Required if the writer has ``y``, refused otherwise.
        weight : array-like of shape (k,), optional
            Cast to ``weight_dtype``. Required if the writer has weights, refused otherwise.

        Raises
        ------
        ValueError
            Wrong shapes, or ``y``/``weight`` given or missing against the writer's layout.
        RuntimeError
            The writer was already committed or aborted.
        """
        if self._done:
            raise RuntimeError(f"DatasetWriter for '{self.path}' is already closed.")
        if self.sparse:
            Xb = sp.csr_matrix(X, dtype=X_DTYPE)
        elif sp.issparse(X):
            Xb = np.asarray(X.toarray(), dtype=X_DTYPE)
        else:
            Xb = np.asarray(X, dtype=X_DTYPE)
        if Xb.ndim != 2 or Xb.shape[1] != self.n_features:
            raise ValueError(f"Expected an X block of shape (k, {self.n_features}); got shape {Xb.shape}.")
        k = Xb.shape[0]
        yb = self._check_1d("y", y, k, Y_DTYPE, self.has_y)
        wb = self._check_1d("weight", weight, k, self.weight_dtype, self.weight_dtype is not None)
        if k == 0:
            return
        self._buffer.append((Xb, yb, wb))
        self._buffered += k
        if self._buffered >= self.chunk_rows:
            self._flush(final=False)

    @staticmethod
    def _check_1d(name: str, v: Any, k: int, dtype: Any, expected: bool) -> Optional[np.ndarray]:
        if v is None:
            if expected:
                raise ValueError(f"This dataset has a '{name}' array: pass {name}= with every block.")
            return None
        if not expected:
            raise ValueError(f"This writer was created without '{name}'; got {name}= in append().")
        arr = np.asarray(v, dtype=dtype)
        if arr.shape != (k,):
            raise ValueError(f"Expected {name} of shape ({k},) to match the X block; got shape {arr.shape}.")
        return arr

    def _flush(self, final: bool) -> None:
        if not self._buffer:
            return
        if self.sparse:
            Xs = sp.vstack([b[0] for b in self._buffer], format="csr") if len(self._buffer) > 1 \
                else self._buffer[0][0]
        else:
            Xs = np.concatenate([b[0] for b in self._buffer]) if len(self._buffer) > 1 else self._buffer[0][0]
        ys = wb = None
        if self.has_y:
            ys = np.concatenate([b[1] for b in self._buffer])
        if self._w is not None:
            wb = np.concatenate([b[2] for b in self._buffer])
        total = Xs.shape[0]
        n_write = total if final else (total // self.chunk_rows) * self.chunk_rows
        if n_write:
            start, stop = self.n_rows, self.n_rows + n_write
            if self.sparse:
                self._write_csr(Xs[:n_write], start, stop)
            else:
                self._X.resize((stop, self.n_features))
                self._X[start:stop] = Xs[:n_write]
            if ys is not None:
                self._y.resize((stop,))
                self._y[start:stop] = ys[:n_write]
            if wb is not None:
                self._w.resize((stop,))
                self._w[start:stop] = wb[:n_write]
            self.n_rows = stop
        rest = total - n_write
        if rest:
            self._buffer = [(
                Xs[n_write:].copy(),
                None if ys is None else ys[n_write:].copy(),
                None if wb is None else wb[n_write:].copy(),
            )]
        else:
            self._buffer = []
        self._buffered = rest

    def _write_csr(self, block, start: int, stop: int) -> None:
        block = sp.csr_matrix(block)
        block.sum_duplicates()  # canonical: sorted indices, no duplicates
        lo, hi = self._nnz, self._nnz + int(block.nnz)
        self._indptr.resize((stop + 1,))
        self._indptr[start + 1:stop + 1] = lo + block.indptr[1:].astype(np.int64)
        if hi > lo:
            self._indices.resize((hi,))
            self._indices[lo:hi] = block.indices.astype(np.int32)
            self._data.resize((hi,))
            self._data[lo:hi] = block.data.astype(X_DTYPE)
        self._nnz = hi

    def commit(self) -> Path:
        """Write the last partial chunk and the attributes, and move the store into place.

        Returns
        -------
        pathlib.Path
            The final dataset path.
        """
        if self._done:
            raise RuntimeError(f"DatasetWriter for '{self.path}' is already closed.")
        try:
            self._flush(final=True)
            if self.sparse:
                self._X.attrs["shape"] = [self.n_rows, self.n_features]
            _write_attrs(self._group, self.feature_names, self.label, self.source, self.categories)
            _commit_staged(self.tmp_path, self.path, self.overwrite)
        except BaseException:
            self.abort()
            raise
        self._done = True
        return self.path

    def abort(self) -> None:
        """Discard everything written so far (removes the temporary directory)."""
        self._done = True
        self._buffer = []
        shutil.rmtree(self.tmp_path, ignore_errors=True)


def _to_array(v: Any, name: str) -> Any:
    """numpy/dask/zarr/pandas -> numpy ndarray or dask array (no copy for numpy)."""
    if v is None or isinstance(v, da.Array):
        return v
    if isinstance(v, zarr.Array):
        return da.from_zarr(v)
    if hasattr(v, "to_numpy"):  # pandas
        v = v.to_numpy()
    arr = np.asarray(v)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise ValueError(f"{name} must be numeric; got dtype {arr.dtype}.")
    return arr


def write_dataset(
    path: str | os.PathLike,
    X: Any,
    y: Any = None,
    weight: Any = None,
    *,
    feature_names: Optional[Sequence[str]] = None,
    label: Optional[str] = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    source: Optional[str] = None,
    overwrite: bool = False,
    sparse: Optional[bool] = None,
) -> Dataset:
    """Write arrays as an oocgbdt dataset store.

    Numpy inputs are written chunk by chunk with Zarr. Dask inputs are rechunked to
    ``chunk_rows`` rows and streamed block by block with :func:`dask.array.store` (one
    compute, on the active scheduler; ``X``, ``y`` and ``weight`` blocks are computed together
    so a shared upstream graph runs once), so they never need to fit in memory.

    Parameters
    ----------
    path : str or path-like
        Destination directory (written via a temporary sibling, then renamed).
    X : numpy.ndarray, dask.array.Array, zarr.Array or pandas.DataFrame of shape (n_rows, n_features)
        Features; stored as float32. A DataFrame also supplies ``feature_names``, and its
        ``category``, string and object columns are stored as category codes by value, their
        map in the attributes (:mod:`oocgbdt.core.categories`).
    y : array-like of shape (n_rows,), optional
        Labels; stored as float64.
    weight : array-like of shape (n_rows,), optional
        Sample weights; float32 and float64 are kept, other dtypes stored as float64.
    feature_names : sequence of str, optional
        Defaults to the DataFrame's columns or ``Column_0 ... Column_{n_features-1}``.
    label : str, optional
        Name of the label, stored as an attribute (default ``"label"`` when ``y`` is given).
    chunk_rows : int, default 65_536
        Rows per stored chunk.
    source : str, optional
        Original data path, stored as an attribute.
    overwrite : bool, default False
        Replace an existing oocgbdt dataset at ``path``.
    sparse : bool, optional
        Store ``X`` as CSR (layout version 2). Default: when ``X`` is a scipy.sparse matrix or
        a Dask array of scipy.sparse chunks. Sparse ``X`` is written row chunk by row chunk
        (a Dask ``X`` one computed block at a time), never densified.

    Returns
    -------
    Dataset
        The written store, opened lazily.

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is False.
    ValueError
        Non-numeric or wrongly shaped inputs, mismatched lengths, unknown dask chunk sizes,
        ``path`` overlapping a Zarr store that the inputs read from, or ``overwrite=True`` on a
        path that is not an oocgbdt dataset.
    """
    dest = _as_path(path)
    chunk_rows = _check_chunk_rows(chunk_rows)
    x_sparse = sp.issparse(X) or (isinstance(X, da.Array) and sp.issparse(X._meta))
    if sparse is None:
        sparse = x_sparse
    if sparse or x_sparse:
        return _write_sparse_dataset(dest, X, y, weight, feature_names=feature_names, label=label,
                                     chunk_rows=chunk_rows, source=source, overwrite=overwrite,
                                     sparse=bool(sparse))
    if feature_names is None and hasattr(X, "columns"):
        feature_names = [str(c) for c in X.columns]
    categories = None
    if is_frame(X) and categorical_columns(X.dtypes):
        # category, string and object columns as codes by value; the map goes in the attributes
        coded = categorical_columns(X.dtypes)
        maps = frame_categories(X, coded)
        categories = dict(zip(coded, maps))
        X = encode_frame(X, coded, maps)
    X = _to_array(X, "X")
    y = _to_array(y, "y")
    weight = _to_array(weight, "weight")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D of shape (n_rows, n_features); got shape {X.shape}.")
    n_rows, n_features = X.shape
    for name, v in (("y", y), ("weight", weight)):
        if v is None:
            continue
        if v.ndim != 1:
            raise ValueError(f"{name} must be 1-D of shape (n_rows,); got shape {v.shape}.")
    for name, v in (("X", X), ("y", y), ("weight", weight)):
        if isinstance(v, da.Array) and any(np.isnan(c) for dim in v.chunks for c in dim):
            raise ValueError(
                f"{name} is a dask array with unknown chunk sizes; call {name}.compute_chunk_sizes() "
                "(or build it with known sizes) before writing."
            )
    for name, v in (("y", y), ("weight", weight)):
        if v is not None and v.shape[0] != n_rows:
            raise ValueError(f"{name} has {v.shape[0]} rows but X has {n_rows} rows.")
    names = _check_feature_names(feature_names, int(n_features))
    if y is not None and label is None:
        label = "label"
    w_dtype = None
    if weight is not None:
        w_dtype = weight.dtype if weight.dtype in _WEIGHT_DTYPES else np.dtype(np.float64)

    inputs = _zarr_input_paths([X, y, weight])
    _warn_large_chunks(chunk_rows, int(n_features), int(n_rows))
    _check_destination(dest, overwrite, inputs)
    tmp = _staging_path(dest)
    try:
        group = zarr.open_group(str(tmp), mode="w-", zarr_format=3)
        zX = group.create_array(
            "X", shape=(n_rows, n_features), chunks=(chunk_rows, max(int(n_features), 1)), dtype=X_DTYPE
        )
        targets = [("X", X, zX, X_DTYPE)]
        if y is not None:
            targets.append(("y", y, group.create_array("y", shape=(n_rows,), chunks=(chunk_rows,), dtype=Y_DTYPE),
                            Y_DTYPE))
        if weight is not None:
            targets.append(("weight", weight,
                            group.create_array("weight", shape=(n_rows,), chunks=(chunk_rows,), dtype=w_dtype),
                            w_dtype))
        if any(isinstance(t[1], da.Array) for t in targets):
            sources = []
            for _, v, _, dtype in targets:
                d = v if isinstance(v, da.Array) else da.from_array(v, chunks=(chunk_rows,) + v.shape[1:])
                d = d.astype(dtype).rechunk((chunk_rows,) + ((-1,) if d.ndim == 2 else ()))
                sources.append(d)
            da.store(sources, [t[2] for t in targets], lock=False, compute=True)
        else:
            for start in range(0, n_rows, chunk_rows):
                stop = min(start + chunk_rows, n_rows)
                for _, v, z, dtype in targets:
                    z[start:stop] = np.asarray(v[start:stop], dtype=dtype)
        _write_attrs(group, names, label, source, categories)
        _commit_staged(tmp, dest, overwrite)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return open_dataset(dest)


def _write_sparse_dataset(dest, X, y, weight, *, feature_names, label, chunk_rows, source, overwrite,
                          sparse):
    """:func:`write_dataset` for sparse ``X`` (or ``sparse=True``): stream row blocks through a
    :class:`DatasetWriter`, computing one Dask block at a time."""
    if not (sp.issparse(X) or isinstance(X, da.Array)):
        X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D of shape (n_rows, n_features); got shape {X.shape}.")
    if isinstance(X, da.Array) and any(np.isnan(c) for dim in X.chunks for c in dim):
        raise ValueError("X is a dask array with unknown chunk sizes; call X.compute_chunk_sizes() first.")
    n_rows, n_features = (int(v) for v in X.shape)
    y = _to_array(y, "y")
    weight = _to_array(weight, "weight")
    for name, v in (("y", y), ("weight", weight)):
        if v is not None and (v.ndim != 1 or v.shape[0] != n_rows):
            raise ValueError(f"{name} must be 1-D with {n_rows} rows like X; got shape {v.shape}.")
    if y is not None and label is None:
        label = "label"
    w_dtype = None
    if weight is not None:
        w_dtype = weight.dtype if weight.dtype in _WEIGHT_DTYPES else np.dtype(np.float64)
    inputs = _zarr_input_paths([v for v in (X, y, weight) if isinstance(v, (da.Array, zarr.Array))])
    if isinstance(X, da.Array):
        bounds = np.concatenate(([0], np.cumsum(X.chunks[0]))).astype(np.int64)
        pieces = ((int(bounds[i]), int(bounds[i + 1]), X.blocks[i]) for i in range(X.numblocks[0]))
    else:
        pieces = ((a, min(a + chunk_rows, n_rows), X[a:min(a + chunk_rows, n_rows)])
                  for a in range(0, n_rows, chunk_rows))

    def _part(v, a, b):
        if v is None:
            return None
        part = v[a:b]
        return np.asarray(part.compute() if isinstance(part, da.Array) else part)

    with DatasetWriter(dest, n_features, feature_names=feature_names, label=label,
                       chunk_rows=chunk_rows, has_y=y is not None, weight_dtype=w_dtype,
                       source=source, overwrite=overwrite, inputs=inputs, sparse=sparse) as w:
        for a, b, block in pieces:
            if isinstance(block, da.Array):
                block = block.compute()
            w.append(block, _part(y, a, b), _part(weight, a, b))
    return open_dataset(dest)
