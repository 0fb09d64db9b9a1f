"""From a fuzzy set to the pruned, symmetric edge list of a :class:`FuzzyGraph` (both devices' builds end here)."""

from __future__ import annotations

import time

import numba
import numpy as np
import scipy.sparse

from .._backend import to_host, xp_of
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
    return graph_from_fuzzy_arrays(fuzzy.indptr, fuzzy.indices, fuzzy.data, knn_indices, knn_dists, params)


@numba.njit(parallel=True, cache=True)
def _heads(indptr):
    """int32 row of each entry of a CSR structure (``np.repeat`` of the rows by their lengths, in parallel)."""
    head = np.empty(indptr[-1], dtype=np.int32)
    for row in numba.prange(indptr.size - 1):
        for p in range(indptr[row], indptr[row + 1]):
            head[p] = row
    return head


@numba.njit(parallel=True, cache=True, error_model="numpy")
def _schedule(weight, top):
    """``top / float64(w)`` per edge: correctly rounded float64 quotients, as NumPy's (or CuPy's) division gives."""
    out = np.empty(weight.size, dtype=np.float64)
    for p in numba.prange(weight.size):
        out[p] = top / np.float64(weight[p])
    return out


def graph_from_fuzzy_arrays(
    indptr, indices, data, knn_indices, knn_dists, params: GraphParams, timings: dict | None = None
) -> FuzzyGraph:
    """:func:`graph_from_fuzzy_set` of a fuzzy set's CSR arrays where they lie: NumPy arrays on the host; CuPy arrays
    pruned on the GPU, and only the pruned rows' lengths, tails and weights copied to the host, where the heads and
    the schedule are filled in (the copy of the whole edge list took longer). The same bytes either way: the
    threshold is the float32 quotient of the same maximum, the comparisons are float32's, the schedule's quotients
    are correctly rounded float64 divisions.

    Parameters
    ----------
    indptr, indices, data : ndarray
        The symmetric fuzzy set's CSR arrays (sorted indices, float32 data), NumPy or CuPy.
    knn_indices, knn_dists : ndarray
        The kNN it came from, (n, k), kept on the graph (NumPy or CuPy).
    params : GraphParams
        The build's parameters: ``n_epochs`` sets the pruning threshold, ``a`` and ``b`` the curve.
    timings : dict, optional
        Receives ``prune`` (seconds of the pruning on the fuzzy set's device), ``to_host`` (of the copies) and
        ``edges`` (of the heads and the schedule on the host).
    """
    xp = xp_of(data)
    start = time.perf_counter()
    if data.size:
        # An edge sampled less than once in n_epochs would never move anything: drop it. The maximum as NumPy's
        # float32 scalar on either device, so the quotient is the same float32.
        threshold = np.float32(to_host(data.max())) / float(params.n_epochs)
        keep = data >= (threshold if xp is np else xp.float32(threshold))
    else:
        keep = xp.ones(0, dtype=bool)
    kept_before = xp.zeros(keep.size + 1, dtype=xp.int64)
    xp.cumsum(keep, dtype=xp.int64, out=kept_before[1:])
    pruned_ptr = kept_before[indptr]  # each row's first kept entry
    del kept_before
    tail = indices[keep].astype(np.int32, copy=False)
    weight = data[keep].astype(np.float32, copy=False)
    del keep
    if xp is not np:
        xp.cuda.Device().synchronize()
    middle = time.perf_counter()
    pruned_ptr, tail, weight, knn_indices, knn_dists = (
        to_host(a) for a in (pruned_ptr, tail, weight, knn_indices, knn_dists)
    )
    copied = time.perf_counter()
    head = _heads(np.ascontiguousarray(pruned_ptr, dtype=np.int64))
    epochs_per_sample = _schedule(weight, np.float64(weight.max()))
    if timings is not None:
        timings.update(prune=middle - start, to_host=copied - middle, edges=time.perf_counter() - copied)
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
