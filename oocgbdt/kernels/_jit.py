"""This module contains the JIT policy shared by every numba kernel, the LLVM intrinsics the
kernels use (:func:`prefetch`, :func:`add_pair`, :func:`load_word`), and
:func:`njit_keeping_cmov` for kernels whose speed rests on conditional moves.

Kernels are compiled with ``cache=True`` (compile once per machine, not per process) and
``nogil=True`` (Dask runs chunks on threads; kernels must release the GIL). They are serial:
Dask already runs one task per chunk in parallel.
"""
import platform
import sys

import llvmlite.binding as llvm
import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.compiler_lock import global_compiler_lock
from numba.extending import intrinsic, overload

__all__ = ["njit", "njit_keeping_cmov", "prefetch", "add_pair", "load_word", "bin_bits",
           "whole_words", "word_bin", "PREFETCH_ROWS", "LITTLE_ENDIAN"]

#: How many rows ahead the row-gathering kernels prefetch (measured on 500k x 100 uint8 bins,
#: a tenth of the rows scattered: 4, 8, 16 and 32 rows ahead give 1.84, 1.74, 1.81 and 1.88 ns
#: per histogram cell, against 2.90 without prefetching).
PREFETCH_ROWS = 8

#: Whether the machine stores integers least significant byte first: :func:`load_word` then
#: holds the first of the bins it loads in its lowest bits (kernels read bins one at a time
#: otherwise).
LITTLE_ENDIAN = sys.byteorder == "little"


def njit(*args, **kwargs):
    """``numba.njit`` with oocgbdt's defaults (``cache=True, nogil=True``)."""
    kwargs.setdefault("cache", True)
    kwargs.setdefault("nogil", True)
    return numba.njit(*args, **kwargs)


#: Whether LLVM's x86 back end (and so its ``x86-cmov-converter`` option) compiles the kernels.
_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86")


def _set_cmov_converter(on: bool) -> None:
    llvm.set_option("oocgbdt", f"-x86-cmov-converter={'true' if on else 'false'}")


def njit_keeping_cmov(func=None, **kwargs):
    """:func:`njit`, compiled with LLVM's x86 conditional-move converter off.

    LLVM's x86 back end turns a conditional move (``cmov``) in an innermost loop back into a
    branch when its condition hangs on a load (``X86CmovConversion``, option
    ``-x86-cmov-converter``). For a branch-free binary search that is the wrong call: the
    comparisons are random, so the branch mispredicts about half the time. With the LLVM of
    llvmlite 0.50 (numba 0.68), :func:`~oocgbdt.kernels.binning.map_to_bins` ran at 36 ns per
    value with the converter and 6.5 ns without (50,000 x 50 uniform float32, 255 bins).

    The option is process-wide, so it is turned off only while this dispatcher compiles (or
    loads from numba's cache; the cached machine code keeps its moves), under numba's global
    compiler lock so that no other function compiles meanwhile, and turned back on (LLVM's
    default) after. Only on x86 machines; elsewhere this is :func:`njit`. Such a kernel is
    called from Python: a numba function calling it would compile its code again, with the
    options of that caller's compile.
    """
    if func is None:
        return lambda f: njit_keeping_cmov(f, **kwargs)
    dispatcher = njit(**kwargs)(func)
    if not _X86:
        return dispatcher
    compile_signature = dispatcher.compile

    def compile(sig):
        with global_compiler_lock:
            _set_cmov_converter(False)
            try:
                return compile_signature(sig)
            finally:
                _set_cmov_converter(True)

    dispatcher.compile = compile
    return dispatcher


def _item_pointer(context, builder, signature, args):
    # The address of array[index] in an intrinsic's code: ``args`` are (array, index), the index
    # an integer or a tuple of array.ndim integers; no bounds test, no wrap-around.
    arr_type, index_type = signature.args[0], signature.args[1]
    arr = context.make_array(arr_type)(context, builder, args[0])
    if isinstance(index_type, types.BaseTuple):
        values = cgutils.unpack_tuple(builder, args[1], len(index_type))
        kinds = list(index_type)
    else:
        values, kinds = [args[1]], [index_type]
    indices = [context.cast(builder, v, t, types.intp) for v, t in zip(values, kinds)]
    return cgutils.get_item_pointer(context, builder, arr_type, arr, indices, wraparound=False)


@intrinsic
def prefetch(typingctx, array, index):
    """Hint the CPU to load ``array[index]`` into cache (LLVM ``llvm.prefetch``: read, high
    locality, data cache); no effect on results, and never faults, even out of bounds.

    Kernels that gather rows by index (``X[order[i]]``) prefetch the row a few iterations ahead,
    as LightGBM's histogram kernels do (``PREFETCH_T0`` in ``src/io/dense_bin.hpp``): a scattered
    row otherwise costs a cache miss that out-of-order execution cannot hide. ``array`` is an
    array of any layout; ``index`` an integer (1-D) or a tuple of ``array.ndim`` integers.
    """
    sig = types.void(array, index)

    def codegen(context, builder, signature, args):
        ptr = _item_pointer(context, builder, signature, args)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
            "llvm.prefetch.p0i8")
        # (address, rw = 0 read, locality = 3 keep in all cache levels, cache type = 1 data)
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def add_pair(typingctx, array, index, first, second):
    """``array[index] += first; array[index + 1] += second`` as one two-lane vector add (LLVM
    ``<2 x double>``: one 16-byte load, one add, one 16-byte store).

    Each lane is one IEEE-754 double addition, so the results are bit-identical to the two
    scalar statements; numba compiles those to two scalar adds and two stores, and the histogram
    kernel is bound by its stores (measured on 500k x 100 uint8 bins, every row: 1.12 -> 0.80 ns
    per cell; a tenth of the rows: 1.54 -> 1.25). ``array`` is a 1-D float64 array (any
    layout with unit stride, such as ``out.reshape(-1)``); ``index`` an integer with
    ``index + 1`` in bounds (not checked); ``first`` and ``second`` float64.
    """
    sig = types.void(array, index, first, second)

    def codegen(context, builder, signature, args):
        arr_type, index_type = signature.args[0], signature.args[1]
        arr = context.make_array(arr_type)(context, builder, args[0])
        i = context.cast(builder, args[1], index_type, types.intp)
        ptr = cgutils.get_item_pointer(context, builder, arr_type, arr, [i], wraparound=False)
        pair = ir.VectorType(ir.DoubleType(), 2)
        i32 = ir.IntType(32)
        vptr = builder.bitcast(ptr, pair.as_pointer())
        add = ir.Constant(pair, ir.Undefined)
        add = builder.insert_element(add, args[2], ir.Constant(i32, 0))
        add = builder.insert_element(add, args[3], ir.Constant(i32, 1))
        builder.store(builder.fadd(builder.load(vptr, align=8), add), vptr, align=8)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def load_word(typingctx, array, index):
    """The 8 bytes of memory from ``array[index]`` on, as one unsigned 64-bit integer (LLVM: one
    ``i64`` load, no alignment assumed).

    The histogram kernels read a row's bins 8 (uint8) or 4 (uint16) at a time this way and take
    each bin from the word by shifts, instead of one load per bin: on little-endian machines
    (:data:`LITTLE_ENDIAN`) bin ``k`` of the word is ``(word >> (k * bits)) & mask``. ``array``
    is an array of any layout whose items from ``index`` on are 8 contiguous bytes (unit stride
    along its last axis, ``index`` at least ``8 / itemsize`` items before the end of that axis:
    not checked); ``index`` an integer (1-D) or a tuple of ``array.ndim`` integers.
    """
    sig = types.uint64(array, index)

    def codegen(context, builder, signature, args):
        ptr = _item_pointer(context, builder, signature, args)
        word = builder.bitcast(ptr, ir.IntType(64).as_pointer())
        return builder.load(word, align=1)

    return sig, codegen


def bin_bits(array):
    """Bits per item of ``array`` (8 for uint8 bins, 16 for uint16), as a constant of each
    compiled kernel: numba reads an array's ``itemsize`` at run time, which would keep a loop
    over a word's bins (:func:`load_word`) from being unrolled."""
    return array.dtype.itemsize * 8


@overload(bin_bits, jit_options={"cache": True})
def _bin_bits(array):
    bits = array.dtype.bitwidth
    return lambda array: bits


@numba.njit(inline="always", cache=True, nogil=True)
def whole_words(X_binned, n_columns, allowed):
    """How many whole words of bins (:func:`load_word`) a kernel reads from each row's slice of
    ``n_columns`` consecutive columns of ``X_binned`` before reading the rest one bin at a
    time: ``n_columns // (64 / bits)`` when ``allowed``, the machine is little-endian and a
    row's columns are contiguous in memory, else 0."""
    if not (allowed and LITTLE_ENDIAN and X_binned.strides[1] == X_binned.itemsize):
        return 0
    return n_columns // (64 // bin_bits(X_binned))


@numba.njit(inline="always", cache=True, nogil=True)
def word_bin(word, k, bits):
    """Bin ``k`` of a word from :func:`load_word` holding bins of ``bits`` bits (little-endian:
    the first bin in the lowest bits), as an int64."""
    return np.int64((word >> np.uint64(bits * k)) & np.uint64((1 << bits) - 1))
