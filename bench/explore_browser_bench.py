"""The Explorer's response times in the browser: JupyterLab headless, driven by Playwright in Debian's Chromium.

    nice -n 10 .venv/bin/python bench/explore_browser_bench.py               # default dataset, 1,600 px window
    .venv/bin/python bench/explore_browser_bench.py --width 700 --repeats 20

The default dataset's graph and initial layout are built (or read from the cache) before the clock starts, as
after a first run; the page is offline, as in the browser tests (whose set-up it uses: tests/test_browser.py).
What is timed, each --repeats times (--starts for the first frame), p50 and p95:

- first frame: from running the cell ``explorer = umapviz.Explorer()`` in a freshly restarted kernel to its
  first image in the page (imports included);
- playing: the gaps between frames arriving in the page over --play-seconds after Play, as frames per second;
- click to inspector: from the mouse button going down on a point (in the page's clock) to the inspector
  showing that point's index;
- wheel zoom to redraw: from one wheel step over the plot (the page's clock) to the frame drawn at full
  resolution for the new range arriving in the page (BokehJS first stretches the old image; the zoomed frame
  is what counts).

Targets (issue 42): click <= 200 ms, wheel zoom <= 300 ms, first frame <= 5 s, >= 5 frames/s playing. Prints a
markdown table (date, machine, command) for bench/RESULTS.md and writes bench/out/explore_browser.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_browser import (  # noqa: E402 - the browser tests' set-up, on the path just added
    CHROMIUM,
    CHROMIUM_ARGS,
    _command,
    _open_notebook,
    _wait_for,
    _write_notebook,
    jupyter_lab,
)
from test_browser_plot import FRAMES, KERNEL_RUN, _to_page  # noqa: E402

CELL = "import umapviz\nexplorer = umapviz.Explorer()\nexplorer"
LOST_AFTER_S = 15  # a zoom the kernel has not taken by then is lost (none took more than a few seconds)
TARGETS = {"click_ms": 200.0, "wheel_ms": 300.0, "first_frame_s": 5.0, "fps": 5.0}

# The newest bokeh document with an image (the Explorer's plot once it drew a frame); documents of earlier runs
# stay in window.Bokeh.documents, so a start waits for one past those it found.
IMAGE_DOCS = """() => {
  const docs = [];
  (window.Bokeh ? window.Bokeh.documents : []).forEach((doc, i) => {
    for (const model of doc.all_models) {
      const data = model.data;
      const image = data instanceof Map ? data.get('image') : (data ? data.image : undefined);
      if (image && image[0] && image[0].length > 4) { docs.push(i); break; }
    }
  });
  return docs;
}"""
# Page-clock stamps: the last pointer press and wheel step (capture phase, before BokehJS sees them), each image
# change of the newest document, and when the inspector shows an index.
STAMPS = """() => {
  window.__bench = {down: null, wheel: null, frames: [], inspected: null};
  document.addEventListener('pointerdown', () => { window.__bench.down = performance.now(); }, true);
  document.addEventListener('wheel', () => { window.__bench.wheel = performance.now(); }, true);
  const docs = window.Bokeh.documents, doc = docs[docs.length - 1];
  doc.on_change((event) => {
    const model = event.model || event.column_source;
    const data = model ? model.data : undefined;
    const image = data instanceof Map ? data.get('image') : (data ? data.image : undefined);
    if (image !== undefined) { window.__bench.frames.push(performance.now()); }
  });
  new MutationObserver(() => {
    const shown = document.querySelector('.umapviz-inspector [data-index]');
    const index = shown ? shown.getAttribute('data-index') : null;
    if (index !== null && window.__bench.inspected === null) { window.__bench.inspected = [index, performance.now()]; }
  }).observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--width", type=int, default=1600, help="the browser window's width, pixels")
    parser.add_argument("--repeats", type=int, default=10, help="clicks and wheel zooms timed")
    parser.add_argument("--starts", type=int, default=3, help="first frames timed (a kernel restart each)")
    parser.add_argument("--play-seconds", type=float, default=6.0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = parser.parse_args()

    cache = Path(os.environ.get("UMAPVIZ_CACHE_DIR") or ROOT / "data" / "cache")
    os.environ["UMAPVIZ_CACHE_DIR"] = str(cache)
    progress(f"graph, initial layout and first render, cached in {cache} ...")
    warm()
    with tempfile.TemporaryDirectory(prefix="umapviz-bench-") as scratch:
        lab_root = Path(scratch) / "lab"
        lab_root.mkdir()
        _write_notebook(lab_root / "explorer.ipynb", (CELL,))
        with jupyter_lab(lab_root, Path(scratch), UMAPVIZ_CACHE_DIR=str(cache)) as lab:
            result = measure(lab, args)
    result.update(
        width=args.width,
        load_average_1min=round(os.getloadavg()[0], 2),
        cpus=os.cpu_count(),
        commit=_commit(),
        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "explore_browser.json").write_text(json.dumps(result, indent=2) + "\n")
    print(table(result, args))


def warm() -> None:
    """The default dataset's graph and initial layout in the cache, and the renderer compiled, as a first run
    leaves them."""
    from umapviz.widgets import session  # noqa: PLC0415
    from umapviz.widgets.explorer.params import ExplorerParams  # noqa: PLC0415

    source = session.load_source(session.datasets.DEFAULT)
    graph = session.build(source, {})
    session.LayoutRun(graph, session.make_optimizer(graph, ExplorerParams().layout_kwargs()), source.labels).image(
        480, 480
    )


def measure(lab: dict, args: argparse.Namespace) -> dict:
    from playwright.sync_api import sync_playwright  # noqa: PLC0415 - optional (the [test] extra)

    result: dict = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = _open_notebook(browser, lab, "explorer.ipynb", width=args.width)
            page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget", timeout=30_000)
            if page.evaluate("() => !window.jupyterapp.shell.leftCollapsed"):
                _command(page, "application:toggle-left-area")

            firsts = []
            for start in range(args.starts):
                if start:
                    page.evaluate(
                        "async () => { await window.jupyterapp.shell.currentWidget.sessionContext.session"
                        ".kernel.restart(); }"
                    )
                    _wait_for(lambda: kernel(page, "print('up')") == "up\n", 120, "the restarted kernel")
                _command(page, "notebook:clear-all-cell-outputs")
                known = page.evaluate("() => (window.Bokeh ? window.Bokeh.documents.length : 0)")
                begin = time.perf_counter()
                _command(page, "notebook:run-cell", 0)
                page.wait_for_function(f"() => ({IMAGE_DOCS})().some((i) => i >= {known})", timeout=180_000)
                firsts.append(time.perf_counter() - begin)
                progress(f"first frame {firsts[-1]:.2f} s")
            result["first_frame_s"] = summary(firsts)
            _wait_for(lambda: kernel(page, "explorer.wait(); print('idle')") == "idle\n", 120, "the first frame")
            result["frame_px"] = json.loads(kernel(page, "print(explorer.controller.params.size)"))
            page.locator(".umapviz-explorer .umapviz-plot").scroll_into_view_if_needed()
            page.evaluate(STAMPS)

            # Playing: the gaps between frames arriving in the page.
            page.click("button.umapviz-play")
            page.wait_for_function("() => window.__bench.frames.length >= 2", timeout=60_000)
            time.sleep(args.play_seconds)  # a measuring window, not a wait for a condition
            page.click("button.umapviz-pause")
            frames = page.evaluate("window.__bench.frames")
            gaps = [b - a for a, b in zip(frames, frames[1:], strict=False)]
            result["fps"] = round((len(frames) - 1) / ((frames[-1] - frames[0]) / 1000), 2)
            result["frame_gap_ms"] = summary(gaps)
            kernel(page, "explorer.pause(); explorer.wait(); print('paused')")
            progress(f"playing: {result['fps']} frames/s")

            clicks, wheels = [], []
            for repeat in range(args.repeats):
                clicks.append(click_to_inspector(page, repeat))
                wheels.append(wheel_to_redraw(page))
            taken = [w for w in wheels if w is not None]
            result["click_ms"], result["wheel_ms"] = summary(clicks), summary(taken)
            result["wheel_lost"] = len(wheels) - len(taken)
            progress(f"click {result['click_ms']}, wheel {result['wheel_ms']}")
        finally:
            browser.close()
    return result


def kernel(page, code: str) -> str:
    """What ``code`` prints in the notebook's kernel (run without a cell: a cell run scrolls the page)."""
    return page.evaluate(KERNEL_RUN, code)


def plot_frame(page) -> list[float]:
    """The Explorer's plot frame on the page once it stopped moving."""
    last = [None]

    def still():
        now = page.evaluate(FRAMES)[-1]
        moved, last[0] = now != last[0], now
        return not moved and now

    return _wait_for(still, 30, "the plot to stop moving")


def click_to_inspector(page, seed: int) -> float:
    """Milliseconds from pressing on a point (drawn with ``seed``) to the inspector showing its index (nothing
    inspected before)."""
    report = json.loads(
        kernel(
            page,
            "import json, numpy as np\nexplorer.clear(); explorer.reset_view(); explorer.wait()\n"
            "_l = np.asarray(explorer.controller.layout_of()); (_x0, _x1), (_y0, _y1) = explorer.view_range\n"
            f"_i = np.random.default_rng({seed}).choice(len(_l))\n"
            "print(json.dumps({'range': explorer.view_range, 'at': _l[_i].tolist()}))",
        )
    )
    page.wait_for_function("() => !document.querySelector('.umapviz-inspector [data-index]')", timeout=30_000)
    frame = plot_frame(page)
    page.evaluate("() => { window.__bench.inspected = null; window.__bench.down = null; }")
    page.mouse.click(*_to_page(frame, report["range"], *report["at"]))
    page.wait_for_function("() => window.__bench.inspected !== null && window.__bench.down !== null", timeout=30_000)
    _index, shown = page.evaluate("window.__bench.inspected")
    return shown - page.evaluate("window.__bench.down")


def wheel_to_redraw(page) -> float | None:
    """Milliseconds from one wheel step over the plot's centre to the zoomed frame arriving in the page; None
    when the kernel never heard of the zoom (the page zoomed, the kernel's range stayed)."""
    kernel(page, "explorer.clear(); explorer.reset_view(); explorer.wait()")
    frame = plot_frame(page)
    page.evaluate("() => { window.__bench.frames = []; window.__bench.wheel = null; }")
    page.mouse.move(frame[0] + frame[2] / 2, frame[1] + frame[3] / 2)
    page.mouse.wheel(0, -200)
    try:
        _wait_for(
            lambda: kernel(page, "explorer.wait(); print(explorer.controller.view_range is not None)") == "True\n",
            LOST_AFTER_S,
            "the kernel to take the zoom",
            interval=0.5,
        )
    except AssertionError:
        return None  # the zoom never reached the kernel: counted as lost
    page.wait_for_function("() => window.__bench.wheel !== null && window.__bench.frames.length > 0", timeout=30_000)
    stamps = page.evaluate("window.__bench")
    after = [t for t in stamps["frames"] if t > stamps["wheel"]]
    return after[0] - stamps["wheel"]


def summary(values: list[float]) -> dict:
    """p50 and p95 (nearest rank) of ``values``, and how many."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    digits = 2 if ordered[-1] < 100 else 0
    return {"p50": round(statistics.median(ordered), digits), "p95": round(p95, digits), "n": len(ordered)}


def table(r: dict, args: argparse.Namespace) -> str:
    command = "python bench/explore_browser_bench.py " + shlex.join(sys.argv[1:])
    rows = [
        ("click on a point to a filled inspector, ms", r["click_ms"], f"<= {TARGETS['click_ms']:.0f}"),
        (
            f"wheel zoom to the full-resolution redraw, ms ({r['wheel_lost']} more never reached the kernel)",
            r["wheel_ms"],
            f"<= {TARGETS['wheel_ms']:.0f}",
        ),
        ("first frame after running the cell (fresh kernel), s", r["first_frame_s"], "<= 5"),
        (f"gap between frames playing, ms ({r['fps']} frames/s)", r["frame_gap_ms"], ">= 5 frames/s"),
    ]
    lines = [
        f"{r['date']}, commit {r['commit']}, {platform.machine()} {r['cpus']} CPUs, load {r['load_average_1min']}, "
        f"window {r['width']} px (frames {r['frame_px']} px), `{command.strip()}`",
        "",
        "| what | p50 | p95 | n | target |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {what} | **{v['p50']}** | {v['p95']} | {v['n']} | {target} |" for what, v, target in rows]
    return "\n".join(lines)


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
