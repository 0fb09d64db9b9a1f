"""The inspector: one point's ``umapviz.probe.PointInfo`` as a small HTML table with a bar histogram of how
many of its edges fall in each chunk (the tallest bar is ``max_edges_in_one_chunk``: the attractions it receives
summed from one stale position)."""

from __future__ import annotations

import html
import math

from ...probe import PointInfo

HISTOGRAM_WIDTH_PX = 220
HISTOGRAM_HEIGHT_PX = 40
MAX_BARS = 128  # more chunks than this are drawn as this many bars, each the largest of its run of chunks


def inspector_html(info: PointInfo | None) -> str:
    """The inspector's HTML for ``info``; a hint on how to pick a point when it is None.

    Parameters
    ----------
    info : PointInfo or None
        The inspected point's information.
    """
    if info is None:
        return (
            "<div style='color:#888;font-size:13px'>Click a point (or call <code>inspect(index)</code>) to see "
            "why it sits where it does.</div>"
        )
    flags = ", ".join(f"{name} {'<b>yes</b>' if flagged else 'no'}" for name, flagged in info.flagged.items())
    ratio = info.neighbor_distance_ratio
    rows = [
        ("point", f"{info.index:,}" + ("" if info.label is None else f" (class {info.label})")),
        ("degree", f"{info.degree:,} edges, rank {info.degree_rank:,} of {info.n_vertices:,}"),
        ("outlier now", flags or "-"),
        ("first flagged", "-" if info.first_flagged_epoch is None else f"epoch {info.first_flagged_epoch}"),
        ("from neighbours", "-" if not math.isfinite(ratio) else f"{ratio:.3g} typical neighbour distances"),
        (
            "max edges / chunk",
            f"<b>{info.max_edges_in_one_chunk:,}</b> ({html.escape(info.strategy)}"
            + ("" if info.n_chunks is None else f", {info.n_chunks:,} chunks")
            + ")",
        ),
    ]
    cells = "".join(f"<tr><td style='padding-right:8px;color:#888'>{k}</td><td>{v}</td></tr>" for k, v in rows)
    return (
        f"<div class='umapviz-inspector-point' data-index='{info.index}'>"
        f"<table style='font-size:13px;line-height:1.3'>{cells}</table>{histogram_html(info)}"
        f"<div style='font-size:12px;color:#555;max-width:360px'>{html.escape(info.mechanism())}.</div></div>"
    )


def histogram_html(info: PointInfo) -> str:
    """Bars of the point's edges per chunk (per update step), tallest = ``max_edges_in_one_chunk``.

    Parameters
    ----------
    info : PointInfo
        The inspected point's information.
    """
    counts = [int(c) for c in info.edges_per_chunk]
    if not counts:
        return ""
    if len(counts) > MAX_BARS:  # each bar the largest count of its run of chunks, so the maximum stays visible
        step = math.ceil(len(counts) / MAX_BARS)
        counts = [max(counts[i : i + step]) for i in range(0, len(counts), step)]
    top = max(max(counts), 1)
    width = max(1, HISTOGRAM_WIDTH_PX // len(counts) - 1)
    bars = "".join(
        f"<div title='{c} edges' style='display:inline-block;vertical-align:bottom;width:{width}px;margin-right:1px;"
        f"height:{max(1, round(HISTOGRAM_HEIGHT_PX * c / top))}px;background:{'#d55e00' if c == top else '#0072b2'}'>"
        "</div>"
        for c in counts
    )
    return (
        f"<div style='font-size:11px;color:#888;margin-top:4px'>its edges per chunk (max {top:,})</div>"
        f"<div style='height:{HISTOGRAM_HEIGHT_PX}px;line-height:0'>{bars}</div>"
    )
