"""This module contains row sampling per boosting round: GOSS and uniform bagging.

Data flow position: once per round, after :func:`~oocgbdt.core.partition.partition_gradients` and before
the round's trees. Every decision that involves more than one partition is made once, on the caller
(the boosting loop), from tree-reduced statistics; each partition then selects its own rows and keeps
their indices in :attr:`PartitionData.rows <oocgbdt.core.partition.PartitionData>`, so the round's trees route
and histogram only those rows. Every row still gets its score updated after each tree.

GOSS (LightGBM's ``goss.hpp``; the NIPS 2017 paper's Algorithm 2)
    The key of a row is ``sum over outputs of |g * h|`` in float32, as LightGBM (not the paper's
    ``|g|``). The top set is exactly the ``top_k = max(1, int(n * top_rate))`` rows with the
    largest keys over ALL partitions, found by an exact two-pass radix select on the keys' float32
    bit patterns (non-negative floats order like their bits): pass 1 counts rows per value of
    the high 16 bits in every partition, the counts are tree-reduced and the caller finds the bucket
    holding the ``top_k``-th largest key; pass 2 does the same for the low 16 bits inside that
    bucket, which gives the exact threshold key. Rows above it are top rows; rows equal to it
    are top rows in global row order until ``top_k`` is reached (a third, tiny gather of per
    partition tie counts, only when ties straddle the threshold). So the top set does not depend on
    the chunking. LightGBM keeps every tie instead, which can add many rows on data with
    duplicate rows. Every other row is kept with probability ``other_rate / (1 - top_rate)`` (an
    independent draw; LightGBM draws exactly ``int(n * other_rate)`` rows per block), and its
    gradient and hessian are multiplied by ``(1 - top_rate) / other_rate`` in float32, which
    makes every histogram sum an unbiased estimate. No sampling in the first
    ``int(1 / learning_rate)`` rounds (LightGBM's warm start).

Bagging (LightGBM's ``bagging.hpp``)
    LightGBM's own draws, so bagged models are LightGBM's: global row ``r`` draws from the
    generator of its block of 1024 rows (``Random(bagging_seed + r // 1024)``), one
    ``NextFloat()`` per row of the block at every re-bagging, and is in the bag when the draw is
    below ``bagging_fraction`` (balanced bagging: ``pos_bagging_fraction`` for a label ``> 0``,
    ``neg_bagging_fraction`` otherwise, with the binary objective as LightGBM). A new bag is
    drawn at the rounds divisible by ``bagging_freq``, counted in the whole model (a continued
    fit draws the bags of one longer fit; LightGBM's continued booster starts its generators
    afresh); weights are unchanged. Each partition jumps its blocks'
    generators to its own rows (:func:`oocgbdt.kernels.sampling.lightgbm_bag_select`), so the
    bag depends on the global row index only, never on workers or chunking. LightGBM stops
    re-bagging when a bag happens to hold every row; that case (a probability of
    ``bagging_fraction ** n``) is not reproduced.

GOSS's random draws
    The draw of global row ``r`` in a round is a counter-based uniform (SplitMix64 of a Weyl
    sequence, :func:`oocgbdt.kernels.sampling.uniforms`) under a 64-bit seed from
    ``SeedSequence([seed, bagging_seed, kind, round])``: every partition computes its rows' draws
    directly from their global indices. LightGBM's GOSS draws with a probability that depends
    on how many rows were kept before in the same thread block, a chain through every row,
    and keeps every tie of the threshold; the exact global top set above replaces both.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from oocgbdt._dtypes import G_H_DTYPE, LEAF_DTYPE
from oocgbdt.core.executor import tree_reduce
from oocgbdt.kernels.sampling import (goss_keys as goss_keys_kernel, goss_select,
                                      digit_counts, lightgbm_bag_select, scale_small_rows,
                                      uniforms)

__all__ = [
    "RowSelection", "RowSampler", "sampling_enabled", "balanced_bagging", "goss_warmup_rounds", "goss_top_k",
    "goss_keys", "row_uniforms", "stream_key", "partition_n_rows", "partition_goss_keys",
    "partition_key_histogram", "partition_key_histograms", "partition_count_ties",
    "partition_select_rows", "sum_counts", "sum_count_pairs",
]

#: Stream kind of GOSS's draws (part of the random key; bagging draws LightGBM's numbers).
GOSS_STREAM = 1


# ---- pure helpers ---------------------------------------------------------------------------

def balanced_bagging(params) -> bool:
    """Whether ``params`` (resolved) ask for LightGBM's balanced bagging: ``pos_bagging_fraction``
    or ``neg_bagging_fraction`` below 1 with the binary objective (the only one LightGBM counts
    positive rows for), whatever ``bagging_fraction``."""
    return (params["objective"] == "binary"
            and min(params["pos_bagging_fraction"], params["neg_bagging_fraction"]) < 1.0)


def sampling_enabled(params) -> bool:
    """Whether ``params`` (resolved) ask for any row sampling."""
    if params["data_sample_strategy"] == "goss":
        return True
    return params["bagging_freq"] > 0 and (params["bagging_fraction"] < 1.0
                                           or balanced_bagging(params))


def goss_warmup_rounds(learning_rate: float) -> int:
    """Rounds trained on every row before GOSS starts: ``int(1 / learning_rate)`` (LightGBM
    ``goss.hpp``; checked against LightGBM by ``tests/core/test_sampling.py``)."""
    return int(1.0 / float(learning_rate))


def goss_top_k(n_rows: int, top_rate: float) -> int:
    """Size of the top set: ``max(1, int(n_rows * top_rate))``, as LightGBM."""
    return max(1, int(n_rows * top_rate))


def goss_keys(gradients: np.ndarray, hessians: np.ndarray) -> np.ndarray:
    """GOSS key of every row, ``sum_k |g_k * h_k|`` accumulated in float32 in output order.

    ``gradients``, ``hessians``: shape (n_outputs, n_rows), float32. Returns (n_rows,) float32
    (:func:`oocgbdt.kernels.sampling.goss_keys`).
    """
    out = np.empty(gradients.shape[1], dtype=G_H_DTYPE)
    goss_keys_kernel(np.ascontiguousarray(gradients, dtype=G_H_DTYPE),
                     np.ascontiguousarray(hessians, dtype=G_H_DTYPE), out)
    return out


def _key_bits(data) -> np.ndarray:
    """Float32 bit patterns of the partition's GOSS keys (ordered like the keys: all are >= 0):
    ``data.goss_bits`` when :func:`partition_goss_keys` made them this round (alone, or inside
    :func:`oocgbdt.core.partition.partition_gradients`)."""
    if data.goss_bits is not None:
        return data.goss_bits
    return goss_keys(data.gradients, data.hessians).view(np.uint32)


def stream_key(seed: int, bagging_seed: int, kind: int, round_index: int) -> int:
    """The 64-bit seed of one round's stream (NumPy's SeedSequence mixes the four numbers)."""
    state = np.random.SeedSequence([int(seed), int(bagging_seed), int(kind), int(round_index)])
    return int(state.generate_state(1, np.uint64)[0])


def row_uniforms(key: int, row_offset: int, n: int) -> np.ndarray:
    """Uniform [0, 1) draws of global rows ``row_offset .. row_offset + n - 1`` of a stream
    (:func:`oocgbdt.kernels.sampling.uniforms`)."""
    out = np.empty(n, dtype=np.float64)
    uniforms(np.uint64(key), int(row_offset), out)
    return out


def _top_bucket(counts, need: int) -> tuple:
    """The digit holding the ``need``-th largest item and the number of items above it, from
    ``(digits, counts)`` sparse digit counts (:func:`sum_counts`), digits ascending."""
    digits, counts = counts
    from_top = np.cumsum(counts[::-1])
    i = int(np.searchsorted(from_top, need))
    j = counts.shape[0] - 1 - i
    return int(digits[j]), int(from_top[i] - counts[j])


def _digit_count(counts, digit: int) -> int:
    """How many items hold ``digit`` in ``(digits, counts)`` sparse digit counts."""
    digits, counts = counts
    j = int(np.searchsorted(digits, digit))
    return int(counts[j]) if j < digits.shape[0] and digits[j] == digit else 0


def _tie_quotas(tie_counts, need: int) -> list:
    """Per partition, how many rows equal to the threshold join the top set (global row order)."""
    before = np.concatenate([[0], np.cumsum(tie_counts)[:-1]])
    return [int(q) for q in np.clip(need - before, 0, tie_counts)]


# ---- per-partition task bodies --------------------------------------------------------------------

def partition_n_rows(data) -> int:
    """Rows of a partition (gathered once, for global row offsets and ``n``)."""
    return int(data.n_rows)


def partition_goss_keys(data):
    """The partition with its rows' GOSS key bits (``PartitionData.goss_bits``) computed once
    for the round's selection steps, which would otherwise each compute them again."""
    return replace(data, goss_bits=_key_bits(data))


def partition_key_histogram(data, high_bucket):
    """Radix-select counts of a partition's GOSS keys, ``(digits, counts)``: the digits
    present, ascending, and their row counts (int64; :func:`~oocgbdt.kernels.sampling.
    digit_counts`).

    ``high_bucket`` None: the digit is the high 16 bits of the key. Otherwise: the low 16 bits,
    among rows whose high 16 bits equal ``high_bucket``.
    """
    return digit_counts(_key_bits(data), -1 if high_bucket is None else int(high_bucket))


def partition_key_histograms(data, guess: int):
    """:func:`partition_key_histogram` twice from one task: the high digits' counts, and the
    low digits' counts among rows whose high digit is ``guess`` (the previous round's
    threshold bucket, which usually holds this round's too): ``(high, low)``."""
    return partition_key_histogram(data, None), partition_key_histogram(data, guess)


def sum_count_pairs(parts):
    """Combine step for ``(high, low)`` pairs of sparse digit counts
    (:func:`partition_key_histograms`): each added as :func:`sum_counts` adds them."""
    return sum_counts([p[0] for p in parts]), sum_counts([p[1] for p in parts])


def sum_counts(parts):
    """Combine step of the fan-in tree for ``(digits, counts)`` sparse digit counts: the counts
    of every digit present in a part, added (integers: any order is exact)."""
    digits = np.concatenate([p[0] for p in parts])
    counts = np.concatenate([p[1] for p in parts])
    if digits.shape[0] == 0:
        return digits, counts
    lo = int(digits.min())
    # float64 sums of row counts (< 2**53) are exact
    dense = np.bincount(digits - lo, weights=counts).astype(np.int64)
    present = np.flatnonzero(dense)
    return present + lo, dense[present]


def partition_count_ties(data, threshold_bits: int) -> int:
    """Rows of a partition whose key equals the threshold key exactly."""
    return int(np.count_nonzero(_key_bits(data) == np.uint32(threshold_bits)))


@dataclass(frozen=True)
class RowSelection:
    """What one partition needs to select its rows for one round (small; built on the caller).

    Attributes
    ----------
    row_offset : int
        Global index of the partition's first row (positions the partition in the random stream).
    key : int
        64-bit seed of the round's stream (:func:`stream_key`).
    probability : float
        Keep probability of a row outside the top set (bagging: every row).
    threshold_bits : int or None
        GOSS: float32 bit pattern of the threshold key; rows above it are top rows. None for
        bagging (no top set).
    ties : int
        GOSS: rows equal to the threshold that are top rows, the first ones in row order; -1
        means all of them.
    multiplier : float
        Factor on the gradients and hessians of rows kept by the random draw.
    bag : tuple of int or None
        Bagging: ``(n_rows of all partitions, bag number)``; ``key`` is then ``bagging_seed``,
        and ``probability`` and ``negative_probability`` the keep probabilities of rows with a
        label ``> 0`` and of the others (LightGBM's draws).
    negative_probability : float
    """

    row_offset: int
    key: int
    probability: float
    threshold_bits: int | None = None
    ties: int = -1
    multiplier: float = 1.0
    bag: tuple | None = None
    negative_probability: float = 1.0


def partition_select_rows(data, sel: RowSelection):
    """Select a partition's rows for this round; returns a new PartitionData with ``rows`` set.

    GOSS rows kept by the random draw get their gradients and hessians (every output) multiplied
    by ``sel.multiplier`` in float32; everything else is unchanged. ``rows`` is ascending int32.
    """
    n = data.n_rows
    seed, offset = np.uint64(sel.key), int(sel.row_offset)
    g, h = data.gradients, data.hessians
    rows = np.empty(n, dtype=LEAF_DTYPE)
    if sel.bag is not None:
        m = lightgbm_bag_select(int(sel.key), int(sel.bag[0]), int(sel.bag[1]), offset, data.y,
                                float(sel.probability), float(sel.negative_probability), rows)
        return replace(data, rows=rows[:m].copy())
    small = np.empty(n, dtype=np.bool_)
    m = goss_select(_key_bits(data), seed, offset, int(sel.threshold_bits), int(sel.ties),
                    float(sel.probability), rows, small)
    if small.any():
        # Rows outside the random draw keep their values bit for bit.
        g2, h2 = np.empty_like(g), np.empty_like(h)
        scale_small_rows(g, h, small, G_H_DTYPE(sel.multiplier), g2, h2)
        g, h = g2, h2
    return replace(data, gradients=g, hessians=h, rows=rows[:m].copy(), goss_bits=None)


# ---- the caller's side ------------------------------------------------------------------------

class RowSampler:
    """Per-round row selection over a list of partitions, decided on the caller.

    Parameters
    ----------
    params : dict
        Resolved parameters (:func:`oocgbdt.params.resolve_params`) with sampling enabled.
    chunk_rows : list of int
        Rows per partition, in partition order.

    Attributes
    ----------
    last : dict
        Statistics of the last sampled round: ``top`` rows (GOSS), ``threshold`` key (GOSS).
    n_second_gathers : int
        GOSS rounds whose threshold took a second gather of key counts, the previous round's
        bucket no longer holding it (see :meth:`_goss`).
    """

    def __init__(self, params, chunk_rows):
        self.strategy = params["data_sample_strategy"]
        if self.strategy != "goss" and not sampling_enabled(params):
            raise ValueError("RowSampler needs GOSS or bagging_freq > 0 with a bagging fraction < 1")
        self.chunk_rows = [int(c) for c in chunk_rows]
        self.offsets = np.concatenate([[0], np.cumsum(self.chunk_rows)[:-1]]).astype(np.int64).tolist()
        self.n_rows = int(sum(self.chunk_rows))
        self.seed, self.bagging_seed = int(params["seed"]), int(params["bagging_seed"])
        self.split_every = int(params["split_every"])
        self.top_rate, self.other_rate = float(params["top_rate"]), float(params["other_rate"])
        self.warmup = goss_warmup_rounds(params["learning_rate"])
        self.bagging_fraction = float(params["bagging_fraction"])
        if self.strategy != "goss" and balanced_bagging(params):
            self.fractions = (float(params["pos_bagging_fraction"]),
                              float(params["neg_bagging_fraction"]))
        else:
            self.fractions = (self.bagging_fraction, self.bagging_fraction)
        self.bagging_freq = int(params["bagging_freq"])
        self.last = {}
        self._bucket = None  # GOSS: the last round's threshold bucket (high 16 bits)
        self.n_second_gathers = 0

    def active(self, rnd: int) -> bool:
        """Whether round ``rnd`` (0-based) trains on a sample."""
        return rnd >= self.warmup if self.strategy == "goss" else True

    def sample(self, executor, partitions, rnd: int, key: str, keys_made: bool = False):
        """Select round ``rnd``'s rows; returns new partition handles (``rows`` set on each).

        ``keys_made``: GOSS keys are already on the partitions (``partition_gradients`` with
        ``with_goss_keys``), not computed again."""
        if self.strategy == "goss":
            if not keys_made:
                partitions = executor.map(partition_goss_keys, partitions, key=f"{key}-keys",
                                          consume=0)
            selections = self._goss(executor, partitions, rnd, key)
        else:
            bag = (self.n_rows, rnd // self.bagging_freq)
            pos, neg = self.fractions
            selections = [RowSelection(off, self.bagging_seed, pos, bag=bag,
                                       negative_probability=neg) for off in self.offsets]
            self.last = dict(bag_round=rnd - rnd % self.bagging_freq)
        return executor.map(partition_select_rows, partitions, selections, key=f"{key}-select",
                               consume=0)

    def _goss(self, executor, partitions, rnd, key):
        """The round's GOSS selections: the exact top_k threshold key by radix select over
        the keys' float32 bits, the high 16 bits' counts summed over every partition, then the
        low 16 bits' counts within the bucket holding the top_k-th key. The bucket moves little
        between rounds (it is the same as the round before in about nine rounds out of ten on
        400k rows, binary and L2 alike), so the low counts of the last round's bucket are
        gathered with the high ones: one gather of counts, and a second only when the bucket
        has moved. The same threshold either way."""
        n = len(partitions)
        top_k = goss_top_k(self.n_rows, self.top_rate)

        def summed(count, combine, arg, name):  # every partition's counts, added and gathered
            return executor.gather(tree_reduce(
                executor, combine, executor.map(count, partitions, [arg] * n, key=f"{key}-{name}"),
                self.split_every, f"{key}-{name}sum"))

        guess = self._bucket
        if guess is None:
            high, low_of_guess = summed(partition_key_histogram, sum_counts, None, "kh"), None
        else:
            high, low_of_guess = summed(partition_key_histograms, sum_count_pairs, guess, "kh")
        bucket, above = _top_bucket(high, top_k)
        if bucket == guess:
            low = low_of_guess
        else:
            if guess is not None:
                self.n_second_gathers += 1
            low = summed(partition_key_histogram, sum_counts, bucket, "kl")
        self._bucket = bucket
        low_bucket, above_low = _top_bucket(low, top_k - above)
        threshold = (bucket << 16) | low_bucket
        need = top_k - above - above_low          # rows equal to the threshold to keep, >= 1
        if need == _digit_count(low, low_bucket):
            ties = [-1] * n
        else:
            counts = executor.gather(executor.map(partition_count_ties, partitions, [threshold] * n,
                                                key=f"{key}-ties"))
            ties = _tie_quotas(np.asarray(counts, dtype=np.int64), need)
        k = stream_key(self.seed, self.bagging_seed, GOSS_STREAM, rnd)
        a, b = self.top_rate, self.other_rate
        p, mult = min(1.0, b / (1.0 - a)), (1.0 - a) / b   # a + b <= 1, so 1 - a > 0
        self.last = dict(top=top_k, threshold=float(np.uint32(threshold).view(np.float32)))
        return [RowSelection(off, k, p, threshold, t, mult) for off, t in zip(self.offsets, ties)]
