"""How many chunks an epoch is cut into: validation and the named rules."""

from __future__ import annotations

import math

import numpy as np

from ..graph._types import FuzzyGraph

RULES = ("auto", "shipped", "degree")
EDGES_PER_CHUNK_SHIPPED = 100_000
DEGREE_PER_CHUNK = 32


def shipped_threshold(n_vertices: int) -> int:
    """Max-degree threshold above which the shipped GPU rule switches to nnz-based chunking."""
    if n_vertices <= 100_000:
        return 128
    if n_vertices <= 1_000_000:
        return 256
    return 512


def shipped_rule(graph: FuzzyGraph) -> int:
    """The shipped GPU rule: ceil(nnz / 1e5) when a hub exceeds the size threshold, else a few (4)."""
    if graph.max_degree > shipped_threshold(graph.n_vertices):
        return math.ceil(graph.nnz / EDGES_PER_CHUNK_SHIPPED)
    return 4


def degree_rule(graph: FuzzyGraph) -> int:
    """Degree-aware rule: at most about DEGREE_PER_CHUNK of the busiest vertex's edges land in one chunk."""
    return math.ceil(graph.max_degree / DEGREE_PER_CHUNK)


def resolve_n_chunks(n_chunks: int | str, graph: FuzzyGraph) -> int:
    """An int in [1, nnz] from an int or a rule name, with a clear error otherwise."""
    if isinstance(n_chunks, str):
        if n_chunks in ("auto", "shipped"):
            value = shipped_rule(graph)
        elif n_chunks == "degree":
            value = degree_rule(graph)
        else:
            raise ValueError(f"n_chunks={n_chunks!r} is not a known rule; use an int >= 1 or one of {RULES}.")
        return int(min(max(value, 1), max(graph.nnz, 1)))
    if isinstance(n_chunks, bool) or not isinstance(n_chunks, (int, np.integer)):
        raise TypeError(f"n_chunks must be an int or one of {RULES}, got {type(n_chunks).__name__}.")
    if n_chunks < 1:
        raise ValueError(f"n_chunks={n_chunks} is out of range: it must be at least 1 (1 means 'buffered').")
    if n_chunks > graph.nnz:
        raise ValueError(
            f"n_chunks={n_chunks} is out of range: the graph has only {graph.nnz} edges, "
            f"so at most n_chunks={graph.nnz} (one edge per chunk)."
        )
    return int(n_chunks)


def chunk_bounds(n_active: int, n_chunks: int) -> np.ndarray:
    """Start offsets of the chunks of an active list (n_chunks + 1 entries), as np.array_split cuts it."""
    q, r = divmod(n_active, n_chunks)
    sizes = np.full(n_chunks, q, dtype=np.int64)
    sizes[:r] += 1
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
