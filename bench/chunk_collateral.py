"""Are the low-degree vertices that one chunk flings collateral of flung hubs? (bench/CHUNK_STUDY.md)

Reruns chunked runs of the study and, for each flung vertex of degree <= --low-degree, asks whether a graph
neighbour of it is a flung hub, and compares how far the two groups lie from the centre. Needs the reference
layouts that bench/chunk_study.py saved for the same cases:

    .venv/bin/python bench/chunk_collateral.py gaussian:100000:1:1 gaussian:100000:2:1 --refs /tmp/chunk_refs_cpu

Each case is data:n:seed:n_chunks. Prints one line per case.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from chunk_study import initial_layout, load_array, run_key  # noqa: E402 - a sibling script

from umapviz import datasets, metrics  # noqa: E402
from umapviz.graph import build_graph  # noqa: E402
from umapviz.optimize import LayoutOptimizer  # noqa: E402


def collateral(case: str, refs: Path, init: str, low_degree: int) -> str:
    name, n, seed, n_chunks = case.split(":")
    n, seed, n_chunks = int(n), int(seed), int(n_chunks)
    X, _ = datasets.load(name, n_samples=n, random_state=seed)
    graph = build_graph(X, random_state=seed, progress=False)
    ref_path = refs / (run_key(name, n, seed, init, "cpu", "sequential", 15).replace("|", "_") + ".npy")
    reference = load_array(ref_path, (graph.n_vertices, 2))
    if reference is None:
        raise SystemExit(f"no reference layout at {ref_path}: run bench/chunk_study.py for {name} n={n} first")
    Y = LayoutOptimizer(graph, strategy="chunked", n_chunks=n_chunks, random_state=seed,
                        init=initial_layout(graph, init, seed)).run().embedding
    out = np.flatnonzero(metrics.outliers(Y, method="bounds", reference=reference))
    degree = graph.degree
    low, hubs = out[degree[out] <= low_degree], out[degree[out] > low_degree]
    flung_hub = np.zeros(graph.n_vertices, dtype=bool)
    flung_hub[hubs] = True
    head, tail = np.asarray(graph.head), np.asarray(graph.tail)
    # a low vertex is collateral when an edge joins it to a flung hub (either direction)
    touches = np.zeros(graph.n_vertices, dtype=bool)
    touches[head[flung_hub[tail]]] = True
    touches[tail[flung_hub[head]]] = True
    radius = np.linalg.norm(Y - np.median(Y, axis=0), axis=1)
    extent = np.linalg.norm(reference - np.median(reference, axis=0), axis=1).max()
    low_r, hub_r = (f"{np.median(radius[v]):.1f}" if v.size else "-" for v in (low, hubs))
    return (f"{case}: {out.size} flung, {hubs.size} of degree > {low_degree}, {low.size} of degree <= {low_degree}, "
            f"{int(touches[low].sum())} of those next to a flung hub; median distance from the centre: "
            f"low {low_r}, hubs {hub_r} (the reference's extent {extent:.1f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+", help="data:n:seed:n_chunks")
    parser.add_argument("--refs", default="bench/out/chunk_study_refs")
    parser.add_argument("--init", default="spectral")
    parser.add_argument("--low-degree", type=int, default=15, help="largest degree counted as low")
    args = parser.parse_args()
    for case in args.cases:
        print(collateral(case, Path(args.refs), args.init, args.low_degree), flush=True)


if __name__ == "__main__":
    main()
