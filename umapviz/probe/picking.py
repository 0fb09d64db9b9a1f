"""Which points are where: the point nearest a cursor, the points in a box or a lasso, on the embedding's device."""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from .._backend import to_host, xp_of
from .._validation import check_finite, check_range
from .checks import _check_points

# ------------------------------------------------------------------------------------------------------------
# Picking points: under the cursor, in a box, in a lasso. NumPy or CuPy, through the embedding's array module.
# ------------------------------------------------------------------------------------------------------------


def nearest_point(embedding: Any, x: float, y: float) -> int:
    """The index of the point nearest to (x, y) (euclidean, first two columns; rows with NaN or inf ignored;
    the lowest index among equally near points).

    Parameters
    ----------
    embedding : array, shape (n, >= 2)
        The layout, NumPy or CuPy (the search runs on its device).
    x, y : float
        The query position, in layout units.
    """
    Y = _check_points(embedding)
    x, y = check_finite("x", x), check_finite("y", y)
    xp = xp_of(Y)
    if xp is np:  # one pass, no temporaries: a few ms at a million points, as a hover needs
        best = _nearest_host(Y, x, y)
    else:
        dx = Y[:, 0].astype(xp.float64) - x
        dy = Y[:, 1].astype(xp.float64) - y
        d2 = dx * dx
        d2 += dy * dy
        d2[~xp.isfinite(d2)] = xp.inf  # NaN rows; inf rows are inf already
        best = int(xp.argmin(d2)) if d2.size else -1
        if best >= 0 and not np.isfinite(float(d2[best])):
            best = -1
    if best < 0:
        raise ValueError("the embedding has no point with finite coordinates near enough to pick.")
    return best


@njit(cache=True, nogil=True)
def _nearest_host(Y, x, y):
    """nearest_point's loop on the host: the first row of least squared distance (float64); NaN and inf rows never
    compare less than the best so far. -1 when no row is finite."""
    best = -1
    best_d = np.inf
    for i in range(Y.shape[0]):
        dx = np.float64(Y[i, 0]) - x
        dy = np.float64(Y[i, 1]) - y
        d = dx * dx + dy * dy
        if d < best_d:
            best = i
            best_d = d
    return best


def points_in_box(embedding: Any, x_range: tuple[float, float], y_range: tuple[float, float]) -> Any:
    """Indices of the points inside a box, edges included (rows with NaN or inf are never inside).

    Parameters
    ----------
    embedding : array, shape (n, >= 2)
        The layout, NumPy or CuPy (the test runs on its device).
    x_range, y_range : pair of float
        The box's (low, high) per axis, in layout units: low <= high (a reversed pair is refused; an
        edge of no length selects the points on it).

    Returns
    -------
    numpy.ndarray
        int64 indices, ascending, on the host whatever the embedding's device (a selection goes to the views).
    """
    Y = _check_points(embedding)
    x0, x1 = check_range("x_range", x_range, allow_empty=True)
    y0, y1 = check_range("y_range", y_range, allow_empty=True)
    xp = xp_of(Y)
    px, py = Y[:, 0], Y[:, 1]
    return to_host(xp.flatnonzero((px >= x0) & (px <= x1) & (py >= y0) & (py <= y1))).astype(np.int64)


def points_in_polygon(embedding: Any, xs: Any, ys: Any) -> Any:
    """Indices of the points inside a polygon (a lasso), by the even-odd rule, ascending.

    A point is inside when a ray from it towards +x crosses the polygon's edges an odd number of times; an edge
    from (x1, y1) to (x2, y2) is crossed when exactly one end lies above the point (``(y1 > py) != (y2 > py)``)
    and the point lies left of the edge at its height. The polygon closes itself (last vertex to first).

    Points are sorted by y once, so each edge tests only the points in its band of y: the work is about the
    points times the edges crossing a horizontal line, not times all edges.

    Parameters
    ----------
    embedding : array, shape (n, >= 2)
        The layout, NumPy or CuPy (the work runs on its device).
    xs, ys : sequence of float
        The polygon's vertices (at least 3, finite), in layout units.

    Returns
    -------
    numpy.ndarray
        int64 indices, ascending, on the host whatever the embedding's device (a selection goes to the views).
    """
    Y = _check_points(embedding)
    vx = np.asarray(to_host(xs), dtype=np.float64)  # a few hundred vertices: the loop below runs on the host
    vy = np.asarray(to_host(ys), dtype=np.float64)
    if vx.ndim != 1 or vy.ndim != 1 or vx.shape != vy.shape:
        raise ValueError(f"xs and ys must be 1-D and of the same length, got shapes {vx.shape} and {vy.shape}.")
    if vx.size < 3:
        raise ValueError(f"a polygon needs at least 3 vertices, got {vx.size}.")
    if not (np.isfinite(vx).all() and np.isfinite(vy).all()):
        raise ValueError("the polygon's vertices must be finite numbers.")
    xp = xp_of(Y)
    px = Y[:, 0].astype(xp.float64)
    py = Y[:, 1].astype(xp.float64)
    candidates = xp.flatnonzero((px >= vx.min()) & (px <= vx.max()) & (py >= vy.min()) & (py <= vy.max()))
    by_y = candidates[xp.argsort(py[candidates])]
    cx, cy = px[by_y], py[by_y]
    inside = xp.zeros(by_y.size, dtype=bool)
    for x1, y1, x2, y2 in zip(vx, vy, np.roll(vx, -1), np.roll(vy, -1), strict=True):
        if y1 == y2:  # a horizontal edge is never crossed
            continue
        start, stop = (int(s) for s in xp.searchsorted(cy, xp.asarray([min(y1, y2), max(y1, y2)]), side="left"))
        if start == stop:
            continue
        band = slice(start, stop)  # the points with min(y1, y2) <= py < max(y1, y2): one end above, one not
        x_at = x1 + (cy[band] - y1) * ((x2 - x1) / (y2 - y1))
        inside[band] ^= cx[band] < x_at
    return to_host(xp.sort(by_y[inside])).astype(np.int64)
