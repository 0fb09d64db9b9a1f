"""One edge's moves on the CPU (Numba): the attraction, the negative samples, and how many of those are due.

The CPU engine and ``transform`` both build on these; all arithmetic is float32 with float32 constants, in the
order the GPU kernels (engine_gpu.cu) follow. Every operation is correctly rounded (IEEE +, -, *, /, compares),
with no FMA contraction (no ``fastmath``) and the power d2**b from :func:`pow_portable`, so that the GPU, which
follows the same steps, gets the same bytes.
"""

from __future__ import annotations

import os

import numpy as np
from llvmlite import ir as llvm_ir
from numba import njit, types
from numba.extending import intrinsic

from .rng import negative_vertex

# Benchmark only (bench/cpu_pow_cost.py measures what pow_portable costs): UMAPVIZ_BENCH_LIBRARY_POW=1, read at
# import, makes the moves take the C library's powf instead, which is not bitwise the GPU's. Numba freezes this
# flag into the machine code, so with it set nothing is read from or written to Numba's on-disk cache (JIT_CACHE),
# where the portable code lives.
LIBRARY_POW = os.environ.get("UMAPVIZ_BENCH_LIBRARY_POW", "") == "1"
JIT_CACHE = not LIBRARY_POW

F0 = np.float32(0.0)
_F1 = np.float32(1.0)
CLIP = np.float32(4.0)  # UMAP's clip of each coordinate of a gradient
_EPS_REP = np.float32(0.001)  # UMAP's guard against a repulsion at distance 0


# pow_portable's tables (the same literals in engine_gpu.cu): for x's mantissa in the i-th of 16 subintervals of
# [0.699, 1.398), an inverse 1/c of the subinterval's centre c and log2(c); and 2^(j/32), j = 0..31.
_POW_INVC = np.array([
    1.3989071038251366, 1.3403141361256545, 1.2864321608040201, 1.2367149758454106, 1.1906976744186046,
    1.147982062780269, 1.1082251082251082, 1.0711297071129706, 1.0364372469635628, 0.9980506822612085,
    0.9481481481481482, 0.8951048951048951, 0.847682119205298, 0.8050314465408805, 0.7664670658682635,
    0.7314285714285714])
_POW_LOGC = np.array([
    -0.4843001617159575, -0.4225711719642514, -0.3633753794563512, -0.3065130425006747, -0.2518071504105397,
    -0.19910010007969525, -0.14825095858394247, -0.09913319201925132, -0.05163276841532236, 0.002815015607054118,
    0.07681559705083084, 0.1598713367783894, 0.2384047393250789, 0.3128829552843553, 0.38370429247405213,
    0.4512111118323288])
_POW_EXP2 = np.array([
    1.0, 1.0218971486541166, 1.0442737824274138, 1.0671404006768237, 1.0905077326652577, 1.1143867425958924,
    1.1387886347566916, 1.1637248587775775, 1.189207115002721, 1.215247359980469, 1.241857812073484,
    1.2690509571917332, 1.2968395546510096, 1.3252366431597413, 1.3542555469368927, 1.383909881963832,
    1.4142135623730951, 1.4451808069770467, 1.4768261459394993, 1.5091644275934228, 1.5422108254079407,
    1.5759808451078865, 1.6104903319492543, 1.645755478153965, 1.681792830507429, 1.718619298122478,
    1.7562521603732995, 1.7947090750031072, 1.8340080864093424, 1.8741676341103, 1.9152065613971474,
    1.9571441241754002])
_FLOAT32_MAX = np.float32(np.finfo(np.float32).max)


def _bitcast_to(llvm_type):
    """Code generation of a bitcast of an intrinsic's one argument to `llvm_type`."""
    return lambda context, builder, sig, args: builder.bitcast(args[0], llvm_type)


@intrinsic
def _float32_bits(typingctx, x):
    """The IEEE bits of a float32 as an int32 (a bitcast, no arithmetic)."""
    if x != types.float32:
        return None
    return types.int32(types.float32), _bitcast_to(llvm_ir.IntType(32))


@intrinsic
def _float32_from_bits(typingctx, bits):
    """The float32 whose IEEE bits are the int32 `bits` (a bitcast)."""
    if bits != types.int32:
        return None
    return types.float32(types.int32), _bitcast_to(llvm_ir.FloatType())


@intrinsic
def _float64_from_bits(typingctx, bits):
    """The float64 whose IEEE bits are the int64 `bits` (a bitcast)."""
    if bits != types.int64:
        return None
    return types.float64(types.int64), _bitcast_to(llvm_ir.DoubleType())


@njit(cache=JIT_CACHE, inline="always")
def pow_portable(x, y):
    """x**y for float32 x >= 0 and y, as float32, from float64 IEEE +, -, * only (no library call).

    Twin of ``pow_portable`` in engine_gpu.cu: change both together, step for step, tables included. Library powf
    functions differ between platforms (CUDA's and the C library's disagree in the last bit on a few percent of
    calls), and the layout's chaotic iteration turns one such bit into another picture; these steps give the same
    bits wherever IEEE float64 arithmetic runs them in this order without contraction. Before the final rounding
    to float32 the result is within about 1e-13 relative of x**y for finite x > 0 (and |y log2 x| < 129), so the
    float32 result is x**y correctly rounded except within that distance of a tie between two floats, where it
    may be 1 ulp off. x = 0 gives 0 (y > 0 in the engine: b of the curve); x = inf gives inf.

    Steps (the shape of the table-driven powf of ARM's optimized-routines): x = z 2^k exactly from its bits, with
    z in [0.699, 1.398) (a subnormal x scaled by 2^23 first); log2 x = k + log2 c_i + log2(1 + r), r = z / c_i - 1
    with 1 / c_i and log2 c_i from the table of z's subinterval i (|r| < 0.03), log2(1 + r) by its Taylor series
    to r^8; u = y log2 x; 2^u = 2^(e + j/32) 2^s, u = (32 e + j) / 32 + s with |s| <= 1/64, 2^(j/32) from the
    table, 2^s by its Taylor series to s^5, 2^e built from its bits. Both series are summed in the same
    pairwise (Estrin) order on both devices.

    Parameters
    ----------
    x : float32
        The base, >= 0 (a squared distance).
    y : float32
        The exponent.
    """
    if x == 0:
        return F0
    if x > _FLOAT32_MAX:
        return x
    ix = np.int64(_float32_bits(np.float32(x)))
    if ix < 0x00800000:  # subnormal: scale into the normal range (exact), take 23 off the exponent
        ix = np.int64(_float32_bits(np.float32(x) * np.float32(8388608.0))) - (23 << 23)
    tmp = ix - 0x3F330000
    i = (tmp >> 19) & 15
    top = tmp & -8388608  # the exponent part of tmp: a multiple of 2^23
    z = np.float64(_float32_from_bits(np.int32(ix - top)))
    r = z * _POW_INVC[i] - 1.0
    r2 = r * r
    r4 = r2 * r2
    q01 = 1.4426950408889634 + -0.7213475204444817 * r  # 1/ln2 (-1)^(n+1)/n, n = 1..8
    q23 = 0.48089834696298783 + -0.36067376022224085 * r
    q45 = 0.28853900817779266 + -0.24044917348149392 * r
    q67 = 0.20609929155556622 + -0.18033688011112042 * r
    log2x = (_POW_LOGC[i] + np.float64(top >> 23)) + r * ((q01 + r2 * q23) + r4 * (q45 + r2 * q67))
    u = np.float64(y) * log2x
    if u > 129.0:
        return np.float32(np.inf)
    if u < -160.0:
        return F0
    kd = np.rint(u * 32.0)
    k = np.int64(kd)
    s = u - kd * 0.03125
    s2 = s * s
    e01 = 1.0 + 0.6931471805599453 * s  # ln2^n / n!, n = 0..5
    e23 = 0.2402265069591007 + 0.055504108664821576 * s
    e45 = 0.009618129107628477 + 0.0013333558146428441 * s
    exp2s = e01 + s2 * (e23 + s2 * e45)
    scale = _float64_from_bits(((k >> 5) + 1023) << 52)
    return np.float32((_POW_EXP2[k & 31] * exp2s) * scale)


@njit(cache=JIT_CACHE, inline="always")
def power(x, y):
    """The moves' d2**b: :func:`pow_portable`, or the C library's powf where the benchmark asks (LIBRARY_POW).

    Parameters
    ----------
    x : float32
        The base, >= 0 (a squared distance).
    y : float32
        The exponent (b of the curve).
    """
    if LIBRARY_POW:
        return x**y
    return pow_portable(x, y)


@njit(cache=JIT_CACHE, inline="always")
def clip(x):
    if x > CLIP:
        return CLIP
    if x < -CLIP:
        return -CLIP
    return x


@njit(cache=JIT_CACHE, nogil=True, inline="always")
def negatives_due(tf, next_neg, eps_neg):
    """Negative samples of an edge active at epoch tf: floor((tf - next_neg) / eps_neg), at least 0, and 0 when
    negative_sample_rate = 0 makes eps_neg infinite (the ratio is then NaN, which no integer cast should see)."""
    ratio = (tf - next_neg) / eps_neg
    return np.int64(np.floor(ratio)) if ratio >= 1.0 else np.int64(0)


@njit(cache=JIT_CACHE, inline="always")
def attract_coef(d2, a, b, c_att):
    """The attraction's gradient coefficient at squared distance d2 (0 for coincident points)."""
    if d2 > F0:
        pb = power(d2, b)
        return ((c_att * pb) / d2) / (a * pb + _F1)
    return F0


@njit(cache=JIT_CACHE, inline="always")
def attract(yi, Y, j, a, b, c_att, alpha, tail_move):
    """Attraction of the head copy yi towards row j of Y: moves yi, writes the tail's move."""
    dim = yi.shape[0]
    d2 = F0
    for d in range(dim):
        diff = yi[d] - Y[j, d]
        d2 += diff * diff
    coef = attract_coef(d2, a, b, c_att)
    for d in range(dim):
        g = clip(coef * (yi[d] - Y[j, d]))
        yi[d] += alpha * g
        tail_move[d] = -(alpha * g)


@njit(cache=JIT_CACHE, inline="always")
def repel(yi, yfrom, Y, i, e, n_neg, seed, t, n, a, b, c_rep, alpha):
    """The edge's negative samples: each moves yi, computed from yfrom (yi itself, or a frozen copy)."""
    dim = yi.shape[0]
    for s in range(n_neg):
        k = negative_vertex(seed, t, e, s, n)
        if k == i:
            continue
        d2 = F0
        for d in range(dim):
            diff = yfrom[d] - Y[k, d]
            d2 += diff * diff
        if d2 > F0:
            coef = c_rep / ((_EPS_REP + d2) * (a * power(d2, b) + _F1))
            for d in range(dim):
                yi[d] += alpha * clip(coef * (yfrom[d] - Y[k, d]))
        else:
            for d in range(dim):
                yi[d] += alpha * CLIP
