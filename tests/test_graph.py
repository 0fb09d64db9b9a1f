"""The graph stage: kNN, fuzzy simplicial set (against umap-learn), pruning, a/b, init, cache, bad input."""

import builtins
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.csgraph
import scipy.sparse.linalg
from scipy.spatial.distance import cdist

import umapviz.graph as graph_mod
from umapviz._backend import gpu_available
from umapviz.graph import (
    BuildCancelled,
    FuzzyGraph,
    build_graph,
    find_ab_params,
    fuzzy_simplicial_set,
    random_init,
    spectral_init,
)
from umapviz.graph import build as build_mod
from umapviz.graph import cache as cache_mod
from umapviz.graph import fuzzy as fuzzy_front
from umapviz.graph import knn as knn_front
from umapviz.graph import start as init_mod
from umapviz.graph.build_gpu import build_graph_gpu
from umapviz.graph.cache import default_cache_dir
from umapviz.graph.fuzzy import fuzzy_cpu as fuzzy_mod
from umapviz.graph.fuzzy.fuzzy_cpu import smooth_knn_dist
from umapviz.graph.fuzzy.fuzzy_gpu import fuzzy_simplicial_set_gpu, smooth_knn_dist_gpu
from umapviz.graph.knn import knn_cpu as knn_mod
from umapviz.graph.knn import knn_gpu
from umapviz.graph.knn.knn_cpu import exact_knn, query_knn
from umapviz.graph.knn.knn_gpu import exact_knn_gpu, query_knn_gpu, reference_index_gpu
from umapviz.graph.start.components import connected_components


def _blobs(n_per=60, dim=6, centres=((0.0,), (50.0,), (100.0,)), seed=0):
    rng = np.random.default_rng(seed)
    parts = [rng.normal(size=(n_per, dim)) + np.asarray(c) for c in centres]
    return np.vstack(parts).astype(np.float32)


# ------------------------------------------------------------------------------------------------ kNN


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_exact_knn_matches_brute_force_cdist(metric):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 12)).astype(np.float32) + 3.0
    idx, dist = knn_mod.exact_knn(X, 10, metric, progress=False)
    D = cdist(X.astype(np.float64), X.astype(np.float64), metric)
    ref_idx = np.argsort(D, axis=1, kind="stable")[:, :10]
    assert idx.dtype == np.int32 and dist.dtype == np.float32
    assert np.array_equal(idx, ref_idx)
    np.testing.assert_allclose(dist, np.take_along_axis(D, ref_idx, axis=1), rtol=1e-6, atol=1e-6)


def test_exact_knn_survives_float32_cancellation():
    # A large common offset ruins |x|^2 + |y|^2 - 2 x.y in float32; centring + exact re-scoring must not care.
    rng = np.random.default_rng(2)
    X = (1e4 + 1e-2 * rng.normal(size=(300, 5))).astype(np.float32)
    idx, dist = knn_mod.exact_knn(X, 8, progress=False)
    D = cdist(X.astype(np.float64), X.astype(np.float64))
    np.testing.assert_allclose(dist, np.sort(D, axis=1)[:, :8], rtol=1e-5)
    assert np.array_equal(idx[:, 0], np.arange(300))


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_exact_knn_puts_self_first_among_duplicates(metric):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(100, 4)).astype(np.float32)
    X[10:30] = X[10]  # 20 copies of one point: more than k
    X[50] = X[51] = X[52]
    idx, dist = knn_mod.exact_knn(X, 8, metric, progress=False)
    assert np.array_equal(idx[:, 0], np.arange(100))
    assert np.all(dist[:, 0] == 0)
    assert np.all(np.isin(idx[10:30], np.arange(10, 30))) and np.all(dist[10:30] == 0)
    assert set(idx[51, :3]) == {50, 51, 52} and idx[51, 1] == 50  # then ties by index


def test_exact_knn_progress_tiles(monkeypatch, capsys):
    # Force several tiles and a progress bar on tiny data; the result must not depend on the tiling.
    X = np.random.default_rng(4).normal(size=(150, 3)).astype(np.float32)
    whole, _ = knn_mod.exact_knn(X, 5, progress=False)
    monkeypatch.setattr(knn_mod, "_TILE_BYTES", 4 * 150 * 16)
    monkeypatch.setattr(knn_mod, "_PROGRESS_MIN_WORK", 0)
    tiled, _ = knn_mod.exact_knn(X, 5, progress=True)
    assert np.array_equal(whole, tiled)
    assert "exact kNN" in capsys.readouterr().err


def test_approx_knn_repairs_missing_self_and_short_rows(monkeypatch):
    pytest.importorskip("pynndescent")  # a dependency, but not on the lean GPU image
    # A stand-in for NN-descent that drops self from row 0 and leaves row 1 short (-1):
    # the result must still have self first, exact distances, and row 1 redone exactly.
    X = np.random.default_rng(5).normal(size=(60, 3)).astype(np.float32)
    exact_idx, exact_dist = knn_mod.exact_knn(X, 6, progress=False)

    class FakeNNDescent:
        def __init__(self, data, n_neighbors, **kwargs):
            found = exact_idx.astype(np.int64).copy()
            found[0] = np.roll(found[0], -1)
            found[0, -1] = exact_idx[0, -1]  # self gone, a true neighbour duplicated
            found[1, 2:] = -1
            self.neighbor_graph = (found, np.zeros(found.shape, dtype=np.float32))

    import pynndescent  # noqa: PLC0415 - optional (absent on the lean GPU image)

    monkeypatch.setattr(pynndescent, "NNDescent", FakeNNDescent)
    idx, dist = knn_mod.approx_knn(X, 6, random_state=0)
    assert np.array_equal(idx[:, 0], np.arange(60))
    assert np.array_equal(idx[1:], exact_idx[1:]) and np.allclose(dist[1:], exact_dist[1:])
    assert np.array_equal(idx[0, :5], exact_idx[0, :5])  # the missing 6th one stays unknown to NN-descent
    assert np.all(np.diff(dist, axis=1) >= 0)


def test_approx_knn_without_pynndescent_names_the_fix(monkeypatch):
    """On a lean install (the GPU machine's image has no pynndescent) the bare ModuleNotFoundError said nothing
    about knn='exact' or the GPU."""

    real_import = builtins.__import__

    def no_pynndescent(name, *args, **kwargs):
        if name == "pynndescent":
            raise ModuleNotFoundError("No module named 'pynndescent'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pynndescent)
    with pytest.raises(ImportError, match=r"pip install pynndescent.*knn='exact'"):
        build_graph(_blobs(), n_neighbors=10, knn="approx", random_state=0, cache=False)


@pytest.mark.slow  # pynndescent's JIT compile (~20 s)
def test_approx_knn_on_tiny_data_keeps_pynndescents_false_alarm_quiet(recwarn):
    """NN-descent leaves rows short on 15 points with k=15 and warns "Failed to correctly find n_neighbors";
    approx_knn redoes those rows exactly (the result equals exact kNN), so that warning must not reach the user."""
    pytest.importorskip("pynndescent")  # a dependency, but not on the lean GPU image
    X = np.random.default_rng(0).normal(size=(15, 4)).astype(np.float32)
    approx = build_graph(X, n_neighbors=15, knn="approx", random_state=0, cache=False)
    exact = build_graph(X, n_neighbors=15, knn="exact", cache=False)
    assert not [w for w in recwarn if "Failed to correctly find" in str(w.message)]
    assert np.array_equal(approx.knn_indices, exact.knn_indices) and approx.fingerprint == exact.fingerprint


def test_auto_knn_choice_and_record():
    assert knn_front.resolve_knn_method("auto", 50_000, 256) == "exact"
    assert knn_front.resolve_knn_method("auto", 100_000, 100) == "approx"
    assert knn_front.resolve_knn_method("approx", 10, 2) == "approx"
    graph = build_graph(_blobs(), n_neighbors=10, cache=False)
    assert graph.params["knn"] == "exact"


@pytest.mark.slow  # pynndescent's JIT compile alone takes ~45 s on 2 cores
def test_approx_knn_with_pynndescent_is_seeded_and_close_to_exact():
    pytest.importorskip("pynndescent")  # a dependency, but not on the lean GPU image
    X = np.random.default_rng(6).normal(size=(1500, 8)).astype(np.float32)
    a = build_graph(X, n_neighbors=10, knn="approx", random_state=3, cache=False)
    b = build_graph(X, n_neighbors=10, knn="approx", random_state=3, cache=False)
    exact_idx, _ = knn_mod.exact_knn(X, 10, progress=False)
    assert a.params["knn"] == "approx" and a.fingerprint == b.fingerprint
    assert np.array_equal(a.knn_indices[:, 0], np.arange(1500))
    recall = np.mean([len(set(r) & set(e)) / 10 for r, e in zip(a.knn_indices, exact_idx, strict=True)])
    assert recall > 0.95


# ------------------------------------------------------------------------------------------------ fuzzy set


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_fuzzy_set_equals_umap_learn_on_the_same_neighbours(metric):
    umap_ = pytest.importorskip("umap.umap_")
    rng = np.random.default_rng(7)
    X = rng.normal(size=(600, 10)).astype(np.float32)
    X[100:110] = X[100]  # duplicates: rho from the first non-zero distance
    X[200:230] = X[200]  # more duplicates than k: rho = 0, the global-mean sigma floor
    k = 15
    idx, dist = knn_mod.exact_knn(X, k, metric, progress=False)
    ours = fuzzy_simplicial_set(idx, dist)
    ref, _, _ = umap_.fuzzy_simplicial_set(X, k, np.random.RandomState(0), metric, knn_indices=idx, knn_dists=dist)
    ref = ref.tocsr()
    ref.sort_indices()
    assert isinstance(ours, scipy.sparse.csr_matrix) and ours.dtype == np.float32
    assert np.array_equal(ours.indptr, ref.indptr) and np.array_equal(ours.indices, ref.indices)
    # Bit for bit: both call the C library's exp and expf in the same order (the GPU's twins of them too).
    assert np.array_equal(ours.data.view(np.uint32), ref.data.astype(np.float32).view(np.uint32))


def test_fuzzy_union_is_scipys_sparse_arithmetic_with_repeated_and_missing_neighbours():
    """The union A + A^T - A * A^T taken row by row gives SciPy's sums bit for bit (umap-learn's arithmetic), also
    where a kNN row lists a neighbour two to four times (summed in row order) or misses some (-1)."""
    idx, dist = knn_mod.exact_knn(_blobs(), 12, progress=False)
    idx = idx.copy()
    idx[:40, 5] = idx[:40, 4]
    idx[40:60, 3:6] = idx[40:60, 2:3]
    idx[60:80, 8:10] = -1
    n, k = idx.shape
    sigma, rho = fuzzy_mod.smooth_knn_dist(dist)
    vals = fuzzy_mod._memberships(idx.astype(np.int64), dist, sigma, rho)
    keep = vals != 0
    rows = np.repeat(np.arange(n), k)[keep]
    directed = scipy.sparse.csr_matrix((vals[keep], (rows, idx.ravel()[keep])), shape=(n, n), dtype=np.float32)
    transposed = directed.T.tocsr()
    ref = scipy.sparse.csr_matrix(directed + transposed - directed.multiply(transposed), dtype=np.float32)
    ref.eliminate_zeros()
    ref.sort_indices()
    ours = fuzzy_simplicial_set(idx, dist)
    assert np.array_equal(ours.indptr, ref.indptr) and np.array_equal(ours.indices, ref.indices)
    assert np.array_equal(ours.data.view(np.uint32), ref.data.view(np.uint32))


def test_fuzzy_set_is_symmetric_without_self_loops():
    idx, dist = knn_mod.exact_knn(_blobs(), 10, progress=False)
    W = fuzzy_simplicial_set(idx, dist)
    assert (abs(W - W.T) > 0).nnz == 0
    assert np.all(W.diagonal() == 0)
    assert W.data.min() > 0 and W.data.max() <= 1


def test_pruning_and_epochs_per_sample():
    X = _blobs(n_per=80)
    graph = build_graph(X, n_neighbors=12, n_epochs=20, cache=False)
    full = fuzzy_simplicial_set(graph.knn_indices, graph.knn_dists)
    threshold = full.data.max() / 20
    assert graph.nnz == np.count_nonzero(full.data >= threshold) < full.nnz  # something was pruned
    assert graph.weight.min() >= threshold
    # COO, both directions, sorted by head then tail, exact dtypes
    assert graph.head.dtype == graph.tail.dtype == np.int32 and graph.weight.dtype == np.float32
    order = np.lexsort((graph.tail, graph.head))
    assert np.array_equal(order, np.arange(graph.nnz))
    forward = dict(zip(zip(graph.head.tolist(), graph.tail.tolist(), strict=True), graph.weight.tolist(), strict=True))
    assert all(forward[(t, h)] == w for (h, t), w in forward.items())
    assert np.all(graph.head != graph.tail)
    # epochs_per_sample = max(w) / w in float64: 1 for the strongest edges, up to n_epochs for the weakest
    assert graph.epochs_per_sample.dtype == np.float64
    np.testing.assert_allclose(graph.epochs_per_sample, np.float64(graph.weight.max()) / graph.weight)
    assert graph.epochs_per_sample.min() == 1.0 and graph.epochs_per_sample.max() <= 20
    assert graph.degree.sum() == graph.nnz and graph.max_degree == graph.degree.max()


def test_pruned_graph_matches_umap_learn_pruning():
    umap_ = pytest.importorskip("umap.umap_")
    X = np.random.default_rng(8).normal(size=(500, 6)).astype(np.float32)
    graph = build_graph(X, n_neighbors=15, cache=False)
    assert graph.n_epochs == 500
    ref, _, _ = umap_.fuzzy_simplicial_set(
        X, 15, np.random.RandomState(0), "euclidean", knn_indices=graph.knn_indices, knn_dists=graph.knn_dists
    )
    ref = ref.tocoo()
    keep = ref.data >= ref.data.max() / 500.0
    ref_order = np.lexsort((ref.col[keep], ref.row[keep]))
    assert np.array_equal(graph.head, ref.row[keep][ref_order])
    assert np.array_equal(graph.tail, ref.col[keep][ref_order])
    assert np.array_equal(graph.weight, ref.data[keep][ref_order].astype(np.float32))


def test_default_n_epochs_and_params_record():
    assert graph_mod.default_n_epochs(10_000) == 500 and graph_mod.default_n_epochs(10_001) == 200
    graph = build_graph(_blobs(), n_neighbors=10, min_dist=0.3, spread=1.5, random_state=4, cache=False)
    assert graph.n_epochs == 500
    assert graph.params == {
        "n_neighbors": 10,
        "metric": "euclidean",
        "knn": "exact",
        "min_dist": 0.3,
        "spread": 1.5,
        "random_state": 4,
    }


def test_duplicate_points_build_a_valid_graph():
    X = np.repeat(np.random.default_rng(9).normal(size=(30, 3)), 4, axis=0)  # every point 4 times
    graph = build_graph(X, n_neighbors=6, cache=False)
    assert np.all(np.isfinite(graph.weight)) and graph.nnz > 0
    assert np.array_equal(graph.knn_indices[:, 0], np.arange(120))


@pytest.mark.parametrize("scale", [1e20, 1e30, 1e-20, 1e-30])
def test_the_graph_does_not_depend_on_the_datas_scale(scale):
    """sigma's bisection starts at 1 and doubles or halves at most 64 times: data at 1e20 got sigma <= 2**64, so
    every weight but the nearest neighbour's was ~0 (at 1e30 the graph kept 8% of its edges), and data at 1e-20
    had every weight ~1. Rows beyond its reach are now bisected at their own scale (a power of two, exact)."""
    X = _blobs()
    base = build_graph(X, n_neighbors=10, cache=False, progress=False)
    scaled = build_graph(X * np.float32(scale), n_neighbors=10, cache=False, progress=False)
    assert np.array_equal(scaled.head, base.head) and np.array_equal(scaled.tail, base.tail)
    np.testing.assert_allclose(scaled.weight, base.weight, atol=1e-3)  # the float32 rounding of X * scale
    # Rows within reach keep their bytes: only the far rows (the last 4) are rescaled.
    dists = np.vstack([base.knn_dists, base.knn_dists[:4] * np.float32(scale)])
    sigma, rho = fuzzy_mod.smooth_knn_dist(dists)
    sigma0, rho0 = fuzzy_mod.smooth_knn_dist(base.knn_dists)
    assert sigma[:-4].tobytes() == sigma0.tobytes() and rho[:-4].tobytes() == rho0.tobytes()
    np.testing.assert_allclose(sigma[-4:] / np.float32(scale), sigma0[:4], rtol=1e-4)


# ------------------------------------------------------------------------------------------------ a, b


def test_ab_params_near_known_values():
    a, b = find_ab_params(1.0, 0.1)
    assert a == pytest.approx(1.577, abs=2e-3) and b == pytest.approx(0.895, abs=2e-3)
    umap_ = pytest.importorskip("umap.umap_")
    for spread, min_dist in [(1.0, 0.0), (1.0, 0.5), (2.0, 0.25)]:
        np.testing.assert_allclose(find_ab_params(spread, min_dist), umap_.find_ab_params(spread, min_dist), rtol=1e-4)


def test_ab_params_for_the_defaults_are_the_same_on_every_machine():
    """Every layout's bytes depend on these bits: they are umap-learn's fit rounded to 8 significant digits, which
    SciPy's stopping point (it moves by ~1e-10 with the CPU and the SciPy version) does not change."""
    assert find_ab_params(1.0, 0.1) == (1.5769435, 0.89506088)
    assert find_ab_params(1.0, 0.0) == (1.9328084, 0.79049497)
    umap_ = pytest.importorskip("umap.umap_")
    for spread, min_dist in [(1.0, 0.1), (1.0, 0.0)]:
        np.testing.assert_allclose(find_ab_params(spread, min_dist), umap_.find_ab_params(spread, min_dist), rtol=1e-7)


@pytest.mark.parametrize("spread", [0.01, 0.1, 0.2, 1.0, 3.0, 1e3])
@pytest.mark.parametrize("ratio", [0.0, 0.1, 0.5])
def test_ab_params_fit_the_curve_at_any_spread(spread, ratio):
    """At spread <= ~0.2 the direct fit diverged to negative a, b (a=-37.1, b=-18.6 for spread 0.1)."""
    min_dist = ratio * spread
    a, b = find_ab_params(spread, min_dist)
    assert a > 0 and b > 0
    x = np.linspace(0, 3 * spread, 300)
    target = np.where(x < min_dist, 1.0, np.exp(-(x - min_dist) / spread))
    assert np.abs(1.0 / (1.0 + a * x ** (2 * b)) - target).max() < 0.1


def test_ab_params_refuse_a_fit_that_went_wrong(monkeypatch):
    monkeypatch.setattr(fuzzy_front, "curve_fit", lambda *args, **kwargs: ((-37.1, -18.6), None))
    with pytest.raises(ValueError, match=r"a=.*b=.*finite and positive"):
        find_ab_params(0.1, 0.0)


# ------------------------------------------------------------------------------------------------ init


def test_spectral_init_lays_out_disconnected_blobs_apart():
    graph = build_graph(_blobs(n_per=70, dim=5), n_neighbors=10, cache=False)
    n_comp, labels = scipy.sparse.csgraph.connected_components(
        scipy.sparse.coo_matrix((graph.weight, (graph.head, graph.tail)))
    )
    assert n_comp == 3  # the premise: three separate components
    Y = spectral_init(graph, 2, seed=1)
    assert Y.dtype == np.float32 and Y.shape == (210, 2) and np.all(np.isfinite(Y))
    assert np.abs(Y).max() == pytest.approx(10.0, abs=1e-2)
    assert len(np.unique(Y, axis=0)) == 210
    boxes = [(Y[labels == c].min(axis=0), Y[labels == c].max(axis=0)) for c in range(3)]
    for i in range(3):
        for j in range(i + 1, 3):
            (lo_i, hi_i), (lo_j, hi_j) = boxes[i], boxes[j]
            assert np.any((hi_i < lo_j) | (hi_j < lo_i)), "two components' boxes overlap"
    for c in range(3):  # each component really spread out, not collapsed to a point
        assert Y[labels == c].std(axis=0).min() > 0.5
    assert np.array_equal(Y, spectral_init(graph, 2, seed=1))
    assert not np.array_equal(Y, spectral_init(graph, 2, seed=2))


def test_build_graph_stops_when_cancel_says_so(monkeypatch):
    """``cancel`` is asked before each tile of the exact kNN: the build stops at the first tile after it says so,
    and a build it never stops is the uncancelled one."""
    X = np.random.default_rng(8).normal(size=(400, 6)).astype(np.float32)
    monkeypatch.setattr(knn_mod, "_TILE_BYTES", 4 * 400 * 50)  # tiles of 50 rows: 8 of them
    asked = []

    def cancel_on_the_third_ask():
        asked.append(1)
        return len(asked) >= 3

    with pytest.raises(graph_mod.BuildCancelled, match="cancelled"):
        build_graph(X, n_neighbors=10, knn="exact", cache=False, progress=False, cancel=cancel_on_the_third_ask)
    assert len(asked) == 3  # two tiles ran, the third was not started
    never = build_graph(X, n_neighbors=10, knn="exact", cache=False, progress=False, cancel=lambda: False)
    assert never.fingerprint == build_graph(X, n_neighbors=10, knn="exact", cache=False, progress=False).fingerprint


def _hand_graph(n, edges):
    head, tail = np.array(edges, dtype=np.int32).T
    head, tail = np.concatenate([head, tail]), np.concatenate([tail, head])
    order = np.lexsort((tail, head))
    w = np.ones(len(head), dtype=np.float32)
    dummy = np.zeros((n, 2))
    return FuzzyGraph(
        head[order],
        tail[order],
        w,
        w.astype(np.float64),
        dummy.astype(np.int32),
        dummy.astype(np.float32),
        1.577,
        0.895,
        200,
    )


def test_spectral_init_handles_singletons_and_tiny_components():
    chain = [(i, i + 1) for i in range(20)]  # vertices 0..20 connected; 21-22 a pair; 23-25 alone
    graph = _hand_graph(26, chain + [(21, 22)])
    Y = spectral_init(graph, 3, seed=0)
    assert Y.shape == (26, 3) and np.all(np.isfinite(Y)) and np.abs(Y).max() <= 10.01
    assert len(np.unique(Y.round(3), axis=0)) == 26
    # a chain's first eigenvector is monotone along its interior (the lower-degree ends sit closer in,
    # as in any symmetric-normalised Laplacian eigenvector)
    steps = np.diff(Y[1:20, 0].astype(np.float64))
    assert np.all(steps > 0) or np.all(steps < 0)


def test_adjacency_from_sorted_and_unsorted_edge_lists_is_the_same_matrix(small_graph):
    """The edge list's CSR order is used directly; a list out of order still gives the same matrix."""
    assert np.all(np.diff(small_graph.head) >= 0)  # the premise: built graphs are in CSR order
    direct = init_mod._adjacency(small_graph)
    shuffle = np.random.default_rng(0).permutation(small_graph.nnz)
    fields = {name: getattr(small_graph, name) for name in ("head", "tail", "weight", "epochs_per_sample")}
    shuffled = FuzzyGraph(
        **{k: v[shuffle] for k, v in fields.items()},
        knn_indices=small_graph.knn_indices,
        knn_dists=small_graph.knn_dists,
        a=small_graph.a,
        b=small_graph.b,
        n_epochs=small_graph.n_epochs,
    )
    converted = init_mod._adjacency(shuffled)
    assert converted.dtype == direct.dtype == np.float32  # the graph's weights as they are, on both devices
    assert (direct != converted).nnz == 0 and direct.nnz == small_graph.nnz


def _scattered_groups(n=400, n_groups=7, n_edges=3000):
    """A symmetric adjacency whose components are groups of vertices scattered over the ids."""
    rng = np.random.default_rng(5)
    group = rng.integers(0, n_groups, n)
    head, tail = rng.integers(0, n, (2, n_edges))
    keep = group[head] == group[tail]
    weight = rng.uniform(0.1, 1.0, keep.sum())
    adj = scipy.sparse.coo_matrix((weight, (head[keep], tail[keep])), shape=(n, n))
    return (adj + adj.T).tocsr()


def _components(adj):
    """The connected components of a symmetric CSR adjacency, from its edge list."""
    edges = adj.tocoo()
    return connected_components(edges.row, edges.col, adj.shape[0])


def test_components_are_scipys_undirected_ones_in_the_same_order():
    """Found as strong components of the symmetric graph, labelled like SciPy's undirected search labels them."""
    adj = _scattered_groups()
    n_comp, labels = _components(adj)
    ref_n, ref_labels = scipy.sparse.csgraph.connected_components(adj, directed=False)
    assert n_comp == ref_n > 7  # some isolated vertices too
    np.testing.assert_array_equal(labels, ref_labels)


def test_component_adjacency_is_the_fancy_indexed_block():
    adj = _scattered_groups()
    _, labels = _components(adj)
    members, bounds, local = init_mod._component_members(labels, np.bincount(labels))
    for comp in np.argsort(-np.bincount(labels))[:3]:  # the three largest: scattered groups
        verts = members[bounds[comp] : bounds[comp + 1]]
        assert verts.size > 30
        ref = adj[verts][:, verts]
        got = init_mod._component_adjacency(adj, verts, local)
        for name in ("indptr", "indices", "data"):
            np.testing.assert_array_equal(getattr(got, name), getattr(ref, name))


def test_gpu_spectral_init_without_gpu_says_so(small_graph):
    if gpu_available():
        pytest.skip("a GPU is present here")
    with pytest.raises(RuntimeError, match="no GPU is usable"):
        spectral_init(small_graph, 2, seed=0, device="gpu")


def test_random_init():
    Y = random_init(500, 2, seed=3)
    assert Y.dtype == np.float32 and Y.shape == (500, 2)
    assert -10 <= Y.min() < -9 and 9 < Y.max() <= 10
    expected = np.random.default_rng([3, 1]).uniform(-10, 10, size=(500, 2)).astype(np.float32)
    assert np.array_equal(Y, expected)  # the contract in docs/optimizer.md


# ------------------------------------------------------------------------------------------------ cache


def _cache_files(directory):
    return sorted(p for p in os.listdir(directory) if p.startswith("graph-"))


def test_cache_hit_returns_an_equal_graph_without_rebuilding(tmp_path, monkeypatch):
    X = _blobs()
    first = build_graph(X, n_neighbors=10, cache=tmp_path, random_state=1)
    files = _cache_files(tmp_path)
    assert len(files) == 1 and files[0].endswith(".npz")  # no temporary files left behind

    def no_rebuild(*args, **kwargs):
        raise AssertionError("the graph was rebuilt instead of loaded from the cache")

    monkeypatch.setattr(build_mod, "nearest_neighbors", no_rebuild)
    start = time.perf_counter()
    again = build_graph(X, n_neighbors=10, cache=tmp_path, random_state=2)  # seed is irrelevant to exact kNN
    assert time.perf_counter() - start < 1.0
    assert again.fingerprint == first.fingerprint
    for name in ("head", "tail", "weight", "epochs_per_sample", "knn_indices", "knn_dists"):
        a, b = getattr(first, name), getattr(again, name)
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert (again.a, again.b, again.n_epochs) == (first.a, first.b, first.n_epochs)
    assert again.params["random_state"] == 2
    # other parameters or other data are other keys: those would rebuild
    with pytest.raises(AssertionError, match="rebuilt"):
        build_graph(X, n_neighbors=10, min_dist=0.2, cache=tmp_path)
    with pytest.raises(AssertionError, match="rebuilt"):
        build_graph(X + 1, n_neighbors=10, cache=tmp_path)


def test_cache_files_of_other_graph_code_are_not_reused(tmp_path, monkeypatch):
    """A change to the kNN or fuzzy-set code made another graph, yet the old file was loaded."""

    X = _blobs()
    build_graph(X, n_neighbors=10, cache=tmp_path)
    monkeypatch.setattr(cache_mod, "code_digest", lambda: "other code")
    build_graph(X, n_neighbors=10, cache=tmp_path)
    assert len(_cache_files(tmp_path)) == 2  # a second key, built afresh


def test_unseeded_approximate_graphs_are_not_cached(tmp_path, monkeypatch):
    """random_state=None promises a fresh draw, yet every later call returned the first cached graph."""
    pytest.importorskip("pynndescent")  # a dependency, but not on the lean GPU image
    calls = []
    real = build_mod.nearest_neighbors
    monkeypatch.setattr(build_mod, "nearest_neighbors", lambda *a, **k: calls.append(1) or real(*a, **k))
    X = _blobs()
    for _ in range(2):
        build_graph(X, n_neighbors=10, knn="approx", random_state=None, cache=tmp_path)
    assert len(calls) == 2 and not _cache_files(tmp_path)
    build_graph(X, n_neighbors=10, knn="approx", random_state=3, cache=tmp_path)  # a seeded one still is
    assert len(_cache_files(tmp_path)) == 1


def _corrupt_by_truncation(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _corrupt_by_flipping_bytes(path):
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 8] = bytes(b ^ 0xFF for b in data[middle : middle + 8])
    path.write_bytes(bytes(data))


def _corrupt_by_overwriting(path):
    path.write_text("something else entirely")


@pytest.mark.parametrize("corrupt", [_corrupt_by_truncation, _corrupt_by_flipping_bytes, _corrupt_by_overwriting])
def test_corrupt_cache_file_warns_and_rebuilds(tmp_path, corrupt):
    X = _blobs()
    fresh = build_graph(X, n_neighbors=10, cache=tmp_path)
    (name,) = _cache_files(tmp_path)
    corrupt(tmp_path / name)
    with pytest.warns(UserWarning, match=f"Ignoring the cached graph .*{name}.*rebuilt") as caught:
        rebuilt = build_graph(X, n_neighbors=10, cache=tmp_path)
    assert not any("pickle" in str(w.message) for w in caught)  # NumPy's guess for a file that is not an .npz
    assert rebuilt.fingerprint == fresh.fingerprint
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the rewritten file loads cleanly
        assert build_graph(X, n_neighbors=10, cache=tmp_path).fingerprint == fresh.fingerprint


def test_cache_file_for_other_parameters_is_detected(tmp_path):
    X = _blobs()
    build_graph(X, n_neighbors=10, cache=tmp_path)
    (name10,) = _cache_files(tmp_path)
    expected = build_graph(X, n_neighbors=12, cache=tmp_path)
    (name12,) = set(_cache_files(tmp_path)) - {name10}
    os.replace(tmp_path / name10, tmp_path / name12)  # a file under the wrong name
    with pytest.warns(UserWarning, match="key does not match"):
        rebuilt = build_graph(X, n_neighbors=12, cache=tmp_path)
    assert rebuilt.fingerprint == expected.fingerprint


def test_temporary_files_of_killed_writers_are_swept_but_a_live_writers_are_kept(tmp_path):
    """A writer killed mid-write (SIGKILL, out of memory) left its hidden temporary file, as large as a graph, in
    the cache for good; each such kill added one."""
    stale = tmp_path / ".graph-0123.tmp.abcd1234.npz"
    live = tmp_path / ".graph-4567.tmp.efgh5678.npz"  # another process writing right now
    other = tmp_path / ".notes.tmp.x.npz"  # not the cache's
    for path in (stale, live, other):
        path.write_bytes(b"half a graph")
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    os.utime(other, (two_hours_ago, two_hours_ago))
    build_graph(_blobs(), n_neighbors=10, cache=tmp_path)
    assert not stale.exists() and live.exists() and other.exists()
    assert len(_cache_files(tmp_path)) == 1


def test_cache_locations(tmp_path, monkeypatch):
    monkeypatch.delenv("UMAPVIZ_CACHE_DIR", raising=False)
    repo = Path(__file__).resolve().parents[1]
    assert default_cache_dir() == repo / "data" / "cache"  # a checkout keeps its cache in data/
    monkeypatch.setenv("UMAPVIZ_CACHE_DIR", str(tmp_path / "env"))
    assert default_cache_dir() == tmp_path / "env"
    build_graph(_blobs(), n_neighbors=10, cache=False)
    assert not (tmp_path / "env").exists()
    build_graph(_blobs(), n_neighbors=10)  # cache=True: the env directory
    assert len(_cache_files(tmp_path / "env")) == 1
    with pytest.raises(TypeError, match="cache"):
        build_graph(_blobs(), n_neighbors=10, cache=3)


# ------------------------------------------------------------------------------------------------ bad input


def test_bad_parameters_give_clear_errors():
    X = _blobs()
    with pytest.raises(ValueError, match=r"metric='braycurtis'.*'euclidean', 'cosine', 'manhattan'"):
        build_graph(X, metric="braycurtis", cache=False)
    with pytest.raises(ValueError, match=r"knn='fast'.*'auto', 'exact', 'approx'"):
        build_graph(X, knn="fast", cache=False)
    with pytest.raises(ValueError, match=r"n_epochs=-5.*positive"):
        build_graph(X, n_epochs=-5, cache=False)
    with pytest.raises(ValueError, match=r"min_dist=2.0.*spread"):
        build_graph(X, min_dist=2.0, cache=False)
    with pytest.raises(ValueError, match="spread=0"):
        build_graph(X, spread=0, cache=False)
    with pytest.raises(TypeError, match="random_state"):
        build_graph(X, random_state="seven", cache=False)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"min_dist": None}, TypeError, "min_dist must be a number, got None"),
        ({"spread": None}, TypeError, "spread must be a number, got None"),
        ({"spread": "1"}, TypeError, "spread must be a number, got '1'"),
        ({"min_dist": True}, TypeError, "min_dist must be a number, got True"),
        ({"spread": np.inf}, ValueError, "spread=inf is out of range"),
        ({"min_dist": np.nan}, ValueError, "min_dist=nan is out of range"),
    ],
)
def test_min_dist_and_spread_errors_name_the_parameter(kwargs, error, match):
    """None gave "'<=' not supported", inf gave scipy's "array must not contain infs or NaNs"."""
    with pytest.raises(error, match=match):
        build_graph(_blobs(), cache=False, **kwargs)


def test_bad_data_through_build_graph():
    X = _blobs()
    X[[3, 8]] = np.nan
    with pytest.raises(ValueError, match=r"2 row\(s\) with NaN.*\[3, 8\]"):
        build_graph(X, cache=False)
    with pytest.raises(ValueError, match=r"has 10 rows but n_neighbors=15"):
        build_graph(np.zeros((10, 2)), cache=False)
    with pytest.raises(ValueError, match=r"reshape\(-1, 1\)"):
        build_graph(np.arange(100.0), cache=False)


@pytest.mark.parametrize("rows", [slice(None), slice(0, 3)])
def test_distances_beyond_float32_are_refused_with_the_fix(rows):
    """Values near float32's limit give inf kNN distances, whose weights are 0: with every row so, the graph had no
    edge and failed with "zero-size array to reduction operation maximum which has no identity"."""
    X = np.clip(_blobs(), -1, 1)
    X[rows] *= np.float32(3e38)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the error alone, not NumPy's overflow warnings first
        with pytest.raises(ValueError, match=r"overflow float32.*Scale X down first, e\.g\. X / np\.abs\(X\)\.max"):
            build_graph(X, cache=False, progress=False)
    build_graph(X / np.abs(X).max(), cache=False, progress=False)  # the way out the message gives


def _with_zero_rows(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """400 points in 12-D with four all-zero rows (empty documents) far down the index order."""
    X = np.random.default_rng(seed).normal(size=(400, 12)).astype(np.float32)
    zero = np.array([150, 260, 333, 399])
    X[zero] = 0.0
    return X, zero


def test_cosine_finds_the_other_all_zero_rows_of_an_all_zero_row():
    """Under cosine an all-zero row scores 0 against every point, so its candidates were the lowest indices and
    the other zero rows (distance 0) were missed: empty documents got linked to documents 0-14 at distance 1."""
    X, zero = _with_zero_rows()
    idx, dist = knn_mod.exact_knn(X, 8, "cosine", progress=False)
    for i in zero:
        others = zero[zero != i]
        assert idx[i, 0] == i and list(idx[i, 1:4]) == list(others) and (dist[i, :4] == 0).all()
        assert list(idx[i, 4:]) == [0, 1, 2, 3] and (dist[i, 4:] == 1).all()  # then distance 1, by index
    q_idx, q_dist = knn_mod.query_knn(X, np.zeros((2, 12), np.float32), 6, "cosine")
    assert (q_idx == [150, 260, 333, 399, 0, 1]).all() and (q_dist[:, :4] == 0).all() and (q_dist[:, 4:] == 1).all()
    # Everything else is as before: a non-zero row never has a zero row nearer than distance 1.
    nonzero = np.setdiff1d(np.arange(len(X)), zero)
    assert not np.isin(idx[nonzero], zero).any()


# -- the graph stage on the GPU (tests marked gpu skip, saying why, where no GPU is usable) ------------------


def _knn_data():
    """2,501 points: three stages of the selection's scan, the last one partial, and score rows padded to a
    multiple of 4 columns."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((2501, 24)).astype(np.float32)
    X[100:110] = X[5]  # duplicates: self must still come first
    X[200] = 0.0  # a zero row (cosine's special case)
    return X


@pytest.mark.gpu
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize("precision", ["auto", "tf32", "fp32"])
def test_gpu_knn_equals_cpu_exact_knn(metric, precision):
    X = _knn_data()
    idx_c, dist_c = exact_knn(X, 15, metric, progress=False)
    idx_g, dist_g = exact_knn_gpu(X, 15, metric, precision=precision)
    assert idx_g.dtype == np.int32 and dist_g.dtype == np.float32
    np.testing.assert_array_equal(idx_g[:, 0], np.arange(len(X)))
    np.testing.assert_array_equal(idx_g, idx_c)
    np.testing.assert_array_equal(dist_g, dist_c)


@pytest.mark.gpu
def test_gpu_knn_of_few_features_equals_cpu_exact_knn():
    """In 2-D the neighbours lie far closer than the points' norms: TF32's rounding scrambled the candidates (the
    metrics' trustworthiness of a GPU layout differed from the CPU's by 0.003), so precision="auto" takes FP32."""
    X = np.random.default_rng(0).standard_normal((100_000, 2)).astype(np.float32)
    assert knn_gpu.resolve_precision("auto", 2) == "fp32" and knn_gpu.resolve_precision("auto", 9) == "tf32"
    idx_c, dist_c = exact_knn(X, 15, "euclidean", progress=False)
    idx_g, dist_g = exact_knn_gpu(X, 15)
    np.testing.assert_array_equal(idx_g, idx_c)
    np.testing.assert_array_equal(dist_g, dist_c)


@pytest.mark.gpu
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize("precision", ["auto", "tf32", "fp32"])
def test_gpu_query_knn_equals_cpu_query_knn(metric, precision):
    X = _knn_data()
    queries = np.concatenate([X[:40] + 0.01, X[100:103]])  # the last three: copies of points (and duplicated)
    idx_c, dist_c = query_knn(X, queries, 15, metric)
    idx_g, dist_g = query_knn_gpu(X, queries, 15, metric, precision=precision)
    assert idx_g.shape == (len(queries), 15) and idx_g.dtype == np.int32 and dist_g.dtype == np.float32
    np.testing.assert_array_equal(idx_g, idx_c)
    np.testing.assert_array_equal(dist_g, dist_c)
    reference = reference_index_gpu(X, metric)  # prepared once, for many calls: the same answer
    for _ in range(2):
        idx_r, dist_r = query_knn_gpu(X, queries, 15, metric, precision=precision, reference=reference)
        np.testing.assert_array_equal(idx_r, idx_c)
        np.testing.assert_array_equal(dist_r, dist_c)
    assert (dist_g[40:43, 0] == 0).all()  # a query equal to a point finds it at distance 0, not as "self"


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_reference_prepared_by_blocks_equals_the_whole_array(device, metric, monkeypatch):
    """Both searches prepare X's rows a block at a time (no float64 copy of X): the bytes of the whole float64
    array centred and scaled by its largest magnitude, or of its unit rows; here over 7 blocks of 800 rows (the
    last one short). The scaled rows for trustworthiness's cosine too."""
    xp = np if device == "cpu" else pytest.importorskip("cupy")
    searches = {"cpu": knn_mod, "gpu": knn_gpu}
    X = xp.asarray(_knn_data())
    n, d = X.shape
    monkeypatch.setattr(knn_front, "PREP_BLOCK_BYTES", 800 * 8 * d)
    assert len(knn_front.float64_blocks(n, d)) == -(-n // 800) > 2
    Z, col_add, _, prepare = searches[device]._selection_matrix(X, metric)
    whole = X.astype(xp.float64)

    def scaled(A):  # the whole-array arithmetic the blocks must reproduce
        return A / float(xp.abs(A).max())

    if metric == "cosine":
        expected = searches[device]._unit_rows(whole)
        assert Z.tobytes() == expected.tobytes()
        assert not col_add.any()
        unit = scaled(whole)
        norms = xp.sqrt((unit * unit).sum(axis=1))
        unit /= xp.where(norms > 0, norms, 1.0)[:, None]
        assert knn_front.scaled_rows(X, xp.float64, centre=False, unit_rows=True)[0].tobytes() == unit.tobytes()
    else:
        expected = scaled(whole - whole.mean(axis=0)).astype(xp.float32)
        assert Z.tobytes() == expected.tobytes()
        if device == "cpu":
            assert col_add.tobytes() == np.einsum("ij,ij->i", expected, expected, dtype=np.float32).tobytes()
        else:
            assert col_add.tobytes() == (expected * expected).sum(axis=1, dtype=xp.float32).tobytes()
    assert prepare(X[:50]).tobytes() == expected[:50].tobytes()  # queries land where X's own rows did


@pytest.mark.gpu
def test_gpu_candidate_selection_keeps_the_smallest_and_flags_rows_it_may_have_cut():
    """select_candidates on a hand-made score tile (4 rows of 5,000 columns, 256 threads keeping 16 each, thread t
    taking columns 4t .. 4t + 3 of every 1,024): the m smallest col_add + scale * G by (score, column), self
    first; a row is flagged exactly when a thread's 16 kept scores ran out while more were wanted (it may have
    dropped a smaller one)."""
    import cupy as cp  # noqa: PLC0415 - GPU only: CuPy is absent where there is no GPU

    n, m, row0 = 5000, 30, 100  # rows 0-3 are points 100-103: column 100 + r is the row's own point
    columns = np.arange(n)

    def of_thread(t):
        return columns[(columns % (4 * knn_gpu._SEL_THREADS)) // 4 == t]

    rng = np.random.default_rng(0)
    G = rng.normal(size=(4, n)).astype(np.float32)
    G[1] = np.round(G[1], 1) + np.float32(0.05)  # many equal scores: ties go to the lower column
    G[2, of_thread(7)[:20]] = 50.0 + np.arange(20)  # thread 7 holds the 20 best: its 16 run out at round 16
    G[3, of_thread(9)[:16]] = 50.0 + np.arange(16)  # exactly 16: exhausted too, and so flagged as well
    col_add = np.zeros(n, dtype=np.float32)
    scale = np.float32(-2.0)
    cand = cp.full((4, m), -7, dtype=cp.int32)
    overflow = cp.zeros(4, dtype=cp.int32)
    knn_gpu._module().get_function("select_candidates")(
        (4,),
        (knn_gpu._SEL_THREADS,),
        (
            cp.asarray(G),
            np.int32(n),
            np.int64(n),
            cp.asarray(col_add),
            scale,
            cp.arange(row0, row0 + 4),
            np.int32(1),
            np.int32(m),
            cand,
            overflow,
        ),
    )
    score = col_add + scale * G  # float32, rounded as the kernel rounds
    score[np.arange(4), row0 + np.arange(4)] = -np.inf
    want = np.stack([np.lexsort((columns, row))[:m] for row in score])
    assert overflow.get().tolist() == [0, 0, 1, 1]
    np.testing.assert_array_equal(cand.get()[:2], want[:2])
    assert (cand.get()[2:, 0] == row0 + np.arange(2, 4)).all()  # self first even in a flagged row


@pytest.mark.gpu
def test_gpu_fp16_candidate_selection_keeps_the_smallest_half_scores():
    """select_candidates_h on a hand-made FP16 score tile (rows 5,004 halves apart, 5,002 columns: the last copy of
    a row partial, the padding smaller than any score and never read): the m smallest col_add + scale * G by
    (score, column) in float32, self first, as select_candidates ranks float32 scores."""
    import cupy as cp  # noqa: PLC0415 - GPU only: CuPy is absent where there is no GPU

    n, ld, m, row0 = 5002, 5004, 63, 100
    columns = np.arange(n)
    rng = np.random.default_rng(1)
    G = np.full((3, ld), 1000.0, dtype=np.float16)  # padding: the best score of all, were it read
    G[:, :n] = rng.normal(size=(3, n)).astype(np.float16)
    G[1, :n] = np.round(G[1, :n].astype(np.float32), 1).astype(np.float16)  # many ties: the lower column first
    G[2, n - 2 :] = 30.0  # the partial copy's columns are the best of row 2
    col_add = rng.uniform(0, 1, n).astype(np.float32)
    scale = np.float32(-2.0)
    cand = cp.full((3, m), -7, dtype=cp.int32)
    overflow = cp.zeros(3, dtype=cp.int32)
    knn_gpu._module().get_function("select_candidates_h")(
        (3,),
        (knn_gpu._SEL_THREADS,),
        (
            cp.asarray(G),
            np.int32(n),
            np.int64(ld),
            cp.asarray(col_add),
            scale,
            cp.arange(row0, row0 + 3),
            np.int32(1),
            np.int32(m),
            cand,
            overflow,
        ),
    )
    score = col_add + scale * G[:, :n].astype(np.float32)  # float32, rounded as the kernel rounds
    score[np.arange(3), row0 + np.arange(3)] = -np.inf
    want = np.stack([np.lexsort((columns, row))[:m] for row in score])
    assert overflow.get().tolist() == [0, 0, 0]
    np.testing.assert_array_equal(cand.get(), want)
    assert set(cand.get()[2, 1:3]) == {n - 2, n - 1}


@pytest.mark.gpu
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_gpu_fp16_knn_finds_the_neighbours_of_isotropic_data_and_repeats_its_bytes(metric):
    """The FP16 GEMM (knn="auto"'s exact step on the GPU) on a 128-d isotropic Gaussian, where distances
    concentrate: its spare candidates absorb the rounding of the half scores, so it finds what the CPU's exact
    search finds (recall on every row), its distances are the CPU's exact ones wherever the neighbours agree, and
    twice gives the same bytes."""
    X = np.random.default_rng(5).standard_normal((20_000, 128)).astype(np.float32)
    idx_c, dist_c = exact_knn(X, 15, metric, progress=False)
    idx_g, dist_g = exact_knn_gpu(X, 15, metric, precision="fp16")
    again = exact_knn_gpu(X, 15, metric, precision="fp16")
    assert idx_g.tobytes() == again[0].tobytes() and dist_g.tobytes() == again[1].tobytes()
    np.testing.assert_array_equal(idx_g[:, 0], np.arange(len(X)))
    found = np.mean([len(np.intersect1d(a, b)) / 15 for a, b in zip(idx_g, idx_c, strict=True)])
    assert found >= 0.999
    same = (idx_g == idx_c).all(axis=1)
    assert same.mean() >= 0.99
    np.testing.assert_array_equal(dist_g[same], dist_c[same])


@pytest.mark.gpu
def test_gpu_tf32_check_flags_a_row_exactly_when_a_left_out_point_may_be_nearer():
    """flag_rounding_misses on a hand-made tile (scores = G: col_add 0, scale 1; every norm 1, so a row's scores may
    each be off by its q_err): candidates 5-8 score 1-4, beside the row's self; the k-th neighbour (k = 3, self
    first) is column 6 at 2. A row is flagged when a column left out of the candidates may score below 2 + q_err,
    boundary included; a candidate, self, or a column tied at the cut but kept (the lower column wins ties) never
    flags."""
    import cupy as cp  # noqa: PLC0415 - GPU only: CuPy is absent where there is no GPU

    n, rows, row0 = 3000, 6, 100
    G = np.random.default_rng(1).uniform(10, 20, size=(rows, n)).astype(np.float32)
    G[:, 5:9] = [1, 2, 3, 4]
    G[np.arange(rows), row0 + np.arange(rows)] = 0.0
    q_err = np.full(rows, 0.5, dtype=np.float32)
    G[1, [2000, row0 + 1]], q_err[1] = [5.0, 100.0], 1.5  # 5 - 1.5 reaches 2 + 1.5: flagged (self is not the cut)
    G[2, 2000], q_err[2] = 5.01, 1.5  # just beyond: not flagged
    G[3, 9], q_err[3] = 4.0, 1.0  # column 9 ties the cut's 4 but was left out: 4 - 1 reaches 2 + 1, flagged
    q_err[4] = 1.0  # only candidate 8 reaches 3: not flagged
    G[5, 9] = 4.0  # left out at the cut, but 4 - 0.5 > 2 + 0.5: not flagged
    ids = np.arange(row0, row0 + rows)
    cand = np.stack([[i, 5, 6, 7, 8] for i in ids]).astype(np.int32)
    out_idx = np.stack([[i, 5, 6] for i in ids]).astype(np.int32)
    suspect = cp.zeros(rows, dtype=cp.int32)
    knn_gpu._module().get_function("flag_rounding_misses")(
        (rows,),
        (knn_gpu._SEL_THREADS,),
        (
            cp.asarray(G),
            np.int32(n),
            np.int64(n),
            cp.zeros(n, cp.float32),
            np.float32(1.0),
            cp.ones(n, cp.float32),
            cp.asarray(q_err),
            np.float32(0.0),
            cp.asarray(ids, dtype=cp.int64),
            np.int32(1),
            cp.asarray(cand),
            np.int32(5),
            cp.asarray(out_idx),
            np.int32(3),
            suspect,
        ),
    )
    assert suspect.get().tolist() == [0, 1, 0, 1, 0, 0]


@pytest.mark.gpu
def test_gpu_knn_of_a_plane_in_many_features_equals_cpu_exact_knn():
    """A 2-D plane rotated into 16 features: the neighbours lie far closer than the points' norms, so TF32's
    candidates miss some in many rows (emulated: 0.6% of rows at 100,000 points, 63% at 400,000; precision="tf32"
    unchecked here). precision="auto" checks TF32's rounding and searches those rows again in FP32 (here it
    flags most of the first tile, so the rest runs in FP32 at once): the result is the CPU's."""
    rng = np.random.default_rng(0)
    rotation = np.linalg.qr(rng.standard_normal((16, 16)))[0]
    X = (np.hstack([rng.standard_normal((200_000, 2)), np.zeros((200_000, 14))]) @ rotation).astype(np.float32)
    idx_c, dist_c = exact_knn(X, 15, "euclidean", progress=False)
    unchecked, _ = exact_knn_gpu(X, 15, precision="tf32")
    assert (unchecked != idx_c).any(axis=1).sum() > 1000
    stats: dict = {}
    idx_g, dist_g = exact_knn_gpu(X, 15, stats=stats)
    assert stats["rows_fp32"] > 1000  # the check found the rows TF32 may have got wrong
    np.testing.assert_array_equal(idx_g, idx_c)
    np.testing.assert_array_equal(dist_g, dist_c)


@pytest.mark.gpu
def test_gpu_cosine_knn_of_all_zero_rows_equals_the_cpu():
    X = np.random.default_rng(0).normal(size=(400, 12)).astype(np.float32)
    X[[150, 260, 333, 399]] = 0.0  # empty documents, far down the index order
    for got, want in (
        (exact_knn_gpu(X, 8, "cosine"), exact_knn(X, 8, "cosine", progress=False)),
        (
            query_knn_gpu(X, np.zeros((2, 12), np.float32), 6, "cosine"),
            query_knn(X, np.zeros((2, 12), np.float32), 6, "cosine"),
        ),
    ):
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    assert list(exact_knn_gpu(X, 8, "cosine")[0][150, :4]) == [150, 260, 333, 399]


@pytest.mark.gpu
def test_gpu_graph_build_stops_when_cancel_says_so(mixture_graph, monkeypatch):
    """A GPU build asks ``cancel`` before each kNN tile (the host waits for the tile before last, so the asks
    follow the GPU's work instead of all coming before it starts): it stops at the first tile after cancel says
    so, and a build that is never stopped is the uncancelled one."""

    X = mixture_graph[0][:600]
    monkeypatch.setattr(knn_gpu, "_TILE_BYTES", 4 * 600 * 50)  # tiles of 50 rows: 12 of them
    asked = []

    def cancel_on_the_fifth_ask():
        asked.append(1)
        return len(asked) >= 5

    with pytest.raises(BuildCancelled, match="cancelled"):
        build_graph(X, n_neighbors=10, cache=False, progress=False, device="gpu", cancel=cancel_on_the_fifth_ask)
    assert len(asked) == 5  # four tiles ran, the fifth was not started
    kw = dict(n_neighbors=10, cache=False, progress=False, device="gpu")
    never = build_graph(X, cancel=lambda: False, **kw)
    assert len(never.knn_indices) == 600
    assert never.fingerprint == build_graph(X, **kw).fingerprint


@pytest.mark.gpu
def test_gpu_fuzzy_set_and_graph_match_the_cpu(mixture_graph):
    X, graph = mixture_graph
    ref = fuzzy_simplicial_set(graph.knn_indices, graph.knn_dists)
    indptr, indices, data = fuzzy_simplicial_set_gpu(graph.knn_indices, graph.knn_dists)
    np.testing.assert_array_equal(indptr.get(), ref.indptr)
    np.testing.assert_array_equal(indices.get(), ref.indices)
    np.testing.assert_array_equal(data.get().view(np.uint32), ref.data.view(np.uint32))  # the exp twins: bit for bit
    g = build_graph_gpu(X, n_neighbors=15, n_epochs=200, precision="fp32")
    np.testing.assert_array_equal(g.knn_indices, graph.knn_indices)
    np.testing.assert_array_equal(g.head, graph.head)
    np.testing.assert_array_equal(g.tail, graph.tail)
    np.testing.assert_array_equal(g.weight, graph.weight)
    assert g.epochs_per_sample.tobytes() == graph.epochs_per_sample.tobytes()  # pruned and divided on the GPU
    assert g.fingerprint == graph.fingerprint


@pytest.mark.gpu
@pytest.mark.parametrize("rows", [slice(None), slice(0, 3)])
def test_gpu_graph_refuses_distances_beyond_float32_with_the_fix(mixture_graph, rows):
    """Rows near float32's limit overflow their kNN distances to inf on the GPU too: the GPU graph stage names them
    before its fuzzy set (as the CPU's does), and the data scaled as the message says builds."""

    X = np.clip(mixture_graph[0][:400], -1, 1)
    X[rows] *= np.float32(3e38)
    match = r"rows \[0, 1, 2.*overflow float32.*Scale X down first"
    with pytest.raises(ValueError, match=match):
        build_graph(X, n_neighbors=15, device="gpu", cache=False, progress=False)
    with pytest.raises(ValueError, match=match):
        build_graph_gpu(X, n_neighbors=15)
    assert build_graph_gpu(X / np.abs(X).max(), n_neighbors=15).nnz > 0


@pytest.mark.gpu
@pytest.mark.parametrize("scale", [1e20, 1e-20])
def test_gpu_fuzzy_set_of_rows_far_from_unit_scale_matches_the_cpu(mixture_graph, scale):
    """Rows beyond the bisection's reach are bisected in power-of-two units on both devices (fuzzy.bisection_units):
    the same sigma and rho, scaled, as the rows of ordinary scale beside them get."""

    _, graph = mixture_graph
    dists = graph.knn_dists.copy()
    dists[:50] *= np.float32(scale)
    sigma, rho = smooth_knn_dist(dists)
    sigma_gpu, rho_gpu = smooth_knn_dist_gpu(dists)
    np.testing.assert_array_equal(rho_gpu.get(), rho)
    np.testing.assert_array_equal(sigma_gpu.get(), sigma)
    ordinary, _ = smooth_knn_dist(graph.knn_dists)
    np.testing.assert_allclose(sigma[:50] / np.float32(scale), ordinary[:50], rtol=1e-4)
    ref = fuzzy_simplicial_set(graph.knn_indices, dists)
    _, _, data = fuzzy_simplicial_set_gpu(graph.knn_indices, dists)
    np.testing.assert_array_equal(data.get(), ref.data)
