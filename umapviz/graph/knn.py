"""What the CPU and GPU kNN searches share: the metric and method checks, cancellation, and centring.

Both searches return ``(indices int32 (n, k), distances float32 (n, k))`` with the point itself at column 0
(even when it has duplicates), the rest sorted by exact distance, ties broken by index: the CPU's in
:mod:`umapviz.graph.knn_cpu`, the GPU's in :mod:`umapviz.graph.knn_gpu`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._backend import xp_of

METRICS = ("euclidean", "cosine")
KNN_METHODS = ("auto", "exact", "approx")

# knn="auto" uses exact kNN while its cost model n_samples**2 * (n_features + 150) stays at or below this bound,
# approximate beyond. Per pair of points, exact kNN pays a GEMM term (well under a nanosecond per feature plus
# the memory traffic) and the candidate selection, together worth about 150 features. The bound keeps exact runs
# to about half a minute on two cores and includes the 50k x 256 outlier data sets, whose hub
# vertices are what the kit studies (approximate kNN would blur them).
AUTO_EXACT_MAX_WORK = 1.1e12
_AUTO_FEATURE_OFFSET = 150


def check_metric(metric: str) -> str:
    """The metric name, or a clear error listing the choices."""
    if not isinstance(metric, str) or metric.lower() not in METRICS:
        raise ValueError(f"metric={metric!r} is not supported; choose one of {', '.join(map(repr, METRICS))}.")
    return metric.lower()


def resolve_knn_method(knn: str, n_samples: int, n_features: int) -> str:
    """Map ``knn`` ("auto" | "exact" | "approx") to the method actually used."""
    if knn not in KNN_METHODS:
        raise ValueError(f"knn={knn!r} is not one of {', '.join(map(repr, KNN_METHODS))}.")
    if knn == "auto":
        work = float(n_samples) ** 2 * (n_features + _AUTO_FEATURE_OFFSET)
        return "exact" if work <= AUTO_EXACT_MAX_WORK else "approx"
    return knn


class BuildCancelled(Exception):
    """A graph build stopped because its ``cancel`` callable returned True (e.g. its panel was closed)."""


def stop_if_cancelled(cancel: Callable[[], bool] | None) -> None:
    """Raise BuildCancelled when ``cancel`` (a no-argument callable, or None) says so."""
    if cancel is not None and cancel():
        raise BuildCancelled("the graph build was cancelled")


def centre_and_scale(A: Any, centre: bool = True) -> tuple[Any, Any, float]:
    """Float64 ``A`` (NumPy or CuPy) minus its column means (with ``centre``), divided by its largest magnitude,
    in place. Returns (A, mean, divisor): other rows take ``(B - mean) / divisor`` to land where A's did (mean 0
    without ``centre``; divisor 1.0 for an all-zero A, which dividing by leaves as it is)."""
    mean = A.mean(axis=0) if centre else 0.0
    if centre:
        A -= mean
    peak = float(xp_of(A).abs(A).max())
    divisor = peak if peak > 0 else 1.0
    A /= divisor
    return A, mean, divisor
