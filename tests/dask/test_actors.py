"""Tests of the actor backend (oocgbdt.dask.actors): same results as the in-process backend,
deferred steps across shards, and no values left behind on the shards."""
import numpy as np
import pytest
from distributed import Client, LocalCluster

from oocgbdt.core.backend import LocalBackend, reduce_levels, tree_reduce
from oocgbdt.dask.actors import ActorBackend


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as c:
        yield c


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
    local = LocalBackend()
    actors = ActorBackend(client)
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




def _fail_on_negative(x):
    if x < 0:
        raise ValueError("negative input")
    return x


def test_a_failed_step_raises_on_the_caller_instead_of_hanging(client):
    """A step that fails on one shard, whose value a step on the other shard waits for: the
    caller gets the error (the waiting shard is told), nothing hangs."""
    import concurrent.futures
    actors = ActorBackend(client)
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


def test_boost_over_actors_equals_local_and_frees_values(client):
    """The boosting loop over the actor backend grows the same trees as in-process, and the
    shards hold no more values after 8 trees than after 2 (histograms and old chunk states of
    finished trees are dropped)."""
    import oocgbdt
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 6)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(scale=0.5, size=3000) > 0.5).astype(float)
    params = dict(objective="binary", num_leaves=7, min_data_in_leaf=5, chunk_size=500,
                  verbose=False)
    ref = oocgbdt.train(dict(params, n_estimators=6), X, y)
    got = oocgbdt.train(dict(params, n_estimators=6), X, y, client=client)
    np.testing.assert_array_equal(got.predict(X, raw_score=True), ref.predict(X, raw_score=True))

    counts = []
    for n_est in (2, 8):
        import oocgbdt.dask.training as tr
        made = []
        orig = tr.ActorBackend

        class Spy(orig):
            def close(self):
                import gc
                self.wait()  # finished batches release their arguments...
                gc.collect()
                self.wait()  # ...and the ids that died with them are dropped
                made.append([s.n_values().result() for s in self.shards])
                super().close()

        tr.ActorBackend = Spy
        try:
            oocgbdt.train(dict(params, n_estimators=n_est), X, y, client=client)
        finally:
            tr.ActorBackend = orig
        counts.append(made[0])
    assert counts[0] == counts[1], counts


def test_partitions_go_to_shards_in_contiguous_blocks():
    """Every shard gets a contiguous block when there are enough partitions, sizes differ by at
    most one and the larger blocks come last (where the smaller last partition is)."""
    class Two(ActorBackend):
        def __init__(self, n_workers):  # no cluster needed for the assignment rule
            self.workers = list(range(n_workers))

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


def test_partials_of_one_pass_at_most_between_passes(client):
    """Between passes a shard holds the partial histograms of the last pass only (one
    ``(TreeRows, partials)`` result per partition it owns): the previous pass's are released by
    the next call, before that pass makes its own."""
    import oocgbdt
    import oocgbdt.dask.training as tr
    rng = np.random.default_rng(2)
    X = rng.normal(size=(4000, 6)).astype(np.float32)
    y = (X[:, 0] + rng.normal(scale=0.5, size=4000) > 0).astype(float)
    held = []
    orig = tr.ActorBackend

    class Spy(orig):
        def gather(self, handles):
            out = super().gather(handles)
            self.wait()
            held.append([s.n_pass_results().result() for s in self.shards])
            return out

    tr.ActorBackend = Spy
    try:
        oocgbdt.train(dict(objective="binary", num_leaves=7, min_data_in_leaf=5, chunk_size=500,
                           partition_rows=1000, n_estimators=3, verbose=False), X, y,
                      client=client)
    finally:
        tr.ActorBackend = orig
    assert max(max(h) for h in held) == 2, held  # 4 partitions, 2 per shard
