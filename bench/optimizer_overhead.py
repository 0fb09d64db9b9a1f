"""What LayoutOptimizer's per-epoch bookkeeping costs on the GPU, against the engine's bare epoch loop.

``LayoutOptimizer.step`` reads each epoch's active count back and checks that the layout is still finite (one
reduction over the embedding); ``bench/gpu_bench.py`` times the engine's ``launch_epoch`` loop, which does
neither. Side by side in one run, on the GPU benches' mixture graph (random init, 200 epochs), ms per epoch:
the bare loop, ``run()``, ``run()`` without the finiteness check, and ``run()`` again.

    python bench/optimizer_overhead.py --sizes 1000000,5000000      (on the GPU machine; bench/RESULTS.md)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpu_bench import time_layout  # noqa: E402
from gpu_mixture_graph import mixture_graph  # noqa: E402

from umapviz import LayoutOptimizer  # noqa: E402
from umapviz._backend import cupy  # noqa: E402


def run_ms(graph, strategy: str, check: bool) -> float:
    """ms per epoch of LayoutOptimizer.run() (set-up excluded), with or without the finiteness check."""
    opt = LayoutOptimizer(graph, strategy=strategy, n_chunks="auto", random_state=0, init="random", device="gpu")
    if not check:
        opt._check_finite = lambda: None  # what the check costs, measured by leaving it out
    cupy().cuda.Device().synchronize()
    start = time.perf_counter()
    opt.run()
    cupy().cuda.Device().synchronize()
    return 1e3 * (time.perf_counter() - start) / opt.n_epochs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000000,5000000")
    ap.add_argument("--strategies", default="hogwild,chunked")
    args = ap.parse_args()
    print("| N | strategy | engine loop | run() | run() without the check | run() again |")
    print("|---|---|---|---|---|---|")
    for n in (int(s) for s in args.sizes.split(",")):
        graph = mixture_graph(n, 0, "gpu", 15).graph
        for strategy in args.strategies.split(","):
            rule = "auto" if strategy == "chunked" else 1
            loop = time_layout(graph, strategy, rule)["ms_per_epoch"]
            runs = [run_ms(graph, strategy, check) for check in (True, False, True)]  # again: the clocks' drift
            print(f"| {n:,} | {strategy} | {loop:.3f} | " + " | ".join(f"{ms:.3f}" for ms in runs) + " |", flush=True)


if __name__ == "__main__":
    main()
