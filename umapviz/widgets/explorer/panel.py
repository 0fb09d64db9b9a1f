"""The Explorer: one layout, live, in a notebook panel of controls, a view, a chart and a status line.

A thin view over an ExplorerController (controller.py), which holds the parameters, the run, the worker thread
and the errors. Controls are bound to the controller's traits (binding.py: links that hold the controller
weakly); the view, the status line, the chart and the error banner follow the controller's traits. Nothing here
keeps state of its own.
"""

from __future__ import annotations

import html
import io
import math
from pathlib import Path
from typing import Any

import numpy as np

from ... import datasets
from ..._backend import gpu_available
from ...optimize import STRATEGIES
from ...optimize.chunks import RULES
from ..binding import KEEP, dlink, link
from ..lifetime import Panel, panel_widgets, weak_callback
from ..session import OUTLIER_METHODS
from ..status import ExplorerError
from .controller import ExplorerController, ExplorerState
from .view import ExplorerView, LookingCloser

__all__ = ["Explorer", "ExplorerError", "ExplorerState", "encode_frame"]

RULE_LABELS = {"auto": "auto (hub-aware rule)", "shipped": "shipped GPU rule", "degree": "degree rule"}
# The n_chunks menu: every rule the optimizer knows, then "fixed" (an int, set by the slider or the box).
N_CHUNKS_MODES = (*((RULE_LABELS.get(rule, f"{rule} rule"), rule) for rule in RULES), ("fixed", "fixed"))
FRAME_FORMAT = "jpeg"  # live frames; see encode_frame
# The plot's column, pixels: at least wide enough to point in, at most short enough to see whole; it starts
# from COLUMN_BASIS and grows.
MIN_COLUMN, COLUMN_BASIS, MAX_COLUMN = 260, 400, 820
ERROR_STYLE = "background:#fdecea;color:#611a15;border-left:4px solid #d32f2f;padding:6px 10px"


class Explorer(Panel, LookingCloser):
    """A live view of UMAP's layout optimizer with controls, in a Jupyter notebook.

    Parameters
    ----------
    data : str, path, array, FuzzyGraph, fitted UMAP (umapviz's or umap-learn's) or scipy.sparse matrix
        A dataset name (``umapviz.datasets.names()``), a data file path, an (n, d) array or a FuzzyGraph;
        a fitted model or a symmetric fuzzy membership matrix replays its graph (``FuzzyGraph.from_umap``,
        ``FuzzyGraph.from_sparse``).
    labels : array, optional
        Class codes for an array (datasets bring their own).
    n_samples : int, optional
        Points of a dataset.
    epochs_per_frame : int
        Epochs run between two frames.
    size : int
        The view's first width and height in pixels; once shown, the view follows the output's width (square)
        and frames are drawn at the size it has on screen (``controller.params.size``).
    outlier_method : str
        "neighbors" or "radius" (see ``umapviz.metrics.outliers``).
    colour_by_class : bool
        Colour points by label (False: by density only, several times faster to render on a CPU).
    autoplay : bool
        Start playing once built.
    **params
        Graph parameters (n_neighbors, metric, min_dist, spread, knn) and LayoutOptimizer parameters
        (strategy, n_chunks, random_state, init, n_epochs, device, learning_rate, ...).

    Notes
    -----
    Programmatic use (scripts, tests, nbval): ``play(epochs, block=True)``, ``pause()``, ``step(n)``,
    ``reset()`` (epoch 0 and the whole layout in view), ``set(**params)``, ``state``, ``frame()``,
    ``export(path)``; every state has a way out: ``inspect(None)``, ``select(None)`` or ``clear_selection()``,
    ``clear()`` (both), ``reset_view()``, ``trail = False``; ``controller`` is the
    widget-free ExplorerController behind the panel, ``widgets`` its controls and outputs by name. The panel
    never raises for bad data or parameters: it shows the message and stays usable on the last good layout
    (data that fails to load is not adopted). A blocking call raises ExplorerError for an error it caused, or
    when there is no layout to act on; the message stays shown until a change mends it (a failed export's
    until the next call).

    A panel lives while it is on screen or referred to (``explorer = Explorer(...)``): a displayed one stays
    usable even if nothing else refers to it (``display(Explorer(...))``), until ``close()`` or until the
    frontend reports its views gone (its cell output cleared or replaced). Where nothing reports that (headless
    kernels such as nbval's, a terminal IPython; a notebook closed or a page reloaded in JupyterLab) a displayed
    panel stays until ``close()``. A panel that is neither on screen nor referred to is closed (its thread
    ended, its widgets closed) when Python collects it.
    Show a panel with ``display(explorer)`` rather than as a cell's last line: IPython's output history
    (``Out``, ``_``) keeps every panel shown that way, each run's, as long as the kernel lives.
    """

    def __init__(
        self,
        data: Any = datasets.DEFAULT,
        *,
        labels: Any = None,
        n_samples: int | None = None,
        epochs_per_frame: int = 1,
        size: int = 480,
        outlier_method: str = "neighbors",
        colour_by_class: bool = True,
        autoplay: bool = False,
        **params: Any,
    ) -> None:
        self.controller = ExplorerController(
            data,
            labels=labels,
            n_samples=n_samples,
            start=False,
            epochs_per_frame=epochs_per_frame,
            size=size,
            outlier_method=outlier_method,
            colour_by_class=colour_by_class,
            **params,
        )
        self._view = ExplorerView(self.controller, self.controller.params.size)
        #: The panel's controls and outputs by name ("strategy", "play", "view", "status", "inspector", ...).
        self.widgets, self.panel = make_widgets(
            self.controller.params.size, self.controller.status.stages, self._view.widgets
        )
        self._bind()
        # A panel the user drops is collected, and its widgets (the device menu too, never shown without a GPU)
        # closed.
        self._attach(*panel_widgets(self))
        self.controller.start()
        if autoplay:
            self.play(block=False)

    # -- programmatic control (the controller's) ----------------------------------------------------------
    def play(self, epochs: int | None = None, block: bool = True) -> ExplorerState:
        """Run ``epochs`` more epochs (None: to the end), showing a frame every ``epochs_per_frame``.

        block=True waits until they ran (or ``pause()`` or an error stopped them) and raises ExplorerError
        if the panel shows an error; block=False returns at once, the layout running in the background.
        """
        return self.controller.play(epochs, block)

    def pause(self) -> ExplorerState:
        """Stop after the frame being computed (if any); returns the state once it stopped."""
        return self.controller.pause()

    def step(self, n: int = 1, block: bool = True) -> ExplorerState:
        """Pause, then run exactly ``n`` epochs (fewer at the end) and show the result."""
        return self.controller.step(n, block)

    def reset(self, block: bool = True) -> ExplorerState:
        """Pause and go back to epoch 0 (same graph, same parameters, same initial layout) with the whole layout
        in view: the Reset button does the same. ``reset_view()`` resets the view only; ``clear()`` the
        inspected point and the selection."""
        return self.controller.reset(block)

    def set(self, block: bool = True, **params: Any) -> ExplorerState:
        """Change parameters as the controls would: ``data``, ``labels``, ``n_samples`` and graph parameters
        rebuild the graph; layout parameters (strategy, n_chunks, random_state, ...), ``outlier_method``
        restart from the same graph; ``epochs_per_frame`` applies from the next frame. New data comes
        without labels unless ``labels`` is given too (a built-in dataset brings its own)."""
        return self.controller.set(block, **params)

    def wait(self, timeout: float | None = None) -> ExplorerState:
        """Block until nothing is queued, running or playing."""
        return self.controller.wait(timeout)

    @property
    def state(self) -> ExplorerState:
        """What the panel shows now (does not wait for the worker)."""
        return self.controller.state

    def frame(self) -> np.ndarray:
        """The image the view shows now, (size, size, 4) uint8 RGBA (waits for queued work unless playing):
        the visible range, with the selection, the inspected point and its trail drawn over it."""
        return self._view.frame()

    def _still_frames(self) -> list[np.ndarray]:
        return [self._view.plot.frame()]  # as shown now, without waiting for queued work

    @property
    def graph(self):
        """The FuzzyGraph in use (None until built)."""
        return self.controller.graph

    @property
    def optimizer(self):
        """The LayoutOptimizer in use (None until made). Step it through the Explorer, not directly."""
        return self.controller.optimizer

    @property
    def timings(self) -> dict[str, float]:
        """Seconds per stage of the last (re)start: data, graph, initial layout, first frame."""
        return self.controller.timings

    def recording(self):
        """The frames recorded so far as a ``umapviz.render.Recording``."""
        return self.controller.recording()

    def export(self, path: str | Path | None = None, fps: float = 5) -> Path:
        """Save by suffix: .png (the current frame), .gif / .html / .mp4 (the recorded run, one view over all
        frames), .npz (the recording itself, for ``Recording.load``). Returns the absolute path written.

        Parameters
        ----------
        path : str, Path or None
            A file (relative paths start at the current directory), or a folder to write ``umapviz-run.gif``
            into; None: ``umapviz-run.gif`` in the current directory. Missing folders are made.
        fps : float
            Frames per second of an animation.
        """
        return self.controller.export(path, fps)

    def __repr__(self) -> str:
        s = self.state
        return (
            f"Explorer(dataset={s.dataset!r}, strategy={s.strategy!r}, n_chunks={s.n_chunks!r}, "
            f"epoch={s.epoch}/{s.n_epochs}, outliers={s.outliers})"
        )

    # -- widgets ---------------------------------------------------------------------------------------------
    def _bind(self) -> None:
        """Controls <-> the controller's parameters; outputs <- its state. Callbacks and links hold the panel and
        the controller weakly: ipywidgets keeps every open widget for good, and a callback holding the panel
        would keep it (its thread, optimizer and frames) alive after the user dropped it."""
        c, ws = self.controller, self.widgets
        p, report = c.params, c.status.show_error
        refused = weak_callback(self._input_refused)  # said next to the inputs, the value in use kept
        dlink(p, "dataset_options", ws["dataset"], "options")  # before the value: the entry must be there
        link(p, "dataset", ws["dataset"], on_error=report)
        for name in ("epochs_per_frame", "lock_view", "colour_by_class"):
            link(p, name, ws[name], on_error=refused)
        link(p, "strategy", ws["strategy"], to_control=_one_of(STRATEGIES), on_error=report)
        link(p, "device", ws["device"], to_control=_one_of(("cpu", "gpu")), on_error=report)
        link(p, "init", ws["init"], to_control=_one_of(("spectral", "random")), on_error=report)
        link(p, "outlier_method", ws["outlier_method"], to_control=_one_of(OUTLIER_METHODS), on_error=report)
        link(p, "n_neighbors", ws["n_neighbors"], to_control=_int_or_keep, on_error=refused)
        link(
            p,
            "random_state",
            ws["random_state"],
            to_control=lambda v: -1 if v is None else _int_or_keep(v),
            to_model=lambda v: None if v < 0 else v,
            on_error=refused,
        )
        link(
            p,
            "n_epochs",
            ws["n_epochs"],
            to_control=_int_or_keep,
            on_error=refused,
            to_model=weak_callback(self._n_epochs_asked),
        )
        link(
            p,
            "n_chunks",
            ws["n_chunks_mode"],
            on_error=refused,
            to_control=lambda v: v if isinstance(v, str) and v in dict(N_CHUNKS_MODES).values() else "fixed",
            to_model=lambda mode: ws["n_chunks_exact"].value if mode == "fixed" else mode,
        )
        fixed = lambda v: v if ws["n_chunks_mode"].value == "fixed" else KEEP  # noqa: E731 - a rule keeps them
        link(
            p,
            "n_chunks",
            ws["n_chunks"],
            to_control=weak_callback(self._fixed_chunks_shown),
            on_error=refused,
            to_model=lambda v: fixed(int(round(v))),
        )
        link(p, "n_chunks", ws["n_chunks_exact"], to_control=_int_or_keep, on_error=refused, to_model=fixed)
        p.observe(weak_callback(self._input_taken))
        link(c.frames, "recorded_index", ws["scrub"], on_error=report)
        dlink(c, "running", ws["play"], "disabled")
        dlink(c, "running", ws["pause"], "disabled", to_control=lambda running: not running)
        dlink(c, "has_labels", ws["colour_by_class"], "disabled", to_control=lambda has: not has)
        dlink(c, "graph_given", ws["n_neighbors"], "disabled")
        dlink(c.status, "note", ws["note"], to_control=_wrapping)
        dlink(c.status, "busy", ws["busy"], to_control=html.escape)
        dlink(c.status, "progress", ws["progress"], to_control=lambda stage: max(stage, 0))
        dlink(c.status, "progress", ws["busy_box"].layout, "display", to_control=lambda s: "none" if s < 0 else "flex")
        dlink(c.status, "error", ws["error"], to_control=_error_html)
        c.status.observe(weak_callback(self._error_changed), names="error")
        dlink(c.status, "error", ws["error"].layout, "display", to_control=lambda e: "block" if e else "none")
        for name in ("strategy", "n_chunks"):
            p.observe(weak_callback(self._enable_chunk_controls), names=name)
        self._enable_chunk_controls()
        c.observe(weak_callback(self._graph_changed), names="graph_nnz")
        c.observe(weak_callback(self._n_epochs_changed), names="n_epochs")
        c.frames.observe(weak_callback(self._frame_changed), names="frame_id")
        c.frames.observe(weak_callback(self._history_changed), names="history_id")
        c.frames.observe(weak_callback(self._scrub_range), names="recorded_count")
        ws["play"].on_click(weak_callback(self._play_clicked))
        ws["pause"].on_click(weak_callback(self._pause_clicked))
        ws["step"].on_click(weak_callback(self._step_clicked))
        ws["reset"].on_click(weak_callback(self._reset_clicked))
        ws["export"].on_click(weak_callback(self._export_clicked))

    # -- transforms and outputs ----------------------------------------------------------------------------
    def _fixed_chunks_shown(self, n_chunks: Any) -> Any:
        """The log slider's value for n_chunks (its range widened to fit), KEEP for a named rule."""
        if isinstance(n_chunks, bool) or not isinstance(n_chunks, int) or n_chunks < 1:
            return KEEP
        slider = self.widgets["n_chunks"]
        slider.max = max(slider.max, math.ceil(math.log2(n_chunks)))
        return float(n_chunks)

    def _n_epochs_asked(self, value: int) -> Any:
        """The box's value as n_epochs; KEEP for the optimizer's default it shows while none was asked for."""
        c = self.controller
        return KEEP if c.params.n_epochs is None and value == c.n_epochs else value

    def _enable_chunk_controls(self, _change=None) -> None:
        chunked = self.controller.params.strategy == "chunked"
        self.widgets["n_chunks_mode"].disabled = not chunked
        fixed = chunked and self.widgets["n_chunks_mode"].value == "fixed"
        self.widgets["n_chunks"].disabled = self.widgets["n_chunks_exact"].disabled = not fixed

    def _input_refused(self, exc: BaseException) -> None:
        """A value typed or picked that its trait refused: said under the inputs; the control shows the value in
        use again (an input never changes silently)."""
        self.widgets["input_note"].value = f"<span style='color:#b00020'>{html.escape(str(exc))} Kept as it was.</span>"

    def _input_taken(self, _change=None) -> None:
        self.widgets["input_note"].value = ""

    def _error_changed(self, change) -> None:
        """Before any layout the status says what failed, not "starting..." (the message is in the banner)."""
        if self.controller.run is None:
            self.widgets["status"].value = (
                "<span style='color:#b00020'>not started: see the message above</span>" if change["new"] else ""
            )

    def _graph_changed(self, change) -> None:
        """Fit the n_chunks slider to the graph (without clamping the value in use)."""
        slider, n_chunks = self.widgets["n_chunks"], self.controller.params.n_chunks
        fits = math.ceil(math.log2(n_chunks)) if isinstance(n_chunks, int) and n_chunks >= 1 else 0
        slider.max = max(1, math.floor(math.log2(max(change["new"], 2))), fits)

    def _n_epochs_changed(self, change) -> None:
        if self.controller.params.n_epochs is None:  # the box shows the optimizer's default for this graph
            self.widgets["n_epochs"].value = change["new"]

    def _frame_changed(self, _change=None) -> None:
        if self.controller.frames.recorded_shown < 0 and self.controller.run is not None:
            self.widgets["status"].value = status_html(self.controller)

    def _history_changed(self, _change=None) -> None:
        from ...render import encode_png, outlier_chart  # noqa: PLC0415

        run = self.controller.run
        if run is None:
            return
        opt = run.optimizer
        name = opt.strategy + (f" ({opt.n_chunks} chunks)" if opt.strategy == "chunked" else "")
        chart = outlier_chart(
            {name: (run.history_epochs, run.history_counts)}, width=360, height=220, title="outliers per epoch"
        )
        self.widgets["chart"].value = encode_png(chart)

    def _scrub_range(self, change) -> None:
        self.widgets["scrub"].max = max(0, change["new"] - 1)

    # -- buttons (each action's error goes to the panel: a callback that raises shows nothing) -------------
    def _guarded(self, action) -> None:
        try:
            action()
        except Exception as exc:
            self.controller.status.show_error(exc)

    def _play_clicked(self, _button=None) -> None:
        self._guarded(lambda: self.controller.play(block=False))

    def _pause_clicked(self, _button=None) -> None:
        self._guarded(lambda: self.controller.pause(wait=False))  # the main thread answers the browser meanwhile

    def _step_clicked(self, _button=None) -> None:
        self._guarded(lambda: self.controller.step(self.controller.params.epochs_per_frame, block=False))

    def _reset_clicked(self, _button=None) -> None:
        self._guarded(lambda: self.controller.reset(block=False))

    def _export_clicked(self, _button=None) -> None:
        self._guarded(lambda: self.controller.export_in_background(self.widgets["export_path"].value))


def make_widgets(size: int, stages: int, view: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """The Explorer's widgets by name, and the top box that lays them out (CSS classes ``umapviz-*``, which
    the browser tests find them by).

    Parameters
    ----------
    size : int
        The view's width and height in pixels.
    stages : int
        Steps of the progress bar.
    view : dict
        The view's widgets (ExplorerView.widgets): "view", "caption", "cursor", "trail", "legend", "inspector", "focus",
        "clear".
    """
    import ipywidgets as w  # noqa: PLC0415

    label_width = {"description_width": "100px"}
    row = w.Layout(width="300px")

    # Inside the "advanced" accordion (its padding takes room) every control fits its width: no sideways scroll.
    inner = w.Layout(width="100%", max_width="300px")

    def menu(options, description, layout=row, style=label_width):
        return w.Dropdown(options=options, description=description, style=style, layout=layout)

    button = w.Layout(width="76px", padding="0px 4px")
    ws: dict[str, Any] = {}
    ws["dataset"] = menu(list(datasets.names()), "dataset")
    ws["strategy"] = menu(list(STRATEGIES), "strategy")
    ws["n_chunks_mode"] = menu(N_CHUNKS_MODES, "n_chunks")
    ws["n_chunks"] = w.FloatLogSlider(
        value=4,
        base=2,
        min=0,
        max=16,
        step=1,
        description="fixed n_chunks",
        readout=False,  # the box beside it shows the value, and takes any exact one
        continuous_update=False,
        style=label_width,
        layout=w.Layout(flex="1 1 auto", min_width="0px"),
    )
    ws["n_chunks_exact"] = w.IntText(value=4, layout=w.Layout(width="72px", flex="0 0 auto"))
    ws["n_chunks_exact"].add_class("umapviz-n-chunks-exact")
    ws["random_state"] = w.IntText(
        value=0,
        description="random_state",
        style=label_width,
        layout=row,
        tooltip="a negative value draws a fresh seed on each restart",
    )
    # Plain boxes, not bounded ones: a bound clamps 0 to 1 without a word; the trait refuses it with a message.
    ws["n_epochs"] = w.IntText(value=200, description="n_epochs", style=label_width, layout=row)
    ws["input_note"] = w.HTML(value="", layout=w.Layout(width="300px"))
    ws["input_note"].add_class("umapviz-input-note")
    ws["epochs_per_frame"] = w.IntSlider(
        value=1, min=1, max=50, description="epochs/frame", style=label_width, layout=row
    )
    ws["device"] = menu(["cpu", "gpu"], "device")
    ws["init"] = menu(["spectral", "random"], "init", layout=inner)
    ws["n_neighbors"] = w.IntSlider(
        value=15, min=2, max=100, description="n_neighbors", style=label_width, continuous_update=False, layout=inner
    )
    # "outlier measure" whole, not "outlier meas..."
    ws["outlier_method"] = menu(list(OUTLIER_METHODS), "outlier measure", inner, {"description_width": "110px"})
    ws["lock_view"] = w.Checkbox(value=False, description="lock the view range", indent=False, layout=inner)
    ws["colour_by_class"] = w.Checkbox(
        value=True, description="colour by class", tooltip="off: density only, faster", indent=False, layout=inner
    )
    ws["play"] = w.Button(description="Play", icon="play", layout=button, button_style="success")
    ws["pause"] = w.Button(description="Pause", icon="pause", layout=button, disabled=True)
    ws["step"] = w.Button(description="Step", icon="step-forward", layout=button)
    ws["reset"] = w.Button(description="Reset", icon="undo", layout=button)
    ws.update(view)
    ws["scrub"] = w.IntSlider(
        value=0, min=0, max=0, description="recorded", continuous_update=True, layout=w.Layout(width="100%")
    )
    ws["export_path"] = w.Text(
        value="umapviz-run.gif",
        layout=w.Layout(width="220px"),
        tooltip="a file ending in .png, .gif, .html, .mp4 or .npz, or a folder; relative to the kernel's directory",
    )
    ws["export"] = w.Button(description="Export", icon="download", layout=w.Layout(width="90px"))
    # The right column's items shrink with an output narrower than they are (their column wraps under the plot).
    ws["chart"] = w.Image(format="png", width=360, height=220, layout=w.Layout(max_width="100%", height="auto"))
    ws["status"] = w.HTML(value="starting...", layout=w.Layout(width="360px", max_width="100%", overflow="hidden"))
    ws["note"] = w.HTML(value="", layout=w.Layout(width="100%"))
    ws["error"] = w.HTML(value="", layout=w.Layout(display="none", width="100%"))
    ws["busy"] = w.HTML(value="")
    ws["progress"] = w.IntProgress(value=0, min=0, max=stages, bar_style="info", layout=w.Layout(width="200px"))
    ws["busy_box"] = w.HBox([ws["progress"], ws["busy"]], layout=w.Layout(display="none"))

    advanced = w.VBox(
        [ws[n] for n in ("init", "n_neighbors", "outlier_method", "lock_view", "colour_by_class")],
        layout=w.Layout(width="100%", overflow="hidden"),
    )
    ws["advanced"] = w.Accordion(children=[advanced], titles=("advanced",), layout=w.Layout(width="310px"))
    chunks_row = w.HBox([ws["n_chunks"], ws["n_chunks_exact"]], layout=w.Layout(width="300px"))
    controls = [
        ws["dataset"],
        ws["strategy"],
        ws["n_chunks_mode"],
        chunks_row,
        *(ws[n] for n in ("random_state", "n_epochs", "epochs_per_frame")),
        ws["input_note"],
    ]
    if gpu_available():
        controls.append(ws["device"])
    controls += [w.HBox([ws["play"], ws["pause"], ws["step"], ws["reset"]]), ws["advanced"]]
    column = {"flex": "0 0 auto", "margin": "0px 8px 8px 0px"}  # columns keep their size and wrap instead
    left = w.VBox(controls, layout=w.Layout(width="330px", **column))
    centre = w.VBox(
        [
            ws["view"],
            ws["caption"],
            ws["cursor"],
            w.HBox([ws["focus"], ws["clear"]], layout=w.Layout(align_items="center", width="100%")),
            ws["legend"],
            ws["scrub"],
            ws["trail"],
            w.HBox([ws["export_path"], ws["export"]]),
            ws["note"],
        ],
        # The plot's column grows into the row's free width (the plot follows it, square): beside the controls
        # and the status column from about 1,150 pixels of output, else on a row of its own, which it fills.
        layout=w.Layout(
            flex=f"1 1 {COLUMN_BASIS}px",
            min_width=f"{MIN_COLUMN}px",
            max_width=f"{MAX_COLUMN}px",
            margin=column["margin"],
        ),
    )
    right = w.VBox([ws["status"], ws["inspector"], ws["chart"]], layout=w.Layout(max_width="100%", **column))
    body = w.HBox([left, centre, right], layout=w.Layout(flex_flow="row wrap"))
    panel = w.VBox([ws["error"], ws["busy_box"], body])
    panel.add_class("umapviz-explorer")
    for name in ("play", "pause", "step", "reset", "strategy", "status", "chart", "error", "scrub"):
        ws[name].add_class(f"umapviz-{name}")
    ws["busy_box"].add_class("umapviz-busy")
    return ws, panel


def status_html(controller: ExplorerController) -> str:
    """The status table: epoch, speed, outliers, fingerprint, layout, data, and advice where there is any.

    Parameters
    ----------
    controller : ExplorerController
        A controller with a run.
    """
    run, source = controller.run, controller.source
    opt = run.optimizer
    fps = controller.fps()
    chunks = f"n_chunks {opt.n_chunks}" + (f" ({opt.n_chunks_param})" if isinstance(opt.n_chunks_param, str) else "")
    rows = [
        ("epoch", f"{opt.epoch} / {opt.n_epochs}"),
        ("alpha", f"{opt.alpha():.4f}"),
        ("ms / epoch", "-" if math.isnan(run.ms_per_epoch) else f"{run.ms_per_epoch:.1f}"),
        ("frames / s", "-" if math.isnan(fps) else f"{fps:.1f}"),
        ("outliers", f"{run.n_outliers:,} ({run.outlier_method})"),
        ("fingerprint", f"<code>{controller.fingerprint}</code>"),
        ("layout", f"{opt.strategy}" + (f", {chunks}" if opt.strategy == "chunked" else "") + f", seed {opt.seed}"),
        ("data", f"{html.escape(source.name)}, {run.graph.n_vertices:,} points, {run.graph.nnz:,} edges"),
    ]
    if controller.advice:  # said where a user who picked it looks, not only in a warning a notebook may not show
        rows.append(("slow", f"<span style='color:#d55e00'>{html.escape(controller.advice)}</span>"))
    cells = "".join(f"<tr><td style='padding-right:8px;color:#888'>{k}</td><td>{v}</td></tr>" for k, v in rows)
    return f"<table style='font-size:13px;line-height:1.3'>{cells}</table>"


def encode_frame(rgba: np.ndarray) -> bytes:
    """A live frame for the browser: JPEG at high quality without chroma subsampling (outlier rings stay
    crisp), about 5x faster to encode than PNG, which matters at several frames a second. Exports use PNG."""
    from PIL import Image  # noqa: PLC0415

    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgba[..., :3])).save(buffer, format="JPEG", quality=92, subsampling=0)
    return buffer.getvalue()


def _wrapping(text: str) -> str:
    """Text that wraps anywhere (a long export path) instead of running past its box."""
    return f"<span style='overflow-wrap:anywhere'>{html.escape(text)}</span>" if text else ""


def _error_html(message: str) -> str:
    return f"<div style='{ERROR_STYLE}'><b>umapviz:</b> {html.escape(message)}</div>" if message else ""


def _one_of(options: tuple) -> Any:
    """A transform that shows a value the control offers, and leaves the control as it is for any other."""
    return lambda value: value if isinstance(value, str) and value in options else KEEP


def _int_or_keep(value: Any) -> Any:
    return value if isinstance(value, int) and not isinstance(value, bool) else KEEP
