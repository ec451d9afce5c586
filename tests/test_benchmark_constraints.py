"""Smoke run of ``benchmarks/constraints.py`` (``--quick``, california_housing only)."""
import pytest

from tests.test_benchmarks import _table_header, _table_rows

pytest.importorskip("lightgbm")


def test_constraints_quick(shared_data, monkeypatch, capsys):
    from benchmarks import constraints
    monkeypatch.setenv("OOCGBDT_DATA", str(shared_data))
    rc = constraints.main(["--quick", "--sets", "california_housing"])
    out = capsys.readouterr().out
    header = _table_header(out, "set")
    rows = _table_rows(out, "set")
    assert len(rows) == 4 and {r[0] for r in rows} == {"california_housing"}
    result, equal = header.index("result"), header.index("trees equal")
    violations = header.index("violations (oocgbdt / LightGBM)")
    assert rc == 0 and all(r[result] == "PASS" for r in rows), out
    assert all(r[equal] == "10/10" for r in rows), out  # LightGBM's trees, every one
    assert [r[violations].split(" / ")[0] for r in rows[:2]] == ["0", "0"], out
