"""Smoke run of ``python -m benchmarks.passes --quick`` (small data, every dataset and policy).

In-process (the benchmark imports no OpenMP library); about 15 s on the shared 2-core machine.
"""
import io

import pytest

from tests.core.test_grow_policy import _expected_passes_leafwise


def test_passes_benchmark_quick(shared_data, monkeypatch):
    from benchmarks import passes
    monkeypatch.setenv("OOCGBDT_DATA", str(shared_data))
    out = io.StringIO()
    results = passes.run(passes.DATASETS, quick=True, out=out)
    text = out.getvalue()
    assert "quick smoke run" in text
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in text.splitlines()
            if line.startswith("| ")]
    printed = [r[0] for r in rows if r[0] in passes.POLICIES]
    assert printed == list(passes.POLICIES) * len(passes.DATASETS)
    for name in passes.DATASETS:
        assert f"## {name}:" in text
        res = results[name]
        assert set(res) == set(passes.POLICIES)
        for policy, r in res.items():
            k = passes.POLICIES[policy].get("max_leaves_per_pass", 1)
            ahead = passes.POLICIES[policy].get("lookahead_leaves", 0)
            if passes.POLICIES[policy]["grow_policy"] == "leafwise" and r["leaves"] == 31.0 \
                    and ahead == 0:
                # every tree full: the pass count is the formula's
                assert r["passes"] == _expected_passes_leafwise(31, k), (name, policy)
            assert 1 <= r["passes"] <= 30 and r["seconds"] > 0
        # k=1's difference from itself is zero; every other policy has a finite metric
        assert all(v == v for r in res.values() for v in r["metrics"].values())
    base_rows = [r for r in rows if r[0] == passes.BASELINE]
    assert all(r[4] == "1.00x" and r[7] == "+0.0000" for r in base_rows)
    # splitting ahead grows the same trees in fewer passes
    for name in passes.DATASETS:
        exact, ahead = results[name][passes.BASELINE], results[name]["leafwise k=1 ahead 2"]
        assert ahead["metrics"] == exact["metrics"] and ahead["leaves"] == exact["leaves"], name
        assert ahead["passes"] <= exact["passes"], name
    assert results["lightgbm_binary"]["leafwise k=1 ahead 2"]["passes"] < 20
    # lightgbm_binary trees are full: 30 passes for k=1 against at most 6 depth-wise
    lb = results["lightgbm_binary"]
    assert lb["leafwise k=1"]["passes"] == 30.0 and lb["depthwise"]["passes"] <= 6.0
