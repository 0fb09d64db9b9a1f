"""Refinement of an approximate kNN graph by its own neighbourhoods (NN-descent's local join), on the CPU or the GPU.

One round gives every point, as candidates, its current neighbours, its neighbours' neighbours and its reverse
neighbours (points that list it; the lowest-numbered ``k - 1`` of them), and keeps the k best by exact distance,
ties by index, itself first. Where data has low-dimensional structure a neighbour of a neighbour is likely a
neighbour, so a round recovers much of what partition boundaries cut off (in isotropic high-dimensional clusters,
where it seldom is, a little: bench/PARTITIONED_KNN.md); the current neighbours are candidates too, so a round never
loses a neighbour it had (recall cannot fall).

The distances are the exact searches' own: float64, operation for operation the same on both devices
(:func:`.knn_cpu.refine_candidates` and its twin :func:`.knn_gpu.refine_candidates_gpu`),
computed from the two rows of X, so CPU and GPU give the same bytes. The candidate lists are a function of the graph
alone (sorted, duplicates dropped), so a round is deterministic: no atomics, no dependence on thread scheduling.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..._backend import cupy, gpu_memory, is_cupy
from ..._host_data import to_device
from ..._validation import check_int
from . import GEMM_METRICS, check_metric
from .knn_cpu import refine_candidates
from .knn_gpu import REFINE_MAX_CANDIDATES, refine_candidates_gpu

# The GPU refine kernel takes one thread per candidate, in one block.
MAX_CANDIDATES = REFINE_MAX_CANDIDATES
# Candidate-list elements per GPU tile of rows: at most 2**26 (512 MiB as int64), fewer where free memory is short
# (each element takes about 32 bytes with the sort's copies), never fewer than 2**20. The tile changes the memory,
# never the result (rows are independent).
_GPU_TILE_ELEMENTS = 2**26
_GPU_MIN_TILE_ELEMENTS = 2**20
_CPU_TILE_ROWS = 4096


def refine_knn(
    X: Any, indices: Any, rounds: int = 1, metric: str = "euclidean", device: str = "cpu", timings: dict | None = None
) -> tuple[Any, Any]:
    """``rounds`` rounds of neighbourhood refinement of a kNN graph: ``(indices int32 (n, k), distances float32
    (n, k))``, self first, the rest by (distance, index), on the device of ``indices``.

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray
        (n, d) float32 data the graph is of; on the GPU a CuPy array (the candidates' rows are read at random).
    indices : numpy.ndarray or cupy.ndarray
        (n, k) int neighbour indices, self first, every entry a valid row (as the partitioned search returns).
    rounds : int
        Rounds of refinement (0 returns the graph with its distances recomputed).
    metric : str
        ``"euclidean"`` or ``"cosine"``.
    device : str
        ``"cpu"`` (Numba) or ``"gpu"`` (CuPy kernels; X and indices are moved to the GPU).
    timings : dict, optional
        Receives the seconds of each round as ``refine_rounds`` (a list; the GPU is synchronised per round).
    """
    metric = check_metric(metric, GEMM_METRICS, "the partitioned search")
    rounds = check_int("knn_refine", rounds, 0)
    xp = cupy() if device == "gpu" else np
    if device == "gpu":
        check_refine_fits(int(X.shape[0]), int(X.shape[1]), int(indices.shape[1]), is_cupy(X))
        X = to_device(X)
        indices = xp.asarray(indices)
    else:
        X = np.ascontiguousarray(X, dtype=np.float32)
        indices = np.asarray(indices)
    n, k = (int(s) for s in indices.shape)
    if int(X.shape[0]) != n:
        raise ValueError(f"indices have {n} rows but X has {X.shape[0]}: pass the kNN indices of this X.")
    idx = indices.astype(xp.int32)
    dist = None
    seconds = []
    for _ in range(max(rounds, 1)):  # rounds=0: one pass over the own neighbours only
        t0 = _clock(xp)
        reverse = _reverse_neighbours(idx, k - 1, xp) if rounds else None
        idx, dist = _round(X, idx, reverse, metric, xp)
        seconds.append(_clock(xp) - t0)
    if timings is not None:
        timings["refine_rounds"] = seconds if rounds else []
    return idx, dist


def candidate_width(n_neighbors: int) -> tuple[int, int]:
    """``(hops, m)``: how many of each neighbour's neighbours are taken and the candidate-list width, so that
    ``m = k + hops * (k - 1) + (k - 1)`` stays within MAX_CANDIDATES (all ``k - 1`` for k up to 31).

    Parameters
    ----------
    n_neighbors : int
        Neighbours per point, counting the point itself.
    """
    k = int(n_neighbors)
    hops = max(0, min(k - 1, (MAX_CANDIDATES - 2 * k + 1) // max(1, k - 1)))
    return hops, k + hops * (k - 1) + (k - 1)


def refine_bytes_needed(n: int, n_neighbors: int) -> int:
    """GPU bytes of a refinement round beside X: the graph before and after, the reverse lists and their sort,
    and the smallest tile of candidate lists with the sort's copies (a round takes larger tiles where memory is
    free: :func:`_tile_rows`).

    Parameters
    ----------
    n : int
        Points.
    n_neighbors : int
        Neighbours per point.
    """
    k = int(n_neighbors)
    graphs = 2 * 8 * n * k
    reverse = 4 * n * (k - 1) + 5 * 8 * n * (k - 1)
    tile = 4 * 8 * min(_GPU_MIN_TILE_ELEMENTS, n * candidate_width(k)[1])
    return graphs + reverse + tile


def refine_gpu_bytes_needed(n: int, d: int, n_neighbors: int, x_on_device: bool) -> int:
    """GPU bytes of the refinement rounds: a round's buffers (:func:`refine_bytes_needed`), and X where it is host
    data (uploaded for the rounds, whose candidates' rows are read at random).

    Parameters
    ----------
    n, d : int
        Points and features.
    n_neighbors : int
        Neighbours per point.
    x_on_device : bool
        Whether X is already on the GPU (else it is uploaded for the rounds).
    """
    return refine_bytes_needed(n, n_neighbors) + (0 if x_on_device else 4 * n * d)


def check_refine_fits(
    n: int, d: int, n_neighbors: int, x_on_device: bool, free_total: tuple[int, int] | None = None, held: int = 0
) -> None:
    """MemoryError before a GPU refinement that cannot fit: how much it needs (X uploaded when it is host data, and
    a round's buffers: :func:`refine_gpu_bytes_needed`, plus ``held``), how much is free, and the fix.

    Parameters
    ----------
    n, d : int
        Points and features.
    n_neighbors : int
        Neighbours per point.
    x_on_device : bool
        Whether X is already on the GPU (else it is uploaded for the rounds).
    free_total : (int, int), optional
        (free, total) bytes; None asks the GPU.
    held : int
        Bytes that are free now but will be held by the caller beside the rounds (a search's merged graph).
    """
    need = refine_gpu_bytes_needed(n, d, n_neighbors, x_on_device) + held
    free, total = gpu_memory() if free_total is None else free_total
    if need > free:
        raise MemoryError(
            f"Refining the kNN graph of {n:,} points on the GPU needs about {need / 2**30:.2f} GiB of GPU memory (X "
            f"on the device and a round's buffers), but only {free / 2**30:.2f} GiB of {total / 2**30:.2f} GiB is "
            "free. Pass knn_refine=0 (or 'auto', which runs no round where one does not fit), or free GPU memory."
        )


def _tile_rows(m: int) -> int:
    """Rows per GPU tile of candidate lists m wide: as many as a quarter of the free memory holds at about 32 bytes
    an element, within _GPU_MIN_TILE_ELEMENTS and _GPU_TILE_ELEMENTS."""
    elements = min(_GPU_TILE_ELEMENTS, max(_GPU_MIN_TILE_ELEMENTS, gpu_memory()[0] // 128))
    return max(1, elements // m)


def _clock(xp: Any) -> float:
    """Seconds now, after the GPU's queued work (on the GPU)."""
    if xp is not np:
        xp.cuda.Device().synchronize()
    return time.perf_counter()


def _reverse_neighbours(idx: Any, most: int, xp: Any) -> Any:
    """(n, most) int32: for each point the lowest-numbered points that list it among their neighbours (columns 1
    on), ascending, -1 where fewer."""
    n, k = idx.shape
    src = xp.repeat(xp.arange(n, dtype=xp.int64), k - 1)
    dst = idx[:, 1:].astype(xp.int64).ravel()
    key = xp.sort(dst * n + src)  # distinct keys: grouped by target, sources ascending
    dst, src = key // n, key % n
    starts = xp.searchsorted(dst, xp.arange(n, dtype=xp.int64), side="left")
    rank = xp.arange(key.shape[0], dtype=xp.int64) - starts[dst]
    keep = rank < most
    out = xp.full((n, most), -1, dtype=xp.int32)
    out[dst[keep], rank[keep]] = src[keep].astype(xp.int32)
    return out


def _candidates(idx: Any, reverse: Any, start: int, stop: int, xp: Any) -> Any:
    """(rows, m) int64 candidate lists of rows start..stop: own neighbours, the first ``hops`` neighbours of each
    neighbour, reverse neighbours; sorted, each once, -1 filling the end: the GPU refine kernel ranks candidates by
    (distance, index), and two copies of one would take the same rank and leave an output unwritten."""
    k = idx.shape[1]
    own = idx[start:stop].astype(xp.int64)
    parts = [own]
    if reverse is not None:
        hops, _ = candidate_width(k)
        second = idx[own[:, 1:]][:, :, 1 : 1 + hops].reshape(own.shape[0], -1)
        parts += [second.astype(xp.int64), reverse[start:stop].astype(xp.int64)]
    empty = np.iinfo(np.int64).max
    cand = xp.concatenate(parts, axis=1)
    cand = xp.where(cand < 0, empty, cand)
    cand.sort(axis=1)
    repeat = xp.concatenate([xp.zeros((cand.shape[0], 1), dtype=bool), cand[:, 1:] == cand[:, :-1]], axis=1)
    cand = xp.where(repeat, empty, cand)
    cand.sort(axis=1)
    return xp.where(cand == empty, -1, cand)


def union_knn(X: Any, graphs: list, metric: str = "euclidean") -> tuple[Any, Any]:
    """The k best of the union of several kNN graphs of X, each point's neighbours in any of them re-scored exactly
    (as a round does, without the neighbours' neighbours): ``(indices int32 (n, k), distances float32 (n, k))`` on
    the device of the graphs (X on the GPU for CuPy graphs). A point keeps every neighbour that is among its k best
    in any graph, so recall never falls below the best graph's; the result depends on the set of candidates only,
    not on the order of ``graphs``.

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray
        (n, d) float32 data the graphs are of (a CuPy array with CuPy graphs).
    graphs : list of arrays
        (n, k) int neighbour indices, self first, all on one device.
    metric : str
        ``"euclidean"`` or ``"cosine"``.
    """
    metric = check_metric(metric)
    xp = cupy() if is_cupy(graphs[0]) else np
    joined = xp.concatenate([xp.asarray(g).astype(xp.int32) for g in graphs], axis=1)
    if joined.shape[1] > MAX_CANDIDATES:
        raise ValueError(f"the union of {len(graphs)} graphs has more than {MAX_CANDIDATES} candidates a row.")
    return _round(X, joined, None, metric, xp, k=int(graphs[0].shape[1]))


def _round(X: Any, idx: Any, reverse: Any, metric: str, xp: Any, k: int | None = None) -> tuple[Any, Any]:
    """One round: each point's k best candidates by exact distance (see the module docstring). Without
    ``reverse`` the candidates are idx's own columns (``k`` given: fewer kept than idx has columns)."""
    n, width = idx.shape
    k = width if k is None else k
    m = candidate_width(k)[1] if reverse is not None else width
    out_idx = xp.empty((n, k), dtype=xp.int32)
    out_dist = xp.empty((n, k), dtype=xp.float32)
    tile = _tile_rows(m) if xp is not np else _CPU_TILE_ROWS
    for start in range(0, n, tile):
        stop = min(n, start + tile)
        cand = _candidates(idx, reverse, start, stop, xp)
        if xp is np:
            rows = np.arange(start, stop, dtype=np.int64)
            tile_idx = np.empty((stop - start, k), dtype=np.int64)
            tile_dist = np.empty((stop - start, k), dtype=np.float64)
            refine_candidates(X, X, rows, cand, k, metric == "cosine", True, tile_idx, tile_dist)
            out_idx[start:stop] = tile_idx
            with np.errstate(over="ignore"):  # as the exact search: beyond float32 becomes inf
                out_dist[start:stop] = tile_dist.astype(np.float32)
        else:
            rows = xp.arange(start, stop, dtype=xp.int64)
            refine_candidates_gpu(
                X,
                X,
                rows,
                cand.astype(xp.int32),
                k,
                metric == "cosine",
                True,
                out_idx[start:stop],
                out_dist[start:stop],
            )
    return out_idx, out_dist
