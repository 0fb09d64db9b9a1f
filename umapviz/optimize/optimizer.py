"""LayoutOptimizer: UMAP's layout SGD as a steppable object, one epoch at a time, under a chosen strategy."""

from __future__ import annotations

import math
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from .._backend import resolve_device, to_host
from .._validation import RandomStateLike, check_int, check_positive_float
from ..graph._types import FuzzyGraph
from ..graph.matrix import as_fuzzy_graph
from ..graph.start import random_init, spectral_init
from .chunks import check_n_chunks, resolve_n_chunks
from .engine_cpu import CpuEngine
from .params import EngineParams
from .rng import edge_order, resolve_seed

STRATEGIES = ("sequential", "hogwild", "buffered", "chunked", "vertex")
REPRODUCIBLE = frozenset({"sequential", "buffered", "chunked", "vertex"})
# Strategies whose edges read the live embedding: no sum of moves shares a stale row by construction, so they are
# the references other strategies' layouts are compared with.
LIVE_STRATEGIES = ("sequential", "hogwild")
# The spectral inits by name and the method of graph.init.spectral_init each asks for: "spectral" solves on the
# whole graph up to init.SAMPLED_ABOVE vertices and on the landmarks' coarse graph above.
SPECTRAL_INITS = {"spectral": "auto", "spectral_full": "full", "spectral_sampled": "sampled"}
INITS = (*SPECTRAL_INITS, "random")
# The GPU's sequential strategy is one thread, for checks against the CPU, and several times slower than the
# CPU's own sequential run (bench/RESULTS.md). Beyond this many edges a run takes long enough to deserve a word.
SEQUENTIAL_GPU_EDGES = 100_000


def sequential_gpu_advice(strategy: str, device: str, nnz: int) -> str | None:
    """Why a sequential run on the GPU is slow and what to use instead, or None where it is not (another strategy
    or device, or a small graph)."""
    if strategy != "sequential" or device != "gpu" or nnz <= SEQUENTIAL_GPU_EDGES:
        return None
    return (
        f"strategy='sequential' on the GPU runs the {nnz:,} edges of this graph one after another on one GPU "
        "thread, for checks against the CPU: about 1 s an epoch at 50,000 points on an H200, ~7x slower than "
        "the CPU. Use device='cpu' for a sequential layout, or strategy='hogwild' for a near-sequential one "
        "on the GPU."
    )


def learning_rate_at(epoch: int, n_epochs: int, learning_rate: float = 1.0) -> float:
    """UMAP's learning rate in `epoch`: linear decay from `learning_rate`, rounded to float32 as the engines use it."""
    return float(np.float32(learning_rate * (1.0 - epoch / n_epochs)))


@dataclass(frozen=True)
class EpochRecord:
    """What one epoch did: `epoch` counts the epochs done after it (1 .. n_epochs)."""

    epoch: int
    alpha: float
    active_edges: int
    seconds: float


MAX_NEGATIVE_SAMPLE_RATE = 1000
# The deterministic strategies' fixed-point sums (engine_cpu._FIX = 2**32 units in int64) hold a row's moves in one
# chunk up to 2**31; beyond, they would wrap or saturate, so a learning rate that could get there is refused.
FIXED_POINT_LIMIT = 2.0**31
# An init array's largest magnitude: float32's spacing there is 1/16, so typical moves (0.01-1) are mostly lost
# above; at 1e8 every move is (its spacing, 8, exceeds the clipped step of 4), and from ~1e18 squared distances
# overflow float32.
MAX_INIT = 1e6


def check_layout_params(
    strategy: str = "chunked",
    n_chunks: int | str = "auto",
    init: str | np.ndarray = "spectral",
    learning_rate: float = 1.0,
    negative_sample_rate: int = 5,
    repulsion_strength: float = 1.0,
    n_components: int = 2,
) -> dict:
    """Check the LayoutOptimizer parameters that need no graph, so a caller (umapviz.UMAP) can refuse a bad one
    before the slow graph stage; returns the numeric ones converted (learning_rate, negative_sample_rate,
    repulsion_strength, n_components). The graph-dependent checks (n_chunks <= nnz, init array shape) stay in
    LayoutOptimizer."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy={strategy!r} is not known; choose one of {STRATEGIES}.")
    check_n_chunks(n_chunks)
    if isinstance(init, str) and init not in INITS:
        raise ValueError(
            f"init={init!r} is not known; use one of {INITS} or an array of shape (n_samples, n_components)."
        )
    return {
        "learning_rate": check_positive_float("learning_rate", learning_rate, "1.0 is the usual value"),
        "negative_sample_rate": _check_negative_sample_rate(negative_sample_rate),
        "repulsion_strength": check_positive_float(
            "repulsion_strength", repulsion_strength, "1.0 is the usual value", allow_zero=True
        ),
        "n_components": check_int("n_components", n_components, 1),
    }


class LayoutOptimizer:
    """UMAP's layout optimizer over a FuzzyGraph, stepped epoch by epoch.

    Parameters follow umap-learn where they share a name; the exact semantics of every strategy are in
    docs/optimizer.md.

    Parameters
    ----------
    graph : FuzzyGraph
        The graph to lay out, from :func:`umapviz.build_graph`.
    strategy : str
        How edges read and write the embedding: ``"sequential"`` (the reference), ``"hogwild"`` (racy),
        ``"buffered"`` (every move of an epoch from the epoch's start), ``"chunked"`` (``n_chunks`` such steps an
        epoch) or ``"vertex"`` (each vertex moves only its own row). All but hogwild are bitwise reproducible.
    n_chunks : int or str
        Chunks per epoch for ``"chunked"``: an int in [1, nnz], or a rule, ``"auto"`` (the default, see
        :mod:`umapviz.optimize.chunks`), ``"shipped"`` or ``"degree"``. Checked for every strategy; buffered
        uses 1.
    random_state : int, None, numpy.random.RandomState or numpy.random.Generator
        The seed of the run: an int in [0, 2**32), None (a fresh one), or a generator from which one is drawn.
        ``seed`` holds the int used (``reset`` keeps it).
    init : str or array-like
        ``"spectral"`` (default: the eigen-solve on the whole graph up to 2,000,000 vertices, on a coarse graph of
        landmarks above, see :func:`umapviz.graph.spectral_init`), ``"spectral_full"`` or ``"spectral_sampled"``
        (either solve at any size), ``"random"``, or an array of shape (n_vertices, n_components).
    n_epochs : int, optional
        Epochs of the run; None takes the graph's (the count its pruning assumed).
    learning_rate : float
        The first epoch's learning rate; it decays linearly to 0.
    negative_sample_rate : int
        Negative samples per active edge and epoch, in [0, 1000].
    repulsion_strength : float
        UMAP's gamma: the weight of the negative samples' repulsion.
    device : str
        ``"cpu"`` (default), ``"gpu"`` or ``"auto"``.
    n_components : int
        Dimensions of the layout (1 to 8 on the GPU).
    private_head : bool
        True (default): an edge's negative samples move the head as its attraction left it. False: they are
        computed from the head before its attraction, as the GPU implementation did before its fix; kept to
        show the difference, not for use.

    Attributes
    ----------
    engine_params : EngineParams
        The run as both engines take it, built once here.
    """

    def __init__(
        self,
        graph: FuzzyGraph,
        strategy: str = "chunked",
        n_chunks: int | str = "auto",
        random_state: RandomStateLike = None,
        init: str | np.ndarray = "spectral",
        n_epochs: int | None = None,
        learning_rate: float = 1.0,
        negative_sample_rate: int = 5,
        repulsion_strength: float = 1.0,
        device: str = "cpu",
        n_components: int = 2,
        private_head: bool = True,
    ) -> None:
        graph = as_fuzzy_graph(graph)  # a fitted UMAP's graph_ (the matrix) still works, with a FutureWarning
        if not isinstance(graph, FuzzyGraph):
            raise TypeError(f"graph must be a FuzzyGraph (from umapviz.build_graph), got {type(graph).__name__}.")
        checked = check_layout_params(
            strategy=strategy,
            n_chunks=n_chunks,
            init=init,
            learning_rate=learning_rate,
            negative_sample_rate=negative_sample_rate,
            repulsion_strength=repulsion_strength,
            n_components=n_components,
        )
        if graph.nnz == 0:
            raise ValueError("The graph has no edges, so there is nothing to optimize; check the input data.")
        self.graph = graph
        self.strategy = strategy
        resolved = resolve_n_chunks(n_chunks, graph)  # checked for every strategy: a bad value is never ignored
        self.n_chunks = 1 if strategy == "buffered" else resolved
        self.n_chunks_param = n_chunks
        self.n_epochs = check_int("n_epochs", graph.n_epochs if n_epochs is None else n_epochs, 1)
        self.learning_rate = checked["learning_rate"]
        self.negative_sample_rate = checked["negative_sample_rate"]
        self.repulsion_strength = checked["repulsion_strength"]
        self.n_components = checked["n_components"]
        if strategy in ("buffered", "chunked"):
            _check_fixed_point_range(graph, self.learning_rate, self.negative_sample_rate)
        self.device = resolve_device(device)
        advice = sequential_gpu_advice(strategy, self.device, graph.nnz)
        if advice is not None:
            warnings.warn(advice, UserWarning, stacklevel=2)
        self.private_head = bool(private_head)
        self.seed = resolve_seed(random_state)
        self.random_state = random_state
        self.init = init
        # NumPy's shuffle releases the GIL: the edge order (a second at 26M edges) is drawn beside the init.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="umapviz-edge-order") as pool:
            order = pool.submit(edge_order, self.seed, graph.nnz)
            self._init = self._initial_embedding(init)
            order = order.result()
        self.engine_params = EngineParams(
            strategy=strategy,
            n_chunks=self.n_chunks,
            seed=self.seed,
            a=graph.a,
            b=graph.b,
            gamma=self.repulsion_strength,
            negative_sample_rate=self.negative_sample_rate,
            private_head=self.private_head,
        )
        self._engine = _engine_class(self.device)(graph, order, self.engine_params)
        self.reset()

    # -- state -----------------------------------------------------------------------------------------------
    @property
    def reproducible(self) -> bool:
        """Whether this strategy promises the same bytes for the same graph, seed and parameters."""
        return self.strategy in REPRODUCIBLE

    @property
    def epoch(self) -> int:
        """Number of epochs done so far."""
        return self._epoch

    @property
    def done(self) -> bool:
        return self._epoch >= self.n_epochs

    @property
    def embedding(self) -> np.ndarray:
        """A NumPy copy of the current embedding (n_vertices, n_components)."""
        return np.array(to_host(self._engine.embedding()), copy=True)

    @property
    def device_embedding(self):
        """The live embedding on its own device (NumPy or CuPy), not a copy: read it, don't write it."""
        return self._engine.embedding()

    def reset(self) -> None:
        """Back to the initial embedding and epoch 0."""
        self._engine.reset(self._init)
        self._epoch = 0

    # -- stepping ----------------------------------------------------------------------------------------------
    def alpha(self, epoch: int | None = None) -> float:
        """Learning rate of the given (default: next) epoch."""
        return learning_rate_at(self._epoch if epoch is None else epoch, self.n_epochs, self.learning_rate)

    def step(self, n: int = 1) -> EpochRecord | None:
        """Run up to n more epochs (never past n_epochs); returns the last epoch's record, None if done."""
        record = None
        for _ in range(check_int("n", n, 0)):
            if self.done:
                break
            t = self._epoch
            start = time.perf_counter()
            with _interrupt_after():  # the engine's moves and the epoch count change together, or not at all
                active = self._engine.run_epoch(t, self.alpha(t))
                self._epoch = t + 1
            self._check_finite()
            record = EpochRecord(self._epoch, self.alpha(t), active, time.perf_counter() - start)
        return record

    def epochs(self) -> Iterator[EpochRecord]:
        """Generator over the remaining epochs, yielding one record after each."""
        while not self.done:
            yield self.step()

    def run(
        self,
        callback: Callable[[LayoutOptimizer, EpochRecord], bool | None] | None = None,
        every: int = 1,
        progress: bool = False,
    ) -> LayoutOptimizer:
        """Run the remaining epochs. ``callback(self, record)`` is called every ``every`` epochs and after
        the last; returning True stops the run early (it can be resumed with the same result)."""
        every = check_int("every", every, 1)
        bar = None
        if progress:
            from tqdm.auto import tqdm  # noqa: PLC0415 - only for interactive runs

            bar = tqdm(total=self.n_epochs, initial=self._epoch, desc=f"layout ({self.strategy})", unit="epoch")
        try:
            for record in self.epochs():
                if bar is not None:
                    bar.update(1)
                if callback is not None and (record.epoch % every == 0 or self.done):
                    if callback(self, record):
                        break
        finally:
            if bar is not None:
                bar.close()
        return self

    def __repr__(self) -> str:
        chunks = f", n_chunks={self.n_chunks}" if self.strategy == "chunked" else ""
        return (
            f"LayoutOptimizer(strategy={self.strategy!r}{chunks}, seed={self.seed}, "
            f"epoch={self._epoch}/{self.n_epochs}, device={self.device!r})"
        )

    # -- helpers -----------------------------------------------------------------------------------------------
    def _check_finite(self) -> None:
        """FloatingPointError once the layout has overflowed float32: every later epoch and frame would be NaN, a
        blank picture with no reason given. Usual parameters never get here; a learning rate of 1e20 does."""
        if self._engine.finite():  # the GPU engine read it back with the epoch's active count
            return
        raise FloatingPointError(
            f"The layout overflowed float32 at epoch {self._epoch}: some coordinates are no longer finite numbers "
            f"(learning_rate={self.learning_rate:g}, repulsion_strength={self.repulsion_strength:g}). Lower them "
            "(1.0 is the usual value of both) and start again with a new optimizer."
        )

    def _initial_embedding(self, init: str | np.ndarray) -> np.ndarray:
        n, dim = self.graph.n_vertices, self.n_components
        if isinstance(init, str):
            if init in SPECTRAL_INITS:
                return spectral_init(self.graph, dim, self.seed, device=self.device, method=SPECTRAL_INITS[init])
            return random_init(n, dim, self.seed)  # the only other name check_layout_params lets through
        try:
            arr = np.asarray(to_host(init), dtype=np.float32)
        except (TypeError, ValueError) as exc:  # text, ragged lists: NumPy's message named neither init nor the fix
            raise ValueError(
                f"init array could not be read as numbers ({exc}); pass 'spectral', 'random' or an array of "
                f"coordinates of shape ({n}, {dim})."
            ) from exc
        if arr.shape != (n, dim):
            raise ValueError(f"init array has shape {arr.shape}, but the graph needs ({n}, {dim}).")
        if not np.isfinite(arr).all():
            raise ValueError("init array contains NaN or inf; pass finite coordinates.")
        peak = float(np.abs(arr).max()) if arr.size else 0.0
        if peak > MAX_INIT:
            raise ValueError(
                f"init array reaches {peak:.3g}: beyond {MAX_INIT:g}, float32 rounding swallows the layout's moves "
                "(at most 4 x learning_rate a step), so nothing would move, and far beyond it squared distances "
                "overflow. Scale it down, e.g. init * (10 / np.abs(init).max()): spectral and random inits span "
                "about +-10."
            )
        return arr


@contextmanager
def _interrupt_after() -> Iterator[None]:
    """Hold a Ctrl-C (SIGINT) back until the block is done, then raise KeyboardInterrupt.

    A Ctrl-C arrives while a compiled kernel runs, and Python raises it at the next bytecode: after the epoch
    had moved the points (or after the schedule had advanced, before the kernel ran) but before the epoch was
    counted, so the optimizer showed epoch k's number with epoch k+1's layout. Only from the main thread and
    with Python's own handler in place: anything else is left as it is."""
    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def _engine_class(device: str):
    if device == "gpu":
        from .engine_gpu import GpuEngine  # noqa: PLC0415 - the GPU path, loaded on its first use

        return GpuEngine
    return CpuEngine


def _check_fixed_point_range(graph: FuzzyGraph, learning_rate: float, negative_sample_rate: int) -> None:
    """ValueError when one chunk's moves of the busiest vertex could exceed the fixed-point sums' range. Each
    coordinate of a move is clipped to 4 * learning_rate; an edge moves its head once for its attraction and once
    per negative sample (fewer than 2 * negative_sample_rate + 2 of them: eps >= 1), and its tail once; the graph
    is symmetric, so a vertex is the head of max_degree edges and the tail of as many, at most."""
    per_rate = 4.0 * graph.max_degree * (2 * negative_sample_rate + 3)
    if learning_rate * per_rate < FIXED_POINT_LIMIT:
        return
    most = FIXED_POINT_LIMIT / per_rate
    step = 10.0 ** (math.floor(math.log10(most)) - 2)
    most = math.floor(most / step) * step  # 3 digits, rounded down: a rate below the number shown is accepted
    raise ValueError(
        f"learning_rate={learning_rate:g} is too large for this graph's buffered and chunked strategies: its "
        f"busiest vertex ({graph.max_degree:,} edges) could move by more in one chunk than their fixed-point sums "
        f"hold (2**31). Use learning_rate < {most:.3g} (1.0 is the usual value), or another strategy."
    )


def _check_negative_sample_rate(value) -> int:
    """negative_sample_rate as an int in [0, MAX_NEGATIVE_SAMPLE_RATE]: each active edge draws about that many
    negative samples an epoch, so the work grows with it (1e9 would run for days, one epoch looking hung)."""
    rate = check_int("negative_sample_rate", value, 0)
    if rate > MAX_NEGATIVE_SAMPLE_RATE:
        raise ValueError(
            f"negative_sample_rate={rate} is out of range: it must be at most {MAX_NEGATIVE_SAMPLE_RATE}. Each "
            "active edge draws about that many negative samples an epoch, so the work grows in proportion; "
            "5 is the usual value."
        )
    return rate
