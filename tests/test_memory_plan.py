"""The fit's memory plan (umapviz.graph.memory_plan) on the CPU: the GPU plan's choices for given budgets, the
errors before the work and at a stage's boundary, and a memory-mapped .npy built block by block."""

from __future__ import annotations

import json

import numpy as np
import pytest

from umapviz import UMAP
from umapviz.graph import build_graph
from umapviz.graph.knn.partitioned import resolve_partitioning
from umapviz.graph.memory_plan import fit_stage, layout_choice, plan_gpu_graph

GIB = 2**30


def _shape_only(n: int, d: int) -> np.ndarray:
    """An (n, d) float32 array that takes no memory (every row the same zeros): the plan reads only its shape."""
    return np.lib.stride_tricks.as_strided(np.zeros(1, dtype=np.float32), (n, d), (0, 0))


def _plan(n: int, d: int, free_gib: float):
    parts, overlap = resolve_partitioning(n, 15)
    free = int(free_gib * GIB)
    return plan_gpu_graph(
        _shape_only(n, d), 15, "partitioned-gpu", parts, overlap, "auto", escalating=True, free_total=(free, 80 * GIB)
    )


def test_a_large_budget_keeps_x_resident_and_a_small_one_streams_it():
    roomy = _plan(10_000_000, 384, 78)
    assert (roomy.x, roomy.refine, roomy.layout) == ("resident", 1, "gpu")
    with pytest.warns(UserWarning, match="runs no refinement round"):
        tight = _plan(10_000_000, 384, 22.3)  # a 24 GB card: X (14.3 GiB) no longer fits beside the work
    assert tight.x == "streamed" and tight.refine == 0
    assert tight.recall_block_rows < roomy.recall_block_rows < 10_000_000  # the check's reference in blocks
    assert tight.layout == "gpu" and 1 <= tight.layout_window < roomy.layout_window
    assert any("streams from the host" in why for why in tight.why)
    record = json.loads(json.dumps(tight.record()))  # graph.params holds it: JSON as it is
    assert record["x"] == "streamed" and record["budget_gib"] == 22.3 and record["needs_gib"]["graph"] < 22.3
    assert "X streamed" in tight.describe() and "layout on the GPU" in tight.describe()


def test_data_that_fits_the_card_only_streamed_is_planned_streamed():
    plan = _plan(20_000_000, 384, 78)  # X alone is 28.6 GiB: with the search's work over half the budget
    assert plan.x == "streamed" and plan.refine == 1 and plan.needs["graph"] < 78 * GIB


def test_a_fuzzy_set_too_large_for_the_card_is_planned_on_the_cpu():
    with pytest.warns(UserWarning, match="runs no refinement round"):
        plan = _plan(100_000_000, 64, 78)  # the search fits (46 GiB); the fuzzy set's matrices (112 GiB) do not
    assert plan.fuzzy == "cpu" and plan.x == "streamed" and plan.needs["graph"] < 78 * GIB
    assert "fuzzy set on the CPU" in plan.describe() and plan.record()["fuzzy"] == "cpu"
    assert _plan(10_000_000, 384, 78).fuzzy == "gpu"


def test_no_plan_fits_says_so_before_the_work_naming_the_need_and_the_knob():
    with pytest.raises(MemoryError) as info:
        _plan(600_000, 64, 0.09)
    assert type(info.value) is MemoryError
    text = str(info.value)
    assert "needs about 0.67 GiB" in text and "but only 0.09 GiB" in text and "more knn_partitions" in text


def test_the_layout_goes_to_the_cpu_only_where_one_epoch_of_its_schedule_does_not_fit():
    edges = 260_000_000  # a 10M-point graph's
    assert layout_choice(10_000_000, edges, 2, "chunked", 78 * GIB)[:2] == ("gpu", 8)
    device, window, need = layout_choice(10_000_000, edges, 2, "chunked", 8 * GIB)
    assert (device, window) == ("cpu", 0) and need > 8 * GIB * 0.9
    assert layout_choice(10_000_000, edges, 2, "chunked", need / 0.9 + 1)[:2] == ("gpu", 1)


class FakeOutOfMemory(MemoryError):
    """What CuPy's OutOfMemoryError is: a MemoryError subclass whose message names the bytes it wanted."""


def test_running_out_inside_a_stage_comes_out_naming_the_stage_and_the_knob():
    with pytest.raises(MemoryError) as info:
        with fit_stage("layout"):
            raise FakeOutOfMemory("Out of memory allocating 8,580,000,256 bytes (allocated so far: 16,300,653,568)")
    assert type(info.value) is MemoryError and isinstance(info.value.__cause__, FakeOutOfMemory)
    text = str(info.value)
    assert "in its layout stage while allocating 7.99 GiB" in text and "device='cpu'" in text


def test_a_stage_passes_its_own_errors_through():
    own = MemoryError("already explained")
    with pytest.raises(MemoryError) as info, fit_stage("graph"):
        raise own
    assert info.value is own
    with pytest.raises(ValueError, match="not memory"), fit_stage("graph"):
        raise ValueError("not memory")


@pytest.fixture
def mapped(tmp_path):
    """3,000 x 16 clustered float32 rows saved as .npy and opened read-only as a memory map, and the array."""
    rng = np.random.default_rng(0)
    X = (rng.normal(size=(30, 16)) * 8)[rng.integers(0, 30, 3000)] + rng.normal(size=(3000, 16))
    X = X.astype(np.float32)
    np.save(tmp_path / "x.npy", X)
    return np.load(tmp_path / "x.npy", mmap_mode="r"), X


def test_a_memory_mapped_file_builds_the_graph_of_its_values(mapped):
    M, X = mapped
    kw = dict(knn="partitioned", knn_partitions=4, random_state=0, cache=False, progress=False, device="cpu")
    from_file, from_memory = build_graph(M, **kw), build_graph(X, **kw)
    assert from_file.fingerprint == from_memory.fingerprint
    assert from_file.knn_indices.tobytes() == from_memory.knn_indices.tobytes()
    assert from_file.params["memory_plan"]["source"] == "memory-mapped file"
    assert "memory_plan" not in from_memory.params  # a CPU build of data in memory has no choice to record


def test_a_fit_of_a_memory_mapped_file_gives_the_layout_of_its_values(mapped, capsys):
    M, X = mapped
    kw = dict(knn="partitioned", knn_partitions=4, random_state=0, cache=False, device="cpu", n_epochs=30)
    model = UMAP(verbose=True, **kw).fit(M)
    assert "memory plan: CPU build, X memory-mapped file" in capsys.readouterr().out
    assert model._fit_data is M  # kept as the map for transform, not loaded
    assert model.fuzzy_graph_.params["memory_plan"]["layout"] == "cpu"
    assert model.embedding_.tobytes() == UMAP(**kw).fit_transform(X).tobytes()
