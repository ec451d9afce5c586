"""Prediction files: the feature inputs of ``oocgbdt predict`` and the predictions it writes.

Inputs are an oocgbdt dataset or Zarr array (:func:`open_features`, lazy), a CSV/TSV file of
features matched to a model's features by name or position (:func:`csv_features`, read in
blocks), or a Parquet file (or folder of them) matched by name (:func:`parquet_features`).
Text columns of a file are coded through the model's category map, by value. Outputs (:func:`write_predictions`) are

- a CSV/TSV file (``.csv``/``.tsv``): a header line of :func:`prediction_columns`, then one
  line per input row, values written with 17 significant digits (``%.17g``), so that reading
  them back gives exactly the predicted float64 values; or
- a Zarr array (any other name): float64 of shape ``(n_rows,)`` or ``(n_rows, n_outputs)``, with
  the attributes ``format`` (:data:`PREDICTIONS_FORMAT`), ``columns`` and any given by the caller.

Outputs are written atomically: to a temporary sibling (``.<name>.tmp-<random>`` for a file,
``<name>.tmp-<random>`` for a Zarr array) renamed into place when complete, so an interrupted
write leaves nothing behind. An existing output is replaced only with ``overwrite=True``, and
only when it holds predictions written here (or is an empty folder): :func:`check_output`.
"""
from __future__ import annotations

import dataclasses
import os
import re
import secrets
import shutil
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence

import dask
import dask.array as da
import numpy as np
import zarr

from oocgbdt.io.convert import (_parquet_columns, _read_parquet_chunks, read_csv_blocks,
                                resolve_column, sniff_csv)
from oocgbdt.io.dataset import (DATASET_FORMAT, DEFAULT_CHUNK_ROWS, _as_path, _commit_staged,
                                _staging_path, open_dataset)

__all__ = ["PREDICTIONS_FORMAT", "prediction_columns", "is_text_output", "is_prediction_csv",
           "is_prediction_store", "check_output", "write_predictions", "open_features",
           "CsvFeatures", "csv_features", "ParquetFeatures", "parquet_features"]

#: Value of the ``format`` attribute of a Zarr array of predictions.
PREDICTIONS_FORMAT = "oocgbdt-predictions"
_COLUMN = re.compile(r"(prediction|raw_score)(_class_\d+)?")


# --------------------------------------------------------------------------------------------
# Outputs
# --------------------------------------------------------------------------------------------


def prediction_columns(n_outputs: int, raw_score: bool = False) -> list[str]:
    """Names of the prediction columns: ``prediction`` or ``raw_score``, per class when several.

    Parameters
    ----------
    n_outputs : int
        Values per row (1, or the number of classes of a multiclass model).
    raw_score : bool, default False
        Name raw scores (``raw_score``) rather than predictions (``prediction``).

    Returns
    -------
    list of str
        ``[base]`` for one output, else ``[base_class_0, ..., base_class_{n-1}]``.
    """
    base = "raw_score" if raw_score else "prediction"
    if n_outputs == 1:
        return [base]
    return [f"{base}_class_{k}" for k in range(n_outputs)]


def is_text_output(path: str | os.PathLike) -> bool:
    """Whether predictions written to ``path`` are a text file (``.csv``/``.tsv``) rather than Zarr.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    bool
    """
    return Path(path).name.lower().endswith((".csv", ".tsv"))


def is_prediction_csv(path: str | os.PathLike) -> bool:
    """Whether the first line of ``path`` is a header of :func:`prediction_columns` (reads 4 KiB).

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    bool
        False for a file that cannot be read.
    """
    try:
        with open(path, "rb") as fh:
            first = fh.readline(4096).decode("ascii", errors="replace").strip()
    except OSError:
        return False
    return bool(first) and all(_COLUMN.fullmatch(f) for f in re.split(r"[,\t]", first))


def is_prediction_store(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a Zarr array of predictions written by :func:`write_predictions`.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    bool
        False for anything else (a file, a dataset, an unreadable folder).
    """
    if not Path(path).is_dir():
        return False
    try:
        return zarr.open(str(path), mode="r").attrs.get("format") == PREDICTIONS_FORMAT
    except Exception:
        return False


def check_output(path: str | os.PathLike, overwrite: bool = False) -> Path:
    """Check, before any work, that predictions may be written to ``path``.

    Parameters
    ----------
    path : str or path-like
        A ``.csv``/``.tsv`` file, or else a Zarr array folder (:func:`is_text_output`).
    overwrite : bool, default False
        Allow replacing an existing output; only one that holds predictions (a file starting
        with a header of prediction columns, a Zarr array with the predictions ``format``) or
        an empty folder is ever replaced.

    Returns
    -------
    pathlib.Path
        ``path``, absolute.

    Raises
    ------
    IsADirectoryError
        A text output names a folder.
    FileExistsError
        ``path`` exists and ``overwrite`` is False.
    ValueError
        ``overwrite`` is True but ``path`` holds something other than predictions.
    FileNotFoundError
        The folder that would hold ``path`` does not exist.
    """
    out = _as_path(path)
    if is_text_output(out):
        if out.is_dir():
            raise IsADirectoryError(f"output file '{out}' is a directory; give a file path.")
        if out.exists() and not overwrite:
            raise FileExistsError(f"output file '{out}' already exists; pass overwrite=True "
                                  f"(CLI: --overwrite) to replace it.")
        if not out.parent.is_dir():
            raise FileNotFoundError(f"cannot write output file '{out}': its folder "
                                    f"'{out.parent}' does not exist.")
        if out.exists() and not is_prediction_csv(out):
            raise ValueError(f"refusing to overwrite '{out}': overwrite=True (CLI: --overwrite) "
                             f"only replaces predictions (a header of prediction or raw_score "
                             f"columns), and this file is not. Remove it yourself or choose "
                             f"another output.")
        return out
    if out.exists() or out.is_symlink():
        if not overwrite:
            raise FileExistsError(f"output '{out}' already exists; pass overwrite=True (CLI: "
                                  f"--overwrite) to replace it.")
        if not (is_prediction_store(out) or (out.is_dir() and not any(out.iterdir()))):
            raise ValueError(f"refusing to overwrite '{out}': overwrite=True (CLI: --overwrite) "
                             f"only replaces predictions written by `oocgbdt predict` or an "
                             f"empty folder. Remove it yourself or choose another output.")
    if not out.parent.is_dir():
        raise FileNotFoundError(f"cannot write '{out}': its folder '{out.parent}' does not exist.")
    return out


def write_predictions(path: str | os.PathLike, predictions, columns: Sequence[str], *,
                      attrs: Optional[dict] = None, chunk_rows: int = DEFAULT_CHUNK_ROWS,
                      overwrite: bool = False) -> int:
    """Write predictions to a CSV/TSV file or a Zarr array, atomically.

    Parameters
    ----------
    path : str or path-like
        ``*.csv`` (comma-separated), ``*.tsv`` (tab-separated), else a Zarr array folder.
    predictions : dask.array.Array or iterable of ndarray
        Values of shape ``(n_rows,)`` or ``(n_rows, len(columns))``: a lazy Dask array (computed
        on the threaded scheduler, for text at most one block per core in memory at a time), or
        NumPy blocks of consecutive rows (a generator is consumed once, block by block).
    columns : sequence of str
        Column names (:func:`prediction_columns`): the text header, and the ``columns``
        attribute of a Zarr array; their number is the number of values per row.
    attrs : dict, optional
        Further attributes of a Zarr array (ignored for text); ``format`` and ``columns`` are
        always set here.
    chunk_rows : int, default 65,536
        Rows per Zarr chunk when ``predictions`` are NumPy blocks (a Dask array keeps its
        chunks).
    overwrite : bool, default False
        Replace an existing output of predictions (see :func:`check_output`).

    Returns
    -------
    int
        Rows written.

    Raises
    ------
    IsADirectoryError, FileExistsError, ValueError, FileNotFoundError
        As :func:`check_output`; nothing is written then.
    """
    out = check_output(path, overwrite)
    columns = [str(c) for c in columns]
    if is_text_output(out):
        return _write_text(out, predictions, columns)
    attrs = {**(attrs or {}), "format": PREDICTIONS_FORMAT, "columns": columns}
    return _write_zarr(out, predictions, len(columns), attrs, chunk_rows, overwrite)


def _computed_blocks(predictions: da.Array) -> Iterator[np.ndarray]:
    """NumPy blocks of a Dask array in row order, at most one per core computed at a time."""
    blocks = list(predictions.to_delayed().ravel())
    batch = max(1, os.cpu_count() or 1)
    for i in range(0, len(blocks), batch):
        yield from dask.compute(*blocks[i:i + batch], scheduler="threads")


def _write_text(out: Path, predictions, columns: list) -> int:
    sep = "\t" if out.name.lower().endswith(".tsv") else ","
    blocks = _computed_blocks(predictions) if isinstance(predictions, da.Array) else predictions
    tmp = out.with_name(f".{out.name}.tmp-{secrets.token_hex(4)}")
    n_rows = 0
    try:
        with open(tmp, "w", newline="") as fh:
            fh.write(sep.join(columns) + "\n")
            for block in blocks:
                block = np.asarray(block, dtype=np.float64)
                if block.ndim == 1:
                    block = block[:, None]
                # %.17g round-trips float64: reading the file back gives exactly these values.
                np.savetxt(fh, block, fmt="%.17g", delimiter=sep)
                n_rows += block.shape[0]
        os.replace(tmp, out)
    except BaseException:
        if tmp.exists():
            tmp.unlink()
        raise
    return n_rows


def _write_zarr(out: Path, predictions, n_outputs: int, attrs: dict, chunk_rows: int,
                overwrite: bool) -> int:
    tmp = _staging_path(out)
    try:
        if isinstance(predictions, da.Array):
            predictions.to_zarr(str(tmp), compute=False).compute(scheduler="threads")
            arr = zarr.open(str(tmp), mode="r+")
            n_rows = int(predictions.shape[0])
        else:
            shape = (0,) if n_outputs == 1 else (0, n_outputs)
            chunks = (chunk_rows,) if n_outputs == 1 else (chunk_rows, n_outputs)
            arr = zarr.create_array(store=str(tmp), shape=shape, chunks=chunks, dtype=np.float64)
            n_rows = 0
            for block in predictions:
                block = np.asarray(block, dtype=np.float64)
                arr.append(block, axis=0)
                n_rows += block.shape[0]
        arr.attrs.update(attrs)
        _commit_staged(tmp, out, overwrite)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return n_rows


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


def open_features(path: str | os.PathLike) -> tuple[Any, Optional[tuple]]:
    """The features of a Zarr store to predict, lazily, and their names when it has them.

    Parameters
    ----------
    path : str or path-like
        An oocgbdt dataset (its ``X``), or another Zarr array or group.

    Returns
    -------
    X : dask.array.Array or str
        A dataset's lazy ``X``; for any other Zarr store, its path as a str, which the
        prediction input normalization (:func:`oocgbdt.dask.inputs.as_dask_array`) opens as an
        array, or as the ``X`` array of a group.
    feature_names : tuple of str or None
        A dataset's feature names; None for another store.

    Raises
    ------
    ValueError
        ``path`` is not a Zarr store.
    """
    p = _as_path(path)
    try:
        node = zarr.open(str(p), mode="r")
    except Exception as exc:  # zarr raises several types for a folder that is not a store
        raise ValueError(f"'{p}' is neither a CSV file nor a Zarr store ({type(exc).__name__}: "
                         f"{exc}).") from None
    if isinstance(node, zarr.Group) and node.attrs.get("format") == DATASET_FORMAT:
        ds = open_dataset(p)
        return ds.X, ds.feature_names
    return str(p), None


@dataclasses.dataclass(frozen=True)
class CsvFeatures:
    """The columns of a CSV/TSV file that hold a model's features (see :func:`csv_features`).

    Attributes
    ----------
    path : pathlib.Path
    sep : str
        Field separator.
    header : {0, None}
        Header row (0) or none.
    columns : list
        The file's column labels holding the model's features, in the model's feature order.
    ignored : list
        Columns of the file that are neither features nor left out (columns matched by name
        only; empty otherwise).
    by_name : bool
        Whether the columns were matched by the header's names (else by position).
    """

    path: Path
    sep: str
    header: Optional[int]
    columns: list
    ignored: list
    by_name: bool

    def blocks(self, chunk_rows: int, categories: Optional[dict] = None) -> Iterator[np.ndarray]:
        """Feature blocks of at most ``chunk_rows`` rows, float64, NaN where a field is empty.

        Parameters
        ----------
        chunk_rows : int
            Rows per block (the last may be shorter).
        categories : dict of int to list, optional
            The model's category map: feature position -> category values in code order
            (``zip(booster.pandas_categorical_features, booster.pandas_categorical)``). Those
            columns are read as text and coded by value; values the model never saw are NaN.

        Yields
        ------
        ndarray of shape (n_rows, len(columns)), float64

        Raises
        ------
        ValueError
            A feature column holds text (the message names the columns), or a row has more
            fields than the header names.
        """
        categories = dict(categories or {})
        text = [self.columns[j] for j in sorted(categories)]
        for frame in read_csv_blocks(self.path, sep=self.sep, header=self.header,
                                     chunk_rows=chunk_rows, columns=self.columns, text=text):
            yield _coded_block(frame, self.columns, categories, self.path)


def _coded_block(frame, columns: list, categories: dict, path: Path) -> np.ndarray:
    """``frame[columns]`` as float64 (the model compares values with its thresholds in
    float64, as LightGBM does with the values it parses): the columns in ``categories``
    (position -> category values) coded by value, the others as numbers (NaN where empty)."""
    import pandas as pd

    from oocgbdt.core.categories import encode_column

    out = np.empty((len(frame), len(columns)), dtype=np.float64)
    for j, cats in categories.items():
        out[:, j] = encode_column(frame[columns[j]], cats)
    numeric = [j for j in range(len(columns)) if j not in categories]
    try:
        if numeric:
            out[:, numeric] = frame[[columns[j] for j in numeric]].to_numpy(
                dtype=np.float64, na_value=np.nan)
    except (ValueError, TypeError) as exc:
        bad = [str(columns[j]) for j in numeric
               if not (pd.api.types.is_numeric_dtype(frame[columns[j]])
                       or pd.api.types.is_bool_dtype(frame[columns[j]]))]
        raise ValueError(f"'{path}': column(s) {bad[:10]} hold text, but the model was trained "
                         f"on numbers in them; give them as numbers, as in the training data "
                         f"({exc}).") from None
    return out


@dataclasses.dataclass(frozen=True)
class ParquetFeatures:
    """The columns of a Parquet file (or folder of them) holding a model's features.

    Attributes
    ----------
    path : pathlib.Path
    columns : list of str
        The model's features, in its order.
    ignored : list of str
        Columns of the file that are neither features nor left out.
    """

    path: Path
    columns: list
    ignored: list

    def blocks(self, chunk_rows: int, categories: Optional[dict] = None) -> Iterator[np.ndarray]:
        """Feature blocks of at most ``chunk_rows`` rows, float64, as :meth:`CsvFeatures.blocks`
        (``categories``: the model's map, feature position -> category values)."""
        for frame in _read_parquet_chunks(self.path, columns=self.columns, chunk_rows=chunk_rows):
            yield _coded_block(frame, self.columns, dict(categories or {}), self.path)


def parquet_features(path: str | os.PathLike, feature_names: Sequence[str], *, label: Any = None,
                     drop: Iterable[Any] = ()) -> ParquetFeatures:
    """Match the columns of a Parquet file (or folder of ``*.parquet`` files) to a model's
    features, by name.

    Raises
    ------
    ValueError
        A ``label`` or ``drop`` column is not found, or a feature of the model is not a column
        of the file (the message names them).
    """
    p = _as_path(path)
    columns = _parquet_columns(p)
    left = set() if label is None else {resolve_column(label, columns, "label", p)}
    left |= {resolve_column(d, columns, "drop", p) for d in drop}
    names = [str(n) for n in feature_names]
    missing = [n for n in names if n not in columns or n in left]
    if missing:
        raise ValueError(f"'{p}' has no column(s) {missing[:20]}{'...' if len(missing) > 20 else ''}"
                         f" of the model's features; give every feature the model was trained "
                         f"on, by name.")
    ignored = [c for c in columns if c not in names and c not in left]
    return ParquetFeatures(p, names, ignored)


def csv_features(path: str | os.PathLike, feature_names: Sequence[str], *, label: Any = None,
                 drop: Iterable[Any] = (), sep: Optional[str] = None,
                 header: Any = "infer") -> CsvFeatures:
    """Match the columns of a CSV/TSV file to a model's features.

    The label and ``drop`` columns are left out. When the file has a header naming every
    feature of the model, the columns are matched by name (in any order; other columns are
    ignored); otherwise the remaining columns must be exactly as many as the features, matched
    by position. A header naming only some of the features is refused: matching the others by
    position would feed wrong columns silently.

    Parameters
    ----------
    path : str or path-like
        The CSV/TSV file, optionally compressed.
    feature_names : sequence of str
        The model's features, in order.
    label : str or int, optional
        Label column to leave out: its name, or its 0-based position.
    drop : iterable of str or int, default ()
        Other columns to leave out.
    sep : str, optional
        Field separator; sniffed when None (:func:`oocgbdt.io.convert.sniff_csv`).
    header : {"infer", 0, None}, default "infer"
        Header row, as :func:`oocgbdt.io.convert.sniff_csv` takes it.

    Returns
    -------
    CsvFeatures
        Read it with :meth:`CsvFeatures.blocks`.

    Raises
    ------
    ValueError
        The file is empty; a ``label`` or ``drop`` column is not found; the header names some
        features but not all; or the number of remaining columns differs from the number of
        features.
    """
    p = _as_path(path)
    layout = sniff_csv(p, sep=sep, header=header)
    columns = layout.columns
    dropped = [] if label is None else [resolve_column(label, columns, "label", p)]
    dropped += [resolve_column(d, columns, "drop", p) for d in drop]
    remaining = [c for c in columns if c not in dropped]
    names = [str(n) for n in feature_names]
    given = {str(c) for c in remaining}
    named = layout.header == 0
    by_name = named and all(n in given for n in names)
    if named and not by_name and given & set(names):
        missing = [n for n in names if n not in given]
        raise ValueError(f"'{p}' names some of the model's features in its header but not "
                         f"{missing[:20]}{'...' if len(missing) > 20 else ''}; give every "
                         f"feature the model was trained on.")
    if by_name:
        lookup = {str(c): c for c in remaining}
        use = [lookup[n] for n in names]
        ignored = [c for c in remaining if str(c) not in set(names)]
    elif len(remaining) == len(names):
        use, ignored = remaining, []
    else:
        hint = ("" if label is not None else
                " Pass label= (CLI: --label NAME) to leave out the label column.")
        raise ValueError(f"'{p}' has {len(remaining)} feature column(s) but the model expects "
                         f"{len(names)} ({names[:20]}{'...' if len(names) > 20 else ''}).{hint}")
    return CsvFeatures(p, layout.sep, layout.header, use, ignored, by_name)
