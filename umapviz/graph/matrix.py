"""A FuzzyGraph as the SciPy matrix umap-learn's ``graph_`` is, for :class:`umapviz.UMAP`'s ``graph_``.

umap-learn's users (and its ``umap.utils``, ``umap.plot``) read ``model.graph_`` as a ``scipy.sparse.csr_matrix``:
``graph_.sum(axis=1)``, ``graph_ - other.graph_``, ``connected_components(graph_)``. The kit's own record of the
graph is the :class:`FuzzyGraph` (``model.fuzzy_graph_``). Code written when ``graph_`` was the FuzzyGraph keeps
working for now: the matrix reads FuzzyGraph attributes through (``graph_.fingerprint``, ``graph_.params``) with a
FutureWarning, and the functions that take a FuzzyGraph take the matrix the same way (:func:`as_fuzzy_graph`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse

from ._types import FuzzyGraph

_MOVED = (
    "umapviz.UMAP's graph_ is now the SciPy CSR matrix umap-learn's is; the FuzzyGraph is model.fuzzy_graph_. "
    "Reading the FuzzyGraph through graph_ is deprecated and will stop working: use model.fuzzy_graph_{what}."
)


class GraphMatrix(scipy.sparse.csr_matrix):
    """The symmetric fuzzy membership matrix of a FuzzyGraph: ``(n, n)`` float32 CSR, the memberships the layout
    samples (umap-learn's ``graph_`` less those below ``max / n_epochs``, which it prunes before its layout too).

    ``fuzzy_graph`` is the FuzzyGraph it was made of (None on the results of arithmetic, which are plain matrices
    of this class); its attributes read through with a FutureWarning (see the module).
    """

    fuzzy_graph: FuzzyGraph | None = None

    def __getattr__(self, name: str) -> Any:
        fuzzy = self.__dict__.get("fuzzy_graph")
        if fuzzy is None or name.startswith("_") or not hasattr(fuzzy, name):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        warnings.warn(_MOVED.format(what=f".{name}"), FutureWarning, stacklevel=2)
        return getattr(fuzzy, name)


def graph_matrix(graph: FuzzyGraph) -> GraphMatrix:
    """``graph``'s edges as a :class:`GraphMatrix` (row = head, column = tail, value = weight; rows sorted).

    Parameters
    ----------
    graph : FuzzyGraph
        The graph; its edges are sorted by head then tail, which is CSR's order.
    """
    n = graph.n_vertices
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(graph.head, minlength=n), out=indptr[1:])
    index_type = np.int32 if graph.nnz < 2**31 else np.int64
    matrix = GraphMatrix(
        (graph.weight.astype(np.float32), graph.tail.astype(index_type), indptr.astype(index_type)), shape=(n, n)
    )
    matrix.has_sorted_indices = True
    matrix.fuzzy_graph = graph
    return matrix


def as_fuzzy_graph(graph: Any) -> Any:
    """The FuzzyGraph behind a :class:`GraphMatrix` (``model.graph_`` passed where a FuzzyGraph is taken), with a
    FutureWarning naming ``model.fuzzy_graph_``; anything else as it is (the caller checks it).

    Parameters
    ----------
    graph : FuzzyGraph, GraphMatrix or anything
        What a caller was given as its graph.
    """
    if isinstance(graph, GraphMatrix) and graph.__dict__.get("fuzzy_graph") is not None:
        warnings.warn(_MOVED.format(what=""), FutureWarning, stacklevel=3)
        return graph.__dict__["fuzzy_graph"]
    return graph
