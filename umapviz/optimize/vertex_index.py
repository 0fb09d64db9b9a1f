"""The vertex strategy's index of a graph: each vertex's edges as head and as tail, and its group width.

Both engines build it here (the GPU engine's kernels read the same arrays), so they cut the same groups.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

VERTEX_GROUP = 32  # active edges of a vertex whose moves are computed from the same row (one GPU warp)
# A vertex with more edges than VERTEX_WIDE_ITEMS (as head and as tail together) takes its active edges
# VERTEX_WIDE_GROUP at a time (four GPU warps): its chain of groups, one after the other, would otherwise bound
# the GPU epoch. 128 is the chunked "auto" rule's bound on one vertex's edges per chunk
# (bench/CHUNK_STUDY.md: the least-connected hub that stale updates flung had 282).
VERTEX_WIDE_ITEMS = 4096
VERTEX_WIDE_GROUP = 128


def vertex_group_sizes(head_ptr: np.ndarray, tail_ptr: np.ndarray) -> np.ndarray:
    """Each vertex's group width: VERTEX_GROUP, or VERTEX_WIDE_GROUP above VERTEX_WIDE_ITEMS edges (head and tail)."""
    items = np.diff(head_ptr) + np.diff(tail_ptr)
    return np.where(items > VERTEX_WIDE_ITEMS, VERTEX_WIDE_GROUP, VERTEX_GROUP).astype(np.int32)


def mirrored_edges(
    head_ptr: np.ndarray,
    tail_ptr: np.ndarray,
    tail: np.ndarray,
    tail_head: np.ndarray,
    eps: np.ndarray,
    by_tail: np.ndarray,
) -> bool:
    """Whether each vertex's edges as tail (tail order) are the reverses of its edges as head (graph order), place
    for place, with the same epochs_per_sample. The schedule of an edge depends on its epochs_per_sample alone,
    so an edge and its reverse are then active in the same epochs, and a tail item's activity can be read at its
    reverse's place, next to the head items', instead of through by_tail. build_graph's graphs are mirrored
    (the fuzzy union is symmetric to the bit)."""
    return bool(
        np.array_equal(head_ptr, tail_ptr) and np.array_equal(tail_head, tail) and np.array_equal(eps[by_tail], eps)
    )


class VertexIndex(NamedTuple):
    """The vertex strategy's view of a graph: each vertex's edges as head (graph order) and as tail (tail order)."""

    head_ptr: np.ndarray  # int64 (n + 1,): vertex i's head items are edges head_ptr[i] .. head_ptr[i + 1] - 1
    tail_ptr: np.ndarray  # int64 (n + 1,): its tail items are places tail_ptr[i] .. tail_ptr[i + 1] - 1 of by_tail
    by_tail: np.ndarray  # int32 (nnz,): the edges in tail order (stable)
    tail_head: np.ndarray  # int32 (nnz,): the head of each edge, in tail order
    mirrored: bool  # see mirrored_edges


def vertex_index(head: np.ndarray, tail: np.ndarray, eps: np.ndarray, n: int) -> VertexIndex:
    """Index a graph (edges sorted by head) for the vertex strategy; both backends build it here."""
    head_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(head, minlength=n), out=head_ptr[1:])
    tail_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(tail, minlength=n), out=tail_ptr[1:])
    by_tail = np.argsort(tail, kind="stable").astype(np.int32)
    tail_head = np.ascontiguousarray(head[by_tail], dtype=np.int32)
    return VertexIndex(
        head_ptr, tail_ptr, by_tail, tail_head, mirrored_edges(head_ptr, tail_ptr, tail, tail_head, eps, by_tail)
    )
