"""In-process speed on NumPy input: oocgbdt against LightGBM (and optionally XGBoost), what a
newcomer tries first.

Usage::

    python -m benchmarks.inprocess [--quick] [--repeats 3] [--cases NAME ...]
        [--tools oocgbdt lightgbm xgboost] [--threads N]

Cases (``--cases``; default all three):

- ``400k_x_100``: 400,000 training rows x 100 features, 100 trees;
- ``400k_x_50``: 400,000 x 50, 150 trees;
- ``1m_x_100``: 1,000,000 x 100, 100 trees.

Data: :func:`benchmarks.synthetic_1m.make_data` (``make_classification``, seed 0, float32), with
its test rows (20% of the training rows, at most 200,000). ``--quick``: 20,000 x 20, 10 trees,
for the smoke test.

Every tool trains a binary model with 31 leaves, learning rate 0.1 and 255 bins, every other
parameter at its library's default, on the same in-memory float32 arrays in this process:
oocgbdt ``oocgbdt.train`` (NumPy input: the in-process executor on all cores); LightGBM
``lightgbm.train`` on a ``lightgbm.Dataset`` (its construction is timed: it is binning);
XGBoost ``xgboost.train`` on a ``QuantileDMatrix`` with ``tree_method="hist",
grow_policy="lossguide", max_leaves=31, max_depth=0``. No ``OMP_WAIT_POLICY`` or thread setting
is imposed on the peers: each runs with its own defaults (all cores); ``--threads N`` sets
every tool's thread count instead (``--threads 1`` against the default run shows how each
tool's fit scales over the cores). Each tool first trains
an untimed 2-round model on 5,000 rows (JIT caches, OpenMP start-up).

Runs alternate the tools, in reversed order every other repeat (``--repeats``, default 3), and
the table gives per case and tool the median wall time of the fit (from the arrays to the
trained model), the test AUC, and oocgbdt's ratio to each peer. The load averages before and
after are printed (a start above half the cores is warned about), and a run whose 1-minute load
average at its end exceeds the cores + 0.5 (its own threads count up to the cores) is flagged
``noisy``, since its times are only as good as the quiet the machine had. The targets judged (PASS/FAIL): oocgbdt
at most 1.0x LightGBM's median wall time, test AUC within 0.002 of LightGBM's.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

from benchmarks._common import machine_info, print_table
from benchmarks.synthetic_1m import make_data

CASES = {
    "400k_x_100": (400_000, 100, 100),
    "400k_x_50": (400_000, 50, 150),
    "1m_x_100": (1_000_000, 100, 100),
}
QUICK_CASES = {"quick_20k_x_20": (20_000, 20, 10)}
TOOLS = ("oocgbdt", "lightgbm", "xgboost")
#: Targets: oocgbdt's median wall time over LightGBM's, and the largest AUC difference.
MAX_RATIO = 1.0
MAX_AUC_DIFF = 0.002
WARMUP_ROWS, WARMUP_ROUNDS = 5_000, 2


def _threads(n_threads):
    """oocgbdt's and LightGBM's thread parameter: none (each library's default, all cores),
    or ``num_threads``."""
    return {} if n_threads is None else {"num_threads": n_threads}


def fit_oocgbdt(X, y, n_trees, n_threads=None):
    import oocgbdt
    booster = oocgbdt.train(dict(objective="binary", num_leaves=31, learning_rate=0.1,
                                 max_bin=255, num_iterations=n_trees, verbose=-1,
                                 **_threads(n_threads)), X, y)
    return lambda Xt: booster.predict(Xt)


def fit_lightgbm(X, y, n_trees, n_threads=None):
    import lightgbm as lgb
    params = dict(objective="binary", num_leaves=31, learning_rate=0.1, max_bin=255, verbose=-1,
                  **_threads(n_threads))
    booster = lgb.train(params, lgb.Dataset(X, y, params=params), num_boost_round=n_trees)
    return lambda Xt: booster.predict(Xt)


def fit_xgboost(X, y, n_trees, n_threads=None):
    import xgboost as xgb
    params = dict(objective="binary:logistic", tree_method="hist", grow_policy="lossguide",
                  max_leaves=31, max_depth=0, eta=0.1, max_bin=255, verbosity=0,
                  **({} if n_threads is None else {"nthread": n_threads}))
    booster = xgb.train(params, xgb.QuantileDMatrix(X, y, max_bin=255), num_boost_round=n_trees)
    return lambda Xt: booster.predict(xgb.DMatrix(Xt))


FITS = {"oocgbdt": fit_oocgbdt, "lightgbm": fit_lightgbm, "xgboost": fit_xgboost}


def _load() -> float:
    return os.getloadavg()[0]


def run_case(name, rows, features, n_trees, tools, repeats, log=print, n_threads=None):
    """Per tool: the list of (wall seconds, test AUC, load average at the end) of each repeat."""
    from sklearn.metrics import roc_auc_score
    X, y, Xt, yt = make_data(rows, features)
    for tool in tools:  # untimed warm-up
        FITS[tool](X[:WARMUP_ROWS], y[:WARMUP_ROWS], WARMUP_ROUNDS, n_threads)
    out = {tool: [] for tool in tools}
    for r in range(repeats):
        order = list(tools) if r % 2 == 0 else list(reversed(tools))
        for tool in order:
            t0 = time.perf_counter()
            predict = FITS[tool](X, y, n_trees, n_threads)
            wall = time.perf_counter() - t0
            auc = roc_auc_score(yt, predict(Xt))
            out[tool].append((wall, auc, _load()))
            log(f"  {name} repeat {r + 1}/{repeats} {tool:8s} {wall:8.2f} s  AUC {auc:.5f}  "
                f"load {out[tool][-1][2]:.2f}", flush=True)
    return out


def summarize(name, rows, features, n_trees, runs, cores):
    """Table rows and the PASS/FAIL lines of one case."""
    med = {t: statistics.median(w for w, _, _ in v) for t, v in runs.items()}
    auc = {t: statistics.median(a for _, a, _ in v) for t, v in runs.items()}
    # the fits' own threads make a load of up to the cores; more means other work ran beside
    noisy = {t: any(l > cores + 0.5 for _, _, l in v) for t, v in runs.items()}
    table = []
    for t in runs:
        ratios = {p: med[t] / med[p] for p in runs if p != t and t == "oocgbdt"}
        table.append([name, f"{rows:,} x {features}", n_trees, t, f"{med[t]:.3f}",
                      " ".join(f"{w:.3f}" for w, _, _ in runs[t]), f"{auc[t]:.5f}",
                      ", ".join(f"{r:.2f}x {p}" for p, r in ratios.items()) or "",
                      "yes" if noisy[t] else ""])
    verdicts = []
    if "oocgbdt" in runs and "lightgbm" in runs:
        ratio = med["oocgbdt"] / med["lightgbm"]
        diff = abs(auc["oocgbdt"] - auc["lightgbm"])
        verdicts.append(f"{name}: oocgbdt / LightGBM wall {ratio:.2f}x (target <= {MAX_RATIO}x): "
                        f"{'PASS' if ratio <= MAX_RATIO else 'FAIL'}; |AUC difference| "
                        f"{diff:.5f} (target <= {MAX_AUC_DIFF}): "
                        f"{'PASS' if diff <= MAX_AUC_DIFF else 'FAIL'}")
    return table, verdicts


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.inprocess", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one small case, for the smoke test")
    ap.add_argument("--repeats", type=int, default=3, help="alternating repeats (default 3)")
    ap.add_argument("--cases", nargs="+", choices=list(CASES), default=None)
    ap.add_argument("--tools", nargs="+", choices=TOOLS, default=["oocgbdt", "lightgbm"])
    ap.add_argument("--threads", type=int, default=None,
                    help="threads of every tool (num_threads / nthread; default: each "
                         "library's own, all cores); with 1 and then the default, the two "
                         "runs show how each tool scales over the cores")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error(f"--repeats must be >= 1, got {args.repeats}")
    if args.threads is not None and args.threads < 1:
        ap.error(f"--threads must be >= 1, got {args.threads}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    cores = os.cpu_count() or 1
    cases = QUICK_CASES if args.quick else {k: CASES[k] for k in (args.cases or CASES)}
    print(f"machine: {machine_info()}; OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}; "
          f"threads per tool: {args.threads or 'library default'}")
    load_before = os.getloadavg()
    if load_before[0] > cores / 2:
        print(f"WARNING: load average {load_before[0]:.2f} at start on {cores} cores: "
              f"the machine is not quiet, timings are not figures")
    table, verdicts = [], []
    for name, (rows, features, n_trees) in cases.items():
        runs = run_case(name, rows, features, n_trees, args.tools, args.repeats,
                        n_threads=args.threads)
        t, v = summarize(name, rows, features, n_trees, runs, cores)
        table += t
        verdicts += v
    print()
    print_table(["case", "rows x features", "trees", "tool", "median s", "runs s", "test AUC",
                 "oocgbdt ratio", "noisy"], table)
    print()
    for line in verdicts:
        print(line)
    load_after = os.getloadavg()
    print(f"load average before {', '.join(f'{v:.2f}' for v in load_before)}; after "
          f"{', '.join(f'{v:.2f}' for v in load_after)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
