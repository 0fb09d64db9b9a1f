"""What the panels run, without any widget: data -> graph -> optimizer -> measured, recorded frames.

The Explorer and the comparison grid share these pieces, and tests drive them directly:
- ``load_source`` turns ``data`` (a dataset name, an array, a file path or a FuzzyGraph) into a Source;
- ``build`` makes the FuzzyGraph through ``umapviz.build_graph`` (and its on-disk cache);
- ``initial_layout`` remembers initial layouts (spectral init of a 20k-point graph takes seconds), so a
  restart with another strategy or n_chunks is immediate;
- ``LayoutRun`` is one optimizer plus its outliers per shown epoch, recorded frames and timings.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse

from .. import datasets, metrics, render
from .._backend import resolve_device, to_host
from .._files import atomic_write
from .._validation import check_data, check_random_state, is_integer
from ..graph import FuzzyGraph, build_graph
from ..graph.cache import resolve_cache_dir
from ..graph.matrix import GraphMatrix
from ..graph.start import random_init, spectral_init
from ..optimize import LayoutOptimizer
from ..optimize.optimizer import INITS, SPECTRAL_INITS
from ..optimize.rng import resolve_seed
from ..render.shade.style import PANEL_STYLE

GRAPH_PARAMS = ("n_neighbors", "metric", "min_dist", "spread", "knn")
OPTIMIZER_PARAMS = tuple(p for p in inspect.signature(LayoutOptimizer).parameters if p != "graph")
OUTLIER_METHODS = ("neighbors", "radius")  # the two that need no reference layout
ARRAY_SOURCE = "(your array)"
GRAPH_SOURCE = "(your graph)"

# Recorded frames are kept on the host up to this many bytes; past it every other frame is dropped (the
# last is always kept), so a long run of millions of points thins its history instead of filling memory.
RECORD_BUDGET_BYTES = 512 * 2**20


# ---------------------------------------------------------------------------------------------------
# Parameters and data.
# ---------------------------------------------------------------------------------------------------


def check_count(name: str, value: Any, none_means: str | None = None) -> int | None:
    """A positive int argument of the panels (epochs to play, steps, epochs per frame); None too where
    ``none_means`` says what it means."""
    if value is None and none_means is not None:
        return None
    if not is_integer(value) or value < 1:  # NumPy ints count too
        alternative = f" or None ({none_means})" if none_means is not None else ""
        raise ValueError(f"{name}={value!r} must be a positive integer{alternative}.")
    return int(value)


def split_params(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(graph parameters, optimizer parameters) from keyword arguments; unknown names raise TypeError."""
    unknown = sorted(set(params) - set(GRAPH_PARAMS) - set(OPTIMIZER_PARAMS))
    if unknown:
        raise TypeError(
            f"unknown parameter(s) {unknown}. Graph parameters: {', '.join(GRAPH_PARAMS)}; "
            f"optimizer parameters: {', '.join(OPTIMIZER_PARAMS)}."
        )
    graph = {k: v for k, v in params.items() if k in GRAPH_PARAMS}
    optimizer = {k: v for k, v in params.items() if k in OPTIMIZER_PARAMS}
    if "random_state" in optimizer:
        optimizer["random_state"] = draw_seed(optimizer["random_state"])
    return graph, optimizer


def draw_seed(random_state: Any) -> Any:
    """A NumPy RandomState or Generator as the one int seed drawn from it, so that a restart repeats the run and
    the seed box can show it; any other value unchanged, for the optimizer to check."""
    if isinstance(random_state, np.random.RandomState | np.random.Generator):
        return check_random_state(random_state)
    return random_state


@dataclass(frozen=True)
class Source:
    """The data behind a panel: a name, and either points (X) or a ready graph."""

    name: str
    X: np.ndarray | None
    labels: np.ndarray | None
    graph: FuzzyGraph | None = None

    @property
    def n_points(self) -> int:
        return self.graph.n_vertices if self.graph is not None else int(self.X.shape[0])


def load_source(data: Any, labels: Any = None, n_samples: int | None = None) -> Source:
    """A Source from a dataset name, a data file path, an (n, d) array or a FuzzyGraph; a fitted model (umapviz's
    or umap-learn's) or a scipy.sparse fuzzy membership matrix gives its graph (:meth:`FuzzyGraph.from_umap`,
    :meth:`FuzzyGraph.from_sparse`) to replay."""
    data = _graph_of(data)
    if isinstance(data, FuzzyGraph):
        return Source(GRAPH_SOURCE, None, _check_labels(labels, data.n_vertices), data)
    if isinstance(data, (str, os.PathLike)):
        X, file_labels = datasets.load(data, n_samples=n_samples)
        name = data if isinstance(data, str) and data in datasets.names() else os.fspath(data)
        return Source(name, X, _check_labels(labels, X.shape[0]) if labels is not None else file_labels)
    if data is None:
        raise ValueError(
            "data is None: pass a dataset name (one of " + ", ".join(datasets.names()) + "), "
            "an (n_samples, n_features) array, a file path or a FuzzyGraph."
        )
    X = check_data(data, name="data")  # the graph's own checks, so a DataFrame's text columns are named
    return Source(ARRAY_SOURCE, X, _check_labels(labels, X.shape[0]))


def is_graph_source(data: Any) -> bool:
    """Whether ``data`` is replayed as a graph: a FuzzyGraph, a fitted model or a sparse membership matrix."""
    return isinstance(data, FuzzyGraph) or getattr(data, "graph_", None) is not None or scipy.sparse.issparse(data)


def _graph_of(data: Any) -> Any:
    """The FuzzyGraph a fitted model or a sparse membership matrix holds; anything else as it is."""
    fuzzy = getattr(data, "fuzzy_graph_", None)
    if isinstance(fuzzy, FuzzyGraph):  # a fitted umapviz.UMAP
        return fuzzy
    if isinstance(data, GraphMatrix) and data.fuzzy_graph is not None:  # its graph_: the graph it was made of
        return data.fuzzy_graph
    graph = getattr(data, "graph_", None)
    if graph is not None and hasattr(data, "_a"):  # a fitted umap-learn model
        return FuzzyGraph.from_umap(data)
    if scipy.sparse.issparse(data):
        return FuzzyGraph.from_sparse(data)
    return data


def _check_labels(labels: Any, n: int) -> np.ndarray | None:
    """Class codes 0..K-1 (int64) from labels given with the data: integer codes as they are, any other classes
    (text, floats, a pandas Series or Categorical) numbered in sorted order. Missing labels are refused, as the
    files' readers refuse them (a class of their own would draw them as a real class)."""
    if labels is None:
        return None
    arr = np.asarray(to_host(labels))
    if arr.shape != (n,):
        raise ValueError(f"labels must have one entry per point, shape ({n},); got {arr.shape}.")
    if arr.dtype.kind in "iu":
        if arr.size and arr.min() < 0:
            raise ValueError("integer labels must be >= 0 (codes 0..K-1).")
        return arr.astype(np.int64)
    missing = np.flatnonzero(np.isnan(arr) if arr.dtype.kind == "f" else [_is_missing(v) for v in arr])
    if missing.size:
        more = " ..." if missing.size > 10 else ""
        raise ValueError(
            f"labels have {missing.size:,d} missing value(s) (None or NaN), at points {missing[:10].tolist()}{more}. "
            "Give every point a class (e.g. labels.fillna('unknown') for a pandas Series), or leave those points "
            "out of both the data and the labels."
        )
    if arr.dtype.kind == "O":  # mixed types (1 and "a") do not sort together: number them by their text
        arr = arr.astype(str)
    _, codes = np.unique(arr, return_inverse=True)
    return codes.astype(np.int64)


def _is_missing(value: Any) -> bool:
    """Whether one label is missing: None, or a value unequal to itself (NaN, NaT), or one that cannot say
    (pandas.NA)."""
    if value is None:
        return True
    try:
        return bool(value != value)
    except (TypeError, ValueError):
        return True


def build(
    source: Source,
    graph_params: dict[str, Any],
    n_epochs: int | None = None,
    device: str | None = None,
    cancel: Callable[[], bool] | None = None,
) -> FuzzyGraph:
    """The source's FuzzyGraph: the given one, or ``build_graph`` (cached on disk) of its points, its kNN
    on the GPU when the layout runs there; ``cancel`` stops a CPU build early (see build_graph)."""
    if source.graph is not None:
        return source.graph
    return build_graph(
        source.X, n_epochs=n_epochs, progress=False, device=device or "cpu", cancel=cancel, **graph_params
    )


# ---------------------------------------------------------------------------------------------------
# Initial layouts, remembered in memory and (spectral ones) on disk beside the graph cache.
# ---------------------------------------------------------------------------------------------------

_INIT_MEMORY: OrderedDict[tuple, np.ndarray] = OrderedDict()
_INIT_MEMORY_ITEMS = 8


def initial_layout(
    graph: FuzzyGraph, init: str, seed: int, dim: int = 2, cache: bool = True, device: str = "cpu"
) -> np.ndarray:
    """The layout ``LayoutOptimizer(graph, init=init, random_state=seed, device=device)`` starts from, computed once.

    Spectral layouts solved on the CPU are also stored as ``init-<key>.npz`` in the graph cache directory
    (written atomically, checked on read): the eigen-solve is a large share of a panel's start (about 0.7 s at
    20k points on two cores). The key holds the code that computes the layout, so a changed init never serves
    a stale file. GPU layouts stay in memory only: their bytes depend on the GPU and its libraries too.
    """
    device = resolve_device(device)
    key = (graph.fingerprint, init, int(seed), int(dim), device, _init_code_version())
    if key in _INIT_MEMORY:
        _INIT_MEMORY.move_to_end(key)
        return _INIT_MEMORY[key]
    if init == "random":
        layout = random_init(graph.n_vertices, dim, seed)
    elif init in SPECTRAL_INITS:
        path = _init_path(key) if cache and device == "cpu" else None
        layout = _read_init(path, graph.n_vertices, dim) if path is not None else None
        if layout is None:
            layout = spectral_init(graph, dim, seed, device=device, method=SPECTRAL_INITS[init])
            if path is not None:
                _write_init(path, layout)
    else:
        raise ValueError(f"init={init!r} is not known; use one of {INITS}.")
    layout.setflags(write=False)
    _INIT_MEMORY[key] = layout
    while len(_INIT_MEMORY) > _INIT_MEMORY_ITEMS:
        _INIT_MEMORY.popitem(last=False)
    return layout


@functools.lru_cache(maxsize=1)
def _init_code_version() -> str:
    """A digest of graph/start's front, its eigen-solves' modules and the versions of the libraries they run on."""
    import scipy  # noqa: PLC0415

    from ..graph import start  # noqa: PLC0415

    folder = Path(start.__file__).parent
    names = ("__init__.py", "spectral.py", "spectral_cpu.py", "spectral_sampled.py", "landmarks.py", "landmarks_cpu.py")
    source = b"".join((folder / name).read_bytes() for name in names)
    versions = f"numpy {np.__version__} scipy {scipy.__version__}".encode()
    return hashlib.blake2b(source + versions, digest_size=8).hexdigest()


def _init_path(key: tuple) -> Path | None:
    directory = resolve_cache_dir(True)
    digest = hashlib.blake2b(repr(key).encode(), digest_size=12).hexdigest()
    return Path(directory) / f"init-{digest}.npz"


def _read_init(path: Path, n: int, dim: int) -> np.ndarray | None:
    """The stored layout, or None when absent, unreadable, of the wrong shape or failing its checksum."""
    try:
        with np.load(path, allow_pickle=False) as z:
            layout, checksum = z["layout"], str(z["checksum"])
    except Exception:  # missing or damaged: recompute (and rewrite)
        return None
    if layout.shape != (n, dim) or layout.dtype != np.float32 or checksum != _layout_checksum(layout):
        return None
    return layout


def _write_init(path: Path, layout: np.ndarray) -> None:
    try:
        atomic_write(path, lambda tmp: np.savez(tmp, layout=layout, checksum=np.array(_layout_checksum(layout))))
    except OSError:  # a read-only cache directory only costs the next start a recomputation
        pass


def _layout_checksum(layout: np.ndarray) -> str:
    return hashlib.blake2b(np.ascontiguousarray(layout).tobytes(), digest_size=16).hexdigest()


def make_optimizer(graph: FuzzyGraph, params: dict[str, Any]) -> LayoutOptimizer:
    """A LayoutOptimizer from keyword parameters, its initial layout taken from ``initial_layout``."""
    params = dict(params)
    seed = resolve_seed(params.pop("random_state", None))
    init = params.pop("init", "spectral")
    dim = params.get("n_components", 2)
    if dim != 2:  # checked before anything is built: the panels would fail only when drawing the first frame
        raise ValueError(
            f"n_components={dim!r}: the panels draw 2-D layouts, so n_components must be 2. "
            "Use umapviz.LayoutOptimizer directly for other dimensions."
        )
    if isinstance(init, str) and init in INITS and isinstance(dim, int):
        layout = initial_layout(graph, init, seed, dim, device=params.get("device", "cpu"))
        optimizer = LayoutOptimizer(graph, random_state=seed, init=layout, **params)
        optimizer.init = init  # report the rule, not the array it produced
        return optimizer
    return LayoutOptimizer(graph, random_state=seed, init=init, **params)


# ---------------------------------------------------------------------------------------------------
# One run as a panel shows it.
# ---------------------------------------------------------------------------------------------------


class FrameLog:
    """Embeddings at the epochs shown, on the host, thinned to stay under a memory budget."""

    def __init__(self, budget_bytes: int = RECORD_BUDGET_BYTES) -> None:
        self.budget_bytes = int(budget_bytes)
        self.epochs: list[int] = []
        self.embeddings: list[np.ndarray] = []
        self.outliers: list[np.ndarray] = []

    def __len__(self) -> int:
        return len(self.epochs)

    @property
    def nbytes(self) -> int:
        return sum(e.nbytes + m.nbytes for e, m in zip(self.embeddings, self.outliers, strict=True))

    def add(self, epoch: int, embedding: np.ndarray, outliers: np.ndarray) -> None:
        """Keep ``embedding`` (taken over, not copied, when it is already a float32 host array) and its
        outlier mask as the frame of ``epoch``."""
        if self.epochs and epoch <= self.epochs[-1]:
            return  # the same epoch shown again (e.g. a repeated pause): nothing new to keep
        self.epochs.append(int(epoch))
        self.embeddings.append(np.array(to_host(embedding), dtype=np.float32, copy=None))  # copy only if needed
        self.outliers.append(np.array(to_host(outliers), dtype=bool))
        while len(self.epochs) > 2 and self.nbytes > self.budget_bytes:
            keep = list(range(0, len(self.epochs) - 1, 2)) + [len(self.epochs) - 1]
            self.epochs = [self.epochs[i] for i in keep]
            self.embeddings = [self.embeddings[i] for i in keep]
            self.outliers = [self.outliers[i] for i in keep]

    def clear(self) -> None:
        self.epochs, self.embeddings, self.outliers = [], [], []


class LayoutRun:
    """One optimizer and what a panel shows about it: outliers at each shown epoch, frames, timings."""

    def __init__(
        self,
        graph: FuzzyGraph,
        optimizer: LayoutOptimizer,
        labels: np.ndarray | None = None,
        outlier_method: str = "neighbors",
        record: bool = True,
    ) -> None:
        if outlier_method not in OUTLIER_METHODS:
            raise ValueError(f"outlier_method={outlier_method!r} is not one of {OUTLIER_METHODS}.")
        self.graph = graph
        self.optimizer = optimizer
        self.labels = labels
        self.n_labels = int(labels.max()) + 1 if labels is not None and labels.size else None
        # Colour by class, or by density only: on the CPU, classes cost most of a frame's rendering
        # (one grid of counts per class).
        self.colour_by_class = True
        self.outlier_method = outlier_method
        self.log = FrameLog() if record else None
        self.history_epochs: list[int] = []  # every epoch run (never thinned: two ints each)
        self.history_counts: list[int] = []
        self.ms_per_epoch = float("nan")
        self.off_view: tuple[int, ...] = (0, 0, 0, 0)  # points outside the last image's view: left, right, bottom, top
        self.mask: Any = None
        self._fingerprint: tuple[int, str] | None = None  # (epoch, fingerprint) of the last measured state
        self._neighbors: Any = graph
        if optimizer.device == "gpu":  # the outlier measure's neighbour table, moved to the GPU once
            from .._backend import cupy  # noqa: PLC0415

            self._neighbors = cupy().asarray(graph.knn_indices)
        self.measure()

    @property
    def epoch(self) -> int:
        return self.optimizer.epoch

    @property
    def done(self) -> bool:
        return self.optimizer.done

    @property
    def n_outliers(self) -> int:
        return self.history_counts[-1]

    def advance(self, n: int, count_each_epoch: bool = True) -> int:
        """Run up to ``n`` epochs and measure the result; returns how many ran.

        With ``count_each_epoch`` every epoch's outliers are counted into the history (the Explorer's chart
        then has one sample per epoch, so a peak between two frames stays on it); the last epoch's mask is kept
        and recorded with its embedding either way. ``ms_per_epoch`` is the layout's time alone."""
        before = self.optimizer.epoch
        layout_s = 0.0
        steps = [1] * n if count_each_epoch else [n]
        for i, epochs in enumerate(steps):
            start = time.perf_counter()
            self.optimizer.step(epochs)
            layout_s += time.perf_counter() - start
            if self.optimizer.done or i == len(steps) - 1:
                break
            self._count_outliers()
        ran = self.optimizer.epoch - before
        if ran:
            self.ms_per_epoch = layout_s * 1000.0 / ran
            self.measure()
        return ran

    def _count_outliers(self) -> None:
        """Count the current embedding's outliers into the history (no mask kept, nothing recorded)."""
        mask = metrics.outliers(self.optimizer.device_embedding, self._neighbors, method=self.outlier_method)
        self.history_epochs.append(int(self.optimizer.epoch))
        self.history_counts.append(int(mask.sum()))

    def measure(self) -> None:
        """Outliers of the current embedding; appended to the history and the recording."""
        embedding = self.optimizer.device_embedding
        mask = metrics.outliers(embedding, self._neighbors, method=self.outlier_method)
        self.mask = mask
        epoch = self.optimizer.epoch
        self._fingerprint = None
        if self.history_epochs and self.history_epochs[-1] == epoch:
            self.history_counts[-1] = int(mask.sum())
        else:
            self.history_epochs.append(epoch)
            self.history_counts.append(int(mask.sum()))
        if self.log is not None:  # a copy: on the CPU the optimizer's embedding is updated in place
            self.log.add(epoch, np.array(to_host(embedding), dtype=np.float32), mask)

    def outlier_masks(self) -> dict[str, Any]:
        """Every outlier method's mask of the current embedding: the shown method's as measured, the others
        computed now (for inspecting a point)."""
        embedding = self.optimizer.device_embedding
        masks = {self.outlier_method: self.mask}
        for method in OUTLIER_METHODS:
            if method not in masks:
                masks[method] = metrics.outliers(embedding, self._neighbors, method=method)
        return masks

    def reset(self) -> None:
        self.optimizer.reset()
        self.history_epochs.clear()
        self.history_counts.clear()
        if self.log is not None:
            self.log.clear()
        self.ms_per_epoch = float("nan")
        self.measure()

    def fingerprint(self) -> str:
        """Fingerprint of the current embedding (``umapviz.metrics.fingerprint``)."""
        if self._fingerprint is None or self._fingerprint[0] != self.optimizer.epoch:
            self._fingerprint = (self.optimizer.epoch, metrics.fingerprint(self.optimizer.device_embedding))
        return self._fingerprint[1]

    def image(self, width: int, height: int, view: Any = "robust") -> np.ndarray:
        """The current embedding as an (height, width, 4) RGBA image, outliers ringed (see ``_draw``)."""
        return self._draw(self.optimizer.device_embedding, self.mask, width, height, view)

    def recorded_image(self, index: int, width: int, height: int, view: Any = "robust") -> tuple[int, np.ndarray]:
        """(epoch, image) of the ``index``-th recorded frame."""
        log = self.log
        return log.epochs[index], self._draw(log.embeddings[index], log.outliers[index], width, height, view)

    def _draw(self, embedding: Any, mask: Any, width: int, height: int, view: Any) -> np.ndarray:
        """Render with the border triangles but no text on the image: a panel lays the counts out beside it
        (``off_view``: the points outside the view per side, left, right, bottom, top, of the last image)."""
        labels, n_labels = self._colours()
        rgba, agg = render.render(embedding, labels, mask, width, height, view, n_labels=n_labels, style=PANEL_STYLE)
        self.off_view = tuple(int(v) for v in to_host(agg.edge_counts).sum(axis=1))
        return rgba

    def _colours(self) -> tuple[np.ndarray | None, int | None]:
        return (self.labels, self.n_labels) if self.colour_by_class else (None, None)

    def recording(self, metadata: dict | None = None):
        """The recorded frames as a ``umapviz.render.Recording`` (for export)."""
        if self.log is None or not len(self.log):
            raise ValueError("nothing was recorded yet: play a few epochs first.")
        rec = render.Recording(labels=self.labels, metadata=metadata or {})
        for epoch, embedding, mask in zip(self.log.epochs, self.log.embeddings, self.log.outliers, strict=True):
            rec.add(epoch, embedding, outliers=mask)
        return rec
