"""This module contains the boosting loop, written once for every executor.

Data flow position: on the client. Per round: gradients per partition, one tree per output grown by
:class:`~oocgbdt.core.grower.TreeGrower` over a :class:`~oocgbdt.core.histogram_source.HistogramSource`,
the finished tree applied to every training and evaluation partition, metric partial sums
tree-reduced, and early stopping decided once, here. The Dask layer calls :func:`boost` with a
executor over a ``distributed.Client``; tests and NumPy input call it with a
:class:`~oocgbdt.core.executor.LocalExecutor`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np
from tqdm.auto import tqdm

from oocgbdt.core.callback import evaluation_result_list
from oocgbdt.core.executor import PEER_WAIT, tree_reduce
from oocgbdt.core.partition import (partition_add_score, partition_apply_tree, partition_compact_columns,
                                partition_gradients, partition_leaf_counts,
                                partition_label_stats, partition_metric_partials, merge_metric_partials,
                                partition_position_sums, partition_set_positions,
                                partition_set_queries)
from oocgbdt.core.grower import TreeGrower
from oocgbdt.core.histogram_source import HistogramSource
from oocgbdt.core.node_sampling import NodeSampler
from oocgbdt.core.quantized import (GradientQuantizer, partition_gradient_max,
                                    partition_leaf_gradient_sums, partition_quantize,
                                    renewed_leaf_values)
from oocgbdt.core.percentile import (lo_levels_for, percentile_rows_of_labels,
                                     percentile_rows_of_tree, weighted_percentiles)
from oocgbdt.core.screening import FeatureScreener
from oocgbdt.core.sampling import RowSampler, partition_n_rows, sampling_enabled
from oocgbdt.core.split import (FeatureMeta, SplitParams, check_monotone_constraints,
                                feature_blocks)

__all__ = ["BoostResult", "boost", "compute_init_score", "histogram_pool_capacity",
           "round_state", "stop_by_callback"]


@dataclass
class BoostResult:
    """What :func:`boost` returns: trees and training history.

    ``best_iteration`` is 1-based (LightGBM's convention) and set only when early stopping
    was requested; ``tree_stats`` has one dict per tree: passes, leaves, rows the tree was
    trained on (``n_rows``: every row, or the round's GOSS/bagging sample), leaf histograms built
    from rows (``n_hist_built``, the root's included) and derived by subtraction
    (``n_hist_subtracted``), kept histograms dropped to respect ``histogram_pool_size``
    (``n_hist_dropped``) and the most kept at once between passes (``max_hist_kept``),
    ``seconds`` in total
    (growing the tree, applying it to every row, and the tree's share of its round's gradients
    and row sampling: a multiclass round's trees share it equally), the share spent sampling
    rows (``seconds_sampling``; on an executor that defers its steps to its first gather,
    the shards' executors, this includes the round's gradients and whatever else was queued
    before the selection's first gather), the same total in CPU seconds of this process, all threads
    (``cpu_seconds``: robust to other processes on a shared machine; only meaningful where the
    loop's tasks run in this process), seconds waiting for split records, and, on a executor that times
    its tasks (:class:`~oocgbdt.core.executor.LocalExecutor`), seconds routing rows and building
    histograms (``seconds_histogram``), summing partial histograms over partitions
    (``seconds_reduce``) and, per pass, the last sum, the siblings' subtraction and the split
    search (``seconds_split_search``); on several workers, the seconds a worker waited for the
    values other workers push to it (``seconds_peer_wait``: their partial histograms and
    gathered results; what the exchange and the slower worker cost; read as the other timers
    are, from the worker running the loop or the largest over workers; 0 in process).
    """

    trees: list
    init_score: np.ndarray
    evals_result: dict = field(default_factory=dict)
    best_iteration: int | None = None
    best_score: dict = field(default_factory=dict)
    tree_stats: list = field(default_factory=list)
    screening_history: list | None = None
    screening_per_tree: bool = False
    screening_scores: np.ndarray | None = None


def compute_init_score(executor, label_stat_handles, objective, params, split_every, key):
    """Boost-from-average init score (shape (n_outputs,)) from per-partition label statistics."""
    k = objective.num_tree_per_iteration
    if not params["boost_from_average"]:
        return np.zeros(k)
    stats = executor.gather(tree_reduce(executor, _sum_list, label_stat_handles, split_every,
                                       f"{key}-labelsum"))
    return np.asarray(objective.init_score_from_stats(stats), dtype=np.float64).reshape(k)


def _label_stats_and_init(executor, partitions, objective, params, split_every, key, row_offsets,
                          weighted, from_average=True):
    """``(objective, init)``: the objective with its global label statistics
    (:meth:`~oocgbdt.core.objectives.Objective.with_label_stats`) and the init score: the
    objective's ``BoostFromScore``, a weighted percentile of the labels for the objectives that
    renew leaves (:mod:`oocgbdt.core.percentile`), or zeros without ``boost_from_average`` or
    when the rows start from given scores (``from_average`` False: an ``init_score`` or a model
    to continue, as LightGBM's ``GBDT::BoostFromAverage`` skips a training set with init
    scores)."""
    n = len(partitions)
    k = objective.num_tree_per_iteration
    handles = executor.map(partition_label_stats, partitions, [objective] * n,
                           key=f"{key}-labelstats")
    stats = executor.gather(tree_reduce(executor, _sum_list, handles, split_every,
                                        f"{key}-labelsum"))
    objective = objective.with_label_stats(stats)
    if not (params["boost_from_average"] and from_average):
        return objective, np.zeros(k)
    if objective.renew_alpha is None:
        return objective, np.asarray(objective.init_score_from_stats(stats),
                                     dtype=np.float64).reshape(k)
    lo = lo_levels_for(row_offsets[-1])
    rows = executor.map(percentile_rows_of_labels, partitions, [objective] * n,
                        list(row_offsets[:-1]), [lo] * n, key=f"{key}-initrows")
    values, _ = weighted_percentiles(executor, rows, 1, objective.renew_alpha, weighted, lo,
                                     split_every, f"{key}-initpct", float32=True)
    return objective, objective.init_score_from_percentile(values[0])


def _has_weight(data):
    return data.weight is not None


def _renew_leaves(executor, partitions, tree, arrays_h, k, objective, row_offsets, weighted,
                  split_every, key):
    """LightGBM's ``RenewTreeOutput``: each leaf's value becomes the weighted percentile of its
    rows' residuals, times the learning rate (the tree's values are replaced in place)."""
    n = len(partitions)
    lo = lo_levels_for(row_offsets[-1])
    rows = executor.map(percentile_rows_of_tree, partitions, [arrays_h] * n, [k] * n,
                        [objective] * n, list(row_offsets[:-1]), [lo] * n,
                        key=f"{key}-renewrows")
    values, counts = weighted_percentiles(executor, rows, tree.n_leaves, objective.renew_alpha,
                                          weighted, lo, split_every, f"{key}-renew")
    keep = counts > 0
    tree.leaf_value = np.where(keep, values * tree.shrinkage, tree.leaf_value)


def _quantized_setup(executor, partitions, params, objective, meta, key):
    """Quantized training: ``(GradientQuantizer, partitions' first global rows)``, or
    ``(None, None)`` without ``use_quantized_grad``. Checks, before any tree, what it does not
    support and that integer sums fit 32 bits."""
    if not params.get("use_quantized_grad"):
        return None, None
    if meta.is_categorical is not None and meta.is_categorical.any():
        raise ValueError("use_quantized_grad supports numerical features only: found "
                         "categorical features (categorical_feature); use "
                         "use_quantized_grad=False, or pass those columns as numerical")
    weighted = bool(executor.gather(executor.submit(_has_weight, partitions[0],
                                                    key=f"{key}-quant-hasweight")))
    quantizer = GradientQuantizer.from_params(params, objective.name, weighted,
                                              int(meta.hist_columns.shape[0]))
    rows = executor.gather(executor.map(partition_n_rows, partitions, key=f"{key}-quant-nrows"))
    quantizer.check_rows(int(np.sum(rows)))
    return quantizer, [int(o) for o in np.concatenate([[0], np.cumsum(rows)])[:-1]]


def _sample_rows(sampler, executor, partitions, rnd: int, key: str, keys_made: bool = False):
    """``(partitions, seconds)``: round ``rnd``'s rows selected (:meth:`RowSampler.sample`),
    and the wall seconds it took."""
    t = time.perf_counter()
    partitions = sampler.sample(executor, partitions, rnd, key=key, keys_made=keys_made)
    return partitions, time.perf_counter() - t


def _quantize_tree(executor, partitions, quantizer, sp, class_idx, tree_index, offsets, key):
    """Discretize every partition's gradients of output ``class_idx`` for one tree; returns the
    partitions and the tree's :class:`SplitParams` (with its scales)."""
    n = len(partitions)
    maxima = executor.gather(executor.map(partition_gradient_max, partitions, [class_idx] * n,
                                          [quantizer.subset_scales] * n, key=f"{key}-qmax"))
    gs, hs, igs, ihs = quantizer.scales(maxima)
    keys = quantizer.keys(tree_index)
    partitions = executor.map(partition_quantize, partitions, [class_idx] * n,
                              [(igs, ihs)] * n, [quantizer.constant_hessian] * n, [keys] * n,
                              offsets, key=f"{key}-quantize", consume=0)
    return partitions, replace(sp, quant_scales=(gs, hs))


def _renew_quantized_leaves(executor, partitions, arrays_h, tree, k, params, split_every, key):
    """``quant_train_renew_leaf``: leaf values from the true gradient sums (LightGBM's
    ``RenewIntGradTreeOutput``), times the shrinkage (the tree's values are replaced)."""
    n = len(partitions)
    sums = executor.map(partition_leaf_gradient_sums, partitions, [arrays_h] * n, [k] * n,
                        key=f"{key}-qrenew")
    total = executor.gather(tree_reduce(executor, _sum_list, sums, split_every, f"{key}-qrsum"))
    tree.leaf_value = renewed_leaf_values(total, params) * tree.shrinkage


def histogram_pool_capacity(pool_size_mb, n_hist_bins):
    """Leaf histograms that fit in ``histogram_pool_size`` MB (2**20 bytes); None: no bound.

    A leaf histogram is ``(n_hist_bins, 2)`` float64 (16 bytes per bin, as LightGBM's
    ``hist_t`` pairs), counted at the whole layout's size whatever the round's feature
    selection. Unlike LightGBM (at least 2 slots), a pool smaller than one histogram keeps
    none: every split then histograms both children.
    """
    if pool_size_mb is None or pool_size_mb <= 0:
        return None
    return int(float(pool_size_mb) * 2**20 // (int(n_hist_bins) * 2 * 8))


def _sum_list(parts):
    out = parts[0]
    for p in parts[1:]:
        out = out + p
    return out


def _improved(metric, score, best, min_delta=0.0):
    """Whether ``score`` improves on ``best`` by more than ``min_delta`` (LightGBM's
    ``early_stopping_min_delta``; ``_EarlyStoppingCallback`` in its ``callback.py``)."""
    if best is None:
        return True
    return (score > best + min_delta) if metric.higher_is_better else (score < best - min_delta)


def _scatter_feature_blocks(executor, meta, n_feature_blocks):
    """``(meta, feature_blocks)``: the pass's split search shared by ``n_feature_blocks`` feature blocks
    (:func:`~oocgbdt.core.split.feature_blocks`), each block's search metadata scattered;
    or ``(meta, None)`` when not shared."""
    found = feature_blocks(meta, n_feature_blocks) if n_feature_blocks > 1 else None
    if found is None:
        return meta, None
    return meta, [(lo, hi, executor.scatter(m)) for lo, hi, m in found]


def progress_bar(total, verbose=True):
    """The progress bar over boosting rounds (tqdm; disabled unless ``verbose``)."""
    return tqdm(total=int(total), disable=not verbose, unit="round", desc="oocgbdt")


def round_postfix(evals_result) -> dict:
    """The progress bar's postfix after a round: the last eval set's latest metric values
    (empty when there are none)."""
    if not evals_result:
        return {}
    last = next(reversed(evals_result))
    return {f"{last}'s {m}": f"{v[-1]:.6g}" for m, v in evals_result[last].items() if v}


def boost(executor, partitions, *, bin_mapper, params, objective, metrics=(), eval_sets=(),
          verbose=True, key="oocgbdt", bundler=None, progress=None, learning_rates=None,
          on_round=None, continuation=None, queries=None, init_scores=False,
          positions=None, on_state=None) -> BoostResult:
    """Run the boosting rounds.

    Parameters
    ----------
    executor : LocalExecutor or the Dask layer's executor
    partitions : list of handles to :class:`~oocgbdt.core.partition.PartitionData`
        Training rows (from :func:`~oocgbdt.core.partition.partition_init`, raw scores at zero).
    bin_mapper : fitted BinMapper
    bundler : fitted FeatureBundler, optional
        When given, the partitions' columns are its bundles (Exclusive Feature Bundling): histograms
        are built per bundle and split search runs per original feature.
    params : dict
        Resolved parameters (:func:`oocgbdt.params.resolve_params`).
    objective : Objective; metrics : list of metric objects
    eval_sets : list of ``(name, list of PartitionData handles)``
        Eval rows, binned one column per feature even when ``bundler`` is given (as
        LightGBM's validation data, ``Dataset::CreateValid``): each tree is walked on them by
        feature.
    verbose : bool
        Show a progress bar over rounds with the latest metric.
    progress : callable, optional
        ``progress(total)`` returns the bar to drive instead (anything with tqdm's ``update``,
        ``set_postfix`` and ``close``); default :func:`progress_bar` with ``verbose``.
    key : str
        Prefix of task keys, unique per training run.
    learning_rates : sequence of float, optional
        One learning rate per round (``reset_parameter``); default ``params["learning_rate"]``.
    on_round : callable, optional
        ``on_round(round, evaluation_result_list)`` after each round's evaluation
        (:func:`oocgbdt.core.callback.evaluation_result_list`); when it returns an
        :class:`~oocgbdt.core.callback.EarlyStopException`, training ends after this round with
        that best iteration (LightGBM's callbacks; see :class:`~oocgbdt.core.callback.CallbackList`).
    continuation : dict, optional
        Continue a model (LightGBM's ``init_model``): the partitions' (and eval sets') raw
        scores already hold its predictions (:func:`~oocgbdt.core.partition.partition_set_init_scores`),
        so no initial score is computed or added. Keys: ``first_round`` (the model's rounds:
        this fit's rounds are numbered from it, so the random streams keyed by round, the
        row sampling and the feature selection, are those one longer fit would draw; the
        ``feature_fraction`` stream is replayed past the model's trees, exactly unless
        ``feature_fraction_bynode`` drew from it too; LightGBM's continued booster starts its
        bagging and feature_fraction generators afresh instead),
        ``screening_scores`` and ``screening_history`` (the model's feature screening state,
        or None). ``best_iteration`` then counts the model's rounds too. With ``history``
        (a dict: ``rounds``, the rounds this fit already trained before the model was taken
        from it, ``evals_result`` their evaluations and ``best`` the early-stopping state as
        :func:`round_state` gives it), the fit goes on as one uninterrupted fit: its
        evaluations continue the history, early stopping counts from it and
        ``best_iteration`` counts the model's rounds (a checkpoint resumed, or a fit continued
        after a lost worker, :mod:`oocgbdt.core.checkpoint`).
    queries : dict or None
        Ranking: ``{"train": [...], eval name: [...]}``, each partition's query boundaries
        (int64, from 0 to its rows), in partition order.
    init_scores : bool, default False
        The training partitions' raw scores hold given starting scores (LightGBM's
        ``init_score``, :func:`~oocgbdt.core.partition.partition_set_init_scores`): no initial
        score is computed or added (LightGBM's ``GBDT::BoostFromAverage`` skips a training set
        with init scores), and the model's ``init_score`` is zero.
    positions : tuple or None
        Unbiased LambdaRank: ``(ids, n_positions)``, ``ids`` each training partition's rows'
        position ids (int32 arrays in ``0 .. n_positions - 1``), in partition order. Each
        round's gradients then use the position bias factors, which are updated after them from
        their sums over every partition (``LambdarankNDCG.update_position_biases``).
    on_state : callable, optional
        ``on_state(state)`` after each completed round (its trees applied, evaluated and the
        screening state updated), before early stopping is decided: ``state`` is the dict of
        :func:`round_state`, what a checkpoint needs to continue from that round.
    """
    meta = FeatureMeta.from_bin_mapper(bin_mapper, bundler)
    check_monotone_constraints(params, meta.n_bins.shape[0],
                               () if meta.is_categorical is None
                               else np.flatnonzero(meta.is_categorical))
    sp = SplitParams.from_params(params)
    max_cached = histogram_pool_capacity(params["histogram_pool_size"], meta.n_hist_bins)
    # Several shards: each reduces and searches a block of features (LightGBM's data-parallel
    # learner). Not with a bounded pool, whose evictions count whole histograms.
    n_feature_blocks = executor.n_feature_blocks if max_cached is None else 1
    replicate = bool(executor.replicate_search)
    meta, blocks = _scatter_feature_blocks(executor, meta, n_feature_blocks)
    sp_h = executor.scatter(sp)
    meta_h = executor.scatter(meta)
    n_out = objective.num_tree_per_iteration
    learning_rate = float(params["learning_rate"])
    split_every = int(params["split_every"])
    es_rounds = params["early_stopping_rounds"]
    metric_list = list(metrics)
    # A callable metric's name is the one it returns: its list starts at its first value.
    evals_result = {name: {m.name: [] for m in metric_list if getattr(m, "feval", None) is None}
                    for name, _ in eval_sets}
    eval_chunks = {name: list(handles) for name, handles in eval_sets}
    best = {}  # (set, metric) -> (score, round)
    n = len(partitions)
    first_round = 0 if continuation is None else int(continuation["first_round"])
    history = (continuation or {}).get("history")
    done = 0  # rounds of this fit trained before first_round (a resumed fit's history)
    if history:
        done = int(history["rounds"])
        evals_result.update({name: {m: list(v) for m, v in by_metric.items()}
                             for name, by_metric in history["evals_result"].items()
                             if name in evals_result})
        best.update({(s, m): (float(score), int(r)) for s, m, score, r in history["best"]})
    if queries:
        partitions = executor.map(partition_set_queries, partitions, queries["train"],
                                  key=f"{key}-queries", consume=0)
        eval_chunks = {name: (executor.map(partition_set_queries, ec, queries[name],
                                           key=f"{key}-queries-{name}", consume=0)
                              if name in queries else ec)
                       for name, ec in eval_chunks.items()}
    biases = None
    if positions is not None:
        position_ids, n_positions = positions
        partitions = executor.map(partition_set_positions, partitions, list(position_ids),
                                  key=f"{key}-positions", consume=0)
        biases = np.zeros(int(n_positions), dtype=np.float32)
        if (continuation or {}).get("position_biases") is not None:
            # a fit continued after a lost worker or from a checkpoint: the factors it had
            biases = np.asarray(continuation["position_biases"], dtype=np.float32).copy()
    renew = objective.renew_alpha is not None
    row_offsets = None
    if renew:
        rows = executor.gather(executor.map(partition_n_rows, partitions, key=f"{key}-nrows"))
        row_offsets = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
    # The weighted percentile definition applies with sample weights, and always for MAPE.
    renew_weighted = renew and (
        objective.percentile_weights(np.zeros(1, np.float32), None) is not None
        or executor.gather(executor.submit(_has_weight, partitions[0], key=f"{key}-hasweight")))
    from_average = continuation is None and not init_scores
    objective, init = _label_stats_and_init(executor, partitions, objective, params, split_every,
                                            key, row_offsets, renew_weighted, from_average)
    if from_average:
        partitions = executor.map(partition_add_score, partitions, [init] * n, key=f"{key}-init",
                                  consume=0)
        eval_chunks = {name: executor.map(partition_add_score, ec, [init] * len(ec),
                                          key=f"{key}-init-{name}", consume=0)
                       for name, ec in eval_chunks.items()}
    else:
        init = np.zeros(n_out, dtype=np.float64)  # the given scores are in place
    result = BoostResult(trees=[], init_score=init, evals_result=evals_result)
    screener = FeatureScreener.from_params(params, meta.feature_mask)
    if screener is not None and continuation is not None:
        if continuation.get("screening_scores") is not None:
            screener.scores_ = np.asarray(continuation["screening_scores"], dtype=np.float64).copy()
        screener.history_ = [np.asarray(h, dtype=np.int64)
                             for h in continuation.get("screening_history") or []]
        if screener.per_tree:
            screener.skip(first_round * n_out)  # feature_fraction's stream as one longer fit
    # Splitting ahead never changes a tree, unless the pool evicts: then which leaves keep
    # their histograms (and so which children are subtracted, a rounding difference) would
    # depend on it. With a bounded pool, splits are made in their turn only.
    lookahead = (params["lookahead_leaves"] or 0) if max_cached is None else 0
    node_sampler = NodeSampler.from_params(params, meta.feature_mask)
    if node_sampler is not None and node_sampler.draws:
        # Per-node draws follow the order of the searches: leaves are searched in their turn.
        lookahead = 0
    sampler = None
    if sampling_enabled(params):
        rows = executor.gather(executor.map(partition_n_rows, partitions, key=f"{key}-nrows"))
        sampler = RowSampler(params, rows)
    quantizer, quant_offsets = _quantized_setup(executor, partitions, params, objective, meta,
                                                key)
    # Bagging draws its rows from the labels alone: drawn before the gradients, only its rows
    # need them (the same values; see partition_gradients). Not with quantized gradients
    # (their scales are taken over every row, as LightGBM's) or position biases (summed over
    # every row's gradients).
    bag_first = (sampler is not None and sampler.strategy != "goss" and quantizer is None
                 and biases is None and objective.row_wise)
    total = int(params["n_estimators"])
    bar = progress(total) if progress is not None else progress_bar(total, verbose)
    stopped = None  # the EarlyStopException a callback ended training with
    try:
        for rnd in range(total):
            g = first_round + rnd  # the round's number in the whole model
            t_round, c_round = time.perf_counter(), time.process_time()
            round_objective = objective.at_round(g)  # rank_xendcg's draws depend on it
            if biases is not None:
                round_objective = round_objective.with_position_biases(biases)
            seconds_sampling = 0.0
            if bag_first:  # the bag first, then the gradients of its rows alone
                partitions, seconds_sampling = _sample_rows(sampler, executor, partitions, g,
                                                            f"{key}-sample-{rnd}")
            sample_after = not bag_first and sampler is not None and sampler.active(g)
            # a GOSS round's keys with the gradients: one task per partition less
            goss_round = sample_after and sampler.strategy == "goss"
            partitions = executor.map(partition_gradients, partitions, [round_objective] * n,
                                      [bag_first] * n, [goss_round] * n,
                                      key=f"{key}-grad-{rnd}", consume=0)
            if biases is not None:
                sums = executor.map(partition_position_sums, partitions, [len(biases)] * n,
                                    key=f"{key}-possums-{rnd}")
                sums = executor.gather(tree_reduce(executor, _sum_list, sums, split_every,
                                                   f"{key}-possum-{rnd}"))
                biases = objective.update_position_biases(biases, sums, learning_rate)
            if sample_after:
                partitions, seconds_sampling = _sample_rows(sampler, executor, partitions, g,
                                                            f"{key}-sample-{rnd}", goss_round)
            # The round's shared work (gradients, row sampling), split among its trees.
            share = (time.perf_counter() - t_round) / n_out
            share_sampling = seconds_sampling / n_out
            share_cpu = (time.process_time() - c_round) / n_out
            round_meta, round_meta_h, round_blocks = meta, meta_h, blocks
            round_gains = np.full(meta.feature_mask.shape[0], -np.inf)
            round_trees = []
            for k in range(n_out):
                if screener is not None and (k == 0 or screener.per_tree):
                    # One selection per round, shared by a multiclass round's trees; LightGBM's
                    # feature_fraction draws one per tree.
                    round_meta, round_blocks = _scatter_feature_blocks(
                        executor, meta.screened(screener.select(g)), n_feature_blocks)
                    round_meta_h = executor.scatter(round_meta)
                    partitions = executor.map(partition_compact_columns, partitions,
                                              [round_meta_h] * n, key=f"{key}-columns-{rnd}-{k}",
                                              consume=0)
                    if node_sampler is not None and screener.rng is not None:
                        node_sampler = node_sampler.with_col_state(screener.rng.state)
                t_start, c_start = time.perf_counter(), time.process_time()
                # Read the executor's timers once before and once after the tree (a remote
                # executor asks its workers for them).
                timed = dict(executor.seconds)
                tree_key = f"{key}-t{len(result.trees) + len(round_trees)}"
                tree_sp, tree_sp_h = sp, sp_h
                if quantizer is not None:
                    partitions, tree_sp = _quantize_tree(executor, partitions, quantizer, sp, k,
                                                         g * n_out + k, quant_offsets, tree_key)
                    tree_sp_h = executor.scatter(tree_sp)
                # Leaves split ahead of their turn take source ids up to 2 x num_leaves.
                source = HistogramSource(partitions, k, round_meta_h, tree_sp_h,
                                         2 * int(params["num_leaves"]),
                                         executor=executor, split_every=split_every, key=tree_key,
                                         max_cached=max_cached, feature_blocks=round_blocks,
                                         replicate=replicate,
                                         node=None if node_sampler is None
                                         else node_sampler.for_tree(round_meta.feature_mask))
                grower = TreeGrower(source, tree_sp, meta.missing_types, params["num_leaves"],
                                    params["max_depth"], grow_policy=params["grow_policy"],
                                    max_leaves_per_pass=params["max_leaves_per_pass"],
                                    lookahead_leaves=lookahead)
                tree, _ = grower.grow(bin_mapper.bin_upper_bounds_,
                                      learning_rate if learning_rates is None
                                      else float(learning_rates[rnd]), k,
                                      bin_categories=getattr(bin_mapper, "bin_categories_", None))
                tree_rows = source.rows  # each partition's rows by leaf: applying the tree reads them
                if node_sampler is not None:
                    node_sampler = source.node  # its streams go on with the next tree
                    if screener is not None and screener.rng is not None:
                        screener.rng.state = node_sampler.col_state  # one stream, as LightGBM's
                source.close()
                if source.feature_gains is not None:
                    round_gains = np.maximum(round_gains, source.feature_gains)
                arrays = tree.binned_arrays(meta.default_bins, meta.n_bins)
                if meta.bundled:
                    arrays.update(meta.node_arrays(tree.split_feature))
                if (quantizer is not None and params["quant_train_renew_leaf"]
                        and tree.n_leaves > 1):
                    _renew_quantized_leaves(executor, partitions, executor.scatter(arrays),
                                            tree, k, params, split_every, tree_key)
                    arrays["leaf_value"] = tree.leaf_value
                if renew and tree.n_leaves > 1:
                    _renew_leaves(executor, partitions, tree, executor.scatter(arrays), k,
                                  objective, row_offsets, renew_weighted, split_every, tree_key)
                    arrays["leaf_value"] = tree.leaf_value
                arrays["routed"] = np.asarray(grower.routed, dtype=bool)
                arrays_h = executor.scatter(arrays)
                # Eval partitions are binned per feature, never bundled
                # (oocgbdt.dask.partitions.set_layout): their walk reads feature columns.
                eval_h = arrays_h
                if meta.bundled and eval_chunks:
                    eval_h = executor.scatter(dict(tree.binned_arrays(meta.default_bins, meta.n_bins),
                                                   leaf_value=arrays["leaf_value"]))
                partitions = executor.map(partition_apply_tree, partitions, [arrays_h] * n, [k] * n,
                                          tree_rows, key=f"{tree_key}-apply", consume=0)
                del tree_rows
                # The tree's true leaf counts, counted as it is applied (one small gather; the
                # next tree's pass needs the applied scores anyway).
                counts = executor.gather(executor.map(partition_leaf_counts, partitions,
                                                    key=f"{tree_key}-counts"))
                tree.set_leaf_counts(np.sum(counts, axis=0))
                for name in eval_chunks:
                    ec = eval_chunks[name]
                    eval_chunks[name] = executor.map(partition_apply_tree, ec, [eval_h] * len(ec),
                                                    [k] * len(ec), key=f"{tree_key}-apply-{name}",
                                                    consume=0)
                round_trees.append(tree)
                stats = dict(n_passes=source.n_passes, n_leaves=tree.n_leaves,
                             n_hist_built=source.n_hist_built,
                             n_hist_subtracted=source.n_hist_subtracted,
                             n_hist_dropped=source.n_hist_dropped,
                             max_hist_kept=source.max_hist_kept,
                             n_rows=int(round(float(tree.leaf_count.sum()))),
                             seconds=time.perf_counter() - t_start + share,
                             cpu_seconds=time.process_time() - c_start + share_cpu,
                             seconds_sampling=share_sampling,
                             seconds_waiting=grower.time_waiting)
                now = dict(executor.seconds)
                spent = {f: now[f] - timed.get(f, 0.0) for f in now}
                stats.update(
                    seconds_histogram=(spent.get("partition_root", 0.0)
                                       + spent.get("partition_split_many", 0.0)),
                    seconds_reduce=spent.get("sum_histograms", 0.0),
                    seconds_split_search=(spent.get("finish_root", 0.0)
                                          + spent.get("finish_split_many", 0.0)),
                    seconds_quantize=(spent.get("partition_gradient_max", 0.0)
                                      + spent.get("partition_quantize", 0.0)),
                    seconds_peer_wait=spent.get(PEER_WAIT, 0.0))
                result.tree_stats.append(stats)
            if all(t.n_leaves == 1 for t in round_trees) and g > 0:
                # LightGBM stops when no leaf meets the split requirements (gbdt.cpp TrainOneIter).
                result.tree_stats = result.tree_stats[:len(result.trees)]
                break
            result.trees.extend(round_trees)
            if screener is not None:
                screener.update(round_meta.feature_mask, round_gains)
            stop = _evaluate(executor, eval_chunks, metric_list, objective, evals_result, best,
                             done + rnd, es_rounds, params, split_every, key)
            if on_state is not None:
                on_state(round_state(g, done + rnd, round_trees, result, evals_result, best,
                                     screener, stop, biases))
            if metric_list and eval_chunks:
                bar.set_postfix(round_postfix(evals_result), refresh=False)
            bar.update(1)
            if stop is not None:
                result.best_iteration = stop
                break
            if on_round is not None:
                stopped = on_round(g, evaluation_result_list(evals_result, metric_list,
                                                             done + rnd))
                if stopped is not None:
                    break
        else:
            if es_rounds is not None and best:
                result.best_iteration = _best_round(best, params)
    finally:
        bar.close()
    if screener is not None:
        result.screening_per_tree = screener.per_tree
        per = n_out if screener.per_tree else 1
        result.screening_history = screener.history_[:(first_round + len(result.trees) // n_out)
                                                     * per]
        result.screening_scores = screener.scores_
    if result.best_iteration is not None:
        result.best_score = {name: {m: evals_result[name][m][result.best_iteration - 1]
                                    for m in evals_result[name]} for name in evals_result}
        result.best_iteration += first_round - done
    if stopped is not None:
        stop_by_callback(result, stopped, n_out, first_round, done)
    return result


def round_state(g, i, round_trees, result, evals_result, best, screener, stop,
                position_biases=None) -> dict:
    """What a checkpoint needs of round ``g`` (counted in the whole model; ``i`` counts the
    fit's own rounds): ``round``, its ``trees`` and their ``tree_stats``, the fit's
    ``init_score``, its ``evals`` (``{set: {metric: value}}``), the early-stopping state
    ``best`` (``[set, metric, best score, its round of the fit]`` per pair, in order), the
    feature screening state (``screening_scores``, and ``screening_row``, the round's
    features), ``stop`` (the 1-based round of the fit early stopping ends at, or None) and
    ``position_biases`` (unbiased LambdaRank's factors after the round, or None)."""
    n = len(round_trees)
    return dict(
        round=int(g), trees=list(round_trees), tree_stats=list(result.tree_stats[-n:]),
        init_score=np.asarray(result.init_score, dtype=np.float64),
        evals={name: {m: float(v[i]) for m, v in by_metric.items() if len(v) > i}
               for name, by_metric in evals_result.items()},
        best=[[s, m, float(score), int(r)] for (s, m), (score, r) in best.items()],
        screening_scores=None if screener is None else np.array(screener.scores_),
        screening_row=None if screener is None else np.asarray(screener.history_[-1]),
        stop=stop,
        position_biases=None if position_biases is None else np.array(position_biases))


def stop_by_callback(result, stopped, n_out, first_round=0, done=0):
    """End ``result`` at the round a callback stopped in (``stopped.stop_round``, counted in
    the whole model, as ``best_iteration``; this part of the fit starts at round
    ``first_round``, after ``done`` rounds of the fit whose evaluations ``result`` holds too):
    the trees and evaluations of later rounds (trained by a loop on workers that went on
    meanwhile) dropped, and the callback's best iteration kept, as LightGBM's ``train`` does on
    ``EarlyStopException``."""
    keep = stopped.stop_round - first_round + 1
    result.trees = result.trees[:keep * n_out]
    result.tree_stats = result.tree_stats[:keep * n_out]
    for by_metric in result.evals_result.values():
        for m in by_metric:
            by_metric[m] = by_metric[m][:done + keep]
    if result.screening_history is not None:
        per = n_out if result.screening_per_tree else 1
        result.screening_history = result.screening_history[:(first_round + keep) * per]
    result.best_iteration = stopped.best_iteration + 1
    best = result.best_iteration - 1 - (first_round - done)
    result.best_score = {name: {m: v[best] for m, v in by_metric.items() if 0 <= best < len(v)}
                         for name, by_metric in result.evals_result.items()}


def _best_round(best, params):
    """Training ended without stopping: the best round of the first (set, metric) pair, as
    LightGBM's early-stopping callback reports at the final iteration."""
    first_score, first_round = next(iter(best.values()))
    return first_round + 1


def _evaluate(executor, eval_chunks, metrics, objective, evals_result, best, rnd, es_rounds,
              params, split_every, key):
    """Compute every metric on every eval set; return the 1-based best round when stopping."""
    if not metrics or not eval_chunks:
        return None
    handles = {}
    for name, ec in eval_chunks.items():
        parts = executor.map(partition_metric_partials, ec, [metrics] * len(ec), [objective] * len(ec),
                            key=f"{key}-metric-{name}-{rnd}")
        handles[name] = tree_reduce(executor, merge_metric_partials, parts, split_every,
                                    f"{key}-metricsum-{name}-{rnd}", extra=(metrics,))
    stats = executor.gather(list(handles.values()))
    stop = None
    for (name, st) in zip(handles, stats):
        for i, (m, s) in enumerate(zip(metrics, st)):
            score = float(m.finalize(s))
            evals_result[name].setdefault(m.name, []).append(score)
            if es_rounds is None or (params["first_metric_only"] and i > 0):
                continue
            prev = best.get((name, m.name))
            if prev is None or _improved(m, score, prev[0], params["early_stopping_min_delta"]):
                best[(name, m.name)] = (score, rnd)
            elif rnd - prev[1] >= es_rounds and stop is None:
                stop = prev[1] + 1
    return stop
