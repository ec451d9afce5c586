"""Smoke run of ``python -m benchmarks.inprocess --quick``: alternating runs, medians, the
ratio and AUC lines; the AUCs are checked against scikit-learn's on LightGBM's own predictions."""
import pytest


def test_inprocess_benchmark_quick(capsys):
    pytest.importorskip("lightgbm")
    from benchmarks import inprocess
    assert inprocess.main(["--quick", "--repeats", "3"]) == 0
    text = capsys.readouterr().out
    runs = [line for line in text.splitlines() if "repeat" in line]
    # three repeats of both tools, the order reversed on the second one
    assert len(runs) == 6
    assert [r.split()[3] for r in runs] == ["oocgbdt", "lightgbm", "lightgbm", "oocgbdt",
                                            "oocgbdt", "lightgbm"]
    table = [[c.strip() for c in line.split("|")[1:-1]] for line in text.splitlines()
             if line.startswith("| quick")]
    assert [r[3] for r in table] == ["oocgbdt", "lightgbm"]
    ours, theirs = table
    med = sorted(float(x) for x in ours[5].split())[1]
    assert float(ours[4]) == pytest.approx(med, abs=0.006)  # the median of the three runs
    assert ours[7].endswith("x lightgbm")
    ratio = float(ours[7].split("x")[0])
    assert ratio == pytest.approx(float(ours[4]) / float(theirs[4]), rel=0.02)
    # the same trees: on 20k rows the two AUCs agree far inside the target
    assert abs(float(ours[6]) - float(theirs[6])) <= inprocess.MAX_AUC_DIFF
    verdict = [line for line in text.splitlines() if line.startswith("quick_20k_x_20:")]
    assert len(verdict) == 1 and "|AUC difference|" in verdict[0]
    assert "load average before" in text
