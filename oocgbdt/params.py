"""This module contains the one table of every oocgbdt parameter.

Every layer (the estimators, ``oocgbdt.train``, the core objects and the CLI) reads its
parameters from the dict returned by :func:`resolve_params`, so a parameter has exactly one name,
one default, one constraint and one docstring everywhere. The canonical names are LightGBM's
(``include/LightGBM/config.h``), with three exceptions taken from LightGBM's scikit-learn API:
``n_estimators`` (LightGBM: ``num_iterations``), ``early_stopping_rounds`` (LightGBM:
``early_stopping_round``) and ``verbose`` (LightGBM: ``verbosity``). LightGBM's names and its
scikit-learn names are accepted as aliases.

Extending the table
-------------------
Append a :class:`Param` to ``_TABLE`` (the order of ``_TABLE`` is the order of the resolved dict
and of the generated docs). ``type`` picks the converter (``"int"``, ``"float"``, ``"bool"``,
``"str"``, ``"int or None"``, ``"bool or int"``, ``"str, list of str or None"``,
``"categorical"``), ``check``
validates the converted value and ``normalize`` optionally maps it to its canonical form. Checks
that involve several parameters go into ``_JOINT_CHECKS``.
"""
from __future__ import annotations

import difflib
import math
import numbers
import os
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from oocgbdt._dtypes import K_ZERO_THRESHOLD
from oocgbdt.lightgbm_parameters import foreign_parameter

__all__ = [
    "Param",
    "PARAMETERS",
    "ALIASES",
    "OBJECTIVES",
    "OBJECTIVE_ALIASES",
    "METRICS",
    "METRIC_ALIASES",
    "METRIC_OBJECTIVES",
    "DEFAULT_METRIC",
    "MULTICLASS_OBJECTIVES",
    "RANKING_OBJECTIVES",
    "resolve_params",
    "normalize_metric",
    "param_docs",
]


# --------------------------------------------------------------------------------------------
# Value vocabularies (objective and metric names with their LightGBM aliases).
# Source: LightGBM ``src/io/config.cpp`` (``ParseObjectiveAlias``, ``ParseMetricAlias``).
# --------------------------------------------------------------------------------------------

#: Canonical objective names supported by oocgbdt.
#: Rows per storage chunk where oocgbdt chunks the data itself (parameter ``chunk_rows``).
DEFAULT_CHUNK_ROWS = 65_536

OBJECTIVES = ("regression", "binary", "multiclass")
#: Objective value alias -> canonical objective name.
OBJECTIVE_ALIASES = {
    "regression": "regression",
    "regression_l2": "regression",
    "l2": "regression",
    "mean_squared_error": "regression",
    "mse": "regression",
    "binary": "binary",
    "multiclass": "multiclass",
    "softmax": "multiclass",
}
#: Objectives beyond L2/binary/softmax (LightGBM's names; ``include/LightGBM/config.h``
#: ``ParseObjectiveAlias``).
OBJECTIVES += ("regression_l1", "huber", "fair", "quantile", "mape", "poisson", "gamma",
               "tweedie", "cross_entropy", "cross_entropy_lambda", "multiclassova")
OBJECTIVE_ALIASES.update({
    "l2_root": "regression", "root_mean_squared_error": "regression", "rmse": "regression",
    "regression_l1": "regression_l1", "l1": "regression_l1",
    "mean_absolute_error": "regression_l1", "mae": "regression_l1",
    "huber": "huber", "fair": "fair", "quantile": "quantile",
    "mape": "mape", "mean_absolute_percentage_error": "mape",
    "poisson": "poisson", "gamma": "gamma", "tweedie": "tweedie",
    "cross_entropy": "cross_entropy", "xentropy": "cross_entropy",
    "cross_entropy_lambda": "cross_entropy_lambda", "xentlambda": "cross_entropy_lambda",
    "multiclassova": "multiclassova", "multiclass_ova": "multiclassova", "ova": "multiclassova",
    "ovr": "multiclassova",
})
OBJECTIVES += ("lambdarank", "rank_xendcg")
OBJECTIVE_ALIASES.update({"lambdarank": "lambdarank", "rank_xendcg": "rank_xendcg",
                          "xendcg": "rank_xendcg", "xe_ndcg": "rank_xendcg",
                          "xe_ndcg_mart": "rank_xendcg", "xendcg_mart": "rank_xendcg"})
# A callable objective (``train``/estimators) is held as the name "custom" (LightGBM's names
# for "no built-in objective": custom, none, null, na).
OBJECTIVES += ("custom",)
OBJECTIVE_ALIASES.update({"custom": "custom", "none": "custom", "null": "custom", "na": "custom"})
#: Ranking objectives: they need query groups (``group``).
RANKING_OBJECTIVES = ("lambdarank", "rank_xendcg")
#: Objectives with one tree per class per iteration.
MULTICLASS_OBJECTIVES = ("multiclass", "multiclassova")

#: Canonical metric names supported by oocgbdt.
METRICS = ("l2", "rmse", "binary_logloss", "auc", "multi_logloss", "multi_error")
#: Metric value alias -> canonical metric name.
METRIC_ALIASES = {
    "l2": "l2",
    "mse": "l2",
    "mean_squared_error": "l2",
    "regression_l2": "l2",
    "regression": "l2",
    "rmse": "rmse",
    "root_mean_squared_error": "rmse",
    "l2_root": "rmse",
    "binary_logloss": "binary_logloss",
    "binary": "binary_logloss",
    "auc": "auc",
    "multi_logloss": "multi_logloss",
    "multiclass": "multi_logloss",
    "softmax": "multi_logloss",
    "multi_error": "multi_error",
}
#: Metric values that mean "no metric" (as in LightGBM).
_NO_METRIC = frozenset({"", "none", "null", "na", "custom"})
#: Canonical metric name -> objectives it can be computed for.
METRIC_OBJECTIVES = {
    "l2": ("regression", "binary"),
    "rmse": ("regression", "binary"),
    "binary_logloss": ("binary",),
    "auc": ("regression", "binary"),
    "multi_logloss": ("multiclass",),
    "multi_error": ("multiclass",),
}
#: Canonical objective name -> the metric used when ``metric`` is None (LightGBM's default).
DEFAULT_METRIC = {
    "regression": "l2",
    "binary": "binary_logloss",
    "multiclass": "multi_logloss",
}

# Metrics beyond the first six (``src/metric/*.hpp``; ``ParseMetricAlias``).
METRICS += ("l1", "huber", "fair", "quantile", "mape", "poisson", "gamma", "gamma_deviance",
            "tweedie", "binary_error", "average_precision", "cross_entropy",
            "cross_entropy_lambda", "kullback_leibler")
METRIC_ALIASES.update({
    "l1": "l1", "regression_l1": "l1", "mean_absolute_error": "l1", "mae": "l1",
    "huber": "huber", "fair": "fair", "quantile": "quantile",
    "mape": "mape", "mean_absolute_percentage_error": "mape",
    "poisson": "poisson", "gamma": "gamma", "gamma_deviance": "gamma_deviance",
    "tweedie": "tweedie", "binary_error": "binary_error",
    "average_precision": "average_precision",
    "cross_entropy": "cross_entropy", "xentropy": "cross_entropy",
    "cross_entropy_lambda": "cross_entropy_lambda", "xentlambda": "cross_entropy_lambda",
    "kullback_leibler": "kullback_leibler", "kldiv": "kullback_leibler",
    "multiclassova": "multi_logloss", "multiclass_ova": "multi_logloss", "ova": "multi_logloss",
    "ovr": "multi_logloss",
})
METRICS += ("ndcg", "map")
METRIC_ALIASES.update({"ndcg": "ndcg", "lambdarank": "ndcg", "rank_xendcg": "ndcg",
                       "xendcg": "ndcg", "xe_ndcg": "ndcg", "xe_ndcg_mart": "ndcg",
                       "xendcg_mart": "ndcg", "map": "map", "mean_average_precision": "map"})
METRIC_OBJECTIVES["ndcg"] = RANKING_OBJECTIVES
METRIC_OBJECTIVES["map"] = RANKING_OBJECTIVES
_ONE_OUTPUT = ("regression", "regression_l1", "huber", "fair", "quantile", "mape", "poisson",
               "gamma", "tweedie", "binary", "cross_entropy", "cross_entropy_lambda")
_PROBABILITY = ("binary", "cross_entropy", "cross_entropy_lambda")
for _m in ("l2", "rmse", "auc", "l1", "huber", "fair", "quantile", "mape", "poisson", "gamma",
           "gamma_deviance", "tweedie"):
    METRIC_OBJECTIVES[_m] = _ONE_OUTPUT
for _m in ("binary_logloss", "binary_error", "average_precision", "cross_entropy",
           "cross_entropy_lambda", "kullback_leibler"):
    METRIC_OBJECTIVES[_m] = _PROBABILITY
METRIC_OBJECTIVES["multi_logloss"] = MULTICLASS_OBJECTIVES
METRIC_OBJECTIVES["multi_error"] = MULTICLASS_OBJECTIVES
METRICS += ("auc_mu",)
METRIC_ALIASES["auc_mu"] = "auc_mu"
METRIC_OBJECTIVES["auc_mu"] = MULTICLASS_OBJECTIVES
for _m in ("l2", "rmse", "l1", "auc", "huber", "fair", "quantile", "mape", "binary_error",
           "average_precision", "multi_error", "auc_mu"):  # on raw scores, as LightGBM without objective
    METRIC_OBJECTIVES[_m] = METRIC_OBJECTIVES[_m] + ("custom",)
del _m
# The objective's own name read as a metric, as LightGBM does when ``metric`` is not given.
DEFAULT_METRIC.update({
    "regression_l1": "l1", "huber": "huber", "fair": "fair", "quantile": "quantile",
    "mape": "mape", "poisson": "poisson", "gamma": "gamma", "tweedie": "tweedie",
    "cross_entropy": "cross_entropy", "cross_entropy_lambda": "cross_entropy_lambda",
    "multiclassova": "multi_logloss",
    "lambdarank": "ndcg",
    "rank_xendcg": "ndcg",
})


# --------------------------------------------------------------------------------------------
# The Param record.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """One parameter: its canonical name, default, aliases, constraint and doc.

    Attributes
    ----------
    name : str
        Canonical name (the key in the dict returned by :func:`resolve_params`).
    default : object
        Default value, already in canonical (normalized) form.
    aliases : tuple of str
        Other accepted names (LightGBM's and scikit-learn's).
    type : str
        Accepted Python types, as written in the docs. One of ``"int"``, ``"float"``,
        ``"bool"``, ``"str"``, ``"int or None"``, ``"bool or int"``,
        ``"str, list of str or None"``. NumPy scalars of the matching kind are accepted.
    check : callable
        ``check(value) -> str or None`` on the converted and normalized value. Returns None when
        the value is valid, else the text that follows the parameter's name in the error
        message (``"must be an integer >= 2, got 1"``).
    doc : str
        One-line description used to template docstrings.
    normalize : callable or None
        ``normalize(value) -> value`` maps a type-checked value to its canonical form (value
        aliases, ``max_depth <= 0 -> -1``, ...). It must be idempotent.
    """

    name: str
    default: Any
    aliases: tuple
    type: str
    check: Callable[[Any], Optional[str]]
    doc: str
    normalize: Optional[Callable[[Any], Any]] = None


# --------------------------------------------------------------------------------------------
# Type converters: (name, value) -> Python value, or TypeError.
# --------------------------------------------------------------------------------------------


def _unwrap(value):
    """Return a Python scalar for NumPy scalars and 0-d arrays; other values unchanged."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value.item()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _type_error(name, expected, value):
    return TypeError(
        f"{name} must be {expected}, got {type(value).__name__} {value!r}"
    )


def _is_bool(value):
    return isinstance(value, (bool, np.bool_))


def _to_int(name, value):
    if _is_bool(value) or not isinstance(value, (numbers.Integral, np.integer)):
        raise _type_error(name, "an integer", value)
    return int(value)


def _to_float(name, value):
    if _is_bool(value) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        raise _type_error(name, "a real number (int or float)", value)
    return float(value)


def _to_bool(name, value):
    if not _is_bool(value):
        raise _type_error(name, "a bool", value)
    return bool(value)


def _to_str(name, value):
    if not isinstance(value, str):
        raise _type_error(name, "a str", value)
    return str(value)


def _to_path_or_none(name, value):
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise _type_error(name, "a str, a path-like or None", value)
    return str(os.fspath(value))


def _to_str_or_none(name, value):
    if value is None:
        return None
    if not isinstance(value, str):
        raise _type_error(name, "a str or None", value)
    return str(value)


def _to_int_or_none(name, value):
    if value is None:
        return None
    try:
        return _to_int(name, value)
    except TypeError:
        raise _type_error(name, "an integer or None", value) from None


def _to_bool_or_int(name, value):
    if _is_bool(value):
        return bool(value)
    try:
        return _to_int(name, value)
    except TypeError:
        raise _type_error(name, "a bool or an integer", value) from None


def _to_str_list_or_none(name, value):
    if value is None:
        return None
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (set, frozenset)):
        # LightGBM's Python package joins a set's items in their iteration order (basic.py
        # _param_dict_to_str); so does this.
        value = list(value)
    if isinstance(value, (list, tuple)):
        for item in value:
            if not isinstance(item, str):
                raise _type_error(
                    name, "a str, a list of str or None (found an item that is not a str)", item
                )
        return [str(item) for item in value]
    raise _type_error(name, "a str, a list of str or None", value)


def _to_categorical(name, value):
    """``categorical_feature``: None, ``"auto"``, a LightGBM CLI string (``"0,1,2"`` or
    ``"name:a,b"``), or a list/tuple of int indices or of str names (not mixed). Strings are
    parsed to a list here; names are matched against the feature names by
    :func:`oocgbdt.core.categorical.resolve_categorical_feature` when the data is known."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if text in ("", "auto"):
            return None if text == "" else "auto"
        if text.startswith("name:"):
            names = [t.strip() for t in text[len("name:"):].split(",") if t.strip()]
            return names
        items = []
        for token in text.split(","):
            token = token.strip()
            if not token:
                continue
            try:
                items.append(int(token))
            except ValueError:
                raise _type_error(name, "'auto', a comma-separated list of column indices "
                                  "('0,1,2') or of names prefixed by 'name:' ('name:a,b')",
                                  value) from None
        return items
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, str) for v in value):
            return [str(v) for v in value]
        if all(isinstance(v, numbers.Integral) and not _is_bool(v) for v in value):
            return [int(v) for v in value]
        raise _type_error(name, "a list of int column indices or a list of str feature names "
                          "(not mixed)", value)
    raise _type_error(name, "None, 'auto', a list of int indices, a list of str names, or a "
                      "string '0,1,2' / 'name:a,b'", value)
def _to_number_list_or_none(kind):
    def convert(name, value):
        if value is None:
            return None
        if isinstance(value, str):  # LightGBM's text form: "1,2,3"
            try:
                value = [float(v) if kind == "float" else int(v)
                         for v in value.split(",") if v.strip()]
            except ValueError:
                raise _type_error(name, f"a list of {kind}s or None", value) from None
        if isinstance(value, np.ndarray):
            value = value.tolist()
        if not isinstance(value, (list, tuple)) or not value:
            raise _type_error(name, f"a non-empty list of {kind}s or None", value)
        conv = _to_float if kind == "float" else _to_int
        return [conv(name, _unwrap(v)) for v in value]
    return convert


def _to_int_groups(name, value):
    """``interaction_constraints``: None, a list of lists of int feature indices, or LightGBM's
    text form ``"[0,1,2],[2,3]"``; an empty list means none."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        try:
            value = [[int(v) for v in part.strip(" []").split(",") if v.strip()]
                     for part in text.replace("],", "]|").split("|") if part.strip()]
        except ValueError:
            raise _type_error(name, "a list of lists of int feature indices", value) from None
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise _type_error(name, "None or a list of lists of int feature indices", value)
    out = []
    for group in value:
        if isinstance(group, np.ndarray):
            group = group.tolist()
        if not isinstance(group, (list, tuple, set, frozenset)):
            raise _type_error(name, "a list of lists of int feature indices (found an item "
                              "that is not a list)", group)
        out.append(sorted({_to_int(name, _unwrap(v)) for v in group}))
    return out or None


_CONVERTERS = {
    "int": _to_int,
    "float": _to_float,
    "bool": _to_bool,
    "str": _to_str,
    "int or None": _to_int_or_none,
    "str or None": _to_str_or_none,
    "path or None": _to_path_or_none,
    "bool or int": _to_bool_or_int,
    "str, list of str or None": _to_str_list_or_none,
    "categorical": _to_categorical,
    "list of float or None": _to_number_list_or_none("float"),
    "list of int or None": _to_number_list_or_none("int"),
    "list of lists of int or None": _to_int_groups,
}


# --------------------------------------------------------------------------------------------
# Constraint checks: value -> None or "must be ..., got ...".
# --------------------------------------------------------------------------------------------


def _fmt(value):
    return repr(value)


def _range(lo=None, hi=None, *, lo_open=False, hi_open=False, integer=False, allow_none=False):
    """Return a check for ``lo <(=) value <(=) hi`` (finite values only)."""
    parts = []
    if lo is not None:
        parts.append(f"{'>' if lo_open else '>='} {lo}")
    if hi is not None:
        parts.append(f"{'<' if hi_open else '<='} {hi}")
    kind = "an integer" if integer else "a finite number"
    expected = f"{kind} {' and '.join(parts)}".strip()
    if allow_none:
        expected += " or None"

    def check(value):
        if value is None and allow_none:
            return None
        ok = math.isfinite(value)
        if ok and lo is not None:
            ok = value > lo if lo_open else value >= lo
        if ok and hi is not None:
            ok = value < hi if hi_open else value <= hi
        return None if ok else f"must be {expected}, got {_fmt(value)}"

    check.expected = expected
    return check


def _any(value):
    return None


def _one_of(choices, aliases=None):
    def check(value):
        if value in choices:
            return None
        text = f"must be one of {', '.join(repr(c) for c in choices)}"
        if aliases:
            extra = sorted(a for a in aliases if a not in choices)
            text += f" (or an alias: {', '.join(repr(a) for a in extra)})"
        close = difflib.get_close_matches(str(value), list(aliases or choices), n=3, cutoff=0.6)
        text += f", got {_fmt(value)}"
        if close:
            text += f"; did you mean {' or '.join(repr(c) for c in close)}?"
        return text

    return check


def _check_metric(value):
    if value is None:
        return None
    bad = [m for m in value if m not in METRICS]
    if not bad:
        return None
    extra = sorted(a for a in METRIC_ALIASES if a not in METRICS)
    text = (
        f"must be None, 'None' or a str / list of str from "
        f"{', '.join(repr(m) for m in METRICS)} "
        f"(or an alias: {', '.join(repr(a) for a in extra)}), got unknown metric {_fmt(bad[0])}"
    )
    close = difflib.get_close_matches(bad[0], list(METRIC_ALIASES), n=3, cutoff=0.6)
    if close:
        text += f"; did you mean {' or '.join(repr(c) for c in close)}?"
    return text


def _check_monotone_values(value):
    if value is None:
        return None
    bad = [v for v in value if v not in (-1, 0, 1)]
    if bad:
        return f"must be a list of -1, 0 or 1 per feature, got {_fmt(bad[0])} in {_fmt(value)}"
    return None


def _check_monotone_method(value):
    if value == "basic":
        return None
    if value in ("intermediate", "advanced"):
        return (f"must be 'basic', got {_fmt(value)}: after every split, the {value} method "
                f"tightens the bounds of other leaves of the tree and searches those leaves "
                f"again from their kept histograms (LightGBM's RecomputeBestSplitForLeaf), "
                f"which oocgbdt's split passes do not do; it is not implemented")
    return f"must be 'basic', got {_fmt(value)}"


# --------------------------------------------------------------------------------------------
# Normalizers (idempotent).
# --------------------------------------------------------------------------------------------


def _normalize_objective(value):
    key = value.strip().lower()
    return OBJECTIVE_ALIASES.get(key, value)


def normalize_metric(value):
    """Normalize a ``metric`` value to None or a list of canonical metric names.

    Parameters
    ----------
    value : None, str or list of str
        None means "the objective's default metric" and is returned unchanged. A str may hold
        several comma-separated names (as in LightGBM). ``"None"``, ``"null"``, ``"na"``,
        ``"custom"`` and ``""`` mean no metric and are dropped.

    Returns
    -------
    None or list of str
        Canonical names (aliases mapped, lower-cased, duplicates removed, order kept). Unknown
        names are kept as given so that the check can report them.
    """
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    out = []
    for item in items:
        key = item.strip().lower()
        if key in _NO_METRIC:
            continue
        name = METRIC_ALIASES.get(key, item)
        if name not in out:
            out.append(name)
    return out


def _normalize_max_depth(value):
    return -1 if value <= 0 else value


def _normalize_threads(value):
    return 0 if value is None else int(value)


def _normalize_seed(value):
    return 0 if value is None else value


def _normalize_early_stopping(value):
    return None if value is None or value <= 0 else value


def _normalize_verbose(value):
    return bool(value > 0) if not isinstance(value, bool) else value


# --------------------------------------------------------------------------------------------
# The table.
# --------------------------------------------------------------------------------------------

_TABLE = [
    # ---- task ------------------------------------------------------------------------------
    Param(
        "objective", "regression",
        ("objective_type", "app", "application", "loss"),
        "str",
        _one_of(OBJECTIVES, OBJECTIVE_ALIASES),
        "Loss to minimize: 'regression' (L2; aliases 'l2', 'regression_l2', "
        "'mean_squared_error', 'mse'), 'binary' (logloss, labels 0/1) or 'multiclass' "
        "(softmax; alias 'softmax'; labels 0..num_class-1); also LightGBM's 'regression_l1', "
        "'huber', 'fair', 'quantile', 'mape', 'poisson', 'gamma', 'tweedie', 'cross_entropy' "
        "(labels in [0, 1]), 'cross_entropy_lambda' and 'multiclassova' (one sigmoid per class), "
        "with their aliases.",
        _normalize_objective,
    ),
    # ---- objective parameters (include/LightGBM/config.h) ------------------------------------
    Param(
        "alpha", 0.9, (), "float", _range(0.0, lo_open=True),
        "Huber loss delta (objective/metric 'huber') and quantile (objective/metric "
        "'quantile', then in (0, 1)).",
    ),
    Param(
        "fair_c", 1.0, (), "float", _range(0.0, lo_open=True),
        "Parameter c of the Fair loss (objective/metric 'fair').",
    ),
    Param(
        "poisson_max_delta_step", 0.7, (), "float", _range(0.0, lo_open=True),
        "Safeguard of 'poisson': hessians are exp(score + poisson_max_delta_step).",
    ),
    Param(
        "tweedie_variance_power", 1.5, (), "float", _range(1.0, 2.0, hi_open=True),
        "Variance power of 'tweedie' in [1, 2): near 1 Poisson-like, near 2 Gamma-like.",
    ),
    Param(
        "reg_sqrt", False, (), "bool", _any,
        "'regression', 'regression_l1', 'fair', 'quantile', 'mape': fit sign(y) * sqrt(abs(y)) "
        "and predict sign(s) * s**2 (LightGBM turns it off, with a warning, for 'huber', "
        "'poisson', 'gamma' and 'tweedie').",
    ),
    Param(
        "sigmoid", 1.0, (), "float", _range(0.0, lo_open=True),
        "Scale of the sigmoid of 'binary' and 'multiclassova': p = 1 / (1 + exp(-sigmoid * s)).",
    ),
    Param(
        "is_unbalance", False, ("unbalance", "unbalanced_sets"), "bool", _any,
        "'binary'/'multiclassova': weigh the rarer label by the count ratio of the labels "
        "(not with scale_pos_weight).",
    ),
    Param(
        "scale_pos_weight", 1.0, (), "float", _range(0.0, lo_open=True),
        "'binary'/'multiclassova': weight of the positive label's gradients.",
    ),
    Param(
        "label_gain", None, (), "list of float or None", _any,
        "Ranking: gain of each integer relevance label (NDCG); None: 2**i - 1 for i < 31.",
    ),
    Param(
        "lambdarank_truncation_level", 30, (), "int", _range(1, integer=True),
        "lambdarank: pairs are formed with the top this many rows of each query.",
    ),
    Param(
        "lambdarank_norm", True, (), "bool", _any,
        "lambdarank: normalize each query's lambdas (helps with unbalanced queries).",
    ),
    Param(
        "lambdarank_position_bias_regularization", 0.0, (), "float", _range(0.0),
        "lambdarank with row positions (train(position=...)): L2 regularization of the "
        "position bias factors learned each round (unbiased LambdaRank).",
    ),
    Param(
        "eval_at", None, ("ndcg_eval_at", "ndcg_at", "map_eval_at", "map_at"),
        "list of int or None", _any,
        "Metrics 'ndcg' and 'map': the positions evaluated; None: 1, 2, 3, 4, 5.",
    ),
    Param(
        "objective_seed", 5, (), "int", _range(integer=True),
        "rank_xendcg: seed of its per-query random draws (derived from seed when seed is given "
        "and this is not, as LightGBM).",
    ),
    Param(
        "multi_error_top_k", 1, (), "int", _range(1, integer=True),
        "Metric 'multi_error': a row is right when its class is among the top k predictions.",
    ),
    Param(
        "auc_mu_weights", None, (), "list of float or None", _any,
        "Metric 'auc_mu': the num_class x num_class matrix of class weights, flattened "
        "row-major (entry [i, j] at i * num_class + j); off-diagonal entries must be nonzero, "
        "diagonal entries are read as 0. None: 1 off the diagonal.",
    ),
    Param(
        "num_class", 1, ("num_classes",), "int", _range(1, integer=True),
        "Number of classes: >= 2 for objective='multiclass' or 'multiclassova', 1 otherwise.",
    ),
    # ---- boosting ----------------------------------------------------------------------------
    Param(
        "n_estimators", 100,
        ("num_iterations", "num_iteration", "n_iter", "num_tree", "num_trees", "num_round",
         "num_rounds", "num_boost_round", "nrounds", "max_iter"),
        "int", _range(1, integer=True),
        "Number of boosting iterations (a multiclass model has num_class trees per iteration).",
    ),
    Param(
        "learning_rate", 0.1, ("shrinkage_rate", "eta"), "float", _range(0.0, lo_open=True),
        "Shrinkage applied to every new tree's leaf values.",
    ),
    # ---- tree growth -------------------------------------------------------------------------
    Param(
        "num_leaves", 31, ("num_leaf", "max_leaves", "max_leaf", "max_leaf_nodes"), "int",
        _range(2, 131072, integer=True),
        "Maximum number of leaves in one tree (leaf-wise growth).",
    ),
    Param(
        "max_depth", -1, (), "int", _range(-1, integer=True),
        "Maximum depth of a tree (root = depth 0); -1 (or any value <= 0) means no limit.",
        _normalize_max_depth,
    ),
    Param(
        "grow_policy", "leafwise", (), "str", _one_of(("leafwise", "depthwise")),
        "How trees grow: 'leafwise' (best-first, LightGBM's; with max_leaves_per_pass > 1 the "
        "best k open leaves are split in one pass over the data) or 'depthwise' (every open "
        "leaf with a positive gain is split in the same pass: one pass per level).",
    ),
    Param(
        "max_leaves_per_pass", 1, (), "int", _range(1, integer=True),
        "Leaves split per pass over the data with grow_policy='leafwise': 1 is exact best-first "
        "growth; k > 1 splits the k open leaves with the largest gains at once, so a tree of "
        "num_leaves leaves takes about (num_leaves - 1) / k passes instead of num_leaves - 1 "
        "(fewer when k exceeds the open leaves: 9 passes for 31 leaves and k=4). Must be 1 with "
        "grow_policy='depthwise'.",
    ),
    Param(
        "lookahead_leaves", None, (), "int or None", _range(0, integer=True, allow_none=True),
        "With exact leaf-wise growth (grow_policy='leafwise', max_leaves_per_pass=1): each pass "
        "over the data also splits up to this many of the next best open leaves ahead of their "
        "turn, so that later steps of best-first growth find their splits made and cost no "
        "pass. The tree is the same for every value (splits are still applied best first, and "
        "each leaf's histogram adds the same rows in the same order); only the passes per tree "
        "and the work on leaves split ahead that the num_leaves budget never reaches change. "
        "None (auto): 2 from the disk cache, whose passes read it, 1 on several Dask workers "
        "with the memory cache, whose passes cost round trips, else 0 (in process a "
        "pass costs little and the extra work outweighs it: 1M x 100, 31 leaves, 0.67 vs 0.75 "
        "CPU s per tree); the model records the value used. "
        "Ignored by the other growth policies, and when histogram_pool_size bounds the kept "
        "histograms (evictions would then depend on it and change leaf values by rounding).",
    ),
    Param(
        "histogram_pool_size", -1.0, ("hist_pool_size",), "float", _range(),
        "Upper bound, in MB, on the leaf histograms kept between passes of one tree (LightGBM's "
        "histogram_pool_size); <= 0 means no bound (NaN and infinities are refused). Over the bound, the open leaves with the "
        "smallest best-split gain lose their histograms first (LightGBM drops the least recently "
        "used); a leaf split after losing its histogram histograms both children instead of "
        "deriving one by subtraction (same splits, leaf values equal up to rounding).",
    ),
    Param(
        "min_data_in_leaf", 20,
        ("min_data_per_leaf", "min_data", "min_child_samples", "min_samples_leaf"),
        "int", _range(0, integer=True),
        "Minimum number of rows in a leaf. As in LightGBM, split search checks it on row counts "
        "estimated from hessians (per bin round(hessian * leaf rows / leaf hessian)): exact for "
        "L2 without weights, approximate otherwise, so a leaf may hold fewer rows.",
    ),
    Param(
        "min_sum_hessian_in_leaf", 1e-3,
        ("min_sum_hessian_per_leaf", "min_sum_hessian", "min_hessian", "min_child_weight"),
        "float", _range(0.0),
        "Minimum sum of hessians in a leaf.",
    ),
    Param(
        "lambda_l1", 0.0, ("reg_alpha", "l1_regularization"), "float", _range(0.0),
        "L1 regularization of leaf values.",
    ),
    Param(
        "lambda_l2", 0.0, ("reg_lambda", "lambda", "l2_regularization"), "float", _range(0.0),
        "L2 regularization of leaf values.",
    ),
    Param(
        "min_gain_to_split", 0.0, ("min_split_gain",), "float", _range(0.0),
        "Minimum gain for a split to be made (strict: gain must exceed it).",
    ),
    Param(
        "max_delta_step", 0.0, ("max_tree_output", "max_leaf_output"), "float", _range(),
        "Cap on the magnitude of every leaf output (before the learning rate), applied in split "
        "gains too, as LightGBM's; <= 0 means no cap.",
    ),
    Param(
        "path_smooth", 0.0, (), "float", _range(0.0),
        "Smoothing of leaf outputs towards their parent's (LightGBM's path_smooth): a leaf of "
        "n rows takes output * w / (w + 1) + parent_output / (w + 1) with w = n / path_smooth, "
        "in split gains too; 0 means none.",
    ),
    Param(
        "monotone_constraints", None, ("mc", "monotone_constraint", "monotonic_cst"),
        "list of int or None", lambda v: _check_monotone_values(v),
        "Per feature -1 (decreasing), 0 (none) or 1 (increasing): predictions are monotone in "
        "each constrained feature, other features fixed (LightGBM's basic method: leaf output "
        "bounds narrowed at the mid output of each split on a constrained feature). The list "
        "must have one entry per feature; categorical features cannot be constrained. None: "
        "no constraints.",
    ),
    Param(
        "monotone_constraints_method", "basic", ("monotone_constraining_method", "mc_method"),
        "str", lambda v: _check_monotone_method(v),
        "How monotone_constraints are enforced: 'basic' (LightGBM's BasicLeafConstraints) is "
        "the one implemented; 'intermediate' and 'advanced' are refused, see the error.",
    ),
    Param(
        "monotone_penalty", 0.0, ("monotone_splits_penalty", "ms_penalty", "mc_penalty"),
        "float", _range(0.0),
        "Penalty on splits on monotone features near the root: the gain of such a split in a "
        "leaf at depth d is multiplied by about 1 - penalty / 2**d (penalty <= 1) or "
        "1 - 2**(penalty - 1 - d) (penalty > 1), and is nearly 0 when penalty >= d + 1 "
        "(LightGBM's ComputeMonotoneSplitGainPenalty).",
    ),
    # ---- binning -----------------------------------------------------------------------------
    Param(
        "max_bin", 255, ("max_bins",), "int", _range(2, 65535, integer=True),
        "Maximum number of bins per feature, the NaN bin included when the feature has missing "
        "values (as LightGBM: a feature with NaNs gets at most max_bin - 1 bins of values).",
    ),
    Param(
        "min_data_in_bin", 3, (), "int", _range(1, integer=True),
        "Minimum number of sampled rows in one bin.",
    ),
    Param(
        "bin_construct_sample_cnt", 200000, ("subsample_for_bin",), "int", _range(1, integer=True),
        "Number of rows sampled to find the bin boundaries.",
    ),
    Param(
        "use_missing", True, (), "bool", _any,
        "Handle missing values (NaN) specially; if False, NaN is treated as 0.",
    ),
    Param(
        "zero_as_missing", False, (), "bool", _any,
        "Treat zeros as missing values (as well as NaN).",
    ),
    Param(
        "feature_pre_filter", True, (), "bool", _any,
        "Drop, before training, features that cannot be split under min_data_in_leaf.",
    ),
    # ---- categorical features ------------------------------------------------------------
    Param(
        "categorical_feature", None,
        ("cat_feature", "categorical_column", "cat_column", "categorical_features"),
        "categorical", _any,
        "Columns split as categories (values: non-negative integer codes, a fraction "
        "truncated toward zero; NaN and values <= -1 are missing). None: none; 'auto': the "
        "DataFrame input's category columns (none for arrays); a list of int indices or of "
        "str feature names; or LightGBM's string form '0,1,2' / 'name:a,b'. See "
        "docs/categorical.md.",
    ),
    Param(
        "max_cat_to_onehot", 4, (), "int", _range(0, lo_open=True, integer=True),
        "A categorical feature with at most this many bins is split one category against "
        "the rest; above it, many categories against the rest.",
    ),
    Param(
        "max_cat_threshold", 32, (), "int", _range(0, lo_open=True, integer=True),
        "Largest number of categories on the left side of a many-vs-many categorical split.",
    ),
    Param(
        "cat_l2", 10.0, (), "float", _range(0.0),
        "L2 regularization added to lambda_l2 in many-vs-many categorical splits (their gains "
        "and the outputs of their children).",
    ),
    Param(
        "cat_smooth", 10.0, (), "float", _range(0.0),
        "Smoothing of the gradient/hessian ratio that orders categories; categories with "
        "fewer (estimated) rows than it are left out of many-vs-many splits.",
    ),
    Param(
        "min_data_per_group", 100, (), "int", _range(0, lo_open=True, integer=True),
        "Minimum (estimated) rows per group of categories added to the left side of a "
        "many-vs-many split before its gain is evaluated, and on its right side.",
    ),
    # ---- Exclusive Feature Bundling ----------------------------------------------------------
    Param(
        "enable_bundle", True, ("is_enable_bundle", "bundle"), "bool", _any,
        "Exclusive Feature Bundling: features that are rarely non-zero in the same row share one "
        "histogram column (a bundle), so histograms are built per bundle. Split search, trees, "
        "predictions, saved models and importances stay in the original features.",
    ),
    Param(
        "max_conflict_rate", 0.0, (), "float", _range(0.0, 1.0, hi_open=True),
        "Share of the sampled rows on which the features of one bundle may be non-zero "
        "together (the rows' values of all but one are lost); 0.0 bundles only features that "
        "never are, which is lossless on the sample (rows outside it may still lose values: "
        "training warns). LightGBM v2's parameter; LightGBM 3.0 "
        "removed it (and it is absent from v4), where the budget is a fixed 1/10000 of the "
        "sample.",
    ),
    # ---- init score, randomness --------------------------------------------------------------
    Param(
        "boost_from_average", True, (), "bool", _any,
        "Start from the label average (regression), log-odds (binary) or log class priors "
        "(multiclass) instead of 0.",
    ),
    Param(
        "seed", 0, ("random_seed", "random_state"), "int or None", _range(0, integer=True),
        "Master random seed; None means 0 (not given). Given, it sets data_random_seed, "
        "bagging_seed, feature_fraction_seed, objective_seed and extra_seed that are not given, "
        "from LightGBM's Random(seed) in LightGBM's order (src/io/config.cpp). It also keys "
        "GOSS's draws (with bagging_seed, by round and global row index) and "
        "feature_screening's draws (by round): models do not depend on chunking or workers.",
        _normalize_seed,
    ),
    Param(
        "data_random_seed", 1, ("data_seed",), "int", _range(0, integer=True),
        "Seed of the bin sample: with more than bin_construct_sample_cnt rows, the rows whose "
        "values bins are found on are LightGBM's Random(data_random_seed).Sample(n_rows, "
        "bin_construct_sample_cnt), drawn over the global row range (LightGBM's default 1; "
        "derived from seed when seed is given and this is not, as LightGBM). The same rows, "
        "hence the same bins and trees as LightGBM's, whatever the chunking or workers.",
    ),
    Param(
        "num_threads", 0, ("num_thread", "nthread", "nthreads", "n_jobs"), "int or None",
        _range(integer=True, allow_none=True),
        "Threads of a fit: the in-process fit's threads, or those each Dask worker's share of "
        "the fit uses. 0 or None: every core in process, the worker's threads on a cluster; "
        "a negative value counts back from the cores as joblib's n_jobs does (-1: all, -2: "
        "all but one). The model does not depend on it.",
        _normalize_threads,
    ),
    # ---- row sampling (bagging, GOSS) -------------------------------------------------------
    Param(
        "data_sample_strategy", "bagging", (), "str", _one_of(("bagging", "goss")),
        "Row sampling per round: 'bagging' (uniform, active only when bagging_fraction < 1 and "
        "bagging_freq > 0) or 'goss' (Gradient-based One-Side Sampling: every round after the "
        "first int(1 / learning_rate), keep the top_rate share of rows with the largest "
        "|gradient x hessian|, chosen globally across chunks, plus each other row with "
        "probability other_rate / (1 - top_rate), whose gradient and hessian are multiplied "
        "by (1 - top_rate) / other_rate).",
    ),
    Param(
        "top_rate", 0.2, (), "float", _range(0.0, 1.0, lo_open=True),
        "GOSS: share of rows kept for their large |gradient x hessian| (a).",
    ),
    Param(
        "other_rate", 0.1, (), "float", _range(0.0, 1.0, lo_open=True),
        "GOSS: share of all rows drawn at random from the other rows (b); top_rate + "
        "other_rate must be <= 1.",
    ),
    Param(
        "bagging_fraction", 1.0, ("sub_row", "subsample", "bagging"), "float",
        _range(0.0, 1.0, lo_open=True),
        "Bagging: probability that a row is in a round's bag (LightGBM's draws: one generator "
        "per block of 1024 rows, seeded bagging_seed + block); used only when bagging_freq > 0, "
        "as in LightGBM.",
    ),
    Param(
        "pos_bagging_fraction", 1.0, ("pos_sub_row", "pos_subsample", "pos_bagging"), "float",
        _range(0.0, 1.0, lo_open=True),
        "Balanced bagging (binary objective, bagging_freq > 0): probability that a row with a "
        "positive label is in the bag; with neg_bagging_fraction < 1 or this < 1 it replaces "
        "bagging_fraction, as in LightGBM.",
    ),
    Param(
        "neg_bagging_fraction", 1.0, ("neg_sub_row", "neg_subsample", "neg_bagging"), "float",
        _range(0.0, 1.0, lo_open=True),
        "Balanced bagging: probability that a row with a label <= 0 is in the bag.",
    ),
    Param(
        "bagging_freq", 0, ("subsample_freq",), "int", _range(0, integer=True),
        "Bagging: draw a new bag every bagging_freq rounds (kept in between); 0 disables "
        "bagging.",
    ),
    Param(
        "bagging_seed", 3, ("bagging_fraction_seed",), "int", _range(0, integer=True),
        "Seed of bagging's generators (LightGBM's default 3; derived from seed when seed is "
        "given and this is not, as LightGBM) and, with seed, of GOSS's draws (keyed by (seed, "
        "bagging_seed, round, global row index)).",
    ),
    # ---- evaluation --------------------------------------------------------------------------
    Param(
        "metric", None, ("metrics", "metric_types"), "str, list of str or None", _check_metric,
        "Metric(s) on eval sets: None means the objective's default; 'None' or '' means none. "
        "Names: 'l2', 'rmse', 'binary_logloss', 'auc', 'multi_logloss', 'multi_error' (and "
        "LightGBM's aliases). Resolved to a list of canonical names.",
        normalize_metric,
    ),
    # ---- feature screening (EMA-FS, arXiv:2606.26337) and feature subsampling ----------------
    Param(
        "feature_screening", None, (), "str or None",
        lambda v: None if v in (None, "ema", "stochastic") else
        f"must be None, 'ema' or 'stochastic', got {v!r}",
        "Per-tree feature screening: None (off), 'ema' (EMA-FS: the top ceil(screening_ratio * "
        "n_features) features by an exponential moving average of their best split gains) or "
        "'stochastic' (S-EMA-FS: that many features drawn without replacement with "
        "gain-weighted probabilities).",
    ),
    Param(
        "screening_ratio", 0.3, (), "float", _range(0.0, 1.0, lo_open=True),
        "Share r of the usable features whose histograms each tree builds after the warm-up.",
    ),
    Param(
        "screening_warmup", 5, (), "int", _range(0, integer=True),
        "Boosting rounds W that use every feature before screening starts.",
    ),
    Param(
        "screening_alpha", 0.3, (), "float", _range(0.0, 1.0, lo_open=True),
        "EMA smoothing: E <- alpha * gain + (1 - alpha) * E.",
    ),
    Param(
        "screening_beta", 1.0, (), "float", _range(0.0),
        "S-EMA-FS concentration: 0 draws features uniformly, large values approach EMA-FS.",
    ),
    Param(
        "feature_fraction", 1.0, ("sub_feature", "colsample_bytree"), "float",
        _range(0.0, 1.0, lo_open=True),
        "Share of the usable features drawn for each tree (round(share x n), at least 1), as "
        "LightGBM draws them (its random stream seeded by feature_fraction_seed); 1.0 uses all.",
    ),
    Param(
        "feature_fraction_seed", 2, (), "int", _range(0, integer=True),
        "Seed of the LightGBM random stream of feature_fraction and feature_fraction_bynode "
        "(LightGBM's default 2; derived from seed when seed is given and this is not, as "
        "LightGBM).",
    ),
    Param(
        "feature_fraction_bynode", 1.0, ("sub_feature_bynode", "colsample_bynode"), "float",
        _range(0.0, 1.0, lo_open=True),
        "Share of the tree's features each node may split on, drawn per node as LightGBM "
        "does (its random stream, seeded by feature_fraction_seed, in its call order); 1.0 "
        "uses all. Leaves are then split in their turn (lookahead_leaves is 0).",
    ),
    Param(
        "extra_trees", False, ("extra_tree",), "bool", _any,
        "Extremely randomized trees: each feature is split at one threshold per node, drawn "
        "as LightGBM draws it (one random stream per feature, seeded extra_seed + its index "
        "among the non-trivial features). Leaves are then split in their turn "
        "(lookahead_leaves is 0).",
    ),
    Param(
        "extra_seed", 6, (), "int", _range(0, integer=True),
        "Seed of extra_trees' threshold draws (LightGBM's default 6; derived from seed when seed "
        "is given and this is not, as LightGBM).",
    ),
    Param(
        "use_quantized_grad", False, (), "bool", _any,
        "Quantized training (LightGBM's gradient discretizer; Shi et al., NeurIPS 2022): each "
        "tree discretizes the gradients and hessians into num_grad_quant_bins integer levels "
        "with scales from their largest magnitudes, and histograms and split search add "
        "integers (exact, so the same in any order of partitions). Numerical features only: "
        "with categorical features the fit raises.",
    ),
    Param(
        "num_grad_quant_bins", 4, (), "int", _range(2, 126, integer=True),
        "Levels of the quantized gradients (use_quantized_grad): gradients to integers in "
        "[-bins/2, bins/2], hessians in [0, bins] (1 for the constant hessians of L2, L1, "
        "Huber and quantile without weights, and MAPE). At most 126: the levels are int8 in "
        "LightGBM.",
    ),
    Param(
        "quant_train_renew_leaf", False, (), "bool", _any,
        "With use_quantized_grad: each tree's leaf values are recomputed from its rows' true "
        "(not quantized) gradient and hessian sums (LightGBM's RenewIntGradTreeOutput).",
    ),
    Param(
        "stochastic_rounding", True, (), "bool", _any,
        "With use_quantized_grad: round each scaled gradient and hessian up with probability "
        "its fractional part (unbiased; the uniforms are counter-based draws from seed, the "
        "tree's number and the global row, so not LightGBM's), else to the nearest integer "
        "(as LightGBM, deterministic).",
    ),
    Param(
        "interaction_constraints", None, (), "list of lists of int or None",
        lambda v: (None if v is None or all(f >= 0 for g in v for f in g)
                   else f"must hold feature indices >= 0, got {v!r}"),
        "Lists of feature indices allowed to interact: a branch of a tree may use features "
        "of one list only (features in several lists join them), and a feature in no list "
        "is never used (LightGBM's col_sampler.hpp). Indices must be below the number of "
        "features. None: no constraint.",
    ),
    Param(
        "early_stopping_rounds", None,
        ("early_stopping_round", "early_stopping", "n_iter_no_change"),
        "int or None", _range(1, integer=True, allow_none=True),
        "Stop when the eval metric has not improved for this many iterations; None (or any "
        "value <= 0, as in LightGBM) disables early stopping.",
        _normalize_early_stopping,
    ),
    Param(
        "early_stopping_min_delta", 0.0, (), "float", _range(0.0),
        "Early stopping: the least change of a metric that counts as an improvement "
        "(LightGBM's; >= 0): a round improves on the best score only when it beats it by more "
        "than this.",
    ),
    Param(
        "first_metric_only", False, (), "bool", _any,
        "Use only the first metric for early stopping.",
    ),
    Param(
        "verbose", False, ("verbosity",), "bool or int", _any,
        "Print progress; an integer is read as LightGBM's verbosity (> 0 means True).",
        _normalize_verbose,
    ),
    # ---- out-of-core / Dask ------------------------------------------------------------------
    Param(
        "chunk_rows", DEFAULT_CHUNK_ROWS, (), "int", _range(1, integer=True),
        "Rows per storage chunk where oocgbdt chunks the data itself: NumPy and scipy.sparse "
        "input to train (at most: between 131,072 and 1,048,576 rows they are cut into a "
        "multiple of the default partition count (2 to 4) of even chunks, so that the default "
        "partitions are even; Dask and Zarr input keep their chunks), and oocgbdt convert's "
        "Zarr datasets.",
    ),
    Param(
        "cache", "auto", (), "str", _one_of(("auto", "memory", "disk")),
        "Where the binned (bundled) training rows live between passes: 'memory' (on the "
        "workers; Dask may spill), 'disk' (written once, compressed, to a Zarr store at "
        "cache_path or a temporary directory, and streamed partition by partition in every "
        "pass) or 'auto' (memory when they fit in cache_memory_fraction of the cluster's "
        "memory, else disk; the choice is logged).",
    ),
    Param(
        "cache_path", None, (), "path or None", _any,
        "Directory of the disk cache (cache='disk', or 'auto' choosing disk). A path you name is "
        "kept after training and reused by a later fit on the same data and bin settings "
        "(checked by a fingerprint; a mismatch is an error, never silently used or "
        "overwritten). None: a temporary directory, deleted after training.",
    ),
    Param(
        "cache_memory_fraction", 0.5, (), "float", _range(0.0, 1.0, lo_open=True),
        "Share of the cluster's total worker memory limit that the binned rows may take for "
        "cache='auto' to keep them in memory.",
    ),
    Param(
        "partition_rows", None, (), "int or None", _range(1, integer=True, allow_none=True),
        "Rows per compute partition: consecutive storage chunks are grouped into partitions of "
        "at least this many rows (a chunk is never split), one task per partition per pass. "
        "None: chosen from the data alone (see oocgbdt.dask.partitions), so the same data and "
        "chunking give the same partitions, and the same model, on any cluster.",
    ),
    Param(
        "split_every", 8, (), "int", _range(2, integer=True),
        "Fan-in of the tree reduction of histograms and metric statistics.",
    ),
    Param(
        "min_workers", 1, (), "int", _range(1, integer=True),
        "Dask workers a fit on a client (given, or the default one) needs before it starts: "
        "with fewer, it waits for more to join (a cluster still starting, batch jobs still "
        "queued), logging 'waiting for workers: <n> of <min_workers>' and printing it with "
        "verbose, for at most worker_wait_timeout seconds. Counted again when the partitions "
        "are placed, so workers that joined meanwhile are used. The embedded LocalCluster (no "
        "client) has one worker and does not wait.",
    ),
    Param(
        "worker_wait_timeout", 600.0, (), "float", _range(0.0, lo_open=True),
        "Seconds a fit waits for min_workers Dask workers before it raises a TimeoutError "
        "naming how many joined (as distributed's Client.wait_for_workers timeout).",
    ),
    Param(
        "checkpoint_path", None, (), "path or None", _any,
        "File the fit's checkpoint is written to every checkpoint_every rounds (and when "
        "max_worker_failures is exceeded): the model so far, the evaluation history, the "
        "early-stopping and feature-screening state, written atomically (a temporary file "
        "then os.replace). train(..., resume=True) continues from it to the model an "
        "uninterrupted fit gives, bit for bit. A file there that is not an oocgbdt checkpoint "
        "is never overwritten (ValueError before any work).",
    ),
    Param(
        "checkpoint_every", 0, ("snapshot_freq", "save_period"), "int", _range(integer=True),
        "Rounds between checkpoints written to checkpoint_path (LightGBM's snapshot_freq, "
        "whose snapshots are separate model files; here one file is replaced each time). "
        "0 or less: none (a checkpoint_path then only receives the checkpoint written when "
        "max_worker_failures is exceeded).",
    ),
    Param(
        "max_worker_failures", 3, (), "int", _range(0, integer=True),
        "Workers a fit on several Dask workers may lose: after a loss the fit continues from "
        "the last round whose trees reached the caller, on the workers the cluster has then "
        "(every partition loaded again from the input or the disk cache, raw scores "
        "recomputed from the trees so far), to the model an undisturbed fit gives, bit for "
        "bit. A loss past that many raises a RuntimeError (WorkerLost) naming the lost "
        "workers and the rounds completed (and writes the checkpoint, with "
        "checkpoint_path). 0: the first loss raises.",
    ),
]

#: Canonical name -> :class:`Param`, in table order.
PARAMETERS = OrderedDict((p.name, p) for p in _TABLE)

#: Any accepted name (canonical or alias) -> canonical name.
ALIASES = {}
for _p in _TABLE:
    for _n in (_p.name,) + tuple(_p.aliases):
        if _n in ALIASES:  # pragma: no cover - table sanity
            raise RuntimeError(f"parameter name {_n!r} is used twice in the table")
        ALIASES[_n] = _p.name
del _p, _n


# --------------------------------------------------------------------------------------------
# Joint checks: resolved dict -> None (may fill derived values in place) or ValueError.
# --------------------------------------------------------------------------------------------


def _check_num_class(params):
    objective, num_class = params["objective"], params["num_class"]
    if objective == "custom":
        return  # a callable objective: one output per class, any num_class >= 1
    if objective in MULTICLASS_OBJECTIVES and num_class < 2:
        raise ValueError(
            f"num_class must be an integer >= 2 when objective is {objective!r}, got {num_class}"
        )
    if objective not in MULTICLASS_OBJECTIVES and num_class != 1:
        raise ValueError(
            f"num_class must be 1 when objective is {objective!r} (only 'multiclass' and "
            f"'multiclassova' use several classes), got {num_class}"
        )


def _check_auc_mu_weights(params):
    # Config::GetAucMuWeights (src/io/config.cpp), which LightGBM runs whatever the metric.
    weights, k = params["auc_mu_weights"], params["num_class"]
    if weights is None:
        return
    if len(weights) != k * k:
        raise ValueError(
            f"auc_mu_weights must have num_class**2 = {k * k} entries (the num_class x "
            f"num_class matrix, flattened row-major), got {len(weights)}"
        )
    zeros = [p for p in range(k * k) if p // k != p % k and abs(weights[p]) < K_ZERO_THRESHOLD]
    if zeros:
        raise ValueError(
            f"auc_mu_weights must be nonzero off the diagonal, got 0 at position {zeros[0]} "
            f"(row {zeros[0] // k}, column {zeros[0] % k})"
        )
    # a nonzero diagonal entry is read as 0, as LightGBM overwrites it
    params["auc_mu_weights"] = [0.0 if p // k == p % k else float(w)
                                for p, w in enumerate(weights)]


def _check_objective_params(params):
    # RegressionQuantileloss and BinaryLogloss's constructors (src/objective/*.hpp).
    if params["objective"] == "quantile" and not 0.0 < params["alpha"] < 1.0:
        raise ValueError(
            f"alpha must be in (0, 1) when objective is 'quantile' (it is the quantile "
            f"estimated), got {params['alpha']!r}"
        )
    if params["is_unbalance"] and abs(params["scale_pos_weight"] - 1.0) > 1e-6:
        raise ValueError(
            f"is_unbalance=True and scale_pos_weight={params['scale_pos_weight']!r} both "
            f"reweigh the positive label; set only one of them"
        )


def _check_metric_objective(params):
    objective = params["objective"]
    if params["metric"] is None:
        # A callable objective has no default metric (LightGBM: "custom" means none).
        params["metric"] = [DEFAULT_METRIC[objective]] if objective in DEFAULT_METRIC else []
    for name in params["metric"]:
        allowed = METRIC_OBJECTIVES[name]
        if objective not in allowed:
            raise ValueError(
                f"metric {name!r} cannot be computed for objective {objective!r}; it needs "
                f"objective {' or '.join(repr(o) for o in allowed)}, got {objective!r}"
            )


def _check_screening(params):
    if params["feature_screening"] is not None and params["feature_fraction"] < 1.0:
        raise ValueError(
            f"feature_screening={params['feature_screening']!r} and feature_fraction="
            f"{params['feature_fraction']} both choose each tree's features; use one of them "
            f"(feature_fraction is the uniform baseline of screening_beta=0)"
        )


def _check_sampling(params):
    if params["data_sample_strategy"] != "goss":
        return
    a, b = params["top_rate"], params["other_rate"]
    if a + b > 1.0 + 1e-12:  # tolerance for decimal shares such as 0.7 + 0.3
        raise ValueError(
            f"top_rate + other_rate must be <= 1 for data_sample_strategy='goss' (they are "
            f"shares of the rows), got top_rate={a} + other_rate={b} = {a + b:g}"
        )
    if params["bagging_freq"] > 0 and params["bagging_fraction"] < 1.0:
        raise ValueError(
            f"data_sample_strategy='goss' cannot be combined with bagging (bagging_fraction="
            f"{params['bagging_fraction']}, bagging_freq={params['bagging_freq']}): GOSS "
            f"already samples the rows of every round (the top_rate share by |gradient x "
            f"hessian| plus an other_rate random share of the rest), a bag on top would "
            f"change its sampling rates and weights, and LightGBM forbids the combination. Set "
            f"bagging_fraction=1.0 or bagging_freq=0, or use data_sample_strategy='bagging'."
        )


def _check_grow_policy(params):
    if params["grow_policy"] == "depthwise" and params["max_leaves_per_pass"] != 1:
        raise ValueError(
            f"max_leaves_per_pass={params['max_leaves_per_pass']} applies to "
            f"grow_policy='leafwise' only: grow_policy='depthwise' already splits every open leaf "
            f"with a positive gain in each pass (one pass per level). Leave max_leaves_per_pass "
            f"at 1, or use grow_policy='leafwise' with max_leaves_per_pass="
            f"{params['max_leaves_per_pass']}."
        )


def _check_node_draws(params):
    ahead = params["lookahead_leaves"]
    if ahead and (params["extra_trees"] or params["feature_fraction_bynode"] < 1.0):
        raise ValueError(
            f"lookahead_leaves={ahead} cannot be combined with extra_trees or "
            f"feature_fraction_bynode < 1: their random draws follow the order in which leaves "
            f"are searched, so leaves are split in their turn. Leave lookahead_leaves at None "
            f"or 0."
        )


_JOINT_CHECKS = [_check_num_class, _check_auc_mu_weights, _check_objective_params,
                 _check_metric_objective, _check_screening,
                 _check_sampling, _check_grow_policy, _check_node_draws]


# --------------------------------------------------------------------------------------------
# resolve_params
# --------------------------------------------------------------------------------------------


def _suggest(name):
    close = difflib.get_close_matches(name, list(ALIASES), n=3, cutoff=0.6)
    if not close:
        return ""
    texts = []
    for c in close:
        canonical = ALIASES[c]
        texts.append(repr(c) if c == canonical else f"{c!r} (alias of {canonical!r})")
    return f"; did you mean {' or '.join(texts)}?"


def _same(a, b):
    """Equality of two converted, normalized values (plain Python objects)."""
    try:
        return bool(a == b)
    except Exception:  # pragma: no cover - exotic values
        return a is b


def _convert(param, given_name, value):
    """Type-check and normalize one value; ``given_name`` is used in error messages."""
    label = param.name if given_name == param.name else f"{param.name} (given as {given_name!r})"
    value = _CONVERTERS[param.type](label, _unwrap(value))
    if param.normalize is not None:
        value = param.normalize(value)
    error = param.check(value)
    if error is not None:
        raise ValueError(f"{label} {error}")
    return value


def check_param(name, value):
    """Validate and normalize one parameter alone (no checks across parameters).

    Parameters
    ----------
    name : str
        A canonical name or an alias.
    value : object

    Returns
    -------
    The normalized value, as :func:`resolve_params` would hold it.

    Raises
    ------
    TypeError, ValueError
        As :func:`resolve_params` for this parameter's type and constraint; ValueError for an
        unknown name.
    """
    canonical = ALIASES.get(name)
    if canonical is None:
        raise ValueError(f"Unknown parameter {name!r}{_suggest(name) or '.'}")
    return _convert(PARAMETERS[canonical], name, value)


#: Accepted LightGBM parameters already warned about in this process (one warning per name).
_WARNED = set()


def resolve_params(params=None):
    """Validate user parameters and return every canonical parameter with defaults filled.

    Parameters
    ----------
    params : dict or None
        User parameters, keyed by canonical name or any alias (LightGBM's and scikit-learn's
        names). NumPy scalars and 0-d arrays are accepted in place of Python scalars. The dict
        is never modified.

    Returns
    -------
    resolved : dict
        A new dict with one entry per :data:`PARAMETERS` name, in table order, holding
        normalized Python values: value aliases mapped (``objective='mse'`` ->
        ``'regression'``), ``metric`` a list of canonical metric names (the objective's default
        when None was given, ``[]`` for ``'None'``), ``verbose`` a bool, ``max_depth <= 0`` ->
        -1, ``seed=None`` -> 0, ``early_stopping_rounds <= 0`` -> None. Resolving a resolved
        dict returns an equal dict.

    Raises
    ------
    TypeError
        If ``params`` is not a dict, a key is not a str, or a value has the wrong type (e.g. a
        str ``learning_rate``, a float ``num_leaves``, a bool where an int is expected).
    ValueError
        If a name is unknown (the message suggests the closest known names), if a canonical
        name and an alias (or two aliases) are both given with different values, or if a value
        violates its constraint (the message names the parameter, the expected values and the
        value found, e.g. ``"num_leaves must be an integer >= 2 and <= 131072, got 1"``), or
        if parameters are inconsistent (``num_class`` vs ``objective``, a metric that the
        objective cannot produce), or if a LightGBM parameter that oocgbdt refuses is given (the
        message gives the reason; see :mod:`oocgbdt.lightgbm_parameters`).

    Warns
    -----
    UserWarning
        Once per name, for a LightGBM parameter that changes nothing in oocgbdt (for example
        ``deterministic``, ``num_machines``); it is dropped.
    """
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict or None, got {type(params).__name__}")

    unknown = []
    given = {}  # canonical -> list of (given_name, converted value)
    for key, value in params.items():
        if not isinstance(key, str):
            raise TypeError(f"parameter names must be str, got {type(key).__name__} {key!r}")
        canonical = ALIASES.get(key)
        if canonical is None:
            foreign = foreign_parameter(key, value)
            if foreign is None:
                unknown.append(key)
            elif foreign.status == "refused":
                raise ValueError(f"Parameter {key}={value!r} is not supported: {foreign.text}.")
            elif key not in _WARNED:
                _WARNED.add(key)
                warnings.warn(f"Parameter {key}={value!r} changes nothing in oocgbdt: "
                              f"{foreign.text}.", UserWarning, stacklevel=2)
            continue
        given.setdefault(canonical, []).append((key, value))
    if unknown:
        texts = [f"Unknown parameter {name!r}{_suggest(name) or '.'}" for name in unknown]
        raise ValueError(
            " ".join(texts)
            + " See oocgbdt.params.PARAMETERS for the accepted names and their aliases."
        )

    resolved = {}
    for name, param in PARAMETERS.items():
        entries = given.get(name)
        if not entries:
            default = param.default
            resolved[name] = list(default) if isinstance(default, list) else default
            continue
        values = [(n, _convert(param, n, v)) for n, v in entries]
        first_name, first = values[0]
        for other_name, other in values[1:]:
            if not _same(first, other):
                raise ValueError(
                    f"Parameter {name!r} was given more than once with different values: "
                    f"{first_name}={entries[0][1]!r} and "
                    f"{other_name}={dict(entries)[other_name]!r}; give it once "
                    f"(aliases: {', '.join(repr(a) for a in (name,) + param.aliases)})"
                )
        resolved[name] = first

    if given.get("seed") and resolved["seed"] is not None and given["seed"][0][1] is not None:
        for name, value in lightgbm_derived_seeds(resolved["seed"]).items():
            if name in resolved and name not in given:
                resolved[name] = value
    for joint_check in _JOINT_CHECKS:
        joint_check(resolved)
    return resolved


#: The seeds LightGBM derives from ``seed``, in the order of their draws (``src/io/config.cpp``,
#: ``Config::Set``); ``drop_seed`` is not a parameter of oocgbdt.
DERIVED_SEEDS = ("data_random_seed", "bagging_seed", "drop_seed", "feature_fraction_seed",
                 "objective_seed", "extra_seed")


def lightgbm_derived_seeds(seed: int) -> dict:
    """The seeds LightGBM sets from a given ``seed``: ``Random(seed).NextShort(0, 32767)`` for
    each of :data:`DERIVED_SEEDS` in turn. A seed given explicitly keeps its value (LightGBM
    reads the parameters after deriving)."""
    # One step of LightGBM's generator (include/LightGBM/utils/random.h) per seed; params sits
    # below the kernels (oocgbdt.kernels.splitting.lcg_step), so the step is written out here.
    state, out = int(seed) & 0xFFFFFFFF, {}
    for name in DERIVED_SEEDS:
        state = (214013 * state + 2531011) & 0xFFFFFFFF
        out[name] = ((state >> 16) & 0x7FFF) % 32767
    return out


# --------------------------------------------------------------------------------------------
# Docstring templating
# --------------------------------------------------------------------------------------------


def param_docs(names=None, *, indent=4):
    """Return numpydoc ``Parameters`` entries for the given parameters.

    Parameters
    ----------
    names : iterable of str or None
        Canonical names (aliases are accepted and mapped); None means every parameter, in table
        order.
    indent : int, default=4
        Number of spaces before each ``name : type`` line; descriptions get 4 more.

    Returns
    -------
    str
        One entry per parameter, e.g.::

            num_leaves : int, default=31
                Maximum number of leaves in one tree (leaf-wise growth). Aliases: num_leaf, ...

    Raises
    ------
    KeyError
        If a name is not a known parameter or alias.
    """
    if names is None:
        names = list(PARAMETERS)
    pad, pad2 = " " * indent, " " * (indent + 4)
    lines = []
    for n in names:
        p = PARAMETERS[ALIASES[n]]
        lines.append(f"{pad}{p.name} : {p.type}, default={p.default!r}")
        text = p.doc
        if p.aliases:
            text += f" Aliases: {', '.join(p.aliases)}."
        lines.append(f"{pad2}{text}")
    return "\n".join(lines)
