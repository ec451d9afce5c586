"""This module contains where the binned rows live between passes: worker memory or a Zarr disk cache.

Data flow position: after the bins, bundles and partitions are fixed, before boosting.

``cache="memory"``: each partition's :class:`~oocgbdt.core.partition.PartitionData` holds its binned
columns (``X_binned``, the bundles with EFB) in worker memory (in-process for NumPy input with
no client).

``cache="disk"``: the write pass runs one task per *piece*, a run of consecutive storage chunks
of one partition holding at most ``PIECE_RAW_BYTES`` of raw values (or a single chunk):
:func:`write_piece` reads its raw rows, bins them and writes them as one Zarr v3 array of one
chunk (Blosc lz4 level 1 when that halves it, see ``CODEC`` and ``COMPRESS_BELOW``, else raw
bytes), and returns a :class:`Piece` record (a few bytes). A worker of the write pass therefore
holds one piece's raw rows at a time, whatever the partition size, and the write tasks carry no
placement, so Dask's queuing of root tasks bounds how many run at once. Each partition's
PartitionData is then made from its labels (and weights) alone, :func:`cached_partition`, with
``X_binned`` a :class:`CachedBins` reference (path, shape, dtype, pieces: a few hundred bytes),
exactly as when a stored cache is reused. Every pass reads a partition's bins back from the store
(:func:`oocgbdt.core.partition.partition_bins`). What stays in worker memory is the per-row state,
``PER_ROW_STATE_BYTES`` per row and output (see below), not the columns.

Store layout (a directory)::

    zarr.json                attrs: format "oocgbdt-cache", version, complete, fingerprint,
                             fingerprint_parts, sets, pieces (rows, raw, EFB conflicts),
                             bytes_binned, seconds_write
    train/p00000/0 ...       partition 0's pieces in row order: uint8/uint16 arrays of shape
                             (piece rows, n_columns), one chunk each
    eval_0/p00000/0 ...      the eval sets, same layout, one column per feature (never
                             bundled: :func:`oocgbdt.dask.partitions.set_layout`)

**Fingerprint** (:func:`fingerprint_parts`): sha256 over the shape of every set, its partition
boundaries, the parameters that change bins (``BIN_SETTINGS``), the fitted bin mapper (upper
bounds, missing types, default bins...) and bundler (bundles, layout), a content hash of the
training rows the bin mapper sampled (``bin_construct_sample_cnt`` rows drawn over the global
row range), a content hash of each eval set's rows at the indices of a sample of the same size
(every row of an eval set of at most ``bin_construct_sample_cnt`` rows, so a change in the
middle of an eval set is seen) and a content hash of
the first and last ``EDGE_ROWS`` rows of every set. A store is reused only when every part
matches; otherwise the error says which parts differ.

What it detects: a data set of another shape (rows or features of the training set or of an
eval set, or another number of eval sets); a change of chunking or ``partition_rows``
that moves partition boundaries; any bin setting; any change in the sampled rows (on up to
``bin_construct_sample_cnt`` rows, all rows of a smaller data set, training or eval) or in the
first and last rows. What it cannot detect: on a set larger than the bin sample, a change
confined to rows that were neither sampled nor at either end (e.g. a few edited values in the
middle of a large file), and a change that leaves the fitted bins and sampled rows identical.
Labels and weights are not in the cache (they are read afresh on every fit), so changing them
is always safe. A dense and a sparse copy of the same data fingerprint differently (their
samples are hashed in their own layout).

Workers read the store by path: on a cluster of several machines, ``cache_path`` must be on a
filesystem that every worker sees (the default temporary directory is on the client's machine).
"""
from __future__ import annotations

import hashlib
import json
import mmap
import os
import shutil
import sys
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

import tempfile
from concurrent.futures import ThreadPoolExecutor

import dask
import numcodecs
import numpy as np
import scipy.sparse as sp
import zarr
from zarr.codecs import BloscCodec

from oocgbdt.core.partition import partition_init
from oocgbdt.dask.binning import bin_sample
from oocgbdt.dask.inputs import is_sparse
from oocgbdt.dask.partitions import bin_raw_blocks, row_blocks, set_layout
from oocgbdt.runtime.cluster import cluster_workers

__all__ = ["CACHE_FORMAT", "CACHE_VERSION", "CLAIM_FILE", "CODEC", "BIN_SETTINGS", "EDGE_ROWS",
           "PER_ROW_STATE_BYTES", "PIECE_RAW_BYTES", "Piece", "CachedBins", "inspect_cache_path",
           "hash_rows", "fingerprint_parts", "fingerprint", "check_fingerprint", "create_cache",
           "claim_cache_dir", "finish_cache", "stored_pieces", "cached_bins", "piece_groups", "write_piece", "compression_ratio", "COMPRESS_BELOW",
           "abort_writes", "cached_partition", "partition_path", "directory_bytes",
           "cluster_memory_bytes", "remove_cache", "check_cache_path", "choose_cache",
           "DiskCache", "describe_bytes", "open_disk_cache", "write_cache", "cached_partition_tasks"]

CACHE_FORMAT = "oocgbdt-cache"
CACHE_VERSION = 4
#: Blosc lz4 at level 1 with byte shuffle (a no-op for uint8; groups the high bytes of uint16).
#: Measured on 262,144-row partitions: dense quantile bins of 100 normal features do not
#: compress (bins are near-uniform by construction; Blosc stores them raw, read 15 ms for 26 MB),
#: bundled one-hot columns shrink to 23% (read 6 ms for 5 MB); zstd level 1 gave 12% but read
#: 1.7x slower, and every pass reads the cache, while it is written once.
CODEC = BloscCodec(cname="lz4", clevel=1, shuffle="shuffle")
#: A partition is stored compressed only when ``CODEC`` shrinks it to at most this share of its
#: bytes; otherwise it is stored raw and memory-mapped by every read (no decompression, no
#: copy). Measured on 1M x 100 dense bins (4 partitions, 30 trees of 31 leaves, 2 busy cores):
#: Blosc-stored incompressible bins cost 2.8 CPU s per tree against 1.0 in memory (reading 25 MB
#: per partition per pass); raw and memory-mapped, 1.05.
COMPRESS_BELOW = 0.5
#: A write task holds at most this many bytes of raw values (a piece of consecutive storage
#: chunks; a larger chunk is a piece on its own). 64 MiB: with the bins and the binning
#: temporaries, a write task stays near 100 MiB, which fits workers of 1 GiB beside the
#: training state.
PIECE_RAW_BYTES = 64 * 2 ** 20
#: Parameters that change the bins or bundles, recorded in the fingerprint.
BIN_SETTINGS = ("max_bin", "min_data_in_bin", "bin_construct_sample_cnt", "data_random_seed",
                "use_missing", "zero_as_missing", "feature_pre_filter", "min_data_in_leaf",
                "enable_bundle", "max_conflict_rate")
#: File that tells the write tasks of a failed write pass to stop (see :func:`abort_writes`).
ABORT_MARKER = "ABORTED"
#: A piece is written to ``<piece>`` + this + a random hex name, then renamed into place.
PIECE_TMP_SUFFIX = ".tmp-"
#: Rows hashed at each end of every set.
EDGE_ROWS = 8
#: File a fit creates (``O_EXCL``) in ``cache_path`` before it writes a cache there, and removes
#: when the cache is complete: of two fits that start writing to one new path, the second stops
#: with an error and removes nothing (see :func:`claim_cache_dir`).
CLAIM_FILE = ".oocgbdt-writing"
#: Bytes per row and output kept in memory whatever the cache (PartitionData): float64 raw score (8),
#: float32 gradient and hessian (8); plus, once per row, the float32 label (4), float32 weight
#: (4, when given), int32 sampled row index (4, GOSS/bagging) and the int32 leaf order of the
#: tree being grown (4).
PER_ROW_STATE_BYTES = 16


@dataclass(frozen=True)
class Piece:
    """What :func:`write_piece` wrote: one array of a partition's consecutive rows.

    Attributes
    ----------
    rows : int
        Rows of the piece.
    raw : bool
        Stored uncompressed (little-endian bytes in C order, Zarr's ``bytes`` codec) in the
        array's one chunk file, which :meth:`CachedBins.read` reads (or maps) directly.
    conflicts : tuple of int
        ``(conflicting rows, lost values)`` of the EFB merge over the piece's rows.
    """

    rows: int
    raw: bool
    conflicts: tuple = (0, 0)


@dataclass(frozen=True)
class CachedBins:
    """A partition's binned columns in the disk cache, read on demand.

    Satisfies what :func:`oocgbdt.core.partition.partition_bins` needs: ``shape``, ``dtype`` and
    ``read()``. Picklable and small (a path, a shape and the pieces' rows), so it travels with
    the PartitionData.

    Attributes
    ----------
    path : str
        Directory of the partition; piece ``j`` is the Zarr array ``<path>/<j>`` (one chunk).
    shape : tuple of int
        ``(rows, n_columns)``.
    dtype : numpy dtype
        uint8 or uint16.
    pieces : tuple of (int, bool)
        ``(rows, raw)`` per piece, in row order (see :class:`Piece`).
    """

    path: str
    shape: tuple
    dtype: np.dtype
    pieces: tuple = ()

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def _raw_file(self, j: int) -> str:
        return os.path.join(self.path, str(j), "c", *(["0"] * len(self.shape)))

    def read(self) -> np.ndarray:
        """The partition's bins: C-contiguous ndarray of shape ``shape`` and dtype ``dtype``.

        A partition of one raw piece is memory-mapped (read-only, no copy: pages come from the
        operating system's file cache and are unmapped with the array). Otherwise each piece
        is read into one new array: raw pieces straight from their file, compressed ones
        through Zarr.

        Raises
        ------
        FileNotFoundError
            The cache was deleted while training still needed it.
        ValueError
            A piece holds another number of bytes, shape or dtype than recorded (the cache was
            modified).
        """
        if not os.path.isdir(self.path):
            raise FileNotFoundError(f"disk cache partition {self.path!r} is gone; the cache "
                                    f"directory was deleted during training.")
        dtype = np.dtype(self.dtype)
        row_bytes = int(np.prod(self.shape[1:])) * dtype.itemsize
        if len(self.pieces) == 1 and self.pieces[0][1]:
            with open(self._raw_file(0), "rb") as f:
                self._check_size(f, 0, self.shape[0] * row_bytes)
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            return np.frombuffer(mm, dtype=dtype).reshape(self.shape)
        out = np.empty(self.shape, dtype=dtype)
        start = 0
        for j, (rows, raw) in enumerate(self.pieces):
            part = out[start:start + rows]
            if raw:
                with open(self._raw_file(j), "rb") as f:
                    self._check_size(f, j, rows * row_bytes)
                    f.readinto(memoryview(part).cast("B"))
            else:
                arr = zarr.open_array(os.path.join(self.path, str(j)), mode="r")
                if arr.shape != part.shape or arr.dtype != dtype:
                    raise ValueError(f"disk cache piece {j} of {self.path!r} holds {arr.shape} "
                                     f"{arr.dtype}, expected {part.shape} {dtype}; the cache "
                                     f"was modified.")
                part[...] = arr[...]
            start += rows
        if start != self.shape[0]:
            raise ValueError(f"disk cache partition {self.path!r}: its pieces hold {start} rows, "
                             f"expected {self.shape[0]}.")
        return out

    def _check_size(self, f, j, nbytes):
        size = os.fstat(f.fileno()).st_size
        if size != nbytes:
            raise ValueError(f"disk cache piece {j} of {self.path!r} holds {size} bytes, "
                             f"expected {nbytes}; the cache was modified.")


def partition_path(root, set_name: str, i: int) -> str:
    """Directory of partition ``i`` of set ``set_name`` in the cache at ``root``."""
    return os.path.join(str(root), set_name, f"p{i:05d}")


def _zarr_node_above(p: Path) -> Path | None:
    """The nearest existing ancestor of ``p`` (``p`` excluded) that is a Zarr group or array."""
    for parent in p.parents:
        if any((parent / m).is_file() for m in ("zarr.json", ".zgroup", ".zarray")):
            return parent
    return None


def _check_can_create(p: Path) -> None:
    """Raise a ValueError, before any work, when no cache directory can be made at ``p``."""
    if p.is_symlink() and not p.exists():
        raise ValueError(f"cache_path {str(p)!r} is a symbolic link to a missing target; "
                         f"choose another cache_path.")
    anc = p if p.exists() else next(a for a in p.parents if a.exists())
    if not anc.is_dir():
        raise ValueError(f"cache_path {str(p)!r} cannot be created: {str(anc)!r} is a file, "
                         f"not a directory; choose another cache_path.")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise ValueError(f"cache_path {str(p)!r} cannot be written: no write permission in "
                         f"{str(anc)!r}; choose another cache_path.")


def inspect_cache_path(path) -> dict | None:
    """Check a ``cache_path`` before any work; return the stored attributes of an oocgbdt cache.

    Parameters
    ----------
    path : str or path-like
        Absolute path (``train`` expands ``~`` and makes it absolute first).

    Returns
    -------
    dict or None
        None when ``path`` does not exist or is an empty directory (a new cache goes there),
        else the attributes of the oocgbdt cache stored there.

    Raises
    ------
    ValueError
        ``path`` exists and is not an oocgbdt cache (a file, or a directory holding something
        else); is an oocgbdt cache whose writing never completed, or that another fit is
        writing now; lies inside a Zarr store (input stores are never written to); or cannot
        be created (under a file, a dangling link, no write permission). Nothing is modified.
    """
    p = Path(path)
    store = _zarr_node_above(p)
    if store is not None:
        raise ValueError(f"cache_path {str(p)!r} is inside the Zarr store {str(store)!r}; a "
                         f"cache is never written into a data store. Choose a path outside it.")
    if not p.exists():
        _check_can_create(p)
        return None
    if not p.is_dir():
        raise ValueError(f"cache_path {str(p)!r} exists and is a file, not an oocgbdt cache "
                         f"directory; choose another cache_path.")
    children = {c.name for c in p.iterdir()}
    if not children:
        _check_can_create(p)
        return None
    if CLAIM_FILE in children and "zarr.json" not in children:
        raise ValueError(f"cache_path {str(p)!r} is an oocgbdt cache that another fit is "
                         f"writing now, or whose writing was interrupted; wait for that fit, or "
                         f"delete the directory, or choose another cache_path.")
    attrs = None
    meta = p / "zarr.json"
    if meta.is_file():
        try:
            attrs = json.loads(meta.read_text()).get("attributes", {})
        except (OSError, ValueError):
            attrs = None
    if not attrs or attrs.get("format") != CACHE_FORMAT:
        raise ValueError(f"cache_path {str(p)!r} exists and is not an oocgbdt cache (no "
                         f"'{CACHE_FORMAT}' Zarr group there); it is left untouched. Choose "
                         f"another cache_path, or an empty or new directory.")
    if attrs.get("version") != CACHE_VERSION:
        raise ValueError(f"cache_path {str(p)!r} is an oocgbdt cache of version "
                         f"{attrs.get('version')}, this version reads version {CACHE_VERSION}; "
                         f"delete it or choose another cache_path.")
    if not attrs.get("complete"):
        raise ValueError(f"cache_path {str(p)!r} is an oocgbdt cache that another fit is "
                         f"writing now, or whose writing never completed (an earlier fit was "
                         f"interrupted); delete it or choose another cache_path.")
    return attrs


def claim_cache_dir(path) -> None:
    """Create ``path`` if needed and claim it for this fit's cache, atomically.

    The claim is :data:`CLAIM_FILE`, created with ``O_EXCL``: of several fits that found the
    path new or empty (:func:`inspect_cache_path`) and now start writing there, exactly one
    succeeds. A fit whose claim succeeds owns the directory's content until
    :func:`finish_cache`; a fit whose claim fails has written and may remove nothing.

    Raises
    ------
    ValueError
        Another fit claimed ``path`` first, something else was written there since it was
        inspected, or it cannot be created. Nothing that was there is modified.
    """
    claim = os.path.join(str(path), CLAIM_FILE)
    try:
        os.makedirs(path, exist_ok=True)
        fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        raise ValueError(f"cache_path {str(path)!r}: another fit started writing a cache there "
                         f"while this one fitted its bins; nothing was written or removed. Wait "
                         f"for it and reuse its cache, or choose another cache_path.") from None
    except OSError as e:
        raise ValueError(f"cache_path {str(path)!r} cannot be used: {e}") from e
    os.close(fd)
    others = sorted(c.name for c in Path(path).iterdir() if c.name != CLAIM_FILE)
    if others:
        os.unlink(claim)
        raise ValueError(f"cache_path {str(path)!r} is no longer empty (it now holds "
                         f"{', '.join(others[:3])}{' ...' if len(others) > 3 else ''}); it was "
                         f"left untouched. Choose another cache_path.")


def hash_rows(h, rows) -> None:
    """Update hashlib object ``h`` with the content of rows (dense ndarray or scipy.sparse)."""
    if sp.issparse(rows):
        a = sp.csr_matrix(rows, copy=True)
        a.sum_duplicates()
        a.eliminate_zeros()
        h.update(b"csr" + repr(a.shape).encode())
        for part in (a.indptr.astype(np.int64), a.indices.astype(np.int64),
                     a.data.astype(np.float32)):
            h.update(np.ascontiguousarray(part).tobytes())
    else:
        a = np.ascontiguousarray(rows, dtype=np.float32)
        h.update(b"dense" + repr(a.shape).encode())
        h.update(a.tobytes())


def _sha(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, allow_nan=False).encode()).hexdigest()


def fingerprint_parts(params, bin_mapper, bundler, sets, sample_sha256: str) -> dict:
    """The parts of a cache fingerprint (all JSON-serializable; see the module docstring).

    Parameters
    ----------
    params : dict of resolved parameters
    bin_mapper, bundler : fitted BinMapper, fitted FeatureBundler or None
    sets : dict of str to dict
        Per set (``"train"``, ``"eval_0"``...): ``shape`` (n_rows, n_features), ``bounds``
        (partition row offsets) and ``edge_sha256`` (hash of its first and last rows); per eval
        set also ``sample_sha256``, the hash of its rows at the indices a bin sample of its size
        would take (every row of an eval set of at most ``bin_construct_sample_cnt`` rows).
    sample_sha256 : str
        Hash of the training rows the bin mapper was fitted on (:func:`hash_rows`).
    """
    return {
        "shapes": {k: [int(x) for x in v["shape"]] for k, v in sets.items()},
        "partitions": {k: _sha([int(b) for b in v["bounds"]]) for k, v in sets.items()},
        "bin_settings": {k: (params[k].item() if isinstance(params[k], np.generic) else params[k])
                         for k in BIN_SETTINGS},
        "bins": _sha(bin_mapper.to_dict()),
        "bundles": None if bundler is None else _sha(bundler.to_dict()),
        "bin_sample": sample_sha256,
        "edge_rows": {k: v["edge_sha256"] for k, v in sets.items()},
        "eval_sample": {k: v["sample_sha256"] for k, v in sets.items() if "sample_sha256" in v},
    }


def fingerprint(parts: dict) -> str:
    """sha256 over the fingerprint parts."""
    return _sha(parts)


_PART_NAMES = {"shapes": "the number of rows or features of a data set (or the eval sets)",
               "partitions": "the partition boundaries (chunking, chunk_rows or partition_rows)",
               "bin_settings": "the bin settings", "bins": "the fitted bins",
               "bundles": "the feature bundles (EFB)",
               "bin_sample": "the content of the rows sampled to fit the bins",
               "edge_rows": "the content of the first or last rows of a data set",
               "eval_sample": "the content of an eval set (its sampled rows: every row of an "
                              "eval set of at most bin_construct_sample_cnt rows)"}


def check_fingerprint(path, stored: dict, parts: dict) -> None:
    """Raise a ValueError naming what differs when ``parts`` do not match the stored cache."""
    if stored.get("fingerprint") == fingerprint(parts):
        return
    old = stored.get("fingerprint_parts", {})
    diffs = []
    for k in parts:
        if old.get(k) != parts[k]:
            if k in ("shapes", "bin_settings") and isinstance(old.get(k), dict):
                changed = sorted(set(old[k]) | set(parts[k]))
                changed = [n for n in changed if old[k].get(n) != parts[k].get(n)]
                diffs.append(f"{_PART_NAMES[k]} ("
                             + ", ".join(f"{n}: cache {old[k].get(n)!r}, now {parts[k].get(n)!r}"
                                         for n in changed) + ")")
            else:
                diffs.append(_PART_NAMES.get(k, k))
    raise ValueError(f"cache_path {str(path)!r} holds an oocgbdt cache of other data or bin "
                     f"settings; it differs in: {'; '.join(diffs) or 'its fingerprint'}. It was "
                     f"left untouched: choose another cache_path, or delete that directory to "
                     f"rebuild the cache there.")


def create_cache(path, parts: dict, set_names, bytes_binned: int) -> None:
    """Create the cache group at ``path``, marked incomplete (``path`` claimed by this fit:
    :func:`claim_cache_dir`, which also checked that it holds nothing else: hence ``mode="a"``,
    as ``"w-"`` refuses a directory that holds the claim)."""
    root = zarr.open_group(str(path), mode="a", zarr_format=3)
    for name in set_names:
        root.create_group(name)
    root.attrs.update({"format": CACHE_FORMAT, "version": CACHE_VERSION, "complete": False,
                       "fingerprint": fingerprint(parts), "fingerprint_parts": parts,
                       "sets": list(set_names), "bytes_binned": int(bytes_binned)})


def finish_cache(path, pieces: dict, seconds_write: float) -> None:
    """Record every partition's pieces (``{set: [[Piece, ...] per partition]}``: rows, raw,
    EFB conflicts) and mark the cache complete (reusable). Temporary piece directories left by
    write attempts whose worker died (see :func:`write_piece`) are removed first."""
    for leftover in Path(path).glob(f"*/*/*{PIECE_TMP_SUFFIX}*"):
        shutil.rmtree(leftover, ignore_errors=True)
    root = zarr.open_group(str(path), mode="r+")
    root.attrs.update({"pieces": {k: [[[int(q.rows), bool(q.raw), [int(c) for c in q.conflicts]]
                                       for q in part] for part in v]
                                  for k, v in pieces.items()},
                       "seconds_write": float(seconds_write), "complete": True})
    Path(path, CLAIM_FILE).unlink(missing_ok=True)


def stored_pieces(attrs: dict, set_name: str) -> list:
    """The :class:`Piece` records of set ``set_name`` of a complete cache (from its attributes),
    one list per partition."""
    return [[Piece(int(r), bool(raw), tuple(int(c) for c in conf)) for r, raw, conf in part]
            for part in attrs["pieces"][set_name]]


def cached_bins(root, set_name: str, i: int, pieces, n_columns: int, dtype) -> CachedBins:
    """The :class:`CachedBins` reference of partition ``i`` of ``set_name`` from its pieces."""
    return CachedBins(partition_path(root, set_name, i),
                      (int(sum(q.rows for q in pieces)), int(n_columns)), np.dtype(dtype),
                      tuple((int(q.rows), bool(q.raw)) for q in pieces))


def piece_groups(chunk_rows, groups, raw_row_bytes) -> list:
    """Split each partition's chunks into pieces of at most ``PIECE_RAW_BYTES`` raw bytes.

    Parameters
    ----------
    chunk_rows : sequence of int
        Rows of each storage chunk.
    groups : list of (int, int)
        Chunk index ranges of the partitions (:func:`~oocgbdt.dask.partitions.group_chunks`).
    raw_row_bytes : int
        Bytes a raw row occupies in a write task (n_features x 4 for dense float32; the stored
        entries' bytes for sparse input).

    Returns
    -------
    list of list of (int, int)
        Per partition, the chunk index ranges of its pieces, in order. A piece is a run of
        consecutive chunks whose raw bytes stay within ``PIECE_RAW_BYTES``; a chunk larger than
        that is a piece of its own.
    """
    out = []
    for a, b in groups:
        pieces, start, size = [], a, 0
        for i in range(a, b):
            nbytes = int(chunk_rows[i]) * int(raw_row_bytes)
            if i > start and size + nbytes > PIECE_RAW_BYTES:
                pieces.append((start, i))
                start, size = i, 0
            size += nbytes
        pieces.append((start, b))
        out.append(pieces)
    return out


def write_piece(array_path: str, blocks, bin_mapper, bundler=None) -> Piece:
    """Task body: bin the raw ``blocks`` of one piece and write them to ``array_path`` as one Zarr
    array of one chunk (compressed with ``CODEC`` when that halves it, else raw).

    Parameters
    ----------
    array_path : str
        The piece's array directory (``<partition path>/<j>``). The piece is written under a
        temporary name beside it and renamed into place, so a reader never sees half a piece.
        If the directory exists already, an earlier attempt of this same task wrote it (Dask
        re-runs a task whose worker died, e.g. killed at its memory limit, after the rename):
        it is kept as it is, never overwritten; what this attempt wrote is removed.
    blocks : list of ndarray or scipy.sparse matrix, each of shape (rows_i, n_features)
        Consecutive raw storage chunks.
    bin_mapper, bundler : fitted BinMapper and FeatureBundler (or None)

    Returns
    -------
    Piece

    Raises
    ------
    RuntimeError
        The write pass was aborted (another piece failed): nothing is written.
    """
    _check_not_aborted(array_path)
    cols, conflicts = bin_raw_blocks(blocks, bin_mapper, bundler)
    _check_not_aborted(array_path)
    compress = compression_ratio(cols) <= COMPRESS_BELOW
    tmp = f"{array_path}{PIECE_TMP_SUFFIX}{uuid.uuid4().hex}"
    arr = zarr.create_array(store=tmp, shape=cols.shape, chunks=cols.shape,
                            dtype=cols.dtype, compressors=[CODEC] if compress else None,
                            zarr_format=3, overwrite=False)
    arr[...] = cols
    raw = False
    if not compress and (cols.dtype.itemsize == 1 or sys.byteorder == "little"):
        chunk = os.path.join(tmp, "c", *(["0"] * cols.ndim))
        # Zarr writes no chunk that equals the fill value (all zeros): read those through Zarr.
        raw = os.path.isfile(chunk) and os.path.getsize(chunk) == cols.nbytes
    try:
        os.rename(tmp, array_path)  # atomic; fails if array_path exists and is not empty
    except OSError:
        if not os.path.isdir(array_path):
            raise
        shutil.rmtree(tmp, ignore_errors=True)  # an earlier attempt's piece stays
    return Piece(int(cols.shape[0]), bool(raw), conflicts)


def compression_ratio(cols: np.ndarray) -> float:
    """Bytes of ``cols`` compressed with ``CODEC``'s settings over its raw bytes (1.0 if empty)."""
    if cols.nbytes == 0:
        return 1.0
    blosc = numcodecs.Blosc(cname=CODEC.cname.value, clevel=CODEC.clevel,
                            shuffle=numcodecs.Blosc.SHUFFLE)
    return len(blosc.encode(cols)) / cols.nbytes


def _check_not_aborted(array_path: str) -> None:
    set_dir = os.path.dirname(os.path.dirname(array_path))
    root = os.path.dirname(set_dir)
    if os.path.exists(os.path.join(root, ABORT_MARKER)) or not os.path.isdir(set_dir):
        raise RuntimeError(f"the write of disk cache {root!r} was aborted (another piece "
                           f"failed); piece {array_path!r} is not written.")


def abort_writes(root) -> None:
    """Mark the cache at ``root`` as abandoned: write tasks not yet writing give up at once."""
    Path(root, ABORT_MARKER).touch()


def cached_partition(ref: CachedBins, y_blocks, w_blocks, n_outputs: int, conflicts=(0, 0)):
    """Task body: a partition's PartitionData over bins already in the cache (no binning)."""
    y = np.concatenate([np.asarray(v) for v in y_blocks])
    if y.shape[0] != ref.shape[0]:
        raise ValueError(f"disk cache partition {ref.path!r} has {ref.shape[0]} rows but the "
                         f"labels of that partition have {y.shape[0]}.")
    w = None if w_blocks is None else np.concatenate([np.asarray(v) for v in w_blocks])
    data = partition_init(np.empty((y.shape[0], 0), dtype=ref.dtype), y, w, n_outputs)
    return replace(data, X_binned=ref, conflicts=tuple(int(c) for c in conflicts))


def directory_bytes(path) -> int:
    """Bytes of every file under ``path``."""
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def remove_cache(path, keep_dir: bool = False) -> None:
    """Delete a cache this fit created (its directory, or only its contents with ``keep_dir``)."""
    p = Path(path)
    if not p.exists():
        return
    if not keep_dir:
        shutil.rmtree(p, ignore_errors=True)
        return
    for child in p.iterdir():
        if child.is_dir():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def cluster_memory_bytes(client) -> int:
    """Total ``memory_limit`` of the cluster's workers, in bytes.

    Workers without a limit (0 or None) share their host's memory: each host with such workers
    adds at most this machine's physical memory, minus what the limited workers of that host
    already count (a host's memory is not counted once per unlimited worker).
    """
    import psutil
    machine = int(psutil.virtual_memory().total)
    limited, unlimited = {}, set()
    for w in cluster_workers(client).values():
        host = w.get("host") or w.get("address", "")
        limit = int(w.get("memory_limit") or 0)
        if limit:
            limited[host] = limited.get(host, 0) + limit
        else:
            unlimited.add(host)
    return int(sum(limited.values()) + sum(max(0, machine - limited.get(h, 0)) for h in unlimited))


def check_cache_path(params) -> tuple:
    """Check ``params["cache_path"]`` before any work; returns ``(path, stored, existed)``.

    ``path`` is absolute with ``~`` expanded (also written back into ``params``), or None;
    ``stored`` the attributes of a complete cache found there (:func:`inspect_cache_path`), or
    None; ``existed`` whether an empty directory was there before this fit (kept, emptied, if
    the write fails).

    Raises
    ------
    ValueError
        A path with ``cache="memory"``, an empty path, or one that is not usable
        (:func:`inspect_cache_path`).
    """
    cache_path = params["cache_path"]
    if cache_path is None:
        return None, None, False
    if params["cache"] == "memory":
        raise ValueError(f"cache_path={cache_path!r} was given with cache='memory'; the path "
                         f"is only used by cache='disk' (or 'auto'). Drop one of them.")
    if not str(cache_path).strip():
        raise ValueError(f"cache_path={cache_path!r} is empty; give a directory, or None for "
                         f"a temporary one.")
    cache_path = os.path.abspath(os.path.expanduser(cache_path))  # a str (resolve_params)
    params["cache_path"] = cache_path
    stored = inspect_cache_path(cache_path)  # raises now, before any work, if not ours
    return cache_path, stored, stored is None and os.path.isdir(cache_path)


def describe_bytes(n) -> str:
    return f"{n / 1e9:.3f} GB ({int(n)} bytes)"


def choose_cache(params, stored, local, client, bytes_binned) -> tuple:
    """``(mode, reason)``: where the binned rows live, ``"memory"`` or ``"disk"``
    (``cache="auto"``: memory when they fit in ``cache_memory_fraction`` of the workers'
    memory limits, or for NumPy input trained in process; disk to reuse a stored cache)."""
    mode = params["cache"]
    if mode != "auto":
        return mode, f"cache={mode!r} was asked for"
    if stored is not None:
        return "disk", f"reusing the cache at cache_path {params['cache_path']!r}"
    if local:
        return "memory", "NumPy input trained in this process: the rows are in memory already"
    total = cluster_memory_bytes(client)
    budget = float(params["cache_memory_fraction"]) * total
    if bytes_binned <= budget:
        return "memory", (f"binned rows {describe_bytes(bytes_binned)} <= cache_memory_fraction "
                          f"{params['cache_memory_fraction']} x worker memory {describe_bytes(total)}")
    return "disk", (f"binned rows {describe_bytes(bytes_binned)} > cache_memory_fraction "
                    f"{params['cache_memory_fraction']} x worker memory {describe_bytes(total)}")


def _edge_sha256(X, compute) -> str:
    """Hash of the first and last ``EDGE_ROWS`` rows of ``X`` (one small compute)."""
    k = min(EDGE_ROWS, X.shape[0])
    first, last = compute(X[:k], X[X.shape[0] - k:])
    h = hashlib.sha256()
    hash_rows(h, first)
    hash_rows(h, last)
    return h.hexdigest()


def _sample_sha256(X, params, compute) -> str:
    """Hash of the rows of ``X`` at the indices of a bin sample of its size (every row of a set
    of at most ``bin_construct_sample_cnt`` rows): the content part of an eval set's cache
    fingerprint."""
    h = hashlib.sha256()
    hash_rows(h, bin_sample(X, params, lambda a: compute(a)[0]))
    return h.hexdigest()


@dataclass
class DiskCache:
    """A fit's disk cache: where it is, whether this fit removes it at the end, the fingerprint
    parts of a new one (to :func:`create_cache`), and its pieces once written or reused (None
    until :func:`write_cache` has run on a new one)."""

    root: str
    remove: bool
    reused: bool
    parts: dict | None = None
    pieces: dict | None = None
    seconds_write: float | None = None


def open_disk_cache(params, sets, bounds, bin_mapper, bundler, train_sample, stored,
                    compute) -> DiskCache:
    """Fingerprint the fit's data and bins, then reuse the cache at ``cache_path`` (``stored``)
    or claim the directory of a new one (at ``cache_path``, else a temporary directory), which
    the caller then creates (:func:`create_cache`) and writes (:func:`write_cache`).

    Parameters
    ----------
    sets : list of (name, X, y, weight)
    bounds : dict of str to ndarray
        Per set, its partitions' row offsets.
    train_sample : ndarray
        The training rows the bin mapper sampled (hashed into the fingerprint).
    stored : dict or None
        The attributes of the complete cache at ``cache_path`` (:func:`check_cache_path`).
    compute : callable
        ``compute(*arrays)`` -> tuple of ndarray (small computes of edge and sample rows).

    Raises
    ------
    ValueError
        A stored cache whose fingerprint differs (naming the parts), or a new ``cache_path``
        that another fit claimed first (:func:`claim_cache_dir`); nothing is removed.
    """
    h = hashlib.sha256()
    hash_rows(h, train_sample)
    parts = fingerprint_parts(
        params, bin_mapper, bundler,
        {s: dict(shape=Xs.shape, bounds=bounds[s], edge_sha256=_edge_sha256(Xs, compute),
                 **({} if s == "train" else
                    {"sample_sha256": _sample_sha256(Xs, params, compute)}))
         for s, Xs, _, _ in sets}, h.hexdigest())
    cache_path = params["cache_path"]
    if cache_path is None:
        root = tempfile.mkdtemp(prefix="oocgbdt-cache-")
    else:
        root = cache_path
    if stored is not None:
        check_fingerprint(root, stored, parts)  # raises on any difference
        return DiskCache(root, remove=False, reused=True,
                         pieces={s: stored_pieces(stored, s) for s, *_ in sets})
    claim_cache_dir(root)  # raises, removing nothing, if not ours
    return DiskCache(root, remove=True, reused=False, parts=parts)  # removed until complete


def write_cache(sets, groups, root, bin_mapper, bundler, client, key, n_threads=None):
    """The disk cache's write pass: bin every piece of every set and write it under ``root``
    (the training set into ``bundler``'s bundles, eval sets per feature:
    :func:`~oocgbdt.dask.partitions.set_layout`).

    One task per piece (:func:`piece_groups`, :func:`write_piece`), with no worker
    restrictions: a worker holds one piece's raw rows per thread at a time, and Dask's queuing
    of root tasks bounds how many pieces are read ahead. Without a client the tasks run on a
    thread pool of this process. If a write fails, the others are stopped and waited for
    before the error propagates, so nothing writes into the cache directory once it is removed.

    Returns
    -------
    dict of str to list of list of Piece
        Per set, per partition, its pieces in row order.
    """
    bm = dask.delayed(bin_mapper, pure=True)
    bd = dask.delayed(bundler, pure=True) if bundler is not None else None
    tasks, layout = [], {}
    for s, Xs, _, _ in sets:
        set_bundler, n_columns, _ = set_layout(s, Xs.shape[1], bin_mapper, bundler)
        # Raw bytes per row held by a write task: dense float32 values; for sparse input (whose
        # stored entries are unknown before reading) 4 bytes per binned column.
        if is_sparse(Xs):
            row_bytes = 4 * n_columns
        else:
            row_bytes = Xs.shape[1] * np.dtype(Xs.dtype).itemsize
        blocks = row_blocks(Xs)
        layout[s] = piece_groups(Xs.chunks[0], groups[s], row_bytes)
        for i, part in enumerate(layout[s]):
            for j, (a, b) in enumerate(part):
                path = os.path.join(partition_path(root, s, i), str(j))
                tasks.append(dask.delayed(write_piece, pure=False)(
                    path, blocks[a:b], bm, None if set_bundler is None else bd,
                    dask_key_name=f"{key}-write-{s}-{i}-{j}"))
    futures = None
    try:
        if client is None:
            with ThreadPoolExecutor(n_threads or os.cpu_count() or 1) as pool:
                written = list(dask.compute(*tasks, scheduler="threads", pool=pool))
        else:
            futures = client.compute(tasks)
            written = client.gather(futures)
    except BaseException:
        abort_writes(root)
        if futures is not None:
            from distributed import wait
            with client.as_current():  # running writes end, pending ones give up
                wait(futures)
        raise
    out, it = {}, iter(written)
    for s, part_list in layout.items():
        out[s] = [[next(it) for _ in part] for part in part_list]
    return out


def cached_partition_tasks(y, weight, groups, pieces, root, set_name, n_columns, dtype,
                           n_outputs, key):
    """Delayed :class:`~oocgbdt.core.partition.PartitionData` per partition of one set (``groups``:
    its chunk index ranges), over its cached bins (``pieces``: per partition its :class:`Piece`
    records, in row order): labels and weights only are read (:func:`cached_partition`), under
    the Dask key ``f"{key}-{i}"``.
    """
    ys, ws = row_blocks(y), row_blocks(weight)
    tasks = []
    for i, ((a, b), q) in enumerate(zip(groups, pieces)):
        ref = cached_bins(root, set_name, i, q, n_columns, dtype)
        conflicts = tuple(sum(p.conflicts[k] for p in q) for k in range(2))
        tasks.append(dask.delayed(cached_partition, pure=True)(
            ref, ys[a:b], None if ws is None else ws[a:b], n_outputs, conflicts,
            dask_key_name=f"{key}-{i}"))
    return tasks
