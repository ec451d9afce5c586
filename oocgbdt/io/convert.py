"""Convert CSV/TSV, Parquet and LibSVM files to the oocgbdt Zarr dataset layout, streaming.

The source is read ``chunk_rows`` rows at a time and each block is appended to a
:class:`~oocgbdt.io.dataset.DatasetWriter`, so memory is bounded by a few chunks
(about ``chunk_rows * n_columns * 8`` bytes per parsed block), never by the file size.

pandas is imported on first use (not with this module), so that importing :mod:`oocgbdt.io`
costs no more than its dataset module.

Readers
-------
- CSV/TSV (also ``.gz``, ``.bz2``, ``.xz``, ``.zip`` with one member): ``pandas.read_csv`` with
  ``chunksize=chunk_rows`` and ``index_col=False``; a row with more fields than the header is an
  error (pandas would otherwise drop the extra fields, or take the first field of every row as
  an index and shift every column). A row with FEWER fields is padded with NaN, as pandas does:
  it cannot be told apart from empty trailing fields without a second parse. Blank-separated
  files split on a single space unless the first line pads fields with runs of blanks
  (:func:`sniff_csv`). :func:`sniff_csv`, :func:`resolve_column` and :func:`read_csv_blocks`
  are public: ``oocgbdt predict`` reads CSV features with them.
- Parquet (a file, or a directory of ``*.parquet`` files read in sorted order):
  ``pyarrow.parquet.ParquetFile.iter_batches(batch_size=chunk_rows)``, reading only the needed
  columns.
- LibSVM/SVMlight: ``chunk_rows`` lines at a time parsed by
  ``sklearn.datasets.load_svmlight_file``. When ``n_features`` or the index base is not given, a
  first streaming pass finds the largest index and whether index 0 occurs. Sparse files (at
  most ``SPARSE_DENSITY`` of the cells stored) are written in the sparse layout (CSR per row
  chunk, :mod:`oocgbdt.io.dataset`) and never densified.
"""
from __future__ import annotations

import bz2
import gzip
import io
import itertools
import lzma
import os
import re
import warnings
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, NamedTuple, Optional, Sequence

import numpy as np

from oocgbdt._dtypes import X_DTYPE, Y_DTYPE
from oocgbdt.io.dataset import DEFAULT_CHUNK_ROWS, Dataset, DatasetWriter, _as_path, _check_chunk_rows, _check_destination
from oocgbdt.io.dataset import default_feature_names, open_dataset

if TYPE_CHECKING:  # pandas is imported where a reader needs it
    import pandas as pd

__all__ = ["convert", "FORMATS", "infer_format", "CsvLayout", "sniff_csv", "resolve_column",
           "read_csv_blocks"]

#: Formats understood by :func:`convert` (aliases map to these).
FORMATS = ("csv", "parquet", "libsvm")
_FORMAT_ALIASES = {
    "csv": "csv", "tsv": "csv", "txt": "csv",
    "parquet": "parquet", "pq": "parquet",
    "libsvm": "libsvm", "svm": "libsvm", "svmlight": "libsvm",
}
_EXT_FORMATS = {
    ".csv": "csv", ".tsv": "csv",
    ".parquet": "parquet", ".pq": "parquet",
    ".svm": "libsvm", ".libsvm": "libsvm", ".svmlight": "libsvm",
}
_COMPRESSION_EXTS = (".gz", ".bz2", ".xz", ".zip")
#: LibSVM files whose stored entries fill at most this share of the cells are stored sparse
#: (``sparse="auto"``): CSR then takes at most a fifth of the dense float32 bytes.
SPARSE_DENSITY = 0.1
#: Weights are stored as float32, as LightGBM reads them.
_WEIGHT_DTYPE = np.float32
_LIBSVM_TOKEN = re.compile(rb"^(qid:\S+|\d+:\S+)$")


# --------------------------------------------------------------------------------------------
# Format inference and file opening
# --------------------------------------------------------------------------------------------


def _split_ext(path: Path) -> tuple[str, Optional[str]]:
    """(inner extension, compression extension) of a file name, lower-case."""
    suffixes = [s.lower() for s in path.suffixes]
    comp = suffixes[-1] if suffixes and suffixes[-1] in _COMPRESSION_EXTS else None
    inner = suffixes[-2] if comp and len(suffixes) >= 2 else (None if comp else (suffixes[-1] if suffixes else ""))
    return inner or "", comp


@contextmanager
def _open_binary(path: Path) -> Iterator[io.BufferedIOBase]:
    """Open a possibly compressed file for streaming binary reads."""
    _, comp = _split_ext(path)
    if comp == ".gz":
        fh = gzip.open(path, "rb")
    elif comp == ".bz2":
        fh = bz2.open(path, "rb")
    elif comp == ".xz":
        fh = lzma.open(path, "rb")
    elif comp == ".zip":
        zf = zipfile.ZipFile(path)
        members = [m for m in zf.namelist() if not m.endswith("/")]
        if len(members) != 1:
            zf.close()
            raise ValueError(f"'{path}': expected a ZIP archive with exactly one file, found {members}.")
        inner = zf.open(members[0])
        try:
            yield inner
        finally:
            inner.close()
            zf.close()
        return
    else:
        fh = open(path, "rb")
    try:
        yield fh
    finally:
        fh.close()


def _first_data_line(path: Path, max_lines: int = 50, skip_comments: bool = True) -> bytes:
    """First line that is not blank (nor a ``#`` comment if ``skip_comments``); empty bytes if none."""
    with _open_binary(path) as fh:
        for line in itertools.islice(fh, max_lines):
            s = line.strip()
            if s and not (skip_comments and s.startswith(b"#")):
                return s
    return b""


def _looks_like_libsvm(line: bytes) -> bool:
    tokens = line.split(b"#", 1)[0].split()
    return len(tokens) >= 2 and all(_LIBSVM_TOKEN.match(t) for t in tokens[1:])


def _sniff_libsvm(path: Path, max_lines: int = 50) -> bool:
    """Whether the first data lines of ``path`` read as LibSVM: every line a label alone or
    ``label idx:val ...``, and at least one line with features (a row without features is
    valid LibSVM, so the first line alone cannot decide)."""
    seen_features = False
    with _open_binary(path) as fh:
        for line in itertools.islice(fh, max_lines):
            s = line.split(b"#", 1)[0].strip()
            if not s:
                continue
            tokens = s.split()
            if len(tokens) == 1:
                if not _is_number(tokens[0].decode("utf-8", errors="replace")):
                    return False
                continue
            if not _looks_like_libsvm(s):
                return False
            seen_features = True
    return seen_features


def infer_format(source: str | os.PathLike) -> str:
    """Infer the format of ``source`` from its extension (content sniffing for ``.txt``).

    ``.csv``/``.tsv`` -> ``"csv"``, ``.parquet``/``.pq`` (or a directory) -> ``"parquet"``,
    ``.svm``/``.libsvm``/``.svmlight`` -> ``"libsvm"``; a compression suffix (``.gz``, ``.bz2``,
    ``.xz``, ``.zip``) is looked through. For ``.txt`` and bare compressed files the first data
    lines (up to 50) decide between LibSVM (``label idx:val ...``, or a label alone) and CSV.

    Parameters
    ----------
    source : str or path-like

    Returns
    -------
    str
        One of :data:`FORMATS`.

    Raises
    ------
    ValueError
        The extension is not recognised (e.g. LightGBM's ``.train``/``.test``); the message says
        which ``fmt=`` to pass.
    """
    path = _as_path(source)
    if path.is_dir():
        return "parquet"
    inner, comp = _split_ext(path)
    if inner in _EXT_FORMATS:
        return _EXT_FORMATS[inner]
    if inner == ".txt" or (comp and not inner):
        return "libsvm" if _sniff_libsvm(path) else "csv"
    raise ValueError(
        f"Cannot infer the format of '{path}' from its extension {inner or '(none)'!r}; pass fmt= one of "
        f"{list(FORMATS)} (CLI: --format csv|tsv|parquet|libsvm). LightGBM's .train/.test files are "
        "TSV without header (fmt='csv', sep='\\t', header=None; CLI: --format tsv --no-header), or "
        "LibSVM (fmt='libsvm'; CLI: --format libsvm)."
    )


def _normalize_format(fmt: Optional[str], source: Path) -> str:
    if fmt is None:
        return infer_format(source)
    key = str(fmt).lower().lstrip(".")
    if key not in _FORMAT_ALIASES:
        raise ValueError(f"Unknown format {fmt!r}; expected one of {sorted(_FORMAT_ALIASES)}.")
    return _FORMAT_ALIASES[key]


# --------------------------------------------------------------------------------------------
# Tabular (CSV / Parquet): frames -> (X, y, weight) blocks
# --------------------------------------------------------------------------------------------


def _is_number(token: str) -> bool:
    token = token.strip().strip('"').strip("'")
    if token == "":
        return True  # an empty field parses as NaN
    try:
        float(token)
        return True
    except ValueError:
        return False


def _sniff_sep(line: str, inner_ext: str) -> str:
    """The field separator, from the first non-blank line (stripped) of a CSV/TSV file.

    Blank-separated files: a single space when the line has no run of blanks (what
    ``DataFrame.to_csv(sep=" ")`` writes: an empty field is then two spaces, which ``\\s+``
    would merge, shifting every later field of the row one column left), else any run of
    whitespace (aligned columns padded with blanks).
    """
    preferred = {".tsv": "\t", ".csv": ","}.get(inner_ext)
    candidates = ([preferred] if preferred else []) + ["\t", ",", ";", "|"]
    for c in candidates:
        if c in line:
            return c
    if preferred:
        return preferred
    return " " if " " in line and "  " not in line else r"\s+"


def _csv_columns(path: Path, first: str, sep: str, header) -> tuple:
    """``(header, columns)`` of a CSV file: ``header="infer"`` becomes None when every field of
    its first non-blank line ``first`` is a number, else 0; ``columns`` are the labels
    ``pd.read_csv`` gives (one row read at most), with ``index_col=False`` as when the rows
    are read."""
    import pandas as pd

    if header == "infer":
        fields = re.split(sep, first) if sep == r"\s+" else first.split(sep)  # as the reader
        header = None if all(_is_number(f) for f in fields) else 0
    columns = list(pd.read_csv(path, sep=sep, header=header, index_col=False,
                               nrows=0 if header == 0 else 1).columns)
    return header, columns


def _parse_warnings_as_errors(reader, path: Path) -> Iterator[pd.DataFrame]:
    """Frames of a ``pd.read_csv`` chunk reader made with ``index_col=False``; rows with more
    fields than the header (pandas drops the extra fields with a ``ParserWarning``) raise a
    ValueError instead. Without ``index_col=False`` pandas silently took the first field of
    every such row as the index, shifting every column."""
    import pandas as pd

    row0 = 0
    frames = iter(reader)
    while True:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", pd.errors.ParserWarning)
            try:
                frame = next(frames, None)
            except pd.errors.ParserError as e:  # e.g. one row with an extra field
                raise ValueError(f"'{path}': {str(e).strip()}") from e
        for w in caught:
            if issubclass(w.category, pd.errors.ParserWarning):
                raise ValueError(f"'{path}': rows at or after data row {row0} have more fields than "
                                 f"the header names ({w.message}); check the separator (sep=) and "
                                 f"the header, or fix the file.")
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if frame is None:
            return
        row0 += len(frame)
        yield frame


class CsvLayout(NamedTuple):
    """How a CSV/TSV file is laid out, as :func:`sniff_csv` finds it.

    Attributes
    ----------
    sep : str
        Field separator (``r"\\s+"`` for any run of whitespace), as ``pandas.read_csv`` takes it.
    header : {0, None}
        ``0``: the first non-blank line names the columns; None: no header row.
    columns : list
        Column labels as ``pandas.read_csv`` gives them: the header's names (str), or the
        positions ``0, 1, ...`` (int) for a file without a header row.
    """

    sep: str
    header: Optional[int]
    columns: list


def sniff_csv(path: str | os.PathLike, *, sep: Optional[str] = None, header: Any = "infer") -> CsvLayout:
    """Find the field separator, the header row and the column labels of a CSV/TSV file.

    Reads the first non-blank line of the file (through a ``.gz``/``.bz2``/``.xz``/``.zip``
    compression) and at most one row through pandas, whatever the size of the file.

    Parameters
    ----------
    path : str or path-like
        The CSV/TSV file, optionally compressed.
    sep : str, optional
        Field separator; when None it is sniffed from the first line: the extension's
        separator (tab for ``.tsv``, comma for ``.csv``) if the line holds it, else the first of
        tab, comma, semicolon and pipe that it holds, else the extension's separator, else
        blanks: a single space when the line has no run of blanks (what ``DataFrame.to_csv(sep=" ")`` writes: an empty
        field is then two spaces, which ``\\s+`` would merge, shifting every later field of the
        row one column left), else any run of whitespace (aligned columns).
    header : {"infer", 0, None}, default "infer"
        ``0``: the first line names the columns; None: no header row; ``"infer"``: no header
        row when every field of the first line is a number (or empty), else a header row.

    Returns
    -------
    CsvLayout
        ``(sep, header, columns)``, with ``header`` 0 or None.

    Raises
    ------
    ValueError
        The file has no non-blank line.
    FileNotFoundError
        ``path`` does not exist.
    """
    path = _as_path(path)
    inner, _ = _split_ext(path)
    first = _first_data_line(path, skip_comments=False).decode("utf-8", errors="replace")
    if not first:
        raise ValueError(f"'{path}' has no data rows (the file is empty).")
    sep = sep if sep is not None else _sniff_sep(first, inner)
    header, columns = _csv_columns(path, first, sep, header)
    return CsvLayout(sep, header, columns)


def read_csv_blocks(path: str | os.PathLike, *, sep: str, header: Optional[int], chunk_rows: int,
                    columns: Optional[Sequence[Any]] = None,
                    text: Sequence[Any] = ()) -> Iterator[pd.DataFrame]:
    """Read a CSV/TSV file as DataFrames of at most ``chunk_rows`` rows, streaming.

    ``pandas.read_csv`` with ``chunksize=chunk_rows`` and ``index_col=False`` (a compression
    suffix is looked through; blank lines are skipped), so memory is bounded by one block.
    A row with more fields than the header names is an error instead of pandas' warning
    (pandas would drop the extra fields).

    Parameters
    ----------
    path : str or path-like
        The CSV/TSV file, optionally compressed.
    sep : str
        Field separator (see :func:`sniff_csv`).
    header : {0, None}
        Header row, as :func:`sniff_csv` returns it.
    chunk_rows : int
        Rows per DataFrame (the last one may be shorter).
    columns : sequence, optional
        Labels of the columns to read (pandas' ``usecols``, in the labels :func:`sniff_csv`
        returns); default all.
    text : sequence, default ()
        Labels of columns read as text in every block (``dtype=str``; empty fields and
        pandas' missing markers stay NaN), as category columns are, so that a block where
        they look numeric gives the same strings.

    Yields
    ------
    pandas.DataFrame
        Consecutive blocks of rows; the reader is closed when the iteration ends or stops.

    Raises
    ------
    ValueError
        A row has more fields than the header names, or pandas cannot parse the file.
    """
    import pandas as pd

    path = _as_path(path)
    kwargs = {} if columns is None else {"usecols": list(columns)}
    if text:
        kwargs["dtype"] = {c: str for c in text}
    reader = pd.read_csv(
        path,
        sep=sep,
        header=header,
        chunksize=chunk_rows,
        compression="infer",
        comment=None,
        skip_blank_lines=True,
        index_col=False,
        **kwargs,
    )
    with reader:
        yield from _parse_warnings_as_errors(reader, path)


def _parquet_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in (".parquet", ".pq"))
        if not files:
            raise ValueError(f"'{path}' is a directory without *.parquet files.")
        return files
    return [path]


def _parquet_columns(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    files = _parquet_files(path)
    names = list(pq.ParquetFile(files[0]).schema_arrow.names)
    for f in files[1:]:
        other = list(pq.ParquetFile(f).schema_arrow.names)
        if other != names:
            raise ValueError(f"Parquet files under '{path}' have different columns: '{files[0]}' has {names}, "
                             f"'{f}' has {other}.")
    return names


def _parquet_text_columns(path: Path, columns: Sequence[str]) -> list:
    """The columns among ``columns`` whose Parquet type is not a number or a boolean (strings,
    dictionaries, ...), with their types: ``[(name, type)]``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pq.ParquetFile(_parquet_files(path)[0]).schema_arrow
    bad = []
    for c in columns:
        t = schema.field(c).type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
            bad.append((c, str(t)))
    return bad


def _read_parquet_chunks(path: Path, *, columns: Sequence[str], chunk_rows: int) -> Iterator[pd.DataFrame]:
    """Yield DataFrames of at most ``chunk_rows`` rows (the Parquet reader used by :func:`convert`)."""
    import pyarrow.parquet as pq

    for f in _parquet_files(path):
        pf = pq.ParquetFile(f)
        try:
            for batch in pf.iter_batches(batch_size=chunk_rows, columns=list(columns)):
                # ignore_metadata: a pandas index stored in the file (``set_index("id")``) stays
                # a column, as the schema lists it; nullable booleans become pandas' boolean
                # dtype (NaN where null), not Python objects.
                yield batch.to_pandas(ignore_metadata=True, types_mapper=_nullable_bool)
        finally:
            pf.close()


def _nullable_bool(arrow_type):
    """``to_pandas``'s ``types_mapper``: Arrow booleans as pandas' nullable boolean dtype."""
    import pandas as pd
    import pyarrow as pa

    return pd.BooleanDtype() if pa.types.is_boolean(arrow_type) else None


def _non_numeric_error(path: Path, bad: Sequence[tuple], role: str = "feature") -> ValueError:
    names = [b[0] for b in bad]
    details = "; ".join(f"{b[0]!r}: {b[1]}" for b in bad)
    if role != "feature":
        return ValueError(f"'{path}': the {role} column {names[0]!r} is not numeric ({details}); "
                          f"{role}s must be numbers.")
    listed = ",".join(map(str, names))
    return ValueError(
        f"'{path}': column(s) {names} hold text ({details}) but are not among the categorical "
        f"columns (the default, auto, takes the columns holding text in the first chunk_rows "
        f"rows). Code them as categories by naming them: categorical="
        f"{[str(n) for n in names]!r} (CLI: --categorical {listed}, with any other category "
        f"columns); an id column the model should not see can be left out instead with "
        f"drop= (CLI: --drop {names[0]})."
    )


def resolve_column(spec: Any, columns: Sequence[Any], what: str, path: str | os.PathLike) -> Any:
    """The label of the column that ``spec`` names among ``columns``.

    Parameters
    ----------
    spec : str or int
        A column label, or an integer position (negative counts from the end). For a file
        without a header row (integer labels), a string of digits such as ``"0"`` (as typed on
        a command line) is a position too.
    columns : sequence
        The file's column labels (:attr:`CsvLayout.columns`, or Parquet's column names).
    what : str
        The role of the column in error messages (``"label"``, ``"weight"``, ``"drop"``).
    path : str or path-like
        The file, named in error messages.

    Returns
    -------
    object
        The element of ``columns`` that ``spec`` names.

    Raises
    ------
    ValueError
        No such column; the message lists the available columns (the first 50).
    """
    if spec in columns:
        return spec
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool) and -len(columns) <= spec < len(columns):
        return columns[int(spec)]
    if isinstance(spec, str) and spec.lstrip("-").isdigit() and all(isinstance(c, (int, np.integer)) for c in columns):
        return resolve_column(int(spec), columns, what, path)
    shown = list(columns[:50]) + (["..."] if len(columns) > 50 else [])
    headerless = all(isinstance(c, (int, np.integer)) for c in columns)
    hint = (" The file was read without a header row, so pass an integer column index (e.g. 0)."
            if headerless else "")
    raise ValueError(
        f"'{path}': {what} column {spec!r} not found. Available columns ({len(columns)}): {shown}.{hint}"
    )


class _LabelNaN(Exception):
    pass


def _tabular_blocks(
    frames: Iterator[pd.DataFrame],
    *,
    path: Path,
    label_col: Any,
    weight_col: Any,
    feature_cols: list,
    dropna_label: bool,
    label_name: str,
    categories: Optional[dict] = None,
) -> Iterator[tuple]:
    """Turn DataFrame chunks into (X float32, y float64, weight float32 or None) blocks.

    ``categories`` maps a feature column's label to its category values: those columns are
    coded by value (:func:`oocgbdt.core.categories.encode_column`; missing and unknown values
    NaN). Raises ValueError for other non-numeric columns, non-finite labels (NaN unless
    ``dropna_label``) and NaN weights. On NaN labels without ``dropna_label`` the rest of the
    file is scanned (label column only, nothing written) so that the error gives the total count.
    """
    import pandas as pd

    from oocgbdt.core.categories import encode_column

    categories = categories or {}
    numeric_cols = [c for c in feature_cols if c not in categories]
    coded = [(j, c) for j, c in enumerate(feature_cols) if c in categories]

    needed = feature_cols + [label_col] + ([weight_col] if weight_col is not None else [])
    row0 = 0
    nan_rows = 0
    first_nan_row = None
    for frame in frames:
        n = len(frame)
        if nan_rows:  # error already decided: only count
            nan_rows += int(np.isnan(frame[label_col].to_numpy(dtype=Y_DTYPE, na_value=np.nan)).sum())
            row0 += n
            continue
        if n == 0:  # a header without data rows: every column reads as object
            continue
        bad = []
        for c in needed:
            if c in categories:
                continue
            s = frame[c]
            if not (pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype)):
                non_null = s.dropna()
                example = f", e.g. {non_null.iloc[0]!r} at data row {row0 + int(non_null.index[0] - frame.index[0])}" \
                    if len(non_null) else ""
                bad.append((c, f"dtype {s.dtype}{example}"))
        for b in bad:
            if b[0] in (label_col, weight_col):
                raise _non_numeric_error(path, [b], "label" if b[0] == label_col else "weight")
        if bad:
            raise _non_numeric_error(path, bad)
        y = frame[label_col].to_numpy(dtype=Y_DTYPE, na_value=np.nan)
        nan_mask = np.isnan(y)
        if np.isinf(y).any():
            i = int(np.flatnonzero(np.isinf(y))[0])
            raise ValueError(f"'{path}': label column {label_name!r} has infinite values (first at data row {row0 + i}).")
        if coded:
            X = np.empty((n, len(feature_cols)), dtype=X_DTYPE)
            if numeric_cols:
                X[:, [j for j, c in enumerate(feature_cols) if c not in categories]] = \
                    frame[numeric_cols].to_numpy(dtype=X_DTYPE, na_value=np.nan)
            for j, c in coded:
                X[:, j] = encode_column(frame[c], categories[c])
        else:
            X = frame[feature_cols].to_numpy(dtype=X_DTYPE, na_value=np.nan)
        w = None
        if weight_col is not None:
            w = frame[weight_col].to_numpy(dtype=_WEIGHT_DTYPE, na_value=np.nan)
        if nan_mask.any():
            if not dropna_label:
                nan_rows = int(nan_mask.sum())
                first_nan_row = row0 + int(np.flatnonzero(nan_mask)[0])
                row0 += n
                continue
            keep = ~nan_mask
            X, y = X[keep], y[keep]
            w = None if w is None else w[keep]
        if w is not None and np.isnan(w).any():
            i = int(np.flatnonzero(np.isnan(w))[0])
            raise ValueError(f"'{path}': weight column {weight_col!r} has missing values (first at data row ~{row0 + i}).")
        if w is not None and not (np.isfinite(w).all() and (w >= 0).all()):
            i = int(np.flatnonzero(~(np.isfinite(w) & (w >= 0)))[0])
            raise ValueError(f"'{path}': weight column {weight_col!r} must hold finite weights >= 0 "
                             f"(as training requires); found {float(w[i])} (at data row ~{row0 + i}).")
        row0 += n
        yield X, y, w
    if nan_rows:
        raise ValueError(
            f"'{path}': label column {label_name!r} has {nan_rows} missing (NaN) value(s) out of {row0} rows "
            f"(first at data row {first_nan_row}). Pass dropna_label=True (CLI: --dropna-label) to drop those rows."
        )


def _say(echo, message: str) -> None:
    if echo is not None:
        echo(message)
    else:
        import logging
        logging.getLogger("oocgbdt").warning(message)


def _first_csv_block(path: Path, *, sep: str, header: Optional[int], nrows: int,
                     columns: Sequence[Any]) -> "pd.DataFrame":
    """The first ``nrows`` rows of a CSV file, parsed as :func:`read_csv_blocks` parses a block."""
    import pandas as pd

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pd.errors.ParserWarning)  # the writing pass reports it
        return pd.read_csv(path, sep=sep, header=header, nrows=nrows, compression="infer",
                           comment=None, skip_blank_lines=True, index_col=False,
                           usecols=list(columns))


def _unnamed_index(columns: Sequence[Any], fmt: str) -> Any:
    """The column that only holds a pandas index: a CSV's first column named ``Unnamed: 0``
    (an empty header field, as ``DataFrame.to_csv`` writes the index) or Parquet's
    ``__index_level_0__``; None when there is none."""
    if fmt == "csv" and columns and columns[0] == "Unnamed: 0":
        return columns[0]
    if fmt == "parquet" and "__index_level_0__" in columns:
        return "__index_level_0__"
    return None


def _find_categories(src: Path, fmt: str, categorical: Any, columns: Sequence[Any],
                     feature_cols: list, needed: list, label_col: Any, weight_col: Any,
                     chunk_rows: int, sep: Optional[str], header: Optional[int]) -> dict:
    """The category columns of a CSV/Parquet source and their sorted values, by a first pass
    over those columns only.

    Returns ``{column label: sorted distinct values}`` in feature order. The columns are those
    named in ``categorical``, or with ``"auto"`` the text columns: Parquet's types tell them; a
    CSV's are the columns pandas reads as text in the first ``chunk_rows`` rows. The pass reads
    these columns alone, as text (as the writing pass reads them), so a numeric-only file is
    read once.

    Raises
    ------
    ValueError
        ``categorical`` names a column that is not a feature, or a text label/weight column.
    """
    from oocgbdt.core.categories import merge_categories

    if isinstance(categorical, str) and categorical != "auto":
        raise ValueError(f"categorical must be 'auto', None or a list of column names; got "
                         f"{categorical!r}.")
    named = [] if categorical in ("auto", None) else [
        resolve_column(c, columns, "categorical", src) for c in categorical]
    for c in named:
        if c not in feature_cols:
            raise ValueError(f"'{src}': categorical column {c!r} is not a feature column (it is "
                             f"the label, the weight or left out).")
    auto = categorical == "auto"
    found: dict = {}
    again: set = set(named)
    if fmt == "parquet":
        text = _parquet_text_columns(src, needed)
        for c, t in text:
            if c in (label_col, weight_col):
                raise _non_numeric_error(src, [(c, t)], "label" if c == label_col else "weight")
        text_features = [c for c, _ in text]
        left = [(c, t) for c, t in text if c not in named and not auto]
        if left:
            raise _non_numeric_error(src, left)
        again |= set(text_features)
    elif auto:
        # The text columns of the first block; a column whose text starts later is reported
        # by the writing pass, which names --categorical.
        import pandas as pd

        first = _first_csv_block(src, sep=sep, header=header, nrows=chunk_rows, columns=needed)
        if len(first) == 0:  # no data rows: every column reads as text; the writer says so
            return {}
        for c in (label_col, weight_col):
            if c is not None and not (pd.api.types.is_numeric_dtype(first[c].dtype)
                                      or pd.api.types.is_bool_dtype(first[c].dtype)):
                raise _non_numeric_error(src, [(c, f"dtype {first[c].dtype}")],
                                         "label" if c == label_col else "weight")
        again |= {c for c in feature_cols
                  if not (pd.api.types.is_numeric_dtype(first[c].dtype)
                          or pd.api.types.is_bool_dtype(first[c].dtype))}
    todo = [c for c in feature_cols if c in again and c not in found]
    if todo:
        sets: dict = {c: set() for c in todo}
        frames = (read_csv_blocks(src, sep=sep, header=header, chunk_rows=chunk_rows,
                                  columns=todo, text=todo) if fmt == "csv"
                  else _read_parquet_chunks(src, columns=todo, chunk_rows=chunk_rows))
        for frame in frames:
            for c in todo:
                sets[c].update(v.item() if isinstance(v, np.generic) else v
                               for v in frame[c].dropna().unique().tolist())
        for c in todo:
            found[c] = merge_categories([sets[c]])
    return {c: found[c] for c in feature_cols if c in found}


# --------------------------------------------------------------------------------------------
# LibSVM
# --------------------------------------------------------------------------------------------


def _line_chunks(path: Path, chunk_rows: int) -> Iterator[tuple[int, bytes]]:
    """Yield (first line number, bytes of up to ``chunk_rows`` lines)."""
    with _open_binary(path) as fh:
        line_no = 0
        while True:
            lines = list(itertools.islice(fh, chunk_rows))
            if not lines:
                return
            if not lines[-1].endswith(b"\n"):
                lines[-1] += b"\n"
            yield line_no, b"".join(lines)
            line_no += len(lines)


def _load_svmlight_chunk(data: bytes, **kwargs: Any):
    """Parse LibSVM lines (the parser used by :func:`convert`; a seam for tests)."""
    from sklearn.datasets import load_svmlight_file

    return load_svmlight_file(io.BytesIO(data), **kwargs)


def _scan_libsvm(path: Path, chunk_rows: int) -> tuple[int, int, int, int]:
    """First pass: (max column index + 1, min column index, stored entries, rows) over the file,
    indices as written."""
    n_cols = 0
    min_index = None
    nnz = n_rows = 0
    for line_no, data in _line_chunks(path, chunk_rows):
        try:
            Xs, _ = _load_svmlight_chunk(data, zero_based=True, dtype=np.float32)
        except ValueError as exc:
            raise ValueError(f"'{path}': invalid LibSVM data in lines {line_no + 1}..: {exc}") from exc
        n_cols = max(n_cols, Xs.shape[1])
        nnz += int(Xs.nnz)
        n_rows += int(Xs.shape[0])
        if Xs.nnz:
            m = int(Xs.indices.min())
            min_index = m if min_index is None else min(min_index, m)
    return n_cols, (0 if min_index is None else min_index), nnz, n_rows


def _libsvm_blocks(path: Path, chunk_rows: int, n_features: int, zero_based: bool) -> Iterator[tuple]:
    for line_no, data in _line_chunks(path, chunk_rows):
        try:
            Xs, y = _load_svmlight_chunk(data, n_features=n_features, zero_based=zero_based, dtype=np.float32)
        except ValueError as exc:
            last = line_no + data.count(b"\n")
            raise ValueError(
                f"'{path}': cannot parse LibSVM lines {line_no + 1}..{last} with "
                f"n_features={n_features}, zero_based={zero_based}: {exc}"
            ) from exc
        if not np.isfinite(y).all():
            raise ValueError(f"'{path}': non-finite label in LibSVM lines {line_no + 1}..")
        yield Xs, y.astype(Y_DTYPE, copy=False), None  # CSR; a dense writer densifies it


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def convert(
    source: str | os.PathLike,
    dest: str | os.PathLike,
    *,
    label: Any = None,
    fmt: Optional[str] = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    sep: Optional[str] = None,
    header: Any = "infer",
    weight: Any = None,
    drop: Optional[Sequence[Any]] = None,
    n_features: Optional[int] = None,
    zero_based: Any = "auto",
    dropna_label: bool = False,
    overwrite: bool = False,
    sparse: Any = "auto",
    categorical: Any = "auto",
    echo: Optional[Any] = None,
) -> Dataset:
    """Convert a CSV/TSV, Parquet or LibSVM file to an oocgbdt Zarr dataset, streaming.

    Memory stays bounded by ``chunk_rows``: the source is parsed ``chunk_rows`` rows (LibSVM:
    lines) at a time and written chunk by chunk. The store is built in
    ``<dest>.tmp-<random>`` and renamed to ``dest`` when complete; on any error the temporary
    directory is removed and ``dest`` is left untouched.

    Parameters
    ----------
    source : str or path-like
        Input file: CSV/TSV (optionally ``.gz``/``.bz2``/``.xz``/single-file ``.zip``), Parquet
        (a file or a directory of ``*.parquet`` files, read in sorted path order), or LibSVM.
    dest : str or path-like
        Output directory (must not exist unless ``overwrite=True``).
    label : str or int
        CSV/Parquet: name of the label column, or its integer position (required for files
        without a header row). LibSVM: the label is the first token of each line; pass None
        (or ``"label"``).
    fmt : {"csv", "tsv", "parquet", "libsvm", "svm"}, optional
        Inferred by :func:`infer_format` when None.
    chunk_rows : int, default 65_536
        Rows per stored chunk and per parsed block.
    sep : str, optional
        CSV field separator. Default: tab for ``.tsv``, comma for ``.csv``, otherwise sniffed
        from the first line (tab, comma, semicolon, pipe, else whitespace).
    header : {"infer", 0, None}, default "infer"
        ``0``: the first line names the columns. ``None``: no header row (columns are numbered
        0, 1, ...; pass ``label`` as an index). ``"infer"``: no header if every field of the
        first line is a number, else header row.
    weight : str or int, optional
        CSV/Parquet column holding sample weights (stored as float32 ``weight``).
    drop : sequence of str or int, optional
        CSV/Parquet columns to leave out (e.g. ids and text columns).
    n_features : int, optional
        LibSVM: number of features (default: largest index found by a first pass). For other
        formats it is checked against the number of feature columns.
    zero_based : {"auto", True, False}, default "auto"
        LibSVM index base. ``"auto"`` (as scikit-learn): zero-based if index 0 occurs anywhere
        in the file, else one-based. Determined over the whole file by the first pass.
    dropna_label : bool, default False
        Drop rows whose label is missing. When False, missing labels raise ValueError.
    overwrite : bool, default False
        Replace an existing oocgbdt dataset at ``dest``.
    sparse : {"auto", True, False}, default "auto"
        Store ``X`` in the sparse layout (CSR per row chunk; dataset layout version 2).
        ``"auto"``: LibSVM files whose stored entries fill at most ``SPARSE_DENSITY`` (10%) of
        the cells (counted by the first pass, or on the first block when the pass is skipped);
        CSV and Parquet are stored dense. Sparse LibSVM blocks are never densified.
    categorical : "auto", None or sequence of str or int, default "auto"
        CSV/Parquet feature columns stored as category codes (0, 1, 2, ... in the sorted order
        of the column's distinct values; missing values NaN). ``"auto"``: every column holding
        text; a sequence: these columns (text or numbers), any other text column is an error;
        None: none. The categories are found by a first pass over the file before anything is
        written, so the codes are the same in every chunk; the map is stored in the dataset's
        attributes (``categorical_features``, ``pandas_categorical``), and training keeps it in
        the model (``docs/decisions/category-codes.md``).
    echo : callable, optional
        Called with a message when a column is left out on its own: an unnamed first column
        (pandas' ``to_csv`` writes its index so, as ``Unnamed: 0``) or a Parquet index column
        (``__index_level_0__``). Default: the ``oocgbdt`` logger's ``warning``.

    Returns
    -------
    Dataset
        The new store, opened lazily (:func:`oocgbdt.io.dataset.open_dataset`). Feature names
        are the column names, or ``Column_0..`` for header-less and LibSVM files.

    Raises
    ------
    FileNotFoundError
        ``source`` does not exist (or the parent directory of ``dest`` does not).
    FileExistsError
        ``dest`` exists and ``overwrite`` is False.
    ValueError
        Unknown format; label/weight/drop/categorical columns not found (the message lists the
        available columns); a text label or weight column, or a text feature column that
        ``categorical`` leaves out (the message names them and how to code them); missing
        labels without ``dropna_label``; infinite labels or missing weights; malformed LibSVM
        lines or indices beyond ``n_features``; options that do not apply to the format;
        ``dest`` overlapping ``source``; no data rows.
    """
    src = _as_path(source)
    out = _as_path(dest)
    if not src.exists():
        raise FileNotFoundError(f"Source file '{src}' does not exist.")
    chunk_rows = _check_chunk_rows(chunk_rows)
    fmt_ = _normalize_format(fmt, src)
    if fmt_ != "parquet" and src.is_dir():
        raise ValueError(f"Source '{src}' is a directory; only Parquet sources may be directories.")
    if header not in ("infer", 0, None) or isinstance(header, bool):
        raise ValueError(f"header must be 'infer', 0 or None; got {header!r}.")
    if zero_based not in ("auto", True, False):
        raise ValueError(f"zero_based must be 'auto', True or False; got {zero_based!r}.")
    if sparse not in ("auto", True, False):
        raise ValueError(f"sparse must be 'auto', True or False; got {sparse!r}.")
    _check_destination(out, overwrite, [src])

    if fmt_ == "libsvm":
        if label not in (None, "label"):
            raise ValueError(
                f"LibSVM files carry the label as the first token of each line; pass label=None (got {label!r})."
            )
        if weight is not None or drop is not None or sep is not None:
            raise ValueError("weight=, drop= and sep= do not apply to LibSVM files.")
        density = None
        if n_features is None or zero_based == "auto":
            n_cols, min_index, nnz, n_lines = _scan_libsvm(src, chunk_rows)
            if zero_based == "auto":
                zero_based = min_index == 0
            if n_features is None:
                n_features = n_cols if zero_based else max(n_cols - 1, 0)
            density = nnz / max(n_lines * max(int(n_features), 1), 1)
        n_features = int(n_features)
        blocks = _libsvm_blocks(src, chunk_rows, n_features, bool(zero_based))
        if sparse == "auto":
            if density is None:  # no first pass: judge by the first block
                first = next(blocks, None)
                if first is not None:
                    density = first[0].nnz / max(first[0].shape[0] * max(n_features, 1), 1)
                    blocks = itertools.chain([first], blocks)
            sparse = density is not None and density <= SPARSE_DENSITY
        feature_names = default_feature_names(n_features)
        label_name = "label"
        has_weight = False
        if categorical not in ("auto", None):
            raise ValueError("categorical= does not apply to LibSVM files (they hold numbers only).")
    else:
        if sparse is True:
            raise ValueError(f"sparse=True (CLI: --layout sparse) applies to LibSVM sources; {fmt_} "
                             f"sources are stored dense.")
        sparse = False
        if label is None:
            raise ValueError(f"label= is required for {fmt_} sources (a column name or integer column index).")
        if fmt_ == "csv":
            sep_, header_, columns = sniff_csv(src, sep=sep, header=header)
        else:
            if sep is not None:
                raise ValueError("sep= does not apply to Parquet files.")
            columns = _parquet_columns(src)
            header_ = 0
        label_col = resolve_column(label, columns, "label", src)
        weight_col = None if weight is None else resolve_column(weight, columns, "weight", src)
        dropped = {resolve_column(d, columns, "drop", src) for d in (drop or ())}
        index_col = _unnamed_index(columns, fmt_)
        if index_col is not None and index_col not in dropped and index_col not in (label_col, weight_col):
            dropped.add(index_col)
            _say(echo, f"convert: leaving out column {index_col!r}: "
                       + ("an unnamed first column, as pandas' to_csv writes the index; "
                          if fmt_ == "csv" else "a pandas index stored in the file; ")
                       + "it is not a feature. Give its header a name to keep it.")
        if label_col in dropped or (weight_col is not None and weight_col in dropped):
            raise ValueError(f"drop= contains the label or weight column ({sorted(map(str, dropped))}).")
        if weight_col == label_col:
            raise ValueError(f"weight= and label= name the same column {label_col!r}.")
        feature_cols = [c for c in columns if c != label_col and c != weight_col and c not in dropped]
        if not feature_cols:
            raise ValueError(f"'{src}': no feature columns left (columns {columns}, label {label_col!r}, "
                             f"weight {weight_col!r}, drop {sorted(map(str, dropped))}).")
        if n_features is not None and int(n_features) != len(feature_cols):
            raise ValueError(f"n_features={n_features} but '{src}' has {len(feature_cols)} feature columns.")
        n_features = len(feature_cols)
        headerless = header_ is None
        feature_names = default_feature_names(n_features) if headerless else [str(c) for c in feature_cols]
        label_name = "label" if headerless else str(label_col)
        has_weight = weight_col is not None
        needed = feature_cols + [label_col] + ([weight_col] if has_weight else [])
        categories = _find_categories(src, fmt_, categorical, columns, feature_cols, needed,
                                      label_col, weight_col, chunk_rows,
                                      sep_ if fmt_ == "csv" else None, header_)
        if fmt_ == "csv":
            frames = read_csv_blocks(src, sep=sep_, header=header_, chunk_rows=chunk_rows,
                                     columns=needed if index_col in dropped else None,
                                     text=list(categories))
        else:
            frames = _read_parquet_chunks(src, columns=needed, chunk_rows=chunk_rows)
        blocks = _tabular_blocks(
            frames,
            path=src,
            label_col=label_col,
            weight_col=weight_col,
            feature_cols=feature_cols,
            dropna_label=dropna_label,
            label_name=label_name,
            categories=categories,
        )

    writer = DatasetWriter(
        out,
        n_features,
        feature_names=feature_names,
        label=label_name,
        chunk_rows=chunk_rows,
        has_y=True,
        weight_dtype=_WEIGHT_DTYPE if has_weight else None,
        source=str(src),
        overwrite=overwrite,
        inputs=[src],
        sparse=bool(sparse),
        categories=({feature_cols.index(c): v for c, v in categories.items()}
                    if fmt_ != "libsvm" else None),
    )
    try:
        for X, y, w in blocks:
            writer.append(X, y, w)
        writer._flush(final=True)
        if writer.n_rows == 0:
            raise ValueError(f"'{src}' has no data rows" + (" with a label" if dropna_label else "") + ".")
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    finally:
        close = getattr(blocks, "close", None)
        if close is not None:
            close()
    return open_dataset(out)
