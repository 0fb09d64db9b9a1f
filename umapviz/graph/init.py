"""Initial layouts: spectral (normalised Laplacian eigenvectors) or uniform random.

Both draw from ``np.random.default_rng([seed, 1])`` (docs/optimizer.md), so a seed fixes the start exactly.

A disconnected graph has one trivial eigenvector per component, so a single eigen-solve would not separate
them. Each component is laid out on its own and placed in its own cell of a regular grid (largest component
first); components too small for an eigen-solve are scattered at random inside their cell.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.csgraph
import scipy.sparse.linalg

from ._types import FuzzyGraph

INIT_SCALE = 10.0  # layouts span [-10, 10] per axis at most
_NOISE_SCALE = 1e-4  # tiny jitter so coincident spectral coordinates separate
_DENSE_EIGEN_MAX = 1000  # components up to this size use a dense eigen-solver (robust, fast enough)
_CELL_FILL = 0.8  # fraction of its cell a component's layout spans


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), 1])


def random_init(n: int, dim: int, seed: int) -> np.ndarray:
    """``(n, dim)`` float32 uniform in [-10, 10], from ``default_rng([seed, 1])``."""
    return _rng(seed).uniform(-INIT_SCALE, INIT_SCALE, size=(n, dim)).astype(np.float32)


def _adjacency(graph: FuzzyGraph) -> scipy.sparse.csr_matrix:
    n = graph.n_vertices
    return scipy.sparse.csr_matrix((graph.weight.astype(np.float64), (graph.head, graph.tail)), shape=(n, n))


def _fix_signs(vectors: np.ndarray) -> np.ndarray:
    """Eigenvectors have no intrinsic sign: make each one's largest-magnitude entry positive."""
    pivots = np.abs(vectors).argmax(axis=0)
    signs = np.sign(vectors[pivots, np.arange(vectors.shape[1])])
    signs[signs == 0] = 1.0
    return vectors * signs


def _component_spectral(adj: scipy.sparse.csr_matrix, dim: int, seed: int) -> np.ndarray | None:
    """``dim`` leading non-trivial eigenvectors of one connected component's normalised Laplacian.

    The smallest eigenvectors of ``L = I - D^-1/2 W D^-1/2`` are the largest of ``M = D^-1/2 W D^-1/2``,
    which is what is solved for. Returns None when no solver converges.
    """
    n = adj.shape[0]
    degree = np.asarray(adj.sum(axis=1)).ravel()
    inv_sqrt = 1.0 / np.sqrt(degree)
    M = scipy.sparse.diags(inv_sqrt) @ adj @ scipy.sparse.diags(inv_sqrt)
    n_vec = dim + 1
    if n <= _DENSE_EIGEN_MAX:
        _, vectors = scipy.linalg.eigh(M.toarray(), subset_by_index=(n - n_vec, n - 1))
        return _fix_signs(vectors[:, ::-1][:, 1:])  # descending, without the trivial one
    try:
        values, vectors = scipy.sparse.linalg.eigsh(
            M,
            k=n_vec,
            which="LA",
            # UMAP's sqrt(n) Lanczos vectors cost n * sqrt(n) memory (8 GB at 1M) for no measured gain.
            ncv=min(n - 1, max(2 * n_vec + 1, 20)),  # measured: 20 is 5-10x faster than 32 or sqrt(n) at 20k
            tol=1e-4,
            v0=np.ones(n),
            maxiter=5 * n,
        )
    except (scipy.sparse.linalg.ArpackNoConvergence, scipy.sparse.linalg.ArpackError):
        try:
            start = np.random.default_rng([int(seed), 3]).normal(size=(n, n_vec))
            start[:, 0] = np.sqrt(degree)  # the known top eigenvector speeds LOBPCG up
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # LOBPCG's own convergence chatter
                values, vectors = scipy.sparse.linalg.lobpcg(M, start, largest=True, tol=1e-4, maxiter=5 * n)
        except Exception:
            return None
    order = np.argsort(values)[::-1]
    return _fix_signs(vectors[:, order[1:n_vec]])


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


def spectral_init(graph: FuzzyGraph, dim: int, seed: int) -> np.ndarray:
    """``(n, dim)`` float32 spectral layout, scaled to max |coordinate| 10, plus noise of scale 1e-4.

    Works on disconnected graphs: each component gets its own grid cell (largest first). Singletons and
    components of at most ``2 * dim + 1`` vertices, or ones whose eigen-solve fails (with a warning), are
    placed uniformly at random inside their cell.
    """
    n = graph.n_vertices
    if dim < 1:
        raise ValueError(f"dim={dim} must be at least 1.")
    rng = _rng(seed)
    adj = _adjacency(graph)
    n_comp, labels = scipy.sparse.csgraph.connected_components(adj, directed=False)
    sizes = np.bincount(labels, minlength=n_comp)
    by_size = np.argsort(-sizes, kind="stable")  # largest first; ties by label (lowest vertex first)
    centres, width = _grid_centres(n_comp, dim)
    half = 0.5 * _CELL_FILL * width

    layout = np.empty((n, dim))
    members = np.argsort(labels, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    failed = 0
    for cell, comp in enumerate(by_size):
        verts = members[bounds[comp] : bounds[comp + 1]]
        coords = None
        if verts.size > 2 * dim + 1:
            sub = adj if n_comp == 1 else adj[verts][:, verts]
            coords = _component_spectral(sub, dim, seed)
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
