"""Supervised and semi-supervised graphs: a fuzzy set intersected with the one its target ``y`` gives, as umap-learn's
``UMAP.fit(X, y)`` does it (``discrete_metric_simplicial_set_intersection`` for a categorical target,
``general_simplicial_set_intersection`` with the target's own fuzzy set for any other metric, then
``reset_local_connectivity``), operation for operation, so the graph equals umap-learn's bit for bit on the same kNN.

A label of -1 means "unlabelled" (semi-supervised): its edges are weakened by ``exp(-1)`` whatever the other end's
label; an edge between two different labels by ``exp(-far_dist)``, ``far_dist = 2.5 / (1 - target_weight)``
(1e12 at weight 1, which cuts them).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse

_SMOOTH_K_TOLERANCE = 1e-5


@dataclass(frozen=True, eq=False)
class Target:
    """A fit's target: what :func:`umapviz.build_graph` intersects its fuzzy set with.

    Parameters
    ----------
    y : numpy.ndarray
        (n,) labels (categorical; -1 unlabelled) or (n,) / (n, t) values for another ``metric``.
    metric : str
        ``"categorical"`` or a metric of :data:`umapviz.graph.knn.METRICS` for the target's own kNN graph.
    weight : float
        umap-learn's ``target_weight`` in [0, 1]: 0 the data alone, 1 the target alone.
    n_neighbors : int
        The target graph's neighbours (-1: the data graph's).
    """

    y: np.ndarray
    metric: str = "categorical"
    weight: float = 0.5
    n_neighbors: int = -1

    def fingerprint(self) -> str:
        """A short digest of the target (the graph cache keys it)."""
        h = hashlib.blake2b(digest_size=8)
        h.update(np.ascontiguousarray(self.y).tobytes())
        h.update(repr((self.y.dtype.str, self.y.shape, self.metric, float(self.weight), self.n_neighbors)).encode())
        return h.hexdigest()

    def intersect(self, fuzzy: scipy.sparse.csr_matrix, n_neighbors: int) -> scipy.sparse.csr_matrix:
        """The fuzzy set intersected with the target's, local connectivity reset (float32 CSR, sorted indices).

        Parameters
        ----------
        fuzzy : scipy.sparse.csr_matrix
            The data's symmetric fuzzy set.
        n_neighbors : int
            The data graph's neighbours (the target graph's when ``self.n_neighbors`` is -1).
        """
        if self.metric == "categorical":
            far_dist = 2.5 * (1.0 / (1.0 - self.weight)) if self.weight < 1.0 else 1.0e12
            result = categorical_intersection(fuzzy, self.y, far_dist=far_dist)
        else:
            from ..knn.metric_cpu import exact_metric_knn  # noqa: PLC0415
            from .fuzzy_cpu import fuzzy_simplicial_set  # noqa: PLC0415

            # The target's distances in float64 by SciPy (umap-learn's pairwise_distances of y, up to its rounding).
            y = np.ascontiguousarray(self.y.reshape(len(self.y), -1), dtype=np.float64)
            k = n_neighbors if self.n_neighbors == -1 else self.n_neighbors
            target_graph = fuzzy_simplicial_set(*exact_metric_knn(y, k, self.metric, {}))
            result = reset_local_connectivity(general_intersection(fuzzy, target_graph, self.weight))
        result = result.tocsr()
        result.sort_indices()
        return result


def categorical_intersection(
    fuzzy: scipy.sparse.spmatrix, labels: np.ndarray, unknown_dist: float = 1.0, far_dist: float = 5.0
) -> scipy.sparse.spmatrix:
    """umap-learn's ``discrete_metric_simplicial_set_intersection`` for labels: each edge weakened by
    ``exp(-unknown_dist)`` at an unlabelled end (-1), by ``exp(-far_dist)`` between different labels; then
    :func:`reset_local_connectivity`.

    Parameters
    ----------
    fuzzy : scipy.sparse.spmatrix
        The symmetric fuzzy set.
    labels : numpy.ndarray
        (n,) integer labels, -1 unlabelled.
    unknown_dist, far_dist : float
        umap-learn's distances for an unknown label and between different labels.
    """
    coo = fuzzy.tocoo()
    _label_weights(coo.row, coo.col, coo.data, np.asarray(labels), unknown_dist, far_dist)
    coo.eliminate_zeros()
    return reset_local_connectivity(coo)


@numba.njit(cache=True)
def _label_weights(rows, cols, values, target, unknown_dist, far_dist):
    """umap-learn's ``fast_intersection``, in place."""
    for nz in range(rows.shape[0]):
        i = rows[nz]
        j = cols[nz]
        if (target[i] == -1) or (target[j] == -1):
            values[nz] *= np.exp(-unknown_dist)
        elif target[i] != target[j]:
            values[nz] *= np.exp(-far_dist)


def reset_local_connectivity(simplicial_set: scipy.sparse.spmatrix) -> scipy.sparse.spmatrix:
    """umap-learn's ``reset_local_connectivity``: each row scaled to a maximum of 1 (scikit-learn's
    ``normalize(norm="max")`` arithmetic: a float32 division by the row's largest magnitude), then the fuzzy union
    with its transpose.

    Parameters
    ----------
    simplicial_set : scipy.sparse.spmatrix
        A fuzzy set with non-negative weights.
    """
    csr = simplicial_set.tocsr()
    if csr.nnz:
        peak = np.maximum(np.abs(csr.max(axis=1).toarray().ravel()), np.abs(csr.min(axis=1).toarray().ravel()))
        norms = peak.astype(csr.dtype).repeat(np.diff(csr.indptr))
        nonzero = norms != 0
        csr.data[nonzero] /= norms[nonzero]
    transpose = csr.transpose()
    product = csr.multiply(transpose)
    result = csr + transpose - product
    result.eliminate_zeros()
    return result


def general_intersection(
    left: scipy.sparse.spmatrix, right: scipy.sparse.spmatrix, weight: float = 0.5
) -> scipy.sparse.coo_matrix:
    """umap-learn's ``general_simplicial_set_intersection``: per edge of either set, the weighted product of the
    two memberships (a missing one counted as half the set's smallest), ``weight`` toward ``right``.

    Parameters
    ----------
    left, right : scipy.sparse.spmatrix
        The data's and the target's fuzzy sets.
    weight : float
        In [0, 1]: 0 ``left`` alone, 1 ``right`` alone.
    """
    result = (left + right).tocoo()
    lhs, rhs = left.tocsr(), right.tocsr()
    _sset_intersection(
        lhs.indptr,
        lhs.indices,
        lhs.data,
        rhs.indptr,
        rhs.indices,
        rhs.data,
        result.row,
        result.col,
        result.data,
        weight,
    )
    return result


@numba.njit(cache=True)
def _sset_intersection(indptr1, indices1, data1, indptr2, indices2, data2, result_row, result_col, result_val, w):
    """umap-learn's ``sparse.general_sset_intersection`` (without its right complement), in place."""
    left_min = max(data1.min() / 2.0, 1.0e-8)
    right_min = min(max(data2.min() / 2.0, 1.0e-8), 1e-4)
    for idx in range(result_row.shape[0]):
        i = result_row[idx]
        j = result_col[idx]
        left_val = left_min
        for k in range(indptr1[i], indptr1[i + 1]):
            if indices1[k] == j:
                left_val = data1[k]
        right_val = right_min
        for k in range(indptr2[i], indptr2[i + 1]):
            if indices2[k] == j:
                right_val = data2[k]
        if left_val > left_min or right_val > right_min:
            if w < 0.5:
                result_val[idx] = left_val * pow(right_val, w / (1.0 - w))
            else:
                result_val[idx] = pow(left_val, (1.0 - w) / w) * right_val


def check_target_n_neighbors(n_neighbors) -> int:
    """``target_n_neighbors`` checked: -1 (the data's n_neighbors) or an integer >= 2; ValueError otherwise.

    Parameters
    ----------
    n_neighbors : int
        umap-learn's ``target_n_neighbors``.
    """
    if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, (int, np.integer)):
        raise ValueError(f"target_n_neighbors={n_neighbors!r} must be an integer: -1 (the data's) or >= 2.")
    if n_neighbors != -1 and n_neighbors < 2:
        raise ValueError(f"target_n_neighbors={n_neighbors!r} must be -1 (the data's n_neighbors) or >= 2.")
    return int(n_neighbors)


def check_target(y, n_samples: int, metric: str, weight, n_neighbors) -> Target:
    """The target of ``fit(X, y)``, checked: ValueError for a ``y`` whose length is not X's, NaN/inf values, a
    ``target_weight`` outside [0, 1] or a bad ``target_n_neighbors``.

    Parameters
    ----------
    y : array-like
        (n,) labels (-1 unlabelled) or values; (n, t) values for a non-categorical ``metric``.
    n_samples : int
        X's rows.
    metric : str
        ``target_metric``: "categorical" or a metric name.
    weight : float
        ``target_weight``.
    n_neighbors : int
        ``target_n_neighbors`` (-1: the data's).
    """
    y_arr = np.asarray(y)
    if y_arr.ndim == 0 or len(y_arr) != n_samples:
        length = "a scalar" if y_arr.ndim == 0 else f"{len(y_arr)} entries"
        raise ValueError(
            f"y has {length} but X has {n_samples} rows: pass one target per row of X (-1 for an unlabelled row)."
        )
    if isinstance(weight, bool) or not isinstance(weight, (int, float, np.number)) or not 0.0 <= weight <= 1.0:
        raise ValueError(f"target_weight={weight!r} must be a number in [0, 1] (0.5 is the usual value).")
    check_target_n_neighbors(n_neighbors)
    if n_neighbors > n_samples:
        raise ValueError(f"target_n_neighbors={n_neighbors!r} must be -1 (the data's) or in [2, {n_samples}].")
    if metric != "categorical":
        from ..knn import METRICS, check_metric  # noqa: PLC0415 - the knn package imports this one's

        metric = check_metric(
            metric, tuple(m for m in METRICS if m not in ("precomputed", "minkowski")), "target_metric"
        )
    if metric == "categorical":
        if y_arr.ndim != 1:
            raise ValueError(f"y of shape {y_arr.shape}: a categorical target is one label per row (1-D).")
        if y_arr.dtype.kind in "fc" and not np.isfinite(y_arr).all():
            raise ValueError("y holds NaN or inf; mark an unlabelled row with -1 instead.")
        if y_arr.dtype.kind not in "biuf":  # strings or objects: codes, the unlabelled -1 kept
            codes = np.unique(y_arr, return_inverse=True)[1].reshape(-1)
            unlabelled = np.array([v == -1 or v == "-1" for v in y_arr.tolist()])
            y_arr = np.where(unlabelled, -1, codes)
        return Target(y=np.ascontiguousarray(y_arr), metric=metric, weight=float(weight), n_neighbors=int(n_neighbors))
    try:
        values = np.asarray(y_arr, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"y must be numbers for target_metric={metric!r}; use 'categorical' for labels.") from exc
    if not np.isfinite(values).all():
        raise ValueError("y holds NaN or inf; pass finite target values.")
    return Target(y=np.ascontiguousarray(values), metric=metric, weight=float(weight), n_neighbors=int(n_neighbors))
