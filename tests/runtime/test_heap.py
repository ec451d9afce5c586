"""Tests of oocgbdt.runtime.heap: a worker trains with glibc's adaptive malloc thresholds, not the
fixed ones a Dask nanny gives it, and gets the nanny's back afterwards.

The oracle is the kernel's own count of minor page faults (``getrusage``): a freed 1 MiB block
that is unmapped and mapped again faults its 256 pages on every use, a block reused from the heap
does not. The settings change a whole process, so they are measured in processes of their own
(a subprocess, Dask worker processes), never in the test runner.
"""
import json
import os
import platform
import subprocess
import sys

import pytest

from oocgbdt.runtime.heap import fixed_thresholds

glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc",
                           reason="the malloc thresholds are glibc's (mallopt)")

PAGES = 256  # pages of the 1 MiB block measured


# Source, not a function of this module: it runs in a subprocess and on Dask workers, which
# cannot import the test modules (``exec`` makes a function that cloudpickle sends by value).
_FAULTS = """
def faults_per_block(n=40):
    # Minor page faults per allocate-touch-free of a 1 MiB block, in this process.
    import resource
    import numpy as np
    np.ones(1 << 17)  # first use of the size class
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(n):
        a = np.ones(1 << 17)  # 1 MiB of float64, touched
        del a
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0) / n
"""
_ns = {}
exec(_FAULTS, _ns)
faults_per_block = _ns["faults_per_block"]


def test_fixed_thresholds_reads_the_environment_as_glibc_does():
    assert fixed_thresholds({}) == {}
    assert fixed_thresholds({"MALLOC_TRIM_THRESHOLD_": "65536"}) == {"trim": 65536}
    assert fixed_thresholds({"MALLOC_MMAP_THRESHOLD_": "0x20000", "PATH": "/bin"}) == {"mmap": 131072}
    assert fixed_thresholds({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1000:"
                                               "glibc.malloc.mmap_threshold=4096"}) == \
        {"trim": 1000, "mmap": 4096}
    # The variable is read before the tunable; a value that is not a number is ignored.
    assert fixed_thresholds({"MALLOC_TRIM_THRESHOLD_": "5",
                             "GLIBC_TUNABLES": "glibc.malloc.trim_threshold=7"}) == {"trim": 5}
    assert fixed_thresholds({"MALLOC_TRIM_THRESHOLD_": "lots"}) == {}


_SCRIPT = _FAULTS + """
import json
from oocgbdt.runtime.heap import training_heap
out = {"before": faults_per_block()}
outer = training_heap(); outer.__enter__()
out["inside"] = faults_per_block()
with training_heap():  # a second fit on the same worker
    out["nested"] = faults_per_block()
out["after_inner"] = faults_per_block()
outer.__exit__(None, None, None)
out["after"] = faults_per_block()
print(json.dumps(out))
"""


@glibc
def test_training_heap_stops_page_faults_of_reused_blocks_then_restores():
    """In a process started like a Dask worker (``MALLOC_TRIM_THRESHOLD_=65536``), a freed
    1 MiB block faults all its pages on every reuse; inside ``training_heap`` it is reused from
    the heap, also while a nested block is open and after it closes, and the fixed thresholds
    are back when the outer block ends."""
    env = dict(os.environ, MALLOC_TRIM_THRESHOLD_="65536")
    res = subprocess.run([sys.executable, "-c", _SCRIPT], env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    f = json.loads(res.stdout.strip().splitlines()[-1])
    assert f["before"] >= PAGES * 0.9, f    # mapped anew on every use
    for k in ("inside", "nested", "after_inner"):
        assert f[k] <= PAGES * 0.1, (k, f)  # reused: the pages are already there
    assert f["after"] >= PAGES * 0.9, f     # the environment's thresholds again


@glibc
def test_actor_shards_train_with_the_adaptive_heap_and_restore_the_nannys():
    """On a LocalCluster of processes (whose nanny fixes the trim threshold), every worker
    reuses freed blocks while the shards of a fit exist, and maps them anew once they close."""
    from distributed import Client, LocalCluster

    from oocgbdt.runtime.actor_executor import ActorExecutor
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as c:
        env = c.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
        assert set(env.values()) == {"65536"}, env  # the premise: the nanny's setting
        before = c.run(faults_per_block)
        executor = ActorExecutor(c)
        try:
            during = c.run(faults_per_block)
        finally:
            executor.close()
        after = c.run(faults_per_block)
    assert all(v >= PAGES * 0.9 for v in before.values()), before
    assert all(v <= PAGES * 0.1 for v in during.values()), during
    assert all(v >= PAGES * 0.9 for v in after.values()), after


def test_the_loop_on_a_single_worker_trains_inside_training_heap(client, monkeypatch):
    """With one worker the boosting loop runs as a task on it (``boost_on_worker``): the whole
    loop, and only it, runs inside ``training_heap`` (the conftest cluster is in-process, so
    the recording stand-in sees the task)."""
    from contextlib import contextmanager

    import dask.array as da
    import numpy as np

    import oocgbdt
    from oocgbdt.runtime import loop
    events = []

    @contextmanager
    def recording():
        events.append("enter")
        yield
        events.append("exit")

    real_boost = loop.boost

    def boost(*args, **kwargs):
        events.append("boost")
        return real_boost(*args, **kwargs)

    monkeypatch.setattr(loop, "training_heap", recording)
    monkeypatch.setattr(loop, "boost", boost)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    y = (X[:, 0] > 0).astype(float)
    oocgbdt.train({"objective": "binary", "n_estimators": 2, "verbose": False},
                  da.from_array(X, chunks=250), da.from_array(y, chunks=250), client=client)
    assert events == ["enter", "boost", "exit"]
