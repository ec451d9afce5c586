"""Shared fixtures: the real-data folder, a small Dask cluster, and real-data loaders; and how
the suite is shared between pytest-xdist's worker processes."""
import os
import tempfile
from pathlib import Path

# pytest-xdist's second and later workers keep numba's compiled kernels in a folder of their own
# (numba is not imported yet: this runs before any test module). numba's cache numbers a
# function's entries as it saves them, and two processes saving different signatures of one
# function at the same moment could each take the same number; the first worker keeps numba's
# default place, beside the sources, shared with every other run.
_XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if _XDIST_WORKER not in (None, "gw0") and "NUMBA_CACHE_DIR" not in os.environ:
    os.environ["NUMBA_CACHE_DIR"] = os.path.join(tempfile.gettempdir(),
                                                 f"oocgbdt-tests-numba-{_XDIST_WORKER}")

import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """How pytest-xdist shares the tests between its workers (``-n 2``, pyproject.toml): a
    module's tests on one worker, so that its module-scoped clusters start once (xdist's
    ``loadfile``), and every test with "slurm" in its id on one worker, so that two tests never
    wait on each other's jobs on the single-node SLURM."""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return "slurm" if "slurm" in nodeid else nodeid.split("::", 1)[0]

    return ModuleScheduling(config, log)


def pytest_collection_modifyitems(items):
    """Run the modules that start clusters, scripts and benchmarks (``tests/test_*.py``,
    ``tests/runtime/``, ``tests/dask/``) before the many short kernel and core tests, each
    module's tests still together and in file order (xdist keeps this order with
    ``--no-loadscope-reorder``): the last modules handed out are then short ones
    (docs/decisions/test-workers.md has the measured runs)."""
    first = ("tests/test_", "tests/runtime/", "tests/dask/")
    items.sort(key=lambda item: 0 if item.nodeid.startswith(first) else 1)


def _shared_data_path() -> Path:
    env = os.environ.get("OOCGBDT_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _no_scheduler_setting_without_a_client():
    """Each test starts with Dask's own scheduler choice. distributed sets ``scheduler`` to
    "dask.distributed" while a default client lives, and can leave it there after the last one
    closes when clients of several clusters close in another order than they opened; a later
    ``.compute()`` would then fail with "no Client active" in a test unrelated to the one that
    left it."""
    yield
    import sys
    if "distributed" not in sys.modules:
        return
    import dask
    from distributed.client import _get_global_client
    if dask.config.get("scheduler", None) == "dask.distributed" and _get_global_client() is None:
        dask.config.set(scheduler=None)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the checkout (or ``$OOCGBDT_DATA``); skips when absent."""
    path = _shared_data_path()
    if not path.is_dir():
        pytest.skip(f"real data folder {path} not found (set OOCGBDT_DATA to its location)")
    return path


@pytest.fixture(scope="module")
def client():
    """An in-process LocalCluster shaped like the embedded one (1 worker, 2 threads).

    Training on several workers (the client-side loop) is covered by the determinism test, which
    requires the same model from 1 and 2 workers.
    """
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as c:
        yield c


def load_lightgbm_tsv(path):
    """LightGBM example files: TSV, no header, label in column 0."""
    import pandas as pd
    a = pd.read_csv(path, sep="\t", header=None).to_numpy(dtype=np.float64)
    return a[:, 1:].astype(np.float32), a[:, 0]


def load_pmlb(path, label="target"):
    import pandas as pd
    df = pd.read_csv(path, sep="\t")
    y = df.pop(label).to_numpy(dtype=np.float64)
    return df.to_numpy(dtype=np.float32), y


def train_test_split_rows(X, y, test_fraction=0.2, seed=0):
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(y))
    n_test = int(len(y) * test_fraction)
    te, tr = perm[:n_test], perm[n_test:]
    return X[tr], y[tr], X[te], y[te]
