"""GPU engine (CuPy): the same backend interface as ``engine_cpu.CpuEngine``, running the kernels of engine_gpu.cu.

The kernels follow docs/optimizer.md and mirror ``engine_cpu.py`` operation for operation (see engine_gpu.cu).
This module holds the device state and launches one epoch:

1. schedule: it does not depend on the embedding, so it is computed for a window of up to ``SCHED_WINDOW``
   epochs at a time, in three launches (count active positions per block and epoch from one byte of activity
   bits per edge, scan the counts, write each epoch's active list in the seed's processing order with each
   edge's n_neg, and the next window's activity bits): the per-edge state is read and written once per window
   instead of once per epoch; no host round trip;
2. the strategy: ``hogwild`` one launch; ``sequential`` one launch of a single thread (small graphs and tests
   only); ``chunked``/``buffered`` one persistent launch that walks all chunks with grid-wide barriers (per
   chunk: compute, barrier, apply, barrier; the apply sweeps every row's sum in order unless the chunk touches
   few rows, else it walks its edges), so the host launches one kernel an epoch whatever n_chunks is;
   ``vertex`` one launch, 32 of a vertex's edges at a time (128 for the widest), busiest vertices first, four
   warps for each of the widest, a warp for each other hub and a few lanes for each other vertex.

Chunk bounds are computed on the device from the active count, so nothing is read back until ``run_epoch``
returns the epoch's active count.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path

import numpy as np

from .._backend import cupy, gpu_memory
from .params import EngineParams
from .vertex_index import VERTEX_WIDE_GROUP as _VERTEX_WIDE  # VTX_WIDE in kernels/vertex.cuh: a wide group's items
from .vertex_index import vertex_group_sizes, vertex_index

KERNELS = Path(__file__).with_name("engine_gpu.cu")
# engine_gpu.cu is the kernels' head (macros, types) and one include line per part under kernels/, by concern.
_PART = re.compile(r'^#include "(kernels/\w+\.cuh)"\n', re.M)
MAX_DIM = 8
# Epochs scheduled per pass (at most _SCHED_WMAX; fewer when GPU memory is short): the per-edge schedule state is
# read and written once per window.
SCHED_WINDOW = 8
# Vertices with more edges (as head and tail) than this get a whole warp in the vertex kernel; the others share
# a warp, VTX_TILE lanes each (kernels/vertex.cuh), since most have a handful of active edges an epoch.
VERTEX_HEAVY = 64
# Threads per block of the persistent chunked kernel: must equal PERSIST_THREADS in kernels/chunked.cuh.
PERSIST_THREADS = 256
# Share of the edges active in a typical epoch (each edge is active once every epochs_per_sample epochs): the
# persistent kernel gets enough blocks for a chunk of that many edges, as many as fit at most.
_TYPICAL_ACTIVE = 0.3
# Compile flags: no fast-math (NVRTC's default) and no FMA contraction, so float results follow the CPU's steps.
NVRTC_OPTIONS = ("--std=c++17", "--fmad=false")

_SCHED_BLOCK = 1024  # must equal SCHED_BLOCK in engine_gpu.cu
_SCHED_WMAX = 8  # must equal SCHED_WMAX in kernels/schedule.cuh
_THREADS = 256
_VERTEX_WARPS = 8  # must equal VTX_WARPS in kernels/vertex.cuh: warps per block of the vertex kernel
_VERTEX_TILE = 8  # must equal VTX_TILE in kernels/vertex.cuh: lanes per ordinary vertex


def kernel_source(path: Path = KERNELS) -> str:
    """The one CUDA source the engine compiles: engine_gpu.cu with each ``#include "kernels/NAME.cuh"`` line
    replaced by that file's text, in order.

    The parts are inlined here rather than left to NVRTC's include path because CuPy keys its compiled-kernel
    cache on the source text: an edit to a part must change the key. nvcc, given engine_gpu.cu, includes the
    same files, so the CI compile checks see this source too.

    Parameters
    ----------
    path : Path
        The head file, engine_gpu.cu by default (another version's, e.g. a benchmark's baseline, works too: its
        parts are read from the kernels/ folder beside it; a single-file version comes back unchanged).

    Returns
    -------
    str
        The complete source.
    """
    return _PART.sub(lambda m: (path.parent / m.group(1)).read_text(), path.read_text())


@functools.cache
def _module(dim: int, private_head: bool, nneg_bytes: int | None = None):
    """The compiled kernels for one embedding dimension and private_head (and, for the vertex strategy, the
    bytes of its per-epoch n_neg), cached per process; CuPy also caches the binary on disk."""
    cp = cupy()
    options = NVRTC_OPTIONS + (f"-DUMV_DIM={dim}", f"-DUMV_PH={int(private_head)}")
    if nneg_bytes is not None:
        options += (f"-DVTX_NNEG_BYTES={int(nneg_bytes)}",)
    return cp.RawModule(code=kernel_source(), options=options)


def _blocks_per_sm(kernel, threads: int) -> int:
    """How many blocks of `kernel` fit on one multiprocessor at once (the persistent kernel's grid barrier
    needs every block resident)."""
    cp = cupy()
    try:
        per_sm = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.kernel.ptr, threads, 0)
    except Exception:  # older CuPy: estimate from the register count (the limit that binds here)
        regs = max(int(kernel.attributes.get("num_regs", 64)), 1)
        per_sm = min(2048 // threads, 65536 // (((regs + 7) // 8) * 8 * threads), 32)
    return int(per_sm)


def device_bytes_needed(
    n_vertices: int, nnz: int, dim: int, strategy: str, window: int = 1, *, mirrored: bool = False, nneg_bytes: int = 4
) -> int:
    """Bytes of GPU memory the engine allocates for a graph (schedule, active lists, embedding, scratch),
    with `window` epochs scheduled per pass. The vertex strategy's also depend on whether the graph is
    mirrored (no tail-order places and bits) and on the bytes of its per-epoch n_neg (1 or 4)."""
    per_edge = 4 + 8 * 3  # due; eps, next, next_neg
    per_vertex = 4 * dim
    if strategy == "vertex":
        per_edge += 4 * 2 + nneg_bytes * window  # tails, heads in tail order; n_neg per epoch
        per_edge += 0 if mirrored else 4 + 1  # tail-order places, activity bits
        per_vertex += 4 * dim + 8 * 2 + 4  # snapshot, two CSR pointers, vertex order
    else:
        per_edge += 4 * 3 + 16 * window + 1  # order, head, tail; active lists (int4) per epoch; activity bits
        if strategy in ("chunked", "buffered"):
            per_vertex += 8 * dim  # fixed-point accumulators
    n_blocks = -(-nnz // _SCHED_BLOCK)
    return per_edge * nnz + per_vertex * (n_vertices + 1) + 8 * n_blocks * _SCHED_WMAX + 4096


def _choose_window(n_vertices: int, nnz: int, dim: int, strategy: str, wanted: int, **layout) -> int:
    """The largest schedule window up to `wanted` whose buffers fit in free GPU memory (MemoryError if even
    one epoch's do not, saying how much is needed). `layout`: device_bytes_needed's keywords."""
    free, total = gpu_memory()
    for window in range(max(1, min(int(wanted), _SCHED_WMAX)), 0, -1):
        if device_bytes_needed(n_vertices, nnz, dim, strategy, window, **layout) <= 0.9 * free:
            return window
    need = device_bytes_needed(n_vertices, nnz, dim, strategy, 1, **layout)
    raise MemoryError(
        f"The layout of this graph ({n_vertices:,} vertices, {nnz:,} edges, strategy={strategy!r}) needs "
        f"{need / 2**30:.2f} GiB of GPU memory, but only {free / 2**30:.2f} GiB of {total / 2**30:.2f} GiB "
        "is free. Free GPU memory, use a smaller graph, or run with device='cpu'."
    )


def _check_fits(n_vertices: int, nnz: int, dim: int, strategy: str) -> None:
    """MemoryError (with the amount needed) when not even a one-epoch schedule fits."""
    _choose_window(n_vertices, nnz, dim, strategy, 1)


class GpuEngine:
    """Optimizer state on the GPU and one-epoch steps for every strategy (the backend behind LayoutOptimizer).

    Same constructor and methods as ``engine_cpu.CpuEngine``; ``embedding()`` returns the live CuPy array.
    Epochs must run in order after each ``reset`` (LayoutOptimizer does), because the schedule of
    the next epoch is computed ahead.
    """

    def __init__(self, graph, perm: np.ndarray, params: EngineParams) -> None:
        cp = cupy()
        self.params = params
        strategy = self.strategy = params.strategy
        self.n_chunks = int(params.n_chunks)
        self.seed = np.uint64(params.seed)
        self.a, self.b, self.c_att, self.c_rep = params.curve
        # eps_neg = eps / nsr, recomputed in the kernels by the same division (inf when nsr is 0, as on the host).
        self._nsr = np.float64(params.negative_sample_rate)
        self.private_head = bool(params.private_head)
        self.n_vertices = int(graph.n_vertices)
        self.nnz = int(graph.nnz)

        head = np.ascontiguousarray(graph.head, dtype=np.int32)
        tail = np.ascontiguousarray(graph.tail, dtype=np.int32)
        eps = np.ascontiguousarray(graph.epochs_per_sample, dtype=np.float64)
        # Schedule state in processing order (see engine_gpu.cu); the vertex strategy needs it by edge id.
        # The permutation's gathers run on the GPU, where they cost far less than on the host.
        self._order = None if strategy == "vertex" else cp.asarray(np.asarray(perm, dtype=np.int32))
        self._head_host, self._tail_host, self._eps_host = head, tail, eps
        # The vertex strategy's index (host work, done once) and what it means for the memory needed.
        self._vix = vertex_index(head, tail, eps, self.n_vertices) if strategy == "vertex" else None
        self._layout = {"mirrored": self._vix.mirrored, "nneg_bytes": self._nneg_bytes()} if self._vix else {}
        self._eps = cp.asarray(eps) if self._order is None else cp.asarray(eps)[self._order]
        self._n_sched_blocks = -(-self.nnz // _SCHED_BLOCK)
        self._counts = cp.zeros(_SCHED_WMAX * self._n_sched_blocks, dtype=np.int32)
        self._offsets = cp.zeros(_SCHED_WMAX * self._n_sched_blocks, dtype=np.int32)
        self._n_act = cp.zeros(_SCHED_WMAX, dtype=np.int32)  # active count per epoch of the window
        self._ep = cp.zeros((_SCHED_WMAX, 2), dtype=np.int32)  # (t, bits of alpha) per epoch of the window
        self._stream = cp.cuda.Stream()  # blocking: the default stream waits for it
        self._window = 1
        self._win_t0 = None  # first epoch of the scheduled window
        self._act_t0 = None  # first epoch of the window whose activity bits _act holds
        self._next_epoch = None  # the epoch that must come next (None right after reset)
        self._acc = None
        self.Y = None
        self.dim = 0

    # -- interface shared with CpuEngine -------------------------------------------------------------------
    def reset(self, init) -> None:
        """Start over from `init` (copied; NumPy or CuPy) with a fresh schedule."""
        cp = cupy()
        init = cp.asarray(init, dtype=np.float32)
        if init.ndim != 2 or init.shape[0] != self.n_vertices:
            raise ValueError(f"init has shape {init.shape}; the graph needs ({self.n_vertices}, n_components).")
        dim = int(init.shape[1])
        if not 1 <= dim <= MAX_DIM:
            raise ValueError(f"The GPU engine supports 1 to {MAX_DIM} components, got {dim}; use device='cpu'.")
        self._stream.synchronize()
        if self.Y is None or self.Y.shape != init.shape:
            self.Y = None  # let a previous allocation go before sizing the new one
            self._window = _choose_window(self.n_vertices, self.nnz, dim, self.strategy, SCHED_WINDOW, **self._layout)
            self.dim = dim
            self._allocate()
        with self._stream:
            # Copy into the buffers in place: the same allocations serve every run of this shape.
            self.Y[...] = init
            self._next[...] = self._eps
            self._next_neg[...] = self._eps / self._nsr
            self._due[...] = cp.ceil(self._eps).astype(np.int32)
            self._status.fill(0)  # an old run's stamp could name an epoch of the new one
            if self._acc is not None:
                self._barrier.fill(0)  # a fresh count, whatever an interrupted epoch left
                self._acc.fill(0)
        self._stream.synchronize()
        self._finite = True
        self._win_t0 = None
        self._act_t0 = None
        self._next_epoch = None

    def embedding(self):
        """The live embedding (CuPy, (n_vertices, dim) float32)."""
        self._stream.synchronize()
        return self.Y

    def run_epoch(self, t: int, alpha: float) -> int:
        """Run epoch t with learning rate alpha; returns the number of active edges."""
        w = self.launch_epoch(t, alpha)
        n = np.int64(self.Y.size)
        with self._stream:
            self._k_status(
                (min(self._sms * 4, max(1, -(-int(n) // _THREADS))),),
                (_THREADS,),
                (self.Y, n, self._n_act[w:], self._ep[w], self._status),
            )
            n_active, stamp = (int(v) for v in self._status.get())
        self._finite = stamp != t + 1
        return n_active

    def finite(self) -> bool:
        """Whether every coordinate was finite after the last run_epoch (read with its active count)."""
        return self._finite

    # -- GPU specifics -------------------------------------------------------------------------------------
    def launch_epoch(self, t: int, alpha: float) -> int:
        """Queue epoch t without waiting for it (for timing loops); returns its slot in the window."""
        if self._next_epoch is not None and t != self._next_epoch:
            raise RuntimeError(f"GPU epochs run in order after reset: expected epoch {self._next_epoch}, got {t}.")
        t0, W = self._win_t0, self._window
        if t0 is None or t >= t0 + W:  # first epoch after reset, or the window is used up
            self._schedule_window(t)
            t0 = t
        w = t - t0
        self._next_epoch = t + 1
        with self._stream:
            ep = np.array([t, 0], dtype=np.int32)
            ep[1:] = np.array([alpha], dtype=np.float32).view(np.int32)
            self._ep[w].set(ep, stream=self._stream)
            self._launch_strategy(w)
        return w

    @property
    def stream(self):
        """The stream on which the engine works (record timing events here)."""
        return self._stream

    @property
    def window(self) -> int:
        """Epochs scheduled per schedule pass."""
        return self._window

    def _allocate(self) -> None:
        cp = cupy()
        n, dim, nnz, W = self.n_vertices, self.dim, self.nnz, self._window
        self.Y = cp.empty((n, dim), dtype=np.float32)
        self._next = cp.empty_like(self._eps)
        self._next_neg = cp.empty_like(self._eps)
        self._due = cp.empty(nnz, dtype=np.int32)
        self._acc = None
        nneg_bytes = self._layout["nneg_bytes"] if self.strategy == "vertex" else None
        self._mod = _module(dim, self.private_head, nneg_bytes)
        self._sms = int(cp.cuda.Device().attributes["MultiProcessorCount"])

        def k(name):
            kernel = self._mod.get_function(name)
            _ = kernel.kernel  # compile and load now, not inside the first epoch
            return kernel

        self._k_count = k("win_count")
        self._k_scan = k("win_scan")
        self._k_status = k("epoch_status")
        self._status = cp.zeros(2, dtype=np.int32)  # (active count, stamp of a non-finite epoch): epoch_status
        if self.strategy == "vertex":
            self._k_flags = k("win_flags")
            self._k_vertex = k("epoch_vertex")
            ix = self._vix
            # Busiest vertices first: the longest chains of groups start early; those with wide groups get four
            # warps each, the others above the heavy threshold a warp each, the rest share warps (engine_gpu.cu).
            work = np.diff(ix.head_ptr) + np.diff(ix.tail_ptr)
            self._vorder = cp.asarray(np.argsort(-work, kind="stable").astype(np.int32))
            self._n_wide = int(np.count_nonzero(vertex_group_sizes(ix.head_ptr, ix.tail_ptr) == _VERTEX_WIDE))
            self._n_heavy = max(self._n_wide, int(np.count_nonzero(work > VERTEX_HEAVY)))
            self._tail = cp.asarray(self._tail_host)
            self._tail_head = cp.asarray(ix.tail_head)
            # A mirrored graph's tail items read their activity at their reverses' places: no tail-order flags.
            if self._layout["mirrored"]:
                self._pos_tail = cp.zeros(1, dtype=np.int32)  # unread: the kernel takes an array all the same
                self._act_tail = cp.empty(1, dtype=np.uint8)
            else:
                pos_tail = np.empty(nnz, np.int32)  # where each edge lies in tail order
                pos_tail[ix.by_tail] = np.arange(nnz, dtype=np.int32)
                self._pos_tail = cp.asarray(pos_tail)
                self._act_tail = cp.empty(nnz, dtype=np.uint8)  # activity bits over the window, in tail order
            self._head_ptr = cp.asarray(ix.head_ptr)
            self._tail_ptr = cp.asarray(ix.tail_ptr)
            self._nneg_edge = cp.empty((W, nnz), dtype=np.int8 if self._layout["nneg_bytes"] == 1 else np.int32)
            self._snap = cp.empty_like(self.Y)
            return
        self._k_emit = k("win_emit")
        self._k_mask = k("win_mask")
        self._act = cp.empty(nnz, dtype=np.uint8)
        self._edge_of = self._order
        self._head_of = cp.asarray(self._head_host)[self._order]
        self._tail_of = cp.asarray(self._tail_host)[self._order]
        self._lists = cp.empty((W, nnz, 4), dtype=np.int32)
        if self.strategy == "sequential":
            self._k_seq = k("epoch_sequential")
        elif self.strategy == "hogwild":
            self._k_hog = k("epoch_hogwild")
        else:
            self._acc = cp.zeros((n, dim), dtype=np.uint64)
            self._k_persist = k("chunked_persistent")
            self._barrier = cp.zeros(1, dtype=np.uint64)  # the grid barrier's ticket counter (engine_gpu.cu)
            fit = _blocks_per_sm(self._k_persist, PERSIST_THREADS)
            if fit < 1:
                raise RuntimeError(
                    "A block of the persistent chunked kernel does not fit on one multiprocessor of "
                    "this GPU (registers); use device='cpu' or another strategy."
                )
            # Enough threads for a typical chunk, at most what fits: the grid barrier needs every block resident.
            want = math.ceil(_TYPICAL_ACTIVE * nnz / self.n_chunks / (self._sms * PERSIST_THREADS))
            self._persist_blocks = self._sms * int(min(max(want, 1), fit))

    def _nneg_bytes(self) -> int:
        """Bytes per n_neg in the vertex strategy's per-epoch array: 1 where n_neg stays below 127 (it is less than
        (1 + 1/min eps) * negative_sample_rate + 1: at most eps + 1 epochs pass between two samples of an edge)."""
        eps_min = float(self._eps_host.min()) if self.nnz else 1.0
        if not (eps_min > 0 and np.isfinite(self._nsr)):
            return 4
        return 1 if (1.0 + 1.0 / eps_min) * float(self._nsr) + 2 <= 127 else 4

    def _curve_args(self):
        return (self.seed, np.int32(self.n_vertices), self.a, self.b, self.c_att, self.c_rep)

    def _schedule_window(self, t0: int) -> None:
        """Queue the schedule of epochs t0 .. t0 + window - 1 on the engine's stream."""
        nnz, nb, W = np.int32(self.nnz), self._n_sched_blocks, np.int32(self._window)
        state = (self._due, self._next, self._next_neg, self._eps, self._nsr)
        with self._stream:
            if self.strategy == "vertex":
                mirrored = np.int32(self._layout["mirrored"])
                self._k_flags(
                    (nb,),
                    (_SCHED_BLOCK,),
                    (
                        *state,
                        nnz,
                        np.int32(t0),
                        W,
                        self._nneg_edge,
                        self._counts,
                        self._pos_tail,
                        self._act_tail,
                        mirrored,
                    ),
                )
            else:
                if self._act_t0 != t0:  # the activity bits of a window that follows the last one come with it
                    self._k_mask(
                        (nb,), (_SCHED_BLOCK,), (self._due, self._next, self._eps, nnz, np.int32(t0), W, self._act)
                    )
                self._k_count((nb,), (_SCHED_BLOCK,), (self._act, nnz, W, self._counts))
            self._k_scan((int(W),), (_SCHED_BLOCK,), (self._counts, np.int32(nb), self._offsets, self._n_act))
            if self.strategy != "vertex":
                self._k_emit(
                    (nb,),
                    (_SCHED_BLOCK,),
                    (
                        *state,
                        self._edge_of,
                        self._head_of,
                        self._tail_of,
                        nnz,
                        np.int32(t0),
                        W,
                        self._offsets,
                        self._lists,
                        np.int64(self.nnz),
                        self._act,
                    ),
                )
                self._act_t0 = t0 + int(W)
        self._win_t0 = t0

    def _launch_strategy(self, w: int) -> None:
        """The strategy's launches for epoch slot `w` of the window, on the current stream."""
        cp = cupy()
        sms, ep, n_act = self._sms, self._ep[w], self._n_act[w:]
        curve = self._curve_args()
        if self.strategy == "vertex":
            cp.copyto(self._snap, self.Y)
            n, wide, heavy = self.n_vertices, self._n_wide, self._n_heavy
            wide_blocks = -(-wide // (32 * _VERTEX_WARPS // _VERTEX_WIDE))
            heavy_blocks = -(-(heavy - wide) // _VERTEX_WARPS)
            per_block = _VERTEX_WARPS * 32 // _VERTEX_TILE  # ordinary vertices per block
            blocks = wide_blocks + heavy_blocks + -(-(n - heavy) // per_block)
            self._k_vertex(
                (blocks,),
                (32 * _VERTEX_WARPS,),
                (
                    self.Y,
                    self._snap,
                    self._vorder,
                    np.int32(wide),
                    np.int32(wide_blocks),
                    np.int32(heavy),
                    np.int32(heavy_blocks),
                    self._tail,
                    self._head_ptr,
                    self._tail_head,
                    self._act_tail,
                    np.int32(w),
                    np.int32(self._layout["mirrored"]),
                    self._tail_ptr,
                    self._nneg_edge[w],
                    ep,
                    *curve,
                ),
            )
            return
        active = self._lists[w]
        if self.strategy == "sequential":
            self._k_seq((1,), (1,), (self.Y, active, n_act, ep, *curve))
        elif self.strategy == "hogwild":
            blocks = min(-(-self.nnz // _THREADS), sms * 16)
            self._k_hog((blocks,), (_THREADS,), (self.Y, active, n_act, ep, *curve))
        else:  # chunked and buffered
            self._k_persist(
                (self._persist_blocks,),
                (PERSIST_THREADS,),
                (self.Y, self._acc, active, n_act, np.int32(self.n_chunks), ep, *curve, self._barrier),
            )
