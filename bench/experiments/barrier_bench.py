"""The persistent kernels' grid barrier alone (run on the GPU machine): ns per barrier on grids of 1, 2 and 4
blocks per multiprocessor, for engine_gpu.cu and any earlier versions of it passed as --sources.

    PYTHONPATH=. python3 bench/experiments/barrier_bench.py [--sources .baseline/engine_gpu.cu] [--reps 20000]

The chunked strategy pays two barriers per chunk; this tells how much of its per-chunk cost
they are, without the chunk's own work around them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import cupy as cp

from umapviz.optimize.engine_gpu import KERNELS, NVRTC_OPTIONS, kernel_source

# A loop of barriers, whatever word type the source's grid_barrier takes.
LOOP = r"""
template <class F> struct BarrierWord;
template <class T> struct BarrierWord<void(T*)> { typedef T type; };
typedef BarrierWord<decltype(grid_barrier)>::type bar_word;
extern "C" __global__ void barrier_loop(bar_word* bar, int reps) {
    for (int r = 0; r < reps; ++r) grid_barrier(bar);
}
"""


def time_barrier(source: str, blocks: int, threads: int, reps: int) -> float:
    """ns per grid barrier: `reps` barriers in one launch of `blocks` x `threads`, best of three launches."""
    kernel = cp.RawModule(code=source + LOOP, options=NVRTC_OPTIONS).get_function("barrier_loop")
    bar = cp.zeros(64, dtype=cp.uint64)  # room for every version's words
    kernel((blocks,), (threads,), (bar, cp.int32(10)))  # compile, load, warm up
    best = float("inf")
    for _ in range(3):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        kernel((blocks,), (threads,), (bar, cp.int32(reps)))
        stop.record()
        stop.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(start, stop) * 1e6 / reps)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--sources",
        default="",
        help="comma-separated earlier engine_gpu.cu files (their kernels/ beside them) to time beside the current",
    )
    ap.add_argument("--reps", type=int, default=20000, help="barriers per launch")
    ap.add_argument("--threads", type=int, default=256, help="threads per block")
    args = ap.parse_args()
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    sources = [str(KERNELS)] + [s for s in args.sources.split(",") if s]
    print(f"| engine_gpu.cu | blocks ({args.threads} threads) | ns per barrier |")
    print("|---|---|---|")
    for per_sm in (1, 2, 4):
        for path in sources:
            ns = time_barrier(kernel_source(Path(path)), sms * per_sm, args.threads, args.reps)
            print(f"| {path} | {sms * per_sm} | {ns:.0f} |", flush=True)


if __name__ == "__main__":
    main()
