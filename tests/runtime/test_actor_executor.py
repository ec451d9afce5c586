"""Tests of the actor executor (oocgbdt.runtime.actor_executor): same results as the in-process executor,
deferred steps across shards, and no values left behind on the shards."""
import re
import threading
import time

import numpy as np
import pytest
from distributed import Client, LocalCluster

from oocgbdt.core.executor import LocalExecutor, reduce_levels, tree_reduce
from oocgbdt.runtime.actor_executor import ActorExecutor


@pytest.fixture(scope="module")
def client():
    # Not the default client: a fit given no client is then the in-process reference.
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as c:
        yield c


def _in_process(params, X, y):
    """The in-process model (the reference): trained with no client, not even one that a
    worker of an in-process cluster registered in this process, which ``train`` would find."""
    from unittest import mock

    import oocgbdt
    import oocgbdt.dask.training as tr
    with mock.patch.object(tr, "find_client", lambda client=None: client):
        return oocgbdt.train(params, X, y)


def _four_partitions():
    """3,500 rows in 4 partitions (the last of 500 rows, on shard 1 of 2), and small trees."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(3500, 5)).astype(np.float32)
    y = (X[:, 0] + rng.normal(scale=0.5, size=3500) > 0).astype(float)
    params = dict(objective="binary", num_leaves=7, min_data_in_leaf=5, chunk_rows=500,
                  partition_rows=1000, n_estimators=3, verbose=False)
    return X, y, params


def _wait_for_no_actors(c, seconds=10.0) -> int:
    """The shard actors left on ``c``'s workers, once none are (or after ``seconds``). The
    caller's last handles go with the garbage collector (the executor's bookkeeping has
    reference cycles); the scheduler then releases the actors asynchronously."""
    import gc

    def n_actors():
        return sum(c.run(lambda dask_worker: len(dask_worker.state.actors)).values())

    deadline = time.monotonic() + seconds
    while n_actors() and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.1)
    return n_actors()


def _add(parts):
    out = parts[0]
    for p in parts[1:]:
        out = out + p
    return out


def _double(x):
    return 2 * x


def test_steps_across_shards_match_local(client):
    """map/submit/reduce over values spread on two shards give the in-process results, in the
    same summation order (bit-identical float sums)."""
    rng = np.random.default_rng(0)
    values = [rng.normal(size=50) * 10.0 ** rng.integers(-8, 8) for _ in range(11)]
    local = LocalExecutor()
    actors = ActorExecutor(client)
    try:
        refs = actors.map(_double, values)
        assert {r.owner for r in refs} == {0, 1}  # both shards hold partitions
        expect = tree_reduce(local, _add, local.map(_double, values), 3, "k")
        got = actors.gather(tree_reduce(actors, _add, refs, 3, "k"))
        np.testing.assert_array_equal(got, expect)
        # reduce_levels leaves deferred steps on both shards; a final step needs both.
        parts = reduce_levels(actors, _add, refs, 2, "r")
        final = actors.gather(actors.submit(_add, parts))
        np.testing.assert_array_equal(
            final, _add(reduce_levels(local, _add, local.map(_double, values), 2, "r")))
        # A scattered value is usable by every shard.
        s = actors.scatter(np.arange(3.0))
        np.testing.assert_array_equal(actors.gather(actors.submit(_add, [s, s])), [0.0, 2.0, 4.0])
    finally:
        actors.close()


def test_values_computed_on_another_worker_are_fetched_without_a_client_on_the_worker(client):
    """A shard takes a partition computed on the other worker by fetching it over its worker's
    RPC. No client is made on a worker: an in-process worker's client would be this process's
    default client and, once closed, leave Dask's scheduler setting on a cluster that is gone
    (later ``.compute()`` calls then fail with "no Client active")."""
    from distributed.client import _get_global_client
    values = [np.arange(5.0) + i for i in range(4)]
    actors = ActorExecutor(client)
    try:
        n = len(values)
        other = [actors.workers[1 - actors.owner_of_partition(i, n)] for i in range(n)]
        futures = [client.submit(np.add, v, 0.0, workers=[w], pure=False)
                   for v, w in zip(values, other)]
        refs = actors.adopt(futures)
        assert [r.owner for r in refs] == [actors.owner_of_partition(i, n) for i in range(n)]
        for got, want in zip(actors.gather(refs), values):
            np.testing.assert_array_equal(got, want)
        assert _get_global_client() is None
    finally:
        actors.close()


class _Tracked:
    """A value that counts its live instances made by a step (per process).

    Copies unpickled by a gather are not counted: the caller unpickles one shard's values
    while the other shard's map may still run, and in an in-process cluster those copies
    would otherwise count against the shards' limit."""
    alive = 0
    lock = threading.Lock()  # the shards' threads make and drop values at the same time

    def __init__(self, v):
        self.v = v
        with _Tracked.lock:
            type(self).alive += 1

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.copy = True

    def __del__(self):
        if not self.__dict__.get("copy", False):
            with _Tracked.lock:
                type(self).alive -= 1


def _next_gen(x, step):
    assert _Tracked.alive <= n_live_limit[0], _Tracked.alive  # checked while both may exist
    return _Tracked(x.v + step)


n_live_limit = [10**9]


def _value(x):
    return x.v


def test_consumed_inputs_are_freed_as_each_output_is_made(client):
    """With ``consume``, a shard drops each consumed input as soon as its element's output is
    stored: a map that replaces every partition's state holds one old value beside the new ones
    at any time; without it, the old generation lives until the caller's handles die."""
    import gc
    actors = ActorExecutor(client)
    try:
        n = 12
        refs = actors.map(_Tracked, list(range(n)))
        actors.gather(refs)  # maps are deferred: a gather runs them
        actors.wait()  # a gather returns once its values exist; the batch may still be running
        assert _Tracked.alive == n  # processes=False: the shards share this process's counter
        n_live_limit[0] = n + 1  # the inputs, at most one older value beyond them, no more
        refs = actors.map(_next_gen, refs, [1] * n, consume=0)
        assert [v.v for v in actors.gather(refs)] == [i + 1 for i in range(n)]
        actors.wait()
        assert _Tracked.alive == n
        n_live_limit[0] = 10**9
        old = refs
        refs = actors.map(_next_gen, old, [1] * n)  # no consume: both generations live
        actors.gather(refs)
        actors.wait()
        assert _Tracked.alive == 2 * n
        del old
        gc.collect()
        assert actors.gather(actors.map(_value, refs)) == [i + 2 for i in range(n)]  # + drops
        actors.wait()
        assert _Tracked.alive == n
        local = LocalExecutor()
        assert [v.v for v in local.map(_next_gen, [_Tracked(0)], [2], consume=0)] == [2]
    finally:
        n_live_limit[0] = 10**9
        actors.close()
        gc.collect()


def _fail_on_negative(x):
    if x < 0:
        raise ValueError("negative input")
    return x


def test_a_failed_step_raises_on_the_caller_instead_of_hanging(client):
    """A step that fails on one shard, whose value a step on the other shard waits for: the
    caller gets the error (the waiting shard is told), nothing hangs."""
    import concurrent.futures
    actors = ActorExecutor(client)
    try:
        refs = actors.map(_fail_on_negative, [1.0, 2.0, 3.0, -1.0])
        assert [r.owner for r in refs] == [0, 0, 1, 1]
        total = actors.submit(_add, [refs[0], refs[1], refs[3]])  # runs on shard 0
        assert total.owner == 0
        with concurrent.futures.ThreadPoolExecutor(1) as ex:
            fut = ex.submit(actors.gather, total)
            with pytest.raises(Exception, match="negative input|failed"):
                fut.result(timeout=60)
    finally:
        actors.close()


_RELEASE = threading.Event()


def _wait_for_release(x):
    """A step that ends only once the test has its earlier value (or after 60 s)."""
    return _RELEASE.wait(timeout=60)


def _raise_after(x):
    raise ValueError("late failure")


def test_gather_answers_before_the_rest_of_its_batch_has_run(client):
    """The values a gather asks for come back as soon as they exist: a step queued after them
    in the same batch (here one that waits for the test itself) does not hold them back, and
    the batch then runs to its end (in-process cluster: the event is shared)."""
    _RELEASE.clear()
    actors = ActorExecutor(client)
    try:
        value = actors.submit(_double, 21)
        later = actors.submit(_wait_for_release, value)
        assert actors.gather(value) == 42  # before ``later`` can end: it waits for this
        _RELEASE.set()
        assert actors.gather(later) is True  # released by the test, not timed out
    finally:
        _RELEASE.set()
        actors.close()


def test_a_step_failing_after_the_gathered_values_raises_on_wait(client):
    """A batch whose gathered values were answered early, then failed: the error is raised by
    the next wait (and by the next gather), not lost."""
    actors = ActorExecutor(client)
    try:
        value = actors.submit(_double, 4)
        actors.submit(_raise_after, value)
        assert actors.gather(value) == 8
        with pytest.raises(Exception, match="late failure|failed"):
            actors.wait()
        with pytest.raises(Exception, match="late failure|failed"):
            actors.gather(actors.submit(_double, 1))
    finally:
        try:
            actors.close()
        except Exception:
            pass


def test_boost_over_actors_equals_local_and_frees_values(client):
    """The boosting loop over the actor executor grows the same trees as in-process, and the
    shards hold no more values after 8 trees than after 2 (histograms and old chunk states of
    finished trees are dropped)."""
    import oocgbdt
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 6)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(scale=0.5, size=3000) > 0.5).astype(float)
    params = dict(objective="binary", num_leaves=7, min_data_in_leaf=5, chunk_rows=500,
                  verbose=False)
    ref = _in_process(dict(params, n_estimators=6), X, y)
    got = oocgbdt.train(dict(params, n_estimators=6), X, y, client=client)
    np.testing.assert_array_equal(got.predict(X, raw_score=True), ref.predict(X, raw_score=True))

    counts = []
    for n_est in (2, 8):
        import oocgbdt.dask.training as tr
        made = []
        orig = tr.ActorExecutor

        class Spy(orig):
            def close(self):
                import gc
                self.wait()  # finished batches release their arguments...
                gc.collect()
                self.wait()  # ...and the ids that died with them are dropped
                made.append([s.n_values().result() for s in self.shards])
                super().close()

        tr.ActorExecutor = Spy
        try:
            oocgbdt.train(dict(params, n_estimators=n_est), X, y, client=client)
        finally:
            tr.ActorExecutor = orig
        counts.append(made[0])
    assert counts[0] == counts[1], counts


def test_partitions_go_to_shards_in_contiguous_blocks():
    """Every shard gets a contiguous block when there are enough partitions, sizes differ by at
    most one and the larger blocks come last (where the smaller last partition is)."""
    class Two(ActorExecutor):
        def __init__(self, n_workers):  # no cluster needed for the assignment rule
            self.workers = list(range(n_workers))
            self.n_shards = n_workers

    for w in (1, 2, 3, 5):
        b = Two(w)
        for n in range(1, 40):
            owners = [b.owner_of_partition(i, n) for i in range(n)]
            assert owners == sorted(owners)
            sizes = [owners.count(o) for o in range(w)]
            if n >= w:
                assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1
                assert sizes == sorted(sizes)
    assert [Two(2).owner_of_partition(i, 3) for i in range(3)] == [0, 1, 1]


def test_partials_of_one_pass_at_most_between_passes(client, monkeypatch):
    """Between passes a shard holds no partial histograms: the pass's ``(TreeRows, partials)``
    results are consumed by the step that keeps only the row groupings, which runs in the same
    batch as the pass (without ``consume`` they would live until the next call). Checked on
    every shard's loop (SpmdExecutor), after each gather."""
    import oocgbdt
    import oocgbdt.runtime.spmd as act
    rng = np.random.default_rng(2)
    X = rng.normal(size=(4000, 6)).astype(np.float32)
    y = (X[:, 0] + rng.normal(scale=0.5, size=4000) > 0).astype(float)
    held = []

    class Spy(act.SpmdExecutor):
        def gather(self, handles):
            out = super().gather(handles)
            self.wait()
            held.append((self.me, self.shard.n_pass_results()))
            return out

    monkeypatch.setattr(act, "SpmdExecutor", Spy)
    oocgbdt.train(dict(objective="binary", num_leaves=7, min_data_in_leaf=5, chunk_rows=500,
                       partition_rows=1000, n_estimators=3, verbose=False), X, y, client=client)
    assert {me for me, _ in held} == {0, 1} and len(held) > 10, held  # 4 partitions, 2 a shard
    assert max(n for _, n in held) == 0, held


def test_a_pass_moves_one_partial_per_remote_pair(client, monkeypatch):
    """Partials are summed in consecutive pairs first: with 4 partitions in blocks of 2 on 2
    shards, every pass (the root's and each split pass) pushes one summed partial each way as
    step inputs, and nothing else: each shard sums the pass's partials and searches on its own
    copy, so neither split records nor kept histograms move (SpmdExecutor on 2 shards). The model is the one
    trained in-process: neither the grouping nor the copies change a sum."""
    import oocgbdt
    import oocgbdt.runtime.spmd as act
    rng = np.random.default_rng(5)
    X = rng.normal(size=(4000, 6)).astype(np.float32)
    y = (X[:, 0] + rng.normal(scale=0.5, size=4000) > 0).astype(float)
    pushed = {0: [], 1: []}

    def n_pushed(executor):
        return sum(len(op[1]) for ops in executor._ops for op in ops if op[0] == "push")

    class Spy(act.SpmdExecutor):
        def map(self, fn, *iterables, key=None, consume=None):
            if fn.__name__ == "histograms_only":  # a pass begins: count its pushes from here
                pushed[self.me].append(0)
            return super().map(fn, *iterables, key=key, consume=consume)

        gathering = False

        def gather(self, handles):  # its pushes share gathered values, not step inputs
            self.gathering = True
            try:
                return super().gather(handles)
            finally:
                self.gathering = False

        def _push_inputs(self, args, o):  # pushes of step inputs (not gathered values)
            before = n_pushed(self)
            super()._push_inputs(args, o)
            if pushed[self.me] and not self.gathering:
                pushed[self.me][-1] += n_pushed(self) - before

    params = dict(objective="binary", num_leaves=7, min_data_in_leaf=5, chunk_rows=500,
                  partition_rows=1000, n_estimators=3, verbose=False)
    monkeypatch.setattr(act, "SpmdExecutor", Spy)
    got = oocgbdt.train(params, X, y, client=client)
    # Every shard runs the same program, so both see the same pushes (one queued per shard).
    assert pushed[0] == pushed[1] and len(pushed[0]) > 6, pushed
    assert set(pushed[0]) == {2}, pushed
    ref = _in_process(params, X, y)
    np.testing.assert_array_equal(got.predict(X, raw_score=True), ref.predict(X, raw_score=True))


def test_three_shards_share_the_search_by_segments_and_equal_in_process():
    """On 3 workers each shard searches a block of features and the split records are
    exchanged (all-gathered) instead: the same model as in-process, bit for bit, including
    with screening (the selection changes the segments each round) and GOSS."""
    import oocgbdt
    rng = np.random.default_rng(11)
    X = rng.normal(size=(4500, 9)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (X[:, 0] + np.nan_to_num(X[:, 3]) ** 2 + rng.normal(scale=0.5, size=4500) > 0.7)
    y = y.astype(float)
    base = dict(objective="binary", num_leaves=11, min_data_in_leaf=5, chunk_rows=500,
                partition_rows=500, n_estimators=4, verbose=False)
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as c:
        for extra in ({}, dict(data_sample_strategy="goss", feature_fraction=0.7)):
            params = dict(base, **extra)
            got = oocgbdt.train(params, X, y, client=c)
            ref = _in_process(params, X, y)
            np.testing.assert_array_equal(got.predict(X, raw_score=True),
                                          ref.predict(X, raw_score=True))


def test_a_step_failing_inside_every_shards_loop_raises_its_own_error(client, monkeypatch):
    """A step that fails on one shard in the middle of a tree: the caller gets that error (not
    the stop of the other shard, which was waiting for its partials), within seconds, and the
    next fit on the same client is the in-process model."""
    import time

    import oocgbdt
    import oocgbdt.core.histogram_source as hs
    X, y, params = _four_partitions()
    orig = hs.partition_split_many
    calls = []

    def failing(data, *args):
        if data.y.shape[0] == 500:  # the last partition, on shard 1
            calls.append(1)
            if len(calls) == 3:
                raise ValueError("injected failure")
        return orig(data, *args)

    failing.__name__ = "partition_split_many"
    monkeypatch.setattr(hs, "partition_split_many", failing)
    t0 = time.monotonic()
    with pytest.raises(ValueError, match="injected failure"):
        oocgbdt.train(params, X, y, client=client)
    assert time.monotonic() - t0 < 60
    monkeypatch.setattr(hs, "partition_split_many", orig)
    got = oocgbdt.train(params, X, y, client=client)
    ref = _in_process(params, X, y)
    np.testing.assert_array_equal(got.predict(X, raw_score=True), ref.predict(X, raw_score=True))


def test_an_oserror_inside_a_shards_loop_is_its_error_not_a_lost_worker(monkeypatch):
    """An OSError raised by a step of one shard's loop (a disk-cache read, say) is that
    shard's own failure, not a lost connection to its worker: the caller does not say the
    worker was lost, and closes every shard (taken for a lost worker, the shard's actor would
    stay on the worker after the fit)."""
    import oocgbdt
    import oocgbdt.core.histogram_source as hs
    X, y, params = _four_partitions()
    orig = hs.partition_split_many

    def failing(data, *args):
        if data.y.shape[0] == 500:  # the last partition, on shard 1
            raise PermissionError(13, "injected: cannot read the cache")
        return orig(data, *args)

    failing.__name__ = "partition_split_many"
    monkeypatch.setattr(hs, "partition_split_many", failing)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as c:
        with pytest.raises(RuntimeError, match="shard 1 failed: PermissionError") as info:
            oocgbdt.train(params, X, y, client=c)
        assert "was lost" not in str(info.value)
        assert isinstance(info.value.__cause__, PermissionError)
        assert _wait_for_no_actors(c) == 0  # both shards were closed


def test_a_step_placed_everywhere_runs_on_every_shard(client):
    """``submit(place=ALL)``: every shard runs the step on its own copy of the inputs (pushed to
    it), the result is held by all (owner ALL), and a later step on any shard reads it there."""
    from oocgbdt.runtime.handles import ALL
    actors = ActorExecutor(client)
    try:
        refs = actors.map(_double, [1.0, 2.0, 3.0, 4.0])
        assert [r.owner for r in refs] == [0, 0, 1, 1]
        total = actors.submit(_add, refs, place=ALL)
        assert total.owner == ALL
        on_1 = actors.submit(_double, total, place=1)
        on_0 = actors.submit(_double, total, place=0)
        assert actors.gather([total, on_0, on_1]) == [20.0, 40.0, 40.0]
        actors.wait()
        # each shard: its two map outputs, the other shard's two (pushed), total, and its step
        assert [s.n_values().result() for s in actors.shards] == [6, 6]
    finally:
        actors.close()


def test_actors_are_made_after_the_bin_sample_and_the_cache_write(client, monkeypatch,
                                                                   tmp_path):
    """The shards (state that dies with its worker) are made on the workers the cluster has
    once the bins are fitted and the disk cache is written: a worker restarted at its memory
    limit during those phases would otherwise have taken its shard with it, and partitions
    pinned to its old address would wait forever."""
    import zarr

    import oocgbdt
    import oocgbdt.dask.training as tr
    rng = np.random.default_rng(6)
    X = rng.normal(size=(3000, 6)).astype(np.float32)
    y = (X[:, 0] + rng.normal(scale=0.5, size=3000) > 0).astype(float)
    path = tmp_path / "cache"
    events = []
    real_fit = tr.fit_bin_mapper

    def fit(*args, **kwargs):
        events.append("bins")
        return real_fit(*args, **kwargs)

    class Spy(tr.ActorExecutor):
        def __init__(self, *args, **kwargs):
            complete = zarr.open_group(str(path), mode="r").attrs.get("complete", False)
            events.append(("actors", complete))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(tr, "fit_bin_mapper", fit)
    monkeypatch.setattr(tr, "ActorExecutor", Spy)
    oocgbdt.train(dict(objective="binary", num_leaves=7, n_estimators=2, chunk_rows=500,
                       cache="disk", cache_path=str(path), verbose=False), X, y, client=client)
    assert events == ["bins", ("actors", True)], events



def test_lookahead_leaves_auto_splits_ahead_on_several_workers(client):
    """lookahead_leaves=None (the default) resolves to 1 on a 2-worker cluster, where every
    pass costs round trips; the model records it, and its trees are those of
    lookahead_leaves=0 (splitting ahead never changes a tree), in fewer passes. (In process
    it resolves to 0: tests/dask/test_grow_policy.py.)"""
    import oocgbdt
    rng = np.random.default_rng(4)
    X = rng.normal(size=(4000, 6)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(scale=0.5, size=4000) > 0.5).astype(float)
    params = dict(objective="binary", num_leaves=15, min_data_in_leaf=5, chunk_rows=1000,
                  n_estimators=3, verbose=False)
    auto = oocgbdt.train(params, X, y, client=client)
    exact = oocgbdt.train(dict(params, lookahead_leaves=0), X, y, client=client)
    assert auto.params["lookahead_leaves"] == 1 and exact.params["lookahead_leaves"] == 0
    np.testing.assert_array_equal(auto.predict(X, raw_score=True), exact.predict(X, raw_score=True))
    assert all(t.n_leaves == 15 for t in exact.trees)
    assert [s["n_passes"] for s in exact.tree_stats] == [14] * 3
    assert all(s["n_passes"] < 12 for s in auto.tree_stats)


_KILL_SCRIPT = """
import os, signal, sys, threading, time
import numpy as np
import oocgbdt
import oocgbdt.dask.training as training
import oocgbdt.runtime.placement as placement
from distributed import Client, LocalCluster


if __name__ == "__main__":
    phase = sys.argv[1]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20000, 10)).astype(np.float32)
    y = (X[:, 0] + rng.normal(scale=0.5, size=20000) > 0).astype(float)
    params = dict(objective="binary", num_leaves=31, n_estimators=1000, chunk_rows=2000,
                  partition_rows=4000, verbose=False, max_worker_failures=0,
                  checkpoint_path=sys.argv[2])
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as c:
        victim = sorted(c.scheduler_info()["workers"])[1]
        pid = c.run(os.getpid)[victim]

        def kill():  # at once, before the scheduler knows
            os.kill(pid, signal.SIGKILL)
            print("KILLED", flush=True)

        if phase == "boosting":  # while the shards run passes
            threading.Thread(target=lambda: (time.sleep(6), kill()), daemon=True).start()
        elif phase == "loading":  # once the partitions' tasks are pinned to the shards' workers
            placed = placement.compute_placed

            def killing(client, executor, tasks):
                futures = placed(client, executor, tasks)
                kill()
                return futures
            placement.compute_placed = killing
        elif phase == "placed":  # the partitions loaded, before their statistics are read
            from oocgbdt.runtime.actor_executor import ActorExecutor
            waited = ActorExecutor.wait_placed

            def killing_once(self, futures):
                waited(self, futures)
                if not getattr(killing_once, "done", False):
                    killing_once.done = True
                    kill()
            ActorExecutor.wait_placed = killing_once
        else:  # "loaded": the partitions are on the shards, before the loop starts
            load = training.load_partitions

            def killing(*args, **kwargs):
                out = load(*args, **kwargs)
                kill()
                return out
            training.load_partitions = killing
        start = time.time()
        try:
            oocgbdt.train(params, X, y, client=c)
            print("NO ERROR", flush=True)
        except Exception as e:
            print("RAISED", type(e).__name__, round(time.time() - start, 1), str(e)[:800],
                  flush=True)
        if os.path.exists(sys.argv[2]):  # written as the fit gave up
            from oocgbdt.core.checkpoint import read_checkpoint
            print("CHECKPOINT", read_checkpoint(sys.argv[2])[1].rounds, flush=True)
"""


@pytest.mark.parametrize("phase", ["boosting", "loading", "placed", "loaded"])
def test_a_worker_lost_mid_fit_raises_instead_of_hanging(tmp_path, phase):
    """A worker process dies in the middle of a fit that may lose none
    (``max_worker_failures=0``): the fit raises within seconds, naming the lost worker and
    the rounds completed, instead of waiting forever (or raising the closed connection's bare
    ``CommClosedError``). ``boosting``: killed 6 s after the fit starts, while the shards run
    passes (the liveness checks of ``ActorExecutor._result``). ``loading``: killed once the
    partitions' tasks are pinned to the shards' workers (the pinned tasks would wait for the
    dead worker's address). ``placed``: killed once they are loaded, before their bundling
    statistics are read (tasks reading partitions pinned to a dead worker). ``loaded``: killed
    after loading, before the loop (while the workers' heap is released). Each runs in a process of its own, killed with its cluster if
    it hangs. Giving up, the fit writes its checkpoint (``checkpoint_path``) of the rounds it
    completed, when there are any."""
    from tests._scripts import run_script
    out = run_script(tmp_path, _KILL_SCRIPT, phase, tmp_path / "fit.ckpt", timeout=120,
                     what="training after a worker was lost")
    assert "KILLED" in out, out
    # the error says what happened (not the closed connection it was seen through)
    assert "RAISED WorkerLost" in out and "was lost during training" in out, out
    assert "more than max_worker_failures=0; the model had completed" in out, out
    # Giving up writes the checkpoint of the rounds completed (none before the loop).
    done = int(re.search(r"had completed (\d+) round", out).group(1))
    if phase == "boosting":
        assert done > 0 and f"CHECKPOINT {done}\n" in out, out
    else:
        assert done == 0 and "CHECKPOINT" not in out, out


@pytest.mark.parametrize("n_workers", [1, 2])
def test_the_progress_bar_of_a_cluster_fit_is_the_callers(n_workers, monkeypatch):
    """``verbose=True`` on a cluster: the rounds run on the workers (the one worker's task, or
    every shard), but the bar is made and driven here (the loop's rounds arrive as
    ``distributed`` events): it ends at the number of rounds, with the last metric."""
    import oocgbdt
    import oocgbdt.core.boosting as boosting
    import oocgbdt.runtime.progress as progress
    made = []
    orig = boosting.progress_bar

    def recording(total, verbose=True):
        bar = orig(total, verbose)
        made.append((verbose, threading.current_thread() is threading.main_thread(), bar))
        return bar

    monkeypatch.setattr(boosting, "progress_bar", recording)  # the loops' own
    monkeypatch.setattr(progress, "progress_bar", recording)  # the caller's
    rng = np.random.default_rng(8)
    X = rng.normal(size=(3000, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(float)
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as c:
        oocgbdt.train(dict(objective="binary", num_leaves=5, chunk_rows=500, n_estimators=12,
                           verbose=True), X, y, eval_set=[(X, y)], client=c)
    shown = [(here, b) for verbose, here, b in made if verbose]
    assert len(shown) == 1 and shown[0][0], made  # the caller's (this thread), not a worker's
    bar = shown[0][1]
    assert bar.total == 12 and bar.n == 12
    assert "binary_logloss" in str(bar.postfix)


def test_an_event_arriving_after_the_result_does_not_move_the_callers_bar():
    """The loop's last events can reach the caller after its result (they travel through the
    scheduler, the result does not): once ``finish`` has set the bar to the result's rounds, a
    late ``update`` must not move it past them (the bar showed 13/12 once, in a test run)."""
    from oocgbdt.core.boosting import BoostResult
    from oocgbdt.runtime.progress import caller_bar

    class Client:
        def subscribe_topic(self, topic, handler):
            self.handler = handler

        def unsubscribe_topic(self, topic):
            pass

    c = Client()
    with caller_bar(c, 12, True) as handle:
        c.handler((0.0, ["update", 11]))
        result = BoostResult(trees=[object()] * 12, init_score=[0.0], evals_result={})
        handle.finish(result, 1)
        c.handler((0.0, ["update", 1]))  # the loop's last round, late
        bar = handle.bar
        assert bar.n == 12


def test_two_fits_at_once_whose_loops_reach_the_workers_in_opposite_orders(client,
                                                                           monkeypatch):
    """Two fits at once on one client, each fit's loop reaching one worker 1 s after the other
    (fit A's shard 1 late, fit B's shard 0 late): each worker starts the two fits' loops in
    opposite orders. With the loops on the worker's one shared actor thread, each fit would
    wait forever for its shard queued behind the other fit's; each loop has a thread of its
    own. Both fits end, with the in-process model."""
    import concurrent.futures

    import oocgbdt
    import oocgbdt.runtime.actor_executor as act
    late = threading.local()
    orig_call, orig_boost = act.ActorExecutor._call, act.ActorExecutor.boost
    barrier = threading.Barrier(2)

    def delayed_call(self, o, method, *args):
        if method != "boost" or getattr(late, "shard", None) != o:
            return orig_call(self, o, method, *args)
        proxy = concurrent.futures.Future()

        def later():
            time.sleep(1.0)
            f = orig_call(self, o, method, *args)
            f.add_done_callback(lambda f: proxy.set_exception(f.exception()) if f.exception()
                                else proxy.set_result(f.result()))
        threading.Thread(target=later, daemon=True).start()
        return proxy

    def aligned_boost(self, *args, **kwargs):  # both fits loaded: send their loops together
        self.wait()
        barrier.wait(timeout=60)
        return orig_boost(self, *args, **kwargs)

    monkeypatch.setattr(act.ActorExecutor, "_call", delayed_call)
    monkeypatch.setattr(act.ActorExecutor, "boost", aligned_boost)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6000, 8)).astype(np.float32)
    y = (X[:, 0] + rng.normal(scale=0.5, size=6000) > 0).astype(float)
    params = dict(objective="binary", num_leaves=15, n_estimators=10, chunk_rows=1000,
                  partition_rows=1000, verbose=False)
    got = {}

    def fit(name, shard):
        late.shard = shard
        try:
            got[name] = oocgbdt.train(params, X, y, client=client)
        except Exception as e:  # pragma: no cover - reported by the assertion below
            got[name] = e

    threads = [threading.Thread(target=fit, args=(name, shard), daemon=True)
               for name, shard in (("A", 1), ("B", 0))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "the two fits hung"
    ref = _in_process(params, X, y).predict(X, raw_score=True)
    for name in "AB":
        np.testing.assert_array_equal(got[name].predict(X, raw_score=True), ref)


def test_a_client_that_is_not_the_default_trains_on_worker_processes():
    """``train(client=c)`` with ``Client(..., set_as_default=False)`` on 2 worker processes:
    distributed's own lookups (its wait, the shards' handles of each other) find no default
    client unless the fit makes its client the current one; it gives the in-process model."""
    import oocgbdt
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 5)).astype(np.float32)
    y = (X[:, 0] > 0).astype(float)
    params = dict(objective="binary", num_leaves=7, chunk_rows=500, n_estimators=3,
                  verbose=False)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as c:
        got = oocgbdt.train(params, X, y, client=c)
    np.testing.assert_array_equal(got.predict(X, raw_score=True),
                                  _in_process(params, X, y).predict(X, raw_score=True))


def test_fits_on_an_in_process_cluster_leave_no_shard_actors():
    """Each fit's shards hold actor handles of each other (and of themselves), which would
    keep every shard actor registered on its worker after the fit (1, 2, 3 per worker after
    1, 2, 3 fits on a ``processes=False`` cluster); they drop them on close."""
    import oocgbdt
    rng = np.random.default_rng(4)
    X = rng.normal(size=(4000, 5)).astype(np.float32)
    y = (X[:, 0] > 0).astype(float)
    params = dict(objective="binary", num_leaves=7, n_estimators=2, chunk_rows=500,
                  partition_rows=1000, verbose=False)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as c:
        for _ in range(3):
            oocgbdt.train(params, X, y, client=c)
        # The shards' own handles would keep them, whatever the caller freed.
        assert _wait_for_no_actors(c) == 0


def test_a_worker_lost_as_the_shards_are_made_raises_instead_of_hanging(monkeypatch):
    """A worker gone between the caller's look at the cluster and its actor's start (killed as
    a fit starts again after a loss): the actor, pinned to that address, would wait for it
    forever. Making the shards checks the workers while it waits, and raises ``WorkerLost``
    naming that worker (which the fit recovers from) within a liveness period or two."""
    from oocgbdt.runtime.actor_executor import LIVENESS_SECONDS, WorkerLost
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as c:
        before = c.scheduler_info()
        gone = sorted(before["workers"])[1]
        c.retire_workers(workers=[gone])
        deadline = time.monotonic() + 10
        while gone in c.scheduler_info()["workers"] and time.monotonic() < deadline:
            time.sleep(0.05)
        import oocgbdt.runtime.actor_executor as ae
        now = ae.cluster_workers
        looks = []

        def stale(client):  # the first look still lists the worker
            looks.append(1)
            return before["workers"] if len(looks) == 1 else now(client)

        monkeypatch.setattr(ae, "cluster_workers", stale)
        t0 = time.monotonic()
        with pytest.raises(WorkerLost, match="was lost") as info:
            ActorExecutor(c)
        assert info.value.workers == [gone]
        assert time.monotonic() - t0 < 3 * LIVENESS_SECONDS + 5


_PLACED_AGAIN_SCRIPT = """
import os, signal, sys, time
import numpy as np
import dask, dask.array as da
from distributed import Client, LocalCluster, wait
from oocgbdt.runtime.actor_executor import ActorExecutor
from oocgbdt.runtime.placement import compute_placed

if __name__ == "__main__":
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as c:
        x = da.from_array(np.arange(8.0), chunks=2, name="input-x")
        tasks = [dask.delayed(np.sum)(b) for b in x.to_delayed().ravel()]
        executor = ActorExecutor(c)
        victim = executor.workers[1]
        first = compute_placed(c, executor, tasks)
        wait(first)
        chunks = c.compute(list(x.to_delayed().ravel()))  # the input's chunks, held
        wait(chunks)
        executor.close()
        os.kill(c.run(os.getpid)[victim], signal.SIGKILL)
        while victim in c.scheduler_info()["workers"]:
            time.sleep(0.05)
        again = ActorExecutor(c)  # the fit going on: its graph reads the same chunks
        try:
            placed = compute_placed(c, again, tasks)
            wait(placed, timeout=20)
            print("PLACED AGAIN", [float(v) for v in c.gather(placed)], flush=True)
        except TimeoutError:
            print("WAITING", flush=True)
"""


def test_partitions_placed_again_after_a_loss_do_not_wait_for_the_lost_worker(tmp_path):
    """``distributed`` puts the placement of the partitions' tasks on every task of their
    graph, the input's chunks included, and keeps it with their keys. A chunk held on a worker
    that is then lost is computed again; pinned to that worker, it (and the fit going on after
    the loss, whose graph reads it) would wait forever. Placed loosely, the partitions are
    computed again on the workers left, with NumPy's sums of the chunks."""
    from tests._scripts import run_script
    out = run_script(tmp_path, _PLACED_AGAIN_SCRIPT, timeout=120,
                     what="placing partitions again after a loss")
    want = [float(b.sum()) for b in np.split(np.arange(8.0), 4)]
    assert f"PLACED AGAIN {want}" in out, out


def test_the_workers_are_asked_of_the_scheduler_not_read_from_the_clients_cache(client,
                                                                              monkeypatch):
    # The client's periodic refresh keeps cluster totals only ("workers" empty). A refresh
    # landing inside Client.scheduler_info(), between its fetch and its return, made a cluster
    # of two workers look empty, and an executor of no shards. Reproduced here: every fetch of
    # the client's is followed by such a refresh, whose value the client then holds (and, from
    # distributed 2026.11, which returns the value its own call fetched, returns).
    from oocgbdt.runtime.cluster import cluster_workers
    fetch = client._update_scheduler_info

    async def fetch_then_refresh(n_workers=0):
        await fetch(n_workers=n_workers)
        return await fetch(n_workers=0)

    monkeypatch.setattr(client, "_update_scheduler_info", fetch_then_refresh)
    assert client.scheduler_info()["workers"] == {}  # the race, as the client sees it
    assert len(cluster_workers(client)) == 2
    actors = ActorExecutor(client)
    try:
        assert len(actors.workers) == 2
        assert actors.gather(actors.submit(_double, 21)) == 42
    finally:
        actors.close()
