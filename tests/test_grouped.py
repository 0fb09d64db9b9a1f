"""The start's adjacency built on the device: the host's SciPy arrays, gathered the same way (NumPy here, CuPy on
the GPU)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse

from umapviz.graph import start as init_mod
from umapviz.graph._types import FuzzyGraph
from umapviz.graph.start.adjacency import (
    CsrArrays,
    component_members,
    components_in_order,
    device_adjacency,
    grouped_rows,
)
from umapviz.graph.start.components import connected_components


def _scattered_graph(n=3_000, n_groups=12, n_edges=20_000, seed=2) -> FuzzyGraph:
    """A FuzzyGraph whose components are random groups scattered over the ids (and isolated vertices)."""
    rng = np.random.default_rng(seed)
    group = rng.integers(0, n_groups, n)
    head, tail = rng.integers(0, n, (2, n_edges))
    keep = (group[head] == group[tail]) & (head != tail)
    adj = scipy.sparse.coo_matrix((rng.uniform(0.1, 1, keep.sum()), (head[keep], tail[keep])), shape=(n, n))
    adj = (adj + adj.T).tocsr().astype(np.float32)
    adj.sort_indices()
    coo = adj.tocoo()
    dummy = np.zeros((n, 2))
    return FuzzyGraph(
        coo.row.astype(np.int32),
        coo.col.astype(np.int32),
        coo.data,
        coo.data.max() / coo.data.astype(np.float64),
        dummy.astype(np.int32),
        dummy.astype(np.float32),
        1.577,
        0.895,
        200,
    )


def _as_csr_arrays(adj) -> CsrArrays:
    return CsrArrays(adj.indptr.astype(np.int64), adj.indices.astype(np.int32), adj.data)


def test_members_are_the_hosts_components_one_after_another():
    graph = _scattered_graph()
    n_comp, labels = connected_components(graph.head, graph.tail, graph.n_vertices)
    members, bounds = component_members(labels, n_comp, np)
    ref_members, ref_bounds, _ = init_mod._component_members(labels, np.bincount(labels))
    np.testing.assert_array_equal(members, ref_members)
    np.testing.assert_array_equal(bounds, ref_bounds)
    assert n_comp > 12


@pytest.mark.parametrize("which", ["all_by_size", "largest_three", "small_ones"])
def test_grouped_rows_are_scipys_fancy_indexed_rows(which):
    """The arrays the host's SciPy grouping gives, entry for entry; in blocks smaller than a row too."""
    graph = _scattered_graph()
    adj = init_mod._adjacency(graph)
    n_comp, labels = connected_components(graph.head, graph.tail, graph.n_vertices)
    members, bounds = component_members(labels, n_comp, np)
    by_size = list(np.argsort(-np.diff(bounds), kind="stable"))
    comps = {"all_by_size": by_size, "largest_three": by_size[:3], "small_ones": by_size[5:40]}[which]
    ref, ref_bounds = init_mod._grouped(adj, members, bounds, comps)
    verts = np.concatenate([members[bounds[c] : bounds[c + 1]] for c in comps])
    np.testing.assert_array_equal(components_in_order(members, bounds, comps, np), verts)
    position = np.full(graph.n_vertices, -1, dtype=np.int32)
    position[verts] = np.arange(verts.size, dtype=np.int32)
    for block in (1 << 26, 7):
        got = grouped_rows(_as_csr_arrays(adj), verts, position, np, block=block)
        np.testing.assert_array_equal(got.indptr, ref.indptr)
        np.testing.assert_array_equal(got.indices, ref.indices)
        assert got.data.tobytes() == ref.data.tobytes()
    assert ref.shape[0] == verts.size < graph.n_vertices or which == "all_by_size"
    host = got.to_host()
    assert (host != ref).nnz == 0 and ref_bounds[-1] == verts.size


@pytest.mark.gpu
def test_device_adjacency_and_grouping_are_the_hosts():
    import cupy as cp  # noqa: PLC0415 - GPU only: CuPy is absent where there is no GPU

    graph = _scattered_graph(n=20_000, n_groups=40, n_edges=200_000)
    adj = init_mod._adjacency(graph)
    dev, head = device_adjacency(graph, cp)
    np.testing.assert_array_equal(dev.indptr.get(), adj.indptr)
    np.testing.assert_array_equal(dev.indices.get(), adj.indices)
    np.testing.assert_array_equal(head.get(), graph.head)
    n_comp, labels = connected_components(head, dev.indices, graph.n_vertices, device="gpu")
    members, bounds = component_members(labels, n_comp, cp)
    host_members, host_bounds = component_members(labels.get(), n_comp, np)
    np.testing.assert_array_equal(members.get(), host_members)
    comps = list(np.argsort(-np.diff(bounds), kind="stable"))[1:]
    ref, ref_bounds = init_mod._grouped(adj, host_members, host_bounds, comps)
    got, got_bounds = init_mod._grouped(dev, members, bounds, comps)
    np.testing.assert_array_equal(got.indptr.get(), ref.indptr)
    np.testing.assert_array_equal(got.indices.get(), ref.indices)
    assert got.data.get().tobytes() == ref.data.tobytes()
    np.testing.assert_array_equal(got_bounds, ref_bounds)


@pytest.mark.gpu
def test_gpu_spectral_init_of_scattered_components_is_the_cpus_bytes():
    """Many components scattered over the ids: the start built on the device (components, grouping) gives the
    host's bytes, both methods."""
    graph = _scattered_graph(n=30_000, n_groups=6, n_edges=400_000, seed=5)
    for method in ("full", "sampled"):
        stats: dict = {}
        gpu = init_mod.spectral_init(graph, 2, 0, device="gpu", method=method, stats=stats)
        assert "device" in stats["seconds"]  # built on the device
        assert gpu.tobytes() == init_mod.spectral_init(graph, 2, 0, method=method).tobytes()


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("step", "message"),
    [
        ("device_adjacency", "adjacency did not fit on the GPU"),
        ("grouped_rows", "components' adjacency did not fit on the GPU"),
    ],
)
def test_gpu_start_short_of_memory_builds_on_the_host_with_a_warning(step, message, monkeypatch):
    graph = _scattered_graph(n=20_000, n_groups=5, n_edges=300_000, seed=6)

    def no_memory(*args, **kwargs):
        raise MemoryError("out of memory allocating 1,000,000,000,000 bytes")

    monkeypatch.setattr(init_mod, step, no_memory)
    with pytest.warns(UserWarning, match=message):
        gpu = init_mod.spectral_init(graph, 2, 0, device="gpu", method="full")
    assert gpu.tobytes() == init_mod.spectral_init(graph, 2, 0, method="full").tobytes()
