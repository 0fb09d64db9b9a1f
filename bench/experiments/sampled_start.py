"""The sampled spectral start and the optimizer's set-up at scale, on the GPU; the start's CPU/GPU parity.

    PYTHONUNBUFFERED=1 PYTHONPATH=. python3 bench/experiments/sampled_start.py --parity 200000 \
        --sizes 1000000,10000000 --out "$OUT"

``--parity N``: the ``clusters`` dataset's graph at N points (exact kNN on the GPU), the sampled start
(``spectral_init(graph, 2, 0, method="sampled")``) on the CPU (all Numba threads, then one) and on the GPU: their
fingerprints must be equal (exit 1 if not). For each size in ``--sizes``: the GPU benches' mixture (exact kNN
within clusters, bench/gpu_mixture_graph.py), then on the GPU the full and the sampled start (seconds, the
sampled start's stages, trustworthiness of each start on a 5,000-point sample; ``--variant-rows``: the sampled
start with other rows per landmark too), the edge order (this revision's
against NumPy's shuffle, same bytes checked) and ``LayoutOptimizer(graph, init=start, device="gpu")``'s set-up;
below ``--layout-max`` points also trustworthiness after 200 epochs of chunked("auto") from each start. One JSON
line per record to stdout and ``--out``/sampled_start.jsonl.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the mixture helpers

from gpu_mixture import mixture_gpu
from gpu_mixture_graph import clusters_that_fit, free_gpu_memory, mixture_graph

from umapviz import LayoutOptimizer, datasets
from umapviz.graph import build_graph
from umapviz.graph import start as init_mod
from umapviz.graph.start import spectral_init
from umapviz.metrics import fingerprint, trustworthiness
from umapviz.optimize.rng import edge_order


def emit(out: Path | None, record: dict) -> None:
    line = json.dumps(record, default=lambda value: value.tolist() if hasattr(value, "tolist") else float(value))
    print(line, flush=True)
    if out is not None:
        with (out / "sampled_start.jsonl").open("a") as f:
            f.write(line + "\n")


def synced(cp, start: float) -> float:
    cp.cuda.Device().synchronize()
    return time.perf_counter() - start


def parity(n: int, out: Path | None) -> bool:
    """The sampled start's fingerprints on the CPU (all threads, one thread) and the GPU, at n points."""
    X, _ = datasets.load("clusters", n_samples=n, random_state=0)
    graph = build_graph(X, random_state=0, progress=False, device="gpu", cache=False)
    prints, seconds = {}, {}
    for label, device, threads in (
        ("gpu", "gpu", None),
        ("cpu", "cpu", numba.config.NUMBA_NUM_THREADS),
        ("cpu_1_thread", "cpu", 1),
    ):
        numba.set_num_threads(threads or numba.config.NUMBA_NUM_THREADS)
        spectral_init(graph, 2, 0, device=device, method="sampled")  # compile
        start = time.perf_counter()
        layout = spectral_init(graph, 2, 0, device=device, method="sampled")
        seconds[label] = time.perf_counter() - start
        prints[label] = fingerprint(layout)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    equal = len(set(prints.values())) == 1
    emit(
        out, {"record": "parity", "n": n, "nnz": graph.nnz, "fingerprints": prints, "seconds": seconds, "equal": equal}
    )
    return equal


def sampled_variant(graph, rows: int) -> tuple[np.ndarray, dict]:
    """The sampled start on the GPU with ``rows`` rows per landmark, and its stats."""
    solve = init_mod.sampled_eigenpairs
    init_mod.sampled_eigenpairs = functools.partial(solve, rows_per_landmark=rows)
    try:
        stats: dict = {}
        return spectral_init(graph, 2, 0, device="gpu", method="sampled", stats=stats), stats
    finally:
        init_mod.sampled_eigenpairs = solve


def one_size(n: int, out: Path | None, layout_max: int, variant_rows: list[int]) -> None:
    import cupy as cp  # noqa: PLC0415 - a GPU machine's module

    n_clusters = clusters_that_fit(n, 15, 500)
    built = mixture_graph(n, 0, "gpu", 15, n_clusters=n_clusters)
    graph = built.graph
    record = {"record": "size", "n": n, "nnz": graph.nnz, "clusters": n_clusters, "graph_s": built.seconds}
    starts = {}
    for method in ("sampled", "full"):
        stats: dict = {}
        start = time.perf_counter()
        starts[method] = spectral_init(graph, 2, 0, device="gpu", method=method, stats=stats)
        record[f"{method}_s"] = synced(cp, start)
        record[f"{method}_stats"] = stats.get(method)
        free_gpu_memory()
    variants = {}
    for rows in variant_rows:  # other rows per landmark: seconds and stages (trustworthiness below)
        start = time.perf_counter()
        variants[rows], stats = sampled_variant(graph, rows)
        record[f"sampled_rows{rows}_s"] = synced(cp, start)
        record[f"sampled_rows{rows}_stats"] = stats.get("sampled")
        free_gpu_memory()
    start = time.perf_counter()
    order = edge_order(0, graph.nnz)
    record["edge_order_s"] = time.perf_counter() - start
    start = time.perf_counter()
    reference = np.arange(graph.nnz, dtype=np.int32)
    np.random.default_rng([0, 2]).shuffle(reference)
    record["numpy_shuffle_s"] = time.perf_counter() - start
    record["edge_order_equal"] = bool(np.array_equal(order, reference))
    del order, reference
    for method, layout in starts.items():
        start = time.perf_counter()
        opt = LayoutOptimizer(graph, random_state=0, init=layout, device="gpu")
        record[f"setup_s_{method}"] = synced(cp, start)
        if n <= layout_max:
            start = time.perf_counter()
            opt.run()
            record[f"layout_s_{method}"] = synced(cp, start)
            starts[method] = (layout, opt.device_embedding.copy())
        del opt
        free_gpu_memory()
    emit(out, dict(record, record="size_timings"))  # the timings, in case the checks below run out of time
    X, _ = mixture_gpu(n, n_clusters=n_clusters, seed=0, xp=cp)
    for method, pair in starts.items():
        layout, final = pair if isinstance(pair, tuple) else (pair, None)
        record[f"trust_start_{method}"] = trustworthiness(X, cp.asarray(layout), sample=5000, random_state=0)
        if final is not None:
            record[f"trust_after_{method}"] = trustworthiness(X, final, sample=5000, random_state=0)
    for rows, layout in variants.items():
        record[f"trust_start_sampled_rows{rows}"] = trustworthiness(X, cp.asarray(layout), sample=5000, random_state=0)
    del X
    free_gpu_memory()
    emit(out, record)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parity", type=int, default=200_000)
    parser.add_argument("--sizes", default="1000000,10000000")
    parser.add_argument("--layout-max", type=int, default=2_000_000)
    parser.add_argument("--variant-rows", default="256", help="other rows per landmark to time (comma-separated)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    ok = parity(args.parity, args.out) if args.parity else True
    for n in (int(s) for s in args.sizes.split(",") if s):
        one_size(n, args.out, args.layout_max, [int(r) for r in args.variant_rows.split(",") if r])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
