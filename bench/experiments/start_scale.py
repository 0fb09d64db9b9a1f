"""The graph stage after the kNN and the spectral start, step by step, at millions of vertices (CPU or GPU).

    PYTHONPATH=. python bench/experiments/start_scale.py --sizes 1000000,2000000                (CPU, here)
    PYTHONUNBUFFERED=1 PYTHONPATH=. python3 bench/experiments/start_scale.py --device gpu \
        --sizes 10000000,30000000 --out "$OUT"

A synthetic kNN stands in for the search (its cost is not what this measures; :func:`synthetic_knn`):
``--clusters`` Zipf-sized clusters and ``--small`` clusters of ``2 k`` points, their vertices scattered over the ids
as the GPU benches' mixture's are, each a wrapped 3-D lattice whose vertices list ``k - 1`` of their 26 lattice
neighbours. The host costs scale with vertices, edges and components as for a real kNN graph of that size; the
eigen-solves' products depend on the structure too, so their seconds are only indicative. It is drawn on
``--device`` (CuPy on the GPU).

Steps timed (seconds, the GPU synchronised after each): the graph stage (the fuzzy set, then on the GPU its copy
to the host and the host CSR, then the pruned edge list; or :func:`umapviz.graph.build_gpu.fuzzy_graph_gpu`'s own
stages where this revision has it, and up to ``--old-max`` also by the host's pruning, checked the same bytes); the
connected components by SciPy up to ``--scipy-max`` (the host search the start used before, with the host's
members and grouped copy), by the CPU union-find and (GPU) by the GPU twin, checked equal; then
``spectral_init(graph, 2, 0, device, method)`` for each ``--methods`` (the full one up to ``--full-max``) with its
own steps (``stats["seconds"]``) and the sampled start's stages. Each size runs in this process after a warm-up at
20,000 vertices (kernels compiled); ``--parity N`` first compares the CPU's and the GPU's starts at N vertices.
One JSON line per size on stdout and in ``--out``/start_scale.jsonl; a table at the end.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse
import scipy.sparse.csgraph

from umapviz.datasets.generators import _zipf_sizes
from umapviz.graph import start as init_mod
from umapviz.graph.edges import graph_from_fuzzy_set
from umapviz.graph.fuzzy.fuzzy_cpu import fuzzy_simplicial_set
from umapviz.graph.params import GraphParams
from umapviz.graph.start.components import connected_components


def synthetic_knn(n: int, k: int, n_clusters: int, n_small: int, seed: int, xp):
    """``(indices int32 (n, k), distances float32 (n, k))`` on ``xp``: a kNN-like graph with a 3-D geometry.

    Zipf-sized clusters and ``n_small`` of ``2 k`` points, their members scattered over the ids. Member ``p`` of a
    cluster of ``size`` sits on a wrapped lattice of side ``s = round(size ** (1 / 3))``; its 26 lattice neighbours
    are the members ``p + a + b s + c s^2`` (mod size; a, b, c in {-1, 0, 1}). Each vertex lists itself at distance
    0 and ``k - 1`` of those 26 drawn at random, at sorted random distances in [0.5, 1.5): the fuzzy union keeps about
    20 edges per vertex, as a kNN graph of k = 15 keeps 20 to 25, and the spectrum of a 3-D manifold's."""
    rng = np.random.default_rng(seed)
    sizes = np.concatenate([_zipf_sizes(n - n_small * 2 * k, n_clusters), np.full(n_small, 2 * k)]).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    side = np.maximum(np.rint(np.cbrt(sizes)), 3).astype(np.int64)
    order = xp.asarray(rng.permutation(n).astype(np.int32))  # order[starts[c] + p]: member p of cluster c
    cluster = xp.asarray(np.repeat(np.arange(sizes.size, dtype=np.int32), sizes))  # by position in `order`
    size_at, start_at, side_at = xp.asarray(sizes)[cluster], xp.asarray(starts)[cluster], xp.asarray(side)[cluster]
    del cluster
    pos = xp.arange(n, dtype=xp.int64) - start_at
    steps = (-1, 0, 1)
    lattice = np.array([(a, b, c) for a in steps for b in steps for c in steps if (a, b, c) != (0, 0, 0)])
    gen = xp.random.default_rng(seed + 1)
    pick = xp.argsort(gen.random((n, lattice.shape[0]), dtype=xp.float32), axis=1)[:, : k - 1]
    steps_a, steps_b, steps_c = (xp.asarray(lattice[:, axis]) for axis in range(3))
    neighbours = xp.empty((n, k - 1), dtype=xp.int32)
    for j in range(k - 1):  # a column at a time: (n, k) int64 temporaries would take gigabytes at 30M
        offset = steps_a[pick[:, j]] + steps_b[pick[:, j]] * side_at + steps_c[pick[:, j]] * side_at * side_at
        neighbours[:, j] = order[start_at + (pos + offset) % size_at]
    del pick, offset
    indices = xp.empty((n, k), dtype=xp.int32)
    indices[order, 0] = order
    indices[order, 1:] = neighbours
    del neighbours
    dists = xp.empty((n, k), dtype=xp.float32)
    dists[:, 0] = 0
    dists[:, 1:] = xp.sort(gen.random((n, k - 1), dtype=xp.float32) + xp.float32(0.5), axis=1)
    return indices, dists


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--sizes", default="1000000")
    parser.add_argument("--k", type=int, default=15)
    parser.add_argument("--clusters", type=int, default=30)
    parser.add_argument("--small", type=int, default=1000, help="clusters of 2 k points (small components)")
    parser.add_argument("--methods", default="sampled,full")
    parser.add_argument("--scipy-max", type=int, default=10_000_000, help="SciPy's components up to this size")
    parser.add_argument(
        "--old-max",
        type=int,
        default=10_000_000,
        help="on the GPU, the graph stage by the host's pruning too (checked the same) up to this size",
    )
    parser.add_argument(
        "--parity",
        type=int,
        default=0,
        help="on the GPU, the sampled start of a graph of this size on the CPU and the GPU: same bytes",
    )
    parser.add_argument("--full-max", type=int, default=10_000_000, help="the full start up to this size")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    one_size(20_000, args, warmup=True)
    if args.parity and args.device == "gpu":
        parity(args.parity, args)
    rows = [one_size(int(n), args) for n in args.sizes.split(",")]
    print_table(rows)


def _xp(device: str):
    if device == "gpu":
        import cupy  # noqa: PLC0415 - GPU runs only

        return cupy
    return np


class Clock:
    """Seconds per step, the GPU synchronised before each reading; each step also printed to stderr at once."""

    def __init__(self, xp, quiet: bool):
        self.xp, self.quiet, self.seconds = xp, quiet, {}
        self.last = self.now()

    def now(self) -> float:
        if self.xp is not np:
            self.xp.cuda.Device().synchronize()
        return time.perf_counter()

    def lap(self, step: str) -> float:
        now = self.now()
        self.seconds[step], self.last = now - self.last, now
        if not self.quiet:
            print(f"  [{time.strftime('%H:%M:%S')}] {step}: {self.seconds[step]:.2f} s", file=sys.stderr, flush=True)
        return self.seconds[step]


def graph_stage(indices, dists, xp, clock: Clock, old: bool = False):
    """The graph after the kNN, timed by steps, as the build does it on ``xp``'s device; on the GPU with ``old``
    by the fuzzy set's copy to the host and the host's pruning (steps named ``old_graph_*``)."""
    n = int(indices.shape[0])
    params = GraphParams.for_data(n, n_neighbors=int(indices.shape[1]), metric="euclidean", knn="synthetic")
    if xp is np:
        fuzzy = fuzzy_simplicial_set(indices, dists)
        clock.lap("graph_fuzzy")
        graph = graph_from_fuzzy_set(fuzzy, indices, dists, params)
        clock.lap("graph_edges")
        return graph
    from umapviz.graph import build_gpu  # noqa: PLC0415 - GPU runs only

    if hasattr(build_gpu, "fuzzy_graph_gpu") and not old:  # the revision's own path, with its own stages
        stages: dict = {}
        graph = build_gpu.fuzzy_graph_gpu(indices, dists, params, timings=stages)
        clock.lap("graph")
        clock.seconds.update({f"graph_{name}": value for name, value in stages.items()})
        return graph
    from umapviz.graph.fuzzy.fuzzy_gpu import fuzzy_simplicial_set_gpu  # noqa: PLC0415 - GPU runs only

    name = "old_graph" if old else "graph"
    indptr, cols, data = fuzzy_simplicial_set_gpu(indices, dists)
    clock.lap(f"{name}_fuzzy")
    host = data.get(), cols.get(), indptr.get()
    del indptr, cols, data
    clock.lap(f"{name}_to_host")
    fuzzy = scipy.sparse.csr_matrix(host, shape=(n, n))
    clock.lap(f"{name}_csr")
    graph = graph_from_fuzzy_set(fuzzy, indices.get(), dists.get(), params)
    clock.lap(f"{name}_edges")
    return graph


def one_size(n: int, args, warmup: bool = False) -> dict:
    xp = _xp(args.device)
    clock = Clock(xp, quiet=warmup)
    small = min(args.small, n // (8 * args.k))
    indices, dists = synthetic_knn(n, args.k, args.clusters, small, 0, xp)
    clock.lap("knn_synthetic")
    graph = graph_stage(indices, dists, xp, clock)
    if xp is not np and n <= args.old_max:
        before = graph_stage(indices, dists, xp, clock, old=True)
        same = all(
            getattr(before, a).tobytes() == getattr(graph, a).tobytes()
            for a in ("head", "tail", "weight", "epochs_per_sample", "knn_indices", "knn_dists")
        )
        del before
        clock.lap("graph_compare")
    del indices, dists
    row: dict = {"n": n, "nnz": graph.nnz, "device": args.device}
    if xp is not np and n <= args.old_max:
        row["graph_same_bytes_as_host_path"] = same
    with_scipy = n <= args.scipy_max
    if with_scipy:
        adj = init_mod._adjacency(graph)
        clock.lap("adjacency_csr")
        ref = scipy.sparse.csgraph.connected_components(adj, directed=True, connection="strong")
        clock.lap("components_scipy")
    n_comp, labels = connected_components(graph.head, graph.tail, n)
    clock.lap("components_cpu")
    row["components"] = n_comp
    if with_scipy:
        row["components_match_scipy"] = bool(ref[0] == n_comp and _same_partition(ref[1], labels))
        sizes = np.bincount(labels, minlength=n_comp)
        members, bounds, _ = init_mod._component_members(labels, sizes)
        clock.lap("members_host")
        solvable = [c for c in np.argsort(-sizes, kind="stable") if sizes[c] > 5]
        init_mod._grouped(adj, members, bounds, solvable)
        clock.lap("grouped_host")
        del adj, members
    if args.device == "gpu":
        head, tail = xp.asarray(graph.head), xp.asarray(graph.tail)
        clock.lap("edges_to_gpu")
        gpu_comp, gpu_labels = connected_components(head, tail, n, device="gpu")
        clock.lap("components_gpu")
        row["components_gpu_equal"] = bool(gpu_comp == n_comp and (gpu_labels.get() == labels).all())
        del head, tail, gpu_labels
    for method in args.methods.split(","):
        if method == "full" and n > args.full_max:
            continue
        stats: dict = {}
        start = clock.now()
        layout = init_mod.spectral_init(graph, 2, 0, device=args.device, method=method, stats=stats)
        clock.lap(f"start_{method}")
        row[f"start_{method}_steps"] = stats.get("seconds")
        if stats.get("sampled"):
            row[f"start_{method}_sampled_stages"] = stats["sampled"].get("seconds")
        row[f"start_{method}_finite"] = bool(np.isfinite(layout).all())
        del start
    row["seconds"] = clock.seconds
    if not warmup:
        line = json.dumps(row)
        print(line, flush=True)
        if args.out is not None:
            with (args.out / "start_scale.jsonl").open("a") as f:
                f.write(line + "\n")
    return row


def parity(n: int, args) -> None:
    """The sampled and the full start of the synthetic graph at ``n`` vertices on the CPU and the GPU: their
    fingerprints, which must be equal (one JSON line)."""
    from umapviz.metrics import fingerprint  # noqa: PLC0415 - the parity check only

    cp = _xp("gpu")
    graph = graph_from_knn_gpu(n, args, cp)
    record: dict = {"record": "parity", "n": n, "nnz": graph.nnz}
    for method in ("sampled", "full"):
        prints = {}
        for device in ("cpu", "gpu"):
            start = time.perf_counter()
            prints[device] = fingerprint(init_mod.spectral_init(graph, 2, 0, device=device, method=method))
            record[f"{method}_{device}_s"] = time.perf_counter() - start
        record[method] = prints
        record[f"{method}_equal"] = prints["cpu"] == prints["gpu"]
    line = json.dumps(record)
    print(line, flush=True)
    if args.out is not None:
        with (args.out / "start_scale.jsonl").open("a") as f:
            f.write(line + "\n")


def graph_from_knn_gpu(n: int, args, cp):
    """The synthetic graph of ``n`` vertices built on the GPU (quietly)."""
    indices, dists = synthetic_knn(n, args.k, args.clusters, min(args.small, n // (8 * args.k)), 0, cp)
    return graph_stage(indices, dists, cp, Clock(cp, quiet=True))


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two labellings split the vertices the same way (SciPy numbers its components in another order)."""
    first = np.full(int(a.max()) + 1, a.size)
    np.minimum.at(first, a, np.arange(a.size))
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return bool((rank[a] == b).all())


def print_table(rows: list[dict]) -> None:
    """One line per step, one column per size."""
    steps: list[str] = []
    for row in rows:
        steps += [s for s in row["seconds"] if s not in steps]
        for key in sorted(row):
            if key.endswith(("_steps", "_stages")) and row[key]:
                steps += [f"{key}.{s}" for s in row[key] if f"{key}.{s}" not in steps]
    print("| step | " + " | ".join(f"{r['n']:,} ({r['nnz']:,} edges, {r['components']} comp.)" for r in rows) + " |")
    print("|---|" + "---|" * len(rows))
    for step in steps:
        cells = []
        for row in rows:
            key, _, sub = step.partition(".")
            value = row["seconds"].get(step) if not sub else (row.get(key) or {}).get(sub)
            cells.append("-" if value is None else f"{value:.2f}")
        print(f"| {step} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
