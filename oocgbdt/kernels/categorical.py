"""This module contains the kernels of categorical features: category codes to bins, bitset
membership, and the split search over one feature's categories.

Data flow position: :func:`map_categories` runs where rows are binned
(:meth:`oocgbdt.core.bin_mapper.BinMapper.transform`); :func:`find_best_categorical` runs in
the split search of a leaf, on its reduced histogram (:func:`oocgbdt.core.split.best_split`);
:func:`in_bitset` decides categorical nodes in the routing and prediction kernels.

Sources (LightGBM 4.7, facts restated in ``docs/categorical.md``):

* a category is ``int(value)`` truncated toward zero; NaN and values <= -1 (a negative int)
  are missing (``BinMapper::ValueToBin``, ``include/LightGBM/bin.h``), categories without a
  bin go to bin 0;
* bitsets are 32-bit words, bit ``v % 32`` of word ``v // 32``; a position beyond the last word
  is not in the set (``Common::ConstructBitset`` / ``Common::FindInBitset``,
  ``include/LightGBM/utils/common.h``);
* the split search is ``FeatureHistogram::FindBestThresholdCategoricalInner``
  (``src/treelearner/feature_histogram.cpp``) with max_delta_step, path smoothing and, when
  monotone constraints are given, the leaf's output bounds (a categorical feature is never
  monotone itself, but its outputs are clamped into the leaf's bounds and its gains computed
  from them, as LightGBM's ``USE_MC`` gains); with extra_trees (``USE_RAND``), one candidate
  drawn per feature and leaf: one-vs-rest, the bin ``1 + NextInt % (n_bins - 1)``;
  many-vs-many, the prefix length ``NextInt(0, max_threshold) + 1`` (no draw, length 1, when
  ``max_threshold`` is 0).
"""
import numpy as np

from oocgbdt.kernels._jit import njit
from oocgbdt.kernels.splitting import (K_EPSILON, _round_int, gain_given_output, lcg_next_int,
                                       lcg_next_int_naive, leaf_gain_ex, side_output,
                                       split_gain)

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
                          cat_smooth, min_data_per_group, res, out_bins, max_delta_step=0.0,
                          path_smooth=0.0, parent_output=0.0, use_mc=False, c_min=-np.inf,
                          c_max=np.inf, rand_state=None):
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
    rand_state : ndarray of shape (1,), int64, or None       # IN/OUT extra_trees: the
        feature's LightGBM ``Random`` state, advanced by its draw; None: every candidate
    max_delta_step, path_smooth, parent_output, use_mc, c_min, c_max    # IN  as
        :func:`oocgbdt.kernels.splitting.split_gain` (monotone direction 0)

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
    extra = rand_state is not None
    if n_bins <= max_cat_to_onehot:
        best_t = -1
        rand_t = -1
        if rand_state is not None:
            # NextInt(1 - offset, n_bins - offset) in LightGBM's stored bins: bin 1 + r % (n - 1)
            rand_t = lcg_next_int(rand_state, 1, n_bins) if n_bins > 1 else 0
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
            if extra and t != rand_t:
                continue
            gain = split_gain(other_g, other_h, g, h + K_EPSILON, other_cnt, cnt, l1, l2,
                              max_delta_step, path_smooth, parent_output, use_mc, 0, c_min,
                              c_max)
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
    rand_i = 0
    if rand_state is not None:
        max_threshold = max(min(max_num_cat, n_used) - 1, 0)
        if max_threshold > 0:
            rand_i = lcg_next_int(rand_state, 0, max_threshold)
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
            if extra and i != rand_i:
                i += 1
                continue
            right_g = sum_g - acc_g
            gain = split_gain(acc_g, acc_h, right_g, right_h, acc_cnt, right_cnt, l1, l2c,
                              max_delta_step, path_smooth, parent_output, use_mc, 0, c_min,
                              c_max)
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
                                out_bins, max_delta_step=0.0, path_smooth=0.0, parent_output=0.0,
                                use_mc=False, c_min=-np.inf, c_max=np.inf, rand_state=None):
    """NumPy twin of :func:`find_best_categorical`: every candidate left set is listed first
    (one-vs-rest: each bin; many-vs-many: the prefixes allowed by the group rules, from the
    ascending order of NumPy's stable argsort, then from the descending one), then each is
    checked and scored on its own, and the first best wins. With ``rand_state`` (extra_trees)
    only the candidates of the drawn bin or prefix length are kept."""
    h = hist[lo:lo + n_bins]
    est = np.floor(h[:, 1] * cnt_factor + 0.5)

    def output_of(g, hh, lam, n):
        w = -np.sign(g) * max(0.0, abs(g) - l1) / (hh + lam)
        if max_delta_step > 0 and abs(w) > max_delta_step:
            w = np.sign(w) * max_delta_step
        if path_smooth > K_EPSILON:
            k = n / path_smooth
            w = w * k / (k + 1) + parent_output / (k + 1)
        if use_mc:
            w = min(max(w, c_min), c_max)
        return w

    def gain_of(g, hh, lam, n=0.0):
        t = np.sign(g) * max(0.0, abs(g) - l1)
        if max_delta_step <= 0 and path_smooth <= K_EPSILON and not use_mc:
            return t * t / (hh + lam)
        w = output_of(g, hh, lam, n)
        return -(2 * t * w + (hh + lam) * w * w)

    res[:] = 0.0
    res[0] = -np.inf
    candidates = []  # (left bins, one-vs-rest)
    if n_bins <= max_cat_to_onehot:
        if rand_state is not None and n_bins > 1:
            rand_t = lcg_next_int_naive(rand_state, 1, n_bins)
        for t in range(1, n_bins):
            hl = h[t, 1]
            if (est[t] < min_data or hl < min_hess or count - est[t] < min_data
                    or sum_h2 - hl - K_EPSILON < min_hess):
                continue
            if rand_state is None or t == rand_t:
                candidates.append(([t], True))
    else:
        used = np.array([t for t in range(1, n_bins) if est[t] >= cat_smooth], dtype=np.int64)
        ctr = h[used, 0] / (h[used, 1] + cat_smooth)
        asc = used[np.argsort(ctr, kind="stable")]
        max_num_cat = min(max_cat_threshold, (len(used) + 1) // 2)
        rand_i = 0
        if rand_state is not None and max(min(max_num_cat, len(used)) - 1, 0) > 0:
            rand_i = lcg_next_int_naive(rand_state, 0, min(max_num_cat, len(used)) - 1)
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
                if rand_state is None or i == rand_i:
                    candidates.append((list(left), False))
    best = -np.inf
    for left, onehot in candidates:
        lg = h[left, 0].sum()
        lh = h[left, 1].sum() + K_EPSILON
        lcnt = est[left].sum()
        if onehot:  # the "other" side's hessian as LightGBM forms it
            gain = (gain_of(sum_g - lg, sum_h2 - h[left[0], 1] - K_EPSILON, l2, count - lcnt)
                    + gain_of(lg, lh, l2, lcnt))
        else:
            lam = l2 + cat_l2
            gain = gain_of(lg, lh, lam, lcnt) + gain_of(sum_g - lg, sum_h2 - lh, lam, count - lcnt)
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
                                 min_data_per_group, out, out_bins, max_delta_step=0.0,
                                 path_smooth=0.0, parent_output=0.0, use_mc=False,
                                 c_min=-np.inf, c_max=np.inf, rand_states=None):
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
    rand_states : ndarray of shape (n_features,), int64, or None    # IN/OUT extra_trees: each
        feature's LightGBM ``Random`` state (see :func:`find_best_categorical`)
    max_delta_step, path_smooth, parent_output, use_mc, c_min, c_max
        As :func:`find_best_categorical`. The leaf's own gain is LightGBM's: with path
        smoothing, the gain of ``parent_output`` itself; else :func:`leaf_gain_ex` without
        smoothing. With 8 columns, ``out`` also gets the left and right outputs (``lambda_l2``
        plus ``cat_l2`` for many-vs-many).
    """
    if not sum_h + l2 > 0.0:
        for f in range(n_bins.shape[0]):
            if feature_mask[f]:
                out[f, 0] = -np.inf
                out[f, 1:] = 0.0
        return
    sum_h2 = sum_h + 2.0 * K_EPSILON
    cnt_factor = count / sum_h2
    if path_smooth > K_EPSILON:
        parent_gain = gain_given_output(sum_g, sum_h2, l1, l2, parent_output)
    else:
        parent_gain = leaf_gain_ex(sum_g, sum_h2, l1, l2, max_delta_step, 0.0, count, 0.0)
    min_gain_shift = parent_gain + min_gain_to_split
    res = np.empty(5)
    for f in range(n_bins.shape[0]):
        if not feature_mask[f]:
            continue
        out[f, 0] = -np.inf
        out[f, 1:] = 0.0
        if n_bins[f] <= 1:
            continue
        if rand_states is None:
            find_best_categorical(hist, bin_offsets[f], n_bins[f], sum_g, sum_h2, count,
                                  cnt_factor, l1, l2, min_data, min_hess, min_gain_shift,
                                  max_cat_to_onehot, max_cat_threshold, cat_l2, cat_smooth,
                                  min_data_per_group, res, out_bins[f], max_delta_step,
                                  path_smooth, parent_output, use_mc, c_min, c_max)
        else:
            find_best_categorical(hist, bin_offsets[f], n_bins[f], sum_g, sum_h2, count,
                                  cnt_factor, l1, l2, min_data, min_hess, min_gain_shift,
                                  max_cat_to_onehot, max_cat_threshold, cat_l2, cat_smooth,
                                  min_data_per_group, res, out_bins[f], max_delta_step,
                                  path_smooth, parent_output, use_mc, c_min, c_max,
                                  rand_states[f:f + 1])
        if res[0] > -np.inf:
            out[f, 0] = res[0] - parent_gain
            out[f, 1] = res[4]
            out[f, 2] = 0.0
            out[f, 3] = res[1]
            out[f, 4] = res[2]  # kEpsilon included, as find_best_thresholds
            out[f, 5] = res[3]
            if out.shape[1] >= 8:
                l2f = l2 if n_bins[f] <= max_cat_to_onehot else l2 + cat_l2
                lo_mc = c_min if use_mc else -np.inf
                hi_mc = c_max if use_mc else np.inf
                out[f, 6] = side_output(res[1], res[2], res[3], l1, l2f, max_delta_step,
                                        path_smooth, parent_output, lo_mc, hi_mc)
                out[f, 7] = side_output(sum_g - res[1], sum_h2 - res[2], count - res[3], l1,
                                        l2f, max_delta_step, path_smooth, parent_output, lo_mc,
                                        hi_mc)
