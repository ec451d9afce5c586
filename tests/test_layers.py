"""Imports go one way: cli/sklearn -> dask -> runtime -> core -> kernels, with io beside runtime.

Every module of the package is checked, relative imports and imports inside functions included:
a layer imports only the layers below it, and kernels, core, sklearn and cli never import dask,
distributed or zarr themselves. The tests of kernels and core import no dask either.
"""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "oocgbdt"
LIBRARIES = ("dask", "distributed", "zarr")
#: Rank of each layer: a module may import oocgbdt modules of a lower rank only (and the shared
#: modules, rank 0). io and runtime share a rank and do not import each other.
RANK = {"_dtypes": 0, "params": 0, "lightgbm_parameters": 0, "datasets": 0, "kernels": 1, "core": 2, "runtime": 3, "io": 3,
        "dask": 4, "plot": 5, "sklearn": 5, "cli": 5, "": 6}  # "": the package's __init__
#: Layers that must not import the Dask libraries themselves.
NO_LIBRARIES = {"_dtypes", "params", "lightgbm_parameters", "datasets", "kernels", "core", "plot", "sklearn", "cli"}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imported_modules(path: Path):
    """Absolute names of every module ``path`` imports (relative imports resolved)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
                if node.module:
                    yield mod
                else:  # from . import x
                    yield from (f"{mod}.{a.name}" for a in node.names)
            else:
                yield node.module


def _modules():
    return sorted(p for p in PKG.rglob("*.py"))


def violations(path: Path) -> list:
    me = _layer(_module_name(path))
    if me not in RANK:
        return [f"{path.relative_to(ROOT)}: in no layer ({me!r}); add it to RANK"]
    bad = []
    for mod in imported_modules(path):
        top = mod.split(".")[0]
        if top in LIBRARIES and me in NO_LIBRARIES:
            bad.append(f"{path.relative_to(ROOT)} imports {mod}")
        if top == "oocgbdt" and "." in mod:
            other = _layer(mod)
            if other == me or RANK.get(other) == 0:
                continue  # its own layer, or a shared module (params, dtypes, datasets)
            if other not in RANK or RANK[other] >= RANK[me]:
                bad.append(f"{path.relative_to(ROOT)} ({me}) imports {mod} ({other})")
    return bad


def test_every_module_imports_downward_only():
    bad = [v for p in _modules() for v in violations(p)]
    assert not bad, "\n".join(bad)


def test_the_rule_sees_relative_and_function_level_imports(tmp_path):
    """The checker itself: an upward relative import inside a function is caught."""
    pkg = tmp_path / "oocgbdt" / "core"
    pkg.mkdir(parents=True)
    bad = pkg / "bad.py"
    bad.write_text("def f():\n    from ..dask import training\n    import distributed\n")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        found = violations(bad)
    finally:
        ROOT = saved
    assert any("imports oocgbdt.dask (dask)" in v for v in found), found
    assert any("imports distributed" in v for v in found), found


@pytest.mark.parametrize("layer", ["kernels", "core"])
def test_tests_of_kernels_and_core_import_no_dask(layer):
    bad = []
    for path in sorted((ROOT / "tests" / layer).rglob("*.py")):
        for mod in imported_modules(path):
            top = mod.split(".")[0]
            if top in LIBRARIES or mod.startswith(("oocgbdt.dask", "oocgbdt.runtime", "oocgbdt.io",
                                                   "oocgbdt.sklearn", "oocgbdt.cli")) \
                    or mod == "oocgbdt":
                bad.append(f"{path.relative_to(ROOT)} imports {mod}")
    assert not bad, "\n".join(bad)


def test_kernels_and_core_run_without_importing_dask():
    code = ("import sys, oocgbdt.kernels.histogram, oocgbdt.kernels.splitting, "
            "oocgbdt.kernels.predict, oocgbdt.kernels.binning, oocgbdt.core.boosting, "
            "oocgbdt.core.booster, oocgbdt.core.bin_mapper, oocgbdt.core.executor; "
            "bad = [m for m in ('dask', 'distributed', 'zarr') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PKG.parent)
