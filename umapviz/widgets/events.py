"""Browser events (a click, a selection, a zoom) turned into a panel's actions, outside the event's handling."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any


def after_event(action: Callable[[], Any], on_error: Callable[[Exception], Any]) -> None:
    """Run a view's ``action`` for a browser event (a click, a selection, a zoom) once the event is applied.

    The event is applied on the kernel's main thread holding the plot's lock (``PlotModel``), and an action may
    wait for the panel's worker (a click inspects the layout between two frames) while the worker waits for
    that lock to draw a frame: on the kernel's event loop the action therefore runs next, after the event.
    Without a running loop (a script, a test) it runs now. An error it raises goes to ``on_error``.

    Parameters
    ----------
    action : callable
        What the event asks for, without arguments.
    on_error : callable
        Takes the exception ``action`` raised (the panel shows it: a callback's own error would go unseen).
    """

    def run() -> None:
        try:
            action()
        except Exception as exc:
            on_error(exc)

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is not None and threading.current_thread() is threading.main_thread():
        loop.call_soon(run)
    else:
        run()
