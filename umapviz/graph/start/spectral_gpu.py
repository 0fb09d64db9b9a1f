"""The spectral init's eigen-solve primitives on an NVIDIA GPU (CuPy + spectral_gpu.cu).

:class:`DeviceOps` gives :func:`.spectral.thick_restart_lanczos` its sparse product, per-component dot
products and per-component linear combinations, each a kernel of spectral_gpu.cu that sums in a fixed order
and whose twin in :mod:`umapviz.graph.start.spectral_cpu` sums in the same order (the module is compiled with
``--fmad=false``: no fused multiply-adds, which the CPU does not make either). So the GPU's spectral start is
the CPU's bytes. CuPy loads on first use.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import scipy.sparse

from ..._backend import cupy
from .lanczos import extend_basis
from .spectral_cpu import SEG_THREADS, tiles

KERNELS = Path(__file__).with_name("spectral_gpu.cu")
_MATVEC_THREADS = 256  # threads per block of csr_matvec, one per row


@functools.lru_cache(maxsize=1)
def _module():
    return cupy().RawModule(code=KERNELS.read_text(), options=("--std=c++17", "--fmad=false"))


class DeviceOps:
    """:func:`.spectral.thick_restart_lanczos`'s primitives on the GPU: twin of
    ``spectral_cpu.HostOps`` (change both together).

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
        The adjacency's CSR arrays on the ops' device (int64, int32, float32).
    """

    def __init__(self, adj: scipy.sparse.csr_matrix, bounds: np.ndarray):
        cp = cupy()
        self.xp, self.n, self.bounds = cp, adj.shape[0], np.asarray(bounds, dtype=np.int64)
        self.indptr = cp.asarray(adj.indptr, dtype=cp.int64)
        self.indices = cp.asarray(adj.indices, dtype=cp.int32)
        self.weight = cp.asarray(adj.data, dtype=cp.float32)
        sizes = np.diff(self.bounds)
        self.comp_of = cp.asarray(np.repeat(np.arange(sizes.size, dtype=np.int32), sizes))
        tile_lo, comp_tiles = tiles(self.bounds)
        self.n_tiles = tile_lo.size - 1
        self.tile_lo, self.comp_tiles = cp.asarray(tile_lo), cp.asarray(comp_tiles)
        module = _module()
        self._matvec, self._tiles, self._finish, self._combine = (
            module.get_function(name) for name in ("csr_matvec", "seg_dot_tiles", "seg_dot_finish", "seg_combine")
        )
        ones = cp.ones(self.n, dtype=cp.float64)
        self.inv_sqrt_degree = 1.0 / cp.sqrt(self._product(ones, ones))  # D^-1/2: row sums of W

    def _product(self, x, row_scale):
        cp = self.xp
        y = cp.empty(self.n, dtype=cp.float64)
        blocks = (self.n + _MATVEC_THREADS - 1) // _MATVEC_THREADS
        self._matvec(
            (blocks,), (_MATVEC_THREADS,), (self.indptr, self.indices, self.weight, x, row_scale, y, np.int32(self.n))
        )
        return y

    def matvec(self, x):
        """``D^-1/2 W D^-1/2 x``."""
        return self._product(self.xp.ascontiguousarray(self.inv_sqrt_degree * x), self.inv_sqrt_degree)

    def seg_dots(self, V, k: int, x):
        """``(n_comp, k)``: per component, the dot products of the first ``k`` rows of ``V`` with ``x``."""
        cp, n_comp = self.xp, len(self.bounds) - 1
        partial = cp.empty(k * self.n_tiles, dtype=cp.float64)
        self._tiles(
            (self.n_tiles, k), (SEG_THREADS,), (V, np.int64(self.n), x, self.tile_lo, np.int32(self.n_tiles), partial)
        )
        out = cp.empty((n_comp, k), dtype=cp.float64)
        self._finish(
            ((n_comp * k + 255) // 256,),
            (256,),
            (partial, np.int32(self.n_tiles), self.comp_tiles, np.int32(n_comp), np.int32(k), out),
        )
        return out

    def combine(self, V, k: int, coef, add, sign: float):
        """Each row ``r`` of component ``c`` as ``add[r] + sign * sum_j V[j, r] coef[c, j]``, ``j < k``."""
        cp = self.xp
        out = cp.empty(self.n, dtype=cp.float64)
        self._combine(
            ((self.n + 255) // 256,),
            (256,),
            (
                V,
                np.int64(self.n),
                np.int32(k),
                cp.ascontiguousarray(coef, dtype=cp.float64),
                self.comp_of,
                add,
                np.float64(sign),
                out,
            ),
        )
        return out

    def extend_basis(self, V, H, arrow: np.ndarray, first: int, breakdown: float) -> None:
        """The Lanczos steps ``first .. BASIS - 1`` in place: :func:`umapviz.graph.start.lanczos.extend_basis` on these
        primitives (the definition ``spectral_cpu.HostOps.extend_basis`` fuses on the CPU).

        Parameters
        ----------
        V, H : cupy.ndarray
            The basis ``(BASIS + 1, n)`` and the projected matrices ``(n_comp, BASIS + 1, BASIS)``.
        arrow : numpy.ndarray
            ``(n_comp, KEEP)`` couplings of the kept Ritz vectors to ``V[first]``.
        first : int
            The first step: 0 at the start, ``KEEP`` after a restart.
        breakdown : float
            The length under which a new vector counts as zero.
        """
        extend_basis(self, V, H, arrow, first, breakdown)
