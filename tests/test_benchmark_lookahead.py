"""Smoke run of ``python -m benchmarks.lookahead --quick`` (2 worker processes, small data)."""
import io


def test_lookahead_benchmark_quick():
    from benchmarks import lookahead
    out = io.StringIO()
    results = lookahead.run(20_000, 10, 5, [0, 1, 2], 1, out=out)
    text = out.getvalue()
    assert "| lookahead_leaves |" in text and "machine after" in text
    # 5 trees of 31 leaves: 30 passes each without splitting ahead, fewer with it
    assert results[0]["passes"] == 5 * 30
    assert results[2]["passes"] < results[1]["passes"] < results[0]["passes"]
    # leaves split ahead cost histograms: at least one per split, more when ahead
    assert results[0]["built"] == 5 * 30
    assert results[2]["built"] >= results[1]["built"] >= results[0]["built"]
