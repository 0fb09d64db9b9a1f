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
from .fuzzy.fuzzy_cpu import check_local_connectivity, check_set_op_mix_ratio, fuzzy_simplicial_set
from .fuzzy.supervised import Target
from .knn import (
    AUTO_RECALL_SAMPLE,
    GEMM_METRICS,
    check_auto_recall,
    check_metric,
    check_metric_kwds,
    check_target_recall,
    metric_cpu,
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
    metric_kwds: dict | None = None,
    local_connectivity: float = 1.0,
    set_op_mix_ratio: float = 1.0,
    target: Target | None = None,
    precomputed_knn: tuple | None = None,
    disconnection_distance: float | None = None,
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
        ``"euclidean"``, ``"cosine"`` (1 - cosine similarity; both devices), or on the CPU ``"manhattan"``,
        ``"chebyshev"``, ``"minkowski"`` (``metric_kwds={"p": p}``), ``"correlation"``, ``"hamming"``,
        ``"jaccard"`` (SciPy's definitions), or ``"precomputed"``: X is then a square matrix of distances.
        umap-learn's aliases (``"l1"``, ``"l2"``, ``"cityblock"``, ...) are taken. A CPU-only metric with
        ``device="auto"`` builds on the CPU; with ``device="gpu"`` it is refused.
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
    metric_kwds : dict, optional
        ``{"p": p}`` for minkowski; no other metric takes any.
    local_connectivity : float
        umap-learn's: the rank among each point's non-zero neighbour distances that sets its rho (1: the nearest).
    set_op_mix_ratio : float
        umap-learn's, in [0, 1]: 1 symmetrises by the fuzzy union, 0 by the intersection.
    target : umapviz.graph.fuzzy.supervised.Target, optional
        A supervised fit's target (:func:`~umapviz.graph.fuzzy.supervised.check_target`): the fuzzy set is
        intersected with it before pruning, as umap-learn's ``fit(X, y)`` does.
    precomputed_knn : tuple, optional
        umap-learn's ``(knn_indices, knn_dists)`` (a third element, its search index, is not used): (n, >= k) arrays
        of each point's neighbours, self first, sorted by distance. No search runs; the graph is not cached.
    disconnection_distance : float, optional
        kNN edges at this distance or beyond are cut (umap-learn's). None: umap-learn's default for the CPU-only
        metrics (2 for correlation, 1 for jaccard), none for the others (umap-learn cuts cosine's at 2, the
        antipodes; here both devices keep them, so that their graphs stay the same bytes). The cut edges leave the
        fuzzy set; sigma and rho are computed with them.

    The options a CPU-only metric, ``local_connectivity``, ``set_op_mix_ratio``, ``target``, ``precomputed_knn``
    or ``disconnection_distance`` ask for run on the CPU (``device="auto"`` builds there; ``"gpu"`` is refused).
    Those not at their defaults are recorded in ``graph.params`` and key the cache.
    """
    n_neighbors = check_n_neighbors(n_neighbors)
    metric = check_metric(metric)
    options = graph_options(metric, metric_kwds, local_connectivity, set_op_mix_ratio, disconnection_distance)
    n_epochs = check_n_epochs(n_epochs)
    random_state = check_random_state(random_state)
    a, b = find_ab_params(spread, min_dist)  # also validates min_dist and spread
    X = check_data(X, n_neighbors=n_neighbors)
    if metric == "precomputed":
        check_distance_matrix(X)
    metric_cpu.check_metric_data(X, metric)
    if target is not None:
        options["target"] = target.fingerprint()
    if precomputed_knn is not None:
        precomputed_knn = check_precomputed_knn(precomputed_knn, X.shape[0], n_neighbors)
        options["precomputed_knn"] = True
    cpu_only = metric not in GEMM_METRICS or bool(options)
    if cpu_only and device == "auto":
        device = "cpu"
    if cpu_only and device == "gpu":
        raise ValueError(
            f"{', '.join(options) or f'metric={metric!r}'} runs on the CPU only (the GPU graph takes the defaults "
            "with metric 'euclidean' or 'cosine'). Pass device='cpu' (or 'auto')."
        )
    device = resolve_device(device)
    method = resolve_knn_method(knn, *X.shape, device=device, distributed=client is not None, metric=metric)
    if precomputed_knn is not None:
        method = "precomputed_knn"
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
    params.update(options)
    if partitioned:
        params.update(knn_partitions=knn_partitions, knn_overlap=knn_overlap, knn_refine=knn_refine)
    if escalating:  # in the cache key: the steps, and so the graph, follow from the data, the seed and the target
        params.update(knn_target_recall=knn_target_recall)
    seeded = method == "approx" or partitioned
    directory = resolve_cache_dir(cache) if precomputed_knn is None else None
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
        elif precomputed_knn is not None:
            knn_indices, knn_dists = precomputed_knn
        elif metric == "precomputed":
            knn_indices, knn_dists = metric_cpu.precomputed_knn(X, n_neighbors, cancel=cancel)
        elif metric not in GEMM_METRICS:
            kwds = options.get("metric_kwds", {})
            if method == "exact":
                knn_indices, knn_dists = metric_cpu.exact_metric_knn(X, n_neighbors, metric, kwds, cancel=cancel)
            else:
                knn_indices, knn_dists = metric_cpu.approx_metric_knn(X, n_neighbors, metric, kwds, random_state)
        else:
            knn_indices, knn_dists = nearest_neighbors(
                X, n_neighbors, metric, method=method, random_state=random_state, progress=progress, cancel=cancel
            )
        stop_if_cancelled(cancel)  # after an approximate search, which cannot be asked on the way
        refuse_overflowed_distances(knn_dists)  # before the fuzzy set's arithmetic on inf
        cut = options.get("disconnection_distance", DISCONNECTION_DISTANCES.get(metric))
        search_indices = knn_indices
        if cut is not None and (knn_dists >= cut).any():
            search_indices = np.where(knn_dists >= cut, -1, knn_indices).astype(np.int32)
        fuzzy = fuzzy_simplicial_set(search_indices, knn_dists, local_connectivity, set_op_mix_ratio)
        if search_indices is not knn_indices:
            warn_disconnected(int((knn_dists >= cut).sum()), fuzzy, cut)
        if target is not None:
            fuzzy = target.intersect(fuzzy, n_neighbors)
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


# umap-learn's default disconnection distances: a kNN edge at a bounded metric's maximum joins unrelated points.
DISCONNECTION_DISTANCES = {"correlation": 2.0, "hellinger": 1.0, "jaccard": 1.0}


def warn_disconnected(edges_removed: int, fuzzy, cut: float) -> None:
    """umap-learn's warning, in its words (its tests and users look for them), when the disconnection distance left
    vertices without any edge: "A few" for up to a tenth of them, "A large number" beyond. Such vertices' places
    mean nothing; ``UMAP.embedding_`` holds NaN for them, as umap-learn's does.

    Parameters
    ----------
    edges_removed : int
        kNN entries at or beyond the cut.
    fuzzy : scipy.sparse.csr_matrix
        The fuzzy set built without them.
    cut : float
        The disconnection distance.
    """
    isolated = int(np.count_nonzero(np.asarray(fuzzy.sum(axis=1)).ravel() == 0))
    if isolated == 0:
        return
    n = fuzzy.shape[0]
    if isolated <= 0.1 * n:
        head = "A few of your vertices were disconnected from the manifold.  This shouldn't cause problems."
        tail = f"It has only fully disconnected {isolated} vertices."
    else:
        head = "A large number of your vertices were disconnected from the manifold."
        tail = f"It has fully disconnected {isolated} vertices."
    warnings.warn(
        f"{head}\nDisconnection_distance = {cut:g} has removed {edges_removed} edges.\n{tail}\nThey have no edges, "
        "so their places mean nothing (UMAP.embedding_ holds NaN for them); umap.utils.disconnected_vertices(model) "
        "or model.fuzzy_graph_.degree == 0 finds them. Pass a larger disconnection_distance to keep their edges.",
        UserWarning,
        stacklevel=3,
    )


def graph_options(metric, metric_kwds, local_connectivity, set_op_mix_ratio, disconnection_distance) -> dict:
    """The umap-learn options of a build that are not at their defaults, checked (ValueError naming the fix).

    Parameters
    ----------
    metric : str
        The checked metric.
    metric_kwds, local_connectivity, set_op_mix_ratio, disconnection_distance
        As :func:`build_graph` takes them.
    """
    options: dict[str, Any] = {}
    kwds = check_metric_kwds(metric, metric_kwds)
    if kwds:
        options["metric_kwds"] = kwds
    if check_local_connectivity(local_connectivity) != 1.0:
        options["local_connectivity"] = float(local_connectivity)
    if check_set_op_mix_ratio(set_op_mix_ratio) != 1.0:
        options["set_op_mix_ratio"] = float(set_op_mix_ratio)
    if disconnection_distance is not None:
        ok = isinstance(disconnection_distance, (int, float, np.number)) and not isinstance(
            disconnection_distance, bool
        )
        if not ok or not disconnection_distance > 0:
            raise ValueError(
                f"disconnection_distance={disconnection_distance!r} must be a number > 0 (np.inf cuts nothing), or "
                "None for umap-learn's default."
            )
        options["disconnection_distance"] = float(disconnection_distance)
    return options


def check_distance_matrix(D: np.ndarray) -> None:
    """ValueError unless D (float32, finite: check_data's) is a square matrix of non-negative distances.

    Parameters
    ----------
    D : numpy.ndarray
        metric="precomputed"'s X.
    """
    if D.shape[0] != D.shape[1]:
        raise ValueError(
            f"metric='precomputed' needs a square (n, n) distance matrix, but X has shape {D.shape}. Pass the "
            "distances between every pair of points (e.g. scipy.spatial.distance.squareform(pdist(X)))."
        )
    if (D < 0).any():
        raise ValueError("metric='precomputed': the distance matrix has negative entries; distances are >= 0.")


def check_precomputed_knn(precomputed_knn, n_samples: int, n_neighbors: int) -> tuple[np.ndarray, np.ndarray]:
    """umap-learn's ``precomputed_knn`` as (indices int32 (n, k), distances float32 (n, k)), its first
    ``n_neighbors`` columns; ValueError naming the problem otherwise. A third element (umap-learn's search index)
    is not used: a warning says so when it is not None.

    Parameters
    ----------
    precomputed_knn : tuple
        ``(knn_indices, knn_dists)`` or ``(knn_indices, knn_dists, knn_search_index)``.
    n_samples : int
        X's rows.
    n_neighbors : int
        k.
    """
    if not isinstance(precomputed_knn, (tuple, list)) or len(precomputed_knn) not in (2, 3):
        raise ValueError(
            "precomputed_knn must be a tuple (knn_indices, knn_dists) or umap-learn's (knn_indices, knn_dists, "
            "knn_search_index), e.g. from umap.umap_.nearest_neighbors."
        )
    if len(precomputed_knn) == 3 and precomputed_knn[2] is not None:
        warnings.warn(
            "precomputed_knn's third element (umap-learn's search index) is not used: the graph needs only the "
            "indices and distances, and transform searches the training data exactly.",
            UserWarning,
            stacklevel=3,
        )
    indices, dists = (np.asarray(a) for a in precomputed_knn[:2])
    if indices.ndim != 2 or indices.shape != dists.shape or indices.shape[0] != n_samples:
        raise ValueError(
            f"precomputed_knn's indices {indices.shape} and distances {dists.shape} must both be (n_samples, k) "
            f"with n_samples = X's {n_samples} rows."
        )
    if indices.shape[1] < n_neighbors:
        raise ValueError(
            f"precomputed_knn has {indices.shape[1]} neighbours per point but n_neighbors={n_neighbors}: pass "
            f"n_neighbors <= {indices.shape[1]}, or compute more neighbours."
        )
    if indices.dtype.kind not in "iu" or (indices >= n_samples).any() or (indices < -1).any():
        raise ValueError(f"precomputed_knn's indices must be integers in [0, {n_samples}) (-1 for none).")
    dists = dists[:, :n_neighbors].astype(np.float32)
    if not np.isfinite(dists).all() or (dists < 0).any():
        raise ValueError("precomputed_knn's distances must be finite and >= 0.")
    if (np.diff(dists, axis=1) < 0).any():
        raise ValueError("precomputed_knn's distances must be sorted ascending in each row (self first).")
    return np.ascontiguousarray(indices[:, :n_neighbors], dtype=np.int32), np.ascontiguousarray(dists)


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
