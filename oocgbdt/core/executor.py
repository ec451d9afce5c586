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
import threading
import time
from collections import defaultdict, deque
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Callable, Protocol, runtime_checkable

__all__ = ["Executor", "LocalExecutor", "KernelThreads", "tree_reduce", "reduce_levels",
           "EVERYWHERE", "PEER_WAIT", "fit_threads", "inline_task"]

#: ``place`` of a step that every place of a remote executor runs, each on its own copy of the
#: inputs (its result is then held everywhere); a single-place executor runs it once.
EVERYWHERE = -1

#: Key of :attr:`Executor.seconds` under which a place of a remote executor counts the seconds
#: its steps waited for inputs that other places push to it (partial histograms, gathered
#: values); an in-process executor never waits so.
PEER_WAIT = "peer_wait"


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
        several), and under :data:`PEER_WAIT` the seconds spent waiting for values pushed by
        other places.
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


class _WorkList:
    """Calls shared out to several threads: each thread runs :meth:`drain`, which takes calls
    until none is queued or running. A call may return further calls (a list, or None), queued
    at the front (so a partition's column blocks follow its routing while its rows are in
    cache). The first exception is kept; the calls still queued then run (their effects are
    discarded with the error) so that every thread returns."""

    def __init__(self, calls):
        self.queue = deque(calls)
        self.pending = len(self.queue)  # queued or running
        self.cond = threading.Condition(threading.Lock())
        self.error = None

    def drain(self):
        cond, queue = self.cond, self.queue
        while True:
            with cond:
                while not queue and self.pending:
                    cond.wait()
                if not queue:
                    return
                call = queue.popleft()
            more = None
            try:
                more = call()
            except BaseException as e:
                if self.error is None:
                    self.error = e
            with cond:
                if more:
                    queue.extendleft(reversed(more))
                    self.pending += len(more)
                self.pending -= 1
                if not self.pending or more:
                    cond.notify_all()


class KernelThreads:
    """The threads of an in-process executor, shared out within a task: a pass's routing and
    column blocks (:meth:`share`), the split searches of a pass's children
    (:func:`~oocgbdt.core.partition.finish_split_many`). Each call is the one a single thread
    would make on the same inputs, so results are bit-identical.

    The calling thread works too: :meth:`share` hands the pool ``n_threads - 1`` loops over one
    list of calls (not a future per call) and runs the same loop itself. A future per call cost
    about 25 us of Python under the GIL each, a third of a 400k x 50 pass (12 calls: 4
    partitions routed, 8 blocks built); as a list, a call costs a lock and a deque operation.

    Parameters
    ----------
    pool : concurrent.futures.ThreadPoolExecutor
        The executor's pool (owned by it; never waited on from one of its own threads).
    n_threads : int
        Threads that work on a shared list, this one included (the pool has at least
        ``n_threads - 1``).
    """

    def __init__(self, pool, n_threads: int):
        self._pool = pool
        self.n_threads = int(n_threads)

    def share(self, calls, spawns: bool = False) -> None:
        """Run ``calls`` (callables without arguments), and every call they return (each may
        return a list of more calls), on this thread and ``n_threads - 1`` of the pool's;
        return once all have run. The first exception is raised (after every call ended).

        ``spawns``: the calls may return more, so the pool joins in even for a single call
        (a pass over one partition, whose routing returns its column blocks); otherwise a
        single call runs on this thread alone."""
        work = _WorkList(calls)
        if len(work.queue) > 1 or (spawns and work.queue):
            for _ in range(self.n_threads - 1):
                self._pool.submit(work.drain)
        work.drain()
        # The pool's loops return on their own: no call is left, and nothing waits for them.
        if work.error is not None:
            raise work.error

    def run(self, calls) -> list:
        """``[call() for call in calls]``, shared out as :meth:`share` (this thread working
        too). Exceptions propagate (after every call has ended)."""
        out = [None] * len(calls)

        def store(i, call):
            out[i] = call()

        self.share([partial(store, i, c) for i, c in enumerate(calls)])
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
            out = self.kernel_threads.run([partial(fn, *args) for args in calls])
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
