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
* extra_trees (``rand_states``): each searched feature draws one threshold bin from its own
  LightGBM ``Random`` stream (``BeforeNumerical``: ``NextInt(0, num_bin - 2)`` when
  ``num_bin > 2``, else bin 0); both scans then evaluate that threshold alone, after the same
  count and hessian checks (which may end the scan before it: then the feature has no split).
* Leaf-output options (``FindBestThresholdSequentially``'s ``USE_MAX_OUTPUT``,
  ``USE_SMOOTHING`` and ``USE_MC`` templates): ``max_delta_step > 0`` caps each side's output,
  ``path_smooth > kEpsilon`` smooths it towards the leaf's own output, and monotone constraints
  clamp it into the leaf's bounds and reject splits against the feature's direction; gains are
  then those of the outputs (:func:`split_gain`). The chosen split's outputs, computed from the
  same sums (kEpsilon included) and estimated counts, are the children's leaf values.
* Not reproduced: with a Zero-type feature (``zero_as_missing``) whose most frequent bin is 0
  but not its zero bin, LightGBM's scan F leaves bin 0 out of the left sums (it is not stored)
  although its rows go left; here bin 0 is summed on the left, where its rows go.
"""
import numpy as np

from oocgbdt.kernels._jit import njit

__all__ = ["find_best_thresholds", "find_best_thresholds_naive", "canonical_leaf_terms",
           "leaf_gain", "leaf_output", "lcg_next_int", "lcg_next_int_naive", "lcg_step",
           "leaf_output_ex", "leaf_gain_ex", "split_gain", "plain_split_gain", "gain_given_output",
           "monotone_penalty_factor"]

K_EPSILON = 1e-15

# LightGBM's Random (include/LightGBM/utils/random.h): a 32-bit linear congruential generator,
# x <- 214013 x + 2531011 (mod 2**32); NextInt(lo, hi) = (x & 0x7FFFFFFF) % (hi - lo) + lo.
_LCG_A = 214013
_LCG_C = 2531011
_LCG_MASK = 0xFFFFFFFF


@njit
def lcg_next_int(state, lo, hi):
    """LightGBM's ``Random::NextInt(lo, hi)`` on ``state[0]`` (an int64 holding the
    generator's 32-bit state, advanced in place); ``hi > lo``."""
    state[0] = (_LCG_A * state[0] + _LCG_C) & _LCG_MASK
    return (state[0] & 0x7FFFFFFF) % (hi - lo) + lo


def lcg_step(x: int) -> int:
    """One step of LightGBM's generator on a Python int state."""
    return (_LCG_A * int(x) + _LCG_C) & _LCG_MASK


def lcg_next_int_naive(state, lo, hi):
    """Python twin of :func:`lcg_next_int` (``state``: any one-item sequence)."""
    state[0] = lcg_step(state[0])
    return (int(state[0]) & 0x7FFFFFFF) % (hi - lo) + lo


@njit(inline="always")
def _rand_threshold(rand_states, f, n_bins):
    """extra_trees: the one threshold bin feature ``f`` may split at in this leaf, drawn from
    its own stream as LightGBM's ``BeforeNumerical`` does (``NextInt(0, num_bin - 2)`` when
    ``num_bin > 2``, else bin 0); -1 without extra_trees (every threshold)."""
    if rand_states.shape[0] == 0:
        return -1
    if n_bins - 2 > 0:
        return lcg_next_int(rand_states[f:f + 1], 0, n_bins - 2)
    return 0

# The smallest helpers and the plain scan are inlined into the kernels (numba's
# ``inline="always"``): as calls, a leaf's search of 1,205 features of 2 bins took 51 us
# instead of about 25 (the same arithmetic, so the same bits). The scans with leaf-output
# options stay calls, which keeps the compile time of each kernel down.

# Every kernel here divides by hessian sums that can be exactly 0 (float32 hessians that
# underflowed, with min_sum_hessian_in_leaf=0): IEEE arithmetic (inf, NaN) as in LightGBM's C++,
# where a NaN gain is never chosen, instead of numba's default ZeroDivisionError.


@njit(error_model="numpy", inline="always")
def _threshold_l1(s, l1):
    reg = max(0.0, abs(s) - l1)
    return reg if s >= 0 else -reg


@njit(error_model="numpy", inline="always")
def leaf_gain(sum_g, sum_h, l1, l2):
    """LightGBM's ``GetLeafGain`` without max_delta_step or path smoothing."""
    t = _threshold_l1(sum_g, l1)
    return t * t / (sum_h + l2)


@njit(error_model="numpy", inline="always")
def plain_split_gain(lg, lh, rg, rh, l1, l2):
    """A split's gain without max_delta_step, path smoothing or monotone constraints:
    :func:`leaf_gain` of each side (what :func:`split_gain` reduces to then), the left side
    first; with ``lambda_l1 = 0`` as ``G * G / (H + lambda_l2)``, since LightGBM's ``T(G)`` is
    ``G`` exactly then. The same values either way."""
    if l1 > 0.0:
        return leaf_gain(lg, lh, l1, l2) + leaf_gain(rg, rh, l1, l2)
    return lg * lg / (lh + l2) + rg * rg / (rh + l2)


@njit(error_model="numpy")
def leaf_output(sum_g, sum_h, l1, l2):
    """LightGBM's ``CalculateSplittedLeafOutput`` without max_delta_step or path smoothing."""
    return -_threshold_l1(sum_g, l1) / (sum_h + l2)


@njit(error_model="numpy")
def leaf_output_ex(sum_g, sum_h, l1, l2, max_delta_step, path_smooth, count, parent_output):
    """LightGBM's ``CalculateSplittedLeafOutput`` with ``USE_MAX_OUTPUT`` (``max_delta_step >
    0``: the output's magnitude capped at ``max_delta_step``) and ``USE_SMOOTHING``
    (``path_smooth > kEpsilon``: with ``w = count / path_smooth``, ``output * w / (w + 1) +
    parent_output / (w + 1)``), in that order."""
    ret = leaf_output(sum_g, sum_h, l1, l2)
    if max_delta_step > 0.0 and abs(ret) > max_delta_step:
        ret = max_delta_step if ret > 0.0 else -max_delta_step
    if path_smooth > K_EPSILON:
        w = count / path_smooth
        ret = ret * w / (w + 1.0) + parent_output / (w + 1.0)
    return ret


@njit(error_model="numpy")
def gain_given_output(sum_g, sum_h, l1, l2, output):
    """LightGBM's ``GetLeafGainGivenOutput``: ``-(2 T(G) w + (H + lambda_l2) w**2)``."""
    t = _threshold_l1(sum_g, l1)
    return -(2.0 * t * output + (sum_h + l2) * output * output)


@njit(error_model="numpy")
def leaf_gain_ex(sum_g, sum_h, l1, l2, max_delta_step, path_smooth, count, parent_output):
    """LightGBM's ``GetLeafGain``: :func:`leaf_gain` without max_delta_step and path
    smoothing, else the gain of the capped and smoothed output (:func:`leaf_output_ex`)."""
    if max_delta_step <= 0.0 and path_smooth <= K_EPSILON:
        return leaf_gain(sum_g, sum_h, l1, l2)
    return gain_given_output(sum_g, sum_h, l1, l2,
                             leaf_output_ex(sum_g, sum_h, l1, l2, max_delta_step, path_smooth,
                                            count, parent_output))


@njit(error_model="numpy")
def _clamp(x, lo, hi):
    # LightGBM's CalculateSplittedLeafOutput<USE_MC>: below min -> min, else above max -> max.
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


@njit(error_model="numpy")
def split_gain(lg, lh, rg, rh, lcnt, rcnt, l1, l2, max_delta_step, path_smooth, parent_output,
               use_mc, monotone, c_min, c_max):
    """LightGBM's ``GetSplitGains``. Without monotone constraints (``use_mc`` False) the sum of
    both sides' :func:`leaf_gain_ex`. With them (``USE_MC``: any ``monotone_constraints``
    given), each side's output is clamped into the leaf's ``[c_min, c_max]``, a split whose
    outputs go against ``monotone`` (1: left <= right, -1: left >= right) scores 0, and the gain
    is that of the clamped outputs (:func:`gain_given_output`)."""
    if not use_mc:
        return (leaf_gain_ex(lg, lh, l1, l2, max_delta_step, path_smooth, lcnt, parent_output)
                + leaf_gain_ex(rg, rh, l1, l2, max_delta_step, path_smooth, rcnt, parent_output))
    lo = _clamp(leaf_output_ex(lg, lh, l1, l2, max_delta_step, path_smooth, lcnt, parent_output),
                c_min, c_max)
    ro = _clamp(leaf_output_ex(rg, rh, l1, l2, max_delta_step, path_smooth, rcnt, parent_output),
                c_min, c_max)
    if (monotone > 0 and lo > ro) or (monotone < 0 and lo < ro):
        return 0.0
    return gain_given_output(lg, lh, l1, l2, lo) + gain_given_output(rg, rh, l1, l2, ro)


@njit(error_model="numpy")
def side_output(g, h, cnt, l1, l2, max_delta_step, path_smooth, parent_output, c_min, c_max):
    """A chosen split's side output (LightGBM's ``SplitInfo::left_output`` / ``right_output``):
    :func:`leaf_output_ex` clamped into ``[c_min, c_max]`` (a no-op for the unbounded
    ``-inf, inf``)."""
    return _clamp(leaf_output_ex(g, h, l1, l2, max_delta_step, path_smooth, cnt, parent_output),
                  c_min, c_max)


def monotone_penalty_factor(depth, penalty):
    """LightGBM's ``ComputeMonotoneSplitGainPenalty`` (``monotone_constraints.hpp``): the factor
    on the gain of a split on a monotone feature of a leaf at ``depth`` (root: 0)."""
    if penalty >= depth + 1.0:
        return K_EPSILON
    if penalty <= 1.0:
        return 1.0 - penalty / 2.0 ** depth + K_EPSILON
    return 1.0 - 2.0 ** (penalty - 1.0 - depth) + K_EPSILON


@njit(error_model="numpy", inline="always")
def _round_int(x):
    """LightGBM's ``Common::RoundInt``: ``static_cast<int>(x + 0.5f)``; ``x >= 0`` here, so the
    truncation is ``floor(x + 0.5)``."""
    return np.floor(x + 0.5)


@njit(error_model="numpy", inline="always")
def _offset_start(hist, lo, n_bins, sum_g, sum_h, count, cnt_factor):
    # Scan F's start for a NaN-type feature whose most frequent bin is bin 0: LightGBM stores
    # no bin 0 (FeatureMetainfo::offset = 1) and starts the left side as the leaf minus every
    # stored bin, NaN bin included; its first threshold (bin 0) then adds nothing. Returns the
    # running (gradient, hessian, count) sums.
    acc_g = sum_g
    acc_h = sum_h - K_EPSILON
    acc_e = count
    for i in range(1, n_bins):
        h = hist[np.uint64(lo + i), 1]
        acc_g -= hist[np.uint64(lo + i), 0]
        acc_h -= h
        acc_e -= _round_int(h * cnt_factor)
    return acc_g, acc_h, acc_e


@njit(error_model="numpy", inline="always")
def _scan_plain(hist, lo, n_bins, missing_type, default_bin, reverse, include_nan_right, offset,
                sum_g, sum_h, count, cnt_factor, l1, l2, min_data, min_hess, min_gain_shift,
                margin, rand_t, res):
    # _scan without max_delta_step, path smoothing or monotone constraints (LightGBM's
    # FindBestThresholdSequentially with USE_MAX_OUTPUT, USE_SMOOTHING and USE_MC false): the
    # same sums, checks and gain arithmetic (split_gain reduces to leaf_gain(left) +
    # leaf_gain(right)), with the best kept in locals instead of res. About 4x faster per bin
    # (100 features x 255 bins: 12 -> 3 ns), measured.
    # Bins are read at unsigned indices: numba then adds no test for a negative index (41-44 ->
    # 39 us per leaf of 50 x 255 bins, measured).
    best = res[0]
    best_t = res[1]
    best_g = res[2]
    best_h = res[3]
    best_e = res[4]
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
            h = hist[np.uint64(lo + t), 1]
            acc_g += hist[np.uint64(lo + t), 0]
            acc_h += h
            acc_e += _round_int(h * cnt_factor)
            if acc_e < min_data or acc_h < min_hess:
                continue
            if count - acc_e < min_data:
                break
            lh = sum_h - acc_h
            if lh < min_hess:
                break
            if rand_t >= 0 and t - 1 != rand_t:
                continue
            lg = sum_g - acc_g
            gain = plain_split_gain(lg, lh, acc_g, acc_h, l1, l2)
            if gain > min_gain_shift and gain > best:
                best = gain
                best_t = t - 1
                best_g = lg
                best_h = lh
                best_e = count - acc_e
    else:
        acc_g = 0.0
        acc_h = K_EPSILON
        acc_e = 0.0
        if offset:
            acc_g, acc_h, acc_e = _offset_start(hist, lo, n_bins, sum_g, sum_h, count, cnt_factor)
        for t in range(0, n_bins - 1):
            if missing_type == 1 and t == default_bin:
                continue
            if not (offset and t == 0):
                h = hist[np.uint64(lo + t), 1]
                acc_g += hist[np.uint64(lo + t), 0]
                acc_h += h
                acc_e += _round_int(h * cnt_factor)
            if acc_e < min_data or acc_h < min_hess:
                continue
            if count - acc_e < min_data:
                break
            rh = sum_h - acc_h
            if rh < min_hess:
                break
            if rand_t >= 0 and t != rand_t:
                continue
            rg = sum_g - acc_g
            gain = plain_split_gain(acc_g, acc_h, rg, rh, l1, l2)
            if gain > min_gain_shift and gain > best + margin:
                best = gain
                best_t = t
                best_g = acc_g
                best_h = acc_h
                best_e = acc_e
    res[0] = best
    res[1] = best_t
    res[2] = best_g
    res[3] = best_h
    res[4] = best_e


#: The fewest bins for which a plain scan runs in phases (:func:`_scan_plain_phased`); below,
#: the one-loop :func:`_scan_plain` costs less than setting up three loops.
PHASED_SCAN_MIN_BINS = 16


@njit(error_model="numpy")
def _scan_plain_phased(hist, lo, n_bins, missing_type, default_bin, reverse, include_nan_right,
                       offset, sum_g, sum_h, count, cnt_factor, l1, l2, min_data, min_hess,
                       min_gain_shift, margin, res, acc_gs, acc_hs, acc_es, gains):
    # _scan_plain without extra_trees, in three loops over scratch arrays of n_bins slots:
    # (1) the same running sums in the same order, each stored (a skipped default bin stores a
    #     count of -inf, which fails every check);
    # (2) every candidate's gain, by the same operations as _scan_plain (a + b == b + a in IEEE
    #     arithmetic, so the sides' order does not matter), -inf where a check fails; no
    #     branch and no loop-carried value, so the compiler vectorizes its divisions;
    # (3) the best: with margin 0, the first candidate holding the largest gain, which is what
    #     the sequential "gain > best" keeps; with a margin (scan F after scan R), that
    #     sequential rule over the stored gains.
    # The checks become per-candidate masks: _scan_plain's two "break"s end the scan at the
    # first candidate that passes the first checks and fails a later one; with every hessian
    # >= 0 and cnt_factor >= 0 the running counts and hessians never decrease, so each later
    # candidate fails that check too and a mask excludes the same candidates. Returns False,
    # leaving res untouched, when a scanned hessian is negative or NaN (the caller then runs
    # _scan_plain). Measured through find_best_thresholds on 100 features x 255 bins: 3.1 ->
    # 2.4 ns per bin, the same values. A call, not inlined into the kernel: inlined it ran no
    # faster and made the kernel's compilation much longer (measured when the kernel still had
    # three scan sites: 5 -> 14 s, 9.6 s as a call).
    m = 0
    monotone = True
    acc_g = 0.0
    acc_h = K_EPSILON
    acc_e = 0.0
    top = n_bins - 1
    if reverse:
        if missing_type == 2 and not include_nan_right:
            top = n_bins - 2
        for t in range(top, 0, -1):
            if missing_type == 1 and t == default_bin:
                acc_gs[m] = 0.0
                acc_hs[m] = 0.0
                acc_es[m] = -np.inf
                m += 1
                continue
            h = hist[np.uint64(lo + t), 1]
            if not h >= 0.0:
                monotone = False
            acc_g += hist[np.uint64(lo + t), 0]
            acc_h += h
            acc_e += _round_int(h * cnt_factor)
            acc_gs[m] = acc_g
            acc_hs[m] = acc_h
            acc_es[m] = acc_e
            m += 1
    else:
        if offset:
            acc_g, acc_h, acc_e = _offset_start(hist, lo, n_bins, sum_g, sum_h, count, cnt_factor)
        for t in range(0, n_bins - 1):
            if missing_type == 1 and t == default_bin:
                acc_gs[m] = 0.0
                acc_hs[m] = 0.0
                acc_es[m] = -np.inf
                m += 1
                continue
            if not (offset and t == 0):
                h = hist[np.uint64(lo + t), 1]
                if not h >= 0.0:
                    monotone = False
                acc_g += hist[np.uint64(lo + t), 0]
                acc_h += h
                acc_e += _round_int(h * cnt_factor)
            acc_gs[m] = acc_g
            acc_hs[m] = acc_h
            acc_es[m] = acc_e
            m += 1
    if not monotone:
        return False
    if l1 > 0.0:
        for k in range(m):
            ag = acc_gs[k]
            ah = acc_hs[k]
            ae = acc_es[k]
            oh = sum_h - ah
            ok = ae >= min_data and ah >= min_hess and count - ae >= min_data and oh >= min_hess
            gain = plain_split_gain(sum_g - ag, oh, ag, ah, l1, l2)
            gains[k] = gain if ok else -np.inf
    else:
        for k in range(m):
            ag = acc_gs[k]
            ah = acc_hs[k]
            ae = acc_es[k]
            og = sum_g - ag
            oh = sum_h - ah
            ok = ae >= min_data and ah >= min_hess and count - ae >= min_data and oh >= min_hess
            gain = og * og / (oh + l2) + ag * ag / (ah + l2)
            gains[k] = gain if ok else -np.inf
    best = res[0]
    chosen = -1
    if margin == 0.0:
        # the largest gain in four independent lanes (one running maximum would make each
        # comparison wait for the last); NaN gains, never chosen, never enter
        m0 = -np.inf
        m1 = -np.inf
        m2 = -np.inf
        m3 = -np.inf
        k = 0
        while k + 4 <= m:
            g0 = gains[k]
            g1 = gains[k + 1]
            g2 = gains[k + 2]
            g3 = gains[k + 3]
            m0 = g0 if g0 > m0 else m0
            m1 = g1 if g1 > m1 else m1
            m2 = g2 if g2 > m2 else m2
            m3 = g3 if g3 > m3 else m3
            k += 4
        while k < m:
            g0 = gains[k]
            m0 = g0 if g0 > m0 else m0
            k += 1
        m0 = m1 if m1 > m0 else m0
        m2 = m3 if m3 > m2 else m2
        largest = m2 if m2 > m0 else m0
        if largest > min_gain_shift and largest > best:
            for k in range(m):
                if gains[k] == largest:
                    chosen = k
                    break
    else:
        for k in range(m):
            gain = gains[k]
            if gain > min_gain_shift and gain > best + margin:
                best = gain
                chosen = k
    if chosen >= 0:
        res[0] = gains[chosen]
        if reverse:
            res[1] = top - chosen - 1
            res[2] = sum_g - acc_gs[chosen]
            res[3] = sum_h - acc_hs[chosen]
            res[4] = count - acc_es[chosen]
        else:
            res[1] = chosen
            res[2] = acc_gs[chosen]
            res[3] = acc_hs[chosen]
            res[4] = acc_es[chosen]
    return True


@njit(error_model="numpy")
def _scan(hist, lo, n_bins, missing_type, default_bin, reverse, include_nan_right, offset,
          sum_g, sum_h, count, cnt_factor, l1, l2, min_data, min_hess, min_gain_shift, margin,
          rand_t, res, max_delta_step, path_smooth, parent_output, use_mc, monotone, c_min, c_max):
    # sum_h is the leaf's sum of hessians + 2 * kEpsilon (LightGBM's FindBestThreshold).
    # res: [gain, threshold_bin, left_g, left_h (+ kEpsilon), left_count]; updated when better
    # by > margin. Counts, checked against min_data and recorded, are LightGBM's estimates
    # (acc_e): histograms hold no per-bin counts. The true counts come from routing the rows.
    # Without leaf-output options, _scan_plain is called instead (see _scan_either).
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
            h = hist[np.uint64(lo + t), 1]
            acc_g += hist[np.uint64(lo + t), 0]
            acc_h += h
            acc_e += _round_int(h * cnt_factor)
            if acc_e < min_data or acc_h < min_hess:
                continue
            if count - acc_e < min_data:
                break
            lh = sum_h - acc_h
            if lh < min_hess:
                break
            if rand_t >= 0 and t - 1 != rand_t:
                continue  # extra_trees: only the drawn threshold (after the count checks)
            lg = sum_g - acc_g
            gain = split_gain(lg, lh, acc_g, acc_h, count - acc_e, acc_e, l1, l2,
                              max_delta_step, path_smooth, parent_output, use_mc, monotone,
                              c_min, c_max)
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
            acc_g, acc_h, acc_e = _offset_start(hist, lo, n_bins, sum_g, sum_h, count, cnt_factor)
        for t in range(0, n_bins - 1):
            if missing_type == 1 and t == default_bin:
                continue
            if not (offset and t == 0):
                h = hist[np.uint64(lo + t), 1]
                acc_g += hist[np.uint64(lo + t), 0]
                acc_h += h
                acc_e += _round_int(h * cnt_factor)
            if acc_e < min_data or acc_h < min_hess:
                continue
            if count - acc_e < min_data:
                break
            rh = sum_h - acc_h
            if rh < min_hess:
                break
            if rand_t >= 0 and t != rand_t:
                continue
            rg = sum_g - acc_g
            gain = split_gain(acc_g, acc_h, rg, rh, acc_e, count - acc_e, l1, l2,
                              max_delta_step, path_smooth, parent_output, use_mc, monotone,
                              c_min, c_max)
            if gain > min_gain_shift and gain > res[0] + margin:
                res[0] = gain
                res[1] = t
                res[2] = acc_g
                res[3] = acc_h
                res[4] = acc_e


@njit(error_model="numpy", inline="always")
def _scan_either(plain, hist, lo, n_bins, missing_type, default_bin, reverse, include_nan_right,
                 offset, sum_g, sum_h, count, cnt_factor, l1, l2, min_data, min_hess,
                 min_gain_shift, margin, rand_t, res, max_delta_step, path_smooth, parent_output,
                 use_mc, monotone, c_min, c_max, scratch):
    # _scan, with its plain case (``plain``: _scan's own test, made once per leaf) inlined into
    # the caller and the others called; a plain scan of many bins without extra_trees runs in
    # phases over ``scratch`` (4 rows of at least n_bins slots), unless a hessian is negative
    if plain:
        if (rand_t < 0 and n_bins >= PHASED_SCAN_MIN_BINS and cnt_factor >= 0.0
                and _scan_plain_phased(hist, lo, n_bins, missing_type, default_bin, reverse,
                                       include_nan_right, offset, sum_g, sum_h, count,
                                       cnt_factor, l1, l2, min_data, min_hess, min_gain_shift,
                                       margin, res, scratch[0], scratch[1], scratch[2],
                                       scratch[3])):
            return
        _scan_plain(hist, lo, n_bins, missing_type, default_bin, reverse, include_nan_right,
                    offset, sum_g, sum_h, count, cnt_factor, l1, l2, min_data, min_hess,
                    min_gain_shift, margin, rand_t, res)
    else:
        _scan(hist, lo, n_bins, missing_type, default_bin, reverse, include_nan_right, offset,
              sum_g, sum_h, count, cnt_factor, l1, l2, min_data, min_hess, min_gain_shift,
              margin, rand_t, res, max_delta_step, path_smooth, parent_output, use_mc, monotone,
              c_min, c_max)


#: The empty arrays the split search kernels get for "no monotone constraints" and "no
#: extra_trees draws" (see :func:`canonical_leaf_terms`).
_NO_MONOTONE = np.empty(0, dtype=np.int8)
_NO_RAND_STATES = np.empty(0, dtype=np.int64)


def canonical_leaf_terms(monotone, max_delta_step, path_smooth, parent_output, c_min, c_max,
                         rand_states):
    """The trailing arguments of the split search kernels (:func:`find_best_thresholds`,
    :func:`oocgbdt.kernels.quantize.find_best_thresholds_int`) in the one set of types they are
    compiled for: ``monotone`` and ``rand_states`` as arrays (empty for None), the rest as
    float64. Each other combination of argument types (None, an int, an omitted default) would
    be a compilation of its own, about 6 s each on a 2-core machine."""
    return (_NO_MONOTONE if monotone is None else monotone, float(max_delta_step),
            float(path_smooth), float(parent_output), float(c_min), float(c_max),
            _NO_RAND_STATES if rand_states is None else rand_states)


def find_best_thresholds(hist, bin_offsets, n_bins, missing_types, default_bins, most_freq_bins,
                         feature_mask, sum_g, sum_h, count, l1, l2, min_data, min_hess,
                         min_gain_to_split, out, monotone=None, max_delta_step=0.0,
                         path_smooth=0.0, parent_output=0.0, c_min=-np.inf, c_max=np.inf,
                         rand_states=None):
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
        routing the rows). With 8 columns, also the left and right outputs
        (:func:`side_output`, LightGBM's ``SplitInfo::left_output`` / ``right_output``).
    monotone : ndarray of shape (n_features,), dtype int8, or None         # IN  -1/0/1 per
        feature (``monotone_constraints``); not None turns on LightGBM's ``USE_MC`` gains
        (:func:`split_gain`) for every feature
    max_delta_step, path_smooth : float                                   # IN  LightGBM parameters
    parent_output : float                                                 # IN  the leaf's own
        output (its parent's for the smoothing of its children, ``GetParentOutput``)
    c_min, c_max : float                                                  # IN  the leaf's output
        bounds (monotone constraints, ``BasicLeafConstraints``)
    rand_states : ndarray of shape (n_features,), dtype int64, or None    # IN/OUT extra_trees
        Each feature's LightGBM ``Random`` state (``FeatureMetainfo::rand``, seeded
        ``extra_seed + inner feature index``): every searched feature with more than two bins
        draws its one candidate threshold, advancing its state in place, and is split only
        there (``FeatureHistogram::BeforeNumerical``, ``USE_RAND``). None: every threshold.

    The leaf's own gain (subtracted from every split's) is :func:`leaf_gain_ex` of its totals
    with its true row count (LightGBM's ``BeforeNumerical``); candidate sides use estimated
    counts, as in ``FindBestThresholdSequentially``.
    """
    # One compiled kernel for every call: the scalars as float64, "none" as empty arrays.
    _find_best_thresholds(
        hist, bin_offsets, n_bins, missing_types, default_bins, most_freq_bins, feature_mask,
        float(sum_g), float(sum_h), float(count), float(l1), float(l2), float(min_data),
        float(min_hess), float(min_gain_to_split), out,
        *canonical_leaf_terms(monotone, max_delta_step, path_smooth, parent_output, c_min, c_max,
                              rand_states))


@njit(error_model="numpy")
def _find_best_thresholds(hist, bin_offsets, n_bins, missing_types, default_bins,
                          most_freq_bins, feature_mask, sum_g, sum_h, count, l1, l2, min_data,
                          min_hess, min_gain_to_split, out, monotone, max_delta_step,
                          path_smooth, parent_output, c_min, c_max, states):
    """:func:`find_best_thresholds` with every argument given: ``monotone`` and ``states``
    are arrays (empty: no monotone constraints, no extra_trees draws), the scalars float64."""
    if not sum_h + l2 > 0.0:
        # Every hessian of the leaf is 0 (e.g. softmax probabilities that underflowed in
        # float32): LightGBM's gains are NaN and never chosen, so the leaf has no split.
        for f in range(n_bins.shape[0]):
            out[f, 0] = -np.inf
            out[f, 1:] = 0.0
            if feature_mask[f] and n_bins[f] > 1:
                _rand_threshold(states, f, n_bins[f])  # LightGBM still draws
        return
    sum_h2 = sum_h + 2.0 * K_EPSILON
    cnt_factor = count / sum_h2
    parent_gain = leaf_gain_ex(sum_g, sum_h2, l1, l2, max_delta_step, path_smooth, count,
                               parent_output)
    min_gain_shift = parent_gain + min_gain_to_split
    use_mc = monotone.shape[0] > 0
    plain = not use_mc and max_delta_step <= 0.0 and path_smooth <= K_EPSILON
    res = np.empty(5)
    widest = 0
    for f in range(n_bins.shape[0]):
        widest = max(widest, n_bins[f])
    width = widest if plain and widest >= PHASED_SCAN_MIN_BINS else 0
    scratch = (np.empty(width), np.empty(width), np.empty(width), np.empty(width))
    for f in range(n_bins.shape[0]):
        out[f, 0] = -np.inf
        for j in range(1, out.shape[1]):
            out[f, j] = 0.0
        nb = n_bins[f]
        if not feature_mask[f] or nb <= 1:
            continue
        lo = bin_offsets[f]
        mt = missing_types[f]
        mono = 0
        if use_mc:
            mono = monotone[f]
        rand_t = _rand_threshold(states, f, nb)
        if plain and nb == 2 and mt == 0:
            # One candidate (scan R's only step: bin 1 right, threshold bin 0), written out
            # with _scan_plain's operations and the general path's outputs (the same bits);
            # extra_trees' draw is that threshold too. A one-hot column's search: 34 -> 12 ns
            # per feature (1,205 features, measured).
            h = hist[np.uint64(lo + 1), 1]
            rg = hist[np.uint64(lo + 1), 0]
            rh = K_EPSILON + h
            re = _round_int(h * cnt_factor)
            lh = sum_h2 - rh
            if (re < min_data or rh < min_hess or count - re < min_data or lh < min_hess):
                continue
            lg = sum_g - rg
            gain = plain_split_gain(lg, lh, rg, rh, l1, l2)
            if not gain > min_gain_shift:
                continue
            out[f, 0] = gain - parent_gain
            out[f, 1] = 0.0
            out[f, 2] = 1.0
            out[f, 3] = lg
            out[f, 4] = lh
            out[f, 5] = count - re
            if out.shape[1] >= 8:
                out[f, 6] = side_output(lg, lh, count - re, l1, l2, max_delta_step,
                                        path_smooth, parent_output, c_min, c_max)
                out[f, 7] = side_output(sum_g - lg, sum_h2 - lh, count - (count - re), l1,
                                        l2, max_delta_step, path_smooth, parent_output,
                                        c_min, c_max)
            continue
        res[0] = -np.inf
        # Scan R (decreasing thresholds, missing values left), then, for a feature with
        # missing values and more than two bins, scan F (increasing, missing values right).
        # A NaN feature of at most two bins has one partition, scanned once with its NaN bin
        # on the right. One call site, whose flags are run-time values: numba would compile
        # the scans called inside once per combination of literal flags.
        nan_alone = mt == 2 and nb <= 2
        n_scans = 2 if (not nan_alone and mt != 0 and nb > 2) else 1
        default_left = 0.0 if nan_alone else 1.0
        best_r = -np.inf
        for s in range(n_scans):
            reverse = s == 0
            margin = 0.0
            offset = False
            if not reverse:
                best_r = res[0]
                # Scan F must beat scan R by more than rounding: when the missing bin is
                # empty, and for a threshold with the missing bin alone on one side, both
                # scans see the same partition.
                margin = 1e-12 * abs(best_r) if best_r > -np.inf else 0.0
                offset = mt == 2 and most_freq_bins[f] == 0
            _scan_either(plain, hist, lo, nb, mt, default_bins[f], reverse, nan_alone, offset,
                         sum_g, sum_h2, count, cnt_factor, l1, l2, min_data, min_hess,
                         min_gain_shift, margin, rand_t, res, max_delta_step, path_smooth,
                         parent_output, use_mc, mono, c_min, c_max, scratch)
            if not reverse and res[0] > best_r:
                default_left = 0.0
        if res[0] > -np.inf:
            out[f, 0] = res[0] - parent_gain
            out[f, 1] = res[1]
            out[f, 2] = default_left
            out[f, 3] = res[2]
            out[f, 4] = res[3]
            out[f, 5] = res[4]
            if out.shape[1] >= 8:
                out[f, 6] = side_output(res[2], res[3], res[4], l1, l2, max_delta_step,
                                        path_smooth, parent_output, c_min, c_max)
                out[f, 7] = side_output(sum_g - res[2], sum_h2 - res[3], count - res[4], l1, l2,
                                        max_delta_step, path_smooth, parent_output, c_min,
                                        c_max)


def find_best_thresholds_naive(hist, bin_offsets, n_bins, missing_types, default_bins,
                               most_freq_bins, feature_mask, sum_g, sum_h, count, l1, l2,
                               min_data, min_hess, min_gain_to_split, out, monotone=None,
                               max_delta_step=0.0, path_smooth=0.0, parent_output=0.0,
                               c_min=-np.inf, c_max=np.inf, rand_states=None):
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

    ``rand_states`` (extra_trees): each searched feature draws its threshold with
    :func:`lcg_next_int_naive` and only candidates at that threshold are kept.
    Leaf outputs and gains with ``max_delta_step``, ``path_smooth`` and monotone bounds are
    written out here from LightGBM's definitions (``feature_histogram.hpp``): the output
    ``-T(G) / (H + l2)``, capped, then smoothed towards ``parent_output`` with weight
    ``n / path_smooth``, then (``monotone`` given) clamped into ``[c_min, c_max]``; the gain of
    an output ``w`` is ``-(2 T(G) w + (H + l2) w^2)``, and a split whose clamped outputs go
    against its feature's direction scores 0.
    """
    def output_of(g, h, n):
        w = -np.sign(g) * max(0.0, abs(g) - l1) / (h + l2)
        if max_delta_step > 0 and abs(w) > max_delta_step:
            w = np.sign(w) * max_delta_step
        if path_smooth > 1e-15:
            k = n / path_smooth
            w = w * k / (k + 1) + parent_output / (k + 1)
        return w

    def gain_at(g, h, w):
        t = np.sign(g) * max(0.0, abs(g) - l1)
        return -(2 * t * w + (h + l2) * w * w)

    def gain_of(g, h, n=0.0):
        if max_delta_step <= 0 and path_smooth <= 1e-15:
            t = np.sign(g) * max(0.0, abs(g) - l1)
            return t * t / (h + l2)
        return gain_at(g, h, output_of(g, h, n))

    def side_out(g, h, n):
        return min(max(output_of(g, h, n), c_min), c_max)

    def pair_gain(lg, lh, rg, rh, ln, rn, mono):
        if monotone is None:
            return gain_of(lg, lh, ln) + gain_of(rg, rh, rn)
        wl, wr = side_out(lg, lh, ln), side_out(rg, rh, rn)
        if (mono > 0 and wl > wr) or (mono < 0 and wl < wr):
            return 0.0
        return gain_at(lg, lh, wl) + gain_at(rg, rh, wr)

    sum_h2 = sum_h + 2e-15
    parent_gain = gain_of(sum_g, sum_h2, count) if sum_h + l2 > 0 else np.nan
    cnt_factor = count / sum_h2
    for f in range(len(n_bins)):
        out[f, 0] = -np.inf
        out[f, 1:] = 0.0
        nb = int(n_bins[f])
        if not feature_mask[f] or nb <= 1:
            continue
        rand_t = -1
        if rand_states is not None:
            rand_t = lcg_next_int_naive(rand_states[f:f + 1], 0, nb - 2) if nb > 2 else 0
        if not sum_h + l2 > 0:
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
        if rand_t >= 0:
            candidates = [c for c in candidates if c[0] == rand_t]
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
            mono = 0 if monotone is None else int(monotone[f])
            # LightGBM's accumulated side starts at kEpsilon: the left hessian with it
            lh_e, rh_e = lh + 1e-15, sum_h2 - lh - 1e-15
            gain = pair_gain(lg, lh_e, rg, rh_e, le, count - le, mono)
            if gain > parent_gain + min_gain_to_split and (best_rec is None or gain > best + 1e-12 * abs(best)):
                best, best_rec = gain, (t, float(missing_left), lg, lh, le)
                outs = (side_out(lg, lh_e, le), side_out(rg, rh_e, count - le))
        if best_rec is not None:
            out[f, 0] = best - parent_gain
            out[f, 1:6] = best_rec
            out[f, 4] += 1e-15  # kEpsilon included, as the kernel
            if out.shape[1] >= 8:
                out[f, 6:8] = outs
