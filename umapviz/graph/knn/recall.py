"""Recall of a kNN graph against brute force, on sampled rows: what an approximate search missed, measured."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._backend import cupy, gpu_memory, to_host
from ..._host_data import to_device
from ..._validation import check_int
from . import GEMM_METRICS, PREP_BLOCK_BYTES, check_metric
from .knn_cpu import query_knn, refine_candidates
from .knn_gpu import query_knn_gpu, refine_candidates_gpu


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
    X: Any,
    n_neighbors: int,
    sample: int = 1000,
    seed: int = 0,
    metric: str = "euclidean",
    device: str = "cpu",
    block_rows: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, truth)``: the rows :func:`recall_at_k` samples and their exact k nearest neighbours (NumPy), to
    measure several graphs of the same X against one exact search (:func:`recall_from_truth`).

    On the GPU the reference set is searched a block of rows at a time where its prepared copy does not fit
    (:func:`truth_block_rows`; on either device where ``block_rows`` says so), each block's k nearest merged with
    the best so far by the exact float64 re-scoring: the same neighbours, by (distance, index), as one search of
    all of X.

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray
        (n, d) data.
    n_neighbors : int
        k, counting the point itself.
    sample, seed, metric, device
        As :func:`recall_at_k` takes them.
    block_rows : int, optional
        Rows of X searched at a time; None: on the GPU as many as half the free GPU memory holds, on the CPU all.
    """
    metric = check_metric(metric, GEMM_METRICS, "the GEMM search")
    sample = check_int("sample", sample, 1)
    n = int(X.shape[0])
    rows = np.sort(np.random.default_rng(seed).choice(n, min(sample, n), replace=False))
    k = int(n_neighbors)
    gpu = device == "gpu"
    if block_rows is not None:
        block = check_int("block_rows", block_rows, 1)
    else:
        block = truth_block_rows(n, int(X.shape[1]), rows.size) if gpu else n
    block = max(block, k)
    queries = to_device(X, rows) if gpu else np.ascontiguousarray(to_host(X[rows]), dtype=np.float32)

    def search(reference: Any) -> np.ndarray:
        if gpu:
            return query_knn_gpu(reference, queries, k, metric)[0]
        return query_knn(np.asarray(reference, dtype=np.float32), queries, k, metric)[0]

    if block >= n:
        return rows, to_host(search(X))
    best = None
    for start in range(0, n, block):
        stop = min(n, start + block)
        if stop - start < k:  # a last block too small to search: its rows join the previous block's candidates
            found = np.broadcast_to(np.arange(start, stop, dtype=np.int64), (rows.size, stop - start))
        else:
            found = to_host(search(X[start:stop])).astype(np.int64) + start
        if best is not None:
            found = _nearest_of(X, queries, np.concatenate([best, found], axis=1), k, metric, gpu)
        best = found
    assert best is not None  # n > block: the loop ran
    return rows, best.astype(np.int32)


def truth_block_rows(n: int, d: int, n_queries: int, free: int | None = None) -> int:
    """Rows of X that :func:`sampled_truth` searches at a time on the GPU: all of them where the reference's
    prepared copy (:func:`knn_gpu.reference_bytes`) and a score tile of ``n_queries`` rows fit in half the free GPU
    memory, else a block that does. MemoryError (naming the check, its need and the fix) where not even a block of
    65,536 rows fits.

    Parameters
    ----------
    n, d : int
        Rows and features of X.
    n_queries : int
        The sampled rows.
    free : int, optional
        Free GPU bytes (None asks the GPU: :func:`umapviz._backend.gpu_memory`).
    """
    free = gpu_memory()[0] if free is None else free
    budget = max(0, free // 2 - 2**24)
    per_row = 8 * d + 4 + 4 * n_queries + 64  # X's copy and its prepared rows, norms, a score column, the outputs
    block = budget // (per_row + 24 * d)  # with the preparation's three float64 blocks of as many rows
    if 24 * block * d > 3 * PREP_BLOCK_BYTES:  # those blocks stop growing at PREP_BLOCK_BYTES
        block = max(0, budget - 3 * PREP_BLOCK_BYTES) // per_row
    block = min(n, block)
    least = min(n, 65536)
    if block < least:
        need = 2 * (2**24 + least * (per_row + 24 * d))
        raise MemoryError(
            f"The recall check of knn='auto' ({n_queries:,} sampled rows against {n:,} x {d} points) needs about "
            f"{need / 2**30:.2f} GiB of free GPU memory for one block of the reference, but only {free / 2**30:.2f} "
            "GiB is free. Free GPU memory (or raise the pool's limit), or pass knn='approx' to skip the check."
        )
    return int(block)


def _nearest_of(X: Any, queries: Any, cand: np.ndarray, k: int, metric: str, gpu: bool) -> np.ndarray:
    """The k nearest of each query's candidate rows of X (int64, distinct within a row), by the exact searches'
    float64 re-scoring (:func:`knn_gpu.refine_candidates_gpu` on the GPU, its twin
    :func:`knn_cpu.refine_candidates` on the CPU), ties by index: the candidates' rows are gathered in ascending
    order, so a local index orders as its global one."""
    uniq = np.unique(cand)
    local = np.searchsorted(uniq, cand).astype(np.int32)
    cosine = metric == "cosine"
    if not gpu:
        Xc = np.ascontiguousarray(to_host(X[uniq]), dtype=np.float32)
        out_idx = np.empty((cand.shape[0], k), dtype=np.int64)
        out_dist = np.empty((cand.shape[0], k), dtype=np.float64)
        row_ids = np.arange(cand.shape[0], dtype=np.int64)
        refine_candidates(Xc, queries, row_ids, local.astype(np.int64), k, cosine, False, out_idx, out_dist)
        return uniq[out_idx]
    cp = cupy()
    Xc = to_device(X, uniq)
    out_idx = cp.empty((cand.shape[0], k), dtype=cp.int32)
    out_dist = cp.empty((cand.shape[0], k), dtype=cp.float32)
    row_ids = cp.arange(cand.shape[0], dtype=cp.int64)
    refine_candidates_gpu(Xc, queries, row_ids, cp.asarray(local), k, cosine, False, out_idx, out_dist)
    return uniq[out_idx.get()]


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
