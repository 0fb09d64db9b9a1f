"""GPU memory plans under CuPy's pool limit (marked gpu): the budget counts the limit, a build under a limit that
forces the streamed paths gives the unlimited build's bytes, and a build that cannot fit says so before it starts."""

from __future__ import annotations

import numpy as np
import pytest

from umapviz._backend import gpu_memory, is_cupy
from umapviz.graph import build_graph
from umapviz.graph.knn.partitioned import resolve_partitioning, work_data
from umapviz.graph.knn.recall import truth_block_rows

pytestmark = pytest.mark.gpu


@pytest.fixture
def pool_limit():
    """Sets the default pool's limit to the bytes it holds in use now plus a given amount; restores it after."""
    import cupy as cp  # noqa: PLC0415 - GPU only: CuPy is absent where there is no GPU

    pool = cp.get_default_memory_pool()
    before = pool.get_limit()

    def limit(extra: int) -> None:
        pool.free_all_blocks()
        pool.set_limit(size=pool.used_bytes() + extra)

    yield limit
    pool.set_limit(size=before)


def test_gpu_memory_plans_within_the_pool_limit(pool_limit):
    import cupy as cp  # noqa: PLC0415 - GPU only: CuPy is absent where there is no GPU

    pool_limit(2**30)
    held = cp.empty(2**28, dtype=cp.uint8)  # a quarter of the limit in use
    free, total = gpu_memory()
    assert total == cp.get_default_memory_pool().get_limit()
    assert free == total - cp.get_default_memory_pool().total_bytes() <= 3 * 2**28
    del held


def test_gpu_build_under_a_pool_limit_streams_and_gives_the_same_bytes(pool_limit):
    # 600,000 x 64 clustered points on the host: unlimited, X is uploaded and the recall check searches all rows at
    # once; under a 1.5 GB limit X streams partition by partition and the check searches blocks of rows. Where data
    # lives changes no byte of the graph.
    rng = np.random.default_rng(0)
    n, d = 600_000, 64
    centres = rng.normal(size=(2000, d)).astype(np.float32) * 20
    X = centres[rng.integers(0, 2000, n)] + rng.normal(size=(n, d)).astype(np.float32)
    parts, overlap = resolve_partitioning(n, 15)
    free = build_graph(X, random_state=0, device="gpu", cache=False, progress=False)
    assert truth_block_rows(n, d, 1000) == n
    pool_limit(1_500_000_000)
    assert not is_cupy(work_data(X, n, d, 15, overlap, parts, rounds=1))  # X stays on the host
    assert truth_block_rows(n, d, 1000) < n
    limited = build_graph(X, random_state=0, device="gpu", cache=False, progress=False)
    assert free.params["knn"] == "partitioned-gpu" and free.params["knn_refine"] >= 1
    assert limited.params == free.params
    assert limited.knn_indices.tobytes() == free.knn_indices.tobytes() and limited.fingerprint == free.fingerprint


def test_gpu_build_too_big_for_the_pool_limit_says_so_before_it_starts(pool_limit):
    X = np.random.default_rng(0).normal(size=(600_000, 64)).astype(np.float32)
    pool_limit(100_000_000)
    with pytest.raises(MemoryError) as info:
        build_graph(X, random_state=0, device="gpu", cache=False, progress=False)
    assert type(info.value) is MemoryError  # not CuPy's OutOfMemoryError from inside the work
    assert "but only 0.09 GiB of" in str(info.value) and "more knn_partitions" in str(info.value)
