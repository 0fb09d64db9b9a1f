"""The sampled spectral start: the eigen-solve on a coarse graph of landmarks, interpolated back to every vertex.

For a graph of millions of vertices the full eigen-solve (:func:`.spectral.leading_eigenpairs`) spends
hundreds of sparse products on the whole graph. :func:`sampled_eigenpairs` solves instead on the coarse graph of
:mod:`.landmarks` (about one vertex in ``ROWS_PER_LANDMARK``: ``P^T W P`` for the landmarks' regions), whose
eigenvectors approximate the graph's at the scale of a region, and brings them back:

1. each coarse eigenvector ``u_c`` of ``D_c^-1/2 W_c D_c^-1/2`` becomes the random-walk vector ``D_c^-1/2 u_c``,
   constant over each region, then ``D^1/2`` times it on the fine rows (the same change of basis backwards);
2. ``SMOOTHING_STEPS`` steps of the lazy walk ``x <- (x + D^-1/2 W D^-1/2 x) / 2`` interpolate it inside and
   between the regions: each vertex moves halfway to the weighted mean of its neighbours, which keeps the slow
   (leading) eigenvectors and damps what the regions' steps added;
3. the trivial direction ``D^1/2 1`` is projected out again.

Every step is the full solve's primitives (the sparse product, per-component dot products and combinations, which
sum in one fixed order on either device: :mod:`.spectral_cpu`, :mod:`.spectral_gpu`), element-wise float64
arithmetic (correctly rounded on both) or the landmarks' integer work, so the CPU and the GPU give the same bytes.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse

from ..._backend import gpu_memory, to_host
from .landmarks import ROWS_PER_LANDMARK, assign_landmarks, choose_landmarks, coarse_graph
from .spectral import leading_eigenpairs
from .spectral_cpu import HostOps

SMOOTHING_STEPS = 8  # lazy walk steps after the interpolation (bench/RESULTS.md, "Sampled spectral start")


def check_gpu_memory(n: int, nnz: int) -> None:
    """MemoryError where the sampled start's arrays (the adjacency, the coarse graph's sort, a few vectors) would
    not fit in half the free GPU memory; the caller then works on the CPU, which gives the same bytes.

    Parameters
    ----------
    n : int
        Rows of the adjacency.
    nnz : int
        Its entries.
    """
    free, need = gpu_memory()[0], 8 * n * 12 + 8 * 7 * nnz
    if need > free // 2:
        raise MemoryError(
            f"the sampled spectral start of {n:,} rows and {nnz:,} edges needs {need:,} bytes, more "
            f"than half the free GPU memory ({free:,} bytes)"
        )


def sampled_eigenpairs(
    adj: scipy.sparse.csr_matrix,
    bounds: np.ndarray,
    n_vec: int,
    seed: int,
    device: str,
    stats: dict | None = None,
    rows_per_landmark: int = ROWS_PER_LANDMARK,
    smoothing_steps: int = SMOOTHING_STEPS,
) -> list:
    """Per component, approximate leading eigenpairs of ``D^-1/2 W D^-1/2``: the coarse graph's eigenvalues and
    the interpolated eigenvectors (the first, trivial one, exactly ``D^1/2 1`` normalised).

    Parameters
    ----------
    adj : scipy.sparse.csr_matrix
        Symmetric adjacency with float32 weights, rows grouped by connected component.
    bounds : ndarray
        Component ``c`` owns rows ``bounds[c]`` to ``bounds[c + 1] - 1``.
    n_vec : int
        Eigenpairs per component.
    seed : int
        Seeds the landmarks (:func:`umapviz.graph.start.landmarks.choose_landmarks`).
    device : str
        ``"cpu"`` or ``"gpu"``: the same bytes.
    stats : dict, optional
        Receives ``landmarks``, ``coarse_edges``, the coarse solve's ``products`` and ``seconds``, each stage's
        (``setup``, ``landmarks``, ``coarse_graph``, ``coarse_solve``, ``interpolation``; the GPU synchronised
        after each, only when ``stats`` is given).
    rows_per_landmark : int
        Rows per landmark on average.
    smoothing_steps : int
        Lazy-walk steps after the interpolation.

    Returns
    -------
    list
        Per component, (eigenvalues in descending order, ``(size, n_vec)`` float64 host vectors), or None where
        the coarse solve did not converge.

    Raises
    ------
    MemoryError
        On the GPU, where the arrays would not fit in half its free memory.
    """
    bounds = np.asarray(bounds, dtype=np.int64)
    seconds: dict = {}
    clock = [time.perf_counter()]

    def lap(stage: str) -> None:
        if stats is None:
            return
        if device == "gpu":
            ops.xp.cuda.Device().synchronize()
        now = time.perf_counter()
        seconds[stage], clock[0] = now - clock[0], now

    if device == "gpu":
        check_gpu_memory(adj.shape[0], adj.nnz)
        from .spectral_gpu import DeviceOps  # noqa: PLC0415 - CuPy loads on the GPU path only

        ops = DeviceOps(adj, bounds)
    else:
        ops = HostOps(adj, bounds)
    xp = ops.xp
    lap("setup")
    is_landmark = choose_landmarks(bounds, seed, rows_per_landmark)
    owner = assign_landmarks(ops.indptr, ops.indices, ops.weight, is_landmark, device)
    n_landmarks = int(is_landmark.sum())
    lap("landmarks")
    coarse = coarse_graph(ops.indptr, ops.indices, ops.weight, owner, n_landmarks, device)
    lap("coarse_graph")
    coarse_bounds = np.concatenate([[0], np.cumsum(np.add.reduceat(is_landmark.astype(np.int64), bounds[:-1]))])
    solve_stats: dict = {}
    pairs = leading_eigenpairs(coarse, coarse_bounds, n_vec, device, solve_stats)
    lap("coarse_solve")
    walk = np.zeros((n_landmarks, n_vec))  # D_c^-1/2 u_c: the coarse random-walk vectors
    for c, pair in enumerate(pairs):
        if pair is not None:
            walk[coarse_bounds[c] : coarse_bounds[c + 1]] = pair[1]
    walk *= to_host(type(ops)(coarse, coarse_bounds).inv_sqrt_degree)[:, None]  # the twins' row sums: one result
    sqrt_degree = 1.0 / ops.inv_sqrt_degree
    trivial = sqrt_degree / xp.sqrt(ops.seg_dots(sqrt_degree[None], 1, sqrt_degree)[:, 0])[ops.comp_of]
    vectors = np.empty((ops.n, n_vec))
    vectors[:, 0] = to_host(trivial)
    for k in range(1, n_vec):
        x = sqrt_degree * xp.asarray(np.ascontiguousarray(walk[:, k]))[owner]
        for _ in range(smoothing_steps):
            x = 0.5 * (x + ops.matvec(x))
        x = ops.combine(trivial[None], 1, ops.seg_dots(trivial[None], 1, x), x, -1.0)
        vectors[:, k] = to_host(x)
    lap("interpolation")
    if stats is not None:
        stats.update(
            landmarks=n_landmarks, coarse_edges=int(coarse.nnz), products=solve_stats["products"], seconds=seconds
        )
    return [None if pair is None else (pair[0], vectors[bounds[c] : bounds[c + 1]]) for c, pair in enumerate(pairs)]


__all__ = ["ROWS_PER_LANDMARK", "SMOOTHING_STEPS", "check_gpu_memory", "sampled_eigenpairs"]
