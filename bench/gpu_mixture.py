"""The data of the GPU benches, made on the GPU: a 384-d Gaussian mixture of Zipf-sized clusters far apart, and the
kit's text_like recipe (the host's generator would take minutes at ten million rows).

Shared by bench/gpu_bench.py and bench/chunk_study.py (dataset "mixture_gpu"). Its clusters lie far apart
(centres ~N(0, 4) per coordinate: ~55 units between centres against ~28 between two points of one cluster),
so exact kNN inside each cluster (:func:`clusterwise.knn_within_groups`) is exact kNN of all
points; the benches check that on sampled rows (:func:`clusterwise.knn_agreement`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from umapviz.datasets.generators import _zipf_sizes


def mixture_gpu(n: int, d: int = 384, n_clusters: int = 30, seed: int = 0, xp: Any = None) -> tuple[Any, Any]:
    """``(X float32 (n, d), labels int32 (n,))`` on the GPU (``xp`` None: CuPy), or with ``xp=numpy`` on the
    CPU for tests: the same recipe, other random numbers. The CuPy draws make the GPU benchmarks' graphs."""
    if xp is None:
        import cupy as xp  # noqa: PLC0415 - a GPU machine's module

    # CuPy's legacy RandomState keeps the benchmark graphs' bytes; NumPy's takes no dtype, so the CPU uses a Generator.
    rng = np.random.default_rng([seed, 1]) if xp is np else xp.random.RandomState(seed)
    normal = rng.standard_normal
    sizes = _zipf_sizes(n, n_clusters)
    centres = normal((n_clusters, d), dtype=xp.float32) * xp.float32(2.0)
    labels = xp.repeat(xp.arange(n_clusters, dtype=xp.int32), sizes.tolist())  # a list: CuPy < 14 takes no array
    labels = labels[xp.asarray(np.random.default_rng(seed).permutation(n))]
    X = normal((n, d), dtype=xp.float32)
    X += centres[labels]
    return X, labels


def text_like_gpu(n: int, seed: int = 0, dim: int = 384):
    """(n, dim) float32 CuPy unit rows: the kit's text_like recipe (umapviz.datasets.generators._text_like:
    Zipf-sized topics, each a direction plus a decaying rank-8 spread plus small noise) drawn with CuPy, so other
    random numbers."""
    import cupy as cp  # noqa: PLC0415 - GPU runs only

    rng = cp.random.default_rng(seed)
    n_topics, rank = min(24, max(1, n // 20)), 8
    sizes = _zipf_sizes(n, n_topics, exponent=0.7)
    labels = cp.asarray(np.random.default_rng(seed).permutation(np.repeat(np.arange(n_topics), sizes)))
    centres = rng.standard_normal((n_topics, dim), dtype=cp.float32)
    centres /= cp.linalg.norm(centres, axis=1, keepdims=True)
    bases = rng.standard_normal((n_topics, rank, dim), dtype=cp.float32) / np.float32(np.sqrt(dim))
    scales = cp.asarray(0.6 / np.sqrt(np.arange(1, rank + 1)), dtype=cp.float32)
    X = centres[labels]
    for topic in range(n_topics):
        members = cp.flatnonzero(labels == topic)
        coords = rng.standard_normal((members.size, rank), dtype=cp.float32) * scales
        X[members] += coords @ bases[topic]
    X += rng.standard_normal((n, dim), dtype=cp.float32) * np.float32(0.15 / np.sqrt(dim))
    X /= cp.linalg.norm(X, axis=1, keepdims=True)
    return cp.ascontiguousarray(X, dtype=cp.float32)
