"""The Explorer controller's playing jobs: advance the run, measure it, draw it, publish what it is at. Part of
ExplorerController (controller.py), kept apart for size: it runs on the worker thread and uses the controller's
``params``, ``status``, ``frames``, ``worker`` and run fields.
"""

from __future__ import annotations

import time
from typing import Any

from ...optimize.optimizer import sequential_gpu_advice
from ..session import LayoutRun


class PlayJobs:
    """Worker jobs that play, step, reset and draw the run (a mixin)."""

    def _start_playing(self, epochs: int | None, token: int) -> None:
        run = self.run
        if run is None or token != self._play_requests:
            return  # no layout (bad data: the error stays shown), or paused before this play began
        with self._lock:
            self._target_span = epochs
            self._target_epoch = None if epochs is None else run.epoch + epochs
            self._fps_stamps.clear()
        if run.done:
            self._note_finished(run)
        else:
            self.worker.play()
        self.running = self.worker.playing

    def _play_frame(self) -> bool:
        """One frame while playing: advance, measure, show. False stops playing."""
        run = self.run
        with self._lock:
            target = (
                None if run is None else (run.optimizer.n_epochs if self._target_epoch is None else self._target_epoch)
            )
        n = 0 if run is None or run.done else min(self.params.epochs_per_frame, target - run.epoch)
        if n <= 0:
            self.running = False
            return False
        run.advance(n)
        with self._lock:
            self._fps_stamps.append(time.perf_counter())
        keep_going = not run.done and run.epoch < target
        self._show_current(extras=not keep_going or self.frames.extras_due())
        if not keep_going:
            self.running = False
        return keep_going

    def _advance_and_show(self, n: int) -> None:
        if self.run is None:
            return
        if self.run.done:
            self._note_finished(self.run)
            return
        self.run.advance(n)
        self._show_current()

    def _note_finished(self, run: LayoutRun) -> None:
        self.status.note = f"the layout has finished (epoch {run.epoch}); press Reset to run it again"

    def _reset_run(self) -> None:
        if self.run is None:
            return
        self.run.reset()
        with self._lock:
            self._fps_stamps.clear()
        self._show_current()

    def _show_recorded(self, index: int) -> None:
        run, p = self.run, self.params
        if run is None:
            return
        run.colour_by_class = p.colour_by_class
        shown = self.frames.render_recorded(run, index, p.size, p.lock_view, self.view_range)
        if shown is not None:
            self.status.note = (
                f"showing recorded epoch {shown[0]} ({shown[1]:,} outliers); "
                "press play to continue from the latest epoch"
            )

    def _show_current(self, extras: bool = True) -> None:
        """Draw the run's current embedding, publish what it is at, and with ``extras`` the chart and scrubber."""
        run, p = self.run, self.params
        run.colour_by_class = p.colour_by_class
        fingerprint = run.fingerprint()
        self._publish(run, fingerprint)
        self.frames.render_current(run, p.size, p.lock_view, self.view_range)
        self.status.note = ""
        if extras:
            self._follow_history()
            if self.inspected is not None:  # its flags and distance move with the layout
                self.point = self.point_info(self.inspected)

    def _publish(self, run: LayoutRun, fingerprint: str) -> None:
        opt = run.optimizer
        with self.hold_trait_notifications():
            self.epoch, self.n_epochs, self.n_chunks_used = int(opt.epoch), int(opt.n_epochs), int(opt.n_chunks)
            self.seed = None if opt.seed is None else int(opt.seed)
            self.outliers, self.fingerprint = int(run.n_outliers), fingerprint
            self.ms_per_epoch = run.ms_per_epoch
            self.advice = sequential_gpu_advice(opt.strategy, opt.device, run.graph.nnz) or ""

    def _follow_history(self) -> None:
        if self.run is not None:
            with self.quietly():
                self.frames.follow_history(self.run)

    def _export_job(self, name: Any) -> None:
        self.status.note = f"exporting {name}..."  # a long run's frames take a while to draw
        try:
            path = self.export(name)
        except BaseException:
            self.status.note = ""  # neither "exporting" for ever nor the last export's "saved ..."
            raise
        self.status.note = f"saved {path}"

    def _report(self, exc: BaseException) -> None:
        """The worker's error report: shown in ``status`` (a failed build's error sticks)."""
        sticky, self._setup_failing = self._setup_failing, False
        self.running = False
        self.status.show_error(exc, sticky=sticky)

    def _metadata(self, run: LayoutRun) -> dict:
        opt = run.optimizer
        return {
            "dataset": self.source.name,
            "strategy": opt.strategy,
            "n_chunks": int(opt.n_chunks),
            "seed": int(opt.seed),
            "n_epochs": int(opt.n_epochs),
            "outlier_method": run.outlier_method,
        }
