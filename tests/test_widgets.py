"""The Explorer and the comparison grid, headless: no browser, no kernel, small data, few epochs."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("datashader")

from umapviz import _backend, datasets
from umapviz.graph.start import spectral_init
from umapviz.optimize import chunks
from umapviz.optimize.optimizer import SEQUENTIAL_GPU_EDGES
from umapviz.render import Recording
from umapviz.widgets import Explorer, ExplorerError, compare, session
from umapviz.widgets.compare.grid import TABLE_COLUMNS, configurations
from umapviz.widgets.explorer import panel, play_jobs
from umapviz.widgets.explorer.params import ExplorerParams
from umapviz.widgets.status import ParameterError

SMALL = {"n_neighbors": 10, "n_epochs": 40, "size": 96}


@pytest.fixture
def build_calls(monkeypatch):
    """Count the graph builds the widgets ask for."""
    calls = []
    real = session.build_graph

    def counting(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(session, "build_graph", counting)
    return calls


@pytest.fixture
def explorer(blobs_small):
    X, y = blobs_small
    ex = Explorer(X, labels=y, **SMALL)
    ex.wait()  # state does not wait for the worker; the tests start from a built panel
    yield ex
    ex.close()


def test_plays_epochs_and_the_frame_changes(explorer):
    first = explorer.frame()
    assert first.shape == (96, 96, 4) and first.dtype == np.uint8
    start = explorer.state
    assert start.epoch == 0 and start.n_points == 600 and start.error == ""

    state = explorer.play(epochs=3, block=True)
    assert state.epoch == 3 and not state.running
    assert state.fingerprint != start.fingerprint
    after = explorer.frame()
    assert not np.array_equal(first, after)

    explorer.play(epochs=2, block=True)
    assert explorer.state.epoch == 5
    assert not np.array_equal(after, explorer.frame())


def test_colour_by_class_can_be_switched_off(explorer):
    with_classes = explorer.frame()
    explorer.set(colour_by_class=False)
    explorer.wait()
    density = explorer.frame()
    assert not np.array_equal(with_classes, density)
    # density only: every drawn point pixel is a shade of the blue count colour map (blue channel dominant)
    lit = density[..., :3].max(axis=2) > 0
    outlier_red = (density[..., 0] > 200) & (density[..., 1] < 80)
    points = lit & ~outlier_red
    assert points.any() and (density[..., 2][points] >= density[..., 0][points]).mean() > 0.95


def test_play_to_the_end_stops_at_n_epochs(explorer):
    explorer.set(epochs_per_frame=15)
    state = explorer.play(block=True)
    assert state.epoch == state.n_epochs == 40
    assert explorer.play(block=True).epoch == 40  # nothing left to run: no error, no change


def test_step_reset_and_replay_are_reproducible(explorer):
    start = explorer.state.fingerprint
    assert explorer.step(2).epoch == 2
    two = explorer.state.fingerprint
    assert explorer.reset().epoch == 0
    assert explorer.state.fingerprint == start
    explorer.play(epochs=2, block=True)
    assert explorer.state.fingerprint == two  # chunked is bitwise reproducible


def test_pause_stops_a_background_run(blobs_small):
    X, y = blobs_small
    ex = Explorer(X, labels=y, n_neighbors=10, n_epochs=100_000, size=64)
    try:
        ex.frame()
        ex.play(block=False)
        deadline = time.monotonic() + 30
        while ex.state.epoch < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ex.state.running
        paused = ex.pause()
        assert not paused.running
        time.sleep(0.3)
        assert ex.state.epoch == paused.epoch  # nothing ran after pause returned
        assert 2 <= paused.epoch < 100_000
    finally:
        ex.close()


def test_pause_cancels_a_play_still_waiting_behind_the_set_up(blobs_small):
    X, y = blobs_small
    ex = Explorer(X, labels=y, **SMALL)
    try:
        ex.play(block=False)  # queued behind building the graph
        ex.pause()
        state = ex.wait()
        assert state.epoch == 0 and not state.running and state.error == ""
    finally:
        ex.close()


def test_layout_changes_restart_without_rebuilding_the_graph(blobs_small, build_calls):
    X, y = blobs_small
    ex = Explorer(X, labels=y, **SMALL)
    try:
        ex.play(epochs=3, block=True)
        assert len(build_calls) == 1

        state = ex.set(n_chunks=4)
        assert state.epoch == 0 and state.n_chunks == 4 and state.n_chunks_used == 4

        ex.widgets["n_chunks_mode"].value = "degree"  # as if chosen in the panel
        ex.wait()
        assert ex.state.n_chunks == "degree" and ex.state.epoch == 0

        ex.widgets["random_state"].value = 7
        ex.widgets["strategy"].value = "buffered"
        ex.wait()
        assert (ex.state.seed, ex.state.strategy, ex.state.n_chunks_used) == (7, "buffered", 1)
        assert len(build_calls) == 1  # still the first graph

        ex.widgets["n_neighbors"].value = 8  # a graph parameter: this one rebuilds
        ex.wait()
        assert len(build_calls) == 2 and build_calls[-1]["n_neighbors"] == 8
        assert ex.graph.knn_indices.shape[1] == 8
    finally:
        ex.close()


def test_a_restart_while_playing_keeps_playing_on_the_new_layout(blobs_small, build_calls):
    X, y = blobs_small
    ex = Explorer(X, labels=y, n_neighbors=10, n_epochs=100_000, size=64)
    try:
        ex.play(block=False)
        deadline = time.monotonic() + 30
        while ex.state.epoch < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        ex.set(block=False, n_chunks=2)
        while ex.state.n_chunks != 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ex.state.n_chunks_used == 2 and ex.state.running
        ex.pause()
        assert len(build_calls) == 1
    finally:
        ex.close()


def test_bad_data_shows_an_error_and_the_panel_recovers(blobs_small):
    X, y = blobs_small
    bad = np.full((20, 3), np.nan)
    ex = Explorer(bad, size=64)  # must not raise
    try:
        ex.wait()
        assert "NaN" in ex.state.error
        assert ex.widgets["error"].layout.display == "block" and "NaN" in ex.widgets["error"].value
        with pytest.raises(ExplorerError, match="NaN"):
            ex.play(epochs=1, block=True)

        ex.set(data=X, n_neighbors=10, n_epochs=20)
        assert ex.state.error == "" and ex.widgets["error"].layout.display == "none"
        assert ex.play(epochs=2).epoch == 2
    finally:
        ex.close()


def test_bad_parameters_show_an_error_instead_of_raising(blobs_small):
    """What only the graph can judge (too many chunks for it) is shown in the panel, not raised."""
    X, _ = blobs_small
    ex = Explorer(X, strategy="buffered", size=64, n_neighbors=10, n_epochs=20)
    try:
        ex.wait()
        ex.set(block=False, n_chunks=10**9, strategy="chunked")
        ex.wait()
        assert "n_chunks" in ex.state.error  # too many chunks for this graph: shown, not raised
        assert ex.state.strategy == "buffered"  # the last good layout stays on screen
    finally:
        ex.close()
    with pytest.raises(TypeError, match="n_chunk"):
        Explorer(X, n_chunk=4)  # a misspelt keyword is a programming error, raised at once


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"strategy": "fastest"}, "strategy='fastest' must be one of 'sequential', 'hogwild', 'buffered'"),
        ({"n_chunks": 0}, "n_chunks=0 must be an int >= 1 or one of 'auto', 'shipped', 'degree'"),
        ({"n_chunks": "automatic"}, "n_chunks='automatic' must be an int >= 1 or one of 'auto'"),
        ({"n_epochs": 0}, r"n_epochs=0 must be a positive integer \(1 or more\) or None"),
        ({"outlier_method": "radious"}, "outlier_method='radious' must be one of 'neighbors', 'radius'"),
        ({"device": "tpu"}, "device='tpu' must be one of 'auto', 'cpu', 'gpu' or None"),
        ({"lock_view": "yes"}, "lock_view='yes' must be True or False"),
    ],
)
def test_a_value_the_trait_can_judge_is_refused_at_once_naming_what_it_takes(blobs_small, params, message):
    """strategy was free text and most traits Any: a misspelt strategy or n_chunks=0 reached the optimizer and
    came back as a status line; now the trait refuses it (ParameterError, a ValueError), changing nothing."""
    X, _ = blobs_small
    with pytest.raises(ParameterError, match=message):
        Explorer(X, **{"size": 64, "n_neighbors": 10, "n_epochs": 20, **params})
    model = ExplorerParams(strategy="buffered")
    with pytest.raises(ValueError, match=message):
        with model.hold_trait_notifications():
            model.strategy = "vertex"  # set first, rolled back with the refused one
            for name, value in params.items():
                setattr(model, name, value)
    assert model.strategy == "buffered"


def test_the_traits_take_numpy_integers_as_ints_and_derive_the_rules_from_the_optimizer():
    model = ExplorerParams(n_chunks=np.int64(16), n_epochs=np.int32(30), size=np.uint16(64))
    assert (model.n_chunks, model.n_epochs, model.size) == (16, 30, 64)
    assert all(type(v) is int for v in (model.n_chunks, model.n_epochs, model.size))
    assert panel.N_CHUNKS_MODES[:-1] == tuple((panel.RULE_LABELS[r], r) for r in chunks.RULES)
    for rule in chunks.RULES:
        model.n_chunks = rule  # every rule the optimizer knows is a value the trait takes


def test_missing_gpu_is_reported_in_the_panel(blobs_small, monkeypatch):

    if _backend.gpu_available():
        pytest.skip("a GPU is present")
    X, _ = blobs_small
    ex = Explorer(X, device="gpu", size=64, n_neighbors=10, n_epochs=20)
    try:
        ex.wait()
        assert "GPU" in ex.state.error and "device='cpu'" in ex.state.error
    finally:
        ex.close()


def test_recording_scrub_and_export(explorer, tmp_path):
    epoch0 = explorer.frame()
    explorer.play(epochs=3, block=True)
    rec = explorer.recording()
    assert list(rec.epochs) == [0, 1, 2, 3]
    assert rec.metadata["strategy"] == "chunked"

    explorer.widgets["scrub"].value = 0  # look back at the start, as a user dragging the slider would
    explorer.wait()
    assert np.array_equal(explorer.frame(), epoch0)
    assert "recorded epoch 0" in explorer.widgets["note"].value
    assert explorer.state.epoch == 3  # scrubbing does not move the layout

    for name in ("frame.png", "run.gif", "run.html", "run.npz"):
        path = explorer.export(tmp_path / name)
        assert path.stat().st_size > 100
    assert list(Recording.load(tmp_path / "run.npz").epochs) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="ending in"):
        explorer.export(tmp_path / "run.bmp")


def test_explorer_on_a_prebuilt_graph(small_graph, build_calls):
    ex = Explorer(small_graph, size=64)
    try:
        assert ex.play(epochs=2).epoch == 2
        assert ex.state.dataset == session.GRAPH_SOURCE and ex.state.n_epochs == 60
        assert ex.widgets["n_neighbors"].disabled  # no points to rebuild from
        assert build_calls == []
    finally:
        ex.close()


def test_frame_log_thins_to_its_budget():
    log = session.FrameLog(budget_bytes=10 * (100 * 2 * 4 + 100))
    for epoch in range(40):
        log.add(epoch, np.zeros((100, 2), np.float32), np.zeros(100, bool))
    assert log.nbytes <= log.budget_bytes
    assert log.epochs[0] == 0 and log.epochs[-1] == 39  # first and last survive thinning
    assert np.all(np.diff(log.epochs) > 0)


def test_configurations_vary_n_chunks_only_for_chunked():
    configs = configurations(["chunked", "buffered"], [1, 4], [0, 1])
    assert [(c.strategy, c.n_chunks, c.random_state) for c in configs] == [
        ("chunked", 1, 0),
        ("chunked", 1, 1),
        ("chunked", 4, 0),
        ("chunked", 4, 1),
        ("buffered", 1, 0),
        ("buffered", 1, 1),
    ]


def test_a_numpy_generator_as_random_state_is_drawn_once_and_shown(blobs_small):
    X, y = blobs_small
    expected = int(np.random.RandomState(7).randint(0, 2**32, dtype=np.uint32))
    ex = Explorer(X, labels=y, random_state=np.random.RandomState(7), **SMALL)
    try:
        ex.wait()
        # the box shows the seed in use
        assert ex.widgets["random_state"].value == expected and ex.optimizer.seed == expected
        first = ex.step(3).fingerprint
        ex.reset()
        assert ex.step(3).fingerprint == first  # a restart repeats the drawn seed instead of drawing again
        ex.set(random_state=np.random.default_rng(3))
        assert ex.optimizer.seed == int(np.random.default_rng(3).integers(0, 2**32, dtype=np.uint32))
    finally:
        ex.close()
    configs = configurations("chunked", 4, [np.random.default_rng(1), 5])
    assert [c.random_state for c in configs] == [int(np.random.default_rng(1).integers(0, 2**32, dtype=np.uint32)), 5]


def test_compare_table_has_one_row_per_configuration(blobs_small, build_calls):
    X, y = blobs_small
    grid = compare(
        X,
        n_chunks=[1, 4],
        random_state=[0, 1],
        strategy=["chunked", "buffered"],
        labels=y,
        n_neighbors=10,
        n_epochs=12,
        epochs_per_frame=6,
        panel_size=64,
    )
    try:
        table = grid.run(block=True).table()
        assert list(table.columns) == list(TABLE_COLUMNS)
        assert len(table) == 6 and len(build_calls) == 1  # one graph for every configuration
        assert (table["epoch"] == 12).all()
        assert table["trustworthiness"].between(0.5, 1.0).all()
        by = {(r.strategy, r.n_chunks, r.random_state): r for r in table.itertuples()}
        # chunked with one chunk *is* buffered: the same bytes. Another seed gives other bytes.
        assert by[("chunked", 1, 0)].fingerprint == by[("buffered", 1, 0)].fingerprint
        assert by[("chunked", 1, 0)].fingerprint != by[("chunked", 1, 1)].fingerprint
        assert by[("chunked", 4, 0)].n_chunks_used == 4
        frames = grid.frames()
        assert len(frames) == 6 and all(f.shape == (64, 64, 4) for f in frames)
    finally:
        grid.close()


def test_compare_reports_bad_data_in_the_panel():
    grid = compare(np.full((20, 3), np.inf), n_chunks=[1], random_state=[0], panel_size=64)
    try:
        with pytest.raises(RuntimeError, match="infinite|NaN"):
            grid.table()
        assert "umapviz" in grid.widgets["error"].value
    finally:
        grid.close()


def test_switching_dataset_in_the_menu_rebuilds_and_can_switch_back(blobs_small, build_calls):
    X, _ = blobs_small
    ex = Explorer(X, n_samples=300, size=64, n_neighbors=10, n_epochs=20)
    try:
        ex.wait()
        assert ex.state.dataset == session.ARRAY_SOURCE and ex.state.n_points == 600
        ex.widgets["dataset"].value = "moons"
        ex.wait()
        assert (ex.state.dataset, ex.state.n_points, ex.state.error) == ("moons", 300, "")
        assert ex.widgets["busy_box"].layout.display == "none"  # the progress indicator is gone once built
        ex.widgets["dataset"].value = session.ARRAY_SOURCE  # back to the user's own array
        ex.wait()
        assert ex.state.n_points == 600 and len(build_calls) == 3
    finally:
        ex.close()


def test_initial_layouts_are_cached_on_disk_and_checked_on_read(small_graph, tmp_path, monkeypatch):

    monkeypatch.setenv("UMAPVIZ_CACHE_DIR", str(tmp_path))
    calls = []
    monkeypatch.setattr(session, "spectral_init", lambda *a, **k: calls.append(a) or spectral_init(*a, **k))
    session._INIT_MEMORY.clear()
    first = session.initial_layout(small_graph, "spectral", 3)
    assert np.array_equal(first, spectral_init(small_graph, 2, 3)) and len(calls) == 1
    (path,) = tmp_path.glob("init-*.npz")

    session._INIT_MEMORY.clear()
    assert np.array_equal(session.initial_layout(small_graph, "spectral", 3), first) and len(calls) == 1

    path.write_bytes(path.read_bytes()[:-40])  # a damaged file is recomputed, not trusted
    session._INIT_MEMORY.clear()
    assert np.array_equal(session.initial_layout(small_graph, "spectral", 3), first) and len(calls) == 2


# -- found by a robustness review (2026-12-02): each failed before its fix ---------------------------------------


def test_a_passing_error_is_shown_once_and_does_not_make_later_calls_raise(explorer):
    explorer.widgets["export_path"].value = "run.bmp"  # not a format the panel exports
    explorer.widgets["export"].click()
    explorer.wait()
    assert "run.bmp" in explorer.state.error
    assert explorer.step(2).epoch == 2  # used to raise the export's error, and every call after it
    assert explorer.state.error == "" and explorer.widgets["error"].layout.display == "none"


def test_a_failed_change_raises_once_and_the_last_good_layout_stays_usable(explorer):
    with pytest.raises(ExplorerError, match="n_chunks"):
        explorer.set(n_chunks=10**9)  # more chunks than this graph has edges: only the optimizer can tell
    state = explorer.step(2)  # works on the layout still on screen, without raising the old error
    assert state.epoch == 2 and "n_chunks" in state.error  # the bad setting is still shown until mended
    assert explorer.set(n_chunks=4).error == ""


def test_the_dataset_menu_gives_a_built_in_set_its_own_labels_and_the_array_its_own_back(blobs_small):
    X, y = blobs_small
    ex = Explorer(X, labels=y, n_samples=300, size=64, n_neighbors=10, n_epochs=20)
    try:
        ex.wait()
        ex.widgets["dataset"].value = "moons"  # a built-in set brings its own labels, not the array's
        ex.wait()
        assert (ex.state.dataset, ex.state.n_points, ex.state.error) == ("moons", 300, "")
        ex.widgets["dataset"].value = session.ARRAY_SOURCE
        ex.wait()
        assert ex.state.n_points == 600 and ex.state.error == ""
        assert not ex.widgets["colour_by_class"].disabled  # the labels came back with the array
        ex.set(data=X[:300])  # new data without labels: none (the old 600 would not fit)
        assert ex.state.n_points == 300 and ex.widgets["colour_by_class"].disabled
    finally:
        ex.close()


def test_data_that_fails_to_load_is_not_adopted(explorer, tmp_path):
    with pytest.raises(ParameterError, match="does not exist"):
        explorer.set(data=str(tmp_path / "nope.npy"))  # refused at once: nothing changed
    assert explorer.widgets["dataset"].value == session.ARRAY_SOURCE
    (tmp_path / "broken.npy").write_bytes(b"not an array")
    with pytest.raises(ExplorerError, match="broken.npy"):
        explorer.set(data=str(tmp_path / "broken.npy"))  # fails only when read, on the worker
    assert explorer.widgets["dataset"].value == session.ARRAY_SOURCE  # the menu shows what is on screen
    assert explorer.set(n_neighbors=8).error == ""  # a rebuild reloads the array, not the bad path
    assert explorer.state.n_points == 600


def test_a_change_while_playing_returns_once_the_new_layout_runs(explorer):
    explorer.set(n_epochs=3000)
    explorer.play(block=False)
    time.sleep(0.2)
    began = time.perf_counter()
    state = explorer.set(n_chunks=2)  # used to wait for all 3,000 epochs
    try:
        assert state.n_chunks == 2 and state.running and time.perf_counter() - began < 30
    finally:
        explorer.pause()


@pytest.mark.parametrize("action", ["reset", "step"])
def test_reset_or_step_during_play_leave_play_enabled(explorer, action):
    explorer.set(n_epochs=3000)
    explorer.widgets["play"].click()
    time.sleep(0.1)
    getattr(explorer, action)()
    assert not explorer.state.running
    assert not explorer.widgets["play"].disabled and explorer.widgets["pause"].disabled


def test_play_n_epochs_then_a_restart_plays_n_on_the_new_layout(explorer):
    explorer.set(n_epochs=3000)
    explorer.step(100)
    explorer.play(epochs=20, block=False)
    explorer.set(block=False, n_chunks=2)
    assert explorer.wait().epoch == 20  # used to run on to the old target, epoch 120


def test_step_at_the_end_says_the_layout_has_finished(explorer):
    explorer.play()
    assert explorer.step(1).epoch == 40
    assert "finished" in explorer.widgets["note"].value


def test_bad_settings_of_the_panel_itself_change_nothing(explorer, tmp_path):
    with pytest.raises(ValueError, match="epochs_per_frame"):
        explorer.set(epochs_per_frame="x", strategy="buffered")
    assert explorer.state.strategy == "chunked"
    explorer.set(outlier_method="radius")
    assert explorer.widgets["outlier_method"].value == "radius"  # the menu follows set()
    explorer.play(epochs=2)
    with pytest.raises(ValueError, match="fps"):
        explorer.export(tmp_path / "run.gif", fps=0)
    assert explorer.export(tmp_path / "run.NPZ").is_file()  # the suffix in any case
    assert len(Recording.load(tmp_path / "run.NPZ")) > 0


def test_compare_reset_after_a_failed_build_keeps_the_real_error(blobs_small):
    X, _ = blobs_small
    grid = compare(X, strategy=["chunked", "bogus"], n_epochs=12, autoplay=False, panel_size=64, n_neighbors=10)
    try:
        with pytest.raises(RuntimeError, match="bogus"):
            grid.run()
        grid.reset()  # used to replace the error with "union() needs at least one view"
        assert "bogus" in grid.error
        with pytest.raises(ValueError, match="epochs"):
            grid.run(0)
    finally:
        grid.close()


def test_controls_show_the_value_in_use_beyond_their_usual_range(explorer):
    """Sliders clamp silently: n_neighbors=150 used to show 100 while the graph used 150."""
    explorer.set(n_neighbors=150, n_epochs=2_000_000, epochs_per_frame=500, n_chunks=5000)
    assert explorer.graph.params["n_neighbors"] == 150 and explorer.state.n_chunks_used == 5000
    shown = [explorer.widgets[name].value for name in ("n_neighbors", "n_epochs", "epochs_per_frame")]
    assert shown == [150, 2_000_000, 500]
    assert [explorer.controller.params.n_neighbors, explorer.controller.params.epochs_per_frame] == [150, 500]
    assert explorer.widgets["n_chunks"].value == 5000


def test_a_layout_the_panel_cannot_draw_is_refused_before_it_replaces_the_shown_one(explorer):
    with pytest.raises(ExplorerError, match="n_components"):
        explorer.set(n_components=3)
    assert explorer.optimizer.n_components == 2 and explorer.step(1).epoch == 1


# -- found by the widgets audit (audit-widgets): each failed before its fix ---------------------------------------


def test_an_export_click_after_a_failed_one_clears_its_error_and_a_failed_one_its_old_note(explorer, tmp_path):
    """The banner of a failed export stayed up beside "saved ..." of the next, successful one; a failed export
    left the previous export's "saved ..." note, as if it had been written."""
    explorer.widgets["export_path"].value = str(tmp_path / "first.npz")
    explorer.widgets["export"].click()
    explorer.wait()
    assert "saved" in explorer.widgets["note"].value and explorer.state.error == ""
    explorer.widgets["export_path"].value = "run.bmp"
    explorer.widgets["export"].click()
    explorer.wait()
    assert "run.bmp" in explorer.state.error and "saved" not in explorer.widgets["note"].value
    explorer.widgets["export_path"].value = str(tmp_path / "second.npz")
    explorer.widgets["export"].click()
    explorer.wait()
    assert (tmp_path / "second.npz").is_file() and "second.npz" in explorer.widgets["note"].value
    assert explorer.state.error == "" and explorer.widgets["error"].layout.display == "none"


def test_the_panels_own_sizes_and_counts_are_checked_when_made(blobs_small):
    """epochs_per_frame=0 or -2 ran as 1 and 2.7 as 2 without a word, "x" failed inside int(), and size=0 was
    reported as "width=0"; a NumPy integer was refused as "must be a positive integer"."""
    X, y = blobs_small
    for bad in (
        {"size": 0},
        {"size": "big"},
        {"epochs_per_frame": 0},
        {"epochs_per_frame": 2.7},
        {"epochs_per_frame": "x"},
    ):
        name = next(iter(bad))
        with pytest.raises(ValueError, match=f"{name}=.* must be a positive integer"):
            Explorer(X, labels=y, **{**SMALL, **bad})
        with pytest.raises(ValueError, match=f"{'panel_size' if name == 'size' else name}=.* must be a positive"):
            compare(X, **{"panel_size" if name == "size" else name: bad[name]}, autoplay=False)
    for bad in ({"columns": -1}, {"trust_sample": 0}):
        with pytest.raises(ValueError, match=f"{next(iter(bad))}=.* must be a positive integer"):
            compare(X, autoplay=False, **bad)
    ex = Explorer(X, labels=y, epochs_per_frame=np.int64(2), **SMALL)
    try:
        assert ex.play(epochs=np.int64(4)).epoch == 4 and ex.step(np.int64(1)).epoch == 5
    finally:
        ex.close()


def test_a_dataframe_with_a_text_column_names_it(blobs_small):
    """The panel's own check said "got dtype object. Convert it with np.asarray(X, dtype=float)", which fails on
    text; it now runs the graph's checks, which name the column."""
    pd = pytest.importorskip("pandas")
    X, _ = blobs_small
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])]).assign(city="Oslo")
    ex = Explorer(frame, **SMALL)
    try:
        ex.wait()
        assert "non-numeric columns ('city')" in ex.state.error
    finally:
        ex.close()


def test_labels_with_missing_values_are_refused_by_name_and_mixed_classes_are_numbered(blobs_small):
    """A pandas column of classes with a gap (None, NaN, pandas.NA) crashed in np.unique ("'<' not supported
    between instances of 'NoneType' and 'str'"), and float NaN became a class, drawn in a colour of its own: now
    both panels name the missing points and the fix, as the file readers do. Mixed classes (1 and "a") crashed
    the same way and are now numbered by their text."""
    pd = pytest.importorskip("pandas")
    X, y = blobs_small
    names = np.array(["a", "b", "c"], dtype=object)[y % 3]
    gaps = [
        np.where(np.arange(len(X)) % 50 == 7, None, names),
        pd.Series(names).where(np.arange(len(X)) != 7),
        pd.Series(names, dtype="string").where(np.arange(len(X)) != 7),
        np.where(np.arange(len(X)) == 7, np.nan, y),
    ]
    for labels in gaps:
        ex = Explorer(X, labels=labels, **SMALL)  # a data problem is shown in the panel, not raised
        grid = compare(X, labels=labels, autoplay=False, panel_size=64, n_neighbors=10, n_epochs=12)
        try:
            ex.wait()
            assert "missing value(s) (None or NaN), at points [7" in ex.state.error and "fillna" in ex.state.error
            with pytest.raises(RuntimeError, match="missing value"):
                grid.run()
            assert "fillna" in grid.error
        finally:
            ex.close()
            grid.close()
    mixed = np.full(len(X), "a", dtype=object)
    mixed[y % 2 == 0] = 1  # ints and strings in one column
    codes = session._check_labels(mixed, len(X))
    assert codes.dtype == np.int64
    np.testing.assert_array_equal(codes, y % 2 != 0)  # "1" sorts before "a"


def test_a_class_per_point_draws_and_plays_coloured_by_class(blobs_small):
    """600 classes in a 1200-pixel frame once asked for 3.2 GiB of counts and showed an error; the classes now
    share the palette's colours, counted by colour, so the panel draws and plays, with the classes and without."""
    X, _ = blobs_small
    ex = Explorer(X, labels=np.arange(len(X)), n_neighbors=10, n_epochs=20, size=1200)
    try:
        ex.wait()
        assert ex.state.error == "" and ex.widgets["error"].layout.display == "none"
        coloured = ex.frame()
        assert coloured.shape == (1200, 1200, 4) and ex.play(epochs=2).epoch == 2
        ex.widgets["colour_by_class"].value = False  # as a click on the checkbox
        ex.wait()
        assert ex.state.error == "" and ex.frame().shape == (1200, 1200, 4)
    finally:
        ex.close()


# -- Comparison.set: change a grid in place instead of making a new one ---------------------------------------


def test_compare_set_changes_the_configurations_in_place_on_the_same_graph(blobs_small, build_calls):
    X, y = blobs_small
    small = {"labels": y, "n_neighbors": 10, "n_epochs": 12, "epochs_per_frame": 6, "panel_size": 48, "autoplay": False}
    grid = compare(X, n_chunks=[1, 4], random_state=0, **small)
    try:
        assert (grid.run().table()["epoch"] == 12).all()
        old_images = list(grid.widgets["images"])
        assert grid.set(n_chunks=[2, 8, 16]) is grid
        assert [(c.strategy, c.n_chunks, c.random_state) for c in grid.configs] == [
            ("chunked", 2, 0),
            ("chunked", 8, 0),
            ("chunked", 16, 0),
        ]
        assert len(grid.widgets["images"]) == len(grid.widgets["grid"].children) == 3
        assert all(image.comm is None for image in old_images)  # the old panels are closed
        table = grid.table()
        assert (table["epoch"] == 0).all() and list(table["n_chunks_used"]) == [2, 8, 16]
        assert len(build_calls) == 1  # the graph is kept
        done = grid.run().table()
        fresh = compare(X, n_chunks=[2, 8, 16], random_state=0, **small)
        try:  # the same layouts as a new comparison of these settings
            assert list(fresh.run().table()["fingerprint"]) == list(done["fingerprint"])
        finally:
            fresh.close()

        grid.set(strategy=["buffered", "chunked"], n_chunks=4, random_state=[1, 2], n_epochs=6, epochs_per_frame=2)
        assert [(c.strategy, c.n_chunks, c.random_state) for c in grid.configs] == [
            ("buffered", 1, 1),
            ("buffered", 1, 2),
            ("chunked", 4, 1),
            ("chunked", 4, 2),
        ]
        table = grid.run().table()
        assert (table["epoch"] == 6).all() and (table["n_epochs"] == 6).all()
        assert len(build_calls) == 2  # the fresh grid's build only

        grid.set(n_neighbors=8)  # a graph parameter: a new graph
        assert len(build_calls) == 3 and grid.graph.knn_indices.shape[1] == 8
        assert len(grid.frames()) == 4
    finally:
        grid.close()


def test_compare_set_while_running_starts_again_paused(blobs_small):
    X, y = blobs_small
    grid = compare(
        X,
        labels=y,
        n_chunks=[1, 4],
        random_state=0,
        n_neighbors=10,
        n_epochs=100_000,
        epochs_per_frame=1,
        panel_size=48,
    )  # autoplay
    try:
        deadline = time.monotonic() + 60
        while not (grid.runs and grid.runs[0].epoch >= 2) and time.monotonic() < deadline:
            time.sleep(0.02)
        grid.run(block=False)  # a run queued just before set() does not outlive it either
        grid.set(n_chunks=[2])
        assert not grid.controller.worker.playing and [run.epoch for run in grid.runs] == [0]
        assert grid.run(epochs=3).table()["epoch"].tolist() == [3]
    finally:
        grid.close()


def test_compare_set_refuses_bad_values_at_once_and_failed_layouts_keep_the_last_good_ones(blobs_small, build_calls):
    X, y = blobs_small
    grid = compare(
        X,
        labels=y,
        n_chunks=[1, 4],
        random_state=0,
        n_neighbors=10,
        n_epochs=12,
        epochs_per_frame=6,
        panel_size=48,
        autoplay=False,
    )
    try:
        shown = list(grid.run(epochs=6).table()["fingerprint"])
        with pytest.raises(ValueError, match="nothing to compare"):
            grid.set(n_chunks=[])
        with pytest.raises(ValueError, match="epochs_per_frame"):
            grid.set(n_chunks=[2], epochs_per_frame=0)
        with pytest.raises(ValueError, match="outlier_method"):
            grid.set(outlier_method="radious")
        with pytest.raises(TypeError, match="n_chunk"):
            grid.set(n_chunk=2)
        assert [c.n_chunks for c in grid.configs] == [1, 4] and grid.error == ""  # nothing changed

        with pytest.raises(RuntimeError, match="bogus"):
            grid.set(strategy="bogus")
        assert "bogus" in grid.error and grid.widgets["error"].layout.display == "block"
        with pytest.raises(RuntimeError, match="NaN"):
            grid.set(data=np.full((30, 3), np.nan))
        assert [c.n_chunks for c in grid.configs] == [1, 4] and len(grid.widgets["images"]) == 2
        assert list(grid.table()["fingerprint"]) == shown  # the last good layouts, where they were
        assert grid.run().table()["epoch"].tolist() == [12, 12]  # and usable: run() does not raise the old error

        grid.set(n_neighbors=8)  # rebuilds from the data on screen, not the NaNs
        assert grid.error == "" and grid.widgets["error"].layout.display == "none"
        assert grid.graph.n_vertices == 600 and build_calls[-1]["n_neighbors"] == 8
    finally:
        grid.close()


def test_compare_set_mends_a_grid_that_failed_to_build(blobs_small):
    X, _ = blobs_small
    grid = compare(
        X, strategy=["chunked", "bogus"], n_chunks=4, n_epochs=12, autoplay=False, panel_size=48, n_neighbors=10
    )
    try:
        with pytest.raises(RuntimeError, match="bogus"):
            grid.run()
        grid.set(strategy="chunked")
        assert grid.error == "" and grid.run().table()["epoch"].tolist() == [12, 12]  # seeds 0 and 1
    finally:
        grid.close()


def test_a_slow_strategy_on_its_device_is_said_in_the_status_and_cleared_by_another(blobs_small, monkeypatch):
    """The GPU's one-thread sequential strategy crawls on a big graph: the panel says so where the user looks
    (no GPU here, so the advice is made to fire for sequential on the CPU; the GPU half is in tests/test_gpu.py)."""
    monkeypatch.setattr(
        play_jobs,
        "sequential_gpu_advice",
        lambda strategy, device, nnz: f"slow: {nnz} edges" if strategy == "sequential" else None,
    )
    X, y = blobs_small
    ex = Explorer(X, labels=y, strategy="sequential", **SMALL)
    try:
        ex.wait()
        assert f"slow: {ex.graph.nnz} edges" in ex.widgets["status"].value
        ex.play(epochs=2, block=True)  # every frame's status keeps it
        assert f"slow: {ex.graph.nnz} edges" in ex.widgets["status"].value
        ex.widgets["strategy"].value = "hogwild"
        ex.wait()
        assert ex.state.strategy == "hogwild" and "slow:" not in ex.widgets["status"].value
    finally:
        ex.close()


@pytest.mark.gpu
def test_sequential_on_the_gpu_is_said_in_the_status():

    X, y = datasets.load("blobs", n_samples=8000, random_state=0)
    ex = Explorer(X, labels=y, device="gpu", strategy="sequential", n_neighbors=15, n_epochs=40, size=96)
    try:
        ex.wait()
        assert ex.graph.nnz > SEQUENTIAL_GPU_EDGES  # big enough to be slow
        assert ex.state.error == "" and "one GPU thread" in ex.widgets["status"].value
    finally:
        ex.close()
