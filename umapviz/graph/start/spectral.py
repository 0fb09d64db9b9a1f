"""The spectral init's eigen-solve, one algorithm on either device: the same bytes on the CPU and the GPU.

:func:`leading_eigenpairs` finds, for each connected component of a graph, the leading eigenpairs of its
normalised adjacency ``D^-1/2 W D^-1/2`` by :func:`thick_restart_lanczos`: thick-restart Lanczos with full
reorthogonalisation, every component in its own Krylov space but all advanced together (one launch covers every
component on the GPU), from one fixed start vector, with one stopping rule (residuals under ``TOL``). Its vector
work runs on three primitives with twins on both devices (:class:`umapviz.graph.start.spectral_cpu.HostOps` in Numba,
:class:`umapviz.graph.start.spectral_gpu.DeviceOps` in CUDA), which sum in the same fixed order; everything else is
element-wise float64 arithmetic (correctly rounded on both devices) or runs on the host for both: the small
projected eigenproblems are solved by :func:`symmetric_eigen` (Jacobi rotations in Numba: no LAPACK, whose bits
depend on its build). So the same graph gives the same bytes on either device, with any number of CPU threads
and any BLAS.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse

from ..._backend import gpu_memory, to_host
from .lanczos import BREAKDOWN
from .spectral_cpu import HostOps
from .spectral_gpu import DeviceOps

TOL = 1e-4  # residual of each leading eigenpair of the normalised adjacency (its eigenvalues lie in [-1, 1])
BASIS = 24  # Lanczos vectors per component between restarts
KEEP = 8  # Ritz vectors a restart keeps (at least the eigenpairs asked for)
MAX_PRODUCTS = 10_000  # sparse products before the components still open count as not converged
CPU_GROUP_ROWS = 2048  # the CPU solves consecutive components together until they hold this many rows


def start_vector(bounds: np.ndarray) -> np.ndarray:
    """The fixed start: each component's rows get the first draws of ``default_rng(0).uniform(0.5, 1.5)``, so a
    component starts the same whichever others share its solve (not ones, whose Krylov space is one vector on a
    regular graph).

    Parameters
    ----------
    bounds : ndarray
        Component ``c`` owns rows ``bounds[c]`` to ``bounds[c + 1] - 1``.
    """
    sizes = np.diff(bounds)
    draws = np.random.default_rng(0).uniform(0.5, 1.5, int(sizes.max()))
    return draws[np.arange(bounds[-1]) - np.repeat(bounds[:-1], sizes)]


@numba.njit(cache=True)
def symmetric_eigen(A):
    """Eigenvalues and eigenvectors of a small dense symmetric matrix by cyclic Jacobi rotations.

    Built from correctly rounded operations only (no LAPACK, no libm transcendental), in a fixed order, so every
    machine gives the same bytes. Sweeps until the off-diagonal mass is below ``1e-30`` of the matrix's (or 100
    sweeps; Jacobi converges quadratically, a few sweeps in practice).

    Parameters
    ----------
    A : ndarray
        ``(m, m)`` float64 symmetric matrix (only its upper triangle is read).

    Returns
    -------
    tuple
        (eigenvalues ``(m,)``, eigenvectors as the columns of ``(m, m)``), in no particular order.
    """
    m = A.shape[0]
    a = np.empty((m, m))
    for i in range(m):
        for j in range(m):
            a[i, j] = A[i, j] if i <= j else A[j, i]
    z = np.eye(m)
    total = 0.0
    for i in range(m):
        for j in range(m):
            total += a[i, j] * a[i, j]
    for _sweep in range(100):
        off = 0.0
        for p in range(m - 1):
            for q in range(p + 1, m):
                off += a[p, q] * a[p, q]
        if off <= 1e-30 * total:
            break
        for p in range(m - 1):
            for q in range(p + 1, m):
                apq = a[p, q]
                if apq == 0.0:
                    continue
                theta = (a[q, q] - a[p, p]) / (2.0 * apq)
                if abs(theta) > 1e150:
                    t = 0.5 / theta
                else:
                    t = 1.0 / (abs(theta) + np.sqrt(theta * theta + 1.0))
                    if theta < 0.0:
                        t = -t
                c = 1.0 / np.sqrt(t * t + 1.0)
                s = t * c
                for k in range(m):  # A <- A J (columns p, q)
                    akp, akq = a[k, p], a[k, q]
                    a[k, p] = c * akp - s * akq
                    a[k, q] = s * akp + c * akq
                for k in range(m):  # A <- J^T A (rows p, q)
                    apk, aqk = a[p, k], a[q, k]
                    a[p, k] = c * apk - s * aqk
                    a[q, k] = s * apk + c * aqk
                for k in range(m):
                    zkp, zkq = z[k, p], z[k, q]
                    z[k, p] = c * zkp - s * zkq
                    z[k, q] = s * zkp + c * zkq
    values = np.empty(m)
    for i in range(m):
        values[i] = a[i, i]
    return values, z


def _projected_ritz(H: np.ndarray, size: int, n_keep: int) -> tuple[np.ndarray, np.ndarray, float]:
    """The top ``n_keep`` Ritz values (descending; ties by index) of one component's projected matrix (its
    leading ``size`` rows and columns, upper triangle), their coefficient vectors ``(size, n_keep)``, and the
    residual factor ``beta``: each pair's residual is ``|beta * S[-1, i]|`` (0 where the Krylov space ran out)."""
    theta, Z = symmetric_eigen(np.ascontiguousarray(H[:size, :size]))
    top = np.argsort(-theta, kind="stable")[:n_keep]
    beta = H[size, size - 1] if size == H.shape[1] else 0.0
    return theta[top], Z[:, top], beta


def thick_restart_lanczos(ops, n_vec: int, tol: float, max_products: int, stats: dict | None = None) -> list:
    """Per component, the ``n_vec`` largest eigenpairs of a block-diagonal symmetric operator.

    ``ops`` holds the rows grouped by component (``ops.bounds``) and the primitives, on one array module
    ``ops.xp``: ``matvec(x)``; ``seg_dots(V, k, x)``, the ``(n_comp, k)`` per-component dot products of the
    first ``k`` rows of ``V`` with ``x``; ``combine(V, k, coef, add, sign)``, each row ``r`` of component ``c``
    as ``add[r] + sign * sum_j V[j, r] coef[c, j]``; ``comp_of``, each row's component; and
    ``extend_basis(V, H, arrow, first, breakdown)``, the Lanczos steps of a cycle
    (:func:`.lanczos.extend_basis` on those primitives, or a fused twin of it).

    Thick-restart Lanczos: each component builds its own Krylov basis of ``BASIS`` vectors, each new vector
    orthogonalised by the recurrence's known terms and then once more against all the earlier ones (one
    classical Gram-Schmidt pass: full reorthogonalisation), and the projected matrix from those
    coefficients. After each cycle the projected matrices are solved on the host
    (:func:`symmetric_eigen`); a component whose top ``n_vec`` Ritz pairs have residuals under ``tol``, or whose
    Krylov space ran out (then they are exact), is done: its Ritz vectors are stored. The others restart from
    their ``KEEP`` leading Ritz vectors and the last basis vector, until all are done or ``max_products``
    sparse products have been spent.

    Parameters
    ----------
    ops : HostOps or DeviceOps
        The primitives (:mod:`umapviz.graph.start.spectral_cpu`, :mod:`umapviz.graph.start.spectral_gpu`).
    n_vec : int
        Eigenpairs per component (at most ``KEEP``).
    tol : float
        Largest residual accepted.
    max_products : int
        Sparse products after which the remaining components stop where they are.
    stats : dict, optional
        Receives ``products``, ``done_at`` (the products spent when each component was done; 0: never) and
        ``residual`` (each component's largest true residual).

    Returns
    -------
    list
        Per component, (eigenvalues in descending order, ``(size, n_vec)`` host eigenvectors), or None where its
        Krylov space has fewer than ``n_vec`` dimensions or a true residual exceeds ``10 * tol``.
    """
    xp, n, n_comp = ops.xp, ops.n, len(ops.bounds) - 1
    m, keep = BASIS, KEEP
    V = xp.zeros((m + 1, n))
    Y = xp.zeros((n_vec, n))  # the finished components' eigenvectors
    theta_out = np.zeros((n_comp, n_vec))
    done_at = np.zeros(n_comp, dtype=np.int64)
    solvable = np.ones(n_comp, dtype=bool)
    v = xp.asarray(start_vector(np.asarray(ops.bounds)))
    V[0] = v / xp.sqrt(ops.seg_dots(v[None], 1, v)[:, 0])[ops.comp_of]
    H = xp.zeros((n_comp, m + 1, m))
    arrow = np.zeros((n_comp, keep))  # after a restart: the kept Ritz vectors' couplings to the next vector
    first, products = 0, 0
    while True:
        ops.extend_basis(V, H, arrow, first, BREAKDOWN)
        products += m - first
        last = products >= max_products
        host_H = to_host(H)
        finish = np.zeros((n_vec, n_comp, m))
        restart = np.zeros((keep, n_comp, m))
        kept_H = np.zeros((n_comp, m + 1, m))
        for c in np.flatnonzero(done_at == 0):
            short = np.flatnonzero(host_H[c, np.arange(first + 1, m + 1), np.arange(first, m)] <= BREAKDOWN)
            size = first + int(short[0]) + 1 if short.size else m
            theta, S, beta = _projected_ritz(host_H[c], size, max(keep, n_vec))
            if size < n_vec:
                solvable[c], done_at[c] = False, products
            elif beta == 0.0 or last or np.max(np.abs(beta * S[-1, :n_vec])) <= tol:
                theta_out[c], done_at[c] = theta[:n_vec], products
                finish[:, c, :size] = S[:, :n_vec].T
            else:
                restart[:, c, :size] = S[:, :keep].T
                kept_H[c, np.arange(keep), np.arange(keep)] = theta[:keep]
                arrow[c] = beta * S[-1, :keep]
        if finish.any():  # only the finishing components' rows change
            finishing = xp.asarray(finish.any(axis=(0, 2)))[ops.comp_of]
            for i in range(n_vec):
                Y[i] = xp.where(finishing, ops.combine(V, m, xp.asarray(finish[i]), Y[i], 1.0), Y[i])
        if done_at.all():
            break
        kept = [ops.combine(V, m, xp.asarray(restart[i]), xp.zeros(n), 1.0) for i in range(keep)]
        open_rows = xp.asarray((done_at == 0).astype(np.float64))[ops.comp_of]
        V[keep] = V[m] * open_rows
        for i in range(keep):
            V[i] = kept[i]
        H = xp.asarray(kept_H)
        first = keep
    residual = np.zeros((n_comp, n_vec))
    for i in range(n_vec):
        r = ops.matvec(Y[i]) - xp.asarray(theta_out[:, i])[ops.comp_of] * Y[i]
        residual[:, i] = to_host(xp.sqrt(ops.seg_dots(r[None], 1, r)[:, 0]))
    if stats is not None:
        stats.update(products=products, done_at=done_at, residual=residual.max(axis=1))
    vectors = to_host(Y).T
    bounds = ops.bounds
    return [
        (theta_out[c], vectors[bounds[c] : bounds[c + 1]])
        if solvable[c] and np.all(residual[c] <= 10 * tol)  # False for NaN too
        else None
        for c in range(n_comp)
    ]


def check_gpu_memory(n: int, n_vec: int) -> None:
    """MemoryError where the solve's vectors would not fit in half the free GPU memory (the caller then solves
    on the CPU, which gives the same bytes).

    Parameters
    ----------
    n : int
        Rows of the grouped adjacency.
    n_vec : int
        Eigenpairs per component.
    """
    free, need = gpu_memory()[0], 8 * n * (BASIS + 1 + KEEP + n_vec + 8)  # basis, restart, results, temporaries
    if need > free // 2:
        raise MemoryError(
            f"the eigen-solve's vectors of {n:,} rows need {need:,} bytes, more than half the free "
            f"GPU memory ({free:,} bytes)"
        )


def leading_eigenpairs(
    adj: scipy.sparse.csr_matrix, bounds: np.ndarray, n_vec: int, device: str, stats: dict | None = None
) -> list:
    """The ``n_vec`` largest eigenpairs of ``D^-1/2 W D^-1/2`` for each connected component of a symmetric
    adjacency ``W`` whose rows are grouped by component, by :func:`thick_restart_lanczos`: on the GPU all in one
    solve (one launch covers every component), on the CPU each large component by itself (no product spent on a
    component that is done); a component's result is the same bytes either way.

    Parameters
    ----------
    adj : scipy.sparse.csr_matrix
        Symmetric adjacency, float32 weights (the graph's own: both devices multiply the same numbers).
    bounds : ndarray
        Component ``c`` owns rows ``bounds[c]`` to ``bounds[c + 1] - 1``.
    n_vec : int
        Eigenpairs per component.
    device : str
        ``"cpu"`` (Numba) or ``"gpu"`` (CUDA): the same bytes.
    stats : dict, optional
        Filled by :func:`thick_restart_lanczos`.

    Returns
    -------
    list
        Per component, (eigenvalues in descending order, ``(size, n_vec)`` float64 eigenvectors), or None
        where it did not converge.

    Raises
    ------
    MemoryError
        On the GPU, where the solve's vectors would not fit in half its free memory.
    """
    bounds = np.asarray(bounds, dtype=np.int64)
    if device == "gpu":
        check_gpu_memory(adj.shape[0], n_vec)
        return thick_restart_lanczos(DeviceOps(adj, bounds), n_vec, TOL, MAX_PRODUCTS, stats)
    # A component's result does not depend on the others in its solve (every sum is within one component, the
    # start and the stopping rule are per component), so the CPU solves each large component by itself and stops
    # it when it is done, instead of carrying it until the slowest is: the same bytes, less work.
    groups, first = [], 0
    for c in range(bounds.size - 1):
        if bounds[c + 1] - bounds[first] >= CPU_GROUP_ROWS or c == bounds.size - 2:
            groups.append((first, c + 1))
            first = c + 1
    out, parts = [], []
    for lo, hi in groups:
        rows = slice(int(bounds[lo]), int(bounds[hi]))
        block = adj[rows]
        block = scipy.sparse.csr_matrix(
            (block.data, block.indices - rows.start, block.indptr), shape=(rows.stop - rows.start,) * 2
        )
        part = {}
        out += thick_restart_lanczos(HostOps(block, bounds[lo : hi + 1] - bounds[lo]), n_vec, TOL, MAX_PRODUCTS, part)
        parts.append(part)
    if stats is not None:
        stats.update(
            products=max(p["products"] for p in parts),
            done_at=np.concatenate([p["done_at"] for p in parts]),
            residual=np.concatenate([p["residual"] for p in parts]),
        )
    return out
