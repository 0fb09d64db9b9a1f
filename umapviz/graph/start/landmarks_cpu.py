"""The landmark assignment's step on the CPU (Numba): twin of ``grow_owners`` in landmarks_gpu.cu.

:func:`umapviz.graph.start.landmarks.assign_landmarks` grows each landmark's region of the graph one hop at a time; one
step labels every vertex still without an owner that has a neighbour labelled in an earlier step. The step reads
only labels of earlier steps and writes only vertices that had none, so the order in which rows run changes
nothing: any thread count, and the GPU's kernel, give the same labels.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(parallel=True, cache=True)
def grow_owners(indptr, indices, weight, level, owner, step):
    """One step: each unlabelled row takes the owner of its heaviest neighbour labelled before ``step``.

    Twin of ``grow_owners`` in landmarks_gpu.cu: change both together. Ties of weight go to the smaller owner;
    the row's level becomes ``step``.

    Parameters
    ----------
    indptr, indices : ndarray
        The CSR structure (int64 row pointers, int32 column indices).
    weight : ndarray
        Edge weights (float32, or their exact float64 widening: the comparisons are the same).
    level : ndarray
        int32 step at which each row was labelled, -1 where it has no owner yet (updated).
    owner : ndarray
        int32 landmark owning each row (updated where a row is labelled).
    step : int
        This step's number (landmarks are step 0).

    Returns
    -------
    int
        How many rows this step labelled.
    """
    n = level.size
    labelled = np.zeros(n, dtype=np.uint8)
    for row in numba.prange(n):
        if level[row] >= 0:
            continue
        best, best_w = -1, np.float32(-1.0)
        for p in range(indptr[row], indptr[row + 1]):
            j = indices[p]
            lj = level[j]
            if lj < 0 or lj >= step:
                continue
            w = weight[p]
            if w > best_w or (w == best_w and owner[j] < best):
                best, best_w = owner[j], w
        if best >= 0:
            owner[row] = best
            level[row] = step
            labelled[row] = 1
    return int(labelled.sum())


@numba.njit(parallel=True, cache=True)
def _fixed(weight, scale):
    """``rint(float64(w) * scale)`` as int64, per entry (landmarks._fixed_weights' arithmetic, in one pass)."""
    out = np.empty(weight.size, dtype=np.int64)
    for p in numba.prange(weight.size):
        out[p] = np.int64(np.rint(np.float64(weight[p]) * scale))
    return out


@numba.njit(cache=True)
def _region_rows(owner, n_landmarks):
    """The rows of each landmark's region, ascending (a counting sort by owner), and each region's first."""
    ptr = np.zeros(n_landmarks + 1, dtype=np.int64)
    for r in range(owner.size):
        ptr[owner[r] + 1] += 1
    for a in range(n_landmarks):
        ptr[a + 1] += ptr[a]
    fill = ptr[:-1].copy()
    rows = np.empty(owner.size, dtype=np.int64)
    for r in range(owner.size):
        rows[fill[owner[r]]] = r
        fill[owner[r]] += 1
    return rows, ptr


@numba.njit(parallel=True, cache=True)
def _coarse_rows(
    indptr, indices, fixed, owner, rows, region_ptr, n_landmarks, n_tasks, counts_only, coarse_ptr, cols, sums
):
    """Per landmark ``a``, the landmarks its region's edges reach and their weights' sums: with ``counts_only``
    how many (into ``coarse_ptr[a + 1]``), else the sorted landmarks and sums into ``cols``/``sums`` from
    ``coarse_ptr[a]``. Each task takes a range of landmarks with its own dense scratch row."""
    per_task = (n_landmarks + n_tasks - 1) // n_tasks
    for task in numba.prange(n_tasks):
        total = np.zeros(n_landmarks, dtype=np.int64)
        seen = np.full(n_landmarks, -1, dtype=np.int64)
        touched = np.empty(n_landmarks, dtype=np.int64)
        for a in range(task * per_task, min(n_landmarks, (task + 1) * per_task)):
            n_touched = 0
            for q in range(region_ptr[a], region_ptr[a + 1]):
                r = rows[q]
                for p in range(indptr[r], indptr[r + 1]):
                    b = owner[indices[p]]
                    if seen[b] != a:
                        seen[b] = a
                        total[b] = 0
                        touched[n_touched] = b
                        n_touched += 1
                    total[b] += fixed[p]
            if counts_only:
                coarse_ptr[a + 1] = n_touched
            else:
                order = np.sort(touched[:n_touched])
                at = coarse_ptr[a]
                for i in range(n_touched):
                    cols[at + i] = order[i]
                    sums[at + i] = total[order[i]]


def coarse_sums(indptr, indices, weight, owner, n_landmarks: int, scale: float):
    """The coarse graph's CSR in fixed point on the CPU: between landmarks ``a`` and ``b`` the sum of
    ``rint(w * scale)`` over the edges from ``a``'s region to ``b``'s, exact in int64 (so any order of summation
    gives these integers, as the GPU's sort and cumulative sum does).

    Parameters
    ----------
    indptr, indices, weight : ndarray
        The adjacency's CSR arrays (int64, int32, float32 or their float64 widening).
    owner : ndarray
        int32 landmark of each row.
    n_landmarks : int
        How many landmarks.
    scale : float
        The fixed point's unit, inverted (2**32).

    Returns
    -------
    (ndarray, ndarray, ndarray)
        int64 row pointers, int32 sorted columns and int64 sums.
    """
    fixed = _fixed(weight, scale)
    rows, region_ptr = _region_rows(owner, n_landmarks)
    n_tasks = min(n_landmarks, 8 * numba.get_num_threads())
    coarse_ptr = np.zeros(n_landmarks + 1, dtype=np.int64)
    empty = np.empty(0, dtype=np.int64)
    _coarse_rows(indptr, indices, fixed, owner, rows, region_ptr, n_landmarks, n_tasks, True, coarse_ptr, empty, empty)
    np.cumsum(coarse_ptr, out=coarse_ptr)
    cols = np.empty(int(coarse_ptr[-1]), dtype=np.int64)
    sums = np.empty(int(coarse_ptr[-1]), dtype=np.int64)
    _coarse_rows(indptr, indices, fixed, owner, rows, region_ptr, n_landmarks, n_tasks, False, coarse_ptr, cols, sums)
    return coarse_ptr, cols.astype(np.int32), sums
