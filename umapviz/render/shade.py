"""Shading pixel grids into an RGBA image: datashader's colour mapping, then outliers and off-view markers.

Points are coloured as datashader's transfer functions colour them (``eq_hist`` by default, so a dense core and
a sparse halo are both visible), by our own code that runs on NumPy or CuPy grids alike (_colormap): a frame of
a CuPy embedding is shaded on the GPU and only the finished image comes to the host. Outliers are drawn on top
as discs a few pixels wide, so a single flung point is visible at any image size: with class labels the disc
keeps the point's class colour inside a ring of the outlier colour (the picture says both which class it left
and that it was flung); without labels it is an outlier-coloured disc. A thin halo rings either. Points
outside the view become triangles on the image border, pointing to where they are, with their count written
beside them and in total in the bottom-left corner when the image is large enough for text not to cover the
data (see ``text_fits``; the count is also ``Aggregate.n_out_of_view``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from umapviz._backend import is_cupy, to_host, xp_of
from umapviz.render._colormap import (
    _one_blas_thread,
    alpha_table,
    check_how,
    colormap_table,
    count_levels,
    mix_classes,
    scale_levels,
)
from umapviz.render.aggregate import N_EDGE_BINS, Aggregate

# Colour-blind-safe classes on a dark background: Okabe & Ito's palette without black (the background) and
# vermillion (too close to the outlier red), then Paul Tol's "light" palette. Beyond 15 classes colours
# repeat: no palette keeps that many classes apart for every reader.
CLASS_PALETTE = (
    "#E69F00",
    "#56B4E9",
    "#009E73",
    "#F0E442",
    "#0072B2",
    "#CC79A7",
    "#77AADD",
    "#EE8866",
    "#EEDD88",
    "#FFAABB",
    "#99DDFF",
    "#44BB99",
    "#BBCC33",
    "#AAAA00",
    "#DDDDDD",
)
# Unlabelled density: dark to pale blue, far from the outlier red in every kind of colour vision.
COUNT_CMAP = ("#16306b", "#2a5caa", "#4f9bd9", "#a9d8f5")


def hex_to_rgb(color: str) -> tuple[int, int, int]:
    """'#RRGGBB' -> (r, g, b)."""
    text = color[1:] if isinstance(color, str) and color.startswith("#") else None
    if text is None or len(text) != 6 or any(c not in "0123456789abcdefABCDEF" for c in text):
        raise ValueError(f"colour {color!r} is not of the form '#RRGGBB' (e.g. '#ff2020').")
    return int(text[0:2], 16), int(text[2:4], 16), int(text[4:6], 16)


OUTLIER_FILLS = ("class", "outlier")


@dataclass(frozen=True)
class Style:
    """How grids become colours. Colours are '#RRGGBB' strings."""

    cmap: tuple[str, ...] = COUNT_CMAP
    palette: tuple[str, ...] = CLASS_PALETTE
    background: str = "#000000"
    outlier_color: str = "#FF2020"  # the ring marking a flung point (its disc too without labels), off-view marks
    halo_color: str = "#FFFFFF"  # thin outer ring of each outlier mark, and the off-view counts' text
    outlier_radius: int | None = None  # disc radius in pixels; None: 0.5% of the image size, at least 3
    # An outlier's disc: "class", the colour of its class where the data has labels (see draw_outliers), else
    # outlier_color; "outlier", outlier_color always (one colour for every flung point).
    outlier_fill: str = "class"
    outlier_ring: int = 2  # width in pixels of the outlier_color ring around a class-coloured disc
    how: str = "eq_hist"  # datashader's colour normalisation: "eq_hist", "log", "cbrt" or "linear"
    min_alpha: int = 120  # alpha of the least dense non-empty pixel: one ordinary point stays visible
    edge_markers: bool = True
    # Write the off-view counts beside the border triangles and their total in a corner. False: the triangles
    # alone, for a view that lays the counts out beside the image, where no point can cover them.
    edge_text: bool = True
    # Sparse images (few thousand points) grow each lit pixel into its empty neighbours, like datashader's
    # dynspread: done when fewer than this fraction of lit pixels touch another lit pixel. 0 turns it off.
    spread_threshold: float = 0.5
    # More keyword arguments for datashader's tf.shade (e.g. rescale_discrete_levels): given any, the points
    # are shaded by datashader itself, on the host (slower; CuPy grids are copied there first).
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Checked here, not when the first frame is shaded: a bad min_alpha wrapped silently in uint8 (300 drew
        # the sparsest pixels almost black) and an empty palette failed as a ZeroDivisionError.
        for name in ("cmap", "palette"):
            colors = getattr(self, name)
            if isinstance(colors, str) or not len(colors):
                raise ValueError(
                    f"Style {name} must be a non-empty sequence of '#RRGGBB' colours, e.g. "
                    f"{name}=('#16306b', '#a9d8f5'); got {colors!r}."
                )
            for color in colors:
                hex_to_rgb(color)
        for name in ("background", "outlier_color", "halo_color"):
            hex_to_rgb(getattr(self, name))
        if isinstance(self.min_alpha, bool) or not isinstance(self.min_alpha, int) or not 0 <= self.min_alpha <= 255:
            raise ValueError(f"Style min_alpha={self.min_alpha!r} must be an int in [0, 255].")
        if self.outlier_radius is not None and (
            isinstance(self.outlier_radius, bool) or not isinstance(self.outlier_radius, int) or self.outlier_radius < 0
        ):
            raise ValueError(f"Style outlier_radius={self.outlier_radius!r} must be None or an int >= 0 (pixels).")
        if self.outlier_fill not in OUTLIER_FILLS:
            raise ValueError(f"Style outlier_fill={self.outlier_fill!r} must be one of {OUTLIER_FILLS}.")
        if isinstance(self.outlier_ring, bool) or not isinstance(self.outlier_ring, int) or self.outlier_ring < 0:
            raise ValueError(f"Style outlier_ring={self.outlier_ring!r} must be an int >= 0 (pixels; 0: no ring).")
        if not 0 <= self.spread_threshold <= 1:
            raise ValueError(f"Style spread_threshold={self.spread_threshold!r} must lie in [0, 1] (0 turns it off).")
        clash = sorted({"how", "min_alpha", "cmap", "color_key", "color_baseline"} & set(self.extra))
        if clash:
            raise ValueError(f"Style extra must not repeat {clash}: set them as Style fields (e.g. Style(how=...)).")


DEFAULT_STYLE = Style()


def class_colors(n_labels: int, palette: tuple[str, ...] = CLASS_PALETTE) -> list[str]:
    """One colour per label code 0..n_labels-1 (the palette repeats when there are more labels)."""
    return [palette[i % len(palette)] for i in range(n_labels)]


def outlier_radius(style: Style, width: int, height: int) -> int:
    if style.outlier_radius is not None:
        return max(0, int(style.outlier_radius))
    return max(3, round(min(width, height) / 200))  # large enough for a class colour to read inside its ring


def shade(agg: Aggregate, style: Style = DEFAULT_STYLE) -> np.ndarray:
    """An (H, W, 4) uint8 RGBA NumPy image of ``agg``, opaque, top row first (the largest y).

    Grids on the GPU (CuPy) are shaded there: only the finished image (H x W x 4 bytes) comes to the host,
    where the off-view markers (a few triangles and numbers) are drawn on it.
    """
    if style.extra:  # options only datashader knows: its own path, on the host
        agg = host_grids(agg)
        image = pack(shade_points_datashader(agg, style))
    else:
        image = shade_packed(agg, style)
    if style.spread_threshold > 0:
        spread_sparse_points(image, agg.total[::-1] > 0, style.spread_threshold)
    if agg.outlier_counts is not None:
        mask = agg.outlier_counts[::-1] > 0
        classes = outlier_classes(agg, mask) if style.outlier_fill == "class" else None
        draw_outliers(image, mask, style, classes)
    rgba = unpack(to_host(image))
    if style.edge_markers and agg.n_out_of_view:
        draw_edge_markers(rgba, agg.edge_counts, style)
    return rgba


def host_grids(agg: Aggregate) -> Aggregate:
    """``agg`` with its grids on the host (itself when they already are)."""
    if not is_cupy(agg.counts):
        return agg
    outliers = None if agg.outlier_counts is None else to_host(agg.outlier_counts)
    return replace(agg, counts=to_host(agg.counts), outlier_counts=outliers, edge_counts=to_host(agg.edge_counts))


# Images being drawn are (H, W) uint32, one packed RGBA pixel each (bytes R, G, B, A in memory, as datashader
# packs them): moving, gathering and scattering one 4-byte word per pixel is several times faster than four
# bytes, on NumPy and CuPy alike. ``unpack`` views the finished image as (H, W, 4) uint8 on the host.
def pack(rgba: np.ndarray) -> np.ndarray:
    """(..., 4) uint8 NumPy RGBA -> (...) uint32 packed pixels (a view when ``rgba`` is C-contiguous)."""
    return np.ascontiguousarray(rgba, dtype=np.uint8).view(np.uint32)[..., 0]


def unpack(image: np.ndarray) -> np.ndarray:
    """(H, W) uint32 packed NumPy image -> (H, W, 4) uint8 RGBA (a view)."""
    return np.ascontiguousarray(image).view(np.uint8).reshape(*image.shape, 4)


def packed_colour(color: str, alpha: int = 255) -> int:
    """'#RRGGBB' -> one packed uint32 pixel value."""
    return int(pack(np.array([*hex_to_rgb(color), alpha], dtype=np.uint8)))


def _composite_packed(rgb: Any, alpha: Any, background: str) -> Any:
    """(M, 3) colours with (M,) alphas over an opaque background -> (M,) uint32 packed opaque pixels.

    The arithmetic of ``composite`` (which it equals), in uint32 on the colours' device (NumPy or CuPy),
    packed with R in the lowest byte: bytes R, G, B, A in memory on little-endian machines (x86, ARM, GPUs).
    """
    xp = xp_of(rgb)
    a = alpha.astype(np.uint32)[:, None]
    bg = xp.asarray(np.array(hex_to_rgb(background), dtype=np.uint32))
    mixed = (rgb.astype(np.uint32) * a + bg * (255 - a) + 127) // 255  # at most 65,152: as exact as uint16
    return mixed[:, 0] | (mixed[:, 1] << 8) | (mixed[:, 2] << 16) | np.uint32(0xFF000000)


def shade_points(agg: Aggregate, style: Style = DEFAULT_STYLE) -> np.ndarray:
    """The points alone as an (H, W, 4) uint8 NumPy image over the background, top row first.

    Colours as datashader's tf.shade colours the lit pixels (``shade_points_datashader``), bit for bit; the
    work runs where the grids are (see ``shade_packed``).
    """
    return unpack(to_host(shade_packed(agg, style)))


def shade_packed(agg: Aggregate, style: Style = DEFAULT_STYLE) -> Any:
    """The points alone as an (H, W) uint32 packed image on the grids' device (NumPy or CuPy), top row first.

    Only the lit pixels are coloured (empty ones are the background whatever the data), each from a table of
    colours by count that is computed once on the host with datashader's formulas (see _colormap); the class
    mix is computed per pixel, on the device.
    """
    check_how(style.how)
    xp = xp_of(agg.counts)
    h, w = agg.height, agg.width
    out = xp.full(h * w, packed_colour(style.background), dtype=np.uint32)
    lit = xp.flatnonzero(agg.total)
    if lit.size == 0:
        return out.reshape(h, w)
    totals = agg.total.reshape(-1)[lit]
    levels = count_levels(totals)
    scaled, span = scale_levels(levels, style.how)
    if agg.counts.ndim == 2:
        cmap = np.array([hex_to_rgb(c) for c in style.cmap])
        table = pack(composite(colormap_table(scaled, span, cmap), style.background))  # alpha 255: plain colours
        colours = xp.asarray(table)[levels.index]
    else:
        k = agg.counts.shape[2]
        palette = np.array([hex_to_rgb(c) for c in class_colors(k, style.palette)])
        rgb = mix_classes(agg.counts.reshape(h * w, k)[lit], totals, palette, dtype=np.uint32)
        alpha = xp.asarray(alpha_table(scaled, span, style.min_alpha))[levels.index]
        colours = _composite_packed(rgb, alpha, style.background)
    rows, cols = lit // w, lit % w
    out[(h - 1 - rows) * w + cols] = colours  # grid row 0 is the bottom; images start at the top
    return out.reshape(h, w)


def shade_points_datashader(agg: Aggregate, style: Style = DEFAULT_STYLE) -> np.ndarray:
    """``shade_points`` through datashader's tf.shade itself (host grids): the reference, and the path for
    ``Style.extra`` options."""
    import datashader.transfer_functions as tf  # noqa: PLC0415 - plotting library, imported where used
    import xarray as xr  # noqa: PLC0415

    h, w = agg.height, agg.width
    # Shade only the non-empty pixels, laid out as one row: empty pixels are transparent whatever the data,
    # and eq_hist, the alpha offset and the colour mix depend only on the non-empty values. The colours equal
    # those of shading the whole grid (bit for bit for density; within one level for classes, whose alpha
    # datashader then takes from a float histogram of 65,536 bins instead of exact counts).
    flat = agg.counts.reshape(h * w, -1)
    lit = np.flatnonzero(agg.total)
    out = np.empty((h, w, 4), dtype=np.uint8)
    out[...] = np.array([*hex_to_rgb(style.background), 255], dtype=np.uint8)
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


def spread_sparse_points(image: Any, lit: Any, threshold: float = 0.5) -> bool:
    """Grow lit pixels (``lit``, top row first) by one pixel into empty neighbours if the image is sparse.

    Sparse means: fewer than ``threshold`` of the lit pixels have a lit 4-neighbour. Returns whether it spread.
    ``image`` ((H, W) packed or (H, W, 4), C-contiguous, changed in place) and ``lit`` are NumPy or CuPy
    arrays on one device.
    """
    xp = xp_of(image)
    n_lit = int(lit.sum())
    if n_lit == 0:
        return False
    touching = xp.zeros_like(lit)
    touching[1:] |= lit[:-1]
    touching[:-1] |= lit[1:]
    touching[:, 1:] |= lit[:, :-1]
    touching[:, :-1] |= lit[:, 1:]
    if int((lit & touching).sum()) >= threshold * n_lit:
        return False
    h, w = lit.shape
    pixels = _flat_pixels(image)
    ys, xs = xp.nonzero(lit)
    colours = pixels[ys * w + xs]
    filled = lit.reshape(-1).copy()
    for dy, dx in _NEIGHBOURS:
        ty, tx = ys + dy, xs + dx
        ok = (ty >= 0) & (ty < h) & (tx >= 0) & (tx < w)
        target, c = ty[ok] * w + tx[ok], colours[ok]
        free = ~filled[target]  # one shift moves distinct pixels to distinct targets: no write races on a GPU
        pixels[target[free]] = c[free]
        filled[target[free]] = True
    return True


def _flat_pixels(image: Any) -> Any:
    """(H * W, ...) view of a C-contiguous (H, W) or (H, W, 4) image: one flat index per pixel."""
    if not image.flags.c_contiguous:
        raise ValueError("the image must be C-contiguous to be drawn on in place; pass np.ascontiguousarray(image).")
    return image.reshape(image.shape[0] * image.shape[1], *image.shape[2:])


def composite(rgba: Any, background: str) -> Any:
    """Straight-alpha RGBA over an opaque background colour -> opaque RGBA (a new array, NumPy or CuPy)."""
    xp = xp_of(rgba)
    alpha = rgba[..., 3:4].astype(np.uint16)
    bg = xp.asarray(np.array(hex_to_rgb(background), dtype=np.uint16))
    rgb = (rgba[..., :3].astype(np.uint16) * alpha + bg * (255 - alpha) + 127) // 255
    out = xp.empty(rgba.shape, dtype=np.uint8)
    out[..., :3] = rgb
    out[..., 3] = 255
    return out


def disc_offsets(radius: int) -> np.ndarray:
    """(M, 2) integer (dy, dx) offsets within a disc of ``radius`` pixels."""
    r = np.arange(-radius, radius + 1)
    dy, dx = np.meshgrid(r, r, indexing="ij")
    keep = dy * dy + dx * dx <= radius * radius + radius  # the "+ radius" rounds the disc's edge nicely
    return np.stack([dy[keep], dx[keep]], axis=1)


def dilate(mask: Any, radius: int) -> Any:
    """``mask`` grown by a disc of ``radius`` pixels (our own: cheap for the few pixels outliers cover).

    NumPy or CuPy; the result is on the mask's device.
    """
    if radius <= 0 or not bool(mask.any()):
        return mask.copy()
    xp = xp_of(mask)
    h, w = mask.shape
    # A disc reaching past the image's far corner already covers all of it: a larger radius only adds offsets
    # that miss the image (and a huge one would allocate (2r + 1)^2 of them).
    offsets = disc_offsets(min(radius, h + w))
    out = xp.zeros(mask.shape, dtype=bool)  # C-contiguous, so the flat view below writes into it
    ys, xs = xp.nonzero(mask)
    if ys.size * len(offsets) <= 4 * h * w:  # few marked pixels: stamp the disc on each
        dyx = xp.asarray(offsets)
        yy = (ys[:, None] + dyx[None, :, 0]).ravel()
        xx = (xs[:, None] + dyx[None, :, 1]).ravel()
        ok = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
        out.reshape(-1)[yy[ok] * w + xx[ok]] = True
        return out
    for dy, dx in offsets.tolist():  # many: OR shifted copies of the whole mask
        if abs(dy) >= h or abs(dx) >= w:  # shifted wholly off the image: the slices below would not match
            continue
        src = mask[max(0, -dy) : h - max(0, dy), max(0, -dx) : w - max(0, dx)]
        out[max(0, dy) : h - max(0, -dy), max(0, dx) : w - max(0, -dx)] |= src
    return out


def outlier_classes(agg: Aggregate, mask: Any) -> Any:
    """(H, W) int class code per outlier pixel (``mask``, top row first; -1 elsewhere), or None without labels.

    The code is that of the class with the most points in the pixel (the lowest code on a tie): the flung
    point's own class when it lies alone there, as a point flung away from the others does. The grids count
    outliers without their classes, so a flagged point inside a crowd of another class takes the crowd's colour.
    Codes index ``class_colors(K)`` as the counts' layers do. On the grids' device (NumPy or CuPy).

    Parameters
    ----------
    agg : Aggregate
        The grids; its ``counts`` are (H, W, K) per class when the points had labels.
    mask : array of bool, shape (H, W)
        The outlier pixels, top row first (as ``agg.outlier_counts[::-1] > 0``).
    """
    if agg.counts.ndim != 3:
        return None
    xp = xp_of(agg.counts)
    classes = xp.full(mask.shape, -1, dtype=np.int64)
    classes[mask] = agg.counts[::-1][mask].argmax(axis=1)
    return classes


def draw_outliers(image: Any, mask: Any, style: Style = DEFAULT_STYLE, classes: Any = None) -> None:
    """Paint outlier pixels (``mask``, top row first) as discs, in place.

    Without ``classes`` each disc is ``style.outlier_color``, ringed by a 1-pixel ``halo_color`` halo. With
    ``classes`` ((H, W) class codes at the outlier pixels, see ``outlier_classes``) each disc takes its class's
    colour from ``style.palette``, inside a ring of ``style.outlier_color`` ``style.outlier_ring`` pixels wide,
    then the halo. Where discs overlap, the higher class code is painted last.

    Parameters
    ----------
    image : array of uint32, shape (H, W)
        A packed image (see ``pack``), NumPy or CuPy, on the mask's device; changed in place.
    mask : array of bool, shape (H, W)
        The outlier pixels, top row first.
    style : Style
        Colours, disc radius and ring width.
    classes : array of int, shape (H, W), or None
        Class codes at the outlier pixels (see ``outlier_classes``); None draws outlier-coloured discs.
    """
    if not bool(mask.any()):
        return
    xp = xp_of(image)
    radius = outlier_radius(style, mask.shape[1], mask.shape[0])
    disc = dilate(mask, radius)
    ring = dilate(disc, style.outlier_ring) if classes is not None else disc
    halo = dilate(ring, 1) & ~ring
    pixels = _flat_pixels(image)
    pixels[xp.flatnonzero(halo)] = packed_colour(style.halo_color)
    pixels[xp.flatnonzero(ring)] = packed_colour(style.outlier_color)
    if classes is None:
        return
    n_layers = int(classes.max()) + 1
    colours = class_colors(n_layers, style.palette)
    for code in to_host(xp.unique(classes[mask])).tolist():  # a few classes: one small dilation each
        pixels[xp.flatnonzero(dilate(mask & (classes == code), radius))] = packed_colour(colours[code])


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
