"""umapviz.metrics: outlier masks, trustworthiness, fingerprint."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.manifold import trustworthiness as sklearn_trustworthiness
from sklearn.neighbors import NearestNeighbors

from umapviz import LayoutOptimizer, metrics
from umapviz._backend import to_host, xp_of


def knn(points: np.ndarray, k: int = 10) -> np.ndarray:
    """(n, k) neighbour indices, self included (as a FuzzyGraph's knn_indices)."""
    return NearestNeighbors(n_neighbors=k).fit(points).kneighbors(return_distance=False, X=points)


@pytest.fixture
def clean():
    """A layout like UMAP's: a few uniformly filled clusters, and its neighbour graph."""
    rng = np.random.default_rng(0)
    centres = np.array([[0, 0], [8, 1], [3, 9], [-6, 5]], dtype=np.float32)
    Y = (centres[rng.integers(0, 4, 3000)] + rng.uniform(-1.5, 1.5, (3000, 2))).astype(np.float32)
    return Y, knn(Y)


@pytest.mark.parametrize("method", ["neighbors", "radius", "bounds"])
def test_clean_layout_has_no_outliers(clean, method):
    Y, nbrs = clean
    mask = metrics.outliers(Y, nbrs, method=method, reference=Y)
    assert mask.dtype == bool and mask.shape == (len(Y),)
    assert mask.sum() <= 2  # near zero


@pytest.mark.parametrize("method", ["neighbors", "radius", "bounds"])
def test_planted_far_point_is_flagged(clean, method):
    Y, nbrs = clean
    flung = Y.copy()
    flung[123] = [150.0, -90.0]  # the graph still says its neighbours are back in its cluster
    mask = metrics.outliers(flung, nbrs, method=method, reference=Y)
    assert mask[123]
    assert mask.sum() <= 3


def test_fuzzy_graph_like_object_is_accepted(clean):
    Y, nbrs = clean
    flung = Y.copy()
    flung[5] += 200
    graph = SimpleNamespace(knn_indices=nbrs.astype(np.int32))
    assert np.array_equal(metrics.outliers(flung, graph), metrics.outliers(flung, nbrs))


def test_neighbors_factor_is_relative_to_the_median_gap():
    # Points on a line 1 apart; the last one 5 away from its only neighbour.
    Y = np.zeros((11, 2), dtype=np.float32)
    Y[:, 0] = np.arange(11)
    Y[10, 0] = 14
    nbrs = np.array([[i, i - 1 if i else 1] for i in range(11)])
    d = metrics.neighbor_distances(Y, nbrs)
    assert d.tolist() == [1.0] * 10 + [5.0]
    assert metrics.outliers(Y, nbrs, factor=4.9).tolist() == [False] * 10 + [True]
    assert not metrics.outliers(Y, nbrs, factor=5.1).any()


def test_duplicates_and_missing_neighbours_do_not_break_the_neighbour_measure():
    # Rows 0-11: six points, each twice (a duplicate is its own nearest neighbour, distance 0).
    # Rows 12-16: a line one apart. Row 17: 100 beyond the line's end. Row 18: no neighbour listed.
    Y = np.zeros((19, 2), dtype=np.float32)
    Y[:12, 1] = np.repeat(np.arange(6) * 10.0, 2)
    Y[12:17, 0] = np.arange(5)
    Y[17, 0] = 104
    Y[18] = [3, 3]
    nbrs = [[i, i ^ 1] for i in range(12)] + [[i, i + 1] for i in range(12, 16)] + [[16, 15], [17, 16], [18, -1]]
    d = metrics.neighbor_distances(Y, np.array(nbrs))
    assert (d[:12] == 0).all() and (d[12:17] == 1).all() and d[17] == 100 and np.isinf(d[18])
    # The typical gap is the median over non-zero distances (1), not 0 as most rows here would make it.
    mask = metrics.outliers(Y, np.array(nbrs))
    assert np.flatnonzero(mask).tolist() == [17]


def test_bounds_use_min_max_and_two_std_per_axis():
    rng = np.random.default_rng(1)
    ref = rng.normal(size=(500, 2)) * [1.0, 3.0]
    lo = ref.min(axis=0) - 2 * ref.std(axis=0)
    hi = ref.max(axis=0) + 2 * ref.std(axis=0)
    Y = ref.copy()
    Y[0] = [hi[0] - 1e-6, 0]  # just inside on x
    Y[1] = [hi[0] + 1e-6, 0]  # just outside on x
    Y[2] = [0, lo[1] - 1e-6]  # just outside on y
    mask = metrics.outliers(Y, method="bounds", reference=ref)
    assert mask[:3].tolist() == [False, True, True]
    assert mask.sum() == 2


def test_non_finite_rows_are_outliers(clean):
    Y, nbrs = clean
    Y = Y.copy()
    Y[9] = np.nan
    for method in ("neighbors", "radius", "bounds"):
        mask = metrics.outliers(Y, nbrs, method=method, reference=clean[0])
        assert mask[9] and mask.sum() <= 3


def test_outlier_errors(clean):
    Y, nbrs = clean
    with pytest.raises(ValueError, match="needs reference"):
        metrics.outliers(Y, method="bounds")
    with pytest.raises(ValueError, match="needs graph"):
        metrics.outliers(Y, method="neighbors")
    with pytest.raises(ValueError, match="Unknown outlier method 'far'"):
        metrics.outliers(Y, nbrs, method="far")
    with pytest.raises(ValueError, match="shape"):
        metrics.outliers(Y, method="bounds", reference=Y[:10])
    with pytest.raises(ValueError, match="vertices"):
        metrics.outliers(Y, nbrs[:10])
    with pytest.raises(ValueError, match="beyond"):
        metrics.outliers(Y[:100], nbrs[:100])
    with pytest.raises(ValueError, match="2-D"):
        metrics.outliers(Y[:, 0], nbrs)


def test_outlier_summary(clean):
    Y, nbrs = clean
    flung = Y.copy()
    flung[[4, 40]] = [[300.0, 0.0], [0.0, -200.0]]
    s = metrics.outlier_summary(flung, nbrs, reference=Y)
    assert (s["neighbors"], s["bounds"], s["radius"]) == (2, 2, 2)
    assert s["max_radius"] > 290 and s["median_radius"] < 10
    assert s["max_gap_ratio"] > 100
    bare = metrics.outlier_summary(flung)
    assert bare["neighbors"] is None and bare["bounds"] is None and bare["radius"] == 2


# --- trustworthiness --------------------------------------------------------------------------------


@pytest.fixture
def high_dim():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((250, 12))
    X[:125] += 3.0  # two groups, so a 2-D projection keeps some structure
    return X


@pytest.mark.parametrize("k", [1, 5, 12])
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_trustworthiness_equals_sklearn(high_dim, k, metric):
    Y = high_dim[:, :2] + 0.05 * high_dim[:, 2:4]
    ours = metrics.trustworthiness(high_dim, Y, n_neighbors=k, metric=metric)
    theirs = sklearn_trustworthiness(high_dim, Y, n_neighbors=k, metric=metric)
    assert ours == pytest.approx(theirs, abs=1e-12)


def test_trustworthiness_isometry_is_one_and_random_is_low(high_dim):
    rng = np.random.default_rng(3)
    rotation, _ = np.linalg.qr(rng.standard_normal((12, 12)))
    assert metrics.trustworthiness(high_dim, high_dim @ rotation + 7.0) == pytest.approx(1.0)
    random_layout = rng.standard_normal((250, 2))
    assert metrics.trustworthiness(high_dim, random_layout) < 0.6


def test_trustworthiness_embedding_neighbors_leave_the_query_out_even_among_duplicates(device):
    """The embedding's neighbours come from the exact kNN search (k + 1, ties by index) less the query itself; with
    more than k + 1 points at one place the query may not be among them, and the last one goes instead."""
    xp = np if device == "cpu" else pytest.importorskip("cupy")
    k = 4
    Y = np.random.default_rng(0).standard_normal((300, 2)).astype(np.float32)
    Y[10:17] = Y[10]  # 7 points at one place: more than k + 1
    queries = np.array([10, 12, 16, 40])
    found = metrics._embedding_neighbors(xp.asarray(Y), queries, k)
    assert found.shape == (4, k) and xp_of(found) is xp
    found = to_host(found)
    np.testing.assert_array_equal(found[0], [11, 12, 13, 14])  # itself left out
    np.testing.assert_array_equal(found[1], [10, 11, 13, 14])
    np.testing.assert_array_equal(found[2], [10, 11, 12, 13])  # pushed out by the 5 before it: the last goes
    d = ((Y - Y[40]) ** 2).sum(axis=1)
    d[40] = np.inf
    np.testing.assert_array_equal(found[3], np.argsort(d, kind="stable")[:k])


def test_trustworthiness_subsample_estimates_the_full_value():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((3000, 8)).astype(np.float32)
    Y = X[:, :2] + 0.3 * rng.standard_normal((3000, 2)).astype(np.float32)
    full = metrics.trustworthiness(X, Y, sample=3000)
    auto = metrics.trustworthiness(X, Y)  # 2,000 of 3,000 queries
    few = metrics.trustworthiness(X, Y, sample=500, random_state=1)
    assert auto == pytest.approx(full, abs=0.01)
    assert few == pytest.approx(full, abs=0.02)
    assert few == metrics.trustworthiness(X, Y, sample=500, random_state=1)
    assert few != metrics.trustworthiness(X, Y, sample=500, random_state=2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("scale", "offset"), [(1.0, 1e3), (1.0, 1e4), (1e20, 0.0), (1e-25, 0.0)])
def test_trustworthiness_does_not_depend_on_the_datas_offset_or_scale(high_dim, dtype, scale, offset):
    """Ranks came from |a|^2 + |b|^2 - 2 a.b in the data's dtype: float32 data offset by 1e3 scored 0.92 instead of
    0.91 (0.74 at 1e4), and data at 1e20 or 1e-25 (squares overflowing or underflowing) scored 1.0."""
    Y = (high_dim[:, :2] + 0.05 * high_dim[:, 2:4]).astype(np.float32)
    X = (high_dim * scale + offset).astype(dtype)
    expected = metrics.trustworthiness(high_dim, Y)
    assert metrics.trustworthiness(X, Y) == pytest.approx(expected, abs=1e-3)
    assert metrics.trustworthiness(high_dim, Y.astype(dtype) * scale + offset) == pytest.approx(expected, abs=1e-3)
    if offset == 0.0:
        assert metrics.trustworthiness(X, Y, metric="cosine") == pytest.approx(
            metrics.trustworthiness(high_dim, Y, metric="cosine"), abs=1e-3
        )


def test_trustworthiness_errors(high_dim):
    Y = high_dim[:, :2]
    with pytest.raises(ValueError, match="n / 2"):
        metrics.trustworthiness(high_dim, Y, n_neighbors=125)
    with pytest.raises(ValueError, match="one row"):
        metrics.trustworthiness(high_dim[:100], Y)
    with pytest.raises(ValueError, match="sample"):
        metrics.trustworthiness(high_dim, Y, sample=0)
    with pytest.raises(ValueError, match="metric"):
        metrics.trustworthiness(high_dim, Y, metric="manhattan")


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"X": np.array([["a", "b"]] * 250)}, ValueError, "X must hold real numbers.*dtype=float"),
        ({"X": np.array([[1, "a"]] * 250, dtype=object)}, ValueError, "X must hold real numbers"),
        ({"X": np.ones((250, 3), dtype=complex)}, ValueError, "X must hold real numbers"),
        ({"X": [[1.0], [1.0, 2.0]] * 125}, ValueError, "X could not be read as a 2-D numeric array"),
        ({"X": np.ones(250)}, ValueError, "X must be a non-empty 2-D array"),
        ({"n_neighbors": 5.7}, TypeError, "n_neighbors must be an integer, got 5.7"),
        ({"n_neighbors": "5"}, TypeError, "n_neighbors must be an integer"),
        ({"n_neighbors": None}, TypeError, "n_neighbors must be an integer"),
        ({"sample": 10.5}, TypeError, "sample must be an integer"),
        ({"sample": "a"}, TypeError, "sample must be an integer"),
    ],
)
def test_trustworthiness_refuses_bad_inputs_by_name(high_dim, kwargs, error, message):
    """Text or object X failed inside NumPy ("could not convert string to float"), complex X was ranked by its real
    part, and n_neighbors=5.7 or sample=10.5 were silently rounded down (None failed inside int())."""
    args = {"X": high_dim, "embedding": high_dim[:, :2], **kwargs}
    with pytest.raises(error, match=message):
        metrics.trustworthiness(**args)


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_trustworthiness_refuses_rows_that_are_not_finite(high_dim, value):
    """A diverged layout (or bad data) must not get a plausible score: it used to give 0.36 for all-inf and
    0.81 for ten NaN rows, with at most a RuntimeWarning."""
    Y = high_dim[:, :2].copy()
    Y[[3, 7, 30]] = value
    with pytest.raises(ValueError, match=r"embedding has 3 row\(s\) with NaN or inf \(rows \[3, 7, 30\]\)"):
        metrics.trustworthiness(high_dim, Y)
    X = high_dim.copy()
    X[11, 0] = value
    with pytest.raises(ValueError, match=r"X has 1 row\(s\).*rows \[11\].*keep = numpy.isfinite\(X\)"):
        metrics.trustworthiness(X, high_dim[:, :2])
    keep = np.isfinite(Y).all(axis=1)  # the way out the message gives
    assert 0 < metrics.trustworthiness(high_dim[keep], Y[keep]) <= 1


def test_fingerprint_refuses_what_is_not_a_numeric_array():
    with pytest.raises(TypeError, match="None"):
        metrics.fingerprint(None)
    with pytest.raises(TypeError, match="numeric"):
        metrics.fingerprint(np.array(["a", "b"]))


# --- fingerprint ------------------------------------------------------------------------------------


def test_fingerprint_changes_with_one_bit_shape_and_dtype():
    Y = np.random.default_rng(5).standard_normal((100, 2)).astype(np.float32)
    fp = metrics.fingerprint(Y)
    assert len(fp) == 16 and int(fp, 16) >= 0
    assert metrics.fingerprint(Y.copy()) == fp
    assert metrics.fingerprint(np.asfortranarray(Y)) == fp  # same values, same fingerprint
    flipped = Y.copy()
    flipped.view(np.uint32)[57, 1] ^= 1  # the lowest mantissa bit of one coordinate
    assert metrics.fingerprint(flipped) != fp
    assert metrics.fingerprint(Y.reshape(50, 4)) != fp
    assert metrics.fingerprint(Y.view(np.int32)) != fp


def test_fingerprint_sees_order_and_every_byte_of_odd_sized_arrays():
    Y = np.random.default_rng(6).standard_normal((101, 3)).astype(np.float32)  # 1212 bytes: not whole words
    fp = metrics.fingerprint(Y)
    assert metrics.fingerprint(Y[[1, 0, *range(2, 101)]]) != fp  # two rows swapped: same multiset of values
    last = Y.copy()
    last.view(np.uint32)[-1, -1] ^= 1 << 31  # the sign of the very last coordinate (in the padded word)
    assert metrics.fingerprint(last) != fp
    assert len({metrics.fingerprint(Y[:n]) for n in range(0, 101, 10)}) == 11


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"factor": -1}, ValueError, "factor=-1 is out of range.*20 is the default"),
        ({"factor": np.nan}, ValueError, "factor=nan is out of range"),
        ({"factor": 0}, ValueError, "factor=0 is out of range"),
        ({"factor": "20"}, TypeError, "factor must be a number"),
        ({"method": "bounds", "n_std": -2}, ValueError, "n_std=-2 is out of range"),
        ({"method": "radius", "n_mad": np.inf}, ValueError, "n_mad=inf is out of range"),
    ],
)
def test_outlier_thresholds_are_checked(kwargs, error, message):
    """factor=-1 flagged every point and factor=NaN none, each looking like a count."""
    rng = np.random.default_rng(0)
    Y = rng.standard_normal((50, 2))
    nbrs = np.array([[(i + 1) % 50] for i in range(50)])
    with pytest.raises(error, match=message):
        metrics.outliers(Y, nbrs, reference=Y, **kwargs)
    with pytest.raises(ValueError, match="n_std=-1 is out of range"):
        metrics.reference_bounds(Y, n_std=-1)


@pytest.mark.gpu
def test_metrics_take_cupy_arrays(mixture_graph):
    import cupy as cp  # noqa: PLC0415 - GPU only: CuPy is absent where there is no GPU

    X, graph = mixture_graph
    opt = LayoutOptimizer(graph, strategy="buffered", device="gpu", random_state=7).run()
    ref = LayoutOptimizer(graph, strategy="sequential", device="gpu", random_state=7).run()
    Y, R = opt.device_embedding, ref.device_embedding
    for method, kw in (("neighbors", {"graph": graph}), ("bounds", {"reference": R}), ("radius", {})):
        mask = metrics.outliers(Y, method=method, **kw)
        assert isinstance(mask, cp.ndarray), method
        host_kw = {k: (v.get() if isinstance(v, cp.ndarray) else v) for k, v in kw.items()}
        np.testing.assert_array_equal(mask.get(), metrics.outliers(Y.get(), method=method, **host_kw))
    assert metrics.fingerprint(Y) == metrics.fingerprint(Y.get())
    t_dev = metrics.trustworthiness(cp.asarray(X), Y, sample=300)
    t_host = metrics.trustworthiness(X, Y.get(), sample=300)
    assert abs(t_dev - t_host) <= 1e-9
