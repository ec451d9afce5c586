"""This module contains how training finds its Dask cluster, and the embedded cluster.

The ``client=`` given, else the current default client (for example one wrapping a
dask-jobqueue ``SLURMCluster``), else an embedded ``LocalCluster`` sized to this machine that is
closed when training ends (:func:`embedded_client`). A client is never stored in a fitted model.
:func:`connect` opens a client of a running scheduler by its address, and
:func:`wait_for_workers` holds a fit until its cluster has the workers it needs, and
:func:`retire_workers` retires the workers a fit was asked to let go.
"""
from __future__ import annotations

import logging
import os
import sys
import time
from contextlib import contextmanager

__all__ = ["find_client", "client_for_training", "embedded_threads", "embedded_client",
           "connect", "wait_for_workers", "retire_workers", "cluster_workers"]

logger = logging.getLogger("oocgbdt")


def cluster_workers(client) -> dict:
    """The cluster's workers now, ``{address: info}``, as the scheduler reports them.

    Fetched from the scheduler at each call. ``Client.scheduler_info()`` returns the client's
    cached identity, which its periodic refresh replaces with cluster totals only (no
    workers): a refresh landing between that method's fetch and its return makes the cluster
    look empty. An asynchronous client gets its cached value (it cannot be waited on here),
    as does an object that only offers ``scheduler_info()``.
    """
    if getattr(client, "asynchronous", False) or not hasattr(client, "scheduler"):
        return client.scheduler_info()["workers"]
    return client.sync(client.scheduler.identity, n_workers=-1)["workers"]


def find_client(client=None):
    """The given client; else, outside a Dask task, the default client; else None.

    Inside a Dask task (a fit that a task runs, such as one candidate of a dask-ml search) the
    default client is that of the cluster the task runs on: a fit that waited on it from the
    task's thread could wait for the very worker it holds. There a fit uses only the client it
    is given; without one, NumPy input trains in the task's process.
    """
    if client is not None:
        return client
    from distributed import default_client, get_worker
    try:
        get_worker()
    except ValueError:
        pass
    else:
        return None
    try:
        return default_client()
    except ValueError:
        return None


def embedded_threads() -> int:
    """Threads of the embedded cluster's worker: one per core of this machine.

    Returns
    -------
    int
    """
    return os.cpu_count() or 1


@contextmanager
def embedded_client(threads: int | None = None):
    """Start a ``LocalCluster`` on this machine, yield a client of it, then close both.

    The cluster has one in-process worker (``processes=False``) and no dashboard port of its
    own (``dashboard_address=":0"``): the numba kernels release the GIL, so threads use every
    core without copying chunks between processes. The client is not made the default one.

    Parameters
    ----------
    threads : int, optional
        Threads of the worker; default :func:`embedded_threads` (one per core).

    Yields
    ------
    distributed.Client
    """
    from distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=1, threads_per_worker=threads or embedded_threads(),
                           processes=False, dashboard_address=":0")
    try:
        with Client(cluster, set_as_default=False) as c:
            yield c
    finally:
        cluster.close()


@contextmanager
def client_for_training(client=None):
    """Yield a client; start (and afterwards close) an embedded cluster if there is none.

    The client is ``client``, else the default client (:func:`find_client`), else one of an
    :func:`embedded_client` closed when the ``with`` block ends.
    """
    found = find_client(client)
    if found is not None:
        yield found
        return
    with embedded_client() as c:
        yield c


def connect(address: str, timeout: str = "20s"):
    """A client of the Dask scheduler at ``address`` (not made the default client).

    Parameters
    ----------
    address : str
        The scheduler's address, such as ``tcp://10.0.0.1:8786``.
    timeout : str, default "20s"
        How long to try to connect.

    Returns
    -------
    distributed.Client
        Close it when done (``client.close()``).

    Raises
    ------
    OSError, TimeoutError
        No scheduler answered at ``address`` in time.
    """
    from distributed import Client
    return Client(address, timeout=timeout, set_as_default=False)


def wait_for_workers(client, min_workers: int = 1, timeout: float = 600.0, *,
                     verbose: bool = False, poll: float = 0.2) -> int:
    """Wait until ``client``'s cluster has at least ``min_workers`` workers; their number.

    While there are fewer, the count is logged (``"waiting for workers: 0 of 2"``, a warning
    the first time, then each change) and, with ``verbose``, printed to standard error where
    the progress bar goes. The scheduler is asked every ``poll`` seconds (``Client.nthreads``),
    so workers that join (a ``SLURMCluster``'s queued jobs, ``cluster.scale``) end the wait.

    Parameters
    ----------
    client : distributed.Client
    min_workers : int >= 1, default 1
        Parameter ``min_workers``.
    timeout : float > 0, default 600
        Seconds to wait at most (parameter ``worker_wait_timeout``).
    verbose : bool, default False
    poll : float, default 0.2
        Seconds between two counts.

    Returns
    -------
    int
        The workers the cluster has (at least ``min_workers``).

    Raises
    ------
    TimeoutError
        Fewer than ``min_workers`` workers after ``timeout`` seconds; the message names both.
    """
    n = len(client.nthreads())
    if n >= min_workers:
        return n
    start = time.monotonic()
    last = None
    while True:
        if n != last:
            message = (f"waiting for workers: {n} of {min_workers} (min_workers; at most "
                       f"{timeout:g} s, worker_wait_timeout)")
            (logger.warning if last is None else logger.info)(message)
            if verbose:
                print(message, file=sys.stderr, flush=True)
            last = n
        waited = time.monotonic() - start
        if waited >= timeout:
            raise TimeoutError(
                f"the cluster has {n} of the {min_workers} worker(s) the fit needs "
                f"(min_workers={min_workers}) after waiting {timeout:g} s "
                f"(worker_wait_timeout={timeout:g}); start workers or scale the cluster, or "
                f"raise worker_wait_timeout or lower min_workers.")
        time.sleep(min(poll, timeout - waited))
        n = len(client.nthreads())
        if n >= min_workers:
            message = f"waiting for workers: {n} of {min_workers}, starting"
            logger.info(message)
            if verbose:
                print(message, file=sys.stderr, flush=True)
            return n


def retire_workers(client, addresses, timeout: float = 10.0, poll: float = 0.1) -> list:
    """Retire the workers ``addresses`` once the fit's shards on them are closed
    (``Client.retire_workers`` with its defaults, asked again every ``poll`` seconds while the
    scheduler still refuses because it has not yet forgotten their actors); the addresses
    retired. Ones still refused after ``timeout`` seconds are logged and stay in the cluster:
    the fit goes on with them."""
    left = [a for a in addresses if a in cluster_workers(client)]
    deadline = time.monotonic() + timeout
    retired = []
    while left:
        retired += list(client.retire_workers(workers=left))
        left = [a for a in left if a not in retired and a in cluster_workers(client)]
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(poll)
    if left:
        logger.warning(f"worker(s) {', '.join(left)} could not be retired in {timeout:g} s; "
                       f"the fit goes on with them")
    return retired
