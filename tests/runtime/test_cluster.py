"""Which cluster a fit uses (oocgbdt.runtime.cluster)."""
import threading

import numpy as np
from distributed import Client, LocalCluster

import oocgbdt
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
