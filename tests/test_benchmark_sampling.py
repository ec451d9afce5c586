"""Smoke run of ``python -m benchmarks.sampling --quick`` (small data, not judged)."""
import io

import pytest

pytest.importorskip("lightgbm")


def test_sampling_benchmark_quick():
    from benchmarks import sampling
    out = io.StringIO()
    lines, _ = sampling.run(list(sampling.QUICK_SIZE), ["process"], quick=True, out=out)
    text = out.getvalue()
    rows = [r.split("|") for r in text.splitlines() if r.startswith("| ")]
    runs = [(r[1].strip(), r[2].strip()) for r in rows if r[1].strip() in sampling.LIBRARIES]
    assert sorted(runs) == sorted((lib, s) for lib in sampling.LIBRARIES
                                  for s in sampling.STRATEGIES)
    assert "load average before" in text and "load average after" in text
    # one verdict per sampled strategy, each with a time ratio and an AUC difference
    assert [line.split()[3] for line in lines] == ["bagging:", "goss:"]
    assert all(line.split()[0] in ("PASS", "FAIL") and "x of none" in line for line in lines)
    assert "not judged" in text
