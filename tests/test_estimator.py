"""The scikit-learn style estimator."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import is_classifier, is_regressor
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import umapviz
import umapviz.estimator as estimator


def test_fit_transform_follows_sklearn_conventions(blobs_small):
    X, _ = blobs_small
    est = umapviz.UMAP(n_neighbors=10, n_epochs=40, strategy="buffered", random_state=0)
    assert not hasattr(est, "embedding_")  # __init__ only stores parameters
    emb = est.fit_transform(X)
    assert emb.shape == (len(X), 2) and emb is est.embedding_
    assert est.fuzzy_graph_.n_vertices == len(X) and est.optimizer_.done
    again = umapviz.UMAP(**est.get_params()).fit_transform(X)
    assert again.tobytes() == emb.tobytes()


def test_params_roundtrip_and_bad_names():
    est = umapviz.UMAP(n_chunks=8)
    assert est.get_params()["n_chunks"] == 8
    assert est.set_params(n_chunks="degree").n_chunks == "degree"
    assert "n_chunks='degree'" in repr(est)
    with pytest.raises(ValueError, match="no parameter 'chunks'"):
        est.set_params(chunks=3)


def test_repr_shows_only_changed_values_and_arrays_by_shape():
    assert repr(umapviz.UMAP(learning_rate=1, n_neighbors=np.int64(15))) == "UMAP()"  # equal to the defaults
    assert repr(umapviz.UMAP(verbose=0)) == "UMAP(verbose=0)"  # 0 is not False
    text = repr(umapviz.UMAP(init=np.zeros((300, 2), np.float32)))
    assert text == "UMAP(init=<array of shape (300, 2), float32>)"


def _data(n=300, d=6, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)


def test_small_spread_gives_a_bounded_embedding():
    """spread=0.1 fitted a, b < 0 and the layout exploded (extent ~4e9)."""
    emb = umapviz.UMAP(spread=0.1, min_dist=0.0, n_epochs=50, random_state=0, device="cpu").fit_transform(_data())
    assert np.isfinite(emb).all() and np.ptp(emb, axis=0).max() < 100


def test_sklearn_helpers_work_before_and_after_fit():
    validation = pytest.importorskip("sklearn.utils.validation")

    est = umapviz.UMAP(n_neighbors=10, n_epochs=20, random_state=0, device="cpu")
    with pytest.raises(NotFittedError):
        validation.check_is_fitted(est)
    validation.check_is_fitted(est.fit(_data()))
    assert not is_regressor(est) and not is_classifier(est)
    assert "UMAP" in make_pipeline(StandardScaler(), umapviz.UMAP())._repr_html_()


def test_fit_records_the_input_features():
    pd = pytest.importorskip("pandas")
    X = _data(d=3)
    est = umapviz.UMAP(n_neighbors=10, n_epochs=10, random_state=0, device="cpu")
    frame = pd.DataFrame(X, columns=["x", "y", "z"])
    est.fit(frame)
    assert est.n_features_in_ == 3
    assert est.feature_names_in_.dtype == object and list(est.feature_names_in_) == ["x", "y", "z"]
    est.fit(X)  # a plain array has no names: the old ones must not linger
    assert est.n_features_in_ == 3 and not hasattr(est, "feature_names_in_")
    est.fit(pd.DataFrame(X))  # integer column names are not feature names (scikit-learn's rule)
    assert not hasattr(est, "feature_names_in_")


@pytest.mark.parametrize(
    "bad",
    [
        {"strategy": "bogus"},  # refused before the graph
        {"init": np.zeros((300, 2), np.float32)},  # refused after the graph: the shape needs the data's rows
    ],
)
def test_a_failed_refit_leaves_the_previous_fit_whole(bad):
    X = _data()
    est = umapviz.UMAP(n_epochs=20, random_state=0, device="cpu").fit(X)
    graph, embedding = est.fuzzy_graph_, est.embedding_
    with pytest.raises(ValueError):
        est.set_params(**bad).fit(X[:100])
    assert est.fuzzy_graph_ is graph and est.embedding_ is embedding and est.optimizer_.graph is graph
    assert est.fuzzy_graph_.n_vertices == est.embedding_.shape[0] == 300


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"strategy": "chunkd"}, ValueError, "strategy='chunkd' is not known"),
        ({"n_components": 0}, ValueError, "n_components=0"),
        ({"init": "pca"}, ValueError, "init='pca' is not known"),
        ({"learning_rate": -1.0}, ValueError, "learning_rate=-1.0"),
        ({"learning_rate": "1"}, TypeError, "learning_rate must be a number, got '1'"),
        ({"learning_rate": True}, TypeError, "learning_rate must be a number, got True"),
        ({"negative_sample_rate": -1}, ValueError, "negative_sample_rate=-1"),
        ({"repulsion_strength": np.nan}, ValueError, "repulsion_strength=nan"),
        ({"n_chunks": "bogus"}, ValueError, "n_chunks='bogus' is not a known rule"),
        ({"n_chunks": 2.5}, TypeError, "n_chunks must be an int"),
    ],
)
def test_optimizer_parameters_are_checked_before_the_graph(monkeypatch, tmp_path, kwargs, error, match):
    monkeypatch.setattr(estimator, "build_graph", lambda *a, **k: pytest.fail("build_graph ran with a bad parameter"))
    with pytest.raises(error, match=match):
        umapviz.UMAP(cache=str(tmp_path), device="cpu", **kwargs).fit(_data())
    assert not any(tmp_path.iterdir())  # nothing cached either


def test_learning_rate_must_be_a_real_number_for_the_optimizer_too(small_graph):
    """ "1" and True were silently taken as 1.0, unlike every other numeric parameter."""
    for bad in ("1", True, None):
        with pytest.raises(TypeError, match="learning_rate must be a number"):
            umapviz.LayoutOptimizer(small_graph, learning_rate=bad)


def test_gpu_graph_without_gpu_says_so(blobs_small):
    if umapviz._backend.gpu_available():
        pytest.skip("a GPU is present here")
    with pytest.raises(RuntimeError, match="no GPU is usable"):
        umapviz.build_graph(blobs_small[0], device="gpu", cache=False)
