"""The comparison grid's controller: several layouts of one graph, advancing together; no widget.

Every configuration (strategy x n_chunks x random_state) starts from the same FuzzyGraph, built once. All cells
share one view range per frame (the union of their robust ranges), so a layout that flings points looks bigger
than one that does not, as it should. ``rows()`` holds, per configuration, the outlier count, trustworthiness
and fingerprint: equal fingerprints mean bitwise-equal layouts. Errors follow the rule of status.py, shared
with the Explorer.
"""

from __future__ import annotations

import functools
import itertools
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
from traitlets import Int, Unicode

from ... import datasets, metrics
from ...render import View, resolve_view
from ...render.view import union
from ..focus import CellsFocus
from ..lifetime import call_each
from ..session import (
    OUTLIER_METHODS,
    LayoutRun,
    build,
    check_count,
    draw_seed,
    load_source,
    make_optimizer,
    split_params,
)
from ..status import ExplorerError, Status, describe
from ..worker import Worker

TABLE_COLUMNS = (
    "strategy",
    "n_chunks",
    "n_chunks_used",
    "random_state",
    "epoch",
    "n_epochs",
    "outliers",
    "trustworthiness",
    "fingerprint",
    "ms_per_epoch",
)
# The grid's own settings: (name, what None means; None where None is refused).
COUNTS = (
    ("epochs_per_frame", None),
    ("panel_size", None),
    ("columns", "up to 4 panels a row"),
    ("trust_sample", "metrics.trustworthiness's default"),
)


@dataclass(frozen=True)
class Config:
    """One cell of the grid: a strategy, its n_chunks and a seed."""

    strategy: str
    n_chunks: int | str
    random_state: int | None

    @property
    def title(self) -> str:
        chunks = f", n_chunks={self.n_chunks}" if self.strategy == "chunked" else ""
        return f"{self.strategy}{chunks}, seed {self.random_state}"


def configurations(strategy: Any, n_chunks: Any, random_state: Any) -> list[Config]:
    """Every combination, in order; n_chunks varies only for "chunked" (other strategies ignore it)."""
    strategies, chunk_values = _as_list(strategy), _as_list(n_chunks)
    seeds = [draw_seed(seed) for seed in _as_list(random_state)]
    configs: list[Config] = []
    for s, k, seed in itertools.product(strategies, chunk_values, seeds):
        config = Config(s, k if s == "chunked" else (1 if s == "buffered" else "-"), seed)
        if config not in configs:
            configs.append(config)
    if not configs:
        raise ValueError("nothing to compare: give at least one strategy, n_chunks and random_state.")
    return configs


class GridController(CellsFocus):
    """Layouts of one graph under several configurations, on a background thread; see ``umapviz.compare``.

    The cells share one graph, one view range (``zoom``, ``reset_view``) and one selection (``select``), so a
    point picked in one cell is the same point in every other, and ``flung(cell)`` of the buffered cell,
    selected, shows where those points sit under chunked.

    Parameters
    ----------
    data, n_chunks, random_state, strategy
        As for ``umapviz.compare``.
    labels, n_samples, epochs_per_frame, panel_size, columns, outlier_method, trust_sample
        As for ``umapviz.compare``; a bad value of these raises at once.
    **params
        Graph parameters and LayoutOptimizer parameters (a misspelt name is a TypeError).
    """

    frame_id = Int(0, help="raised by one for each new set of images")
    table_id = Int(0, help="raised by one when every layout reached its goal (the table is worth showing)")
    cells_id = Int(0, help="raised by one when the configurations changed (the view makes new cells)")
    caption = Unicode("starting...", help="what the grid does or shows")

    def __init__(
        self,
        data: Any = datasets.DEFAULT,
        n_chunks: Any = (1, 4, 16, "auto"),
        random_state: Any = (0, 1),
        strategy: Any = "chunked",
        *,
        labels: Any = None,
        n_samples: int | None = None,
        epochs_per_frame: int = 10,
        panel_size: int = 240,
        columns: int | None = None,
        outlier_method: str = "neighbors",
        trust_sample: int | None = 1000,
        **params: Any,
    ) -> None:
        super().__init__()
        graph_params, optimizer_params = split_params(params)
        for name in ("strategy", "n_chunks", "random_state"):
            optimizer_params.pop(name, None)
        # strategy, n_chunks and random_state as asked for (seeds drawn once), for set() to change one of them
        self.choice = {"strategy": strategy, "n_chunks": n_chunks, "random_state": _seeds(random_state)}
        self.configs = configurations(**self.choice)
        self.settings = _checked(
            {
                "epochs_per_frame": epochs_per_frame,
                "panel_size": panel_size,
                "columns": columns,
                "trust_sample": trust_sample,
                "outlier_method": outlier_method,
            }
        )
        self.data = {"data": data, "labels": labels, "n_samples": n_samples}
        self.graph_params, self.optimizer_params = graph_params, optimizer_params
        self.graph_n_epochs = optimizer_params.get("n_epochs")  # pruning threshold of a graph built here
        self.status = Status()
        self.source = None
        self.graph = None
        self.runs: list[LayoutRun] = []
        self._lock = threading.RLock()
        self._images: list[np.ndarray | None] = [None] * len(self.configs)
        self._shown_view: Any = None
        self._trust: dict[tuple[int, int], float] = {}
        self._target: int | None = None
        self._sticky = False  # the error about to be reported is a failed set-up's
        self._gone: list = []
        self.worker = Worker(
            self._play_frame,
            self._report,
            name="umapviz-compare",
            on_owner_gone=functools.partial(call_each, self._gone),
        )

    # -- life cycle ----------------------------------------------------------------------------------------
    def start(self, autoplay: bool = False) -> None:
        """Build the graph and every layout (in the background); ``autoplay``: then run them to the end."""
        self.worker.submit(self._setup)
        if autoplay:
            self.worker.submit(lambda: self._start(None))

    def on_gone(self, callback: Any) -> None:
        """Call ``callback()`` on the worker thread once this controller was collected (it must not refer to it)."""
        self._gone.append(callback)

    def close(self) -> None:
        """Stop the worker thread (a build under way stops at its next tile)."""
        self.worker.close()

    # -- programmatic control ------------------------------------------------------------------------------
    def run(self, epochs: int | None = None, block: bool = True) -> None:
        """Advance every layout together by ``epochs`` (None: to the end); block=True waits and raises
        ExplorerError (a RuntimeError) for an error shown meanwhile, or when there are no layouts."""
        epochs = check_count("epochs", epochs, none_means="run to the end")
        since = self.status.begin()
        self.worker.submit(lambda: self._start(epochs))
        if block:
            try:
                self.worker.wait_idle()
            except KeyboardInterrupt:  # an interrupted kernel: stop the grid too, not only the waiting
                self.worker.pause()
                raise
            self.status.check(since, bool(self.runs))

    def pause(self, wait: bool = True) -> None:
        """Stop after the frame being computed; ``wait``: return once it stopped."""
        self.worker.pause()
        if wait:
            self.worker.wait_frame_done()

    def reset(self, block: bool = True) -> None:
        """Pause and take every layout back to epoch 0."""
        self.worker.pause()
        future = self.worker.submit(self._reset)
        if block:
            future.result()

    def set(self, block: bool = True, **params: Any) -> None:
        """Change parameters in place and start again from epoch 0, paused; see ``Comparison.set``."""
        changes, rebuild = planned_changes(self, params)
        self.status.begin()
        future = self.worker.submit(lambda: self._apply(changes, rebuild))
        if block:
            try:
                future.result()
            except Exception as exc:
                raise ExplorerError(describe(exc)) from exc

    def rows(self) -> list[dict]:
        """One row per configuration (TABLE_COLUMNS), once the queued work is done."""
        self.worker.wait_idle()
        if self.status.error and not self.runs:
            raise ExplorerError(self.status.error)
        return self.worker.submit(self.current_rows).result()

    def images(self) -> list[np.ndarray]:
        """The cells' current images, (size, size, 4) uint8 each, in configuration order."""
        self.worker.wait_idle()
        with self._lock:
            if any(im is None for im in self._images):
                raise ExplorerError(self.status.error or "no frames yet.")
            return [im.copy() for im in self._images]

    def image(self, index: int) -> np.ndarray | None:
        """The ``index``-th cell's image now (not a copy), None before its first."""
        with self._lock:
            return self._images[index] if index < len(self._images) else None

    @property
    def shown_view(self) -> Any:
        """The ``umapviz.render.View`` every cell's current image shows (None before the first images)."""
        with self._lock:
            return self._shown_view

    # -- worker jobs -----------------------------------------------------------------------------------
    def _setup(self, rebuild: bool = True, new_cells: bool = False) -> None:
        """Build the graph (unless ``rebuild`` is False and there is one) and every configuration's layout, then
        adopt them all at once (announcing new cells for them if ``new_cells``) and show them. Its error sticks
        until a set-up succeeds."""
        try:
            self._build_all(rebuild, new_cells)
        except BaseException:
            self._sticky = True
            raise

    def _build_all(self, rebuild: bool, new_cells: bool) -> None:
        source, graph = self.source, self.graph
        if rebuild or graph is None:
            self.caption = "building graph..."
            source = load_source(**self.data)
            graph = build(
                source,
                self.graph_params,
                n_epochs=self.graph_n_epochs,
                device=self.optimizer_params.get("device"),
                cancel=self.worker.stopping,
            )
        runs = []
        for i, config in enumerate(self.configs):
            self.caption = f"initial layouts ({i + 1}/{len(self.configs)})..."
            params = dict(self.optimizer_params, strategy=config.strategy, random_state=config.random_state)
            if config.strategy == "chunked":
                params["n_chunks"] = config.n_chunks
            optimizer = make_optimizer(graph, params)
            runs.append(LayoutRun(graph, optimizer, source.labels, self.settings["outlier_method"], record=False))
        rebuilt = graph is not self.graph
        with self._lock:
            self.source, self.graph, self.runs = source, graph, runs
            self._images = [None] * len(runs)
            self._shown_view = None
            self._trust.clear()
            self._target = None
        self._refocus(rebuilt)
        if new_cells:
            self.cells_id += 1
        self.status.clear_error()
        self._show_all()

    def _apply(self, changes: dict[str, Any], rebuild: bool) -> None:
        """set()'s job: take the new settings and set up anew; if no new layout was adopted, the settings of
        the layouts on screen come back."""
        self.worker.pause()  # here, not in set(): a run queued before set() has started by now
        shown, old = self.runs, {name: getattr(self, name) for name in changes}
        caption = self.caption
        for name, value in changes.items():
            setattr(self, name, value)
        try:
            self._setup(rebuild=rebuild, new_cells=True)
        except BaseException:
            if self.runs is shown:
                for name, value in old.items():
                    setattr(self, name, value)
                self.caption = caption  # what the grid on screen shows, not the failed step
            raise

    def _start(self, epochs: int | None) -> None:
        if not self.runs:
            return
        with self._lock:
            self._target = None if epochs is None else max(r.epoch for r in self.runs) + epochs
        self.worker.play()

    def _goal(self, run: LayoutRun, target: int | None) -> int:
        return run.optimizer.n_epochs if target is None else min(target, run.optimizer.n_epochs)

    def _play_frame(self) -> bool:
        with self._lock:
            target = self._target
        moved = False
        for run in self.runs:
            n = min(self.settings["epochs_per_frame"], self._goal(run, target) - run.epoch)
            if n > 0:
                run.advance(n, count_each_epoch=False)  # one count per frame per cell: a grid has many
                moved = True
        if moved:
            self._show_all()
        still = any(run.epoch < self._goal(run, target) for run in self.runs)
        if not still:
            self.table_id += 1
        return still

    def _reset(self) -> None:
        if not self.runs:  # the grid failed to build: its error stays shown
            return
        for run in self.runs:
            run.reset()
        self._show_all()

    def _show_all(self) -> None:
        size = self.settings["panel_size"]
        if self.view_range is not None:  # zoomed: the same range in every cell
            view = View(*self.view_range)
        else:
            view = union([resolve_view(run.optimizer.device_embedding, "robust", size, size) for run in self.runs])
        images = [run.image(size, size, view) for run in self.runs]
        with self._lock:
            self._images = images
            self._shown_view = view
        epoch = max(run.epoch for run in self.runs)
        self.caption = (
            f"epoch {epoch} / {max(r.optimizer.n_epochs for r in self.runs)} · "
            f"{self.graph.n_vertices:,} points · shared view"
        )
        self.frame_id += 1

    def current_rows(self) -> list[dict]:
        """One row per configuration as the layouts are now (on the worker thread, or with the worker idle)."""
        X = self.source.X if self.source is not None else None
        return [
            row(config, run, self._trust_of(i, run, X))
            for i, (config, run) in enumerate(zip(self.configs, self.runs, strict=True))
        ]

    def _trust_of(self, i: int, run: LayoutRun, X: np.ndarray | None) -> float:
        """Trustworthiness of cell ``i`` at its epoch, computed once per epoch (NaN for a graph given as data)."""
        key = (i, run.epoch)
        if key not in self._trust:
            self._trust[key] = float("nan") if X is None else trustworthiness(X, run, self.settings["trust_sample"])
        return self._trust[key]

    def _report(self, exc: BaseException) -> None:
        """The worker's error report: shown in ``status`` (a failed set-up's error sticks)."""
        sticky, self._sticky = self._sticky, False
        self.status.show_error(exc, sticky=sticky)


def row(config: Config, run: LayoutRun, trust: float) -> dict[str, Any]:
    """The table's row (TABLE_COLUMNS) of one configuration.

    Parameters
    ----------
    config : Config
        The configuration.
    run : LayoutRun
        Its layout now.
    trust : float
        Its trustworthiness now.
    """
    opt = run.optimizer
    return {
        "strategy": config.strategy,
        "n_chunks": config.n_chunks,
        "n_chunks_used": opt.n_chunks,
        "random_state": config.random_state,
        "epoch": run.epoch,
        "n_epochs": opt.n_epochs,
        "outliers": run.n_outliers,
        "trustworthiness": trust,
        "fingerprint": run.fingerprint(),
        "ms_per_epoch": run.ms_per_epoch,
    }


def trustworthiness(X: np.ndarray, run: LayoutRun, trust_sample: int | None) -> float:
    """``metrics.trustworthiness`` of the run's layout of ``X`` (k=5, or less for tiny data).

    Parameters
    ----------
    X : numpy.ndarray
        The data the graph was built from.
    run : LayoutRun
        The layout.
    trust_sample : int or None
        Query points (None: the measure's default).
    """
    sample = None if trust_sample is None else min(int(trust_sample), X.shape[0])
    k = min(5, max(1, (X.shape[0] - 1) // 2))  # the measure needs k < n / 2
    return metrics.trustworthiness(X, run.optimizer.embedding, n_neighbors=k, sample=sample)


def planned_changes(grid: GridController, params: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """What ``grid.set(**params)`` changes (attribute -> new value) and whether it needs a new graph; a bad value
    of the grid's own settings, an unknown name or no configuration raises here, before anything changed.

    Parameters
    ----------
    grid : GridController
        The grid as it is.
    params : dict
        The keyword arguments of ``set``.
    """
    params = dict(params)
    choice = dict(grid.choice)
    for name in choice:
        if name in params:
            value = params.pop(name)
            choice[name] = _seeds(value) if name == "random_state" else value
    changes: dict[str, Any] = {"choice": choice, "configs": configurations(**choice)}
    own = {name: params.pop(name) for name in (*dict(COUNTS), "outlier_method") if name in params}
    if own:
        changes["settings"] = {**grid.settings, **_checked(own)}
    data = {name: params.pop(name) for name in ("data", "labels", "n_samples") if name in params}
    if "data" in data:
        data.setdefault("labels", None)
    if data:
        changes["data"] = {**grid.data, **data}
    graph_params, optimizer_params = split_params(params)  # an unknown name is a TypeError, as in compare
    rebuild = bool(graph_params or data)
    if graph_params:
        changes["graph_params"] = {**grid.graph_params, **graph_params}
    if optimizer_params:
        changes["optimizer_params"] = {**grid.optimizer_params, **optimizer_params}
    return changes, rebuild


def _checked(settings: dict[str, Any]) -> dict[str, Any]:
    """The grid's own settings, checked: a bad one raises ValueError naming it."""
    checked = {}
    for name, none_means in COUNTS:
        if name in settings:
            checked[name] = check_count(name, settings[name], none_means=none_means)
    if "outlier_method" in settings:
        if settings["outlier_method"] not in OUTLIER_METHODS:
            raise ValueError(f"outlier_method={settings['outlier_method']!r} is not one of {OUTLIER_METHODS}.")
        checked["outlier_method"] = settings["outlier_method"]
    return checked


def _as_list(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _seeds(random_state: Any) -> list:
    """random_state as a list, a NumPy RandomState or Generator drawn once (see session.draw_seed)."""
    return [draw_seed(seed) for seed in _as_list(random_state)]
