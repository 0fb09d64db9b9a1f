"""What the CPU and GPU kNN searches share: the metric and method checks, cancellation, and the centred, scaled rows.

Both searches return ``(indices int32 (n, k), distances float32 (n, k))`` with the point itself at column 0
(even when it has duplicates), the rest sorted by exact distance, ties broken by index: the CPU's in
:mod:`umapviz.graph.knn.knn_cpu`, the GPU's in :mod:`umapviz.graph.knn.knn_gpu`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._backend import xp_of

# Metrics both devices search with a float32 GEMM (tiled exact, partitioned, refined); the rest run on the CPU only,
# exactly by SciPy's cdist a block of rows at a time or approximately by pynndescent (:mod:`.metric_cpu`).
GEMM_METRICS = ("euclidean", "cosine")
CPU_METRICS = (
    "manhattan",
    "chebyshev",
    "minkowski",
    "correlation",
    "hamming",
    "jaccard",
    "hellinger",
    "haversine",
    "precomputed",
)
METRICS = GEMM_METRICS + CPU_METRICS
# umap-learn's other names for the same metrics.
METRIC_ALIASES = {
    "l2": "euclidean",
    "l1": "manhattan",
    "taxicab": "manhattan",
    "cityblock": "manhattan",
    "linf": "chebyshev",
    "linfinity": "chebyshev",
    "linfty": "chebyshev",
}
KNN_METHODS = ("auto", "exact", "approx", "partitioned")

# knn="auto" uses exact kNN while its cost model n_samples**2 * (n_features + 150) stays at or below this bound,
# approximate beyond. Per pair of points, exact kNN pays a GEMM term (well under a nanosecond per feature plus
# the memory traffic) and the candidate selection, together worth about 150 features. The bound keeps exact runs
# to about half a minute on two cores and includes the 50k x 256 outlier data sets, whose hub
# vertices are what the kit studies (approximate kNN would blur them).
AUTO_EXACT_MAX_WORK = 1.1e12
_AUTO_FEATURE_OFFSET = 150
# The same bound for the metrics SciPy's cdist computes (no GEMM: every pair costs its features' worth of scalar
# work), on ``n_samples**2 * n_features``: about ten seconds on two cores.
AUTO_EXACT_MAX_WORK_CDIST = 2e10


def check_metric(metric: str, allowed: tuple[str, ...] = METRICS, where: str = "") -> str:
    """The metric's name (umap-learn's aliases resolved), or a clear ValueError listing the choices.

    Parameters
    ----------
    metric : str
        A name from :data:`METRICS` or :data:`METRIC_ALIASES`.
    allowed : tuple of str
        The names this caller serves; a known metric outside them is refused naming ``where`` and the fix.
    where : str
        What refuses it (e.g. "the GPU search"), for the message.
    """
    name = metric.lower() if isinstance(metric, str) else metric
    name = METRIC_ALIASES.get(name, name)
    if name in METRICS and name not in allowed:
        raise ValueError(
            f"metric={metric!r} is not offered by {where or 'this search'}, which takes "
            f"{', '.join(map(repr, allowed))}. Pass device='cpu' with knn='exact', 'approx' or 'auto': the CPU "
            f"searches take every metric of {', '.join(map(repr, METRICS))}."
        )
    if name not in METRICS:
        hint = " (umap-learn's Numba callables are not taken)" if callable(metric) else ""
        raise ValueError(
            f"metric={metric!r} is not supported{hint}; choose one of {', '.join(map(repr, METRICS))}, or compute "
            "the distances yourself and pass metric='precomputed' with the square distance matrix."
        )
    return name


def check_metric_kwds(metric: str, metric_kwds: dict | None) -> dict:
    """The metric's keyword arguments, checked: ``{"p": p > 0}`` for minkowski (p 2 when not given, as in
    pynndescent), nothing for the others; ValueError naming the fix otherwise.

    Parameters
    ----------
    metric : str
        A name :func:`check_metric` returned.
    metric_kwds : dict or None
        umap-learn's ``metric_kwds``.
    """
    kwds = dict(metric_kwds or {})
    if metric == "minkowski":
        unknown = sorted(set(kwds) - {"p"})
        p = kwds.get("p", 2.0)
        if unknown or isinstance(p, bool) or not isinstance(p, (int, float)) or not (np.isfinite(p) and p > 0):
            raise ValueError(
                f"metric_kwds={metric_kwds!r} for metric='minkowski' must be {{'p': p}} with a finite p > 0 "
                "(1 is manhattan, 2 euclidean)."
            )
        return {"p": float(p)}
    if kwds:
        raise ValueError(
            f"metric_kwds={metric_kwds!r}: metric={metric!r} takes no keyword arguments (only 'minkowski' takes "
            "{'p': ...}); pass metric_kwds=None."
        )
    return {}


# On the GPU "auto" is exact up to AUTO_GPU_EXACT_MAX_ROWS rows and the partitioned search above: the exact
# search's work grows as n**2 (about as long as the partitioned search at half a million rows, seconds at a million,
# minutes from a few million), the partitioned search's with its refinement round as n, and on data with structure
# it finds nearly every neighbour (bench/PARTITIONED_KNN.md). On data without it (round high-dimensional Gaussian
# clusters) it misses many, so "auto" measures recall on AUTO_RECALL_SAMPLE sampled rows and escalates until a target
# recall (:mod:`.auto_search`), the exact search among its steps up to AUTO_GPU_EXACT_FALLBACK_MAX_ROWS rows; where it
# stops short it warns, naming the fix: a default never hands over a poorer graph unsaid.
AUTO_GPU_EXACT_MAX_ROWS = 500_000
AUTO_GPU_EXACT_FALLBACK_MAX_ROWS = 2_000_000
AUTO_RECALL_SAMPLE = 1000


def check_target_recall(target: float) -> float:
    """``knn_target_recall`` checked: a number in (0, 1] (a ValueError names the fix)."""
    try:
        value = float(target)
    except (TypeError, ValueError):
        value = float("nan")
    if not 0.0 < value <= 1.0 or isinstance(target, bool):
        raise ValueError(f"knn_target_recall={target!r} must be a number in (0, 1], such as 0.95.")
    return value


def check_auto_recall(recall: float, n_samples: int, target: float) -> None:
    """Warn (UserWarning) when the partitioned search found fewer true neighbours than ``target`` (the Dask
    path, which measures but does not escalate).

    Parameters
    ----------
    recall : float
        recall@k measured on sampled rows (:func:`umapviz.graph.knn.recall.recall_at_k`).
    n_samples : int
        Rows of the data, named in the warning.
    target : float
        The recall aimed at.
    """
    if recall < target:
        warnings.warn(
            f"knn='auto' used the partitioned search for {n_samples:,} rows on a Dask client, and it found only "
            f"{recall:.2f} of the true neighbours on {AUTO_RECALL_SAMPLE} sampled rows (graph.params['knn_recall']), "
            f"below knn_target_recall={target}: these data have little cluster structure for partitions to follow. "
            "Raise knn_overlap / knn_refine, pass fewer knn_partitions, or build without the client (which "
            "escalates until the target).",
            UserWarning,
            stacklevel=3,
        )


def resolve_knn_method(
    knn: str,
    n_samples: int,
    n_features: int,
    device: str = "cpu",
    distributed: bool = False,
    metric: str = "euclidean",
) -> str:
    """Map ``knn`` ("auto" | "exact" | "approx" | "partitioned") to the method actually used on ``device``.

    On the CPU: "exact", "approx" (pynndescent) or "partitioned"; "auto" is exact up to AUTO_EXACT_MAX_WORK of
    ``n_samples**2 * (n_features + 150)``, else approx. On the GPU: "exact-gpu" or "partitioned-gpu" ("approx"
    is the partitioned search there); "auto" is exact up to AUTO_GPU_EXACT_MAX_ROWS rows, else partitioned (which
    ``build_graph`` escalates until a measured recall: :mod:`.auto_search`). With
    ``distributed`` (a Dask client) only the partitioned search runs: "auto" picks it, and "exact" or "approx" is
    refused. A metric outside GEMM_METRICS runs on the CPU's "exact" (SciPy's cdist; "auto" up to
    AUTO_EXACT_MAX_WORK_CDIST of ``n_samples**2 * n_features``) or "approx" search; "precomputed" reads the
    distance matrix ("precomputed").
    """
    if knn not in KNN_METHODS:
        raise ValueError(f"knn={knn!r} is not one of {', '.join(map(repr, KNN_METHODS))}.")
    if metric == "precomputed":
        return "precomputed"
    if metric not in GEMM_METRICS:
        if knn == "partitioned" or distributed:
            raise ValueError(
                f"metric={metric!r} has no partitioned search (its k-means partitions are Euclidean or cosine). "
                "Pass knn='exact' or knn='approx' (NN-descent), and client=None."
            )
        if knn == "auto":
            return "exact" if float(n_samples) ** 2 * n_features <= AUTO_EXACT_MAX_WORK_CDIST else "approx"
        return knn
    work = float(n_samples) ** 2 * (n_features + _AUTO_FEATURE_OFFSET)
    if distributed:
        if knn not in ("auto", "partitioned") and not (device == "gpu" and knn == "approx"):
            raise ValueError(
                f"knn={knn!r} cannot run on a Dask client: only the partitioned search spreads over workers. Pass "
                "knn='partitioned' (or 'auto'), or leave client=None."
            )
        knn = "partitioned"
    if device == "gpu":
        if knn == "auto":
            knn = "exact" if n_samples <= AUTO_GPU_EXACT_MAX_ROWS else "partitioned"
        return "exact-gpu" if knn == "exact" else "partitioned-gpu"
    if knn == "auto":
        return "exact" if work <= AUTO_EXACT_MAX_WORK else "approx"
    return knn


class BuildCancelled(Exception):
    """A graph build stopped because its ``cancel`` callable returned True (e.g. its panel was closed)."""


def stop_if_cancelled(cancel: Callable[[], bool] | None) -> None:
    """Raise BuildCancelled when ``cancel`` (a no-argument callable, or None) says so."""
    if cancel is not None and cancel():
        raise BuildCancelled("the graph build was cancelled")


# One block of rows in float64 while data is prepared (centred and scaled, or normalised): the preparation's
# temporaries are a few such blocks, not a float64 copy of X (31 GB at 30M x 128).
PREP_BLOCK_BYTES = 2**28


def float64_blocks(n: int, d: int) -> list[slice]:
    """Row blocks of an (n, d) array whose float64 copy takes at most PREP_BLOCK_BYTES."""
    step = max(1, PREP_BLOCK_BYTES // (8 * max(1, d)))
    return [slice(start, min(start + step, n)) for start in range(0, n, step)]


def scaled_rows(X: Any, dtype: Any, centre: bool = True, unit_rows: bool = False) -> tuple[Any, Any, float]:
    """X's rows in float64 minus its column means (with ``centre``), divided by the largest magnitude that leaves
    (1.0 for all zeros), cast to ``dtype``. Returns (Z, mean, divisor): other rows take ``(B - mean) / divisor``
    to land where X's did (mean 0.0 without ``centre``). Computed a block of rows at a time
    (:func:`float64_blocks`), so that no float64 copy of all of X is made.

    The blocks give the bytes of the whole-array computation for C-contiguous X: the column means are one float64
    reduction over X (``X.mean(axis=0, dtype=float64)``, as NumPy and CuPy reduce a float64 copy), the largest
    magnitude is a maximum (exact in any order), and the rest works row by row.

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray
        (n, d) floating-point data.
    dtype : dtype
        Z's dtype.
    centre : bool
        Subtract the column means first (else mean is 0.0).
    unit_rows : bool
        Then divide each row by its length (zero rows stay zero): cosine's rows, scaled first so that data far
        from unit scale neither overflows nor underflows.
    """
    xp = xp_of(X)
    n, d = X.shape
    blocks = float64_blocks(n, d)
    mean = X.mean(axis=0, dtype=xp.float64) if centre else 0.0
    peak = max((float(xp.abs(X[rows].astype(xp.float64) - mean).max()) for rows in blocks), default=0.0)
    divisor = peak if peak > 0 else 1.0
    Z = xp.empty((n, d), dtype=dtype)
    for rows in blocks:
        A = X[rows].astype(xp.float64) - mean
        A /= divisor
        if unit_rows:
            norms = xp.sqrt((A * A).sum(axis=1))
            A /= xp.where(norms > 0, norms, 1.0)[:, None]
        Z[rows] = A.astype(dtype)
    return Z, mean, divisor
