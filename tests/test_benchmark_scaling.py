"""The scaling script's model (``benchmarks/scaling.py``, ``docs/scaling.md``): the rows it
counts as histogrammed, and a fit that recovers the constants it was generated from."""
from types import SimpleNamespace

import numpy as np
import pytest

from benchmarks.scaling import fit_model, histogram_bytes, rows_histogrammed


def _tree(internal, left, right, leaves):
    return SimpleNamespace(internal_count=internal, left_child=left, right_child=right,
                           leaf_count=leaves)


def test_rows_histogrammed_counts_every_searched_split_whatever_the_passes():
    # root 100 -> (node 1: 60, leaf 0: 40); node 1 -> (leaf 1: 45, node 2: 15);
    # node 2 -> (leaf 2: 5, leaf 3: 10). Smaller children: 40, 15, 5.
    tree = _tree([100, 60, 15], [1, ~1, ~2], [~0, 2, ~3], [40, 45, 5, 10])
    # A full tree (4 leaves asked): the last split's children are never searched.
    assert rows_histogrammed(tree, n_passes=3) == 100 + 40 + 15
    # With lookahead, fewer passes than splits: the same splits were searched (the old count
    # took the first n_passes - 1 splits only: 100 + 40).
    assert rows_histogrammed(tree, n_passes=2) == 100 + 40 + 15
    # Stopped early (a pass found no split): every split's children were searched.
    assert rows_histogrammed(tree, n_passes=4) == 100 + 40 + 15 + 5
    assert rows_histogrammed(_tree([], [], [], [7]), n_passes=1) == 7


def test_fit_recovers_the_constants_the_times_were_made_from():
    """Per-tree times made by the model's own formula from known constants (and a latency for
    each worker count) give those constants back: the fit's columns match the formula."""
    features, n_bins, cores = 50, 50 * 256, 2
    B = histogram_bytes(n_bins)
    true = dict(cell=1 / 600e6, byte=1 / 3e9, o={1: 1e-4, 2: 2.3e-3, 4: 6e-3})
    rng = np.random.default_rng(0)
    runs = []
    for w in (1, 2, 4):
        for n in (200_000, 400_000):
            parts = 3 if n == 200_000 else 4
            trees = []
            for _ in range(6):
                passes = 30.0 if w == 1 else float(rng.integers(12, 15))
                built = 31.0 if w == 1 else passes + float(rng.integers(17, 25))  # lookahead
                rows_hist = n * rng.uniform(2.3, 2.7)
                par = min(w, cores)
                wall = (rows_hist * features / par * true["cell"]
                        + built * parts * B / par * true["byte"]
                        + passes * true["o"][w])
                trees.append(dict(wall=wall, passes=passes, rows_hist=rows_hist, built=built))
            runs.append(dict(n_workers=w, n_rows=n, n_partitions=parts, trees=trees))
    m, A, b, coef = fit_model(runs, features, n_bins, cores)
    assert m["sec_per_cell"] == pytest.approx(true["cell"], rel=1e-6)
    assert m["sec_per_hist_byte"] == pytest.approx(true["byte"], rel=1e-6)
    for w, o in true["o"].items():
        assert m["overhead"][w] == pytest.approx(o, rel=1e-6)
    # The extrapolation's latency is the most workers with a core each (W = 2 on 2 cores).
    assert m["overhead_many_from"] == 2 and m["overhead_many_workers"] == pytest.approx(2.3e-3)
    np.testing.assert_allclose(A @ coef, b, rtol=1e-9)
