"""The interactive plot: zoom, pan and reset re-aggregate; hover, click and select find points; marks; links.

The HoloViews streams are driven from Python (``stream.event(...)``), as the browser's bokeh plot does.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("holoviews")
pytest.importorskip("panel")

from umapviz.render import render
from umapviz.render.live.linked import LinkedViews
from umapviz.render.live.view import LiveView
from umapviz.render.marks import SELECTION_COLOR
from umapviz.render.shade import hex_to_rgb

LEFT, RIGHT = 3000, 3000  # points in the two clusters; one lone point at the origin follows them


@pytest.fixture(scope="module")
def clusters():
    rng = np.random.default_rng(0)
    embedding = np.concatenate([rng.normal(-10, 1, (LEFT, 2)), rng.normal(10, 1, (RIGHT, 2)), [[0.0, 0.0]]])
    labels = np.repeat([0, 1, 2], [LEFT, RIGHT, 1])
    return embedding.astype(np.float32), labels


def _shown(live: LiveView):
    """Evaluate the DynamicMap as a displayed plot would after an event; returns the image element."""
    return live.dmap[()].get(0)


def test_a_zoom_event_re_renders_the_visible_range_at_full_resolution(clusters):
    embedding, labels = clusters
    live = LiveView(120, 120, view="auto")
    live.push(embedding, labels=labels, caption="epoch 0")
    whole = live.frame()
    assert live.last_aggregate.n_in_view == len(embedding)

    live.range_stream.event(x_range=(-12.0, -8.0), y_range=(-12.0, -8.0))  # the wheel over the left cluster
    image = _shown(live)
    assert live.view_range == ((-12.0, -8.0), (-12.0, -8.0))
    assert image.bounds.lbrt() == (-12.0, -12.0, -8.0, -8.0)
    expected, agg = render(embedding, labels, None, 120, 120, (-12.0, -8.0, -12.0, -8.0))
    assert np.array_equal(live.frame(), expected)  # re-aggregated at the zoom, not a crop of the whole
    assert not np.array_equal(live.frame(), whole)
    assert live.last_aggregate.n_in_view == agg.n_in_view < LEFT
    assert f"{len(embedding) - agg.n_in_view:,} points outside the view" in live.caption


def test_a_zoom_is_kept_across_pushes_until_reset(clusters):
    embedding, labels = clusters
    live = LiveView(100, 100, view="auto")  # follow=True: each push re-frames, unless the user zoomed
    live.push(embedding, labels=labels)
    _shown(live)
    live.push(embedding * 3, labels=labels)
    assert live.view_range[0][1] > 30  # re-framed to the new data
    live.zoom((-5.0, 5.0), (-5.0, 5.0))
    live.push(embedding * 5, labels=labels)
    _shown(live)
    assert live.view_range == ((-5.0, 5.0), (-5.0, 5.0))
    assert live.last_aggregate.view.x_range == (-5.0, 5.0)
    live.reset_view()
    _shown(live)
    assert live.view_range[0][1] > 50 and live.zoomed_view is None


def test_a_locked_view_keeps_its_first_frame_and_an_echo_is_no_zoom(clusters):
    embedding, labels = clusters
    live = LiveView(100, 100, view="auto", follow=False)
    live.push(embedding, labels=labels)
    first = live.view_range
    _shown(live)
    # The plot reporting back the range it was just given is not a zoom...
    live.range_stream.event(x_range=first[0], y_range=first[1])
    assert live.zoomed_view is None
    live.push(embedding * 3, labels=labels)
    _shown(live)
    assert live.view_range == first  # ...and a locked view keeps its frame across pushes
    live.reset_view()
    assert live.view_range[0][1] > 30  # reset re-frames to the data now shown


def test_the_plot_reset_tool_forgets_the_zoom(clusters):
    embedding, _ = clusters
    live = LiveView(100, 100, view="auto")
    live.push(embedding)
    live.zoom((-1.0, 1.0), (-1.0, 1.0))
    live.reset_stream.event(resetting=True)
    assert live.zoomed_view is None and live.view_range[0][1] > 10


def test_a_zoom_repeated_after_a_reset_is_a_zoom_and_the_reset_tools_echo_is_not(clusters):
    """Zoom, reset, and the same wheel step at the same place: the browser reports a range drawn before. It was
    taken for an echo of that frame and lost (the page zoomed, the kernel kept the whole range)."""
    embedding, labels = clusters
    asked = []
    live = LiveView(100, 100, on_range=asked.append)
    rgba, agg = render(embedding, labels, None, 100, 100, (-20.0, 20.0, -20.0, 20.0))
    zoomed_rgba, zoomed = render(embedding, labels, None, 100, 100, (-5.0, 5.0, -5.0, 5.0))
    live.push_frame(rgba, agg.view, embedding, labels)
    _shown(live)  # drawn as a displayed plot draws it: the views drawn are what an echo is told by
    for _repeat in range(3):
        live.range_stream.event(x_range=(-5.0, 5.0), y_range=(-5.0, 5.0))  # the user's wheel zoom
        live.push_frame(zoomed_rgba, zoomed.view, embedding, labels)  # the owner draws it
        _shown(live)
        live.reset_view()  # from Python: the owner draws the whole range again
        live.push_frame(rgba, agg.view, embedding, labels)
        _shown(live)
    assert [None if v is None else v.bounds for v in asked] == [(-5.0, 5.0, -5.0, 5.0), None] * 3
    # The reset tool: the plot reports the range it reset from after the reset itself (HoloViews debounces the
    # range, not the reset): an echo of a frame drawn, no zoom.
    live.range_stream.event(x_range=(-5.0, 5.0), y_range=(-5.0, 5.0))
    live.push_frame(zoomed_rgba, zoomed.view, embedding, labels)
    _shown(live)
    live.reset_stream.event(resetting=True)
    live.range_stream.event(x_range=(-5.0, 5.0), y_range=(-5.0, 5.0))
    assert [None if v is None else v.bounds for v in asked[6:]] == [(-5.0, 5.0, -5.0, 5.0), None]


def test_a_click_reports_the_nearest_point_and_ignores_empty_space(clusters):
    embedding, labels = clusters
    taps = []
    live = LiveView(100, 100, view=(-20.0, 20.0, -20.0, 20.0), on_tap=taps.append)
    live.push(embedding, labels=labels)
    _shown(live)
    live.tap_stream.event(x=0.1, y=-0.1)  # 0.14 from the lone point: well within the hover radius
    live.tap_stream.event(x=float(embedding[17, 0]), y=float(embedding[17, 1]))
    live.tap_stream.event(x=15.0, y=-15.0)  # nothing within 24 pixels (9.6 data units) of it
    assert taps == [LEFT + RIGHT, 17, None]  # None: a click on empty space, which clears


def test_a_click_on_empty_space_clears_the_selection_drawn(clusters):
    """A box selection stayed drawn in yellow with no way to clear it from the plot."""
    embedding, labels = clusters
    live = LiveView(100, 100, view=(-20.0, 20.0, -20.0, 20.0))
    live.push(embedding, labels=labels)
    _shown(live)
    live.box_stream.event(bounds=(-20.0, -20.0, 0.5, 0.5))
    selected = live.frame()
    assert live.selection.size == LEFT + 1
    live.tap_stream.event(x=float(embedding[17, 0]), y=float(embedding[17, 1]))  # on a point: kept
    assert live.selection.size == LEFT + 1
    live.tap_stream.event(x=15.0, y=-15.0)
    assert live.selection.size == 0
    assert not np.array_equal(live.frame(), selected)
    assert np.array_equal(live.frame(), render(embedding, labels, None, 100, 100, (-20.0, 20.0, -20.0, 20.0))[0])


def test_hover_names_the_nearest_point_and_its_label(clusters):
    embedding, labels = clusters
    hovered = []
    live = LiveView(100, 100, view=(-20.0, 20.0, -20.0, 20.0), on_hover=hovered.append)
    live.push(embedding, labels=labels, label_names=["left", "right", "lone"])
    _shown(live)
    live.pointer_stream.event(x=0.2, y=0.2)
    text = live.dmap[()].get(1)
    assert live.hovered == (LEFT + RIGHT, "lone") and hovered[-1] == live.hovered
    assert (text.x, text.y) == (0.0, 0.0) and "#6,000" in text.text and "lone" in text.text
    live.pointer_stream.event(x=15.0, y=-15.0)
    live.dmap[()]
    assert live.hovered is None and hovered[-1] is None


def test_escape_over_the_plot_clears_as_a_click_on_empty_space_does(clusters):
    """The page marks the figure's tags on Escape (a change BokehJS sends back); the view clears on it."""
    import holoviews as hv  # noqa: PLC0415

    embedding, labels = clusters
    taps = []
    live = LiveView(100, 100, view=(-20.0, 20.0, -20.0, 20.0), on_tap=taps.append)
    live.push(embedding, labels=labels)
    figure = hv.renderer("bokeh").get_plot(live.dmap).state
    assert {"mousemove", "mouseleave"} <= set(figure.js_event_callbacks)
    assert {"mousemove", "mouseleave"} <= set(figure.subscribed_events)  # else BokehJS never runs the JS
    assert "Escape" in figure.js_event_callbacks["mousemove"][0].code
    live.box_stream.event(bounds=(-20.0, -20.0, 0.5, 0.5))
    assert live.selection.size == LEFT + 1
    figure.tags = ["something else"]  # another change of the tags: nothing cleared
    assert live.selection.size == LEFT + 1 and taps == []
    figure.tags = ["umapviz-escape", 1]
    assert live.selection.size == 0 and taps == [None]


def test_the_hover_label_goes_when_the_pointer_leaves_and_stays_inside_the_plot(clusters):
    """The label stayed after the mouse left the plot, and "#6,169" was cut at the plot's right edge."""
    embedding, labels = clusters
    hovered = []
    live = LiveView(100, 100, view=(-20.0, 20.0, -20.0, 20.0), on_hover=hovered.append)
    live.push(embedding, labels=labels)
    _shown(live)
    left, right = int(np.argmin(embedding[:, 0])), int(np.argmax(embedding[:, 0]))
    sides = {}
    for index in (left, right):
        live.pointer_stream.event(x=float(embedding[index, 0]), y=float(embedding[index, 1]))
        text = live.dmap[()].get(1)
        assert live.hovered[0] == index and f"#{index:,}" in text.text
        assert f"({embedding[index, 0]:.3g}, {embedding[index, 1]:.3g})" in text.text  # the point's coordinates
        sides[index] = (text.halign, text.valign)
    assert sides[left][0] == "left" and sides[right][0] == "right"  # the right edge's label reads leftwards
    live._pointer_left()  # bokeh's MouseLeave
    text = live.dmap[()].get(1)
    assert live.hovered is None and hovered[-1] is None and text.text == ""


def test_box_and_lasso_select_the_points_inside_and_draw_them(clusters):
    embedding, labels = clusters
    selections = []
    live = LiveView(100, 100, view=(-20.0, 20.0, -20.0, 20.0), on_select=selections.append)
    live.push(embedding, labels=labels)
    before = live.frame()
    live.box_stream.event(bounds=(-11.0, -11.0, -9.0, -9.0))  # (left, bottom, right, top)
    inside = np.flatnonzero((np.abs(embedding[:, 0] + 10) <= 1) & (np.abs(embedding[:, 1] + 10) <= 1))
    assert np.array_equal(np.sort(selections[-1]), inside) and 0 < inside.size < LEFT
    assert np.array_equal(np.sort(live.selection), inside)
    after = live.frame()
    yellow = (after[..., :3] == hex_to_rgb(SELECTION_COLOR)).all(axis=-1)
    assert yellow.any() and not (before[..., :3] == hex_to_rgb(SELECTION_COLOR)).all(axis=-1).any()
    assert after[~yellow][..., :3].astype(int).sum() < before[~yellow][..., :3].astype(int).sum()  # the rest dims

    triangle = np.array([[5.0, 5.0], [15.0, 5.0], [5.0, 15.0]])
    live.lasso_stream.event(geometry=triangle)
    x, y = embedding[:, 0], embedding[:, 1]
    in_triangle = np.flatnonzero((x > 5) & (y > 5) & (x + y < 20))
    assert np.array_equal(np.sort(selections[-1]), in_triangle)
    live.select([])
    assert live.selection.size == 0 and np.array_equal(live.frame(), before)


def test_highlight_and_trail_are_drawn_and_bad_marks_are_refused(clusters):
    embedding, labels = clusters
    live = LiveView(100, 100, view=(-20.0, 20.0, -20.0, 20.0))
    live.push(embedding, labels=labels)
    plain = live.frame()
    live.set_marks(highlight=[LEFT + RIGHT, 0, 1])
    highlighted = live.frame()
    assert (highlighted[50 - 8 : 50 + 8, 50 - 8 : 50 + 8] != plain[50 - 8 : 50 + 8, 50 - 8 : 50 + 8]).any()
    live.set_marks(highlight=[], trail=np.array([[0.0, 0.0], [10.0, 0.0], [10.0, 10.0]]))
    trailed = live.frame()
    assert (trailed[50, 55:70] != plain[50, 55:70]).any()  # the line from (0, 0) to (10, 0)
    live.push(embedding, labels=labels)  # marks are kept by a push that does not change them
    assert np.array_equal(live.frame(), trailed)
    with pytest.raises(ValueError, match=r"highlight must be point indices in \[0, 6001\)"):
        live.set_marks(highlight=[len(embedding)])
    with pytest.raises(ValueError, match=r"trail must be a \(T, 2\) array"):
        live.push(embedding, trail=np.zeros(4))


def test_a_bad_zoom_is_refused_with_the_fix(clusters):
    live = LiveView(50, 50)
    live.push(clusters[0])
    with pytest.raises(ValueError, match="low < high"):
        live.zoom((1.0, 0.0), (0.0, 1.0))


def test_linked_views_zoom_and_select_together(clusters):
    embedding, labels = clusters
    views = [LiveView(80, 80, view="auto") for _ in range(3)]
    link = LinkedViews(views)
    for i, view in enumerate(views):
        view.push(embedding + i, labels=labels)  # three layouts of the same points
        _shown(view)
    views[1].range_stream.event(x_range=(-4.0, 4.0), y_range=(-3.0, 5.0))  # the user zooms the middle one
    assert [v.view_range for v in views] == [((-4.0, 4.0), (-3.0, 5.0))] * 3
    views[2].box_stream.event(bounds=(10.0, 10.0, 13.0, 13.0))
    expected = np.flatnonzero(((embedding + 2) >= 10).all(axis=1) & ((embedding + 2) <= 13).all(axis=1))
    for view in views:
        assert np.array_equal(np.sort(view.selection), expected)
    link.select([0, 1])
    assert all(v.selection.tolist() == [0, 1] for v in views) and link.selection.tolist() == [0, 1]
    views[0].reset_stream.event(resetting=True)
    assert all(v.zoomed_view is None for v in views)


def test_the_plot_is_an_ipywidget_inside_a_layout(clusters):
    import ipywidgets  # noqa: PLC0415 - widget library, only for this test

    from umapviz.widgets.plot import Plot  # noqa: PLC0415 - imports panel

    plot = Plot(80, 80)
    plot.push(clusters[0])
    box = ipywidgets.VBox([ipywidgets.HTML("title"), plot.widget])
    assert isinstance(plot.widget, ipywidgets.DOMWidget) and box.children[1] is plot.widget
    plot.zoom((-1.0, 1.0), (-1.0, 1.0))
    assert plot.view_range == ((-1.0, 1.0), (-1.0, 1.0))
    plot.close()


def test_a_frame_drawn_elsewhere_asks_its_owner_for_a_zoom_and_keeps_picking(clusters):
    embedding, labels = clusters
    asked, taps = [], []
    live = LiveView(100, 100, on_range=asked.append, on_tap=taps.append)
    rgba, agg = render(embedding, labels, None, 100, 100, (-20.0, 20.0, -20.0, 20.0))
    live.push_frame(rgba, agg.view, embedding, labels, caption="drawn by the controller")
    assert np.array_equal(live.frame(), rgba) and live.view_range == ((-20.0, 20.0), (-20.0, 20.0))
    live.range_stream.event(x_range=(-20.0, 20.0), y_range=(-20.0, 20.0))  # the plot echoing the frame: no zoom
    live.range_stream.event(x_range=(-5.0, 5.0), y_range=(-5.0, 5.0))
    assert [None if v is None else v.bounds for v in asked] == [(-5.0, 5.0, -5.0, 5.0)]
    assert np.array_equal(live.frame(), rgba)  # nothing drawn here: the owner sends the zoomed frame
    live.reset_stream.event(resetting=True)
    assert asked[-1] is None
    live.tap_stream.event(x=0.0, y=0.0)
    assert taps == [LEFT + RIGHT]
    live.select([LEFT + RIGHT])
    assert (live.frame()[..., :3] == hex_to_rgb(SELECTION_COLOR)).all(axis=-1).sum() == 9  # one 3x3 disc
    with pytest.raises(ValueError, match=r"rgba must be an \(H, W, 4\) uint8 image"):
        live.push_frame(rgba[..., :3], agg.view, embedding)


def test_the_off_view_counts_go_in_the_title_not_over_the_points(clusters):
    """Notebook 05's title was cut at the right ("... (28,845 points outside the vie"), and the counts written on
    the frame were covered by points and collided at a corner."""
    from umapviz.render.shade.style import PANEL_STYLE  # noqa: PLC0415

    embedding, labels = clusters
    live = LiveView(400, 400, view=(-12.0, -8.0, -12.0, -8.0), title="6,001 points")
    live.push(embedding, labels=labels, caption="buffered, epoch 30")
    view = (-12.0, -8.0, -12.0, -8.0)
    frame = live.frame()
    plain, agg = render(embedding, labels, None, 400, 400, view, style=PANEL_STYLE)
    assert np.array_equal(frame, plain)  # the border triangles alone
    assert not np.array_equal(frame, render(embedding, labels, None, 400, 400, view)[0])  # the default writes text
    first, second = live.caption.split("\n")
    assert first == "6,001 points  buffered, epoch 30"
    sides = agg.edge_counts.sum(axis=1)
    assert second.startswith(f"{agg.n_out_of_view:,} points outside the view: left {int(sides[0]):,}")
    assert f"right {int(sides[1]):,}" in second
