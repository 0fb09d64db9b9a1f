"""The Explorer: one layout, live, in a notebook panel of controls, a view, a chart and a status line.

State lives in three places, each with one owner:
- ``self._params``: the parameters asked for (from the constructor, ``set()`` or a control). Controls
  mirror it; a control changed by hand writes back into it and asks the worker to restart or rebuild.
- ``self._run`` (a LayoutRun) and ``self._graph``: touched only by the worker thread (see worker.py).
- the widgets: written by whichever thread has news; the frame, status and chart by the worker.
"""

from __future__ import annotations

import html
import io
import math
import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import datasets
from .._backend import gpu_available
from ..optimize import STRATEGIES
from ..optimize.optimizer import sequential_gpu_advice
from .lifetime import Panel, panel_widgets, weak_callback
from .session import (
    ARRAY_SOURCE,
    GRAPH_SOURCE,
    OUTLIER_METHODS,
    LayoutRun,
    Source,
    build,
    check_count,
    load_source,
    make_optimizer,
    split_params,
)

RESTART, REBUILD = 1, 2  # how much a parameter change redoes: the layout only, or the graph as well
N_CHUNKS_MODES = (("auto (hub-aware rule)", "auto"), ("shipped GPU rule", "shipped"), ("degree rule", "degree"),
                  ("fixed", "fixed"))
EXPORT_SUFFIXES = (".png", ".gif", ".html", ".mp4", ".npz")
DEFAULTS = {"strategy": "chunked", "n_chunks": "auto", "random_state": 0, "init": "spectral", "n_epochs": None}
_SETUP_STAGES = 4  # progress bar steps: data, graph, initial layout, first frame
_CURRENT = object()
FRAME_FORMAT = "jpeg"  # live frames; see encode_frame
EXTRAS_INTERVAL_S = 0.5  # while playing, the chart and the scrubber update at most this often


@dataclass(frozen=True)
class ExplorerState:
    """A snapshot of what the panel shows (``explorer.state``)."""

    dataset: str
    n_points: int
    epoch: int
    n_epochs: int
    strategy: str
    n_chunks: int | str  # as asked for: an int, "auto", "shipped" or "degree"
    n_chunks_used: int  # what it resolved to on this graph (1 for buffered)
    seed: int | None
    outliers: int
    fingerprint: str
    running: bool
    ms_per_epoch: float  # over the last frame's epochs (NaN before any)
    fps: float  # frames per second over the last dozen frames while playing (NaN when unknown)
    busy: str  # what the worker is doing besides playing ("building graph..."), "" when nothing
    error: str  # the message shown in the panel, "" when none


class ExplorerError(RuntimeError):
    """A blocking call (play/step/reset with block=True) ended with an error shown in the panel."""


class Explorer(Panel):
    """A live view of UMAP's layout optimizer with controls, in a Jupyter notebook.

    data: a dataset name (``umapviz.datasets.names()``), a data file path, an (n, d) array or a FuzzyGraph.
    labels: class codes for an array (datasets bring their own). n_samples: points of a dataset.
    epochs_per_frame: epochs run between two frames. size: the view's width and height in pixels.
    outlier_method: "neighbors" or "radius" (see ``umapviz.metrics.outliers``).
    colour_by_class: colour points by label (False: by density only, several times faster to render on a CPU).
    **params: graph parameters (n_neighbors, metric, min_dist, spread, knn) and LayoutOptimizer parameters
        (strategy, n_chunks, random_state, init, n_epochs, device, learning_rate, ...).

    Programmatic use (scripts, tests, nbval): ``play(epochs, block=True)``, ``pause()``, ``step(n)``,
    ``reset()``, ``set(**params)``, ``state``, ``frame()``, ``export(path)``. The panel never raises for
    bad data or parameters: it shows the message and stays usable on the last good layout (data that fails
    to load is not adopted). A blocking call raises ExplorerError for an error it caused, or when there is no
    layout to act on; the message stays shown until a change mends it (a failed export's until the next call).
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
        graph_params, optimizer_params = split_params(params)  # a misspelt name is a TypeError, as usual
        self._params: dict[str, Any] = {**DEFAULTS, **optimizer_params}
        self._graph_params = graph_params
        self._graph_n_epochs = optimizer_params.get("n_epochs")  # pruning threshold of a graph built here
        self._data, self._labels, self._n_samples = data, labels, n_samples
        # The user's own data and labels, once loaded: the dataset menu can switch back to them.
        self._custom: tuple[Any, Any] | None = None
        self._loaded: tuple[Any, Any, Any] | None = None  # (data, labels, n_samples) of the graph on screen
        self._source: Source | None = None
        self._graph = None
        self._run: LayoutRun | None = None
        self._size = check_count("size", size)  # the panel's own settings: a bad one raises, as in set()
        self._epochs_per_frame = check_count("epochs_per_frame", epochs_per_frame)
        self._outlier_method = outlier_method
        self._lock = threading.RLock()  # guards the fields below, read by state/frame from any thread
        self._dirty = 0
        self._target_epoch: int | None = None
        self._target_span: int | None = None  # play(epochs): how many, so a restart plays as many again
        self._frame_rgba: np.ndarray | None = None
        self._extras_shown_at = 0.0
        self._play_requests = 0  # play() and pause() count up; a queued play runs only if still the latest
        self._fps_stamps: deque[float] = deque(maxlen=12)
        self._error = ""
        self._errors = 0  # errors shown so far: a blocking call raises only for one shown during it
        self._setup_failed = False  # the last (re)build failed: its error stays until one succeeds
        self._busy = ""
        self._fixed_view: Any = None
        self._fingerprint = ""
        self.timings: dict[str, float] = {}  # seconds per stage of the last (re)start: data, graph, ...
        self._mirroring = threading.local()
        self._build_widgets()
        self._w_classes.value = bool(colour_by_class)
        # A panel the user drops is collected, and its widgets (the device menu too, never shown without a GPU)
        # closed.
        self._worker = self._start_worker("umapviz-explorer", *panel_widgets(self))
        self._request(REBUILD)  # an unknown outlier_method fails it, shown like any bad parameter
        if autoplay:
            self.play(block=False)

    # =====================================================================================================
    # Programmatic control.
    # =====================================================================================================
    def play(self, epochs: int | None = None, block: bool = True) -> ExplorerState:
        """Run ``epochs`` more epochs (None: to the end), showing a frame every ``epochs_per_frame``.

        block=True waits until they ran (or ``pause()`` or an error stopped them) and raises ExplorerError
        if the panel shows an error; block=False returns at once, the layout running in the background.
        """
        epochs = check_count("epochs", epochs, none_means="run to the end")
        since = self._begin()
        with self._lock:
            self._play_requests += 1
            token = self._play_requests
        self._worker.submit(lambda: self._start_playing(epochs, token))
        return self._finish(block, since, whole_play=True)

    def pause(self) -> ExplorerState:
        """Stop after the frame being computed (if any); returns the state once it stopped."""
        self._cancel_play()
        self._update_buttons(playing=False)
        if not self._worker.in_worker:
            self._worker.wait_frame_done()
        return self.state

    def step(self, n: int = 1, block: bool = True) -> ExplorerState:
        """Pause, then run exactly ``n`` epochs (fewer at the end) and show the result."""
        n = check_count("n", n)
        since = self._begin()
        self._cancel_play()
        self._update_buttons(playing=False)
        self._worker.submit(lambda: self._advance_and_show(n))
        return self._finish(block, since)

    def reset(self, block: bool = True) -> ExplorerState:
        """Pause and go back to epoch 0 (same graph, same parameters, same initial layout)."""
        since = self._begin()
        self._cancel_play()
        self._update_buttons(playing=False)
        self._worker.submit(self._reset_run)
        return self._finish(block, since)

    def set(self, block: bool = True, **params: Any) -> ExplorerState:
        """Change parameters as the controls would: ``data``, ``labels``, ``n_samples`` and graph parameters
        rebuild the graph; layout parameters (strategy, n_chunks, random_state, ...), ``outlier_method``
        restart from the same graph; ``epochs_per_frame`` applies from the next frame. New data comes
        without labels unless ``labels`` is given too (a built-in dataset brings its own)."""
        since = self._begin()
        level = 0
        if "epochs_per_frame" in params:  # checked first: a bad value changes nothing
            epf = check_count("epochs_per_frame", params.pop("epochs_per_frame"))
            self._epochs_per_frame = epf
            self._mirror(self._w_epf, epf)
        if "data" in params:
            self._data, self._labels = params.pop("data"), None
            level = REBUILD
        for name in ("labels", "n_samples"):
            if name in params:
                setattr(self, f"_{name}", params.pop(name))
                level = REBUILD
        if "colour_by_class" in params:
            self._w_classes.value = bool(params.pop("colour_by_class"))  # redraws through its callback
        if "outlier_method" in params:
            self._outlier_method = params.pop("outlier_method")
            level = max(level, RESTART)
        graph_params, optimizer_params = split_params(params)
        if graph_params:
            self._graph_params.update(graph_params)
            level = REBUILD
        if optimizer_params:
            self._params.update(optimizer_params)
            level = max(level, RESTART)
        self._sync_controls()
        if level:
            self._request(level)
        return self._finish(block, since)

    def wait(self, timeout: float | None = None) -> ExplorerState:
        """Block until nothing is queued, running or playing."""
        self._worker.wait_idle(timeout)
        return self.state

    @property
    def state(self) -> ExplorerState:
        """What the panel shows now (does not wait for the worker)."""
        with self._lock:
            run, source = self._run, self._source
            opt = run.optimizer if run is not None else None
            return ExplorerState(
                dataset=source.name if source is not None else str(self._data_name()),
                n_points=source.n_points if source is not None else 0,
                epoch=opt.epoch if opt is not None else 0,
                n_epochs=opt.n_epochs if opt is not None else 0,
                strategy=opt.strategy if opt is not None else str(self._params.get("strategy")),
                n_chunks=opt.n_chunks_param if opt is not None else self._params.get("n_chunks"),
                n_chunks_used=opt.n_chunks if opt is not None else 0,
                seed=opt.seed if opt is not None else None,
                outliers=run.n_outliers if run is not None else 0,
                fingerprint=self._fingerprint if run is not None else "",
                running=self._worker.playing,
                ms_per_epoch=run.ms_per_epoch if run is not None else float("nan"),
                fps=self._fps(),
                busy=self._busy,
                error=self._error,
            )

    def frame(self) -> np.ndarray:
        """The image the view shows now, (size, size, 4) uint8 RGBA (waits for queued work unless playing)."""
        if not self._worker.playing and not self._worker.in_worker:
            self._worker.wait_idle()
        with self._lock:
            if self._frame_rgba is None:
                raise ExplorerError(self._error or "no frame yet: the panel has nothing to show.")
            return self._frame_rgba.copy()

    @property
    def graph(self):
        """The FuzzyGraph in use (None until built)."""
        return self._graph

    @property
    def optimizer(self):
        """The LayoutOptimizer in use (None until made). Step it through the Explorer, not directly."""
        return self._run.optimizer if self._run is not None else None

    def recording(self):
        """The frames recorded so far as a ``umapviz.render.Recording``."""
        self._worker.wait_frame_done()
        run = self._run
        if run is None:
            raise ExplorerError(self._error or "nothing to record: the panel has no layout.")
        with self._lock:
            return run.recording(self._metadata())

    def export(self, path: str | Path, fps: float = 5) -> Path:
        """Save by suffix: .png (the current frame), .gif / .html / .mp4 (the recorded run, one view over all
        frames), .npz (the recording itself, for ``Recording.load``)."""
        from .. import render  # noqa: PLC0415

        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in EXPORT_SUFFIXES:
            raise ValueError(f"cannot export to {path.name!r}: use a name ending in {', '.join(EXPORT_SUFFIXES)}.")
        if suffix == ".png":
            return render.save_png(self.frame(), path)
        rec = self.recording()
        if suffix == ".npz":
            return rec.save(path)
        save = {".gif": render.save_gif, ".html": render.save_html, ".mp4": render.save_mp4}[suffix]
        return save(rec, path, fps=fps, width=self._size, height=self._size)

    def __repr__(self) -> str:
        s = self.state
        return (f"Explorer(dataset={s.dataset!r}, strategy={s.strategy!r}, n_chunks={s.n_chunks!r}, "
                f"epoch={s.epoch}/{s.n_epochs}, outliers={s.outliers})")  # fmt: skip

    def _begin(self) -> int:
        """Start of a user action: a passing error (a failed export, a frame that failed) is cleared; a failed
        build's stays until a build succeeds. Returns the error count, for _finish."""
        if self._error and not self._setup_failed:
            self._clear_error()
        return self._errors

    def _finish(self, block: bool, since: int, whole_play: bool = False) -> ExplorerState:
        """Wait for the call's work (a play started by it to its end only with ``whole_play``: a change made
        while playing returns once the new layout runs) and raise ExplorerError for an error it caused, or
        for the error that left the panel without a layout to act on."""
        if not block:
            return self.state
        if self._worker.in_worker:
            raise RuntimeError("a blocking Explorer call from its own worker thread would wait for itself.")
        try:
            if self._worker.playing and not whole_play:
                self._worker.submit(lambda: None).result()  # jobs run in order: the call's own are done
            else:
                self._worker.wait_idle()
        except KeyboardInterrupt:  # an interrupted kernel: stop the layout too, not only the waiting
            self._cancel_play()
            raise
        state = self.state
        if state.error and (self._errors != since or self._run is None):
            raise ExplorerError(state.error)
        return state

    # =====================================================================================================
    # Worker-thread jobs.
    # =====================================================================================================
    def _request(self, level: int) -> None:
        with self._lock:
            self._dirty = max(self._dirty, level)
        self._worker.submit(self._setup, key="setup")

    def _setup(self) -> None:
        """Rebuild (data, graph) and/or restart (optimizer) as the pending changes need; show frame 0."""
        with self._lock:
            level, self._dirty = self._dirty, 0
        if not level:
            return
        clock = _StageClock()
        shown = self._run
        try:
            self._setup_level(level, clock)
        except BaseException:
            if self._run is not shown:  # the new layout was adopted, only its first frame failed: a passing error
                raise
            self._setup_failed = True
            if level >= REBUILD and self._loaded is not None:  # failed data is not adopted: back to what is shown
                self._data, self._labels, self._n_samples = self._loaded
                self._sync_controls()
            raise
        finally:
            self._set_busy("", None)
            self.timings = clock.laps

    def _setup_level(self, level: int, clock: _StageClock) -> None:
        """The (re)build itself; on success the new layout is shown and its data adopted."""
        graph, source = self._graph, self._source
        if level >= REBUILD or graph is None:
            self._set_busy("loading data...", 0)
            source = load_source(self._data, self._labels, self._n_samples)
            clock.lap("data")
            self._set_busy(f"building graph ({source.n_points:,} points)...", 1)
            graph = build(source, self._graph_params, n_epochs=self._graph_n_epochs,
                          device=self._params.get("device"), cancel=self._worker.stopping)
            clock.lap("graph")
        self._set_busy("initial layout...", 2)
        params = {k: v for k, v in self._params.items() if v is not None or k == "random_state"}
        run = LayoutRun(graph, make_optimizer(graph, params), source.labels, self._outlier_method)
        clock.lap("initial layout")
        self._w_classes.disabled = source.labels is None
        with self._lock:
            self._source, self._graph, self._run = source, graph, run
            self._fixed_view = None
            self._fps_stamps.clear()
            if self._target_span is not None:  # a play(epochs) under way plays as many on the new layout
                self._target_epoch = run.epoch + self._target_span
        self._loaded = (self._data, self._labels, self._n_samples)
        if not _is_builtin(self._data):
            self._custom = (self._data, self._labels)
        self._after_graph_change(graph, source)
        self._set_busy("first frame...", 3)
        self._setup_failed = False
        self._clear_error()
        self._sync_controls()
        self._show_current()
        clock.lap("first frame")

    def _cancel_play(self, refresh: bool = True) -> None:
        """Stop playing, and drop a play that is still queued (pressed during a rebuild, say)."""
        with self._lock:
            self._play_requests += 1
        was_playing = self._worker.playing
        self._worker.pause()
        if was_playing and refresh:  # bring the chart and the scrubber up to the last frame
            self._worker.submit(self._show_extras, key="extras")

    def _start_playing(self, epochs: int | None, token: int) -> None:
        run = self._run
        if run is None or token != self._play_requests:
            return  # no layout (bad data: the error stays shown), or paused before this play began
        with self._lock:
            self._target_span = epochs
            self._target_epoch = None if epochs is None else run.epoch + epochs
            self._fps_stamps.clear()
        if run.done:
            self._note_finished(run)
        else:
            self._worker.play()
        self._update_buttons()

    def _play_frame(self) -> bool:
        """One frame while playing: advance, measure, show. False stops playing."""
        run = self._run
        if run is None or run.done:
            self._update_buttons(playing=False)
            return False
        with self._lock:
            target = run.optimizer.n_epochs if self._target_epoch is None else self._target_epoch
        n = min(self._epochs_per_frame, target - run.epoch)
        if n <= 0:
            self._update_buttons(playing=False)
            return False
        run.advance(n)
        with self._lock:
            self._fps_stamps.append(time.perf_counter())
        keep_going = not run.done and run.epoch < target
        self._show_current(extras=not keep_going or self._extras_due())
        if not keep_going:
            self._update_buttons(playing=False)
        return keep_going

    def _advance_and_show(self, n: int) -> None:
        if self._run is None:
            return
        if self._run.done:
            self._note_finished(self._run)
            return
        self._run.advance(n)
        self._show_current()

    def _note_finished(self, run: LayoutRun) -> None:
        self._w_note.value = f"the layout has finished (epoch {run.epoch}); press Reset to run it again"

    def _reset_run(self) -> None:
        if self._run is None:
            return
        self._run.reset()
        with self._lock:
            self._fps_stamps.clear()
        self._show_current()

    def _show_recorded(self, index: int) -> None:
        run = self._run
        if run is None or run.log is None or not 0 <= index < len(run.log):
            return
        run.colour_by_class = self._w_classes.value
        epoch, rgba = run.recorded_image(index, self._size, self._size, self._view_spec(run))
        self._push_image(rgba)
        count = int(run.log.outliers[index].sum())
        self._w_note.value = (f"showing recorded epoch {epoch} ({count:,} outliers); "
                              "press play to continue from the latest epoch")  # fmt: skip

    def _show_current(self, extras: bool = True) -> None:
        """Render the run's current embedding into the view and update the status line; with ``extras``
        also the chart and the scrubber (while playing those follow at EXTRAS_INTERVAL_S: each update is
        one more image or message for the kernel, the server and the browser to pass along)."""
        run = self._run
        run.colour_by_class = self._w_classes.value
        rgba = run.image(self._size, self._size, self._view_spec(run))
        fingerprint = run.fingerprint()
        with self._lock:
            self._fingerprint = fingerprint
        self._push_image(rgba)
        if self._w_note.value:
            self._w_note.value = ""
        self._update_status(run)
        if extras:
            self._show_extras()

    def _show_extras(self) -> None:
        run = self._run
        if run is None:
            return
        self._extras_shown_at = time.perf_counter()
        self._update_chart(run)
        if run.log is not None:
            with self._mirrored():
                self._w_scrub.max = max(0, len(run.log) - 1)
                self._w_scrub.value = len(run.log) - 1

    def _extras_due(self) -> bool:
        return time.perf_counter() - self._extras_shown_at >= EXTRAS_INTERVAL_S

    def _push_image(self, rgba: np.ndarray) -> None:
        encoded = encode_frame(rgba)
        with self._lock:
            self._frame_rgba = rgba
        self._w_view.value = encoded

    def _view_spec(self, run: LayoutRun) -> Any:
        if not self._w_lock_view.value:
            return "robust"
        if self._fixed_view is None:
            from ..render import resolve_view  # noqa: PLC0415

            self._fixed_view = resolve_view(run.optimizer.device_embedding, "robust", self._size, self._size)
        return self._fixed_view

    def _export_pressed(self) -> None:
        self._begin()  # a new try: the last failed export's message goes
        self._worker.submit(self._export_clicked)

    def _export_clicked(self) -> None:
        name = self._w_export_path.value.strip() or "umapviz-run.gif"
        self._w_note.value = f"exporting {html.escape(name)}..."  # a long run's frames take a while to draw
        try:
            path = self.export(name)
        except BaseException:
            self._w_note.value = ""  # neither "exporting" for ever nor the last export's "saved ..."
            raise
        self._w_note.value = f"saved {html.escape(str(path))}"

    # =====================================================================================================
    # Widgets.
    # =====================================================================================================
    def _build_widgets(self) -> None:
        import ipywidgets as w  # noqa: PLC0415

        label_width = {"description_width": "100px"}
        row = w.Layout(width="300px")
        names = list(datasets.names())
        self._w_dataset = w.Dropdown(options=names, description="dataset", style=label_width, layout=row)
        self._w_strategy = w.Dropdown(options=list(STRATEGIES), description="strategy", style=label_width, layout=row)
        self._w_chunks_mode = w.Dropdown(options=N_CHUNKS_MODES, description="n_chunks", style=label_width,
                                         layout=row)  # fmt: skip
        self._w_chunks = w.FloatLogSlider(value=4, base=2, min=0, max=16, step=1, description="fixed n_chunks",
                                          readout_format=".0f", continuous_update=False, style=label_width,
                                          layout=row)  # fmt: skip
        self._w_seed = w.IntText(value=0, description="random_state", style=label_width, layout=row,
                                 tooltip="a negative value draws a fresh seed on each restart")  # fmt: skip
        self._w_epochs = w.BoundedIntText(value=200, min=1, max=1_000_000, description="n_epochs",
                                          style=label_width, layout=row)  # fmt: skip
        self._w_epf = w.IntSlider(value=self._epochs_per_frame, min=1, max=50, description="epochs/frame",
                                  style=label_width, layout=row)  # fmt: skip
        self._w_device = w.Dropdown(options=["cpu", "gpu"], value="cpu", description="device", style=label_width,
                                    layout=row)  # fmt: skip
        self._w_init = w.Dropdown(options=["spectral", "random"], description="init", style=label_width, layout=row)
        self._w_neighbors = w.IntSlider(value=15, min=2, max=100, description="n_neighbors", style=label_width,
                                        continuous_update=False, layout=row)  # fmt: skip
        self._w_outliers = w.Dropdown(options=list(OUTLIER_METHODS), value=self._outlier_method
                                      if self._outlier_method in OUTLIER_METHODS else "neighbors",
                                      description="outlier measure", style=label_width, layout=row)  # fmt: skip
        self._w_lock_view = w.Checkbox(value=False, description="lock the view range", indent=False)
        self._w_classes = w.Checkbox(value=True, description="colour by class (off: density only, faster)",
                                     indent=False)  # fmt: skip

        button = w.Layout(width="76px", padding="0px 4px")
        self._w_play = w.Button(description="Play", icon="play", layout=button, button_style="success")
        self._w_pause = w.Button(description="Pause", icon="pause", layout=button, disabled=True)
        self._w_step = w.Button(description="Step", icon="step-forward", layout=button)
        self._w_reset = w.Button(description="Reset", icon="undo", layout=button)

        self._w_view = w.Image(format=FRAME_FORMAT, width=self._size, height=self._size,
                               layout=w.Layout(width=f"{self._size}px", height=f"{self._size}px"))  # fmt: skip
        self._w_scrub = w.IntSlider(value=0, min=0, max=0, description="recorded", continuous_update=True,
                                    layout=w.Layout(width=f"{self._size}px"))  # fmt: skip
        self._w_export_path = w.Text(value="umapviz-run.gif", layout=w.Layout(width="220px"),
                                     tooltip="name ending in .png, .gif, .html, .mp4 or .npz")  # fmt: skip
        self._w_export = w.Button(description="Export", icon="download", layout=w.Layout(width="90px"))
        self._w_chart = w.Image(format="png", width=360, height=220)
        self._w_status = w.HTML(value="starting...", layout=w.Layout(width="360px", overflow="hidden"))
        self._w_note = w.HTML(value="", layout=w.Layout(width=f"{self._size}px"))
        self._w_error = w.HTML(value="", layout=w.Layout(display="none", width="100%"))
        self._w_busy = w.HTML(value="")
        self._w_progress = w.IntProgress(value=0, min=0, max=_SETUP_STAGES, bar_style="info",
                                         layout=w.Layout(width="200px"))  # fmt: skip
        self._w_busy_box = w.HBox([self._w_progress, self._w_busy], layout=w.Layout(display="none"))

        advanced = w.VBox([self._w_init, self._w_neighbors, self._w_outliers, self._w_lock_view, self._w_classes])
        self._w_advanced = w.Accordion(children=[advanced], titles=("advanced",), layout=w.Layout(width="310px"))
        controls = [self._w_dataset, self._w_strategy, self._w_chunks_mode, self._w_chunks, self._w_seed,
                    self._w_epochs, self._w_epf]  # fmt: skip
        if gpu_available():
            controls.append(self._w_device)
        controls += [w.HBox([self._w_play, self._w_pause, self._w_step, self._w_reset]), self._w_advanced]
        column = {"flex": "0 0 auto", "margin": "0px 8px 8px 0px"}  # columns keep their size and wrap instead
        left = w.VBox(controls, layout=w.Layout(width="330px", **column))
        centre = w.VBox([self._w_view, self._w_scrub, w.HBox([self._w_export_path, self._w_export]), self._w_note],
                        layout=w.Layout(**column))  # fmt: skip
        right = w.VBox([self._w_status, self._w_chart], layout=w.Layout(**column))
        body = w.HBox([left, centre, right], layout=w.Layout(flex_flow="row wrap"))
        self.panel = w.VBox([self._w_error, self._w_busy_box, body])

        for widget, css in ((self.panel, "umapviz-explorer"), (self._w_view, "umapviz-view"),
                            (self._w_play, "umapviz-play"), (self._w_pause, "umapviz-pause"),
                            (self._w_step, "umapviz-step"), (self._w_reset, "umapviz-reset"),
                            (self._w_strategy, "umapviz-strategy"), (self._w_status, "umapviz-status"),
                            (self._w_chart, "umapviz-chart"), (self._w_error, "umapviz-error"),
                            (self._w_busy_box, "umapviz-busy"), (self._w_scrub, "umapviz-scrub")):  # fmt: skip
            widget.add_class(css)
        self._sync_controls()

        # Callbacks hold the panel weakly: ipywidgets keeps every open widget for good, and a callback holding
        # the panel would keep it (its thread, optimizer and frames) alive after the user dropped it.
        self._w_play.on_click(weak_callback(self._play_clicked))
        self._w_pause.on_click(weak_callback(self._pause_clicked))
        self._w_step.on_click(weak_callback(self._step_clicked))
        self._w_reset.on_click(weak_callback(self._reset_clicked))
        self._w_export.on_click(weak_callback(self._export_clicked_button))
        layout_changed = weak_callback(self._layout_control_changed)
        for widget in (self._w_strategy, self._w_chunks_mode, self._w_chunks, self._w_seed, self._w_epochs,
                       self._w_device, self._w_init):  # fmt: skip
            widget.observe(layout_changed, names="value")
        graph_changed = weak_callback(self._graph_control_changed)
        for widget in (self._w_dataset, self._w_neighbors):
            widget.observe(graph_changed, names="value")
        self._w_epf.observe(weak_callback(self._epf_changed), names="value")
        self._w_outliers.observe(weak_callback(self._outliers_changed), names="value")
        redraw = weak_callback(self._lock_view_changed)
        self._w_lock_view.observe(redraw, names="value")
        self._w_classes.observe(redraw, names="value")  # a redraw, like the view lock
        self._w_scrub.observe(weak_callback(self._scrubbed), names="value")

    # -- controls -> parameters --------------------------------------------------------------------------
    def _layout_control_changed(self, change) -> None:
        if self._is_mirroring():
            return
        owner, value = change["owner"], change["new"]
        if owner in (self._w_chunks_mode, self._w_chunks):
            mode = self._w_chunks_mode.value
            self._params["n_chunks"] = int(round(self._w_chunks.value)) if mode == "fixed" else mode
        elif owner is self._w_seed:
            self._params["random_state"] = value if value >= 0 else None
        else:  # only the parameter that changed: the others keep following their defaults
            name = {id(self._w_strategy): "strategy", id(self._w_epochs): "n_epochs", id(self._w_init): "init",
                    id(self._w_device): "device"}[id(owner)]  # fmt: skip
            self._params[name] = value
        self._sync_controls()
        self._request(RESTART)

    def _graph_control_changed(self, change) -> None:
        if self._is_mirroring():
            return
        if change["owner"] is self._w_dataset:  # a built-in set brings its own labels; the user's data, theirs
            custom = self._custom or (self._data, self._labels)
            self._data, self._labels = (change["new"], None) if _is_builtin(change["new"]) else custom
        else:
            self._graph_params["n_neighbors"] = int(change["new"])
        self._request(REBUILD)

    def _epf_changed(self, change) -> None:
        if not self._is_mirroring():
            self._epochs_per_frame = int(change["new"])

    def _outliers_changed(self, change) -> None:
        if not self._is_mirroring():
            self._outlier_method = change["new"]
            self._request(RESTART)

    def _lock_view_changed(self, change) -> None:
        """The view lock or the colouring changed: redraw the current frame."""
        self._begin()  # a frame that failed to draw may draw now (density only): its error goes
        self._fixed_view = None
        if self._run is not None and not self._worker.playing:
            self._worker.submit(self._show_current, key="redraw")

    def _scrubbed(self, change) -> None:
        if self._is_mirroring() or self._worker.in_worker:
            return
        self._cancel_play(refresh=False)  # a refresh would move the scrubber back to the latest frame
        self._update_buttons(playing=False)
        index = int(change["new"])
        self._worker.submit(lambda: self._show_recorded(index), key="scrub")

    # -- buttons (each action's error goes to the panel: a callback that raises shows nothing) -----------
    def _play_clicked(self, _button=None) -> None:
        self._guarded(lambda: self.play(block=False))

    def _pause_clicked(self, _button=None) -> None:
        self._guarded(self._pause_now)

    def _pause_now(self) -> None:
        self._cancel_play()  # no waiting here: the kernel's main thread answers the browser meanwhile
        self._update_buttons(playing=False)

    def _step_clicked(self, _button=None) -> None:
        self._guarded(lambda: self.step(self._epochs_per_frame, block=False))

    def _reset_clicked(self, _button=None) -> None:
        self._guarded(lambda: self.reset(block=False))

    def _export_clicked_button(self, _button=None) -> None:
        self._guarded(self._export_pressed)

    # -- parameters -> controls ----------------------------------------------------------------------------
    @contextmanager
    def _mirrored(self):
        depth = getattr(self._mirroring, "depth", 0)
        self._mirroring.depth = depth + 1
        try:
            yield
        finally:
            self._mirroring.depth = depth

    def _is_mirroring(self) -> bool:
        return getattr(self._mirroring, "depth", 0) > 0

    def _mirror(self, widget, value) -> None:
        """Show ``value`` in ``widget`` without triggering its callbacks; a value it cannot show is an error
        in the panel (the widget keeps its old value). A number above a linear slider's range widens the range
        (the slider would clamp it silently and show a value that is not the one in use; the log slider of
        n_chunks is widened by _sync_controls)."""
        with self._mirrored():
            try:
                linear = hasattr(widget, "max") and not hasattr(widget, "base")
                if linear and isinstance(value, (int, float)) and not isinstance(value, bool) and value > widget.max:
                    widget.max = value
                widget.value = value
            except Exception as exc:
                self._show_error(ValueError(f"{widget.description}={value!r} cannot be used: {exc}"))

    def _data_name(self, data: Any = _CURRENT) -> str:
        """The dataset menu's entry for ``data`` (default: the data in use)."""
        data = self._data if data is _CURRENT else data
        if isinstance(data, (str, Path)):
            return str(data)
        from ..graph import FuzzyGraph  # noqa: PLC0415

        return GRAPH_SOURCE if isinstance(data, FuzzyGraph) else ARRAY_SOURCE

    def _sync_controls(self) -> None:
        p = self._params
        name = self._data_name()
        options = list(datasets.names())
        if self._custom is not None:
            options.append(self._data_name(self._custom[0]))
        if name not in options:  # data asked for but not loaded yet (a failed load puts the menu back)
            options.append(name)
        with self._mirrored():
            if list(self._w_dataset.options) != options:
                self._w_dataset.options = options
        self._mirror(self._w_dataset, name)
        self._mirror(self._w_strategy, p.get("strategy"))
        n_chunks = p.get("n_chunks")
        if isinstance(n_chunks, str):
            self._mirror(self._w_chunks_mode, n_chunks)
        else:
            self._mirror(self._w_chunks_mode, "fixed")
            if isinstance(n_chunks, (int, np.integer)) and n_chunks >= 1:
                with self._mirrored():
                    self._w_chunks.max = max(self._w_chunks.max, math.ceil(math.log2(n_chunks)))
                self._mirror(self._w_chunks, float(n_chunks))
        seed = p.get("random_state")
        self._mirror(self._w_seed, -1 if seed is None else seed)
        if p.get("n_epochs") is not None:
            self._mirror(self._w_epochs, p["n_epochs"])
        if isinstance(p.get("init"), str):
            self._mirror(self._w_init, p["init"])
        if p.get("device") in ("cpu", "gpu"):
            self._mirror(self._w_device, p["device"])
        self._mirror(self._w_neighbors, self._graph_params.get("n_neighbors", 15))
        if self._outlier_method in OUTLIER_METHODS:  # an unknown one is the (re)start's error to show
            self._mirror(self._w_outliers, self._outlier_method)
        chunked = self._w_strategy.value == "chunked"
        self._w_chunks_mode.disabled = not chunked
        self._w_chunks.disabled = not (chunked and self._w_chunks_mode.value == "fixed")
        self._w_neighbors.disabled = name == GRAPH_SOURCE

    def _after_graph_change(self, graph, source: Source) -> None:
        """Fit the controls to a new graph: n_chunks range, n_epochs default, graph-only data."""
        with self._mirrored():
            self._w_chunks.max = max(1, math.floor(math.log2(max(graph.nnz, 2))))
            if self._params.get("n_epochs") is None:
                self._w_epochs.value = self._run.optimizer.n_epochs
        self._w_neighbors.disabled = source.graph is not None

    def _update_buttons(self, playing: bool | None = None) -> None:
        playing = self._worker.playing if playing is None else playing
        self._w_play.disabled = playing
        self._w_pause.disabled = not playing

    # -- status, chart, errors ---------------------------------------------------------------------------
    def _fps(self) -> float:
        with self._lock:
            stamps = list(self._fps_stamps)
        if len(stamps) < 2 or stamps[-1] <= stamps[0]:
            return float("nan")
        return (len(stamps) - 1) / (stamps[-1] - stamps[0])

    def _update_status(self, run: LayoutRun) -> None:
        opt = run.optimizer
        fps = self._fps()
        chunks = f"n_chunks {opt.n_chunks}" + (f" ({opt.n_chunks_param})" if isinstance(opt.n_chunks_param, str)
                                               else "")  # fmt: skip
        rows = [
            ("epoch", f"{opt.epoch} / {opt.n_epochs}"),
            ("alpha", f"{opt.alpha():.4f}"),
            ("ms / epoch", "-" if math.isnan(run.ms_per_epoch) else f"{run.ms_per_epoch:.1f}"),
            ("frames / s", "-" if math.isnan(fps) else f"{fps:.1f}"),
            ("outliers", f"{run.n_outliers:,} ({run.outlier_method})"),
            ("fingerprint", f"<code>{self._fingerprint}</code>"),
            ("layout", f"{opt.strategy}" + (f", {chunks}" if opt.strategy == "chunked" else "") + f", seed {opt.seed}"),
            ("data", f"{html.escape(self._source.name)}, {run.graph.n_vertices:,} points, {run.graph.nnz:,} edges"),
        ]
        # Said where a user who picked it looks, not only in a warning that a notebook may not show.
        advice = sequential_gpu_advice(opt.strategy, opt.device, run.graph.nnz)
        if advice is not None:
            rows.append(("slow", f"<span style='color:#d55e00'>{html.escape(advice)}</span>"))
        cells = "".join(f"<tr><td style='padding-right:8px;color:#888'>{k}</td><td>{v}</td></tr>" for k, v in rows)
        self._w_status.value = f"<table style='font-size:13px;line-height:1.3'>{cells}</table>"

    def _update_chart(self, run: LayoutRun) -> None:
        from ..render import encode_png, outlier_chart  # noqa: PLC0415

        opt = run.optimizer
        name = opt.strategy + (f" ({opt.n_chunks} chunks)" if opt.strategy == "chunked" else "")
        chart = outlier_chart({name: (run.history_epochs, run.history_counts)}, width=360, height=220,
                              title="outliers per epoch")  # fmt: skip
        self._w_chart.value = encode_png(chart)

    def _set_busy(self, text: str, stage: int | None) -> None:
        with self._lock:
            self._busy = text
        if stage is None:
            self._w_busy_box.layout.display = "none"
            return
        self._w_busy.value = html.escape(text)
        self._w_progress.value = stage
        self._w_busy_box.layout.display = "flex"

    def _show_error(self, exc: BaseException) -> None:
        message = _describe(exc)
        with self._lock:
            self._error = message
            self._errors += 1
        self._update_buttons(playing=False)
        self._w_error.value = (
            "<div style='background:#fdecea;color:#611a15;border-left:4px solid #d32f2f;padding:6px 10px'>"
            f"<b>umapviz:</b> {html.escape(message)}</div>"
        )
        self._w_error.layout.display = "block"

    def _clear_error(self) -> None:
        with self._lock:
            self._error = ""
        self._w_error.value = ""
        self._w_error.layout.display = "none"

    def _guarded(self, action) -> None:
        """Run a button's action; any error goes to the panel (a callback that raises shows nothing)."""
        try:
            action()
        except Exception as exc:
            self._show_error(exc)

    def _metadata(self) -> dict:
        run = self._run
        opt = run.optimizer
        return {"dataset": self._source.name, "strategy": opt.strategy, "n_chunks": int(opt.n_chunks),
                "seed": int(opt.seed), "n_epochs": int(opt.n_epochs), "outlier_method": run.outlier_method}  # fmt: skip


class _StageClock:
    """Seconds per named stage, for ``Explorer.timings``."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = round(now - self._last, 3)
        self._last = now


def encode_frame(rgba: np.ndarray) -> bytes:
    """A live frame for the browser: JPEG at high quality without chroma subsampling (outlier rings stay
    crisp), about 5x faster to encode than PNG, which matters at several frames a second. Exports use PNG."""
    from PIL import Image  # noqa: PLC0415

    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgba[..., :3])).save(buffer, format="JPEG", quality=92, subsampling=0)
    return buffer.getvalue()


def _is_builtin(data: Any) -> bool:
    return isinstance(data, str) and data in datasets.names()


def _describe(exc: BaseException) -> str:
    """A one-line message for the panel, with a hint for the failures a user can act on."""
    name = type(exc).__name__
    text = str(exc) or name
    if isinstance(exc, MemoryError) or "OutOfMemory" in name:
        return (f"out of memory ({name}: {text}). Try fewer points (n_samples=...), device='cpu', "
                "or a smaller n_neighbors.")  # fmt: skip
    return f"{name}: {text}"
