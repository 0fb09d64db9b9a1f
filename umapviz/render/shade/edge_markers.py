"""Points outside the view, drawn as triangles on the image border pointing to where they are, with their count
beside them and in total in the bottom-left corner when the image is large enough for text (``text_fits``)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from umapviz.render.aggregate import N_EDGE_BINS
from umapviz.render.shade.style import DEFAULT_STYLE, Style, hex_to_rgb


@functools.lru_cache(maxsize=16)
def pil_font(size: int):
    """Pillow's built-in font at ``size`` pixels (loaded once per size)."""
    from PIL import ImageFont  # noqa: PLC0415

    return ImageFont.load_default(size=size)


# Text is drawn on an image only where it stays small beside the data: the off-view counts' font may be at most
# 1/TEXT_SHARE of the image's smaller side (one line of text, at most ~6% of the height), which with the
# smallest font (11 px) means images of at least 176 x 176 pixels; the total's line must also fit between the
# corner margins (clear of the right side's markers) rather than run off the image. Smaller images (thumbnails,
# comparison grids) keep the border triangles but get no text: on a 60 x 60 image one line of it covered a
# fifth of the height and ran across the data. The count stays available as Aggregate.n_out_of_view (returned
# by ``render``), in LiveView's caption and in side_by_side's footer.
TEXT_SHARE = 16


def marker_size(width: int, height: int) -> int:
    """Size in pixels of the largest off-view triangle (its depth into the image)."""
    return max(7, min(width, height) // 50)


def marker_font_size(width: int, height: int) -> int:
    """Font size in pixels of the off-view counts written on a ``width`` x ``height`` image."""
    return max(11, round(marker_size(width, height) * 1.6))


def text_fits(width: int, height: int) -> bool:
    """Whether the off-view counts may be written on a ``width`` x ``height`` image (see TEXT_SHARE)."""
    return marker_font_size(width, height) * TEXT_SHARE <= min(width, height)


def off_view_summary(total: int) -> str:
    """The total written in the bottom-left corner, e.g. '1,234 points outside the view'."""
    return f"{total:,} point{'s' if total != 1 else ''} outside the view"


def summary_position(width: int, height: int, total: int) -> tuple[float, float] | None:
    """Left-baseline ("lb") anchor of the off-view total on a ``width`` x ``height`` image, or None when the
    image is too small for it (see TEXT_SHARE): then it is not drawn."""
    if not text_fits(width, height):
        return None
    s = marker_size(width, height)
    margin = 2 * s + 4  # clear of the left and right sides' triangles
    xy = (margin, height - 2 * s - 6)
    left, top, right, _ = pil_font(marker_font_size(width, height)).getbbox(off_view_summary(total), anchor="lb")
    if xy[0] + right > width - margin or xy[1] + top < 0:
        return None
    return xy


def shows_off_view_summary(width: int, height: int, total: int, style: Style = DEFAULT_STYLE) -> bool:
    """Whether ``shade`` writes the off-view total (``total`` > 0 points) on a ``width`` x ``height`` image."""
    return bool(
        style.edge_markers and style.edge_text and total > 0 and summary_position(width, height, total) is not None
    )


def edge_marker_positions(width: int, height: int, n_bins: int = N_EDGE_BINS) -> np.ndarray:
    """(4, n_bins, 2) pixel (x, y), top-left origin, of each side's bin centres on the image border."""
    centres = (np.arange(n_bins) + 0.5) / n_bins  # 0..1 along the side: left->right, bottom->top
    pos = np.zeros((4, n_bins, 2))
    pos[0, :, 0], pos[0, :, 1] = 0, (1 - centres) * height  # left
    pos[1, :, 0], pos[1, :, 1] = width - 1, (1 - centres) * height  # right
    pos[2, :, 0], pos[2, :, 1] = centres * width, height - 1  # bottom
    pos[3, :, 0], pos[3, :, 1] = centres * width, 0  # top
    return pos


# (outward direction, along-side direction) per side (left, right, bottom, top), in image coordinates
_SIDE_FRAMES = {0: ((-1, 0), (0, 1)), 1: ((1, 0), (0, 1)), 2: ((0, 1), (1, 0)), 3: ((0, -1), (1, 0))}


def label_bins(edge_counts: np.ndarray, width: int, height: int) -> np.ndarray:
    """``edge_counts`` with neighbouring bins merged (2, 4, ... into one, the same on every side) until every
    triangle's count fits beside it without touching the next one's: each marker then shows its count.

    Parameters
    ----------
    edge_counts : numpy.ndarray
        (4, n_bins) off-view counts per side (Aggregate.edge_counts); n_bins a power of two.
    width, height : int
        The image's size in pixels.
    """
    font = pil_font(marker_font_size(width, height))
    n_bins = edge_counts.shape[1]
    _, top, _, bottom = font.getbbox("0123456789")
    widest = font.getlength(str(int(edge_counts.max(initial=0))))
    # Room a label needs along its side: its height on the left and right, its width on the top and bottom.
    need = {0: bottom - top, 1: bottom - top, 2: widest, 3: widest}
    group = 1
    while group < n_bins and any(
        (height if side < 2 else width) * group / n_bins < need[side] + 4 for side in range(4)
    ):
        group *= 2
    return edge_counts.reshape(4, n_bins // group, group).sum(axis=2, dtype=edge_counts.dtype)


def edge_labels(
    draw: Any, font: Any, counts: np.ndarray, positions: np.ndarray, side: int, marker: int
) -> list[tuple[tuple[float, float], str, str]]:
    """(position, text, anchor) of the count labels of one side, one per non-empty bin, the largest first,
    skipping any whose text would overlap a label already placed (none does on bins from ``label_bins``)."""
    ox, oy = _SIDE_FRAMES[side][0]
    anchor = {0: "lm", 1: "rm", 2: "mb", 3: "mt"}[side]
    bins = np.flatnonzero(counts)
    placed, boxes = [], []
    for b in bins[np.argsort(-counts[bins], kind="stable")]:
        x, y = positions[b]
        xy, text = (x - ox * (marker + 3), y - oy * (marker + 3)), str(int(counts[b]))
        box = draw.textbbox(xy, text, font=font, anchor=anchor)
        if any(box[0] <= o[2] + 2 and o[0] <= box[2] + 2 and box[1] <= o[3] and o[1] <= box[3] for o in boxes):
            continue
        placed.append((xy, text, anchor))
        boxes.append(box)
    return placed


def draw_edge_markers(rgba: np.ndarray, edge_counts: np.ndarray, style: Style = DEFAULT_STYLE) -> None:
    """Draw a triangle pointing out of the image for each non-empty edge bin, larger for more points.

    Each triangle gets its count written beside it (neighbouring bins merged where the counts would not fit, see
    ``label_bins``), and the total off-view count is written in the bottom-left corner. Images too small for
    text beside the data (see TEXT_SHARE) get the triangles alone.
    """
    from PIL import Image, ImageDraw  # noqa: PLC0415

    h, w = rgba.shape[:2]
    s = marker_size(w, h)
    font = pil_font(marker_font_size(w, h))
    write = style.edge_text and text_fits(w, h)
    if write:
        edge_counts = label_bins(edge_counts, w, h)
    pil = Image.fromarray(rgba)
    draw = ImageDraw.Draw(pil)
    color = hex_to_rgb(style.outlier_color)
    text_color = hex_to_rgb(style.halo_color)
    positions = edge_marker_positions(w, h, edge_counts.shape[1])
    top_count = float(edge_counts.max())
    # (outward direction, along-side direction) per side, in image coordinates (y grows downwards)
    for side in range(4):
        (ox, oy), (ax, ay) = _SIDE_FRAMES[side]
        for b in np.flatnonzero(edge_counts[side]):
            count = int(edge_counts[side, b])
            x, y = positions[side, b]
            size = s * (0.6 + 0.4 * np.log1p(count) / np.log1p(top_count))  # one point: 60%, the most: 100%
            # The tip touches the border; the base lies `size` pixels inside.
            base_c = (x - ox * size, y - oy * size)
            base = [
                (base_c[0] + ax * size * 0.7, base_c[1] + ay * size * 0.7),
                (base_c[0] - ax * size * 0.7, base_c[1] - ay * size * 0.7),
            ]
            draw.polygon([(x, y), *base], fill=color, outline=text_color)
        labels = edge_labels(draw, font, edge_counts[side], positions[side], side, s) if write else []
        for xy, text, anchor in labels:
            draw.text(xy, text, fill=text_color, font=font, anchor=anchor)
    total = int(edge_counts.sum())
    at = summary_position(w, h, total) if style.edge_text else None
    if at is not None:
        draw.text(at, off_view_summary(total), fill=text_color, font=font, anchor="lb")
    rgba[...] = np.asarray(pil)
