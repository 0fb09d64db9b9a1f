"""Explore targets: zoom/pan re-render, hover lookup and point inspection, at millions of points.

    python bench/explore_bench.py                        # CPU: 1M points
    python bench/explore_bench.py --device gpu           # GPU: re-render and hover at 10M points
    python bench/explore_bench.py --points 2e6 --repeats 20 --size 800

What is timed (median over --repeats calls after one warm-up call, plus the best and the 95th percentile):

(a) re-render of a zoomed view, as a zoom or pan asks for it: ``umapviz.render.render`` with a fixed View (the
    aggregate over every point and the shading; on the GPU the finished image's copy to the host), then the
    encoding for the browser: JPEG as the Explorer's live frames (``widgets.explorer.encode_frame``) and PNG
    (``umapviz.render.encode_png``, level 1). "shade" is ``shade`` timed again on the returned Aggregate, and
    "aggregate" is the rest of ``render``. The zoomed view is a quarter of the layout's width and height around a
    dense cluster; the whole view is shown for comparison. Targets: <= 100 ms at 1M points on the CPU, <= 30 ms at
    10M on the GPU (re-render with the JPEG encode).
(b) hover: ``umapviz.probe.nearest_point`` at random cursor positions in the zoomed view. Target: <= 20 ms at
    1M points on the CPU.
(c) ``umapviz.probe.point_info`` of the busiest flung point, under buffered and chunked("auto"), on a kNN-like
    graph of --info-points points (each point tied to its 10 successors in an order that walks each cluster in
    strips, plus hubs of 3,000 down to 300 edges): the first call (it draws the seed's edge order), the
    following calls, and calls given the typical neighbour distance; and ``flung``.

The points are a mixture of 10 Gaussian clusters with labels, made in the run; 0.01% of them are flung 20x out
and flagged. No data set or graph build is needed. CuPy is imported only for --device gpu.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from tqdm import tqdm

from umapviz import probe
from umapviz._backend import cupy, resolve_device
from umapviz.graph import FuzzyGraph
from umapviz.render import View, encode_png, render, shade
from umapviz.widgets.explorer.panel import encode_frame

N_LABELS = 10
CLUSTER_RADIUS = 8.0  # cluster centres on a circle of this radius; each cluster a unit Gaussian
FLUNG_SHARE = 1e-4
KNN_SUCCESSORS = 10
HUB_DEGREES = (3000, 2000, 1000, 600, 300)


def mixture(n: int, xp, seed: int = 0):
    """(embedding float32 (n, 2), labels int32, flagged bool) on xp's device: 10 clusters, 0.01% flung 20x out."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, N_LABELS, n).astype(np.int32)
    angle = 2 * np.pi * np.arange(N_LABELS) / N_LABELS
    centres = np.stack([np.cos(angle), np.sin(angle)], axis=1) * CLUSTER_RADIUS
    embedding = (rng.standard_normal((n, 2), dtype=np.float32) + centres[labels]).astype(np.float32)
    flagged = np.zeros(n, bool)
    flagged[rng.choice(n, max(1, int(n * FLUNG_SHARE)), replace=False)] = True
    embedding[flagged] *= 20
    return xp.asarray(embedding), xp.asarray(labels), xp.asarray(flagged)


def knn_like_graph(embedding: np.ndarray, labels: np.ndarray, seed: int = 0) -> FuzzyGraph:
    """A symmetric graph shaped like a kNN graph: each point tied to its KNN_SUCCESSORS successors in an order
    that walks each cluster in strips of width 0.25 (so edges join nearby points), and hubs of HUB_DEGREES edges
    tied to random points of their own cluster. All weights 1 (every edge due every epoch)."""
    n = embedding.shape[0]
    strip = np.floor(embedding[:, 0] * 4).astype(np.int64)
    walk = np.lexsort((embedding[:, 1], strip, labels))
    heads, tails = [], []
    for step in range(1, KNN_SUCCESSORS + 1):
        heads.append(walk[:-step])
        tails.append(walk[step:])
    rng = np.random.default_rng(seed)
    for hub, degree in zip(walk[:: n // len(HUB_DEGREES)][: len(HUB_DEGREES)], HUB_DEGREES, strict=True):
        own = np.flatnonzero(labels == labels[hub])
        partners = rng.choice(own, min(degree, own.size), replace=False)
        partners = partners[partners != hub]
        heads.append(np.full(partners.size, hub))
        tails.append(partners)
    i, j = np.concatenate(heads).astype(np.int64), np.concatenate(tails).astype(np.int64)
    keys = np.unique(np.concatenate([i * n + j, j * n + i]))  # both directions, sorted by head then tail
    head, tail = (keys // n).astype(np.int32), (keys % n).astype(np.int32)
    return FuzzyGraph(
        head=head,
        tail=tail,
        weight=np.ones(head.size, np.float32),
        epochs_per_sample=np.ones(head.size),
        knn_indices=np.zeros((n, 1), np.int32),
        knn_dists=np.zeros((n, 1), np.float32),
        a=1.577,
        b=0.895,
        n_epochs=200,
    )


class Times(list):
    """Wall-clock seconds of the calls after the first, with the process's CPU seconds of each in ``cpu``."""

    cpu: list[float]


def timed(fn: Callable[[], object], repeats: int, sync: Callable[[], None]) -> tuple[float, Times]:
    """(first call's seconds, the following calls' seconds)."""
    wall, cpu = [], []
    for _ in range(repeats + 1):
        sync()
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        sync()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    times = Times(wall[1:])
    times.cpu = cpu[1:]
    return wall[0], times


def stats_ms(times: list[float]) -> str:
    """median | best | 95th percentile | median CPU time of the process (every thread; steadier on a shared
    machine than the wall clock, which waits for the other work there), in ms."""
    ms = sorted(1e3 * t for t in times)
    p95 = ms[min(len(ms) - 1, int(round(0.95 * (len(ms) - 1))))]
    cpu = getattr(times, "cpu", None)
    cpu_ms = f"{1e3 * statistics.median(cpu):.1f}" if cpu else ""
    return f"{statistics.median(ms):.1f} | {ms[0]:.1f} | {p95:.1f} | {cpu_ms}"


def machine(device: str) -> str:
    cpu = platform.processor() or platform.machine()
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())  # a shared machine's other work shows up here
    text = f"{platform.system()} {cpu}, {os.cpu_count()} cores, load average {load}"
    if device == "gpu":
        props = cupy().cuda.runtime.getDeviceProperties(0)
        text += f", GPU {props['name'].decode()}"
    return text


def commit() -> str:
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def whole_view() -> View:
    """The square holding every cluster (flung points fall outside, as in the Explorer's robust view)."""
    half = CLUSTER_RADIUS + 4
    return View((-half, half), (-half, half))


def zoomed_view() -> View:
    """A quarter of the whole view's width and height, centred on cluster 0 (a dense region)."""
    half = (CLUSTER_RADIUS + 4) / 4
    return View((CLUSTER_RADIUS - half, CLUSTER_RADIUS + half), (-half, half))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--points", type=float, default=None, help="points for (a) and (b); 1e6 CPU, 1e7 GPU")
    parser.add_argument("--info-points", type=float, default=1e6, help="points for (c), point_info (0: skip)")
    parser.add_argument("--size", type=int, default=480, help="frame width and height in pixels (Explorer: 480)")
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)
    try:
        device = resolve_device(args.device)
    except RuntimeError as exc:
        sys.exit(f"explore_bench: {exc}")
    xp = cupy() if device == "gpu" else np
    sync = (lambda: xp.cuda.Device().synchronize()) if device == "gpu" else (lambda: None)
    n = int(args.points or (1e7 if device == "gpu" else 1e6))
    size = args.size
    rows: list[tuple[str, str, str, str]] = []  # (what, points, first call ms, "median | best | p95")

    steps = 4 if args.info_points else 3
    with tqdm(total=steps, desc="explore bench", unit="step") as bar:
        emb, labels, flagged = mixture(n, xp)
        bar.update()

        # (a) zoom/pan re-render and encode.
        for name, view in (("zoomed", zoomed_view()), ("whole", whole_view())):
            frame = {}

            def draw(view=view, frame=frame):
                frame["rgba"], frame["agg"] = render(emb, labels, flagged, size, size, view)

            first, render_times = timed(draw, args.repeats, sync)
            _, shade_times = timed(lambda frame=frame: shade(frame["agg"]), args.repeats, sync)
            rgba = frame["rgba"]
            _, jpeg_times = timed(lambda rgba=rgba: encode_frame(rgba), args.repeats, sync)
            _, png_times = timed(lambda rgba=rgba: encode_png(rgba, compress_level=1), args.repeats, sync)
            jpeg_kb, png_kb = len(encode_frame(rgba)) / 1e3, len(encode_png(rgba)) / 1e3
            aggregate_times = Times(max(0.0, r - s) for r, s in zip(render_times, shade_times, strict=True))
            aggregate_times.cpu = [max(0.0, r - s) for r, s in zip(render_times.cpu, shade_times.cpu, strict=True)]
            total = Times(r + j for r, j in zip(render_times, jpeg_times, strict=True))
            total.cpu = [r + j for r, j in zip(render_times.cpu, jpeg_times.cpu, strict=True)]
            rows += [
                (f"(a) {name}: render + JPEG (the re-render)", f"{n:,}", f"{1e3 * first:.0f}", stats_ms(total)),
                (f"(a) {name}: render = aggregate + shade", f"{n:,}", "", stats_ms(render_times)),
                (f"(a) {name}: aggregate (render - shade)", f"{n:,}", "", stats_ms(aggregate_times)),
                (f"(a) {name}: shade", f"{n:,}", "", stats_ms(shade_times)),
                (f"(a) {name}: JPEG encode ({jpeg_kb:.0f} kB)", f"{size}x{size}", "", stats_ms(jpeg_times)),
                (f"(a) {name}: PNG encode ({png_kb:.0f} kB)", f"{size}x{size}", "", stats_ms(png_times)),
            ]
        bar.update()

        # (b) hover: the nearest point under random cursor positions in the zoomed view.
        view = zoomed_view()
        rng = np.random.default_rng(1)
        queries = zip(
            rng.uniform(*view.x_range, args.repeats + 1), rng.uniform(*view.y_range, args.repeats + 1), strict=True
        )
        first, hover_times = timed(lambda: probe.nearest_point(emb, *next(queries)), args.repeats, sync)
        rows.append(("(b) hover: nearest_point", f"{n:,}", f"{1e3 * first:.0f}", stats_ms(hover_times)))
        bar.update()

        # (c) point_info of the busiest flung point.
        if args.info_points:
            n_info = int(args.info_points)
            emb_info, labels_info, flagged_info = mixture(n_info, np, seed=2)
            graph = knn_like_graph(emb_info, labels_info)
            flagged_info[np.argmax(graph.degree)] = True  # the busiest vertex flung too, as a hub is
            emb_device = xp.asarray(emb_info)
            first, flung_times = timed(lambda: probe.flung(flagged_info, graph), args.repeats, sync)
            rows.append(("(c) flung", f"{n_info:,}", f"{1e3 * first:.0f}", stats_ms(flung_times)))
            busiest = int(probe.flung(flagged_info, graph)[0])
            typical = probe.typical_neighbor_distance(graph, emb_device)
            for strategy, n_chunks in (("buffered", 1), ("chunked", "auto")):
                info = {}

                def call(strategy=strategy, n_chunks=n_chunks, info=info, **kw):
                    info["info"] = probe.point_info(
                        graph,
                        emb_device,
                        busiest,
                        strategy=strategy,
                        n_chunks=n_chunks,
                        random_state=0,
                        labels=labels_info,
                        outlier_masks={"given": flagged_info},
                        **kw,
                    )

                first, times = timed(call, args.repeats, sync)
                _, given = timed(lambda call=call: call(typical_distance=typical), args.repeats, sync)
                p = info["info"]
                what = (
                    f"(c) point_info, {strategy} ({p.n_chunks} chunks): degree {p.degree:,} rank "
                    f"{p.degree_rank}, max {p.max_edges_in_one_chunk:,} in one chunk"
                )
                rows.append((what, f"{n_info:,} ({graph.nnz:,} edges)", f"{1e3 * first:.0f}", stats_ms(times)))
                rows.append((f"(c) point_info, {strategy}, typical distance given", f"{n_info:,}", "", stats_ms(given)))
            bar.update()

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0]), *sys.argv[1:]])
    print(
        f"\n**{now}**, commit `{commit()}`, {machine(device)}, device={device}, frame {size}x{size}, "
        f"{args.repeats} calls after one warm-up call  "
    )
    print(f"`{command}`\n")
    print("| what | points | first call (ms) | median \\| best \\| p95 \\| CPU (ms) |")
    print("|---|---:|---:|---:|")
    for what, points, first_ms, stat in rows:
        print(f"| {what} | {points} | {first_ms} | {stat.replace('|', chr(92) + '|')} |")


if __name__ == "__main__":
    main()
