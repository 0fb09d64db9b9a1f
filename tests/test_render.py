"""umapviz.render on the CPU: grids, views, shading, recordings, export, figures, live view.

Images are checked for content: where a colour appears, how many points a grid holds, what a file holds.
Small images and a few thousand points keep this fast (datashader, the reference of the grids, compiles on its first
call, ~3 s).
"""

from __future__ import annotations

import base64
import importlib
import importlib.util
import io
import json
import os
import re
from types import SimpleNamespace

import datashader.transfer_functions as tf
import numpy as np
import pytest
import xarray as xr
from PIL import Image, ImageDraw
from test_render_colormap import make_grid  # the same grid kinds as the NumPy shading tests (tests/ is on sys.path)

from umapviz._backend import is_cupy, to_host
from umapviz.render import (
    CLASS_PALETTE,
    DEFAULT_STYLE,
    Recording,
    RecordingError,
    Style,
    View,
    aggregate,
    encode_png,
    image,
    outlier_chart,
    record,
    recording_frames,
    render,
    save_gif,
    save_html,
    save_mp4,
    save_png,
    side_by_side,
)
from umapviz.render.aggregate import N_EDGE_BINS, Aggregate
from umapviz.render.shade import shade, shade_points
from umapviz.render.shade.edge_markers import edge_labels, edge_marker_positions, marker_size, pil_font
from umapviz.render.shade.pixels import composite
from umapviz.render.shade.style import class_colors, hex_to_rgb
from umapviz.render.view import data_bounds, resolve_view

OUTLIER_RGB = hex_to_rgb(DEFAULT_STYLE.outlier_color)


def cloud(n: int = 3000, seed: int = 0, centre=(0.0, 0.0), scale: float = 1.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, 2)) * scale + np.asarray(centre)).astype(np.float32)


def where_color(rgba: np.ndarray, rgb) -> np.ndarray:
    """(K, 2) row, col of pixels of exactly this colour."""
    return np.argwhere((rgba[..., :3] == np.asarray(rgb, dtype=np.uint8)).all(axis=2))


# -- aggregation ----------------------------------------------------------------------------------------
def test_grid_counts_every_point_in_range_once():
    emb = cloud(5000, seed=1, scale=2.0)
    view = View((-2.0, 3.0), (-1.0, 1.5))
    agg = aggregate(emb, view, width=64, height=48)
    x, y = emb[:, 0], emb[:, 1]
    inside = (x >= -2) & (x <= 3) & (y >= -1) & (y <= 1.5)
    assert agg.counts.shape == (48, 64)
    assert agg.n_in_view == inside.sum()
    assert agg.n_out_of_view == len(emb) - inside.sum()


def test_points_land_in_their_pixel_bottom_row_first_and_closed_edges():
    view = View((0.0, 10.0), (0.0, 5.0))  # 10 x 5 pixels of one unit each
    emb = np.array([[0.5, 0.5], [9.5, 4.5], [3.2, 1.7], [10.0, 5.0], [0.0, 0.0]], dtype=np.float32)
    agg = aggregate(emb, view, width=10, height=5)
    expected = np.zeros((5, 10), dtype=np.uint32)
    expected[0, 0] = 2  # (0.5, 0.5) and the lower-left corner (0, 0)
    expected[4, 9] = 2  # (9.5, 4.5) and the upper-right corner (10, 5), folded into the last pixel
    expected[1, 3] = 1
    np.testing.assert_array_equal(agg.counts, expected)


def test_off_view_points_counted_on_the_side_they_leave_by():
    view = View((-1.0, 1.0), (-1.0, 1.0))
    emb = np.array(
        [[0, 0], [50, 0], [60, 1], [-40, -1], [0, 70], [0.1, -80], [np.nan, 0], [np.inf, 0]], dtype=np.float32
    )
    agg = aggregate(emb, view, width=20, height=20)
    per_side = agg.edge_counts.sum(axis=1)  # left, right, bottom, top
    np.testing.assert_array_equal(per_side, [1, 2, 1, 1])
    assert agg.n_in_view == 1  # NaN and inf rows are nowhere
    # (50, 0) leaves through the middle of the right side
    right = agg.edge_counts[1]
    assert right[len(right) // 2] + right[len(right) // 2 - 1] >= 1


def test_labels_give_per_label_counts():
    a, b = cloud(1000, 1, (-5, 0)), cloud(500, 2, (5, 0))
    emb = np.concatenate([a, b])
    labels = np.r_[np.zeros(1000, int), np.ones(500, int)]
    agg = aggregate(emb, View((-12.0, 12.0), (-12.0, 12.0)), 40, 40, labels=labels)
    assert agg.counts.shape == (40, 40, 2)
    assert agg.counts[..., 0].sum() == 1000 and agg.counts[..., 1].sum() == 500
    # label 0 lives in the left half, label 1 in the right half
    assert agg.counts[:, :20, 0].sum() == 1000 and agg.counts[:, 20:, 1].sum() == 500


def datashader_grids(emb, view, width, height, labels=None, n_labels=None, outliers=None):
    """The grids datashader itself makes: Canvas.points with count() or count_cat, and count() of the outliers."""
    import datashader as ds  # noqa: PLC0415 - the reference, imported by the tests that compare with it
    import pandas as pd  # noqa: PLC0415 - datashader's input

    canvas = ds.Canvas(plot_width=width, plot_height=height, x_range=view.x_range, y_range=view.y_range)
    frame = pd.DataFrame(emb, columns=["x", "y"])
    if labels is None:
        counts = canvas.points(frame, "x", "y", agg=ds.count()).values
    else:
        frame["label"] = pd.Categorical.from_codes(labels, categories=np.arange(n_labels))
        counts = canvas.points(frame, "x", "y", agg=ds.count_cat("label")).values
    flung = None
    if outliers is not None:
        flung = canvas.points(pd.DataFrame(emb[outliers], columns=["x", "y"]), "x", "y", agg=ds.count()).values
    return counts, flung


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("coloured", [False, True])
def test_host_grids_equal_datashader_bit_for_bit(dtype, coloured):
    """Points on every pixel border and view edge (and one ulp either side), NaN, inf and far rows: the host's
    Numba pass puts each in datashader's pixel, by label and for the outlier grid too, in C and Fortran order."""
    emb = tricky_points(50_000, dtype=dtype, seed=4)
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 7, len(emb)) if coloured else None
    outliers = rng.random(len(emb)) < 0.02
    expected, expected_flung = datashader_grids(emb, VIEW, WIDTH, HEIGHT, labels, 7, outliers)
    for points in (emb, np.asfortranarray(emb)):
        agg = aggregate(points, VIEW, WIDTH, HEIGHT, labels=labels, outliers=outliers)
        assert agg.counts.dtype == np.uint32 and agg.counts.shape == expected.shape
        np.testing.assert_array_equal(agg.counts, expected)
        np.testing.assert_array_equal(agg.outlier_counts, expected_flung)
    assert agg.n_in_view == expected.sum() > 0


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match=r"shape \(N, 2\)"):
        image(np.zeros((10, 3), np.float32))
    with pytest.raises(ValueError, match="labels must lie in"):
        image(cloud(10), labels=np.arange(10) - 1)
    with pytest.raises(ValueError, match="factorize"):
        image(cloud(3), labels=np.array(["a", "b", "a"]))
    with pytest.raises(ValueError, match="view="):
        image(cloud(10), view="zoomed")
    with pytest.raises(ValueError, match="low < high"):
        image(cloud(10), view=(1, 0, 0, 1))


# -- shading and views ----------------------------------------------------------------------------------
def test_planted_far_point_drawn_in_outlier_colour_where_it_is():
    emb = cloud(3000)
    emb[7] = [50.0, 50.0]
    mask = np.zeros(len(emb), bool)
    mask[7] = True
    rgba = image(emb, outliers=mask, width=200, height=200, view=(-60, 60, -60, 60))
    assert rgba.shape == (200, 200, 4) and rgba.dtype == np.uint8
    # x = 50 -> column (50 + 60) / 120 * 200 = 183.3; y = 50 -> row from the top (60 - 50) / 120 * 200 = 16.7
    hits = where_color(rgba, OUTLIER_RGB)
    assert len(hits) >= 9  # a disc, visible, not a lone pixel
    assert np.abs(hits - [16, 183]).max() <= 4  # and nowhere else
    # without the mask, nothing is drawn in the outlier colour
    assert len(where_color(image(emb, width=200, height=200, view=(-60, 60, -60, 60)), OUTLIER_RGB)) == 0


def distances_from(pixel: tuple[int, int], shape: tuple[int, int]) -> np.ndarray:
    """(H, W) Euclidean distance in pixels of every pixel from ``pixel`` (row, col)."""
    rows, cols = np.mgrid[0 : shape[0], 0 : shape[1]]
    return np.hypot(rows - pixel[0], cols - pixel[1])


def two_flung_points_of_two_classes(style: Style | None = None, labelled: bool = True) -> np.ndarray:
    """A 200 x 200 image over (-60, 60)^2 of a two-class cloud with point 7 (class 1) flung to (50, 50), i.e.
    pixel (row 16, col 183), and point 8 (class 0) to (-50, -50), pixel (183, 16); both marked as outliers."""
    emb = cloud(3000)
    labels = np.arange(len(emb)) % 2
    emb[7], emb[8] = [50.0, 50.0], [-50.0, -50.0]
    mask = np.zeros(len(emb), bool)
    mask[[7, 8]] = True
    return image(
        emb,
        labels=labels if labelled else None,
        outliers=mask,
        width=200,
        height=200,
        view=(-60, 60, -60, 60),
        style=style or Style(),
    )


@pytest.mark.parametrize("radius, ring", [(4, 2), (2, 3), (0, 1)])
def test_flung_point_keeps_its_class_colour_inside_a_ring_of_the_outlier_colour(radius, ring):
    rgba = two_flung_points_of_two_classes(Style(outlier_radius=radius, outlier_ring=ring))
    halo = hex_to_rgb(DEFAULT_STYLE.halo_color)
    for pixel, code in (((16, 183), 1), ((183, 16), 0)):
        d = distances_from(pixel, rgba.shape[:2])
        own = np.asarray(hex_to_rgb(CLASS_PALETTE[code]), dtype=np.uint8)
        # Inside the disc: the point's class colour, opaque, on every pixel.
        assert (rgba[d <= radius][:, :3] == own).all() and (rgba[d <= radius][:, 3] == 255).all()
        # Around it, a closed annulus in the outlier colour: every pixel between the disc and the ring's width.
        annulus = (d >= radius + 1) & (d <= radius + ring)
        assert annulus.any() and (rgba[annulus][:, :3] == np.asarray(OUTLIER_RGB, dtype=np.uint8)).all()
        # Then the thin halo, and the class colour nowhere outside the disc's rounded edge.
        near = d <= radius + ring + 2
        assert len(where_color(rgba * near[..., None], halo)) > 0
        outside = (d > radius + 1) & (d < 30)
        assert not (rgba[outside][:, :3] == own).all(axis=1).any()


def test_flung_point_without_labels_or_with_fill_outlier_is_an_outlier_coloured_disc():
    for rgba in (
        two_flung_points_of_two_classes(Style(outlier_radius=3), labelled=False),
        two_flung_points_of_two_classes(Style(outlier_radius=3, outlier_fill="outlier")),
    ):
        for pixel in ((16, 183), (183, 16)):
            d = distances_from(pixel, rgba.shape[:2])
            assert (rgba[d <= 3][:, :3] == np.asarray(OUTLIER_RGB, dtype=np.uint8)).all()
            palette = {hex_to_rgb(c) for c in CLASS_PALETTE[:2]}
            assert not any(tuple(px) in palette for px in rgba[d <= 6][:, :3])


def test_auto_view_puts_the_far_point_in_the_top_right_corner():
    emb = cloud(3000)
    emb[0] = [40.0, 40.0]
    mask = np.zeros(len(emb), bool)
    mask[0] = True
    hits = where_color(image(emb, outliers=mask, width=100, height=100), OUTLIER_RGB)
    assert len(hits) > 0
    assert hits[:, 0].max() < 15 and hits[:, 1].min() > 85


def test_robust_view_keeps_the_cloud_large_and_marks_the_far_point():
    emb = cloud(20000, seed=3)
    emb[0] = [1e4, 0.0]
    width = 200
    auto_rgba, auto_agg = render(emb, width=width, height=width, view="auto")
    robust_rgba, robust_agg = render(emb, width=width, height=width, view="robust")

    def cloud_columns(agg):
        cols = np.flatnonzero(agg.counts.sum(axis=0) > 2)
        return cols.max() - cols.min() + 1

    assert cloud_columns(auto_agg) <= 3  # the far point squeezes the cloud into a sliver
    assert cloud_columns(robust_agg) > width // 2  # robust: the cloud fills most of the image
    assert robust_agg.n_out_of_view == 1 and robust_agg.edge_counts[1].sum() == 1  # only the far point
    cloud_right = emb[1:, 0].max()
    assert cloud_right <= robust_agg.view.x_range[1] < cloud_right + 0.5  # the view fits the cloud closely
    # the off-view marker sits on the right border, in the outlier colour
    marks = where_color(robust_rgba, OUTLIER_RGB)
    assert len(marks) > 0 and marks[:, 1].min() > width - 15
    assert abs(np.median(marks[:, 0]) - width / 2) < 15


def test_fixed_view_is_used_exactly():
    view = (-3.0, 5.0, -2.0, 2.0)
    _, agg = render(cloud(500), width=80, height=40, view=view)
    assert agg.view.bounds == view


def test_class_colours_follow_labels():
    emb = np.concatenate([cloud(2000, 1, (-6, 0)), cloud(2000, 2, (6, 0))])
    labels = np.r_[np.zeros(2000, int), np.ones(2000, int)]
    view = (-12, 12, -12, 12)

    def densest_colour(rgba, half):
        # eq_hist gives the densest pixel full alpha: there the class colour shows unblended
        part = rgba[:, :100] if half == "left" else rgba[:, 100:]
        brightness = part[..., :3].astype(int).sum(axis=2)
        r, c = np.unravel_index(np.argmax(brightness), brightness.shape)
        return tuple(int(v) for v in part[r, c, :3])

    def close(colour, palette_entry):  # datashader's alpha rounding may leave the top pixel at 254
        return np.abs(np.subtract(colour, hex_to_rgb(palette_entry))).max() <= 3

    rgba = image(emb, labels=labels, width=200, height=200, view=view)
    assert close(densest_colour(rgba, "left"), CLASS_PALETTE[0])
    assert close(densest_colour(rgba, "right"), CLASS_PALETTE[1])
    swapped = image(emb, labels=1 - labels, width=200, height=200, view=view)
    assert close(densest_colour(swapped, "left"), CLASS_PALETTE[1])
    assert close(densest_colour(swapped, "right"), CLASS_PALETTE[0])


@pytest.mark.parametrize("n_labels", [None, 4])
def test_shading_only_lit_pixels_matches_datashader_on_the_whole_grid(n_labels):

    rng = np.random.default_rng(4)
    shape = (30, 40) if n_labels is None else (30, 40, n_labels)
    counts = (rng.integers(0, 500, size=shape) * (rng.random(shape) < 0.4)).astype(np.uint32)
    agg = Aggregate(counts, None, np.zeros((4, 32), np.uint32), View((0.0, 1.0), (0.0, 1.0)))
    if n_labels is None:
        whole = tf.shade(
            xr.DataArray(counts, dims=("y", "x")),
            cmap=list(DEFAULT_STYLE.cmap),
            how="eq_hist",
            min_alpha=DEFAULT_STYLE.min_alpha,
        )
    else:
        grid = xr.DataArray(counts, dims=("y", "x", "c"), coords={"c": np.arange(n_labels)})
        whole = tf.shade(grid, color_key=class_colors(n_labels), how="eq_hist", min_alpha=DEFAULT_STYLE.min_alpha)
    expected = composite(np.ascontiguousarray(whole.values).view(np.uint8).reshape(30, 40, 4)[::-1], "#000000")
    # classes: on the whole grid datashader takes the alpha from a float histogram of 65,536 bins (its zero
    # pixels make the totals float), on the lit pixels from exact counts: one level of slack
    assert np.abs(shade_points(agg).astype(int) - expected).max() <= (0 if n_labels is None else 1)


def test_a_single_ordinary_point_is_visible():
    one = np.array([[0.0, 0.0]], np.float32)
    rgba = image(one, width=50, height=50, view=(-1, 1, -1, 1), style=Style(spread_threshold=0))
    lit = np.argwhere(rgba[..., :3].max(axis=2) > 40)
    assert len(lit) == 1 and tuple(lit[0]) == (24, 25)  # y = 0 -> row 25 from the bottom = 24 from the top
    # by default a sparse image spreads each point over its 3 x 3 neighbourhood, same colour
    spread = image(one, width=50, height=50, view=(-1, 1, -1, 1))
    lit = np.argwhere(spread[..., :3].max(axis=2) > 40)
    assert sorted(map(tuple, lit)) == [(r, c) for r in (23, 24, 25) for c in (24, 25, 26)]
    assert (spread[23:26, 24:27] == rgba[24, 25]).all()


def test_dense_images_are_not_spread():
    emb = cloud(20000)
    plain = image(emb, width=60, height=60, style=Style(spread_threshold=0))
    np.testing.assert_array_equal(image(emb, width=60, height=60), plain)


def test_empty_and_degenerate_embeddings_render():
    assert image(np.zeros((0, 2), np.float32), width=30, height=20).shape == (20, 30, 4)
    same = image(np.ones((10, 2), np.float32), width=30, height=30)  # all points at one place
    assert same[..., :3].max() > 0


# -- recordings -----------------------------------------------------------------------------------------
def make_recording(n: int = 400, frames: int = 4) -> Recording:
    rng = np.random.default_rng(5)
    rec = Recording(labels=rng.integers(0, 3, n), metadata={"strategy": "buffered", "n_chunks": 1})
    for i in range(frames):
        emb = rng.normal(size=(n, 2)).astype(np.float32) * (1 + i)
        mask = np.zeros(n, bool)
        mask[: i * 3] = True
        emb[mask] += 40
        rec.add(10 * i, emb, outliers=mask if i != 1 else None)
    return rec


def test_recording_reloads_bit_for_bit(tmp_path):
    rec = make_recording()
    rec._embeddings[2][5] = [np.nan, -0.0]  # odd values survive too
    path = rec.save(tmp_path / "run.npz")
    back = Recording.load(path)
    assert len(back) == len(rec)
    np.testing.assert_array_equal(back.epochs, rec.epochs)
    np.testing.assert_array_equal(back.labels, rec.labels)
    assert back.metadata == {"strategy": "buffered", "n_chunks": 1}
    for a, b in zip(rec, back, strict=True):
        assert a.embedding.tobytes() == b.embedding.tobytes()
        assert (a.outliers is None) == (b.outliers is None)
        if a.outliers is not None:
            np.testing.assert_array_equal(a.outliers, b.outliers)
    np.testing.assert_array_equal(back.outlier_counts(), [0, -1, 6, 9])
    assert [p.name for p in tmp_path.iterdir()] == ["run.npz"]  # no temporary file left behind
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # the permissions of any file the user writes


def test_damaged_recording_gives_a_clear_error(tmp_path):
    path = make_recording().save(tmp_path / "run.npz")
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(64)
    broken = tmp_path / "broken.npz"
    broken.write_bytes(bytes(data))
    with pytest.raises(RecordingError, match="damaged"):
        Recording.load(broken)
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(path.read_bytes()[: len(data) // 3])
    with pytest.raises(RecordingError, match="damaged"):
        Recording.load(truncated)


def test_edited_recording_fails_its_checksum(tmp_path):
    path = make_recording().save(tmp_path / "run.npz")
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["embeddings"][0, 0, 0] += 1.0  # a valid zip, but not what was written
    np.savez_compressed(path, **arrays)
    with pytest.raises(RecordingError, match="checksum"):
        Recording.load(path)


def test_recording_rejects_inconsistent_frames():
    rec = Recording()
    rec.add(0, np.zeros((5, 2)))
    with pytest.raises(ValueError, match="same shape"):
        rec.add(1, np.zeros((6, 2)))
    with pytest.raises(ValueError, match="increase"):
        rec.add(0, np.zeros((5, 2)))
    with pytest.raises(ValueError, match="JSON"):
        Recording(metadata={"bad": object()})


def test_recorder_callback_copies_each_frame():
    rec = Recording()
    optimizer = SimpleNamespace(embedding=cloud(50))
    callback = rec.recorder(outliers=lambda y: y[:, 0] > 1.0)
    for epoch in (10, 20):
        callback(optimizer, SimpleNamespace(epoch=epoch))
        snapshot, expected_mask = optimizer.embedding.copy(), optimizer.embedding[:, 0] > 1.0
        optimizer.embedding += 1.0  # the optimizer keeps moving its array in place
    np.testing.assert_array_equal(rec.epochs, [10, 20])
    np.testing.assert_array_equal(rec[1].embedding, snapshot)  # a copy taken at epoch 20, not a view
    np.testing.assert_array_equal(rec[1].outliers, expected_mask)


# -- export ---------------------------------------------------------------------------------------------
def test_html_replay_holds_every_frame_and_needs_nothing_else(tmp_path):
    rec = make_recording()
    page = save_html(rec, tmp_path / "replay.html", width=64, height=64).read_text()
    frames = json.loads(re.search(r"const FRAMES = (\[.*?\]);", page).group(1))
    captions = json.loads(re.search(r"const CAPTIONS = (\[.*?\]);", page).group(1))
    assert len(frames) == len(rec) == len(captions)
    assert captions[2] == "epoch 20 · 6 outliers"

    decoded = [np.asarray(Image.open(io.BytesIO(base64.b64decode(f))).convert("RGBA")) for f in frames]
    assert all(d.shape == (64, 64, 4) for d in decoded)
    assert len({d.tobytes() for d in decoded}) == len(rec)  # each frame its own picture
    assert 'max="3"' in page and "play" in page
    assert "http" not in page.replace("http-equiv", "")  # no external script or image


def test_shared_view_lets_frames_compare():
    rec = make_recording()
    frames = recording_frames(rec, 80, 80, captions=False)
    lit = [int((f[..., :3].max(axis=2) > 0).sum()) for f in frames]
    assert lit[3] > lit[0]  # the layout grows across frames: later frames cover more pixels


def test_gif_has_every_frame(tmp_path):
    path = save_gif(make_recording(), tmp_path / "run.gif", width=48, height=48)
    with Image.open(path) as gif:
        assert gif.n_frames == 4 and gif.size == (48, 48)


def test_mp4_without_ffmpeg_says_what_to_install(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "imageio_ffmpeg" else real(name, *a)
    )
    with pytest.raises(RuntimeError, match="pip install imageio-ffmpeg"):
        save_mp4(make_recording(), tmp_path / "run.mp4")


def test_png_round_trip(tmp_path):
    rgba = image(cloud(300), width=40, height=30)
    path = save_png(rgba, tmp_path / "sub" / "frame.png")
    np.testing.assert_array_equal(np.asarray(Image.open(path).convert("RGBA")), rgba)


def test_png_encoder_output_decodes_to_the_same_pixels():

    rng = np.random.default_rng(6)
    translucent = rng.integers(0, 256, size=(7, 5, 4), dtype=np.uint8)  # odd sizes, real alpha
    decoded = Image.open(io.BytesIO(encode_png(translucent)))
    assert decoded.mode == "RGBA"
    np.testing.assert_array_equal(np.asarray(decoded), translucent)
    opaque = translucent.copy()
    opaque[..., 3] = 255
    decoded = Image.open(io.BytesIO(encode_png(opaque, compress_level=9)))
    assert decoded.mode == "RGB"  # stored without the constant alpha
    np.testing.assert_array_equal(np.asarray(decoded), opaque[..., :3])
    with pytest.raises(ValueError, match="uint8"):
        encode_png(np.zeros((4, 4, 4), np.float32))


# -- figures --------------------------------------------------------------------------------------------
def test_side_by_side_puts_each_embedding_in_its_panel():
    quiet, flung = cloud(800, 1), cloud(800, 2)
    mask = np.zeros(800, bool)
    mask[:3] = True
    flung[:3] += 3.0
    fig = side_by_side([quiet, flung], ["sequential", "buffered"], outliers=[None, mask], panel_size=120)
    assert fig.ndim == 3 and fig.shape[2] == 4
    assert fig.shape[1] == 2 * 120 + 3 * 12
    hits = where_color(fig, OUTLIER_RGB)
    assert len(hits) > 0 and hits[:, 1].min() > 12 + 120  # outliers only in the second panel


def test_side_by_side_shared_view_shows_relative_size():
    small = cloud(3000, 1)
    big = small * 3

    def widths(fig):  # columns holding at least 3 lit pixels, per panel: how wide each layout is drawn
        panels = [fig[24:144, 12 + i * 132 : 132 + i * 132] for i in range(2)]  # header 24 px, gap 12 px
        return [int(((p[..., :3].max(axis=2) > 0).sum(axis=0) >= 3).sum()) for p in panels]

    own = widths(side_by_side([small, big], panel_size=120, view="robust"))
    shared = widths(side_by_side([small, big], panel_size=120, view="shared"))
    assert abs(own[0] - own[1]) <= 0.1 * own[1]  # each panel framed on its own: the same picture
    assert shared[0] < 0.5 * shared[1]  # one view for both: the small layout looks small


def test_outlier_chart_lines_rise_with_the_counts():
    epochs = np.arange(0, 100, 5)
    fig = outlier_chart({"buffered": (epochs, epochs * 10)}, width=400, height=200)
    line = where_color(fig, hex_to_rgb(CLASS_PALETTE[0]))
    plot = line[line[:, 1] < 300]  # leave out the legend swatch, top right
    left = plot[plot[:, 1] < plot[:, 1].min() + 10]
    right = plot[plot[:, 1] > plot[:, 1].max() - 10]
    assert left[:, 0].mean() > right[:, 0].mean() + 50  # rows grow downwards: the line climbs


# -- live view ------------------------------------------------------------------------------------------
def test_live_view_re_aggregates_at_the_visible_range():
    from umapviz.render.live.view import LiveView  # noqa: PLC0415 - HoloViews is slow to import: only these tests load it

    live = LiveView(width=120, height=120, view="auto")
    emb = np.concatenate([cloud(3000, 1, (-10, 0)), cloud(3000, 2, (10, 0))])
    live.push(emb, caption="epoch 0")
    whole = live.dmap[()].get(0)  # the image, under the hover text
    assert whole.data.shape == (120, 120, 4)
    assert live.last_aggregate.n_in_view == 6000

    live.range_stream.event(x_range=(-12.0, -8.0), y_range=(-2.0, 2.0))  # zoom onto the left cluster's core
    zoomed = live.dmap[()].get(0)
    left, bottom, right, top = zoomed.bounds.lbrt()
    assert (left, right, bottom, top) == (-12.0, -8.0, -2.0, 2.0)
    assert 0 < live.last_aggregate.n_in_view < 3000
    lit_whole = (whole.data[..., :3].max(axis=2) > 0).sum()
    lit_zoom = (zoomed.data[..., :3].max(axis=2) > 0).sum()
    assert lit_zoom > 2 * lit_whole  # the zoomed cluster is drawn afresh over many more pixels

    live.push(emb * 3, caption="epoch 1")  # the zoom is kept across pushes...
    live.dmap[()]
    assert live.last_aggregate.view.x_range == (-12.0, -8.0)
    live.reset_view()  # ...until a reset; then (follow=True) each push re-frames to the new data
    live.push(emb * 4, caption="epoch 2")
    live.dmap[()]
    assert live.last_aggregate.view.x_range[1] > 40


def test_live_view_push_refuses_bad_labels_and_outliers_at_once():
    """At draw time HoloViews only logs such errors, and the live plot silently stops updating."""
    from umapviz.render.live.view import LiveView  # noqa: PLC0415 - HoloViews is slow to import: only these tests load it

    live = LiveView(width=60, height=60)
    emb = cloud(200)
    with pytest.raises(ValueError, match=r"labels must have shape \(200,\)"):
        live.push(emb, labels=np.arange(5))
    with pytest.raises(ValueError, match="outlier mask must have shape"):
        live.push(emb, outliers=np.zeros(5, bool))
    live.push(emb, labels=np.arange(200) % 3, outliers=np.arange(3))  # good ones still draw
    live.dmap[()]
    assert live.last_aggregate.n_in_view == 200


def test_live_view_updates_a_bokeh_plot_on_zoom_and_push():
    import holoviews as hv  # noqa: PLC0415 - HoloViews is slow to import: only these tests load it

    from umapviz.render.live.view import LiveView  # noqa: PLC0415 - HoloViews is slow to import: only these tests load it

    live = LiveView(width=100, height=100)
    emb = cloud(2000)
    live.push(emb)
    plot = hv.renderer("bokeh").get_plot(live.dmap)
    source = plot.subplots[next(iter(plot.subplots))].handles["source"]  # the image's, under the hover text
    before = np.array(source.data["image"][0])
    live.range_stream.event(x_range=(-0.5, 0.5), y_range=(-0.5, 0.5))
    assert source.data["x"][0] == -0.5 and source.data["dw"][0] == 1.0  # the plot shows the zoomed range...
    assert not np.array_equal(np.array(source.data["image"][0]), before)  # ...drawn afresh
    live.reset_view()
    live.push(emb * 10)
    assert plot.handles["x_range"].end > 20  # after a reset, a push re-frames the plot to the new data


def test_mp4_has_every_frame_when_ffmpeg_is_installed(tmp_path):
    pytest.importorskip("imageio_ffmpeg")
    import imageio.v2 as imageio  # noqa: PLC0415 - optional: only the MP4 export needs it

    path = save_mp4(make_recording(), tmp_path / "run.mp4", width=63, height=48)
    with imageio.get_reader(path) as reader:
        assert reader.count_frames() == 4
        assert reader.get_meta_data()["size"] == (64, 48)  # padded to even sizes for yuv420p


def test_edge_count_labels_never_overlap_and_the_largest_is_written():
    counts = np.zeros(64, np.int64)
    counts[20:40] = np.arange(100, 120)  # twenty neighbouring bins, all with three-digit counts
    draw = ImageDraw.Draw(Image.new("RGBA", (400, 400)))
    s = marker_size(400, 400)
    font = pil_font(max(11, round(s * 1.6)))
    positions = edge_marker_positions(400, 400, 64)
    for side in range(4):
        labels = edge_labels(draw, font, counts, positions[side], side, s)
        assert 1 < len(labels) < 20 and labels[0][1] == "119"  # bins too close for all: label_bins merges them
        boxes = [draw.textbbox(xy, text, font=font, anchor=anchor) for xy, text, anchor in labels]
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                assert a[2] < b[0] or b[2] < a[0] or a[3] < b[1] or b[3] < a[1], f"side {side}: {a} overlaps {b}"


# -- found by the widgets audit (audit-widgets): each failed before its fix ---------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        {"epochs": np.array([0, 10, 20])},  # one epoch fewer than frames: loaded 3 of the 4 frames without a word
        {"metadata": np.frombuffer(b"{not json", dtype=np.uint8)},  # JSONDecodeError
        {"metadata": np.frombuffer(b"[1, 2]", dtype=np.uint8)},  # TypeError from dict()
        {"outliers_recorded": np.array([True])},  # IndexError
        {"format_version": np.array([1, 1])},  # TypeError from int()
    ],
)
def test_a_recording_whose_parts_disagree_is_refused_as_damaged(tmp_path, change):
    """A file that passes its checksum but whose parts do not fit (another writer, a bug) failed with whatever
    error the parts met first, or loaded fewer frames than it holds."""

    arrays = {**make_recording()._arrays(), **change}
    arrays["checksum"] = np.frombuffer(record._checksum(arrays).encode(), dtype=np.uint8)
    path = tmp_path / "odd.npz"
    with open(path, "wb") as f:
        np.savez_compressed(f, **arrays)
    with pytest.raises(RecordingError, match="odd.npz"):
        Recording.load(path)


# -- on CuPy arrays: the CUDA grids must equal the NumPy grids (datashader's, above) bit for bit -----------
# The data are chosen to hit the cases where a different rounding would move a point: coordinates on pixel
# borders and on the view's edges, NaN and inf rows, points outside the view, float32 and float64. Marked gpu:
# skipped, saying why, where no GPU is usable.


def tricky_points(n: int = 200_000, dtype=np.float32, seed: int = 0) -> np.ndarray:
    """Gaussian points plus points exactly on pixel borders and view edges of VIEW at 97 x 61 pixels."""
    rng = np.random.default_rng(seed)
    emb = rng.normal(scale=2.0, size=(n, 2)).astype(dtype)
    (xmin, xmax), (ymin, ymax) = VIEW.x_range, VIEW.y_range
    bx = xmin + np.arange(WIDTH + 1) * (xmax - xmin) / WIDTH  # every pixel border, and both edges
    by = ymin + np.arange(HEIGHT + 1) * (ymax - ymin) / HEIGHT
    gx, gy = np.meshgrid(bx, by)
    borders = np.stack([gx.ravel(), gy.ravel()], axis=1).astype(dtype)
    odd = np.array([[np.nan, 0], [0, np.nan], [np.inf, 1], [-np.inf, -1], [1e30, 0], [0, -1e30]], dtype=dtype)
    return np.concatenate([emb, borders, np.nextafter(borders, np.inf), np.nextafter(borders, -np.inf), odd])


VIEW = View((-3.3, 4.1), (-2.7, 2.9))
WIDTH, HEIGHT = 97, 61


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


@pytest.fixture(scope="module")
def reference(cp):
    """The host's grids and images, which these tests compare with, equal datashader's (the host tests above
    check it on the same points): the GPU's are datashader's too only where that holds, so without datashader
    (the GPU machine's bare image; bench/device_wheels.sh brings it) there is no reference to hold them to."""
    return pytest.importorskip("datashader", reason="the host reference (datashader) is not installed")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gpu_count_grid_equals_datashader_bit_for_bit(cp, reference, dtype):
    emb = tricky_points(dtype=dtype)
    host = aggregate(emb, VIEW, WIDTH, HEIGHT)
    device = aggregate(cp.asarray(emb), VIEW, WIDTH, HEIGHT)
    assert isinstance(device.counts, np.ndarray)  # only the grid comes back
    assert device.counts.dtype == host.counts.dtype == np.uint32
    np.testing.assert_array_equal(device.counts, host.counts)
    np.testing.assert_array_equal(device.edge_counts, host.edge_counts)
    assert device.n_in_view + device.n_out_of_view == len(emb) - 4  # the NaN and inf rows are nowhere


@pytest.mark.gpu
def test_gpu_label_and_outlier_grids_equal_datashader(cp, reference):
    emb = tricky_points(seed=1)
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 7, len(emb)).astype(np.int64)
    outliers = rng.random(len(emb)) < 0.01
    host = aggregate(emb, VIEW, WIDTH, HEIGHT, labels=labels, outliers=outliers)
    device = aggregate(cp.asarray(emb), VIEW, WIDTH, HEIGHT, labels=cp.asarray(labels), outliers=cp.asarray(outliers))
    assert device.counts.shape == (HEIGHT, WIDTH, 7)
    np.testing.assert_array_equal(device.counts, host.counts)
    np.testing.assert_array_equal(device.outlier_counts, host.outlier_counts)
    # NumPy labels and an index array of outliers with a CuPy embedding work too
    mixed = aggregate(cp.asarray(emb), VIEW, WIDTH, HEIGHT, labels=labels, outliers=np.flatnonzero(outliers))
    np.testing.assert_array_equal(mixed.counts, host.counts)
    np.testing.assert_array_equal(mixed.outlier_counts, host.outlier_counts)


@pytest.mark.gpu
def test_gpu_classes_beyond_the_palette_share_colours_as_on_the_host(cp, reference):
    """40 classes against 15 colours: the CuPy labels are folded on the device (class k counts as colour k mod
    15), into the host's grids and image."""
    emb = tricky_points(50_000, seed=6)
    labels = np.random.default_rng(7).integers(0, 40, len(emb))
    host = aggregate(emb, VIEW, WIDTH, HEIGHT, labels=labels, n_colors=15)
    device = aggregate(cp.asarray(emb), VIEW, WIDTH, HEIGHT, labels=cp.asarray(labels), n_colors=15)
    assert device.counts.shape == host.counts.shape == (HEIGHT, WIDTH, 15)
    np.testing.assert_array_equal(device.counts, host.counts)
    host_image = image(emb, labels=labels, width=160, height=120, view="robust")
    np.testing.assert_array_equal(
        image(cp.asarray(emb), labels=cp.asarray(labels), width=160, height=120, view="robust"), host_image
    )


@pytest.mark.gpu
def test_gpu_bounds_and_views_equal_the_host(cp):
    emb = tricky_points(seed=3)
    emb[5] = [250.0, -40.0]  # a far point: robust and auto views differ
    d_emb = cp.asarray(emb)
    assert data_bounds(d_emb) == data_bounds(emb)
    for view in ("auto", "robust"):
        assert resolve_view(d_emb, view, 300, 200) == resolve_view(emb, view, 300, 200)
    assert data_bounds(cp.full((10, 2), cp.nan, dtype=cp.float32)) is None


@pytest.mark.gpu
def test_gpu_image_equals_cpu_image(cp, reference):
    emb = tricky_points(50_000, seed=4)
    labels = np.arange(len(emb)) % 3
    outliers = np.zeros(len(emb), bool)
    outliers[::997] = True
    for kwargs in ({}, {"labels": labels}):
        host = image(emb, outliers=outliers, width=160, height=120, view="robust", **kwargs)
        dev_kwargs = {k: cp.asarray(v) for k, v in kwargs.items()}
        device = image(
            cp.asarray(emb), outliers=cp.asarray(outliers), width=160, height=120, view="robust", **dev_kwargs
        )
        np.testing.assert_array_equal(device, host)


@pytest.mark.gpu
def test_gpu_large_input_counts_every_point(cp):
    n = 20_000_000
    emb = cp.random.standard_normal((n, 2), dtype=cp.float32)
    rgba, agg = render(emb, width=1024, height=1024, view="auto")
    assert agg.n_in_view == n  # the auto view holds every finite point
    assert rgba.shape == (1024, 1024, 4)


@pytest.mark.gpu
def test_gpu_live_view_draws_device_embeddings(cp):
    pytest.importorskip("holoviews")  # the live view's own library; absent from the GPU machine's image
    from umapviz.render.live.view import LiveView  # noqa: PLC0415 - HoloViews is slow to import: only these tests load it

    emb = tricky_points(20_000, seed=5)
    host_view, device_view = LiveView(width=90, height=70), LiveView(width=90, height=70)
    host_view.push(emb)
    device_view.push(cp.asarray(emb))
    device_frame = device_view.frame()
    np.testing.assert_array_equal(device_frame, host_view.frame())
    assert len(np.unique(device_frame.reshape(-1, 4), axis=0)) > 2  # drawn: more than the background


# -- shading on the device ------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("k", [None, 3, 10])
@pytest.mark.parametrize("kind", ["dense", "power law", "sparse", "single point", "zero", "huge"])
def test_gpu_shading_equals_numpy_shading_bit_for_bit(cp, kind, k):
    counts = make_grid(kind, k).astype(np.uint32)
    outliers = np.zeros(counts.shape[:2], np.uint32)
    outliers[[0, 9, 36], [0, 20, 52]] = 1  # two in corners: discs clipped at the border
    edges = np.zeros((4, N_EDGE_BINS), np.uint32)
    edges[1, 5] = 7
    view = View((0.0, 1.0), (0.0, 1.0))
    host = Aggregate(counts, outliers, edges, view)
    device = Aggregate(cp.asarray(counts), cp.asarray(outliers), edges, view)
    styles = [Style(how=how) for how in ("eq_hist", "log", "cbrt", "linear")]
    styles.append(Style(background="#2040a0", min_alpha=60, cmap=("#ffffff", "#ff0000"), outlier_radius=0))
    for style in styles:
        on_device = shade(device, style)
        assert isinstance(on_device, np.ndarray)
        # the class mix too: float64 sums of integers are exact, float32 rounding and division are IEEE
        np.testing.assert_array_equal(on_device, shade(host, style), err_msg=f"{kind} k={k} {style.how}")


@pytest.mark.gpu
def test_gpu_frame_shades_on_the_device_and_brings_back_only_the_image(cp, reference, monkeypatch):
    colormap = importlib.import_module("umapviz.render._colormap")
    shade_module = importlib.import_module("umapviz.render.shade")  # the module, not the function of that name
    discs = importlib.import_module("umapviz.render.shade.outlier_discs")

    emb = tricky_points(1_000_000, seed=6)
    labels = np.arange(len(emb)) % 5
    outliers = np.zeros(len(emb), bool)
    outliers[::50_000] = True
    copied = []

    def recording_to_host(x):
        copied.append(int(x.nbytes))
        return to_host(x)

    for module in (colormap, shade_module, discs):
        monkeypatch.setattr(module, "to_host", recording_to_host)
    for kwargs in ({}, {"labels": labels}):
        copied.clear()
        dev_kwargs = {k: cp.asarray(v) for k, v in kwargs.items()}
        rgba, agg = render(
            cp.asarray(emb), outliers=cp.asarray(outliers), width=160, height=120, view="robust", **dev_kwargs
        )
        assert is_cupy(agg.counts) and is_cupy(agg.outlier_counts)  # the grids stayed on the GPU
        assert copied and max(copied) <= rgba.nbytes < emb.nbytes // 10  # the image and small tables only
        np.testing.assert_array_equal(
            rgba, image(emb, outliers=outliers, width=160, height=120, view="robust", **kwargs)
        )
