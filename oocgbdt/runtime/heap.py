"""This module contains how a worker's C heap (glibc ``malloc``) is set while it trains.

Why: a Dask nanny starts its worker with ``MALLOC_TRIM_THRESHOLD_=65536`` (distributed's
``distributed.nanny.pre-spawn-environ``) so that freed memory goes back to the OS. Fixing that
threshold also turns off glibc's adaptive thresholds: every block of 128 KiB or more is then
``mmap``-ed and unmapped again when freed, and the top of a heap is returned above 64 KiB. A
boosting pass makes histograms (612 KB per leaf for 100 features of 255 bins), a row order per
partition (4 bytes per row) and their sums, so on such a worker every pass page-faults its whole
working set again. Measured on the 1M x 100 benchmark task, in one process: 122k minor page faults
per tree instead of 3.2k, 0.61 s per tree instead of 0.37.

While a worker trains (:func:`training_heap`), its heap uses the values glibc's adaptive
thresholds reach at most on their own (``mmap`` above 32 MiB, trim above 64 MiB: mallopt(3)).
When the last fit on that worker ends, the thresholds from its environment are set again. A
process whose environment fixes neither threshold is adaptive already and is left alone; so is a
C library other than glibc.
"""
from __future__ import annotations

import ctypes
import gc
import os
import threading
from contextlib import contextmanager

__all__ = ["training_heap", "fixed_thresholds", "release_heap", "TRAINING_MMAP_THRESHOLD",
           "TRAINING_TRIM_THRESHOLD"]

#: Bytes from which a block is mmap-ed while training (glibc's adaptive maximum, 64-bit).
TRAINING_MMAP_THRESHOLD = 32 * 1024 * 1024
#: Free bytes at the top of a heap above which it is trimmed while training (2 x the above, as
#: glibc's adaptive rule sets it).
TRAINING_TRIM_THRESHOLD = 64 * 1024 * 1024
#: glibc's fixed defaults, used to restore a threshold the environment does not name.
_DEFAULT_THRESHOLD = 128 * 1024

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt parameter numbers (<malloc.h>)
_ENV = {"trim": ("MALLOC_TRIM_THRESHOLD_", "glibc.malloc.trim_threshold"),
        "mmap": ("MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap_threshold")}

_lock = threading.Lock()
_active = 0  # fits training in this process now


def _libc():
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt  # noqa: B018 - raises AttributeError if absent
    except (OSError, AttributeError):
        return None
    return libc


def fixed_thresholds(environ=None) -> dict:
    """The malloc thresholds the environment fixes, in bytes: ``{"trim": int, "mmap": int}``
    entries for those set by ``MALLOC_TRIM_THRESHOLD_`` / ``MALLOC_MMAP_THRESHOLD_`` or by
    ``GLIBC_TUNABLES`` (``glibc.malloc.trim_threshold`` / ``glibc.malloc.mmap_threshold``).

    Parameters
    ----------
    environ : mapping of str to str, optional
        Default ``os.environ``.

    Returns
    -------
    dict of str to int
        Empty when the environment fixes neither (glibc's thresholds are then adaptive).
        Values that are not integers are ignored, as glibc ignores them.
    """
    environ = os.environ if environ is None else environ
    tunables = {}
    for item in environ.get("GLIBC_TUNABLES", "").replace(":", " ").split():
        name, _, value = item.partition("=")
        tunables[name] = value
    out = {}
    for which, (var, tunable) in _ENV.items():
        for raw in (environ.get(var), tunables.get(tunable)):
            try:
                out[which] = int(str(raw), 0)
                break
            except ValueError:
                continue
    return out


@contextmanager
def training_heap():
    """Within this block, this process's malloc thresholds are the ones glibc adapts to on its
    own (see the module docstring); on leaving the last such block, the environment's.

    Nested and concurrent blocks (two fits on one worker) share one setting: it is made by the
    first to enter and restored by the last to leave. Outside glibc, or when the environment
    fixes neither threshold, nothing is changed.
    """
    global _active
    libc = _libc()
    fixed = fixed_thresholds()
    if libc is None or not fixed:
        yield
        return
    with _lock:
        if _active == 0:
            libc.mallopt(_M_MMAP_THRESHOLD, TRAINING_MMAP_THRESHOLD)
            libc.mallopt(_M_TRIM_THRESHOLD, TRAINING_TRIM_THRESHOLD)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                libc.mallopt(_M_MMAP_THRESHOLD, fixed.get("mmap", _DEFAULT_THRESHOLD))
                libc.mallopt(_M_TRIM_THRESHOLD, fixed.get("trim", _DEFAULT_THRESHOLD))
                libc.malloc_trim(0)  # what the training thresholds kept goes back now


def release_heap():
    """Collect garbage and return freed heap pages to the OS (glibc's ``malloc_trim``; nothing
    elsewhere). Run on every worker after the partitions are loaded: reading raw partitions
    leaves freed heap that glibc keeps, and the worker's memory limit watches what it holds."""
    gc.collect()
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
