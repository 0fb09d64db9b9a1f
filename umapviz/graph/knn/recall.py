"""Recall of a kNN graph against brute force, on sampled rows: what an approximate search missed, measured."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._backend import to_host, xp_of
from ..._validation import check_int
from . import GEMM_METRICS, check_metric
from .knn_cpu import query_knn
from .knn_gpu import query_knn_gpu


def recall_at_k(
    X: Any, indices: Any, sample: int = 1000, seed: int = 0, metric: str = "euclidean", device: str = "cpu"
) -> float:
    """Mean share of each sampled row's true k nearest neighbours (itself included) that ``indices`` holds.

    The truth is an exact search from the sampled rows to all points (:func:`umapviz.graph.knn.knn_cpu.query_knn`, or
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
    indices = to_host(indices)
    n = int(X.shape[0])
    if indices.ndim != 2 or indices.shape[0] != n:
        raise ValueError(
            f"indices of shape {indices.shape} do not have one row per row of X ({n}): pass the kNN "
            "indices of this X (graph.knn_indices)."
        )
    rows, truth = sampled_truth(X, int(indices.shape[1]), sample, seed, metric, device)
    return recall_from_truth(indices, rows, truth)


def sampled_truth(
    X: Any, n_neighbors: int, sample: int = 1000, seed: int = 0, metric: str = "euclidean", device: str = "cpu"
) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, truth)``: the rows :func:`recall_at_k` samples and their exact k nearest neighbours (NumPy), to
    measure several graphs of the same X against one exact search (:func:`recall_from_truth`).

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray
        (n, d) data.
    n_neighbors : int
        k, counting the point itself.
    sample, seed, metric, device
        As :func:`recall_at_k` takes them.
    """
    metric = check_metric(metric, GEMM_METRICS, "the GEMM search")
    sample = check_int("sample", sample, 1)
    n = int(X.shape[0])
    rows = np.sort(np.random.default_rng(seed).choice(n, min(sample, n), replace=False))
    queries = to_host(X[rows]) if device == "cpu" else X[xp_of(X).asarray(rows)]
    if device == "gpu":
        truth, _ = query_knn_gpu(X, queries, n_neighbors, metric)
    else:
        truth, _ = query_knn(np.asarray(X), np.asarray(queries), n_neighbors, metric)
    return rows, to_host(truth)


def recall_from_truth(indices: Any, rows: np.ndarray, truth: np.ndarray) -> float:
    """Mean share of each sampled row's true neighbours (``truth``, from :func:`sampled_truth`) that ``indices``
    holds on that row.

    Parameters
    ----------
    indices : array
        (n, k) neighbour indices of the graph.
    rows : numpy.ndarray
        The sampled rows.
    truth : numpy.ndarray
        (len(rows), k) their exact neighbours.
    """
    found = to_host(indices)[rows]
    hits = sum(np.intersect1d(t, f).size for t, f in zip(truth, found, strict=True))
    return hits / (rows.size * truth.shape[1])
