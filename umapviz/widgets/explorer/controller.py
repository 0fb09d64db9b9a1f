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

The controller turns calls and parameter changes into jobs for its worker; the jobs' work is done by parts it
owns, each given what it uses in its constructor: ``Current`` (current.py: the layout on screen and the play
under way, under one lock), ``Setup`` and ``DatasetMenu`` (setup_jobs.py: a parameter change -> restart or
rebuild), ``Player`` (play_jobs.py: play, step, reset, draw). The parts reach back only through the small
protocols their modules declare (``SetupHost``, ``PlayerHost``), given a weak proxy of the controller. What the
user looks at and picks (view range, selection, the inspected point: ``zoom``, ``reset_view``, ``select``,
``inspect``, ``flung``, ``trail``) comes from the Inspection base (focus.py), shared with the comparison grid.

The worker holds the controller weakly (it is the worker's owner): once nothing refers to the controller (its
view dropped), the worker stops and calls what ``on_gone`` collected (a view closes its widgets that way).
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

import numpy as np
from traitlets import Bool, Float, Int, Unicode, observe

from ... import datasets
from ..focus import Inspection
from ..lifetime import call_each, weak_callback
from ..session import LayoutRun, check_count
from ..status import ExplorerError, Status
from ..worker import Worker
from .current import Current, ExplorerState, Quiet
from .frames import Frames, export, export_noted, export_path
from .params import REBUILD_TRAITS, REDRAW_TRAITS, RESTART_TRAITS, ExplorerParams
from .play_jobs import Player
from .setup_jobs import REBUILD, RESTART, DatasetMenu, Setup


class ExplorerController(Inspection):
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
        self._current = Current()
        self._quiet = Quiet()
        self._menu = DatasetMenu(self.params, self._quiet)
        self._gone: list = []
        with self.quietly():
            self.update(data=data, labels=labels, n_samples=n_samples, **params)
        self._menu.sync()
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
        host = weakref.proxy(self)  # the parts are the controller's: a strong reference back would be a cycle
        self._player = Player(self._current, self.params, self.status, self.frames, self.worker, self._quiet, host)
        self._setup = Setup(
            self._current,
            self.params,
            self.status,
            self.frames,
            self.worker,
            self._quiet,
            self._menu,
            self._player,
            host,
            graph_n_epochs=self.params.n_epochs,  # the pruning threshold of a graph built here
        )
        if start:
            self.start()

    # -- life cycle --------------------------------------------------------------------------------------
    def start(self) -> None:
        """Build the graph and the first layout (in the background)."""
        self.request(REBUILD)

    def request(self, level: int) -> None:
        """Have the worker restart the layout (RESTART) or rebuild the graph too (REBUILD)."""
        self._setup.request(level)
        self.worker.submit(lambda: self._setup.run(), key="setup")

    def on_gone(self, callback: Any) -> None:
        """Call ``callback()`` on the worker thread once this controller was collected (it must not refer to it)."""
        self._gone.append(callback)

    def close(self) -> None:
        """Stop the worker thread (a build under way stops at its next tile)."""
        self.worker.close()
        self.running = False

    def quietly(self):
        """Change traits in this thread without the restarts and redraws the changes would ask for (a context
        manager)."""
        return self._quiet.hold()

    # -- what asks for work --------------------------------------------------------------------------------
    def _param_changed(self, change: Any) -> None:
        name = change["name"]
        if name == "data":
            self._menu.sync()
        if self._quiet.on:
            return
        if name == "dataset":
            self._menu.choose(change["new"])
        elif name in REBUILD_TRAITS:
            self.request(REBUILD)
        elif name in RESTART_TRAITS:
            self.request(RESTART)
        elif name in REDRAW_TRAITS:
            self._redraw()

    @observe("view_range")
    def _view_range_changed(self, _change: Any) -> None:
        self._redraw()  # at full resolution, with the project's renderer; while playing, the next frame does it

    def _redraw(self) -> None:
        """The view lock, the view range, the colouring or the size changed: draw the current frame again."""
        self.status.begin()  # a frame that failed to draw may draw now (density only): its error goes
        self.frames.fixed_view = None
        if self._current.run is not None and not self.worker.playing:
            self.worker.submit(lambda: self._player.show_current(), key="redraw")

    def _scrubbed(self, change: Any) -> None:
        if self._quiet.on or self.worker.in_worker:
            return
        self.cancel_play(refresh=False)  # a refresh would move the scrubber back to the latest frame
        index = int(change["new"])
        self.worker.submit(lambda: self._player.show_recorded(index), key="scrub")

    # -- programmatic control ------------------------------------------------------------------------------
    def play(self, epochs: int | None = None, block: bool = True) -> ExplorerState:
        """Run ``epochs`` more epochs (None: to the end); see ``Explorer.play``."""
        epochs = check_count("epochs", epochs, none_means="run to the end")
        since = self.status.begin()
        request = self._current.new_play_request()
        self.worker.submit(lambda: self._start_playing(epochs, request))
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
        self.worker.submit(lambda: self._player.advance_and_show(n))
        return self.finish(block, since)

    def reset(self, block: bool = True) -> ExplorerState:
        """Pause and go back to epoch 0 (same graph, same parameters, same initial layout) and to the whole
        layout in view (``reset_view()``); the inspected point and the selection stay (``clear()`` clears them)."""
        since = self.status.begin()
        self.cancel_play()
        self.view_range = None
        self.worker.submit(lambda: self._player.reset_run())
        return self.finish(block, since)

    def set(self, block: bool = True, **params: Any) -> ExplorerState:
        """Change parameters (see ``update``), then wait as ``block`` says; see ``Explorer.set``."""
        since = self.status.begin()
        self.update(**params)
        return self.finish(block, since)

    def update(self, **params: Any) -> None:
        """Set parameters at once, all or none: a misspelt name (TypeError) or a bad panel setting
        (ParameterError, a ValueError) changes nothing. New data comes without labels unless they are given
        (``ExplorerParams.apply``)."""
        self.params.apply(**params)

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
        self.status.check(since, self._current.run is not None)
        return self.state

    def cancel_play(self, refresh: bool = True) -> None:
        """Stop playing, and drop a play that is still queued (pressed during a rebuild, say)."""
        self._current.new_play_request()
        was_playing = self.worker.playing
        self.worker.pause()
        self.running = False
        if was_playing and refresh:  # bring the chart and the scrubber up to the last frame
            self.worker.submit(lambda: self._player.follow_history(), key="extras")

    # -- what it shows -------------------------------------------------------------------------------------
    @property
    def run(self) -> LayoutRun | None:
        """The layout run on screen (None until one was built); the worker's alone to advance."""
        return self._current.run

    @property
    def graph(self) -> Any:
        """The FuzzyGraph of the layout on screen (None until one was built)."""
        return self._current.graph

    @property
    def source(self) -> Any:
        """The loaded data of the layout on screen (None until loaded)."""
        return self._current.source

    @property
    def timings(self) -> dict[str, float]:
        """Seconds per stage of the last (re)start: data, graph, initial layout, first frame."""
        return self._setup.timings

    @property
    def state(self) -> ExplorerState:
        """What the panel shows now (does not wait for the worker)."""
        return self._current.state(self.params, self.status, self.fingerprint, self.worker)

    @property
    def optimizer(self):
        """The LayoutOptimizer in use (None until made). Step it through the controller, not directly."""
        run = self._current.run
        return run.optimizer if run is not None else None

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
        run = self._current.run
        if run is None:
            raise ExplorerError(self.status.error or "nothing to record: the panel has no layout.")
        with self._current.lock:
            return run.recording(self._current.metadata(run))

    def export(self, path: Any = None, fps: float = 5):
        """Save by suffix: .png, .gif, .html, .mp4, .npz, to a file, a folder or the current directory; returns
        the absolute path written (see ``frames.export``)."""
        return export(path, self.frame, self.recording, self.params.size, fps=fps)

    def export_in_background(self, path: str | None = None) -> None:
        """Export on the worker, saying so (with the full path) in ``status.note``; an error is shown like any
        other."""
        self.status.begin()  # a new try: the last failed export's message goes
        self.worker.submit(lambda: export_noted(self.status, self.export, export_path(path)))

    def fps(self) -> float:
        return self._current.fps()

    # -- the worker's side: jobs and frames (worker thread) ------------------------------------------------
    def _start_playing(self, epochs: int | None, request: int) -> None:
        if self._player.start_playing(epochs, request):
            self.running = self.worker.playing

    def _play_frame(self) -> bool:
        """The worker's frame while playing (see Player.play_frame); False stops playing."""
        keep_going = self._player.play_frame()
        if not keep_going:
            self.running = False
        return keep_going

    def _report(self, exc: BaseException) -> None:
        """The worker's error report: shown in ``status`` (a failed build's error sticks)."""
        sticky = self._setup.take_failure()
        self.running = False
        self.status.show_error(exc, sticky=sticky)

    # PlayerHost and SetupHost (play_jobs.py, setup_jobs.py): what the parts hand back
    def _publish(self, readouts: dict[str, Any]) -> None:
        with self.hold_trait_notifications():
            for name, value in readouts.items():
                setattr(self, name, value)

    def _follow_inspected(self) -> None:
        if self.inspected is not None:
            self.point = self.point_info(self.inspected)

    def _adopted(self, source: Any, graph: Any, rebuilt: bool) -> None:
        with self.hold_trait_notifications():
            self.has_labels = source.labels is not None
            self.graph_given = source.graph is not None
            self.graph_nnz = int(graph.nnz)
        self._refocus(rebuilt=rebuilt)
