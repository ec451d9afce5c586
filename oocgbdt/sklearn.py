"""This module contains the scikit-learn estimators :class:`GBDTRegressor` and :class:`GBDTClassifier`.

Thin over :func:`oocgbdt.train`: ``fit`` maps the estimator's parameters (LightGBM's
scikit-learn names) to training parameters and stores the :class:`~oocgbdt.Booster` as
``booster_``. NumPy (and anything scikit-learn accepts) goes through scikit-learn's validation;
Dask arrays, Zarr arrays and Zarr paths are passed on lazily, and ``predict`` on them returns a
lazy Dask array. A ``distributed.Client`` is a ``fit`` argument, never an attribute.
"""
from __future__ import annotations

import re
import warnings
from contextlib import contextmanager
from functools import partial

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (_check_feature_names, _check_n_features, _num_features,
                                      _num_samples, check_is_fitted, validate_data)

from oocgbdt.core.categories import categorical_columns, is_frame
from oocgbdt.dask.inputs import (align_rows, as_dask_array, as_row_chunked, distinct_values,
                                 is_dask_frame, is_lazy, map_rows)
from oocgbdt.dask.training import train
from oocgbdt.params import (ALIASES, DEFAULT_CHUNK_ROWS, DEFAULT_METRIC, MULTICLASS_OBJECTIVES,
                            check_param, resolve_params)
from oocgbdt.runtime.cluster import find_client, wait_for_workers

__all__ = ["GBDTRegressor", "GBDTClassifier", "GBDTRanker"]

_PARAMS_DOC = """
    Parameters
    ----------
    n_estimators : int, default 100
        Boosting rounds (LightGBM ``num_iterations``).
    learning_rate : float, default 0.1
        Shrinkage applied to every tree's outputs; > 0.
    num_leaves : int, default 31
        Maximum leaves per tree (leaf-wise growth); >= 2.
    max_depth : int, default -1
        Maximum depth; <= 0 means no limit.
    min_child_samples : int, default 20
        Minimum rows per leaf (LightGBM ``min_data_in_leaf``; checked, as LightGBM does, on
        counts estimated from hessians, so with weights or non-L2 losses a leaf may hold fewer).
    min_child_weight : float, default 1e-3
        Minimum sum of hessians per leaf (``min_sum_hessian_in_leaf``).
    min_split_gain : float, default 0.0
        Minimum gain to make a split (``min_gain_to_split``).
    reg_alpha, reg_lambda : float, default 0.0
        L1 and L2 regularization of leaf outputs (``lambda_l1``, ``lambda_l2``).
    max_bin : int, default 255
        Maximum bins per feature (the NaN bin included).
    subsample_for_bin : int, default 200000
        Rows sampled to find bin boundaries (``bin_construct_sample_cnt``).
    random_state : int, numpy.random.RandomState, numpy.random.Generator or None, default None
        Master seed (LightGBM ``seed``; None: not given, training is still deterministic; a
        RandomState or Generator gives one draw of it; anything else raises a TypeError). An
        int sets ``data_random_seed`` (the rows sampled for bin boundaries), ``bagging_seed``,
        ``feature_fraction_seed``, ``objective_seed`` and ``extra_seed`` as LightGBM derives
        them (the LightGBM keywords win when given); it also keys GOSS's draws and
        ``feature_screening``'s draws.
    early_stopping_rounds : int or None, default None
        Stop when any metric on any eval set has not improved for this many rounds (LightGBM's
        rule); the model keeps every tree and predicts with ``best_iteration_``. Needs
        ``eval_set`` (ValueError otherwise, as LightGBM).
    metric : str, callable, list of str and callables, or None, default None
        Evaluation metrics (default: the objective's). A callable ``(y_true, y_pred[,
        weight[, group]]) -> (name, value, is_higher_better)`` is evaluated once per round on
        the whole eval set gathered where the loop runs
        (:class:`oocgbdt.core.metrics.CallableMetric`).
    chunk_rows : int, default 65536
        Most rows per chunk for in-memory input (Dask/Zarr input keeps its chunks; see
        :func:`oocgbdt.dask.inputs.in_memory_chunk_rows`).
    colsample_bytree : float in (0, 1], default 1.0
        Share of the features drawn at random for each tree (LightGBM ``feature_fraction``).
    subsample : float in (0, 1], default 1.0
        Bagging: probability that a row is in a round's bag, drawn as LightGBM draws it (LightGBM
        ``bagging_fraction``). Used only when ``subsample_freq > 0``, as in LightGBM.
    subsample_freq : int >= 0, default 0
        Bagging: draw a new bag every ``subsample_freq`` rounds (LightGBM ``bagging_freq``);
        0 disables bagging. The draws are seeded by ``bagging_seed`` (LightGBM's default 3),
        which an int ``random_state`` sets as LightGBM derives it from ``seed``, so a fit is
        reproducible.
    data_sample_strategy : {"bagging", "goss"}, default "bagging"
        Row sampling per round (LightGBM ``data_sample_strategy``): ``"bagging"`` (the
        ``subsample`` / ``subsample_freq`` bags above, off at their defaults) or ``"goss"``
        (Gradient-based One-Side Sampling: every round after the first
        ``int(1 / learning_rate)``, keep the ``top_rate`` share of rows with the largest
        |gradient x hessian| plus an ``other_rate`` share of all rows drawn from the rest, whose
        gradients and hessians are scaled by ``(1 - top_rate) / other_rate``). ``"goss"``
        cannot be combined with bagging (``subsample < 1`` and ``subsample_freq > 0``).
    top_rate : float in (0, 1], default 0.2
        GOSS: share of the rows kept for their large |gradient x hessian| (LightGBM
        ``top_rate``). Used only with ``data_sample_strategy="goss"``.
    other_rate : float in (0, 1], default 0.1
        GOSS: share of all rows drawn at random from the other rows (LightGBM ``other_rate``);
        with ``data_sample_strategy="goss"``, ``top_rate + other_rate`` must be <= 1.
    feature_screening : {None, "ema", "stochastic"}, default None
        Gain-informed feature screening (EMA-FS, S-EMA-FS; arXiv:2606.26337): after
        ``screening_warmup`` rounds, each tree builds histograms for ``screening_ratio`` of the
        features, the best by an EMA of their split gains (``"ema"``) or drawn with
        gain-weighted probabilities of concentration ``screening_beta`` (``"stochastic"``).
    screening_ratio, screening_warmup, screening_alpha, screening_beta : float, int, float, float
        See ``feature_screening`` (defaults 0.3, 5, 0.3, 1.0).
    grow_policy : {"leafwise", "depthwise"}, default "leafwise"
        Best-first growth (LightGBM's), or one pass over the data per level.
    max_leaves_per_pass : int, default 1
        With ``grow_policy="leafwise"``, split the best k open leaves per pass over the data
        (1: exact best-first growth; larger values mean fewer passes when streaming from disk).
    lookahead_leaves : int or None, default None
        With exact best-first growth, each pass over the data also splits up to this many of
        the next best open leaves ahead of their turn: fewer passes, the same trees. None: 2
        on several Dask workers or with the disk cache, else 0. Ignored when
        ``histogram_pool_size`` bounds the kept histograms.
    cache : {"auto", "memory", "disk"}, default "auto"
        Where the binned rows live between passes (see :func:`oocgbdt.train`).
    cache_path : str or None, default None
        Directory of the disk cache, kept and reusable when given; None: a temporary directory.
        A named cache belongs to one data set: another fit on other rows (a cross-validation
        fold, a search) raises a ValueError, so leave it None there.
    histogram_pool_size : float, default -1.0
        Upper bound, in MB (2**20 bytes), on the leaf histograms kept between passes of one
        tree (LightGBM ``histogram_pool_size``); any value <= 0 means no bound. Must be finite.
        A bound trades memory for work: a leaf split after losing its histogram histograms both
        children instead of deriving one by subtraction (same splits, leaf values equal up to
        rounding).
    partition_rows : int >= 1 or None, default None
        Rows per compute partition: consecutive storage chunks are grouped into partitions of at
        least this many rows (a chunk is never split), one task per partition per pass. None:
        chosen from the data alone, so the same data and chunking give the same model on any
        cluster. Changing it changes the partitions, hence a disk cache's fingerprint.
    verbose : bool, default False
        Show a progress bar over rounds with the latest metric.
    objective : str, callable or None, default None
        LightGBM's objective name or alias, or a callable ``(y_true, raw_score[, weight]) ->
        (grad, hess)`` run per partition on the workers (see
        :class:`oocgbdt.core.objectives.CustomObjective`; predictions are then raw scores). None: ``"regression"`` for the regressor, ``"binary"``
        or ``"multiclass"`` (by the number of classes) for the classifier. The regressor takes
        the regression losses (``"regression"``, ``"regression_l1"``, ``"huber"``, ``"fair"``,
        ``"quantile"``, ``"mape"``, ``"poisson"``, ``"gamma"``, ``"tweedie"``) and
        ``"cross_entropy"``/``"cross_entropy_lambda"`` (labels in [0, 1]); the classifier
        ``"binary"`` or ``"cross_entropy"`` for 2 classes, and ``"multiclassova"`` (any other
        objective becomes ``"multiclass"`` for more than 2 classes, as LGBMClassifier does).
    class_weight : dict, "balanced" or None, default None
        GBDTClassifier only: weights of the classes, multiplied into the sample weights (as
        LGBMClassifier): ``{label: weight}`` (absent labels weigh 1) or ``"balanced"``
        (``n_samples / (n_classes * count(label))``).
    alpha, fair_c, poisson_max_delta_step, tweedie_variance_power : float
        Parameters of the ``huber``/``quantile``, ``fair``, ``poisson`` and ``tweedie`` losses
        (LightGBM's; defaults 0.9, 1.0, 0.7, 1.5).
    sigmoid, is_unbalance, scale_pos_weight : float, bool, float
        ``binary``/``multiclassova``: the sigmoid's scale, and the positive label's weight
        (the count ratio with ``is_unbalance``); defaults 1.0, False, 1.0.
    **kwargs
        Any other parameter by its LightGBM name or alias (``min_data_in_leaf=5``,
        ``enable_bundle=False``, ``max_conflict_rate=0.0``, ...; see ``docs/parameters.md``), as
        ``LGBMModel`` takes them: kept by ``get_params`` and ``set_params`` (so ``clone`` and
        searches keep them) and checked when ``fit`` starts. One that sets the same parameter
        as an argument above wins over it (with a UserWarning when that argument was set too).
"""


class _GBDTModel(BaseEstimator):
    def __init__(self, *, n_estimators=100, learning_rate=0.1, num_leaves=31, max_depth=-1,
                 min_child_samples=20, min_child_weight=1e-3, min_split_gain=0.0, reg_alpha=0.0,
                 reg_lambda=0.0, max_bin=255, subsample_for_bin=200000, random_state=None,
                 colsample_bytree=1.0, subsample=1.0, subsample_freq=0,
                 data_sample_strategy="bagging", top_rate=0.2, other_rate=0.1,
                 feature_screening=None, screening_ratio=0.3,
                 screening_warmup=5, screening_alpha=0.3, screening_beta=1.0,
                 early_stopping_rounds=None, metric=None, chunk_rows=DEFAULT_CHUNK_ROWS,
                 grow_policy="leafwise", max_leaves_per_pass=1, lookahead_leaves=None, cache="auto",
                 cache_path=None,
                 histogram_pool_size=-1.0, partition_rows=None, verbose=False,
                 objective=None, class_weight=None, alpha=0.9, fair_c=1.0,
                 poisson_max_delta_step=0.7, tweedie_variance_power=1.5, sigmoid=1.0,
                 is_unbalance=False, scale_pos_weight=1.0, **kwargs):
        self._other_params = {}
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.max_depth = max_depth
        self.min_child_samples = min_child_samples
        self.min_child_weight = min_child_weight
        self.min_split_gain = min_split_gain
        self.reg_alpha = reg_alpha
        self.reg_lambda = reg_lambda
        self.max_bin = max_bin
        self.subsample_for_bin = subsample_for_bin
        self.random_state = random_state
        self.colsample_bytree = colsample_bytree
        self.subsample = subsample
        self.subsample_freq = subsample_freq
        self.data_sample_strategy = data_sample_strategy
        self.top_rate = top_rate
        self.other_rate = other_rate
        self.feature_screening = feature_screening
        self.screening_ratio = screening_ratio
        self.screening_warmup = screening_warmup
        self.screening_alpha = screening_alpha
        self.screening_beta = screening_beta
        self.early_stopping_rounds = early_stopping_rounds
        self.metric = metric
        self.chunk_rows = chunk_rows
        self.grow_policy = grow_policy
        self.max_leaves_per_pass = max_leaves_per_pass
        self.lookahead_leaves = lookahead_leaves
        self.cache = cache
        self.cache_path = cache_path
        self.histogram_pool_size = histogram_pool_size
        self.partition_rows = partition_rows
        self.verbose = verbose
        self.objective = objective
        self.class_weight = class_weight
        self.alpha = alpha
        self.fair_c = fair_c
        self.poisson_max_delta_step = poisson_max_delta_step
        self.tweedie_variance_power = tweedie_variance_power
        self.sigmoid = sigmoid
        self.is_unbalance = is_unbalance
        self.scale_pos_weight = scale_pos_weight
        self.set_params(**kwargs)

    def get_params(self, deep=True):
        """The estimator's parameters, the LightGBM keywords given to it included (as
        ``LGBMModel``), so that ``clone`` and searches keep them."""
        params = super().get_params(deep=deep)
        params.update(self._other_params)
        return params

    def set_params(self, **params):
        """Set parameters; any LightGBM parameter name (or alias) is accepted as a keyword, as
        ``LGBMModel`` takes them, and checked when ``fit`` starts."""
        own = set(self._get_param_names())
        for key, value in params.items():
            setattr(self, key, value)
            if key not in own:
                self._other_params[key] = value
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True  # scipy.sparse X is binned from its stored entries
        return tags

    def _train_params(self):
        """Training parameters from the estimator's, validated (ValueError/TypeError) up front.

        Validating here, at the start of ``fit``, means that a bad parameter fails before any
        data is read (the classifier's label discovery on lazy ``y`` included).
        """
        p = super().get_params(deep=False)
        # The objective is set by fit (a classifier's depends on its labels); class_weight
        # becomes sample weights.
        p.pop("class_weight")
        if p.pop("objective") is not None and not callable(self.objective):
            check_param("objective", self.objective)
        # random_state is an alias of seed: errors name it as given.
        p["random_state"] = None if self.random_state is None else p_seed(self.random_state)
        # LightGBM keywords win over the estimator's argument for the same parameter (as in
        # LGBMModel), which is dropped; a warning says so when that argument was set too.
        defaults = type(self)().get_params(deep=False)
        for key, value in self._other_params.items():
            canonical = ALIASES.get(key)
            for own in [k for k in p if canonical is not None and ALIASES.get(k) == canonical]:
                if not _same_value(p[own], defaults.get(own)):
                    warnings.warn(f"{key}={value!r} is used instead of the argument "
                                  f"{own}={p[own]!r} (the same parameter).", UserWarning,
                                  stacklevel=3)
                del p[own]
            p[key] = value
        # ``metric``'s names are checked here; whether they suit the objective is checked by
        # ``train``, as the classifier's objective is known only after the labels are read (so
        # is its num_class, which auc_mu_weights' length must match: checked alone here).
        try:
            resolve_params({k: v for k, v in p.items() if k not in ("metric", "auc_mu_weights")})
            if "auc_mu_weights" in p:
                check_param("auc_mu_weights", p["auc_mu_weights"])
            metric = p["metric"]
            if callable(metric) or isinstance(metric, (list, tuple)):
                # Callables are eval metrics of LightGBM's eval_metric signature.
                metric = [m for m in ([metric] if callable(metric) else metric)
                          if not callable(m)] or None
            check_param("metric", metric)
        except ValueError as e:
            raise ValueError(_with_sklearn_names(str(e), p)) from e
        return p

    def _validate_X_y(self, X, y, sample_weight):
        """scikit-learn validation for in-memory input; lazy input is checked on metadata only."""
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y "
                             f"is None.")
        if is_dask_frame(X):
            # Columns from the metadata; rows, categories and y are checked by train, which
            # counts the partitions once.
            if X.ndim != 2:
                raise ValueError("X must be 2-D of shape (n_samples, n_features), got a Dask "
                                 "Series; pass a Dask DataFrame (series.to_frame()).")
            _check_feature_names(self, X._meta, reset=True)
            self.n_features_in_ = len(X.columns)
            return X, y, sample_weight
        if _coded_frame(X):
            # Category and text columns are coded by train, through a map kept in the model.
            if _num_samples(X) != _num_samples(y):
                raise ValueError(f"y has {_num_samples(y)} rows but X has {_num_samples(X)} "
                                 f"rows; they must match.")
            _check_feature_names(self, X, reset=True)
            _check_n_features(self, X, reset=True)
            if isinstance(self, RegressorMixin):
                with _name_conversion_errors("y"):
                    y = np.asarray(y, dtype=np.float64)
            if sample_weight is not None and not is_lazy(sample_weight):
                with _name_conversion_errors("sample_weight"):
                    sample_weight = np.asarray(sample_weight, dtype=np.float64)
            return X, y, sample_weight
        if is_lazy(X) or is_lazy(y):
            Xd = as_row_chunked(X, "X")
            # Shape and chunk sizes of y (and its dtype, for regression), no compute.
            align_rows(Xd, y, "y", numeric=isinstance(self, RegressorMixin))
            self.n_features_in_ = Xd.shape[1]
            if hasattr(self, "feature_names_in_"):
                del self.feature_names_in_  # left over from an earlier fit on a DataFrame
            return X, y, sample_weight
        try:
            n_x, n_y = _num_samples(X), _num_samples(y)
        except TypeError:
            pass  # not array-like: validate_data below says so
        else:
            if n_x != n_y:
                raise ValueError(f"y has {n_y} rows but X has {n_x} rows; they must match.")
        _check_X_shape_and_kind(X, "X")
        with _name_conversion_errors("X"):
            X, y = validate_data(self, X, y, ensure_all_finite=False, dtype=np.float32,
                                 accept_sparse=("csr", "csc", "coo"),
                                 y_numeric=isinstance(self, RegressorMixin))
        if sample_weight is not None and not is_lazy(sample_weight):
            with _name_conversion_errors("sample_weight"):
                sample_weight = np.asarray(sample_weight, dtype=np.float64)
        return X, y, sample_weight

    def _validate_predict_X(self, X):
        check_is_fitted(self, "booster_")
        if is_lazy(X):
            return X
        if _coded_frame(X) or (is_frame(X) and self.booster_.pandas_categorical):
            # Coded by value through the model's map (Booster.predict); names as scikit-learn.
            _check_feature_names(self, X, reset=False)
            _check_n_features(self, X, reset=False)
            return X
        _check_X_shape_and_kind(X, "X")
        with _name_conversion_errors("X"):
            # float32 stays float32, other input becomes float64: values are compared with
            # the thresholds in float64, as LightGBM does
            return validate_data(self, X, reset=False, ensure_all_finite=False,
                                 dtype=[np.float64, np.float32],
                                 accept_sparse=("csr", "csc", "coo"))

    def _fit(self, X, y, sample_weight, eval_set, eval_sample_weight, eval_names, client, params,
             init_model=None, callbacks=None, group=None, eval_group=None, init_score=None,
             eval_init_score=None, eval_metric=None, position=None):
        params = _with_eval_metric(params, self._eval_metric_names(eval_metric))
        if isinstance(init_model, _GBDTModel):
            check_is_fitted(init_model, "booster_")
            init_model = init_model.booster_
        if eval_set is not None:
            if isinstance(eval_set, tuple) and len(eval_set) == 2 and not isinstance(
                    eval_set[0], (tuple, list)):
                eval_set = [eval_set]  # one (X, y) pair, as LightGBM accepts
            checked = []
            for i, pair in enumerate(eval_set):
                if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                    raise ValueError(f"eval_set[{i}] must be an (X, y) pair, got "
                                     f"{type(pair).__name__}.")
                Xe, ye = pair
                if _coded_frame(Xe):
                    with _named(f"eval_set[{i}] X"):
                        _check_feature_names(self, Xe, reset=False)
                        _check_n_features(self, Xe, reset=False)
                elif not is_lazy(Xe):
                    _check_X_shape_and_kind(Xe, f"eval_set[{i}] X")
                    try:
                        n_e = _num_features(Xe)
                    except TypeError:
                        n_e = None  # validate_data below says what is wrong
                    if n_e is not None and n_e != self.n_features_in_:
                        raise ValueError(f"eval_set[{i}] X has {n_e} features but X has "
                                         f"{self.n_features_in_}; they must match.")
                    # As predict: the features of fit, by name when fit had names (columns
                    # reordered or renamed raise, instead of being scored by position).
                    with _name_conversion_errors(f"eval_set[{i}] X"), _named(f"eval_set[{i}] X"):
                        Xe = validate_data(self, Xe, reset=False, ensure_all_finite=False,
                                           dtype=np.float32, accept_sparse=("csr", "csc", "coo"))
                checked.append((Xe, self._encode_y(ye, f"eval_set[{i}] y")))
            eval_set = checked
        self.booster_ = train(params, X, y, sample_weight=sample_weight, eval_set=eval_set,
                              eval_names=eval_names, eval_sample_weight=eval_sample_weight,
                              feature_names=list(map(str, getattr(self, "feature_names_in_", []))) or None,
                              client=client, verbose=bool(self.verbose), init_model=init_model,
                              callbacks=callbacks, group=group, eval_group=eval_group,
                              init_score=init_score, eval_init_score=eval_init_score,
                              position=position)
        self.evals_result_ = self.booster_.evals_result
        self.best_iteration_ = self.booster_.best_iteration
        self.best_score_ = self.booster_.best_score
        self.n_iter_ = self.booster_.num_iterations()
        return self

    def _encode_y(self, y, name="y"):
        return y

    def _eval_metric_names(self, eval_metric):
        """``eval_metric`` as LightGBM's estimator passes it on (the classifier renames)."""
        return eval_metric

    @property
    def feature_importances_(self):
        """Split counts per feature, shape (n_features,) (LightGBM's default importance)."""
        check_is_fitted(self, "booster_")
        return self.booster_.feature_importance("split")


def _with_eval_metric(params, eval_metric):
    """``params`` with ``fit``'s ``eval_metric`` merged into ``metric`` as ``LGBMModel.fit``
    does (LightGBM's ``python-package/lightgbm/sklearn.py``): the names of ``eval_metric`` not
    already there first (compared as given), then the estimator's metrics (the objective's
    name, which names its default metric, when ``metric`` is None; a callable objective has
    none), then the callables, which
    :func:`oocgbdt.train` evaluates after the built-in metrics.

    Raises
    ------
    TypeError
        An ``eval_metric`` entry that is neither a str nor callable.
    """
    if eval_metric is None:
        return params
    items = list(eval_metric) if isinstance(eval_metric, (list, tuple)) else [eval_metric]
    for i, m in enumerate(items):
        if not (isinstance(m, str) or callable(m)):
            raise TypeError(f"eval_metric must be a str, a callable or a list of them; entry "
                            f"{i} is {type(m).__name__} {m!r}.")
    key = next((k for k in params if ALIASES.get(k) == "metric"), "metric")
    base = params.get(key)
    if base is None:
        # LightGBM's default metric is named by the objective (an alias of its metric), and
        # eval_metric's names are compared with that name as given.
        objective = params.get("objective")
        base = [objective] if isinstance(objective, str) and objective in DEFAULT_METRIC else []
    elif isinstance(base, str) or callable(base):
        base = [base]
    base = list(base)
    names = [m for m in items if isinstance(m, str) and m not in base]
    builtin = [m for m in base if not callable(m)]
    callables = [m for m in base if callable(m)] + [m for m in items if callable(m)]
    return dict(params, **{key: names + builtin + callables})


def _coded_frame(X) -> bool:
    """A pandas DataFrame with ``category``, string or object columns (coded by ``train``)."""
    return is_frame(X) and bool(categorical_columns(X.dtypes))


def _check_X_shape_and_kind(X, name):
    """Clear errors for in-memory X that is not 2-D or holds strings (scikit-learn would parse
    numeric strings silently); before scikit-learn's own validation."""
    if not hasattr(X, "shape") and not isinstance(X, (list, tuple)):
        return  # scikit-learn's validation names other inputs
    ndim = np.ndim(X) if not hasattr(X, "ndim") else X.ndim
    if ndim != 2:
        raise ValueError(f"{name} must be 2-D of shape (n_samples, n_features), got {ndim} "
                         f"dimension(s) with shape {np.shape(X)}. Reshape your data with "
                         f"{name}.reshape(-1, 1) if it has a single feature or "
                         f"{name}.reshape(1, -1) if it is a single sample.")
    kind = getattr(getattr(X, "dtype", None), "kind", None)
    if kind in ("U", "S"):
        raise TypeError(f"{name} must have a numeric dtype, got dtype {X.dtype}. Encode strings "
                        f"or categories as numbers first.")


@contextmanager
def _name_conversion_errors(name):
    """Name the argument in NumPy's bare 'could not convert string to float' errors."""
    try:
        yield
    except ValueError as e:
        if str(e).startswith("could not convert"):
            raise ValueError(f"{name} must be numeric: {e}. Encode strings or categories as "
                             f"numbers first.") from e
        raise


@contextmanager
def _named(name):
    """Prefix scikit-learn's feature-name and feature-count errors with the argument's name."""
    try:
        yield
    except ValueError as e:
        if "feature" in str(e) and not str(e).startswith(name):
            raise ValueError(f"{name}: {e}") from e
        raise


def _with_sklearn_names(message, params):
    """Add the estimator's names to a message that names parameters by LightGBM's names only.

    A bad single value is reported under both names already (``bagging_fraction (given as
    'subsample') must be ...``); checks across parameters (GOSS with bagging, say) use the
    canonical names, which this estimator calls otherwise.
    """
    named = [(canonical, name) for name in params
             if (canonical := ALIASES.get(name)) not in (None, name)
             and re.search(rf"\b{canonical}\b", message) and f"given as {name!r}" not in message]
    if not named:
        return message
    return (message.rstrip(".") + " (here " + ", ".join(f"{c} is the argument {n!r}"
                                                          for c, n in named) + ")")


def _same_value(a, b):
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b


def p_seed(random_state):
    """``random_state`` as an int seed: an int, or one draw from a RandomState or Generator
    (as LightGBM's estimators take them)."""
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**31 - 1))
    if isinstance(random_state, (bool, np.bool_)) or not isinstance(random_state,
                                                                   (int, np.integer)):
        raise TypeError(f"random_state must be None, an int, a numpy.random.RandomState or a "
                        f"numpy.random.Generator; got {type(random_state).__name__} "
                        f"{random_state!r}.")
    return int(random_state)


class GBDTRegressor(RegressorMixin, _GBDTModel):
    __doc__ = ("Gradient-boosted trees for regression (L2 loss), trained out of core on Dask.\n"
               + _PARAMS_DOC + """
    Attributes
    ----------
    booster_ : Booster
    n_features_in_ : int
    evals_result_ : dict
        ``{eval_name: {metric: [score per round]}}``.
    best_iteration_ : int or None
        1-based best round when early stopping was requested.
    n_iter_ : int
        Rounds trained.
    feature_importances_ : ndarray of shape (n_features,)
""")

    def fit(self, X, y, sample_weight=None, *, init_score=None, eval_set=None,
            eval_sample_weight=None, eval_init_score=None, eval_names=None, eval_metric=None,
            callbacks=None, client=None, init_model=None):
        """Fit on ``X`` (n_samples, n_features) and ``y`` (n_samples,); returns self.

        ``X``, ``y`` and ``sample_weight`` may be NumPy, Dask or Zarr (or a Zarr path).
        ``init_score`` and ``eval_init_score`` are the rows' starting raw scores (LightGBM's;
        shapes, and the rule that predictions leave them out, in :func:`oocgbdt.train`).
        ``eval_metric`` (LightGBM's): a metric name, a callable ``(y_true, y_pred[, weight[,
        group]]) -> (name, value, is_higher_better)``, or a list of them, evaluated on the eval
        sets with the estimator's ``metric`` (its names first, then the estimator's metrics,
        the objective's default when ``metric`` is None; callables last; ``y_pred`` is
        ``predict``'s output, raw scores for a callable objective; ``group`` is the eval set's
        query sizes, from ``eval_group``).
        ``callbacks`` are LightGBM's (``oocgbdt.early_stopping``, ``log_evaluation``, ...; see
        :func:`oocgbdt.train`). ``client`` is the ``distributed.Client`` to train on (default:
        the current one). ``init_model`` (a Booster, a fitted estimator or a model file path;
        LightGBM's name) is a model to continue: ``n_estimators`` rounds are added to it
        (:func:`oocgbdt.train`'s ``init_model``).

        Raises
        ------
        ValueError
            As :func:`oocgbdt.train` (an ``init_score`` of the wrong length included).
        TypeError
            An ``eval_metric`` entry that is neither a str nor callable.
        """
        params = self._train_params()
        if self.class_weight is not None:
            raise ValueError(f"class_weight applies to GBDTClassifier only; GBDTRegressor got "
                             f"class_weight={self.class_weight!r}. Pass sample_weight instead.")
        X, y, sample_weight = self._validate_X_y(X, y, sample_weight)
        params["objective"] = _regressor_objective(self.objective)
        return self._fit(X, y, sample_weight, eval_set, eval_sample_weight, eval_names, client,
                         params, init_model, callbacks, init_score=init_score,
                         eval_init_score=eval_init_score, eval_metric=eval_metric)

    def predict(self, X, raw_score=False, start_iteration=0, num_iteration=None,
                pred_leaf=False, pred_contrib=False):
        """Predicted values: ndarray (n_samples,) float64, or a lazy Dask array for lazy input.

        ``raw_score``, ``start_iteration``, ``num_iteration``, ``pred_leaf`` and
        ``pred_contrib`` are LightGBM's (``LGBMModel.predict``), as in
        :meth:`oocgbdt.Booster.predict`, which gives the shapes and dtypes.
        """
        X = self._validate_predict_X(X)
        return self.booster_.predict(X, raw_score=raw_score, start_iteration=start_iteration,
                                     num_iteration=num_iteration, pred_leaf=pred_leaf,
                                     pred_contrib=pred_contrib)


class GBDTClassifier(ClassifierMixin, _GBDTModel):
    __doc__ = ("Gradient-boosted trees for binary and multiclass classification (logloss or\n"
               "softmax), trained out of core on Dask. Labels may be integers or strings.\n"
               + _PARAMS_DOC + """
    Attributes
    ----------
    booster_ : Booster
    classes_ : ndarray of shape (n_classes,)
    n_classes_ : int
    n_features_in_ : int
    evals_result_, best_iteration_, n_iter_, feature_importances_ : as for GBDTRegressor
""")

    def _encode_y(self, y, name="y"):
        # Lazy y is encoded per row chunk, when training reads it.
        y = (as_dask_array(y, name, ndim=1, numeric=False) if is_lazy(y)
             else np.asarray(y).ravel())
        return map_rows(partial(_encode_labels, classes=self.classes_, name_=name), y,
                        dtype=np.float64)

    def _eval_metric_names(self, eval_metric):
        """LGBMClassifier's renaming of ``eval_metric``'s names for the number of classes:
        ``logloss`` and ``error`` (either kind) become the binary or multiclass metric."""
        if eval_metric is None or callable(eval_metric):
            return eval_metric
        items = list(eval_metric) if isinstance(eval_metric, (list, tuple)) else [eval_metric]
        multi = self.n_classes_ > 2
        rename = ({"logloss": "multi_logloss", "binary_logloss": "multi_logloss",
                   "error": "multi_error", "binary_error": "multi_error"} if multi else
                  {"logloss": "binary_logloss", "multi_logloss": "binary_logloss",
                   "error": "binary_error", "multi_error": "binary_error"})
        return [rename.get(m, m) if isinstance(m, str) else m for m in items]

    def fit(self, X, y, sample_weight=None, *, init_score=None, eval_set=None,
            eval_sample_weight=None, eval_init_score=None, eval_names=None, eval_metric=None,
            callbacks=None, client=None, init_model=None):
        """Fit on ``X`` (n_samples, n_features) and labels ``y`` (n_samples,); returns self.

        Arguments as :meth:`GBDTRegressor.fit`; ``eval_metric``'s ``logloss`` and ``error``
        (binary or multiclass) name the metric for the number of classes, as in
        ``LGBMClassifier``.

        Raises
        ------
        ValueError
            ``y`` has fewer than 2 classes, or continuous values.
        """
        params = self._train_params()
        X, y, sample_weight = self._validate_X_y(X, y, sample_weight)
        if is_lazy(y):
            # One small compute (the distinct labels); nothing is trained before it succeeds.
            # A cluster still starting has no worker to run it: wait as train() does.
            found = find_client(client)
            if found is not None:
                wait = resolve_params({k: v for k, v in params.items()
                                       if k in ("min_workers", "worker_wait_timeout")})
                wait_for_workers(found, wait["min_workers"], wait["worker_wait_timeout"],
                                 verbose=bool(self.verbose))
            classes = distinct_values(as_dask_array(y, "y", ndim=1, numeric=False), client)
            if classes.dtype.kind == "f" and not np.isfinite(classes).all():
                raise ValueError(f"y must be finite; found the label(s) "
                                 f"{classes[~np.isfinite(classes)].tolist()}.")
            check_classification_targets(classes)
            self.classes_ = classes
        else:
            check_classification_targets(y)
            self.classes_ = distinct_values(y)
        self.n_classes_ = len(self.classes_)
        if self.n_classes_ < 2:
            raise ValueError(f"GBDTClassifier needs at least 2 classes in y; found "
                             f"{self.n_classes_} class: {self.classes_.tolist()}.")
        params["objective"] = _classifier_objective(self.objective, self.n_classes_)
        if callable(params["objective"]):
            params["num_class"] = self.n_classes_ if self.n_classes_ > 2 else 1
        elif params["objective"] in MULTICLASS_OBJECTIVES:
            params["num_class"] = self.n_classes_
        y_codes = self._encode_y(y)
        if self.class_weight is not None:
            sample_weight = _class_sample_weight(self.class_weight, self.classes_, y_codes,
                                                 sample_weight)
        return self._fit(X, y_codes, sample_weight, eval_set, eval_sample_weight,
                         eval_names, client, params, init_model, callbacks, init_score=init_score,
                         eval_init_score=eval_init_score, eval_metric=eval_metric)

    def predict_proba(self, X, raw_score=False, start_iteration=0, num_iteration=None,
                      pred_leaf=False, pred_contrib=False):
        """Class probabilities, shape (n_samples, n_classes), float64 (lazy for lazy input).

        With ``raw_score``, ``pred_leaf`` or ``pred_contrib`` (LightGBM's
        ``LGBMClassifier.predict_proba`` keywords), :meth:`oocgbdt.Booster.predict`'s result
        for them instead; ``start_iteration`` and ``num_iteration`` choose the rounds.
        """
        X = self._validate_predict_X(X)
        p = self.booster_.predict(X, raw_score=raw_score, start_iteration=start_iteration,
                                  num_iteration=num_iteration, pred_leaf=pred_leaf,
                                  pred_contrib=pred_contrib)
        if raw_score or pred_leaf or pred_contrib:
            return p
        if callable(self.objective):
            # As LGBMClassifier: no probabilities from a callable objective's raw scores.
            warnings.warn("cannot compute class probabilities with a callable objective; "
                          "returning raw scores instead", UserWarning, stacklevel=2)
            return p
        if self.booster_.n_outputs > 1:  # multiclass, multiclassova
            return p
        # Lazy p: one (n, 2) block per row chunk, so that predict's argmax sees both columns.
        return map_rows(_binary_proba, p, dtype=np.float64, n_columns=2)

    def predict(self, X, raw_score=False, start_iteration=0, num_iteration=None,
                pred_leaf=False, pred_contrib=False):
        """Predicted labels, shape (n_samples,), dtype of ``classes_`` (lazy for lazy input).

        With ``raw_score``, ``pred_leaf`` or ``pred_contrib``, :meth:`predict_proba`'s result
        for them (as ``LGBMClassifier.predict``); raw scores with a callable objective.
        """
        proba = self.predict_proba(X, raw_score=raw_score, start_iteration=start_iteration,
                                   num_iteration=num_iteration, pred_leaf=pred_leaf,
                                   pred_contrib=pred_contrib)  # checks that it is fitted
        if raw_score or pred_leaf or pred_contrib or callable(self.objective):
            return proba
        return map_rows(partial(_decode_labels, classes=self.classes_), proba,
                        dtype=self.classes_.dtype)


def _binary_proba(p):
    return np.column_stack([1.0 - p, p])


def _encode_labels(y, classes, name_="y"):
    y = np.asarray(y)
    idx = np.searchsorted(classes, y)
    idx = np.clip(idx, 0, len(classes) - 1)
    if not np.all(classes[idx] == y):
        unknown = np.unique(y[classes[idx] != y])[:5]
        raise ValueError(f"{name_} has labels not seen in the training labels "
                         f"{classes.tolist()}: found {unknown.tolist()}.")
    return idx.astype(np.float64)


def _decode_labels(proba, classes):
    return classes[np.argmax(proba, axis=1)]


#: Objectives a GBDTRegressor trains (LightGBM's regression losses and cross-entropy).
_REGRESSOR_OBJECTIVES = ("regression", "regression_l1", "huber", "fair", "quantile", "mape",
                         "poisson", "gamma", "tweedie", "cross_entropy", "cross_entropy_lambda")


def _regressor_objective(objective):
    if objective is None:
        return "regression"
    if callable(objective):
        return objective
    name = _canonical_objective_name(objective)
    if name not in _REGRESSOR_OBJECTIVES:
        raise ValueError(f"GBDTRegressor cannot train objective={objective!r} ({name!r} is a "
                         f"classification objective); use GBDTClassifier, or one of "
                         f"{', '.join(repr(o) for o in _REGRESSOR_OBJECTIVES)}.")
    return name


def _canonical_objective_name(objective):
    return check_param("objective", objective)


def _classifier_objective(objective, n_classes):
    """LGBMClassifier's rule: for more than 2 classes, any objective but one-vs-all becomes
    ``multiclass``; for 2 classes the objective is used as given (default ``binary``)."""
    if callable(objective):
        return objective  # one output per class beyond 2 (num_class set by fit)
    name = "binary" if objective is None else _canonical_objective_name(objective)
    if n_classes > 2:
        return "multiclassova" if name == "multiclassova" else "multiclass"
    if name not in ("binary", "cross_entropy", "multiclass", "multiclassova"):
        raise ValueError(f"GBDTClassifier cannot train objective={objective!r} on 2 classes; "
                         f"use 'binary' (default), 'cross_entropy', 'multiclass' or "
                         f"'multiclassova', or GBDTRegressor for regression losses.")
    return name


def _class_sample_weight(class_weight, classes, y_codes, sample_weight):
    """Sample weights times the weight of each row's class (LGBMClassifier's class_weight):
    a dict by label, or ``"balanced"`` (``n / (n_classes * count)``, one compute for lazy y)."""
    k = len(classes)
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(f"class_weight must be a dict, 'balanced' or None, got "
                             f"{class_weight!r}.")
        codes = y_codes
        if is_lazy(codes):
            counts = np.bincount(as_dask_array(codes, "y", ndim=1).astype(np.int64)
                                 .compute(), minlength=k)
        else:
            counts = np.bincount(np.asarray(codes, dtype=np.int64), minlength=k)
        per_class = counts.sum() / (k * np.maximum(counts, 1))
    elif isinstance(class_weight, dict):
        unknown = [c for c in class_weight if not np.any(classes == c)]
        if unknown:
            raise ValueError(f"class_weight has label(s) {unknown!r} not among the classes "
                             f"{classes.tolist()}.")
        per_class = np.array([float(class_weight.get(c.item() if hasattr(c, "item") else c, 1.0))
                              for c in classes])
    else:
        raise ValueError(f"class_weight must be a dict, 'balanced' or None, got "
                         f"{type(class_weight).__name__} {class_weight!r}.")
    w = map_rows(partial(_take, table=per_class), y_codes, dtype=np.float64)
    if sample_weight is None:
        return w
    return w * (sample_weight if is_lazy(sample_weight) else np.asarray(sample_weight,
                                                                        dtype=np.float64))


def _take(codes, table):
    return table[np.asarray(codes, dtype=np.int64)]


class GBDTRanker(_GBDTModel):
    __doc__ = ("Gradient-boosted trees for learning to rank (LambdaRank, NDCG), trained out of\n"
               "core on Dask (LightGBM's LGBMRanker).\n" + _PARAMS_DOC + """
    eval_at : list of int, default (1, 2, 3, 4, 5)
        Positions of the ``ndcg``/``map`` metrics on the eval sets.
    label_gain, lambdarank_truncation_level, lambdarank_norm
        LightGBM's lambdarank parameters (defaults None: ``2**i - 1``; 30; True).

    Attributes
    ----------
    booster_ : Booster
    n_features_in_ : int
    evals_result_, best_iteration_, n_iter_, feature_importances_ : as for GBDTRegressor
""")

    def __init__(self, *, eval_at=(1, 2, 3, 4, 5), label_gain=None,
                 lambdarank_truncation_level=30, lambdarank_norm=True, **kwargs):
        super().__init__(**kwargs)
        self.eval_at = eval_at
        self.label_gain = label_gain
        self.lambdarank_truncation_level = lambdarank_truncation_level
        self.lambdarank_norm = lambdarank_norm

    @classmethod
    def _get_param_names(cls):
        return sorted(set(_GBDTModel._get_param_names())
                      | {"eval_at", "label_gain", "lambdarank_truncation_level",
                         "lambdarank_norm"})

    def fit(self, X, y, sample_weight=None, *, init_score=None, group=None, eval_set=None,
            eval_sample_weight=None, eval_init_score=None, eval_group=None, eval_names=None,
            eval_metric=None, eval_at=None, callbacks=None, client=None, init_model=None,
            position=None):
        """Fit on ``X`` (n_samples, n_features), relevance labels ``y`` (integers >= 0) and
        ``group``, the sizes of the consecutive queries (summing to n_samples); returns self.

        ``eval_group``: one array of query sizes per eval set (required with ``eval_set``).
        ``eval_at``: positions of the eval metrics (default the estimator's ``eval_at``).
        ``position``: each row's position (ints, shape (n_samples,)), for unbiased LambdaRank
        (LightGBM's ``Dataset(position=)``; see :func:`oocgbdt.train`).
        ``init_score``, ``eval_init_score``, ``eval_metric``, ``callbacks``, ``client`` and
        ``init_model`` as for :meth:`GBDTRegressor.fit`.

        Raises
        ------
        ValueError
            ``group`` missing or not summing to the rows, an eval set without its group,
            labels that are not integers in ``[0, len(label_gain))``.
        """
        if group is None:
            raise ValueError("GBDTRanker.fit needs group: the sizes of the consecutive queries "
                             "of the rows of X (as LGBMRanker)")
        if eval_set is not None and eval_group is None:
            raise ValueError("eval_group is required with eval_set: one array of query sizes "
                             "per eval set (as LGBMRanker)")
        params = self._train_params()
        for name in ("eval_at", "label_gain", "lambdarank_truncation_level", "lambdarank_norm"):
            params.pop(name, None)
        X, y, sample_weight = self._validate_X_y(X, y, sample_weight)
        params["objective"] = _ranker_objective(self.objective)
        params["eval_at"] = list(eval_at if eval_at is not None else self.eval_at)
        params["label_gain"] = self.label_gain
        params["lambdarank_truncation_level"] = self.lambdarank_truncation_level
        params["lambdarank_norm"] = self.lambdarank_norm
        return self._fit(X, y, sample_weight, eval_set, eval_sample_weight, eval_names, client,
                         params, init_model, callbacks, group=group, eval_group=eval_group,
                         init_score=init_score, eval_init_score=eval_init_score,
                         eval_metric=eval_metric, position=position)

    def predict(self, X):
        """Ranking scores: ndarray (n_samples,) float64 (lazy for lazy input)."""
        X = self._validate_predict_X(X)
        return self.booster_.predict(X)


def _ranker_objective(objective):
    name = "lambdarank" if objective is None else _canonical_objective_name(objective)
    if name != "lambdarank":
        raise ValueError(f"GBDTRanker trains objective='lambdarank', got objective="
                         f"{objective!r}.")
    return name
