"""This module contains :class:`OperationQueue`: the deferred operations of a fit's shards, queued
per shard, that both executors over the shards send (:class:`~oocgbdt.runtime.actor_executor.ActorExecutor`
from the caller, :class:`~oocgbdt.runtime.spmd.SpmdExecutor` on every shard at once).

Every operation (``map``, ``submit``, ``scatter``) is queued for the shard that will run it:
a step runs on the shard that owns most of its inputs, and inputs owned by another shard are
pushed to it by their owner right after the operation that makes them. Handles are
:class:`~oocgbdt.runtime.handles.Ref` objects; when one is garbage collected its id is queued
for dropping on every shard. How the queues reach the shards is the subclass's
``_send``.
"""
from __future__ import annotations

import threading
import weakref

from oocgbdt.runtime.handles import ALL, Ref, find_refs

__all__ = ["OperationQueue"]


class OperationQueue:
    """Per-shard queues of deferred operations, and the bookkeeping of the handles they make.

    Parameters
    ----------
    n_shards : int
    ids : iterator of int
        The ids of new handles (the caller's count up from 0; the shards' own loops count
        down from -2, so the two never meet).
    """

    def __init__(self, n_shards: int, ids):
        self.n_shards = n_shards
        self._ids = ids
        self._lock = threading.Lock()
        self._dead = [[] for _ in range(n_shards)]   # ids to drop, per shard
        self._ops = [[] for _ in range(n_shards)]    # queued operations per shard
        self._pushed = {}  # id -> shards its value has been pushed to

    # ---- handle bookkeeping ---------------------------------------------------------------

    def _new(self, owner):
        ref = Ref(owner, next(self._ids))
        weakref.finalize(ref, self._forget, ref.id)
        return ref

    def _forget(self, id):
        with self._lock:
            for d in self._dead:
                d.append(id)
            self._pushed.pop(id, None)

    def _push_inputs(self, args, o):
        """Queue, on their owners, pushes of the inputs of a step that will run on shard ``o``
        (each value once per shard): the owner sends them as soon as its batch reaches the
        push, so the step finds them there instead of asking for them."""
        by_owner = {}
        with self._lock:
            for r in find_refs(args, []):
                if r.owner in (ALL, o):
                    continue
                sent = self._pushed.setdefault(r.id, set())
                if o not in sent:
                    sent.add(o)
                    by_owner.setdefault(r.owner, []).append(r.id)
        for p, ids in by_owner.items():
            self._queue_push(p, ids, o)

    def _queue_push(self, p, ids, o):
        """Queue on shard ``p`` the push of ``ids`` to shard ``o`` right after the queued
        operation that makes the last of them (first, when they were all made by earlier
        batches): a push waits for no later operation of its shard (in a pass where every shard
        searches a block, each must send its slices before it waits for the others')."""
        ops = self._ops[p]
        pushed = set(ids)
        at = 0
        for j, op in enumerate(ops):
            kind = op[0]
            made = ((op[1],) if kind == "put" else (op[2],) if kind == "step"
                    else op[2] if kind == "map" else ())
            if pushed.intersection(made):
                at = j + 1
        ops.insert(at, ("push", ids, o))

    def _take_dead(self, owner):
        with self._lock:
            dead, self._dead[owner] = self._dead[owner], []
        return dead

    def owner_of_partition(self, i, n):
        """Shard that holds partition ``i`` of ``n``: contiguous blocks whose sizes differ by at
        most one, the larger blocks last, where the partitioning's smaller last partition is (3
        partitions on 2 shards: 1 + 2, not 2 + 1; with the default 93,750 + 93,750 + 62,500
        rows the busier shard holds 156,250 rows instead of 187,500)."""
        w = self.n_shards
        q, r = divmod(n, w)
        small = (w - r) * q  # partitions in the first w - r blocks, of q each
        if i < small:
            return i // q
        return w - r + (i - small) // (q + 1)

    def scatter(self, obj):
        ref = self._new(ALL)
        for ops in self._ops:
            ops.append(("put", ref.id, obj))
        return ref

    def map(self, fn, *iterables, key=None, consume=None):
        """One call per shard: each runs the elements whose inputs it holds.

        ``consume``: index of an iterable whose handles the caller will not use again; the
        shards free each such input as soon as its element's result exists (see
        :meth:`Shard.map`).
        """
        elements = list(zip(*iterables))
        out = []
        groups = {}
        for i, args in enumerate(elements):
            owners = [r.owner for r in find_refs(args, []) if r.owner != ALL]
            o = owners[0] if owners else self.owner_of_partition(i, len(elements))
            ref = self._new(o)
            out.append(ref)
            groups.setdefault(o, ([], [], []))
            groups[o][0].append(ref.id)
            groups[o][1].append(args)
            if consume is not None:
                groups[o][2].append([r.id for r in find_refs(args[consume], []) if r.owner == o])
        for o, (ids, args, gone) in groups.items():
            self._push_inputs(args, o)
            self._ops[o].append(("map", fn, ids, args, None if consume is None else gone))
        return out

    def submit(self, fn, *args, key=None, place=None):
        """Queue ``fn(*args)`` on shard ``place``, by default the shard that holds most of its
        inputs (ties: the lowest index); the others are pushed to it."""
        counts = {}
        for r in find_refs(args, []):
            if r.owner != ALL:
                counts[r.owner] = counts.get(r.owner, 0) + 1
        if place == ALL:
            # Every shard runs the step on its own copy of the inputs.
            ref = self._new(ALL)
            for o in range(self.n_shards):
                self._push_inputs(args, o)
                self._ops[o].append(("step", fn, ref.id, args))
            return ref
        if place is not None:
            o = int(place) % self.n_shards
        else:
            o = max(sorted(counts), key=lambda k: counts[k]) if counts else 0
        self._push_inputs(args, o)
        ref = self._new(o)
        self._ops[o].append(("step", fn, ref.id, args))
        return ref
