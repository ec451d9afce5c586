"""This module contains :func:`train`: the functional entry point of oocgbdt.

Data flow: normalize inputs (metadata only) -> check ``cache_path`` -> validate labels and
weights (one small reduction) -> fit bins (and bundles) on a row sample (small computes) ->
group row chunks into compute partitions (:mod:`oocgbdt.dask.partitions`) -> per partition, one
task reads, bins and loads it as state next to the data, its bins kept in memory or written to
the disk cache (:mod:`oocgbdt.dask.cache`) -> run :func:`oocgbdt.core.boosting.boost` on a
executor -> a :class:`~oocgbdt.dask.predict.Booster`.

Where it runs: on the ``client`` given, else the default client, else, for Dask or Zarr input, an
embedded LocalCluster closed afterwards. In-memory NumPy input with no client runs the same task
bodies in-process on threads (:class:`~oocgbdt.core.executor.LocalExecutor`): the data already
fits in memory, and a cluster would only add start-up time. On a cluster with one worker (the
embedded LocalCluster), the loop itself runs as one task on that worker, next to every chunk,
over the same LocalExecutor; with several workers it runs on the client over an
:class:`~oocgbdt.runtime.actor_executor.ActorExecutor` (one actor per worker holding its block of
partitions, called directly, not through the scheduler). All give the same model for the same
partitions: the task bodies and their reduction order are the same.
"""
from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext

import dask
import dask.array as da
import numpy as np

from oocgbdt.core.executor import LocalExecutor
from oocgbdt.core.boosting import boost
from oocgbdt.core.partition import partition_conflict_stats
from oocgbdt.core.metrics import get_metrics
from oocgbdt.core.objectives import get_objective
from oocgbdt.runtime.actor_executor import ActorExecutor
from oocgbdt.runtime.progress import EventBar, caller_bar
from oocgbdt.dask.executor import DaskBackend
from oocgbdt.dask.binning import bin_sample, fit_bin_mapper
from oocgbdt.dask.bundling import fit_bundler
from oocgbdt.dask.predict import Booster
from oocgbdt.dask.cache import (EDGE_ROWS, abort_writes, cached_bins, cached_partition,
                                check_fingerprint, claim_cache_dir, cluster_memory_bytes,
                                create_cache, directory_bytes, finish_cache, fingerprint_parts,
                                hash_rows, inspect_cache_path, partition_path, piece_groups,
                                remove_cache, stored_pieces, write_piece)
from oocgbdt.runtime.cluster import client_for_training, find_client
from oocgbdt.runtime.heap import release_heap, training_heap
from oocgbdt.dask.inputs import align_rows, as_row_chunked, check_values, is_lazy, is_sparse
from oocgbdt.dask.partitions import default_partition_rows, group_chunks, load_partition, partition_bounds
from oocgbdt.params import resolve_params

__all__ = ["train"]

logger = logging.getLogger("oocgbdt")


def _blocks(arr):
    """One delayed object per row chunk of ``arr`` (None stays None)."""
    return None if arr is None else list(arr.to_delayed().ravel())


def _partition_tasks(X, y, weight, groups, bin_mapper, bundler, n_outputs, key, refs=None,
                     conflicts=None):
    """Delayed PartitionData per compute partition (a group of consecutive row chunks).

    Memory (``refs`` None): read -> bin -> bundle -> state, fused per partition
    (``load_partition``). Disk cache (``refs`` given, written by :func:`_write_cache` or
    reused): labels and weights only, over the cached bins (``cached_partition``).
    """
    Xs, ys, ws = _blocks(X), _blocks(y), _blocks(weight)
    bm = dask.delayed(bin_mapper, pure=True)
    bd = dask.delayed(bundler, pure=True) if bundler is not None else None
    tasks = []
    for i, (a, b) in enumerate(groups):
        wb = None if ws is None else ws[a:b]
        name = f"{key}-{i}"
        if refs is not None:
            task = dask.delayed(cached_partition, pure=True)(refs[i], ys[a:b], wb, n_outputs,
                                                             conflicts[i], dask_key_name=name)
        else:
            task = dask.delayed(load_partition, pure=True)(Xs[a:b], ys[a:b], wb, n_outputs, bm,
                                                           bd, dask_key_name=name)
        tasks.append(task)
    return tasks


def _write_cache(sets, groups, root, bin_mapper, bundler, client, key):
    """The disk cache's write pass: bin every piece of every set and write it under ``root``.

    One task per piece (:func:`~oocgbdt.dask.cache.piece_groups`, :func:`write_piece`), with no
    worker restrictions: a worker holds one piece's raw rows per thread at a time, and Dask's
    queuing of root tasks bounds how many pieces are read ahead. Without a client the tasks run
    on a thread pool of this process. If a write fails, the others are stopped and waited for
    before the error propagates, so nothing writes into the cache directory once it is removed.

    Returns
    -------
    dict of str to list of list of Piece
        Per set, per partition, its pieces in row order.
    """
    bm = dask.delayed(bin_mapper, pure=True)
    bd = dask.delayed(bundler, pure=True) if bundler is not None else None
    tasks, layout = [], {}
    for s, Xs, _, _ in sets:
        # Raw bytes per row held by a write task: dense float32 values; for sparse input (whose
        # stored entries are unknown before reading) 4 bytes per binned column.
        if is_sparse(Xs):
            row_bytes = 4 * (bundler.n_columns if bundler is not None else Xs.shape[1])
        else:
            row_bytes = Xs.shape[1] * np.dtype(Xs.dtype).itemsize
        blocks = _blocks(Xs)
        layout[s] = piece_groups(Xs.chunks[0], groups[s], row_bytes)
        for i, part in enumerate(layout[s]):
            for j, (a, b) in enumerate(part):
                path = os.path.join(partition_path(root, s, i), str(j))
                tasks.append(dask.delayed(write_piece, pure=False)(
                    path, blocks[a:b], bm, bd, dask_key_name=f"{key}-write-{s}-{i}-{j}"))
    futures = None
    try:
        if client is None:
            with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
                written = list(dask.compute(*tasks, scheduler="threads", pool=pool))
        else:
            futures = client.compute(tasks)
            written = client.gather(futures)
    except BaseException:
        abort_writes(root)
        if futures is not None:
            from distributed import wait
            with client.as_current():  # running writes end, pending ones give up
                wait(futures)
        raise
    out, it = {}, iter(written)
    for s, part_list in layout.items():
        out[s] = [[next(it) for _ in part] for part in part_list]
    return out


def _chunk_tasks(X, y, weight, bin_mapper, bundler, n_outputs, key, groups=None):
    """Delayed PartitionData with the bins in memory, one per partition (``groups``: chunk index
    ranges; None: one per chunk). ``key`` stays the last positional argument: benchmarks wrap
    this function to share the binned training chunks between runs."""
    if groups is None:
        groups = [(i, i + 1) for i in range(len(X.chunks[0]))]
    return _partition_tasks(X, y, weight, groups, bin_mapper, bundler, n_outputs, key)


def _partition_groups(X, params, row_bytes):
    """Chunk index ranges of the compute partitions of ``X`` (:mod:`oocgbdt.dask.partitions`)."""
    target = params["partition_rows"]
    if target is None:
        raw_row_bytes = None if is_sparse(X) else X.shape[1] * np.dtype(X.dtype).itemsize
        target = default_partition_rows(X.shape[0], row_bytes, raw_row_bytes)
    return group_chunks(X.chunks[0], int(target))


def _edge_sha256(X, compute) -> str:
    """Hash of the first and last ``EDGE_ROWS`` rows of ``X`` (one small compute)."""
    k = min(EDGE_ROWS, X.shape[0])
    first, last = compute(X[:k], X[X.shape[0] - k:])
    h = hashlib.sha256()
    hash_rows(h, first)
    hash_rows(h, last)
    return h.hexdigest()


def _sample_sha256(X, params, compute) -> str:
    """Hash of the rows of ``X`` at the indices of a bin sample of its size (every row of a set
    of at most ``bin_construct_sample_cnt`` rows): the content part of an eval set's cache
    fingerprint."""
    h = hashlib.sha256()
    hash_rows(h, bin_sample(X, params, lambda a: compute(a)[0]))
    return h.hexdigest()


def _load_partitions(task_sets, client, actors=None):
    """Run the loading tasks of every set (one PartitionData per partition).

    Returns ``({set: PartitionData handles}, per-partition (conflict rows, lost values) of the
    training set)``. Without a client the tasks run on a thread pool of this process. With
    ``actors`` (an :class:`~oocgbdt.runtime.actor_executor.ActorExecutor`), each partition is computed on
    the worker of the shard that holds it, then handed to the shards (the handles returned are
    their Refs).
    """
    if client is None:
        with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            loaded = {s: list(dask.compute(*t, scheduler="threads", pool=pool))
                      for s, t in task_sets.items()}
        return loaded, [partition_conflict_stats(ch) for ch in loaded["train"]]
    if actors is None:
        loaded = {s: client.compute(t) for s, t in task_sets.items()}
    else:
        loaded = {s: _compute_placed(client, actors, t) for s, t in task_sets.items()}
        actors.wait_placed([f for v in loaded.values() for f in v])  # raises if a worker is lost
    stats = client.gather(client.map(partition_conflict_stats, loaded["train"], pure=False))
    if actors is not None:
        loaded = {s: actors.adopt(v) for s, v in loaded.items()}
    return loaded, stats


def _gb(n) -> str:
    return f"{n / 1e9:.3f} GB ({int(n)} bytes)"


def _choose_cache(params, stored, local, client, bytes_binned):
    """``(mode, reason)``: where the binned rows live (see :mod:`oocgbdt.dask.cache`)."""
    mode = params["cache"]
    if mode != "auto":
        return mode, f"cache={mode!r} was asked for"
    if stored is not None:
        return "disk", f"reusing the cache at cache_path {params['cache_path']!r}"
    if local:
        return "memory", "NumPy input trained in this process: the rows are in memory already"
    total = cluster_memory_bytes(client)
    budget = float(params["cache_memory_fraction"]) * total
    if bytes_binned <= budget:
        return "memory", (f"binned rows {_gb(bytes_binned)} <= cache_memory_fraction "
                          f"{params['cache_memory_fraction']} x worker memory {_gb(total)}")
    return "disk", (f"binned rows {_gb(bytes_binned)} > cache_memory_fraction "
                    f"{params['cache_memory_fraction']} x worker memory {_gb(total)}")


def _compute_placed(client, actors, tasks):
    """Futures of ``tasks`` (one per partition), each computed on the worker of the shard that
    will hold it (:meth:`~oocgbdt.runtime.actor_executor.ActorExecutor.owner_of_partition`)."""
    n = len(tasks)
    futures = [None] * n
    for o, worker in enumerate(actors.workers):
        mine = [i for i in range(n) if actors.owner_of_partition(i, n) == o]
        if mine:
            for i, f in zip(mine, client.compute([tasks[i] for i in mine], workers=[worker],
                                                 allow_other_workers=False)):
                futures[i] = f
    return futures


def _threaded_compute(*arrays):
    return dask.compute(*arrays, scheduler="threads")


def _client_compute(client):
    return lambda *arrays: tuple(client.compute(list(arrays), sync=True))


def _check_labels_and_weights(yd, wd, evals, objective, compute):
    """Reject NaN/inf labels, bad weights and labels the objective cannot take (small computes)."""
    check_values(yd, wd, compute=compute)
    for name, _, ye, we in evals:
        check_values(ye, we, y_name=f"eval_set {name!r} y", weight_name=f"{name!r} weight",
                     compute=compute)
    if objective.num_tree_per_iteration > 1 or objective.name == "binary":
        # One compute for the distinct labels of y and of every eval set (LightGBM scores eval
        # labels it would refuse to train on; a multiclass eval label >= num_class then
        # failed late, in the metric, with an IndexError).
        uniques = compute(da.unique(yd), *(da.unique(ye) for _, _, ye, _ in evals))
        objective.check_labels(uniques[0])
        for (name, *_), u in zip(evals, uniques[1:]):
            objective.check_labels(u, name=f"eval_set {name!r} y")


def _boost_on_worker(chunks, eval_sets, boost_kwargs, progress_topic=None):
    """Task body: the boosting loop next to the data, on the worker's threads; its progress
    bar, given a topic, is the caller's (:mod:`oocgbdt.runtime.progress`)."""
    from distributed import get_worker
    executor = LocalExecutor(n_threads=get_worker().state.nthreads)
    if progress_topic is not None:
        boost_kwargs = dict(boost_kwargs, progress=lambda total: EventBar(progress_topic))
    try:
        with training_heap():
            return boost(executor, chunks, eval_sets=eval_sets, **boost_kwargs)
    finally:
        executor.close()


def train(params, X, y, *, sample_weight=None, eval_set=None, eval_names=None,
          eval_sample_weight=None, feature_names=None, client=None, verbose=None) -> Booster:
    """Train a gradient-boosted tree model.

    Parameters
    ----------
    params : dict
        LightGBM-style parameters (names and aliases in :mod:`oocgbdt.params`), e.g.
        ``{"objective": "binary", "num_leaves": 31, "learning_rate": 0.1, "n_estimators": 100}``.
    X : ndarray, dask.array.Array, zarr.Array or path of a Zarr store, shape (n_samples, n_features)
        Numeric features (cast to float32); NaN marks a missing value. Dask arrays chunked along
        columns are rechunked to whole rows.
    y : array-like of shape (n_samples,)
        Labels: any finite value for regression, 0/1 for binary, 0..num_class-1 for multiclass.
    sample_weight : array-like of shape (n_samples,), optional
        Finite, non-negative row weights.
    eval_set : list of (X, y) pairs, optional
        Scored after every round with ``params["metric"]``; the last one decides early stopping
        together with the others (LightGBM's rule: any metric of any set that stops improving).
    eval_names : list of str, optional
        Distinct names for ``eval_set`` (default ``valid_0``, ``valid_1``, ...).
    eval_sample_weight : list of (array-like or None), optional
        One entry per eval set: its row weights, or None for none.
    feature_names : list of str, optional
    client : distributed.Client, optional
        Cluster to train on; default the current default client, else an embedded LocalCluster
        for Dask/Zarr input, or in-process threads for NumPy input.
    verbose : bool, optional
        Progress bar over rounds with the latest metric; default ``params["verbose"]``.

    Returns
    -------
    Booster
        With ``evals_result`` (``{name: {metric: [score per round]}}``), ``best_iteration``
        (1-based, when early stopping was requested), ``bundles_`` (the original features of
        each bundle, or None without bundling) and ``bundle_report`` (None without bundling,
        else a dict: ``conflict_rows`` and ``lost_values`` counted over all training rows,
        ``n_bundles``, ``layout`` (``"uint8"``/``"uint16"``), ``bytes_binned`` (X binned per
        feature) and ``bytes_bundled`` (X_bundled, what training holds), and ``summary``, the
        logged line), and ``cache_report``, a dict: ``mode`` (``"memory"``/``"disk"``),
        ``reason`` (why, also logged), ``path`` (the disk cache, else None), ``kept`` (the store
        outlives training: a named ``cache_path``), ``reused`` (an existing store was used
        without binning), ``bytes_binned`` (binned training and eval rows, bytes),
        ``bytes_on_disk`` (the store's files, bytes, or None), ``seconds_write`` (the binning
        and writing pass, or None), ``n_partitions`` and ``partition_rows`` per set
        (``"train"``, ``"eval_0"``, ...).

    Raises
    ------
    ValueError, TypeError
        Invalid parameters or inputs, before any training work starts; a ``cache_path`` that
        exists and is not a complete oocgbdt cache, lies inside a Zarr store or cannot be
        created (before any work), holds the cache of other data or bin settings, or that
        another fit claimed first (after the bins are fitted; the store is left untouched).

    Notes
    -----
    While a worker process trains, its glibc malloc thresholds are set to the values glibc
    adapts to on its own when a Dask nanny had fixed them (``MALLOC_TRIM_THRESHOLD_``), and
    set back when the fit ends (:func:`oocgbdt.runtime.heap.training_heap`).

    On a cluster of several workers every worker runs the boosting loop over its own
    partitions and exchanges histograms with the others (:meth:`oocgbdt.runtime.actor_executor.ActorExecutor.boost`);
    ``tree_stats``' timings are then those of the first worker. With ``verbose`` the progress
    bar is shown in this process (the loop's rounds arrive as ``distributed`` events).
    """
    params = resolve_params(params)
    if verbose is not None:
        params["verbose"] = bool(verbose)
    objective = get_objective(params)
    metrics = get_metrics(params["metric"], objective)
    chunk_size = int(params["chunk_size"])

    Xd = as_row_chunked(X, "X", chunk_size)
    yd = align_rows(Xd, y, "y", chunk_size)
    if yd is None:
        raise ValueError("y is required: got None.")
    wd = align_rows(Xd, sample_weight, "sample_weight", chunk_size)
    n_features = Xd.shape[1]
    if feature_names is not None and len(feature_names) != n_features:
        raise ValueError(f"feature_names has {len(feature_names)} names but X has {n_features} "
                         f"features.")
    evals = []
    eval_set = list(eval_set or [])
    if params["early_stopping_rounds"] is not None and not (eval_set and metrics):
        raise ValueError(f"early_stopping_rounds={params['early_stopping_rounds']} needs an eval "
                         f"set and a metric to watch (as in LightGBM), got "
                         f"{'no eval_set' if not eval_set else 'metric=None (no metric)'}; give "
                         f"eval_set, or leave early_stopping_rounds unset.")
    if isinstance(eval_names, str):
        raise TypeError(f"eval_names must be a list of str, one per eval set; got the str "
                        f"{eval_names!r}.")
    eval_names = list(eval_names) if eval_names is not None else [f"valid_{i}" for i in range(len(eval_set))]
    if len(eval_names) != len(eval_set):
        raise ValueError(f"eval_names has {len(eval_names)} names for {len(eval_set)} eval sets.")
    repeated = sorted({str(n) for n in eval_names if eval_names.count(n) > 1})
    if repeated:
        raise ValueError(f"eval_names must be distinct (results are keyed by name); "
                         f"{', '.join(map(repr, repeated))} is given more than once.")
    if eval_sample_weight is not None:
        if not isinstance(eval_sample_weight, (list, tuple)):
            raise TypeError(f"eval_sample_weight must be a list with one entry (array-like or "
                            f"None) per eval set; got {type(eval_sample_weight).__name__}.")
        if len(eval_sample_weight) != len(eval_set):
            raise ValueError(f"eval_sample_weight has {len(eval_sample_weight)} entries for "
                             f"{len(eval_set)} eval sets; give one (array-like or None) per set.")
    for i, pair in enumerate(eval_set):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"eval_set[{i}] must be an (X, y) pair, got {type(pair).__name__}.")
        Xe = as_row_chunked(pair[0], f"eval_set[{i}] X", chunk_size)
        if Xe.shape[1] != n_features:
            raise ValueError(f"eval_set[{i}] X has {Xe.shape[1]} features but X has "
                             f"{n_features}; they must match.")
        ye = align_rows(Xe, pair[1], f"eval_set[{i}] y", chunk_size)
        we = None
        if eval_sample_weight is not None and eval_sample_weight[i] is not None:
            we = align_rows(Xe, eval_sample_weight[i], f"eval_sample_weight[{i}]", chunk_size)
        evals.append((eval_names[i], Xe, ye, we))

    cache_path = params["cache_path"]
    stored, dir_existed = None, False
    if cache_path is not None:
        if params["cache"] == "memory":
            raise ValueError(f"cache_path={cache_path!r} was given with cache='memory'; the path "
                             f"is only used by cache='disk' (or 'auto'). Drop one of them.")
        if not str(cache_path).strip():
            raise ValueError(f"cache_path={cache_path!r} is empty; give a directory, or None for "
                             f"a temporary one.")
        cache_path = os.path.abspath(os.path.expanduser(cache_path))  # a str (resolve_params)
        params["cache_path"] = cache_path
        stored = inspect_cache_path(cache_path)  # raises now, before any work, if not ours
        # A directory that exists (empty) before this fit is kept, emptied, if its write fails.
        dir_existed = stored is None and os.path.isdir(cache_path)

    lazy = any(is_lazy(v) for v in [X, y, sample_weight] + [p for e in eval_set for p in e])
    client = find_client(client)
    local = client is None and not lazy
    key = f"oocgbdt-{uuid.uuid4().hex[:8]}"
    # Label and weight checks are small reductions: run them before any cluster starts, on the
    # client's cluster when there is one (the data may only be reachable from there).
    _check_labels_and_weights(yd, wd, evals, objective,
                              _threaded_compute if client is None else _client_compute(client))
    cache_root, remove_root = None, False
    try:
        with (nullcontext(None) if local else client_for_training(client)) as c, \
                (nullcontext() if c is None else c.as_current()):
            # The client is the current one for distributed's own lookups (its wait, actor
            # handles), also when it is not the default client.
            if local:
                executor = LocalExecutor(n_threads=os.cpu_count() or 1)
                compute = _threaded_compute
            else:
                executor = DaskBackend(c)
                compute = _client_compute(c)
            try:
                samples = []
                bin_mapper = fit_bin_mapper(Xd, params, lambda a: compute(a)[0],
                                            on_sample=samples.append)
                bundler = None
                if params["enable_bundle"]:
                    bundler = fit_bundler(Xd, bin_mapper, params, lambda a: compute(a)[0],
                                          key=f"{key}-efb")
                n_out = objective.num_tree_per_iteration
                if bundler is not None:
                    n_cols, bins_dtype = bundler.n_columns, np.dtype(bundler.dtype_)
                else:
                    n_cols, bins_dtype = n_features, np.dtype(bin_mapper.binned_dtype_)
                row_bytes = n_cols * bins_dtype.itemsize
                sets = [("train", Xd, yd, wd)] + [(f"eval_{i}", Xe, ye, we)
                                                  for i, (_, Xe, ye, we) in enumerate(evals)]
                groups = {s: _partition_groups(Xs, params, row_bytes) for s, Xs, _, _ in sets}
                bounds = {s: partition_bounds(Xs.chunks[0], groups[s]) for s, Xs, _, _ in sets}
                bytes_binned = sum(int(Xs.shape[0]) for _, Xs, _, _ in sets) * row_bytes
                mode, reason = _choose_cache(params, stored, local, c, bytes_binned)
                logger.info(f"cache: {mode} ({reason}); binned rows {_gb(bytes_binned)} in "
                            + ", ".join(f"{len(groups[s])} partition(s) of {s}" for s, *_ in sets))
                pieces = None
                seconds_write, reused = None, False
                if mode == "disk":
                    h = hashlib.sha256()
                    if not samples:  # fit_bin_mapper was wrapped (a benchmark): read it again
                        samples.append(bin_sample(Xd, params, lambda a: compute(a)[0]))
                    hash_rows(h, samples[0])
                    parts = fingerprint_parts(
                        params, bin_mapper, bundler,
                        {s: dict(shape=Xs.shape, bounds=bounds[s],
                                 edge_sha256=_edge_sha256(Xs, compute),
                                 **({} if s == "train" else
                                    {"sample_sha256": _sample_sha256(Xs, params, compute)}))
                         for s, Xs, _, _ in sets}, h.hexdigest())
                    if cache_path is None:
                        cache_root, remove_root = tempfile.mkdtemp(prefix="oocgbdt-cache-"), True
                    else:
                        cache_root = cache_path
                    if stored is not None:
                        check_fingerprint(cache_root, stored, parts)  # raises on any difference
                        reused = True
                        pieces = {s: stored_pieces(stored, s) for s, *_ in sets}
                    else:
                        claim_cache_dir(cache_root)  # raises, removing nothing, if not ours
                        remove_root = True  # until the cache is complete
                        create_cache(cache_root, parts, [s for s, *_ in sets], bytes_binned)
                samples.clear()
                if mode == "disk" and not reused:
                    t_write = time.perf_counter()
                    pieces = _write_cache(sets, groups, cache_root, bin_mapper, bundler, c, key)
                    seconds_write = time.perf_counter() - t_write
                    finish_cache(cache_root, pieces, seconds_write)
                    remove_root = cache_path is None
                if pieces is None:  # memory
                    task_sets = {s: _chunk_tasks(
                        Xs, ys, ws, bin_mapper, bundler, n_out,
                        f"{key}-chunk" if s == "train" else f"{key}-{s}", groups=groups[s])
                        for s, Xs, ys, ws in sets}
                else:
                    task_sets = {s: _partition_tasks(
                        Xs, ys, ws, groups[s], bin_mapper, bundler, n_out, f"{key}-{s}",
                        refs=[cached_bins(cache_root, s, i, q, n_cols, bins_dtype)
                              for i, q in enumerate(pieces[s])],
                        conflicts=[tuple(sum(p.conflicts[k] for p in q) for k in range(2))
                                   for q in pieces[s]])
                        for s, Xs, ys, ws in sets}
                eval_keys = [(name, f"eval_{i}") for i, (name, *_) in enumerate(evals)]
                # The workers the cluster has now, after the bin sample and the cache write.
                n_workers = 0 if local else len(c.scheduler_info()["workers"])
                if n_workers > 1:
                    # Several workers: one actor per worker holds its block of partitions, and
                    # the loop calls the actors directly (see oocgbdt.runtime.actor_executor). Made only
                    # now: a worker restarted during the phases above (at its memory limit)
                    # would have lost its actor, and partitions pinned to its old address would
                    # wait for it forever.
                    executor = ActorExecutor(c)
                loaded, conflict_stats = _load_partitions(task_sets, c,
                                                          executor if n_workers > 1 else None)
                del task_sets  # the graphs that read raw X; only PartitionData handles stay
                if c is not None:
                    # Reading raw partitions leaves freed heap that glibc keeps; hand it back so
                    # the workers' memory (what their limit watches) is what training holds.
                    # Best effort: a worker lost meanwhile is reported by the loop's liveness
                    # check, naming it (an error here was a bare CommClosedError).
                    c.run(release_heap, on_error="ignore")
                chunks = loaded["train"]
                eval_sets = [(name, loaded[s]) for name, s in eval_keys]
                del loaded
                cache_report = dict(
                    mode=mode, reason=reason, path=cache_root, kept=mode == "disk" and not remove_root,
                    reused=reused, bytes_binned=bytes_binned,
                    bytes_on_disk=directory_bytes(cache_root) if mode == "disk" else None,
                    seconds_write=seconds_write,
                    n_partitions={s: len(groups[s]) for s, *_ in sets},
                    partition_rows={s: np.diff(bounds[s]).tolist() for s, *_ in sets})
                bundle_report = None
                if bundler is not None:
                    conflict_rows = int(sum(s[0] for s in conflict_stats))
                    lost_values = int(sum(s[1] for s in conflict_stats))
                    n_rows = int(Xd.shape[0])
                    bundle_report = dict(
                        conflict_rows=conflict_rows, lost_values=lost_values,
                        n_bundles=bundler.n_columns, layout=bundler.layout_,
                        bytes_binned=n_rows * n_features * np.dtype(bin_mapper.binned_dtype_).itemsize,
                        bytes_bundled=n_rows * bundler.n_columns * bundler.dtype_.itemsize,
                        summary=bundler.summary(conflict_rows))
                    logger.info(bundle_report["summary"])
                    if params["verbose"]:
                        print(bundle_report["summary"]
                              + (f" ({lost_values} values lost)" if lost_values else ""))
                if params["lookahead_leaves"] is None:
                    # auto: split leaves ahead where a pass is costly (round trips between
                    # workers, or a read of the disk cache); in process the extra work on leaves
                    # split ahead outweighs the passes saved.
                    # Only exact leaf-wise growth with an unbounded pool splits ahead (see the
                    # parameter's doc): record 0 where it is ignored, as the value used.
                    ahead = (params["grow_policy"] == "leafwise"
                             and params["max_leaves_per_pass"] == 1
                             and not params["histogram_pool_size"] > 0)
                    params = dict(params, lookahead_leaves=2 if ahead and (
                        n_workers > 1 or mode == "disk") else 0)
                boost_kwargs = dict(bin_mapper=bin_mapper, params=params, objective=objective,
                                    metrics=metrics, verbose=params["verbose"], key=key,
                                    bundler=bundler)
                if n_workers == 1:
                    # Every chunk lives on the one worker: nothing crosses workers, so the loop
                    # runs there as one task and each pass costs no scheduler round trips.
                    with caller_bar(c, params["n_estimators"], params["verbose"]) as bar:
                        result = c.submit(
                            _boost_on_worker, chunks, eval_sets,
                            dict(boost_kwargs, verbose=False), None if bar is None else bar.topic,
                            key=f"{key}-boost", pure=False).result()
                        if bar is not None:
                            bar.finish(result, objective.num_tree_per_iteration)
                elif n_workers > 1:
                    # Every shard runs the loop itself, exchanging partial histograms (and split
                    # records) with the others, with no round trip to this process (see
                    # oocgbdt.runtime.spmd.SpmdExecutor).
                    result = executor.boost(chunks, eval_sets, boost_kwargs)
                else:
                    result = boost(executor, chunks, eval_sets=eval_sets, **boost_kwargs)
                del chunks, eval_sets
            finally:
                executor.close()
    finally:
        # A temporary cache, or a named one whose writing did not complete, is removed (a named
        # directory that existed, empty, before this fit is kept, emptied).
        if cache_root is not None and remove_root:
            remove_cache(cache_root, keep_dir=cache_path is not None and dir_existed)
    booster = Booster(result.trees, result.init_score, params, n_features,
                      feature_names=feature_names, feature_infos=bin_mapper.feature_infos_,
                      best_iteration=result.best_iteration, evals_result=result.evals_result,
                      best_score=result.best_score, screening_history=result.screening_history,
                      screening_scores=result.screening_scores,
                      bundles=None if bundler is None else [b.tolist() for b in bundler.bundles_])
    booster.tree_stats = result.tree_stats
    booster.bundle_report = bundle_report
    booster.cache_report = cache_report
    return booster

