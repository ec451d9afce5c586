"""`python -m benchmarks.shared_passes`: every split pass is timed once, shared or alone as the
coin fell, on the model the default rule trains; the table's bands and crossover follow the
timings."""
import numpy as np
import pytest

from benchmarks import shared_passes as sp
from benchmarks.synthetic_1m import make_data


def test_each_split_pass_is_timed_once_both_ways_on_the_default_model(monkeypatch):
    import oocgbdt
    from oocgbdt.core import histogram_source
    from oocgbdt.core.histogram_source import HistogramSource
    X, y, _, _ = make_data(20_000, 10)
    real = HistogramSource._run_pass
    model, log = sp.timed_fit(X, y, 4, np.random.default_rng(0))
    assert HistogramSource._run_pass is real  # restored
    ref = oocgbdt.train(dict(sp.PARAMS, num_iterations=4), X, y)
    assert model == ref
    # one entry per split pass: the passes per tree less the root's
    assert len(log) == sum(s["n_passes"] - 1 for s in ref.tree_stats)
    kinds = {s for _, s, _ in log}
    assert kinds == {True, False}
    assert all(t > 0 for _, _, t in log)
    # the sizes are the default rule's: a pass is shared by it exactly when its cells reach
    # the threshold (checked on the rule's own decisions)
    decided = []

    def spy(self, task, start, finish, iterables, key, consume=None, shared=True):
        if task.__name__ == "partition_split_many":
            decided.append((histogram_source.pass_cells(iterables[4][0],
                                                        len(self.meta.hist_columns)), shared))
        return real(self, task, start, finish, iterables, key, consume, shared)

    threshold = 20_000  # between these passes' sizes, so that the rule decides both ways
    monkeypatch.setattr(histogram_source, "MIN_SHARED_PASS_CELLS", threshold)
    HistogramSource._run_pass = spy
    try:
        oocgbdt.train(dict(sp.PARAMS, num_iterations=4), X, y)
    finally:
        HistogramSource._run_pass = real
    assert {s for _, s in decided} == {True, False}
    assert all(s == (c >= threshold) for c, s in decided)
    assert sorted(c for c, _ in decided) == sorted(c for c, _, _ in log)


def test_pass_cells_count_the_built_children_rows_times_the_columns():
    from oocgbdt.core.histogram_source import pass_cells
    from oocgbdt.core.partition import BUILD_BOTH, BUILD_LEFT, BUILD_RIGHT, SplitPlan
    from oocgbdt.core.split import LeafTotals, SplitInfo

    def split(n_left, n_right):
        return SplitInfo(gain=1.0, feature=0, threshold_bin=0, default_left=False,
                         left=LeafTotals(0.0, 1.0, float(n_left)),
                         right=LeafTotals(0.0, 1.0, float(n_right)))

    plan = SplitPlan((0, 1, 2), (3, 4, 5), (split(30, 70), split(90, 10), split(5, 6)),
                     (BUILD_LEFT, BUILD_RIGHT, BUILD_BOTH))
    # the smaller child where the parent is kept (30, 10), both where it is not (11)
    assert pass_cells(plan, 7) == (30 + 10 + 11) * 7


def test_bands_take_medians_and_the_crossover_is_where_sharing_wins_from_then_on():
    log = []
    for c, shared, t in [(3000, True, 5.0), (3000, False, 1.0)] * 3 + \
            [(3000, True, 9.0)] + \
            [(5000, True, 1.0), (5000, False, 2.0)] * 3 + \
            [(9000, True, 1.0), (9000, False, 3.0)] * 3 + \
            [(9000, False, 0.5)]:
        log.append((c, shared, t))
    rows = sp.bands(log)
    assert [(lo, hi) for lo, hi, *_ in rows] == [(2048, 4096), (4096, 8192), (8192, 16384)]
    assert rows[0][2:] == (4, 3, 5.0, 1.0)       # medians: shared [5, 5, 5, 9], alone [1]
    assert rows[2][2:] == (3, 4, 1.0, 3.0)       # alone [3, 3, 3, 0.5] -> 3.0
    assert sp.crossover(rows) == 4096
    assert sp.crossover(rows[:1]) is None
    # a band with fewer than 3 of either kind is left out
    assert sp.bands([(100, True, 1.0)] * 5 + [(100, False, 1.0)] * 2) == []


def test_quick_run_prints_a_table_and_bad_arguments_are_refused(capsys):
    assert sp.main(["--quick"]) == 0
    text = capsys.readouterr().out
    assert "| cells " in text and "MIN_SHARED_PASS_CELLS" in text
    assert text.count("load average") == 3  # machine line, before, after
    with pytest.raises(SystemExit):
        sp.parse_args(["--repeats", "0"])


def test_blocks_choice_cuts_shared_passes_into_blocks_or_not_on_the_default_model(monkeypatch):
    import oocgbdt
    from oocgbdt.core import histogram_source, partition
    monkeypatch.setattr(histogram_source, "MIN_SHARED_PASS_CELLS", 4000)
    monkeypatch.setattr(partition, "MIN_BLOCK_CELLS", 256)
    X, y, _, _ = make_data(20_000, 10)
    cuts = []
    real_build = histogram_source.build_block
    monkeypatch.setattr(histogram_source, "build_block",
                        lambda work, b, k: cuts.append(k) or real_build(work, b, k))
    real_count = histogram_source.block_count
    model, log = sp.timed_fit(X, y, 4, np.random.default_rng(1), choice="blocks")
    assert histogram_source.block_count is real_count  # restored
    assert model == oocgbdt.train(dict(sp.PARAMS, num_iterations=4), X, y)
    assert {first for _, first, _ in log} == {True, False}
    assert all(c >= 4000 for c, _, _ in log)  # only passes the rule shares
    assert 1 in cuts and max(cuts) >= 2  # whole partitions, and a block per thread


def test_the_onehot_case_times_bundled_sparse_passes_on_the_default_model():
    """``--cases onehot_160k``'s data are CSR one-hot rows (1,205 columns, bundled); its run
    checks each fit against the default rule's model, and is not among the default cases."""
    import scipy.sparse
    X, y = sp.case_data("onehot_160k", 3000, 1205)
    assert scipy.sparse.issparse(X) and X.shape == (3000, 1205) and y.shape == (3000,)
    # every row holds one level of each of the 24 categorical columns' 50
    assert (np.diff(X[:, :1200].tocsr().indptr) == 24).all()
    with pytest.raises(AssertionError, match="1205"):
        sp.case_data("onehot_160k", 3000, 99)
    lines = []
    passes = sp.run_case("onehot_160k", 6000, 1205, 3, 1, 0, log=lines.append)
    assert passes and {s for _, s, _ in passes} == {True, False}
    assert "onehot_160k repeat 1/1" in lines[0]
    assert "onehot_160k" in sp.CASES and "onehot_160k" not in sp.DEFAULT_CASES
    assert sp.parse_args([]).cases == list(sp.DEFAULT_CASES)
