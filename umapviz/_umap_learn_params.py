"""umap-learn's estimator parameters that :class:`umapviz.UMAP` takes by the same names: the checks of those it
honours, and the refusals, naming what to do, of those it does not implement (never silently ignored)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ._validation import check_int

# Parameter -> (its only accepted value, what to do instead). A value other than the default is refused.
NOT_IMPLEMENTED = {
    "densmap": (False, "densMAP is not implemented here; use umap-learn's UMAP(densmap=True)"),
    "output_dens": (False, "densMAP's local radii are not implemented here; use umap-learn's UMAP(output_dens=True)"),
}


# umap-learn's output metrics (those it has gradients for); only "euclidean" (its aliases) is laid out here.
OUTPUT_METRICS = (
    "euclidean", "l2", "manhattan", "l1", "taxicab", "chebyshev", "linfinity", "linfty", "linf", "minkowski",
    "seuclidean", "standardised_euclidean", "wminkowski", "weighted_minkowski", "mahalanobis", "canberra", "cosine",
    "correlation", "hellinger", "softmax_hellinger", "haversine", "braycurtis", "symmetric_kl",
    "spherical_gaussian_energy", "diagonal_gaussian_energy", "gaussian_energy", "hyperboloid",
)  # fmt: skip


def check_transform_mode(transform_mode: Any) -> None:
    """ValueError unless ``transform_mode`` is umap-learn's "embedding" (transform places points) or "graph"
    (transform returns their memberships to the fitted points, fit_transform the fitted graph).

    Parameters
    ----------
    transform_mode : str
        umap-learn's ``transform_mode``.
    """
    if not (isinstance(transform_mode, str) and transform_mode in ("embedding", "graph")):
        raise ValueError(f"transform_mode={transform_mode!r} must be 'embedding' or 'graph'.")


def check_output_metric(output_metric: Any, n_components: int, densmap: Any) -> None:
    """ValueError for an ``output_metric`` umap-learn refuses too (not a metric; "precomputed"; a callable that
    returns no gradient; haversine, a sphere's, in other than 2 components; any but Euclidean with densMAP), in
    those words, and for one it takes that is not laid out here (the optimizer's gradients are Euclidean), naming
    umap-learn.

    Parameters
    ----------
    output_metric : str or callable
        umap-learn's ``output_metric``.
    n_components : int
        The checked embedding dimensions.
    densmap : bool
        umap-learn's ``densmap``.
    """
    if isinstance(output_metric, str) and output_metric in ("euclidean", "l2"):
        return
    if callable(output_metric):
        x, y = np.random.default_rng(0).uniform(-10, 10, size=(2, n_components))
        out = output_metric(x, y)
        if not (hasattr(out, "__iter__") and len(out) == 2):
            raise ValueError(
                "A callable output_metric must return a tuple (distance, gradient): the layout moves points along "
                "its gradient."
            )
    elif output_metric == "precomputed":
        raise ValueError("output_metric cannot be 'precomputed': the layout computes its own distances.")
    elif not isinstance(output_metric, str) or output_metric not in OUTPUT_METRICS:
        raise ValueError(
            f"output_metric={output_metric!r} is neither callable nor a recognised metric with a gradient; pass "
            "'euclidean' (the default)."
        )
    elif output_metric == "haversine" and n_components != 2:
        raise ValueError(
            f"output_metric='haversine' embeds on a sphere by (latitude, longitude): it needs n_components=2, not "
            f"{n_components}."
        )
    if densmap:
        raise ValueError(f"densmap=True needs a Euclidean output_metric, not {output_metric!r}.")
    raise ValueError(
        f"output_metric={output_metric!r} is not supported: the layout is Euclidean only (the optimizer's gradients "
        "are); use umap-learn for another output_metric."
    )


def check_not_implemented(params: dict[str, Any]) -> None:
    """ValueError for a parameter of :data:`NOT_IMPLEMENTED` not at its default.

    Parameters
    ----------
    params : dict
        The estimator's parameters.
    """
    for name, (default, advice) in NOT_IMPLEMENTED.items():
        value = params.get(name, default)
        if not (value is default or (isinstance(value, str) and value == default)):
            raise ValueError(f"{name}={value!r} is not supported: {advice}.")


def check_n_jobs(n_jobs: Any) -> int | None:
    """``n_jobs`` as the Numba thread count a fit runs with: None for -1 or None (all of Numba's threads),
    else an int from 1 to Numba's thread limit; ValueError otherwise.

    Parameters
    ----------
    n_jobs : int or None
        umap-learn's ``n_jobs``.
    """
    import numba  # noqa: PLC0415 - the thread limit

    if n_jobs is None or (isinstance(n_jobs, numbers.Integral) and not isinstance(n_jobs, bool) and n_jobs == -1):
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs < 1:
        raise ValueError(f"n_jobs={n_jobs!r} must be -1 (all threads), None, or an integer >= 1.")
    return int(min(n_jobs, numba.config.NUMBA_NUM_THREADS))


def check_curve(a: Any, b: Any) -> tuple[float, float] | None:
    """umap-learn's ``a`` and ``b`` (both or neither): the curve ``1 / (1 + a d^(2b))`` they set instead of
    ``min_dist`` and ``spread``'s fit; ValueError for one alone or a value that is not a finite number > 0.

    Parameters
    ----------
    a, b : float or None
        The curve's parameters.
    """
    if a is None and b is None:
        return None
    if a is None or b is None:
        raise ValueError(f"a={a!r}, b={b!r}: pass both a and b, or neither (then min_dist and spread set them).")
    for name, value in (("a", a), ("b", b)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (np.isfinite(value) and value > 0):
            raise ValueError(f"{name}={value!r} must be a finite number > 0 (a ~ 1.58, b ~ 0.9 for min_dist=0.1).")
    return float(a), float(b)


def check_n_components(n_components: Any) -> int:
    """``n_components`` as an int >= 1; ValueError (scikit-learn's convention) for anything else.

    Parameters
    ----------
    n_components : int
        The embedding's dimensions.
    """
    return check_int("n_components", n_components, 1)


def unique_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(index, inverse)``: the first row of each distinct row of X (in order of first appearance) and, for every
    row, its distinct row's place, so that ``X[index][inverse]`` is X (umap-learn's ``unique=True``).

    Parameters
    ----------
    X : numpy.ndarray
        (n, d) data.
    """
    _, first, inverse = np.unique(X, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return first[order], rank[inverse.reshape(-1)]
