"""On-disk cache of built graphs, keyed by a fingerprint of the data plus every parameter.

One ``.npz`` file per key (``graph-<key>.npz``), written with ``np.savez`` (no pickle) to a temporary file in the
same directory and moved into place with ``os.replace``, so a reader never sees half a file. Each file stores a
format version, its key and a checksum of its arrays; on read, a file that fails to load or whose version, key
or checksum does not match is reported with a ``UserWarning`` and treated as a miss (the caller rebuilds and
rewrites it).

Default directory: ``$UMAPVIZ_CACHE_DIR``; else ``<repo>/data/cache`` when the package sits in a source
checkout (a ``data/`` folder beside the ``umapviz/`` package folder); else ``~/.cache/umapviz``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .._files import atomic_write, load_npz
from .._host_data import row_blocks
from ._types import FuzzyGraph

FORMAT_VERSION = 1
_ARRAYS = ("head", "tail", "weight", "epochs_per_sample", "knn_indices", "knn_dists")
# A temporary file older than this was left by a writer that was killed (SIGKILL, out of memory, power loss)
# before it could remove it; a live writer's is younger (writing even a large graph takes seconds).
STALE_TEMP_SECONDS = 3600


def default_cache_dir() -> Path:
    """Where graphs are cached when ``cache=True`` (see the module docstring)."""
    env = os.environ.get("UMAPVIZ_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    checkout_data = Path(__file__).resolve().parents[2] / "data"
    if checkout_data.is_dir():
        return checkout_data / "cache"
    return Path.home() / ".cache" / "umapviz"


def resolve_cache_dir(cache: bool | str | os.PathLike | None) -> Path | None:
    """``cache`` argument -> a directory, or None for no caching."""
    if cache is None or cache is False:
        return None
    if cache is True:
        return default_cache_dir()
    if isinstance(cache, (str, os.PathLike)):
        return Path(cache).expanduser()
    raise TypeError(f"cache={cache!r} must be True, False or a directory path.")


def data_fingerprint(X: np.ndarray) -> str:
    """Hex blake2b of X's bytes, shape and dtype; read a block of rows at a time (the same digest), so a memory-mapped
    file is not loaded into memory (:func:`umapviz._host_data.row_blocks`)."""
    X = np.ascontiguousarray(X)
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((X.shape, X.dtype.str)).encode())
    for _, block in row_blocks(X):
        h.update(memoryview(block).cast("B"))
    return h.hexdigest()


@functools.cache
def code_digest() -> str:
    """Hex blake2b of the graph package's source files (kNN, fuzzy set, their GPU kernels): a graph built by other
    code is another graph, so a change to that code must not reuse files cached before it."""
    h = hashlib.blake2b(digest_size=8)
    package = Path(__file__).parent
    for path in sorted(package.rglob("*.[pc][yu]")):
        h.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def cache_key(data_fp: str, params: dict[str, Any]) -> str:
    """Hex key from the data fingerprint, the build parameters (JSON, sorted keys) and the graph code."""
    blob = json.dumps({"data": data_fp, "params": params, "code": code_digest()}, sort_keys=True, default=str)
    return hashlib.blake2b(blob.encode(), digest_size=16).hexdigest()


def cache_path(directory: Path, key: str) -> Path:
    return Path(directory) / f"graph-{key}.npz"


def _checksum(arrays: dict[str, np.ndarray], scalars: np.ndarray, params_json: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    for name in _ARRAYS:
        arr = np.ascontiguousarray(arrays[name])
        h.update(f"{name}:{arr.dtype.str}:{arr.shape}".encode())
        h.update(memoryview(arr).cast("B"))
    h.update(np.ascontiguousarray(scalars).tobytes())
    h.update(params_json.encode())
    return h.hexdigest()


def save_graph(path: Path, graph: FuzzyGraph, key: str) -> None:
    """Write ``graph`` to ``path`` atomically (temporary file in the same directory, then os.replace)."""
    arrays = {name: np.ascontiguousarray(getattr(graph, name)) for name in _ARRAYS}
    scalars = np.array([graph.a, graph.b, graph.n_epochs], dtype=np.float64)
    params_json = json.dumps(graph.params, sort_keys=True, default=str)
    atomic_write(
        path,
        lambda tmp: np.savez(
            tmp,
            format_version=np.array(FORMAT_VERSION),
            key=np.array(key),
            checksum=np.array(_checksum(arrays, scalars, params_json)),
            scalars=scalars,
            params=np.array(params_json),
            **arrays,
        ),
    )
    _remove_stale_temporaries(Path(path).expanduser().parent)


def _remove_stale_temporaries(directory: Path) -> None:
    """Delete graph temporaries (``.graph-<key>.tmp.*.npz``, see atomic_write) that a killed writer left behind:
    hidden, as large as a graph, and never reused, they would otherwise pile up in the cache for good."""
    cutoff = time.time() - STALE_TEMP_SECONDS
    for tmp in directory.glob(".graph-*.tmp.*.npz"):
        try:
            if tmp.stat().st_mtime < cutoff:
                tmp.unlink()
        except OSError:  # removed by another process meanwhile, or not ours to remove: leave it
            pass


def load_graph(path: Path, key: str) -> FuzzyGraph | None:
    """The graph stored at ``path`` for ``key``; None if absent. A damaged or mismatched file -> None
    plus a ``UserWarning`` naming the file and what is wrong."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        contents = load_npz(path, fix="")
        problem = None
        if int(contents["format_version"]) != FORMAT_VERSION:
            problem = f"format version {int(contents['format_version'])}, expected {FORMAT_VERSION}"
        elif str(contents["key"]) != key:
            problem = "its key does not match the data and parameters asked for"
        else:
            arrays = {name: contents[name] for name in _ARRAYS}
            scalars = contents["scalars"]
            params_json = str(contents["params"])
            if _checksum(arrays, scalars, params_json) != str(contents["checksum"]):
                problem = "checksum mismatch (the arrays were altered or damaged)"
    except Exception as exc:  # BadZipFile, truncated members, missing entries, bad headers...
        problem = f"it cannot be read ({exc.__class__.__name__}: {exc})"
    if problem is not None:
        warnings.warn(
            f"Ignoring the cached graph {path}: {problem}. The graph is rebuilt and the file rewritten.",
            UserWarning,
            stacklevel=3,
        )
        return None
    a, b, n_epochs = (float(v) for v in scalars)
    return FuzzyGraph(a=a, b=b, n_epochs=int(n_epochs), params=json.loads(params_json), **arrays)
