"""Embedding new points into a finished layout (UMAP's ``transform``): only the new points move.

Facts (from UMAP and umap-learn): each new point is joined to its k nearest training points with the weights of
``graph.fuzzy_cpu.new_point_memberships``; it starts at the weight-averaged position of those neighbours (at a
neighbour's own position when one lies at distance 0); edges weaker than ``max(w) / n_epochs`` (or of weight 0)
are dropped and ``epochs_per_sample = max(w) / w``; then a short SGD run with the layout's curve (a, b), clipping,
negative sampling schedule and linearly decaying learning rate, starting at a quarter of the fit's. Training
points stay fixed: they pull their new neighbours and serve as negative samples.

A new point's moves depend on its own row and the fixed training layout only, so each point runs all its epochs
on its own (in parallel over points) and the result is the sequential one, bit for bit, whatever the threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .moves_cpu import JIT_CACHE, attract, negatives_due, repel
from .optimizer import learning_rate_at

_SMALL_TRANSFORM = 10_000  # up to this many new points, 100 epochs by default; 30 above (umap-learn's rule)
_POINTS_PER_BLOCK = 64  # new points per parallel work item


def transform_n_epochs(n_epochs: int | None, n_new: int) -> int:
    """Epochs of a transform: the fit's ``n_epochs // 3`` when it was given (at least 1), else 100 for up to
    10,000 new points and 30 above (umap-learn's rule, which counts the points being embedded)."""
    if n_epochs is not None:
        return max(1, int(n_epochs) // 3)
    return 100 if n_new <= _SMALL_TRANSFORM else 30


def initial_positions(indices: np.ndarray, weights: np.ndarray, embedding: np.ndarray) -> np.ndarray:
    """Each new point at the weight-averaged embedding of its neighbours (float64 sums), or at its first
    neighbour of weight 1 (a duplicate of a training point), as float32 (n_new, n_components)."""
    w = weights.astype(np.float64)
    rows = embedding[indices].astype(np.float64)  # (n_new, k, dim)
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.einsum("ik,ikd->id", w, rows) / total[:, None]
    exact = weights == 1.0
    has_exact = exact.any(axis=1)
    # A row without any weight cannot come from new_point_memberships; should one come, it takes its nearest.
    snap = np.flatnonzero(has_exact | ~(total > 0))
    mean[snap] = rows[snap, np.where(has_exact[snap], np.argmax(exact[snap], axis=1), 0)]
    return mean.astype(np.float32)


@njit(cache=JIT_CACHE, nogil=True, parallel=True)
def _embed_new(Y, Yref, indptr, tail, eps, eps_neg, alphas, seed, a, b, c_att, c_rep):
    """All epochs for every new point (rows of Y), each moving alone against the fixed training layout Yref.

    Per edge and epoch the schedule, the attraction and the negative samples are those of the sequential
    strategy; negatives come from the counter-based hash of (seed, epoch, edge, sample) over Yref's rows.
    """
    n, dim = Y.shape
    n_ref = Yref.shape[0]
    n_epochs = alphas.shape[0]
    n_blocks = (n + _POINTS_PER_BLOCK - 1) // _POINTS_PER_BLOCK
    for blk in prange(n_blocks):
        yi = np.empty(dim, np.float32)
        tail_move = np.empty(dim, np.float32)  # written by attract, unused: training points stay fixed
        for i in range(blk * _POINTS_PER_BLOCK, min((blk + 1) * _POINTS_PER_BLOCK, n)):
            lo = indptr[i]
            hi = indptr[i + 1]
            if hi == lo:
                continue
            next_s = eps[lo:hi].copy()
            next_neg = eps_neg[lo:hi].copy()
            for d in range(dim):
                yi[d] = Y[i, d]
            for t in range(n_epochs):
                tf = np.float64(t)
                alpha = alphas[t]
                for q in range(hi - lo):
                    if next_s[q] > tf:
                        continue
                    e = lo + q
                    nn = negatives_due(tf, next_neg[q], eps_neg[e])
                    next_s[q] += eps[e]
                    if nn > 0:
                        next_neg[q] += nn * eps_neg[e]
                    attract(yi, Yref, tail[e], a, b, c_att, alpha, tail_move)
                    # i = -1: no training row is the new point itself, so no negative is skipped.
                    repel(yi, yi, Yref, -1, e, nn, seed, t, n_ref, a, b, c_rep, alpha)
            for d in range(dim):
                Y[i, d] = yi[d]


def embed_new_points(
    indices: np.ndarray,
    weights: np.ndarray,
    embedding: np.ndarray,
    *,
    a: float,
    b: float,
    n_epochs: int,
    learning_rate: float = 1.0,
    negative_sample_rate: float = 5,
    repulsion_strength: float = 1.0,
    seed: int = 0,
) -> np.ndarray:
    """Embed new points into the fixed layout ``embedding`` (n_train, dim); returns float32 (n_new, dim).

    ``indices`` (n_new, k) are the new points' nearest training points and ``weights`` their memberships (see
    the module docstring); ``learning_rate`` is the fit's: the run starts at a quarter of it, as UMAP's transform
    does. Deterministic: the same inputs and ``seed`` give the same bytes.
    """
    indices = np.ascontiguousarray(indices, dtype=np.int32)
    weights = np.ascontiguousarray(weights, dtype=np.float32)
    Yref = np.ascontiguousarray(embedding, dtype=np.float32)
    Y = initial_positions(indices, weights, Yref)
    if n_epochs < 1 or weights.size == 0:
        return Y
    # Zero weights are dropped too: they pass the threshold when every weight is 0 (all points far beyond the
    # data, where exp(-d / sigma) underflows), and eps = max / w would then be NaN, sampled every epoch.
    keep = (weights >= weights.max() / np.float32(n_epochs)) & (weights > 0)
    indptr = np.zeros(len(indices) + 1, np.int64)
    np.cumsum(keep.sum(axis=1), out=indptr[1:])
    tail = np.ascontiguousarray(indices[keep])  # row-major: each point's edges together, nearest first
    w = weights[keep].astype(np.float64)
    eps = weights.max().astype(np.float64) / w
    with np.errstate(divide="ignore"):  # negative_sample_rate = 0: no negatives, ever
        eps_neg = eps / np.float64(negative_sample_rate)
    alpha0 = learning_rate / 4.0
    alphas = np.array([learning_rate_at(t, n_epochs, alpha0) for t in range(n_epochs)], dtype=np.float32)
    _embed_new(
        Y,
        Yref,
        indptr,
        tail,
        eps,
        eps_neg,
        alphas,
        np.uint64(seed),
        np.float32(a),
        np.float32(b),
        np.float32(-2.0 * a * b),
        np.float32(2.0 * repulsion_strength * b),
    )
    return Y
