"""This module contains :class:`SpmdExecutor`: the executor every shard of a fit runs the boosting
loop with, all shards at once (single program, multiple data), with no caller in the loop.
"""
from __future__ import annotations

import itertools

from oocgbdt.runtime.handles import ALL, Key, find_refs, walk
from oocgbdt.runtime.queue import OperationQueue

__all__ = ["SpmdExecutor", "REPLICATE_MAX_SHARDS"]

#: Most shards at which SpmdExecutor has every shard search every feature (measured on 2
#: workers of this project's 2-core machine; more shards were not measured).
REPLICATE_MAX_SHARDS = 2


class SpmdExecutor(OperationQueue):
    """The :class:`ActorExecutor` program run on every shard at once (single program, multiple
    data), with no caller in the loop.

    Every shard runs the same boosting loop (:meth:`Shard.boost`) with one of these: operations
    are queued per shard exactly as the caller's ActorExecutor queues them (same placement, same
    pushes right after their producers), and at each wait a shard runs its own queue, pushing
    values to the shards whose steps need them, and drops the others' queues (they run them
    themselves). :meth:`gather` is an all-gather: each value's owner pushes it to every other
    shard, so every shard reads the same split records and makes the same decisions. A pass
    then costs the shard-to-shard pushes of partial histograms, and no round trip to a caller.
    With :attr:`replicate_search` (2 shards) every shard also sums the partials and searches
    on its own copy, so the split records need not travel either: one hop per pass.

    Measured on 1M x 100, 2 workers of 1 thread, 40 trees, three alternating pairs: 0.32-0.35
    s/tree against 0.35-0.39 for the caller-driven :class:`ActorExecutor` (a pass: 18.6 ms
    median against 20.6). Feature blocks with the records exchanged instead (what 3+ shards do) gave
    no measurable difference on 2 workers. The functions and their grouping are those the
    caller-driven executor runs, so the model is the same, bit for bit.

    Parameters
    ----------
    shard : Shard
        This shard (its store, its peers, its local threads).
    n_shards : int
    """

    def __init__(self, shard, n_shards):
        self.shard = shard
        self.me = shard.index
        # Ids of values made by the loop: negative, so they never meet the caller's ids (which
        # name the partitions), and the same on every shard (the same program makes them in the
        # same order).
        super().__init__(n_shards, itertools.count(-2, -1))
        self._pushes = []  # futures of pushes sent and not yet known received

    @property
    def replicate_search(self) -> bool:
        """With at most :data:`REPLICATE_MAX_SHARDS` shards, every shard sums a pass's partial
        histograms and searches every feature itself (HistogramSource ``replicate``): a pass
        then moves partials once and no split records. With more, each shard would receive
        every other shard's partials whole, so the search is shared out by feature blocks
        instead and the records are exchanged."""
        return self.n_shards <= REPLICATE_MAX_SHARDS

    @property
    def n_feature_blocks(self) -> int:
        return 1 if self.replicate_search else self.n_shards

    def _check_pushes(self, wait=False):
        """Raise the error of a push that failed; forget the received ones (all, with
        ``wait``, after waiting for them). Pushes are not waited for as they are sent: the
        shard that needs the values waits for them itself."""
        keep = []
        for fut in self._pushes:
            if wait or fut.done():
                fut.result()
            else:
                keep.append(fut)
        self._pushes = keep

    def _send(self, want=None):
        """Run this shard's queued operations here; drop the other shards' queues."""
        self._check_pushes()
        ops, dead = self._ops[self.me], self._take_dead(self.me)
        self._ops = [[] for _ in self._ops]
        with self._lock:  # the other shards drop their own
            for o, ids in enumerate(self._dead):
                if o != self.me:
                    ids.clear()
        if ops or dead:
            self.shard._run_ops(dead, ops, self._pushes)
        return {}

    def gather(self, handles):
        """Values of ``handles`` on every shard: each owner pushes its values to the others
        (right after the operations that make them), runs its queue, then every shard waits for
        the values it does not own."""
        refs = [r for r in find_refs(handles, []) if r.owner != ALL]
        for o in range(self.n_shards):
            self._push_inputs(refs, o)  # to every shard, as if a step there read them
        self._send()
        values = self.shard._resolve([Key(r.owner, r.id) for r in refs])
        got = dict(zip([r.id for r in refs], values))
        return walk(handles, lambda r: got[r.id] if r.owner != ALL else self.shard.store[r.id])

    def wait(self):
        self._send()
        self._check_pushes(wait=True)

    @property
    def seconds(self):
        """This shard's seconds per task function name (see :attr:`Shard.seconds`)."""
        self._send()
        return self.shard.seconds()

    def close(self):
        """Drop every value the loop made or received (negative ids)."""
        store = self.shard.store
        # list(store): one step under the GIL, while the event loop may still store values
        # (a failed fit's peer pushing), which iterating the dict itself would trip on.
        for i in [i for i in list(store) if isinstance(i, int) and i < 0]:
            store.pop(i, None)
        self._ops = [[] for _ in self._ops]
