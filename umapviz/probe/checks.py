"""Checks of the probes' inputs: a graph, an embedding (NumPy or CuPy), a mask (an index, a number and a range are
checked by ``umapviz._validation``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._backend import to_host, xp_of
from ..graph._types import FuzzyGraph
from ..graph.matrix import as_fuzzy_graph


def _check_graph(graph: Any) -> FuzzyGraph:
    graph = as_fuzzy_graph(graph)  # a fitted UMAP's graph_ (the matrix) still works, with a FutureWarning
    if not isinstance(graph, FuzzyGraph):
        raise TypeError(f"graph must be a FuzzyGraph (from umapviz.build_graph), got {type(graph).__name__}.")
    return graph


def _check_points(embedding: Any, name: str = "embedding") -> Any:
    """An (n, >=2) float array, NumPy or CuPy, left on its device."""
    xp = xp_of(embedding)
    Y = embedding if xp is not np else np.asarray(embedding)
    if Y.ndim != 2 or Y.shape[1] < 2:
        raise ValueError(
            f"{name} must have shape (n_points, 2) (or more columns; the first two are used), got {tuple(Y.shape)}."
        )
    if Y.dtype.kind not in "fiu":
        raise TypeError(f"{name} must hold numbers, got dtype {Y.dtype}.")
    return Y


def _check_mask(name: str, mask: Any, n: int) -> np.ndarray:
    host = to_host(mask)
    if host.dtype != np.bool_:
        raise TypeError(f"{name} must be a boolean mask, got dtype {host.dtype}.")
    if host.shape != (n,):
        raise ValueError(f"{name} has shape {host.shape}, but the layout has {n:,} points: pass one bool per point.")
    return host
