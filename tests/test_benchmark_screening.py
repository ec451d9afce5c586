"""Smoke test of the feature-screening benchmark (``python -m benchmarks.screening --quick``).

The fraud-like task always runs (its data is generated); lightgbm_binary runs only when the
real-data folder is there (the ``shared_data`` fixture; otherwise that part is left out).
"""
import numpy as np
import pytest

pytest.importorskip("lightgbm")
pytest.importorskip("sklearn")

from benchmarks import screening  # noqa: E402
from benchmarks.make_fraud import fraud_structure, make_fraud, make_fraud_train_test  # noqa: E402

OOC_ROWS = ["none", "feature_fraction", "EMA-FS", "S-EMA-FS"]
LGB_ROWS = ["LightGBM none", "LightGBM feature_fraction"]


def _table(section):
    """The first markdown table in ``section`` as a list of {header: cell} dicts."""
    lines = section.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("|"))
    cells = lambda ln: [c.strip() for c in ln.strip().strip("|").split("|")]
    headers = cells(lines[start])
    table = []
    for ln in lines[start + 2:]:  # after the header and the separator
        if not ln.startswith("|"):
            break
        table.append(dict(zip(headers, cells(ln))))
    return table


def _section(out, name):
    start = out.index(f"## {name}:")
    end = out.find("\n## ", start + 1)
    return out[start:end if end >= 0 else None]


def test_quick_run_prints_every_method(request, capsys):
    datasets = ["fraud", "lightgbm_binary"]
    try:
        request.getfixturevalue("shared_data")
    except pytest.skip.Exception:
        datasets = ["fraud"]
    assert screening.main(["--quick", "--datasets", *datasets]) == 0
    out = capsys.readouterr().out

    for name in datasets:
        rows = _table(_section(out, name))
        got = [(r["method"], r["r"]) for r in rows]
        expected = [("none", "-")] + [(m, "0.3") for m in OOC_ROWS[1:]] + \
                   [("LightGBM none", "-"), ("LightGBM feature_fraction", "0.3")]
        assert got == expected, f"{name}: {got}"
        for r in rows:  # times and AUC are numbers
            # "total s" is printed to 0.1 s, so a quick LightGBM run on a quiet machine reads 0.0;
            # s/tree (4 decimals) shows that every row was measured.
            assert float(r["s/tree"]) > 0 and float(r["total s"]) >= 0, r
            assert 0.5 < float(r["test AUC"]) <= 1.0, r
    assert ("shared-setup check: the shared-setup EMA-FS model and oocgbdt.train's give "
            "identical") in out
    targets = out[out.index("## Targets"):]
    assert targets.count("PASS: ") + targets.count("FAIL: ") == 2


def test_make_fraud_is_deterministic_and_fraud_like():
    X, y = make_fraud(5000, 60, informative_share=0.1, seed=3)
    X2, y2 = make_fraud(5000, 60, informative_share=0.1, seed=3)
    assert X.dtype == np.float32 and X.shape == (5000, 60) and X.flags.c_contiguous
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    # the first rows do not depend on n_rows; the test set is other rows
    Xs, ys = make_fraud(1000, 60, informative_share=0.1, seed=3)
    np.testing.assert_array_equal(Xs, X[:1000])
    _, _, Xt, _ = make_fraud_train_test(1000, 1000, 60, 0.1, seed=3)
    assert not np.array_equal(np.nan_to_num(Xt), np.nan_to_num(Xs))
    assert 0.02 < y.mean() < 0.07  # imbalanced
    assert np.isnan(X).any(axis=0).sum() >= 5  # some columns have NaNs
    integer_cols = sum(np.all(np.nan_to_num(X[:, j]) == np.round(np.nan_to_num(X[:, j])))
                       for j in range(60))
    assert integer_cols >= 3  # integer-coded columns
    s = fraud_structure(60, 0.1, seed=3)
    assert len(s.informative) == 6 and len(set(s.informative.tolist())) == 6
