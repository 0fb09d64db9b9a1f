"""The sampled spectral start against the full one on the CPU: time, trustworthiness, outliers.

    PYTHONPATH=$PWD python3 bench/experiments/sampled_quality.py --n 200000 --epochs 50

On the ``clusters`` graph at ``--n`` points (bench/spectral_cost.py's, cached under UMAPVIZ_CACHE_DIR): the full
start and the sampled start with its default parameters and variants (rows per landmark, lazy-walk steps), each
timed once after a warm-up call (which compiles the Numba kernels); the trustworthiness of each start (5,000-point
sample), then after ``--epochs`` epochs of chunked("auto") from it, and that layout's neighbour outliers. Prints a
markdown table.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: spectral_cost's graph

from spectral_cost import clusters_graph

from umapviz import datasets
from umapviz.graph import spectral_init
from umapviz.graph import start as init_mod
from umapviz.graph.start import spectral_sampled
from umapviz.metrics import outlier_summary, trustworthiness
from umapviz.optimize import LayoutOptimizer

VARIANTS = [
    ("full", None, None),
    ("sampled (default)", spectral_sampled.ROWS_PER_LANDMARK, spectral_sampled.SMOOTHING_STEPS),
    ("sampled, 0 steps", 64, 0),
    ("sampled, 2 steps", 64, 2),
    ("sampled, 32 steps", 64, 32),
    ("sampled, 32 rows per landmark", 32, 8),
    ("sampled, 256 rows per landmark", 256, 8),
]


def start_of(graph, rows: int | None, steps: int | None) -> tuple[np.ndarray, float]:
    """The start (full where ``rows`` is None) and its seconds, after a warm-up call."""
    if rows is None:
        spectral_init(graph, 2, 0, method="full")
        t0 = time.perf_counter()
        return spectral_init(graph, 2, 0, method="full"), time.perf_counter() - t0
    solve = init_mod.sampled_eigenpairs
    init_mod.sampled_eigenpairs = functools.partial(solve, rows_per_landmark=rows, smoothing_steps=steps)
    try:
        spectral_init(graph, 2, 0, method="sampled")
        t0 = time.perf_counter()
        return spectral_init(graph, 2, 0, method="sampled"), time.perf_counter() - t0
    finally:
        init_mod.sampled_eigenpairs = solve


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=200_000)
    p.add_argument("--epochs", type=int, default=50)
    p.add_argument("--only", default="", help="comma-separated row labels to run (default: all)")
    args = p.parse_args()
    graph = clusters_graph(args.n, "cpu")
    X, _ = datasets.load("clusters", n_samples=args.n, random_state=0)
    print(f"clusters, {args.n:,} points, {graph.nnz:,} edges")
    print(f"\n| start | seconds | trustworthiness of the start | after {args.epochs} epochs | neighbour outliers |")
    print("|---|---|---|---|---|", flush=True)
    wanted = {s.strip() for s in args.only.split(",") if s.strip()}
    for label, rows, steps in VARIANTS:
        if wanted and label not in wanted:
            continue
        start, seconds = start_of(graph, rows, steps)
        opt = LayoutOptimizer(graph, strategy="chunked", n_chunks="auto", random_state=0, init=start)
        opt.step(args.epochs)
        final = opt.embedding
        t0 = trustworthiness(X, start, sample=5000, random_state=0)
        t1 = trustworthiness(X, final, sample=5000, random_state=0)
        print(
            f"| {label} | {seconds:.2f} | {t0:.4f} | {t1:.4f} | {outlier_summary(final, graph)['neighbors']} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
