"""Recall and seconds of the partitioned kNN (umapviz.graph.knn.partitioned), by partition size, overlap and rounds of
neighbourhood refinement (umapviz.graph.knn.refine), on the CPU or the GPU.

    PYTHONPATH=. python bench/partitioned_recall.py --sets clusters:50000 gaussian:50000 --rows 2048,8192 \
        --overlaps 2,3 --refine 2 --out bench/partitioned_recall.jsonl                                    (CPU)
    PYTHONUNBUFFERED=1 PYTHONPATH=. python3 bench/partitioned_recall.py --device gpu \
        --sets mixture_gpu:1000000 text_like_gpu:1000000 --rows 16384 --overlaps 2 --refine 2 --out $OUT/r.jsonl

Sets: the kit's data sets by name (umapviz.datasets, made with NumPy), or on the GPU ``mixture_gpu`` (the GPU
benches' 384-d mixture, bench/gpu_mixture.py) and ``text_like_gpu`` (the recipe of the kit's text_like, drawn with
CuPy: 384-d unit vectors from anisotropic topics), made on the device. Each configuration runs the partitioned
search without refinement, then refinement rounds one at a time; a line of --out per stage: data set, n, d, rows
per partition, overlap, independent partitionings (repeats), rounds, partitions, largest partition, seconds of the
search's stages (plan, searches, merge; GPU synchronised), of the refinement rounds so far, the kNN total, recall@15
on --sample sampled rows
against brute force (umapviz.graph.knn.recall.recall_at_k's measure, one exact search per data set, on the device), and
the data's contrast: the k-th true neighbour's distance over the median distance, averaged over the sampled rows
(near 1: distances concentrate).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from umapviz import datasets
from umapviz.graph.knn import partitioned
from umapviz.graph.knn.recall import recall_from_truth, sampled_truth
from umapviz.graph.knn.refine import refine_knn


def load(name: str, n: int, device: str):
    """(n, d) float32 data on the device."""
    if name == "mixture_gpu":
        sys.path.insert(0, str(Path(__file__).parent))
        from gpu_mixture import mixture_gpu  # noqa: PLC0415 - a sibling script

        return mixture_gpu(n, 384, seed=0)[0]
    if name == "text_like_gpu":
        sys.path.insert(0, str(Path(__file__).parent))
        from gpu_mixture import text_like_gpu  # noqa: PLC0415 - a sibling script

        return text_like_gpu(n)
    X, _ = datasets.load(name, n_samples=n or None, random_state=0)
    X = np.ascontiguousarray(X, dtype=np.float32)
    if device == "gpu":
        import cupy as cp  # noqa: PLC0415 - GPU runs only

        return cp.asarray(X)
    return X


def contrast(X, rows, truth) -> float:
    """Mean over the sampled rows of (distance to the k-th true neighbour) / (median distance to the sampled rows):
    near 1, distances concentrate and near is barely nearer than far (any cut of the data loses neighbours)."""
    xp = np if isinstance(X, np.ndarray) else sys.modules["cupy"]
    Q = X[xp.asarray(rows)].astype(xp.float64)
    sq = (Q * Q).sum(axis=1)
    far = xp.sqrt(xp.maximum(sq[:, None] + sq[None, :200] - 2.0 * (Q @ Q[:200].T), 0.0))
    kth = xp.sqrt(((Q - X[xp.asarray(truth[:, -1])].astype(xp.float64)) ** 2).sum(axis=1))
    return float((kth / xp.median(far, axis=1)).mean())


def sync(device: str) -> None:
    if device == "gpu":
        import cupy as cp  # noqa: PLC0415 - GPU runs only

        cp.cuda.Device().synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sets",
        nargs="+",
        default=["clusters:50000"],
        help="name:n (name:0: the whole set); name:n:ROWS[:OVERLAPS[:REFINE[:REPEATS]]] for this set",
    )
    parser.add_argument("--rows", default="2048,8192", help="rows per partition, comma-separated")
    parser.add_argument("--overlaps", default="2,3")
    parser.add_argument("--refine", type=int, default=0, help="refinement rounds measured after the search")
    parser.add_argument("--repeats", default="1", help="independent partitionings, comma-separated")
    parser.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
    parser.add_argument("--k", type=int, default=15)
    parser.add_argument("--sample", type=int, default=1000)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    metric = "euclidean"
    for item in args.sets:
        name, n, *tail = item.split(":")
        rows_list, overlaps, rounds_most, repeat_list = (
            tail + [args.rows, args.overlaps, args.refine, args.repeats][len(tail) :]
        )[:4]
        t = time.perf_counter()
        X = load(name, int(n), args.device)
        sync(args.device)
        made = time.perf_counter() - t
        truth = sampled_truth(X, args.k, args.sample, seed=1, metric=metric, device=args.device)
        ratio = round(contrast(X, *truth), 3)
        configs = [
            (int(r), int(o), int(p))
            for r in str(rows_list).split(",")
            for o in str(overlaps).split(",")
            for p in str(repeat_list).split(",")
        ]
        for rows, overlap, repeats in configs:
            n_partitions = max(1, -(-X.shape[0] // rows))
            timings: dict = {}
            sync(args.device)
            t0 = time.perf_counter()
            idx, _ = partitioned.partitioned_knn(
                X,
                args.k,
                metric,
                n_partitions=n_partitions,
                overlap=overlap,
                random_state=0,
                timings=timings,
                device=args.device,
                return_device=True,
                refine=0,
                repeats=repeats,
            )
            sync(args.device)
            search = time.perf_counter() - t0
            refined = 0.0
            for rounds in range(int(rounds_most) + 1):
                if rounds:
                    sync(args.device)
                    t1 = time.perf_counter()
                    idx, _ = refine_knn(X, idx, 1, metric, args.device)
                    sync(args.device)
                    refined += time.perf_counter() - t1
                recall = recall_from_truth(idx, *truth)
                row = {
                    "data": name,
                    "n": int(X.shape[0]),
                    "d": int(X.shape[1]),
                    "rows_per_partition": rows,
                    "overlap": overlap,
                    "repeats": repeats,
                    "refine": rounds,
                    "partitions": timings["n_partitions"],
                    "largest": timings["largest_partition"],
                    **{key: round(timings[key], 3) for key in ("plan", "searches", "merge")},
                    "search_s": round(search, 3),
                    "refine_s": round(refined, 3),
                    "knn_s": round(search + refined, 3),
                    "recall": round(recall, 4),
                    "contrast": ratio,
                    "device": args.device,
                    "made_s": round(made, 1),
                    "machine": f"{platform.node()} {os.cpu_count()} cores",
                }
                print(json.dumps(row), flush=True)
                if args.out:
                    with open(args.out, "a") as fh:
                        fh.write(json.dumps(row) + "\n")
        del X


if __name__ == "__main__":
    main()
