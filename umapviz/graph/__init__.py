"""The graph stage: data -> kNN -> fuzzy simplicial set -> pruned, symmetric edge list (a FuzzyGraph)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable

import numpy as np

from .._backend import resolve_device
from .._validation import (
    RandomStateLike,
    check_data,
    check_n_epochs,
    check_n_neighbors,
    check_random_state,
    describe_rows,
)
from ._types import FuzzyGraph
from .cache import cache_key, cache_path, data_fingerprint, load_graph, resolve_cache_dir, save_graph
from .fuzzy import find_ab_params, fuzzy_simplicial_set
from .init import random_init, spectral_init
from .knn import BuildCancelled, check_metric, nearest_neighbors, resolve_knn_method, stop_if_cancelled

__all__ = [
    "BuildCancelled",
    "FuzzyGraph",
    "build_graph",
    "default_n_epochs",
    "find_ab_params",
    "fuzzy_simplicial_set",
    "random_init",
    "spectral_init",
]

# UMAP's default number of epochs: more for small data, where each epoch is cheap.
_SMALL_DATA = 10_000


def default_n_epochs(n_vertices: int) -> int:
    """500 up to 10,000 points, 200 above (UMAP's rule)."""
    return 500 if n_vertices <= _SMALL_DATA else 200


def _graph_from_fuzzy_set(fuzzy, knn_indices, knn_dists, a, b, n_epochs, params) -> FuzzyGraph:
    """Prune weak edges and lay the rest out as a COO edge list sorted by head, then tail."""
    weights = fuzzy.data
    # An edge sampled less than once in n_epochs would never move anything: drop it.
    keep = weights >= weights.max() / float(n_epochs) if weights.size else np.ones(0, dtype=bool)
    head = np.repeat(np.arange(fuzzy.shape[0], dtype=np.int32), np.diff(fuzzy.indptr))[keep]
    tail = fuzzy.indices[keep].astype(np.int32)
    weight = weights[keep].astype(np.float32)
    epochs_per_sample = weight.max().astype(np.float64) / weight.astype(np.float64)
    return FuzzyGraph(
        head=head,
        tail=tail,
        weight=weight,
        epochs_per_sample=epochs_per_sample,
        knn_indices=np.ascontiguousarray(knn_indices, dtype=np.int32),
        knn_dists=np.ascontiguousarray(knn_dists, dtype=np.float32),
        a=float(a),
        b=float(b),
        n_epochs=int(n_epochs),
        params=params,
    )


def _refuse_overflowed_distances(knn_dists: np.ndarray) -> None:
    """ValueError when a kNN distance overflowed float32 (data near float32's limit): such a row weighs nothing,
    and when all do the graph has no edge (it failed with "zero-size array to reduction operation maximum")."""
    bad = np.flatnonzero(~np.isfinite(knn_dists).all(axis=1))
    if bad.size:
        raise ValueError(
            f"X's values are so large that distances from {bad.size} row(s) (e.g. rows {describe_rows(bad)}) to "
            f"their neighbours overflow float32 (beyond {float(np.finfo(np.float32).max):.3g}). Scale X down first, "
            "e.g. X / np.abs(X).max(): the graph does not depend on the data's scale."
        )


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
    X : array-like (n_samples, n_features); anything ``np.asarray`` takes, NaN/inf not allowed.
    n_neighbors : neighbours per point, counting the point itself.
    metric : "euclidean" or "cosine" (1 - cosine similarity).
    min_dist, spread : shape of the low-dimensional curve; give ``a`` and ``b``.
    n_epochs : the optimizer's epoch count, which sets the pruning threshold ``max(w) / n_epochs``;
        None means 500 up to 10,000 points, else 200.
    knn : "exact" (tiled brute force), "approx" (pynndescent), or "auto": exact while
        ``n_samples**2 * (n_features + 150) <= 1.1e12`` (up to ~30 s on 2 cores: 50k x 256 is exact,
        100k x 50 approximate), else approx.
    random_state : seeds the approximate kNN (exact kNN does not depend on it): an int, None, or a NumPy
        RandomState / Generator, from which one seed is drawn.
    cache : True (default directory, see :mod:`umapviz.graph.cache`), False, or a directory path. An unseeded
        approximate kNN (random_state=None) is never cached: each call is a fresh draw.
    progress : show a progress bar for long exact kNN runs.
    device : "cpu", "gpu" or "auto". On the GPU the kNN is always exact (tiled GEMM + top-k selection,
        ``knn`` is then ignored and recorded as "exact-gpu") and so is the fuzzy set.
    cancel : a no-argument callable (e.g. ``event.is_set`` of a ``threading.Event`` another thread sets),
        asked before each tile of the exact kNN (CPU or GPU) and after the kNN; when it returns True the build
        stops with :class:`BuildCancelled`. An approximate search runs to its end before it is asked.
    """
    n_neighbors = check_n_neighbors(n_neighbors)
    metric = check_metric(metric)
    n_epochs = check_n_epochs(n_epochs)
    random_state = check_random_state(random_state)
    a, b = find_ab_params(spread, min_dist)  # also validates min_dist and spread
    X = check_data(X, n_neighbors=n_neighbors)
    method = "exact-gpu" if resolve_device(device) == "gpu" else resolve_knn_method(knn, *X.shape)
    if n_epochs is None:
        n_epochs = default_n_epochs(X.shape[0])

    params = {
        "n_neighbors": n_neighbors,
        "metric": metric,
        "knn": method,
        "min_dist": float(min_dist),
        "spread": float(spread),
        "random_state": random_state,
    }
    directory = resolve_cache_dir(cache)
    if method == "approx" and random_state is None:
        directory = None  # a fresh draw each call, as asked: a cached graph would repeat the first one
    path = key = None
    if directory is not None:
        # Exact kNN ignores the seed, so it is left out of the key: any seed reuses the same graph.
        key_params = dict(params, n_epochs=n_epochs, random_state=random_state if method == "approx" else None)
        key = cache_key(data_fingerprint(X), key_params)
        path = cache_path(directory, key)
        graph = load_graph(path, key)
        if graph is not None:
            graph.params.update(params)  # the seed asked for now (it did not change the result)
            return graph

    if method == "exact-gpu":
        from .knn_gpu import graph_on_gpu  # noqa: PLC0415 - CuPy only on demand

        graph = graph_on_gpu(X, n_neighbors, metric, a, b, n_epochs, params, cancel=cancel)
    else:
        knn_indices, knn_dists = nearest_neighbors(
            X, n_neighbors, metric, method=method, random_state=random_state, progress=progress, cancel=cancel
        )
        stop_if_cancelled(cancel)  # after an approximate search, which cannot be asked on the way
        _refuse_overflowed_distances(knn_dists)  # before the fuzzy set's arithmetic on inf
        fuzzy = fuzzy_simplicial_set(knn_indices, knn_dists)
        graph = _graph_from_fuzzy_set(fuzzy, knn_indices, knn_dists, a, b, n_epochs, params)

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
