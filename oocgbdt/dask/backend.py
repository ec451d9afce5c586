"""This module contains :class:`DaskBackend`: the core's task backend over a ``distributed.Client``.

Handles are futures: chunk state, partial histograms and leaf histograms stay on the workers;
only what :meth:`DaskBackend.gather` asks for (split records, metric sums) reaches the client.
"""
from __future__ import annotations

__all__ = ["DaskBackend"]


class DaskBackend:
    """Run :mod:`oocgbdt.core.chunk` task bodies on a Dask cluster.

    Parameters
    ----------
    client : distributed.Client
    """

    def __init__(self, client):
        self.client = client

    def scatter(self, obj):
        # A list of one element: scatter() would split a dict into one future per key.
        return self.client.scatter([obj], broadcast=True, hash=False)[0]

    def map(self, fn, *iterables, key=None, consume=None):
        # ``consume`` (see LocalBackend.map): Dask frees inputs once no future refers to them.
        iterables = [list(it) for it in iterables]
        n = len(iterables[0])
        keys = None if key is None else [f"{key}-{i}" for i in range(n)]
        if keys is None:
            return self.client.map(fn, *iterables, pure=False)
        return self.client.map(fn, *iterables, key=keys, pure=False)

    def submit(self, fn, *args, key=None, place=None):
        # ``place`` (a shard index of the actor backend) has no meaning for tasks: ignored.
        if key is None:
            return self.client.submit(fn, *args, pure=False)
        return self.client.submit(fn, *args, key=key, pure=False)

    def gather(self, handles):
        return self.client.gather(handles)

    def close(self):
        pass
