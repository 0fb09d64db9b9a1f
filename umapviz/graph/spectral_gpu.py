"""The spectral init's eigen-solve on an NVIDIA GPU (CuPy), for :func:`umapviz.graph.init.spectral_init`.

CuPy's thick-restart Lanczos (``cupyx.scipy.sparse.linalg.eigsh``) over the operator ``D^-1/2 W D^-1/2``,
applied by a fixed-order sparse product (spectral_gpu.cu) from a fixed start vector: the same graph gives the
same bytes on every run. The result is not the CPU's bytes (another solver, a tighter tolerance), so a GPU
optimizer starts from a slightly different spectral layout than a CPU one; pass ``init=`` an array to compare
the two backends from one start.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import scipy.sparse

from .._backend import cupy

KERNELS = Path(__file__).with_name("spectral_gpu.cu")
_THREADS = 256  # threads per block of csr_matvec; 32 (one warp) per row
MAX_STEPS = 20_000  # Lanczos steps (one sparse product each) before the solve counts as not converged
_NCV = 64  # Lanczos vectors; fewer products and restarts than 20 or 32 at 1M-2M (bench/RESULTS.md)


@functools.lru_cache(maxsize=1)
def _module():
    return cupy().RawModule(code=KERNELS.read_text(), options=("--std=c++17", "--fmad=false"))


def leading_eigenpairs_gpu(
    adj: scipy.sparse.csr_matrix, n_vec: int, tol: float, stats: dict | None = None
) -> tuple[np.ndarray, np.ndarray] | None:
    """The ``n_vec`` largest eigenpairs of ``D^-1/2 W D^-1/2`` for a connected, symmetric adjacency ``W``.

    Returns (eigenvalues, eigenvectors as an ``(n, n_vec)`` float64 host array), in no particular order, or
    None when Lanczos did not reach ``tol`` within ``MAX_STEPS`` products (the caller then solves on the CPU).
    ``stats``, if given, receives the number of sparse products and the largest residual.
    """
    cp = cupy()
    from cupyx.scipy.sparse.linalg import LinearOperator, eigsh  # noqa: PLC0415 - CuPy only on demand

    n = adj.shape[0]
    indptr = cp.asarray(adj.indptr, dtype=cp.int64)
    indices = cp.asarray(adj.indices, dtype=cp.int32)
    weight = cp.asarray(adj.data, dtype=cp.float32)
    kernel = _module().get_function("csr_matvec")
    blocks = (n * 32 + _THREADS - 1) // _THREADS

    def product(x, row_scale):
        y = cp.empty(n, dtype=cp.float64)
        kernel((blocks,), (_THREADS,), (indptr, indices, weight, x, row_scale, y, np.int32(n)))
        return y

    ones = cp.ones(n, dtype=cp.float64)
    inv_sqrt = 1.0 / cp.sqrt(product(ones, ones))  # D^-1/2: row sums of W

    products = [0]

    def matvec(x):
        products[0] += 1
        return product(cp.ascontiguousarray(inv_sqrt * x.ravel()), inv_sqrt)

    op = LinearOperator((n, n), matvec=matvec, dtype=cp.float64)
    start = cp.ones(n, dtype=cp.float64)  # eigsh overwrites its start vector
    values, vectors = eigsh(op, k=n_vec, which="LA", v0=start, ncv=min(n - 1, _NCV), maxiter=MAX_STEPS, tol=tol)
    # eigsh stops at maxiter without a word: check the residuals it was asked to bring under tol.
    residual = max(float(cp.linalg.norm(matvec(vectors[:, i]) - values[i] * vectors[:, i])) for i in range(n_vec))
    if stats is not None:
        stats.update(products=products[0], residual=residual)
    if not np.isfinite(residual) or residual > 10 * tol:
        return None
    return values.get(), vectors.get()
