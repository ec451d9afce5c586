"""Chaos benchmark: train on a LocalCluster of worker processes while a random worker is
SIGKILLed every few seconds; the fit must complete with the undisturbed model.

Usage::

    python -m benchmarks.chaos [--quick] [--rows N] [--features F] [--rounds R]
                               [--workers W] [--every SECONDS] [--seed S]
                               [--cache auto|memory|disk]

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
- wall time of each fit and their ratio;
- ``models identical``: every tree of the disturbed fit equal to the undisturbed fit's.
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
    args = parser.parse_args(argv)
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
        client.subscribe_topic(TOPIC, lambda event: completed.append(tuple(event[1])))

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
    for key, rnd in completed:
        per_loop.setdefault(key, set()).add(rnd)
    done_rounds = sum(len(r) for r in per_loop.values())
    model_rounds = disturbed.num_iterations()
    same = len(disturbed.trees) == len(calm.trees) and all(
        a == b for a, b in zip(disturbed.trees, calm.trees))
    print(f"| fit | wall s | rounds | loops |\n|---|---:|---:|---:|\n"
          f"| undisturbed | {t_calm:.1f} | {calm.num_iterations()} | 1 |\n"
          f"| chaos | {t_chaos:.1f} | {model_rounds} | {len(per_loop)} |\n")
    print(f"losses: {len(losses)} " + ", ".join(f"{w} at {s} s" for s, w in losses))
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
