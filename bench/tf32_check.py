"""The exact GPU kNN's TF32 check (precision="auto"): whether its rounding bound holds, how many rows it sends back
to FP32, and what it costs, on data of many and of few intrinsic dimensions.

    PYTHONPATH=$PWD python3 bench/tf32_check.py [--cases text_like_gpu:500000,plane64:400000]
    (on the GPU machine: bash bench/device_run.sh tf32_check)

Per case (k = 15, Euclidean):
- the bound: for 256 sampled query rows against every point, cuBLAS's TF32 scores beside exact float64 scores of
  the data's centred and scaled rows; the largest |error| / bound over all pairs (knn_gpu.rounding_bounds; below 1:
  the bound holds) and the median error / bound;
- seconds of ``exact_knn_gpu`` with precision "fp32", "tf32" (unchecked) and "auto" (TF32 checked), each the
  median of 3 calls after a warm-up, and the rows "auto" searched again in FP32 (where they were most of its first
  tile, it ran the rest in FP32);
- rows whose neighbours differ from FP32's: "tf32" and "auto".

Cases: ``text_like_gpu`` and ``mixture_gpu`` (bench/gpu_mixture.py: 384-d), ``planeD`` (a 2-D Gaussian plane
rotated into D features), ``pcaD`` (D Gaussian columns, the i-th scaled by 1 / i).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

K = 15


def make(name: str, n: int):
    """The case's float32 points, on the GPU."""
    import cupy as cp  # noqa: PLC0415 - GPU only
    from gpu_mixture import mixture_gpu, text_like_gpu  # noqa: PLC0415 - a sibling script

    rng = cp.random.default_rng(0)
    if name == "text_like_gpu":
        return text_like_gpu(n)
    if name == "mixture_gpu":
        return mixture_gpu(n, 384, seed=0)[0]
    if name.startswith("plane"):
        d = int(name[5:])
        rotation = cp.linalg.qr(rng.standard_normal((d, d)))[0]
        return (cp.hstack([rng.standard_normal((n, 2)), cp.zeros((n, d - 2))]) @ rotation).astype(cp.float32)
    if name.startswith("pca"):
        d = int(name[3:])
        return (rng.standard_normal((n, d)) / cp.arange(1, d + 1)).astype(cp.float32)
    raise SystemExit(f"unknown case {name!r}")


def bound_ratios(X) -> tuple[float, float]:
    """(largest, median) |TF32 score - exact score| / rounding_bounds' bound, 256 query rows against every point."""
    import cupy as cp  # noqa: PLC0415 - GPU only

    from umapviz.graph.knn import knn_gpu, scaled_rows  # noqa: PLC0415 - loads the GPU path

    Z, col_add, scale, _ = knn_gpu._selection_matrix(X, "euclidean")
    exact, _, _ = scaled_rows(X, cp.float64)
    n, d = Z.shape
    rows = cp.asarray(np.linspace(0, n - 1, 256).astype(np.int64))
    out = cp.empty((256, knn_gpu._score_ld(n)), dtype=cp.float32)
    knn_gpu._gemm_scores(Z[rows], Z, out, "tf32")
    score = col_add + np.float32(scale) * out[:, :n]  # rounded as the kernels round: float32 multiply, then add
    truth = (exact * exact).sum(axis=1) + scale * (exact[rows] @ exact.T)
    q_coeff, sq_err = knn_gpu.rounding_bounds(d, scale)
    zn = cp.sqrt((exact * exact).sum(axis=1))
    bound = zn[None, :] * (q_coeff * zn[rows][:, None] + sq_err * zn[None, :])
    ratio = cp.abs(score.astype(cp.float64) - truth) / bound
    return float(ratio.max()), float(cp.median(ratio))


def timed(fn, repeats: int = 3) -> float:
    import cupy as cp  # noqa: PLC0415 - GPU only

    fn()
    times = []
    for _ in range(repeats):
        cp.cuda.Device().synchronize()
        began = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def differing(a, b) -> int:
    return int(np.count_nonzero((np.sort(a, axis=1) != np.sort(b, axis=1)).any(axis=1)))


def run(name: str, n: int) -> str:
    from umapviz.graph.knn import knn_gpu  # noqa: PLC0415 - loads the GPU path

    X = make(name, n)
    worst, median = bound_ratios(X)
    results, seconds, stats = {}, {}, {}

    def search(precision: str):
        def call():
            stats[precision] = {}
            results[precision] = knn_gpu.exact_knn_gpu(X, K, precision=precision, stats=stats[precision])[0]

        seconds[precision] = timed(call)

    for precision in ("fp32", "tf32", "auto"):
        search(precision)
    auto_rows = stats["auto"]["rows_fp32"]
    return (
        f"| {name} | {n:,} x {X.shape[1]} | {worst:.3f} / {median:.4f} | {seconds['fp32']:.3f} | "
        f"{seconds['tf32']:.3f} | {seconds['auto']:.3f} | {auto_rows:,} ({100 * auto_rows / n:.2f}%) | "
        f"{differing(results['tf32'], results['fp32']):,} | {differing(results['auto'], results['fp32']):,} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--cases",
        default="text_like_gpu:500000,mixture_gpu:500000,pca50:400000,plane16:400000,plane64:400000",
        help="name:n, comma-separated",
    )
    args = ap.parse_args()
    print(
        "| data | n x d | error / bound, largest / median | fp32 s | tf32 s | auto s | auto: rows searched again "
        "in FP32 | rows differing from fp32: tf32 | auto |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for case in args.cases.split(","):
        name, n = case.split(":")
        print(run(name, int(n)), flush=True)


if __name__ == "__main__":
    main()
