"""This module contains :class:`Booster`: a fitted model that predicts on NumPy arrays.

Data flow position: the output of training. Trees hold ORIGINAL feature indices and RAW float
thresholds, so prediction needs no bin mapper and no cluster. Saved as versioned JSON, written
atomically (temporary file in the same folder, then ``os.replace``). The Dask layer registers
lazy prediction with it (:func:`register_lazy_input`), so Dask or Zarr input gives a lazy Dask
array, while the core stays free of dask.
"""
from __future__ import annotations

import json
import math
import os
import uuid
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from oocgbdt._dtypes import as_float_if_frame
from oocgbdt.core.categories import (categorical_columns, check_frame_columns, encode_frame,
                                     is_frame, json_categories)
from oocgbdt.core.lightgbm_model import (from_lightgbm_string, is_lightgbm_text,
                                         lightgbm_transform, to_lightgbm_string)
from oocgbdt.core.objectives import get_objective
from oocgbdt.core.tree import Tree
from oocgbdt.kernels.predict import predict_raw, predict_raw_sparse
from oocgbdt.kernels.treeshap import predict_contrib, predict_leaf, tree_depths

__all__ = ["Booster", "MODEL_FORMAT", "MODEL_VERSION", "file_has_format"]

MODEL_FORMAT = "oocgbdt-model"
MODEL_VERSION = 1


def file_has_format(path, fmt: str) -> bool:
    """Whether the JSON file at ``path`` starts with ``{"format": fmt`` as oocgbdt writes its
    model (``MODEL_FORMAT``) and checkpoint files; reads 64 bytes, False when unreadable."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
    except OSError:
        return False
    return head.startswith(b'{"format": "' + fmt.encode() + b'"')


def _encode_float(x):
    x = float(x)
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _encode(obj):
    """Make ``obj`` strict JSON: non-finite floats become the strings 'inf', '-inf', 'nan'."""
    if isinstance(obj, dict):
        return {k: _encode(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_encode(v) for v in obj]
    if isinstance(obj, (float, np.floating)):
        return _encode_float(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.ndarray):
        return _encode(obj.tolist())
    return obj


def _decode_floats(values):
    return [float(v) for v in values]


#: ``(is_lazy, predict)`` pairs registered by the Dask layer (:func:`register_lazy_input`):
#: :meth:`Booster.predict` hands an input for which ``is_lazy(X)`` holds to
#: ``predict(booster, X, **options)`` (the keywords of :meth:`Booster.predict`), which
#: returns a lazy result.
_LAZY_INPUTS = []


def register_lazy_input(is_lazy, predict) -> None:
    """Have :meth:`Booster.predict` hand inputs for which ``is_lazy(X)`` holds (Dask arrays, Zarr
    arrays and paths) to ``predict(booster, X, **options)``. The Dask layer
    registers itself when imported (:mod:`oocgbdt.dask.predict`); the core stays free of dask."""
    if (is_lazy, predict) not in _LAZY_INPUTS:
        _LAZY_INPUTS.append((is_lazy, predict))


def _looks_lazy(X) -> bool:
    """A Dask collection, Zarr array or path: an input only the Dask layer can read."""
    return (hasattr(X, "__dask_graph__") or type(X).__module__.split(".")[0] == "zarr"
            or isinstance(X, (str, os.PathLike)))


class Booster:
    """A fitted gradient-boosted tree ensemble.

    Parameters
    ----------
    trees : list of Tree
        In training order; with ``n_outputs`` outputs, round ``i`` owns trees
        ``i * n_outputs .. (i + 1) * n_outputs - 1``.
    init_score : array-like of shape (n_outputs,)
        Raw score before the first tree (boost from average).
    params : dict
        Resolved training parameters (objective, num_class, ...).
    n_features : int
    feature_names : list of str, optional
    feature_infos : list of str, optional
        LightGBM-style ``[min:max]`` or ``none`` per feature.
    best_iteration : int, optional
        1-based best round from early stopping.
    evals_result : dict, optional
        ``{eval_name: {metric: [score per round]}}``.
    best_score : dict, optional
        ``{eval_name: {metric: score at best_iteration}}``.
    screening_history, screening_scores : optional
        See the attributes below.
    bundles : list of lists of int, optional
        See ``bundles_``.
    objective_line : str, optional
        The ``objective=`` line of a LightGBM model this Booster was read from (e.g.
        ``"binary sigmoid:1"``); when set, predictions use LightGBM's transform for it
        (:func:`oocgbdt.core.lightgbm_model.lightgbm_transform`) and the LightGBM export
        writes it back.
    pandas_categorical : list of list, optional
        See the attribute.
    pandas_categorical_features : list of int, optional
        See the attribute.

    Attributes
    ----------
    n_outputs : int
        Trees per round: 1, or ``num_class`` for multiclass.
    screening_history_ : list of ndarray of int64, or None
        With feature screening or feature_fraction: the features each round built histograms
        for (see :mod:`oocgbdt.core.screening`).
    screening_scores_ : ndarray of shape (n_features,), float64, or None
        Final EMA of each feature's best split gain (NaN: never searched).
    bundles_ : list of lists of int, or None
        With Exclusive Feature Bundling, the original features of each bundle (histogram
        column) used in training; informational only: trees, thresholds, prediction and
        importances are in the original features.
    pandas_categorical : list of list, or None
        The category map of training (LightGBM's name and meaning): for each coded column, in
        column order, its category values in code order (:mod:`oocgbdt.core.categories`).
        None when training had no ``category``, string or object column.
    pandas_categorical_features : list of int
        Positions of the columns ``pandas_categorical`` codes, ascending (empty without a map).
        A DataFrame given to :meth:`predict` has these columns coded by value through the map.
        Empty with a map (a model read from LightGBM's text, which does not keep them): the
        DataFrame's ``category``, string and object columns, in order, as LightGBM's Python
        package takes them.
    """

    def __init__(self, trees, init_score, params, n_features, feature_names=None,
                 feature_infos=None, best_iteration=None, evals_result=None, best_score=None,
                 screening_history=None, screening_scores=None, bundles=None,
                 objective_line=None, pandas_categorical=None,
                 pandas_categorical_features=None):
        self.trees = list(trees)
        self.init_score = np.asarray(init_score, dtype=np.float64).reshape(-1)
        self.params = dict(params)
        self.n_features = int(n_features)
        self.feature_names = (list(feature_names) if feature_names is not None
                              else [f"Column_{i}" for i in range(self.n_features)])
        self.feature_infos = list(feature_infos) if feature_infos is not None else None
        self.best_iteration = None if best_iteration is None else int(best_iteration)
        self.evals_result = evals_result or {}
        self.best_score = best_score or {}
        self.screening_history_ = (None if screening_history is None else
                                   [np.asarray(h, dtype=np.int64) for h in screening_history])
        self.screening_scores_ = (None if screening_scores is None else
                                  np.asarray([np.nan if v is None else v for v in screening_scores],
                                             dtype=np.float64))
        self.bundles_ = None if bundles is None else [[int(f) for f in b] for b in bundles]
        self.objective_line = objective_line
        self.pandas_categorical = (None if pandas_categorical is None
                                   else [list(c) for c in pandas_categorical])
        self.pandas_categorical_features = [int(i) for i in (pandas_categorical_features or [])]
        if self.pandas_categorical_features and (len(self.pandas_categorical_features)
                                                 != len(self.pandas_categorical or [])):
            raise ValueError(f"pandas_categorical has {len(self.pandas_categorical or [])} "
                             f"category list(s) for {len(self.pandas_categorical_features)} "
                             f"coded column(s) in pandas_categorical_features; give one per "
                             f"column.")
        self._packed = {}

    # ---- structure -----------------------------------------------------------------------
    @property
    def n_outputs(self) -> int:
        return int(self.init_score.shape[0])

    @property
    def objective(self):
        return get_objective(self.params)

    def num_trees(self) -> int:
        return len(self.trees)

    def num_iterations(self) -> int:
        """Number of boosting rounds."""
        return len(self.trees) // self.n_outputs

    def _n_trees_for(self, num_iteration):
        if num_iteration is None:
            num_iteration = self.best_iteration
        if num_iteration is None or num_iteration <= 0:
            return len(self.trees)
        return min(len(self.trees), int(num_iteration) * self.n_outputs)

    def _tree_range(self, start_iteration=0, num_iteration=None):
        """Trees ``[t0, t1)`` of rounds ``start_iteration ..`` (LightGBM's ``start_iteration``
        and ``num_iteration``: None means ``best_iteration`` rounds when early stopping set
        one and ``start_iteration`` is 0, else every round; <= 0 every round)."""
        if start_iteration is None:
            start_iteration = 0
        if isinstance(start_iteration, bool) or not isinstance(start_iteration, (int, np.integer)):
            raise TypeError(f"start_iteration must be an int, got {start_iteration!r}.")
        k = self.n_outputs
        total = len(self.trees) // k
        start = min(max(int(start_iteration), 0), total)
        if num_iteration is None:  # as lightgbm.Booster.predict
            num_iteration = self.best_iteration if start_iteration <= 0 else -1
        if num_iteration is None or num_iteration <= 0:
            end = total
        else:
            end = min(total, start + int(num_iteration))
        return start * k, end * k

    def _pack(self, t0, t1):
        if (t0, t1) not in self._packed:
            trees = self.trees[t0:t1]
            cat = lambda name, dt: (np.concatenate([getattr(t, name) for t in trees]).astype(dt)
                                    if trees else np.zeros(0, dt))
            cb = [np.asarray(getattr(t, "cat_boundaries", None)
                             if getattr(t, "cat_boundaries", None) is not None else [],
                             dtype=np.int32) for t in trees]
            ct = [np.asarray(getattr(t, "cat_threshold", None)
                             if getattr(t, "cat_threshold", None) is not None else [],
                             dtype=np.uint32) for t in trees]
            p = dict(
                split_feature=cat("split_feature", np.int32), threshold=cat("threshold", np.float64),
                decision_type=cat("decision_type", np.uint8), left_child=cat("left_child", np.int32),
                right_child=cat("right_child", np.int32), leaf_value=cat("leaf_value", np.float64),
                leaf_count=cat("leaf_count", np.float64),
                internal_count=cat("internal_count", np.float64),
                node_offsets=np.cumsum([0] + [len(t.split_feature) for t in trees]).astype(np.int64),
                leaf_offsets=np.cumsum([0] + [t.n_leaves for t in trees]).astype(np.int64),
                tree_class=np.asarray([t.class_idx for t in trees], dtype=np.int32),
                cat_boundaries=np.concatenate(cb) if cb else np.zeros(0, np.int32),
                cb_offsets=np.cumsum([0] + [len(b) for b in cb]).astype(np.int64),
                cat_threshold=np.concatenate(ct) if ct else np.zeros(0, np.uint32),
                ct_offsets=np.cumsum([0] + [len(c) for c in ct]).astype(np.int64))
            p["has_categorical"] = bool(np.any(p["decision_type"] & 1))
            self._packed[(t0, t1)] = p
        return self._packed[(t0, t1)]

    # ---- prediction ----------------------------------------------------------------------
    def _check_X(self, X, name="X"):
        if is_frame(X):
            X = self._encode_frame(X, name)
        X = as_float_if_frame(X)
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D of shape (n_samples, {self.n_features}), "
                             f"got an array with {X.ndim} dimension(s) and shape {X.shape}.")
        if X.shape[1] != self.n_features:
            raise ValueError(f"{name} has {X.shape[1]} features, but the model was trained on "
                             f"{self.n_features} features.")
        if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
            raise TypeError(f"{name} must have a numeric dtype, got dtype {X.dtype}.")
        return X

    def _encode_frame(self, frame, name="X"):
        """A pandas DataFrame as float32 features: its columns checked against
        ``feature_names``, the coded columns mapped by value through ``pandas_categorical``."""
        if frame.ndim != 2 or frame.shape[1] != self.n_features:
            return frame  # _check_X names the shape
        check_frame_columns(frame, self.feature_names, name)
        if self.pandas_categorical is None and all(
                isinstance(d, np.dtype) and d.kind in "biuf" for d in frame.dtypes):
            return frame
        features = self.pandas_categorical_features
        if self.pandas_categorical and not features:
            features = categorical_columns(frame.dtypes)
            if len(features) != len(self.pandas_categorical):
                raise ValueError(f"{name} has {len(features)} category, string or object "
                                 f"column(s), but the model's pandas_categorical maps "
                                 f"{len(self.pandas_categorical)}; give the columns as in "
                                 f"training.")
        return encode_frame(frame, features, self.pandas_categorical or [], name)

    def _rows(self, X):
        """``X`` checked: a canonical CSR matrix, or a C-contiguous dense array. Values are
        compared with the thresholds in float64, as LightGBM does: float32 and float64 input
        keep their dtype (the kernels widen each value), other numbers become float64."""
        if sp.issparse(X):
            X = sp.csr_matrix(X)
            if X.shape[1] != self.n_features:
                raise ValueError(f"X has {X.shape[1]} features, but the model was trained on "
                                 f"{self.n_features} features.")
            if X.dtype not in (np.float32, np.float64):
                X = X.astype(np.float64)
            if not X.has_canonical_format:
                X = X.copy()
                X.sum_duplicates()
            return X
        X = self._check_X(X)
        dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
        return np.ascontiguousarray(X, dtype=dtype)

    @staticmethod
    def _dense_blocks(X, cells=1 << 22):
        """Row blocks of ``X`` as dense arrays (CSR blocks of about ``cells`` values, 32 MiB,
        densified; entries not stored are 0)."""
        if not sp.issparse(X):
            yield 0, X
            return
        rows = max(1, cells // max(X.shape[1], 1))
        for i in range(0, X.shape[0], rows):
            yield i, X[i:i + rows].toarray()

    def _raw_score_numpy(self, X, num_iteration=None, start_iteration=0) -> np.ndarray:
        """Raw scores of shape (n_rows, n_outputs), float64, for a NumPy or scipy.sparse block.

        The initial score counts only from round 0 on (LightGBM folds it into the first
        trees, so its ``start_iteration > 0`` leaves it out too)."""
        X = self._rows(X)
        t0, t1 = self._tree_range(start_iteration, num_iteration)
        p = self._pack(t0, t1)
        init = self.init_score if t0 == 0 else np.zeros_like(self.init_score)
        out = np.tile(init, (X.shape[0], 1))
        if p["has_categorical"]:
            # walk to the leaves (categorical decisions included), then add in tree order
            leaves = self._leaves(X, t0, t1)
            for t in range(t1 - t0):
                out[:, p["tree_class"][t]] += p["leaf_value"][p["leaf_offsets"][t] + leaves[:, t]]
            return out
        # No categorical node here (those go through _leaves): empty bitsets.
        args = (p["split_feature"], p["threshold"], p["decision_type"], p["left_child"],
                p["right_child"], p["leaf_value"], p["node_offsets"], p["leaf_offsets"],
                p["tree_class"], np.zeros(1, np.int64), np.zeros(0, np.uint32), out)
        if sp.issparse(X):
            predict_raw_sparse(X.indptr, X.indices, X.data, *args)
        else:
            predict_raw(X, *args)
        return out

    def _leaves(self, X, t0, t1):
        p = self._pack(t0, t1)
        out = np.zeros((X.shape[0], t1 - t0), dtype=np.int32)
        for i, block in self._dense_blocks(X):
            predict_leaf(block, p["split_feature"], p["threshold"], p["decision_type"],
                         p["left_child"], p["right_child"], p["node_offsets"],
                         p["cat_boundaries"], p["cb_offsets"], p["cat_threshold"],
                         p["ct_offsets"], out[i:i + block.shape[0]])
        return out

    def _contrib(self, X, t0, t1):
        p = self._pack(t0, t1)
        if "max_depth" not in p:  # the TreeSHAP path buffers' size
            p["max_depth"] = int(tree_depths(p["left_child"], p["right_child"],
                                             p["node_offsets"]).max(initial=0))
        width = self.n_features + 1
        out = np.zeros((X.shape[0], self.n_outputs * width), dtype=np.float64)
        if t0 == 0:
            for k in range(self.n_outputs):
                out[:, k * width + self.n_features] = self.init_score[k]
        for i, block in self._dense_blocks(X):
            predict_contrib(block, p["split_feature"], p["threshold"], p["decision_type"],
                            p["left_child"], p["right_child"], p["leaf_value"], p["leaf_count"],
                            p["internal_count"], p["node_offsets"], p["leaf_offsets"],
                            p["cat_boundaries"], p["cb_offsets"], p["cat_threshold"],
                            p["ct_offsets"], p["tree_class"], p["max_depth"],
                            out[i:i + block.shape[0]])
        return out

    def _transform(self, raw):
        if self.objective_line is not None:
            return lightgbm_transform(self.objective_line, raw)
        pred = self.objective.transform(raw)
        return pred[:, 0] if pred.ndim == 2 and pred.shape[1] == 1 else pred

    def _predict_numpy(self, X, raw_score=False, num_iteration=None, start_iteration=0,
                       pred_leaf=False, pred_contrib=False):
        if pred_leaf and pred_contrib:
            raise ValueError("pred_leaf and pred_contrib cannot both be True.")
        if pred_leaf or pred_contrib:
            X = self._rows(X)
            t0, t1 = self._tree_range(start_iteration, num_iteration)
            return self._leaves(X, t0, t1) if pred_leaf else self._contrib(X, t0, t1)
        raw = self._raw_score_numpy(X, num_iteration, start_iteration)
        if raw_score:
            return raw[:, 0] if self.n_outputs == 1 else raw
        return self._transform(raw)

    def output_shape(self, n_rows, pred_leaf=False, pred_contrib=False, start_iteration=0,
                     num_iteration=None):
        """Shape and dtype of :meth:`predict`'s result for ``n_rows`` rows."""
        if pred_leaf:
            t0, t1 = self._tree_range(start_iteration, num_iteration)
            return (n_rows, t1 - t0), np.dtype(np.int32)
        if pred_contrib:
            return (n_rows, self.n_outputs * (self.n_features + 1)), np.dtype(np.float64)
        if self.n_outputs > 1:
            return (n_rows, self.n_outputs), np.dtype(np.float64)
        return (n_rows,), np.dtype(np.float64)

    def predict(self, X, raw_score=False, *, start_iteration=0, num_iteration=None,
                pred_leaf=False, pred_contrib=False, **kwargs):
        """Predict rows of ``X``: NumPy in, NumPy out; Dask or Zarr in, a lazy Dask array out.

        Parameters
        ----------
        X : ndarray, scipy.sparse matrix, dask.array.Array (NumPy or scipy.sparse chunks), zarr.Array or path of a Zarr store, shape (n_samples, n_features)
            Float features; NaN is a missing value. Values are compared with the thresholds
            in float64, as LightGBM does (float32 input is widened exactly). A pandas
            DataFrame (or a Dask DataFrame, lazily) must have the model's columns (by name when
            both have names); its ``category``, string and object columns are coded by value
            through ``pandas_categorical``: categories in another order map to the model's
            codes, and values training never saw are missing (NaN), as in LightGBM. Sparse rows
            are walked from their stored entries (values not stored are 0). Lazy input is
            predicted by one ``map_blocks`` task per row chunk (:mod:`oocgbdt.dask.predict`);
            nothing is computed at call time.
        raw_score : bool, default False
            Return raw scores (before the sigmoid/softmax) instead of predictions.
        start_iteration : int, default 0
            First boosting round used (LightGBM's ``start_iteration``). From a round > 0 the
            initial score is left out, as LightGBM leaves out the first trees into which it
            folds it.
        num_iteration : int, optional
            Use ``num_iteration`` rounds from ``start_iteration``; default the best iteration
            when early stopping found one, else all rounds; <= 0: all rounds.
        pred_leaf : bool, default False
            Return the leaf index each row reaches in each tree: int32 of shape
            (n_samples, n_trees), trees in training order (round-major, class-minor).
        pred_contrib : bool, default False
            Return SHAP values (exact path-dependent TreeSHAP, LightGBM's ``pred_contrib``;
            :mod:`oocgbdt.kernels.treeshap`): float64 of shape (n_samples, n_features + 1),
            the last column the expected value; multiclass (n_samples, num_class *
            (n_features + 1)), one block per class. Each row (block) sums to the raw score.
            Sparse input gives a dense result.
        **kwargs
            LightGBM prediction parameters that change nothing here are refused.

        Returns
        -------
        ndarray (or dask.array.Array for lazy input): float64 of shape (n_samples,) for one
        output (regression values, or the probability of class 1 for binary), or
        (n_samples, num_class) for multiclass probabilities; see ``pred_leaf`` and
        ``pred_contrib`` for theirs.

        Raises
        ------
        ValueError
            ``X`` is not 2-D or has another number of features than the training data; a
            DataFrame's columns are missing, extra or in another order than the model's
            features, or a column trained on numbers holds text.
            ``pred_leaf`` and ``pred_contrib`` both set.
        TypeError
            ``X`` is not numeric, or is lazy and the Dask layer is not imported; an unknown
            keyword.
        """
        if kwargs:
            raise TypeError(f"predict() got unexpected keyword argument(s) "
                            f"{sorted(kwargs)}; it takes raw_score, start_iteration, "
                            f"num_iteration, pred_leaf and pred_contrib.")
        if pred_leaf and pred_contrib:
            raise ValueError("pred_leaf and pred_contrib cannot both be True.")
        options = dict(raw_score=raw_score, start_iteration=start_iteration,
                       num_iteration=num_iteration, pred_leaf=pred_leaf,
                       pred_contrib=pred_contrib)
        self._tree_range(start_iteration, num_iteration)  # checks start_iteration
        for is_lazy, predict in _LAZY_INPUTS:
            if is_lazy(X):
                return predict(self, X, **options)
        if _looks_lazy(X):
            raise TypeError(f"X is a {type(X).__name__}, which only oocgbdt's Dask layer reads; "
                            f"import oocgbdt.dask (or oocgbdt) first, or pass a NumPy array.")
        return self._predict_numpy(X, **options)

    # ---- importance ----------------------------------------------------------------------
    def feature_importance(self, importance_type="split", iteration=None) -> np.ndarray:
        """Per-feature importance: number of splits (``"split"``) or total split gain (``"gain"``).

        Parameters
        ----------
        importance_type : {"split", "gain"}, default "split"
        iteration : int or None, default None
            Count the trees of the first ``iteration`` boosting rounds; None: up to
            ``best_iteration`` when early stopping set one, else every round; ``<= 0``: every
            round (as ``predict``'s ``num_iteration`` and LightGBM's ``feature_importance``).

        Returns
        -------
        ndarray of shape (n_features,): int64 for ``"split"``, float64 for ``"gain"``, in the
        original feature order (bundles never appear).

        Raises
        ------
        ValueError
            An unknown ``importance_type``.
        """
        if importance_type not in ("split", "gain"):
            raise ValueError(f"importance_type must be 'split' or 'gain', got {importance_type!r}.")
        out = np.zeros(self.n_features, dtype=np.float64)
        for t in self.trees[:self._n_trees_for(iteration)]:
            w = np.ones_like(t.split_gain) if importance_type == "split" else t.split_gain
            np.add.at(out, t.split_feature, w)
        return out.astype(np.int64) if importance_type == "split" else out

    # ---- persistence ---------------------------------------------------------------------
    def to_dict(self) -> dict:
        return _encode({
            "format": MODEL_FORMAT, "version": MODEL_VERSION,
            "params": {k: v for k, v in self.params.items()},
            "n_features": self.n_features, "feature_names": self.feature_names,
            "feature_infos": self.feature_infos, "init_score": self.init_score,
            "best_iteration": self.best_iteration, "best_score": self.best_score,
            "evals_result": self.evals_result,
            "screening_history": self.screening_history_,
            "screening_scores": self.screening_scores_,
            "bundles": self.bundles_,
            "objective_line": self.objective_line,
            "pandas_categorical": (None if self.pandas_categorical is None
                                   else json_categories(self.pandas_categorical)),
            "pandas_categorical_features": self.pandas_categorical_features,
            "trees": [t.to_dict() for t in self.trees],
        })

    @classmethod
    def from_dict(cls, d: dict) -> "Booster":
        if not isinstance(d, dict) or d.get("format") != MODEL_FORMAT:
            raise ValueError(f"Not an oocgbdt model: expected format {MODEL_FORMAT!r}, "
                             f"found {d.get('format') if isinstance(d, dict) else type(d).__name__!r}.")
        if d.get("version") != MODEL_VERSION:
            raise ValueError(f"Unsupported oocgbdt model version {d.get('version')!r}; this "
                             f"version of oocgbdt reads version {MODEL_VERSION}.")
        trees = []
        for td in d["trees"]:
            td = dict(td)
            for k in ("threshold", "split_gain", "internal_value", "internal_weight",
                      "internal_count", "leaf_value", "leaf_weight", "leaf_count"):
                td[k] = _decode_floats(td[k])
            trees.append(Tree.from_dict(td))  # older files lack the categorical fields
        scores = d.get("screening_scores")
        return cls(trees, d["init_score"], d["params"], d["n_features"], d["feature_names"],
                   d.get("feature_infos"), d.get("best_iteration"), d.get("evals_result"),
                   d.get("best_score"), d.get("screening_history"),
                   None if scores is None else _decode_floats(scores), d.get("bundles"),
                   d.get("objective_line"),
                   # Absent from files written before category maps existed.
                   d.get("pandas_categorical"), d.get("pandas_categorical_features"))

    def model_to_string(self, format="json", start_iteration=0, num_iteration=None) -> str:
        """The model as text: oocgbdt's JSON, or LightGBM's text model format.

        Parameters
        ----------
        format : {"json", "lightgbm"}, default "json"
            ``"lightgbm"``: the text ``lightgbm.Booster(model_str=...)`` reads, whose raw
            scores equal this Booster's (:mod:`oocgbdt.core.lightgbm_model`; the initial score
            is folded into the first round's trees, as LightGBM stores it).
        start_iteration, num_iteration : int
            LightGBM format only: the rounds written (LightGBM's ``save_model`` arguments;
            ``num_iteration`` None or <= 0 writes every round from ``start_iteration``).

        Raises
        ------
        ValueError
            An unknown ``format``.
        """
        if format == "json":
            return json.dumps(self.to_dict(), allow_nan=False)
        if format == "lightgbm":
            return to_lightgbm_string(self, start_iteration, num_iteration)
        raise ValueError(f"format must be 'json' or 'lightgbm', got {format!r}.")

    def save_model(self, path, format="json", start_iteration=0, num_iteration=None) -> Path:
        """Write the model to ``path`` atomically; returns the path.

        ``format`` (``"json"``, oocgbdt's own, or ``"lightgbm"``, LightGBM's text model) and
        the rounds are those of :meth:`model_to_string`. The file is written to a temporary
        file in the same folder and moved into place with ``os.replace``, so a crash never
        leaves a half-written model.
        """
        path = Path(path)
        text = self.model_to_string(format, start_iteration, num_iteration)
        # Created with open(..., "x"), not mkstemp: the file gets the mode of any new file
        # (0o666 less the umask), as LightGBM's and XGBoost's model files; mkstemp's 0o600 made
        # models unreadable to other users.
        tmp = str(path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp"))
        try:
            with open(tmp, "x") as fh:
                fh.write(text)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return path

    def to_lightgbm(self):
        """This model as a ``lightgbm.Booster`` (needs the ``lightgbm`` package): the same raw
        scores, for tools that read LightGBM models, e.g. ``shap.TreeExplainer(
        booster.to_lightgbm())``, whose SHAP values equal ``predict(X, pred_contrib=True)``.

        Raises
        ------
        ImportError
            lightgbm is not installed.
        """
        import lightgbm  # an optional dependency, imported on use

        return lightgbm.Booster(model_str=self.model_to_string(format="lightgbm"))

    @classmethod
    def model_from_string(cls, text: str) -> "Booster":
        """A Booster from the text of an oocgbdt JSON model or of a LightGBM text model
        (told apart by their content: LightGBM's first line is ``tree``)."""
        if is_lightgbm_text(text):
            return from_lightgbm_string(text)
        return cls.from_dict(json.loads(text))

    @classmethod
    def load_model(cls, path) -> "Booster":
        """Read a model written by :meth:`save_model` in either format, or a text model
        written by LightGBM (``lightgbm.Booster.save_model``); the format is found from the
        content. A LightGBM model predicts as LightGBM does: the same raw scores, and its
        objective's transform (:func:`oocgbdt.core.lightgbm_model.lightgbm_transform`).

        Raises
        ------
        FileNotFoundError, ValueError (neither an oocgbdt nor a LightGBM model, or an
        unsupported version).
        """
        with open(path) as fh:
            return cls.model_from_string(fh.read())

    def __eq__(self, other):
        if not isinstance(other, Booster):
            return NotImplemented
        return (self.trees == other.trees and np.array_equal(self.init_score, other.init_score)
                and self.n_features == other.n_features)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_packed"] = {}
        return state
