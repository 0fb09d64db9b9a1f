"""CPU kernels (Numba) for one epoch of each strategy, following docs/optimizer.md to the letter.

All arithmetic on coordinates is float32 with float32 constants, so that the GPU kernels can follow the same
operations in the same order. Parallel loops run over fixed blocks of work, and every deterministic strategy
writes results whose bytes do not depend on how blocks are spread over threads.
"""

from __future__ import annotations

import numpy as np
from numba import get_num_threads, njit, prange

from .atomics_cpu import (
    atomic_add,
    atomic_load_acquire,
    atomic_store_release,
    cpu_relax,
    yield_thread,
)
from .chunks import chunk_bounds
from .moves_cpu import F0, JIT_CACHE, attract, attract_coef, clip, negatives_due, repel
from .params import EngineParams
from .vertex_index import VERTEX_WIDE_GROUP, vertex_group_sizes, vertex_index

_FIX = 4294967296.0  # 2**32: fixed-point scale of the chunk accumulators
_UNFIX = 1.0 / 4294967296.0
_BLOCK = 2048  # edges (or vertices) per parallel work item


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


# The chunked epoch's work: items of _COMPUTE_ITEM edges whose moves one claim computes (small enough that the
# threads finish a chunk close together, as the last item decides when the next phase starts; large enough that a
# claim, one atomic add, is a small part of an item); then one item per owner class of rows, which moves the rows
# of its class. Rows belong to classes by blocks of _OWNER_ROWS (whole cache lines of acc and Y), so no two
# threads write to one line while applying.
_COMPUTE_ITEM = 64
_OWNER_ROWS_LOG2 = 4
_SPINS_BEFORE_YIELD = 256
_SYNC_STRIDE = 16  # int64 words between phases' counters: each phase's pair on its own 128 bytes


@njit(cache=JIT_CACHE, nogil=True)
def apply_owned(Y, head_p, tail_p, active, lo, hi, head_fix, tail_fix, acc, owner, owner_mask):
    """Move the rows of owner class `owner` (row v's: (v >> _OWNER_ROWS_LOG2) & owner_mask) by the moves of chunk
    active[lo:hi] (slot q - lo of head_fix / tail_fix): each such row adds up its moves in acc (integer sums, exact
    in any order), becomes float32(float64(y) + sum * 2**-32) and its sum is cleared. A coordinate whose sum is 0
    keeps its bits (adding 0.0 would turn -0.0 into +0.0; the GPU skips it too)."""
    dim = Y.shape[1]
    for q in range(lo, hi):
        p = active[q]
        for v, fix in ((head_p[p], head_fix), (tail_p[p], tail_fix)):
            if ((v >> _OWNER_ROWS_LOG2) & owner_mask) == owner:
                for d in range(dim):
                    acc[v, d] += fix[q - lo, d]
    for q in range(lo, hi):
        p = active[q]
        for v in (head_p[p], tail_p[p]):
            if ((v >> _OWNER_ROWS_LOG2) & owner_mask) == owner:
                for d in range(dim):
                    if acc[v, d] != 0:
                        Y[v, d] = np.float32(np.float64(Y[v, d]) + np.float64(acc[v, d]) * _UNFIX)
                        acc[v, d] = 0


@njit(cache=JIT_CACHE, nogil=True)
def _chunk_worker(
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
    n_owners,
    sync,
):
    """One thread's part of a chunked epoch: walk the phases (chunk c's moves, phase 2c; their application, phase
    2c + 1), claiming work items of the open phase until none is left, then wait for the phase to close.

    A phase closes when its last item is done: whoever finishes it publishes the count of closed phases
    (sync[0], release). Items are claimed with an atomic add on the phase's counter, and a thread waits only once
    every item of the phase is claimed, that is for threads at work: a thread that starts late (or a threading
    layer that runs the region's iterations one after another) finds the work done or does it alone, never waits
    for a thread that has not begun.

    Moves: each edge's head and tail moves, computed from Y as the chunk found it, in fixed point in the edge's
    slot of head_fix / tail_fix (row q - lo of chunk [lo, hi)). Application, item k (k < n_owners, a power of 2):
    the rows of owner class k add up their moves from the chunk's slots in acc (integer sums: exact in any order)
    and move once.
    """
    dim = Y.shape[1]
    yi = np.empty(dim, np.float32)
    yfrom = np.empty(dim, np.float32)
    tail_move = np.empty(dim, np.float32)
    n_phases = 2 * (bounds.shape[0] - 1)
    owner_mask = n_owners - 1
    p = 0
    while p < n_phases:
        lo = bounds[p >> 1]
        hi = bounds[(p >> 1) + 1]
        applying = (p & 1) == 1
        n_items = n_owners if applying else (hi - lo + _COMPUTE_ITEM - 1) // _COMPUTE_ITEM
        base = (p + 1) * _SYNC_STRIDE
        k = atomic_add(sync, base, 1)
        if k < n_items:
            if applying:
                apply_owned(Y, head_p, tail_p, active, lo, hi, head_fix, tail_fix, acc, k, owner_mask)
            else:
                q0 = lo + k * _COMPUTE_ITEM
                for q in range(q0, min(q0 + _COMPUTE_ITEM, hi)):
                    pa = active[q]
                    i = head_p[pa]
                    _edge(
                        Y,
                        i,
                        tail_p[pa],
                        edge_p[pa],
                        n_neg[q],
                        seed,
                        t,
                        a,
                        b,
                        c_att,
                        c_rep,
                        alpha,
                        private_head,
                        yi,
                        yfrom,
                        tail_move,
                    )
                    for d in range(dim):
                        head_fix[q - lo, d] = _fix(yi[d] - Y[i, d])
                        tail_fix[q - lo, d] = _fix(tail_move[d])
            if atomic_add(sync, base + 8, 1) == n_items - 1:
                atomic_store_release(sync, 0, p + 1)
            continue
        spins = 0
        while atomic_load_acquire(sync, 0) <= p:
            if spins < _SPINS_BEFORE_YIELD:
                cpu_relax()
                spins += 1
            else:
                yield_thread()
        p += 1


@njit(cache=JIT_CACHE, nogil=True, parallel=True)
def epoch_chunked_parallel(
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
    threads,
):
    """Chunks of the active list (cut at `bounds`, no chunk empty), each computed from the embedding at its start
    and applied at its end, in one parallel region of `threads` threads, each running :func:`_chunk_worker`.

    The bytes do not depend on the thread count: each edge's moves are computed from the chunk's start alone, and
    each row's are summed in fixed point. head_fix / tail_fix hold the longest chunk's slots (rows x dim int64);
    acc (n x dim int64, zeros) is left zeroed.
    """
    n_owners = 1
    while n_owners < threads:
        n_owners *= 2
    sync = np.zeros((2 * (bounds.shape[0] - 1) + 1) * _SYNC_STRIDE, np.int64)
    for _ in prange(threads):
        _chunk_worker(
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
            n_owners,
            sync,
        )


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
        self._scratch: tuple | None = None
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
            bounds = np.unique(chunk_bounds(n_active, self.n_chunks))  # without empty chunks (n_active < n_chunks)
            scratch = self._chunk_scratch(int(np.diff(bounds).max(initial=0)))
            rest = [*edges[:-1], bounds, *args, *scratch, get_num_threads()]
            epoch_chunked_parallel(self.Y, *rest)
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

    def _chunk_scratch(self, longest: int) -> tuple[np.ndarray, ...]:
        """The chunked epoch's slots (at least `longest` rows, grown by half again when short) and row sums."""
        n, dim = self.Y.shape
        if self._scratch is None or self._scratch[0].shape[0] < longest:
            rows = max(longest, 0 if self._scratch is None else self._scratch[0].shape[0] * 3 // 2)
            rows = min(rows, self.head_p.shape[0])
            self._scratch = (np.empty((rows, dim), np.int64), np.empty((rows, dim), np.int64), self._acc())
        return self._scratch

    def _acc(self):
        return np.zeros(self.Y.shape, np.int64) if self._scratch is None else self._scratch[2]

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
