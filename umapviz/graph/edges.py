"""From a fuzzy set to the pruned, symmetric edge list of a :class:`FuzzyGraph` (both devices' builds end here)."""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse

from .._backend import to_host, xp_of
from .._validation import describe_rows
from ._types import FuzzyGraph
from .params import GraphParams

_ROWS_BLOCK = 1 << 26  # entries whose rows the GPU searches at once


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
    return graph_from_fuzzy_arrays(fuzzy.indptr, fuzzy.indices, fuzzy.data, knn_indices, knn_dists, params)


def entry_rows(indptr, xp, block: int = _ROWS_BLOCK):
    """int32 row of each entry of a CSR structure, on ``xp``: on the GPU a search per ``block`` of entries (a
    repeat's int64 temporaries would double the memory of the largest graphs).

    Parameters
    ----------
    indptr : ndarray
        First entry of each row, then the number of entries (NumPy or CuPy).
    xp : module
        NumPy or CuPy.
    block : int
        Entries searched at once on the GPU (no effect on the result).
    """
    n = int(indptr.size) - 1
    if xp is np:
        return np.repeat(np.arange(n, dtype=np.int32), np.diff(indptr))
    nnz = int(indptr[-1])
    rows = xp.empty(nnz, dtype=xp.int32)
    for lo in range(0, nnz, block):
        hi = min(nnz, lo + block)
        rows[lo:hi] = xp.searchsorted(indptr, xp.arange(lo, hi, dtype=indptr.dtype), side="right") - 1
    return rows


def graph_from_fuzzy_arrays(indptr, indices, data, knn_indices, knn_dists, params: GraphParams,
                            timings: dict | None = None) -> FuzzyGraph:
    """:func:`graph_from_fuzzy_set` of a fuzzy set's CSR arrays where they lie: NumPy arrays on the host, CuPy arrays
    pruned and laid out on the GPU and only the edge list copied to the host. The same bytes either way: the
    threshold is the float32 quotient of the same maximum, the comparisons are float32's, the schedule's quotients
    are correctly rounded float64 divisions on either device.

    Parameters
    ----------
    indptr, indices, data : ndarray
        The symmetric fuzzy set's CSR arrays (sorted indices, float32 data), NumPy or CuPy.
    knn_indices, knn_dists : ndarray
        The kNN it came from, (n, k), kept on the graph (NumPy or CuPy).
    params : GraphParams
        The build's parameters: ``n_epochs`` sets the pruning threshold, ``a`` and ``b`` the curve.
    timings : dict, optional
        Receives ``prune`` (seconds of the pruned edge list on its device) and ``to_host`` (of the copies).
    """
    xp = xp_of(data)
    start = time.perf_counter()
    weights = data
    if weights.size:
        # An edge sampled less than once in n_epochs would never move anything: drop it. The maximum as NumPy's
        # float32 scalar on either device, so the quotient is the same float32.
        threshold = np.float32(to_host(weights.max())) / float(params.n_epochs)
        keep = weights >= (threshold if xp is np else xp.float32(threshold))
    else:
        keep = xp.ones(0, dtype=bool)
    head = entry_rows(indptr, xp)[keep]
    tail = indices[keep].astype(np.int32, copy=False)
    weight = weights[keep].astype(np.float32, copy=False)
    epochs_per_sample = weight.max().astype(np.float64) / weight.astype(np.float64)
    del keep
    if xp is not np:
        xp.cuda.Device().synchronize()
    middle = time.perf_counter()
    head, tail, weight, epochs_per_sample, knn_indices, knn_dists = (
        to_host(a) for a in (head, tail, weight, epochs_per_sample, knn_indices, knn_dists))
    if timings is not None:
        timings.update(prune=middle - start, to_host=time.perf_counter() - middle)
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
