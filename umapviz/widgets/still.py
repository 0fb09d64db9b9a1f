"""A panel's pictures as one still image, for the places where the live panel cannot be shown.

A notebook stores what a cell displayed. A live panel's stored output is a reference to widgets that exist only
while the kernel runs, plus a text fallback: opened later (or on GitHub, nbviewer, an HTML export) it showed as
``VBox(children=(HTML(value='', ...``. The panels therefore also hand out, beside their widget, a PNG of the
pictures they show when displayed (``still_png``) and a line of text saying what the panel is: a live view where
the kernel runs, a still frame everywhere else.
"""

from __future__ import annotations

import io
from typing import Any

GAP = 8  # pixels between the pictures
PAPER = (17, 17, 17)  # the figures' dark background (render.figures.PAPER)


def panel_pictures(root: Any) -> list[bytes]:
    """The encoded images (PNG or JPEG) of the ``ipywidgets.Image`` widgets under ``root`` that hold one and are
    not hidden, in the order they are laid out (depth first through ``children``).

    Parameters
    ----------
    root : ipywidgets.Widget
        The panel's top widget.
    """
    from ipywidgets import Image  # noqa: PLC0415 - widgets only where a panel is displayed

    found, stack = [], [root]
    while stack:
        widget = stack.pop()
        if getattr(getattr(widget, "layout", None), "display", None) == "none":
            continue
        if isinstance(widget, Image):
            if widget.value:
                found.append(bytes(widget.value))
            continue
        stack.extend(reversed(list(getattr(widget, "children", ()))))
    return found


def still_png(root: Any) -> bytes | None:
    """The pictures under ``root`` (see :func:`panel_pictures`) side by side, top-aligned, as one PNG; None when
    none holds a picture yet.

    Parameters
    ----------
    root : ipywidgets.Widget
        The panel's top widget.
    """
    from PIL import Image  # noqa: PLC0415 - plotting only where a panel is displayed

    pictures = [Image.open(io.BytesIO(data)).convert("RGB") for data in panel_pictures(root)]
    if not pictures:
        return None
    width = sum(p.width for p in pictures) + GAP * (len(pictures) - 1)
    canvas = Image.new("RGB", (width, max(p.height for p in pictures)), PAPER)
    x = 0
    for picture in pictures:
        canvas.paste(picture, (x, 0))
        x += picture.width + GAP
    buffer = io.BytesIO()
    canvas.save(buffer, format="PNG")
    return buffer.getvalue()
