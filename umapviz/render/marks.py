"""Marks drawn over a rendered frame: a selection, an inspected point with its graph neighbours, a trail.

They are drawn into the frame's pixels rather than as browser-side glyphs, so ``frame()``, exports and
screenshots show exactly what the user saw, and a selection of a million points costs one pass over the
selected rows, not a million glyphs in the page. Positions are the embedding's rows, read for the selected
indices only (a CuPy embedding copies just those rows to the host).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from umapviz._backend import is_cupy, to_host
from umapviz.render.shade.outlier_discs import dilate
from umapviz.render.shade.style import hex_to_rgb
from umapviz.render.view import View

# The points outside a selection fade this far towards the background, so the selected ones stand out
# wherever they sit (a selection of flung points is often a few dozen points among millions).
SELECTION_DIM = 0.3
# Selection: bright yellow, a hue the class palette and the red outlier discs do not use.
SELECTION_COLOR = "#FFD400"
NEIGHBOUR_COLOR = "#00E5FF"  # the inspected point's graph neighbours, and the lines to them
FOCUS_COLOR = "#FFFFFF"  # the ring around the inspected point
TRAIL_COLOR = "#FF9F1C"
# Lines from the inspected point to its neighbours are drawn up to this many neighbours: a hub's thousands
# would cover the frame; its neighbours are then ringed only.
MAX_NEIGHBOUR_LINES = 30
# Coordinates are clipped to this many image sizes beyond the frame before drawing: a flung point a million
# widths away still draws its line towards the right side, and PIL never sees an overflowing coordinate.
_CLIP_SIZES = 4.0


@dataclass(frozen=True)
class Marks:
    """What to draw over a frame.

    Parameters
    ----------
    selection : array of int, optional
        Indices of selected points: drawn in SELECTION_COLOR over a dimmed frame.
    highlight : array of int, optional
        The inspected point first, then its graph neighbours: the point ringed, its neighbours ringed in
        NEIGHBOUR_COLOR, with a line from the point to each (up to MAX_NEIGHBOUR_LINES neighbours).
    trail : (T, 2) array, optional
        Positions of one point over recorded epochs, oldest first: drawn as a line with a dot per epoch.
    """

    selection: np.ndarray | None = None
    highlight: np.ndarray | None = None
    trail: np.ndarray | None = None

    @property
    def empty(self) -> bool:
        """True when there is nothing to draw."""
        return all(v is None or len(v) == 0 for v in (self.selection, self.highlight, self.trail))


def check_indices(indices: Any, n: int, name: str) -> np.ndarray | None:
    """``indices`` as a 1-D int64 host array of row numbers in [0, n), or None for None.

    A boolean mask of length n is accepted too (its True rows), as for outliers.
    """
    if indices is None:
        return None
    values = to_host(indices) if is_cupy(indices) else np.asarray(indices)
    if values.dtype == bool:
        if values.shape != (n,):
            raise ValueError(f"{name} as a boolean mask must have shape ({n},), one per point; got {values.shape}.")
        return np.flatnonzero(values)
    values = values.reshape(-1) if values.ndim == 0 else values
    if values.ndim != 1 or (values.size and values.dtype.kind not in "iu"):
        raise ValueError(
            f"{name} must be a 1-D array of point indices (integers) or a boolean mask; "
            f"got shape {values.shape}, dtype {values.dtype}."
        )
    values = values.astype(np.int64)
    if values.size and (values.min() < 0 or values.max() >= n):
        raise ValueError(
            f"{name} must be point indices in [0, {n}); got values from {values.min()} to "
            f"{values.max()}. Pass indices into the embedding pushed with them."
        )
    return values


def check_trail(trail: Any) -> np.ndarray | None:
    """``trail`` as a (T, 2) float64 host array, or None for None."""
    if trail is None:
        return None
    values = np.asarray(to_host(trail) if is_cupy(trail) else trail, dtype=np.float64)
    if values.ndim != 2 or values.shape[1] != 2:
        raise ValueError(
            f"trail must be a (T, 2) array of positions, one row per recorded epoch; got shape {values.shape}."
        )
    return values


def draw_marks(rgba: np.ndarray, view: View, embedding: Any, marks: Marks, background: str = "#000000") -> np.ndarray:
    """A copy of the (H, W, 4) uint8 frame ``rgba`` (showing ``view``) with ``marks`` drawn over it.

    Parameters
    ----------
    rgba : (H, W, 4) uint8 array
        The rendered frame; row 0 is the top of the view.
    view : View
        The data range the frame shows.
    embedding : (N, 2) NumPy or CuPy array
        The positions the indices in ``marks`` refer to.
    marks : Marks
        What to draw.
    background : str
        The frame's background colour, which unselected points fade towards.
    """
    out = np.array(rgba, copy=True)
    if marks.empty:
        return out
    if marks.selection is not None:
        _draw_selection(out, view, _rows(embedding, marks.selection), background)
    if marks.trail is not None and len(marks.trail):
        _draw_trail(out, view, marks.trail)
    if marks.highlight is not None and len(marks.highlight):
        _draw_highlight(out, view, _rows(embedding, marks.highlight))
    return out


def _rows(embedding: Any, indices: np.ndarray) -> np.ndarray:
    rows = embedding[indices] if not is_cupy(embedding) else to_host(embedding[indices])
    return np.asarray(rows, dtype=np.float64)


def pixel_positions(xy: np.ndarray, view: View, width: int, height: int) -> np.ndarray:
    """(M, 2) float pixel coordinates (column, row from the top) of data positions ``xy`` in ``view``.

    Non-finite rows come back as NaN; rows far outside are clipped to a few image sizes beyond the frame.
    """
    (x0, x1), (y0, y1) = view.x_range, view.y_range
    with np.errstate(invalid="ignore", over="ignore"):
        col = (xy[:, 0] - x0) / (x1 - x0) * width
        row = (y1 - xy[:, 1]) / (y1 - y0) * height
    pixels = np.stack([col, row], axis=1)
    limit = _CLIP_SIZES * max(width, height)
    return np.clip(pixels, -limit, limit)


def _draw_selection(out: np.ndarray, view: View, xy: np.ndarray, background: str) -> None:
    height, width = out.shape[:2]
    bg = np.array(hex_to_rgb(background), dtype=np.float32)
    rgb = out[..., :3].astype(np.float32)
    out[..., :3] = np.round(bg + (rgb - bg) * SELECTION_DIM).astype(np.uint8)
    pixels = pixel_positions(xy, view, width, height)
    inside = np.isfinite(pixels).all(axis=1)
    cols, rows = np.floor(pixels[inside]).astype(np.int64).T
    keep = (cols >= 0) & (cols < width) & (rows >= 0) & (rows < height)
    mask = np.zeros((height, width), dtype=bool)
    mask[rows[keep], cols[keep]] = True
    mask = dilate(mask, 1)  # a 3-pixel disc: one selected point among dimmed millions stays visible
    out[mask, :3] = hex_to_rgb(SELECTION_COLOR)
    out[mask, 3] = 255


def _draw_trail(out: np.ndarray, view: View, trail: np.ndarray) -> None:
    from PIL import Image, ImageDraw  # noqa: PLC0415 - pillow is only needed when a trail is drawn

    height, width = out.shape[:2]
    pixels = pixel_positions(trail, view, width, height)
    pixels = pixels[np.isfinite(pixels).all(axis=1)]
    image = Image.fromarray(out, "RGBA")
    draw = ImageDraw.Draw(image)
    points = [tuple(p) for p in pixels.tolist()]
    if len(points) > 1:
        draw.line(points, fill=TRAIL_COLOR, width=2)
    for x, y in points:
        draw.ellipse((x - 2, y - 2, x + 2, y + 2), fill=TRAIL_COLOR)
    out[...] = np.asarray(image)


def _draw_highlight(out: np.ndarray, view: View, xy: np.ndarray) -> None:
    from PIL import Image, ImageDraw  # noqa: PLC0415 - pillow is only needed when a point is inspected

    height, width = out.shape[:2]
    pixels = pixel_positions(xy, view, width, height)
    image = Image.fromarray(out, "RGBA")
    draw = ImageDraw.Draw(image)
    focus, neighbours = pixels[0], pixels[1:]
    neighbours = neighbours[np.isfinite(neighbours).all(axis=1)]
    if np.isfinite(focus).all() and len(neighbours) <= MAX_NEIGHBOUR_LINES:
        for x, y in neighbours.tolist():
            draw.line((focus[0], focus[1], x, y), fill=NEIGHBOUR_COLOR, width=1)
    radius = 3 if len(neighbours) <= MAX_NEIGHBOUR_LINES else 2
    for x, y in neighbours.tolist():
        draw.ellipse((x - radius, y - radius, x + radius, y + radius), outline=NEIGHBOUR_COLOR, width=1)
    if np.isfinite(focus).all():
        # Kept inside the frame, so a point flung out of the view still shows where it lies.
        x = float(np.clip(focus[0], 4, width - 5))
        y = float(np.clip(focus[1], 4, height - 5))
        draw.ellipse((x - 7, y - 7, x + 7, y + 7), outline=FOCUS_COLOR, width=2)
    out[...] = np.asarray(image)
