"""This module contains :func:`run_boosting`: where the boosting loop
(:func:`oocgbdt.core.boosting.boost`) runs once the partitions are loaded.

- In process (no client): here, over the :class:`~oocgbdt.core.executor.LocalExecutor`.
- One worker: the loop runs as one task on that worker (:func:`boost_on_worker`), next to every
  partition, so a pass costs no scheduler round trip.
- Several workers: every shard runs the loop itself (:meth:`~oocgbdt.runtime.actor_executor.ActorExecutor.boost`),
  exchanging partial histograms with the others, with no round trip to this process.

All three run the same task bodies in the same reduction order: the same model for the same
partitions.
"""
from __future__ import annotations

import time

from oocgbdt.core.boosting import boost
from oocgbdt.core.executor import LocalExecutor, fit_threads
from oocgbdt.runtime.heap import training_heap
from oocgbdt.runtime.progress import EventBar, RoundEvents, caller_bar

__all__ = ["run_boosting", "boost_on_worker"]


def boost_on_worker(partitions, eval_sets, boost_kwargs, progress_topic=None, rounds=False,
                    states=False):
    """Task body: the boosting loop next to the data, on the worker's threads; its progress
    bar, given a topic, is the caller's (:mod:`oocgbdt.runtime.progress`), and so are its
    round evaluations (``rounds``) and round states (``states``)."""
    from distributed import get_worker
    executor = LocalExecutor(n_threads=fit_threads(boost_kwargs["params"]["num_threads"],
                                                   get_worker().state.nthreads))
    if progress_topic is not None:
        boost_kwargs = dict(boost_kwargs, progress=lambda total: EventBar(progress_topic))
        if rounds:
            boost_kwargs["on_round"] = RoundEvents(progress_topic)
        if states:
            boost_kwargs["on_state"] = RoundEvents(progress_topic).state
    try:
        with training_heap():
            return boost(executor, partitions, eval_sets=eval_sets, **boost_kwargs)
    finally:
        executor.close()


def _wait_polling(future, poll, seconds=0.05):
    """``future.result()``, calling ``poll()`` about every ``seconds`` while waiting (by
    ``done()``: a short ``result(timeout=)`` on a future that completes meanwhile can raise
    from inside ``distributed``'s sync instead of returning)."""
    if poll is None:
        return future.result()
    while not future.done():
        poll()
        time.sleep(seconds)
    return future.result()


def run_boosting(client, executor, partitions, eval_sets, boost_kwargs, callbacks=None,
                 progress=None):
    """Run the boosting loop over loaded partitions; returns its
    :class:`~oocgbdt.core.boosting.BoostResult`.

    Parameters
    ----------
    client : distributed.Client or None
        None: in process, over ``executor`` (a LocalExecutor).
    executor : LocalExecutor or ActorExecutor or None
        The executor that holds the partitions; None on one worker (the partitions are
        futures on it).
    partitions, eval_sets
        The training partitions' handles, and ``[(name, handles)]`` of the eval sets.
    boost_kwargs : dict
        Keyword arguments of :func:`~oocgbdt.core.boosting.boost` (``params``, ``objective``,
        ``metrics``, ``bin_mapper``, ``bundler``, ``verbose``, ``key``).
    callbacks : CallbackList, optional
        Run here, in the caller's process, once per round (:mod:`oocgbdt.core.callback`).
    progress : FitProgress, optional
        Receives every completed round's state here, in the caller's process
        (:mod:`oocgbdt.core.checkpoint`), and its ``poll()`` runs here (the checkpoints).
    """
    if client is None:
        on_round = None if callbacks is None else callbacks.after_round
        on_state = None
        if progress is not None:
            def on_state(state):
                progress.add(state)
                progress.poll()
        return boost(executor, partitions, eval_sets=eval_sets, on_round=on_round,
                     on_state=on_state, **boost_kwargs)
    if executor is not None:
        return executor.boost(partitions, eval_sets, boost_kwargs, callbacks=callbacks,
                              progress=progress)
    params, objective = boost_kwargs["params"], boost_kwargs["objective"]
    first = boost_kwargs.get("continuation") or {}
    with caller_bar(client, params["n_estimators"], boost_kwargs["verbose"],
                    callbacks=callbacks, metrics=boost_kwargs["metrics"], progress=progress,
                    first_round=first.get("first_round")) as bar:
        future = client.submit(
            boost_on_worker, partitions, eval_sets, dict(boost_kwargs, verbose=False),
            None if bar is None else bar.topic, callbacks is not None, progress is not None,
            key=f"{boost_kwargs['key']}-boost", pure=False)
        result = _wait_polling(future, None if bar is None else bar.poll)
        if bar is not None:
            bar.finish(result, objective.num_tree_per_iteration)
    return result
