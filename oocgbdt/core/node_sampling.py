"""This module contains LightGBM's per-node feature choice: ``interaction_constraints``,
``feature_fraction_bynode`` and the random streams of ``extra_trees``.

Data flow position: the loop makes one :class:`NodeSampler` per fit from the parameters
(:meth:`NodeSampler.from_params`); the histogram source hands it, with the branch features of
the leaves it splits, to the final task of each pass (:func:`oocgbdt.core.partition.finish_root`,
:func:`~oocgbdt.core.partition.finish_split_many`), which searches each leaf with its node mask
and returns the sampler advanced past the draws of the pass. Every place that searches (in
process, one worker, each shard, each feature block) starts from the same sampler and makes the
same draws, so the model does not depend on where the search runs.

LightGBM's sources (4.x):

* ``src/treelearner/col_sampler.hpp`` ``ColSampler::GetByNode``: the features allowed at a leaf
  are the features on its branch plus every constraint set that holds all of them (at the root,
  every set); a feature in no set is never used. With ``feature_fraction_bynode < 1``,
  ``GetCnt(n, fraction) = max(RoundInt(n * fraction), 1)`` of the tree's features (those of
  ``feature_fraction``) are drawn by ``Random::Sample``, among the allowed ones (at most all of
  them), from one ``Random(feature_fraction_seed)`` stream.
* ``SerialTreeLearner::FindBestSplitsFromHistograms``: ``GetByNode`` is called for the smaller
  child (fewer rows, the right one on a tie) then the larger one, after every split whose
  children are searched (``BeforeFindBestSplit``: not at ``max_depth``, not when both hold fewer
  than ``2 * min_data_in_leaf`` rows), and once for the root. A feature outside the node mask
  is still searched (its ``is_splittable`` flag is inherited by the children) but not chosen.
* ``src/treelearner/feature_histogram.hpp``: with ``extra_trees`` each feature has its own
  ``Random(extra_seed + inner feature index)`` (inner index: rank among the non-trivial
  features), advanced by each search of that feature; see
  :mod:`oocgbdt.kernels.splitting` and :mod:`oocgbdt.kernels.categorical`.

The streams run in the order of the searches, so they reproduce LightGBM's draws when the
passes follow LightGBM's order: best-first growth without splitting ahead (the loop turns
``lookahead_leaves`` off when a stream is drawn from). With ``feature_fraction < 1`` the
tree's features are drawn from the same ``Random(feature_fraction_seed)`` stream before each
tree (:mod:`oocgbdt.core.screening`; the loop passes the state on with
:meth:`NodeSampler.with_col_state`), as LightGBM's ``ColSampler::ResetByTree``.
``feature_fraction_seed`` and ``extra_seed`` are derived from ``seed`` when it is given and
they are not (:func:`oocgbdt.params.resolve_params`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from oocgbdt.kernels.splitting import lcg_next_int_naive, lcg_step

__all__ = ["LightGBMRandom", "NodeSampler", "allowed_features", "check_interaction_constraints",
           "merge_block_samplers"]

_MASK32 = 0xFFFFFFFF


class LightGBMRandom:
    """LightGBM's ``Random`` (``include/LightGBM/utils/random.h``) from a 32-bit state.

    Parameters
    ----------
    state : int
        The seed (``Random(int seed)``: the seed as an unsigned 32-bit state).
    """

    def __init__(self, state: int):
        self.state = int(state) & _MASK32

    def next_int(self, lo: int, hi: int) -> int:
        """``NextInt(lo, hi)``: an int in ``[lo, hi)``."""
        box = [self.state]
        v = lcg_next_int_naive(box, lo, hi)
        self.state = box[0]
        return v

    def next_float(self) -> float:
        """``NextFloat()``: ``((x >> 16) & 0x7FFF) / 32768`` after one step."""
        self.state = lcg_step(self.state)
        return ((self.state >> 16) & 0x7FFF) / 32768.0

    def sample(self, n: int, k: int) -> list:
        """``Sample(N, K)``: K sorted distinct ints of ``range(N)``, LightGBM's two methods."""
        if k > n or k <= 0:
            return []
        if k == n:
            return list(range(n))
        out = []
        if k > 1 and k > n / math.log2(k):
            for i in range(n):
                if self.next_float() < (k - len(out)) / float(n - i):
                    out.append(i)
            return out
        chosen = set()
        for r in range(n - k, n):
            v = self.next_int(0, r + 1)
            if v in chosen:
                chosen.add(r)
            else:
                chosen.add(v)
        return sorted(chosen)


def allowed_features(branch, constraints) -> set:
    """Features allowed at a leaf whose branch uses ``branch`` (LightGBM's ``GetByNode``): the
    branch's own features plus every set of ``constraints`` that holds all of them (every set
    when the branch is empty)."""
    allowed = set(branch)
    for c in constraints:
        if all(f in c for f in branch):
            allowed |= c
    return allowed


def check_interaction_constraints(value, n_features: int) -> tuple:
    """``interaction_constraints`` as a tuple of frozensets of feature indices.

    Raises
    ------
    ValueError
        An index outside ``[0, n_features)``.
    """
    out = []
    for group in value or ():
        for f in group:
            if not 0 <= int(f) < n_features:
                raise ValueError(f"interaction_constraints: feature index {f} is out of range; "
                                 f"expected indices in [0, {n_features}) (X has {n_features} "
                                 f"features), found {list(group)}")
        out.append(frozenset(int(f) for f in group))
    return tuple(out)


@dataclass(frozen=True)
class NodeSampler:
    """The per-node feature rules of a fit and the state of their random streams.

    Attributes
    ----------
    fraction : float
        ``feature_fraction_bynode``.
    constraints : tuple of frozenset of int
        ``interaction_constraints`` (original feature indices); empty: none.
    extra_trees : bool
    col_state : int
        State of the ``Random(feature_fraction_seed)`` stream.
    extra_states : ndarray of shape (n_features,), dtype int64, or None
        With ``extra_trees``: each feature's stream state.
    tree_features : ndarray of int64, or None
        The current tree's searchable features, ascending (set by :meth:`for_tree`).
    """

    fraction: float = 1.0
    constraints: tuple = ()
    extra_trees: bool = False
    col_state: int = 0
    extra_states: np.ndarray | None = None
    tree_features: np.ndarray | None = None

    @classmethod
    def from_params(cls, params: dict, usable) -> "NodeSampler | None":
        """The sampler the resolved ``params`` ask for, or None (no per-node rule).

        ``usable``: bool mask of shape (n_features,), the non-trivial features; the inner
        index of ``extra_seed + i`` counts these.
        """
        usable = np.asarray(usable, dtype=bool)
        constraints = check_interaction_constraints(params.get("interaction_constraints"),
                                                    usable.shape[0])
        fraction = float(params.get("feature_fraction_bynode", 1.0))
        extra = bool(params.get("extra_trees", False))
        if not constraints and fraction >= 1.0 and not extra:
            return None
        states = None
        if extra:
            inner = np.cumsum(usable) - 1
            states = ((int(params.get("extra_seed", 6)) + inner) & _MASK32).astype(np.int64)
        return cls(fraction=fraction, constraints=constraints, extra_trees=extra,
                   col_state=int(params.get("feature_fraction_seed", 2)) & _MASK32,
                   extra_states=states)

    @property
    def draws(self) -> bool:
        """Whether a search draws from a stream (the order of the searches then matters)."""
        return self.fraction < 1.0 or self.extra_trees

    def for_tree(self, feature_mask) -> "NodeSampler":
        """This sampler for a tree that searches ``feature_mask`` (bool, (n_features,))."""
        return replace(self, tree_features=np.flatnonzero(feature_mask).astype(np.int64))

    def node_masks(self, branch, n_features: int, count: int):
        """The masks of ``count`` leaves sharing ``branch``, in LightGBM's call order.

        Returns
        -------
        (list of ndarray of shape (n_features,), bool, or None; NodeSampler advanced)
            None per leaf when every feature is allowed.
        """
        if not self.constraints and self.fraction >= 1.0:
            return [None] * count, self
        allowed = allowed_features(branch, self.constraints) if self.constraints else None
        tree = self.tree_features
        if self.fraction >= 1.0:
            mask = np.zeros(n_features, dtype=bool)
            mask[[f for f in allowed if f < n_features]] = True
            return [mask] * count, self
        k = max(int(math.floor(tree.size * self.fraction + 0.5)), min(1, tree.size))
        pool = tree if allowed is None else np.array([f for f in tree if f in allowed],
                                                      dtype=np.int64)
        if allowed is not None:
            k = min(k, pool.size)
        rng = LightGBMRandom(self.col_state)
        masks = []
        for _ in range(count):
            mask = np.zeros(n_features, dtype=bool)
            mask[pool[rng.sample(int(pool.size), k)]] = True
            masks.append(mask)
        return masks, replace(self, col_state=rng.state)

    def with_col_state(self, state: int) -> "NodeSampler":
        """This sampler with the ``Random(feature_fraction_seed)`` stream at ``state`` (the
        stream the tree's ``feature_fraction`` draw advanced)."""
        return replace(self, col_state=int(state))

    def extra_copy(self):
        """A copy of the extra_trees states for one search (the kernels advance it), or None."""
        return None if self.extra_states is None else self.extra_states.copy()

    def with_extra(self, states) -> "NodeSampler":
        return self if states is None else replace(self, extra_states=states)


def merge_block_samplers(samplers, before: NodeSampler) -> NodeSampler:
    """The sampler after a pass searched in feature blocks: every block made the same node
    draws; each advanced the extra_trees streams of its own features only."""
    first = samplers[0]
    if before.extra_states is None:
        return first
    states = before.extra_states.copy()
    for s in samplers:
        changed = s.extra_states != before.extra_states
        states[changed] = s.extra_states[changed]
    return replace(first, extra_states=states)
