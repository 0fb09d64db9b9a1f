"""The comparison grid: several layouts of one graph, advancing together, side by side, plus a table.

A thin view over a GridController (grid.py), which holds the configurations, the graph, the runs, the worker
thread and the errors (by the rule both panels share, status.py). The cells, the caption, the table and the
error banner follow the controller's traits.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import datasets
from ..binding import dlink
from ..events import after_event
from ..explorer.panel import _error_html
from ..lifetime import Panel, close_widgets, weak_callback
from .grid import TABLE_COLUMNS, Config, GridController, configurations

# Said under the grid, so that the cells' two counts never look contradictory.
GRID_LEGEND = (
    "Every panel lays out <b>one graph</b> ({points:,} points, {edges:,} edges) from the same initial layout; "
    "they differ only in the strategy, n_chunks and random_state in their titles. <b>Red rings</b>: that "
    "panel's outliers, the points the <i>{method}</i> measure flags now (the count under it). <b>Edge arrows</b>: "
    "that panel's points outside the shared view, flagged or not (counted under it); zooming changes them, "
    "not the outlier count. Zoom, pan or select in one panel: all follow; selected points are drawn in yellow "
    "in every panel."
)

__all__ = ["Comparison", "compare", "Config", "configurations", "TABLE_COLUMNS"]


class Comparison(Panel):
    """A grid of layouts of the same graph; see ``compare``.

    Parameters
    ----------
    data, n_chunks, random_state, strategy
        As for ``compare``.
    autoplay : bool
        Start running in the background at once.
    **options
        As for ``compare``: labels, n_samples, epochs_per_frame, panel_size, columns, outlier_method,
        trust_sample, graph and LayoutOptimizer parameters.

    Notes
    -----
    ``controller`` is the widget-free GridController behind the grid; ``widgets`` its buttons and outputs by
    name ("run", "pause", "reset", "status", "error", "table", "grid", "legend", "images" (the cells' plots'
    widgets), "counts"). ``zoom``, ``reset_view``, ``select`` and ``selection`` act on every panel at once.
    """

    def __init__(
        self,
        data: Any = datasets.DEFAULT,
        n_chunks: Any = (1, 4, 16, "auto"),
        random_state: Any = (0, 1),
        strategy: Any = "chunked",
        *,
        autoplay: bool = True,
        **options: Any,
    ) -> None:
        self.controller = GridController(data, n_chunks, random_state, strategy, **options)
        #: The grid's buttons and outputs by name.
        self.widgets: dict[str, Any] = {}
        self._build_widgets()
        # A grid the user drops is collected, and its widgets (all of them under self.panel, whose cells set()
        # replaces) closed.
        self._attach(self.panel)
        self.controller.start(autoplay)  # displayed in a notebook, the grid starts moving at once

    # -- programmatic control --------------------------------------------------------------------------
    @property
    def configs(self) -> list[Config]:
        """The configurations, one per cell, in order."""
        return self.controller.configs

    @property
    def runs(self):
        """The LayoutRun of each configuration (empty until built)."""
        return self.controller.runs

    @property
    def graph(self):
        """The FuzzyGraph every cell lays out (None until built)."""
        return self.controller.graph

    def run(self, epochs: int | None = None, block: bool = True) -> Comparison:
        """Advance every layout together by ``epochs`` (None: to the end); block=True waits and then fills
        the table (raising RuntimeError if an error stopped the run)."""
        self.controller.run(epochs, block)
        return self

    def pause(self) -> Comparison:
        """Stop after the frame being computed."""
        self.controller.pause()
        return self

    def reset(self, block: bool = True) -> Comparison:
        """Pause and take every layout back to epoch 0."""
        self.controller.reset(block)
        return self

    def set(self, block: bool = True, **params: Any) -> Comparison:
        """Change parameters in place and start again from epoch 0, paused (``run()`` goes on from there).

        ``strategy``, ``n_chunks``, ``random_state`` (the configurations, as in ``compare``; one left out keeps
        its values), LayoutOptimizer parameters (``n_epochs``, ...), ``epochs_per_frame``, ``outlier_method``,
        ``trust_sample``, ``panel_size`` and ``columns`` keep the graph; ``data``, ``labels``, ``n_samples`` and
        graph parameters build a new one (new data comes without labels unless ``labels`` is given too). As in
        the Explorer, a graph is pruned for the n_epochs the grid was made with. A bad value of the grid's own
        settings, an unknown name or no configuration at all raises at once and changes nothing; layouts that
        fail to build leave the last good ones on screen and usable, their error shown until a set() succeeds,
        and block=True raises it as a RuntimeError. block=False returns at once."""
        self.controller.set(block, **params)
        return self

    def table(self):
        """A pandas DataFrame, one row per configuration: outliers, trustworthiness, fingerprint, timings.

        Trustworthiness needs the data's points; for a graph given as data it is NaN.
        """
        import pandas as pd  # noqa: PLC0415

        return pd.DataFrame(self.controller.rows(), columns=list(TABLE_COLUMNS))

    def frames(self) -> list[np.ndarray]:
        """The panels' current images, (size, size, 4) uint8 each, in configuration order."""
        return self.controller.images()

    def zoom(self, x_range: tuple[float, float], y_range: tuple[float, float]) -> tuple:
        """Show ``x_range`` x ``y_range`` (data units) in every panel, at full resolution.

        Parameters
        ----------
        x_range, y_range : pair of float
            (low, high), finite, low < high.
        """
        for plot in self.plots:  # a later wheel zoom to a range drawn before is a zoom, not an echo
            plot.range_decided()
        view_range = self.controller.zoom(x_range, y_range)
        if not self.controller.worker.playing:
            self.controller.worker.wait_idle()  # the zoomed frames drawn
        return view_range

    def reset_view(self) -> None:
        """Back to the shared automatic range."""
        for plot in self.plots:  # a wheel zoom after it may repeat one before it: a zoom, not an echo
            plot.range_decided()
        self.controller.reset_view()

    @property
    def view_range(self) -> tuple | None:
        """((x0, x1), (y0, y1)) shown in every panel, in data units (None before the first frames)."""
        return self.controller.view_range or (self.plots[0].view_range if self.plots else None)

    def select(self, indices: Any) -> np.ndarray:
        """Select the points ``indices`` in every panel (drawn in yellow over dimmed layouts); None or empty
        clears it (as the Clear button and a click on empty space in any panel do).

        Parameters
        ----------
        indices : sequence of int or None
            Point indices, the same points in every panel.
        """
        return self.controller.select(indices)

    def clear_selection(self) -> None:
        """Select nothing (as ``select(None)``)."""
        self.controller.clear_selection()

    @property
    def selection(self) -> np.ndarray:
        """The selected points' indices."""
        return self.controller.selection

    def flung(self, cell: int = 0) -> np.ndarray:
        """The points flagged now in panel ``cell``, busiest first.

        Parameters
        ----------
        cell : int
            The panel's position in ``configs``.
        """
        return self.controller.flung(cell)

    def marked_frames(self) -> list[np.ndarray]:
        """The panels' images as shown: the shared range, with the selection drawn."""
        self.controller.images()  # waits for queued work
        return [plot.frame() for plot in self.plots]

    def _still_frames(self) -> list[np.ndarray]:
        return [plot.frame() for plot in self.plots]  # as shown now, without waiting for queued work

    @property
    def error(self) -> str:
        """The error shown, '' when none."""
        return self.controller.status.error

    # -- widgets ---------------------------------------------------------------------------------------
    def _build_widgets(self) -> None:
        import ipywidgets as w  # noqa: PLC0415

        c, ws = self.controller, self.widgets
        ws["grid"] = w.GridBox(self._make_cells(), layout=w.Layout(grid_template_columns=self._grid_columns()))
        ws["run"] = w.Button(description="Run", icon="play", button_style="success", layout=w.Layout(width="80px"))
        ws["pause"] = w.Button(description="Pause", icon="pause", layout=w.Layout(width="80px"))
        ws["reset"] = w.Button(description="Reset", icon="undo", layout=w.Layout(width="80px"))
        ws["status"] = w.HTML("starting...")
        ws["error"] = w.HTML("", layout=w.Layout(display="none"))
        ws["table"] = w.HTML("")
        ws["legend"] = w.HTML("", layout=w.Layout(max_width="1000px"))
        ws["legend"].add_class("umapviz-grid-legend")
        ws["selected"] = w.HTML(selection_html(0))
        ws["clear"] = w.Button(
            description="Clear", icon="times", tooltip="clear the selection", layout=w.Layout(width="80px")
        )
        ws["selected"].add_class("umapviz-grid-selected")
        ws["clear"].add_class("umapviz-clear")
        # Callbacks and links hold the grid and its controller weakly (see lifetime.py): a dropped grid is collected.
        ws["run"].on_click(weak_callback(self._run_clicked))
        ws["pause"].on_click(weak_callback(self._pause_clicked))
        ws["reset"].on_click(weak_callback(self._reset_clicked))
        ws["clear"].on_click(weak_callback(self._clear_clicked))
        dlink(c, "caption", ws["status"], to_control=html.escape)
        dlink(c.status, "error", ws["error"], to_control=_error_html)
        dlink(c.status, "error", ws["error"].layout, "display", to_control=lambda e: "block" if e else "none")
        c.observe(weak_callback(self._replace_cells), names="cells_id")
        c.observe(weak_callback(self._show_images), names="frame_id")
        c.observe(weak_callback(self._show_table), names="table_id")
        c.observe(weak_callback(self._show_selection), names="selection")
        controls = w.HBox([ws["run"], ws["pause"], ws["reset"], ws["status"]])
        selected = w.HBox([ws["selected"], ws["clear"]], layout=w.Layout(align_items="center"))
        self.panel = w.VBox([ws["error"], controls, ws["grid"], selected, ws["legend"], ws["table"]])
        self.panel.add_class("umapviz-compare")

    def _make_cells(self) -> list:
        """One cell per configuration: title, plot, outlier count (kept in widgets "images" and "counts"; the
        plots in ``plots``). A zoom, pan or selection in any plot goes to the controller, which all follow."""
        import ipywidgets as w  # noqa: PLC0415 - widget library, loaded with the panels only

        from ..plot import Plot  # noqa: PLC0415 - HoloViews, bokeh and panel, loaded with the panels only

        size = self.controller.settings["panel_size"]
        for plot in getattr(self, "plots", []):
            plot.close()
        self.plots: list[Plot] = []
        self.widgets["images"], self.widgets["counts"], cells = [], [], []
        for config in self.controller.configs:
            title = w.HTML(f"<b>{html.escape(config.title)}</b>", layout=w.Layout(width=f"{size}px"))
            plot = Plot(
                size,
                size,
                on_range=weak_callback(self._zoomed),
                on_select=weak_callback(self._selected),
                on_tap=weak_callback(self._tapped),
            )
            count = w.HTML("", layout=w.Layout(width=f"{size}px"))
            self.plots.append(plot)
            self.widgets["images"].append(plot.widget)
            self.widgets["counts"].append(count)
            cells.append(w.VBox([title, plot.widget, count]))
        return cells

    def _grid_columns(self) -> str:
        settings = self.controller.settings
        columns = settings["columns"] or min(4, len(self.controller.configs))
        return f"repeat({columns}, {settings['panel_size'] + 12}px)"

    def _replace_cells(self, _change=None) -> None:
        """New cells for the configurations now set; the old ones are closed."""
        grid = self.widgets["grid"]
        old = grid.children
        grid.children = self._make_cells()
        grid.layout.grid_template_columns = self._grid_columns()
        close_widgets(*old)

    def _show_images(self, _change=None) -> None:
        """New frames (on the worker, before the layouts move on): each with the shared view and the selection."""
        c = self.controller
        view = c.shown_view
        if not c.runs or view is None:
            return
        for i, (run, plot, count) in enumerate(zip(c.runs, self.plots, self.widgets["counts"], strict=False)):
            rgba = c.image(i)
            if rgba is not None:
                labels = run.labels if run.colour_by_class else None
                # A plot that shows frames keeps its selection: _show_selection sets it on the main thread as the
                # selection changes, and this worker's read of it can be older (a box selection made while the
                # frame was composed would be undone in this plot only). A first frame takes the selection.
                selection = None if plot.view_range is not None else c.selection
                plot.push_frame(rgba, view, run.optimizer.device_embedding, labels, selection=selection)
            plural = "" if run.n_outliers == 1 else "s"
            outside = sum(run.off_view)
            count.value = f"epoch {run.epoch} · <b>{run.n_outliers:,}</b> outlier{plural} ({run.outlier_method})" + (
                f" · {outside:,} outside the view" if outside else ""
            )
        run = c.runs[0]
        self.widgets["legend"].value = GRID_LEGEND.format(
            points=c.graph.n_vertices, edges=c.graph.nnz, method=html.escape(run.outlier_method)
        )

    def _show_selection(self, _change=None) -> None:
        n = len(self.controller.selection)
        self.widgets["selected"].value = selection_html(n)
        self.widgets["clear"].disabled = n == 0
        for plot in self.plots:
            if plot.view_range is not None:
                plot.select(self.controller.selection)

    # -- plots -> controller (each error goes to the grid: a callback that raises shows nothing) -----------
    def _zoomed(self, view: Any) -> None:
        c = self.controller
        self._guarded(lambda: c.reset_view() if view is None else c.zoom(view.x_range, view.y_range))

    def _selected(self, indices: np.ndarray) -> None:
        self._guarded(lambda: self.controller.select(indices))

    def _tapped(self, index: int | None) -> None:
        self._guarded(lambda: self.controller.select(None if index is None else [index]))

    def _clear_clicked(self, _button=None) -> None:
        self._guarded(self.controller.clear_selection)

    def _guarded(self, action: Any) -> None:
        after_event(action, self.controller.status.show_error)

    def _show_table(self, _change=None) -> None:
        import pandas as pd  # noqa: PLC0415

        frame = pd.DataFrame(self.controller.current_rows(), columns=list(TABLE_COLUMNS))
        self.widgets["table"].value = frame.to_html(index=False, float_format=lambda v: f"{v:.4f}", na_rep="-")

    def _run_clicked(self, _button=None) -> None:
        self.controller.run(block=False)

    def _pause_clicked(self, _button=None) -> None:
        self.controller.pause(wait=False)

    def _reset_clicked(self, _button=None) -> None:
        self.controller.reset(block=False)


def selection_html(n_selected: int) -> str:
    """The grid's selection line: how many points are selected in every panel, and how to clear them.

    Parameters
    ----------
    n_selected : int
        Points selected.
    """
    if not n_selected:
        return "<span style='color:#888'>box or lasso in any panel selects the same points in all</span>"
    return (
        f"<b>{n_selected:,}</b> selected in every panel "
        "<span style='color:#888'>— click empty space, press Esc over a panel, or Clear</span>"
    )


def compare(
    data: Any = datasets.DEFAULT,
    n_chunks: Sequence[int | str] | int | str = (1, 4, 16, "auto"),
    random_state: Sequence[int | None] | int | None = (0, 1),
    strategy: Sequence[str] | str = "chunked",
    **params: Any,
) -> Comparison:
    """Lay out one graph under several configurations, side by side, advancing together.

    Parameters
    ----------
    data : str, path, array, FuzzyGraph, fitted UMAP (umapviz's or umap-learn's) or scipy.sparse matrix
        As for ``Explorer``.
    n_chunks, random_state, strategy
        A value or a list each; every combination is run (n_chunks only varies "chunked").
    **params
        ``labels``, ``n_samples``, ``epochs_per_frame`` (10), ``panel_size`` (240), ``columns``,
        ``outlier_method``, ``trust_sample`` (query points for trustworthiness, 1000), ``autoplay`` (True: start
        running in the background at once), graph parameters and LayoutOptimizer parameters.

    Returns
    -------
    Comparison
        Display it in a notebook; ``run(block=True)`` waits for the end; ``table()``; ``set(**params)``
        changes parameters in place and starts again from epoch 0.

    Notes
    -----
    A grid lives while it is on screen or referred to (``grid = compare(...)``): a displayed one stays usable
    even if nothing else refers to it, until ``close()`` or until the frontend reports its views gone (its cell
    output cleared or replaced); where nothing reports that (headless kernels such as nbval's, a terminal
    IPython; a notebook closed or a page reloaded in JupyterLab), until ``close()``. Show it with
    ``display(grid)`` rather than as a cell's last line, which IPython's output history (``Out``, ``_``) keeps
    as long as the kernel lives.
    """
    return Comparison(data, n_chunks, random_state, strategy, **params)
