"""This module contains the contract of an executor (:class:`Executor`), the in-process
:class:`LocalExecutor`, and the fan-in reductions every executor runs (:func:`tree_reduce`,
:func:`reduce_levels`).

An executor runs the task bodies of :mod:`oocgbdt.core.partition` where the partitions live and
hands back handles to their results: the boosting loop (:func:`oocgbdt.core.boosting.boost`)
and the :class:`~oocgbdt.core.histogram_source.HistogramSource` are written once, against
:class:`Executor`. :class:`LocalExecutor` runs them in this process (handles are the values);
the runtime layer's executors run them on Dask actors that hold the partitions
(:mod:`oocgbdt.runtime`). All run the same functions with the same reduction order, so they
give bit-identical models.
"""
from __future__ import annotations

import os
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Protocol, runtime_checkable

__all__ = ["Executor", "LocalExecutor", "KernelThreads", "tree_reduce", "reduce_levels",
           "EVERYWHERE", "fit_threads", "inline_task"]

#: ``place`` of a step that every place of a remote executor runs, each on its own copy of the
#: inputs (its result is then held everywhere); a single-place executor runs it once.
EVERYWHERE = -1


@runtime_checkable
class Executor(Protocol):
    """What the boosting loop needs from the place its partitions live.

    Handles are opaque: whatever :meth:`scatter`, :meth:`map` and :meth:`submit` return may be
    passed, alone or inside lists and tuples, as arguments of later calls, and turned into
    values by :meth:`gather`.

    Attributes
    ----------
    n_feature_blocks : int
        How many places a pass's split search can be shared out to, by blocks of features
        (:func:`oocgbdt.core.split.feature_blocks`); 1: one place searches every feature.
    replicate_search : bool
        Whether every place sums a pass's partial histograms and searches every feature
        itself, so that split records need not travel.
    seconds : dict of str to float
        Seconds spent per task function name so far (the busiest place's, where there are
        several).
    """

    n_feature_blocks: int
    replicate_search: bool

    @property
    def seconds(self) -> dict: ...

    def scatter(self, obj: Any) -> Any:
        """A handle of ``obj`` held where every task can read it."""

    def map(self, fn: Callable, *iterables, key: str | None = None,
            consume: int | None = None) -> list:
        """Handles of ``fn(*args)`` for ``args`` in ``zip(*iterables)``, each run where its
        inputs live. ``consume``: index of an iterable whose handles the caller will not use
        again (an executor may free each as soon as its output exists)."""

    def submit(self, fn: Callable, *args, key: str | None = None, place: int | None = None) -> Any:
        """A handle of ``fn(*args)``, run at ``place`` (:data:`EVERYWHERE`: at every place on
        its own copy), by default where most of its inputs live."""

    def gather(self, handles: Any) -> Any:
        """``handles`` (a handle, or lists and tuples of them) with their values."""

    def close(self) -> None:
        """Release what the executor holds."""


def inline_task(fn):
    """Mark a task body that only picks part of its input (no computation): an executor on
    threads runs its ``map`` on the calling thread, where a hand-off to a pool thread would
    cost more than the task (about 0.1 ms per pass measured in process)."""
    fn.inline_task = True
    return fn


def fit_threads(num_threads, available=None) -> int:
    """Threads a fit uses, from the ``num_threads`` parameter (LightGBM's, alias ``n_jobs``).

    Parameters
    ----------
    num_threads : int
        > 0: that many; 0: ``available``; < 0: ``available + 1 + num_threads`` (joblib's rule
        for ``n_jobs``, as LightGBM's estimators read it), at least 1.
    available : int, optional
        The threads there are: a Dask worker's threads, or (default) the machine's cores.

    Returns
    -------
    int
        At least 1.
    """
    if available is None:
        available = os.cpu_count() or 1
    n = int(num_threads)
    if n > 0:
        return n
    return max(1, int(available) + 1 + n if n < 0 else int(available))


class KernelThreads:
    """The threads of an in-process executor, as the boosting loop's own thread shares work out
    to them between tasks: the split searches of a pass's children
    (:func:`~oocgbdt.core.partition.finish_split_many`). Each call is the one a single thread
    would make on the same inputs, so results are bit-identical.

    Parameters
    ----------
    pool : concurrent.futures.ThreadPoolExecutor
        The executor's pool (owned by it; never waited on from one of its own threads).
    n_threads : int
        Its threads.
    """

    def __init__(self, pool, n_threads: int):
        self._pool = pool
        self.n_threads = int(n_threads)

    def submit(self, fn, *args):
        """A future of ``fn(*args)`` run on the pool (for a task on the pool to queue more
        work it never waits for itself)."""
        return self._pool.submit(fn, *args)

    def run(self, calls) -> list:
        """``[call() for call in calls]``, every call on the pool, this thread waiting.
        Exceptions propagate (after every call has ended)."""
        futures = [self._pool.submit(c) for c in calls]
        out, error = [], None
        for f in futures:
            try:
                out.append(f.result())
            except BaseException as e:  # wait for the others before raising
                error = error or e
        if error is not None:
            raise error
        return out

    def __reduce__(self):
        # Never sent anywhere: a remote task body gets None (one thread).
        raise TypeError("KernelThreads cannot be pickled; remote task bodies run on one thread")


class LocalExecutor:
    """Run tasks immediately in this process.

    Parameters
    ----------
    n_threads : int, default 1
        Threads used by :meth:`map` (one task per chunk; the numba kernels release the GIL).
        With more than one, :attr:`kernel_threads` shares them out within a pass as well: the
        histogram source builds a pass's histograms by column blocks of every partition on
        them (:func:`~oocgbdt.core.partition.block_count`), and searches a pass's children
        at once.

    Attributes
    ----------
    seconds : dict of str to float
        Wall-clock seconds spent per task function name (``map`` counts its parallel wall time).
    """

    n_feature_blocks = 1
    replicate_search = False

    def __init__(self, n_threads: int = 1):
        self.n_threads = max(1, int(n_threads))
        self._pool = ThreadPoolExecutor(self.n_threads) if self.n_threads > 1 else None
        self.kernel_threads = (KernelThreads(self._pool, self.n_threads) if self._pool is not None
                               else None)
        self.seconds = defaultdict(float)

    def scatter(self, obj):
        return obj

    def map(self, fn, *iterables, key=None, consume=None):
        """``[fn(*args) for args in zip(*iterables)]`` on the threads.

        ``consume``: index of an iterable whose handles the caller will not use again (a
        hint that lets a remote executor free each input as soon as its output exists; here
        the caller's references keep the values alive, so it changes nothing).
        """
        t0 = time.perf_counter()
        calls = list(zip(*iterables))
        if self._pool is None or len(calls) <= 1 or getattr(fn, "inline_task", False):
            out = [fn(*args) for args in calls]  # nothing to share out: no hand-off
        else:
            out = list(self._pool.map(fn, *zip(*calls)))
        self.seconds[fn.__name__] += time.perf_counter() - t0
        return out

    def submit(self, fn, *args, key=None, place=None):
        """``fn(*args)`` now. ``place`` (where a remote executor runs the step) is ignored."""
        t0 = time.perf_counter()
        out = fn(*args)
        self.seconds[fn.__name__] += time.perf_counter() - t0
        return out

    def gather(self, handles):
        return handles

    def close(self):
        if self._pool is not None:
            self._pool.shutdown()


def reduce_levels(executor, combine, handles, split_every: int, key: str, extra=()):
    """Combine ``handles`` level by level until at most ``split_every`` remain; returns them.

    The caller's final task takes the remaining list directly, which saves one dependent task
    (one scheduler round trip on a cluster) per reduction.
    """
    level = 0
    handles = list(handles)
    while len(handles) > split_every:
        groups = [handles[i:i + split_every] for i in range(0, len(handles), split_every)]
        handles = [executor.submit(combine, g, *extra, key=f"{key}-l{level}-{i}")
                   for i, g in enumerate(groups)]
        level += 1
    return handles


def tree_reduce(executor, combine, handles, split_every: int, key: str, extra=()):
    """Reduce ``handles`` with ``combine(list_of_parts, *extra)`` in a fan-in tree.

    Groups of at most ``split_every`` consecutive handles are combined level by level, always in
    chunk order, so the floating-point summation order does not depend on where tasks run.
    """
    level = 0
    while len(handles) > 1:
        groups = [handles[i:i + split_every] for i in range(0, len(handles), split_every)]
        handles = [executor.submit(combine, g, *extra, key=f"{key}-l{level}-{i}")
                   for i, g in enumerate(groups)]
        level += 1
    return handles[0] if level else executor.submit(combine, handles, *extra, key=f"{key}-l0-0")
