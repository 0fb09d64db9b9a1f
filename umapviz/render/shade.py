"""Shading pixel grids into an RGBA image: datashader colour mapping, then outliers and off-view markers.

Points are mapped with datashader's transfer functions (``eq_hist`` by default, so a dense core and a sparse
halo are both visible). Outliers are drawn on top as discs a few pixels wide with a ring in a contrasting
colour, so a single flung point is visible at any image size. Points outside the view become triangles on
the image border, pointing to where they are, with their count.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from umapviz.render.aggregate import N_EDGE_BINS, Aggregate

# Colour-blind-safe classes on a dark background: Okabe & Ito's palette without black (the background) and
# vermillion (too close to the outlier red), then Paul Tol's "light" palette. Beyond 15 classes colours
# repeat: no palette keeps that many classes apart for every reader.
CLASS_PALETTE = (
    "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#CC79A7",
    "#77AADD", "#EE8866", "#EEDD88", "#FFAABB", "#99DDFF", "#44BB99", "#BBCC33", "#AAAA00", "#DDDDDD",
)  # fmt: skip
# Unlabelled density: dark to pale blue, far from the outlier red in every kind of colour vision.
COUNT_CMAP = ("#16306b", "#2a5caa", "#4f9bd9", "#a9d8f5")


@dataclass(frozen=True)
class Style:
    """How grids become colours. Colours are '#RRGGBB' strings."""

    cmap: tuple[str, ...] = COUNT_CMAP
    palette: tuple[str, ...] = CLASS_PALETTE
    background: str = "#000000"
    outlier_color: str = "#FF2020"
    halo_color: str = "#FFFFFF"  # ring around each outlier disc, and the off-view counts' text
    outlier_radius: int | None = None  # disc radius in pixels; None: about 0.4% of the image size, at least 2
    how: str = "eq_hist"  # datashader's colour normalisation: "eq_hist", "log", "cbrt" or "linear"
    min_alpha: int = 120  # alpha of the least dense non-empty pixel: one ordinary point stays visible
    edge_markers: bool = True
    # Sparse images (few thousand points) grow each lit pixel into its empty neighbours, like datashader's
    # dynspread: done when fewer than this fraction of lit pixels touch another lit pixel. 0 turns it off.
    spread_threshold: float = 0.5
    extra: dict = field(default_factory=dict)  # more keyword arguments for datashader's tf.shade


DEFAULT_STYLE = Style()


def hex_to_rgb(color: str) -> tuple[int, int, int]:
    """'#RRGGBB' -> (r, g, b)."""
    text = color.lstrip("#")
    if len(text) != 6:
        raise ValueError(f"colour {color!r} is not of the form '#RRGGBB'.")
    return int(text[0:2], 16), int(text[2:4], 16), int(text[4:6], 16)


def class_colors(n_labels: int, palette: tuple[str, ...] = CLASS_PALETTE) -> list[str]:
    """One colour per label code 0..n_labels-1 (the palette repeats when there are more labels)."""
    return [palette[i % len(palette)] for i in range(n_labels)]


def outlier_radius(style: Style, width: int, height: int) -> int:
    if style.outlier_radius is not None:
        return max(0, int(style.outlier_radius))
    return max(2, round(min(width, height) / 250))


def shade(agg: Aggregate, style: Style = DEFAULT_STYLE) -> np.ndarray:
    """An (H, W, 4) uint8 RGBA image of ``agg``, opaque, top row first (the largest y)."""
    rgba = shade_points(agg, style)
    if style.spread_threshold > 0:
        spread_sparse_points(rgba, agg.total[::-1] > 0, style.spread_threshold)
    if agg.outlier_counts is not None:
        draw_outliers(rgba, agg.outlier_counts[::-1] > 0, style)
    if style.edge_markers and agg.n_out_of_view:
        draw_edge_markers(rgba, agg.edge_counts, style)
    return rgba


def shade_points(agg: Aggregate, style: Style = DEFAULT_STYLE) -> np.ndarray:
    """The points alone, through datashader's tf.shade, composited over the background; top row first."""
    import datashader.transfer_functions as tf  # noqa: PLC0415 - plotting library, imported where used
    import xarray as xr  # noqa: PLC0415

    h, w = agg.height, agg.width
    # Shade only the non-empty pixels, laid out as one row: empty pixels are transparent whatever the data,
    # and eq_hist, the alpha offset and the colour mix depend only on the non-empty values. The colours equal
    # those of shading the whole grid (bit for bit for density; within one level for classes, whose float32
    # mix rounds by memory layout) at a fraction of the cost (the classes' mix of a full 800 x 800 x 10 grid
    # alone takes ~100 ms here).
    flat = agg.counts.reshape(h * w, -1)
    lit = np.flatnonzero(agg.total)
    out = np.empty((h, w, 4), dtype=np.uint8)
    out.view(np.uint32).fill(np.array([*hex_to_rgb(style.background), 255], np.uint8).view(np.uint32)[0])
    if lit.size:
        row = flat[lit][None]  # (1, M, K)
        if agg.counts.ndim == 2:
            grid = xr.DataArray(row[..., 0], dims=("y", "x"))
            options = {"cmap": list(style.cmap)}
        else:
            k = agg.counts.shape[2]
            grid = xr.DataArray(row, dims=("y", "x", "label"), coords={"label": np.arange(k)})
            options = {"color_key": class_colors(k, style.palette), "color_baseline": 0}
        with _one_blas_thread():
            image = tf.shade(grid, how=style.how, min_alpha=style.min_alpha, **options, **style.extra)
        # datashader packs RGBA into uint32 as bytes R, G, B, A (little-endian 0xAABBGGRR).
        colours = np.ascontiguousarray(image.values).view(np.uint8).reshape(-1, 4)
        rows, cols = np.divmod(lit, w)
        top_first = (h - 1 - rows) * w + cols  # datashader's row 0 is the bottom; images start at the top
        out.reshape(h * w, 4)[top_first] = composite(colours, style.background)
    return out


# The 8 neighbours, the 4 nearest first: a pixel between two points takes the colour of the nearer one.
_NEIGHBOURS = ((0, 1), (0, -1), (1, 0), (-1, 0), (1, 1), (1, -1), (-1, 1), (-1, -1))


def spread_sparse_points(rgba: np.ndarray, lit: np.ndarray, threshold: float = 0.5) -> bool:
    """Grow lit pixels (``lit``, top row first) by one pixel into empty neighbours if the image is sparse.

    Sparse means: fewer than ``threshold`` of the lit pixels have a lit 4-neighbour. Returns whether it spread.
    """
    n_lit = int(lit.sum())
    if n_lit == 0:
        return False
    touching = np.zeros_like(lit)
    touching[1:] |= lit[:-1]
    touching[:-1] |= lit[1:]
    touching[:, 1:] |= lit[:, :-1]
    touching[:, :-1] |= lit[:, 1:]
    if (lit & touching).sum() >= threshold * n_lit:
        return False
    h, w = lit.shape
    ys, xs = np.nonzero(lit)
    colours = rgba[ys, xs]
    filled = lit.copy()
    for dy, dx in _NEIGHBOURS:
        ty, tx = ys + dy, xs + dx
        ok = (ty >= 0) & (ty < h) & (tx >= 0) & (tx < w)
        ty, tx, c = ty[ok], tx[ok], colours[ok]
        free = ~filled[ty, tx]
        rgba[ty[free], tx[free]] = c[free]
        filled[ty[free], tx[free]] = True
    return True


@functools.cache
def _blas_controller():
    from threadpoolctl import ThreadpoolController  # noqa: PLC0415 - comes with scikit-learn

    return ThreadpoolController()


def _one_blas_thread():
    """A context in which BLAS runs on one thread.

    datashader mixes class colours with a small matrix product ((M, K) @ (K, 3)); a multi-threaded BLAS
    spends more time waking its threads than computing, and on a busy machine it took 2.6x longer.
    """
    return _blas_controller().limit(limits=1, user_api="blas")


def composite(rgba: np.ndarray, background: str) -> np.ndarray:
    """Straight-alpha RGBA over an opaque background colour -> opaque RGBA (a new array)."""
    alpha = rgba[..., 3:4].astype(np.uint16)
    bg = np.array(hex_to_rgb(background), dtype=np.uint16)
    rgb = (rgba[..., :3].astype(np.uint16) * alpha + bg * (255 - alpha) + 127) // 255
    out = np.empty(rgba.shape, dtype=np.uint8)
    out[..., :3] = rgb
    out[..., 3] = 255
    return out


def disc_offsets(radius: int) -> np.ndarray:
    """(M, 2) integer (dy, dx) offsets within a disc of ``radius`` pixels."""
    r = np.arange(-radius, radius + 1)
    dy, dx = np.meshgrid(r, r, indexing="ij")
    keep = dy * dy + dx * dx <= radius * radius + radius  # the "+ radius" rounds the disc's edge nicely
    return np.stack([dy[keep], dx[keep]], axis=1)


def dilate(mask: np.ndarray, radius: int) -> np.ndarray:
    """``mask`` grown by a disc of ``radius`` pixels (our own: cheap for the few pixels outliers cover)."""
    if radius <= 0 or not mask.any():
        return mask.copy()
    h, w = mask.shape
    offsets = disc_offsets(radius)
    out = np.zeros_like(mask)
    ys, xs = np.nonzero(mask)
    if ys.size * len(offsets) <= 4 * h * w:  # few marked pixels: stamp the disc on each
        yy = (ys[:, None] + offsets[None, :, 0]).ravel()
        xx = (xs[:, None] + offsets[None, :, 1]).ravel()
        ok = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
        out[yy[ok], xx[ok]] = True
        return out
    for dy, dx in offsets:  # many: OR shifted copies of the whole mask
        src = mask[max(0, -dy) : h - max(0, dy), max(0, -dx) : w - max(0, dx)]
        out[max(0, dy) : h - max(0, -dy), max(0, dx) : w - max(0, -dx)] |= src
    return out


def draw_outliers(rgba: np.ndarray, mask: np.ndarray, style: Style = DEFAULT_STYLE) -> None:
    """Paint outlier pixels (``mask``, top row first) as ringed discs, in place."""
    if not mask.any():
        return
    radius = outlier_radius(style, mask.shape[1], mask.shape[0])
    disc = dilate(mask, radius)
    ring = dilate(disc, 1) & ~disc
    rgba[ring, :3] = hex_to_rgb(style.halo_color)
    rgba[disc, :3] = hex_to_rgb(style.outlier_color)
    rgba[ring | disc, 3] = 255


@functools.lru_cache(maxsize=16)
def pil_font(size: int):
    """Pillow's built-in font at ``size`` pixels (loaded once per size)."""
    from PIL import ImageFont  # noqa: PLC0415

    return ImageFont.load_default(size=size)


MAX_LABELS_PER_SIDE = 3


def marker_size(width: int, height: int) -> int:
    return max(7, min(width, height) // 50)


def edge_marker_positions(width: int, height: int, n_bins: int = N_EDGE_BINS) -> np.ndarray:
    """(4, n_bins, 2) pixel (x, y), top-left origin, of each side's bin centres on the image border."""
    centres = (np.arange(n_bins) + 0.5) / n_bins  # 0..1 along the side: left->right, bottom->top
    pos = np.zeros((4, n_bins, 2))
    pos[0, :, 0], pos[0, :, 1] = 0, (1 - centres) * height  # left
    pos[1, :, 0], pos[1, :, 1] = width - 1, (1 - centres) * height  # right
    pos[2, :, 0], pos[2, :, 1] = centres * width, height - 1  # bottom
    pos[3, :, 0], pos[3, :, 1] = centres * width, 0  # top
    return pos


def draw_edge_markers(rgba: np.ndarray, edge_counts: np.ndarray, style: Style = DEFAULT_STYLE) -> None:
    """Draw a triangle pointing out of the image for each non-empty edge bin, larger for more points.

    The largest bins of each side (at most MAX_LABELS_PER_SIDE) get their count written beside them, and the
    total off-view count is written in the bottom-left corner, so a ring of markers stays readable.
    """
    from PIL import Image, ImageDraw  # noqa: PLC0415

    h, w = rgba.shape[:2]
    s = marker_size(w, h)
    font = pil_font(max(11, round(s * 1.6)))
    pil = Image.fromarray(rgba)
    draw = ImageDraw.Draw(pil)
    color = hex_to_rgb(style.outlier_color)
    text_color = hex_to_rgb(style.halo_color)
    positions = edge_marker_positions(w, h, edge_counts.shape[1])
    top_count = float(edge_counts.max())
    # (outward direction, along-side direction) per side, in image coordinates (y grows downwards)
    frames = {0: ((-1, 0), (0, 1)), 1: ((1, 0), (0, 1)), 2: ((0, 1), (1, 0)), 3: ((0, -1), (1, 0))}
    for side in range(4):
        (ox, oy), (ax, ay) = frames[side]
        bins = np.flatnonzero(edge_counts[side])
        labelled = set(bins[np.argsort(-edge_counts[side, bins], kind="stable")[:MAX_LABELS_PER_SIDE]].tolist())
        for b in bins:
            count = int(edge_counts[side, b])
            x, y = positions[side, b]
            size = s * (0.6 + 0.4 * np.log1p(count) / np.log1p(top_count))  # one point: 60%, the most: 100%
            # The tip touches the border; the base lies `size` pixels inside.
            base_c = (x - ox * size, y - oy * size)
            base = [(base_c[0] + ax * size * 0.7, base_c[1] + ay * size * 0.7),
                    (base_c[0] - ax * size * 0.7, base_c[1] - ay * size * 0.7)]  # fmt: skip
            draw.polygon([(x, y), *base], fill=color, outline=text_color)
            if b in labelled:
                tx, ty = x - ox * (s + 3), y - oy * (s + 3)
                anchor = {0: "lm", 1: "rm", 2: "mb", 3: "mt"}[side]
                draw.text((tx, ty), str(count), fill=text_color, font=font, anchor=anchor)
    total = int(edge_counts.sum())
    summary = f"{total:,} point{'s' if total != 1 else ''} outside the view"
    draw.text((2 * s + 4, h - 2 * s - 6), summary, fill=text_color, font=font, anchor="lb")
    rgba[...] = np.asarray(pil)
