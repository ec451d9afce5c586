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
    # the ratio is printed to 2 decimals, the medians to 3: as far apart as those roundings
    # allow (a LightGBM slowed by other work gives small ratios, where they matter most)
    a, b = float(ours[4]), float(theirs[4])
    assert abs(ratio - a / b) <= 0.005 + (a / b) * (0.0005 / a + 0.0005 / b) + 1e-9
    # the same trees: on 20k rows the two AUCs agree far inside the target
    assert abs(float(ours[6]) - float(theirs[6])) <= inprocess.MAX_AUC_DIFF
    verdict = [line for line in text.splitlines() if line.startswith("quick_20k_x_20:")]
    assert len(verdict) == 1 and "|AUC difference|" in verdict[0]
    assert "load average before" in text


def test_threads_reach_every_tool(monkeypatch, capsys):
    """``--threads 1`` is every tool's thread count (oocgbdt's and LightGBM's ``num_threads``,
    XGBoost's ``nthread``), warm-up included; a count under 1 is refused before any fit."""
    pytest.importorskip("lightgbm")
    xgb = pytest.importorskip("xgboost")
    import lightgbm as lgb
    import oocgbdt
    from benchmarks import inprocess
    seen = []
    for mod, key in ((oocgbdt, "num_threads"), (lgb, "num_threads"), (xgb, "nthread")):
        def spy(params, *a, _train=mod.train, _key=key, **k):
            seen.append((_key, params.get(_key)))
            return _train(params, *a, **k)
        monkeypatch.setattr(mod, "train", spy)
    assert inprocess.main(["--quick", "--repeats", "1", "--threads", "1",
                           "--tools", "oocgbdt", "lightgbm", "xgboost"]) == 0
    assert "threads per tool: 1" in capsys.readouterr().out
    # a warm-up and one timed fit per tool
    assert sorted(seen) == sorted([("num_threads", 1)] * 4 + [("nthread", 1)] * 2)
    with pytest.raises(SystemExit):
        inprocess.main(["--quick", "--threads", "0"])
