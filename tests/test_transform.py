"""UMAP.transform: new points embedded into a fitted layout, and the core pieces it is built from."""

from __future__ import annotations

import pickle
import tracemalloc
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import umapviz
from umapviz.graph.fuzzy.fuzzy_cpu import new_point_memberships, smooth_knn_dist
from umapviz.graph.knn import knn_cpu as knn
from umapviz.graph.knn import knn_gpu
from umapviz.graph.knn.knn_cpu import exact_knn, query_knn
from umapviz.optimize.optimizer import learning_rate_at
from umapviz.optimize.rng import negative_vertices
from umapviz.optimize.transform import embed_new_points, transform_n_epochs


@pytest.fixture(scope="module")
def split_blobs():
    """2,000 points of 5 well separated 12-D blobs, split 1,600 / 400, and a model fitted on the first part."""

    X, y = make_blobs(2000, n_features=12, centers=5, cluster_std=1.0, random_state=3)
    X = X.astype(np.float32)
    order = np.random.default_rng(0).permutation(len(X))
    train, test = order[:1600], order[1600:]
    est = umapviz.UMAP(n_neighbors=15, n_epochs=90, random_state=0, device="cpu").fit(X[train])
    return est, X[train], y[train], X[test], y[test]


def _nearest(points: np.ndarray, reference: np.ndarray, k: int = 1) -> np.ndarray:
    d = ((points[:, None, :].astype(np.float64) - reference[None, :, :]) ** 2).sum(-1)
    return np.argsort(d, axis=1, kind="stable")[:, :k]


# --- the estimator ---------------------------------------------------------------------------------------------


def test_training_points_land_near_their_fitted_places(split_blobs):
    est, X, y, _, _ = split_blobs
    E = est.embedding_
    rows = np.arange(0, len(X), 4)
    Z = est.transform(X[rows])
    assert Z.dtype == np.float32 and Z.shape == (len(rows), 2) and Z.flags.c_contiguous
    # Each lands in its own blob: its nearest fitted point is of its class ...
    assert (y[_nearest(Z, E)[:, 0]] == y[rows]).mean() > 0.99
    # ... among its own data neighbours nearly as often as its fitted place is (a point dropped anywhere in its
    # blob would find about k / blob size = 5% of them) ...
    own = est.fuzzy_graph_.knn_indices[rows]
    k = own.shape[1]

    def share(P):
        return (_nearest(P, E, k)[:, :, None] == own[:, None, :]).any(axis=2).mean()

    fitted_share = share(E[rows])
    assert share(Z) > max(0.6 * fitted_share, 0.12)
    # ... and it moved little compared with the layout's size.
    shift = np.linalg.norm(Z - E[rows], axis=1)
    assert np.median(shift) < 0.05 * np.ptp(E, axis=0).max()


def test_held_out_points_land_with_their_class(split_blobs):
    est, _, y_train, X_test, y_test = split_blobs
    Z = est.transform(X_test)
    votes = y_train[_nearest(Z, est.embedding_, k=10)]
    predicted = np.array([np.bincount(v).argmax() for v in votes])
    assert (predicted == y_test).mean() > 0.97
    assert np.isfinite(Z).all()


def test_transform_is_bitwise_deterministic_and_leaves_the_fit_alone(split_blobs):
    est, _, _, X_test, _ = split_blobs
    before = est.embedding_.copy()
    first = est.transform(X_test)
    assert est.transform(X_test).tobytes() == first.tobytes()
    assert est.embedding_.tobytes() == before.tobytes()
    refit = umapviz.UMAP(**est.get_params()).fit(est._fit_data)  # same data, same int seed: same model
    assert refit.transform(X_test).tobytes() == first.tobytes()


def test_transform_works_in_a_pipeline():
    pytest.importorskip("sklearn")

    X = np.random.default_rng(1).normal(size=(300, 5))
    pipe = make_pipeline(StandardScaler(), umapviz.UMAP(n_neighbors=10, n_epochs=30, random_state=0, device="cpu"))
    pipe.fit(X)
    assert pipe.transform(X[:7]).shape == (7, 2)


def test_transform_refuses_bad_input_and_an_unfitted_model(split_blobs):
    est, X, _, _, _ = split_blobs
    bad = X[:5].copy()
    bad[2, 3] = np.nan
    with pytest.raises(ValueError, match=r"NaN or infinite values.*rows \[2\].*before transform\.$"):
        est.transform(bad)  # it said "before building the graph", which transform does not do
    with pytest.raises(ValueError, match="X has 11 features, but this UMAP was fitted on 12.*same columns"):
        est.transform(X[:5, :11])
    fresh = umapviz.UMAP()
    with pytest.raises(ValueError, match=r"not fitted yet: call fit\(X\) before transform") as info:
        fresh.transform(X[:5])
    assert isinstance(info.value, AttributeError)

    assert isinstance(info.value, NotFittedError)


def test_transform_checks_column_names_seen_in_fit():
    pd = pytest.importorskip("pandas")
    X = np.random.default_rng(2).normal(size=(200, 3)).astype(np.float32)
    est = umapviz.UMAP(n_neighbors=10, n_epochs=20, random_state=0, device="cpu")
    est.fit(pd.DataFrame(X, columns=list("abc")))
    assert est.transform(pd.DataFrame(X[:4], columns=list("abc"))).shape == (4, 2)
    with pytest.raises(ValueError, match="column names"):
        est.transform(pd.DataFrame(X[:4], columns=list("acb")))


# --- the core pieces -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_query_knn_finds_the_exact_neighbours_in_the_reference_set(metric):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(500, 7)).astype(np.float32)
    Q = np.vstack([rng.normal(size=(40, 7)), X[:3]]).astype(np.float32)  # the last three equal rows 0, 1, 2
    idx, dist = query_knn(X, Q, 9, metric)
    assert idx.shape == dist.shape == (43, 9) and idx.dtype == np.int32 and dist.dtype == np.float32
    X64, Q64 = X.astype(np.float64), Q.astype(np.float64)
    if metric == "cosine":
        X64 /= np.linalg.norm(X64, axis=1, keepdims=True)
        Q64 /= np.linalg.norm(Q64, axis=1, keepdims=True)
        full = 0.5 * ((Q64[:, None] - X64[None]) ** 2).sum(-1)
    else:
        full = np.sqrt(((Q64[:, None] - X64[None]) ** 2).sum(-1))
    expected = np.argsort(full, axis=1, kind="stable")[:, :9]
    assert np.array_equal(idx, expected)
    assert np.allclose(dist, np.take_along_axis(full, expected, axis=1), rtol=1e-6, atol=1e-6)
    assert list(idx[-3:, 0]) == [0, 1, 2] and np.all(dist[-3:, 0] == 0)


def test_query_knn_of_the_data_itself_matches_exact_knn():
    X = np.random.default_rng(5).normal(size=(300, 4)).astype(np.float32)
    idx, dist = query_knn(X, X, 6)
    ref_idx, ref_dist = exact_knn(X, 6, progress=False)
    assert np.array_equal(idx, ref_idx) and np.array_equal(dist, ref_dist)


def test_new_point_memberships_use_rho_zero():
    """UMAP's transform uses local_connectivity - 1 = 0: the nearest distance is not subtracted."""
    dists = np.sort(np.random.default_rng(6).uniform(0.5, 3.0, size=(20, 8)), axis=1).astype(np.float32)
    dists[0, 0] = 0.0  # a new point equal to a training point
    w = new_point_memberships(dists)
    sigma, rho = smooth_knn_dist(dists, local_connectivity=0)
    assert np.all(rho == 0)
    assert w[0, 0] == 1.0 and np.all(w[1:, 0] < 1.0)  # with rho = min distance, column 0 would weigh 1
    assert np.allclose(w, np.exp(-dists / sigma[:, None]), rtol=1e-6)
    # sigma solves sum over columns 1 .. k-1 of exp(-d / sigma) = log2(k), as for the graph.
    assert np.allclose(np.exp(-dists[:, 1:] / sigma[:, None]).sum(axis=1), np.log2(8), atol=1e-3)
    _, rho_graph = smooth_knn_dist(dists)  # the graph's rule is unchanged: the first non-zero distance
    assert np.array_equal(rho_graph[1:], dists[1:, 0]) and rho_graph[0] == dists[0, 1]


@pytest.mark.parametrize(
    "n_epochs, n_new, expected",
    [
        (None, 10_000, 100),
        (None, 10_001, 30),
        (None, 1, 100),
        (200, 50_000, 66),
        (500, 5, 166),
        (2, 5, 1),
    ],
)
def test_transform_epochs_follow_umap(n_epochs, n_new, expected):
    assert transform_n_epochs(n_epochs, n_new) == expected


def _reference_embed(indices, weights, Yref, a, b, n_epochs, learning_rate, nsr, gamma, seed):
    """Plain-Python transform SGD (float32, one edge after the other), written from the module's docstring."""
    a, b = np.float32(a), np.float32(b)
    keep = weights >= weights.max() / np.float32(n_epochs)
    Y = np.empty((len(indices), Yref.shape[1]), np.float32)
    for i in range(len(indices)):
        w = weights[i].astype(np.float64)
        Y[i] = (w[:, None] * Yref[indices[i]]).sum(0) / w.sum()
    edges = [
        (i, int(indices[i, j]), float(weights[i, j]))
        for i in range(len(indices))
        for j in range(indices.shape[1])
        if keep[i, j]
    ]
    wmax = float(weights.max())
    eps = np.array([wmax / np.float64(np.float32(w)) for _, _, w in edges])
    next_s, eps_neg = eps.copy(), eps / nsr
    next_neg = eps_neg.copy()
    for t in range(n_epochs):
        alpha = np.float32(learning_rate_at(t, n_epochs, learning_rate / 4.0))
        for e, (i, j, _) in enumerate(edges):
            if next_s[e] > t:
                continue
            n_neg = max(0, int(np.floor((t - next_neg[e]) / eps_neg[e])))
            next_s[e] += eps[e]
            next_neg[e] += n_neg * eps_neg[e]
            diff = Y[i] - Yref[j]
            d2 = np.float32((diff * diff).sum())
            coef = np.float32(-2) * a * b * d2 ** (b - 1) / (a * d2**b + 1) if d2 > 0 else np.float32(0)
            Y[i] += alpha * np.clip(coef * diff, -4, 4)
            for s in range(n_neg):
                k = int(negative_vertices(seed, t, np.array([e]), s, len(Yref))[0])
                diff = Y[i] - Yref[k]
                d2 = np.float32((diff * diff).sum())
                if d2 > 0:
                    coef = np.float32(2) * gamma * b / ((np.float32(0.001) + d2) * (a * d2**b + 1))
                    Y[i] += alpha * np.clip(coef * diff, -4, 4)
                else:
                    Y[i] += alpha * np.float32(4)
    return Y


def test_the_transform_kernel_follows_the_sequential_reference():
    rng = np.random.default_rng(7)
    Yref = rng.uniform(-5, 5, size=(60, 2)).astype(np.float32)
    indices = np.stack([rng.choice(60, 5, replace=False) for _ in range(8)]).astype(np.int32)
    weights = rng.uniform(0.05, 0.95, size=(8, 5)).astype(np.float32)
    kwargs = dict(
        a=1.577, b=0.895, n_epochs=12, learning_rate=1.0, negative_sample_rate=5, repulsion_strength=1.0, seed=11
    )
    got = embed_new_points(indices, weights, Yref, **kwargs)
    want = _reference_embed(indices, weights, Yref, 1.577, 0.895, 12, 1.0, 5.0, 1.0, 11)
    assert np.allclose(got, want, rtol=1e-4, atol=1e-4)
    assert not np.allclose(got, embed_new_points(indices, weights, Yref, **dict(kwargs, seed=12)))  # seed matters


# --- edge cases ------------------------------------------------------------------------------------------------


def test_far_away_points_leave_the_others_alone_and_stay_finite(split_blobs):
    """One far point in a batch used to floor every other point's sigma (the floor read the batch's mean distance):
    a fill value of 1e20 turned all the others' weights to 1 and moved them by whole clusters; a row near float32's
    limit (an inf distance) gave NaN weights, whose NaN maximum then dropped every edge of the batch."""
    est, _, _, X_test, _ = split_blobs
    Q = X_test[:30]
    base = est.transform(Q)
    far = np.vstack([Q, np.full((1, 12), 1e20, np.float32), np.full((1, 12), 3e38, np.float32)])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        Z = est.transform(far)
    assert Z[:30].tobytes() == base.tobytes()
    assert np.isfinite(Z).all()
    assert not record, [str(w.message) for w in record]  # no overflow / invalid-value RuntimeWarning either
    dists = query_knn(est._fit_data, far, 15)[1]
    w = new_point_memberships(dists)
    assert np.isfinite(w).all() and np.array_equal(w[:30], new_point_memberships(dists[:30]))


def test_edges_of_weight_zero_are_dropped_even_when_all_are_zero():
    """All points far beyond the data: every exp(-d / sigma) underflows to 0, all edges passed the 0 / n_epochs
    threshold, and eps = 0 / 0 = NaN had each one sampled at every epoch, dragging the points off their start."""
    rng = np.random.default_rng(8)
    Yref = rng.uniform(-5, 5, size=(40, 2)).astype(np.float32)
    indices = np.stack([rng.choice(40, 5, replace=False) for _ in range(3)]).astype(np.int32)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        Y = embed_new_points(indices, np.zeros((3, 5), np.float32), Yref, a=1.577, b=0.895, n_epochs=10)
    assert np.array_equal(Y, Yref[indices[:, 0]])  # each stays at its nearest neighbour, where it started
    assert not record, [str(w.message) for w in record]


def test_float64_new_points_are_measured_against_the_fitted_ranges(split_blobs):
    """A single float64 row has no range of its own: every float64 transform of one point warned of a coarse grid."""
    est, _, _, X_test, _ = split_blobs
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert est.transform(X_test[:1].astype(np.float64) + 0.1).shape == (1, 2)
    gps = 1e6 + np.random.default_rng(9).normal(size=(200, 3))
    model = umapviz.UMAP(n_neighbors=10, n_epochs=6, random_state=0, device="cpu").fit(gps.astype(np.float32))
    with pytest.warns(UserWarning, match="coarse grid"):  # 1e6 in float32: steps of 0.06 in a range of ~6
        model.transform(gps[:1])


def test_transform_messages_for_empty_and_one_dimensional_input(split_blobs):
    est, _, _, X_test, _ = split_blobs
    with pytest.raises(ValueError, match=r"empty.*at least one row"):
        est.transform(np.empty((0, 12), np.float32))
    with pytest.raises(ValueError, match=r"1-D.*single sample, X.reshape\(1, -1\)"):
        est.transform(X_test[0])


def test_feature_names_on_one_side_only_are_warned_about_as_in_scikit_learn():
    pd = pytest.importorskip("pandas")
    X = np.random.default_rng(10).normal(size=(120, 3)).astype(np.float32)
    est = umapviz.UMAP(n_neighbors=8, n_epochs=6, random_state=0, device="cpu")
    est.fit(pd.DataFrame(X, columns=list("abc")))
    with pytest.warns(UserWarning, match="X does not have valid feature names, but UMAP was fitted with feature"):
        est.transform(X[:3])
    est.fit(X)
    with pytest.warns(UserWarning, match="X has feature names, but UMAP was fitted without feature names"):
        est.transform(pd.DataFrame(X[:3], columns=list("abc")))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.transform(pd.DataFrame(X[:3]))  # integer column names are no feature names


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_query_knn_memory_is_bounded_by_the_tile(monkeypatch, metric):
    """The queries were transformed for the ranking all at once, through a float64 copy: three times the queries'
    own size held at once (cosine more), whatever the tile; and two tiles' products were alive together."""

    monkeypatch.setattr(knn, "_TILE_BYTES", 2**20)
    rng = np.random.default_rng(11)
    X = rng.normal(size=(500, 256)).astype(np.float32)
    Q = rng.normal(size=(12_000, 256)).astype(np.float32)  # 12 MB
    query_knn(X, Q[:5], 10, metric)
    tracemalloc.start()
    try:
        idx, _ = query_knn(X, Q, 10, metric)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 0.5 * Q.nbytes, peak  # the tile (1 MiB) and the (12,000, 10) outputs
    assert np.array_equal(idx[:50], query_knn(X, Q[:50], 10, metric)[0])


def test_repeated_transforms_prepare_the_training_data_once_and_still_pickle(split_blobs, monkeypatch):
    """Each call prepared (centred and scaled) all the training data again: most of the cost of a few new points.
    The prepared copy holds a local function, which pickle cannot store, so it is left out of the pickle."""

    est, _, _, X_test, _ = split_blobs
    est = pickle.loads(pickle.dumps(est))  # a fresh copy, nothing prepared yet
    calls = []
    real = knn._selection_matrix
    monkeypatch.setattr(knn, "_selection_matrix", lambda *a: calls.append(1) or real(*a))
    first = [est.transform(X_test[i : i + 1]) for i in range(3)]
    assert len(calls) == 1
    again = pickle.loads(pickle.dumps(est))  # after a transform: still picklable
    assert again.transform(X_test[:1]).tobytes() == first[0].tobytes()
    assert (
        again.transform(X_test[:1]).tobytes()
        == umapviz.UMAP(**est.get_params()).fit(est._fit_data).transform(X_test[:1]).tobytes()
    )  # the prepared copy gives the same bytes as a fresh search


@pytest.mark.gpu
def test_transform_after_a_gpu_fit_takes_cupy_input_and_repeats_its_bytes(monkeypatch):
    import cupy as cp  # noqa: PLC0415 - GPU only: CuPy is absent where there is no GPU

    X, y = make_blobs(3000, n_features=16, centers=6, random_state=2)
    X = X.astype(np.float32)
    train, test = np.arange(2500), np.arange(2500, 3000)
    est = umapviz.UMAP(random_state=0, device="gpu", n_epochs=120).fit(cp.asarray(X[train]))
    assert est.optimizer_.device == "gpu"
    searches, uploads = [], []  # counted from here: the fit's own kNN prepares the data too
    real, real_reference = knn_gpu.query_knn_gpu, knn_gpu.reference_index_gpu
    monkeypatch.setattr(knn_gpu, "query_knn_gpu", lambda *a, **k: searches.append(1) or real(*a, **k))
    monkeypatch.setattr(knn_gpu, "reference_index_gpu", lambda *a, **k: uploads.append(1) or real_reference(*a, **k))
    Z = est.transform(cp.asarray(X[test]))  # computed on the host: a NumPy array comes back
    assert isinstance(Z, np.ndarray) and Z.dtype == np.float32 and Z.shape == (500, 2)
    assert est.transform(X[test]).tobytes() == Z.tobytes()  # CuPy or NumPy input, the same bytes
    assert len(searches) == 2  # the neighbour search ran on the GPU
    assert len(uploads) == 1  # against the training data uploaded and prepared once (each call did it before)
    d = ((Z[:, None, :].astype(np.float64) - est.embedding_[None, :, :]) ** 2).sum(-1)
    votes = y[train][np.argsort(d, axis=1)[:, :10]]
    assert (np.array([np.bincount(v).argmax() for v in votes]) == y[test]).mean() > 0.97
