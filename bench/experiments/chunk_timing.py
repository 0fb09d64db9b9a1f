"""Seconds per epoch of the chunked strategy against n_chunks, measured to resist a busy machine.

Full study runs time each n_chunks once, spread over minutes, so on a shared machine their times mostly
measure the neighbours' load. Here every n_chunks runs a few epochs per round, the rounds interleave the
n_chunks values, and the best round counts (noise only ever adds time). Epochs are taken from the middle
of the schedule (after ``--skip`` epochs of a fresh optimizer), where the active edges per epoch are typical.

    .venv/bin/python bench/experiments/chunk_timing.py --data gaussian --n 20000 --chunks 1 2 4 8 16 32 64 128
    python bench/experiments/chunk_timing.py --device gpu --data mixture --n 1000000 --chunks 1 16 64 128 256 512

Prints a Markdown table; with --out, also writes it (atomically).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/: the benchmarks shared here
from chunk_study import initial_layout, load_graph

from umapviz.optimize import LayoutOptimizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="gaussian")
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunks", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64, 128])
    parser.add_argument("--epochs", type=int, default=10, help="epochs timed per round")
    parser.add_argument("--skip", type=int, default=20, help="epochs run (untimed) before timing starts")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    graph, _ = load_graph(args.data, args.n, args.seed, args.device, 15)
    init = initial_layout(graph, "spectral", args.seed)
    optimizers = {}
    for c in args.chunks:
        opt = LayoutOptimizer(
            graph, strategy="chunked", n_chunks=c, random_state=args.seed, init=init, device=args.device
        )
        opt.step(args.skip)
        optimizers[c] = opt
    best = {c: np.inf for c in args.chunks}
    for _ in range(args.rounds):
        for c, opt in optimizers.items():
            opt.reset()
            opt.step(args.skip)
            start = time.perf_counter()
            opt.step(args.epochs)  # each epoch returns its active count, so the device is synchronised
            best[c] = min(best[c], (time.perf_counter() - start) / args.epochs)
    lines = [
        f"{args.data}, n={args.n}, seed={args.seed}, nnz={graph.nnz}, max degree {graph.max_degree}, "
        f"{args.device}; best of {args.rounds} rounds of {args.epochs} epochs after {args.skip}",
        "",
        "| n_chunks | ms/epoch | x 1 chunk |",
        "|---|---|---|",
    ]
    for c in args.chunks:
        lines.append(f"| {c} | {best[c] * 1e3:.2f} | {best[c] / best[args.chunks[0]]:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
