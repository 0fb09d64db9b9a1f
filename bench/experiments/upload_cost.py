"""What host data costs on its way to the GPU: CuPy's pageable copy against _host_data.to_device, whole and by rows.

    PYTHONPATH=. python3 bench/experiments/upload_cost.py --sizes 1000000,10000000 --dim 384      (GPU machine)

Per size: seconds of cupy.asarray(X), to_device(X), a gather of 2 x 60,000 random rows each way (host fancy index
then cupy.asarray, against to_device(X, rows)), and check_data(X) (the fit's finiteness check). Bytes compared.
"""

from __future__ import annotations

import argparse
import time

import cupy as cp
import numpy as np

from umapviz._host_data import to_device
from umapviz._validation import check_data


def timed(fn):
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    out = fn()
    cp.cuda.Device().synchronize()
    return out, time.perf_counter() - t


def one(n: int, dim: int) -> None:
    X = cp.random.default_rng(0).standard_normal((n, dim), dtype=cp.float32).get()
    gb = X.nbytes / 1e9
    plain, t_plain = timed(lambda: cp.asarray(X))
    del plain
    cp.get_default_memory_pool().free_all_blocks()
    fast, t_fast = timed(lambda: to_device(X))
    step = max(1, n // 1000)
    ok = bool(cp.array_equal(fast[::step], cp.asarray(X[::step])))
    del fast
    rows = np.sort(np.random.default_rng(1).choice(n, 120_000, replace=False))
    _, t_take = timed(lambda: cp.asarray(X[rows]))
    got, t_rows = timed(lambda: to_device(X, rows))
    ok_rows = bool(cp.array_equal(got, cp.asarray(X[rows])))
    _, t_check = timed(lambda: check_data(X))
    print(
        f"n={n:,} x {dim} ({gb:.2f} GB): cupy.asarray {t_plain:.2f} s ({gb / t_plain:.1f} GB/s), "
        f"to_device {t_fast:.2f} s ({gb / t_fast:.1f} GB/s) equal={ok}; 120k rows: host gather+asarray "
        f"{t_take:.3f} s, to_device(rows) {t_rows:.3f} s equal={ok_rows}; check_data {t_check:.2f} s",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,10000000")
    parser.add_argument("--dim", type=int, default=384)
    args = parser.parse_args()
    to_device(np.zeros((10, args.dim), np.float32))  # pinned pool and stream made once
    for n in (int(s) for s in args.sizes.split(",")):
        one(n, args.dim)
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
