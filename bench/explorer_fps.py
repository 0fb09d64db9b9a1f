"""Frames per second of the Explorer's own loop, headless (no browser): step, measure outliers, render, encode.

    .venv/bin/python bench/explorer_fps.py                                   # default dataset, CPU
    .venv/bin/python bench/explorer_fps.py --data blobs --n-samples 1000000 --device gpu --epochs 50

Prints one JSON line (also appended to OUT/explorer_fps.jsonl, OUT from --out): seconds from constructing the
Explorer to its first frame, the kernel-side start-up stages, frames per second and ms per epoch while playing.
The graph and the initial layout are built (or read from the cache) before the clock starts, as in the browser
test; their seconds are reported as "setup_s". On the GPU the kNN is exact over all pairs (cost ~ n^2), and a
spectral init is an eigen-solve on the host: for several million points use --init random.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from umapviz import datasets
from umapviz.widgets import Explorer, session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=datasets.DEFAULT)
    parser.add_argument("--n-samples", type=int, default=None)
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

    # The graph and the initial layout as a second run finds them: cached.
    setup = {}
    start = time.perf_counter()
    source = session.load_source(args.data, n_samples=args.n_samples)
    setup["data"] = round(time.perf_counter() - start, 2)
    start = time.perf_counter()
    graph = session.build(source, {}, device=args.device)
    setup["graph"] = round(time.perf_counter() - start, 2)
    start = time.perf_counter()
    session.initial_layout(graph, args.init, 0)
    setup["initial_layout"] = round(time.perf_counter() - start, 2)

    start = time.perf_counter()
    explorer = Explorer(args.data, n_samples=args.n_samples, device=args.device, strategy=args.strategy,
                        epochs_per_frame=args.epochs_per_frame, size=args.size,
                        colour_by_class=not args.density, init=args.init)  # fmt: skip
    explorer.frame()
    first_frame = time.perf_counter() - start

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


if __name__ == "__main__":
    main()
