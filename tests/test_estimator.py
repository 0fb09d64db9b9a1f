"""The scikit-learn style estimator and the headless demo."""

from __future__ import annotations

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


def test_demo_cli_takes_n_neighbors_as_its_advice_says(capsys):
    """Too few points for the default 15 neighbours: the error says to lower n_neighbors, which the demo takes."""
    assert main(["demo", "--dataset", "moons", "--n-samples", "10", "--n-epochs", "5"]) == 2
    assert "n_neighbors" in capsys.readouterr().err
    assert main(["demo", "--dataset", "moons", "--n-samples", "10", "--n-neighbors", "5", "--n-epochs", "5",
                 "--n-chunks", "2"]) == 0


def test_demo_cli_writes_figures(tmp_path, capsys):
    code = main(["demo", "--dataset", "moons", "--n-samples", "400", "--n-chunks", "4", "--n-epochs", "20",
                 "--out", str(tmp_path)])
    assert code == 0
    assert "buffered" in capsys.readouterr().out
    from PIL import Image

    img = np.asarray(Image.open(tmp_path / "side_by_side.png"))
    assert img.ndim == 3 and img.shape[1] > 3 * img.shape[0] / 2  # three panels in a row
