"""This module contains :class:`FeatureScreener`: which features each tree builds histograms for.

Data flow position: on the client, once per boosting round, before the round's trees are grown.
The chosen mask narrows :attr:`oocgbdt.core.split.FeatureMeta.feature_mask` for the whole tree,
so histograms of unselected features are never built and the subtraction trick stays valid.

Methods (``feature_screening`` / ``feature_fraction`` in :mod:`oocgbdt.params`):

* ``"fraction"``: LightGBM's per-tree ``feature_fraction`` (``src/treelearner/col_sampler.hpp``,
  ``ResetByTree``), drawn as LightGBM draws it: ``K = max(RoundInt(n_usable * r), 1)`` of the
  usable features by ``Random::Sample`` from one ``Random(feature_fraction_seed)`` stream
  (:class:`oocgbdt.core.node_sampling.LightGBMRandom`), which draws once when training starts
  (LightGBM's ``SetTrainingData``) and then once per tree, a multiclass round's trees each
  their own; ``feature_fraction_bynode`` draws from the same stream between them.
* ``"ema"``: EMA-FS (Yan Song, arXiv:2606.26337): after ``screening_warmup`` rounds that use
  every feature, the top K features by an exponential moving average of their best split gain
  (ties: lower feature index).
* ``"stochastic"``: S-EMA-FS: K features drawn without replacement with weights
  ``w_f = (E_f / max E + 1e-6) ** beta`` by Efraimidis-Spirakis keys ``u ** (1 / w)``;
  ``beta = 0`` is uniform, large ``beta`` approaches EMA-FS.

For the other methods K = max(1, ceil(r * n_usable)). The gain observed for a feature in a round is the largest best
split gain it reached in any leaf of the round's trees (0 if it was searched but never valid);
features not searched keep their score. The exact gain statistic and S-EMA-FS's formula are not
published in the paper's abstract: this follows the proposal in ``reference/lightgbm-algorithms.md``
section 5. Their random draws come from streams keyed by (seed, round), never by worker.
"""
from __future__ import annotations

import math

import numpy as np

from oocgbdt.core.node_sampling import LightGBMRandom

__all__ = ["FeatureScreener"]

_EPS = 1e-6


class FeatureScreener:
    """Choose each round's features and learn from the gains they reach.

    Parameters
    ----------
    method : {"fraction", "ema", "stochastic"}
    usable : ndarray of shape (n_features,), dtype bool
        Features that can be split on at all (not trivial).
    ratio : float in (0, 1]
        Share r of the usable features kept per round.
    warmup : int
        Rounds that use every usable feature (``"ema"`` and ``"stochastic"`` only).
    alpha : float in (0, 1]
        EMA smoothing.
    beta : float >= 0
        S-EMA-FS concentration.
    seed : int or tuple of int
        Seed of the random draws: the streams are keyed by ``(*seed, round)``; ``"fraction"``:
        ``feature_fraction_seed``, the seed of LightGBM's stream (:attr:`rng`).

    Attributes
    ----------
    scores_ : ndarray of shape (n_features,), dtype float64
        EMA of each feature's best split gain; NaN until the feature is first searched.
    history_ : list of ndarray of int64
        The features selected in each round (``"fraction"``: each tree), in increasing order.
    per_tree : bool
        Whether each tree draws its own selection (``"fraction"``), not each round.
    rng : LightGBMRandom or None
        ``"fraction"``: LightGBM's ``Random(feature_fraction_seed)``, shared with the per-node
        draws of ``feature_fraction_bynode``.
    """

    def __init__(self, method, usable, *, ratio=0.3, warmup=5, alpha=0.3, beta=1.0, seed=0):
        if method not in ("fraction", "ema", "stochastic"):
            raise ValueError(f"method must be 'fraction', 'ema' or 'stochastic', got {method!r}")
        self.method = method
        self.usable = np.asarray(usable, dtype=bool)
        self.ratio = float(ratio)
        self.warmup = int(warmup) if method != "fraction" else 0
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.seed = tuple(int(v) for v in np.atleast_1d(seed))
        n_usable = int(self.usable.sum())
        self.k = min(n_usable, max(1, math.ceil(self.ratio * n_usable))) if n_usable else 0
        self.scores_ = np.full(self.usable.shape[0], np.nan)
        self.history_ = []
        self.per_tree = method == "fraction"
        self.rng = None
        if self.per_tree:
            # ColSampler::GetCnt: RoundInt (x + 0.5 truncated), at least 1 when any is usable.
            self.k = max(int(n_usable * self.ratio + 0.5), min(1, n_usable))
            self.rng = LightGBMRandom(self.seed[0])
            self.rng.sample(n_usable, self.k)  # SetTrainingData's draw, before the first tree

    @classmethod
    def from_params(cls, params: dict, usable) -> "FeatureScreener | None":
        """The screener the resolved ``params`` ask for, or None (every feature, every tree)."""
        if params["feature_screening"] is not None:
            return cls(params["feature_screening"], usable, ratio=params["screening_ratio"],
                       warmup=params["screening_warmup"], alpha=params["screening_alpha"],
                       beta=params["screening_beta"], seed=params["seed"])
        if params["feature_fraction"] < 1.0:
            return cls("fraction", usable, ratio=params["feature_fraction"],
                       seed=params["feature_fraction_seed"])
        return None

    def _rng(self, round_idx):
        return np.random.default_rng([*self.seed, int(round_idx)])

    def select(self, round_idx: int) -> np.ndarray:
        """The features of round ``round_idx`` (``"fraction"``: of the next tree, drawn from
        :attr:`rng`): bool mask of shape (n_features,)."""
        usable_idx = np.flatnonzero(self.usable)
        if self.method == "fraction":
            chosen = usable_idx[self.rng.sample(int(usable_idx.size), self.k)]
        elif round_idx < self.warmup or self.k >= usable_idx.size:
            chosen = usable_idx
        else:
            score = self.scores_[usable_idx]
            if self.method == "ema":
                # Never-searched features rank first (optimistic), then by score, then by index.
                key = np.where(np.isnan(score), np.inf, score)
                order = np.lexsort((usable_idx, -key))
                chosen = usable_idx[order[:self.k]]
            else:
                top = np.nanmax(score) if np.isfinite(score).any() else 0.0
                rel = np.where(np.isnan(score), 1.0, score / top if top > 0 else 0.0)
                log_weight = self.beta * np.log(rel + _EPS)
                u = self._rng(round_idx).random(usable_idx.size)
                # Largest key u ** (1 / w) == smallest log(-log u) - log w: stable for any beta.
                rank = np.log(-np.log(np.maximum(u, np.finfo(float).tiny))) - log_weight
                order = np.lexsort((usable_idx, rank))
                chosen = usable_idx[order[:self.k]]
        mask = np.zeros(self.usable.shape[0], dtype=bool)
        mask[chosen] = True
        self.history_.append(np.flatnonzero(mask))
        return mask

    def skip(self, n_trees: int) -> None:
        """``"fraction"``: advance :attr:`rng` past ``n_trees`` trees' draws (a continued fit)."""
        n_usable = int(self.usable.sum())
        for _ in range(n_trees):
            self.rng.sample(n_usable, self.k)

    def update(self, searched, gains) -> None:
        """Fold one round's gains into the EMA.

        Parameters
        ----------
        searched : ndarray of shape (n_features,), dtype bool
            Features searched in the round.
        gains : ndarray of shape (n_features,), dtype float64
            Each feature's largest best split gain in the round (``-inf``: no valid split).
        """
        searched = np.asarray(searched, dtype=bool)
        g = np.where(np.isfinite(gains), np.maximum(gains, 0.0), 0.0)
        old = self.scores_
        new = np.where(np.isnan(old), g, self.alpha * g + (1.0 - self.alpha) * old)
        self.scores_ = np.where(searched, new, old)
