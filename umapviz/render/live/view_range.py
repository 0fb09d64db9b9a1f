"""The range a LiveView shows: framed to the data, kept across pushes ("lock view"), or chosen by a zoom.

The plot reports its range back after every frame it draws, so a reported range that matches one of the last few
views drawn is the plot echoing a frame (a frame can be overtaken by the next push before the browser reports it),
not the user zooming; ``ViewRange`` remembers those views to tell the two apart. The memory starts afresh at each
decision about the range (a zoom taken, a reset from Python): a user who zooms, resets and zooms again the same
way (the same wheel step at the same place) reports a view drawn before, and it is a zoom, not an echo.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from umapviz.render.view import View, ViewSpec, as_view, resolve_view

# Views drawn that a reported range is compared with. A busy kernel pushes frames faster than the browser
# reports their ranges back, so an echo may arrive dozens of frames late; one taken for a zoom would freeze the
# view at an old frame's range. A user's zoom practically never equals a drawn view to ECHO_TOLERANCE.
ECHO_MEMORY = 256
ECHO_TOLERANCE = 1e-6  # relative to the view's span


class ViewRange:
    """Which data range a live view draws: the user's zoom, else the kept first frame, else a framing of the data.

    Parameters
    ----------
    mode : "robust", "auto" or (xmin, xmax, ymin, ymax)
        How a frame is framed before the user zooms (see ``umapviz.render.resolve_view``); a fixed view is
        checked here.
    follow : bool
        True: each frame is framed to its data until the user zooms. False ("lock view"): the first frame's
        range is kept until ``reset()``.
    """

    def __init__(self, mode: ViewSpec = "robust", follow: bool = True) -> None:
        self.mode = mode if isinstance(mode, str) else as_view(mode)  # a bad fixed view fails here
        self.follow = follow
        self.zoomed: View | None = None  # set by a zoom (the user's or zoom()) until reset()
        self.locked: View | None = None  # follow=False: the frame kept across pushes
        self._drawn: deque[View] = deque(maxlen=ECHO_MEMORY)

    def target(self, embedding: Any, width: int, height: int) -> View:
        """The View to draw ``embedding`` at in a ``width`` x ``height`` image (kept when locking the view)."""
        if self.zoomed is not None:
            return self.zoomed
        if not self.follow and self.locked is not None:
            return self.locked
        view = resolve_view(embedding, self.mode, width, height)
        if not self.follow:
            self.locked = view
        return view

    def zoom(self, view: View) -> bool:
        """Keep ``view`` as the user's range; False when it is already the one kept (nothing to redraw)."""
        if view == self.zoomed:  # linked views zooming each other stop here
            return False
        self.zoomed = view
        return True

    def reset(self) -> None:
        """Forget the zoom and the kept frame: the next frame is framed to its data."""
        self.zoomed = self.locked = None

    def forget_drawn(self) -> None:
        """Forget the views drawn so far: the range was decided anew (a zoom taken, a reset from Python), so a
        later report of one of them is the user zooming there again. (A reset by the plot's own reset tool
        keeps them: its report of the range it reset from follows it.)"""
        self._drawn.clear()

    def drawn(self, view: View) -> None:
        """Remember a view a frame was drawn at, to recognise the plot reporting it back."""
        self._drawn.append(view)

    def reported(self, x_range: Any, y_range: Any) -> View | None:
        """The View of a range the plot reported, or None when it is incomplete, degenerate, or the echo of a
        frame drawn (then it is no zoom of the user's)."""
        if x_range is None or y_range is None or None in (*x_range, *y_range):
            return None
        try:
            view = View(tuple(map(float, x_range)), tuple(map(float, y_range)))
        except ValueError:  # a degenerate range from the plot: nothing to draw at
            return None
        if any(_same_view(view, seen) for seen in self._drawn):
            return None
        return view


def _same_view(a: View, b: View) -> bool:
    tol_x = ECHO_TOLERANCE * (b.x_range[1] - b.x_range[0])
    tol_y = ECHO_TOLERANCE * (b.y_range[1] - b.y_range[0])
    return (
        abs(a.x_range[0] - b.x_range[0]) <= tol_x
        and abs(a.x_range[1] - b.x_range[1]) <= tol_x
        and abs(a.y_range[0] - b.y_range[0]) <= tol_y
        and abs(a.y_range[1] - b.y_range[1]) <= tol_y
    )
