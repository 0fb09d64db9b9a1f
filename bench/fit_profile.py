"""Where the time of the full 1M x 384 GPU fit goes (run on the GPU machine): cProfile of gpu_bench's
full_pipeline (stage by stage) and of ``UMAP().fit_transform`` on a NumPy array, after a 20k fit that compiles
the kernels.

    PYTHONPATH=. python3 bench/fit_profile.py [--n 1000000] [--top 35] [--repeat 2]

Prints each run's stage seconds, then the functions that take the most time, by their own time and with what
they call. CuPy launches are asynchronous: GPU work shows up where the host waits for it.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats

from gpu_bench import full_pipeline, umap_fit_seconds  # a sibling script: bench/ is on sys.path
from gpu_mixture import mixture_gpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--top", type=int, default=35)
    ap.add_argument("--repeat", type=int, default=2, help="profiled fits of the same data, one after the other")
    args = ap.parse_args()
    full_pipeline(mixture_gpu(20_000)[0])  # compiles the kernels
    X, _ = mixture_gpu(args.n)
    X_host = X.get()
    for run in range(args.repeat):
        profile = cProfile.Profile()
        profile.enable()
        fit, _ = full_pipeline(X)
        profile.disable()
        stages = ", ".join(f"{k} {v:.2f}" for k, v in fit["stages_s"].items())
        print(f"\n=== run {run + 1}, full_pipeline: {fit['total_s']:.2f} s: {stages}")
        _print(profile, args.top)
        profile = cProfile.Profile()
        profile.enable()
        seconds = umap_fit_seconds(X_host)
        profile.disable()
        print(f"\n=== run {run + 1}, UMAP().fit_transform: {seconds:.2f} s")
        _print(profile, args.top)


def _print(profile: cProfile.Profile, top: int) -> None:
    stats = pstats.Stats(profile)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


if __name__ == "__main__":
    main()
