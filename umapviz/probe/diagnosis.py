"""Why a point was flung: its degree and rank, the outlier measures, its distance from its graph neighbours, and
how many of its edges' moves one update step sums from a stale row under each strategy (``point_info``);
``flung`` lists the flagged points busiest first."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._backend import to_host, xp_of
from .._validation import check_index, check_int, check_random_state
from ..graph._types import FuzzyGraph
from ..optimize.chunks import chunk_bounds, resolve_n_chunks
from ..optimize.optimizer import LIVE_STRATEGIES, STRATEGIES
from ..optimize.rng import edge_order
from ..optimize.vertex_index import VERTEX_GROUP, VERTEX_WIDE_GROUP, VERTEX_WIDE_ITEMS
from .checks import _check_graph, _check_mask, _check_points

# Edges measured for the typical neighbour distance (see typical_neighbor_distance).
TYPICAL_DISTANCE_EDGES = 1 << 18


@dataclass(frozen=True, eq=False)
class PointInfo:
    """What is known about one point of a layout, and the mechanism that can fling it.

    Parameters
    ----------
    index : int
        The point's row in the embedding (its vertex in the graph).
    label : int or None
        Its class code, or None without labels.
    degree : int
        Its edges in the graph: the edges whose head it is (the graph holds both directions, so it is also the
        number of edges whose tail it is, and of its graph neighbours).
    degree_rank : int
        1 for the busiest vertex (highest degree), ties ranked by index.
    n_vertices : int
        Vertices in the graph (what ``degree_rank`` ranks among).
    flagged : dict of str to bool
        For each outlier method given, whether it flags the point now.
    first_flagged_epoch : int or None
        The first recorded epoch at which the shown outlier method flagged the point; None if none did or no
        history was given.
    neighbor_distance_ratio : float
        Distance from the point to the coordinate-wise median position of its graph neighbours, divided by the
        layout's typical neighbour distance (``typical_neighbor_distance``: the median length of the graph's
        edges, over at most 262,144 of them evenly spread).
        About 1 or less for a point among its neighbours; NaN for a point with no neighbours.
    typical_distance : float
        That typical neighbour distance, in layout units.
    strategy : str
        The strategy the mechanism is worked out for.
    n_chunks : int or None
        Chunks an epoch is cut into (1 under buffered); None for the strategies that do not chunk (sequential,
        hogwild, vertex).
    max_edges_in_one_chunk : int
        The largest entry of ``edges_per_chunk``: how many of its edges' attractions (and negative samples) it
        receives summed from one stale position. Equal to ``degree`` under buffered.
    max_moves_in_one_chunk : int
        The same, counting also the pulls it receives as the tail of the reverse edges, which are summed with the
        others (about twice ``max_edges_in_one_chunk`` for chunks; ``2 * degree`` under buffered).
    edges_per_chunk : numpy.ndarray
        int64; one entry per update step of its row, counting its edges (as head) in that step. chunked and
        buffered: one entry per chunk (``n_chunks`` entries, zeros included). vertex: one per group of its
        items. sequential and hogwild: one per edge, all 1.
    neighbors : numpy.ndarray
        int64, its graph neighbours (the tails of its edges), ascending.
    position : tuple of float
        Its (x, y) in the layout.
    """

    index: int
    label: int | None
    degree: int
    degree_rank: int
    n_vertices: int
    flagged: dict[str, bool]
    first_flagged_epoch: int | None
    neighbor_distance_ratio: float
    typical_distance: float
    strategy: str
    n_chunks: int | None
    max_edges_in_one_chunk: int
    max_moves_in_one_chunk: int
    edges_per_chunk: np.ndarray
    neighbors: np.ndarray
    position: tuple[float, float]

    def mechanism(self) -> str:
        """One sentence: how many of the point's edges are summed from one stale position under its strategy."""
        d, m = self.degree, self.max_edges_in_one_chunk
        if self.degree == 0:
            return "it has no edges, so no attraction moves it"
        if self.strategy == "sequential":
            return "under sequential every edge reads its row as the previous one left it (1 at a time)"
        if self.strategy == "hogwild":
            return (
                "under hogwild every edge reads its live row (1 at a time), except for edges racing on "
                "other threads at the same moment"
            )
        if self.strategy == "vertex":
            return (
                f"under vertex its edges are summed {m} at a time ({len(self.edges_per_chunk)} groups), "
                "each group from its row as the previous group left it"
            )
        if self.strategy == "buffered" or self.n_chunks == 1:
            return (
                f"under buffered all {d:,} of its edges are summed from one stale position "
                f"({self.max_moves_in_one_chunk:,} moves with the reverse edges' pulls)"
            )
        busy = int(np.count_nonzero(self.edges_per_chunk))
        return (
            f"under chunked with {self.n_chunks:,} chunks at most {m:,} of its {d:,} edges are summed from "
            f"one stale position (its edges fall in {busy:,} chunks)"
        )

    def summary(self) -> str:
        """A short explanation in words: who the point is, whether it is flagged, and why it may have flown."""
        label = "" if self.label is None else f", class {self.label}"
        lines = [f"point {self.index:,}{label} at ({self.position[0]:.4g}, {self.position[1]:.4g})"]
        lines.append(f"degree {self.degree:,} (rank {self.degree_rank:,} of {self.n_vertices:,})")
        if self.flagged:
            now = ", ".join(f"{k}: {'flagged' if v else 'not flagged'}" for k, v in self.flagged.items())
            lines.append(f"outliers now: {now}")
        if self.first_flagged_epoch is not None:
            lines.append(f"first flagged at recorded epoch {self.first_flagged_epoch}")
        if np.isfinite(self.neighbor_distance_ratio):
            lines.append(
                f"{self.neighbor_distance_ratio:.3g}x the typical neighbour distance away from the median of its "
                "graph neighbours"
            )
        lines.append(self.mechanism())
        return "; ".join(lines[:2]) + "\n" + "\n".join(lines[2:])

    def __str__(self) -> str:
        return self.summary()


# ------------------------------------------------------------------------------------------------------------
# The graph side: degree, rank, neighbours, and which step each edge falls in.
# ------------------------------------------------------------------------------------------------------------


def degree_rank(degree: np.ndarray, index: int) -> int:
    """Rank of vertex ``index`` by degree: 1 for the busiest, ties ranked by index.

    Parameters
    ----------
    degree : numpy.ndarray
        Every vertex's degree.
    index : int
        The vertex to rank.
    """
    d = degree[index]
    return int(np.count_nonzero(degree > d) + np.count_nonzero(degree[:index] == d) + 1)


def flung(outlier_mask: Any, graph: FuzzyGraph) -> np.ndarray:
    """The flagged points, busiest first: degree descending, ties by index ascending.

    Parameters
    ----------
    outlier_mask : array of bool, shape (n_vertices,)
        Which points an outlier measure flags now (``umapviz.metrics.outliers``); NumPy or CuPy.
    graph : FuzzyGraph
        The graph the layout was made from: its degrees order the result.

    Returns
    -------
    numpy.ndarray
        int64 indices of the flagged points.
    """
    graph = _check_graph(graph)
    mask = _check_mask("outlier_mask", outlier_mask, graph.n_vertices)
    idx = np.flatnonzero(mask)
    order = np.lexsort((idx, -graph.degree[idx].astype(np.int64)))
    return idx[order].astype(np.int64)


@functools.lru_cache(maxsize=1)
def _edge_places(seed: int, nnz: int) -> np.ndarray:
    """Each edge's place in the seed's processing order (int32, read-only). Drawing the order shuffles every edge
    (seconds at tens of millions), so the last one is kept: inspecting point after point, or changing n_chunks,
    reuses it; a new seed or graph replaces it."""
    places = np.empty(nnz, np.int32)
    places[edge_order(seed, nnz)] = np.arange(nnz, dtype=np.int32)
    places.flags.writeable = False
    return places


def _head_range(graph: FuzzyGraph, index: int) -> tuple[int, int]:
    """Edges index's head edges occupy in graph order (the graph is sorted by head)."""
    key = graph.head.dtype.type(index)  # a Python int would make searchsorted convert the whole array first
    lo = int(np.searchsorted(graph.head, key, side="left"))
    hi = int(np.searchsorted(graph.head, key, side="right"))
    return lo, hi


def _chunk_steps(graph: FuzzyGraph, index: int, n_chunks: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per chunk of an epoch in which every edge is active: index's edges as head, and as tail, in that chunk."""
    if n_chunks == 1:  # one chunk holds every edge, whatever the order
        lo, hi = _head_range(graph, index)
        return (np.array([hi - lo], np.int64), np.array([np.count_nonzero(graph.tail == index)], np.int64))
    place = _edge_places(seed, graph.nnz)
    bounds = chunk_bounds(graph.nnz, n_chunks)
    lo, hi = _head_range(graph, index)
    as_head = np.searchsorted(bounds, place[lo:hi], side="right") - 1
    as_tail = np.searchsorted(bounds, place[np.flatnonzero(graph.tail == index)], side="right") - 1
    return (
        np.bincount(as_head, minlength=n_chunks).astype(np.int64),
        np.bincount(as_tail, minlength=n_chunks).astype(np.int64),
    )


def _vertex_steps(n_head: int, n_tail: int) -> tuple[np.ndarray, np.ndarray]:
    """Per group of the vertex strategy, with every edge active: head items, then all items (head items come
    first, then tail items, taken VERTEX_GROUP at a time, or VERTEX_WIDE_GROUP above VERTEX_WIDE_ITEMS items)."""
    items = n_head + n_tail
    width = VERTEX_WIDE_GROUP if items > VERTEX_WIDE_ITEMS else VERTEX_GROUP
    starts = np.arange(0, items, width, dtype=np.int64)
    heads = np.clip(n_head - starts, 0, width)
    total = np.minimum(items - starts, width)
    return heads, total


def update_steps(
    graph: FuzzyGraph, index: int, strategy: str, n_chunks: int | str = "auto", random_state: int | None = None
) -> tuple[int | None, np.ndarray, int]:
    """How a vertex's edges are grouped into updates of its row, in an epoch where every edge is active.

    The active list of epoch t holds the edges due then (``next[e] <= t``), in the processing order; the edges of
    the largest weight are due every epoch, the others every ``epochs_per_sample`` epochs. Counting as if every
    edge were due gives a number fixed by the graph, strategy, n_chunks and seed: the same in every epoch (a
    played layout's number does not flicker), and under buffered exactly the degree, where a real epoch, holding
    only the edges then due, would show fewer. A real epoch cuts its shorter active list into as many chunks, each
    spanning about the same stretch of the processing order, so its counts are about those shares of these.

    Parameters
    ----------
    graph : FuzzyGraph
        The graph.
    index : int
        The vertex.
    strategy : str
        One of ``umapviz.STRATEGIES``.
    n_chunks : int or str
        As ``LayoutOptimizer`` takes it (an int, or a rule such as ``"auto"``); used by chunked only.
    random_state : int or None
        The optimizer's seed (``optimizer.seed``): it fixes the processing order and so which chunk an edge falls
        in. Needed by chunked with more than one chunk.

    Returns
    -------
    tuple
        (n_chunks used or None, edges per step as head, moves in the largest step counting tail items too).
    """
    graph = _check_graph(graph)
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy={strategy!r} is not known; choose one of {STRATEGIES}.")
    index = check_index(index, graph.n_vertices)
    lo, hi = _head_range(graph, index)
    n_head = hi - lo
    if strategy in LIVE_STRATEGIES:  # each edge reads the row the previous one left
        return None, np.ones(n_head, np.int64), int(n_head > 0 or np.any(graph.tail == index))
    if strategy == "vertex":
        heads, total = _vertex_steps(n_head, int(np.count_nonzero(graph.tail == index)))
        return None, heads, int(total.max(initial=0))
    used = 1 if strategy == "buffered" else resolve_n_chunks(n_chunks, graph)
    seed = check_random_state(random_state)
    if used > 1 and seed is None:
        raise ValueError(
            f"strategy='chunked' with {used} chunks needs random_state=: the optimizer's seed (optimizer.seed), "
            "which fixes the processing order and so which chunk each edge falls in."
        )
    heads, tails = _chunk_steps(graph, index, used, 0 if seed is None else seed)
    return used, heads, int((heads + tails).max(initial=0))


# ------------------------------------------------------------------------------------------------------------
# The layout side.
# ------------------------------------------------------------------------------------------------------------


def typical_neighbor_distance(graph: FuzzyGraph, embedding: Any, max_edges: int = TYPICAL_DISTANCE_EDGES) -> float:
    """The layout's typical neighbour distance: the median length of the graph's edges in the layout.

    The median is taken over every ``stride``-th edge in graph order, ``stride = ceil(nnz / max_edges)`` (every
    edge up to ``max_edges`` edges): the graph is sorted by head, so the sample covers every part of it, and the
    median of 262,144 lengths (the default) lies within a fraction of a percent of the full one at any size, at a
    fixed cost (a click should not wait for a pass over a billion-edge graph). Each undirected edge is stored in both
    directions with the same length, so this is also the median over undirected edges. Edges with a non-finite
    end are left out. Computed in float64 on the embedding's device.

    Parameters
    ----------
    graph : FuzzyGraph
        The graph whose edges are measured.
    embedding : array, shape (n_vertices, >= 2)
        The layout (NumPy or CuPy); the first two columns are used.
    max_edges : int
        The most edges measured.
    """
    graph = _check_graph(graph)
    Y = _check_points(embedding)
    if Y.shape[0] != graph.n_vertices:
        raise ValueError(f"embedding has {Y.shape[0]:,} rows but the graph has {graph.n_vertices:,} vertices.")
    stride = -(-graph.nnz // check_int("max_edges", max_edges, 1))
    xp = xp_of(Y)
    head = xp.asarray(np.ascontiguousarray(graph.head[::stride]))
    tail = xp.asarray(np.ascontiguousarray(graph.tail[::stride]))
    diff = Y[head, :2].astype(xp.float64) - Y[tail, :2]
    length = (diff * diff).sum(axis=1)
    length = xp.sqrt(length[xp.isfinite(length)])  # the root before the median: with an even count they differ
    return float(xp.median(length)) if length.size else float("nan")


def _first_flagged(index: int, n: int, history_epochs: Any, history_masks: Any) -> int | None:
    if history_masks is None:
        return None
    if history_epochs is None:
        raise ValueError("history_masks needs history_epochs=: the epoch each recorded mask belongs to.")
    epochs = [int(e) for e in history_epochs]
    masks = list(history_masks)
    if len(epochs) != len(masks):
        raise ValueError(
            f"history_epochs has {len(epochs)} entries but history_masks has {len(masks)}: "
            "pass one epoch per recorded mask."
        )
    for epoch, mask in zip(epochs, masks, strict=True):
        if _check_mask("each of history_masks", mask, n)[index]:
            return epoch
    return None


def point_info(
    graph: FuzzyGraph,
    embedding: Any,
    index: int,
    *,
    strategy: str,
    n_chunks: int | str = "auto",
    random_state: int | None = None,
    labels: Any = None,
    outlier_masks: Mapping[str, Any] | None = None,
    history_epochs: Sequence[int] | None = None,
    history_masks: Sequence[Any] | None = None,
    typical_distance: float | None = None,
) -> PointInfo:
    """Everything ``PointInfo`` holds about point ``index`` of a layout of ``graph``.

    The chunk histogram is that of an epoch in which every edge is active (see ``update_steps``): under buffered
    its one entry is the degree; under chunked each of the point's edges (as head) is counted in the chunk its
    place in the seed's processing order falls in, cut as ``numpy.array_split`` cuts the active list.

    Parameters
    ----------
    graph : FuzzyGraph
        The graph the layout was made from.
    embedding : array, shape (n_vertices, >= 2)
        The layout now (NumPy or CuPy); the first two columns are used.
    index : int
        The point (negative counts from the end, as in NumPy).
    strategy : str
        The optimizer's strategy, one of ``umapviz.STRATEGIES``.
    n_chunks : int or str
        The optimizer's ``n_chunks`` (an int or a rule name); chunked only.
    random_state : int or None
        The optimizer's seed (``optimizer.seed``); needed by chunked with more than one chunk.
    labels : array of int, shape (n_vertices,), optional
        Class codes; ``label`` is the point's.
    outlier_masks : dict of str to bool array, optional
        For each outlier method, the mask it gives now (``umapviz.metrics.outliers``).
    history_epochs : sequence of int, optional
        The recorded epochs, in order.
    history_masks : sequence of bool arrays, optional
        The shown outlier method's mask at each recorded epoch; ``first_flagged_epoch`` is the first that flags
        the point.
    typical_distance : float, optional
        ``typical_neighbor_distance(graph, embedding)`` when already known (it reads every edge).

    Returns
    -------
    PointInfo
    """
    graph = _check_graph(graph)
    Y = _check_points(embedding)
    n = graph.n_vertices
    if Y.shape[0] != n:
        raise ValueError(
            f"embedding has {Y.shape[0]:,} rows but the graph has {n:,} vertices: pass the layout made from this graph."
        )
    index = check_index(index, n)
    label = None
    if labels is not None:
        host_labels = to_host(labels)
        if host_labels.shape != (n,):
            raise ValueError(f"labels has shape {host_labels.shape}, but the layout has {n:,} points.")
        label = host_labels[index].item()
    flagged = {
        str(method): bool(_check_mask(f"outlier_masks[{method!r}]", mask, n)[index])
        for method, mask in (outlier_masks or {}).items()
    }
    first = _first_flagged(index, n, history_epochs, history_masks)

    used, steps, max_moves = update_steps(graph, index, strategy, n_chunks, random_state)
    lo, hi = _head_range(graph, index)
    neighbors = np.unique(graph.tail[lo:hi]).astype(np.int64)
    position = to_host(Y[index, :2]).astype(np.float64)
    if typical_distance is None:
        typical_distance = typical_neighbor_distance(graph, Y)
    ratio = float("nan")
    if neighbors.size:
        centre = np.median(to_host(Y[xp_of(Y).asarray(neighbors), :2]).astype(np.float64), axis=0)
        distance = float(np.hypot(*(position - centre)))
        ratio = distance / typical_distance if typical_distance > 0 else (0.0 if distance == 0 else float("inf"))
    return PointInfo(
        index=index,
        label=label,
        degree=int(graph.degree[index]),
        degree_rank=degree_rank(graph.degree, index),
        n_vertices=n,
        flagged=flagged,
        first_flagged_epoch=first,
        neighbor_distance_ratio=ratio,
        typical_distance=float(typical_distance),
        strategy=strategy,
        n_chunks=used,
        max_edges_in_one_chunk=int(steps.max(initial=0)),
        max_moves_in_one_chunk=max_moves,
        edges_per_chunk=steps,
        neighbors=neighbors,
        position=(float(position[0]), float(position[1])),
    )
