"""Where the Explorer's first frame in the browser goes: a timeline of one cell, kernel and page side by side.

    .venv/bin/python bench/experiments/first_frame_timeline.py --runs 4                 # this checkout
    .venv/bin/python bench/experiments/first_frame_timeline.py --runs 4 --tree /tmp/base  # alternate with another

Starts JupyterLab (as tests/test_browser.py does, graph and initial layout cached) once per tree, and for each run
opens the notebook in a fresh kernel, runs ``import umapviz; explorer = umapviz.Explorer(); explorer`` and waits
for the first frame (the browser test's VIEW_READY). Runs alternate between the trees, so that a busy machine
weighs on both alike. Kernel side (an IPython startup file in a private IPYTHONDIR): the cell's start and end,
when chosen modules begin importing, and every message the kernel publishes (type, bytes). Page side: when the
cell's first output appears, when BokehJS is defined, when the plot's bokeh document exists, when its image
holds the frame. Times are seconds after Shift+Enter (kernel times on the same clock, the machine's). Prints a
table per run and the medians per tree; ``--json PATH`` writes every run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from test_browser import (  # noqa: E402 - the browser test's own driver
    CHROMIUM,
    CHROMIUM_ARGS,
    VIEW_READY,
    _open_notebook,
    _write_notebook,
    jupyter_lab,
)

CELL = "import umapviz\nexplorer = umapviz.Explorer()\nexplorer"
REPORT = "import json\nprint('TIMELINE ' + json.dumps({'timings': explorer.timings, 'log': __timeline__}))"
WATCH = (
    "umapviz",
    "umapviz.widgets",
    "ipywidgets",
    "umapviz.widgets.plot",
    "panel",
    "holoviews",
    "umapviz.render",
    "datashader",
    "PIL.JpegImagePlugin",
)
STARTUP = textwrap.dedent(f"""\
    import sys, time, builtins
    __timeline__ = []
    builtins.__timeline__ = __timeline__
    _watch = set({WATCH!r})
    def _audit(event, args):
        if event == "import" and args[0] in _watch:
            _watch.discard(args[0])
            __timeline__.append((time.time(), "import " + args[0], 0))
    sys.addaudithook(_audit)
    _ip = get_ipython()
    _ip.events.register("pre_run_cell", lambda *a: __timeline__.append((time.time(), "cell start", 0)))
    _ip.events.register("post_run_cell", lambda *a: __timeline__.append((time.time(), "cell end", 0)))
    _session = _ip.kernel.session
    _send = _session.send
    def _logged_send(stream, msg_or_type, content=None, *args, **kwargs):
        kind = msg_or_type if isinstance(msg_or_type, str) else msg_or_type.get("msg_type", "?")
        size = len(repr(content)) if content is not None else 0
        buffers = kwargs.get("buffers") or []
        size += sum(len(memoryview(b).cast("B")) for b in buffers)
        if kind not in ("status", "execute_input", "stream"):
            __timeline__.append((time.time(), kind, size))
        return _send(stream, msg_or_type, content, *args, **kwargs)
    _session.send = _logged_send
""")
# Page side: milestones stamped with Date.now() (the machine's clock) at each animation frame.
PAGE_WATCH = (
    """() => {
  window.__marks = {};
  const mark = (name) => { if (!(name in window.__marks)) { window.__marks[name] = Date.now() / 1000; } };
  const viewReady = """
    + VIEW_READY
    + """;
  const tick = () => {
    const cell = document.querySelector('.jp-Notebook .jp-Cell .jp-OutputArea-output');
    if (cell) { mark('output shown'); }
    if (window.Bokeh) { mark('BokehJS defined'); }
    if (document.querySelector('.umapviz-explorer')) { mark('panel widgets shown'); }
    if (window.Bokeh && window.Bokeh.documents.length) { mark('bokeh document'); }
    if (document.querySelector('.umapviz-plot canvas')) { mark('plot canvas'); }
    if (viewReady()) { mark('first frame'); return; }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""
)


def one_run(browser, lab: dict, scratch: Path) -> dict:
    page = _open_notebook(browser, lab, "timeline.ipynb")
    try:
        page.click(".jp-Notebook .jp-Cell .cm-content")
        page.evaluate(PAGE_WATCH)
        start = time.time()
        page.keyboard.press("Shift+Enter")
        page.wait_for_function("() => 'first frame' in window.__marks", timeout=120_000, polling=50)
        marks = page.evaluate("window.__marks")
        page.keyboard.press("Shift+Enter")
        out = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea-output")
        out.wait_for(timeout=30_000)
        report = json.loads(out.inner_text().split("TIMELINE ", 1)[1])
        page.evaluate("() => window.jupyterapp.commands.execute('kernelmenu:shutdown')")
    finally:
        page.close()
    events = [(t - start, "kernel " + what, size) for t, what, size in report["log"]]
    events += [(t - start, "page " + what, 0) for what, t in marks.items()]
    events.sort()
    return {
        "first_frame_s": round(marks["first frame"] - start, 3),
        "timings": report["timings"],
        "events": [(round(t, 3), what, size) for t, what, size in events],
        "load": os.getloadavg()[0],
    }


def main() -> None:
    from playwright.sync_api import sync_playwright  # noqa: PLC0415 - optional, as in the browser test

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tree", action="append", default=[], help="another checkout to alternate with")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--quiet", action="store_true", help="medians only")
    args = parser.parse_args()
    trees = [ROOT, *[Path(t).resolve() for t in args.tree]]
    results: dict[str, list] = {str(t): [] for t in trees}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        tmp = Path(tmp)
        cache = tmp / "cache"
        ipython = tmp / "ipython"
        (ipython / "profile_default" / "startup").mkdir(parents=True)
        (ipython / "profile_default" / "startup" / "00-timeline.py").write_text(STARTUP)
        labs, stack = [], []
        for i, tree in enumerate(trees):
            env = dict(PYTHONPATH=str(tree), UMAPVIZ_CACHE_DIR=str(cache), IPYTHONDIR=str(ipython))
            os.environ.update(env)  # the warm-up below, in a child with this tree's code
            os.system(
                f'cd {tree} && {sys.executable} -c "from umapviz.widgets import session; '
                "g = session.build(session.load_source(session.datasets.DEFAULT), {}); "
                "session.initial_layout(g, 'spectral', 0)\""
            )
            root = tmp / f"lab{i}"
            root.mkdir()
            _write_notebook(root / "timeline.ipynb", (CELL, REPORT))
            settings = tmp / "settings" / "@jupyterlab" / "apputils-extension"
            settings.mkdir(parents=True, exist_ok=True)
            (settings / "notification.jupyterlab-settings").write_text(
                '{"fetchNews": "false", "checkForUpdates": false}'
            )
            ctx = jupyter_lab(root, tmp / f"scratch{i}", JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"), **env)
            (tmp / f"scratch{i}").mkdir()
            labs.append(ctx.__enter__())
            stack.append(ctx)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            for run in range(args.runs):
                for tree, lab in zip(trees, labs, strict=True):
                    r = one_run(browser, lab, tmp)
                    results[str(tree)].append(r)
                    print(
                        f"run {run} {tree}: first frame {r['first_frame_s']:.2f} s, load {r['load']:.2f}, "
                        f"stages {r['timings']}",
                        flush=True,
                    )
                    if not args.quiet:
                        for t, what, size in r["events"]:
                            print(f"  {t:7.3f}  {what}" + (f" ({size:,} B)" if size else ""))
        finally:
            browser.close()
            for ctx in reversed(stack):
                ctx.__exit__(None, None, None)
    for tree, runs in results.items():
        ff = [r["first_frame_s"] for r in runs]
        print(f"{tree}: first frame median {statistics.median(ff):.2f} s, runs {ff}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
