"""This module contains the progress bar of a boosting loop that runs on workers.

The loop runs on the workers (every shard on a cluster of several workers, the one worker's task
otherwise), but the bar belongs in the caller's process (a notebook shows only that process's
output). The loop's bar is an :class:`EventBar`: each update is logged as a ``distributed``
event on a topic of its own, and :func:`caller_bar` subscribes to that topic and drives a tqdm
bar here.
"""
from __future__ import annotations

import threading
import uuid
from contextlib import contextmanager

from oocgbdt.core.boosting import progress_bar, round_postfix

__all__ = ["EventBar", "caller_bar"]


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


@contextmanager
def caller_bar(client, total: int, enabled: bool):
    """Within the block, a tqdm bar of ``total`` rounds in this process follows the events of
    the yielded topic (None when not ``enabled``). The yielded object's ``finish(result,
    n_out)`` sets the bar to the rounds and metrics of the loop's
    :class:`~oocgbdt.core.boosting.BoostResult` (its last events may still be on their way)."""
    if not enabled:
        yield None
        return
    topic = f"oocgbdt-progress-{uuid.uuid4().hex}"
    bar = progress_bar(total)
    # Events are applied on the client's event loop thread, finish on the caller's: once
    # finished, an event still on its way must not move the bar past the loop's result.
    lock = threading.Lock()
    finished = []

    def apply(event):
        kind, value = event[1]
        with lock:
            if finished:
                return
            if kind == "update":
                bar.update(value)
            elif kind == "postfix":
                bar.set_postfix(value, refresh=False)

    class Handle:
        def __init__(self):
            self.topic = topic
            self.bar = bar

        def finish(self, result, n_out):
            with lock:
                finished.append(True)
                postfix = round_postfix(result.evals_result)
                if postfix:
                    bar.set_postfix(postfix, refresh=False)
                bar.update(len(result.trees) // int(n_out) - bar.n)

    client.subscribe_topic(topic, apply)
    try:
        yield Handle()
    finally:
        client.unsubscribe_topic(topic)
        bar.close()
