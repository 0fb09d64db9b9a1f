"""The panels' widget-free controllers, driven directly: parameters as traits, state traits that views follow,
the shared error rule, and the weak control <-> trait links the views are made of."""

from __future__ import annotations

import _thread
import gc
import subprocess
import sys
import threading
import time
import weakref

import numpy as np
import pytest
from traitlets import HasTraits, Int, validate

from umapviz.widgets import Explorer, ExplorerController, ExplorerError, GridController
from umapviz.widgets.binding import KEEP, dlink, link
from umapviz.widgets.status import ParameterError, Status

SMALL = {"n_neighbors": 10, "n_epochs": 40, "size": 64}


@pytest.fixture
def controller(blobs_small):
    X, y = blobs_small
    c = ExplorerController(X, labels=y, **SMALL)
    c.wait()
    yield c
    c.close()


def test_the_controllers_import_no_widget_or_plotting_library():
    code = (
        "import sys, umapviz.widgets.explorer.controller, umapviz.widgets.compare.grid, umapviz.widgets.binding\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'ipywidgets', 'bokeh', 'holoviews', 'panel'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_state_traits_follow_the_run_and_can_be_observed(controller):
    seen = []
    controller.observe(lambda change: seen.append(change["new"]), names="epoch")
    state = controller.play(epochs=3)
    assert state.epoch == controller.epoch == 3 and seen[-1] == 3 and seen == sorted(seen)
    assert controller.fingerprint == state.fingerprint and controller.outliers == state.outliers
    assert controller.n_epochs == 40 and controller.n_chunks_used == state.n_chunks_used
    assert controller.frames.image.shape == (64, 64, 4) and not controller.running


def test_a_parameter_trait_restarts_the_layout_and_a_graph_trait_rebuilds_it(controller):
    graph = controller.graph
    controller.step(2)
    controller.params.strategy = "buffered"  # as a bound control would
    state = controller.wait()
    assert (state.strategy, state.epoch, state.n_chunks_used) == ("buffered", 0, 1) and controller.graph is graph
    controller.params.n_neighbors = 8
    controller.wait()
    assert controller.graph is not graph and controller.graph.knn_indices.shape[1] == 8


def test_set_is_all_or_nothing_and_names_the_bad_value(controller):
    with pytest.raises(ValueError, match="epochs_per_frame=0 must be a positive integer") as info:
        controller.set(strategy="buffered", epochs_per_frame=0)
    assert isinstance(info.value, ParameterError)
    assert controller.params.strategy == "chunked" and controller.params.epochs_per_frame == 1
    with pytest.raises(ValueError, match="colour_by_class='yes' must be True or False"):
        controller.params.colour_by_class = "yes"
    with pytest.raises(TypeError, match="n_chunk"):
        controller.set(n_chunk=4)
    controller.params.random_state = np.random.RandomState(7)  # drawn once, into the seed a restart repeats
    assert controller.params.random_state == int(np.random.RandomState(7).randint(0, 2**32, dtype=np.uint32))
    controller.params.n_chunks = np.int64(4)
    assert type(controller.params.n_chunks) is int and controller.wait().n_chunks_used == 4


def test_a_bad_layout_parameter_is_shown_sticky_until_a_build_succeeds(controller):
    errors = []
    controller.status.observe(lambda change: errors.append(change["new"]), names="error")
    strategy = controller.params.strategy
    with controller.params.hold_trait_notifications():  # more chunks than the graph has edges: the optimizer's call
        controller.params.strategy, controller.params.n_chunks = "chunked", 10**9
    controller.wait()
    assert "n_chunks" in controller.status.error and controller.status.sticky
    assert errors[-1] == controller.status.error
    assert controller.step(1).epoch == 1  # the last good layout stays usable, its error shown
    assert "n_chunks" in controller.status.error
    controller.params.strategy, controller.params.n_chunks = strategy, "auto"
    assert controller.wait().error == "" and errors[-1] == ""


def test_the_shared_error_rule():
    status = Status()
    since = status.begin()
    status.show_error(ValueError("passing"))
    with pytest.raises(ExplorerError, match="ValueError: passing"):
        status.check(since, has_layout=True)
    since = status.begin()  # a passing error goes at the next action ...
    assert status.error == "" and status.check(since, has_layout=True) is None
    status.show_error(RuntimeError("build failed"), sticky=True)
    since = status.begin()  # ... a failed build's stays
    assert "build failed" in status.error
    status.check(since, has_layout=True)  # an old error does not make a working call raise
    with pytest.raises(ExplorerError, match="build failed"):
        status.check(since, has_layout=False)  # unless there is nothing to act on
    status.show_error(MemoryError("big"))
    assert "n_samples" in status.error  # a hint the user can act on


def test_keyboard_interrupt_during_a_blocking_play_stops_the_layout(blobs_small, ctrl_c_raises):
    X, y = blobs_small
    c = ExplorerController(X, labels=y, n_neighbors=10, n_epochs=100_000, size=48)
    try:
        c.wait()
        timer = threading.Timer(0.5, _thread.interrupt_main)
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            c.play(block=True)
        timer.join()
        assert not c.worker.playing and not c.running
        epoch = c.pause().epoch
        time.sleep(0.2)
        assert c.state.epoch == epoch and 0 < epoch < 100_000
    finally:
        c.close()


def test_a_dropped_controller_stops_its_thread_and_calls_on_gone(blobs_small):
    X, y = blobs_small
    c = ExplorerController(X, labels=y, **SMALL)
    c.wait()
    gone = threading.Event()
    c.on_gone(gone.set)
    ref, thread = weakref.ref(c), c.worker.thread
    del c
    assert gone.wait(30) and ref() is None
    thread.join(30)
    assert not thread.is_alive()


def test_the_grid_controller_runs_headless_on_one_graph(blobs_small):
    X, y = blobs_small
    grid = GridController(
        X, n_chunks=[1, 4], random_state=0, labels=y, n_neighbors=10, n_epochs=12, epochs_per_frame=6, panel_size=32
    )
    try:
        frames = []
        grid.observe(lambda change: frames.append(change["new"]), names="frame_id")
        grid.start()
        grid.run()
        rows = grid.rows()
        assert [r["epoch"] for r in rows] == [12, 12] and [r["n_chunks_used"] for r in rows] == [1, 4]
        assert frames == [1, 2, 3] and all(im.shape == (32, 32, 4) for im in grid.images())
        assert all(run.graph is grid.graph for run in grid.runs)
        with pytest.raises(ExplorerError, match="bogus"):
            grid.set(strategy="bogus")
        assert grid.status.sticky and [r["epoch"] for r in grid.rows()] == [12, 12]  # the last good layouts
    finally:
        grid.close()


# -- the links views bind their controls with ------------------------------------------------------------------


class _Model(HasTraits):
    value = Int(3)

    @validate("value")
    def _positive(self, proposal):
        if proposal["value"] < 1:
            raise ParameterError(f"value={proposal['value']} must be a positive integer.")
        return proposal["value"]


def test_a_link_follows_both_ways_reports_a_refused_value_and_holds_the_model_weakly():
    ipywidgets = pytest.importorskip("ipywidgets")
    model, slider, errors = _Model(), ipywidgets.IntSlider(min=0, max=10), []
    link(model, "value", slider, on_error=errors.append)
    assert slider.value == 3  # the control shows the model's value from the start
    slider.value = 5
    assert model.value == 5
    model.value = 40  # beyond the slider's range: the range widens instead of clamping
    assert (slider.value, slider.max) == (40, 40)
    slider.value = 0  # refused by the model: reported, and the control shows the value in use again
    assert model.value == 40 and slider.value == 40 and "positive" in str(errors[-1])
    label = ipywidgets.Label()
    dlink(model, "value", label, to_control=lambda v: KEEP if v > 100 else f"{v} points")
    model.value = 7
    assert label.value == "7 points"
    model.value = 200
    assert label.value == "7 points"  # KEEP: left as it was
    ref = weakref.ref(model)
    errors.clear()  # the exception's traceback holds the frames that held the model
    del model
    gc.collect()
    assert ref() is None  # the controls (alive in ipywidgets' registry) do not keep it
    slider.value = 2  # and a control whose model is gone changes nothing else
    slider.close()
    label.close()


def test_a_control_of_the_explorer_and_its_trait_follow_each_other(blobs_small):
    pytest.importorskip("ipywidgets")
    pytest.importorskip("datashader")
    X, y = blobs_small
    ex = Explorer(X, labels=y, **SMALL)
    try:
        c, ws = ex.controller, ex.widgets
        ex.wait()
        ws["strategy"].value = "buffered"  # the control -> the trait -> a restart
        assert c.params.strategy == "buffered" and ex.wait().strategy == "buffered"
        c.params.n_chunks = 8  # the trait -> both n_chunks controls
        assert ws["n_chunks_mode"].value == "fixed" and ws["n_chunks"].value == 8
        c.params.n_chunks = "degree"
        assert ws["n_chunks_mode"].value == "degree"
        c.params.random_state = None
        assert ws["random_state"].value == -1
        ws["random_state"].value = 5
        assert c.params.random_state == 5
        assert ws["n_epochs"].value == 40 and c.params.n_epochs == 40
        c.status.show_error(ValueError("shown"))
        assert ws["error"].layout.display == "block" and "shown" in ws["error"].value
        assert ws["play"].disabled is False and ws["pause"].disabled is True
    finally:
        ex.close()


# -- inspect, view range, selection --------------------------------------------------------------------------


def test_inspect_keeps_its_point_over_restarts_and_follows_the_chunks(controller):
    hub = int(np.argmax(controller.graph.degree))
    seen = []
    controller.observe(lambda change: seen.append(change["new"]), names="point")
    controller.set(strategy="buffered")
    info = controller.inspect(hub)
    assert (info.index, info.degree, info.degree_rank) == (hub, int(controller.graph.degree[hub]), 1)
    assert controller.inspected == hub and controller.point is info and seen[-1] is info
    assert info.max_edges_in_one_chunk == info.degree  # buffered: every edge from one stale copy
    controller.set(strategy="chunked", n_chunks=8)  # a restart keeps the point and recomputes its info
    chunked = controller.point
    assert controller.inspected == hub and chunked is not info and chunked.n_chunks == 8
    assert chunked.max_edges_in_one_chunk < info.max_edges_in_one_chunk
    assert set(chunked.flagged) == {"neighbors", "radius"}
    assert controller.inspect(-1).index == controller.graph.n_vertices - 1  # counted from the end, as in NumPy
    for bad, message in ((600, "out of range"), (2.5, "must be an integer"), (True, "must be an integer")):
        with pytest.raises(ValueError, match=message):
            controller.inspect(bad)
    assert controller.inspected == 599  # a refused index changes nothing


def test_new_data_drops_the_inspected_point_the_selection_and_the_zoom(controller, blobs_small):
    controller.inspect(3)
    controller.select([1, 2])
    controller.zoom((0, 1), (0, 1))
    controller.set(data=blobs_small[0][:300])
    assert controller.inspected is None and controller.point is None
    assert controller.selection.size == 0 and controller.view_range is None


def test_flung_lists_the_flagged_points_busiest_first(controller):
    controller.set(strategy="buffered", n_epochs=200, epochs_per_frame=50)
    controller.play()
    flung, mask, degree = controller.flung(), controller.run.mask, controller.graph.degree
    assert flung.dtype == np.int64 and sorted(flung) == list(np.flatnonzero(mask))
    assert np.all(np.diff(degree[flung]) <= 0)
    assert len(flung) == controller.outliers


def test_trail_follows_a_point_through_the_recorded_epochs(controller):
    start = controller.optimizer.embedding[7].copy()
    controller.play(epochs=3)
    epochs, positions = controller.trail(7)
    assert epochs.tolist() == [0, 1, 2, 3] and positions.shape == (4, 2)
    assert np.array_equal(positions[0], start) and np.array_equal(positions[-1], controller.optimizer.embedding[7])
    with pytest.raises(ValueError, match="out of range"):
        controller.trail(10_000)


def test_zoom_redraws_the_range_and_reset_view_goes_back(controller):
    whole = controller.frame()
    x, y = controller.optimizer.embedding[:, 0], controller.optimizer.embedding[:, 1]
    x_range, y_range = (float(x.min()), float(np.median(x))), (float(y.min()), float(np.median(y)))
    assert controller.zoom(x_range, y_range) == (x_range, y_range) == controller.view_range
    controller.wait()
    zoomed = controller.frame()
    assert not np.array_equal(zoomed, whole)
    controller.step(1)
    assert controller.view_range == (x_range, y_range)  # kept while the layout moves
    controller.reset()  # epoch 0 and the whole layout together
    assert controller.view_range is None and np.array_equal(controller.frame(), whole)
    controller.zoom(x_range, y_range)
    controller.wait()
    assert np.array_equal(controller.frame(), zoomed)  # same layout, same range, same picture
    controller.reset_view()
    controller.wait()
    assert controller.view_range is None and np.array_equal(controller.frame(), whole)
    for x_bad, message in (
        ((1, 1), "x_range=.*low < high"),
        ((1, 0), "x_range=.*low < high"),  # reversed: refused, as everywhere (_validation.check_range)
        ((0, np.inf), "x_range=.*finite"),
        ("wide", "x_range=.*pair"),
    ):
        with pytest.raises(ValueError, match=message):
            controller.zoom(x_bad, (0, 1))
    with pytest.raises(ValueError, match=r"view_range=.*\(\(x0, x1\), \(y0, y1\)\)"):
        controller.view_range = 5
    assert controller.view_range is None  # a refused range changes nothing


def test_select_validates_and_normalises_indices(controller):
    assert controller.select([5, 3, 3]).tolist() == [3, 5] and controller.selection.dtype == np.int64
    for bad, message in (
        ([600], "out of range"),
        ([-1], "out of range"),
        (np.array([1.5]), "dtype float64"),
        (np.ones(600, bool), "np.flatnonzero"),
        ([[1, 2]], "one-dimensional"),
    ):
        with pytest.raises(ValueError, match=message):
            controller.select(bad)
    assert controller.selection.tolist() == [3, 5]  # unchanged by the refusals
    assert controller.select([]).size == 0
    controller.select([4])
    assert controller.select(None).size == 0  # None clears, as an empty list does
    controller.select([4])
    controller.clear_selection()
    assert controller.selection.size == 0
    with pytest.raises(ValueError):
        controller.selection[:] = 1  # read-only: a view cannot change it behind the observers' backs


def test_the_grid_shares_one_selection_and_one_view_range(blobs_small):
    X, y = blobs_small
    grid = GridController(
        X, n_chunks=[1, 8], random_state=0, labels=y, n_neighbors=10, n_epochs=60, epochs_per_frame=30, panel_size=32
    )
    try:
        grid.start()
        grid.run()
        first = grid.flung(0)
        assert sorted(first) == list(np.flatnonzero(grid.runs[0].mask))
        assert grid.select(first).tolist() == sorted(first.tolist())
        with pytest.raises(ValueError, match="cell=2"):
            grid.flung(2)
        whole = grid.images()
        grid.zoom((-1, 1), (-1, 1))
        zoomed = grid.images()
        assert all(not np.array_equal(a, b) for a, b in zip(whole, zoomed, strict=True))
        grid.set(n_chunks=[2])  # the same graph: selection and zoom stay
        assert grid.selection.tolist() == sorted(first.tolist()) and grid.view_range == ((-1.0, 1.0), (-1.0, 1.0))
        grid.set(n_neighbors=8)  # a new graph: both go
        assert grid.selection.size == 0 and grid.view_range is None
    finally:
        grid.close()


def test_picking_by_hover_box_and_lasso(controller):
    controller.step(2)
    Y = controller.optimizer.embedding
    x, y = float(Y[11, 0]) + 1e-4, float(Y[11, 1])
    assert controller.nearest(x, y) == int(np.argmin(np.hypot(Y[:, 0] - x, Y[:, 1] - y)))
    x_range, y_range = (float(np.median(Y[:, 0])), float(Y[:, 0].max())), (float(Y[:, 1].min()), float(Y[:, 1].max()))
    inside = np.flatnonzero(Y[:, 0] >= x_range[0])
    assert 0 < inside.size < len(Y)
    assert controller.select_box(x_range, y_range).tolist() == inside.tolist() == controller.selection.tolist()
    lo, hi = Y.min(axis=0) - 1, Y.max(axis=0) + 1  # a lasso around everything
    everything = controller.select_lasso([lo[0], hi[0], hi[0], lo[0]], [lo[1], lo[1], hi[1], hi[1]])
    assert everything.tolist() == list(range(len(Y)))
    with pytest.raises(ValueError, match="cell=1"):
        controller.nearest(0, 0, cell=1)


def test_a_box_drawn_in_one_cell_selects_the_same_points_in_every_cell(blobs_small):
    X, y = blobs_small
    grid = GridController(X, n_chunks=[1, 8], random_state=0, labels=y, n_neighbors=10, n_epochs=20, panel_size=32)
    try:
        grid.start()
        grid.run()
        Y = grid.runs[1].optimizer.embedding
        x_range = (float(np.median(Y[:, 0])), float(Y[:, 0].max()))
        y_range = (float(Y[:, 1].min()), float(Y[:, 1].max()))
        picked = grid.select_box(x_range, y_range, cell=1)
        assert picked.tolist() == np.flatnonzero(Y[:, 0] >= x_range[0]).tolist()
        assert grid.nearest(*Y[5, :2], cell=1) == 5
        with pytest.raises(ValueError, match="cell=2"):
            grid.select_box(x_range, y_range, cell=2)
    finally:
        grid.close()


@pytest.mark.gpu
def test_inspect_zoom_and_picking_on_the_gpu(blobs_small):
    X, y = blobs_small
    c = ExplorerController(X, labels=y, device="gpu", strategy="buffered", n_neighbors=10, n_epochs=40, size=64)
    try:
        assert c.wait().error == ""
        c.play(epochs=3)
        hub = int(np.argmax(c.graph.degree))
        info = c.inspect(hub)
        assert info.max_edges_in_one_chunk == info.degree and set(info.flagged) == {"neighbors", "radius"}
        c.set(strategy="chunked", n_chunks=8)
        assert c.point.max_edges_in_one_chunk < info.degree
        epochs, positions = c.trail(hub)
        assert epochs.tolist() == [0] and positions.shape == (1, 2)  # the restart began a new recording
        assert isinstance(c.flung(), np.ndarray)
        Y = c.optimizer.embedding
        assert c.nearest(*Y[5, :2]) == 5
        picked = c.select_box(
            (float(Y[:, 0].min()), float(Y[:, 0].max())), (float(Y[:, 1].min()), float(Y[:, 1].max()))
        )
        assert isinstance(picked, np.ndarray) and picked.size == len(Y)
        whole = c.frame()
        c.zoom((float(Y[:, 0].min()), float(np.median(Y[:, 0]))), (float(Y[:, 1].min()), float(Y[:, 1].max())))
        c.wait()
        assert not np.array_equal(c.frame(), whole)
    finally:
        c.close()


def test_a_value_a_control_cannot_show_is_reported_not_raised():
    ipywidgets = pytest.importorskip("ipywidgets")
    model, menu, errors = _Model(), ipywidgets.Dropdown(options=[3, 4], description="count"), []
    link(model, "value", menu, on_error=errors.append)
    model.value = 9  # not one of the menu's options: the model keeps it, the menu its entry, the error is said
    assert model.value == 9 and menu.value == 3 and "count=9 cannot be shown" in str(errors[-1])
    menu.close()
