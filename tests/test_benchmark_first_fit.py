"""Smoke test of `python -m benchmarks.first_fit --quick`: the cold, cached and LightGBM runs
each happen in a process of their own and are printed."""
import pytest

pytest.importorskip("lightgbm")


def test_first_fit_benchmark_quick(capsys):
    from benchmarks.first_fit import main
    out = main(["--quick"])
    text = capsys.readouterr().out
    rows = {line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| ")}
    assert set(out["runs"]) <= rows
    assert all(len(v) == 1 for v in out["runs"].values())
    assert text.count("load average") == 2
    med = out["medians"]
    # The cold process compiles the kernels into its empty cache and the next process loads
    # them: the cold first fit takes longer, and longer than its own second fit.
    assert med["cold first fit"] > med["cached first fit"]
    assert med["cold first fit"] > med["warm second fit"]
    assert med["lightgbm fit"] > 0
