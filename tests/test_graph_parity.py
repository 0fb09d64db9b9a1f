"""The graph's CPU/GPU parity: the fuzzy set's exp twins (fuzzy_gpu.cu, compiled here as host code) against the C
library the CPU calls, the exact kNN's fixed-order distance recompute, and (GPU) build_graph's bytes per device."""

from __future__ import annotations

import ctypes
import platform

import numba
import numpy as np
import pytest
from cuda_host import FUZZY_KERNEL_SHIMS, build_host_library, compiler, marked_section

import umapviz
from umapviz import metrics
from umapviz.graph import build_graph
from umapviz.graph.fuzzy import fuzzy_cpu, fuzzy_gpu
from umapviz.graph.fuzzy.fuzzy_cpu import fuzzy_simplicial_set, smooth_knn_dist
from umapviz.graph.knn import knn_cpu

_HARNESS = """
extern "C" void expf_many(const float* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = expf_libm(x[i]); }
extern "C" void exp_many(const double* x, double* y, long n) { for (long i = 0; i < n; ++i) y[i] = exp_libm(x[i]); }
"""


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    """fuzzy_gpu.cu's exp_libm and expf_libm built as host code (no contraction: as the GPU module's --fmad=false)."""
    if compiler() is None:
        pytest.skip("no C++ compiler on PATH to build fuzzy_gpu.cu's exp twins as host code")
    section = marked_section(fuzzy_gpu.KERNELS.read_text(), "libm twins")
    lib = build_host_library("typedef long long i64;\n" + section + _HARNESS, tmp_path_factory.mktemp("twins"))
    for name in ("expf_many", "exp_many"):
        getattr(lib, name).restype = None

    def call(name, x):
        y = np.empty_like(x)
        getattr(lib, name)(x.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(x.size))
        return y

    return call


@numba.njit(cache=True)
def _numba_exp(x):
    """np.exp element by element in Numba, as fuzzy_cpu.py calls it: expf for float32, exp for float64."""
    y = np.empty_like(x)
    for i in range(x.size):
        y[i] = np.exp(x[i])
    return y


_GLIBC = platform.libc_ver()[0] == "glibc" and platform.machine() in ("x86_64", "aarch64")


@pytest.mark.skipif(not _GLIBC, reason="the twins follow glibc's exp and expf; this C library is another")
def test_expf_twin_equals_the_c_librarys_expf_the_memberships_call(twins):
    x = -np.random.default_rng(0).uniform(0, 30, 4_000_000).astype(np.float32)
    x = np.concatenate([x, np.float32([-0.0, -1e-30, -87.5, -88.7, -103.3, -103.97, -104.0, -200.0, -np.inf])])
    ours, libm = twins("expf_many", x), _numba_exp(x)
    assert np.array_equal(ours.view(np.uint32), libm.view(np.uint32))
    # The check has teeth: the correctly rounded exp (what CUDA's float64 exp rounded to float32 gives) differs
    # from the C library's expf on some of these inputs.
    assert np.count_nonzero(np.exp(x.astype(np.float64)).astype(np.float32) != libm) > 50


@pytest.mark.skipif(not _GLIBC, reason="the twins follow glibc's exp and expf; this C library is another")
def test_exp_twin_equals_the_c_librarys_exp_the_bisection_calls(twins):
    rng = np.random.default_rng(1)
    x = np.concatenate(
        [
            -rng.uniform(0, 40, 2_000_000),
            -rng.uniform(0, 760, 1_000_000),
            -rng.uniform(0, 1, 500_000) * 2.0 ** -rng.integers(0, 60, 500_000),
            [-0.0, -1e-300, -511.9, -512.0, -708.5, -745.0, -745.2, -800.0, -np.inf],
        ]
    )
    assert np.array_equal(twins("exp_many", x).view(np.uint64), _numba_exp(x).view(np.uint64))


# fuzzy_gpu.cu's kernels as host code: CUDA's rounding intrinsics as the IEEE operations they are, a grid run one
# thread at a time.
_KERNEL_HOST = (
    FUZZY_KERNEL_SHIMS
    + r"""
#include "fuzzy_gpu.cu"  // the whole file: its libm twins and both kernels
static void at(long t) {
    blockDim.x = 256;
    blockIdx.x = (unsigned int)(t / 256);
    threadIdx.x = (unsigned int)(t % 256);
}
extern "C" void host_sigma(const float* d, int n, int k, double target, double mean, float* s, float* r) {
    for (long t = 0; t < n; ++t) { at(t); smooth_knn_dist(d, n, k, target, mean, s, r); }
}
extern "C" void host_memberships(const int* idx, const float* d, const float* s, const float* r, int n, int k,
                                 float* v) {
    for (long t = 0; t < (long)n * k; ++t) { at(t); memberships(idx, d, s, r, n, k, v); }
}
"""
)


@pytest.mark.skipif(not _GLIBC, reason="the twins follow glibc's exp and expf; this C library is another")
def test_fuzzy_kernels_as_host_code_give_the_cpus_sigma_rho_and_memberships(tmp_path):
    if compiler() is None:
        pytest.skip("no C++ compiler on PATH to build fuzzy_gpu.cu as host code")
    lib = build_host_library(_KERNEL_HOST, tmp_path, include_dirs=(fuzzy_gpu.KERNELS.parent,))
    rng = np.random.default_rng(2)
    X = (rng.normal(size=(3000, 24)) * rng.uniform(0.2, 3.0, size=(3000, 1))).astype(np.float32)
    X[10:40] = X[10]  # duplicates: rows of zero distances, the global-mean floor
    idx, dist = knn_cpu.exact_knn(X, 15, progress=False)
    sigma, rho = smooth_knn_dist(dist)
    host_sigma, host_rho, host_vals = np.empty_like(sigma), np.empty_like(rho), np.empty(idx.size, np.float32)
    ptr = ctypes.c_void_p
    lib.host_sigma(
        dist.ctypes.data_as(ptr),
        ctypes.c_int(3000),
        ctypes.c_int(15),
        ctypes.c_double(np.log2(15)),
        ctypes.c_double(float(np.mean(dist))),
        host_sigma.ctypes.data_as(ptr),
        host_rho.ctypes.data_as(ptr),
    )
    assert np.array_equal(host_sigma, sigma) and np.array_equal(host_rho, rho)
    lib.host_memberships(
        idx.ctypes.data_as(ptr),
        dist.ctypes.data_as(ptr),
        sigma.ctypes.data_as(ptr),
        rho.ctypes.data_as(ptr),
        ctypes.c_int(3000),
        ctypes.c_int(15),
        host_vals.ctypes.data_as(ptr),
    )
    cpu_vals = fuzzy_cpu._memberships(idx.astype(np.int64), dist, sigma, rho)
    assert np.array_equal(host_vals.view(np.uint32), cpu_vals.view(np.uint32))
    # The check has teeth: the membership formula with the float64 exp rounded to float32 differs somewhere.
    live = (cpu_vals != 0) & (cpu_vals != 1)  # neither self nor within rho
    exponent = -((dist - rho[:, None]) / sigma[:, None]).ravel()[live]
    rounded = np.exp(exponent.astype(np.float64)).astype(np.float32)
    assert np.count_nonzero(rounded != cpu_vals[live]) > 0


# ------------------------------------------------------------------------------------ exact kNN's distances


def _reference_distances(X: np.ndarray, idx: np.ndarray, metric: str, self_first: bool = True) -> np.ndarray:
    """The kept neighbours' distances by the one fixed-order formula, in NumPy: float64 sums over the features in
    index order (euclidean: sqrt of the sum of squared differences; cosine: half the squared distance of the rows
    scaled to unit length), rounded once to float32; with ``self_first`` column 0 (the point itself) is 0."""
    X64 = X.astype(np.float64)
    a, b = X64[:, None, :], X64[idx]
    if metric == "cosine":
        na, nb = np.zeros(a.shape[:2]), np.zeros(b.shape[:2])
        for f in range(X.shape[1]):
            na = na + a[..., f] * a[..., f]
            nb = nb + b[..., f] * b[..., f]
        na, nb = np.sqrt(na), np.sqrt(nb)
    acc = np.zeros(idx.shape)
    for f in range(X.shape[1]):
        diff = a[..., f] / na - b[..., f] / nb if metric == "cosine" else a[..., f] - b[..., f]
        acc = acc + diff * diff
    out = 0.5 * acc if metric == "cosine" else np.sqrt(acc)
    if self_first:
        out[:, 0] = 0.0
    return out.astype(np.float32)


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_exact_knn_distances_are_the_fixed_order_float64_formula_and_repeat_their_bytes(metric):
    X = np.random.default_rng(3).normal(size=(700, 37)).astype(np.float32) * np.float32(3.7)
    idx, dist = knn_cpu.exact_knn(X, 12, metric, progress=False)
    again_idx, again_dist = knn_cpu.exact_knn(X, 12, metric, progress=False)
    assert np.array_equal(idx, again_idx) and np.array_equal(dist.view(np.uint32), again_dist.view(np.uint32))
    assert np.array_equal(dist.view(np.uint32), _reference_distances(X, idx, metric).view(np.uint32))
    # The kept set is the k best of all points by (formula distance, index).
    full = _reference_distances(X, np.tile(np.arange(700), (700, 1)), metric, self_first=False)
    full[np.arange(700), np.arange(700)] = -1.0  # the point itself first
    best = np.lexsort((np.tile(np.arange(700), (700, 1)), full), axis=1)[:, :12]
    assert np.array_equal(idx, best)


def test_exact_knn_breaks_distance_ties_by_index():
    # Points of an integer grid: each has many neighbours at exactly equal distances.
    g = np.arange(12, dtype=np.float32)
    X = np.stack(np.meshgrid(g, g, g), axis=-1).reshape(-1, 3)
    idx, dist = knn_cpu.exact_knn(X, 20, progress=False)
    assert np.all(idx[:, 0] == np.arange(len(X)))
    same = dist[:, 2:] == dist[:, 1:-1]
    assert same.sum() > len(X) * 5  # ties are everywhere
    assert np.all(idx[:, 2:][same] > idx[:, 1:-1][same])  # and resolved by the smaller index first
    # The cut at the k-th neighbour too: no left-out point at the k-th distance has a smaller index.
    d_all = np.sqrt(((X[:, None, :].astype(np.float64) - X[None, :, :]) ** 2).sum(-1)).astype(np.float32)
    for i in range(0, len(X), 97):
        tied = np.flatnonzero(d_all[i] == dist[i, -1])
        assert set(tied[tied <= idx[i, -1]]) <= set(idx[i])


# ------------------------------------------------------------------------------------------- across devices


@pytest.mark.gpu
def test_gpu_fuzzy_set_from_the_same_knn_is_the_cpus_bit_for_bit():
    X = np.random.default_rng(4).normal(size=(5000, 20)).astype(np.float32)
    X[100:130] = X[100]  # duplicates: rho from the first non-zero distance, the global-mean floor
    idx, dist = knn_cpu.exact_knn(X, 15, progress=False)
    sigma, rho = smooth_knn_dist(dist)
    sigma_g, rho_g = (a.get() for a in fuzzy_gpu.smooth_knn_dist_gpu(dist))
    assert np.array_equal(sigma, sigma_g) and np.array_equal(rho, rho_g)
    cpu = fuzzy_simplicial_set(idx, dist)
    indptr, indices, data = (a.get() for a in fuzzy_gpu.fuzzy_simplicial_set_gpu(idx, dist))
    assert np.array_equal(cpu.indptr, indptr) and np.array_equal(cpu.indices, indices)
    assert np.array_equal(cpu.data.view(np.uint32), data.view(np.uint32))


@pytest.mark.gpu
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize("shape", [(3000, 10), (4000, 256)], ids=["3000x10", "4000x256"])
def test_build_graph_gives_the_same_bytes_on_the_cpu_and_the_gpu(metric, shape):
    rng = np.random.default_rng(5)
    centres = rng.normal(size=(8, shape[1])).astype(np.float32)
    X = centres[rng.integers(0, 8, shape[0])] + rng.normal(size=shape).astype(np.float32) * np.float32(0.3)
    cpu = build_graph(X, n_neighbors=15, metric=metric, knn="exact", cache=False, progress=False)
    gpu = build_graph(X, n_neighbors=15, metric=metric, device="gpu", cache=False)
    assert np.array_equal(cpu.knn_indices, gpu.knn_indices)
    assert np.array_equal(cpu.knn_dists.view(np.uint32), gpu.knn_dists.view(np.uint32))
    for name in ("head", "tail", "weight", "epochs_per_sample"):
        assert np.array_equal(getattr(cpu, name), getattr(gpu, name)), name
    assert cpu.fingerprint == gpu.fingerprint


@pytest.mark.gpu
def test_umap_fits_give_the_same_fingerprint_on_both_devices_from_a_random_start():
    X = np.random.default_rng(6).normal(size=(3000, 32)).astype(np.float32)
    prints = {
        dev: metrics.fingerprint(
            umapviz.UMAP(device=dev, random_state=0, init="random", knn="exact", n_epochs=40).fit_transform(X)
        )
        for dev in ("cpu", "gpu")
    }
    assert prints["cpu"] == prints["gpu"]
