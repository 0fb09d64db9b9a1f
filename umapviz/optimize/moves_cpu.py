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
_INF = np.float32(np.inf)
_NAN = np.float32(np.nan)


# pow_portable's tables (the same literals in engine_gpu.cu; bench/experiments/pow_tables.py derives them): for x's
# mantissa z in the i-th of 32 subintervals of [0.699, 1.398), 1/c_i (c_i near the subinterval's middle; 29
# significant bits, so that z / c_i is exact) and 32 log2(c_i); and the bits of 2^(j/32) less j << 47, j = 0..31.
_POW_INVC = np.array(
    [
        1.4143646992743015,
        1.3837838396430016,
        1.3544974103569984,
        1.3264249227941036,
        1.2994924373924732,
        1.273631889373064,
        1.248780533671379,
        1.224880427122116,
        1.2018779776990414,
        1.1797235421836376,
        1.1583710797131062,
        1.13777781650424,
        1.1179039664566517,
        1.098712481558323,
        1.0801688097417355,
        1.0622406974434853,
        1.0448979921638966,
        1.028112482279539,
        1.0118577368557453,
        0.9903288781642914,
        0.9624060709029436,
        0.9343066215515137,
        0.9078014679253101,
        0.8827586676925421,
        0.8590604458004236,
        0.8366013485938311,
        0.8152866642922163,
        0.7950310930609703,
        0.7757576107978821,
        0.7573964837938547,
        0.7398844249546528,
        0.7231638729572296,
    ]
)
_POW_LOGC = np.array(
    [
        -16.0049335192545,
        -14.99579512707123,
        -14.008244328827326,
        -13.041376628690792,
        -12.094343610757853,
        -11.166347643081,
        -10.256638511467145,
        -9.36450944486811,
        -8.489293820870499,
        -7.630362122384831,
        -6.787119653364287,
        -5.959003452411898,
        -5.145480281043314,
        -4.346044850382529,
        -3.5602174615024356,
        -2.787542698462894,
        -2.0275874090676007,
        -1.279939632314883,
        -0.5442069486938658,
        0.44865234403846527,
        1.7690352561991047,
        3.137024074997164,
        4.465640760171579,
        5.757088422335314,
        7.013390337726093,
        8.236408681348523,
        9.42786169449549,
        10.589337941822972,
        11.722308770576511,
        12.828139883130182,
        13.908101294482217,
        14.96337561410656,
    ]
)
_POW_EXP2_BITS = np.array(
    [
        0x3FF0000000000000,
        0x3FEFD9B0D3158574,
        0x3FEFB5586CF9890F,
        0x3FEF9301D0125B51,
        0x3FEF72B83C7D517B,
        0x3FEF54873168B9AA,
        0x3FEF387A6E756238,
        0x3FEF1E9DF51FDEE1,
        0x3FEF06FE0A31B715,
        0x3FEEF1A7373AA9CB,
        0x3FEEDEA64C123422,
        0x3FEECE086061892D,
        0x3FEEBFDAD5362A27,
        0x3FEEB42B569D4F82,
        0x3FEEAB07DD485429,
        0x3FEEA47EB03A5585,
        0x3FEEA09E667F3BCD,
        0x3FEE9F75E8EC5F74,
        0x3FEEA11473EB0187,
        0x3FEEA589994CCE13,
        0x3FEEACE5422AA0DB,
        0x3FEEB737B0CDC5E5,
        0x3FEEC49182A3F090,
        0x3FEED503B23E255D,
        0x3FEEE89F995AD3AD,
        0x3FEEFF76F2FB5E47,
        0x3FEF199BDD85529C,
        0x3FEF3720DCEF9069,
        0x3FEF5818DCFBA487,
        0x3FEF7C97337B9B5F,
        0x3FEFA4AFA2A490DA,
        0x3FEFD0765B6E4540,
    ],
    np.int64,
)


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
def _float64_bits(typingctx, x):
    """The IEEE bits of a float64 as an int64 (a bitcast)."""
    if x != types.float64:
        return None
    return types.int64(types.float64), _bitcast_to(llvm_ir.IntType(64))


@intrinsic
def _float64_from_bits(typingctx, bits):
    """The float64 whose IEEE bits are the int64 `bits` (a bitcast)."""
    if bits != types.int64:
        return None
    return types.float64(types.int64), _bitcast_to(llvm_ir.DoubleType())


@njit(cache=JIT_CACHE, inline="always")
def pow_portable(x, y):
    """x**y for float32 x >= 0 and y, as float32, from float64 IEEE +, -, * only (no library call).

    Twin of ``pow_portable`` in kernels/helpers.cuh: change both together, step for step, tables included. Library powf
    functions differ between platforms (CUDA's and the C library's disagree in the last bit on a few percent of
    calls), and the layout's chaotic iteration turns one such bit into another picture; these steps give the same
    bits wherever IEEE float64 arithmetic runs them in this order without contraction.

    Steps (the shape of the table-driven powf of ARM's optimized-routines), in units of 1/32 from the log on:
    x = 2^k z exactly from its bits, z in [0.699, 1.398); 32 log2 x = 32 (k + log2 c_i) + 32 log2(1 + r) with
    r = z / c_i - 1 exact (z * (1/c_i): 24 times 29 significant bits) and |r| <= 0.01504, 1/c_i and 32 log2 c_i
    from the table of z's subinterval i (32 of them), log2(1 + r) a degree-5 polynomial (Estrin order);
    u = 32 y log2 x; v = round(u) read from the last bits of u + 1.5 * 2^52, s = u - v exact (|s| <= 1/2);
    2^(u/32) = 2^(v/32) 2^(s/32), 2^(v/32) rebuilt with one integer add from the table's 2^(j/32), j = v mod 32,
    and v div 32 moved into the exponent field; 2^(s/32) = 1 + a degree-4 polynomial. Constants and fits:
    bench/experiments/pow_tables.py. The tables are small (3 x 32 doubles) because on the GPU each lookup is a
    gather whose cost grows with the cache lines a warp touches.

    Error before the final rounding to float32, relative to x**y, for x**y in [2^-126, 2^128): at most
    7.8e-14 (the exp2 polynomial) + 7.5e-14 |y| (the log2 polynomial's 1.07e-13, times y ln 2) + 2.5e-16 |u/32|
    (the roundings of the log's sum and of y log2 x, which grow with the result's exponent) + 1e-15 (the other
    roundings): below 3e-13 for |y| <= 2. So the float32 result is x**y correctly rounded except where x**y lies
    within that distance of a tie between two floats, where it may be 1 ulp off: at most a fraction
    2 * 3e-13 * 2^24 = 1e-5 of random inputs (tests/test_optimize.py counts them; bench/RESULTS.md has figures).

    No subnormal float is an operand or a result, so that no device's handling of them (kept, or flushed to 0)
    matters: x below 2^-126 (zero or subnormal: points all but coincident) gives 0, and so does x**y below 2^-126
    (u < -126 * 32). x**y from 2^128 up gives inf; x = inf or NaN gives x, a negative x NaN, a NaN y NaN.

    Parameters
    ----------
    x : float32
        The base, >= 0 (a squared distance).
    y : float32
        The exponent.
    """
    ix = np.int64(_float32_bits(np.float32(x)))
    if ix < 0x00800000 or ix >= 0x7F800000:  # not a positive normal float
        if ix >= 0x7F800000:  # inf, NaN
            return x
        if (ix & 0x7FFFFFFF) < 0x00800000:  # +-0, subnormal
            return F0
        return _NAN
    tmp = ix - 0x3F330000
    i = (tmp >> 18) & 31
    top = tmp & -8388608  # the exponent part of tmp, k: a multiple of 2^23
    z = np.float64(_float32_from_bits(np.int32(ix - top)))
    r = z * _POW_INVC[i] - 1.0
    y0 = _POW_LOGC[i] + np.float64(top >> 18)  # 32 (log2 c_i + k)
    r2 = r * r
    r4 = r2 * r2
    lg = ((y0 + 46.16624130845782 * r) + r2 * (-23.083120484692593 + 15.388746740952461 * r)) + r4 * (
        -11.543983276749524 + 9.236125963385836 * r
    )
    u = np.float64(y) * lg
    if not (u >= -4032.0 and u < 4096.0):  # x**y below 2^-126, from 2^128, or NaN
        if u < -4032.0:
            return F0
        if u >= 4096.0:
            return _INF
        return _NAN
    kd = u + 6755399441055744.0  # 1.5 * 2^52: the last bits of kd are v = round(u), ties to even
    ki = _float64_bits(kd)
    s = u - (kd - 6755399441055744.0)
    s2 = s * s
    e = (1.0 + 0.0216608493917244 * s) + s2 * (
        (0.0002345961982143423 + 1.693863379857484e-06 * s) + s2 * 9.172536954829184e-09
    )
    return np.float32(e * _float64_from_bits(_POW_EXP2_BITS[ki & 31] + (ki << 47)))


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
