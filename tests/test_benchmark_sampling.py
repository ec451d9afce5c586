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


def test_floor_lines_fit_fixed_share():
    """A tree of 0.4 s fixed and 0.6 s over every row: a 5% bag takes 0.43 s, and a 30% sample
    0.4 + 0.3 * 0.6 = 0.58 of an unsampled tree."""
    from benchmarks import sampling
    res = {}
    for lib, scale in zip(sampling.LIBRARIES, (1.0, 2.0)):
        res[(lib, "none")] = {"mean": 1.0 * scale}
        res[(lib, "bagging_floor")] = {"mean": (0.4 + 0.05 * 0.6) * scale}
    lines = sampling.floor_lines(res)
    assert len(lines) == len(sampling.LIBRARIES)
    for line in lines:
        assert "0.430x of no sampling" in line
        assert "fixed share 0.400" in line
        assert "would take 0.580x" in line


def test_sampling_benchmark_quick_floor():
    from benchmarks import sampling
    out = io.StringIO()
    sampling.run(list(sampling.QUICK_SIZE), ["process"], quick=True, out=out, floor=True)
    text = out.getvalue()
    rows = [r.split("|") for r in text.splitlines() if r.startswith("| ")]
    floors = [r[1].strip() for r in rows if r[2].strip() == "bagging_floor"]
    assert sorted(floors) == sorted(sampling.LIBRARIES)
    assert sum("fixed share" in line for line in text.splitlines()) == len(sampling.LIBRARIES)
