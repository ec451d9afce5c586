"""This module contains how training finds its Dask cluster, and the embedded cluster.

The ``client=`` given, else the current default client (for example one wrapping a
dask-jobqueue ``SLURMCluster``), else an embedded ``LocalCluster`` sized to this machine that is
closed when training ends (:func:`embedded_client`). A client is never stored in a fitted model.
:func:`connect` opens a client of a running scheduler by its address.
"""
from __future__ import annotations

import os
from contextlib import contextmanager

__all__ = ["find_client", "client_for_training", "embedded_threads", "embedded_client",
           "connect"]


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
