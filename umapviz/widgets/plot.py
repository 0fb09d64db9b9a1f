"""The interactive plot as an ipywidget: a LiveView placed inside ipywidgets layouts in JupyterLab.

The HoloViews plot goes into a bokeh document through Panel (``pn.panel(...).get_root``, as ``pn.ipywidget``
does) and is shown by a jupyter_bokeh ``BokehModel``: the document lives in the kernel, the browser's zoom,
pan, hover, click and selection events come back over the widget's comm and fire the LiveView's HoloViews
streams, and new frames go out the same way.
"""

from __future__ import annotations

from typing import Any

import panel as pn
from bokeh.document import Document
from bokeh.models import UIElement
from jupyter_bokeh.widgets import BokehModel
from panel.io.notebook import patch_inline_stylesheets
from panel.io.resources import set_resource_mode

from umapviz.render.live.view import LiveView


class PlotModel(BokehModel):
    """jupyter_bokeh's widget, brought up to date when first shown and closed at most once.

    Its views are built from ``render_bundle``, the document as it was when the widget was made, and later
    changes reach only the views that exist: a plot shown after frames were pushed (a grid run before being
    displayed) would show its first state. The frontend counts views (``_view_count``); when the first one
    appears, the bundle is made again from the document as it is now (as ``pn.ipywidget`` does). Its own
    ``close()`` unhooks the document each time and fails (KeyError) the second time, which ipywidgets makes
    when it collects a closed widget.

    The browser's events are applied to the document holding ``lock``, the lock its plot draws under (see
    ``Plot._redraw``): the document is not thread-safe.

    Parameters
    ----------
    model : bokeh LayoutDOM
        The root of the document to show.
    lock : threading.RLock
        Held while the document is read or changed here.
    **kwargs
        As for ``jupyter_bokeh.BokehModel``.
    """

    def __init__(self, model: Any, lock: Any, **kwargs: Any) -> None:
        self._document_lock = lock
        super().__init__(model, **kwargs)
        self._view_count = 0  # a number: the frontend's views count themselves (None: they do not)
        self.observe(self._views_changed, names="_view_count")

    @property
    def needs_view(self) -> bool:
        """Whether this open widget has no view in the page (its views count none): not yet shown, or its view
        failed (see ``lifetime.reshow_unseen``)."""
        return self._view_count == 0 and not getattr(self, "_umapviz_closed", False) and self.comm is not None

    def _views_changed(self, change: dict) -> None:
        if change["old"] == 0 and change["new"]:
            with self._document_lock:
                self.render_bundle = self._model_to_traits(self._model)

    def _sync_model(self, model: Any, content: dict, buffers: list) -> None:
        with self._document_lock:
            super()._sync_model(model, content, buffers)

    def close(self) -> None:
        """Close the comm and unhook the document, once."""
        if not getattr(self, "_umapviz_closed", False):
            self._umapviz_closed = True
            super().close()


class Plot(LiveView):
    """A LiveView that can sit inside an ipywidgets layout (``plot.widget``) or be displayed on its own.

    Takes LiveView's arguments. ``push``, ``push_frame``, ``zoom``, ``view_range``, ``reset_view``, ``frame``,
    ``select``, ``set_marks`` and the ``on_tap`` / ``on_select`` / ``on_hover`` / ``on_range`` callbacks work
    the same, shown or not.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._widget: PlotModel | None = None

    def _redraw(self) -> None:
        """Draw under the plot's lock. The bokeh document is not thread-safe: a worker thread draws new frames
        into it while the kernel's main thread applies the browser's events (zoom, hover, the ranges of each new
        frame) to it, and ``PlotModel`` takes the same lock for those."""
        with self._lock:
            super()._redraw()

    @property
    def widget(self) -> PlotModel:
        """The ipywidget (a jupyter_bokeh BokehModel) showing this plot; made on first use."""
        if self._widget is None:
            _load_bokehjs()
            # A responsive plot's pane stretches to the widget's width and the plot scales to it (Panel cannot
            # tell from the overlay that its image is responsive).
            sizing = {"sizing_mode": "stretch_width"} if self.responsive else {}
            with self._lock:  # a worker's frame must not draw into the plot while its document is made
                root = _offline_root(pn.pane.HoloViews(self.dmap, backend="bokeh", **sizing))
            layout = {"layout": {"width": "100%"}} if self.responsive else {}
            self._widget = PlotModel(root, self._lock, combine_events=True, **layout)
            self._widget.add_class("umapviz-plot")
        return self._widget

    def close(self) -> None:
        """Close the ipywidget, if one was made (its comm and the bokeh document it holds)."""
        if self._widget is not None:
            self._widget.close()
            self._widget = None

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self.widget._repr_mimebundle_(include=include, exclude=exclude)


def _offline_root(pane: Any) -> Any:
    """The pane's bokeh root in a new document, with no stylesheet to fetch from the internet.

    Panel's models name their CSS (``loading.css``, themes) as ``ImportedStyleSheet`` URLs on cdn.holoviz.org;
    Panel's own notebook display swaps those for the files' text when ``inline`` (``patch_inline_stylesheets``),
    but a root made with ``get_root`` for an ipywidget keeps the URLs, and an offline page (or a stored
    notebook opened offline) would ask the CDN for them."""
    with set_resource_mode("inline"):
        root = pane.get_root(doc=Document())
    for model in root.select({"type": UIElement}):
        patch_inline_stylesheets(model)
    return root


_bokehjs_loaded = False


def _load_bokehjs() -> None:
    """Put BokehJS and Panel's JavaScript into the page once per kernel: jupyter_bokeh's widget draws with
    the page's BokehJS and brings none. Inline, so that it works offline (the CDN is unreachable in CI)."""
    global _bokehjs_loaded
    if not _bokehjs_loaded:
        pn.extension(inline=True)
        _bokehjs_loaded = True
