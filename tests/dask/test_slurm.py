"""Training on a real SLURM through dask-jobqueue: 2 batch jobs, one worker each, reading a Zarr
store; the model equals the in-process one bit for bit (same partitions, any worker count).

Runs where SLURM's ``sbatch`` is on the PATH (CI starts a single-node SLURM with
``.ci/slurm/start.sh``); skips with the reason elsewhere. The Zarr store goes to
``$OOCGBDT_SLURM_WORKDIR`` when set (a folder the compute nodes see), else to pytest's
temporary folder (enough when the node is this machine).
"""
import logging
import os
import shutil
import threading
import uuid
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

import oocgbdt
from oocgbdt.io.dataset import open_dataset, write_dataset

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.skipif(shutil.which("sbatch") is None, reason="SLURM's sbatch is not on the PATH"),
]

JOBS = 2


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    base = os.environ.get("OOCGBDT_SLURM_WORKDIR")
    if not base:
        yield tmp_path_factory.mktemp("slurm")
        return
    path = Path(base) / f"test-slurm-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@contextmanager
def _slurm_cluster(workdir):
    """A ``SLURMCluster`` whose jobs each run one single-threaded worker, and a client of it;
    the jobs are cancelled when the block ends."""
    jobqueue = pytest.importorskip("dask_jobqueue")
    from distributed import Client
    with jobqueue.SLURMCluster(cores=1, processes=1, memory="3GB", walltime="00:20:00",
                               log_directory=str(workdir / "logs"),
                               local_directory=str(workdir / "scratch"),
                               scheduler_options={"dashboard_address": ":0"}) as cluster, \
            Client(cluster, set_as_default=False) as client:
        yield cluster, client


@pytest.fixture
def slurm_client(workdir):
    """A client of a ``SLURMCluster`` scaled to 2 jobs (one per test: the jobs of one test
    hold the single node's CPUs, and another test's jobs would queue behind them)."""
    with _slurm_cluster(workdir) as (cluster, client):
        cluster.scale(jobs=JOBS)
        client.wait_for_workers(JOBS, timeout=300)
        yield client


def _synthetic(n=4000, f=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    signal = np.nan_to_num(X[:, 0]) - 2 * np.nan_to_num(X[:, 1]) ** 2 + np.isnan(X[:, 2])
    return X, signal, rng


def _workers_that_ran(client, run):
    """The workers that ran a task while ``run()`` trained, and its result."""
    from distributed import get_task_stream
    with get_task_stream(client=client) as stream:
        result = run()
    return {t["worker"] for t in stream.data}, result


def test_binary_on_two_slurm_jobs_equals_the_in_process_model(slurm_client, workdir):
    """4 partitions of 2 Zarr chunks, 2 per job; an eval set scored every round. The trees,
    raw scores and eval history equal those of the same fit on NumPy in process."""
    X, signal, rng = _synthetic()
    y = (signal + rng.logistic(size=len(signal)) > 0).astype(np.float64)
    ds = open_dataset(write_dataset(workdir / "binary.zarr", X[:3000], y[:3000],
                                    chunk_rows=375).path)
    ev = open_dataset(write_dataset(workdir / "binary-eval.zarr", X[3000:], y[3000:],
                                    chunk_rows=500).path)
    params = dict(objective="binary", num_leaves=15, n_estimators=10, chunk_rows=375,
                  partition_rows=750, metric="auc")
    workers, on_slurm = _workers_that_ran(slurm_client, lambda: oocgbdt.train(
        params, ds.X, ds.y, eval_set=[(ev.X, ev.y)], client=slurm_client, verbose=False))
    assert workers == set(slurm_client.scheduler_info()["workers"]) and len(workers) == JOBS
    assert on_slurm.cache_report["n_partitions"]["train"] == 4
    in_process = oocgbdt.train(dict(params, chunk_rows=375), X[:3000], y[:3000],
                               eval_set=[(X[3000:], y[3000:])], verbose=False)
    assert on_slurm == in_process
    np.testing.assert_array_equal(on_slurm.predict(X, raw_score=True),
                                  in_process.predict(X, raw_score=True))
    assert on_slurm.evals_result == in_process.evals_result


def test_regressor_on_two_slurm_jobs_equals_the_in_process_model(slurm_client, workdir):
    """The estimator API on the SLURM client: the same trees as in process."""
    X, signal, rng = _synthetic(seed=1)
    y = signal + 0.1 * rng.normal(size=len(signal))
    ds = open_dataset(write_dataset(workdir / "regression.zarr", X, y, chunk_rows=500).path)
    kwargs = dict(n_estimators=10, num_leaves=15, chunk_rows=500, partition_rows=1000)
    workers, on_slurm = _workers_that_ran(
        slurm_client,
        lambda: oocgbdt.GBDTRegressor(**kwargs).fit(ds.X, ds.y, client=slurm_client))
    assert len(workers) == JOBS
    in_process = oocgbdt.GBDTRegressor(**kwargs).fit(X, y)
    assert on_slurm.booster_ == in_process.booster_
    np.testing.assert_array_equal(on_slurm.booster_.predict(X), in_process.booster_.predict(X))


def test_a_fit_waits_for_queued_jobs_and_trains_on_both(workdir):
    """A SLURMCluster with no job yet and min_workers=2: the fit logs that it waits, the 2
    jobs are submitted meanwhile (from a timer thread, once the fit waits), and it trains on
    both workers: the in-process model."""
    X, signal, rng = _synthetic(n=2000, seed=2)
    y = (signal + rng.logistic(size=len(signal)) > 0).astype(np.float64)
    ds = open_dataset(write_dataset(workdir / "wait.zarr", X, y, chunk_rows=500).path)
    params = dict(objective="binary", num_leaves=7, n_estimators=5, chunk_rows=500,
                  partition_rows=500, min_workers=JOBS, worker_wait_timeout=300)
    messages, timers = [], []

    class ScaleWhenWaiting(logging.Handler):
        def emit(self, record):
            messages.append(record.getMessage())
            if messages[-1].startswith("waiting for workers") and not timers:
                timers.append(threading.Timer(0.2, cluster.scale, kwargs=dict(jobs=JOBS)))
                timers[0].start()

    log, handler = logging.getLogger("oocgbdt"), ScaleWhenWaiting()
    level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        with _slurm_cluster(workdir) as (cluster, client):
            workers, on_slurm = _workers_that_ran(
                client, lambda: oocgbdt.train(params, ds.X, ds.y, client=client, verbose=False))
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
        for t in timers:
            t.join()
    assert messages[0].startswith(f"waiting for workers: 0 of {JOBS}"), messages
    assert len(workers) == JOBS
    assert on_slurm == oocgbdt.train(params, X, y, verbose=False)


def test_a_job_cancelled_mid_fit_costs_the_rounds_in_flight_not_the_fit(slurm_client,
                                                                         workdir, shared_data):
    """LightGBM's binary example (7,000 x 28) from a Zarr store on 2 SLURM jobs; one job is
    ``scancel``-ed as round 2's evaluation reaches the caller (the callback waits until its
    worker has left the scheduler, while the shards train on). The SLURMCluster does not
    submit a new job for it, so the fit goes on from the last round received on the job left
    (one worker) and completes with the model of the undisturbed in-process fit, bit for bit,
    which is LightGBM's (the oracle)."""
    import subprocess
    import time

    from tests.conftest import load_lightgbm_tsv
    from tests.dask.test_lightgbm_parity import PARAMS, _assert_lightgbm_trees, _lightgbm
    n_trees = 20
    X, y = load_lightgbm_tsv(shared_data / "lightgbm_binary" / "binary.train")
    Xt, _ = load_lightgbm_tsv(shared_data / "lightgbm_binary" / "binary.test")
    ds = open_dataset(write_dataset(workdir / "cancel.zarr", X, y, chunk_rows=875).path)
    params = dict(PARAMS, objective="binary", n_estimators=n_trees, chunk_rows=875,
                  partition_rows=1750)
    cluster = slurm_client.cluster
    worker = sorted(slurm_client.scheduler_info()["workers"].values(),
                    key=lambda w: w["name"])[0]
    job_id = cluster.workers[worker["name"]].job_id
    cancelled = []

    def cancel(env):  # in this process, as round 2's evaluation arrives
        if env.iteration == 2 and not cancelled:
            cancelled.append(subprocess.run(["scancel", job_id], check=True))
            deadline = time.monotonic() + 120
            while (worker["id"] in {w["id"] for w in
                                    slurm_client.scheduler_info()["workers"].values()}
                   and time.monotonic() < deadline):
                time.sleep(0.1)

    messages = []

    class Record(logging.Handler):
        def emit(self, record):
            messages.append(record.getMessage())

    log, handler = logging.getLogger("oocgbdt"), Record()
    log.addHandler(handler)
    try:
        recovered = oocgbdt.train(params, ds.X, ds.y, client=slurm_client, callbacks=[cancel],
                                  verbose=False)
    finally:
        log.removeHandler(handler)
    assert cancelled
    assert any("lost; training continues after round" in m for m in messages), messages
    # The cancelled job is not replaced: the fit ended on the one job left.
    assert len(slurm_client.scheduler_info()["workers"]) == JOBS - 1
    undisturbed = oocgbdt.train(params, X, y, verbose=False)
    assert recovered == undisturbed
    np.testing.assert_array_equal(recovered.predict(Xt, raw_score=True),
                                  undisturbed.predict(Xt, raw_score=True))
    _assert_lightgbm_trees(undisturbed, _lightgbm("binary", X, y, n_trees), X, Xt, n_trees)
