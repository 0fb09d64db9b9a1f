"""The Explorer controller's playing jobs: advance the run, measure it, draw it, and hand what it is at to the
controller (``Player``). They run on the worker thread; the controller queues them (controller.py).
"""

from __future__ import annotations

from typing import Any, Protocol

from ...optimize.optimizer import sequential_gpu_advice
from ..session import LayoutRun
from ..status import Status
from ..worker import Worker
from .current import Current, Quiet
from .frames import Frames
from .params import ExplorerParams


class PlayerHost(Protocol):
    """What a Player uses of the controller that owns it (held as a weak proxy: no reference cycle)."""

    view_range: Any  # the zoomed range ((x0, x1), (y0, y1)) the frames are drawn at; None: the whole layout

    def _publish(self, readouts: dict[str, Any]) -> None:
        """Set the controller's readout traits (epoch, fingerprint, ...) at once."""

    def _follow_inspected(self) -> None:
        """Bring the inspected point's readout up to the layout just drawn."""


class Player:
    """Plays, steps, resets and draws the layout on screen (``current``) into ``frames``.

    Parameters
    ----------
    current : Current
        The layout on screen and the play under way.
    params : ExplorerParams
        The panel's settings (epochs per frame, size, colouring, view lock).
    status : Status
        Where notes go.
    frames : Frames
        The image on screen and the scrubber's frames.
    worker : Worker
        The panel's worker (play starts it playing).
    quiet : Quiet
        Held while the scrubber follows the run, so that following asks for no redraw.
    host : PlayerHost
        The controller, as a weak proxy.
    """

    def __init__(
        self,
        current: Current,
        params: ExplorerParams,
        status: Status,
        frames: Frames,
        worker: Worker,
        quiet: Quiet,
        host: PlayerHost,
    ) -> None:
        self._current, self._params, self._status, self._frames = current, params, status, frames
        self._worker, self._quiet, self._host = worker, quiet, host

    def start_playing(self, epochs: int | None, request: int) -> bool:
        """Play ``epochs`` more (None: to the end) if play request ``request`` is still the latest; False when
        it does not start (no layout: the error stays shown; or paused before this play began)."""
        run = self._current.run
        if run is None or not self._current.is_latest(request):
            return False
        self._current.aim(run, epochs)
        if run.done:
            self._note_finished(run)
        else:
            self._worker.play()
        return True

    def play_frame(self) -> bool:
        """One frame while playing: advance, measure, show. False stops playing."""
        run = self._current.run
        target = self._current.target(run)
        n = 0 if run is None or run.done else min(self._params.epochs_per_frame, target - run.epoch)
        if n <= 0:
            return False
        run.advance(n)
        self._current.stamp_frame()
        keep_going = not run.done and run.epoch < target
        self.show_current(extras=not keep_going or self._frames.extras_due())
        return keep_going

    def advance_and_show(self, n: int) -> None:
        run = self._current.run
        if run is None:
            return
        if run.done:
            self._note_finished(run)
            return
        run.advance(n)
        self.show_current()

    def _note_finished(self, run: LayoutRun) -> None:
        self._status.note = f"the layout has finished (epoch {run.epoch}); press Reset to run it again"

    def reset_run(self) -> None:
        run = self._current.run
        if run is None:
            return
        run.reset()
        self._current.clear_frames()
        self.show_current()

    def show_recorded(self, index: int) -> None:
        run, p = self._current.run, self._params
        if run is None:
            return
        run.colour_by_class = p.colour_by_class
        shown = self._frames.render_recorded(run, index, p.size, p.lock_view, self._host.view_range)
        if shown is not None:
            self._status.note = (
                f"showing recorded epoch {shown[0]} ({shown[1]:,} outliers); "
                "press play to continue from the latest epoch"
            )

    def show_current(self, extras: bool = True) -> None:
        """Draw the run's current embedding, publish what it is at, and with ``extras`` the chart and scrubber."""
        run, p = self._current.run, self._params
        run.colour_by_class = p.colour_by_class
        fingerprint = run.fingerprint()
        self._host._publish(readouts(run, fingerprint))
        self._frames.render_current(run, p.size, p.lock_view, self._host.view_range)
        self._status.note = ""
        if extras:
            self.follow_history()
            self._host._follow_inspected()  # its flags and distance move with the layout

    def follow_history(self) -> None:
        run = self._current.run
        if run is not None:
            with self._quiet.hold():
                self._frames.follow_history(run)


def readouts(run: LayoutRun, fingerprint: str) -> dict[str, Any]:
    """The controller's readout traits for ``run`` as it stands (``fingerprint``: its layout's)."""
    opt = run.optimizer
    return {
        "epoch": int(opt.epoch),
        "n_epochs": int(opt.n_epochs),
        "n_chunks_used": int(opt.n_chunks),
        "seed": None if opt.seed is None else int(opt.seed),
        "outliers": int(run.n_outliers),
        "fingerprint": fingerprint,
        "ms_per_epoch": run.ms_per_epoch,
        "advice": sequential_gpu_advice(opt.strategy, opt.device, run.graph.nnz) or "",
    }
