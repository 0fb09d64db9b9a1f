"""Hover, click and box/lasso selection for LiveView: from a pointer position to point indices.

The look-ups are ``umapviz.probe``'s (one pass over the points on the host, or on the GPU for CuPy), run
when the plot's ``PointerXY``, ``Tap``, ``BoundsXY`` and ``Lasso`` streams fire.
"""

from __future__ import annotations

import math
from typing import Any

import holoviews as hv
import numpy as np

from umapviz.probe import nearest_point, points_in_box, points_in_polygon

HOVER_RADIUS_PX = 24  # hover and click name the nearest point only within this many pixels of the pointer


class PointPicking:
    """The pointer handlers of LiveView (a mixin: it reads the view's pushed data, shown frame and callbacks)."""

    def point_at(self, x: float, y: float, radius_px: float = HOVER_RADIUS_PX) -> int | None:
        """The index of the point nearest the data position (x, y), if within ``radius_px`` pixels as shown."""
        with self._lock:
            data, shown = self._data, self._frames.shown
        if data is None or x is None or y is None or data.embedding.shape[0] == 0:
            return None
        index = int(nearest_point(data.embedding, float(x), float(y)))
        if shown is not None:
            rgba, view = shown[1], shown[2]
            per_px = max(
                (view.x_range[1] - view.x_range[0]) / rgba.shape[1],
                (view.y_range[1] - view.y_range[0]) / rgba.shape[0],
            )
            px, py = (float(v) for v in data.embedding[index])
            if not math.hypot(px - x, py - y) <= radius_px * per_px:
                return None
        return index

    def label_of(self, index: int) -> Any:
        """The label of point ``index`` as shown on hover: its name, its code, or None without labels."""
        data = self._data
        if data is None or data.labels is None:
            return None
        code = int(data.labels[index])
        if data.label_names is not None and code < len(data.label_names):
            return data.label_names[code]
        return code

    def _hover_element(self, x=None, y=None):
        index = self.point_at(x, y) if x is not None else None
        self.hovered = None if index is None else (index, self.label_of(index))
        if self.on_hover is not None:
            self.on_hover(self.hovered)
        if index is None:
            return hv.Text(0.0, 0.0, "")
        px, py = (float(v) for v in self._data.embedding[index])
        label = self.hovered[1]
        text = f" #{index:,}" + ("" if label is None else f"  label {label}") + f"  ({px:.3g}, {py:.3g}) "
        halign, valign = self._label_side(px, py)
        return hv.Text(px, py, text, halign=halign, valign=valign)

    def _label_side(self, x: float, y: float) -> tuple[str, str]:
        """(halign, valign) that keep a hover label inside the plot: to the left of a point in the right third
        of the view, below one in the top third (beside and above it elsewhere)."""
        shown = self._frames.shown
        if shown is None:
            return "left", "bottom"
        (x0, x1), (y0, y1) = shown[2].x_range, shown[2].y_range
        halign = "right" if x > x0 + (x1 - x0) * 2 / 3 else "left"
        valign = "top" if y > y0 + (y1 - y0) * 2 / 3 else "bottom"
        return halign, valign

    def _on_tap(self, x=None, y=None) -> None:
        """A click: on a point, ``on_tap(index)``; on empty space, the selection drawn here is cleared and
        ``on_tap(None)`` lets the owner clear what it shows (the way out of an inspection or a selection)."""
        index = self.point_at(x, y)
        if index is None:
            if x is not None:
                self._on_tap_empty()
        elif self.on_tap is not None:
            self.on_tap(index)

    def _on_tap_empty(self) -> None:
        """A click on empty space (or Escape): clear the selection drawn, and tell the owner (``on_tap(None)``)."""
        if self._data is not None:
            self.select(None)
        if self.on_tap is not None:
            self.on_tap(None)

    def _on_box(self, bounds=None) -> None:
        if bounds is None or self._data is None:
            return
        left, bottom, right, top = (float(v) for v in bounds)
        self._selected(points_in_box(self._data.embedding, (left, right), (bottom, top)))

    def _on_lasso(self, geometry=None) -> None:
        if geometry is None or self._data is None or len(geometry) < 3:
            return
        polygon = np.asarray(geometry, dtype=np.float64)
        self._selected(points_in_polygon(self._data.embedding, polygon[:, 0], polygon[:, 1]))

    def _selected(self, indices: Any) -> None:
        indices = np.asarray(indices, dtype=np.int64)
        self.select(indices)
        if self.on_select is not None:
            self.on_select(indices)
