"""The graph stage on an NVIDIA GPU: the kNN, the fuzzy set, the pruning and the edge list on the device; the edge
list copied to the host (the CPU's bytes)."""

from __future__ import annotations

import time
from collections.abc import Callable

from .._backend import cupy, gpu_memory
from ._types import FuzzyGraph
from .edges import graph_from_fuzzy_arrays, refuse_overflowed_distances
from .fuzzy.fuzzy_gpu import fuzzy_simplicial_set_gpu
from .knn import GEMM_METRICS, check_metric, stop_if_cancelled
from .knn.knn_gpu import exact_knn_gpu, knn_bytes_needed
from .knn.partitioned import DEFAULT_OVERLAP, ROWS_PER_PARTITION, partitioned_bytes_needed, partitioned_knn
from .params import GraphParams


def graph_on_gpu(
    X,
    params: GraphParams,
    precision: str = "auto",
    timings: dict | None = None,
    cancel: Callable[[], bool] | None = None,
    partitioning: dict | None = None,
) -> FuzzyGraph:
    """The graph stage with the kNN and the fuzzy set on the GPU (inputs already validated).

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray
        (n_samples, n_features) float32 data; with ``partitioning`` a NumPy array (also memory-mapped) may stay on
        the host.
    params : GraphParams
        The build's parameters (``params.knn`` is recorded as given, usually ``"exact-gpu"``).
    precision : str
        The exact kNN's GEMM precision, ``"auto"``, ``"tf32"`` or ``"fp32"`` (see :mod:`umapviz.graph.knn.knn_gpu`).
    timings : dict, optional
        Receives seconds per stage (knn, fuzzy, edges and its copies to the host, to_host; with ``partitioning``
        also the search's own stages).
    cancel : callable, optional
        Asked before each tile of the exact kNN (or after each partition of the partitioned search) and after the
        kNN (BuildCancelled when it returns True).
    partitioning : dict, optional
        Keywords of :func:`umapviz.graph.knn.partitioned.partitioned_knn` (n_partitions, overlap, random_state,
        client): the partitioned search instead of the exact one.
    """
    cp = cupy()
    t0 = time.perf_counter()
    if partitioning is not None:
        stages: dict = {}
        idx, dist = partitioned_knn(
            X,
            params.n_neighbors,
            params.metric,
            device="gpu",
            return_device=True,
            timings=stages,
            cancel=cancel,
            **partitioning,
        )
        if timings is not None:
            timings.update({f"knn_{name}": value for name, value in stages.items()})
    else:
        idx, dist = exact_knn_gpu(
            X, params.n_neighbors, params.metric, precision=precision, return_device=True, cancel=cancel
        )
    cp.cuda.Device().synchronize()
    t1 = time.perf_counter()
    fuzzy_stages: dict = {}
    graph = graph_from_knn_gpu(idx, dist, params, timings=fuzzy_stages, cancel=cancel)
    if timings is not None:
        timings.update(knn=t1 - t0, **fuzzy_stages)
    return graph


def graph_from_knn_gpu(
    knn_indices, knn_dists, params: GraphParams, timings: dict | None = None, cancel: Callable[[], bool] | None = None
) -> FuzzyGraph:
    """:func:`fuzzy_graph_gpu` of a finished GPU kNN, after the cancel check and the refusal of distances that
    overflowed float32 (the rows are named on the host).

    Parameters
    ----------
    knn_indices, knn_dists : cupy.ndarray
        (n, k) int32 neighbours (self first) and float32 distances, rows sorted.
    params : GraphParams
        The build's parameters.
    timings : dict, optional
        As :func:`fuzzy_graph_gpu` fills it.
    cancel : callable, optional
        Asked first (BuildCancelled when it returns True).
    """
    cp = cupy()
    stop_if_cancelled(cancel)
    if not bool(cp.isfinite(knn_dists).all()):  # before the fuzzy set's arithmetic on inf
        refuse_overflowed_distances(knn_dists.get())
    return fuzzy_graph_gpu(knn_indices, knn_dists, params, timings=timings)


def fuzzy_graph_gpu(knn_indices, knn_dists, params: GraphParams, timings: dict | None = None) -> FuzzyGraph:
    """The pruned fuzzy graph of a kNN on the GPU: the fuzzy set, the pruning and the edge list on the device, then
    the edge list (and the kNN) copied to the host: the bytes of the CPU's :func:`graph_from_fuzzy_set`.

    Parameters
    ----------
    knn_indices, knn_dists : cupy.ndarray
        (n, k) int32 neighbours (self first) and float32 distances, rows sorted.
    params : GraphParams
        The build's parameters.
    timings : dict, optional
        Receives seconds per stage: ``fuzzy`` (the fuzzy set), ``edges`` (pruning and the edge list on the GPU,
        and the copies to the host), of them ``to_host`` (the copies).
    """
    cp = cupy()
    t0 = time.perf_counter()
    indptr, indices, data = fuzzy_simplicial_set_gpu(knn_indices, knn_dists)
    cp.cuda.Device().synchronize()
    t1 = time.perf_counter()
    stages: dict = {}
    graph = graph_from_fuzzy_arrays(indptr, indices, data, knn_indices, knn_dists, params, timings=stages)
    if timings is not None:
        timings.update(fuzzy=t1 - t0, edges=time.perf_counter() - t1, to_host=stages["to_host"])
    return graph


def build_graph_gpu(
    X,
    n_neighbors: int = 15,
    metric: str = "euclidean",
    min_dist: float = 0.1,
    spread: float = 1.0,
    n_epochs: int | None = None,
    precision: str = "auto",
    timings: dict | None = None,
) -> FuzzyGraph:
    """:func:`umapviz.build_graph` for data already on the GPU (a CuPy array stays there; no cache).

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray
        (n_samples, n_features) float32 data, already checked.
    n_neighbors, metric, min_dist, spread, n_epochs
        As :func:`umapviz.build_graph`; ``params["knn"]`` is ``"exact-gpu"``.
    precision : str
        The kNN's GEMM precision, ``"auto"``, ``"tf32"`` or ``"fp32"``.
    timings : dict, optional
        Receives seconds per stage.
    """
    params = GraphParams.for_data(
        X.shape[0],
        n_neighbors=n_neighbors,
        metric=check_metric(metric, GEMM_METRICS, "the GPU search"),
        knn="exact-gpu",
        min_dist=min_dist,
        spread=spread,
        n_epochs=n_epochs,
    )
    return graph_on_gpu(X, params, precision=precision, timings=timings)


def graph_bytes_needed(
    n: int, d: int, n_neighbors: int, method: str, n_partitions: int = 1, overlap: int = 1, data_on_device: bool = True
) -> int:
    """GPU bytes a graph build needs at its peak: the kNN's (exact: X, its scaled copy, one tile of 1,024 query
    rows and the results; partitioned: :func:`umapviz.graph.knn.partitioned.partitioned_bytes_needed`), or the fuzzy
    set's (the kNN's results, the memberships, the symmetric sum's three sparse matrices, and X where it stays on
    the device), whichever is more.

    Parameters
    ----------
    n, d : int
        Points and features.
    n_neighbors : int
        Neighbours per point.
    method : str
        ``"exact-gpu"`` or ``"partitioned-gpu"``.
    n_partitions, overlap : int
        The partitioned search's resolved partitioning.
    data_on_device : bool
        Whether X lies on the GPU (a CuPy array, or a NumPy one that gets uploaded).
    """
    if method == "partitioned-gpu":
        knn = partitioned_bytes_needed(n, d, n_neighbors, n_partitions, overlap, data_on_device)
    else:
        knn = knn_bytes_needed(n, d, n_neighbors, min(n, 1024))  # X on the device is counted there
    fuzzy = 8 * n * n_neighbors + 3 * 12 * 2 * n * n_neighbors + (4 * n * d if data_on_device else 0)
    return int(max(knn, fuzzy))


def memory_shortfall_message(
    n: int, d: int, n_neighbors: int, method: str, need: int, free: int, total: int, partitioned_need: int | None = None
) -> str:
    """The MemoryError text of a GPU build that cannot fit: what it needs, what is free, and what to change.

    Parameters
    ----------
    n, d, n_neighbors : int
        The build's size.
    method : str
        ``"exact-gpu"`` or ``"partitioned-gpu"``.
    need, free, total : int
        Bytes needed, free and in all on the GPU.
    partitioned_need : int, optional
        For an exact build, what the partitioned search would need (named in the fix).
    """
    gib = 2**30
    fixes = []
    if method == "exact-gpu":
        other = f" (about {partitioned_need / gib:.1f} GiB here)" if partitioned_need is not None else ""
        fixes.append(f"knn='approx' (the partitioned search{other})")
    else:
        fixes.append("more knn_partitions (smaller partitions)")  # the refinement rounds are checked on their own
    fixes += [
        "fewer rows",
        "X as a NumPy array or a memory-mapped .npy, not a CuPy array (the partitioned search "
        "then streams it to the GPU partition by partition)",
        "freeing GPU memory",
        "device='cpu'",
    ]
    return (
        f"The {method} graph of {n:,} x {d} points with n_neighbors={n_neighbors} needs about {need / gib:.2f} GiB "
        f"of GPU memory, but only {free / gib:.2f} GiB of {total / gib:.2f} GiB is free. Try "
        + "; or ".join(fixes)
        + "."
    )


def check_graph_fits(
    n: int,
    d: int,
    n_neighbors: int,
    method: str,
    n_partitions: int | str = 1,
    overlap: int = 1,
    data_on_device: bool = True,
    free_total: tuple[int, int] | None = None,
) -> None:
    """MemoryError (:func:`memory_shortfall_message`) before a GPU build that cannot fit in free GPU memory.

    Parameters
    ----------
    n, d, n_neighbors : int
        The build's size.
    method : str
        ``"exact-gpu"`` or ``"partitioned-gpu"``.
    n_partitions, overlap : int
        The partitioned search's resolved partitioning (ignored for the exact search).
    data_on_device : bool
        Whether X lies on the GPU for the whole build. A partitioned build of host data keeps it on the host when it
        does not fit, so only its search's own buffers must fit.
    free_total : (int, int), optional
        (free, total) bytes; None asks the GPU.
    """
    free, total = gpu_memory() if free_total is None else free_total
    if method == "partitioned-gpu":
        need = graph_bytes_needed(n, d, n_neighbors, method, int(n_partitions), overlap, data_on_device=False)
        if need <= free:
            return
        raise MemoryError(memory_shortfall_message(n, d, n_neighbors, method, need, free, total))
    need = graph_bytes_needed(n, d, n_neighbors, method, data_on_device=data_on_device)
    if need <= free:
        return
    parts = max(1, -(-n // ROWS_PER_PARTITION))
    other = graph_bytes_needed(n, d, n_neighbors, "partitioned-gpu", parts, DEFAULT_OVERLAP, data_on_device=False)
    raise MemoryError(memory_shortfall_message(n, d, n_neighbors, method, need, free, total, other))
