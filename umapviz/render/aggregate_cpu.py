"""Aggregation of a NumPy (N, 2) embedding into pixel grids: datashader's points glyph as a cached Numba pass,
and a Numba pass that counts the points outside the view along its edges.

Grids follow datashader's orientation: row 0 is the *bottom* of the view (smallest y).
"""

from __future__ import annotations

import numba
import numpy as np

from umapviz.render.view import View

N_EDGE_BINS = 32  # out-of-view points are counted in this many bins along each side of the image


def count_grids(
    embedding: np.ndarray,
    view: View,
    width: int,
    height: int,
    labels: np.ndarray | None,
    n_labels: int | None,
    outliers: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """(counts, outlier_counts) of a NumPy (N, 2) embedding over ``view``: datashader's ``Canvas.points`` with
    ``count()`` (labels None, an (H, W) grid) or ``count_cat`` ((H, W, K)), and ``count()`` of the outliers.

    One cached Numba pass with datashader's point-glyph arithmetic (closed ranges, ``int(x * sx + tx)`` in
    double precision, the right and top edges folded into the last pixel), as the CUDA kernel of
    ``aggregate_gpu`` repeats it: the grids equal datashader's bit for bit (tests/test_render.py compares them
    with datashader itself). Datashader compiles its aggregation afresh in every process (its kernels are made
    at run time and cannot be cached), about a second on two cores before a panel's first frame; this pass
    loads from Numba's cache.
    """
    xmin, xmax, ymin, ymax = view.bounds
    # datashader's scale and translate (Canvas.points), computed the same way in Python doubles.
    sx = width / (xmax - xmin)
    tx = -xmin * sx
    sy = height / (ymax - ymin)
    ty = -ymin * sy
    n_layers = n_labels if labels is not None else 1
    counts = np.zeros((height, width, n_layers), dtype=np.uint32)
    outlier_counts = np.zeros((height, width) if outliers is not None else (0, 0), dtype=np.uint32)
    _count_points(
        embedding,
        float(xmin),
        float(xmax),
        float(ymin),
        float(ymax),
        float(sx),
        float(tx),
        float(sy),
        float(ty),
        _NO_LABELS if labels is None else np.asarray(labels, dtype=np.int64),
        _NO_OUTLIERS if outliers is None else np.asarray(outliers, dtype=np.bool_),
        counts,
        outlier_counts,
    )
    return (counts if labels is not None else counts.reshape(height, width)), (
        outlier_counts if outliers is not None else None
    )


_NO_LABELS = np.zeros(0, dtype=np.int64)
_NO_OUTLIERS = np.zeros(0, dtype=np.bool_)


@numba.njit(cache=True, nogil=True)
def _count_points(xy, xmin, xmax, ymin, ymax, sx, tx, sy, ty, labels, outliers, counts, outlier_counts):
    """Count each point inside the closed box into its pixel (by label when ``labels`` is not empty) and each
    flagged one (``outliers`` not empty) into ``outlier_counts``; datashader's ``_perform_extend_points``."""
    height, width = counts.shape[0], counts.shape[1]
    by_label = labels.shape[0] > 0
    flagged = outliers.shape[0] > 0
    for i in range(xy.shape[0]):
        x = xy[i, 0]
        y = xy[i, 1]
        if (xmin <= x <= xmax) and (ymin <= y <= ymax):  # NaN fails both; inf lies outside any finite range
            xx = int(x * sx + tx)
            yy = int(y * sy + ty)
            xi = width - 1 if xx >= width else xx
            yi = height - 1 if yy >= height else yy
            counts[yi, xi, labels[i] if by_label else 0] += 1
            if flagged and outliers[i]:
                outlier_counts[yi, xi] += 1


def edge_bins(embedding: np.ndarray, view: View, n_bins: int = N_EDGE_BINS) -> np.ndarray:
    """(4, n_bins) counts of finite points outside ``view``, by where they leave it (see Aggregate)."""
    xmin, xmax, ymin, ymax = view.bounds
    out = np.zeros((4, n_bins), dtype=np.uint32)
    # The centre and half sizes are computed exactly as the GPU path passes them to its kernel.
    _count_edge_bins(
        embedding,
        xmin,
        xmax,
        ymin,
        ymax,
        (xmin + xmax) * 0.5,
        (ymin + ymax) * 0.5,
        (xmax - xmin) * 0.5,
        (ymax - ymin) * 0.5,
        n_bins,
        0.5 * n_bins,
        out,
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
