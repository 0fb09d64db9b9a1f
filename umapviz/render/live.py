"""A live HoloViews view of a running layout: push frames, zoom and pan re-aggregate at the visible range.

The view is a ``hv.DynamicMap`` driven by three streams: a ``Pipe`` that carries the latest frame, and
``RangeXY`` and ``PlotSize`` from the bokeh plot. Each event re-renders through ``umapviz.render.render``
(datashader for NumPy, the CUDA kernel for CuPy), so a zoomed-in region is aggregated afresh at full
resolution, outliers stay ringed discs at any zoom, and a CuPy embedding never leaves the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from umapviz.render.aggregate import check_embedding, check_labels, check_outliers
from umapviz.render.frame import render
from umapviz.render.shade import DEFAULT_STYLE, Style
from umapviz.render.view import View, ViewSpec, check_pixels


@dataclass(frozen=True)
class _Pushed:
    embedding: Any
    labels: Any
    outliers: Any
    n_labels: int | None
    caption: str
    serial: int  # tells two pushes of the same array apart


class LiveView:
    """A HoloViews DynamicMap (bokeh backend) showing the latest pushed embedding.

    >>> hv.extension("bokeh")                           # once per notebook, in its own cell
    >>> live = LiveView(view="robust"); live            # display it in JupyterLab
    >>> live.push(optimizer.embedding, labels=y, outliers=mask, caption="epoch 10")

    follow: re-frame the view to the data on each push (True), or keep the visible range across pushes so
        epochs compare (False); zooming in always re-aggregates at the visible range.
    """

    def __init__(
        self,
        width: int = 600,
        height: int = 600,
        view: ViewSpec = "robust",
        *,
        style: Style = DEFAULT_STYLE,
        follow: bool = True,
        title: str = "",
    ) -> None:
        import holoviews as hv  # noqa: PLC0415 - plotting library, imported where used
        import holoviews.plotting.bokeh  # noqa: F401, PLC0415 - registers the bokeh options used below
        from holoviews.streams import Pipe, PlotSize, RangeXY  # noqa: PLC0415

        width, height = check_pixels(width, "width"), check_pixels(height, "height")
        self.width, self.height, self.view, self.style = width, height, view, style
        self.follow = follow
        self.title = title
        self.pipe = Pipe(data=None)
        self.range_stream = RangeXY()
        self.size_stream = PlotSize()
        self._serial = 0
        self._refit = True
        self._last: tuple[Any, Any] | None = None  # (key of the last render, its element)
        self.last_aggregate = None  # the Aggregate behind the image on screen (grids, view, off-view counts)
        self.dmap = hv.DynamicMap(self._element, streams=[self.pipe, self.range_stream, self.size_stream])
        self.dmap = self.dmap.opts(
            width=width, height=height, framewise=True, active_tools=["wheel_zoom"],
            xaxis=None, yaxis=None, title=title, backend="bokeh",
        )

    def push(
        self,
        embedding: Any,
        labels: Any = None,
        outliers: Any = None,
        *,
        n_labels: int | None = None,
        caption: str = "",
    ) -> None:
        """Show a new frame (NumPy or CuPy (N, 2)); the array is read when drawn, not copied."""
        embedding = check_embedding(embedding)
        # Checked now: at draw time HoloViews only logs the error, and the plot silently stops updating.
        n = int(embedding.shape[0])
        if labels is not None:
            labels, n_labels = check_labels(labels, n, n_labels)
        if outliers is not None:
            outliers = check_outliers(outliers, n)
        self._serial += 1
        self._refit = self.follow or self._last is None
        self.pipe.send(_Pushed(embedding, labels, outliers, n_labels, caption, self._serial))

    def reset_view(self) -> None:
        """Re-frame to the data (the constructor's view mode) on the next draw."""
        self._refit = True
        if self.pipe.data is not None:
            self.pipe.event(data=self.pipe.data)

    def _element(self, data: _Pushed | None, x_range=None, y_range=None, width=None, height=None, scale=1.0):
        import holoviews as hv  # noqa: PLC0415

        if data is None:  # nothing pushed yet: an empty black square
            return hv.RGB(np.zeros((2, 2, 4), dtype=np.uint8), bounds=(-1, -1, 1, 1))
        w = int(width or self.width)
        h = int(height or self.height)
        if self._refit or x_range is None or y_range is None:
            view = self.view
        else:
            view = View(tuple(map(float, x_range)), tuple(map(float, y_range)))
        key = (data.serial, w, h, view if isinstance(view, View) else None)
        if self._last is not None and not self._refit and self._last[0] == key:
            return self._last[1]  # the plot echoing back the range we just drew: nothing new to draw
        rgba, agg = render(data.embedding, data.labels, data.outliers, w, h, view,
                           n_labels=data.n_labels, style=self.style)
        self._refit = False
        xmin, xmax, ymin, ymax = agg.view.bounds
        label = data.caption
        if agg.n_out_of_view:
            label = f"{label}  ({agg.n_out_of_view:,} points outside the view)".strip()
        element = hv.RGB(rgba, bounds=(xmin, ymin, xmax, ymax), label=label)
        self.last_aggregate = agg
        self._last = ((data.serial, w, h, agg.view), element)
        return element

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self.dmap._repr_mimebundle_(include, exclude)
