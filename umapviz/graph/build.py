"""build_graph: data -> kNN -> fuzzy simplicial set -> pruned, symmetric edge list (a FuzzyGraph), on either
device, with an on-disk cache."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable

from .._backend import resolve_device
from .._validation import (
    RandomStateLike,
    check_data,
    check_n_epochs,
    check_n_neighbors,
    check_random_state,
)
from ._types import FuzzyGraph
from .cache import cache_key, cache_path, data_fingerprint, load_graph, resolve_cache_dir, save_graph
from .edges import graph_from_fuzzy_set, refuse_overflowed_distances
from .fuzzy import find_ab_params
from .fuzzy_cpu import fuzzy_simplicial_set
from .knn import check_metric, resolve_knn_method, stop_if_cancelled
from .knn_cpu import nearest_neighbors
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
        ``"exact"`` (tiled brute force), ``"approx"`` (pynndescent), or ``"auto"``: exact while
        ``n_samples**2 * (n_features + 150) <= 1.1e12`` (about half a minute on two cores), else approx.
    random_state : int, None, numpy.random.RandomState or numpy.random.Generator
        Seeds the approximate kNN (exact kNN does not depend on it); from a generator one seed is drawn.
    cache : bool, str or os.PathLike
        True (default directory, see :mod:`umapviz.graph.cache`), False, or a directory path. An unseeded
        approximate kNN (random_state=None) is never cached: each call is a fresh draw.
    progress : bool
        Show a progress bar for long exact kNN runs.
    device : str
        ``"cpu"``, ``"gpu"`` or ``"auto"``. On the GPU the kNN is always exact (tiled GEMM + top-k selection;
        ``knn`` is then ignored and recorded as ``"exact-gpu"``) and so is the fuzzy set.
    cancel : callable, optional
        A no-argument callable (e.g. ``event.is_set`` of a ``threading.Event`` another thread sets), asked
        before each tile of the exact kNN (CPU or GPU) and after the kNN; when it returns True the build stops
        with :class:`BuildCancelled`. An approximate search runs to its end before it is asked.
    """
    n_neighbors = check_n_neighbors(n_neighbors)
    metric = check_metric(metric)
    n_epochs = check_n_epochs(n_epochs)
    random_state = check_random_state(random_state)
    a, b = find_ab_params(spread, min_dist)  # also validates min_dist and spread
    X = check_data(X, n_neighbors=n_neighbors)
    method = "exact-gpu" if resolve_device(device) == "gpu" else resolve_knn_method(knn, *X.shape)

    build = GraphParams.for_data(X.shape[0], n_neighbors=n_neighbors, metric=metric, knn=method, min_dist=min_dist,
                                 spread=spread, random_state=random_state, n_epochs=n_epochs, curve=(a, b))
    params = build.record()
    directory = resolve_cache_dir(cache)
    if method == "approx" and random_state is None:
        directory = None  # a fresh draw each call, as asked: a cached graph would repeat the first one
    path = key = None
    if directory is not None:
        # Exact kNN ignores the seed, so it is left out of the key: any seed reuses the same graph.
        key_params = dict(params, n_epochs=build.n_epochs, random_state=random_state if method == "approx" else None)
        key = cache_key(data_fingerprint(X), key_params)
        path = cache_path(directory, key)
        graph = load_graph(path, key)
        if graph is not None:
            graph.params.update(params)  # the seed asked for now (it did not change the result)
            return graph

    if method == "exact-gpu":
        from .build_gpu import graph_on_gpu  # noqa: PLC0415 - the GPU path, loaded on its first use

        graph = graph_on_gpu(X, build, cancel=cancel)
    else:
        knn_indices, knn_dists = nearest_neighbors(
            X, n_neighbors, metric, method=method, random_state=random_state, progress=progress, cancel=cancel
        )
        stop_if_cancelled(cancel)  # after an approximate search, which cannot be asked on the way
        refuse_overflowed_distances(knn_dists)  # before the fuzzy set's arithmetic on inf
        fuzzy = fuzzy_simplicial_set(knn_indices, knn_dists)
        graph = graph_from_fuzzy_set(fuzzy, knn_indices, knn_dists, build)

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
