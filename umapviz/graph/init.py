"""Initial layouts: spectral (normalised Laplacian eigenvectors) or uniform random.

Both draw from ``np.random.default_rng([seed, 1])`` (docs/optimizer.md), so a seed fixes the start exactly.

A disconnected graph has one trivial eigenvector per component, so a single eigen-solve would not separate
them. Each component is laid out on its own and placed in its own cell of a regular grid (largest component
first); components too small for an eigen-solve are scattered at random inside their cell.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse
import scipy.sparse.csgraph

from .._backend import resolve_device
from ._types import FuzzyGraph
from .spectral_cpu import DENSE_EIGEN_MAX, host_eigenpairs

INIT_SCALE = 10.0  # layouts span [-10, 10] per axis at most
_NOISE_SCALE = 1e-4  # tiny jitter so coincident spectral coordinates separate
# The GPU's products are cheap, and at 1e-4 its Lanczos left a noisy curve's layout 0.15 (of 10) from the dense
# solve's where ARPACK's stays within 0.05 (tests/test_gpu.py).
_GPU_EIGEN_TOL = 1e-6
_CELL_FILL = 0.8  # fraction of its cell a component's layout spans


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), 1])


def random_init(n: int, dim: int, seed: int) -> np.ndarray:
    """``(n, dim)`` float32 uniform in [-10, 10], from ``default_rng([seed, 1])``."""
    return _rng(seed).uniform(-INIT_SCALE, INIT_SCALE, size=(n, dim)).astype(np.float32)


def _adjacency(graph: FuzzyGraph, dtype: type = np.float64) -> scipy.sparse.csr_matrix:
    """The weighted adjacency as CSR; the edge list is already in CSR order (sorted by head, then tail).

    float64 for SciPy's solves; the GPU's take the float32 weights as they are (no copy: gigabytes at scale).
    """
    n = graph.n_vertices
    weight = graph.weight.astype(dtype, copy=False)
    if graph.nnz and np.all(graph.head[1:] >= graph.head[:-1]):
        indptr = np.searchsorted(graph.head, np.arange(n + 1, dtype=graph.head.dtype))  # 10x a bincount's speed
        return scipy.sparse.csr_matrix((weight, graph.tail, indptr), shape=(n, n))
    return scipy.sparse.csr_matrix((weight, (graph.head, graph.tail)), shape=(n, n))


def _component_members(labels: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``members[bounds[c] : bounds[c + 1]]``: the vertices of component ``c``, ascending; ``local``: each
    vertex's position among them."""
    members = np.argsort(labels, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    local = np.empty(labels.size, dtype=np.int32)
    local[members] = np.arange(labels.size) - bounds[labels[members]]
    return members, bounds, local


def _component_adjacency(adj: scipy.sparse.csr_matrix, verts: np.ndarray, local: np.ndarray) -> scipy.sparse.csr_matrix:
    """``adj[verts][:, verts]`` for the ascending vertices of one connected component, whose position in it
    is ``local[vertex]``: every column of those rows lies in the component, so the columns need no search."""
    rows = adj[verts]
    return scipy.sparse.csr_matrix((rows.data, local[rows.indices], rows.indptr), shape=(verts.size, verts.size))


def _components(adj: scipy.sparse.csr_matrix) -> tuple[int, np.ndarray]:
    """Connected components of the symmetric adjacency, labelled in the order of their lowest vertex.

    On a symmetric graph the strong components are the connected ones, and SciPy finds those without the
    transpose its undirected search builds, several times faster at a million vertices.
    """
    n_comp, labels = scipy.sparse.csgraph.connected_components(adj, directed=True, connection="strong")
    first = np.full(n_comp, adj.shape[0], dtype=np.int64)
    np.minimum.at(first, labels, np.arange(adj.shape[0]))
    rank = np.empty(n_comp, dtype=np.int32)
    rank[np.argsort(first)] = np.arange(n_comp, dtype=np.int32)
    return n_comp, rank[labels]


def _fix_signs(vectors: np.ndarray) -> np.ndarray:
    """Eigenvectors have no intrinsic sign: make each one's largest-magnitude entry positive."""
    pivots = np.abs(vectors).argmax(axis=0)
    signs = np.sign(vectors[pivots, np.arange(vectors.shape[1])])
    signs[signs == 0] = 1.0
    return vectors * signs


def _component_spectral(adj: scipy.sparse.csr_matrix, dim: int, seed: int, device: str) -> np.ndarray | None:
    """``dim`` leading non-trivial eigenvectors of one connected component's normalised Laplacian.

    The smallest eigenvectors of ``L = I - D^-1/2 W D^-1/2`` are the largest of ``M = D^-1/2 W D^-1/2``,
    which is what is solved for: on the GPU for ``device="gpu"`` (sparse solves only; the CPU takes over if it
    does not converge), else with SciPy. Returns None when no solver converges.
    """
    n_vec = dim + 1
    solved = None
    if device == "gpu" and adj.shape[0] > DENSE_EIGEN_MAX:
        from .spectral_gpu import leading_eigenpairs_gpu  # noqa: PLC0415 - the GPU path, loaded on its first use

        try:
            solved, why = leading_eigenpairs_gpu(adj, n_vec, _GPU_EIGEN_TOL), "did not converge"
        except MemoryError as exc:  # CuPy's OutOfMemoryError is one, and names the bytes it wanted
            solved, why = None, f"ran out of GPU memory ({exc})"
        if solved is None:
            warnings.warn(f"spectral_init: the GPU eigen-solve {why}; solving on the CPU instead.",
                          UserWarning, stacklevel=3)
    if solved is None:
        solved = host_eigenpairs(adj, n_vec, seed)
    return None if solved is None else _nontrivial(*solved, dim)


def _nontrivial(values: np.ndarray, vectors: np.ndarray, dim: int) -> np.ndarray:
    """The ``dim`` eigenvectors after the trivial (largest) one, by descending eigenvalue, signs fixed."""
    order = np.argsort(values, kind="stable")[::-1]
    return _fix_signs(vectors[:, order[1 : dim + 1]])


def _batched_gpu_spectral(
    adj: scipy.sparse.csr_matrix, members: np.ndarray, bounds: np.ndarray, comps: list, dim: int
) -> dict:
    """``{component: coordinates}`` for the given components, solved together on the GPU; a component missing
    from the result (not converged, or none at all when the solve does not fit in GPU memory) is left to
    :func:`_component_spectral`."""
    from .spectral_gpu import leading_eigenpairs_batched  # noqa: PLC0415 - the GPU path, loaded on its first use

    verts = [members[bounds[c] : bounds[c + 1]] for c in comps]
    grouped = np.concatenate(verts)
    position = np.empty(adj.shape[0], dtype=np.int32)  # each vertex's row in the grouped matrix
    position[grouped] = np.arange(grouped.size, dtype=np.int32)
    group_bounds = np.concatenate([[0], np.cumsum([v.size for v in verts])])
    try:
        pairs = leading_eigenpairs_batched(
            _component_adjacency(adj, grouped, position), group_bounds, dim + 1, _GPU_EIGEN_TOL)
    except MemoryError:  # CuPy's OutOfMemoryError is one
        return {}
    return {c: _nontrivial(*pair, dim) for c, pair in zip(comps, pairs, strict=True) if pair is not None}


def _grid_centres(n_cells: int, dim: int) -> tuple[np.ndarray, float]:
    """Centres of the first ``n_cells`` cells of a regular grid on [-1, 1]^dim, and the cell width."""
    side = max(1, int(round(n_cells ** (1.0 / dim))))
    while side**dim < n_cells:
        side += 1
    width = 2.0 / side
    cell = np.arange(n_cells)
    centres = np.empty((n_cells, dim))
    for axis in range(dim):
        centres[:, axis] = -1.0 + width * ((cell // side**axis) % side + 0.5)
    return centres, width


def spectral_init(graph: FuzzyGraph, dim: int, seed: int, device: str = "cpu") -> np.ndarray:
    """``(n, dim)`` float32 spectral layout, scaled to max |coordinate| 10, plus noise of scale 1e-4.

    Works on disconnected graphs: each component gets its own grid cell (largest first). Singletons and
    components of at most ``2 * dim + 1`` vertices, or ones whose eigen-solve fails (with a warning), are
    placed uniformly at random inside their cell. ``device="gpu"`` solves components of more than 1,000
    vertices on the GPU (:mod:`umapviz.graph.spectral_gpu`; the same bytes every run, not the CPU's bytes): two
    or more such components together in one batched solve, a component it leaves unsolved (or a single one) by
    itself.
    """
    device = resolve_device(device)
    n = graph.n_vertices
    if dim < 1:
        raise ValueError(f"dim={dim} must be at least 1.")
    rng = _rng(seed)
    adj = _adjacency(graph, np.float32 if device == "gpu" else np.float64)
    n_comp, labels = _components(adj)
    sizes = np.bincount(labels, minlength=n_comp)
    by_size = np.argsort(-sizes, kind="stable")  # largest first; ties by label (lowest vertex first)
    centres, width = _grid_centres(n_comp, dim)
    half = 0.5 * _CELL_FILL * width

    layout = np.empty((n, dim))
    members, bounds, local = _component_members(labels, sizes)
    sparse = [comp for comp in by_size if sizes[comp] > DENSE_EIGEN_MAX]
    batched = _batched_gpu_spectral(adj, members, bounds, sparse, dim) if device == "gpu" and len(sparse) > 1 else {}
    failed = 0
    for cell, comp in enumerate(by_size):
        verts = members[bounds[comp] : bounds[comp + 1]]
        coords = batched.get(comp)
        if coords is None and verts.size > 2 * dim + 1:
            sub = adj if n_comp == 1 else _component_adjacency(adj, verts, local)
            coords = _component_spectral(sub, dim, seed, device)
            failed += coords is None
        if coords is None:
            coords = rng.uniform(-1.0, 1.0, size=(verts.size, dim))
        else:
            peak = np.abs(coords).max()
            coords = coords / peak if peak > 0 else coords
        layout[verts] = centres[cell] + half * coords
    if failed:
        warnings.warn(
            f"spectral_init: the eigen-solver did not converge on {failed} component(s); those were placed "
            "at random in their cells. Consider init='random'.",
            UserWarning,
            stacklevel=2,
        )
    peak = np.abs(layout).max()
    if peak > 0:
        layout *= INIT_SCALE / peak
    layout += rng.normal(scale=_NOISE_SCALE, size=layout.shape)
    return layout.astype(np.float32)
