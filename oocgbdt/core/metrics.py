"""This module contains the evaluation metrics, written as mergeable statistics.

Metrics sit at the end of each boosting iteration, on eval sets (and early stopping). A dataset
split in chunks is evaluated as a tree reduction: each chunk gives small partial statistics
(:meth:`Metric.partial`), any two partials merge into one (:meth:`Metric.merge`, associative
and commutative), and the merged statistics of the whole set give the value
(:meth:`Metric.finalize`). The value does not depend on the chunking or on the merge order
(up to float rounding of sums). Statistics are NumPy arrays or tuples of arrays: picklable and
cheap to send between Dask workers.

Definitions follow LightGBM (``src/metric/regression_metric.hpp``,
``src/metric/binary_metric.hpp``, ``src/metric/multiclass_metric.hpp``): every value is a
weighted mean ``sum(w * loss) / sum(w)`` computed on the objective's transformed output
(``ConvertOutput``), except AUC, which uses the raw score (a monotone transform of the
probability, so the ranking is the same).
"""
import numpy as np

from oocgbdt._dtypes import K_EPSILON, Y_DTYPE
from oocgbdt.params import DEFAULT_METRIC, METRIC_OBJECTIVES, METRICS, normalize_metric

__all__ = [
    "Metric",
    "L2Metric",
    "RMSEMetric",
    "BinaryLoglossMetric",
    "AUCMetric",
    "MultiLoglossMetric",
    "MultiErrorMetric",
    "get_metrics",
    "METRIC_CLASSES",
]

def _prepare(y, raw_score, weight):
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be a 1-D array of shape (n_samples,), got shape {y.shape}")
    raw_score = np.asarray(raw_score, dtype=Y_DTYPE)
    if raw_score.shape[0] != y.shape[0] or raw_score.ndim not in (1, 2):
        raise ValueError(
            f"raw_score must have shape ({y.shape[0]},) or ({y.shape[0]}, n_classes), "
            f"got {raw_score.shape}"
        )
    if weight is not None:
        weight = np.asarray(weight)
        if weight.shape != y.shape:
            raise ValueError(f"weight must have shape {y.shape}, got {weight.shape}")
    return y, raw_score, weight


def _sigmoid(raw_score):
    raw_score = raw_score[:, 0] if raw_score.ndim == 2 else raw_score
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-raw_score))


def _softmax(raw_score):
    if raw_score.ndim != 2 or raw_score.shape[1] < 2:
        raise ValueError(
            f"raw_score must have shape (n_samples, n_classes) with n_classes >= 2 for a "
            f"multiclass metric, got {raw_score.shape}"
        )
    e = np.exp(raw_score - raw_score.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _identity(raw_score):
    return raw_score[:, 0] if raw_score.ndim == 2 and raw_score.shape[1] == 1 else raw_score


class Metric:
    """Base class of the metrics; use :func:`get_metrics` to build them.

    Attributes
    ----------
    name : str
        Canonical metric name (as in LightGBM's eval output).
    higher_is_better : bool
        Whether larger values are better (for early stopping).

    Notes
    -----
    Metric objects are stateless and picklable. ``metric(y, raw_score, weight, objective)``
    computes the value in one piece.
    """

    name = None
    higher_is_better = False

    def partial(self, y, raw_score, weight=None, objective=None):
        """Partial statistics of one chunk.

        Parameters
        ----------
        y : ndarray of shape (n_samples,)
            Labels of the chunk.
        raw_score : ndarray of shape (n_samples,) or (n_samples, n_columns), dtype=float64
            Raw scores of the chunk (one column per class for multiclass).
        weight : ndarray of shape (n_samples,) or None
            Sample weights; None means 1.
        objective : Objective or None
            Its ``transform`` maps raw scores to the values the loss is computed on (LightGBM's
            ``ConvertOutput``). None uses the metric's natural transform (identity for l2 /
            rmse, sigmoid for binary_logloss, softmax for multi_*).

        Returns
        -------
        stats
            Small picklable statistics, to be combined with :meth:`merge`.
        """
        raise NotImplementedError

    def merge(self, a, b):
        """Merge the statistics of two disjoint sets of rows (associative, commutative)."""
        raise NotImplementedError

    def finalize(self, stats):
        """The metric value (float) from the merged statistics of the whole set."""
        raise NotImplementedError

    def __call__(self, y, raw_score, weight=None, objective=None):
        return self.finalize(self.partial(y, raw_score, weight, objective))

    def __repr__(self):
        return f"{type(self).__name__}()"

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self))


class _WeightedMeanLoss(Metric):
    """A weighted mean of a pointwise loss: stats = ``array([sum(w * loss), sum(w)])``.

    ``finalize`` returns NaN when the total weight is 0.
    """

    _natural_transform = staticmethod(_identity)

    def _loss(self, y, pred):  # pragma: no cover - abstract
        raise NotImplementedError

    def partial(self, y, raw_score, weight=None, objective=None):
        y, raw_score, weight = _prepare(y, raw_score, weight)
        if objective is not None:
            pred = objective.transform(raw_score)
        else:
            pred = self._natural_transform(raw_score)
        loss = self._loss(y, pred)
        if weight is None:
            return np.array([np.sum(loss), float(y.shape[0])])
        weight = np.asarray(weight, dtype=np.float64)
        return np.array([np.dot(loss, weight), np.sum(weight)])

    def merge(self, a, b):
        return np.asarray(a) + np.asarray(b)

    def _mean(self, stats):
        sum_loss, sum_weight = stats
        return float(sum_loss / sum_weight) if sum_weight > 0 else float("nan")

    def finalize(self, stats):
        return self._mean(stats)


class L2Metric(_WeightedMeanLoss):
    """Weighted mean squared error, LightGBM's ``l2`` (``L2Metric``): ``(pred - y)**2``."""

    name = "l2"

    def _loss(self, y, pred):
        if pred.ndim != 1:
            raise ValueError(f"metric {self.name!r} needs one score per row, got {pred.shape}")
        return (pred - y) ** 2


class RMSEMetric(L2Metric):
    """Root of the weighted mean squared error, LightGBM's ``rmse`` (``RMSEMetric``)."""

    name = "rmse"

    def finalize(self, stats):
        return float(np.sqrt(self._mean(stats)))


class BinaryLoglossMetric(_WeightedMeanLoss):
    """Weighted binary logloss, LightGBM's ``binary_logloss`` (``BinaryLoglossMetric``).

    Loss ``-log(p)`` for ``y > 0`` and ``-log(1 - p)`` otherwise, with ``p = P(class 1)``; a
    probability (of the true class) <= 1e-15 gives ``-log(1e-15)``, as LightGBM.
    """

    name = "binary_logloss"
    _natural_transform = staticmethod(_sigmoid)

    def _loss(self, y, pred):
        p_true = np.where(y > 0, pred, 1.0 - pred)
        return -np.log(np.maximum(p_true, K_EPSILON))


class MultiLoglossMetric(_WeightedMeanLoss):
    """Weighted multiclass logloss, LightGBM's ``multi_logloss`` (``MultiSoftmaxLoglossMetric``).

    Loss ``-log(p[y])`` with ``p`` the softmax of the row; ``p[y] <= 1e-15`` gives
    ``-log(1e-15)``.
    """

    name = "multi_logloss"
    _natural_transform = staticmethod(_softmax)

    def _loss(self, y, pred):
        labels = np.asarray(y).astype(np.intp)
        p_true = pred[np.arange(labels.shape[0]), labels]
        return -np.log(np.maximum(p_true, K_EPSILON))


class MultiErrorMetric(_WeightedMeanLoss):
    """Weighted multiclass error rate, LightGBM's ``multi_error`` (``MultiErrorMetric``, top_k=1).

    A row counts as an error when any other class has a probability >= the true class's, so a
    tie counts as an error (LightGBM's rule; ``argmax`` would pick the first class instead).
    """

    name = "multi_error"
    _natural_transform = staticmethod(_softmax)

    def _loss(self, y, pred):
        labels = np.asarray(y).astype(np.intp)
        p_true = pred[np.arange(labels.shape[0]), labels]
        n_at_least = np.count_nonzero(pred >= p_true[:, None], axis=1)  # includes the true class
        return (n_at_least > 1).astype(np.float64)


class AUCMetric(Metric):
    """Exact weighted area under the ROC curve, LightGBM's ``auc`` (``AUCMetric``).

    Rows with ``y > 0`` are positives. Tied scores count one half, as in
    :func:`sklearn.metrics.roc_auc_score`. The statistics are exact: the sorted unique raw
    scores of the chunk with the summed weights of the positive and negative rows at each score,
    so their size grows with the number of distinct scores (at most the number of rows).
    When one class is absent (total positive or negative weight 0) the value is 1.0, as in
    LightGBM (scikit-learn raises instead).
    """

    name = "auc"
    higher_is_better = True

    def partial(self, y, raw_score, weight=None, objective=None):
        """Stats: ``(scores, pos_weight, neg_weight)``, float64 arrays, scores unique ascending."""
        y, raw_score, weight = _prepare(y, raw_score, weight)
        if raw_score.ndim == 2:
            if raw_score.shape[1] != 1:
                raise ValueError(f"metric 'auc' needs one score per row, got {raw_score.shape}")
            raw_score = raw_score[:, 0]
        weight = (
            np.ones(y.shape[0], dtype=np.float64) if weight is None
            else np.asarray(weight, dtype=np.float64)
        )
        positive = y > 0
        return self._group(raw_score, weight * positive, weight * ~positive)

    @staticmethod
    def _group(scores, pos, neg):
        unique, inverse = np.unique(scores, return_inverse=True)
        inverse = inverse.reshape(-1)
        return (
            unique,
            np.bincount(inverse, weights=pos, minlength=unique.size),
            np.bincount(inverse, weights=neg, minlength=unique.size),
        )

    def merge(self, a, b):
        return self._group(
            np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]), np.concatenate([a[2], b[2]])
        )

    def finalize(self, stats):
        _, pos, neg = stats
        # From the highest score down: each negative counts the positive weight above it plus
        # half the positive weight tied with it (AUCMetric::Eval).
        pos, neg = pos[::-1], neg[::-1]
        sum_pos, sum_neg = pos.sum(), neg.sum()
        if not (sum_pos > 0 and sum_neg > 0):
            return 1.0
        pos_above = np.cumsum(pos) - pos
        area = np.dot(neg, pos_above + 0.5 * pos)
        return float(area / (sum_pos * sum_neg))


#: Canonical metric name -> metric class.
METRIC_CLASSES = {
    "l2": L2Metric,
    "rmse": RMSEMetric,
    "binary_logloss": BinaryLoglossMetric,
    "auc": AUCMetric,
    "multi_logloss": MultiLoglossMetric,
    "multi_error": MultiErrorMetric,
}
assert set(METRIC_CLASSES) == set(METRICS)


def get_metrics(names, objective):
    """Build the metrics named by a ``metric`` parameter value.

    Parameters
    ----------
    names : None, str or list of str
        None means the objective's default metric. Otherwise canonical names or aliases, or a
        comma-separated str; ``"None"`` / ``""`` mean no metric (see
        :func:`oocgbdt.params.normalize_metric`).
    objective : Objective
        The training objective (its ``name`` decides the default and which metrics apply).

    Returns
    -------
    list of Metric
        In the given order, duplicates removed.

    Raises
    ------
    ValueError
        If a name is unknown or the metric cannot be computed for the objective.
    """
    names = normalize_metric(names)
    if names is None:
        names = [DEFAULT_METRIC[objective.name]]
    metrics = []
    for name in names:
        if name not in METRIC_CLASSES:
            raise ValueError(
                f"Unknown metric {name!r}; expected one of "
                f"{', '.join(repr(m) for m in METRICS)} or an alias"
            )
        allowed = METRIC_OBJECTIVES[name]
        if objective.name not in allowed:
            raise ValueError(
                f"metric {name!r} cannot be computed for objective {objective.name!r}; it "
                f"needs objective {' or '.join(repr(o) for o in allowed)}"
            )
        metrics.append(METRIC_CLASSES[name]())
    return metrics
