"""This module contains the learning-to-rank kernels: LambdaRank gradients and DCG.

Rows come in queries: ``query_offsets`` (int64, ascending, first 0, last n_rows) bounds each
query's consecutive rows within one partition (a query is never split across partitions).

Formulas (LightGBM ``src/objective/rank_objective.hpp``, ``LambdarankNDCG``, and
``src/metric/dcg_calculator.cpp``): rows of a query are sorted by decreasing score (stable);
for each pair ``(i, j)`` with ``i`` among the top ``truncation_level`` rows and different labels,
``high``/``low`` being the better/worse labelled row,
``delta = |gain(high) - gain(low)| * |discount(rank high) - discount(rank low)| / maxDCG``
(``/ (0.01 + |s_high - s_low|)`` when ``norm`` and the query's scores are not all equal),
``p = sigmoid_table(s_high - s_low)``, ``lambda = -sigmoid * p * delta`` added to ``high`` and
subtracted from ``low`` (float32 sums, as LightGBM), ``hessian += sigmoid**2 p (1 - p) delta`` to
both; with ``norm``, a query's lambdas and hessians are scaled by
``log2(1 + sum) / sum``, ``sum = sum of 2 |lambda|``. ``discount(k) = 1 / log2(2 + k)``; the
sigmoid is LightGBM's lookup table of 2**20 bins over ``[-25/sigmoid, 25/sigmoid]``.
"""
import functools

import numpy as np

from oocgbdt._dtypes import G_H_DTYPE
from oocgbdt.kernels._jit import njit

__all__ = [
    "MAX_POSITION",
    "discounts",
    "default_label_gain",
    "sigmoid_table",
    "max_dcg_at",
    "gradients_lambdarank",
    "gradients_lambdarank_naive",
    "dcg_at",
    "lcg_jump",
    "gradients_xendcg",
    "gradients_xendcg_naive",
]

#: Longest query (LightGBM's ``kMaxPosition``).
MAX_POSITION = 10000
_SIGMOID_BINS = 1024 * 1024


@njit
def _discounts(n):
    out = np.empty(n)
    for k in range(n):
        out[k] = 1.0 / np.log2(2.0 + k)
    return out


@functools.lru_cache(maxsize=1)
def discounts():
    """``1 / log2(2 + k)`` for ranks ``k < MAX_POSITION`` (``DCGCalculator::Init``).

    Computed element by element in a numba loop, which calls the C library's ``log2`` as
    LightGBM does: NumPy's vectorized ``log2`` differs from it in the last bit of some entries.
    """
    return _discounts(MAX_POSITION)


def default_label_gain():
    """``2**i - 1`` for labels ``i < 31`` (``DCGCalculator::DefaultLabelGain``)."""
    return np.array([0.0] + [float((1 << i) - 1) for i in range(1, 31)])


@functools.lru_cache(maxsize=4)
def sigmoid_table(sigmoid):
    """``(table, min_input, max_input, idx_factor)``: LightGBM's sigmoid lookup table
    (``ConstructSigmoidTable``), built once per process and ``sigmoid``."""
    lo = -50.0 / sigmoid / 2
    hi = -lo
    factor = _SIGMOID_BINS / (hi - lo)
    return _sigmoid_table(_SIGMOID_BINS, lo, factor, float(sigmoid)), lo, hi, factor


@njit
def _sigmoid_table(n, lo, factor, sigmoid):
    # A scalar loop, so each entry comes from the C library's exp as in LightGBM (NumPy's
    # vectorized exp differs from it in the last bit of about 2% of the entries).
    out = np.empty(n)
    for i in range(n):
        out[i] = 1.0 / (1.0 + np.exp((i / factor + lo) * sigmoid))
    return out


@njit
def max_dcg_at(k, labels, label_gain, discount):
    """Best DCG of the top ``k`` rows of one query's labels (``CalMaxDCGAtK``)."""
    n = labels.shape[0]
    counts = np.zeros(label_gain.shape[0], dtype=np.int64)
    for i in range(n):
        counts[int(labels[i])] += 1
    top = label_gain.shape[0] - 1
    k = min(k, n)
    out = 0.0
    for j in range(k):
        while top > 0 and counts[top] <= 0:
            top -= 1
        out += discount[j] * label_gain[top]
        counts[top] -= 1
    return out


@njit
def dcg_at(ks, labels, scores, label_gain, discount, out):
    """DCG at each of ``ks`` (ascending) of one query, rows ranked by decreasing score
    (stable; ``DCGCalculator::CalDCG``); written to ``out``."""
    order = np.argsort(-scores, kind="mergesort")
    n = labels.shape[0]
    total = 0.0
    left = 0
    for t in range(ks.shape[0]):
        k = min(ks[t], n)
        for j in range(left, k):
            total += label_gain[int(labels[order[j]])] * discount[j]
        out[t] = total
        left = max(left, k)


@njit
def gradients_lambdarank(
    y,  # IN: (n,) integer-valued labels
    raw_score,  # IN: (n,) float64
    weight,  # IN: (n,) or None
    query_offsets,  # IN: (n_queries + 1,) int64
    label_gain,  # IN: (n_labels,) float64
    discount,  # IN: (MAX_POSITION,) float64
    table,  # IN: sigmoid lookup table, float64
    table_lo,  # IN: float
    table_hi,  # IN: float
    table_factor,  # IN: float
    sigmoid,  # IN: float
    norm,  # IN: bool
    truncation_level,  # IN: int
    gradients_out,  # OUT: (n,) float32
    hessians_out,  # OUT: (n,) float32
):
    """LambdaRank-NDCG gradients and hessians of every query (see the module docstring)."""
    n_bins = table.shape[0]
    for q in range(query_offsets.shape[0] - 1):
        start = query_offsets[q]
        cnt = query_offsets[q + 1] - start
        labels = y[start:start + cnt]
        score = raw_score[start:start + cnt]
        lam = gradients_out[start:start + cnt]
        hes = hessians_out[start:start + cnt]
        for i in range(cnt):
            lam[i] = 0.0
            hes[i] = 0.0
        if cnt == 0:
            continue
        inv_max_dcg = max_dcg_at(truncation_level, labels, label_gain, discount)
        if inv_max_dcg > 0.0:
            inv_max_dcg = np.float32(1.0) / inv_max_dcg
        order = np.argsort(-score, kind="mergesort")
        best = score[order[0]]
        worst = score[order[cnt - 1]]
        sum_lambdas = 0.0
        for i in range(min(cnt - 1, truncation_level)):
            for j in range(i + 1, cnt):
                li = labels[order[i]]
                lj = labels[order[j]]
                if li == lj:
                    continue
                if li > lj:
                    high_rank, low_rank = i, j
                else:
                    high_rank, low_rank = j, i
                high = order[high_rank]
                low = order[low_rank]
                delta_score = score[high] - score[low]
                gap = label_gain[int(labels[high])] - label_gain[int(labels[low])]
                paired = abs(discount[high_rank] - discount[low_rank])
                delta = gap * paired * inv_max_dcg
                if norm and best != worst:
                    delta /= (np.float32(0.01) + abs(delta_score))
                if delta_score <= table_lo:
                    p = table[0]
                elif delta_score >= table_hi:
                    p = table[n_bins - 1]
                else:
                    p = table[int((delta_score - table_lo) * table_factor)]
                p_hess = p * (1.0 - p)
                p_lam = p * (-sigmoid * delta)
                p_hess *= sigmoid * sigmoid * delta
                lam[low] -= np.float32(p_lam)
                hes[low] += np.float32(p_hess)
                lam[high] += np.float32(p_lam)
                hes[high] += np.float32(p_hess)
                sum_lambdas -= 2 * p_lam
        if norm and sum_lambdas > 0:
            factor = np.log2(1 + sum_lambdas) / sum_lambdas
            for i in range(cnt):
                lam[i] = lam[i] * factor
                hes[i] = hes[i] * factor
        if weight is not None:
            for i in range(cnt):
                w = np.float32(weight[start + i])
                lam[i] = lam[i] * w
                hes[i] = hes[i] * w


def gradients_lambdarank_naive(y, raw_score, weight, query_offsets, label_gain, sigmoid, norm,
                               truncation_level, gradients_out, hessians_out):
    """NumPy twin of :func:`gradients_lambdarank` with the exact sigmoid ``1 / (1 + exp(sigmoid
    * d))`` instead of the table (so it agrees to the table's resolution) and float64 sums."""
    disc = discounts()
    g = np.zeros(len(y))
    h = np.zeros(len(y))
    for q in range(len(query_offsets) - 1):
        a, b = query_offsets[q], query_offsets[q + 1]
        lab, s = np.asarray(y[a:b], dtype=np.float64), np.asarray(raw_score[a:b])
        cnt = b - a
        ideal = np.sort(lab)[::-1][:truncation_level]
        max_dcg = float(np.sum(label_gain[ideal.astype(int)] * disc[:len(ideal)]))
        inv = 1.0 / max_dcg if max_dcg > 0 else 0.0
        order = np.argsort(-s, kind="stable")
        total = 0.0
        for i in range(min(cnt - 1, truncation_level)):
            for j in range(i + 1, cnt):
                if lab[order[i]] == lab[order[j]]:
                    continue
                hr, lr = (i, j) if lab[order[i]] > lab[order[j]] else (j, i)
                hi, lo = order[hr], order[lr]
                ds = s[hi] - s[lo]
                delta = ((label_gain[int(lab[hi])] - label_gain[int(lab[lo])])
                         * abs(disc[hr] - disc[lr]) * inv)
                if norm and s.max() != s.min():
                    delta /= 0.01 + abs(ds)
                p = 1.0 / (1.0 + np.exp(sigmoid * ds))
                lam = -sigmoid * p * delta
                hes = sigmoid * sigmoid * p * (1 - p) * delta
                g[a + lo] -= lam
                g[a + hi] += lam
                h[a + lo] += hes
                h[a + hi] += hes
                total -= 2 * lam
        if norm and total > 0:
            g[a:b] *= np.log2(1 + total) / total
            h[a:b] *= np.log2(1 + total) / total
    if weight is not None:
        g, h = g * weight, h * weight
    gradients_out[:] = g.astype(G_H_DTYPE)
    hessians_out[:] = h.astype(G_H_DTYPE)


# ---------------------------------------------------------------------------------------------
# XE-NDCG (rank_xendcg)
# ---------------------------------------------------------------------------------------------

_LCG_A = 214013
_LCG_C = 2531011
_MASK32 = 0xFFFFFFFF


@njit
def lcg_jump(state, steps):
    """LightGBM's ``Random`` state (``x = 214013 x + 2531011`` mod 2**32) after ``steps`` draws,
    by squaring (``include/LightGBM/utils/random.h``)."""
    a, c = 1, 0  # the composed map x -> a x + c
    ma, mc = _LCG_A, _LCG_C
    n = steps
    while n > 0:
        if n & 1:
            a, c = (ma * a) & _MASK32, (ma * c + mc) & _MASK32
        ma, mc = (ma * ma) & _MASK32, (ma * mc + mc) & _MASK32
        n >>= 1
    return (a * state + c) & _MASK32


@njit
def gradients_xendcg(
    y,  # IN: (n,) integer-valued labels
    raw_score,  # IN: (n,) float64
    weight,  # IN: (n,) or None
    query_offsets,  # IN: (n_queries + 1,) int64
    first_query,  # IN: int, global index of the partition's first query
    seed,  # IN: int, objective_seed
    iteration,  # IN: int, the boosting round (0-based): how many draws each query made before
    gradients_out,  # OUT: (n,) float32
    hessians_out,  # OUT: (n,) float32
):
    """XE-NDCG gradients (LightGBM ``RankXENDCG``, ``rank_objective.hpp``; arXiv:1911.09798).

    Per query ``q`` with more than one row: ``rho = softmax(s)``; ``phi_i = 2**y_i - u_i`` with
    ``u_i`` the query's own uniform draws (LightGBM's generator seeded ``seed + q``, advanced by
    the query's rows at every round, so the draws do not depend on the partitioning);
    ``l1_i = rho_i - phi_i / sum(phi)``, two correction terms, ``h_i = rho_i (1 - rho_i)``.
    """
    for q in range(query_offsets.shape[0] - 1):
        start = query_offsets[q]
        cnt = query_offsets[q + 1] - start
        lam = gradients_out[start:start + cnt]
        hes = hessians_out[start:start + cnt]
        if cnt <= 1:
            for i in range(cnt):
                lam[i] = 0.0
                hes[i] = 0.0
            continue
        s = raw_score[start:start + cnt]
        wmax = s[0]
        for i in range(1, cnt):
            wmax = max(s[i], wmax)
        rho = np.empty(cnt)
        wsum = 0.0
        for i in range(cnt):
            rho[i] = np.exp(s[i] - wmax)
            wsum += rho[i]
        for i in range(cnt):
            rho[i] /= wsum
        state = lcg_jump((seed + first_query + q) & _MASK32, iteration * cnt)
        params = np.empty(cnt)
        inv = 0.0
        for i in range(cnt):
            state = (_LCG_A * state + _LCG_C) & _MASK32
            u = np.float32((state >> 16) & 0x7FFF) / np.float32(32768.0)
            params[i] = 2.0 ** int(y[start + i]) - u
            inv += params[i]
        inv = 1.0 / max(1e-15, inv)
        sum_l1 = 0.0
        for i in range(cnt):
            term = -params[i] * inv + rho[i]
            lam[i] = term
            params[i] = term / (1.0 - rho[i])
            sum_l1 += params[i]
        sum_l2 = 0.0
        for i in range(cnt):
            term = rho[i] * (sum_l1 - params[i])
            lam[i] += np.float32(term)
            params[i] = term / (1.0 - rho[i])
            sum_l2 += params[i]
        for i in range(cnt):
            lam[i] += np.float32(rho[i] * (sum_l2 - params[i]))
            hes[i] = rho[i] * (1.0 - rho[i])
        if weight is not None:
            for i in range(cnt):
                w = np.float32(weight[start + i])
                lam[i] = lam[i] * w
                hes[i] = hes[i] * w


def gradients_xendcg_naive(y, raw_score, weight, query_offsets, first_query, seed, iteration,
                           gradients_out, hessians_out):
    """NumPy twin of :func:`gradients_xendcg`: the generator stepped draw by draw (no jump), and
    the gradient written from its definition in float64."""
    g = np.zeros(len(y))
    h = np.zeros(len(y))
    for q in range(len(query_offsets) - 1):
        a, b = query_offsets[q], query_offsets[q + 1]
        cnt = b - a
        if cnt <= 1:
            continue
        s = np.asarray(raw_score[a:b], dtype=np.float64)
        rho = np.exp(s - s.max())
        rho /= rho.sum()
        x = (seed + first_query + q) & _MASK32
        for _ in range(iteration * cnt):
            x = (_LCG_A * x + _LCG_C) & _MASK32
        u = []
        for _ in range(cnt):
            x = (_LCG_A * x + _LCG_C) & _MASK32
            u.append(((x >> 16) & 0x7FFF) / 32768.0)
        phi = 2.0 ** np.asarray(y[a:b]).astype(int) - np.array(u)
        l1 = rho - phi / max(1e-15, phi.sum())
        p1 = l1 / (1 - rho)
        l2 = rho * (p1.sum() - p1)
        p2 = l2 / (1 - rho)
        l3 = rho * (p2.sum() - p2)
        g[a:b] = l1 + l2 + l3
        h[a:b] = rho * (1 - rho)
    if weight is not None:
        g, h = g * weight, h * weight
    gradients_out[:] = g.astype(G_H_DTYPE)
    hessians_out[:] = h.astype(G_H_DTYPE)
