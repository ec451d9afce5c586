"""Row sampling benchmark: no sampling vs uniform bagging vs GOSS, oocgbdt next to LightGBM.

Usage::

    python -m benchmarks.sampling [--quick] [--datasets NAME ...] [--rounds N] [--seeds N]

Strategies, at the same row budget a + b = 0.3 for the two sampled ones:

- ``none``: every row in every tree;
- ``bagging``: ``bagging_fraction=0.3, bagging_freq=1`` (a new bag every round);
- ``goss``: ``data_sample_strategy="goss", top_rate=0.2, other_rate=0.1`` (every row in the first
  int(1 / learning_rate) = 10 rounds, LightGBM's warm start).

Datasets:

- ``synthetic_1m``: 1,000,000 training rows x 100 dense float32 N(0, 1) features (test: 200,000
  rows), binary labels ``y ~ Bernoulli(sigmoid(f(x)))`` with ``f`` a nonlinear function of the
  first 10 features (see :func:`synthetic`); metric AUC. 100 rounds.
- ``lightgbm_binary``: LightGBM's example files ``binary.train`` / ``binary.test`` (7,000 / 500
  HIGGS rows, 28 features; the weight files are not used); metric AUC. 100 rounds.
- ``kddcup99``: 494,020 rows, 41 features, 23 classes; a seeded 80/20 row permutation
  (395,216 / 98,804 rows); metrics multi_logloss and multi_error (the log loss is dominated by
  the few test rows of classes with 0-2 training rows, log(1e-15) = -34.5 each, so it swings
  with every draw; the error rate does not). 25 rounds (23 trees per round).

Seeds: the sampled strategies run with ``bagging_seed = 3, 4, ...`` (LightGBM's default is 3;
both libraries draw bagging and GOSS rows from it): 2 seeds on synthetic_1m and kddcup99, 5 on
lightgbm_binary (``--seeds`` overrides). Metrics are reported as mean +- standard deviation over
the seeds, times as the mean over seeds. No sampling draws nothing and runs once.

Both libraries train with num_leaves=31, learning_rate=0.1, max_bin=255 and every other
parameter at its default, on the same float32 arrays, in this process. oocgbdt gets NumPy input
(the in-process executor, 2 threads) with ``chunk_rows = min(65536, ceil(rows / 8))``, so the
sampling decisions always span at least 8 chunks. LightGBM gets ``num_threads=2``,
``deterministic=True`` and ``enable_bundle=False`` (oocgbdt has no bundling yet).

Columns (one row per library and strategy; the "after warm-up" window is rounds 10.. for all
three strategies):

- ``rows/tree``: mean rows a tree was trained on (oocgbdt: ``tree_stats[i]["n_rows"]``;
  LightGBM: the root's ``internal_count`` from ``dump_model``, over the trees that split), and
  that share of the rows;
- ``leaves/tree``: mean leaves per tree in the same window (bigger trees cost more passes);
- ``s/tree``: median and mean seconds per tree (oocgbdt: ``tree_stats[i]["seconds"]``, which
  covers growing the tree, applying it to every row and its share of the round's gradients and
  row sampling; LightGBM: wall time of each iteration from a before/after-iteration callback
  pair divided by its trees per iteration), and both ratios to ``none`` of the same library.
  The median resists stalls caused by other processes (LightGBM's OpenMP threads can stall for
  seconds on an oversubscribed machine); the mean is the total cost;
- ``cpu``: mean CPU seconds per tree of this process, all threads (``tree_stats[i]["cpu_seconds"]``;
  LightGBM: ``time.process_time`` in the same callbacks). Other processes do not inflate it,
  so on a busy machine its ratio is the trustworthy measure of the work saved;
- ``s sampling``: the part of oocgbdt's mean wall time spent selecting rows;
- the test metric(s).

Targets (full run, judged at the end): on synthetic_1m, oocgbdt's GOSS wall-clock s/tree at
most 0.45x of no sampling (both the median and the mean ratio; the CPU ratio is printed beside
them) and its test AUC not more than 0.003 below no sampling (the two-sided check is printed
too: sampling can also raise the AUC). The run also reports, per dataset, library and metric,
whether GOSS beats bagging at equal budget, and whether the difference exceeds twice its
standard error over the seeds. Exit code 1 when a target is missed. ``--quick`` (smoke run, no
targets): 20,000 synthetic rows, lightgbm_binary (2 seeds) and 10,000 kddcup99 rows, 10 rounds
at learning_rate 0.25 (GOSS from round 4).

The machine's core count and load average are printed: on a shared machine, wall-clock ratios
are only as good as the quiet the run got. For the same reason ``OMP_WAIT_POLICY`` defaults to
``PASSIVE`` (set before LightGBM's OpenMP runtime loads; an existing value is kept): with
OpenMP's default busy-waiting, LightGBM's two threads stalled for seconds per iteration on an
oversubscribed 2-core machine (kddcup99 GOSS quick run: 156 s instead of 2 s).
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

STRATEGIES = {
    "none": {},
    "bagging": dict(bagging_fraction=0.3, bagging_freq=1),
    "goss": dict(data_sample_strategy="goss", top_rate=0.2, other_rate=0.1),
}
COMMON = dict(num_leaves=31, learning_rate=0.1, max_bin=255)
ROUNDS = {"synthetic_1m": 100, "lightgbm_binary": 100, "kddcup99": 25}
SEEDS = {"synthetic_1m": 2, "lightgbm_binary": 5, "kddcup99": 2}
QUICK_SEEDS = {"synthetic_1m": 1, "lightgbm_binary": 2, "kddcup99": 1}
DATASETS = tuple(ROUNDS)
BAGGING_SEED = 3  # LightGBM's default
TIME_RATIO_TARGET = 0.45
AUC_TARGET = 0.003
N_THREADS = 2


# ---- data ---------------------------------------------------------------------------------------

def _data_dir() -> Path:
    env = os.environ.get("OOCGBDT_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared" / "data"


def synthetic(n_train=1_000_000, n_test=200_000, n_features=100, seed=0):
    """Dense binary task: 10 informative features (linear, sine, product, abs, square, gated),
    90 noise features, logistic label noise."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_train + n_test, n_features), dtype=np.float32)
    x = X[:, :10].astype(np.float64)
    f = (1.2 * x[:, 0] - 0.8 * x[:, 1] + np.sin(2 * x[:, 2]) + x[:, 3] * x[:, 4]
         + 0.7 * np.abs(x[:, 5]) - 0.5 * x[:, 6] ** 2 + 0.5 * (x[:, 7] > 0) * x[:, 8]
         + 0.3 * x[:, 9])
    y = (f + rng.logistic(size=len(f)) > 0).astype(np.float64)
    return dict(X=X[:n_train], y=y[:n_train], Xt=X[n_train:], yt=y[n_train:], objective="binary",
                metrics=("auc",), num_class=1)


def lightgbm_binary(root: Path):
    import pandas as pd

    def load(name):
        a = pd.read_csv(root / "lightgbm_binary" / name, sep="\t", header=None).to_numpy(np.float64)
        return a[:, 1:].astype(np.float32), a[:, 0]
    X, y = load("binary.train")
    Xt, yt = load("binary.test")
    return dict(X=X, y=y, Xt=Xt, yt=yt, objective="binary", metrics=("auc",), num_class=1)


def kddcup99(root: Path, max_rows=None):
    import pandas as pd
    df = pd.read_csv(root / "kddcup99" / "kddcup.tsv.gz", sep="\t")
    y = df.pop("target").to_numpy(np.float64)
    X = df.to_numpy(np.float32)
    perm = np.random.default_rng(0).permutation(len(y))
    n_test = len(y) // 5
    te, tr = perm[:n_test], perm[n_test:]
    if max_rows is not None:
        tr, te = tr[:max_rows], te[:max_rows // 4]
    return dict(X=X[tr], y=y[tr], Xt=X[te], yt=y[te], objective="multiclass",
                metrics=("multi_logloss", "multi_error"), num_class=23)


def load(name, quick):
    if name == "synthetic_1m":
        return synthetic(20_000, 10_000) if quick else synthetic()
    root = _data_dir()
    if name == "lightgbm_binary":
        return lightgbm_binary(root)
    return kddcup99(root, 10_000 if quick else None)


HIGHER_IS_BETTER = {"auc": True, "multi_logloss": False, "multi_error": False}


def score(metric, y, pred):
    if metric == "auc":
        from sklearn.metrics import roc_auc_score
        return float(roc_auc_score(y, pred))
    if metric == "multi_error":
        return float(np.mean(np.argmax(pred, axis=1) != y.astype(int)))
    p = np.clip(pred, 1e-15, 1.0)
    return float(-np.mean(np.log(p[np.arange(len(y)), y.astype(int)])))


# ---- training -----------------------------------------------------------------------------------

def run_oocgbdt(d, strategy, rounds, lr, warm, seed):
    import oocgbdt
    params = dict(COMMON, learning_rate=lr, objective=d["objective"], n_estimators=rounds,
                  chunk_rows=min(65536, math.ceil(len(d["y"]) / 8)), bagging_seed=seed,
                  **STRATEGIES[strategy])
    if d["num_class"] > 1:
        params["num_class"] = d["num_class"]
    booster = oocgbdt.train(params, d["X"], d["y"], verbose=False)
    k = d["num_class"] if d["num_class"] > 1 else 1
    stats = booster.tree_stats[warm * k:]
    sec = [s["seconds"] for s in stats]
    pred = booster.predict(d["Xt"])
    return dict(rows=float(np.mean([s["n_rows"] for s in stats])),
                leaves=float(np.mean([s["n_leaves"] for s in stats])),
                seconds=float(np.mean(sec)), median=float(np.median(sec)),
                cpu=float(np.mean([s["cpu_seconds"] for s in stats])),
                sampling=float(np.mean([s["seconds_sampling"] for s in stats])),
                metrics={m: score(m, d["yt"], pred) for m in d["metrics"]})


def run_lightgbm(d, strategy, rounds, lr, warm, seed):
    import lightgbm as lgb
    params = dict(COMMON, learning_rate=lr, objective=d["objective"], verbose=-1,
                  num_threads=N_THREADS, deterministic=True, enable_bundle=False,
                  bagging_seed=seed, **STRATEGIES[strategy])
    if d["num_class"] > 1:
        params["num_class"] = d["num_class"]
    starts, ends, cpu_starts, cpu_ends = [], [], [], []

    def before(env):
        starts.append(time.perf_counter())
        cpu_starts.append(time.process_time())
    before.before_iteration = True

    def after(env):
        ends.append(time.perf_counter())
        cpu_ends.append(time.process_time())

    ds = lgb.Dataset(d["X"], d["y"], params=dict(max_bin=COMMON["max_bin"]))
    model = lgb.train(params, ds, num_boost_round=rounds, callbacks=[before, after])
    k = d["num_class"] if d["num_class"] > 1 else 1
    per_iter = np.asarray(ends) - np.asarray(starts)
    cpu_iter = np.asarray(cpu_ends) - np.asarray(cpu_starts)
    trees = model.dump_model()["tree_info"][warm * k:]
    # A one-leaf tree's dump has no count: average rows over the trees with a split.
    counts = [c for c in (t["tree_structure"].get("internal_count") for t in trees) if c is not None]
    pred = model.predict(d["Xt"])
    return dict(rows=float(np.mean(counts)) if counts else float("nan"),
                leaves=float(np.mean([t["num_leaves"] for t in trees])),
                seconds=float(np.mean(per_iter[warm:]) / k),
                median=float(np.median(per_iter[warm:]) / k),
                cpu=float(np.mean(cpu_iter[warm:]) / k), sampling=float("nan"),
                metrics={m: score(m, d["yt"], pred) for m in d["metrics"]})


RUNNERS = {"oocgbdt": run_oocgbdt, "LightGBM": run_lightgbm}


def run_seeds(lib, d, strategy, rounds, lr, warm, n_seeds):
    """Run one library and strategy over the seeds; times averaged, metrics as lists."""
    seeds = [BAGGING_SEED] if strategy == "none" else [BAGGING_SEED + i for i in range(n_seeds)]
    runs = [RUNNERS[lib](d, strategy, rounds, lr, warm, s) for s in seeds]
    out = {k: float(np.mean([r[k] for r in runs])) for k in
           ("rows", "leaves", "seconds", "median", "cpu", "sampling")}
    out["metrics"] = {m: [r["metrics"][m] for r in runs] for m in d["metrics"]}
    out["n_seeds"] = len(seeds)
    return out


def warm_up_jit():
    """Load numba's cached kernels (or compile them) before anything is timed."""
    import oocgbdt
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.float64)
    for s in STRATEGIES.values():
        oocgbdt.train(dict(objective="binary", n_estimators=3, learning_rate=0.5, chunk_rows=1000,
                           **s), X, y, verbose=False)


# ---- report -------------------------------------------------------------------------------------

def _ratios(r, base):
    return " / ".join(f"{r[k] / base[k]:.3f}x" for k in ("median", "seconds", "cpu"))


def _mean_sd(values):
    if len(values) == 1:
        return f"{values[0]:.4f}"
    return f"{np.mean(values):.4f} +- {np.std(values, ddof=1):.4f}"


def print_table(headers, rows, out):
    cells = [headers] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
    print(line(cells[0]), file=out)
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|", file=out)
    for r in cells[1:]:
        print(line(r), file=out)


def goss_vs_bagging(res, lib, metric):
    """One line: does GOSS beat bagging on ``metric``, and by more than the seed noise?"""
    g, b = res[(lib, "goss")]["metrics"][metric], res[(lib, "bagging")]["metrics"][metric]
    diff = np.mean(g) - np.mean(b)
    higher = HIGHER_IS_BETTER[metric]
    better = diff > 0 if higher else diff < 0
    text = (f"{lib}: GOSS {'beats' if better else 'does not beat'} bagging at equal budget on "
            f"{metric} ({np.mean(g):.4f} vs {np.mean(b):.4f}, {'higher' if higher else 'lower'} "
            f"is better")
    if len(g) > 1 and len(b) > 1:
        se = float(np.sqrt(np.var(g, ddof=1) / len(g) + np.var(b, ddof=1) / len(b)))
        verdict = "beyond" if abs(diff) > 2 * se else "within"
        text += f"; difference {diff:+.4f}, standard error {se:.4f} over {len(g)} seeds: {verdict} 2 SE)"
    else:
        text += "; one draw each: no error bar)"
    return text


def run(datasets, quick, rounds_override=None, seeds_override=None, out=sys.stdout):
    lr = 0.25 if quick else COMMON["learning_rate"]
    warm = int(1.0 / lr)
    import lightgbm
    import numba
    import oocgbdt
    print(f"# Row sampling: none vs bagging vs GOSS ({'quick smoke run' if quick else 'full run'})",
          file=out)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}, numpy {np.__version__}, numba "
          f"{numba.__version__}, lightgbm {lightgbm.__version__}, oocgbdt {oocgbdt.__version__}",
          file=out)
    print(f"load average at start: {os.getloadavg()[0]:.2f}; OMP_WAIT_POLICY="
          f"{os.environ.get('OMP_WAIT_POLICY')}", file=out)
    print(f"settings: num_leaves=31, learning_rate={lr}, max_bin=255; GOSS a=0.2, b=0.1; bagging "
          f"fraction 0.3, freq 1; timing window: rounds >= {warm}", file=out, flush=True)
    warm_up_jit()
    results = {}
    for name in datasets:
        t0 = time.perf_counter()
        d = load(name, quick)
        rounds = rounds_override or (10 if quick else ROUNDS[name])
        n_seeds = seeds_override or (QUICK_SEEDS if quick else SEEDS)[name]
        n = len(d["y"])
        print(f"\n## {name}: {n:,} train rows x {d['X'].shape[1]} features, {len(d['yt']):,} test "
              f"rows, {d['objective']}, {rounds} rounds, {n_seeds} seed(s) for the sampled "
              f"strategies (loaded in {time.perf_counter() - t0:.1f} s)", file=out, flush=True)
        res = {(lib, strategy): run_seeds(lib, d, strategy, rounds, lr, warm, n_seeds)
               for lib in RUNNERS for strategy in STRATEGIES}
        rows = []
        for lib in RUNNERS:
            base = res[(lib, "none")]
            for strategy in STRATEGIES:
                r = res[(lib, strategy)]
                rows.append([lib, strategy, r["n_seeds"], f"{r['rows']:,.0f} ({r['rows'] / n:.3f})",
                             f"{r['leaves']:.1f}",
                             f"{r['median']:.4f} / {r['seconds']:.4f} / {r['cpu']:.4f}",
                             _ratios(r, base),
                             "-" if np.isnan(r["sampling"]) else f"{r['sampling']:.4f}"]
                            + [_mean_sd(r["metrics"][m]) for m in d["metrics"]])
        print_table(["library", "strategy", "seeds", "rows/tree", "leaves/tree",
                     "s/tree med / mean / cpu", "vs none", "s sampling"] + list(d["metrics"]),
                    rows, out)
        for lib in RUNNERS:
            for m in d["metrics"]:
                print(goss_vs_bagging(res, lib, m), file=out)
        print(f"load average now: {os.getloadavg()[0]:.2f}", file=out, flush=True)
        results[name] = res
    return results


def judge(results, out=sys.stdout):
    """The issue's targets on synthetic_1m; returns True when they are met.

    Time: the wall-clock ratio GOSS / none after warm-up, median and mean, must both be <= 0.45;
    the CPU-seconds ratio is printed beside them (it is what other processes cannot inflate).
    AUC: the target guards against GOSS losing accuracy, so it is judged one-sided (GOSS at
    most 0.003 below no sampling); the literal two-sided check is printed too.
    """
    res = results.get("synthetic_1m")
    if res is None:
        print("\n(targets are judged on synthetic_1m, which was not run)", file=out)
        return True
    o0, og = res[("oocgbdt", "none")], res[("oocgbdt", "goss")]
    r_med, r_mean, r_cpu = (og[k] / o0[k] for k in ("median", "seconds", "cpu"))
    auc_goss, auc_none = float(np.mean(og["metrics"]["auc"])), o0["metrics"]["auc"][0]
    diff = auc_goss - auc_none
    ok_t = max(r_med, r_mean) <= TIME_RATIO_TARGET
    ok_m = diff >= -AUC_TARGET
    print("\n## Targets (synthetic_1m, oocgbdt)", file=out)
    print(f"- GOSS s/tree after warm-up / none, wall clock: median {r_med:.3f}, mean "
          f"{r_mean:.3f} (target <= {TIME_RATIO_TARGET} for both): {'met' if ok_t else 'MISSED'}; "
          f"CPU seconds: {r_cpu:.3f} ({'<=' if r_cpu <= TIME_RATIO_TARGET else '>'} "
          f"{TIME_RATIO_TARGET})", file=out)
    print(f"- AUC(GOSS) - AUC(none) = {diff:+.4f} (AUC {auc_goss:.4f}, mean over "
          f"{len(og['metrics']['auc'])} seed(s), vs {auc_none:.4f}): "
          f"not worse by more than {AUC_TARGET}: {'met' if ok_m else 'MISSED'}; two-sided "
          f"|difference| <= {AUC_TARGET}: {'yes' if abs(diff) <= AUC_TARGET else 'no'}", file=out)
    return ok_t and ok_m


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.sampling", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke run on small data (no targets)")
    p.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    p.add_argument("--rounds", type=int, default=None, help="override the rounds per dataset")
    p.add_argument("--seeds", type=int, default=None,
                   help="override the seeds per dataset for the sampled strategies")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    t0 = time.perf_counter()
    results = run(args.datasets, args.quick, args.rounds, args.seeds)
    ok = True if args.quick else judge(results)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
