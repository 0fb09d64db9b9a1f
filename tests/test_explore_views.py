"""The Explorer and the grid on the interactive plot, through their public API and their plots' streams.

A plot's HoloViews streams are what the browser fires (zoom, click, box selection); here they are fired from
Python and the Explorer / Comparison answer through their controllers.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("holoviews")
pytest.importorskip("panel")

from umapviz import compare
from umapviz.render.marks import SELECTION_COLOR
from umapviz.render.shade import hex_to_rgb
from umapviz.widgets.explorer.panel import Explorer


def _yellow(frame: np.ndarray) -> int:
    return int((frame[..., :3] == hex_to_rgb(SELECTION_COLOR)).all(axis=-1).sum())


@pytest.fixture(scope="module")
def explorer(blobs_small):
    X, y = blobs_small
    panel = Explorer(X, labels=y, strategy="buffered", n_epochs=60, size=160, n_neighbors=10)
    panel.play(20)
    yield panel
    panel.close()


def test_explorer_zoom_re_renders_and_reset_goes_back(explorer):
    whole_range, whole = explorer.view_range, explorer.frame()
    (x0, x1), (y0, y1) = whole_range
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    explorer.zoom((cx - 1.0, cx + 1.0), (cy - 1.0, cy + 1.0))
    assert explorer.view_range == ((cx - 1.0, cx + 1.0), (cy - 1.0, cy + 1.0))
    assert not np.array_equal(explorer.frame(), whole)
    explorer.step(1)  # a new frame keeps the zoom
    assert explorer.view_range == ((cx - 1.0, cx + 1.0), (cy - 1.0, cy + 1.0))
    explorer.reset_view()
    explorer.wait()
    assert explorer.controller.view_range is None
    assert explorer.view_range != ((cx - 1.0, cx + 1.0), (cy - 1.0, cy + 1.0))


def test_a_wheel_zoom_in_the_plot_sets_the_explorers_range(explorer):
    explorer.plot.range_stream.event(x_range=(-3.0, 3.0), y_range=(-2.0, 4.0))  # as the browser reports it
    explorer.wait()
    assert explorer.controller.view_range == ((-3.0, 3.0), (-2.0, 4.0))
    assert explorer.plot.view_range == ((-3.0, 3.0), (-2.0, 4.0))  # the frame drawn at it came back
    explorer.reset_view()
    explorer.wait()


def test_the_same_wheel_zoom_after_a_reset_view_is_taken_again(explorer):
    """Zoom, ``reset_view()`` from the kernel, the same wheel step at the same place: the range reported is one
    drawn before, and it was taken for the plot echoing that frame (the zoom lost)."""
    for _repeat in range(3):
        explorer.plot.range_stream.event(x_range=(-3.0, 3.0), y_range=(-2.0, 4.0))
        explorer.wait()
        assert explorer.controller.view_range == ((-3.0, 3.0), (-2.0, 4.0))
        explorer.reset_view()
        explorer.wait()
        assert explorer.controller.view_range is None


def test_a_click_inspects_the_point_and_highlights_it(explorer):
    explorer.wait()
    before = explorer.frame()
    index = 123
    x, y = (float(v) for v in explorer.controller.layout_of()[index])
    explorer.plot.tap_stream.event(x=x, y=y)  # a click right on it
    info = explorer.controller.point
    assert info is not None and info.index == index == explorer.controller.inspected
    assert f"data-index='{index}'" in explorer.widgets["inspector"].value
    assert f"{info.degree:,} edges" in explorer.widgets["inspector"].value
    assert info.max_edges_in_one_chunk == info.degree  # buffered: all its edges summed from one stale position
    assert not np.array_equal(explorer.frame(), before)  # the point and its neighbours ringed
    same = explorer.inspect(index)
    assert same.index == index and same.degree == info.degree


def test_inspect_survives_a_strategy_change_and_the_trail_draws(explorer):
    info = explorer.inspect(5)
    explorer.set(strategy="chunked", n_chunks=8)
    after = explorer.controller.point
    assert after.index == 5 and after.n_chunks == 8 and after.max_edges_in_one_chunk <= info.degree
    explorer.play(5)
    plain = explorer.frame()
    explorer.widgets["trail"].value = True
    assert not np.array_equal(explorer.frame(), plain)
    explorer.widgets["trail"].value = False
    explorer.set(strategy="buffered")


def test_explorer_select_draws_the_points_and_box_selection_selects(explorer):
    explorer.select([])
    explorer.wait()
    assert _yellow(explorer.frame()) == 0
    explorer.select(np.arange(50))
    assert explorer.selection.tolist() == list(range(50)) and _yellow(explorer.frame()) > 0
    layout = np.asarray(explorer.controller.layout_of())
    (x0, x1), (y0, y1) = explorer.view_range
    explorer.plot.box_stream.event(bounds=(x0, y0, (x0 + x1) / 2, y1))  # the left half
    inside = np.flatnonzero(
        (layout[:, 0] >= x0) & (layout[:, 0] <= (x0 + x1) / 2) & (layout[:, 1] >= y0) & (layout[:, 1] <= y1)
    )
    assert np.array_equal(explorer.selection, inside) and 0 < inside.size < len(layout)
    explorer.select([])
    with pytest.raises(ValueError, match="out of range"):
        explorer.select([10**6])


def test_every_state_has_a_way_out_in_the_api_and_in_the_view(explorer):
    """Notebook 01 left a hub inspected (the plot dimmed) for good, a box selection stayed drawn with no count,
    and Reset went back to epoch 0 but kept the zoom: a nearly empty plot."""
    explorer.clear()  # what the tests before left inspected
    explorer.wait()
    plain = explorer.frame()
    assert explorer.widgets["clear"].disabled and "click a point" in explorer.widgets["focus"].value
    explorer.inspect(5)
    explorer.select(np.arange(412))
    focus = explorer.widgets["focus"].value
    assert "inspecting <b>#5</b>" in focus and "<b>412</b> selected" in focus and "click empty space" in focus
    assert not explorer.widgets["clear"].disabled
    assert explorer.inspect(None) is None and explorer.controller.point is None
    explorer.select(None)
    explorer.wait()
    assert explorer.selection.size == 0 and np.array_equal(explorer.frame(), plain)
    explorer.select([1, 2])
    explorer.clear_selection()
    assert explorer.selection.size == 0
    # In the view: a click on empty space, then the Clear button, each clear both.
    for clear in ("empty space", "button"):
        explorer.inspect(7)
        explorer.select(np.arange(30))
        if clear == "button":
            explorer.widgets["clear"].click()
        else:
            (x0, x1), (y0, y1) = explorer.view_range
            layout = np.asarray(explorer.controller.layout_of())
            far = (x1 + 10 * (x1 - x0), y1 + 10 * (y1 - y0))  # beyond every point (the plot reports any place)
            assert np.hypot(*(layout - far).T).min() > x1 - x0
            explorer.plot.tap_stream.event(x=far[0], y=far[1])
        explorer.wait()
        assert explorer.controller.inspected is None and explorer.selection.size == 0, clear
        assert np.array_equal(explorer.frame(), plain), clear
    # Reset: epoch 0 and the whole layout in view together.
    (x0, x1), (y0, y1) = explorer.view_range
    explorer.zoom((x0, (x0 + x1) / 2), (y0, (y0 + y1) / 2))
    state = explorer.reset()
    assert state.epoch == 0 and explorer.controller.view_range is None
    explorer.reset_view()  # nothing to reset: no error
    explorer.play(20)
    # The trail: on and off.
    explorer.inspect(5)
    explorer.trail = True
    trailed = explorer.frame()
    explorer.trail = False
    assert explorer.widgets["trail"].value is False and not np.array_equal(explorer.frame(), trailed)
    with pytest.raises(ValueError, match="trail='yes' must be True or False"):
        explorer.trail = "yes"
    explorer.clear()


def test_the_grid_links_zoom_and_selection_across_panels(blobs_small):
    X, y = blobs_small
    grid = compare(
        X,
        labels=y,
        strategy=["buffered", "chunked"],
        n_chunks="auto",
        random_state=0,
        n_epochs=40,
        panel_size=120,
        autoplay=False,
        n_neighbors=10,
    )
    try:
        grid.run(20)
        assert len(grid.plots) == 2
        assert "one graph" in grid.widgets["legend"].value and "outside the shared view" in grid.widgets["legend"].value
        grid.plots[1].range_stream.event(x_range=(-4.0, 4.0), y_range=(-4.0, 4.0))  # a zoom in the chunked panel
        grid.controller.worker.wait_idle()
        assert [p.view_range for p in grid.plots] == [((-4.0, 4.0), (-4.0, 4.0))] * 2 == [grid.view_range] * 2
        grid.plots[0].box_stream.event(bounds=(-4.0, -4.0, 0.0, 0.0))  # a box in the buffered panel
        selected = grid.selection
        buffered = np.asarray(grid.controller.layout_of(0))
        inside = np.flatnonzero(((buffered >= -4.0) & (buffered <= 0.0)).all(axis=1))
        assert np.array_equal(selected, inside) and inside.size > 0
        assert all(np.array_equal(p.selection, inside) for p in grid.plots)  # highlighted in both panels
        assert f"<b>{inside.size:,}</b> selected in every panel" in grid.widgets["selected"].value
        assert not grid.widgets["clear"].disabled
        grid.reset_view()  # the whole layouts: the selected points are drawn wherever they sit in each
        grid.controller.worker.wait_idle()
        assert grid.controller.view_range is None
        assert all(_yellow(frame) > 0 for frame in grid.marked_frames())
        grid.select([])
        assert all(_yellow(frame) == 0 for frame in grid.marked_frames())
        assert "selected" not in grid.widgets["selected"].value and grid.widgets["clear"].disabled
        for clear in ("empty space", "button"):  # each clears the selection in every panel
            grid.select(inside)
            if clear == "button":
                grid.widgets["clear"].click()
            else:
                grid.plots[1].tap_stream.event(x=1e6, y=1e6)
            grid.controller.worker.wait_idle()
            assert grid.selection.size == 0 and all(_yellow(frame) == 0 for frame in grid.marked_frames()), clear
        grid.select(None)
        grid.clear_selection()
    finally:
        grid.close()


def test_a_locked_view_keeps_its_range_across_frames(explorer):
    explorer.set(lock_view=True)
    explorer.step(1)
    locked = explorer.view_range
    explorer.step(5)
    assert explorer.view_range == locked  # the locked range, drawn again at each frame
    explorer.set(lock_view=False)
    explorer.step(1)


def test_the_plot_follows_its_width_in_the_page_and_stays_square(explorer):
    """The plot was a fixed 480 x 480 px whatever the notebook's width: it now scales with its column, square,
    and frames are drawn at the size it reports, within MIN_FRAME and MAX_FRAME."""
    from bokeh.models import Plot as BokehPlot  # noqa: PLC0415

    from umapviz.render.live.view import RANGE_REPORT_MS, TOOLBAR_WIDTH  # noqa: PLC0415
    from umapviz.widgets.explorer.view import MAX_FRAME, MIN_FRAME  # noqa: PLC0415

    figures = list(explorer.plot.widget._model.select({"type": BokehPlot}))
    assert [(f.aspect_ratio, f.width, f.height) for f in figures] == [(1, None, None)]
    assert figures[0].sizing_mode in ("scale_width", "stretch_width")  # its width from the page, its height too
    # The toolbar beside the frame (inside it, it covered the points at the frame's edge), every border as wide
    # as the toolbar: the frame is square in the square plot.
    assert not figures[0].toolbar_inner and figures[0].toolbar_location == "right"
    borders = [getattr(figures[0], f"min_border_{side}") for side in ("left", "right", "top", "bottom")]
    assert borders == [TOOLBAR_WIDTH] * 4
    assert figures[0].lod_timeout == RANGE_REPORT_MS  # a wheel zoom is reported 60 ms after it, not 500
    assert explorer.plot.widget.layout.width == "100%"
    try:
        for reported, drawn in ((300, 300), (10_000, MAX_FRAME), (50, MIN_FRAME), (256, 256)):
            explorer.plot.size_stream.event(width=reported, height=reported)  # as the browser reports it
            explorer.wait()
            assert explorer.controller.params.size == drawn
            assert explorer.frame().shape == (drawn, drawn, 4)
        explorer.plot.size_stream.event(width=None, height=None)  # not laid out yet: nothing changes
        assert explorer.controller.params.size == 256
    finally:
        explorer.set(size=160)
        explorer.wait()


def test_the_pointer_is_read_out_in_data_units(explorer):
    cursor = explorer.widgets["cursor"]
    assert "point at the plot" in cursor.value
    explorer.plot.pointer_stream.event(x=1.23456789, y=-20.5)
    assert "x <b>1.235</b>, y <b>-20.5</b>" in cursor.value
    explorer.plot.pointer_stream.event(x=None, y=None)  # the pointer left the plot
    assert "point at the plot" in cursor.value
