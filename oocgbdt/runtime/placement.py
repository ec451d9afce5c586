"""This module contains :func:`load_partitions`: running the tasks that load a fit's partitions
(read, bin, bundle, per-row state) where the boosting loop will use them.

In process the tasks run on a thread pool here; on one worker they run on that worker, which
then holds every partition; on several workers each partition's task is pinned to the worker of
the shard that will hold it (:func:`compute_placed`), and the results are handed to the shards
(:meth:`~oocgbdt.runtime.actor_executor.ActorExecutor.adopt`).
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import dask

from oocgbdt.core.partition import partition_conflict_stats

__all__ = ["load_partitions", "compute_placed"]


def compute_placed(client, executor, tasks):
    """Futures of ``tasks`` (one per partition), each computed on the worker of the shard that
    will hold it (:meth:`~oocgbdt.runtime.queue.OperationQueue.owner_of_partition`).

    The restriction is loose (``allow_other_workers=True``): ``distributed`` applies it to
    every task of the graph, the input's chunks included, and keeps it on their keys. Strict,
    the chunks a lost worker held could run nowhere else, and a fit going on after the loss,
    whose graph reads the same chunks, would wait for that worker forever. Loose, they run on
    the shard's worker while it is there, elsewhere once it is gone; a shard takes a partition
    computed elsewhere from that worker (:meth:`~oocgbdt.runtime.shard.Shard.load`)."""
    n = len(tasks)
    futures = [None] * n
    for o, worker in enumerate(executor.workers):
        mine = [i for i in range(n) if executor.owner_of_partition(i, n) == o]
        if mine:
            for i, f in zip(mine, client.compute([tasks[i] for i in mine], workers=[worker],
                                                 allow_other_workers=True)):
                futures[i] = f
    return futures


def load_partitions(task_sets, client, executor=None, n_threads=None):
    """Run the loading tasks of every set (one :class:`~oocgbdt.core.partition.PartitionData`
    per partition).

    Parameters
    ----------
    task_sets : dict of str to list of dask.delayed.Delayed
        Per set (``"train"``, ``"eval_0"``, ...), one task per partition, in row order.
    client : distributed.Client or None
        None: the tasks run on a thread pool of this process.
    executor : ActorExecutor, optional
        With several workers: each partition is computed on the worker of the shard that
        holds it, then handed to the shards.

    Returns
    -------
    loaded : dict of str to list
        Per set, the partitions' handles: the values themselves in process, futures on one
        worker, the shards' Refs with an executor.
    conflict_stats : list of tuple of int
        Per training partition, (conflict rows, lost values) of its bundles.

    Raises
    ------
    RuntimeError
        A shard's worker was lost while the partitions loaded.
    """
    if client is None:
        with ThreadPoolExecutor(n_threads or os.cpu_count() or 1) as pool:
            loaded = {s: list(dask.compute(*t, scheduler="threads", pool=pool))
                      for s, t in task_sets.items()}
        return loaded, [partition_conflict_stats(ch) for ch in loaded["train"]]
    if executor is None:
        loaded = {s: client.compute(t) for s, t in task_sets.items()}
    else:
        loaded = {s: compute_placed(client, executor, t) for s, t in task_sets.items()}
        executor.wait_placed([f for v in loaded.values() for f in v])  # raises if a worker is lost
    stats = client.map(partition_conflict_stats, loaded["train"], pure=False)
    if executor is not None:
        # They read the pinned partitions: a worker lost meanwhile would leave them waiting.
        executor.wait_placed(stats)
    stats = client.gather(stats)
    if executor is not None:
        loaded = {s: executor.adopt(v) for s, v in loaded.items()}
    return loaded, stats
