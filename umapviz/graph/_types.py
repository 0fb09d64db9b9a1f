"""The FuzzyGraph record: everything the layout optimizer needs from the graph stage."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True, eq=False)
class FuzzyGraph:
    """UMAP's fuzzy simplicial set after pruning, as a symmetric COO edge list.

    Edges are stored in both directions, sorted by ``head`` then ``tail``.
    ``head`` is the vertex that moves with the attraction (and owns the negative
    samples); ``tail`` moves the other way. Treat it as immutable: the degrees and the fingerprint are
    computed once (they cost seconds at hundreds of millions of edges).
    """

    head: np.ndarray  # (nnz,) int32
    tail: np.ndarray  # (nnz,) int32
    weight: np.ndarray  # (nnz,) float32
    epochs_per_sample: np.ndarray  # (nnz,) float64, max(weight) / weight
    knn_indices: np.ndarray  # (n, k) int32, self first
    knn_dists: np.ndarray  # (n, k) float32
    a: float
    b: float
    n_epochs: int
    params: dict[str, Any] = field(default_factory=dict)  # n_neighbors, metric, knn, min_dist, spread, ...

    @property
    def n_vertices(self) -> int:
        return int(self.knn_indices.shape[0])

    @property
    def nnz(self) -> int:
        return int(self.head.shape[0])

    @functools.cached_property
    def degree(self) -> np.ndarray:
        """Number of edges whose head is each vertex (the graph is symmetric). Read-only."""
        degree = np.bincount(self.head, minlength=self.n_vertices)
        degree.flags.writeable = False
        return degree

    @functools.cached_property
    def max_degree(self) -> int:
        return int(self.degree.max()) if self.nnz else 0

    @functools.cached_property
    def fingerprint(self) -> str:
        """Short hex digest of the graph's exact content (edges, weights, curve, schedule)."""
        h = hashlib.blake2b(digest_size=8)
        for arr in (self.head, self.tail, self.weight, self.epochs_per_sample):
            h.update(np.ascontiguousarray(arr).tobytes())
        h.update(np.array([self.a, self.b, self.n_epochs, self.n_vertices], dtype=np.float64).tobytes())
        return h.hexdigest()

    @classmethod
    def from_sparse(cls, P: Any, **kwargs: Any) -> FuzzyGraph:
        """A graph of any symmetric fuzzy membership matrix (scanpy's ``adata.obsp["connectivities"]``, cuML's
        graph), pruned for its epochs as umap-learn prunes: see :func:`umapviz.graph.imported.graph_from_sparse`
        for the keywords (``n_epochs``, ``a`` and ``b`` or ``min_dist`` and ``spread``, ``knn``).

        Parameters
        ----------
        P : scipy.sparse matrix
            (n, n) symmetric memberships in [0, 1].
        **kwargs
            As :func:`~umapviz.graph.imported.graph_from_sparse` takes them.
        """
        from .imported import graph_from_sparse  # noqa: PLC0415 - it builds on this module

        return graph_from_sparse(P, **kwargs)

    @classmethod
    def from_umap(cls, model: Any, n_epochs: int | None = None) -> FuzzyGraph:
        """A fitted umap-learn model's graph: its ``graph_`` pruned for its epochs, its ``a``, ``b`` and kNN
        (:func:`umapviz.graph.imported.graph_from_umap`).

        Parameters
        ----------
        model : umap.UMAP
            A fitted umap-learn estimator.
        n_epochs : int, optional
            The epochs to prune for (None: the model's).
        """
        from .imported import graph_from_umap  # noqa: PLC0415 - it builds on this module

        return graph_from_umap(model, n_epochs=n_epochs)

    def __repr__(self) -> str:
        return (
            f"FuzzyGraph(n_vertices={self.n_vertices}, nnz={self.nnz}, max_degree={self.max_degree}, "
            f"a={self.a:.4f}, b={self.b:.4f}, n_epochs={self.n_epochs}, knn={self.params.get('knn')!r})"
        )
