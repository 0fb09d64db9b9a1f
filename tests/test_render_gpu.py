"""umapviz.render on CuPy arrays: the CUDA grids must equal the NumPy (datashader) grids bit for bit.

Skipped without CuPy and a GPU (tests/conftest.py). The data are chosen to hit the cases where a
different rounding would move a point: coordinates on pixel borders and on the view's edges, NaN and inf
rows, points outside the view, float32 and float64.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_render_colormap import make_grid  # the same grid kinds as the NumPy shading tests (tests/ is on sys.path)

from umapviz.render import View, aggregate, image, render
from umapviz.render.view import data_bounds, resolve_view

pytestmark = pytest.mark.gpu


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
    """The host's grids and images, which these tests compare with, come from datashader: without it (the GPU
    machine's bare image; bench/device_wheels.sh brings it) there is nothing to compare with."""
    return pytest.importorskip("datashader", reason="the host reference (datashader) is not installed")


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


def test_gpu_classes_beyond_the_palette_share_colours_as_on_the_host(cp, reference):
    """40 classes against 15 colours: the CuPy labels are folded on the device (class k counts as colour k mod
    15), into the host's grids and image."""
    emb = tricky_points(50_000, seed=6)
    labels = np.random.default_rng(7).integers(0, 40, len(emb))
    host = aggregate(emb, VIEW, WIDTH, HEIGHT, labels=labels, n_colours=15)
    device = aggregate(cp.asarray(emb), VIEW, WIDTH, HEIGHT, labels=cp.asarray(labels), n_colours=15)
    assert device.counts.shape == host.counts.shape == (HEIGHT, WIDTH, 15)
    np.testing.assert_array_equal(device.counts, host.counts)
    host_image = image(emb, labels=labels, width=160, height=120, view="robust")
    np.testing.assert_array_equal(image(cp.asarray(emb), labels=cp.asarray(labels), width=160, height=120,
                                        view="robust"), host_image)


def test_gpu_bounds_and_views_equal_the_host(cp):
    emb = tricky_points(seed=3)
    emb[5] = [250.0, -40.0]  # a far point: robust and auto views differ
    d_emb = cp.asarray(emb)
    assert data_bounds(d_emb) == data_bounds(emb)
    for view in ("auto", "robust"):
        assert resolve_view(d_emb, view, 300, 200) == resolve_view(emb, view, 300, 200)
    assert data_bounds(cp.full((10, 2), cp.nan, dtype=cp.float32)) is None


def test_gpu_image_equals_cpu_image(cp, reference):
    emb = tricky_points(50_000, seed=4)
    labels = np.arange(len(emb)) % 3
    outliers = np.zeros(len(emb), bool)
    outliers[::997] = True
    for kwargs in ({}, {"labels": labels}):
        host = image(emb, outliers=outliers, width=160, height=120, view="robust", **kwargs)
        dev_kwargs = {k: cp.asarray(v) for k, v in kwargs.items()}
        device = image(cp.asarray(emb), outliers=cp.asarray(outliers), width=160, height=120, view="robust",
                       **dev_kwargs)  # fmt: skip
        np.testing.assert_array_equal(device, host)


def test_gpu_large_input_counts_every_point(cp):
    n = 20_000_000
    emb = cp.random.standard_normal((n, 2), dtype=cp.float32)
    rgba, agg = render(emb, width=1024, height=1024, view="auto")
    assert agg.n_in_view == n  # the auto view holds every finite point
    assert rgba.shape == (1024, 1024, 4)


def test_gpu_live_view_draws_device_embeddings(cp):
    pytest.importorskip("holoviews")  # the live view's own library; absent from the GPU machine's image
    from umapviz.render.live import LiveView

    emb = tricky_points(20_000, seed=5)
    host_view, device_view = LiveView(width=90, height=70), LiveView(width=90, height=70)
    host_view.push(emb)
    device_view.push(cp.asarray(emb))
    np.testing.assert_array_equal(device_view.dmap[()].data, host_view.dmap[()].data)


# -- shading on the device ------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [None, 3, 10])
@pytest.mark.parametrize("kind", ["dense", "power law", "sparse", "single point", "zero", "huge"])
def test_gpu_shading_equals_numpy_shading_bit_for_bit(cp, kind, k):
    from umapviz.render.aggregate import N_EDGE_BINS, Aggregate
    from umapviz.render.shade import Style, shade

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


def test_gpu_frame_shades_on_the_device_and_brings_back_only_the_image(cp, reference, monkeypatch):
    import importlib

    colormap = importlib.import_module("umapviz.render._colormap")
    shade_module = importlib.import_module("umapviz.render.shade")  # the module, not the function of that name
    from umapviz._backend import is_cupy, to_host

    emb = tricky_points(1_000_000, seed=6)
    labels = np.arange(len(emb)) % 5
    outliers = np.zeros(len(emb), bool)
    outliers[::50_000] = True
    copied = []

    def recording_to_host(x):
        copied.append(int(x.nbytes))
        return to_host(x)

    for module in (colormap, shade_module):
        monkeypatch.setattr(module, "to_host", recording_to_host)
    for kwargs in ({}, {"labels": labels}):
        copied.clear()
        dev_kwargs = {k: cp.asarray(v) for k, v in kwargs.items()}
        rgba, agg = render(cp.asarray(emb), outliers=cp.asarray(outliers), width=160, height=120, view="robust",
                           **dev_kwargs)  # fmt: skip
        assert is_cupy(agg.counts) and is_cupy(agg.outlier_counts)  # the grids stayed on the GPU
        assert copied and max(copied) <= rgba.nbytes < emb.nbytes // 10  # the image and small tables only
        np.testing.assert_array_equal(rgba, image(emb, outliers=outliers, width=160, height=120, view="robust",
                                                  **kwargs))  # fmt: skip
