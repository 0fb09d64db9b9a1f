"""The batched eigen-solve of many graph components at once (umapviz.graph.spectral_gpu.batched_lanczos).

Its algorithm runs here on NumPy primitives (HostOps, written independently of the GPU kernels); the GPU tests
check the kernels against those primitives and the whole solve against the host's.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp

from umapviz.graph import FuzzyGraph, spectral_cpu, spectral_gpu
from umapviz.graph import init as init_mod


class HostOps:
    """batched_lanczos's primitives in NumPy and SciPy, for rows grouped by component (``bounds``)."""

    def __init__(self, adj: sp.csr_matrix, bounds: np.ndarray):
        self.xp, self.n, self.bounds = np, adj.shape[0], np.asarray(bounds)
        adj = adj.astype(np.float64)  # degrees summed in float64, as the GPU sums them
        d = 1.0 / np.sqrt(np.asarray(adj.sum(axis=1)).ravel())
        self._M = (sp.diags(d) @ adj @ sp.diags(d)).tocsr()
        self.comp_of = np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))

    def matvec(self, x):
        return self._M @ x

    def seg_dots(self, V, k, x):
        return np.add.reduceat(V[:k] * x, self.bounds[:-1], axis=1).T

    def combine(self, V, k, coef, add, sign):
        return add + sign * np.einsum("jr,rj->r", V[:k], coef[self.comp_of][:, :k])


def _connected(n: int, extra: int, seed: int) -> sp.csr_matrix:
    """A path through all n vertices plus random weighted chords: connected, irregular."""
    rng = np.random.default_rng(seed)
    head = np.concatenate([np.arange(n - 1), rng.integers(0, n, extra)])
    tail = np.concatenate([np.arange(1, n), rng.integers(0, n, extra)])
    keep = head != tail
    adj = sp.coo_matrix((rng.uniform(0.1, 1.0, keep.sum()), (head[keep], tail[keep])), shape=(n, n))
    return (adj + adj.T).tocsr()


def _grid(rows: int, cols: int) -> sp.csr_matrix:
    """A rectangular grid: its second and third eigenvalues are close (1.3e-4 apart at 40 x 41).

    (A square grid's are equal. Lanczos from one start vector, ARPACK's included, finds such a repeated
    eigenvalue once: the start's Krylov space holds one direction of its eigenspace.)"""
    path = [sp.diags([1.0, 1.0], [-1, 1], shape=(m, m)) for m in (rows, cols)]
    return (sp.kron(path[0], sp.eye(cols)) + sp.kron(sp.eye(rows), path[1])).tocsr()


def _chain(n: int) -> sp.csr_matrix:
    """A path of random weights: its leading eigenvalues crowd 1 within 1e-4, too close for a few hundred
    Lanczos steps (random weights: no symmetry, so no repeated eigenvalue)."""
    weight = np.random.default_rng(7).uniform(0.5, 1.5, n - 1)
    adj = sp.coo_matrix((weight, (np.arange(n - 1), np.arange(1, n))), shape=(n, n))
    return (adj + adj.T).tocsr()


def _stack(components):
    adj = sp.block_diag(components, format="csr")
    return adj, np.cumsum([0] + [c.shape[0] for c in components])


def _dense_top(component: sp.csr_matrix, n_vec: int):
    d = 1.0 / np.sqrt(np.asarray(component.sum(axis=1)).ravel())
    values, vectors = scipy.linalg.eigh((sp.diags(d) @ component @ sp.diags(d)).toarray())
    return values[-n_vec:], vectors[:, -n_vec:]


def _assert_solves(pair, component, n_vec=3):
    values, vectors = pair
    ref_values, ref_vectors = _dense_top(component, n_vec)
    np.testing.assert_allclose(np.sort(values), ref_values, atol=1e-9)
    cosines = np.linalg.svd(ref_vectors.T @ vectors, compute_uv=False)  # of the principal angles
    assert cosines.min() > 1 - 1e-9, cosines


# The grid has a close pair; the 25-vertex component exhausts its Krylov space before the first check.
SOLVABLE = [_connected(1500, 6000, 1), _grid(40, 41), _connected(25, 60, 2), _connected(3000, 20000, 3)]


def test_batched_lanczos_finds_every_components_leading_eigenpairs():
    adj, bounds = _stack(SOLVABLE)
    stats = {}
    pairs = spectral_gpu.batched_lanczos(HostOps(adj, bounds), 3, 1e-6, 300, stats)
    for pair, component in zip(pairs, SOLVABLE, strict=True):
        assert pair is not None
        _assert_solves(pair, component)
    assert stats["steps"] < 300 and stats["converged_at"].max() == stats["steps"]  # all converged: it stopped early
    assert 0 < stats["converged_at"][2] <= 30  # exact by the first check after its 25-vector Krylov space ran out
    assert stats["residual"].max() <= 1e-6


def test_batched_lanczos_leaves_an_unconverged_component_to_the_caller():
    components = [SOLVABLE[0], _chain(1200), SOLVABLE[3]]
    adj, bounds = _stack(components)
    stats = {}
    pairs = spectral_gpu.batched_lanczos(HostOps(adj, bounds), 3, 1e-6, 200, stats)
    assert pairs[1] is None and stats["steps"] == 200 and stats["residual"][1] > 1e-5
    _assert_solves(pairs[0], components[0])
    _assert_solves(pairs[2], components[2])


def test_batched_lanczos_with_too_few_steps_solves_nothing():
    adj, bounds = _stack(SOLVABLE[:2])
    assert spectral_gpu.batched_lanczos(HostOps(adj, bounds), 3, 1e-6, 2) == [None, None]


def _graph_of(components, seed=0):
    """A FuzzyGraph of the components with their vertices shuffled over the ids, as a kNN graph's clusters are."""

    adj, _ = _stack(components)
    perm = np.random.default_rng(seed).permutation(adj.shape[0])
    coo = adj[perm][:, perm].tocoo()
    order = np.lexsort((coo.col, coo.row))
    weight = coo.data[order].astype(np.float32)
    dummy = np.zeros((adj.shape[0], 2))
    return FuzzyGraph(coo.row[order].astype(np.int32), coo.col[order].astype(np.int32), weight,
                      weight.max() / weight.astype(np.float64), dummy.astype(np.int32), dummy.astype(np.float32),
                      1.577, 0.895, 200)


def test_spectral_init_solves_large_components_together_and_the_rest_alone(monkeypatch):
    """No GPU needed: the batched solve runs on HostOps, and the per-component GPU solve is replaced by one that
    fails, so what the batched solve leaves (the chain) goes to SciPy. The layout is the CPU's own (its sparse
    solves at a tolerance tight enough to compare with)."""
    graph = _graph_of([_connected(1500, 6000, 1), _chain(1200), _connected(1100, 3000, 5), _connected(300, 900, 4)])
    batched_sizes, single_sizes = [], []

    def host_batched(sub, bounds, n_vec, tol, stats=None):
        batched_sizes.extend(np.diff(bounds))
        return spectral_gpu.batched_lanczos(HostOps(sub, bounds), n_vec, tol, spectral_gpu.BATCH_STEPS, stats)

    def failing_single(sub, n_vec, tol, stats=None):
        single_sizes.append(sub.shape[0])
        return None

    monkeypatch.setattr(spectral_gpu, "leading_eigenpairs_batched", host_batched)
    monkeypatch.setattr(spectral_gpu, "leading_eigenpairs_gpu", failing_single)
    monkeypatch.setattr(init_mod, "resolve_device", lambda device: device)
    monkeypatch.setattr(spectral_cpu, "_EIGEN_TOL", 1e-10)
    with pytest.warns(UserWarning, match="GPU eigen-solve did not converge"):
        gpu = init_mod.spectral_init(graph, 2, seed=0, device="gpu")
    assert sorted(batched_sizes) == [1100, 1200, 1500]  # the three of more than 1,000 vertices, together
    assert single_sizes == [1200]  # the chain, left by the batched solve
    np.testing.assert_allclose(gpu, init_mod.spectral_init(graph, 2, seed=0), atol=1e-4)


# -- on the GPU ------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_segment_kernels_match_the_host_primitives():
    """Components spanning several tiles, one tile exactly and a few rows; 5 of 7 stored vectors used."""
    import cupy as cp  # noqa: PLC0415 - GPU only: CuPy is absent where there is no GPU

    components = [_connected(5000, 9000, 1), _connected(3, 2, 2), _connected(spectral_gpu._SEG_TILE, 4000, 3),
                  _connected(2 * spectral_gpu._SEG_TILE + 1, 9000, 4)]
    adj, bounds = _stack(components)
    adj = adj.astype(np.float32)  # as the GPU path has it
    gpu, host = spectral_gpu._DeviceOps(adj, bounds), HostOps(adj, bounds)
    rng = np.random.default_rng(0)
    V, x = rng.standard_normal((7, adj.shape[0])), rng.standard_normal(adj.shape[0])
    coef, add = rng.standard_normal((len(components), 5)), rng.standard_normal(adj.shape[0])
    np.testing.assert_allclose(gpu.seg_dots(cp.asarray(V), 5, cp.asarray(x)).get(), host.seg_dots(V, 5, x),
                               rtol=1e-12)
    np.testing.assert_allclose(gpu.combine(cp.asarray(V), 5, cp.asarray(coef), cp.asarray(add), -1.0).get(),
                               host.combine(V, 5, coef, add, -1.0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gpu.matvec(cp.asarray(x)).get(), host.matvec(x), rtol=1e-12, atol=1e-12)


@pytest.mark.gpu
def test_gpu_batched_solve_repeats_its_bytes_and_finds_the_eigenpairs():
    components = [*SOLVABLE, _chain(1200)]
    adj, bounds = _stack(components)
    adj = adj.astype(np.float32)
    runs = [spectral_gpu.leading_eigenpairs_batched(adj, bounds, 3, 1e-6) for _ in range(2)]
    assert runs[0][-1] is None and runs[1][-1] is None  # the chain: not converged, left to the caller
    for first, second, component in zip(runs[0][:-1], runs[1][:-1], components[:-1], strict=True):
        assert first[0].tobytes() == second[0].tobytes() and first[1].tobytes() == second[1].tobytes()
        _assert_solves(first, component.astype(np.float32).astype(np.float64))


@pytest.mark.gpu
def test_gpu_spectral_init_of_clusters_is_the_one_by_one_solves_layout(monkeypatch):
    """Three clusters of more than 1,000 vertices solved together: the layout of solving them one at a time."""
    components = [_connected(1500, 6000, 1), _connected(1100, 3000, 5), _connected(3000, 20000, 3),
                  _connected(300, 900, 4)]
    graph = _graph_of(components)
    solves = []
    batched = spectral_gpu.leading_eigenpairs_batched

    def recording(sub, bounds, n_vec, tol, stats=None):
        solves.append(np.diff(bounds))
        return batched(sub, bounds, n_vec, tol, stats)

    monkeypatch.setattr(spectral_gpu, "leading_eigenpairs_batched", recording)
    together = init_mod.spectral_init(graph, 2, seed=0, device="gpu")
    assert together.tobytes() == init_mod.spectral_init(graph, 2, seed=0, device="gpu").tobytes()
    assert len(solves) == 2 and sorted(solves[0]) == [1100, 1500, 3000]

    def out_of_memory(*args, **kwargs):
        raise MemoryError("Out of memory allocating 1,000,000,000,000 bytes")

    monkeypatch.setattr(spectral_gpu, "leading_eigenpairs_batched", out_of_memory)
    one_by_one = init_mod.spectral_init(graph, 2, seed=0, device="gpu")  # CuPy's eigsh, component by component
    np.testing.assert_allclose(together, one_by_one, atol=1e-3)
    assert together.tobytes() != one_by_one.tobytes()  # two solvers did run
