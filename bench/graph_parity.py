"""The graph across devices: ``build_graph(X, device="cpu")`` against ``device="gpu"`` (exact kNN), stage by stage,
with the residual differences counted.

    PYTHONPATH=$PWD python3 bench/graph_parity.py [--cases clusters:20000,mixture:20000,mixture:200000]
    PYTHONPATH=$PWD python3 bench/graph_parity.py --emulate [--cases clusters:20000,mixture:20000]   # no GPU
    PYTHONPATH=$PWD python3 bench/graph_parity.py --libm --cases clusters:20000,mixture:20000     # no GPU

On a GPU, per case: the kNN (rows whose neighbour sets differ, rows whose bytes differ) for the GPU's TF32 and FP32
GEMM; the fuzzy set from the same (CPU) kNN on both devices: sigma, rho and the directed memberships that differ,
with the GPU's own float64 exp rounded to float32 beside them (the formula before the exp twins); and the whole
graph's arrays and fingerprint. Exit 1 if a graph differs beyond the kNN's near-ties.

``--emulate`` (CPU only) estimates the kNN's residual: the GPU's candidate selection emulated (the centred rows
rounded to TF32, a float32 GEMM, the GPU's spare count), both refined by the same exact recompute, against a
reference with 200 spare candidates. ``--libm`` compiles fuzzy_gpu.cu's twins as host code and compares them with
this machine's expf on every negative float32 and with its exp on 10^8 sampled doubles, then runs fuzzy_gpu.cu's
kernels as host code (CUDA's rounding intrinsics as plain IEEE operations) against the CPU's fuzzy set on each
case's kNN.
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from umapviz import datasets
from umapviz._backend import gpu_available
from umapviz.graph import build_graph
from umapviz.graph.fuzzy import fuzzy_cpu, fuzzy_gpu
from umapviz.graph.knn.knn_cpu import exact_knn, exact_rows, reference_index

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from cuda_host import FUZZY_KERNEL_SHIMS, build_host_library, compiler, marked_section

K = 15


def differing_rows(idx_a: np.ndarray, idx_b: np.ndarray) -> int:
    """Rows whose neighbour sets differ."""
    return int(sum(set(a) != set(b) for a, b in zip(idx_a.tolist(), idx_b.tolist(), strict=True)))


def knn_report(name: str, ref_idx, ref_dist, idx, dist) -> str:
    """One line: rows whose neighbour sets differ and rows whose (indices, distances) bytes differ."""
    byte_rows = int(
        np.count_nonzero((idx != ref_idx).any(axis=1) | (dist.view(np.uint32) != ref_dist.view(np.uint32)).any(axis=1))
    )
    return f"{name}: {differing_rows(ref_idx, idx)} rows with other neighbours, {byte_rows} rows with other bytes"


def run_gpu(cases) -> bool:
    """CPU against GPU graphs for each (dataset, n); True when every graph is equal or differs only by kNN ties."""
    import cupy as cp  # noqa: PLC0415 - the GPU mode only

    from umapviz.graph.build_gpu import graph_on_gpu  # noqa: PLC0415 - loads the GPU path
    from umapviz.graph.params import GraphParams  # noqa: PLC0415 - as build_graph makes it

    ok = True
    for dataset, n in cases:
        X, _ = datasets.load(dataset, n_samples=n, random_state=0)
        X = np.ascontiguousarray(X, dtype=np.float32)
        print(f"## {dataset} {X.shape[0]:,} x {X.shape[1]}", flush=True)
        t0 = time.perf_counter()
        cpu = build_graph(X, n_neighbors=K, knn="exact", cache=False, progress=False)
        t1 = time.perf_counter()
        gpu = build_graph(X, n_neighbors=K, device="gpu", cache=False)
        t2 = time.perf_counter()
        print(f"  build: cpu {t1 - t0:.1f} s, gpu {t2 - t1:.1f} s")
        print("  kNN " + knn_report("tf32", cpu.knn_indices, cpu.knn_dists, gpu.knn_indices, gpu.knn_dists))
        params = GraphParams.for_data(X.shape[0], n_neighbors=K, metric="euclidean", knn="exact-gpu")
        fp32 = graph_on_gpu(X, params, precision="fp32")
        print("  kNN " + knn_report("fp32", cpu.knn_indices, cpu.knn_dists, fp32.knn_indices, fp32.knn_dists))
        # The fuzzy set from the CPU's kNN on both devices.
        idx, dist = cpu.knn_indices, cpu.knn_dists
        sigma, rho = fuzzy_cpu.smooth_knn_dist(dist)
        sigma_g, rho_g = (a.get() for a in fuzzy_gpu.smooth_knn_dist_gpu(dist))
        vals = fuzzy_cpu._memberships(idx.astype(np.int64), dist, sigma, rho)
        vals_g = cp.empty(idx.size, dtype=cp.float32)
        fuzzy_gpu._module().get_function("memberships")(
            (-(-idx.size // 256),),
            (256,),
            (
                cp.asarray(idx),
                cp.asarray(dist),
                cp.asarray(sigma),
                cp.asarray(rho),
                np.int32(idx.shape[0]),
                np.int32(K),
                vals_g,
            ),
        )
        gap = cp.asarray(dist) - cp.asarray(rho)[:, None]
        cuda_exp = cp.exp(-(gap / cp.asarray(sigma)[:, None]).astype(cp.float64)).astype(cp.float32).ravel()
        live = (vals != 0) & (vals != 1)
        print(
            f"  fuzzy from the same kNN: sigma differs in {np.count_nonzero(sigma != sigma_g)}, rho in "
            f"{np.count_nonzero(rho != rho_g)} of {len(sigma):,} rows; memberships differ in "
            f"{np.count_nonzero(vals != vals_g.get())} of {np.count_nonzero(live):,} (exp twins); CUDA's exp "
            f"rounded to float32 would differ in {np.count_nonzero(cuda_exp.get()[live] != vals[live])}"
        )
        same = {
            f: np.array_equal(getattr(cpu, f), getattr(gpu, f))
            for f in ("knn_indices", "knn_dists", "head", "tail", "weight", "epochs_per_sample")
        }
        print(f"  graph: fingerprint cpu {cpu.fingerprint} gpu {gpu.fingerprint}; equal arrays: {same}")
        knn_equal = same["knn_indices"] and same["knn_dists"]
        ok &= (cpu.fingerprint == gpu.fingerprint) or not knn_equal
        ok &= bool(np.array_equal(vals, vals_g.get()) and np.array_equal(sigma, sigma_g))
    return ok


def run_emulated(cases) -> None:
    """The kNN residual estimated on the CPU (see the module docstring)."""
    from umapviz.graph.knn.knn_gpu import n_candidates  # noqa: PLC0415 - imports without CuPy; the spare count

    for dataset, n in cases:
        X, _ = datasets.load(dataset, n_samples=n, random_state=0)
        X = np.ascontiguousarray(X, dtype=np.float32)
        rows = np.arange(X.shape[0], dtype=np.int64)
        t0 = time.perf_counter()
        ref_idx, ref_dist = exact_rows(X, rows, K, "euclidean", False, n_spare=200)
        cpu_idx, cpu_dist = exact_knn(X, K, progress=False)
        Z, col_add, scale, prepare = reference_index(X)
        bits = Z.view(np.uint32)
        z_tf32 = ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)  # round to 10 mantissa bits
        spare = n_candidates(K, X.shape[0], "tf32") - K
        gpu_idx, gpu_dist = exact_rows(
            X, rows, K, "euclidean", False, reference=(z_tf32, col_add, scale, prepare), n_spare=spare
        )
        ref_idx, ref_dist = ref_idx.astype(np.int32), ref_dist.astype(np.float32)
        print(f"## {dataset} {X.shape[0]:,} x {X.shape[1]} ({time.perf_counter() - t0:.0f} s)")
        print(
            "  "
            + knn_report(
                "CPU (fp32 GEMM, 8 spares) vs reference",
                ref_idx,
                ref_dist,
                cpu_idx.astype(np.int32),
                cpu_dist.astype(np.float32),
            )
        )
        print(
            "  "
            + knn_report(
                f"emulated GPU (tf32, {spare} spares) vs reference",
                ref_idx,
                ref_dist,
                gpu_idx.astype(np.int32),
                gpu_dist.astype(np.float32),
            )
        )
        print(
            "  "
            + knn_report(
                "emulated GPU vs CPU",
                cpu_idx,
                cpu_dist.astype(np.float32),
                gpu_idx.astype(np.int32),
                gpu_dist.astype(np.float32),
            )
        )
        sample = rows[::10]
        for label, z in (("fp32", Z), ("emulated tf32", z_tf32)):
            need = spares_needed(z[sample] @ z.T, col_add, scale, sample, ref_idx[sample])
            print(
                f"  {label} GEMM, every 10th row: {np.count_nonzero(need)} of {len(sample):,} rows rank a true "
                f"neighbour beyond the first {K}; spares needed at most {need.max()}"
            )


def spares_needed(gram: np.ndarray, col_add: np.ndarray, scale, rows: np.ndarray, true_idx: np.ndarray) -> np.ndarray:
    """Per row, how many candidates beyond k the GEMM's ranking needs to hold the true k nearest (0: none)."""
    scores = col_add[None, :] + scale * gram
    scores[np.arange(len(rows)), rows] = -np.inf  # the point itself first, as the selection does
    order = np.argsort(scores, axis=1, kind="stable")
    position = np.empty_like(order)
    np.put_along_axis(position, order, np.broadcast_to(np.arange(order.shape[1]), order.shape), axis=1)
    return np.take_along_axis(position, true_idx.astype(np.int64), axis=1).max(axis=1) - (true_idx.shape[1] - 1)


_LIBM_HARNESS = r"""
#include <cmath>
#include <cstdio>
extern "C" void check(long n_doubles) {
    long n = 0, twin = 0, rounded = 0;
    for (unsigned int u = 0x80000001u; u != 0; ++u) {  // every negative float32 but -0 (NaNs skipped)
        float x; std::memcpy(&x, &u, 4);
        if (x != x) continue;
        volatile float libm = expf(x);
        ++n;
        twin += expf_libm(x) != libm;
        rounded += (float)exp((double)x) != libm;
    }
    std::printf("expf: %ld negative float32 inputs; twin differs from the libm's expf on %ld; the libm's float64 exp "
                "rounded to float32 differs on %ld\n", n, twin, rounded);
    unsigned long long s = 88172645463325252ULL;
    long bad = 0;
    for (long i = 0; i < n_doubles; ++i) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        double x = -std::ldexp((double)(s >> 11), -53) * (i % 2 ? 760.0 : 40.0);
        volatile double libm = exp(x);
        bad += f64_bits(exp_libm(x)) != f64_bits(libm);
    }
    std::printf("exp: %ld sampled doubles in [-760, 0]; twin differs from the libm's exp on %ld\n", n_doubles, bad);
}
"""


# fuzzy_gpu.cu's kernels run over their grids one thread at a time (the intrinsics: tests/cuda_host.py).
_KERNEL_DRIVER = r"""
static void grid(long threads, void (*body)()) {
    blockDim.x = 256;
    for (long b = 0; b < (threads + 255) / 256; ++b)
        for (unsigned int t = 0; t < 256; ++t) { blockIdx.x = (unsigned int)b; threadIdx.x = t; body(); }
}
static const float* g_dists; static const int* g_idx; static const float *g_sigma, *g_rho;
static int g_n, g_k; static double g_target, g_mean; static float *g_sigma_out, *g_rho_out, *g_vals;
extern "C" void host_smooth_knn_dist(const float* d, int n, int k, double target, double mean, float* s, float* r) {
    g_dists = d; g_n = n; g_k = k; g_target = target; g_mean = mean; g_sigma_out = s; g_rho_out = r;
    grid(n, [] { smooth_knn_dist(g_dists, g_n, g_k, g_target, g_mean, g_sigma_out, g_rho_out); });
}
extern "C" void host_memberships(const int* idx, const float* d, const float* s, const float* r, int n, int k,
                                 float* vals) {
    g_idx = idx; g_dists = d; g_sigma = s; g_rho = r; g_n = n; g_k = k; g_vals = vals;
    grid((long)n * k, [] { memberships(g_idx, g_dists, g_sigma, g_rho, g_n, g_k, g_vals); });
}
"""


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return a.ctypes.data_as(ctypes.c_void_p)


def run_libm(cases) -> None:
    """fuzzy_gpu.cu's exp twins as host code against this machine's C library; then its kernels as host code against
    the CPU's fuzzy set on each case's kNN."""
    if compiler() is None:
        sys.exit("needs a C++ compiler (g++)")
    text = fuzzy_gpu.KERNELS.read_text()
    section = marked_section(text, "libm twins")
    with tempfile.TemporaryDirectory() as tmp:
        twins = build_host_library("#include <cstring>\ntypedef long long i64;\n" + section + _LIBM_HARNESS, Path(tmp))
        twins.check(ctypes.c_long(100_000_000))
    with tempfile.TemporaryDirectory() as tmp:
        kernels = build_host_library(FUZZY_KERNEL_SHIMS + text + _KERNEL_DRIVER, Path(tmp))
        for dataset, n in cases:
            X, _ = datasets.load(dataset, n_samples=n, random_state=0)
            idx, dist = exact_knn(X, K, progress=False)
            sigma, rho = fuzzy_cpu.smooth_knn_dist(dist)
            vals = fuzzy_cpu._memberships(idx.astype(np.int64), dist, sigma, rho)
            host_sigma, host_rho = np.empty_like(sigma), np.empty_like(rho)
            kernels.host_smooth_knn_dist(
                _ptr(dist),
                ctypes.c_int(len(dist)),
                ctypes.c_int(K),
                ctypes.c_double(np.log2(K)),
                ctypes.c_double(float(np.mean(dist))),
                _ptr(host_sigma),
                _ptr(host_rho),
            )
            host_vals = np.empty_like(vals)
            kernels.host_memberships(
                _ptr(np.ascontiguousarray(idx, dtype=np.int32)),
                _ptr(dist),
                _ptr(sigma),
                _ptr(rho),
                ctypes.c_int(len(dist)),
                ctypes.c_int(K),
                _ptr(host_vals),
            )
            bad_sigma, bad_rho = np.count_nonzero(host_sigma != sigma), np.count_nonzero(host_rho != rho)
            print(
                f"{dataset} {X.shape[0]:,} x {X.shape[1]}: fuzzy_gpu.cu's kernels as host code against the CPU: "
                f"sigma differs in {bad_sigma}, rho in {bad_rho} of {len(sigma):,} rows; memberships in "
                f"{np.count_nonzero(host_vals != vals)} of {vals.size:,}"
            )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default="clusters:20000,mixture:20000,mixture:200000")
    p.add_argument("--emulate", action="store_true", help="no GPU: estimate the kNN's residual on the CPU")
    p.add_argument(
        "--libm",
        action="store_true",
        help="no GPU: the exp twins against this machine's libm, and the "
        "fuzzy kernels as host code against the CPU's fuzzy set",
    )
    args = p.parse_args()
    cases = [(c.split(":")[0], int(c.split(":")[1])) for c in args.cases.split(",") if c.strip()]
    if args.libm:
        run_libm(cases)
    elif args.emulate:
        run_emulated(cases)
    elif not gpu_available():
        sys.exit("no usable GPU: run with --emulate or --libm here")
    else:
        sys.exit(0 if run_gpu(cases) else 1)


if __name__ == "__main__":
    main()
