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
    "AucMuMetric",
    "MultiLoglossMetric",
    "MultiErrorMetric",
    "MultiErrorTopKMetric",
    "L1Metric",
    "HuberMetric",
    "FairMetric",
    "QuantileMetric",
    "MAPEMetric",
    "PoissonMetric",
    "GammaMetric",
    "GammaDevianceMetric",
    "TweedieMetric",
    "BinaryErrorMetric",
    "AveragePrecisionMetric",
    "CrossEntropyMetric",
    "CrossEntropyLambdaMetric",
    "KullbackLeiblerMetric",
    "NDCGMetric",
    "MAPMetric",
    "CallableMetric",
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
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self):
        return hash((type(self), tuple(sorted(self.__dict__.items()))))

    #: Parameters the metric reads (``resolve_params`` names), set as attributes.
    _param_names = ()

    @classmethod
    def from_params(cls, params):
        """Build with the parameters it reads (``alpha``, ``fair_c``, ...) from ``params``."""
        m = cls()
        for name in cls._param_names:
            setattr(m, name, params[name])
        return m


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


class AucMuMetric(Metric):
    """LightGBM's ``auc_mu`` (``AucMuMetric`` in ``src/metric/multiclass_metric.hpp``), the
    multiclass AUC-mu of Kleiman and Page (ICML 2019).

    For each pair of classes ``i < j``, with ``W`` the ``num_class x num_class`` weight matrix
    (``auc_mu_weights``, row-major; default all ones with a zero diagonal) and
    ``v = W[i] - W[j]``, every row of class ``i`` or ``j`` gets the distance
    ``(v[i] - v[j]) * (v . raw_score)``. The pair's statistic is the weighted share of
    (class-``i`` row, class-``j`` row) pairs where the class-``i`` row is farther, a tie
    counting one half, divided by the two classes' total weights (their row counts without
    sample weights); the value is the mean over the ``num_class (num_class - 1) / 2`` pairs.
    A class without rows gives NaN, as in LightGBM. It is computed on the raw scores.

    The statistics are exact and mergeable: the distinct raw-score rows of the chunk with the
    summed weight of each class's rows at each, so their size grows with the number of distinct
    score rows (at most the number of rows), as for :class:`AUCMetric`. Ties are equal
    distances; LightGBM also counts as ties distances closer than ``kEpsilon`` (1e-15), which
    only distinct scores 1e-15 apart would show.
    """

    name = "auc_mu"
    higher_is_better = True
    _param_names = ("auc_mu_weights",)
    auc_mu_weights = None

    def __init__(self, auc_mu_weights=None):
        self.auc_mu_weights = (None if auc_mu_weights is None
                               else tuple(float(w) for w in auc_mu_weights))

    @classmethod
    def from_params(cls, params):
        return cls(params.get("auc_mu_weights"))

    def partial(self, y, raw_score, weight=None, objective=None):
        """Stats: ``(scores, class_weight)``, float64 arrays of shape ``(n_distinct, K)``: the
        distinct raw-score rows and, per row, the summed weight of the rows of each class."""
        y, raw_score, weight = _prepare(y, raw_score, weight)
        if raw_score.ndim != 2 or raw_score.shape[1] < 2:
            raise ValueError(f"metric 'auc_mu' needs one score per class (n_samples, "
                             f"num_class >= 2), got {raw_score.shape}")
        k = raw_score.shape[1]
        labels = np.asarray(y).astype(np.intp)
        if labels.size and (labels.min() < 0 or labels.max() >= k):
            raise ValueError(f"metric 'auc_mu' needs labels in 0..{k - 1}, found "
                             f"{int(labels.min())}..{int(labels.max())}")
        w = (np.ones(y.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64))
        class_weight = np.zeros((y.shape[0], k))
        class_weight[np.arange(y.shape[0]), labels] = w
        return self._group(raw_score, class_weight)

    @staticmethod
    def _group(scores, class_weight):
        unique, inverse = np.unique(scores, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        summed = np.zeros((unique.shape[0], scores.shape[1]))
        np.add.at(summed, inverse, class_weight)
        return unique, summed

    def merge(self, a, b):
        return self._group(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))

    def weight_matrix(self, num_class):
        """The ``(num_class, num_class)`` float64 class weight matrix (``GetAucMuWeights`` in
        ``src/io/config.cpp``): ones off the diagonal by default; the diagonal is always 0.

        Raises
        ------
        ValueError
            ``auc_mu_weights`` does not have ``num_class**2`` entries.
        """
        if self.auc_mu_weights is None:
            return np.ones((num_class, num_class)) - np.eye(num_class)
        if len(self.auc_mu_weights) != num_class * num_class:
            raise ValueError(f"auc_mu_weights must have num_class**2 = {num_class * num_class} "
                             f"entries (a flattened row-major matrix), found "
                             f"{len(self.auc_mu_weights)}")
        m = np.array(self.auc_mu_weights, dtype=np.float64).reshape(num_class, num_class)
        np.fill_diagonal(m, 0.0)
        return m

    def finalize(self, stats):
        scores, class_weight = stats
        k = scores.shape[1]
        W = self.weight_matrix(k)
        totals = class_weight.sum(axis=0)
        ans = 0.0
        for i in range(k):
            for j in range(i + 1, k):
                v = W[i] - W[j]
                rows = (class_weight[:, i] > 0) | (class_weight[:, j] > 0)
                s = scores[rows]
                dot = np.zeros(s.shape[0])
                for m in range(k):  # LightGBM's summation order
                    dot += v[m] * s[:, m]
                # S[i][j]: class-j weight below each class-i row, ties counting one half
                _, pos_w, neg_w = AUCMetric._group((v[i] - v[j]) * dot, class_weight[rows, i],
                                                   class_weight[rows, j])
                below = np.cumsum(neg_w) - neg_w
                s_ij = float(np.dot(pos_w, below + 0.5 * neg_w))
                with np.errstate(divide="ignore", invalid="ignore"):
                    ans += np.float64(s_ij) / totals[i] / totals[j]
        return float(2.0 * ans / k / (k - 1))


class L1Metric(L2Metric):
    """Weighted mean absolute error, LightGBM's ``l1``: ``|pred - y|``."""

    name = "l1"

    def _loss(self, y, pred):
        if pred.ndim != 1:
            raise ValueError(f"metric {self.name!r} needs one score per row, got {pred.shape}")
        return np.abs(pred - y)


class HuberMetric(L2Metric):
    """LightGBM's ``huber``: ``d**2 / 2`` if ``|d| <= alpha`` else ``alpha (|d| - alpha / 2)``."""

    name = "huber"
    _param_names = ("alpha",)
    alpha = 0.9

    def _loss(self, y, pred):
        d = pred - y
        return np.where(np.abs(d) <= self.alpha, 0.5 * d * d,
                        self.alpha * (np.abs(d) - 0.5 * self.alpha))


class FairMetric(L2Metric):
    """LightGBM's ``fair``: ``c x - c**2 log(1 + x / c)``, ``x = |pred - y|``."""

    name = "fair"
    _param_names = ("fair_c",)
    fair_c = 1.0

    def _loss(self, y, pred):
        x = np.abs(pred - y)
        c = self.fair_c
        return c * x - c * c * np.log1p(x / c)


class QuantileMetric(L2Metric):
    """LightGBM's ``quantile`` (pinball loss at ``alpha``) on ``d = y - pred``:
    ``(alpha - 1) d`` if ``d < 0`` else ``alpha d``."""

    name = "quantile"
    _param_names = ("alpha",)
    alpha = 0.9

    def _loss(self, y, pred):
        d = y - pred
        return np.where(d < 0, (self.alpha - 1.0) * d, self.alpha * d)


class MAPEMetric(L2Metric):
    """LightGBM's ``mape``: ``|y - pred| / max(1, |y|)``."""

    name = "mape"

    def _loss(self, y, pred):
        if pred.ndim != 1:
            raise ValueError(f"metric {self.name!r} needs one score per row, got {pred.shape}")
        y = np.asarray(y)
        return np.abs(y - pred) / np.maximum(1.0, np.abs(y.astype(np.float32)))


_EPS_SCORE = float(np.float32(1e-10))  # LightGBM's ``1e-10f``


class PoissonMetric(L2Metric):
    """LightGBM's ``poisson`` negative log-likelihood ``s - y log(s)``, ``s = max(pred, 1e-10)``."""

    name = "poisson"

    def _loss(self, y, pred):
        if pred.ndim != 1:
            raise ValueError(f"metric {self.name!r} needs one score per row, got {pred.shape}")
        s = np.maximum(pred, _EPS_SCORE)
        return s - y * np.log(s)


def _safe_log(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), -np.inf)


class GammaMetric(L2Metric):
    """LightGBM's ``gamma`` negative log-likelihood (``psi = 1``): ``y / s + log(s)`` for
    ``y > 0`` (``GammaMetric::LossOnPoint``)."""

    name = "gamma"

    def _loss(self, y, pred):
        if pred.ndim != 1:
            raise ValueError(f"metric {self.name!r} needs one score per row, got {pred.shape}")
        y = np.asarray(y, dtype=np.float64)
        with np.errstate(divide="ignore"):
            theta = -1.0 / pred
        b = -_safe_log(-theta)
        # c = log(y / psi) - log(y): LightGBM takes the second log of the float32 label in
        # float32 (``Common::SafeLog<label_t>``), so c is a rounding residue, not 0.
        y32 = y.astype(np.float32)
        with np.errstate(invalid="ignore", divide="ignore"):  # y <= 0: NaN (LightGBM refuses)
            log32 = np.where(y32 > 0, np.log(np.where(y32 > 0, y32, 1)), -np.inf)
            c = _safe_log(y) - log32.astype(np.float64)
            return -((y * theta - b) + c)


class GammaDevianceMetric(L2Metric):
    """LightGBM's ``gamma_deviance``: ``2 * sum(w (r - log r - 1))``, ``r = y / (pred + 1e-9)``;
    a weighted sum, not a mean (``GammaDevianceMetric::AverageLoss``)."""

    name = "gamma_deviance"

    def _loss(self, y, pred):
        if pred.ndim != 1:
            raise ValueError(f"metric {self.name!r} needs one score per row, got {pred.shape}")
        r = np.asarray(y, dtype=np.float64) / (pred + 1.0e-9)
        return r - _safe_log(r) - 1.0

    def finalize(self, stats):
        return float(stats[0] * 2.0)


class TweedieMetric(L2Metric):
    """LightGBM's ``tweedie`` negative log-likelihood with power ``rho``, ``s = max(pred, 1e-10)``:
    ``-y s**(1 - rho) / (1 - rho) + s**(2 - rho) / (2 - rho)``."""

    name = "tweedie"
    _param_names = ("tweedie_variance_power",)
    tweedie_variance_power = 1.5

    def _loss(self, y, pred):
        if pred.ndim != 1:
            raise ValueError(f"metric {self.name!r} needs one score per row, got {pred.shape}")
        rho = self.tweedie_variance_power
        s = np.maximum(pred, _EPS_SCORE)
        a = y * np.exp((1.0 - rho) * np.log(s)) / (1.0 - rho)
        b = np.exp((2.0 - rho) * np.log(s)) / (2.0 - rho)
        return -a + b


class BinaryErrorMetric(_WeightedMeanLoss):
    """LightGBM's ``binary_error``: a row is wrong when ``p <= 0.5`` and ``y > 0``, or
    ``p > 0.5`` and ``y <= 0``."""

    name = "binary_error"
    _natural_transform = staticmethod(_sigmoid)

    def _loss(self, y, pred):
        return np.where(pred <= 0.5, y > 0, y <= 0).astype(np.float64)


_LOG_EPS = 1.0e-12


def _xent(y, p):
    """LightGBM's ``XentLoss`` (probabilities clipped at 1e-12 inside the logs)."""
    y32 = np.asarray(y).astype(np.float32)
    y = y32.astype(np.float64)
    one_minus_y = (np.float32(1.0) - y32).astype(np.float64)  # float32 in LightGBM (label_t)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = y * np.log(np.where(p > _LOG_EPS, p, _LOG_EPS))
        b = one_minus_y * np.log(np.where(1.0 - p > _LOG_EPS, 1.0 - p, _LOG_EPS))
    return -(a + b)


class CrossEntropyMetric(_WeightedMeanLoss):
    """LightGBM's ``cross_entropy`` (``xentropy_metric.hpp``, ``XentLoss``) on the objective's
    output, labels in [0, 1]."""

    name = "cross_entropy"
    _natural_transform = staticmethod(_sigmoid)

    def _loss(self, y, pred):
        return _xent(y, pred)


class CrossEntropyLambdaMetric(Metric):
    """LightGBM's ``cross_entropy_lambda``: ``XentLoss(y, 1 - exp(-w * h))`` with ``h`` the
    objective's output (``log(1 + exp(s))`` for ``cross_entropy_lambda``), averaged over the
    ROWS (the weight is inside the loss). Stats ``[sum(loss), n]``."""

    name = "cross_entropy_lambda"

    def partial(self, y, raw_score, weight=None, objective=None):
        y, raw_score, weight = _prepare(y, raw_score, weight)
        raw = _identity(raw_score)
        hhat = objective.transform(raw) if objective is not None else np.log1p(np.exp(raw))
        w = 1.0 if weight is None else np.asarray(weight, dtype=np.float64)
        loss = _xent(y, 1.0 - np.exp(-w * hhat))
        return np.array([np.sum(loss), float(y.shape[0])])

    def merge(self, a, b):
        return np.asarray(a) + np.asarray(b)

    def finalize(self, stats):
        return float(stats[0] / stats[1]) if stats[1] > 0 else float("nan")


class KullbackLeiblerMetric(_WeightedMeanLoss):
    """LightGBM's ``kullback_leibler``: ``cross_entropy`` plus the weighted mean label entropy
    term ``y log y + (1 - y) log(1 - y)``. Stats ``[sum(w xent), sum(w), sum(w ent)]``."""

    name = "kullback_leibler"
    _natural_transform = staticmethod(_sigmoid)

    def partial(self, y, raw_score, weight=None, objective=None):
        head = super().partial(y, raw_score, weight, objective)
        yy = np.asarray(y, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            ent = np.where(yy > 0, yy * np.log(np.where(yy > 0, yy, 1.0)), 0.0) + np.where(
                1.0 - yy > 0, (1.0 - yy) * np.log(np.where(1.0 - yy > 0, 1.0 - yy, 1.0)), 0.0)
        tail = np.sum(ent) if weight is None else np.dot(ent, np.asarray(weight, np.float64))
        return np.append(head, tail)

    def _loss(self, y, pred):
        return _xent(y, pred)

    def finalize(self, stats):
        if not stats[1] > 0:
            return float("nan")
        return float(stats[0] / stats[1] + stats[2] / stats[1])


class AveragePrecisionMetric(AUCMetric):
    """LightGBM's ``average_precision`` (``AveragePrecisionMetric``): from the highest score
    down, each group of tied scores adds ``pos_g * precision`` at the group's end; divided by the
    positive weight. 1.0 when there are no positives or only positives. Same statistics as
    :class:`AUCMetric`."""

    name = "average_precision"

    def finalize(self, stats):
        _, pos, neg = stats
        pos, neg = pos[::-1], neg[::-1]
        sum_pos = pos.sum()
        if not (sum_pos > 0 and sum_pos != pos.sum() + neg.sum()):
            return 1.0
        precision = np.cumsum(pos) / np.cumsum(pos + neg)
        return float(np.dot(pos, precision) / sum_pos)


class MultiErrorTopKMetric(MultiErrorMetric):
    """``multi_error`` with ``multi_error_top_k = k``: a row is wrong when more than ``k``
    classes score at least its class (LightGBM's name ``multi_error@k`` for ``k > 1``)."""

    _param_names = ("multi_error_top_k",)
    multi_error_top_k = 1

    @property
    def name(self):
        k = self.multi_error_top_k
        return "multi_error" if k == 1 else f"multi_error@{k}"

    def _loss(self, y, pred):
        labels = np.asarray(y).astype(np.intp)
        p_true = pred[np.arange(labels.shape[0]), labels]
        n_at_least = np.count_nonzero(pred >= p_true[:, None], axis=1)
        return (n_at_least > self.multi_error_top_k).astype(np.float64)


class _QueryMetric(Metric):
    """A per-query metric at position ``k``, averaged over queries weighted by their mean row
    weight (LightGBM's ``query_weights``); stats ``[sum(qw * value), sum(qw)]``. A query lies in
    one partition, so each partition scores its own queries."""

    needs_queries = True
    higher_is_better = True
    _base = None

    def __init__(self, k=1, label_gain=None):
        self.k = int(k)
        self.label_gain = None if label_gain is None else tuple(float(g) for g in label_gain)

    @property
    def name(self):
        return f"{self._base}@{self.k}"

    @classmethod
    def from_params(cls, params):  # one metric per position: see get_metrics
        return cls(1, params.get("label_gain"))

    def partial(self, y, raw_score, weight=None, objective=None, queries=None):
        y, raw_score, weight = _prepare(y, raw_score, weight)
        if queries is None:
            raise ValueError(f"metric {self.name!r} needs query groups (eval_group / group)")
        s = _identity(raw_score)
        total = np.zeros(2)
        for q in range(len(queries) - 1):
            a, b = int(queries[q]), int(queries[q + 1])
            qw = 1.0 if weight is None else float(np.mean(np.asarray(weight[a:b], np.float64)))
            total += (qw * self._query_value(np.asarray(y[a:b]), s[a:b]), qw)
        return total

    def merge(self, a, b):
        return np.asarray(a) + np.asarray(b)

    def finalize(self, stats):
        return float(stats[0] / stats[1]) if stats[1] > 0 else float("nan")


class NDCGMetric(_QueryMetric):
    """LightGBM's ``ndcg@k`` (``NDCGMetric``, ``dcg_calculator.cpp``): per query, the DCG of the
    top ``k`` rows by decreasing score (stable) over the best DCG; a query whose best DCG is 0
    counts 1."""

    _base = "ndcg"

    def _query_value(self, labels, scores):
        from oocgbdt.kernels.ranking import dcg_at, default_label_gain, discounts, max_dcg_at

        gain = default_label_gain() if self.label_gain is None else np.asarray(self.label_gain)
        labels = labels.astype(np.float64)
        best = max_dcg_at(self.k, labels, gain, discounts())
        if not best > 0:
            return 1.0
        out = np.zeros(1)
        dcg_at(np.array([self.k], dtype=np.int64), labels, np.asarray(scores, np.float64), gain,
               discounts(), out)
        return out[0] * (1.0 / best)


class MAPMetric(_QueryMetric):
    """LightGBM's ``map@k`` (``MapMetric``): per query, over the top ``k`` rows by decreasing
    score, the sum of the precisions at each relevant row (label > 0.5) divided by
    ``min(relevant rows, k)``; 1 for a query without relevant rows."""

    _base = "map"

    def _query_value(self, labels, scores):
        relevant = labels > 0.5
        npos = int(relevant.sum())
        if npos == 0:
            return 1.0
        order = np.argsort(-scores, kind="stable")[:min(self.k, len(labels))]
        hits = relevant[order]
        ranks = np.flatnonzero(hits) + 1.0
        return float(np.sum(np.arange(1, len(ranks) + 1) / ranks) / min(npos, self.k))


#: Canonical metric name -> metric class.
METRIC_CLASSES = {
    "l2": L2Metric,
    "rmse": RMSEMetric,
    "binary_logloss": BinaryLoglossMetric,
    "auc": AUCMetric,
    "multi_logloss": MultiLoglossMetric,
    "multi_error": MultiErrorTopKMetric,
    "l1": L1Metric,
    "huber": HuberMetric,
    "fair": FairMetric,
    "quantile": QuantileMetric,
    "mape": MAPEMetric,
    "poisson": PoissonMetric,
    "gamma": GammaMetric,
    "gamma_deviance": GammaDevianceMetric,
    "tweedie": TweedieMetric,
    "binary_error": BinaryErrorMetric,
    "average_precision": AveragePrecisionMetric,
    "cross_entropy": CrossEntropyMetric,
    "cross_entropy_lambda": CrossEntropyLambdaMetric,
    "kullback_leibler": KullbackLeiblerMetric,
    "ndcg": NDCGMetric,
    "map": MAPMetric,
    "auc_mu": AucMuMetric,
}
assert set(METRIC_CLASSES) == set(METRICS)


def get_metrics(names, objective, params=None):
    """Build the metrics named by a ``metric`` parameter value.

    Parameters
    ----------
    names : None, str or list of str
        None means the objective's default metric. Otherwise canonical names or aliases, or a
        comma-separated str; ``"None"`` / ``""`` mean no metric (see
        :func:`oocgbdt.params.normalize_metric`).
    objective : Objective
        The training objective (its ``name`` decides the default and which metrics apply).
    params : dict or None
        Resolved parameters, for the metrics' own (``alpha``, ``fair_c``,
        ``tweedie_variance_power``, ``multi_error_top_k``); None: LightGBM's defaults.

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
        cls = METRIC_CLASSES[name]
        if issubclass(cls, _QueryMetric):  # one metric per eval_at position
            eval_at = (params or {}).get("eval_at") or [1, 2, 3, 4, 5]
            metrics.extend(cls(k, (params or {}).get("label_gain")) for k in eval_at)
        else:
            metrics.append(cls.from_params(params) if params is not None else cls())
    return metrics


class CallableMetric(Metric):
    """A callable eval metric, LightGBM's scikit-learn ``eval_metric`` signature:
    ``feval(y_true, y_pred) -> (name, value, is_higher_better)``,
    ``feval(y_true, y_pred, weight)`` or ``feval(y_true, y_pred, weight, group)`` (``group``:
    the eval set's query sizes, int64, which it then needs, as LightGBM's
    ``_EvalFunctionWrapper`` passes them); when it returns a list of such tuples, the first is
    kept.

    What runs where and what it costs: the metric is not mergeable, so each eval partition sends
    its labels, predictions (``objective.transform`` of the raw scores: probabilities for
    ``binary``, raw scores for a callable objective) and weights; they are concatenated in row
    order where the loop runs and the callable runs there once per round on the whole eval set.
    That is 12 to 20 bytes per eval row (times the classes) moved and held every round: fine for
    an eval set that fits in the caller's memory, not for one that does not.

    ``name`` and ``higher_is_better`` are those the callable returns (its ``__name__`` and
    False until its first call).
    """

    def __init__(self, feval):
        if not callable(feval):
            raise ValueError(f"a callable metric is needed, got {feval!r}")
        self.feval = feval
        self.name = getattr(feval, "__name__", "custom")
        self.higher_is_better = False
        try:
            import inspect
            self.n_args = len(inspect.signature(feval).parameters)
        except (TypeError, ValueError):
            self.n_args = 2
        if self.n_args not in (2, 3, 4):
            raise ValueError(f"a callable metric takes (y_true, y_pred[, weight[, group]]); "
                             f"{self.name} takes {self.n_args} arguments")
        self.needs_queries = self.n_args == 4

    def __eq__(self, other):
        return type(self) is type(other) and self.feval is other.feval

    def __hash__(self):
        return hash(id(self.feval))

    def partial(self, y, raw_score, weight=None, objective=None, queries=None):
        y, raw_score, weight = _prepare(y, raw_score, weight)
        pred = objective.transform(raw_score) if objective is not None else _identity(raw_score)
        sizes = None if queries is None else np.diff(np.asarray(queries, dtype=np.int64))
        return [(np.asarray(y), np.asarray(pred), None if weight is None else np.asarray(weight),
                 sizes)]

    def merge(self, a, b):
        return list(a) + list(b)

    def finalize(self, stats):
        y = np.concatenate([p[0] for p in stats])
        pred = np.concatenate([p[1] for p in stats])
        w = None if any(p[2] is None for p in stats) else np.concatenate([p[2] for p in stats])
        if self.n_args == 4:
            out = self.feval(y, pred, w, np.concatenate([p[3] for p in stats]))
        else:
            out = self.feval(y, pred) if self.n_args == 2 else self.feval(y, pred, w)
        if isinstance(out, list):
            out = out[0]
        if not (isinstance(out, tuple) and len(out) == 3):
            raise ValueError(f"a callable metric must return (name, value, is_higher_better), "
                             f"got {out!r}")
        name, value, higher = out
        value = float(value)
        self.name, self.higher_is_better = str(name), bool(higher)
        return value
