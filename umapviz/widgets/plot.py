"""The interactive plot as an ipywidget: a LiveView placed inside ipywidgets layouts in JupyterLab.

Panel's ``pn.ipywidget`` wraps the HoloViews plot in a jupyter_bokeh ``BokehModel``: the bokeh document
lives in the kernel, the browser's zoom, pan, hover, click and selection events come back over the widget's
comm and fire the LiveView's HoloViews streams, and new frames go out the same way.
"""

from __future__ import annotations

from typing import Any

import ipywidgets
import panel as pn

from umapviz.render.live import LiveView


class Plot(LiveView):
    """A LiveView that can sit inside an ipywidgets layout (``plot.widget``) or be displayed on its own.

    Takes LiveView's arguments. ``push``, ``zoom``, ``view_range``, ``reset_view``, ``frame``, ``select``,
    ``set_marks`` and the ``on_tap`` / ``on_select`` / ``on_hover`` callbacks work the same, shown or not.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._widget = None

    @property
    def widget(self):
        """The ipywidget (a jupyter_bokeh BokehModel) showing this plot; made on first use."""
        if self._widget is None:
            _load_bokehjs()
            self._widget = pn.ipywidget(pn.pane.HoloViews(self.dmap, backend="bokeh"))
        return self._widget

    def close(self) -> None:
        """Close the ipywidget, if one was made (its comm and the bokeh document it holds)."""
        if self._widget is not None:
            # The comm only: jupyter_bokeh's own close() also unhooks the document, which fails (KeyError) when
            # done twice, and ipywidgets calls it again when the widget is collected.
            ipywidgets.Widget.close(self._widget)
            self._widget = None

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self.widget._repr_mimebundle_(include=include, exclude=exclude)


_bokehjs_loaded = False


def _load_bokehjs() -> None:
    """Put BokehJS and Panel's JavaScript into the page once per kernel: jupyter_bokeh's widget draws with
    the page's BokehJS and brings none. Inline, so that it works offline (the CDN is unreachable in CI)."""
    global _bokehjs_loaded
    if not _bokehjs_loaded:
        pn.extension(inline=True)
        _bokehjs_loaded = True
