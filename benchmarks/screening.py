"""Feature screening (EMA-FS / S-EMA-FS): time per tree and test AUC against no
screening, per-tree ``feature_fraction`` and LightGBM.

Usage::

    python -m benchmarks.screening [--rows 500000] [--n-estimators 30] [--ratios 0.3 0.5 0.7]
                                   [--quick] [--per-run-setup] [--lgb-threads 2]

Datasets:

* ``fraud``: :mod:`benchmarks.make_fraud` (dense, fraud-like: 500 features of which 10% are
  informative, ~4% positives, NaNs, heavy tails, integer codes); ``--rows`` training rows and a
  separate test set of ``--test-rows`` rows (default 200,000, ~8,000 positives).
* ``lightgbm_binary``: LightGBM's example (28 features, 7,000 training rows, 500 test rows;
  the paper's boundary case, few features), from ``../shared/data`` (skipped if absent).

Methods, each trained in-process (``oocgbdt.train`` on NumPy input) with ``objective=binary,
num_leaves=31, learning_rate=0.1, max_bin=255, enable_bundle=False`` and the same number of trees
(every other parameter at its default; no eval set, no early stopping):

* ``none``: every feature in every tree;
* ``feature_fraction``: ``feature_fraction=r`` (LightGBM's per-tree uniform draw);
* ``EMA-FS``: ``feature_screening='ema', screening_ratio=r`` (warm-up W=5, alpha=0.3);
* ``S-EMA-FS``: ``feature_screening='stochastic', screening_ratio=r, screening_beta=1.0``;
* ``LightGBM``: ``lightgbm.train`` with the same parameters, ``num_threads=2`` and
  ``feature_fraction=r, feature_fraction_bynode=1.0`` (off: LightGBM's per-node fraction is a
  number, 1.0 by default), and once with no feature_fraction.

Columns:

* ``s/tree``: wall time per tree after warm-up. oocgbdt: the mean of ``booster.tree_stats[i]
  ["seconds"]`` over trees ``i >= screening_warmup`` (5, for every method alike, so that all
  oocgbdt rows average the same trees); LightGBM: its ``lightgbm.train`` wall time / trees.
* ``cpu s/tree``: the same in CPU seconds of this process, all threads (oocgbdt's
  ``tree_stats[i]["cpu_seconds"]``; LightGBM: ``time.process_time()`` over ``lightgbm.train`` /
  trees). Less sensitive than wall time to other jobs on the machine.
* ``hist s/tree`` and ``other s/tree``: the part of oocgbdt's ``s/tree`` spent routing rows and
  building histograms (``seconds_histogram``), and the rest (gradients, reducing/subtracting
  histograms, split search, applying the tree to the training rows, the loop's overhead).
* ``total s``: training time including the one-off setup (see below).
* ``speedup`` / ``cpu speedup``: ``none``'s ``s/tree`` (``cpu s/tree``) over this row's;
  LightGBM rows are compared with LightGBM's own ``none`` row. ``dAUC``: test AUC minus
  ``none``'s (LightGBM rows: minus LightGBM's ``none``).
* ``informative kept`` (fraud only): informative features among those a tree could use, mean
  over the trees after warm-up (oocgbdt's ``booster.screening_history_``).
* ``load``: the 1-minute load average when the run ended (this 2-core machine may be shared
  with other jobs: a load above 2 means the wall timings are inflated and noisy).

Setup shared between methods: fitting the bins and binning the training rows does not depend on
the method, so by default ``oocgbdt.train`` does it only in its first call per dataset: its
``fit_bin_mapper``, ``fit_bundler`` and ``partition_tasks`` (``oocgbdt.dask.training``) are wrapped
while the benchmark trains, and later calls get the first call's bin mapper, bundler and
computed chunks (:class:`_SetupCache`; the chunk functions never mutate their inputs, and the
quick run checks that this gives the same model as a plain ``oocgbdt.train``). ``total s`` is
the shared setup plus the rest of the run's ``oocgbdt.train`` call. Likewise LightGBM's
``Dataset`` is constructed once and its ``total s`` is construction plus ``lightgbm.train``.
``--per-run-setup`` bins in every call instead (~80-100 s per call at 500,000 x 500 on a loaded
machine); if the wrapped names disappear from ``oocgbdt.dask.training`` the benchmark falls
back to that, with a note.

The issue's targets (fraud task only) are printed with PASS/FAIL at the end:

1. EMA-FS at r=0.3: ``speedup >= 2`` and AUC no more than 0.002 below ``none``'s.
2. S-EMA-FS at every r: ``speedup > 1`` and AUC >= ``feature_fraction``'s at the same r.

Choice of ``--n-estimators`` (30 by default): the target metric is the time per tree after
warm-up, which 25 trees per run already average. One tree without screening at 500,000 x 500
costs ~3 CPU seconds (~2.3 s wall on an idle 2-core machine, ~5-7 s at a load average of 6-12),
and the run is 10 oocgbdt and 4 LightGBM fits of the fraud task, plus data generation (15-40 s),
the shared setup (40-90 s) and lightgbm_binary (0.5-2 min). With 30 trees the full run took
23 min at a load average of 2-6 (and 28 min at 9-12). Test AUCs are therefore those of 30-tree
models, not converged: the differences between methods are of the order of the seed-to-seed
noise of ``feature_fraction`` (+-0.002 AUC on the fraud task).

Wall times on a shared machine drift with the other jobs' load between runs, which are
sequential: compare ``cpu s/tree`` / ``cpu speedup`` as well (the targets print both; the
PASS/FAIL verdict follows the issue and uses wall time).

``--quick`` (CI smoke run, < 60 s): 20,000 x 100 fraud rows, 10 trees, r = 0.3 only, and
lightgbm_binary with 10 trees; targets are printed but not meaningful at that size. LightGBM
runs with ``num_threads=1`` there (``--lgb-threads``): on an oversubscribed machine its two
OpenMP threads spend most of a small tree waiting at barriers (up to 1.7 s per 20,000-row tree
at a load average of 9, 17 s of the smoke run), which would make the run's duration erratic.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time

import numpy as np

from benchmarks._common import data_dir, free_memory, load_dataset, machine_info, print_table
from benchmarks.make_fraud import fraud_structure, make_fraud_train_test

#: Tree parameters shared by every method and both libraries. ``enable_bundle=False`` on both:
#: EFB is off in LightGBM (the issue's setting) and so in oocgbdt too; neither dataset has
#: exclusive features (oocgbdt's EFB makes 500 single-feature bundles of the fraud data).
COMMON = dict(objective="binary", num_leaves=31, learning_rate=0.1, max_bin=255,
              enable_bundle=False)
#: LightGBM-only parameters. ``feature_fraction_bynode`` is a fraction in LightGBM (not a
#: bool): 1.0, its default, is "off" (no per-node sampling on top of the per-tree draw).
LGB_EXTRA = dict(num_threads=2, feature_fraction_bynode=1.0, verbose=-1)
#: Trees not averaged in ``s/tree`` (oocgbdt's screening_warmup default).
WARMUP = 5
#: Defaults of the full run; 30 trees: see "Choice of --n-estimators" above.
FULL_ROWS, FULL_TEST_ROWS, FULL_FEATURES, FULL_TREES = 500_000, 200_000, 500, 30
BINARY_TREES = 100
QUICK = dict(rows=20_000, test_rows=10_000, features=100, n_estimators=10, ratios=[0.3],
             binary_n_estimators=10, lgb_threads=1)

HEADERS = ["method", "r", "s/tree", "cpu s/tree", "hist s/tree", "other s/tree", "total s",
           "test AUC", "speedup", "cpu speedup", "dAUC", "informative kept", "load"]


_T0 = time.perf_counter()


def _stamp():
    """Seconds since the module was imported (progress lines)."""
    return f"[{time.perf_counter() - _T0:6.1f} s]"


def _load1():
    return os.getloadavg()[0]


def _auc(y, p):
    from sklearn.metrics import roc_auc_score
    return float(roc_auc_score(y, p))


def _cached_chunk(cache, i):
    return cache.values["partition_tasks"][i]


class _SetupCache:
    """Make ``oocgbdt.train`` fit its bins (and bundles) and bin its training chunks only once.

    Inside ``with cache:``, ``oocgbdt.dask.training``'s ``fit_bin_mapper``, ``fit_bundler`` and
    ``partition_tasks`` are wrapped: their first call runs (the chunks are computed right away) and
    is remembered; later calls return the remembered bin mapper, bundler and chunks. Everything
    else in ``train`` (checks, the boosting loop, the Booster) runs as usual. Only the training
    rows' chunks are cached (``partition_tasks`` calls whose key ends in ``-chunk``); any other
    call, e.g. for an eval set, passes through. The wrapped names are restored on exit.
    """

    NAMES = ("fit_bin_mapper", "fit_bundler", "partition_tasks")

    def __init__(self):
        self.values = {}
        self.setup_seconds = 0.0  # time of the first (real) calls
        self.spent = 0.0          # time spent in the wrappers since the last reset

    def _wrap(self, name, fn):
        import dask

        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                if name == "partition_tasks":
                    key = args[-1] if args else kwargs.get("key")
                    if not (isinstance(key, str) and key.endswith("-chunk")):
                        return fn(*args, **kwargs)
                    if name not in self.values:
                        chunks = list(dask.compute(*fn(*args, **kwargs), scheduler="threads"))
                        self.values[name] = chunks
                        self.setup_seconds += time.perf_counter() - t0
                    # A plain object argument: dask neither hashes nor traverses the chunks.
                    return [dask.delayed(_cached_chunk, pure=False)(self, i)
                            for i in range(len(self.values[name]))]
                if name not in self.values:
                    self.values[name] = fn(*args, **kwargs)
                    self.setup_seconds += time.perf_counter() - t0
                return self.values[name]
            finally:
                self.spent += time.perf_counter() - t0
        return wrapper

    def __enter__(self):
        import oocgbdt.dask.training as training
        self._module = training
        self._orig = {n: getattr(training, n) for n in self.NAMES if hasattr(training, n)}
        if "fit_bin_mapper" not in self._orig or "partition_tasks" not in self._orig:
            raise AttributeError("oocgbdt.dask.training has no fit_bin_mapper/partition_tasks")
        for n, fn in self._orig.items():
            setattr(training, n, self._wrap(n, fn))
        return self

    def __exit__(self, *exc):
        for n, fn in self._orig.items():
            setattr(self._module, n, fn)
        return False


class OocRunner:
    """Train oocgbdt on one training set with every method, sharing the binning and chunking
    (see :class:`_SetupCache`), or not (``per_run_setup``)."""

    def __init__(self, X, y, n_estimators, per_run_setup=False):
        self.X, self.y = X, y
        self.n_estimators = int(n_estimators)
        self.per_run_setup = per_run_setup
        self.cache = None if per_run_setup else _SetupCache()

    @property
    def setup_seconds(self):
        return 0.0 if self.cache is None else self.cache.setup_seconds

    def params(self, extra):
        return dict(COMMON, n_estimators=self.n_estimators, **extra)

    def fit(self, extra):
        """``oocgbdt.train(COMMON + extra)`` in-process; returns ``(booster, seconds)``.

        ``seconds`` is the call's wall time; with the shared setup, the time the call spent in
        the setup (the first call) or in fetching its cached results (later calls) is replaced
        by the setup's time, so every method's total counts the setup once.
        """
        import oocgbdt
        free_memory()
        if self.cache is not None:
            try:
                self.cache.__enter__()
            except AttributeError as e:  # internals renamed: fall back
                print(f"(shared setup unavailable: {e}; binning per run)", flush=True)
                self.cache = None
            else:
                try:
                    self.cache.spent = 0.0
                    t0 = time.perf_counter()
                    booster = oocgbdt.train(self.params(extra), self.X, self.y, verbose=False)
                    wall = time.perf_counter() - t0
                finally:
                    self.cache.__exit__(None, None, None)
                return booster, wall - self.cache.spent + self.cache.setup_seconds
        t0 = time.perf_counter()
        booster = oocgbdt.train(self.params(extra), self.X, self.y, verbose=False)
        return booster, time.perf_counter() - t0


def _mean_after_warmup(stats, key):
    vals = [s.get(key) for s in stats[WARMUP:]]
    if not vals or any(v is None for v in vals):
        return None
    return float(np.mean(vals))


def _informative_kept(history, inf_set):
    """Mean number of informative features usable per round after warm-up, as "k/n"."""
    if not history:
        return f"{len(inf_set)}/{len(inf_set)}"
    counts = [len(inf_set.intersection(np.asarray(h).tolist())) for h in history[WARMUP:]]
    return f"{np.mean(counts):.1f}/{len(inf_set)}" if counts else "-"


def _f(v, fmt):
    return "-" if v is None else format(v, fmt)


def _ooc_methods(ratios):
    """(label, r, extra params) of the oocgbdt runs: none first, then each r."""
    out = [("none", None, {})]
    for r in ratios:
        out += [("feature_fraction", r, dict(feature_fraction=r)),
                ("EMA-FS", r, dict(feature_screening="ema", screening_ratio=r)),
                ("S-EMA-FS", r, dict(feature_screening="stochastic", screening_ratio=r,
                                     screening_beta=1.0))]
    return out


def run_dataset(name, X, y, Xt, yt, n_estimators, ratios, informative=None,
                per_run_setup=False, lgb_threads=2):
    """Train every method on one dataset, print its table; returns ``{(method, r): row dict}``."""
    import lightgbm as lgb
    print(f"\n## {name}: {X.shape[0]:,} training rows x {X.shape[1]} features, "
          f"{Xt.shape[0]:,} test rows, {y.mean():.2%} positives; {n_estimators} trees per run; "
          f"load at start {os.getloadavg()[0]:.2f}\n", flush=True)
    results = {}
    ooc = OocRunner(X, y, n_estimators, per_run_setup=per_run_setup)
    inf_set = None if informative is None else set(int(i) for i in informative)
    for label, r, extra in _ooc_methods(ratios):
        booster, seconds = ooc.fit(extra)
        if label == "none" and ooc.cache is not None:
            print(f"oocgbdt shared setup (bin mapper, bundler, binned chunks; inside the first "
                  f"run): {ooc.setup_seconds:.1f} s", flush=True)
        stats = booster.tree_stats
        auc = _auc(yt, booster.predict(Xt))
        tpt = _mean_after_warmup(stats, "seconds")
        hist = _mean_after_warmup(stats, "seconds_histogram")
        kept = None
        if inf_set is not None:
            kept = _informative_kept(getattr(booster, "screening_history_", None), inf_set)
        results[("oocgbdt", label, r)] = dict(
            tpt=tpt, cpu=_mean_after_warmup(stats, "cpu_seconds"), hist=hist,
            other=None if hist is None else tpt - hist, total=seconds,
            auc=auc, kept=kept, load=_load1(), n_trees=len(stats),
            passes=_mean_after_warmup(stats, "n_passes"),
            search=_mean_after_warmup(stats, "seconds_split_search"),
            reduce=_mean_after_warmup(stats, "seconds_reduce"),
            waiting=_mean_after_warmup(stats, "seconds_waiting"))
        print(f"  {_stamp()} oocgbdt {label:16s} r={r}: {tpt:.3f} s/tree, AUC {auc:.5f} "
              f"(load {_load1():.2f})", flush=True)
        del booster
        gc.collect()
    del ooc
    free_memory()

    t0 = time.perf_counter()
    lgb_params = dict(COMMON, **dict(LGB_EXTRA, num_threads=int(lgb_threads)))
    ds = lgb.Dataset(X, y, params=lgb_params, free_raw_data=False).construct()
    lgb_setup = time.perf_counter() - t0
    print(f"LightGBM Dataset construction: {lgb_setup:.1f} s (num_threads={lgb_threads})",
          flush=True)
    for r in [None] + list(ratios):
        params = dict(lgb_params)
        if r is not None:
            params["feature_fraction"] = r
        t0, c0 = time.perf_counter(), time.process_time()
        bst = lgb.train(params, ds, num_boost_round=n_estimators)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        n_trees = bst.num_trees()
        auc = _auc(yt, bst.predict(Xt))
        results[("LightGBM", "none" if r is None else "feature_fraction", r)] = dict(
            tpt=seconds / max(n_trees, 1), cpu=cpu / max(n_trees, 1), hist=None, other=None,
            total=seconds + lgb_setup,
            auc=auc, kept=None, load=_load1(), n_trees=n_trees)
        print(f"  {_stamp()} LightGBM feature_fraction={r}: "
              f"{seconds / max(n_trees, 1):.3f} s/tree, AUC {auc:.5f} (load {_load1():.2f})",
              flush=True)
        del bst
    del ds
    free_memory()

    rows = []
    for (lib, label, r), v in results.items():
        base = results[(lib, "none", None)]
        cells = {"method": label if lib == "oocgbdt" else f"LightGBM {label}",
                 "r": "-" if r is None else f"{r:g}", "s/tree": _f(v["tpt"], ".4f"),
                 "cpu s/tree": _f(v["cpu"], ".4f"), "hist s/tree": _f(v["hist"], ".4f"),
                 "other s/tree": _f(v["other"], ".4f"), "total s": _f(v["total"], ".1f"),
                 "test AUC": _f(v["auc"], ".5f"), "speedup": _ratio(base["tpt"], v["tpt"]),
                 "cpu speedup": _ratio(base["cpu"], v["cpu"]),
                 "dAUC": _f(v["auc"] - base["auc"], "+.5f"), "informative kept": v["kept"] or "-",
                 "load": _f(v["load"], ".2f")}
        rows.append(cells)
    print(flush=True)
    headers = [h for h in HEADERS if informative is not None or h != "informative kept"]
    rows = [[c[h] for h in headers] for c in rows]
    print_table(headers, rows)
    print("\noocgbdt time breakdown per tree after warm-up (s): passes, histogram, reduce, "
          "split search, waiting (split records), n_trees", flush=True)
    print_table(["method", "r", "passes", "histogram", "reduce", "split search", "waiting",
                 "trees"],
                [[label, "-" if r is None else f"{r:g}", _f(v["passes"], ".1f"),
                  _f(v["hist"], ".4f"), _f(v["reduce"], ".4f"), _f(v["search"], ".4f"),
                  _f(v["waiting"], ".4f"), v["n_trees"]]
                 for (lib, label, r), v in results.items() if lib == "oocgbdt"])
    return results


def _ratio(a, b):
    return "-" if a is None or b is None else f"{a / b:.2f}x"


def check_targets(results, ratios):
    """The issue's targets on the fraud task: list of (name, passed, detail)."""
    none = results[("oocgbdt", "none", None)]
    out = []
    if 0.3 in ratios:
        ema = results[("oocgbdt", "EMA-FS", 0.3)]
        speed = none["tpt"] / ema["tpt"]
        d = ema["auc"] - none["auc"]
        ok = speed >= 2.0 and d >= -0.002
        out.append(("EMA-FS r=0.3: >= 2x faster per tree than none, AUC within 0.002", ok,
                    f"speedup {speed:.2f}x ({ema['tpt']:.3f} vs {none['tpt']:.3f} s/tree; "
                    f"CPU {_ratio(none['cpu'], ema['cpu'])}), "
                    f"AUC {ema['auc']:.5f} vs {none['auc']:.5f} (diff {d:+.5f})"))
    for r in ratios:
        s = results[("oocgbdt", "S-EMA-FS", r)]
        ff = results[("oocgbdt", "feature_fraction", r)]
        speed = none["tpt"] / s["tpt"]
        ok = speed > 1.0 and s["auc"] >= ff["auc"]
        out.append((f"S-EMA-FS r={r}: faster than none, AUC >= feature_fraction={r}", ok,
                    f"speedup {speed:.2f}x ({s['tpt']:.3f} vs {none['tpt']:.3f} s/tree; "
                    f"CPU {_ratio(none['cpu'], s['cpu'])}), "
                    f"AUC {s['auc']:.5f} vs feature_fraction {ff['auc']:.5f} "
                    f"(diff {s['auc'] - ff['auc']:+.5f})"))
    return out


def _jit_warmup():
    """Compile (or load from numba's cache) every kernel before anything is timed."""
    import oocgbdt
    from benchmarks.make_fraud import make_fraud
    X, y = make_fraud(3000, 20, seed=1)
    for extra in ({}, dict(feature_screening="stochastic", screening_ratio=0.5,
                           screening_warmup=1)):
        oocgbdt.train(dict(COMMON, n_estimators=3, **extra), X, y, verbose=False).predict(X)


def _check_shared_setup(X, y, Xt, n_estimators, max_rows=5000):
    """The shared-setup path gives oocgbdt.train's model (same test predictions), checked on
    the first ``max_rows`` rows."""
    import oocgbdt
    X, y, Xt = X[:max_rows], y[:max_rows], Xt[:max_rows]
    extra = dict(feature_screening="ema", screening_ratio=0.3)
    shared = OocRunner(X, y, n_estimators)
    shared.fit({})  # fills the cache
    if shared.cache is None:
        return
    p_shared = shared.fit(extra)[0].predict(Xt)
    p_train = oocgbdt.train(shared.params(extra), X, y, verbose=False).predict(Xt)
    same = np.array_equal(p_shared, p_train)
    print(f"shared-setup check: the shared-setup EMA-FS model and oocgbdt.train's give "
          f"{'identical' if same else 'DIFFERENT'} test predictions", flush=True)
    if not same:
        raise AssertionError("shared-setup training differs from oocgbdt.train")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.screening",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=None,
                        help=f"fraud training rows (default {FULL_ROWS:,})")
    parser.add_argument("--test-rows", type=int, default=None,
                        help=f"fraud test rows (default {FULL_TEST_ROWS:,})")
    parser.add_argument("--features", type=int, default=None,
                        help=f"fraud features (default {FULL_FEATURES})")
    parser.add_argument("--n-estimators", type=int, default=None,
                        help=f"trees per run on the fraud task (default {FULL_TREES})")
    parser.add_argument("--binary-n-estimators", type=int, default=None,
                        help=f"trees per run on lightgbm_binary (default {BINARY_TREES})")
    parser.add_argument("--ratios", type=float, nargs="+", default=None,
                        help="retention ratios r (default 0.3 0.5 0.7)")
    parser.add_argument("--datasets", nargs="+", default=["fraud", "lightgbm_binary"],
                        choices=["fraud", "lightgbm_binary"])
    parser.add_argument("--lgb-threads", type=int, default=None,
                        help="LightGBM num_threads (default 2; 1 with --quick)")
    parser.add_argument("--per-run-setup", action="store_true",
                        help="call oocgbdt.train per method (bin the data every time)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 20k x 100 fraud rows, 10 trees, r=0.3 (< 60 s)")
    args = parser.parse_args(argv)
    q = QUICK if args.quick else {}
    rows = args.rows or q.get("rows", FULL_ROWS)
    test_rows = args.test_rows or q.get("test_rows", FULL_TEST_ROWS)
    n_features = args.features or q.get("features", FULL_FEATURES)
    n_trees = args.n_estimators or q.get("n_estimators", FULL_TREES)
    binary_trees = args.binary_n_estimators or q.get("binary_n_estimators", BINARY_TREES)
    ratios = args.ratios or q.get("ratios", [0.3, 0.5, 0.7])
    lgb_threads = args.lgb_threads or q.get("lgb_threads", LGB_EXTRA["num_threads"])
    if n_trees <= WARMUP or binary_trees <= WARMUP:
        parser.error(f"--n-estimators must exceed the warm-up ({WARMUP} trees)")

    t_start = time.perf_counter()
    print(f"# Feature screening benchmark{' (--quick)' if args.quick else ''}\n", flush=True)
    print(f"machine: {machine_info()}", flush=True)
    print(f"python -m benchmarks.screening {' '.join(argv if argv is not None else sys.argv[1:])}",
          flush=True)
    _jit_warmup()

    fraud_results = None
    if "fraud" in args.datasets:
        t0 = time.perf_counter()
        X, y, Xt, yt = make_fraud_train_test(rows, test_rows, n_features)
        informative = fraud_structure(n_features).informative
        print(f"\nfraud data generated in {time.perf_counter() - t0:.1f} s "
              f"({len(informative)} informative features)", flush=True)
        if args.quick:
            _check_shared_setup(X, y, Xt, n_trees)
        fraud_results = run_dataset("fraud", X, y, Xt, yt, n_trees, ratios,
                                    informative=informative, per_run_setup=args.per_run_setup,
                                    lgb_threads=lgb_threads)
        del X, y, Xt, yt
        free_memory()
    if "lightgbm_binary" in args.datasets:
        if not (data_dir() / "lightgbm_binary").is_dir():
            print(f"\n## lightgbm_binary: skipped ({data_dir()} has no lightgbm_binary)",
                  flush=True)
        else:
            d = load_dataset("lightgbm_binary")
            run_dataset("lightgbm_binary", d.X_train, d.y_train, d.X_test, d.y_test,
                        binary_trees, ratios, per_run_setup=args.per_run_setup,
                        lgb_threads=lgb_threads)

    if fraud_results is not None:
        note = ", not meaningful at --quick size" if args.quick else ""
        print(f"\n## Targets (fraud task{note})\n", flush=True)
        for name, ok, detail in check_targets(fraud_results, ratios):
            print(f"- {'PASS' if ok else 'FAIL'}: {name}: {detail}", flush=True)
    print(f"\nwall time {time.perf_counter() - t_start:.0f} s; machine at end: {machine_info()}",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
