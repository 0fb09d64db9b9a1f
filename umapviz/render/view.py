"""The data range an image shows: automatic, fixed, or robust to far outliers.

A view is two closed intervals in embedding coordinates. "auto" and "robust" views are padded a little and
widened so that pixels are square (a UMAP layout has no preferred axis, so stretching it would mislead);
a fixed view is used exactly as given, so frames of different epochs line up pixel for pixel.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from umapviz._backend import is_cupy
from umapviz._validation import is_integer

# Robust view: the [q, 1 - q] quantile box of each axis, widened by ROBUST_WIDEN times its width on each
# side; the view fits the points inside that box. A Gaussian cloud keeps all its points (the box reaches
# about 7 sigma), while one point a hundred widths away no longer shrinks the cloud to a dot.
ROBUST_QUANTILE = 0.01
ROBUST_WIDEN = 1.0
# Quantiles are taken on a regular stride of at most this many points: plenty for a 1% quantile, and the
# same points on NumPy and CuPy, so both backends pick the same view.
ROBUST_SAMPLE = 200_000
PAD = 0.03  # fraction of the range added on each side of "auto" and "robust" views
# Narrowest "auto"/"robust" view, relative to the coordinates' magnitude: a span of a few float64 rounding steps
# (1e-16 relative) is widened to this, so padding and centring it cannot round the view shut or past the points.
MIN_RELATIVE_SPAN = 1e-9
MIN_SPAN = 1e-300  # the same floor near 0, where the relative one vanishes (denormal coordinates)

ViewSpec = Union[str, "View", tuple]


def check_pixels(value: Any, name: str) -> int:
    """``value`` as a Python int >= 1: one side of an image, in pixels (``name`` is its argument's name)."""
    if not is_integer(value):
        raise TypeError(f"{name}={value!r} must be a whole number of pixels, at least 1 (e.g. {name}=800).")
    if value < 1:
        raise ValueError(f"{name}={value!r} must be a whole number of pixels, at least 1 (e.g. {name}=800).")
    return int(value)


@dataclass(frozen=True)
class View:
    """The closed data intervals shown: x in [x_range[0], x_range[1]], y likewise."""

    x_range: tuple[float, float]
    y_range: tuple[float, float]

    def __post_init__(self) -> None:
        for name, (lo, hi) in (("x_range", self.x_range), ("y_range", self.y_range)):
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ValueError(
                    f"View {name}=({lo}, {hi}) is not a finite interval with low < high; "
                    "give (xmin, xmax, ymin, ymax) with xmin < xmax and ymin < ymax."
                )
            if not math.isfinite(hi - lo):  # pixel positions divide by the width: it must be finite too
                axis = name[0]
                raise ValueError(
                    f"View {name}=({lo}, {hi}) is too wide: {axis}max - {axis}min overflows float64 to inf. "
                    "Give a narrower range, or scale the embedding down."
                )

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        """(xmin, xmax, ymin, ymax)."""
        return (*self.x_range, *self.y_range)

    def contains(self, other: View) -> bool:
        """True when ``other`` lies inside this view."""
        return (
            self.x_range[0] <= other.x_range[0]
            and other.x_range[1] <= self.x_range[1]
            and self.y_range[0] <= other.y_range[0]
            and other.y_range[1] <= self.y_range[1]
        )


def as_view(spec: Any) -> View:
    """A View from a View, (xmin, xmax, ymin, ymax) or ((xmin, xmax), (ymin, ymax))."""
    if isinstance(spec, View):
        return spec
    try:
        values = np.asarray(spec, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        values = np.empty(0)
    if values.size != 4:
        raise ValueError(
            f"view={spec!r} is not understood: use 'auto', 'robust', a View, "
            "(xmin, xmax, ymin, ymax) or ((xmin, xmax), (ymin, ymax))."
        )
    xmin, xmax, ymin, ymax = (float(v) for v in values)
    return View((xmin, xmax), (ymin, ymax))


def resolve_view(embedding: Any, view: ViewSpec, width: int, height: int) -> View:
    """The View for ``view`` ("auto", "robust", or fixed) over an (N, 2) NumPy or CuPy embedding."""
    width, height = check_pixels(width, "width"), check_pixels(height, "height")
    if isinstance(view, str):
        if view == "auto":
            box = data_bounds(embedding)
        elif view == "robust":
            box = robust_bounds(embedding)
        else:
            raise ValueError(f"view={view!r} is not one of 'auto', 'robust', or a fixed (xmin, xmax, ymin, ymax).")
        xmin, xmax, ymin, ymax = _square_box(_pad(box), width, height)
        if not (math.isfinite(xmax - xmin) and math.isfinite(ymax - ymin)):  # also NaN and infinite bounds
            raise ValueError(
                f"the points span x from {box[0]:g} to {box[1]:g} and y from {box[2]:g} to {box[3]:g}: a view "
                "around them overflows float64 (its width becomes inf). Scale the embedding down (e.g. divide it "
                "by 1e300), or pass a fixed view=(xmin, xmax, ymin, ymax) that leaves the farthest points out."
            )
        return View((xmin, xmax), (ymin, ymax))
    return as_view(view)


def union(views: list[View]) -> View:
    """The smallest View holding all ``views`` (for one shared view over many frames)."""
    if not views:
        raise ValueError("union() needs at least one view.")
    return View(
        (min(v.x_range[0] for v in views), max(v.x_range[1] for v in views)),
        (min(v.y_range[0] for v in views), max(v.y_range[1] for v in views)),
    )


def data_bounds(
    embedding: Any, within: tuple[float, float, float, float] | None = None
) -> tuple[float, float, float, float] | None:
    """(xmin, xmax, ymin, ymax) over the finite points (inside the closed box ``within`` if given);
    None when there are none."""
    if is_cupy(embedding):
        from umapviz.render.aggregate_gpu import gpu_bounds  # noqa: PLC0415 - imports CuPy

        return gpu_bounds(embedding, within)
    emb = np.asarray(embedding)
    box = within if within is not None else (-np.inf, np.inf, -np.inf, np.inf)
    found = _host_bounds(emb, *(float(v) for v in box))
    return None if found[0] > found[1] else found


@functools.cache
def _host_bounds_kernel():
    import numba  # noqa: PLC0415 - compiled on first use, then cached on disk

    @numba.njit(cache=True, nogil=True)
    def bounds(xy, xlo, xhi, ylo, yhi):
        # One pass in double precision, the same tests as the GPU kernel; NaN fails every comparison.
        lo_x, hi_x, lo_y, hi_y = np.inf, -np.inf, np.inf, -np.inf
        for i in range(xy.shape[0]):
            x = np.float64(xy[i, 0])
            y = np.float64(xy[i, 1])
            if x - x == 0.0 and y - y == 0.0 and xlo <= x <= xhi and ylo <= y <= yhi:
                lo_x = min(lo_x, x)
                hi_x = max(hi_x, x)
                lo_y = min(lo_y, y)
                hi_y = max(hi_y, y)
        return lo_x, hi_x, lo_y, hi_y

    return bounds


def _host_bounds(emb: np.ndarray, xlo: float, xhi: float, ylo: float, yhi: float) -> tuple[float, ...]:
    """(xmin, xmax, ymin, ymax) of the finite rows inside the box; xmin > xmax when there are none."""
    # A single pass: NumPy would need a strided pass per column and a mask, several times slower on millions.
    return tuple(float(v) for v in _host_bounds_kernel()(emb, xlo, xhi, ylo, yhi))


def robust_bounds(embedding: Any) -> tuple[float, float, float, float] | None:
    """The extent of the points inside the widened quantile box; None without finite points.

    The [q, 1 - q] quantiles of each axis (on a regular sample) give a box, widened by ROBUST_WIDEN times
    its width on each side; the view then fits the points inside it exactly, so the cloud fills the image
    and only points far beyond it fall outside (and become border markers).
    """
    n = embedding.shape[0]
    step = max(1, -(-n // ROBUST_SAMPLE))  # ceil division: a regular stride, same rows on every backend
    xp = np
    if is_cupy(embedding):
        import cupy as xp  # noqa: PLC0415 - GPU only
    sample = xp.ascontiguousarray(embedding[::step])
    sample = sample[xp.isfinite(sample).all(axis=1)]
    m = int(sample.shape[0])
    if m == 0:  # no finite point in the sample: fall back on all points
        return data_bounds(embedding)
    lo_i = int(ROBUST_QUANTILE * (m - 1))  # lower order statistics: exact values, no interpolation
    hi_i = (m - 1) - lo_i
    box = []
    for axis in (0, 1):
        ordered = xp.sort(sample[:, axis])  # a sort of <= ROBUST_SAMPLE values: a few ms on either backend
        q_lo, q_hi = float(ordered[lo_i]), float(ordered[hi_i])
        widen = ROBUST_WIDEN * (q_hi - q_lo)
        box += [q_lo - widen, q_hi + widen]
    return data_bounds(embedding, within=(box[0], box[1], box[2], box[3]))


def _pad(box: tuple[float, float, float, float] | None) -> tuple[float, float, float, float]:
    """Add PAD on each side; give a single value or an empty box a unit size, and a span of a few rounding
    steps at least MIN_RELATIVE_SPAN of its magnitude (a view is then still a valid interval that holds it)."""
    if box is None:
        return -1.0, 1.0, -1.0, 1.0
    out = []
    for lo, hi in (box[0:2], box[2:4]):
        span = hi - lo
        if span <= 0:
            half = max(0.5, abs(lo) * 1e-3)
            out += [lo - half, hi + half]
            continue
        min_span = max(max(abs(lo), abs(hi)) * MIN_RELATIVE_SPAN, MIN_SPAN)
        if span < min_span:
            mid = lo + span / 2
            out += [mid - min_span / 2, mid + min_span / 2]
        else:
            out += [lo - PAD * span, hi + PAD * span]
    return out[0], out[1], out[2], out[3]


def _square_box(box: tuple[float, float, float, float], width: int, height: int) -> tuple[float, float, float, float]:
    """``box`` with its shorter side widened (about its centre) so one pixel spans equal x and y."""
    xmin, xmax, ymin, ymax = box
    per_pixel = max((xmax - xmin) / width, (ymax - ymin) / height)
    cx, cy = (xmin + xmax) / 2, (ymin + ymax) / 2
    hx, hy = per_pixel * width / 2, per_pixel * height / 2
    return cx - hx, cx + hx, cy - hy, cy + hy


def square_pixels(box: tuple[float, float, float, float], width: int, height: int) -> View:
    """Widen the shorter side of ``box`` (about its centre) so one pixel spans equal x and y."""
    xmin, xmax, ymin, ymax = _square_box(box, width, height)
    return View((xmin, xmax), (ymin, ymax))
