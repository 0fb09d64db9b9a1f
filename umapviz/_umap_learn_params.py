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
    "output_metric": (
        "euclidean",
        "the layout is Euclidean only (the optimizer's gradients are); use umap-learn for another output_metric",
    ),
    "transform_mode": ("embedding", "transform embeds points only; use umap-learn for transform_mode='graph'"),
}


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
