"""The sampled spectral start: landmarks, the coarse graph, the interpolated start, on either device."""

from __future__ import annotations

import ctypes
import shutil

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from cuda_host import build_host_library

from umapviz import datasets
from umapviz.graph import build_graph, random_init, spectral_init
from umapviz.graph import start as init_mod
from umapviz.graph.start import landmarks_gpu
from umapviz.graph.start.components import connected_components
from umapviz.graph.start.landmarks import assign_landmarks, choose_landmarks, coarse_graph, coarse_graph_sorted
from umapviz.graph.start.spectral_sampled import sampled_eigenpairs
from umapviz.metrics import fingerprint, trustworthiness
from umapviz.optimize import LayoutOptimizer
from umapviz.widgets.session import initial_layout


def _grouped_adjacency(graph) -> tuple[sp.csr_matrix, np.ndarray]:
    """The graph's adjacency with its rows grouped by connected component, and the components' bounds."""
    adj = init_mod._adjacency(graph)
    n_comp, labels = connected_components(graph.head, graph.tail, graph.n_vertices)
    members, bounds, _ = init_mod._component_members(labels, np.bincount(labels))
    return init_mod._grouped(adj, members, bounds, list(range(n_comp)))


@pytest.fixture(scope="module")
def moons():
    """12,000 points of two moons: two components of 6,000 points, each above SAMPLED_MIN_ROWS."""
    X, _ = datasets.load("moons", n_samples=12_000, random_state=0)
    return X, build_graph(X, random_state=0, progress=False, cache=False)


def _landmark_parts(graph, seed=0):
    adj, bounds = _grouped_adjacency(graph)
    assert bounds.size == 3
    pick = choose_landmarks(bounds, seed)
    owner = assign_landmarks(adj.indptr.astype(np.int64), adj.indices, adj.data, pick, "cpu")
    return adj, pick, owner


def test_landmarks_own_themselves_and_every_row_joins_a_neighbours_landmark(moons):
    _, graph = moons
    adj, pick, owner = _landmark_parts(graph)
    assert pick[0] and pick[6000] and 120 < pick.sum() < 260  # about one row in 64, and each component's first
    np.testing.assert_array_equal(owner[pick], np.arange(pick.sum()))
    assert owner.min() == 0
    for row in np.flatnonzero(~pick)[:500]:  # a row's owner is one of its neighbours' owners
        assert owner[row] in set(owner[adj.indices[adj.indptr[row] : adj.indptr[row + 1]]])


def test_a_component_without_a_landmark_is_refused():
    adj = sp.csr_matrix(
        sp.block_diag([sp.csr_matrix(np.ones((3, 3))), sp.csr_matrix(np.ones((3, 3)))]), dtype=np.float32
    )
    pick = np.zeros(6, dtype=bool)
    pick[0] = True
    with pytest.raises(ValueError, match="not connected to any landmark"):
        assign_landmarks(adj.indptr.astype(np.int64), adj.indices, adj.data, pick, "cpu")


_HOST_HARNESS = r"""
// landmarks_gpu.cu built as host code: each thread of a launch runs in turn (a step reads only earlier steps'
// labels, so any order of threads gives the GPU's result).
struct Dim { unsigned x, y, z; };
static Dim blockIdx, threadIdx, blockDim;
#define __global__
#define __restrict__
static inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) {
    unsigned long long old = *a; *a += v; return old;
}
#include KERNELS
extern "C" unsigned long long host_grow_owners(const i64* indptr, const int* indices, const float* w, int* level,
                                               int* owner, int step, int n) {
    unsigned long long count = 0;
    blockDim = {256, 1, 1};
    for (unsigned b = (n + 255) / 256; b-- > 0;)  // blocks in reverse: the order must not matter
        for (unsigned t = 0; t < 256; ++t) {
            blockIdx = {b, 0, 0};
            threadIdx = {t, 0, 0};
            grow_owners(indptr, indices, w, level, owner, step, n, &count);
        }
    return count;
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
def test_landmark_kernel_built_as_host_code_labels_like_the_numba_twin(tmp_path):
    """grow_owners of landmarks_gpu.cu against landmarks_cpu.grow_owners, on a graph whose weights tie often."""
    lib = build_host_library(_HOST_HARNESS.replace("KERNELS", f'"{landmarks_gpu.KERNELS}"'), tmp_path)
    lib.host_grow_owners.restype = ctypes.c_ulonglong
    rng = np.random.default_rng(4)
    n = 3_000
    head, tail = rng.integers(0, n, 12_000), rng.integers(0, n, 12_000)
    ring = np.arange(n)
    adj = sp.coo_matrix(
        (
            rng.integers(1, 4, head.size + n) / 4.0,
            (np.concatenate([head, ring]), np.concatenate([tail, (ring + 1) % n])),
        ),
        shape=(n, n),
    )
    adj = (adj + adj.T).tocsr().astype(np.float32)
    adj.sort_indices()
    indptr = adj.indptr.astype(np.int64)
    pick = choose_landmarks(np.array([0, n]), 0, rows_per_landmark=100)
    expected = assign_landmarks(indptr, adj.indices, adj.data, pick, "cpu")
    owner = np.full(n, -1, dtype=np.int32)
    owner[pick] = np.arange(pick.sum(), dtype=np.int32)
    level = np.where(pick, 0, -1).astype(np.int32)

    def ptr(a):
        return a.ctypes.data_as(ctypes.c_void_p)

    step = 1
    while (level < 0).any():
        assert (
            lib.host_grow_owners(
                ptr(indptr),
                ptr(adj.indices),
                ptr(adj.data),
                ptr(level),
                ptr(owner),
                ctypes.c_int(step),
                ctypes.c_int(n),
            )
            > 0
        )
        step += 1
    assert step > 3  # several steps ran
    np.testing.assert_array_equal(owner, expected)


def test_coarse_graph_is_the_same_by_sparse_sums_and_by_sort(moons):
    """The CPU's sums per region and the GPU's sort-and-cumulative-sum (here on NumPy) build the same bytes; the coarse
    graph keeps the total weight (up to the fixed-point rounding) and is symmetric."""
    _, graph = moons
    adj, pick, owner = _landmark_parts(graph)
    indptr = adj.indptr.astype(np.int64)
    by_sums = coarse_graph(indptr, adj.indices, adj.data, owner, int(pick.sum()), "cpu")
    by_sort = coarse_graph_sorted(indptr, adj.indices, adj.data, owner, int(pick.sum()), np)
    for a, b in ((by_sums.indptr, by_sort.indptr), (by_sums.indices, by_sort.indices)):
        np.testing.assert_array_equal(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
    assert by_sums.data.dtype == by_sort.data.dtype == np.float32
    np.testing.assert_array_equal(by_sums.data, by_sort.data)
    assert by_sums.data.astype(np.float64).sum() == pytest.approx(adj.data.astype(np.float64).sum(), rel=1e-6)
    assert abs(by_sums - by_sums.T).max() == 0


def test_sampled_start_repeats_its_bytes_with_any_thread_count(moons):
    _, graph = moons
    before = numba.get_num_threads()
    try:
        prints = set()
        for threads in (1, 2, 1):
            numba.set_num_threads(threads)
            prints.add(fingerprint(spectral_init(graph, 2, 0, method="sampled")))
    finally:
        numba.set_num_threads(before)
    assert len(prints) == 1
    assert fingerprint(spectral_init(graph, 2, 1, method="sampled")) not in prints  # the seed picks the landmarks


def test_sampled_start_is_close_to_the_full_one(moons):
    """Trustworthiness of the start itself: near the full solve's, far above a random start's."""
    X, graph = moons
    stats: dict = {}
    sampled = spectral_init(graph, 2, 0, method="sampled", stats=stats)
    full = spectral_init(graph, 2, 0, method="full")
    assert stats["method"] == "sampled" and stats["sampled"]["landmarks"] < graph.n_vertices // 30
    assert stats["full"] is None  # no component is below SAMPLED_MIN_ROWS
    assert sampled.dtype == np.float32 and np.abs(sampled).max() == pytest.approx(10.0, abs=1e-3)
    trust = {
        name: trustworthiness(X, layout, sample=2000, random_state=0)
        for name, layout in (("sampled", sampled), ("full", full), ("random", random_init(graph.n_vertices, 2, 0)))
    }
    assert trust["sampled"] > trust["full"] - 0.03, trust
    assert trust["sampled"] > trust["random"] + 0.2, trust


def test_sampled_eigenpairs_trivial_vector_and_orthogonality(moons):
    """Per component, column 0 is D^1/2 1 normalised; the others are orthogonal to it (projected out)."""
    _, graph = moons
    adj, bounds = _grouped_adjacency(graph)
    pairs = sampled_eigenpairs(adj, bounds, 3, 0, "cpu")
    degree = np.asarray(adj.astype(np.float64).sum(axis=1)).ravel()
    for c, (values, vectors) in enumerate(pairs):
        assert values[0] == pytest.approx(1.0, abs=1e-4) and np.all(np.diff(values) <= 0)
        root = np.sqrt(degree[bounds[c] : bounds[c + 1]])
        np.testing.assert_allclose(vectors[:, 0], root / np.linalg.norm(root), rtol=1e-9)
        assert np.abs(vectors[:, 0] @ vectors[:, 1:]).max() < 1e-9 * np.abs(vectors[:, 1:]).max()


def test_auto_method_switches_above_the_documented_size():
    assert init_mod.resolve_spectral_method("auto", init_mod.SAMPLED_ABOVE) == "full"
    assert init_mod.resolve_spectral_method("auto", init_mod.SAMPLED_ABOVE + 1) == "sampled"
    assert init_mod.resolve_spectral_method("full", 10**9) == "full"
    with pytest.raises(ValueError, match="method='fast' is not known"):
        init_mod.resolve_spectral_method("fast", 10)


@pytest.mark.gpu
def test_sampled_start_is_the_same_bytes_on_the_gpu(moons):
    _, graph = moons
    cpu = spectral_init(graph, 2, 0, device="cpu", method="sampled")
    gpu = spectral_init(graph, 2, 0, device="gpu", method="sampled")
    assert fingerprint(gpu) == fingerprint(cpu)


def test_named_inits_ask_for_their_method(moons):
    """init="spectral_sampled" / "spectral_full" start from spectral_init's layout of that method, in the optimizer
    and in the panels' shared start; "spectral" takes the full solve at this size."""
    _, graph = moons
    sampled = spectral_init(graph, 2, 3, method="sampled")
    full = spectral_init(graph, 2, 3, method="full")
    assert fingerprint(sampled) != fingerprint(full)
    for init, expected in (("spectral_sampled", sampled), ("spectral_full", full), ("spectral", full)):
        opt = LayoutOptimizer(graph, init=init, random_state=3, n_epochs=1)
        assert fingerprint(opt.embedding) == fingerprint(expected), init
        assert fingerprint(initial_layout(graph, init, 3, cache=False)) == fingerprint(expected), init
