"""One edge's moves on the CPU (Numba): the attraction, the negative samples, and how many of those are due.

The CPU engine and ``transform`` both build on these; all arithmetic is float32 with float32 constants, in the
order the GPU kernels (engine_gpu.cu) follow.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .rng import negative_vertex

F0 = np.float32(0.0)
_F1 = np.float32(1.0)
CLIP = np.float32(4.0)  # UMAP's clip of each coordinate of a gradient
_EPS_REP = np.float32(0.001)  # UMAP's guard against a repulsion at distance 0


@njit(cache=True, inline="always")
def clip(x):
    if x > CLIP:
        return CLIP
    if x < -CLIP:
        return -CLIP
    return x


@njit(cache=True, nogil=True, inline="always")
def negatives_due(tf, next_neg, eps_neg):
    """Negative samples of an edge active at epoch tf: floor((tf - next_neg) / eps_neg), at least 0, and 0 when
    negative_sample_rate = 0 makes eps_neg infinite (the ratio is then NaN, which no integer cast should see)."""
    ratio = (tf - next_neg) / eps_neg
    return np.int64(np.floor(ratio)) if ratio >= 1.0 else np.int64(0)


@njit(cache=True, inline="always")
def attract_coef(d2, a, b, c_att):
    """The attraction's gradient coefficient at squared distance d2 (0 for coincident points)."""
    if d2 > F0:
        pb = d2**b
        return ((c_att * pb) / d2) / (a * pb + _F1)
    return F0


@njit(cache=True, inline="always")
def attract(yi, Y, j, a, b, c_att, alpha, tail_move):
    """Attraction of the head copy yi towards row j of Y: moves yi, writes the tail's move."""
    dim = yi.shape[0]
    d2 = F0
    for d in range(dim):
        diff = yi[d] - Y[j, d]
        d2 += diff * diff
    coef = attract_coef(d2, a, b, c_att)
    for d in range(dim):
        g = clip(coef * (yi[d] - Y[j, d]))
        yi[d] += alpha * g
        tail_move[d] = -(alpha * g)


@njit(cache=True, inline="always")
def repel(yi, yfrom, Y, i, e, n_neg, seed, t, n, a, b, c_rep, alpha):
    """The edge's negative samples: each moves yi, computed from yfrom (yi itself, or a frozen copy)."""
    dim = yi.shape[0]
    for s in range(n_neg):
        k = negative_vertex(seed, t, e, s, n)
        if k == i:
            continue
        d2 = F0
        for d in range(dim):
            diff = yfrom[d] - Y[k, d]
            d2 += diff * diff
        if d2 > F0:
            coef = c_rep / ((_EPS_REP + d2) * (a * d2**b + _F1))
            for d in range(dim):
                yi[d] += alpha * clip(coef * (yfrom[d] - Y[k, d]))
        else:
            for d in range(dim):
                yi[d] += alpha * CLIP
