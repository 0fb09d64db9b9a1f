"""Connected components of a symmetric edge list: SciPy's, in the order of their lowest vertex, on either device."""

from __future__ import annotations

import ctypes
import shutil

import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.csgraph
from cuda_host import build_host_library

from umapviz.graph.start import components_gpu
from umapviz.graph.start.components import connected_components
from umapviz.graph.start.components_cpu import lowest_vertex


def _scattered_graph(n: int, n_groups: int, n_edges: int, seed: int):
    """A symmetric edge list (both directions, sorted by head then tail) whose components are random groups of
    vertices scattered over the ids, broken further where the edges are few; isolated vertices among them."""
    rng = np.random.default_rng(seed)
    group = rng.integers(0, n_groups, n)
    head, tail = rng.integers(0, n, (2, n_edges))
    keep = (group[head] == group[tail]) & (head != tail)
    adj = scipy.sparse.coo_matrix((np.ones(keep.sum()), (head[keep], tail[keep])), shape=(n, n))
    adj = (adj + adj.T).tocsr()
    adj.sort_indices()
    head = np.repeat(np.arange(n, dtype=np.int32), np.diff(adj.indptr))
    return head, adj.indices.astype(np.int32), adj


def _scipy_labels(adj) -> tuple[int, np.ndarray]:
    """SciPy's undirected components, renumbered in the order of each component's lowest vertex."""
    n_comp, labels = scipy.sparse.csgraph.connected_components(adj, directed=False)
    first = np.full(n_comp, adj.shape[0])
    np.minimum.at(first, labels, np.arange(adj.shape[0]))
    rank = np.empty(n_comp, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(n_comp)
    return n_comp, rank[labels]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("n", "n_groups", "n_edges"), [(2_000, 40, 1_500), (5_000, 300, 20_000), (300, 3, 5_000)])
def test_cpu_labels_are_scipys_in_lowest_vertex_order(seed, n, n_groups, n_edges):
    head, tail, adj = _scattered_graph(n, n_groups, n_edges, seed)
    n_comp, labels = connected_components(head, tail, n)
    ref_n, ref_labels = _scipy_labels(adj)
    assert n_comp == ref_n and n_comp >= n_groups  # many components, isolated vertices among them
    assert labels.dtype == np.int32
    np.testing.assert_array_equal(labels, ref_labels)


def test_edge_order_and_a_graph_without_edges_change_nothing():
    head, tail, adj = _scattered_graph(3_000, 50, 8_000, 9)
    order = np.random.default_rng(1).permutation(head.size)
    np.testing.assert_array_equal(
        connected_components(head[order], tail[order], 3_000)[1], connected_components(head, tail, 3_000)[1]
    )
    n_comp, labels = connected_components(np.zeros(0, np.int32), np.zeros(0, np.int32), 5)
    assert n_comp == 5 and labels.tolist() == [0, 1, 2, 3, 4]


def test_a_long_path_is_one_component():
    """Numbered against the grain (each vertex joined to the next lower one last): deep trees for the union-find."""
    n = 100_000
    a = np.arange(1, n, dtype=np.int32)[::-1]
    head, tail = np.concatenate([a, a - 1]), np.concatenate([a - 1, a])
    assert lowest_vertex(head, tail, n).max() == 0
    assert connected_components(head, tail, n)[0] == 1


_HOST_HARNESS = r"""
// components_gpu.cu built as host code: the threads of a launch run one at a time, in reverse order.
struct Dim { unsigned x, y, z; };
static Dim blockIdx, threadIdx, blockDim;
#define __global__
#define __restrict__
static inline int atomicMin(int* a, int v) { int old = *a; if (v < old) *a = v; return old; }
#include KERNELS
static void launch(long long n, void (*body)(long long)) {
    blockDim = {256, 1, 1};
    for (long long b = (n + 255) / 256; b-- > 0;)
        for (unsigned t = 256; t-- > 0;) {
            blockIdx = {(unsigned)b, 0, 0};
            threadIdx = {t, 0, 0};
            body(b * 256 + t);
        }
}
static const int *H, *T; static int *P, *C; static long long NE; static int NV;
extern "C" int host_lowest_vertex(const int* head, const int* tail, long long n_edges, int* parent, int n) {
    H = head; T = tail; NE = n_edges; P = parent; NV = n;
    int changed = 0, rounds = 0;
    C = &changed;
    for (;;) {
        do { changed = 0; launch(NV, [](long long) { jump(P, NV, C); }); } while (changed);
        changed = 0;
        launch(NE, [](long long) { hook(H, T, P, NE, C); });
        ++rounds;
        if (!changed) return rounds;
    }
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
def test_gpu_kernels_built_as_host_code_find_the_cpus_lowest_vertices(tmp_path):
    """hook and jump of components_gpu.cu, run by the GPU twin's loop on the host, against the union-find."""
    lib = build_host_library(_HOST_HARNESS.replace("KERNELS", f'"{components_gpu.KERNELS}"'), tmp_path)
    for seed, (n, n_groups, n_edges) in enumerate([(4_000, 60, 6_000), (3_000, 2, 30_000)]):
        head, tail, _ = _scattered_graph(n, n_groups, n_edges, seed)
        parent = np.arange(n, dtype=np.int32)
        rounds = lib.host_lowest_vertex(
            head.ctypes.data_as(ctypes.c_void_p),
            tail.ctypes.data_as(ctypes.c_void_p),
            ctypes.c_longlong(head.size),
            parent.ctypes.data_as(ctypes.c_void_p),
            ctypes.c_int(n),
        )
        assert rounds >= 2
        np.testing.assert_array_equal(parent, lowest_vertex(head, tail, n))


@pytest.mark.gpu
def test_gpu_labels_are_the_cpus():
    cupy = pytest.importorskip("cupy")
    for seed, (n, n_groups, n_edges) in enumerate([(50_000, 500, 200_000), (20_000, 3, 400_000)]):
        head, tail, _ = _scattered_graph(n, n_groups, n_edges, seed)
        n_comp, labels = connected_components(cupy.asarray(head), cupy.asarray(tail), n, device="gpu")
        ref_n, ref_labels = connected_components(head, tail, n)
        assert n_comp == ref_n
        np.testing.assert_array_equal(labels.get(), ref_labels)
