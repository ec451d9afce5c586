"""This module contains LightGBM's text model format: writing a :class:`~oocgbdt.core.booster.Booster`
as a file ``lightgbm.Booster(model_file=...)`` reads, and reading a file LightGBM wrote.

Pure text and NumPy. Facts from LightGBM's ``src/boosting/gbdt_model_text.cpp``
(``SaveModelToString``, ``LoadModelFromString``) and ``src/io/tree.cpp`` (``Tree::ToString``,
the ``Tree`` constructor from a string):

* header lines ``key=value`` (``tree``, ``version``, ``num_class``, ``num_tree_per_iteration``,
  ``label_index``, ``max_feature_idx``, ``objective``, ``feature_names``, ``feature_infos``), a
  blank line, then one ``Tree=i`` block per tree ending with a blank line, ``end of trees``,
  ``feature_importances:``, a ``parameters:`` .. ``end of parameters`` block and
  ``pandas_categorical:``;
* leaf values are stored already shrunk, and LightGBM folds the boost-from-average initial
  score of each class into that class's first tree (``Tree::AddBias``: leaf and internal values
  plus the score, shrinkage set to 1). oocgbdt keeps the initial score apart
  (``Booster.init_score``), so writing folds it in (without ``AddBias``'s rounding of values
  below ``kZeroThreshold`` to zero) and reading leaves ``init_score`` at zero: raw scores agree
  exactly, since ``0 + (v + s)`` equals ``s + v`` in floating point;
* doubles are written with 17 significant digits (``%.17g``), which reads back to the same
  double.
"""
from __future__ import annotations

import json

import numpy as np

__all__ = ["to_lightgbm_string", "from_lightgbm_string", "is_lightgbm_text",
           "lightgbm_transform", "LIGHTGBM_PARAMETER_NAMES"]

#: oocgbdt parameters that LightGBM knows by the same name (written in ``parameters:``);
#: the others are LightGBM-unknown and would be reported as unrecognized when LightGBM loads.
LIGHTGBM_PARAMETER_NAMES = (
    "objective", "num_class", "learning_rate", "num_leaves", "max_depth", "histogram_pool_size",
    "min_data_in_leaf", "min_sum_hessian_in_leaf", "lambda_l1", "lambda_l2",
    "min_gain_to_split", "max_bin", "min_data_in_bin", "bin_construct_sample_cnt",
    "data_random_seed", "use_missing", "zero_as_missing", "feature_pre_filter", "enable_bundle",
    "boost_from_average", "seed", "data_sample_strategy", "top_rate", "other_rate",
    "bagging_fraction", "bagging_freq", "bagging_seed", "metric", "feature_fraction",
    "feature_fraction_seed", "objective_seed", "extra_seed", "first_metric_only")
#: oocgbdt name -> LightGBM name where they differ.
_RENAMED = {"n_estimators": "num_iterations", "early_stopping_rounds": "early_stopping_round"}


def _g(x) -> str:
    """A double as ``%.17g`` (LightGBM's high-precision ``ArrayToString``)."""
    return format(float(x), ".17g")


def _join_floats(values) -> str:
    return " ".join(_g(v) for v in np.asarray(values, dtype=np.float64))


def _join_ints(values) -> str:
    return " ".join(str(int(round(float(v)))) for v in np.asarray(values).ravel())


def _param_value(value) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if value is None:
        return ""
    if isinstance(value, float):
        return _g(value)
    return str(value)


def _tree_block(tree, bias=0.0) -> str:
    """One ``Tree::ToString`` block (without its ``Tree=i`` line), ``bias`` folded in."""
    n_nodes = int(tree.split_feature.shape[0])
    leaf_value = tree.leaf_value
    internal_value = tree.internal_value
    shrinkage = tree.shrinkage
    if bias != 0.0:
        # not rounded to zero below kZeroThreshold as AddBias does: oocgbdt's raw score is
        # ``bias + value`` exactly, and so must LightGBM's be
        leaf_value = leaf_value + bias
        internal_value = internal_value + bias
        shrinkage = 1.0
    cat_boundaries = getattr(tree, "cat_boundaries", None)
    cat_threshold = getattr(tree, "cat_threshold", None)
    num_cat = 0 if cat_boundaries is None else max(len(cat_boundaries) - 1, 0)
    lines = [f"num_leaves={tree.n_leaves}", f"num_cat={num_cat}"]
    if n_nodes:
        lines += [
            "split_feature=" + _join_ints(tree.split_feature),
            "split_gain=" + _join_floats(tree.split_gain),
            "threshold=" + _join_floats(tree.threshold),
            "decision_type=" + _join_ints(tree.decision_type),
            "left_child=" + _join_ints(tree.left_child),
            "right_child=" + _join_ints(tree.right_child),
        ]
    else:
        lines += ["split_feature=", "split_gain=", "threshold=", "decision_type=",
                  "left_child=", "right_child="]
    lines += [
        "leaf_value=" + _join_floats(leaf_value),
        "leaf_weight=" + _join_floats(tree.leaf_weight),
        "leaf_count=" + _join_ints(tree.leaf_count),
        "internal_value=" + (_join_floats(internal_value) if n_nodes else ""),
        "internal_weight=" + (_join_floats(tree.internal_weight) if n_nodes else ""),
        "internal_count=" + (_join_ints(tree.internal_count) if n_nodes else ""),
    ]
    if num_cat > 0:
        lines += ["cat_boundaries=" + _join_ints(cat_boundaries),
                  "cat_threshold=" + " ".join(str(int(v)) for v in np.asarray(cat_threshold))]
    lines += ["is_linear=0", f"shrinkage={_g(shrinkage)}", "", ""]
    return "\n".join(lines)


def to_lightgbm_string(booster, start_iteration=0, num_iteration=None) -> str:
    """The text of ``booster`` in LightGBM's model format.

    Parameters
    ----------
    booster : Booster
    start_iteration : int, default 0
        First round written (LightGBM ``start_iteration``); the initial score is folded into
        the first written round only when it is round 0.
    num_iteration : int or None, default None
        Rounds written; None or <= 0: every round from ``start_iteration`` on.

    Returns
    -------
    str
        A model ``lightgbm.Booster(model_str=...)`` (or ``model_file=``) loads, whose
        ``predict(X, raw_score=True)`` equals ``booster.predict(X, raw_score=True)``.
    """
    k = booster.n_outputs
    objective_line = getattr(booster, "objective_line", None) or \
        booster.objective.lightgbm_objective_string
    num_class = booster.params.get("num_class", k) if k > 1 else 1
    names = [str(n).replace(" ", "_") for n in booster.feature_names]
    infos = booster.feature_infos or ["none"] * booster.n_features
    trees = list(booster.trees)
    init = booster.init_score
    if not trees and np.any(init != 0.0):
        trees = [_constant_tree(v, c) for c, v in enumerate(init)]
        init = np.zeros_like(init)
    total = len(trees) // k
    start = min(max(int(start_iteration), 0), total)
    end = total if num_iteration is None or num_iteration <= 0 else \
        min(total, start + int(num_iteration))
    out = ["tree", "version=v4", f"num_class={num_class}", f"num_tree_per_iteration={k}",
           "label_index=0", f"max_feature_idx={booster.n_features - 1}",
           f"objective={objective_line}", "feature_names=" + " ".join(names),
           "feature_infos=" + " ".join(infos), ""]
    text = ["\n".join(out) + "\n"]
    for i in range(start * k, end * k):
        # every non-zero score is folded in (LightGBM's training skips those within kEpsilon,
        # but folding them keeps the raw scores equal to oocgbdt's)
        bias = float(init[i % k]) if i < k else 0.0
        text.append(f"Tree={i - start * k}\n" + _tree_block(trees[i], bias))
    text.append("end of trees\n")
    importance = np.zeros(booster.n_features, dtype=np.int64)
    for t in trees[start * k:end * k]:
        np.add.at(importance, t.split_feature, 1)
    order = sorted((i for i in range(booster.n_features) if importance[i] > 0),
                   key=lambda i: -importance[i])  # stable: ties keep feature order
    text.append("\nfeature_importances:\n" +
                "".join(f"{names[i]}={importance[i]}\n" for i in order))
    params = []
    for name, value in booster.params.items():
        lgb_name = _RENAMED.get(name, name)
        if name in LIGHTGBM_PARAMETER_NAMES or name in _RENAMED:
            params.append(f"[{lgb_name}: {_param_value(value)}]")
    text.append("\nparameters:\n" + "\n".join(params) + "\n\nend of parameters\n")
    pandas_categorical = getattr(booster, "pandas_categorical", None)
    text.append("\npandas_categorical:" + json.dumps(pandas_categorical) + "\n")
    return "".join(text)


def _constant_tree(value, class_idx):
    from oocgbdt.core.tree import Tree
    empty_i, empty_f = np.zeros(0, np.int32), np.zeros(0, np.float64)
    return Tree(split_feature=empty_i, threshold=empty_f, threshold_bin=empty_i,
                decision_type=np.zeros(0, np.uint8), left_child=empty_i, right_child=empty_i,
                split_gain=empty_f, internal_value=empty_f, internal_weight=empty_f,
                internal_count=empty_f, leaf_value=[value], leaf_weight=[0.0], leaf_count=[0.0],
                shrinkage=1.0, class_idx=class_idx)


# ------------------------------------------------------------------------------------------
# reading
# ------------------------------------------------------------------------------------------
def is_lightgbm_text(head: str) -> bool:
    """True when ``head`` (the start of a file) is a LightGBM text model: its first line is
    the model type ``tree``."""
    return head.lstrip("\ufeff").split("\n", 1)[0].strip() == "tree"


def _floats(text, n, what):
    values = np.asarray([float(v) for v in text.split()], dtype=np.float64) if text.strip() \
        else np.zeros(0, np.float64)
    if values.shape[0] != n:
        raise ValueError(f"LightGBM model: {what} has {values.shape[0]} values, expected {n}.")
    return values


def _ints(text, n, what, dtype=np.int32):
    values = np.asarray([int(v) for v in text.split()], dtype=np.int64) if text.strip() \
        else np.zeros(0, np.int64)
    if n is not None and values.shape[0] != n:
        raise ValueError(f"LightGBM model: {what} has {values.shape[0]} values, expected {n}.")
    return values.astype(dtype)


def _parse_tree(fields: dict, class_idx: int, index: int):
    from oocgbdt.core.tree import Tree
    try:
        n_leaves = int(fields["num_leaves"])
        num_cat = int(fields.get("num_cat", "0"))
        leaf_value_text = fields["leaf_value"]
    except KeyError as exc:
        raise ValueError(f"LightGBM model: Tree={index} has no {exc.args[0]} line.") from None
    if int(fields.get("is_linear", "0")) != 0:
        raise ValueError(f"LightGBM model: Tree={index} is a linear tree (is_linear=1), which "
                         f"oocgbdt does not predict with.")
    m = n_leaves - 1
    get = lambda key, default: fields.get(key, default) if m > 0 else ""
    zeros = " ".join(["0"] * m)
    tree = Tree(
        split_feature=_ints(get("split_feature", None) or "", m, "split_feature"),
        threshold=_floats(get("threshold", None) or "", m, "threshold"),
        threshold_bin=np.full(m, -1, np.int32),
        decision_type=_ints(get("decision_type", zeros), m, "decision_type", np.uint8),
        left_child=_ints(get("left_child", None) or "", m, "left_child"),
        right_child=_ints(get("right_child", None) or "", m, "right_child"),
        split_gain=_floats(get("split_gain", zeros), m, "split_gain"),
        internal_value=_floats(get("internal_value", zeros), m, "internal_value"),
        internal_weight=_floats(get("internal_weight", zeros), m, "internal_weight"),
        internal_count=_floats(get("internal_count", zeros), m, "internal_count"),
        leaf_value=_floats(leaf_value_text, n_leaves, "leaf_value"),
        leaf_weight=_floats(fields.get("leaf_weight", " ".join(["0"] * n_leaves)), n_leaves,
                            "leaf_weight"),
        leaf_count=_floats(fields.get("leaf_count", " ".join(["0"] * n_leaves)), n_leaves,
                           "leaf_count"),
        shrinkage=float(fields.get("shrinkage", "1")), class_idx=class_idx)
    if num_cat > 0:
        tree.cat_boundaries = _ints(fields["cat_boundaries"], num_cat + 1, "cat_boundaries")
        tree.cat_threshold = _ints(fields["cat_threshold"], None, "cat_threshold", np.uint32)
    return tree


def _parse_value(text):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _params_from(objective_line, num_class, lgb_params):
    """oocgbdt params for a LightGBM model: objective and num_class from the header, and the
    LightGBM parameters that oocgbdt shares and accepts."""
    from oocgbdt.params import PARAMETERS, resolve_params
    name = objective_line.split()[0] if objective_line else "regression"
    base = {"objective": name if name in ("regression", "binary", "multiclass") else "regression"}
    if base["objective"] == "multiclass":
        base["num_class"] = num_class
    base = resolve_params(base)
    renamed = {v: k for k, v in _RENAMED.items()}
    for key, text in lgb_params.items():
        key = renamed.get(key, key)
        if key in ("objective", "num_class") or key not in PARAMETERS:
            continue
        value = _parse_value(text)
        if key == "metric":
            value = [v for v in str(text).split(",") if v] or None
        try:
            base = resolve_params({**base, key: value})
        except (TypeError, ValueError):
            continue  # a value oocgbdt does not accept; the trees do not depend on it
    return base


def from_lightgbm_string(text: str):
    """A :class:`~oocgbdt.core.booster.Booster` from the text of a LightGBM model.

    The trees keep LightGBM's values (the initial score stays folded into the first trees;
    ``init_score`` is zero). The objective line is kept as ``booster.objective_line`` and
    drives :func:`lightgbm_transform` at prediction.

    Raises
    ------
    ValueError
        Not a LightGBM text model, a required line missing, a field with the wrong number of
        values, a linear tree, or a random forest (``average_output``).
    """
    from oocgbdt.core.booster import Booster
    if not is_lightgbm_text(text):
        raise ValueError("Not a LightGBM text model: its first line is not 'tree'.")
    lines = text.lstrip("\ufeff").splitlines()
    header, i = {}, 1
    while i < len(lines) and not lines[i].startswith("Tree=") and lines[i] != "end of trees":
        line = lines[i].strip()
        if "=" in line:
            key, value = line.split("=", 1)
            header[key] = value
        elif line == "average_output":
            raise ValueError("LightGBM model: 'average_output' (random forest mode) averages "
                             "its trees, which oocgbdt does not predict with.")
        i += 1
    for key in ("num_class", "max_feature_idx", "feature_names", "feature_infos"):
        if key not in header:
            raise ValueError(f"LightGBM model: the header has no {key}= line.")
    num_class = int(header["num_class"])
    k = int(header.get("num_tree_per_iteration", num_class))
    n_features = int(header["max_feature_idx"]) + 1
    trees = []
    while i < len(lines) and lines[i].startswith("Tree="):
        index = int(lines[i][5:])
        fields = {}
        i += 1
        while i < len(lines) and lines[i].strip():
            key, _, value = lines[i].partition("=")
            fields[key] = value
            i += 1
        trees.append(_parse_tree(fields, len(trees) % k, index))
        while i < len(lines) and not lines[i].strip():
            i += 1
    lgb_params, pandas_categorical = {}, None
    while i < len(lines):
        line = lines[i]
        if line == "parameters:":
            i += 1
            while i < len(lines) and lines[i] != "end of parameters":
                p = lines[i].strip()
                if p.startswith("[") and p.endswith("]") and ":" in p:
                    key, value = p[1:-1].split(":", 1)
                    lgb_params[key.strip()] = value.strip()
                i += 1
        elif line.startswith("pandas_categorical:"):
            pandas_categorical = json.loads(line[len("pandas_categorical:"):] or "null")
        i += 1
    objective_line = header.get("objective")
    params = _params_from(objective_line, num_class, lgb_params)
    names = header["feature_names"].split()
    infos = header["feature_infos"].split()
    booster = Booster(trees, np.zeros(k), params, n_features, feature_names=names,
                      feature_infos=infos, objective_line=objective_line,
                      pandas_categorical=pandas_categorical)
    return booster


def _sigmoid(x, s):
    return 1.0 / (1.0 + np.exp(-s * x))


def lightgbm_transform(objective_line, raw):
    """Predictions from raw scores as LightGBM's objective ``ConvertOutput`` for an objective
    line (``src/objective/*.hpp``).

    Parameters
    ----------
    objective_line : str or None
        E.g. ``"binary sigmoid:1"``, ``"multiclass num_class:3"``, ``"regression"``; None:
        raw scores are returned.
    raw : ndarray of shape (n_samples, n_outputs), float64

    Returns
    -------
    ndarray of float64, shape (n_samples,) for one output, else (n_samples, n_outputs).

    Raises
    ------
    ValueError
        An objective whose transform oocgbdt does not know (predict with ``raw_score=True``).
    """
    raw = np.asarray(raw, dtype=np.float64)
    one = raw[:, 0] if raw.ndim == 2 and raw.shape[1] == 1 else raw
    if not objective_line:
        return one
    parts = objective_line.split()
    name = parts[0]
    opts = dict(p.split(":", 1) for p in parts[1:] if ":" in p)
    if name in ("regression", "regression_l1", "huber", "fair", "quantile", "mape"):
        return np.sign(one) * one * one if "sqrt" in parts else one
    if name in ("binary", "multiclassova", "cross_entropy"):
        return _sigmoid(one, float(opts.get("sigmoid", 1.0)))
    if name == "multiclass":
        z = raw - raw.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)
    if name in ("poisson", "gamma", "tweedie"):
        return np.exp(one)
    if name in ("cross_entropy_lambda",):
        return np.log1p(np.exp(one))
    raise ValueError(f"LightGBM model objective {objective_line!r}: oocgbdt does not know its "
                     f"output transform; predict with raw_score=True.")

