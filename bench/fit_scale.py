"""A fit at scale, stage by stage: kNN, graph, start layout, layout, total, recall, trust, peak GPU memory.

    PYTHONUNBUFFERED=1 PYTHONPATH=. python3 bench/fit_scale.py --device gpu --sizes 1000000,10000000 --out DIR
    PYTHONPATH=. python bench/fit_scale.py --device cpu --sizes 20000,50000 --knn partitioned      (here)

Each size runs in a fresh process (a child of this one) on data generated there: the 384-d Gaussian mixture of the GPU
benches (bench/gpu_mixture.py: Zipf-sized clusters far apart), made on the GPU and copied to the host (X is a NumPy
array, as a user passes it; --host-data keeps it there for the whole graph build, streamed partition by partition), or
--data text_like (umapviz.datasets, 384-d unit vectors from anisotropic topics). Stages: kNN (``--knn``: approx is the
partitioned search on the GPU, --refine its refinement rounds; exact; partitioned; auto), the rest of the graph (fuzzy
set and edge list), the spectral start, the chunked("auto") layout, and the total of those. Then, not timed: recall@k on
1,000 sampled rows against brute force (umapviz.graph.knn.recall.recall_at_k), trustworthiness on a 5,000-point sample
(umapviz.metrics.trustworthiness), and the peak of CuPy's memory pool (what the run held at most, beside what CUDA
itself keeps) with the GPU's used memory at the end. --umap-fit also times ``UMAP(device=...,
random_state=0).fit_transform(X)`` as a user calls it (knn="auto"), in its own fresh process.
--warmup N first fits N points in a fresh process (warm on-disk kernel caches, as for a user's second fit);
--dim sets the GPU recipes' columns; --frames-every K renders a live view's frame every K epochs of the layout;
--fling-check counts what chunked("auto") flung (outside hogwild's bounds from the same start). Writes results.jsonl
and results.md to --out and prints the table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

COLUMNS = (
    "n",
    "d",
    "knn",
    "knn_s",
    "graph_s",
    "start_s",
    "layout_s",
    "total_s",
    "recall",
    "trust",
    "peak_gpu_gib",
    "umap_fit_s",
    "frame_ms",
    "flung_bounds",
)


def make_data(n: int, data: str, device: str, dim: int = 384) -> np.ndarray:
    """(n, dim) float32 NumPy data: the GPU benches' mixture or the text_like recipe, made on the GPU there (the host's
    generator would take minutes at ten million rows) and copied to the host; on the CPU the same recipes drawn by
    NumPy (text_like: umapviz.datasets, 384-d)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from gpu_mixture import mixture_gpu, text_like_gpu  # noqa: PLC0415 - a sibling script

    if device == "gpu":
        X = text_like_gpu(n, seed=0, dim=dim) if data == "text_like" else mixture_gpu(n, dim, seed=0)[0]
        return X.get()
    if data == "text_like":
        from umapviz import datasets  # noqa: PLC0415 - child process only

        return datasets.load("text_like", n_samples=n, random_state=0)[0]
    return mixture_gpu(n, dim, seed=0, xp=np)[0]


def _stage(name: str, seconds: float | None = None) -> None:
    """A finished stage (or a figure) on stderr at once: a run killed by its time limit still shows how far it got."""
    took = "" if seconds is None else f": {seconds:.2f} s"
    print(f"  [{time.strftime('%H:%M:%S')}] {name}{took}", file=sys.stderr, flush=True)


def _sync(device: str) -> None:
    if device == "gpu":
        import cupy as cp  # noqa: PLC0415 - GPU runs only

        cp.cuda.Device().synchronize()


def one_size(args) -> dict:
    """The staged fit of one size (in this process)."""
    from clusterwise import graph_from_knn  # noqa: PLC0415

    from umapviz import LayoutOptimizer  # noqa: PLC0415 - child process only: a fresh import per size
    from umapviz._host_data import to_device  # noqa: PLC0415
    from umapviz.graph.build_gpu import check_graph_fits, graph_on_gpu  # noqa: PLC0415
    from umapviz.graph.knn import resolve_knn_method  # noqa: PLC0415
    from umapviz.graph.knn.knn_cpu import nearest_neighbors  # noqa: PLC0415
    from umapviz.graph.knn.partitioned import partitioned_knn, resolve_partitioning  # noqa: PLC0415
    from umapviz.graph.knn.recall import recall_at_k  # noqa: PLC0415
    from umapviz.graph.params import GraphParams  # noqa: PLC0415
    from umapviz.graph.start import SAMPLED_ABOVE, spectral_init  # noqa: PLC0415
    from umapviz.metrics import outliers, trustworthiness  # noqa: PLC0415

    n, k, device, seed = args.one, 15, args.device, 0
    made = time.perf_counter()
    X = make_data(n, args.data, device, args.dim)
    _stage(f"data {X.shape[0]:,} x {X.shape[1]} made", time.perf_counter() - made)
    method = resolve_knn_method(args.knn, *X.shape, device=device)
    row: dict = {"n": n, "d": int(X.shape[1]), "knn": method, "data": args.data}
    parts = resolve_partitioning(n, k, args.partitions, args.overlap) if method.startswith("partitioned") else None
    if parts is not None:
        row.update(partitions=parts[0], overlap=parts[1], refine=args.refine)
    stages: dict = {}
    _sync(device)
    t0 = time.perf_counter()
    if device == "gpu":
        import cupy as cp  # noqa: PLC0415 - GPU runs only

        check_graph_fits(n, X.shape[1], k, method, *(parts or (1, 1)), data_on_device=not args.host_data)
        params = GraphParams.for_data(n, n_neighbors=k, metric="euclidean", knn=method)
        partitioning = (
            dict(
                n_partitions=parts[0],
                overlap=parts[1],
                random_state=seed,
                data_on_device=not args.host_data,
                refine=args.refine,
            )
            if parts
            else None
        )
        graph = graph_on_gpu(X, params, timings=stages, partitioning=partitioning)
        knn_s = stages["knn"]
    else:
        if parts is not None:
            idx, dist = partitioned_knn(
                X, k, n_partitions=parts[0], overlap=parts[1], random_state=seed, refine=args.refine, timings=stages
            )
        else:
            idx, dist = nearest_neighbors(X, k, method=method, random_state=seed, progress=False)
        knn_s = time.perf_counter() - t0
        graph = graph_from_knn(idx, dist, knn=method)
    _sync(device)
    t1 = time.perf_counter()
    _stage(f"kNN {knn_s:.2f} s, graph", t1 - t0 - knn_s)
    if parts is not None:  # the rounds run ("auto" resolved by the search)
        row["refine"] = len(stages.get("knn_refine_rounds", stages.get("refine_rounds", [])))
    start = spectral_init(graph, 2, seed, device=device)
    _sync(device)
    t2 = time.perf_counter()
    _stage("start", t2 - t1)
    if args.both_starts:  # the warm-up compiles the other start's kernels too
        spectral_init(graph, 2, seed, device=device, method="sampled" if n <= SAMPLED_ABOVE else "full")
    opt = LayoutOptimizer(graph, strategy="chunked", n_chunks="auto", random_state=seed, init=start, device=device)
    frames: list = []
    if args.frames_every:
        from umapviz.render.frame import image, warm_up  # noqa: PLC0415 - only when frames are asked for

        warm_up(device)

        def live_frame(optimizer, _record):  # what a live view draws: the whole layout, 800 x 800
            began = time.perf_counter()
            image(
                optimizer.device_embedding if device == "gpu" else optimizer.embedding,
                width=800,
                height=800,
                view="robust",
            )
            _sync(device)
            frames.append(time.perf_counter() - began)

    opt.run(callback=live_frame if args.frames_every else None, every=args.frames_every or 1)
    _sync(device)
    t3 = time.perf_counter()
    _stage("layout", t3 - t2)
    if frames:
        row.update(frames=len(frames), frame_ms=1000 * float(np.median(frames)))
    row.update(
        knn_s=knn_s,
        graph_s=t1 - t0 - knn_s,
        start_s=t2 - t1,
        layout_s=t3 - t2,
        total_s=t3 - t0,
        stages={key: value for key, value in stages.items() if key != "knn"},
    )
    if device == "gpu":
        row.update(peak_gpu_gib=cp.get_default_memory_pool().total_bytes() / 2**30)
    print(f"  fit: {json.dumps(row)}", file=sys.stderr, flush=True)  # kept should a check below fail or time out
    emb = opt.device_embedding.copy() if device == "gpu" else opt.embedding
    del opt  # its edges and schedule: GPU memory the checks below need at 30M points
    if device == "gpu":
        cp.get_default_memory_pool().free_all_blocks()
    if args.fling_check:  # hogwild from the same start is the reference the chunk study's bounds test uses
        reference = LayoutOptimizer(graph, strategy="hogwild", random_state=seed, init=start, device=device).run()
        ref = reference.device_embedding if device == "gpu" else reference.embedding
        row["flung_bounds"] = int(outliers(emb, method="bounds", reference=ref).sum())
        row["flung_neighbors"] = int(outliers(emb, graph).sum())
        row["hogwild_flung_neighbors"] = int(outliers(ref, graph).sum())
        del reference, ref
        _stage(
            f"flung: {row['flung_bounds']} outside hogwild's bounds, {row['flung_neighbors']} by neighbours "
            f"(hogwild {row['hogwild_flung_neighbors']})"
        )
    data = to_device(X) if device == "gpu" else X
    row["trust"] = trustworthiness(data, emb, sample=min(5000, n), random_state=0)
    _stage(f"trust {row['trust']:.4f}")
    row["recall"] = recall_at_k(data, graph.knn_indices, sample=1000, seed=1, device=device)
    _stage(f"recall {row['recall']:.4f}")
    if device == "gpu":
        free, total = cp.cuda.runtime.memGetInfo()
        row.update(gpu_used_end_gib=(total - free) / 2**30)
    return row


def umap_fit(args) -> dict:
    """Seconds of UMAP(device=..., random_state=0).fit_transform(X) on host data, as a user calls it."""
    from umapviz import UMAP  # noqa: PLC0415 - child process only

    X = make_data(args.one, args.data, args.device, args.dim)
    _sync(args.device)
    t0 = time.perf_counter()
    UMAP(device=args.device, random_state=0, cache=False).fit_transform(X)
    _sync(args.device)
    return {"umap_fit_s": time.perf_counter() - t0}


def markdown(rows: list[dict]) -> str:
    def cell(value):
        return f"{value:.3f}" if isinstance(value, float) else ("" if value is None else str(value))

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(row.get(c)) for c in COLUMNS) + " |" for row in rows]
    return "\n".join(lines)


def child(args, extra: list[str]) -> dict:
    """Run this script for one size in a fresh process; its last stdout line is the JSON row."""
    cmd = [
        sys.executable,
        __file__,
        "--device",
        args.device,
        "--knn",
        args.knn,
        "--data",
        args.data,
        "--partitions",
        str(args.partitions),
        "--overlap",
        str(args.overlap),
        "--refine",
        str(args.refine),
        "--dim",
        str(args.dim),
        "--frames-every",
        str(args.frames_every),
        *extra,
    ]
    if args.fling_check:
        cmd.append("--fling-check")
    if args.host_data:
        cmd.append("--host-data")
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=args.timeout)  # stderr: the stages, live
    if out.returncode != 0:
        return {"error": f"exit {out.returncode} (its traceback is above)"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000", help="comma-separated point counts")
    parser.add_argument("--device", default="gpu", choices=("cpu", "gpu"))
    parser.add_argument("--knn", default="approx", choices=("auto", "exact", "approx", "partitioned"))
    parser.add_argument("--data", default="mixture", choices=("mixture", "text_like"))
    parser.add_argument("--dim", type=int, default=384, help="columns of the data (the GPU's recipes)")
    parser.add_argument(
        "--warmup",
        type=int,
        default=0,
        help="first fit this many points in a fresh process, untimed: CuPy's and Numba's on-disk "
        "caches then hold the compiled kernels, as after a user's first fit (0: cold caches)",
    )
    parser.add_argument("--partitions", default="auto", help="knn_partitions (int or auto)")
    parser.add_argument("--overlap", type=int, default=2)
    parser.add_argument("--refine", default="auto", help="knn_refine: rounds of refinement (int) or auto")
    parser.add_argument("--host-data", action="store_true", help="keep X on the host during the graph build")
    parser.add_argument("--umap-fit", action="store_true", help="also time UMAP().fit_transform per size")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--out", default=None)
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--frames-every",
        type=int,
        default=0,
        help="render a live view's frame (800 x 800, the whole layout) every this many epochs of the "
        "layout, inside its time (frame_ms: the median frame)",
    )
    parser.add_argument(
        "--fling-check",
        action="store_true",
        help="after the fit, count the points chunked('auto') flung: outside hogwild's bounds from "
        "the same start (metrics.outliers 'bounds'), and by the 'neighbors' measure",
    )
    parser.add_argument("--both-starts", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--fit-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.partitions != "auto":
        args.partitions = int(args.partitions)
    if args.refine != "auto":
        args.refine = int(args.refine)
    if args.one is not None:  # the child
        print(json.dumps(umap_fit(args) if args.fit_only else one_size(args)), flush=True)
        return
    rows = []
    if args.warmup:
        t = time.perf_counter()
        warm = child(args, ["--one", str(args.warmup), "--both-starts"])
        print(
            f"[{time.strftime('%H:%M:%S')}] warm-up, n={args.warmup:,}: {json.dumps(warm)} "
            f"({time.perf_counter() - t:.0f} s)",
            flush=True,
        )
    for n in (int(s) for s in args.sizes.split(",") if s):
        t = time.perf_counter()
        row = child(args, ["--one", str(n)])
        if args.umap_fit and "error" not in row:
            row.update(child(args, ["--one", str(n), "--fit-only"]))
        row.setdefault("n", n)
        row["caches"] = "warm" if args.warmup else "cold"
        print(f"[{time.strftime('%H:%M:%S')}] n={n:,}: {json.dumps(row)} ({time.perf_counter() - t:.0f} s)", flush=True)
        rows.append(row)
        if args.out:
            Path(args.out).mkdir(parents=True, exist_ok=True)
            with open(Path(args.out) / "results.jsonl", "a") as fh:
                fh.write(json.dumps(row) + "\n")
    table = markdown(rows)
    if args.out:
        (Path(args.out) / "results.md").write_text(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
