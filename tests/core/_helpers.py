"""Training on in-memory NumPy rows with the core alone (no Dask): the test harness of the core.

:func:`fit_in_process` makes what :func:`oocgbdt.train` makes for NumPy input without a client
(bins fitted on the same row sample, the same bundles, the same compute partitions, the boosting
loop over a :class:`~oocgbdt.core.executor.LocalExecutor`, the same :class:`Booster`), built from
:mod:`oocgbdt.core` objects only, so the tests of the core exercise the core and nothing above
it.
"""
import os

import numpy as np

from oocgbdt.core.bin_mapper import BinMapper, sample_row_indices
from oocgbdt.core.booster import Booster
from oocgbdt.core.boosting import boost
from oocgbdt.core.bundler import FeatureBundler, chunk_conflicts, conflict_mode, sample_pattern
from oocgbdt.core.executor import LocalExecutor
from oocgbdt.core.metrics import get_metrics
from oocgbdt.core.objectives import get_objective
from oocgbdt.core.partition import partition_from_raw
from oocgbdt.core.partitioning import default_partition_rows, group_chunks, partition_bounds
from oocgbdt.params import resolve_params

def fit_in_process(params, X, y, sample_weight=None, executor=None):
    """Train on NumPy rows with the core alone; returns the :class:`Booster` (with
    ``tree_stats``), as :func:`oocgbdt.train` does for the same input without a client.

    Parameters
    ----------
    params : dict
        LightGBM-style parameters, as :func:`oocgbdt.train` takes them.
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    sample_weight : ndarray of shape (n_samples,), optional
    executor : LocalExecutor, optional
        The executor the loop runs over (default: one thread per core, as ``train``).
    """
    params = resolve_params(params)
    params["verbose"] = False
    objective = get_objective(params)
    metrics = get_metrics(params["metric"], objective)
    X = np.ascontiguousarray(X, dtype=np.float32)
    y = np.asarray(y)
    n_rows, n_features = X.shape
    idx = sample_row_indices(n_rows, int(params["bin_construct_sample_cnt"]),
                             int(params["data_random_seed"]))
    sample = X if idx is None else X[idx]
    bin_mapper = BinMapper.from_params(params).fit(sample, n_rows)
    bundler = None
    if params["enable_bundle"]:
        counts = chunk_conflicts(sample_pattern(sample, None, bin_mapper),
                                 conflict_mode(n_features))
        bundler = FeatureBundler(float(params["max_conflict_rate"])).fit(
            counts, bin_mapper.n_bins_, bin_mapper.default_bins_, bin_mapper.is_trivial_)
    chunk_rows = [min(int(params["chunk_rows"]), n_rows - a)
                  for a in range(0, n_rows, int(params["chunk_rows"]))]
    target = params["partition_rows"]
    if target is None:
        n_cols = bundler.n_bundles if bundler is not None else n_features
        itemsize = np.dtype(bundler.dtype_ if bundler is not None else bin_mapper.binned_dtype_).itemsize
        target = default_partition_rows(n_rows, n_cols * itemsize, n_features * X.itemsize)
    bounds = partition_bounds(chunk_rows, group_chunks(chunk_rows, int(target)))
    n_out = objective.num_tree_per_iteration
    partitions = [partition_from_raw(X[a:b], y[a:b],
                                     None if sample_weight is None else sample_weight[a:b],
                                     n_out, bin_mapper, bundler)
                  for a, b in zip(bounds[:-1], bounds[1:])]
    if params["lookahead_leaves"] is None:  # in process: no leaves are split ahead
        params["lookahead_leaves"] = 0
    executor = executor if executor is not None else LocalExecutor(n_threads=os.cpu_count() or 1)
    try:
        result = boost(executor, partitions, bin_mapper=bin_mapper, params=params,
                       objective=objective, metrics=metrics, verbose=False, key="core-fit",
                       bundler=bundler)
    finally:
        executor.close()
    booster = Booster(result.trees, result.init_score, params, n_features,
                      feature_infos=bin_mapper.feature_infos_,
                      best_iteration=result.best_iteration, evals_result=result.evals_result,
                      best_score=result.best_score, screening_history=result.screening_history,
                      screening_scores=result.screening_scores,
                      bundles=None if bundler is None else [b.tolist() for b in bundler.bundles_])
    booster.tree_stats = result.tree_stats
    return booster
