"""The interactive plot's own paths, end to end, as the browser's events drive them.

    nice -n 10 python bench/plot_bench.py                  # CPU: 1M points
    python bench/plot_bench.py --device gpu --points 1e7   # GPU (CuPy embedding, kept on the device)

A ``umapviz.widgets.plot.Plot`` is built with its ipywidget (the bokeh document and jupyter_bokeh's change
handler, which serializes every change as it would for the browser), and its HoloViews streams are fired from
Python. What is timed (median, best and 95th percentile over --repeats events after one warm-up):

(a) zoom/pan: a ``RangeXY`` event, a range a quarter of the layout wide panned a little each time, until
    the new image is in the bokeh document and serialized: aggregate, shade, marks, HoloViews update, send.
    Target: <= 100 ms at 1M points on the CPU, <= 30 ms at 10M on the GPU.
(b) hover: a ``PointerXY`` event until the text naming the nearest point is in the document (the look-up is
    ``umapviz.probe.nearest_point``). Target: <= 20 ms at 1M points on the CPU.
(c) push: a new frame pushed while zoomed (the same path as (a), started by the optimizer's thread).

The points: 10 labelled Gaussian clusters made in the run, 0.01% flagged as outliers; a selection of 1,000
points is drawn in every frame. Prints a markdown table (date, machine, command) for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import statistics
import sys
import time

import numpy as np

from umapviz._backend import cupy, resolve_device
from umapviz.widgets.plot import Plot


def mixture(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(embedding (n, 2) float32, labels int32, outlier mask): 10 unit clusters on a circle of radius 8."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n).astype(np.int32)
    angle = labels * (2 * np.pi / 10)
    centres = 8.0 * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    embedding = (centres + rng.normal(size=(n, 2))).astype(np.float32)
    outliers = rng.random(n) < 1e-4
    return embedding, labels, outliers


def timed(call, repeats: int) -> dict[str, float]:
    """Milliseconds per call of ``call(i)``: median, best, 95th percentile (after one warm-up call)."""
    call(-1)
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        call(i)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return {"median": statistics.median(times), "best": times[0], "p95": times[int(0.95 * (len(times) - 1))]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=float, default=1e6)
    parser.add_argument("--size", type=int, default=600, help="the plot's width and height in pixels")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    args = parser.parse_args()
    n = int(args.points)
    device = resolve_device(args.device)
    embedding, labels, outliers = mixture(n)
    if device == "gpu":
        cp = cupy()
        embedding, labels, outliers = cp.asarray(embedding), cp.asarray(labels), cp.asarray(outliers)

    plot = Plot(args.size, args.size, view="robust")
    plot.widget  # noqa: B018 - builds the bokeh document and the jupyter_bokeh widget that sends its changes
    selection = np.arange(0, n, max(1, n // 1000))
    plot.push(embedding, labels=labels, outliers=outliers, caption="bench", selection=selection)
    plot.frame()

    def zoom(i: int) -> None:  # a range 6 wide over the densest cluster, panned a little further each time
        shift = 0.01 * (i + 1)
        plot.range_stream.event(x_range=(2.0 + shift, 8.0 + shift), y_range=(-3.0 + shift, 3.0 + shift))

    def hover(i: int) -> None:
        plot.pointer_stream.event(x=7.5 + 0.001 * i, y=0.2)  # in the densest cluster

    def push(i: int) -> None:
        plot.push(embedding, labels=labels, outliers=outliers, caption=f"epoch {i}")

    results = {"zoom/pan re-render": timed(zoom, args.repeats), "hover": timed(hover, args.repeats * 5)}
    results["push while zoomed"] = timed(push, args.repeats)
    # The events took the paths timed: the last pan drawn, a point named by the last hover.
    assert plot.last_aggregate.view.x_range == (2.0 + 0.01 * args.repeats, 8.0 + 0.01 * args.repeats)
    assert plot.hovered is not None

    load = os.getloadavg()[0]
    command = "python bench/plot_bench.py " + shlex.join(sys.argv[1:])
    lines = [
        f"\n## {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {device}, {n:,} points, "
        f"{args.size}x{args.size} px",
        f"`{command}` on {platform.node()} ({os.cpu_count()} CPUs, 1-min load {load:.1f})\n",
        "| path | median ms | best ms | p95 ms |",
        "|---|---|---|---|",
    ]
    for name, t in results.items():
        lines.append(f"| {name} | {t['median']:.1f} | {t['best']:.1f} | {t['p95']:.1f} |")
    print("\n".join(lines))  # the table for bench/RESULTS.md, where it replaces the last run's


if __name__ == "__main__":
    main()
