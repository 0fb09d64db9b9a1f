"""Which vertices does a chunked run fling? The degree of each bounds outlier and its rank among all degrees.

Uses the reference layouts that bench/chunk_study.py saved (run the study first for the same cases):

    .venv/bin/python bench/experiments/chunk_flung.py mixture:20000:1:1 gaussian:50000:2:2
    .venv/bin/python bench/experiments/chunk_flung.py gaussian:100000:1:1 --collateral 15

Each case is data:n:seed:n_chunks. Prints one line per case. With --collateral D, a second line tells the
flung vertices of degree <= D apart from the others (the hubs): how many of them are joined by an edge to a
flung hub, and how far each group lies from the centre against the reference's extent.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/: the benchmarks shared here
from chunk_study import initial_layout, load_array, run_key

from umapviz import datasets, metrics
from umapviz.graph import build_graph
from umapviz.optimize import LayoutOptimizer


def flung(case: str, refs: Path, init: str, collateral: int | None = None) -> str:
    name, n, seed, n_chunks = case.split(":")
    n, seed, n_chunks = int(n), int(seed), int(n_chunks)
    X, _ = datasets.load(name, n_samples=n, random_state=seed)
    graph = build_graph(X, random_state=seed, progress=False)
    ref_path = refs / (run_key(name, n, seed, init, "cpu", "sequential", 15).replace("|", "_") + ".npy")
    reference = load_array(ref_path, (graph.n_vertices, 2))
    if reference is None:
        raise SystemExit(f"no reference layout at {ref_path}: run bench/chunk_study.py for {name} n={n} first")
    opt = LayoutOptimizer(
        graph, strategy="chunked", n_chunks=n_chunks, random_state=seed, init=initial_layout(graph, init, seed)
    )
    Y = opt.run().embedding
    out = np.flatnonzero(metrics.outliers(Y, method="bounds", reference=reference))
    degree = graph.degree
    rank = [int((degree > degree[v]).sum()) for v in out]
    line = (
        f"{case}: max degree {degree.max()}, p99 {np.percentile(degree, 99):.0f}; {out.size} flung, "
        f"degrees {degree[out].tolist()}, rank among degrees (0 = busiest) {rank}, "
        f"edges per chunk {[round(int(d) / n_chunks) for d in degree[out]]}"
    )
    if collateral is not None:
        line += "\n" + collateral_line(case, graph, Y, reference, out, collateral)
    return line


def collateral_line(case: str, graph, Y: np.ndarray, reference: np.ndarray, out: np.ndarray, low_degree: int) -> str:
    """Are the low-degree flung vertices collateral of flung hubs? How many share an edge with one, and how far
    each group lies from the centre."""
    degree = graph.degree
    low, hubs = out[degree[out] <= low_degree], out[degree[out] > low_degree]
    flung_hub = np.zeros(graph.n_vertices, dtype=bool)
    flung_hub[hubs] = True
    head, tail = np.asarray(graph.head), np.asarray(graph.tail)
    touches = np.zeros(graph.n_vertices, dtype=bool)  # joined by an edge (either direction) to a flung hub
    touches[head[flung_hub[tail]]] = True
    touches[tail[flung_hub[head]]] = True
    radius = np.linalg.norm(Y - np.median(Y, axis=0), axis=1)
    extent = np.linalg.norm(reference - np.median(reference, axis=0), axis=1).max()
    low_r, hub_r = (f"{np.median(radius[v]):.1f}" if v.size else "-" for v in (low, hubs))
    return (
        f"{case}: {hubs.size} flung of degree > {low_degree}, {low.size} of degree <= {low_degree}, "
        f"{int(touches[low].sum())} of those next to a flung hub; median distance from the centre: "
        f"low {low_r}, hubs {hub_r} (the reference's extent {extent:.1f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+", help="data:n:seed:n_chunks")
    parser.add_argument("--refs", default="bench/out/chunk_study_refs")
    parser.add_argument("--init", default="spectral")
    parser.add_argument("--collateral", type=int, metavar="D", help="also split the flung at degree D")
    args = parser.parse_args()
    np.seterr(all="ignore")
    for case in args.cases:
        print(flung(case, Path(args.refs), args.init, args.collateral), flush=True)


if __name__ == "__main__":
    main()
