"""Our array-generic shading (NumPy here; CuPy in test_render_gpu.py) against datashader's tf.shade, and the
threaded PNG encoder against zlib and Pillow.

The reference is ``shade_points_datashader``: tf.shade of the lit pixels, as umapviz shaded before. The
generic path must give the same image bit for bit on every grid below; the one allowed difference is one
level in a class mix of a pixel holding more than 2**24 / 255 points, where datashader's float32 sums round.
"""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from umapviz.render import _png, encode_png
from umapviz.render._colormap import EQ_HIST_BINS, count_levels
from umapviz.render._png import adler32_combine
from umapviz.render.aggregate import N_EDGE_BINS, Aggregate
from umapviz.render.shade import Style, shade, shade_points, shade_points_datashader
from umapviz.render.view import View

H, W = 37, 53  # odd sizes: row flips and flat indices must line up


def make_grid(kind: str, k: int | None, seed: int = 0) -> np.ndarray:
    """A count grid (H, W) or (H, W, k) of one kind."""
    rng = np.random.default_rng(seed)
    shape = (H, W) if k is None else (H, W, k)
    if kind == "dense":
        return rng.integers(0, 500, shape) * (rng.random(shape) < 0.5)
    if kind == "power law":  # many pixels of 1-3 points, a long tail: many eq_hist levels
        return (rng.pareto(1.2, shape) * 3).astype(np.int64)
    if kind == "sparse":
        return (rng.random(shape) < 0.01) * rng.integers(1, 4, shape)
    if kind == "single point":
        grid = np.zeros(shape, dtype=np.int64)
        grid[(5, 7) if k is None else (5, 7, k - 1)] = 1
        return grid
    if kind == "zero":
        return np.zeros(shape, dtype=np.int64)
    if kind == "constant":
        return np.full(shape, 7)
    if kind == "huge":  # counts span more than 65,536 values: eq_hist bins instead of counting exactly
        return rng.integers(0, 3_000_000, shape) * (rng.random(shape) < 0.3)
    raise ValueError(kind)


KINDS = ("dense", "power law", "sparse", "single point", "zero", "constant", "huge")


def grid_aggregate(counts: np.ndarray, outliers: np.ndarray | None = None, edges: np.ndarray | None = None):
    return Aggregate(
        np.ascontiguousarray(counts, dtype=np.uint32),
        None if outliers is None else np.ascontiguousarray(outliers, dtype=np.uint32),
        np.zeros((4, N_EDGE_BINS), np.uint32) if edges is None else edges,
        View((0.0, 1.0), (0.0, 1.0)),
    )


def allowed_difference(kind: str, k: int | None) -> int:
    return 1 if kind == "huge" and k is not None and k > 1 else 0  # float32 sums of > 2**24 in the class mix


@pytest.mark.parametrize("how", ["eq_hist", "log", "cbrt", "linear"])
@pytest.mark.parametrize("k", [None, 1, 3, 10])
@pytest.mark.parametrize("kind", KINDS)
def test_generic_shading_equals_datashader(kind, k, how):
    agg = grid_aggregate(make_grid(kind, k))
    for style in (Style(how=how), Style(how=how, background="#2040a0", min_alpha=60, cmap=("#ffffff", "#ff0000"))):
        ours = shade_points(agg, style)
        reference = shade_points_datashader(agg, style)
        assert ours.shape == (H, W, 4) and ours.dtype == np.uint8
        difference = np.abs(ours.astype(int) - reference).max()
        assert difference <= allowed_difference(kind, k), (kind, k, how, style.background, difference)


def test_the_huge_grid_takes_the_binned_eq_hist_path_and_the_others_do_not():
    for kind, binned in (("huge", True), ("dense", False)):
        totals = make_grid(kind, None).ravel()
        totals = totals[totals > 0].astype(np.uint32)
        levels = count_levels(totals)
        assert (totals.max() - totals.min() >= EQ_HIST_BINS) == binned
        np.testing.assert_array_equal(levels.values[levels.index], totals)  # each pixel finds its own value
        assert levels.pixels.sum() == totals.size


def test_whole_frame_with_outliers_spread_and_markers_equals_the_datashader_path():
    rng = np.random.default_rng(3)
    outliers = np.zeros((H, W), np.uint32)
    outliers[rng.integers(0, H, 6), rng.integers(0, W, 6)] = 1
    outliers[0, 0] = outliers[H - 1, W - 1] = 2  # corners: discs clipped at the border
    edges = np.zeros((4, N_EDGE_BINS), np.uint32)
    edges[1, 5], edges[3, 20] = 7, 1
    # Style.extra (here a no-op for datashader) sends the points through datashader's own tf.shade
    via_datashader = Style(extra={"rescale_discrete_levels": False})
    for kind in ("dense", "sparse", "single point"):
        for k in (None, 4):
            agg = grid_aggregate(make_grid(kind, k, seed=4), outliers, edges)
            ours = shade(agg)
            np.testing.assert_array_equal(ours, shade(agg, via_datashader))
            assert (ours[..., :3] == (255, 32, 32)).all(axis=2).any()  # outlier discs are drawn


def test_sparse_frames_spread_like_before():
    agg = grid_aggregate(make_grid("sparse", None))
    plain = shade(agg, Style(spread_threshold=0))
    spread = shade(agg)
    lit = plain[..., :3].any(axis=2)
    assert spread[..., :3].any(axis=2).sum() > 3 * lit.sum()  # each lone pixel grows into its neighbours
    np.testing.assert_array_equal(spread[lit], plain[lit])  # lit pixels keep their colours


def test_unknown_how_is_named():
    with pytest.raises(ValueError, match="Style.how='sqrt'"):
        shade(grid_aggregate(make_grid("dense", None)), Style(how="sqrt"))


# -- PNG ------------------------------------------------------------------------------------------------
def idat_payload(png: bytes) -> bytes:
    """The concatenated IDAT data of a PNG, each chunk's CRC checked."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, data = 8, b""
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, body = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", png[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + body), kind
        if kind == b"IDAT":
            data += body
        pos += 12 + length
    return data


@pytest.mark.parametrize("level", [0, 1, 6, 9])
@pytest.mark.parametrize(
    "shape, opaque",
    [((7, 5, 4), False), ((800, 800, 4), True), ((600, 500, 4), False), ((3, 30_000, 4), True), ((41, 3000, 3), True)],
)
def test_png_decodes_bit_for_bit(shape, opaque, level):

    rng = np.random.default_rng(7)
    rgba = np.zeros(shape, np.uint8)
    rgba[shape[0] // 4 : shape[0] // 2] = rng.integers(0, 256, (shape[0] // 2 - shape[0] // 4, *shape[1:]))
    if opaque and shape[2] == 4:
        rgba[..., 3] = 255
    png = encode_png(rgba, compress_level=level)
    decoded = np.asarray(Image.open(io.BytesIO(png)))
    channels = 3 if opaque else shape[2]
    np.testing.assert_array_equal(decoded, rgba[..., :channels])
    # zlib itself checks the whole stream, its Adler-32 included; the scanlines are the rows unfiltered
    pixels = rgba[..., :channels].reshape(shape[0], -1)
    expected = np.concatenate([np.zeros((shape[0], 1), np.uint8), pixels], axis=1).tobytes()
    assert zlib.decompress(idat_payload(png)) == expected


def test_png_bytes_do_not_depend_on_the_number_of_threads(monkeypatch):
    rgba = np.random.default_rng(8).integers(0, 256, (800, 800, 4), dtype=np.uint8)
    threaded = encode_png(rgba)
    monkeypatch.setattr(_png, "_pool", lambda: None)  # one thread
    assert encode_png(rgba) == threaded


def test_adler32_of_joined_strings_from_the_parts():
    rng = np.random.default_rng(9)
    for n in (0, 1, 5552, 100_000):  # 5552: zlib's own block length for the modulo
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        for cut in sorted({0, n // 3, n}):
            first, second = data[:cut], data[cut:]
            assert adler32_combine(zlib.adler32(first), zlib.adler32(second), len(second)) == zlib.adler32(data)


def test_png_bad_level_or_empty_image_is_named():
    with pytest.raises(ValueError, match="compress_level"):
        encode_png(np.zeros((4, 4, 4), np.uint8), compress_level=10)
    with pytest.raises(ValueError, match="at least 1 x 1"):
        encode_png(np.zeros((0, 4, 4), np.uint8))
