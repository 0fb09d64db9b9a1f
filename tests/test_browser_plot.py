"""The interactive plot in a real JupyterLab (headless Chromium, Playwright), inside an ipywidgets layout.

Same set-up and skips as test_browser.py (Debian's Chromium, never ``playwright install``). What it checks:
a wheel zoom over the plot changes the kernel's ``plot.view_range`` and re-renders (the caption then counts
points outside the view); a click on a point reports that point's index to ``on_tap``; a box selection
reports the points inside it to ``on_select``; in two linked plots a zoom in one moves the other.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from test_browser import (
    _SKIP,
    CHROMIUM,
    CHROMIUM_ARGS,
    _command,
    _free_port,
    _get,
    _open_notebook,
    _run_for_output,
    _wait_for,
    _write_notebook,
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
    from umapviz.render.linked import LinkedViews

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


def _report(page, cell: int = 1, prefix: str = "report:") -> dict:
    return json.loads(_run_for_output(page, cell, prefix, timeout=20).split(prefix, 1)[1])


@pytest.fixture
def plot_lab(tmp_path):
    """JupyterLab on 127.0.0.1 serving a notebook with one interactive plot."""
    root = tmp_path / "lab"
    root.mkdir()
    _write_notebook(root / "plot.ipynb", CELLS)
    port, token = _free_port(), os.urandom(12).hex()
    env = dict(
        os.environ,
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "run"),
        PYTHONPATH=str(Path(__file__).resolve().parents[1]),
    )
    log = (tmp_path / "lab.log").open("w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.port_retries=0",
            "--allow-root",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.expose_app_in_browser=True",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=root,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for(
            lambda: server.poll() is None and _get(f"{base}/api/status?token={token}"),
            90,
            f"JupyterLab to answer (see {tmp_path / 'lab.log'})",
        )
        yield {"base": base, "token": token, "log": tmp_path / "lab.log"}
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


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
            page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-OutputArea").scroll_into_view_if_needed()
            time.sleep(0.5)
            left, right = page.evaluate(FRAMES)[1:]
            start = _report(page, 3, "linked:")["ranges"]
            page.mouse.move(*_to_page(right, start[1], 10.0, 10.0))
            page.mouse.wheel(0, -200)
            moved = _wait_for(lambda: (r := _report(page, 3, "linked:"))["ranges"][1] != start[1] and r, 30, "a zoom")
            assert moved["ranges"][0] == moved["ranges"][1] != start[0]
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
