"""Spectral init on the GPU against the CPU: the same graphs, side by side in one run.

For each graph: ``spectral_init(graph, 2, 0, device="gpu")`` twice (seconds; the second run's bytes must equal
the first's), the eigen-solves' share of it with their sparse products (the batched solve's steps) and
residuals, the same for other Lanczos sizes (ncv), and the CPU's ``spectral_init`` of that graph in a child
process with a time limit.
Graphs: ``mixture:N`` (the GPU benches' 384-d mixture, kNN within its far-apart clusters, so one component
per cluster) and ``gaussian:N`` (N x 32 standard normal, exact GPU kNN: one component).

    python bench/experiments/spectral_bench.py --graphs mixture:1000000,gaussian:1000000 --cpu-timeout 120 \
        --out bench/out
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import cupy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/: the benchmarks shared here
from gpu_bench import spectral_init_seconds  # noqa: E402 - a script of bench/
from gpu_mixture_graph import mixture_graph  # noqa: E402

from umapviz.graph import spectral_gpu  # noqa: E402
from umapviz.graph.build_gpu import build_graph_gpu  # noqa: E402
from umapviz.graph.init import spectral_init  # noqa: E402


def make_graph(spec: str):
    kind, n = spec.split(":")
    n = int(float(n))
    if kind == "mixture":
        return mixture_graph(n, seed=0, device="gpu", n_neighbors=15).graph
    if kind == "gaussian":
        X = cp.random.RandomState(0).standard_normal((n, 32), dtype=cp.float32)
        return build_graph_gpu(X, n_neighbors=15)
    raise ValueError(f"unknown graph kind {kind!r}: use mixture:N or gaussian:N")


def timed_gpu_init(graph) -> dict:
    """One GPU spectral_init: total seconds, and per eigen-solve its size, seconds, products and residual."""

    solves, batches = [], []
    solve, batched = spectral_gpu.leading_eigenpairs_gpu, spectral_gpu.leading_eigenpairs_batched

    def recording(adj, n_vec, tol, stats=None):
        stats = {} if stats is None else stats
        start = time.perf_counter()
        out = solve(adj, n_vec, tol, stats)
        solves.append({"n": adj.shape[0], "seconds": time.perf_counter() - start, **stats, "ok": out is not None})
        return out

    def recording_batch(adj, bounds, n_vec, tol, stats=None):
        stats = {} if stats is None else stats
        start = time.perf_counter()
        out = batched(adj, bounds, n_vec, tol, stats)
        batches.append({"n": adj.shape[0], "components": len(bounds) - 1, "seconds": time.perf_counter() - start,
                        "steps": stats["steps"], "residual": float(stats["residual"].max()),
                        "unsolved": sum(pair is None for pair in out), "sizes": np.diff(bounds).tolist(),
                        "converged_at": stats["converged_at"].tolist()})
        return out

    spectral_gpu.leading_eigenpairs_gpu, spectral_gpu.leading_eigenpairs_batched = recording, recording_batch
    try:
        cp.cuda.Device().synchronize()
        start = time.perf_counter()
        layout = spectral_init(graph, 2, 0, device="gpu")
        seconds = time.perf_counter() - start
    finally:
        spectral_gpu.leading_eigenpairs_gpu, spectral_gpu.leading_eigenpairs_batched = solve, batched
    return {"seconds": seconds, "solve_seconds": sum(s["seconds"] for s in solves + batches), "solves": solves,
            "batches": batches, "layout": layout}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", default="mixture:1000000,gaussian:1000000")
    ap.add_argument("--ncv", default="64,32", help="Lanczos sizes; the first one's bytes are checked to repeat")
    ap.add_argument("--cpu-timeout", type=float, default=120, help="seconds for the CPU's init (0: skip it)")
    ap.add_argument("--out", default=os.environ.get("OUT", "bench/out"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    shipped = spectral_gpu._NCV
    for spec in args.graphs.split(","):
        start = time.perf_counter()
        graph = make_graph(spec)
        row = {"graph": spec, "repr": repr(graph), "build_s": time.perf_counter() - start, "gpu": {}}
        print(f"{spec}: {graph} built in {row['build_s']:.1f} s", flush=True)
        for ncv in [int(v) for v in args.ncv.split(",")]:
            spectral_gpu._NCV = ncv
            try:
                runs = [timed_gpu_init(graph) for _ in range(1 if "repeat_bytes" in row else 2)]
            finally:
                spectral_gpu._NCV = shipped
            if "repeat_bytes" not in row:  # the first size: its bytes must repeat
                row["repeat_bytes"] = runs[0]["layout"].tobytes() == runs[1]["layout"].tobytes()
            run = runs[-1]
            solves = run["solves"]
            row["gpu"][ncv] = {k: v for k, v in run.items() if k != "layout"}
            big = max(solves, key=lambda s: s["n"]) if solves else {}
            print(f"  GPU ncv {ncv}: {run['seconds']:.2f} s, {len(solves)} eigen-solves {run['solve_seconds']:.2f} s; "
                  f"largest n={big.get('n')} {big.get('products')} products {big.get('seconds', 0):.2f} s "
                  f"residual {big.get('residual', float('nan')):.1e}", flush=True)
            for b in run["batches"]:
                print(f"    batched: {b['components']} components, n={b['n']}: {b['seconds']:.2f} s, {b['steps']} "
                      f"steps, residual {b['residual']:.1e}, {b['unsolved']} left unsolved; steps to converge by "
                      f"size: {sorted(zip(b['sizes'], b['converged_at'], strict=True), reverse=True)}", flush=True)
        if args.cpu_timeout > 0:
            cpu = spectral_init_seconds(graph, args.cpu_timeout)
            row["cpu"] = cpu
            gpu_s = row["gpu"][shipped]["seconds"] if shipped in row["gpu"] else float("nan")
            cpu_s = cpu.get("seconds")
            ratio = f" = {cpu_s / gpu_s:.0f}x the GPU's" if cpu_s else ""
            print(f"  CPU: {cpu_s if cpu_s is not None else cpu.get('note')} s{ratio}", flush=True)
        print(f"  GPU bytes repeat: {row['repeat_bytes']}", flush=True)
        with open(out / "spectral.jsonl", "a") as f:
            f.write(json.dumps(row, default=float) + "\n")
        del graph
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
