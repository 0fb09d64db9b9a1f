"""Seeds and the counter-based hash that picks negative samples.

A stateful per-thread generator would make the drawn vertices depend on which thread ran which edge. A hash of
(seed, epoch, edge, sample) does not, and the GPU kernels compute the very same function (docs/optimizer.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from .._validation import SEED_LIMIT, RandomStateLike, check_random_state

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_C_EPOCH = np.uint64(0x9E3779B97F4A7C15)
_C_EDGE = np.uint64(0xD1B54A32D192ED03)
_C_SAMPLE = np.uint64(0x8CB92BA72F3D8DD7)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)


def resolve_seed(random_state: RandomStateLike) -> int:
    """The seed of a run: the given int (checked: 0 <= seed < 2**32), one drawn from a NumPy RandomState or
    Generator (see check_random_state), or a fresh one from OS entropy for None."""
    seed = check_random_state(random_state)
    return int(np.random.SeedSequence().entropy) % SEED_LIMIT if seed is None else seed


_SHUFFLE_BLOCK = 1 << 20  # swaps drawn (and applied) at a time


def edge_order(seed: int, nnz: int) -> np.ndarray:
    """The seed's processing order of the edges (int32 permutation): ``default_rng([seed, 2]).permutation(nnz)``.

    The same bytes as NumPy's shuffle of ``arange(nnz, dtype=int32)`` (a Fisher-Yates shuffle: for ``i`` from
    ``nnz - 1`` down to 1, swap places ``i`` and ``j``, ``j`` drawn by NumPy's ``random_interval(i)``, bounded
    masked rejection on the generator's 32-bit outputs), made in two passes per block of ``i``: the draws
    (:func:`_swap_blocks`, from the generator's raw 64-bit outputs, low half first as NumPy splits them), on a
    second thread while this one applies the previous block's swaps (:func:`_apply_swaps`), whose reads no longer
    wait on the generator's branches, so the processor overlaps their cache misses
    (tests/test_optimize.py checks the bytes against NumPy's; bench/RESULTS.md, "Optimizer set-up", the time).

    Parameters
    ----------
    seed : int
        The run's seed.
    nnz : int
        Edges of the graph (below 2**31).
    """
    order = np.arange(nnz, dtype=np.int32)
    blocks = _swap_blocks(np.random.default_rng([seed, 2]).bit_generator, nnz)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="umapviz-edge-draws") as pool:
        pending = pool.submit(next, blocks, None)
        while (block := pending.result()) is not None:
            pending = pool.submit(next, blocks, None)
            _apply_swaps(order, *block)
    return order


def _swap_blocks(bit_generator, nnz: int) -> Iterator[tuple[int, np.ndarray, int]]:
    """``(top, swaps, count)`` a block at a time: ``swaps[q]`` is the place swapped with ``top - q``, for ``q <
    count``, continuing NumPy's draws from ``bit_generator`` where the previous block stopped."""
    raw, used, high, has_high = np.empty(0, dtype=np.uint64), 0, np.uint64(0), False
    top = nnz - 1
    while top >= 1:
        swaps = np.empty(min(_SHUFFLE_BLOCK, top), dtype=np.int64)
        filled = 0
        while filled < swaps.size:
            count, used, high, has_high = _draw_swaps(
                raw, used, np.uint64(high), has_high, top - filled, swaps[filled:]
            )
            filled += count
            if filled < swaps.size:  # the raw outputs ran out: the next ones, from where they stopped
                raw, used = bit_generator.random_raw(_SHUFFLE_BLOCK), 0
        yield top, swaps, filled
        top -= filled


@njit(cache=True, nogil=True)
def _draw_swaps(raw, used, high, has_high, top, swaps):
    """``swaps[q]``: the place swapped with ``top - q``, by NumPy's ``random_interval`` over the 32-bit stream of
    ``raw[used:]`` (each 64-bit output gives its low half, then its high half, kept in ``high`` between calls).
    Stops when ``swaps`` is full, ``top - q`` reaches 0 or ``raw`` runs out; returns (draws made, ``used``,
    ``high``, ``has_high``)."""
    q = 0
    low32 = np.uint64(0xFFFFFFFF)
    while q < swaps.size and top - q >= 1:
        bound = np.uint64(top - q)
        mask = bound
        mask |= mask >> np.uint64(1)
        mask |= mask >> np.uint64(2)
        mask |= mask >> np.uint64(4)
        mask |= mask >> np.uint64(8)
        mask |= mask >> np.uint64(16)
        while True:
            if has_high:
                value = high
                has_high = False
            else:
                if used >= raw.size:
                    return q, used, high, has_high
                word = raw[used]
                used += 1
                high = word >> np.uint64(32)
                has_high = True
                value = word & low32
            value &= mask
            if value <= bound:
                break
        swaps[q] = np.int64(value)
        q += 1
    return q, used, high, has_high


@njit(cache=True, nogil=True)
def _apply_swaps(order, top, swaps, count):
    """Swap place ``top - q`` with ``swaps[q]``, for ``q`` in order."""
    for q in range(count):
        place = top - q
        other = swaps[q]
        kept = order[other]
        order[other] = order[place]
        order[place] = kept


@njit(cache=True, inline="always")
def _mix(z):
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True, inline="always")
def negative_vertex(seed, epoch, edge, sample, n_vertices):
    """Vertex drawn for negative sample `sample` of `edge` in `epoch` (Numba; uint64 wrapping arithmetic)."""
    h = _mix(np.uint64(seed) ^ (np.uint64(epoch) * _C_EPOCH))
    h = _mix(h ^ (np.uint64(edge) * _C_EDGE))
    h = _mix(h ^ (np.uint64(sample) * _C_SAMPLE))
    return np.int64(h % np.uint64(n_vertices))


def negative_vertices(seed: int, epoch: int, edges: np.ndarray, sample: int, n_vertices: int) -> np.ndarray:
    """NumPy twin of `negative_vertex` over an array of edges, for tests and other backends."""

    def mix(z: np.ndarray) -> np.ndarray:
        z = (z ^ (z >> _S30)) * _M1
        z = (z ^ (z >> _S27)) * _M2
        return z ^ (z >> _S31)

    with np.errstate(over="ignore"):
        e = np.asarray(edges, dtype=np.uint64)
        h = mix(np.full(e.shape, np.uint64(seed) ^ (np.uint64(epoch) * _C_EPOCH), dtype=np.uint64))
        h = mix(h ^ (e * _C_EDGE))
        h = mix(h ^ (np.uint64(sample) * _C_SAMPLE))
    return (h % np.uint64(n_vertices)).astype(np.int64)
