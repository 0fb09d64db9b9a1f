"""The Explorer controller's parameter-driven jobs: a changed parameter asks the worker to restart the layout
or rebuild the graph, and the worker does it here. Part of ExplorerController (controller.py), kept apart for
size: it uses the controller's ``params``, ``status``, ``frames``, ``worker``, ``quietly()`` and run fields.

A (re)build that fails leaves the last good layout on screen and usable; its error sticks until a build succeeds,
and data that failed to load is not adopted (the parameters go back to the data on screen).
"""

from __future__ import annotations

import time
from typing import Any

from ... import datasets
from ..session import ARRAY_SOURCE, GRAPH_SOURCE, LayoutRun, build, is_graph_source, load_source, make_optimizer
from .params import REBUILD_TRAITS, REDRAW_TRAITS, RESTART_TRAITS

RESTART, REBUILD = 1, 2  # how much a parameter change redoes: the layout only, or the graph as well


class SetupJobs:
    """Parameters -> work: restart or rebuild requests and the worker's (re)build job (a mixin)."""

    def request(self, level: int) -> None:
        """Have the worker restart the layout (RESTART) or rebuild the graph too (REBUILD)."""
        with self._lock:
            self._dirty = max(self._dirty, level)
        self.worker.submit(self._setup, key="setup")

    def _param_changed(self, change: Any) -> None:
        name = change["name"]
        if name == "data":
            self._sync_dataset()
        if self._is_quiet():
            return
        if name == "dataset":
            self._dataset_chosen(change["new"])
        elif name in REBUILD_TRAITS:
            self.request(REBUILD)
        elif name in RESTART_TRAITS:
            self.request(RESTART)
        elif name in REDRAW_TRAITS:
            self._redraw()

    def _dataset_chosen(self, name: str) -> None:
        """The dataset menu: a built-in set brings its own labels; the user's data, theirs."""
        p = self.params
        custom = self._custom or (p.data, p.labels)
        data, labels = (name, None) if _is_builtin(name) else custom
        with p.hold_trait_notifications():
            p.data, p.labels = data, labels

    def _sync_dataset(self) -> None:
        """The dataset menu's entries and entry for the data asked for (not loaded yet, maybe)."""
        p = self.params
        name = data_name(p.data)
        options = list(datasets.names())
        if self._custom is not None:
            options.append(data_name(self._custom[0]))
        if name not in options:
            options.append(name)
        with self.quietly():
            p.dataset_options = options
            p.dataset = name

    def _redraw(self) -> None:
        """The view lock, the view range, the colouring or the size changed: draw the current frame again."""
        self.status.begin()  # a frame that failed to draw may draw now (density only): its error goes
        self.frames.fixed_view = None
        if self.run is not None and not self.worker.playing:
            self.worker.submit(self._show_current, key="redraw")

    def _scrubbed(self, change: Any) -> None:
        if self._is_quiet() or self.worker.in_worker:
            return
        self.cancel_play(refresh=False)  # a refresh would move the scrubber back to the latest frame
        index = int(change["new"])
        self.worker.submit(lambda: self._show_recorded(index), key="scrub")

    # -- worker jobs ---------------------------------------------------------------------------------------------
    def _setup(self) -> None:
        """Rebuild (data, graph) and/or restart (optimizer) as the pending changes need; show frame 0."""
        with self._lock:
            level, self._dirty = self._dirty, 0
        if not level:
            return
        clock = _StageClock()
        shown = self.run
        try:
            self._setup_level(level, clock)
        except BaseException:
            if self.run is not shown:  # the new layout was adopted, only its first frame failed: a passing error
                raise
            self._setup_failing = True  # its error stays until a build succeeds
            if level >= REBUILD and self._loaded is not None:  # failed data is not adopted: back to what is shown
                with self.quietly(), self.params.hold_trait_notifications():
                    self.params.data, self.params.labels, self.params.n_samples = self._loaded
            raise
        finally:
            self.status.set_busy("", None)
            self.timings = clock.laps

    def _setup_level(self, level: int, clock: _StageClock) -> None:
        """The (re)build itself; on success the new layout is shown and its data adopted."""
        p, status = self.params, self.status
        graph, source = self.graph, self.source
        shown_graph = graph
        if level >= REBUILD or graph is None:
            status.set_busy("loading data...", 0)
            source = load_source(p.data, p.labels, p.n_samples)
            clock.lap("data")
            status.set_busy(f"building graph ({source.n_points:,} points)...", 1)
            graph = build(
                source, p.graph_kwargs(), n_epochs=self.graph_n_epochs, device=p.device, cancel=self.worker.stopping
            )
            clock.lap("graph")
        status.set_busy("initial layout...", 2)
        run = LayoutRun(graph, make_optimizer(graph, p.layout_kwargs()), source.labels, p.outlier_method)
        clock.lap("initial layout")
        with self._lock:
            self.source, self.graph, self.run = source, graph, run
            self.frames.fixed_view = None
            self._fps_stamps.clear()
            if self._target_span is not None:  # a play(epochs) under way plays as many on the new layout
                self._target_epoch = run.epoch + self._target_span
        self._loaded = (p.data, p.labels, p.n_samples)
        if not _is_builtin(p.data):
            self._custom = (p.data, p.labels)
            self._sync_dataset()
        with self.hold_trait_notifications():
            self.has_labels = source.labels is not None
            self.graph_given = source.graph is not None
            self.graph_nnz = int(graph.nnz)
        self._refocus(rebuilt=graph is not shown_graph)
        status.set_busy("first frame...", 3)
        status.clear_error()
        self._show_current()
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
