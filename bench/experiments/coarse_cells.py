"""Exact search inside coarse k-means cells as a lever for round clusters at 10M: the share of true neighbours that
lie in a point's cell (overlap 1) or in a cell of its two nearest centroids shared with the query (overlap 2), and
the work against the exact search's (``sum of squared cell shares``, times 4 for overlap 2), from k-means
centroids alone (no search, no size cap; CPU).

500 sampled rows (seed 1), their 14 true neighbours (brute force); k-means: scikit-learn, 10 iterations on 64 rows
per centroid.

    PYTHONPATH=. python bench/experiments/coarse_cells.py
"""

import numpy as np
from sklearn.cluster import KMeans

from umapviz import datasets
from umapviz.graph.knn.recall import sampled_truth

for name, n in [("mixture", 100000), ("gaussian", 50000)]:
    X = np.ascontiguousarray(datasets.load(name, n_samples=n, random_state=0)[0], dtype=np.float32)
    rows, truth = sampled_truth(X, 15, 500, seed=1)
    for P in (4, 8, 16, 32, 64):
        rng = np.random.default_rng(0)
        km = KMeans(P, n_init=1, max_iter=10, random_state=0).fit(X[rng.choice(n, min(n, 64 * P), replace=False)])
        C = km.cluster_centers_.astype(np.float32)
        d2 = (X * X).sum(1)[:, None] - 2 * X @ C.T + (C * C).sum(1)[None]
        order = np.argsort(d2, axis=1)[:, :2]
        share = np.bincount(order[:, 0], minlength=P) / n
        ov1 = np.mean([np.mean([order[x, 0] == order[q, 0] for x in t[1:]]) for q, t in zip(rows, truth, strict=True)])
        ov2 = np.mean(
            [np.mean([len(set(order[q]) & set(order[x])) > 0 for x in t[1:]]) for q, t in zip(rows, truth, strict=True)]
        )
        work1 = float((share**2).sum())
        print(
            f"{name} n={n} cells={P}: overlap 1 ceiling {ov1:.3f} work {work1:.3f} of exact; "
            f"overlap 2 ceiling {ov2:.3f} work <= {min(1.0, 4 * work1):.3f}; largest cell {share.max():.3f}",
            flush=True,
        )
