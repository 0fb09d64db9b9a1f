"""The Explorer's readouts tell the truth: counts follow the epoch on screen, the chart has a sample per epoch,
a refused input says so next to the inputs, a bad data path fails at once with the command line's words."""

from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("datashader")

from umapviz import LayoutOptimizer, build_graph, cli, datasets, metrics
from umapviz.render.live.view_range import ViewRange
from umapviz.render.view import View
from umapviz.widgets import Explorer
from umapviz.widgets.session import LayoutRun
from umapviz.widgets.status import ParameterError

SMALL = {"n_neighbors": 10, "n_epochs": 40, "size": 96}


@pytest.fixture(scope="module")
def explorer():
    X, y = datasets.load("blobs", n_samples=600, random_state=0)  # buffered flags 10 points at its start only
    ex = Explorer(X, labels=y, strategy="buffered", epochs_per_frame=5, **SMALL)
    ex.wait()
    yield ex
    ex.close()


def test_the_legend_count_follows_a_scrubbed_frame(explorer):
    """The legend said "(35)" while the note said "showing recorded epoch 5 (52 outliers)"."""
    explorer.reset()
    explorer.play(20)
    log = explorer.controller.run.log
    counts = [int(mask.sum()) for mask in log.outliers]
    index = 0
    assert counts[index] != counts[-1]  # the data was chosen for it
    assert f"({counts[-1]:,})" in explorer.widgets["legend"].value
    explorer.widgets["scrub"].value = index
    explorer.wait()
    assert f"recorded epoch {log.epochs[index]} ({counts[index]:,} outliers)" in explorer.widgets["note"].value
    assert f"({counts[index]:,})" in explorer.widgets["legend"].value
    assert f"({counts[-1]:,})" not in explorer.widgets["legend"].value


def test_the_chart_has_a_sample_per_epoch_with_several_epochs_a_frame(blobs_small):
    """With 5 epochs a frame the chart drew epoch 0 and epoch 5 joined by a line, hiding a peak at epoch 2."""
    X, _ = blobs_small
    graph = build_graph(X, n_neighbors=10)
    framed = LayoutRun(graph, LayoutOptimizer(graph, strategy="buffered", random_state=0, n_epochs=40))
    stepped = LayoutRun(graph, LayoutOptimizer(graph, strategy="buffered", random_state=0, n_epochs=40))
    for _ in range(4):
        framed.advance(5)
    for _ in range(20):
        stepped.advance(1)
    assert framed.history_epochs == list(range(21)) == stepped.history_epochs
    assert framed.history_counts == stepped.history_counts
    assert framed.fingerprint() == stepped.fingerprint()  # counting each epoch leaves the layout as it was
    assert framed.log.epochs == [0, 5, 10, 15, 20]  # frames are still recorded per frame
    grid_like = LayoutRun(graph, LayoutOptimizer(graph, strategy="buffered", random_state=0, n_epochs=40))
    grid_like.advance(5, count_each_epoch=False)
    assert grid_like.history_epochs == [0, 5] and grid_like.history_counts[-1] == framed.history_counts[5]
    end = LayoutRun(graph, LayoutOptimizer(graph, strategy="buffered", random_state=0, n_epochs=7))
    assert end.advance(5) == 5 and end.advance(5) == 2  # the last frame is the last epoch
    assert end.history_epochs == list(range(8)) and end.optimizer.done
    mask = metrics.outliers(end.optimizer.embedding, graph, method="neighbors")
    assert end.history_counts[-1] == int(mask.sum())


def test_a_refused_input_says_so_next_to_the_inputs_and_keeps_the_value(explorer):
    """0 in n_epochs or "fixed n_chunks" silently became 1."""
    ws = explorer.widgets
    explorer.set(strategy="chunked", n_chunks=8)
    assert ws["n_chunks_mode"].value == "fixed" and ws["n_chunks_exact"].value == 8
    assert not ws["n_chunks_exact"].disabled and ws["input_note"].value == ""
    ws["n_chunks_exact"].value = 0
    assert explorer.controller.params.n_chunks == 8 and ws["n_chunks_exact"].value == 8
    assert "n_chunks=0 must be an int &gt;= 1" in ws["input_note"].value and "Kept" in ws["input_note"].value
    ws["n_chunks_exact"].value = 37  # an exact value the log slider cannot reach
    explorer.wait()
    assert explorer.controller.params.n_chunks == 37 == explorer.state.n_chunks_used
    assert ws["input_note"].value == ""  # a value taken clears the message
    ws["n_epochs"].value = 0
    assert "n_epochs=0 must be a positive integer" in ws["input_note"].value
    assert ws["n_epochs"].value == explorer.controller.n_epochs == 40
    ws["n_chunks_mode"].value = "auto"
    assert ws["n_chunks_exact"].disabled and ws["n_chunks"].disabled
    explorer.set(strategy="buffered")


def test_a_missing_data_file_fails_at_construction_with_the_command_lines_words(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ParameterError) as error:
        Explorer("missing.csv")
    assert cli.main(["demo", "--dataset", "missing.csv"]) == 2
    said = capsys.readouterr().err
    assert "Data file missing.csv does not exist" in str(error.value)
    assert str(error.value) in said  # the same sentence the command line prints


def test_a_failed_start_says_so_in_the_status_not_starting(tmp_path):
    (tmp_path / "broken.npy").write_bytes(b"not an array")
    ex = Explorer(str(tmp_path / "broken.npy"), size=64)
    try:
        ex.wait()
        assert "broken.npy" in ex.state.error and ex.controller.run is None
        assert "not started" in ex.widgets["status"].value and "starting" not in ex.widgets["status"].value
    finally:
        ex.close()


def test_a_late_echo_of_an_old_frame_is_not_taken_for_a_zoom():
    """A busy kernel pushes frames faster than the browser reports their ranges: an echo twelve frames late
    was taken for the user's zoom and froze the view at an old frame's range."""
    ranges = ViewRange("robust")
    views = [View((-1.0 - i, 1.0 + i), (-2.0 - i, 2.0 + i)) for i in range(40)]
    for view in views:
        ranges.drawn(view)
    assert ranges.reported(views[0].x_range, views[0].y_range) is None
    zoom = ranges.reported((0.25, 0.5), (0.25, 0.5))
    assert zoom == View((0.25, 0.5), (0.25, 0.5))


def test_exports_go_where_the_user_says_and_name_the_full_path(explorer, tmp_path, monkeypatch):
    """An exported GIF landed in notebooks/ and the panel said only "saved umapviz-run.gif"."""
    explorer.play(5)
    monkeypatch.chdir(tmp_path)
    assert explorer.export() == tmp_path / "umapviz-run.gif"  # the current directory, by default
    folder = tmp_path / "exports"
    folder.mkdir()
    assert explorer.export(folder) == folder / "umapviz-run.gif"  # a folder: the default name in it
    written = explorer.export("new/frame.png")  # relative: from the current directory; folders made
    assert written == tmp_path / "new" / "frame.png" and written.is_absolute() and written.stat().st_size > 100
    assert explorer.export(str(folder / "run.npz")).is_file()
    explorer.widgets["export_path"].value = str(folder)
    explorer.widgets["export"].click()
    explorer.wait()
    assert (folder / "umapviz-run.gif").is_file()
    assert f"saved {folder / 'umapviz-run.gif'}" in explorer.widgets["note"].value
