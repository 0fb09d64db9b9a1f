"""The landmark assignment's step on the CPU (Numba): twin of ``grow_owners`` in landmarks_gpu.cu.

:func:`umapviz.graph.landmarks.assign_landmarks` grows each landmark's region of the graph one hop at a time; one
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
