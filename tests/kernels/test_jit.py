"""The JIT policy: :func:`oocgbdt.kernels._jit.njit_keeping_cmov` compiles a branch-free search
with conditional moves, gives the same values, and leaves LLVM's option as it found it."""
import numpy as np
import pytest
from numba import types
from numba.core.compiler_lock import global_compiler_lock

from oocgbdt.kernels import _jit
from oocgbdt.kernels._jit import njit, njit_keeping_cmov
from oocgbdt.kernels.binning import map_to_bins


def _lower_bounds(bounds, xs, pos):
    # The branch-free search of map_to_bins, one value after another at each step.
    n = np.uint64(bounds.shape[0])
    one = np.uint64(1)
    zero = np.uint64(0)
    while n > one:
        half = n >> one
        for j in range(xs.shape[0]):
            pos[j] += half if bounds[pos[j] + half] < xs[j] else zero
        n -= half
    for j in range(xs.shape[0]):
        pos[j] += one if bounds[pos[j]] < xs[j] else zero


def _run(dispatcher, bounds, xs):
    pos = np.zeros(xs.shape[0], dtype=np.uint64)
    dispatcher(bounds, xs, pos)
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
    kept = njit_keeping_cmov(_lower_bounds, cache=False)
    got = _run(kept, bounds, xs)
    assert seen == [(False, True), (True, True)]
    np.testing.assert_array_equal(got, np.searchsorted(bounds, xs, side="left"))
    _run(kept, bounds, xs)  # compiled: no second compile
    assert len(seen) == 2
    plain = njit(_lower_bounds, cache=False)
    np.testing.assert_array_equal(_run(plain, bounds, xs), got)
    assert len(seen) == 2


@pytest.mark.skipif(not _jit._X86, reason="LLVM's cmov converter is part of its x86 back end")
def test_map_to_bins_compiles_without_the_converter(monkeypatch):
    # Every compile of map_to_bins (or load from numba's cache) turns the option off, then on.
    calls = []
    monkeypatch.setattr(_jit, "_set_cmov_converter", calls.append)
    array = types.Array
    map_to_bins.compile((array(types.float32, 2, "C"), array(types.float64, 1, "C"),
                         array(types.int64, 1, "C"), array(types.int32, 1, "C"),
                         array(types.uint8, 1, "C"), array(types.uint8, 2, "C")))
    assert calls == [False, True]
