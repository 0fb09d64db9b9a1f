"""A displayed panel's stored output: a still picture and a line of text, not the widgets' text dump."""

from __future__ import annotations

import base64
import io

import numpy as np
from PIL import Image

from umapviz.widgets import compare
from umapviz.widgets.still import GAP, PAPER, still_png


def test_a_displayed_grid_hands_out_a_still_picture_of_its_panels_and_no_widget_dump(blobs_small):
    X, y = blobs_small
    grid = compare(
        X, labels=y, strategy=["sequential", "buffered"], n_epochs=10, autoplay=False, panel_size=96, n_neighbors=10
    )
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


def _rgba(width: int, height: int, colour: tuple[int, int, int]) -> np.ndarray:
    image = np.zeros((height, width, 4), np.uint8)
    image[...] = (*colour, 255)
    return image


def test_still_png_lays_the_drawn_pictures_side_by_side_and_is_none_without_any():
    assert still_png([]) is None
    assert still_png([np.zeros((20, 20, 4), np.uint8)]) is None  # a plot with nothing drawn yet
    frames = [_rgba(30, 20, (255, 0, 0)), np.zeros((50, 50, 4), np.uint8), _rgba(40, 10, (0, 255, 0))]
    still = np.asarray(Image.open(io.BytesIO(still_png(frames))).convert("RGB"))
    assert still.shape == (20, 30 + GAP + 40, 3)  # the blank one left out, the others in order, top-aligned
    assert tuple(still[5, 5]) == (255, 0, 0) and tuple(still[5, 30 + GAP + 5]) == (0, 255, 0)
    assert tuple(still[15, 30 + GAP + 5]) == PAPER  # below the shorter picture: the background
