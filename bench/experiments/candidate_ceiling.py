"""Which candidate scheme could reach recall at the least work: the share of true neighbours a scheme can find at
all (its ceiling before any search), from k-means centroids' rankings alone (no search).

For 500 sampled rows (seed 1) and their 14 true neighbours (brute force): ``ov{o}``, the partitioned search's rule
(a pair is searched when the two points share one of their ``o`` nearest centroids; work ``o**2`` per point and
partition row); ``ivf{p}``, an inverted file with ``p`` probes (each point in its nearest centroid's list; a query
searches the lists of its ``p`` nearest centroids; work ``p``); ``ivf{p}sym``, either direction (what the reverse
neighbours of a symmetrised graph add). k-means: scikit-learn, 10 iterations on 64 rows per centroid.

    PYTHONPATH=. python bench/experiments/candidate_ceiling.py
"""

import numpy as np
from sklearn.cluster import KMeans

from umapviz import datasets
from umapviz.graph.knn.recall import sampled_truth

for name, n in [("mixture", 50000), ("mixture", 100000), ("gaussian", 50000), ("text_like", 50000)]:
    X = np.ascontiguousarray(datasets.load(name, n_samples=n, random_state=0)[0], dtype=np.float32)
    rows, truth = sampled_truth(X, 15, 500, seed=1)
    for rpp in (1024, 2048):
        P = n // rpp
        rng = np.random.default_rng(0)
        km = KMeans(P, n_init=1, max_iter=10, random_state=0).fit(X[rng.choice(n, min(n, 64 * P), replace=False)])
        C = km.cluster_centers_.astype(np.float32)
        d2 = (X * X).sum(1)[:, None] - 2 * X @ C.T + (C * C).sum(1)[None]
        order = np.argsort(d2, axis=1)[:, :8]
        res = {}
        for o in (2, 3):
            top = order[:, :o]
            hit = [
                np.mean([len(set(top[q]) & set(top[x])) > 0 for x in t[1:]]) for q, t in zip(rows, truth, strict=True)
            ]
            res[f"ov{o}(cost {o * o})"] = round(float(np.mean(hit)), 3)
        for p in (2, 4, 8):
            hit = [np.mean([order[x, 0] in order[q, :p] for x in t[1:]]) for q, t in zip(rows, truth, strict=True)]
            res[f"ivf{p}(cost {p})"] = round(float(np.mean(hit)), 3)
        # symmetric ivf: x in q's top-p lists OR q in x's top-p (union of both directions, graph symmetrised)
        for p in (2, 4):
            hit = [
                np.mean([(order[x, 0] in order[q, :p]) or (order[q, 0] in order[x, :p]) for x in t[1:]])
                for q, t in zip(rows, truth, strict=True)
            ]
            res[f"ivf{p}sym"] = round(float(np.mean(hit)), 3)
        print(name, n, rpp, res, flush=True)
