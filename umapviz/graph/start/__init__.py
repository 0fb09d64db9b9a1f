"""Initial layouts: spectral (normalised Laplacian eigenvectors) or uniform random.

Both draw from ``np.random.default_rng([seed, 1])`` (docs/optimizer.md), so a seed fixes the start exactly.

A disconnected graph has one trivial eigenvector per component, so a single eigen-solve would not separate
them. Each component is laid out on its own and placed in its own cell of a regular grid (largest component
first); components too small for an eigen-solve are scattered at random inside their cell. Every other component
goes into one batched eigen-solve (:mod:`.spectral`), which has CPU and GPU twins that give the same bytes. Where
the start runs on the GPU, the adjacency, its components and the components' grouped rows are built there
(:mod:`.grouped`, :mod:`.components`: the host's arrays and labels); the placement is host NumPy (one stream of
random numbers). So the start layout is the same bytes on either device.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.sparse

from ..._backend import cupy, gpu_available, resolve_device, xp_of
from .._types import FuzzyGraph
from ..matrix import as_fuzzy_graph
from .adjacency import CsrArrays, component_members, components_in_order, device_adjacency, grouped_rows
from .components import connected_components
from .spectral import leading_eigenpairs
from .spectral_sampled import sampled_eigenpairs

INIT_SCALE = 10.0  # layouts span [-10, 10] per axis at most
_NOISE_SCALE = 1e-4  # tiny jitter so coincident spectral coordinates separate
_CELL_FILL = 0.8  # fraction of its cell a component's layout spans
# method="auto" solves on the landmarks' coarse graph (spectral_sampled) above this many vertices: there the full
# solve's sparse products dominate the fit's start, while the sampled start's layout keeps the same
# trustworthiness (bench/RESULTS.md, "Sampled spectral start").
SAMPLED_ABOVE = 2_000_000
# A sampled start still solves a component fully below this many rows (a coarse graph of 64 landmarks or fewer).
SAMPLED_MIN_ROWS = 64 * 64
SPECTRAL_METHODS = ("auto", "full", "sampled")


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), 1])


def random_init(n: int, dim: int, seed: int) -> np.ndarray:
    """``(n, dim)`` float32 uniform in [-10, 10], from ``default_rng([seed, 1])``."""
    return _rng(seed).uniform(-INIT_SCALE, INIT_SCALE, size=(n, dim)).astype(np.float32)


def _adjacency(graph: FuzzyGraph) -> scipy.sparse.csr_matrix:
    """The weighted adjacency as CSR; the edge list is already in CSR order (sorted by head, then tail).

    The graph's float32 weights as they are (no copy: gigabytes at scale); both devices' sparse products take
    them to float64 exactly.
    """
    n = graph.n_vertices
    weight = graph.weight.astype(np.float32, copy=False)
    if graph.nnz and np.all(graph.head[1:] >= graph.head[:-1]):
        # sorted heads: the row pointers by binary search, faster than a bincount pass
        indptr = np.searchsorted(graph.head, np.arange(n + 1, dtype=graph.head.dtype))
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


def _fix_signs(vectors: np.ndarray) -> np.ndarray:
    """Eigenvectors have no intrinsic sign: make each one's largest-magnitude entry positive."""
    pivots = np.abs(vectors).argmax(axis=0)
    signs = np.sign(vectors[pivots, np.arange(vectors.shape[1])])
    signs[signs == 0] = 1.0
    return vectors * signs


def _nontrivial(values: np.ndarray, vectors: np.ndarray, dim: int) -> np.ndarray:
    """The ``dim`` eigenvectors after the trivial (largest) one, by descending eigenvalue, signs fixed."""
    order = np.argsort(-values, kind="stable")
    return _fix_signs(vectors[:, order[1 : dim + 1]])


def _grouped(adj, members, bounds: np.ndarray, comps: list) -> tuple:
    """The adjacency of the given components, their rows one component after another, and its bounds: a SciPy
    matrix for a SciPy ``adj``, :class:`.grouped.CsrArrays` on the GPU for CuPy ones (``members`` there too)."""
    if len(comps) == 1 and bounds[comps[0] + 1] - bounds[comps[0]] == adj.shape[0]:
        return adj, np.array([0, adj.shape[0]])  # one component: no copy
    xp = np if isinstance(adj, scipy.sparse.csr_matrix) else xp_of(adj.indices)
    group_bounds = np.concatenate([[0], np.cumsum(np.diff(bounds)[np.asarray(comps, dtype=np.int64)])])
    if xp is np:
        grouped = np.concatenate([members[bounds[c] : bounds[c + 1]] for c in comps])
    else:
        grouped = components_in_order(members, bounds, comps, xp)
    position = xp.empty(adj.shape[0], dtype=xp.int32)  # each vertex's row in the grouped matrix
    position[grouped] = xp.arange(grouped.size, dtype=xp.int32)
    if xp is np:
        return _component_adjacency(adj, grouped, position), group_bounds
    if grouped.size == adj.shape[0] and bool((grouped == xp.arange(grouped.size)).all()):
        return adj, group_bounds  # every row, in order: no copy
    return grouped_rows(adj, grouped, position, xp), group_bounds


def _solve_components(
    adj: scipy.sparse.csr_matrix,
    members: np.ndarray,
    bounds: np.ndarray,
    comps: list,
    dim: int,
    device: str,
    sampled: bool = False,
    seed: int = 0,
    stats: dict | None = None,
    seconds: dict | None = None,
) -> dict:
    """``{component: coordinates}`` for the given components, solved together (:func:`spectral.leading_eigenpairs`,
    or :func:`spectral_sampled.sampled_eigenpairs` with ``sampled``) on ``device``; a component that did not
    converge is missing. Where the GPU has too little memory, the CPU solves instead: the same bytes, more
    slowly. ``seconds["grouped"]`` (where given) adds the seconds of the components' grouped copy."""
    if not comps:
        return {}
    start = time.perf_counter()
    try:
        grouped_adj, group_bounds = _grouped(adj, members, bounds, comps)
    except MemoryError as exc:  # the GPU's copy of the components' rows: the host makes it instead
        if not isinstance(adj, CsrArrays):
            raise
        warnings.warn(
            f"spectral_init: the components' adjacency did not fit on the GPU ({exc}); grouping it on "
            "the host instead (the same result, more slowly).",
            UserWarning,
            stacklevel=3,
        )
        grouped_adj, group_bounds = _grouped(adj.to_host(), members.get(), bounds, comps)
    if seconds is not None:
        seconds["grouped"] = seconds.get("grouped", 0.0) + time.perf_counter() - start

    def solve(on: str) -> list:
        if sampled:
            return sampled_eigenpairs(grouped_adj, group_bounds, dim + 1, seed, on, stats)
        return leading_eigenpairs(grouped_adj, group_bounds, dim + 1, on, stats)

    try:
        pairs = solve(device)
    except MemoryError as exc:  # CuPy's OutOfMemoryError is one, and names the bytes it wanted
        warnings.warn(
            f"spectral_init: the GPU eigen-solve ran out of memory ({exc}); solving on the CPU "
            "instead (the same result, more slowly).",
            UserWarning,
            stacklevel=3,
        )
        if isinstance(grouped_adj, CsrArrays):
            grouped_adj = grouped_adj.to_host()
        pairs = solve("cpu")
    return {c: _nontrivial(*pair, dim) for c, pair in zip(comps, pairs, strict=True) if pair is not None}


def _device_start(graph: FuzzyGraph, device: str):
    """On the GPU, where the edge list is sorted by head (as a FuzzyGraph's is): the adjacency, its components and
    their members built on the device (:mod:`.grouped`, :mod:`.components`), with no host CSR; the same arrays and
    labels as the host's. None elsewhere, or where the GPU lacks the memory (with a warning): the host builds them.

    Returns ``(adjacency, n_comp, members on the GPU, bounds, seconds of each step)``.
    """
    if device != "gpu" or not graph.nnz or not gpu_available():
        return None
    cp = cupy()
    clock = time.perf_counter()
    try:
        adj, head = device_adjacency(graph, cp)
        if not bool((head[1:] >= head[:-1]).all()):
            return None
        cp.cuda.Device().synchronize()
        adjacency = time.perf_counter()
        n_comp, labels = connected_components(head, adj.indices, graph.n_vertices, device="gpu")
        del head
        cp.cuda.Device().synchronize()
        components = time.perf_counter()
        members, bounds = component_members(labels, n_comp, cp)
        del labels
    except MemoryError as exc:  # CuPy's OutOfMemoryError is one
        warnings.warn(
            f"spectral_init: the graph's adjacency did not fit on the GPU ({exc}); building it on the "
            "host instead (the same result, more slowly).",
            UserWarning,
            stacklevel=3,
        )
        cp.get_default_memory_pool().free_all_blocks()
        return None
    cp.cuda.Device().synchronize()
    seconds = {
        "adjacency": adjacency - clock,
        "components": components - adjacency,
        "members": time.perf_counter() - components,
    }
    return adj, n_comp, members, bounds, seconds


def resolve_spectral_method(method: str, n_vertices: int) -> str:
    """``"full"`` or ``"sampled"``: ``method`` itself, or for ``"auto"`` the sampled start above
    ``SAMPLED_ABOVE`` vertices.

    Parameters
    ----------
    method : str
        ``"auto"``, ``"full"`` or ``"sampled"``.
    n_vertices : int
        Vertices of the graph.
    """
    if method not in SPECTRAL_METHODS:
        raise ValueError(f"method={method!r} is not known; use one of {SPECTRAL_METHODS}.")
    if method == "auto":
        return "sampled" if n_vertices > SAMPLED_ABOVE else "full"
    return method


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


def spectral_init(
    graph: FuzzyGraph, dim: int, seed: int, device: str = "cpu", method: str = "auto", stats: dict | None = None
) -> np.ndarray:
    """``(n, dim)`` float32 spectral layout, scaled to a largest absolute coordinate of 10, plus noise of scale 1e-4.

    Works on disconnected graphs: each component gets its own grid cell (largest first). Singletons and
    components of at most ``2 * dim + 1`` vertices, or ones whose eigen-solve does not converge (with a warning),
    are placed uniformly at random inside their cell. The others are solved together by
    :func:`umapviz.graph.start.spectral.leading_eigenpairs` on ``device``: the CPU (any Numba thread count) and the
    GPU give the same bytes. Where the GPU lacks the memory, the CPU solves instead (with a warning).

    The sampled start (``method="sampled"``, and ``"auto"`` above ``SAMPLED_ABOVE`` vertices) solves each
    component of at least ``SAMPLED_MIN_ROWS`` vertices on a coarse graph of seeded landmarks and interpolates
    the result (:mod:`umapviz.graph.start.spectral_sampled`): far fewer sparse products on the whole graph, the same
    bytes on either device too.

    Parameters
    ----------
    graph : FuzzyGraph
        The graph to lay out.
    dim : int
        Dimensions of the layout.
    seed : int
        Seeds the random placements and the noise (``default_rng([seed, 1])``).
    device : str
        ``"cpu"``, ``"gpu"`` or ``"auto"``: where the eigen-solve runs.
    method : str
        ``"full"`` (the eigen-solve on the whole graph), ``"sampled"`` (on the landmarks' coarse graph; its
        landmarks drawn from ``default_rng([seed, 3])``) or ``"auto"`` (sampled above ``SAMPLED_ABOVE``
        vertices).
    stats : dict, optional
        Receives ``method`` (the one used) and, under ``"full"`` and ``"sampled"``, the stats of each solve
        (those of :func:`umapviz.graph.start.spectral.thick_restart_lanczos` and of
        :func:`umapviz.graph.start.spectral_sampled.sampled_eigenpairs`; None where it had no component), and
        ``seconds``: each step's wall time (``adjacency``, ``components``, ``members``, ``solve_full``,
        ``solve_sampled``, ``place``; ``grouped``, the components' grouped copies, is part of the solves'; on the
        GPU ``device``, the first three together with the members' copy to the host).
    """
    graph = as_fuzzy_graph(graph)  # a fitted UMAP's graph_ (the matrix) still works, with a FutureWarning
    device = resolve_device(device)
    n = graph.n_vertices
    method = resolve_spectral_method(method, n)
    sampled = method == "sampled"
    full_stats: dict | None = None if stats is None else {}
    sampled_stats: dict | None = None if stats is None else {}
    if dim < 1:
        raise ValueError(f"dim={dim} must be at least 1.")
    rng = _rng(seed)
    seconds: dict = {}
    clock = [time.perf_counter()]

    def lap(step: str) -> None:
        now = time.perf_counter()
        seconds[step], clock[0] = now - clock[0], now

    on_device = _device_start(graph, device)
    if on_device is None:
        adj = _adjacency(graph)
        lap("adjacency")
        n_comp, labels = connected_components(graph.head, graph.tail, n)
        lap("components")
        members, bounds, _ = _component_members(labels, np.bincount(labels, minlength=n_comp))
        grouping = members
        lap("members")
    else:
        adj, n_comp, grouping, bounds, seconds_on_device = on_device
        members = grouping.get()
        lap("device")
        seconds.update(seconds_on_device)
    sizes = np.diff(bounds)
    by_size = np.argsort(-sizes, kind="stable")  # largest first; ties by label (lowest vertex first)
    centres, width = _grid_centres(n_comp, dim)
    half = 0.5 * _CELL_FILL * width

    layout = np.empty((n, dim))
    solvable = [comp for comp in by_size if sizes[comp] > 2 * dim + 1]
    coarse = [comp for comp in solvable if sampled and sizes[comp] >= SAMPLED_MIN_ROWS]
    coarse_set = set(coarse)
    solved = _solve_components(
        adj,
        grouping,
        bounds,
        [c for c in solvable if c not in coarse_set],
        dim,
        device,
        stats=full_stats,
        seconds=seconds,
    )
    lap("solve_full")
    solved.update(
        _solve_components(
            adj, grouping, bounds, coarse, dim, device, sampled=True, seed=seed, stats=sampled_stats, seconds=seconds
        )
    )
    lap("solve_sampled")
    del adj, grouping
    failed = len(solvable) - len(solved)
    for cell, comp in enumerate(by_size):
        verts = members[bounds[comp] : bounds[comp + 1]]
        coords = solved.get(comp)
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
    layout = layout.astype(np.float32)
    lap("place")
    if stats is not None:
        stats.update(method=method, full=full_stats or None, sampled=sampled_stats or None, seconds=seconds)
    return layout
