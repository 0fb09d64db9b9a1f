"""The spectral layout's eigen-solve on the CPU (SciPy): the leading eigenpairs of a normalised adjacency."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg

DENSE_EIGEN_MAX = 1000  # components up to this size use a dense eigen-solver (robust, fast enough)
_EIGEN_TOL = 1e-4  # residual tolerance of SciPy's sparse eigen-solves


def host_eigenpairs(adj: scipy.sparse.csr_matrix, n_vec: int, seed: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The ``n_vec`` largest eigenpairs of ``M = D^-1/2 W D^-1/2`` with SciPy, or None when no solver converges."""
    n = adj.shape[0]
    adj = adj.astype(np.float64, copy=False)  # the GPU path's float32 adjacency, when it hands over
    degree = np.asarray(adj.sum(axis=1)).ravel()
    inv_sqrt = 1.0 / np.sqrt(degree)
    M = scipy.sparse.diags(inv_sqrt) @ adj @ scipy.sparse.diags(inv_sqrt)
    if n <= DENSE_EIGEN_MAX:
        return scipy.linalg.eigh(M.toarray(), subset_by_index=(n - n_vec, n - 1))
    try:
        return scipy.sparse.linalg.eigsh(
            M,
            k=n_vec,
            which="LA",
            # UMAP's sqrt(n) Lanczos vectors cost n * sqrt(n) memory for no gain in accuracy; 20 is also faster
            # than 32 or sqrt(n) on graphs of tens of thousands of points.
            ncv=min(n - 1, max(2 * n_vec + 1, 20)),
            tol=_EIGEN_TOL,
            v0=np.ones(n),
            maxiter=5 * n,
        )
    except (scipy.sparse.linalg.ArpackNoConvergence, scipy.sparse.linalg.ArpackError):
        try:
            start = np.random.default_rng([int(seed), 3]).normal(size=(n, n_vec))
            start[:, 0] = np.sqrt(degree)  # the known top eigenvector speeds LOBPCG up
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # LOBPCG's own convergence chatter
                return scipy.sparse.linalg.lobpcg(M, start, largest=True, tol=_EIGEN_TOL, maxiter=5 * n)
        except Exception:
            return None
