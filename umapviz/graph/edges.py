"""From a fuzzy set to the pruned, symmetric edge list of a :class:`FuzzyGraph` (both devices' builds end here)."""

from __future__ import annotations

import numpy as np
import scipy.sparse

from .._validation import describe_rows
from ._types import FuzzyGraph
from .params import GraphParams


def graph_from_fuzzy_set(
    fuzzy: scipy.sparse.csr_matrix, knn_indices: np.ndarray, knn_dists: np.ndarray, params: GraphParams
) -> FuzzyGraph:
    """Prune weak edges and lay the rest out as a COO edge list sorted by head, then tail.

    Parameters
    ----------
    fuzzy : scipy.sparse.csr_matrix
        The symmetric fuzzy set (n x n, sorted indices).
    knn_indices, knn_dists : numpy.ndarray
        The kNN it came from, (n, k), kept on the graph.
    params : GraphParams
        The build's parameters: ``n_epochs`` sets the pruning threshold, ``a`` and ``b`` the curve.
    """
    weights = fuzzy.data
    # An edge sampled less than once in n_epochs would never move anything: drop it.
    keep = weights >= weights.max() / float(params.n_epochs) if weights.size else np.ones(0, dtype=bool)
    head = np.repeat(np.arange(fuzzy.shape[0], dtype=np.int32), np.diff(fuzzy.indptr))[keep]
    tail = fuzzy.indices[keep].astype(np.int32)
    weight = weights[keep].astype(np.float32)
    epochs_per_sample = weight.max().astype(np.float64) / weight.astype(np.float64)
    return FuzzyGraph(
        head=head,
        tail=tail,
        weight=weight,
        epochs_per_sample=epochs_per_sample,
        knn_indices=np.ascontiguousarray(knn_indices, dtype=np.int32),
        knn_dists=np.ascontiguousarray(knn_dists, dtype=np.float32),
        a=params.a,
        b=params.b,
        n_epochs=params.n_epochs,
        params=params.record(),
    )


def refuse_overflowed_distances(knn_dists: np.ndarray) -> None:
    """ValueError when a kNN distance overflowed float32 (data near float32's limit): such a row weighs nothing,
    and when all do the graph has no edge to lay out.

    Parameters
    ----------
    knn_dists : numpy.ndarray
        (n, k) kNN distances on the host.
    """
    bad = np.flatnonzero(~np.isfinite(knn_dists).all(axis=1))
    if bad.size:
        raise ValueError(
            f"X's values are so large that distances from {bad.size} row(s) (e.g. rows {describe_rows(bad)}) to "
            f"their neighbours overflow float32 (beyond {float(np.finfo(np.float32).max):.3g}). Scale X down first, "
            "e.g. X / np.abs(X).max(): the graph does not depend on the data's scale."
        )
