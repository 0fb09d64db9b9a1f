"""k-nearest neighbours on the CPU: exact (tiled brute force) or approximate (pynndescent).

Both return ``(indices int32 (n, k), distances float32 (n, k))`` with the point itself at column 0 (even when
it has duplicates), the rest sorted by exact distance, ties broken by index.

Exact kNN ranks candidates with a float32 GEMM per tile of rows, keeps ``max(8, k // 2)`` more candidates than
needed, then recomputes their distances exactly (float64) and re-sorts, so float32 rounding in the GEMM can only
change the answer when more than that many points tie with the k-th neighbour within that rounding.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numba
import numpy as np

from . import GEMM_METRICS, check_metric, float64_blocks, scaled_rows, stop_if_cancelled

# Memory for one tile of the (tile_rows, n) GEMM score matrix.
_TILE_BYTES = 256 * 2**20
# Show a progress bar for exact runs with more work than this (n^2 * d): a few seconds.
_PROGRESS_MIN_WORK = 2e10


def nearest_neighbors(
    X: np.ndarray,
    n_neighbors: int,
    metric: str = "euclidean",
    method: str = "exact",
    random_state: int | None = None,
    progress: bool = True,
    cancel: Callable[[], bool] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """kNN of validated float32 data by ``method`` "exact" or "approx" (see the module docstring). ``cancel`` is
    asked between the exact search's tiles (BuildCancelled when it returns True); the approximate search runs
    to its end."""
    metric = check_metric(metric, GEMM_METRICS, "the GEMM search")
    if method == "exact":
        return exact_knn(X, n_neighbors, metric, progress=progress, cancel=cancel)
    if method == "approx":
        return approx_knn(X, n_neighbors, metric, random_state=random_state)
    raise ValueError(f"method={method!r} is not 'exact' or 'approx'.")


# --------------------------------------------------------------------------------------------- kernels


@numba.njit(cache=True, inline="always")
def _sift_down(heap_s, heap_i, pos):
    """Restore the max-heap property below ``pos`` (largest score at the root)."""
    m = heap_s.shape[0]
    while True:
        left = 2 * pos + 1
        if left >= m:
            return
        big = left
        if left + 1 < m and heap_s[left + 1] > heap_s[left]:
            big = left + 1
        if heap_s[big] <= heap_s[pos]:
            return
        heap_s[pos], heap_s[big] = heap_s[big], heap_s[pos]
        heap_i[pos], heap_i[big] = heap_i[big], heap_i[pos]
        pos = big


@numba.njit(parallel=True, cache=True)
def _select_candidates(gram, col_add, scale, row_ids, cand):
    """Per row r, the ``cand.shape[1]`` columns j with the smallest ``col_add[j] + scale * gram[r, j]``.

    The row's own point (``row_ids[r]``) always wins a slot, so self is among the candidates.
    """
    n_rows, n = gram.shape
    m = cand.shape[1]
    for r in numba.prange(n_rows):
        heap_s = np.full(m, np.inf, dtype=np.float32)
        heap_i = np.full(m, -1, dtype=np.int64)
        me = row_ids[r]
        for j in range(n):
            s = -np.inf if j == me else col_add[j] + scale * gram[r, j]
            if s < heap_s[0]:
                heap_s[0] = s
                heap_i[0] = j
                _sift_down(heap_s, heap_i, 0)
        for c in range(m):
            cand[r, c] = heap_i[c]


@numba.njit(parallel=True, cache=True)
def refine_candidates(X, Q, row_ids, cand, k, cosine, match_self, out_idx, out_dist):
    """Exact float64 distances from query rows ``Q[row_ids]`` to their candidates (rows of X); keep the k best,
    ties by index. With ``match_self`` (Q is X) the query's own row sorts first. The twin of
    :func:`umapviz.graph.knn.knn_gpu.refine_candidates_gpu` (operation for operation: change both together).

    Candidates equal to -1 are skipped; a row left with fewer than k valid candidates gets -1 at the end
    (the caller redoes such rows exactly).

    Parameters
    ----------
    X : numpy.ndarray
        (n, d) float32 rows the candidates index.
    Q : numpy.ndarray
        (n_q, d) float32 query rows (X itself for a graph of X).
    row_ids : numpy.ndarray
        (rows,) int64: the query row of each row of ``cand``.
    cand : numpy.ndarray
        (rows, m) int64 candidate rows of X per query, -1 for none.
    k : int
        Neighbours kept per query.
    cosine : bool
        Cosine distance (else Euclidean).
    match_self : bool
        Q is X: the query's own row sorts first.
    out_idx, out_dist : numpy.ndarray
        (rows, k) int64 and float64 outputs.
    """
    n_rows, m = cand.shape
    d = X.shape[1]
    for r in numba.prange(n_rows):
        i = row_ids[r]
        dist = np.full(m, np.inf)
        idx = np.full(m, -1, dtype=np.int64)
        xi_norm = 0.0
        if cosine:
            for f in range(d):
                xi_norm += np.float64(Q[i, f]) ** 2
            xi_norm = math.sqrt(xi_norm)
        n_valid = 0
        for c in range(m):
            j = cand[r, c]
            if j < 0:
                continue
            dup = False
            for q in range(n_valid):
                if idx[q] == j:
                    dup = True
            if dup:
                continue
            if cosine:
                xj_norm = 0.0
                for f in range(d):
                    xj_norm += np.float64(X[j, f]) ** 2
                xj_norm = math.sqrt(xj_norm)
                if xi_norm == 0.0 and xj_norm == 0.0:
                    val = 0.0
                elif xi_norm == 0.0 or xj_norm == 0.0:
                    val = 1.0
                else:
                    # 1 - cos = |u - v|^2 / 2 for unit u, v: no cancellation near 0, exactly 0 for duplicates.
                    acc = 0.0
                    for f in range(d):
                        diff = np.float64(Q[i, f]) / xi_norm - np.float64(X[j, f]) / xj_norm
                        acc += diff * diff
                    val = 0.5 * acc
            else:
                acc = 0.0
                for f in range(d):
                    diff = np.float64(Q[i, f]) - np.float64(X[j, f])
                    acc += diff * diff
                val = math.sqrt(acc)
            if match_self and j == i:
                val = -1.0  # sorts self first; reset to 0 below
            # insertion sort by (distance, index)
            q = n_valid
            while q > 0 and (dist[q - 1] > val or (dist[q - 1] == val and idx[q - 1] > j)):
                dist[q] = dist[q - 1]
                idx[q] = idx[q - 1]
                q -= 1
            dist[q] = val
            idx[q] = j
            n_valid += 1
        for c in range(k):
            if c < n_valid:
                out_idx[r, c] = idx[c]
                out_dist[r, c] = max(dist[c], 0.0)
            else:
                out_idx[r, c] = -1
                out_dist[r, c] = np.inf


# --------------------------------------------------------------------------------------------- exact


def _selection_matrix(X: np.ndarray, metric: str):
    """(Z, col_add, scale, prepare) such that ranking ``col_add[j] + scale * (prepare(q) . Z_j)`` ranks the
    neighbours in X of a query row q; X's own rows are Z's. ``prepare`` transforms query rows as X's rows were,
    row by row, so the exact search applies it one tile of queries at a time (its float64 copy stays small).

    Euclidean: |x_i - x_j|^2 = |x_i|^2 + |x_j|^2 - 2 x_i.x_j; centring and rescaling first keeps float32
    from cancelling or overflowing. Cosine: rows normalised to unit length, rank by -cos. The float64 work runs a
    block of rows at a time (knn.float64_blocks), as on the GPU.
    """
    if metric == "cosine":

        def prepare_cosine(A: np.ndarray) -> np.ndarray:
            return _unit_rows(A.astype(np.float64))

        Z = np.empty(X.shape, dtype=np.float32)
        for rows in float64_blocks(*X.shape):
            Z[rows] = prepare_cosine(X[rows])
        return Z, np.zeros(X.shape[0], dtype=np.float32), np.float32(-1.0), prepare_cosine
    Z, mean, divisor = scaled_rows(X, np.float32)
    col_add = np.einsum("ij,ij->i", Z, Z, dtype=np.float32)

    def prepare_euclidean(A: np.ndarray) -> np.ndarray:
        A64 = A.astype(np.float64)
        A64 -= mean
        A64 /= divisor
        return A64.astype(np.float32)

    return Z, col_add, np.float32(-2.0), prepare_euclidean


def _unit_rows(A: np.ndarray) -> np.ndarray:
    """Rows of float64 A scaled to unit length (zero rows stay zero), as float32."""
    norms = np.linalg.norm(A, axis=1, keepdims=True)
    return np.divide(A, norms, out=np.zeros_like(A), where=norms > 0).astype(np.float32)


def reference_index(X: np.ndarray, metric: str = "euclidean") -> tuple:
    """What the exact search computes from the reference set X before any query (its rows centred and scaled,
    or normalised, in float32): pass it to :func:`query_knn` to skip that pass on repeated queries against X."""
    return _selection_matrix(
        np.ascontiguousarray(X, dtype=np.float32), check_metric(metric, GEMM_METRICS, "the GEMM search")
    )


def exact_rows(
    X: np.ndarray,
    rows: np.ndarray,
    n_neighbors: int,
    metric: str,
    progress: bool,
    queries: np.ndarray | None = None,
    reference: tuple | None = None,
    cancel: Callable[[], bool] | None = None,
    n_spare: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact kNN against all of X of the given rows, one GEMM tile at a time: rows of X itself (each finds itself
    first), or with ``queries`` rows of that separate set (no column is "self"). ``cancel`` is asked before
    each tile. ``n_spare``: candidates kept beyond k for the exact re-sort (None: ``max(8, k // 2)``)."""
    n = X.shape[0]
    k = n_neighbors
    # A few spare candidates absorb float32 ranking errors; the exact recompute then re-sorts them.
    n_cand = min(n, k + (max(8, k // 2) if n_spare is None else int(n_spare)))
    Z, col_add, scale, prepare = reference if reference is not None else _selection_matrix(X, metric)
    Q = X if queries is None else queries
    tile = _TILE_BYTES // (4 * n)
    if queries is not None:  # the tile's queries are transformed through a float64 copy: bound it too
        tile = min(tile, _TILE_BYTES // (8 * X.shape[1]))
    tile = int(max(1, min(len(rows), tile)))
    out_idx = np.empty((len(rows), k), dtype=np.int64)
    out_dist = np.empty((len(rows), k), dtype=np.float64)
    # Cosine: an all-zero query scores 0 against every point, so the ranking cannot find the other zero rows
    # (distance 0); such rows get their candidates from zero_row_candidates instead.
    zero_x = np.flatnonzero(~X.any(axis=1)) if metric == "cosine" else np.empty(0, np.int64)
    zero_q = ~Q.any(axis=1) if zero_x.size else None
    show = progress and float(len(rows)) * n * X.shape[1] > _PROGRESS_MIN_WORK
    starts = range(0, len(rows), tile)
    if show:  # only long runs draw a bar, so the core imports tqdm only then
        from tqdm import tqdm  # noqa: PLC0415 - optional: only long runs draw a bar

        starts = tqdm(starts, desc="exact kNN (tiles)", unit="tile", leave=False)
    for start in starts:
        stop_if_cancelled(cancel)
        row_ids = rows[start : start + tile]
        gram = (Z[row_ids] if queries is None else prepare(queries[row_ids])) @ Z.T
        cand = np.empty((len(row_ids), n_cand), dtype=np.int64)
        # A query is no row of X: self ids of -1 keep the selection from reserving a slot for "self".
        self_ids = row_ids if queries is None else np.full(len(row_ids), -1, dtype=np.int64)
        _select_candidates(gram, col_add, scale, self_ids, cand)
        if zero_q is not None:
            for r in np.flatnonzero(zero_q[row_ids]):
                cand[r] = zero_row_candidates(zero_x, self_ids[r], n, n_cand)
        refine_candidates(
            X,
            Q,
            row_ids,
            cand,
            k,
            metric == "cosine",
            queries is None,
            out_idx[start : start + tile],
            out_dist[start : start + tile],
        )
        del gram  # else the next tile's product is built while this one is still held: twice the tile memory
    return out_idx, out_dist


def zero_row_candidates(zero_rows: np.ndarray, me: int, n: int, m: int) -> np.ndarray:
    """The m candidates of an all-zero query under cosine, whose ranking scores are all 0: the query's own point
    (``me``, or -1 when the query is not a point), then the other all-zero points (``zero_rows``, sorted; distance
    0), then the lowest-index other points (distance 1)."""
    head = zero_rows[zero_rows != me]
    head = np.concatenate([[me], head]) if me >= 0 else head
    head = head[:m]
    rest = np.setdiff1d(np.arange(min(n, m + len(head))), head, assume_unique=True)[: m - len(head)]
    return np.concatenate([head, rest]).astype(np.int64)


def exact_knn(
    X: np.ndarray,
    n_neighbors: int,
    metric: str = "euclidean",
    progress: bool = True,
    cancel: Callable[[], bool] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact kNN by tiled brute force: ``(indices int32 (n, k), distances float32 (n, k))``, self first.
    ``cancel``: asked before each tile; BuildCancelled when it returns True."""
    metric = check_metric(metric, GEMM_METRICS, "the GEMM search")
    X = np.ascontiguousarray(X, dtype=np.float32)
    rows = np.arange(X.shape[0], dtype=np.int64)
    idx, dist = exact_rows(X, rows, n_neighbors, metric, progress, cancel=cancel)
    with np.errstate(over="ignore"):  # a distance beyond float32 becomes inf, which build_graph refuses by name
        return idx.astype(np.int32), dist.astype(np.float32)


def query_knn(
    X: np.ndarray,
    queries: np.ndarray,
    n_neighbors: int,
    metric: str = "euclidean",
    progress: bool = False,
    reference: tuple | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact kNN in the reference set ``X`` of each row of ``queries`` (both validated float32 arrays with the same
    columns): ``(indices int32 (n_queries, k), distances float32 (n_queries, k))``, sorted by distance, ties by
    index. Queries are not part of X, so no column is "self"; a query equal to a row of X finds it at distance 0.

    The same ranking as :func:`exact_knn` (a float32 GEMM per tile, spare candidates, exact float64 re-scoring);
    ``progress`` shows a bar for long runs; ``reference``: :func:`reference_index` of X and ``metric``, computed
    once for many calls (else each call computes it: a pass over X, most of the cost of a few queries).
    """
    metric = check_metric(metric, GEMM_METRICS, "the GEMM search")
    X = np.ascontiguousarray(X, dtype=np.float32)
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    n, k = X.shape[0], n_neighbors
    if not 1 <= k <= n:
        raise ValueError(f"n_neighbors={k} must be between 1 and the reference set's {n} rows.")
    if queries.ndim != 2 or queries.shape[1] != X.shape[1]:
        raise ValueError(f"queries of shape {queries.shape} do not have the reference set's {X.shape[1]} columns.")
    rows = np.arange(len(queries), dtype=np.int64)
    idx, dist = exact_rows(X, rows, k, metric, progress, queries=queries, reference=reference)
    with np.errstate(over="ignore"):  # a distance beyond float32 (queries near its limit) becomes inf, weight 0
        return idx.astype(np.int32), dist.astype(np.float32)


# --------------------------------------------------------------------------------------------- approximate


def nndescent_candidates(
    X: np.ndarray, k: int, metric: str, metric_kwds: dict | None = None, random_state: int | None = None
) -> np.ndarray:
    """(n, k) int64 candidate neighbours of every row by NN-descent (pynndescent), self among each row's (in place
    of the last where duplicates crowded it out); -1 where NN-descent found fewer than k. Forest and iteration
    sizes as UMAP chooses them; with a ``random_state`` one thread, as the result otherwise depends on the count.

    Parameters
    ----------
    X : numpy.ndarray
        (n, d) float32 rows (uint8 packed bits for pynndescent's ``bit_hamming`` and ``bit_jaccard``).
    k : int
        Candidates per row.
    metric : str
        A metric pynndescent knows by this name.
    metric_kwds : dict, optional
        Its parameters (``{"p": p}`` for minkowski).
    random_state : int, optional
        NN-descent's seed.
    """
    try:
        from pynndescent import NNDescent  # noqa: PLC0415 - heavy import (and JIT), only when needed
    except ImportError as exc:  # a lean install (e.g. a GPU machine with NumPy, SciPy, Numba and CuPy only)
        raise ImportError(
            f"Approximate kNN needs the pynndescent package, which is not installed ({exc}). Install it "
            "(pip install pynndescent), or ask for exact neighbours: knn='exact', or device='gpu' where a GPU is."
        ) from exc

    n = X.shape[0]
    with warnings.catch_warnings():
        # pynndescent warns when some rows lack neighbours (-1); the callers redo such rows exactly, so every row
        # ends with k neighbours and the warning would mislead.
        warnings.filterwarnings("ignore", message="Failed to correctly find n_neighbors", category=UserWarning)
        index = NNDescent(
            X,
            n_neighbors=k,
            metric=metric,
            metric_kwds=metric_kwds or None,
            random_state=random_state,
            n_trees=min(64, 5 + int(round(n**0.5 / 20.0))),
            n_iters=max(5, int(round(np.log2(n)))),
            max_candidates=60,
            low_memory=True,
            compressed=True,
            n_jobs=1 if random_state is not None else None,
            verbose=False,
        )
        found, _ = index.neighbor_graph
    cand = np.asarray(found, dtype=np.int64)
    rows = np.arange(n, dtype=np.int64)
    has_self = (cand == rows[:, None]).any(axis=1)
    cand[~has_self, -1] = rows[~has_self]
    return cand


def approx_knn(
    X: np.ndarray, n_neighbors: int, metric: str = "euclidean", random_state: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Approximate kNN by NN-descent (pynndescent), seeded; same output contract as :func:`exact_knn`.

    pynndescent's candidates (:func:`nndescent_candidates`) are re-scored exactly and re-sorted; self is forced
    into column 0; the rare row where NN-descent found fewer than k neighbours is redone exactly.
    """
    metric = check_metric(metric, GEMM_METRICS, "the GEMM search")
    X = np.ascontiguousarray(X, dtype=np.float32)
    n = X.shape[0]
    k = n_neighbors
    cand = nndescent_candidates(X, k, metric, random_state=random_state)
    rows = np.arange(n, dtype=np.int64)
    out_idx = np.empty((n, k), dtype=np.int64)
    out_dist = np.empty((n, k), dtype=np.float64)
    refine_candidates(X, X, rows, cand, k, metric == "cosine", True, out_idx, out_dist)
    short = np.flatnonzero((out_idx < 0).any(axis=1))
    if short.size:
        out_idx[short], out_dist[short] = exact_rows(X, short, k, metric, progress=False)
    return out_idx.astype(np.int32), out_dist.astype(np.float32)
