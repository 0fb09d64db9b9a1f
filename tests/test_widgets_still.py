"""A displayed panel's stored output: a still picture and a line of text, not the widgets' text dump."""

from __future__ import annotations

import base64
import io

import ipywidgets as w
import numpy as np
from PIL import Image

from umapviz.widgets import compare
from umapviz.widgets.still import GAP, still_png


def test_a_displayed_grid_hands_out_a_still_picture_of_its_panels_and_no_widget_dump(blobs_small):
    X, y = blobs_small
    grid = compare(X, labels=y, strategy=["sequential", "buffered"], n_epochs=10, autoplay=False, panel_size=96,
                   n_neighbors=10)
    try:
        grid.run(block=True)
        bundle = grid._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in bundle  # live where the kernel runs
        assert "children=" not in bundle["text/plain"] and "live panel" in bundle["text/plain"]
        still = np.asarray(Image.open(io.BytesIO(base64.b64decode(bundle["image/png"]))))
        assert still.shape[0] >= 96 and still.shape[1] >= 2 * 96  # both panels' frames, side by side
        assert len(np.unique(still.reshape(-1, still.shape[2]), axis=0)) > 10  # drawn, not a blank canvas
    finally:
        grid.close()


def _png(width: int, height: int, colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def test_still_png_lays_the_shown_pictures_side_by_side_and_is_none_without_any():
    assert still_png(w.VBox([w.Image(format="png"), w.HTML("text")])) is None  # no frame drawn yet
    hidden = w.Image(value=_png(50, 50, (0, 0, 255)), format="png", layout=w.Layout(display="none"))
    root = w.VBox([w.HBox([w.Image(value=_png(30, 20, (255, 0, 0)), format="png"), hidden]),
                   w.Image(value=_png(40, 10, (0, 255, 0)), format="png")])
    still = np.asarray(Image.open(io.BytesIO(still_png(root))).convert("RGB"))
    assert still.shape == (20, 30 + GAP + 40, 3)  # the hidden one left out, the others in layout order
    assert tuple(still[5, 5]) == (255, 0, 0) and tuple(still[5, 30 + GAP + 5]) == (0, 255, 0)
