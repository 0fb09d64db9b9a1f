"""Host data as a memory-mapped .npy: checked and hashed a block of rows at a time, never loaded whole."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from umapviz._host_data import read_only_mapping, row_blocks, to_device
from umapviz._validation import check_data
from umapviz.graph.cache import data_fingerprint

PROC_STATUS = Path("/proc/self/status")


def _resident_file_kib() -> int:
    """Kernel's count of this process's resident file-backed pages (Linux)."""
    line = next(line for line in PROC_STATUS.read_text().splitlines() if line.startswith("RssFile:"))
    return int(line.split()[1])


@pytest.fixture
def mapped(tmp_path):
    """A 96 MiB float32 .npy opened read-only as a memory map (two blocks of rows), and its values in memory."""
    X = np.random.default_rng(0).random((196_608, 128), dtype=np.float32)
    path = tmp_path / "x.npy"
    np.save(path, X)
    return np.load(path, mmap_mode="r"), X


def test_row_blocks_cover_every_row_once_in_order(mapped):
    M, X = mapped
    starts, rows = [], []
    for start, block in row_blocks(M, block_bytes=5_000 * 512):
        starts.append(start)
        rows.append(np.array(block))
    assert starts == list(range(0, M.shape[0], 5_000))
    np.testing.assert_array_equal(np.concatenate(rows), X)


def test_only_read_only_maps_get_their_pages_released(mapped, tmp_path):
    M, X = mapped
    assert read_only_mapping(M) is not None and read_only_mapping(M[10:20]) is not None
    assert read_only_mapping(X) is None
    assert read_only_mapping(np.load(tmp_path / "x.npy", mmap_mode="c")) is None  # its dirty pages are the user's


@pytest.mark.skipif(not PROC_STATUS.exists(), reason="reads the resident memory from /proc (Linux)")
def test_check_data_keeps_a_memory_map_on_disk(mapped):
    """The checks read every row, but the file's pages do not stay resident: at most about a block (64 MiB) of the
    96 MiB file, where reading it whole would map all of it."""
    M, _ = mapped
    before = _resident_file_kib()
    out = check_data(M, n_neighbors=15)
    grown = _resident_file_kib() - before
    assert out is M  # still the memory map: the graph build streams its rows
    assert grown < 0.75 * M.nbytes / 1024, grown
    np.asarray(M).sum()  # the same file read whole stays resident: the measure sees it
    assert _resident_file_kib() - before > 0.9 * M.nbytes / 1024


def test_a_bad_row_in_a_later_block_is_found_in_a_memory_map(tmp_path):
    X = np.ones((200_000, 96), dtype=np.float32)  # 73 MiB: two blocks
    X[190_001, 5] = np.nan
    X[3, 0] = np.inf
    np.save(tmp_path / "bad.npy", X)
    with pytest.raises(ValueError, match=r"2 row\(s\) with NaN or infinite values, e\.g\. rows \[3, 190001\]"):
        check_data(np.load(tmp_path / "bad.npy", mmap_mode="r"), n_neighbors=15)


def test_a_memory_map_hashes_like_its_values(mapped):
    M, X = mapped
    assert data_fingerprint(M) == data_fingerprint(X)
    assert data_fingerprint(M[:-1]) != data_fingerprint(X)


@pytest.mark.gpu
def test_to_device_gives_cupys_bytes_across_blocks_for_rows_memory_maps_and_float64(tmp_path):
    cp = pytest.importorskip("cupy")
    # 150,000 x 160 float32 is 96 MB: two blocks of about 64 MiB, the second one short.
    X = np.random.default_rng(0).normal(size=(150_000, 160)).astype(np.float32)
    np.save(tmp_path / "x.npy", X)
    mapped = np.load(tmp_path / "x.npy", mmap_mode="r")
    rows = np.random.default_rng(1).integers(0, X.shape[0], 230_000)  # repeats, any order, more rows than X
    for source, picked in ((X, None), (mapped, None), (X, rows), (mapped, rows), (X.astype(np.float64), rows)):
        want = cp.asarray(source if picked is None else source[picked], dtype=cp.float32)
        got = to_device(source, picked)
        assert got.dtype == cp.float32 and got.flags.c_contiguous and got.shape == want.shape
        assert bool((got.view(cp.uint32) == want.view(cp.uint32)).all())
    assert to_device(X[:0]).shape == (0, 160)
    on_device = cp.asarray(X)
    assert to_device(on_device) is on_device  # already there: no copy
    assert bool((to_device(on_device, cp.asarray(rows)) == on_device[cp.asarray(rows)]).all())
