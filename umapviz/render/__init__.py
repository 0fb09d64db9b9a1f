"""Rendering embeddings of up to tens of millions of points: pixel grids, shading, live views, export.

``image()`` is the one entry point for a still frame; everything else (live view, recordings, animations,
figures) builds on it. NumPy embeddings aggregate in a cached Numba pass, CuPy embeddings on the GPU, both
as datashader's point glyph does, bit for bit.
The core never imports this package.
"""

from __future__ import annotations

from umapviz.render.aggregate import Aggregate, aggregate
from umapviz.render.export import encode_png, recording_frames, save_gif, save_html, save_mp4, save_png
from umapviz.render.figures import add_title_and_caption, outlier_chart, side_by_side
from umapviz.render.frame import image, render, warm_up
from umapviz.render.record import Recording, RecordingError
from umapviz.render.shade import shade
from umapviz.render.shade.style import CLASS_PALETTE, COUNT_CMAP, DEFAULT_STYLE, Style, class_colors
from umapviz.render.view import View, resolve_view


def __getattr__(name: str):
    # LiveView pulls in HoloViews and bokeh (slow to import): load it only when asked for.
    if name == "LiveView":
        from umapviz.render.live.view import LiveView  # noqa: PLC0415

        return LiveView
    if name == "LinkedViews":
        from umapviz.render.live.linked import LinkedViews  # noqa: PLC0415

        return LinkedViews
    raise AttributeError(f"module 'umapviz.render' has no attribute {name!r}")


__all__ = [
    "CLASS_PALETTE",
    "COUNT_CMAP",
    "DEFAULT_STYLE",
    "Aggregate",
    "LinkedViews",
    "LiveView",
    "Recording",
    "RecordingError",
    "Style",
    "View",
    "add_title_and_caption",
    "aggregate",
    "class_colors",
    "encode_png",
    "image",
    "outlier_chart",
    "recording_frames",
    "render",
    "resolve_view",
    "save_gif",
    "save_html",
    "save_mp4",
    "save_png",
    "shade",
    "side_by_side",
    "warm_up",
]
