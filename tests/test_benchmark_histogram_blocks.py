"""`python -m benchmarks.histogram_blocks`: the histograms it times are NumPy's, whatever the
cut, and the table marks the fastest cut of each row."""
import numpy as np
import pytest

from benchmarks import histogram_blocks as hb
from oocgbdt.kernels.histogram import build_histogram_naive


@pytest.mark.parametrize("fraction", [0.3, 1.0])
def test_every_cut_adds_what_numpy_adds(fraction):
    X, g, h, offsets = hb.make_bins(3000, 9)
    assert offsets[-1] == 1 + 9 * hb.N_BINS and X.max() < hb.N_BINS
    rows = None
    if fraction < 1.0:
        rows = np.sort(np.random.default_rng(2).choice(3000, 900, replace=False)).astype(np.int32)
    secs, hists = hb.time_cuts(X, g, h, offsets, rows, cuts=(1, 2, 4), repeats=1)
    assert set(secs) == {1, 2, 4} and all(s > 0 for s in secs.values())
    ref = np.zeros((int(offsets[-1]), 2))
    build_histogram_naive(X, offsets, np.arange(9, dtype=np.int64), g, h,
                          np.arange(3000) if rows is None else rows, ref)
    for k, hist in hists.items():
        np.testing.assert_allclose(hist, ref, rtol=1e-12, atol=1e-9, err_msg=f"{k} sub-blocks")
        assert hist[0, 0] == (3000 if rows is None else 900)  # the count row once


def test_quick_run_prints_each_row_with_its_fastest_cut(capsys):
    assert hb.main(["--quick", "--features", "6", "--fractions", "0.5", "1"]) == 0
    text = capsys.readouterr().out
    rows = [line for line in text.splitlines() if line.startswith("| 6 ")]
    assert len(rows) == 2
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        timed = {k: float(c.split()[0]) for k, c in zip(hb.CUTS, cells[2:-1]) if c}
        assert set(timed) == {1, 2, 3, 4, 6}  # no more sub-blocks than columns
        fastest = [k for k, c in zip(hb.CUTS, cells[2:-1]) if c.endswith("*")]
        assert len(fastest) == 1 and timed[fastest[0]] == min(timed.values())
    assert text.count("load average") == 2


def test_bad_arguments_are_refused():
    with pytest.raises(SystemExit):
        hb.parse_args(["--fractions", "0"])
    with pytest.raises(SystemExit):
        hb.parse_args(["--rows", "0"])


def test_quick_fit_run_compares_every_pair_of_bounds_on_the_same_model(capsys, monkeypatch):
    from oocgbdt.core import partition
    seen = []
    real = hb.fit_seconds

    def spy(X, y, trees, bounds):
        out = real(X, y, trees, bounds)
        seen.append(bounds)
        return out

    monkeypatch.setattr(hb, "fit_seconds", spy)
    before = partition.HIST_BLOCK_BYTES, partition.EVERY_ROW_BLOCK_BYTES
    assert hb.main(["--fit", "--quick", "--features", "8"]) == 0
    assert (partition.HIST_BLOCK_BYTES, partition.EVERY_ROW_BLOCK_BYTES) == before  # restored
    assert set(hb.FIT_BOUNDS) <= set(seen)
    text = capsys.readouterr().out
    rows = [line for line in text.splitlines() if line.startswith("| 8 ")]
    assert len(rows) == 1 and rows[0].count("*") == 1


def test_the_bounds_are_set_during_the_fit(monkeypatch):
    """The pair reaches the fit's passes: the cut cache_blocks makes follows it."""
    from oocgbdt.core import partition
    got = []
    real = partition.cache_blocks

    def spy(work, n_columns):
        got.append((work.every_row, partition.HIST_BLOCK_BYTES, partition.EVERY_ROW_BLOCK_BYTES))
        return real(work, n_columns)

    monkeypatch.setattr(partition, "cache_blocks", spy)
    X, y = np.random.default_rng(0).normal(size=(3000, 5)).astype(np.float32), None
    y = (X[:, 0] > 0).astype(float)
    hb.fit_seconds(X, y, 3, (1024, 2048))
    assert got and all(tuple(b) == (1024, 2048) for _, *b in got)
    assert {e for e, *_ in got} == {True, False}  # roots and row lists both cut
