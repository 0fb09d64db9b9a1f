"""One still frame: view -> aggregate -> shade. The single path every image in umapviz goes through.

A CuPy embedding stays on the GPU through all three steps: only the finished (H, W, 4) image comes back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from umapviz.render.aggregate import Aggregate, aggregate, check_embedding
from umapviz.render.shade import shade
from umapviz.render.shade.style import DEFAULT_STYLE, Style
from umapviz.render.view import ViewSpec, check_pixels, resolve_view


def render(
    embedding: Any,
    labels: Any = None,
    outliers: Any = None,
    width: int = 800,
    height: int = 800,
    view: ViewSpec = "auto",
    *,
    n_labels: int | None = None,
    style: Style = DEFAULT_STYLE,
) -> tuple[np.ndarray, Aggregate]:
    """Like ``image`` but also returns the Aggregate (grids, the view used, off-view counts).

    The Aggregate's grids are CuPy arrays, still on the GPU, when the embedding is.

    Parameters
    ----------
    embedding, labels, outliers, width, height, view, n_labels, style
        As :func:`image` takes them.
    """
    width, height = check_pixels(width, "width"), check_pixels(height, "height")  # before any work on them
    embedding = check_embedding(embedding)
    resolved = resolve_view(embedding, view, width, height)
    agg = aggregate(
        embedding,
        resolved,
        width,
        height,
        labels=labels,
        n_labels=n_labels,
        outliers=outliers,
        keep_on_device=True,
        n_colors=len(style.palette),
    )
    return shade(agg, style), agg


def image(
    embedding: Any,
    labels: Any = None,
    outliers: Any = None,
    width: int = 800,
    height: int = 800,
    view: ViewSpec = "auto",
    *,
    n_labels: int | None = None,
    style: Style = DEFAULT_STYLE,
) -> np.ndarray:
    """An (height, width, 4) uint8 RGBA image of an (N, 2) NumPy or CuPy embedding.

    Parameters
    ----------
    embedding : numpy.ndarray or cupy.ndarray
        (N, 2) layout; a CuPy one is aggregated and shaded on the GPU.
    labels : array-like, optional
        Integer codes 0..K-1, one per point, coloured with a colour-blind-safe palette (of 15 colours: beyond
        that, classes share colours).
    outliers : array-like, optional
        Boolean mask (or indices) of points drawn on top as discs in a ring (``style.outlier_ring`` pixels of
        ``style.outlier_color``); with labels a disc keeps its class colour (``style.outlier_fill``).
    width, height : int
        Pixels.
    view : str or tuple
        ``"auto"`` (all finite points), ``"robust"`` (quantile-based; far points become border markers), or a
        fixed (xmin, xmax, ymin, ymax), so frames of different epochs line up.
    n_labels : int, optional
        K, when the labels do not show every class.
    style : Style
        Colours and marks.
    """
    return render(embedding, labels, outliers, width, height, view, n_labels=n_labels, style=style)[0]


def warm_up(device: str = "cpu") -> float:
    """Render a few tiny frames so the first real one does not pay compilation; returns the seconds taken.

    The first frame of a process loads the Numba aggregation from its cache (compiles it, the first time
    ever) or, with ``device="gpu"``, compiles the CUDA aggregation kernel and CuPy's shading kernels. A live
    view can call this while the optimizer starts.
    """
    import time  # noqa: PLC0415

    from umapviz._backend import cupy, resolve_device  # noqa: PLC0415

    start = time.perf_counter()
    xp = cupy() if resolve_device(device) == "gpu" else np
    points = xp.asarray(np.array([[0.0, 0.0], [1.0, 1.0], [0.5, 0.2], [9.0, 0.5]], dtype=np.float32))
    labels = xp.asarray(np.array([0, 1, 0, 1]))
    outliers = xp.asarray(np.array([False, True, False, False]))
    for kwargs in ({}, {"labels": labels}):
        render(points, outliers=outliers, width=16, height=16, view=(-1.0, 2.0, -1.0, 2.0), **kwargs)
    return time.perf_counter() - start
