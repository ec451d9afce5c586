"""This module contains the split-search kernel: the best threshold of every feature of one leaf.

Data flow position: in the final task of each tree-reduced histogram pass, on the worker that holds
the leaf's histogram. Formulas and scan order follow LightGBM 4.7 (``src/treelearner/
feature_histogram.hpp``: ``FindBestThreshold``, ``FindBestThresholdSequentially`` and
``GetLeafGain``), see ``reference/lightgbm-algorithms.md`` section 4:

* ``T(G) = sign(G) * max(0, |G| - lambda_l1)``; leaf output ``-T(G) / (H + lambda_l2)``;
  leaf gain ``T(G)**2 / (H + lambda_l2)``; split gain ``gain(L) + gain(R) - gain(parent)``.
* Scan R (right to left, missing values default left) always; scan F (left to right, missing values
  default right) for features with a NaN or Zero missing type and more than two bins. When the
  leaf has no missing rows both scans see the same partitions; F then wins only by more than
  rounding (as it must when counts are estimated, below, F can admit a threshold R rejects).
* The leaf's hessian sum enters as ``sum_h + 2 * kEpsilon`` and the accumulated side starts at
  ``kEpsilon`` (``FeatureHistogram::FindBestThreshold``); the returned left hessian sum is
  LightGBM's ``best_sum_left_hessian``, that ``kEpsilon`` included: the children's sums and
  outputs are derived from it as LightGBM does (:func:`oocgbdt.core.split.best_split`).
* A split must leave ``min_data_in_leaf`` rows and ``min_sum_hessian_in_leaf`` hessian on each
  side and have ``split_gain > min_gain_to_split``. The row counts checked against
  ``min_data_in_leaf`` are LightGBM's estimates from hessians
  (``FindBestThresholdSequentially``): with ``cnt_factor = count / (sum_h + 2 * kEpsilon)`` (the
  leaf's true row count over its hessian sum), each bin counts ``RoundInt(hess_bin *
  cnt_factor)`` (``RoundInt(x) = int(x + 0.5)``) rows; the scan sums these over the side it
  accumulates (R: the right side; F: the left side) and the other side has ``count`` minus that
  sum. For a NaN-type feature whose most frequent bin is bin 0, LightGBM stores no bin 0
  (``FeatureMetainfo::offset``) and scan F starts its left side as the leaf minus every stored
  bin: so does this kernel. The estimate is exact when every row has the same hessian (L2
  without weights); for logloss and softmax a row with a large hessian counts as several rows,
  so a side with fewer than ``min_data_in_leaf`` rows can be accepted (LightGBM documents
  ``min_data_in_leaf`` as approximate for such losses). The returned left count is that
  estimate too, as in LightGBM's ``SplitInfo``: histograms hold no per-bin counts (two stores
  per cell instead of three). LightGBM replaces the estimate by the partition's true counts
  before the tree and the next passes use it (``SerialTreeLearner::SplitInner``,
  ``update_cnt``); so does oocgbdt, from the row counts that routing adds to each child's
  histogram (:mod:`oocgbdt.kernels.histogram`).
* Not reproduced: with a Zero-type feature (``zero_as_missing``) whose most frequent bin is 0
  but not its zero bin, LightGBM's scan F leaves bin 0 out of the left sums (it is not stored)
  although its rows go left; here bin 0 is summed on the left, where its rows go.
"""
import numpy as np

from oocgbdt.kernels._jit import njit

__all__ = ["find_best_thresholds", "find_best_thresholds_naive", "leaf_gain", "leaf_output"]

K_EPSILON = 1e-15

# Every kernel here divides by hessian sums that can be exactly 0 (float32 hessians that
# underflowed, with min_sum_hessian_in_leaf=0): IEEE arithmetic (inf, NaN) as in LightGBM's C++,
# where a NaN gain is never chosen, instead of numba's default ZeroDivisionError.


@njit(error_model="numpy")
def _threshold_l1(s, l1):
    reg = max(0.0, abs(s) - l1)
    return reg if s >= 0 else -reg


@njit(error_model="numpy")
def leaf_gain(sum_g, sum_h, l1, l2):
    """LightGBM's ``GetLeafGain`` without max_delta_step or path smoothing."""
    t = _threshold_l1(sum_g, l1)
    return t * t / (sum_h + l2)


@njit(error_model="numpy")
def leaf_output(sum_g, sum_h, l1, l2):
    """LightGBM's ``CalculateSplittedLeafOutput`` without max_delta_step or path smoothing."""
    return -_threshold_l1(sum_g, l1) / (sum_h + l2)


@njit(error_model="numpy")
def _round_int(x):
    """LightGBM's ``Common::RoundInt``: ``static_cast<int>(x + 0.5f)``; ``x >= 0`` here, so the
    truncation is ``floor(x + 0.5)``."""
    return np.floor(x + 0.5)


@njit(error_model="numpy")
def _scan(hist, lo, n_bins, missing_type, default_bin, reverse, include_nan_right, offset,
          sum_g, sum_h, count, cnt_factor, l1, l2, min_data, min_hess, min_gain_shift, margin,
          res):
    # sum_h is the leaf's sum of hessians + 2 * kEpsilon (LightGBM's FindBestThreshold).
    # res: [gain, threshold_bin, left_g, left_h (+ kEpsilon), left_count]; updated when better
    # by > margin. Counts, checked against min_data and recorded, are LightGBM's estimates
    # (acc_e): histograms hold no per-bin counts. The true counts come from routing the rows.
    if reverse:
        acc_g = 0.0
        acc_h = K_EPSILON
        acc_e = 0.0
        top = n_bins - 1
        if missing_type == 2 and not include_nan_right:
            top = n_bins - 2
        for t in range(top, 0, -1):
            if missing_type == 1 and t == default_bin:
                continue
            h = hist[lo + t, 1]
            acc_g += hist[lo + t, 0]
            acc_h += h
            acc_e += _round_int(h * cnt_factor)
            if acc_e < min_data or acc_h < min_hess:
                continue
            if count - acc_e < min_data:
                break
            lh = sum_h - acc_h
            if lh < min_hess:
                break
            lg = sum_g - acc_g
            gain = leaf_gain(lg, lh, l1, l2) + leaf_gain(acc_g, acc_h, l1, l2)
            if gain > min_gain_shift and gain > res[0]:
                res[0] = gain
                res[1] = t - 1
                res[2] = lg
                res[3] = lh
                res[4] = count - acc_e
    else:
        acc_g = 0.0
        acc_h = K_EPSILON
        acc_e = 0.0
        if offset:
            # NaN-type feature whose most frequent bin is bin 0: LightGBM stores no bin 0
            # (FeatureMetainfo::offset = 1) and starts the left side as the leaf minus every
            # stored bin, NaN bin included; its first threshold (bin 0) adds nothing.
            acc_g = sum_g
            acc_h = sum_h - K_EPSILON
            acc_e = count
            for i in range(1, n_bins):
                h = hist[lo + i, 1]
                acc_g -= hist[lo + i, 0]
                acc_h -= h
                acc_e -= _round_int(h * cnt_factor)
        for t in range(0, n_bins - 1):
            if missing_type == 1 and t == default_bin:
                continue
            if not (offset and t == 0):
                h = hist[lo + t, 1]
                acc_g += hist[lo + t, 0]
                acc_h += h
                acc_e += _round_int(h * cnt_factor)
            if acc_e < min_data or acc_h < min_hess:
                continue
            if count - acc_e < min_data:
                break
            rh = sum_h - acc_h
            if rh < min_hess:
                break
            rg = sum_g - acc_g
            gain = leaf_gain(acc_g, acc_h, l1, l2) + leaf_gain(rg, rh, l1, l2)
            if gain > min_gain_shift and gain > res[0] + margin:
                res[0] = gain
                res[1] = t
                res[2] = acc_g
                res[3] = acc_h
                res[4] = acc_e


@njit(error_model="numpy")
def find_best_thresholds(hist, bin_offsets, n_bins, missing_types, default_bins, most_freq_bins,
                         feature_mask, sum_g, sum_h, count, l1, l2, min_data, min_hess,
                         min_gain_to_split, out):
    """Best split of every feature of one leaf.

    Parameters
    ----------
    hist : ndarray of shape (n_total_bins, 2), dtype float64              # IN  the leaf's histogram
        (fields: sums of gradients and hessians per bin)
    bin_offsets : ndarray of shape (n_features + 1,), dtype int64         # IN  feature f's slice
    n_bins : ndarray of shape (n_features,), dtype int32                  # IN  bins incl. the NaN bin
    missing_types : ndarray of shape (n_features,), dtype uint8           # IN  0 None, 1 Zero, 2 NaN
    default_bins : ndarray of shape (n_features,), dtype int32            # IN  bin of 0.0
    most_freq_bins : ndarray of shape (n_features,), dtype int32          # IN  most frequent bin
    feature_mask : ndarray of shape (n_features,), dtype bool             # IN  features to search
    sum_g, sum_h : float                                                  # IN  leaf totals
    count : float                                                         # IN  leaf's row count
    l1, l2, min_data, min_hess, min_gain_to_split : float                 # IN  LightGBM parameters
    out : ndarray of shape (n_features, 6), dtype float64                 # OUT per feature:
        split gain (``-inf`` when no valid split), threshold bin, default_left (0/1), left sum of
        gradients, left sum of hessians, left row count (LightGBM's estimate from hessians, as
        ``FindBestThresholdSequentially`` records it; the tree's counts are the true ones, from
        routing the rows).
    """
    if not sum_h + l2 > 0.0:
        # Every hessian of the leaf is 0 (e.g. softmax probabilities that underflowed in
        # float32): LightGBM's gains are NaN and never chosen, so the leaf has no split.
        for f in range(n_bins.shape[0]):
            out[f, 0] = -np.inf
            out[f, 1:] = 0.0
        return
    sum_h2 = sum_h + 2.0 * K_EPSILON
    cnt_factor = count / sum_h2
    parent_gain = leaf_gain(sum_g, sum_h2, l1, l2)
    min_gain_shift = parent_gain + min_gain_to_split
    res = np.empty(5)
    for f in range(n_bins.shape[0]):
        out[f, 0] = -np.inf
        out[f, 1:] = 0.0
        nb = n_bins[f]
        if not feature_mask[f] or nb <= 1:
            continue
        lo = bin_offsets[f]
        mt = missing_types[f]
        res[0] = -np.inf
        if mt == 2 and nb <= 2:
            _scan(hist, lo, nb, mt, default_bins[f], True, True, False, sum_g, sum_h2, count,
                  cnt_factor, l1, l2, min_data, min_hess, min_gain_shift, 0.0, res)
            default_left = 0.0
        else:
            _scan(hist, lo, nb, mt, default_bins[f], True, False, False, sum_g, sum_h2, count,
                  cnt_factor, l1, l2, min_data, min_hess, min_gain_shift, 0.0, res)
            default_left = 1.0
            if mt != 0 and nb > 2:
                best_r = res[0]
                # Scan F must beat scan R by more than rounding: when the missing bin is
                # empty, and for a threshold with the missing bin alone on one side, both
                # scans see the same partition.
                margin = 1e-12 * abs(best_r) if best_r > -np.inf else 0.0
                offset = mt == 2 and most_freq_bins[f] == 0
                _scan(hist, lo, nb, mt, default_bins[f], False, False, offset, sum_g, sum_h2,
                      count, cnt_factor, l1, l2, min_data, min_hess, min_gain_shift, margin, res)
                if res[0] > best_r:
                    default_left = 0.0
        if res[0] > -np.inf:
            out[f, 0] = res[0] - parent_gain
            out[f, 1] = res[1]
            out[f, 2] = default_left
            out[f, 3] = res[2]
            out[f, 4] = res[3]
            out[f, 5] = res[4]


def find_best_thresholds_naive(hist, bin_offsets, n_bins, missing_types, default_bins,
                               most_freq_bins, feature_mask, sum_g, sum_h, count, l1, l2,
                               min_data, min_hess, min_gain_to_split, out):
    """Brute-force twin of :func:`find_best_thresholds`, used by tests.

    Enumerates every candidate partition (threshold, side of the missing bin) explicitly and sums
    its sides with NumPy instead of running accumulators. Candidates are visited in the
    kernel's order (scan R by decreasing threshold, then scan F by increasing threshold) and a
    candidate replaces the best only if strictly better, as in LightGBM. Thresholds that differ
    only by empty bins give the same partition; NumPy's pairwise sums may round their gains
    differently in the last bit, so "better" here means better by more than 1e-12 relative.

    ``min_data`` is checked against LightGBM's estimated counts: per bin
    ``floor(hess * count / (sum_h + 2e-15) + 0.5)``, summed over the side the scan accumulates
    (R: the right side; F: the left side, or for a NaN feature whose most frequent bin is 0 the
    right side, NaN bin included), the other side being ``count`` minus that sum.
    """
    def gain_of(g, h):
        t = np.sign(g) * max(0.0, abs(g) - l1)
        return t * t / (h + l2)

    sum_h2 = sum_h + 2e-15
    parent_gain = gain_of(sum_g, sum_h2) if sum_h + l2 > 0 else np.nan
    cnt_factor = count / sum_h2
    for f in range(len(n_bins)):
        out[f, 0] = -np.inf
        out[f, 1:] = 0.0
        if not sum_h + l2 > 0:
            continue
        nb = int(n_bins[f])
        if not feature_mask[f] or nb <= 1:
            continue
        h = hist[bin_offsets[f]:bin_offsets[f] + nb]
        est = np.floor(h[:, 1] * cnt_factor + 0.5)
        mt, dbin = int(missing_types[f]), int(default_bins[f])
        missing_bin = nb - 1 if mt == 2 else (dbin if mt == 1 else -1)
        if mt == 2 and nb <= 2:
            candidates = [(0, False, "R")]
        else:
            top = nb - 2 if mt == 2 else nb - 1
            candidates = [(t - 1, True, "R") for t in range(top, 0, -1)
                          if not (mt == 1 and t == dbin)]
            if mt != 0 and nb > 2:
                candidates += [(t, False, "F") for t in range(0, nb - 1)
                               if not (mt == 1 and t == dbin)]
        offset = mt == 2 and int(most_freq_bins[f]) == 0
        best, best_rec = -np.inf, None
        for t, missing_left, scan in candidates:
            left = np.arange(nb) <= t
            if missing_bin >= 0:
                left[missing_bin] = missing_left
            lg, lh = h[left, 0].sum(), h[left, 1].sum()
            rg, rh = sum_g - lg, sum_h - lh
            if scan == "R" or offset:
                le = count - est[~left].sum()
            else:
                le = est[left].sum()
            if min(le, count - le) < min_data or min(lh, rh) < min_hess:
                continue
            gain = gain_of(lg, lh) + gain_of(rg, rh)
            if gain > parent_gain + min_gain_to_split and (best_rec is None or gain > best + 1e-12 * abs(best)):
                best, best_rec = gain, (t, float(missing_left), lg, lh, le)
        if best_rec is not None:
            out[f, 0] = best - parent_gain
            out[f, 1:6] = best_rec
            out[f, 4] += 1e-15  # kEpsilon included, as the kernel
