"""k-nearest neighbours on the CPU under the metrics that have no GEMM form (manhattan, chebyshev, minkowski,
correlation, hamming, jaccard, hellinger, haversine) and from a precomputed distance matrix.

The same output contract as :mod:`umapviz.graph.knn.knn_cpu`: ``(indices int32 (n, k), distances float32 (n, k))``,
the point itself at column 0, the rest sorted by distance, ties broken by index. Distances are SciPy's
(``scipy.spatial.distance.cdist`` in float64; hellinger's and haversine's, which SciPy lacks, by pynndescent's
formulas in float64): the exact search computes them a block of rows at a time; the
approximate search takes pynndescent's candidates (which implements these metrics) and re-scores them with the same
formulas. A distance SciPy leaves undefined follows pynndescent's rule: correlation between two constant rows is 0,
between a constant row and another 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numba
import numpy as np
from scipy.spatial.distance import cdist

from . import stop_if_cancelled
from .knn_cpu import nndescent_candidates
from .refine import _CPU_TILE_ROWS, _candidates, _reverse_neighbours

# Memory for one block of the (rows, n) float64 distance matrix.
_BLOCK_BYTES = 128 * 2**20
# Memory for one block of re-scored candidates, (rows, m, d) float64: small enough to stay in cache-sized pieces
# (each temporary of the paired formulas is this big).
_PAIRED_BYTES = 16 * 2**20
# SciPy's names where they differ from umap-learn's.
_SCIPY_NAMES = {"manhattan": "cityblock"}


def cdist_block(A: np.ndarray, B: np.ndarray, metric: str, metric_kwds: dict) -> np.ndarray:
    """float64 distances (len(A), len(B)) between the rows of A and B, as SciPy's cdist computes them, with
    correlation's undefined pairs (constant rows) set as pynndescent sets them.

    Parameters
    ----------
    A, B : numpy.ndarray
        (m, d) and (n, d) rows.
    metric : str
        A metric of :data:`umapviz.graph.knn.CPU_METRICS` other than "precomputed".
    metric_kwds : dict
        ``{"p": p}`` for minkowski, else empty.
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    if metric in ("hellinger", "haversine"):  # pair by pair, in pieces of rows
        step = max(1, _PAIRED_BYTES // (8 * B.shape[0] * B.shape[1]))
        return np.concatenate(
            [_formula(A[i : i + step, None, :], B[None, :, :], metric) for i in range(0, len(A), step)]
        ).reshape(len(A), len(B))
    if metric in ("hamming", "jaccard"):  # SciPy reads them on booleans: non-zero is True
        D = cdist(A != 0, B != 0, metric) if metric == "jaccard" else cdist(A, B, metric)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            D = cdist(A, B, _SCIPY_NAMES.get(metric, metric), **metric_kwds)
    if metric == "correlation":
        flat_a = np.ptp(A, axis=1) == 0
        flat_b = np.ptp(B, axis=1) == 0
        undefined = flat_a[:, None] | flat_b[None, :]
        D[undefined] = np.where(flat_a[:, None] & flat_b[None, :], 0.0, 1.0)[undefined]
    return D


def select_rows(D: np.ndarray, k: int, self_cols: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The k smallest entries per row of D, sorted by (distance, column); with ``self_cols`` each row's own
    column first at distance 0. Ties at the k-th place are broken by column too (the tied entries are all looked
    at), so the result does not depend on the selection's order.

    Parameters
    ----------
    D : numpy.ndarray
        (m, n) float64 distances; modified in place where ``self_cols`` is given.
    k : int
        Entries kept per row.
    self_cols : numpy.ndarray or None
        (m,) each row's own column, or None when the rows are queries that are no column.
    """
    m = D.shape[0]
    if self_cols is not None:
        D[np.arange(m), self_cols] = -1.0  # below every distance: self first
    part = np.argpartition(D, k - 1, axis=1)[:, :k]
    kth = np.take_along_axis(D, part, axis=1).max(axis=1)
    ties = np.count_nonzero(D <= kth[:, None], axis=1) > k
    out_idx = np.empty((m, k), dtype=np.int64)
    out_dist = np.empty((m, k), dtype=np.float64)
    for r in range(m):
        cols = np.flatnonzero(D[r] <= kth[r]) if ties[r] else part[r]
        order = np.lexsort((cols, D[r, cols]))[:k]
        out_idx[r] = cols[order]
        out_dist[r] = D[r, cols[order]]
    if self_cols is not None:
        out_dist[:, 0] = 0.0
    return out_idx, out_dist


def _finish(idx: np.ndarray, dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(over="ignore"):  # a distance beyond float32 becomes inf, which build_graph refuses by name
        return idx.astype(np.int32), dist.astype(np.float32)


def exact_metric_knn(
    X: np.ndarray,
    n_neighbors: int,
    metric: str,
    metric_kwds: dict,
    queries: np.ndarray | None = None,
    cancel: Callable[[], bool] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact kNN in X under ``metric`` by SciPy's cdist, a block of rows at a time: of X's own rows (each finds
    itself first) or, with ``queries``, of those rows (no column is "self"). ``cancel`` is asked before each block.

    Parameters
    ----------
    X : numpy.ndarray
        (n, d) float32 reference rows.
    n_neighbors : int
        k.
    metric : str
        A metric of :data:`umapviz.graph.knn.CPU_METRICS` other than "precomputed".
    metric_kwds : dict
        ``{"p": p}`` for minkowski, else empty.
    queries : numpy.ndarray, optional
        (n_q, d) rows to find neighbours for instead of X's own.
    cancel : callable, optional
        Returns True to stop (BuildCancelled).
    """
    Q = X if queries is None else queries
    n = X.shape[0]
    step = max(1, _BLOCK_BYTES // (8 * n))
    idx = np.empty((len(Q), n_neighbors), dtype=np.int64)
    dist = np.empty((len(Q), n_neighbors), dtype=np.float64)
    for start in range(0, len(Q), step):
        stop_if_cancelled(cancel)
        rows = np.arange(start, min(start + step, len(Q)))
        D = cdist_block(Q[rows], X, metric, metric_kwds)
        idx[rows], dist[rows] = select_rows(D, n_neighbors, rows if queries is None else None)
    return _finish(idx, dist)


def precomputed_knn(
    D: np.ndarray, n_neighbors: int, queries: bool = False, cancel: Callable[[], bool] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """kNN read from a dense distance matrix: the rows of a square (n, n) ``D`` (each point first, at distance 0,
    whatever the diagonal holds), or with ``queries`` the rows of an (n_q, n) matrix of distances from new points
    to the n reference points.

    Parameters
    ----------
    D : numpy.ndarray
        Distances (float32), checked non-negative and finite by the caller.
    n_neighbors : int
        k.
    queries : bool
        D's rows are new points (no column is "self").
    cancel : callable, optional
        Returns True to stop (BuildCancelled).
    """
    step = max(1, _BLOCK_BYTES // (8 * D.shape[1]))
    idx = np.empty((D.shape[0], n_neighbors), dtype=np.int64)
    dist = np.empty((D.shape[0], n_neighbors), dtype=np.float64)
    for start in range(0, D.shape[0], step):
        stop_if_cancelled(cancel)
        rows = np.arange(start, min(start + step, D.shape[0]))
        block = D[rows].astype(np.float64)
        idx[rows], dist[rows] = select_rows(block, n_neighbors, None if queries else rows)
    return _finish(idx, dist)


def approx_metric_knn(
    X: np.ndarray, n_neighbors: int, metric: str, metric_kwds: dict, random_state: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Approximate kNN under ``metric`` by NN-descent (pynndescent), its candidates re-scored with SciPy's
    formulas and re-sorted, self forced into column 0, as :func:`umapviz.graph.knn.knn_cpu.approx_knn` does for
    the GEMM metrics (seeded: one thread, as its result otherwise depends on the thread count).

    Parameters
    ----------
    X : numpy.ndarray
        (n, d) float32 rows.
    n_neighbors : int
        k.
    metric : str
        A metric of :data:`umapviz.graph.knn.CPU_METRICS` other than "precomputed".
    metric_kwds : dict
        ``{"p": p}`` for minkowski, else empty.
    random_state : int, optional
        NN-descent's seed.
    """
    n, k = X.shape[0], n_neighbors
    rows, search_metric, search_kwds, proxy = _candidate_space(X, metric, metric_kwds)
    # A proxy metric ranks the pairs otherwise than ``metric``: twice the candidates, then a refinement round
    # under ``metric`` itself, find at least the neighbours NN-descent under ``metric`` finds
    # (bench/RESULTS.md, "Other metrics' kNN").
    n_cand = max(k, min(2 * k, n - 1)) if proxy else k
    cand = nndescent_candidates(rows, n_cand, search_metric, search_kwds, random_state)
    idx = np.empty((n, k), dtype=np.int64)
    dist = np.empty((n, k), dtype=np.float64)
    X = np.ascontiguousarray(X, dtype=np.float32)
    _rescore(X, cand, _METRIC_CODES[metric], float(metric_kwds.get("p", 2.0)), idx, dist)
    short = np.flatnonzero((idx < 0).any(axis=1) | ~np.isfinite(dist).all(axis=1))
    if short.size:  # rows where NN-descent found fewer than k neighbours: exactly
        D = cdist_block(X[short], X, metric, metric_kwds)
        idx[short], dist[short] = select_rows(D, k, short)
    if proxy:
        idx, dist = refine_metric_knn(X, idx, metric, metric_kwds)
    return _finish(idx, dist)


def _candidate_space(X: np.ndarray, metric: str, metric_kwds: dict) -> tuple[np.ndarray, str, dict, bool]:
    """The rows, metric and parameters NN-descent searches for ``metric``'s candidates, and whether that metric is
    a proxy (ranks some pairs otherwise than ``metric``). Where a cheaper search ranks the pairs as ``metric``
    does, that one; the candidates are re-scored under ``metric`` on X either way, so the choice changes the time
    and which candidates are found, never a distance.

    - correlation is the cosine distance of the rows less their means, and pynndescent runs cosine as a dot product
      of normalised rows but correlation pair by pair, means included: the centred rows under cosine (a constant
      row centres to zero, which pynndescent's cosine puts at 0 from another and 1 from the rest, as its
      correlation does).
    - minkowski with p = 1 is manhattan and with p = 2 euclidean (which pynndescent runs as a squared distance):
      those searches, without a power per feature. pynndescent compiles its search anew for every index of a
      metric with parameters (tens of seconds), so p = 3 takes the euclidean search as a proxy (its neighbours
      are mostly those under p = 2; the re-scoring's cubes are products); other p keep minkowski (at p = 6 the
      proxy found 0.86 of the neighbours where minkowski's search found 0.95).
    - hellinger is ``|a - b| / sqrt(2)`` for the unit rows ``a = sqrt(u / sum(u))``, which rank as their cosine:
      the cosine search of those rows, without a square root per feature and pair (a zero row stays zero, ranked
      apart from every other row: the re-scoring puts it at 1 from them, as hellinger does).
    - jaccard reads each feature as zero or not, and hamming on 0/1 data counts the features that differ: on
      those rows packed 8 features a byte, pynndescent's popcount metrics (``bit_jaccard`` ranks as jaccard,
      ``bit_hamming`` counts the differing bits), where the installed pynndescent has them.
    """
    if metric == "correlation":
        centred = X - X.mean(axis=1, dtype=np.float64, keepdims=True)
        return centred.astype(np.float32), "cosine", {}, False
    if metric == "minkowski":
        p = metric_kwds.get("p", 2.0)
        if p in (1.0, 2.0):
            return X, "manhattan" if p == 1.0 else "euclidean", {}, False
        if p == 3.0:
            return X, "euclidean", {}, True
    if metric == "hellinger":
        sums = X.sum(axis=1, dtype=np.float64, keepdims=True)
        rows = np.sqrt(np.divide(X, sums, out=np.zeros(X.shape), where=sums > 0))
        return rows.astype(np.float32), "cosine", {}, False
    if metric in ("hamming", "jaccard") and _has_bit_metrics():
        nonzero = X != 0
        if metric == "jaccard" or bool(((X == 0) | (X == 1)).all()):
            return np.packbits(nonzero, axis=1), f"bit_{metric}", {}, False
    return X, metric, metric_kwds, False


def _has_bit_metrics() -> bool:
    """pynndescent has the popcount metrics on packed bits (added after 0.5)."""
    try:
        from pynndescent import distances  # noqa: PLC0415 - heavy import (and JIT), only when needed
    except ImportError:
        return False
    return "bit_hamming" in distances.named_distances and "bit_jaccard" in distances.named_distances


# The re-scoring kernel's metric numbers.
_METRIC_CODES = {
    "manhattan": 0,
    "chebyshev": 1,
    "minkowski": 2,
    "hamming": 3,
    "jaccard": 4,
    "correlation": 5,
    "hellinger": 6,
    "haversine": 7,
}


@numba.njit(cache=True)
def _pair_distance(u, v, code, p):
    """float64 distance of two float32 rows by SciPy's formulas (pynndescent's for hellinger and haversine; a
    constant row's correlation as :func:`cdist_block` sets it), summed in order."""
    d = u.shape[0]
    if code == 0 or code == 1 or code == 2:
        # a whole p up to 8 as products (within an ulp or two of SciPy's pow, at a fraction of its cost)
        whole = int(p) if code == 2 and p == int(p) and p <= 8 else 0
        acc = 0.0
        for t in range(d):
            diff = abs(np.float64(u[t]) - np.float64(v[t]))
            if code == 0:
                acc += diff
            elif code == 1:
                acc = max(acc, diff)
            elif whole > 0:
                term = diff
                for _ in range(whole - 1):
                    term *= diff
                acc += term
            else:
                acc += diff**p
        return acc ** (1.0 / p) if code == 2 else acc
    if code == 3:
        differ = 0
        for t in range(d):
            differ += u[t] != v[t]
        return differ / d
    if code == 4:
        either = 0
        differ = 0
        for t in range(d):
            a, b = u[t] != 0, v[t] != 0
            either += a or b
            differ += a != b
        return differ / either if either > 0 else 0.0
    if code == 5:
        mu = 0.0
        mv = 0.0
        lo_u, hi_u, lo_v, hi_v = u[0], u[0], v[0], v[0]
        for t in range(d):
            mu += u[t]
            mv += v[t]
            lo_u, hi_u = min(lo_u, u[t]), max(hi_u, u[t])
            lo_v, hi_v = min(lo_v, v[t]), max(hi_v, v[t])
        flat_u, flat_v = lo_u == hi_u, lo_v == hi_v
        if flat_u or flat_v:
            return 0.0 if flat_u and flat_v else 1.0
        mu /= d
        mv /= d
        uv = 0.0
        uu = 0.0
        vv = 0.0
        for t in range(d):
            a = np.float64(u[t]) - mu
            b = np.float64(v[t]) - mv
            uv += a * b
            uu += a * a
            vv += b * b
        return min(max(1.0 - uv / math.sqrt(uu * vv), 0.0), 2.0)
    if code == 6:
        su = 0.0
        sv = 0.0
        dot = 0.0
        for t in range(d):
            su += u[t]
            sv += v[t]
            dot += math.sqrt(np.float64(u[t]) * np.float64(v[t]))
        if su == 0 or sv == 0:
            return 0.0 if su == 0 and sv == 0 else 1.0
        return math.sqrt(max(1.0 - dot / math.sqrt(su * sv), 0.0))
    sin_lat = math.sin(0.5 * (np.float64(u[0]) - np.float64(v[0])))
    sin_lon = math.sin(0.5 * (np.float64(u[1]) - np.float64(v[1])))
    inner = sin_lat**2 + math.cos(np.float64(u[0])) * math.cos(np.float64(v[0])) * sin_lon**2
    return 2.0 * math.asin(math.sqrt(min(max(inner, 0.0), 1.0)))


@numba.njit(parallel=True, cache=True)
def _rescore(X, cand, code, p, idx, dist, first=0):
    """Row r's candidates ``cand[r]`` re-scored (``_pair_distance``) from the point ``first + r`` and the k best
    kept in ``idx[r]``, ``dist[r]``: by (distance, index), the point itself first, -1 candidates last at inf
    (a row with fewer than k valid candidates ends in -1). Rows are independent: the same bytes on any thread
    count."""
    n, m = cand.shape
    k = idx.shape[1]
    for r in numba.prange(n):
        i = first + r
        best_d = np.full(k, np.inf)
        best_c = np.full(k, -1, dtype=np.int64)
        filled = 0
        for j in range(m):
            col = cand[r, j]
            if col < 0:
                dj = np.inf
            elif col == i:
                dj = -1.0  # self first
            else:
                dj = _pair_distance(X[i], X[col], code, p)
            if filled < k:
                t = filled
                filled += 1
            elif dj > best_d[k - 1] or (dj == best_d[k - 1] and col >= best_c[k - 1]):
                continue
            else:
                t = k - 1
            while t > 0 and (best_d[t - 1] > dj or (best_d[t - 1] == dj and best_c[t - 1] > col)):
                best_d[t] = best_d[t - 1]
                best_c[t] = best_c[t - 1]
                t -= 1
            best_d[t] = dj
            best_c[t] = col
        for j in range(k):
            idx[r, j] = best_c[j]
            dist[r, j] = max(best_d[j], 0.0)


def refine_metric_knn(X: np.ndarray, idx: np.ndarray, metric: str, metric_kwds: dict) -> tuple[np.ndarray, np.ndarray]:
    """One round of neighbourhood refinement (:mod:`.refine`'s candidates: own neighbours, their neighbours,
    reverse neighbours) under ``metric``, re-scored by :func:`_pair_distance`: ``(indices int64, distances
    float64)``, self first, the rest by (distance, index). A point keeps its neighbours unless better ones are
    found, and the candidates are a function of ``idx`` alone: deterministic on any thread count.

    Parameters
    ----------
    X : numpy.ndarray
        (n, d) float32 rows.
    idx : numpy.ndarray
        (n, k) neighbour indices, self first, every entry a valid row.
    metric : str
        A metric of :data:`_METRIC_CODES`.
    metric_kwds : dict
        ``{"p": p}`` for minkowski, else empty.
    """
    n, k = idx.shape
    idx = idx.astype(np.int32)
    reverse = _reverse_neighbours(idx, k - 1, np)
    out_idx = np.empty((n, k), dtype=np.int64)
    out_dist = np.empty((n, k), dtype=np.float64)
    code, p = _METRIC_CODES[metric], float(metric_kwds.get("p", 2.0))
    for start in range(0, n, _CPU_TILE_ROWS):
        stop = min(n, start + _CPU_TILE_ROWS)
        cand = _candidates(idx, reverse, start, stop, np)
        _rescore(X, cand, code, p, out_idx[start:stop], out_dist[start:stop], start)
    return out_idx, out_dist


def _formula(U: np.ndarray, V: np.ndarray, metric: str) -> np.ndarray:
    """float64 distances between broadcast rows U (..., d) and V (..., d) by pynndescent's formulas (SciPy has
    neither): hellinger ``sqrt(1 - sum(sqrt(u v)) / sqrt(sum(u) sum(v)))`` (0 between two zero rows, 1 between a
    zero row and another); haversine ``2 arcsin(sqrt(sin^2(dlat / 2) + cos(lat_u) cos(lat_v) sin^2(dlon / 2)))``
    of (latitude, longitude) in radians."""
    if metric == "hellinger":
        return _hellinger(np.sqrt(U * V).sum(axis=-1), U.sum(axis=-1), V.sum(axis=-1))
    sin_lat = np.sin(0.5 * (U[..., 0] - V[..., 0]))
    sin_lon = np.sin(0.5 * (U[..., 1] - V[..., 1]))
    inner = sin_lat**2 + np.cos(U[..., 0]) * np.cos(V[..., 0]) * sin_lon**2
    return 2.0 * np.arcsin(np.sqrt(np.clip(inner, 0.0, 1.0)))


def _hellinger(dot: np.ndarray, su: np.ndarray, sv: np.ndarray) -> np.ndarray:
    """Hellinger distances from ``sum(sqrt(u v))`` and the rows' sums (broadcast against each other)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        D = np.sqrt(np.maximum(1.0 - dot / np.sqrt(su * sv), 0.0))
    zero_u, zero_v = su == 0, sv == 0
    return np.where(zero_u | zero_v, np.where(zero_u & zero_v, 0.0, 1.0), D)


def check_metric_data(X: np.ndarray, metric: str) -> None:
    """ValueError, naming the fix, for data a metric is not defined on (umap-learn refuses the same): hellinger
    on negative values (it compares distributions), haversine on other than two columns (latitude, longitude).

    Parameters
    ----------
    X : numpy.ndarray
        (n, d) data.
    metric : str
        The checked metric.
    """
    if metric == "hellinger" and (X < 0).any():
        raise ValueError(
            "metric='hellinger' compares non-negative rows (counts, frequencies), but X has negative values. Pass "
            "non-negative data (e.g. counts, or X - X.min()), or another metric."
        )
    if metric == "haversine" and X.shape[1] != 2:
        raise ValueError(
            f"metric='haversine' is a distance on the sphere between (latitude, longitude) pairs in radians, so X "
            f"needs 2 columns, but it has {X.shape[1]}. Pass the two angle columns, or another metric."
        )
