"""Smoke runs of the benchmark scripts (``--quick``), in-process through their ``main(argv)``."""
import re

import pytest

pytest.importorskip("lightgbm")
pytest.importorskip("psutil")


def _table_header(out, first_cell):
    """Cells of the markdown table header line that starts with ``| first_cell``."""
    for line in out.splitlines():
        if re.match(rf"^\|\s*{re.escape(first_cell)}\s*\|", line):
            return [c.strip() for c in line.strip().strip("|").split("|")]
    raise AssertionError(f"no table starting with {first_cell!r} in:\n{out}")


def _table_rows(out, first_cell):
    lines = out.splitlines()
    i = next(i for i, l in enumerate(lines) if re.match(rf"^\|\s*{re.escape(first_cell)}\s*\|", l))
    rows = []
    for line in lines[i + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def test_compare_lightgbm_quick(shared_data, monkeypatch, capsys):
    from benchmarks import compare_lightgbm
    monkeypatch.setenv("OOCGBDT_DATA", str(shared_data))
    rc = compare_lightgbm.main(["--quick"])
    out = capsys.readouterr().out
    header = _table_header(out, "dataset")
    for col in ("metric", "oocgbdt", "LightGBM", "difference", "tolerance", "result",
                "oocgbdt s", "LightGBM s"):
        assert col in header, (col, header)
    rows = _table_rows(out, "dataset")
    assert [r[0] for r in rows] == list(compare_lightgbm.QUICK_DATASETS)
    result = header.index("result")
    assert all(r[result] == "PASS" or r[result].startswith("FAIL") for r in rows)
    assert rc == (1 if any(r[result] != "PASS" for r in rows) else 0)
    assert rc == 0, out  # same parameters and data: parity is expected even at 10 rounds


def test_synthetic_quick(capsys):
    from benchmarks import synthetic_1m
    # --quick with fewer rows: OpenMP libraries slow down badly on a busy 2-core machine
    rc = synthetic_1m.main(["--quick", "--rows", "30000"])
    out = capsys.readouterr().out
    assert rc == 0
    header = _table_header(out, "model")
    for col in ("fit s", "peak MB (over baseline)", "test AUC", "time / LightGBM",
                "memory / LightGBM", "AUC - LightGBM"):
        assert col in header, (col, header)
    rows = _table_rows(out, "model")
    assert {r[0] for r in rows} == {"oocgbdt", "lightgbm", "xgboost", "scikit-learn"}
    auc = header.index("test AUC")
    assert all(0.7 < float(r[auc]) <= 1.0 for r in rows), rows
    split = _table_header(out, "")
    for col in ("histogram", "find", "reduce", "overhead", "tree wall"):
        assert col in split, (col, split)


def test_tree_time_split_from_task_stream():
    """The multi-worker path: task-stream records are grouped per tree and per category."""
    from benchmarks.synthetic_1m import task_category, tree_time_split

    def rec(key, dur):
        return dict(key=key, startstops=({"action": "compute", "start": 0.0, "stop": dur},))

    assert task_category("oocgbdt-ab12-t3-root-0") == "hist"
    assert task_category("oocgbdt-ab12-t3-p4-route-7") == "hist"
    assert task_category("oocgbdt-ab12-t3-find-root") == "find"
    assert task_category("oocgbdt-ab12-t3-p4-find") == "find"
    assert task_category("oocgbdt-ab12-t3-sum-root-l0-1") == "reduce"
    assert task_category("oocgbdt-ab12-t3-hist-root") == "reduce"
    assert task_category("oocgbdt-ab12-t3-p4-sibling") == "reduce"
    assert task_category("oocgbdt-ab12-t3-apply-2") == "apply"
    records = [rec("k-t0-root-0", 0.4), rec("k-t0-root-1", 0.4), rec("k-t0-find-root", 0.1),
               rec("k-t0-hist-root", 0.05), rec("k-t1-p1-route-0", 0.2), rec("k-grad-0-1", 9.0)]
    stats = [dict(seconds=1.0, n_passes=1, seconds_waiting=0.9, n_leaves=2),
             dict(seconds=0.5, n_passes=1, seconds_waiting=0.4, n_leaves=2)]
    split, _ = tree_time_split(records, stats, n_threads=2)
    assert split[0]["hist"] == pytest.approx(0.4) and split[0]["find"] == pytest.approx(0.1)
    assert split[0]["reduce"] == pytest.approx(0.05)
    assert split[0]["overhead"] == pytest.approx(1.0 - 0.4 - 0.1 - 0.05)
    assert split[1]["hist"] == pytest.approx(0.1)


def test_categorical_quick(shared_data, monkeypatch, capsys):
    from benchmarks import categorical
    monkeypatch.setenv("OOCGBDT_DATA", str(shared_data))
    rc = categorical.main(["--quick"])
    out = capsys.readouterr().out
    header = _table_header(out, "set")
    rows = _table_rows(out, "set")
    assert [r[0] for r in rows][0] == "adult" and rows[-1][0] == "nycflights13"
    result, equal = header.index("result"), header.index("trees equal")
    assert rc == 0 and all(r[result] == "PASS" for r in rows), out
    # same data and parameters: LightGBM's trees, every one
    assert all(r[equal].split("/")[0] == r[equal].split("/")[1] for r in rows), out
def test_objectives_quick(shared_data, monkeypatch, capsys):
    from benchmarks import objectives
    monkeypatch.setenv("OOCGBDT_DATA", str(shared_data))
    rc = objectives.main(["--quick", "--only", "quantile", "poisson"])
    out = capsys.readouterr().out
    rows = _table_rows(out, "dataset")
    assert [(r[0], r[1]) for r in rows] == [("california_housing", "quantile"),
                                            ("house_16H", "quantile"), ("nycflights13", "poisson")]
    assert rc == 0 and all(r[6] == "pass" for r in rows)


def test_continued_quick(shared_data, monkeypatch, capsys):
    from benchmarks import continued
    monkeypatch.setenv("OOCGBDT_DATA", str(shared_data))
    rc = continued.main(3)
    out = capsys.readouterr().out
    assert rc == 0 and "3 + 3 rounds == 6 rounds: yes" in out, out
