"""This module contains the account of every LightGBM parameter in oocgbdt.

Each parameter of LightGBM's ``docs/Parameters.rst`` (its core, learning control, IO, objective,
metric, network and GPU sections) is one of:

- **implemented**: a parameter (or alias) of :data:`oocgbdt.params.PARAMETERS`, with LightGBM's
  meaning and default (found by name, so a parameter is implemented once it is in that table);
- **accepted** with a meaning stated here: it changes nothing in oocgbdt, because oocgbdt does
  what it asks anyway or because what it configures belongs to Dask (the cluster, its network);
  :func:`oocgbdt.params.resolve_params` warns once per name and drops it;
- **refused**, with the reason: :func:`oocgbdt.params.resolve_params` raises ``ValueError``
  giving it.

XGBoost's common names that are not LightGBM aliases are listed in :data:`XGBOOST_NAMES`, each
with the LightGBM name to use. ``docs/parameters.md`` is generated from this module and
:mod:`oocgbdt.params` by ``python -m oocgbdt.lightgbm_parameters`` (a test keeps it in sync).
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LIGHTGBM_PARAMETERS", "ACCEPTED", "REFUSED", "XGBOOST_NAMES", "Foreign",
           "foreign_parameter", "parameters_markdown"]

#: ``(name, section, aliases)`` of every parameter in LightGBM's ``docs/Parameters.rst``
#: (LightGBM 4.x), in its order.
LIGHTGBM_PARAMETERS = (
    ("config", "core", ('config_file',)),
    ("task", "core", ('task_type',)),
    ("objective", "core", ('objective_type', 'app', 'application', 'loss')),
    ("boosting", "core", ('boosting_type', 'boost')),
    ("data_sample_strategy", "core", ()),
    ("data", "core", ('train', 'train_data', 'train_data_file', 'data_filename')),
    ("valid", "core", ('test', 'valid_data', 'valid_data_file', 'test_data', 'test_data_file', 'valid_filenames')),
    ("num_iterations", "core", ('num_iteration', 'n_iter', 'num_tree', 'num_trees', 'num_round', 'num_rounds', 'nrounds', 'num_boost_round', 'n_estimators', 'max_iter')),
    ("learning_rate", "core", ('shrinkage_rate', 'eta')),
    ("num_leaves", "core", ('num_leaf', 'max_leaves', 'max_leaf', 'max_leaf_nodes')),
    ("tree_learner", "core", ('tree', 'tree_type', 'tree_learner_type')),
    ("num_threads", "core", ('num_thread', 'nthread', 'nthreads', 'n_jobs')),
    ("device_type", "core", ('device',)),
    ("seed", "core", ('random_seed', 'random_state')),
    ("deterministic", "core", ()),
    ("force_col_wise", "learning control", ()),
    ("force_row_wise", "learning control", ()),
    ("histogram_pool_size", "learning control", ('hist_pool_size',)),
    ("max_depth", "learning control", ()),
    ("min_data_in_leaf", "learning control", ('min_data_per_leaf', 'min_data', 'min_child_samples', 'min_samples_leaf')),
    ("min_sum_hessian_in_leaf", "learning control", ('min_sum_hessian_per_leaf', 'min_sum_hessian', 'min_hessian', 'min_child_weight')),
    ("bagging_fraction", "learning control", ('sub_row', 'subsample', 'bagging')),
    ("pos_bagging_fraction", "learning control", ('pos_sub_row', 'pos_subsample', 'pos_bagging')),
    ("neg_bagging_fraction", "learning control", ('neg_sub_row', 'neg_subsample', 'neg_bagging')),
    ("bagging_freq", "learning control", ('subsample_freq',)),
    ("bagging_seed", "learning control", ('bagging_fraction_seed',)),
    ("bagging_by_query", "learning control", ()),
    ("feature_fraction", "learning control", ('sub_feature', 'colsample_bytree')),
    ("feature_fraction_bynode", "learning control", ('sub_feature_bynode', 'colsample_bynode')),
    ("feature_fraction_seed", "learning control", ()),
    ("extra_trees", "learning control", ('extra_tree',)),
    ("extra_seed", "learning control", ()),
    ("early_stopping_round", "learning control", ('early_stopping_rounds', 'early_stopping', 'n_iter_no_change')),
    ("early_stopping_min_delta", "learning control", ()),
    ("first_metric_only", "learning control", ()),
    ("max_delta_step", "learning control", ('max_tree_output', 'max_leaf_output')),
    ("lambda_l1", "learning control", ('reg_alpha', 'l1_regularization')),
    ("lambda_l2", "learning control", ('reg_lambda', 'lambda', 'l2_regularization')),
    ("linear_lambda", "learning control", ()),
    ("min_gain_to_split", "learning control", ('min_split_gain',)),
    ("drop_rate", "learning control", ('rate_drop',)),
    ("max_drop", "learning control", ()),
    ("skip_drop", "learning control", ()),
    ("xgboost_dart_mode", "learning control", ()),
    ("uniform_drop", "learning control", ()),
    ("drop_seed", "learning control", ()),
    ("top_rate", "learning control", ()),
    ("other_rate", "learning control", ()),
    ("min_data_per_group", "learning control", ()),
    ("max_cat_threshold", "learning control", ()),
    ("cat_l2", "learning control", ()),
    ("cat_smooth", "learning control", ()),
    ("max_cat_to_onehot", "learning control", ()),
    ("top_k", "learning control", ('topk',)),
    ("monotone_constraints", "learning control", ('mc', 'monotone_constraint', 'monotonic_cst')),
    ("monotone_constraints_method", "learning control", ('monotone_constraining_method', 'mc_method')),
    ("monotone_penalty", "learning control", ('monotone_splits_penalty', 'ms_penalty', 'mc_penalty')),
    ("feature_contri", "learning control", ('feature_contrib', 'fc', 'fp', 'feature_penalty')),
    ("forcedsplits_filename", "learning control", ('fs', 'forced_splits_filename', 'forced_splits_file', 'forced_splits')),
    ("refit_decay_rate", "learning control", ()),
    ("cegb_tradeoff", "learning control", ()),
    ("cegb_penalty_split", "learning control", ()),
    ("cegb_penalty_feature_lazy", "learning control", ()),
    ("cegb_penalty_feature_coupled", "learning control", ()),
    ("path_smooth", "learning control", ()),
    ("interaction_constraints", "learning control", ()),
    ("verbosity", "learning control", ('verbose',)),
    ("input_model", "learning control", ('model_input', 'model_in')),
    ("output_model", "learning control", ('model_output', 'model_out')),
    ("saved_feature_importance_type", "learning control", ()),
    ("snapshot_freq", "learning control", ('save_period',)),
    ("use_quantized_grad", "learning control", ()),
    ("num_grad_quant_bins", "learning control", ()),
    ("quant_train_renew_leaf", "learning control", ()),
    ("stochastic_rounding", "learning control", ()),
    ("linear_tree", "dataset", ('linear_trees',)),
    ("max_bin", "dataset", ('max_bins',)),
    ("max_bin_by_feature", "dataset", ()),
    ("min_data_in_bin", "dataset", ()),
    ("bin_construct_sample_cnt", "dataset", ('subsample_for_bin',)),
    ("data_random_seed", "dataset", ('data_seed',)),
    ("is_enable_sparse", "dataset", ('is_sparse', 'enable_sparse', 'sparse')),
    ("enable_bundle", "dataset", ('is_enable_bundle', 'bundle')),
    ("use_missing", "dataset", ()),
    ("zero_as_missing", "dataset", ()),
    ("feature_pre_filter", "dataset", ()),
    ("pre_partition", "dataset", ('is_pre_partition',)),
    ("two_round", "dataset", ('two_round_loading', 'use_two_round_loading')),
    ("header", "dataset", ('has_header',)),
    ("label_column", "dataset", ('label',)),
    ("weight_column", "dataset", ('weight',)),
    ("group_column", "dataset", ('group', 'group_id', 'query_column', 'query', 'query_id')),
    ("ignore_column", "dataset", ('ignore_feature', 'blacklist')),
    ("categorical_feature", "dataset", ('cat_feature', 'categorical_column', 'cat_column', 'categorical_features')),
    ("forcedbins_filename", "dataset", ()),
    ("save_binary", "dataset", ('is_save_binary', 'is_save_binary_file')),
    ("precise_float_parser", "dataset", ()),
    ("parser_config_file", "dataset", ()),
    ("start_iteration_predict", "predict", ()),
    ("num_iteration_predict", "predict", ()),
    ("predict_raw_score", "predict", ('is_predict_raw_score', 'predict_rawscore', 'raw_score')),
    ("predict_leaf_index", "predict", ('is_predict_leaf_index', 'leaf_index')),
    ("predict_contrib", "predict", ('is_predict_contrib', 'contrib')),
    ("predict_disable_shape_check", "predict", ()),
    ("pred_early_stop", "predict", ()),
    ("pred_early_stop_freq", "predict", ()),
    ("pred_early_stop_margin", "predict", ()),
    ("output_result", "predict", ('predict_result', 'prediction_result', 'predict_name', 'prediction_name', 'pred_name', 'name_pred')),
    ("convert_model_language", "convert", ()),
    ("convert_model", "convert", ('convert_model_file',)),
    ("objective_seed", "objective", ()),
    ("num_class", "objective", ('num_classes',)),
    ("is_unbalance", "objective", ('unbalance', 'unbalanced_sets')),
    ("scale_pos_weight", "objective", ()),
    ("sigmoid", "objective", ()),
    ("boost_from_average", "objective", ()),
    ("reg_sqrt", "objective", ()),
    ("alpha", "objective", ()),
    ("fair_c", "objective", ()),
    ("poisson_max_delta_step", "objective", ()),
    ("tweedie_variance_power", "objective", ()),
    ("lambdarank_truncation_level", "objective", ()),
    ("lambdarank_norm", "objective", ()),
    ("label_gain", "objective", ()),
    ("lambdarank_position_bias_regularization", "objective", ()),
    ("metric", "metric", ('metrics', 'metric_types')),
    ("metric_freq", "metric", ('output_freq',)),
    ("is_provide_training_metric", "metric", ('training_metric', 'is_training_metric', 'train_metric')),
    ("eval_at", "metric", ('ndcg_eval_at', 'ndcg_at', 'map_eval_at', 'map_at')),
    ("multi_error_top_k", "metric", ()),
    ("auc_mu_weights", "metric", ()),
    ("num_machines", "network", ('num_machine',)),
    ("local_listen_port", "network", ('local_port', 'port')),
    ("time_out", "network", ()),
    ("machine_list_filename", "network", ('machine_list_file', 'machine_list', 'mlist')),
    ("machines", "network", ('workers', 'nodes')),
    ("gpu_platform_id", "gpu", ()),
    ("gpu_device_id", "gpu", ()),
    ("gpu_device_id_list", "gpu", ()),
    ("gpu_use_dp", "gpu", ()),
    ("num_gpu", "gpu", ()),
)

_DASK_CLUSTER = ("the cluster is Dask's: workers, their addresses and their network come from "
                 "the distributed.Client given (or the default one), not from parameters")
_PREDICT_ARG = "prediction options are arguments of Booster.predict, not training parameters"
_DART = "the dart booster is not implemented (boosting='gbdt' only)"
_FILES = ("files are read by `oocgbdt convert` (its --label, --weight and --drop flags), "
          "arrays and DataFrames by train(X, y, sample_weight=...)")
_NOT_YET = "not implemented yet"

#: name -> (meaning in oocgbdt, accepted values or None for any value). Accepted parameters
#: change nothing here; a value outside the accepted ones is refused with the same text.
ACCEPTED = {
    "task": ("the function called is the task (train, Booster.predict, `oocgbdt export`)",
             ("train",)),
    "boosting": ("oocgbdt boosts gradient boosted decision trees (LightGBM's gbdt); "
                 "rf and dart are not implemented", ("gbdt", "gbrt")),
    "tree_learner": ("oocgbdt's learner is data-parallel over Dask: each worker builds the "
                     "histograms of its rows, reduced by a fan-in tree; the result is the "
                     "serial learner's tree", None),
    "device_type": ("oocgbdt runs on CPUs only", ("cpu",)),
    "deterministic": ("oocgbdt is always deterministic: the same data, partitions and seed give "
                      "the same model, bit for bit, on any number of workers", None),
    "force_col_wise": ("oocgbdt chooses its histogram layout itself (row-wise per partition)",
                       None),
    "force_row_wise": ("oocgbdt chooses its histogram layout itself (row-wise per partition)",
                       None),
    "top_k": ("used by LightGBM's voting-parallel learner; oocgbdt reduces whole histograms",
              None),
    "is_enable_sparse": ("sparse input (scipy.sparse, sparse Zarr stores) stays sparse", None),
    "pre_partition": ("partitions come from the data's own row chunks", None),
    "two_round": ("binning always reads a row sample first and the data in one pass after",
                  None),
    "precise_float_parser": ("CSV numbers are parsed by pandas/pyarrow at full precision", None),
    "metric_freq": ("metrics are evaluated every round", (1,)),
    "num_machines": (_DASK_CLUSTER, None),
    "local_listen_port": (_DASK_CLUSTER + "; oocgbdt opens no port of its own", None),
    "time_out": (_DASK_CLUSTER + " (its comms timeouts are Dask's configuration)", None),
    "machine_list_filename": (_DASK_CLUSTER, None),
    "machines": (_DASK_CLUSTER, None),
    "gpu_platform_id": ("oocgbdt runs on CPUs only", None),
    "gpu_device_id": ("oocgbdt runs on CPUs only", None),
    "gpu_device_id_list": ("oocgbdt runs on CPUs only", None),
    "gpu_use_dp": ("oocgbdt runs on CPUs only; histogram sums are float64", None),
    "num_gpu": ("oocgbdt runs on CPUs only", None),
}

#: name -> why oocgbdt refuses it (``resolve_params`` raises ``ValueError`` with this text).
REFUSED = {
    "config": "oocgbdt takes parameters as a dict (train, the estimators) or CLI flags",
    "data": "pass the training data to train(params, X, y) or to `oocgbdt train DATASET`",
    "valid": "pass validation data as eval_set=[(X, y), ...]",
    "bagging_by_query": _NOT_YET + " (bagging whole queries: drawing LightGBM's queries and "
                                   "bagging their rows gives its first bag's trees, not the later "
                                   "ones)",
    "linear_lambda": "linear trees are not implemented (linear_tree)",
    "linear_tree": "linear trees are not implemented",
    "drop_rate": _DART,
    "max_drop": _DART,
    "skip_drop": _DART,
    "xgboost_dart_mode": _DART,
    "uniform_drop": _DART,
    "drop_seed": _DART,
    "feature_contri": _NOT_YET,
    "forcedsplits_filename": "forced splits are not implemented",
    "refit_decay_rate": "refitting a model's leaves on new data is not implemented",
    "cegb_tradeoff": "cost-effective gradient boosting is not implemented",
    "cegb_penalty_split": "cost-effective gradient boosting is not implemented",
    "cegb_penalty_feature_lazy": "cost-effective gradient boosting is not implemented",
    "cegb_penalty_feature_coupled": "cost-effective gradient boosting is not implemented",
    "input_model": "continue a model with init_model= (train, the estimators' fit): a Booster "
                   "or a model file, oocgbdt's or LightGBM's",
    "output_model": "save the model with Booster.save_model(path) or `oocgbdt train --output`",
    "saved_feature_importance_type": "Booster.feature_importance(importance_type=...) chooses "
                                     "it when asked",
    "max_bin_by_feature": _NOT_YET + "; max_bin applies to every feature",
    "header": _FILES,
    "label_column": _FILES,
    "weight_column": _FILES,
    "group_column": _FILES,
    "ignore_column": _FILES,
    "forcedbins_filename": "forced bin bounds are not implemented",
    "save_binary": "the binary dataset of oocgbdt is its Zarr dataset (`oocgbdt convert`), and "
                   "binned data is kept with cache='disk' and cache_path",
    "parser_config_file": "custom parsers are not supported; use `oocgbdt convert`",
    "start_iteration_predict": _PREDICT_ARG,
    "num_iteration_predict": _PREDICT_ARG,
    "predict_raw_score": _PREDICT_ARG,
    "predict_leaf_index": _PREDICT_ARG,
    "predict_contrib": _PREDICT_ARG,
    "predict_disable_shape_check": _PREDICT_ARG,
    "pred_early_stop": _PREDICT_ARG,
    "pred_early_stop_freq": _PREDICT_ARG,
    "pred_early_stop_margin": _PREDICT_ARG,
    "output_result": "`oocgbdt predict MODEL DATA OUT` names the output file",
    "convert_model_language": "converting a model to C++ code is not implemented; "
                              "`oocgbdt export` writes LightGBM's model file, which treelite "
                              "compiles",
    "convert_model": "converting a model to C++ code is not implemented; `oocgbdt export` "
                     "writes LightGBM's model file",
    "is_provide_training_metric": "pass the training data in eval_set to evaluate it",
}

#: XGBoost's name -> (the LightGBM name to use or None, what to do). Names that LightGBM itself
#: takes as aliases (eta, subsample, colsample_bytree, min_child_weight, reg_alpha, reg_lambda,
#: max_leaves, n_jobs, nthread, random_state) are handled as LightGBM's.
XGBOOST_NAMES = {
    "gamma": ("min_gain_to_split", "XGBoost's gamma (min_split_loss) is LightGBM's "
                                   "min_gain_to_split"),
    "min_split_loss": ("min_gain_to_split", "XGBoost's min_split_loss is LightGBM's "
                                            "min_gain_to_split"),
    "colsample_bylevel": ("feature_fraction_bynode", "LightGBM has no per-level sampling; its "
                                                     "nearest is feature_fraction_bynode"),
    "max_bin": (None, ""),  # a LightGBM name too
    "tree_method": (None, "oocgbdt always builds histograms (XGBoost's 'hist'); "
                          "remove tree_method"),
    "booster": ("boosting", "XGBoost's booster is LightGBM's boosting ('gbdt')"),
    "num_parallel_tree": (None, "random forests are not implemented; remove num_parallel_tree"),
    "enable_categorical": ("categorical_feature", "LightGBM's name is categorical_feature"),
}
del XGBOOST_NAMES["max_bin"]


@dataclass(frozen=True)
class Foreign:
    """How oocgbdt treats a parameter name that is not in :data:`oocgbdt.params.PARAMETERS`.

    Attributes
    ----------
    name : str
        The LightGBM (or XGBoost) name as given.
    canonical : str
        LightGBM's canonical name for it (the name itself for XGBoost's).
    status : {"accepted", "refused"}
    text : str
        The meaning in oocgbdt (accepted) or the reason (refused).
    """
    name: str
    canonical: str
    status: str
    text: str


def _lightgbm_alias_table():
    table = {}
    for name, _section, aliases in LIGHTGBM_PARAMETERS:
        table[name] = name
        for a in aliases:
            table.setdefault(a, name)
    return table


_LIGHTGBM_ALIASES = _lightgbm_alias_table()


def _same_value(value, allowed):
    if isinstance(value, str):
        return value.strip().lower() in allowed
    return any(value == a for a in allowed if not isinstance(a, str)) and not isinstance(value, bool)


def foreign_parameter(name, value=None):
    """How oocgbdt treats ``name=value``, a name that oocgbdt's own table does not hold.

    Parameters
    ----------
    name : str
        A parameter name (canonical LightGBM name, LightGBM alias, or XGBoost name).
    value : object, optional
        The value given; it decides for accepted parameters that take only some values
        (``boosting='gbdt'`` is accepted, ``boosting='dart'`` refused).

    Returns
    -------
    Foreign or None
        None when the name is neither LightGBM's nor a known XGBoost name (an unknown
        parameter).
    """
    canonical = _LIGHTGBM_ALIASES.get(name)
    if canonical is None:
        if name in XGBOOST_NAMES:
            use, text = XGBOOST_NAMES[name]
            hint = f"; use {use!r}" if use else ""
            return Foreign(name, name, "refused", f"{text}{hint}")
        return None
    if canonical in ACCEPTED:
        meaning, allowed = ACCEPTED[canonical]
        if allowed is None or _same_value(value, allowed):
            return Foreign(name, canonical, "accepted", meaning)
        return Foreign(name, canonical, "refused",
                       f"{meaning}; accepted values: {', '.join(map(repr, allowed))}")
    if canonical in REFUSED:
        return Foreign(name, canonical, "refused", REFUSED[canonical])
    return None


def parameters_markdown(parameters, aliases) -> str:
    """The text of ``docs/parameters.md``: every LightGBM parameter and how oocgbdt takes it.

    Parameters
    ----------
    parameters : dict
        :data:`oocgbdt.params.PARAMETERS` (canonical name -> Param).
    aliases : dict
        :data:`oocgbdt.params.ALIASES` (any accepted name -> canonical name).

    Returns
    -------
    str
        Markdown: one table per section of LightGBM's ``docs/Parameters.rst``, then XGBoost's
        names, then oocgbdt's own parameters.

    Raises
    ------
    ValueError
        A LightGBM parameter that is neither implemented nor accounted for here.
    """
    out = ["# Parameters: LightGBM's, one by one", "",
           "Generated by `python -m oocgbdt.lightgbm_parameters > docs/parameters.md` from",
           "`oocgbdt/params.py` (the parameters oocgbdt implements, with LightGBM's names,",
           "aliases and defaults) and `oocgbdt/lightgbm_parameters.py` (the others).",
           "Every parameter on LightGBM's Parameters page is **implemented** (same meaning",
           "and default; the oocgbdt name is given where it differs), **accepted** (it changes",
           "nothing here, for the reason given; a warning says so once), or **refused** (an",
           "error gives the reason).", ""]
    section = None
    implemented_here = set()
    for name, sec, al in LIGHTGBM_PARAMETERS:
        if sec != section:
            section = sec
            out += ["", f"## {sec.capitalize()} parameters", "",
                    "| LightGBM parameter | aliases | in oocgbdt | |", "|---|---|---|---|"]
        ours = next((aliases[n] for n in (name,) + tuple(al) if n in aliases), None)
        if ours is not None:
            implemented_here.add(ours)
            status = "implemented" + (f" as `{ours}`" if ours != name else "")
            text = parameters[ours].doc
        else:
            if name in ACCEPTED:
                text, allowed = ACCEPTED[name]
                status = "accepted"
                if allowed is not None:
                    status += " (" + ", ".join(f"`{v}`" for v in allowed) + ")"
            elif name in REFUSED:
                status, text = "refused", REFUSED[name]
            else:
                raise ValueError(f"LightGBM parameter {name!r} is not accounted for")
        shown = ", ".join(f"`{a}`" for a in al)
        out.append(f"| `{name}` | {shown} | {status} | {text} |")
    out += ["", "## XGBoost's names", "",
            "XGBoost names that LightGBM takes as aliases are accepted as LightGBM's; these are",
            "refused with the LightGBM name to use.", "",
            "| XGBoost name | LightGBM name | |", "|---|---|---|"]
    for name, (use, text) in XGBOOST_NAMES.items():
        out.append(f"| `{name}` | {f'`{use}`' if use else '-'} | {text} |")
    own = [p for n, p in parameters.items() if n not in implemented_here]
    out += ["", "## oocgbdt's own parameters", "",
            "| parameter | default | |", "|---|---|---|"]
    for p in own:
        out.append(f"| `{p.name}` | `{p.default!r}` | {p.doc} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    from oocgbdt.params import ALIASES, PARAMETERS
    print(parameters_markdown(PARAMETERS, ALIASES), end="")
