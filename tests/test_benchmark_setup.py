"""Smoke test of `python -m benchmarks.setup --quick`: it runs end to end and prints every row."""
import pytest

pytest.importorskip("lightgbm")


def test_setup_benchmark_quick(capsys):
    from benchmarks._common import _fmt
    from benchmarks.setup import TARGETS, main
    out = main(["--quick"])
    text = capsys.readouterr().out
    rows = {line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| ")}
    assert {"dense", "one-hot", "bundling on", "bundling off", "LightGBM"} <= rows
    assert set(TARGETS) <= rows
    assert text.count("load average") == 2
    for name in ("dense", "one-hot"):
        s = out["setup"][name]
        assert len(s["runs"]["oocgbdt"]) == len(s["runs"]["lightgbm"]) == 3
        assert s["oocgbdt"] > 0 and s["lightgbm"] > 0
    fit = out["fit"]
    # the same trees as LightGBM's, with or without bundles: the same test AUC
    assert fit["bundling on"]["auc"] == pytest.approx(fit["bundling off"]["auc"], abs=1e-12)
    assert fit["bundling on"]["auc"] == pytest.approx(fit["LightGBM"]["auc"], abs=1e-3)
    rows_by_name = {line.split("|")[1].strip(): line.split("|")[2:-1]
                    for line in text.splitlines() if line.startswith("| ")}
    for name, f in fit.items():
        # each run's set-up ends before its fit does (oocgbdt's: its first round's callback,
        # minus that tree's own seconds, which a wrong sign or timer would push out of range)
        for run in f["runs"]:
            assert 0 < run[2] < run[0]
        # the table shows the medians of each column, and milliseconds per round (5 trees),
        # as the benchmarks' tables print floats
        cells = [c.strip() for c in rows_by_name[name][:4]]
        assert cells == [_fmt(v) for v in (f["seconds"], f["setup"], f["rounds"],
                                           1e3 * f["rounds"] / 5)]
    for part in ("setup", "rounds"):
        assert out["parts"][part] == pytest.approx(
            fit["bundling on"][part] / fit["LightGBM"][part])
        assert f"{part.replace('setup', 'set-up')} {out['parts'][part]:.3f}" in text
    assert set(out["pass"]) == set(TARGETS)
    for k, v in out["ratios"].items():
        assert ("PASS" if v <= TARGETS[k] else "FAIL") in text and out["pass"][k] == (v <= TARGETS[k])
