"""Which dataset makes the buffered strategy fling points, reliably, and chunked pull them back?

For each candidate dataset and seed: build the graph, lay it out with sequential, buffered and chunked
(n_chunks 4 and 16 by default) from the spectral init for the graph's default epochs, and count outliers
(bounds against the sequential run of the same seed, neighbour gaps, robust radius), the farthest point,
trustworthiness and seconds. Prints a Markdown table; with --jsonl, appends one JSON record per run.

    .venv/bin/python bench/experiments/outlier_datasets.py --datasets mixture gaussian --n 20000 --seeds 0 1 2

Graphs are cached (data/cache/ by default), so a second pass over the same data skips the kNN.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from datetime import datetime, timezone

import numpy as np

from umapviz import datasets, metrics
from umapviz.graph import build_graph
from umapviz.optimize import LayoutOptimizer

RUNS = {  # label -> (strategy, n_chunks)
    "sequential": ("sequential", "auto"),
    "buffered": ("buffered", 1),
    "chunked-2": ("chunked", 2),
    "chunked-4": ("chunked", 4),
    "chunked-16": ("chunked", 16),
    "chunked-auto": ("chunked", "auto"),
    "chunked-degree": ("chunked", "degree"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["mixture", "gaussian", "text_like", "blobs"])
    parser.add_argument("--n", type=int, nargs="+", default=[20_000], help="points per dataset")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--runs", nargs="+", default=["sequential", "buffered", "chunked-4", "chunked-16"])
    parser.add_argument("--init", default="spectral")
    parser.add_argument("--trust-sample", type=int, default=1000, help="query points for trustworthiness")
    parser.add_argument("--jsonl", default=None, help="append one JSON record per run to this file")
    args = parser.parse_args()
    if args.runs[0] != "sequential":
        raise SystemExit("--runs must start with 'sequential': it is the reference for the bounds measure.")

    print(f"# {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node()}, {platform.processor() or '?'}")
    print(
        "| data | n | seed | max deg | graph s | run | chunks | bounds | neighbors | radius | max r | "
        "median r | T(5) | layout s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.datasets:
        for n in args.n:
            for seed in args.seeds:
                study(name, n, seed, args)


def study(name: str, n: int, seed: int, args) -> None:
    X, _ = datasets.load(name, n_samples=n, random_state=seed)
    start = time.perf_counter()
    graph = build_graph(X, random_state=seed, progress=False)
    graph_s = time.perf_counter() - start
    reference = None
    for label in args.runs:
        strategy, n_chunks = RUNS[label]
        opt = LayoutOptimizer(graph, strategy=strategy, n_chunks=n_chunks, random_state=seed, init=args.init)
        start = time.perf_counter()
        opt.run()
        layout_s = time.perf_counter() - start
        Y = opt.embedding
        if reference is None:
            reference = Y
        s = metrics.outlier_summary(Y, graph, reference=reference)
        trust = metrics.trustworthiness(X, Y, n_neighbors=5, sample=args.trust_sample, random_state=seed)
        chunks = opt.n_chunks if strategy != "sequential" else "-"
        print(
            f"| {name} | {n} | {seed} | {graph.max_degree} | {graph_s:.1f} | {label} | {chunks} | "
            f"{s['bounds']} | {s['neighbors']} | {s['radius']} | {s['max_radius']:.1f} | "
            f"{s['median_radius']:.1f} | {trust:.4f} | {layout_s:.1f} |",
            flush=True,
        )
        if args.jsonl:
            record = dict(
                data=name,
                n=n,
                seed=seed,
                init=args.init,
                max_degree=graph.max_degree,
                nnz=graph.nnz,
                n_epochs=opt.n_epochs,
                graph_seconds=graph_s,
                run=label,
                strategy=strategy,
                n_chunks=int(opt.n_chunks),
                layout_seconds=layout_s,
                trustworthiness=trust,
                fingerprint=metrics.fingerprint(Y),
                **s,
            )
            with open(args.jsonl, "a") as fh:
                fh.write(json.dumps(record, default=float) + "\n")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
