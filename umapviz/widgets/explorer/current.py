"""What the Explorer controller's parts share, each behind its own methods: the layout on screen with the play
under way (``Current``, which also answers ``state``: an ``ExplorerState``), and the flag that keeps a thread's
own trait changes from asking for work (``Quiet``).

Both are owned by ExplorerController (controller.py) and handed to its parts (setup_jobs.Setup,
play_jobs.Player) in their constructors.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..session import LayoutRun
from ..status import Status
from ..worker import Worker
from .params import ExplorerParams


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


class Current:
    """The layout on screen (``source``, ``graph``, ``run``) and the play under way, under one lock.

    The worker thread alone replaces the layout (``adopt``) and advances it; any thread may read it. The play's
    bookkeeping: a request counter (``play()`` and ``pause()`` count up; a queued play runs only if still the
    latest), the epoch a ``play(epochs)`` stops at (kept across a restart: the new layout plays as many), and the
    times of the last frames (for ``fps``).
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()  # guards everything here, read by state/frame from any thread
        self.source: Any = None
        self.graph: Any = None
        self.run: LayoutRun | None = None
        self._target_epoch: int | None = None
        self._target_span: int | None = None  # play(epochs): how many, so a restart plays as many again
        self._play_requests = 0
        self._fps_stamps: deque[float] = deque(maxlen=12)

    def adopt(self, source: Any, graph: Any, run: LayoutRun) -> None:
        """Put a new layout on screen; a ``play(epochs)`` under way plays as many epochs on it."""
        with self.lock:
            self.source, self.graph, self.run = source, graph, run
            self._fps_stamps.clear()
            if self._target_span is not None:
                self._target_epoch = run.epoch + self._target_span

    def new_play_request(self) -> int:
        """Count a play or pause request; returns its number (a queued play runs only while it is the latest)."""
        with self.lock:
            self._play_requests += 1
            return self._play_requests

    def is_latest(self, request: int) -> bool:
        return request == self._play_requests

    def aim(self, run: LayoutRun, epochs: int | None) -> None:
        """A play starts: ``epochs`` more on ``run`` (None: to its end)."""
        with self.lock:
            self._target_span = epochs
            self._target_epoch = None if epochs is None else run.epoch + epochs
            self._fps_stamps.clear()

    def target(self, run: LayoutRun | None) -> int | None:
        """The epoch the play under way stops at (None without a layout)."""
        with self.lock:
            if run is None:
                return None
            return run.optimizer.n_epochs if self._target_epoch is None else self._target_epoch

    def stamp_frame(self) -> None:
        with self.lock:
            self._fps_stamps.append(time.perf_counter())

    def clear_frames(self) -> None:
        with self.lock:
            self._fps_stamps.clear()

    def state(self, params: ExplorerParams, status: Status, fingerprint: str, worker: Worker) -> ExplorerState:
        """What the panel shows now: the layout on screen, ``params`` where there is none yet, the ``status``,
        the layout's ``fingerprint`` (the controller's) and whether ``worker`` plays."""
        p = params
        with self.lock:
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
                fingerprint=fingerprint if run is not None else "",
                running=worker.playing,
                ms_per_epoch=run.ms_per_epoch if run is not None else float("nan"),
                fps=self.fps(),
                busy=status.busy,
                error=status.error,
            )

    def metadata(self, run: LayoutRun) -> dict[str, Any]:
        """What a recording of ``run`` (the layout on screen) says it is."""
        opt = run.optimizer
        return {
            "dataset": self.source.name,
            "strategy": opt.strategy,
            "n_chunks": int(opt.n_chunks),
            "seed": int(opt.seed),
            "n_epochs": int(opt.n_epochs),
            "outlier_method": run.outlier_method,
        }

    def fps(self) -> float:
        """Frames per second over the last dozen frames (NaN when unknown)."""
        with self.lock:
            stamps = list(self._fps_stamps)
        if len(stamps) < 2 or stamps[-1] <= stamps[0]:
            return float("nan")
        return (len(stamps) - 1) / (stamps[-1] - stamps[0])


class Quiet:
    """Trait changes a thread makes inside ``hold()`` ask for no restart or redraw (``on`` tells, per thread)."""

    def __init__(self) -> None:
        self._local = threading.local()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        self._local.depth = getattr(self._local, "depth", 0) + 1
        try:
            yield
        finally:
            self._local.depth -= 1

    @property
    def on(self) -> bool:
        return getattr(self._local, "depth", 0) > 0
