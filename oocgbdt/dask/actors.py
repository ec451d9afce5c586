"""This module contains :class:`ActorBackend`: the core's task backend over one Dask actor per worker.

Why: with a task per partition and per reduction step, every pass over the data costs several
scheduler round trips (tens of milliseconds on a LocalCluster of processes), and a 31-leaf tree
makes 30 passes. Here each worker holds one :class:`Shard` actor that keeps its partitions'
state and the histograms computed from them; the boosting loop calls the actors (``distributed``
actor calls, never a scheduler task), and a shard runs its share of a step on its own threads
with the in-process :class:`~oocgbdt.core.backend.LocalBackend`.

Every operation is deferred until a value is needed: then each shard gets all its queued
operations in one call (all shards at once) and the caller waits only for the values it asked
for, so a boosting pass costs one round trip to every shard, in parallel (the partition tasks,
the reduction, the split search and the keep-histogram steps of the pass), not one per step.

Handles are :class:`Ref` objects: (owner shard, id), or owner ``ALL`` for values scattered to
every shard. A step runs on the shard that owns most of its inputs; inputs owned by another shard
are pushed to it by their owner, worker to worker, as soon as the owner has made them (only
histograms and split records move: partial histograms at the last reduction level). The
functions, their arguments and their grouping are exactly the ones the LocalBackend runs, so the
model is bit-identical to in-process training and to one worker, for the same partitions. When a Ref is
garbage collected on the caller, its value is dropped from the shards with the next call.

Partitions are assigned to shards in contiguous blocks (:meth:`ActorBackend.owner_of_partition`),
so the first levels of every fan-in reduction are local to a shard.

Training does not drive the loop from the caller: :meth:`ActorBackend.boost` has every shard run
the whole boosting loop itself (:meth:`Shard.boost`, :class:`SpmdBackend`), the same program on
every shard, each running its own share of the operations and exchanging values with the others
directly. Every shard then makes the same decisions from the same split records, and a pass
costs no round trip to the caller. The caller-driven mode above is what the loading steps use,
and what SpmdBackend's queueing is built on.
"""
from __future__ import annotations

import asyncio
import contextvars
import itertools
import os
import threading
import time
import weakref

from distributed.protocol import pickle as _pickle

from oocgbdt.core.backend import EVERYWHERE, LocalBackend
from oocgbdt.dask.channel import PeerChannel, channel_host, direct_channel_enabled
from oocgbdt.dask.heap import training_heap
from oocgbdt.dask.progress import EventBar, caller_bar

__all__ = ["ActorBackend", "SpmdBackend", "Shard", "Ref", "ALL", "PeerFailed"]

ALL = EVERYWHERE  #: owner of values scattered to, or made by, every shard
#: Seconds between checks, while the caller waits for a shard, that every shard's worker is
#: still there (see ActorBackend._result).
LIVENESS_SECONDS = 2.0
#: Seconds ActorBackend.close waits, for all shards together, for them to clear their values.
CLOSE_SECONDS = 10.0
#: Most shards at which SpmdBackend has every shard search every feature (measured on 2
#: workers of this project's 2-core machine; more shards were not measured).
REPLICATE_MAX_SHARDS = 2


class PeerFailed(RuntimeError):
    """A shard stopped because another shard (or the caller) reported a failure: the cause is
    that other failure, which the caller raises in preference to this one."""


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

    The caller sends each shard its deferred operations in numbered batches (:meth:`run`); a
    shard runs its batches in number order, one at a time, on the worker's actor thread. A value
    that a step needs from another shard is pushed by its owner (a ``push`` operation the caller
    queues on the owner with the step; :meth:`receive`), and the step waits for it; the caller
    itself reads values with the batch's own call (:meth:`run` with ``want``) or with
    :meth:`fetch`, both answered once the values have been made. These are
    coroutines, so a shard takes values in and answers while it computes. The caller creates
    operations in dependency order and every shard runs its own in that order, so the earliest
    unfinished operation can always proceed: no deadlock. A failed batch tells the other shards
    (:meth:`fail`), so nothing waits forever for values it will not make.

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
        self._heap = training_heap()  # the worker's malloc thresholds while it trains
        self._heap.__enter__()
        self._done = 0        # batches run so far
        self._error = None    # the exception of a failed batch: later batches and fetches raise
        self._loop = None
        self._event = None
        self._arrived = threading.Condition()  # values pushed by other shards (see receive)
        self._batches = set()  # batches running (see run)
        self._channel = None   # direct connections to the other shards (see open_channel)

    def set_peers(self, peers, channels=None):
        """Actor handles of every shard, by owner index (to fetch inputs owned elsewhere), and
        their :class:`~oocgbdt.dask.channel.PeerChannel` addresses (None: push through
        ``distributed`` only)."""
        self.peers = peers
        if self._channel is not None and channels is not None:
            self._channel.connect([a if o != self.index else None
                                   for o, a in enumerate(channels)])

    def open_channel(self, authkey: bytes):
        """Listen for the other shards' direct connections (see :mod:`oocgbdt.dask.channel`);
        returns the address they connect to, or None where this worker's comm is not plain
        TCP or the listener cannot be made (pushes then go through ``distributed``)."""
        from distributed import get_worker
        host = channel_host(get_worker().address)
        if host is None:
            return None
        try:
            self._channel = PeerChannel(host, authkey, self._received, self._channel_failed)
        except OSError:
            return None
        return self._channel.address

    # ---- waking coroutines that wait for values or for a batch's turn ---------------------

    def _wake(self):
        ev, self._event = self._event, None
        if ev is not None:
            ev.set()

    def _changed(self):
        """Called by the actor thread after each operation: wake the waiting coroutines, if
        any. Each wake-up takes the event loop thread, and the GIL, from the thread running
        the operations (the shards' own loops have nobody waiting: about 0.3 ms a boosting
        pass measured). A coroutine publishes its event before it checks its condition a last
        time (see :meth:`_wait_until`), so an operation either wakes it or is seen by it."""
        loop = self._loop
        if loop is not None and self._event is not None:
            loop.call_soon_threadsafe(self._wake)

    async def _wait_until(self, cond):
        self._loop = asyncio.get_running_loop()
        while not cond():
            if self._error is not None:
                raise RuntimeError(f"shard {self.index}: an earlier step failed") from self._error
            if self._event is None:
                self._event = asyncio.Event()
            if cond():  # after publishing the event: see _changed
                break
            await self._event.wait()

    # ---- operations -------------------------------------------------------------------------

    def _drop(self, dead):
        for i in dead:
            self.store.pop(i, None)

    def _resolve(self, obj):
        """``obj`` with its handles replaced by their values. Inputs owned by another shard are
        pushed here by their owner (the caller queues the push when it queues the step that
        needs them): wait until they have arrived."""
        missing = [k.id for k in _refs(obj, [], (Ref, _Key))
                   if k.id not in self.store and k.owner not in (self.index, ALL)]
        if missing:
            with self._arrived:
                while not all(i in self.store for i in missing):
                    if self._error is not None:
                        raise RuntimeError(f"shard {self.index}: an earlier step failed") \
                            from self._error
                    self._arrived.wait(timeout=1.0)
        return _walk(obj, lambda k: self.store[k.id])

    async def receive(self, ids, values):
        """Values pushed by another shard (inputs of this shard's steps), cached under their
        ids: the caller's drop messages reach every shard."""
        self._store_arrived(ids, values)
        self._wake()

    def _received(self, ids, values):
        """:meth:`receive` for values that came over the direct channel (on its thread)."""
        self._store_arrived(ids, values)
        self._changed()

    def _store_arrived(self, ids, values):
        with self._arrived:
            self.store.update(zip(ids, values))
            self._arrived.notify_all()

    def _stop_waiting(self, error):
        """Keep ``error`` (unless one is kept already) and wake the steps waiting for pushed
        values, which then raise."""
        if self._error is None:
            self._error = error
        with self._arrived:
            self._arrived.notify_all()

    def _channel_failed(self, error):
        """A message of the direct channel could not be read: steps waiting for values raise."""
        self._stop_waiting(error)
        self._changed()

    async def fail(self, message):
        """Another shard failed: steps waiting for its values raise instead of waiting."""
        self._stop_waiting(PeerFailed(message))
        self._wake()

    def _run_ops(self, dead, ops, pushes=None):
        """Run operations in order, then drop ``dead`` (before and after: an id may die before
        the operation that makes it has run). Operations: ``("put", id, value)``,
        ``("step", fn, out_id, args)``, ``("map", fn, out_ids, arg_lists, consumed)``, ``("push", ids,
        shard)`` (send values to the shard whose steps need them, without waiting; the batch
        ends when they have been received, or, given a list ``pushes``, their calls' futures
        are appended to it and not waited for)."""
        self._drop(dead)
        wait_pushes = pushes is None
        pushes = [] if pushes is None else pushes
        for op in ops:
            kind = op[0]
            if kind == "put":
                self.store[op[1]] = op[2]
            elif kind == "push":
                _, ids, dest = op
                values = [self.store[i] for i in ids]
                # The direct channel in the SPMD loop only: a caller-driven batch ends when its
                # pushes are known received, which the channel does not report.
                channel, peers = self._channel, self.peers  # None once closed (interrupted)
                if peers is None:
                    raise PeerFailed(f"shard {self.index} was closed while its loop ran")
                if wait_pushes or channel is None or not self._send_direct(channel, dest, ids,
                                                                          values):
                    pushes.append(peers[dest].receive(ids, values))
            elif kind == "step":
                _, fn, out_id, args = op
                self.store[out_id] = self.backend.submit(fn, *self._resolve(args))
            else:
                self._map(*op[1:])
            self._changed()
        if wait_pushes:
            for fut in pushes:
                fut.result()
        self._drop(dead)

    def _send_direct(self, channel, dest, ids, values) -> bool:
        """Push over the direct channel; False where it has no connection to ``dest``. A
        broken connection raises :class:`PeerFailed`, not the socket's OSError, which the
        caller would take for a lost connection to this shard's own worker."""
        try:
            return channel.send(dest, ids, values)
        except OSError as e:
            raise PeerFailed(f"shard {self.index} lost its connection to shard {dest} "
                             f"({e!r}); that shard's worker is probably gone") from None

    def _map(self, fn, out_ids, arg_lists, consumed=None):
        """``fn(*args)`` for every element (on the local threads); keep the results.

        ``consumed``: per element, the ids of inputs the caller will not use again. Each is
        dropped as soon as that element's result is stored, so a map that replaces per-row
        state (gradients, scores, row groupings) holds one element's old and new state at a
        time, not every partition's twice.
        """
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

    async def run(self, seq, payload):
        """Run batch number ``seq`` (after batches ``0 .. seq - 1``) on the actor thread.

        ``payload`` is ``(dead, ops, want)`` pickled by the caller in one buffer: ``distributed``
        serializes a list argument element by element, which cost about 1 ms of the caller's
        event loop per call of a boosting pass (measured), against a fraction of that for one
        buffer. ``dead``: ids to drop; ``ops``: see :meth:`_run_ops`; ``want``: ids whose
        values the caller waits for, or None. With ``want`` the call returns those values
        (pickled, see :meth:`fetch`) as soon as they exist (made by this batch or an earlier
        one) while the batch goes on, which saves the caller a :meth:`fetch` call per pass;
        otherwise it returns when the batch has run. An error of the batch is raised by this
        call if it comes before the values exist, else by the next :meth:`run`, :meth:`fetch`
        or :meth:`sync`.
        """
        dead, ops, want = _pickle.loads(payload)
        await self._wait_until(lambda: self._done == seq)
        if self._error is not None:
            raise RuntimeError(f"shard {self.index}: an earlier step failed") from self._error
        batch = asyncio.ensure_future(self._batch(seq, dead, ops))
        self._batches.add(batch)  # a task must be referenced until done
        batch.add_done_callback(self._batch_done)
        if want is None:
            await batch
            return None
        return await self.fetch(want)

    def _batch_done(self, task):
        self._batches.discard(task)
        if not task.cancelled():
            task.exception()  # kept in self._error and raised from there: retrieved here

    async def _batch(self, seq, dead, ops):
        from distributed import get_worker
        ctx = contextvars.copy_context()  # get_worker() and actor calls work on the thread
        try:
            await self._loop.run_in_executor(get_worker().executors["actor"], ctx.run,
                                             self._run_ops, dead, ops)
        except BaseException as e:
            self._failed(e)
            raise
        finally:
            self._done = seq + 1
            self._wake()

    def _failed(self, error):
        """Keep ``error`` (later calls raise it) and tell the other shards (:meth:`fail`), not
        waiting for them: they may be gone as well."""
        self._error = error
        for o, peer in enumerate(self.peers or ()):
            if o != self.index:
                peer.fail(f"shard {self.index} failed: {error!r}")

    async def sync(self, seq):
        """Return once batches ``0 .. seq - 1`` have run; raise the error of a failed one."""
        await self._wait_until(lambda: self._done >= seq)
        if self._error is not None:
            raise RuntimeError(f"shard {self.index}: a step failed") from self._error

    async def fetch(self, ids):
        """The values of ``ids``, once made (by this shard's batches run so far or to come),
        as one pickled list (one buffer to send, see :meth:`run`)."""
        await self._wait_until(lambda: all(i in self.store for i in ids))
        return _pickle.dumps([self.store[i] for i in ids])

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

    def seconds(self):
        """Seconds spent per task function name on this shard (see LocalBackend.seconds)."""
        return dict(self.backend.seconds)

    def n_values(self):
        """How many values this shard holds (for tests of the memory bound)."""
        return len(self.store)

    def n_pass_results(self):
        """How many ``(TreeRows, partial histograms)`` pass results this shard holds (for tests
        of the memory bound: the partials of one pass at most, between passes)."""
        return sum(1 for v in self.store.values()
                   if isinstance(v, tuple) and len(v) == 2 and type(v[0]).__name__ == "TreeRows")

    async def boost(self, payload):
        """Run the whole boosting loop here, on every shard at once (see :class:`SpmdBackend`);
        shard 0 returns the :class:`~oocgbdt.core.boosting.BoostResult`, the others None.

        ``payload`` is ``(chunks, eval_sets, boost_kwargs, n_shards)`` pickled by the caller
        (handles as the caller's :class:`Ref`); every earlier batch must have run. Values the
        loop makes are dropped when it ends, and the consumed training and eval chunks with
        them (the loop replaces them as it goes). A failure here is reported to the other
        shards (:meth:`fail`), whose loops then stop with :class:`PeerFailed`."""
        from concurrent.futures import ThreadPoolExecutor
        chunks, eval_sets, boost_kwargs, n_shards = _pickle.loads(payload)
        self._loop = asyncio.get_running_loop()
        ctx = contextvars.copy_context()  # get_worker() and actor calls work on the thread
        # A thread of its own, not the worker's actor thread, which every actor of the worker
        # shares: two fits at once on one cluster would otherwise each hold one worker's actor
        # thread and wait forever for the other's shard there.
        thread = ThreadPoolExecutor(1, thread_name_prefix=f"oocgbdt-shard-{self.index}")
        try:
            return await self._loop.run_in_executor(thread, ctx.run, self._boost, chunks,
                                                    eval_sets, boost_kwargs, n_shards)
        except BaseException as e:
            if isinstance(self._error, PeerFailed):
                raise PeerFailed(f"shard {self.index} stopped: {self._error}") from None
            self._failed(e)
            if isinstance(e, OSError):
                # The caller takes an OSError from a shard's call for a lost connection to its
                # worker (and would then not close this shard): say it is this loop's error.
                raise RuntimeError(f"shard {self.index} failed: {e!r}") from e
            raise
        finally:
            thread.shutdown(wait=False)

    def _boost(self, chunks, eval_sets, boost_kwargs, n_shards):
        from oocgbdt.core.boosting import boost
        as_ref = lambda k: Ref(k.owner, k.id)  # no finalizer: the caller owns these ids
        boost_kwargs = dict(boost_kwargs)
        topic = boost_kwargs.pop("progress_topic", None)
        if topic is not None:
            boost_kwargs["progress"] = lambda total: EventBar(topic)
        backend = SpmdBackend(self, n_shards)
        try:
            result = boost(backend, _walk(chunks, as_ref),
                           eval_sets=[(name, _walk(h, as_ref)) for name, h in eval_sets],
                           **boost_kwargs)
            backend.wait()
        finally:
            backend.close()
        return result if self.index == 0 else None

    def close(self):
        self.store.clear()
        self.peers = None  # the shards' handles of each other: they kept the actors alive
        self.backend.close()
        if self._channel is not None:
            channel, self._channel = self._channel, None
            channel.close()
        if self._heap is not None:
            heap, self._heap = self._heap, None
            heap.__exit__(None, None, None)


class ActorBackend:
    """Run :mod:`oocgbdt.core.chunk` task bodies on one :class:`Shard` actor per worker.

    Every operation (``map``, ``submit``, ``scatter``) is deferred: it is queued for the shard
    that will run it and nothing is sent until a value is needed (:meth:`gather`). Then every
    shard with queued operations gets them in one call, all shards at once, and the caller waits
    only for the values it asked for (that same call answers as soon as those values exist):
    operations queued after them (keeping histograms for later passes, dropping a pass's
    partial histograms) finish while the caller goes on. So a boosting pass costs one round
    trip to every shard, in parallel, plus the shard-to-shard pushes of its inputs.

    The arguments of a batch (and so the values they refer to) are kept alive on the caller
    until the batch's call has answered. A value whose handle dies later is dropped on each
    shard at the start of that shard's next batch, which begins only when the running one has
    ended, so no value is dropped while a batch that reads it may still run. Errors of a batch
    are raised by the next :meth:`gather` that needs its values, or at the latest by
    :meth:`wait` (also called by :attr:`seconds` and :meth:`close`).

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
        self._ops = [[] for _ in self.workers]       # queued operations per shard
        self._seq = [0 for _ in self.workers]        # next batch number per shard
        self._inflight = [[] for _ in self.workers]  # (future, ops) of batches sent
        self._pushed = {}  # id -> shards its value has been pushed to
        self._gone = set()  # shards whose worker a call found gone (see _lost)
        futures = [client.submit(Shard, i, info[w]["nthreads"], actor=True, workers=[w],
                                 pure=False, allow_other_workers=False)
                   for i, w in enumerate(self.workers)]
        self._actor_futures = futures
        self.shards = [f.result() for f in futures]
        channels = None
        if len(self.shards) > 1 and direct_channel_enabled():
            authkey = os.urandom(32)
            channels = [f.result() for f in [s.open_channel(authkey) for s in self.shards]]
        for f in [s.set_peers(self.shards, channels) for s in self.shards]:
            f.result()
        self.direct = self._probe_direct()

    # ---- calls --------------------------------------------------------------------------------

    def _probe_direct(self) -> bool:
        """Whether this process reaches the workers directly. ``distributed`` sends a client's
        actor calls through the scheduler unless the client was made with
        ``direct_to_workers=True``; a direct call saves that hop on every call (measured on a
        LocalCluster of processes: 1.2 ms instead of 2.0 ms per call to two workers, and less
        jitter), so it is used when the client does not forbid it and a first call succeeds."""
        if self.client.direct_to_workers is False or self.client.asynchronous:
            return False
        try:
            for f in [self._direct_call(o, "n_values") for o in range(len(self.shards))]:
                f.result(timeout=10)
        except Exception:
            return False
        return True

    def _direct_call(self, o, method, *args):
        from distributed.protocol import to_serialize

        async def call():
            r = await self.client.rpc(self.workers[o]).actor_execute(
                function=method, actor=self._actor_futures[o].key,
                args=[to_serialize(a) for a in args], kwargs={})
            if r["status"] != "OK":
                raise r["exception"]
            return r["result"]

        return asyncio.run_coroutine_threadsafe(call(), self.client.loop.asyncio_loop)

    def _call(self, o, method, *args):
        """Call ``method`` of shard ``o``; returns a future (``result()``, ``done()``)."""
        if self.direct:
            return self._direct_call(o, method, *args)
        return getattr(self.shards[o], method)(*args)

    def _lost(self) -> list:
        """Shards whose worker is gone: a call to it failed to connect or lost its connection,
        or the scheduler no longer holds its actor."""
        return [o for o, f in enumerate(self._actor_futures)
                if o in self._gone or f.status != "finished"]

    def _result(self, fut, o=None):
        """``fut.result()``, checking every :data:`LIVENESS_SECONDS` that every shard's worker
        is still there. A shard waiting for values that a lost shard would have pushed would
        otherwise wait forever (and the caller with it). When a call fails or a worker is lost,
        the other shards are told to stop (:meth:`Shard.fail`), then this raises."""
        while True:
            try:
                return fut.result(timeout=LIVENESS_SECONDS)
            except TimeoutError:
                lost = self._lost()
                if not lost:
                    continue
                message = self._lost_message(lost)
                self._stop_shards(message)
                raise RuntimeError(message) from None
            except Exception as e:
                if o is not None and isinstance(e, OSError):  # CommClosedError: worker gone
                    self._gone.add(o)
                    message = self._lost_message(self._lost())
                    self._stop_shards(message)
                    raise RuntimeError(message) from e
                self._stop_shards(f"a call to a shard failed: {e!r}")
                raise

    def wait_placed(self, futures) -> None:
        """Wait for the futures of tasks pinned to the shards' workers
        (``allow_other_workers=False``, as the partitions are loaded), checking every
        :data:`LIVENESS_SECONDS` that those workers are still there: the pinned tasks of a lost
        worker would wait for its address forever (and the caller with them).

        Raises
        ------
        RuntimeError
            A shard's worker was lost; the message names it.
        """
        from distributed import wait
        while True:
            try:
                wait(futures, timeout=LIVENESS_SECONDS)
                return
            except TimeoutError:
                lost = self._lost()
                if lost:
                    message = self._lost_message(lost)
                    self._stop_shards(message)
                    raise RuntimeError(message) from None

    def _lost_message(self, lost):
        addresses = ", ".join(self.workers[o] for o in lost)
        return (f"the worker of shard(s) {lost} ({addresses}) was lost during training, and "
                f"with it that shard's partitions, per-row state and histograms (actor state is "
                f"not resilient). Train again; if the worker was killed at its memory limit, "
                f"give workers more memory or use cache='disk'.")

    def _stop_shards(self, message):
        """Tell every shard whose worker is still there that training failed (without waiting):
        steps waiting for values from other shards raise instead of waiting forever."""
        lost = self._lost()
        for o in range(len(self.shards)):
            if o not in lost:
                f = self._call(o, "fail", message)
                if hasattr(f, "add_done_callback"):  # a direct call's concurrent future
                    f.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved

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
            for r in _refs(args, []):
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
        searches a segment, each must send its slices before it waits for the others')."""
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

    def _reap(self, wait=False):
        """Forget finished batches (raising their errors); with ``wait``, wait for all."""
        for o, batches in enumerate(self._inflight):
            keep = []
            for fut, ops in batches:
                if wait or fut.done():
                    self._result(fut, o)
                else:
                    keep.append((fut, ops))
            self._inflight[o] = keep

    def _send(self, want=None):
        """Send every shard its queued operations and the ids that died (one call each).

        ``want``: ids per shard whose values the caller will wait for; their shard's call
        returns them (see :meth:`Shard.run`), and this returns those calls' futures, by shard.
        Shards whose batch pushes values to another shard are called first: a call reaches its
        shard about 1.5 ms after the one before it (measured on a LocalCluster of 2 processes),
        and the shard that sums the pushed partials waits for them anyway."""
        self._reap()
        want = want or {}
        replies = {}
        order = sorted(range(len(self.shards)),
                       key=lambda o: not any(op[0] == "push" for op in self._ops[o]))
        for o in order:
            ops, self._ops[o] = self._ops[o], []
            dead = self._take_dead(o)
            if ops or dead:
                fut = self._call(o, "run", self._seq[o],
                                 _pickle.dumps((dead, ops, want.get(o))))
                self._seq[o] += 1
                self._inflight[o].append((fut, ops))
                if o in want:
                    replies[o] = fut
        return replies

    def wait(self):
        """Send the queued operations and wait until every shard has run all it was sent."""
        self._send()
        self._reap(wait=True)
        # A call that returned values early (gather) may have left its batch running.
        for o, f in [(o, self._call(o, "sync", self._seq[o])) for o in range(len(self.shards))
                     if self._seq[o]]:
            self._result(f, o)

    def owner_of_partition(self, i, n):
        """Shard that holds partition ``i`` of ``n``: contiguous blocks whose sizes differ by at
        most one, the larger blocks last, where the partitioning's smaller last partition is (3
        partitions on 2 shards: 1 + 2, not 2 + 1; with the default 93,750 + 93,750 + 62,500
        rows the busier shard holds 156,250 rows instead of 187,500)."""
        w = len(self.workers)
        q, r = divmod(n, w)
        small = (w - r) * q  # partitions in the first w - r blocks, of q each
        if i < small:
            return i // q
        return w - r + (i - small) // (q + 1)

    # ---- data placement -------------------------------------------------------------------

    def adopt(self, futures):
        """Move Dask futures (one per partition, each computed on its shard's worker; see
        :meth:`owner_of_partition`) into the shards; returns their Refs. The futures can then be
        released."""
        from distributed import wait
        wait(futures)
        self.wait()
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
            owners = [r.owner for r in _refs(args, []) if r.owner != ALL]
            o = owners[0] if owners else self.owner_of_partition(i, len(elements))
            ref = self._new(o)
            out.append(ref)
            groups.setdefault(o, ([], [], []))
            groups[o][0].append(ref.id)
            groups[o][1].append(args)
            if consume is not None:
                groups[o][2].append([r.id for r in _refs(args[consume], []) if r.owner == o])
        for o, (ids, args, gone) in groups.items():
            self._push_inputs(args, o)
            self._ops[o].append(("map", fn, ids, args, None if consume is None else gone))
        return out

    @property
    def n_segments(self) -> int:
        """Places a pass's split search can be shared out to (one per shard; see
        :func:`oocgbdt.core.split.feature_segments`)."""
        return len(self.shards)

    def submit(self, fn, *args, key=None, place=None):
        """Queue ``fn(*args)`` on shard ``place``, by default the shard that holds most of its
        inputs (ties: the lowest index); the others are pushed to it."""
        counts = {}
        for r in _refs(args, []):
            if r.owner != ALL:
                counts[r.owner] = counts.get(r.owner, 0) + 1
        if place == ALL:
            # Every shard runs the step on its own copy of the inputs.
            ref = self._new(ALL)
            for o in range(len(self.shards)):
                self._push_inputs(args, o)
                self._ops[o].append(("step", fn, ref.id, args))
            return ref
        if place is not None:
            o = int(place) % len(self.shards)
        else:
            o = max(sorted(counts), key=lambda k: counts[k]) if counts else 0
        self._push_inputs(args, o)
        ref = self._new(o)
        self._ops[o].append(("step", fn, ref.id, args))
        return ref

    def gather(self, handles):
        """Values of ``handles``: the queued operations are sent with the ids wanted from each
        shard, whose call answers as soon as those values exist (one call per shard and pass;
        a shard with nothing queued is asked with :meth:`Shard.fetch`)."""
        refs = _refs(handles, [])
        by_owner = {}
        for r in refs:
            by_owner.setdefault(0 if r.owner == ALL else r.owner, []).append(r.id)
        calls = self._send(by_owner)
        for o, ids in by_owner.items():
            if o not in calls:
                calls[o] = self._call(o, "fetch", ids)
        values = {}
        for o, c in calls.items():
            values.update(zip(by_owner[o], _pickle.loads(self._result(c, o))))
        return _walk(handles, lambda r: values[r.id])

    def boost(self, chunks, eval_sets, boost_kwargs):
        """Run :func:`~oocgbdt.core.boosting.boost` on every shard at once (SPMD, see
        :class:`SpmdBackend`) over these handles; returns shard 0's result.

        With ``boost_kwargs["verbose"]`` the progress bar is shown here, driven by shard 0's
        rounds (:mod:`oocgbdt.dask.progress`). Raises the failure of the shard that failed
        first (not the :class:`PeerFailed` of the shards it stopped), or a RuntimeError when a
        worker is lost.
        """
        self.wait()
        n = len(self.shards)
        results, errors = [], []
        with caller_bar(self.client, boost_kwargs["params"]["n_estimators"],
                        bool(boost_kwargs.get("verbose"))) as bar:
            kwargs = [dict(boost_kwargs, verbose=False) for _ in range(n)]
            if bar is not None:
                kwargs[0]["progress_topic"] = bar.topic
            calls = [self._call(o, "boost", _pickle.dumps((chunks, eval_sets, kwargs[o], n)))
                     for o in range(n)]
            try:
                for o, c in enumerate(calls):
                    try:
                        results.append(self._result(c, o))
                    except PeerFailed as e:
                        errors.append(e)
                    except Exception as e:
                        errors.insert(0, e)
            except BaseException as e:  # the caller was interrupted: stop the shards' loops
                self._stop_shards(f"the caller stopped: {e!r}")
                raise
            if bar is not None and not errors:
                bar.finish(results[0], boost_kwargs["objective"].num_tree_per_iteration)
        if errors:
            raise errors[0]
        return results[0]

    @property
    def seconds(self):
        """Seconds per task function name: the largest total over the shards (they run in
        parallel, so this approximates the wall time the steps took). Waits for the queued
        operations, then one call per shard."""
        self.wait()
        out = {}
        for c in [self._call(o, "seconds") for o in range(len(self.shards))]:
            for k, v in self._result(c).items():
                out[k] = max(out.get(k, 0.0), v)
        return out

    def close(self):
        try:
            self.wait()
        except Exception:  # pragma: no cover - the error was raised to the caller already
            pass
        lost = self._lost() if self._actor_futures else []
        # Every shard at once, for CLOSE_SECONDS in all: a call to a worker that has just died
        # but is not known lost yet would wait for the connect timeout (30 s by default).
        closing = [self._call(o, "close") for o in range(len(self.shards)) if o not in lost]
        deadline = time.monotonic() + CLOSE_SECONDS
        for f in closing:
            try:
                f.result(timeout=max(0.0, deadline - time.monotonic()))
            except Exception:  # pragma: no cover - the cluster may already be gone
                pass
        self.shards = []
        self._actor_futures = []


class SpmdBackend(ActorBackend):
    """The :class:`ActorBackend` program run on every shard at once (single program, multiple
    data), with no caller in the loop.

    Every shard runs the same boosting loop (:meth:`Shard.boost`) with one of these: operations
    are queued per shard exactly as the caller's ActorBackend queues them (same placement, same
    pushes right after their producers), and at each wait a shard runs its own queue, pushing
    values to the shards whose steps need them, and drops the others' queues (they run them
    themselves). :meth:`gather` is an all-gather: each value's owner pushes it to every other
    shard, so every shard reads the same split records and makes the same decisions. A pass
    then costs the shard-to-shard pushes of partial histograms, and no round trip to a caller.
    With :attr:`replicate_search` (2 shards) every shard also sums the partials and searches
    on its own copy, so the split records need not travel either: one hop per pass.

    Measured on 1M x 100, 2 workers of 1 thread, 40 trees, three alternating pairs: 0.32-0.35
    s/tree against 0.35-0.39 for the caller-driven :class:`ActorBackend` (a pass: 18.6 ms
    median against 20.6). Segments with the records exchanged instead (what 3+ shards do) gave
    no measurable difference on 2 workers. The functions and their grouping are those the
    caller-driven backend runs, so the model is the same, bit for bit.

    Parameters
    ----------
    shard : Shard
        This shard (its store, its peers, its local threads).
    n_shards : int
    """

    def __init__(self, shard, n_shards):
        self.shard = shard
        self.me = shard.index
        self.workers = [None] * n_shards
        self.shards = [None] * n_shards
        # Ids of values made by the loop: negative, so they never meet the caller's ids (which
        # name the chunks), and the same on every shard (the same program makes them in the
        # same order).
        self._ids = itertools.count(-2, -1)
        self._lock = threading.Lock()
        self._dead = [[] for _ in range(n_shards)]
        self._ops = [[] for _ in range(n_shards)]
        self._pushed = {}
        self._pushes = []  # futures of pushes sent and not yet known received

    @property
    def replicate_search(self) -> bool:
        """With at most :data:`REPLICATE_MAX_SHARDS` shards, every shard sums a pass's partial
        histograms and searches every feature itself (HistogramSource ``replicate``): a pass
        then moves partials once and no split records. With more, each shard would receive
        every other shard's partials whole, so the search is shared out by feature segments
        instead and the records are exchanged."""
        return len(self.shards) <= REPLICATE_MAX_SHARDS

    @property
    def n_segments(self) -> int:
        return 1 if self.replicate_search else len(self.shards)

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
        refs = [r for r in _refs(handles, []) if r.owner != ALL]
        for o in range(len(self.shards)):
            self._push_inputs(refs, o)  # to every shard, as if a step there read them
        self._send()
        values = self.shard._resolve([_Key(r.owner, r.id) for r in refs])
        got = dict(zip([r.id for r in refs], values))
        return _walk(handles, lambda r: got[r.id] if r.owner != ALL else self.shard.store[r.id])

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
        # list(store): one step under the GIL, while a channel thread may still store values
        # (a failed fit's peer pushing), which iterating the dict itself would trip on.
        for i in [i for i in list(store) if isinstance(i, int) and i < 0]:
            store.pop(i, None)
        self._ops = [[] for _ in self._ops]
