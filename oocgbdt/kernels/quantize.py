"""This module contains the kernels of quantized-gradient training (``use_quantized_grad``):
gradient discretization, the integer histogram and the split search on integer sums.

Source: LightGBM 4.x, ``src/treelearner/gradient_discretizer.cpp``
(``GradientDiscretizer::DiscretizeGradients``), ``feature_histogram.hpp``
(``FindBestThresholdSequentiallyInt``, ``BeforeNumericalInt``) and
``serial_tree_learner.cpp``; the method is Shi et al., "Quantized Training of Gradient Boosting
Decision Trees", NeurIPS 2022.

Data flow position: once per tree, after the round's gradients, every partition discretizes its
rows' gradients and hessians with scales shared by all partitions (from the global maxima of
``|g|`` and ``|h|``); histogram passes then add integers, and the split search converts integer
sums to float sums with the scales, as LightGBM does.

Packed layout. A row's discretized pair is one int64, ``g * 2**32 + h`` (``g`` the signed
integer gradient, ``h >= 0`` the integer hessian), LightGBM's 32+32 packed entry
(``int_sum_gradient_and_hessian``). Sums of packed values are the packed sums (two's complement
arithmetic: ``h`` never borrows while every hessian sum stays below ``2**32`` and every gradient
sum within ``[-2**31, 2**31)``, which the caller guarantees by limiting ``n_rows *
num_grad_quant_bins``); ``g = packed >> 32`` (arithmetic shift), ``h = packed & (2**32 - 1)``.

Integer histograms are int64 arrays of shape ``(n_hist_bins, 1)``: the float histogram's rows
(count row 0, then each column's bins, see :mod:`oocgbdt.kernels.histogram`), one packed cell
per bin; the count row holds the row count (as a hessian field, gradient 0). A cell is 8 bytes
instead of 16 and one integer add instead of a two-lane float add. LightGBM also uses 16+16
cells in an int32 for leaves with few rows (``SetNumBitsInHistogramBin``); here every histogram
call adds runs of rows into such narrow cells and then each narrow cell into its 64-bit one
(:func:`build_histogram_int`), whatever the leaf's size. The sums are the same integers either
way, so this affects speed only; histograms leave the kernel in the 32+32 layout.

Integer sums are exact, so adding partitions' histograms in any order gives the same
histogram, bit for bit, and a sibling's histogram as parent minus child is exact too.
"""
import numpy as np

from oocgbdt.kernels._jit import (PREFETCH_ROWS, bin_bits, load_word, njit, prefetch,
                                  whole_words, word_bin)
from oocgbdt.kernels.splitting import (K_EPSILON, _rand_threshold, canonical_leaf_terms,
                                       leaf_gain_ex, plain_split_gain, side_output, split_gain)

__all__ = ["QUANT_DTYPE", "HESS_MASK", "gradient_max_abs", "quant_scales", "discretize",
           "discretize_naive", "build_histogram_int", "build_histogram_int_naive",
           "unpack", "find_best_thresholds_int", "find_best_thresholds_int_naive",
           "leaf_sums"]

#: dtype of packed discretized pairs and of integer histogram cells.
QUANT_DTYPE = np.int64
#: Mask of the hessian field of a packed value.
HESS_MASK = 0xFFFFFFFF


def unpack(packed):
    """``(g, h)`` integer fields of packed values (Python ints or int64 arrays)."""
    if isinstance(packed, np.ndarray):
        return packed >> 32, packed & HESS_MASK
    packed = int(packed)
    return packed >> 32, packed & HESS_MASK


@njit
def gradient_max_abs(gradients, hessians):
    """``(max |g|, max |h|)`` over the rows, as float64 (0.0 for no rows).

    Parameters
    ----------
    gradients, hessians : ndarray of shape (n_rows,), dtype float32
    """
    mg = 0.0
    mh = 0.0
    for i in range(gradients.shape[0]):
        a = abs(np.float64(gradients[i]))
        b = abs(np.float64(hessians[i]))
        if a > mg:
            mg = a
        if b > mh:
            mh = b
    return mg, mh


def quant_scales(max_gradient, max_hessian, num_grad_quant_bins, constant_hessian):
    """LightGBM's ``DiscretizeGradients`` scales: ``(grad_scale, hess_scale, inverse_grad_scale,
    inverse_hess_scale)``, float64.

    ``grad_scale = max|g| / (bins // 2)``; ``hess_scale = max|h|`` for a constant hessian (every
    integer hessian is then 1), else ``max|h| / bins``; the inverses are ``1 / scale``.
    """
    gs = float(max_gradient) / float(int(num_grad_quant_bins) // 2)
    hs = float(max_hessian) if constant_hessian else float(max_hessian) / float(num_grad_quant_bins)
    with np.errstate(divide="ignore"):
        return gs, hs, float(np.float64(1.0) / gs), float(np.float64(1.0) / hs)


@njit
def _trunc8(x):
    # C++ static_cast<int8_t>(double): truncation toward zero (values here fit in int8).
    return np.int64(x)


@njit
def discretize(gradients, hessians, inv_grad_scale, inv_hess_scale, constant_hessian,
               rand_g, rand_h, out):
    """Discretize one partition's rows into packed pairs (LightGBM's ``DiscretizeGradients``).

    ``g_int = trunc(g / grad_scale + u)`` for ``g >= 0``, ``trunc(g / grad_scale - u)`` below,
    ``h_int = 1`` for a constant hessian, else ``trunc(h / hess_scale + v)``; ``u, v`` are the
    row's uniforms in [0, 1) (stochastic rounding) or 0.5 (round to nearest), ``trunc``
    toward zero as C++'s ``static_cast<int8_t>``.

    Parameters
    ----------
    gradients, hessians : ndarray of shape (n_rows,), dtype float32           # IN
    inv_grad_scale, inv_hess_scale : float                                    # IN  1 / scale
    constant_hessian : bool                                                   # IN
    rand_g, rand_h : ndarray of shape (n_rows,), dtype float64, or of shape (0,)  # IN
        The rows' uniforms; empty: round to nearest (``stochastic_rounding=False``).
    out : ndarray of shape (n_rows,), dtype int64                             # OUT packed pairs
    """
    stochastic = rand_g.shape[0] > 0
    for i in range(gradients.shape[0]):
        g = np.float64(gradients[i])
        u = rand_g[i] if stochastic else 0.5
        if g >= 0.0:
            gi = _trunc8(g * inv_grad_scale + u)
        else:
            gi = _trunc8(g * inv_grad_scale - u)
        if constant_hessian:
            hi = np.int64(1)
        else:
            v = rand_h[i] if stochastic else 0.5
            hi = _trunc8(np.float64(hessians[i]) * inv_hess_scale + v)
        out[i] = (gi << 32) + hi


def discretize_naive(gradients, hessians, inv_grad_scale, inv_hess_scale, constant_hessian,
                     rand_g, rand_h, out):
    """NumPy twin of :func:`discretize`, used by tests."""
    g = gradients.astype(np.float64)
    u = rand_g if rand_g.shape[0] else np.full(g.shape, 0.5)
    gi = np.trunc(np.where(g >= 0, g * inv_grad_scale + u, g * inv_grad_scale - u))
    if constant_hessian:
        hi = np.ones(g.shape)
    else:
        v = rand_h if rand_h.shape[0] else np.full(g.shape, 0.5)
        hi = np.trunc(hessians.astype(np.float64) * inv_hess_scale + v)
    out[:] = gi.astype(np.int64) * (2 ** 32) + hi.astype(np.int64)


#: The largest sums the two 16-bit fields of a narrow cell hold: the signed gradient field's
#: magnitude and the unsigned hessian field (LightGBM's 16+16 ``int32`` histogram entries).
NARROW_GRADIENT_MAX = 2 ** 15 - 1
NARROW_HESSIAN_MAX = 2 ** 16 - 1
#: A run of rows is added into narrow cells only when it adds at least this many cells per bin
#: of the columns built (else straight into the 64-bit cells): each run ends with one pass
#: over those bins (:func:`_widen`).
NARROW_MIN_CELLS_PER_BIN = 8


@njit
def build_histogram_int(X_binned, bin_offsets, column_indices, packed, row_indices, out,
                        add_count=True):
    """Integer twin of :func:`oocgbdt.kernels.histogram.build_histogram`: add the packed pairs
    of rows ``row_indices`` into ``out`` for the listed columns, and (``add_count``) their
    number into the count row ``out[0, 0]``; a pass built by column blocks adds the count with
    one block only. :func:`build_histogram_int_runs` with LightGBM's 16-bit field limits.

    Parameters
    ----------
    X_binned : ndarray of shape (n_rows, n_columns), dtype uint8 or uint16   # IN
    bin_offsets : ndarray of shape (n_columns + 1,), dtype int64, >= 1       # IN
    column_indices : ndarray of shape (n_built,), dtype int64                # IN  columns to build
    packed : ndarray of shape (n_rows,), dtype int64                         # IN  (:func:`discretize`)
    row_indices : ndarray of shape (n_selected,), dtype int32, or None       # IN  None: every
        row of ``X_binned`` in order
    out : ndarray of shape (n_hist_bins, 1), dtype int64, C-contiguous       # IN and OUT (added to)
    add_count : bool                                                         # IN
    """
    build_histogram_int_runs(X_binned, bin_offsets, column_indices, packed, row_indices, out,
                             add_count, NARROW_GRADIENT_MAX, NARROW_HESSIAN_MAX,
                             NARROW_MIN_CELLS_PER_BIN)


@njit
def build_histogram_int_runs(X_binned, bin_offsets, column_indices, packed, row_indices, out,
                             add_count, gradient_max, hessian_max, min_cells_per_bin):
    """:func:`build_histogram_int` with the narrow cells' limits as arguments (tests give
    small ones to reach many runs on few rows; limits never change the result).

    Rows are added in runs into narrow cells first: an int32 per bin holding a 16-bit gradient
    sum and a 16-bit hessian sum (``g * 2**16 + h``, LightGBM's 16+16 entries, which it uses
    for leaves of few rows, ``GradientDiscretizer::SetNumBitsInHistogramBin``). A run is the
    longest stretch of the row list whose sums of ``|g|`` and of ``h`` stay within
    ``gradient_max`` and ``hessian_max`` (so no bin's field can overflow, whatever the bins):
    at least 10,922 rows with 4 quantization levels, whose rounding keeps ``|g| <= 3`` and
    ``h <= 5``. At its end each narrow cell is added to its 64-bit cell and cleared. Integer
    sums are exact, so ``out`` gets the same values as adding each row's packed pair to it
    directly; a narrow cell is half the bytes, and on 131,072 x 100 bins the additions took
    0.68 instead of 0.89 ns per cell (one thread). Runs of fewer
    than ``min_cells_per_bin`` cells per bin of the listed columns (a small leaf, or many
    quantization levels) are added to ``out`` directly.

    Parameters
    ----------
    X_binned, bin_offsets, column_indices, packed, row_indices, out, add_count
        As :func:`build_histogram_int`.
    gradient_max, hessian_max : int                                          # IN  the most a
        narrow cell's gradient field (magnitude) and hessian field may hold: at most
        :data:`NARROW_GRADIENT_MAX` and :data:`NARROW_HESSIAN_MAX`
    min_cells_per_bin : int                                                  # IN  the shortest
        run added through narrow cells, in cells per bin of the listed columns
        (:data:`NARROW_MIN_CELLS_PER_BIN` in :func:`build_histogram_int`)

    Cells are indexed by an unsigned integer: numba then adds no test for a negative index
    (which would count from the end), 0.71 -> 0.61 ns per cell measured (131k x 100, one
    thread); the float kernel's paired add (:func:`~oocgbdt.kernels._jit.add_pair`) has none.
    """
    flat = out.reshape(-1)
    n_built = column_indices.shape[0]
    if row_indices is None:
        n_rows = X_binned.shape[0]
    else:
        n_rows = row_indices.shape[0]
    if add_count:
        flat[0] += n_rows
    if n_built == 0 or n_rows == 0:
        return
    c0 = column_indices[0]
    consecutive = True  # every column, or a block of consecutive ones: contiguous row slices
    lo = bin_offsets[c0]
    hi = bin_offsets[c0 + 1]
    for k in range(n_built):
        c = column_indices[k]
        if c != c0 + k:
            consecutive = False
        lo = min(lo, bin_offsets[c])
        hi = max(hi, bin_offsets[c + 1])
    narrow = np.zeros(0, dtype=np.int32)
    start = 0
    while start < n_rows:
        # the longest run from ``start`` whose |g| and h sums fit the narrow fields
        sum_g = 0
        sum_h = 0
        stop = start
        while stop < n_rows:
            if row_indices is None:
                p = packed[stop]
            else:
                if stop + PREFETCH_ROWS < n_rows:
                    prefetch(packed, row_indices[stop + PREFETCH_ROWS])
                p = packed[row_indices[stop]]
            g = p >> 32
            h = p & HESS_MASK
            sum_g += g if g >= 0 else -g
            sum_h += h
            if sum_g > gradient_max or sum_h > hessian_max:
                break
            stop += 1
        if stop == start or (stop - start) * n_built < min_cells_per_bin * (hi - lo):
            # too few rows for the narrow cells to pay for widening them (or one row beyond
            # their limits): the rest directly
            _add_rows_int(X_binned, bin_offsets, column_indices, consecutive, packed,
                          row_indices, start, n_rows, flat, 0, False)
            return
        if narrow.shape[0] == 0:
            narrow = np.zeros(hi - lo, dtype=np.int32)
        _add_rows_int(X_binned, bin_offsets, column_indices, consecutive, packed, row_indices,
                      start, stop, narrow, lo, True)
        _widen(narrow, flat, lo, bin_offsets, column_indices)
        start = stop


@njit
def _add_rows_int(X_binned, bin_offsets, column_indices, consecutive, packed, row_indices,
                  start, stop, cells, base, repack):
    # Add rows [start, stop) of the row list (of X_binned, when None) into ``cells``, the
    # cell of bin b at b - base: each row's packed pair (64-bit cells), or (``repack``) its
    # 16+16 repacking (int32 cells).
    n_rows = X_binned.shape[0] if row_indices is None else row_indices.shape[0]
    n_built = column_indices.shape[0]
    c0 = column_indices[0]
    last = column_indices[n_built - 1]
    c1 = c0 + n_built
    # a run of consecutive columns: each row's slice read without the column indirection,
    # looped from 0 over views (faster than from c0), its bins a word at a time where the
    # row's columns are contiguous (as :func:`~oocgbdt.kernels.histogram.add_consecutive`)
    offsets = bin_offsets[c0:c1] - base
    block = X_binned[:, c0:c1]
    bits = bin_bits(X_binned)
    per_word = 64 // bits
    n_words = whole_words(X_binned, n_built, consecutive)
    tail = n_words * per_word
    tail_offsets = offsets[tail:]
    tail_block = block[:, tail:]
    n_tail = n_built - tail
    for i in range(start, stop):
        if row_indices is None:  # every row in order: no index, nothing to prefetch
            r = np.uint64(i)
        else:
            if i + PREFETCH_ROWS < n_rows:
                ahead = row_indices[i + PREFETCH_ROWS]
                prefetch(X_binned, (ahead, c0))
                prefetch(X_binned, (ahead, last))
                prefetch(packed, ahead)
            r = np.uint64(row_indices[i])
        v = packed[r]
        if repack:
            v = ((v >> 32) << 16) + (v & HESS_MASK)
        if consecutive:
            for w in range(n_words):
                word = load_word(block, (r, w * per_word))
                for k in range(per_word):
                    cells[np.uint64(offsets[w * per_word + k] + word_bin(word, k, bits))] += v
            row = tail_block[r]
            for j in range(n_tail):
                cells[np.uint64(tail_offsets[j] + row[j])] += v
        else:
            for k in range(n_built):
                j = column_indices[k]
                cells[np.uint64(bin_offsets[j] - base + X_binned[r, j])] += v


@njit
def _widen(narrow, flat, lo, bin_offsets, column_indices):
    # Add each narrow cell (g * 2**16 + h, both fields within 16 bits) to its 64-bit cell as
    # g * 2**32 + h, and clear it.
    for k in range(column_indices.shape[0]):
        c = column_indices[k]
        for b in range(bin_offsets[c], bin_offsets[c + 1]):
            v = np.int64(narrow[b - lo])
            if v != 0:
                flat[b] += ((v >> 16) << 32) + (v & 0xFFFF)
                narrow[b - lo] = 0


def build_histogram_int_naive(X_binned, bin_offsets, column_indices, packed, row_indices, out):
    """NumPy twin of :func:`build_histogram_int` (``np.add.at`` of the unpacked fields, then
    packed again), used by tests."""
    rows = np.asarray(row_indices)
    cols = np.asarray(column_indices, dtype=np.int64)
    g, h = unpack(out[:, 0].copy())
    h[0] += rows.size
    if rows.size and cols.size:
        flat = (X_binned[np.ix_(rows, cols)].astype(np.int64) + bin_offsets[cols][None, :]).ravel()
        pg, ph = unpack(packed[rows])
        np.add.at(g, flat, np.repeat(pg, cols.size))
        np.add.at(h, flat, np.repeat(ph, cols.size))
    out[:, 0] = g * (2 ** 32) + h


@njit
def leaf_sums(packed, row_indices):
    """Packed sum over rows ``row_indices`` (a leaf's integer totals, LightGBM's
    ``LeafSplits::Init`` on int gradients)."""
    s = np.int64(0)
    for i in range(row_indices.shape[0]):
        s += packed[row_indices[i]]
    return s


@njit(error_model="numpy")
def _round_int(x):
    # LightGBM's Common::RoundInt on a non-negative double: static_cast<int>(x + 0.5).
    return np.floor(x + 0.5)


@njit(error_model="numpy", inline="always")
def _side_gains(lg, lh, rg, rh, left_count, right_count, l1, l2, max_delta_step, path_smooth,
                parent_output, use_mc, monotone, c_min, c_max, plain):
    # split_gain of the two sides with kEpsilon added to each hessian; inline when plain.
    lh = lh + K_EPSILON
    rh = rh + K_EPSILON
    if plain:
        return plain_split_gain(lg, lh, rg, rh, l1, l2)
    return split_gain(lg, lh, rg, rh, left_count, right_count, l1, l2, max_delta_step,
                      path_smooth, parent_output, use_mc, monotone, c_min, c_max)


@njit(error_model="numpy")
def _scan_int(flat, lo, n_bins, missing_type, default_bin, reverse, skip_default, na_as_missing,
              total, grad_scale, hess_scale, count, cnt_factor, l1, l2, min_data, min_hess,
              min_gain_shift, rand_t, max_delta_step, path_smooth, parent_output, use_mc,
              monotone, c_min, c_max, best_in, res, plain):
    # One FindBestThresholdSequentiallyInt (32+32 accumulators). Bin 0 is always stored here:
    # LightGBM's NaN-type scan F with offset 1 starts its left side as the leaf minus every
    # stored bin, which with integer sums is bin 0 exactly. best_in is LightGBM's output->gain
    # from an earlier scan (-inf: none). Returns (best gain, its packed left sum, whether it
    # replaces best_in); res[0] gets its threshold bin. ``plain`` (no monotone constraints,
    # max_delta_step or path smoothing): the gain computed inline, as split_gain reduces to
    # then (leaf_gain of each side; T(G) = G exactly when lambda_l1 = 0), the same values.
    best_gain = -np.inf
    best_left = np.int64(0)
    best_t = -1
    splittable = False
    if reverse:
        acc = np.int64(0)
        top = n_bins - 1 - (1 if na_as_missing else 0)
        for t in range(top, 0, -1):
            if skip_default and t == default_bin:
                continue
            acc += flat[np.uint64(lo + t)]
            rh_i = acc & HESS_MASK
            right_count = _round_int(rh_i * cnt_factor)
            rh = rh_i * hess_scale
            if right_count < min_data or rh < min_hess:
                continue
            left_count = count - right_count
            if left_count < min_data:
                break
            left = total - acc
            lh = (left & HESS_MASK) * hess_scale
            if lh < min_hess:
                break
            rg = (acc >> 32) * grad_scale
            lg = (left >> 32) * grad_scale
            if rand_t >= 0 and t - 1 != rand_t:
                continue
            gain = _side_gains(lg, lh, rg, rh, left_count, right_count, l1, l2,
                               max_delta_step, path_smooth, parent_output, use_mc, monotone,
                               c_min, c_max, plain)
            if gain <= min_gain_shift:
                continue
            splittable = True
            if gain > best_gain:
                best_left = left
                best_t = t - 1
                best_gain = gain
    else:
        acc = np.int64(0)
        for t in range(0, n_bins - 1):
            if skip_default and t == default_bin:
                continue
            acc += flat[np.uint64(lo + t)]
            lh_i = acc & HESS_MASK
            left_count = _round_int(lh_i * cnt_factor)
            lh = lh_i * hess_scale
            if left_count < min_data or lh < min_hess:
                continue
            right_count = count - left_count
            if right_count < min_data:
                break
            right = total - acc
            rh = (right & HESS_MASK) * hess_scale
            if rh < min_hess:
                break
            rg = (right >> 32) * grad_scale
            lg = (acc >> 32) * grad_scale
            if rand_t >= 0 and t != rand_t:
                continue
            gain = _side_gains(lg, lh, rg, rh, left_count, right_count, l1, l2,
                               max_delta_step, path_smooth, parent_output, use_mc, monotone,
                               c_min, c_max, plain)
            if gain <= min_gain_shift:
                continue
            splittable = True
            if gain > best_gain:
                best_left = acc
                best_t = t
                best_gain = gain
    # LightGBM: is_splittable_ && best_gain > output->gain + min_gain_shift
    if splittable and best_gain > best_in + min_gain_shift:
        res[0] = best_t
        return best_gain, best_left, True
    return best_gain, best_left, False


def find_best_thresholds_int(hist, bin_offsets, n_bins, missing_types, default_bins,
                             feature_mask, total, grad_scale, hess_scale, count, l1, l2,
                             min_data, min_hess, min_gain_to_split, out, out_left,
                             monotone=None, max_delta_step=0.0, path_smooth=0.0,
                             parent_output=0.0, c_min=-np.inf, c_max=np.inf, rand_states=None):
    """Best split of every numerical feature of one leaf from its integer histogram
    (LightGBM's ``FindBestThresholdInt``: ``BeforeNumericalInt``, then
    ``FindBestThresholdSequentiallyInt`` for the scans of the feature's missing type).

    Arithmetic as LightGBM's: sides are accumulated as packed integers; a side's sums are
    ``int_g * grad_scale`` and ``int_h * hess_scale``; its row count is the estimate
    ``RoundInt(int_h * cnt_factor)`` with ``cnt_factor = count / int_h(leaf)`` (from the
    cumulative integer hessian, not per bin); gains add ``kEpsilon`` to each side's hessian; the
    leaf's own gain uses its sums without ``kEpsilon``; scan F replaces scan R's split only when
    ``best_F > (best_R - min_gain_shift) + min_gain_shift`` (no rounding margin is needed: a
    partition both scans see has the same integer sums, so the same gain).

    Parameters
    ----------
    hist : ndarray of shape (n_total_bins, 1), dtype int64                 # IN  packed cells
    bin_offsets, n_bins, missing_types, default_bins, feature_mask         # IN  as
        :func:`oocgbdt.kernels.splitting.find_best_thresholds`
    total : int                                                           # IN  the leaf's packed sum
    grad_scale, hess_scale : float                                        # IN  the tree's scales
    count : float                                                         # IN  the leaf's true rows
    l1, l2, min_data, min_hess, min_gain_to_split : float                 # IN
    out : ndarray of shape (n_features, 8), dtype float64                 # OUT per feature: gain
        (best minus the leaf's gain; ``-inf``: none), threshold bin, default_left, left sum of
        gradients, left sum of hessians (no kEpsilon), left count estimate, left and right
        outputs
    out_left : ndarray of shape (n_features,), dtype int64                # OUT best left packed sum
    monotone, max_delta_step, path_smooth, parent_output, c_min, c_max, rand_states
        As :func:`oocgbdt.kernels.splitting.find_best_thresholds`.
    """
    # One compiled kernel for every call (as find_best_thresholds): the scalars as float64,
    # "none" as empty arrays.
    _find_best_thresholds_int(
        hist, bin_offsets, n_bins, missing_types, default_bins, feature_mask, int(total),
        float(grad_scale), float(hess_scale), float(count), float(l1), float(l2),
        float(min_data), float(min_hess), float(min_gain_to_split), out, out_left,
        *canonical_leaf_terms(monotone, max_delta_step, path_smooth, parent_output, c_min, c_max,
                              rand_states))


@njit(error_model="numpy")
def _find_best_thresholds_int(hist, bin_offsets, n_bins, missing_types, default_bins,
                              feature_mask, total, grad_scale, hess_scale, count, l1, l2,
                              min_data, min_hess, min_gain_to_split, out, out_left, monotone,
                              max_delta_step, path_smooth, parent_output, c_min, c_max, states):
    """:func:`find_best_thresholds_int` with every argument given: ``monotone`` and
    ``states`` arrays (empty: none), the scalars float64 (``total`` int64)."""
    flat = hist.reshape(-1)
    total = np.int64(total)
    sum_g = (total >> 32) * grad_scale
    int_h = total & HESS_MASK
    sum_h = int_h * hess_scale
    cnt_factor = count / np.float64(int_h)
    parent_gain = leaf_gain_ex(sum_g, sum_h, l1, l2, max_delta_step, path_smooth, count,
                               parent_output)
    min_gain_shift = parent_gain + min_gain_to_split
    use_mc = monotone.shape[0] > 0
    plain = not use_mc and max_delta_step <= 0.0 and path_smooth <= K_EPSILON
    res = np.zeros(1, dtype=np.int64)
    for f in range(n_bins.shape[0]):
        out[f, 0] = -np.inf
        out[f, 1:] = 0.0
        out_left[f] = 0
        nb = n_bins[f]
        if not feature_mask[f] or nb <= 1:
            continue
        lo = bin_offsets[f]
        mt = missing_types[f]
        mono = 0
        if use_mc:
            mono = monotone[f]
        rand_t = _rand_threshold(states, f, nb)
        found = False
        thr = 0
        best = -np.inf
        best_gain_shifted = -np.inf  # LightGBM's output->gain (kMinScore before any scan)
        best_left = np.int64(0)
        default_left = 1.0
        # Scan R, then, for a feature with missing values and more than two bins, scan F. One
        # call site, whose flags are run-time values: numba would compile _scan_int once per
        # combination of literal flags.
        two_scans = nb > 2 and mt != 0
        skip = two_scans and mt == 1  # Zero: the default bin is missing; NaN: the NaN bin is
        na = two_scans and mt == 2
        for s in range(2 if two_scans else 1):
            reverse = s == 0
            g, left, ok = _scan_int(flat, lo, nb, mt, default_bins[f], reverse, skip, na, total,
                                    grad_scale, hess_scale, count, cnt_factor, l1, l2, min_data,
                                    min_hess, min_gain_shift, rand_t, max_delta_step,
                                    path_smooth, parent_output, use_mc, mono, c_min, c_max,
                                    best_gain_shifted, res, plain)
            if ok:
                found, best, best_left, thr = True, g, left, res[0]
                best_gain_shifted = g - min_gain_shift
                default_left = 1.0 if reverse else 0.0
        if not two_scans:
            # LightGBM: a NaN-type feature with <= 2 bins goes right by default
            default_left = 0.0 if mt == 2 else 1.0
        if found:
            right = total - best_left
            lg = (best_left >> 32) * grad_scale
            lh = (best_left & HESS_MASK) * hess_scale
            rg = (right >> 32) * grad_scale
            rh = (right & HESS_MASK) * hess_scale
            lc = _round_int((best_left & HESS_MASK) * cnt_factor)
            rc = _round_int((right & HESS_MASK) * cnt_factor)
            out[f, 0] = best - parent_gain
            out[f, 1] = thr
            out[f, 2] = default_left
            out[f, 3] = lg
            out[f, 4] = lh
            out[f, 5] = lc
            out[f, 6] = side_output(lg, lh, lc, l1, l2, max_delta_step, path_smooth,
                                    parent_output, c_min, c_max)
            out[f, 7] = side_output(rg, rh, rc, l1, l2, max_delta_step, path_smooth,
                                    parent_output, c_min, c_max)
            out_left[f] = best_left


def find_best_thresholds_int_naive(hist, bin_offsets, n_bins, missing_types, default_bins,
                                   feature_mask, total, grad_scale, hess_scale, count, l1, l2,
                                   min_data, min_hess, min_gain_to_split, out, out_left):
    """Brute-force twin of :func:`find_best_thresholds_int` (no leaf-output options), used by
    tests: enumerates every candidate partition (threshold, side of the missing bin) in the
    kernel's order, sums each side's integers with NumPy, and keeps the strictly best (scan F
    over scan R only when strictly better)."""
    g_all, h_all = unpack(hist[:, 0])
    total = int(total)
    tg, th = unpack(total)
    sum_g, sum_h = tg * grad_scale, th * hess_scale

    def gain_of(g, h):
        t = np.sign(g) * max(0.0, abs(g) - l1)
        return t * t / (h + l2)

    parent_gain = gain_of(sum_g, sum_h)
    cnt_factor = count / th
    for f in range(len(n_bins)):
        out[f, 0] = -np.inf
        out[f, 1:] = 0.0
        out_left[f] = 0
        nb = int(n_bins[f])
        if not feature_mask[f] or nb <= 1:
            continue
        lo = int(bin_offsets[f])
        gb, hb = g_all[lo:lo + nb], h_all[lo:lo + nb]
        mt, dbin = int(missing_types[f]), int(default_bins[f])
        missing_bin = nb - 1 if mt == 2 else (dbin if mt == 1 else -1)
        if nb > 2 and mt != 0:
            top = nb - 2 if mt == 2 else nb - 1
            cands = [(t - 1, True, "R") for t in range(top, 0, -1) if not (mt == 1 and t == dbin)]
            cands += [(t, False, "F") for t in range(0, nb - 1) if not (mt == 1 and t == dbin)]
        else:
            cands = [(t - 1, mt != 2, "R") for t in range(nb - 1, 0, -1)]
        best = {"R": (-np.inf, None), "F": (-np.inf, None)}
        for t, missing_left, scan in cands:
            left = np.arange(nb) <= t
            if missing_bin >= 0 and nb > 2 and mt != 0:
                left[missing_bin] = missing_left
            elif mt == 2:
                left[nb - 1] = False  # NaN bin, <= 2 bins: right
            lgi, lhi = int(gb[left].sum()), int(hb[left].sum())
            rgi, rhi = tg - lgi, th - lhi
            if scan == "R":
                rc = np.floor(rhi * cnt_factor + 0.5)
                lc = count - rc
            else:
                lc = np.floor(lhi * cnt_factor + 0.5)
                rc = count - lc
            lh, rh = lhi * hess_scale, rhi * hess_scale
            if min(lc, rc) < min_data or min(lh, rh) < min_hess:
                continue
            lg, rg = lgi * grad_scale, rgi * grad_scale
            gain = gain_of(lg, lh + K_EPSILON) + gain_of(rg, rh + K_EPSILON)
            if gain > parent_gain + min_gain_to_split and gain > best[scan][0]:
                best[scan] = (gain, (t, float(missing_left), lgi, lhi))
        chosen = best["R"]
        if best["F"][1] is not None and best["F"][0] > chosen[0]:
            chosen = best["F"]
        if chosen[1] is None:
            continue
        t, dl, lgi, lhi = chosen[1]
        out[f, 0] = chosen[0] - parent_gain
        out[f, 1] = t
        out[f, 2] = dl
        out[f, 3] = lgi * grad_scale
        out[f, 4] = lhi * hess_scale
        out[f, 5] = np.floor(lhi * cnt_factor + 0.5)
        out_left[f] = lgi * 2 ** 32 + lhi
