"""The start's adjacency where it is solved: a FuzzyGraph's CSR on the GPU, and its rows grouped by component.

On the host the start builds a SciPy CSR (``init._adjacency``) and copies the components' rows into one matrix
(``init._grouped``). On the GPU the same arrays are built on the device from the edge list, with no host CSR and no
host copy: :func:`device_adjacency` uploads the edge list and finds each row's first edge, and
:func:`grouped_rows` gathers the components' rows in order, on NumPy or CuPy alike, giving the arrays SciPy's
fancy indexing gives (each row's entries in their order, columns renumbered), so the eigen-solve sees the same
numbers in the same order on either path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

_BLOCK = 1 << 26  # entries gathered at once on the GPU: the int64 temporaries stay at a few hundred MB


@dataclass
class CsrArrays:
    """A square CSR matrix as three arrays on one device (NumPy or CuPy), with SciPy's attribute names: what the
    eigen-solve's primitives read of an adjacency.

    Parameters
    ----------
    indptr : ndarray
        int64 first entry of each row, then the number of entries.
    indices : ndarray
        int32 column of each entry.
    data : ndarray
        float32 value of each entry.
    """

    indptr: Any
    indices: Any
    data: Any

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, rows)."""
        n = int(self.indptr.size) - 1
        return n, n

    @property
    def nnz(self) -> int:
        """Entries."""
        return int(self.indices.size)

    def to_host(self):
        """The SciPy CSR matrix of the same arrays, on the host."""
        import scipy.sparse  # noqa: PLC0415 - only where a device matrix goes back to the host

        arrays = [a.get() if hasattr(a, "get") else a for a in (self.data, self.indices, self.indptr)]
        return scipy.sparse.csr_matrix(tuple(arrays), shape=self.shape)


def device_adjacency(graph, cp) -> tuple[CsrArrays, Any]:
    """The graph's weighted adjacency on the GPU, from its edge list sorted by head then tail, and the heads.

    Parameters
    ----------
    graph : FuzzyGraph
        Its edge list sorted by head (a FuzzyGraph's always is; ``init._adjacency`` checks).
    cp : module
        CuPy.

    Returns
    -------
    (CsrArrays, cupy.ndarray)
        The CSR arrays (the graph's own float32 weights and int32 tails) and the int32 heads.
    """
    n = graph.n_vertices
    head = cp.asarray(graph.head, dtype=cp.int32)
    indptr = cp.searchsorted(head, cp.arange(n + 1, dtype=cp.int32)).astype(cp.int64)
    return CsrArrays(indptr, cp.asarray(graph.tail, dtype=cp.int32), cp.asarray(graph.weight, dtype=cp.float32)), head


def grouped_rows(adj: CsrArrays, rows, position, xp, block: int = _BLOCK) -> CsrArrays:
    """The rows ``rows`` of ``adj`` in that order, each column ``c`` renumbered ``position[c]``: SciPy's
    ``adj[rows]`` with its indices mapped, where every column of those rows is among them.

    Parameters
    ----------
    adj : CsrArrays
        On ``xp``.
    rows : ndarray
        The rows to keep, in their new order (int, on ``xp``).
    position : ndarray
        int32 new number of each kept row (on ``xp``; others are never read).
    xp : module
        NumPy or CuPy.
    block : int
        Entries gathered at once (no effect on the result).
    """
    rows = rows.astype(xp.int64)
    starts = adj.indptr[rows]
    indptr = xp.zeros(rows.size + 1, dtype=xp.int64)
    xp.cumsum(adj.indptr[rows + 1] - starts, out=indptr[1:])
    nnz = int(indptr[-1])
    indices = xp.empty(nnz, dtype=xp.int32)
    data = xp.empty(nnz, dtype=adj.data.dtype)
    for lo in range(0, nnz, block):
        entry = xp.arange(lo, min(nnz, lo + block), dtype=xp.int64)
        row = xp.searchsorted(indptr, entry, side="right") - 1
        source = starts[row] + (entry - indptr[row])
        del entry, row
        indices[lo : lo + source.size] = position[adj.indices[source]]
        data[lo : lo + source.size] = adj.data[source]
    return CsrArrays(indptr, indices, data)


def component_members(labels, n_comp: int, xp) -> tuple[Any, np.ndarray]:
    """The vertices of each component, ascending, one component after another (on ``xp``), and the host bounds:
    ``members[bounds[c] : bounds[c + 1]]`` are component ``c``'s (``init._component_members``' order).

    Parameters
    ----------
    labels : ndarray
        int32 component of each vertex, on ``xp``.
    n_comp : int
        Components.
    xp : module
        NumPy or CuPy.
    """
    n = int(labels.size)
    sizes = xp.bincount(labels, minlength=n_comp)
    members = xp.argsort(labels.astype(xp.int64) * n + xp.arange(n, dtype=xp.int64))  # distinct keys: one order
    sizes = sizes.get() if hasattr(sizes, "get") else sizes
    return members.astype(xp.int32), np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def components_in_order(members, bounds: np.ndarray, comps, xp):
    """The vertices of the components ``comps``, one component after another in that order (each ascending), as
    ``concatenate([members[bounds[c] : bounds[c + 1]] for c in comps])`` gives them, by one sort on ``xp`` however
    many components there are.

    Parameters
    ----------
    members : ndarray
        Every component's vertices, one component after another (on ``xp``; :func:`component_members`).
    bounds : ndarray
        Host bounds of the components in ``members``.
    comps : sequence of int
        The components to keep, in their order.
    xp : module
        NumPy or CuPy.
    """
    n, n_comp = int(members.size), int(bounds.size) - 1
    rank = np.full(n_comp, n_comp, dtype=np.int64)  # components not kept sort last
    rank[np.asarray(comps, dtype=np.int64)] = np.arange(len(comps))
    rank_of = xp.asarray(np.repeat(rank, np.diff(bounds)))  # each member's component's rank
    order = xp.argsort(rank_of * n + xp.arange(n, dtype=xp.int64))  # distinct keys: one order
    kept = int(np.diff(bounds)[np.asarray(comps, dtype=np.int64)].sum()) if len(comps) else 0
    return members[order[:kept]]
