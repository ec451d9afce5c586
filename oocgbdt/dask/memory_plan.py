"""This module contains the memory plan of a fit: each worker's peak, estimated before training
from the data's shape, the parameters and the partitions, checked against the workers' memory
limits, and compared afterwards with the peak measured while the fit ran.

What a worker holds at its peak (:func:`plan_memory`), for the partitions it holds (contiguous
blocks, as :meth:`oocgbdt.runtime.queue.OperationQueue.owner_of_partition` places them):

- ``baseline``: a worker process with Python, Dask, NumPy, numba and oocgbdt's compiled kernels
  loaded (``WORKER_BASELINE_BYTES``, measured); in process, the process's RSS when the fit starts;
- ``per_row_state``: per training row and output a float64 raw score and float32 gradient and
  hessian (:data:`oocgbdt.dask.cache.PER_ROW_STATE_BYTES`), per row the float32 label, the
  int32 row order of the tree being grown, the float32 weight (when given) and the int32 index
  of the sampled rows (GOSS or bagging), with ``use_quantized_grad`` the tree's packed int64
  gradient pair (twice more in a sampled round's subset); per eval row and output a raw score, per eval row its
  label (and weight); plus the state being replaced: per thread one partition's new gradients
  or raw scores and their temporaries (in process, every partition's old arrays, which the
  in-process executor keeps until the round's last task ends);
- ``bins``: ``cache="memory"``: the binned rows of its training (bundled) and eval (one column
  per feature) partitions;
  ``cache="disk"``: one partition's bins per thread, read for a pass; with row sampling or
  feature screening, the compact copies of the sampled rows or screened columns;
- ``histograms``: the kept leaf histograms of one tree, ``num_leaves`` (or as many as
  ``histogram_pool_size`` allows) of ``n_hist_bins x 16`` bytes;
- ``partials``: one pass's partial histograms, one per partition it holds and child histogrammed
  in the pass (``docs/scaling.md``), plus the first fan-in level's sums;
- ``loading``: what loading a partition holds besides its result, per thread: its raw float32
  rows (``cache="memory"``; dense input; ``RAW_READ_FACTOR`` times their bytes: the chunks as
  read and their concatenation), or one piece of the disk cache's write pass.

The peak is ``baseline + per_row_state + bins (memory) + max(loading, histograms + partials +
read buffers)``: loading ends before the first pass. Upper bounds are taken where the count
depends on the run (every kept histogram whole on every worker, the widest depth-wise level).

A fit is checked twice: before any data is read, the workers' baselines and the rows' per-row
state against the workers' usable memory together (:func:`check_rows`); once the bins and
partitions are known, each worker's peak against its own (:func:`check_plan`). Usable is the
share of ``memory_limit`` below Dask's ``pause`` and ``terminate`` (:func:`usable_fraction`).
The whole plan needs the bin sample only: on a client's cluster the labels, weights and init
scores (a pass over every label) are checked after it (``oocgbdt.dask.training``).
"""
from __future__ import annotations

import logging
import math

import dask
import numpy as np

from oocgbdt.core.boosting import histogram_pool_capacity
from oocgbdt.core.executor import fit_threads
from oocgbdt.core.split import FeatureMeta
from oocgbdt.dask.cache import PER_ROW_STATE_BYTES, PIECE_RAW_BYTES, describe_bytes
from oocgbdt.runtime.cluster import cluster_workers

__all__ = ["WORKER_BASELINE_BYTES", "check_worker_baseline", "HISTOGRAM_BIN_BYTES", "RAW_READ_FACTOR", "placement_blocks", "children_per_pass",
           "plan_memory", "worker_limits", "usable_fraction", "check_rows", "check_plan",
           "describe_plan"]

logger = logging.getLogger("oocgbdt")

#: RSS of a Dask worker process (nanny-started, ``processes=True``) after a small fit: Python
#: 3.11, dask and distributed 2026.8, NumPy, numba and oocgbdt's cached kernels loaded.
#: Measured 196-213 MiB on the project's machine (two workers of a LocalCluster, RSS from
#: psutil after two 3-tree fits); rounded up.
WORKER_BASELINE_BYTES = 224 * 2 ** 20
#: Bytes per histogram bin: a float64 (gradient, hessian) pair.
HISTOGRAM_BIN_BYTES = 16
_INDEX_BYTES = 4   # int32 row order and sampled row indices
_QUANT_BYTES = 8  # int64 packed quantized gradient pair (use_quantized_grad)
_LABEL_BYTES = 4   # float32 labels and weights
_SCORE_BYTES = 8   # float64 raw scores
#: Bytes a loading task holds per raw (float32) byte of its partition: the storage chunks as
#: read (the compressed bytes, about as large for noisy floats, and the decoded ones) and their
#: concatenation. Measured: 2 workers loading 200,000 x 50 partitions from a Zarr store of
#: 100,000-row chunks peaked 58-76 MiB over a plan that counted the raw bytes once.
RAW_READ_FACTOR = 3


def placement_blocks(n_partitions: int, n_places: int) -> list:
    """Partition indices held by each place: contiguous blocks whose sizes differ by at most
    one, the larger blocks last (the rule of ``OperationQueue.owner_of_partition``)."""
    q, r = divmod(int(n_partitions), int(n_places))
    sizes = [q] * (n_places - r) + [q + 1] * r
    starts = np.concatenate(([0], np.cumsum(sizes))).astype(int)
    return [list(range(starts[i], starts[i + 1])) for i in range(n_places)]


def children_per_pass(params) -> int:
    """Leaf histograms built from rows in one pass, at most: the smaller child of every split
    of the pass (both children when ``histogram_pool_size`` may have dropped the parent's).
    Leaf-wise: ``max_leaves_per_pass`` splits plus ``lookahead_leaves``; depth-wise: the widest
    level, at most half the leaves (and ``2 ** (max_depth - 1)``)."""
    leaves = int(params["num_leaves"])
    if params["grow_policy"] == "depthwise":
        splits = max(1, leaves // 2)
        if params["max_depth"] > 0:
            splits = min(splits, 2 ** (int(params["max_depth"]) - 1))
    else:
        splits = int(params["max_leaves_per_pass"]) + int(params["lookahead_leaves"] or 0)
    splits = max(1, min(splits, leaves - 1))
    return splits * (2 if params["histogram_pool_size"] > 0 else 1)


def _sampled_share(params) -> float:
    """Share of the rows a round samples (0 without row sampling)."""
    if params["data_sample_strategy"] == "goss":
        return float(params["top_rate"]) + float(params["other_rate"])
    if params["bagging_freq"] > 0 and params["bagging_fraction"] < 1.0:
        return float(params["bagging_fraction"])
    return 0.0


def _train_row_state(params, n_outputs: int, weighted: bool) -> int:
    """Bytes a worker keeps per training row for the whole fit: raw score, gradient and hessian
    per output, label, row order, weight (when given) and sampled row index (row sampling);
    with ``use_quantized_grad`` the tree's packed int64 gradient pair, twice more per sampled
    row in a sampled round's compact subset (``core/partition.py`` ``_gradient_inputs``)."""
    sampled = _sampled_share(params)
    quantized = _QUANT_BYTES * (1 + 2 * sampled) if params.get("use_quantized_grad") else 0
    return (PER_ROW_STATE_BYTES * int(n_outputs) + _LABEL_BYTES + _INDEX_BYTES
            + (_LABEL_BYTES if weighted else 0) + (_INDEX_BYTES if sampled else 0) + quantized)


def _eval_row_state(n_outputs: int, weighted: bool) -> int:
    """Bytes a worker keeps per eval row: raw score per output, label and weight (when given)."""
    return _SCORE_BYTES * int(n_outputs) + _LABEL_BYTES + (_LABEL_BYTES if weighted else 0)


def plan_memory(params, *, partition_rows: dict, n_outputs: int, n_features: int,
                row_bytes: int, n_hist_bins: int, mode: str, n_places: int, threads: int,
                weighted: dict, sparse: bool = False, raw_in_memory: bool = False,
                baseline: int = WORKER_BASELINE_BYTES, eval_row_bytes: int | None = None):
    """Estimate each place's peak memory during a fit, in bytes.

    Parameters
    ----------
    params : dict
        Resolved parameters (``lookahead_leaves`` as the fit uses it).
    partition_rows : dict
        ``{"train": [rows per partition], "eval_0": [...], ...}`` in partition order.
    n_outputs : int
        Trees per round (classes of a multiclass fit, else 1).
    n_features : int
        Raw columns of X (float32 when read).
    row_bytes : int
        Bytes of one binned (bundled) training row.
    n_hist_bins : int
        Rows of a leaf histogram (``FeatureMeta.n_hist_bins``).
    mode : {"memory", "disk"}
        Where the binned rows live. In memory, the training bins are held twice (row- and
        column-major).
    n_places : int
        Workers holding partitions (1 in process or on one worker).
    threads : int
        Threads per worker (in process: the executor's).
    weighted : dict
        ``{set name: bool}``: whether the set has row weights.
    sparse : bool, default False
        Sparse input: the raw rows read while loading are not estimated (their size depends on
        the stored entries).
    raw_in_memory : bool, default False
        The raw rows are in this process already (NumPy input in process): loading reads views
        of them, counted in ``baseline``.
    baseline : int
        Bytes of the process before the fit.
    eval_row_bytes : int, optional
        Bytes of one binned eval row (eval sets are not bundled:
        :func:`oocgbdt.dask.partitions.set_layout`); None: ``row_bytes``.

    Returns
    -------
    list of dict
        One per place: ``partitions`` (training partitions held), ``rows`` (training rows),
        ``baseline``, ``per_row_state``, ``bins``, ``histograms``, ``partials``, ``loading``,
        ``training`` (everything but ``baseline``) and ``peak``, in bytes.
    """
    k = int(n_outputs)
    eval_row_bytes = int(row_bytes if eval_row_bytes is None else eval_row_bytes)
    train_rows = list(partition_rows["train"])
    hist_bytes = int(n_hist_bins) * HISTOGRAM_BIN_BYTES
    capacity = histogram_pool_capacity(params["histogram_pool_size"], n_hist_bins)
    kept = int(params["num_leaves"]) if capacity is None else min(capacity, int(params["num_leaves"]))
    histograms = kept * hist_bytes
    children = children_per_pass(params)
    sampled = _sampled_share(params)
    screened = (float(params["screening_ratio"]) if params["feature_screening"] is not None
                else float(params["feature_fraction"]) if params["feature_fraction"] < 1.0
                else 0.0)
    train_row_state = _train_row_state(params, k, bool(weighted.get("train")))
    plans = []
    blocks = {s: placement_blocks(len(rows), n_places) for s, rows in partition_rows.items()}
    for place in range(n_places):
        mine = {s: [partition_rows[s][i] for i in blocks[s][place]] for s in partition_rows}
        rows = sum(mine["train"])
        largest = max((r for s in mine for r in mine[s]), default=0)
        largest_bins = max((r * (row_bytes if s == "train" else eval_row_bytes)
                            for s in mine for r in mine[s]), default=0)
        busy = max(1, min(int(threads), max(1, len(mine["train"]))))
        eval_rows = sum(sum(r) for s, r in mine.items() if s != "train")
        eval_bins = eval_rows * eval_row_bytes
        eval_state = sum(sum(r) * _eval_row_state(k, bool(weighted.get(s)))
                         for s, r in mine.items() if s != "train")
        # A task replacing a partition's gradients (or raw scores) holds the new arrays and
        # their row-major temporaries (float32 pairs and the transposed raw scores) beside the
        # old ones; in process the old arrays of every partition stay until the round's last
        # task ends (LocalExecutor keeps its inputs).
        temporaries = busy * largest * (2 * _LABEL_BYTES + _SCORE_BYTES) * k
        replaced = (rows if raw_in_memory else busy * largest) * _SCORE_BYTES * k + temporaries
        per_row_state = rows * train_row_state + eval_state + replaced
        compact = int(rows * row_bytes * (sampled + screened))  # both: an upper bound
        if mode == "memory":
            bins = rows * row_bytes + eval_bins + compact
            # passes route from a column-major copy of the training bins
            # (oocgbdt.core.partition.start_split_many)
            bins += rows * row_bytes
            read_buffers = 0
            raw = 0 if sparse or raw_in_memory else RAW_READ_FACTOR * largest * n_features * 4
            loading = busy * (raw + largest_bins)
        else:
            bins = compact
            read_buffers = busy * largest_bins
            loading = busy * min(PIECE_RAW_BYTES, max(1, largest) * n_features * 4)
        partials = int(len(mine["train"]) * children * hist_bytes
                       * (1 + 1 / int(params["split_every"])))
        training = per_row_state + bins + max(loading, histograms + partials + read_buffers)
        plans.append(dict(partitions=len(mine["train"]), rows=rows, baseline=int(baseline),
                          per_row_state=int(per_row_state), bins=int(bins),
                          read_buffers=int(read_buffers), histograms=int(histograms),
                          partials=int(partials), loading=int(loading),
                          training=int(training), peak=int(baseline + training)))
    return plans


def worker_limits(client) -> list:
    """``[(address, memory_limit or 0, nthreads)]`` of the client's workers, sorted by address
    (the order shards are made in)."""
    info = cluster_workers(client)
    return [(w, int(info[w].get("memory_limit") or 0), int(info[w]["nthreads"]))
            for w in sorted(info)]


def usable_fraction() -> float:
    """Share of a worker's memory limit a fit may reach: the lower of Dask's ``pause`` and
    ``terminate`` thresholds (``distributed.worker.memory.*``) that are enabled, else 1.

    A worker over ``pause`` runs no task until its memory falls below it again, and a fit's
    workers hold their training state until the fit ends: a worker paused while it loads its
    partitions never finishes them and the fit waits forever. Over ``terminate`` its nanny
    kills it.
    """
    values = [dask.config.get(f"distributed.worker.memory.{name}", None)
              for name in ("pause", "terminate")]
    values = [float(v) for v in values if v]
    return min(values) if values else 1.0


def describe_plan(plan: dict) -> str:
    """One line: the peak and its terms, in MiB."""
    mib = lambda n: f"{n / 2 ** 20:.0f}"  # noqa: E731
    return (f"{mib(plan['peak'])} MiB = baseline {mib(plan['baseline'])} + per-row state "
            f"{mib(plan['per_row_state'])} + bins {mib(plan['bins'])} + max(loading "
            f"{mib(plan['loading'])}, histograms {mib(plan['histograms'])} + partials "
            f"{mib(plan['partials'])} + read buffers {mib(plan['read_buffers'])})")


def check_worker_baseline(limits) -> None:
    """Raise before any work when a worker's memory limit cannot hold a training worker's own
    baseline (``WORKER_BASELINE_BYTES``) below Dask's ``pause`` threshold: such a worker is
    paused as soon as it imports what training needs and would never run the fit's tasks.

    Parameters
    ----------
    limits : list of (address, int, int)
        :func:`worker_limits`; a limit of 0 means none.

    Raises
    ------
    MemoryError
        Naming the worker, its ``memory_limit`` and the baseline.
    """
    pause = dask.config.get("distributed.worker.memory.pause", None)
    if not pause:  # workers are never paused: the memory plan checks the limit
        return
    for address, limit, _ in limits:
        if limit and pause * limit < WORKER_BASELINE_BYTES:
            raise MemoryError(
                f"worker {address} has memory_limit {limit / 2 ** 20:.0f} MiB: Dask pauses it at "
                f"{pause:g} x that, {pause * limit / 2 ** 20:.0f} MiB, below a training worker's "
                f"own baseline of about {WORKER_BASELINE_BYTES / 2 ** 20:.0f} MiB, so it would "
                f"never run the fit's tasks; give each worker a larger memory_limit")


def check_plan(plans, limits, *, mode: str, params) -> None:
    """Log each worker's planned peak; raise before training when one exceeds its limit.

    Parameters
    ----------
    plans : list of dict
        :func:`plan_memory`'s, one per place, in placement order.
    limits : list of (address, int, int)
        :func:`worker_limits`; a limit of 0 means none (nothing to check).

    Raises
    ------
    MemoryError
        A worker's planned peak exceeds ``usable_fraction() x memory_limit``: the message gives
        the peak, its terms and the limit, and what to change.
    """
    fraction = usable_fraction()
    over = []
    for plan, (address, limit, _) in zip(plans, limits):
        logger.info(f"memory plan: {address}: peak {describe_plan(plan)}"
                    + (f"; memory_limit {limit / 2 ** 20:.0f} MiB" if limit else ""))
        if limit and plan["peak"] > fraction * limit:
            over.append((address, plan, limit))
    if not over:
        return
    address, plan, limit = max(over, key=lambda o: o[1]["peak"] / o[2])
    usable = fraction * limit
    excess = plan["peak"] - usable
    mib = lambda n: f"{n / 2 ** 20:.0f} MiB"  # noqa: E731
    advice = []
    # Kept histograms are counted whole on every worker: more workers spread the rest.
    room = usable - plan["baseline"] - plan["histograms"]
    spread = sum(p["training"] - p["histograms"] for p in plans)
    if room > 0 and spread > 0:
        # at least one more: the partitions may be over on one worker only (a larger block)
        workers = max(math.ceil(spread / room), len(plans) + 1)
        advice.append(f"more workers (about {workers} of this memory_limit)")
    if plan["baseline"] >= usable:
        advice.append(f"a larger memory_limit (a worker's baseline alone is "
                      f"{mib(plan['baseline'])})")
    if mode == "memory" and plan["bins"] > 0:
        advice.append(f"cache='disk' (the bins take {mib(plan['bins'])})")
    if plan["loading"] + plan["partials"] > 0:
        advice.append(f"smaller partitions (partition_rows, or smaller storage chunks: loading "
                      f"takes {mib(plan['loading'])}, a pass's partials {mib(plan['partials'])})")
    if plan["histograms"] > 0:
        advice.append(f"histogram_pool_size in MB (the kept histograms take "
                      f"{mib(plan['histograms'])})")
    raise MemoryError(
        f"memory plan: the fit needs a peak of {describe_plan(plan)} on worker {address}, "
        f"over {fraction:g} x its memory_limit {limit / 2 ** 20:.0f} MiB by {mib(excess)} "
        f"({len(over)} of {len(plans)} worker(s) over; {plan['partitions']} training "
        f"partition(s), {plan['rows']} rows there). Nothing was trained. Try: "
        + "; ".join(advice) + ".")


def check_rows(params, set_rows: dict, *, n_outputs: int, weighted: dict, limits) -> None:
    """Fail before any data is read when the rows alone cannot fit: a lower bound of the plan
    (:func:`plan_memory`) from the set sizes, before the bins are fitted (their sample reads
    every storage chunk of X holding a sampled row; on a large data set, seconds) and the
    whole plan is checked (:func:`check_plan`).

    The bound is :func:`plan_memory`'s peak without the terms that need the bins or the
    partitions (bins, loading, histograms, partials and the state being replaced): the
    workers' baselines plus the per-row state of every training and eval row. Wherever the
    partitions are placed, the workers together hold all of it, so when it exceeds the sum of
    the workers' usable memory (``usable_fraction() x memory_limit``) some worker's planned
    peak is over its own.

    Parameters
    ----------
    params : dict
        Resolved parameters.
    set_rows : dict
        ``{"train": rows, "eval_0": rows, ...}``.
    n_outputs : int
        Trees per round.
    weighted : dict
        ``{set name: bool}``: whether the set has row weights.
    limits : list of (address, int, int)
        :func:`worker_limits`; when a worker has no limit (0), nothing is checked.

    Raises
    ------
    MemoryError
        With the bound, its terms, the workers' usable memory and what to change.
    """
    if (not limits or any(limit <= 0 for _, limit, _ in limits)
            or not all(np.isfinite(r) for r in set_rows.values())):  # rows not known yet
        return
    fraction = usable_fraction()
    usable = sum(fraction * limit for _, limit, _ in limits)
    state = sum(int(rows) * (_train_row_state(params, n_outputs, bool(weighted.get(s)))
                             if s == "train" else _eval_row_state(n_outputs, bool(weighted.get(s))))
                for s, rows in set_rows.items())
    baselines = len(limits) * WORKER_BASELINE_BYTES
    if baselines + state <= usable:
        return
    mib = lambda n: f"{n / 2 ** 20:.0f} MiB"  # noqa: E731
    per_worker = max(fraction * limit for _, limit, _ in limits) - WORKER_BASELINE_BYTES
    advice = []
    if per_worker > 0:
        advice.append(f"more workers (at least {math.ceil(state / per_worker)} of the largest "
                      f"memory_limit)")
    advice.append("a larger memory_limit")
    if len(set_rows) > 1:
        advice.append("smaller eval sets")
    raise MemoryError(
        f"memory plan: the {int(set_rows.get('train', 0))} training rows"
        + ("" if len(set_rows) == 1 else
           f" and {sum(int(r) for s, r in set_rows.items() if s != 'train')} eval rows")
        + f" alone need at least {mib(baselines + state)} on {len(limits)} worker(s): "
        f"baselines {len(limits)} x {mib(WORKER_BASELINE_BYTES)} + per-row state "
        f"{mib(state)} (before the bins, loading and histograms), over the {mib(usable)} the "
        f"workers may use together ({fraction:g} x their memory_limit, "
        + ", ".join(sorted({mib(limit) for _, limit, _ in limits}))
        + f"). Nothing was read. Try: " + "; ".join(advice) + ".")


def plan_fit(params, sets, bounds, *, n_outputs: int, n_features: int, row_bytes: int,
             bin_mapper, bundler, mode: str, client, embedded: bool, sparse: bool,
             eval_row_bytes: int | None = None):
    """Plan a fit's memory where it will run, log it and check it (:func:`check_plan`).

    ``sets`` are ``(name, X, y, weight)`` and ``bounds`` each set's partition boundaries (rows).
    In process (``client`` None) the baseline is this process's RSS now and nothing is checked.
    Returns ``(plans, places)``: the plans and each place's name (worker address, or
    ``"in process"``).

    Raises
    ------
    MemoryError
        See :func:`check_plan`.
    """
    from oocgbdt.runtime.rss import _rss
    partition_rows = {s: np.diff(bounds[s]).astype(int).tolist() for s, *_ in sets}
    weighted = {s: w is not None for s, _, _, w in sets}
    n_hist_bins = FeatureMeta.from_bin_mapper(bin_mapper, bundler).n_hist_bins
    common = dict(partition_rows=partition_rows, n_outputs=n_outputs, n_features=n_features,
                  row_bytes=row_bytes, n_hist_bins=n_hist_bins, mode=mode, weighted=weighted,
                  sparse=sparse, eval_row_bytes=eval_row_bytes)
    if client is None:
        plans = plan_memory(params, n_places=1, threads=fit_threads(params["num_threads"]),
                            baseline=_rss(),
                            raw_in_memory=True, **common)
        logger.info(f"memory plan: in process: peak {describe_plan(plans[0])}")
        return plans, ["in process"]
    limits = worker_limits(client)
    n_places = max(1, len(limits))
    threads = max((fit_threads(params["num_threads"], t) for _, _, t in limits), default=1)
    # The embedded cluster's worker shares this process: its baseline is this process's.
    plans = plan_memory(params, n_places=n_places, threads=threads,
                        baseline=_rss() if embedded else WORKER_BASELINE_BYTES, **common)
    check_plan(plans, limits, mode=mode, params=params)
    return plans, [a for a, _, _ in limits]


def start_measuring(client, key: str) -> None:
    """Start sampling the RSS of every worker (or of this process) for the fit ``key``."""
    from oocgbdt.runtime.rss import start_peak_sampling
    if client is None:
        start_peak_sampling(key)
    else:
        client.run(start_peak_sampling, key, on_error="ignore")


def stop_measuring(client, key: str, wait: bool = True) -> dict:
    """Stop :func:`start_measuring`'s sampling; ``{place: (rss at start, peak rss)}``.

    ``wait=False`` (after an error) tells the workers to stop without waiting for their
    answers (a lost worker would never answer) and returns ``{}``."""
    from oocgbdt.runtime.rss import stop_peak_sampling
    if client is None:
        return {"in process": stop_peak_sampling(key)}
    return client.run(stop_peak_sampling, key, on_error="ignore", wait=wait) or {}


def memory_report(plans, places, measured: dict, mode: str) -> dict:
    """``Booster.memory_report``: per worker the planned terms and peak next to the measured
    RSS at the start of loading and its peak until boosting ended; logged."""
    workers = []
    for place, plan in zip(places, plans):
        got = measured.get(place)
        if isinstance(got, BaseException):
            got = None
        start, peak = (None, None) if got is None else (int(got[0]), int(got[1]))
        workers.append(dict(address=place, planned=dict(plan), rss_start=start, rss_peak=peak,
                            measured_training=None if got is None else peak - start))
        if got is not None:
            logger.info(f"memory: {place}: planned peak {plan['peak'] / 2 ** 20:.0f} MiB "
                        f"(training {plan['training'] / 2 ** 20:.0f}), measured peak "
                        f"{peak / 2 ** 20:.0f} MiB (training {(peak - start) / 2 ** 20:.0f})")
    return dict(mode=mode, usable_fraction=usable_fraction(), workers=workers)
