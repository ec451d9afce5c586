"""Imports go one way: cli/sklearn -> dask -> core -> kernels; kernels and core never import dask."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "oocgbdt"
FORBIDDEN = {
    "kernels": ("dask", "distributed", "zarr", "oocgbdt.core", "oocgbdt.dask", "oocgbdt.sklearn", "oocgbdt.cli"),
    "core": ("dask", "distributed", "zarr", "oocgbdt.dask", "oocgbdt.sklearn", "oocgbdt.cli"),
    "dask": ("oocgbdt.sklearn", "oocgbdt.cli"),
}


def _imported_modules(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_no_upward_imports(layer):
    bad = []
    for path in sorted((PKG / layer).glob("*.py")):
        for mod in _imported_modules(path):
            if any(mod == f or mod.startswith(f + ".") for f in FORBIDDEN[layer]):
                bad.append(f"{path.name} imports {mod}")
    assert not bad, bad


def test_kernels_and_core_run_without_importing_dask():
    code = ("import sys, oocgbdt.kernels.histogram, oocgbdt.kernels.splitting, "
            "oocgbdt.kernels.predict, oocgbdt.kernels.binning, oocgbdt.core.boosting, "
            "oocgbdt.core.booster, oocgbdt.core.bin_mapper; "
            "bad = [m for m in ('dask', 'distributed', 'zarr') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PKG.parent)
