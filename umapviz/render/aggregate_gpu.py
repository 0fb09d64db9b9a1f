"""CUDA kernels (through CuPy) that turn an (N, 2) device embedding into pixel grids in one pass.

Only the grids (and a few bounds) come back to the host; the points never do. The pixel mapping repeats
datashader's point glyph exactly (double precision ``int(x * sx + tx)``, closed ranges, the right and top
edges folded into the last pixel), so the grids equal the NumPy path's bit for bit. Multiply and add are
written as ``__dmul_rn``/``__dadd_rn`` because the CUDA compiler would otherwise fuse them into one FMA,
which rounds once instead of twice and moves points that sit on a pixel border.

This module imports CuPy at the top: import it only when the input is a CuPy array.
"""

from __future__ import annotations

import functools

import cupy as cp
import numpy as np

_THREADS = 256

_SOURCE = r"""
// x - x is 0 for finite x and NaN for inf or NaN: a finiteness test that needs no math header.
__device__ __forceinline__ bool is_finite_value(const double x) { return x - x == 0.0; }

template <typename T>
__device__ void aggregate_points(
    const T* __restrict__ xy, const long long n,
    const double xmin, const double xmax, const double ymin, const double ymax,
    const double sx, const double tx, const double sy, const double ty,
    const int width, const int height,
    const int* __restrict__ labels, const int n_labels,
    const bool* __restrict__ outliers,
    unsigned int* __restrict__ counts, unsigned int* __restrict__ outlier_counts,
    unsigned int* __restrict__ edge_counts, const int n_edge_bins, const double half_edge_bins,
    const double cx, const double cy, const double hx, const double hy)
{
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const double x = (double)xy[2 * i];
        const double y = (double)xy[2 * i + 1];
        if (xmin <= x && x <= xmax && ymin <= y && y <= ymax) {
            int xx = (int)__dadd_rn(__dmul_rn(x, sx), tx);
            int yy = (int)__dadd_rn(__dmul_rn(y, sy), ty);
            if (xx >= width) xx = width - 1;
            if (yy >= height) yy = height - 1;
            const long long pixel = (long long)yy * width + xx;
            if (labels != nullptr) {
                const int label = labels[i];
                if (label >= 0 && label < n_labels) {  // validated on the host; never write out of bounds
                    atomicAdd(&counts[pixel * n_labels + label], 1u);
                }
            } else {
                atomicAdd(&counts[pixel], 1u);
            }
            if (outliers != nullptr && outliers[i]) {
                atomicAdd(&outlier_counts[pixel], 1u);
            }
        } else if (edge_counts != nullptr && is_finite_value(x) && is_finite_value(y)) {
            // Outside the view: the point where the ray from the view's centre leaves the box.
            const double dx = (x - cx) / hx;
            const double dy = (y - cy) / hy;
            const double ax = fabs(dx), ay = fabs(dy);
            int side;
            double t;
            if (ax >= ay) { side = dx > 0.0 ? 1 : 0; t = dy / ax; }
            else          { side = dy > 0.0 ? 3 : 2; t = dx / ay; }
            int bin = (int)__dmul_rn(__dadd_rn(t, 1.0), half_edge_bins);
            if (bin < 0) bin = 0;
            if (bin >= n_edge_bins) bin = n_edge_bins - 1;
            atomicAdd(&edge_counts[side * n_edge_bins + bin], 1u);
        }
    }
}

#define AGGREGATE_KERNEL(NAME, T)                                                                         \
extern "C" __global__ void NAME(                                                                          \
    const T* xy, const long long n,                                                                       \
    const double xmin, const double xmax, const double ymin, const double ymax,                          \
    const double sx, const double tx, const double sy, const double ty,                                  \
    const int width, const int height, const int* labels, const int n_labels, const bool* outliers,      \
    unsigned int* counts, unsigned int* outlier_counts,                                                   \
    unsigned int* edge_counts, const int n_edge_bins, const double half_edge_bins,                       \
    const double cx, const double cy, const double hx, const double hy)                                  \
{                                                                                                         \
    aggregate_points<T>(xy, n, xmin, xmax, ymin, ymax, sx, tx, sy, ty, width, height, labels, n_labels,  \
                        outliers, counts, outlier_counts, edge_counts, n_edge_bins, half_edge_bins,      \
                        cx, cy, hx, hy);                                                                  \
}
AGGREGATE_KERNEL(aggregate_points_f32, float)
AGGREGATE_KERNEL(aggregate_points_f64, double)

// Per-block (xmin, xmax, ymin, ymax) over the finite points inside the closed box [xlo, xhi] x [ylo, yhi]
// (infinite limits for all points); the host reduces the few block results.
template <typename T>
__device__ void block_bounds(const T* __restrict__ xy, const long long n,
                             const double xlo, const double xhi, const double ylo, const double yhi,
                             double* __restrict__ partial)
{
    __shared__ double shared[4][32];
    const double inf = __longlong_as_double(0x7ff0000000000000LL);
    double lo_x = inf, hi_x = -inf, lo_y = inf, hi_y = -inf;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const double x = (double)xy[2 * i];
        const double y = (double)xy[2 * i + 1];
        if (is_finite_value(x) && is_finite_value(y) && xlo <= x && x <= xhi && ylo <= y && y <= yhi) {
            lo_x = fmin(lo_x, x); hi_x = fmax(hi_x, x);
            lo_y = fmin(lo_y, y); hi_y = fmax(hi_y, y);
        }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        lo_x = fmin(lo_x, __shfl_down_sync(0xffffffff, lo_x, offset));
        hi_x = fmax(hi_x, __shfl_down_sync(0xffffffff, hi_x, offset));
        lo_y = fmin(lo_y, __shfl_down_sync(0xffffffff, lo_y, offset));
        hi_y = fmax(hi_y, __shfl_down_sync(0xffffffff, hi_y, offset));
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        shared[0][warp] = lo_x; shared[1][warp] = hi_x; shared[2][warp] = lo_y; shared[3][warp] = hi_y;
    }
    __syncthreads();
    if (threadIdx.x < 4) {
        const int k = threadIdx.x;
        const int n_warps = (blockDim.x + 31) >> 5;
        double v = shared[k][0];
        for (int w = 1; w < n_warps; ++w) v = (k & 1) ? fmax(v, shared[k][w]) : fmin(v, shared[k][w]);
        partial[4 * blockIdx.x + k] = v;
    }
}
#define BOUNDS_KERNEL(NAME, T)                                                                            \
extern "C" __global__ void NAME(const T* xy, const long long n, const double xlo, const double xhi,       \
                                const double ylo, const double yhi, double* partial)                     \
{ block_bounds<T>(xy, n, xlo, xhi, ylo, yhi, partial); }
BOUNDS_KERNEL(block_bounds_f32, float)
BOUNDS_KERNEL(block_bounds_f64, double)
"""


@functools.lru_cache(maxsize=1)
def _module() -> cp.RawModule:
    # --fmad=false as a second guard next to the explicit _rn intrinsics.
    return cp.RawModule(code=_SOURCE, options=("--std=c++14", "--fmad=false"))


def _suffix(xy: cp.ndarray) -> str:
    return "f32" if xy.dtype == cp.float32 else "f64"


@functools.lru_cache(maxsize=8)
def _multiprocessors(device_id: int) -> int:
    return int(cp.cuda.Device(device_id).attributes["MultiProcessorCount"])


def _n_blocks(n: int) -> int:
    sms = _multiprocessors(cp.cuda.Device().id)
    return int(max(1, min(-(-n // _THREADS), sms * 16)))


def _contiguous_points(embedding: cp.ndarray) -> cp.ndarray:
    """An (N, 2) C-contiguous float32/float64 device array (a copy only when the input is not one)."""
    if embedding.dtype not in (cp.float32, cp.float64):
        embedding = embedding.astype(cp.float32)
    return cp.ascontiguousarray(embedding)


def gpu_bounds(
    embedding: cp.ndarray, within: tuple[float, float, float, float] | None = None
) -> tuple[float, float, float, float] | None:
    """(xmin, xmax, ymin, ymax) over finite points of a device embedding (inside the closed box ``within``
    if given); None when there are none."""
    xy = _contiguous_points(embedding)
    n = int(xy.shape[0])
    if n == 0:
        return None
    blocks = _n_blocks(n)
    partial = cp.empty((blocks, 4), dtype=cp.float64)
    kernel = _module().get_function(f"block_bounds_{_suffix(xy)}")
    box = within if within is not None else (-np.inf, np.inf, -np.inf, np.inf)
    kernel((blocks,), (_THREADS,), (xy, np.int64(n), *(np.float64(v) for v in box), partial))
    host = partial.get()  # a few KB: the per-block results only
    xmin, xmax = host[:, 0].min(), host[:, 1].max()
    ymin, ymax = host[:, 2].min(), host[:, 3].max()
    if not np.isfinite([xmin, xmax, ymin, ymax]).all():
        return None
    return float(xmin), float(xmax), float(ymin), float(ymax)


def gpu_aggregate(
    embedding: cp.ndarray,
    bounds: tuple[float, float, float, float],
    width: int,
    height: int,
    labels: cp.ndarray | None,
    n_labels: int,
    outliers: cp.ndarray | None,
    n_edge_bins: int,
    keep_on_device: bool = False,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """(counts, outlier_counts, edge_counts) as uint32 arrays; see aggregate.aggregate.

    All on the host, or with ``keep_on_device`` the two grids stay CuPy arrays (edge_counts, 128 numbers,
    always comes back: the off-view markers are drawn on the host).
    """
    xy = _contiguous_points(embedding)
    n = int(xy.shape[0])
    xmin, xmax, ymin, ymax = bounds
    # datashader's scale and translate, computed the same way in Python doubles.
    sx = width / (xmax - xmin)
    tx = -xmin * sx
    sy = height / (ymax - ymin)
    ty = -ymin * sy
    shape = (height, width) if labels is None else (height, width, n_labels)
    counts = cp.zeros(shape, dtype=cp.uint32)
    outlier_counts = cp.zeros((height, width), dtype=cp.uint32) if outliers is not None else None
    edge_counts = cp.zeros((4, n_edge_bins), dtype=cp.uint32)
    if labels is not None:
        labels = cp.ascontiguousarray(labels, dtype=cp.int32)
    if outliers is not None:
        outliers = cp.ascontiguousarray(outliers, dtype=cp.bool_)
    null = np.uint64(0)  # a null device pointer for absent inputs
    if n > 0:
        kernel = _module().get_function(f"aggregate_points_{_suffix(xy)}")
        kernel(
            (_n_blocks(n),),
            (_THREADS,),
            (
                xy,
                np.int64(n),
                np.float64(xmin),
                np.float64(xmax),
                np.float64(ymin),
                np.float64(ymax),
                np.float64(sx),
                np.float64(tx),
                np.float64(sy),
                np.float64(ty),
                np.int32(width),
                np.int32(height),
                labels if labels is not None else null,
                np.int32(n_labels),
                outliers if outliers is not None else null,
                counts,
                outlier_counts if outlier_counts is not None else null,
                edge_counts,
                np.int32(n_edge_bins),
                np.float64(0.5 * n_edge_bins),
                np.float64((xmin + xmax) * 0.5),
                np.float64((ymin + ymax) * 0.5),
                np.float64((xmax - xmin) * 0.5),
                np.float64((ymax - ymin) * 0.5),
            ),
        )
    if keep_on_device:
        return counts, outlier_counts, edge_counts.get()
    return (
        counts.get(),
        outlier_counts.get() if outlier_counts is not None else None,
        edge_counts.get(),
    )
