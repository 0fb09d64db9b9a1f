"""Real-browser screenshots of the Explorer and the grid on the default data set (JupyterLab, headless Chromium).

    PYTHONPATH=$PWD UMAPVIZ_CACHE_DIR=/work/cache python bench/explore_screenshots.py

Saves to bench/screenshots/ (shrunk, as tests/test_browser.py does): explore_zoom_playing.png (zoomed into the
densest class while the layout plays), explore_inspect_flung_hub.png (the inspector open on the busiest flung
point under buffered, its neighbours ringed and its trail drawn), explore_grid_selection.png (buffered's flung
points selected, seen where they sit in the chunked panels). The cells drive the panels from Python; the
pictures are what the browser draws. Needs Chromium and Playwright, as the browser tests do.
"""

from __future__ import annotations

import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_browser import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    _command,
    _open_notebook,
    _run_for_output,
    _shrink_copy,
    _write_notebook,
    jupyter_lab,
)

SHOTS = ROOT / "bench" / "screenshots"
CELLS = (
    textwrap.dedent("""\
        import numpy as np
        import umapviz
        from IPython.display import display

        explorer = umapviz.Explorer(epochs_per_frame=2)
        explorer.wait()
        display(explorer)"""),
    textwrap.dedent("""\
        # Play a while, then zoom into the densest class (a quarter of the layout's width around its median)
        # and play on.
        explorer.play(20)
        layout, labels = np.asarray(explorer.controller.layout_of()), explorer.controller.run.labels
        (x0, x1), _ = explorer.view_range
        crowd = layout[labels == np.bincount(labels).argmax()] if labels is not None else layout
        cx, cy = np.median(crowd, axis=0)
        half = (x1 - x0) / 8  # a quarter of the width
        explorer.zoom((cx - half, cx + half), (cy - half, cy + half))
        explorer.play(block=False)
        print("zoomed:", explorer.view_range)"""),
    textwrap.dedent("""\
        explorer.pause()
        explorer.reset_view()
        explorer.set(strategy="buffered")
        explorer.play(60)
        hub = int(explorer.flung()[0])
        info = explorer.inspect(hub)
        explorer.widgets["trail"].value = True
        print("inspected:", hub, info.degree, info.degree_rank, info.max_edges_in_one_chunk)"""),
    textwrap.dedent("""\
        grid = umapviz.compare(strategy=["buffered", "chunked"], n_chunks=(8, "auto"), random_state=0,
                               panel_size=300, autoplay=False)
        grid.run(60)
        grid.select(grid.flung(0))
        display(grid)
        print("selected:", len(grid.selection))"""),
)


def main() -> None:
    from playwright.sync_api import sync_playwright  # noqa: PLC0415 - optional

    tmp = Path(tempfile.mkdtemp(prefix="umapviz-shots-"))
    (tmp / "lab").mkdir()
    _write_notebook(tmp / "lab" / "shots.ipynb", CELLS)
    with jupyter_lab(tmp / "lab", tmp, PYTHONPATH=str(ROOT)) as lab:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            page = _open_notebook(browser, lab, "shots.ipynb")
            page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget", timeout=30_000)
            _command(page, "notebook:run-cell", 0)
            page.wait_for_selector(".umapviz-explorer .umapviz-plot", timeout=300_000)
            time.sleep(3)
            print(_run_for_output(page, 1, "zoomed:", timeout=120))
            time.sleep(4)
            explorer = page.locator(".umapviz-explorer")
            explorer.screenshot(path=str(tmp / "zoom.png"))
            print(_run_for_output(page, 2, "inspected:", timeout=300))
            time.sleep(3)
            explorer.screenshot(path=str(tmp / "inspect.png"))
            print(_run_for_output(page, 3, "selected:", timeout=600))
            time.sleep(4)
            page.locator(".umapviz-compare").scroll_into_view_if_needed()
            page.locator(".umapviz-compare").screenshot(path=str(tmp / "grid.png"))
            browser.close()
        for src, name in (
            ("zoom", "explore_zoom_playing"),
            ("inspect", "explore_inspect_flung_hub"),
            ("grid", "explore_grid_selection"),
        ):
            _shrink_copy(tmp / f"{src}.png", SHOTS / f"{name}.png")
            print("saved", SHOTS / f"{name}.png")


if __name__ == "__main__":
    main()
