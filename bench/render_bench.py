"""Frame time of umapviz.render: view + aggregate + shade + PNG encode, at millions of points.

    python bench/render_bench.py                       # NumPy: 1M, 10M, 30M points
    python bench/render_bench.py --device gpu          # CuPy: the same, points generated on the GPU
    python bench/render_bench.py --sizes 1e6 --repeats 10 --width 1024 --height 1024

For each size it reports the first call (which pays datashader's Numba compilation, or the CUDA kernel's
NVRTC compilation, once per process), then over the following calls: the median and the best frame, the
median CPU time of the process per frame (steadier on a shared machine; it counts every thread, so the PNG
encoder's threads can make it exceed the frame time), and the median of each stage.
With --device gpu the grids stay on the GPU (as in ``umapviz.render.image``): "shade" is the shading there
plus the copy of the finished image to the host and its off-view markers; each stage ends with a device sync.
Two frames per size: density only, and 10 coloured labels. Both carry an outlier mask (0.01% of points,
flung far) and use the robust view, so every stage of a live frame is exercised.
Targets: CPU <= 150 ms/frame at 1M points; GPU <= 30 ms/frame at 10M points.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np

from umapviz.render.aggregate import aggregate
from umapviz.render.export import encode_png
from umapviz.render.shade import shade
from umapviz.render.view import resolve_view

STAGES = ("view", "aggregate", "shade", "encode")


def make_points(n: int, device: str, n_labels: int = 10, seed: int = 0):
    """A mixture of n_labels Gaussian clusters (float32), labels, and an outlier mask with flung points."""
    if device == "gpu":
        import cupy as xp  # noqa: PLC0415 - only with --device gpu
    else:
        xp = np
    rng = xp.random.default_rng(seed) if device == "cpu" else xp.random.RandomState(seed)
    labels = (rng.integers(0, n_labels, n) if device == "cpu" else rng.randint(0, n_labels, n)).astype(xp.int32)
    angle = 2 * np.pi * xp.arange(n_labels) / n_labels
    centres = xp.stack([xp.cos(angle), xp.sin(angle)], axis=1) * 8
    emb = (rng.standard_normal((n, 2)) + centres[labels]).astype(xp.float32)
    outliers = xp.zeros(n, dtype=bool)
    k = max(1, n // 10_000)
    outliers[:k] = True
    emb[:k] *= 20  # flung: most land outside the robust view
    return emb, labels, outliers


def sync(device: str) -> None:
    if device == "gpu":
        import cupy as cp  # noqa: PLC0415 - only with --device gpu

        cp.cuda.Device().synchronize()


def one_frame(emb, labels, outliers, width: int, height: int, device: str, png_level: int = 1) -> dict[str, float]:
    """Seconds per stage of one frame."""
    times = {}
    sync(device)
    c0 = time.process_time()
    t0 = time.perf_counter()
    view = resolve_view(emb, "robust", width, height)
    t1 = time.perf_counter()
    agg = aggregate(emb, view, width, height, labels=labels, outliers=outliers, keep_on_device=True)
    sync(device)  # the kernel runs asynchronously: charge it to this stage, not to the next
    t2 = time.perf_counter()
    rgba = shade(agg)
    t3 = time.perf_counter()
    encode_png(rgba, compress_level=png_level)
    t4 = time.perf_counter()
    times.update(view=t1 - t0, aggregate=t2 - t1, shade=t3 - t2, encode=t4 - t3)
    times["frame"] = t4 - t0
    times["cpu"] = time.process_time() - c0  # CPU seconds of this process: less disturbed by other work
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e6, 1e7, 3e7])
    parser.add_argument("--width", type=int, default=800)
    parser.add_argument("--height", type=int, default=800)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--png-level", type=int, default=1, help="zlib level of the PNG encode (live frames: 1)")
    args = parser.parse_args(argv)

    cpu = platform.processor() or platform.machine()
    print(
        f"umapviz render bench: device={args.device}, {args.width}x{args.height}, PNG level {args.png_level}, "
        f"median (and best) of {args.repeats} frames after the first; {cpu}, {os.cpu_count()} cores"
    )
    if args.device == "gpu":
        import cupy as cp  # noqa: PLC0415 - only with --device gpu

        print(f"GPU: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    header = (
        f"{'points':>8} {'frame':>8} {'best':>7} {'cpu':>7} {'first call':>10} | "
        + " ".join(f"{s:>9}" for s in STAGES)
        + "   (ms)"
    )
    print(header)
    print("-" * len(header))
    for size in args.sizes:
        n = int(size)
        emb, labels, outliers = make_points(n, args.device)
        for kind, lab in (("density", None), ("10 labels", labels)):
            frame_args = (emb, lab, outliers, args.width, args.height, args.device, args.png_level)
            first = one_frame(*frame_args)
            runs = [one_frame(*frame_args) for _ in range(args.repeats)]
            med = {k: 1e3 * statistics.median(r[k] for r in runs) for k in (*STAGES, "frame", "cpu")}
            stages = " ".join(f"{med[s]:9.1f}" for s in STAGES)
            best = 1e3 * min(r["frame"] for r in runs)  # least disturbed by other work on a shared machine
            row = f"{n / 1e6:7g}M {med['frame']:8.1f} {best:7.1f} {med['cpu']:7.1f} {1e3 * first['frame']:10.1f}"
            print(f"{row} | {stages}   {kind}")
        del emb, labels, outliers


if __name__ == "__main__":
    main()
