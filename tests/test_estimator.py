"""The scikit-learn style estimator and the headless demo."""

from __future__ import annotations

import re

import numpy as np
import pytest

import umapviz
from umapviz.cli import format_table, main, run_demo


def test_fit_transform_follows_sklearn_conventions(blobs_small):
    X, _ = blobs_small
    est = umapviz.UMAP(n_neighbors=10, n_epochs=40, strategy="buffered", random_state=0)
    assert not hasattr(est, "embedding_")  # __init__ only stores parameters
    emb = est.fit_transform(X)
    assert emb.shape == (len(X), 2) and emb is est.embedding_
    assert est.graph_.n_vertices == len(X) and est.optimizer_.done
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
    from sklearn.base import is_classifier, is_regressor
    from sklearn.exceptions import NotFittedError
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

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
    graph, embedding = est.graph_, est.embedding_
    with pytest.raises(ValueError):
        est.set_params(**bad).fit(X[:100])
    assert est.graph_ is graph and est.embedding_ is embedding and est.optimizer_.graph is graph
    assert est.graph_.n_vertices == est.embedding_.shape[0] == 300


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
    import umapviz.estimator as estimator

    monkeypatch.setattr(estimator, "build_graph", lambda *a, **k: pytest.fail("build_graph ran with a bad parameter"))
    with pytest.raises(error, match=match):
        umapviz.UMAP(cache=str(tmp_path), device="cpu", **kwargs).fit(_data())
    assert not any(tmp_path.iterdir())  # nothing cached either


def test_learning_rate_must_be_a_real_number_for_the_optimizer_too(small_graph):
    """"1" and True were silently taken as 1.0, unlike every other numeric parameter."""
    for bad in ("1", True, None):
        with pytest.raises(TypeError, match="learning_rate must be a number"):
            umapviz.LayoutOptimizer(small_graph, learning_rate=bad)


def test_gpu_graph_without_gpu_says_so(blobs_small):
    if umapviz._backend.gpu_available():
        pytest.skip("a GPU is present here")
    with pytest.raises(RuntimeError, match="no GPU is usable"):
        umapviz.build_graph(blobs_small[0], device="gpu", cache=False)


def test_demo_rows_and_table():
    rows = run_demo("blobs", n_samples=800, n_chunks=[4, "degree"], n_epochs=30, progress=False)
    assert [r["strategy"] for r in rows] == ["sequential", "buffered", "chunked", "chunked"]
    assert rows[0]["outliers_bounds"] == 0  # the reference has none against itself
    assert rows[3]["rule"] == "degree" and isinstance(rows[3]["n_chunks"], int)
    assert len({r["fingerprint"] for r in rows[:3]}) == 3  # sequential, buffered, chunked differ
    assert all(0.5 < r["trustworthiness"] <= 1 for r in rows)
    table = format_table(rows)
    assert table.splitlines()[0].startswith("strategy") and len(table.splitlines()) == 6


def test_demo_cli_reports_bad_input(capsys):
    assert main(["demo", "--dataset", "no-such-data"]) == 2
    assert "error" in capsys.readouterr().err


def test_demo_cli_refuses_a_bad_n_chunks_before_any_work(capsys, monkeypatch):
    import umapviz.cli as cli

    monkeypatch.setattr(cli, "run_demo", lambda *a, **k: pytest.fail("the demo ran with a bad --n-chunks"))
    for bad in ("4,bogus", "0", "-2", "2.5"):
        with pytest.raises(SystemExit) as exit_info:
            main(["demo", "--n-chunks", bad])
        assert exit_info.value.code == 2
        assert "not an n_chunks value" in capsys.readouterr().err


def test_demo_cli_refuses_an_out_that_is_a_file_before_any_work(capsys, monkeypatch, tmp_path):
    """It failed with a FileExistsError traceback after every run had finished."""
    from umapviz import datasets

    monkeypatch.setattr(datasets, "load", lambda *a, **k: pytest.fail("the demo started with a bad --out"))
    existing = tmp_path / "outfile"
    existing.write_text("mine")
    assert main(["demo", "--out", str(existing)]) == 2
    assert "is a file; give a folder" in capsys.readouterr().err
    assert existing.read_text() == "mine"


def test_demo_cli_refuses_an_out_it_cannot_make_before_any_work(capsys, monkeypatch, tmp_path):
    """A folder that cannot be made (under a file, or a read-only place) failed with a bare "[Errno 20] Not a
    directory" after every run had finished."""
    from umapviz import datasets

    monkeypatch.setattr(datasets, "load", lambda *a, **k: pytest.fail("the demo started with a bad --out"))
    (tmp_path / "afile").write_text("mine")
    assert main(["demo", "--out", str(tmp_path / "afile" / "figures")]) == 2
    assert "the folder cannot be made (Not a directory); give a writable folder" in capsys.readouterr().err


def test_demo_cli_refuses_too_many_chunks_before_any_run(capsys, monkeypatch):
    """--n-chunks beyond the graph's edges was found only when its run came, after sequential and buffered."""
    monkeypatch.setattr(umapviz.LayoutOptimizer, "run", lambda *a, **k: pytest.fail("a run began, --n-chunks bad"))
    assert main(["demo", "--dataset", "moons", "--n-samples", "40", "--n-epochs", "5", "--n-chunks", "4,100000"]) == 2
    assert "--n-chunks 100000 is out of range" in capsys.readouterr().err


def test_demo_cli_says_there_is_no_gpu_before_loading_data(capsys, monkeypatch):
    import umapviz._backend as backend
    from umapviz import datasets

    def no_gpu():
        raise RuntimeError("device='gpu' was asked for, but no GPU is usable here")  # as on a machine without one

    monkeypatch.setattr(backend, "cupy", no_gpu)
    monkeypatch.setattr(datasets, "load", lambda *a, **k: pytest.fail("data loaded before the device was checked"))
    assert main(["demo", "--device", "gpu"]) == 2
    assert "GPU" in capsys.readouterr().err


def test_demo_cli_refuses_an_empty_dataset_name(capsys):
    assert main(["demo", "--dataset", ""]) == 2  # ran the 50,000-point default instead
    assert "neither a built-in dataset nor a supported file" in capsys.readouterr().err


def test_demo_cli_takes_n_neighbors_as_its_advice_says(capsys):
    """Too few points for the default 15 neighbours: the error says to lower n_neighbors, which the demo takes."""
    assert main(["demo", "--dataset", "moons", "--n-samples", "10", "--n-epochs", "5"]) == 2
    assert "Lower --n-neighbors" in capsys.readouterr().err
    assert main(["demo", "--dataset", "moons", "--n-samples", "10", "--n-neighbors", "5", "--n-epochs", "5",
                 "--n-chunks", "2"]) == 0


@pytest.mark.parametrize("flags, said", [
    (["--n-neighbors", "1"], "--n-neighbors 1 is too small"),
    (["--random-state", "-1"], "--random-state -1 is out of range"),
    (["--n-epochs", "0"], "--n-epochs 0 is not allowed"),
    (["--n-samples", "0"], "--n-samples must be a positive integer (or leave out --n-samples"),
    (["--n-chunks", "100000"], "--n-chunks 100000 is out of range"),
    (["--label-column", "label"], "--label-column 'label' applies to files"),
])
def test_demo_cli_errors_name_the_flags_not_the_api_parameters(capsys, flags, said):
    """The errors came from the Python API and named its parameters (n_neighbors=1), not the flags typed."""
    assert main(["demo", "--dataset", "moons", "--n-samples", "40", "--n-epochs", "5", *flags]) == 2
    err = capsys.readouterr().err
    assert said in err
    assert not re.search(r"\b(n_neighbors|random_state|n_epochs|n_samples|n_chunks|label_column)\b", err)


def test_demo_cli_label_column_reaches_the_file_reader(capsys, tmp_path, monkeypatch):
    path = tmp_path / "mine.csv"
    path.write_text("a,b,label,target\n1,2,0,0\n3,4,1,1\n")
    assert main(["demo", "--dataset", str(path)]) == 2  # two candidates: the error names the flag that settles it
    assert "'label', 'target'" in (err := capsys.readouterr().err) and "--label-column 'label'" in err
    assert main(["demo", "--dataset", str(path), "--label-column", "species"]) == 2
    assert "--label-column 'species' is not a column" in (err := capsys.readouterr().err) and "'target'" in err
    seen = {}

    def spy(*args, **kwargs):
        seen.update(kwargs)
        raise ValueError("stop here")

    from umapviz import datasets

    monkeypatch.setattr(datasets, "load", spy)
    assert main(["demo", "--dataset", str(path), "--label-column", "target"]) == 2
    assert seen["label_column"] == "target"


def test_demo_cli_writes_figures(tmp_path, capsys):
    code = main(["demo", "--dataset", "moons", "--n-samples", "400", "--n-chunks", "4", "--n-epochs", "20",
                 "--out", str(tmp_path)])
    assert code == 0
    assert "buffered" in capsys.readouterr().out
    from PIL import Image

    img = np.asarray(Image.open(tmp_path / "side_by_side.png"))
    assert img.ndim == 3 and img.shape[1] > 3 * img.shape[0] / 2  # three panels in a row
