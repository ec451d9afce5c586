"""Tests for oocgbdt.params: the parameter table and resolve_params."""
import copy

import numpy as np
import pytest

from oocgbdt.params import (
    ALIASES,
    DEFAULT_METRIC,
    METRIC_ALIASES,
    OBJECTIVE_ALIASES,
    PARAMETERS,
    Param,
    normalize_metric,
    param_docs,
    resolve_params,
)

# --------------------------------------------------------------------------------------------
# The table itself
# --------------------------------------------------------------------------------------------


def test_table_is_consistent():
    seen = set()
    for name, p in PARAMETERS.items():
        assert isinstance(p, Param)
        assert p.name == name
        assert isinstance(p.aliases, tuple)
        assert p.doc and p.doc.strip() == p.doc
        for n in (p.name,) + p.aliases:
            assert n not in seen, n
            seen.add(n)
            assert ALIASES[n] == name
        # The default is valid and already normalized.
        assert p.check(p.default) is None
        if p.normalize is not None:
            assert p.normalize(p.default) == p.default
    assert set(ALIASES) == seen


def test_param_is_frozen():
    with pytest.raises(Exception):
        PARAMETERS["num_leaves"].default = 3


def test_defaults():
    r = resolve_params(None)
    assert list(r) == list(PARAMETERS)
    assert r["objective"] == "regression"
    assert r["num_class"] == 1
    assert r["n_estimators"] == 100
    assert r["learning_rate"] == 0.1
    assert r["num_leaves"] == 31
    assert r["max_depth"] == -1
    assert r["min_data_in_leaf"] == 20
    assert r["min_sum_hessian_in_leaf"] == 1e-3
    assert r["lambda_l1"] == 0 and r["lambda_l2"] == 0 and r["min_gain_to_split"] == 0
    assert r["max_bin"] == 255 and r["min_data_in_bin"] == 3
    assert r["bin_construct_sample_cnt"] == 200000
    assert r["use_missing"] is True and r["zero_as_missing"] is False
    assert r["feature_pre_filter"] is True and r["boost_from_average"] is True
    assert r["seed"] == 0
    assert r["metric"] == ["l2"]  # None -> the objective's default
    assert r["early_stopping_rounds"] is None
    assert r["first_metric_only"] is False
    assert r["verbose"] is False
    assert r["chunk_rows"] == 65536
    assert r["split_every"] == 8
    assert r["grow_policy"] == "leafwise" and r["max_leaves_per_pass"] == 1
    assert r["histogram_pool_size"] == -1.0
    assert r["cache"] == "auto" and r["cache_path"] is None and r["cache_memory_fraction"] == 0.5
    assert r["partition_rows"] is None
    assert r["min_workers"] == 1 and r["worker_wait_timeout"] == 600.0
    assert r["checkpoint_path"] is None and r["checkpoint_every"] == 0
    assert r["max_worker_failures"] == 3
    assert resolve_params({}) == r


def test_returns_new_dict_and_never_mutates_input():
    params = {"max_leaves": np.int64(7), "metric": ["auc", "l2"], "objective": "binary"}
    before = copy.deepcopy(params)
    r = resolve_params(params)
    assert params.keys() == before.keys()
    assert params["metric"] == before["metric"] and params["max_leaves"] == before["max_leaves"]
    r["metric"].append("rmse")
    assert params["metric"] == ["auc", "l2"]
    # Default lists are not shared between calls.
    a, b = resolve_params(), resolve_params()
    a["metric"].append("rmse")
    assert b["metric"] == ["l2"]


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_every_alias_resolves(alias):
    canonical = ALIASES[alias]
    value = {
        "objective": "binary", "num_class": 1, "n_estimators": 7, "learning_rate": 0.3,
        "num_leaves": 5, "max_depth": 4, "min_data_in_leaf": 2, "min_sum_hessian_in_leaf": 0.5,
        "lambda_l1": 0.25, "lambda_l2": 2.0, "min_gain_to_split": 0.125, "max_bin": 63,
        "min_data_in_bin": 5, "bin_construct_sample_cnt": 1000, "use_missing": False,
        "zero_as_missing": True, "feature_pre_filter": False, "boost_from_average": False,
        "seed": 42, "num_threads": 3, "metric": ["l2"], "early_stopping_rounds": 5, "early_stopping_min_delta": 0.25,
        "first_metric_only": True,
        "verbose": True, "chunk_rows": 100, "split_every": 3, "feature_fraction": 0.5,
        "feature_fraction_seed": 9, "feature_screening": "stochastic", "screening_alpha": 0.5,
        "screening_beta": 2.0, "screening_ratio": 0.7, "screening_warmup": 3,
        "data_sample_strategy": "goss", "top_rate": 0.3, "other_rate": 0.05,
        "bagging_fraction": 0.5, "bagging_freq": 2, "bagging_seed": 11, "data_random_seed": 13,
        "pos_bagging_fraction": 0.6, "neg_bagging_fraction": 0.4,
        "enable_bundle": False, "max_conflict_rate": 0.25, "grow_policy": "depthwise",
        "max_leaves_per_pass": 4, "lookahead_leaves": 3, "histogram_pool_size": 64.0, "cache": "disk",
        "cache_path": "/tmp/oocgbdt-cache", "cache_memory_fraction": 0.25, "partition_rows": 1000,
        "categorical_feature": [0, 2], "max_cat_to_onehot": 6, "max_cat_threshold": 16,
        "cat_l2": 1.5, "cat_smooth": 2.5, "min_data_per_group": 7,
        "use_quantized_grad": True, "num_grad_quant_bins": 8, "quant_train_renew_leaf": True,
        "stochastic_rounding": False,
        "alpha": 0.7, "fair_c": 2.0, "poisson_max_delta_step": 0.5,
        "tweedie_variance_power": 1.2, "sigmoid": 2.0, "is_unbalance": True,
        "scale_pos_weight": 1.0, "multi_error_top_k": 3, "label_gain": [0.0, 1.0, 5.0],
        "lambdarank_truncation_level": 10, "lambdarank_norm": False, "eval_at": [1, 3], "objective_seed": 9,
            "min_workers": 3, "worker_wait_timeout": 5.0, "feature_fraction_bynode": 0.5,
        "extra_trees": True, "extra_seed": 4, "interaction_constraints": [[0, 1], [2]],
        "max_delta_step": 0.7, "monotone_constraints": [1, 0, -1],
        "monotone_constraints_method": "basic", "monotone_penalty": 1.5, "path_smooth": 2.0,
        "reg_sqrt": True, "lambdarank_position_bias_regularization": 0.5,
        "checkpoint_every": 5, "checkpoint_path": "/tmp/oocgbdt-checkpoint.json",
        "max_worker_failures": 1,
        "auc_mu_weights": [0.0],  # num_class 1: one diagonal entry
    }[canonical]
    r = resolve_params({alias: value})
    assert r[canonical] == value
    assert alias == canonical or alias not in r


def test_aliases_match_lightgbm():
    """Our names for a LightGBM parameter are exactly LightGBM's names and aliases."""
    basic = pytest.importorskip("lightgbm.basic")
    lgb_aliases = basic._ConfigAliases._get_all_param_aliases()
    renamed = {
        "n_estimators": "num_iterations",
        "early_stopping_rounds": "early_stopping_round",
        "verbose": "verbosity",
    }
    for name, p in PARAMETERS.items():
        lgb_name = renamed.get(name, name)
        if lgb_name not in lgb_aliases:
            continue  # oocgbdt-only parameter (chunk_rows, split_every)
        assert set((p.name,) + p.aliases) == set(lgb_aliases[lgb_name]), name


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


def test_unknown_parameter_suggests_closest():
    with pytest.raises(ValueError,
                       match=r"Unknown parameter 'num_leafs'.*did you mean.*'num_leaves'"):
        resolve_params({"num_leafs": 3})
    with pytest.raises(ValueError, match=r"Unknown parameter 'learnin_rate'.*'learning_rate'"):
        resolve_params({"learnin_rate": 0.1})
    with pytest.raises(ValueError, match=r"'min_child_sample'.*'min_child_samples' \(alias of "
                                         r"'min_data_in_leaf'\)"):
        resolve_params({"min_child_sample": 3})
    # Every unknown name is reported; no suggestion when nothing is close.
    with pytest.raises(ValueError, match=r"'zzz_unknown'\..*'qqq'\."):
        resolve_params({"zzz_unknown": 1, "qqq": 2})


def test_non_dict_and_non_str_keys():
    with pytest.raises(TypeError, match="params must be a dict"):
        resolve_params([("num_leaves", 3)])
    with pytest.raises(TypeError, match="parameter names must be str"):
        resolve_params({1: 3})


def test_conflicting_aliases():
    with pytest.raises(ValueError, match=r"'num_leaves' was given more than once.*"
                                         r"num_leaves=31 and max_leaves=63"):
        resolve_params({"num_leaves": 31, "max_leaves": 63})
    with pytest.raises(ValueError, match=r"'n_estimators'.*num_trees=5 and num_round=6"):
        resolve_params({"num_trees": 5, "num_round": 6})
    # Same value (even through normalization or NumPy types) is fine.
    r = resolve_params({"num_leaves": 31, "max_leaves": np.int32(31), "eta": 0.5,
                        "learning_rate": np.float64(0.5), "objective": "mse", "loss": "l2"})
    assert r["num_leaves"] == 31 and r["learning_rate"] == 0.5 and r["objective"] == "regression"


@pytest.mark.parametrize(
    "params, match",
    [
        ({"num_leaves": 1}, r"num_leaves must be an integer >= 2 and <= 131072, got 1"),
        ({"num_leaves": 200000}, r"num_leaves must be an integer >= 2 and <= 131072, got 200000"),
        ({"max_leaves": 1}, r"num_leaves \(given as 'max_leaves'\) must be an integer >= 2"),
        ({"n_estimators": 0}, r"n_estimators must be an integer >= 1, got 0"),
        ({"learning_rate": 0.0}, r"learning_rate must be a finite number > 0.0, got 0.0"),
        ({"learning_rate": -1}, r"learning_rate must be a finite number > 0.0, got -1.0"),
        ({"learning_rate": float("inf")}, r"learning_rate must be a finite number > 0.0, got inf"),
        ({"lambda_l2": float("nan")}, r"lambda_l2 must be a finite number >= 0.0, got nan"),
        ({"reg_alpha": -0.5}, r"lambda_l1 \(given as 'reg_alpha'\) must be a finite number >= 0"),
        ({"min_data_in_leaf": -1}, r"min_data_in_leaf must be an integer >= 0, got -1"),
        ({"min_child_weight": -1e-3}, r"min_sum_hessian_in_leaf .*must be a finite number >= 0"),
        ({"min_split_gain": -1}, r"min_gain_to_split .*>= 0"),
        ({"max_bin": 1}, r"max_bin must be an integer >= 2 and <= 65535, got 1"),
        ({"max_bin": 65536}, r"max_bin must be an integer >= 2 and <= 65535, got 65536"),
        ({"min_data_in_bin": 0}, r"min_data_in_bin must be an integer >= 1, got 0"),
        ({"subsample_for_bin": 0}, r"bin_construct_sample_cnt .*>= 1, got 0"),
        ({"seed": -1}, r"seed must be an integer >= 0, got -1"),
        ({"chunk_rows": 0}, r"chunk_rows must be an integer >= 1, got 0"),
        ({"split_every": 1}, r"split_every must be an integer >= 2, got 1"),
        ({"num_class": 0}, r"num_class must be an integer >= 1, got 0"),
        ({"objective": "binar"}, r"objective must be one of 'regression', 'binary', "
                                 r"'multiclass'.*got 'binar'; did you mean 'binary'\?"),
        ({"objective": "lambdamart"}, r"objective must be one of .*got 'lambdamart'"),
        ({"metric": "aucc"}, r"metric must be .*got unknown metric 'aucc'; did you mean 'auc'"),
        ({"metric": ["l2", "foo"]}, r"metric must be .*got unknown metric 'foo'"),
    ],
)
def test_constraint_violations(params, match):
    with pytest.raises(ValueError, match=match):
        resolve_params(params)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"learning_rate": "0.1"},
         r"learning_rate must be a real number \(int or float\), got str '0.1'"),
        ({"learning_rate": True}, r"learning_rate must be a real number"),
        ({"num_leaves": 31.0}, r"num_leaves must be an integer, got float 31.0"),
        ({"num_leaves": "31"}, r"num_leaves must be an integer, got str"),
        ({"num_leaves": True}, r"num_leaves must be an integer, got bool"),
        ({"max_leaves": np.float64(3)}, r"num_leaves \(given as 'max_leaves'\) must be an integer"),
        ({"use_missing": 1}, r"use_missing must be a bool, got int 1"),
        ({"use_missing": "true"}, r"use_missing must be a bool"),
        ({"objective": 3}, r"objective must be a str, got int 3"),
        ({"seed": 1.5}, r"seed must be an integer or None, got float 1.5"),
        ({"early_stopping_rounds": 2.0}, r"early_stopping_rounds must be an integer or None"),
        ({"verbose": "yes"}, r"verbose must be a bool or an integer"),
        ({"metric": 3}, r"metric must be a str, a list of str or None"),
        ({"metric": ["auc", 3]}, r"metric must be a str, a list of str or None"),
    ],
)
def test_wrong_types(params, match):
    with pytest.raises(TypeError, match=match):
        resolve_params(params)


def test_numpy_scalars_are_accepted_and_converted():
    r = resolve_params({
        "num_leaves": np.int64(15), "learning_rate": np.float32(0.25),
        "use_missing": np.bool_(False),
        "max_bin": np.uint16(63), "lambda_l2": np.int8(2), "seed": np.int32(3),
        "objective": np.str_("binary"), "min_data_in_leaf": np.array(4),
    })
    assert r["num_leaves"] == 15 and type(r["num_leaves"]) is int
    assert r["learning_rate"] == 0.25 and type(r["learning_rate"]) is float
    assert r["use_missing"] is False
    assert type(r["max_bin"]) is int and type(r["seed"]) is int
    assert r["lambda_l2"] == 2.0 and type(r["lambda_l2"]) is float
    assert r["objective"] == "binary" and type(r["objective"]) is str
    assert r["min_data_in_leaf"] == 4 and type(r["min_data_in_leaf"]) is int


# --------------------------------------------------------------------------------------------
# Normalization
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, expected", sorted(OBJECTIVE_ALIASES.items()))
def test_objective_value_aliases(value, expected):
    params = {"objective": value}
    if expected in ("multiclass", "multiclassova"):
        params["num_class"] = 3
    assert resolve_params(params)["objective"] == expected
    params["objective"] = value.upper()
    assert resolve_params(params)["objective"] == expected


def test_num_class_is_validated_with_objective():
    assert resolve_params({"objective": "softmax", "num_classes": 4})["num_class"] == 4
    with pytest.raises(ValueError, match=r"num_class must be an integer >= 2 when objective is "
                                         r"'multiclass', got 1"):
        resolve_params({"objective": "multiclass"})
    with pytest.raises(ValueError, match=r"num_class must be 1 when objective is 'binary'.*got 3"):
        resolve_params({"objective": "binary", "num_class": 3})


@pytest.mark.parametrize(
    "objective, num_class, value, expected",
    [
        ("regression", 1, None, ["l2"]),
        ("binary", 1, None, ["binary_logloss"]),
        ("multiclass", 3, None, ["multi_logloss"]),
        ("regression", 1, "None", []),
        ("regression", 1, "", []),
        ("regression", 1, "na", []),
        ("regression", 1, [], []),
        ("regression", 1, "mse", ["l2"]),
        ("regression", 1, "l2_root", ["rmse"]),
        ("regression", 1, "root_mean_squared_error", ["rmse"]),
        ("regression", 1, ["rmse", "regression", "mean_squared_error"], ["rmse", "l2"]),
        ("regression", 1, "rmse,auc", ["rmse", "auc"]),
        ("binary", 1, "binary", ["binary_logloss"]),
        ("binary", 1, ("AUC", "binary_logloss", "l2"), ["auc", "binary_logloss", "l2"]),
        ("multiclass", 3, ["softmax", "multi_error", "multiclass"],
         ["multi_logloss", "multi_error"]),
    ],
)
def test_metric_normalization(objective, num_class, value, expected):
    r = resolve_params({"objective": objective, "num_class": num_class, "metric": value})
    assert r["metric"] == expected
    assert DEFAULT_METRIC[objective] in resolve_params(
        {"objective": objective, "num_class": num_class})["metric"]


def test_metric_aliases_table():
    for alias, canonical in METRIC_ALIASES.items():
        assert normalize_metric(alias) == [canonical]
    assert normalize_metric(None) is None


def test_metric_must_suit_objective():
    with pytest.raises(ValueError, match=r"metric 'multi_error' cannot be computed for objective "
                                         r"'binary'; it needs objective 'multiclass'"):
        resolve_params({"objective": "binary", "metric": "multi_error"})
    with pytest.raises(ValueError,
                       match=r"metric 'auc' cannot be computed for objective 'multiclass'"):
        resolve_params({"objective": "multiclass", "num_class": 3, "metric": "auc"})
    with pytest.raises(ValueError, match=r"metric 'binary_logloss' .*objective 'regression'"):
        resolve_params({"metric": "binary_logloss"})


@pytest.mark.parametrize(
    "params, key, expected",
    [
        ({"max_depth": 0}, "max_depth", -1),
        ({"max_depth": -7}, "max_depth", -1),
        ({"max_depth": 6}, "max_depth", 6),
        ({"seed": None}, "seed", 0),
        ({"random_state": 7}, "seed", 7),
        ({"early_stopping_rounds": 0}, "early_stopping_rounds", None),
        ({"early_stopping_round": -1}, "early_stopping_rounds", None),
        ({"n_iter_no_change": 10}, "early_stopping_rounds", 10),
        ({"verbosity": -1}, "verbose", False),
        ({"verbosity": 0}, "verbose", False),
        ({"verbosity": 2}, "verbose", True),
        ({"verbose": True}, "verbose", True),
        ({"verbose": np.bool_(True)}, "verbose", True),
        ({"learning_rate": 1}, "learning_rate", 1.0),
    ],
)
def test_value_normalization(params, key, expected):
    r = resolve_params(params)
    assert r[key] == expected and type(r[key]) is type(expected)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"objective": "softmax", "num_class": 5, "metric": "multi_error,softmax"},
        {"objective": "binary", "metric": "None", "verbosity": 3, "max_depth": 0, "seed": None},
        {"loss": "mse", "early_stopping": 0, "reg_lambda": 1, "metric": ["rmse", "l2"]},
    ],
)
def test_resolve_is_idempotent(params):
    r = resolve_params(params)
    assert resolve_params(r) == r


# --------------------------------------------------------------------------------------------
# Docs
# --------------------------------------------------------------------------------------------


def test_param_docs():
    text = param_docs()
    for name, p in PARAMETERS.items():
        assert f"    {name} : {p.type}, default={p.default!r}" in text
    one = param_docs(["max_leaves"], indent=0)
    assert one.splitlines()[0] == "num_leaves : int, default=31"
    assert "Aliases: num_leaf, max_leaves" in one
    with pytest.raises(KeyError):
        param_docs(["nope"])


def test_metric_as_a_set_or_tuple_is_a_list():
    """LightGBM's Python package takes a set or tuple of metrics (its examples pass
    ``{"l2", "l1"}`` and ``("l1", "l2")``), joined in iteration order."""
    assert resolve_params({"metric": ("l1", "l2")})["metric"] == ["l1", "l2"]
    given = {"l2", "l1"}
    assert resolve_params({"metric": given})["metric"] == list(given)
