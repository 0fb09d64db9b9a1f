"""The spectral init's eigen-solves on an NVIDIA GPU (CuPy), for :func:`umapviz.graph.init.spectral_init`.

Both solve for the leading eigenpairs of ``D^-1/2 W D^-1/2``, applied by a fixed-order sparse product
(spectral_gpu.cu), from a fixed start vector: the same graph gives the same bytes on every run. The result is
not the CPU's bytes (another solver, a tighter tolerance), so a GPU optimizer starts from a slightly different
spectral layout than a CPU one; pass ``init=`` an array to compare the two backends from one start.

- :func:`leading_eigenpairs_gpu`: one connected component, CuPy's thick-restart Lanczos
  (``cupyx.scipy.sparse.linalg.eigsh``).
- :func:`leading_eigenpairs_batched`: many components at once, by :func:`batched_lanczos` (full
  reorthogonalisation, no restart). A graph of clusters has one component per cluster; solved one by one, each
  small solve is a chain of small launches and host round trips (~70 ms for 30k vertices), while the batched
  solve's launches cover every component.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import scipy.linalg
import scipy.sparse

from .._backend import cupy, gpu_memory, to_host

KERNELS = Path(__file__).with_name("spectral_gpu.cu")
_THREADS = 256  # threads per block of csr_matvec; 32 (one warp) per row
MAX_STEPS = 20_000  # Lanczos steps (one sparse product each) before the solve counts as not converged
_NCV = 64  # Lanczos vectors: on graphs of millions of points, fewer products and restarts than 20 or 32
BATCH_STEPS = 300  # Lanczos steps of the batched solve; components not converged by then are solved one by one
_CHECK_EVERY = 10  # steps between the batched solve's convergence checks (each reads the tridiagonals back)
_BREAKDOWN = 1e-10  # a Lanczos vector shorter than this: the component's Krylov space is exhausted (exact)
_SEG_THREADS = 256  # = SEG_THREADS in spectral_gpu.cu
_SEG_TILE = 2048  # rows per tile of the per-component sums


@functools.lru_cache(maxsize=1)
def _module():
    return cupy().RawModule(code=KERNELS.read_text(), options=("--std=c++17", "--fmad=false"))


def _normalised_matvec(adj: scipy.sparse.csr_matrix):
    """``x -> D^-1/2 W D^-1/2 x`` on the GPU (float64 CuPy vectors) for a symmetric CSR adjacency ``W``."""
    cp = cupy()
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

    def matvec(x):
        return product(cp.ascontiguousarray(inv_sqrt * x.ravel()), inv_sqrt)

    return matvec


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
    product = _normalised_matvec(adj)
    products = [0]

    def matvec(x):
        products[0] += 1
        return product(x)

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


# ---- many components at once


def start_vector(n: int) -> np.ndarray:
    """The batched solve's fixed start: not ones, whose Krylov space is one vector on a regular graph."""
    return np.random.default_rng(0).uniform(0.5, 1.5, n)


def batched_lanczos(ops, n_vec: int, tol: float, max_steps: int, stats: dict | None = None) -> list:
    """Per component, the ``n_vec`` largest eigenpairs of a block-diagonal symmetric operator.

    ``ops`` holds the rows grouped by component (``ops.bounds``) and the primitives, on one array module
    ``ops.xp``: ``matvec(x)``; ``seg_dots(V, k, x)``, the ``(n_comp, k)`` per-component dot products of the
    first ``k`` rows of ``V`` with ``x``; ``combine(V, k, coef, add, sign)``, each row ``r`` of component ``c``
    as ``add[r] + sign * sum_j V[j, r] coef[c, j]``; and ``comp_of``, each row's component. Each component runs
    Lanczos in its own Krylov space, reorthogonalised twice against all its earlier vectors each step, until the
    top Ritz pairs of every component have residuals under ``tol`` (checked every ``_CHECK_EVERY`` steps) or
    ``max_steps`` is reached. Returns per component (eigenvalues, ``(size, n_vec)`` host eigenvectors), or None
    where the final residual exceeds ``10 * tol``.
    """
    xp, n, n_comp = ops.xp, ops.n, len(ops.bounds) - 1
    V = xp.zeros((max_steps + 1, n))
    alpha = xp.zeros((n_comp, max_steps))
    beta = xp.zeros((n_comp, max_steps))
    v = xp.asarray(start_vector(n))
    V[0] = v / xp.sqrt(ops.seg_dots(v[None], 1, v)[:, 0])[ops.comp_of]
    converged_at = np.zeros(n_comp, dtype=np.int64)  # the check at which each component's pairs were first good
    steps = 0
    for j in range(max_steps):
        w = ops.matvec(V[j])
        first = ops.seg_dots(V, j + 1, w)
        w = ops.combine(V, j + 1, first, w, -1.0)
        second = ops.seg_dots(V, j + 1, w)  # "twice is enough": the second pass restores orthogonality
        w = ops.combine(V, j + 1, second, w, -1.0)
        alpha[:, j] = first[:, j] + second[:, j]
        b = xp.sqrt(ops.seg_dots(w[None], 1, w)[:, 0])
        beta[:, j] = b
        V[j + 1] = w * xp.where(b > _BREAKDOWN, 1.0 / xp.maximum(b, _BREAKDOWN), 0.0)[ops.comp_of]
        steps = j + 1
        if steps % _CHECK_EVERY == 0 and steps < max_steps:
            open_ = np.flatnonzero(converged_at == 0)  # a converged component only gets better with more steps
            pairs = _ritz_pairs(to_host(alpha[open_, :steps]), to_host(beta[open_, :steps]), n_vec)
            converged_at[open_[[p is not None and p[2] <= tol for p in pairs]]] = steps
            if converged_at.all():
                break
    if stats is not None:
        stats.update(steps=steps, converged_at=converged_at)
    ritz = _ritz_pairs(to_host(alpha[:, :steps]), to_host(beta[:, :steps]), n_vec)
    return _ritz_vectors(ops, V, steps, ritz, n_vec, tol, stats)


def _ritz_pairs(alpha: np.ndarray, beta: np.ndarray, n_vec: int) -> list:
    """Per row of the tridiagonals: the top ``n_vec`` eigenpairs, cut where that component's Krylov space ran
    out, with the largest residual they imply; None where fewer than ``n_vec`` steps remain."""
    out = []
    for a, b in zip(alpha, beta, strict=True):
        short = np.flatnonzero(b <= _BREAKDOWN)
        m = int(short[0]) + 1 if short.size else a.size
        if m < n_vec:
            out.append(None)
            continue
        theta, S = scipy.linalg.eigh_tridiagonal(a[:m], b[: m - 1], select="i", select_range=(m - n_vec, m - 1))
        out.append((theta, S, float(np.max(np.abs(b[m - 1] * S[-1])))))
    return out


def _ritz_vectors(ops, V, steps: int, ritz: list, n_vec: int, tol: float, stats: dict | None) -> list:
    """The Ritz vectors of every component, kept where their true residual is within ``10 * tol``."""
    xp, n, n_comp = ops.xp, ops.n, len(ritz)
    coef = np.zeros((n_vec, n_comp, steps))
    theta = np.zeros((n_comp, n_vec))
    for c, pair in enumerate(ritz):
        if pair is not None:
            theta[c], S = pair[0], pair[1]
            coef[:, c, : S.shape[0]] = S.T
    zeros = xp.zeros(n)
    vectors, residual = [], np.zeros((n_comp, n_vec))
    for i in range(n_vec):
        y = ops.combine(V, steps, xp.asarray(coef[i]), zeros, 1.0)
        r = ops.matvec(y) - xp.asarray(theta[:, i])[ops.comp_of] * y
        residual[:, i] = to_host(xp.sqrt(ops.seg_dots(r[None], 1, r)[:, 0]))
        vectors.append(y)
    vectors = to_host(xp.stack(vectors, axis=1))
    if stats is not None:
        stats["residual"] = residual.max(axis=1)
    bounds = ops.bounds
    return [
        (theta[c], vectors[bounds[c] : bounds[c + 1]])
        if ritz[c] is not None and np.all(residual[c] <= 10 * tol)  # False for NaN too
        else None
        for c in range(n_comp)
    ]


class _DeviceOps:
    """:func:`batched_lanczos`'s primitives on the GPU (spectral_gpu.cu), every sum in a fixed order."""

    def __init__(self, adj: scipy.sparse.csr_matrix, bounds: np.ndarray):
        cp = cupy()
        self.xp, self.n, self.bounds = cp, adj.shape[0], bounds
        self.matvec = _normalised_matvec(adj)
        sizes = np.diff(bounds)
        self.comp_of = cp.asarray(np.repeat(np.arange(sizes.size, dtype=np.int32), sizes))
        starts = [np.arange(lo, hi, _SEG_TILE) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
        self.n_tiles = sum(s.size for s in starts)
        self.tile_lo = cp.asarray(np.concatenate([*starts, [self.n]]).astype(np.int32))
        self.comp_tiles = cp.asarray(np.cumsum([0] + [s.size for s in starts]).astype(np.int32))
        module = _module()
        self._tiles, self._finish, self._combine = (
            module.get_function(name) for name in ("seg_dot_tiles", "seg_dot_finish", "seg_combine"))

    def seg_dots(self, V, k: int, x):
        cp, n_comp = self.xp, len(self.bounds) - 1
        partial = cp.empty(k * self.n_tiles, dtype=cp.float64)
        self._tiles((self.n_tiles, k), (_SEG_THREADS,),
                    (V, np.int64(self.n), x, self.tile_lo, np.int32(self.n_tiles), partial))
        out = cp.empty((n_comp, k), dtype=cp.float64)
        self._finish(((n_comp * k + 255) // 256,), (256,),
                     (partial, np.int32(self.n_tiles), self.comp_tiles, np.int32(n_comp), np.int32(k), out))
        return out

    def combine(self, V, k: int, coef, add, sign: float):
        cp = self.xp
        out = cp.empty(self.n, dtype=cp.float64)
        self._combine(((self.n + 255) // 256,), (256,), (V, np.int64(self.n), np.int32(k),
                      cp.ascontiguousarray(coef, dtype=cp.float64), self.comp_of, add, np.float64(sign), out))
        return out


def leading_eigenpairs_batched(
    adj: scipy.sparse.csr_matrix, bounds: np.ndarray, n_vec: int, tol: float, stats: dict | None = None
) -> list:
    """The ``n_vec`` largest eigenpairs of ``D^-1/2 W D^-1/2`` for each connected component of a symmetric
    adjacency ``W`` whose rows are grouped by component (component ``c``: rows ``bounds[c]`` to
    ``bounds[c + 1] - 1``), all solved at once on the GPU (:func:`batched_lanczos`, at most ``BATCH_STEPS``
    steps). Per component: (eigenvalues, eigenvectors as a ``(size, n_vec)`` float64 host array) in no
    particular order, or None where it did not converge. Its float64 Lanczos vectors take ``8 n`` bytes a step:
    it takes fewer steps where half the free GPU memory would not hold ``BATCH_STEPS``, and raises MemoryError
    where it would not hold ``_CHECK_EVERY``. ``stats`` receives the steps, when each component converged and
    each residual.
    """
    n, free = adj.shape[0], gpu_memory()[0]
    steps = min(BATCH_STEPS, free // 2 // (8 * n) - 1)
    if steps < min(BATCH_STEPS, _CHECK_EVERY):
        raise MemoryError(f"the batched eigen-solve's first {_CHECK_EVERY} Lanczos vectors of {n:,} rows need "
                          f"{8 * n * (_CHECK_EVERY + 1):,} bytes, more than half the free GPU memory ({free:,} bytes)")
    return batched_lanczos(_DeviceOps(adj, np.asarray(bounds, dtype=np.int64)), n_vec, tol, steps, stats)
