"""Frames per second of the Explorer's own loop, headless (no browser): step, measure outliers, render, encode.

    .venv/bin/python bench/explorer_fps.py                                   # default dataset, CPU
    .venv/bin/python bench/explorer_fps.py --data blobs --n-samples 1000000 --device gpu --epochs 50

Prints one JSON line (also appended to OUT/explorer_fps.jsonl, OUT from --out): seconds from constructing the
Explorer to its first frame, the kernel-side start-up stages, frames per second and ms per epoch while playing.
The graph and the initial layout are built (or read from the cache) before the clock starts, as in the browser
test; their seconds are reported as "setup_s". On the GPU the kNN is exact over all pairs (cost ~ n^2), and a
spectral init is an eigen-solve on the host: for several million points use --init random.

--data mixture_gpu is the 384-d mixture of the GPU benches (bench/gpu_mixture.py, Zipf-sized clusters far apart,
drawn on the device) with exact kNN within each cluster (cost ~ the sum of the squared cluster sizes, not n^2):
what makes 10M points affordable. The Explorer gets the graph and the cluster labels (for colouring); the record
adds the build's seconds and "knn_agreement" (the share of 256 sampled rows whose kNN equals brute force).

    python3 bench/explorer_fps.py --device gpu --data mixture_gpu --n-samples 10000000 --init random
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from gpu_mixture_graph import clusters_that_fit, mixture_graph  # a sibling script (bench/ is on sys.path)

from umapviz import datasets
from umapviz.widgets import Explorer, session

MIXTURE = "mixture_gpu"
# At 10M points the largest of 500 Zipf-sized clusters holds 1.47M (of 300: 1.59M); the kNN within clusters
# costs the sum of the squared sizes, 3.6e12 pairs at 10M.
MAX_CLUSTERS = 500
N_NEIGHBORS = 15  # the Explorer's default, as for the datasets' graphs
START = time.perf_counter()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=datasets.DEFAULT, help=f"a dataset name, or {MIXTURE} (see above)")
    parser.add_argument("--n-samples", type=int, default=None)
    parser.add_argument(
        "--clusters",
        type=int,
        default=None,
        help=f"{MIXTURE}: clusters (default {MAX_CLUSTERS}, fewer when --n-samples is small: "
        f"each needs 2 * {N_NEIGHBORS} points)",
    )
    parser.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
    parser.add_argument("--strategy", default="chunked")
    parser.add_argument("--epochs", type=int, default=40, help="epochs to play (one frame each by default)")
    parser.add_argument("--epochs-per-frame", type=int, default=1)
    parser.add_argument("--size", type=int, default=480)
    parser.add_argument("--density", action="store_true", help="colour by density only, not by class")
    parser.add_argument("--init", default="spectral", choices=("spectral", "random"), help="the layout's start")
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parent / "out", help="folder for explorer_fps.jsonl"
    )
    args = parser.parse_args()

    if args.data == MIXTURE and args.n_samples is None:
        parser.error(f"--data {MIXTURE} needs --n-samples (e.g. 10000000 on the GPU)")
    if args.clusters is not None and args.data != MIXTURE:
        parser.error(f"--clusters applies to --data {MIXTURE} only")

    # The graph and the initial layout as a second run finds them: cached (the mixture's graph is built here,
    # then handed to the Explorer).
    setup: dict[str, float] = {}
    extra: dict = {}
    if args.data == MIXTURE:
        graph, labels, extra = build_mixture(args, setup)
        data = graph
    else:
        data, labels = args.data, None
        start = time.perf_counter()
        source = session.load_source(args.data, n_samples=args.n_samples)
        setup["data"] = round(time.perf_counter() - start, 2)
        start = time.perf_counter()
        graph = session.build(source, {}, device=args.device)
        setup["graph"] = round(time.perf_counter() - start, 2)
    start = time.perf_counter()
    session.initial_layout(graph, args.init, 0)
    setup["initial_layout"] = round(time.perf_counter() - start, 2)
    progress(f"set up: {setup}")

    start = time.perf_counter()
    n_samples = None if args.data == MIXTURE else args.n_samples  # a graph brings its own points
    explorer = Explorer(
        data,
        labels=labels,
        n_samples=n_samples,
        device=args.device,
        strategy=args.strategy,
        epochs_per_frame=args.epochs_per_frame,
        size=args.size,
        colour_by_class=not args.density,
        init=args.init,
    )
    explorer.frame()
    first_frame = time.perf_counter() - start
    progress(f"first frame in {first_frame:.1f} s: {explorer.timings}")

    start = time.perf_counter()
    state = explorer.play(epochs=args.epochs, block=True)
    seconds = time.perf_counter() - start
    frames = -(-args.epochs // args.epochs_per_frame)
    result = {
        "data": args.data,
        "n_points": state.n_points,
        "device": args.device,
        "strategy": state.strategy,
        "n_chunks_used": state.n_chunks_used,
        "size": args.size,
        "colour": "density" if args.density else "class",
        "init": args.init,
        "setup_s": setup,
        **extra,
        "first_frame_s": round(first_frame, 2),
        "stages_s": explorer.timings,
        "epochs": state.epoch,
        "fps": round(frames / seconds, 2),
        "fps_last_frames": round(state.fps, 2),
        "ms_per_epoch": round(state.ms_per_epoch, 1),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    explorer.close()
    line = json.dumps(result)
    print(line)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "explorer_fps.jsonl").open("a") as f:
        f.write(line + "\n")


def build_mixture(args: argparse.Namespace, setup: dict[str, float]) -> tuple[object, object, dict]:
    """The mixture's graph (exact kNN within clusters) and its host cluster labels; fills ``setup`` with the
    stages' seconds and returns the record's extra fields."""
    n_clusters = args.clusters or clusters_that_fit(args.n_samples, N_NEIGHBORS, MAX_CLUSTERS)
    progress(f"{MIXTURE}: {args.n_samples:,} points in {n_clusters} clusters on the {args.device}...")
    built = mixture_graph(args.n_samples, 0, args.device, N_NEIGHBORS, n_clusters=n_clusters)
    setup["data"] = round(built.data_seconds, 2)
    setup["knn"] = round(built.knn_seconds, 2)
    setup["graph"] = round(built.graph_seconds, 2)
    progress(f"graph: {built.graph.nnz:,} edges, kNN agreement {built.knn_check:.1%}, {setup}")
    extra = {
        "clusters": n_clusters,
        "nnz": built.graph.nnz,
        "knn": built.graph.params["knn"],
        "knn_agreement": built.knn_check,
    }
    return built.graph, built.labels, extra


def progress(message: str) -> None:
    """A progress line on stderr (stdout holds the JSON record): a step cut off by its time limit shows where."""
    print(f"[{time.perf_counter() - START:7.1f}s] {message}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
