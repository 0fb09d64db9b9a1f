"""Neighbourhood refinement of a kNN graph (umapviz.graph.knn.refine): determinism, recall never falls, exact
distances, the partitioned search's default, and the GPU twin's bytes (marked gpu)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from umapviz import UMAP, datasets
from umapviz.graph import build_graph
from umapviz.graph.knn.knn_cpu import exact_knn
from umapviz.graph.knn.partitioned import REFINE_ROUNDS, partitioned_knn, refine_rounds
from umapviz.graph.knn.recall import recall_at_k
from umapviz.graph.knn.refine import (
    _candidates,
    _reverse_neighbours,
    candidate_width,
    check_refine_fits,
    refine_knn,
    union_knn,
)


@pytest.fixture(scope="module")
def clusters():
    return datasets.load("clusters", n_samples=3000, random_state=0)[0]


@pytest.fixture(scope="module")
def coarse(clusters):
    """A partitioned graph with many small partitions, so that it misses neighbours."""
    return partitioned_knn(clusters, 15, n_partitions=24, random_state=0, refine=0)


def test_union_keeps_the_best_of_both_graphs_in_any_order(clusters, coarse):
    other = partitioned_knn(clusters, 15, n_partitions=12, random_state=1, refine=0)[0]
    first, dist = union_knn(clusters, [coarse[0], other])
    swapped = union_knn(clusters, [other, coarse[0]])
    assert first.tobytes() == swapped[0].tobytes() and dist.tobytes() == swapped[1].tobytes()
    truth = exact_knn(clusters, 15)[0]
    hits = [np.mean([len(set(a) & set(t)) for a, t in zip(g, truth, strict=True)]) for g in (coarse[0], other, first)]
    assert hits[2] >= max(hits[:2]) and hits[2] > min(hits[:2])
    assert all(set(u) <= set(a) | set(b) for u, a, b in zip(first, coarse[0], other, strict=True))


def test_refinement_is_deterministic(clusters, coarse):
    first = refine_knn(clusters, coarse[0], 2)
    again = refine_knn(clusters, coarse[0], 2)
    assert first[0].tobytes() == again[0].tobytes() and first[1].tobytes() == again[1].tobytes()


def test_refinement_raises_recall_and_never_loses_a_neighbour(clusters, coarse):
    exact_idx, _ = exact_knn(clusters, 15, progress=False)
    before = recall_at_k(clusters, coarse[0], sample=3000, seed=1)
    once, _ = refine_knn(clusters, coarse[0], 1)
    twice, _ = refine_knn(clusters, coarse[0], 2)
    after_once = recall_at_k(clusters, once, sample=3000, seed=1)
    assert before < 0.97 and before < after_once <= recall_at_k(clusters, twice, sample=3000, seed=1)
    for old, new, true in zip(coarse[0].tolist(), once.tolist(), exact_idx.tolist(), strict=True):
        assert (set(old) & set(true)) <= set(new)  # a true neighbour found stays found


def test_refined_distances_are_the_exact_searches(clusters, coarse):
    idx, dist = refine_knn(clusters, coarse[0], 1)
    exact_idx, exact_dist = exact_knn(clusters, 15, progress=False)
    assert idx.dtype == np.int32 and dist.dtype == np.float32
    assert (idx[:, 0] == np.arange(len(idx))).all() and (dist[:, 0] == 0).all()
    assert all(len(set(row)) == 15 for row in idx.tolist())
    assert (dist >= exact_dist).all()  # the j-th found is never nearer than the true j-th
    same = (idx == exact_idx).all(axis=1)
    assert same.mean() > 0.5 and dist[same].tobytes() == exact_dist[same].tobytes()


def test_zero_rounds_recomputes_the_graph_it_was_given(clusters, coarse):
    idx, dist = refine_knn(clusters, coarse[0], 0)
    assert np.array_equal(idx, coarse[0]) and dist.tobytes() == coarse[1].tobytes()


def test_partitioned_search_refines_by_default_and_records_it(clusters, coarse):
    default, _ = partitioned_knn(clusters, 15, n_partitions=24, random_state=0)
    refined, _ = refine_knn(clusters, coarse[0], 1)
    assert np.array_equal(default, refined)
    graph = build_graph(
        clusters, knn="partitioned", knn_partitions=24, knn_refine=2, random_state=0, cache=False, progress=False
    )
    assert graph.params["knn_refine"] == 2
    assert np.array_equal(graph.knn_indices, refine_knn(clusters, coarse[0], 2)[0])


def test_repeated_partitionings_find_more_and_keep_their_bytes(clusters, coarse):
    twice = partitioned_knn(clusters, 15, n_partitions=24, random_state=0, refine=0, repeats=2)
    again = partitioned_knn(clusters, 15, n_partitions=24, random_state=0, refine=0, repeats=2)
    assert twice[0].tobytes() == again[0].tobytes() and twice[1].tobytes() == again[1].tobytes()
    found_once = recall_at_k(clusters, coarse[0], sample=3000, seed=1)
    assert recall_at_k(clusters, twice[0], sample=3000, seed=1) > found_once
    assert (twice[1] <= coarse[1]).all()  # the first partitioning is the plain one: the j-th found is never farther


def test_umap_passes_the_rounds_to_the_graph(clusters):
    model = UMAP(knn="partitioned", knn_partitions=3, knn_refine=0, n_epochs=5, random_state=0, device="cpu")
    model.fit(clusters[:1000])
    assert model.get_params()["knn_refine"] == 0 and model.fuzzy_graph_.params["knn_refine"] == 0


def test_cosine_refinement_finds_the_text_like_neighbours():
    X = datasets.load("text_like", n_samples=3000, random_state=0)[0]
    idx, _ = partitioned_knn(X, 15, "cosine", n_partitions=24, random_state=0)
    assert recall_at_k(X, idx, sample=500, seed=1, metric="cosine") >= 0.99


def test_candidates_are_neighbours_their_neighbours_and_reverse_neighbours():
    rng = np.random.default_rng(0)
    n, k = 60, 5
    idx = np.stack(
        [np.concatenate([[i], rng.choice(np.delete(np.arange(n), i), k - 1, replace=False)]) for i in range(n)]
    ).astype(np.int32)
    reverse = _reverse_neighbours(idx, k - 1, np)
    cand = _candidates(idx, reverse, 10, 50, np)
    for r, i in enumerate(range(10, 50)):
        listing = sorted(j for j in range(n) if i in idx[j, 1:])[: k - 1]
        want = set(idx[i]) | {int(c) for j in idx[i, 1:] for c in idx[j, 1:]} | set(listing)
        row = cand[r][cand[r] >= 0]
        assert row.tolist() == sorted(want)  # each once, ascending
        assert (cand[r][row.size :] == -1).all()


def test_mnist_subset_with_small_partitions_keeps_its_neighbours():
    X = datasets.load("mnist")[0]  # 5,000 images: 20 partitions of ~250 rows, a tenth of a digit class each
    plain, _ = partitioned_knn(X, 15, n_partitions=20, random_state=0, refine=0)
    refined, _ = partitioned_knn(X, 15, n_partitions=20, random_state=0)
    assert recall_at_k(X, plain, sample=500, seed=1) < recall_at_k(X, refined, sample=500, seed=1)
    assert recall_at_k(X, refined, sample=500, seed=1) >= 0.97


def test_candidate_width_fits_one_gpu_block():
    assert candidate_width(15) == (14, 15 + 14 * 14 + 14)
    for k in (2, 15, 31, 32, 64, 200, 500):
        assert candidate_width(k)[1] <= 1024


@pytest.mark.parametrize(
    ("value", "match"),
    [(-1, "knn_refine=-1 is out of range"), ("many", "'auto'"), (1.5, "knn_refine must be an integer")],
)
def test_bad_rounds_are_refused_with_the_fix(clusters, value, match):
    with pytest.raises((ValueError, TypeError), match=match):
        build_graph(clusters, knn="partitioned", knn_refine=value, cache=False)


def test_a_refinement_too_big_for_the_gpu_says_what_it_needs_and_the_fix():
    gib = 2**30
    with pytest.raises(MemoryError) as info:  # 10M x 384 host data: 15 GB to upload, beside a round's buffers
        check_refine_fits(10_000_000, 384, 15, x_on_device=False, free_total=(16 * gib, 80 * gib))
    text = str(info.value)
    assert "16.00 GiB of 80.00 GiB is free" in text and "knn_refine=0" in text
    assert float(text.split("needs about ")[1].split(" GiB")[0]) > 4 * 10_000_000 * 384 / gib
    check_refine_fits(10_000_000, 384, 15, x_on_device=True, free_total=(16 * gib, 80 * gib))  # X already there


def test_the_recorded_rounds_are_the_rounds_run_and_key_the_cache(clusters, coarse, tmp_path):
    common = dict(knn="partitioned", knn_partitions=24, random_state=0, cache=tmp_path, progress=False)
    auto = build_graph(clusters, knn_refine="auto", **common)
    assert auto.params["knn_refine"] == REFINE_ROUNDS == 1  # the count, never "auto"
    assert np.array_equal(auto.knn_indices, refine_knn(clusters, coarse[0], 1)[0])
    one = build_graph(clusters, knn_refine=1, **common)  # the same graph: the same cache file
    assert one.fingerprint == auto.fingerprint and len(list(tmp_path.glob("graph-*.npz"))) == 1
    none = build_graph(clusters, knn_refine=0, **common)  # another graph: another file
    assert none.params["knn_refine"] == 0 and len(list(tmp_path.glob("graph-*.npz"))) == 2
    assert none.knn_indices.tobytes() != auto.knn_indices.tobytes()
    # One partition is the exact search: no round runs, whatever was asked, and 0 is recorded.
    exact = build_graph(
        clusters[:500], knn="partitioned", knn_partitions=1, knn_refine=2, cache=False, random_state=0, progress=False
    )
    assert exact.params["knn_refine"] == 0


GIB = 2**30
BIG = dict(n=10_000_000, d=384, n_neighbors=15, n_partitions=611, device="gpu")  # X is 14.3 GiB


@pytest.mark.parametrize("free_gib", [12, 16, 20, 26, 30, 60])
def test_auto_gives_the_same_rounds_resident_or_streamed(free_gib):
    """ "auto" decides by the round's memory, not by where X lies: host data with F bytes free gets the rounds of the
    same data resident on the GPU (X already taking its 4 n d bytes there, so F - 4 n d free)."""
    x_bytes = 4 * BIG["n"] * BIG["d"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the warning of the too-small cases is checked below
        host = refine_rounds("auto", **BIG, x_on_device=False, free_total=(free_gib * GIB, 80 * GIB))
        resident = refine_rounds("auto", **BIG, x_on_device=True, free_total=(free_gib * GIB - x_bytes, 80 * GIB))
    assert host == resident
    assert host == (REFINE_ROUNDS if free_gib >= 26 else 0)  # a round needs about 25.4 GiB beside host X


def test_auto_without_the_memory_for_a_round_runs_none_and_says_so():
    with pytest.warns(UserWarning, match=r"knn_refine='auto' runs no refinement round") as record:
        rounds = refine_rounds("auto", **BIG, x_on_device=False, free_total=(16 * GIB, 80 * GIB))
    assert rounds == 0
    text = str(record[0].message)
    assert "16.00 GiB of 80.00 GiB is free" in text and "knn_refine=0" in text and "graph.params" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # where it fits: the round, silently
        assert refine_rounds("auto", **BIG, x_on_device=False, free_total=(30 * GIB, 80 * GIB)) == REFINE_ROUNDS


def test_a_count_of_rounds_that_cannot_fit_is_refused_before_the_search():
    with pytest.raises(MemoryError, match="knn_refine=0"):
        refine_rounds(2, **BIG, x_on_device=False, free_total=(16 * GIB, 80 * GIB))
    assert refine_rounds(2, **BIG, x_on_device=False, free_total=(30 * GIB, 80 * GIB)) == 2
    # On the CPU the rounds need no GPU memory, and the GPU is not asked.
    assert refine_rounds("auto", **dict(BIG, device="cpu"), x_on_device=False) == REFINE_ROUNDS
    assert refine_rounds(3, **dict(BIG, device="cpu", n_partitions=1), x_on_device=False) == 0


def test_indices_of_another_data_set_are_refused(clusters, coarse):
    with pytest.raises(ValueError, match="pass the kNN indices of this X"):
        refine_knn(clusters[:100], coarse[0], 1)


# ------------------------------------------------------------------------------------------------- GPU


@pytest.mark.gpu
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_gpu_refinement_gives_the_cpu_bytes(clusters, coarse, metric):
    import cupy as cp  # noqa: PLC0415 - GPU only: CuPy is absent where there is no GPU

    other = partitioned_knn(clusters, 15, n_partitions=12, random_state=1, refine=0)[0]
    cpu_union = union_knn(clusters, [coarse[0], other], metric)
    gpu_union = union_knn(cp.asarray(clusters), [cp.asarray(coarse[0]), cp.asarray(other)], metric)
    assert cpu_union[0].tobytes() == gpu_union[0].get().tobytes()
    assert cpu_union[1].tobytes() == gpu_union[1].get().tobytes()
    cpu_idx, cpu_dist = refine_knn(clusters, coarse[0], 2, metric)
    gpu_idx, gpu_dist = refine_knn(clusters, coarse[0], 2, metric, device="gpu")
    assert cpu_idx.tobytes() == gpu_idx.get().tobytes() and cpu_dist.tobytes() == gpu_dist.get().tobytes()


@pytest.mark.gpu
def test_gpu_partitioned_search_refines_wherever_x_lies(clusters):
    import cupy as cp  # noqa: PLC0415 - GPU only: CuPy is absent where there is no GPU

    refined = partitioned_knn(clusters, 15, n_partitions=24, random_state=0, device="gpu")
    plain, _ = partitioned_knn(clusters, 15, n_partitions=24, random_state=0, device="gpu", refine=0)
    streamed = partitioned_knn(clusters, 15, n_partitions=24, random_state=0, device="gpu", data_on_device=False)
    resident = partitioned_knn(cp.asarray(clusters), 15, n_partitions=24, random_state=0, device="gpu")
    for other in (streamed, resident):  # "auto": the same round, and the same bytes, wherever X lies
        assert other[0].tobytes() == refined[0].tobytes() and other[1].tobytes() == refined[1].tobytes()
    assert recall_at_k(clusters, refined[0], sample=1000, seed=1) > recall_at_k(clusters, plain, sample=1000, seed=1)
    again, _ = partitioned_knn(clusters, 15, n_partitions=24, random_state=0, device="gpu")
    assert refined[0].tobytes() == again.tobytes()


@pytest.mark.gpu
def test_gpu_graph_of_host_data_is_the_resident_graph_with_its_rounds_recorded(clusters, tmp_path):
    import cupy as cp  # noqa: PLC0415 - GPU only: CuPy is absent where there is no GPU

    path = tmp_path / "x.npy"
    np.save(path, clusters)
    common = dict(
        knn="partitioned",
        knn_partitions=24,
        knn_refine="auto",
        random_state=0,
        device="gpu",
        cache=False,
        progress=False,
    )
    graphs = [build_graph(X, **common) for X in (np.load(path, mmap_mode="r"), clusters, cp.asarray(clusters))]
    for graph in graphs:
        assert graph.params["knn_refine"] == REFINE_ROUNDS
        assert graph.fingerprint == graphs[0].fingerprint
        assert graph.knn_indices.tobytes() == graphs[0].knn_indices.tobytes()
        assert graph.knn_dists.tobytes() == graphs[0].knn_dists.tobytes()
    assert np.array_equal(
        graphs[0].knn_indices,
        refine_knn(
            clusters, partitioned_knn(clusters, 15, n_partitions=24, random_state=0, device="gpu", refine=0)[0], 1
        )[0],
    )
