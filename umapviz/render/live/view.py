"""A live HoloViews view of a running layout: push frames; zoom, pan, hover, click and select on it.

The image is a ``hv.DynamicMap`` over a ``Pipe`` (the latest frame) and the plot's ``RangeXY``, ``PlotSize``
and ``PlotReset`` streams. Each event re-renders through ``umapviz.render.render`` (a Numba pass for NumPy,
the CUDA kernel for CuPy), so a zoomed-in region is aggregated afresh at full resolution, outliers stay
ringed discs at any zoom, and a CuPy embedding never leaves the GPU. ``PointerXY``, ``Tap``, ``BoundsXY``
and ``Lasso`` streams on the same plot answer hover, click and box/lasso selection through the point
look-ups of ``umapviz.probe``; marks (a selection, an inspected point and its neighbours, a trail) are
drawn into the frame (see ``render/marks.py``), so ``frame()`` returns what the user sees. The range shown
(:mod:`.view_range`), the marks (:mod:`.marks`) and the frame drawn (:mod:`.frames`) are kept by the objects of
those modules; ``LiveView`` wires them to the plot's streams.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import holoviews as hv
import holoviews.plotting.bokeh  # registers the bokeh options used below
import numpy as np
import panel as pn
from bokeh.events import MouseLeave
from bokeh.models import CustomJS
from holoviews.streams import BoundsXY, Lasso, Pipe, PlotReset, PlotSize, PointerXY, RangeXY, Tap

from umapviz._backend import to_host
from umapviz.render.aggregate import check_embedding, check_labels, check_outliers
from umapviz.render.live.frames import FrameCache, GivenFrame, Pushed
from umapviz.render.live.marks import LiveMarks
from umapviz.render.live.picking import PointPicking
from umapviz.render.live.view_range import ECHO_MEMORY, ECHO_TOLERANCE, ViewRange
from umapviz.render.shade.style import PANEL_STYLE, Style
from umapviz.render.view import View, ViewSpec, as_view, check_pixels

__all__ = ["ECHO_MEMORY", "ECHO_TOLERANCE", "TOOLS", "LiveView", "bokeh_options"]

ESCAPE_TAG = "umapviz-escape"
# Runs in the page when the pointer moves over the plot: from then on, Escape while the pointer is over it sets the
# figure's tags to [ESCAPE_TAG, a fresh number] (a change BokehJS sends back to the kernel). Capture phase: the
# notebook's own Escape handling must not swallow it first.
ESCAPE_JS = f"""
fig.__umapviz_over = true;
if (!fig.__umapviz_escape) {{
  fig.__umapviz_escape = true;
  document.addEventListener("keydown", (event) => {{
    if (event.key === "Escape" && fig.__umapviz_over) {{ fig.tags = ["{ESCAPE_TAG}", Date.now()]; }}
  }}, true);
}}
"""
TOOLS = ["tap", "box_select", "lasso_select"]  # besides HoloViews' pan, wheel zoom, box zoom, save, reset
# The frame is a NumPy array: naming its one interface spares HoloViews trying the others, whose type checks
# import pandas (a quarter of a second of a panel's start) for a frame that is never a DataFrame.
RGB_DATATYPE = ["image"]
MIN_RESPONSIVE = 240  # pixels: a responsive plot narrower than this is too small to point at
TOOLBAR_WIDTH = 30  # pixels: BokehJS's toolbar beside the frame (one tool button)
# Milliseconds after a wheel step or a pan before BokehJS reports the range (its "interactive" end; 500 by
# default): the kernel hears of a zoom only then, so it bounds the time from the wheel to the redrawn frame.
RANGE_REPORT_MS = 60


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
        Called with the clicked point's index (None for a click on empty space, which also clears the
        selection drawn), the indices selected by a box or lasso, and the hovered ``(index, label)`` (or None
        away from any point, and once the pointer leaves the plot).
    on_range : callable, optional
        For frames drawn elsewhere (``push_frame``): called with the View the user zoomed or panned to, or None
        for a reset; the owner draws the range asked for and pushes it.
    responsive : bool
        True: the plot takes its container's width and stays square (``width`` and ``height`` are then the
        size drawn until the plot reports its own, see ``size_stream``); its frame is square while the caption
        is empty (a title over it takes height).
    """

    def __init__(
        self,
        width: int = 600,
        height: int = 600,
        view: ViewSpec = "robust",
        *,
        style: Style = PANEL_STYLE,
        follow: bool = True,
        title: str = "",
        on_tap: Callable[[int], Any] | None = None,
        on_select: Callable[[np.ndarray], Any] | None = None,
        on_hover: Callable[[tuple[int, Any] | None], Any] | None = None,
        on_range: Callable[[View | None], Any] | None = None,
        responsive: bool = False,
    ) -> None:
        self.responsive = bool(responsive)
        self.width, self.height = check_pixels(width, "width"), check_pixels(height, "height")
        self._range = ViewRange(view, follow)  # a bad fixed view fails here, not at the first draw
        self.style, self.title = style, title
        self.on_tap, self.on_select, self.on_hover, self.on_range = on_tap, on_select, on_hover, on_range
        self._lock = threading.RLock()  # the browser's events and a worker's pushes render from two threads
        self._data: Pushed | None = None
        self._given: GivenFrame | None = None  # a frame drawn elsewhere (push_frame), None when this view draws
        self._marks = LiveMarks()
        self._frames = FrameCache()
        self.hovered: tuple[int, Any] | None = None

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
            bokeh_options(self.width, self.height, self._show_caption, responsive=self.responsive),
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
        marks = self._marks.checked(n, highlight, trail, selection)
        with self._lock:
            self._data = Pushed.after(self._data, embedding, labels, outliers, n_labels, caption, label_names)
            self._given = None
            self._marks.show(marks)
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
        marks = self._marks.checked(n, highlight, trail, selection)
        with self._lock:
            self._data = Pushed.after(self._data, embedding, labels, None, n_labels, caption, label_names)
            self._given = GivenFrame(rgba, view, self._data.serial)
            self._range.zoomed = None  # the frame's owner keeps the range
            self._marks.show(marks)
        self._redraw()

    def set_marks(self, *, highlight: Any = None, trail: Any = None, selection: Any = None) -> None:
        """Change the marks on the frame shown (None keeps one, an empty array clears it) and redraw."""
        with self._lock:
            n = self._data.embedding.shape[0] if self._data is not None else 0
            self._marks.show(self._marks.checked(n, highlight, trail, selection))
        self._redraw()

    def select(self, indices: Any) -> None:
        """Draw ``indices`` (or a boolean mask) as selected, the other points dimmed; empty clears it."""
        self.set_marks(selection=np.empty(0, dtype=np.int64) if indices is None else indices)

    @property
    def selection(self) -> np.ndarray:
        """The indices drawn as selected (empty: none)."""
        return self._marks.selection

    def frame(self) -> np.ndarray:
        """The (H, W, 4) uint8 RGBA image shown now: the visible range, with its marks."""
        with self._lock:
            return self._render(*self._size())[1].copy()

    @property
    def last_aggregate(self):
        """The Aggregate behind the image shown (grids, view, off-view counts); None before a frame, and for
        a frame drawn elsewhere."""
        shown = self._frames.shown
        return shown[3] if shown is not None else None

    # -- the visible range ----------------------------------------------------------------------------------
    @property
    def view(self) -> ViewSpec:
        """How a frame is framed before the user zooms ("robust", "auto" or a fixed View)."""
        return self._range.mode

    @property
    def follow(self) -> bool:
        """True: each push re-frames to its data until the user zooms; False: the first frame's range is kept."""
        return self._range.follow

    @follow.setter
    def follow(self, value: bool) -> None:
        self._range.follow = value

    @property
    def view_range(self) -> tuple[tuple[float, float], tuple[float, float]] | None:
        """((x0, x1), (y0, y1)) in data units: the range shown (or about to be); None before any push."""
        with self._lock:
            if self._data is None:
                return None
            given = self._given
            view = given.view if given is not None else self._range.target(self._data.embedding, *self._size())
            return view.x_range, view.y_range

    def zoom(self, x_range: tuple[float, float], y_range: tuple[float, float]) -> None:
        """Show the data range ``x_range`` x ``y_range`` (kept across pushes until ``reset_view()``)."""
        view = View(tuple(map(float, x_range)), tuple(map(float, y_range)))  # checks finite, low < high
        self.range_decided()
        self._zoom_to(view)

    def range_decided(self) -> None:
        """The range was set from Python (a zoom or a reset of the frames' owner): the views drawn so far are
        no echoes to wait for, and a later report of one of them is the user zooming there (see ViewRange).
        ``zoom`` and ``reset_view`` call it; an owner of frames drawn elsewhere calls it when its own range
        API is used."""
        with self._lock:
            self._range.forget_drawn()

    def _zoom_to(self, view: View) -> None:
        with self._lock:
            if not self._range.zoom(view):  # already shown: linked views zooming each other stop here
                return
            given = self._given is not None
        if given:
            if self.on_range is not None:
                self.on_range(view)
        else:
            self._redraw()

    @property
    def zoomed_view(self) -> View | None:
        """The range the user (or ``zoom()``) chose, kept across pushes; None while framed automatically."""
        return self._range.zoomed

    def reset_view(self) -> None:
        """Forget the zoom and re-frame to the data (the constructor's view mode) now; for frames drawn
        elsewhere, ask their owner to (``on_range(None)``)."""
        self.range_decided()
        self._reset()

    def _reset(self) -> None:
        with self._lock:
            self._range.reset()
            given = self._given is not None
        if given:
            if self.on_range is not None:
                self.on_range(None)
        else:
            self._redraw()

    def _on_range(self, x_range=None, y_range=None) -> None:
        with self._lock:
            view = self._range.reported(x_range, y_range)  # None: no range, or the echo of a frame drawn
            if view is not None:
                self._range.forget_drawn()  # the user's zoom: echoes from now on are of frames drawn at it
        if view is not None:
            self._zoom_to(view)

    def _on_reset(self, resetting: bool = False) -> None:
        if resetting:
            # The reset tool: the views drawn stay remembered, its report of the range it reset from follows.
            self._reset()

    # -- drawing --------------------------------------------------------------------------------------------
    def _size(self) -> tuple[int, int]:
        width, height = self.size_stream.width, self.size_stream.height
        return int(width or self.width), int(height or self.height)

    def _render(self, width: int, height: int) -> tuple[tuple, np.ndarray, View, Any]:
        """(key, marked RGBA, View, Aggregate or None) for the current data, view, size and marks; cached by key."""
        return self._frames.render(self._data, self._given, self._marks, self._range, self.style, width, height)

    def _element(self, **stream_values):  # the streams only trigger it: it draws the current state
        with self._lock:
            if self._data is None:  # nothing pushed yet: an empty black square
                return hv.RGB(np.zeros((2, 2, 4), dtype=np.uint8), bounds=(-1, -1, 1, 1), datatype=RGB_DATATYPE)
            _, rgba, view, _agg = self._render(*self._size())
            xmin, xmax, ymin, ymax = view.bounds
            # The caption goes into the title through a hook: as the element's label it would change the
            # overlay's layer key on every frame, and HoloViews would stop updating the image shown.
            return hv.RGB(rgba, bounds=(xmin, ymin, xmax, ymax), datatype=RGB_DATATYPE)

    @property
    def caption(self) -> str:
        """The title shown over the frame: the title and the push's caption, then on a line of its own the points
        outside the view, per side (the frame has the border triangles only, no text the points could cover)."""
        agg = self.last_aggregate
        parts = [self.title, self._data.caption if self._data is not None else ""]
        text = "  ".join(p for p in parts if p)
        if agg is not None and agg.n_out_of_view:
            sides = zip(("left", "right", "below", "above"), to_host(agg.edge_counts).sum(axis=1), strict=True)
            per_side = " · ".join(f"{name} {int(n):,}" for name, n in sides if n)
            text += f"\n{agg.n_out_of_view:,} points outside the view: {per_side}"
        return text

    def _show_caption(self, plot, element) -> None:
        figure = plot.handles["plot"]
        figure.title.text = self.caption
        if not getattr(figure, "_umapviz_hooked", False):  # once per figure
            figure._umapviz_hooked = True
            figure.on_event(MouseLeave, self._pointer_left)  # the hover label goes with the pointer
            # Escape over the plot: the page's key press marks the figure's tags, which come back to Python.
            # On mousemove, which the hover stream subscribes to (BokehJS runs a JS callback only for an event
            # the figure subscribes to: one on "mouseenter" never ran).
            figure.js_on_event("mousemove", CustomJS(args={"fig": figure}, code=ESCAPE_JS))
            figure.js_on_event("mouseleave", CustomJS(args={"fig": figure}, code="fig.__umapviz_over = false;"))
            figure.on_change("tags", self._tags_changed)

    def _pointer_left(self, _event: Any = None) -> None:
        """The pointer left the plot: no point is hovered any more (PointerXY sends nothing on leaving)."""
        self.pointer_stream.event(x=None, y=None)

    def _tags_changed(self, _attr: str, _old: Any, new: Any) -> None:
        if new and new[0] == ESCAPE_TAG:
            self.escape()

    def escape(self) -> None:
        """What Escape over the plot does, as a click on empty space: the selection drawn is cleared and
        ``on_tap(None)`` lets the owner clear what it shows."""
        self._on_tap_empty()

    def _redraw(self) -> None:
        """Have the plot draw the current state (its streams call ``_element``)."""
        if self._data is not None:
            self.pipe.event(data=self._data)

    def _repr_mimebundle_(self, include=None, exclude=None):
        # Through Panel with inline resources: its models' CSS then comes as text, where HoloViews' own display
        # names it by URL on cdn.holoviz.org (even after hv.extension(inline=True)) and an offline page misses it.
        with pn.config.set(inline=True):
            return pn.panel(self.dmap)._repr_mimebundle_(include, exclude)


def bokeh_options(width: int, height: int, caption_hook: Callable, *, responsive: bool = False) -> dict:
    """The bokeh options of a live view's overlay: the image's size, tools and caption hook, the hover text's look.

    Parameters
    ----------
    width, height : int
        The plot's size in pixels.
    caption_hook : callable
        ``(plot, element) -> None``, run at each draw: it puts the caption into the plot's title.
    responsive : bool
        True: the plot takes its container's width, square (bokeh's "scale_width"), at least MIN_RESPONSIVE
        pixels wide; ``width`` and ``height`` are then ignored.
    """
    # Scaled to the width at a square aspect: with no axes and no title, the frame is the plot less its borders,
    # square too when they are equal, so every border is as wide as the toolbar beside the frame (HoloViews sets
    # them at each update, always to the same value: set by a hook they flipped, and the plot was laid out twice
    # a frame). A toolbar inside the frame covered the points at its edge, where flung points sit. A fixed
    # height would stretch the image.
    size = (
        dict(responsive="width", aspect=1, min_width=MIN_RESPONSIVE, border=TOOLBAR_WIDTH)
        if responsive
        else dict(width=width, height=height)
    )
    return {
        "RGB": dict(
            **size,
            framewise=True,
            xaxis=None,
            yaxis=None,
            tools=TOOLS,
            active_tools=["wheel_zoom", "pan"],
            show_legend=False,
            hooks=[caption_hook],
            lod={"timeout": RANGE_REPORT_MS},
            # One image and a few marks: the 2-D canvas draws them at once, where WebGL (HoloViews'
            # default) costs a GPU read-back per frame, or a software GL pass without a GPU.
            backend_opts={"plot.output_backend": "canvas"},
        ),
        # Where the label sits against its point is the element's (halign, valign): it flips to stay inside.
        "Text": dict(text_color="white", text_font_size="11pt"),
    }
