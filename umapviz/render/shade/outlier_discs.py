"""Outliers drawn as discs a few pixels wide, so a single flung point is visible at any image size: with class
labels the disc keeps the point's class colour inside a ring of the outlier colour; a thin halo rings either."""

from __future__ import annotations

from typing import Any

import numpy as np

from umapviz._backend import to_host, xp_of
from umapviz.render.aggregate import Aggregate
from umapviz.render.shade.pixels import flat_pixels, packed_color
from umapviz.render.shade.style import DEFAULT_STYLE, Style, class_colors, outlier_radius


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
    pixels = flat_pixels(image)
    pixels[xp.flatnonzero(halo)] = packed_color(style.halo_color)
    pixels[xp.flatnonzero(ring)] = packed_color(style.outlier_color)
    if classes is None:
        return
    n_layers = int(classes.max()) + 1
    colours = class_colors(n_layers, style.palette)
    for code in to_host(xp.unique(classes[mask])).tolist():  # a few classes: one small dilation each
        pixels[xp.flatnonzero(dilate(mask & (classes == code), radius))] = packed_color(colours[code])
