"""The spectral start's eigen-solve (umapviz.graph.start.spectral and its twins spectral_cpu / spectral_gpu).

One algorithm on both devices, summing in one fixed order: the same graph gives the same bytes on the CPU (any
Numba thread count) and the GPU. Here: the CPU twin against plain NumPy and SciPy references, its bytes across
runs and thread counts, disconnected graphs, the fallbacks; the GPU tests (``-m gpu``) compare the two devices'
bytes.
"""

from __future__ import annotations

import ctypes
import re
import shutil

import numba
import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
from cuda_host import build_host_library

from umapviz.graph import FuzzyGraph, build_graph, random_init, spectral_init
from umapviz.graph import start as init_mod
from umapviz.graph.start import lanczos, spectral, spectral_cpu, spectral_gpu
from umapviz.graph.start.components import connected_components
from umapviz.optimize import LayoutOptimizer


def _connected(n: int, extra: int, seed: int) -> sp.csr_matrix:
    """A path through all n vertices plus random weighted chords: connected, irregular."""
    rng = np.random.default_rng(seed)
    head = np.concatenate([np.arange(n - 1), rng.integers(0, n, extra)])
    tail = np.concatenate([np.arange(1, n), rng.integers(0, n, extra)])
    keep = head != tail
    adj = sp.coo_matrix((rng.uniform(0.1, 1.0, keep.sum()), (head[keep], tail[keep])), shape=(n, n))
    return _float32((adj + adj.T).tocsr())


def _chain(n: int) -> sp.csr_matrix:
    """A path of random weights: its leading eigenvalues crowd 1 within 1e-4, too close for a few dozen products."""
    weight = np.random.default_rng(7).uniform(0.5, 1.5, n - 1)
    adj = sp.coo_matrix((weight, (np.arange(n - 1), np.arange(1, n))), shape=(n, n))
    return _float32((adj + adj.T).tocsr())


def _float32(adj: sp.csr_matrix) -> sp.csr_matrix:
    """The graph's weights are float32: both devices multiply those numbers."""
    adj.sort_indices()
    return adj.astype(np.float32)


def _stack(components):
    adj = sp.block_diag(components, format="csr")
    return _float32(adj), np.cumsum([0] + [c.shape[0] for c in components])


def _dense_top(component: sp.csr_matrix, n_vec: int):
    """LAPACK's leading eigenpairs of the normalised adjacency (the reference)."""
    component = component.astype(np.float64)
    d = 1.0 / np.sqrt(np.asarray(component.sum(axis=1)).ravel())
    values, vectors = scipy.linalg.eigh((sp.diags(d) @ component @ sp.diags(d)).toarray())
    return values[::-1][:n_vec], vectors[:, ::-1][:, :n_vec]


def _assert_solves(pair, component, n_vec=3, tol=spectral.TOL):
    values, vectors = pair
    ref_values, ref_vectors = _dense_top(component, n_vec)
    np.testing.assert_allclose(values, ref_values, atol=10 * tol)  # |error| <= residual for a symmetric matrix
    cosines = np.linalg.svd(ref_vectors.T @ vectors, compute_uv=False)  # of the principal angles
    assert cosines.min() > 1 - 1e-4, cosines


def _graph_of(components, seed=0):
    """A FuzzyGraph of the components with their vertices shuffled over the ids, as a kNN graph's clusters are."""
    adj, _ = _stack(components)
    perm = np.random.default_rng(seed).permutation(adj.shape[0])
    coo = adj[perm][:, perm].tocoo()
    order = np.lexsort((coo.col, coo.row))
    weight = coo.data[order].astype(np.float32)
    dummy = np.zeros((adj.shape[0], 2))
    return FuzzyGraph(
        coo.row[order].astype(np.int32),
        coo.col[order].astype(np.int32),
        weight,
        weight.max() / weight.astype(np.float64),
        dummy.astype(np.int32),
        dummy.astype(np.float32),
        1.577,
        0.895,
        200,
    )


def _curve_graph():
    """Points along a noisy curve: a 1-D manifold, whose leading eigenvalues lie close together."""
    rng = np.random.default_rng(10)
    t = np.sort(rng.uniform(0, 3, size=1200))
    X = np.column_stack([t, np.sin(t), 0.05 * rng.normal(size=1200)]).astype(np.float32)
    return build_graph(X, n_neighbors=10, cache=False, progress=False)


# Components across several tiles, exactly one tile, a few rows, and a tile and one row.
TILED = [
    _connected(5000, 9000, 1),
    _connected(3, 2, 2),
    _connected(spectral_cpu.SEG_TILE, 4000, 3),
    _connected(spectral_cpu.SEG_TILE + 1, 9000, 4),
]
# Mixed sizes, a grid-like close pair, and one that exhausts its Krylov space in the first basis.
SOLVABLE = [_connected(1500, 6000, 1), _connected(25, 60, 2), _connected(3000, 20000, 3), _connected(300, 900, 4)]


# -- the CPU twin's arithmetic ----------------------------------------------------------------------------


def test_cpu_primitives_compute_the_normalised_product_and_the_per_component_sums():
    """Against plain SciPy/NumPy arithmetic (another order of summation: equal to rounding)."""
    adj, bounds = _stack(TILED)
    ops = spectral_cpu.HostOps(adj, bounds)
    rng = np.random.default_rng(0)
    V, x = rng.standard_normal((7, adj.shape[0])), rng.standard_normal(adj.shape[0])
    coef, add = rng.standard_normal((len(TILED), 5)), rng.standard_normal(adj.shape[0])
    dense = adj.astype(np.float64)
    d = 1.0 / np.sqrt(np.asarray(dense.sum(axis=1)).ravel())
    np.testing.assert_allclose(ops.matvec(x), d * (dense @ (d * x)), rtol=1e-12, atol=1e-12)
    ref_dots = np.add.reduceat(V[:5] * x, bounds[:-1], axis=1).T
    np.testing.assert_allclose(ops.seg_dots(V, 5, x), ref_dots, rtol=1e-12, atol=1e-12)
    comp_of = np.repeat(np.arange(len(TILED)), np.diff(bounds))
    ref_combine = add - np.einsum("jr,rj->r", V[:5], coef[comp_of])
    np.testing.assert_allclose(ops.combine(V, 5, coef, add, -1.0), ref_combine, rtol=1e-12, atol=1e-12)


def test_cpu_primitives_sum_like_the_gpu_tree():
    """The GPU's order, spelled out here independently: a sparse row's entries in order; 256 threads, a butterfly
    per warp and the warps in order per 2,048-row tile, then the tiles in order. Bitwise equal."""

    def butterfly(lanes):
        lanes = list(lanes)
        for offset in (16, 8, 4, 2, 1):
            lanes = [lanes[i] + lanes[i ^ offset] for i in range(32)]
        return lanes[0]

    adj = _connected(300, 6000, 9)
    ops = spectral_cpu.HostOps(adj, np.array([0, 300]))
    x = np.random.default_rng(1).standard_normal(300)
    y = np.empty(300)
    scale = np.random.default_rng(2).uniform(0.5, 2.0, 300)
    spectral_cpu.csr_matvec(ops.indptr, ops.indices, ops.weight, x, scale, y)
    for row in (0, 7, 150, 299):
        total = 0.0
        for p in range(adj.indptr[row], adj.indptr[row + 1]):
            total += float(adj.data[p]) * x[adj.indices[p]]
        assert y[row] == scale[row] * total
    n = 2 * spectral_cpu.SEG_TILE + 100
    ops = spectral_cpu.HostOps(_connected(n, 100, 2), np.array([0, n]))
    v, x = np.random.default_rng(2).standard_normal((2, n))
    total = 0.0
    for lo in range(0, n, spectral_cpu.SEG_TILE):
        threads = [0.0] * 256
        for r in range(lo, min(n, lo + spectral_cpu.SEG_TILE)):
            threads[(r - lo) % 256] += v[r] * x[r]
        tile = 0.0
        for warp in range(8):
            tile += butterfly(threads[32 * warp : 32 * warp + 32])
        total += tile
    assert ops.seg_dots(v[None], 1, x)[0, 0] == total


LANCZOS_GRAPH = [_connected(3000, 20000, 3), _connected(12, 8, 5), _connected(2100, 5000, 8)]


def _lanczos_state(ops, bounds, first):
    """(V, H, arrow) on the host before the Lanczos steps ``first ..``: the start vector, or after a restart
    orthonormal kept vectors per component, the next one, and random couplings."""
    n, n_comp, rng = int(bounds[-1]), bounds.size - 1, np.random.default_rng(4)
    V = np.zeros((spectral.BASIS + 1, n))
    H = np.zeros((n_comp, spectral.BASIS + 1, spectral.BASIS))
    arrow = np.zeros((n_comp, spectral.KEEP))
    if first:  # orthonormal kept vectors per component, then the next one, and their couplings
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            q = np.linalg.qr(rng.standard_normal((hi - lo, first + 1)))[0]
            V[: first + 1, lo:hi] = q.T
        arrow[:] = rng.standard_normal(arrow.shape)
        H[:, np.arange(first), np.arange(first)] = rng.uniform(0.5, 1.0, (n_comp, first))
    else:
        v = spectral.start_vector(bounds)
        V[0] = v / np.sqrt(ops.seg_dots(v[None], 1, v)[:, 0])[ops.comp_of]
    return V, H, arrow


@pytest.mark.parametrize("first", [0, spectral.KEEP])
def test_cpu_fused_lanczos_steps_give_the_primitives_bytes(first):
    """HostOps.extend_basis (one Numba call) against lanczos.extend_basis on the same primitives (the GPU's
    path): bitwise equal, from the start and after a restart, with a component whose Krylov space runs out."""
    adj, bounds = _stack(LANCZOS_GRAPH)
    ops = spectral_cpu.HostOps(adj, bounds)
    V, H, arrow = _lanczos_state(ops, bounds, first)
    V_ref, H_ref = V.copy(), H.copy()
    lanczos.extend_basis(ops, V_ref, H_ref, arrow, first)
    ops.extend_basis(V, H, arrow, first, lanczos.BREAKDOWN)
    assert V.tobytes() == V_ref.tobytes() and H.tobytes() == H_ref.tobytes()
    assert not V[-1, bounds[1] : bounds[2]].any()  # twelve vertices: the basis ran out, the rest is zeros


_HOST_HARNESS = r"""
// spectral_gpu.cu's kernels that use no warp intrinsic, built as host code: each thread of a launch runs in turn.
struct Dim { unsigned x, y, z; };
static Dim blockIdx, threadIdx, blockDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __shared__ static
#define __syncthreads()
#define __shfl_xor_sync(mask, v, offset) (v)
#include KERNELS
#define LAUNCH(n_threads, call) \
    blockDim = {256, 1, 1}; \
    for (unsigned b = 0; b < ((n_threads) + 255) / 256; ++b) \
        for (unsigned t = 0; t < 256; ++t) { blockIdx = {b, 0, 0}; threadIdx = {t, 0, 0}; call; }
extern "C" {
void host_csr_matvec(const i64* indptr, const int* indices, const float* w, const double* x, const double* s,
                     double* y, int n) { LAUNCH(n, csr_matvec(indptr, indices, w, x, s, y, n)) }
void host_seg_combine(const double* V, i64 n, int k, const double* coef, const int* comp_of, const double* add,
                      double sign, double* out) { LAUNCH(n, seg_combine(V, n, k, coef, comp_of, add, sign, out)) }
void host_seg_dot_finish(const double* partial, int n_tiles, const int* comp_tiles, int n_comp, int k,
                         double* out) {
    LAUNCH(n_comp * k, seg_dot_finish(partial, n_tiles, comp_tiles, n_comp, k, out))
}
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
def test_cuda_kernels_built_as_host_code_give_the_numba_twins_bytes(tmp_path):
    """The .cu bodies themselves (no FMA contraction, as --fmad=false), on the CPU: the same bytes as the twins.
    (seg_dot_tiles needs warp shuffles; test_cpu_primitives_sum_like_the_gpu_tree and the GPU tests cover it.)"""
    lib = build_host_library(_HOST_HARNESS.replace("KERNELS", f'"{spectral_gpu.KERNELS}"'), tmp_path)

    def ptr(a):
        return a.ctypes.data_as(ctypes.c_void_p)

    adj, bounds = _stack(TILED)
    ops = spectral_cpu.HostOps(adj, bounds)
    n, k, rng = adj.shape[0], 5, np.random.default_rng(0)
    x, scale = rng.standard_normal(n), rng.uniform(0.5, 2.0, n)
    cuda, numba_twin = np.empty(n), np.empty(n)
    weight32 = adj.data.astype(np.float32)  # the GPU reads the graph's float32 weights, the CPU them widened
    lib.host_csr_matvec(
        ptr(ops.indptr), ptr(ops.indices), ptr(weight32), ptr(x), ptr(scale), ptr(cuda), ctypes.c_int(n)
    )
    spectral_cpu.csr_matvec(ops.indptr, ops.indices, ops.weight, x, scale, numba_twin)
    assert cuda.tobytes() == numba_twin.tobytes()
    V, coef, add = rng.standard_normal((7, n)), rng.standard_normal((len(TILED), k)), rng.standard_normal(n)
    lib.host_seg_combine(
        ptr(V),
        ctypes.c_longlong(n),
        ctypes.c_int(k),
        ptr(coef),
        ptr(ops.comp_of),
        ptr(add),
        ctypes.c_double(-1.0),
        ptr(cuda),
    )
    assert cuda.tobytes() == ops.combine(V, k, coef, add, -1.0).tobytes()
    partial = rng.standard_normal((k, ops.tile_lo.size - 1))
    cuda, numba_twin = np.empty((len(TILED), k)), np.empty((len(TILED), k))
    lib.host_seg_dot_finish(
        ptr(partial),
        ctypes.c_int(partial.shape[1]),
        ptr(ops.comp_tiles),
        ctypes.c_int(len(TILED)),
        ctypes.c_int(k),
        ptr(cuda),
    )
    spectral_cpu.seg_dot_finish(partial, k, ops.comp_tiles, numba_twin)
    assert cuda.tobytes() == numba_twin.tobytes()


def test_kernel_block_size_matches_the_cpu_twin():
    found = re.search(r"^#define SEG_THREADS (\d+)", spectral_gpu.KERNELS.read_text(), re.M)
    assert found and int(found.group(1)) == spectral_cpu.SEG_THREADS


def test_symmetric_eigen_matches_lapack():
    rng = np.random.default_rng(3)
    for m in (1, 2, 5, 32):
        A = rng.standard_normal((m, m))
        A = A + A.T
        values, vectors = spectral.symmetric_eigen(A)
        order = np.argsort(values)
        np.testing.assert_allclose(values[order], np.linalg.eigvalsh(A), atol=1e-12 * max(1, np.abs(A).max()))
        np.testing.assert_allclose(A @ vectors, vectors * values, atol=1e-10)
        np.testing.assert_allclose(vectors.T @ vectors, np.eye(m), atol=1e-12)


# -- the solve ---------------------------------------------------------------------------------------------


def test_solve_finds_every_components_leading_eigenpairs():
    adj, bounds = _stack(SOLVABLE)
    stats = {}
    pairs = spectral.leading_eigenpairs(adj, bounds, 3, "cpu", stats)
    for pair, component in zip(pairs, SOLVABLE, strict=True):
        assert pair is not None
        _assert_solves(pair, component)
    assert stats["residual"].max() <= 10 * spectral.TOL
    assert stats["done_at"][1] == spectral.BASIS  # 25 vertices: exact after the first basis
    assert stats["products"] < spectral.MAX_PRODUCTS


def test_a_components_bytes_do_not_depend_on_the_others_in_its_solve():
    """What lets the GPU solve every component at once and the CPU one at a time: the same bytes."""
    components = [_connected(3000, 20000, 3), _connected(2100, 5000, 8), *SOLVABLE[:2]]
    adj, bounds = _stack(components)
    together = spectral.thick_restart_lanczos(spectral_cpu.HostOps(adj, bounds), 3, spectral.TOL, spectral.MAX_PRODUCTS)
    for c, (values, vectors) in enumerate(together):
        alone_adj, alone_bounds = _stack([components[c]])
        ((alone_values, alone_vectors),) = spectral.thick_restart_lanczos(
            spectral_cpu.HostOps(alone_adj, alone_bounds), 3, spectral.TOL, spectral.MAX_PRODUCTS
        )
        assert values.tobytes() == alone_values.tobytes() and vectors.tobytes() == alone_vectors.tobytes()
    grouped = spectral.leading_eigenpairs(adj, bounds, 3, "cpu")  # the CPU's grouping
    for (values, vectors), (g_values, g_vectors) in zip(together, grouped, strict=True):
        assert values.tobytes() == g_values.tobytes() and vectors.tobytes() == g_vectors.tobytes()


def test_solve_of_a_knn_graph_agrees_with_scipy_to_its_tolerance():
    """A kNN graph of a 1-D curve (close eigenvalues): eigenvalues within the residual, the layout SciPy's."""
    graph = _curve_graph()
    adj = init_mod._adjacency(graph)
    assert connected_components(graph.head, graph.tail, graph.n_vertices)[0] == 1
    ((values, vectors),) = spectral.leading_eigenpairs(adj, np.array([0, adj.shape[0]]), 3, "cpu")
    _assert_solves((values, vectors), adj)
    ref_vectors = _dense_top(adj, 3)[1]
    layout = spectral_init(graph, 2, seed=0)
    ref = init_mod._fix_signs(ref_vectors[:, 1:])
    ref = 10.0 * ref / np.abs(ref).max()
    np.testing.assert_allclose(layout, ref, atol=0.05)


def test_spectral_init_repeats_its_bytes_with_any_thread_count():
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs NUMBA_NUM_THREADS >= 2 to compare thread counts")
    graph = _graph_of([_connected(3000, 9000, 1), _connected(1200, 3000, 5), _connected(40, 90, 6)])
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = spectral_init(graph, 2, seed=0)
        assert one.tobytes() == spectral_init(graph, 2, seed=0).tobytes()
        numba.set_num_threads(2)
        two = spectral_init(graph, 2, seed=0)
    finally:
        numba.set_num_threads(before)
    assert one.tobytes() == two.tobytes()


def test_disconnected_graph_solves_each_component_in_one_batch(monkeypatch):
    """Every component above 2 * dim + 1 vertices goes into one solve; each keeps its own eigenvectors."""
    components = [_connected(1500, 6000, 1), _connected(300, 900, 4), _connected(40, 90, 6), _connected(4, 4, 7)]
    graph = _graph_of(components)
    sizes = []
    solve = spectral.leading_eigenpairs

    def recording(adj, bounds, n_vec, device, stats=None):
        sizes.append(sorted(np.diff(bounds)))
        return solve(adj, bounds, n_vec, device, stats)

    monkeypatch.setattr(init_mod, "leading_eigenpairs", recording)
    layout = spectral_init(graph, 2, seed=0)
    assert sizes == [[40, 300, 1500]]  # the 4-vertex component is scattered at random, as before
    assert np.isfinite(layout).all() and np.abs(layout).max() <= 10.0 + 1e-3


def test_a_component_that_does_not_converge_is_placed_at_random_with_the_warning(monkeypatch):
    components = [_connected(1500, 6000, 1), _chain(1200)]
    graph = _graph_of(components)
    monkeypatch.setattr(spectral, "MAX_PRODUCTS", 400)  # the first needs ~110, the chain ~2,600
    with pytest.warns(UserWarning, match="did not converge on 1 component"):
        layout = spectral_init(graph, 2, seed=0)
    assert np.isfinite(layout).all()


def test_gpu_out_of_memory_solves_on_the_cpu_with_a_warning(monkeypatch):
    """No GPU needed: the memory check fails before any GPU work, and the CPU twin gives the bytes."""
    graph = _graph_of([_connected(1500, 6000, 1), _connected(300, 900, 4)])

    def no_memory(n, n_vec):
        raise MemoryError("the eigen-solve's vectors need 1,000,000,000,000 bytes")

    monkeypatch.setattr(spectral, "check_gpu_memory", no_memory)
    monkeypatch.setattr(init_mod, "resolve_device", lambda device: device)
    with pytest.warns(UserWarning, match="ran out of memory.*solving on the CPU"):
        layout = spectral_init(graph, 2, seed=0, device="gpu")
    assert layout.tobytes() == spectral_init(graph, 2, seed=0).tobytes()


def test_random_init_is_host_numpy_and_depends_on_the_seed_only():
    """One generator on the host for every device: the optimizer's start on the GPU is these bytes too."""
    first = random_init(1000, 2, 5)
    assert isinstance(first, np.ndarray) and first.dtype == np.float32
    assert first.tobytes() == random_init(1000, 2, 5).tobytes()
    assert first.tobytes() == np.random.default_rng([5, 1]).uniform(-10, 10, (1000, 2)).astype(np.float32).tobytes()


# -- on the GPU --------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_primitives_give_the_cpu_twins_bytes():
    import cupy as cp  # noqa: PLC0415 - GPU only: CuPy is absent where there is no GPU

    adj, bounds = _stack(TILED)
    gpu, host = spectral_gpu.DeviceOps(adj, bounds), spectral_cpu.HostOps(adj, bounds)
    rng = np.random.default_rng(0)
    V, x = rng.standard_normal((7, adj.shape[0])), rng.standard_normal(adj.shape[0])
    coef, add = rng.standard_normal((len(TILED), 5)), rng.standard_normal(adj.shape[0])
    assert gpu.seg_dots(cp.asarray(V), 5, cp.asarray(x)).get().tobytes() == host.seg_dots(V, 5, x).tobytes()
    got = gpu.combine(cp.asarray(V), 5, cp.asarray(coef), cp.asarray(add), -1.0).get()
    assert got.tobytes() == host.combine(V, 5, coef, add, -1.0).tobytes()
    assert gpu.matvec(cp.asarray(x)).get().tobytes() == host.matvec(x).tobytes()


@pytest.mark.gpu
@pytest.mark.parametrize("first", [0, spectral.KEEP])
def test_gpu_lanczos_steps_give_the_cpu_fused_twins_bytes(first):
    """DeviceOps.extend_basis (the generic steps on the GPU's primitives) against HostOps.extend_basis (fused)."""
    import cupy as cp  # noqa: PLC0415 - GPU only: CuPy is absent where there is no GPU

    adj, bounds = _stack(LANCZOS_GRAPH)
    host, gpu = spectral_cpu.HostOps(adj, bounds), spectral_gpu.DeviceOps(adj, bounds)
    V, H, arrow = _lanczos_state(host, bounds, first)
    V_gpu, H_gpu = cp.asarray(V), cp.asarray(H)
    host.extend_basis(V, H, arrow, first, lanczos.BREAKDOWN)
    gpu.extend_basis(V_gpu, H_gpu, arrow, first, lanczos.BREAKDOWN)
    assert V_gpu.get().tobytes() == V.tobytes() and H_gpu.get().tobytes() == H.tobytes()


def _cpu_layouts(graph, seed):
    """spectral_init on the CPU with 1 and 2 Numba threads."""
    before = numba.get_num_threads()
    try:
        out = []
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            out.append(spectral_init(graph, 2, seed=seed))
        return out
    finally:
        numba.set_num_threads(before)


@pytest.mark.gpu
def test_gpu_spectral_init_of_a_connected_knn_graph_is_the_cpus_bytes(mixture_graph):
    _, graph = mixture_graph
    gpu = spectral_init(graph, 2, seed=0, device="gpu")
    assert gpu.tobytes() == spectral_init(graph, 2, seed=0, device="gpu").tobytes()
    for cpu in _cpu_layouts(graph, 0):
        assert cpu.tobytes() == gpu.tobytes()
    curve = _curve_graph()
    assert spectral_init(curve, 2, seed=1, device="gpu").tobytes() == spectral_init(curve, 2, seed=1).tobytes()


@pytest.mark.gpu
def test_gpu_spectral_init_of_a_disconnected_graph_is_the_cpus_bytes(monkeypatch):
    """Components of every size, one that does not converge (random in its cell, the same warning on both)."""
    graph = _graph_of([*SOLVABLE, *TILED, _chain(1200)])
    monkeypatch.setattr(spectral, "MAX_PRODUCTS", 400)  # the chain needs ~2,600
    with pytest.warns(UserWarning, match="did not converge on 1 component"):
        gpu = spectral_init(graph, 2, seed=3, device="gpu")
    with pytest.warns(UserWarning, match="did not converge on 1 component"):
        for cpu in _cpu_layouts(graph, 3):
            assert cpu.tobytes() == gpu.tobytes()


@pytest.mark.gpu
def test_gpu_random_init_is_the_cpus_bytes(mixture_graph):
    _, graph = mixture_graph
    starts = [LayoutOptimizer(graph, init="random", random_state=4, device=d).embedding for d in ("cpu", "gpu")]
    assert starts[0].tobytes() == starts[1].tobytes() == random_init(graph.n_vertices, 2, 4).tobytes()
