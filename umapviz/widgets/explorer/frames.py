"""The Explorer's picture, without a widget: the frame it shows, recorded frames to look back at, exports.

``Frames`` renders a LayoutRun's current or recorded embedding at the panel's size (with the project's
renderer), keeps the last image for ``frame()``, and announces each new one by raising ``frame_id``; the
chart and the scrubber follow ``history_id`` (while playing they follow at EXTRAS_INTERVAL_S only: each update
is one more image or message for the kernel, the server and the browser to pass along).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from traitlets import HasTraits, Int

from ... import render
from ..session import LayoutRun

EXPORT_SUFFIXES = (".png", ".gif", ".html", ".mp4", ".npz")
DEFAULT_EXPORT_NAME = "umapviz-run.gif"  # in the folder asked for, or the current directory
EXTRAS_INTERVAL_S = 0.5  # while playing, the chart and the scrubber update at most this often


class Frames(HasTraits):
    """The image a panel shows and the recorded frames behind its scrubber.

    Parameters
    ----------
    **kwargs
        Initial trait values, as for any ``traitlets.HasTraits``.
    """

    frame_id = Int(0, help="raised by one for each new image (``image``)")
    history_id = Int(0, help="raised by one when the chart and the scrubber should follow the run")
    recorded_count = Int(0, help="frames recorded so far")
    recorded_index = Int(0, help="the recorded frame the scrubber points at")
    recorded_shown = Int(-1, help="the recorded frame on screen, -1 when the current layout is")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._lock = threading.Lock()
        self._rgba: np.ndarray | None = None
        self.fixed_view: Any = None  # the view range kept while the view is locked
        self._extras_shown_at = 0.0

    @property
    def image(self) -> np.ndarray | None:
        """The last image shown, (size, size, 4) uint8 RGBA, or None before the first (not a copy)."""
        with self._lock:
            return self._rgba

    def show(self, rgba: np.ndarray, recorded: int = -1) -> None:
        """Adopt ``rgba`` as the image on screen (``recorded``: its index in the recording, -1: current)."""
        with self._lock:
            self._rgba = rgba
        self.recorded_shown = recorded
        self.frame_id += 1

    def view_spec(self, run: LayoutRun, size: int, lock_view: bool, view_range: Any = None) -> Any:
        """What ``render.image`` is given as the view: the zoomed ``view_range`` ((x0, x1), (y0, y1)) when set,
        else a robust range of this frame, or the locked one."""
        if view_range is not None:
            return (*view_range[0], *view_range[1])
        if not lock_view:
            return "robust"
        if self.fixed_view is None:
            self.fixed_view = render.resolve_view(run.optimizer.device_embedding, "robust", size, size)
        return self.fixed_view

    def render_current(self, run: LayoutRun, size: int, lock_view: bool, view_range: Any = None) -> None:
        """Draw the run's current embedding and show it (``view_range``: see ``view_spec``)."""
        self.show(run.image(size, size, self.view_spec(run, size, lock_view, view_range)))

    def render_recorded(
        self, run: LayoutRun, index: int, size: int, lock_view: bool, view_range: Any = None
    ) -> tuple[int, int] | None:
        """Draw and show the ``index``-th recorded frame; (epoch, outliers) of it, None when there is none."""
        if run.log is None or not 0 <= index < len(run.log):
            return None
        epoch, rgba = run.recorded_image(index, size, size, self.view_spec(run, size, lock_view, view_range))
        self.show(rgba, recorded=index)
        return epoch, int(run.log.outliers[index].sum())

    def extras_due(self) -> bool:
        return time.perf_counter() - self._extras_shown_at >= EXTRAS_INTERVAL_S

    def follow_history(self, run: LayoutRun) -> None:
        """Point the scrubber at the latest recorded frame and have the chart redrawn."""
        self._extras_shown_at = time.perf_counter()
        count = len(run.log) if run.log is not None else 0
        with self.hold_trait_notifications():
            self.recorded_count = count
            self.recorded_index = max(0, count - 1)
        self.history_id += 1


def export_path(path: str | Path | None = None) -> Path:
    """The absolute file an export writes: ``path`` as given (relative to the current directory), a folder's
    ``DEFAULT_EXPORT_NAME``, or that name in the current directory when ``path`` is None or empty.

    Parameters
    ----------
    path : str, Path or None
        A file name or path (its suffix picks the format), or an existing folder.
    """
    path = Path(str(path).strip() or ".") if path is not None else Path(".")
    path = path.expanduser()
    if path.is_dir():
        path = path / DEFAULT_EXPORT_NAME
    return path.absolute()


def export_noted(status: Any, save: Any, path: Path) -> None:
    """``save(path)``, saying so in ``status.note``: "exporting PATH..." while it runs (a long run's frames take a
    while to draw), "saved PATH" after, nothing after an error (which propagates).

    Parameters
    ----------
    status : Status
        The panel's status.
    save : callable
        Writes the file (a controller's ``export``); returns the path written.
    path : Path
        Where to save.
    """
    status.note = f"exporting {path}..."
    try:
        written = save(path)
    except BaseException:
        status.note = ""  # neither "exporting" for ever nor the last export's "saved ..."
        raise
    status.note = f"saved {written}"


def export(path: str | Path | None, frame: Any, recording: Any, size: int, fps: float = 5) -> Path:
    """Save by suffix: .png (``frame()``, the image shown), .gif / .html / .mp4 (``recording()``, one view over
    all frames), .npz (the recording itself, for ``Recording.load``). ``frame`` and ``recording`` are called
    only for the suffix that needs them. Returns the absolute path written.

    Parameters
    ----------
    path : str, Path or None
        Where to save (see ``export_path``: a file, a folder, or None for the current directory); a file's
        suffix picks the format. Missing folders are made.
    frame, recording : callable
        Return the image shown and the recording.
    size : int
        Width and height of animation frames, in pixels.
    fps : float
        Frames per second of an animation.
    """
    path = export_path(path)
    suffix = path.suffix.lower()
    if suffix not in EXPORT_SUFFIXES:
        raise ValueError(f"cannot export to {path.name!r}: use a name ending in {', '.join(EXPORT_SUFFIXES)}.")
    if suffix == ".png":
        return Path(render.save_png(frame(), path)).absolute()
    rec = recording()
    if suffix == ".npz":
        return Path(rec.save(path)).absolute()
    save = {".gif": render.save_gif, ".html": render.save_html, ".mp4": render.save_mp4}[suffix]
    return Path(save(rec, path, fps=fps, width=size, height=size)).absolute()
