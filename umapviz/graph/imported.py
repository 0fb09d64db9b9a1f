"""Graphs brought in: any symmetric fuzzy membership matrix (scanpy's ``adata.obsp["connectivities"]``, cuML's
graph, umap-learn's ``graph_``) or a fitted umap-learn model, as a :class:`FuzzyGraph` the optimizer replays.

The matrix is pruned for the epochs as umap-learn prunes it (memberships below ``max / n_epochs`` dropped) and laid
out as the kit's own graphs are (:func:`umapviz.graph.edges.graph_from_fuzzy_arrays`), so umap-learn's graph
brought in equals the kit's graph of the same kNN bit for bit.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import scipy.sparse

from .._umap_learn_params import check_curve
from .._validation import check_n_epochs
from ._types import FuzzyGraph
from .edges import graph_from_fuzzy_arrays
from .params import GraphParams


def graph_from_sparse(
    P: Any,
    n_epochs: int | None = None,
    a: float | None = None,
    b: float | None = None,
    min_dist: float = 0.1,
    spread: float = 1.0,
    knn: tuple[np.ndarray, np.ndarray] | None = None,
    source: str = "sparse",
) -> FuzzyGraph:
    """A FuzzyGraph of a symmetric fuzzy membership matrix.

    Parameters
    ----------
    P : scipy.sparse matrix or array
        (n, n) symmetric memberships in [0, 1]; the diagonal is dropped.
    n_epochs : int, optional
        The epochs the graph will be laid out for: memberships below ``max / n_epochs`` are pruned (umap-learn's
        rule). None: 500 up to 10,000 vertices, else 200.
    a, b : float, optional
        The curve ``1 / (1 + a d^(2b))``, both or neither; None: fitted to ``min_dist`` and ``spread``.
    min_dist, spread : float
        The curve's shape when ``a`` and ``b`` are not given.
    knn : tuple of numpy.ndarray, optional
        The (n, k) neighbour indices and distances the matrix came from, self first (umap-learn's ``_knn_indices``
        and ``_knn_dists``). None: each vertex's neighbours ranked by membership, their "distance" ``-log(w)``
        (self first at 0; a row with fewer than k - 1 neighbours repeats its last), k the largest row's count + 1
        up to 16: what the Explorer's neighbour-based outlier measure reads.
    source : str
        What ``graph.params["knn"]`` records (where the graph came from).
    """
    curve = check_curve(a, b)
    n_epochs = check_n_epochs(n_epochs)
    fuzzy = _checked_matrix(P)
    n = fuzzy.shape[0]
    params = GraphParams.for_data(
        n,
        n_neighbors=0,
        metric="unknown",
        knn=source,
        min_dist=min_dist,
        spread=spread,
        n_epochs=n_epochs,
        curve=curve,
    )
    if knn is None:
        knn_indices, knn_dists = _membership_knn(fuzzy)
    else:
        knn_indices, knn_dists = (np.asarray(v) for v in knn)
        if knn_indices.shape != knn_dists.shape or knn_indices.ndim != 2 or knn_indices.shape[0] != n:
            raise ValueError(f"knn's arrays must both be (n, k) with n = the matrix's {n} rows.")
    params = dataclasses.replace(params, n_neighbors=int(knn_indices.shape[1]))
    graph = graph_from_fuzzy_arrays(fuzzy.indptr, fuzzy.indices, fuzzy.data, knn_indices, knn_dists, params)
    if curve is not None:
        graph.params.update(a=curve[0], b=curve[1])
    return graph


def graph_from_umap(model: Any, n_epochs: int | None = None) -> FuzzyGraph:
    """A FuzzyGraph of a fitted umap-learn model: its ``graph_`` pruned for its epochs as umap-learn prunes it,
    its ``a`` and ``b``, its kNN (``_knn_indices``, ``_knn_dists``) and metric.

    Parameters
    ----------
    model : umap.UMAP
        A fitted umap-learn estimator (or any object with ``graph_``, ``_a`` and ``_b``).
    n_epochs : int, optional
        The epochs to prune for; None: the model's ``n_epochs``, or umap-learn's default (500 up to 10,000 points,
        else 200).
    """
    graph = getattr(model, "graph_", None)
    if graph is None:
        raise ValueError(
            f"{type(model).__name__} has no graph_: pass a fitted umap-learn model (call fit(X) first), or the "
            "matrix itself to FuzzyGraph.from_sparse."
        )
    if getattr(model, "densmap", False):
        raise ValueError("A densMAP model's layout is not UMAP's; the kit replays UMAP layouts only.")
    epochs = n_epochs if n_epochs is not None else getattr(model, "n_epochs", None)
    if isinstance(epochs, (list, tuple)):  # umap-learn's list of epochs to save: the last is the run's
        epochs = max(epochs)
    knn_indices, knn_dists = getattr(model, "_knn_indices", None), getattr(model, "_knn_dists", None)
    knn = None if knn_indices is None or knn_dists is None else (knn_indices, knn_dists)
    out = graph_from_sparse(
        graph,
        n_epochs=epochs,
        a=float(model._a),
        b=float(model._b),
        knn=knn,
        source="umap-learn",
    )
    metric = getattr(model, "metric", None)
    out.params.update(
        metric=metric if isinstance(metric, str) else "callable",
        min_dist=getattr(model, "min_dist", None),
        spread=getattr(model, "spread", None),
        random_state=getattr(model, "random_state", None) if isinstance(model.random_state, int) else None,
    )
    return out


def _checked_matrix(P: Any) -> scipy.sparse.csr_matrix:
    """P as a float32 CSR matrix with sorted indices and no diagonal, checked square, finite, in [0, 1] and
    symmetric (ValueError naming the fix otherwise)."""
    M = scipy.sparse.csr_matrix(P, dtype=np.float32) if not scipy.sparse.issparse(P) else P.tocsr().astype(np.float32)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] < 2:
        raise ValueError(f"The graph must be a square (n, n) membership matrix with n >= 2; got shape {M.shape}.")
    M = M.copy()
    M.setdiag(0)
    M.eliminate_zeros()
    M.sum_duplicates()
    M.sort_indices()
    if M.nnz == 0:
        raise ValueError("The graph has no edge off the diagonal: nothing to lay out.")
    if not np.isfinite(M.data).all() or M.data.min() < 0 or M.data.max() > 1:
        raise ValueError(
            "Memberships must be finite and in [0, 1] (a fuzzy graph such as scanpy's obsp['connectivities']); "
            "for distances (obsp['distances']) build the graph from them with metric='precomputed' or "
            "precomputed_knn."
        )
    asymmetry = abs(M - M.T)
    if asymmetry.nnz and asymmetry.max() > 1e-6 * M.data.max():
        raise ValueError(
            "The graph is not symmetric: UMAP lays out a symmetric fuzzy set. Symmetrise it first, e.g. with the "
            "fuzzy union P + P.T - P.multiply(P.T)."
        )
    return M


def _membership_knn(M: scipy.sparse.csr_matrix, max_k: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """(indices int32 (n, k), "distances" float32 (n, k)): each vertex first (at 0), then its neighbours by
    decreasing membership w at ``-log(w)``, the last repeated in a short row; k the largest row's count + 1, at
    most ``max_k``."""
    n = M.shape[0]
    counts = np.diff(M.indptr)
    k = int(min(max_k, counts.max() + 1))
    indices = np.repeat(np.arange(n, dtype=np.int32)[:, None], k, axis=1)
    dists = np.zeros((n, k), dtype=np.float32)
    for i in range(n):
        cols = M.indices[M.indptr[i] : M.indptr[i + 1]]
        w = M.data[M.indptr[i] : M.indptr[i + 1]]
        order = np.lexsort((cols, -w))[: k - 1]
        if order.size:
            pad = np.concatenate([order, np.full(k - 1 - order.size, order[-1])])
            indices[i, 1:] = cols[pad]
            dists[i, 1:] = -np.log(w[pad])
    return indices, dists
