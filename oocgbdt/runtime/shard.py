"""This module contains :class:`Shard`: the Dask actor, one per worker, that holds its block of a
fit's partitions (their per-row state, binned rows and histograms) and runs the operations the
executors send it on its worker's threads (:class:`~oocgbdt.core.executor.LocalExecutor`).

A shard runs numbered batches of operations in order (:meth:`Shard.run`), takes values other
shards push to it (:meth:`Shard.receive`, an actor call through ``distributed``'s comms), and
runs the whole boosting loop itself when every shard is asked to (:meth:`Shard.boost`, over a
:class:`~oocgbdt.runtime.spmd.SpmdExecutor`).
"""
from __future__ import annotations

import asyncio
import contextvars
import threading
import time

from distributed.protocol import pickle as _pickle

from oocgbdt.core.executor import PEER_WAIT, LocalExecutor
from oocgbdt.runtime.handles import ALL, Key, Ref, find_refs, walk
from oocgbdt.runtime.heap import training_heap
from oocgbdt.runtime.progress import EventBar, RoundEvents

__all__ = ["Shard", "PeerFailed"]


class PeerFailed(RuntimeError):
    """A shard stopped because another shard (or the caller) reported a failure: the cause is
    that other failure, which the caller raises in preference to this one."""


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
        Threads of the local executor (the worker's thread count).
    """

    def __init__(self, index: int, n_threads: int):
        self.index = index
        self.store = {}
        self.peers = None  # (worker address, actor key) of every shard (see set_peers)
        self._worker = None
        self.executor = LocalExecutor(n_threads=n_threads)
        self._heap = training_heap()  # the worker's malloc thresholds while it trains
        self._heap.__enter__()
        self._done = 0        # batches run so far
        self._error = None    # the exception of a failed batch: later batches and fetches raise
        self._loop = None
        self._event = None
        self._arrived = threading.Condition()  # values pushed by other shards (see receive)
        self._batches = set()  # batches running (see run)
        self._loop_pushes = ()  # pushes of the SPMD loop not yet known received (see _resolve)

    def set_peers(self, addresses, keys):
        """Every shard's worker address and actor key, by owner index: values a step of another
        shard needs are pushed to it (:meth:`receive`) by :meth:`_call_peer`."""
        from distributed import get_worker
        self._worker = get_worker()
        self.peers = list(zip(addresses, keys))

    def _call_peer(self, o, method, *args):
        """Call ``method`` of shard ``o``'s actor through this worker's own RPC to that shard's
        worker (``distributed``'s ``actor_execute``, its comms and security), without waiting;
        returns a concurrent future whose ``result()`` raises the call's error.

        Not an actor handle: a handle used on a worker makes that worker a client of the
        cluster, set as the default one, which an in-process worker shares with the whole
        process and, on a TLS cluster, leaves behind when closed.
        """
        from distributed.protocol import to_serialize
        address, key = self.peers[o]
        worker = self._worker

        async def call():
            r = await worker.rpc(address).actor_execute(
                function=method, actor=key, args=[to_serialize(a) for a in args], kwargs={})
            if r["status"] != "OK":
                raise r["exception"]
            return r["result"]

        return asyncio.run_coroutine_threadsafe(call(), worker.loop.asyncio_loop)

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
        needs them): wait until they have arrived. The wait is counted in the local executor's
        ``seconds`` under :data:`~oocgbdt.core.executor.PEER_WAIT`."""
        missing = [k.id for k in find_refs(obj, [], (Ref, Key))
                   if k.id not in self.store and k.owner not in (self.index, ALL)]
        if missing:
            t0 = time.perf_counter()
            try:
                self._wait_for(missing)
            finally:
                self.executor.seconds[PEER_WAIT] += time.perf_counter() - t0
        return walk(obj, lambda k: self.store[k.id])

    def _wait_for(self, missing):
        """Wait until the values ``missing`` (ids) pushed by other shards are stored."""
        while True:
            with self._arrived:
                if all(i in self.store for i in missing):
                    break
                if self._error is not None:
                    raise RuntimeError(f"shard {self.index}: an earlier step failed") \
                        from self._error
                answered = [f for f in self._loop_pushes if f.done()]
                if not answered:
                    self._arrived.wait(timeout=1.0)
            self._confirm_pushes(answered)  # not under the lock: receive takes it

    def _confirm_pushes(self, answered):
        """Forget the loop's pushes that were answered, raising the error of one that failed
        (the other shard could not take the values): the values a step waits for may be that
        shard's answer to them, and would never come."""
        for fut in answered:
            self._loop_pushes.remove(fut)
            fut.result()

    async def receive(self, ids, values):
        """Values pushed by another shard (inputs of this shard's steps), cached under their
        ids: the caller's drop messages reach every shard."""
        self._store_arrived(ids, values)
        self._wake()

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
        if pushes is None:
            pushes = []
        else:
            self._loop_pushes = pushes  # the loop's unconfirmed pushes (see _resolve)
        for op in ops:
            kind = op[0]
            if kind == "put":
                self.store[op[1]] = op[2]
            elif kind == "push":
                _, ids, dest = op
                values = [self.store[i] for i in ids]
                if self.peers is None:  # closed (interrupted)
                    raise PeerFailed(f"shard {self.index} was closed while its loop ran")
                pushes.append(self._call_peer(dest, "receive", ids, values))
            elif kind == "step":
                _, fn, out_id, args = op
                self.store[out_id] = self.executor.submit(fn, *self._resolve(args))
            else:
                self._map(*op[1:])
            self._changed()
        if wait_pushes:
            for fut in pushes:
                fut.result()
        self._drop(dead)

    def _map(self, fn, out_ids, arg_lists, consumed=None):
        """``fn(*args)`` for every element (on the local threads); keep the results.

        ``consumed``: per element, the ids of inputs the caller will not use again. Each is
        dropped as soon as that element's result is stored, so a map that replaces per-row
        state (gradients, scores, row groupings) holds one element's old and new state at a
        time, not every partition's twice.
        """
        args = self._resolve(arg_lists)
        if consumed is None:
            for i, r in zip(out_ids, self.executor.map(fn, *zip(*args))):
                self.store[i] = r
            return

        def one(j):
            a, args[j] = args[j], None
            self.store[out_ids[j]] = fn(*a)
            del a
            for k in consumed[j]:
                self.store.pop(k, None)
        one.__name__ = fn.__name__  # the executor's timers count it under fn's name
        self.executor.map(one, range(len(args)))

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
        for o in range(len(self.peers or ())):
            if o != self.index:
                self._call_peer(o, "fail", f"shard {self.index} failed: {error!r}")

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
        memory when they were computed here (the caller asks for that), else fetched from the
        workers holding them through this worker's own RPC (not a client on the worker: see
        :meth:`_call_peer`; a worker's client would become the process's default one)."""
        from distributed import get_worker
        from distributed.utils_comm import gather_from_workers
        self._drop(dead)
        worker = get_worker()
        remote = [k for k in keys if k not in worker.data]
        fetched = {}
        if remote:
            async def gather():
                who_has = await worker.scheduler.who_has(keys=remote)
                return await gather_from_workers(who_has, rpc=worker.rpc, who=worker.address)

            fetched, missing, failed, lost = asyncio.run_coroutine_threadsafe(
                gather(), worker.loop.asyncio_loop).result()
            if missing or failed:
                raise RuntimeError(f"shard {self.index}: could not fetch {len(missing) + len(failed)}"
                                   f" partition(s) from workers {sorted(lost)}: "
                                   f"{list(missing) + list(failed)}")
        self.store.update((i, fetched[k] if k in fetched else worker.data[k])
                          for i, k in zip(ids, keys))

    def seconds(self):
        """Seconds spent per task function name on this shard (see LocalExecutor.seconds)."""
        return dict(self.executor.seconds)

    def n_values(self):
        """How many values this shard holds (for tests of the memory bound)."""
        return len(self.store)

    def n_pass_results(self):
        """How many ``(TreeRows, partial histograms)`` pass results this shard holds (for tests
        of the memory bound: the partials of one pass at most, between passes)."""
        return sum(1 for v in self.store.values()
                   if isinstance(v, tuple) and len(v) == 2 and type(v[0]).__name__ == "TreeRows")

    async def boost(self, payload):
        """Run the whole boosting loop here, on every shard at once (see :class:`SpmdExecutor`);
        shard 0 returns the :class:`~oocgbdt.core.boosting.BoostResult`, the others None.

        ``payload`` is ``(partitions, eval_sets, boost_kwargs, n_shards)`` pickled by the caller
        (handles as the caller's :class:`Ref`); every earlier batch must have run. Values the
        loop makes are dropped when it ends, and the consumed training and eval partitions with
        them (the loop replaces them as it goes). A failure here is reported to the other
        shards (:meth:`fail`), whose loops then stop with :class:`PeerFailed`."""
        from concurrent.futures import ThreadPoolExecutor
        partitions, eval_sets, boost_kwargs, n_shards = _pickle.loads(payload)
        self._loop = asyncio.get_running_loop()
        ctx = contextvars.copy_context()  # get_worker() and actor calls work on the thread
        # A thread of its own, not the worker's actor thread, which every actor of the worker
        # shares: two fits at once on one cluster would otherwise each hold one worker's actor
        # thread and wait forever for the other's shard there.
        thread = ThreadPoolExecutor(1, thread_name_prefix=f"oocgbdt-shard-{self.index}")
        try:
            return await self._loop.run_in_executor(thread, ctx.run, self._boost, partitions,
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

    def _boost(self, partitions, eval_sets, boost_kwargs, n_shards):
        from oocgbdt.core.boosting import boost
        from oocgbdt.runtime.spmd import SpmdExecutor
        as_ref = lambda k: Ref(k.owner, k.id)  # no finalizer: the caller owns these ids
        boost_kwargs = dict(boost_kwargs)
        topic = boost_kwargs.pop("progress_topic", None)
        rounds = boost_kwargs.pop("progress_rounds", False)
        states = boost_kwargs.pop("progress_states", False)
        if topic is not None:
            boost_kwargs["progress"] = lambda total: EventBar(topic)
            if rounds:
                boost_kwargs["on_round"] = RoundEvents(topic)
            if states:
                boost_kwargs["on_state"] = RoundEvents(topic).state
        executor = SpmdExecutor(self, n_shards)
        try:
            result = boost(executor, walk(partitions, as_ref),
                           eval_sets=[(name, walk(h, as_ref)) for name, h in eval_sets],
                           **boost_kwargs)
            executor.wait()
        finally:
            executor.close()
            self._loop_pushes = ()
        return result if self.index == 0 else None

    def close(self):
        self.store.clear()
        self.peers = None
        self.executor.close()
        if self._heap is not None:
            heap, self._heap = self._heap, None
            heap.__exit__(None, None, None)
