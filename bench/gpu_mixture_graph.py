"""The fuzzy graph of the GPU benches' mixture (bench/gpu_mixture.py), affordable at millions of points.

Exact kNN inside each cluster (the clusters lie far apart, so that is exact kNN of all points; checked on 256
sampled rows against brute force), then the fuzzy graph of that kNN. Shared by bench/chunk_study.py (dataset
"mixture_gpu") and bench/explorer_fps.py (``--data mixture_gpu``); bench/ is on sys.path when they run.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from clusterwise import graph_from_knn, knn_agreement, knn_within_groups
from gpu_mixture import mixture_gpu

from umapviz._backend import to_host
from umapviz.datasets.generators import _zipf_sizes


@dataclass
class MixtureGraph:
    """A mixture's graph, its cluster labels (host int32) and what building it cost."""

    graph: Any  # FuzzyGraph
    labels: np.ndarray
    data_seconds: float  # drawing the mixture
    knn_seconds: float  # exact kNN within clusters
    graph_seconds: float  # fuzzy set, pruning and the host edge list
    knn_check: float  # share of sampled rows whose kNN equals brute force over all points (1.0: the premise holds)

    @property
    def seconds(self) -> float:
        """The graph's build time: kNN and fuzzy graph (not the data, not the check)."""
        return self.knn_seconds + self.graph_seconds


def clusters_that_fit(n: int, n_neighbors: int, most: int) -> int:
    """The most clusters (at most ``most``) whose smallest Zipf-sized cluster still holds 2 * n_neighbors points:
    exact kNN within a cluster needs at least n_neighbors of them."""
    for n_clusters in range(most, 1, -1):
        if _zipf_sizes(n, n_clusters).min() >= 2 * n_neighbors:
            return n_clusters
    return 1


def mixture_graph(n: int, seed: int, device: str, n_neighbors: int, n_clusters: int = 30) -> MixtureGraph:
    """The mixture of ``n`` points, made on ``device`` ("gpu": CuPy, else NumPy), and its graph of exact kNN
    within each cluster. The GPU's memory is handed back before returning (only the host graph remains)."""
    xp = np
    if device == "gpu":
        from umapviz._backend import cupy  # noqa: PLC0415 - a GPU machine's module

        xp = cupy()
    start = time.perf_counter()
    X, labels = mixture_gpu(n, n_clusters=n_clusters, seed=seed, xp=xp)
    data_seconds = _synced(xp, start)
    start = time.perf_counter()
    idx, dist = knn_within_groups(X, labels, n_neighbors)
    knn_seconds = _synced(xp, start)
    check = knn_agreement(X, idx)
    host_labels = np.asarray(to_host(labels), dtype=np.int32)
    del X, labels  # the fuzzy set and the layout want the memory
    start = time.perf_counter()
    graph = graph_from_knn(idx, dist, knn="exact-within-clusters")
    graph_seconds = time.perf_counter() - start
    del idx, dist
    free_gpu_memory()
    return MixtureGraph(graph, host_labels, data_seconds, knn_seconds, graph_seconds, check)


def _synced(xp: Any, start: float) -> float:
    """Seconds since `start`, after the GPU's queued work (if any) has finished."""
    if xp is not np:
        xp.cuda.Device().synchronize()
    return time.perf_counter() - start


def free_gpu_memory() -> None:
    """Hand CuPy's cached blocks back, so the next graph's kNN or layout has the whole GPU."""
    if "cupy" in sys.modules:
        sys.modules["cupy"].get_default_memory_pool().free_all_blocks()
