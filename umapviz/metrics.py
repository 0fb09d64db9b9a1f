"""Measures of a layout: outliers, trustworthiness, and a fingerprint of the exact bytes.

Every function takes NumPy arrays, and CuPy arrays on the GPU: the array module is picked from the
embedding (``umapviz._backend.xp_of``) and the work stays on that device; only scalars (counts,
medians, and the 8-byte sum that ``fingerprint`` hashes) come back to the host.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from ._backend import to_host, xp_of
from ._validation import (
    RandomStateLike,
    check_int,
    check_positive_float,
    check_random_state,
    describe_rows,
    non_finite_rows,
)
from .graph.knn import scaled_rows
from .graph.knn.knn_cpu import query_knn
from .graph.knn.knn_gpu import query_knn_gpu

METHODS = ("neighbors", "bounds", "radius")

# "neighbors": a point is an outlier when the distance to its nearest graph neighbour exceeds
# NEIGHBOR_FACTOR x the median of that distance over all points. The rule: above the largest ratio of any clean
# sequential layout of the built-in sets, far below the ratios of points flung by stale buffered updates
# (bench/OUTLIER_DATASETS.md, "Outlier thresholds", has both). 1-D manifolds (moons, circles) are where it is
# least safe: points strung along a curve have a tiny median gap and a curve that the layout tears leaves large
# gaps, so read this measure beside "bounds" or "radius" there.
NEIGHBOR_FACTOR = 20.0
# "bounds": outside the reference's per-axis [min - N_STD std, max + N_STD std] (the GPU implementation's
# own test, with 2).
BOUNDS_N_STD = 2.0
# "radius": farther from the coordinate-wise median than median + RADIUS_N_MAD x MAD of that distance (MAD
# scaled by 1.4826 to estimate a standard deviation). Needs no reference and no graph. The rule: a margin above
# the farthest point of the same clean layouts, for layouts whose clusters spread unevenly, far below where flung
# points lie (bench/OUTLIER_DATASETS.md, "Outlier thresholds").
RADIUS_N_MAD = 6.0
_MAD_TO_STD = 1.4826

# Trustworthiness looks at this many query points at most unless told otherwise (see trustworthiness).
TRUST_AUTO_SAMPLE = 2000

# Elements of one block of trustworthiness's query-by-point distances: they bound its temporary memory (a few
# float32/float64 copies of a block); the GPU's blocks are larger since each is one GEMM over all of X, so fewer
# blocks are faster.
_ELEMENTS_PER_BLOCK = 1 << 24
_GPU_ELEMENTS_PER_BLOCK = 1 << 29


# ---------------------------------------------------------------------------------------------------
# Outliers.
# ---------------------------------------------------------------------------------------------------


def outliers(
    embedding: Any,
    graph: Any = None,
    method: str = "neighbors",
    reference: Any = None,
    *,
    factor: float = NEIGHBOR_FACTOR,
    n_std: float = BOUNDS_N_STD,
    n_mad: float = RADIUS_N_MAD,
) -> Any:
    """Boolean mask (n,) of the points that a layout flung away, on the embedding's device.

    method:
      - ``"neighbors"`` (needs ``graph``): the distance from a point to its nearest graph neighbour is
        more than ``factor`` x the median of that distance over all points (median over points with a
        non-zero distance, so duplicate points do not make it zero). Misfires on 1-D manifolds where
        the layout tears curves: read it beside "bounds" or "radius".
      - ``"bounds"`` (needs ``reference``, e.g. the sequential layout of the same graph): outside the
        reference's per-axis [min - n_std std, max + n_std std].
      - ``"radius"``: distance from the coordinate-wise median beyond median + n_mad x 1.4826 MAD of
        those distances.

    Rows with NaN or inf are always outliers.

    Parameters
    ----------
    embedding : numpy.ndarray or cupy.ndarray
        (n, dim) layout.
    graph : FuzzyGraph or array-like, optional
        For ``"neighbors"``: a FuzzyGraph (its ``knn_indices`` are the neighbours) or an (n, k) integer array of
        neighbour indices; a point's own index and negative entries are ignored.
    method : str
        ``"neighbors"``, ``"bounds"`` or ``"radius"`` (above).
    reference : numpy.ndarray or cupy.ndarray, optional
        For ``"bounds"``: the layout to measure against, of the same shape.
    factor, n_std, n_mad : float
        The thresholds of the three methods (defaults: NEIGHBOR_FACTOR, BOUNDS_N_STD, RADIUS_N_MAD).
    """
    Y = _check_embedding(embedding)
    xp = xp_of(Y)
    # A negative or NaN threshold flagged every point or none, and looked like a result.
    factor = check_positive_float("factor", factor, f"{NEIGHBOR_FACTOR:g} is the default")
    n_std = check_positive_float("n_std", n_std, f"{BOUNDS_N_STD:g} is the default", allow_zero=True)
    n_mad = check_positive_float("n_mad", n_mad, f"{RADIUS_N_MAD:g} is the default", allow_zero=True)
    if method == "neighbors":
        d = neighbor_distances(Y, graph)
        finite_d = d[xp.isfinite(d) & (d > 0)]
        if finite_d.size == 0:  # every point coincides with its neighbours: nothing stands out
            return ~_finite_rows(Y)
        typical = float(xp.median(finite_d))
        flagged = xp.isfinite(d) & (d > factor * typical)
    elif method == "bounds":
        if reference is None:
            raise ValueError(
                "method='bounds' needs reference=: the embedding to measure against, e.g. the 'sequential' "
                "strategy's layout of the same graph. Use method='radius' or 'neighbors' to go without one."
            )
        reference = _check_embedding(reference, what="reference")
        if reference.shape != Y.shape:
            raise ValueError(
                f"reference has shape {tuple(reference.shape)} but the embedding has {tuple(Y.shape)}: "
                "compare layouts of the same points."
            )
        lo, hi = reference_bounds(reference, n_std=n_std)
        lo, hi = xp.asarray(lo), xp.asarray(hi)
        flagged = xp.any((Y < lo) | (Y > hi), axis=1)
    elif method == "radius":
        r = radii(Y)
        finite_r = r[xp.isfinite(r)]
        if finite_r.size == 0:
            return ~_finite_rows(Y)
        med = xp.median(finite_r)
        mad = xp.median(xp.abs(finite_r - med)) * _MAD_TO_STD
        flagged = r > med + n_mad * mad
    else:
        raise ValueError(f"Unknown outlier method {method!r}; choose one of {METHODS}.")
    return flagged | ~_finite_rows(Y)


def neighbor_distances(embedding: Any, graph: Any) -> Any:
    """Per point, the embedding distance to its nearest graph neighbour (inf when it has none).

    Parameters
    ----------
    embedding : numpy.ndarray or cupy.ndarray
        (n, dim) layout.
    graph : FuzzyGraph or array-like
        A FuzzyGraph or an (n, k) integer array of neighbour indices (as :func:`outliers` takes it).
    """
    Y = _check_embedding(embedding)
    xp = xp_of(Y)
    nbrs = _neighbor_indices(graph, Y.shape[0], xp)
    n, k = nbrs.shape
    out = xp.empty(n, dtype=xp.float64)
    rows_per_block = max(1, _ELEMENTS_PER_BLOCK // max(1, k * Y.shape[1]))
    for start in range(0, n, rows_per_block):
        stop = min(n, start + rows_per_block)
        idx = nbrs[start:stop]
        own = xp.arange(start, stop)[:, None]
        valid = (idx >= 0) & (idx != own)
        diff = Y[xp.where(valid, idx, own)].astype(xp.float64) - Y[start:stop, None, :].astype(xp.float64)
        d = xp.sqrt((diff * diff).sum(axis=2))
        out[start:stop] = xp.where(valid, d, xp.inf).min(axis=1)
    return out


def reference_bounds(reference: Any, n_std: float = BOUNDS_N_STD) -> tuple[np.ndarray, np.ndarray]:
    """Per-axis (lo, hi) = (min - n_std std, max + n_std std) of a reference embedding, as NumPy arrays.

    Parameters
    ----------
    reference : numpy.ndarray or cupy.ndarray
        (n, dim) layout.
    n_std : float
        Standard deviations beyond the extremes.
    """
    R = _check_embedding(reference, what="reference")
    n_std = check_positive_float("n_std", n_std, f"{BOUNDS_N_STD:g} is the default", allow_zero=True)
    xp = xp_of(R)
    R = R[_finite_rows(R)].astype(xp.float64)
    if R.shape[0] == 0:
        raise ValueError("reference has no finite rows: it cannot define bounds.")
    std = R.std(axis=0)
    return to_host(R.min(axis=0) - n_std * std), to_host(R.max(axis=0) + n_std * std)


def radii(embedding: Any) -> Any:
    """Per point, the distance from the coordinate-wise median of the embedding (NaN rows give NaN).

    Parameters
    ----------
    embedding : numpy.ndarray or cupy.ndarray
        (n, dim) layout.
    """
    Y = _check_embedding(embedding)
    xp = xp_of(Y)
    finite = _finite_rows(Y)
    centre = xp.median(Y[finite].astype(xp.float64), axis=0) if bool(finite.any()) else 0.0
    diff = Y.astype(xp.float64) - centre
    return xp.sqrt((diff * diff).sum(axis=1))


def outlier_summary(embedding: Any, graph: Any = None, reference: Any = None) -> dict[str, Any]:
    """Counts for a table: outliers by each method that applies, and how far the farthest point lies.

    Keys: ``neighbors`` (None without a graph), ``bounds`` (None without a reference), ``radius``,
    ``max_radius`` and ``median_radius`` (distance from the coordinate-wise median), and
    ``max_gap_ratio`` (largest nearest-neighbour distance over the median one; None without a graph).

    Parameters
    ----------
    embedding : numpy.ndarray or cupy.ndarray
        (n, dim) layout.
    graph : FuzzyGraph or array-like, optional
        Neighbours, as :func:`outliers` takes them.
    reference : numpy.ndarray or cupy.ndarray, optional
        The layout to measure ``bounds`` against.
    """
    Y = _check_embedding(embedding)
    xp = xp_of(Y)
    r = radii(Y)
    finite_r = r[xp.isfinite(r)]
    summary: dict[str, Any] = {
        "neighbors": None,
        "bounds": None,
        "radius": int(outliers(Y, method="radius").sum()),
        "max_radius": float(finite_r.max()) if finite_r.size else float("nan"),
        "median_radius": float(xp.median(finite_r)) if finite_r.size else float("nan"),
        "max_gap_ratio": None,
    }
    if graph is not None:
        summary["neighbors"] = int(outliers(Y, graph, method="neighbors").sum())
        d = neighbor_distances(Y, graph)
        d = d[xp.isfinite(d) & (d > 0)]
        if d.size:
            summary["max_gap_ratio"] = float(d.max() / xp.median(d))
    if reference is not None:
        summary["bounds"] = int(outliers(Y, method="bounds", reference=reference).sum())
    return summary


# ---------------------------------------------------------------------------------------------------
# Trustworthiness.
# ---------------------------------------------------------------------------------------------------


def trustworthiness(
    X: Any,
    embedding: Any,
    n_neighbors: int = 5,
    sample: int | None = None,
    random_state: RandomStateLike = 0,
    metric: str = "euclidean",
) -> float:
    """How well the embedding's neighbourhoods are true neighbourhoods of X, in [0, 1] (1 = all are).

    scikit-learn's definition (Venna and Kaski): each embedding neighbour j of i that is not among i's
    ``n_neighbors`` nearest in X costs (rank of j among i's neighbours in X) - n_neighbors, and
    T = 1 - 2 / (n k (2n - 3k - 1)) x the total cost. The embedding neighbours are the exact kNN search's
    (:func:`umapviz.graph.knn.knn_cpu.query_knn` or its GPU twin; ties by index).

    Subsampling: the cost is a sum over points i, each costing one pass over all n points, so the sum
    is estimated from ``sample`` query points drawn without replacement (``random_state`` fixes which,
    so layouts of the same data are compared on the same points; a NumPy RandomState / Generator gives one
    seed drawn from it) and scaled by n / sample. Every neighbour search still runs over all n points.
    ``sample=None`` uses every point up to ``TRUST_AUTO_SAMPLE`` (2,000) and that many beyond; then the
    estimate's standard error is typically a few thousandths. With every point used the value equals
    scikit-learn's (ties aside).

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray
        (n, n_features) data, one row per embedded point.
    embedding : numpy.ndarray or cupy.ndarray
        (n, dim) layout, on the device the work runs on.
    n_neighbors : int
        Neighbourhood size k.
    sample : int, optional
        Query points (above); None: every point up to TRUST_AUTO_SAMPLE, that many beyond.
    random_state : int, None, numpy.random.RandomState or numpy.random.Generator
        Which query points are drawn.
    metric : str
        ``"euclidean"`` or ``"cosine"``, for X; the embedding is always euclidean.
    """
    Y = _check_embedding(embedding)
    xp = xp_of(Y)
    X = _check_embedding(X, what="X")
    if X.shape[0] != Y.shape[0]:
        raise ValueError(
            f"X has shape {tuple(X.shape)} and the embedding {tuple(Y.shape)}: X must be 2-D with one row "
            "per embedded point."
        )
    if X.dtype.kind != "f":
        X = X.astype(xp.float64)
    _require_finite(Y, "embedding", "the layout diverged there (metrics.outliers counts such rows as outliers)")
    _require_finite(X, "X", "clean the data first (build_graph refuses such rows too)")
    if metric not in ("euclidean", "cosine"):
        raise ValueError(f"Unknown metric {metric!r}; trustworthiness supports 'euclidean' and 'cosine'.")
    n = X.shape[0]
    k = check_int("n_neighbors", n_neighbors)
    if k < 1 or k >= n / 2:
        raise ValueError(f"n_neighbors must be at least 1 and below n / 2 = {n / 2:g}; got {n_neighbors}.")
    n_queries = min(n, TRUST_AUTO_SAMPLE) if sample is None else check_int("sample", sample)
    if not 1 <= n_queries <= n:
        raise ValueError(f"sample must be between 1 and the number of points ({n}); got {sample}.")
    if n_queries == n:
        queries = np.arange(n)
    else:
        rng = np.random.default_rng(check_random_state(random_state))
        queries = np.sort(rng.choice(n, size=n_queries, replace=False))

    nbr_y = _embedding_neighbors(Y, queries, k)
    # Ranks in X come from |a|^2 + |b|^2 - 2 a.b, which cancels when the rows sit far from the origin (float32 data
    # offset by 1e3 scored 0.92 instead of 0.91) and overflows or underflows far from unit scale (1.0 at 1e20 and
    # 1e-25): centre and scale first, as the kNN search does. Neither changes a euclidean rank; cosine is only scaled.
    dtype = xp.promote_types(X.dtype, xp.float32)  # the data's precision, float32 at least
    X = scaled_rows(X, dtype, centre=metric != "cosine", unit_rows=metric == "cosine")[0]
    x_sq = (X * X).sum(axis=1)

    total_cost = 0.0
    rows_per_block = max(1, (_ELEMENTS_PER_BLOCK if xp is np else _GPU_ELEMENTS_PER_BLOCK) // (4 * n))
    for start in range(0, n_queries, rows_per_block):
        q = xp.asarray(queries[start : start + rows_per_block])
        rows = xp.arange(q.shape[0])
        # Ranks in X: 1 + how many points are strictly closer to the query than that neighbour.
        dx = x_sq[q][:, None] + x_sq[None, :] - 2.0 * (X[q] @ X.T)
        dx[rows, q] = xp.inf
        threshold = xp.take_along_axis(dx, nbr_y[start : start + rows_per_block], axis=1)
        for j in range(k):  # one neighbour column at a time keeps the comparison contiguous and small
            rank = 1 + xp.count_nonzero(dx < threshold[:, j : j + 1], axis=1)
            total_cost += float(xp.maximum(rank - k, 0).sum())
    return 1.0 - total_cost * 2.0 / (n_queries * k * (2.0 * n - 3.0 * k - 1.0))


def _embedding_neighbors(Y: Any, queries: np.ndarray, k: int) -> Any:
    """The k nearest other points in the embedding Y of each query row (on Y's device): the exact kNN search's
    k + 1 nearest (ties by index) without the query itself, or without the last should k + 1 points at the
    query's place push the query out. The search keeps a few candidates a row as it goes; selecting from whole
    rows of distances would sort them on the GPU (CuPy's argpartition is a full sort), n log n work per query."""
    xp = xp_of(Y)
    if xp is np:
        idx, _ = query_knn(Y, Y[queries], k + 1, "euclidean")
    else:
        idx, _ = query_knn_gpu(Y, Y[xp.asarray(queries)], k + 1, "euclidean")
    own = idx == queries[:, None]
    own[~own.any(axis=1), -1] = True
    return xp.asarray(idx[~own].reshape(len(queries), k))


# ---------------------------------------------------------------------------------------------------
# Fingerprint.
# ---------------------------------------------------------------------------------------------------


def fingerprint(embedding: Any) -> str:
    """16 hex characters that change with any bit of the array, its shape or its dtype.

    Two layouts have the same fingerprint only if they are bitwise equal (up to a 64-bit hash collision).
    The array's bytes are read as 64-bit words, each word is mixed with its position (SplitMix64's
    finaliser) and the results are summed modulo 2**64: an order-free sum, so NumPy and CuPy give the same
    value and a CuPy array is hashed where it lives (only 8 bytes come back). Shape, dtype and that sum then
    go through blake2b.

    Parameters
    ----------
    embedding : numpy.ndarray or cupy.ndarray
        Any array; hashed on its own device.
    """
    if embedding is None:
        raise TypeError("fingerprint needs an array (NumPy or CuPy), got None.")
    xp = xp_of(embedding)
    arr = xp.ascontiguousarray(xp.asarray(embedding))
    if arr.dtype.kind not in "biufc":
        raise TypeError(f"fingerprint hashes numeric arrays; got dtype {arr.dtype}.")
    data = arr.reshape(-1).view(xp.uint8)
    if data.size % 8:
        data = xp.concatenate([data, xp.zeros(8 - data.size % 8, dtype=xp.uint8)])
    words = data.view(xp.uint64)
    position = xp.arange(words.size, dtype=xp.uint64) * xp.uint64(0x9E3779B97F4A7C15)
    total = int(_mix64(xp, words ^ position).sum(dtype=xp.uint64)) if words.size else 0
    h = hashlib.blake2b(digest_size=8)
    h.update(repr((tuple(arr.shape), arr.dtype.str)).encode())
    h.update(total.to_bytes(8, "little"))
    return h.hexdigest()


def _mix64(xp: Any, z: Any) -> Any:
    """SplitMix64's finaliser on a uint64 array (wrapping arithmetic)."""
    z = (z ^ (z >> xp.uint64(30))) * xp.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> xp.uint64(27))) * xp.uint64(0x94D049BB133111EB)
    return z ^ (z >> xp.uint64(31))


# ---------------------------------------------------------------------------------------------------
# Checks.
# ---------------------------------------------------------------------------------------------------


def _check_embedding(embedding: Any, what: str = "embedding") -> Any:
    """``embedding`` (or data ``X``) as a non-empty 2-D array of real numbers, NumPy or CuPy."""
    if embedding is None:
        coordinates = "" if what == "X" else " of layout coordinates"
        raise ValueError(f"{what} is None; pass an (n, dim) array{coordinates}.")
    xp = xp_of(embedding)
    try:
        Y = xp.asarray(embedding)
    except (TypeError, ValueError) as exc:  # ragged lists and the like
        raise ValueError(
            f"{what} could not be read as a 2-D numeric array ({exc.__class__.__name__}: {exc}). Pass an array of "
            "shape (n_points, dim), or a list of equal-length rows."
        ) from exc
    if Y.ndim != 2 or Y.shape[0] == 0 or Y.shape[1] == 0:
        raise ValueError(f"{what} must be a non-empty 2-D array (n_points, dim); got shape {tuple(Y.shape)}.")
    if Y.dtype.kind not in "biuf":  # complex values were ranked by their real part, text failed deep in NumPy
        raise ValueError(
            f"{what} must hold real numbers (int or float); got dtype {Y.dtype}. Pass a numeric array, e.g. "
            f"numpy.asarray({what}, dtype=float) for numbers stored as text or objects."
        )
    return Y


def _finite_rows(Y: Any) -> Any:
    return xp_of(Y).isfinite(Y).all(axis=1)


def _require_finite(A: Any, what: str, why: str) -> None:
    """ValueError naming the rows of A that hold NaN or inf: a distance to such a row means nothing, and a
    measure computed through them would look plausible."""
    bad = non_finite_rows(A) if A.dtype.kind == "f" else ()
    if len(bad):
        raise ValueError(
            f"{what} has {len(bad)} row(s) with NaN or inf (rows {describe_rows(bad)}); {why}. Measure the finite rows "
            f"alone: keep = numpy.isfinite({what}).all(axis=1), then trustworthiness(X[keep], embedding[keep])."
        )


def _neighbor_indices(graph: Any, n: int, xp: Any) -> Any:
    if graph is None:
        raise ValueError(
            "method='neighbors' needs graph=: the FuzzyGraph the layout was made from (or an (n, k) array "
            "of neighbour indices). Use method='radius' to go without one."
        )
    nbrs = getattr(graph, "knn_indices", graph)
    nbrs = xp.asarray(nbrs)
    if nbrs.ndim != 2 or nbrs.dtype.kind not in "iu":
        raise ValueError(
            f"graph must be a FuzzyGraph or an (n, k) integer array of neighbour indices; got "
            f"{nbrs.dtype} of shape {tuple(nbrs.shape)}."
        )
    if nbrs.shape[0] != n:
        raise ValueError(
            f"The graph has {nbrs.shape[0]} vertices but the embedding has {n} rows: use the graph the "
            "layout was made from."
        )
    if nbrs.size and int(nbrs.max()) >= n:
        raise ValueError(f"graph has neighbour index {int(nbrs.max())}, beyond the embedding's {n} rows.")
    return nbrs
