"""This module contains the scikit-learn estimators :class:`GBDTRegressor` and :class:`GBDTClassifier`.

Thin over :func:`oocgbdt.train`: ``fit`` maps the estimator's parameters (LightGBM's
scikit-learn names) to training parameters and stores the :class:`~oocgbdt.Booster` as
``booster_``. NumPy (and anything scikit-learn accepts) goes through scikit-learn's validation;
Dask arrays, Zarr arrays and Zarr paths are passed on lazily, and ``predict`` on them returns a
lazy Dask array. A ``distributed.Client`` is a ``fit`` argument, never an attribute.
"""
from __future__ import annotations

import dask.array as da
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from oocgbdt.dask.booster import Booster
from oocgbdt.dask.io import as_dask_array, is_lazy
from oocgbdt.dask.training import train

__all__ = ["GBDTRegressor", "GBDTClassifier"]

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
        Minimum rows per leaf (LightGBM ``min_data_in_leaf``).
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
    random_state : int or None, default None
        Seed of every random choice (None means 0: training is deterministic).
    early_stopping_rounds : int or None, default None
        Stop when no metric on any eval set improved for this many rounds.
    metric : str, list of str or None, default None
        Evaluation metrics (default: the objective's).
    chunk_size : int, default 65536
        Rows per chunk for in-memory input (Dask/Zarr input keeps its chunks).
    verbose : bool, default False
        Show a progress bar over rounds with the latest metric.
"""


class _GBDTModel(BaseEstimator):
    def __init__(self, *, n_estimators=100, learning_rate=0.1, num_leaves=31, max_depth=-1,
                 min_child_samples=20, min_child_weight=1e-3, min_split_gain=0.0, reg_alpha=0.0,
                 reg_lambda=0.0, max_bin=255, subsample_for_bin=200000, random_state=None,
                 early_stopping_rounds=None, metric=None, chunk_size=65536, verbose=False):
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
        self.early_stopping_rounds = early_stopping_rounds
        self.metric = metric
        self.chunk_size = chunk_size
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    def _train_params(self):
        p = self.get_params()
        p["seed"] = 0 if p.pop("random_state") is None else p_seed(self.random_state)
        return p

    def _validate_X_y(self, X, y, sample_weight):
        """scikit-learn validation for in-memory input; lazy input passes through."""
        if is_lazy(X):
            Xd = as_dask_array(X, "X", ndim=2)
            self.n_features_in_ = Xd.shape[1]
            return X, y, sample_weight
        X, y = validate_data(self, X, y, ensure_all_finite=False, dtype=np.float32,
                             y_numeric=isinstance(self, RegressorMixin))
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
        return X, y, sample_weight

    def _validate_predict_X(self, X):
        check_is_fitted(self, "booster_")
        if is_lazy(X):
            return X
        return validate_data(self, X, reset=False, ensure_all_finite=False, dtype=np.float32)

    def _fit(self, X, y, sample_weight, eval_set, eval_sample_weight, eval_names, client, params):
        if eval_set is not None:
            eval_set = [(Xe if is_lazy(Xe) else np.asarray(Xe, dtype=np.float32), self._encode_y(ye))
                        for Xe, ye in eval_set]
        self.booster_ = train(params, X, y, sample_weight=sample_weight, eval_set=eval_set,
                              eval_names=eval_names, eval_sample_weight=eval_sample_weight,
                              feature_names=list(map(str, getattr(self, "feature_names_in_", []))) or None,
                              client=client, verbose=bool(self.verbose))
        self.evals_result_ = self.booster_.evals_result
        self.best_iteration_ = self.booster_.best_iteration
        self.best_score_ = self.booster_.best_score
        self.n_iter_ = self.booster_.num_iterations()
        return self

    def _encode_y(self, y):
        return y

    @property
    def feature_importances_(self):
        """Split counts per feature, shape (n_features,) (LightGBM's default importance)."""
        check_is_fitted(self, "booster_")
        return self.booster_.feature_importance("split")


def p_seed(random_state):
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
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

    def fit(self, X, y, sample_weight=None, *, eval_set=None, eval_sample_weight=None,
            eval_names=None, client=None):
        """Fit on ``X`` (n_samples, n_features) and ``y`` (n_samples,); returns self.

        ``X``, ``y`` and ``sample_weight`` may be NumPy, Dask or Zarr (or a Zarr path).
        ``client`` is the ``distributed.Client`` to train on (default: the current one).
        """
        X, y, sample_weight = self._validate_X_y(X, y, sample_weight)
        params = self._train_params()
        params["objective"] = "regression"
        return self._fit(X, y, sample_weight, eval_set, eval_sample_weight, eval_names, client, params)

    def predict(self, X):
        """Predicted values: ndarray (n_samples,) float64, or a lazy Dask array for lazy input."""
        return self.booster_.predict(self._validate_predict_X(X))


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

    def _encode_y(self, y):
        if is_lazy(y):
            yd = as_dask_array(y, "y", ndim=1)
            classes = self.classes_
            return yd.map_blocks(_encode_labels, classes=classes, dtype=np.float64)
        return _encode_labels(np.asarray(y).ravel(), self.classes_)

    def fit(self, X, y, sample_weight=None, *, eval_set=None, eval_sample_weight=None,
            eval_names=None, client=None):
        """Fit on ``X`` (n_samples, n_features) and labels ``y`` (n_samples,); returns self.

        Raises
        ------
        ValueError
            ``y`` has fewer than 2 classes, or continuous values.
        """
        X, y, sample_weight = self._validate_X_y(X, y, sample_weight)
        if is_lazy(y):
            yd = as_dask_array(y, "y", ndim=1)
            self.classes_ = np.unique(da.unique(yd).compute())
        else:
            check_classification_targets(y)
            self.classes_ = np.unique(y)
        self.n_classes_ = len(self.classes_)
        if self.n_classes_ < 2:
            raise ValueError(f"GBDTClassifier needs at least 2 classes in y; found 1 class: "
                             f"{self.classes_.tolist()}.")
        params = self._train_params()
        if self.n_classes_ == 2:
            params["objective"] = "binary"
        else:
            params["objective"] = "multiclass"
            params["num_class"] = self.n_classes_
        return self._fit(X, self._encode_y(y), sample_weight, eval_set, eval_sample_weight,
                         eval_names, client, params)

    def predict_proba(self, X):
        """Class probabilities, shape (n_samples, n_classes), float64 (lazy for lazy input)."""
        p = self.booster_.predict(self._validate_predict_X(X))
        if self.n_classes_ > 2:
            return p
        if isinstance(p, da.Array):
            return da.stack([1.0 - p, p], axis=1)
        return np.column_stack([1.0 - p, p])

    def predict(self, X):
        """Predicted labels, shape (n_samples,), dtype of ``classes_`` (lazy for lazy input)."""
        proba = self.predict_proba(X)
        if isinstance(proba, da.Array):
            return proba.map_blocks(_decode_labels, classes=self.classes_, drop_axis=1,
                                    dtype=self.classes_.dtype)
        return self.classes_[np.argmax(proba, axis=1)]


def _encode_labels(y, classes):
    idx = np.searchsorted(classes, y)
    idx = np.clip(idx, 0, len(classes) - 1)
    if not np.all(classes[idx] == y):
        unknown = np.unique(y[classes[idx] != y])[:5]
        raise ValueError(f"y has labels not seen in the training labels: {unknown.tolist()}.")
    return idx.astype(np.float64)


def _decode_labels(proba, classes):
    return classes[np.argmax(proba, axis=1)]
