"""LightGBM's own example configurations, unchanged, trained by oocgbdt and by LightGBM.

Usage::

    python -m benchmarks.lightgbm_configs [--quick] [--configs NAME ...]

Two kinds of configuration:

- the CLI configurations ``examples/<name>/train.conf`` of LightGBM (their ``key = value``
  lines are shipped in ``benchmarks/lightgbm_configs/``, see ``ATTRIBUTION.md`` there):
  ``binary_classification``, ``regression``, ``multiclass_classification``, ``lambdarank``,
  ``xendcg``;
- the parameter dicts of LightGBM's Python examples (``examples/python-guide``), with the
  arguments those examples pass beside them: ``simple_example``, ``advanced_example`` (its
  first fit), ``plot_example`` and the three fits of ``sklearn_example``.

A conf file's lines become a dict (``#`` starts a comment; ``true``/``false`` become bools,
numbers numbers, comma-separated numbers lists; anything else stays a string). The entries that
name files or data are done by this script, as LightGBM's command line does them, and printed:
``data`` and ``valid_data`` are read from the shared data folder (``$OOCGBDT_DATA``) by file
name, with the files LightGBM reads beside a data file (``<file>.weight`` as weights,
``<file>.init`` as ``init_score``, ``<file>.query`` as query sizes); ``label_column`` picks the
label; ``is_training_metric`` adds the training rows as an eval set named ``training``;
``output_model`` saves the model (LightGBM's text format, into a temporary directory);
``is_save_binary_file = false`` asks for nothing. Every other entry goes, unchanged, to both
``oocgbdt.train`` and ``lightgbm.train`` (which also get the same arrays).

Each configuration then either runs, and its line gives the last eval set's first metric at
the best (else last) round for both libraries, or fails; a failure is ``refused`` when the error
gives the reason ``oocgbdt/lightgbm_parameters.py`` documents for one of its parameters (the
parameter is named) or an input check whose difference from LightGBM a page of ``docs/``
documents (:data:`DOCUMENTED_INPUT_CHECKS`), else ``ERROR`` (exit code 1). Where a dict samples
rows by GOSS the two models differ by their random draws, and the line says so (bagging and
``feature_fraction`` draw LightGBM's numbers). ``--quick``: at most 5 rounds per
configuration (the one value changed, for both libraries).
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import logging
import sys
import tempfile
import traceback
import warnings
from pathlib import Path

import numpy as np

from benchmarks._common import data_dir, print_table

CONF_DIR = Path(__file__).resolve().parent / "lightgbm_configs"
CONFS = ("binary_classification", "regression", "multiclass_classification", "lambdarank",
         "xendcg")
GUIDE = ("simple_example", "advanced_example", "plot_example", "sklearn_example_l1",
         "sklearn_example_rmsle", "sklearn_example_rmsle_rae")
QUICK_ROUNDS = 5
HEADERS = ["config", "status", "metric", "oocgbdt", "LightGBM", "difference", "rounds (ooc / lgb)",
           "details"]


# ---- conf files ------------------------------------------------------------------------------

def _value(text):
    """A conf value as LightGBM's Python package would be given it."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    parts = [p.strip() for p in text.split(",")]
    numbers = []
    for p in parts:
        try:
            numbers.append(int(p))
        except ValueError:
            try:
                numbers.append(float(p))
            except ValueError:
                return text.strip()
    return numbers if len(parts) > 1 else numbers[0]


def parse_conf(text):
    """``key = value`` lines to a dict, in order (``#`` starts a comment).

    Raises
    ------
    ValueError
        A line that is not ``key = value``.
    """
    out = {}
    for i, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if "=" not in line:
            raise ValueError(f"line {i}: expected key = value, got {line!r}")
        key, value = line.split("=", 1)
        out[key.strip()] = _value(value)
    return out


def _canonical(key):
    from oocgbdt.lightgbm_parameters import _LIGHTGBM_ALIASES
    return _LIGHTGBM_ALIASES.get(key, key)


# ---- data ------------------------------------------------------------------------------------

def find_data(name):
    """The shared data folder's file called ``name`` (the folder's sub-folders are searched)."""
    root = data_dir()
    found = sorted(root.glob(f"*/{name}")) if root.is_dir() else []
    if not found:
        raise FileNotFoundError(f"{name}: not in the shared data folder {root}")
    return found[0]


def _side(path, suffix, dtype=np.float64):
    p = Path(str(path) + suffix)
    return np.loadtxt(p, dtype=dtype, ndmin=1) if p.exists() else None


@functools.lru_cache(maxsize=16)
def load_data(path, label_column=0, n_features=None):
    """``(X float64, y, weight, init_score, group)`` of a LightGBM data file (TSV or LibSVM)
    and the files LightGBM reads beside it; ``n_features`` pads LibSVM columns. Read once per
    process (the arrays are shared: not to be written to)."""
    with open(path) as f:
        first = f.readline()
    if ":" in first:
        from sklearn.datasets import load_svmlight_file
        X, y = load_svmlight_file(str(path), n_features=n_features, zero_based=True)
        X = X.toarray()
    else:
        a = np.loadtxt(path, delimiter="\t", dtype=np.float64, ndmin=2)
        y = a[:, label_column]
        X = np.delete(a, label_column, axis=1)
    group = _side(path, ".query", np.int64)
    return X, y, _side(path, ".weight"), _side(path, ".init"), group


# ---- the configurations ----------------------------------------------------------------------

#: Entries of a conf file this script does, as LightGBM's command line does them.
HANDLED = ("data", "valid", "label_column", "is_provide_training_metric", "output_model",
           "save_binary")


def conf_run(name, quick):
    """A conf file as ``(params, fit)``: the dict for both libraries, and what the script does
    with the handled entries (``fit``: data, eval sets, notes)."""
    conf = parse_conf((CONF_DIR / f"{name}.conf").read_text())
    params, handled = {}, {}
    for key, value in conf.items():
        if _canonical(key) in HANDLED:
            handled[_canonical(key)] = value
        else:
            params[key] = value
    notes = [f"{k}={v}" for k, v in handled.items()]
    label = int(handled.get("label_column", 0))
    train_path = find_data(handled["data"])
    Xt, yt, wt, it, gt = load_data(train_path, label)
    evals = []
    if handled.get("is_provide_training_metric"):
        evals.append(("training", Xt, yt, wt, it, gt))
    for i, v in enumerate(str(handled.get("valid", "")).split(",")):
        if v:
            Xv, yv, wv, iv, gv = load_data(find_data(v), label, n_features=Xt.shape[1])
            evals.append((f"valid_{i + 1}", Xv, yv, wv, iv, gv))
    if handled.get("save_binary"):
        raise ValueError("is_save_binary_file=true: this script writes no binary dataset")
    fit = dict(X=Xt, y=yt, weight=wt, init_score=it, group=gt, evals=evals, notes=notes,
               output_model=handled.get("output_model"))
    return _quick(params, quick, fit), fit


def _quick(params, quick, fit):
    """``params`` with its rounds capped for ``--quick`` (the one value changed)."""
    if not quick:
        return params
    for key in list(params):
        if _canonical(key) == "num_iterations":
            params = dict(params, **{key: min(int(params[key]), QUICK_ROUNDS)})
            fit["notes"].append(f"quick: {key}={params[key]}")
    return params


def _guide_data(folder_file):
    X, y, w, _, _ = load_data(find_data(folder_file))
    return X, y, w


def guide_run(name, quick):
    """A python-guide example's dict and the arguments its fit passes beside it."""
    Xr, yr, _ = _guide_data("regression.train")
    Xrt, yrt, _ = _guide_data("regression.test")
    if name == "simple_example":
        params = {"boosting_type": "gbdt", "objective": "regression", "metric": {"l2", "l1"},
                  "num_leaves": 31, "learning_rate": 0.05, "feature_fraction": 0.9,
                  "bagging_fraction": 0.8, "bagging_freq": 5, "verbose": 0}
        fit = dict(X=Xr, y=yr, evals=[("valid_0", Xrt, yrt, None, None, None)], rounds=20,
                   early_stopping=5, notes=["num_boost_round=20", "early_stopping(5)"])
    elif name == "advanced_example":
        Xb, yb, wb = _guide_data("binary.train")
        params = {"boosting_type": "gbdt", "objective": "binary", "metric": "binary_logloss",
                  "num_leaves": 31, "learning_rate": 0.05, "feature_fraction": 0.9,
                  "bagging_fraction": 0.8, "bagging_freq": 5, "verbose": 0}
        fit = dict(X=Xb, y=yb, weight=wb, evals=[("training", Xb, yb, wb, None, None)],
                   rounds=10, categorical_feature=[21],
                   notes=["num_boost_round=10", "categorical_feature=[21]", "weights",
                          "valid_sets=training data"])
    elif name == "plot_example":
        params = {"num_leaves": 5, "metric": ("l1", "l2"), "verbose": 0}
        fit = dict(X=Xr, y=yr, evals=[("training", Xr, yr, None, None, None),
                                      ("valid_1", Xrt, yrt, None, None, None)],
                   rounds=100, categorical_feature=[21],
                   notes=["num_boost_round=100", "categorical_feature=[21]"])
    else:
        metric = {"sklearn_example_l1": "l1", "sklearn_example_rmsle": rmsle,
                  "sklearn_example_rmsle_rae": [rmsle, rae]}[name]
        params = {"num_leaves": 31, "learning_rate": 0.05, "n_estimators": 20}
        fit = dict(X=Xr, y=yr, evals=[("valid_0", Xrt, yrt, None, None, None)],
                   estimator=True, eval_metric=metric, early_stopping=5,
                   notes=["LGBMRegressor", f"eval_metric={_metric_name(metric)}",
                          "early_stopping(5)"])
    if quick:
        if "rounds" in fit:
            fit["rounds"] = min(fit["rounds"], QUICK_ROUNDS)
            fit["notes"].append(f"quick: {fit['rounds']} rounds")
        else:
            params = dict(params, n_estimators=QUICK_ROUNDS)
            fit["notes"].append(f"quick: n_estimators={QUICK_ROUNDS}")
    return params, fit


def rmsle(y_true, y_pred):
    """sklearn_example's root mean squared logarithmic error."""
    return "RMSLE", np.sqrt(np.mean(np.power(np.log1p(y_pred) - np.log1p(y_true), 2))), False


def rae(y_true, y_pred):
    """sklearn_example's relative absolute error."""
    return "RAE", np.sum(np.abs(y_pred - y_true)) / np.sum(np.abs(np.mean(y_true) - y_true)), False


def _metric_name(m):
    if isinstance(m, list):
        return "[" + ", ".join(map(_metric_name, m)) + "]"
    return m if isinstance(m, str) else m.__name__


# ---- training --------------------------------------------------------------------------------

def train_oocgbdt(params, fit):
    """The oocgbdt model (a Booster, or a fitted GBDTRegressor) of one configuration."""
    import oocgbdt
    evals = fit["evals"]
    cbs = [oocgbdt.early_stopping(fit["early_stopping"], verbose=False)] \
        if fit.get("early_stopping") else None
    if fit.get("estimator"):
        return oocgbdt.GBDTRegressor(**params).fit(
            fit["X"], fit["y"], eval_set=[(e[1], e[2]) for e in evals],
            eval_names=[e[0] for e in evals], eval_metric=fit["eval_metric"], callbacks=cbs)
    p = dict(params)
    if "rounds" in fit:
        p["num_iterations"] = fit["rounds"]
    if fit.get("categorical_feature") is not None:
        p["categorical_feature"] = fit["categorical_feature"]
    groups = [e[5] for e in evals]
    return oocgbdt.train(
        p, fit["X"], fit["y"], sample_weight=fit.get("weight"), init_score=fit.get("init_score"),
        group=fit.get("group"), eval_set=[(e[1], e[2]) for e in evals],
        eval_names=[e[0] for e in evals], eval_sample_weight=[e[3] for e in evals],
        eval_init_score=[e[4] for e in evals],
        eval_group=groups if any(g is not None for g in groups) else None, callbacks=cbs)


def train_lightgbm(params, fit):
    """LightGBM's model with the same dict and arrays: ``(evals_result, best_iteration,
    rounds)``."""
    import lightgbm as lgb
    evals = fit["evals"]
    cbs = [lgb.early_stopping(fit["early_stopping"], verbose=False)] \
        if fit.get("early_stopping") else []
    if fit.get("estimator"):
        m = lgb.LGBMRegressor(**params, verbose=-1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m.fit(fit["X"], fit["y"], eval_set=[(e[1], e[2]) for e in evals],
                  eval_names=[e[0] for e in evals], eval_metric=fit["eval_metric"],
                  callbacks=cbs)
        return m.evals_result_, m.best_iteration_ or None, m.booster_.current_iteration()
    cat = fit.get("categorical_feature") or "auto"
    train = lgb.Dataset(fit["X"], fit["y"], weight=fit.get("weight"),
                        init_score=fit.get("init_score"), group=fit.get("group"),
                        categorical_feature=cat, free_raw_data=False)
    valid = [train if e[1] is fit["X"] else
             lgb.Dataset(e[1], e[2], weight=e[3], init_score=e[4], group=e[5], reference=train)
             for e in evals]
    rec = {}
    kw = {"num_boost_round": fit["rounds"]} if "rounds" in fit else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = lgb.train(params, train, valid_sets=valid, valid_names=[e[0] for e in evals],
                      callbacks=cbs + [lgb.record_evaluation(rec)], **kw)
    return rec, b.best_iteration or None, b.current_iteration()


#: Input checks of oocgbdt where LightGBM accepts the input: (text of the error, the page that
#: documents the difference); none at present.
DOCUMENTED_INPUT_CHECKS = ()


def documented_refusal(exc, params):
    """``"name: reason"`` when ``exc`` gives the reason ``lightgbm_parameters`` documents for a
    parameter of ``params`` (refused, or accepted only with other values), or is an input check
    of :data:`DOCUMENTED_INPUT_CHECKS`; else None."""
    from oocgbdt.lightgbm_parameters import foreign_parameter
    for key, value in params.items():
        f = foreign_parameter(key, value)
        if f is not None and f.status == "refused" and f.text in str(exc):
            return f"{key}={value!r}: {f.text}"
    for text, page in DOCUMENTED_INPUT_CHECKS:
        if text in str(exc):
            return f"{exc} [documented: {page}]"
    return None


#: Parameter values whose random draws oocgbdt makes its own way (keyed by global row and
#: round, the same on any number of workers), so their models differ from LightGBM's by those
#: draws; bagging and feature_fraction draw LightGBM's numbers
#: (docs/decisions/lightgbm-random-streams.md).
RANDOM_DRAWS = (("data_sample_strategy", "goss"), ("boosting", "goss"))


def _draws_note(params):
    drawn = [f"{k}={v}" for k, v in params.items() if (_canonical(k), v) in RANDOM_DRAWS]
    return (f"{', '.join(drawn)}: oocgbdt's random draws are not LightGBM's, so the "
            f"models differ by them") if drawn else ""


def _last_metric(evals_result, best):
    """``(metric name, value)``: the last eval set's first metric at round ``best`` (1-based),
    else at the last round."""
    name = list(evals_result)[-1]
    metric = next(iter(evals_result[name]))
    values = evals_result[name][metric]
    return metric, float(values[(best or len(values)) - 1])


def run_one(name, quick):
    """One table row for configuration ``name``; the exit-relevant status is its 2nd cell."""
    try:
        params, fit = conf_run(name, quick) if name in CONFS else guide_run(name, quick)
    except FileNotFoundError as e:
        return [name, "no data", "", "", "", "", "", str(e)]
    notes = "; ".join(fit["notes"])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = train_oocgbdt(params, fit)
    except ValueError as e:
        reason = documented_refusal(e, params)
        if reason is not None:
            return [name, "refused", "", "", "", "", "", f"{reason} ({notes})"]
        return [name, "ERROR", "", "", "", "", "", f"{type(e).__name__}: {e}"]
    except Exception as e:  # anything else is unexpected
        traceback.print_exc()
        return [name, "ERROR", "", "", "", "", "", f"{type(e).__name__}: {e}"]
    booster = getattr(ours, "booster_", ours)
    if fit.get("output_model"):
        with tempfile.TemporaryDirectory() as tmp:
            booster.save_model(Path(tmp) / fit["output_model"], format="lightgbm")
        notes += "; model saved (LightGBM text)"
    theirs, best_lgb, rounds_lgb = train_lightgbm(params, fit)
    metric, v_ours = _last_metric(booster.evals_result, booster.best_iteration)
    _, v_lgb = _last_metric(theirs, best_lgb)
    draws = _draws_note(params)
    return [name, "runs", metric, v_ours, v_lgb, v_ours - v_lgb,
            f"{booster.num_iterations()} / {rounds_lgb}", notes + (f"; {draws}" if draws else "")]


@contextlib.contextmanager
def _lightgbm_log_to(logger):
    """LightGBM's own log (the dicts leave its verbosity at info) goes to ``logger`` meanwhile:
    warnings still show, its info lines do not crowd the table. The logger LightGBM had is
    registered again afterwards."""
    import lightgbm as lgb
    import lightgbm.basic as basic
    before = (getattr(basic, "_LOGGER", None), getattr(basic, "_INFO_METHOD_NAME", "info"),
              getattr(basic, "_WARNING_METHOD_NAME", "warning"))
    lgb.register_logger(logger)
    try:
        yield
    finally:
        if before[0] is not None:
            lgb.register_logger(*before)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help=f"at most {QUICK_ROUNDS} rounds per configuration")
    ap.add_argument("--configs", nargs="*", default=None, choices=CONFS + GUIDE,
                    help="configurations to run (default: all)")
    args = ap.parse_args(argv)
    with _lightgbm_log_to(logging.getLogger("benchmarks.lightgbm_configs")):
        rows = [run_one(name, args.quick) for name in (args.configs or CONFS + GUIDE)]
    print_table(HEADERS, rows)
    return 1 if any(r[1] == "ERROR" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
