"""Which strategy should ``UMAP()`` use by default? The cheapest one that is bitwise reproducible on every device and
flings nothing: each reproducible strategy on the kit's outlier datasets, from one start, against the sequential
layout (the reference), counted after every epoch as the demo counts, with seconds per epoch side by side.

    .venv/bin/python bench/default_strategy.py                     # clusters 20k, gaussian 20k, mixture 20k
    .venv/bin/python bench/default_strategy.py --datasets gaussian --n-samples 50000 --n-epochs 100

Prints one table per dataset (markdown); bench/RESULTS.md "Default strategy" holds the current one.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from tqdm.auto import tqdm

from umapviz import LayoutOptimizer, datasets, metrics
from umapviz.cli.steps import PeakOutliers
from umapviz.graph import build_graph
from umapviz.graph.start import spectral_init

RUNS = (("sequential", 1), ("hogwild", 1), ("buffered", 1), ("chunked", "auto"), ("vertex", 1))


def table(name: str, n: int, n_epochs: int, seed: int) -> str:
    X, _ = datasets.load(name, n_samples=n)
    graph = build_graph(X, n_neighbors=15, n_epochs=n_epochs, random_state=seed)
    start = spectral_init(graph, dim=2, seed=seed)
    rows, reference, seconds = [], None, {}
    for strategy, n_chunks in tqdm(RUNS, desc=name):
        opt = LayoutOptimizer(
            graph, strategy=strategy, n_chunks=n_chunks, init=start.copy(), random_state=seed, device="cpu"
        )
        peak = PeakOutliers(graph)
        began = time.perf_counter()
        opt.run(peak)
        per_epoch = (time.perf_counter() - began - peak.seconds) / n_epochs
        emb = opt.embedding
        reference = emb if reference is None else reference
        seconds[strategy] = per_epoch
        bounds = int(metrics.outliers(emb, method="bounds", reference=reference).sum())
        neighbors = int(metrics.outliers(emb, graph, method="neighbors").sum())
        trust = metrics.trustworthiness(X, emb, n_neighbors=5, random_state=0)
        chunks = f"{opt.n_chunks} (auto)" if strategy == "chunked" else "-"
        peak_text = f"{peak.count} @ {peak.epoch}" if peak.count else "0"
        rows.append((strategy, chunks, bounds, neighbors, peak_text, trust, per_epoch))
    lines = [
        f"**{name}**, {n:,} points, {graph.nnz:,} edges, max degree {graph.max_degree:,}, {n_epochs} epochs",
        "",
        "| strategy | n_chunks | final outliers (bounds / neighbors) | peak outliers(neighbors) @ epoch | trust "
        "| ms/epoch | x hogwild |",
        "|---|---|---|---|---|---|---|",
    ]
    for strategy, chunks, bounds, neighbors, peak, trust, per_epoch in rows:
        ratio = per_epoch / seconds["hogwild"]
        cells = (
            strategy,
            chunks,
            f"{bounds} / {neighbors}",
            peak,
            f"{trust:.4f}",
            f"{1e3 * per_epoch:.1f}",
            f"{ratio:.2f}",
        )
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="clusters,gaussian,mixture", help="comma-separated dataset names")
    parser.add_argument("--n-samples", type=int, default=20_000)
    parser.add_argument("--n-epochs", type=int, default=200)
    parser.add_argument("--random-state", type=int, default=0)
    args = parser.parse_args()
    for name in args.datasets.split(","):
        print(table(name, args.n_samples, args.n_epochs, args.random_state), end="\n\n", flush=True)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
