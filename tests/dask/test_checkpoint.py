"""Checkpoints and resume: an interrupted fit resumed from its checkpoint gives the model of the
uninterrupted fit, bit for bit (trees, evaluations, early stopping, feature screening), and that
model is LightGBM's."""
import json
import time

import numpy as np
import pytest

import oocgbdt
from oocgbdt.core.checkpoint import read_checkpoint
from tests._scripts import kill_script, start_script
from tests.conftest import load_lightgbm_tsv
from tests.dask.test_lightgbm_parity import PARAMS, _assert_lightgbm_trees, _lightgbm


class _Interrupted(Exception):
    pass


def _interrupt_at(round_):
    def callback(env):
        if env.iteration == round_:
            raise _Interrupted
    return callback


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + rng.normal(scale=0.8, size=n) > 0).astype(float)
    return X, y


@pytest.mark.parametrize("extra", [
    # bagging and feature_fraction, early stopping ending the fit after the checkpoint
    dict(bagging_fraction=0.7, bagging_freq=1, feature_fraction=0.6, learning_rate=0.5,
         early_stopping_rounds=3),
    # GOSS and EMA feature screening (state carried by the checkpoint)
    dict(data_sample_strategy="goss", feature_screening="ema", screening_warmup=2),
], ids=["bagging-fraction-early-stopping", "goss-ema"])
def test_a_resumed_fit_gives_the_uninterrupted_model(tmp_path, extra):
    """Interrupted after round 7 (checkpoints every 3 rounds: the last at round 6), resumed
    and interrupted again after round 10 (checkpoint of round 9, written by the resumed
    fit), resumed again: the same trees, evaluation history, best iteration and screening
    history as one uninterrupted fit."""
    X, y = _data()
    Xv, yv = _data(800, seed=1)
    params = dict(objective="binary", num_leaves=7, n_estimators=25, chunk_rows=500,
                  verbose=False, **extra)
    whole = oocgbdt.train(params, X, y, eval_set=[(Xv, yv)])
    path = tmp_path / "fit.ckpt"
    with_ckpt = dict(params, checkpoint_path=str(path), snapshot_freq=3)  # LightGBM's name
    with pytest.raises(_Interrupted):
        oocgbdt.train(with_ckpt, X, y, eval_set=[(Xv, yv)], callbacks=[_interrupt_at(7)])
    model, progress, _ = read_checkpoint(path)
    assert progress.rounds == 6 and len(model.trees) == 6
    with pytest.raises(_Interrupted):
        oocgbdt.train(with_ckpt, X, y, eval_set=[(Xv, yv)], resume=True,
                      callbacks=[_interrupt_at(10)])
    assert read_checkpoint(path)[1].rounds == 9
    resumed = oocgbdt.train(with_ckpt, X, y, eval_set=[(Xv, yv)], resume=True)
    if "early_stopping_rounds" in extra:
        assert whole.best_iteration < params["n_estimators"]  # early stopping did end it
    assert len(resumed.trees) == len(whole.trees) and resumed.trees == whole.trees
    assert resumed.best_iteration == whole.best_iteration
    assert resumed.evals_result == whole.evals_result
    assert resumed.best_score == whole.best_score
    assert [h.tolist() for h in resumed.screening_history_ or []] == \
        [h.tolist() for h in whole.screening_history_ or []]
    np.testing.assert_array_equal(resumed.predict(X, raw_score=True),
                                  whole.predict(X, raw_score=True))


def test_a_fit_on_two_workers_checkpoints_the_rounds_it_receives(tmp_path):
    """On 2 workers (every shard runs the loop) the rounds reach the caller as events, and the
    checkpoints are written here from them: a 9-round fit interrupted by a callback at round
    5 (the shards may have trained further meanwhile) is resumed on the cluster to 14 rounds
    (``n_estimators`` counts every round of the fit): the model of one uninterrupted 14-round
    in-process fit."""
    from distributed import Client, LocalCluster
    X, y = _data()
    params = dict(objective="binary", num_leaves=7, chunk_rows=500, bagging_fraction=0.7,
                  bagging_freq=1, verbose=False)
    whole = oocgbdt.train(dict(params, n_estimators=14), X, y)
    path = tmp_path / "fit.ckpt"
    with_ckpt = dict(params, checkpoint_path=str(path), checkpoint_every=2)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as c:
        with pytest.raises(_Interrupted):
            oocgbdt.train(dict(with_ckpt, n_estimators=9), X, y, client=c,
                          callbacks=[_interrupt_at(5)])
        assert 4 <= read_checkpoint(path)[1].rounds <= 9
        resumed = oocgbdt.train(dict(with_ckpt, n_estimators=14), X, y, client=c, resume=True)
    assert resumed.trees == whole.trees


def test_a_file_that_is_not_a_checkpoint_is_never_overwritten(tmp_path):
    """A checkpoint_path holding another file: ValueError before any work, the file intact;
    resume without a checkpoint, or with other parameters or data: a clear error."""
    X, y = _data(600)
    mine = tmp_path / "notes.json"
    mine.write_text('{"mine": true}')
    params = dict(objective="binary", num_leaves=4, n_estimators=4, verbose=False,
                  checkpoint_path=str(mine), checkpoint_every=1)
    with pytest.raises(ValueError, match="is not an oocgbdt checkpoint"):
        oocgbdt.train(params, X, y)
    assert json.loads(mine.read_text()) == {"mine": True}
    path = tmp_path / "fit.ckpt"
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        oocgbdt.train(dict(params, checkpoint_path=str(path)), X, y, resume=True)
    oocgbdt.train(dict(params, checkpoint_path=str(path)), X, y)
    with pytest.raises(ValueError, match="num_leaves: 4 there, 5 here"):
        oocgbdt.train(dict(params, checkpoint_path=str(path), num_leaves=5), X, y, resume=True)
    with pytest.raises(ValueError, match="n_rows=600; this fit has 500"):
        oocgbdt.train(dict(params, checkpoint_path=str(path)), X[:500], y[:500], resume=True)


_CLIENT = """
import sys, time
import oocgbdt
from tests.conftest import load_lightgbm_tsv
from tests.dask.test_lightgbm_parity import PARAMS

def slow(env):  # slow rounds from the 4th on, so that the parent kills the fit mid-way
    if env.iteration >= 3:
        time.sleep(0.3)

X, y = load_lightgbm_tsv(sys.argv[1])
oocgbdt.train(dict(PARAMS, objective="binary", n_estimators=int(sys.argv[3]), chunk_rows=1000,
                   checkpoint_path=sys.argv[2], checkpoint_every=2, verbose=False),
              X, y, callbacks=[slow])
print("FINISHED", flush=True)
"""


def test_a_killed_client_resumes_to_lightgbms_model(tmp_path, shared_data):
    """The process training (in process, NumPy input) is SIGKILLed once a checkpoint of at
    least 4 rounds exists; the fit resumed here from that checkpoint equals the
    uninterrupted fit bit for bit, and LightGBM's model on the same data (the oracle)."""
    n_trees = 12
    source = shared_data / "lightgbm_binary" / "binary.train"
    path = tmp_path / "fit.ckpt"
    proc = start_script(tmp_path, _CLIENT, source, path, n_trees)
    deadline = time.monotonic() + 120
    rounds = 0
    try:
        while rounds < 4 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
            if path.exists():
                rounds = read_checkpoint(path)[1].rounds
    finally:
        out = kill_script(proc)
    assert "FINISHED" not in out and 4 <= rounds < n_trees, (rounds, out)
    X, y = load_lightgbm_tsv(source)
    Xt, _ = load_lightgbm_tsv(shared_data / "lightgbm_binary" / "binary.test")
    params = dict(PARAMS, objective="binary", n_estimators=n_trees, chunk_rows=1000,
                  verbose=False)
    resumed = oocgbdt.train(dict(params, checkpoint_path=str(path), checkpoint_every=2), X, y,
                            resume=True)
    whole = oocgbdt.train(params, X, y)
    assert resumed.trees == whole.trees
    _assert_lightgbm_trees(resumed, _lightgbm("binary", X, y, n_trees), X, Xt, n_trees)


def test_a_resumed_unbiased_lambdarank_fit_keeps_its_position_biases(tmp_path):
    """Unbiased LambdaRank learns position bias factors every round: a fit interrupted after a
    checkpoint and resumed continues from the factors it had, so its model is the
    uninterrupted one, which is LightGBM's with the same positions (restarting the factors at
    zero gives other trees)."""
    from tests.dask.test_ranking import _shown_rows
    lgb = pytest.importorskip("lightgbm")
    X, y, sizes, position = _shown_rows()
    params = dict(objective="lambdarank", num_leaves=7, min_data_in_leaf=5, learning_rate=0.1,
                  lambdarank_position_bias_regularization=0.5, n_estimators=10, verbose=False)
    path = tmp_path / "rank.ckpt"
    with_ckpt = dict(params, checkpoint_path=str(path), checkpoint_every=4)
    with pytest.raises(_Interrupted):
        oocgbdt.train(with_ckpt, X, y, group=sizes, position=position,
                      callbacks=[_interrupt_at(5)])
    assert read_checkpoint(path)[1].rounds == 4
    resumed = oocgbdt.train(with_ckpt, X, y, group=sizes, position=position, resume=True)
    lgb_params = {k: v for k, v in params.items() if k not in ("n_estimators", "verbose")}
    model = lgb.train(dict(lgb_params, enable_bundle=False, deterministic=True, num_threads=1,
                           verbose=-1), lgb.Dataset(X, y, group=sizes, position=position), 10)
    _assert_lightgbm_trees(resumed, model, X, X[::7], 10)
