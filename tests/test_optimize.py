"""The layout optimizer: strategies, reproducibility, invariants, stepping, bad input."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from umapviz.optimize import REPRODUCIBLE, STRATEGIES, LayoutOptimizer
from umapviz.optimize._cpu import negative_vertex
from umapviz.optimize.chunks import chunk_bounds, degree_rule, resolve_n_chunks, shipped_rule
from umapviz.optimize.rng import negative_vertices, resolve_seed


def _run(graph, **kw) -> np.ndarray:
    return LayoutOptimizer(graph, **kw).run().embedding


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_lays_out_the_clusters(small_graph, blobs_small, strategy):
    from sklearn.manifold import trustworthiness

    emb = _run(small_graph, strategy=strategy, n_chunks=8, random_state=0)
    assert emb.shape == (small_graph.n_vertices, 2) and emb.dtype == np.float32
    assert np.isfinite(emb).all()
    assert trustworthiness(blobs_small[0], emb, n_neighbors=10) > 0.85


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


def test_seed_changes_the_layout(small_graph):
    a = _run(small_graph, strategy="chunked", n_chunks=4, random_state=1)
    b = _run(small_graph, strategy="chunked", n_chunks=4, random_state=2)
    assert not np.array_equal(a, b)


def test_random_state_none_draws_a_seed_and_keeps_it(small_graph):
    opt = LayoutOptimizer(small_graph, strategy="buffered", random_state=None)
    again = LayoutOptimizer(small_graph, strategy="buffered", random_state=opt.seed)
    assert np.array_equal(opt.run().embedding, again.run().embedding)


def test_one_chunk_is_buffered(small_graph):
    a = _run(small_graph, strategy="buffered", random_state=3)
    b = _run(small_graph, strategy="chunked", n_chunks=1, random_state=3)
    assert a.tobytes() == b.tobytes()


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
        callback=lambda o, r: seen.append(r.epoch), every=4)
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


def test_n_chunks_rules(small_graph):
    assert resolve_n_chunks("auto", small_graph) == shipped_rule(small_graph)
    assert resolve_n_chunks("degree", small_graph) == max(1, degree_rule(small_graph))
    assert resolve_n_chunks(small_graph.nnz, small_graph) == small_graph.nnz
    # the shipped rule switches to nnz-based chunks only above the hub threshold (128 at this size)
    assert small_graph.max_degree <= 128 and shipped_rule(small_graph) == 4
    assert degree_rule(small_graph) == -(-small_graph.max_degree // 32)


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


def test_nan_init_is_refused(small_graph):
    init = np.zeros((small_graph.n_vertices, 2), np.float32)
    init[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        LayoutOptimizer(small_graph, init=init)


def test_not_a_graph():
    with pytest.raises(TypeError, match="build_graph"):
        LayoutOptimizer(np.zeros((10, 2)))


def test_gpu_without_gpu_says_so(small_graph):
    from umapviz._backend import gpu_available

    if gpu_available():
        pytest.skip("a GPU is present here")
    with pytest.raises(RuntimeError, match="no GPU is usable"):
        LayoutOptimizer(small_graph, device="gpu")


def test_resolve_seed():
    assert resolve_seed(5) == 5
    assert resolve_seed(None) != resolve_seed(None)
