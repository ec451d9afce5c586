"""This module contains the kernels of categorical features: category codes to bins, bitset
membership, and the split search over one feature's categories.

Data flow position: :func:`map_categories` runs where rows are binned
(:meth:`oocgbdt.core.bin_mapper.BinMapper.transform`); :func:`find_best_categorical` runs in
the split search of a leaf, on its reduced histogram (:func:`oocgbdt.core.split.best_split`);
:func:`in_bitset` decides categorical nodes in the routing and prediction kernels.

Sources (LightGBM 4.7, facts restated in ``docs/categorical.md``):

* a category is ``int(value)`` truncated toward zero; NaN and negative values are missing
  (``BinMapper::ValueToBin``, ``include/LightGBM/bin.h``), categories without a bin go to bin 0;
* bitsets are 32-bit words, bit ``v % 32`` of word ``v // 32``; a position beyond the last word
  is not in the set (``Common::ConstructBitset`` / ``Common::FindInBitset``,
  ``include/LightGBM/utils/common.h``);
* the split search is ``FeatureHistogram::FindBestThresholdCategoricalInner``
  (``src/treelearner/feature_histogram.cpp``) without extra_trees, monotone constraints,
  max_delta_step or path smoothing.
"""
import numpy as np

from oocgbdt.kernels._jit import njit
from oocgbdt.kernels.splitting import K_EPSILON, _round_int, leaf_gain

__all__ = ["map_categories", "map_categories_naive", "in_bitset", "in_bitset_naive",
           "construct_bitset", "find_best_categorical", "find_best_categorical_naive",
           "find_best_categorical_splits", "category_of",
           "INT32_LIMIT"]

#: Values at or above this are not representable as a C ``int`` category (LightGBM casts with
#: ``static_cast<int>``); they are treated as missing (bin 0, routed right).
INT32_LIMIT = 2147483648.0


@njit
def category_of(v):
    """The category of a raw value, or -1 when it has none (NaN, negative, too large)."""
    if np.isnan(v) or v >= INT32_LIMIT or v <= -1.0:
        return -1
    return int(v)  # truncation toward zero, as static_cast<int>: (-1, 0) -> 0


@njit
def map_categories(column, categories, bins, out):
    """Bin of every value of one categorical column.

    Parameters
    ----------
    column : ndarray of shape (n_rows,), float32 or float64, any stride    # IN  raw values
    categories : ndarray of shape (n_cats,), int64, ascending              # IN  categories with a bin
    bins : ndarray of shape (n_cats,), int64                               # IN  their bins (>= 1)
    out : ndarray of shape (n_rows,), uint8 or uint16, any stride          # OUT bins; 0 for
        NaN, negative values and categories without a bin
    """
    n = categories.shape[0]
    for i in range(column.shape[0]):
        c = category_of(np.float64(column[i]))
        b = 0
        if c >= 0 and n > 0:
            lo = 0
            hi = n
            while lo < hi:
                mid = (lo + hi) // 2
                if categories[mid] < c:
                    lo = mid + 1
                else:
                    hi = mid
            if lo < n and categories[lo] == c:
                b = bins[lo]
        out[i] = b


def map_categories_naive(column, categories, bins, out):
    """Plain-Python twin of :func:`map_categories` (a dict lookup)."""
    table = {int(c): int(b) for c, b in zip(categories, bins)}
    for i, v in enumerate(column):
        v = float(v)
        if np.isnan(v) or v <= -1.0 or v >= INT32_LIMIT:
            out[i] = 0
            continue
        out[i] = table.get(int(v), 0)


def construct_bitset(values) -> np.ndarray:
    """The uint32 bitset of non-negative integers ``values``: as many words as the largest
    needs (an empty set has no words), bit ``v % 32`` of word ``v // 32`` set."""
    values = np.asarray(values, dtype=np.int64)
    if values.size == 0:
        return np.zeros(0, dtype=np.uint32)
    if values.min() < 0:
        raise ValueError(f"bitset values must be non-negative, found {int(values.min())}")
    words = np.zeros(int(values.max()) // 32 + 1, dtype=np.uint32)
    np.bitwise_or.at(words, values // 32, (np.uint32(1) << (values % 32).astype(np.uint32)))
    return words


@njit
def in_bitset(bits, lo, hi, pos):
    """Whether ``pos`` (>= 0) is in the bitset ``bits[lo:hi]``."""
    w = pos // 32
    if w >= hi - lo:
        return False
    return ((bits[lo + w] >> np.uint32(pos % 32)) & np.uint32(1)) != 0


def in_bitset_naive(bits, lo, hi, pos):
    """Plain-Python twin of :func:`in_bitset`."""
    words = [int(x) for x in bits[lo:hi]]
    return pos // 32 < len(words) and bool(words[pos // 32] & (1 << (pos % 32)))


@njit(error_model="numpy")
def find_best_categorical(hist, lo, n_bins, sum_g, sum_h2, count, cnt_factor, l1, l2, min_data,
                          min_hess, min_gain_shift, max_cat_to_onehot, max_cat_threshold, cat_l2,
                          cat_smooth, min_data_per_group, res, out_bins):
    """Best split of one categorical feature of a leaf.

    Parameters
    ----------
    hist : ndarray of shape (n_total_bins, 2), float64       # IN  the leaf's histogram
    lo, n_bins : int                                          # IN  the feature's rows and bins
    sum_g : float; sum_h2 : float                             # IN  leaf totals, sum_h2 = sum_h + 2 kEpsilon
    count, cnt_factor : float                                 # IN  leaf rows, count / sum_h2
    l1, l2, min_data, min_hess, min_gain_shift : float        # IN  min_gain_shift = parent gain
        (with ``l2``) + min_gain_to_split
    max_cat_to_onehot, max_cat_threshold, min_data_per_group : int; cat_l2, cat_smooth : float
    res : ndarray of shape (5,), float64                      # OUT gain (``-inf``: no valid
        split), left sum of gradients, left sum of hessians (with kEpsilon), left estimated
        count, number of bins on the left
    out_bins : ndarray of shape (>= max(1, max_cat_threshold),), int64   # OUT the left bins,
        in LightGBM's order (``res[4]`` of them)

    Bin 0 (NaN, negative and rare categories) is never on the left. One-vs-rest when
    ``n_bins <= max_cat_to_onehot``; else bins with ``RoundInt(hess * cnt_factor) >=
    cat_smooth`` are sorted (stably) by ``grad / (hess + cat_smooth)`` and prefixes of that
    order, from either end, are tried with ``l2 + cat_l2``.
    """
    res[0] = -np.inf
    res[1] = 0.0
    res[2] = 0.0
    res[3] = 0.0
    res[4] = 0.0
    best_gain = -np.inf
    if n_bins <= max_cat_to_onehot:
        best_t = -1
        for t in range(1, n_bins):
            g = hist[lo + t, 0]
            h = hist[lo + t, 1]
            cnt = _round_int(h * cnt_factor)
            if cnt < min_data or h < min_hess:
                continue
            other_cnt = count - cnt
            if other_cnt < min_data:
                continue
            other_h = sum_h2 - h - K_EPSILON
            if other_h < min_hess:
                continue
            other_g = sum_g - g
            gain = leaf_gain(other_g, other_h, l1, l2) + leaf_gain(g, h + K_EPSILON, l1, l2)
            if gain <= min_gain_shift:
                continue
            if gain > best_gain:
                best_gain = gain
                best_t = t
                res[1] = g
                res[2] = h + K_EPSILON
                res[3] = cnt
        if best_t >= 0:
            res[0] = best_gain
            res[4] = 1.0
            out_bins[0] = best_t
        return
    # many vs many
    used = np.empty(n_bins, dtype=np.int64)
    ctr = np.empty(n_bins, dtype=np.float64)
    n_used = 0
    for t in range(1, n_bins):
        if _round_int(hist[lo + t, 1] * cnt_factor) >= cat_smooth:
            used[n_used] = t
            ctr[n_used] = hist[lo + t, 0] / (hist[lo + t, 1] + cat_smooth)
            n_used += 1
    # stable insertion sort by ctr (ascending); feature bins are few
    for i in range(1, n_used):
        t = used[i]
        c = ctr[i]
        j = i - 1
        while j >= 0 and ctr[j] > c:
            used[j + 1] = used[j]
            ctr[j + 1] = ctr[j]
            j -= 1
        used[j + 1] = t
        ctr[j + 1] = c
    l2c = l2 + cat_l2
    max_num_cat = min(max_cat_threshold, (n_used + 1) // 2)
    best_i = -1
    best_dir = 1
    for d in range(2):
        direction = 1 if d == 0 else -1
        pos = 0 if d == 0 else n_used - 1
        acc_g = 0.0
        acc_h = K_EPSILON
        acc_cnt = 0.0
        group_cnt = 0.0
        i = 0
        while i < n_used and i < max_num_cat:
            t = used[pos]
            pos += direction
            h = hist[lo + t, 1]
            cnt = _round_int(h * cnt_factor)
            acc_g += hist[lo + t, 0]
            acc_h += h
            acc_cnt += cnt
            group_cnt += cnt
            if acc_cnt < min_data or acc_h < min_hess:
                i += 1
                continue
            right_cnt = count - acc_cnt
            if right_cnt < min_data or right_cnt < min_data_per_group:
                break
            right_h = sum_h2 - acc_h
            if right_h < min_hess:
                break
            if group_cnt < min_data_per_group:
                i += 1
                continue
            group_cnt = 0.0
            right_g = sum_g - acc_g
            gain = leaf_gain(acc_g, acc_h, l1, l2c) + leaf_gain(right_g, right_h, l1, l2c)
            if gain > min_gain_shift and gain > best_gain:
                best_gain = gain
                best_i = i
                best_dir = direction
                res[1] = acc_g
                res[2] = acc_h
                res[3] = acc_cnt
            i += 1
    if best_i >= 0:
        res[0] = best_gain
        res[4] = best_i + 1
        for k in range(best_i + 1):
            out_bins[k] = used[k] if best_dir == 1 else used[n_used - 1 - k]


def find_best_categorical_naive(hist, lo, n_bins, sum_g, sum_h2, count, cnt_factor, l1, l2,
                                min_data, min_hess, min_gain_shift, max_cat_to_onehot,
                                max_cat_threshold, cat_l2, cat_smooth, min_data_per_group, res,
                                out_bins):
    """NumPy twin of :func:`find_best_categorical`: every candidate left set is listed first
    (one-vs-rest: each bin; many-vs-many: the prefixes allowed by the group rules, from the
    ascending order of NumPy's stable argsort, then from the descending one), then each is
    checked and scored on its own, and the first best wins."""
    h = hist[lo:lo + n_bins]
    est = np.floor(h[:, 1] * cnt_factor + 0.5)

    def gain_of(g, hh, lam):
        t = np.sign(g) * max(0.0, abs(g) - l1)
        return t * t / (hh + lam)

    res[:] = 0.0
    res[0] = -np.inf
    candidates = []  # (left bins, one-vs-rest)
    if n_bins <= max_cat_to_onehot:
        for t in range(1, n_bins):
            hl = h[t, 1]
            if (est[t] < min_data or hl < min_hess or count - est[t] < min_data
                    or sum_h2 - hl - K_EPSILON < min_hess):
                continue
            candidates.append(([t], True))
    else:
        used = np.array([t for t in range(1, n_bins) if est[t] >= cat_smooth], dtype=np.int64)
        ctr = h[used, 0] / (h[used, 1] + cat_smooth)
        asc = used[np.argsort(ctr, kind="stable")]
        max_num_cat = min(max_cat_threshold, (len(used) + 1) // 2)
        for order in (asc, asc[::-1]):
            group = 0.0
            for i in range(min(len(order), max_num_cat)):
                left = order[:i + 1]
                group += est[order[i]]
                lcnt = est[left].sum()
                lh = K_EPSILON + h[left, 1].sum()
                if lcnt < min_data or lh < min_hess:
                    continue
                if count - lcnt < min_data or count - lcnt < min_data_per_group:
                    break
                if sum_h2 - lh < min_hess:
                    break
                if group < min_data_per_group:
                    continue
                group = 0.0
                candidates.append((list(left), False))
    best = -np.inf
    for left, onehot in candidates:
        lg = h[left, 0].sum()
        lh = h[left, 1].sum() + K_EPSILON
        if onehot:  # the "other" side's hessian as LightGBM forms it
            gain = gain_of(sum_g - lg, sum_h2 - h[left[0], 1] - K_EPSILON, l2) + gain_of(lg, lh, l2)
        else:
            lam = l2 + cat_l2
            gain = gain_of(lg, lh, lam) + gain_of(sum_g - lg, sum_h2 - lh, lam)
        if gain > min_gain_shift and gain > best + 1e-12 * abs(best if np.isfinite(best) else 0.0):
            best = gain
            res[0] = gain
            res[1] = lg
            res[2] = lh
            res[3] = est[left].sum()
            res[4] = len(left)
            out_bins[:len(left)] = left


@njit(error_model="numpy")
def find_best_categorical_splits(hist, bin_offsets, n_bins, feature_mask, sum_g, sum_h, count,
                                 l1, l2, min_data, min_hess, min_gain_to_split,
                                 max_cat_to_onehot, max_cat_threshold, cat_l2, cat_smooth,
                                 min_data_per_group, out, out_bins):
    """:func:`find_best_categorical` of every feature of ``feature_mask`` (the categorical ones
    a leaf searches), with the leaf terms of ``FeatureHistogram::FindBestThreshold``.

    Parameters
    ----------
    hist, bin_offsets, n_bins, sum_g, sum_h, count, l1, l2, min_data, min_hess,
    min_gain_to_split : as :func:`oocgbdt.kernels.splitting.find_best_thresholds`
    feature_mask : ndarray of shape (n_features,), bool               # IN  features searched here
    max_cat_to_onehot, max_cat_threshold, cat_l2, cat_smooth, min_data_per_group
    out : ndarray of shape (n_features, 6), float64                   # OUT rows of the searched
        features only: split gain (``-inf``: none), number of left bins, 0 (default_left is
        false), left sum of gradients, left sum of hessians, left estimated count
    out_bins : ndarray of shape (n_features, max(1, max_cat_threshold)), int64   # OUT left bins
    """
    if not sum_h + l2 > 0.0:
        for f in range(n_bins.shape[0]):
            if feature_mask[f]:
                out[f, 0] = -np.inf
                out[f, 1:] = 0.0
        return
    sum_h2 = sum_h + 2.0 * K_EPSILON
    cnt_factor = count / sum_h2
    parent_gain = leaf_gain(sum_g, sum_h2, l1, l2)
    min_gain_shift = parent_gain + min_gain_to_split
    res = np.empty(5)
    for f in range(n_bins.shape[0]):
        if not feature_mask[f]:
            continue
        out[f, 0] = -np.inf
        out[f, 1:] = 0.0
        if n_bins[f] <= 1:
            continue
        find_best_categorical(hist, bin_offsets[f], n_bins[f], sum_g, sum_h2, count, cnt_factor,
                              l1, l2, min_data, min_hess, min_gain_shift, max_cat_to_onehot,
                              max_cat_threshold, cat_l2, cat_smooth, min_data_per_group, res,
                              out_bins[f])
        if res[0] > -np.inf:
            out[f, 0] = res[0] - parent_gain
            out[f, 1] = res[4]
            out[f, 2] = 0.0
            out[f, 3] = res[1]
            out[f, 4] = res[2]  # kEpsilon included, as find_best_thresholds
            out[f, 5] = res[3]
