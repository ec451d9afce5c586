"""Smoke run of ``benchmarks/lightgbm_configs.py --quick``: every LightGBM example
configuration either trains (with both libraries' metric) or is refused for a documented
reason, never an unexpected error; and the shipped conf files parse into LightGBM's names."""
import pytest

pytest.importorskip("lightgbm")

from tests.test_benchmarks import _table_header, _table_rows  # noqa: E402


def test_conf_files_parse_into_lightgbm_parameters():
    from benchmarks import lightgbm_configs as lc
    from oocgbdt.lightgbm_parameters import _LIGHTGBM_ALIASES
    for name in lc.CONFS:
        conf = lc.parse_conf((lc.CONF_DIR / f"{name}.conf").read_text())
        assert conf["task"] == "train" and "data" in conf
        assert all(k in _LIGHTGBM_ALIASES for k in conf), name
    assert lc.parse_conf("a = 1 # note\nb=0.5\nc = true\nd = 1,3,5\ne = l2,auc\n") == \
        {"a": 1, "b": 0.5, "c": True, "d": [1, 3, 5], "e": "l2,auc"}


def test_lightgbm_configs_quick(shared_data, monkeypatch, capsys):
    from benchmarks import lightgbm_configs as lc
    monkeypatch.setenv("OOCGBDT_DATA", str(shared_data))
    rc = lc.main(["--quick"])
    out = capsys.readouterr().out
    header = _table_header(out, "config")
    rows = _table_rows(out, "config")
    assert [r[0] for r in rows] == list(lc.CONFS + lc.GUIDE)
    status, details = header.index("status"), header.index("details")
    assert {r[status] for r in rows} <= {"runs", "refused"}, out
    assert rc == 0
    for r in rows:
        if r[status] == "refused":  # the reason of lightgbm_parameters.py, or a docs page
            assert ": " in r[details] and ("documented" in r[details]
                                           or "=" in r[details].split(":")[0]), r
        else:
            ours, theirs = float(r[header.index("oocgbdt")]), float(r[header.index("LightGBM")])
            assert abs(ours - theirs) <= 0.1 * abs(theirs) + 0.05, r
    by_name = {r[0]: r for r in rows}
    assert by_name["sklearn_example_l1"][status] == "runs"  # eval_metric, early_stopping
    assert by_name["regression"][status] == "runs"  # regression.train.init as init_score
    assert by_name["multiclass_classification"][status] == "runs"  # auc_mu, auc_mu_weights
    for name in ("advanced_example", "plot_example"):  # a fractional categorical column
        assert by_name[name][status] == "runs"
