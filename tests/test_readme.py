"""The README's Python examples run as written (in a temporary folder)."""
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_python_examples_run(tmp_path, monkeypatch, capsys):
    blocks = _python_blocks()
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)
    namespace = {}
    for block in blocks:
        if "dask_jobqueue" in block or "tcp://" in block:
            continue  # needs a real cluster; the rest of that block is covered elsewhere
        exec(compile(block, str(README), "exec"), namespace)
    out = capsys.readouterr().out
    assert (tmp_path / "model.json").is_file() and (tmp_path / "houses.zarr").is_dir()
    assert "'rmse'" in out  # the best_score line of the functional example
    booster = namespace["booster"]
    assert 1 <= booster.best_iteration < 500  # early stopping ended training
