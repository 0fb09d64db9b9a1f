"""Atomic operations on int64 array cells for Numba code: what a team of threads needs to share claimed work.

Numba's parallel loops end in a join that waits for every thread of the pool; on a machine whose cores are busy
with other processes a thread may be off its core for milliseconds, and a strategy that synchronises hundreds of
times an epoch (the chunked one, once per chunk) then waits that long each time. A team that claims small units of
work from a shared counter needs no thread but the one that publishes the work to be present: a unit is done by
whoever claims it, and the publisher waits only for units claimed and not yet finished. These are its primitives:
LLVM's atomic instructions on one cell of a C-contiguous int64 array (sequentially consistent read-modify-writes,
acquire loads, release stores) and a polite wait (the CPU's pause hint, then short sleeps).
"""

from __future__ import annotations

from llvmlite import ir as llvm_ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .moves_cpu import JIT_CACHE

SPIN_ROUNDS = 1024  # pause hints before a wait starts sleeping
SLEEP_MICROSECONDS = 20  # a waiting thread's sleep per round after that


def _cell_pointer(context, builder, array_type, array, index):
    """Pointer to ``array[index]`` (no bounds check: the callers index fixed cells)."""
    ary = context.make_array(array_type)(context, builder, array)
    return cgutils.get_item_pointer(context, builder, array_type, ary, [index])


def _int64_cells(array):
    return isinstance(array, types.Array) and array.dtype == types.int64 and array.ndim == 1


@intrinsic
def atomic_load(typingctx, array, index):
    """``array[index]`` read with acquire ordering (the writes published before it are seen after it)."""
    if not _int64_cells(array):
        return None

    def codegen(context, builder, sig, args):
        ptr = _cell_pointer(context, builder, sig.args[0], args[0], args[1])
        return builder.load_atomic(ptr, "acquire", 8)

    return types.int64(array, index), codegen


@intrinsic
def atomic_store(typingctx, array, index, value):
    """``array[index] = value`` with release ordering (the writes before it are seen by an acquire load of it)."""
    if not _int64_cells(array):
        return None

    def codegen(context, builder, sig, args):
        ptr = _cell_pointer(context, builder, sig.args[0], args[0], args[1])
        value = context.cast(builder, args[2], sig.args[2], types.int64)
        builder.store_atomic(value, ptr, "release", 8)
        return context.get_dummy_value()

    return types.void(array, index, value), codegen


@intrinsic
def atomic_add(typingctx, array, index, value):
    """``array[index] += value`` as one atomic step (sequentially consistent); returns the old value."""
    if not _int64_cells(array):
        return None

    def codegen(context, builder, sig, args):
        ptr = _cell_pointer(context, builder, sig.args[0], args[0], args[1])
        value = context.cast(builder, args[2], sig.args[2], types.int64)
        return builder.atomic_rmw("add", ptr, value, "seq_cst")

    return types.int64(array, index, value), codegen


@intrinsic
def compare_and_swap(typingctx, array, index, expected, value):
    """``array[index] = value`` if it holds ``expected``, as one atomic step; whether it did."""
    if not _int64_cells(array):
        return None

    def codegen(context, builder, sig, args):
        ptr = _cell_pointer(context, builder, sig.args[0], args[0], args[1])
        expected = context.cast(builder, args[2], sig.args[2], types.int64)
        value = context.cast(builder, args[3], sig.args[3], types.int64)
        outcome = builder.cmpxchg(ptr, expected, value, "seq_cst", "seq_cst")
        return builder.extract_value(outcome, 1)

    return types.boolean(array, index, expected, value), codegen


@intrinsic
def _cpu_pause(typingctx):
    """x86's ``pause`` (a spin-wait hint; elsewhere nothing)."""

    def codegen(context, builder, sig, args):
        if builder.module.triple.startswith(("x86_64", "i686", "i386")):
            fn = cgutils.get_or_insert_function(builder.module, llvm_ir.FunctionType(llvm_ir.VoidType(), []),
                                                "llvm.x86.sse2.pause")
            builder.call(fn, [])
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def _sleep_microseconds(typingctx, microseconds):
    """The C library's ``usleep``: leave the core for about that long."""
    if not isinstance(microseconds, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, llvm_ir.FunctionType(llvm_ir.IntType(32),
                                                                                 [llvm_ir.IntType(32)]), "usleep")
        builder.call(fn, [builder.trunc(args[0], llvm_ir.IntType(32))])
        return context.get_dummy_value()

    return types.void(microseconds), codegen


@njit(cache=JIT_CACHE, nogil=True)
def spin(rounds):
    """One round of a wait loop: the pause hint for the first SPIN_ROUNDS rounds (tens of microseconds: work
    published soon after is taken at once), then a sleep of SLEEP_MICROSECONDS a round, which leaves the core to
    the thread waited for, or to other processes, on a busy machine.

    Parameters
    ----------
    rounds : int
        How many rounds this wait has spun so far.
    """
    if rounds < SPIN_ROUNDS:
        _cpu_pause()
    else:
        _sleep_microseconds(min(SLEEP_MICROSECONDS << min((rounds - SPIN_ROUNDS) // 4, 6), 1000))
