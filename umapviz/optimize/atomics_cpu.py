"""Atomic operations on int64 array elements for Numba CPU code, and a polite spin wait.

Numba has no CPU atomics, so these are LLVM instructions emitted through ``@intrinsic``: a read-modify-write
(add, exchange) in sequential consistency, loads with acquire (or relaxed) and stores with release ordering. They
let the threads of one parallel region share counters and fixed-point sums without locks (engine_cpu's chunked
epoch). Integer sums are exact whatever order the threads add in, which is what keeps the results bitwise the
same at any thread count.
"""

from __future__ import annotations

import platform
import sys

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

# The spin wait's hint to the processor, an LLVM intrinsic (x86's `pause`, Arm's `yield`: let a sibling hardware
# thread run, save power); other processors spin without one.
_MACHINE = platform.machine().lower()
_X86 = _MACHINE in ("x86_64", "amd64", "i686", "x86")
_ARM64 = _MACHINE in ("aarch64", "arm64")
# Giving the core back to the OS while waiting matters where threads outnumber free cores (a shared machine): a
# waiting thread that only spins can hold the core the thread it waits for needs. POSIX has sched_yield; elsewhere
# the wait only spins.
_YIELD_SYMBOL = None if sys.platform == "win32" else "sched_yield"


def _check_array(ary) -> bool:
    return isinstance(ary, types.Array) and ary.ndim == 1 and ary.dtype == types.int64 and ary.layout in "CA"


def _pointer(context, builder, aryty, ary, idx, idxty):
    """The address of ary[idx] (no wraparound or bounds check: callers index in range)."""
    array = context.make_array(aryty)(context, builder, ary)
    index = context.cast(builder, idx, idxty, types.intp)
    return cgutils.get_item_pointer(context, builder, aryty, array, [index], wraparound=False)


@intrinsic
def atomic_add(typingctx, ary, idx, val):
    """``ary[idx] += val`` as one atomic step (wrapping int64); returns the value before."""
    if not (_check_array(ary) and isinstance(idx, types.Integer) and isinstance(val, types.Integer)):
        return None
    sig = types.int64(ary, idx, val)

    def codegen(context, builder, sig, args):
        ptr = _pointer(context, builder, sig.args[0], args[0], args[1], sig.args[1])
        value = context.cast(builder, args[2], sig.args[2], types.int64)
        return builder.atomic_rmw("add", ptr, value, "seq_cst")

    return sig, codegen


@intrinsic
def atomic_exchange(typingctx, ary, idx, val):
    """``ary[idx] = val`` as one atomic step; returns the value before."""
    if not (_check_array(ary) and isinstance(idx, types.Integer) and isinstance(val, types.Integer)):
        return None
    sig = types.int64(ary, idx, val)

    def codegen(context, builder, sig, args):
        ptr = _pointer(context, builder, sig.args[0], args[0], args[1], sig.args[1])
        value = context.cast(builder, args[2], sig.args[2], types.int64)
        return builder.atomic_rmw("xchg", ptr, value, "seq_cst")

    return sig, codegen


def _load(ordering: str):
    def load(typingctx, ary, idx):
        if not (_check_array(ary) and isinstance(idx, types.Integer)):
            return None
        sig = types.int64(ary, idx)

        def codegen(context, builder, sig, args):
            ptr = _pointer(context, builder, sig.args[0], args[0], args[1], sig.args[1])
            return builder.load_atomic(ptr, ordering, 8)

        return sig, codegen

    return load


atomic_load_acquire = intrinsic(_load("acquire"))
atomic_load_acquire.__doc__ = "``ary[idx]``, read after every write that the store that wrote it released."
atomic_load_relaxed = intrinsic(_load("monotonic"))
atomic_load_relaxed.__doc__ = "``ary[idx]`` as one atomic read, with no ordering of other memory operations."


@intrinsic
def atomic_store_release(typingctx, ary, idx, val):
    """``ary[idx] = val``, after (for a thread that reads it with acquire) every write made before it."""
    if not (_check_array(ary) and isinstance(idx, types.Integer) and isinstance(val, types.Integer)):
        return None
    sig = types.void(ary, idx, val)

    def codegen(context, builder, sig, args):
        ptr = _pointer(context, builder, sig.args[0], args[0], args[1], sig.args[1])
        value = context.cast(builder, args[2], sig.args[2], types.int64)
        builder.store_atomic(value, ptr, "release", 8)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def cpu_relax(typingctx):
    """One spin of a wait loop: the processor's spin hint (or nothing)."""
    sig = types.void()

    def codegen(context, builder, sig, args):
        _relax(builder)
        return context.get_dummy_value()

    return sig, codegen


def _relax(builder) -> None:
    void = ir.VoidType()
    if _X86:
        pause = cgutils.get_or_insert_function(builder.module, ir.FunctionType(void, []), "llvm.x86.sse2.pause")
        builder.call(pause, [])
    elif _ARM64:
        hint = ir.FunctionType(void, [ir.IntType(32)])
        builder.call(cgutils.get_or_insert_function(builder.module, hint, "llvm.aarch64.hint"), [ir.IntType(32)(1)])


@intrinsic
def yield_thread(typingctx):
    """Offer the core to another thread (sched_yield); a spin hint where the platform has no such call."""
    sig = types.void()

    def codegen(context, builder, sig, args):
        if _YIELD_SYMBOL is None:
            _relax(builder)
        else:
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(32), []), _YIELD_SYMBOL)
            builder.call(fn, [])
        return context.get_dummy_value()

    return sig, codegen
