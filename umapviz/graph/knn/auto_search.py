"""``knn="auto"`` on the GPU above the exact bound: the partitioned search, then more work until a measured recall
(:func:`auto_knn`; it runs on the CPU too, for tests and studies).

The search aims at a recall@k (``target``, 0.95 by default) measured on AUTO_RECALL_SAMPLE sampled rows against the
exact search (:func:`umapviz.graph.knn.recall.sampled_truth`, float64 re-scoring: the same figure on every run).
After the partitioned search with its refinement rounds it escalates, one step at a time, while the recall is
below the target:

1. the exact search (n at most AUTO_GPU_EXACT_FALLBACK_MAX_ROWS, within the budget) where it is estimated cheaper
   than the ladder of larger partitions that the recall projects to the target (:func:`ladder_units`: each search
   with partitions twice as large leaves MISS_PER_DOUBLING of the neighbours missed, or the share the last such
   step measured), or where that ladder would overrun the budget; not while a refinement round may still close
   the gap (it is within ROUND_LIKELY_GAIN);
2. another refinement round (:func:`.refine.refine_knn`) while the last one gained at least ROUND_MIN_GAIN and
   fewer than MAX_ROUNDS ran since the last search;
3. else the partitioned search again with partitions twice as large (half as many; bench/PARTITIONED_KNN.md: on
   round clusters, larger partitions buy more recall per unit of work than more overlap or another partitioning),
   its graph united with the current one (:func:`.refine.union_knn`: recall never falls), then rounds again.

On the GPU the exact step's GEMM runs in FP16 (:func:`exact_precision`; half the score traffic of TF32, and the
recall is measured after it, as after every step); should that measure fall short of the target, the exact search
with the checked GEMM (``precision="auto"``, what ``knn="exact"`` runs) follows where the budget has room.

Each step is taken only while the estimated work of all steps stays within BUDGET_UNITS default searches
(:func:`step_units`): the estimates come from the sizes alone, and every decision from a recall on fixed sampled
rows, never from a clock, so the same data and seed take the same steps and give the same bytes on every GPU (and
the cache key, made before the build, names the target). Where the target is not reached the warning gives the
recall reached and the exact graph's estimated time (:func:`exact_seconds`).
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._backend import cupy, gpu_memory, is_cupy, to_host
from ..._host_data import to_device
from . import AUTO_GPU_EXACT_FALLBACK_MAX_ROWS, AUTO_RECALL_SAMPLE, stop_if_cancelled
from .knn_cpu import exact_knn
from .knn_gpu import FP32_MAX_FEATURES, exact_knn_gpu, knn_bytes_needed
from .partitioned import partitioned_bytes_needed, partitioned_knn
from .recall import recall_from_truth, sampled_truth
from .refine import refine_bytes_needed, refine_knn, union_knn

DEFAULT_TARGET = 0.95
ROUND_MIN_GAIN = 0.002
MAX_ROUNDS = 6
BUDGET_UNITS = 8.0
# Work in units of the default partitioned search (one per 16,384 rows, overlap 2): a refinement round, and the
# exact search's work per pair of points over a partitioned search's per pair (its GEMMs are larger and its launches
# fewer). Measured on an H200 at 1M x 384 (bench/PARTITIONED_KNN.md, bench/RESULTS.md): a round 0.3 of the search's
# seconds; the exact search 5.6 s for 1e12 pairs against 1.26 s for the search's 6.6e10.
ROUND_UNITS = 0.3
EXACT_PAIR_COST = 0.29
# The same for the exact search with the FP16 GEMM: an estimate, half of EXACT_PAIR_COST (its scores are half the
# bytes and its GEMM runs at about twice TF32's rate), until bench/knn_auto.py's exact_fp16 line measures it.
EXACT_FP16_PAIR_COST = 0.15
# The share of the missed neighbours that a search with partitions twice as large (united with the last graph) still
# misses, until a step measures it: on round 384-d clusters at 1M, 8,192 -> 16,384 rows per partition took the miss
# from 0.314 to 0.188 (bench/PARTITIONED_KNN.md, "On the GPU"); one isotropic cloud falls slower (0.82 a doubling).
MISS_PER_DOUBLING = 0.6
# Recall a refinement round may still add: a gap wider than this does not wait for rounds before the exact step.
ROUND_LIKELY_GAIN = 0.05
# The FP16 GEMM's candidates (:func:`.knn_gpu.n_candidates`) fit the refine kernel up to this many neighbours, and
# its half scores stay finite below this many features (rows scaled into [-1, 1]: |q . z| <= d; half's largest is
# 65,504).
FP16_MAX_NEIGHBORS = 128
FP16_MAX_FEATURES = 65_000
# Seconds per pair and feature of the exact search on that H200, for the warning's estimate only.
EXACT_SECONDS_PER_PAIR_FEATURE = 1.46e-14


def step_units(n: int, n_partitions: int, first_partitions: int, overlap: int) -> float:
    """Estimated work of a partitioned search with ``n_partitions`` in units of the first (``first_partitions``):
    the pairs searched, ``overlap**2 * n * n / n_partitions``, grow as the partitions do.

    Parameters
    ----------
    n : int
        Points.
    n_partitions, first_partitions : int
        This search's partitions and the first's.
    overlap : int
        Partitions each point joins.
    """
    return first_partitions / max(1, n_partitions)


def exact_units(n: int, first_partitions: int, overlap: int, precision: str = "auto") -> float:
    """Estimated work of the exact search in units of the first partitioned search: ``n**2`` pairs over its
    ``overlap**2 * n**2 / first_partitions``, times EXACT_PAIR_COST (EXACT_FP16_PAIR_COST for the FP16 GEMM).

    Parameters
    ----------
    n : int
        Points.
    first_partitions, overlap : int
        The first partitioned search's partitioning.
    precision : str
        The exact search's GEMM (:func:`exact_precision`).
    """
    cost = EXACT_FP16_PAIR_COST if precision == "fp16" else EXACT_PAIR_COST
    return cost * first_partitions / overlap**2


def exact_precision(n_features: int, n_neighbors: int, device: str) -> str:
    """The exact step's GEMM: on the GPU "fp16" above FP32_MAX_FEATURES features (where TF32 is what "auto" starts
    from) up to FP16_MAX_FEATURES, for up to FP16_MAX_NEIGHBORS neighbours, else "auto" (the CPU's exact search has
    one precision).

    Parameters
    ----------
    n_features, n_neighbors : int
        d and k.
    device : str
        "gpu" or "cpu".
    """
    if device == "gpu" and FP32_MAX_FEATURES < n_features <= FP16_MAX_FEATURES and n_neighbors <= FP16_MAX_NEIGHBORS:
        return "fp16"
    return "auto"


def ladder_units(
    recall: float, target: float, n: int, parts: int, first_partitions: int, overlap: int, miss_ratio: float
) -> float:
    """Projected work, in default searches, of the searches with partitions twice as large, then twice again, ...
    that would take ``recall`` to ``target`` if each leaves ``miss_ratio`` of the neighbours missed before it;
    infinite where the partitions run out first (or the target is 1).

    Parameters
    ----------
    recall, target : float
        The recall measured now and the one aimed at.
    n : int
        Points.
    parts, first_partitions, overlap : int
        The last search's partitions, the first's, and the overlap.
    miss_ratio : float
        Miss after a doubling over the miss before it, in (0, 1).
    """
    miss, goal = 1.0 - recall, 1.0 - target
    units = 0.0
    while miss > goal + 1e-12:
        parts = -(-parts // 2)
        if parts < 2 or goal <= 0.0:
            return float("inf")
        units += step_units(n, parts, first_partitions, overlap)
        miss *= miss_ratio
    return units


def exact_seconds(n: int, d: int) -> float:
    """The exact GPU search's estimated seconds for n x d points (an H200's rate; other cards differ)."""
    return EXACT_SECONDS_PER_PAIR_FEATURE * float(n) ** 2 * d


def auto_knn(
    X: Any,
    n_neighbors: int,
    metric: str,
    n_partitions: int,
    overlap: int,
    random_state: int,
    rounds: int,
    target: float = DEFAULT_TARGET,
    cancel: Callable[[], bool] | None = None,
    progress: bool = False,
    device: str = "gpu",
) -> tuple[Any, Any, dict]:
    """The partitioned search escalated until its measured recall reaches ``target`` (see the module docstring):
    ``(indices int32 (n, k), distances float32 (n, k), record)`` on the device; ``record`` holds what
    ``graph.params`` keeps: ``knn`` ("partitioned-gpu" or "exact-gpu", on the CPU without "-gpu"), ``knn_recall``
    (the final recall),
    ``knn_partitions`` (the last search's), ``knn_refine`` (the rounds run in all), ``knn_steps`` (each step as
    ``[what, partitions, rounds, recall]``) and ``knn_work`` (the estimated work in default searches).

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray
        (n, d) float32 data (a NumPy array streams to the GPU partition by partition, and is uploaded for rounds).
    n_neighbors : int
        Neighbours per point, counting the point itself.
    metric : str
        ``"euclidean"`` or ``"cosine"``.
    n_partitions, overlap : int
        The first search's resolved partitioning.
    random_state : int
        Seeds every search's partitioning.
    rounds : int
        Refinement rounds after the first search, resolved (0 where they do not fit: then no rounds at all).
    target : float
        The recall@k to reach.
    cancel : callable, optional
        Asked between the steps (and inside the searches).
    progress : bool
        Print a line per step: what ran, the recall reached, seconds.
    device : str
        ``"gpu"`` (CuPy arrays out; a step that does not fit in GPU memory ends the escalation) or ``"cpu"`` (the
        same steps with the CPU's searches).
    """
    n, d = (int(s) for s in X.shape)
    k = int(n_neighbors)
    gpu = device == "gpu"
    rows, truth = sampled_truth(X, k, AUTO_RECALL_SAMPLE, seed=0, metric=metric, device=device)
    began = time.perf_counter()
    steps: list = []
    may_refine = rounds > 0
    state: dict = {"device_x": X if is_cupy(X) or not gpu else None}

    def measure(idx: Any) -> float:  # the sampled rows' neighbours only travel to the host
        found = to_host(idx[cupy().asarray(rows)] if gpu else idx[rows])
        return round(float(recall_from_truth(found, np.arange(rows.size), truth)), 4)

    def say(what: str, recall: float) -> None:
        if progress:
            seconds = time.perf_counter() - began
            print(f"knn auto: {what}: recall@{k} {recall:.4f} ({seconds:.1f} s)", file=sys.stderr, flush=True)

    def search(parts: int) -> tuple[Any, Any]:
        data = _search_data(X, state, n, d, k, parts, overlap) if gpu else X
        return partitioned_knn(
            data, k, metric, parts, overlap, random_state=random_state, device=device, return_device=True,
            refine=0, cancel=cancel,
        )  # fmt: skip

    def refine_once(idx: Any) -> tuple[Any, Any]:
        return refine_knn(_on_device(X, state), idx, 1, metric, device)

    def exact_search(gemm: str) -> tuple[Any, Any]:
        if gpu:
            data = state["device_x"] if state["device_x"] is not None else X
            return exact_knn_gpu(data, k, metric, precision=gemm, return_device=True, cancel=cancel)
        return exact_knn(X, k, metric, progress=False, cancel=cancel)

    idx, dist = search(n_partitions)
    recall, work, parts = measure(idx), 1.0, n_partitions
    steps.append(["partitioned", parts, 0, recall])
    say(f"partitioned search, {parts} partitions", recall)
    total_rounds, since_search, gain = 0, 0, 1.0
    precision = exact_precision(d, k, device)
    fallback = n <= AUTO_GPU_EXACT_FALLBACK_MAX_ROWS
    exact_cost = exact_units(n, n_partitions, overlap, precision) if fallback else float("inf")
    miss_ratio, miss_before = MISS_PER_DOUBLING, None  # measured once a search with larger partitions ran
    while True:
        stop_if_cancelled(cancel)
        forced = since_search < rounds and total_rounds < rounds  # the default rounds run whatever the recall
        if not forced and recall >= target:
            break
        rounds_left = may_refine and (forced or (gain >= ROUND_MIN_GAIN and since_search < MAX_ROUNDS))
        if recall < target and not (rounds_left and target - recall <= ROUND_LIKELY_GAIN):
            if miss_before is not None:  # what the last doubling (and its rounds so far) left missed
                miss_ratio = min(0.95, max(0.3, (1.0 - recall) / max(miss_before, 1e-9)))
            ladder = ladder_units(recall, target, n, parts, n_partitions, overlap, miss_ratio)
            affordable = work + exact_cost <= BUDGET_UNITS and (not gpu or _exact_fits(n, d, k, precision))
            if affordable and (exact_cost <= ladder or work + ladder > BUDGET_UNITS):
                idx = dist = None
                idx, dist = exact_search(precision)
                recall, work = measure(idx), work + exact_cost
                steps.append(["exact" if precision == "auto" else f"exact-{precision}", 1, 0, recall])
                say(f"exact search ({precision} GEMM)" if gpu else "exact search", recall)
                checked = exact_units(n, n_partitions, overlap)
                if (
                    recall < target
                    and precision != "auto"
                    and work + checked <= BUDGET_UNITS
                    and _exact_fits(n, d, k, "auto")
                ):
                    idx = dist = None
                    idx, dist = exact_search("auto")
                    recall, work = measure(idx), work + checked
                    steps.append(["exact", 1, 0, recall])
                    say("exact search (checked GEMM)", recall)
                break
        if rounds_left:
            if work + ROUND_UNITS > BUDGET_UNITS and not forced:
                break
            idx, dist = refine_once(idx)
            before, recall = recall, measure(idx)
            gain, work = recall - before, work + ROUND_UNITS
            total_rounds, since_search = total_rounds + 1, since_search + 1
            steps[-1][2] += 1
            steps[-1][3] = recall
            say(f"refinement round {since_search}", recall)
            continue
        nxt = -(-parts // 2)
        search_cost = step_units(n, nxt, n_partitions, overlap) if nxt >= 2 else float("inf")
        if work + search_cost > BUDGET_UNITS or (gpu and not _search_fits(X, state, n, d, k, nxt, overlap)):
            break
        new_idx, _ = search(nxt)
        idx, dist = union_knn(_on_device(X, state), [idx, new_idx], metric)
        del new_idx
        miss_before = 1.0 - recall
        parts, work = nxt, work + search_cost
        recall = measure(idx)
        steps.append(["partitioned", parts, 0, recall])
        say(f"partitioned search, {parts} partitions, united with the last graph", recall)
        since_search, gain = 0, 1.0
    record = {
        "knn": ("exact" if steps[-1][0].startswith("exact") else "partitioned") + ("-gpu" if gpu else ""),
        "knn_recall": recall,
        "knn_target_recall": target,
        "knn_partitions": parts,
        "knn_refine": total_rounds,
        "knn_steps": steps,
        "knn_work": round(work, 2),
    }
    if recall < target:
        _warn_short(recall, target, n, d, steps, work)
    return idx, dist, record


def _on_device(X: Any, state: dict) -> Any:
    """X on the GPU for a union or a round (uploaded once and kept)."""
    if state["device_x"] is None:
        state["device_x"] = to_device(X)
    return state["device_x"]


def _held(n: int, k: int) -> int:
    """GPU bytes the current graph holds beside a step: indices and distances."""
    return 8 * n * k


def _search_data(X: Any, state: dict, n: int, d: int, k: int, parts: int, overlap: int) -> Any:
    """X as a search takes it: the GPU copy where one is held (or X is a CuPy array), else the host array,
    streamed; a held copy of host data is dropped first where the search does not fit beside it."""
    held = state["device_x"]
    if held is None:
        return X
    if is_cupy(X):
        return X
    need = partitioned_bytes_needed(n, d, k, parts, overlap, data_on_device=False) + _held(n, k)
    if need <= gpu_memory()[0]:
        return held
    state["device_x"] = None  # streamed instead: uploaded again for the rounds
    return X


def _search_fits(X: Any, state: dict, n: int, d: int, k: int, parts: int, overlap: int) -> bool:
    """Whether a search with ``parts`` partitions, then a union (X on the GPU and two graphs), fits beside the
    current graph: host X counted as streamed, so that a held copy may be dropped for the search."""
    free = gpu_memory()[0] + (0 if is_cupy(X) or state["device_x"] is None else 4 * n * d)
    search = partitioned_bytes_needed(n, d, k, parts, overlap, data_on_device=False) + _held(n, k)
    union = (0 if is_cupy(X) else 4 * n * d) + refine_bytes_needed(n, k) + 2 * _held(n, k)
    return max(search, union) <= free


def _exact_fits(n: int, d: int, k: int, precision: str) -> bool:
    """Whether the exact search with the ``precision`` GEMM fits with the current graph freed."""
    return knn_bytes_needed(n, d, k, min(n, 1024), precision) <= gpu_memory()[0] + _held(n, k)


def _warn_short(recall: float, target: float, n: int, d: int, steps: list, work: float) -> None:
    """The UserWarning of a search that stopped below its target: the recall reached, what ran, the exact graph's
    estimated time, and the knobs."""
    searches = sum(1 for s in steps if s[0] == "partitioned")
    rounds = sum(s[2] for s in steps)
    warnings.warn(
        f"knn='auto' reached recall@k {recall:.3f} on {AUTO_RECALL_SAMPLE} sampled rows of {n:,} x {d} points, below "
        f"its target {target} (graph.params['knn_steps']: {searches} partitioned searches, the last with "
        f"{steps[-1][1]} partitions, {rounds} refinement rounds; about {work:.1f} times the first search's work, "
        f"the budget being {BUDGET_UNITS:g}). The exact graph (knn='exact') would take about "
        f"{exact_seconds(n, d):,.1f} s on an H200. Or pass a lower knn_target_recall, fewer knn_partitions (larger "
        "partitions), or a larger knn_overlap.",
        UserWarning,
        stacklevel=4,
    )
