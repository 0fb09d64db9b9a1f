"""The user's UMAP: umap-learn's estimator parameters on umapviz.UMAP, supervised graphs against umap-learn's bit for
bit, and graphs brought in (FuzzyGraph.from_sparse, FuzzyGraph.from_umap) replayed."""

import warnings

import numpy as np
import pytest
import scipy.sparse
from scipy.spatial.distance import cdist

import umapviz
from umapviz.graph import FuzzyGraph, build_graph
from umapviz.graph.fuzzy.supervised import check_target
from umapviz.widgets.explorer.setup_jobs import data_name
from umapviz.widgets.session import GRAPH_SOURCE, load_source


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(5)
    centres = rng.normal(scale=6, size=(3, 6))
    X = np.concatenate([c + rng.normal(size=(70, 6)) for c in centres]).astype(np.float32)
    return X, np.repeat(np.arange(3), 70)


@pytest.fixture(scope="module")
def umap_learn():
    return pytest.importorskip("umap")


def _fit_umap_learn(umap, X, y=None, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return umap.UMAP(n_neighbors=12, n_epochs=30, random_state=0, force_approximation_algorithm=True, **kwargs).fit(
            X, y
        )


def _same_graph(ours, theirs):
    assert np.array_equal(ours.head, theirs.head) and np.array_equal(ours.tail, theirs.tail)
    assert np.array_equal(ours.weight.view(np.uint32), theirs.weight.view(np.uint32))
    assert np.array_equal(ours.epochs_per_sample, theirs.epochs_per_sample)


def test_from_umap_is_the_kits_graph_of_the_same_knn_bit_for_bit(blobs, umap_learn):
    X, _ = blobs
    model = _fit_umap_learn(umap_learn, X)
    brought = FuzzyGraph.from_umap(model)
    ours = build_graph(X, n_neighbors=12, n_epochs=30, precomputed_knn=(model._knn_indices, model._knn_dists))
    _same_graph(brought, ours)
    assert (brought.a, brought.b) == (model._a, model._b) and brought.n_epochs == 30
    assert brought.params["knn"] == "umap-learn" and brought.params["metric"] == "euclidean"
    # pruned as umap-learn prunes for its epochs: memberships below max / n_epochs dropped
    P = model.graph_.tocoo()
    assert brought.nnz == np.count_nonzero(P.data >= np.float32(P.data.max()) / 30.0)


@pytest.mark.parametrize("weight", [0.5, 0.9])
def test_supervised_and_semi_supervised_graphs_equal_umap_learns(blobs, umap_learn, weight):
    X, y = blobs
    y = y.copy()
    y[::3] = -1  # semi-supervised: every third row unlabelled
    model = _fit_umap_learn(umap_learn, X, y, target_weight=weight)
    target = check_target(y, len(X), "categorical", weight, -1)
    ours = build_graph(
        X, n_neighbors=12, n_epochs=30, precomputed_knn=(model._knn_indices, model._knn_dists), target=target
    )
    _same_graph(ours, FuzzyGraph.from_umap(model))


def test_supervised_fit_separates_the_labels_and_semi_supervised_keeps_unlabelled_rows(blobs):
    X, y = blobs
    rng = np.random.default_rng(0)
    X = X + rng.normal(scale=4, size=X.shape).astype(np.float32)  # blurred: the data alone mixes the labels
    fit = dict(n_neighbors=12, n_epochs=60, random_state=0, device="cpu")
    plain = umapviz.UMAP(**fit).fit(X)
    supervised = umapviz.UMAP(**fit).fit(X, y)
    silhouette = pytest.importorskip("sklearn.metrics").silhouette_score
    assert silhouette(supervised.embedding_, y) > silhouette(plain.embedding_, y) + 0.1
    assert supervised.fuzzy_graph_.params["target"] != plain.fuzzy_graph_.params.get("target")
    semi = umapviz.UMAP(**fit).fit(X, np.where(np.arange(len(y)) % 2 == 0, -1, y))
    assert semi.embedding_.shape == (len(X), 2) and np.isfinite(semi.embedding_).all()


def test_from_sparse_takes_any_symmetric_membership_matrix_and_refuses_the_rest(blobs):
    X, labels = blobs
    graph = build_graph(X, n_neighbors=10, n_epochs=50, cache=False)
    P = scipy.sparse.coo_matrix((graph.weight, (graph.head, graph.tail)), shape=(len(X),) * 2).tocsr()
    again = FuzzyGraph.from_sparse(P, n_epochs=50)
    _same_graph(again, graph)
    assert again.knn_indices.shape[0] == len(X) and (again.knn_indices[:, 0] == np.arange(len(X))).all()
    layout = umapviz.LayoutOptimizer(again, strategy="vertex", random_state=0, n_epochs=50).run()
    assert np.isfinite(layout.embedding).all()
    custom = FuzzyGraph.from_sparse(P, n_epochs=50, a=1.0, b=1.0)
    assert (custom.a, custom.b) == (1.0, 1.0)
    with pytest.raises(ValueError, match="symmetric"):
        FuzzyGraph.from_sparse(scipy.sparse.triu(P))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        FuzzyGraph.from_sparse(P * 3)
    with pytest.raises(ValueError, match="square"):
        FuzzyGraph.from_sparse(P[:10])
    with pytest.raises(ValueError, match="both a and b"):
        FuzzyGraph.from_sparse(P, a=1.0)


def test_umap_learn_parameters_do_what_they_say(blobs):
    X, y = blobs
    fit = dict(n_neighbors=10, n_epochs=20, random_state=0, device="cpu")
    est = umapviz.UMAP(metric="manhattan", **fit).fit(X)
    assert est.fuzzy_graph_.params["metric"] == "manhattan"
    assert est.transform(X[:4]).shape == (4, 2)
    curve = umapviz.UMAP(a=1.2, b=0.8, **fit).fit(X)
    assert (curve.fuzzy_graph_.a, curve.fuzzy_graph_.b) == (1.2, 0.8)
    doubled = np.concatenate([X, X[:30]])
    unique = umapviz.UMAP(unique=True, **fit).fit(doubled)
    assert unique.fuzzy_graph_.n_vertices == len(X) and unique.embedding_.shape == (len(doubled), 2)
    assert np.array_equal(unique.embedding_[len(X) :], unique.embedding_[:30])
    approx = umapviz.UMAP(force_approximation_algorithm=True, **fit).fit(X)
    assert approx.fuzzy_graph_.params["knn"] == "approx"
    threads = umapviz.UMAP(n_jobs=1, **fit).fit(X)
    assert np.array_equal(threads.embedding_, umapviz.UMAP(**fit).fit(X).embedding_)
    assert list(umapviz.UMAP(n_components=3).get_feature_names_out(["a", "b"])) == ["umap0", "umap1", "umap2"]


def test_precomputed_distances_fit_and_transform(blobs):

    X, _ = blobs
    D = cdist(X, X).astype(np.float32)
    fit = dict(n_neighbors=10, n_epochs=20, random_state=0, device="cpu")
    est = umapviz.UMAP(metric="precomputed", **fit).fit(D)
    same = umapviz.UMAP(**fit).fit(X)
    assert np.array_equal(est.fuzzy_graph_.knn_indices, same.fuzzy_graph_.knn_indices)
    new = est.transform(cdist(X[:5] + 0.01, X).astype(np.float32))
    assert new.shape == (5, 2) and np.isfinite(new).all()


@pytest.mark.parametrize(
    ("params", "match"),
    [
        (dict(densmap=True), "densMAP"),
        (dict(output_metric="haversine"), "Euclidean only"),
        (dict(transform_mode="graphs"), "'embedding' or 'graph'"),
        (dict(output_metric="foobar"), "neither callable nor a recognised"),
        (dict(output_metric="haversine", n_components=3), "needs n_components=2, not 3"),
        (dict(output_metric="haversine", densmap=True), "densmap=True needs a Euclidean output_metric"),
        (dict(n_jobs=0), "n_jobs"),
        (dict(a=1.0), "both a and b"),
        (dict(unique="yes"), "unique"),
        (dict(target_weight=2.0), "target_weight"),
        (dict(n_neighbors=1.5), "n_neighbors"),
        (dict(n_components=1.5), "n_components"),
        (dict(metric="braycurtis"), "not supported"),
        (dict(metric="hellinger"), "non-negative"),
        (dict(precomputed_knn=(np.zeros((3, 2), int), np.zeros((3, 2)))), "precomputed_knn"),
    ],
)
def test_what_the_kit_does_not_do_is_refused_with_a_value_error(blobs, params, match):
    X, y = blobs
    with pytest.raises(ValueError, match=match):
        umapviz.UMAP(**params).fit(X, y)


def test_an_output_metric_without_a_gradient_is_refused_for_that():
    def no_gradient(x, y):
        return float(np.abs(x - y).sum())

    def with_gradient(x, y):
        return float(np.abs(x - y).sum()), np.sign(x - y)

    with pytest.raises(ValueError, match=r"must return a tuple \(distance, gradient\)"):
        umapviz.UMAP(output_metric=no_gradient).fit(np.zeros((5, 2)))
    with pytest.raises(ValueError, match="Euclidean only"):  # a valid one: not laid out here
        umapviz.UMAP(output_metric=with_gradient).fit(np.zeros((5, 2)))


def test_graph_is_umap_learns_scipy_matrix_and_the_fuzzy_graph_is_read_through_with_a_warning(blobs):
    X, _ = blobs
    est = umapviz.UMAP(n_neighbors=10, n_epochs=20, random_state=0, device="cpu").fit(X)
    graph, fuzzy = est.graph_, est.fuzzy_graph_
    assert isinstance(graph, scipy.sparse.csr_matrix) and graph.shape == (len(X), len(X)) and graph.nnz == fuzzy.nnz
    coo = graph.tocoo()
    assert np.array_equal(coo.row, fuzzy.head) and np.array_equal(coo.col, fuzzy.tail)
    assert np.array_equal(coo.data, fuzzy.weight) and abs(graph - graph.T).max() == 0
    assert est.graph_ is graph  # made once
    # the matrix brought back in is the same graph (pruning at the kept maximum changes nothing)
    _same_graph(FuzzyGraph.from_sparse(graph, n_epochs=20, a=est._a, b=est._b), fuzzy)
    with pytest.warns(FutureWarning, match=r"model.fuzzy_graph_.fingerprint"):
        assert graph.fingerprint == fuzzy.fingerprint
    with pytest.warns(FutureWarning, match="fuzzy_graph_"):
        optimizer = umapviz.LayoutOptimizer(graph, random_state=0)
    assert optimizer.graph is fuzzy
    with pytest.raises(AttributeError):
        _ = (graph + graph).fingerprint  # arithmetic gives a plain matrix: no graph behind it
    with pytest.raises(AttributeError, match="call fit"):
        _ = umapviz.UMAP().graph_


def test_vertices_the_disconnection_distance_isolates_embed_as_nan():
    rng = np.random.default_rng(0)
    X = np.zeros((60, 22), dtype=np.float32)
    X[:58, :20] = rng.random((58, 20)) < 0.4
    X[58, 20], X[59, 21] = 1, 1  # each shares no set bit with any row: jaccard 1, cut
    with pytest.warns(UserWarning, match="A few of your vertices"):
        est = umapviz.UMAP(n_neighbors=5, metric="jaccard", n_epochs=20, random_state=0, device="cpu").fit(X)
    assert np.isnan(est.embedding_[58:]).all() and np.isfinite(est.embedding_[:58]).all()
    assert np.array_equal(np.flatnonzero(np.asarray(est.graph_.sum(axis=1)).ravel() == 0), [58, 59])
    assert np.isfinite(est.optimizer_.embedding).all()  # the layout itself: transform places points against it


def test_transform_mode_graph_returns_memberships_and_one_row_fits_at_the_origin(blobs):
    X, _ = blobs
    est = umapviz.UMAP(n_neighbors=10, n_epochs=20, random_state=0, device="cpu", transform_mode="graph")
    assert est.fit_transform(X) is est.graph_
    new = est.transform(X[:4] + 0.05)
    assert scipy.sparse.issparse(new) and new.shape == (4, len(X))
    embedded = est.set_params(transform_mode="embedding").transform(X[:4] + 0.05)
    assert embedded.shape == (4, 2) and (new.getnnz(axis=1) == 10).all()
    one = umapviz.UMAP().fit([[1.0, 1.0, 1.0, 1.0]])
    assert np.array_equal(one.embedding_, np.zeros((1, 2), np.float32))
    with pytest.raises(ValueError, match="single data sample"):
        one.transform([[0.0, 0.0, 0.0, 0.0]])


def test_y_of_the_wrong_length_is_refused(blobs):
    X, y = blobs
    with pytest.raises(ValueError, match="one target per row"):
        umapviz.UMAP().fit(X, y[:-1])


def test_explorer_and_compare_sources_take_a_model_or_a_membership_matrix(blobs, umap_learn):
    X, labels = blobs
    theirs = _fit_umap_learn(umap_learn, X)
    ours = umapviz.UMAP(n_neighbors=10, n_epochs=20, random_state=0, device="cpu").fit(X)
    for data in (theirs, ours, theirs.graph_, ours.graph_):
        source = load_source(data, labels=labels)
        assert source.name == GRAPH_SOURCE == data_name(data)
        assert source.graph.n_vertices == len(X) and np.array_equal(source.labels, labels)
    assert load_source(ours).graph is ours.fuzzy_graph_
    _same_graph(load_source(theirs).graph, FuzzyGraph.from_umap(theirs))


def test_what_umapviz_does_not_offer_says_what_to_use(blobs):
    X, _ = blobs
    est = umapviz.UMAP(n_neighbors=10, n_epochs=5, device="cpu", init="random", random_state=0)
    with pytest.warns(UserWarning, match="larger than the data"):
        est.set_params(n_neighbors=500).fit(X[:50])
    assert est._n_neighbors == 49 and est.fuzzy_graph_.knn_indices.shape[1] == 49
    with pytest.raises(NotImplementedError, match="umap-learn"):
        est.inverse_transform(est.embedding_[:2])
    with pytest.raises(NotImplementedError, match="refit"):
        est.update(X[:5])
