"""Where the binned rows live: cache='memory' | 'disk' | 'auto'.

The disk cache must give the model of the memory cache bit for bit, be removed when temporary
(also after an error), be kept and reused when named (without binning again), refuse a store of
other data or bin settings and any directory that is not an oocgbdt cache, and leave all of
those untouched."""
import hashlib
import logging
import os
import pickle
import tempfile
import time

import dask.array as da
import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

import oocgbdt
import oocgbdt.core.partition
import oocgbdt.dask.cache as cache_mod
import oocgbdt.dask.partitions as partitions
import oocgbdt.dask.training as training
from oocgbdt.core.partition import partition_bins
from oocgbdt.dask.cache import (PIECE_RAW_BYTES, CachedBins, Piece, cached_bins, cached_partition,
                                cluster_memory_bytes, piece_groups, write_piece)
from oocgbdt.dask.partitions import load_partition
from oocgbdt.io.dataset import open_dataset, write_dataset
from oocgbdt.params import resolve_params
from tests.dask.test_training import _synthetic

PARAMS = dict(objective="binary", num_leaves=15, n_estimators=6, chunk_rows=500,
              partition_rows=1000)


def _snapshot(path):
    """Every file under ``path``: relative name -> (bytes, mtime_ns, sha256)."""
    out = {}
    for d, _, files in os.walk(path):
        for f in files:
            p = os.path.join(d, f)
            st = os.stat(p)
            out[os.path.relpath(p, path)] = (st.st_size, st.st_mtime_ns,
                                             hashlib.sha256(open(p, "rb").read()).hexdigest())
    return out


def _same(a, b, X):
    assert a == b  # trees (every split, threshold and leaf value) and init score
    assert a.evals_result == b.evals_result
    np.testing.assert_array_equal(a.predict(X, raw_score=True), b.predict(X, raw_score=True))


@pytest.fixture(scope="module")
def client():
    """A 1-worker in-process cluster that is NOT the default client: NumPy input without
    ``client=`` still trains in this process."""
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as c:
        yield c


@pytest.fixture
def mkdtemp_log(monkeypatch):
    """Record the temporary directories training creates."""
    made = []
    real = tempfile.mkdtemp

    def mkdtemp(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]
    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    return made


def _write_partition(path, blocks, ys, bm, pieces):
    """Write a partition as the write pass does (pieces: chunk index ranges) and load it."""
    written = [write_piece(os.path.join(path, str(j)), blocks[a:b], bm)
               for j, (a, b) in enumerate(pieces)]
    ref = cached_bins(os.path.dirname(os.path.dirname(path)), os.path.basename(os.path.dirname(path)),
                      int(os.path.basename(path)[1:]), written, blocks[0].shape[1], np.uint8)
    return written, cached_partition(ref, ys, None, 1, (0, 0))


@pytest.mark.parametrize("pieces", [[(0, 2)], [(0, 1), (1, 2)], [(0, 1), (1, 3)]],
                         ids=["one-piece", "two-pieces", "uneven"])
def test_cached_bins_read_back_the_partition_bit_for_bit(tmp_path, pieces):
    X, y = _synthetic(n=2000)
    params = resolve_params({})
    from oocgbdt.dask.binning import fit_bin_mapper
    bm = fit_bin_mapper(da.from_array(X, chunks=(500, 6)), params, lambda a: a.compute())
    n_blocks = pieces[-1][1]
    edges = [0, 500, 1200, 1700][:n_blocks + 1]
    blocks = [X[a:b] for a, b in zip(edges, edges[1:])]
    ys = [y[a:b] for a, b in zip(edges, edges[1:])]
    mem = load_partition(blocks, ys, None, 1, bm)
    path = str(tmp_path / "train" / "p00000")
    (tmp_path / "train").mkdir()
    written, disk = _write_partition(path, blocks, ys, bm, pieces)
    assert [w.rows for w in written] == [sum(len(b) for b in blocks[a:c]) for a, c in pieces]
    assert isinstance(disk.X_binned, CachedBins) and isinstance(mem.X_binned, np.ndarray)
    ref = pickle.loads(pickle.dumps(disk.X_binned))  # travels to other workers
    assert ref.shape == (edges[-1], 6) and ref.dtype == np.uint8 and len(pickle.dumps(ref)) < 500
    got = partition_bins(disk)
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, mem.X_binned)
    np.testing.assert_array_equal(ref.read(), bm.transform(X[:edges[-1]]))  # oracle: bin it whole
    np.testing.assert_array_equal(disk.y, mem.y)
    assert disk.n_rows == edges[-1]
    # A re-run of a piece's task (its worker died after the piece was renamed into place)
    # keeps the piece there, never overwrites it, and leaves no temporary directory behind.
    piece = os.path.join(path, "0")
    before = {f: open(os.path.join(d, f), "rb").read() for d, _, fs in os.walk(piece) for f in fs}
    again = write_piece(piece, [X[:500] * 2], bm)  # other values: must not reach the piece
    after = {f: open(os.path.join(d, f), "rb").read() for d, _, fs in os.walk(piece) for f in fs}
    assert after == before and again.rows == 500
    assert sorted(os.listdir(path)) == sorted(str(j) for j in range(len(pieces)))
    np.testing.assert_array_equal(partition_bins(disk), mem.X_binned)


def test_piece_groups_bound_the_raw_bytes_of_a_write_task():
    row = 400  # 100 float32 features
    per_piece = PIECE_RAW_BYTES // row  # rows that fit in one piece
    chunks = [per_piece // 2] * 5 + [per_piece * 3, 7]
    out = piece_groups(chunks, [(0, 5), (5, 7)], row)
    assert out == [[(0, 2), (2, 4), (4, 5)], [(5, 6), (6, 7)]]  # a too-large chunk stands alone
    for part in out:
        for a, b in part:
            assert b - a == 1 or sum(chunks[a:b]) * row <= PIECE_RAW_BYTES


def test_cached_bins_reject_a_modified_piece(tmp_path):
    X, y = _synthetic(n=1000)
    from oocgbdt.dask.binning import fit_bin_mapper
    bm = fit_bin_mapper(da.from_array(X, chunks=(500, 6)), resolve_params({}), lambda a: a.compute())
    (tmp_path / "train").mkdir()
    path = str(tmp_path / "train" / "p00000")
    _, disk = _write_partition(path, [X[:500], X[500:]], [y[:500], y[500:]], bm, [(0, 1), (1, 2)])
    raw = os.path.join(path, "1", "c", "0", "0")
    assert os.path.getsize(raw) == 500 * 6  # random bins are stored raw
    with open(raw, "ab") as f:
        f.write(b"x")
    with pytest.raises(ValueError, match="piece 1 .* holds 3001 bytes, expected 3000"):
        disk.X_binned.read()


@pytest.mark.parametrize("kind", ["compressible", "random", "zeros"])
def test_pieces_are_compressed_only_when_it_halves_them(tmp_path, kind, monkeypatch):
    """Compressible bins are stored with Blosc; others raw (memory-mapped when a partition is
    one piece); an all-zero piece (Zarr writes no chunk equal to the fill value) is read
    through Zarr."""
    from oocgbdt.dask import cache
    rng = np.random.default_rng(0)
    cols = {"compressible": (rng.random((20_000, 4)) < 0.01).astype(np.uint16) * 7,
            "random": rng.integers(0, 256, (20_000, 4)).astype(np.uint8),
            "zeros": np.zeros((20_000, 4), np.uint8)}[kind]
    # a piece whose "binning" returns cols unchanged
    monkeypatch.setattr(cache, "bin_raw_blocks", lambda blocks, bm, bd: (blocks[0], (0, 0)))
    (tmp_path / "train").mkdir()
    piece_dir = tmp_path / "train" / "p00000" / "0"
    q = write_piece(str(piece_dir), [cols], None)
    ref = CachedBins(str(piece_dir.parent), cols.shape, cols.dtype, ((q.rows, q.raw),))
    got = ref.read()
    np.testing.assert_array_equal(got, cols)
    assert got.dtype == cols.dtype and got.flags.c_contiguous
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(piece_dir)
               for f in fs if f != "zarr.json")
    if kind == "compressible":
        assert cache.compression_ratio(cols) <= cache.COMPRESS_BELOW
        assert not q.raw and size < 0.2 * cols.nbytes
    elif kind == "random":
        assert cache.compression_ratio(cols) > cache.COMPRESS_BELOW
        assert q.raw and size == cols.nbytes
        assert isinstance(got.base, memoryview) or not got.flags.owndata  # mapped, not copied
        assert not got.flags.writeable
    else:
        assert not q.raw and size == 0


@pytest.mark.parametrize("extra", [dict(), dict(data_sample_strategy="goss", learning_rate=0.5)],
                         ids=["plain", "goss"])
def test_disk_equals_memory_in_process_and_temp_dir_is_removed(extra, mkdtemp_log):
    X, y = _synthetic(n=4000)
    Xv, yv = _synthetic(n=1500, seed=1)
    w = np.random.default_rng(2).uniform(0.5, 2.0, size=4000)
    p = dict(PARAMS, **extra)
    mem = oocgbdt.train(dict(p, cache="memory"), X, y, sample_weight=w, eval_set=[(Xv, yv)],
                        verbose=False)
    disk = oocgbdt.train(dict(p, cache="disk"), X, y, sample_weight=w, eval_set=[(Xv, yv)],
                         verbose=False)
    _same(mem, disk, Xv)
    rep = disk.cache_report
    assert rep["mode"] == "disk" and not rep["kept"] and not rep["reused"]
    assert rep["n_partitions"] == {"train": 4, "eval_0": 2}
    assert rep["bytes_binned"] == (4000 + 1500) * 6 and rep["bytes_on_disk"] > 0
    assert rep["seconds_write"] > 0
    assert mem.cache_report["mode"] == "memory" and mem.cache_report["path"] is None
    assert mkdtemp_log == [rep["path"]] and not os.path.exists(rep["path"])


def test_disk_equals_memory_on_two_workers_from_zarr_with_goss(tmp_path):
    from distributed import Client, LocalCluster
    X, y = _synthetic(n=4000)
    Xv, yv = _synthetic(n=1200, seed=1)
    ds = open_dataset(write_dataset(tmp_path / "d", X, y, chunk_rows=500).path)
    p = dict(PARAMS, data_sample_strategy="goss", learning_rate=0.5)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cl, Client(cl) as c:
        mem = oocgbdt.train(dict(p, cache="memory"), ds.X, ds.y, eval_set=[(Xv, yv)], client=c,
                            verbose=False)
        disk = oocgbdt.train(dict(p, cache="disk", cache_path=str(tmp_path / "cache")), ds.X,
                             ds.y, eval_set=[(Xv, yv)], client=c, verbose=False)
        # every partition was on a worker: both workers read the shared store
        assert len(c.scheduler_info()["workers"]) == 2
    local = oocgbdt.train(dict(p, cache="disk"), X, y, eval_set=[(Xv, yv)], verbose=False)
    _same(mem, disk, X)
    _same(mem, local, X)
    assert disk.cache_report["kept"] and os.path.isdir(tmp_path / "cache" / "train" / "p00003")


def test_disk_equals_memory_with_bundling_on_a9a(shared_data):
    """Sparse one-hot input (a9a): the cached training columns are the EFB bundles, the eval
    set's are one per feature (never bundled); they compress."""
    X, y = load_svmlight_file(str(shared_data / "a9a" / "a9a"), n_features=123, zero_based=False,
                              dtype=np.float32)
    y = (y > 0).astype(np.float64)
    Xv, yv = X[-3000:], y[-3000:]
    p = dict(objective="binary", n_estimators=8, chunk_rows=4000, partition_rows=8000)
    mem = oocgbdt.train(dict(p, cache="memory"), X, y, eval_set=[(Xv, yv)], verbose=False)
    disk = oocgbdt.train(dict(p, cache="disk"), X, y, eval_set=[(Xv, yv)], verbose=False)
    _same(mem, disk, Xv.toarray())
    assert disk.bundles_ is not None and len(disk.bundles_) < 40
    assert disk.bundle_report == mem.bundle_report
    rep = disk.cache_report
    assert rep["bytes_binned"] == X.shape[0] * len(disk.bundles_) + 3000 * X.shape[1]
    assert rep["bytes_on_disk"] >= 0.3 * rep["bytes_binned"], rep


def test_named_cache_is_kept_and_reused_without_binning_again(tmp_path, monkeypatch, client):
    X, y = _synthetic(n=4000)
    Xv, yv = _synthetic(n=1200, seed=1)
    path = str(tmp_path / "cache")
    p = dict(PARAMS, cache="disk", cache_path=path)
    first = oocgbdt.train(dict(p, cache_path=tmp_path / "cache"), X, y, eval_set=[(Xv, yv)],
                          verbose=False)  # a pathlib.Path, then the same path as a str
    assert first.cache_report["kept"] and not first.cache_report["reused"]
    before = _snapshot(path)

    def no_binning(*args, **kwargs):
        raise AssertionError("the cache should have been reused")
    monkeypatch.setattr(cache_mod, "write_piece", no_binning)
    monkeypatch.setattr(partitions, "load_partition", no_binning)
    # the same data from another container (Dask on the cluster) and other labels: reused
    second = oocgbdt.train(dict(p, cache="auto"), da.from_array(X, chunks=(500, 6)), y,
                           eval_set=[(Xv, yv)], client=client, verbose=False)
    rep = second.cache_report
    assert rep["mode"] == "disk" and rep["reused"] and rep["seconds_write"] is None
    assert "reusing" in rep["reason"]
    _same(first, second, X)
    flipped = oocgbdt.train(p, X, 1.0 - y, eval_set=[(Xv, yv)], verbose=False)
    assert flipped.cache_report["reused"] and flipped != first
    assert _snapshot(path) == before  # nothing written, nothing touched


@pytest.mark.parametrize("change", ["data", "max_bin", "partition_rows", "eval_set",
                                    "eval_set_middle"])
def test_fingerprint_mismatch_raises_and_leaves_the_store_untouched(tmp_path, change):
    X, y = _synthetic(n=3000)
    Xv, yv = _synthetic(n=600, seed=1)
    path = str(tmp_path / "cache")
    p = dict(PARAMS, cache="disk", cache_path=path)
    oocgbdt.train(p, X, y, eval_set=[(Xv, yv)], verbose=False)
    before = _snapshot(path)
    X2, p2, ev2 = X, p, [(Xv, yv)]
    if change == "data":
        X2 = X.copy()
        X2[1500, 3] += 1.0  # one value in the middle (3,000 rows: every row is in the bin sample)
    elif change == "max_bin":
        p2 = dict(p, max_bin=63)
    elif change == "partition_rows":
        p2 = dict(p, partition_rows=1500)
    elif change == "eval_set":
        ev2 = [(Xv[::-1].copy(), yv)]
    else:  # one value away from either end of the eval set (version 2 hashed only its ends)
        Xv2 = Xv.copy()
        Xv2[300, 2] += 1.0
        ev2 = [(Xv2, yv)]
    expected = {"data": "sampled", "max_bin": "max_bin: cache 255, now 63",
                "partition_rows": "partition boundaries", "eval_set": "first or last rows",
                "eval_set_middle": "the content of an eval set"}[change]
    with pytest.raises(ValueError, match=expected) as err:
        oocgbdt.train(p2, X2, y, eval_set=ev2, verbose=False)
    assert "left untouched" in str(err.value) and path in str(err.value)
    assert _snapshot(path) == before


def test_a_path_that_is_not_an_oocgbdt_cache_raises_before_any_work(tmp_path, monkeypatch):
    X, y = _synthetic(n=1000)

    def no_work(*args, **kwargs):
        raise AssertionError("no work may start")
    monkeypatch.setattr(training, "fit_bin_mapper", no_work)
    precious = tmp_path / "mine"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    a_file = tmp_path / "file.zarr"
    a_file.write_bytes(b"data")
    other_zarr = str(tmp_path / "other.zarr")
    write_dataset(other_zarr, X, y)
    snap = {p: _snapshot(p) for p in (precious, other_zarr)}
    for path in (precious, a_file, other_zarr):
        with pytest.raises(ValueError, match="not an oocgbdt cache"):
            oocgbdt.train(dict(PARAMS, cache="disk", cache_path=str(path)), X, y, verbose=False)
        with pytest.raises(ValueError, match="not an oocgbdt cache"):
            oocgbdt.train(dict(PARAMS, cache_path=str(path)), X, y, verbose=False)  # auto
    assert {p: _snapshot(p) for p in snap} == snap and a_file.read_bytes() == b"data"
    with pytest.raises(ValueError, match="cache='memory'"):
        oocgbdt.train(dict(PARAMS, cache="memory", cache_path=str(tmp_path / "new")), X, y)
    with pytest.raises(TypeError, match="cache_path must be a str, a path-like or None"):
        oocgbdt.train(dict(PARAMS, cache="disk", cache_path=3), X, y)
    assert not (tmp_path / "new").exists()


def test_lookahead_is_recorded_as_used():
    """Splitting ahead is off with a bounded pool and outside exact leaf-wise growth; the model
    recorded 2 there, though 0 was used."""
    X, y = _synthetic(n=2000)
    recorded = {}
    for name, extra in (("unbounded", {}), ("pool", dict(histogram_pool_size=0.01)),
                        ("batched", dict(max_leaves_per_pass=2)),
                        ("depthwise", dict(grow_policy="depthwise", max_depth=3))):
        b = oocgbdt.train(dict(PARAMS, cache="disk", **extra), X, y, verbose=False)
        recorded[name] = b.params["lookahead_leaves"]
    assert recorded == dict(unbounded=2, pool=0, batched=0, depthwise=0)


def test_unusable_cache_paths_raise_before_any_work(tmp_path, monkeypatch):
    X, y = _synthetic(n=1000)

    def no_work(*args, **kwargs):
        raise AssertionError("no work may start")
    monkeypatch.setattr(training, "fit_bin_mapper", no_work)
    store = str(tmp_path / "data.zarr")
    write_dataset(store, X, y)
    a_file = tmp_path / "afile"
    a_file.write_text("keep")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    snap = _snapshot(store)
    cases = {os.path.join(store, "cache"): "inside the Zarr store",
             os.path.join(store, "X", "c"): "inside the Zarr store",
             str(a_file / "sub"): "is a file, not a directory",
             str(tmp_path / "dangling"): "symbolic link to a missing target",
             "": "is empty", "  ": "is empty"}
    for path, expected in cases.items():
        with pytest.raises(ValueError, match=expected):
            oocgbdt.train(dict(PARAMS, cache="disk", cache_path=path), X, y, verbose=False)
    assert _snapshot(store) == snap and a_file.read_text() == "keep"
    assert not (tmp_path / "nowhere").exists()


def test_tilde_in_cache_path_is_the_home_directory(tmp_path, monkeypatch):
    X, y = _synthetic(n=1000)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    b = oocgbdt.train(dict(PARAMS, cache="disk", cache_path="~/c"), X, y, verbose=False)
    assert b.cache_report["path"] == str(tmp_path / "c") and b.cache_report["kept"]
    assert not (tmp_path / "~").exists()


def test_a_fit_that_loses_the_race_for_a_new_cache_path_removes_nothing(tmp_path, monkeypatch):
    """Two fits that both found ``cache_path`` new: the one that claims it second (here, the
    other claims it while this one fits its bins) stops with an error and leaves the other's
    files alone; the other then completes its cache, which a later fit reuses."""
    X, y = _synthetic(n=3000)
    path = tmp_path / "cache"
    real = training.fit_bin_mapper

    def other_fit_claims_meanwhile(*args, **kwargs):
        cache_mod.claim_cache_dir(path)
        (path / "train").mkdir()  # what the other fit has written so far
        return real(*args, **kwargs)
    monkeypatch.setattr(training, "fit_bin_mapper", other_fit_claims_meanwhile)
    with pytest.raises(ValueError, match="another fit started writing a cache there"):
        oocgbdt.train(dict(PARAMS, cache="disk", cache_path=str(path)), X, y, verbose=False)
    assert sorted(os.listdir(path)) == sorted([cache_mod.CLAIM_FILE, "train"])
    monkeypatch.setattr(training, "fit_bin_mapper", real)
    with pytest.raises(ValueError, match="another fit is writing now"):  # inspected: not ours
        oocgbdt.train(dict(PARAMS, cache="disk", cache_path=str(path)), X, y, verbose=False)
    assert sorted(os.listdir(path)) == sorted([cache_mod.CLAIM_FILE, "train"])


def test_claim_cache_dir_admits_one_fit(tmp_path):
    path = tmp_path / "c"
    cache_mod.claim_cache_dir(path)
    with pytest.raises(ValueError, match="another fit started writing"):
        cache_mod.claim_cache_dir(path)
    other = tmp_path / "d"
    other.mkdir()
    (other / "theirs.txt").write_text("x")  # written after the inspection, before the claim
    with pytest.raises(ValueError, match="no longer empty"):
        cache_mod.claim_cache_dir(other)
    assert os.listdir(other) == ["theirs.txt"]


def test_a_completed_cache_holds_no_claim_and_is_reused(tmp_path):
    X, y = _synthetic(n=3000)
    path = tmp_path / "cache"
    p = dict(PARAMS, cache="disk", cache_path=str(path))
    first = oocgbdt.train(p, X, y, verbose=False)
    assert cache_mod.CLAIM_FILE not in os.listdir(path)
    again = oocgbdt.train(p, X, y, verbose=False)
    assert again.cache_report["reused"]
    _same(first, again, X)


@pytest.mark.parametrize("on_cluster", [False, True], ids=["in-process", "cluster"])
@pytest.mark.parametrize("existed", [False, True], ids=["new-path", "empty-dir"])
def test_a_named_cache_whose_writing_failed_is_removed(tmp_path, monkeypatch, existed, on_cluster,
                                                       client):
    """The failing partition stops the others (none writes after the directory is removed)."""
    X, y = _synthetic(n=3000)
    c = client if on_cluster else None
    path = tmp_path / "cache"
    if existed:
        path.mkdir()
    real = cache_mod.write_piece

    def fail_on_second(array_path, *args):
        if "p00001" in array_path:
            raise RuntimeError("disk full")
        return real(array_path, *args)
    monkeypatch.setattr(cache_mod, "write_piece", fail_on_second)
    with pytest.raises(RuntimeError, match="disk full"):
        oocgbdt.train(dict(PARAMS, cache="disk", cache_path=str(path)), X, y, client=c,
                      verbose=False)
    time.sleep(0.5)  # a straggling write would show up here
    assert path.exists() == existed  # a directory the user made stays, emptied
    assert not existed or list(path.iterdir()) == []
    monkeypatch.setattr(cache_mod, "write_piece", real)
    ok = oocgbdt.train(dict(PARAMS, cache="disk", cache_path=str(path)), X, y, client=c,
                       verbose=False)
    assert ok.cache_report["kept"] and not ok.cache_report["reused"]


def test_temp_cache_is_removed_after_an_error_in_training(monkeypatch, mkdtemp_log):
    X, y = _synthetic(n=2000)

    def broken_boost(*args, **kwargs):
        raise RuntimeError("boom")
    monkeypatch.setattr(training, "run_boosting", broken_boost)
    with pytest.raises(RuntimeError, match="boom"):
        oocgbdt.train(dict(PARAMS, cache="disk"), X, y, verbose=False)
    assert len(mkdtemp_log) == 1 and not os.path.exists(mkdtemp_log[0])


def test_auto_picks_memory_when_it_fits_else_disk(client, monkeypatch, caplog, mkdtemp_log):
    X, y = _synthetic(n=3000)
    Xd = da.from_array(X, chunks=(500, 6))
    caplog.set_level(logging.INFO, logger="oocgbdt")
    local = oocgbdt.train(PARAMS, X, y, verbose=False)
    assert local.cache_report["mode"] == "memory" and "NumPy" in local.cache_report["reason"]
    fits = oocgbdt.train(PARAMS, Xd, y, client=client, verbose=False)
    assert fits.cache_report["mode"] == "memory"
    # 18,000 binned bytes > 1e-7 x the cluster's memory (>= 1 GB here): disk
    assert cluster_memory_bytes(client) * 1e-7 < 18_000
    tight = oocgbdt.train(dict(PARAMS, cache_memory_fraction=1e-7), Xd, y, client=client,
                          verbose=False)
    assert tight.cache_report["mode"] == "disk" and tight.cache_report["bytes_binned"] == 18_000
    assert "cache: disk (binned rows 0.000 GB (18000 bytes) > cache_memory_fraction" in caplog.text
    monkeypatch.setattr(cache_mod, "cluster_memory_bytes", lambda c: 36_000)
    assert oocgbdt.train(PARAMS, Xd, y, client=client).cache_report["mode"] == "memory"  # 0.5
    monkeypatch.setattr(cache_mod, "cluster_memory_bytes", lambda c: 35_999)
    small = oocgbdt.train(PARAMS, Xd, y, client=client)
    assert small.cache_report["mode"] == "disk"
    _same(fits, tight, X)
    _same(fits, small, X)
    assert len(mkdtemp_log) == 2 and not any(os.path.exists(p) for p in mkdtemp_log)


def test_cluster_memory_bytes_sums_worker_limits():
    import psutil
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, memory_limit="3GB",
                      dashboard_address=":0") as cl, Client(cl) as c:
        assert cluster_memory_bytes(c) == 6_000_000_000
    # Workers without a limit share their host's memory: counted once per host, not per worker.
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=False, memory_limit=0,
                      dashboard_address=":0") as cl, Client(cl) as c:
        assert cluster_memory_bytes(c) == psutil.virtual_memory().total


def test_cluster_memory_bytes_counts_each_hosts_unlimited_memory_once():
    import psutil
    machine = psutil.virtual_memory().total

    class FakeClient:
        def __init__(self, workers):
            self.workers = workers

        def scheduler_info(self):
            return {"workers": {f"tcp://{h}:{i}": {"host": h, "memory_limit": m}
                                for i, (h, m) in enumerate(self.workers)}}
    two_hosts = [("a", 0), ("a", None), ("b", 0)]
    assert cluster_memory_bytes(FakeClient(two_hosts)) == 2 * machine
    # a limited worker beside unlimited ones on its host: the host still counts once
    mixed = [("a", 0), ("a", 1000), ("c", 2000)]
    assert cluster_memory_bytes(FakeClient(mixed)) == machine + 2000


def test_after_the_write_pass_workers_hold_only_small_partition_state(tmp_path, monkeypatch):
    """The write tasks take one piece of raw rows each and return a Piece record: once they are
    done no raw X and no bins stay in worker memory; the partitions' PartitionData (made from the
    labels) hold references to the bins and the per-row state (8-byte raw scores here)."""
    from distributed import Client, LocalCluster, wait

    from oocgbdt.dask import cache
    from oocgbdt.dask.binning import fit_bin_mapper
    from oocgbdt.dask.cache import create_cache
    from oocgbdt.dask.partitions import group_chunks
    monkeypatch.setattr(cache, "PIECE_RAW_BYTES", 5000 * 50 * 4)  # one 5,000-row chunk a piece
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40_000, 50)).astype(np.float32)  # 8 MB raw, 2 MB binned
    y = rng.normal(size=40_000)
    ds = open_dataset(write_dataset(tmp_path / "d", X, y, chunk_rows=5000).path)
    params = resolve_params({})
    root = str(tmp_path / "cache")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cl, Client(cl) as c:
        bm = fit_bin_mapper(ds.X, params, lambda a: c.compute(a, sync=True))
        groups = group_chunks(ds.X.chunks[0], 10_000)
        create_cache(root, {}, ["train"], 0)
        pieces = cache.write_cache([("train", ds.X, ds.y, None)], {"train": groups}, root,
                                   bm, None, c, "w")["train"]
        assert [[q.rows for q in part] for part in pieces] == [[5000, 5000]] * 4
        deadline = time.monotonic() + 10  # inputs are released asynchronously after the writes
        while any(w.data for w in cl.workers.values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(w.data for w in cl.workers.values())
        tasks = cache.cached_partition_tasks(ds.y, None, groups, pieces, root, "train", 50,
                                             np.uint8, 1, "w")
        futures = c.compute(tasks)
        wait(futures)
        del tasks
        keys = {f.key for f in futures}
        deadline = time.monotonic() + 10
        while True:
            held = {k: v for w in cl.workers.values() for k, v in w.data.items()}
            if set(held) == keys or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert set(held) == keys, [k for k in held if k not in keys][:5]
        for i, data in enumerate(c.gather(futures)):
            assert isinstance(data.X_binned, CachedBins)
            np.testing.assert_array_equal(data.X_binned.read(),
                                          bm.transform(X[i * 10_000:(i + 1) * 10_000]))
        for data in held.values():
            arrays = [data.y, data.raw_score]
            assert sum(a.nbytes for a in arrays) == 10_000 * (4 + 8)


def test_estimator_passes_the_cache_through(tmp_path):
    X, y = _synthetic(n=2000)
    path = str(tmp_path / "c")
    first = oocgbdt.GBDTClassifier(n_estimators=3, cache="disk", cache_path=path).fit(X, y)
    again = oocgbdt.GBDTClassifier(n_estimators=3, cache="disk", cache_path=path).fit(X, y)
    assert first.booster_.cache_report["kept"] and again.booster_.cache_report["reused"]
    np.testing.assert_array_equal(first.predict_proba(X), again.predict_proba(X))
    with pytest.raises(ValueError, match="differs in"):  # another fold's rows
        oocgbdt.GBDTClassifier(n_estimators=3, cache="disk", cache_path=path).fit(X[:1500], y[:1500])


def test_fingerprint_does_not_need_the_bin_sample_hook(tmp_path, monkeypatch):
    """A wrapped fit_bin_mapper that ignores ``on_sample`` (benchmarks share one bin mapper)
    gives the same fingerprint: the sample is read again."""
    X, y = _synthetic(n=2000)
    path = str(tmp_path / "c")
    first = oocgbdt.train(dict(PARAMS, cache="disk", cache_path=path), X, y, verbose=False)
    real = training.fit_bin_mapper
    monkeypatch.setattr(training, "fit_bin_mapper",
                        lambda X, params, compute, on_sample=None: real(X, params, compute))
    again = oocgbdt.train(dict(PARAMS, cache="disk", cache_path=path), X, y, verbose=False)
    assert again.cache_report["reused"]
    _same(first, again, X)


def test_a_rerun_piece_task_reuses_its_piece_and_leaves_no_temporary_files(tmp_path,
                                                                             monkeypatch):
    """Dask re-runs a task whose worker died. A piece task that died mid-write left its
    temporary directory; one that died after renaming its piece into place left the piece.
    Simulated here by running each piece task twice around a leftover: the fit trains the
    model of an undisturbed fit, and the kept cache holds no temporary directory."""
    X, y = _synthetic(n=3000)
    ref = oocgbdt.train(dict(PARAMS, cache="disk"), X, y, verbose=False)
    real = cache_mod.write_piece

    def twice(array_path, *args, **kwargs):
        os.makedirs(array_path + cache_mod.PIECE_TMP_SUFFIX + "dead", exist_ok=True)
        real(array_path, *args, **kwargs)  # the attempt whose worker "died" after the rename
        return real(array_path, *args, **kwargs)

    monkeypatch.setattr(cache_mod, "write_piece", twice)
    path = tmp_path / "cache"
    got = oocgbdt.train(dict(PARAMS, cache="disk", cache_path=str(path)), X, y, verbose=False)
    _same(ref, got, X)
    assert not [p for p in path.rglob("*") if cache_mod.PIECE_TMP_SUFFIX in p.name]
    assert got.cache_report["kept"]
