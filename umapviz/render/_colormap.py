"""datashader's colour mapping of count grids (``tf.shade``), for NumPy and CuPy grids alike.

Everything datashader computes for a non-empty pixel (its eq_hist, log, cube-root or linear level, the
colour-map interpolation, the alpha of a class mix) depends only on the pixel's count and on how many pixels
hold each count. So the work splits in two:

- per pixel, on the grid's own device (``xp`` is numpy or cupy, chosen by the array's type): find the lit
  pixels, count how many hold each value (a histogram of at most 65,536 bins), then gather each pixel's colour
  from a table by its value;
- per distinct value, on the host with NumPy: the colour table, with datashader's own formulas and NumPy
  calls (``np.interp``, ``np.histogram``, float64 throughout). The table holds at most a few thousand entries
  in practice, so it costs nothing, and it is the same table on both backends.

The result equals datashader's ``tf.shade`` of the lit pixels bit for bit (tests/test_render_colormap.py), on
NumPy and on CuPy. The one computation per pixel is the class mix: integer sums of count x colour (exact in
float64), then datashader's float32 division; it is exact, and so equal everywhere, while a pixel holds fewer
than 2**24 / 255 (~65,800) points; beyond, datashader's float32 sums round and may differ by one level.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from umapviz._backend import to_host, xp_of

HOWS = ("eq_hist", "log", "cbrt", "linear")
# datashader's eq_hist counts each integer value exactly while max - min < this, and uses this many equal
# histogram bins above; the same threshold picks how lit pixels are counted here.
EQ_HIST_BINS = 256 * 256


@dataclass(frozen=True)
class Levels:
    """The distinct values of the lit pixels.

    values: (L,) int64 on the host, ascending; may include values no pixel holds (then ``pixels`` is 0).
    pixels: (L,) int64 on the host, how many lit pixels hold each value.
    index: (M,) int64 on the grid's device, each lit pixel's position in ``values``.
    """

    values: np.ndarray
    pixels: np.ndarray
    index: Any


def count_levels(values: Any) -> Levels:
    """Levels of a non-empty 1-D integer array (NumPy or CuPy) of positive pixel counts."""
    xp = xp_of(values)
    vmin, vmax = int(values.min()), int(values.max())
    if vmax - vmin < EQ_HIST_BINS:  # the usual case: a bincount over the value range
        index = values.astype(xp.int64) - vmin
        pixels = to_host(xp.bincount(index, minlength=vmax - vmin + 1)).astype(np.int64)
        return Levels(np.arange(vmin, vmax + 1, dtype=np.int64), pixels, index)
    # a pixel holds 65,536 points more than the sparsest: sort the few hundred thousand lit values instead
    unique, index, pixels = xp.unique(values, return_inverse=True, return_counts=True)
    return Levels(to_host(unique).astype(np.int64), to_host(pixels).astype(np.int64), index.astype(xp.int64))


def check_how(how: str) -> None:
    if how not in HOWS:
        raise ValueError(f"Style.how={how!r} is not one of {HOWS}; pick one (eq_hist shows dense and sparse parts).")


def scale_levels(levels: Levels, how: str) -> tuple[np.ndarray, tuple[float, float]]:
    """(datashader's ``how`` of each value minus the smallest, (min, max) of it over values that occur).

    datashader subtracts the smallest lit value, then applies ``how``; for eq_hist it counts each integer
    value exactly below EQ_HIST_BINS distinct values, else bins them in EQ_HIST_BINS equal bins, and maps a
    value to the cumulative share of pixels, interpolated at the bins' centres.
    """
    check_how(how)
    present = levels.pixels > 0
    offsets = levels.values - levels.values[present][0]  # the smallest occurring value is levels.values[0]
    if how == "eq_hist":
        span = int(offsets[-1])
        if span < EQ_HIST_BINS:
            hist = np.zeros(span + 1, dtype=np.uint64)
            hist[offsets[present]] = levels.pixels[present]
            centres = np.arange(span + 1)
        else:
            hist, edges = np.histogram(offsets[present], bins=EQ_HIST_BINS, weights=levels.pixels[present])
            centres = (edges[:-1] + edges[1:]) / 2
            keep = hist > 0
            hist, centres = hist[keep], centres[keep]
        cdf = hist.cumsum()
        scaled = np.interp(offsets, centres, cdf / float(cdf[-1]))
    elif how == "log":
        scaled = np.log1p(offsets.astype(np.float64))
    elif how == "cbrt":
        scaled = offsets.astype(np.float64) ** (1 / 3.0)
    else:
        scaled = offsets.astype(np.float64)
    return scaled, (float(scaled[present].min()), float(scaled[present].max()))


def colormap_table(scaled: np.ndarray, span: tuple[float, float], cmap_rgb: np.ndarray) -> np.ndarray:
    """(L, 4) uint8 RGBA per level: datashader's interpolation of a list colour map (alpha 255)."""
    stops = np.linspace(span[0], span[1], len(cmap_rgb))
    table = np.empty((len(scaled), 4), dtype=np.uint8)
    for channel in range(3):
        mapped = np.interp(scaled, stops, cmap_rgb[:, channel], left=255)
        table[:, channel] = np.nan_to_num(mapped, copy=False).astype(np.uint8)  # truncates, like datashader
    table[:, 3] = 255  # a colour map gives every non-empty pixel full alpha (min_alpha is for class mixes)
    return table


def alpha_table(scaled: np.ndarray, span: tuple[float, float], min_alpha: int, alpha: int = 255) -> np.ndarray:
    """(L,) uint8 alpha per level of the pixel totals: datashader's alpha ramp of a class mix."""
    ramp = np.interp(scaled, np.hstack(span), np.array([min_alpha, alpha]), left=0, right=255)
    return np.nan_to_num(ramp, copy=False).astype(np.uint8)


def mix_classes(counts: Any, totals: Any, palette_rgb: np.ndarray, dtype: Any = np.uint8) -> Any:
    """(M, 3) colour values 0..255: each pixel's class colours weighted by its per-class counts.

    counts (M, K) and totals (M,) are xp arrays; the result is on their device, as ``dtype``. datashader sums
    count x colour in float32 and divides by the float32 total. Here the sums are taken in float64, exact for
    any count, then rounded to float32 (exact below 2**24) for datashader's division, and truncated.
    """
    xp = xp_of(counts)
    with _one_blas_thread():
        sums = counts.astype(np.float64) @ xp.asarray(palette_rgb, dtype=np.float64)
    mixed = sums.astype(np.float32) / totals.astype(np.float32)[:, None]
    return mixed.astype(dtype)  # truncation, as datashader's cast to uint8 (values lie in [0, 255])


@functools.cache
def _blas_controller():
    from threadpoolctl import ThreadpoolController  # noqa: PLC0415 - comes with scikit-learn

    return ThreadpoolController()


def _one_blas_thread():
    """A context in which the host's BLAS runs on one thread (a GPU matrix product is unaffected).

    The class mix is a small matrix product ((M, K) @ (K, 3)); a multi-threaded BLAS spends more time waking
    its threads than computing: 68 ms instead of 2.3 ms for 190k pixels x 10 classes on a busy 2-core machine.
    """
    return _blas_controller().limit(limits=1, user_api="blas")
