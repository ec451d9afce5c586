"""This module contains how training finds its Dask cluster.

The ``client=`` given, else the current default client (for example one wrapping a
dask-jobqueue ``SLURMCluster``), else an embedded ``LocalCluster`` sized to this machine that is
closed when training ends. A client is never stored in a fitted model.
"""
from __future__ import annotations

import os
from contextlib import contextmanager

__all__ = ["find_client", "client_for_training"]


def find_client(client=None):
    """The given client, else the default client, else None."""
    if client is not None:
        return client
    from distributed import default_client
    try:
        return default_client()
    except ValueError:
        return None


@contextmanager
def client_for_training(client=None):
    """Yield a client; start (and afterwards close) an embedded LocalCluster if there is none.

    The embedded cluster has one in-process worker with one thread per core: the numba kernels
    release the GIL, so threads use every core without copying chunks between processes.
    """
    found = find_client(client)
    if found is not None:
        yield found
        return
    from distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=1, threads_per_worker=os.cpu_count() or 1, processes=False,
                           dashboard_address=":0")
    try:
        with Client(cluster, set_as_default=False) as c:
            yield c
    finally:
        cluster.close()
