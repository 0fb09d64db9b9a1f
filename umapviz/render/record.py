"""Recordings: embeddings at chosen epochs (with labels, outlier masks, metadata), saved and checked.

A recording is saved as a compressed ``.npz`` with no pickled objects: numeric arrays, metadata as UTF-8
JSON bytes, and a SHA-256 over every array's name, dtype, shape and bytes. The file is written to a
temporary name and moved into place, so a crash never leaves half a file under the real name; on load the
checksum is recomputed, so a damaged file fails with a clear error instead of replaying wrong frames.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from umapviz._backend import to_host
from umapviz._files import NPZ_MAGIC, atomic_write, check_magic, load_npz
from umapviz._validation import is_integer
from umapviz.render.aggregate import check_labels, check_outliers

FORMAT = "umapviz-recording"
FORMAT_VERSION = 1


class RecordingError(ValueError):
    """A recording file that cannot be read back: damaged, truncated, or not a umapviz recording."""


@dataclass(frozen=True)
class Frame:
    """One recorded epoch."""

    epoch: int
    embedding: np.ndarray  # (N, 2) float32
    outliers: np.ndarray | None  # (N,) bool, or None when not recorded


class Recording:
    """Embeddings of one run at chosen epochs, kept on the host.

    >>> rec = Recording(labels=codes, metadata={"strategy": "buffered", "n_chunks": 1})
    >>> rec.add(epoch, embedding, outliers=mask)     # e.g. from an optimizer callback
    >>> rec.save("run.npz"); Recording.load("run.npz")
    """

    def __init__(self, labels: Any = None, metadata: dict | None = None) -> None:
        self.labels = None if labels is None else np.asarray(to_host(labels))
        if self.labels is not None and self.labels.dtype.kind not in "iu":
            raise ValueError(f"labels must be integer codes; got dtype {self.labels.dtype}.")
        self.metadata = dict(metadata or {})
        _check_json(self.metadata)
        self._epochs: list[int] = []
        self._embeddings: list[np.ndarray] = []
        self._outliers: list[np.ndarray | None] = []

    # -- building ---------------------------------------------------------------------------------------
    def add(self, epoch: int, embedding: Any, outliers: Any = None) -> None:
        """Record ``embedding`` (N, 2; NumPy or CuPy, copied to the host as float32) at ``epoch``."""
        source = to_host(embedding)
        with np.errstate(over="ignore"):  # values beyond float32 are refused below, with a message of our own
            emb = np.array(source, dtype=np.float32)  # a copy: the optimizer keeps moving its array
        if np.isinf(emb).any() and np.isfinite(np.asarray(source, dtype=np.float64)[np.isinf(emb)]).any():
            raise ValueError(
                "the embedding has finite values beyond float32's range (about 3.4e38), which a recording would "
                "store as infinite, like a diverged point: scale it down before recording it."
            )
        if emb.ndim != 2 or emb.shape[1] != 2:
            raise ValueError(f"a recorded embedding must have shape (N, 2); got {tuple(emb.shape)}.")
        if self._embeddings and emb.shape != self._embeddings[0].shape:
            raise ValueError(
                f"all frames must have the same shape; got {tuple(emb.shape)} after {tuple(self._embeddings[0].shape)}."
            )
        if self.labels is not None and self.labels.shape != (emb.shape[0],):
            raise ValueError(f"labels have shape {self.labels.shape}, but the embedding has {emb.shape[0]} rows.")
        if not is_integer(epoch):
            raise TypeError(f"epoch must be a whole number, got {epoch!r}.")  # 1.7 was silently recorded as 1
        if self._epochs and int(epoch) <= self._epochs[-1]:
            raise ValueError(f"epochs must increase; got {epoch} after {self._epochs[-1]}.")
        if self.labels is not None and not self._embeddings:  # bad codes fail here, not when the frames are drawn
            check_labels(self.labels, emb.shape[0], None)
        # A mask, or point indices as image() takes them; stored as a mask.
        mask = None if outliers is None else to_host(check_outliers(outliers, emb.shape[0]))
        self._epochs.append(int(epoch))
        self._embeddings.append(emb)
        self._outliers.append(mask)

    def recorder(self, outliers: Callable[[Any], Any] | None = None) -> Callable[[Any, Any], None]:
        """A callback for ``LayoutOptimizer.run(callback=..., every=k)`` that records each call's epoch.

        outliers: optional function embedding -> boolean mask, evaluated on each recorded frame.
        >>> opt.run(callback=rec.recorder(lambda y: metrics.outliers(y, method="bounds", reference=ref)), every=10)
        """

        def record(optimizer: Any, epoch_record: Any) -> None:
            embedding = optimizer.embedding
            self.add(epoch_record.epoch, embedding, outliers=None if outliers is None else outliers(embedding))

        return record

    # -- reading ----------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._epochs)

    def __getitem__(self, i: int) -> Frame:
        return Frame(self._epochs[i], self._embeddings[i], self._outliers[i])

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    @property
    def epochs(self) -> np.ndarray:
        return np.array(self._epochs, dtype=np.int64)

    @property
    def n_points(self) -> int:
        return int(self._embeddings[0].shape[0]) if self._embeddings else 0

    def outlier_counts(self) -> np.ndarray:
        """Outliers per frame (-1 where a frame has no outlier mask)."""
        return np.array([-1 if m is None else int(m.sum()) for m in self._outliers], dtype=np.int64)

    # -- files ------------------------------------------------------------------------------------------
    def _arrays(self) -> dict[str, np.ndarray]:
        if not self._epochs:
            raise ValueError("the recording is empty: add() at least one frame before saving.")
        arrays = {
            "format": np.frombuffer(FORMAT.encode(), dtype=np.uint8),
            "format_version": np.array(FORMAT_VERSION, dtype=np.int64),
            "epochs": self.epochs,
            "embeddings": np.stack(self._embeddings),
            "metadata": np.frombuffer(json.dumps(self.metadata, sort_keys=True).encode(), dtype=np.uint8),
        }
        if self.labels is not None:
            arrays["labels"] = self.labels
        recorded = [m is not None for m in self._outliers]
        if any(recorded):
            n = self.n_points
            arrays["outliers"] = np.stack([np.zeros(n, bool) if m is None else m for m in self._outliers])
            arrays["outliers_recorded"] = np.array(recorded)
        return arrays

    def save(self, path: str | os.PathLike) -> Path:
        """Write a compressed, checksummed .npz atomically; returns the path."""
        path = Path(path).expanduser()
        if path.suffix.lower() != ".npz":
            raise ValueError(f"a recording is saved as .npz; got {path.name!r}.")
        arrays = self._arrays()
        arrays["checksum"] = np.frombuffer(_checksum(arrays).encode(), dtype=np.uint8)

        def write(tmp: Path) -> None:
            with open(tmp, "wb") as f:  # a file object: given a name, NumPy would append ".npz" to it
                np.savez_compressed(f, **arrays)

        return atomic_write(path, write)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Recording:
        """Read a recording saved by ``save``; raises RecordingError if the file is damaged."""
        path = Path(path).expanduser()
        if not path.exists():
            raise FileNotFoundError(f"no recording at {path}.")
        fix = "Recording.load reads the .npz recording that Recording.save() writes: check the path."
        try:
            # First: given an .npy file, np.load returns an array (no archive); given other bytes, it blames pickles.
            check_magic(path, NPZ_MAGIC, ".npz", fix)
        except ValueError as exc:
            raise RecordingError(str(exc)) from exc
        try:
            arrays = load_npz(path, fix)
        except (zipfile.BadZipFile, zlib.error, ValueError, OSError, EOFError, KeyError) as exc:
            raise RecordingError(
                f"{path} is not a readable umapviz recording ({exc.__class__.__name__}: {exc}); "
                "the file is damaged or truncated: record the run again."
            ) from exc
        if bytes(arrays.get("format", np.empty(0, np.uint8))).decode(errors="replace") != FORMAT:
            raise RecordingError(f"{path} is an .npz file but not a umapviz recording.")
        version = arrays.get("format_version", np.array(-1))
        if version.shape != () or int(version) != FORMAT_VERSION:
            raise RecordingError(
                f"{path} has recording format version {version.tolist()}; this umapviz reads version {FORMAT_VERSION}."
            )
        stored = bytes(arrays.pop("checksum", np.empty(0, np.uint8))).decode(errors="replace")
        if stored != _checksum(arrays):
            raise RecordingError(
                f"{path} failed its checksum: its contents changed after it was written (damaged file); "
                "record the run again."
            )
        try:  # intact, yet its parts may not fit together (another writer, a bug): refused, not half read
            return cls._from_arrays(arrays)
        except (ValueError, TypeError, KeyError, IndexError) as exc:  # JSON and UTF-8 errors are ValueErrors
            raise RecordingError(
                f"{path} is not a consistent umapviz recording ({exc.__class__.__name__}: {exc}); record the run again."
            ) from exc

    @classmethod
    def _from_arrays(cls, arrays: dict[str, np.ndarray]) -> Recording:
        metadata = json.loads(bytes(arrays["metadata"]).decode())
        if not isinstance(metadata, dict):
            raise TypeError(f"its metadata is a {type(metadata).__name__}, not a dict")
        epochs, embeddings = arrays["epochs"], arrays["embeddings"]
        recorded = arrays.get("outliers_recorded")
        frames = {"epochs": epochs, "embeddings": embeddings, "outliers_recorded": recorded}
        lengths = {name: len(a) for name, a in frames.items() if a is not None and a.ndim}
        if epochs.ndim != 1 or len(set(lengths.values())) != 1:
            raise ValueError(f"its frame counts disagree: {lengths}")
        rec = cls(labels=arrays.get("labels"), metadata=metadata)
        for i, epoch in enumerate(epochs):
            mask = arrays["outliers"][i] if recorded is not None and recorded[i] else None
            rec.add(int(epoch), embeddings[i], outliers=mask)
        return rec


def _checksum(arrays: dict[str, np.ndarray]) -> str:
    digest = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        digest.update(a.tobytes())
    return digest.hexdigest()


def _check_json(metadata: dict) -> None:
    try:
        json.dumps(metadata)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"metadata must be JSON-serializable (numbers, strings, lists, dicts): {exc}. "
            "Convert NumPy values with int()/float()/.tolist()."
        ) from exc
