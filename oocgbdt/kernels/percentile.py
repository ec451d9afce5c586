"""This module contains the kernels of the exact distributed weighted percentile.

Leaf renewal (``regression_l1``, ``quantile``, ``mape``) and those objectives' init scores need
a weighted percentile of values spread over partitions. ``oocgbdt.core.percentile`` finds it
by a radix select: every value is mapped to an order-preserving unsigned 64-bit key
(:func:`float_keys`), optionally followed by a second key word (the global row number, to order
ties as LightGBM's stable sort does), and each pass counts, per leaf, the rows and their weight in
each of the 256 buckets of the next 8 bits among the rows whose higher bits match the leaf's
prefix so far (:func:`radix_histogram`). Partial counts are added over partitions; the caller
picks a bucket per leaf and descends. :func:`key_neighbors` then finds, per leaf, the largest key
below and the smallest key above the selected one (the percentile's neighbours).

Each kernel has a ``_naive`` NumPy twin used by the tests.
"""
import numpy as np

from oocgbdt.kernels._jit import njit

__all__ = [
    "float_keys",
    "key_values",
    "radix_histogram",
    "radix_histogram_naive",
    "key_neighbors",
    "key_neighbors_naive",
    "HI_LEVELS",
]

#: 8-bit levels of the first key word.
HI_LEVELS = 8


def float_keys(values):
    """Order-preserving uint64 keys of float64 values (``-0.0`` is keyed as ``+0.0``).

    Parameters
    ----------
    values : ndarray of shape (n,), float64, no NaN

    Returns
    -------
    ndarray of shape (n,), uint64: ``a < b`` iff ``key(a) < key(b)``.
    """
    bits = (np.asarray(values, dtype=np.float64) + 0.0).view(np.uint64)
    sign = bits >> np.uint64(63)
    return np.where(sign == 1, ~bits, bits | np.uint64(1 << 63))


def key_values(keys):
    """Inverse of :func:`float_keys`: float64 values of uint64 keys."""
    keys = np.asarray(keys, dtype=np.uint64)
    top = keys >> np.uint64(63)
    bits = np.where(top == 1, keys & np.uint64((1 << 63) - 1), ~keys)
    return bits.view(np.float64)


@njit
def radix_histogram(
    leaf,  # IN: (n,) int32, leaf of each row, -1 for rows left out
    key_hi,  # IN: (n,) uint64, first key word
    key_lo,  # IN: (n,) uint64, second key word (used when level >= HI_LEVELS)
    weight,  # IN: (n,) float32/float64 or None (every weight 1)
    level,  # IN: int, 0 .. HI_LEVELS + lo levels - 1
    prefix_hi,  # IN: (n_leaves,) uint64, each leaf's first word selected so far
    prefix_lo,  # IN: (n_leaves,) uint64, each leaf's second word selected so far
    active,  # IN: (n_leaves,) bool, leaves still being selected
    out,  # OUT: (n_leaves, 256, 2) float64, zeroed by the caller: (rows, weight) per bucket
):
    """Count rows and weight per leaf and per 8-bit bucket at ``level``, among the rows whose
    key bits above the level equal the leaf's prefix.

    Level ``j < 8`` buckets bits ``63 - 8j .. 56 - 8j`` of ``key_hi``; level ``8 + j`` requires
    ``key_hi == prefix_hi`` and buckets the same bits of ``key_lo``.
    """
    n = leaf.shape[0]
    for i in range(n):
        lf = leaf[i]
        if lf < 0 or not active[lf]:
            continue
        if level < 8:
            shift = np.uint64(56 - 8 * level)
            k = key_hi[i]
            if level > 0:
                up = shift + np.uint64(8)
                if (k >> up) != (prefix_hi[lf] >> up):
                    continue
        else:
            if key_hi[i] != prefix_hi[lf]:
                continue
            shift = np.uint64(56 - 8 * (level - 8))
            k = key_lo[i]
            if level > 8:
                up = shift + np.uint64(8)
                if (k >> up) != (prefix_lo[lf] >> up):
                    continue
        d = np.intp((k >> shift) & np.uint64(255))
        out[lf, d, 0] += 1.0
        if weight is None:
            out[lf, d, 1] += 1.0
        else:
            out[lf, d, 1] += weight[i]


def radix_histogram_naive(leaf, key_hi, key_lo, weight, level, prefix_hi, prefix_lo, active,
                          out):
    """NumPy twin of :func:`radix_histogram` (same arguments)."""
    leaf = np.asarray(leaf)
    w = np.ones(leaf.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64)
    keep = leaf >= 0
    keep[keep] = np.asarray(active)[leaf[keep]]
    lf = np.where(keep, leaf, 0)
    if level < 8:
        shift = 56 - 8 * level
        if level > 0:
            keep &= (key_hi >> np.uint64(shift + 8)) == (prefix_hi[lf] >> np.uint64(shift + 8))
        k = key_hi
    else:
        shift = 56 - 8 * (level - 8)
        keep &= key_hi == prefix_hi[lf]
        if level > 8:
            keep &= (key_lo >> np.uint64(shift + 8)) == (prefix_lo[lf] >> np.uint64(shift + 8))
        k = key_lo
    d = ((k >> np.uint64(shift)) & np.uint64(255)).astype(np.intp)
    np.add.at(out, (leaf[keep], d[keep], 0), 1.0)
    np.add.at(out, (leaf[keep], d[keep], 1), w[keep])


@njit
def key_neighbors(
    leaf,  # IN: (n,) int32, -1 for rows left out
    key_hi,  # IN: (n,) uint64
    key_lo,  # IN: (n,) uint64
    weight,  # IN: (n,) or None
    item_hi,  # IN: (n_leaves,) uint64, the selected key per leaf
    item_lo,  # IN: (n_leaves,) uint64
    active,  # IN: (n_leaves,) bool
    pred,  # OUT: (n_leaves, 2) uint64, largest (hi, lo) below the item; valid where has[:, 0]
    succ,  # OUT: (n_leaves, 2) uint64, smallest (hi, lo) above the item; valid where has[:, 1]
    succ_weight,  # OUT: (n_leaves,) float64, the weight of that row
    has,  # OUT: (n_leaves, 2) bool, zeroed by the caller
):
    """Per leaf, the nearest keys below and above the selected one, in (hi, lo) order."""
    for i in range(leaf.shape[0]):
        lf = leaf[i]
        if lf < 0 or not active[lf]:
            continue
        h = key_hi[i]
        lo = key_lo[i]
        ih = item_hi[lf]
        il = item_lo[lf]
        if h < ih or (h == ih and lo < il):
            if not has[lf, 0] or h > pred[lf, 0] or (h == pred[lf, 0] and lo > pred[lf, 1]):
                pred[lf, 0] = h
                pred[lf, 1] = lo
                has[lf, 0] = True
        elif h > ih or (h == ih and lo > il):
            if not has[lf, 1] or h < succ[lf, 0] or (h == succ[lf, 0] and lo < succ[lf, 1]):
                succ[lf, 0] = h
                succ[lf, 1] = lo
                succ_weight[lf] = 1.0 if weight is None else weight[i]
                has[lf, 1] = True


def key_neighbors_naive(leaf, key_hi, key_lo, weight, item_hi, item_lo, active, pred, succ,
                        succ_weight, has):
    """NumPy twin of :func:`key_neighbors` (same arguments), one leaf at a time by sorting."""
    leaf = np.asarray(leaf)
    w = np.ones(leaf.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64)
    for lf in range(len(active)):
        if not active[lf]:
            continue
        rows = np.flatnonzero(leaf == lf)
        keys = sorted((int(key_hi[r]), int(key_lo[r]), float(w[r])) for r in rows)
        item = (int(item_hi[lf]), int(item_lo[lf]))
        below = [k for k in keys if (k[0], k[1]) < item]
        above = [k for k in keys if (k[0], k[1]) > item]
        if below:
            pred[lf] = below[-1][:2]
            has[lf, 0] = True
        if above:
            succ[lf] = above[0][:2]
            succ_weight[lf] = above[0][2]
            has[lf, 1] = True
