"""The GPU exact search's FP16 candidates, emulated on the CPU: does the true k-nearest set lie within the m = k + 48
candidates that half scores select (``knn_gpu.n_candidates(k, n, "fp16")``), where distances concentrate?

The rows are prepared as the GPU prepares them (``scaled_rows``: centred, divided by the largest magnitude, float32),
cast to float16; a score is ``col_add + (-2) * g`` in float32 with g the float32 sum of the exact products of the
half rows rounded to float16 (cuBLAS's FP16 GEMM with FP32 accumulation and half output; its order of summation
differs, not its rounding to half). Truth: float64 distances from the sampled rows to all rows, k nearest by
(distance, index). Data, 384-d: ``gaussian`` (one isotropic cloud) and ``mixture`` (bench/gpu_mixture.py's recipe with
NumPy's generator: 30 Zipf-sized isotropic clusters, centres ~N(0, 4) per coordinate, far from the data's centre,
the case where half scores round most beside the neighbours' gaps).

    PYTHONPATH=. python bench/experiments/fp16_candidates.py --n 1000000 --queries 200
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1]))
from gpu_mixture import mixture_gpu

from umapviz.graph.knn import scaled_rows
from umapviz.graph.knn.knn_gpu import n_candidates

parser = argparse.ArgumentParser()
parser.add_argument("--n", type=int, default=1_000_000)
parser.add_argument("--queries", type=int, default=200)
parser.add_argument("--k", type=int, default=15)
args = parser.parse_args()
n, k = args.n, args.k
m = n_candidates(k, n, "fp16")
for kind in ("gaussian", "mixture"):
    if kind == "gaussian":
        X = np.random.default_rng(0).standard_normal((n, 384), dtype=np.float32)
    else:
        X = mixture_gpu(n, 384, seed=0, xp=np)[0]
    Z = scaled_rows(X, np.float32)[0]
    col_add = (Z * Z).sum(axis=1, dtype=np.float32)
    H = Z.astype(np.float16).astype(np.float32)  # the half rows, exactly representable in float32
    del Z
    rows = np.sort(np.random.default_rng(1).choice(n, args.queries, replace=False))
    found, missed_rows, spare_used = [], 0, []
    X64 = X.astype(np.float64)
    del X
    norms = np.einsum("ij,ij->i", X64, X64)
    for q in rows:
        g = (H @ H[q]).astype(np.float16).astype(np.float32)
        s = col_add + np.float32(-2.0) * g
        s[q] = -np.inf
        top = np.argpartition(s, m)[: m + 1]
        cand = top[np.lexsort((top, s[top]))][:m]
        d2 = norms - 2.0 * (X64 @ X64[q]) + norms[q]
        d2[q] = -1.0
        truth = np.lexsort((np.arange(n), d2))[:k]
        hit = np.isin(truth, cand)
        found.append(hit.mean())
        missed_rows += int(not hit.all())
        rank = {int(j): r for r, j in enumerate(cand)}
        spare_used.append(max(rank.get(int(j), m) for j in truth) - (k - 1))
    print(
        f"{kind} n={n:,} k={k} m={m}: true neighbours among the FP16 candidates {np.mean(found):.4f}, rows missing "
        f"any {missed_rows} of {rows.size}; spares used, median / largest {int(np.median(spare_used))} / "
        f"{max(spare_used)}",
        flush=True,
    )
