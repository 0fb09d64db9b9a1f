"""UMAP's fuzzy simplicial set from kNN, on the CPU.

Facts (from UMAP and umap-learn): per point, ``rho`` is the distance to the nearest neighbour at
non-zero distance; ``sigma`` is found by bisection so that ``sum_j exp(-max(0, d_j - rho) / sigma) = log2(k)``
over the k - 1 neighbours other than the point itself, floored at 1e-3 times the mean neighbour distance (ours:
a row whose mean distance lies beyond 2**32 or below 2**-32 is bisected in units of a power of two near it, so
the weights do not depend on the data's scale);
directed weights ``exp(-max(0, d - rho) / sigma)`` (no self-edges) are symmetrised by the fuzzy union
``A + A^T - A * A^T``.

The arithmetic is umap-learn's, operation for operation: the bisection's exp is the C library's ``exp`` of a
float64, a membership's the C library's ``expf`` of a float32 (what Numba's ``np.exp`` calls), so the fuzzy set
equals umap-learn's bit for bit. fuzzy_gpu.cu computes the same with twins of glibc's exp and expf: a change to
this arithmetic is a change to that file's.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse

from . import bisection_units, from_bisection_units

_BISECTION_STEPS = 64
_BISECTION_TOLERANCE = 1e-5
_MIN_SIGMA_FRACTION = 1e-3  # sigma >= this times the mean neighbour distance


@numba.njit(parallel=True, cache=True)
def _smooth_knn_dist(dists, target, global_mean, local_connectivity, new_points):
    """(sigma, rho) per row of float32 kNN distances (self in column 0); rho as umap-learn interpolates it among
    the row's non-zero distances at ``local_connectivity`` (0 for ``new_points``: rho = 0)."""
    n, k = dists.shape
    sigma = np.zeros(n, dtype=np.float32)
    rho = np.zeros(n, dtype=np.float32)
    for i in numba.prange(n):
        non_zero = dists[i][dists[i] > 0.0]  # sorted rows: the first is the smallest
        if new_points:
            pass
        elif non_zero.shape[0] >= local_connectivity:
            index = int(np.floor(local_connectivity))
            interpolation = local_connectivity - index
            if index > 0:
                rho[i] = non_zero[index - 1]
                if interpolation > _BISECTION_TOLERANCE:
                    rho[i] += interpolation * (non_zero[index] - non_zero[index - 1])
            else:
                rho[i] = interpolation * non_zero[0]
        elif non_zero.shape[0] > 0:
            rho[i] = np.max(non_zero)
        lo = 0.0
        hi = np.inf
        mid = 1.0
        for _ in range(_BISECTION_STEPS):
            total = 0.0
            for j in range(1, k):
                gap = dists[i, j] - rho[i]
                total += np.exp(-(gap / mid)) if gap > 0 else 1.0
            if abs(total - target) < _BISECTION_TOLERANCE:
                break
            if total > target:  # too much mass: narrow the kernel
                hi = mid
                mid = (lo + hi) / 2.0
            else:
                lo = mid
                mid = mid * 2.0 if hi == np.inf else (lo + hi) / 2.0
        sigma[i] = mid
        # A point whose neighbours sit almost at rho would get sigma ~ 0; floor it relative to the
        # typical distance (its own row's, or all rows' when every neighbour is a duplicate). With rho = 0 (new
        # points) the row's own mean too whenever it has a non-zero distance: umap-learn's all-rows mean there
        # let one far point in a batch floor every other point's sigma (all their weights then near 1).
        # The row's mean as umap-learn's np.mean computes it in Numba: a float32 sum, divided in float64, as float32.
        sum_row = np.float32(0.0)
        for j in range(k):
            sum_row += dists[i, j]
        mean_row = np.float64(np.float32(sum_row / k))
        ref = mean_row if rho[i] > 0.0 or (new_points and mean_row > 0.0) else global_mean
        # A float32 product, as umap-learn's Numba code computes it (its operands are float32 there).
        floor = np.float32(_MIN_SIGMA_FRACTION) * np.float32(ref)
        if sigma[i] < floor:
            sigma[i] = floor
    return sigma, rho


@numba.njit(parallel=True, cache=True)
def _memberships(indices, dists, sigma, rho):
    """Directed membership strengths, flat (n * k), 0 for self-edges and missing (-1) neighbours."""
    n, k = indices.shape
    vals = np.zeros(n * k, dtype=np.float32)
    for i in numba.prange(n):
        for j in range(k):
            nb = indices[i, j]
            if nb < 0 or nb == i:
                continue
            gap = dists[i, j] - rho[i]
            if gap <= 0.0 or sigma[i] == 0.0:
                vals[i * k + j] = 1.0
            else:
                vals[i * k + j] = np.exp(-(gap / sigma[i]))
    return vals


def smooth_knn_dist(
    knn_dists: np.ndarray, n_neighbors: int | None = None, local_connectivity: float = 1.0, new_points: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """``(sigma, rho)`` float32 per point from sorted kNN distances (self in column 0).

    ``local_connectivity`` (umap-learn's, >= 0): rho is the row's non-zero distance at that rank, interpolated
    between ranks (1: the first non-zero distance, the default). ``new_points``: UMAP's rule for new points in
    ``transform`` (rho = 0; ours: sigma's floor from the row's own mean). The bisection sums over columns
    1 .. k - 1.
    """
    check_local_connectivity(local_connectivity)
    dists = np.ascontiguousarray(knn_dists, dtype=np.float32)
    k = dists.shape[1] if n_neighbors is None else n_neighbors
    global_mean = float(np.mean(dists))
    scaled, scale = bisection_units(dists)
    sigma, rho = _smooth_knn_dist(scaled, np.log2(k), global_mean, float(local_connectivity), new_points)
    return from_bisection_units(sigma, rho, scale)


def check_local_connectivity(local_connectivity) -> float:
    """``local_connectivity`` as a float, or a ValueError: a finite number >= 0 (umap-learn's default 1).

    Parameters
    ----------
    local_connectivity : float
        umap-learn's ``local_connectivity``.
    """
    ok = isinstance(local_connectivity, (int, float, np.number)) and not isinstance(local_connectivity, bool)
    if not ok or not (np.isfinite(local_connectivity) and local_connectivity >= 0):
        raise ValueError(
            f"local_connectivity={local_connectivity!r} must be a finite number >= 0 (1 is the usual value; more "
            "than the data's local intrinsic dimension is rarely useful)."
        )
    return float(local_connectivity)


def new_point_memberships(knn_dists: np.ndarray) -> np.ndarray:
    """Membership strengths float32 (n_new, k) of new points to their k nearest reference points, as UMAP's
    ``transform`` computes them: sigma by the usual bisection but with rho = 0 (local_connectivity 1 - 1), then
    ``w = exp(-d / sigma)`` (1 at distance 0). Every column counts, the first too: no column is the point itself.

    Each row's weights depend on that row alone (sigma's floor is 1e-3 times the row's own mean distance). A
    distance that overflowed float32 (inf, for values near float32's limit) weighs 0, never NaN.
    """
    dists = np.ascontiguousarray(knn_dists, dtype=np.float32)
    sigma, _ = smooth_knn_dist(dists, new_points=True)
    sigma = sigma[:, None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        weights = np.exp(-(dists / sigma))
    weights = np.where((dists <= 0) | (sigma == 0), np.float32(1.0), weights)
    return np.where(np.isnan(weights), np.float32(0.0), weights).astype(np.float32)


def fuzzy_simplicial_set(
    knn_indices: np.ndarray, knn_dists: np.ndarray, local_connectivity: float = 1.0, set_op_mix_ratio: float = 1.0
) -> scipy.sparse.csr_matrix:
    """The symmetric fuzzy graph (n x n, float32 CSR, sorted indices, no explicit zeros) from kNN.

    Parameters
    ----------
    knn_indices : numpy.ndarray
        (n, k) with self in column 0 (-1 marks a missing neighbour).
    knn_dists : numpy.ndarray
        The matching distances, each row sorted ascending.
    local_connectivity : float
        umap-learn's: the rank among each row's non-zero distances that sets rho (see :func:`smooth_knn_dist`).
    set_op_mix_ratio : float
        umap-learn's, in [0, 1]: 1 the fuzzy union ``A + A^T - A * A^T``, 0 the intersection ``A * A^T``,
        between them ``r (A + A^T - A * A^T) + (1 - r) A * A^T`` (SciPy's arithmetic, as umap-learn's).
    """
    check_set_op_mix_ratio(set_op_mix_ratio)
    indices = np.ascontiguousarray(knn_indices, dtype=np.int64)
    dists = np.ascontiguousarray(knn_dists, dtype=np.float32)
    if indices.shape != dists.shape or indices.ndim != 2:
        raise ValueError(
            f"knn_indices {indices.shape} and knn_dists {dists.shape} must be 2-D arrays of the same shape."
        )
    n, k = indices.shape
    sigma, rho = smooth_knn_dist(dists, local_connectivity=check_local_connectivity(local_connectivity))
    vals = _memberships(indices, dists, sigma, rho)
    if set_op_mix_ratio != 1.0:
        return _mixed_union(indices, vals, n, float(set_op_mix_ratio))
    d_ptr, d_cols, d_vals = _directed_rows(indices, vals)
    t_ptr, t_cols, t_vals = _transposed(d_ptr, d_cols, d_vals, n)
    ptr = np.zeros(n + 1, dtype=np.int64)
    empty_i, empty_f = np.empty(0, dtype=np.int32), np.empty(0, dtype=np.float32)
    _union_rows(d_ptr, d_cols, d_vals, t_ptr, t_cols, t_vals, True, ptr, empty_i, empty_f)
    np.cumsum(ptr, out=ptr)
    cols, weights = np.empty(int(ptr[-1]), dtype=np.int32), np.empty(int(ptr[-1]), dtype=np.float32)
    _union_rows(d_ptr, d_cols, d_vals, t_ptr, t_cols, t_vals, False, ptr, cols, weights)
    return scipy.sparse.csr_matrix((weights, cols, ptr), shape=(n, n))


def _mixed_union(indices: np.ndarray, vals: np.ndarray, n: int, ratio: float) -> scipy.sparse.csr_matrix:
    """umap-learn's mix of fuzzy union and intersection, by its SciPy operations (so the same bytes)."""
    rows = np.repeat(np.arange(n, dtype=np.int64), indices.shape[1])
    cols = np.where(indices.ravel() < 0, 0, indices.ravel())
    result = scipy.sparse.coo_matrix((vals, (rows, cols)), shape=(n, n))
    result.eliminate_zeros()
    transpose = result.transpose()
    product = result.multiply(transpose)
    result = ratio * (result + transpose - product) + (1.0 - ratio) * product
    result.eliminate_zeros()
    result = result.tocsr().astype(np.float32)
    result.sort_indices()
    return result


def check_set_op_mix_ratio(ratio) -> float:
    """``set_op_mix_ratio`` as a float, or a ValueError: a number in [0, 1] (umap-learn's default 1).

    Parameters
    ----------
    ratio : float
        umap-learn's ``set_op_mix_ratio``.
    """
    ok = isinstance(ratio, (int, float, np.number)) and not isinstance(ratio, bool)
    if not ok or not 0.0 <= ratio <= 1.0:
        raise ValueError(
            f"set_op_mix_ratio={ratio!r} must be a number in [0, 1]: 1 the fuzzy union (usual), 0 the intersection."
        )
    return float(ratio)


# The fuzzy union A + A^T - A * A^T as SciPy's sparse arithmetic computes it (which umap-learn uses), in one pass per
# row: the directed rows sorted by column, a neighbour listed twice in a row summed (float32), then per entry
# (a + b) - a * b in float32 where both directions exist and the one value where one does; zero results dropped.


@numba.njit(parallel=True, cache=True)
def _directed_rows(indices, vals):
    """The directed memberships as CSR rows: each row's non-zero entries sorted by column, a column listed more than
    once summed in the row's order (SciPy's order too, whose sort of a row of up to 16 entries is an insertion sort;
    beyond that its order of equal columns is unspecified)."""
    n, k = indices.shape
    counts = np.zeros(n + 1, dtype=np.int64)
    slot_cols = np.empty(n * k, dtype=np.int32)
    slot_vals = np.empty(n * k, dtype=np.float32)
    for i in numba.prange(n):
        m = 0
        for j in range(k):  # a stable insertion sort by column: k is small
            v = vals[i * k + j]
            if v == 0:
                continue
            c = indices[i, j]
            at = i * k + m
            while at > i * k and slot_cols[at - 1] > c:
                slot_cols[at] = slot_cols[at - 1]
                slot_vals[at] = slot_vals[at - 1]
                at -= 1
            slot_cols[at] = c
            slot_vals[at] = v
            m += 1
        out = 0
        for j in range(m):  # sum a repeated column in place
            if out > 0 and slot_cols[i * k + out - 1] == slot_cols[i * k + j]:
                slot_vals[i * k + out - 1] = slot_vals[i * k + out - 1] + slot_vals[i * k + j]
            else:
                slot_cols[i * k + out] = slot_cols[i * k + j]
                slot_vals[i * k + out] = slot_vals[i * k + j]
                out += 1
        counts[i + 1] = out
    ptr = np.cumsum(counts)
    cols = np.empty(ptr[-1], dtype=np.int32)
    out_vals = np.empty(ptr[-1], dtype=np.float32)
    for i in numba.prange(n):
        for j in range(ptr[i + 1] - ptr[i]):
            cols[ptr[i] + j] = slot_cols[i * k + j]
            out_vals[ptr[i] + j] = slot_vals[i * k + j]
    return ptr, cols, out_vals


@numba.njit(cache=True)
def _transposed(ptr, cols, vals, n):
    """The transpose of CSR rows (a counting sort by column: each row of the transpose in ascending order)."""
    t_ptr = np.zeros(n + 1, dtype=np.int64)
    for p in range(cols.size):
        t_ptr[cols[p] + 1] += 1
    for c in range(n):
        t_ptr[c + 1] += t_ptr[c]
    fill = t_ptr[:-1].copy()
    t_cols = np.empty(cols.size, dtype=np.int32)
    t_vals = np.empty(cols.size, dtype=np.float32)
    for i in range(n):
        for p in range(ptr[i], ptr[i + 1]):
            at = fill[cols[p]]
            t_cols[at] = i
            t_vals[at] = vals[p]
            fill[cols[p]] += 1
    return t_ptr, t_cols, t_vals


@numba.njit(parallel=True, cache=True)
def _union_rows(d_ptr, d_cols, d_vals, t_ptr, t_cols, t_vals, counts_only, ptr, cols, weights):
    """Per row, the merge of its directed row and its transposed row: with ``counts_only`` how many non-zero entries
    (into ``ptr[i + 1]``), else the columns and float32 weights from ``ptr[i]``."""
    n = d_ptr.size - 1
    for i in numba.prange(n):
        p, q, q_end, p_end = d_ptr[i], t_ptr[i], t_ptr[i + 1], d_ptr[i + 1]
        at = 0 if counts_only else ptr[i]
        while p < p_end or q < q_end:
            if q >= q_end or (p < p_end and d_cols[p] < t_cols[q]):
                c, w = d_cols[p], d_vals[p]
                p += 1
            elif p >= p_end or t_cols[q] < d_cols[p]:
                c, w = t_cols[q], t_vals[q]
                q += 1
            else:
                a, b = d_vals[p], t_vals[q]
                c, w = d_cols[p], (a + b) - a * b
                p += 1
                q += 1
            if w != 0:
                if not counts_only:
                    cols[at] = c
                    weights[at] = w
                at += 1
        if counts_only:
            ptr[i + 1] = at
