"""The layout optimizer: strategies, reproducibility, invariants, stepping, bad input."""

from __future__ import annotations

import _thread
import dataclasses
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numba
import numpy as np
import pytest
from numba import njit
from sklearn.manifold import trustworthiness as sklearn_trustworthiness

from umapviz import datasets, metrics
from umapviz._backend import cupy, gpu_available
from umapviz.graph import build_graph
from umapviz.graph._types import FuzzyGraph
from umapviz.graph.fuzzy import find_ab_params
from umapviz.graph.knn.knn_gpu import _plan_tile
from umapviz.graph.start import spectral_init
from umapviz.metrics import trustworthiness
from umapviz.optimize import REPRODUCIBLE, STRATEGIES, LayoutOptimizer, engine_cpu, engine_gpu
from umapviz.optimize.chunks import chunk_bounds, chunks_for, resolve_n_chunks
from umapviz.optimize.engine_cpu import scatter_n_neg, schedule
from umapviz.optimize.engine_gpu import _check_fits
from umapviz.optimize.moves_cpu import pow_portable
from umapviz.optimize.optimizer import SEQUENTIAL_GPU_EDGES, sequential_gpu_advice
from umapviz.optimize.params import EngineParams
from umapviz.optimize.rng import edge_order, negative_vertex, negative_vertices, resolve_seed
from umapviz.optimize.vertex_index import VERTEX_WIDE_GROUP, VERTEX_WIDE_ITEMS, vertex_group_sizes, vertex_index


def _run(graph, **kw) -> np.ndarray:
    return LayoutOptimizer(graph, **kw).run().embedding


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_lays_out_the_clusters(small_graph, blobs_small, strategy):
    emb = _run(small_graph, strategy=strategy, n_chunks=8, random_state=0)
    assert emb.shape == (small_graph.n_vertices, 2) and emb.dtype == np.float32
    assert np.isfinite(emb).all()
    assert sklearn_trustworthiness(blobs_small[0], emb, n_neighbors=10) > 0.85


@pytest.mark.parametrize("strategy", sorted(REPRODUCIBLE))
def test_deterministic_strategies_repeat_bytes_whatever_the_threads(small_graph, strategy):
    before = numba.get_num_threads()
    try:
        out = []
        for threads in (1, numba.config.NUMBA_NUM_THREADS, 1):
            numba.set_num_threads(threads)
            out.append(_run(small_graph, strategy=strategy, n_chunks=5, random_state=7).tobytes())
    finally:
        numba.set_num_threads(before)
    assert out[0] == out[1] == out[2]


_THREADS_SCRIPT = """
import json, sys
import numba
from umapviz import datasets
from umapviz.graph import build_graph
from umapviz.metrics import fingerprint
from umapviz.optimize import LayoutOptimizer, engine_cpu
X, _ = datasets.load("mixture", n_samples=3000, random_state=0)
graph = build_graph(X, n_neighbors=15, n_epochs=60, knn="exact", cache=False, progress=False)
out = {"n_vertices": graph.n_vertices, "parallel_min": engine_cpu._PARALLEL_MIN, "block": engine_cpu._BLOCK}
for strategy, n_chunks in [("sequential", 1), ("buffered", 1), ("chunked", 2), ("chunked", "auto"), ("vertex", 1)]:
    prints = []
    for threads in (1, 2):
        numba.set_num_threads(threads)
        opt = LayoutOptimizer(graph, strategy=strategy, n_chunks=n_chunks, random_state=3, init="random")
        chunk = max(r.active_edges // opt.n_chunks for r in opt.epochs())
        prints.append(fingerprint(opt.embedding))
    out[f"{strategy}/{n_chunks}"] = {"fingerprints": prints, "largest_chunk": chunk}
print(json.dumps(out))
"""


def test_one_and_two_numba_threads_give_the_same_bytes(tmp_path):
    """With two threads the parallel paths run (chunks of at least engine_cpu._PARALLEL_MIN edges split into
    blocks, the vertex strategy's vertices in blocks of _BLOCK) and give the bytes of one thread. A child process,
    so that two threads exist whatever this machine's core count (NUMBA_NUM_THREADS is read at start)."""
    env = {**os.environ, "NUMBA_NUM_THREADS": "2", "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    run = subprocess.run(
        [sys.executable, "-c", _THREADS_SCRIPT], capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["n_vertices"] > out["block"]  # the vertex strategy has more than one block of vertices
    for name in ("buffered/1", "chunked/2"):  # these reach the parallel chunk path
        assert out[name]["largest_chunk"] >= out["parallel_min"], name
    for name, row in out.items():
        if isinstance(row, dict):
            assert row["fingerprints"][0] == row["fingerprints"][1], name


@njit
def _portable_pows(xs, y, out):
    for i in range(xs.shape[0]):
        out[i] = pow_portable(xs[i], y)


def _ulps(a, b):
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))


def _correctly_rounded(xs: np.ndarray, y: np.float32) -> tuple[np.ndarray, np.ndarray]:
    """(float32(float64(x) ** float64(y)) with pow_portable's flush of results below 2^-126 to 0, and where the
    float64 power lies exactly halfway between two floats, which only a correctly rounded power gets right)."""
    with np.errstate(over="ignore", under="ignore"):
        exact = xs.astype(np.float64) ** np.float64(y)
        f = exact.astype(np.float32)
        other = np.nextafter(f, np.where(exact > f, np.float32(np.inf), np.float32(0)).astype(np.float32))
    tie = exact == (f.astype(np.float64) + other.astype(np.float64)) / 2
    return np.where(exact < 2.0**-126, np.float32(0), f), tie


@pytest.mark.parametrize(
    "y",
    [
        *find_ab_params(1.0, 0.0)[1:],
        *find_ab_params(1.0, 0.1)[1:],
        *find_ab_params(1.0, 0.5)[1:],
        *find_ab_params(2.0, 1.5)[1:],
        0.5,
        1.0,
        2.0,
        0.1,
    ],
)
def test_portable_pow_is_x_to_the_y_correctly_rounded_but_at_near_ties(y):
    """pow_portable against float32(float64(x) ** float64(y)) on 4 * 10^6 positive normal floats: half spread
    over every exponent, half over the layout's squared distances (1e-8 to 1e4). Before its last rounding it is
    within 3e-13 relative of x**y for |y| <= 2 (moves_cpu.py), so it rounds to the same float32 except where
    x**y lies that close to a tie between two floats (or on one: x**2 can), where it may be 1 ulp off: at most a
    fraction 2 * 3e-13 * 2^24 = 1e-5 of the inputs off a tie."""
    y = np.float32(y)
    rng = np.random.default_rng(0)
    xs = np.concatenate(
        [
            rng.integers(0x00800000, 0x7F800000, 2 * 10**6, dtype=np.uint32).view(np.float32),
            (10.0 ** rng.uniform(-8, 4, 2 * 10**6)).astype(np.float32),
        ]
    )
    got = np.empty_like(xs)
    _portable_pows(xs, y, got)
    expected, tie = _correctly_rounded(xs, y)
    finite = np.isfinite(expected)
    assert (np.isinf(got) == ~finite).all()  # beyond float32's range, both overflow
    ulps = _ulps(got[finite], expected[finite])
    assert ulps.max() <= 1
    assert (ulps[~tie[finite]] > 0).mean() < 1e-5


def test_portable_pow_edge_cases():
    f32 = np.float32
    tiny, big = f32(np.finfo(f32).smallest_subnormal), f32(np.finfo(f32).max)
    xs = np.array([f32(2**-126), f32(1.0), f32(4.0), f32(2**-40), f32(1e-30), big], np.float32)
    got = np.empty_like(xs)
    _portable_pows(xs, f32(1.0), got)
    assert got.tobytes() == xs.tobytes()  # x**1 is x: within 3e-13 of a float32, never near a tie
    _portable_pows(xs, f32(0.5), got)
    np.testing.assert_array_equal(got[:4], np.array([2**-63, 1, 2, 2**-20], np.float32))  # exact roots
    specials = np.array([0.0, -0.0, tiny, f32(1.5e-40), np.inf, np.nan, -1.0, big, f32(1e-30)], np.float32)
    got = np.empty_like(specials)
    _portable_pows(specials, f32(2.0), got)
    # 0 and subnormals give 0 (no subnormal operand); inf and NaN pass; a negative base is NaN; overflow gives
    # inf, and a result below 2^-126 (1e-60) gives 0, not a subnormal
    np.testing.assert_array_equal(got, np.array([0, 0, 0, 0, np.inf, np.nan, np.nan, np.inf, 0], np.float32))
    assert np.signbit(got[:4]).sum() == 0  # +0 each, the same bits on both devices
    _portable_pows(np.array([2.0], np.float32), f32(np.nan), got[:1])
    assert np.isnan(got[0])


def test_cpu_engine_kernels_have_no_fused_or_relaxed_float_operations(small_graph):
    """No fastmath anywhere in the moves: every float operation of the compiled kernels carries no fast-math
    flag (contract, reassoc, ...), calls no fused multiply-add, and the machine code has none. A fastmath function
    shows what the check sees."""
    for strategy in ("sequential", "chunked", "vertex"):
        LayoutOptimizer(small_graph, strategy=strategy, n_chunks=2, random_state=0, n_epochs=3).run()

    def float_op_flags(ir):
        return set(re.findall(r"= f(?:add|sub|mul|div) ((?:[a-z]+ )*)(?:float|double)", ir))

    fused = re.compile(r"\bv?fn?m(?:add|sub)\w*")
    for kernel in (engine_cpu._live_edges, engine_cpu.epoch_chunked, engine_cpu.epoch_vertex):
        assert kernel.signatures and not kernel.targetoptions.get("fastmath"), kernel
        # Code loaded from Numba's cache cannot be inspected: the same function, options and signatures, compiled
        # afresh.
        fresh = njit(**{k: v for k, v in kernel.targetoptions.items() if k != "nopython"})(kernel.py_func)
        for sig in kernel.signatures:
            fresh.compile(sig)
        for sig, ir in fresh.inspect_llvm().items():
            assert float_op_flags(ir) == {""}, kernel
            assert "llvm.fma" not in ir and "fmuladd" not in ir, kernel
            assert not fused.findall(fresh.inspect_asm(sig)), kernel
    relaxed = njit(fastmath=True)(lambda a, b, c: a * b + c)
    relaxed(1.0, 2.0, 3.0)
    assert float_op_flags(next(iter(relaxed.inspect_llvm().values()))) - {""}


@pytest.mark.parametrize("nnz", [0, 1, 2, 17, 65_537, 1_000_003, 2_100_003])
@pytest.mark.parametrize("seed", [0, 5, 2**32 - 1])
def test_edge_order_is_the_documented_permutation(nnz, seed):
    """docs/optimizer.md: perm = np.random.default_rng([seed, 2]).permutation(nnz), as int32; edge_order shuffles an
    int32 array in place (no int64 copy), drawing a block of swaps at a time, which must make the same swaps (the
    largest size runs past one block of draws and one of the generator's raw outputs)."""
    order = edge_order(seed, nnz)
    assert order.dtype == np.int32
    np.testing.assert_array_equal(order, np.random.default_rng([seed, 2]).permutation(nnz))


def test_seed_changes_the_layout(small_graph):
    a = _run(small_graph, strategy="chunked", n_chunks=4, random_state=1)
    b = _run(small_graph, strategy="chunked", n_chunks=4, random_state=2)
    assert not np.array_equal(a, b)


def test_random_state_none_draws_a_seed_and_keeps_it(small_graph):
    opt = LayoutOptimizer(small_graph, strategy="buffered", random_state=None)
    again = LayoutOptimizer(small_graph, strategy="buffered", random_state=opt.seed)
    assert np.array_equal(opt.run().embedding, again.run().embedding)


def test_chunk_apply_takes_the_definitions_bytes():
    """The apply step of a chunk gives every touched row float32(float64(y) + sum * 2**-32) for the integer sum
    of its moves and leaves the sums clear; a coordinate whose sum is 0 keeps its bits (-0.0 stays -0.0, as on
    the GPU)."""

    rng = np.random.default_rng(0)
    n, nnz, dim, lo, hi = 1000, 20000, 2, 1000, 7000
    head_p = rng.integers(0, n, nnz)
    tail_p = (head_p + rng.integers(1, n, nnz)) % n
    active = np.sort(rng.choice(nnz, 8000, replace=False))
    head_fix = np.zeros((nnz, dim), np.int64)
    tail_fix = np.zeros((nnz, dim), np.int64)
    head_fix[:, 0] = rng.integers(-(2**34), 2**34, nnz)  # moves up to 4 in fixed point; axis 1 does not move
    tail_fix[:, 0] = rng.integers(-(2**34), 2**34, nnz)
    y = np.stack([rng.normal(size=n), np.full(n, -0.0)], axis=1).astype(np.float32)
    edges = active[lo:hi]
    sums = np.zeros((n, dim), np.int64)
    np.add.at(sums, head_p[edges], head_fix[: hi - lo])
    np.add.at(sums, tail_p[edges], tail_fix[: hi - lo])
    expected = np.where(sums != 0, (y.astype(np.float64) + sums * 2.0**-32).astype(np.float32), y)
    assert (sums[:, 0] != 0).sum() > 900  # nearly every row is touched
    acc = np.zeros((n, dim), np.int64)
    flag, touched = np.zeros(n, np.bool_), np.empty(n, np.int64)
    engine_cpu._apply_chunk(y, head_p, tail_p, active, lo, hi, head_fix, tail_fix, acc, flag, touched)
    assert y.tobytes() == expected.tobytes()
    assert not acc.any() and not flag.any()


def test_one_edge_per_chunk_is_sequential_up_to_rounding(small_graph):
    seq = LayoutOptimizer(small_graph, strategy="sequential", random_state=3)
    one = LayoutOptimizer(small_graph, strategy="chunked", n_chunks=small_graph.nnz, random_state=3)
    buf = LayoutOptimizer(small_graph, strategy="buffered", random_state=3)
    extent = np.ptp(seq.embedding)
    # SGD amplifies any rounding difference epoch after epoch (x100 an epoch here), so compare after the
    # first epoch with due edges (epoch 0 has none), where the only difference left is the rounding of each
    # move to fixed point (2**-32) and back to float32.
    for _ in range(2):
        seq.step(), one.step(), buf.step()
    diff = np.abs(seq.embedding - one.embedding).max() / extent
    assert diff < 1e-6
    # ...while a single chunk (stale reads) is far from it: the test can tell them apart.
    assert np.abs(seq.embedding - buf.embedding).max() / extent > 100 * max(diff, 1e-9)


def test_pause_and_resume_equals_an_uninterrupted_run(small_graph):
    whole = _run(small_graph, strategy="chunked", n_chunks=3, random_state=5)
    opt = LayoutOptimizer(small_graph, strategy="chunked", n_chunks=3, random_state=5)
    opt.run(callback=lambda o, r: r.epoch >= 17)
    assert opt.epoch == 17
    opt.step(5)
    assert opt.epoch == 22
    for _ in opt.epochs():
        pass
    assert opt.done and opt.embedding.tobytes() == whole.tobytes()
    assert opt.step() is None  # nothing past n_epochs


def test_reset_restarts_from_the_same_init(small_graph):
    opt = LayoutOptimizer(small_graph, strategy="vertex", random_state=5)
    start = opt.embedding
    first = opt.run().embedding
    opt.reset()
    assert opt.epoch == 0 and np.array_equal(opt.embedding, start)
    assert np.array_equal(opt.run().embedding, first)


def test_epoch_records(small_graph):
    opt = LayoutOptimizer(small_graph, strategy="sequential", random_state=0, n_epochs=10)
    records = list(opt.epochs())
    assert [r.epoch for r in records] == list(range(1, 11))
    assert records[0].alpha == pytest.approx(1.0) and records[-1].alpha == pytest.approx(0.1)
    assert records[0].active_edges == 0  # nothing is due at epoch 0: epochs_per_sample >= 1
    # the strongest edges (epochs_per_sample == 1) are due every epoch after the first
    strongest = int((small_graph.epochs_per_sample == 1.0).sum())
    assert all(r.active_edges >= strongest for r in records[1:])
    assert all(r.seconds >= 0 for r in records)


def test_callback_every(small_graph):
    seen = []
    LayoutOptimizer(small_graph, strategy="buffered", random_state=0, n_epochs=10).run(
        callback=lambda o, r: seen.append(r.epoch), every=4
    )
    assert seen == [4, 8, 10]


def test_private_head_option_is_reachable_and_differs(small_graph):
    a = _run(small_graph, strategy="buffered", random_state=1)
    b = _run(small_graph, strategy="buffered", random_state=1, private_head=False)
    assert np.isfinite(b).all() and not np.array_equal(a, b)


def test_init_array_and_random_init(small_graph):
    n = small_graph.n_vertices
    init = np.random.default_rng(0).normal(size=(n, 2)).astype(np.float32)
    opt = LayoutOptimizer(small_graph, init=init, random_state=0)
    assert np.array_equal(opt.embedding, init)
    rnd = LayoutOptimizer(small_graph, init="random", random_state=0).embedding
    assert rnd.min() >= -10 and rnd.max() <= 10
    three = LayoutOptimizer(small_graph, n_components=3, random_state=0, n_epochs=5).run().embedding
    assert three.shape == (n, 3) and np.isfinite(three).all()


def test_hash_numba_and_numpy_agree_and_spread():
    edges = np.arange(5000)
    fast = np.array([negative_vertex(np.uint64(123), np.int64(7), np.int64(e), np.int64(2), 97) for e in edges])
    twin = negative_vertices(123, 7, edges, 2, 97)
    assert np.array_equal(fast, twin)
    counts = np.bincount(twin, minlength=97)
    assert counts.min() > 20 and counts.max() < 90  # about 51 each
    assert not np.array_equal(twin, negative_vertices(124, 7, edges, 2, 97))


def test_chunk_bounds_cut_like_array_split():
    for n, c in [(10, 3), (7, 7), (5, 8), (0, 2), (100, 1)]:
        sizes = [len(p) for p in np.array_split(np.arange(n), c)]
        assert np.diff(chunk_bounds(n, c)).tolist() == sizes


def _hub_graph(n_leaves: int, n_ring: int = 0):
    """A hub joined to n_leaves leaves, plus a ring of n_ring other vertices (to add edges without hubs), as a
    FuzzyGraph with both directions of every edge: max_degree = n_leaves."""

    leaves = np.arange(1, n_leaves + 1)
    ring = np.arange(n_leaves + 1, n_leaves + 1 + n_ring)
    pairs = [np.stack([np.zeros(n_leaves, np.int64), leaves], axis=1)]
    if n_ring:
        pairs.append(np.stack([ring, np.roll(ring, -1)], axis=1))
    pairs = np.concatenate(pairs)
    head = np.concatenate([pairs[:, 0], pairs[:, 1]]).astype(np.int32)
    tail = np.concatenate([pairs[:, 1], pairs[:, 0]]).astype(np.int32)
    order = np.lexsort((tail, head))
    n, nnz = n_leaves + 1 + n_ring, head.size
    knn = np.stack([np.arange(n), np.zeros(n)], axis=1).astype(np.int32)
    return FuzzyGraph(
        head=head[order],
        tail=tail[order],
        weight=np.ones(nnz, np.float32),
        epochs_per_sample=np.ones(nnz),
        knn_indices=knn,
        knn_dists=np.ones((n, 2), np.float32),
        a=1.577,
        b=0.895,
        n_epochs=50,
    )


def test_n_chunks_rules(small_graph):
    assert resolve_n_chunks("auto", small_graph) == chunks_for(
        "auto", small_graph.n_vertices, small_graph.nnz, small_graph.max_degree
    )
    assert resolve_n_chunks(small_graph.nnz, small_graph) == small_graph.nnz
    # the shipped rule switches to nnz-based chunks only above the hub threshold (128 at this size)
    assert small_graph.max_degree <= 128 and resolve_n_chunks("shipped", small_graph) == 4
    assert resolve_n_chunks("degree", small_graph) == -(-small_graph.max_degree // 32)
    # auto: at most 8 of the busiest vertex's edges per chunk
    assert resolve_n_chunks("auto", small_graph) == max(2, -(-small_graph.max_degree // 8))


@pytest.mark.parametrize(
    ("max_degree", "expected"),
    [(1, 2), (8, 2), (16, 2), (17, 3), (568, 71), (715, 90), (1024, 128), (4313, 540), (41_523, 5191)],
)
def test_auto_caps_the_busiest_vertex_at_8_edges_per_chunk(max_degree, expected):
    # at most 8 of the hub's edges per chunk, at least 2, whatever the graph's size and edge count
    for n_vertices, nnz in ((20_000, 486_786), (100_000, 40_000_000), (5_000_000, 132_522_268)):
        assert chunks_for("auto", n_vertices, nnz, max_degree) == expected


@pytest.mark.parametrize(
    ("n_vertices", "nnz", "max_degree", "expected"),
    [
        (20_000, 486_786, 715, 90),  # the default dataset (clusters): 8 of its busiest vertex's 715 edges a chunk
        (1_000_000, 26_065_370, 15_750, 1969),  # the GPU benchmark's 1M mixture graph (shipped: 261)
        (5_000_000, 132_522_268, 41_523, 5191),  # its 5M graph (shipped: 1,326)
        (100_000, 2_681_232, 9358, 1170),  # the study's 100k Gaussian: no edge-count cap (shipped: 27)
    ],
)
def test_auto_is_the_degree_bound_on_graphs_of_any_size(n_vertices, nnz, max_degree, expected):
    assert chunks_for("auto", n_vertices, nnz, max_degree) == expected


def test_auto_never_takes_fewer_chunks_than_the_final_layout_bound_nor_falls_back_to_buffered():
    # the chunk study's bound for a clean final layout, min(ceil(max_degree / 128), ceil(nnz / 1e5)) and at
    # least 2, is a floor: auto, chosen for every epoch, never picks fewer
    assert chunks_for("shipped", 1_000, 23_676, 195) == 1  # a small graph with a hub: 1 chunk is buffered
    assert chunks_for("auto", 1_000, 23_676, 195) == 25
    # clipped to the graph's edges like the others
    assert chunks_for("auto", 3, 2, 2000) == 2
    assert chunks_for("auto", 2, 1, 10) == 1
    rng = np.random.default_rng(0)
    for _ in range(2000):
        n = int(rng.integers(100, 10**7))
        nnz = int(n * rng.uniform(10, 40))
        max_degree = int(rng.integers(2, max(3, n // 10)))
        final_layout = max(2, min(-(-max_degree // 128), -(-nnz // 100_000)))
        assert chunks_for("auto", n, nnz, max_degree) >= final_layout, (n, nnz, max_degree)


def test_shipped_rule_kept_by_name():
    # ceil(nnz / 1e5) when the max degree exceeds 128 / 256 / 512 (up to 100k / 1M / above), else 4
    assert chunks_for("shipped", 20_000, 509_778, 1559) == 6
    assert chunks_for("shipped", 20_000, 509_778, 128) == 4
    assert chunks_for("shipped", 20_000, 509_778, 129) == 6
    assert chunks_for("shipped", 500_000, 12_500_000, 200) == 4
    assert chunks_for("shipped", 500_000, 12_500_000, 257) == 125
    assert chunks_for("shipped", 5_000_000, 125_000_000, 500) == 4
    assert chunks_for("shipped", 5_000_000, 125_000_001, 513) == 1251


def test_auto_resolves_on_a_hub_graph():
    # 600 hub edges among ~700k edges: 75 chunks of 8 of the hub's edges
    graph = _hub_graph(600, n_ring=350_000)
    assert graph.max_degree == 600 and graph.nnz == 701_200
    assert resolve_n_chunks("auto", graph) == 75
    assert resolve_n_chunks("shipped", graph) == 8
    assert resolve_n_chunks("degree", graph) == 19
    # the same hub alone (1,200 edges): the same 75, whatever the edge count; a hub-free ring takes the floor of 2
    small = _hub_graph(600)
    assert resolve_n_chunks("auto", small) == 75
    assert LayoutOptimizer(small, strategy="chunked", n_chunks="auto", random_state=0, init="random").n_chunks == 75
    assert resolve_n_chunks("auto", _hub_graph(2, n_ring=100)) == 2


# The chunk study's worst cases (bench/CHUNK_STUDY.md): per graph, its size, edges and max degree, and the
# smallest n_chunks at which none of the three seeds kept an outlier. Measured, not derived from the rule.
# Every graph that needed more than one chunk: (data, seed, n_vertices, nnz, max_degree, smallest n_chunks
# from which no point was flung). Graphs of up to 10,000 points flung none even with one chunk.
STUDY_SMALLEST_SAFE = [
    ("gaussian", 0, 20_000, 509_778, 1559, 2),
    ("gaussian", 1, 20_000, 509_346, 1652, 2),
    ("mixture", 1, 20_000, 477_258, 568, 2),
    ("gaussian", 0, 50_000, 1_295_548, 2614, 2),
    ("gaussian", 1, 50_000, 1_291_704, 4313, 2),
    ("gaussian", 2, 50_000, 1_293_746, 3955, 4),
    ("mixture", 0, 50_000, 1_227_946, 1765, 2),
    ("mixture", 1, 50_000, 1_225_440, 1587, 2),
    ("mixture", 2, 50_000, 1_227_616, 2374, 2),
    ("gaussian", 0, 100_000, 2_681_232, 9358, 4),
    ("gaussian", 1, 100_000, 2_675_938, 14223, 4),
    ("gaussian", 2, 100_000, 2_676_032, 13095, 2),
    ("mixture", 0, 100_000, 2_523_744, 2964, 2),
    ("mixture", 1, 100_000, 2_519_904, 2740, 2),
    ("mixture", 2, 100_000, 2_520_502, 2816, 2),
]
# The H200 graphs (bench/chunk_study/gpu.jsonl): the smallest n_chunks clean by both outlier tests (bounds, and
# no more neighbour outliers than the hogwild reference); where the neighbours-clean count was not reached
# ("above 8"/"above 16" in CHUNK_STUDY.md), one more than the last unclean rung.
STUDY_SMALLEST_SAFE_GPU = [
    ("gaussian", 0, 1_000_000, 26_634_396, 18480, 8),
    ("gaussian", 1, 1_000_000, 26_619_908, 17575, 8),
    ("gaussian", 2, 1_000_000, 26_624_526, 30851, 8),
    ("mixture", 0, 1_000_000, 25_915_070, 6314, 8),
    ("mixture", 1, 1_000_000, 25_909_842, 11244, 8),
    ("mixture", 2, 1_000_000, 25_902_284, 9682, 8),
    ("mixture_gpu", 0, 1_000_000, 26_065_370, 15750, 9),
    ("mixture_gpu", 1, 1_000_000, 26_067_690, 7898, 16),
    ("mixture_gpu", 2, 1_000_000, 26_058_480, 8185, 8),
    ("gaussian", 0, 2_000_000, 53_487_884, 22650, 8),
    ("gaussian", 1, 2_000_000, 53_476_448, 21224, 8),
    ("gaussian", 2, 2_000_000, 53_481_612, 38758, 8),
    ("mixture_gpu", 0, 2_000_000, 52_552_086, 29281, 32),
    ("mixture_gpu", 1, 2_000_000, 52_548_686, 34908, 9),
    ("mixture_gpu", 2, 2_000_000, 52_523_400, 11697, 9),
    ("mixture_gpu", 0, 5_000_000, 132_522_268, 41523, 17),
]


@pytest.mark.parametrize(
    ("data", "seed", "n_vertices", "nnz", "max_degree", "safe"), STUDY_SMALLEST_SAFE + STUDY_SMALLEST_SAFE_GPU
)
def test_auto_is_at_least_the_measured_safe_count(data, seed, n_vertices, nnz, max_degree, safe):
    assert chunks_for("auto", n_vertices, nnz, max_degree) >= safe, (data, seed)


def test_auto_keeps_every_vertex_below_the_least_loaded_straying_one():
    # counted after every epoch (bench/CHUNK_STUDY.md), hubs strayed with 22 of the busiest vertex's edges per
    # chunk, from 15 down only in single epochs: auto keeps every vertex at or below 8, on any graph
    for max_degree in [*range(1, 3000), 15_750, 41_523, 10**6 + 7]:
        for nnz in (max(max_degree, 24), 10**9):
            n_chunks = chunks_for("auto", 10**7, nnz, max_degree)
            assert max_degree / n_chunks <= 8 and 22 / (max_degree / n_chunks) >= 2.7


def _neighbour_outliers_per_epoch(graph, n_chunks) -> np.ndarray:
    opt = LayoutOptimizer(graph, strategy="chunked", n_chunks=n_chunks, random_state=0)
    return np.array([int(metrics.outliers(opt.embedding, graph, method="neighbors").sum()) for _ in opt.epochs()])


def test_auto_strays_no_point_in_any_epoch_where_few_chunks_do():
    # 3,000 points of the default dataset (hubs of up to 187 edges), 100 epochs from the spectral start: with 2
    # chunks (93 of the busiest vertex's edges per chunk) its hubs stray from their neighbours in early epochs;
    # auto (24 chunks, 8 per chunk) keeps every point by its neighbours after every epoch
    X, _ = datasets.load("clusters", n_samples=3000, random_state=0)
    graph = build_graph(X, n_epochs=100, random_state=0, cache=False, progress=False)
    assert graph.max_degree == 187 and resolve_n_chunks("auto", graph) == 24
    few = _neighbour_outliers_per_epoch(graph, 2)
    assert few.size == 100 and few.max() >= 3, few  # the measure sees the strays
    auto = _neighbour_outliers_per_epoch(graph, "auto")
    assert auto.size == 100 and not auto.any(), np.flatnonzero(auto) + 1


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"strategy": "magic"}, ValueError, "strategy='magic' is not known"),
        ({"n_chunks": 0}, ValueError, "at least 1"),
        ({"n_chunks": -3}, ValueError, "at least 1"),
        ({"n_chunks": 10**9}, ValueError, "only .* edges"),
        ({"n_chunks": "lots"}, ValueError, "not a known rule"),
        ({"n_chunks": 2.5}, TypeError, "n_chunks must be an int"),
        ({"n_epochs": -1}, ValueError, "n_epochs=-1 is out of range"),
        ({"n_epochs": 0}, ValueError, "n_epochs=0 is out of range"),
        ({"learning_rate": 0}, ValueError, "learning_rate"),
        ({"negative_sample_rate": 1001}, ValueError, "negative_sample_rate=1001 .* at most 1000"),
        ({"negative_sample_rate": -1}, ValueError, "negative_sample_rate=-1"),
        ({"init": "pca"}, ValueError, "init='pca' is not known"),
        ({"init": np.zeros((3, 2))}, ValueError, "shape"),
        ({"random_state": -1}, ValueError, "random_state"),
        ({"random_state": "seed"}, TypeError, "random_state"),
        ({"device": "tpu"}, ValueError, "device='tpu'"),
    ],
)
def test_bad_parameters_say_what_to_do(small_graph, kwargs, error, match):
    with pytest.raises(error, match=match):
        LayoutOptimizer(small_graph, **kwargs)


@pytest.mark.parametrize("strategy", ["buffered", "sequential", "hogwild", "vertex"])
@pytest.mark.parametrize(
    "n_chunks, error", [(0, ValueError), (-1, ValueError), ("bogus", ValueError), (2.5, TypeError)]
)
def test_a_bad_n_chunks_is_refused_whatever_the_strategy(small_graph, strategy, n_chunks, error):
    """n_chunks only shapes chunked, but a bad value is a mistake everywhere (buffered took any silently)."""
    with pytest.raises(error, match="n_chunks"):
        LayoutOptimizer(small_graph, strategy=strategy, n_chunks=n_chunks)


@pytest.mark.parametrize("strategy", ["sequential", "hogwild", "vertex"])
def test_a_layout_that_overflows_stops_with_an_error_naming_the_learning_rate(small_graph, strategy):
    """A learning rate of 1e20 overflows float32 within three epochs: the run stops there with an error that says so,
    instead of NaN frames (a blank picture). (buffered and chunked refuse that rate up front: the next test.)"""
    opt = LayoutOptimizer(small_graph, strategy=strategy, learning_rate=1e20, random_state=0)
    with pytest.raises(FloatingPointError, match=r"overflowed float32 at epoch [1-3]\b.*learning_rate=1e\+20"):
        opt.run()
    assert 1 <= opt.epoch <= 3
    assert np.isfinite(LayoutOptimizer(small_graph, strategy=strategy, learning_rate=100.0).run().embedding).all()


def test_an_init_array_too_large_for_float32_moves_is_refused(small_graph):
    """At 1e25 the float strategies went NaN in the second epoch, and the fixed-point ones kept the init with NaN
    moves turned into -2**31, without a word: both are refused up front, naming the fix."""
    init = np.random.default_rng(0).normal(size=(small_graph.n_vertices, 2)).astype(np.float32)
    for scale in (1e25, 2e6):
        with pytest.raises(ValueError, match=r"init array reaches .* Scale it down"):
            LayoutOptimizer(small_graph, init=init * np.float32(scale / np.abs(init).max()))
    LayoutOptimizer(small_graph, init=init * np.float32(1e6 / np.abs(init).max()))


@pytest.mark.parametrize("strategy", ["buffered", "chunked"])
def test_a_learning_rate_beyond_the_fixed_point_range_is_refused(small_graph, strategy):
    """buffered at learning_rate 1e9 put every point at +-2**31 (the fixed-point sums saturated, no error): the
    bound on one chunk's moves of the busiest vertex is checked first, and a rate just under it runs."""
    per_rate = 4.0 * small_graph.max_degree * (2 * 5 + 3)
    limit = 2.0**31 / per_rate
    with pytest.raises(ValueError, match=r"learning_rate=\S+ is too large .* fixed-point .* learning_rate <") as exc:
        LayoutOptimizer(small_graph, strategy=strategy, learning_rate=limit * 1.01)
    shown = float(exc.value.args[0].split("learning_rate < ")[1].split(" ")[0])  # the bound the message gives
    assert 0.99 * limit <= shown <= limit
    opt = LayoutOptimizer(small_graph, strategy=strategy, learning_rate=shown * 0.9999, random_state=0).run()
    assert np.abs(opt.embedding).max() < 2.0**31
    LayoutOptimizer(small_graph, strategy="sequential", learning_rate=limit * 1.01)  # floats: no such bound


def test_nan_init_is_refused(small_graph):
    init = np.zeros((small_graph.n_vertices, 2), np.float32)
    init[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        LayoutOptimizer(small_graph, init=init)


@pytest.mark.parametrize("kind", ["text", "ragged"])
def test_init_that_is_not_numbers_is_refused_by_name(small_graph, kind):
    """It failed with NumPy's "could not convert string to float: np.str_('a')", naming neither init nor the fix."""
    n = small_graph.n_vertices
    init = np.array([["a", "b"]] * n) if kind == "text" else [[0.0, 0.0]] * (n - 1) + [[0.0]]
    with pytest.raises(ValueError, match=rf"init array could not be read as numbers.*shape \({n}, 2\)"):
        LayoutOptimizer(small_graph, init=init)


def test_not_a_graph():
    with pytest.raises(TypeError, match="build_graph"):
        LayoutOptimizer(np.zeros((10, 2)))


def test_gpu_without_gpu_says_so(small_graph):
    if gpu_available():
        pytest.skip("a GPU is present here")
    with pytest.raises(RuntimeError, match="no GPU is usable"):
        LayoutOptimizer(small_graph, device="gpu")


def test_resolve_seed():
    assert resolve_seed(5) == 5
    assert resolve_seed(None) != resolve_seed(None)


def _vertex_epoch_reference(Y, graph, n_neg_edge, seed, t, alpha, group):
    """One epoch of the owner-computes strategy written from docs/optimizer.md, in plain NumPy float32;
    `group`: the items per group, one for all vertices or one per vertex."""
    f32 = np.float32
    a, b = f32(graph.a), f32(graph.b)
    c_att, c_rep = f32(-2.0 * graph.a * graph.b), f32(2.0 * 1.0 * graph.b)
    alpha = f32(alpha)
    n = graph.n_vertices
    S, out = Y.copy(), Y.copy()

    def coef_att(x, y):
        d2 = f32(((x - y) ** 2).sum(dtype=f32))
        return f32(0) if d2 <= 0 else f32(f32(f32(c_att * d2**b) / d2) / f32(a * d2**b + f32(1)))

    for i in range(n):
        items = [("head", e) for e in np.flatnonzero(graph.head == i) if n_neg_edge[e] >= 0]
        items += [("tail", e) for e in np.flatnonzero(graph.tail == i) if n_neg_edge[e] >= 0]
        yi = S[i].copy()
        width = int(np.broadcast_to(group, n)[i])
        for start in range(0, len(items), width):
            moves = np.zeros((max(width, 32), 2), f32)
            for q, (role, e) in enumerate(items[start : start + width]):
                if role == "head":
                    y = yi.copy()
                    y += alpha * np.clip(coef_att(y, S[graph.tail[e]]) * (y - S[graph.tail[e]]), -4, 4)
                    for s in range(n_neg_edge[e]):
                        k = negative_vertex(np.uint64(seed), np.int64(t), np.int64(e), np.int64(s), n)
                        if k == i:
                            continue
                        d2 = f32(((y - S[k]) ** 2).sum(dtype=f32))
                        coef = c_rep / (f32(f32(0.001) + d2) * f32(a * d2**b + f32(1)))
                        y += alpha * (np.clip(coef * (y - S[k]), -4, 4) if d2 > 0 else f32(4))
                    moves[q] = y - yi
                else:
                    h = S[graph.head[e]]
                    moves[q] = -(alpha * np.clip(coef_att(h, yi) * (h - yi), -4, 4))
            half = len(moves) // 2
            while half:
                moves[:half] = moves[:half] + moves[half : 2 * half]
                half //= 2
            yi = yi + moves[0]
        out[i] = yi
    return out


def _first_active_epoch(graph):
    """n_neg per edge in epoch 1 (-1 where inactive), by the CPU schedule; epoch 0 has no active edge."""

    eps = graph.epochs_per_sample.astype(np.float64)
    state = (eps.copy(), eps / 5, eps, eps / 5)
    active, n_neg = np.empty(graph.nnz, np.int32), np.empty(graph.nnz, np.int32)
    assert schedule(*state, 0, active, n_neg) == 0
    m = schedule(*state, 1, active, n_neg)
    n_neg_edge = np.full(graph.nnz, -1)
    n_neg_edge[active[:m]] = n_neg[:m]
    return n_neg_edge


def test_vertex_moves_a_hub_once_per_32_of_its_edges():
    """The owner-computes contract: a hub's 100 edges move it in 4 groups, each computed from one row."""
    graph = _hub_graph(100, 20)
    init = np.random.default_rng(0).uniform(-5, 5, (graph.n_vertices, 2)).astype(np.float32)
    opt = LayoutOptimizer(graph, strategy="vertex", random_state=3, init=init)
    opt.step(2)  # epoch 0 has no active edge (every edge is due at epoch 1)

    n_neg_edge = _first_active_epoch(graph)
    grouped = _vertex_epoch_reference(init, graph, n_neg_edge, opt.seed, 1, opt.alpha(1), group=32)
    serial = _vertex_epoch_reference(init, graph, n_neg_edge, opt.seed, 1, opt.alpha(1), group=1)
    extent = np.ptp(init)
    assert np.abs(opt.embedding - grouped).max() / extent < 1e-5
    assert np.abs(opt.embedding[0] - serial[0]).max() / extent > 1e-3  # the hub: grouping is not a detail


def test_vertex_group_sizes_widen_above_the_threshold():
    items = np.array([0, 5, VERTEX_WIDE_ITEMS - 1, VERTEX_WIDE_ITEMS, VERTEX_WIDE_ITEMS + 1, 10 * VERTEX_WIDE_ITEMS])
    head_ptr = np.concatenate([[0], np.cumsum(items // 2)])
    tail_ptr = np.concatenate([[0], np.cumsum(items - items // 2)])
    assert vertex_group_sizes(head_ptr, tail_ptr).tolist() == [32, 32, 32, 32, 128, 128]


def test_vertex_moves_a_wide_hub_once_per_128_of_its_edges():
    """A vertex with more than VERTEX_WIDE_ITEMS edges (as head and tail) takes its active items 128 at a time;
    the others stay at 32."""

    n_leaves = VERTEX_WIDE_ITEMS // 2 + 20  # the hub: 2 * n_leaves items, all active in epoch 1
    graph = _hub_graph(n_leaves)
    init = np.random.default_rng(1).uniform(-5, 5, (graph.n_vertices, 2)).astype(np.float32)
    opt = LayoutOptimizer(graph, strategy="vertex", random_state=3, init=init)
    opt.step(2)

    n_neg_edge = _first_active_epoch(graph)
    group = np.full(graph.n_vertices, 32)
    group[0] = 128
    wide = _vertex_epoch_reference(init, graph, n_neg_edge, opt.seed, 1, opt.alpha(1), group=group)
    narrow = _vertex_epoch_reference(init, graph, n_neg_edge, opt.seed, 1, opt.alpha(1), group=32)
    extent = np.ptp(init)
    assert np.abs(opt.embedding - wide).max() / extent < 1e-5
    assert np.array_equal(wide[1:], narrow[1:])  # the leaves have 2 items: one group either way
    assert np.abs(opt.embedding[0] - narrow[0]).max() / extent > 1e-4  # the hub: the width is not a detail


def _vertex_index(graph):
    """(head_ptr, tail_ptr, by_tail) of a graph, as the vertex strategy indexes it."""
    n = graph.n_vertices
    head_ptr = np.concatenate([[0], np.cumsum(np.bincount(graph.head, minlength=n))])
    tail_ptr = np.concatenate([[0], np.cumsum(np.bincount(graph.tail, minlength=n))])
    return head_ptr, tail_ptr, np.argsort(graph.tail, kind="stable")


def _is_mirrored(graph) -> bool:
    ix = vertex_index(graph.head, graph.tail, graph.epochs_per_sample, graph.n_vertices)
    head_ptr, tail_ptr, by_tail = _vertex_index(graph)
    assert np.array_equal(ix.head_ptr, head_ptr) and np.array_equal(ix.tail_ptr, tail_ptr)
    assert np.array_equal(ix.by_tail, by_tail)
    assert np.array_equal(ix.tail_head, graph.head[ix.by_tail])
    return ix.mirrored


def test_an_edge_and_its_reverse_share_their_schedule_in_built_graphs(small_graph):
    """What lets the vertex strategy read a tail item's activity at its reverse's place: build_graph's edges come
    in mirrored pairs with equal epochs_per_sample, and then their n_neg agree in every epoch."""

    assert _is_mirrored(small_graph)
    head_ptr, tail_ptr, by_tail = _vertex_index(small_graph)
    reverse = np.empty(small_graph.nnz, np.int64)  # graph-order place of each edge's reverse
    reverse[by_tail] = np.arange(small_graph.nnz)
    eps = small_graph.epochs_per_sample.astype(np.float64)
    state = (eps.copy(), eps / 5, eps, eps / 5)
    active, n_neg = np.empty(small_graph.nnz, np.int32), np.empty(small_graph.nnz, np.int32)
    n_neg_edge = np.empty(small_graph.nnz, np.int32)
    identity = np.arange(small_graph.nnz, dtype=np.int32)
    seen_active = 0
    for t in range(small_graph.n_epochs):
        m = schedule(*state, t, active, n_neg)
        scatter_n_neg(identity, active, n_neg, m, n_neg_edge)
        assert np.array_equal(n_neg_edge[reverse], n_neg_edge)
        seen_active += m
    assert seen_active > 0

    eps2 = eps.copy()
    eps2[0] *= 2  # one edge's weight differs from its reverse's
    assert not _is_mirrored(dataclasses.replace(small_graph, epochs_per_sample=eps2))


def test_vertex_on_a_graph_without_mirrored_weights_follows_the_contract():
    """The hub's edges to its leaves due every epoch, the leaves' edges to the hub every other one: a tail
    item's activity is its own edge's, not its reverse's."""

    graph = _hub_graph(100, 20)
    eps = np.where(graph.head == 0, 1.0, 2.0)
    eps[graph.head > 100] = 1.0  # the ring
    graph = dataclasses.replace(graph, epochs_per_sample=eps, weight=(1.0 / eps).astype(np.float32))
    assert not _is_mirrored(graph)
    init = np.random.default_rng(2).uniform(-5, 5, (graph.n_vertices, 2)).astype(np.float32)
    opt = LayoutOptimizer(graph, strategy="vertex", random_state=3, init=init)
    opt.step(2)

    n_neg_edge = _first_active_epoch(graph)
    assert (n_neg_edge[graph.tail == 0] < 0).all() and (n_neg_edge[graph.head == 0] >= 0).all()
    expected = _vertex_epoch_reference(init, graph, n_neg_edge, opt.seed, 1, opt.alpha(1), group=32)
    assert np.abs(opt.embedding - expected).max() / np.ptp(init) < 1e-5


@pytest.mark.parametrize("strategy", ["chunked", "buffered", "sequential"])
def test_ctrl_c_during_an_epoch_leaves_a_consistent_optimizer_that_resumes_to_the_same_bytes(
    small_graph, strategy, monkeypatch, ctrl_c_raises
):
    """A Ctrl-C during a kernel was raised after the points moved but before the epoch was counted: the optimizer
    said epoch k while holding epoch k+1's layout."""

    whole = _run(small_graph, strategy=strategy, n_chunks=3, random_state=5)
    opt = LayoutOptimizer(small_graph, strategy=strategy, n_chunks=3, random_state=5)
    real = opt._engine.run_epoch

    def run_epoch_then_ctrl_c(t, alpha):
        active = real(t, alpha)
        if t == 9:
            _thread.interrupt_main()  # as if SIGINT came while the kernel ran: raised at the next bytecode
        return active

    monkeypatch.setattr(opt._engine, "run_epoch", run_epoch_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        opt.run(progress=True)
    reference = LayoutOptimizer(small_graph, strategy=strategy, n_chunks=3, random_state=5)
    reference.step(opt.epoch)
    assert opt.epoch == 10 and opt.embedding.tobytes() == reference.embedding.tobytes()
    assert opt.run().embedding.tobytes() == whole.tobytes()


def test_sequential_gpu_advice_only_for_sequential_on_a_gpu_with_a_big_graph():
    big = SEQUENTIAL_GPU_EDGES + 1
    advice = sequential_gpu_advice("sequential", "gpu", big)
    assert f"{big:,} edges" in advice and "device='cpu'" in advice and "strategy='hogwild'" in advice
    assert sequential_gpu_advice("sequential", "gpu", SEQUENTIAL_GPU_EDGES) is None
    assert sequential_gpu_advice("sequential", "cpu", big) is None
    assert all(sequential_gpu_advice(s, "gpu", big) is None for s in ("hogwild", "buffered", "chunked", "vertex"))


# -- the GPU engine (the same contract on the device; tests marked gpu skip, saying why, where none is usable) ---

DETERMINISTIC = ("sequential", "buffered", "chunked", "vertex")


def _opt(graph, strategy, device, **kw):
    kw.setdefault("random_state", 7)
    if strategy == "chunked":
        kw.setdefault("n_chunks", 7)
    return LayoutOptimizer(graph, strategy=strategy, device=device, **kw)


def _rel_diff(a, b) -> float:
    """Largest coordinate difference relative to the embedding's extent (largest per-axis range)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    extent = float((b.max(axis=0) - b.min(axis=0)).max())
    return float(np.abs(a - b).max()) / extent


@pytest.mark.parametrize("strategy", DETERMINISTIC)
def test_deterministic_strategies_repeat_bytes_on_each_device(small_graph, strategy, device):
    runs = [_opt(small_graph, strategy, device).run().embedding for _ in range(2)]
    assert runs[0].dtype == np.float32 and np.isfinite(runs[0]).all()
    assert runs[0].tobytes() == runs[1].tobytes()


@pytest.mark.gpu
@pytest.mark.parametrize(
    "strategy, constant, value",
    [
        ("chunked", "SCHED_WINDOW", 1),
        ("chunked", "SCHED_WINDOW", 3),
        ("vertex", "SCHED_WINDOW", 3),
        # the vertex kernel's tiles: a warp for every vertex, lanes shared by all, a split within this graph's degrees
        ("vertex", "VERTEX_HEAVY", 0),
        ("vertex", "VERTEX_HEAVY", 10**9),
        ("vertex", "VERTEX_HEAVY", 24),
    ],
)
def test_gpu_launch_constants_do_not_change_the_bytes(small_graph, monkeypatch, strategy, constant, value):
    """How many epochs one schedule pass covers, and which vertices get a warp of their own, change how the work
    is spread, never the result."""

    if constant == "VERTEX_HEAVY" and value == 24:  # the split must leave vertices on both sides
        work = np.bincount(small_graph.head, minlength=small_graph.n_vertices) + np.bincount(
            small_graph.tail, minlength=small_graph.n_vertices
        )
        assert work.min() <= 24 < work.max()
    ref = _opt(small_graph, strategy, "gpu").run().embedding
    monkeypatch.setattr(engine_gpu, constant, value)
    other = _opt(small_graph, strategy, "gpu").run().embedding
    assert ref.tobytes() == other.tobytes()


@pytest.mark.gpu
def test_grid_barrier_keeps_chunks_apart_on_a_large_grid(small_graph, monkeypatch):
    """The persistent kernel's barrier, 2,000 chunks (up to 4,000 barriers an epoch) on several blocks per
    multiprocessor, gives the bytes of a grid of one block per multiprocessor; and a second run after a reset
    repeats them (the barrier's counter starts over)."""

    small = _opt(small_graph, "chunked", "gpu", n_chunks=2000)
    assert small._engine._persist_blocks == small._engine._sms  # a typical chunk of a few edges: one block each
    ref = small.run().embedding
    monkeypatch.setattr(engine_gpu, "_TYPICAL_ACTIVE", 1e6)  # as many blocks as fit
    opt = _opt(small_graph, "chunked", "gpu", n_chunks=2000)
    assert opt._engine._persist_blocks >= 2 * opt._engine._sms
    assert opt.run().embedding.tobytes() == ref.tobytes()
    opt.reset()
    assert opt.run().embedding.tobytes() == ref.tobytes()


@pytest.mark.gpu
def test_gpu_epochs_must_run_in_order(small_graph):
    opt = _opt(small_graph, "chunked", "gpu")
    opt.step(2)
    for t in (1, 3, 12):  # a repeat, a skip inside the scheduled window, a skip past it
        with pytest.raises(RuntimeError, match="in order"):
            opt._engine.run_epoch(t, 0.5)
    opt.reset()
    opt.step(3)  # after a reset, from the start again


@pytest.mark.gpu
@pytest.mark.parametrize("strategy", ["chunked", "vertex"])
def test_gpu_reset_mid_window_starts_the_schedule_over(small_graph, strategy):
    """After a reset the schedule (state and the activity bits the next window reads) starts from epoch 0 again,
    wherever in a window the reset came."""
    fresh = _opt(small_graph, strategy, "gpu").run().embedding
    opt = _opt(small_graph, strategy, "gpu")
    opt.step(11)  # past the first window of 8 epochs, into the second
    opt.reset()
    assert opt.run().embedding.tobytes() == fresh.tobytes()


def test_one_chunk_is_buffered_on_each_device(small_graph, device):
    a = _opt(small_graph, "chunked", device, n_chunks=1).run().embedding
    b = _opt(small_graph, "buffered", device).run().embedding
    assert a.tobytes() == b.tobytes()


@pytest.mark.gpu
def test_gpu_schedule_and_active_list_equal_the_cpus(small_graph):
    cpu = _opt(small_graph, "chunked", "cpu")
    gpu = _opt(small_graph, "chunked", "gpu")
    total = 0
    for _ in range(12):
        t = cpu.epoch
        n_cpu, n_gpu = cpu.step().active_edges, gpu.step().active_edges
        assert n_cpu == n_gpu, f"epoch {t}"
        total += n_gpu
        eng = gpu._engine
        act = eng._lists[t - eng._win_t0, :n_gpu].get()
        np.testing.assert_array_equal(act[:, 0], cpu._engine.edge_p[cpu._engine.active[:n_cpu]])
        np.testing.assert_array_equal(act[:, 3], cpu._engine.n_neg_active[:n_cpu])
        np.testing.assert_array_equal(act[:, 1], small_graph.head[act[:, 0]])
        np.testing.assert_array_equal(act[:, 2], small_graph.tail[act[:, 0]])
    assert total > 0


_POW_KERNEL = r"""
extern "C" __global__ void pows(const float* x, float y, int n, float* out) {
    load_pow_tables();  // every kernel that calls the power fills its block's copy of the tables first
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = pow_portable(x[i], y);
}
"""


def _pows_on_both_devices(y: float, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(GPU pow_portable(x, y), CPU pow_portable(x, y)) for float32 `xs`; the GPU's compiled as the engine compiles
    it."""
    cp = cupy()
    y = np.float32(y)
    module = cp.RawModule(code=engine_gpu.kernel_source() + _POW_KERNEL, options=engine_gpu.NVRTC_OPTIONS)
    out = cp.empty(xs.size, cp.float32)
    module.get_function("pows")(((xs.size + 255) // 256,), (256,), (cp.asarray(xs), y, np.int32(xs.size), out))
    host = np.empty_like(xs)
    _portable_pows(xs, y, host)
    return out.get(), host


POW_YS = [find_ab_params(1.0, 0.1)[1], find_ab_params(1.0, 0.0)[1], 0.5, 1.0, 2.0]


@pytest.mark.gpu
@pytest.mark.parametrize("y", POW_YS)
def test_pow_portable_gives_the_same_bits_on_both_devices(y):
    """10^6 random bit patterns over every float (negatives, subnormals, inf and NaN included) and the edge values:
    the same bits on both devices."""
    tiny, big = np.finfo(np.float32).smallest_subnormal, np.finfo(np.float32).max
    xs = np.concatenate(
        [
            np.random.default_rng(1).integers(0, 2**32, 10**6, dtype=np.uint64).astype(np.uint32).view(np.float32),
            np.array([0.0, -0.0, tiny, 1.0, big, np.inf, np.nan], np.float32),
        ]
    )
    gpu, host = _pows_on_both_devices(y, xs)
    differ = gpu.view(np.int32) != host.view(np.int32)
    assert not differ.any(), f"{int(differ.sum())} differ, e.g. x = {xs[differ][:3]}"


@pytest.mark.gpu
@pytest.mark.parametrize("y", POW_YS)
def test_pow_portable_gives_the_same_bits_on_subnormals(y):
    """Subnormal x, and x whose x**y lies below 2^-126: 0 on both devices (pow_portable flushes them itself, so
    that neither device's handling of subnormal floats matters)."""
    rng = np.random.default_rng(2)
    subnormal = rng.integers(1, 0x00800000, 10**5, dtype=np.uint32).view(np.float32)
    edge = 2.0 ** (-126.0 / np.float64(y))  # x**y = 2^-126 there
    below = (edge * 10.0 ** rng.uniform(-6, 0, 10**5)).astype(np.float32)
    below = below[
        (below >= np.finfo(np.float32).tiny)
        & (below.astype(np.float64) ** np.float64(np.float32(y)) < 2.0**-126 * (1 - 1e-9))
    ]
    xs = np.concatenate([subnormal, below])
    gpu, host = _pows_on_both_devices(y, xs)
    assert below.size > 0 or y <= 1.0  # for y <= 1 no normal x gives a result below 2^-126
    assert gpu.tobytes() == host.tobytes() == np.zeros_like(xs).tobytes()


def _same_start_pair(graph, strategy, **kw):
    """(cpu, gpu): optimizers of `graph` from one start array (the CPU's spectral init, handed to both)."""
    cpu = _opt(graph, strategy, "cpu", **kw)
    return cpu, _opt(graph, strategy, "gpu", init=cpu._init, **kw)


def _assert_same_bytes(cpu, gpu):
    """Bit for bit; on failure, how far apart the layouts are (a last-bit difference grows over the epochs)."""
    a, b = cpu.embedding, gpu.embedding
    assert a.tobytes() == b.tobytes(), (
        f"CPU and GPU layouts differ in {int((a != b).sum())} of {a.size} coordinates, at most "
        f"{_rel_diff(b, a):.2e} of the extent"
    )


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("strategy", "n_chunks"),
    [
        ("sequential", None),
        ("buffered", None),
        ("chunked", 4),
        ("chunked", 16),
        ("chunked", 100),
        ("chunked", "auto"),
        ("vertex", None),
    ],
)
def test_cpu_and_gpu_give_the_same_bytes_after_a_full_run(mixture_graph, strategy, n_chunks):
    """One arithmetic on both devices (docs/optimizer.md): the same start gives the same layout, bit for bit,
    after all 200 epochs of the hub-heavy mixture graph, for every deterministic strategy."""
    _, graph = mixture_graph
    kw = {} if n_chunks is None else {"n_chunks": n_chunks}
    cpu, gpu = _same_start_pair(graph, strategy, **kw)
    np.testing.assert_array_equal(cpu.embedding, gpu.embedding)  # the same start
    cpu.run()
    gpu.run()
    assert not np.array_equal(gpu.embedding, gpu._init)
    _assert_same_bytes(cpu, gpu)


@pytest.mark.gpu
@pytest.mark.parametrize("strategy", ["chunked", "vertex"])
def test_random_init_is_the_same_on_both_devices_and_so_is_the_layout(small_graph, strategy):
    """init="random" draws the start on the host from the seed, whatever the device."""
    cpu = _opt(small_graph, strategy, "cpu", init="random")
    gpu = _opt(small_graph, strategy, "gpu", init="random")
    assert cpu.embedding.tobytes() == gpu.embedding.tobytes()
    assert not np.array_equal(
        cpu.embedding, _opt(small_graph, strategy, "cpu", init="random", random_state=8).embedding
    )  # the seed draws it
    cpu.run()
    gpu.run()
    _assert_same_bytes(cpu, gpu)


@pytest.mark.gpu
@pytest.mark.parametrize("n_components", [1, 3])
def test_other_dimensions_give_the_cpus_bytes(small_graph, n_components):
    cpu = _opt(small_graph, "chunked", "cpu", n_components=n_components, init="random").run()
    gpu = _opt(small_graph, "chunked", "gpu", n_components=n_components, init="random").run()
    assert gpu.embedding.shape == (small_graph.n_vertices, n_components)
    assert not np.array_equal(gpu.embedding, gpu._init)  # it moved
    _assert_same_bytes(cpu, gpu)


@pytest.mark.gpu
@pytest.mark.parametrize("strategy", ["chunked", "vertex"])
def test_private_head_off_gives_the_cpus_bytes(small_graph, strategy):
    cpu, gpu = _same_start_pair(small_graph, strategy, private_head=False)
    cpu.run()
    gpu.run()
    assert not np.array_equal(gpu.embedding, gpu._init)
    _assert_same_bytes(cpu, gpu)
    assert gpu.embedding.tobytes() != _opt(small_graph, strategy, "gpu", init=cpu._init).run().embedding.tobytes()


@pytest.mark.gpu
@pytest.mark.parametrize(("n_chunks", "by_rows"), [(4, True), (100, False)])
def test_chunk_apply_by_rows_or_by_edges_gives_the_cpus_bytes(mixture_graph, n_chunks, by_rows):
    """engine_gpu.cu applies a chunk by sweeping every row when its edges touch enough row places (2 * edges >=
    SWEEP_PCT % of the rows), else edge by edge; each way gives the CPU's bytes after a full run. The assertion
    on the active counts makes sure each case takes the way it is named for in every active epoch."""

    _, graph = mixture_graph
    sweep_percent = int(re.search(r"^#define SWEEP_PCT (\d+)", engine_gpu.kernel_source(), re.M).group(1))
    cpu, gpu = _same_start_pair(graph, "chunked", n_chunks=n_chunks)
    active = np.array([record.active_edges for record in gpu.epochs()])
    active = active[active > 0]  # epoch 0 has none (every epochs_per_sample is at least 1): nothing to apply
    assert len(active) >= graph.n_epochs - 2
    smallest, largest = active // n_chunks, -(-active // n_chunks)
    rows = sweep_percent * graph.n_vertices
    assert (200 * smallest >= rows).all() if by_rows else (200 * largest < rows).all()
    cpu.run()
    _assert_same_bytes(cpu, gpu)


@pytest.mark.gpu
def test_vertex_wide_hubs_give_the_cpus_bytes(mixture_graph):
    """Three hubs joined to every other vertex by edges due every epoch (about 6,000 active items each, so
    groups of 128: two share a block of the kernel, the third has one to itself) lay out bit for bit as on the
    CPU, beside the mixture's own hubs (a warp each) and ordinary vertices (tiles), and repeat their bytes."""
    _, graph = mixture_graph
    n, hubs = graph.n_vertices, np.arange(3, dtype=np.int32)
    pairs = [(h, v) for h in hubs for v in range(n) if v != h and not (v in hubs and v < h)]
    h, v = np.array(pairs, np.int32).T
    keep = ~np.isin(graph.head, hubs) & ~np.isin(graph.tail, hubs)  # the hubs' own edges are replaced
    head = np.concatenate([graph.head[keep], h, v])
    tail = np.concatenate([graph.tail[keep], v, h])
    weight = np.concatenate([graph.weight[keep], np.ones(2 * h.size, np.float32)])
    order = np.lexsort((tail, head))
    weight = weight[order]
    wide = dataclasses.replace(
        graph,
        head=head[order],
        tail=tail[order],
        weight=weight,
        epochs_per_sample=(weight.max() / weight).astype(np.float64),
    )
    cpu, gpu = _same_start_pair(wide, "vertex")
    gpu.step(1)
    assert gpu._engine._n_wide == 3 and gpu._engine._n_heavy > 3
    assert (cpu._engine._vertex_arrays()[-1] == VERTEX_WIDE_GROUP).sum() == 3
    cpu.step(40)
    gpu.step(39)
    assert not np.array_equal(gpu.embedding, gpu._init)
    _assert_same_bytes(cpu, gpu)
    again = _opt(wide, "vertex", "gpu", init=cpu._init)
    again.step(40)
    assert again.embedding.tobytes() == gpu.embedding.tobytes()


@pytest.mark.gpu
def test_vertex_reads_tail_flags_only_where_the_graph_is_not_mirrored(mixture_graph):
    """A built graph is mirrored (tail items' activity read at their reverses' places, no tail-order flags); with
    the edges of its first 300 heads made twice as rare as their reverses it is not, and the kernel must read each
    tail item's own flags. Both give the CPU's bytes after a full run."""

    _, graph = mixture_graph
    eps = graph.epochs_per_sample.astype(np.float64)
    eps[graph.head < 300] *= 2
    lopsided = dataclasses.replace(graph, epochs_per_sample=eps, weight=(eps.min() / eps).astype(np.float32))
    for g, mirrored in ((graph, True), (lopsided, False)):
        cpu, gpu = _same_start_pair(g, "vertex")
        cpu.run()
        gpu.run()
        assert gpu._engine._layout["mirrored"] is mirrored
        assert not np.array_equal(gpu.embedding, gpu._init)
        _assert_same_bytes(cpu, gpu)


@pytest.mark.gpu
@pytest.mark.parametrize("negative_sample_rate, nneg_bytes", [(5, 1), (70, 4)])
def test_vertex_nneg_fits_one_byte_unless_negatives_are_many(mixture_graph, negative_sample_rate, nneg_bytes):
    """n_neg stays below (1 + 1/min eps) * negative_sample_rate + 1: one byte per edge and epoch holds it for the
    default rate; 70 negatives per positive sample need four. Both give the CPU's bytes (60 epochs)."""
    _, graph = mixture_graph
    cpu, gpu = _same_start_pair(graph, "vertex", negative_sample_rate=negative_sample_rate)
    cpu.step(60)
    gpu.step(60)
    assert gpu._engine._nneg_bytes() == nneg_bytes
    assert gpu._engine._nneg_edge.dtype.itemsize == nneg_bytes
    _assert_same_bytes(cpu, gpu)


@pytest.mark.gpu
def test_hogwild_on_the_gpu_lays_out_like_the_cpu(mixture_graph):
    X, graph = mixture_graph
    gpu = _opt(graph, "hogwild", "gpu").run()
    Y = gpu.device_embedding
    assert Y.__class__.__module__.startswith("cupy")
    emb = gpu.embedding
    assert np.isfinite(emb).all()
    ref = _opt(graph, "sequential", "cpu").run().embedding
    t_gpu = trustworthiness(X, emb, sample=500)
    t_ref = trustworthiness(X, ref, sample=500)
    assert t_gpu > t_ref - 0.05


@pytest.mark.gpu
def test_a_gpu_layout_that_overflows_stops_with_an_error(small_graph):
    """The float32 overflow check is read back with each epoch's active count (engine_gpu.cu's epoch_status): a
    learning rate of 1e20 stops hogwild within three epochs with the CPU's error."""
    opt = _opt(small_graph, "hogwild", "gpu", learning_rate=1e20)
    with pytest.raises(FloatingPointError, match=r"overflowed float32 at epoch [1-3]\b.*learning_rate=1e\+20"):
        opt.run()


@pytest.mark.gpu
@pytest.mark.parametrize("strategy", ["chunked", "hogwild"])
def test_ctrl_c_during_a_gpu_epoch_leaves_the_epoch_count_with_its_layout(
    small_graph, strategy, monkeypatch, ctrl_c_raises
):
    """A Ctrl-C that arrives while a GPU epoch runs is held until the epoch is counted (LayoutOptimizer.step), so
    the optimizer says epoch 10 with epoch 10's layout; chunked then resumes to the uninterrupted run's bytes."""

    opt = _opt(small_graph, strategy, "gpu")
    real = opt._engine.run_epoch

    def run_epoch_then_ctrl_c(t, alpha):
        active = real(t, alpha)
        if t == 9:
            _thread.interrupt_main()  # as if SIGINT came during the epoch: raised at the next bytecode
        return active

    monkeypatch.setattr(opt._engine, "run_epoch", run_epoch_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        opt.run()
    assert opt.epoch == 10
    if strategy == "chunked":
        reference = _opt(small_graph, strategy, "gpu")
        reference.step(10)
        assert opt.embedding.tobytes() == reference.embedding.tobytes()
        assert opt.run().embedding.tobytes() == _opt(small_graph, strategy, "gpu").run().embedding.tobytes()


@pytest.mark.gpu
@pytest.mark.parametrize("strategy", ["chunked", "vertex"])
def test_gpu_engine_flags_a_non_finite_epoch_and_forgets_it_on_reset(small_graph, strategy):
    """A NaN coordinate is flagged in the epoch it shows (its stamp is the epoch), with the right active count;
    after a reset to a finite layout the same epoch is finite again: the old stamp does not linger."""
    opt = _opt(small_graph, strategy, "gpu")
    engine, init = opt._engine, opt.embedding
    bad = init.copy()
    bad[17, 1] = np.nan
    engine.reset(bad)
    active = engine.run_epoch(0, 1.0)
    assert not engine.finite()
    engine.reset(init)
    assert engine.run_epoch(0, 1.0) == active and engine.finite()
    assert engine.run_epoch(1, 0.99) > 0 and engine.finite()


@pytest.mark.gpu
def test_gpu_optimizer_starts_from_the_gpu_spectral_init(mixture_graph):
    _, graph = mixture_graph
    gpu = _opt(graph, "chunked", "gpu")
    assert gpu._init.tobytes() == spectral_init(graph, 2, gpu.seed, device="gpu").tobytes()
    assert np.isfinite(gpu._init).all() and np.abs(gpu._init).max() <= 10.01


@pytest.mark.gpu
def test_too_many_components_for_the_gpu(small_graph):
    with pytest.raises(ValueError, match="components"):
        _opt(small_graph, "chunked", "gpu", n_components=9, init="random")


@pytest.mark.gpu
def test_sequential_on_the_gpu_warns_where_its_one_thread_is_slow(small_graph):

    X, _ = datasets.load("blobs", n_samples=8000, random_state=0)
    big = build_graph(X, n_neighbors=15, n_epochs=20, knn="exact", cache=False, progress=False)
    assert big.nnz > SEQUENTIAL_GPU_EDGES >= small_graph.nnz
    with pytest.warns(UserWarning, match="one GPU thread") as caught:
        _opt(big, "sequential", "gpu")
    assert caught[0].filename == __file__  # pointed at the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _opt(small_graph, "sequential", "gpu")  # small: no word
        _opt(big, "hogwild", "gpu")


@pytest.mark.gpu
@pytest.mark.parametrize("strategy", ["hogwild", "chunked", "vertex"])
def test_memory_estimate_is_what_the_engine_allocates(mixture_graph, strategy):
    """device_bytes_needed sizes the schedule window and the out-of-memory error, so it must neither
    overstate (a smaller window or a false error) nor understate (an allocation failure) what is allocated."""
    import cupy as cp  # noqa: PLC0415 - GPU only: CuPy is absent where there is no GPU

    _, graph = mixture_graph
    pool = cp.get_default_memory_pool()
    before = pool.used_bytes()
    params = EngineParams(
        strategy=strategy, n_chunks=4, seed=0, a=graph.a, b=graph.b, gamma=1.0, negative_sample_rate=5
    )
    eng = engine_gpu.GpuEngine(graph, edge_order(0, graph.nnz), params)
    eng.reset(np.zeros((graph.n_vertices, 2), np.float32))
    used = pool.used_bytes() - before
    need = engine_gpu.device_bytes_needed(graph.n_vertices, graph.nnz, 2, strategy, eng.window, **eng._layout)
    assert abs(used - need) <= 0.05 * need, f"allocated {used:,} bytes, estimated {need:,}"


@pytest.mark.gpu
def test_too_big_for_gpu_memory_says_how_much():
    with pytest.raises(MemoryError, match=r"needs \d+\.\d+ GiB of GPU memory"):
        _check_fits(10**10, 2 * 10**11, 2, "chunked")
    with pytest.raises(MemoryError, match=r"needs about \d+\.\d+ GiB"):
        _plan_tile(10**9, 384, 15, "tf32")
