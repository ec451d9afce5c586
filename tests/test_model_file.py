"""Model files: written atomically, readable like any new file (the umask decides, not 0o600)."""
import os
import stat

import numpy as np
import pytest

import oocgbdt
from oocgbdt.dask.predict import Booster


@pytest.fixture(scope="module")
def booster():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4)).astype(np.float32)
    return oocgbdt.train(dict(objective="regression", n_estimators=3, num_leaves=4,
                              min_data_in_leaf=5), X, X[:, 0] * 2.0, verbose=False)


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_model_file_mode_follows_the_umask(booster, tmp_path, umask):
    old = os.umask(umask)
    try:
        path = booster.save_model(tmp_path / "m.json")
        control = tmp_path / "plain"
        control.write_text("x")  # what open() gives any new file under this umask
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~umask
    assert stat.S_IMODE(os.stat(path).st_mode) == stat.S_IMODE(os.stat(control).st_mode)
    assert Booster.load_model(path) == booster


def test_a_failed_save_keeps_the_old_model_and_leaves_no_temporary_file(booster, tmp_path,
                                                                        monkeypatch):
    path = booster.save_model(tmp_path / "m.json")
    before = path.read_bytes()

    def broken_replace(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        booster.save_model(path)
    assert path.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["m.json"]
