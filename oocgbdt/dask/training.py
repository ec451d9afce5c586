"""This module contains :func:`train`: the functional entry point of oocgbdt.

Data flow: normalize inputs (metadata only) -> validate labels and weights (one small reduction)
-> fit bins on a row sample (one small compute) -> bin chunks lazily and load them as per-chunk
state next to the data -> run :func:`oocgbdt.core.boosting.boost` on a backend -> a
:class:`~oocgbdt.dask.booster.Booster`.

Where it runs: on the ``client`` given, else the default client, else, for Dask or Zarr input, an
embedded LocalCluster closed afterwards. In-memory NumPy input with no client runs the same task
bodies in-process on threads (:class:`~oocgbdt.core.backend.LocalBackend`): the data already
fits in memory, and a cluster would only add start-up time. On a cluster with one worker (the
embedded LocalCluster), the loop itself runs as one task on that worker, next to every chunk,
over the same LocalBackend; with several workers it runs on the client over a
:class:`~oocgbdt.dask.backend.DaskBackend` (one scheduler round trip per dependent task). All
give the same model for the same chunking: the task bodies and their reduction order are the
same.
"""
from __future__ import annotations

import logging
import os
import uuid
from contextlib import nullcontext

import dask
import dask.array as da
import numpy as np

from oocgbdt.core.backend import LocalBackend
from oocgbdt.core.boosting import boost
from oocgbdt.core.chunk import chunk_conflict_stats, chunk_from_raw
from oocgbdt.core.metrics import get_metrics
from oocgbdt.core.objectives import get_objective
from oocgbdt.dask.actors import ActorBackend
from oocgbdt.dask.backend import DaskBackend
from oocgbdt.dask.binning import fit_bin_mapper
from oocgbdt.dask.bundling import fit_bundler
from oocgbdt.dask.booster import Booster
from oocgbdt.dask.cluster import client_for_training, find_client
from oocgbdt.dask.io import align_rows, as_row_chunked, check_values, is_lazy
from oocgbdt.params import resolve_params

__all__ = ["train"]

logger = logging.getLogger("oocgbdt")


def _chunk_tasks(X, y, weight, bin_mapper, bundler, n_outputs, key):
    """Delayed ChunkData per row chunk: read -> bin -> bundle -> state (fused per chunk)."""
    Xs = X.to_delayed().ravel()
    ys = y.to_delayed().ravel() if y is not None else [None] * len(Xs)
    ws = weight.to_delayed().ravel() if weight is not None else [None] * len(Xs)
    bm = dask.delayed(bin_mapper, pure=True)
    bd = dask.delayed(bundler, pure=True) if bundler is not None else None
    return [dask.delayed(chunk_from_raw, pure=True)(xs, yb, wb, n_outputs, bm, bd,
                                                    dask_key_name=f"{key}-{i}")
            for i, (xs, yb, wb) in enumerate(zip(Xs, ys, ws))]


def _adopt(client, backend, tasks):
    """Compute each partition's delayed ChunkData on the worker of the shard that will hold it,
    then hand the results to the shards (the Dask futures are released on return)."""
    n = len(tasks)
    futures = [None] * n
    for o, worker in enumerate(backend.workers):
        mine = [i for i in range(n) if backend.owner_of_partition(i, n) == o]
        if mine:
            for i, f in zip(mine, client.compute([tasks[i] for i in mine], workers=[worker],
                                                 allow_other_workers=False)):
                futures[i] = f
    return backend.adopt(futures)


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
        objective.check_labels(compute(da.unique(yd))[0])


def _boost_on_worker(chunks, eval_sets, boost_kwargs):
    """Task body: the boosting loop next to the data, on the worker's threads."""
    from distributed import get_worker
    backend = LocalBackend(n_threads=get_worker().state.nthreads)
    try:
        return boost(backend, chunks, eval_sets=eval_sets, **boost_kwargs)
    finally:
        backend.close()


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
        Names for ``eval_set`` (default ``valid_0``, ``valid_1``, ...).
    eval_sample_weight : list of array-like, optional
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
        logged line).

    Raises
    ------
    ValueError, TypeError
        Invalid parameters or inputs, before any training work starts.
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
    eval_names = list(eval_names) if eval_names is not None else [f"valid_{i}" for i in range(len(eval_set))]
    if len(eval_names) != len(eval_set):
        raise ValueError(f"eval_names has {len(eval_names)} names for {len(eval_set)} eval sets.")
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

    lazy = any(is_lazy(v) for v in [X, y, sample_weight] + [p for e in eval_set for p in e])
    client = find_client(client)
    local = client is None and not lazy
    key = f"oocgbdt-{uuid.uuid4().hex[:8]}"
    # Label and weight checks are small reductions: run them before any cluster starts, on the
    # client's cluster when there is one (the data may only be reachable from there).
    _check_labels_and_weights(yd, wd, evals, objective,
                              _threaded_compute if client is None else _client_compute(client))
    with (nullcontext(None) if local else client_for_training(client)) as c:
        if local:
            backend = LocalBackend(n_threads=os.cpu_count() or 1)
            compute = _threaded_compute
        else:
            backend = DaskBackend(c)
            compute = _client_compute(c)
        try:
            bin_mapper = fit_bin_mapper(Xd, params, lambda a: compute(a)[0])
            bundler = None
            if params["enable_bundle"]:
                bundler = fit_bundler(Xd, bin_mapper, params, lambda a: compute(a)[0],
                                      key=f"{key}-efb")
            n_out = objective.num_tree_per_iteration
            tasks = _chunk_tasks(Xd, yd, wd, bin_mapper, bundler, n_out, f"{key}-chunk")
            eval_tasks = [(name, _chunk_tasks(Xe, ye, we, bin_mapper, bundler, n_out,
                                              f"{key}-eval-{name}"))
                          for name, Xe, ye, we in evals]
            n_workers = 0 if local else len(c.scheduler_info()["workers"])
            if local:
                chunks = list(dask.compute(*tasks, scheduler="threads"))
                eval_sets = [(n, list(dask.compute(*t, scheduler="threads"))) for n, t in eval_tasks]
                conflict_stats = [chunk_conflict_stats(ch) for ch in chunks]
            elif n_workers > 1:
                # Several workers: one actor per worker holds its block of partitions; each
                # partition is computed on the worker whose actor adopts it.
                backend = ActorBackend(c)
                chunks = _adopt(c, backend, tasks)
                eval_sets = [(n, _adopt(c, backend, t)) for n, t in eval_tasks]
                conflict_stats = backend.gather(backend.map(chunk_conflict_stats, chunks))
            else:
                chunks = c.compute(tasks)
                eval_sets = [(n, c.compute(t)) for n, t in eval_tasks]
                conflict_stats = c.gather(c.map(chunk_conflict_stats, chunks, pure=False))
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
            boost_kwargs = dict(bin_mapper=bin_mapper, params=params, objective=objective,
                                metrics=metrics, verbose=params["verbose"], key=key,
                                bundler=bundler)
            if n_workers == 1:
                # Every chunk lives on the one worker: nothing crosses workers, so the loop runs
                # there as one task and each pass costs no scheduler round trips.
                result = c.submit(_boost_on_worker, chunks, eval_sets, boost_kwargs,
                                  key=f"{key}-boost", pure=False).result()
            else:
                result = boost(backend, chunks, eval_sets=eval_sets, **boost_kwargs)
        finally:
            backend.close()
    booster = Booster(result.trees, result.init_score, params, n_features,
                      feature_names=feature_names, feature_infos=bin_mapper.feature_infos_,
                      best_iteration=result.best_iteration, evals_result=result.evals_result,
                      best_score=result.best_score, screening_history=result.screening_history,
                      screening_scores=result.screening_scores,
                      bundles=None if bundler is None else [b.tolist() for b in bundler.bundles_])
    booster.tree_stats = result.tree_stats
    booster.bundle_report = bundle_report
    return booster

