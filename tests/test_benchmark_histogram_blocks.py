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
