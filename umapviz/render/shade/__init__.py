"""Shading pixel grids into an RGBA image: datashader's colour mapping, then outliers and off-view markers.

Points are coloured as datashader's transfer functions colour them (``eq_hist`` by default, so a dense core and
a sparse halo are both visible), by our own code that runs on NumPy or CuPy grids alike (_colormap): a frame of
a CuPy embedding is shaded on the GPU and only the finished image comes to the host. Outliers are drawn on top
as discs (``outlier_discs``), points outside the view as triangles on the border (``edge_markers``); the
colours and options are a ``Style`` (``style``), the packed-pixel arithmetic is in ``pixels``.
"""

from __future__ import annotations

from dataclasses import replace
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
from umapviz.render.aggregate import Aggregate
from umapviz.render.shade.edge_markers import draw_edge_markers
from umapviz.render.shade.outlier_discs import draw_outliers, outlier_classes
from umapviz.render.shade.pixels import composite, composite_packed, flat_pixels, pack, packed_color, unpack
from umapviz.render.shade.style import (
    DEFAULT_STYLE,
    Style,
    class_colors,
    hex_to_rgb,
)


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
    out = xp.full(h * w, packed_color(style.background), dtype=np.uint32)
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
        colours = composite_packed(rgb, alpha, style.background)
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
    pixels = flat_pixels(image)
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
