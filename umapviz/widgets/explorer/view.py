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

from ...render.shade import DEFAULT_STYLE, class_colors
from ...render.view import as_view, resolve_view
from ..events import after_event
from ..lifetime import weak_callback
from .inspector import inspector_html

# What the two counts on a frame mean, said under it so that they never look contradictory.
COUNTS_LEGEND = (
    "<b>Red rings</b>: outliers, the points the <i>{method}</i> measure flags now ({outliers:,}); they keep "
    "their class colour inside the ring. <b>Edge arrows</b>: points outside the visible range, flagged or not, "
    "counted per side in the caption under the plot; zooming changes them, not the outlier count."
)


# Frames are drawn at the plot's size in the page, within these bounds: a wider plot scales the image up (the
# render's cost grows with its pixels), a narrower one is too small to point at.
MIN_FRAME, MAX_FRAME = 200, 800
MAX_LEGEND_CLASSES = 24  # more classes than this: the first ones named, and how many more (the palette repeats)


def classes_html(n_labels: int, palette: tuple[str, ...] = DEFAULT_STYLE.palette) -> str:
    """A legend of the class colours: one swatch and code per class, wrapping; "" without classes.

    Parameters
    ----------
    n_labels : int
        Classes of the data (codes 0..n_labels - 1); 0 when it has none or is drawn by density only.
    palette : tuple of str
        The colours the renderer gives the classes, in order.
    """
    if n_labels <= 0:
        return ""
    colours = class_colors(min(n_labels, MAX_LEGEND_CLASSES), palette)
    items = "".join(
        f"<span style='display:inline-block;margin-right:10px;white-space:nowrap'>"
        f"<span style='display:inline-block;width:10px;height:10px;border-radius:50%;background:{colour};"
        f"margin-right:4px;vertical-align:middle'></span>class {code}</span>"
        for code, colour in enumerate(colours)
    )
    more = n_labels - len(colours)
    extra = f"<span style='color:#888'>and {more:,} more (the colours repeat)</span>" if more > 0 else ""
    return f"<div class='umapviz-classes' style='font-size:12px;line-height:1.6'>{items}{extra}</div>"


def caption_html(epoch: int, recorded: bool, off_view: tuple[int, ...]) -> str:
    """The caption row under the plot: the epoch shown and the points outside the view, per side (the image
    has the border triangles only: text on it was covered by points and collided with itself when zoomed).

    Parameters
    ----------
    epoch : int
        The epoch on screen.
    recorded : bool
        Whether it is a recorded frame (scrubbed back), not the layout now.
    off_view : tuple of int
        Points outside the view on the left, right, bottom and top.
    """
    text = f"epoch <b>{epoch:,}</b>" + (" (recorded)" if recorded else "")
    total = sum(off_view)
    if total:
        sides = " · ".join(
            f"{name} {count:,}"
            for name, count in zip(("left", "right", "below", "above"), off_view, strict=True)
            if count
        )
        text += f" · <b>{total:,}</b> point{'s' if total != 1 else ''} outside the view ({sides})"
    return f"<div style='font-size:13px'>{text}</div>"


def cursor_html(x: float | None, y: float | None) -> str:
    """The pointer's position in data units (the plot has no axes), or how to get it when off the plot.

    Parameters
    ----------
    x, y : float or None
        The pointer's data coordinates; None when it is not over the plot.
    """
    if x is None or y is None:
        return "<span style='color:#888;font-size:12px'>point at the plot for its x, y coordinates</span>"
    return f"<span style='font-size:12px'>pointer at x <b>{x:.4g}</b>, y <b>{y:.4g}</b></span>"


def focus_html(inspected: int | None, n_selected: int) -> str:
    """The line under the plot: what is inspected and selected (why the plot is dimmed), and how to clear it.

    Parameters
    ----------
    inspected : int or None
        The inspected point's index.
    n_selected : int
        Points selected.
    """
    parts = []
    if inspected is not None:
        parts.append(f"inspecting <b>#{inspected:,}</b> (the rest dimmed)")
    if n_selected:
        parts.append(f"<b>{n_selected:,}</b> selected")
    if not parts:
        return "<span style='color:#888'>click a point to inspect it; box or lasso to select</span>"
    return " · ".join(parts) + " <span style='color:#888'>— click empty space, press Esc over the plot, or Clear</span>"


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
            responsive=True,
        )
        # The plot follows the output's width: frames are drawn at the size it reports (see _resized).
        self.plot.size_stream.add_subscriber(weak_callback(self._resized))
        self.trail = w.Checkbox(value=False, description="draw the inspected point's trail", indent=False)
        self.focus = w.HTML(value="", layout=w.Layout(flex="1 1 auto"))
        self.clear = w.Button(
            description="Clear",
            icon="times",
            tooltip="clear the inspected point and the selection",
            layout=w.Layout(width="80px", flex="0 0 auto"),
        )
        self.clear.on_click(weak_callback(self._clear_clicked))
        self.focus.add_class("umapviz-focus")
        self.clear.add_class("umapviz-clear")
        self.legend = w.HTML(value="", layout=w.Layout(width="100%"))
        self.caption = w.HTML(value="", layout=w.Layout(width="100%"))
        self.caption.add_class("umapviz-caption")
        # The plot has no axes (the square frame is all image): the pointer's data coordinates are read out here.
        self.cursor = w.HTML(value=cursor_html(None, None), layout=w.Layout(width="100%"))
        self.cursor.add_class("umapviz-cursor")
        self.plot.pointer_stream.add_subscriber(weak_callback(self._pointer_moved))
        self.inspector = w.HTML(value=inspector_html(None), layout=w.Layout(width="360px", max_width="100%"))
        self.trail.add_class("umapviz-trail")
        self.inspector.add_class("umapviz-inspector")
        self.legend.add_class("umapviz-legend")
        self.trail.observe(weak_callback(self._marks_changed), names="value")
        controller.frames.observe(weak_callback(self._frame_changed), names="frame_id")
        controller.observe(weak_callback(self._marks_changed), names=["selection", "point"])
        controller.observe(weak_callback(self._focus_changed), names=["selection", "inspected"])
        self._focus_changed()

    @property
    def widgets(self) -> dict[str, Any]:
        """The view's widgets by name: "view" (the plot), "caption" (the epoch and the points outside the view,
        under the plot), "cursor" (the pointer's coordinates), "trail", "legend", "inspector", "focus" (what is
        inspected and selected, and how to clear it) and "clear" (its button)."""
        return {
            "view": self.plot.widget,
            "trail": self.trail,
            "legend": self.legend,
            "inspector": self.inspector,
            "focus": self.focus,
            "clear": self.clear,
            "caption": self.caption,
            "cursor": self.cursor,
        }

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
        # Every count follows the epoch on screen: a recorded frame's own outliers while scrubbed.
        outliers = run.n_outliers if recorded < 0 else int(run.log.outliers[recorded].sum())
        # The epoch is said in the caption row under the plot: a title over it would make the square plot's
        # frame oblong.
        self.plot.push_frame(image, as_view(view), embedding, labels, **self._marks())
        self.caption.value = caption_html(epoch, recorded >= 0, run.off_view)
        n_classes = run.n_labels if labels is not None and run.n_labels else 0
        self.legend.value = classes_html(n_classes) + COUNTS_LEGEND.format(
            method=html.escape(run.outlier_method), outliers=outliers
        )

    def _marks_changed(self, _change: Any = None) -> None:
        # The inspector first: its text goes out at once, where the marks wait for the frame drawn under them.
        self.inspector.value = inspector_html(self.controller.point)
        if self.controller.run is not None and self.plot.view_range is not None:
            self.plot.set_marks(**self._marks())

    def _focus_changed(self, _change: Any = None) -> None:
        self.focus.value = focus_html(self.controller.inspected, len(self.controller.selection))
        self.clear.disabled = self.controller.inspected is None and not len(self.controller.selection)

    def _marks(self) -> dict[str, Any]:
        c = self.controller
        point = c.point
        highlight = np.empty(0, np.int64) if point is None else np.concatenate([[point.index], point.neighbors])
        trail = np.empty((0, 2))
        if point is not None and self.trail.value:
            trail = c.trail(point.index)[1]
        return {"selection": c.selection, "highlight": highlight, "trail": trail}

    # -- plot -> controller (each error goes to the panel: a callback that raises shows nothing) ------------
    def _pointer_moved(self, x: float | None = None, y: float | None = None, **_other: Any) -> None:
        """The pointer moved over the plot (or left it: None). Never raises: an error in a stream's subscriber
        would stop HoloViews from sending the stream's later events."""
        try:
            self.cursor.value = cursor_html(x, y)
        except Exception as exc:  # said in the panel instead
            self.controller.status.show_error(exc)

    def _resized(self, width: int | None = None, height: int | None = None, **_scale: Any) -> None:
        """The plot's frame took a new size in the page: frames are drawn at it from now on (its width: the
        frame is square), so the image keeps one image pixel per screen pixel at any notebook width."""
        if not width or not height:  # not laid out yet
            return
        size = max(MIN_FRAME, min(int(width), int(height), MAX_FRAME))
        if size != self.controller.params.size:
            self._guarded(lambda: setattr(self.controller.params, "size", size))

    def _zoomed(self, view: Any) -> None:
        self._guarded(lambda: self.controller.reset_view() if view is None else self.controller.zoom(*_ranges(view)))

    def _tapped(self, index: int | None) -> None:
        self._guarded(lambda: self.controller.clear() if index is None else self.controller.inspect(index))

    def _clear_clicked(self, _button: Any = None) -> None:
        self._guarded(self.controller.clear)

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
        self.plot.range_decided()  # a later wheel zoom to a range drawn before is a zoom, not an echo
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
        # A wheel zoom after it may well repeat one before it (the same step at the same place): a zoom.
        self.plot.range_decided()
        self.controller.reset_view()

    def inspect(self, index: int | None):
        """Inspect point ``index`` (as a click on it does): returns its ``umapviz.probe.PointInfo`` and shows
        it in the inspector, the point and its graph neighbours highlighted, the rest dimmed. The point stays
        inspected across a change of strategy or n_chunks, its information recomputed. ``inspect(None)`` clears
        it (as a click on empty space, the Clear button or ``clear()`` do).

        Parameters
        ----------
        index : int or None
            The point's row in the layout; None: inspect nothing.
        """
        return self.controller.inspect(index)

    def clear(self) -> None:
        """Clear the inspected point and the selection (the view's Clear button, a click on empty plot space)."""
        self.controller.clear()

    @property
    def trail(self) -> bool:
        """Whether the inspected point's trail over the recorded epochs is drawn (the checkbox under the view)."""
        return bool(self._view.trail.value)

    @trail.setter
    def trail(self, value: bool) -> None:
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"trail={value!r} must be True or False.")
        self._view.trail.value = bool(value)

    def flung(self) -> np.ndarray:
        """The points the outlier measure flags now, busiest (highest degree) first."""
        return self.controller.flung()

    def select(self, indices: Any) -> np.ndarray:
        """Draw the points ``indices`` selected (as a box or lasso selection does); None or empty clears it.

        Parameters
        ----------
        indices : sequence of int or None
            Point indices.
        """
        return self.controller.select(indices)

    def clear_selection(self) -> None:
        """Select nothing (as ``select(None)``)."""
        self.controller.clear_selection()

    @property
    def selection(self) -> np.ndarray:
        """The selected points' indices."""
        return self.controller.selection


def _ranges(view: Any) -> tuple:
    return view.x_range, view.y_range
