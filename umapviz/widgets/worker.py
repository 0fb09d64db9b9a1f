"""One background thread per panel: it runs queued jobs in order and, between jobs, plays frames.

Why a thread: the optimizer and the renderer would otherwise hold the kernel, and a notebook could not
pause, step or change a parameter while a layout runs. Widget callbacks (on the kernel's main thread)
only queue work or flip the playing flag; everything that touches the optimizer runs here, one thing at a
time, so the layout state needs no finer locking. A pause or a parameter change takes effect after the
frame being computed, i.e. within one frame.

The thread holds its panel only weakly (the panel's methods as weakref.WeakMethod), and strongly only for
the duration of one frame or one error report; a queued job (a closure over the panel) holds it until it has
run. So a panel that nothing else refers to is collected, and its thread ends then.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


class Worker:
    """A daemon thread that runs ``submit``-ted jobs first and otherwise calls ``frame()`` while playing.

    ``frame()`` returns True to keep playing; False (or an exception) stops. ``on_error(exc)`` hears every
    exception from a job or a frame (the job's Future gets it as well). Both are methods of the panel that
    owns the worker, held weakly: once the panel is collected the worker closes itself, and its thread calls
    ``on_owner_gone()`` (which must not refer to the panel) before it ends.
    """

    def __init__(
        self,
        frame: Callable[[], bool],
        on_error: Callable[[BaseException], None],
        name: str,
        on_owner_gone: Callable[[], Any] | None = None,
    ) -> None:
        owner = getattr(frame, "__self__", None)
        if owner is None or getattr(on_error, "__self__", None) is not owner:
            raise TypeError("frame and on_error must be methods of the panel that owns the worker.")
        self._frame = weakref.WeakMethod(frame, self._owner_collected)
        self._on_error = weakref.WeakMethod(on_error)
        self._on_owner_gone = on_owner_gone
        self._owner_gone = False
        self._cond = threading.Condition()
        self._jobs: deque[tuple[Callable[[], Any], Future, str | None]] = deque()
        self._playing = False
        self._busy = False  # a job or a frame is running right now
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    # -- control (any thread) ----------------------------------------------------------------------------
    def submit(self, job: Callable[[], Any], key: str | None = None) -> Future:
        """Queue ``job``; with a ``key``, a job of the same key still waiting is dropped (its Future gets
        this job's result), so a slider dragged across many values runs the last value once."""
        future: Future = Future()
        with self._cond:
            if self._closed:
                raise RuntimeError("this panel was closed; create a new one.")
            if key is not None:
                for i, (_, old_future, old_key) in enumerate(self._jobs):
                    if old_key == key:
                        del self._jobs[i]
                        _chain(future, old_future)
                        break
            self._jobs.append((job, future, key))
            self._cond.notify_all()
        return future

    def play(self) -> None:
        with self._cond:
            self._playing = True
            self._cond.notify_all()

    def pause(self) -> None:
        with self._cond:
            self._playing = False
            self._cond.notify_all()

    @property
    def playing(self) -> bool:
        return self._playing

    def stopping(self) -> bool:
        """True once the worker is closed or its panel gone: a long job may ask it and stop early (it reads one
        flag and takes no lock, so it is safe to call from anywhere, often)."""
        return self._closed

    @property
    def thread(self) -> threading.Thread:
        """The worker's thread (it ends once the worker is closed or its owner collected)."""
        return self._thread

    @property
    def in_worker(self) -> bool:
        """True when called from the worker thread itself."""
        return threading.current_thread() is self._thread

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no job is queued or running and nothing plays; False on timeout."""
        if self.in_worker:
            raise RuntimeError("wait_idle() called from the worker thread would wait for itself.")
        with self._cond:
            return self._cond.wait_for(lambda: not (self._jobs or self._busy or self._playing), timeout)

    def wait_frame_done(self, timeout: float | None = None) -> bool:
        """Block until the frame or job now running (if any) has finished."""
        if self.in_worker:
            return True
        with self._cond:
            return self._cond.wait_for(lambda: not self._busy, timeout)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._playing = False
            for _, future, _ in self._jobs:
                future.cancel()
            self._jobs.clear()
            self._cond.notify_all()

    def _owner_collected(self, _ref: weakref.ref) -> None:
        """The panel was collected: stop. This runs wherever its last reference went, maybe inside a garbage
        collection that interrupted this worker's own code, so it only flips flags; the thread does the rest."""
        self._owner_gone = True
        with self._cond:
            self._closed = True
            self._playing = False
            self._cond.notify_all()

    # -- the thread --------------------------------------------------------------------------------------
    def _run(self) -> None:
        self._loop()
        self.close()  # cancels what is still queued (jobs that outlived the panel cannot need it)
        if self._owner_gone and self._on_owner_gone is not None:
            try:
                self._on_owner_gone()
            except Exception:  # tidying up after a panel nobody holds: nobody to tell either
                pass

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._closed or self._jobs or self._playing)
                if self._closed:
                    return
                job = self._jobs.popleft() if self._jobs else None
                self._busy = True
            try:
                if job is not None:
                    self._run_job(*job)
                elif not self._play_frame():
                    self.pause()
            except BaseException as exc:  # a frame failed: stop playing, tell the panel, keep the thread alive
                self.pause()
                self._report(exc)
            finally:
                job = None  # the job's closure holds the panel: not while waiting for the next one
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _play_frame(self) -> bool:
        """One frame, the panel held for this call only; False (stop) when the panel is gone."""
        frame = self._frame()
        return False if frame is None else frame()

    def _run_job(self, job: Callable[[], Any], future: Future, _key: str | None) -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            result = job()
        except BaseException as exc:
            self.pause()
            future.set_exception(exc)
            self._report(exc)
        else:
            future.set_result(result)

    def _report(self, exc: BaseException) -> None:
        on_error = self._on_error()
        if on_error is None or self._closed:  # the panel is gone or closed (its job stopped for it): not shown
            return
        try:
            on_error(exc)
        except Exception:  # the error display itself failed: nothing better to do than carry on
            pass


def _chain(source: Future, target: Future) -> None:
    """When ``source`` settles, settle ``target`` the same way."""

    def copy(done: Future) -> None:
        if target.done():
            return
        if done.cancelled():
            target.cancel()
        elif done.exception() is not None:
            target.set_exception(done.exception())
        else:
            target.set_result(done.result())

    if target.set_running_or_notify_cancel():
        source.add_done_callback(copy)
