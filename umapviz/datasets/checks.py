"""Checks every loader shares: the requested size, the memory a generator needs, subsampling, and the
normalised result (float32 (n, d) data, int64 (n,) labels)."""

from __future__ import annotations

import os

import numpy as np

from .._validation import is_integer, warn_float32_loss
from .cells import _refuse_missing_labels
from .generators import Loader


def _check_label_column_type(label_column: object) -> None:
    if label_column is not None and not isinstance(label_column, str):
        raise TypeError(f"label_column must be a column name (str) or None, got {type(label_column).__name__}.")


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
    if not is_integer(n_samples) or n_samples < 1:
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
