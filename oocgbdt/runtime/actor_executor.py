"""This module contains :class:`ActorExecutor`: the caller's side of a fit on several workers. It
starts one :class:`~oocgbdt.runtime.shard.Shard` actor per worker, places the partitions on them,
sends them the operations it queues (:class:`~oocgbdt.runtime.queue.OperationQueue`), and has
every shard run the boosting loop itself (:meth:`ActorExecutor.boost`).

Why actors: with a task per partition and per reduction step, every pass over the data costs
several scheduler round trips (tens of milliseconds on a LocalCluster of processes), and a
31-leaf tree makes 30 passes. Here each worker's shard keeps its partitions' state and the
histograms computed from them; calls go to the actors (``distributed`` actor calls, never a
scheduler task), and a shard runs its share of a step on its own threads with the in-process
:class:`~oocgbdt.core.executor.LocalExecutor`.

Every operation is deferred until a value is needed: then each shard gets all its queued
operations in one call (all shards at once) and the caller waits only for the values it asked
for, so a pass costs one round trip to every shard, in parallel, not one per step. The
functions, their arguments and their grouping are exactly the ones the LocalExecutor runs, so
the model is bit-identical to in-process training and to one worker, for the same partitions.

Partitions are assigned to shards in contiguous blocks (:meth:`ActorExecutor.owner_of_partition`),
so the first levels of every fan-in reduction are local to a shard.
"""
from __future__ import annotations

import asyncio
import itertools
import time

from distributed.protocol import pickle as _pickle

from oocgbdt.core.executor import fit_threads
from oocgbdt.runtime.cluster import cluster_workers
from oocgbdt.runtime.handles import ALL, find_refs, walk
from oocgbdt.runtime.progress import caller_bar
from oocgbdt.runtime.queue import OperationQueue
from oocgbdt.runtime.shard import PeerFailed, Shard

__all__ = ["ActorExecutor", "LIVENESS_SECONDS", "WorkerLost", "WorkerRetiring"]

#: Seconds between checks, while the caller waits for a shard, that every shard's worker is
#: still there (see ActorExecutor._result).
LIVENESS_SECONDS = 2.0
#: Seconds between runs of the callbacks of arrived rounds while the caller waits for the loop.
POLL_SECONDS = 0.05
#: Seconds ActorExecutor.close waits, for all shards together, for them to clear their values.
CLOSE_SECONDS = 10.0


class WorkerLost(RuntimeError):
    """A shard's worker was lost during a fit; ``workers`` are their addresses."""

    def __init__(self, message, workers):
        super().__init__(message)
        self.workers = list(workers)


class WorkerRetiring(WorkerLost):
    """A shard's worker was asked to retire during a fit (``Client.retire_workers``, which
    ``distributed`` refuses while the worker holds an actor): the shards were stopped so that
    the fit can go on without that worker, then retire it (``workers`` are their addresses)."""


class ActorExecutor(OperationQueue):
    """Run :mod:`oocgbdt.core.partition` task bodies on one :class:`Shard` actor per worker.

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
    num_threads : int, default 0
        Threads of each shard (the ``num_threads`` parameter, see
        :func:`oocgbdt.core.executor.fit_threads`); 0: its worker's threads.
    """

    def __init__(self, client, workers=None, num_threads=0):
        self.client = client
        info = cluster_workers(client)
        self.workers = list(workers) if workers is not None else sorted(info)
        super().__init__(len(self.workers), itertools.count())
        self._seq = [0 for _ in self.workers]        # next batch number per shard
        self._inflight = [[] for _ in self.workers]  # (future, ops) of batches sent
        self._gone = set()  # shards whose worker a call found gone (see _lost)
        self.shards = []
        self._retire_seen = _retire_requests(client)  # those made before this fit's shards
        futures = [client.submit(Shard, i, fit_threads(num_threads, info[w]["nthreads"]),
                                 actor=True, workers=[w],
                                 pure=False, allow_other_workers=False)
                   for i, w in enumerate(self.workers)]
        self._actor_futures = futures
        # Pinned to their workers: a worker lost now would leave its actor waiting for it
        # forever (and this process with it), so wait checking that the workers are there.
        self._wait_pinned(futures)
        try:
            self.shards = [f.result() for f in futures]
        except Exception as e:  # "Worker holding Actor was lost", since the wait
            lost = self._wait_lost(LIVENESS_SECONDS)
            if lost:
                raise self._worker_lost(lost) from e
            raise
        keys = [f.key for f in futures]
        for o, f in enumerate([s.set_peers(self.workers, keys) for s in self.shards]):
            self._result(f, o)
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
                error = r["exception"]
                if isinstance(error, OSError):  # raised by the shard: not this connection's
                    error._raised_by_shard = True
                raise error
            return r["result"]

        return asyncio.run_coroutine_threadsafe(call(), self.client.loop.asyncio_loop)

    def _call(self, o, method, *args):
        """Call ``method`` of shard ``o``; returns a future (``result()``, ``done()``)."""
        if self.direct:
            return self._direct_call(o, method, *args)
        return getattr(self.shards[o], method)(*args)

    def _lost(self) -> list:
        """Shards whose worker is gone: a call to it failed to connect or lost its connection,
        the scheduler no longer holds its actor, or no longer lists its worker (a worker
        killed while the partitions load, and restarted by its nanny at another address,
        leaves its actor's future finished)."""
        alive = cluster_workers(self.client)
        starting = not self.shards  # the actors are being made: pending is no loss yet
        return [o for o, f in enumerate(self._actor_futures)
                if o in self._gone or self.workers[o] not in alive
                or (f.status != "finished" and not (starting and f.status == "pending"))]

    def _wait_lost(self, seconds) -> list:
        """:meth:`_lost`, asked again for up to ``seconds`` while it is empty."""
        deadline = time.monotonic() + seconds
        while True:
            lost = self._lost()
            if lost or time.monotonic() >= deadline:
                return lost
            time.sleep(0.1)

    def _retiring(self) -> list:
        """Shards whose worker was asked to retire since they started: ``distributed`` refuses
        to retire a worker holding an actor, and logs the refusal as a ``retire-workers`` event
        of topic ``"all"`` (its ``could-not-retire`` workers)."""
        asked = set()
        for stimulus, refused in _retire_requests(self.client).items():
            if stimulus not in self._retire_seen:
                asked.update(refused)
        return [o for o, w in enumerate(self.workers) if w in asked]

    def retiring_workers(self) -> list:
        """The addresses of the shards' workers asked to retire since the shards started (see
        :meth:`_retiring`): the caller retires them once the shards are closed."""
        return [self.workers[o] for o in self._retiring()]

    def _check_workers(self):
        """Raise :class:`WorkerLost` when a shard's worker is gone, or :class:`WorkerRetiring`
        when one was asked to retire (the other shards told to stop first); else nothing."""
        lost = self._lost()
        if lost:
            raise self._worker_lost(lost) from None
        retiring = self._retiring()
        if retiring:
            addresses = [self.workers[o] for o in retiring]
            message = (f"the worker of shard(s) {retiring} ({', '.join(addresses)}) was asked "
                       f"to retire during training")
            self._stop_shards(message)
            raise WorkerRetiring(message, addresses) from None

    def _result(self, fut, o=None, poll=None):
        """``fut.result()``, checking every :data:`LIVENESS_SECONDS` that every shard's worker
        is still there. A shard waiting for values that a lost shard would have pushed would
        otherwise wait forever (and the caller with it). When a call fails or a worker is lost,
        the other shards are told to stop (:meth:`Shard.fail`), then this raises. ``poll``, if
        given, is called about every :data:`POLL_SECONDS` while waiting (the callbacks of the
        rounds that arrived, :mod:`oocgbdt.runtime.progress`)."""
        deadline = time.monotonic() + LIVENESS_SECONDS
        while True:
            try:
                return fut.result(timeout=LIVENESS_SECONDS if poll is None else POLL_SECONDS)
            except TimeoutError:
                if poll is not None:
                    poll()
                    if time.monotonic() < deadline:
                        continue
                    deadline = time.monotonic() + LIVENESS_SECONDS
                self._check_workers()
            except Exception as e:
                if (o is not None and isinstance(e, OSError)
                        and not getattr(e, "_raised_by_shard", False)):
                    self._gone.add(o)  # this call's connection closed: its worker is gone
                    raise self._worker_lost(self._lost()) from e
                if not isinstance(e, PeerFailed):
                    # A shard's own error may come from a lost worker: a failed fetch from or
                    # push to a lost peer, or its own worker closing ("ConnectionPool is
                    # closed"). The scheduler says so within a liveness period; that loss is
                    # the cause to raise.
                    lost = self._wait_lost(LIVENESS_SECONDS)
                    if lost:
                        raise self._worker_lost(lost) from e
                self._stop_shards(f"a call to a shard failed: {e!r}")
                raise

    def wait_placed(self, futures) -> None:
        """Wait for the futures of tasks placed on the shards' workers (as the partitions are
        loaded, :func:`~oocgbdt.runtime.placement.compute_placed`; the shards' actors, pinned),
        checking every :data:`LIVENESS_SECONDS` that those workers are still there: a lost
        shard's worker ends the fit's attempt (and pinned tasks would wait for it forever).

        Raises
        ------
        RuntimeError
            A shard's worker was lost; the message names it.
        """
        self._wait_pinned(futures)

    def _wait_pinned(self, futures) -> None:
        """:meth:`wait_placed` (also of the shards' actors as they are made)."""
        from distributed import wait
        while True:
            try:
                with self.client.as_current():  # wait() asks the current client
                    wait(futures, timeout=LIVENESS_SECONDS)
                return
            except TimeoutError:
                self._check_workers()

    def _worker_lost(self, lost) -> WorkerLost:
        """The error of losing the workers of shards ``lost``, once the others are told to
        stop (:meth:`_stop_shards`)."""
        addresses = ", ".join(self.workers[o] for o in lost)
        message = (f"the worker of shard(s) {lost} ({addresses}) was lost during training, "
                   f"and with it that shard's partitions, per-row state and histograms. If "
                   f"the worker was killed at its memory limit, give workers more memory or "
                   f"use cache='disk'.")
        self._stop_shards(message)
        return WorkerLost(message, [self.workers[o] for o in lost])

    def _stop_shards(self, message):
        """Tell every shard whose worker is still there that training failed (without waiting):
        steps waiting for values from other shards raise instead of waiting forever."""
        lost = self._lost()
        for o in range(len(self.shards)):
            if o not in lost:
                f = self._call(o, "fail", message)
                if hasattr(f, "add_done_callback"):  # a direct call's concurrent future
                    f.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved

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

    # ---- data placement -------------------------------------------------------------------

    def adopt(self, futures):
        """Move Dask futures (one per partition, each computed on its shard's worker; see
        :meth:`owner_of_partition`) into the shards; returns their Refs. The futures can then be
        released."""
        from distributed import wait
        with self.client.as_current():  # wait() asks the current client, not the futures'
            wait(futures)
        self.wait()
        n = len(futures)
        refs = [self._new(self.owner_of_partition(i, n)) for i in range(n)]
        calls = []
        for o in range(len(self.shards)):
            mine = [i for i in range(n) if refs[i].owner == o]
            if mine:
                calls.append((o, self._call(o, "load", [refs[i].id for i in mine],
                                            [futures[i].key for i in mine], self._take_dead(o))))
        for o, c in calls:
            self._result(c, o)  # a lost worker raises WorkerLost
        return refs

    def gather(self, handles):
        """Values of ``handles``: the queued operations are sent with the ids wanted from each
        shard, whose call answers as soon as those values exist (one call per shard and pass;
        a shard with nothing queued is asked with :meth:`Shard.fetch`)."""
        refs = find_refs(handles, [])
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
        return walk(handles, lambda r: values[r.id])

    def boost(self, partitions, eval_sets, boost_kwargs, callbacks=None, progress=None):
        """Run :func:`~oocgbdt.core.boosting.boost` on every shard at once (SPMD, see
        :class:`SpmdExecutor`) over these handles; returns shard 0's result.

        ``progress`` (a :class:`~oocgbdt.core.checkpoint.FitProgress`) receives shard 0's
        round states as they arrive (:func:`~oocgbdt.runtime.progress.caller_bar`).
        With ``boost_kwargs["verbose"]`` the progress bar is shown here, driven by shard 0's
        rounds (:mod:`oocgbdt.runtime.progress`). Raises the failure of the shard that failed
        first (not the :class:`PeerFailed` of the shards it stopped), or :class:`WorkerLost` (a
        RuntimeError) when a worker is lost.
        """
        self.wait()
        n = len(self.shards)
        results, errors = [], []
        with caller_bar(self.client, boost_kwargs["params"]["n_estimators"],
                        bool(boost_kwargs.get("verbose")), callbacks=callbacks,
                        metrics=boost_kwargs["metrics"], progress=progress,
                        first_round=(boost_kwargs.get("continuation") or {}).get(
                            "first_round")) as bar:
            kwargs = [dict(boost_kwargs, verbose=False) for _ in range(n)]
            if bar is not None:
                kwargs[0]["progress_topic"] = bar.topic
                kwargs[0]["progress_rounds"] = callbacks is not None
                kwargs[0]["progress_states"] = progress is not None
            calls = [self._call(o, "boost", _pickle.dumps((partitions, eval_sets, kwargs[o], n)))
                     for o in range(n)]
            try:
                for o, c in enumerate(calls):
                    try:
                        poll = bar.poll if o == 0 and bar is not None else None
                        results.append(self._result(c, o, poll=poll))
                    except PeerFailed as e:
                        errors.append(e)
                    except Exception as e:
                        errors.insert(0, e)
            except BaseException as e:  # the caller was interrupted: stop the shards' loops
                self._stop_shards(f"the caller stopped: {e!r}")
                raise
            if errors:  # inside the block: the callbacks catch up with the rounds kept
                # A loss (WorkerLost from _result) is the cause to report, before the errors
                # of the shards it made fail.
                raise next((e for e in errors if isinstance(e, WorkerLost)), errors[0])
            if bar is not None:
                bar.finish(results[0], boost_kwargs["objective"].num_tree_per_iteration)
        return results[0]

    #: The caller's split records come back from the shards that searched them.
    replicate_search = False

    @property
    def n_feature_blocks(self) -> int:
        """One block of features per shard: each searches its block of every leaf (see
        :func:`oocgbdt.core.split.feature_blocks`)."""
        return len(self.shards)

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
        # The scheduler forgets the actors now, not when these objects are collected (a
        # traceback may hold them): each future of an actor's key, the proxies' included.
        for f in self._actor_futures + [getattr(a, "_future", None) for a in self.shards]:
            if f is not None:
                f.release()
        self.shards = []
        self._actor_futures = []


def _retire_requests(client) -> dict:
    """The scheduler's refused retirements so far: ``{stimulus id: addresses refused}`` of its
    ``retire-workers`` events (topic ``"all"``)."""
    out = {}
    for _, msg in client.get_events("all"):
        if isinstance(msg, dict) and msg.get("action") == "retire-workers":
            out[msg.get("stimulus_id")] = tuple(msg.get("could-not-retire") or ())
    return out

