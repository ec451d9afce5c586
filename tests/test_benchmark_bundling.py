"""Smoke test of `python -m benchmarks.bundling --quick`: it runs end to end and its numbers hold."""
import pytest

pytest.importorskip("lightgbm")
pytest.importorskip("xgboost")


def test_bundling_benchmark_quick(shared_data, monkeypatch, capsys):
    monkeypatch.setenv("OOCGBDT_DATA", str(shared_data))
    from benchmarks.bundling import main
    out = main(["--quick"])
    text = capsys.readouterr().out
    for needle in ("histogram building per tree", "X_binned", "LightGBM (bundling on)", "bit-identical",
                   "XGBoost (hist)", "peak RSS"):
        assert needle in text, needle
    insteval, synthetic = out["results"]
    assert insteval["identical"] and synthetic["identical"]  # bundling on/off, first rounds
    # 40 one-hot groups + 20 dense columns: 60 bundles on the full table; on the quick one
    # (160 rows per level) some levels are exclusive with other groups' partial bundles too
    assert 60 <= synthetic["on"]["report"]["n_bundles"] <= 100
    assert synthetic["on"]["report"]["conflict_rows"] == 0
    # the speed-up is a figure the benchmark prints (the full run), not something a unit
    # test times
    assert synthetic["speedup"] > 0
    assert synthetic["on"]["report"]["bytes_bundled"] * 20 < synthetic["on"]["report"]["bytes_binned"]
    # the same model quality as LightGBM on the same data (AUC within 0.01)
    assert abs(synthetic["on"]["metrics"]["auc"] - synthetic["lightgbm"]["metrics"]["auc"]) < 0.01
    assert abs(insteval["on"]["metrics"]["rmse"] - insteval["lightgbm"]["metrics"]["rmse"]) < 0.02
    # training from the sparse store stays below a dense float32 copy of X
    mem = out["memory"]
    assert mem["sparse"] and mem["bundles"] == 6
    assert mem["peak"] < mem["dense_float32_bytes"]
