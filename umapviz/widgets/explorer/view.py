"""The Explorer's picture: its controller's frames in the interactive plot, with marks, and the inspector.

The controller draws every frame (at its view range, with the project's renderer); this view shows it in a
``Plot`` (zoom, pan, hover, click, box and lasso select) and sends what the user does back to the controller:
a zoom or pan sets its view range (it redraws at full resolution), a click inspects the point, a selection
selects. The marks (the selection; the inspected point with its graph neighbours; its trail) are drawn over
each frame from the controller's ``selection``, ``inspected`` and ``point``.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from ...render.view import as_view, resolve_view
from ..events import after_event
from ..lifetime import weak_callback
from .inspector import inspector_html

# What the two counts on a frame mean, said under it so that they never look contradictory.
COUNTS_LEGEND = (
    "<b>Red rings</b>: outliers, the points the <i>{method}</i> measure flags now ({outliers:,}); they keep "
    "their class colour inside the ring. <b>Edge arrows and their numbers</b>: points outside the visible "
    "range, flagged or not; zooming changes them, not the outlier count."
)


class ExplorerView:
    """The plot, the trail checkbox, the counts' legend and the inspector of one Explorer.

    Parameters
    ----------
    controller : ExplorerController
        The controller whose frames, selection and inspected point are shown.
    size : int
        The plot's width and height in pixels.
    """

    def __init__(self, controller: Any, size: int) -> None:
        import ipywidgets as w  # noqa: PLC0415 - widget library, loaded with the panels only

        from ..plot import Plot  # noqa: PLC0415 - HoloViews, bokeh and panel, loaded with the panels only

        self.controller = controller
        self.plot = Plot(
            size,
            size,
            on_range=weak_callback(self._zoomed),
            on_tap=weak_callback(self._tapped),
            on_select=weak_callback(self._selected),
        )
        self.trail = w.Checkbox(value=False, description="draw the inspected point's trail", indent=False)
        self.legend = w.HTML(value="", layout=w.Layout(width=f"{size}px"))
        self.inspector = w.HTML(value=inspector_html(None), layout=w.Layout(width="360px"))
        self.trail.add_class("umapviz-trail")
        self.inspector.add_class("umapviz-inspector")
        self.legend.add_class("umapviz-legend")
        self.trail.observe(weak_callback(self._marks_changed), names="value")
        controller.frames.observe(weak_callback(self._frame_changed), names="frame_id")
        controller.observe(weak_callback(self._marks_changed), names=["selection", "point"])

    @property
    def widgets(self) -> dict[str, Any]:
        """The view's widgets by name: "view" (the plot), "trail", "legend", "inspector"."""
        return {"view": self.plot.widget, "trail": self.trail, "legend": self.legend, "inspector": self.inspector}

    def frame(self) -> np.ndarray:
        """The image on screen: the controller's frame with the marks over it."""
        self.controller.frame()  # waits for queued work; raises when there is no frame
        return self.plot.frame()

    @property
    def view_range(self) -> tuple | None:
        """((x0, x1), (y0, y1)) of the frame shown, in data units."""
        return self.controller.view_range or self.plot.view_range

    # -- controller -> plot -----------------------------------------------------------------------------------
    def _frame_changed(self, _change: Any = None) -> None:
        """A new frame (on the worker thread, before the layout moves on): show it with its view and marks."""
        c = self.controller
        run, image = c.run, c.frames.image
        if run is None or image is None:
            return
        recorded = c.frames.recorded_shown
        embedding = run.optimizer.device_embedding if recorded < 0 else run.log.embeddings[recorded]
        spec = c.frames.view_spec(run, c.params.size, c.params.lock_view, c.view_range)
        view = resolve_view(embedding, spec, image.shape[1], image.shape[0]) if isinstance(spec, str) else spec
        labels = run.labels if c.params.colour_by_class else None
        epoch = c.epoch if recorded < 0 else int(run.log.epochs[recorded])
        caption = f"epoch {epoch}" + (" (recorded)" if recorded >= 0 else "")
        self.plot.push_frame(image, as_view(view), embedding, labels, caption=caption, **self._marks())
        self.legend.value = COUNTS_LEGEND.format(method=html.escape(run.outlier_method), outliers=run.n_outliers)

    def _marks_changed(self, _change: Any = None) -> None:
        if self.controller.run is not None and self.plot.view_range is not None:
            self.plot.set_marks(**self._marks())
        self.inspector.value = inspector_html(self.controller.point)

    def _marks(self) -> dict[str, Any]:
        c = self.controller
        point = c.point
        highlight = np.empty(0, np.int64) if point is None else np.concatenate([[point.index], point.neighbors])
        trail = np.empty((0, 2))
        if point is not None and self.trail.value:
            trail = c.trail(point.index)[1]
        return {"selection": c.selection, "highlight": highlight, "trail": trail}

    # -- plot -> controller (each error goes to the panel: a callback that raises shows nothing) ------------
    def _zoomed(self, view: Any) -> None:
        self._guarded(lambda: self.controller.reset_view() if view is None else self.controller.zoom(*_ranges(view)))

    def _tapped(self, index: int) -> None:
        self._guarded(lambda: self.controller.inspect(index))

    def _selected(self, indices: np.ndarray) -> None:
        self._guarded(lambda: self.controller.select(indices))

    def _guarded(self, action: Any) -> None:
        after_event(action, self.controller.status.show_error)


class LookingCloser:
    """The Explorer's zoom, inspection and selection (a mixin: it uses the panel's ``controller`` and ``_view``)."""

    @property
    def plot(self):
        """The interactive plot (``umapviz.widgets.plot.Plot``): its HoloViews streams are the browser's events."""
        return self._view.plot

    def zoom(self, x_range: tuple[float, float], y_range: tuple[float, float]) -> tuple:
        """Show ``x_range`` x ``y_range`` (data units) at full resolution, kept across frames until
        ``reset_view()``; returns the view range.

        Parameters
        ----------
        x_range, y_range : pair of float
            (low, high), finite, low < high.
        """
        view_range = self.controller.zoom(x_range, y_range)
        if not self.controller.worker.playing:
            self.controller.wait()  # the zoomed frame drawn, as frame() will show it
        return view_range

    @property
    def view_range(self) -> tuple | None:
        """((x0, x1), (y0, y1)) of the frame shown, in data units (None before the first frame)."""
        return self._view.view_range

    def reset_view(self) -> None:
        """Back to the automatic range (the layout's robust range, or the locked one)."""
        self.controller.reset_view()

    def inspect(self, index: int):
        """Inspect point ``index`` (as a click on it does): returns its ``umapviz.probe.PointInfo`` and shows
        it in the inspector, the point and its graph neighbours highlighted. The point stays inspected across a
        change of strategy or n_chunks, its information recomputed.

        Parameters
        ----------
        index : int
            The point's row in the layout.
        """
        return self.controller.inspect(index)

    def flung(self) -> np.ndarray:
        """The points the outlier measure flags now, busiest (highest degree) first."""
        return self.controller.flung()

    def select(self, indices: Any) -> np.ndarray:
        """Draw the points ``indices`` selected (as a box or lasso selection does); empty clears it.

        Parameters
        ----------
        indices : sequence of int
            Point indices.
        """
        return self.controller.select(indices)

    @property
    def selection(self) -> np.ndarray:
        """The selected points' indices."""
        return self.controller.selection


def _ranges(view: Any) -> tuple:
    return view.x_range, view.y_range
