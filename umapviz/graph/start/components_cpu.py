"""Each vertex's lowest vertex of its connected component, on the CPU (Numba): twin of :mod:`.components_gpu`.

A union-find over the edges (each pair once, tail below head), every tree rooted at its lowest vertex (a union
hangs the higher root under the lower), so after the last union each vertex's root is the lowest vertex of its
component, whatever order the edges came in: the one answer the GPU's hooking reaches too.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(inline="always")
def _root(parent, x):
    """The root of ``x``, halving the path on the way (each vertex visited points two steps up)."""
    while parent[x] != x:
        up = parent[parent[x]]
        parent[x] = up
        x = up
    return x


@numba.njit(cache=True)
def lowest_vertex(head, tail, n):
    """Each vertex's lowest vertex of its component, from a symmetric edge list.

    Parameters
    ----------
    head, tail : ndarray
        int32 endpoints of the edges; each undirected edge appears in both directions (only the one whose tail is
        below its head is read).
    n : int
        Vertices.

    Returns
    -------
    ndarray
        int32 lowest vertex of each vertex's component.
    """
    parent = np.arange(n, dtype=np.int32)
    for e in range(head.size):
        u, v = head[e], tail[e]
        if v >= u:
            continue
        ru, rv = _root(parent, u), _root(parent, v)
        if ru < rv:
            parent[rv] = ru
        elif rv < ru:
            parent[ru] = rv
    for x in range(n):  # parent[x] <= x, already final for every vertex below x
        parent[x] = parent[parent[x]]
    return parent
