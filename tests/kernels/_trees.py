"""Random trees in LightGBM's node layout, for the kernel tests."""
import numpy as np


def random_layout(rng, n_leaves):
    """``(left_child, right_child)``, int32 arrays of shape (n_leaves - 1,), of a tree grown by
    splitting a random leaf ``n_leaves - 1`` times (internal node ``k`` is the ``k``-th split;
    a child ``~l`` is leaf ``l``), as LightGBM numbers nodes and leaves."""
    left, right, parent_of_leaf = [], [], [-1]
    for node in range(n_leaves - 1):
        leaf = int(rng.integers(0, node + 1))
        p = parent_of_leaf[leaf]
        if p >= 0:
            if left[p] == ~leaf:
                left[p] = node
            else:
                right[p] = node
        left.append(~leaf)
        right.append(~(node + 1))
        parent_of_leaf[leaf] = node
        parent_of_leaf.append(node)
    return np.asarray(left, np.int32), np.asarray(right, np.int32)
