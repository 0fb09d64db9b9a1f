"""A newcomer's hour, scripted: notebook 01 run whole in JupyterLab (headless Chromium, offline), then the
Explorer used by hand, then notebook 05 opened.

Each step is what a person does (Run All; click a flung point and read the inspector; wheel-zoom; box-select;
clear each; reset; change strategy and n_chunks; scrub; export; open notebook 05), and after each one the
page is checked as a person would see it: no text over other text or cut by its box or out of its panel, no
error in the console, no request to the internet (the page is offline: see test_browser.CHROMIUM_ARGS), and
the counts on screen those of the kernel. A screenshot of each step goes to bench/out/walkthrough/.

Waits are on conditions (a kernel's report, an element, a status line), never on sleeps. Same set-up and
skips as test_browser.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import textwrap
from pathlib import Path

import pytest
from test_browser import (
    _SKIP,
    CHROMIUM,
    CHROMIUM_ARGS,
    TITLES,
    VIEW_READY,
    WATCHES,
    _command,
    _open_notebook,
    _shrink_copy,
    _status,
    _wait_for,
    jupyter_lab,
)
from test_browser_plot import FRAMES, KERNEL_RUN, _drag, _to_page

pytestmark = [pytest.mark.browser, pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")]

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "bench" / "out" / "walkthrough"
# The steps whose screenshots are kept, shrunk, in bench/screenshots/ (UMAPVIZ_UPDATE_SCREENSHOTS=1): the
# legend, a selection and a zoom before and after clearing them, at each window width.
KEPT_SHOTS = ("buffered-played", "inspect", "box-select", "selection-cleared", "zoom-cleared")

# Run in a cell appended to notebook 01: what the kernel's Explorer shows, to compare with the page.
PROBE = textwrap.dedent("""\
    import json as _json
    _c = explorer.controller
    _layout = np.asarray(_c.layout_of())
    (_x0, _x1), (_y0, _y1) = explorer.view_range
    # Flung points well inside the view: the robust view's edges run through flung points, and a click on
    # one at the frame's edge may fall outside the frame (no tap at all).
    _mx, _my = 0.04 * (_x1 - _x0), 0.04 * (_y1 - _y0)
    _in_view = [int(i) for i in explorer.flung()
                if _x0 + _mx < _layout[i, 0] < _x1 - _mx and _y0 + _my < _layout[i, 1] < _y1 - _my]
    _s = explorer.state
    print("probe:", _json.dumps({
        "epoch": _s.epoch, "outliers": _s.outliers, "strategy": _s.strategy, "n_chunks": _s.n_chunks,
        "n_chunks_used": _s.n_chunks_used, "error": _s.error, "running": _s.running,
        "range": explorer.view_range, "zoomed": _c.view_range, "inspected": _c.inspected,
        "selected": int(len(_c.selection)), "flung_in_view": _in_view[:3],
        "positions": _layout[_in_view[:3]].tolist(), "recorded": len(explorer.recording()), "size": _c.params.size,
        "inspected_at": None if _c.inspected is None else _layout[_c.inspected].tolist()}))""")

# Every text of a panel as the page lays it out: each text node's line boxes. A problem is a line that
# overlaps another text's line, leaves the panel, or is cut by a box that clips its content (overflow).
TEXT_PROBLEMS = """(selector) => {
  const problems = [];
  for (const panel of document.querySelectorAll(selector)) {
    const outer = panel.getBoundingClientRect();
    const lines = [];
    const walker = document.createTreeWalker(panel, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = walker.currentNode;
      const text = node.textContent.trim();
      const el = node.parentElement;
      if (!text || !el || el.closest('script, style, option, .bk-tooltip')) { continue; }
      if (el.getClientRects().length === 0 || getComputedStyle(el).visibility === 'hidden') { continue; }
      const range = document.createRange();
      range.selectNodeContents(node);
      for (const r of range.getClientRects()) {
        if (r.width > 1 && r.height > 1) { lines.push({el, r, text: text.slice(0, 40)}); }
      }
    }
    const outside = (r, b) =>
      r.left < b.left - 1 || r.right > b.right + 1 || r.top < b.top - 1 || r.bottom > b.bottom + 1;
    for (const line of lines) {
      if (outside(line.r, outer)) { problems.push(`"${line.text}" leaves its panel`); continue; }
      for (let box = line.el; box && box !== panel; box = box.parentElement) {
        const style = getComputedStyle(box);
        if (style.overflowX !== 'visible' || style.overflowY !== 'visible') {
          if (outside(line.r, box.getBoundingClientRect())) { problems.push(`"${line.text}" is cut by its box`); }
          break;
        }
      }
    }
    for (let i = 0; i < lines.length; i++) {
      for (let j = i + 1; j < lines.length; j++) {
        const a = lines[i], b = lines[j];
        if (a.el === b.el && a.text === b.text) { continue; }
        const w = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left);
        const h = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top);
        if (w > 1 && h > 1) { problems.push(`"${a.text}" overlaps "${b.text}"`); }
      }
    }
  }
  return [...new Set(problems)];
}"""


# A notebook's cells as the page holds them (by path, whichever tab has the focus): each code cell's execution
# count (None while queued or running), its outputs' text and errors; the kernel's status; the focused tab.
NOTEBOOK_STATE = """(path) => {
  const shell = window.jupyterapp.shell;
  const panel = [...shell.widgets('main')].find((w) => w.context && w.context.path === path);
  if (!panel) { return null; }
  const cells = {};
  panel.content.widgets.forEach((cell, i) => {
    if (cell.model.type !== 'code') { return; }
    const outputs = cell.model.outputs.toJSON();
    cells[String(i)] = {
      count: cell.model.executionCount,
      state: cell.model.executionState,
      text: outputs.map((o) => [].concat(o.text || []).join('')).join('').slice(-400),
      errors: outputs.filter((o) => o.output_type === 'error').map((o) => `${o.ename}: ${o.evalue}`),
      types: outputs.map((o) => o.output_type),
    };
  });
  const session = panel.sessionContext.session;
  return {
    cells,
    status: session && session.kernel ? session.kernel.status : null,
    focused: shell.currentWidget && shell.currentWidget.context ? shell.currentWidget.context.path : null,
  };
}"""


class Walk:
    """The page, the notebook's probe cell and the checks made after each step."""

    def __init__(self, page, shots: Path, width: int) -> None:
        self.page, self.step, self.shots, self.width = page, 0, shots, width
        self.text_problems: dict[str, list[str]] = {}

    def run(self, code: str) -> str:
        """What ``code`` prints, run in the notebook's kernel."""
        return self.page.evaluate(KERNEL_RUN, code)

    def probe(self) -> dict:
        out = self.run(PROBE)
        assert "probe:" in out, out
        return json.loads(out.split("probe:", 1)[1])

    def settled(self, what: str, condition, timeout: float = 60) -> dict:
        """The kernel's report once ``condition(report)`` holds (the kernel is asked again until it does)."""
        return _wait_for(lambda: (r := self.probe()) and condition(r) and r, timeout, what, interval=0.5)

    def frame(self) -> list[float]:
        """The Explorer's plot frame on the page, scrolled into view (running a probe scrolls the notebook to
        it), once it has stopped moving."""
        self.page.locator(".umapviz-explorer .umapviz-plot").scroll_into_view_if_needed()
        last = [None]

        def still():
            now = self.page.evaluate(FRAMES)[0]
            moved, last[0] = now != last[0], now
            return not moved and now

        return _wait_for(still, 30, "the plot to stop moving on the page")

    def check(self, name: str, report: dict | None = None) -> None:
        """Screenshot, then the checks every step ends with: the page offline and error-free, the panel's
        text legible, the status line showing the kernel's epoch and outliers."""
        self.step += 1
        self.shots.mkdir(parents=True, exist_ok=True)
        panel = self.page.locator(".umapviz-explorer")
        target = panel if panel.count() else self.page
        shot = self.shots / f"{self.step:02d}-{name}.png"
        target.screenshot(path=str(shot))
        if name in KEPT_SHOTS and os.environ.get("UMAPVIZ_UPDATE_SCREENSHOTS") == "1":
            _shrink_copy(shot, ROOT / "bench" / "screenshots" / f"walk_{self.width}px_{name}.png", width=900)
        watch = WATCHES[self.page]
        assert watch.external == [], f"{name}: the page asked the internet for {watch.external}"
        assert watch.errors == [], f"{name}: console errors {watch.errors}"
        problems = self.page.evaluate(TEXT_PROBLEMS, ".umapviz-explorer")
        if problems:
            self.text_problems[name] = problems
        if report is not None and panel.count():
            status = _status(self.page)
            assert status["epoch"] == report["epoch"], (name, status, report)
            assert status["outliers"] == report["outliers"], (name, status, report)
            assert self.page.inner_text(".umapviz-error").strip() == report["error"] == "", name


@pytest.fixture
def walk_lab(tmp_path):
    """JupyterLab serving copies of notebooks 01 and 05, its kernels' graph cache in ``tmp_path``."""
    root = tmp_path / "lab"
    root.mkdir()
    for name in ("01_quickstart.ipynb", "05_millions_of_points.ipynb"):
        shutil.copy(ROOT / "notebooks" / name, root / name)
    settings = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false", "checkForUpdates": false}')
    env = {"UMAPVIZ_CACHE_DIR": str(tmp_path / "cache"), "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings")}
    with jupyter_lab(root, tmp_path, **env) as server:
        server["root"] = root
        yield server


# Browser windows as narrow and as wide as the notebooks people use, the file browser closed: the notebook is
# about the window's width. The Explorer's plot follows it (one column under the controls at 700 px, three
# columns side by side at 1,600 px), and no text may collide or be cut at either.
WINDOW_WIDTHS = (700, 1600)


# Notebook 01 run whole, a dozen steps by hand, then notebook 05's runs: about 5 minutes on an idle 2-core
# machine, over the suite's 10-minute limit per test on a loaded one.
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("width", WINDOW_WIDTHS)
def test_a_newcomers_hour_in_jupyterlab(walk_lab, width):
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    shots = SHOTS / f"{width}px"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = None  # a failure before the page opens has no screenshot to take
        try:
            page = _open_notebook(browser, walk_lab, "01_quickstart.ipynb", width=width)
            page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget", timeout=30_000)
            if page.evaluate("() => !window.jupyterapp.shell.leftCollapsed"):
                _command(page, "application:toggle-left-area")
            page.wait_for_function("() => window.jupyterapp.shell.leftCollapsed", timeout=30_000)
            walk = Walk(page, shots, width)

            # Run All, as the notebook's first line says; every cell ends, none with an error.
            _command(page, "notebook:clear-all-cell-outputs")
            _command(page, "notebook:run-all-cells")
            page.wait_for_function(VIEW_READY, timeout=300_000, polling=200)
            _wait_for(
                lambda: page.evaluate(
                    """() => window.jupyterapp.shell.currentWidget.content.widgets
                         .filter((c) => c.model.type === 'code').every((c) => c.model.executionCount !== null)"""
                ),
                600,
                "Run All to end",
                interval=1.0,
            )
            assert page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count() == 0
            assert page.locator(".jp-Notebook .jp-OutputArea-error").count() == 0
            after_run = walk.probe()
            assert after_run["epoch"] == 30 and after_run["strategy"] == "chunked", after_run
            page.locator(".umapviz-explorer").scroll_into_view_if_needed()
            # The plot follows the window: square, its frames drawn at its size on screen.
            frame = walk.frame()
            assert abs(frame[2] - frame[3]) <= 1 and frame[2] >= 0.3 * width, (width, frame)
            walk.settled("frames drawn at the plot's size", lambda r: abs(r["size"] - frame[2]) <= 1)
            walk.check("run-all", after_run)

            # The notebook left it zoomed on a hub and inspecting it. Back to the whole layout, under buffered
            # (which flings points), played to epoch 30 with the buttons.
            assert walk.run("explorer.inspect(None)\nexplorer.reset_view()\nprint('cleared')") == "cleared\n"
            page.select_option(".umapviz-strategy select", "buffered")
            walk.settled("the buffered restart", lambda r: r["strategy"] == "buffered" and r["epoch"] == 0)
            page.click("button.umapviz-play")
            _wait_for(lambda: _status(page)["epoch"] >= 30, 180, "30 buffered epochs")
            page.click("button.umapviz-pause")
            played = walk.settled("the pause", lambda r: not r["running"] and r["zoomed"] is None)
            assert played["inspected"] is None, played
            assert played["outliers"] > 0 and played["flung_in_view"], played
            walk.check("buffered-played", played)

            # Click a flung point: the inspector shows it.
            frame = walk.frame()
            target, position = played["flung_in_view"][0], played["positions"][0]
            page.mouse.click(*_to_page(frame, played["range"], *position))
            inspected = walk.settled("a click to inspect", lambda r: r["inspected"] is not None)
            page.wait_for_selector(f".umapviz-inspector [data-index='{inspected['inspected']}']", timeout=30_000)
            # The point clicked, or one drawn as near (within 3 pixels): a flung point may sit in a crowd.
            (x0, x1), _ = played["range"]
            gap = (inspected["inspected_at"][0] - position[0]) ** 2 + (inspected["inspected_at"][1] - position[1]) ** 2
            assert gap**0.5 <= 3 * (x1 - x0) / frame[2], (target, inspected)
            reading = page.locator(".umapviz-inspector").last.text_content()
            assert f"{inspected['inspected']:,}" in reading or str(inspected["inspected"]) in reading, reading
            walk.check("inspect", inspected)

            # Wheel-zoom about the point: the frame is drawn again at the zoomed range.
            frame = walk.frame()
            page.mouse.move(*_to_page(frame, played["range"], *position))
            page.mouse.wheel(0, -300)
            zoomed = walk.settled("a wheel zoom", lambda r: r["zoomed"] is not None and r["range"] == r["zoomed"])
            assert zoomed["zoomed"][0][1] - zoomed["zoomed"][0][0] < played["range"][0][1] - played["range"][0][0]
            walk.check("wheel-zoom", zoomed)

            # Box-select the upper left quarter of the view.
            frame = walk.frame()
            page.locator(".umapviz-explorer .bk-tool-icon-box-select").first.click()
            (x0, x1), (y0, y1) = zoomed["range"]
            _drag(page, frame, zoomed["range"], (x0 + 0.02 * (x1 - x0), y1), ((x0 + x1) / 2, (y0 + y1) / 2))
            selected = walk.settled("a box selection", lambda r: r["selected"] > 0)
            walk.check("box-select", selected)

            # Clear each: the selection and the inspected point (the view's Clear button), the zoom (the plot's
            # reset tool).
            page.click("button.umapviz-clear")
            cleared = walk.settled("the Clear button", lambda r: r["selected"] == 0 and r["inspected"] is None)
            walk.check("selection-cleared", cleared)
            page.locator(".umapviz-explorer .bk-tool-icon-reset").first.click()
            unzoomed = walk.settled("the zoom cleared", lambda r: r["zoomed"] is None)
            walk.check("zoom-cleared", unzoomed)

            # Reset: back to epoch 0.
            page.click("button.umapviz-reset")
            reset = walk.settled("the reset", lambda r: r["epoch"] == 0 and not r["running"])
            walk.check("reset", reset)

            # Strategy and n_chunks from their controls: chunked, fixed, 8 chunks.
            page.select_option(".umapviz-strategy select", "chunked")
            walk.settled("chunked", lambda r: r["strategy"] == "chunked" and r["epoch"] == 0)
            mode = page.locator(".umapviz-explorer .widget-dropdown:has(label:text-is('n_chunks')) select")
            mode.select_option("fixed")
            fixed = walk.settled("a fixed n_chunks", lambda r: isinstance(r["n_chunks"], int) and r["epoch"] == 0)
            slider = page.locator(".umapviz-explorer .widget-hslider:has(label:text-is('fixed n_chunks'))")
            slider.locator(".noUi-handle").focus()
            page.keyboard.press("ArrowRight")  # the log slider: twice as many chunks
            doubled = 2 * fixed["n_chunks"]
            fixed = walk.settled("twice the chunks", lambda r: r["n_chunks"] == doubled and r["epoch"] == 0)
            assert fixed["n_chunks_used"] == doubled, fixed
            walk.check("strategy-n-chunks", fixed)

            # The advanced settings, opened.
            page.locator(".umapviz-explorer").get_by_text("advanced", exact=True).click()
            page.locator(".umapviz-explorer .widget-dropdown:has(label:text-is('init'))").wait_for(timeout=30_000)
            walk.check("advanced-open", fixed)

            # Play 20 epochs, then scrub back through the recording.
            page.click("button.umapviz-play")
            _wait_for(lambda: _status(page)["epoch"] >= 20, 180, "20 chunked epochs")
            page.click("button.umapviz-pause")
            played = walk.settled("the pause", lambda r: not r["running"] and r["recorded"] >= 3)
            page.locator(".umapviz-scrub .noUi-handle").focus()
            page.keyboard.press("Home")
            panel_text = lambda: page.inner_text(".umapviz-explorer")  # noqa: E731
            _wait_for(lambda: "recorded epoch" in panel_text(), 60, "the scrubbed frame")
            scrubbed = re.search(r"recorded epoch (\d+)", panel_text())
            assert scrubbed and int(scrubbed.group(1)) < played["epoch"]
            walk.check("scrub")

            # Export where the user says.
            target_file = walk_lab["root"] / "walk.gif"
            export_box = page.locator(".umapviz-explorer input[type='text']").last
            export_box.fill(str(target_file))
            page.locator(".umapviz-explorer button", has_text="Export").click()
            _wait_for(lambda: target_file.exists() and target_file.stat().st_size > 0, 120, "the exported GIF")
            _wait_for(lambda: str(target_file) in panel_text(), 30, "the export's full path in the panel")
            walk.check("export")

            # Notebook 05: its live view draws, offline.
            page.evaluate(
                "() => window.jupyterapp.commands.execute('docmanager:open', {path: '05_millions_of_points.ipynb'})"
            )
            page.wait_for_function(
                "() => window.jupyterapp.shell.currentWidget.context.path.endsWith('05_millions_of_points.ipynb')",
                timeout=30_000,
            )
            page.wait_for_function(
                "() => window.jupyterapp.shell.currentWidget.sessionContext.session"
                " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
                " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'",
                timeout=120_000,
            )
            # Its stored outputs cleared first: the layout cell's stored output names both runs, and a wait on
            # it must see this run's.
            _command(page, "notebook:clear-all-cell-outputs")
            for cell in (1, 3, 5, 7):
                # Not awaited in the page (the command's promise ends with the cell): the wait below says why
                # a cell did not end, where an await in the page would just hang.
                page.evaluate(
                    """(cell) => {
                      window.jupyterapp.shell.currentWidget.content.activeCellIndex = cell;
                      void window.jupyterapp.commands.execute('notebook:run-cell');
                    }""",
                    cell,
                )
                _wait_for(
                    lambda cell=cell: (
                        (s := page.evaluate(NOTEBOOK_STATE, "05_millions_of_points.ipynb"))
                        and s["cells"][str(cell)]["count"] is not None
                        and s["status"] == "idle"
                    ),
                    600,
                    f"notebook 05's cell {cell} to end",
                    interval=1.0,
                    state=lambda: page.evaluate(NOTEBOOK_STATE, "05_millions_of_points.ipynb"),
                )
            state = page.evaluate(NOTEBOOK_STATE, "05_millions_of_points.ipynb")
            assert "chunked" in state["cells"]["7"]["text"] and not state["cells"]["7"]["errors"], state
            # Its live view drew the runs' frames: the caption of one in the plot's title.
            page.wait_for_function(
                f"() => ({TITLES})().some((t) => t.includes('points  chunked, epoch'))", timeout=60_000
            )
            notebook_id = page.evaluate("() => window.jupyterapp.shell.currentWidget.id")
            notebook_05 = shots / f"{walk.step + 1:02d}-notebook-05.png"
            page.locator(f"[id='{notebook_id}'] .jp-Cell").nth(5).locator(".jp-OutputArea").screenshot(
                path=str(notebook_05)
            )
            if os.environ.get("UMAPVIZ_UPDATE_SCREENSHOTS") == "1":
                _shrink_copy(notebook_05, ROOT / "bench" / "screenshots" / f"walk_{width}px_notebook-05.png", 900)
            watch = WATCHES[page]
            assert watch.external == [], watch.external
            assert watch.errors == [], watch.errors
            assert page.locator(".jp-Notebook .jp-OutputArea-error").count() == 0
        except Exception:
            if page is not None:
                shots.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(shots / "failed.png"))
            raise
        finally:
            browser.close()

    assert walk.text_problems == {}, f"text over text, cut or out of its panel: {walk.text_problems}"


def test_the_text_check_finds_overlaps_cuts_and_escapes():
    """TEXT_PROBLEMS on a page made to have each problem once, and one line that has none."""
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    page_html = """<div class="panel" style="position:relative;width:300px;height:200px">
      <span style="position:absolute;left:0;top:0">fine alone</span>
      <span style="position:absolute;left:0;top:40px">first line</span>
      <span style="position:absolute;left:20px;top:44px">on top of it</span>
      <div style="position:absolute;left:0;top:80px;width:60px;overflow:hidden;white-space:nowrap">outlier measure</div>
      <span style="position:absolute;left:250px;top:120px;white-space:nowrap">past the edge</span>
      <span style="display:none">hidden text</span>
    </div>"""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page()
            page.set_content(page_html)
            problems = page.evaluate(TEXT_PROBLEMS, ".panel")
        finally:
            browser.close()
    assert sorted(problems) == sorted(
        [
            '"first line" overlaps "on top of it"',
            '"outlier measure" is cut by its box',
            '"past the edge" leaves its panel',
        ]
    )
