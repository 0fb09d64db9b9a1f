"""Recall of the partitioned kNN (umapviz.graph.partitioned) on the kit's data sets, by partition size and overlap.

    PYTHONPATH=. python bench/partitioned_recall.py --sets clusters:50000 gaussian:50000 --rows 2048,8192 \
        --overlaps 2,3 --out bench/partitioned_recall.jsonl

Each line of --out: data set, n, d, rows per partition, overlap, partitions, largest partition, seconds (CPU),
recall@15 on 1,000 sampled rows against brute force (umapviz.graph.recall.recall_at_k).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

from umapviz import datasets
from umapviz.graph import partitioned
from umapviz.graph.recall import recall_at_k


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["clusters:50000"], help="name:n (name:0 for the whole set)")
    parser.add_argument("--rows", default="2048,8192", help="rows per partition, comma-separated")
    parser.add_argument("--overlaps", default="2,3")
    parser.add_argument("--k", type=int, default=15)
    parser.add_argument("--sample", type=int, default=1000)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    for item in args.sets:
        name, n = item.split(":")
        X, _ = datasets.load(name, n_samples=int(n) or None, random_state=0)
        metric = "euclidean"
        for rows in (int(r) for r in args.rows.split(",")):
            for overlap in (int(o) for o in args.overlaps.split(",")):
                n_partitions = max(1, -(-X.shape[0] // rows))
                timings: dict = {}
                t0 = time.perf_counter()
                idx, _ = partitioned.partitioned_knn(X, args.k, metric, n_partitions=n_partitions, overlap=overlap,
                                                     random_state=0, timings=timings)
                seconds = time.perf_counter() - t0
                recall = recall_at_k(X, idx, args.sample, seed=1, metric=metric)
                row = {"data": name, "n": int(X.shape[0]), "d": int(X.shape[1]), "rows_per_partition": rows,
                       "overlap": overlap, "partitions": timings["n_partitions"],
                       "largest": timings["largest_partition"], "seconds": round(seconds, 2),
                       "recall": round(recall, 4), "machine": f"{platform.node()} {os.cpu_count()} cores"}
                print(json.dumps(row), flush=True)
                if args.out:
                    with open(args.out, "a") as fh:
                        fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
