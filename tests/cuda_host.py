"""CUDA sources built as host code, to compare their bits with the CPU twins without a GPU.

The GPU modules compile with ``--fmad=false``; the host build matches that with ``-ffp-contract=off`` (no fused
multiply-add the source does not spell out), so a device function run here takes the GPU's steps and roundings.
Used by the twin tests and by bench/graph_parity.py.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

# Host definitions of the CUDA rounding intrinsics and launch indices fuzzy_gpu.cu uses: each intrinsic the same
# IEEE operation on the CPU; blockIdx/threadIdx set by the caller, one thread at a time.
FUZZY_KERNEL_SHIMS = r"""
#include <cmath>
#include <cstring>
struct Dim { unsigned int x; };
static Dim blockIdx, threadIdx, blockDim;
#define __global__
#define __restrict__
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline double __longlong_as_double(long long u) { double x; std::memcpy(&x, &u, 8); return x; }
"""


# Host definitions for the chunked layout kernels of engine_gpu.cu run with one OS thread per GPU thread: launch
# indices per thread, __syncthreads as a std::barrier per block, the grid barriers (whose PTX the build leaves out)
# as one std::barrier over the blocks' first threads, global loads, stores and atomics as relaxed C++ atomics, and
# each rounding intrinsic the same IEEE operation on the CPU. Needs C++20 (std::barrier) and -pthread.
THREADED_KERNEL_SHIMS = r"""
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>
#include <vector>
struct Dim { unsigned int x, y, z; };
static thread_local Dim threadIdx, blockIdx;
static Dim blockDim, gridDim;
#define __device__
#define __forceinline__ inline
#define __global__
#define __restrict__
#define __shared__ static
#define __launch_bounds__(...)
#define L2_HINTS 0
using std::isfinite; using std::max; using std::min;
struct int4 { int x, y, z, w; };
struct float2 { float x, y; };
struct ulonglong2 { unsigned long long x, y; };
static inline int4 make_int4(int a, int b, int c, int d) { return {a, b, c, d}; }
static inline float2 make_float2(float a, float b) { return {a, b}; }
static inline ulonglong2 make_ulonglong2(unsigned long long a, unsigned long long b) { return {a, b}; }
template <class T> static inline T __ldcg(const T* p) { T r; __atomic_load((T*)p, &r, __ATOMIC_RELAXED); return r; }
template <class T> static inline T __ldcs(const T* p) { return __ldcg(p); }
template <class T> static inline void __stcg(T* p, T v) { __atomic_store(p, &v, __ATOMIC_RELAXED); }
static inline ulonglong2 __ldcg(const ulonglong2* p) {
    auto q = const_cast<ulonglong2*>(p);
    return {__atomic_load_n(&q->x, __ATOMIC_RELAXED), __atomic_load_n(&q->y, __ATOMIC_RELAXED)};
}
static inline void __stcg(ulonglong2* p, ulonglong2 v) {
    __atomic_store_n(&p->x, v.x, __ATOMIC_RELAXED);
    __atomic_store_n(&p->y, v.y, __ATOMIC_RELAXED);
}
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static inline unsigned long long atomicExch(unsigned long long* p, unsigned long long v) {
    return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);
}
static inline float atomicAdd(float* p, float v) {  // hogwild only (compiled, never run here)
    float old = *p;
    *p = old + v;
    return old;
}
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __dmul_rz(double a, double b) { return a * b; }  // mod_n beyond 2^16 vertices only
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __drcp_rn(double a) { return 1.0 / a; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __double2float_rn(double a) { return (float)a; }
static inline long long __double2ll_rn(double a) { return (long long)std::nearbyint(a); }
static inline double __ll2double_rn(long long a) { return (double)a; }
static inline double __ull2double_rn(unsigned long long a) { return (double)a; }
static inline int __float_as_int(float x) { int i; std::memcpy(&i, &x, 4); return i; }
static inline float __int_as_float(int i) { float x; std::memcpy(&x, &i, 4); return x; }
static inline long long __double_as_longlong(double x) { long long i; std::memcpy(&i, &x, 8); return i; }
static inline double __longlong_as_double(long long i) { double x; std::memcpy(&x, &i, 8); return x; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
// Warp intrinsics of the schedule kernels (compiled, never run here).
static inline unsigned __ballot_sync(unsigned, bool) { return 0; }
template <class T> static inline T __shfl_xor_sync(unsigned, T v, int) { return v; }
template <class T> static inline T __shfl_up_sync(unsigned, T v, int) { return v; }
static inline void __syncwarp(unsigned = 0) {}
static std::vector<std::unique_ptr<std::barrier<>>> block_barriers;
static std::unique_ptr<std::barrier<>> grid_barrier_of_blocks;
static inline void __syncthreads() { block_barriers[blockIdx.x]->arrive_and_wait(); }
typedef unsigned long long u64;
__device__ __forceinline__ void grid_barrier(u64*) {
    __syncthreads();
    if (threadIdx.x == 0) grid_barrier_of_blocks->arrive_and_wait();
    __syncthreads();
}
struct PipeBarrier {
    u64* bar;
    u64 round;
    bool last;
    std::optional<std::barrier<>::arrival_token> token;
    void start() {}
    void arrive() { token.emplace(grid_barrier_of_blocks->arrive()); }
    void wait() {
        grid_barrier_of_blocks->wait(std::move(*token));
        token.reset();
    }
};
// Runs f on blocks x threads OS threads (threads: a multiple of 32, as every launch of these kernels).
template <class F> static void launch(int blocks, int threads, F f) {
    gridDim = {(unsigned)blocks, 1, 1};
    blockDim = {(unsigned)threads, 1, 1};
    block_barriers.clear();
    for (int b = 0; b < blocks; ++b) block_barriers.emplace_back(new std::barrier<>(threads));
    grid_barrier_of_blocks.reset(new std::barrier<>(blocks));
    std::vector<std::thread> pool;
    for (int b = 0; b < blocks; ++b)
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([=] {
                blockIdx = {(unsigned)b, 0, 0};
                threadIdx = {(unsigned)t, 0, 0};
                f();
            });
    for (auto& thread : pool) thread.join();
}
"""


def replace_marked_section(text: str, name: str, replacement: str) -> str:
    """``text`` with its ``// >>> name`` .. ``// <<< name`` section (marker lines included) replaced.

    Parameters
    ----------
    text : str
        The file's text.
    name : str
        The section's name, as the markers spell it.
    replacement : str
        What takes the section's place.
    """
    before, rest = text.split(f"// >>> {name}", 1)
    after = rest.split(f"// <<< {name}", 1)[1].split("\n", 1)[1]
    return before + replacement + after


def compiler() -> str | None:
    """The C++ compiler on PATH (g++, else c++), or None."""
    return shutil.which("g++") or shutil.which("c++")


def marked_section(text: str, name: str) -> str:
    """The lines of a .cu file between its ``// >>> name`` and ``// <<< name`` marker lines.

    Parameters
    ----------
    text : str
        The file's text.
    name : str
        The section's name, as the markers spell it.
    """
    return text.split(f"// >>> {name}", 1)[1].split("\n", 1)[1].split(f"// <<< {name}", 1)[0]


def build_host_library(source: str, folder: Path, include_dirs: tuple[Path, ...] = (), std: str = "c++17",
                       flags: tuple[str, ...] = ()) -> ctypes.CDLL:
    """Compile C++ ``source`` into a shared library in ``folder`` without contraction, and load it.

    Parameters
    ----------
    source : str
        The C++ text (shims, the CUDA section, an ``extern "C"`` entry point).
    folder : pathlib.Path
        Where the source and the library are written.
    include_dirs : tuple of pathlib.Path
        Directories for ``#include`` (e.g. the .cu file's own).
    std : str
        The C++ standard (``c++20`` for THREADED_KERNEL_SHIMS).
    flags : tuple of str
        More compiler flags (``-pthread`` for THREADED_KERNEL_SHIMS).
    """
    cxx = compiler()
    if cxx is None:
        raise RuntimeError("no C++ compiler (g++ or c++) on PATH to build CUDA code as host code")
    src, lib = Path(folder) / "host.cpp", Path(folder) / "host.so"
    src.write_text(source)
    cmd = [cxx, f"-std={std}", "-O2", "-ffp-contract=off", "-fPIC", "-shared", *flags,
           *(f"-I{d}" for d in include_dirs), str(src), "-o", str(lib)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{run.stderr}")
    return ctypes.CDLL(str(lib))
