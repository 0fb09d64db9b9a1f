"""The cross-device table: layout fingerprints of each reproducible strategy on the CPU with 1 and 2 Numba threads
and on the GPU, from one graph and one start, for each size; every row should read the same three times.

    PYTHONPATH=$PWD python3 bench/parity_table.py [--sizes 20000,200000] [--epochs 100] [--dataset mixture]
        [--runs chunked:auto,vertex:1]

The graph is built on the CPU and the start is the CPU's spectral layout (the GPU solves its own, which is not
the same bytes), both handed to every run. The GPU column is left out where no GPU is usable; the GPU's
sequential strategy (one thread) is left out beyond 1,000,000 edges, where it would take minutes. Prints a
markdown table; the run fails (exit 1) if a row disagrees.
"""

from __future__ import annotations

import argparse
import sys

import numba

from umapviz import datasets
from umapviz._backend import gpu_available
from umapviz.graph import build_graph, spectral_init
from umapviz.metrics import fingerprint
from umapviz.optimize import LayoutOptimizer

RUNS = (("sequential", 1), ("buffered", 1), ("chunked", 4), ("chunked", "auto"), ("vertex", 1))
GPU_SEQUENTIAL_MAX_EDGES = 1_000_000


def fingerprints(graph, start, strategy, n_chunks, epochs, seed) -> dict:
    """Fingerprint of one run per column: cpu/1, cpu/2 (Numba threads) and gpu (where usable)."""
    out = {}
    kw = {"strategy": strategy, "n_chunks": n_chunks, "random_state": seed, "init": start}
    before = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            opt = LayoutOptimizer(graph, **kw)
            opt.step(epochs)
            out[f"cpu/{threads}"] = fingerprint(opt.embedding)
    finally:
        numba.set_num_threads(before)
    if gpu_available() and not (strategy == "sequential" and graph.nnz > GPU_SEQUENTIAL_MAX_EDGES):
        opt = LayoutOptimizer(graph, device="gpu", **kw)
        opt.step(epochs)
        out["gpu"] = fingerprint(opt.embedding)
    return out


def parse_run(text: str) -> tuple[str, int | str]:
    """``"chunked:auto"`` -> ("chunked", "auto"); ``"chunked:4"`` -> ("chunked", 4)."""
    strategy, _, n_chunks = text.strip().partition(":")
    return strategy, int(n_chunks) if n_chunks.isdigit() else (n_chunks or 1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="20000,200000")
    p.add_argument("--epochs", type=int, default=0, help="epochs per run (0: the graph's whole schedule)")
    p.add_argument("--dataset", default="mixture")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--runs",
        default=",".join(f"{s}:{c}" for s, c in RUNS),
        help="strategy:n_chunks pairs, comma-separated (default: every row)",
    )
    args = p.parse_args()
    runs = [parse_run(r) for r in args.runs.split(",") if r.strip()]
    if numba.config.NUMBA_NUM_THREADS < 2:
        sys.exit("needs 2 Numba threads: run with NUMBA_NUM_THREADS=2 (or more)")
    print("| graph | strategy | n_chunks | epochs | cpu, 1 thread | cpu, 2 threads | gpu | equal |")
    print("|---|---|---|---|---|---|---|---|")
    all_equal = True
    for n in [int(v) for v in args.sizes.split(",") if v.strip()]:
        X, _ = datasets.load(args.dataset, n_samples=n, random_state=args.seed)
        graph = build_graph(X, random_state=args.seed, progress=False)
        start = spectral_init(graph, 2, args.seed)
        epochs = args.epochs or graph.n_epochs
        for strategy, n_chunks in runs:
            fp = fingerprints(graph, start, strategy, n_chunks, epochs, args.seed)
            equal = len(set(fp.values())) == 1
            all_equal &= equal
            print(
                f"| {args.dataset} {n:,} ({graph.nnz:,} edges) | {strategy} | {n_chunks} | {epochs} | "
                f"{fp['cpu/1']} | {fp['cpu/2']} | {fp.get('gpu', '-')} | {equal} |",
                flush=True,
            )
    sys.exit(0 if all_equal else 1)


if __name__ == "__main__":
    main()
