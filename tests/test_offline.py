"""Offline by default: nothing the kit shows, live or stored in a notebook, loads anything from the internet.

Classrooms, clusters and GPU nodes are often offline, where a page that asks a CDN for BokehJS, Panel or a
stylesheet stays blank or unstyled. BokehJS and Panel come inline (``pn.extension(inline=True)``,
``hv.extension(..., inline=True)``) and Panel's stylesheets as text. The browser's side of it (every
non-local request blocked while notebook 05's live view draws) is in tests/test_browser.py.

Inline BokehJS and Panel carry their own source text, which names URLs it never fetches unless asked (MathJax
for LaTeX, an icon font for icon widgets, licence and documentation links in comments). So stored outputs are
checked for what a page *fetches*: a URL in a bokeh model's ``url`` (an ``ImportedStyleSheet``), in an HTML
``src``/``href`` of a script, stylesheet or image, in a CSS ``@import``/``url()``, or in the autoload lists
BokehJS and Panel load from. What the kit makes itself (its widgets' state, its plot's document, its HTML
export) must name no external URL at all.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
EXTERNAL = r"(?:https?:)?//(?!127\.0\.0\.1|localhost)"
FETCHES = re.compile(
    rf"""
      "url"\s*:\s*"{EXTERNAL}                                                  # a bokeh model's url
    | <(?:script|link|img|iframe|source|embed)\b[^>]*\s(?:src|href)\s*=\s*["']?{EXTERNAL}  # HTML that fetches
    | @import\s+(?:url\()?\s*["']?{EXTERNAL}                                    # CSS
    | url\(\s*["']?{EXTERNAL}
    | (?:js_urls|css_urls|js_modules|js_exports)\s*=\s*(?:\[|\{{)[^\]}}]*?["']{EXTERNAL}  # autoload lists
    """,
    re.VERBOSE,
)
ANY_URL = re.compile(r"https?://[^\s\"'<>)\\]+")


def _texts(value) -> list[str]:
    """Every string in a JSON value, and the value itself as JSON (a dict's ``"url": ...`` is in no one string)."""
    found = [json.dumps(value)]
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            found.append(item)
    return found


def fetched_urls(value) -> list[str]:
    """The places in a JSON value (an output, a widget state) where a page would fetch an external URL."""
    return sorted({_url_at(text, m.end()) for text in _texts(value) for m in FETCHES.finditer(text)})


def _url_at(text: str, end: int) -> str:
    """The URL whose scheme ``FETCHES`` matched, ending at ``end``."""
    start = max(text.rfind("http", 0, end), text.rfind("//", 0, end) if "http" not in text[end - 8 : end] else -1)
    return re.match(r"[^\s\"'<>)\\]*", text[start:]).group(0)


def test_the_check_finds_what_a_page_would_fetch():
    # What notebooks stored before the kit went offline: Panel's stylesheets by URL, and BokehJS from its CDN.
    stylesheet = {"type": "object", "name": "ImportedStyleSheet", "attributes": {"url": "https://cdn.x.org/a.css"}}
    assert fetched_urls({"text/html": "<script>var docs_json = " + json.dumps(stylesheet) + "</script>"})
    assert fetched_urls({"state": {"docs_json": {"roots": [stylesheet]}}})
    assert fetched_urls({"application/javascript": 'const js_urls = ["https://cdn.bokeh.org/bokeh-3.min.js"];'})
    assert fetched_urls({"text/html": '<link rel="stylesheet" href="https://cdn.x.org/a.css">'})
    assert fetched_urls({"text/html": "<style>@import url('//fonts.x.com/f.css');</style>"})
    # Inline library text that only names a URL, and local ones, are not fetches.
    assert not fetched_urls({"application/javascript": '// see: https://docs.x.org/a.html\nt.src = "data:,";'})
    assert not fetched_urls({"text/html": '<script src="http://127.0.0.1:8888/static/x.js"></script>'})
    assert not fetched_urls({"text/html": '<svg xmlns="http://www.w3.org/2000/svg"></svg>'})


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_stored_notebook_fetches_nothing_from_the_internet(path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    places = {}
    for i, cell in enumerate(notebook["cells"]):
        for j, output in enumerate(cell.get("outputs", [])):
            if urls := fetched_urls(output):
                places[f"cell {i}, output {j}"] = urls
    for model_id, state in (
        notebook["metadata"]
        .get("widgets", {})
        .get("application/vnd.jupyter.widget-state+json", {"state": {}})["state"]
        .items()
    ):
        if urls := fetched_urls(state):
            places[f"widget {model_id}"] = urls
    assert not places, f"{path.name} would fetch from the internet (re-run it on the current kit): {places}"


@pytest.fixture
def points():
    rng = np.random.default_rng(0)
    return rng.normal(size=(300, 2)).astype(np.float32), rng.integers(0, 3, 300)


def test_the_plot_widget_names_no_external_url(points):
    from umapviz.widgets.plot import Plot  # noqa: PLC0415 - widget libraries, as the kit loads them

    plot = Plot(200, 200)
    plot.push(points[0], labels=points[1], caption="epoch 0")
    try:
        document = json.dumps(plot.widget.render_bundle)
    finally:
        plot.close()
    assert "ImportedStyleSheet" not in document or "InlineStyleSheet" in document
    assert ANY_URL.findall(document) == []


def test_the_live_view_display_fetches_nothing(points):
    from umapviz.render.live.view import LiveView  # noqa: PLC0415

    live = LiveView(200, 200)
    live.push(points[0], labels=points[1])
    bundle = live._repr_mimebundle_()
    bundle = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "text/html" in bundle
    assert fetched_urls(bundle) == []
    assert "cdn.holoviz.org" not in json.dumps(bundle)


def test_the_explorer_widgets_and_its_html_export_name_no_external_url(tmp_path, blobs_small):
    from ipywidgets.embed import embed_data  # noqa: PLC0415

    from umapviz import Explorer  # noqa: PLC0415

    explorer = Explorer(blobs_small[0], labels=blobs_small[1], size=200, n_epochs=20)
    try:
        explorer.play(5)
        explorer.wait()
        state = json.dumps(embed_data(views=[explorer.panel])["manager_state"])
        page = explorer.export(tmp_path / "run.html").read_text(encoding="utf-8")
    finally:
        explorer.close()
    assert "umapviz-plot" in state  # the plot's widget is among the states checked
    assert ANY_URL.findall(state) == []
    assert ANY_URL.findall(page) == []
