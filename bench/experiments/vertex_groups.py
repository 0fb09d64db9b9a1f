"""Does the vertex strategy's wide group (128 items for its busiest vertices) fling points? A CPU check.

The owner-computes strategy moves a vertex's row once per group of its active edges, each group computed from
the row as it stood at the group's start (docs/optimizer.md). Groups of 32, except for vertices with more
than ``VERTEX_WIDE_ITEMS`` edges (as head and tail), which take 128 at a time so that their chain of groups
does not bound the GPU epoch. Stale sums of many updates are what flings hubs (bench/CHUNK_STUDY.md), so
this runs, from one spectral init per graph: sequential (the reference), vertex with every group 32 wide
(the rule before), vertex with the current rule, and vertex with 128-wide groups for every vertex above 64
edges (a stress test of the same semantics), and counts the outliers of each against the reference.

    .venv/bin/python bench/experiments/vertex_groups.py --cells gaussian:50000 mixture:50000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from tqdm.auto import tqdm

from umapviz import LayoutOptimizer, datasets, metrics
from umapviz.graph import build_graph
from umapviz.graph.start import spectral_init
from umapviz.optimize import vertex_index

RULES = {"all 32": 10**12, "current": vertex_index.VERTEX_WIDE_ITEMS, "128 above 64": 64}


def run(graph, init: np.ndarray, strategy: str, seed: int) -> tuple[np.ndarray, float]:
    opt = LayoutOptimizer(graph, strategy=strategy, random_state=seed, init=init, device="cpu")
    start = time.perf_counter()
    for _ in tqdm(opt.epochs(), total=opt.n_epochs, desc=strategy, leave=False):
        pass
    return opt.embedding, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", nargs="+", default=["gaussian:50000"], help="dataset:n_samples")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print("| graph | max edges (head + tail) | wide vertices | run | bounds | neighbors | radius | s |")
    print("|---|---|---|---|---|---|---|---|")
    for cell in args.cells:
        name, n = cell.split(":")
        X, _ = datasets.load(name, n_samples=int(n), random_state=args.seed)
        graph = build_graph(X, n_neighbors=15, random_state=args.seed, progress=False)
        items = np.bincount(np.concatenate([graph.head, graph.tail]), minlength=graph.n_vertices)  # edges as head, tail
        init = spectral_init(graph, 2, args.seed)
        reference, seconds = run(graph, init, "sequential", args.seed)
        label = f"{name} {int(n):,}"
        print(f"| {label} | {items.max():,} | | sequential | 0 | | | {seconds:.0f} |", flush=True)
        saved = vertex_index.VERTEX_WIDE_ITEMS
        try:
            for rule, wide_items in RULES.items():
                vertex_index.VERTEX_WIDE_ITEMS = wide_items
                Y, seconds = run(graph, init, "vertex", args.seed)
                s = metrics.outlier_summary(Y, graph, reference=reference)
                print(
                    f"| {label} | {items.max():,} | {int((items > wide_items).sum()):,} | vertex, {rule} | "
                    f"{s['bounds']} | {s['neighbors']} | {s['radius']} | {seconds:.0f} |",
                    flush=True,
                )
        finally:
            vertex_index.VERTEX_WIDE_ITEMS = saved


if __name__ == "__main__":
    main()
