"""build_graph: data -> kNN -> fuzzy simplicial set -> pruned, symmetric edge list (a FuzzyGraph), on either
device, with an on-disk cache."""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .._backend import is_cupy, resolve_device
from .._validation import (
    RandomStateLike,
    check_data,
    check_n_epochs,
    check_n_neighbors,
    check_random_state,
)
from ._types import FuzzyGraph
from .build_gpu import check_graph_fits, graph_from_knn_gpu, graph_on_gpu
from .cache import cache_key, cache_path, data_fingerprint, load_graph, resolve_cache_dir, save_graph
from .edges import graph_from_fuzzy_set, refuse_overflowed_distances
from .fuzzy import find_ab_params
from .fuzzy.fuzzy_cpu import fuzzy_simplicial_set
from .knn import (
    AUTO_RECALL_SAMPLE,
    check_auto_recall,
    check_metric,
    check_target_recall,
    resolve_knn_method,
    stop_if_cancelled,
)
from .knn.auto_search import DEFAULT_TARGET, auto_knn
from .knn.knn_cpu import nearest_neighbors
from .knn.partitioned import (
    DEFAULT_OVERLAP,
    DEFAULT_REFINE,
    partitioned_knn,
    refine_rounds,
    resolve_partitioning,
    resolve_refine,
    work_data,
)
from .knn.recall import recall_at_k, truth_block_rows
from .params import GraphParams


def build_graph(
    X,
    n_neighbors: int = 15,
    metric: str = "euclidean",
    min_dist: float = 0.1,
    spread: float = 1.0,
    n_epochs: int | None = None,
    knn: str = "auto",
    random_state: RandomStateLike = None,
    cache: bool | str | os.PathLike = True,
    progress: bool = True,
    device: str = "cpu",
    cancel: Callable[[], bool] | None = None,
    knn_partitions: int | str = "auto",
    knn_overlap: int = DEFAULT_OVERLAP,
    client: Any = None,
    knn_refine: int | str = DEFAULT_REFINE,
    knn_target_recall: float = DEFAULT_TARGET,
) -> FuzzyGraph:
    """Build UMAP's fuzzy graph of ``X`` as a :class:`FuzzyGraph`.

    Parameters
    ----------
    X : array-like
        (n_samples, n_features); anything ``np.asarray`` takes, NaN/inf not allowed.
    n_neighbors : int
        Neighbours per point, counting the point itself.
    metric : str
        ``"euclidean"`` or ``"cosine"`` (1 - cosine similarity).
    min_dist, spread : float
        Shape of the low-dimensional curve; they give ``a`` and ``b``.
    n_epochs : int, optional
        The optimizer's epoch count, which sets the pruning threshold ``max(w) / n_epochs``; None means 500 up
        to 10,000 points, else 200.
    knn : str
        ``"exact"`` (tiled brute force), ``"approx"``, ``"partitioned"`` or ``"auto"``. On the CPU "approx" is
        NN-descent (pynndescent) and "auto" is exact while ``n_samples**2 * (n_features + 150) <= 1.1e12`` (about
        half a minute on two cores), else approx. On the GPU "approx" is the partitioned search and "auto" is exact
        up to 500,000 rows, else the partitioned search escalated until its recall@k, measured on 1,000 sampled
        rows, reaches ``knn_target_recall`` (:mod:`umapviz.graph.knn.auto_search`: more refinement rounds, larger
        partitions, the exact search where that is cheaper, within a work budget); ``graph.params`` records the
        steps (``knn_steps``), the recall (``knn_recall``) and ``knn`` ("partitioned-gpu" or "exact-gpu"), and a
        warning gives the recall reached and the exact graph's estimated time where the target is not. "partitioned"
        (:mod:`umapviz.graph.knn.partitioned`: k-means partitions, each point in its ``knn_overlap`` nearest ones,
        exact search inside each, candidates merged) runs on either device; measure what it misses with
        :func:`umapviz.graph.knn.recall.recall_at_k`.
    random_state : int, None, numpy.random.RandomState or numpy.random.Generator
        Seeds the approximate and partitioned kNN (exact kNN does not depend on it); from a generator one seed is
        drawn.
    cache : bool, str or os.PathLike
        True (default directory, see :mod:`umapviz.graph.cache`), False, or a directory path. An unseeded
        approximate kNN (random_state=None) is never cached: each call is a fresh draw.
    progress : bool
        Show a progress bar for long exact kNN runs.
    device : str
        ``"cpu"``, ``"gpu"`` or ``"auto"``. On the GPU the kNN (recorded as ``"exact-gpu"`` or
        ``"partitioned-gpu"``) and the fuzzy set run on the device. Before a GPU build starts, a MemoryError says
        how much GPU memory it needs and how much is free when it cannot fit, and what to change.
    cancel : callable, optional
        A no-argument callable (e.g. ``event.is_set`` of a ``threading.Event`` another thread sets), asked
        before each tile of the exact kNN (CPU or GPU), after each partition of the partitioned search and after
        the kNN; when it returns True the build stops with :class:`BuildCancelled`. NN-descent (``"approx"`` on the
        CPU) runs to its end before it is asked.
    knn_partitions : int or str
        Partitions of the partitioned search: ``"auto"`` (one per 16,384 rows; a single partition, that is exact
        search, below that) or a count.
    knn_overlap : int
        Partitions each point joins in the partitioned search: more finds more true neighbours at about
        ``knn_overlap**2`` times the work.
    client : dask.distributed.Client, optional
        Runs the partitioned search's partitions as tasks on the client's workers (on ``device``: one GPU per
        worker with dask-cuda, see docs/architecture.md); the graph is the same bytes as without it. Only the
        partitioned search runs there: ``knn`` must be "partitioned" or "auto" (then partitioned).
    knn_refine : int or str
        Rounds of neighbourhood refinement after the partitioned search (:mod:`umapviz.graph.knn.refine`): a count,
        or ``"auto"``, one round on either device, whether X is resident on the GPU or streamed from the host (the
        same data and seed give the same graph). On the GPU a round needs X on the device (host data is uploaded
        for it) and its buffers: where that does not fit, "auto" runs no round and warns, and a count raises a
        MemoryError before the build starts. ``graph.params["knn_refine"]`` records the rounds run (0 with one
        partition, which is the exact search), so the cache tells the graphs apart.
    knn_target_recall : float
        The recall@k that ``knn="auto"`` aims at on the GPU above 500,000 rows (see ``knn``), in (0, 1].
    """
    n_neighbors = check_n_neighbors(n_neighbors)
    metric = check_metric(metric)
    n_epochs = check_n_epochs(n_epochs)
    random_state = check_random_state(random_state)
    a, b = find_ab_params(spread, min_dist)  # also validates min_dist and spread
    X = check_data(X, n_neighbors=n_neighbors)
    device = resolve_device(device)
    method = resolve_knn_method(knn, *X.shape, device=device, distributed=client is not None)
    partitioned = method.startswith("partitioned")
    if partitioned:
        knn_partitions, knn_overlap = resolve_partitioning(X.shape[0], n_neighbors, knn_partitions, knn_overlap)
        knn_refine = resolve_refine(knn_refine)
    escalating = partitioned and knn == "auto" and device == "gpu"  # aims at a recall (client: measures it only)
    if knn == "auto":
        knn_target_recall = check_target_recall(knn_target_recall)
    if device == "gpu":
        check_graph_fits(X.shape[0], X.shape[1], n_neighbors, method, knn_partitions, knn_overlap)
        if escalating:  # the recall check streams X in blocks; not even one fitting is known before the search
            truth_block_rows(X.shape[0], X.shape[1], AUTO_RECALL_SAMPLE)
    if partitioned:  # the rounds that will run, recorded (and keyed) as such: "auto" resolved here
        knn_refine = refine_rounds(knn_refine, *X.shape, n_neighbors, knn_partitions, device, is_cupy(X))

    build = GraphParams.for_data(
        X.shape[0],
        n_neighbors=n_neighbors,
        metric=metric,
        knn=method,
        min_dist=min_dist,
        spread=spread,
        random_state=random_state,
        n_epochs=n_epochs,
        curve=(a, b),
    )
    params = build.record()
    if partitioned:
        params.update(knn_partitions=knn_partitions, knn_overlap=knn_overlap, knn_refine=knn_refine)
    if escalating:  # in the cache key: the steps, and so the graph, follow from the data, the seed and the target
        params.update(knn_target_recall=knn_target_recall)
    seeded = method == "approx" or partitioned
    directory = resolve_cache_dir(cache)
    if seeded and random_state is None:
        directory = None  # a fresh draw each call, as asked: a cached graph would repeat the first one
        if partitioned:  # its k-means takes a seed: draw one, as NN-descent does
            random_state = int(np.random.default_rng().integers(2**31))
    path = key = None
    if directory is not None:
        # Exact kNN ignores the seed, so it is left out of the key: any seed reuses the same graph.
        key_params = dict(params, n_epochs=build.n_epochs, random_state=random_state if seeded else None)
        key = cache_key(data_fingerprint(X), key_params)
        path = cache_path(directory, key)
        graph = load_graph(path, key)
        if graph is not None:
            graph.params["random_state"] = params["random_state"]  # the seed asked for now (it did not change it)
            return graph

    if device == "gpu":
        partitioning = (
            dict(
                n_partitions=knn_partitions,
                overlap=knn_overlap,
                random_state=random_state,
                client=client,
                refine=knn_refine,
            )
            if partitioned
            else None
        )
        if partitioned and client is None:  # uploaded once where it fits: the recall check below reads it too
            X = work_data(X, *X.shape, n_neighbors, knn_overlap, knn_partitions, rounds=knn_refine)
        if escalating and client is None:
            knn_indices, knn_dists, record = auto_knn(
                X,
                n_neighbors,
                metric,
                knn_partitions,
                knn_overlap,
                random_state,
                knn_refine,
                target=knn_target_recall,
                cancel=cancel,
                progress=progress,
            )
            build = dataclasses.replace(build, knn=record["knn"])
            graph = graph_from_knn_gpu(knn_indices, knn_dists, build, cancel=cancel)
            params = dict(build.record(), knn_overlap=knn_overlap, **record)
        else:
            graph = graph_on_gpu(X, build, cancel=cancel, partitioning=partitioning)
        if escalating and client is not None:
            recall = auto_recall(X, graph.knn_indices, metric)
            check_auto_recall(recall, int(X.shape[0]), knn_target_recall)
            params["knn_recall"] = recall
    else:
        if partitioned:
            knn_indices, knn_dists = partitioned_knn(
                X,
                n_neighbors,
                metric,
                knn_partitions,
                knn_overlap,
                random_state=random_state,
                client=client,
                refine=knn_refine,
                cancel=cancel,
            )
        else:
            knn_indices, knn_dists = nearest_neighbors(
                X, n_neighbors, metric, method=method, random_state=random_state, progress=progress, cancel=cancel
            )
        stop_if_cancelled(cancel)  # after an approximate search, which cannot be asked on the way
        refuse_overflowed_distances(knn_dists)  # before the fuzzy set's arithmetic on inf
        fuzzy = fuzzy_simplicial_set(knn_indices, knn_dists)
        graph = graph_from_fuzzy_set(fuzzy, knn_indices, knn_dists, build)

    graph.params.update(params)  # the partitioning, when there is one
    if path is not None:
        try:
            save_graph(path, graph, key)
        except OSError as exc:
            warnings.warn(
                f"Could not write the graph cache {path} ({exc}); continuing without caching. "
                "Pass cache=False, or set UMAPVIZ_CACHE_DIR to a writable directory.",
                UserWarning,
                stacklevel=2,
            )
    return graph


def auto_recall(X, knn_indices, metric: str) -> float:
    """recall@k, rounded to 4 digits, of a partitioned GPU search on AUTO_RECALL_SAMPLE sampled rows (the reference
    streamed in blocks where it does not fit: :func:`umapviz.graph.knn.recall.sampled_truth`).

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray
        The data the graph was built from.
    knn_indices : numpy.ndarray
        The graph's (n, k) neighbour indices.
    metric : str
        The graph's metric.
    """
    recall = recall_at_k(X, knn_indices, sample=AUTO_RECALL_SAMPLE, seed=0, metric=metric, device="gpu")
    return round(float(recall), 4)
