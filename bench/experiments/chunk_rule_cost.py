"""What "auto" picks on the chunk study's H200 graphs, and what that costs per epoch, from the measured timings.

For every graph and seed of ``bench/chunk_study/gpu.jsonl`` (which records n_vertices, nnz, max_degree and the
median epoch time of each n_chunks run), the current ``chunks_for("auto", ...)`` pick and the picks of
``--per-chunk`` alternatives (at most that many of the busiest vertex's edges per chunk, at least 2) are priced by
interpolating the median epoch time linearly in n_chunks between the two measured runs around the pick (beyond
the largest run measured: a line fitted to the runs from a quarter of its n_chunks up). Measured picks are read,
not interpolated.

    .venv/bin/python bench/experiments/chunk_rule_cost.py
    .venv/bin/python bench/experiments/chunk_rule_cost.py --per-chunk 16 24 32
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np

from umapviz.optimize.chunks import chunks_for

GPU = Path(__file__).resolve().parents[1] / "chunk_study" / "gpu.jsonl"


def epoch_ms(timings: dict[int, float], n_chunks: int) -> tuple[float, bool]:
    """(ms per epoch at ``n_chunks``, measured?) from {n_chunks: median epoch ms} of one graph's chunked runs."""
    if n_chunks in timings:
        return timings[n_chunks], True
    xs = np.array(sorted(timings))
    ys = np.array([timings[x] for x in xs])
    if n_chunks > xs[-1]:  # a line fitted to the runs from a quarter of the largest n_chunks up
        far = xs >= xs[-1] / 4
        slope, intercept = np.polyfit(xs[far], ys[far], 1)
        return float(intercept + slope * n_chunks), False
    return float(np.interp(n_chunks, xs, ys)), False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-chunk", type=int, nargs="*", default=[], help="alternative edges per chunk")
    parser.add_argument("--gpu", type=Path, default=GPU)
    args = parser.parse_args()
    records = {}
    for line in args.gpu.read_text().splitlines():
        r = json.loads(line)
        records[r["key"]] = r  # a key written twice counts once, the later line winning
    graphs = defaultdict(dict)
    for r in records.values():
        graphs[(r["data"], r["n"], r["seed"], r["nnz"], r["max_degree"])][r["n_chunks"] or 0] = r
    head = ["graph", "seed", "max degree", "auto: pick, ms/epoch"]
    head += [f"{d}/chunk: pick, ms/epoch" for d in args.per_chunk]
    print("| " + " | ".join(head) + " | shipped: pick, ms/epoch | hogwild ms/epoch |")
    print("|" + "---|" * (len(head) + 2))
    for (data, n, seed, nnz, max_degree), runs in sorted(graphs.items()):
        timings = {c: r["median_epoch_seconds"] * 1e3 for c, r in runs.items() if c and r["strategy"] == "chunked"}
        picks = [chunks_for("auto", n, nnz, max_degree)]
        picks += [max(2, math.ceil(max_degree / d)) for d in args.per_chunk]
        picks.append(chunks_for("shipped", n, nnz, max_degree))
        cells = []
        for pick in picks:
            ms, measured = epoch_ms(timings, pick)
            cells.append(f"{pick:,}, {ms:.2f}" + ("" if measured else " (est.)"))
        hogwild = runs[0]["median_epoch_seconds"] * 1e3 if 0 in runs else float("nan")
        print(f"| {data} {n // 1_000_000}M | {seed} | {max_degree:,} | " + " | ".join(cells) + f" | {hogwild:.2f} |")


if __name__ == "__main__":
    main()
