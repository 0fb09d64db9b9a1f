"""Seeds and the counter-based hash that picks negative samples.

A stateful per-thread generator would make the drawn vertices depend on which thread ran which edge. A hash of
(seed, epoch, edge, sample) does not, and the GPU kernels compute the very same function (docs/optimizer.md).
"""

from __future__ import annotations

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


def edge_order(seed: int, nnz: int) -> np.ndarray:
    """The seed's processing order of the edges (int32 permutation): ``default_rng([seed, 2]).permutation(nnz)``,
    shuffled in an int32 array (the same swaps, so the same order, with no int64 copy to narrow)."""
    order = np.arange(nnz, dtype=np.int32)
    np.random.default_rng([seed, 2]).shuffle(order)
    return order


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
