"""knn="auto" on the GPU by data kind and size: the steps it took, the recall it reached, its seconds; the exact
search beside it (at the sizes given to --exact), and optionally the fit end to end.

    PYTHONUNBUFFERED=1 PYTHONPATH=. python3 bench/knn_auto.py --sizes 1000000 --kinds text_like,iso_lowdim \
        --exact 1000000 --fit 1000000 --out $OUT/knn_auto.jsonl

Kinds, each 384-d and drawn on the GPU: ``gaussian`` (one isotropic cloud, the kit's gaussian recipe), ``mixture``
(bench/gpu_mixture.py: 30 Zipf-sized isotropic clusters far apart), ``text_like`` (the kit's recipe, anisotropic
topics of low intrinsic dimension), ``iso_lowdim`` (:func:`iso_lowdim`: 40 Zipf-sized clusters far apart, none
above a fifth of the points, two thirds of the points in isotropic clusters and a third in clusters lying on a 6-d
subspace). One line of --out per (kind, n, what): ``auto`` is ``build_graph(X, device="gpu", random_state=0)`` with
X a CuPy array (its steps, recall on the 1,000 rows it samples, seconds of the whole graph build); ``exact`` the
exact GPU kNN alone (its checked GEMM, what ``knn="exact"`` runs) and ``exact_fp16`` with the FP16 GEMM that
auto's exact step takes, each with its recall on other sampled rows; ``fit``
``UMAP(device="gpu", random_state=0).fit_transform`` of X as a NumPy array. Seconds are after a warm-up build in the
same process (kernel caches warm), the GPU synchronised; ``--pool-limit`` sets CuPy's pool limit (bytes) first.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from gpu_mixture import mixture_gpu, text_like_gpu

from umapviz.datasets.generators import _zipf_sizes


def iso_lowdim(n: int, d: int = 384, n_clusters: int = 40, seed: int = 0):
    """(n, d) float32 CuPy rows: n_clusters Zipf-sized Gaussian clusters (sizes capped at a fifth of n, the excess
    spread over the others), centres ~N(0, 2**2) per coordinate (far apart); the largest clusters, in order, are
    isotropic (unit variance in all d dimensions) until they hold two thirds of the points, the rest lie on a random
    6-d subspace each (variance d/6 per axis: the same mean squared radius)."""
    import cupy as cp  # noqa: PLC0415 - GPU runs only

    sizes = np.asarray(_zipf_sizes(n, n_clusters), dtype=np.int64)
    cap = n // 5
    while sizes.max() > cap:
        extra = int((sizes - cap).clip(0).sum())
        sizes = sizes.clip(max=cap)
        small = sizes < cap
        sizes[small] += np.diff(np.linspace(0, extra, int(small.sum()) + 1).astype(np.int64))
    order = np.argsort(-sizes, kind="stable")
    isotropic = np.zeros(n_clusters, dtype=bool)
    isotropic[order[np.cumsum(sizes[order]) - sizes[order] < 2 * n // 3]] = True
    rng = cp.random.default_rng(seed)
    labels = cp.asarray(np.random.default_rng(seed).permutation(np.repeat(np.arange(n_clusters), sizes)))
    X = cp.empty((n, d), dtype=cp.float32)
    centres = rng.standard_normal((n_clusters, d), dtype=cp.float32) * np.float32(2.0)
    for c in range(n_clusters):
        members = cp.flatnonzero(labels == c)
        if isotropic[c]:
            X[members] = rng.standard_normal((members.size, d), dtype=cp.float32) + centres[c]
        else:
            basis, _ = cp.linalg.qr(rng.standard_normal((d, 6), dtype=cp.float32))
            coords = rng.standard_normal((members.size, 6), dtype=cp.float32) * np.float32(np.sqrt(d / 6))
            X[members] = coords @ basis.T + centres[c]
    return X, labels, cp.asarray(isotropic)[labels]


def make(kind: str, n: int):
    """(X CuPy (n, 384), per-row group mask or None): the rows of isotropic clusters for iso_lowdim."""
    import cupy as cp  # noqa: PLC0415 - GPU runs only

    if kind == "gaussian":
        return cp.random.default_rng(0).standard_normal((n, 384), dtype=cp.float32), None
    if kind == "mixture":
        return mixture_gpu(n, 384, seed=0)[0], None
    if kind == "text_like":
        return text_like_gpu(n), None
    if kind == "iso_lowdim":
        X, _, iso = iso_lowdim(n)
        return X, iso
    raise ValueError(kind)


def sync() -> float:
    import cupy as cp  # noqa: PLC0415 - GPU runs only

    cp.cuda.Device().synchronize()
    return time.perf_counter()


def main() -> None:
    import cupy as cp  # noqa: PLC0415 - GPU runs only

    from umapviz import UMAP  # noqa: PLC0415
    from umapviz.graph import build_graph  # noqa: PLC0415
    from umapviz.graph.knn.knn_gpu import exact_knn_gpu  # noqa: PLC0415
    from umapviz.graph.knn.recall import recall_from_truth, sampled_truth  # noqa: PLC0415

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000")
    parser.add_argument("--kinds", default="text_like,iso_lowdim,mixture,gaussian")
    parser.add_argument("--exact", default="", help="sizes at which the exact search runs too")
    parser.add_argument("--fit", default="", help="sizes at which UMAP().fit_transform of host X runs too")
    parser.add_argument("--pool-limit", type=int, default=0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.pool_limit:
        cp.get_default_memory_pool().set_limit(size=args.pool_limit)
    exact_sizes = {int(s) for s in args.exact.split(",") if s}
    fit_sizes = {int(s) for s in args.fit.split(",") if s}
    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()

    def emit(row: dict) -> None:
        row.update(device=device, machine=platform.node(), pool_limit=args.pool_limit)
        print(json.dumps(row), flush=True)
        if args.out:
            with open(args.out, "a") as fh:
                fh.write(json.dumps(row) + "\n")

    t = time.perf_counter()
    build_graph(text_like_gpu(200_000), knn="approx", random_state=0, device="gpu", cache=False, progress=False)
    exact_knn_gpu(text_like_gpu(20_000), 15)
    exact_knn_gpu(text_like_gpu(20_000), 15, precision="fp16")
    emit({"what": "warm-up", "seconds": round(sync() - t, 2)})
    for n in (int(s) for s in args.sizes.split(",")):
        for kind in args.kinds.split(","):
            X, iso = make(kind, n)
            sync()
            t0 = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                graph = build_graph(X, random_state=0, device="gpu", cache=False, progress=True)
            seconds = sync() - t0
            p = graph.params
            row = {"what": "auto", "kind": kind, "n": n, "graph_s": round(seconds, 2), "knn": p["knn"]}
            row.update({key: p.get(key) for key in ("knn_recall", "knn_steps", "knn_work", "knn_refine")})
            if iso is not None:  # recall by group, on other sampled rows
                rows, truth = sampled_truth(X, 15, 1000, seed=1, device="gpu")
                mask = iso[cp.asarray(rows)].get()
                for name, keep in (("recall_isotropic", mask), ("recall_6d", ~mask)):
                    row[name] = round(recall_from_truth(graph.knn_indices, rows[keep], truth[keep]), 4)
            row["warning"] = next((str(w.message) for w in caught if "target" in str(w.message)), None)
            row["peak_pool_gib"] = round(cp.get_default_memory_pool().total_bytes() / 2**30, 1)
            emit(row)
            del graph
            if n in exact_sizes:
                rows, truth = sampled_truth(X, 15, 1000, seed=1, device="gpu")
                for precision in ("auto", "fp16"):
                    t0 = sync()
                    idx, _ = exact_knn_gpu(X, 15, precision=precision, return_device=True)
                    seconds = sync() - t0
                    found = idx[cp.asarray(rows)].get()
                    recall = round(float(recall_from_truth(found, np.arange(rows.size), truth)), 4)
                    emit({"what": "exact" if precision == "auto" else f"exact_{precision}", "kind": kind, "n": n,
                          "knn_s": round(seconds, 2), "recall": recall})  # fmt: skip
                    del idx
            if n in fit_sizes:
                host = X.get()
                del X
                cp.get_default_memory_pool().free_all_blocks()
                t0 = sync()
                UMAP(device="gpu", random_state=0).fit_transform(host)
                emit({"what": "fit", "kind": kind, "n": n, "fit_s": round(sync() - t0, 2)})
                del host
            X = iso = None
            cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
