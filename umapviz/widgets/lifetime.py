"""How long a panel lives: as long as it is on screen, or something outside it refers to it (a notebook
variable, ``Out``).

ipywidgets keeps every widget in a module-level registry until the widget is closed, so a callback that
holds the panel (a bound method, a lambda over ``self``) would keep the panel, its worker thread, its
optimizer and its frames alive for the kernel's life, even after the user dropped it. The panels therefore
give their widgets callbacks that hold them weakly (``weak_callback``), bind controls to their controller with
links that hold the controller weakly (binding.py), the controller's worker holds the controller weakly
(worker.py), and when a panel is closed or its controller collected all its widgets are closed
(``close_widgets``), which takes them out of the registry.

A panel on screen lives even if nothing else refers to it (``display(Explorer(X))``, a panel shown by a
helper function), as every widget does: ``_ON_SCREEN`` holds it. The panel joins it when displayed
(``shown``, from its ``_repr_mimebundle_``), at once, since the frontend reports its view only later, and
leaves it when close()d (``hidden``) or when the frontend reports that its last view is gone: the panel's
top widget counts its views (ipywidgets' ``_view_count``, which a view raises when displayed and lowers when
removed, e.g. with its cell's output cleared or replaced), and ``track_views`` follows that count.
Where nothing counts views (headless kernels such as nbval's, a terminal IPython), a displayed panel stays
until close(). So does one whose page went without removing its views: in JupyterLab 4 with ipywidgets 8, a
notebook closed, a page reloaded or closed lowers no count (the kernel hears nothing), so its panels stay
until close() or the kernel's end, as any ipywidget stays in ipywidgets' registry.
"""

from __future__ import annotations

import base64
import functools
import threading
import weakref
from collections.abc import Callable
from typing import Any

from .still import still_png

_ON_SCREEN: set[Any] = set()  # panels displayed and not known to be off screen since: held for as long
# A plot's view can fail to appear: jupyter_bokeh's view needs BokehJS, which the plot puts into the page in an
# output of the same cell, and when the kernel is quick the page may build the panel's views before it has run
# that output. Such a view shows an error and counts nothing; putting the plot back into its box makes the page
# build it again, by then with BokehJS. Looked for this long after the panel's first view, again after each
# repair (BokehJS, evaluated inline, can take seconds on a slow machine).
RESHOW_DELAYS_S = (0.5, 1.0, 2.0, 4.0, 8.0)


class Panel:
    """The lifetime both panels (Explorer, Comparison) share. A subclass sets ``panel`` (its top widget) and
    ``controller`` (whose worker holds the controller weakly), then calls ``_attach``."""

    panel: Any
    controller: Any

    def _attach(self, *gone_roots: Any) -> None:
        """Track this panel's views (a displayed panel lives while on screen) and have the controller's worker
        close ``gone_roots`` and every widget under them once Python collects the controller (the panel holds
        it: it goes when the panel goes, unless something else refers to it)."""
        track_views(self)
        self.controller.on_gone(functools.partial(close_widgets, *gone_roots))

    def close(self) -> None:
        """Stop the worker thread and close the widgets, on screen too. A panel that is neither on screen nor
        referred to is closed as well, when Python collects it."""
        hidden(self)
        self.controller.close()
        close_widgets(*panel_widgets(self))

    def _still_frames(self) -> list:
        """The (H, W, 4) RGBA pictures the panel shows now, for :meth:`_repr_mimebundle_`'s still picture."""
        return []

    def _repr_mimebundle_(self, **kwargs):
        """The live widget, and for where it cannot be live (a saved notebook opened later, nbviewer, an HTML
        export) a still PNG of its pictures as they are now and a line saying what the panel is, instead of the
        widgets' text dump (see still.py)."""
        shown(self)  # kept from now on, until its views are gone: the frontend reports them only later
        bundle = self.panel._repr_mimebundle_(**kwargs)
        if bundle is None:  # a closed widget shows nothing
            return None
        bundle = dict(bundle)
        bundle["text/plain"] = f"umapviz {type(self).__name__}: a live panel; run the cell with a kernel to use it"
        still = still_png(self._still_frames())
        if still is not None:
            bundle["image/png"] = base64.b64encode(still).decode("ascii")
            bundle["text/plain"] += " (the picture: its frame when the cell ran)"
        return bundle


def shown(panel: Any) -> None:
    """``panel`` was displayed: keep it until its views are gone or it is closed (not a closed one)."""
    if getattr(panel.panel, "comm", None) is not None:
        _ON_SCREEN.add(panel)


def hidden(panel: Any) -> None:
    """``panel`` is closed: no longer keep it for its views."""
    _ON_SCREEN.discard(panel)


def track_views(panel: Any) -> None:
    """Have the frontend count the views of ``panel.panel`` (the top widget) and keep ``panel`` while there
    are any (a view that appears without ``shown``, e.g. ``display(explorer.panel)``, counts too), held weakly.
    """
    ref = weakref.ref(panel)

    def views_changed(change: dict) -> None:
        owner = ref()
        if owner is None:
            return
        if change["new"]:
            _ON_SCREEN.add(owner)
            if not change["old"]:  # first shown: make sure its plots were shown too
                _reshow_later(ref, 0)
        else:  # the last view was removed
            _ON_SCREEN.discard(owner)

    panel.panel._view_count = 0  # a number: the frontend's views count themselves (None: they do not)
    panel.panel.observe(views_changed, names="_view_count")


def _reshow_later(ref: weakref.ref, attempt: int) -> None:
    """After ``RESHOW_DELAYS_S[attempt]`` seconds, :func:`reshow_unseen` the panel ``ref`` holds (weakly) while it is
    on screen; after a repair, look again later."""

    def check() -> None:
        owner = ref()
        if owner is None or not owner.panel._view_count:
            return
        if reshow_unseen(owner.panel) and attempt + 1 < len(RESHOW_DELAYS_S):
            _reshow_later(ref, attempt + 1)

    timer = threading.Timer(RESHOW_DELAYS_S[attempt], check)
    timer.daemon = True
    timer.start()


def reshow_unseen(root: Any) -> int:
    """Put back into its box every widget under ``root`` that says the page has not shown it (its ``needs_view``,
    e.g. a plot whose view failed): removed from the box's children and added again, so the page builds its view
    anew. Returns how many.

    Parameters
    ----------
    root : ipywidgets.Widget
        A panel's top widget.
    """
    repaired, stack, seen = 0, [root], set()
    while stack:
        box = stack.pop()
        if id(box) in seen:
            continue
        seen.add(id(box))
        children = tuple(getattr(box, "children", ()))
        for child in children:
            if getattr(child, "needs_view", False):
                box.children = tuple(c for c in children if c is not child)
                box.children = children
                repaired += 1
            stack.append(child)
    return repaired


def weak_callback(method: Callable[..., Any]) -> Callable[..., Any]:
    """A widget callback that calls the bound ``method`` while its object lives, and does nothing after."""
    ref = weakref.WeakMethod(method)

    def call(*args: Any, **kwargs: Any) -> Any:
        bound = ref()
        return None if bound is None else bound(*args, **kwargs)

    call.__name__ = call.__qualname__ = f"weak {method.__name__}"
    return call


def panel_widgets(panel: Any) -> list:
    """The panel's top widget and its named ``widgets`` (lists of them too), some of which may not be shown."""
    found = [panel.panel]
    for value in getattr(panel, "widgets", {}).values():
        found.extend(value if isinstance(value, (list, tuple)) else [value])
    return found


def close_widgets(*roots: Any) -> None:
    """Close the ``roots`` and every widget under them: children, and the Layout and Style objects (widgets
    too). ``Widget.close()`` closes one widget only; the others would stay in ipywidgets' registry for good.
    """
    from ipywidgets import Widget  # noqa: PLC0415

    found: dict[int, Any] = {}
    stack = [root for root in roots if isinstance(root, Widget)]
    while stack:
        widget = stack.pop()
        if id(widget) in found:
            continue
        found[id(widget)] = widget
        for name in widget.keys:  # the synced traits: children, layout, style, ...
            value = getattr(widget, name, None)
            for item in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(item, Widget):
                    stack.append(item)
    for widget in found.values():
        widget.close()


def call_each(callbacks: list) -> None:
    """Call every callback of ``callbacks`` (a controller's ``on_gone`` list), in order.

    Parameters
    ----------
    callbacks : list of callable
        Called without arguments.
    """
    for callback in callbacks:
        callback()
