"""Which vertices does a chunked run fling? The degree of each bounds outlier and its rank among all degrees.

Uses the reference layouts that bench/chunk_study.py saved (run the study first for the same cases):

    .venv/bin/python bench/chunk_flung.py mixture:20000:1:1 gaussian:50000:2:2

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


def flung(case: str, refs: Path, init: str) -> str:
    name, n, seed, n_chunks = case.split(":")
    n, seed, n_chunks = int(n), int(seed), int(n_chunks)
    X, _ = datasets.load(name, n_samples=n, random_state=seed)
    graph = build_graph(X, random_state=seed, progress=False)
    ref_path = refs / (run_key(name, n, seed, init, "cpu", "sequential", 15).replace("|", "_") + ".npy")
    reference = load_array(ref_path, (graph.n_vertices, 2))
    if reference is None:
        raise SystemExit(f"no reference layout at {ref_path}: run bench/chunk_study.py for {name} n={n} first")
    opt = LayoutOptimizer(graph, strategy="chunked", n_chunks=n_chunks, random_state=seed,
                          init=initial_layout(graph, init, seed))
    out = np.flatnonzero(metrics.outliers(opt.run().embedding, method="bounds", reference=reference))
    degree = graph.degree
    rank = [int((degree > degree[v]).sum()) for v in out]
    return (f"{case}: max degree {degree.max()}, p99 {np.percentile(degree, 99):.0f}; {out.size} flung, "
            f"degrees {degree[out].tolist()}, rank among degrees (0 = busiest) {rank}, "
            f"edges per chunk {[round(int(d) / n_chunks) for d in degree[out]]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+", help="data:n:seed:n_chunks")
    parser.add_argument("--refs", default="bench/out/chunk_study_refs")
    parser.add_argument("--init", default="spectral")
    args = parser.parse_args()
    np.seterr(all="ignore")
    for case in args.cases:
        print(flung(case, Path(args.refs), args.init), flush=True)


if __name__ == "__main__":
    main()
