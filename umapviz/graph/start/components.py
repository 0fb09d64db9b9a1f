"""Connected components of a graph's symmetric edge list, on either device, labelled canonically.

Each twin finds every vertex's lowest vertex of its component (:mod:`.components_cpu`: a union-find in Numba;
:mod:`.components_gpu`: hooking and pointer jumping in CUDA). That vertex is one fixed answer, whatever order the
edges are taken in, so both devices agree; numbering the roots in ascending order labels the components in the
order of their lowest vertex (SciPy's ``connected_components`` renumbered that way). On a symmetric graph the
connected components are the strong ones SciPy finds, without its conversion of the weights to float64 and its
single-threaded depth-first search.
"""

from __future__ import annotations

import numpy as np

from .components_cpu import lowest_vertex


def rank_roots(root, xp=np) -> tuple[int, object]:
    """``(n_comp, labels)`` from each vertex's lowest vertex: the roots numbered in ascending order.

    Parameters
    ----------
    root : ndarray
        int32 lowest vertex of each vertex's component, on ``xp``.
    xp : module
        NumPy or CuPy; the labels (int32) stay on its device.
    """
    if root.size == 0:
        return 0, xp.zeros(0, dtype=xp.int32)
    is_root = root == xp.arange(root.size, dtype=root.dtype)
    rank = xp.cumsum(is_root, dtype=xp.int32) - 1
    return int(rank[-1]) + 1, rank[root]


def connected_components(head, tail, n: int, device: str = "cpu") -> tuple[int, object]:
    """Connected components of a symmetric graph's edge list, labelled in the order of their lowest vertex.

    Parameters
    ----------
    head, tail : ndarray
        int32 endpoints of the edges, each undirected edge in both directions (a FuzzyGraph's edge list), as NumPy
        arrays for the CPU or NumPy/CuPy arrays for the GPU.
    n : int
        Vertices.
    device : str
        ``"cpu"`` or ``"gpu"``: the same labels.

    Returns
    -------
    (int, ndarray)
        The number of components and each vertex's int32 label (0 for vertex 0's component, then in order of each
        component's lowest vertex), on ``device``.
    """
    if device == "gpu":
        from ..._backend import cupy  # noqa: PLC0415 - CuPy loads on the GPU path only
        from .components_gpu import lowest_vertex_gpu  # noqa: PLC0415 - the GPU twin, with CuPy

        cp = cupy()
        return rank_roots(
            lowest_vertex_gpu(cp.asarray(head, dtype=cp.int32), cp.asarray(tail, dtype=cp.int32), int(n)), cp
        )
    root = lowest_vertex(np.ascontiguousarray(head, dtype=np.int32), np.ascontiguousarray(tail, dtype=np.int32), int(n))
    return rank_roots(root)


__all__ = ["connected_components", "rank_roots"]
