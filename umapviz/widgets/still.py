"""A panel's pictures as one still image, for the places where the live panel cannot be shown.

A notebook stores what a cell displayed. A live panel's stored output is a reference to widgets that exist only
while the kernel runs, plus a text fallback: opened later (or on GitHub, nbviewer, an HTML export) it showed as
``VBox(children=(HTML(value='', ...``. The panels therefore also hand out, beside their widget, a PNG of the
pictures they show when displayed (``still_png``) and a line of text saying what the panel is: a live view where
the kernel runs, a still frame everywhere else.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np

GAP = 8  # pixels between the pictures
PAPER = (17, 17, 17)  # the figures' dark background (render.figures.PAPER)


def still_png(frames: Sequence[np.ndarray]) -> bytes | None:
    """``frames`` side by side, top-aligned, as one PNG; None when none has anything drawn.

    Parameters
    ----------
    frames : sequence of numpy.ndarray
        (H, W, 4) uint8 RGBA pictures in the order the panel lays them out. An all-zero one is a view with
        nothing drawn yet (a plot before its first frame) and is left out.
    """
    from PIL import Image  # noqa: PLC0415 - imaging only where a panel is displayed

    pictures = [Image.fromarray(np.ascontiguousarray(f[..., :3])) for f in frames if np.any(f)]
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
