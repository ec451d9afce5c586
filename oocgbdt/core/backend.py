"""This module contains the execution backends that run task bodies from :mod:`oocgbdt.core.chunk`.

A backend is anything with ``scatter``, ``map``, ``submit`` and ``gather``: the Dask layer
provides one over a ``distributed.Client`` (handles are futures, results stay on workers); the
:class:`LocalBackend` here runs the same functions in-process (handles are the values), so the
tree grower and the boosting loop run in tests, and on NumPy input, without a cluster. Both run
the same functions with the same reduction order, so they give bit-identical models.
"""
from __future__ import annotations

import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

__all__ = ["LocalBackend", "tree_reduce", "reduce_levels", "EVERYWHERE"]

#: ``place`` of a step that every place of a remote backend runs, each on its own copy of the
#: inputs (its result is then held everywhere); a single-place backend runs it once.
EVERYWHERE = -1


class LocalBackend:
    """Run tasks immediately in this process.

    Parameters
    ----------
    n_threads : int, default 1
        Threads used by :meth:`map` (one task per chunk; the numba kernels release the GIL).

    Attributes
    ----------
    seconds : dict of str to float
        Wall-clock seconds spent per task function name (``map`` counts its parallel wall time).
    """

    def __init__(self, n_threads: int = 1):
        self.n_threads = max(1, int(n_threads))
        self._pool = ThreadPoolExecutor(self.n_threads) if self.n_threads > 1 else None
        self.seconds = defaultdict(float)

    def scatter(self, obj):
        return obj

    def map(self, fn, *iterables, key=None, consume=None):
        """``[fn(*args) for args in zip(*iterables)]`` on the threads.

        ``consume``: index of an iterable whose handles the caller will not use again (a
        hint that lets a remote backend free each input as soon as its output exists; here
        the caller's references keep the values alive, so it changes nothing).
        """
        t0 = time.perf_counter()
        if self._pool is None:
            out = [fn(*args) for args in zip(*iterables)]
        else:
            out = list(self._pool.map(fn, *iterables))
        self.seconds[fn.__name__] += time.perf_counter() - t0
        return out

    def submit(self, fn, *args, key=None, place=None):
        """``fn(*args)`` now. ``place`` (where a remote backend runs the step) is ignored."""
        t0 = time.perf_counter()
        out = fn(*args)
        self.seconds[fn.__name__] += time.perf_counter() - t0
        return out

    def gather(self, handles):
        return handles

    def close(self):
        if self._pool is not None:
            self._pool.shutdown()


def reduce_levels(backend, combine, handles, split_every: int, key: str, extra=()):
    """Combine ``handles`` level by level until at most ``split_every`` remain; returns them.

    The caller's final task takes the remaining list directly, which saves one dependent task
    (one scheduler round trip on a cluster) per reduction.
    """
    level = 0
    handles = list(handles)
    while len(handles) > split_every:
        groups = [handles[i:i + split_every] for i in range(0, len(handles), split_every)]
        handles = [backend.submit(combine, g, *extra, key=f"{key}-l{level}-{i}")
                   for i, g in enumerate(groups)]
        level += 1
    return handles


def tree_reduce(backend, combine, handles, split_every: int, key: str, extra=()):
    """Reduce ``handles`` with ``combine(list_of_parts, *extra)`` in a fan-in tree.

    Groups of at most ``split_every`` consecutive handles are combined level by level, always in
    chunk order, so the floating-point summation order does not depend on where tasks run.
    """
    level = 0
    while len(handles) > 1:
        groups = [handles[i:i + split_every] for i in range(0, len(handles), split_every)]
        handles = [backend.submit(combine, g, *extra, key=f"{key}-l{level}-{i}")
                   for i, g in enumerate(groups)]
        level += 1
    return handles[0] if level else backend.submit(combine, handles, *extra, key=f"{key}-l0-0")
