"""The spectral init's eigen-solve primitives on the CPU (Numba): twins of the kernels in spectral_gpu.cu.

:func:`umapviz.graph.start.spectral.thick_restart_lanczos` runs one algorithm on either device through three primitives
(a normalised sparse product, per-component dot products, per-component linear combinations). Each function
here computes exactly what its CUDA twin computes, in the same order of float64 operations: the GPU's
reduction tree (a sparse row's entries in order; 256 threads per 2,048-row tile, eight warps' butterflies, the
warps in order, then the tiles in order) is spelled out as loops. Numba does not contract
``a * b + c`` into a fused multiply-add unless asked (no ``fastmath`` here), and the CUDA module is compiled
with ``--fmad=false``, so both sides round the same operations the same way and give the same bytes. Every
output is computed by one loop iteration from inputs nobody writes meanwhile, so the thread count changes
nothing; no BLAS routine is used, whose order of summation depends on the build and the SIMD width.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse

WARP = 32  # threads per warp (block_sum's butterfly)
SEG_THREADS = 256  # = SEG_THREADS in spectral_gpu.cu
SEG_TILE = 2048  # rows per tile of the per-component sums (= _SEG_TILE's use in spectral_gpu.py)
_ROWS_PER_TASK = 256  # rows a parallel task of seg_combine takes at once (no effect on the result)


@numba.njit(inline="always")
def _butterfly(lanes):
    """Lane 0's value after the warp's xor-shuffle butterfly (offsets 16, 8, 4, 2, 1): lane ``l < offset``
    adds lane ``l + offset``'s value to its own. Twin of ``block_sum``'s loop over ``__shfl_xor_sync`` in
    spectral_gpu.cu: change both together."""
    offset = WARP // 2
    while offset > 0:
        for lane in range(offset):
            lanes[lane] = lanes[lane] + lanes[lane + offset]
        offset //= 2
    return lanes[0]


@numba.njit(parallel=True, cache=True)
def csr_matvec(indptr, indices, weight, x, row_scale, y):
    """``y[i] = row_scale[i] * sum_j w[i, j] x[j]`` for a CSR matrix with float32 weights, in float64.

    Twin of ``csr_matvec`` in spectral_gpu.cu: change both together. Each row's entries are added in order,
    from 0, as ``double(w) * x``.

    Parameters
    ----------
    indptr, indices : ndarray
        The CSR structure (int64 row pointers, int32 column indices).
    weight : ndarray
        float32 entries.
    x, row_scale : ndarray
        float64 vectors of the matrix's size.
    y : ndarray
        float64 output, overwritten.
    """
    for row in numba.prange(y.size):
        total = 0.0
        for p in range(indptr[row], indptr[row + 1]):
            total += np.float64(weight[p]) * x[indices[p]]
        y[row] = row_scale[row] * total


@numba.njit(parallel=True, cache=True)
def seg_dot_tiles(V, k, x, tile_lo, partial):
    """``partial[col, tile]`` = the sum over the tile's rows ``r`` of ``V[col, r] * x[r]``, for ``col < k``.

    Twin of ``seg_dot_tiles`` (with ``block_sum``) in spectral_gpu.cu: change both together. Thread ``t`` of
    the tile's block adds rows ``lo + t, lo + t + 256, ...`` in order; each warp's 32 threads are added by the
    butterfly, then the eight warps' sums in order, starting from 0.

    Parameters
    ----------
    V : ndarray
        ``(>= k, n)`` float64, one vector per row.
    k : int
        How many rows of ``V`` to use.
    x : ndarray
        float64 vector of length ``n``.
    tile_lo : ndarray
        int32 first row of each tile, then ``n``.
    partial : ndarray
        ``(>= k, n_tiles)`` float64 output.
    """
    n_tiles = tile_lo.size - 1
    for item in numba.prange(k * n_tiles):
        col, tile = item // n_tiles, item % n_tiles
        threads = np.zeros(SEG_THREADS)
        lo, hi = tile_lo[tile], tile_lo[tile + 1]
        v = V[col]
        base = lo
        while base + SEG_THREADS <= hi:  # a whole row of threads: a fixed trip count, which vectorises
            v_row, x_row = v[base : base + SEG_THREADS], x[base : base + SEG_THREADS]
            for t in range(SEG_THREADS):
                threads[t] += v_row[t] * x_row[t]
            base += SEG_THREADS
        for t in range(hi - base):
            threads[t] += v[base + t] * x[base + t]
        total = 0.0
        for warp in range(SEG_THREADS // WARP):
            total += _butterfly(threads[warp * WARP : (warp + 1) * WARP])
        partial[col, tile] = total


@numba.njit(cache=True)
def seg_dot_finish(partial, k, comp_tiles, out):
    """``out[c, col]`` = the sum of component ``c``'s tiles' partial sums in tile order, starting from 0.

    Twin of ``seg_dot_finish`` in spectral_gpu.cu: change both together.

    Parameters
    ----------
    partial : ndarray
        ``(>= k, n_tiles)`` float64 tile sums.
    k : int
        Columns to finish.
    comp_tiles : ndarray
        int32 first tile of each component, then ``n_tiles``.
    out : ndarray
        ``(n_comp, k)`` float64 output.
    """
    for c in range(comp_tiles.size - 1):
        for col in range(k):
            total = 0.0
            for t in range(comp_tiles[c], comp_tiles[c + 1]):
                total += partial[col, t]
            out[c, col] = total


@numba.njit(parallel=True, cache=True)
def seg_combine(V, k, coef, comp_of, add, sign, out):
    """``out[r] = add[r] + sign * sum_j V[j, r] coef[comp_of[r], j]``, ``j = 0 .. k - 1`` in order from 0.

    Twin of ``seg_combine`` in spectral_gpu.cu: change both together. (Rows are taken a block at a time and
    ``j`` outermost for the cache; each row's own sum is still taken in order of ``j``.)

    Parameters
    ----------
    V : ndarray
        ``(>= k, n)`` float64 vectors.
    k : int
        How many vectors to combine.
    coef : ndarray
        ``(n_comp, >= k)`` float64 coefficients per component.
    comp_of : ndarray
        int32 component of each row.
    add : ndarray
        float64 vector added (may be ``out``).
    sign : float
        1.0 or -1.0.
    out : ndarray
        float64 output.
    """
    n = out.size
    n_tasks = (n + _ROWS_PER_TASK - 1) // _ROWS_PER_TASK
    for task in numba.prange(n_tasks):
        lo = task * _ROWS_PER_TASK
        hi = min(n, lo + _ROWS_PER_TASK)
        sums = np.zeros(hi - lo)
        first, last = comp_of[lo], comp_of[hi - 1]
        for j in range(k):
            if first == last:  # the usual case: one component's coefficient for the whole block (vectorises)
                weight = coef[first, j]
                v = V[j, lo:hi]
                for r in range(hi - lo):
                    sums[r] += v[r] * weight
            else:
                for r in range(lo, hi):
                    sums[r - lo] += V[j, r] * coef[comp_of[r], j]
        for r in range(lo, hi):
            out[r] = add[r] + sign * sums[r - lo]


@numba.njit(cache=True)
def _seg_dots(V, k, x, tile_lo, comp_tiles, n_comp):
    """``HostOps.seg_dots`` inside Numba."""
    partial = np.empty((k, tile_lo.size - 1))
    seg_dot_tiles(V, k, x, tile_lo, partial)
    out = np.empty((n_comp, k))
    seg_dot_finish(partial, k, comp_tiles, out)
    return out


@numba.njit(cache=True)
def lanczos_steps(indptr, indices, weight, inv_sqrt, tile_lo, comp_tiles, comp_of, V, H, arrow, first, breakdown):
    """``lanczos.extend_basis`` fused: the same primitives, in the same order, on the same numbers, with no
    Python between them (its twin: change both together). Writes ``V[first + 1 :]`` and ``H``'s columns ``first``
    on, in place.

    Parameters
    ----------
    indptr, indices, weight : ndarray
        The CSR structure and float32 entries of ``W``.
    inv_sqrt : ndarray
        ``D^-1/2``.
    tile_lo, comp_tiles, comp_of : ndarray
        The per-component sums' tiles (:func:`tiles`) and each row's component.
    V, H, arrow, first :
        As ``lanczos.extend_basis``.
    breakdown : float
        A new vector shorter than this is a zero vector (``lanczos.BREAKDOWN``).
    """
    n_comp, m = H.shape[0], V.shape[0] - 1
    n = V.shape[1]
    scaled = np.empty(n)
    w = np.empty(n)
    for j in range(first, m):
        v = V[j]
        for r in range(n):
            scaled[r] = inv_sqrt[r] * v[r]
        csr_matvec(indptr, indices, weight, scaled, inv_sqrt, w)
        alpha = _seg_dots(V[j : j + 1], 1, w, tile_lo, comp_tiles, n_comp)
        if j == 0:
            seg_combine(V[:1], 1, alpha, comp_of, w, -1.0, w)
        elif j == first:
            coef = np.empty((n_comp, j + 1))
            for c in range(n_comp):
                for i in range(j):
                    coef[c, i] = arrow[c, i]
                coef[c, j] = alpha[c, 0]
            seg_combine(V, j + 1, coef, comp_of, w, -1.0, w)
        else:
            coef = np.empty((n_comp, 2))
            for c in range(n_comp):
                coef[c, 0] = H[c, j, j - 1]
                coef[c, 1] = alpha[c, 0]
            seg_combine(V[j - 1 : j + 1], 2, coef, comp_of, w, -1.0, w)
        again = _seg_dots(V, j + 1, w, tile_lo, comp_tiles, n_comp)
        seg_combine(V, j + 1, again, comp_of, w, -1.0, w)
        norm2 = _seg_dots(w.reshape((1, n)), 1, w, tile_lo, comp_tiles, n_comp)
        b = np.empty(n_comp)
        scale = np.empty(n_comp)
        for c in range(n_comp):
            b[c] = np.sqrt(norm2[c, 0])
            scale[c] = 1.0 / max(b[c], breakdown) if b[c] > breakdown else 0.0
        nxt = V[j + 1]
        for r in range(n):
            nxt[r] = w[r] * scale[comp_of[r]]
        for c in range(n_comp):
            H[c, j, j] = alpha[c, 0]
            if j == first and j > 0:
                for i in range(j):
                    H[c, i, j] = arrow[c, i]
            elif j > 0:
                H[c, j - 1, j] = H[c, j, j - 1]
            for i in range(j + 1):
                H[c, i, j] = H[c, i, j] + again[c, i]
            H[c, j + 1, j] = b[c]


class HostOps:
    """:func:`.spectral.thick_restart_lanczos`'s primitives on the CPU: twin of ``spectral_gpu.DeviceOps``
    (change both together).

    Parameters
    ----------
    adj : scipy.sparse.csr_matrix
        Symmetric adjacency with float32 weights, rows grouped by component.
    bounds : ndarray
        Component ``c`` owns rows ``bounds[c]`` to ``bounds[c + 1] - 1``.

    Attributes
    ----------
    inv_sqrt_degree : ndarray
        ``D^-1/2``: one over the square root of each row's sum of weights (float64, on the ops' device).
    indptr, indices, weight : ndarray
        The adjacency's CSR arrays (int64, int32, and the float32 weights widened to float64, exactly).
    """

    xp = np

    def __init__(self, adj: scipy.sparse.csr_matrix, bounds: np.ndarray):
        self.n, self.bounds = adj.shape[0], np.asarray(bounds, dtype=np.int64)
        self.indptr = adj.indptr.astype(np.int64)
        self.indices = adj.indices.astype(np.int32, copy=False)
        # The float32 weights widened to float64 once (exact: the products see the same numbers); the sparse
        # product reads them faster than it converts float32 on every pass.
        self.weight = adj.data.astype(np.float32, copy=False).astype(np.float64)
        sizes = np.diff(self.bounds)
        self.comp_of = np.repeat(np.arange(sizes.size, dtype=np.int32), sizes)
        self.tile_lo, self.comp_tiles = tiles(self.bounds)
        ones = np.ones(self.n)
        self.inv_sqrt_degree = 1.0 / np.sqrt(self._product(ones, ones))  # D^-1/2: row sums of W

    def _product(self, x: np.ndarray, row_scale: np.ndarray) -> np.ndarray:
        y = np.empty(self.n)
        csr_matvec(self.indptr, self.indices, self.weight, x, row_scale, y)
        return y

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """``D^-1/2 W D^-1/2 x``."""
        return self._product(self.inv_sqrt_degree * x, self.inv_sqrt_degree)

    def seg_dots(self, V: np.ndarray, k: int, x: np.ndarray) -> np.ndarray:
        """``(n_comp, k)``: per component, the dot products of the first ``k`` rows of ``V`` with ``x``."""
        partial = np.empty((k, self.tile_lo.size - 1))
        seg_dot_tiles(V, k, x, self.tile_lo, partial)
        out = np.empty((self.bounds.size - 1, k))
        seg_dot_finish(partial, k, self.comp_tiles, out)
        return out

    def combine(self, V: np.ndarray, k: int, coef: np.ndarray, add: np.ndarray, sign: float) -> np.ndarray:
        """Each row ``r`` of component ``c`` as ``add[r] + sign * sum_j V[j, r] coef[c, j]``, ``j < k``."""
        out = np.empty(self.n)
        seg_combine(V, k, np.ascontiguousarray(coef, dtype=np.float64), self.comp_of, add, float(sign), out)
        return out

    def extend_basis(self, V: np.ndarray, H: np.ndarray, arrow: np.ndarray, first: int, breakdown: float) -> None:
        """``lanczos.extend_basis`` in one Numba call (:func:`lanczos_steps`): the same bytes, without the
        Python between the primitives (most of the solve's time on components of a few thousand rows)."""
        lanczos_steps(
            self.indptr,
            self.indices,
            self.weight,
            self.inv_sqrt_degree,
            self.tile_lo,
            self.comp_tiles,
            self.comp_of,
            V,
            H,
            np.ascontiguousarray(arrow, dtype=np.float64),
            first,
            breakdown,
        )


def tiles(bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The per-component sums' tiles: the first row of each (``SEG_TILE`` rows, never straddling two
    components), then ``n``; and each component's first tile, then the number of tiles. Shared by both
    devices' primitives.

    Parameters
    ----------
    bounds : ndarray
        Component ``c`` owns rows ``bounds[c]`` to ``bounds[c + 1] - 1``.
    """
    starts = [np.arange(lo, hi, SEG_TILE) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
    tile_lo = np.concatenate([*starts, [bounds[-1]]]).astype(np.int32)
    comp_tiles = np.cumsum([0] + [s.size for s in starts]).astype(np.int32)
    return tile_lo, comp_tiles
