"""The CPU kNN of umap-learn's other metrics against pynndescent on the same data: seconds of
``build_graph``'s search with ``knn="auto"`` (what a fit runs) beside pynndescent's NNDescent with umap-learn's
settings, and the search's recall against the exact neighbours of sampled rows.

Usage: ``PYTHONPATH=$PWD .venv/bin/python bench/knn_metrics.py [--n 100000] [--d 100] [--metrics manhattan,...]``
(Gaussian clusters; the first call of each metric compiles Numba code, so each is run once untimed on 2,000 rows).
Each side runs ``--rounds`` times in the order pynndescent, umapviz, umapviz, pynndescent, ... and its fastest run
counts: on a shared machine a neighbour's burst of work then slows both sides alike, or neither.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from pynndescent import NNDescent

from umapviz.graph.knn import resolve_knn_method
from umapviz.graph.knn.metric_cpu import approx_metric_knn, cdist_block, exact_metric_knn, select_rows


def data(n: int, d: int, metric: str) -> np.ndarray:
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=4, size=(20, d))
    X = (centres[rng.integers(0, 20, n)] + rng.normal(size=(n, d))).astype(np.float32)
    if metric in ("hamming", "jaccard"):
        return (X > 0).astype(np.float32)
    return np.abs(X) if metric == "hellinger" else X


def search(X: np.ndarray, k: int, metric: str, kwds: dict) -> np.ndarray:
    method = resolve_knn_method("auto", *X.shape, metric=metric)
    if method == "exact":
        return exact_metric_knn(X, k, metric, kwds)[0]
    return approx_metric_knn(X, k, metric, kwds, random_state=0)[0]


def pynndescent(X: np.ndarray, k: int, metric: str, kwds: dict) -> np.ndarray:
    n = X.shape[0]
    index = NNDescent(
        X,
        n_neighbors=k,
        metric=metric,
        metric_kwds=kwds or None,
        random_state=0,
        n_trees=min(64, 5 + int(round(n**0.5 / 20.0))),
        n_iters=max(5, int(round(np.log2(n)))),
        max_candidates=60,
        low_memory=True,
        compressed=True,
        n_jobs=1,
    )
    return index.neighbor_graph[0]


def recall(found: np.ndarray, X: np.ndarray, k: int, metric: str, kwds: dict, sample: int = 200) -> float:
    rows = np.random.default_rng(1).choice(len(X), sample, replace=False)
    truth, _ = select_rows(cdist_block(X[rows], X, metric, kwds), k, rows)
    return float(np.mean([len(set(found[r]) & set(t)) / k for r, t in zip(rows, truth, strict=True)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=100)
    parser.add_argument("--k", type=int, default=15)
    parser.add_argument("--metrics", default="manhattan,chebyshev,minkowski,correlation,hamming,jaccard,hellinger")
    parser.add_argument("--rounds", type=int, default=2, help="timed runs of each side (default 2)")
    args = parser.parse_args()
    print("| metric | umapviz knn='auto' (s) | pynndescent (s) | ratio | recall umapviz | recall pynndescent |")
    print("|---|---|---|---|---|---|")
    for metric in args.metrics.split(","):
        kwds = {"p": 3.0} if metric == "minkowski" else {}
        warm = data(2000, args.d, metric)
        search(warm, args.k, metric, kwds), pynndescent(warm, args.k, metric, kwds)
        X = data(args.n, args.d, metric)
        seconds: dict[str, list[float]] = {"ours": [], "theirs": []}
        for round_ in range(args.rounds):
            for side in ("theirs", "ours") if round_ % 2 == 0 else ("ours", "theirs"):
                start = time.perf_counter()
                if side == "ours":
                    ours = search(X, args.k, metric, kwds)
                else:
                    theirs = pynndescent(X, args.k, metric, kwds)
                seconds[side].append(time.perf_counter() - start)
        t_ours, t_theirs = min(seconds["ours"]), min(seconds["theirs"])
        r_ours, r_theirs = recall(ours, X, args.k, metric, kwds), recall(theirs, X, args.k, metric, kwds)
        print(f"| {metric} | {t_ours:.1f} | {t_theirs:.1f} | {t_ours / t_theirs:.2f} | {r_ours:.3f} | {r_theirs:.3f} |")


if __name__ == "__main__":
    main()
