"""The tables and polynomial coefficients of pow_portable (umapviz/optimize/moves_cpu.py and its twin in
engine_gpu.cu), and the error bound of each polynomial, measured on a dense grid in long double.

    PYTHONPATH=$PWD .venv/bin/python bench/experiments/pow_tables.py

Prints the literals both twins hold. log2: x = 2^k z, z in [0x3F330000, 0x3FB30000) as float32 bits (about
[0.699, 1.398)), cut into LOG_N subintervals by z's top mantissa bits; c_i is the midpoint of subinterval i,
1/c_i rounded to 29 significant bits (so that z * invc is exact in float64: 24 + 29 bits), and log2 c_i is taken
from that rounded inverse (-log2(invc)), so that log2 x = k + log2 c_i + log2(1 + r), r = z invc - 1, holds
exactly. log2(1 + r) is a degree-LOG_DEG polynomial without constant term fitted for the least largest absolute
error (Lawson's iteration) over the union of the subintervals' r ranges. exp2: 2^(v/EXP_N) for v = EXP_N j + s,
|s| <= 1/2: the table holds the bits of 2^(j/EXP_N) less j << (52 - EXP_BITS) (so that adding v's bits shifted to
the exponent field rebuilds 2^(v/EXP_N) with one integer add), and 2^(s/EXP_N) is 1 + a degree-EXP_DEG polynomial
fitted for the least largest relative error. The log2 table and coefficients come scaled by EXP_N (exact), so that
y log2 x arrives in the exp2 table's units.
"""

from __future__ import annotations

import numpy as np

LOG_BITS, LOG_DEG, EXP_BITS, EXP_DEG = 5, 5, 5, 4
LOG_N, EXP_N = 1 << LOG_BITS, 1 << EXP_BITS
OFF = 0x3F330000
ld = np.longdouble


def round_bits(v: float, bits: int) -> float:
    m, e = np.frexp(v)
    return float(np.ldexp(np.round(m * 2.0**bits), e - bits))


def lawson(f, lo: float, hi: float, powers, base, relative: bool):
    """Coefficients of sum c_p x^p (p in powers) approximating f - base on [lo, hi] for the least largest error."""
    x = ((np.cos(np.linspace(0, np.pi, 4000)) * (hi - lo) + (hi + lo)) / 2).astype(ld)
    a = np.stack([x**p for p in powers], 1).astype(float)
    b = (f(x) - base(x)).astype(float)
    scale = (1 / f(x)).astype(float) if relative else np.ones(x.size)
    w = np.full(x.size, 1.0 / x.size)
    for _ in range(300):
        sw = np.sqrt(w) * scale
        c = np.linalg.lstsq(a * sw[:, None], b * sw, rcond=None)[0]
        w = w * np.abs((a @ c - b) * scale)
        w /= w.sum()
    return c


def main() -> None:
    invc, logc, rmin, rmax = [], [], 0.0, 0.0
    for i in range(LOG_N):
        lo = OFF + (i << (23 - LOG_BITS))
        hi = lo + (1 << (23 - LOG_BITS)) - 1
        zlo, zhi = (float(np.array([v], np.uint32).view(np.float32)[0]) for v in (lo, hi))
        ic = round_bits(2.0 / (zlo + zhi), 29)
        invc.append(ic)
        logc.append(float(-np.log2(ld(ic)) * EXP_N))
        rmin, rmax = min(rmin, zlo * ic - 1), max(rmax, zhi * ic - 1)
    log_c = lawson(lambda r: np.log2(1 + r), rmin, rmax, range(1, LOG_DEG + 1), lambda r: 0 * r, False)
    exp_c = lawson(lambda s: np.exp2(s / ld(EXP_N)), -0.5, 0.5, range(1, EXP_DEG + 1), lambda s: 1 + 0 * s, True)
    r = np.linspace(rmin, rmax, 400001).astype(ld)
    log_err = np.abs(sum(ld(c) * r ** (p + 1) for p, c in enumerate(log_c)) - np.log2(1 + r)).max()
    s = np.linspace(-0.5, 0.5, 400001).astype(ld)
    exp_err = np.abs((1 + sum(ld(c) * s ** (p + 1) for p, c in enumerate(exp_c))) / np.exp2(s / ld(EXP_N)) - 1).max()
    exp2 = [
        int(np.array([float(np.exp2(ld(j) / EXP_N))]).view(np.int64)[0]) - (j << (52 - EXP_BITS)) for j in range(EXP_N)
    ]
    print(
        f"log2(1 + r), |r| <= {max(-rmin, rmax):.6f}: degree {LOG_DEG}, largest absolute error {float(log_err):.3e}"
        f" (2^{np.log2(float(log_err)):.1f})"
    )
    print(
        f"2^(s / {EXP_N}), |s| <= 1/2: degree {EXP_DEG}, largest relative error {float(exp_err):.3e}"
        f" (2^{np.log2(float(exp_err)):.1f})"
    )
    print("invc:", ", ".join(repr(v) for v in invc))
    print(f"logc (x {EXP_N}):", ", ".join(repr(v) for v in logc))
    print(f"log2(1 + r) coefficients (x {EXP_N}), r^1..r^{LOG_DEG}:", ", ".join(repr(float(c) * EXP_N) for c in log_c))
    print(f"2^(s / {EXP_N}) coefficients, s^1..s^{EXP_DEG}:", ", ".join(repr(float(c)) for c in exp_c))
    print("exp2 bits:", ", ".join(f"0x{v:016X}" for v in exp2))


if __name__ == "__main__":
    main()
