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

from oocgbdt._dtypes import X_DTYPE, as_float_if_frame
from oocgbdt.core.categories import check_frame_columns, encode_frame, is_frame, json_categories
from oocgbdt.core.objectives import get_objective
from oocgbdt.core.tree import Tree
from oocgbdt.kernels.predict import predict_raw, predict_raw_sparse

__all__ = ["Booster", "MODEL_FORMAT", "MODEL_VERSION"]

MODEL_FORMAT = "oocgbdt-model"
MODEL_VERSION = 1


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
#: ``predict(booster, X, raw_score, num_iteration)``, which returns a lazy result.
_LAZY_INPUTS = []


def register_lazy_input(is_lazy, predict) -> None:
    """Have :meth:`Booster.predict` hand inputs for which ``is_lazy(X)`` holds (Dask arrays, Zarr
    arrays and paths) to ``predict(booster, X, raw_score, num_iteration)``. The Dask layer
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
    """

    def __init__(self, trees, init_score, params, n_features, feature_names=None,
                 feature_infos=None, best_iteration=None, evals_result=None, best_score=None,
                 screening_history=None, screening_scores=None, bundles=None,
                 pandas_categorical=None, pandas_categorical_features=None):
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
        self.pandas_categorical = (None if pandas_categorical is None
                                   else [list(c) for c in pandas_categorical])
        self.pandas_categorical_features = [int(i) for i in (pandas_categorical_features or [])]
        if len(self.pandas_categorical_features) != len(self.pandas_categorical or []):
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

    def _pack(self, n_trees):
        if n_trees not in self._packed:
            trees = self.trees[:n_trees]
            cat = lambda name, dt: (np.concatenate([getattr(t, name) for t in trees]).astype(dt)
                                    if trees else np.zeros(0, dt))
            self._packed[n_trees] = dict(
                split_feature=cat("split_feature", np.int32), threshold=cat("threshold", np.float64),
                decision_type=cat("decision_type", np.uint8), left_child=cat("left_child", np.int32),
                right_child=cat("right_child", np.int32), leaf_value=cat("leaf_value", np.float64),
                node_offsets=np.cumsum([0] + [len(t.split_feature) for t in trees]).astype(np.int64),
                leaf_offsets=np.cumsum([0] + [t.n_leaves for t in trees]).astype(np.int64),
                tree_class=np.asarray([t.class_idx for t in trees], dtype=np.int32))
            self._packed[n_trees].update(_pack_categorical(trees))
        return self._packed[n_trees]

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
        return encode_frame(frame, self.pandas_categorical_features,
                            self.pandas_categorical or [], name)

    def _raw_score_numpy(self, X, num_iteration=None) -> np.ndarray:
        """Raw scores of shape (n_rows, n_outputs), float64, for a NumPy or scipy.sparse block."""
        p = self._pack(self._n_trees_for(num_iteration))
        if sp.issparse(X):
            X = sp.csr_matrix(X)
            if X.shape[1] != self.n_features:
                raise ValueError(f"X has {X.shape[1]} features, but the model was trained on "
                                 f"{self.n_features} features.")
            if X.dtype != X_DTYPE:
                X = X.astype(X_DTYPE)
            if not X.has_canonical_format:
                X = X.copy()
                X.sum_duplicates()
            out = np.tile(self.init_score, (X.shape[0], 1))
            predict_raw_sparse(X.indptr, X.indices, X.data, p["split_feature"], p["threshold"],
                               p["decision_type"], p["left_child"], p["right_child"],
                               p["leaf_value"], p["node_offsets"], p["leaf_offsets"],
                               p["tree_class"], p["cat_boundaries"], p["cat_threshold"], out)
            return out
        X = np.ascontiguousarray(self._check_X(X), dtype=X_DTYPE)
        out = np.tile(self.init_score, (X.shape[0], 1))
        predict_raw(X, p["split_feature"], p["threshold"], p["decision_type"], p["left_child"],
                    p["right_child"], p["leaf_value"], p["node_offsets"], p["leaf_offsets"],
                    p["tree_class"], p["cat_boundaries"], p["cat_threshold"], out)
        return out

    def _predict_numpy(self, X, raw_score=False, num_iteration=None):
        raw = self._raw_score_numpy(X, num_iteration)
        if raw_score:
            return raw[:, 0] if self.n_outputs == 1 else raw
        pred = self.objective.transform(raw)
        return pred[:, 0] if pred.ndim == 2 and pred.shape[1] == 1 else pred

    def predict(self, X, raw_score=False, num_iteration=None):
        """Predict rows of ``X``: NumPy in, NumPy out; Dask or Zarr in, a lazy Dask array out.

        Parameters
        ----------
        X : ndarray, scipy.sparse matrix, dask.array.Array (NumPy or scipy.sparse chunks), zarr.Array or path of a Zarr store, shape (n_samples, n_features)
            Float features; NaN is a missing value. A pandas DataFrame (or a Dask DataFrame,
            lazily) must have the model's columns (by name when both have names); its
            ``category``, string and object columns are coded by value through
            ``pandas_categorical``: categories in another order map to the model's codes,
            and values training never saw are missing (NaN), as in LightGBM. Sparse rows are walked from their stored
            entries (values not stored are 0). Lazy input is predicted by one ``map_blocks``
            task per row chunk (:mod:`oocgbdt.dask.predict`); nothing is computed at call time.
        raw_score : bool, default False
            Return raw scores (before the sigmoid/softmax) instead of predictions.
        num_iteration : int, optional
            Use the first ``num_iteration`` rounds; default the best iteration when early
            stopping found one, else all rounds.

        Returns
        -------
        ndarray (or dask.array.Array for lazy input) of float64, shape (n_samples,) for one
        output (regression values, or the probability of class 1 for binary), or
        (n_samples, num_class) for multiclass probabilities.

        Raises
        ------
        ValueError
            ``X`` is not 2-D or has another number of features than the training data; a
            DataFrame's columns are missing, extra or in another order than the model's
            features, or a column trained on numbers holds text.
        TypeError
            ``X`` is not numeric, or is lazy and the Dask layer is not imported.
        """
        for is_lazy, predict in _LAZY_INPUTS:
            if is_lazy(X):
                return predict(self, X, raw_score, num_iteration)
        if _looks_lazy(X):
            raise TypeError(f"X is a {type(X).__name__}, which only oocgbdt's Dask layer reads; "
                            f"import oocgbdt.dask (or oocgbdt) first, or pass a NumPy array.")
        return self._predict_numpy(X, raw_score=raw_score, num_iteration=num_iteration)

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
            trees.append(Tree.from_dict(td))
        scores = d.get("screening_scores")
        return cls(trees, d["init_score"], d["params"], d["n_features"], d["feature_names"],
                   d.get("feature_infos"), d.get("best_iteration"), d.get("evals_result"),
                   d.get("best_score"), d.get("screening_history"),
                   None if scores is None else _decode_floats(scores), d.get("bundles"),
                   # Absent from files written before category maps existed.
                   d.get("pandas_categorical"), d.get("pandas_categorical_features"))

    def save_model(self, path) -> Path:
        """Write the model as JSON to ``path`` atomically; returns the path.

        The file is written to a temporary file in the same folder and moved into place with
        ``os.replace``, so a crash never leaves a half-written model.
        """
        path = Path(path)
        text = json.dumps(self.to_dict(), allow_nan=False)
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

    @classmethod
    def load_model(cls, path) -> "Booster":
        """Read a model written by :meth:`save_model`.

        Raises
        ------
        FileNotFoundError, ValueError (not an oocgbdt model, or an unsupported version).
        """
        with open(path) as fh:
            return cls.from_dict(json.load(fh))

    def __eq__(self, other):
        if not isinstance(other, Booster):
            return NotImplemented
        return (self.trees == other.trees and np.array_equal(self.init_score, other.init_score)
                and self.n_features == other.n_features)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_packed"] = {}
        return state


def _pack_categorical(trees) -> dict:
    """The raw-category bitsets of ``trees`` as one pair of arrays: each tree's categorical
    nodes get ``threshold`` shifted by the categorical splits of the trees before it, and its
    ``cat_boundaries`` by the bitset words before it. Returns ``threshold`` (when any tree has
    a categorical node), ``cat_boundaries`` (int64) and ``cat_threshold`` (uint32)."""
    boundaries, words, thresholds = [0], [], []
    any_cat = False
    for t in trees:
        n_cat, n_words = len(boundaries) - 1, len(words)
        is_cat = (t.decision_type & 1) != 0
        any_cat = any_cat or bool(is_cat.any())
        thresholds.append(np.where(is_cat, t.threshold + n_cat, t.threshold))
        boundaries.extend((t.cat_boundaries[1:].astype(np.int64) + n_words).tolist())
        words.extend(t.cat_threshold.tolist())
    out = dict(cat_boundaries=np.asarray(boundaries, dtype=np.int64),
               cat_threshold=np.asarray(words, dtype=np.uint32))
    if any_cat:
        out["threshold"] = np.concatenate(thresholds).astype(np.float64)
    return out
