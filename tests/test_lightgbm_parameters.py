"""Every LightGBM parameter is implemented, accepted with a stated meaning, or refused with a
reason; docs/parameters.md is generated from the tables. Oracle: the installed LightGBM's own
list of parameters and aliases (its C API, through ``_ConfigAliases``)."""
import warnings
from pathlib import Path

import pytest

from oocgbdt import lightgbm_parameters as lp
from oocgbdt.params import ALIASES, PARAMETERS, resolve_params

lightgbm = pytest.importorskip("lightgbm")
DOC = Path(__file__).resolve().parents[1] / "docs" / "parameters.md"


def _lightgbm_table():
    from lightgbm.basic import _ConfigAliases
    return {name: set(aliases) - {name}
            for name, aliases in _ConfigAliases._get_all_param_aliases().items()}


def test_the_table_lists_every_lightgbm_parameter_with_its_aliases():
    ours = {name: set(aliases) for name, _section, aliases in lp.LIGHTGBM_PARAMETERS}
    assert ours == _lightgbm_table()


def test_every_lightgbm_parameter_is_implemented_accepted_or_refused_once():
    for name, _section, aliases in lp.LIGHTGBM_PARAMETERS:
        implemented = any(n in ALIASES for n in (name, *aliases))
        accounted = (name in lp.ACCEPTED) + (name in lp.REFUSED)
        assert implemented + accounted == 1, name


def test_the_docs_page_is_the_generated_one():
    assert DOC.read_text() == lp.parameters_markdown(PARAMETERS, ALIASES), (
        "docs/parameters.md is stale: python -m oocgbdt.lightgbm_parameters > docs/parameters.md")


@pytest.mark.parametrize("name", sorted(lp.REFUSED))
def test_a_refused_parameter_raises_with_its_reason(name):
    with pytest.raises(ValueError, match=f"Parameter {name}=.*is not supported: "):
        resolve_params({name: 1})


def test_aliases_of_refused_parameters_are_refused_too():
    with pytest.raises(ValueError, match="dart"):
        resolve_params({"rate_drop": 0.2})
    with pytest.raises(ValueError, match="min_gain_to_split"):
        resolve_params({"gamma": 0.5})


@pytest.mark.parametrize("name", sorted(n for n, (_, allowed) in lp.ACCEPTED.items()
                                        if allowed is None))
def test_an_accepted_parameter_warns_once_and_changes_nothing(name, monkeypatch):
    monkeypatch.setattr("oocgbdt.params._WARNED", set())
    with pytest.warns(UserWarning, match=f"Parameter {name}=.*changes nothing"):
        got = resolve_params({name: 1, "num_leaves": 7})
    assert got == resolve_params({"num_leaves": 7})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        resolve_params({name: 1})


def test_accepted_parameters_with_values_refuse_the_other_values(monkeypatch):
    monkeypatch.setattr("oocgbdt.params._WARNED", set())
    with pytest.warns(UserWarning):
        assert resolve_params({"boosting_type": "gbdt"}) == resolve_params({})
    with pytest.warns(UserWarning):
        resolve_params({"device_type": "CPU"})
    for params in ({"boosting": "rf"}, {"device": "gpu"}, {"task": "predict"}):
        with pytest.raises(ValueError, match="accepted values"):
            resolve_params(params)


def test_an_unknown_name_is_still_unknown():
    with pytest.raises(ValueError, match="Unknown parameter 'num_leafs'"):
        resolve_params({"num_leafs": 3})
