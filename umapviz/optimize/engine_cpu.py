"""CPU kernels (Numba) for one epoch of each strategy, following docs/optimizer.md to the letter.

All arithmetic on coordinates is float32 with float32 constants, so that the GPU kernels can follow the same
operations in the same order. Parallel loops run over fixed blocks of work, and every deterministic strategy
writes results whose bytes do not depend on how blocks are spread over threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .chunks import chunk_bounds
from .moves_cpu import F0, JIT_CACHE, attract, attract_coef, clip, negatives_due, repel
from .params import EngineParams
from .vertex_index import VERTEX_WIDE_GROUP, vertex_group_sizes, vertex_index

_FIX = 4294967296.0  # 2**32: fixed-point scale of the chunk accumulators
_UNFIX = 1.0 / 4294967296.0
_BLOCK = 2048  # edges (or vertices) per parallel work item
_PARALLEL_MIN = 2 * _BLOCK  # smaller chunks run serially


@njit(cache=JIT_CACHE, nogil=True)
def schedule(next_s, next_neg, eps, eps_neg, t, active, n_neg_active):
    """Advance the schedule to epoch t; fill the active list. All arrays are in processing (perm) order, so
    this pass streams through memory; `active` receives positions in that order. Returns its length."""
    count = 0
    tf = np.float64(t)
    for p in range(next_s.shape[0]):
        if next_s[p] <= tf:
            nn = negatives_due(tf, next_neg[p], eps_neg[p])
            next_s[p] += eps[p]
            next_neg[p] += nn * eps_neg[p]
            active[count] = p
            n_neg_active[count] = nn
            count += 1
    return count


@njit(cache=JIT_CACHE, nogil=True, parallel=True)
def gather_in_order(perm, head, tail, eps):
    """``head[perm]``, ``tail[perm]`` and ``eps[perm]`` in one parallel pass (the edges in processing order): one
    random read of each array per edge, spread over the threads, instead of three serial NumPy gathers.

    Parameters
    ----------
    perm : ndarray
        int32 processing order of the edges.
    head, tail : ndarray
        int32 endpoints of each edge, in graph order.
    eps : ndarray
        float64 epochs_per_sample of each edge, in graph order.
    """
    nnz = perm.size
    head_p = np.empty(nnz, np.int32)
    tail_p = np.empty(nnz, np.int32)
    eps_p = np.empty(nnz, np.float64)
    for blk in prange((nnz + _BLOCK - 1) // _BLOCK):
        for p in range(blk * _BLOCK, min((blk + 1) * _BLOCK, nnz)):
            e = perm[p]
            head_p[p] = head[e]
            tail_p[p] = tail[e]
            eps_p[p] = eps[e]
    return head_p, tail_p, eps_p


@njit(cache=JIT_CACHE, nogil=True)
def scatter_n_neg(perm, active, n_neg_active, n_active, n_neg_edge):
    """Per-edge negative counts in graph order (-1: inactive), for the owner-computes strategy."""
    n_neg_edge[:] = -1
    for q in range(n_active):
        n_neg_edge[perm[active[q]]] = n_neg_active[q]


@njit(cache=JIT_CACHE, inline="always")
def _edge(Y, i, j, e, n_neg, seed, t, a, b, c_att, c_rep, alpha, private_head, yi, yfrom, tail_move):
    """All moves of edge e = (i, j), read from Y: leaves the head's new row in yi, the tail's move in tail_move."""
    for d in range(yi.shape[0]):
        yi[d] = Y[i, d]
        yfrom[d] = Y[i, d]
    attract(yi, Y, j, a, b, c_att, alpha, tail_move)
    if private_head:
        repel(yi, yi, Y, i, e, n_neg, seed, t, Y.shape[0], a, b, c_rep, alpha)
    else:
        repel(yi, yfrom, Y, i, e, n_neg, seed, t, Y.shape[0], a, b, c_rep, alpha)


# The edge kernels below take head, tail and edge ids in processing order (head_p = head[perm], ...), and
# `active` holds positions in that order, so their reads stream through memory.


@njit(cache=JIT_CACHE, nogil=True)
def _live_edges(Y, head_p, tail_p, edge_p, active, n_neg, lo, hi, seed, t, a, b, c_att, c_rep, alpha, private_head):
    """Edges active[lo:hi] one after the other, each reading and writing the live embedding."""
    dim = Y.shape[1]
    yi = np.empty(dim, np.float32)
    yfrom = np.empty(dim, np.float32)
    tail_move = np.empty(dim, np.float32)
    for q in range(lo, hi):
        p = active[q]
        i = head_p[p]
        j = tail_p[p]
        _edge(Y, i, j, edge_p[p], n_neg[q], seed, t, a, b, c_att, c_rep, alpha, private_head, yi, yfrom, tail_move)
        for d in range(dim):
            Y[i, d] = yi[d]
            Y[j, d] += tail_move[d]


def epoch_sequential(Y, head_p, tail_p, edge_p, active, n_neg, n_active, *args):
    """The reference: one edge after the other, each seeing every earlier move."""
    _live_edges(Y, head_p, tail_p, edge_p, active, n_neg, 0, n_active, *args)


@njit(cache=JIT_CACHE, nogil=True, parallel=True)
def epoch_hogwild(Y, head_p, tail_p, edge_p, active, n_neg, n_active, seed, t, a, b, c_att, c_rep, alpha, private_head):
    """Blocks of edges in parallel, all reading and writing the live embedding without locks (racy by design)."""
    n_blocks = (n_active + _BLOCK - 1) // _BLOCK
    for blk in prange(n_blocks):
        _live_edges(
            Y,
            head_p,
            tail_p,
            edge_p,
            active,
            n_neg,
            blk * _BLOCK,
            min((blk + 1) * _BLOCK, n_active),
            seed,
            t,
            a,
            b,
            c_att,
            c_rep,
            alpha,
            private_head,
        )


@njit(cache=JIT_CACHE, inline="always")
def _fix(x):
    return np.int64(np.rint(np.float64(x) * _FIX))


@njit(cache=JIT_CACHE, nogil=True)
def _chunk_edges(
    Y,
    head_p,
    tail_p,
    edge_p,
    active,
    n_neg,
    lo,
    r0,
    r1,
    seed,
    t,
    a,
    b,
    c_att,
    c_rep,
    alpha,
    private_head,
    head_fix,
    tail_fix,
):
    """Fixed-point moves of edges active[lo + r0 : lo + r1], all read from Y as it stands (the snapshot)."""
    dim = Y.shape[1]
    yi = np.empty(dim, np.float32)
    yfrom = np.empty(dim, np.float32)
    tail_move = np.empty(dim, np.float32)
    for r in range(r0, r1):
        q = lo + r
        p = active[q]
        i = head_p[p]
        _edge(
            Y, i, tail_p[p], edge_p[p], n_neg[q], seed, t, a, b, c_att, c_rep, alpha, private_head, yi, yfrom, tail_move
        )
        for d in range(dim):
            head_fix[r, d] = _fix(yi[d] - Y[i, d])
            tail_fix[r, d] = _fix(tail_move[d])


@njit(cache=JIT_CACHE, nogil=True, parallel=True)
def _chunk_moves(
    Y,
    head_p,
    tail_p,
    edge_p,
    active,
    n_neg,
    lo,
    hi,
    seed,
    t,
    a,
    b,
    c_att,
    c_rep,
    alpha,
    private_head,
    head_fix,
    tail_fix,
):
    """_chunk_edges over active[lo:hi] in parallel blocks (each edge's result is the same either way)."""
    n = hi - lo
    n_blocks = (n + _BLOCK - 1) // _BLOCK
    for blk in prange(n_blocks):
        _chunk_edges(
            Y,
            head_p,
            tail_p,
            edge_p,
            active,
            n_neg,
            lo,
            blk * _BLOCK,
            min((blk + 1) * _BLOCK, n),
            seed,
            t,
            a,
            b,
            c_att,
            c_rep,
            alpha,
            private_head,
            head_fix,
            tail_fix,
        )


@njit(cache=JIT_CACHE, nogil=True)
def _apply_chunk(Y, head_p, tail_p, active, lo, hi, head_fix, tail_fix, acc, touched_flag, touched):
    """Sum the chunk's fixed-point moves per row, then move each touched row once and clear it; a coordinate
    whose sum is 0 keeps its bits (adding 0.0 would turn -0.0 into +0.0; the GPU skips it too)."""
    dim = Y.shape[1]
    n_touched = 0
    for r in range(hi - lo):
        p = active[lo + r]
        i = head_p[p]
        j = tail_p[p]
        for d in range(dim):
            acc[i, d] += head_fix[r, d]
            acc[j, d] += tail_fix[r, d]
        if not touched_flag[i]:
            touched_flag[i] = True
            touched[n_touched] = i
            n_touched += 1
        if not touched_flag[j]:
            touched_flag[j] = True
            touched[n_touched] = j
            n_touched += 1
    for r in range(n_touched):
        v = touched[r]
        for d in range(dim):
            if acc[v, d] != 0:
                Y[v, d] = np.float32(np.float64(Y[v, d]) + np.float64(acc[v, d]) * _UNFIX)
                acc[v, d] = 0
        touched_flag[v] = False


@njit(cache=JIT_CACHE, nogil=True)
def epoch_chunked(
    Y,
    head_p,
    tail_p,
    edge_p,
    active,
    n_neg,
    bounds,
    seed,
    t,
    a,
    b,
    c_att,
    c_rep,
    alpha,
    private_head,
    head_fix,
    tail_fix,
    acc,
    touched_flag,
    touched,
):
    """Chunks of the active list (cut at `bounds`), each computed from the embedding at its start and applied
    at its end. Small chunks run on one thread: waking the thread pool would cost more than their work."""
    for c in range(bounds.shape[0] - 1):
        lo = bounds[c]
        hi = bounds[c + 1]
        if hi == lo:
            continue
        if hi - lo >= _PARALLEL_MIN:
            _chunk_moves(
                Y,
                head_p,
                tail_p,
                edge_p,
                active,
                n_neg,
                lo,
                hi,
                seed,
                t,
                a,
                b,
                c_att,
                c_rep,
                alpha,
                private_head,
                head_fix,
                tail_fix,
            )
        else:
            _chunk_edges(
                Y,
                head_p,
                tail_p,
                edge_p,
                active,
                n_neg,
                lo,
                0,
                hi - lo,
                seed,
                t,
                a,
                b,
                c_att,
                c_rep,
                alpha,
                private_head,
                head_fix,
                tail_fix,
            )
        _apply_chunk(Y, head_p, tail_p, active, lo, hi, head_fix, tail_fix, acc, touched_flag, touched)


@njit(cache=JIT_CACHE, inline="always")
def _fold_group(moves, width, yi):
    """Add the group's moves to yi, summed as the GPU's butterfly does: pairs width/2 apart, then width/4, ... 1.

    Rows past the group's last move are zero (idle lanes). x + y == y + x in IEEE arithmetic, so every lane of the
    butterfly holds this same sum, and the CPU and the GPU agree bit for bit.
    """
    h = width // 2
    while h > 0:
        for lane in range(h):
            for d in range(moves.shape[1]):
                moves[lane, d] = moves[lane, d] + moves[lane + h, d]
        h //= 2
    for d in range(moves.shape[1]):
        yi[d] = yi[d] + moves[0, d]
    moves[:width] = F0


@njit(cache=JIT_CACHE, nogil=True, parallel=True)
def epoch_vertex(
    Y,
    Ysnap,
    tail,
    head_ptr,
    by_tail,
    tail_head,
    tail_ptr,
    group_size,
    mirrored,
    n_neg_edge,
    seed,
    t,
    a,
    b,
    c_att,
    c_rep,
    alpha,
    private_head,
):
    """Owner computes: each vertex moves only its own row, reading the others from the epoch-start snapshot.

    A vertex's active items (its edges as head in graph order, then as tail in tail order) are taken
    group_size[i] at a time: every move of a group is computed from the row as it stood at the group's start,
    then the group's moves are summed in a fixed tree order and added to the row. `mirrored`: see
    mirrored_edges (the same result, read in order).
    """
    n, dim = Y.shape
    Ysnap[:] = Y
    n_blocks = (n + _BLOCK - 1) // _BLOCK
    for blk in prange(n_blocks):
        yi = np.empty(dim, np.float32)
        y = np.empty(dim, np.float32)
        yfrom = np.empty(dim, np.float32)
        tail_move = np.empty(dim, np.float32)
        moves = np.zeros((VERTEX_WIDE_GROUP, dim), np.float32)
        for i in range(blk * _BLOCK, min((blk + 1) * _BLOCK, n)):
            width = group_size[i]
            for d in range(dim):
                yi[d] = Ysnap[i, d]
            q = 0
            for e in range(head_ptr[i], head_ptr[i + 1]):
                nn = n_neg_edge[e]
                if nn < 0:
                    continue
                for d in range(dim):
                    y[d] = yi[d]
                    yfrom[d] = yi[d]
                attract(y, Ysnap, tail[e], a, b, c_att, alpha, tail_move)
                if private_head:
                    repel(y, y, Ysnap, i, e, nn, seed, t, n, a, b, c_rep, alpha)
                else:
                    repel(y, yfrom, Ysnap, i, e, nn, seed, t, n, a, b, c_rep, alpha)
                for d in range(dim):
                    moves[q, d] = y[d] - yi[d]
                q += 1
                if q == width:
                    _fold_group(moves, width, yi)
                    q = 0
            for r in range(tail_ptr[i], tail_ptr[i + 1]):
                if n_neg_edge[head_ptr[i] + (r - tail_ptr[i]) if mirrored else by_tail[r]] < 0:
                    continue
                h = tail_head[r]
                d2 = F0
                for d in range(dim):
                    diff = Ysnap[h, d] - yi[d]
                    d2 += diff * diff
                coef = attract_coef(d2, a, b, c_att)
                for d in range(dim):
                    moves[q, d] = -(alpha * clip(coef * (Ysnap[h, d] - yi[d])))
                q += 1
                if q == width:
                    _fold_group(moves, width, yi)
                    q = 0
            if q > 0:
                _fold_group(moves, width, yi)
            for d in range(dim):
                Y[i, d] = yi[d]


class CpuEngine:
    """Optimizer state on the host and one-epoch steps for every strategy (the backend behind LayoutOptimizer)."""

    def __init__(self, graph, perm: np.ndarray, params: EngineParams) -> None:
        self.params = params
        self.strategy = params.strategy
        self.n_chunks = params.n_chunks
        self.seed = np.uint64(params.seed)
        self.a, self.b, self.c_att, self.c_rep = params.curve
        self.private_head = bool(params.private_head)
        self.graph = graph
        perm = np.ascontiguousarray(perm, dtype=np.int32)
        self.edge_p = perm
        self.head_p, self.tail_p, self.eps_p = gather_in_order(
            perm,
            np.ascontiguousarray(graph.head, dtype=np.int32),
            np.ascontiguousarray(graph.tail, dtype=np.int32),
            np.ascontiguousarray(graph.epochs_per_sample, dtype=np.float64),
        )
        with np.errstate(divide="ignore"):  # negative_sample_rate = 0: no negatives, ever
            self.eps_neg_p = self.eps_p / np.float64(params.negative_sample_rate)
        nnz = graph.nnz
        self.active = np.empty(nnz, np.int32)
        self.n_neg_active = np.empty(nnz, np.int32)
        self.Y = np.empty((graph.n_vertices, 0), np.float32)
        self._scratch = None
        self._vertex_index = None

    def reset(self, init: np.ndarray) -> None:
        """Start over from `init` (copied) with a fresh schedule."""
        self.Y = np.array(init, dtype=np.float32, order="C", copy=True)
        self.next_s = self.eps_p.copy()
        self.next_neg = self.eps_neg_p.copy()

    def embedding(self) -> np.ndarray:
        return self.Y

    def finite(self) -> bool:
        """Whether every coordinate of the embedding is finite."""
        return bool(np.isfinite(self.Y).all())

    def run_epoch(self, t: int, alpha: float) -> int:
        """Run epoch t with learning rate alpha; returns the number of active edges."""
        n_active = schedule(self.next_s, self.next_neg, self.eps_p, self.eps_neg_p, t, self.active, self.n_neg_active)
        args = (self.seed, np.int64(t), self.a, self.b, self.c_att, self.c_rep, np.float32(alpha), self.private_head)
        edges = (self.head_p, self.tail_p, self.edge_p, self.active, self.n_neg_active, n_active)
        s = self.strategy
        if s == "sequential":
            epoch_sequential(self.Y, *edges, *args)
        elif s == "hogwild":
            epoch_hogwild(self.Y, *edges, *args)
        elif s in ("chunked", "buffered"):
            bounds = chunk_bounds(n_active, self.n_chunks)
            epoch_chunked(self.Y, *edges[:-1], bounds, *args, *self._chunk_scratch())
        elif s == "vertex":
            Ysnap, n_neg_edge, head_ptr, by_tail, tail_head, tail_ptr, mirrored, groups = self._vertex_arrays()
            scatter_n_neg(self.edge_p, self.active, self.n_neg_active, n_active, n_neg_edge)
            epoch_vertex(
                self.Y,
                Ysnap,
                self.graph.tail,
                head_ptr,
                by_tail,
                tail_head,
                tail_ptr,
                groups,
                mirrored,
                n_neg_edge,
                *args,
            )
        else:  # validated by LayoutOptimizer; kept for direct users of the engine
            raise ValueError(f"unknown strategy {s!r}")
        return int(n_active)

    def _chunk_scratch(self):
        if self._scratch is None:
            n, dim = self.Y.shape
            nnz = self.head_p.shape[0]
            self._scratch = (
                np.empty((nnz, dim), np.int64),
                np.empty((nnz, dim), np.int64),
                np.zeros((n, dim), np.int64),
                np.zeros(n, np.bool_),
                np.empty(n, np.int64),
            )
        return self._scratch

    def _vertex_arrays(self):
        if self._vertex_index is None:
            g = self.graph
            ix = vertex_index(g.head, g.tail, g.epochs_per_sample, g.n_vertices)
            self._vertex_index = (
                np.empty_like(self.Y),
                np.empty(g.nnz, np.int32),
                ix.head_ptr,
                ix.by_tail,
                ix.tail_head,
                ix.tail_ptr,
                ix.mirrored,
                vertex_group_sizes(ix.head_ptr, ix.tail_ptr),
            )
        return self._vertex_index
