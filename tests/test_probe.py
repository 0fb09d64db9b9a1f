"""umapviz.probe: point facts, the chunk mechanism, flung ordering, and picking points.

The graphs here are written by hand, so degrees, ranks and chunk histograms are known by construction; the
chunked histogram is recomputed from docs/optimizer.md's definition of the processing order
(``default_rng([seed, 2]).permutation(nnz)``) and ``numpy.array_split``, not from the code under test.
"""

from __future__ import annotations

import numpy as np
import pytest

from umapviz import probe
from umapviz.graph import FuzzyGraph


def make_graph(edges: list[tuple[int, int]], n: int) -> FuzzyGraph:
    """A FuzzyGraph holding each undirected edge in both directions, sorted by head then tail."""
    both = sorted({(i, j) for i, j in edges} | {(j, i) for i, j in edges})
    head = np.array([e[0] for e in both], np.int32)
    tail = np.array([e[1] for e in both], np.int32)
    return FuzzyGraph(
        head=head,
        tail=tail,
        weight=np.ones(len(both), np.float32),
        epochs_per_sample=np.ones(len(both)),
        knn_indices=np.zeros((n, 1), np.int32),
        knn_dists=np.zeros((n, 1), np.float32),
        a=1.6,
        b=0.9,
        n_epochs=200,
    )


# Vertex 0 is a hub of 6 edges; 1-2 and 3-4 are extra edges; 7 stands alone.
SMALL_EDGES = [(0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (0, 6), (1, 2), (3, 4)]
SMALL_DEGREES = [6, 2, 2, 2, 2, 1, 1, 0]
SMALL_RANKS = [1, 2, 3, 4, 5, 6, 7, 8]


@pytest.fixture
def small():
    graph = make_graph(SMALL_EDGES, 8)
    embedding = np.random.default_rng(0).normal(size=(8, 2)).astype(np.float32)
    return graph, embedding


def star(n_leaves: int) -> FuzzyGraph:
    return make_graph([(0, j) for j in range(1, n_leaves + 1)], n_leaves + 1)


def contract_histogram(graph: FuzzyGraph, vertex: int, n_chunks: int, seed: int) -> np.ndarray:
    """The contract's chunks of an active list holding every edge: the edges in perm order, array_split."""
    perm = np.random.default_rng([seed, 2]).permutation(graph.nnz)
    return np.array([int(np.sum(graph.head[part] == vertex)) for part in np.array_split(perm, n_chunks)])


def test_degree_and_rank(small):
    graph, Y = small
    for v in range(8):
        info = probe.point_info(graph, Y, v, strategy="buffered")
        assert (info.degree, info.degree_rank) == (SMALL_DEGREES[v], SMALL_RANKS[v])
        assert info.n_vertices == 8
    assert probe.point_info(graph, Y, 0, strategy="buffered").neighbors.tolist() == [1, 2, 3, 4, 5, 6]
    assert probe.point_info(graph, Y, 3, strategy="buffered").neighbors.tolist() == [0, 4]


def test_rank_ties_go_by_index():
    degree = np.array([3, 5, 3, 5, 1])
    assert [probe.degree_rank(degree, v) for v in range(5)] == [3, 1, 4, 2, 5]


def test_buffered_sums_every_edge_in_one_chunk(small):
    graph, Y = small
    for v in range(8):
        info = probe.point_info(graph, Y, v, strategy="buffered")
        assert info.n_chunks == 1
        assert info.edges_per_chunk.tolist() == [SMALL_DEGREES[v]]
        assert info.max_edges_in_one_chunk == SMALL_DEGREES[v]
        assert info.max_moves_in_one_chunk == 2 * SMALL_DEGREES[v]  # and as tail of each reverse edge


def test_chunked_one_chunk_is_buffered(small):
    graph, Y = small
    info = probe.point_info(graph, Y, 0, strategy="chunked", n_chunks=1)
    assert info.edges_per_chunk.tolist() == [6] and info.max_edges_in_one_chunk == 6


@pytest.mark.parametrize("n_chunks", [2, 3, 5, 16])
@pytest.mark.parametrize("seed", [0, 7, 2**32 - 1])
def test_chunked_histogram_follows_the_contract(small, n_chunks, seed):
    graph, Y = small
    for v in (0, 1, 5, 7):
        info = probe.point_info(graph, Y, v, strategy="chunked", n_chunks=n_chunks, random_state=seed)
        expected = contract_histogram(graph, v, n_chunks, seed)
        assert info.n_chunks == n_chunks
        assert info.edges_per_chunk.tolist() == expected.tolist()
        assert info.edges_per_chunk.sum() == SMALL_DEGREES[v]
        assert info.max_edges_in_one_chunk == expected.max()


def test_max_falls_as_chunks_rise_on_a_hub():
    graph = star(300)  # 600 edges: each n_chunks below divides it, and each cut refines the one before
    Y = np.zeros((301, 2), np.float32)
    maxima = [
        probe.point_info(graph, Y, 0, strategy="chunked", n_chunks=k, random_state=3).max_edges_in_one_chunk
        for k in (1, 2, 4, 8, 24, 120, 600)
    ]
    assert maxima[0] == 300 and maxima[-1] == 1
    assert all(a >= b for a, b in zip(maxima, maxima[1:], strict=False)), maxima
    assert maxima[3] < 300


def test_chunk_rule_names_resolve_as_the_optimizer_does():
    graph = star(300)  # max degree 300, nnz 600: auto = max(2, ceil(300 / 8)) = 38
    Y = np.zeros((301, 2), np.float32)
    assert probe.point_info(graph, Y, 0, strategy="chunked", n_chunks="auto", random_state=1).n_chunks == 38
    assert probe.point_info(graph, Y, 0, strategy="chunked", n_chunks="degree", random_state=1).n_chunks == 10


def test_vertex_groups_of_32_head_items_first():
    graph = star(300)  # the hub: 300 head items then 300 tail items, 32 at a time: 19 groups
    info = probe.point_info(graph, np.zeros((301, 2), np.float32), 0, strategy="vertex")
    assert info.n_chunks is None
    assert info.edges_per_chunk.tolist() == [32] * 9 + [12] + [0] * 9
    assert (info.max_edges_in_one_chunk, info.max_moves_in_one_chunk) == (32, 32)
    leaf = probe.point_info(graph, np.zeros((301, 2), np.float32), 5, strategy="vertex")
    assert leaf.edges_per_chunk.tolist() == [1] and leaf.max_moves_in_one_chunk == 2


def test_vertex_wide_groups_above_4096_items():
    graph = star(2100)  # 4,200 items > 4,096: groups of 128
    info = probe.point_info(graph, np.zeros((2101, 2), np.float32), 0, strategy="vertex")
    assert info.max_edges_in_one_chunk == 128
    assert len(info.edges_per_chunk) == 33 and info.edges_per_chunk.sum() == 2100  # ceil(4200 / 128)


@pytest.mark.parametrize("strategy", ["sequential", "hogwild"])
def test_live_strategies_sum_one_at_a_time(small, strategy):
    graph, Y = small
    info = probe.point_info(graph, Y, 0, strategy=strategy)
    assert info.n_chunks is None and info.max_edges_in_one_chunk == 1 and info.max_moves_in_one_chunk == 1
    assert info.edges_per_chunk.tolist() == [1] * 6
    lonely = probe.point_info(graph, Y, 7, strategy=strategy)
    assert lonely.max_edges_in_one_chunk == 0 and lonely.edges_per_chunk.size == 0


def test_neighbor_distance_ratio_by_hand():
    # A unit square 0-1-3-2 and point 4 tied to 0 and 1: lengths 1, 1, 1, 1, 10, 9 -> typical 1. Point 4's
    # neighbours' median is (0.5, 0), 9.5 away from (10, 0).
    graph = make_graph([(0, 1), (0, 2), (1, 3), (2, 3), (4, 0), (4, 1)], 5)
    Y = np.array([[0, 0], [1, 0], [0, 1], [1, 1], [10, 0]], np.float32)
    info = probe.point_info(graph, Y, 4, strategy="buffered")
    assert info.typical_distance == pytest.approx(1.0)
    assert info.neighbor_distance_ratio == pytest.approx(9.5)
    assert info.position == (10.0, 0.0)
    # Point 3: neighbours 1 (1, 0) and 2 (0, 1), median (0.5, 0.5), sqrt(0.5) from (1, 1).
    assert probe.point_info(graph, Y, 3, strategy="buffered").neighbor_distance_ratio == pytest.approx(0.5**0.5)


def test_typical_distance_ignores_non_finite_edges():
    graph = make_graph([(0, 1), (1, 2), (2, 3)], 4)
    Y = np.array([[0, 0], [2, 0], [2, 3], [np.nan, 0]], np.float32)  # lengths 2, 3, (NaN)
    assert probe.typical_neighbor_distance(graph, Y) == pytest.approx(2.5)


def test_typical_distance_strides_through_the_edges():
    # Directed edges in graph order: 0-1, 1-0, 1-2, 2-1, 2-3, 3-2 with lengths 1, 1, 2, 2, 4, 4. Every 2nd edge
    # (max_edges=3) gives 1, 2, 4; every 3rd (max_edges=2) 1, 2.
    graph = make_graph([(0, 1), (1, 2), (2, 3)], 4)
    Y = np.array([[0, 0], [1, 0], [1, 2], [5, 2]], np.float32)
    assert probe.typical_neighbor_distance(graph, Y) == pytest.approx(2.0)
    assert probe.typical_neighbor_distance(graph, Y, max_edges=3) == pytest.approx(2.0)
    assert probe.typical_neighbor_distance(graph, Y, max_edges=2) == pytest.approx(1.5)
    with pytest.raises(ValueError, match="max_edges"):
        probe.typical_neighbor_distance(graph, Y, max_edges=0)


def test_isolated_point_has_no_ratio(small):
    graph, Y = small
    info = probe.point_info(graph, Y, 7, strategy="buffered")
    assert np.isnan(info.neighbor_distance_ratio) and info.neighbors.size == 0
    assert "no edges" in info.summary()


def test_labels_outliers_and_history(small):
    graph, Y = small
    labels = np.array([3, 1, 1, 2, 2, 0, 0, 4])
    now = {"neighbors": np.arange(8) == 0, "radius": np.zeros(8, bool)}
    history = [np.zeros(8, bool), np.arange(8) == 0, np.ones(8, bool)]
    info = probe.point_info(
        graph,
        Y,
        0,
        strategy="buffered",
        labels=labels,
        outlier_masks=now,
        history_epochs=[10, 20, 30],
        history_masks=history,
    )
    assert info.label == 3
    assert info.flagged == {"neighbors": True, "radius": False}
    assert info.first_flagged_epoch == 20
    assert (
        probe.point_info(
            graph, Y, 1, strategy="buffered", history_epochs=[10, 20, 30], history_masks=history
        ).first_flagged_epoch
        == 30
    )
    assert (
        probe.point_info(
            graph, Y, 1, strategy="buffered", history_epochs=[10, 20], history_masks=history[:2]
        ).first_flagged_epoch
        is None
    )
    assert probe.point_info(graph, Y, 1, strategy="buffered").label is None


def test_summary_explains_the_mechanism(small):
    graph, Y = small
    buffered = str(probe.point_info(graph, Y, 0, strategy="buffered"))
    assert "degree 6 (rank 1 of 8)" in buffered
    assert "under buffered all 6 of its edges are summed from one stale position" in buffered
    chunked = probe.point_info(graph, Y, 0, strategy="chunked", n_chunks=4, random_state=0).summary()
    assert "with 4 chunks at most" in chunked
    assert "1 at a time" in probe.point_info(graph, Y, 0, strategy="sequential").summary()


def test_negative_index_counts_from_the_end(small):
    graph, Y = small
    assert probe.point_info(graph, Y, -1, strategy="buffered").index == 7


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"index": 8}, IndexError, "out of range"),
        ({"index": -9}, IndexError, "out of range"),
        ({"index": 1.0}, TypeError, "must be an integer"),
        ({"index": True}, TypeError, "must be an integer"),
        ({"index": "3"}, TypeError, "must be an integer"),
        ({"embedding": np.zeros((7, 2))}, ValueError, "7 rows but the graph has 8"),
        ({"embedding": np.zeros(8)}, ValueError, "shape (n_points, 2)"),
        ({"strategy": "fast"}, ValueError, "not known"),
        ({"strategy": "chunked", "n_chunks": 4}, ValueError, "needs random_state"),
        ({"strategy": "chunked", "n_chunks": 99, "random_state": 0}, ValueError, "out of range"),
        ({"labels": np.zeros(7)}, ValueError, "labels has shape"),
        ({"outlier_masks": {"radius": np.zeros(7, bool)}}, ValueError, "one bool per point"),
        ({"outlier_masks": {"radius": np.zeros(8)}}, TypeError, "boolean mask"),
        ({"history_masks": [np.zeros(8, bool)]}, ValueError, "needs history_epochs"),
        ({"history_masks": [np.zeros(8, bool)], "history_epochs": [1, 2]}, ValueError, "one epoch per"),
    ],
)
def test_bad_input_is_refused_clearly(small, kwargs, error, words):
    graph, Y = small
    args = {"graph": graph, "embedding": Y, "index": 0, "strategy": "buffered"} | kwargs
    graph, embedding, index = args.pop("graph"), args.pop("embedding"), args.pop("index")
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        probe.point_info(graph, embedding, index, **args)


def test_not_a_graph_is_refused():
    with pytest.raises(TypeError, match="FuzzyGraph"):
        probe.point_info(np.zeros((3, 3)), np.zeros((3, 2)), 0, strategy="buffered")


def test_flung_busiest_first_ties_by_index(small):
    graph, _ = small
    mask = np.zeros(8, bool)
    mask[[7, 5, 0, 2, 6, 4]] = True  # degrees 0, 1, 6, 2, 1, 2
    assert probe.flung(mask, graph).tolist() == [0, 2, 4, 5, 6, 7]
    assert probe.flung(np.zeros(8, bool), graph).tolist() == []
    with pytest.raises(ValueError, match="one bool per point"):
        probe.flung(np.zeros(9, bool), graph)


# ------------------------------------------------------------------------------------------------------------
# Picking, against brute-force definitions.
# ------------------------------------------------------------------------------------------------------------


def cloud(n: int = 3000, seed: int = 0) -> np.ndarray:
    Y = np.random.default_rng(seed).normal(size=(n, 2)).astype(np.float32)
    Y[5] = np.nan
    Y[6] = [np.inf, 0]
    Y[7] = [0, -np.inf]
    return Y


def brute_nearest(Y: np.ndarray, x: float, y: float) -> int:
    best, best_d = -1, np.inf
    for i, (px, py) in enumerate(Y.astype(np.float64)):
        d = (px - x) ** 2 + (py - y) ** 2
        if np.isfinite(d) and d < best_d:
            best, best_d = i, d
    return best


def brute_in_polygon(px: float, py: float, xs: list[float], ys: list[float]) -> bool:
    inside = False
    for k in range(len(xs)):
        x1, y1, x2, y2 = xs[k], ys[k], xs[(k + 1) % len(xs)], ys[(k + 1) % len(xs)]
        if (y1 > py) != (y2 > py) and px < x1 + (py - y1) * ((x2 - x1) / (y2 - y1)):
            inside = not inside
    return inside


POLYGONS = {
    "triangle": ([-1.0, 1.5, 0.2], [-1.0, -0.5, 1.2]),
    "concave star": (
        [0.0, 0.3, 1.5, 0.4, 0.8, 0.0, -0.8, -0.4, -1.5, -0.3],
        [1.5, 0.4, 0.4, -0.2, -1.3, -0.5, -1.3, -0.2, 0.4, 0.4],
    ),
    "bow tie (self-crossing)": ([-1.0, 1.0, 1.0, -1.0], [-1.0, 1.0, -1.0, 1.0]),
    "with a horizontal edge": ([-1.0, 1.0, 1.0, -1.0], [-0.5, -0.5, 0.7, 0.7]),
}


def test_nearest_point_matches_brute_force():
    Y = cloud()
    wide = np.zeros((len(Y), 3))
    wide[:, :2] = Y  # float64, a third column, and a strided view of the first two
    for x, y in [(0.0, 0.0), (1.3, -0.7), (-5.0, 9.0), (1e6, 0.0)]:
        assert probe.nearest_point(Y, x, y) == brute_nearest(Y, x, y)
        assert probe.nearest_point(wide, x, y) == brute_nearest(Y, x, y)
        assert probe.nearest_point(wide[:, :2], x, y) == brute_nearest(Y, x, y)


def test_nearest_point_ties_to_lowest_index_and_refuses_nothing_finite():
    Y = np.array([[1, 0], [-1, 0], [0, 1]], np.float32)
    assert probe.nearest_point(Y, 0.0, 0.0) == 0
    with pytest.raises(ValueError, match="no point with finite"):
        probe.nearest_point(np.full((3, 2), np.nan, np.float32), 0.0, 0.0)
    with pytest.raises(ValueError, match="finite number"):
        probe.nearest_point(Y, float("nan"), 0.0)


def test_points_in_box_matches_brute_force():
    Y = cloud()
    for xr, yr in [((-0.5, 1.0), (-1.0, 0.3)), ((-9, 9), (-9, 9)), ((Y[0, 0], Y[0, 0]), (-9, 9))]:
        (x0, x1), (y0, y1) = xr, yr
        expected = [i for i, (px, py) in enumerate(Y) if x0 <= px <= x1 and y0 <= py <= y1]
        assert probe.points_in_box(Y, xr, yr).tolist() == expected
    assert 0 in probe.points_in_box(Y, (Y[0, 0], Y[0, 0]), (-9, 9))  # a box of no width: the points on its line
    with pytest.raises(ValueError, match="pair"):
        probe.points_in_box(Y, (0.0,), (0.0, 1.0))
    with pytest.raises(ValueError, match=r"x_range=\(1.0, -0.5\) must be a finite interval with low <= high"):
        probe.points_in_box(Y, (1.0, -0.5), (-1.0, 0.3))  # reversed: refused, as a view range is


@pytest.mark.parametrize("name", list(POLYGONS))
def test_points_in_polygon_matches_brute_force(name):
    Y = cloud()
    xs, ys = POLYGONS[name]
    expected = [i for i, (px, py) in enumerate(Y.astype(np.float64)) if brute_in_polygon(px, py, xs, ys)]
    got = probe.points_in_polygon(Y, np.array(xs), tuple(ys))
    assert got.dtype == np.int64 and got.tolist() == expected
    assert 0 < len(got) < len(Y) - 3


def test_points_in_polygon_refuses_bad_polygons():
    Y = cloud(100)
    with pytest.raises(ValueError, match="at least 3"):
        probe.points_in_polygon(Y, [0, 1], [0, 1])
    with pytest.raises(ValueError, match="same length"):
        probe.points_in_polygon(Y, [0, 1, 2], [0, 1])
    with pytest.raises(ValueError, match="finite"):
        probe.points_in_polygon(Y, [0, 1, np.nan], [0, 1, 2])


# ------------------------------------------------------------------------------------------------------------
# The same on CuPy arrays (skipped cleanly without a GPU, by conftest).
# ------------------------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_picking_on_cupy_matches_numpy():
    import cupy as cp  # noqa: PLC0415 - only where a GPU is; conftest skips these elsewhere

    Y = cloud(20_000, seed=1)
    Yd = cp.asarray(Y)
    for x, y in [(0.0, 0.0), (1.3, -0.7)]:
        assert probe.nearest_point(Yd, x, y) == probe.nearest_point(Y, x, y)
    box = probe.points_in_box(Yd, (-0.5, 1.0), (-1.0, 0.3))
    assert isinstance(box, np.ndarray)
    assert box.tolist() == probe.points_in_box(Y, (-0.5, 1.0), (-1.0, 0.3)).tolist()
    for xs, ys in POLYGONS.values():
        lasso = probe.points_in_polygon(Yd, cp.asarray(xs), cp.asarray(ys))
        assert isinstance(lasso, np.ndarray)
        assert lasso.tolist() == probe.points_in_polygon(Y, xs, ys).tolist()


@pytest.mark.gpu
def test_point_info_on_cupy_matches_numpy(small):
    import cupy as cp  # noqa: PLC0415 - only where a GPU is; conftest skips these elsewhere

    graph, Y = small
    masks = {"neighbors": np.arange(8) == 2}
    host = probe.point_info(graph, Y, 2, strategy="chunked", n_chunks=3, random_state=5, outlier_masks=masks)
    device = probe.point_info(
        graph,
        cp.asarray(Y),
        2,
        strategy="chunked",
        n_chunks=3,
        random_state=5,
        outlier_masks={"neighbors": cp.asarray(masks["neighbors"])},
    )
    assert device.position == host.position and device.flagged == host.flagged
    assert device.neighbor_distance_ratio == pytest.approx(host.neighbor_distance_ratio)
    assert device.edges_per_chunk.tolist() == host.edges_per_chunk.tolist()
    assert probe.flung(cp.asarray(masks["neighbors"]), graph).tolist() == [2]
