"""Exact kNN inside groups of points, on the CPU (NumPy) or the GPU (CuPy), and the fuzzy graph of a kNN.

When the groups (clusters) of a data set lie far apart, every point's nearest neighbours lie in its own group,
so exact kNN per group equals exact kNN of all points at a fraction of the cost: the sum of the squared group
sizes instead of n^2 (the more clusters, the smaller the share). That is how the GPU benches build graphs of
millions of points (bench/gpu_bench.py, bench/chunk_study.py). Whether the premise holds is checked, not
assumed: :func:`knn_agreement` compares sampled rows with brute force over all points.

Every function takes NumPy or CuPy arrays and works on the device that holds them (CuPy is never imported
for NumPy input).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from umapviz._backend import is_cupy, to_host, xp_of
from umapviz.graph._types import FuzzyGraph
from umapviz.graph.edges import graph_from_fuzzy_set
from umapviz.graph.fuzzy.fuzzy_cpu import fuzzy_simplicial_set
from umapviz.graph.knn.knn_cpu import exact_knn
from umapviz.graph.params import GraphParams


def knn_within_groups(X: Any, groups: Any, n_neighbors: int, metric: str = "euclidean") -> tuple[Any, Any]:
    """Exact kNN of each point among the points of its own group.

    Returns ``(indices int32 (n, k), distances float32 (n, k))`` with global row indices, self first, on the
    device of ``X`` (:func:`umapviz.graph.knn_cpu.exact_knn` on NumPy input, :func:`knn_gpu.exact_knn_gpu` on
    CuPy input). ``groups`` holds one integer label per row. Every group needs at least ``n_neighbors``
    points (ValueError otherwise).
    """
    xp = xp_of(X)
    groups = xp.asarray(groups)
    n, k = int(X.shape[0]), int(n_neighbors)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_points, n_features), got shape {tuple(X.shape)}.")
    if groups.shape != (n,) or groups.dtype.kind not in "iu":
        raise ValueError(
            f"groups must be one integer label per row of X: shape ({n},), got {groups.dtype} of shape "
            f"{tuple(groups.shape)}."
        )
    if k < 1:
        raise ValueError(f"n_neighbors={k} must be at least 1.")
    labels, sizes = (to_host(a) for a in xp.unique(groups, return_counts=True))
    if sizes.size and sizes.min() < k:
        small = labels[sizes < k]
        raise ValueError(
            f"{small.size} group(s) have fewer than n_neighbors={k} points (e.g. group {int(small[0])} has "
            f"{int(sizes[sizes < k][0])}): exact kNN within groups needs at least k points per group. Merge "
            "the small groups or lower n_neighbors."
        )
    knn = _knn_function(X)
    indices = xp.empty((n, k), dtype=xp.int32)
    dists = xp.empty((n, k), dtype=xp.float32)
    for label in labels:
        # Ascending global rows: the kNN's tie-break by (distance, index) is the same locally and globally.
        members = xp.flatnonzero(groups == label)
        idx, dist = knn(X[members], k, metric)
        indices[members] = members[idx].astype(xp.int32)
        dists[members] = dist
    return indices, dists


def _knn_function(X: Any):
    """exact_knn for NumPy input, exact_knn_gpu (results kept on the device) for CuPy input."""
    if is_cupy(X):
        from umapviz.graph.knn.knn_gpu import exact_knn_gpu  # noqa: PLC0415 - the GPU path, loaded on its first use

        return lambda sub, k, metric: exact_knn_gpu(sub, k, metric, return_device=True)
    return lambda sub, k, metric: exact_knn(sub, k, metric, progress=False)


def knn_agreement(X: Any, knn_indices: Any, n_queries: int = 256, seed: int = 1, batch: int = 32) -> float:
    """Share of ``n_queries`` sampled rows whose kNN (as a set) equals brute force over all points of ``X``.

    Brute force here is float32 squared distances from a matrix product (fine for a premise check: groups
    that are far apart leave a wide margin). 1.0 means no sampled row's neighbours were cut off by a group
    boundary. Rows are drawn with ``np.random.default_rng(seed)``; queries run ``batch`` rows at a time.
    """
    xp = xp_of(X)
    knn_indices = xp.asarray(knn_indices)
    n, k = int(X.shape[0]), int(knn_indices.shape[1])
    if knn_indices.shape[0] != n:
        raise ValueError(f"knn_indices has {knn_indices.shape[0]} rows but X has {n}: pass the kNN of this X.")
    rows = np.random.default_rng(seed).choice(n, min(int(n_queries), n), replace=False)
    Xf = X.astype(xp.float32, copy=False)
    sq = (Xf * Xf).sum(axis=1)
    same = 0
    for start in range(0, rows.size, batch):
        q = xp.asarray(rows[start : start + batch])
        d2 = sq[q][:, None] + sq[None, :] - 2.0 * (Xf[q] @ Xf.T)
        d2[xp.arange(q.size), q] = -1.0  # the point itself first, whatever the rounding
        top = xp.argpartition(d2, k - 1, axis=1)[:, :k] if k < n else xp.argsort(d2, axis=1)
        for brute, found in zip(to_host(top), to_host(knn_indices[q]), strict=True):
            same += set(brute.tolist()) == set(found.tolist())
    return same / rows.size


def graph_from_knn(
    knn_indices: Any,
    knn_dists: Any,
    n_epochs: int | None = None,
    min_dist: float = 0.1,
    spread: float = 1.0,
    metric: str = "euclidean",
    knn: str = "exact-within-groups",
) -> FuzzyGraph:
    """The pruned fuzzy graph (what :func:`umapviz.build_graph` returns) of a given kNN.

    The fuzzy set runs where the kNN lives (CuPy: :func:`fuzzy_gpu.fuzzy_simplicial_set_gpu`; NumPy:
    :func:`umapviz.graph.fuzzy_cpu.fuzzy_simplicial_set`); pruning and the edge list on the host, as in
    ``build_graph``. ``n_epochs`` None means ``default_n_epochs(n)``. ``knn`` names the kNN's method in
    ``graph.params``.
    """
    n, k = int(knn_indices.shape[0]), int(knn_indices.shape[1])
    params = GraphParams.for_data(
        n, n_neighbors=k, metric=metric, knn=knn, min_dist=min_dist, spread=spread, n_epochs=n_epochs
    )
    if is_cupy(knn_indices):
        from umapviz.graph.build_gpu import fuzzy_graph_gpu  # noqa: PLC0415 - the GPU path, loaded on its first use

        return fuzzy_graph_gpu(knn_indices, knn_dists, params)
    fuzzy = fuzzy_simplicial_set(np.asarray(knn_indices), np.asarray(knn_dists))
    return graph_from_fuzzy_set(fuzzy, np.asarray(knn_indices), np.asarray(knn_dists), params)
