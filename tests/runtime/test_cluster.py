"""Which cluster a fit uses (oocgbdt.runtime.cluster)."""
import logging
import threading
from contextlib import contextmanager

import numpy as np
import pytest
from distributed import Client, LocalCluster

import oocgbdt
from oocgbdt.params import resolve_params
from oocgbdt.runtime.cluster import find_client


def _fit_in_task(params, X, y):
    return oocgbdt.train(params, X, y)


def test_a_fit_inside_a_task_does_not_wait_on_its_own_cluster():
    """A fit run by a Dask task (as a dask-ml search runs each candidate) on a cluster whose
    client is the default one: it must not send work to that cluster from the task's thread
    (an in-process cluster of one worker then waits for itself forever), and gives the model
    NumPy input gives in process."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 5)).astype(np.float32)
    y = (X[:, 0] + rng.normal(scale=0.5, size=3000) > 0).astype(float)
    params = dict(objective="binary", n_estimators=5, num_leaves=7, chunk_rows=1000,
                  verbose=False)
    expected = oocgbdt.train(params, X, y)  # no client exists yet: in process
    got = {}
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        assert find_client() is client  # outside a task: the default client
        t = threading.Thread(target=lambda: got.update(
            model=client.submit(_fit_in_task, params, X, y, pure=False).result()), daemon=True)
        t.start()
        t.join(60)  # the fit takes about a second; waiting on its own worker never ends
        assert not t.is_alive(), "the fit inside a task waited on its own cluster"
    assert got["model"] == expected


def _lazy_data(n=2000, f=5, seed=3):
    import dask.array as da
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f)).astype(np.float32)
    y = (X[:, 0] - X[:, 1] ** 2 + rng.normal(scale=0.5, size=n) > 0).astype(float)
    return X, y, da.from_array(X, chunks=(500, f)), da.from_array(y, chunks=500)


class _ScaleWhenWaiting(logging.Handler):
    """Scales ``cluster`` to ``n`` workers from a timer thread, 0.5 s after the fit logs that
    it waits: the worker joins while the fit waits, whatever the machine's speed."""

    def __init__(self, cluster, n):
        super().__init__()
        self.cluster, self.n, self.messages, self.timer = cluster, n, [], None

    def emit(self, record):
        message = record.getMessage()
        self.messages.append(message)
        if message.startswith("waiting for workers") and self.timer is None:
            self.timer = threading.Timer(0.5, self.cluster.scale, [self.n])
            self.timer.start()


@contextmanager
def _scaling_on_wait(cluster, n):
    handler = _ScaleWhenWaiting(cluster, n)
    log = logging.getLogger("oocgbdt")
    level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
        if handler.timer is not None:
            handler.timer.join()


def test_a_fit_on_a_cluster_without_workers_waits_for_one(capsys):
    """No worker at first: the fit says it waits (logged, and printed with verbose), a worker
    added meanwhile trains, and the model is the in-process one."""
    X, y, dX, dy = _lazy_data()
    params = dict(objective="binary", n_estimators=4, num_leaves=7, chunk_rows=500)
    with LocalCluster(n_workers=0, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client, \
            _scaling_on_wait(cluster, 1) as handler:
        model = oocgbdt.train(params, dX, dy, client=client, verbose=True)
    assert handler.messages[0].startswith("waiting for workers: 0 of 1"), handler.messages
    assert "waiting for workers: 0 of 1" in capsys.readouterr().err
    assert model == oocgbdt.train(params, X, y, verbose=False)


def test_workers_that_join_while_a_fit_waits_are_used():
    """min_workers=2 on a cluster of one worker: the fit waits for the second and trains on
    both (each ran tasks of the fit); the same model as in process."""
    from distributed import get_task_stream
    X, y, dX, dy = _lazy_data(seed=4)
    params = dict(objective="binary", n_estimators=4, num_leaves=7, chunk_rows=500,
                  partition_rows=500, min_workers=2)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client, \
            _scaling_on_wait(cluster, 2) as handler, get_task_stream(client=client) as stream:
        model = oocgbdt.train(params, dX, dy, client=client, verbose=False)
        workers = set(client.nthreads())
    assert handler.messages[0].startswith("waiting for workers: 1 of 2"), handler.messages
    assert len(workers) == 2 and {t["worker"] for t in stream.data} == workers
    assert model == oocgbdt.train(params, X, y, verbose=False)


def test_a_fit_without_workers_times_out_naming_the_count():
    """worker_wait_timeout passes with no worker: a TimeoutError names the count, min_workers
    and the timeout, and nothing ran on the cluster."""
    _, _, dX, dy = _lazy_data()
    with LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        with pytest.raises(TimeoutError, match=r"has 0 of the 3 worker\(s\).*min_workers=3.*"
                                               r"waiting 0\.3 s \(worker_wait_timeout=0\.3\)"):
            oocgbdt.train(dict(min_workers=3, worker_wait_timeout=0.3, n_estimators=2), dX, dy,
                          client=client)
        assert not client.who_has()  # no task ran, none is waiting


@pytest.mark.parametrize("name, value", [("min_workers", 0), ("worker_wait_timeout", 0),
                                         ("worker_wait_timeout", float("inf"))])
def test_worker_wait_parameters_are_checked(name, value):
    with pytest.raises(ValueError, match=name):
        resolve_params({name: value})


def test_the_classifier_waits_before_reading_its_labels():
    """GBDTClassifier reads lazy labels (their distinct values) before train: on a cluster
    without workers it times out there, naming the count, instead of waiting on that compute
    for ever."""
    _, _, dX, dy = _lazy_data()
    with LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        model = oocgbdt.GBDTClassifier(n_estimators=2, worker_wait_timeout=0.3)
        with pytest.raises(TimeoutError, match=r"has 0 of the 1 worker\(s\)"):
            model.fit(dX, dy, client=client)
