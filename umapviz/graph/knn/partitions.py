"""Overlapping, size-capped partitions of a data set for the partitioned kNN (:mod:`umapviz.graph.knn.partitioned`).

The plan: k-means on a seeded sample of the rows gives centroids; every point joins its ``overlap`` nearest
centroids' partitions; a partition with more members than the cap is cut in two at the median of its members'
projection on their first principal axis (again, until none is over the cap), so one huge cluster cannot blow
up the time or memory of its exact search. Near neighbours share a partition because they share nearest
centroids, and the overlap catches most of those that straddle a boundary.

Every step is a function of the data and the seed: the sample is drawn with NumPy's generator, the k-means starts
from sampled rows, ties in nearest-centroid choices go to the lower centroid index, centroid sums are cumulative
sums in row order (no atomics), and partitions are listed in centroid order (a cut partition's halves in place).
The code runs on NumPy or CuPy arrays alike (``xp``); X may stay on the host (a NumPy array or a memory-mapped
``.npy``) while the work runs on the GPU: rows then travel one tile at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._backend import is_cupy, to_host, xp_of
from ..._host_data import to_device

KMEANS_ITERATIONS = 10
# Sampled rows per centroid for the k-means (at least SAMPLE_MIN rows in all): enough for stable centroids,
# few enough that the k-means costs a fraction of the searches.
SAMPLE_PER_CENTROID = 64
SAMPLE_MIN = 16_384
_TILE_ELEMENTS = 2**25  # score-matrix elements per tile of rows (128 MiB of float32)
_POWER_ITERATIONS = 8


@dataclass(frozen=True)
class Partition:
    """One partition: its members (ascending global row numbers, int64) and, for each member, which of the point's
    ``overlap`` memberships this is (0 = its nearest centroid's partition), int64.

    Parameters
    ----------
    members : array
        Global row numbers, ascending (NumPy or CuPy).
    slots : array
        Membership ordinal of each member, same length.
    """

    members: Any
    slots: Any

    @property
    def size(self) -> int:
        return int(self.members.shape[0])


def plan_partitions(
    X: Any,
    n_partitions: int,
    overlap: int,
    seed: int,
    max_members: int,
    min_members: int,
    metric: str = "euclidean",
    xp: Any = np,
) -> list[Partition]:
    """The partitions of the rows of X (see the module docstring).

    Parameters
    ----------
    X : array
        (n, d) float32 data: NumPy (also memory-mapped) or CuPy. With ``xp`` CuPy and NumPy X, rows are uploaded
        one tile at a time.
    n_partitions : int
        Centroids of the k-means (partitions before cutting the oversized ones), at most n.
    overlap : int
        Partitions each point joins (its nearest centroids), at most ``n_partitions``.
    seed : int
        Seeds the sample and the k-means start.
    max_members : int
        Cap on a partition's members; bigger ones are cut in halves.
    min_members : int
        A partition needs at least this many members (its exact search needs more points than neighbours): the
        centroids of smaller ones are dropped and the points assigned again.
    metric : str
        ``"cosine"`` clusters unit rows; ``"euclidean"`` the rows as they are.
    xp : module
        numpy or cupy: where the work runs.
    """
    n = int(X.shape[0])
    rng = np.random.default_rng(seed)
    n_sample = min(n, max(SAMPLE_MIN, SAMPLE_PER_CENTROID * n_partitions))
    sample_rows = np.sort(rng.choice(n, n_sample, replace=False))
    sample = _prepared(X, metric, xp, sample_rows)
    centre = sample.mean(axis=0, dtype=xp.float64).astype(xp.float32) if metric == "euclidean" else None
    if centre is not None:
        sample -= centre
    start = rng.choice(n_sample, n_partitions, replace=False)
    centroids = _kmeans(sample, sample[xp.asarray(start)].copy(), xp)
    del sample
    while True:
        nearest = _nearest_centroids(X, centroids, overlap, metric, centre, xp)
        counts = to_host(xp.bincount(nearest.ravel(), minlength=centroids.shape[0]))
        small = counts < min_members
        if not small.any() or small.all():
            break
        centroids = centroids[xp.asarray(np.flatnonzero(~small))]  # their points go to the next-nearest ones
        overlap = min(overlap, int(centroids.shape[0]))
    partitions = _group(nearest, xp)
    return [piece for part in partitions for piece in _cut(X, part, max_members, metric, xp)]


def take_rows(X: Any, rows: Any) -> Any:
    """The given rows of X (NumPy, memory-mapped or CuPy), indexed with ``rows`` moved to X's side."""
    return X[rows] if is_cupy(X) == is_cupy(rows) else X[xp_of(X).asarray(to_host(rows))]


def _prepared(X: Any, metric: str, xp: Any, rows: Any = None) -> Any:
    """A float32 copy of X's rows ``rows`` (None: all) on the work's device (the caller may change it in place);
    unit length for cosine (zero rows stay zero)."""
    if xp is not np and not is_cupy(X):
        A = to_device(X, rows)  # a new array
    else:
        A = xp.array(X if rows is None else take_rows(X, rows), dtype=xp.float32, order="C", copy=True)
    if metric == "cosine":
        norms = xp.sqrt((A.astype(xp.float64) ** 2).sum(axis=1, keepdims=True))
        A = (A / xp.where(norms > 0, norms, 1.0)).astype(xp.float32)
    return A


def _scores(A: Any, centroids: Any, c_sq: Any) -> Any:
    """|c|^2 - 2 a.c for each row a of A and centroid c: the squared distance less |a|^2 (the same for every c)."""
    return c_sq[None, :] - 2.0 * (A @ centroids.T)


def _kmeans(sample: Any, centroids: Any, xp: Any) -> Any:
    """Lloyd's iterations from the given centroids; an empty cluster keeps its centroid. Centroid sums are
    float64 cumulative sums over the rows sorted by cluster, so they do not depend on thread scheduling."""
    k = centroids.shape[0]
    for _ in range(KMEANS_ITERATIONS):
        labels = _top_labels(sample, centroids, 1, xp)[:, 0]
        order = xp.argsort(labels.astype(xp.int64) * sample.shape[0] + xp.arange(sample.shape[0]))  # distinct keys
        sorted_labels = labels[order]
        ends = xp.searchsorted(sorted_labels, xp.arange(k), side="right")
        starts = xp.searchsorted(sorted_labels, xp.arange(k), side="left")
        sums = xp.cumsum(sample[order].astype(xp.float64), axis=0)
        sums = xp.concatenate([xp.zeros((1, sums.shape[1])), sums])
        counts = (ends - starts)[:, None]
        means = (sums[ends] - sums[starts]) / xp.maximum(counts, 1)
        centroids = xp.where(counts > 0, means, centroids).astype(xp.float32)
    return centroids


def _top_labels(A: Any, centroids: Any, overlap: int, xp: Any) -> Any:
    """(rows, overlap) int32: each row's nearest centroids, nearest first, ties to the lower index."""
    c_sq = (centroids.astype(xp.float64) ** 2).sum(axis=1).astype(xp.float32)
    out = xp.empty((A.shape[0], overlap), dtype=xp.int32)
    tile = max(1, _TILE_ELEMENTS // max(1, centroids.shape[0]))
    for s in range(0, A.shape[0], tile):
        scores = _scores(A[s : s + tile], centroids, c_sq)
        rows = xp.arange(scores.shape[0])
        for t in range(overlap):
            best = xp.argmin(scores, axis=1)  # the first minimum: the lower index wins a tie
            out[s : s + tile, t] = best
            scores[rows, best] = xp.inf
    return out


def _nearest_centroids(X: Any, centroids: Any, overlap: int, metric: str, centre: Any, xp: Any) -> Any:
    """(n, overlap) int32 nearest centroids of every row of X, X read one tile of rows at a time."""
    n = int(X.shape[0])
    out = xp.empty((n, overlap), dtype=xp.int32)
    tile = max(1, _TILE_ELEMENTS // max(1, int(X.shape[1]), int(centroids.shape[0])))
    for s in range(0, n, tile):
        A = _prepared(X[s : s + tile], metric, xp)
        if centre is not None:
            A -= centre
        out[s : s + tile] = _top_labels(A, centroids, overlap, xp)
    return out


def _group(nearest: Any, xp: Any) -> list[Partition]:
    """Partitions from each point's nearest centroids: members ascending, in centroid order."""
    n, overlap = nearest.shape
    key = nearest.astype(xp.int64).ravel() * n + xp.repeat(xp.arange(n, dtype=xp.int64), overlap)
    slot_of = xp.tile(xp.arange(overlap, dtype=xp.int64), n)
    order = xp.argsort(key)  # keys are distinct: any sort gives the same order
    key, slot_of = key[order], slot_of[order]
    labels = key // n
    bounds = to_host(xp.searchsorted(labels, xp.arange(int(to_host(labels[-1])) + 2)))
    return [Partition(key[a:b] % n, slot_of[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]


def _cut(X: Any, part: Partition, max_members: int, metric: str, xp: Any) -> list[Partition]:
    """``part`` itself when it has at most ``max_members`` members, else its two halves (each cut again as needed)
    split at the median of the members' projection on their first principal axis (a stable sort: ties keep
    row order)."""
    if part.size <= max_members:
        return [part]
    A = _prepared(X, metric, xp, part.members).astype(xp.float64)
    A -= A.mean(axis=0)
    v = xp.ones(A.shape[1]) / np.sqrt(A.shape[1])
    for _ in range(_POWER_ITERATIONS):
        v = A.T @ (A @ v)
        norm = float(xp.linalg.norm(v))
        if norm == 0.0:
            break
        v /= norm
    projection = A @ v
    order = xp.lexsort(xp.stack([xp.arange(part.size, dtype=xp.float64), projection]))  # ties: row order
    halves = []
    for sel in (order[: part.size // 2], order[part.size // 2 :]):
        sel = xp.sort(sel)
        halves += _cut(X, Partition(part.members[sel], part.slots[sel]), max_members, metric, xp)
    return halves
