"""Recall of a kNN graph against brute force, on sampled rows: what an approximate search missed, measured."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._backend import to_host, xp_of
from .._validation import check_int
from .knn import check_metric
from .knn_cpu import query_knn
from .knn_gpu import query_knn_gpu


def recall_at_k(X: Any, indices: Any, sample: int = 1000, seed: int = 0, metric: str = "euclidean",
                device: str = "cpu") -> float:
    """Mean share of each sampled row's true k nearest neighbours (itself included) that ``indices`` holds.

    The truth is an exact search from the sampled rows to all points (:func:`umapviz.graph.knn_cpu.query_knn`, or
    :func:`knn_gpu.query_knn_gpu` with ``device="gpu"``): ``sample * n`` distance evaluations, cheap beside the
    graph. Where distances tie at the k-th neighbour, either of the tied points counts as found only if it is the
    one the exact search ranks first (by index), so ties can lower the figure slightly, never raise it.

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray
        (n, d) data the graph was built from.
    indices : array
        (n, k) neighbour indices of the graph, e.g. ``graph.knn_indices``.
    sample : int
        Rows to check (all rows when n is smaller).
    seed : int
        Which rows: ``np.random.default_rng(seed)`` draws them.
    metric : str
        The graph's metric, ``"euclidean"`` or ``"cosine"``.
    device : str
        ``"cpu"`` or ``"gpu"``: where the exact search runs.
    """
    metric = check_metric(metric)
    indices = to_host(indices)
    n = int(X.shape[0])
    if indices.ndim != 2 or indices.shape[0] != n:
        raise ValueError(f"indices of shape {indices.shape} do not have one row per row of X ({n}): pass the kNN "
                         "indices of this X (graph.knn_indices).")
    sample = check_int("sample", sample, 1)
    k = int(indices.shape[1])
    rows = np.sort(np.random.default_rng(seed).choice(n, min(sample, n), replace=False))
    queries = to_host(X[rows]) if device == "cpu" else X[xp_of(X).asarray(rows)]
    if device == "gpu":
        truth, _ = query_knn_gpu(X, queries, k, metric)
    else:
        truth, _ = query_knn(np.asarray(X), np.asarray(queries), k, metric)
    found = indices[rows]
    hits = sum(np.intersect1d(t, f).size for t, f in zip(truth, found, strict=True))
    return hits / (rows.size * k)
