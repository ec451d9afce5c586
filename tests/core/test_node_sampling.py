"""Per-node feature rules (oocgbdt.core.node_sampling): LightGBM's GetByNode semantics, its
Random's Sample, and the checks of interaction_constraints."""
import numpy as np
import pytest

from oocgbdt.core.node_sampling import (LightGBMRandom, NodeSampler, allowed_features,
                                        check_interaction_constraints)
from oocgbdt.params import resolve_params


def test_allowed_features_follow_get_by_node():
    sets = (frozenset({0, 1, 2}), frozenset({2, 3}), frozenset({4}))
    assert allowed_features((), sets) == {0, 1, 2, 3, 4}        # root: every set
    assert allowed_features((0,), sets) == {0, 1, 2}
    assert allowed_features((2,), sets) == {0, 1, 2, 3}          # shared feature: both sets
    assert allowed_features((2, 3), sets) == {2, 3}
    assert allowed_features((0, 3), sets) == {0, 3}              # only the branch itself
    assert 5 not in allowed_features((), sets)                    # in no set: never


@pytest.mark.parametrize("n, k", [(28, 14), (28, 3), (100, 1), (5, 5), (9, 8)])
def test_sample_draws_k_sorted_distinct_indices(n, k):
    """Both of LightGBM's methods (selection sampling when K > N / log2 K, else Floyd's)."""
    rng = LightGBMRandom(2)
    for _ in range(20):
        got = rng.sample(n, k)
        assert len(got) == k == len(set(got)) and got == sorted(got)
        assert all(0 <= v < n for v in got)
    assert LightGBMRandom(2).sample(n, 0) == [] and LightGBMRandom(2).sample(n, n + 1) == []


def test_node_masks_draw_get_cnt_features_of_the_tree():
    params = resolve_params(dict(feature_fraction_bynode=0.25, feature_fraction_seed=7))
    usable = np.ones(10, dtype=bool)
    usable[3] = False
    sampler = NodeSampler.from_params(params, usable).for_tree(usable)
    masks, after = sampler.node_masks((), 10, 2)
    assert [m.sum() for m in masks] == [2, 2]  # RoundInt(9 * 0.25) = 2
    assert not any(m[3] for m in masks)
    assert after.col_state != sampler.col_state
    again, _ = sampler.node_masks((), 10, 2)  # the same state draws the same masks
    assert all(np.array_equal(a, b) for a, b in zip(masks, again))


def test_no_rule_means_no_sampler():
    assert NodeSampler.from_params(resolve_params({}), np.ones(4, bool)) is None


def test_interaction_constraints_checks():
    with pytest.raises(ValueError, match="interaction_constraints.*3"):
        check_interaction_constraints([[0, 3]], 3)
    with pytest.raises(ValueError, match="interaction_constraints"):
        resolve_params(dict(interaction_constraints=[[0, -1]]))
    with pytest.raises(TypeError, match="interaction_constraints"):
        resolve_params(dict(interaction_constraints=[0, 1]))
    assert resolve_params(dict(interaction_constraints="[0,1],[2]"))["interaction_constraints"] \
        == [[0, 1], [2]]


def test_aliases_and_lookahead_check():
    p = resolve_params(dict(colsample_bynode=0.5, extra_tree=True))
    assert p["feature_fraction_bynode"] == 0.5 and p["extra_trees"] and p["extra_seed"] == 6
    with pytest.raises(ValueError, match="lookahead_leaves"):
        resolve_params(dict(extra_trees=True, lookahead_leaves=2))
