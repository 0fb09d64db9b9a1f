"""The marks over a LiveView's frame (a selection, an inspected point and its neighbours, a trail), as they change.

``Marks`` (``marks.py``) is one set of marks and how it is drawn; ``LiveMarks`` keeps the set shown, checks
each change against the points pushed, and counts the changes, so a frame drawn with older marks is redrawn.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from umapviz.render.marks import Marks, check_indices, check_trail


class LiveMarks:
    """The marks a live view draws now, a count of their changes, and the selection they hold.

    ``selection`` is the last selection set (kept when a change leaves the selection alone).
    """

    def __init__(self) -> None:
        self.marks = Marks()
        self.serial = 0  # counts changes of the marks: part of the key of the frame drawn
        self.selection = np.empty(0, dtype=np.int64)

    def checked(self, n: int, highlight: Any = None, trail: Any = None, selection: Any = None) -> Marks:
        """The marks shown, changed as asked, for a frame of ``n`` points (ValueError for a bad mark).

        Parameters
        ----------
        n : int
            The points of the frame the marks go on.
        highlight, trail, selection
            As ``Marks`` takes them: None keeps the one shown, an empty array clears it. A kept highlight or
            selection that does not fit ``n`` points is dropped.
        """
        changes = {}
        if highlight is not None:
            changes["highlight"] = check_indices(highlight, n, "highlight")
        if trail is not None:
            changes["trail"] = check_trail(trail)
        if selection is not None:
            changes["selection"] = check_indices(selection, n, "selection")
        marks = replace(self.marks, **changes)
        for name in ("highlight", "selection"):  # marks kept from an earlier push must still fit this one
            values = getattr(marks, name)
            if values is not None and values.size and values.max() >= n:
                marks = replace(marks, **{name: None})
        return marks

    def show(self, marks: Marks) -> None:
        """Make ``marks`` (from ``checked``) the ones drawn, counting the change.

        Parameters
        ----------
        marks : Marks
            The marks to draw from now on.
        """
        self.marks = marks
        self.serial += 1
        if marks.selection is not None:
            self.selection = marks.selection
