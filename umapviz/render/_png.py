"""The PNG encoder's zlib stream, deflated in horizontal strips on several threads.

A PNG's pixel data is one zlib stream. Deflate blocks can be cut at any byte-aligned point (a sync flush), so
strips of rows compressed independently, each ended by a sync flush and the last one finished, concatenate
into one valid stream; only the Adler-32 checksum of the whole must be combined from the strips' own. zlib
releases the GIL while it compresses, so the strips compress in parallel; each strip starts without the
previous strip's history, which costs well under 1% of the size on 100-row strips.
"""

from __future__ import annotations

import functools
import os
import struct
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np

# A fixed number of strips, whatever the machine: the same image gives the same bytes everywhere.
STRIPS = 8
# Below this many bytes of pixels one strip in the calling thread is faster than handing work to threads.
PARALLEL_MIN_BYTES = 256 * 1024
_ADLER_BASE = 65521  # the largest prime below 2**16


def zlib_stream(pixels: np.ndarray, level: int) -> bytes:
    """The zlib stream of PNG scanlines (filter type 0, "none", on every row) of an (H, W, C) uint8 image."""
    h = pixels.shape[0]
    n = min(STRIPS, h) if pixels.nbytes >= PARALLEL_MIN_BYTES else 1
    bounds = np.linspace(0, h, n + 1).round().astype(int).tolist()
    strips = [pixels[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    last = [False] * (n - 1) + [True]
    levels = [level] * n
    pool = _pool() if n > 1 else None
    parts = list((pool.map if pool else map)(_deflate_rows, strips, levels, last))
    checksum = 1  # the Adler-32 of no bytes
    for _, strip_checksum, length in parts:
        checksum = adler32_combine(checksum, strip_checksum, length)
    return _zlib_header(level) + b"".join(data for data, _, _ in parts) + struct.pack(">I", checksum)


def _deflate_rows(pixels: np.ndarray, level: int, last: bool) -> tuple[bytes, int, int]:
    """(raw deflate data, Adler-32, byte count) of the scanlines of these rows."""
    h, w, c = pixels.shape
    rows = np.empty((h, 1 + w * c), dtype=np.uint8)
    rows[:, 0] = 0  # filter type "none": on these mostly-black images filters cost time and rarely pay
    # the pixel bytes of each row, as an (h, w, c) view into ``rows``: one copy from any input layout
    body = np.ndarray((h, w, c), dtype=np.uint8, buffer=rows, offset=1, strides=(rows.strides[0], c, 1))
    body[...] = pixels
    deflate = zlib.compressobj(level, zlib.DEFLATED, -15)  # raw deflate: the zlib header is written once
    data = deflate.compress(rows) + deflate.flush(zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH)
    return data, zlib.adler32(rows), rows.size


def adler32_combine(first: int, second: int, second_length: int) -> int:
    """The Adler-32 of two byte strings joined, from each one's Adler-32 and the second's length.

    Adler-32 is (B << 16) | A with A = 1 + the sum of the bytes and B = the sum of A after each byte (mod
    65521). Appending n bytes adds their own A - 1 to A, and to B their own B plus n times the first A - 1.
    """
    a1, b1 = first & 0xFFFF, first >> 16
    a2, b2 = second & 0xFFFF, second >> 16
    a = (a1 + a2 - 1) % _ADLER_BASE
    b = (b1 + b2 + second_length * (a1 - 1)) % _ADLER_BASE
    return (b << 16) | a


def _zlib_header(level: int) -> bytes:
    """CMF (deflate, 32 KiB window) and FLG (the level class, informative; check bits make it divisible by 31)."""
    cmf = 0x78
    flevel = 0 if level <= 1 else 1 if level <= 5 else 2 if level == 6 else 3
    flg = flevel << 6
    flg += 31 - ((cmf << 8) | flg) % 31
    return bytes([cmf, flg])


@functools.cache
def _pool() -> ThreadPoolExecutor | None:
    workers = min(STRIPS, os.cpu_count() or 1)
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="umapviz-png") if workers > 1 else None
