"""What the CPU and GPU fuzzy sets share: the bisection's units, and the low-dimensional curve parameters a, b.

The fuzzy simplicial set itself is computed by :mod:`umapviz.graph.fuzzy.fuzzy_cpu` (NumPy, Numba) and
:mod:`umapviz.graph.fuzzy.fuzzy_gpu` (CuPy), to the same contract.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import curve_fit

from ..._backend import xp_of
from ..._validation import check_positive_float

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


AB_SIGNIFICANT_DIGITS = 8


def _rounded(value: float) -> float:
    return float(f"{value:.{AB_SIGNIFICANT_DIGITS}g}")


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
    relative_min_dist = min_dist / spread
    x = np.linspace(0, 3.0, 300)
    y = np.where(x < relative_min_dist, 1.0, np.exp(-(x - relative_min_dist)))
    (a1, b1), _ = curve_fit(curve, x, y)
    # curve_fit stops at its tolerance (~1.5e-8 relative), and where it stops moves by ~1e-10 with the CPU's
    # vector kernels for x ** (2 b) and the SciPy version: a and b, and with them every layout's bytes, would
    # differ from machine to machine. Rounded to AB_SIGNIFICANT_DIGITS they are the same everywhere (the same
    # curve as umap-learn's fit to within its own tolerance).
    a, b = _rounded(float(a1 * spread ** (-2 * b1))), _rounded(float(b1))
    if not (np.isfinite(a) and np.isfinite(b) and a > 0 and b > 0):
        raise ValueError(
            f"Fitting the curve for spread={spread!r}, min_dist={min_dist!r} gave a={a!r}, b={b!r}, but both must be "
            "finite and positive. Use values nearer the usual spread=1.0, min_dist=0.1."
        )
    return a, b
