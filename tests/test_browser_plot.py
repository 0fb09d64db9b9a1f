"""The interactive plot in a real JupyterLab (headless Chromium, Playwright), inside an ipywidgets layout.

Same set-up and skips as test_browser.py (Debian's Chromium, never ``playwright install``). What it checks:
a wheel zoom over the plot changes the kernel's ``plot.view_range`` and re-renders (the caption then counts
points outside the view); a click on a point reports that point's index to ``on_tap``; a box selection
reports the points inside it to ``on_select``; in two linked plots a zoom in one moves the other.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import numpy as np
import pytest
from test_browser import (
    _SKIP,
    CHROMIUM,
    CHROMIUM_ARGS,
    _command,
    _open_notebook,
    _run_for_output,
    _shrink_copy,
    _wait_for,
    _write_notebook,
    jupyter_lab,
)

pytestmark = [pytest.mark.browser, pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")]

SETUP = textwrap.dedent("""\
    import json
    import ipywidgets as widgets
    import numpy as np
    from umapviz.widgets.plot import Plot

    rng = np.random.default_rng(0)
    # Two clusters and one lone point at the origin, which a click at the plot's centre must find.
    embedding = np.concatenate([rng.normal(-10, 1, (20_000, 2)), rng.normal(10, 1, (20_000, 2)),
                                [[0.0, 0.0]]]).astype(np.float32)
    labels = np.repeat([0, 1, 2], [20_000, 20_000, 1])
    taps, selections = [], []
    plot = Plot(400, 400, view=(-20.0, 20.0, -20.0, 20.0), on_tap=taps.append,
                on_select=lambda idx: selections.append(len(idx)))
    plot.push(embedding, labels=labels, caption="epoch 0")
    widgets.VBox([widgets.HTML("<b class='umapviz-plot-title'>plot</b>"), plot.widget])""")
# Two linked plots of the same points (the second one shifted), side by side in an HBox.
LINKED = textwrap.dedent("""\
    from umapviz.render.live.linked import LinkedViews

    pair = [Plot(300, 300, view=(-20.0, 20.0, -20.0, 20.0)) for _ in range(2)]
    link = LinkedViews(pair)
    for shift, view in zip((0.0, 1.0), pair):
        view.push(embedding + shift, labels=labels)
    widgets.HBox([view.widget for view in pair])""")
LINKED_REPORT = (
    "print('linked:', json.dumps({'ranges': [v.view_range for v in pair],\n"
    "                             'selected': [len(v.selection) for v in pair]}))"
)
REPORT = "print('report:', json.dumps({'range': plot.view_range, 'taps': taps, 'selections': selections}))"
CELLS = (SETUP, REPORT, LINKED, LINKED_REPORT)
# The Explorer and a grid on a small data set, paused: their plots' events go to their controllers.
EXPLORE = textwrap.dedent("""\
    import json
    import numpy as np
    from IPython.display import display
    from sklearn.datasets import make_blobs
    from umapviz import Explorer, compare

    X, y = make_blobs(3000, n_features=10, centers=5, random_state=0)
    X = X.astype(np.float32)
    explorer = Explorer(X, labels=y, strategy="buffered", n_epochs=100, size=400)
    explorer.play(20)
    display(explorer)""")
EXPLORE_REPORT = (
    "print('explorer:', json.dumps({'range': explorer.view_range, 'zoomed': explorer.controller.view_range,\n"
    "      'inspected': explorer.controller.inspected, 'layout': explorer.controller.layout_of().tolist(),\n"
    "      'error': explorer.state.error}))"
)
GRID = textwrap.dedent("""\
    grid = compare(X, labels=y, strategy=["buffered", "chunked"], n_chunks="auto", random_state=0, n_epochs=100,
                   panel_size=300, autoplay=False)
    grid.run(20)
    display(grid)""")
GRID_REPORT = (
    "print('grid:', json.dumps({'range': grid.view_range, 'selection': grid.selection.tolist(),\n"
    "      'shown': [plot.selection.tolist() for plot in grid.plots], 'error': grid.error}))"
)
EXPLORE_CELLS = (EXPLORE, EXPLORE_REPORT, GRID, GRID_REPORT)


# Run code in the notebook's kernel as a cell would, without a cell (running one scrolls the notebook to it,
# away from the plot the mouse is aimed at); resolves to its printed text (and an error's name and value).
KERNEL_RUN = """async (code) => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const future = kernel.requestExecute({code, store_history: false});
  let out = '';
  future.onIOPub = (msg) => {
    if (msg.header.msg_type === 'stream') { out += msg.content.text; }
    if (msg.header.msg_type === 'error') { out += `${msg.content.ename}: ${msg.content.evalue}`; }
  };
  await future.done;
  return out;
}"""


def _kernel(page, code: str) -> str:
    """What ``code`` prints, run in the open notebook's kernel."""
    return page.evaluate(KERNEL_RUN, code)


def _report(page, cell: int = 1, prefix: str = "report:") -> dict:
    return json.loads(_run_for_output(page, cell, prefix, timeout=20).split(prefix, 1)[1])


@pytest.fixture
def plot_lab(tmp_path):
    """JupyterLab on 127.0.0.1 serving a notebook with one interactive plot."""
    root = tmp_path / "lab"
    root.mkdir()
    _write_notebook(root / "plot.ipynb", CELLS)
    _write_notebook(root / "explore.ipynb", EXPLORE_CELLS)
    with jupyter_lab(root, tmp_path, PYTHONPATH=str(Path(__file__).resolve().parents[1])) as server:
        yield server


# The page position of each bokeh plot's frame (the data area), in document order: BokehJS's views know it.
FRAMES = """() => {
  const frames = [], seen = new Set();
  const visit = (view) => {
    if (!view || seen.has(view)) { return; }
    seen.add(view);
    if (view.frame && view.canvas_view) {
      const box = view.frame.bbox, page = view.canvas_view.el.getBoundingClientRect();
      frames.push([page.left + box.left, page.top + box.top, box.width, box.height]);
    }
    for (const child of (view.child_views || [])) { visit(child); }
  };
  for (const root of window.Bokeh.index.roots) { visit(root); }
  return frames;
}"""


def _still_frames(page) -> list:
    """The plots' frames on the page (FRAMES) once two looks in a row agree: a cell run or an output that
    grows scrolls the notebook, and a mouse aimed at a frame's old place misses it."""
    last = [None]

    def still():
        now = page.evaluate(FRAMES)
        moved, last[0] = now != last[0], now
        return not moved and now

    return _wait_for(still, 30, "the plots to stop moving on the page")


def _to_page(frame, view_range, x: float, y: float) -> tuple[float, float]:
    """The page position of data point (x, y) in a plot whose frame is ``frame`` showing ``view_range``."""
    left, top, width, height = frame
    (x0, x1), (y0, y1) = view_range
    return left + (x - x0) / (x1 - x0) * width, top + (y1 - y) / (y1 - y0) * height


def test_plot_zooms_clicks_and_selects_in_jupyterlab(plot_lab):
    from playwright.sync_api import sync_playwright  # noqa: PLC0415 - optional test dependency

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = _open_notebook(browser, plot_lab, "plot.ipynb")
            page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget", timeout=30_000)
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-cell')")
            page.wait_for_function(f"() => window.Bokeh && ({FRAMES})().length == 1", timeout=90_000, polling=200)
            frame = page.evaluate(FRAMES)[0]
            before = _report(page)
            assert before["range"] == [[-20.0, 20.0], [-20.0, 20.0]]

            # Box select (its toolbar button, then a drag) around the lower left cluster: its 20,000 points.
            page.locator(".bk-tool-icon-box-select").first.click()
            page.mouse.move(*_to_page(frame, before["range"], -16.0, -4.0))
            page.mouse.down()
            page.mouse.move(*_to_page(frame, before["range"], -4.0, -16.0), steps=5)
            page.mouse.up()
            selected = _wait_for(lambda: (r := _report(page))["selections"] and r, 30, "a box selection")
            assert selected["selections"] == [20_000]

            # The wheel over the lone point at the origin zooms in about it.
            page.mouse.move(*_to_page(frame, before["range"], 0.0, 0.0))
            page.mouse.wheel(0, -300)
            zoomed = _wait_for(lambda: (r := _report(page))["range"] != before["range"] and r, 30, "a zoom")
            (x0, x1), (y0, y1) = zoomed["range"]
            assert x1 - x0 < 40 and x0 < 0 < x1 and y0 < 0 < y1, zoomed

            # A click on it, where the zoomed view now shows it, reports its index.
            page.mouse.click(*_to_page(frame, zoomed["range"], 0.0, 0.0))
            tapped = _wait_for(lambda: (r := _report(page))["taps"] and r, 30, "a click's index")
            assert tapped["taps"] == [40_000]

            # Two linked plots: a zoom in the right one moves the left one; a box selection in the left one
            # selects the same points in the right one.
            _command(page, "notebook:run-cell", 2)
            page.wait_for_function(f"() => ({FRAMES})().length == 3", timeout=60_000, polling=200)
            start = _report(page, 3, "linked:")["ranges"]  # running a cell scrolls the notebook: report first
            page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-OutputArea").scroll_into_view_if_needed()
            left, right = _still_frames(page)[-2:]  # the last two (the notebook may not draw cells out of view)
            page.mouse.move(*_to_page(right, start[1], 10.0, 10.0))
            page.mouse.wheel(0, -200)
            # The zoom moves the right plot, and the link moves the left one: wait for both (under load the two
            # arrive in reports a moment apart), then check that the left one follows the right one exactly.
            moved = _wait_for(
                lambda: (
                    (r := _report(page, 3, "linked:"))["ranges"][1] != start[1] and r["ranges"][0] != start[0] and r
                ),
                60,
                "a zoom of the right plot followed by the left one",
            )
            assert moved["ranges"][0] == moved["ranges"][1]
            page.locator(".bk-tool-icon-box-select").nth(1).click()
            (x0, x1), (y0, y1) = moved["ranges"][0]
            page.mouse.move(*_to_page(left, moved["ranges"][0], x0 + 0.1 * (x1 - x0), y1 - 0.1 * (y1 - y0)))
            page.mouse.down()
            page.mouse.move(*_to_page(left, moved["ranges"][0], x0 + 0.9 * (x1 - x0), y0 + 0.1 * (y1 - y0)), steps=5)
            page.mouse.up()
            linked = _wait_for(lambda: (r := _report(page, 3, "linked:"))["selected"][0] and r, 30, "a selection")
            assert linked["selected"][0] == linked["selected"][1] > 0
        finally:
            browser.close()


def _drag(page, frame, view_range, start: tuple[float, float], end: tuple[float, float]) -> None:
    """Drag from data point ``start`` to ``end`` in a plot (a box selection with the box select tool on)."""
    page.mouse.move(*_to_page(frame, view_range, *start))
    page.mouse.down()
    page.mouse.move(*_to_page(frame, view_range, *end), steps=5)
    page.mouse.up()


def test_explorer_and_grid_zoom_inspect_and_select_in_jupyterlab(plot_lab):
    from playwright.sync_api import sync_playwright  # noqa: PLC0415 - optional test dependency

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = _open_notebook(browser, plot_lab, "explore.ipynb")
            page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget", timeout=30_000)
            _command(page, "notebook:run-cell", 0)
            page.wait_for_function(f"() => window.Bokeh && ({FRAMES})().length == 1", timeout=120_000, polling=200)
            before = _report(page, 1, "explorer:")
            assert before["zoomed"] is None and before["error"] == ""
            plot = page.locator(".umapviz-explorer .umapviz-plot")
            plot.scroll_into_view_if_needed()  # running the report's cell scrolled the notebook
            frame = _still_frames(page)[0]

            # The wheel over the plot's centre: the controller's view range is set and the frame drawn at it.
            # The plot is measured before each gesture: the panel grows as it fills (its caption, legend and
            # inspector rows), and the notebook may scroll it.
            (x0, x1), (y0, y1) = before["range"]
            frame = page.evaluate(FRAMES)[0]
            page.mouse.move(*_to_page(frame, before["range"], (x0 + x1) / 2, (y0 + y1) / 2))
            page.mouse.wheel(0, -200)
            zoomed = _wait_for(lambda: (r := _report(page, 1, "explorer:"))["zoomed"] and r, 30, "a zoom")
            assert zoomed["zoomed"][0][1] - zoomed["zoomed"][0][0] < x1 - x0
            _wait_for(lambda: _report(page, 1, "explorer:")["range"] == zoomed["zoomed"], 30, "the zoomed frame")

            # Reset from the kernel, then the same wheel step at the same place: the same range as the first
            # zoom, a view drawn before, and still a zoom the kernel takes (it was once taken for an echo of
            # that frame and lost: the page zoomed, the kernel kept the whole range).
            repeats = []
            for _again in range(2):
                assert _kernel(page, "explorer.reset_view(); explorer.wait(); print('reset')") == "reset\n"
                whole = _wait_for(
                    lambda: (
                        (r := _report(page, 1, "explorer:"))["zoomed"] is None and r["range"] != zoomed["zoomed"] and r
                    ),
                    30,
                    "the kernel's reset drawn",
                )
                plot.scroll_into_view_if_needed()
                frame = _still_frames(page)[0]
                (wx0, wx1), (wy0, wy1) = whole["range"]
                page.mouse.move(*_to_page(frame, whole["range"], (wx0 + wx1) / 2, (wy0 + wy1) / 2))
                page.mouse.wheel(0, -200)
                again = _wait_for(lambda: (r := _report(page, 1, "explorer:"))["zoomed"] and r, 30, "a zoom again")
                assert again["zoomed"][0][1] - again["zoomed"][0][0] < wx1 - wx0, again
                repeats.append((whole["range"], again["zoomed"]))
            # The second zoom repeated the first exactly (same whole range, same step, same place): the case lost.
            assert repeats[0] == repeats[1], repeats

            # A click on a point inspects it: the inspector shows its index.
            layout = np.asarray(zoomed["layout"])
            (zx0, zx1), (zy0, zy1) = zoomed["zoomed"]
            visible = np.flatnonzero(
                (layout[:, 0] > zx0) & (layout[:, 0] < zx1) & (layout[:, 1] > zy0) & (layout[:, 1] < zy1)
            )
            target = int(visible[0])
            plot.scroll_into_view_if_needed()
            frame = _still_frames(page)[0]
            page.mouse.click(*_to_page(frame, zoomed["zoomed"], *layout[target]))
            inspected = _wait_for(
                lambda: (r := _report(page, 1, "explorer:"))["inspected"] is not None and r,
                30,
                "a click to inspect a point",
            )
            index = inspected["inspected"]
            assert np.hypot(*(layout[index] - layout[target])) < 0.1 * (zx1 - zx0)  # the point clicked, or one as near
            page.wait_for_selector(f".umapviz-inspector [data-index='{index}']", timeout=30_000)
            _shot(page.locator(".umapviz-explorer"), "browser_explorer_inspect.png")

            # The grid: a box selection in the buffered panel selects the same points in the chunked one.
            _command(page, "notebook:run-cell", 2)
            page.wait_for_function(f"() => ({FRAMES})().length == 3", timeout=120_000, polling=200)
            grid = _report(page, 3, "grid:")
            page.locator(".umapviz-compare").scroll_into_view_if_needed()
            buffered = _still_frames(page)[-2]
            page.locator(".umapviz-compare .bk-tool-icon-box-select").first.click()
            (gx0, gx1), (gy0, gy1) = grid["range"]
            _drag(page, buffered, grid["range"], (gx0, gy1), ((gx0 + gx1) / 2, (gy0 + gy1) / 2))  # the upper left
            # The selection is drawn in the other panel when its plot next draws: under load a report may come
            # between the two, so wait for both panels to show it.
            selected = _wait_for(
                lambda: (r := _report(page, 3, "grid:"))["selection"] and r["shown"] == [r["selection"]] * 2 and r,
                60,
                "a grid selection shown in both panels",
            )
            assert selected["error"] == ""
            _shot(page.locator(".umapviz-compare"), "browser_grid_selection.png")
        finally:
            browser.close()


def _shot(locator, name: str) -> None:
    """Save a screenshot to bench/out/ and, when UMAPVIZ_UPDATE_SCREENSHOTS=1, a small copy to bench/screenshots/."""
    out = Path(__file__).resolve().parents[1] / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    locator.screenshot(path=str(out / name))
    if os.environ.get("UMAPVIZ_UPDATE_SCREENSHOTS") == "1":
        _shrink_copy(out / name, out.parent / "screenshots" / name)
