"""The optimizer's set-up on the host at scale: the edge order and the CPU engine's gathers, against NumPy's.

    PYTHONPATH=$PWD python3 bench/experiments/setup_cost.py --sizes 1000000 --repeat 3

A synthetic graph per size (each vertex joined to its 13 nearest on a ring, both directions: 26 edges a vertex,
the kit's kNN graphs' density; random weights), so no kNN is needed. For each: ``rng.edge_order`` against NumPy's
shuffle of the same int32 range (``default_rng([seed, 2])``), and ``engine_cpu.gather_in_order`` against three
NumPy gathers, each best of ``--repeat`` after a warm-up, with the bytes compared (exit 1 if any differ); then
``LayoutOptimizer(graph, init=array)`` on the CPU, once. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from umapviz.graph._types import FuzzyGraph
from umapviz.optimize import LayoutOptimizer
from umapviz.optimize.engine_cpu import gather_in_order
from umapviz.optimize.rng import edge_order

NEIGHBOURS = 13  # on each side of the ring


def ring_graph(n: int) -> FuzzyGraph:
    """Each vertex joined to its NEIGHBOURS nearest on each side of a ring, sorted by head then tail."""
    offsets = np.concatenate([np.arange(-NEIGHBOURS, 0), np.arange(1, NEIGHBOURS + 1)])
    head = np.repeat(np.arange(n, dtype=np.int32), offsets.size)
    tail = ((head.reshape(n, -1) + offsets) % n).astype(np.int32)
    tail.sort(axis=1)
    weight = np.random.default_rng(0).uniform(0.1, 1.0, head.size).astype(np.float32)
    return FuzzyGraph(
        head,
        tail.ravel(),
        weight,
        (weight.max() / weight).astype(np.float64),
        np.zeros((n, 15), np.int32),
        np.zeros((n, 15), np.float32),
        1.577,
        0.895,
        200,
    )


def best(repeat: int, fn) -> tuple[float, object]:
    fn()
    seconds, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        seconds = min(seconds, time.perf_counter() - start)
    return seconds, out


def numpy_order(nnz: int) -> np.ndarray:
    order = np.arange(nnz, dtype=np.int32)
    np.random.default_rng([0, 2]).shuffle(order)
    return order


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000000")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    ok = True
    print(
        "| vertices | edges | edge order s | NumPy shuffle s | gathers s | NumPy gathers s | same bytes | "
        "LayoutOptimizer set-up s |"
    )
    print("|---|---|---|---|---|---|---|---|", flush=True)
    for n in (int(s) for s in args.sizes.split(",")):
        graph = ring_graph(n)
        ours_s, order = best(args.repeat, lambda g=graph: edge_order(0, g.nnz))
        numpy_s, reference = best(args.repeat, lambda g=graph: numpy_order(g.nnz))
        gather_s, gathered = best(
            args.repeat, lambda g=graph, o=order: gather_in_order(o, g.head, g.tail, g.epochs_per_sample)
        )
        numpy_gather_s, by_numpy = best(
            args.repeat, lambda g=graph, o=order: (g.head[o], g.tail[o], g.epochs_per_sample[o])
        )
        same = np.array_equal(order, reference) and all(
            np.array_equal(a, b) for a, b in zip(gathered, by_numpy, strict=True)
        )
        ok &= same
        start = time.perf_counter()
        LayoutOptimizer(graph, random_state=0, init=np.zeros((n, 2), np.float32))
        setup_s = time.perf_counter() - start
        print(
            f"| {n:,} | {graph.nnz:,} | {ours_s:.3f} | {numpy_s:.3f} | {gather_s:.3f} | {numpy_gather_s:.3f} | "
            f"{same} | {setup_s:.2f} |",
            flush=True,
        )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
