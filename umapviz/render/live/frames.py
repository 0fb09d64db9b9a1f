"""What a LiveView holds to draw (the pushed points, or a frame drawn elsewhere) and the frame it drew last.

A frame is drawn once per key (the push, the image size, the view, the marks' change count) and kept: the plot's
streams, ``frame()``, hover and the caption all read the same drawn frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from umapviz.render.frame import render
from umapviz.render.live.marks import LiveMarks
from umapviz.render.live.view_range import ViewRange
from umapviz.render.marks import draw_marks
from umapviz.render.shade import Style
from umapviz.render.view import View


@dataclass(frozen=True)
class Pushed:
    """The data of a push: the points and what colours them, and the push's caption.

    Parameters
    ----------
    embedding : (N, 2) array
        The positions (NumPy or CuPy), read when drawn.
    labels, outliers, n_labels
        Class codes, outlier mask or indices, and the number of classes, as checked by ``push``.
    caption : str
        Shown in the title.
    label_names : tuple of str or None
        Names of the label codes, shown on hover.
    serial : int
        The number of the push: tells two pushes of the same array apart.
    """

    embedding: Any
    labels: Any
    outliers: Any
    n_labels: int | None
    caption: str
    label_names: tuple[str, ...] | None
    serial: int

    @classmethod
    def after(
        cls,
        previous: Pushed | None,
        embedding: Any,
        labels: Any,
        outliers: Any,
        n_labels: int | None,
        caption: str,
        label_names: Any,
    ) -> Pushed:
        """The push that follows ``previous`` (None: the first), numbered one past it.

        Parameters
        ----------
        previous : Pushed or None
            The push shown until now.
        embedding, labels, outliers, n_labels, caption
            As the fields.
        label_names : sequence of str, optional
            Names of the label codes (any values, turned into strings).
        """
        serial = previous.serial + 1 if previous is not None else 1
        names = tuple(str(v) for v in label_names) if label_names is not None else None
        return cls(embedding, labels, outliers, n_labels, caption, names, serial)


@dataclass(frozen=True)
class GivenFrame:
    """A frame drawn elsewhere (``LiveView.push_frame``).

    Parameters
    ----------
    rgba : (H, W, 4) uint8 array
        The image, row 0 at the top.
    view : View
        The data range it shows.
    serial : int
        The number of its push.
    """

    rgba: np.ndarray
    view: View
    serial: int


class FrameCache:
    """The frame drawn last, as ``(key, marked RGBA, View, Aggregate or None)``; ``shown`` is None before any."""

    def __init__(self) -> None:
        self.shown: tuple[tuple, np.ndarray, View, Any] | None = None

    def render(
        self,
        data: Pushed | None,
        given: GivenFrame | None,
        marks: LiveMarks,
        view_range: ViewRange,
        style: Style,
        width: int,
        height: int,
    ) -> tuple[tuple, np.ndarray, View, Any]:
        """The frame for the current state, drawn only when its key changed (the Aggregate is None for a frame
        drawn elsewhere, and before any push, when the frame is blank).

        Parameters
        ----------
        data : Pushed or None
            The latest push (None: nothing pushed yet).
        given : GivenFrame or None
            The frame drawn elsewhere, or None when this view draws the points.
        marks : LiveMarks
            The marks to draw over the frame.
        view_range : ViewRange
            Picks the range drawn (a frame drawn elsewhere keeps its own).
        style : Style
            Colours and shading.
        width, height : int
            The image's size in pixels.
        """
        if data is None:
            blank = np.zeros((height, width, 4), dtype=np.uint8)
            return (None,), blank, View((-1.0, 1.0), (-1.0, 1.0)), None
        if given is not None:
            key = (data.serial, marks.serial)
            if self.shown is None or self.shown[0] != key:
                rgba = draw_marks(given.rgba, given.view, data.embedding, marks.marks, style.background)
                view_range.drawn(given.view)
                self.shown = (key, rgba, given.view, None)
            return self.shown
        view = view_range.target(data.embedding, width, height)
        key = (data.serial, width, height, view, marks.serial)
        if self.shown is not None and self.shown[0] == key:
            return self.shown
        rgba, agg = render(
            data.embedding, data.labels, data.outliers, width, height, view, n_labels=data.n_labels, style=style
        )
        rgba = draw_marks(rgba, agg.view, data.embedding, marks.marks, style.background)
        view_range.drawn(agg.view)
        self.shown = (key, rgba, agg.view, agg)
        return self.shown
