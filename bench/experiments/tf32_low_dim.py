"""Where the GPU's TF32 candidate selection misses true neighbours: its rounding emulated on the CPU.

    PYTHONPATH=. .venv/bin/python bench/experiments/tf32_low_dim.py --n 400000

Per data set, on every (n // 5000)-th row: the exact kNN (k = 15) with 200 spare candidates as the reference, the
CPU's search (float32 GEMM, its 8 spares) and the GPU's TF32 selection as bench/graph_parity.py --emulate builds it
(the centred rows rounded to 10 mantissa bits, the GPU's 16 spares), both refined by the same exact formula; rows
whose neighbour set differs from the reference. The data: 2-D Gaussian points, a 2-D Gaussian plane rotated into
D features, PCA-like Gaussians (the i-th of 50 columns scaled by 1 / i), and the kit's text_like and mixture.
It decides knn_gpu.FP32_MAX_FEATURES (precision="auto") and says what TF32 still risks above it.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from umapviz import datasets
from umapviz.graph.knn.knn_cpu import exact_rows, reference_index
from umapviz.graph.knn.knn_gpu import n_candidates

K = 15


def cases(n: int, rng: np.random.Generator) -> dict:
    def plane(D: int) -> np.ndarray:
        rotation = np.linalg.qr(rng.standard_normal((D, D)))[0]
        return np.hstack([rng.standard_normal((n, 2)), np.zeros((n, D - 2))]) @ rotation

    made = {"gaussian 2-D": lambda: rng.standard_normal((n, 2))}
    made.update({f"2-D plane in {D} features": (lambda D=D: plane(D)) for D in (4, 16, 64)})
    made["PCA-like 50 features"] = lambda: rng.standard_normal((n, 50)) / np.arange(1, 51)
    made.update(
        {
            name: (lambda name=name: datasets.load(name, n_samples=n, random_state=0)[0])
            for name in ("text_like", "mixture")
        }
    )
    return made


def wrong_rows(X: np.ndarray) -> tuple[int, int, int]:
    """(rows checked, rows the CPU's search gets wrong, rows the emulated TF32 search gets wrong)."""
    rows = np.arange(0, X.shape[0], max(1, X.shape[0] // 5000), dtype=np.int64)
    truth, _ = exact_rows(X, rows, K, "euclidean", False, n_spare=200)
    cpu, _ = exact_rows(X, rows, K, "euclidean", False)
    Z, col_add, scale, prepare = reference_index(X)
    z_tf32 = ((Z.view(np.uint32) + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)
    spare = n_candidates(K, X.shape[0], "tf32") - K
    tf32, _ = exact_rows(X, rows, K, "euclidean", False, reference=(z_tf32, col_add, scale, prepare), n_spare=spare)

    def differ(found):
        return int(np.count_nonzero((np.sort(found, axis=1) != np.sort(truth, axis=1)).any(axis=1)))

    return rows.size, differ(cpu), differ(tf32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=400_000, help="points per data set")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print("| data | n x d | rows checked | CPU (FP32, 8 spares) wrong | emulated TF32 (16 spares) wrong |")
    print("|---|---|---|---|---|")
    for name, make in cases(args.n, rng).items():
        X = np.ascontiguousarray(make(), dtype=np.float32)
        began = time.perf_counter()
        checked, cpu, tf32 = wrong_rows(X)
        print(
            f"| {name} | {X.shape[0]:,} x {X.shape[1]} | {checked:,} | {cpu} | {tf32} ({100 * tf32 / checked:.1f}%) |"
            f"  <!-- {time.perf_counter() - began:.0f} s -->",
            flush=True,
        )


if __name__ == "__main__":
    main()
