"""This module contains :func:`train`: the functional entry point of oocgbdt, one call per stage of
the data flow.

1. inputs: normalize to row-chunked Dask arrays, check labels and weights
   (:mod:`oocgbdt.dask.inputs`);
2. bins and bundles, fitted on a row sample (:mod:`oocgbdt.dask.binning`,
   :mod:`oocgbdt.dask.bundling`);
3. partitions: storage chunks grouped into compute partitions (:mod:`oocgbdt.dask.partitions`);
4. cache: the binned rows kept in worker memory or written to a Zarr disk cache
   (:mod:`oocgbdt.dask.cache`);
5. loading: one task per partition makes its per-row state where the loop will use it
   (:mod:`oocgbdt.runtime.placement`);
6. boosting: :func:`oocgbdt.core.boosting.boost` in process, on the one worker, or on every
   shard at once (:mod:`oocgbdt.runtime.loop`);
7. the :class:`~oocgbdt.core.booster.Booster`.

Where it runs: on the ``client`` given, else the default client, else, for Dask or Zarr input, an
embedded LocalCluster closed afterwards (:mod:`oocgbdt.runtime.cluster`). In-memory NumPy input
with no client runs the same task bodies in process on threads
(:class:`~oocgbdt.core.executor.LocalExecutor`). All give the same model for the same partitions.
"""
from __future__ import annotations

import logging
import os
import time
import uuid
import warnings
from contextlib import nullcontext

import dask
import numpy as np

from oocgbdt.core.booster import Booster
from oocgbdt.core.callback import CallbackList, evaluation_result_list
from oocgbdt.core.checkpoint import (FitProgress, check_checkpoint_path, read_checkpoint,
                                     write_checkpoint)
from oocgbdt.core.boosting import BoostResult, stop_by_callback
from oocgbdt.core.categorical import resolve_categorical_feature
from oocgbdt.core.node_sampling import check_interaction_constraints
from oocgbdt.core.executor import LocalExecutor, fit_threads
from oocgbdt.core.metrics import CallableMetric, get_metrics
from oocgbdt.core.objectives import CustomObjective, get_objective
from oocgbdt.dask.binning import bin_sample, fit_bin_mapper
from oocgbdt.dask.bundling import fit_bundler
from oocgbdt.dask.cache import (cached_partition_tasks, check_cache_path, choose_cache,
                                create_cache, describe_bytes, directory_bytes, finish_cache, open_disk_cache,
                                remove_cache, write_cache)
from oocgbdt.core.partition import partition_set_init_scores
from oocgbdt.core.split import check_monotone_constraints
from oocgbdt.dask.inputs import (align_to_queries, check_init_scores, check_labels_and_weights,
                                 check_position, init_score_inputs, is_sparse, training_inputs)
from oocgbdt.dask.memory_plan import (check_rows, check_worker_baseline, memory_report, plan_fit,
                                     start_measuring, stop_measuring, worker_limits)
from oocgbdt.dask.partitions import (partition_bounds, partition_groups, partition_tasks,
                                     row_blocks, set_layout)
from oocgbdt.dask.predict import predict as lazy_predict
from oocgbdt.params import resolve_params
from oocgbdt.runtime.actor_executor import ActorExecutor, WorkerLost, WorkerRetiring
from oocgbdt.runtime.cluster import (client_for_training, cluster_workers, find_client,
                                     retire_workers, wait_for_workers)
from oocgbdt.runtime.heap import release_heap
from oocgbdt.runtime.loop import run_boosting
from oocgbdt.runtime.placement import load_partitions

__all__ = ["train"]

logger = logging.getLogger("oocgbdt")


def _threaded_compute(threads):
    return lambda *arrays: dask.compute(*arrays, scheduler="threads", num_workers=threads)


def _client_compute(client):
    return lambda *arrays: tuple(client.compute(list(arrays), sync=True))


def train(params, X, y=None, *, sample_weight=None, eval_set=None, eval_names=None,
          eval_sample_weight=None, feature_names=None, client=None, verbose=None, group=None,
          eval_group=None, init_model=None, callbacks=None, init_score=None,
          eval_init_score=None, position=None, resume=False) -> Booster:
    """Train a gradient-boosted tree model.

    Parameters
    ----------
    params : dict
        LightGBM-style parameters (names and aliases in :mod:`oocgbdt.params`), e.g.
        ``{"objective": "binary", "num_leaves": 31, "learning_rate": 0.1, "n_estimators": 100}``.
    X : ndarray, pandas.DataFrame, dask.array.Array, dask.dataframe.DataFrame, zarr.Array or path of a Zarr store, shape (n_samples, n_features)
        Features (cast to float32); NaN marks a missing value. Dask arrays chunked along
        columns are rechunked to whole rows. A DataFrame's column names are the feature names
        (unless ``feature_names`` is given); its ``category``, string and object columns are
        coded by value (0, 1, 2, ... in the order of the categories; string columns' sorted
        distinct values; missing as NaN) and the map is kept as the Booster's
        ``pandas_categorical`` for prediction. A Dask DataFrame's partition lengths and string
        values are found by one compute; its ``category`` columns must have known
        categories (``ddf.categorize()``). An opened dataset (``oocgbdt.io.dataset.Dataset``)
        or the path of one gives its category map (its coded columns) and feature names.
    y : array-like, pandas or Dask Series of shape (n_samples,)
        Required, except with an opened dataset as ``X``, whose labels (and weights, unless
        ``sample_weight`` is given) are used. Labels: any finite value for regression, 0/1 for binary, 0..num_class-1 for multiclass.
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
    group : array-like of int, optional
        Ranking (``objective="lambdarank"``, metrics ``ndcg``/``map``): the sizes of the
        consecutive queries of the training rows (LightGBM's ``group``). The rows are rechunked
        so that no query spans two partitions.
    eval_group : list of (array-like of int or None), optional
        The query sizes of each eval set.
    position : array-like of int of shape (n_samples,), optional
        ``objective="lambdarank"``: each training row's position (the rank it was shown at),
        LightGBM's ``Dataset(position=)``, held in memory. Training then learns one bias
        factor per distinct position, added to the scores the gradients are computed from
        (unbiased LambdaRank, ``lambdarank_position_bias_regularization``); predictions do
        not include them.
    init_model : Booster, or path of a model file (oocgbdt JSON or LightGBM text), optional
        Continue this model (LightGBM's ``init_model``): every training and eval row starts
        from the model's raw score (predicted on the rows as training reads them, float32),
        no initial score is computed (no ``boost_from_average``), and ``n_estimators`` more
        rounds are added, numbered after the model's (random streams keyed by round continue,
        and so does the model's feature screening state). The result holds the model's trees
        then the new ones, and its initial score; ``evals_result`` covers the new rounds,
        ``best_iteration`` counts every round. For the same data, partitions and parameters,
        ``n`` rounds continued by ``m`` give the trees of one ``n + m`` round fit, bit for bit.
        Not together with ``init_score`` (LightGBM replaces such an ``init_score`` by the
        model's predictions; here that is a ValueError).
    init_score : array-like, pandas Series or DataFrame, Dask array, Series or DataFrame, optional
        Starting raw score of every training row (LightGBM's ``init_score``): shape
        ``(n_samples,)``, or ``(n_samples, num_class)`` for multiclass objectives (also
        ``(n_samples * num_class,)``, class-major, as LightGBM takes it), float64. Training
        starts from these scores instead of ``boost_from_average`` (which LightGBM skips when
        an init score is given: ``GBDT::BoostFromAverage`` in ``src/boosting/gbdt.cpp``), and
        the model does not hold them: its ``init_score`` is zero and its predictions leave
        them out, so add them back to ``predict(X, raw_score=True)`` (as with LightGBM). A
        Dask array is rechunked to X's rows; values are read where the partitions load.
    eval_init_score : list of (array-like or None), optional
        One entry per eval set: its rows' starting raw scores (shapes as ``init_score``), or
        None (the set starts from zero when ``init_score`` is given, else from the
        ``boost_from_average`` score, as in LightGBM).
    callbacks : list of callable, optional
        LightGBM's callbacks (:mod:`oocgbdt.core.callback`: ``early_stopping``,
        ``log_evaluation``, ``record_evaluation``, ``reset_parameter``) or any callable taking a
        :class:`~oocgbdt.core.callback.CallbackEnv`; run in this process once per round after
        the round's evaluation, also when the loop runs on Dask workers (the rounds'
        evaluations arrive as ``distributed`` events, as the progress bar's). One raising
        ``EarlyStopException`` ends training after that round (a loop on workers may have
        trained further meanwhile: those trees are dropped, so the model is the one an
        in-process fit stops with).
    resume : bool, default False
        Continue the fit whose checkpoint is at ``params["checkpoint_path"]``
        (:mod:`oocgbdt.core.checkpoint`), written by an interrupted ``train`` call on the same
        data with the same parameters: training goes on from its last round to
        ``n_estimators`` rounds in all, with its evaluation history, early-stopping and
        feature-screening state, and gives the model the uninterrupted fit gives, bit for bit
        (same data and partitions). The callbacks are first run on the checkpoint's rounds
        (so that their state, an ``early_stopping`` callback's say, is theirs after those
        rounds). ``init_model`` is not allowed with it (the checkpoint holds the model).

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
        (``"train"``, ``"eval_0"``, ...); and ``memory_report``
        (:func:`oocgbdt.dask.memory_plan.memory_report`): ``mode``, ``usable_fraction`` and,
        per worker (or ``"in process"``), ``planned`` (the peak and its terms, bytes, as
        logged before training), ``rss_start``, ``rss_peak`` and ``measured_training`` (the
        RSS sampled from the start of loading to the end of boosting, bytes).

    Raises
    ------
    MemoryError
        A worker's planned peak exceeds its memory limit (the memory plan: the rows alone
        before any data is read, the whole plan once the bins are fitted on their sample, and
        on a client's cluster before the labels are read); the message gives the numbers and
        what to change.
    ValueError, TypeError
        Invalid parameters or inputs, before any training work starts (an ``init_model`` of
        another number of features or outputs included, an ``init_score`` or
        ``eval_init_score`` of the wrong length or shape; labels, weights and init scores
        that the objective cannot take: on a client's cluster after the memory plan, else
        before anything is computed); a ``cache_path`` that
        exists and is not a complete oocgbdt cache, lies inside a Zarr store or cannot be
        created (before any work), holds the cache of other data or bin settings, or that
        another fit claimed first (after the bins are fitted; the store is left untouched).
    TimeoutError
        The client's cluster had fewer than ``min_workers`` workers for ``worker_wait_timeout``
        seconds (before any work on it, or when the partitions are placed).
    FileNotFoundError
        ``resume`` and no checkpoint at ``checkpoint_path``.
    oocgbdt.runtime.actor_executor.WorkerLost
        (a RuntimeError) More than ``max_worker_failures`` workers were lost during the fit;
        the message names them and the last completed round (whose checkpoint is written,
        with ``checkpoint_path``). Up to that many, the fit continues on the workers left
        from the last round whose trees reached this process (``docs/decisions/lost-workers.md``).

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
    params, fobj, fevals = _split_callables(params)
    params = resolve_params(params)
    if verbose is not None:
        params["verbose"] = bool(verbose)
    objective = (CustomObjective(fobj, params["num_class"]) if fobj is not None
                 else get_objective(params))
    metrics = get_metrics(params["metric"], objective, params) + [CallableMetric(f)
                                                                  for f in fevals]
    client = find_client(client)
    # A Dask DataFrame's partition lengths and string categories: one compute, on the client's
    # cluster when there is one.
    inputs = training_inputs(X, y, sample_weight, eval_set, eval_names, eval_sample_weight,
                             feature_names, int(params["chunk_rows"]),
                             _threaded_compute(fit_threads(params["num_threads"]))
                             if client is None else _client_compute(client))
    params = _resolve_categorical(params, inputs, feature_names)
    check_monotone_constraints(params, int(inputs.X.shape[1]), params["categorical_feature"])
    if group is not None or eval_group is not None:
        inputs = align_to_queries(inputs, group, eval_group, int(params["chunk_rows"]))
    _check_queries(objective, metrics, inputs)
    if init_model is not None and (init_score is not None or eval_init_score is not None):
        raise ValueError("init_score (or eval_init_score) and init_model were both given: a "
                         "continued model starts from its own predictions (LightGBM replaces "
                         "init_score by them); pass one of the two.")
    init_scores = init_score_inputs(inputs, init_score, eval_init_score,
                                    objective.num_tree_per_iteration)
    positions = (None if position is None
                 else check_position(position, inputs.X.shape[0], objective))
    if params["early_stopping_rounds"] is not None and not (inputs.evals and metrics):
        raise ValueError(f"early_stopping_rounds={params['early_stopping_rounds']} needs an eval "
                         f"set and a metric to watch (as in LightGBM), got "
                         f"{'no eval_set' if not inputs.evals else 'metric=None (no metric)'}; "
                         f"give eval_set, or leave early_stopping_rounds unset.")
    check_checkpoint_path(params["checkpoint_path"], resume)
    if resume:
        if init_model is not None:
            raise ValueError("resume=True continues the checkpoint's model; init_model must be "
                             "None")
        init_booster, progress, total = _resumed(params, inputs, objective)
    else:
        init_booster = _init_booster(init_model, inputs.X.shape[1], objective)
        total = int(params["n_estimators"])
        progress = FitProgress(0 if init_booster is None else init_booster.num_iterations(),
                               objective.num_tree_per_iteration)
    first_round = progress.begin
    callbacks = CallbackList(callbacks, params, first_round, first_round + total)
    learning_rates = callbacks.learning_rates()  # before any work: errors come first
    for rnd in range(first_round, progress.end):  # a resumed fit's rounds, for their state
        if callbacks.after_round(rnd, evaluation_result_list(
                progress.evals_result, metrics, rnd - first_round)) is not None:
            break
    cache_path, stored, dir_existed = check_cache_path(params)  # before any work
    local = client is None and not inputs.lazy
    if client is not None:
        # Before the first compute on the cluster: a cluster still starting (jobs queued) has
        # no worker to run it.
        wait_for_workers(client, params["min_workers"], params["worker_wait_timeout"],
                         verbose=params["verbose"])
    key = f"oocgbdt-{uuid.uuid4().hex[:8]}"
    # Label and weight checks are reductions over every label (and weight and init score), run
    # on the client's cluster when there is one (the data may only be reachable from there).
    checks = (_threaded_compute(fit_threads(params["num_threads"])) if client is None
              else _client_compute(client))

    def check_inputs():
        check_labels_and_weights(inputs, objective, checks)
        check_init_scores(init_scores, checks)

    if client is None:
        # In process or on the embedded cluster: before it starts (no cluster for bad input).
        check_inputs()
        check_inputs = None
    else:
        # A worker paused by its own baseline would never run these checks or the fit's tasks.
        limits = worker_limits(client)
        check_worker_baseline(limits)
        # Before the bin sample reads the data: the rows alone may not fit. The labels are
        # checked after the whole plan (_fit), which needs only the bin sample: a fit that
        # cannot fit fails without reading every label first.
        check_rows(params, {s: Xs.shape[0] for s, Xs, _, _ in inputs.sets},
                   n_outputs=objective.num_tree_per_iteration,
                   weighted={s: w is not None for s, _, _, w in inputs.sets}, limits=limits)
    caches = []  # the fit's disk cache, once opened
    try:
        with (nullcontext(None) if local else client_for_training(client)) as c, \
                (nullcontext() if c is None else c.as_current()):
            # The client is the current one for distributed's own lookups (its wait, actor
            # handles), also when it is not the default client.
            fit = _fit(params, inputs, objective, metrics, c, stored, key, caches,
                       init_booster, callbacks, learning_rates, embedded=client is None,
                       init_scores=init_scores, positions=positions, progress=progress,
                       check_inputs=check_inputs)
    finally:
        # A temporary cache, or a named one whose writing did not complete, is removed (a named
        # directory that existed, empty, before this fit is kept, emptied).
        for disk in caches:
            if disk.remove:
                remove_cache(disk.root, keep_dir=cache_path is not None and dir_existed)
    result, bin_mapper, bundler = fit["result"], fit["bin_mapper"], fit["bundler"]
    trees, init_score = result.trees, result.init_score
    start = fit["start"]  # the model the last part of the fit continued (None: none)
    if start is not None:
        trees, init_score = list(start.trees) + list(trees), start.init_score
    booster = _booster(fit["params"], inputs, bin_mapper, bundler, trees, init_score,
                       result.screening_history, result.screening_scores,
                       best_iteration=result.best_iteration, evals_result=result.evals_result,
                       best_score=result.best_score)
    booster.tree_stats = fit["tree_stats"] + result.tree_stats
    booster.bundle_report = fit["bundle_report"]
    booster.cache_report = fit["cache_report"]
    booster.memory_report = fit["memory_report"]
    return booster


def _booster(params, inputs, bin_mapper, bundler, trees, init_score, screening_history,
             screening_scores, **kwargs):
    """The Booster of ``trees`` trained on ``inputs`` (its feature names and category map)."""
    return Booster(trees, init_score, params, inputs.X.shape[1],
                   feature_names=inputs.feature_names, feature_infos=bin_mapper.feature_infos_,
                   screening_history=screening_history, screening_scores=screening_scores,
                   bundles=None if bundler is None else [b.tolist() for b in bundler.bundles_],
                   pandas_categorical=inputs.pandas_categorical,
                   pandas_categorical_features=inputs.pandas_categorical_features, **kwargs)


#: Parameters a resumed fit may change: where and how it runs, not what it trains
#: (``n_estimators`` is the number of rounds in all, the checkpoint's included).
RUN_PARAMS = frozenset({
    "verbose", "num_threads", "checkpoint_path", "checkpoint_every", "max_worker_failures",
    "min_workers", "worker_wait_timeout", "cache", "cache_path", "cache_memory_fraction",
    "n_estimators", "lookahead_leaves"})


def _comparable(params) -> dict:
    """``params`` as a checkpoint stores them, without :data:`RUN_PARAMS` (JSON values)."""
    import json
    return json.loads(json.dumps({k: v for k, v in params.items() if k not in RUN_PARAMS},
                                 default=repr, sort_keys=True))


def _resumed(params, inputs, objective):
    """``(init_booster, progress, total rounds)`` of the checkpoint at ``checkpoint_path``,
    checked against this fit's data and parameters (ValueError naming what differs)."""
    path = params["checkpoint_path"]
    model, progress, fit = read_checkpoint(path)
    found = dict(n_rows=int(inputs.X.shape[0]), n_features=int(inputs.X.shape[1]),
                 n_outputs=int(objective.num_tree_per_iteration))
    for name, value in found.items():
        if fit[name] != value:
            raise ValueError(f"checkpoint {str(path)!r} is of a fit with {name}={fit[name]}; "
                             f"this fit has {value}")
    ours = _comparable(params)
    differ = sorted(k for k in set(ours) | set(fit["params"])
                    if ours.get(k) != fit["params"].get(k))
    if differ:
        shown = ", ".join(f"{k}: {fit['params'].get(k)!r} there, {ours.get(k)!r} here"
                          for k in differ[:5])
        raise ValueError(f"checkpoint {str(path)!r} is of a fit with other parameters ({shown}"
                         f"); resume with the parameters it was written with")
    n_before = len(model.trees) - len(progress.trees)
    init_booster = None
    if progress.begin > 0:  # the fit continued a model: its trees come first
        init_booster = Booster(model.trees[:n_before], model.init_score, model.params,
                               model.n_features,
                               screening_history=(None if model.screening_history_ is None
                                                  else model.screening_history_[:progress.begin]))
    return init_booster, progress, int(params["n_estimators"])


def _checkpoint_info(params, inputs, objective) -> dict:
    """What a resumed fit must match (see :func:`_resumed`)."""
    return dict(params=_comparable(params), n_rows=int(inputs.X.shape[0]),
                n_features=int(inputs.X.shape[1]),
                n_outputs=int(objective.num_tree_per_iteration),
                n_estimators=int(params["n_estimators"]))


def _progress_result(progress, params, callbacks, n_out) -> BoostResult:
    """The fit's result from its progress alone (nothing left to train: every round done,
    early stopping or a callback stopped it), relative to the model so far (no trees)."""
    result = BoostResult(trees=[], init_score=np.zeros(n_out), tree_stats=[],
                         evals_result=progress.history()["evals_result"])
    done = progress.rounds
    if progress.stop is not None:
        result.best_iteration = progress.begin + int(progress.stop)
    elif params["early_stopping_rounds"] is not None and progress.best:
        result.best_iteration = progress.begin + int(progress.best[0][3]) + 1
    if result.best_iteration is not None:
        i = result.best_iteration - 1 - progress.begin
        result.best_score = {n: {m: v[i] for m, v in bm.items() if i < len(v)}
                             for n, bm in result.evals_result.items()}
    if callbacks is not None and callbacks.stopped is not None:
        stop_by_callback(result, callbacks.stopped, n_out, progress.end, done)
    return result


def _init_booster(init_model, n_features, objective):
    """The Booster to continue (None: none), checked against the data and the objective."""
    if init_model is None:
        return None
    if isinstance(init_model, (str, os.PathLike)):
        init_model = Booster.load_model(init_model)
    if not isinstance(init_model, Booster):
        raise TypeError(f"init_model must be a Booster or the path of a model file, got "
                        f"{type(init_model).__name__}.")
    if init_model.n_features != n_features:
        raise ValueError(f"init_model has {init_model.n_features} features but X has "
                         f"{n_features}; they must match.")
    if init_model.n_outputs != objective.num_tree_per_iteration:
        raise ValueError(f"init_model has {init_model.n_outputs} tree(s) per round but "
                         f"objective {objective.name!r} trains "
                         f"{objective.num_tree_per_iteration}; they must match.")
    return init_model


def _with_init_scores(tasks, scores, groups, key):
    """Loading tasks whose partitions start from the raw scores ``scores`` (a Dask array of
    shape (n_rows,) or (n_rows, n_outputs) chunked as the set's rows: a model's lazy
    predictions, or a given ``init_score``)."""
    scores = row_blocks(scores)
    return [dask.delayed(partition_set_init_scores, pure=True)(
                t, scores[a:b], dask_key_name=f"{key}-{i}")
            for i, (t, (a, b)) in enumerate(zip(tasks, groups))]


def _fit(params, inputs, objective, metrics, client, stored, key, caches,
         init_booster=None, callbacks=None, learning_rates=None, embedded=False,
         init_scores=None, positions=None, progress=None, check_inputs=None) -> dict:
    """Stages 2 to 6 of :func:`train` on ``client`` (None: in process).

    ``caches`` receives the fit's :class:`~oocgbdt.dask.cache.DiskCache` as soon as one is
    opened, so that :func:`train` removes it also when a later stage raises. ``embedded``:
    ``client`` is the embedded cluster's (its one worker; ``min_workers`` does not apply).
    ``init_scores``: ``{set name: Dask array}``, the given starting scores of some sets
    (:func:`~oocgbdt.dask.inputs.init_score_inputs`).
    ``progress`` (:class:`~oocgbdt.core.checkpoint.FitProgress`) keeps the completed rounds;
    a resumed fit's holds the checkpoint's. ``check_inputs`` (None: already done) checks the
    labels, weights and init scores; it is called once the memory plan has passed, before the
    cache is written or any partition loaded. Returns a dict:
    ``result`` (the BoostResult of the last part of the fit), ``start`` (the model that part
    continued, or None), ``tree_stats`` (of the trees before that part), ``bin_mapper``,
    ``bundler``, ``params`` (as used: the ``lookahead_leaves`` chosen), ``cache_report``,
    ``bundle_report`` and ``memory_report``.
    """
    threads = fit_threads(params["num_threads"])  # in process; the workers' own below
    compute = _threaded_compute(threads) if client is None else _client_compute(client)
    local = client is None
    # 2. bins and bundles, on a row sample
    samples = []
    bin_mapper = fit_bin_mapper(inputs.X, params, lambda a: compute(a)[0],
                                on_sample=samples.append)
    bundler = None
    if params["enable_bundle"]:
        bundler = fit_bundler(inputs.X, bin_mapper, params, lambda a: compute(a)[0],
                              key=f"{key}-efb")
    n_out = objective.num_tree_per_iteration
    sets = inputs.sets
    # Training rows are bundled; eval rows are binned one column per feature, as LightGBM's
    # validation data (Dataset::CreateValid): a bundle keeps one value per row, and an eval
    # row off the training sample may have two non-default members of a bundle.
    layouts = {s: set_layout(s, inputs.X.shape[1], bin_mapper, bundler) for s, *_ in sets}
    row_bytes = {s: n_cols * dtype.itemsize for s, (_, n_cols, dtype) in layouts.items()}

    # 3. partitions
    groups = {s: partition_groups(Xs, params, row_bytes[s]) for s, Xs, _, _ in sets}
    bounds = {s: partition_bounds(Xs.chunks[0], groups[s]) for s, Xs, _, _ in sets}

    # 4. where the binned rows live
    bytes_binned = sum(int(Xs.shape[0]) * row_bytes[s] for s, Xs, _, _ in sets)
    mode, reason = choose_cache(params, stored, local, client, bytes_binned)
    logger.info(f"cache: {mode} ({reason}); binned rows {describe_bytes(bytes_binned)} in "
                + ", ".join(f"{len(groups[s])} partition(s) of {s}" for s, *_ in sets))
    # The memory plan, before any work that holds training state: a fit that cannot fit fails
    # here (MemoryError), with the numbers (oocgbdt.dask.memory_plan).
    n_planned = 1 if local else len(cluster_workers(client))
    plans, places = plan_fit(_lookahead(params, n_planned, mode), sets, bounds,
                             n_outputs=n_out, n_features=int(inputs.X.shape[1]),
                             row_bytes=row_bytes["train"],
                             eval_row_bytes=next((b for s, b in row_bytes.items()
                                                  if s != "train"), None),
                             bin_mapper=bin_mapper, bundler=bundler,
                             mode=mode, client=client, embedded=embedded,
                             sparse=is_sparse(inputs.X))
    if check_inputs is not None:
        # Every label read, after the plan (which needs only the bin sample) and before the
        # cache write or loading: bad input still fails before any long computation.
        check_inputs()
    disk = None
    if mode == "disk":
        if not samples:  # fit_bin_mapper was wrapped (a benchmark): read it again
            samples.append(bin_sample(inputs.X, params, lambda a: compute(a)[0]))
        disk = open_disk_cache(params, sets, bounds, bin_mapper, bundler, samples[0], stored,
                               compute)
        caches.append(disk)
    samples.clear()
    if disk is not None and not disk.reused:
        create_cache(disk.root, disk.parts, [s for s, *_ in sets], bytes_binned)
        t_write = time.perf_counter()
        disk.pieces = write_cache(sets, groups, disk.root, bin_mapper, bundler, client, key,
                                  n_threads=threads)
        disk.seconds_write = time.perf_counter() - t_write
        finish_cache(disk.root, disk.pieces, disk.seconds_write)
        disk.remove = params["cache_path"] is None

    def task_sets_from(start, key):
        """The loading tasks of every set, each partition starting from ``start``'s raw
        scores (None: from zero)."""
        if disk is None:
            sets_ = {s: partition_tasks(Xs, ys, ws, bin_mapper, layouts[s][0], n_out,
                                        f"{key}-chunk" if s == "train" else f"{key}-{s}",
                                        groups=groups[s])
                     for s, Xs, ys, ws in sets}
        else:
            sets_ = {s: cached_partition_tasks(ys, ws, groups[s], disk.pieces[s], disk.root, s,
                                               *layouts[s][1:], n_out, f"{key}-{s}")
                     for s, Xs, ys, ws in sets}
        scores = {}
        for s, Xs, _, _ in sets:
            given = (init_scores or {}).get(s)
            # The rows as training reads them (float32), predicted lazily by the model so far;
            # a given init_score is not in the model, so it is added to its predictions.
            model = None if start is None else lazy_predict(start, Xs, raw_score=True)
            if model is not None and given is not None:
                model = model + given.reshape(model.shape).rechunk(model.chunks)
            if model is not None or given is not None:
                scores[s] = model if model is not None else given
        return {s: (_with_init_scores(sets_[s], scores[s], groups[s], f"{key}-{s}-init")
                    if s in scores else sets_[s])
                for s, *_ in sets}

    cache_report = dict(
        mode=mode, reason=reason, path=None if disk is None else disk.root,
        kept=disk is not None and not disk.remove,
        reused=disk is not None and disk.reused, bytes_binned=bytes_binned,
        bytes_on_disk=None if disk is None else directory_bytes(disk.root),
        seconds_write=None if disk is None else disk.seconds_write,
        n_partitions={s: len(groups[s]) for s, *_ in sets},
        partition_rows={s: np.diff(bounds[s]).tolist() for s, *_ in sets})
    total = int(params["n_estimators"])
    progress = progress if progress is not None else FitProgress(
        0 if init_booster is None else init_booster.num_iterations(), n_out)

    def model_so_far():
        return progress.model(init_booster, lambda trees, init, history, scores: _booster(
            params, inputs, bin_mapper, bundler, trees, init, history, scores))

    checkpoint_info = _checkpoint_info(params, inputs, objective)

    def save_checkpoint():
        model = model_so_far()
        if params["checkpoint_path"] is not None and model is not None:
            write_checkpoint(params["checkpoint_path"], model, progress, checkpoint_info)
            logger.info(f"checkpoint: round {progress.end} written to "
                        f"{params['checkpoint_path']}")

    every = int(params["checkpoint_every"])
    if every > 0 and params["checkpoint_path"] is not None:
        written = [progress.rounds // every]

        def on_rounds(progress):
            if progress.rounds // every > written[0]:
                written[0] = progress.rounds // every
                save_checkpoint()
        progress.on_rounds = on_rounds

    # 5. loading and 6. boosting, again from the last completed round after a lost worker
    lost = []  # the addresses of the workers lost so far
    measured, boosted, attempt = {}, False, 0
    bundle_report = []

    def loaded(conflict_stats):  # once, as the partitions are first loaded
        if not bundle_report:
            bundle_report.append(_bundle_report(bundler, bin_mapper, conflict_stats, inputs.X,
                                                params))
    start_measuring(client, key)
    try:
        while True:
            if callbacks is not None and callbacks.stopped is not None:
                progress.truncate(callbacks.stopped.stop_round + 1 - progress.begin)
            start = model_so_far() or init_booster
            stats_before = list(progress.tree_stats)
            if (progress.rounds >= total or progress.stop is not None
                    or (callbacks is not None and callbacks.stopped is not None)):
                result = _progress_result(progress, params, callbacks, n_out)
                boosted = True
                break
            segment_key = key if attempt == 0 else f"{key}-again{attempt}"
            task_sets = task_sets_from(start, segment_key)
            try:
                result, fitted_params = _load_and_boost(
                    params, task_sets, inputs, bounds, sets, client, embedded, local, threads,
                    mode, bin_mapper, bundler, objective, metrics, segment_key, learning_rates,
                    callbacks, progress, start, total, loaded, init_scores=init_scores,
                    positions=positions)
                boosted = True
                params = fitted_params
                break
            except WorkerRetiring as e:  # retired as its shards closed (_load_and_boost)
                attempt += 1
                logger.warning(f"worker(s) {', '.join(e.workers)} asked to retire; training "
                               f"continues after round {progress.end} on the workers left")
            except WorkerLost as e:
                lost += e.workers
                attempt += 1
                if len(lost) > int(params["max_worker_failures"]):
                    progress.close()  # late round states change neither file nor message
                    save_checkpoint()
                    where = ("" if params["checkpoint_path"] is None or not progress.trees
                             else f"; its checkpoint is {params['checkpoint_path']!r} (resume "
                                  f"with train(..., resume=True))")
                    raise WorkerLost(
                        f"{len(lost)} worker(s) lost during training ({', '.join(lost)}), more "
                        f"than max_worker_failures={params['max_worker_failures']}; the model "
                        f"had completed {progress.end} round(s){where}. {e}", lost) from e
                logger.warning(f"worker(s) {', '.join(e.workers)} lost; training continues "
                               f"after round {progress.end} on the workers left ({len(lost)} "
                               f"of max_worker_failures={params['max_worker_failures']})")
            finally:
                task_sets = None
    finally:
        try:  # after an error, without waiting: a lost worker would not answer
            measured = stop_measuring(client, key, wait=boosted)
        except Exception:  # best effort: the fit's own error, if any, is the one to raise
            pass
    return dict(result=result, bin_mapper=bin_mapper, bundler=bundler,
                params=_lookahead(dict(params, n_estimators=total), n_planned, mode),
                cache_report=cache_report,
                bundle_report=bundle_report[0] if bundle_report else None,
                memory_report=memory_report(plans, places, measured, mode), start=start,
                tree_stats=stats_before)


def _load_and_boost(params, task_sets, inputs, bounds, sets, client, embedded, local, threads,
                    mode, bin_mapper, bundler, objective, metrics, key, learning_rates,
                    callbacks, progress, start, total, on_loaded, init_scores=None,
                    positions=None):
    """Stages 5 and 6 once: the partitions loaded where the loop runs (on the workers the
    cluster has now; then ``on_loaded(conflict statistics)``), and the rounds from
    ``progress.end`` to ``total`` trained, continuing ``start`` (the model so far, or the
    fit's ``init_model``, or None). Returns ``(BoostResult, params as used)``; raises
    :class:`WorkerLost` when a shard's worker is lost."""
    # The workers the cluster has now, after the bin sample and the cache write (or a lost
    # worker): those that joined meanwhile are used; with fewer than min_workers, wait.
    n_workers = 0 if local else wait_for_workers(
        client, 1 if embedded else params["min_workers"], params["worker_wait_timeout"],
        verbose=params["verbose"])
    if local:
        executor = LocalExecutor(n_threads=threads)
    elif n_workers > 1:
        # Several workers: one actor per worker holds its block of partitions (see
        # oocgbdt.runtime.actor_executor). Made only now: a worker restarted during the phases
        # above (at its memory limit) would have lost its actor, and partitions pinned to its
        # old address would wait for it forever.
        executor = ActorExecutor(client, num_threads=params["num_threads"])
    else:
        executor = None  # one worker: the partitions are futures there
    try:
        loaded, conflict_stats = load_partitions(task_sets, client,
                                                 executor if n_workers > 1 else None,
                                                 n_threads=threads)
        task_sets.clear()  # the graphs that read raw X; only the partitions' handles stay
        if not local:
            # Reading raw partitions leaves freed heap that glibc keeps; hand it back so the
            # workers' memory (what their limit watches) is what training holds. Best effort:
            # a worker lost meanwhile is reported by the loop's liveness check, which names it
            # (here it would be a bare CommClosedError).
            client.run(release_heap, on_error="ignore")
        partitions = loaded["train"]
        eval_sets = [(name, loaded[f"eval_{i}"]) for i, (name, *_) in enumerate(inputs.evals)]
        del loaded
        on_loaded(conflict_stats)
        params = _lookahead(params, n_workers, mode)

        # 6. boosting
        done = progress.rounds
        boost_kwargs = dict(bin_mapper=bin_mapper, params=dict(params, n_estimators=total - done),
                            objective=objective, metrics=metrics, verbose=params["verbose"],
                            key=key, bundler=bundler,
                            learning_rates=None if learning_rates is None
                            else learning_rates[done:])
        if init_scores and "train" in init_scores:
            boost_kwargs["init_scores"] = True
        if start is not None:
            boost_kwargs["continuation"] = dict(
                first_round=start.num_iterations(),
                screening_scores=(start.screening_scores_ if not done
                                  else progress.screening_scores),
                screening_history=start.screening_history_,
                history=progress.history() if done else None,
                position_biases=progress.position_biases if done else None)
        if inputs.queries:
            names = {"train": "train"}
            names.update({f"eval_{i}": name for i, (name, *_) in enumerate(inputs.evals)})
            boost_kwargs["queries"] = {
                names[s]: partition_queries(inputs.queries[names[s]], bounds[s])
                for s, *_ in sets if names[s] in inputs.queries}
        if positions is not None:
            ids, n_positions = positions
            b = bounds["train"]
            boost_kwargs["positions"] = ([ids[b[i]:b[i + 1]] for i in range(len(b) - 1)],
                                         n_positions)
        result = run_boosting(client, executor, partitions, eval_sets, boost_kwargs,
                              callbacks=callbacks or None, progress=progress)
        del partitions, eval_sets
        return result, params
    finally:
        if executor is not None:
            # Asked to retire as the loop ended (after the last liveness check): let go now.
            late = executor.retiring_workers() if isinstance(executor, ActorExecutor) else []
            executor.close()
            if late:
                retire_workers(client, late)


def _resolve_categorical(params, inputs, feature_names):
    """``params`` with ``categorical_feature`` resolved to a list of column indices (names
    matched against the feature names, ``"auto"`` against the DataFrame input's category
    columns, ``inputs.categorical_auto``), checked before any work."""
    names = feature_names if feature_names is not None else getattr(inputs, "feature_names", None)
    cat = resolve_categorical_feature(params["categorical_feature"], names,
                                      int(inputs.X.shape[1]),
                                      auto=tuple(getattr(inputs, "categorical_auto", ()) or ()))
    if cat and is_sparse(inputs.X):
        raise ValueError(f"categorical_feature ({list(cat)}) needs dense X; sparse training "
                         f"input with categorical features is not supported")
    # interaction_constraints' indices against the data, before any work
    check_interaction_constraints(params.get("interaction_constraints"), int(inputs.X.shape[1]))
    return dict(params, categorical_feature=list(cat))


def _bundle_report(bundler, bin_mapper, conflict_stats, X, params):
    """What bundling did (None without it), logged and, with ``verbose``, printed."""
    if bundler is None:
        return None
    conflict_rows = int(sum(s[0] for s in conflict_stats))
    lost_values = int(sum(s[1] for s in conflict_stats))
    n_rows, n_features = int(X.shape[0]), int(X.shape[1])
    report = dict(
        conflict_rows=conflict_rows, lost_values=lost_values,
        n_bundles=bundler.n_bundles, layout=bundler.layout_,
        bytes_binned=n_rows * n_features * np.dtype(bin_mapper.binned_dtype_).itemsize,
        bytes_bundled=n_rows * bundler.n_bundles * bundler.dtype_.itemsize,
        summary=bundler.summary(conflict_rows))
    logger.info(report["summary"])
    if params["verbose"]:
        print(report["summary"] + (f" ({lost_values} values lost)" if lost_values else ""))
    if lost_values and float(params["max_conflict_rate"]) == 0.0:
        # Bundles are chosen on the bin sample; features that never share a row there may
        # share rows outside it, where the bundle column keeps one value of the two.
        warnings.warn(
            f"enable_bundle: {lost_values} values on {conflict_rows} training rows were lost "
            f"where bundled features are non-zero together: the bundles were chosen on the "
            f"{min(n_rows, int(params['bin_construct_sample_cnt']))}-row bin sample "
            f"(bin_construct_sample_cnt), where those features never are. The trees are "
            f"grown without these values; for exact histograms pass enable_bundle=False or a "
            f"bin_construct_sample_cnt of at least the {n_rows} training rows.",
            UserWarning, stacklevel=2)
    return report


def _lookahead(params, n_workers, mode):
    """``params`` with ``lookahead_leaves`` chosen when it is None (auto): split leaves ahead
    where a pass is costly (round trips between workers: 1, or a read of the disk cache: 2); in
    process the extra work on leaves split ahead outweighs the passes saved. Only exact
    leaf-wise growth with an unbounded pool splits ahead (see the parameter's doc): 0 is
    recorded where it is ignored, as the value used."""
    if params["lookahead_leaves"] is not None:
        return params
    ahead = (params["grow_policy"] == "leafwise" and params["max_leaves_per_pass"] == 1
             and not params["histogram_pool_size"] > 0
             # per-node random draws follow the order of the searches
             and not params["extra_trees"] and not params["feature_fraction_bynode"] < 1.0)
    if not ahead:
        value = 0
    elif mode == "disk":
        value = 2
    else:  # memory: one ahead on several workers (measured best of 0, 1 and 2 on 2 workers)
        value = 1 if n_workers > 1 else 0
    return dict(params, lookahead_leaves=value)


def partition_queries(group, bounds):
    """Each partition's ``(query boundaries, index of its first query)``: boundaries int64 from
    0 to its rows, from the query sizes and
    the partitions' row bounds, which are query bounds (:func:`~oocgbdt.dask.inputs.align_to_queries`)."""
    edges = np.concatenate([[0], np.cumsum(np.asarray(group, dtype=np.int64))])
    out = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        inside = edges[(edges >= a) & (edges <= b)]
        if inside[0] != a or inside[-1] != b:  # pragma: no cover - guarded by align_to_queries
            raise RuntimeError(f"partition rows [{a}, {b}) split a query")
        out.append((inside - a, int(np.searchsorted(edges, a))))
    return out


def _check_queries(objective, metrics, inputs):
    """Ranking needs query groups: ``group`` for a ranking objective, ``eval_group`` for a
    ranking metric on an eval set; a clear ValueError before any work."""
    queries = inputs.queries or {}
    if getattr(objective, "needs_queries", False) and "train" not in queries:
        raise ValueError(f"objective {objective.name!r} needs query groups: pass group= (the "
                         f"sizes of the consecutive queries of the training rows)")
    ranked = [m.name for m in metrics if getattr(m, "needs_queries", False)]
    for name, *_ in inputs.evals:
        if ranked and name not in queries:
            raise ValueError(f"metric {ranked[0]!r} needs the query groups of eval set "
                             f"{name!r}: pass eval_group= (one array of query sizes per eval "
                             f"set)")


def _split_callables(params):
    """``(params, fobj, fevals)``: a callable ``objective`` (under any alias) becomes the name
    ``"custom"`` and is returned apart; callables in ``metric`` are returned apart (LightGBM's
    custom objective and ``feval``)."""
    from oocgbdt.params import ALIASES

    params = dict(params or {})
    fobj, fevals = None, []
    for key in list(params):
        canonical = ALIASES.get(key)
        value = params[key]
        if canonical == "objective" and callable(value):
            fobj = value
            params[key] = "custom"
        elif canonical == "metric" and (callable(value) or (
                isinstance(value, (list, tuple)) and any(callable(v) for v in value))):
            items = list(value) if isinstance(value, (list, tuple)) else [value]
            fevals += [v for v in items if callable(v)]
            names = [v for v in items if not callable(v)]
            # Only callables: no built-in metric (not the objective's default).
            params[key] = names if names else "None"
    return params, fobj, fevals
