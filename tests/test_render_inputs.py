"""umapviz.render given awkward inputs: 0/1 integer masks, sparse label codes, wide-ranged or tiny-spanned
coordinates, bad image sizes, sentinel counts, huge outlier discs, files of the wrong kind or suffix.

Each test reproduces a reported failure and checks the clear error (or the correct picture) that replaced it.
"""

from __future__ import annotations

import os
import stat
import tempfile

import numpy as np
import pytest

from umapviz.render import (
    CLASS_PALETTE,
    DEFAULT_STYLE,
    Recording,
    RecordingError,
    Style,
    View,
    aggregate,
    image,
    outlier_chart,
    recording_frames,
    render,
    resolve_view,
    save_gif,
    save_html,
    save_mp4,
    save_png,
    side_by_side,
)
from umapviz.render.shade import shade
from umapviz.render.shade.outlier_discs import dilate
from umapviz.render.shade.style import hex_to_rgb

OUTLIER_RGB = np.array(hex_to_rgb(DEFAULT_STYLE.outlier_color), dtype=np.uint8)


def cloud(n: int = 300, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, 2)).astype(np.float32)


def pixels_of(rgba: np.ndarray, rgb) -> int:
    return int((rgba[..., :3] == np.asarray(rgb, dtype=np.uint8)).all(axis=2).sum())


# -- 1. outlier masks and indices -----------------------------------------------------------------------
def test_integer_01_mask_is_an_error_not_indices():
    X = cloud()
    m = np.zeros(300, bool)
    m[0] = True
    with pytest.raises(ValueError, match=r"looks like a 0/1 mask.*mask\.astype\(bool\).*flatnonzero"):
        render(X, outliers=m.astype(int), width=40, height=40)
    # the same points as a boolean mask or as indices: one outlier, drawn
    assert render(X, outliers=m, width=40, height=40)[1].outlier_counts.sum() == 1
    assert render(X, outliers=np.flatnonzero(m), width=40, height=40)[1].outlier_counts.sum() == 1


@pytest.mark.parametrize("empty", [[], np.array([]), np.array([], dtype=np.int64)])
def test_empty_outliers_mean_none(empty):
    agg = render(cloud(), outliers=empty, width=40, height=40)[1]
    assert agg.outlier_counts is not None and agg.outlier_counts.sum() == 0


def test_isolation_forest_predictions_error_mentions_masks():
    pred = np.ones(300, dtype=np.int64)
    pred[:3] = -1  # IsolationForest.predict: -1 outlier, 1 inlier
    with pytest.raises(ValueError, match=r"-1.*mask.*pred == -1"):
        image(cloud(), outliers=pred, width=40, height=40)


def test_side_by_side_caption_counts_what_is_drawn():
    X = cloud()
    idx = np.array([0, 5, 7])  # indices: three outliers (as bools, 0 would be False: "2 outliers")
    with_idx = side_by_side([X], outliers=[idx], panel_size=100)
    with_three = side_by_side([X], counts=[3], outliers=[idx], panel_size=100)
    np.testing.assert_array_equal(with_idx, with_three)
    assert not np.array_equal(with_idx, side_by_side([X], counts=[2], outliers=[idx], panel_size=100))


# -- 2. label grids too large to allocate ---------------------------------------------------------------
def test_sparse_label_codes_are_drawn_in_their_codes_colours_without_a_huge_grid():
    """Codes 0 and 5000 once asked for an 800 x 800 x 5001 grid (11.9 GiB). Classes beyond the palette share its
    colours (code mod 15), so they are counted by colour: 15 layers at most, whatever the codes."""
    odd = np.arange(300) % 2 == 1
    rgba, agg = render(cloud(), labels=np.where(odd, 5000, 0), width=40, height=40)
    assert agg.counts.shape == (40, 40, len(CLASS_PALETTE))
    same_colours = np.where(odd, 5000 % len(CLASS_PALETTE), 0)  # code 5000 takes colour 5 (5000 = 333 * 15 + 5)
    np.testing.assert_array_equal(rgba, image(cloud(), labels=same_colours, width=40, height=40))
    huge = render(cloud(), labels=np.where(np.arange(300) % 2, 10**9, 0), width=40, height=40)[1]
    assert huge.counts.shape == (40, 40, len(CLASS_PALETTE))


def test_a_large_explicit_n_labels_draws_what_the_default_draws():
    labels = np.zeros(300, int)
    big = image(cloud(), labels=labels, n_labels=10**7, width=100, height=100)
    assert big.tobytes() == image(cloud(), labels=labels, width=100, height=100).tobytes()


def test_classes_that_share_a_colour_draw_the_image_of_their_own_counts():
    """40 classes counted as the palette's 15 colours: the very image that 40 layers of counts give."""

    rng = np.random.default_rng(4)
    points = rng.normal(size=(3000, 2)).astype(np.float32)
    labels = rng.integers(0, 40, 3000)
    view = View((-3.0, 3.0), (-3.0, 3.0))
    per_class = shade(aggregate(points, view, 60, 50, labels=labels, n_labels=40))
    drawn, agg = render(points, labels=labels, width=60, height=50, view=view)
    assert agg.counts.shape == (50, 60, len(CLASS_PALETTE))
    np.testing.assert_array_equal(drawn, per_class)


# -- 3. coordinates that float32 cannot hold ------------------------------------------------------------
def test_large_integer_coordinates_keep_their_spacing():
    # a 10 x 10 grid of points one unit apart, near 1e9: float32 (spacing 64 there) merged it into 2 pixels
    g = np.arange(10, dtype=np.int64)
    X = np.stack(np.meshgrid(g, g), axis=-1).reshape(-1, 2) + 10**9
    agg = render(X, width=40, height=40)[1]
    assert agg.n_in_view == 100
    assert int((agg.counts > 0).sum()) == 100


def test_longdouble_coordinates_beyond_float32_are_drawn():
    X = np.array([[1e300, 1e300], [2e300, 3e300], [3e300, 2e300]], dtype=np.longdouble)
    agg = render(X, width=40, height=40)[1]
    assert agg.n_in_view == 3


def test_object_coordinates_are_read_as_float64():
    X = np.array([[10**9, 10**9], [10**9 + 1, 10**9 + 1]], dtype=object)  # one float32 value
    agg = render(X, width=20, height=20)[1]
    assert agg.n_in_view == 2 and int((agg.counts > 0).sum()) == 2


# -- 4. image sizes -------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [0, -5, 10.0, True, "40", None])
def test_bad_width_is_a_clear_error_everywhere(bad):
    X = cloud()
    error = (TypeError, ValueError)
    with pytest.raises(error, match=r"width=.* whole number of pixels"):
        image(X, width=bad)
    with pytest.raises(error, match=r"height=.* whole number of pixels"):
        render(X, height=bad)
    with pytest.raises(error, match=r"panel_size=.* whole number of pixels"):
        side_by_side([X], panel_size=bad)
    rec = Recording()
    rec.add(0, X)
    with pytest.raises(error, match=r"width=.* whole number of pixels"):
        recording_frames(rec, width=bad)
    with pytest.raises(error, match=r"width=.* whole number of pixels"):
        resolve_view(X, "auto", bad, 40)


def test_bad_liveview_size_is_a_clear_error():
    pytest.importorskip("holoviews")
    from umapviz.render import LiveView  # noqa: PLC0415 - HoloViews is slow to import: only these tests load it

    with pytest.raises(ValueError, match=r"height=0 .* whole number of pixels"):
        LiveView(width=100, height=0)


def test_numpy_integer_sizes_are_fine():
    assert image(cloud(), width=np.int64(30), height=np.int32(20)).shape == (20, 30, 4)


# -- 5. degenerate auto views ---------------------------------------------------------------------------
@pytest.mark.parametrize("ulps", [1, 5])
def test_auto_view_of_points_a_few_ulps_apart(ulps):
    a = 3.0
    b = a
    for _ in range(ulps):
        b = np.nextafter(b, np.inf)
    X = np.array([[a, a], [b, b]], dtype=np.float64)
    agg = render(X, width=40, height=40)[1]
    assert agg.n_in_view == 2 and agg.n_out_of_view == 0
    lo, hi = agg.view.x_range
    assert lo < a and b < hi


def test_auto_view_of_points_a_denormal_apart():
    X = np.array([[0.0, 0.0], [5e-324, 5e-324]])
    agg = render(X, width=40, height=40)[1]
    assert agg.n_in_view == 2


def test_auto_view_too_wide_for_float64_is_a_clear_error():
    X = np.array([[-1e308, 0.0], [1e308, 1.0]])
    with pytest.raises(ValueError, match=r"points.*overflow.*[Ss]cale the embedding"):
        image(X, width=40, height=40)


def test_auto_view_of_huge_but_finite_span_is_finite():
    X = np.array([[-4e307, 0.0], [4e307, 1.0]])
    agg = render(X, width=40, height=40)[1]
    assert agg.n_in_view == 2
    assert all(np.isfinite(agg.view.bounds))


def test_view_with_an_infinite_span_is_rejected():
    with pytest.raises(ValueError, match=r"x_range.*xmax - xmin.*inf"):
        View((-1e308, 1e308), (0.0, 1.0))


# -- 6. outlier chart gaps ------------------------------------------------------------------------------
def test_outlier_chart_skips_missing_counts():
    epochs = [0, 10, 20, 30]
    charts = [outlier_chart({"run": (epochs, [5, 7, 9, bad])}, width=300, height=200) for bad in (-1, np.nan, np.inf)]
    # -1 (a frame without a mask), NaN and inf are all gaps: the same picture, legend "run: 9" for each
    np.testing.assert_array_equal(charts[0], charts[1])
    np.testing.assert_array_equal(charts[0], charts[2])
    # nothing of the line's colour below the zero line (the -1 drawn as data dipped under it)
    top, ph = max(30, 200 // 9), 200 - max(30, 200 // 9) - 40
    line = (charts[0][..., :3] == np.array(hex_to_rgb(CLASS_PALETTE[0]), np.uint8)).all(axis=2)
    assert line[: top + ph].any() and not line[top + ph + 2 :].any()
    # a gap is not bridged: the line differs from one drawn through a real count there
    assert not np.array_equal(charts[0], outlier_chart({"run": (epochs, [5, 7, 9, 9])}, width=300, height=200))


def test_outlier_chart_of_a_recording_without_masks():
    rec = Recording()
    rec.add(0, cloud())
    rec.add(5, cloud(seed=1))
    assert (rec.outlier_counts() == -1).all()  # no masks recorded
    chart = outlier_chart({"run": (rec.epochs, rec.outlier_counts())}, width=300, height=200)
    # no count to draw: the same chart as one of missing (NaN) counts, legend "run: none" rather than "run: -1"
    unknown = outlier_chart({"run": (rec.epochs, [np.nan, np.nan])}, width=300, height=200)
    np.testing.assert_array_equal(chart, unknown)


# -- 7. outlier discs larger than the image -------------------------------------------------------------
@pytest.mark.parametrize("radius", [39, 40, 50, 10**6])
def test_outlier_radius_larger_than_the_image(radius):
    X = cloud()
    m = np.zeros(300, bool)
    m[0] = True
    rgba = image(X, outliers=m, width=40, height=40, style=Style(outlier_radius=radius))
    assert pixels_of(rgba, OUTLIER_RGB) > 0


@pytest.mark.parametrize("radius", [1, 4, 8, 9, 20])
def test_dilate_many_pixels_with_radii_up_to_beyond_the_image(radius):
    mask = np.zeros((6, 9), bool)
    mask[::2, ::2] = True  # many marked pixels: the shifted-copies path
    # brute force: within the disc of disc_offsets (squared distance <= r^2 + r) of a marked pixel
    yy, xx = np.mgrid[0:6, 0:9]
    d2 = (yy[..., None] - np.nonzero(mask)[0]) ** 2 + (xx[..., None] - np.nonzero(mask)[1]) ** 2
    np.testing.assert_array_equal(dilate(mask, radius), (d2 <= radius * radius + radius).any(axis=2))


# -- 8. recordings: files that are not one --------------------------------------------------------------
def test_load_npy_file_is_a_recording_error(tmp_path):
    path = tmp_path / "frames.npy"
    np.save(path, np.zeros((3, 2)))
    with pytest.raises(RecordingError, match=r"not a .npz file.*Recording\.save"):
        Recording.load(path)


def test_load_random_bytes_is_a_recording_error(tmp_path):
    path = tmp_path / "run.npz"
    path.write_bytes(np.random.default_rng(0).bytes(500))
    with pytest.raises(RecordingError, match=r"not a .npz file") as info:
        Recording.load(path)
    assert "pickled" not in str(info.value)


# -- 9. export suffixes ---------------------------------------------------------------------------------
def test_export_suffix_must_match_format(tmp_path):
    rgba = image(cloud(), width=20, height=20)
    with pytest.raises(ValueError, match=r"\.jpg.*\.png"):
        save_png(rgba, tmp_path / "a.jpg")
    with pytest.raises(ValueError, match=r"\.mp4.*\.gif"):
        save_gif([rgba, rgba], tmp_path / "x.mp4")
    with pytest.raises(ValueError, match=r"\.webm.*\.mp4"):
        save_mp4([rgba, rgba], tmp_path / "x.webm")
    with pytest.raises(ValueError, match=r"\.gif.*\.html"):
        save_html([rgba, rgba], tmp_path / "x.gif")
    assert not list(tmp_path.iterdir())  # nothing written under a wrong name
    assert save_png(rgba, tmp_path / "a.PNG").read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"cmap": ()},  # was an IndexError when shading
        {"palette": ()},  # was a ZeroDivisionError
        {"cmap": "viridis"},  # was "colour 'v' is not of the form '#RRGGBB'"
        {"cmap": ("#zzzzzz",)},  # was "invalid literal for int() with base 16"
        {"background": (0, 0, 0)},  # was an AttributeError on tuple.lstrip
        {"min_alpha": 300},  # wrapped in uint8: the sparsest pixels were drawn almost black
        {"min_alpha": -1},
        {"outlier_radius": -3},
        {"outlier_fill": "red"},  # a colour where the rule ("class" or "outlier") goes
        {"outlier_ring": -1},
        {"outlier_ring": 1.5},
        {"spread_threshold": 2.0},
        {"extra": {"how": "log"}},  # was "multiple values for keyword argument 'how'" when shading
    ],
)
def test_bad_style_values_are_refused_when_the_style_is_made(kwargs):
    name = next(iter(kwargs))
    with pytest.raises(ValueError, match=rf"{name}|colour"):
        Style(**kwargs)


def test_good_styles_still_draw():
    style = Style(
        cmap=["#ffffff", "#FF0000"],
        background="#2040a0",
        min_alpha=0,
        outlier_radius=0,
        extra={"rescale_discrete_levels": False},
    )
    emb = np.random.default_rng(0).normal(size=(500, 2))
    assert image(emb, width=30, height=30, style=style).shape == (30, 30, 4)


def test_a_folder_that_takes_no_new_files_is_named_as_the_target(tmp_path, monkeypatch):
    """The error named the temporary file (.a.tmp.995_fjei.png) that the user never asked for. Root ignores
    read-only folders, so the refusal is simulated where the temporary file is made."""

    def refuse(prefix="", suffix="", dir=None):
        raise PermissionError(13, "Permission denied", f"{dir}/{prefix}x1y2{suffix}")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    target = tmp_path / "a.png"
    with pytest.raises(PermissionError) as info:
        save_png(image(cloud(), width=10, height=10), target)
    assert info.value.filename == str(target) and ".tmp." not in str(info.value)


def test_aggregate_takes_a_fixed_view_as_numbers():
    """aggregate(X, (0, 1, 0, 1)) raised AttributeError: 'tuple' object has no attribute 'x_range'."""

    emb = np.array([[0.25, 0.25], [0.75, 0.75], [5.0, 5.0]])
    agg = aggregate(emb, (0, 1, 0, 1), 10, 10)
    assert agg.n_in_view == 2 and agg.view == View((0, 1), (0, 1))


def test_a_huge_image_is_refused_before_allocating():
    with pytest.raises(ValueError, match=r"100000 x 100000 image needs 37\.3 GiB"):
        image(cloud(), width=100_000, height=100_000)


def test_recording_add_checks_epochs_labels_and_takes_outlier_indices():
    emb = cloud(50)
    rec = Recording()
    with pytest.raises(TypeError, match="epoch must be a whole number"):
        rec.add(1.7, emb)  # was recorded as epoch 1
    rec.add(np.int64(0), emb, outliers=np.array([3, 7]))  # indices, as image() takes them
    assert np.flatnonzero(rec[0].outliers).tolist() == [3, 7]
    bad = Recording(labels=np.full(50, -1))
    with pytest.raises(ValueError, match="labels"):
        bad.add(0, emb)  # failed only later, in recording_frames, asking for an n_labels it does not take
    huge = emb.astype(np.float64)
    huge[4] = 1e300  # stored as inf with only NumPy's overflow warning, drawn as if it had diverged
    with pytest.raises(ValueError, match="beyond float32's range"):
        rec.add(1, huge)
    diverged = emb.copy()
    diverged[4] = np.inf  # a diverged point is recorded as it is
    rec.add(1, diverged)
    assert np.isinf(rec[1].embedding[4]).all()


def test_a_home_relative_path_is_written_in_the_home_folder(tmp_path, monkeypatch):
    """ "~/x.png" made a folder named "~" in the working directory."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    written = save_png(image(cloud(), width=10, height=10), "~/x.png")
    assert written == tmp_path / "home" / "x.png" and written.exists() and not (tmp_path / "~").exists()
    rec = Recording()
    rec.add(0, cloud(20))
    rec.save("~/run.npz")
    assert len(Recording.load("~/run.npz")) == 1


def test_one_image_given_as_the_frames_says_to_pass_a_list(tmp_path):
    rgba = image(cloud(), width=12, height=12)
    with pytest.raises(ValueError, match=r"one \(12, 12, 4\) image; pass a list of images"):
        save_gif(rgba, tmp_path / "x.gif")


# -- found by the widgets audit (audit-widgets): each failed before its fix ---------------------------------------


def test_a_file_in_the_way_of_the_folder_or_a_folder_at_the_target_says_so(tmp_path):
    """Saving under a path whose folder is a file said "File exists: .../afile" (the user asked for a new file, not
    that one); saving onto a folder named the temporary file, "... .adir.tmp.x19vcs7w.png -> adir.png"."""
    rgba = image(cloud(), width=10, height=10)
    (tmp_path / "afile").write_text("mine")
    for target in (tmp_path / "afile" / "run.png", tmp_path / "afile" / "sub" / "run.png"):
        with pytest.raises(OSError, match=r"afile is a file, not a folder.*another folder") as info:
            save_png(rgba, target)
        assert info.value.filename == str(target)
    assert (tmp_path / "afile").read_text() == "mine"
    (tmp_path / "adir.png").mkdir()
    with pytest.raises(IsADirectoryError, match=r"is a folder.*adir\.png/") as info:
        save_png(rgba, tmp_path / "adir.png")
    assert ".tmp." not in str(info.value) and not list(tmp_path.glob(".*tmp*"))


def test_saving_over_a_symlink_or_a_file_with_its_own_permissions_keeps_them(tmp_path):
    """os.replace put a plain file where the user's symlink was (the file it pointed to kept its old picture), and
    reset a replaced file's permissions to the umask's."""

    rgba = image(cloud(), width=10, height=10)
    (tmp_path / "real").mkdir()
    real, link = tmp_path / "real" / "run.png", tmp_path / "latest.png"
    real.write_bytes(b"old")
    os.chmod(real, 0o640)
    link.symlink_to(real)
    save_png(rgba, link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_bytes().startswith(b"\x89PNG") and stat.S_IMODE(real.stat().st_mode) == 0o640
    fresh = save_png(rgba, tmp_path / "fresh.png")  # a new file: the usual permissions, not mkstemp's 0o600
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask
    dangling = tmp_path / "next.png"
    dangling.symlink_to(tmp_path / "real" / "new.png")  # a link to a file not made yet: the file is made
    save_png(rgba, dangling)
    assert dangling.is_symlink() and (tmp_path / "real" / "new.png").read_bytes().startswith(b"\x89PNG")


def test_side_by_side_says_how_to_pass_a_dict_or_one_embedding():
    """A dict (as outlier_chart takes) failed on its first key: "embedding must have shape (N, 2); got ()"; one
    (N, 2) array was read as N panels of one row each."""
    emb = cloud(50)
    with pytest.raises(ValueError, match=r"list\(d\.values\(\)\), titles=list\(d\)"):
        side_by_side({"buffered": emb, "chunked": emb})
    with pytest.raises(ValueError, match=r"one \(50, 2\) embedding; pass a list"):
        side_by_side(emb)


def test_outlier_chart_refuses_epochs_that_are_not_finite():
    """A NaN or infinite epoch failed deep in the tick drawing: "cannot convert float NaN to integer"."""
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match=r"series 'a': epochs must be finite numbers"):
            outlier_chart({"a": ([0, bad], [1, 2])})


def test_n_colours_is_the_deprecated_name_of_n_colors():
    """``aggregate(n_colours=...)`` still works for one release, with a DeprecationWarning, and counts as
    ``n_colors`` does; both at once is a TypeError."""
    emb = np.random.default_rng(0).normal(size=(500, 2)).astype(np.float32)
    labels = np.arange(500) % 20
    view = (-4.0, 4.0, -4.0, 4.0)
    new = aggregate(emb, view, 40, 30, labels=labels, n_colors=15)
    assert new.counts.shape == (30, 40, 15)
    with pytest.warns(DeprecationWarning, match="n_colours= is deprecated.*use n_colors="):
        old = aggregate(emb, view, 40, 30, labels=labels, n_colours=15)
    np.testing.assert_array_equal(old.counts, new.counts)
    with pytest.raises(TypeError, match="pass n_colors= only"):
        aggregate(emb, view, 40, 30, labels=labels, n_colors=15, n_colours=15)
