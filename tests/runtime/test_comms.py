"""A fit on several workers exchanges values through ``distributed``'s comms only.

The shards of a fit push values to each other with actor calls (``Shard.receive``, sent by
``Shard._run_ops``): the workers listen on no socket of their own and connect only to what Dask
itself listens on. The model is the in-process one, also over TLS comms.
"""
import os
import threading
from unittest import mock

import dask
import dask.array as da
import numpy as np
import psutil
from distributed import Client, LocalCluster
from distributed.comm import get_address_host_port

import oocgbdt

N_CHUNKS, N_FEATURES = 8, 20  # 160,000 rows in 4 partitions
PARAMS = dict(objective="regression", num_leaves=31, min_data_in_leaf=20, n_estimators=20,
              chunk_rows=20_000, partition_rows=40_000, verbose=False)


def _chunk(seed, i, rows, n_features):
    """Storage chunk ``i``: ``rows`` rows of features and their regression labels."""
    rng = np.random.default_rng([seed, i])
    X = rng.normal(size=(rows, n_features)).astype(np.float32)
    y = X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + np.sin(3 * X[:, 3]) + rng.normal(scale=0.3, size=rows)
    return X, y


def _x_block(seed, n_features, block_info=None):
    (start, stop), _ = block_info[None]["array-location"]
    return _chunk(seed, block_info[None]["chunk-location"][0], stop - start, n_features)[0]


def _y_block(seed, n_features, block_info=None):
    (start, stop), = block_info[None]["array-location"]
    return _chunk(seed, block_info[None]["chunk-location"][0], stop - start, n_features)[1]


def _data(n_chunks, chunk_rows, n_features, seed):
    """``(Xd, yd, X, y)``: Dask arrays whose chunks are made on the workers (a small graph, not
    the data; X and y as separate one-layer graphs), one storage chunk of ``chunk_rows`` rows
    per Dask chunk, and the same values made here."""
    rows = (chunk_rows,) * n_chunks
    Xd = da.map_blocks(_x_block, seed, n_features, chunks=(rows, (n_features,)),
                       dtype=np.float32, meta=np.empty((0, 0), np.float32))
    yd = da.map_blocks(_y_block, seed, n_features, chunks=(rows,), dtype=np.float64,
                       meta=np.empty(0))
    parts = [_chunk(seed, i, chunk_rows, n_features) for i in range(n_chunks)]
    return Xd, yd, np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _in_process(params, X, y):
    """The reference model: NumPy input trained in this process on threads (the
    ``LocalExecutor``), never on a cluster that ``train`` could find as the default client."""
    import oocgbdt.dask.training as training
    with mock.patch.object(training, "find_client", lambda client=None: client):
        return oocgbdt.train(params, X, y)


def _connections(proc):
    """``proc``'s inet sockets (psutil renamed ``connections`` to ``net_connections``)."""
    get = getattr(proc, "net_connections", None) or proc.connections
    return get(kind="inet")


def _listening(proc) -> set:
    """``(ip, port)`` of every socket ``proc`` listens on."""
    return {(c.laddr.ip, c.laddr.port) for c in _connections(proc)
            if c.status == psutil.CONN_LISTEN}


def _ports(addresses) -> set:
    return {get_address_host_port(a)[1] for a in addresses}


class _Poller(threading.Thread):
    """Lists, until stopped, the listening sockets of this process and of all its descendants
    (the worker processes and anything they start), and the workers' connected sockets."""

    def __init__(self, worker_pids):
        super().__init__(daemon=True)
        self.worker_pids = set(worker_pids)
        self.listening = {}   # pid -> {(ip, port)} seen listening
        self.connected = {}   # worker pid -> {(local port, remote port)} seen connected
        self.n_polls = 0
        self.error = None
        self._stop_polling = threading.Event()

    def poll(self):
        me = psutil.Process()
        for proc in [me] + me.children(recursive=True):
            try:
                conns = _connections(proc)
            except (psutil.NoSuchProcess, psutil.ZombieProcess):
                continue  # ended between the listing and the look
            self.listening.setdefault(proc.pid, set()).update(
                (c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN)
            if proc.pid in self.worker_pids:
                self.connected.setdefault(proc.pid, set()).update(
                    (c.laddr.port, c.raddr.port) for c in conns if c.raddr)
        self.n_polls += 1

    def run(self):
        try:
            while not self._stop_polling.wait(0.05):
                self.poll()
        except BaseException as e:  # raised by stop(), in the test's thread
            self.error = e

    def stop(self):
        self._stop_polling.set()
        self.join()
        if self.error is not None:
            raise self.error


def _watch_receive():
    """In a worker process: count ``Shard.receive`` calls (the shards' pushes to this worker)
    and list this process's listening sockets at the first and every 20th of them, that is,
    while the boosting loop exchanges histograms."""
    from oocgbdt.runtime.shard import Shard
    original = Shard.receive
    record = {"calls": 0, "listening": set(), "snapshots": 0}

    async def receive(self, ids, values):
        if record["calls"] % 20 == 0:
            record["listening"] |= _listening(psutil.Process())
            record["snapshots"] += 1
        record["calls"] += 1
        return await original(self, ids, values)

    receive.record = record
    Shard.receive = receive


def _receive_record():
    from oocgbdt.runtime.shard import Shard
    return Shard.receive.record


def test_a_fit_on_two_worker_processes_opens_no_socket_of_its_own():
    """2 worker processes, Dask array input: every socket a worker listens on during the fit
    was there before it and is one Dask reports (the worker's comm address and its HTTP
    server, ``services["dashboard"]`` in ``scheduler_info``); the nannies, the scheduler and
    its dashboard listen in this process, which opens nothing new either. The workers connect
    only to those ports. The histograms travel as ``Shard.receive`` actor calls, on both
    workers, and the model is the in-process one (same task bodies, same reduction order:
    bit-identical, so compared exactly)."""
    Xd, yd, X, y = _data(N_CHUNKS, PARAMS["chunk_rows"], N_FEATURES, seed=0)
    expected = _in_process(PARAMS, X, y)  # NumPy input: storage chunks of chunk_rows, as Xd's
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        pids = client.run(os.getpid)
        info = client.scheduler_info()
        workers = info["workers"]
        assert len(workers) == 2 and len(set(pids.values())) == 2
        # What Dask opened, by Dask's own account.
        worker_ports = {pids[a]: _ports([a]) | set(w["services"].values())
                        for a, w in workers.items()}
        caller_ports = (_ports([info["address"]] + [w["nanny"] for w in workers.values()])
                        | set(info["services"].values()))
        every_dask_port = caller_ports.union(*worker_ports.values())

        before = _Poller(pids.values())
        before.poll()
        for pid, ports in worker_ports.items():
            assert {p for _, p in before.listening[pid]} == ports, (pid, before.listening)
        # This process holds the scheduler, its dashboard and the nannies. Only "nothing new
        # during the fit" is asserted here: a cluster another test left open would listen here
        # too, which is none of this fit's doing.
        assert caller_ports <= {p for _, p in before.listening[os.getpid()]}, before.listening

        client.run(_watch_receive)
        during = _Poller(pids.values())
        during.start()
        try:
            booster = oocgbdt.train(PARAMS, Xd, yd, client=client)
        finally:
            during.stop()
        received = client.run(_receive_record)

    assert during.n_polls > 0
    for pid, seen in during.listening.items():
        # Nothing listens that did not before the fit (in any process of the tree) ...
        assert seen <= before.listening.get(pid, set()), (pid, seen, before.listening)
    for pid, ports in worker_ports.items():
        # ... and a worker listens on Dask's ports only, also while shards push histograms.
        assert {p for _, p in during.listening[pid]} <= ports, (pid, during.listening[pid])
        # Every connection of a worker ends at a port Dask listens on (here or on its peer).
        foreign = {(lp, rp) for lp, rp in during.connected[pid]
                   if lp not in every_dask_port and rp not in every_dask_port}
        assert not foreign, (pid, foreign, every_dask_port)
    for address, record in received.items():
        # Both shards took pushed values through distributed's actor calls, and listened on
        # nothing else meanwhile.
        assert record["calls"] > 0 and record["snapshots"] > 0, (address, record)
        assert {p for _, p in record["listening"]} <= worker_ports[pids[address]], \
            (address, record)

    assert len(booster.tree_stats) == PARAMS["n_estimators"]
    assert booster == expected
    np.testing.assert_array_equal(booster.predict(X[:1000], raw_score=True),
                                  expected.predict(X[:1000], raw_score=True))


def test_a_fit_over_tls_comms_gives_the_in_process_model():
    """A LocalCluster whose comms are TLS (``Security.temporary()``): the shards' actor calls
    go through them like every other message (both shards receive pushed values), and the
    2-worker fit on Dask array input gives the in-process model (bit-identical by design,
    compared exactly)."""
    from distributed.security import Security

    from oocgbdt.runtime.shard import Shard
    params = dict(objective="binary", num_leaves=15, n_estimators=10, chunk_rows=5_000,
                  partition_rows=10_000, verbose=False)  # 4 partitions
    Xd, yd, X, y = _data(8, params["chunk_rows"], 10, seed=1)
    yd, y = (yd > 0).astype(float), (y > 0).astype(float)
    expected = _in_process(params, X, y)
    original, received = Shard.receive, []

    async def receive(self, ids, values):  # the workers run in this process
        received.append(self.index)
        return await original(self, ids, values)

    sec = Security.temporary()
    scheduler_option = dask.config.get("scheduler", None)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tls://",
                      security=sec, dashboard_address=":0") as cluster, \
            Client(cluster, security=sec, set_as_default=False) as client, \
            mock.patch.object(Shard, "receive", receive):
        addresses = [client.scheduler.address, *client.scheduler_info()["workers"]]
        booster = oocgbdt.train(params, Xd, yd, client=client)
    assert len(addresses) == 3 and all(a.startswith("tls://") for a in addresses), addresses
    # The shards call each other through their workers' RPC, not actor handles, which would
    # make each in-process worker a default client of its own and, closed over TLS, leave
    # dask's global "scheduler" option set for the rest of the process.
    assert dask.config.get("scheduler", None) == scheduler_option
    assert set(received) == {0, 1}
    assert len(booster.tree_stats) == params["n_estimators"]
    assert booster == expected
    np.testing.assert_array_equal(booster.predict(X, raw_score=True),
                                  expected.predict(X, raw_score=True))


def test_tree_stats_count_the_seconds_a_worker_waits_for_pushed_values():
    """``tree_stats[i]["seconds_peer_wait"]``: with every push held back 50 ms on its way in
    (the receiving side sleeps before it stores the values), each pass of a 2-worker fit
    waits at least that long for the other shard's partial histograms, so a tree's count is
    at least 40 ms per pass, and never more than the tree took; in process nothing is pushed,
    and it is 0."""
    import asyncio

    from oocgbdt.runtime.shard import Shard
    delay = 0.05
    params = dict(objective="binary", num_leaves=4, n_estimators=3, chunk_rows=5_000,
                  partition_rows=10_000, verbose=False)  # 4 partitions, 2 per worker
    Xd, yd, X, y = _data(8, params["chunk_rows"], 10, seed=2)
    yd, y = (yd > 0).astype(float), (y > 0).astype(float)
    original = Shard.receive

    async def receive(self, ids, values):  # the workers run in this process
        await asyncio.sleep(delay)
        return await original(self, ids, values)

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client, \
            mock.patch.object(Shard, "receive", receive):
        booster = oocgbdt.train(params, Xd, yd, client=client)
    assert len(booster.tree_stats) == params["n_estimators"]
    for s in booster.tree_stats:
        assert 0.8 * delay * s["n_passes"] <= s["seconds_peer_wait"] <= s["seconds"], s
    assert all(s["seconds_peer_wait"] == 0.0 for s in _in_process(params, X, y).tree_stats)


def test_a_push_the_other_shard_cannot_take_fails_the_fit_instead_of_hanging():
    """When a shard's push is refused by the other shard (its ``receive`` raises: values that
    cannot be stored), both shards' loops wait for values that will never come unless the
    pushing shard notices the failed push: the fit must raise, naming the error, in seconds."""
    import threading

    from oocgbdt.runtime.shard import Shard
    params = dict(objective="binary", num_leaves=7, n_estimators=3, chunk_rows=2_500,
                  partition_rows=5_000, verbose=False)
    Xd, yd, _, _ = _data(8, params["chunk_rows"], 5, seed=2)
    yd = (yd > 0).astype(float)

    async def refusing(self, ids, values):
        raise MemoryError("injected: the values cannot be stored")

    outcome = {}

    def fit(client):
        try:
            oocgbdt.train(params, Xd, yd, client=client)
            outcome["error"] = None
        except Exception as e:  # the fit's error, whatever its type
            outcome["error"] = e

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client, \
            mock.patch.object(Shard, "receive", refusing):
        t = threading.Thread(target=fit, args=(client,), daemon=True)
        t.start()
        t.join(60)  # a fit of 3 small trees takes about a second; a hang never ends
        assert not t.is_alive(), "the fit hung after a refused push"
    assert outcome["error"] is not None
    assert "injected: the values cannot be stored" in repr(outcome["error"]) + "".join(
        repr(e) for e in _causes(outcome["error"]))


def _causes(error):
    while error is not None:
        error = error.__cause__ or error.__context__
        if error is not None:
            yield error
