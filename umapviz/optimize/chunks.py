"""How many chunks an epoch is cut into: validation and the named rules."""

from __future__ import annotations

import math

import numpy as np

from .._validation import is_integer
from ..graph._types import FuzzyGraph

RULES = ("auto", "shipped", "degree")
EDGES_PER_CHUNK_SHIPPED = 100_000
DEGREE_PER_CHUNK = 32
# "auto": the points that stale chunked updates fling are hubs, and how many of a hub's edges share one chunk
# decides it, not the graph's edge count. The rule: at most AUTO_DEGREE_PER_CHUNK of the busiest vertex's edges
# per chunk, with a margin below the share at which hubs stray from their neighbours in any epoch (not only the
# last: a point flung early is on screen while the layout plays); never 1 chunk (buffered), where hubs fling
# worst. bench/CHUNK_STUDY.md has the study the margin comes from.
AUTO_DEGREE_PER_CHUNK = 8
AUTO_MIN_CHUNKS = 2


def shipped_threshold(n_vertices: int) -> int:
    """Max-degree threshold above which the shipped GPU rule switches to nnz-based chunking."""
    if n_vertices <= 100_000:
        return 128
    if n_vertices <= 1_000_000:
        return 256
    return 512


def shipped_chunks(n_vertices: int, nnz: int, max_degree: int) -> int:
    """The shipped GPU rule: ceil(nnz / 1e5) when a hub exceeds the size threshold, else a few (4)."""
    if max_degree > shipped_threshold(n_vertices):
        return math.ceil(nnz / EDGES_PER_CHUNK_SHIPPED)
    return 4


def degree_chunks(max_degree: int) -> int:
    """Degree-aware rule: at most about DEGREE_PER_CHUNK of the busiest vertex's edges land in one chunk."""
    return math.ceil(max_degree / DEGREE_PER_CHUNK)


def auto_chunks(max_degree: int) -> int:
    """The default rule: ceil(max_degree / AUTO_DEGREE_PER_CHUNK) (at most that many of the busiest vertex's edges
    per chunk), and never fewer than AUTO_MIN_CHUNKS."""
    return max(AUTO_MIN_CHUNKS, math.ceil(max_degree / AUTO_DEGREE_PER_CHUNK))


def chunks_for(rule: str, n_vertices: int, nnz: int, max_degree: int) -> int:
    """A rule's pick from a graph's size and busiest vertex, clipped to [1, nnz] (ValueError for an unknown rule)."""
    if rule == "auto":
        value = auto_chunks(max_degree)
    elif rule == "shipped":
        value = shipped_chunks(n_vertices, nnz, max_degree)
    elif rule == "degree":
        value = degree_chunks(max_degree)
    else:
        raise ValueError(f"n_chunks={rule!r} is not a known rule; use an int >= 1 or one of {RULES}.")
    return int(min(max(value, 1), max(nnz, 1)))


def check_n_chunks(n_chunks: int | str) -> int | str:
    """``n_chunks`` as an int >= 1 or a known rule name; the checks that need no graph (see resolve_n_chunks)."""
    if isinstance(n_chunks, str):
        if n_chunks not in RULES:
            raise ValueError(f"n_chunks={n_chunks!r} is not a known rule; use an int >= 1 or one of {RULES}.")
        return n_chunks
    if not is_integer(n_chunks):
        raise TypeError(f"n_chunks must be an int or one of {RULES}, got {type(n_chunks).__name__}.")
    if n_chunks < 1:
        raise ValueError(f"n_chunks={n_chunks} is out of range: it must be at least 1 (1 means 'buffered').")
    return int(n_chunks)


def resolve_n_chunks(n_chunks: int | str, graph: FuzzyGraph) -> int:
    """An int in [1, nnz] from an int or a rule name, with a clear error otherwise."""
    n_chunks = check_n_chunks(n_chunks)
    if isinstance(n_chunks, str):
        return chunks_for(n_chunks, graph.n_vertices, graph.nnz, graph.max_degree)
    if n_chunks > graph.nnz:
        raise ValueError(
            f"n_chunks={n_chunks} is out of range: the graph has only {graph.nnz} edges, "
            f"so at most n_chunks={graph.nnz} (one edge per chunk)."
        )
    return n_chunks


def chunk_bounds(n_active: int, n_chunks: int) -> np.ndarray:
    """Start offsets of the chunks of an active list (n_chunks + 1 entries), as np.array_split cuts it."""
    q, r = divmod(n_active, n_chunks)
    sizes = np.full(n_chunks, q, dtype=np.int64)
    sizes[:r] += 1
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
