"""Chaos benchmark: train on a LocalCluster of worker processes while a random worker is
SIGKILLed every few seconds; the fit must complete with the undisturbed model.

Usage::

    python -m benchmarks.chaos [--quick] [--rows N] [--features F] [--rounds R]
                               [--workers W] [--every SECONDS] [--seed S]
                               [--cache auto|memory|disk]
    python -m benchmarks.chaos --phases [--quick] [--rows N] [--features F] [--rounds R]
                               [--cases PHASE:CACHE,... [--repeat K]]

Data: ``rows x features`` float32 N(0, 1) features, binary labels from a nonlinear function of
the first features (seeded). Defaults: 200,000 x 20, 60 rounds, 3 workers (1 thread each), a
kill every 8 s; ``--quick``: 20,000 x 10, 30 rounds, a kill every 4 s. The 1,000,000 x 100 of a
larger machine is ``--rows 1000000 --features 100``.

Runs, on one cluster (the nanny restarts each killed worker): one undisturbed fit, then the same
fit with a thread that, every ``--every`` seconds while the fit runs, SIGKILLs a worker drawn at
random (``max_worker_failures`` set high enough never to give up). Prints:

- ``losses``: workers killed during the fit (each one a ``WorkerLost`` recovered from);
- ``rounds redone``: rounds the shards completed more than once (each shard's loop reports
  every round it completes as a ``distributed`` event, through a worker plugin that wraps
  :func:`oocgbdt.core.boosting.boost`; a round counts once per loop that completed it). The
  round in progress at a loss is not counted: it was never completed, and is trained once
  more from its start;
- per kill, the seconds until a round completed again (its fit's next loop going on);
- wall time of each fit and their ratio;
- ``models identical``: every tree of the disturbed fit equal to the undisturbed fit's.

``--phases``: one worker of 3 is killed once, at a chosen phase of the fit, with an eval set
given; each row a fresh cluster (a warm-up fit first) and one fit. ``load``: the worker named 1
is SIGKILLed by this process as the partitions' loading tasks are pinned to the shards' workers
(``oocgbdt.runtime.placement.compute_placed`` wrapped, as the kill tests do). ``tree``,
``eval`` and ``write``: the victim kills itself (a worker plugin, :class:`PhaseKiller`, wraps
the phase's function on the worker named 1; a marker file keeps the nanny's restarted worker
from doing it again) at its 30th split pass after the warm-up (mid-tree), in round 3's
evaluation, or in its first piece of the disk-cache write (``cache="disk"``). ``restart``
asks the nanny to restart the worker (``Client.restart_workers``) as round 3 reaches the
caller, and ``retire`` asks the scheduler to retire it (``Client.retire_workers``, which
``distributed`` refuses while the worker holds a shard; its ``killed`` column says whether the
worker had left the cluster when the fit ended, its losses count the fit's moves off it). Each row prints whether the kill happened, the losses the fit recovered from (its
warnings; a kill handled by Dask's own task retries is none), whether the fit completed and
its trees and evaluation history equal the undisturbed fit's (same cache mode), and the wall
time ratio. Defaults: 20,000 x 10 training rows (``--quick``: 10,000 x 8), 5,000 eval rows,
20 rounds.
"""
from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np
from distributed.diagnostics.plugin import WorkerPlugin

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TOPIC = "oocgbdt-chaos-rounds"


def synthetic(rows, features, seed):
    """``(X float32 (rows, features), y float64 0/1)``: labels from a nonlinear function of the
    first features plus noise."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, features)).astype(np.float32)
    f = X[:, 0] + 0.5 * X[:, 1] * X[:, min(2, features - 1)] - 0.3 * X[:, min(3, features - 1)] ** 2
    y = (f + rng.normal(scale=0.5, size=rows) > 0).astype(np.float64)
    return X, y


class RoundCounter(WorkerPlugin):
    """Worker plugin: each boosting loop on the worker reports every round it completes as an
    event ``[loop key, round]`` on :data:`TOPIC` (the loop's own ``on_state`` still runs)."""

    name = "oocgbdt-chaos-rounds"

    def setup(self, worker):
        import oocgbdt.core.boosting as boosting
        if getattr(boosting.boost, "_chaos", False):
            return
        real = boosting.boost

        def boost(*args, **kwargs):
            key, on_state = kwargs.get("key", ""), kwargs.get("on_state")

            def counted(state):
                worker.log_event(TOPIC, [key, int(state["round"])])
                if on_state is not None:
                    on_state(state)
            return real(*args, **dict(kwargs, on_state=counted))
        boost._chaos = True
        boosting.boost = boost


#: Phases of ``--phases``: the (module, attribute) each one wraps on the victim worker.
PHASE_TARGETS = {
    ("tree", None): ("oocgbdt.core.grower", "TreeGrower._split_pass"),
    ("eval", None): ("oocgbdt.core.boosting", "_evaluate"),
    ("write", "disk"): ("oocgbdt.dask.cache", "write_piece"),
}
#: The split pass (counted on the victim) at which ``tree`` kills it.
TREE_PASS = 30
#: The round whose evaluation ``eval`` kills in, and after which ``restart`` restarts.
EVAL_ROUND = 3


def kill_self_once(marker):
    """SIGKILL this process unless ``marker`` exists (made first, atomically): one kill per
    row, not one per restarted worker."""
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return
    os.kill(os.getpid(), signal.SIGKILL)


class PhaseKiller(WorkerPlugin):
    """Worker plugin: on the worker named ``victim``, wrap the function of ``phase``
    (:data:`PHASE_TARGETS`) so that the worker SIGKILLs itself as it runs (once:
    :func:`kill_self_once`)."""

    name = "oocgbdt-chaos-phase"

    def __init__(self, phase, cache, victim, marker):
        self.phase, self.cache, self.victim, self.marker = phase, cache, str(victim), marker

    def setup(self, worker):
        import importlib
        if str(worker.name) != self.victim:
            return
        module, attr = PHASE_TARGETS.get((self.phase, self.cache),
                                         PHASE_TARGETS.get((self.phase, None)))
        owner = importlib.import_module(module)
        *path, attr = attr.split(".")
        for name in path:
            owner = getattr(owner, name)
        real, marker, phase = getattr(owner, attr), self.marker, self.phase
        if getattr(real, "_chaos", False):
            return
        calls = [0]

        def wrapped(*args, **kwargs):
            if not os.path.exists(marker + ".armed"):  # the warm-up fit
                return real(*args, **kwargs)
            calls[0] += 1
            if phase == "tree" and calls[0] == TREE_PASS:
                kill_self_once(marker)
            elif phase == "eval" and args[6] == EVAL_ROUND:  # _evaluate's rnd
                kill_self_once(marker)
            elif phase == "write":
                kill_self_once(marker)
            return real(*args, **kwargs)
        wrapped._chaos = True
        setattr(owner, attr, wrapped)


def phases(args) -> int:
    """``--phases``: one kill at each phase; prints the table (see the module's docstring).
    Returns 1 when a fit failed or differs from the undisturbed one."""
    import logging
    import tempfile

    import oocgbdt
    import oocgbdt.runtime.placement as placement
    from distributed import Client, LocalCluster
    rows = args.rows or (10_000 if args.quick else 20_000)
    features = args.features or (8 if args.quick else 10)
    rounds = args.rounds or 20
    X, y = synthetic(rows + 5000, features, args.seed)
    X, y, Xe, ye = X[:rows], y[:rows], X[rows:], y[rows:]
    base = dict(objective="binary", num_leaves=31, n_estimators=rounds,
                chunk_rows=max(500, rows // 12), verbose=False, metric="auc")
    messages = []

    class Record(logging.Handler):
        def emit(self, record):
            messages.append(record.getMessage())
    logging.getLogger("oocgbdt").addHandler(Record())
    print(f"# Chaos by phase: {rows:,} x {features} rows, eval {len(ye):,} rows, {rounds} "
          f"rounds, 3 worker processes (nanny), one killed per row\n", flush=True)

    def run(cache, phase, tmp, n=0):
        params = dict(base, cache=cache)
        marker = os.path.join(tmp, f"killed-{phase}-{cache}-{n}")  # one per row
        callbacks = []
        with LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            victim = next(a for a, w in client.scheduler_info()["workers"].items()
                          if str(w["name"]) == "1")
            if phase not in (None, "restart", "retire", "load"):
                # Before any task: a worker keeps the functions it has unpickled.
                client.register_plugin(PhaseKiller(phase, cache, "1", marker))
            oocgbdt.train(dict(params, n_estimators=2), X[:2000], y[:2000], client=client,
                          eval_set=[(Xe[:1000], ye[:1000])])
            open(marker + ".armed", "w").close()
            placed = placement.compute_placed
            if phase == "load":  # as the partitions' tasks are pinned to the shards' workers
                pid = client.run(os.getpid, workers=[victim])[victim]

                def killing(*args, **kwargs):
                    futures = placed(*args, **kwargs)
                    if not os.path.exists(marker):
                        open(marker, "w").close()
                        os.kill(pid, signal.SIGKILL)
                    return futures
                placement.compute_placed = killing
            if phase == "restart":
                def restart(env):
                    if env.iteration == EVAL_ROUND and not os.path.exists(marker):
                        open(marker, "w").close()
                        client.restart_workers([victim])
                callbacks.append(restart)
            if phase == "retire":
                def retire(env):
                    if env.iteration == EVAL_ROUND and not os.path.exists(marker):
                        open(marker, "w").close()
                        client.retire_workers(workers=[victim])  # refused: it holds a shard
                callbacks.append(retire)
            messages.clear()
            t0 = time.perf_counter()
            try:
                model = oocgbdt.train(params, X, y, client=client, eval_set=[(Xe, ye)],
                                      callbacks=callbacks or None)
                error = None
            except Exception as e:
                model, error = None, f"{type(e).__name__}: {str(e)[:300]}"
            finally:
                placement.compute_placed = placed
            seconds = time.perf_counter() - t0
            if phase == "retire":
                gone = victim not in client.scheduler_info()["workers"]
        losses = sum("lost; training continues" in m or "asked to retire; training continues"
                     in m for m in messages)
        if phase == "retire":  # "killed": the fit let the worker go
            return model, error, seconds, gone, losses
        return model, error, seconds, os.path.exists(marker), losses

    cases = [("load", "memory"), ("load", "disk"), ("tree", "memory"), ("tree", "disk"),
             ("eval", "memory"), ("eval", "disk"), ("write", "disk"), ("restart", "memory"),
             ("retire", "memory"), ("retire", "disk")]
    if args.cases:
        cases = [tuple(c.split(":")) for c in args.cases.split(",")] * args.repeat
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        calm = {c: run(c, None, tmp) for c in ("memory", "disk")}
        print("| phase | cache | killed | losses recovered | fit completed | models identical "
              "| wall vs undisturbed |\n|---|---|---|---:|---|---|---:|")
        for n, (phase, cache) in enumerate(cases):
            model, error, seconds, killed, losses = run(cache, phase, tmp, n)
            ref = calm[cache][0]
            same = (model is not None and model.trees == ref.trees
                    and model.evals_result == ref.evals_result)
            failed |= not same
            print(f"| {phase} | {cache} | {'yes' if killed else 'no'} | {losses} | "
                  f"{'yes' if model is not None else 'NO'} | {'yes' if same else 'NO'} | "
                  f"{seconds / calm[cache][2]:.2f}x |", flush=True)
            if error:
                print(f"  error: {error}", flush=True)
    print("\nundisturbed: " + ", ".join(f"{c} {calm[c][2]:.1f} s" for c in calm))
    return 1 if failed else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.chaos",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20,000 x 10, 30 rounds, a kill "
                        "every 4 s")
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--features", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--every", type=float, default=None, help="seconds between kills")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", choices=("auto", "memory", "disk"), default="auto",
                        help="where the binned rows live (disk: a lost shard's partitions are "
                             "read again from the disk cache)")
    parser.add_argument("--cases", default=None, help="with --phases: the rows to run, as "
                        "phase:cache,... (default: every one)")
    parser.add_argument("--repeat", type=int, default=1, help="with --cases: runs of each")
    parser.add_argument("--phases", action="store_true",
                        help="one kill at each phase of the fit (loading, mid-tree, evaluation, "
                             "disk-cache write, a nanny restart), memory and disk cache")
    args = parser.parse_args(argv)
    if args.phases:
        return phases(args)
    rows = args.rows or (20_000 if args.quick else 200_000)
    features = args.features or (10 if args.quick else 20)
    rounds = args.rounds or (30 if args.quick else 60)
    every = args.every or (4.0 if args.quick else 8.0)

    import oocgbdt
    from distributed import Client, LocalCluster
    X, y = synthetic(rows, features, args.seed)
    params = dict(objective="binary", num_leaves=31, n_estimators=rounds,
                  chunk_rows=max(1000, rows // 16), verbose=False, max_worker_failures=10_000,
                  cache=args.cache)
    print(f"# Chaos: {rows:,} x {features} rows, {rounds} rounds, {args.workers} worker "
          f"processes, cache={args.cache}, a random worker SIGKILLed every {every:g} s\n",
          flush=True)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        client.register_plugin(RoundCounter())
        completed = []
        client.subscribe_topic(TOPIC, lambda event: completed.append(
            (time.perf_counter(), *tuple(event[1]))))

        # Warm-up (the workers' first fit loads the compiled kernels), so that the two timed
        # fits start alike; the restarted workers of the chaos fit load them again.
        oocgbdt.train(dict(params, n_estimators=2), X[:10_000], y[:10_000], client=client)
        completed.clear()
        t0 = time.perf_counter()
        calm = oocgbdt.train(params, X, y, client=client)
        t_calm = time.perf_counter() - t0
        completed.clear()

        done = threading.Event()
        losses = []
        rng = random.Random(args.seed)

        def chaos():
            while not done.wait(every):
                try:
                    pids = client.run(os.getpid, on_error="ignore")
                except Exception:  # the cluster is between workers: try at the next tick
                    continue
                if not pids:
                    continue
                victim = rng.choice(sorted(pids))
                try:
                    os.kill(pids[victim], signal.SIGKILL)
                    losses.append((round(time.perf_counter() - t1, 1), victim))
                except ProcessLookupError:
                    pass

        t1 = time.perf_counter()
        killer = threading.Thread(target=chaos, daemon=True)
        killer.start()
        try:
            disturbed = oocgbdt.train(params, X, y, client=client)
        finally:
            done.set()
            killer.join()
        t_chaos = time.perf_counter() - t1
        time.sleep(1.0)  # the last round events
        client.unsubscribe_topic(TOPIC)
    # Each loop reports every round once per shard: count (loop, round) pairs.
    per_loop = {}
    for _, key, rnd in completed:
        per_loop.setdefault(key, set()).add(rnd)
    done_rounds = sum(len(r) for r in per_loop.values())
    model_rounds = disturbed.num_iterations()
    same = len(disturbed.trees) == len(calm.trees) and all(
        a == b for a, b in zip(disturbed.trees, calm.trees))
    print(f"| fit | wall s | rounds | loops |\n|---|---:|---:|---:|\n"
          f"| undisturbed | {t_calm:.1f} | {calm.num_iterations()} | 1 |\n"
          f"| chaos | {t_chaos:.1f} | {model_rounds} | {len(per_loop)} |\n")
    print(f"losses: {len(losses)} " + ", ".join(f"{w} at {s} s" for s, w in losses))
    # Per kill: how long until a round completed again (by the loop that went on after it).
    events = sorted((t - t1, key) for t, key, _ in completed)
    for at, worker in losses:
        before = {key for t, key in events if t <= at}
        after = next((t for t, key in events if t > at and key not in before), None)
        print(f"  kill at {at} s: " + ("no round completed after it" if after is None else
                                        f"a round completed again {after - at:.1f} s later"))
    print(f"rounds redone: {done_rounds - model_rounds} (rounds completed by the loops: "
          f"{done_rounds}, for a model of {model_rounds})")
    print(f"wall time vs undisturbed: {t_chaos / t_calm:.2f}x")
    differ = next((i for i, (a, b) in enumerate(zip(disturbed.trees, calm.trees)) if a != b),
                  None)
    print(f"models identical: {'yes' if same else 'NO'}"
          + ("" if same else f" (trees {len(disturbed.trees)} and {len(calm.trees)}, first "
                             f"differing tree {differ})"))
    if not same and os.environ.get("OOCGBDT_CHAOS_KEEP"):
        disturbed.save_model(os.path.join(os.environ["OOCGBDT_CHAOS_KEEP"], "disturbed.json"))
        calm.save_model(os.path.join(os.environ["OOCGBDT_CHAOS_KEEP"], "calm.json"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
