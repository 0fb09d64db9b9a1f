"""The comparison grid: several layouts of one graph, advancing together, side by side, plus a table.

Every configuration (strategy x n_chunks x random_state) starts from the same FuzzyGraph, built once.
All panels share one view range per frame (the union of their robust ranges), so a layout that flings
points looks bigger than one that does not, as it should. The table holds, per configuration, the final
outlier count, trustworthiness and fingerprint: equal fingerprints mean bitwise-equal layouts.
"""

from __future__ import annotations

import html
import itertools
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import datasets, metrics
from .lifetime import Panel, close_widgets, weak_callback
from .session import (
    OUTLIER_METHODS,
    LayoutRun,
    build,
    check_count,
    draw_seed,
    load_source,
    make_optimizer,
    split_params,
)

TABLE_COLUMNS = ("strategy", "n_chunks", "n_chunks_used", "random_state", "epoch", "n_epochs", "outliers",
                 "trustworthiness", "fingerprint", "ms_per_epoch")  # fmt: skip


@dataclass(frozen=True)
class Config:
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


def _as_list(value: Any) -> list:
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


class Comparison(Panel):
    """A grid of layouts of the same graph; see ``compare``."""

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
        autoplay: bool = True,
        **params: Any,
    ) -> None:
        graph_params, optimizer_params = split_params(params)
        for name in ("strategy", "n_chunks", "random_state"):
            optimizer_params.pop(name, None)
        if outlier_method not in OUTLIER_METHODS:
            raise ValueError(f"outlier_method={outlier_method!r} is not one of {OUTLIER_METHODS}.")
        # strategy, n_chunks and random_state as asked for (seeds drawn once), for set() to change one of them
        self._choice = {"strategy": strategy, "n_chunks": n_chunks, "random_state": _seeds(random_state)}
        self.configs = configurations(**self._choice)
        self._data, self._labels, self._n_samples = data, labels, n_samples
        self._graph_params, self._optimizer_params = graph_params, optimizer_params
        self._graph_n_epochs = optimizer_params.get("n_epochs")  # pruning threshold of a graph built here
        self._epochs_per_frame = check_count("epochs_per_frame", epochs_per_frame)
        self._panel_size = check_count("panel_size", panel_size)
        self._columns = check_count("columns", columns, none_means="up to 4 panels a row")
        self._outlier_method = outlier_method
        self._trust_sample = check_count("trust_sample", trust_sample, none_means="metrics.trustworthiness's default")
        self._lock = threading.RLock()
        self._source = None
        self.graph = None
        self.runs: list[LayoutRun] = []
        self._images: list[np.ndarray | None] = [None] * len(self.configs)
        self._trust: dict[tuple[int, int], float] = {}
        self._target: int | None = None
        self._error = ""
        self._errors = 0  # errors shown so far: run() raises only for one shown while it ran (or no layouts)
        self._build_widgets()
        # A grid the user drops is collected, and its widgets (all of them under self.panel, whose cells set()
        # replaces) closed.
        self._worker = self._start_worker("umapviz-compare", self.panel)
        self._worker.submit(self._setup)
        if autoplay:  # displayed in a notebook, the grid starts moving at once
            self._worker.submit(lambda: self._start(None))

    # -- programmatic control --------------------------------------------------------------------------
    def run(self, epochs: int | None = None, block: bool = True) -> Comparison:
        """Advance every layout together by ``epochs`` (None: to the end); block=True waits and then fills
        the table (raising RuntimeError if an error stopped the run)."""
        epochs = check_count("epochs", epochs, none_means="run to the end")
        since = self._errors
        self._worker.submit(lambda: self._start(epochs))
        if block:
            try:
                self._worker.wait_idle()
            except KeyboardInterrupt:  # an interrupted kernel: stop the grid too, not only the waiting
                self._worker.pause()
                raise
            if self._error and (self._errors != since or not self.runs):  # not a failed set()'s: see set
                raise RuntimeError(self._error)
        return self

    def pause(self) -> Comparison:
        self._worker.pause()
        self._worker.wait_frame_done()
        return self

    def reset(self, block: bool = True) -> Comparison:
        self._worker.pause()
        future = self._worker.submit(self._reset)
        if block:
            future.result()
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
        choice = dict(self._choice)
        for name in choice:
            if name in params:
                value = params.pop(name)
                choice[name] = _seeds(value) if name == "random_state" else value
        changes: dict[str, Any] = {"_choice": choice, "configs": configurations(**choice)}
        for name, none_means in (("epochs_per_frame", None), ("panel_size", None),
                                 ("columns", "up to 4 panels a row"),
                                 ("trust_sample", "metrics.trustworthiness's default")):  # fmt: skip
            if name in params:
                changes[f"_{name}"] = check_count(name, params.pop(name), none_means=none_means)
        if "outlier_method" in params:
            if params["outlier_method"] not in OUTLIER_METHODS:
                raise ValueError(f"outlier_method={params['outlier_method']!r} is not one of {OUTLIER_METHODS}.")
            changes["_outlier_method"] = params.pop("outlier_method")
        if "data" in params:
            changes["_data"], changes["_labels"] = params.pop("data"), None
        for name in ("labels", "n_samples"):
            if name in params:
                changes[f"_{name}"] = params.pop(name)
        graph_params, optimizer_params = split_params(params)  # an unknown name is a TypeError, as in compare
        rebuild = bool(graph_params) or any(name in changes for name in ("_data", "_labels", "_n_samples"))
        if graph_params:
            changes["_graph_params"] = {**self._graph_params, **graph_params}
        if optimizer_params:
            changes["_optimizer_params"] = {**self._optimizer_params, **optimizer_params}
        future = self._worker.submit(lambda: self._apply(changes, rebuild))
        if block:
            from .explorer import _describe  # noqa: PLC0415

            try:
                future.result()
            except Exception as exc:
                raise RuntimeError(_describe(exc)) from exc
        return self

    def table(self):
        """A pandas DataFrame, one row per configuration: outliers, trustworthiness, fingerprint, timings.

        Trustworthiness needs the data's points; for a graph given as data it is NaN.
        """
        import pandas as pd  # noqa: PLC0415

        self._worker.wait_idle()
        if self._error and not self.runs:
            raise RuntimeError(self._error)
        rows = self._worker.submit(self._rows).result()
        return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))

    def frames(self) -> list[np.ndarray]:
        """The panels' current images, (size, size, 4) uint8 each, in configuration order."""
        self._worker.wait_idle()
        with self._lock:
            if any(im is None for im in self._images):
                raise RuntimeError(self._error or "no frames yet.")
            return [im.copy() for im in self._images]

    @property
    def error(self) -> str:
        return self._error

    # -- worker jobs -----------------------------------------------------------------------------------
    def _setup(self, rebuild: bool = True, new_cells: bool = False) -> None:
        """Build the graph (unless ``rebuild`` is False and there is one) and every configuration's layout, then
        adopt them all at once (with new panels for them if ``new_cells``) and show them."""
        source, graph = self._source, self.graph
        if rebuild or graph is None:
            self._status("building graph...")
            source = load_source(self._data, self._labels, self._n_samples)
            graph = build(source, self._graph_params, n_epochs=self._graph_n_epochs,
                          device=self._optimizer_params.get("device"), cancel=self._worker.stopping)
        runs = []
        for i, config in enumerate(self.configs):
            self._status(f"initial layouts ({i + 1}/{len(self.configs)})...")
            params = dict(self._optimizer_params, strategy=config.strategy, random_state=config.random_state)
            if config.strategy == "chunked":
                params["n_chunks"] = config.n_chunks
            optimizer = make_optimizer(graph, params)
            runs.append(LayoutRun(graph, optimizer, source.labels, self._outlier_method, record=False))
        with self._lock:
            self._source, self.graph, self.runs = source, graph, runs
            self._images = [None] * len(runs)
            self._trust.clear()
            self._target = None
        if new_cells:
            self._replace_cells()
        self._clear_error()
        self._show_all()

    def _apply(self, changes: dict[str, Any], rebuild: bool) -> None:
        """set()'s job: take the new settings and set up anew; if no new layout was adopted, the settings of
        the layouts on screen come back."""
        self._worker.pause()  # here, not in set(): a run queued before set() has started by now
        shown, old = self.runs, {name: getattr(self, name) for name in changes}
        status = self._w_status.value
        for name, value in changes.items():
            setattr(self, name, value)
        try:
            self._setup(rebuild=rebuild, new_cells=True)
        except BaseException:
            if self.runs is shown:
                for name, value in old.items():
                    setattr(self, name, value)
                self._w_status.value = status  # what the grid on screen shows, not the failed step
            raise

    def _start(self, epochs: int | None) -> None:
        if not self.runs:
            return
        with self._lock:
            self._target = None if epochs is None else max(r.epoch for r in self.runs) + epochs
        self._worker.play()

    def _play_frame(self) -> bool:
        with self._lock:
            target = self._target
        moved = False
        for run in self.runs:
            goal = run.optimizer.n_epochs if target is None else min(target, run.optimizer.n_epochs)
            n = min(self._epochs_per_frame, goal - run.epoch)
            if n > 0:
                run.advance(n)
                moved = True
        if moved:
            self._show_all()
        still = any(run.epoch < (run.optimizer.n_epochs if target is None else min(target, run.optimizer.n_epochs))
                    for run in self.runs)  # fmt: skip
        if not still:
            self._show_table()
        return still

    def _reset(self) -> None:
        if not self.runs:  # the grid failed to build: its error stays shown
            return
        for run in self.runs:
            run.reset()
        self._show_all()

    def _show_all(self) -> None:
        from ..render import resolve_view  # noqa: PLC0415
        from ..render.view import union  # noqa: PLC0415
        from .explorer import encode_frame  # noqa: PLC0415

        size = self._panel_size
        view = union([resolve_view(run.optimizer.device_embedding, "robust", size, size) for run in self.runs])
        for i, run in enumerate(self.runs):
            rgba = run.image(size, size, view)
            with self._lock:
                self._images[i] = rgba
            self._w_images[i].value = encode_frame(rgba)
            self._w_counts[i].value = (f"epoch {run.epoch} · <b>{run.n_outliers:,}</b> outlier"
                                       + ("" if run.n_outliers == 1 else "s"))  # fmt: skip
        epoch = max(run.epoch for run in self.runs)
        self._status(f"epoch {epoch} / {max(r.optimizer.n_epochs for r in self.runs)} · "
                     f"{self.graph.n_vertices:,} points · shared view")  # fmt: skip

    def _rows(self) -> list[dict]:
        X = self._source.X if self._source is not None else None
        rows = []
        for i, (config, run) in enumerate(zip(self.configs, self.runs, strict=True)):
            key = (i, run.epoch)
            if key not in self._trust:
                self._trust[key] = float("nan") if X is None else self._trustworthiness(X, run)
            rows.append({
                "strategy": config.strategy,
                "n_chunks": config.n_chunks,
                "n_chunks_used": run.optimizer.n_chunks,
                "random_state": config.random_state,
                "epoch": run.epoch,
                "n_epochs": run.optimizer.n_epochs,
                "outliers": run.n_outliers,
                "trustworthiness": self._trust[key],
                "fingerprint": run.fingerprint(),
                "ms_per_epoch": run.ms_per_epoch,
            })  # fmt: skip
        return rows

    def _trustworthiness(self, X: np.ndarray, run: LayoutRun) -> float:
        sample = None if self._trust_sample is None else min(int(self._trust_sample), X.shape[0])
        k = min(5, max(1, (X.shape[0] - 1) // 2))  # the measure needs k < n / 2
        return metrics.trustworthiness(X, run.optimizer.embedding, n_neighbors=k, sample=sample)

    def _show_table(self) -> None:
        import pandas as pd  # noqa: PLC0415

        frame = pd.DataFrame(self._rows(), columns=list(TABLE_COLUMNS))
        self._w_table.value = frame.to_html(index=False, float_format=lambda v: f"{v:.4f}", na_rep="-")

    # -- widgets ---------------------------------------------------------------------------------------
    def _build_widgets(self) -> None:
        import ipywidgets as w  # noqa: PLC0415

        self._w_grid = w.GridBox(self._make_cells(), layout=w.Layout(grid_template_columns=self._grid_columns()))
        self._w_run = w.Button(description="Run", icon="play", button_style="success", layout=w.Layout(width="80px"))
        self._w_pause = w.Button(description="Pause", icon="pause", layout=w.Layout(width="80px"))
        self._w_reset = w.Button(description="Reset", icon="undo", layout=w.Layout(width="80px"))
        self._w_status = w.HTML("starting...")
        self._w_error = w.HTML("", layout=w.Layout(display="none"))
        self._w_table = w.HTML("")
        # Callbacks hold the grid weakly (see lifetime.py): a dropped grid is collected.
        self._w_run.on_click(weak_callback(self._run_clicked))
        self._w_pause.on_click(weak_callback(self._pause_clicked))
        self._w_reset.on_click(weak_callback(self._reset_clicked))
        controls = w.HBox([self._w_run, self._w_pause, self._w_reset, self._w_status])
        self.panel = w.VBox([self._w_error, controls, self._w_grid, self._w_table])
        self.panel.add_class("umapviz-compare")

    def _make_cells(self) -> list:
        """One panel per configuration: title, image, outlier count (kept in _w_images and _w_counts)."""
        import ipywidgets as w  # noqa: PLC0415

        size = self._panel_size
        self._w_images, self._w_counts, cells = [], [], []
        for config in self.configs:
            title = w.HTML(f"<b>{html.escape(config.title)}</b>", layout=w.Layout(width=f"{size}px"))
            image = w.Image(format="jpeg", width=size, height=size,
                            layout=w.Layout(width=f"{size}px", height=f"{size}px"))  # fmt: skip
            count = w.HTML("", layout=w.Layout(width=f"{size}px"))
            self._w_images.append(image)
            self._w_counts.append(count)
            cells.append(w.VBox([title, image, count]))
        return cells

    def _grid_columns(self) -> str:
        columns = self._columns or min(4, len(self.configs))
        return f"repeat({columns}, {self._panel_size + 12}px)"

    def _replace_cells(self) -> None:
        """New panels for the configurations now set; the old ones are closed."""
        old = self._w_grid.children
        self._w_grid.children = self._make_cells()
        self._w_grid.layout.grid_template_columns = self._grid_columns()
        close_widgets(*old)

    def _run_clicked(self, _button=None) -> None:
        self.run(block=False)

    def _pause_clicked(self, _button=None) -> None:
        self._worker.pause()

    def _reset_clicked(self, _button=None) -> None:
        self.reset(block=False)

    def _status(self, text: str) -> None:
        self._w_status.value = html.escape(text)

    def _show_error(self, exc: BaseException) -> None:
        from .explorer import _describe  # noqa: PLC0415

        self._error = _describe(exc)
        self._errors += 1
        self._w_error.value = (
            "<div style='background:#fdecea;color:#611a15;border-left:4px solid #d32f2f;padding:6px 10px'>"
            f"<b>umapviz:</b> {html.escape(self._error)}</div>"
        )
        self._w_error.layout.display = "block"

    def _clear_error(self) -> None:
        self._error = ""
        self._w_error.value = ""
        self._w_error.layout.display = "none"


def _seeds(random_state: Any) -> list:
    """random_state as a list, a NumPy RandomState or Generator drawn once (see session.draw_seed)."""
    return [draw_seed(seed) for seed in _as_list(random_state)]


def compare(
    data: Any = datasets.DEFAULT,
    n_chunks: Sequence[int | str] | int | str = (1, 4, 16, "auto"),
    random_state: Sequence[int | None] | int | None = (0, 1),
    strategy: Sequence[str] | str = "chunked",
    **params: Any,
) -> Comparison:
    """Lay out one graph under several configurations, side by side, advancing together.

    data: as for ``Explorer``. n_chunks, random_state, strategy: a value or a list each; every combination
    is run (n_chunks only varies "chunked"). Other keywords: ``labels``, ``n_samples``, ``epochs_per_frame``
    (10), ``panel_size`` (240), ``columns``, ``outlier_method``, ``trust_sample`` (query points for
    trustworthiness, 1000), ``autoplay`` (True: start running in the background at once), graph parameters
    and LayoutOptimizer parameters.

    Returns a Comparison: display it in a notebook; ``run(block=True)`` waits for the end; ``table()``;
    ``set(**params)`` changes parameters in place and starts again from epoch 0.

    A grid lives while it is on screen or referred to (``grid = compare(...)``): a displayed one stays usable
    even if nothing else refers to it, until ``close()`` or until the frontend reports its views gone (its cell
    output cleared or replaced); where nothing reports that (headless kernels such as nbval's, a terminal
    IPython; a notebook closed or a page reloaded in JupyterLab), until ``close()``. Show it with
    ``display(grid)`` rather than as a cell's last line, which IPython's output history (``Out``, ``_``) keeps
    as long as the kernel lives.
    """
    return Comparison(data, n_chunks, random_state, strategy, **params)
