"""One edge's moves on the CPU (Numba): the attraction, the negative samples, and how many of those are due.

The CPU engine and ``transform`` both build on these; all arithmetic is float32 with float32 constants, in the
order the GPU kernels (engine_gpu.cu) follow. Every operation is correctly rounded (IEEE +, -, *, /, compares),
with no FMA contraction (no ``fastmath``) and the power d2**b from :func:`pow_portable`, so that the GPU, which
follows the same steps, gets the same bytes.
"""

from __future__ import annotations

import math
import os

import numpy as np
from numba import njit

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


@njit(cache=JIT_CACHE, inline="always")
def pow_portable(x, y):
    """x**y for float32 x >= 0 and y, as float32, from float64 IEEE +, -, *, / only (no library call).

    Twin of ``pow_portable`` in engine_gpu.cu: change both together, step for step. Library powf functions
    differ between platforms (CUDA's and the C library's disagree in the last bit on a few percent of calls),
    and the layout's chaotic iteration turns one such bit into another picture; these steps give the same bits
    wherever IEEE float64 arithmetic runs them in this order without contraction. Before the final rounding to
    float32 the result is within about 1e-12 relative of x**y for finite x > 0 and |y * ln x| < 700, so the
    float32 result is x**y correctly rounded except within that distance of a rounding tie (then 1 ulp off).
    x = 0 gives 0 (y > 0 in the engine: b of the curve).

    Steps: x = m 2^e with m in [sqrt(1/2), sqrt(2)); ln m = 2 atanh(s), s = (m - 1)/(m + 1), by its series to
    s^21; u = y (e ln2 + ln m); exp(u) = 2^k exp(r), k = rint(u / ln2), r = u - k ln2 (ln2 in two parts, the
    first with trailing zero bits so that k times it is exact), exp(r) by Taylor to r^13.

    Parameters
    ----------
    x : float32
        The base, >= 0 (a squared distance).
    y : float32
        The exponent.
    """
    if x == 0:
        return F0
    md, e = math.frexp(np.float64(x))  # x = md 2^e, md in [1/2, 1), exact
    if md < 0.7071067811865476:
        md = md * 2.0
        e -= 1
    s = (md - 1.0) / (md + 1.0)
    s2 = s * s
    p = 0.047619047619047616  # 1/21
    p = p * s2 + 0.05263157894736842  # 1/19
    p = p * s2 + 0.058823529411764705  # 1/17
    p = p * s2 + 0.06666666666666667  # 1/15
    p = p * s2 + 0.07692307692307693  # 1/13
    p = p * s2 + 0.09090909090909091  # 1/11
    p = p * s2 + 0.1111111111111111  # 1/9
    p = p * s2 + 0.14285714285714285  # 1/7
    p = p * s2 + 0.2  # 1/5
    p = p * s2 + 0.3333333333333333  # 1/3
    p = p * s2 + 1.0
    ln_m = (2.0 * s) * p
    u = np.float64(y) * (np.float64(e) * 0.6931471805599453 + ln_m)
    kf = np.rint(u * 1.4426950408889634)  # u / ln2, to the nearest integer
    r = (u - kf * 0.6931471803691238) - kf * 1.9082149292705877e-10
    q = 1.6059043836821613e-10  # 1/13!
    q = q * r + 2.08767569878681e-09  # 1/12!
    q = q * r + 2.505210838544172e-08  # 1/11!
    q = q * r + 2.755731922398589e-07  # 1/10!
    q = q * r + 2.7557319223985893e-06  # 1/9!
    q = q * r + 2.48015873015873e-05  # 1/8!
    q = q * r + 0.0001984126984126984  # 1/7!
    q = q * r + 0.001388888888888889  # 1/6!
    q = q * r + 0.008333333333333333  # 1/5!
    q = q * r + 0.041666666666666664  # 1/4!
    q = q * r + 0.16666666666666666  # 1/3!
    q = q * r + 0.5
    q = q * r + 1.0
    q = q * r + 1.0
    return np.float32(math.ldexp(q, int(kf)))


@njit(cache=JIT_CACHE, inline="always")
def power(x, y):
    """The moves' d2**b: :func:`pow_portable`, or the C library's powf where the benchmark asks (LIBRARY_POW)."""
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
