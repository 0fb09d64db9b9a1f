"""The partitioned approximate kNN (umapviz.graph.knn.partitioned): determinism, recall, the size cap, Dask, the GPU
memory check, and the GPU twin (marked gpu)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from umapviz import UMAP, datasets
from umapviz.graph import build_graph
from umapviz.graph.build_gpu import check_graph_fits, graph_bytes_needed
from umapviz.graph.knn import (
    AUTO_GPU_EXACT_MAX_ROWS,
    BuildCancelled,
    check_auto_recall,
    resolve_knn_method,
)
from umapviz.graph.knn.auto_search import (
    BUDGET_UNITS,
    auto_knn,
    exact_precision,
    exact_units,
    ladder_units,
    step_units,
)
from umapviz.graph.knn.knn_cpu import exact_knn
from umapviz.graph.knn.partitioned import partitioned_knn, resolve_partitioning
from umapviz.graph.knn.partitions import plan_partitions
from umapviz.graph.knn.recall import recall_at_k, sampled_truth

GIB = 2**30


@pytest.fixture(scope="module")
def text_like():
    return datasets.load("text_like", n_samples=4000, random_state=0)[0]


@pytest.fixture(scope="module")
def clusters():
    return datasets.load("clusters", n_samples=3000, random_state=0)[0]


def test_same_seed_gives_the_same_graph_bytes(clusters):
    first = build_graph(clusters, knn="partitioned", knn_partitions=4, random_state=3, cache=False, progress=False)
    again = build_graph(clusters, knn="partitioned", knn_partitions=4, random_state=3, cache=False, progress=False)
    assert first.params["knn"] == "partitioned"
    assert (first.params["knn_partitions"], first.params["knn_overlap"]) == (4, 2)
    for name in ("knn_indices", "knn_dists", "head", "tail", "weight", "epochs_per_sample"):
        assert getattr(first, name).tobytes() == getattr(again, name).tobytes(), name


def test_umap_passes_the_partitioning_to_the_graph(clusters):
    model = UMAP(knn="partitioned", knn_partitions=3, knn_overlap=3, n_epochs=5, random_state=0, device="cpu")
    model.fit(clusters[:1000])
    assert model.get_params()["knn_partitions"] == 3
    assert (model.fuzzy_graph_.params["knn_partitions"], model.fuzzy_graph_.params["knn_overlap"]) == (3, 3)


def test_neighbours_are_true_distances_self_first_sorted(clusters):
    idx, dist = partitioned_knn(clusters, 10, n_partitions=4, random_state=0)
    n = clusters.shape[0]
    assert idx.dtype == np.int32 and dist.dtype == np.float32 and idx.shape == (n, 10)
    assert (idx[:, 0] == np.arange(n)).all() and (dist[:, 0] == 0).all()
    assert all(len(set(row)) == 10 for row in idx.tolist())  # no neighbour twice
    rows = np.arange(0, n, 97)
    X64 = clusters.astype(np.float64)
    true = np.take_along_axis(cdist(X64[rows], X64), idx[rows].astype(np.int64), axis=1)
    np.testing.assert_allclose(dist[rows], true, rtol=1e-6)
    assert (np.diff(dist[:, 1:], axis=1) >= 0).all()


def test_one_partition_is_the_exact_search(clusters):
    idx, dist = partitioned_knn(clusters, 15, n_partitions=1, random_state=0)
    exact_idx, exact_dist = exact_knn(clusters, 15, progress=False)
    assert np.array_equal(idx, exact_idx) and np.array_equal(dist, exact_dist)


@pytest.mark.parametrize(
    ("name", "n_partitions", "metric"),
    [("text_like", 8, "euclidean"), ("text_like", 8, "cosine"), ("clusters", 3, "euclidean")],
)
def test_recall_at_default_overlap(name, n_partitions, metric, text_like, clusters):
    X = text_like if name == "text_like" else clusters
    idx, _ = partitioned_knn(X, 15, metric, n_partitions=n_partitions, random_state=0)
    assert recall_at_k(X, idx, sample=300, seed=1, metric=metric) >= 0.95


def test_recall_counts_the_missing_neighbours(clusters):
    X = clusters[:800]
    D = cdist(X.astype(np.float64), X.astype(np.float64))
    truth = np.argsort(D, axis=1, kind="stable")[:, :15]
    assert recall_at_k(X, truth, sample=800) == 1.0
    damaged = truth.copy()
    damaged[:, -1] = np.argmax(D, axis=1)  # the farthest point instead of the 15th nearest
    assert recall_at_k(X, damaged, sample=800) == pytest.approx(14 / 15)
    with pytest.raises(ValueError, match="graph.knn_indices"):
        recall_at_k(X, truth[:10], sample=5)


def test_partitions_are_capped_and_every_point_joins_overlap_of_them():
    # One cluster of 3,000 points beside two small ones: the big cluster's partitions must be cut to the cap.
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(size=(3000, 8)), rng.normal(size=(200, 8)) + 30, rng.normal(size=(200, 8)) - 30])
    X = X.astype(np.float32)
    plan = plan_partitions(X, 3, 2, seed=0, max_members=1500, min_members=30)
    assert max(part.size for part in plan) <= 1500
    memberships = np.concatenate([part.members for part in plan])
    assert (np.bincount(memberships, minlength=len(X)) == 2).all()
    for part in plan:
        assert (np.diff(part.members) > 0).all()


def test_memory_mapped_data_gives_the_same_neighbours(tmp_path, clusters):
    path = tmp_path / "x.npy"
    np.save(path, clusters)
    mapped = np.load(path, mmap_mode="r")
    a = partitioned_knn(mapped, 15, n_partitions=4, random_state=0)
    b = partitioned_knn(clusters, 15, n_partitions=4, random_state=0)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_dask_workers_give_the_same_graph_bytes(clusters):
    # The test extra installs distributed (make test, CI); the GPU machine's image lacks it.
    distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed: the dask extra")
    here = build_graph(clusters, knn="partitioned", knn_partitions=4, random_state=0, cache=False, progress=False)
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None)
    with cluster, distributed.Client(cluster) as client:
        there = build_graph(
            clusters, knn="auto", knn_partitions=4, random_state=0, cache=False, progress=False, client=client
        )
        with pytest.raises(ValueError, match="knn='partitioned'"):
            build_graph(clusters, knn="exact", cache=False, client=client)
    assert there.params["knn"] == "partitioned"
    assert there.fingerprint == here.fingerprint
    assert there.knn_dists.tobytes() == here.knn_dists.tobytes()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"knn_partitions": 0}, "knn_partitions=0 is out of range"),
        ({"knn_partitions": "many"}, "pass a positive int or 'auto'"),
        ({"knn_partitions": 2.5}, "knn_partitions must be an integer"),
        ({"knn_partitions": 500}, "Use at most 100"),
        ({"knn_overlap": 0}, "knn_overlap=0 is out of range"),
    ],
)
def test_bad_partitioning_is_refused_with_the_fix(clusters, kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        build_graph(clusters, knn="partitioned", cache=False, **kwargs)


def test_auto_partitions_and_methods():
    assert resolve_partitioning(100_000, 15) == (7, 2)  # one per 16,384 rows
    assert resolve_partitioning(1000, 15) == (1, 1)  # one partition: exact
    assert resolve_knn_method("auto", 150_000, 384, device="gpu") == "exact-gpu"
    assert resolve_knn_method("auto", 500_000, 384, device="gpu") == "exact-gpu"
    assert resolve_knn_method("auto", 500_001, 384, device="gpu") == "partitioned-gpu"  # exact work grows as n**2
    assert resolve_knn_method("approx", 1000, 384, device="gpu") == "partitioned-gpu"
    assert resolve_knn_method("exact", 10**7, 384, device="gpu") == "exact-gpu"
    assert resolve_knn_method("approx", 10**6, 384) == "approx"  # NN-descent on the CPU
    assert resolve_knn_method("auto", 1000, 8, distributed=True) == "partitioned"


def test_cancel_stops_the_partitioned_search_after_the_partition_it_was_asked_at(clusters, tmp_path):
    asked = []

    def cancel():
        asked.append(True)
        return len(asked) == 2  # closed while the second partition was searched

    with pytest.raises(BuildCancelled):
        build_graph(clusters, knn="partitioned", knn_partitions=8, random_state=0, cancel=cancel, cache=tmp_path)
    assert len(asked) == 2  # not searched to the end (8 partitions, then the refinement) before being asked
    assert not any(tmp_path.iterdir())  # nothing cached from a cancelled build


def test_low_recall_of_the_auto_choice_warns_with_the_fix():
    with pytest.warns(UserWarning, match=r"found only 0\.62 of the true neighbours.*knn_target_recall=0\.95"):
        check_auto_recall(0.62, 10_000_000, 0.95)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_auto_recall(0.95, 10_000_000, 0.95)  # enough: no warning


@pytest.mark.parametrize("target", [0.0, 1.5, "high", True, float("nan")])
def test_a_bad_target_recall_is_refused_with_the_fix(clusters, target):
    with pytest.raises(ValueError, match=r"knn_target_recall=.* must be a number in \(0, 1\]"):
        build_graph(clusters, knn_target_recall=target, cache=False)


def test_the_escalation_costs_follow_the_sizes():
    # Work in default searches: partitions twice as large cost twice the pairs; the exact search of 1M x 384 (62
    # default partitions, overlap 2) costs about 4.5 of them, more than the 2x and 4x steps, and at 10M (611
    # partitions) about 44, past the budget.
    assert step_units(1_000_000, 31, 62, 2) == 2.0 and step_units(1_000_000, 16, 62, 2) == pytest.approx(3.875)
    assert 2.0 < exact_units(1_000_000, 62, 2) < 16 / 3.5
    assert exact_units(10_000_000, 611, 2) > BUDGET_UNITS
    # The FP16 GEMM's exact search costs less than the checked one, and at 10M it is still past the budget.
    assert 1.0 < exact_units(1_000_000, 62, 2, "fp16") < exact_units(1_000_000, 62, 2)
    assert exact_units(10_000_000, 611, 2, "fp16") > BUDGET_UNITS


def test_the_ladder_of_larger_partitions_is_projected_from_the_recall():
    # 0.80 -> 0.95 with 0.6 of the miss left per doubling: 0.2 -> 0.12 -> 0.072 -> 0.0432, three doublings of 62
    # partitions (31, 16, 8): 2 + 3.875 + 7.75 default searches, more than the exact search at 1M.
    assert ladder_units(0.80, 0.95, 1_000_000, 62, 62, 2, 0.6) == pytest.approx(13.625)
    assert ladder_units(0.80, 0.95, 1_000_000, 62, 62, 2, 0.6) > exact_units(1_000_000, 62, 2, "fp16")
    assert ladder_units(0.93, 0.95, 1_000_000, 62, 62, 2, 0.6) == 2.0  # one doubling: 0.07 -> 0.042
    assert ladder_units(0.96, 0.95, 1_000_000, 62, 62, 2, 0.6) == 0.0  # there already
    assert ladder_units(0.80, 0.95, 1_000_000, 4, 62, 2, 0.6) == float("inf")  # runs out of partitions (2, 1)
    assert ladder_units(0.80, 1.0, 1_000_000, 62, 62, 2, 0.6) == float("inf")  # only the exact search finds all


def test_the_exact_step_takes_the_fp16_gemm_on_the_gpu_only_where_it_serves():
    assert exact_precision(384, 15, "gpu") == "fp16"
    assert exact_precision(384, 15, "cpu") == "auto"  # the CPU's exact search has one precision
    assert exact_precision(8, 15, "gpu") == "auto"  # few features: FP32, as "auto" takes it
    assert exact_precision(384, 200, "gpu") == "auto"  # too many candidates for the refine kernel
    assert exact_precision(70_000, 15, "gpu") == "auto"  # half scores could overflow


def test_memory_check_names_need_free_and_fix():
    # 10M x 384 exact: X and its scaled copy alone are 30 GB; on a GPU with 20 GiB free it cannot start.
    with pytest.raises(MemoryError) as info:
        check_graph_fits(10_000_000, 384, 15, "exact-gpu", free_total=(20 * GIB, 80 * GIB))
    text = str(info.value)
    need = graph_bytes_needed(10_000_000, 384, 15, "exact-gpu")
    assert f"{need / GIB:.2f} GiB" in text and "20.00 GiB of 80.00 GiB is free" in text
    assert "knn='approx'" in text and "fewer rows" in text and "memory-mapped" in text
    # The partitioned search of host data fits there, and nothing is raised.
    check_graph_fits(10_000_000, 384, 15, "partitioned-gpu", 611, 2, free_total=(20 * GIB, 80 * GIB))
    with pytest.raises(MemoryError, match="more knn_partitions"):
        check_graph_fits(10_000_000, 384, 15, "partitioned-gpu", 611, 2, free_total=(GIB // 2, 80 * GIB))
    assert graph_bytes_needed(1000, 8, 15, "exact-gpu") < 50 * 2**20


# ------------------------------------------------------------------------------------------------- GPU


@pytest.mark.gpu
def test_gpu_partitioned_graph_is_deterministic_and_finds_the_neighbours(text_like):
    first = build_graph(text_like, knn="approx", knn_partitions=8, random_state=0, device="gpu", cache=False)
    again = build_graph(text_like, knn="approx", knn_partitions=8, random_state=0, device="gpu", cache=False)
    assert first.params["knn"] == "partitioned-gpu"
    assert first.fingerprint == again.fingerprint
    assert first.knn_indices.tobytes() == again.knn_indices.tobytes()
    assert recall_at_k(text_like, first.knn_indices, sample=500, seed=1, device="gpu") >= 0.95


@pytest.mark.gpu
def test_gpu_partitioned_matches_the_cpu_twin(text_like):
    gpu_idx, _ = partitioned_knn(text_like, 15, n_partitions=8, random_state=0, device="gpu")
    cpu_idx, _ = partitioned_knn(text_like, 15, n_partitions=8, random_state=0, device="cpu")
    # The k-means runs in float32 GEMMs on each device, so a point at a near-tie between two centroids may join
    # another partition on the other device: neighbour sets agree on almost every row, not promised on all.
    same = np.mean([set(a) == set(b) for a, b in zip(gpu_idx.tolist(), cpu_idx.tolist(), strict=True)])
    assert same >= 0.97


@pytest.mark.gpu
def test_gpu_host_data_streams_to_the_same_neighbours(tmp_path, text_like):
    path = tmp_path / "x.npy"
    np.save(path, text_like)
    mapped = np.load(path, mmap_mode="r")
    # The search alone (refine=0); with its round, test_knn_refine.py's GPU tests compare the two.
    streamed = partitioned_knn(mapped, 15, n_partitions=8, random_state=0, device="gpu", data_on_device=False, refine=0)
    resident = partitioned_knn(
        text_like, 15, n_partitions=8, random_state=0, device="gpu", data_on_device=True, refine=0
    )
    assert np.array_equal(streamed[0], resident[0]) and np.array_equal(streamed[1], resident[1])


@pytest.mark.gpu
def test_gpu_auto_above_the_exact_bound_is_partitioned_with_its_recall_measured():
    # Above the bound "auto" picks the partitioned search and records its measured recall; clustered 8-d data
    # (2,000 round clusters) leaves it no reason to warn.
    rng = np.random.default_rng(0)
    n = AUTO_GPU_EXACT_MAX_ROWS + 1
    centres = rng.normal(size=(2000, 8)).astype(np.float32) * 20
    X = centres[rng.integers(0, 2000, n)] + rng.normal(size=(n, 8)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="knn='auto'")
        graph = build_graph(X, random_state=0, device="gpu", cache=False, progress=False)
    assert graph.params["knn"] == "partitioned-gpu"
    assert 0.95 <= graph.params["knn_recall"] <= 1.0
    assert graph.params["knn_recall"] == round(recall_at_k(X, graph.knn_indices, sample=1000, seed=0, device="gpu"), 4)


@pytest.mark.gpu
def test_gpu_auto_escalates_until_the_target_or_says_what_it_reached():
    # 32-d Gaussian noise has no clusters for partitions to follow: the first search misses many neighbours, and
    # "auto" escalates (rounds, larger partitions, or the exact search), records each step, and either reaches the
    # target or warns with the recall reached; twice gives the same bytes (decisions from seeded recall only).
    n = AUTO_GPU_EXACT_MAX_ROWS + 1
    X = np.random.default_rng(1).normal(size=(n, 32)).astype(np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph = build_graph(X, random_state=0, device="gpu", cache=False, progress=False)
    again = build_graph(X, random_state=0, device="gpu", cache=False, progress=False)
    steps = graph.params["knn_steps"]
    assert steps[0][0] == "partitioned" and steps[0][3] < 0.95 and len(steps) >= 2
    assert graph.params["knn_recall"] == steps[-1][3] > steps[0][3]
    assert graph.params["knn_recall"] == round(recall_at_k(X, graph.knn_indices, sample=1000, seed=0, device="gpu"), 4)
    assert graph.params["knn"] == ("exact-gpu" if steps[-1][0].startswith("exact") else "partitioned-gpu")
    # Far below the target, the exact search runs at once, with the FP16 GEMM (recall measured after it).
    assert [s[0] for s in steps][:2] == ["partitioned", "exact-fp16"] and graph.params["knn_recall"] >= 0.99
    short = [w for w in caught if "below its target" in str(w.message)]
    assert (graph.params["knn_recall"] >= 0.95) == (not short)
    if short:
        assert "knn='exact'" in str(short[0].message) and "s on an H200" in str(short[0].message)
    assert graph.fingerprint == again.fingerprint and graph.params == again.params


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_recall_truth_searched_in_blocks_is_the_whole_search(metric, device):
    X = datasets.load("text_like", n_samples=20_000, random_state=0)[0]
    rows, whole = sampled_truth(X, 15, 300, seed=2, metric=metric, device=device)
    for block in (7_001, 20_000 - 3):  # the last block smaller than k is merged as candidates
        again, blocked = sampled_truth(X, 15, 300, seed=2, metric=metric, device=device, block_rows=block)
        assert np.array_equal(rows, again) and whole.tobytes() == blocked.tobytes()


def test_auto_search_that_meets_its_target_is_the_search_and_its_round(text_like):
    # Structured data: the first search and its default round reach the target, so nothing more runs and the graph
    # is the plain partitioned search's with one round.
    idx, dist, record = auto_knn(text_like, 15, "euclidean", 8, 2, random_state=0, rounds=1, device="cpu")
    plain = partitioned_knn(text_like, 15, n_partitions=8, random_state=0, refine=1)
    assert idx.tobytes() == plain[0].tobytes() and dist.tobytes() == plain[1].tobytes()
    assert record["knn_steps"] == [["partitioned", 8, 1, record["knn_recall"]]] and record["knn_recall"] >= 0.95
    assert record["knn"] == "partitioned" and record["knn_refine"] == 1 and record["knn_work"] == 1.3


def test_auto_search_escalates_on_data_without_clusters_and_repeats_its_bytes():
    # 32-d Gaussian noise cut into 40 partitions of 500 rows: the first search misses about half the neighbours, so
    # far from the target that no round is waited for, and the ladder of larger partitions projected to reach it
    # costs more than the exact search (2.9 default searches): the exact search follows at once.
    X = np.random.default_rng(3).normal(size=(20_000, 32)).astype(np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idx, dist, record = auto_knn(X, 15, "euclidean", 40, 2, random_state=0, rounds=1, device="cpu")
    short = [w for w in caught if "below its target" in str(w.message)]
    assert (record["knn_recall"] >= 0.95) == (not short)
    steps = record["knn_steps"]
    assert steps[0][:2] == ["partitioned", 40] and steps[0][3] < 0.95 and len(steps) >= 2
    recalls = [s[3] for s in steps]
    assert recalls == sorted(recalls) and record["knn_recall"] == recalls[-1]  # a step never loses a neighbour
    assert record["knn_recall"] == round(recall_at_k(X, idx, sample=1000, seed=0), 4)
    assert record["knn_work"] <= BUDGET_UNITS and record["knn_refine"] == sum(s[2] for s in steps)
    assert [s[0] for s in steps] == ["partitioned", "exact"] and steps[0][2] == 0 and record["knn_recall"] == 1.0
    assert record["knn"] == "exact" and idx.tobytes() == exact_knn(X, 15, progress=False)[0].tobytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = auto_knn(X, 15, "euclidean", 40, 2, random_state=0, rounds=1, device="cpu")
    assert idx.tobytes() == again[0].tobytes() and dist.tobytes() == again[1].tobytes() and record == again[2]


def test_auto_search_close_to_its_target_refines_before_the_exact_search(text_like):
    # Structured data a hair short of target 1.0 (which only the exact search is sure to reach): a round may close a
    # gap this narrow, so rounds run first, while they gain; then the exact search, not the larger partitions.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idx, _, record = auto_knn(text_like, 15, "euclidean", 8, 2, random_state=0, rounds=1, target=1.0, device="cpu")
    steps = record["knn_steps"]
    assert [s[0] for s in steps] == ["partitioned", "exact"] and steps[0][2] >= 1 and 0.95 <= steps[0][3] < 1.0
    assert record["knn_recall"] == 1.0 and idx.tobytes() == exact_knn(text_like, 15, progress=False)[0].tobytes()


def test_auto_search_short_of_its_target_warns_with_the_recall_and_the_exact_estimate():
    # 200 partitions of 100 rows: the exact search costs more than the budget, and the larger partitions it affords
    # do not reach 0.999 on 64-d noise.
    X = np.random.default_rng(3).normal(size=(20_000, 64)).astype(np.float32)
    with pytest.warns(UserWarning, match=r"reached recall@k 0\.\d+ on .* below its target 0\.999 .*knn='exact'"):
        _, _, record = auto_knn(X, 15, "euclidean", 200, 2, random_state=0, rounds=1, target=0.999, device="cpu")
    assert record["knn_recall"] < 0.999 and record["knn_steps"][-1][0] == "partitioned"
    assert record["knn_work"] <= BUDGET_UNITS
