"""A live HoloViews view of a running layout: push frames; zoom, pan, hover, click and select on it.

The image is a ``hv.DynamicMap`` over a ``Pipe`` (the latest frame) and the plot's ``RangeXY``, ``PlotSize``
and ``PlotReset`` streams. Each event re-renders through ``umapviz.render.render`` (datashader for NumPy,
the CUDA kernel for CuPy), so a zoomed-in region is aggregated afresh at full resolution, outliers stay
ringed discs at any zoom, and a CuPy embedding never leaves the GPU. ``PointerXY``, ``Tap``, ``BoundsXY``
and ``Lasso`` streams on the same plot answer hover, click and box/lasso selection through the point
look-ups of ``umapviz.inspect``; marks (a selection, an inspected point and its neighbours, a trail) are
drawn into the frame (see ``marks.py``), so ``frame()`` returns what the user sees.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401 - registers the bokeh options used below
import numpy as np
from holoviews.streams import BoundsXY, Lasso, Pipe, PlotReset, PlotSize, PointerXY, RangeXY, Tap

from umapviz.render.aggregate import check_embedding, check_labels, check_outliers
from umapviz.render.frame import render
from umapviz.render.live_picking import PointPicking
from umapviz.render.marks import Marks, check_indices, check_trail, draw_marks
from umapviz.render.shade import DEFAULT_STYLE, Style
from umapviz.render.view import View, ViewSpec, as_view, check_pixels, resolve_view

# A range reported by the plot that matches one of the last few views drawn is the plot echoing a frame back
# (a frame can be overtaken by the next push before the browser reports it), not the user zooming.
ECHO_MEMORY = 8
ECHO_TOLERANCE = 1e-6  # relative to the view's span
TOOLS = ["tap", "box_select", "lasso_select"]  # besides HoloViews' pan, wheel zoom, box zoom, save, reset


@dataclass(frozen=True)
class _Frame:
    """A frame drawn elsewhere (``push_frame``): its RGBA, the View it shows and the number of its push."""

    rgba: np.ndarray
    view: View
    serial: int


@dataclass(frozen=True)
class _Pushed:
    embedding: Any
    labels: Any
    outliers: Any
    n_labels: int | None
    caption: str
    label_names: tuple[str, ...] | None
    serial: int  # tells two pushes of the same array apart


class LiveView(PointPicking):
    """A HoloViews DynamicMap (bokeh backend) of the latest pushed embedding, to zoom, hover, click and select.

    >>> hv.extension("bokeh")                           # once per notebook, in its own cell
    >>> live = LiveView(view="robust", on_tap=print); live
    >>> live.push(optimizer.embedding, labels=y, outliers=mask, caption="epoch 10")

    Parameters
    ----------
    width, height : int
        The image's size in pixels (the plot's own size once shown, when it reports one).
    view : "robust", "auto" or (xmin, xmax, ymin, ymax)
        How a frame is framed before the user zooms (see ``umapviz.render.resolve_view``).
    style : Style
        Colours and shading.
    follow : bool
        True: each push re-frames to the new data until the user zooms. False ("lock view"): the first
        frame's range is kept across pushes, so epochs compare; a zoom is kept either way until ``reset_view()``.
    title : str
        The plot's title, before each frame's caption.
    on_tap, on_select, on_hover : callable, optional
        Called with the clicked point's index, the indices selected by a box or lasso, and the hovered
        ``(index, label)`` (or None away from any point).
    on_range : callable, optional
        For frames drawn elsewhere (``push_frame``): called with the View the user zoomed or panned to, or None
        for a reset; the owner draws the range asked for and pushes it.
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
        on_tap: Callable[[int], Any] | None = None,
        on_select: Callable[[np.ndarray], Any] | None = None,
        on_hover: Callable[[tuple[int, Any] | None], Any] | None = None,
        on_range: Callable[[View | None], Any] | None = None,
    ) -> None:
        self.width, self.height = check_pixels(width, "width"), check_pixels(height, "height")
        if not isinstance(view, str):
            view = as_view(view)  # a bad fixed view fails here, not at the first draw
        self.view, self.style, self.follow, self.title = view, style, follow, title
        self.on_tap, self.on_select, self.on_hover, self.on_range = on_tap, on_select, on_hover, on_range
        self._lock = threading.RLock()  # the browser's events and a worker's pushes render from two threads
        self._data: _Pushed | None = None
        self._given: _Frame | None = None  # a frame drawn elsewhere (push_frame), None when this view draws
        self._marks = Marks()
        self._marks_serial = 0  # counts changes of the marks: part of the key of the frame drawn
        self._user_view: View | None = None  # set by a zoom (the user's or zoom()) until reset_view()
        self._locked_view: View | None = None  # follow=False: the frame kept across pushes
        self._recent_views: deque[View] = deque(maxlen=ECHO_MEMORY)
        # (render key, marked RGBA, View, Aggregate or None for a frame drawn elsewhere)
        self._shown: tuple[tuple, np.ndarray, View, Any] | None = None
        self.hovered: tuple[int, Any] | None = None
        self.selection = np.empty(0, dtype=np.int64)

        self.pipe = Pipe(data=None)
        self.size_stream, self.reset_stream = PlotSize(), PlotReset()
        self.reset_stream.add_subscriber(self._on_reset, precedence=0)
        # The range does not trigger a draw by itself: a zoom redraws through the pipe once it is known to be the
        # user's, and a frame drawn elsewhere stays where the user put it until its owner sends the new one.
        self.image = hv.DynamicMap(self._element, streams=[self.pipe, self.size_stream, self.reset_stream])
        self.range_stream = RangeXY(source=self.image)
        self.range_stream.add_subscriber(self._on_range, precedence=0)
        self.pointer_stream = PointerXY(source=self.image)
        self.tap_stream = Tap(source=self.image)
        self.box_stream = BoundsXY(source=self.image)
        self.lasso_stream = Lasso(source=self.image)
        self.tap_stream.add_subscriber(self._on_tap)
        self.box_stream.add_subscriber(self._on_box)
        self.lasso_stream.add_subscriber(self._on_lasso)
        self.hover_text = hv.DynamicMap(self._hover_element, streams=[self.pointer_stream])
        self.dmap = (self.image * self.hover_text).opts(
            {
                "RGB": dict(
                    width=self.width,
                    height=self.height,
                    framewise=True,
                    xaxis=None,
                    yaxis=None,
                    tools=TOOLS,
                    active_tools=["wheel_zoom", "pan"],
                    show_legend=False,
                    hooks=[self._show_caption],
                    # One image and a few marks: the 2-D canvas draws them at once, where WebGL (HoloViews'
                    # default) costs a GPU read-back per frame, or a software GL pass without a GPU.
                    backend_opts={"plot.output_backend": "canvas"},
                ),
                "Text": dict(text_color="white", text_font_size="11pt", text_align="left", text_baseline="bottom"),
            },
            backend="bokeh",  # whichever backend the notebook loaded (none, for a plot inside ipywidgets)
        )

    # -- frames ------------------------------------------------------------------------------------------
    def push(
        self,
        embedding: Any,
        labels: Any = None,
        outliers: Any = None,
        *,
        n_labels: int | None = None,
        caption: str = "",
        highlight: Any = None,
        trail: Any = None,
        selection: Any = None,
        label_names: Any = None,
    ) -> None:
        """Show a new frame: an (N, 2) NumPy or CuPy embedding, read when drawn, not copied.

        Parameters
        ----------
        embedding : (N, 2) array
            The positions; NumPy or CuPy.
        labels, outliers, n_labels
            Class codes 0..K-1 and an outlier mask or indices, as for ``umapviz.render.image``.
        caption : str
            Shown in the title (after it, the number of points outside the view, if any).
        highlight, trail, selection
            Marks (see ``umapviz.render.marks.Marks``): None keeps the ones shown, an empty array clears one.
        label_names : sequence of str, optional
            Names of the label codes, shown on hover instead of the code.
        """
        embedding = check_embedding(embedding)
        # Checked now: at draw time HoloViews only logs the error, and the plot silently stops updating.
        n = int(embedding.shape[0])
        if labels is not None:
            labels, n_labels = check_labels(labels, n, n_labels)
        if outliers is not None:
            outliers = check_outliers(outliers, n)
        marks = self._checked_marks(n, highlight, trail, selection)
        with self._lock:
            serial = self._data.serial + 1 if self._data is not None else 1
            names = tuple(str(v) for v in label_names) if label_names is not None else None
            self._data = _Pushed(embedding, labels, outliers, n_labels, caption, names, serial)
            self._given = None
            self._marks = marks
            self._marks_serial += 1
            if marks.selection is not None:
                self.selection = marks.selection
        self._redraw()

    def push_frame(
        self,
        rgba: np.ndarray,
        view: Any,
        embedding: Any,
        labels: Any = None,
        *,
        caption: str = "",
        label_names: Any = None,
        highlight: Any = None,
        trail: Any = None,
        selection: Any = None,
    ) -> None:
        """Show a frame drawn elsewhere (e.g. by a controller that owns the view range), with marks over it.

        Zoom, pan and reset then call ``on_range`` instead of drawing here; hover, click and selection pick
        points in ``embedding``.

        Parameters
        ----------
        rgba : (H, W, 4) uint8 array
            The frame, row 0 at the top.
        view : View or (xmin, xmax, ymin, ymax)
            The data range it shows.
        embedding : (N, 2) array
            The positions drawn (NumPy or CuPy), to pick points in and place marks at.
        labels, caption, label_names, highlight, trail, selection
            As for ``push``.
        """
        rgba = np.asarray(rgba)
        if rgba.ndim != 3 or rgba.shape[2] != 4 or rgba.dtype != np.uint8:
            raise ValueError(f"rgba must be an (H, W, 4) uint8 image; got shape {rgba.shape}, dtype {rgba.dtype}.")
        view = as_view(view)
        embedding = check_embedding(embedding)
        n = int(embedding.shape[0])
        n_labels = None
        if labels is not None:
            labels, n_labels = check_labels(labels, n, None)
        marks = self._checked_marks(n, highlight, trail, selection)
        with self._lock:
            serial = self._data.serial + 1 if self._data is not None else 1
            names = tuple(str(v) for v in label_names) if label_names is not None else None
            self._data = _Pushed(embedding, labels, None, n_labels, caption, names, serial)
            self._given = _Frame(rgba, view, serial)
            self._user_view = None  # the frame's owner keeps the range
            self._marks = marks
            self._marks_serial += 1
            if marks.selection is not None:
                self.selection = marks.selection
        self._redraw()

    def set_marks(self, *, highlight: Any = None, trail: Any = None, selection: Any = None) -> None:
        """Change the marks on the frame shown (None keeps one, an empty array clears it) and redraw."""
        with self._lock:
            n = self._data.embedding.shape[0] if self._data is not None else 0
            self._marks = self._checked_marks(n, highlight, trail, selection)
            self._marks_serial += 1
            if self._marks.selection is not None:
                self.selection = self._marks.selection
        self._redraw()

    def select(self, indices: Any) -> None:
        """Draw ``indices`` (or a boolean mask) as selected, the other points dimmed; empty clears it."""
        self.set_marks(selection=np.empty(0, dtype=np.int64) if indices is None else indices)

    def _checked_marks(self, n: int, highlight: Any, trail: Any, selection: Any) -> Marks:
        old = self._marks
        changes = {}
        if highlight is not None:
            changes["highlight"] = check_indices(highlight, n, "highlight")
        if trail is not None:
            changes["trail"] = check_trail(trail)
        if selection is not None:
            changes["selection"] = check_indices(selection, n, "selection")
        marks = replace(old, **changes)
        for name in ("highlight", "selection"):  # marks kept from an earlier push must still fit this one
            values = getattr(marks, name)
            if values is not None and values.size and values.max() >= n:
                marks = replace(marks, **{name: None})
        return marks

    def frame(self) -> np.ndarray:
        """The (H, W, 4) uint8 RGBA image shown now: the visible range, with its marks."""
        with self._lock:
            return self._render(*self._size())[1].copy()

    @property
    def last_aggregate(self):
        """The Aggregate behind the image shown (grids, view, off-view counts); None before a frame, and for
        a frame drawn elsewhere."""
        return self._shown[3] if self._shown is not None else None

    # -- the visible range ----------------------------------------------------------------------------------
    @property
    def view_range(self) -> tuple[tuple[float, float], tuple[float, float]] | None:
        """((x0, x1), (y0, y1)) in data units: the range shown (or about to be); None before any push."""
        with self._lock:
            if self._data is None:
                return None
            view = self._given.view if self._given is not None else self._target_view(*self._size())
            return view.x_range, view.y_range

    def zoom(self, x_range: tuple[float, float], y_range: tuple[float, float]) -> None:
        """Show the data range ``x_range`` x ``y_range`` (kept across pushes until ``reset_view()``)."""
        view = View(tuple(map(float, x_range)), tuple(map(float, y_range)))  # checks finite, low < high
        self._zoom_to(view)

    def _zoom_to(self, view: View) -> None:
        with self._lock:
            if view == self._user_view:  # already shown: linked views zooming each other stop here
                return
            self._user_view = view
            given = self._given is not None
        if given:
            if self.on_range is not None:
                self.on_range(view)
        else:
            self._redraw()

    @property
    def zoomed_view(self) -> View | None:
        """The range the user (or ``zoom()``) chose, kept across pushes; None while framed automatically."""
        return self._user_view

    def reset_view(self) -> None:
        """Forget the zoom and re-frame to the data (the constructor's view mode) now; for frames drawn
        elsewhere, ask their owner to (``on_range(None)``)."""
        with self._lock:
            self._user_view = self._locked_view = None
            given = self._given is not None
        if given:
            if self.on_range is not None:
                self.on_range(None)
        else:
            self._redraw()

    def _target_view(self, width: int, height: int) -> View:
        if self._user_view is not None:
            return self._user_view
        if not self.follow and self._locked_view is not None:
            return self._locked_view
        view = resolve_view(self._data.embedding, self.view, width, height)
        if not self.follow:
            self._locked_view = view
        return view

    def _on_range(self, x_range=None, y_range=None) -> None:
        if x_range is None or y_range is None or None in (*x_range, *y_range):
            return
        try:
            view = View(tuple(map(float, x_range)), tuple(map(float, y_range)))
        except ValueError:  # a degenerate range from the plot: nothing to draw at
            return
        with self._lock:
            if any(_same_view(view, seen) for seen in self._recent_views):
                return
        self._zoom_to(view)

    def _on_reset(self, resetting: bool = False) -> None:
        if resetting:
            self.reset_view()

    # -- drawing --------------------------------------------------------------------------------------------
    def _size(self) -> tuple[int, int]:
        width, height = self.size_stream.width, self.size_stream.height
        return int(width or self.width), int(height or self.height)

    def _render(self, width: int, height: int) -> tuple[tuple, np.ndarray, View, Any]:
        """(key, marked RGBA, View, Aggregate or None) for the current data, view, size and marks; cached by key."""
        data, given = self._data, self._given
        if data is None:
            blank = np.zeros((height, width, 4), dtype=np.uint8)
            return (None,), blank, View((-1.0, 1.0), (-1.0, 1.0)), None
        if given is not None:
            key = (data.serial, self._marks_serial)
            if self._shown is None or self._shown[0] != key:
                rgba = draw_marks(given.rgba, given.view, data.embedding, self._marks, self.style.background)
                self._recent_views.append(given.view)
                self._shown = (key, rgba, given.view, None)
            return self._shown
        view = self._target_view(width, height)
        key = (data.serial, width, height, view, self._marks_serial)
        if self._shown is not None and self._shown[0] == key:
            return self._shown
        rgba, agg = render(
            data.embedding, data.labels, data.outliers, width, height, view, n_labels=data.n_labels, style=self.style
        )
        rgba = draw_marks(rgba, agg.view, data.embedding, self._marks, self.style.background)
        self._recent_views.append(agg.view)
        self._shown = (key, rgba, agg.view, agg)
        return self._shown

    def _element(self, **stream_values):  # the streams only trigger it: it draws the current state
        with self._lock:
            if self._data is None:  # nothing pushed yet: an empty black square
                return hv.RGB(np.zeros((2, 2, 4), dtype=np.uint8), bounds=(-1, -1, 1, 1))
            _, rgba, view, _agg = self._render(*self._size())
            xmin, xmax, ymin, ymax = view.bounds
            # The caption goes into the title through a hook: as the element's label it would change the
            # overlay's layer key on every frame, and HoloViews would stop updating the image shown.
            return hv.RGB(rgba, bounds=(xmin, ymin, xmax, ymax))

    @property
    def caption(self) -> str:
        """The title shown over the frame: the title, the push's caption, the points outside the view."""
        agg = self.last_aggregate
        parts = [self.title, self._data.caption if self._data is not None else ""]
        if agg is not None and agg.n_out_of_view:
            parts.append(f"({agg.n_out_of_view:,} points outside the view)")
        return "  ".join(p for p in parts if p)

    def _show_caption(self, plot, element) -> None:
        plot.handles["plot"].title.text = self.caption

    def _redraw(self) -> None:
        """Have the plot draw the current state (its streams call ``_element``)."""
        if self._data is not None:
            self.pipe.event(data=self._data)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self.dmap._repr_mimebundle_(include, exclude)


def _same_view(a: View, b: View) -> bool:
    tol_x = ECHO_TOLERANCE * (b.x_range[1] - b.x_range[0])
    tol_y = ECHO_TOLERANCE * (b.y_range[1] - b.y_range[0])
    return (
        abs(a.x_range[0] - b.x_range[0]) <= tol_x
        and abs(a.x_range[1] - b.x_range[1]) <= tol_x
        and abs(a.y_range[0] - b.y_range[0]) <= tol_y
        and abs(a.y_range[1] - b.y_range[1]) <= tol_y
    )
