"""This module contains :class:`ActorBackend`: the core's task backend over one Dask actor per worker.

Why: with a task per partition and per reduction step, every pass over the data costs several
scheduler round trips (tens of milliseconds on a LocalCluster of processes), and a 31-leaf tree
makes 30 passes. Here each worker holds one :class:`Shard` actor that keeps its partitions'
state and the histograms computed from them; the boosting loop calls the actors directly
(``distributed`` actor calls go from the caller to the worker, never through the scheduler), one
call per worker per step, and a shard runs its share of a step on its own threads with the
in-process :class:`~oocgbdt.core.backend.LocalBackend`.

Handles are :class:`Ref` objects: (owner shard, id), or owner ``ALL`` for values scattered to
every shard. A step runs on the shard that owns most of its inputs; inputs owned by another shard
are fetched from it directly, worker to worker (only histograms and split records move: partial
histograms at the last reduction level). The functions, their arguments and their grouping are
exactly the ones the LocalBackend runs, so the model is bit-identical to in-process training and
to one worker, for the same partitions. When a Ref is garbage collected on the caller, its value
is dropped from the shards with the next call.

Partitions are assigned to shards in contiguous blocks (partition ``i`` of ``n`` to shard
``i * n_shards // n``), so the first levels of every fan-in reduction are local to a shard.
"""
from __future__ import annotations

import itertools
import threading
import weakref

from oocgbdt.core.backend import LocalBackend

__all__ = ["ActorBackend", "Shard", "Ref", "ALL"]

ALL = -1  #: owner of values scattered to every shard


class _Key:
    """Transport form of a :class:`Ref` (what shards receive): no finalizer attached."""

    __slots__ = ("owner", "id")

    def __init__(self, owner, id):
        self.owner, self.id = owner, id


class Ref:
    """Caller-side handle of a value held by a shard (``owner``) or by all shards (``ALL``)."""

    __slots__ = ("owner", "id", "__weakref__")

    def __init__(self, owner: int, id: int):
        self.owner, self.id = owner, id

    def __reduce__(self):
        return (_Key, (self.owner, self.id))

    def __repr__(self):
        return f"Ref(owner={self.owner}, id={self.id})"


def _walk(obj, fn):
    """Copy of ``obj`` with every Ref/_Key replaced by ``fn(ref)`` (lists and tuples walked)."""
    if isinstance(obj, (Ref, _Key)):
        return fn(obj)
    if isinstance(obj, list):
        return [_walk(o, fn) for o in obj]
    if isinstance(obj, tuple):
        return tuple(_walk(o, fn) for o in obj)
    return obj


def _refs(obj, out, kinds=(Ref,)):
    """Append to ``out`` every handle of the given ``kinds`` inside ``obj`` (lists and tuples
    walked); the caller's side looks for :class:`Ref`, a shard for :class:`_Key` too."""
    if isinstance(obj, kinds):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _refs(o, out, kinds)
    return out


class Shard:
    """Actor body: one per worker; holds values by id and runs task bodies on local threads.

    Parameters
    ----------
    index : int
        This shard's owner index.
    n_threads : int
        Threads of the local backend (the worker's thread count).
    """

    def __init__(self, index: int, n_threads: int):
        self.index = index
        self.store = {}
        self.peers = None
        self.backend = LocalBackend(n_threads=n_threads)

    def set_peers(self, peers):
        """Actor handles of every shard, by owner index (to fetch inputs owned elsewhere)."""
        self.peers = peers

    def _drop(self, dead):
        for i in dead:
            self.store.pop(i, None)

    def _resolve(self, obj):
        missing = {}
        for k in _refs(obj, [], (Ref, _Key)):
            if k.id not in self.store and k.owner not in (self.index, ALL):
                missing.setdefault(k.owner, []).append(k.id)
        futures = [(ids, self.peers[o].get(ids)) for o, ids in missing.items()]
        for ids, fut in futures:
            # Cached under its id: the caller's drop messages reach every shard.
            self.store.update(zip(ids, fut.result()))
        return _walk(obj, lambda k: self.store[k.id])

    def load(self, ids, keys, dead=()):
        """Take the values of the finished Dask tasks ``keys`` under ``ids``: from this worker's
        memory when they were computed here (the caller asks for that), else fetched."""
        from distributed import Future, get_client, get_worker
        self._drop(dead)
        data = get_worker().data
        remote = [k for k in keys if k not in data]
        fetched = {}
        if remote:
            client = get_client()
            fetched = dict(zip(remote, client.gather([Future(k, client=client) for k in remote])))
        self.store.update((i, fetched[k] if k in fetched else data[k]) for i, k in zip(ids, keys))

    def put(self, id, value, dead=()):
        self._drop(dead)
        self.store[id] = value

    def _run(self, ops, dead):
        """Run the deferred single steps ``ops`` ([(fn, out_id, args)], in order), then drop
        ``dead`` (before and after: an id may die before the step that makes it has run)."""
        self._drop(dead)
        for fn, out_id, args in ops:
            self.store[out_id] = self.backend.submit(fn, *self._resolve(args))
        self._drop(dead)

    def map(self, fn, out_ids, arg_lists, dead=(), ops=(), consumed=None):
        """Run ``ops``, then ``fn(*args)`` for every element (on the local threads); keep the
        results.

        ``consumed``: per element, the ids of inputs the caller will not use again. Each is
        dropped as soon as that element's result is stored, so a map that replaces per-row
        state (gradients, scores, row groupings) holds one element's old and new state at a
        time, not every partition's twice.
        """
        self._run(ops, dead)
        args = self._resolve(arg_lists)
        if consumed is None:
            for i, r in zip(out_ids, self.backend.map(fn, *zip(*args))):
                self.store[i] = r
            return

        def one(j):
            a, args[j] = args[j], None
            self.store[out_ids[j]] = fn(*a)
            del a
            for k in consumed[j]:
                self.store.pop(k, None)
        one.__name__ = fn.__name__  # the backend's timers count it under fn's name
        self.backend.map(one, range(len(args)))

    def run(self, dead=(), ops=()):
        """Run deferred steps (see :meth:`_run`)."""
        self._run(ops, dead)

    def get(self, ids, dead=(), ops=()):
        """Run ``ops``, then return the values of ``ids``."""
        self._run(ops, dead)
        return [self.store[i] for i in ids]

    def seconds(self):
        """Seconds spent per task function name on this shard (see LocalBackend.seconds)."""
        return dict(self.backend.seconds)

    def n_values(self):
        """How many values this shard holds (for tests of the memory bound)."""
        return len(self.store)

    def close(self):
        self.store.clear()
        self.backend.close()


class ActorBackend:
    """Run :mod:`oocgbdt.core.chunk` task bodies on one :class:`Shard` actor per worker.

    Parameters
    ----------
    client : distributed.Client
    workers : list of str, optional
        Worker addresses to use (default: every worker of the client's cluster).
    """

    def __init__(self, client, workers=None):
        self.client = client
        info = client.scheduler_info()["workers"]
        self.workers = list(workers) if workers is not None else sorted(info)
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._dead = [[] for _ in self.workers]
        # Single steps (submit) are deferred and sent with the shard's next call, so a pass
        # costs one round trip per map and one per gather, not one per step.
        self._ops = [[] for _ in self.workers]
        self._pending = {}  # id of a deferred step's result -> its shard
        futures = [client.submit(Shard, i, info[w]["nthreads"], actor=True, workers=[w],
                                 pure=False, allow_other_workers=False)
                   for i, w in enumerate(self.workers)]
        self._actor_futures = futures
        self.shards = [f.result() for f in futures]
        for f in [s.set_peers(self.shards) for s in self.shards]:
            f.result()

    # ---- handle bookkeeping ---------------------------------------------------------------

    def _new(self, owner):
        ref = Ref(owner, next(self._ids))
        weakref.finalize(ref, self._forget, ref.id)
        return ref

    def _forget(self, id):
        with self._lock:
            for d in self._dead:
                d.append(id)

    def _take_dead(self, owner):
        with self._lock:
            dead, self._dead[owner] = self._dead[owner], []
        return dead

    def _take_ops(self, owner):
        ops, self._ops[owner] = self._ops[owner], []
        for _, out_id, _ in ops:
            self._pending.pop(out_id, None)
        return ops

    def _flush_others(self, args, owner):
        """Run the deferred steps of other shards that ``args`` depend on."""
        others = {self._pending[r.id] for r in _refs(args, []) if r.id in self._pending} - {owner}
        for c in [self.shards[o].run(self._take_dead(o), self._take_ops(o)) for o in sorted(others)]:
            c.result()

    def owner_of_partition(self, i, n):
        """Shard that holds partition ``i`` of ``n`` (contiguous blocks)."""
        return i * len(self.workers) // n

    # ---- data placement -------------------------------------------------------------------

    def adopt(self, futures):
        """Move Dask futures (one per partition, each computed on its shard's worker; see
        :meth:`owner_of_partition`) into the shards; returns their Refs. The futures can then be
        released."""
        from distributed import wait
        wait(futures)
        n = len(futures)
        refs = [self._new(self.owner_of_partition(i, n)) for i in range(n)]
        calls = []
        for o, shard in enumerate(self.shards):
            mine = [i for i in range(n) if refs[i].owner == o]
            if mine:
                calls.append(shard.load([refs[i].id for i in mine], [futures[i].key for i in mine],
                                        self._take_dead(o)))
        for c in calls:
            c.result()
        return refs

    # ---- the backend interface ------------------------------------------------------------

    def scatter(self, obj):
        ref = self._new(ALL)
        for c in [s.put(ref.id, obj, self._take_dead(o)) for o, s in enumerate(self.shards)]:
            c.result()
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
            owners = [r.owner for r in _refs(args, []) if r.owner != ALL]
            o = owners[0] if owners else self.owner_of_partition(i, len(elements))
            ref = self._new(o)
            out.append(ref)
            groups.setdefault(o, ([], [], []))
            groups[o][0].append(ref.id)
            groups[o][1].append(args)
            if consume is not None:
                groups[o][2].append([r.id for r in _refs(args[consume], []) if r.owner == o])
        for o, (ids, args, _) in groups.items():
            self._flush_others(args, o)
        calls = [self.shards[o].map(fn, ids, args, self._take_dead(o), self._take_ops(o),
                                    None if consume is None else gone)
                 for o, (ids, args, gone) in groups.items()]
        for c in calls:
            c.result()
        return out

    def submit(self, fn, *args, key=None):
        counts = {}
        for r in _refs(args, []):
            if r.owner != ALL:
                counts[r.owner] = counts.get(r.owner, 0) + 1
        o = max(sorted(counts), key=lambda k: counts[k]) if counts else 0
        self._flush_others(args, o)
        ref = self._new(o)
        self._ops[o].append((fn, ref.id, args))
        self._pending[ref.id] = o
        return ref

    def gather(self, handles):
        refs = _refs(handles, [])
        by_owner = {}
        for r in refs:
            by_owner.setdefault(0 if r.owner == ALL else r.owner, []).append(r.id)
        calls = {o: self.shards[o].get(ids, self._take_dead(o), self._take_ops(o))
                 for o, ids in by_owner.items()}
        values = {}
        for o, c in calls.items():
            values.update(zip(by_owner[o], c.result()))
        return _walk(handles, lambda r: values[r.id])

    @property
    def seconds(self):
        """Seconds per task function name: the largest total over the shards (they run in
        parallel, so this approximates the wall time the steps took). One call per shard."""
        out = {}
        for c in [s.seconds() for s in self.shards]:
            for k, v in c.result().items():
                out[k] = max(out.get(k, 0.0), v)
        return out

    def close(self):
        for s in self.shards:
            try:
                s.close().result()
            except Exception:  # pragma: no cover - the cluster may already be gone
                pass
        self.shards = []
        self._actor_futures = []
