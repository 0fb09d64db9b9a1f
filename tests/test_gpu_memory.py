"""GPU memory plans under CuPy's pool limit (marked gpu): the budget counts the limit, a build under a limit that
forces the streamed paths gives the unlimited build's bytes, and a build that cannot fit says so before it starts."""

from __future__ import annotations

import numpy as np
import pytest

from umapviz import UMAP
from umapviz._backend import gpu_memory, is_cupy
from umapviz.graph import build_graph
from umapviz.graph.knn.partitioned import partitioned_bytes_needed, resolve_partitioning, work_data
from umapviz.graph.knn.recall import truth_block_rows
from umapviz.graph.memory_plan import layout_device
from umapviz.optimize import LayoutOptimizer

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
    plans = free.params.pop("memory_plan"), limited.params.pop("memory_plan")
    assert [plan["x"] for plan in plans] == ["resident", "streamed"]
    assert "recall_block_rows" not in plans[0] or plans[0]["recall_block_rows"] > plans[1]["recall_block_rows"]
    assert limited.params == free.params
    assert limited.knn_indices.tobytes() == free.knn_indices.tobytes() and limited.fingerprint == free.fingerprint


def test_gpu_build_too_big_for_the_pool_limit_says_so_before_it_starts(pool_limit):
    X = np.random.default_rng(0).normal(size=(600_000, 64)).astype(np.float32)
    pool_limit(100_000_000)
    with pytest.raises(MemoryError) as info:
        build_graph(X, random_state=0, device="gpu", cache=False, progress=False)
    assert type(info.value) is MemoryError  # not CuPy's OutOfMemoryError from inside the work
    assert "but only 0.09 GiB of" in str(info.value) and "more knn_partitions" in str(info.value)


def test_gpu_fit_under_a_pool_limit_gives_the_unlimited_fits_graph_and_layout_bytes(pool_limit):
    # A user's fit (knn="auto": the partitioned search, its recall check, the spectral start, 200 epochs of the
    # layout) unlimited, then under a 1.5 GB limit: X streams, the check searches its reference in blocks and the
    # layout schedules fewer epochs at a time. Where data lives changes no byte of the graph or the layout.
    import cupy as cp  # noqa: PLC0415 - GPU only: CuPy is absent where there is no GPU

    rng = np.random.default_rng(1)
    n, d = 600_000, 64
    centres = rng.normal(size=(2000, d)).astype(np.float32) * 20
    X = centres[rng.integers(0, 2000, n)] + rng.normal(size=(n, d)).astype(np.float32)
    free = UMAP(device="gpu", random_state=0, cache=False).fit(X)
    cp.get_default_memory_pool().free_all_blocks()
    pool_limit(1_500_000_000)
    limited = UMAP(device="gpu", random_state=0, cache=False).fit(X)
    plans = free.fuzzy_graph_.params["memory_plan"], limited.fuzzy_graph_.params["memory_plan"]
    assert [plan["x"] for plan in plans] == ["resident", "streamed"], plans
    assert plans[0]["pool_limit_gib"] is None and plans[1]["pool_limit_gib"] and plans[1]["budget_gib"] <= 1.4
    assert [plan["layout"] for plan in plans] == ["gpu", "gpu"] and plans[1]["layout_window"] < plans[0][
        "layout_window"
    ]
    assert limited.fuzzy_graph_.fingerprint == free.fuzzy_graph_.fingerprint
    assert limited.embedding_.tobytes() == free.embedding_.tobytes()


def test_gpu_layout_that_cannot_fit_goes_to_the_cpu_which_gives_the_same_bytes(pool_limit):
    # A graph whose layout does not fit beside what the GPU holds: not even a one-epoch schedule of the engine fits,
    # so the layout is planned on the CPU (said so, and recorded), whose bytes are the GPU layout's.
    import cupy as cp  # noqa: PLC0415 - GPU only: CuPy is absent where there is no GPU

    rng = np.random.default_rng(2)
    X = (rng.normal(size=(50, 32)) * 10)[rng.integers(0, 50, 60_000)] + rng.normal(size=(60_000, 32))
    graph = build_graph(X.astype(np.float32), random_state=0, device="gpu", cache=False, progress=False)
    assert layout_device(graph, 2, "chunked", "gpu") == "gpu" and graph.params["memory_plan"]["layout"] == "gpu"
    kw = dict(strategy="chunked", n_chunks="auto", random_state=0, n_epochs=50)
    on_gpu = LayoutOptimizer(graph, device="gpu", **kw).run().embedding
    cp.get_default_memory_pool().free_all_blocks()
    pool_limit(20 * graph.head.shape[0])  # less than a one-epoch schedule's ~57 bytes an edge
    with pytest.warns(UserWarning, match="The layout runs on the CPU: the layout's edges and schedule"):
        assert layout_device(graph, 2, "chunked", "gpu") == "cpu"
    assert (
        graph.params["memory_plan"]["layout"] == "cpu" and "runs on the CPU" in graph.params["memory_plan"]["why"][-1]
    )
    assert LayoutOptimizer(graph, device="cpu", **kw).run().embedding.tobytes() == on_gpu.tobytes()


def test_gpu_build_whose_fuzzy_set_cannot_fit_makes_it_on_the_cpu_with_the_same_bytes(pool_limit):
    # 2,000,000 x 32 points: the partitioned search's buffers are smaller than the fuzzy set's sparse matrices. Under a
    # limit between the two the search runs on the GPU and the fuzzy set and the edge list on the CPU: the same bytes.
    rng = np.random.default_rng(3)
    n, d = 2_000_000, 32
    centres = rng.normal(size=(4000, d)).astype(np.float32) * 20
    X = centres[rng.integers(0, 4000, n)] + rng.normal(size=(n, d)).astype(np.float32)
    kw = dict(knn="partitioned", knn_refine=0, random_state=0, device="gpu", cache=False, progress=False)
    free = build_graph(X, **kw)
    parts, overlap = resolve_partitioning(n, 15)
    search, fuzzy = partitioned_bytes_needed(n, d, 15, parts, overlap, data_on_device=False), 80 * n * 15
    assert search < fuzzy
    pool_limit((search + fuzzy) // 2)
    limited = build_graph(X, **kw)
    assert [g.params["memory_plan"]["fuzzy"] for g in (free, limited)] == ["gpu", "cpu"]
    assert limited.knn_indices.tobytes() == free.knn_indices.tobytes()
    assert limited.fingerprint == free.fingerprint
