"""How long a panel lives: a panel the user drops (a notebook cell run again) is collected, its worker thread
ends and its widgets leave ipywidgets' registry; a panel still held keeps working. The tests of dropped and
closed panels failed before the fix: the worker thread, and ipywidgets' registry through the widgets'
callbacks, held the panel (its thread, optimizer and frames) for the kernel's life, even after close(). The
tests of held panels and of the worker's semantics guard what the fix must keep.

A panel on screen lives even if nothing else refers to it (``display(Explorer(X))``), until the frontend
reports its views gone or it is closed. The tests of displayed panels failed before that (a displayed,
unnamed panel was collected at once and its widgets closed under the user's eyes); they display a panel as
IPython's display() does (its ``_repr_mimebundle_``) and play the frontend's part by setting the top widget's
``_view_count`` as its messages would (test_browser.py has the real thing)."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import numpy as np
import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("datashader")

from ipywidgets.widgets import widget as ipywidget

from umapviz.graph.knn import knn_cpu as knn_mod
from umapviz.widgets import (
    Explorer,
    compare,
)
from umapviz.widgets.worker import Worker

SMALL = {"n_neighbors": 10, "n_epochs": 40, "size": 64}
LONG = {"n_neighbors": 10, "n_epochs": 100_000, "size": 64}
TIMEOUT = 60  # seconds; a passing test needs a fraction of one


def _registered() -> set[str]:
    return set(ipywidget._instances)


def _left_open(before: set[str]) -> str:
    """'' when no widget was registered since ``before``; else how many, and of which kinds."""
    left = [type(ipywidget._instances[k]).__name__ for k in _registered() - before if k in ipywidget._instances]
    return f"{len(left)} widgets left open: {sorted(set(left))}" if left else ""


def _collected(ref: weakref.ref, thread: threading.Thread) -> bool:
    """Collect garbage until the panel behind ``ref`` is gone and its ``thread`` has ended (a frame running
    when the collection starts holds the panel until it ends); False after TIMEOUT seconds."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        gc.collect()
        thread.join(0.05)
        if ref() is None and not thread.is_alive():
            return True
    return False


def _wait_for(predicate, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_a_dropped_explorer_is_collected_with_its_thread_and_widgets(blobs_small):
    X, y = blobs_small
    before = _registered()
    ex = Explorer(X, labels=y, **SMALL)
    ex.play(epochs=3)
    ref, thread = weakref.ref(ex), ex.controller.worker.thread
    assert _registered() - before  # the panel's widgets are registered while it lives
    del ex
    assert _collected(ref, thread)
    assert _left_open(before) == ""  # ... and closed once it is collected: no widget left behind


def test_an_explorer_dropped_while_playing_stops_and_is_collected(blobs_small):
    X, y = blobs_small
    ex = Explorer(X, labels=y, **LONG)
    ex.play(block=False)
    _wait_for(lambda ex=ex: ex.state.epoch >= 2, "the first frames")
    ref, thread = weakref.ref(ex), ex.controller.worker.thread
    del ex
    assert _collected(ref, thread)


def test_a_cell_run_again_leaves_one_panel_not_one_per_run(blobs_small):
    X, y = blobs_small
    threads = []
    for _ in range(5):  # as `ex = Explorer(...)` in a cell run five times
        ex = Explorer(X, labels=y, **SMALL)
        ex.wait()
        threads.append(ex.controller.worker.thread)
    last = ex
    del ex
    for thread in threads[:-1]:
        deadline = time.monotonic() + TIMEOUT
        while thread.is_alive() and time.monotonic() < deadline:
            gc.collect()
            thread.join(0.05)
        assert not thread.is_alive()
    assert threads[-1].is_alive() and last.step(2).epoch == 2  # the one still held works
    last.close()


def test_a_dropped_comparison_is_collected_with_its_thread_and_widgets(blobs_small):
    X, y = blobs_small
    before = _registered()
    grid = compare(
        X,
        labels=y,
        n_chunks=[1, 4],
        random_state=0,
        n_neighbors=10,
        n_epochs=100_000,
        epochs_per_frame=1,
        panel_size=48,
    )  # autoplay: dropped while it runs
    _wait_for(lambda grid=grid: grid.runs and grid.runs[0].epoch >= 2, "the first frames")
    ref, thread = weakref.ref(grid), grid.controller.worker.thread
    del grid
    assert _collected(ref, thread)
    assert _left_open(before) == ""


@pytest.mark.parametrize("make", ["explorer", "comparison"])
def test_close_closes_every_widget_and_lets_the_panel_go(blobs_small, make):
    X, y = blobs_small
    before = _registered()
    if make == "explorer":
        panel = Explorer(X, labels=y, **SMALL)
        panel.wait()
    else:
        panel = compare(X, labels=y, n_chunks=[1, 4], random_state=0, n_neighbors=10, n_epochs=6, panel_size=48).run()
        panel.set(n_chunks=[2, 8, 16])  # new panels in the grid: closed as well, the old ones at once
    panel.close()
    assert _left_open(before) == ""  # close() used to close the top box only: ~85 widgets stayed open
    ref, thread = weakref.ref(panel), panel.controller.worker.thread
    del panel
    assert _collected(ref, thread)


@pytest.mark.parametrize("make", ["explorer", "comparison"])
def test_close_during_a_graph_build_stops_the_build_at_its_next_tile(make, monkeypatch):
    """close() during a slow build returned at once, but the build ran on to its end in the background (up to
    half a minute of both cores for the largest exact builds). Now the exact kNN asks the closed worker before
    each tile."""
    X = np.random.default_rng(31).normal(size=(900, 12)).astype(np.float32)  # not cached by any other test
    monkeypatch.setattr(knn_mod, "_TILE_BYTES", 4 * 900 * 30)  # tiles of 30 rows: 30 of them
    tiles, started, release = [], threading.Event(), threading.Event()
    select = knn_mod._select_candidates

    def slow_select(*args):
        tiles.append(1)
        started.set()
        release.wait(TIMEOUT)  # the first tile waits until the panel is closed
        return select(*args)

    monkeypatch.setattr(knn_mod, "_select_candidates", slow_select)
    if make == "explorer":
        panel = Explorer(X, n_neighbors=10, n_epochs=20, size=48)
    else:
        panel = compare(X, n_chunks=[1, 4], random_state=0, n_neighbors=10, n_epochs=6, panel_size=48)
    assert started.wait(TIMEOUT)
    panel.close()
    release.set()
    panel.controller.worker.thread.join(TIMEOUT)
    assert not panel.controller.worker.thread.is_alive()
    assert len(tiles) == 1  # stopped before the second of 30 tiles


def test_a_held_panel_keeps_playing_through_garbage_collections(blobs_small):
    X, y = blobs_small
    ex = Explorer(X, labels=y, **LONG)
    grid = compare(
        X,
        labels=y,
        n_chunks=[1, 4],
        random_state=0,
        n_neighbors=10,
        n_epochs=100_000,
        epochs_per_frame=1,
        panel_size=48,
    )
    try:
        ex.play(block=False)
        _wait_for(lambda: ex.state.epoch >= 2 and grid.runs and grid.runs[0].epoch >= 2, "the first frames")
        for _ in range(3):
            gc.collect()
        epoch, grid_epoch = ex.state.epoch, grid.runs[0].epoch
        _wait_for(lambda: ex.state.epoch >= epoch + 3 and grid.runs[0].epoch >= grid_epoch + 3, "more frames")
        assert ex.state.running and grid.controller.worker.playing
        assert ex.controller.worker.thread.is_alive() and grid.controller.worker.thread.is_alive()
        ex.widgets["pause"].click()  # the buttons still reach a held panel
        grid.widgets["pause"].click()
        assert not ex.pause().running and not grid.pause().controller.worker.playing
    finally:
        ex.close()
        grid.close()


# -- panels on screen: kept while displayed, even unnamed --------------------------------------------------


def _display(panel) -> None:
    """What IPython's display() does to a panel: format it, through its ``_repr_mimebundle_``; keep nothing."""
    from IPython.core.formatters import DisplayFormatter  # noqa: PLC0415

    DisplayFormatter().format(panel)


def _frontend_counts(widget, *counts: int) -> None:
    """Play the frontend: each of its views sets the model's ``_view_count`` one up when displayed and one
    down when removed (a cleared cell output), in a comm message that ipywidgets applies with set_state."""
    for count in counts:
        widget.set_state({"_view_count": count})


def _show_unnamed(make: str, X, y, **options) -> tuple[weakref.ref, threading.Thread, object]:
    """Make a panel and display it in a helper function, as ``display(Explorer(X))`` does: nothing refers to
    it afterwards. Returns a weak reference to it, its thread and its top widget."""
    if make == "explorer":
        panel = Explorer(X, labels=y, **SMALL, **options)
    else:
        panel = compare(
            X,
            labels=y,
            n_chunks=[1, 4],
            random_state=0,
            n_neighbors=10,
            n_epochs=6,
            panel_size=48,
            autoplay=False,
            **options,
        )
    panel.controller.worker.wait_idle(TIMEOUT)  # built: no queued job (which holds its panel) keeps it alive from here
    _display(panel)
    return weakref.ref(panel), panel.controller.worker.thread, panel.panel


def _still_alive(shown: list) -> bool:
    for _ in range(3):
        gc.collect()
    return all(ref() is not None and thread.is_alive() for ref, thread, _ in shown)


def test_displayed_explorers_nothing_refers_to_stay_usable_until_their_views_are_gone(blobs_small):
    X, y = blobs_small
    before = _registered()
    shown = [_show_unnamed("explorer", X, y, strategy=s) for s in ("buffered", "chunked")]
    assert _still_alive(shown)  # before: collected at once, its panel closed on screen
    for ref, _, top in shown:
        assert top.comm is not None  # its widgets are open
        ref().widgets["step"].click()  # the buttons reach it ...
        assert ref().wait(TIMEOUT).epoch == 1
        assert ref().set(n_epochs=20).strategy in ("buffered", "chunked")  # ... and so do its methods
        assert ref().play(epochs=2).epoch == 2
    assert _still_alive(shown)

    ref, thread, top = shown.pop(0)
    _frontend_counts(top, 1, 2, 1)  # its view appeared, then a second one (displayed twice), then one went
    assert _still_alive([(ref, thread, top)])
    _frontend_counts(top, 0)  # the last view went: its cell output cleared
    assert _collected(ref, thread)
    assert top.comm is None  # its widgets closed with it
    assert _still_alive(shown)  # the other one is still on screen
    ref, thread, top = shown.pop()
    _frontend_counts(top, 1, 0)
    assert _collected(ref, thread)
    assert _left_open(before) == ""


def test_a_displayed_comparison_nothing_refers_to_stays_usable_until_its_view_is_gone(blobs_small):
    X, y = blobs_small
    before = _registered()
    shown = [_show_unnamed("comparison", X, y)]
    assert _still_alive(shown)
    ref, thread, top = shown[0]
    ref().widgets["run"].click()
    assert ref().controller.worker.wait_idle(TIMEOUT) and [run.epoch for run in ref().runs] == [6, 6]
    assert ref().set(n_chunks=[2]).run(epochs=3).table()["epoch"].tolist() == [3]
    assert _still_alive(shown)
    _frontend_counts(top, 1)
    assert _still_alive(shown)
    _frontend_counts(top, 0)
    assert _collected(ref, thread)
    assert _left_open(before) == ""


@pytest.mark.parametrize("make", ["explorer", "comparison"])
def test_close_lets_a_displayed_panel_go(blobs_small, make):
    X, y = blobs_small
    before = _registered()
    ref, thread, top = _show_unnamed(make, X, y)
    assert _still_alive([(ref, thread, top)])  # no frontend counts its views: kept until close()
    ref().close()
    assert _collected(ref, thread)
    assert _left_open(before) == ""


def test_a_view_of_the_top_widget_alone_keeps_the_panel(blobs_small):
    X, y = blobs_small
    ex = Explorer(X, labels=y, **SMALL)
    ex.wait()
    ref, thread, top = weakref.ref(ex), ex.controller.worker.thread, ex.panel
    _frontend_counts(top, 1)  # display(ex.panel): a view the panel hears of from the frontend only
    del ex
    assert _still_alive([(ref, thread, top)])
    _frontend_counts(top, 0)
    assert _collected(ref, thread)


class _Owner:
    def __init__(self) -> None:
        self.frames = 0
        self.errors: list[BaseException] = []
        self.worker = Worker(self.frame, self.error, name="test-worker")

    def frame(self) -> bool:
        self.frames += 1
        return self.frames < 3

    def error(self, exc: BaseException) -> None:
        self.errors.append(exc)


def test_the_worker_holds_its_owner_during_a_job_only():
    owner = _Owner()
    started, release = threading.Event(), threading.Event()

    def job(owner=owner):  # a queued or running job holds the owner, as the panels' closures do
        started.set()
        release.wait(TIMEOUT)
        return owner.frames

    future = owner.worker.submit(job)
    ref, thread = weakref.ref(owner), owner.worker._thread
    del owner, job
    assert started.wait(TIMEOUT)
    gc.collect()
    assert ref() is not None  # the running job still needs it
    release.set()
    assert future.result(TIMEOUT) == 0
    assert _collected(ref, thread)  # once the job ran, nothing holds it


def test_the_worker_keeps_its_semantics_for_a_held_owner():
    owner = _Owner()
    try:
        results = [owner.worker.submit(lambda i=i: i) for i in range(3)]
        assert [f.result(TIMEOUT) for f in results] == [0, 1, 2]  # in order
        gate = threading.Event()
        owner.worker.submit(lambda: gate.wait(TIMEOUT))
        first, second = owner.worker.submit(lambda: "a", key="k"), owner.worker.submit(lambda: "b", key="k")
        gate.set()
        assert first.result(TIMEOUT) == second.result(TIMEOUT) == "b"  # keyed jobs coalesce
        owner.worker.play()
        assert owner.worker.wait_idle(TIMEOUT) and owner.frames == 3  # frame() False stops playing
        failing = owner.worker.submit(lambda: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            failing.result(TIMEOUT)
        assert owner.worker.wait_idle(TIMEOUT) and isinstance(owner.errors[-1], ZeroDivisionError)
    finally:
        owner.worker.close()
    owner.worker._thread.join(TIMEOUT)
    assert not owner.worker._thread.is_alive()
    with pytest.raises(RuntimeError, match="closed"):
        owner.worker.submit(lambda: None)


def test_a_widget_the_page_did_not_show_is_put_back_into_its_box_and_the_others_are_left():
    import ipywidgets as w  # noqa: PLC0415

    from umapviz.widgets.lifetime import reshow_unseen  # noqa: PLC0415

    class Unseen(w.HTML):
        needs_view = True

    shown, unseen = w.HTML("shown"), Unseen("failed view")
    inner = w.VBox([shown, unseen])
    root = w.HBox([w.Label("controls"), inner])
    changes: list = []
    inner.observe(lambda change: changes.append(change["new"]), names="children")
    root.observe(lambda change: changes.append("root changed"), names="children")
    try:
        assert reshow_unseen(root) == 1
        assert changes == [(shown,), (shown, unseen)]  # out of its box, then back in the same place: a new view
        assert inner.children == (shown, unseen)
        changes.clear()
        Unseen.needs_view = False
        assert reshow_unseen(root) == 0 and changes == []
    finally:
        for widget in (root, inner, shown, unseen):
            widget.close()


def test_a_plot_needs_a_view_until_the_page_counts_one():
    pytest.importorskip("panel")
    from umapviz.widgets.plot import Plot  # noqa: PLC0415

    plot = Plot(200, 200)
    widget = plot.widget
    try:
        assert widget.needs_view  # open, and no view counted yet (or its view failed)
        widget._view_count = 1  # as the page reports a view
        assert not widget.needs_view
        widget._view_count = 0
        plot.close()
        assert not widget.needs_view  # closed: nothing to show
    finally:
        plot.close()
