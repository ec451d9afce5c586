"""This module contains the training callbacks, LightGBM's: :func:`early_stopping`,
:func:`log_evaluation`, :func:`record_evaluation`, :func:`reset_parameter`, the
:class:`CallbackEnv` they receive and :class:`EarlyStopException`.

A callback is any callable taking a :class:`CallbackEnv`; it runs in the caller's process once per
round, after the round's evaluation (with the loop on Dask workers, each round's evaluation is
sent to the caller as the progress bar's updates are). Raising :class:`EarlyStopException` ends
training after that round. :func:`reset_parameter` is applied before each round instead: its
values are a function of the round alone, so they are computed up front and travel with the
loop (:meth:`CallbackList.learning_rates`).

Facts from LightGBM's ``python-package/lightgbm/callback.py`` (``_EarlyStoppingCallback``,
``_LogEvaluationCallback``, ``_RecordEvaluationCallback``, ``_ResetParameterCallback``) and
``engine.py`` (``train``: callbacks sorted by their ``order``; ``EarlyStopException`` sets the
best iteration and ends the loop after the round that raised it).
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Optional

__all__ = ["EvalResult", "CallbackEnv", "EarlyStopException", "CallbackList", "early_stopping",
           "log_evaluation", "record_evaluation", "reset_parameter", "evaluation_result_list"]

logger = logging.getLogger("oocgbdt")


class EvalResult(NamedTuple):
    """One metric on one eval set after a round (LightGBM 4.7's ``EvalResult``; a tuple, so
    code written for earlier LightGBM's ``(name, metric, value, is_higher_better)`` tuples
    indexes it the same way)."""
    dataset_name: str
    metric_name: str
    metric_value: float
    maximize: bool
    metric_std_dev: Optional[float] = None


@dataclass
class CallbackEnv:
    """What a callback receives after each round (LightGBM's fields).

    Attributes
    ----------
    model : None
        LightGBM passes its Booster; here the trees being trained may live on Dask workers, so
        the model is given to callbacks only when training ends (None during training).
    params : dict
        The resolved training parameters.
    iteration : int
        0-based index of the round just trained.
    begin_iteration, end_iteration : int
        The first round (0, or the rounds of ``init_model``) and one past the last.
    evaluation_result_list : list of EvalResult
        One per eval set and metric, in ``evals_result`` order.
    """
    model: Any
    params: dict
    iteration: int
    begin_iteration: int
    end_iteration: int
    evaluation_result_list: list


class EarlyStopException(Exception):
    """Raised by a callback to end training after this round.

    Parameters
    ----------
    best_iteration : int
        0-based best round (the model's ``best_iteration`` is this + 1).
    best_score : list of tuple
        The ``evaluation_result_list`` of that round.

    Attributes
    ----------
    stop_round : int
        Set when caught: the 0-based round whose callbacks raised it (training ends after it).
    """

    def __init__(self, best_iteration: int, best_score):
        super().__init__()
        self.best_iteration = int(best_iteration)
        self.best_score = best_score


def _format(entry) -> str:
    name, metric, value, _ = entry[:4]
    return f"{name}'s {metric}: {value:g}"


class _EarlyStopping:
    """See :func:`early_stopping`."""

    order = 30
    before_iteration = False

    def __init__(self, stopping_rounds, first_metric_only, verbose, min_delta):
        if isinstance(stopping_rounds, bool) or not isinstance(stopping_rounds, int):
            raise TypeError(f"stopping_rounds must be an int, got "
                            f"{type(stopping_rounds).__name__} {stopping_rounds!r}")
        self.stopping_rounds = stopping_rounds
        self.enabled = stopping_rounds > 0
        self.first_metric_only = bool(first_metric_only)
        self.verbose = bool(verbose)
        self.min_delta = min_delta

    def _deltas(self, results):
        n_metrics = len({r[1] for r in results})
        n_sets = len(results) // n_metrics
        d = self.min_delta
        if isinstance(d, (list, tuple)):
            if any(t < 0 for t in d):
                raise ValueError(f"min_delta must be >= 0, got {list(d)}")
            if len(d) == 0:
                return [0.0] * len(results)
            if len(d) == 1:
                return [float(d[0])] * len(results)
            if len(d) != n_metrics:
                raise ValueError(f"min_delta must be one value or one per metric ({n_metrics}); "
                                 f"got {len(d)} values")
            return [float(t) for t in d] * n_sets
        if d < 0:
            raise ValueError(f"min_delta must be >= 0, got {d}")
        return [float(d)] * len(results)

    def _start(self, env):
        results = env.evaluation_result_list
        if not results:
            raise ValueError("early_stopping needs at least one eval set and metric; give "
                             "eval_set (and a metric)")
        self.first_metric = results[0][1]
        self.best = [(-math.inf if r[3] else math.inf) for r in results]
        self.best_iter = [0] * len(results)
        self.best_list = [None] * len(results)
        self.deltas = self._deltas(results)
        if self.verbose:
            logger.info("Training until validation scores don't improve for %d rounds",
                        self.stopping_rounds)

    def __call__(self, env: CallbackEnv):
        if env.iteration == env.begin_iteration:
            self._start(env)
        if not self.enabled:
            return
        for i, entry in enumerate(env.evaluation_result_list):
            name, metric, value, higher = entry[:4]
            better = (value > self.best[i] + self.deltas[i] if higher
                      else value < self.best[i] - self.deltas[i])
            if self.best_list[i] is None or better:
                self.best[i], self.best_iter[i] = value, env.iteration
                self.best_list[i] = env.evaluation_result_list
            if self.first_metric_only and metric != self.first_metric:
                continue
            if name == "training":
                continue  # the training data, when it is evaluated too (as LightGBM's)
            if env.iteration - self.best_iter[i] >= self.stopping_rounds:
                if self.verbose:
                    logger.info("Early stopping, best iteration is: [%d] %s",
                                self.best_iter[i] + 1,
                                "; ".join(map(_format, self.best_list[i])))
                raise EarlyStopException(self.best_iter[i], self.best_list[i])
            if env.iteration == env.end_iteration - 1:
                raise EarlyStopException(self.best_iter[i], self.best_list[i])


def early_stopping(stopping_rounds: int, first_metric_only: bool = False, verbose: bool = True,
                   min_delta=0.0) -> Callable:
    """Stop when a metric on an eval set has not improved for ``stopping_rounds`` rounds.

    LightGBM's ``early_stopping`` callback: every (eval set, metric) pair is watched, except
    an eval set named ``"training"``; an improvement must exceed ``min_delta``; with
    ``first_metric_only`` only the first metric stops training. At the last round, the best
    round is reported without stopping earlier.

    Parameters
    ----------
    stopping_rounds : int
        Rounds without improvement; <= 0 disables the callback.
    first_metric_only : bool, default False
    verbose : bool, default True
        Log the best round when stopping (logger ``"oocgbdt"``, level INFO).
    min_delta : float or list of float, default 0.0
        Least improvement, >= 0: one value, or one per metric.

    Returns
    -------
    callable
        The callback.

    Raises
    ------
    TypeError
        ``stopping_rounds`` is not an int.
    ValueError
        At the first round: no eval set or metric, a negative ``min_delta``, or a list of
        ``min_delta`` whose length is neither 1 nor the number of metrics.
    """
    return _EarlyStopping(stopping_rounds, first_metric_only, verbose, min_delta)


class _LogEvaluation:
    order = 10
    before_iteration = False

    def __init__(self, period, show_stdv):
        self.period = int(period)

    def __call__(self, env: CallbackEnv):
        if self.period > 0 and env.evaluation_result_list and (env.iteration + 1) % self.period == 0:
            logger.info("[%d]\t%s", env.iteration + 1,
                        "\t".join(map(_format, env.evaluation_result_list)))


def log_evaluation(period: int = 1, show_stdv: bool = True) -> Callable:
    """Log the evaluation every ``period`` rounds (logger ``"oocgbdt"``, level INFO), as
    LightGBM's ``log_evaluation``; ``period <= 0`` logs nothing. ``show_stdv`` is accepted for
    LightGBM's signature (there is no cross-validation here to give a deviation)."""
    return _LogEvaluation(period, show_stdv)


class _RecordEvaluation:
    order = 20
    before_iteration = False

    def __init__(self, eval_result):
        if not isinstance(eval_result, dict):
            raise TypeError(f"eval_result must be a dict, got {type(eval_result).__name__}")
        self.eval_result = eval_result

    def __call__(self, env: CallbackEnv):
        if env.iteration == env.begin_iteration:
            self.eval_result.clear()
        for name, metric, value, _ in (e[:4] for e in env.evaluation_result_list):
            self.eval_result.setdefault(name, {}).setdefault(metric, []).append(value)


def record_evaluation(eval_result: dict) -> Callable:
    """Record every round's evaluation into ``eval_result`` as ``{eval_name: {metric: [value
    per round]}}`` (cleared at the first round), as LightGBM's ``record_evaluation``.

    Raises
    ------
    TypeError
        ``eval_result`` is not a dict.
    """
    return _RecordEvaluation(eval_result)


class _ResetParameter:
    order = 10
    before_iteration = True

    def __init__(self, kwargs):
        unsupported = sorted(set(kwargs) - {"learning_rate"})
        if unsupported:
            raise ValueError(f"reset_parameter can reset learning_rate only; got "
                             f"{unsupported}")
        self.kwargs = kwargs

    def __call__(self, env: CallbackEnv):
        """Nothing: its values are functions of the round, computed before training
        (:meth:`CallbackList.learning_rates`) and applied by the loop itself."""

    def value(self, name, i, begin, end):
        v = self.kwargs[name]
        if isinstance(v, (list, tuple)):
            if len(v) != end - begin:
                raise ValueError(f"reset_parameter: the list of {name} has {len(v)} values; it "
                                 f"needs one per round ({end - begin})")
            return v[i - begin]
        if callable(v):
            return v(i - begin)
        raise TypeError(f"reset_parameter: {name} must be a list or a function of the round, "
                        f"got {type(v).__name__}")


def reset_parameter(**kwargs) -> Callable:
    """Change ``learning_rate`` before each round, as LightGBM's ``reset_parameter``: a list
    with one value per round, or a function of the 0-based round.

    Raises
    ------
    ValueError
        A parameter other than ``learning_rate``; a list of the wrong length (when training
        starts).
    """
    return _ResetParameter(kwargs)


class CallbackList:
    """The callbacks of one fit, in LightGBM's order (by their ``order`` attribute; callables
    without one first, in list order); runs the after-round ones and computes the before-round ones up front.

    Parameters
    ----------
    callbacks : iterable of callable or None
    params : dict
        Resolved training parameters.
    begin, end : int
        Rounds ``[begin, end)`` of this fit.

    Raises
    ------
    TypeError
        A callback is not callable.
    """

    def __init__(self, callbacks, params, begin, end):
        callbacks = list(callbacks or [])
        for i, cb in enumerate(callbacks):
            if not callable(cb):
                raise TypeError(f"callbacks[{i}] must be callable, got {type(cb).__name__}")
        # LightGBM's order: by ``order`` (10, 20, 30 for the built-in callbacks); a callable
        # without one comes first, in list order (engine.py gives it ``i - len(callbacks)``).
        order = {id(cb): getattr(cb, "order", i - len(callbacks)) for i, cb in enumerate(callbacks)}
        self.before = [cb for cb in callbacks if getattr(cb, "before_iteration", False)]
        self.after = sorted((cb for cb in callbacks if not getattr(cb, "before_iteration", False)),
                            key=lambda cb: order[id(cb)])
        self.params, self.begin, self.end = params, int(begin), int(end)
        self.stopped = None  # the EarlyStopException that ended training, if one did

    def __bool__(self):
        return bool(self.after or self.before)

    def learning_rates(self):
        """One learning rate per round of ``[begin, end)`` after the before-round callbacks,
        or None when none resets it."""
        resets = [cb for cb in self.before if isinstance(cb, _ResetParameter)]
        others = [cb for cb in self.before if not isinstance(cb, _ResetParameter)]
        if others:
            raise ValueError("callbacks that run before each round are supported only as "
                             "reset_parameter(learning_rate=...)")
        if not resets:
            return None
        rates = [float(self.params["learning_rate"])] * (self.end - self.begin)
        for cb in resets:
            rates = [cb.value("learning_rate", i, self.begin, self.end)
                     for i in range(self.begin, self.end)]
        return rates

    def after_round(self, iteration, evaluation_result_list):
        """Run the after-round callbacks for round ``iteration``; returns the
        :class:`EarlyStopException` one raised (also kept as ``stopped``), else None."""
        if self.stopped is not None:
            return self.stopped
        env = CallbackEnv(model=None, params=self.params, iteration=int(iteration),
                          begin_iteration=self.begin, end_iteration=self.end,
                          evaluation_result_list=list(evaluation_result_list))
        try:
            for cb in self.after:
                cb(env)
        except EarlyStopException as e:
            e.stop_round = int(iteration)
            self.stopped = e
        return self.stopped


def evaluation_result_list(evals_result, metrics, iteration) -> list:
    """The :class:`EvalResult` list of round ``iteration`` of an ``evals_result`` dict, in its
    order (LightGBM's evaluation list)."""
    higher = {m.name: bool(m.higher_is_better) for m in metrics}
    return [EvalResult(name, metric, float(values[iteration]), higher.get(metric, False))
            for name, by_metric in evals_result.items()
            for metric, values in by_metric.items() if len(values) > iteration]
