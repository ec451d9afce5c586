"""This module contains the objectives: loss functions, their init scores and output transforms.

An objective sits at both ends of a boosting iteration. Before the first tree, the per-chunk
:meth:`Objective.label_stats` partial sums are tree-reduced (merged with ``+``) and
:meth:`Objective.init_score_from_stats` turns them into the starting raw score (LightGBM's
``boost_from_average``). Every iteration, :meth:`Objective.gradients` turns each chunk's raw
scores into float32 gradients and hessians with the kernels of ``oocgbdt.kernels.loss``. At
prediction time, :meth:`Objective.transform` maps raw scores to predictions.

Raw scores are always float64 arrays of shape ``(n_samples, num_tree_per_iteration)`` (one
column per class for multiclass, one column otherwise), row-major. Gradients and hessians have
the same shape, in float32 (``oocgbdt._dtypes.G_H_DTYPE``).

LightGBM sources: ``src/objective/regression_objective.hpp`` (``RegressionL2loss``),
``src/objective/binary_objective.hpp`` (``BinaryLogloss``),
``src/objective/multiclass_objective.hpp`` (``MulticlassSoftmax``) and
``src/boosting/gbdt.cpp`` (``BoostFromAverage``).
"""
import copy
import warnings

import numpy as np

from oocgbdt._dtypes import G_H_DTYPE, K_EPSILON, Y_DTYPE
from oocgbdt.kernels.loss import (
    gradients_binary,
    gradients_cross_entropy,
    gradients_cross_entropy_lambda,
    gradients_fair,
    gradients_gamma,
    gradients_huber,
    gradients_l1,
    gradients_l2,
    gradients_mape,
    gradients_multiclass,
    gradients_poisson,
    gradients_quantile,
    gradients_sigmoid_logloss,
    gradients_tweedie,
    mape_label_weight,
)
from oocgbdt.params import DEFAULT_METRIC, resolve_params

__all__ = [
    "Objective",
    "RegressionL2",
    "BinaryLogloss",
    "MulticlassSoftmax",
    "RegressionL1",
    "Huber",
    "Fair",
    "Quantile",
    "MAPE",
    "Poisson",
    "Gamma",
    "Tweedie",
    "CrossEntropy",
    "CrossEntropyLambda",
    "MulticlassOVA",
    "get_objective",
    "check_sample_weight",
]

_MAX_SHOWN = 5  # bad label values quoted in an error message


def _as_1d_numeric(name, a):
    """Return ``a`` as a 1-D numeric ndarray (no copy when possible), or raise ValueError."""
    a = np.asarray(a)
    if a.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of shape (n_samples,), got shape {a.shape}")
    if a.dtype.kind not in "biuf":
        raise ValueError(
            f"{name} must hold numbers (bool, int or float), got dtype {a.dtype}"
        )
    return a


def _check_finite(name, a):
    if a.dtype.kind == "f":
        bad = ~np.isfinite(a)
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{name} must be finite, found {int(bad.sum())} NaN or infinite value(s) "
                f"(first at index {first}: {a[first].item()!r})"
            )


def _show_values(values):
    values = np.unique(values)
    shown = ", ".join(repr(float(v)) for v in values[:_MAX_SHOWN])
    more = f" (and {values.size - _MAX_SHOWN} more)" if values.size > _MAX_SHOWN else ""
    return f"{values.size} other value(s): {shown}{more}"


def check_sample_weight(weight, n_samples=None):
    """Validate sample weights.

    Parameters
    ----------
    weight : array-like of shape (n_samples,) or None
        Sample weights. None is valid (every weight is 1).
    n_samples : int or None
        Expected length; not checked when None.

    Raises
    ------
    ValueError
        If ``weight`` is not 1-D, not numeric, of the wrong length, not finite or negative.
    """
    if weight is None:
        return
    weight = _as_1d_numeric("weight", weight)
    if n_samples is not None and weight.shape[0] != n_samples:
        raise ValueError(
            f"weight must have one value per row: expected length {n_samples}, "
            f"got {weight.shape[0]}"
        )
    _check_finite("weight", weight)
    if weight.size and weight.min() < 0:
        first = int(np.flatnonzero(weight < 0)[0])
        raise ValueError(
            f"weight must be >= 0, found {int((weight < 0).sum())} negative value(s) "
            f"(first at index {first}: {weight[first].item()!r})"
        )


class Objective:
    """Base class of the objectives; use :func:`get_objective` to build one.

    Attributes
    ----------
    name : str
        Canonical objective name (``"regression"``, ``"binary"``, ``"multiclass"``).
    num_class : int
        Number of classes (1 except for multiclass).
    num_tree_per_iteration : int
        Trees per boosting iteration: ``num_class`` for multiclass, else 1. Also the number of
        raw-score columns.
    default_metric : str
        Canonical name of the metric used when ``metric`` is None.
    boost_from_average : bool
        If False, :meth:`init_score_from_stats` returns zeros.
    lightgbm_objective_string : str
        The objective line of a LightGBM model file, e.g. ``"binary sigmoid:1"``.

    Notes
    -----
    Objects are stateless after construction and picklable, so they can be shipped to Dask
    workers.
    """

    name = None

    def __init__(self, num_class=1, boost_from_average=True):
        self.num_class = int(num_class)
        self.boost_from_average = bool(boost_from_average)

    #: Whether the objective's gradients need the rows' query groups (ranking).
    needs_queries = False

    #: Whether each row's gradients depend on that row's label, weight and raw scores alone,
    #: so that the gradients of some rows can be computed without the others
    #: (:func:`oocgbdt.core.partition.partition_gradients` on a bagging round's rows). False
    #: for ranking (per query) and for a callable objective (it is given every row).
    row_wise = True

    #: How a training set's labels are checked before training: ``"values"`` (every distinct
    #: label, :meth:`check_labels`), ``"range"`` (the smallest and largest label suffice), or
    #: None (any finite label).
    label_check = None

    #: Whether every training weight must be > 0 (LightGBM refuses a zero weight for
    #: ``cross_entropy_lambda``, ``CrossEntropyLambda::Init``); checked with the weights.
    positive_weights = False

    #: LightGBM's ``reg_sqrt``: the loss is fit to ``sign(y) sqrt(|y|)`` (see
    #: :meth:`objective_labels`) and predictions are squared back. Only the regression losses
    #: of :class:`RegressionL2`'s family set it.
    reg_sqrt = False

    #: Objectives whose leaf values are renewed after each tree and whose init score is a
    #: weighted percentile of the labels (LightGBM's ``IsRenewTreeOutput``): the percentile,
    #: else None.
    renew_alpha = None

    @classmethod
    def from_params(cls, params):
        """Build from resolved parameters (:func:`oocgbdt.params.resolve_params`)."""
        return cls(num_class=params["num_class"], boost_from_average=params["boost_from_average"])

    def objective_labels(self, y):
        """The labels the loss is fit to, from the labels as given.

        ``y`` itself, or with :attr:`reg_sqrt` ``sign(y) * sqrt(|y|)`` computed in ``y``'s dtype
        (LightGBM ``RegressionL2loss::Init``, ``src/objective/regression_objective.hpp``, on
        its float32 labels). :meth:`label_stats`, :meth:`gradients` and
        :meth:`percentile_weights` apply it themselves; leaf renewal's residuals use it.
        """
        if not self.reg_sqrt:
            return y
        y = np.asarray(y)
        if y.dtype.kind != "f":
            y = y.astype(np.float64)
        return np.sign(y) * np.sqrt(np.abs(y))

    def at_round(self, iteration):
        """The objective of boosting round ``iteration`` (itself unless its gradients depend on
        the round, as ``rank_xendcg``'s random draws)."""
        return self

    def with_label_stats(self, stats):
        """The objective gradients are computed with, once the label statistics of the whole
        training set are merged (itself unless it needs global counts, see
        :class:`BinaryLogloss`)."""
        return self

    def percentile_weights(self, y, weight):
        """Per-row weights of the weighted percentile of leaf renewal, or None (unweighted).

        Only used when :attr:`renew_alpha` is set. Default: the sample weights."""
        return weight

    #: The init score's percentile is rounded to float32 (LightGBM takes it over float32
    #: labels), the renewed leaf values are not (float64 residuals).
    def init_score_from_percentile(self, value):
        """Init score from the labels' weighted percentile (``BoostFromScore``)."""
        score = np.array([float(np.float32(value))], dtype=Y_DTYPE)
        score[np.abs(score) <= K_EPSILON] = 0.0
        return score

    # -- description ------------------------------------------------------------------------
    @property
    def num_tree_per_iteration(self):
        return 1

    @property
    def default_metric(self):
        return DEFAULT_METRIC[self.name]

    @property
    def lightgbm_objective_string(self):
        return self.name

    def __repr__(self):
        return (
            f"{type(self).__name__}(num_class={self.num_class}, "
            f"boost_from_average={self.boost_from_average})"
        )

    def __eq__(self, other):
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self):
        return hash((type(self), tuple(sorted(self.__dict__.items()))))

    # -- labels -----------------------------------------------------------------------------
    def check_labels(self, y, name="y"):
        """Raise if ``y`` is not a valid label vector for this objective.

        Usable per chunk: it only looks at the values it is given.

        Parameters
        ----------
        y : array-like of shape (n_samples,)
            Labels (bool, integer or float).
        name : str, default "y"
            How messages name the labels (e.g. ``"eval_set 'valid_0' y"``).

        Raises
        ------
        ValueError
            If ``y`` is not 1-D, not numeric, holds NaN or infinite values, or (binary) holds
            values other than 0 and 1, or (multiclass) values that are not integers in
            ``[0, num_class)``. The message names ``name``, what was expected and what was
            found.
        """
        y = _as_1d_numeric(name, y)
        _check_finite(name, y)
        self._check_label_values(y, name)

    def _check_label_values(self, y, name):
        pass

    # -- init score -------------------------------------------------------------------------
    def label_stats(self, y, weight=None):
        """Per-chunk partial sums for the init score, mergeable with ``+``.

        Parameters
        ----------
        y : ndarray of shape (n_samples,)
            Labels of one chunk (already checked with :meth:`check_labels`).
        weight : ndarray of shape (n_samples,) or None
            Sample weights of the chunk; None means 1.

        Returns
        -------
        stats : ndarray of shape (n_stats,), dtype=float64
            Partial sums; ``label_stats(y1) + label_stats(y2)`` equals the stats of the
            concatenation (up to float rounding). Layout: regression ``[sum(w*y), sum(w)]``;
            binary ``[sum(w*[y>0]), sum(w), count(y>0), n_samples]``; multiclass
            ``[sum(w*[y==0]), ..., sum(w*[y==K-1]), sum(w)]``.
        """
        raise NotImplementedError

    def init_score_from_stats(self, stats):
        """Initial raw score (LightGBM's ``boost_from_average``) from merged label stats.

        Parameters
        ----------
        stats : ndarray of shape (n_stats,), dtype=float64
            The sum of :meth:`label_stats` over every chunk of the training set.

        Returns
        -------
        init_score : ndarray of shape (num_tree_per_iteration,), dtype=float64
            Zeros if ``boost_from_average`` is False. Otherwise, per class, the objective's
            ``BoostFromScore`` (see the subclasses), with values of absolute value
            <= ``kEpsilon`` (1e-15) replaced by 0, as ``GBDT::BoostFromAverage`` does
            (``src/boosting/gbdt.cpp``). LightGBM adds this value to the first tree(s).

        Raises
        ------
        ValueError
            If the total weight is 0 (no rows, or every weight 0).
        """
        stats = np.asarray(stats, dtype=np.float64)
        if not self.boost_from_average:
            return np.zeros(self.num_tree_per_iteration, dtype=Y_DTYPE)
        if not stats[self._sum_weight_index] > 0:
            raise ValueError(
                "cannot compute the initial score: the total sample weight must be > 0, "
                f"got {float(stats[self._sum_weight_index])!r} (no rows, or every weight is 0)"
            )
        score = np.asarray(self._boost_from_score(stats), dtype=Y_DTYPE).reshape(-1)
        score[np.abs(score) <= K_EPSILON] = 0.0
        return score

    def init_score(self, y, weight=None):
        """``init_score_from_stats(label_stats(y, weight))``, for in-memory data."""
        return self.init_score_from_stats(self.label_stats(y, weight))

    def need_train_from_stats(self, stats):
        """Which classes LightGBM trains (``ObjectiveFunction::ClassNeedTrain``).

        Parameters
        ----------
        stats : ndarray of shape (n_stats,), dtype=float64
            Merged :meth:`label_stats` of the training set.

        Returns
        -------
        need_train : ndarray of shape (num_tree_per_iteration,), dtype=bool
            False for a class LightGBM does not boost: binary with only one class present
            (by row count); multiclass class whose weighted prior is <= 1e-15 or >= 1 - 1e-15.
            Such a class's trees stay constant (the init score on the first iteration, 0 after).
        """
        return np.ones(self.num_tree_per_iteration, dtype=bool)

    _sum_weight_index = 1

    def _boost_from_score(self, stats):
        raise NotImplementedError

    # -- gradients --------------------------------------------------------------------------
    def gradients(self, y, raw_score, weight, grad_out, hess_out):
        """Write the gradients and hessians of one chunk.

        Parameters
        ----------
        y : ndarray of shape (n_samples,)
            Labels (float32 for bit-parity with LightGBM, which stores labels as float32;
            other numeric dtypes are cast to float64).
        raw_score : ndarray of shape (n_samples, num_tree_per_iteration), dtype=float64
            Raw scores, C-contiguous (copied if not). A 1-D array is accepted when
            ``num_tree_per_iteration == 1``.
        weight : ndarray of shape (n_samples,) or None
            Sample weights (float32 for LightGBM parity); None means 1.
        grad_out, hess_out : ndarray of shape (n_samples, num_tree_per_iteration), dtype=float32
            C-contiguous outputs, overwritten. 1-D is accepted when
            ``num_tree_per_iteration == 1``.

        Raises
        ------
        ValueError
            If shapes, dtypes or memory layouts do not match.

        Notes
        -----
        Formulas: see ``oocgbdt.kernels.loss``. Labels are not validated here (call
        :meth:`check_labels` once, when the data is loaded).
        """
        n_samples = len(y)
        k = self.num_tree_per_iteration
        y = np.asarray(y)
        if y.dtype.kind != "f":
            y = y.astype(np.float64)
        y = self.objective_labels(y)
        raw_score = np.ascontiguousarray(raw_score, dtype=Y_DTYPE)
        if raw_score.shape not in ((n_samples, k),) + (((n_samples,),) if k == 1 else ()):
            raise ValueError(
                f"raw_score must have shape ({n_samples}, {k}), got {raw_score.shape}"
            )
        for name, out in (("grad_out", grad_out), ("hess_out", hess_out)):
            if not isinstance(out, np.ndarray) or out.dtype != G_H_DTYPE:
                raise ValueError(
                    f"{name} must be a float32 ndarray, got "
                    f"{getattr(out, 'dtype', type(out).__name__)}"
                )
            if out.shape not in ((n_samples, k),) + (((n_samples,),) if k == 1 else ()):
                raise ValueError(f"{name} must have shape ({n_samples}, {k}), got {out.shape}")
            if not out.flags.c_contiguous or not out.flags.writeable:
                raise ValueError(f"{name} must be C-contiguous and writeable")
        if weight is not None:
            weight = np.asarray(weight)
            if weight.shape != (n_samples,):
                raise ValueError(f"weight must have shape ({n_samples},), got {weight.shape}")
            if weight.dtype.kind != "f":
                weight = weight.astype(np.float64)
        self._gradients(y, raw_score, weight, grad_out, hess_out)

    def _gradients(self, y, raw_score, weight, grad_out, hess_out):
        raise NotImplementedError

    # -- predictions ------------------------------------------------------------------------
    def transform(self, raw_score):
        """Map raw scores to predictions (LightGBM's ``ConvertOutput``).

        Parameters
        ----------
        raw_score : array-like of shape (n_samples, num_tree_per_iteration) or (n_samples,)
            Raw scores; 1-D only when ``num_tree_per_iteration == 1``.

        Returns
        -------
        ndarray, dtype=float64
            Regression: the raw score, shape (n_samples,). Binary: P(class 1) =
            ``1 / (1 + exp(-raw_score))``, shape (n_samples,). Multiclass: the row-wise
            softmax, shape (n_samples, num_class).
        """
        raise NotImplementedError

    def _raw_1d(self, raw_score):
        raw_score = np.asarray(raw_score, dtype=Y_DTYPE)
        if raw_score.ndim == 2 and raw_score.shape[1] == 1:
            raw_score = raw_score[:, 0]
        if raw_score.ndim != 1:
            raise ValueError(
                f"raw_score must have shape (n_samples,) or (n_samples, 1) for objective "
                f"{self.name!r}, got {raw_score.shape}"
            )
        return raw_score


class RegressionL2(Objective):
    """L2 regression (LightGBM ``objective="regression"``, ``RegressionL2loss``).

    Loss ``(s - y)**2 / 2``; gradient ``s - y``, hessian 1 (times the weight). Init score: the
    weighted mean of ``y``. Prediction: the raw score.

    With ``reg_sqrt`` (this loss and those of ``regression_l1``, ``fair``, ``quantile``,
    ``mape``), ``y`` is replaced by ``sign(y) sqrt(|y|)`` everywhere above, and predictions are
    ``sign(s) s**2`` (``RegressionL2loss``, ``ConvertOutput``); the losses that LightGBM
    derives from this class without it (``huber``, ``poisson``, ``gamma``, ``tweedie``) turn it
    off with a warning, as LightGBM does.
    """

    name = "regression"
    #: Whether ``reg_sqrt`` applies: True, False (LightGBM turns it off with a warning), None
    #: (not a parameter of this objective: ignored).
    _reg_sqrt_support = True

    def __init__(self, num_class=1, boost_from_average=True, reg_sqrt=False):
        super().__init__(num_class, boost_from_average)
        if reg_sqrt and self._reg_sqrt_support is False:
            warnings.warn(f"reg_sqrt does not apply to objective {self.name!r}: it is turned "
                          f"off (as LightGBM does)", UserWarning, stacklevel=3)
        self.reg_sqrt = bool(reg_sqrt) and bool(self._reg_sqrt_support)

    @classmethod
    def from_params(cls, params):
        return cls(params["num_class"], params["boost_from_average"],
                   reg_sqrt=params["reg_sqrt"])

    @property
    def lightgbm_objective_string(self):
        return f"{self.name} sqrt" if self.reg_sqrt else self.name

    def label_stats(self, y, weight=None):
        y = np.asarray(self.objective_labels(y))
        if weight is None:
            return np.array([np.sum(y, dtype=np.float64), float(y.shape[0])])
        # Products in float64, as LightGBM (label_t * label_t promoted to double).
        weight = np.asarray(weight, dtype=np.float64)
        return np.array(
            [np.dot(np.asarray(y, dtype=np.float64), weight), np.sum(weight)]
        )

    def _boost_from_score(self, stats):
        # RegressionL2loss::BoostFromScore: suml / sumw.
        return [stats[0] / stats[1]]

    def _gradients(self, y, raw_score, weight, grad_out, hess_out):
        n = y.shape[0]
        gradients_l2(y, raw_score.reshape(n), weight, grad_out.reshape(n), hess_out.reshape(n))

    def transform(self, raw_score):
        s = self._raw_1d(raw_score)
        return np.sign(s) * s * s if self.reg_sqrt else s.copy()


class BinaryLogloss(Objective):
    """Binary classification with the logloss (LightGBM ``objective="binary"``).

    Labels are 0 and 1 (``y > 0`` is the positive class). Init score:
    ``log(p / (1 - p)) / sigmoid`` with ``p`` the weighted share of positives clamped to
    ``[1e-15, 1 - 1e-15]`` (``BinaryLogloss::BoostFromScore``). Prediction: P(class 1)
    ``= 1 / (1 + exp(-sigmoid * s))``.

    Parameters
    ----------
    sigmoid : float > 0, default 1.0
    is_unbalance : bool, default False
        Weigh the gradients of the rarer label by (count of the other label) / (its count), the
        counts over the whole training set (``BinaryLogloss::Init``).
    scale_pos_weight : float > 0, default 1.0
        Extra weight of the positive label's gradients.

    The label weights need the global label counts: :meth:`with_label_stats` returns the
    objective the gradients are computed with, after the label statistics are merged.
    """

    name = "binary"
    label_check = "values"

    def __init__(self, num_class=1, boost_from_average=True, sigmoid=1.0, is_unbalance=False,
                 scale_pos_weight=1.0):
        super().__init__(num_class, boost_from_average)
        self.sigmoid = float(sigmoid)
        self.is_unbalance = bool(is_unbalance)
        self.scale_pos_weight = float(scale_pos_weight)
        self.label_weights = (1.0, float(scale_pos_weight))

    @classmethod
    def from_params(cls, params):
        return cls(params["num_class"], params["boost_from_average"], params["sigmoid"],
                   params["is_unbalance"], params["scale_pos_weight"])

    @property
    def lightgbm_objective_string(self):
        return f"{self.name} sigmoid:{self.sigmoid:g}"

    def _check_label_values(self, y, name):
        bad = (y != 0) & (y != 1)
        if bad.any():
            raise ValueError(
                f"{name} must contain only the labels 0 and 1 for objective 'binary', found "
                + _show_values(y[bad])
            )

    def label_stats(self, y, weight=None):
        positive = np.asarray(y) > 0
        n_pos = float(np.count_nonzero(positive))
        n = float(positive.shape[0])
        if weight is None:
            return np.array([n_pos, n, n_pos, n])
        weight = np.asarray(weight)
        return np.array(
            [np.sum(weight[positive], dtype=np.float64), np.sum(weight, dtype=np.float64),
             n_pos, n]
        )

    def with_label_stats(self, stats):
        """This objective with its label weights set from the merged label statistics
        (``is_unbalance``: the row counts of the two labels, ``BinaryLogloss::Init``)."""
        stats = np.asarray(stats, dtype=np.float64)
        w_neg, w_pos = _label_weights(stats[2], stats[3] - stats[2], self.is_unbalance,
                                      self.scale_pos_weight)
        out = copy.copy(self)
        out.label_weights = (w_neg, w_pos)
        return out

    def _boost_from_score(self, stats):
        # BinaryLogloss::BoostFromScore (src/objective/binary_objective.hpp).
        pavg = stats[0] / stats[1]
        pavg = min(pavg, 1.0 - K_EPSILON)
        pavg = max(pavg, K_EPSILON)
        return [np.log(pavg / (1.0 - pavg)) / self.sigmoid]

    def need_train_from_stats(self, stats):
        n_pos, n = stats[2], stats[3]
        return np.array([0 < n_pos < n])

    def _gradients(self, y, raw_score, weight, grad_out, hess_out):
        n = y.shape[0]
        if self.sigmoid == 1.0 and self.label_weights == (1.0, 1.0):
            gradients_binary(
                y, raw_score.reshape(n), weight, grad_out.reshape(n), hess_out.reshape(n)
            )
        else:
            gradients_sigmoid_logloss(y, raw_score.reshape(n), weight, -1, self.sigmoid,
                                      self.label_weights[0], self.label_weights[1],
                                      grad_out.reshape(n), hess_out.reshape(n))

    def transform(self, raw_score):
        raw_score = self._raw_1d(raw_score)
        with np.errstate(over="ignore"):
            return 1.0 / (1.0 + np.exp(-self.sigmoid * raw_score))


def _label_weights(n_pos, n_neg, is_unbalance, scale_pos_weight):
    """``(negative, positive)`` label weights of ``BinaryLogloss::Init``."""
    w_neg, w_pos = 1.0, 1.0
    if is_unbalance and n_pos > 0 and n_neg > 0:
        if n_pos > n_neg:
            w_neg = float(n_pos) / float(n_neg)
        else:
            w_pos = float(n_neg) / float(n_pos)
    return w_neg, w_pos * scale_pos_weight


class MulticlassSoftmax(Objective):
    """Multiclass classification with the softmax loss (LightGBM ``objective="multiclass"``).

    Labels are integers in ``[0, num_class)``; one tree per class per iteration. Hessians carry
    LightGBM's factor ``K / (K - 1)``. Init score per class: ``log(max(1e-15, prior_k))`` with
    ``prior_k`` the weighted share of class ``k`` (``MulticlassSoftmax::BoostFromScore``).
    Prediction: the row-wise softmax.
    """

    name = "multiclass"
    label_check = "values"

    def __init__(self, num_class=2, boost_from_average=True):
        if int(num_class) < 2:
            raise ValueError(f"num_class must be an integer >= 2 for multiclass, got {num_class}")
        super().__init__(num_class, boost_from_average)

    @property
    def num_tree_per_iteration(self):
        return self.num_class

    @property
    def lightgbm_objective_string(self):
        return f"multiclass num_class:{self.num_class}"

    @property
    def _sum_weight_index(self):
        return self.num_class

    def _check_label_values(self, y, name):
        bad = (y < 0) | (y >= self.num_class)
        if y.dtype.kind == "f":
            bad |= y != np.floor(y)
        if bad.any():
            raise ValueError(
                f"{name} must contain integer class labels in [0, num_class) = [0, {self.num_class}) "
                f"for objective 'multiclass', found " + _show_values(y[bad])
            )

    def label_stats(self, y, weight=None):
        labels = np.asarray(y).astype(np.intp)
        stats = np.empty(self.num_class + 1, dtype=np.float64)
        if weight is None:
            stats[:-1] = np.bincount(labels, minlength=self.num_class)[: self.num_class]
            stats[-1] = labels.shape[0]
        else:
            weight = np.asarray(weight, dtype=np.float64)
            stats[:-1] = np.bincount(labels, weights=weight, minlength=self.num_class)[
                : self.num_class
            ]
            stats[-1] = np.sum(weight)
        return stats

    def _priors(self, stats):
        return np.asarray(stats[:-1], dtype=np.float64) / stats[-1]

    def _boost_from_score(self, stats):
        # MulticlassSoftmax::BoostFromScore: log(max(kEpsilon, class_init_probs_[k])).
        return np.log(np.maximum(K_EPSILON, self._priors(stats)))

    def need_train_from_stats(self, stats):
        priors = np.abs(self._priors(stats))
        return ~((priors <= K_EPSILON) | (priors >= 1.0 - K_EPSILON))

    def _gradients(self, y, raw_score, weight, grad_out, hess_out):
        gradients_multiclass(y, raw_score, weight, grad_out, hess_out)

    def transform(self, raw_score):
        raw_score = np.asarray(raw_score, dtype=Y_DTYPE)
        if raw_score.ndim != 2 or raw_score.shape[1] != self.num_class:
            raise ValueError(
                f"raw_score must have shape (n_samples, {self.num_class}) for objective "
                f"'multiclass', got {raw_score.shape}"
            )
        e = np.exp(raw_score - raw_score.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


class _OneOutputRegression(RegressionL2):
    """A regression loss whose init score is L2's weighted mean, unless overridden."""

    _param_names = ()

    def __init__(self, num_class=1, boost_from_average=True, reg_sqrt=False, **loss_params):
        super().__init__(num_class, boost_from_average, reg_sqrt)
        for name in self._param_names:
            setattr(self, name, float(loss_params[name]))

    @classmethod
    def from_params(cls, params):
        return cls(params["num_class"], params["boost_from_average"],
                   reg_sqrt=params["reg_sqrt"], **{n: params[n] for n in cls._param_names})

    def __repr__(self):
        extra = "".join(f", {n}={getattr(self, n)!r}" for n in self._param_names)
        extra += ", reg_sqrt=True" if self.reg_sqrt else ""
        return (f"{type(self).__name__}(num_class={self.num_class}, "
                f"boost_from_average={self.boost_from_average}{extra})")

    def _kernel_args(self):
        return tuple(getattr(self, n) for n in self._param_names)

    def _gradients(self, y, raw_score, weight, grad_out, hess_out):
        n = y.shape[0]
        self._kernel(y, raw_score.reshape(n), weight, *self._kernel_args(),
                     grad_out.reshape(n), hess_out.reshape(n))


class RegressionL1(_OneOutputRegression):
    """L1 regression (LightGBM ``objective="regression_l1"``, ``RegressionL1loss``).

    Gradient ``sign(s - y)``, hessian 1 (times the weight). Init score: the weighted median of
    the labels; after each tree, every leaf's value becomes the weighted median of its rows'
    residuals ``y - s`` (``RenewTreeOutput``), before shrinkage.
    """

    name = "regression_l1"
    renew_alpha = 0.5
    _kernel = staticmethod(gradients_l1)


class Huber(_OneOutputRegression):
    """Huber loss with delta ``alpha`` (LightGBM ``objective="huber"``). Init: weighted mean."""

    name = "huber"
    _reg_sqrt_support = False
    _param_names = ("alpha",)
    _kernel = staticmethod(gradients_huber)


class Fair(_OneOutputRegression):
    """Fair loss ``c |d| - c**2 log(1 + |d| / c)`` (LightGBM ``objective="fair"``, ``fair_c``).
    Init: weighted mean."""

    name = "fair"
    _param_names = ("fair_c",)
    _kernel = staticmethod(gradients_fair)


class Quantile(_OneOutputRegression):
    """Quantile regression at ``alpha`` (LightGBM ``objective="quantile"``).

    Init score: the weighted ``alpha``-percentile of the labels; leaves are renewed to the
    weighted ``alpha``-percentile of their residuals, as :class:`RegressionL1`.
    """

    name = "quantile"
    _param_names = ("alpha",)
    _kernel = staticmethod(gradients_quantile)

    def __init__(self, num_class=1, boost_from_average=True, reg_sqrt=False, alpha=0.9):
        if not 0.0 < float(alpha) < 1.0:
            raise ValueError(f"alpha must be in (0, 1) for objective 'quantile', got {alpha!r}")
        super().__init__(num_class, boost_from_average, reg_sqrt, alpha=alpha)

    @property
    def renew_alpha(self):
        # LightGBM keeps alpha as float32 (score_t alpha_).
        return float(np.float32(self.alpha))


class MAPE(_OneOutputRegression):
    """Mean absolute percentage error (LightGBM ``objective="mape"``, ``RegressionMAPELOSS``).

    Gradient ``sign(s - y) * w / max(1, |y|)``, hessian ``w``. Init score and renewed leaf
    values: percentiles at 0.5 weighted by ``w / max(1, |y|)``.
    """

    name = "mape"
    renew_alpha = 0.5
    _kernel = staticmethod(gradients_mape)

    def percentile_weights(self, y, weight):
        out = np.empty(np.asarray(y).shape[0], dtype=np.float32)
        mape_label_weight(np.asarray(self.objective_labels(y)), weight, out)
        return out


class _LogLinkRegression(_OneOutputRegression):
    """Poisson, gamma, tweedie: non-negative labels, raw score = log of the mean.

    Init score: ``log`` of the weighted mean label (``RegressionPoissonLoss::BoostFromScore``,
    ``Common::SafeLog``); prediction ``exp(s)``. LightGBM refuses a negative label and labels
    summing to 0.
    """

    label_check = "range"
    _reg_sqrt_support = False

    def _check_label_values(self, y, name):
        bad = y < 0
        if bad.any():
            raise ValueError(
                f"{name} must be >= 0 for objective {self.name!r} (LightGBM: at least one target "
                f"label is negative), found " + _show_values(y[bad])
            )

    def _boost_from_score(self, stats):
        if stats[0] == 0:
            raise ValueError(
                f"the labels sum to 0: objective {self.name!r} needs some positive label "
                f"(LightGBM: sum of labels is zero)"
            )
        mean = stats[0] / stats[1]
        return [np.log(mean) if mean > 0 else -np.inf]

    def transform(self, raw_score):
        with np.errstate(over="ignore"):
            return np.exp(self._raw_1d(raw_score))


class Poisson(_LogLinkRegression):
    """Poisson regression (LightGBM ``objective="poisson"``, ``poisson_max_delta_step``)."""

    name = "poisson"
    _param_names = ("poisson_max_delta_step",)
    _kernel = staticmethod(gradients_poisson)


class Gamma(_LogLinkRegression):
    """Gamma regression with log link (LightGBM ``objective="gamma"``)."""

    name = "gamma"
    _kernel = staticmethod(gradients_gamma)


class Tweedie(_LogLinkRegression):
    """Tweedie regression (LightGBM ``objective="tweedie"``, ``tweedie_variance_power``)."""

    name = "tweedie"
    _param_names = ("tweedie_variance_power",)
    _kernel = staticmethod(gradients_tweedie)


class CrossEntropy(_OneOutputRegression):
    """Cross-entropy on probability labels in [0, 1] (LightGBM ``objective="cross_entropy"``,
    ``src/objective/xentropy_objective.hpp``).

    Init score: ``log(p / (1 - p))`` of the weighted mean label ``p`` clamped to
    ``[1e-15, 1 - 1e-15]``; prediction ``sigmoid(s)``.
    """

    name = "cross_entropy"
    label_check = "range"
    _reg_sqrt_support = None
    _kernel = staticmethod(gradients_cross_entropy)

    def _check_label_values(self, y, name):
        bad = (y < 0) | (y > 1)
        if bad.any():
            raise ValueError(
                f"{name} must be in [0, 1] for objective {self.name!r}, found "
                + _show_values(y[bad])
            )

    def _boost_from_score(self, stats):
        pavg = min(max(stats[0] / stats[1], K_EPSILON), 1.0 - K_EPSILON)
        return [np.log(pavg / (1.0 - pavg))]

    def transform(self, raw_score):
        with np.errstate(over="ignore"):
            return 1.0 / (1.0 + np.exp(-self._raw_1d(raw_score)))


class CrossEntropyLambda(CrossEntropy):
    """Cross-entropy, lambda parametrization (LightGBM ``objective="cross_entropy_lambda"``).

    Init score ``log(expm1(mean label))``; prediction ``log(1 + exp(s))``. Weights must be
    > 0 (LightGBM refuses a non-positive weight).
    """

    name = "cross_entropy_lambda"
    positive_weights = True
    _kernel = staticmethod(gradients_cross_entropy_lambda)

    def _boost_from_score(self, stats):
        havg = stats[0] / stats[1]
        with np.errstate(divide="ignore"):
            return [np.log(np.expm1(havg))]

    def transform(self, raw_score):
        with np.errstate(over="ignore"):
            return np.log1p(np.exp(self._raw_1d(raw_score)))


class MulticlassOVA(Objective):
    """One-vs-all multiclass (LightGBM ``objective="multiclassova"``, ``MulticlassOVA``).

    One binary logloss per class ``k`` (positive rows: ``int(y) == k``), with ``sigmoid``,
    ``is_unbalance`` and ``scale_pos_weight`` as :class:`BinaryLogloss`. Init score per class:
    the binary init score of its positives. Prediction: per class ``1 / (1 + exp(-sigmoid s_k))``
    (not normalized).
    """

    name = "multiclassova"
    label_check = "values"

    def __init__(self, num_class=2, boost_from_average=True, sigmoid=1.0, is_unbalance=False,
                 scale_pos_weight=1.0):
        if int(num_class) < 2:
            raise ValueError(
                f"num_class must be an integer >= 2 for multiclassova, got {num_class}")
        super().__init__(num_class, boost_from_average)
        self.sigmoid = float(sigmoid)
        self.is_unbalance = bool(is_unbalance)
        self.scale_pos_weight = float(scale_pos_weight)
        self.label_weights = ((1.0, float(scale_pos_weight)),) * self.num_class

    @classmethod
    def from_params(cls, params):
        return cls(params["num_class"], params["boost_from_average"], params["sigmoid"],
                   params["is_unbalance"], params["scale_pos_weight"])

    @property
    def num_tree_per_iteration(self):
        return self.num_class

    @property
    def lightgbm_objective_string(self):
        return f"multiclassova num_class:{self.num_class} sigmoid:{self.sigmoid:g}"

    @property
    def _sum_weight_index(self):
        return self.num_class

    _check_label_values = MulticlassSoftmax._check_label_values

    def label_stats(self, y, weight=None):
        """``[sum(w*[y==k]) for k] + [sum(w)] + [count(y==k) for k] + [n]``."""
        labels = np.asarray(y).astype(np.intp)
        k = self.num_class
        counts = np.bincount(labels, minlength=k)[:k].astype(np.float64)
        if weight is None:
            wsum, total = counts, float(labels.shape[0])
        else:
            weight = np.asarray(weight, dtype=np.float64)
            wsum = np.bincount(labels, weights=weight, minlength=k)[:k]
            total = float(np.sum(weight))
        return np.concatenate([wsum, [total], counts, [float(labels.shape[0])]])

    def with_label_stats(self, stats):
        k = self.num_class
        counts, n = stats[k + 1:2 * k + 1], stats[2 * k + 1]
        out = copy.copy(self)
        out.label_weights = tuple(
            _label_weights(counts[c], n - counts[c], self.is_unbalance, self.scale_pos_weight)
            for c in range(k))
        return out

    def _boost_from_score(self, stats):
        k = self.num_class
        pavg = np.clip(np.asarray(stats[:k]) / stats[k], K_EPSILON, 1.0 - K_EPSILON)
        return np.log(pavg / (1.0 - pavg)) / self.sigmoid

    def need_train_from_stats(self, stats):
        k = self.num_class
        counts, n = np.asarray(stats[k + 1:2 * k + 1]), stats[2 * k + 1]
        return (counts > 0) & (counts < n)

    def _gradients(self, y, raw_score, weight, grad_out, hess_out):
        n = y.shape[0]
        g = np.empty(n, dtype=G_H_DTYPE)
        h = np.empty(n, dtype=G_H_DTYPE)
        raw_t = np.ascontiguousarray(raw_score.reshape(n, self.num_class).T)
        for c in range(self.num_class):
            w_neg, w_pos = self.label_weights[c]
            gradients_sigmoid_logloss(y, raw_t[c], weight, c, self.sigmoid, w_neg, w_pos, g, h)
            grad_out.reshape(n, self.num_class)[:, c] = g
            hess_out.reshape(n, self.num_class)[:, c] = h

    def transform(self, raw_score):
        raw_score = np.asarray(raw_score, dtype=Y_DTYPE)
        if raw_score.ndim != 2 or raw_score.shape[1] != self.num_class:
            raise ValueError(
                f"raw_score must have shape (n_samples, {self.num_class}) for objective "
                f"'multiclassova', got {raw_score.shape}"
            )
        with np.errstate(over="ignore"):
            return 1.0 / (1.0 + np.exp(-self.sigmoid * raw_score))


_OBJECTIVES = {
    "regression": RegressionL2,
    "binary": BinaryLogloss,
    "multiclass": MulticlassSoftmax,
    "regression_l1": RegressionL1,
    "huber": Huber,
    "fair": Fair,
    "quantile": Quantile,
    "mape": MAPE,
    "poisson": Poisson,
    "gamma": Gamma,
    "tweedie": Tweedie,
    "cross_entropy": CrossEntropy,
    "cross_entropy_lambda": CrossEntropyLambda,
    "multiclassova": MulticlassOVA,
}


def get_objective(params):
    """Build the objective described by a params dict.

    Parameters
    ----------
    params : dict or None
        Parameters, resolved or not (they are passed through
        :func:`oocgbdt.params.resolve_params`); reads ``objective``, ``num_class``,
        ``boost_from_average`` and the objective's own parameters (``alpha``, ``fair_c``,
        ``poisson_max_delta_step``, ``tweedie_variance_power``, ``sigmoid``, ``is_unbalance``,
        ``scale_pos_weight``).

    Returns
    -------
    Objective
        The class of ``_OBJECTIVES[params["objective"]]``.

    Raises
    ------
    TypeError, ValueError
        As :func:`oocgbdt.params.resolve_params`.
    """
    params = resolve_params(params)
    if params["objective"] == "custom":
        # A model trained with a callable objective predicts raw scores; training needs the
        # callable itself (train(params={"objective": <callable>})).
        return CustomObjective(_callable_missing, params["num_class"])
    return _OBJECTIVES[params["objective"]].from_params(params)


def _callable_missing(y_true, raw_score):
    raise ValueError("objective 'custom' (or 'none') needs the callable itself: pass "
                     "objective=<callable> to train or to the estimator")


class LambdarankNDCG(Objective):
    """LambdaRank optimizing NDCG (LightGBM ``objective="lambdarank"``, ``LambdarankNDCG`` in
    ``src/objective/rank_objective.hpp``).

    Rows come in queries (``group``: query sizes); a query's rows always sit in one partition, so
    each partition computes its queries' gradients alone (:meth:`rank_gradients`). Labels are
    integer relevance grades in ``[0, len(label_gain))``. Init score 0 (LightGBM has no
    ``BoostFromScore`` for ranking); prediction: the raw score.

    Parameters
    ----------
    label_gain : list of float or None
        Gain per label; None: ``2**i - 1``.
    sigmoid : float > 0
    lambdarank_norm : bool
    lambdarank_truncation_level : int >= 1
    lambdarank_position_bias_regularization : float >= 0
        With the rows' positions (``train(position=...)``): L2 regularization of the position
        bias factors (see :meth:`update_position_biases`).

    Notes
    -----
    Unbiased LambdaRank (LightGBM 4.x, ``RankingObjective::GetGradientsWithSampledQueries`` and
    ``LambdarankNDCG::UpdatePositionBiasFactors``): when the training rows have positions, each
    round's gradients are those of ``score + bias[position]`` (the bias factors, float32, start
    at 0), and after them every position's factor takes one Newton step
    (:meth:`update_position_biases`). The factors only shape training; the model's predictions
    do not include them.
    """

    name = "lambdarank"
    label_check = "values"
    needs_queries = True
    row_wise = False
    #: The current position bias factors (a tuple of float32 values, one per position id), or
    #: None: no positions (:meth:`with_position_biases`).
    position_biases = None

    def __init__(self, num_class=1, boost_from_average=True, label_gain=None, sigmoid=1.0,
                 lambdarank_norm=True, lambdarank_truncation_level=30,
                 lambdarank_position_bias_regularization=0.0):
        super().__init__(num_class, boost_from_average)
        self.label_gain = None if label_gain is None else tuple(float(g) for g in label_gain)
        self.sigmoid = float(sigmoid)
        self.lambdarank_norm = bool(lambdarank_norm)
        self.lambdarank_truncation_level = int(lambdarank_truncation_level)
        self.lambdarank_position_bias_regularization = float(
            lambdarank_position_bias_regularization)

    @classmethod
    def from_params(cls, params):
        return cls(params["num_class"], params["boost_from_average"], params["label_gain"],
                   params["sigmoid"], params["lambdarank_norm"],
                   params["lambdarank_truncation_level"],
                   params["lambdarank_position_bias_regularization"])

    def with_position_biases(self, biases):
        """This objective with the position bias factors ``biases`` (one per position id, as
        float32): :meth:`rank_gradients` then adds ``biases[position]`` to each row's score."""
        out = copy.copy(self)
        out.position_biases = tuple(float(b) for b in np.asarray(biases, dtype=np.float32))
        return out

    def update_position_biases(self, biases, sums, learning_rate):
        """One round's update of the position bias factors (LightGBM
        ``LambdarankNDCG::UpdatePositionBiasFactors``, ``src/objective/rank_objective.hpp``).

        Parameters
        ----------
        biases : ndarray of shape (n_positions,), float32
            The factors the round's gradients were computed with.
        sums : ndarray of shape (3, n_positions), float64
            Over every training row, per position id: the sum of the gradients, the sum of the
            hessians (both after the sample weights) and the row count
            (:func:`oocgbdt.core.partition.partition_position_sums`, added over partitions).
        learning_rate : float

        Returns
        -------
        ndarray of shape (n_positions,), float32
            ``b + learning_rate * d1 / (|d2| + 0.001)`` with ``d1 = -sum(g) - b * reg * count``
            and ``d2 = -sum(h) - reg * count`` (``reg``:
            ``lambdarank_position_bias_regularization``), computed in float64 and stored as
            float32, as LightGBM.
        """
        biases = np.asarray(biases, dtype=np.float32).astype(np.float64)
        sums = np.asarray(sums, dtype=np.float64)
        reg = self.lambdarank_position_bias_regularization
        first = -sums[0] - biases * reg * sums[2]
        second = -sums[1] - reg * sums[2]
        return (biases + learning_rate * first / (np.abs(second) + 0.001)).astype(np.float32)

    @property
    def gains(self):
        from oocgbdt.kernels.ranking import default_label_gain
        return (default_label_gain() if self.label_gain is None
                else np.asarray(self.label_gain, dtype=np.float64))

    def _check_label_values(self, y, name):
        n_gains = len(self.gains)
        bad = (y < 0) | (y >= n_gains) | (y != np.floor(y))
        if bad.any():
            raise ValueError(
                f"{name} must contain integer relevance labels in [0, {n_gains}) for objective "
                f"{self.name!r} (one label_gain per label), found " + _show_values(y[bad])
            )

    def label_stats(self, y, weight=None):
        return np.array([0.0, float(np.asarray(y).shape[0])])

    def _boost_from_score(self, stats):
        return [0.0]

    def _gradients(self, y, raw_score, weight, grad_out, hess_out):
        raise ValueError("objective 'lambdarank' needs query groups: pass group= (query sizes)")

    def rank_gradients(self, y, raw_score, weight, query_offsets, grad_out, hess_out,
                       first_query=0, positions=None):
        """Gradients of one partition's whole queries (``query_offsets``: int64, first 0, last
        the number of rows; ``first_query``: the global index of its first query;
        ``positions``: the rows' position ids, int32, used with :attr:`position_biases`)."""
        from oocgbdt.kernels.ranking import discounts, gradients_lambdarank, sigmoid_table

        n = len(y)
        table, lo, hi, factor = sigmoid_table(self.sigmoid)
        y = np.asarray(y)
        raw_score = np.ascontiguousarray(raw_score, dtype=Y_DTYPE).reshape(n)
        if positions is not None and self.position_biases is not None:
            # float64 score + float32 factor, as LightGBM's score_adjusted
            biases = np.asarray(self.position_biases, dtype=np.float32)
            raw_score = raw_score + biases[np.asarray(positions)].astype(np.float64)
        gradients_lambdarank(y if y.dtype.kind == "f" else y.astype(np.float64),
                             raw_score, weight,
                             np.asarray(query_offsets, dtype=np.int64), self.gains, discounts(),
                             table, lo, hi, factor, self.sigmoid, self.lambdarank_norm,
                             self.lambdarank_truncation_level, grad_out.reshape(n),
                             hess_out.reshape(n))

    def transform(self, raw_score):
        return self._raw_1d(raw_score).copy()


class RankXENDCG(LambdarankNDCG):
    """XE-NDCG ranking (LightGBM ``objective="rank_xendcg"``, ``RankXENDCG``;
    arXiv:1911.09798). Each query draws its own uniforms per round from LightGBM's generator
    seeded ``objective_seed + query index``; the draws are jumped ahead from the seed and the
    round, so they are the same whichever partition holds the query. Labels: integers >= 0
    (``2**label`` is the gain); init score 0."""

    name = "rank_xendcg"

    def __init__(self, num_class=1, boost_from_average=True, objective_seed=5, iteration=0):
        super().__init__(num_class, boost_from_average)
        self.objective_seed = int(objective_seed)
        self.iteration = int(iteration)

    @classmethod
    def from_params(cls, params):
        return cls(params["num_class"], params["boost_from_average"], params["objective_seed"])

    def at_round(self, iteration):
        out = copy.copy(self)
        out.iteration = int(iteration)
        return out

    def rank_gradients(self, y, raw_score, weight, query_offsets, grad_out, hess_out,
                       first_query=0):
        from oocgbdt.kernels.ranking import gradients_xendcg

        n = len(y)
        y = np.asarray(y)
        gradients_xendcg(y if y.dtype.kind == "f" else y.astype(np.float64),
                         np.ascontiguousarray(raw_score, dtype=Y_DTYPE).reshape(n), weight,
                         np.asarray(query_offsets, dtype=np.int64), int(first_query),
                         self.objective_seed, self.iteration, grad_out.reshape(n),
                         hess_out.reshape(n))


_OBJECTIVES["lambdarank"] = LambdarankNDCG
_OBJECTIVES["rank_xendcg"] = RankXENDCG
__all__ += ["LambdarankNDCG", "RankXENDCG"]


class CustomObjective(Objective):
    """A callable objective, LightGBM's scikit-learn signature:
    ``fobj(y_true, raw_score) -> (grad, hess)``, or ``fobj(y_true, raw_score, weight)``, or, for
    ranking, ``fobj(y_true, raw_score, weight, group)`` (``group``: the partition's query sizes).

    What runs where: the callable runs inside every partition's gradient task, on the worker
    holding the partition (in this process without a cluster), once per round, on that
    partition's rows only (NumPy arrays: ``y_true`` float32 of shape (n,), ``raw_score``
    float64 of shape (n,) or (n, num_class)); nothing is gathered. It must therefore be
    picklable (cloudpickle: lambdas and closures are) and may not need other partitions' rows.
    ``weight`` is the partition's sample weights or None: as in LightGBM, the callable applies
    them itself. Init score 0 and no output transform (raw scores), as LightGBM with a custom
    objective; ``num_class`` outputs per round.

    Raises
    ------
    ValueError
        From the gradient task, when the callable returns arrays of the wrong shape or NaN or
        infinite values (naming which).
    """

    name = "custom"
    row_wise = False

    def __init__(self, fobj, num_class=1):
        super().__init__(num_class, boost_from_average=False)
        if not callable(fobj):
            raise ValueError(f"objective='custom' needs a callable objective, got {fobj!r}")
        self.fobj = fobj
        try:
            import inspect
            n_args = len(inspect.signature(fobj).parameters)
        except (TypeError, ValueError):
            n_args = 2
        if n_args not in (2, 3, 4):
            raise ValueError(f"a callable objective takes (y_true, raw_score), (y_true, "
                             f"raw_score, weight) or (y_true, raw_score, weight, group); "
                             f"{getattr(fobj, '__name__', fobj)!r} takes {n_args} arguments")
        self.n_args = n_args

    @property
    def num_tree_per_iteration(self):
        return self.num_class

    @property
    def default_metric(self):
        return None

    @property
    def _sum_weight_index(self):
        return 1

    def label_stats(self, y, weight=None):
        return np.array([0.0, float(np.asarray(y).shape[0])])

    def _boost_from_score(self, stats):
        return np.zeros(self.num_class)

    def _call(self, y, raw, weight, group):
        args = (np.asarray(y), raw)
        if self.n_args >= 3:
            args += (weight,)
        if self.n_args == 4:
            args += (group,)
        out = self.fobj(*args)
        if not isinstance(out, tuple) or len(out) != 2:
            raise ValueError(f"the callable objective must return (grad, hess), got "
                             f"{type(out).__name__}")
        return out

    def _store(self, grad, hess, grad_out, hess_out):
        for what, a, out in (("grad", grad, grad_out), ("hess", hess, hess_out)):
            a = np.asarray(a, dtype=np.float64)
            expected = out.shape if out.ndim == 2 and out.shape[1] > 1 else (out.shape[0],)
            if a.shape != expected and not (a.ndim == 2 and a.shape == out.shape):
                raise ValueError(
                    f"the callable objective returned {what} of shape {a.shape}; expected "
                    f"{expected} (one value per row"
                    f"{' and class' if len(expected) == 2 else ''})")
            bad = ~np.isfinite(a)
            if bad.any():
                raise ValueError(f"the callable objective returned {int(bad.sum())} NaN or "
                                 f"infinite {what} value(s)")
            out.reshape(-1)[:] = a.reshape(out.shape).reshape(-1)

    def _gradients(self, y, raw_score, weight, grad_out, hess_out):
        raw = raw_score[:, 0] if raw_score.ndim == 2 and self.num_class == 1 else raw_score
        self._store(*self._call(y, raw, weight, None), grad_out, hess_out)

    def rank_gradients(self, y, raw_score, weight, query_offsets, grad_out, hess_out,
                       first_query=0):
        raw = raw_score[:, 0] if raw_score.ndim == 2 and self.num_class == 1 else raw_score
        self._store(*self._call(y, raw, weight, np.diff(query_offsets)), grad_out, hess_out)

    def transform(self, raw_score):
        raw_score = np.asarray(raw_score, dtype=Y_DTYPE)
        return raw_score[:, 0].copy() if raw_score.ndim == 2 and raw_score.shape[1] == 1 \
            else raw_score.copy()


_OBJECTIVES["custom"] = CustomObjective
__all__.append("CustomObjective")
