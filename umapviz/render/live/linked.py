"""Linked live views (the comparison grid): a zoom, pan or reset in one moves all; a selection in one
selects the same point indices in all.

Each view keeps its own bokeh plot (they may sit in different ipywidgets), so the link runs in the kernel:
a subscriber on one view's HoloViews streams applies the change to the others. A view that is told the
range it already shows does nothing, so the views never echo a change back and forth.
"""

from __future__ import annotations

from collections.abc import Sequence

from umapviz.render.live.view import LiveView


class LinkedViews:
    """Link the ranges and the selections of several LiveViews.

    Parameters
    ----------
    views : sequence of LiveView
        The views to link, e.g. the panels of a grid showing layouts of the same points.
    ranges : bool
        Link zoom, pan and reset.
    selection : bool
        Link box and lasso selections (and ``select()`` through this object).
    """

    def __init__(self, views: Sequence[LiveView], *, ranges: bool = True, selection: bool = True) -> None:
        self.views = list(views)
        if len(self.views) < 1:
            raise ValueError("LinkedViews needs at least one view, e.g. LinkedViews([left, right]).")
        for view in self.views:
            if ranges:
                # After the view's own subscriber (precedence 0) told a zoom from an echo of its frame.
                view.range_stream.add_subscriber(lambda source=view, **_: self._follow_range(source), precedence=0.5)
                view.reset_stream.add_subscriber(
                    lambda source=view, resetting=False: resetting and self.reset_view(), precedence=0.5
                )
            if selection:
                for stream in (view.box_stream, view.lasso_stream):
                    stream.add_subscriber(lambda source=view, **_: self._follow_selection(source), precedence=0.5)

    def zoom(self, x_range: tuple[float, float], y_range: tuple[float, float]) -> None:
        """Show the data range ``x_range`` x ``y_range`` in every view."""
        for view in self.views:
            view.zoom(x_range, y_range)

    def reset_view(self) -> None:
        """Re-frame every view to its data."""
        for view in self.views:
            view.reset_view()

    def select(self, indices) -> None:
        """Draw ``indices`` selected in every view (empty clears the selection)."""
        for view in self.views:
            view.select(indices)

    @property
    def selection(self):
        """The indices selected in the views (the same in all)."""
        return self.views[0].selection

    def _follow_range(self, source: LiveView) -> None:
        zoomed = source.zoomed_view
        if zoomed is not None:
            for view in self.views:
                if view is not source:
                    view.zoom(zoomed.x_range, zoomed.y_range)

    def _follow_selection(self, source: LiveView) -> None:
        for view in self.views:
            if view is not source:
                view.select(source.selection)
