"""How long a panel lives: as long as something outside it refers to it (a notebook variable, ``Out``).

ipywidgets keeps every widget in a module-level registry until the widget is closed, so a callback that
holds the panel (a bound method, a lambda over ``self``) would keep the panel, its worker thread, its
optimizer and its frames alive for the kernel's life, even after the user dropped it. The panels therefore
give their widgets callbacks that hold them weakly (``weak_callback``), their worker holds them weakly too
(worker.py), and when a panel is closed or collected all its widgets are closed (``close_widgets``), which
takes them out of the registry.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any


def weak_callback(method: Callable[..., Any]) -> Callable[..., Any]:
    """A widget callback that calls the bound ``method`` while its object lives, and does nothing after."""
    ref = weakref.WeakMethod(method)

    def call(*args: Any, **kwargs: Any) -> Any:
        bound = ref()
        return None if bound is None else bound(*args, **kwargs)

    call.__name__ = call.__qualname__ = f"weak {method.__name__}"
    return call


def panel_widgets(panel: Any) -> list:
    """The panel's top widget and its ``_w_*`` widgets (lists of them too), some of which may not be shown."""
    found = [panel.panel]
    for name, value in vars(panel).items():
        if name.startswith("_w_"):
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
