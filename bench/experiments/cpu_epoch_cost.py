"""ms per epoch of buffered, chunked("auto") and sequential on the CPU with 1 and 2 Numba threads, this checkout
beside the package at git revision ``--before``, in alternating rounds on one graph (the machine is shared: the
best round counts, and the load average at the start of each run is printed).

    NUMBA_NUM_THREADS=2 PYTHONPATH=$PWD python3 bench/experiments/cpu_epoch_cost.py --before 184d19a

``--before`` is a git revision (needs git and the repository) or a directory holding that revision's ``umapviz/``;
without it, this checkout alone.

The graph: ``--data`` at ``--n`` points (seed 0, cached under UMAPVIZ_CACHE_DIR), saved once for the child
processes; each child times the first ``--epochs`` epochs of a fresh optimizer (random init, seed 0) per strategy
and thread count, after a 3-epoch run that compiles every kernel, and prints the layout's fingerprint, which must
be the same for every version and thread count. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = [("buffered", 1), ("chunked", 1), ("sequential", 1), ("buffered", 2), ("chunked", 2)]

# Run in each child: the package found first on sys.path, every config once.
_CHILD = """
import json, sys, time
import numba, numpy as np
import umapviz
from umapviz.graph import FuzzyGraph
from umapviz.metrics import fingerprint
from umapviz.optimize import LayoutOptimizer
data = np.load(sys.argv[1])
graph = FuzzyGraph(*(data[k] for k in ("head", "tail", "weight", "epochs_per_sample", "knn_indices",
                                       "knn_dists")), float(data["a"]), float(data["b"]), int(data["n_epochs"]))
epochs, configs = int(sys.argv[2]), json.loads(sys.argv[3])
out = {"package": umapviz.__file__}
for strategy, threads in configs:
    numba.set_num_threads(threads)
    LayoutOptimizer(graph, strategy=strategy, n_chunks="auto", random_state=0, init="random", n_epochs=3).run()
for strategy, threads in configs:
    numba.set_num_threads(threads)
    opt = LayoutOptimizer(graph, strategy=strategy, n_chunks="auto", random_state=0, init="random")
    start = time.perf_counter()
    opt.step(epochs)
    out[f"{strategy}/{threads}"] = [(time.perf_counter() - start) / epochs, fingerprint(opt.embedding), opt.n_chunks]
print(json.dumps(out))
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", default=None, help="git revision, or directory with its umapviz/, to time beside")
    p.add_argument("--data", default="mixture")
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()

    from umapviz import datasets  # noqa: PLC0415 - after argparse: --help needs no Numba start-up
    from umapviz.graph import build_graph  # noqa: PLC0415 - the same

    X, _ = datasets.load(args.data, n_samples=args.n, random_state=0)
    graph = build_graph(X, random_state=0, progress=False)
    with tempfile.TemporaryDirectory() as tmp:
        versions = {"this checkout": str(ROOT)}
        if args.before and Path(args.before).is_dir():
            versions = {args.before: str(Path(args.before).resolve()), **versions}
        elif args.before:
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", args.before, "umapviz"], check=True, capture_output=True
            ).stdout
            before = Path(tmp) / "before"
            before.mkdir()
            with tarfile.open(fileobj=BytesIO(archive)) as tar:
                tar.extractall(before, filter="data")
            versions = {args.before: str(before), **versions}
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
        best, prints, loads, n_chunks = {}, {}, [], None
        for _ in range(args.rounds):
            for name, where in versions.items():
                loads.append(os.getloadavg()[0])
                env = {**os.environ, "NUMBA_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": where}
                run = subprocess.run(
                    [sys.executable, "-c", _CHILD, str(path), str(args.epochs), json.dumps(CONFIGS)],
                    env=env,
                    cwd=tmp,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                out = json.loads(run.stdout.strip().splitlines()[-1])
                assert out.pop("package").startswith(where), "the child imported another package"
                for key, (seconds, fp, chunks) in out.items():
                    best[name, key] = min(best.get((name, key), np.inf), seconds)
                    prints.setdefault(key, set()).add(fp)
                    n_chunks = chunks if key.startswith("chunked") else n_chunks
    print(
        f"{args.data}, {args.n:,} points, {graph.nnz:,} edges, max degree {graph.max_degree}, chunked auto: "
        f"{n_chunks} chunks; first {args.epochs} epochs, best of {args.rounds} alternating rounds; load average "
        f"(1 min) at the start of each run: {', '.join(f'{x:.1f}' for x in loads)}\n"
    )
    names = list(versions)
    print("| strategy | threads | " + " | ".join(f"{name} ms/epoch" for name in names) + " | fingerprint |")
    print("|---|---|" + "---|" * len(names) + "---|")
    for strategy, threads in CONFIGS:
        key = f"{strategy}/{threads}"
        print(
            f"| {strategy} | {threads} | "
            + " | ".join(f"{best[name, key] * 1e3:.1f}" for name in names)
            + f" | {' '.join(sorted(prints[key]))} |"
        )
    same = all(len(fps) == 1 for key, fps in prints.items())
    print(f"\nbytes equal across versions: {same}")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
