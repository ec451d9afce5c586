"""This module contains the progress bar of a boosting loop that runs on workers.

The loop runs on the workers (every shard on a cluster of several workers, the one worker's task
otherwise), but the bar belongs in the caller's process (a notebook shows only that process's
output). The loop's bar is an :class:`EventBar`: each update is logged as a ``distributed``
event on a topic of its own, and :func:`caller_bar` subscribes to that topic and drives a tqdm
bar here.
"""
from __future__ import annotations

import queue
import threading
import time
import uuid
from contextlib import contextmanager

from oocgbdt.core.boosting import progress_bar, round_postfix, stop_by_callback
from oocgbdt.core.callback import EvalResult, evaluation_result_list

__all__ = ["EventBar", "RoundEvents", "caller_bar"]

#: Seconds :func:`caller_bar`'s ``finish`` waits at most for the loop's last round states.
STATE_WAIT_SECONDS = 10.0


class EventBar:
    """Stand-in for the loop's tqdm bar on a worker: ``update`` and ``set_postfix`` are logged
    as events on ``topic`` (``Worker.log_event``); ``close`` does nothing (the caller closes
    its bar when the loop's result arrives)."""

    def __init__(self, topic: str):
        from distributed import get_worker
        self.topic = topic
        self.worker = get_worker()

    def update(self, n=1):
        self.worker.log_event(self.topic, ["update", int(n)])

    def set_postfix(self, postfix, refresh=True):
        self.worker.log_event(self.topic, ["postfix", {str(k): str(v) for k, v in postfix.items()}])

    def close(self):
        pass


class RoundEvents:
    """The loop's ``on_round`` on a worker: each round's evaluation list is logged as an event
    on ``topic``, for the caller's callbacks (:func:`caller_bar`). Never stops the loop itself:
    the caller's callbacks decide, and the caller drops what was trained after their stop."""

    def __init__(self, topic: str):
        from distributed import get_worker
        self.topic = topic
        self.worker = get_worker()

    def __call__(self, rnd, evaluation_result_list):
        self.worker.log_event(self.topic, ["round", [int(rnd), [list(e) for e in
                                                                evaluation_result_list]]])
        return None

    def state(self, state):
        """The loop's ``on_state``: the round's :func:`~oocgbdt.core.boosting.round_state`,
        pickled, for the caller's :class:`~oocgbdt.core.checkpoint.FitProgress`."""
        from distributed.protocol import pickle
        self.worker.log_event(self.topic, ["state", pickle.dumps(state)])


@contextmanager
def caller_bar(client, total: int, enabled: bool, callbacks=None, metrics=(), progress=None,
               first_round=None):
    """Within the block, a tqdm bar of ``total`` rounds in this process follows the events of
    the yielded topic (None when not ``enabled`` and there are no ``callbacks``). The yielded
    object's ``finish(result, n_out)`` sets the bar to the rounds and metrics of the loop's
    :class:`~oocgbdt.core.boosting.BoostResult` (its last events may still be on their way).

    With ``callbacks`` (a :class:`~oocgbdt.core.callback.CallbackList`), the loop's rounds also
    arrive as events (:class:`RoundEvents`); ``poll()`` runs the callbacks of the rounds that
    arrived, on the calling thread, and ``finish`` runs those of the rounds whose events are
    still on their way (from the result's ``evals_result``) and ends the result at a
    callback's stop (:func:`oocgbdt.core.boosting.stop_by_callback`).

    With ``progress`` (a :class:`~oocgbdt.core.checkpoint.FitProgress`), the loop's round
    states arrive as events too (:meth:`RoundEvents.state`) and are kept there; ``poll()``
    also runs ``progress.poll()`` (the checkpoints), and ``finish`` waits for the states of
    every round of the result (at most :data:`STATE_WAIT_SECONDS`) before it does. ``first_round``: the loop's first round in
    the whole model (default the callbacks' ``begin``: a fit continued after a lost worker
    starts later). Leaving the block on an error, the callbacks of the rounds kept in
    ``progress`` that they have not seen yet are run, so that a continued fit goes on from
    ``progress.end``."""
    if not enabled and callbacks is None and progress is None:
        yield None
        return
    topic = f"oocgbdt-progress-{uuid.uuid4().hex}"
    bar = progress_bar(total, verbose=enabled)
    # Events are applied on the client's event loop thread, finish on the caller's: once
    # finished, an event still on its way must not move the bar past the loop's result.
    lock = threading.Lock()
    finished = []
    rounds = queue.Queue()

    def apply(event):
        kind, value = event[1]
        if kind == "state":  # kept also after finish (which waits for them)
            if progress is not None:
                progress.add(value)
            return
        with lock:
            if finished:
                return
            if kind == "update":
                bar.update(value)
            elif kind == "postfix":
                bar.set_postfix(value, refresh=False)
            elif kind == "round":
                rounds.put((value[0], [EvalResult(*e) for e in value[1]]))

    class Handle:
        def __init__(self):
            self.topic = topic
            self.bar = bar
            # the round whose callbacks run next, counted in the whole model (a continued
            # model's rounds first)
            self.first = (first_round if first_round is not None
                          else 0 if callbacks is None else callbacks.begin)
            self.next_round = self.first

        def poll(self):
            if progress is not None:
                progress.poll()
            while callbacks is not None:
                try:
                    rnd, results = rounds.get_nowait()
                except queue.Empty:
                    return
                if rnd == self.next_round:
                    self.next_round += 1
                    callbacks.after_round(rnd, results)

        def finish(self, result, n_out):
            if progress is not None:
                # The loop's last round states may still be on their way (events travel
                # through the scheduler, the result does not): the checkpoints due at the
                # fit's last rounds are written once they are here.
                end = self.first + len(result.trees) // int(n_out)
                deadline = time.monotonic() + STATE_WAIT_SECONDS
                while progress.end < end and time.monotonic() < deadline:
                    time.sleep(0.01)
                progress.poll()
            with lock:
                finished.append(True)
                if callbacks is not None:
                    self.poll()
                    begin = callbacks.begin
                    end = self.first + len(result.trees) // int(n_out)
                    for rnd in range(self.next_round, end):
                        if callbacks.stopped is not None:
                            break
                        callbacks.after_round(rnd, evaluation_result_list(
                            result.evals_result, metrics, rnd - begin))
                    self.next_round = end
                    if callbacks.stopped is not None:
                        stop_by_callback(result, callbacks.stopped, n_out, self.first,
                                         self.first - begin)
                postfix = round_postfix(result.evals_result)
                if postfix:
                    bar.set_postfix(postfix, refresh=False)
                bar.update(len(result.trees) // int(n_out) - bar.n)

    client.subscribe_topic(topic, apply)
    handle = Handle()
    try:
        yield handle
    except BaseException:
        if progress is not None and callbacks is not None:
            handle.poll()
            for rnd in range(handle.next_round, progress.end):
                if callbacks.after_round(rnd, evaluation_result_list(
                        progress.evals_result, metrics, rnd - callbacks.begin)) is not None:
                    break
        raise
    finally:
        client.unsubscribe_topic(topic)
        bar.close()
