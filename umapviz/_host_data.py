"""Host arrays read a block of rows at a time, so a memory-mapped file stays on disk while it is read; and the
GPU's copy of host rows made the same way (:func:`to_device`).

Reading a memory-mapped ``.npy`` whole (a finiteness check, a hash) maps every page of the file into the process:
its resident memory grows by the file's size, as if the data had been loaded. :func:`row_blocks` hands out blocks
of rows instead and, for a read-only mapping (``np.load(path, mmap_mode="r")``), tells the kernel after each block
that its pages are no longer needed (``madvise(MADV_DONTNEED)``: clean pages of a file, read again from the file if
touched again), so reading the whole array keeps only about one block resident. Arrays in RAM pass through in
the same blocks (views, no copies).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ._backend import cupy, is_cupy, to_host

BLOCK_BYTES = 64 * 2**20  # rows per block: about this many bytes
# Host threads filling a pinned block: one thread's copy (or row gather) runs well below the link's speed, and
# NumPy's copies release the GIL.
UPLOAD_THREADS = max(1, min(8, os.cpu_count() or 1))


def read_only_mapping(X: np.ndarray) -> mmap.mmap | None:
    """The read-only memory map behind ``X`` (a ``np.memmap`` opened with mode ``"r"`` or a view of one), else
    None (arrays in RAM, and writable or copy-on-write maps, whose dirty pages must not be dropped).

    Parameters
    ----------
    X : numpy.ndarray
        Any array.
    """
    obj, mode = X, None
    while obj is not None and not isinstance(obj, mmap.mmap):
        mode = getattr(obj, "mode", mode) if isinstance(obj, np.memmap) else mode
        obj = getattr(obj, "base", None)
    return obj if obj is not None and mode == "r" and hasattr(mmap, "MADV_DONTNEED") else None


def row_blocks(X: np.ndarray, block_bytes: int = BLOCK_BYTES) -> Iterator[tuple[int, np.ndarray]]:
    """``(first row, rows)`` of ``X`` a block at a time; a read-only memory map's pages are released after each
    block (see the module's docstring).

    Parameters
    ----------
    X : numpy.ndarray
        A C-contiguous array (rows along the first axis).
    block_bytes : int
        About how many bytes a block holds (at least one row).
    """
    n = int(X.shape[0])
    row_bytes = max(1, int(X.strides[0]) if X.ndim else X.itemsize)
    step = max(1, block_bytes // row_bytes)
    mapping = read_only_mapping(X)
    origin = None
    if mapping is not None and len(mapping):
        origin = np.frombuffer(mapping, dtype=np.uint8).__array_interface__["data"][0]
    for start in range(0, n, step):
        block = X[start : start + step]
        yield start, block
        if origin is not None and block.size:
            first = block.__array_interface__["data"][0] - origin
            last = first + block.shape[0] * row_bytes
            low, high = first // mmap.PAGESIZE * mmap.PAGESIZE, last // mmap.PAGESIZE * mmap.PAGESIZE
            if high > low:  # whole pages only: the next block's first page stays
                mapping.madvise(mmap.MADV_DONTNEED, low, high - low)


def to_device(X: Any, rows: Any = None) -> Any:
    """A C-contiguous float32 CuPy copy of the host array ``X`` (or of its rows ``rows``, in that order).

    CuPy's own copy of a NumPy array reads pageable memory, which the driver stages through a small pinned buffer
    one piece at a time: on some hosts under 1 GB/s, seconds per million rows of 384 features. Here blocks of
    rows (about :data:`BLOCK_BYTES`) are copied, or gathered, by :data:`UPLOAD_THREADS` threads into one of two
    pinned buffers while the other buffer's block crosses to the GPU, and a read-only memory map's pages are
    released block by block (:func:`row_blocks`). The bytes are those of ``cupy.asarray(X[rows], dtype=float32)``.

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray
        (n, ...) data, C-contiguous; a CuPy array stays on the device (rows taken there, float32, C order).
    rows : array of int, optional
        The rows to copy (NumPy or CuPy; any order, repeats allowed); None copies every row.
    """
    cp = cupy()
    if is_cupy(X):
        return cp.ascontiguousarray(X if rows is None else X[cp.asarray(rows)], dtype=cp.float32)
    rows = None if rows is None else to_host(rows).astype(np.intp, copy=False)
    n = int(X.shape[0]) if rows is None else int(rows.shape[0])
    out = cp.empty((n, *X.shape[1:]), dtype=cp.float32)
    if out.size == 0:
        return out
    step = max(1, BLOCK_BYTES // (out.nbytes // n))
    if rows is None:  # (first row, block of X): views, a memory map's pages released after each
        blocks = row_blocks(X, step * max(1, int(X.strides[0])))
    else:  # (first row, block of row numbers)
        blocks = ((lo, rows[lo : lo + step]) for lo in range(0, n, step))
    pinned = [cupyx().empty_pinned((min(step, n), *X.shape[1:]), dtype=np.float32) for _ in range(2)]
    left: list = [None, None]  # when each buffer's last block has reached the GPU
    stream = cp.cuda.Stream(non_blocking=True)
    with ThreadPoolExecutor(UPLOAD_THREADS) as pool:
        for b, (lo, part) in enumerate(blocks):
            m = int(part.shape[0])
            buffer = pinned[b % 2][:m]
            if left[b % 2] is not None:
                left[b % 2].synchronize()
            cuts = np.linspace(0, m, min(UPLOAD_THREADS, m) + 1).astype(np.int64)
            list(
                pool.map(
                    _fill,
                    [buffer[a:z] for a, z in zip(cuts[:-1], cuts[1:], strict=True)],
                    [X] * (cuts.size - 1),
                    [part[a:z] for a, z in zip(cuts[:-1], cuts[1:], strict=True)],
                    [rows is not None] * (cuts.size - 1),
                )
            )
            out[lo : lo + m].set(buffer, stream=stream)
            left[b % 2] = stream.record()
    stream.synchronize()
    return out


def _fill(buffer: np.ndarray, X: np.ndarray, part: np.ndarray, gather: bool) -> None:
    """One thread's share of a pinned block: rows ``part`` of X gathered (``gather``), or ``part`` itself copied."""
    if gather and X.dtype == buffer.dtype:
        np.take(X, part, axis=0, out=buffer, mode="clip")  # "raise" would stage through a temporary; rows are ours
    else:
        buffer[...] = X[part] if gather else part


def cupyx():
    """CuPy's ``cupyx`` (pinned host arrays), loaded with CuPy."""
    cupy()
    import cupyx as module  # noqa: PLC0415 - lazy, as CuPy itself

    return module
