"""umap-learn's metrics and fuzzy-set options on the CPU: kNN distances against SciPy's, the fuzzy set against
umap-learn's bit for bit on the same kNN, the cache key, and the refusals (GPU, partitioned, bad kwds)."""

import numpy as np
import pytest
import scipy.sparse
from scipy.spatial.distance import cdist

from umapviz.graph import build_graph
from umapviz.graph.fuzzy.fuzzy_cpu import fuzzy_simplicial_set, smooth_knn_dist
from umapviz.graph.knn import check_metric, knn_cpu, metric_cpu, resolve_knn_method

_SCIPY = {"manhattan": "cityblock"}
_CASES = [
    ("manhattan", {}),
    ("chebyshev", {}),
    ("minkowski", {"p": 3.0}),
    ("correlation", {}),
    ("hamming", {}),
    ("jaccard", {}),
    ("hellinger", {}),
    ("haversine", {}),
]


def _data(metric, n=400):
    rng = np.random.default_rng(3)
    if metric in ("hamming", "jaccard"):
        X = (rng.random((n, 24)) < 0.3).astype(np.float32)
    elif metric == "hellinger":  # frequencies, some zero; rows all zero are at 0 from each other, 1 from the rest
        X = (rng.exponential(size=(n, 9)) * (rng.random((n, 9)) < 0.7)).astype(np.float32)
        X[20:23] = 0
    elif metric == "haversine":  # (latitude, longitude) in radians
        X = (rng.random((n, 2)) * [np.pi, 2 * np.pi] - [np.pi / 2, np.pi]).astype(np.float32)
    else:
        X = rng.normal(size=(n, 7)).astype(np.float32)
    X[10:14] = X[10]  # duplicates: rho from the first non-zero distance
    return X


def _scipy_distances(X, metric, kwds):
    """SciPy's distances; hellinger's (SciPy has none) by pynndescent's function, haversine's by scikit-learn's."""
    A = X.astype(np.float64)
    if metric == "hellinger":  # by its definition in float64, pair by pair (pynndescent's sums in float32)
        sums = A.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            D = np.sqrt(np.maximum(1 - np.sqrt(A[:, None] * A[None]).sum(axis=2) / np.sqrt(np.outer(sums, sums)), 0))
        zero = sums == 0
        D[zero[:, None] ^ zero[None]] = 1.0
        D[zero[:, None] & zero[None]] = 0.0
        hellinger = pytest.importorskip("pynndescent.distances").hellinger
        theirs = np.array([[hellinger(a, b) for b in A[:40]] for a in A[:40]])
        apart = D[:40, :40] > 1e-3  # near 0 float32's cancellation in 1 - s leaves pynndescent's sqrt(6e-8) (or NaN)
        np.testing.assert_allclose(theirs[apart], D[:40, :40][apart], rtol=1e-5)
        return D
    if metric == "haversine":
        return pytest.importorskip("sklearn.metrics.pairwise").haversine_distances(A)
    if metric == "jaccard":
        return cdist(A != 0, A != 0, "jaccard")
    return cdist(A, A, _SCIPY.get(metric, metric), **kwds)


def _assert_same_csr(ours, ref):
    ref = ref.tocsr()
    ref.sort_indices()
    assert np.array_equal(ours.indptr, ref.indptr) and np.array_equal(ours.indices, ref.indices)
    assert np.array_equal(ours.data.view(np.uint32), ref.data.astype(np.float32).view(np.uint32))


@pytest.mark.parametrize(("metric", "kwds"), _CASES)
def test_exact_knn_is_scipys_k_smallest_with_self_first_and_ties_by_index(metric, kwds):
    X = _data(metric)
    idx, dist = metric_cpu.exact_metric_knn(X, 12, metric, kwds)
    D = _scipy_distances(X, metric, kwds)
    assert idx.dtype == np.int32 and dist.dtype == np.float32
    assert np.array_equal(idx[:, 0], np.arange(len(X))) and (dist[:, 0] == 0).all()
    np.testing.assert_allclose(dist[:, 1:], np.take_along_axis(D, idx[:, 1:].astype(np.int64), 1), rtol=1e-5, atol=1e-7)
    # The same set as a stable sort of SciPy's rows with self moved first (ties by index, correlation's 1e-16 of a
    # duplicate aside: compared on float32 distances).
    D32 = D.astype(np.float32)
    D32[np.arange(len(X)), np.arange(len(X))] = -1
    ref = np.argsort(D32, axis=1, kind="stable")[:, :12]
    assert np.array_equal(idx, ref)


@pytest.mark.parametrize(("metric", "kwds"), _CASES)
def test_fuzzy_set_equals_umap_learns_on_the_same_knn_for_each_metric(metric, kwds):
    umap_ = pytest.importorskip("umap.umap_")
    X = _data(metric)
    idx, dist = metric_cpu.exact_metric_knn(X, 15, metric, kwds)
    ref, _, _ = umap_.fuzzy_simplicial_set(X, 15, np.random.RandomState(0), metric, knn_indices=idx, knn_dists=dist)
    _assert_same_csr(fuzzy_simplicial_set(idx, dist), ref)


@pytest.mark.parametrize(("local_connectivity", "set_op_mix_ratio"), [(2.5, 1.0), (0.5, 1.0), (1.0, 0.0), (3, 0.4)])
def test_local_connectivity_and_set_op_mix_ratio_equal_umap_learns(local_connectivity, set_op_mix_ratio):
    umap_ = pytest.importorskip("umap.umap_")
    X = _data("hamming")  # many ties: sigma's floor from the row's mean is reached
    idx, dist = metric_cpu.exact_metric_knn(X, 15, "hamming", {})
    ours = fuzzy_simplicial_set(idx, dist, local_connectivity, set_op_mix_ratio)
    ref, _, rho = umap_.fuzzy_simplicial_set(
        X,
        15,
        np.random.RandomState(0),
        "hamming",
        knn_indices=idx,
        knn_dists=dist,
        local_connectivity=local_connectivity,
        set_op_mix_ratio=set_op_mix_ratio,
    )
    _assert_same_csr(ours, ref)
    # rho interpolated as umap-learn interpolates it (sigma: its bisection runs in float32, ours in float64; the
    # memberships above agree regardless)
    assert np.array_equal(smooth_knn_dist(dist, local_connectivity=local_connectivity)[1], rho)


@pytest.mark.parametrize(
    ("metric", "kwds"),
    [
        ("manhattan", {}),
        ("correlation", {}),
        ("minkowski", {"p": 1.0}),
        ("minkowski", {"p": 2.0}),
        ("minkowski", {"p": 3.0}),
        ("hellinger", {}),
        ("hamming", {}),
        ("jaccard", {}),
    ],
)
def test_approximate_search_rescores_candidates_with_scipys_distances(metric, kwds):
    # The candidates may come from another search (correlation: cosine of the centred rows; minkowski p=1, 2:
    # manhattan, euclidean; p=3: euclidean, then a refinement round; hellinger: cosine of sqrt(u / sum u);
    # hamming, jaccard: popcounts of packed bits): the same neighbours, re-scored
    X = _data(metric, n=600)
    idx, dist = metric_cpu.approx_metric_knn(X, 10, metric, kwds, random_state=1)
    _, exact_dist = metric_cpu.exact_metric_knn(X, 10, metric, kwds)
    D = _scipy_distances(X, metric, kwds)
    assert np.array_equal(idx[:, 0], np.arange(len(X)))
    np.testing.assert_allclose(dist, np.take_along_axis(D, idx.astype(np.int64), 1), rtol=1e-5, atol=1e-7)
    assert (np.diff(dist, axis=1) >= 0).all()
    # recall by distance (hamming and jaccard tie at many places, where any of the tied points is as near)
    found = np.mean(dist <= exact_dist[:, -1:] * (1 + 1e-6))
    assert found > 0.95
    again, _ = metric_cpu.approx_metric_knn(X, 10, metric, kwds, random_state=1)
    assert np.array_equal(idx, again)


def test_candidate_search_takes_the_cheaper_equivalent_metric_only_where_it_ranks_alike():
    space = metric_cpu._candidate_space
    binary = _data("hamming")
    assert space(binary, "minkowski", {"p": 1.0})[1:] == ("manhattan", {}, False)
    assert space(binary, "minkowski", {"p": 3.0})[1:] == ("euclidean", {}, True)
    assert space(binary, "minkowski", {"p": 2.5})[1:] == ("minkowski", {"p": 2.5}, False)
    assert space(binary, "minkowski", {"p": 6.0})[1:] == ("minkowski", {"p": 6.0}, False)
    if metric_cpu._has_bit_metrics():
        rows, name, _, _ = space(binary, "hamming", {})
        assert name == "bit_hamming" and rows.dtype == np.uint8 and rows.shape == (len(binary), 3)
        assert np.array_equal(np.unpackbits(rows, axis=1)[:, :24], binary != 0)
        assert space(binary * 2, "jaccard", {})[1] == "bit_jaccard"  # jaccard reads non-zero as True
    assert space(binary * 2, "hamming", {})[1] == "hamming"  # 0/2 differ from 1: counted as floats
    counts = _data("hellinger")
    rows, name, _, _ = space(counts, "hellinger", {})
    D = _scipy_distances(counts, "hellinger", {})
    assert name == "cosine"
    live = counts.sum(axis=1) > 0  # rows of zeros stay zero, re-scored apart
    np.testing.assert_allclose(cdist(rows[live], rows[live]) / np.sqrt(2), D[live][:, live], atol=1e-6)


def test_refinement_round_under_a_metric_keeps_the_k_best_of_its_candidates_and_never_loses_one():
    numba = pytest.importorskip("numba")
    X = _data("minkowski", n=500)
    kwds = {"p": 3.0}
    exact_idx, exact_dist = metric_cpu.exact_metric_knn(X, 10, "minkowski", kwds)
    rng = np.random.default_rng(2)
    start = np.concatenate([np.arange(len(X))[:, None], rng.integers(0, len(X), (len(X), 9))], axis=1)
    start[:, 5:] = exact_idx[:, 5:]  # half right, half random
    before = np.mean([len(set(a) & set(b)) for a, b in zip(start, exact_idx, strict=True)])
    results = []
    for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
        with_threads = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            results.append(metric_cpu.refine_metric_knn(X, start, "minkowski", kwds))
        finally:
            numba.set_num_threads(with_threads)
    (idx, dist), (idx2, dist2) = results
    assert np.array_equal(idx, idx2) and np.array_equal(dist.view(np.int64), dist2.view(np.int64))
    D = _scipy_distances(X, "minkowski", kwds)
    np.testing.assert_allclose(dist[:, 1:], np.take_along_axis(D, idx[:, 1:], 1), rtol=1e-5)
    assert np.array_equal(idx[:, 0], np.arange(len(X))) and (np.diff(dist, axis=1) >= 0).all()
    after = np.mean([len(set(a) & set(b)) for a, b in zip(idx, exact_idx, strict=True)])
    assert after > before
    # each row's k-th distance is no worse than the best k of its own starting neighbours
    own = np.sort(np.take_along_axis(D, start.astype(np.int64), 1)[:, 1:], axis=1)
    assert (dist[:, -1] <= own[:, -1] * (1 + 1e-9)).all()


@pytest.mark.parametrize(("metric", "kwds"), _CASES)
def test_rescoring_kernel_keeps_the_k_best_candidates_by_scipys_distances_on_any_thread_count(metric, kwds):
    numba = pytest.importorskip("numba")
    X = _data(metric)
    exact_idx, exact_dist = metric_cpu.exact_metric_knn(X, 10, metric, kwds)
    # the exact neighbours among 20 random rows, shuffled, some missing (-1): what NN-descent hands over
    rng = np.random.default_rng(0)
    cand = np.full((len(X), 31), -1, dtype=np.int64)
    for row, own in enumerate(exact_idx):
        others = np.setdiff1d(rng.choice(len(X), 24, replace=False), own)[: 20 if row % 7 else 19]
        cand[row, : 10 + len(others)] = rng.permutation(np.concatenate([own, others]))
    results = []
    for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
        idx, dist = np.empty((len(X), 10), np.int64), np.empty((len(X), 10))
        with_threads = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            metric_cpu._rescore(X, cand, metric_cpu._METRIC_CODES[metric], kwds.get("p", 2.0), idx, dist)
        finally:
            numba.set_num_threads(with_threads)
        results.append((idx, dist))
    (idx, dist), (idx2, dist2) = results
    assert np.array_equal(idx, idx2) and np.array_equal(dist.view(np.int64), dist2.view(np.int64))
    D = _scipy_distances(X, metric, kwds)
    np.testing.assert_allclose(dist[:, 1:], np.take_along_axis(D, idx[:, 1:], 1), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(dist.astype(np.float32), exact_dist, rtol=1e-5, atol=1e-7)
    assert np.array_equal(idx[:, 0], np.arange(len(X))) and (np.diff(dist, axis=1) >= 0).all()


def test_precomputed_distance_matrix_gives_the_graph_of_the_data_it_came_from():
    X = _data("manhattan")
    D = _scipy_distances(X, "manhattan", {}).astype(np.float32)
    from_matrix = build_graph(D, n_neighbors=12, metric="precomputed", cache=False)
    from_data = build_graph(X, n_neighbors=12, metric="manhattan", knn="exact", cache=False)
    assert np.array_equal(from_matrix.knn_indices, from_data.knn_indices)
    assert np.allclose(from_matrix.knn_dists, from_data.knn_dists, rtol=1e-6)
    assert from_matrix.params["knn"] == "precomputed" and from_matrix.params["metric"] == "precomputed"
    with pytest.raises(ValueError, match="square"):
        build_graph(X, metric="precomputed", cache=False)
    with pytest.raises(ValueError, match="negative"):
        build_graph(-D - 1, metric="precomputed", cache=False)


def test_build_graph_records_and_keys_the_metric_and_its_kwds(tmp_path):
    X = _data("minkowski")
    g3 = build_graph(X, metric="minkowski", metric_kwds={"p": 3}, cache=tmp_path)
    g1 = build_graph(X, metric="minkowski", metric_kwds={"p": 1}, cache=tmp_path)
    man = build_graph(X, metric="l1", cache=tmp_path)  # umap-learn's alias
    assert g3.params["metric_kwds"] == {"p": 3.0} and g1.params["metric_kwds"] == {"p": 1.0}
    assert g3.fingerprint != g1.fingerprint  # not served the p=3 graph from the cache
    assert man.params["metric"] == "manhattan" and "metric_kwds" not in man.params
    assert np.array_equal(man.knn_indices, g1.knn_indices)  # minkowski p=1 is manhattan
    lc = build_graph(X, metric="l1", local_connectivity=2.0, cache=tmp_path)
    assert lc.params["local_connectivity"] == 2.0 and lc.fingerprint != man.fingerprint
    assert build_graph(X, metric="l1", cache=tmp_path).fingerprint == man.fingerprint


def test_auto_picks_the_exact_search_for_small_data_and_nn_descent_for_large():
    assert resolve_knn_method("auto", 1000, 50, metric="manhattan") == "exact"
    assert resolve_knn_method("auto", 100_000, 100, metric="manhattan") == "approx"
    assert resolve_knn_method("auto", 100_000, 100, metric="precomputed") == "precomputed"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(metric="braycurtis"), "not supported"),
        (dict(metric="manhattan", device="gpu"), "device='cpu'"),
        (dict(metric="manhattan", knn="partitioned"), "no partitioned search"),
        (dict(metric="minkowski", metric_kwds={"p": -1}), "finite p > 0"),
        (dict(metric="minkowski", metric_kwds={"q": 2}), "finite p > 0"),
        (dict(metric="manhattan", metric_kwds={"p": 2}), "takes no keyword"),
        (dict(local_connectivity=-1), "local_connectivity"),
        (dict(set_op_mix_ratio=1.5), "set_op_mix_ratio"),
        (dict(local_connectivity=2.0, device="gpu"), "device='cpu'"),
        (dict(disconnection_distance=0), "disconnection_distance"),
    ],
)
def test_bad_metric_options_are_refused_with_the_fix(kwargs, match):
    with pytest.raises(ValueError, match=match):
        build_graph(_data("manhattan"), cache=False, **kwargs)


def test_hellinger_and_haversine_refuse_data_they_are_not_defined_on():
    with pytest.raises(ValueError, match="non-negative"):
        build_graph(-_data("hellinger"), metric="hellinger", cache=False)
    with pytest.raises(ValueError, match="needs 2 columns, but it has 7"):
        build_graph(_data("manhattan"), metric="haversine", cache=False)


def test_hellinger_cuts_at_one_as_umap_learn_and_says_which_vertices_it_isolated():
    X = np.zeros((120, 11), dtype=np.float32)
    X[:118, :9] = _data("hellinger", n=118)
    X[118, 9], X[119, 10] = 1, 2  # each in a column no other row uses: hellinger 1 from every row
    with pytest.warns(UserWarning, match=r"A few of your vertices(.|\n)*fully disconnected 2 vertices") as record:
        graph = build_graph(X, n_neighbors=5, metric="hellinger", cache=False)
    assert len([w for w in record if "disconnected" in str(w.message)]) == 1
    assert np.array_equal(np.flatnonzero(graph.degree == 0), [118, 119])
    assert (graph.degree[20:23] > 0).all()  # the zero rows keep their edges to each other (hellinger 0)


def test_gemm_searches_refuse_a_metric_they_do_not_compute():
    with pytest.raises(ValueError, match="device='cpu'"):
        check_metric("manhattan", ("euclidean", "cosine"), "the GPU search")
    with pytest.raises(ValueError, match="manhattan"):
        knn_cpu.exact_knn(_data("manhattan"), 5, "manhattan")


def test_disconnection_distance_cuts_knn_edges_at_or_beyond_it():
    X = _data("manhattan")
    full = build_graph(X, n_neighbors=10, metric="manhattan", cache=False)
    cut_at = float(np.median(full.knn_dists[:, -1]))
    with pytest.warns(UserWarning, match="fully disconnected 27 vertices"):  # the cut isolates some
        cut = build_graph(X, n_neighbors=10, metric="manhattan", disconnection_distance=cut_at, cache=False)
    W = scipy.sparse.coo_matrix((cut.weight, (cut.head, cut.tail)), shape=(len(X),) * 2).tocsr()
    far = full.knn_dists >= cut_at
    rows = np.repeat(np.arange(len(X)), 10)[far.ravel()]
    cols = full.knn_indices.ravel()[far.ravel()]
    assert far.any() and cut.nnz < full.nnz
    for i, j in zip(rows, cols, strict=True):  # gone unless the other end reached it from nearer than the cut
        j_row = full.knn_indices[j]
        if not (j_row == i).any() or full.knn_dists[j][j_row == i][0] >= cut_at:
            assert W[i, j] == 0
