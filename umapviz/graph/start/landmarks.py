"""A graph coarsened around landmarks: the sampled spectral start's coarse graph, the same on either device.

A seeded sample of the vertices are the landmarks (about one in ``ROWS_PER_LANDMARK``, and each component's first
vertex). Every vertex joins one landmark: the landmarks' regions grow a hop at a time, each new vertex taking the
owner of its heaviest neighbour already labelled (:func:`assign_landmarks`, steps with twins in
:mod:`.landmarks_cpu` and :mod:`.landmarks_gpu`). The coarse graph (:func:`coarse_graph`) has one vertex per
landmark and, between two landmarks, the sum of the weights of the edges between their regions (a region's own
edges become a loop): the Galerkin projection ``P^T W P`` of the adjacency onto the regions' indicators. The sums
are taken in fixed point (2**-32 units, int64), which adds the same integers in any order, so the CPU (Numba's
sums per region) and the GPU (a sort and a cumulative sum) give the same coarse graph.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse

from .adjacency import CsrArrays
from .landmarks_cpu import coarse_sums, grow_owners

ROWS_PER_LANDMARK = 64  # vertices per landmark on average: a region is about two hops of a kNN graph across
_FIX = 2.0**32  # fixed-point units of the coarse weights' sums: 2**63 holds 2**31 edges of weight 1


def choose_landmarks(bounds: np.ndarray, seed: int, rows_per_landmark: int = ROWS_PER_LANDMARK) -> np.ndarray:
    """Which rows are landmarks: those whose draw of ``default_rng([seed, 3]).random(n)`` is below
    ``1 / rows_per_landmark``, and the first row of each component (so each has one).

    Parameters
    ----------
    bounds : ndarray
        Component ``c`` owns rows ``bounds[c]`` to ``bounds[c + 1] - 1``.
    seed : int
        The start's seed.
    rows_per_landmark : int
        Rows per landmark on average.

    Returns
    -------
    ndarray
        Boolean mask over the rows.
    """
    bounds = np.asarray(bounds, dtype=np.int64)
    pick = np.random.default_rng([int(seed), 3]).random(int(bounds[-1])) < 1.0 / rows_per_landmark
    pick[bounds[:-1]] = True
    return pick


def assign_landmarks(indptr, indices, weight, is_landmark: np.ndarray, device: str):
    """Each row's landmark (its number among the landmarks, in row order), grown a hop at a time from the
    landmarks: a row takes the owner of its heaviest neighbour labelled in an earlier step (ties: the smaller
    owner). The same labels on either device.

    Parameters
    ----------
    indptr, indices, weight : ndarray
        The symmetric adjacency's CSR arrays (int64, int32, float32; the host's weights widened to float64, exactly),
        on ``device`` (NumPy or CuPy).
    is_landmark : ndarray
        Host boolean mask of the landmarks (:func:`choose_landmarks`).
    device : str
        ``"cpu"`` or ``"gpu"``.

    Returns
    -------
    ndarray
        int32 owner of each row, on ``device``.

    Raises
    ------
    ValueError
        If some row is never reached (a component without a landmark).
    """
    n = is_landmark.size
    owner = np.full(n, -1, dtype=np.int32)
    owner[is_landmark] = np.arange(int(is_landmark.sum()), dtype=np.int32)
    level = np.where(is_landmark, 0, -1).astype(np.int32)
    if device == "gpu":
        from ..._backend import cupy  # noqa: PLC0415 - CuPy loads on the GPU path only
        from .landmarks_gpu import grow_owners_gpu  # noqa: PLC0415 - the GPU twin, with CuPy

        cp = cupy()
        owner, level, grow = cp.asarray(owner), cp.asarray(level), grow_owners_gpu
    else:
        grow = grow_owners
    step, labelled = 1, int(is_landmark.sum())
    while labelled < n:
        added = grow(indptr, indices, weight, level, owner, step)
        if added == 0:
            raise ValueError(f"{n - labelled:,} rows are not connected to any landmark; every component needs one.")
        labelled += added
        step += 1
    return owner


def _fixed_weights(weight, xp):
    """The weights in fixed point: ``rint(float64(w) * 2**32)`` as int64 (exact steps, the same on either device)."""
    return xp.rint(weight.astype(xp.float64) * _FIX).astype(xp.int64)


def _to_float32(sums):
    """The fixed-point sums as float32 (a power-of-two scaling, exact, then one rounding), on their device."""
    return (sums.astype(np.float64) * (1.0 / _FIX)).astype(np.float32)


def coarse_graph_sorted(indptr, indices, weight, owner, n_landmarks: int, xp) -> CsrArrays:
    """:func:`coarse_graph` by a sort of the edges' (owner, owner) keys and a cumulative sum of their fixed-point
    weights, on any array module (the GPU's way; on NumPy, for tests); the CSR arrays stay on ``xp``'s device.

    Parameters
    ----------
    indptr, indices, weight : ndarray
        The adjacency's CSR arrays on ``xp``.
    owner : ndarray
        int32 landmark of each row, on ``xp``.
    n_landmarks : int
        How many landmarks.
    xp : module
        NumPy or CuPy.
    """
    n_edges = int(indices.size)
    rows = xp.searchsorted(indptr, xp.arange(n_edges, dtype=xp.int64), side="right") - 1
    keys = owner[rows].astype(xp.int64) * n_landmarks + owner[indices]
    del rows
    order = xp.argsort(keys)
    keys = keys[order]
    sums = xp.cumsum(_fixed_weights(weight, xp)[order])
    del order
    last = xp.flatnonzero(xp.concatenate([keys[1:] != keys[:-1], xp.ones(1, dtype=bool)]))
    totals = xp.diff(xp.concatenate([xp.zeros(1, dtype=xp.int64), sums[last]]))
    keys = keys[last]
    rows, cols = keys // n_landmarks, (keys % n_landmarks).astype(xp.int32)
    coarse_ptr = xp.searchsorted(rows, xp.arange(n_landmarks + 1, dtype=xp.int64))
    return CsrArrays(coarse_ptr.astype(xp.int64), cols, _to_float32(totals))


def coarse_graph(indptr, indices, weight, owner, n_landmarks: int, device: str):
    """The coarse graph ``P^T W P``: between landmarks ``a`` and ``b``, the sum of the weights of the edges from
    ``a``'s region to ``b``'s, float32 from exact fixed-point sums (the same on either device): a SciPy matrix on the
    CPU, :class:`umapviz.graph.start.adjacency.CsrArrays` on the GPU (where the coarse solve reads it).

    Parameters
    ----------
    indptr, indices, weight : ndarray
        The adjacency's CSR arrays (int64, int32, float32; the host's widened to float64, exactly), on ``device``.
    owner : ndarray
        int32 landmark of each row, on ``device``.
    n_landmarks : int
        How many landmarks.
    device : str
        ``"cpu"`` (each region's sums in Numba: :func:`umapviz.graph.start.landmarks_cpu.coarse_sums`) or ``"gpu"``
        (:func:`coarse_graph_sorted` on CuPy).
    """
    if device == "gpu":
        from ..._backend import cupy  # noqa: PLC0415 - CuPy loads on the GPU path only

        return coarse_graph_sorted(indptr, indices, weight, owner, n_landmarks, cupy())
    coarse_ptr, cols, sums = coarse_sums(indptr, indices, weight, owner, n_landmarks, _FIX)
    return scipy.sparse.csr_matrix((_to_float32(sums), cols, coarse_ptr), shape=(n_landmarks, n_landmarks))
