"""This module contains the JIT policy shared by every numba kernel.

Kernels are compiled with ``cache=True`` (compile once per machine, not per process) and
``nogil=True`` (Dask runs chunks on threads; kernels must release the GIL). They are serial:
Dask already runs one task per chunk in parallel.
"""
import numba

__all__ = ["njit"]


def njit(*args, **kwargs):
    """``numba.njit`` with oocgbdt's defaults (``cache=True, nogil=True``)."""
    kwargs.setdefault("cache", True)
    kwargs.setdefault("nogil", True)
    return numba.njit(*args, **kwargs)
