"""Host arrays read a block of rows at a time, so a memory-mapped file stays on disk while it is read.

Reading a memory-mapped ``.npy`` whole (a finiteness check, a hash) maps every page of the file into the process:
its resident memory grows by the file's size, as if the data had been loaded. :func:`row_blocks` hands out blocks
of rows instead and, for a read-only mapping (``np.load(path, mmap_mode="r")``), tells the kernel after each block
that its pages are no longer needed (``madvise(MADV_DONTNEED)``: clean pages of a file, read again from the file if
touched again), so reading the whole array keeps only about one block resident. Arrays in RAM pass through in
the same blocks (views, no copies).
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator

import numpy as np

BLOCK_BYTES = 64 * 2**20  # rows per block: about this many bytes


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
