"""What the spectral start costs, before and after, and whether the CPU and the GPU give the same bytes.

    PYTHONPATH=$PWD NUMBA_NUM_THREADS=1 python3 bench/spectral_cost.py --sizes 20000,100000 --before bd2aaad
    PYTHONPATH=$PWD python3 bench/spectral_cost.py --device gpu --sizes 1000000 --parity 20000,200000

For each size in ``--sizes``: the ``clusters`` dataset's graph (cached under UMAPVIZ_CACHE_DIR; built on the GPU
with ``--device gpu``) and the seconds of ``spectral_init(graph, 2, 0, device)``, best of ``--repeat`` after one
warm-up call (which compiles the Numba kernels), with the solver's sparse products; ``--clock process`` times CPU
seconds instead of wall seconds (on a machine shared with other jobs, what one thread spends is what compares).
``--before REV`` times the same call, on the same graph, in a subprocess importing the package as it was at git
revision ``REV`` (needs git and the repository), so both figures come from one run on one machine. ``--parity``
sizes: the start layout's fingerprint on the CPU with 1 and 2 Numba threads and on the GPU (where usable), and
whether all are equal (exit 1 if not).
Prints markdown tables.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

import numba
import numpy as np

from umapviz import datasets
from umapviz._backend import gpu_available
from umapviz.graph import build_graph, spectral_init
from umapviz.graph import start as init_mod
from umapviz.metrics import fingerprint

ROOT = Path(__file__).resolve().parents[1]

# Run in the subprocess for --before: time spectral_init of the package found first on sys.path.
_TIME_SNIPPET = """
import json, sys, time
import numpy as np
from umapviz.graph import FuzzyGraph, spectral_init
from umapviz.metrics import fingerprint
data = np.load(sys.argv[1])
graph = FuzzyGraph(*(data[k] for k in ("head", "tail", "weight", "epochs_per_sample", "knn_indices",
                                       "knn_dists")), float(data["a"]), float(data["b"]), int(data["n_epochs"]))
spectral_init(graph, 2, 0, device=sys.argv[2])
clock = getattr(time, sys.argv[5])
best = float("inf")
for _ in range(int(sys.argv[3])):
    t = clock(); layout = spectral_init(graph, 2, 0, device=sys.argv[2])
    best = min(best, clock() - t)
import umapviz
assert umapviz.__file__.startswith(sys.argv[4]), umapviz.__file__
np.save(sys.argv[4] + "/layout.npy", layout)
print(json.dumps({"seconds": best, "fingerprint": fingerprint(layout)}))
"""


def clusters_graph(n: int, device: str):
    """The ``clusters`` dataset's graph at ``n`` points (seed 0)."""
    X, _ = datasets.load("clusters", n_samples=n, random_state=0)
    return build_graph(X, random_state=0, progress=False, device=device)


def time_now(graph, device: str, repeat: int, clock: str = "perf_counter") -> tuple[float, dict, str]:
    """Best seconds of spectral_init over ``repeat`` calls after a warm-up, the solver's stats, the fingerprint."""
    stats = {}
    solve = init_mod.leading_eigenpairs

    def recording(adj, bounds, n_vec, solve_device, _stats=None):
        return solve(adj, bounds, n_vec, solve_device, stats)

    init_mod.leading_eigenpairs = recording
    try:
        spectral_init(graph, 2, 0, device=device)
    finally:
        init_mod.leading_eigenpairs = solve
    best, now = float("inf"), getattr(time, clock)
    for _ in range(repeat):
        t = now()
        layout = spectral_init(graph, 2, 0, device=device)
        best = min(best, now() - t)
    return best, stats, fingerprint(layout)


def time_before(graph, rev: str, device: str, repeat: int, clock: str = "perf_counter") -> dict:
    """spectral_init's best seconds, fingerprint and layout at git revision ``rev``, in a subprocess."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev, "umapviz"], check=True, capture_output=True
        ).stdout
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        path = Path(tmp) / "graph.npz"
        np.savez(
            path,
            head=graph.head,
            tail=graph.tail,
            weight=graph.weight,
            epochs_per_sample=graph.epochs_per_sample,
            knn_indices=graph.knn_indices,
            knn_dists=graph.knn_dists,
            a=graph.a,
            b=graph.b,
            n_epochs=graph.n_epochs,
        )
        env = {**os.environ, "PYTHONPATH": tmp}
        out = subprocess.run(
            [sys.executable, "-c", _TIME_SNIPPET, str(path), device, str(repeat), tmp, clock],
            env=env,
            cwd=tmp,
            check=True,
            capture_output=True,
            text=True,
        ).stdout  # not this checkout
        return {**json.loads(out.strip().splitlines()[-1]), "layout": np.load(Path(tmp) / "layout.npy")}


def parity_row(n: int, graph_device: str) -> tuple[dict, bool]:
    """Fingerprints of the start layout at ``n`` points: cpu/1, cpu/2 (Numba threads) and gpu where usable."""
    graph = clusters_graph(n, graph_device)
    out = {}
    threads_before = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            out[f"cpu/{threads}"] = fingerprint(spectral_init(graph, 2, 0))
    finally:
        numba.set_num_threads(threads_before)
    if gpu_available():
        out["gpu"] = fingerprint(spectral_init(graph, 2, 0, device="gpu"))
    return out, len(set(out.values())) == 1


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="20000", help="comma-separated sizes to time ('' for none)")
    p.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
    p.add_argument("--before", default=None, help="git revision to time beside the current code")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument(
        "--clock",
        default="wall",
        choices=("wall", "process"),
        help="wall seconds, or CPU seconds of the process (for one thread on a shared machine)",
    )
    p.add_argument("--parity", default="", help="comma-separated sizes for the CPU/GPU fingerprint table")
    args = p.parse_args()
    print(f"Numba threads: {numba.get_num_threads()}; device: {args.device}")
    print("| points | device | seconds | products | largest residual | seconds before | fingerprint | before |")
    print("|---|---|---|---|---|---|---|---|")
    for n in [int(s) for s in args.sizes.split(",") if s]:
        graph = clusters_graph(n, args.device)
        clock = {"wall": "perf_counter", "process": "process_time"}[args.clock]
        seconds, stats, fp = time_now(graph, args.device, args.repeat, clock)
        before = time_before(graph, args.before, args.device, args.repeat, clock) if args.before else {}
        print(
            f"| {n:,} | {args.device} | {seconds:.3f} | {stats.get('products', '')} | "
            f"{max(stats.get('residual', [0])):.1e} | {before.get('seconds', float('nan')):.3f} | {fp} | "
            f"{before.get('fingerprint', '')} |",
            flush=True,
        )
    ok = True
    if args.parity:
        print("\n| points | cpu, 1 thread | cpu, 2 threads | gpu | equal |\n|---|---|---|---|---|")
        for n in [int(s) for s in args.parity.split(",") if s]:
            row, equal = parity_row(n, args.device)
            ok &= equal
            print(f"| {n:,} | {row['cpu/1']} | {row['cpu/2']} | {row.get('gpu', 'no GPU')} | {equal} |", flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
