"""Seconds per epoch of each strategy on the CPU, beside umap-learn's seeded (single-threaded) layout.

    python bench/cpu_layout.py [--dataset mixture] [--n-samples 100000] [--epochs 30]

Same graph, same epochs (the first --epochs of the schedule, so the same edges are due), measured in one run,
after a warm-up that compiles every kernel. Ratios are what count here; absolute times only on quiet machines.
"""

from __future__ import annotations

import argparse
import platform
import time

import numba
import numpy as np
from tqdm import tqdm

import umapviz
from umapviz.optimize import STRATEGIES, LayoutOptimizer, resolve_n_chunks


def time_ours(graph, strategy: str, epochs: int, threads: int) -> float:
    numba.set_num_threads(threads)
    opt = LayoutOptimizer(graph, strategy=strategy, n_chunks="auto", random_state=0, init="random")
    start = time.perf_counter()
    opt.step(epochs)
    return (time.perf_counter() - start) / epochs


def time_umap_learn(graph, epochs: int) -> float:
    from umap.layouts import optimize_layout_euclidean  # noqa: PLC0415 - optional: umap-learn, bench only

    def layout(n_epochs: int) -> None:
        Y = np.random.default_rng(0).uniform(-10, 10, (graph.n_vertices, 2)).astype(np.float32)
        optimize_layout_euclidean(
            Y,
            Y,
            graph.head,
            graph.tail,
            n_epochs,
            graph.n_vertices,
            graph.epochs_per_sample,
            graph.a,
            graph.b,
            np.array([1, 2, 3], np.int64),
            move_other=True,
            parallel=False,
        )

    layout(2)  # compile
    start = time.perf_counter()
    layout(epochs)
    return (time.perf_counter() - start) / epochs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default="mixture")
    p.add_argument("--n-samples", type=int, default=100_000)
    p.add_argument("--epochs", type=int, default=30)
    args = p.parse_args()

    X, _ = umapviz.datasets.load(args.dataset, n_samples=args.n_samples, random_state=0)
    graph = umapviz.build_graph(X, random_state=0)
    threads = numba.config.NUMBA_NUM_THREADS
    print(f"{platform.node()} {platform.processor() or platform.machine()}, {threads} threads; {graph}")
    for s in STRATEGIES:  # warm-up: compile every kernel outside the timings
        LayoutOptimizer(graph, strategy=s, n_chunks=2, random_state=0, init="random", n_epochs=3).run()

    ref = time_umap_learn(graph, args.epochs)
    rows = [("umap-learn seeded (1 thread)", "-", 1, ref)]
    auto_chunks = resolve_n_chunks("auto", graph)
    for s in tqdm(STRATEGIES, desc="strategies"):
        for th in sorted({1, threads}):
            rows.append((s, auto_chunks if s == "chunked" else "-", th, time_ours(graph, s, args.epochs, th)))
    print(f"\n{'strategy':30s} {'n_chunks':>8s} {'threads':>7s} {'ms/epoch':>9s} {'vs umap-learn':>13s}")
    for name, chunks, th, sec in rows:
        print(f"{name:30s} {chunks!s:>8s} {th:7d} {sec * 1e3:9.1f} {ref / sec:12.2f}x")


if __name__ == "__main__":
    main()
