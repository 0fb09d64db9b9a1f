"""The FuzzyGraph record: everything the layout optimizer needs from the graph stage."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

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

    # Constructors from other tools' graphs (scanpy's connectivities, cuML's graph, a fitted umap-learn model):
    # graph/imported.py builds them on edges.py, which builds on this module, so umapviz.graph attaches them
    # (this module stays a leaf: no import cycle). FuzzyGraph.from_sparse(P, n_epochs=..., a=..., b=...) is
    # imported.graph_from_sparse, FuzzyGraph.from_umap(model) is imported.graph_from_umap.
    from_sparse: ClassVar[Callable[..., FuzzyGraph]]
    from_umap: ClassVar[Callable[..., FuzzyGraph]]

    def __repr__(self) -> str:
        return (
            f"FuzzyGraph(n_vertices={self.n_vertices}, nnz={self.nnz}, max_degree={self.max_degree}, "
            f"a={self.a:.4f}, b={self.b:.4f}, n_epochs={self.n_epochs}, knn={self.params.get('knn')!r})"
        )
