"""UMAP's fuzzy simplicial set on an NVIDIA GPU (CuPy), with the CPU set's contract.

sigma/rho and the directed memberships run as GPU kernels (fuzzy_gpu.cu) mirroring
:mod:`umapviz.graph.fuzzy.fuzzy_cpu` operation for operation, with twins of the C library's exp and expf that the CPU
calls (glibc's algorithms, step for step); the union ``A + A^T - A*A^T`` is a sort by (row, column) on the GPU,
in float32 as on the CPU. From the same kNN the GPU's fuzzy set is the CPU's, bit for bit, where the CPU's C
library is glibc (2.28 or later, with FMA: every x86-64 CPU since 2013); another C library's exp may differ in
the last bit.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from ..._backend import cupy, to_host
from . import bisection_units, from_bisection_units

KERNELS = Path(__file__).with_name("fuzzy_gpu.cu")


@functools.lru_cache(maxsize=1)
def _module():
    cp = cupy()
    return cp.RawModule(code=KERNELS.read_text(), options=("--std=c++17", "--fmad=false"))


def smooth_knn_dist_gpu(knn_dists):
    """``(sigma, rho)`` float32 CuPy arrays per point, as :func:`umapviz.graph.fuzzy.fuzzy_cpu.smooth_knn_dist`."""
    cp = cupy()
    dists = cp.ascontiguousarray(cp.asarray(knn_dists, dtype=cp.float32))
    n, k = dists.shape
    # The CPU takes np.mean of the float32 array (pairwise float32 sums): take it on the host, the same way.
    global_mean = float(np.mean(to_host(dists)))
    scaled, scale = bisection_units(dists)  # rows of extreme scale, as on the CPU
    sigma = cp.empty(n, dtype=cp.float32)
    rho = cp.empty(n, dtype=cp.float32)
    _module().get_function("smooth_knn_dist")(
        (-(-n // 256),),
        (256,),
        (scaled, np.int32(n), np.int32(k), np.float64(np.log2(k)), np.float64(global_mean), sigma, rho),
    )
    return from_bisection_units(sigma, rho, scale)


def fuzzy_simplicial_set_gpu(knn_indices, knn_dists):
    """The symmetric fuzzy graph as CuPy CSR pieces ``(indptr int64, indices int32, data float32)``.

    Same content as :func:`umapviz.graph.fuzzy.fuzzy_cpu.fuzzy_simplicial_set` (sorted indices, no explicit zeros),
    bit for bit (see the module docstring).
    """
    cp = cupy()
    indices = cp.ascontiguousarray(cp.asarray(knn_indices, dtype=cp.int32))
    dists = cp.ascontiguousarray(cp.asarray(knn_dists, dtype=cp.float32))
    if indices.shape != dists.shape or indices.ndim != 2:
        raise ValueError(
            f"knn_indices {indices.shape} and knn_dists {dists.shape} must be 2-D arrays of the same shape."
        )
    n, k = indices.shape
    sigma, rho = smooth_knn_dist_gpu(dists)
    vals = cp.empty(n * k, dtype=cp.float32)
    _module().get_function("memberships")(
        (-(-(n * k) // 256),), (256,), (indices, dists, sigma, rho, np.int32(n), np.int32(k), vals)
    )
    rows = cp.repeat(cp.arange(n, dtype=cp.int64), k)
    cols = indices.ravel().astype(cp.int64)
    keep = vals != 0
    rows, cols, vals = rows[keep], cols[keep], vals[keep]
    # Union: each (r, c) appears once from A and, if present, once from A^T; w = (a + b) - a * b in float32.
    all_r = cp.concatenate([rows, cols])
    all_c = cp.concatenate([cols, rows])
    all_v = cp.concatenate([vals, vals])
    # Sort by (row, column), A's entry before A^T's: key * 2 + (0 for A, 1 for A^T).
    key2 = (all_r * n + all_c) * 2
    key2[rows.size :] += 1
    order = cp.argsort(key2)
    key, all_v = key2[order] // 2, all_v[order]
    del all_r, all_c, key2, order
    pair = cp.zeros(key.size, dtype=bool)
    pair[:-1] = key[1:] == key[:-1]
    first = cp.ones(key.size, dtype=bool)
    first[1:] = ~pair[:-1]
    at = cp.flatnonzero(first)
    a = all_v[at]
    b = cp.where(pair[at], all_v[cp.minimum(at + 1, key.size - 1)], cp.float32(0))
    w = (a + b) - a * b
    ukey = key[first]
    nz = w != 0
    ukey, w = ukey[nz], w[nz]
    r = ukey // n
    indptr = cp.zeros(n + 1, dtype=cp.int64)
    indptr[1:] = cp.cumsum(cp.bincount(r, minlength=n))
    return indptr, (ukey % n).astype(cp.int32), w.astype(cp.float32)
