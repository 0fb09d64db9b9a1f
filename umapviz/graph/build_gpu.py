"""The graph stage on an NVIDIA GPU: exact kNN and the fuzzy set on the device, pruning and the edge list on the
host (as on the CPU)."""

from __future__ import annotations

import time
from collections.abc import Callable

import scipy.sparse

from .._backend import cupy
from ._types import FuzzyGraph
from .edges import graph_from_fuzzy_set, refuse_overflowed_distances
from .fuzzy_gpu import fuzzy_simplicial_set_gpu
from .knn import check_metric, stop_if_cancelled
from .knn_gpu import exact_knn_gpu
from .params import GraphParams


def graph_on_gpu(X, params: GraphParams, precision: str = "tf32", timings: dict | None = None,
                 cancel: Callable[[], bool] | None = None) -> FuzzyGraph:
    """The graph stage with the kNN and the fuzzy set on the GPU (inputs already validated).

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray
        (n_samples, n_features) float32 data.
    params : GraphParams
        The build's parameters (``params.knn`` is recorded as given, usually ``"exact-gpu"``).
    precision : str
        The kNN's GEMM precision, ``"tf32"`` or ``"fp32"`` (see :mod:`umapviz.graph.knn_gpu`).
    timings : dict, optional
        Receives seconds per stage (knn, fuzzy, edges).
    cancel : callable, optional
        Asked before each tile of the kNN and after it (BuildCancelled when it returns True).
    """
    cp = cupy()
    t0 = time.perf_counter()
    idx, dist = exact_knn_gpu(X, params.n_neighbors, params.metric, precision=precision, return_device=True,
                              cancel=cancel)
    stop_if_cancelled(cancel)
    if not bool(cp.isfinite(dist).all()):  # before the fuzzy set's arithmetic on inf; the rows are named on the host
        refuse_overflowed_distances(dist.get())
    cp.cuda.Device().synchronize()
    t1 = time.perf_counter()
    indptr, indices, data = fuzzy_simplicial_set_gpu(idx, dist)
    n = X.shape[0]
    fuzzy = scipy.sparse.csr_matrix((data.get(), indices.get(), indptr.get()), shape=(n, n))
    t2 = time.perf_counter()
    graph = graph_from_fuzzy_set(fuzzy, idx.get(), dist.get(), params)
    if timings is not None:
        timings.update(knn=t1 - t0, fuzzy=t2 - t1, edges=time.perf_counter() - t2)
    return graph


def build_graph_gpu(
    X,
    n_neighbors: int = 15,
    metric: str = "euclidean",
    min_dist: float = 0.1,
    spread: float = 1.0,
    n_epochs: int | None = None,
    precision: str = "tf32",
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
        The kNN's GEMM precision, ``"tf32"`` or ``"fp32"``.
    timings : dict, optional
        Receives seconds per stage.
    """
    params = GraphParams.for_data(X.shape[0], n_neighbors=n_neighbors, metric=check_metric(metric), knn="exact-gpu",
                                  min_dist=min_dist, spread=spread, n_epochs=n_epochs)
    return graph_on_gpu(X, params, precision=precision, timings=timings)
