"""What a panel says besides its picture: the error shown, what the worker is busy with, a passing note.

One holder for both panels (the Explorer and the comparison grid), so that they share one rule for errors:
- an error is shown until a change mends it. An error of a (re)build is *sticky*: it stays until a build
  succeeds, since the panel's settings still ask for what failed. Any other error (a frame that failed to
  draw, a failed export) passes: the next user action clears it;
- a blocking call raises ExplorerError for an error shown *during* it (counted by ``errors``), or when there is
  no layout to act on; an old error on screen never makes a later, working call raise.

Every field is an observable trait: a view follows it with ``observe`` or ``traitlets.dlink``.
"""

from __future__ import annotations

import threading

from traitlets import Bool, HasTraits, Int, TraitError, Unicode

SETUP_STAGES = 4  # progress steps of a (re)build: data, graph, initial layout, first frame


class ParameterError(TraitError, ValueError):
    """A value the panel refuses at once; the parameter keeps its old value (and so do the others set with it)."""


class ExplorerError(RuntimeError):
    """A blocking call of a panel (play/step/reset/set with block=True, run) ended with an error shown in it."""


class Status(HasTraits):
    """Error, busy state and note of a panel, observable.

    Parameters
    ----------
    **kwargs
        Initial trait values (``error``, ``busy``, ...), as for any ``traitlets.HasTraits``.
    """

    error = Unicode("", help="the message shown, '' when none")
    sticky = Bool(False, help="the error is a failed (re)build's: it stays until a build succeeds")
    errors = Int(0, help="errors shown so far: a blocking call raises only for one shown during it")
    busy = Unicode("", help="what the worker does besides playing ('building graph...'), '' when nothing")
    progress = Int(0, help="the (re)build's stage, 0..stages; -1 when not building")
    stages = Int(SETUP_STAGES, help="how many stages a (re)build has")
    note = Unicode("", help="a passing remark: 'the layout has finished', 'showing recorded epoch 3', ...")

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.lock = threading.RLock()

    def show_error(self, exc: BaseException, sticky: bool = False) -> None:
        """Show ``exc`` as a one-line message (see ``describe``); ``sticky`` for a failed (re)build."""
        with self.lock:
            self.errors += 1
            self.sticky = bool(sticky) or (self.sticky and bool(self.error))
            self.error = describe(exc)

    def clear_error(self) -> None:
        """Take the error down (a build succeeded, or a new action began after a passing error)."""
        with self.lock:
            self.sticky = False
            self.error = ""

    def begin(self) -> int:
        """A user action starts: a passing error goes, a sticky one stays. Returns the error count to give
        ``check`` once the action's work is done."""
        with self.lock:
            if self.error and not self.sticky:
                self.clear_error()
            return self.errors

    def check(self, since: int, has_layout: bool) -> None:
        """Raise ExplorerError for an error shown since ``since`` (``begin``'s count), or for the error that
        left the panel without a layout to act on."""
        with self.lock:
            error, errors = self.error, self.errors
        if error and (errors != since or not has_layout):
            raise ExplorerError(error)

    def set_busy(self, text: str, stage: int | None) -> None:
        """Say what the worker does (stage of ``stages``); ``stage=None`` when it is done."""
        with self.hold_trait_notifications():
            self.busy = text if stage is not None else ""
            self.progress = -1 if stage is None else int(stage)


def describe(exc: BaseException) -> str:
    """A one-line message for a panel, with a hint for the failures a user can act on.

    Parameters
    ----------
    exc : BaseException
        The error to describe.
    """
    name = type(exc).__name__
    text = str(exc) or name
    if isinstance(exc, MemoryError) or "OutOfMemory" in name:
        return (
            f"out of memory ({name}: {text}). Try fewer points (n_samples=...), device='cpu', or a smaller n_neighbors."
        )
    return f"{name}: {text}"
