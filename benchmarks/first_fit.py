"""A newcomer's first fit: oocgbdt on an empty numba cache, against LightGBM.

    python -m benchmarks.first_fit               # 3 repeats
    python -m benchmarks.first_fit --quick       # 1 repeat, 5 trees (smoke test)

oocgbdt's kernels are compiled by numba on first use and saved to numba's cache
(``cache=True``), so the first fit after installing pays every compilation it needs, and
later processes load the machine code. This script times, each in a fresh Python process:

* **cold**: ``import oocgbdt`` and the first fit with an empty ``NUMBA_CACHE_DIR`` (a new
  temporary folder per repeat), then a second fit in the same process (**warm, same
  process**);
* **cached**: a new process on the cache the cold run filled: import and first fit;
* **LightGBM**: a new process, ``import lightgbm`` and the same fit.

The data is the quick start's shipped file (:func:`oocgbdt.datasets.quickstart_path`,
20,640 rows x 8 features, regression), NumPy input in process, 100 trees at each library's
defaults otherwise (``--rounds``), 2 threads. The runs alternate within each repeat; the
medians over ``--repeats`` (>= 3 for a figure) are printed with the load average before and
after (indicative only when it exceeds the cores). The numba compilation is the cold run's
first fit minus the cached run's. ``import oocgbdt`` loads its modules on first use, so its
import row is near 0 and the first fit includes importing Dask.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks._common import load_line

N_THREADS = 2


def _load():
    import numpy as np
    import pandas as pd

    from oocgbdt.datasets import QUICKSTART_LABEL, quickstart_path
    frame = pd.read_csv(quickstart_path(), sep="\t")
    y = frame.pop(QUICKSTART_LABEL).to_numpy(np.float64)
    return frame.to_numpy(np.float64), y


def child(tool: str, rounds: int) -> dict:
    """One process's timings (seconds): ``import``, ``first`` fit and, for oocgbdt, ``second``."""
    out = {}
    if tool == "oocgbdt":
        t0 = time.perf_counter()
        import oocgbdt
        out["import"] = time.perf_counter() - t0
        X, y = _load()
        params = dict(objective="regression", n_estimators=rounds, num_threads=N_THREADS,
                      verbose=False)
        for key in ("first", "second"):
            t0 = time.perf_counter()
            oocgbdt.train(params, X, y)
            out[key] = time.perf_counter() - t0
    else:
        t0 = time.perf_counter()
        import lightgbm as lgb
        out["import"] = time.perf_counter() - t0
        X, y = _load()
        t0 = time.perf_counter()
        lgb.train(dict(objective="regression", num_threads=N_THREADS, verbose=-1),
                  lgb.Dataset(X, y), num_boost_round=rounds)
        out["first"] = time.perf_counter() - t0
    return out


def run_child(tool: str, rounds: int, cache_dir: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    proc = subprocess.run([sys.executable, "-m", "benchmarks.first_fit", "--child", tool,
                           "--rounds", str(rounds)], env=env, capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{tool} child failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None):
    """Run the benchmark; returns ``{"runs": {row: [seconds, ...]}, "medians": {row: s}}``
    (None for ``--child``, which prints its timings as JSON)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--quick", action="store_true", help="1 repeat, 5 trees")
    ap.add_argument("--child", choices=("oocgbdt", "lightgbm"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.rounds)))
        return None
    repeats, rounds = (1, 5) if args.quick else (args.repeats, args.rounds)
    print(f"# First fit: {rounds} trees on the quick start's 20,640 x 8 rows, in process, "
          f"{N_THREADS} threads, {repeats} repeat(s)")
    print(load_line("before"))
    rows = {k: [] for k in ("cold import", "cold first fit", "warm second fit",
                            "cached import", "cached first fit", "lightgbm import",
                            "lightgbm fit")}
    for r in range(repeats):
        order = ("oocgbdt", "lightgbm") if r % 2 == 0 else ("lightgbm", "oocgbdt")
        with tempfile.TemporaryDirectory(prefix="oocgbdt-first-fit-") as cache:
            for tool in order:
                if tool == "lightgbm":
                    got = run_child("lightgbm", rounds, cache)
                    rows["lightgbm import"].append(got["import"])
                    rows["lightgbm fit"].append(got["first"])
                    continue
                cold = run_child("oocgbdt", rounds, cache)
                cached = run_child("oocgbdt", rounds, cache)
                rows["cold import"].append(cold["import"])
                rows["cold first fit"].append(cold["first"])
                rows["warm second fit"].append(cold["second"])
                rows["cached import"].append(cached["import"])
                rows["cached first fit"].append(cached["first"])
    med = {k: statistics.median(v) for k, v in rows.items()}
    print("| run | median s | runs s |")
    print("|---|---|---|")
    for k, v in rows.items():
        print(f"| {k} | {med[k]:.2f} | {', '.join(f'{x:.2f}' for x in v)} |")
    print(f"numba compilation in the first fit (cold - cached): "
          f"{med['cold first fit'] - med['cached first fit']:.2f} s")
    lgb = med["lightgbm import"] + med["lightgbm fit"]
    print(f"import + first fit against LightGBM's import + fit ({lgb:.2f} s): "
          f"cold {(med['cold import'] + med['cold first fit']) / lgb:.1f}x, "
          f"cached {(med['cached import'] + med['cached first fit']) / lgb:.1f}x")
    print(load_line("after"))
    return dict(runs=rows, medians=med)


if __name__ == "__main__":
    main()
