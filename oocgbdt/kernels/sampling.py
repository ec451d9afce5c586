"""This module contains the row-sampling kernels: counter-based uniforms, radix counts of GOSS
keys, GOSS selection and Bernoulli (bagging) selection.

Data flow position: per chunk, once per sampled round (see :mod:`oocgbdt.core.sampling`). Keys
are GOSS keys ``sum_k |g_k * h_k|`` as float32 (non-negative), passed as their uint32 bit
patterns, which order like the keys.

Uniforms: the draw of global row ``r`` under a 64-bit ``seed`` is SplitMix64's output for the
Weyl sequence value ``seed + (r + 1) * 0x9E3779B97F4A7C15`` (Java's ``SplittableRandom``: the
``r + 1``-th ``nextLong`` of a generator seeded with ``seed``), top 53 bits as a double. It is
counter-based: any row's draw is computed directly, so a chunk needs only its first global row.
"""
import numpy as np

from oocgbdt.kernels._jit import njit

__all__ = ["uniforms", "uniforms_naive", "radix_counts", "radix_counts_naive", "goss_select",
           "goss_select_naive", "bernoulli_select", "bernoulli_select_naive"]

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2**-53


@njit
def _uniform(seed, row):
    z = seed + np.uint64(row + 1) * _GAMMA
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    z = z ^ (z >> np.uint64(31))
    return np.float64(z >> np.uint64(11)) * _TO_UNIT


@njit
def uniforms(seed, row_offset, out):
    """Draws of global rows ``row_offset .. row_offset + len(out) - 1``.

    Parameters
    ----------
    seed : uint64                                        # IN
    row_offset : int                                     # IN  global index of the first row
    out : ndarray of shape (n,), dtype float64           # OUT uniforms in [0, 1)
    """
    for i in range(out.shape[0]):
        out[i] = _uniform(seed, row_offset + i)


def uniforms_naive(seed, row_offset, out):
    """NumPy twin of :func:`uniforms` (wrapping uint64 array arithmetic), used by tests."""
    r = np.arange(row_offset + 1, row_offset + 1 + out.shape[0], dtype=np.uint64)
    z = np.uint64(seed) + r * _GAMMA
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    z = z ^ (z >> np.uint64(31))
    out[:] = (z >> np.uint64(11)).astype(np.float64) * _TO_UNIT


@njit
def radix_counts(bits, high_bucket, out):
    """Count keys by 16-bit digit.

    Parameters
    ----------
    bits : ndarray of shape (n_rows,), dtype uint32          # IN  keys' float32 bit patterns
    high_bucket : int                                        # IN  -1: count the high 16 bits;
        else count the low 16 bits of the keys whose high 16 bits equal it
    out : ndarray of shape (2**15,) or (2**16,), dtype int64  # IN and OUT (added to)
    """
    if high_bucket < 0:
        for i in range(bits.shape[0]):
            out[bits[i] >> 16] += 1
    else:
        for i in range(bits.shape[0]):
            b = bits[i]
            if (b >> 16) == high_bucket:
                out[b & 0xFFFF] += 1


def radix_counts_naive(bits, high_bucket, out):
    """NumPy twin of :func:`radix_counts` (``np.bincount``), used by tests."""
    high = bits >> np.uint32(16)
    if high_bucket < 0:
        out += np.bincount(high, minlength=out.shape[0])
    else:
        low = bits[high == np.uint32(high_bucket)] & np.uint32(0xFFFF)
        out += np.bincount(low, minlength=out.shape[0])


@njit
def goss_select(bits, seed, row_offset, threshold_bits, ties, probability, out_rows, out_small):
    """Select a chunk's GOSS rows; returns how many were selected.

    Top rows: key above the threshold, or equal to it and among the first ``ties`` such rows
    (all of them when ``ties < 0``). Other rows: kept when their draw (:func:`uniforms`) is
    below ``probability`` and then marked in ``out_small``.

    Parameters
    ----------
    bits : ndarray of shape (n_rows,), dtype uint32           # IN
    seed : uint64; row_offset : int                           # IN  the round's stream, first row
    threshold_bits : int; ties : int; probability : float     # IN
    out_rows : ndarray of shape (n_rows,), dtype int32        # OUT selected rows, ascending (prefix)
    out_small : ndarray of shape (n_rows,), dtype bool        # OUT rows kept by the draw
    """
    # Branchless: keep/skip decisions are random, so branches on them mispredict.
    m = 0
    seen = 0
    all_ties = ties < 0
    for i in range(bits.shape[0]):
        b = bits[i]
        equal = b == threshold_bits
        top = (b > threshold_bits) | (equal & (all_ties | (seen < ties)))
        seen += equal
        small = (not top) & (_uniform(seed, row_offset + i) < probability)
        out_rows[m] = i
        m += top | small
        out_small[i] = small
    return m


def goss_select_naive(bits, seed, row_offset, threshold_bits, ties, probability, out_rows,
                      out_small):
    """NumPy twin of :func:`goss_select`, used by tests."""
    u = np.empty(bits.shape[0])
    uniforms_naive(seed, row_offset, u)
    t = np.uint32(threshold_bits)
    top = bits > t
    equal = bits == t
    if ties < 0:
        top |= equal
    else:
        top[np.flatnonzero(equal)[:ties]] = True
    small = ~top & (u < probability)
    rows = np.flatnonzero(top | small)
    out_rows[:len(rows)] = rows
    out_small[:] = small
    return len(rows)


@njit
def bernoulli_select(seed, row_offset, probability, out_rows):
    """Rows whose draw (:func:`uniforms`) is below ``probability``; returns how many.

    ``out_rows`` : ndarray of shape (n_rows,), dtype int32  # OUT selected rows, ascending (prefix)
    """
    m = 0
    for i in range(out_rows.shape[0]):
        out_rows[m] = i
        m += _uniform(seed, row_offset + i) < probability
    return m


def bernoulli_select_naive(seed, row_offset, probability, out_rows):
    """NumPy twin of :func:`bernoulli_select`, used by tests."""
    u = np.empty(out_rows.shape[0])
    uniforms_naive(seed, row_offset, u)
    rows = np.flatnonzero(u < probability)
    out_rows[:len(rows)] = rows
    return len(rows)
