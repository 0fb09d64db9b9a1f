"""The Explorer controller's parameter-driven job: a changed parameter asks for the layout to restart or the graph
to be rebuilt, and the worker does it here (``Setup``); and the dataset menu that follows the data
(``DatasetMenu``). The controller owns both and queues the job (controller.py).

A (re)build that fails leaves the last good layout on screen and usable; its error sticks until a build succeeds,
and data that failed to load is not adopted (the parameters go back to the data on screen).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Protocol

from ... import datasets
from ..session import ARRAY_SOURCE, GRAPH_SOURCE, LayoutRun, build, is_graph_source, load_source, make_optimizer
from ..status import Status
from ..worker import Worker
from .current import Current, Quiet
from .frames import Frames
from .params import ExplorerParams
from .play_jobs import Player

RESTART, REBUILD = 1, 2  # how much a parameter change redoes: the layout only, or the graph as well


class SetupHost(Protocol):
    """What a Setup uses of the controller that owns it (held as a weak proxy: no reference cycle)."""

    def _adopted(self, source: Any, graph: Any, rebuilt: bool) -> None:
        """A new layout of ``graph`` (from ``source``) is on screen; ``rebuilt``: the graph is new too."""


class DatasetMenu:
    """The dataset menu's entries and entry (``params.dataset_options``, ``params.dataset``), following the data
    asked for, and the user's own data (with its labels) once it loaded, to go back to from a built-in set.

    Parameters
    ----------
    params : ExplorerParams
        The panel's settings, whose menu traits this sets.
    quiet : Quiet
        Held while setting them, so that they ask for no work.
    """

    def __init__(self, params: ExplorerParams, quiet: Quiet) -> None:
        self._params, self._quiet = params, quiet
        self._custom: tuple[Any, Any] | None = None  # the user's own data and labels, once loaded

    def sync(self) -> None:
        """The menu's entries and entry for the data asked for (not loaded yet, maybe)."""
        p = self._params
        name = data_name(p.data)
        options = list(datasets.names())
        if self._custom is not None:
            options.append(data_name(self._custom[0]))
        if name not in options:
            options.append(name)
        with self._quiet.hold():
            p.dataset_options = options
            p.dataset = name

    def choose(self, name: str) -> None:
        """The menu's choice: a built-in set brings its own labels; the user's data, theirs."""
        p = self._params
        custom = self._custom or (p.data, p.labels)
        data, labels = (name, None) if _is_builtin(name) else custom
        with p.hold_trait_notifications():
            p.data, p.labels = data, labels

    def loaded(self, data: Any, labels: Any) -> None:
        """``data`` (with ``labels``) is on screen: the user's own is kept for the menu."""
        if not _is_builtin(data):
            self._custom = (data, labels)
            self.sync()


class Setup:
    """Restart requests and the worker's (re)build job: data, graph, optimizer, first frame.

    Parameters
    ----------
    current : Current
        The layout on screen, which a successful (re)build replaces.
    params : ExplorerParams
        What to build.
    status : Status
        Busy state and errors.
    frames : Frames
        The view kept while locked is dropped with a new layout.
    worker : Worker
        A build stops early once the worker stops.
    quiet : Quiet
        Held while failed data is taken back.
    menu : DatasetMenu
        Told what data is on screen.
    player : Player
        Draws the new layout's first frame.
    host : SetupHost
        The controller, as a weak proxy.
    graph_n_epochs : int or None
        The pruning threshold of a graph built here (the epochs asked for when the controller was made).
    """

    def __init__(
        self,
        current: Current,
        params: ExplorerParams,
        status: Status,
        frames: Frames,
        worker: Worker,
        quiet: Quiet,
        menu: DatasetMenu,
        player: Player,
        host: SetupHost,
        graph_n_epochs: int | None,
    ) -> None:
        self._current, self._params, self._status, self._frames = current, params, status, frames
        self._worker, self._quiet, self._menu, self._player, self._host = worker, quiet, menu, player, host
        self._graph_n_epochs = graph_n_epochs
        self.timings: dict[str, float] = {}  # seconds per stage of the last (re)start: data, graph, ...
        self._lock = threading.Lock()
        self._dirty = 0
        self._failing = False  # the last (re)build failed: its error sticks until one succeeds
        self._loaded: tuple[Any, Any, Any] | None = None  # (data, labels, n_samples) of the graph on screen

    def request(self, level: int) -> None:
        """Ask for a restart of the layout (RESTART) or a rebuild of the graph too (REBUILD) at the next run."""
        with self._lock:
            self._dirty = max(self._dirty, level)

    def take_failure(self) -> bool:
        """Whether the error being reported is a failed build's (it sticks); asking clears it."""
        failing, self._failing = self._failing, False
        return failing

    def run(self) -> None:
        """Rebuild (data, graph) and/or restart (optimizer) as the pending requests need; show frame 0."""
        with self._lock:
            level, self._dirty = self._dirty, 0
        if not level:
            return
        clock = _StageClock()
        shown = self._current.run
        try:
            self._run_level(level, clock)
        except BaseException:
            if self._current.run is not shown:  # the new layout was adopted, only its first frame failed
                raise  # a passing error
            self._failing = True
            if level >= REBUILD and self._loaded is not None:  # failed data is not adopted: back to what is shown
                with self._quiet.hold(), self._params.hold_trait_notifications():
                    self._params.data, self._params.labels, self._params.n_samples = self._loaded
            raise
        finally:
            self._status.set_busy("", None)
            self.timings = clock.laps

    def _run_level(self, level: int, clock: _StageClock) -> None:
        """The (re)build itself; on success the new layout is shown and its data adopted."""
        p, status, current = self._params, self._status, self._current
        graph, source = current.graph, current.source
        shown_graph = graph
        if level >= REBUILD or graph is None:
            status.set_busy("loading data...", 0)
            source = load_source(p.data, p.labels, p.n_samples)
            clock.lap("data")
            status.set_busy(f"building graph ({source.n_points:,} points)...", 1)
            graph = build(
                source, p.graph_kwargs(), n_epochs=self._graph_n_epochs, device=p.device, cancel=self._worker.stopping
            )
            clock.lap("graph")
        status.set_busy("initial layout...", 2)
        run = LayoutRun(graph, make_optimizer(graph, p.layout_kwargs()), source.labels, p.outlier_method)
        clock.lap("initial layout")
        with current.lock:
            current.adopt(source, graph, run)
            self._frames.fixed_view = None
        self._loaded = (p.data, p.labels, p.n_samples)
        self._menu.loaded(p.data, p.labels)
        self._host._adopted(source, graph, rebuilt=graph is not shown_graph)
        status.set_busy("first frame...", 3)
        status.clear_error()
        self._player.show_current()
        clock.lap("first frame")


class _StageClock:
    """Seconds per named stage, for ``timings``."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = round(now - self._last, 3)
        self._last = now


def data_name(data: Any) -> str:
    """The dataset menu's entry for ``data``.

    Parameters
    ----------
    data : str, path, array, FuzzyGraph, fitted UMAP (umapviz's or umap-learn's) or scipy.sparse matrix
        As ``ExplorerParams.data``.
    """
    if isinstance(data, str):
        return data
    if is_graph_source(data):
        return GRAPH_SOURCE
    return str(data) if hasattr(data, "__fspath__") else ARRAY_SOURCE


def _is_builtin(data: Any) -> bool:
    return isinstance(data, str) and data in datasets.names()
