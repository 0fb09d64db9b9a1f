"""Approximate kNN by overlapping partitions, on the CPU or the GPU, optionally on Dask workers.

The rows are cut into overlapping partitions (:mod:`umapviz.graph.knn.partitions`: k-means centroids, each point in
its ``overlap`` nearest centroids' partitions, sizes capped); each partition's members get their exact kNN among
the members (the exact searches :func:`umapviz.graph.knn.knn_cpu.exact_knn` and
:func:`umapviz.graph.knn.knn_gpu.exact_knn_gpu`); each point keeps the ``k`` best of the candidates its partitions gave,
by (distance, index), itself first; rounds of neighbourhood refinement (:mod:`umapviz.graph.knn.refine`) then
find some of the neighbours that partition boundaries cut off. The cost is about ``overlap**2 * n *
rows_per_partition`` distance evaluations instead of ``n**2``, plus about ``k**2 * n`` a round; what it misses is
measured by :func:`umapviz.graph.knn.recall.recall_at_k`.

Deterministic: the plan is a function of the data and the seed, and the merge a function of the set of
candidates (a pair's distance is recomputed exactly from its two rows, the same in every partition that holds
it), so neither the order in which partitions finish nor the Dask workers that run them change a byte.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._backend import cupy, gpu_memory, is_cupy, to_host
from ..._host_data import to_device
from ..._validation import check_int
from . import GEMM_METRICS, check_metric, stop_if_cancelled
from .knn_cpu import exact_knn
from .knn_gpu import exact_knn_gpu, fast_precision, knn_bytes_needed
from .partitions import Partition, plan_partitions, take_rows
from .refine import check_refine_fits, refine_bytes_needed, refine_gpu_bytes_needed, refine_knn

# Primary rows per partition for n_partitions="auto" and the default overlap: chosen by the recall they reach on
# the kit's data sets (bench/PARTITIONED_KNN.md).
ROWS_PER_PARTITION = 16384
DEFAULT_OVERLAP = 2
# Rounds of neighbourhood refinement after the merge (:mod:`umapviz.graph.knn.refine`) for knn_refine="auto": one
# round recovers much of what partition boundaries cut off at a small share of the searches' cost
# (bench/PARTITIONED_KNN.md). "auto" means these rounds wherever X lies, so the same data and seed give the same
# graph resident or streamed: a GPU round reads rows at random, so host data is uploaded for it. Only where the
# round's memory does not fit does "auto" run none, with a warning; the rounds run are what graph.params records
# (:func:`refine_rounds`).
DEFAULT_REFINE = "auto"
REFINE_ROUNDS = 1
DEFAULT_REPEATS = 1
# A partition may hold up to this many times its share of memberships (overlap * n / n_partitions) before it is
# cut in halves: balance bounds the slowest search and the GPU memory of one partition.
MAX_MEMBERS_FACTOR = 2.0
_EMPTY = np.iinfo(np.int64).max
_LOW32 = 0xFFFFFFFF


def resolve_partitioning(
    n_samples: int, n_neighbors: int, n_partitions: int | str = "auto", overlap: int = DEFAULT_OVERLAP
) -> tuple[int, int]:
    """``(n_partitions, overlap)`` for n_samples points: "auto" gives one partition per ROWS_PER_PARTITION rows;
    both are checked (a clear error names the fix).

    Parameters
    ----------
    n_samples : int
        Number of points.
    n_neighbors : int
        Neighbours per point, counting the point itself.
    n_partitions : int or "auto"
        Number of k-means partitions.
    overlap : int
        Partitions each point joins.
    """
    if isinstance(n_partitions, str):
        if n_partitions != "auto":
            raise ValueError(f"knn_partitions={n_partitions!r} is not understood: pass a positive int or 'auto'.")
        n_partitions = max(1, math.ceil(n_samples / ROWS_PER_PARTITION))
    n_partitions = check_int("knn_partitions", n_partitions, 1)
    overlap = check_int("knn_overlap", overlap, 1)
    most = max(1, n_samples // (2 * n_neighbors))
    if n_partitions > most:
        raise ValueError(
            f"knn_partitions={n_partitions} is too many for {n_samples:,} points and n_neighbors={n_neighbors}: "
            f"each partition needs well over n_neighbors points. Use at most {most} (or 'auto')."
        )
    if overlap > n_partitions:
        overlap = n_partitions  # with one partition every point is in it: the search is exact
    return n_partitions, overlap


def partitioned_knn(
    X: Any,
    n_neighbors: int,
    metric: str = "euclidean",
    n_partitions: int | str = "auto",
    overlap: int = DEFAULT_OVERLAP,
    random_state: int = 0,
    device: str = "cpu",
    client: Any = None,
    return_device: bool = False,
    timings: dict | None = None,
    data_on_device: bool | None = None,
    refine: int | str = DEFAULT_REFINE,
    repeats: int = DEFAULT_REPEATS,
    cancel: Callable[[], bool] | None = None,
) -> tuple[Any, Any]:
    """Approximate kNN by overlapping partitions: ``(indices int32 (n, k), distances float32 (n, k))``, self first,
    the rest by (distance, index), like the exact searches.

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray
        (n, d) float32 data, already checked. On the GPU a NumPy array (also a memory-mapped ``.npy``) is uploaded
        whole when it fits beside the work, else one partition's rows at a time.
    n_neighbors : int
        Neighbours per point, counting the point itself.
    metric : str
        ``"euclidean"`` or ``"cosine"``.
    n_partitions : int or "auto"
        k-means partitions ("auto": one per ROWS_PER_PARTITION rows).
    overlap : int
        Partitions each point joins; more raises recall at about ``overlap**2`` times the work.
    random_state : int
        Seeds the partitioning; the same seed gives the same bytes.
    device : str
        ``"cpu"`` or ``"gpu"``: where the plan, the searches (without ``client``) and the merge run.
    client : dask.distributed.Client, optional
        Runs each partition's search as a task on the client's workers, on their ``device``.
    return_device : bool
        On the GPU, return CuPy arrays.
    timings : dict, optional
        Receives seconds of the plan, the searches and the merge, and the partition count and largest size.
    data_on_device : bool, optional
        On the GPU with NumPy X: True uploads X whole, False keeps it on the host (rows travel per tile and per
        partition), None decides by free GPU memory (uploaded when X and the work take at most half of it).
    refine : int or "auto"
        Rounds of neighbourhood refinement after the merge (:func:`umapviz.graph.knn.refine.refine_knn`; 0: none),
        resolved by :func:`refine_rounds` before the search: "auto" is REFINE_ROUNDS on either device and whether X
        is resident or streamed, unless on the GPU the rounds' memory does not fit (then 0, with a warning). On the
        GPU a round reads X on the device: host X is uploaded for it.
    repeats : int
        Independent partitionings (k-means from other seeds: :func:`repeat_seed`), their candidates merged: each
        costs one search more. Measured no better than partitions as much larger at the same cost
        (bench/PARTITIONED_KNN.md), so build_graph does not offer it; benchmarks and studies do.
    cancel : callable, optional
        A no-argument callable asked after each partition's search and before the refinement; when it returns
        True the search stops with :class:`umapviz.graph.knn.BuildCancelled`.
    """
    metric = check_metric(metric, GEMM_METRICS, "the partitioned search")
    n, d = (int(s) for s in X.shape)
    k = check_int("n_neighbors", n_neighbors, 1)
    n_partitions, overlap = resolve_partitioning(n, k, n_partitions, overlap)
    refine = refine_rounds(refine, n, d, k, n_partitions, device, x_on_device=is_cupy(X))
    xp = cupy() if device == "gpu" else np
    t0 = time.perf_counter()
    data = work_data(X, n, d, k, overlap, n_partitions, data_on_device, refine) if device == "gpu" else X
    repeats = check_int("knn_repeats", repeats, 1)
    # Column block `r * overlap + slot` of a point's row holds the k candidates of its slot-th partition in the r-th
    # partitioning.
    keys = xp.full((n, repeats * overlap * k), _EMPTY, dtype=xp.int64)
    planning, searching = time.perf_counter() - t0, 0.0  # the plan's time includes the upload of X
    sizes = []
    for r in range(repeats):
        t1 = time.perf_counter()
        plan = plan_partitions(
            data,
            n_partitions,
            overlap,
            repeat_seed(int(random_state or 0), r),
            _max_members(n, n_partitions, overlap),
            _min_members(k),
            metric=metric,
            xp=xp,
        )
        t2 = time.perf_counter()
        for part, (idx, dist) in zip(plan, _searches(data, plan, k, metric, device, client), strict=True):
            _scatter(keys, part, xp.asarray(idx), xp.asarray(dist), k, r * overlap, xp)
            stop_if_cancelled(cancel)  # a partition at a time: a closed panel stops a large search soon
        planning, searching = planning + t2 - t1, searching + time.perf_counter() - t2
        sizes += [part.size for part in plan]
    t3 = time.perf_counter()
    idx, dist = _merge(keys, k, xp)
    del keys, plan  # before the rounds, whose memory refine_rounds counted beside the merged graph only
    t4 = time.perf_counter()
    refined: dict = {}
    stop_if_cancelled(cancel)
    if refine:
        idx, dist = refine_knn(data, idx, refine, metric, device, timings=refined)
    if timings is not None:
        timings.update(
            plan=planning,
            searches=searching,
            merge=t4 - t3,
            refine=time.perf_counter() - t4,
            refine_rounds=refined.get("refine_rounds", []),
            n_partitions=len(sizes) // repeats,
            largest_partition=max(sizes),
        )
    if xp is not np and not return_device:
        return idx.get(), dist.get()
    return idx, dist


def repeat_seed(seed: int, repeat: int) -> int:
    """The k-means seed of the ``repeat``-th partitioning: ``seed`` itself for the first (so one partitioning is
    the plain search), then a seed drawn from ``(seed, repeat)``.

    Parameters
    ----------
    seed : int
        The search's seed.
    repeat : int
        Which partitioning, from 0.
    """
    return seed if repeat == 0 else int(np.random.default_rng([seed, repeat]).integers(2**31))


def resolve_refine(refine: int | str) -> int | str:
    """``refine`` checked: "auto" or a count of rounds >= 0 (a clear error names the fix).

    Parameters
    ----------
    refine : int or "auto"
        Rounds of refinement after the partitioned search.
    """
    if isinstance(refine, str):
        if refine != "auto":
            raise ValueError(f"knn_refine={refine!r} is not understood: pass a number of rounds >= 0 or 'auto'.")
        return refine
    return check_int("knn_refine", refine, 0)


def refine_rounds(
    refine: int | str,
    n: int,
    d: int,
    n_neighbors: int,
    n_partitions: int,
    device: str,
    x_on_device: bool,
    free_total: tuple[int, int] | None = None,
) -> int:
    """The refinement rounds a partitioned search runs, decided before it starts: what ``graph.params["knn_refine"]``
    records, so that a cache key tells two graphs apart and the same graph the same.

    One partition is the exact search: 0 rounds (nothing to refine). On the CPU, "auto" is REFINE_ROUNDS. On the GPU
    a round needs X on the device (host data is uploaded for it, resident or streamed alike) and its buffers beside
    the merged graph: "auto" is REFINE_ROUNDS where that fits in free GPU memory, else 0 with a warning naming
    ``knn_refine``; a count that does not fit raises a MemoryError naming what it needs and the fix. So "auto" gives
    the same rounds for the same data whether X is a CuPy array, uploaded whole or streamed.

    Parameters
    ----------
    refine : int or "auto"
        Rounds asked for (checked here: a clear error names the fix).
    n, d : int
        Points and features.
    n_neighbors : int
        Neighbours per point.
    n_partitions : int
        The resolved partition count (:func:`resolve_partitioning`).
    device : str
        ``"cpu"`` or ``"gpu"``: where the rounds run.
    x_on_device : bool
        Whether X is already a GPU array (else on the GPU it is uploaded for the rounds).
    free_total : (int, int), optional
        (free, total) GPU bytes; None asks the GPU.
    """
    refine = resolve_refine(refine)
    rounds = REFINE_ROUNDS if refine == "auto" else refine
    if n_partitions == 1 or rounds == 0:
        return 0
    if device != "gpu":
        return rounds
    free, total = gpu_memory() if free_total is None else free_total
    held = 8 * n * n_neighbors  # the merged graph (int32 indices, float32 distances), held while the rounds run
    if refine != "auto":
        check_refine_fits(n, d, n_neighbors, x_on_device, (free, total), held=held)
        return rounds
    need = refine_gpu_bytes_needed(n, d, n_neighbors, x_on_device) + held
    if need <= free:
        return rounds
    gib = 2**30
    warnings.warn(
        f"knn_refine='auto' runs no refinement round here: on the GPU a round over {n:,} points needs about "
        f"{need / gib:.2f} GiB ({'its buffers' if x_on_device else 'X uploaded and its buffers'}), but only "
        f"{free / gib:.2f} GiB of {total / gib:.2f} GiB is free. The graph finds fewer true neighbours than with the "
        "round and differs from a build where it fits; graph.params records knn_refine=0. Free GPU memory to refine, "
        "or pass knn_refine=0 to choose no round without this warning.",
        UserWarning,
        stacklevel=3,
    )
    return 0


def search_partition(rows: Any, n_neighbors: int, metric: str, device: str) -> tuple[Any, Any]:
    """Exact kNN of a partition's rows among themselves (local row numbers, self first): the unit of work of a
    partitioned search, and the task a Dask worker runs.

    Parameters
    ----------
    rows : numpy.ndarray or cupy.ndarray
        (m, d) float32 rows of one partition.
    n_neighbors : int
        Neighbours per point, counting the point itself.
    metric : str
        ``"euclidean"`` or ``"cosine"``.
    device : str
        ``"cpu"`` (:func:`umapviz.graph.knn.knn_cpu.exact_knn`) or ``"gpu"`` (:func:`knn_gpu.exact_knn_gpu`; CuPy
        results for CuPy rows, NumPy ones for NumPy rows). On the GPU without the TF32 check
        (:func:`knn_gpu.fast_precision`): the partitioned search is approximate, and its recall is measured.
    """
    if device == "gpu":
        precision = fast_precision(rows.shape[1])
        return exact_knn_gpu(rows, n_neighbors, metric, precision=precision, return_device=is_cupy(rows))
    return exact_knn(np.asarray(rows), n_neighbors, metric, progress=False)


def partitioned_bytes_needed(
    n: int,
    d: int,
    n_neighbors: int,
    n_partitions: int,
    overlap: int,
    data_on_device: bool = True,
    refine: int = 0,
    repeats: int = DEFAULT_REPEATS,
) -> int:
    """GPU bytes a partitioned search needs at its peak: X when it is on the device, the assignment and the
    candidate keys of every point (and the sort's copy), and the larger of the largest partition's exact search
    and the refinement rounds (which hold X on the device).

    Parameters
    ----------
    n, d : int
        Points and features.
    n_neighbors : int
        Neighbours per point.
    n_partitions, overlap : int
        The resolved partitioning (:func:`resolve_partitioning`).
    data_on_device : bool
        Whether X lies on the GPU for the whole search (else its rows travel partition by partition).
    refine : int
        Rounds of refinement after the merge, resolved (:func:`refine_rounds`); 0 counts the search alone.
    repeats : int
        Independent partitionings (their candidate keys are held together).
    """
    largest = min(n, _max_members(n, n_partitions, overlap))
    candidates = 2 * 8 * n * repeats * overlap * n_neighbors + 4 * n * overlap
    search = knn_bytes_needed(largest, d, n_neighbors, min(largest, 1024)) + 4 * largest * d
    refining = refine_gpu_bytes_needed(n, d, n_neighbors, data_on_device) if refine else 0
    return (4 * n * d if data_on_device else 0) + max(candidates + search, refining)


def _max_members(n: int, n_partitions: int, overlap: int) -> int:
    """The cap on a partition's members: MAX_MEMBERS_FACTOR times its share (no cap with one partition)."""
    if n_partitions == 1:
        return n
    return max(1, int(MAX_MEMBERS_FACTOR * overlap * n / n_partitions))


def _min_members(n_neighbors: int) -> int:
    """The fewest members a partition may have: its exact search needs more points than neighbours."""
    return 2 * n_neighbors


def work_data(
    X: Any, n: int, d: int, k: int, overlap: int, n_partitions: int, upload: bool | None = None, rounds: int = 0
) -> Any:
    """X for a partitioned search on the GPU: uploaded when asked (``upload``), or with None when it fits beside the
    work (the search, and ``rounds`` of refinement) in half the free memory; else X where it is: its rows then
    travel to the GPU tile by tile and partition by partition (and X is uploaded after the search for the rounds,
    if any). Either way the same bytes.

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray
        (n, d) float32 data (a CuPy array is returned as it is).
    n, d, k : int
        Rows, features and neighbours.
    overlap, n_partitions : int
        The resolved partitioning.
    upload : bool, optional
        True uploads, False keeps X on the host, None decides by free memory.
    rounds : int
        Refinement rounds that follow the search.
    """
    if is_cupy(X):
        return X
    if upload is None:
        free, _ = gpu_memory()
        work = partitioned_bytes_needed(n, d, k, n_partitions, overlap, data_on_device=False)
        upload = 4 * n * d + max(work, refine_bytes_needed(n, k) if rounds else 0) <= 0.5 * free
    return to_device(X) if upload else X


def _searches(data: Any, plan: list[Partition], k: int, metric: str, device: str, client: Any):
    """Each partition's (local indices, distances), in plan order: here, or as Dask tasks on ``client``'s workers
    (at most two per worker core in flight, so the driver never holds every partition's rows at once)."""
    if client is None:
        for part in plan:
            rows = to_device(data, part.members) if device == "gpu" else take_rows(data, part.members)
            yield search_partition(rows, k, metric, device)
        return
    window = max(2, 2 * sum(client.nthreads().values()))
    futures = []
    for i, part in enumerate(plan):
        rows = to_host(take_rows(data, part.members))
        futures.append(client.submit(search_partition, rows, k, metric, device, pure=False))
        if i >= window - 1:
            yield futures.pop(0).result()
    while futures:
        yield futures.pop(0).result()


def _scatter(keys: Any, part: Partition, idx: Any, dist: Any, k: int, first_block: int, xp: Any) -> None:
    """Write a partition's candidates into its members' rows of ``keys`` (column block ``first_block`` + the
    member's slot): (global index << 32) | distance bits, -1 for the point itself (so it sorts first whatever its
    duplicates)."""
    members = xp.asarray(part.members)
    found = members[idx.astype(xp.int64)]
    bits = dist.astype(xp.float32).view(xp.int32).astype(xp.int64)  # a float >= 0 orders as its bits do
    key = (found << 32) | bits
    key[found == members[:, None]] = -1
    cols = (xp.asarray(part.slots)[:, None] + first_block) * k + xp.arange(k)[None, :]
    keys[members[:, None], cols] = key


def _merge(keys: Any, k: int, xp: Any) -> tuple[Any, Any]:
    """Per row the k best distinct candidates by (distance, index), self first. A pair found in several partitions
    is kept once (its smallest distance, should they differ)."""
    n = keys.shape[0]
    keys.sort(axis=1)  # by index, then distance: copies of a candidate side by side, the nearest copy first
    body = keys[:, 1:]
    same = ((body >> 32) == (keys[:, :-1] >> 32)) & (body != _EMPTY)
    body[same] = _EMPTY
    # Re-key by distance first: (distance bits << 32) | index.
    live = (keys != _EMPTY) & (keys != -1)
    swapped = ((keys & _LOW32) << 32) | (keys >> 32)
    keys = xp.where(live, swapped, keys)
    keys.sort(axis=1)
    top = keys[:, :k]
    if bool((top[:, 0] != -1).any()) or bool((top == _EMPTY).any()):
        raise RuntimeError(
            "The partitioned kNN left a point without itself or with fewer than n_neighbors candidates; this is a "
            "bug (every partition has more than n_neighbors members). Use knn='exact' meanwhile."
        )
    idx = (top & _LOW32).astype(xp.int32)
    dist = (top >> 32).astype(xp.int32).view(xp.float32)
    idx[:, 0] = xp.arange(n, dtype=xp.int32)
    dist[:, 0] = 0.0
    return idx, dist
