"""What are the points that the neighbours test flags in chunked runs of one of the chunk study's graphs?

For one graph (data:n:seed, built and laid out as bench/chunk_study.py does: spectral init on the CPU, the
layouts on the study's device) and a few n_chunks, prints per run the flagged points with their degree, their
rank among all degrees (0 = busiest), and how far each lies from its nearest graph neighbour, as a multiple of
the median such distance (the test flags above metrics.NEIGHBOR_FACTOR); then, for every point flagged in any
run, that multiple in each run, so a point flagged once can be told from one that sits near the line every time.

    python3 bench/experiments/chunk_point.py mixture_gpu:2000000:2 --n-chunks 256,512,1024 --device gpu
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/: the benchmarks shared here
from chunk_study import cache_edge_order, initial_layout, layout, load_graph, parse_cell

from umapviz import metrics
from umapviz._backend import to_host


def gap_ratio(Y: np.ndarray, graph) -> np.ndarray:
    """Each point's distance to its nearest graph neighbour over the median of that distance (positive
    distances), as the neighbours test measures it."""
    d = metrics.neighbor_distances(Y, graph)
    return d / np.median(d[np.isfinite(d) & (d > 0)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cell", type=parse_cell, help="data:n:seed, e.g. mixture_gpu:2000000:2")
    parser.add_argument("--n-chunks", default="256,512,1024", help="comma-separated n_chunks to run")
    parser.add_argument("--device", default="gpu")
    args = parser.parse_args()
    name, n, seed = args.cell
    cache_edge_order()
    graph, _, _ = load_graph(name, n, seed, args.device, 15)
    degree = graph.degree
    print(f"{name} n={n:,} seed={seed}: {graph}; graph fingerprint {graph.fingerprint}", flush=True)
    init = initial_layout(graph, "spectral", seed)
    ratios = {}
    for k in (int(v) for v in args.n_chunks.split(",")):
        Y, _ = layout(graph, "chunked", k, seed, init, args.device)
        Y = to_host(Y)
        flagged = np.flatnonzero(metrics.outliers(Y, graph, method="neighbors"))
        ratios[k] = gap_ratio(Y, graph)
        rows = [
            f"#{v} degree {degree[v]} rank {int((degree > degree[v]).sum())} gap x{ratios[k][v]:.1f}" for v in flagged
        ]
        summary = metrics.outlier_summary(Y, graph)  # its radii identify the layout (the study's records keep them)
        print(
            f"n_chunks={k}: max_radius {summary['max_radius']!r}, median_radius {summary['median_radius']!r}, "
            f"largest gap x{np.nanmax(ratios[k][np.isfinite(ratios[k])]):.1f}; {flagged.size} flagged"
            + (": " + "; ".join(rows) if rows else ""),
            flush=True,
        )
    every = sorted({int(v) for r in ratios.values() for v in np.flatnonzero(r > metrics.NEIGHBOR_FACTOR)})
    for v in every:
        print(f"#{v} (degree {degree[v]}): gap " + ", ".join(f"x{ratios[k][v]:.1f} at {k}" for k in ratios))


if __name__ == "__main__":
    main()
