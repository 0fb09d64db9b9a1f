"""A short run to profile the layout kernels under Nsight Compute (run on the GPU machine):

    ncu --clock-control none -k regex:"epoch_hogwild|chunked_persistent" --launch-skip 8 \
        --launch-count 6 --section SpeedOfLight --section Occupancy --section WarpStateStats \
        python3 bench/experiments/gpu_profile.py [--n N] [STRATEGY ...]

Builds an N-point (default 1M) 384-d mixture graph on the GPU (kNN inside each far-apart cluster, as
gpu_bench.py does for large sizes), then runs 6 epochs (twice: warm-up and timed) of each strategy named
(default: hogwild, then chunked with n_chunks="auto").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/: the benchmarks shared here

from gpu_bench import graph_from_knn, knn_within_groups, mixture_gpu, time_layout


def main() -> None:
    ap = argparse.ArgumentParser(description="A short run of the layout kernels to profile with ncu (GPU machine).")
    ap.add_argument("strategies", nargs="*", default=["hogwild", "chunked"])
    ap.add_argument("--n", type=int, default=1_000_000, help="points of the mixture graph")
    args = ap.parse_args()
    X, labels = mixture_gpu(args.n)
    idx, dist = knn_within_groups(X, labels, 15)
    del X
    graph = graph_from_knn(idx, dist)
    for strategy in args.strategies:
        rule = "auto" if strategy == "chunked" else 1
        r = time_layout(graph, strategy, rule, epochs=6)
        print(strategy, f"{r['ms_per_epoch']:.3f} ms/epoch", flush=True)


if __name__ == "__main__":
    main()
