"""The README's Python examples run as written (in a temporary folder), its set-up commands are
the two the project promises, and its layout and examples match the tree."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def _section(title: str) -> str:
    """The text of the README's ``## title`` section (up to the next ``## `` heading)."""
    text = README.read_text()
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M)
    assert m, f"README.md has no '## {title}' section"
    return m.group(1)


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


def test_the_two_setup_commands_are_unchanged():
    blocks = re.findall(r"```bash\n(.*?)```", _section("Set-up: two commands"), flags=re.S)
    assert [b.strip() for b in blocks] == ["pip install . && oocgbdt quickstart",
                                           'pip install ".[test]" && python -m pytest -q']


def test_layout_names_every_subpackage():
    layout = _section("Layout")
    subpackages = sorted(p.parent.name for p in (ROOT / "oocgbdt").glob("*/*.py"))
    missing = [s for s in sorted(set(subpackages)) if s != "datasets"
               and f"`oocgbdt/{s}/`" not in layout]
    assert not missing, f"README's Layout does not name oocgbdt/{missing}"
    for module in ("oocgbdt/sklearn.py", "oocgbdt/cli.py"):
        assert module in layout


def test_examples_section_names_every_example():
    examples = sorted(p.name for p in (ROOT / "examples").glob("*.py"))
    assert examples, "examples/ holds no script"
    section = _section("Examples")
    named = set(re.findall(r"`([\w-]+\.py)`", section))
    assert named == set(examples), (f"README names {sorted(named)}, examples/ holds {examples}")
