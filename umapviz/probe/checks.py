"""Checks of the probes' inputs: a graph, an embedding (NumPy or CuPy), a point's index, numbers, a range, a
mask."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .._backend import to_host, xp_of
from ..graph._types import FuzzyGraph


def _check_graph(graph: Any) -> FuzzyGraph:
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


def _check_index(index: Any, n: int) -> int:
    if isinstance(index, bool) or not isinstance(index, numbers.Integral):
        raise TypeError(f"index must be an integer (a point's row), got {index!r} ({type(index).__name__}).")
    if not -n <= index < n:
        raise IndexError(f"index={int(index)} is out of range: the layout has {n:,} points (0 to {n - 1:,}).")
    return int(index) % n


def _check_number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(float(value)):
        raise ValueError(f"{name} must be a finite number, got {value!r}.")
    return float(value)


def _check_range(name: str, value: Any) -> tuple[float, float]:
    try:
        lo, hi = value
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (low, high) of finite numbers, got {value!r}.") from None
    lo, hi = _check_number(f"{name}[0]", lo), _check_number(f"{name}[1]", hi)
    return (lo, hi) if lo <= hi else (hi, lo)


def _check_mask(name: str, mask: Any, n: int) -> np.ndarray:
    host = to_host(mask)
    if host.dtype != np.bool_:
        raise TypeError(f"{name} must be a boolean mask, got dtype {host.dtype}.")
    if host.shape != (n,):
        raise ValueError(f"{name} has shape {host.shape}, but the layout has {n:,} points: pass one bool per point.")
    return host
