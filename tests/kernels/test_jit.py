"""The JIT policy: :func:`oocgbdt.kernels._jit.njit_keeping_cmov` compiles with LLVM's cmov
converter off, under numba's compiler lock, turns it back on after, and gives the same values."""
import numpy as np
import pytest
from numba import types
from numba.core.compiler_lock import global_compiler_lock

from oocgbdt.kernels import _jit
from oocgbdt.kernels._jit import njit, njit_keeping_cmov
from oocgbdt.kernels.binning import _lower_bound_block, map_to_bins


def _run(dispatcher, bounds, xs):
    # map_to_bins's branch-free search over one run of bounds, every value of xs at once
    pos = np.zeros(xs.shape[0], dtype=np.uint64)
    dispatcher(bounds, bounds.shape[0], xs, pos, xs.shape[0])
    return pos


@pytest.mark.skipif(not _jit._X86, reason="LLVM's cmov converter is part of its x86 back end")
def test_a_kernel_keeping_cmov_compiles_with_the_converter_off_under_the_compiler_lock(
        monkeypatch):
    # The machine code cannot be read back (numba's inspect_asm compiles the module again
    # with the options of the moment), so the test checks what the compile runs under, and
    # the values.
    seen = []
    set_option = _jit._set_cmov_converter

    def record(on):
        seen.append((on, global_compiler_lock.is_locked()))
        set_option(on)

    monkeypatch.setattr(_jit, "_set_cmov_converter", record)
    rng = np.random.default_rng(0)
    bounds = np.sort(rng.random(255))
    xs = np.concatenate([rng.random(1000), bounds[:50], [-1.0, 2.0]])
    kept = njit_keeping_cmov(_lower_bound_block.py_func, cache=False)
    got = _run(kept, bounds, xs)
    assert seen == [(False, True), (True, True)]
    np.testing.assert_array_equal(got, np.searchsorted(bounds, xs, side="left"))
    _run(kept, bounds, xs)  # compiled: no second compile
    assert len(seen) == 2
    plain = njit(_lower_bound_block.py_func, cache=False)
    np.testing.assert_array_equal(_run(plain, bounds, xs), got)
    assert len(seen) == 2


@pytest.mark.skipif(not _jit._X86, reason="LLVM's cmov converter is part of its x86 back end")
def test_map_to_bins_compiles_without_the_converter(monkeypatch):
    # Every compile of map_to_bins (or load from numba's cache) turns the option off, then on.
    # The option is still set: a signature compiled here stays in numba's cache.
    calls = []
    set_option = _jit._set_cmov_converter

    def record(on):
        calls.append(on)
        set_option(on)

    monkeypatch.setattr(_jit, "_set_cmov_converter", record)
    array = types.Array
    map_to_bins.compile((array(types.float32, 2, "C"), array(types.float64, 1, "C"),
                         array(types.int64, 1, "C"), array(types.int32, 1, "C"),
                         array(types.uint8, 1, "C"), array(types.uint8, 2, "C")))
    assert calls == [False, True]


@pytest.mark.skipif(not _jit.LITTLE_ENDIAN, reason="the kernels read bins by words only on "
                    "little-endian machines")
def test_load_word_is_the_next_eight_bytes_least_significant_first():
    """``load_word`` against Python's ``int.from_bytes(..., "little")`` of the same 8 bytes, at
    every start of a 1-D array (unaligned ones included) and at (row, column) of a 2-D array's
    column slice (rows wider than the slice, so the row stride is not the slice's width)."""
    import numba

    from oocgbdt.kernels._jit import load_word

    @numba.njit
    def flat_words(a, starts):
        out = np.empty(starts.shape[0], np.uint64)
        for k in range(starts.shape[0]):
            out[k] = load_word(a, starts[k])
        return out

    @numba.njit
    def cell_words(a, rows, cols):
        out = np.empty(rows.shape[0], np.uint64)
        for k in range(rows.shape[0]):
            out[k] = load_word(a, (rows[k], cols[k]))
        return out

    rng = np.random.default_rng(2)
    a = rng.integers(0, 256, size=64).astype(np.uint8)
    starts = np.arange(a.size - 7)
    expect = [int.from_bytes(a[s:s + 8].tobytes(), "little") for s in starts]
    assert flat_words(a, starts).tolist() == expect
    wide = rng.integers(0, 2 ** 16, size=(5, 13)).astype(np.uint16)
    block = wide[:, 3:11]  # 8 columns of 13: unit stride along a row, rows 26 bytes apart
    rows, cols = np.repeat(np.arange(5), 5), np.tile(np.arange(5), 5)
    expect = [int.from_bytes(block[r, c:c + 4].tobytes(), "little") for r, c in zip(rows, cols)]
    assert cell_words(block, rows, cols).tolist() == expect
