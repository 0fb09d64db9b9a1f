"""Aggregation of a NumPy (N, 2) embedding into pixel grids: datashader's points glyph, and a Numba pass that
counts the points outside the view along its edges.

Grids follow datashader's orientation: row 0 is the *bottom* of the view (smallest y).
"""

from __future__ import annotations

import numba
import numpy as np

from umapviz.render.view import View

N_EDGE_BINS = 32  # out-of-view points are counted in this many bins along each side of the image


def _canvas(view: View, width: int, height: int):
    import datashader as ds  # noqa: PLC0415 - slow to import: loaded for the first image

    return ds.Canvas(plot_width=width, plot_height=height, x_range=view.x_range, y_range=view.y_range)


def _points_frame(points: np.ndarray):
    """A DataFrame whose x and y columns are views of the (N, 2) array: no copy of the points."""
    import pandas as pd  # noqa: PLC0415 - loaded with datashader, which needs it

    return pd.DataFrame(points, columns=["x", "y"], copy=False)


def datashader_grids(
    embedding: np.ndarray,
    view: View,
    width: int,
    height: int,
    labels: np.ndarray | None,
    n_labels: int | None,
    outliers: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray | None]:
    import datashader as ds  # noqa: PLC0415 - slow to import: loaded for the first image
    import pandas as pd  # noqa: PLC0415 - loaded with datashader, which needs it

    canvas = _canvas(view, width, height)
    frame = _points_frame(embedding)
    if labels is None:
        counts = canvas.points(frame, "x", "y", agg=ds.count()).values
    else:
        # Categorical codes index the categories directly: no copy or factorization of the labels.
        frame["label"] = pd.Categorical.from_codes(labels, categories=np.arange(n_labels))
        counts = canvas.points(frame, "x", "y", agg=ds.count_cat("label")).values
    outlier_counts = None
    if outliers is not None:
        flung = _points_frame(np.ascontiguousarray(embedding[outliers]))
        outlier_counts = canvas.points(flung, "x", "y", agg=ds.count()).values
    return np.asarray(counts, dtype=np.uint32), (
        None if outlier_counts is None else np.asarray(outlier_counts, dtype=np.uint32)
    )


def edge_bins(embedding: np.ndarray, view: View, n_bins: int = N_EDGE_BINS) -> np.ndarray:
    """(4, n_bins) counts of finite points outside ``view``, by where they leave it (see Aggregate)."""
    xmin, xmax, ymin, ymax = view.bounds
    out = np.zeros((4, n_bins), dtype=np.uint32)
    # The centre and half sizes are computed exactly as the GPU path passes them to its kernel.
    _count_edge_bins(
        embedding, xmin, xmax, ymin, ymax,
        (xmin + xmax) * 0.5, (ymin + ymax) * 0.5, (xmax - xmin) * 0.5, (ymax - ymin) * 0.5,
        n_bins, 0.5 * n_bins, out,
    )
    return out


@numba.njit(cache=True, nogil=True)
def _count_edge_bins(xy, xmin, xmax, ymin, ymax, cx, cy, hx, hy, n_bins, half_bins, out):
    """Count each finite point outside [xmin, xmax] x [ymin, ymax] into the bin of the side it leaves through."""
    # One pass, the same double-precision steps as the CUDA kernel (no fused multiply-add here either).
    for i in range(xy.shape[0]):
        x = np.float64(xy[i, 0])
        y = np.float64(xy[i, 1])
        if xmin <= x <= xmax and ymin <= y <= ymax:
            continue
        if not (x - x == 0.0 and y - y == 0.0):  # NaN or inf: nowhere
            continue
        dx = (x - cx) / hx
        dy = (y - cy) / hy
        ax, ay = abs(dx), abs(dy)
        if ax >= ay:  # leaves through the left or right side
            side = 1 if dx > 0.0 else 0
            t = dy / ax
        else:
            side = 3 if dy > 0.0 else 2
            t = dx / ay
        b = int((t + 1.0) * half_bins)
        out[side, min(max(b, 0), n_bins - 1)] += 1
