"""The Explorer's controller: its parameters, its layout run and their life cycle, without any widget.

State lives in four places, each with one owner:
- ``params`` (ExplorerParams): what was asked for, from the constructor, ``set()`` or a control bound to a
  trait. The controller observes it: a change restarts the layout or rebuilds the graph (params.py says which);
- ``run`` (a LayoutRun), ``graph`` and ``source``: touched only by the worker thread (see worker.py);
- ``status`` (Status): the error, busy state and note, with the rule for errors both panels share;
- ``frames`` (Frames): the image on screen and the recorded frames behind the scrubber.
The controller's own traits (epoch, outliers, fingerprint, running, ...) say what the run is at, for views to
follow. Views (explorer.py) only bind controls to these traits and draw what they announce; tests drive the
controller directly.

Its worker jobs live in two mixins, for size: SetupJobs (setup_jobs.py: a parameter change -> restart or
rebuild) and PlayJobs (play_jobs.py: play, step, reset, draw, publish); what the user looks at and picks (view
range, selection, the inspected point: ``zoom``, ``reset_view``, ``select``, ``inspect``, ``flung``, ``trail``)
in Inspection (focus.py).

The worker holds the controller weakly (it is the worker's owner): once nothing refers to the controller (its
view dropped), the worker stops and calls what ``on_gone`` collected (a view closes its widgets that way).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
from traitlets import Bool, Float, Int, Unicode, observe

from ... import datasets
from ..focus import Inspection
from ..lifetime import call_each, weak_callback
from ..session import (
    LayoutRun,
    check_count,
    split_params,
)
from ..status import ExplorerError, Status
from ..worker import Worker
from .frames import Frames, export, export_path
from .params import ExplorerParams
from .play_jobs import PlayJobs
from .setup_jobs import REBUILD, SetupJobs

OWN_SETTINGS = (
    "data",
    "labels",
    "n_samples",
    "epochs_per_frame",
    "size",
    "colour_by_class",
    "lock_view",
    "outlier_method",
)
LAYOUT_SETTINGS = ("strategy", "n_chunks", "random_state", "init", "n_epochs", "device")


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


class ExplorerController(SetupJobs, PlayJobs, Inspection):
    """One layout, live, on a background thread: parameters, graph, run, errors; no widget.

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
    start : bool
        Build at once; False leaves it to ``start()`` (a view binds its controls first).
    **params
        ExplorerParams traits (epochs_per_frame, size, outlier_method, colour_by_class, lock_view), graph
        parameters (n_neighbors, metric, min_dist, spread, knn) and LayoutOptimizer parameters (strategy,
        n_chunks, random_state, init, n_epochs, device, learning_rate, ...). A misspelt name is a TypeError and a
        value its trait refuses (a misspelt strategy, n_chunks=0) a ParameterError (a ValueError), at once; what
        only the graph can judge (n_chunks beyond its edges, ...) is shown in ``status.error``.
    """

    epoch = Int(0, help="the layout's epoch")
    n_epochs = Int(0, help="epochs of the run (as resolved for the graph)")
    n_chunks_used = Int(0, help="n_chunks as resolved on this graph (1 for buffered)")
    seed = Int(None, allow_none=True, help="the seed in use")
    outliers = Int(0, help="points the outlier measure flags now")
    fingerprint = Unicode("", help="umapviz.metrics.fingerprint of the layout shown")
    ms_per_epoch = Float(float("nan"), help="over the last frame's epochs")
    running = Bool(False, help="playing (or about to)")
    has_labels = Bool(False, help="the data has class labels to colour by")
    graph_given = Bool(False, help="the data is a ready graph: no points to rebuild it from")
    graph_nnz = Int(0, help="edges of the graph in use")
    advice = Unicode("", help="a warning about the chosen strategy on its device ('' when none)")

    def __init__(
        self,
        data: Any = datasets.DEFAULT,
        *,
        labels: Any = None,
        n_samples: int | None = None,
        start: bool = True,
        **params: Any,
    ) -> None:
        super().__init__()
        self.params = ExplorerParams()
        self.status = Status()
        self.frames = Frames()
        self.source = None
        self.graph = None
        self.run: LayoutRun | None = None
        self.timings: dict[str, float] = {}  # seconds per stage of the last (re)start: data, graph, ...
        self._custom: tuple[Any, Any] | None = None  # the user's own data and labels, once loaded
        self._loaded: tuple[Any, Any, Any] | None = None  # (data, labels, n_samples) of the graph on screen
        self._lock = threading.RLock()  # guards the fields below, read by state/frame from any thread
        self._dirty = 0
        self._target_epoch: int | None = None
        self._target_span: int | None = None  # play(epochs): how many, so a restart plays as many again
        self._play_requests = 0  # play() and pause() count up; a queued play runs only if still the latest
        self._fps_stamps: deque[float] = deque(maxlen=12)
        self._setup_failing = False
        self._quiet = threading.local()
        self._gone: list = []
        with self.quietly():
            self.update(data=data, labels=labels, n_samples=n_samples, **params)
        self.graph_n_epochs = self.params.n_epochs  # pruning threshold of a graph built here
        self._sync_dataset()
        # Held weakly, as the worker holds it: a cycle would keep it from going while its thread plays (a garbage
        # collection that finds the thread inside a frame, which holds it, finds it in use).
        self.params.observe(weak_callback(self._param_changed))
        self.frames.observe(weak_callback(self._scrubbed), names="recorded_index")
        # The worker holds this controller weakly; ``on_gone`` must not refer to it.
        self.worker = Worker(
            self._play_frame,
            self._report,
            name="umapviz-explorer",
            on_owner_gone=functools.partial(call_each, self._gone),
        )
        if start:
            self.start()

    # -- life cycle --------------------------------------------------------------------------------------
    def start(self) -> None:
        """Build the graph and the first layout (in the background)."""
        self.request(REBUILD)

    def on_gone(self, callback: Any) -> None:
        """Call ``callback()`` on the worker thread once this controller was collected (it must not refer to it)."""
        self._gone.append(callback)

    def close(self) -> None:
        """Stop the worker thread (a build under way stops at its next tile)."""
        self.worker.close()
        self.running = False

    @contextlib.contextmanager
    def quietly(self):
        """Change traits in this thread without the restarts and redraws the changes would ask for."""
        self._quiet.depth = getattr(self._quiet, "depth", 0) + 1
        try:
            yield
        finally:
            self._quiet.depth -= 1

    def _is_quiet(self) -> bool:
        return getattr(self._quiet, "depth", 0) > 0

    @observe("view_range")
    def _view_range_changed(self, _change: Any) -> None:
        self._redraw()  # at full resolution, with the project's renderer; while playing, the next frame does it

    # -- programmatic control ------------------------------------------------------------------------------
    def play(self, epochs: int | None = None, block: bool = True) -> ExplorerState:
        """Run ``epochs`` more epochs (None: to the end); see ``Explorer.play``."""
        epochs = check_count("epochs", epochs, none_means="run to the end")
        since = self.status.begin()
        with self._lock:
            self._play_requests += 1
            token = self._play_requests
        self.worker.submit(lambda: self._start_playing(epochs, token))
        return self.finish(block, since, whole_play=True)

    def pause(self, wait: bool = True) -> ExplorerState:
        """Stop after the frame being computed; ``wait``: return once it stopped."""
        self.cancel_play()
        if wait and not self.worker.in_worker:
            self.worker.wait_frame_done()
        return self.state

    def step(self, n: int = 1, block: bool = True) -> ExplorerState:
        """Pause, then run exactly ``n`` epochs (fewer at the end) and show the result."""
        n = check_count("n", n)
        since = self.status.begin()
        self.cancel_play()
        self.worker.submit(lambda: self._advance_and_show(n))
        return self.finish(block, since)

    def reset(self, block: bool = True) -> ExplorerState:
        """Pause and go back to epoch 0 (same graph, same parameters, same initial layout) and to the whole
        layout in view (``reset_view()``); the inspected point and the selection stay (``clear()`` clears them)."""
        since = self.status.begin()
        self.cancel_play()
        self.view_range = None
        self.worker.submit(self._reset_run)
        return self.finish(block, since)

    def set(self, block: bool = True, **params: Any) -> ExplorerState:
        """Change parameters (see ``update``), then wait as ``block`` says; see ``Explorer.set``."""
        since = self.status.begin()
        self.update(**params)
        return self.finish(block, since)

    def update(self, **params: Any) -> None:
        """Set parameters at once, all or none: a misspelt name (TypeError) or a bad panel setting
        (ParameterError, a ValueError) changes nothing. New data comes without labels unless they are given."""
        if "data" in params and "labels" not in params:
            params["labels"] = None
        traits = {name: params.pop(name) for name in OWN_SETTINGS if name in params}
        graph_params, optimizer_params = split_params(params)  # a misspelt name is a TypeError, as usual
        if "n_neighbors" in graph_params:
            traits["n_neighbors"] = graph_params.pop("n_neighbors")
        traits.update({name: optimizer_params.pop(name) for name in LAYOUT_SETTINGS if name in optimizer_params})
        p = self.params
        if graph_params:
            traits["graph_options"] = {**p.graph_options, **graph_params}
        if optimizer_params:
            traits["optimizer_options"] = {**p.optimizer_options, **optimizer_params}
        with p.hold_trait_notifications():  # one notification each, once all are set and valid
            for name, value in traits.items():
                setattr(p, name, value)

    def wait(self, timeout: float | None = None) -> ExplorerState:
        """Block until nothing is queued, running or playing."""
        self.worker.wait_idle(timeout)
        return self.state

    def finish(self, block: bool, since: int, whole_play: bool = False) -> ExplorerState:
        """Wait for a call's work (a play started by it to its end only with ``whole_play``: a change made while
        playing returns once the new layout runs) and raise ExplorerError for an error it caused, or for the
        error that left the panel without a layout to act on. A KeyboardInterrupt stops the layout too."""
        if not block:
            return self.state
        if self.worker.in_worker:
            raise RuntimeError("a blocking Explorer call from its own worker thread would wait for itself.")
        try:
            if self.worker.playing and not whole_play:
                self.worker.submit(lambda: None).result()  # jobs run in order: the call's own are done
            else:
                self.worker.wait_idle()
        except KeyboardInterrupt:  # an interrupted kernel: stop the layout too, not only the waiting
            self.cancel_play()
            raise
        self.status.check(since, self.run is not None)
        return self.state

    def cancel_play(self, refresh: bool = True) -> None:
        """Stop playing, and drop a play that is still queued (pressed during a rebuild, say)."""
        with self._lock:
            self._play_requests += 1
        was_playing = self.worker.playing
        self.worker.pause()
        self.running = False
        if was_playing and refresh:  # bring the chart and the scrubber up to the last frame
            self.worker.submit(self._follow_history, key="extras")

    # -- what it shows -------------------------------------------------------------------------------------
    @property
    def state(self) -> ExplorerState:
        """What the panel shows now (does not wait for the worker)."""
        p = self.params
        with self._lock:
            run, source = self.run, self.source
            opt = run.optimizer if run is not None else None
            return ExplorerState(
                dataset=source.name if source is not None else p.dataset,
                n_points=source.n_points if source is not None else 0,
                epoch=opt.epoch if opt is not None else 0,
                n_epochs=opt.n_epochs if opt is not None else 0,
                strategy=opt.strategy if opt is not None else str(p.strategy),
                n_chunks=opt.n_chunks_param if opt is not None else p.n_chunks,
                n_chunks_used=opt.n_chunks if opt is not None else 0,
                seed=opt.seed if opt is not None else None,
                outliers=run.n_outliers if run is not None else 0,
                fingerprint=self.fingerprint if run is not None else "",
                running=self.worker.playing,
                ms_per_epoch=run.ms_per_epoch if run is not None else float("nan"),
                fps=self.fps(),
                busy=self.status.busy,
                error=self.status.error,
            )

    @property
    def optimizer(self):
        """The LayoutOptimizer in use (None until made). Step it through the controller, not directly."""
        return self.run.optimizer if self.run is not None else None

    def frame(self) -> np.ndarray:
        """The image shown now, (size, size, 4) uint8 RGBA (waits for queued work unless playing)."""
        if not self.worker.playing and not self.worker.in_worker:
            self.worker.wait_idle()
        image = self.frames.image
        if image is None:
            raise ExplorerError(self.status.error or "no frame yet: the panel has nothing to show.")
        return image.copy()

    def recording(self):
        """The frames recorded so far as a ``umapviz.render.Recording``."""
        self.worker.wait_frame_done()
        run = self.run
        if run is None:
            raise ExplorerError(self.status.error or "nothing to record: the panel has no layout.")
        with self._lock:
            return run.recording(self._metadata(run))

    def export(self, path: Any = None, fps: float = 5):
        """Save by suffix: .png, .gif, .html, .mp4, .npz, to a file, a folder or the current directory; returns
        the absolute path written (see ``frames.export``)."""
        return export(path, self.frame, self.recording, self.params.size, fps=fps)

    def export_in_background(self, path: str | None = None) -> None:
        """Export on the worker, saying so (with the full path) in ``status.note``; an error is shown like any
        other."""
        self.status.begin()  # a new try: the last failed export's message goes
        self.worker.submit(lambda: self._export_job(export_path(path)))

    def fps(self) -> float:
        with self._lock:
            stamps = list(self._fps_stamps)
        if len(stamps) < 2 or stamps[-1] <= stamps[0]:
            return float("nan")
        return (len(stamps) - 1) / (stamps[-1] - stamps[0])
