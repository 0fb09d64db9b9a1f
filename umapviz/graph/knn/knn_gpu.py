"""Exact kNN on an NVIDIA GPU (CuPy), with the CPU search's output contract.

Exact kNN, per tile of query rows: one GEMM of scores against all points (cuBLAS: TF32 tensor cores, or plain
float32), a selection kernel that keeps a few more candidates than k per row, and a refine kernel (launched by
:func:`refine_candidates_gpu`) that recomputes those candidates' distances exactly in float64, operation for
operation as :func:`umapviz.graph.knn.knn_cpu.refine_candidates` does, and sorts them by (distance, index) with the
point itself first. So the result equals the CPU's exact kNN unless more points than the spare candidates tie
within the GEMM's rounding. FP32's rounding is that of the CPU's float32 GEMM; TF32 keeps 10 mantissa bits, so
under ``precision="auto"`` a kernel then bounds its rounding (:func:`rounding_bounds`) and flags each row where a
point left out of the candidates may lie nearer than the row's k-th neighbour; those rows are searched again in
FP32 (where they are most rows, see CHECKED_MAX_SHARE). A row whose candidate selection may have been cut short
is redone on the CPU.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..._backend import cupy, gpu_memory, is_cupy, to_host
from ..._host_data import to_device
from . import GEMM_METRICS, PREP_BLOCK_BYTES, check_metric, float64_blocks, scaled_rows, stop_if_cancelled
from .knn_cpu import exact_rows

KERNELS = Path(__file__).with_name("knn_gpu.cu")
PRECISIONS = ("auto", "tf32", "fp32", "fp16")
# The GEMM that precision="auto" starts from is FP32 up to this many features. TF32 keeps 10 mantissa bits of each
# coordinate; in few dimensions a point's k nearest lie far closer than the points' norms, inside that rounding,
# and TF32's candidates miss true neighbours in most rows (bench/experiments/tf32_low_dim.py, RESULTS.md "TF32
# candidates in few dimensions"), while there the GEMM is a small part of the search, so FP32 costs little.
FP32_MAX_FEATURES = 8
# Under "auto", where the TF32 check flags more than this share of the first tile's rows, searching most rows twice
# would cost more than FP32 alone. The bound is loose where points lie far from the data's centre beside their
# neighbours' gaps (well-separated clusters), and TF32 truly misses where neighbours lie within its rounding (few
# intrinsic dimensions); the flagged rows tell the two apart: searched again in FP32, if any row's neighbours
# change, the rest of the search runs in FP32; if none do (over half a tile of rows), in TF32 without the check
# (RESULTS.md "The TF32 check").
CHECKED_MAX_SHARE = 0.5
_SEL_THREADS = 256  # = SEL_THREADS in knn_gpu.cu
_SEL_L = 16  # = SEL_L
REFINE_MAX_CANDIDATES = 1024  # the refine kernel takes one thread per candidate, in one block
_TILE_BYTES = 8 * 2**30  # at most this much for one GEMM score tile
_CUBLAS_COMPUTE_32F = 68
_CUBLAS_COMPUTE_32F_FAST_TF32 = 77
_CUDA_R_32F = 0
_CUDA_R_16F = 2


@functools.lru_cache(maxsize=1)
def _module():
    cp = cupy()
    return cp.RawModule(code=KERNELS.read_text(), options=("--std=c++17", "--fmad=false"))


def resolve_precision(precision: str, n_features: int) -> str:
    """The GEMM, ``"tf32"`` or ``"fp32"``: ``precision`` itself, or for ``"auto"`` :func:`fast_precision`."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision={precision!r} is not one of {PRECISIONS}.")
    return fast_precision(n_features) if precision == "auto" else precision


def fast_precision(n_features: int) -> str:
    """FP32 up to FP32_MAX_FEATURES features, else TF32: the GEMM for a search whose misses are measured anyway
    (the partitioned search's recall), and the one "auto" starts from (then checked)."""
    return "fp32" if n_features <= FP32_MAX_FEATURES else "tf32"


def n_candidates(n_neighbors: int, n_points: int, precision: str) -> int:
    """Candidates kept per row before the exact re-sort (spares absorb the GEMM's rounding). FP16 rounds the scores
    themselves to 11 significant bits, well above TF32's input rounding where the neighbours' scores are large
    beside their gaps (points far from the data's centre), so it keeps three times TF32's spares."""
    if precision == "fp32":
        spare = max(8, n_neighbors // 2)
    elif precision == "fp16":
        spare = max(48, 2 * n_neighbors)
    else:
        spare = max(16, n_neighbors)
    return int(min(n_points, n_neighbors + spare))


def knn_bytes_needed(n: int, d: int, n_neighbors: int, tile_rows: int, precision: str = "auto") -> int:
    """GPU bytes the exact kNN needs for n points of d features with a given tile of query rows."""
    gemm = resolve_precision(precision, d)
    m = n_candidates(n_neighbors, n, gemm)
    per_point = 8 * n_neighbors + 12  # the outputs; the flags and the norms of the TF32 check
    half_rows = 2 * n * d if gemm == "fp16" else 0  # the prepared rows in FP16 beside the float32 ones
    return reference_bytes(n, d, False) + half_rows + 4 * tile_rows * (_score_ld(n) + m + d) + per_point * n + 2**20


def reference_bytes(n: int, d: int, data_on_device: bool) -> int:
    """GPU bytes of :func:`reference_index_gpu` for n x d float32 points: X's copy on the GPU (unless it is there
    already: ``data_on_device``), its prepared float32 rows and row norms, and the preparation's float64 blocks."""
    return 4 * n * d * (1 if data_on_device else 2) + 4 * n + 3 * min(PREP_BLOCK_BYTES, 8 * n * d)


def _score_ld(n: int) -> int:
    """Leading dimension of a score tile for n columns: a multiple of 4, so each row is 16-byte aligned (the
    selection copies rows 16 bytes at a time)."""
    return -(-n // 4) * 4


def _plan_tile(n: int, d: int, k: int, precision: str) -> int:
    """Rows per GEMM tile: as many as memory, the 8 GiB tile cap and 32-bit GEMM sizes allow."""
    free, total = gpu_memory()
    fixed = knn_bytes_needed(n, d, k, 0, precision)
    ld = _score_ld(n)
    by_memory = (int(free * 0.8) - fixed) // (4 * ld)
    tile = min(n, _TILE_BYTES // (4 * ld), (2**31 - 1) // ld, by_memory)
    if tile < 1:
        need = knn_bytes_needed(n, d, k, min(n, 256), precision)
        raise MemoryError(
            f"Exact kNN of {n:,} x {d} points on the GPU needs about {need / 2**30:.2f} GiB of GPU memory, "
            f"but only {free / 2**30:.2f} GiB of {total / 2**30:.2f} GiB is free. Free GPU memory, use fewer "
            "points, or use device='cpu' (knn='approx' for large data)."
        )
    return int(tile)


def _gemm_scores(Q, Z, out, precision: str) -> None:
    """out[:, :n] = Q (rows, d) @ Z (n, d)^T, through cuBLAS with TF32 or FP32 compute on float32 Q, Z and out, or
    ("fp16") on float16 Q, Z and out with FP32 accumulation; out (rows, ld) is C-contiguous with ld >= n (the
    columns beyond n are left as they are)."""
    cp = cupy()
    rows, d = Q.shape
    n, ld = Z.shape[0], out.shape[1]
    try:
        from cupy_backends.cuda.libs import cublas  # noqa: PLC0415 - part of CuPy

        handle = cp.cuda.device.get_cublas_handle()
        one = np.array(1.0, dtype=np.float32)
        zero = np.array(0.0, dtype=np.float32)
        compute = _CUBLAS_COMPUTE_32F_FAST_TF32 if precision == "tf32" else _CUBLAS_COMPUTE_32F
        kind = _CUDA_R_16F if precision == "fp16" else _CUDA_R_32F
        # Column-major view: out^T (n, rows) = Z (n x d, stored as d x n) ^T @ Q^T (d x rows).
        cublas.gemmEx(
            handle,
            1,
            0,
            n,
            rows,
            d,
            one.ctypes.data,
            Z.data.ptr,
            kind,
            d,
            Q.data.ptr,
            kind,
            d,
            zero.ctypes.data,
            out.data.ptr,
            kind,
            ld,
            compute,
            -1,
        )
    except (ImportError, AttributeError, TypeError):
        out[:, :n] = cp.matmul(Q, Z.T)


def _selection_matrix(X, metric: str):
    """(Z, col_add, scale, prepare) as :func:`umapviz.graph.knn.knn_cpu._selection_matrix` builds them, computed on the
    GPU from CuPy float32 X (``prepare`` transforms CuPy query rows as X's rows were). The float64 work runs a
    block of rows at a time (knn.float64_blocks): Z and a few blocks of GPU memory beside X."""
    cp = cupy()
    n, d = X.shape
    if metric == "cosine":

        def prepare_cosine(A):
            return _unit_rows(A.astype(cp.float64))

        Z = cp.empty((n, d), dtype=cp.float32)
        for rows in float64_blocks(n, d):
            Z[rows] = prepare_cosine(X[rows])
        return Z, cp.zeros(n, dtype=cp.float32), np.float32(-1.0), prepare_cosine
    Z, mean, divisor = scaled_rows(X, cp.float32)
    col_add = cp.empty(n, dtype=cp.float32)
    for rows in float64_blocks(n, d):  # a row's sum does not depend on the block: the same bytes as all at once
        col_add[rows] = (Z[rows] * Z[rows]).sum(axis=1, dtype=cp.float32)

    def prepare_euclidean(A):
        A64 = A.astype(cp.float64) - mean
        A64 /= divisor
        return cp.ascontiguousarray(A64.astype(cp.float32))

    return Z, col_add, np.float32(-2.0), prepare_euclidean


def _unit_rows(A):
    """Rows of float64 CuPy A scaled to unit length (zero rows stay zero), as float32."""
    cp = cupy()
    norms = cp.linalg.norm(A, axis=1, keepdims=True)
    return cp.ascontiguousarray(cp.where(norms > 0, A / cp.where(norms > 0, norms, 1.0), 0.0).astype(cp.float32))


def exact_knn_gpu(
    X,
    n_neighbors: int,
    metric: str = "euclidean",
    precision: str = "auto",
    return_device: bool = False,
    cancel: Callable[[], bool] | None = None,
    stats: dict | None = None,
):
    """Exact kNN on the GPU: ``(indices int32 (n, k), distances float32 (n, k))``, self first.

    Raises MemoryError (saying how much is needed) when the problem does not fit.

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray
        (n, d) float data.
    n_neighbors : int
        k, the point itself included.
    metric : str
        ``"euclidean"`` or ``"cosine"``.
    precision : str
        The GEMM's. ``"auto"``: FP32 up to FP32_MAX_FEATURES features; above, TF32 tensor cores, then a check
        bounds TF32's rounding per row and searches again in FP32 the rows where a point may have been missed, so
        that "auto" finds what ``"fp32"`` finds. Where that is most rows of the first tile, those rows decide:
        if FP32 changes any, the rest runs in FP32; if none, in TF32 unchecked (CHECKED_MAX_SHARE).
        ``"tf32"`` unchecked is faster and may miss neighbours that lie within TF32's rounding (data of few
        intrinsic dimensions); ``"fp32"``: plain float32. ``"fp16"``: the rows and the scores in IEEE half precision
        (FP32 accumulation), unchecked, with more spare candidates (:func:`n_candidates`): half the score traffic
        and about twice TF32's GEMM rate, for searches whose recall is measured (``knn="auto"``'s exact step);
        it misses more than TF32 where neighbours' scores lie within its rounding (few intrinsic dimensions).
    return_device : bool
        Return CuPy arrays (else NumPy).
    cancel : callable, optional
        Asked before each tile of query rows (BuildCancelled when it returns True).
    stats : dict, optional
        Filled with ``rows_fp32`` (rows searched again in FP32 after the TF32 check), ``rows_unchecked`` (rows
        searched in TF32 without the check, on the first tile's evidence) and ``rows_host`` (rows redone on the
        CPU: a selection cut short, or an all-zero row under cosine).
    """
    return _knn_gpu(X, None, n_neighbors, metric, precision, return_device, cancel, stats=stats)


def reference_index_gpu(X, metric: str = "euclidean") -> tuple:
    """What :func:`query_knn_gpu` computes from the reference set X before any query, kept on the GPU: X itself
    (the exact re-scoring reads it) and its rows centred and scaled, or normalised, in float32 (2 x n x d float32
    of GPU memory). Pass it to query_knn_gpu to skip the upload and that pass on repeated queries against X."""
    metric = check_metric(metric, GEMM_METRICS, "the GPU search")
    n, d = X.shape
    _check_free(reference_bytes(n, d, is_cupy(X)), f"the reference set of {n:,} x {d} points")
    Xd = to_device(X)
    return (Xd, *_selection_matrix(Xd, metric))


def query_knn_gpu(
    X, queries, n_neighbors: int, metric: str = "euclidean", precision: str = "auto", reference: tuple | None = None
):
    """Exact kNN in the reference set ``X`` of each row of ``queries`` on the GPU, as NumPy arrays
    ``(indices int32 (n_queries, k), distances float32 (n_queries, k))``: the result of
    :func:`umapviz.graph.knn.knn_cpu.query_knn` (no column is "self"), found as :func:`exact_knn_gpu` finds neighbours.
    ``reference``: :func:`reference_index_gpu` of X and ``metric``, computed once for many calls."""
    if queries.ndim != 2 or queries.shape[1] != X.shape[1]:
        raise ValueError(f"queries of shape {queries.shape} do not have the reference set's {X.shape[1]} columns.")
    return _knn_gpu(X, queries, n_neighbors, metric, precision, False, reference=reference)


def _check_free(need: int, what: str) -> None:
    """MemoryError naming ``what`` when ``need`` bytes exceed the GPU's free memory."""
    free, total = gpu_memory()
    if need > free:
        raise MemoryError(
            f"Exact kNN on the GPU needs at least {need / 2**30:.2f} GiB of GPU memory for {what}, but only "
            f"{free / 2**30:.2f} GiB of {total / 2**30:.2f} GiB is free. Free GPU memory, or use device='cpu'."
        )


def _knn_gpu(
    X,
    queries,
    n_neighbors: int,
    metric: str,
    precision: str,
    return_device: bool,
    cancel: Callable[[], bool] | None = None,
    reference: tuple | None = None,
    stats: dict | None = None,
):
    """Exact kNN of the rows of ``queries`` (None: of X itself, each point first) among the rows of X."""
    cp = cupy()
    metric = check_metric(metric, GEMM_METRICS, "the GPU search")
    n, d = X.shape
    gemm = resolve_precision(precision, d)
    n_q = n if queries is None else queries.shape[0]
    k = int(n_neighbors)
    if not 1 <= k <= n:
        raise ValueError(f"n_neighbors={k} must be between 1 and the number of points ({n}).")
    if n_candidates(k, n, gemm) > min(_SEL_THREADS * _SEL_L, REFINE_MAX_CANDIDATES):
        most = REFINE_MAX_CANDIDATES - 16
        raise ValueError(f"n_neighbors={k} is too large for the GPU kNN (at most {most} supported).")
    if queries is not None:
        _check_free(4 * n_q * d * 2, f"{n_q:,} queries of {d} features")
    checking = precision == "auto" and gemm == "tf32"
    Xd, Z, col_add, scale, prepare = reference if reference is not None else reference_index_gpu(X, metric)
    Qd = Xd if queries is None else to_device(queries)
    Zq = Z if queries is None else prepare(Qd)
    tile = min(_plan_tile(n, d, k, gemm), n_q)
    search = _TileSearch(Xd, Qd, Z, col_add, scale, k, metric == "cosine", queries is None, tile)
    out_idx = cp.full((n_q, k), -1, dtype=cp.int32)
    out_dist = cp.full((n_q, k), np.inf, dtype=cp.float32)
    overflow = cp.zeros(n_q, dtype=cp.int32)  # candidates the selection may have cut: redone on the host
    suspect = cp.zeros(n_q, dtype=cp.int32) if checking else None  # rows TF32 may have got wrong: redone in FP32
    counts = {"rows_fp32": 0, "rows_unchecked": 0}

    def search_fp32(ids) -> int:
        """Search the query rows ``ids`` again in FP32 into the outputs; the number whose neighbours changed."""
        changed = 0
        for first in range(0, ids.size, tile):
            stop_if_cancelled(cancel)
            part = ids[first : first + tile]
            idx, dist = cp.empty((part.size, k), cp.int32), cp.empty((part.size, k), cp.float32)
            cut = cp.zeros(part.size, cp.int32)
            search(Zq[part], part, "fp32", idx, dist, cut)
            changed += int((idx != out_idx[part]).any(axis=1).sum())
            out_idx[part], out_dist[part], overflow[part] = idx, dist, cut
        counts["rows_fp32"] += int(ids.size)
        return changed

    done = []  # with `cancel`: an event after each tile
    for start in range(0, n_q, tile):
        if cancel is not None:
            # Launches return at once, so the host would queue every tile before asking. Waiting for the tile
            # before last keeps the host at most two tiles ahead, and the GPU busy with the last one meanwhile.
            if len(done) >= 2:
                done[-2].synchronize()
            stop_if_cancelled(cancel)
            done.append(cp.cuda.Event(disable_timing=True))
        rows = slice(start, min(n_q, start + tile))
        search(
            Zq[rows],
            cp.arange(rows.start, rows.stop, dtype=cp.int64),
            gemm,
            out_idx[rows],
            out_dist[rows],
            overflow[rows],
            suspect[rows] if checking else None,
        )
        if checking and start == 0:
            flagged = cp.flatnonzero(suspect[rows])
            if flagged.size > CHECKED_MAX_SHARE * (rows.stop - rows.start):
                # The bound vouches for few rows: the rows decide how the rest runs (see CHECKED_MAX_SHARE).
                suspect[flagged] = 0
                checking = False
                if search_fp32(flagged):
                    gemm = "fp32"
                else:
                    counts["rows_unchecked"] = n_q - rows.stop
        if cancel is not None:
            done[-1].record()
    if suspect is not None:
        search_fp32(cp.flatnonzero(suspect))
    search = Z = Zq = None  # the score tile and the prepared rows: freed before any host work
    if metric == "cosine" and not bool(Xd.any(axis=1).all()):  # all-zero rows: see knn.exact_rows
        overflow[~Qd.any(axis=1)] = 1  # an all-zero query's candidates are chosen on the host
    redo = cp.flatnonzero(overflow).get()
    if redo.size:  # rare: cut-short candidates, or an all-zero query under cosine; redone exactly on the host
        host_queries = None if queries is None else to_host(Qd)
        idx, dist = exact_rows(to_host(Xd), redo.astype(np.int64), k, metric, progress=False, queries=host_queries)
        out_idx[cp.asarray(redo)] = cp.asarray(idx.astype(np.int32))
        out_dist[cp.asarray(redo)] = cp.asarray(dist.astype(np.float32))
    if stats is not None:
        stats.update(counts, rows_host=int(redo.size))
    if return_device:
        return out_idx, out_dist
    return out_idx.get(), out_dist.get()


def rounding_bounds(n_features: int, scale: float) -> tuple[float, float]:
    """``(q_coeff, sq_err)``: a TF32 score ``col_add[j] + scale * (q . z_j)`` lies within
    ``|z_j| * (q_coeff * |q| + sq_err * |z_j|)`` of the exact score of the data's rows, where q and z_j are the
    prepared float32 rows of the query and of point j.

    TF32 keeps 10 of float32's 23 mantissa bits, so each input of a product is off by less than 2**-10 of itself
    (even truncated), a product by 2**-9 + 2**-20 of itself, and the products' sum by 2**-9 + 2**-20 of
    sum |q_i z_ji| <= |q| |z_j| (Cauchy-Schwarz); float32 accumulation adds 2**-23 of that sum per addition, even
    truncating. The float32 terms (col_add's sum of squares, the rows' own rounding to float32, the score's
    multiply and add) add (d + 8) * 2**-24 of |z_j|**2 and of |q| |z_j|. A quarter more covers the norms'
    own float32 rounding.
    """
    u = 2.0**-24
    dot = 2.0**-9 + 2.0**-20 + (n_features + 8) * 2 * u
    return 1.25 * (abs(float(scale)) * dot + (n_features + 8) * u), 1.25 * (n_features + 8) * u


class _TileSearch:
    """The exact search of one tile of query rows against all of X: a GEMM of scores, select_candidates, refine;
    given ``suspect`` (TF32 under "auto") also flag_rounding_misses, which marks the rows whose candidates the
    GEMM's rounding may have cut short (:func:`rounding_bounds`)."""

    def __init__(self, X, Q, Z, col_add, scale, k: int, cosine: bool, self_first: bool, tile: int):
        cp = cupy()
        self.X, self.Q, self.Z, self.col_add, self.scale = X, Q, Z, col_add, scale
        self.k, self.cosine, self.self_first = k, cosine, self_first
        self.n = Z.shape[0]
        self.ld = _score_ld(self.n)
        self.scores = cp.empty((tile, self.ld), dtype=cp.float32)
        self.Z16 = None  # the prepared rows in FP16, made for the first FP16 tile
        # Z's rows are unit length under cosine (zero rows: 1 bounds them too); else col_add is their squared norm.
        self.norms = cp.ones(self.n, dtype=cp.float32) if cosine else cp.sqrt(col_add)
        self.q_coeff, self.sq_err = rounding_bounds(Z.shape[1], scale)

    def __call__(self, Zrows, ids, precision: str, out_idx, out_dist, overflow, suspect=None) -> None:
        """Search query rows ``Zrows`` (prepared; query ``ids[r]`` in row r) into the outputs' rows; ``suspect``
        (int32 per row, TF32 only) gets 1 where the rounding may have cut a neighbour."""
        cp = cupy()
        rows = Zrows.shape[0]
        m = n_candidates(self.k, self.n, precision)
        cand = cp.empty((rows, m), dtype=cp.int32)
        if precision == "fp16":  # FP16 scores in the same buffer, rows 2 * ld halves apart
            if self.Z16 is None:
                self.Z16 = self.Z.astype(cp.float16)
            scores, ld, select = self.scores.view(cp.float16)[:rows], 2 * self.ld, "select_candidates_h"
            _gemm_scores(Zrows.astype(cp.float16), self.Z16, scores, precision)
        else:
            scores, ld, select = self.scores[:rows], self.ld, "select_candidates"
            _gemm_scores(Zrows, self.Z, scores, precision)
        mod = _module()
        mod.get_function(select)(
            (rows,),
            (_SEL_THREADS,),
            (
                scores,
                np.int32(self.n),
                np.int64(ld),
                self.col_add,
                self.scale,
                ids,
                np.int32(self.self_first),
                np.int32(m),
                cand,
                overflow,
            ),
        )
        refine_candidates_gpu(self.X, self.Q, ids, cand, self.k, self.cosine, self.self_first, out_idx, out_dist)
        if suspect is None:
            return
        if self.cosine:
            q_norms = cp.ones(rows, dtype=cp.float32)
        elif self.self_first:
            q_norms = self.norms[ids]
        else:
            q_norms = cp.sqrt((Zrows * Zrows).sum(axis=1))
        q_err = (q_norms * np.float32(self.q_coeff)).astype(cp.float32)
        mod.get_function("flag_rounding_misses")(
            (rows,),
            (_SEL_THREADS,),
            (
                scores,
                np.int32(self.n),
                np.int64(self.ld),
                self.col_add,
                self.scale,
                self.norms,
                q_err,
                np.float32(self.sq_err),
                ids,
                np.int32(self.self_first),
                cand,
                np.int32(m),
                out_idx,
                np.int32(self.k),
                suspect,
            ),
        )


def refine_candidates_gpu(X, Q, row_ids, cand, k: int, cosine: bool, match_self: bool, out_idx, out_dist) -> None:
    """Exact float64 distances from query rows ``Q[row_ids]`` to their candidates (rows of X); keep the k best,
    ties by index. With ``match_self`` (Q is X) the query's own row sorts first. The launch of ``knn_gpu.cu``'s
    ``refine`` kernel (one block per query row, one thread per candidate), twin of
    :func:`umapviz.graph.knn.knn_cpu.refine_candidates` (operation for operation: change both together).

    Candidates equal to -1 are skipped; a row left with fewer than k valid candidates gets -1 at the end.

    Parameters
    ----------
    X : cupy.ndarray
        (n, d) C-contiguous float32 rows the candidates index.
    Q : cupy.ndarray
        (n_q, d) C-contiguous float32 query rows (X itself for a graph of X).
    row_ids : cupy.ndarray
        (rows,) int64: the query row of each row of ``cand``.
    cand : cupy.ndarray
        (rows, m) C-contiguous int32 candidate rows of X per query, -1 for none; m at most 1,024.
    k : int
        Neighbours kept per query.
    cosine : bool
        Cosine distance (else Euclidean).
    match_self : bool
        Q is X: the query's own row sorts first.
    out_idx, out_dist : cupy.ndarray
        (rows, k) C-contiguous int32 and float32 outputs.
    """
    rows, m = (int(s) for s in cand.shape)
    threads = max(32, -(-m // 32) * 32)
    if not (is_cupy(X) and is_cupy(Q)) or threads > REFINE_MAX_CANDIDATES:
        raise ValueError(f"the GPU refine needs CuPy X and Q and at most {REFINE_MAX_CANDIDATES} candidates, got {m}.")
    if row_ids.dtype != np.int64 or row_ids.shape != (rows,):
        raise ValueError(f"row_ids must be int64 of shape ({rows},), got {row_ids.dtype} {row_ids.shape}.")
    _module().get_function("refine")(
        (rows,),
        (threads,),
        (
            X,
            Q,
            np.int32(X.shape[1]),
            row_ids,
            np.int32(match_self),
            cand,
            np.int32(m),
            np.int32(k),
            np.int32(cosine),
            out_idx,
            out_dist,
        ),
        shared_mem=threads * 12,  # a double and an int per thread
    )
