"""Small composed figures for notebooks and the CLI, as RGBA arrays: side-by-side panels and an
outlier-count-per-epoch line chart. Drawn with Pillow so they need no plotting backend and save with
``save_png``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from umapviz.render.aggregate import check_embedding, check_outliers
from umapviz.render.frame import render
from umapviz.render.shade.edge_markers import pil_font, shows_off_view_summary
from umapviz.render.shade.style import CLASS_PALETTE, DEFAULT_STYLE, Style, hex_to_rgb
from umapviz.render.view import ViewSpec, check_pixels, resolve_view, square_pixels, union

INK = (230, 230, 230)  # text and axes on the dark figure background
MUTED = (120, 120, 120)  # frame and secondary text
GRID = (48, 48, 48)
PAPER = "#111111"


def draw_caption(rgba: np.ndarray, text: str, size: int | None = None) -> None:
    """Write ``text`` in the top-left corner of ``rgba`` on a dark box, in place."""
    from PIL import Image, ImageDraw  # noqa: PLC0415

    h, w = rgba.shape[:2]
    font = pil_font(size or max(10, min(w, h) // 40))
    pil = Image.fromarray(rgba)
    draw = ImageDraw.Draw(pil)
    left, top, right, bottom = draw.textbbox((6, 6), text, font=font)
    draw.rectangle((left - 3, top - 3, right + 3, bottom + 3), fill=(0, 0, 0))
    draw.text((6, 6), text, fill=INK, font=font)
    rgba[...] = np.asarray(pil)


def side_by_side(
    embeddings: Sequence[Any],
    titles: Sequence[str] | None = None,
    counts: Sequence[int | None] | None = None,
    *,
    labels: Any = None,
    outliers: Sequence[Any] | None = None,
    panel_size: int = 400,
    view: ViewSpec = "robust",
    style: Style = DEFAULT_STYLE,
    title: str | None = None,
    caption: Sequence[str] = (),
) -> np.ndarray:
    """Several embeddings of the same points in a row, each titled, with its outlier count underneath.

    A panel too small to write its off-view count on the image (below about 176 pixels; see shade.TEXT_SHARE)
    gets it underneath instead, on a line of its own.

    Parameters
    ----------
    embeddings : sequence of array, shape (N, 2)
        NumPy or CuPy, e.g. sequential / buffered / chunked results.
    titles : sequence of str, optional
        One per panel.
    counts : sequence of int or None, optional
        Outlier count per panel (None: taken from ``outliers`` if given).
    labels : array of int, optional
        Integer codes shared by all panels.
    outliers : sequence of array of bool or None, optional
        One mask (or None) per panel.
    panel_size : int
        Each panel's side, in pixels.
    view : str or (xmin, xmax, ymin, ymax)
        "robust" (each panel its own; far points become border markers), "auto", "shared" (one view over all
        panels' robust ranges, so sizes compare), or fixed.
    style : Style
        Colours and marks.
    title : str, optional
        The figure's overall title, above the panels (see :func:`add_title_and_caption`).
    caption : sequence of str
        Lines under the panels, e.g. what the counts under them mean.

    Returns
    -------
    numpy.ndarray
        An (H, W, 4) uint8 image.
    """
    from PIL import Image, ImageDraw  # noqa: PLC0415

    panel_size = check_pixels(panel_size, "panel_size")
    if isinstance(embeddings, Mapping):  # iterating it would hand out its keys as the embeddings
        raise ValueError("embeddings is a dict; pass side_by_side(list(d.values()), titles=list(d)).")
    if getattr(embeddings, "ndim", None) == 2:  # one array: iterating it would hand out its rows
        raise ValueError(f"embeddings is one {tuple(embeddings.shape)} embedding; pass a list, e.g. [embedding].")
    n = len(embeddings)
    if n == 0:
        raise ValueError("side_by_side needs at least one embedding.")
    embeddings = [check_embedding(e) for e in embeddings]
    titles = list(titles) if titles is not None else [f"#{i + 1}" for i in range(n)]
    outliers = list(outliers) if outliers is not None else [None] * n
    for name, seq in (("titles", titles), ("outliers", outliers)):
        if len(seq) != n:
            raise ValueError(f"{name} has {len(seq)} entries for {n} embeddings.")
    if counts is None:
        # Read as image() reads them, so the caption counts the discs drawn (indices too, not just masks).
        counts = [
            None if m is None else int(check_outliers(m, e.shape[0]).sum())
            for e, m in zip(embeddings, outliers, strict=True)
        ]
    counts = list(counts)
    if len(counts) != n:
        raise ValueError(f"counts has {len(counts)} entries for {n} embeddings.")
    if isinstance(view, str) and view == "shared":
        shared = union([resolve_view(e, "robust", panel_size, panel_size) for e in embeddings])
        view = square_pixels(shared.bounds, panel_size, panel_size)

    panels, notes = [], []  # notes: the lines under each panel
    for i, emb in enumerate(embeddings):
        panel, agg = render(emb, labels, outliers[i], panel_size, panel_size, view, style=style)
        lines = []
        if counts[i] is not None:
            lines.append(f"{int(counts[i]):,} outlier" + ("" if int(counts[i]) == 1 else "s"))
        off = agg.n_out_of_view
        if off and style.edge_markers and not shows_off_view_summary(panel_size, panel_size, off, style):
            lines.append(f"{off:,} outside the view")  # the image has the triangles but no room for the count
        panels.append(panel)
        notes.append(lines)

    gap, header, line = 12, max(24, panel_size // 14), max(20, panel_size // 16)
    footer = line * max(1, *map(len, notes))
    width = n * panel_size + (n + 1) * gap
    height = header + panel_size + footer + gap
    canvas = Image.new("RGBA", (width, height), PAPER)
    draw = ImageDraw.Draw(canvas)
    title_font, count_font = pil_font(max(12, header * 2 // 3)), pil_font(max(10, line * 2 // 3))
    for i, panel in enumerate(panels):
        x0 = gap + i * (panel_size + gap)
        canvas.paste(Image.fromarray(panel), (x0, header))
        draw.text((x0 + panel_size / 2, header / 2), str(titles[i]), fill=INK, font=title_font, anchor="mm")
        for j, text in enumerate(notes[i]):
            draw.text(
                (x0 + panel_size / 2, header + panel_size + line * (j + 0.5) + 2),
                text,
                fill=INK,
                font=count_font,
                anchor="mm",
            )
    figure = np.asarray(canvas).copy()
    if title is None and not caption:
        return figure
    return add_title_and_caption(figure, title, caption, size=max(10, line * 2 // 3))


def add_title_and_caption(
    image: np.ndarray, title: str | None, caption: Sequence[str] = (), *, size: int = 13
) -> np.ndarray:
    """``image`` with a title line above it and caption lines below it, on the figure background.

    Parameters
    ----------
    image : numpy.ndarray
        An (H, W, 4) uint8 RGBA figure, e.g. from :func:`side_by_side`.
    title : str or None
        One line above the image, larger than the caption; None for none.
    caption : sequence of str
        Lines under the image, left-aligned, e.g. what its counts and markers mean. A line wider than the image is
        wrapped at spaces.
    size : int
        The caption's font size in pixels; the title's is 1.4 times it.

    Returns
    -------
    numpy.ndarray
        A new (H', W, 4) uint8 image.
    """
    from PIL import Image, ImageDraw  # noqa: PLC0415

    rgba = np.asarray(image)
    if rgba.ndim != 3 or rgba.shape[2] != 4 or rgba.dtype != np.uint8:
        raise ValueError(f"image must be an (H, W, 4) uint8 RGBA array; got {rgba.dtype} {rgba.shape}.")
    if isinstance(caption, str):  # iterating it would write one character a line
        caption = [caption]
    width = rgba.shape[1]
    title_font, caption_font = pil_font(round(size * 1.4)), pil_font(size)
    margin = 12
    lines = [part for text in caption for part in _wrap(str(text), caption_font, width - 2 * margin)]
    title_h = round(size * 1.4 * 2) if title else 0
    line_h = round(size * 1.5)
    height = title_h + rgba.shape[0] + len(lines) * line_h + (margin if lines else 0)
    canvas = Image.new("RGBA", (width, height), PAPER)
    canvas.paste(Image.fromarray(rgba), (0, title_h))
    draw = ImageDraw.Draw(canvas)
    if title:
        draw.text((width / 2, title_h / 2), title, fill=INK, font=title_font, anchor="mm")
    y = title_h + rgba.shape[0]
    for text in lines:
        draw.text((margin, y + line_h / 2), text, fill=INK, font=caption_font, anchor="lm")
        y += line_h
    return np.asarray(canvas).copy()


def _wrap(text: str, font: Any, width: float) -> list[str]:
    """``text`` as lines no wider than ``width`` pixels in ``font``, broken at spaces (a longer word overflows)."""
    lines, current = [], ""
    for word in text.split(" "):
        candidate = f"{current} {word}" if current else word
        if current and font.getlength(candidate) > width:
            lines.append(current)
            current = "  " + word  # a continued line is indented
        else:
            current = candidate
    return lines + [current]


def outlier_chart(
    series: Mapping[str, tuple[Sequence[int], Sequence[int]]],
    width: int = 800,
    height: int = 320,
    *,
    title: str = "outliers per epoch",
    log: bool = False,
    colors: Sequence[str] = CLASS_PALETTE,
) -> np.ndarray:
    """A line chart of outlier counts against epoch, one line per named run.

    Parameters
    ----------
    series : mapping of str to (epochs, counts)
        E.g. ``{"buffered": (rec.epochs, rec.outlier_counts())}``. Negative counts (Recording's -1: a frame
        without an outlier mask), NaN and inf are gaps in the line.
    width, height : int
        The image's size in pixels.
    title : str
        Above the chart.
    log : bool
        A log10(1 + count) axis, for runs whose counts differ by orders of magnitude.
    colors : sequence of str
        One colour per line, in turn.

    Returns
    -------
    numpy.ndarray
        An (H, W, 4) uint8 image.
    """
    from PIL import Image, ImageDraw  # noqa: PLC0415

    width, height = check_pixels(width, "width"), check_pixels(height, "height")

    if not series:
        raise ValueError("outlier_chart needs at least one series: {name: (epochs, counts)}.")
    data = {}
    for name, (epochs, counts) in series.items():
        e, c = np.asarray(epochs, dtype=np.float64), np.asarray(counts, dtype=np.float64)
        if e.shape != c.shape or e.ndim != 1 or e.size == 0:
            raise ValueError(f"series {name!r}: epochs and counts must be equal-length, non-empty 1-D.")
        if not np.isfinite(e).all():  # counts may have gaps; an epoch is where to draw, so it must be a place
            raise ValueError(f"series {name!r}: epochs must be finite numbers; got {e[~np.isfinite(e)][0]}.")
        c[~(np.isfinite(c) & (c >= 0))] = np.nan  # no count there (-1: no mask recorded): a gap, not a value
        data[name] = (e, c)
    e_lo = min(e.min() for e, _ in data.values())
    e_hi = max(e.max() for e, _ in data.values())
    c_hi = max(np.nanmax(c, initial=0) for _, c in data.values())
    if e_hi == e_lo:
        e_hi = e_lo + 1

    def yv(c):  # data value -> axis value
        return np.log10(1 + np.maximum(c, 0)) if log else c

    y_ticks = _log_ticks(c_hi) if log else _nice_ticks(0, max(c_hi, 1))
    y_top = max(yv(np.float64(y_ticks[-1])), 1e-9)
    x_ticks = [t for t in _nice_ticks(e_lo, e_hi) if e_lo <= t <= e_hi]

    small, big = pil_font(max(10, height // 26)), pil_font(max(12, height // 18))
    left, right, top, bottom = 60, 20, max(30, height // 9), 40
    pw, ph = width - left - right, height - top - bottom
    if pw < 20 or ph < 20:
        raise ValueError(f"a {width} x {height} chart is too small to draw.")

    def px(e, c):
        return left + (e - e_lo) / (e_hi - e_lo) * pw, top + ph - yv(c) / y_top * ph

    canvas = Image.new("RGBA", (width, height), PAPER)
    draw = ImageDraw.Draw(canvas)
    draw.text((left, top / 2), title, fill=INK, font=big, anchor="lm")
    for t in y_ticks:
        _, y = px(e_lo, t)
        draw.line((left, y, left + pw, y), fill=GRID, width=1)
        draw.text((left - 6, y), _count_label(t), fill=INK, font=small, anchor="rm")
    for t in x_ticks:
        x, _ = px(t, 0)
        draw.line((x, top + ph, x, top + ph + 4), fill=INK)
        draw.text((x, top + ph + 7), f"{t:g}", fill=INK, font=small, anchor="mt")
    draw.text((left + pw / 2, height - 4), "epoch", fill=MUTED, font=small, anchor="mb")
    draw.rectangle((left, top, left + pw, top + ph), outline=MUTED)
    legend = {name: f"{name}: {_last_count(c)}" for name, (_, c) in data.items()}
    legend_width = 26 + max(small.getlength(text) for text in legend.values())
    for i, (name, (e, c)) in enumerate(data.items()):
        color = hex_to_rgb(colors[i % len(colors)])
        runs: list[list[tuple[float, float]]] = [[]]
        for a, b in zip(e, c, strict=True):
            if np.isnan(b):
                runs.append([])  # a gap: the line stops, and the next count starts a new one
            else:
                runs[-1].append(px(a, b))
        for run in runs:
            if len(run) > 1:
                draw.line(run, fill=color, width=2, joint="curve")
        points = [p for run in runs for p in run]
        for x, y in points if len(points) <= 60 else points[-1:]:
            draw.ellipse((x - 2.5, y - 2.5, x + 2.5, y + 2.5), fill=color)
        # legend, top right, one line per series: a swatch, then "name: last count"
        ly = top + 8 + i * (small.size + 6)
        lx = left + pw - 8 - legend_width
        draw.line((lx, ly, lx + 20, ly), fill=color, width=3)
        draw.text((lx + 26, ly), legend[name], fill=INK, font=small, anchor="lm")
    return np.asarray(canvas).copy()


def _last_count(counts: np.ndarray) -> str:
    """The last count of a series (NaN marks gaps) for its legend; "none" when it has no count at all."""
    valid = counts[~np.isnan(counts)]
    return f"{int(valid[-1]):,}" if valid.size else "none"


def _nice_ticks(lo: float, hi: float, target: int = 5) -> list[float]:
    """Round tick values (1, 2, 5 times a power of ten) covering [lo, hi]."""
    span = hi - lo
    raw = span / target
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    start = math.floor(lo / step) * step
    ticks = []
    t = start
    while t < hi + step * 0.999:
        ticks.append(round(t, 10))
        t += step
    return ticks


def _log_ticks(c_hi: float) -> list[float]:
    top = max(1, math.ceil(math.log10(max(c_hi, 1) + 1)))
    return [0.0] + [10.0**k for k in range(top + 1)]


def _count_label(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:g}M"
    if value >= 1e4:
        return f"{value / 1e3:g}k"
    return f"{value:g}"
