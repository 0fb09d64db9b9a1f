"""Exact kNN within groups (bench/clusterwise.py): brute force per group, the premise check, the graph."""

from __future__ import annotations

import numpy as np
import pytest
from clusterwise import graph_from_knn, knn_agreement, knn_within_groups  # bench/ is on sys.path (tests/conftest.py)
from scipy.spatial.distance import cdist

from umapviz.graph import build_graph
from umapviz.graph.knn.knn_cpu import exact_knn


def _groups_data(spread: float, n_per=(90, 60, 40), dim=6, seed=0):
    """Points of three groups, rows shuffled so each group's rows are scattered; centres `spread` apart."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(len(n_per)), n_per)
    rng.shuffle(labels)
    centres = spread * np.eye(len(n_per), dim)
    X = (centres[labels] + rng.normal(size=(labels.size, dim))).astype(np.float32)
    return X, labels


def _brute_force_within(X, labels, k, metric):
    """Per row, its k nearest rows of the same label (float64 distances, ties by row index)."""
    idx = np.empty((len(X), k), dtype=np.int64)
    dist = np.empty((len(X), k))
    for label in np.unique(labels):
        rows = np.flatnonzero(labels == label)
        D = cdist(X[rows].astype(np.float64), X[rows].astype(np.float64), metric)
        order = np.argsort(D, axis=1, kind="stable")[:, :k]
        idx[rows] = rows[order]
        dist[rows] = np.take_along_axis(D, order, axis=1)
    return idx, dist


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_knn_within_groups_equals_brute_force_within_each_group(metric):
    # Overlapping groups, so kNN within groups differs from kNN of all points (checked below): the
    # function must give each group's own kNN, in global row numbers, self first.
    X, labels = _groups_data(spread=1.0)
    idx, dist = knn_within_groups(X, labels, 10, metric)
    ref_idx, ref_dist = _brute_force_within(X, labels, 10, metric)
    assert idx.dtype == np.int32 and dist.dtype == np.float32 and idx.shape == (len(X), 10)
    np.testing.assert_array_equal(idx[:, 0], np.arange(len(X)))
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(dist, ref_dist, rtol=1e-6, atol=1e-6)
    assert np.all(labels[idx] == labels[:, None])
    all_idx, _ = exact_knn(X, 10, metric, progress=False)
    assert not np.array_equal(all_idx, idx)  # the groups overlap: a real difference to detect


def test_separated_groups_give_the_knn_of_all_points_and_the_check_says_so():
    X, labels = _groups_data(spread=40.0)
    idx, dist = knn_within_groups(X, labels, 12)
    all_idx, all_dist = exact_knn(X, 12, progress=False)
    np.testing.assert_array_equal(idx, all_idx)
    np.testing.assert_array_equal(dist, all_dist)
    assert knn_agreement(X, idx, n_queries=50) == 1.0


def test_the_check_catches_neighbours_cut_off_by_groups():
    X, labels = _groups_data(spread=0.5)
    idx, _ = knn_within_groups(X, labels, 12)
    share = knn_agreement(X, idx, n_queries=len(X))
    all_idx, _ = exact_knn(X, 12, progress=False)
    expected = np.mean([set(a) == set(b) for a, b in zip(all_idx.tolist(), idx.tolist(), strict=True)])
    assert share == pytest.approx(expected)
    assert share < 0.5


def test_a_group_smaller_than_k_is_refused_with_the_fix():
    X, labels = _groups_data(spread=5.0, n_per=(50, 8))
    with pytest.raises(ValueError, match="fewer than n_neighbors=10.*group 1 has 8"):
        knn_within_groups(X, labels, 10)
    with pytest.raises(ValueError, match="one integer label per row"):
        knn_within_groups(X, labels[:-1], 5)


def test_graph_from_knn_is_build_graphs_graph():
    # One group = all points: the kNN is exact kNN, so the graph must be build_graph's, array for array.
    X, _ = _groups_data(spread=3.0)
    idx, dist = knn_within_groups(X, np.zeros(len(X), dtype=np.int64), 15)
    graph = graph_from_knn(idx, dist, knn="exact-within-groups")
    ref = build_graph(X, n_neighbors=15, knn="exact", cache=False, progress=False)
    for name in ("head", "tail", "weight", "epochs_per_sample", "knn_indices", "knn_dists"):
        np.testing.assert_array_equal(getattr(graph, name), getattr(ref, name), err_msg=name)
    assert (graph.a, graph.b, graph.n_epochs) == (ref.a, ref.b, ref.n_epochs)
    assert graph.params["knn"] == "exact-within-groups" and graph.params["n_neighbors"] == 15


@pytest.mark.gpu
def test_gpu_knn_within_groups_and_graph_equal_the_cpus():
    import cupy as cp  # noqa: PLC0415 - GPU only: CuPy is absent where there is no GPU

    X, labels = _groups_data(spread=1.0)
    idx_c, dist_c = knn_within_groups(X, labels, 10)
    idx_g, dist_g = knn_within_groups(cp.asarray(X), cp.asarray(labels), 10)
    assert isinstance(idx_g, cp.ndarray)
    np.testing.assert_array_equal(idx_g.get(), idx_c)
    np.testing.assert_array_equal(dist_g.get(), dist_c)
    assert knn_agreement(cp.asarray(X), idx_g, n_queries=len(X)) == knn_agreement(X, idx_c, n_queries=len(X))
    g_gpu = graph_from_knn(idx_g, dist_g)
    g_cpu = graph_from_knn(idx_c, dist_c)
    np.testing.assert_array_equal(g_gpu.head, g_cpu.head)
    np.testing.assert_array_equal(g_gpu.tail, g_cpu.tail)
    np.testing.assert_allclose(g_gpu.weight, g_cpu.weight, rtol=1e-6)
