"""What handing work to a second thread costs in process: two equal calls of a compiled loop
that releases the GIL, run one after the other on the calling thread, shared between the
calling thread and one more by :class:`oocgbdt.core.executor.KernelThreads` (what the
in-process executor shares a pass with), and run as one numba parallel call (``prange`` over
the two) under each threading layer numba can load here (``omp``, ``tbb``, ``workqueue``).

Usage::

    python -m benchmarks.handoff [--quick] [--work US ...] [--calls N] [--gap US]
        [--repeats R]

Per length of one call (``--work``, in microseconds of the loop alone on this machine,
default 5, 20, 100 and 500) the table gives the median wall microseconds of the two calls
each way, and the hand-off cost: that time minus one call's (what two threads would take
with nothing lost). Between two timed calls the calling thread runs Python for ``--gap``
microseconds (default 100: about what a pass's Python takes between its kernels), as in a
fit, where the second thread idles meanwhile. ``CPU/wall`` is the process's CPU time over the
wall time of the whole run of one way (calls and gaps): above 1 + the calls' share, a thread
spins while it waits. Each way runs in a process of its own (``NUMBA_THREADING_LAYER``,
``NUMBA_NUM_THREADS=2``), the ways alternating in order over ``--repeats`` rounds (default 3;
medians over the rounds); the load average is printed before and after.

Every way computes the same two sums, which the run checks.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

from benchmarks._common import machine_info, print_table

#: The ways two calls are run: on the calling thread, on KernelThreads, and per threading
#: layer, one numba parallel call.
WAYS = ("one thread", "KernelThreads", "numba omp", "numba tbb", "numba workqueue")


def _kernels():
    from numba import njit, prange

    @njit(nogil=True)
    def loop(n, x):
        s = x
        for i in range(n):
            s = s * 0.999999 + 1.0
        return s

    @njit(nogil=True, parallel=True)
    def both(n, xs, out):
        for p in prange(2):
            out[p] = loop(n, xs[p])

    return loop, both


def _key(work_us) -> str:
    return f"{float(work_us):g}"


def _spin_python(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def measure(way, work_us, calls, gap_us):
    """Median wall microseconds of two calls ``way`` (in this process), per work length,
    plus ``cpu_per_wall`` of each run and the sums computed. ``work_us`` is calibrated to loop
    iterations here, on one thread."""
    loop, both = _kernels()
    xs = np.array([1.0, 2.0])
    out = np.zeros(2)
    loop(10, 1.0)
    threads = pool = None
    if way == "KernelThreads":
        from concurrent.futures import ThreadPoolExecutor
        from oocgbdt.core.executor import KernelThreads
        pool = ThreadPoolExecutor(1)
        threads = KernelThreads(pool, 2)
    elif way.startswith("numba "):
        import numba
        both(10, xs, out)
        layer = numba.threading_layer()
        if layer != way.split()[1]:
            raise RuntimeError(f"asked for threading layer {way.split()[1]!r}, got {layer!r}")
    # iterations per microsecond of the loop on this thread
    t = time.perf_counter()
    loop(2_000_000, 1.0)
    per_us = 2_000_000 / (1e6 * (time.perf_counter() - t))
    result = {}
    try:
        for w in work_us:
            n = max(1, int(w * per_us))
            want = [loop(n, xs[0]), loop(n, xs[1])]
            got = [0.0, 0.0]

            def store(i):
                got[i] = loop(n, xs[i])

            if way == "one thread":
                def call():
                    store(0)
                    store(1)
            elif way == "KernelThreads":
                def call():
                    threads.share([lambda: store(0), lambda: store(1)])
            else:
                def call():
                    both(n, xs, out)
                    got[0], got[1] = out[0], out[1]
            times = []
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(calls):
                _spin_python(gap_us * 1e-6)
                s = time.perf_counter()
                call()
                times.append(time.perf_counter() - s)
            cpu_per_wall = (time.process_time() - c0) / (time.perf_counter() - t0)
            if got != want:
                raise AssertionError(f"{way}: the sums {got} differ from one thread's {want}")
            alone = []
            for _ in range(min(calls, 200)):
                s = time.perf_counter()
                loop(n, xs[0])
                alone.append(time.perf_counter() - s)
            result[_key(w)] = dict(us=1e6 * float(np.median(times)),
                                  alone_us=1e6 * float(np.median(alone)),
                                  cpu_per_wall=cpu_per_wall)
    finally:
        if pool is not None:
            pool.shutdown()
    return result


def run_way(way, work_us, calls, gap_us):
    """:func:`measure` in a process of its own; None when the way's threading layer does not
    load here."""
    env = dict(os.environ, NUMBA_NUM_THREADS="2")
    if way.startswith("numba "):
        env["NUMBA_THREADING_LAYER"] = way.split()[1]
    cmd = [sys.executable, "-m", "benchmarks.handoff", "--one-way", way, "--calls", str(calls),
           "--gap", str(gap_us), "--work", *[_key(w) for w in work_us]]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if proc.returncode != 0:
        if way.startswith("numba ") and "threading layer" in (proc.stderr + proc.stdout).lower():
            return None
        raise RuntimeError(f"{way} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(work_us, calls, gap_us, repeats, log=print):
    """Per way, per work length: median over the rounds of the medians, or None (way absent)."""
    rounds = {way: [] for way in WAYS}
    absent = set()
    for rep in range(repeats):
        order = WAYS if rep % 2 == 0 else WAYS[::-1]
        for way in order:
            if way in absent:
                continue
            got = run_way(way, work_us, calls, gap_us)
            if got is None:
                absent.add(way)
                log(f"  {way}: not available here")
                continue
            rounds[way].append(got)
            log(f"  round {rep + 1}, {way}: " + ", ".join(
                f"{_key(w)} us -> {got[_key(w)]['us']:.1f}" for w in work_us))
    out = {}
    for way in WAYS:
        if way in absent or not rounds[way]:
            out[way] = None
            continue
        out[way] = {w: {k: float(np.median([r[_key(w)][k] for r in rounds[way]]))
                        for k in ("us", "alone_us", "cpu_per_wall")} for w in work_us}
    return out


def table(results, work_us):
    """``(title, header, rows)``: per way, per work length, the two calls' median us, the
    time beyond one call alone (the hand-off cost, for two threads) and CPU/wall."""
    header = ["way"] + [f"{_key(w)} us each: two calls / beyond one call / CPU/wall" for w in work_us]
    rows = []
    for way in WAYS:
        r = results.get(way)
        if r is None:
            rows.append([way] + ["not available"] * len(work_us))
            continue
        rows.append([way] + [f"{r[w]['us']:.1f} / {r[w]['us'] - r[w]['alone_us']:+.1f} / "
                             f"{r[w]['cpu_per_wall']:.2f}" for w in work_us])
    return "wall microseconds of two calls (median)", header, rows


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 50 calls, one round")
    ap.add_argument("--work", type=float, nargs="+", default=[5.0, 20.0, 100.0, 500.0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--gap", type=float, default=100.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--one-way", choices=WAYS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.calls < 1 or args.repeats < 1 or min(args.work) <= 0 or args.gap < 0:
        ap.error(f"--calls and --repeats must be >= 1, --work > 0 and --gap >= 0; got "
                 f"{args.calls}, {args.repeats}, {args.work}, {args.gap}")
    if args.quick:
        args.calls, args.repeats = 50, 1
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.one_way:
        print(json.dumps(measure(args.one_way, args.work, args.calls, args.gap)))
        return 0
    print("# Hand-off to a second thread: two calls on one thread, on KernelThreads, as one "
          "numba parallel call")
    print(machine_info())
    print(f"load average before: {os.getloadavg()[0]:.2f}; {args.calls} calls per length, "
          f"{args.gap:g} us of Python between calls, {args.repeats} round(s)")
    results = run(args.work, args.calls, args.gap, args.repeats)
    title, header, rows = table(results, args.work)
    print(f"\n{title}")
    print_table(header, rows)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
