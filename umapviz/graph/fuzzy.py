"""UMAP's fuzzy simplicial set from kNN, and the low-dimensional curve parameters a, b.

Facts (from UMAP and umap-learn): per point, ``rho`` is the distance to the nearest neighbour at
non-zero distance; ``sigma`` is found by bisection so that ``sum_j exp(-max(0, d_j - rho) / sigma) = log2(k)``
over the k - 1 neighbours other than the point itself, floored at 1e-3 times the mean neighbour distance (ours:
a row whose mean distance lies beyond 2**32 or below 2**-32 is bisected in units of a power of two near it, so
the weights do not depend on the data's scale);
directed weights ``exp(-max(0, d - rho) / sigma)`` (no self-edges) are symmetrised by the fuzzy union
``A + A^T - A * A^T``.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse
from scipy.optimize import curve_fit

from .._backend import xp_of
from .._validation import check_positive_float

_BISECTION_STEPS = 64
_BISECTION_TOLERANCE = 1e-5
_MIN_SIGMA_FRACTION = 1e-3  # sigma >= this times the mean neighbour distance


@numba.njit(parallel=True, cache=True)
def _smooth_knn_dist(dists, target, global_mean, use_rho):
    """(sigma, rho) per row of float32 kNN distances (self in column 0); rho stays 0 unless ``use_rho``."""
    n, k = dists.shape
    sigma = np.zeros(n, dtype=np.float32)
    rho = np.zeros(n, dtype=np.float32)
    for i in numba.prange(n):
        # rho: first non-zero distance (rows are sorted, so the first one found is the smallest).
        for j in range(k if use_rho else 0):
            if dists[i, j] > 0.0:
                rho[i] = dists[i, j]
                break
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
        mean_row = 0.0
        for j in range(k):
            mean_row += dists[i, j]
        mean_row /= k
        ref = mean_row if rho[i] > 0.0 or (not use_rho and mean_row > 0.0) else global_mean
        if sigma[i] < _MIN_SIGMA_FRACTION * ref:
            sigma[i] = _MIN_SIGMA_FRACTION * ref
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
    knn_dists: np.ndarray, n_neighbors: int | None = None, local_connectivity: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """``(sigma, rho)`` float32 per point from sorted kNN distances (self in column 0).

    ``local_connectivity`` 1: rho is the first non-zero distance (the graph's rule); 0: rho = 0 (UMAP's rule for
    new points in ``transform``, which uses local_connectivity - 1). The bisection sums over columns 1 .. k - 1.
    """
    if local_connectivity not in (0, 1):
        raise ValueError(f"local_connectivity={local_connectivity!r}: only 0 and 1 are implemented.")
    dists = np.ascontiguousarray(knn_dists, dtype=np.float32)
    k = dists.shape[1] if n_neighbors is None else n_neighbors
    global_mean = float(np.mean(dists))
    scaled, scale = bisection_units(dists)
    sigma, rho = _smooth_knn_dist(scaled, np.log2(k), global_mean, local_connectivity == 1)
    return from_bisection_units(sigma, rho, scale)


# The bisection starts at sigma = 1 and doubles or halves it at most _BISECTION_STEPS times, so it finds sigma
# to within about 1e-5 only for distances within a few powers of two of 1 -- up to ~2**32 and down to ~2**-32.
_SIGMA_REACH = 2.0**32


def bisection_units(dists):
    """``(dists in the bisection's units, scale)`` for float32 kNN distances (NumPy or CuPy): a row whose mean
    distance lies beyond the bisection's reach is divided by a power of two near that mean (``scale``, float64 per
    row, 1 for the other rows); ``scale`` is None, and ``dists`` unchanged, when every row is within reach
    (ordinary data: nothing changes). Undo with :func:`from_bisection_units`.

    Without it, data at 1e20 got sigma <= 2**64 (every weight but the nearest's ~0: a 1e30 copy of a graph kept
    8% of its edges) and data at 1e-20 sigma at its 5e-20 floor (every weight ~1). Powers of two keep it exact:
    the weights exp(-(d - rho) / sigma) are those data of ordinary scale gets.
    """
    xp = xp_of(dists)
    mean = dists.mean(axis=1, dtype=xp.float64)
    far = xp.isfinite(mean) & (mean > 0) & ((mean > _SIGMA_REACH) | (mean < 1.0 / _SIGMA_REACH))
    if not bool(far.any()):
        return dists, None
    # floor(log2(mean)): a power of two <= the mean, so it stays a finite float32 too
    scale = xp.where(far, xp.exp2(xp.floor(xp.log2(xp.where(far, mean, 1.0)))), 1.0)
    return (dists / scale[:, None]).astype(xp.float32), scale


def from_bisection_units(sigma, rho, scale):
    """``(sigma, rho)`` in the data's units again, from those found in :func:`bisection_units`' units."""
    if scale is None:
        return sigma, rho
    return (sigma * scale).astype(sigma.dtype), (rho * scale).astype(rho.dtype)


def new_point_memberships(knn_dists: np.ndarray) -> np.ndarray:
    """Membership strengths float32 (n_new, k) of new points to their k nearest reference points, as UMAP's
    ``transform`` computes them: sigma by the usual bisection but with rho = 0 (local_connectivity 1 - 1), then
    ``w = exp(-d / sigma)`` (1 at distance 0). Every column counts, the first too: no column is the point itself.

    Each row's weights depend on that row alone (sigma's floor is 1e-3 times the row's own mean distance). A
    distance that overflowed float32 (inf, for values near float32's limit) weighs 0, never NaN.
    """
    dists = np.ascontiguousarray(knn_dists, dtype=np.float32)
    sigma, _ = smooth_knn_dist(dists, local_connectivity=0)
    sigma = sigma[:, None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        weights = np.exp(-(dists / sigma))
    weights = np.where((dists <= 0) | (sigma == 0), np.float32(1.0), weights)
    return np.where(np.isnan(weights), np.float32(0.0), weights).astype(np.float32)


def fuzzy_simplicial_set(knn_indices: np.ndarray, knn_dists: np.ndarray) -> scipy.sparse.csr_matrix:
    """The symmetric fuzzy graph (n x n, float32 CSR, sorted indices, no explicit zeros) from kNN.

    ``knn_indices`` (n, k) with self in column 0 (-1 marks a missing neighbour); ``knn_dists`` the matching
    distances, each row sorted ascending.
    """
    indices = np.ascontiguousarray(knn_indices, dtype=np.int64)
    dists = np.ascontiguousarray(knn_dists, dtype=np.float32)
    if indices.shape != dists.shape or indices.ndim != 2:
        raise ValueError(
            f"knn_indices {indices.shape} and knn_dists {dists.shape} must be 2-D arrays of the same shape."
        )
    n, k = indices.shape
    sigma, rho = smooth_knn_dist(dists)
    vals = _memberships(indices, dists, sigma, rho)
    rows = np.repeat(np.arange(n, dtype=np.int64), k)
    cols = indices.ravel()
    keep = vals != 0
    directed = scipy.sparse.csr_matrix((vals[keep], (rows[keep], cols[keep])), shape=(n, n), dtype=np.float32)
    transposed = directed.T.tocsr()
    union = directed + transposed - directed.multiply(transposed)
    union = scipy.sparse.csr_matrix(union, dtype=np.float32)
    union.eliminate_zeros()
    union.sort_indices()
    return union


def find_ab_params(spread: float = 1.0, min_dist: float = 0.1) -> tuple[float, float]:
    """Fit ``1 / (1 + a x^(2b))`` to UMAP's target curve: 1 up to ``min_dist``, then
    ``exp(-(x - min_dist) / spread)``, sampled on [0, 3 spread]. Gives a ~ 1.577, b ~ 0.895 for (1.0, 0.1).
    """
    spread = check_positive_float("spread", spread, "1.0 is the usual value")
    min_dist = check_positive_float("min_dist", min_dist, "0.1 is the usual value", allow_zero=True)
    if not min_dist <= spread:
        raise ValueError(
            f"min_dist={min_dist!r} must lie in [0, spread={spread!r}]; the usual value is 0.1 with spread 1.0."
        )

    def curve(x, a, b):
        return 1.0 / (1.0 + a * x ** (2 * b))

    # The target curve at spread s is the spread-1 curve of x / s (with min_dist / s), so fit at spread 1,
    # where the default start (a, b) = (1, 1) converges; at small spread (<= ~0.2) a direct fit diverged to
    # negative a, b. Rescaling back is exact: 1 / (1 + a1 (x / s)^(2 b1)) = 1 / (1 + a1 s^(-2 b1) x^(2 b1)).
    # At spread 1.0 the arithmetic is the same as a direct fit, so default a, b (and graph fingerprints) are unchanged.
    relative_min_dist = min_dist / spread
    x = np.linspace(0, 3.0, 300)
    y = np.where(x < relative_min_dist, 1.0, np.exp(-(x - relative_min_dist)))
    (a1, b1), _ = curve_fit(curve, x, y)
    a, b = float(a1 * spread ** (-2 * b1)), float(b1)
    if not (np.isfinite(a) and np.isfinite(b) and a > 0 and b > 0):
        raise ValueError(
            f"Fitting the curve for spread={spread!r}, min_dist={min_dist!r} gave a={a!r}, b={b!r}, but both must be "
            "finite and positive. Use values nearer the usual spread=1.0, min_dist=0.1."
        )
    return a, b
