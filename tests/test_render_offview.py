"""Off-view markers on small and default-size images: text only where it does not cover the data."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from umapviz.render import add_title_and_caption, render, side_by_side
from umapviz.render.aggregate import N_EDGE_BINS
from umapviz.render.shade.edge_markers import (
    edge_labels,
    edge_marker_positions,
    label_bins,
    marker_font_size,
    marker_size,
    off_view_summary,
    pil_font,
    shows_off_view_summary,
    text_fits,
)
from umapviz.render.shade.style import DEFAULT_STYLE, Style, hex_to_rgb

VIEW = (0.0, 1.0, 0.0, 1.0)


def inside_points(n: int = 3000, seed: int = 0) -> np.ndarray:
    """Points filling the view, so any text drawn over its interior lands on data."""
    return np.random.default_rng(seed).uniform(0.02, 0.98, size=(n, 2))


def outside_points() -> np.ndarray:
    """Points beyond every side of VIEW, some sides with many (multi-digit counts)."""
    rng = np.random.default_rng(1)
    right = np.column_stack([rng.uniform(2, 5, 150), rng.uniform(0.1, 0.9, 150)])
    left = np.column_stack([rng.uniform(-5, -2, 12), rng.uniform(0.1, 0.9, 12)])
    top = np.column_stack([rng.uniform(0.1, 0.9, 30), rng.uniform(2, 5, 30)])
    bottom = np.array([[0.5, -3.0]])
    return np.concatenate([right, left, top, bottom])


def with_and_without_outside(size: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(image with the off-view points, image without them, the off-view count); same points in view."""
    inside = inside_points()
    full, agg = render(np.concatenate([inside, outside_points()]), width=size, height=size, view=VIEW)
    bare, bare_agg = render(inside, width=size, height=size, view=VIEW)
    assert bare_agg.n_out_of_view == 0 and agg.n_in_view == bare_agg.n_in_view == len(inside)
    return full, bare, agg.n_out_of_view


def test_small_image_draws_no_text_over_the_data():
    size = 60
    full, bare, n_out = with_and_without_outside(size)
    assert n_out == 193 and not text_fits(size, size)
    band = marker_size(size, size) + 2  # the border triangles (with their outline) lie within this band
    interior = (slice(band, size - band), slice(band, size - band))
    changed = np.argwhere((full[interior] != bare[interior]).any(axis=-1))
    assert changed.size == 0, f"{len(changed)} interior pixels changed by the off-view markers, e.g. {changed[:5]}"
    assert (full != bare).any(axis=-1).sum() > 0  # the triangles themselves are still drawn on the border


@pytest.mark.parametrize("size", [240, 300, 480, 600, 800])  # compare widget, notebooks, explorer, live, default
def test_default_sizes_still_write_the_total_in_the_bottom_left_corner(size):
    full, bare, n_out = with_and_without_outside(size)
    assert text_fits(size, size) and shows_off_view_summary(size, size, n_out)
    s = marker_size(size, size)
    x, y = 2 * s + 4, size - 2 * s - 6  # where the total has always been written
    left, top, right, bottom = pil_font(marker_font_size(size, size)).getbbox(off_view_summary(n_out), anchor="lb")
    box = (slice(y + top, y + bottom), slice(x + left, x + right))
    changed = (full[box] != bare[box]).any(axis=-1)
    # Anti-aliased glyphs in the (white) halo colour: every changed pixel moved towards it.
    halo = np.array(hex_to_rgb(DEFAULT_STYLE.halo_color))
    closer = np.abs(full[box][..., :3] - halo).sum(-1) < np.abs(bare[box][..., :3].astype(int) - halo).sum(-1)
    assert changed.mean() > 0.15, "the off-view total is no longer written on a default-size image"
    assert (closer | ~changed).all()


def test_text_rule_boundary_and_long_counts():
    assert not text_fits(175, 175) and text_fits(176, 176)  # 11 px font: at most 1/16 of the smaller side
    assert not text_fits(800, 60)  # a short strip: no text, whatever its width
    assert shows_off_view_summary(200, 200, 12_345)
    assert not shows_off_view_summary(200, 200, 10**12)  # would run into the right side's markers: left off
    assert not shows_off_view_summary(800, 800, 0)
    assert not shows_off_view_summary(800, 800, 5, Style(edge_markers=False))


def test_side_by_side_moves_the_off_view_count_under_small_panels():
    emb = np.concatenate([inside_points(), outside_points()])
    counts = [3, 4]  # an outlier count under each panel, as usual
    small = side_by_side([emb, emb], counts=counts, panel_size=60, view=VIEW)
    small_bare = side_by_side([inside_points()] * 2, counts=counts, panel_size=60, view=VIEW)
    assert small.shape[0] == small_bare.shape[0] + 20  # one more footer line: "193 outside the view"
    second_line = small[24 + 60 + 20 : 24 + 60 + 40, 12 : 12 + 60, :3]  # under the first panel
    assert (second_line.max(axis=-1) > 150).sum() > 20  # written there
    large = side_by_side([emb, emb], counts=counts, panel_size=240, view=VIEW)
    large_bare = side_by_side([inside_points()] * 2, counts=counts, panel_size=240, view=VIEW)
    assert large.shape == large_bare.shape  # the panel writes it itself: the layout is as before


def test_side_by_side_writes_a_title_above_and_a_caption_below_the_same_panels():
    rng = np.random.default_rng(3)
    embeddings = [rng.normal(size=(300, 2)) for _ in range(2)]
    plain = side_by_side(embeddings, titles=["a", "b"])
    framed = side_by_side(embeddings, titles=["a", "b"], title="two clouds", caption=["one line", "another line"])
    h = plain.shape[0]
    at = [o for o in range(framed.shape[0] - h + 1) if np.array_equal(framed[o : o + h], plain)]
    assert len(at) == 1 and at[0] > 0  # the panels unchanged, moved down under the title
    above, below = framed[: at[0], :, :3].astype(int), framed[at[0] + h :, :, :3].astype(int)
    assert below.shape[0] > 2 * 13
    for band in (above, below):
        assert (np.abs(band - band[0, 0]).sum(axis=2) > 100).any()  # text on the background


def test_a_long_caption_line_is_wrapped_to_the_figure_width():
    image = np.zeros((50, 200, 4), np.uint8)
    one = add_title_and_caption(image, None, ["short"])
    long = add_title_and_caption(image, None, ["a caption line far longer than two hundred pixels can hold in one go"])
    assert long.shape[1] == 200 and long.shape[0] > one.shape[0]  # more lines, not a wider image
    with pytest.raises(ValueError, match=r"\(H, W, 4\) uint8 RGBA"):
        add_title_and_caption(np.zeros((50, 200)), "t")


@pytest.mark.parametrize("size", [200, 400, 800])
def test_every_off_view_marker_gets_its_count_and_no_two_counts_touch(size):
    """Every border marker gets its count, and no two counts touch, however many markers a side has."""
    rng = np.random.default_rng(size)
    counts = rng.integers(0, 3000, size=(4, N_EDGE_BINS)) * (rng.random((4, N_EDGE_BINS)) < 0.7)
    merged = label_bins(counts, size, size)
    assert merged.sum() == counts.sum() and merged.shape[1] < N_EDGE_BINS  # fewer, fuller bins; no point lost
    draw = ImageDraw.Draw(Image.new("RGBA", (size, size)))
    font = pil_font(marker_font_size(size, size))
    positions = edge_marker_positions(size, size, merged.shape[1])
    for side in range(4):
        labels = edge_labels(draw, font, merged[side], positions[side], side, marker_size(size, size))
        assert sorted(int(text) for _, text, _ in labels) == sorted(merged[side][merged[side] > 0].tolist())
        boxes = sorted(draw.textbbox(xy, text, font=font, anchor=anchor) for xy, text, anchor in labels)
        along = (1, 3) if side < 2 else (0, 2)  # the coordinates along the side
        for a, b in zip(boxes[:-1], boxes[1:], strict=True):
            assert a[along[1]] < b[along[0]] or b[along[1]] < a[along[0]], f"side {side}: {a} touches {b}"


def test_a_few_far_points_keep_their_own_markers():
    """Merging is only as coarse as the counts need: one point a side on a default-size image keeps fine bins."""
    counts = np.zeros((4, N_EDGE_BINS), np.uint32)
    counts[:, 5] = 1
    assert label_bins(counts, 800, 800).shape[1] >= N_EDGE_BINS // 2
