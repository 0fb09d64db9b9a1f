"""The CPU kNN of umap-learn's other metrics against pynndescent on the same data: seconds of
``build_graph``'s search with ``knn="auto"`` (what a fit runs) beside pynndescent's NNDescent with umap-learn's
settings, and the search's recall against the exact neighbours of sampled rows.

Usage: ``PYTHONPATH=$PWD .venv/bin/python bench/knn_metrics.py [--n 100000] [--d 100] [--metrics manhattan,...]
[--data gaussian|mixture|binary]`` (:func:`data`; minkowski with p = 3; the first call of each metric compiles Numba
code, so each is run once untimed on 2,000 rows).
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


def data(n: int, d: int, metric: str, kind: str = "gaussian") -> np.ndarray:
    """``kind`` "gaussian": 20 equal round clusters; "mixture": 30 clusters of Zipf-law sizes whose centres sit
    about as far apart as their points (the kit's "mixture" data set, in d dimensions); "binary": 0/1 rows of 20
    clusters, each feature on with a cluster's own probability (mean 0.1: sparse, as text or presence data).
    hamming and jaccard on the first two read the signs (X > 0), hellinger their magnitudes."""
    rng = np.random.default_rng(0)
    if kind == "binary":
        odds = rng.beta(0.5, 4.5, size=(20, d))
        return (rng.random((n, d)) < odds[rng.integers(0, 20, n)]).astype(np.float32)
    if kind == "mixture":
        weights = 1.0 / np.arange(1, 31)
        labels = rng.choice(30, n, p=weights / weights.sum())
        X = (rng.normal(scale=0.5, size=(30, d))[labels] + rng.normal(size=(n, d))).astype(np.float32)
    else:
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
    parser.add_argument("--data", default="gaussian", choices=("gaussian", "mixture", "binary"))
    parser.add_argument("--sample", type=int, default=200, help="rows whose exact neighbours measure recall")
    args = parser.parse_args()
    print("| data | metric | umapviz knn='auto' (s) | pynndescent (s) | ratio | recall umapviz | recall pynndescent |")
    print("|---|---|---|---|---|---|---|")
    for metric in args.metrics.split(","):
        kwds = {"p": 3.0} if metric == "minkowski" else {}
        warm = data(2000, args.d, metric)
        # both of umapviz's searches: 2,000 rows pick the exact one, and the approximate one's candidate search may
        # run another metric than pynndescent's (compiled on its first call)
        search(warm, args.k, metric, kwds), pynndescent(warm, args.k, metric, kwds)
        approx_metric_knn(warm, args.k, metric, kwds, random_state=0)
        X = data(args.n, args.d, metric, args.data)
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
        r_ours = recall(ours, X, args.k, metric, kwds, args.sample)
        r_theirs = recall(theirs, X, args.k, metric, kwds, args.sample)
        r = t_ours / t_theirs
        print(f"| {args.data} | {metric} | {t_ours:.1f} | {t_theirs:.1f} | {r:.2f} | {r_ours:.3f} | {r_theirs:.3f} |")


if __name__ == "__main__":
    main()
