"""The command line: ``umapviz demo``, ``compare`` and ``bench``."""

from __future__ import annotations

import re

import numpy as np
import pytest
from PIL import Image

import umapviz
import umapviz._backend as backend
import umapviz.cli as cli
from umapviz import datasets, metrics
from umapviz.cli import compare_summary, format_table, main, run_bench, run_compare, run_demo, steps
from umapviz.graph import build_graph
from umapviz.render import side_by_side

SMALL = ["--dataset", "moons", "--n-samples", "40", "--n-epochs", "5"]  # a tiny run's flags, for the checks


def _graph(name: str, n: int, n_epochs: int):
    """The graph the commands build for ``--dataset name --n-samples n`` (random_state 0, 15 neighbours)."""
    X, _ = datasets.load(name, n_samples=n, random_state=0)
    return build_graph(X, n_neighbors=15, n_epochs=n_epochs, random_state=0, progress=False)


def _fingerprint(graph, strategy: str, seed: int, n_chunks: int | str = "auto") -> str:
    """A plain LayoutOptimizer run's fingerprint, from ``init="spectral"``: what every command must reproduce."""
    opt = umapviz.LayoutOptimizer(graph, strategy=strategy, n_chunks=n_chunks, random_state=seed, init="spectral")
    return metrics.fingerprint(opt.run().embedding)


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
    monkeypatch.setattr(cli, "run_demo", lambda *a, **k: pytest.fail("the demo ran with a bad --n-chunks"))
    for bad in ("4,bogus", "0", "-2", "2.5"):
        with pytest.raises(SystemExit) as exit_info:
            main(["demo", "--n-chunks", bad])
        assert exit_info.value.code == 2
        assert "not an n_chunks value" in capsys.readouterr().err


def test_demo_cli_refuses_an_out_that_is_a_file_before_any_work(capsys, monkeypatch, tmp_path):
    """It failed with a FileExistsError traceback after every run had finished."""

    monkeypatch.setattr(datasets, "load", lambda *a, **k: pytest.fail("the demo started with a bad --out"))
    existing = tmp_path / "outfile"
    existing.write_text("mine")
    assert main(["demo", "--out", str(existing)]) == 2
    assert "is a file; give a folder" in capsys.readouterr().err
    assert existing.read_text() == "mine"


def test_demo_cli_refuses_an_out_it_cannot_make_before_any_work(capsys, monkeypatch, tmp_path):
    """A folder that cannot be made (under a file, or a read-only place) failed with a bare "[Errno 20] Not a
    directory" after every run had finished."""

    monkeypatch.setattr(datasets, "load", lambda *a, **k: pytest.fail("the demo started with a bad --out"))
    (tmp_path / "afile").write_text("mine")
    assert main(["demo", "--out", str(tmp_path / "afile" / "figures")]) == 2
    assert "the folder cannot be made (Not a directory); give a writable folder" in capsys.readouterr().err


def test_demo_cli_refuses_too_many_chunks_before_any_run(capsys, monkeypatch):
    """--n-chunks beyond the graph's edges was found only when its run came, after sequential and buffered."""
    monkeypatch.setattr(umapviz.LayoutOptimizer, "run", lambda *a, **k: pytest.fail("a run began, --n-chunks bad"))
    assert main(["demo", "--dataset", "moons", "--n-samples", "40", "--n-epochs", "5", "--n-chunks", "4,100000"]) == 2
    assert "--n-chunks 100000 is out of range" in capsys.readouterr().err


def test_demo_cli_refuses_an_empty_dataset_name(capsys):
    assert main(["demo", "--dataset", ""]) == 2  # ran the default dataset instead
    assert "neither a built-in dataset nor a supported file" in capsys.readouterr().err


def test_demo_cli_takes_n_neighbors_as_its_advice_says(capsys):
    """Too few points for the default 15 neighbours: the error says to lower n_neighbors, which the demo takes."""
    assert main(["demo", "--dataset", "moons", "--n-samples", "10", "--n-epochs", "5"]) == 2
    assert "Lower --n-neighbors" in capsys.readouterr().err
    assert (
        main(
            [
                "demo",
                "--dataset",
                "moons",
                "--n-samples",
                "10",
                "--n-neighbors",
                "5",
                "--n-epochs",
                "5",
                "--n-chunks",
                "2",
            ]
        )
        == 0
    )


@pytest.mark.parametrize(
    "flags, said",
    [
        (["--n-neighbors", "1"], "--n-neighbors 1 is too small"),
        (["--random-state", "-1"], "--random-state -1 is out of range"),
        (["--n-epochs", "0"], "--n-epochs 0 is not allowed"),
        (["--n-samples", "0"], "--n-samples must be a positive integer (or leave out --n-samples"),
        (["--n-chunks", "100000"], "--n-chunks 100000 is out of range"),
        (["--label-column", "label"], "--label-column 'label' applies to files"),
    ],
)
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

    monkeypatch.setattr(datasets, "load", spy)
    assert main(["demo", "--dataset", str(path), "--label-column", "target"]) == 2
    assert seen["label_column"] == "target"


def test_demo_cli_writes_figures(tmp_path, capsys):
    code = main(
        [
            "demo",
            "--dataset",
            "moons",
            "--n-samples",
            "400",
            "--n-chunks",
            "4",
            "--n-epochs",
            "20",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 0
    assert "buffered" in capsys.readouterr().out

    img = np.asarray(Image.open(tmp_path / "side_by_side.png"))
    assert img.ndim == 3 and img.shape[1] > 3 * img.shape[0] / 2  # three panels in a row


def test_demo_start_computed_once_gives_the_bytes_of_init_spectral():
    """The runs share one spectral start instead of each computing it: the layouts must not change."""
    rows = run_demo("blobs", n_samples=500, n_chunks=[3], n_epochs=20, progress=False)
    graph = _graph("blobs", 500, 20)
    assert [r["fingerprint"] for r in rows] == [
        _fingerprint(graph, "sequential", 0),
        _fingerprint(graph, "buffered", 0),
        _fingerprint(graph, "chunked", 0, 3),
    ]


@pytest.mark.parametrize("command", ["demo", "compare", "bench"])
def test_every_command_says_there_is_no_gpu_before_loading_data(capsys, monkeypatch, command):
    def no_gpu():
        raise RuntimeError("device='gpu' was asked for, but no GPU is usable here")  # as on a machine without one

    monkeypatch.setattr(backend, "cupy", no_gpu)
    monkeypatch.setattr(datasets, "load", lambda *a, **k: pytest.fail("data loaded before the device was checked"))
    assert main([command, "--device", "gpu"]) == 2
    assert f"umapviz {command}: error:" in (err := capsys.readouterr().err) and "GPU" in err


@pytest.mark.parametrize("command", ["compare", "bench"])
def test_new_commands_name_the_flags_in_api_errors(capsys, command):
    assert main([command, *SMALL, "--n-neighbors", "1"]) == 2
    err = capsys.readouterr().err
    assert "--n-neighbors 1 is too small" in err and "n_neighbors" not in err


# ------------------------------------------------------------------------------------------------- compare
def test_compare_runs_every_n_chunks_per_seed_against_that_seeds_sequential_layout():
    rows = run_compare("blobs", n_samples=500, n_chunks=[1, 5], seeds=[0, 3], n_epochs=20, progress=False)
    assert [(r["seed"], r["strategy"], r["n_chunks"]) for r in rows] == [
        (0, "sequential", "-"),
        (0, "chunked", 1),
        (0, "chunked", 5),
        (3, "sequential", "-"),
        (3, "chunked", 1),
        (3, "chunked", 5),
    ]
    graph = _graph("blobs", 500, 20)
    for r in rows:  # each run is what a LayoutOptimizer of that seed makes (one chunk: buffered's bytes)
        strategy = "buffered" if r["n_chunks"] == 1 else r["strategy"]
        chunks = 1 if r["n_chunks"] == "-" else r["n_chunks"]
        assert r["fingerprint"] == _fingerprint(graph, strategy, r["seed"], chunks)
    assert rows[0]["outliers_bounds"] == rows[3]["outliers_bounds"] == 0  # each reference against itself
    assert rows[0]["fingerprint"] != rows[3]["fingerprint"]


def test_demo_and_compare_take_hogwild_as_their_reference_when_asked():
    """The GPU's default (its sequential strategy is one thread); on the CPU only when asked."""
    rows = run_compare(
        "moons", n_samples=200, n_chunks=[2], seeds=[0], n_epochs=10, progress=False, reference="hogwild"
    )
    assert [r["strategy"] for r in rows] == ["hogwild", "chunked"] and rows[0]["outliers_bounds"] == 0
    for run in (run_compare, run_demo):
        with pytest.raises(ValueError, match=r"reference='buffered' is not one of \('sequential', 'hogwild'\)"):
            run("moons", n_samples=200, reference="buffered", progress=False)
    rows = run_demo("moons", n_samples=200, n_chunks=[2], n_epochs=10, progress=False, reference="hogwild")
    assert [r["strategy"] for r in rows] == ["hogwild", "buffered", "chunked"] and rows[0]["outliers_bounds"] == 0


def test_compare_summary_counts_the_seeds_clean_by_both_tests():
    def row(seed, chunks, bounds, neighbors, rule=""):
        return {
            "seed": seed,
            "strategy": "chunked",
            "n_chunks": chunks,
            "rule": rule,
            "outliers_bounds": bounds,
            "outliers_neighbors": neighbors,
        }

    rows = [
        row(0, 4, 0, 0),
        row(0, 7, 0, 0, "auto"),
        row(1, 4, 0, 2),
        row(1, 9, 3, 0, "auto"),
        row(2, 4, 0, 0),
        row(2, 8, 0, 0, "auto"),
    ]
    summary = {s["n_chunks"]: s for s in compare_summary(rows)}
    assert summary[4]["clean"] == "2/3" and summary[4]["most_bounds"] == 0 and summary[4]["most_neighbors"] == 2
    # A rule is one group whatever it picked for each seed, and it says what it picked.
    assert summary["auto"]["clean"] == "2/3" and summary["auto"]["most_bounds"] == 3
    assert summary["auto"]["n_chunks_used"] == "7,8,9"


def test_compare_cli_prints_both_tables_and_writes_a_row_of_panels_per_seed(tmp_path, capsys):
    flags = ["--dataset", "moons", "--n-samples", "300", "--n-epochs", "10", "--n-chunks", "2,auto"]
    assert main(["compare", *flags, "--seeds", "0", "--out", str(tmp_path / "one")]) == 0
    assert main(["compare", *flags, "--seeds", "0,1", "--out", str(tmp_path / "two")]) == 0
    out = capsys.readouterr().out
    assert "clean seeds" in out and re.search(r"chunked\s+auto\s+\d+\s+\d/2", out)
    one = np.asarray(Image.open(tmp_path / "one" / "compare.png"))
    two = np.asarray(Image.open(tmp_path / "two" / "compare.png"))
    assert two.shape[1] == one.shape[1] and 1.5 * one.shape[0] < two.shape[0] < 2 * one.shape[0]  # one title
    assert one.shape[1] > 2.5 * (two.shape[0] - one.shape[0])  # a row: sequential and two chunked panels


def test_compare_cli_refuses_bad_seeds_and_too_many_chunks_before_any_run(capsys, monkeypatch):
    monkeypatch.setattr(umapviz.LayoutOptimizer, "run", lambda *a, **k: pytest.fail("a run began with bad input"))
    for bad in ("0,x", "-1", "1.5", str(2**32)):
        with pytest.raises(SystemExit) as exit_info:
            main(["compare", *SMALL, "--seeds", bad])
        assert exit_info.value.code == 2
        assert "is not a seed" in capsys.readouterr().err
    assert main(["compare", *SMALL, "--n-chunks", "4,100000"]) == 2
    assert "--n-chunks 100000 is out of range" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------- bench
def test_bench_times_each_strategy_and_checks_the_repeats():
    rows = run_bench(
        "blobs",
        n_samples=500,
        strategies=["hogwild", "buffered", "chunked"],
        n_chunks=3,
        n_epochs=12,
        repeat=2,
        progress=False,
    )
    assert [r["strategy"] for r in rows] == ["hogwild", "buffered", "chunked"]
    assert rows[0]["x_hogwild"] == 1.0 and rows[2]["n_chunks"] == 3
    assert rows[1]["repeats"] is True and rows[2]["repeats"] is True
    graph = _graph("blobs", 500, 12)
    assert rows[1]["fingerprint"] == _fingerprint(graph, "buffered", 0)
    assert rows[2]["fingerprint"] == _fingerprint(graph, "chunked", 0, 3)
    records = list(umapviz.LayoutOptimizer(graph, strategy="buffered", random_state=0, init="random").epochs())
    mean_active = np.mean([r.active_edges for r in records])  # the schedule's, whatever the strategy
    for r in rows:
        assert r["ms_per_epoch"] > 0 and r["setup_s"] >= 0
        assert r["edges_per_s"] * r["ms_per_epoch"] / 1e3 == pytest.approx(mean_active)
        assert r["x_hogwild"] == pytest.approx(r["ms_per_epoch"] / rows[0]["ms_per_epoch"])


def test_bench_runs_every_strategy_by_default_on_the_cpu(capsys):
    assert main(["bench", *SMALL, "--n-neighbors", "5"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in table[2:]] == ["hogwild", "sequential", "buffered", "chunked", "vertex"]
    assert "repeats" not in table[0]  # one run each: nothing to compare


def test_bench_cli_fails_when_a_reproducible_strategy_does_not_repeat(capsys, monkeypatch):
    """What the repeat check is for: a strategy that promises bitwise repeats and breaks it is an error."""
    calls = iter(range(100))
    monkeypatch.setattr(metrics, "fingerprint", lambda emb: f"{next(calls):016x}")  # every run looks different
    assert main(["bench", *SMALL, "--n-neighbors", "5", "--strategies", "hogwild,chunked", "--repeat", "2"]) == 1
    captured = capsys.readouterr()
    assert "differ (racy, as expected)" in captured.out and "DIFFER" in captured.out
    said = captured.err.splitlines()[-1]  # after the progress bar
    assert "chunked did not repeat its bytes" in said and "hogwild" not in said


def test_bench_cli_refuses_bad_strategies_and_repeats(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", *SMALL, "--strategies", "hogwild,fast"])
    assert exit_info.value.code == 2 and "'fast' is not a strategy" in capsys.readouterr().err
    assert main(["bench", *SMALL, "--repeat", "0"]) == 2
    assert "--repeat 0 is out of range" in capsys.readouterr().err


@pytest.mark.gpu
def test_bench_on_the_gpu_runs_its_strategies_and_they_repeat(capsys):
    assert (
        main(
            [
                "bench",
                "--device",
                "gpu",
                "--dataset",
                "blobs",
                "--n-samples",
                "3000",
                "--n-epochs",
                "30",
                "--repeat",
                "2",
            ]
        )
        == 0
    )
    table = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in table[2:]] == ["hogwild", "buffered", "chunked", "vertex"]
    assert all(line.rstrip().endswith("same bytes") for line in table[3:])  # the reproducible three


@pytest.mark.gpu
def test_compare_on_the_gpu_counts_against_hogwild_and_repeats_its_chunked_bytes(capsys):
    flags = [
        "compare",
        "--device",
        "gpu",
        "--dataset",
        "blobs",
        "--n-samples",
        "3000",
        "--n-epochs",
        "30",
        "--seeds",
        "0",
        "--n-chunks",
        "1,auto",
    ]
    assert main(flags) == 0
    first = capsys.readouterr().out
    assert main(flags) == 0
    again = capsys.readouterr().out
    announced, table = first.split("\n\n")[:2]  # the data's lines, then the runs' table
    assert "device  gpu; outliers counted against the hogwild layout" in announced
    runs = [line.split() for line in table.splitlines()[2:]]
    assert [r[1] for r in runs] == ["hogwild", "chunked", "chunked"]
    chunked = [r[-1] for r in runs[1:]]  # their fingerprints, the last column
    assert all(fp in again for fp in chunked)  # reproducible on the GPU too


@pytest.mark.parametrize("command", ["demo", "compare", "bench"])
def test_a_ctrl_c_ends_a_command_with_a_line_not_a_traceback(capsys, monkeypatch, command):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(umapviz.LayoutOptimizer, "__init__", interrupted)
    assert main([command, *SMALL, "--n-neighbors", "5"]) == 130
    assert capsys.readouterr().err.splitlines()[-1] == f"umapviz {command}: interrupted"


def test_demo_prints_the_fingerprints_of_its_graph_and_start(capsys):
    assert main(["demo", "--dataset", "moons", "--n-samples", "200", "--n-epochs", "10", "--n-chunks", "4"]) == 0
    line = capsys.readouterr().out.splitlines()[4]
    X, _ = datasets.load("moons", n_samples=200, random_state=0)
    graph = build_graph(X, n_neighbors=15, n_epochs=10, random_state=0, progress=False)
    start = steps._start_layout(graph, "spectral", 0, "cpu")
    assert line.startswith(f"bytes   graph {graph.fingerprint}, start {metrics.fingerprint(start)}: ")
    assert main(["demo", *SMALL, "--init", "random", "--n-chunks", "4"]) == 0
    assert ", start random, from the seed: " in capsys.readouterr().out


def _demo_bytes_and_rows(out: str) -> tuple[str, dict]:
    """A demo's "bytes" line and its rows' fingerprints by (strategy, n_chunks)."""
    lines = out.splitlines()
    rows = {
        tuple(line.split()[:2]): line.split()[-1]
        for line in lines
        if line.startswith(("buffered", "chunked", "sequential"))
    }
    return next(line for line in lines if line.startswith("bytes ")), rows


@pytest.mark.gpu
def test_demo_on_the_gpu_prints_the_cpus_fingerprints_from_the_same_graph_and_start(capsys):
    flags = [
        "demo",
        "--dataset",
        "clusters",
        "--n-samples",
        "3000",
        "--n-epochs",
        "30",
        "--init",
        "random",
        "--n-chunks",
        "1,4",
        "--reference",
        "sequential",
    ]
    assert main([*flags, "--device", "cpu"]) == 0
    cpu = _demo_bytes_and_rows(capsys.readouterr().out)
    assert main([*flags, "--device", "gpu"]) == 0
    gpu = _demo_bytes_and_rows(capsys.readouterr().out)
    assert cpu[0] == gpu[0]  # the same graph and start ...
    assert len(cpu[1]) == 4 and cpu[1] == gpu[1]  # ... the same layouts


def test_demo_cli_names_the_data_above_the_table_and_explains_each_column_below(capsys):
    assert main(["demo", "--dataset", "moons", "--n-samples", "200", "--n-epochs", "10", "--n-chunks", "4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:4] == [
        "data    moons: 2-D two interleaved half circles (a 1-D manifold)",
        "points  200 points x 2 dimensions, 2 classes",
        "graph   15 neighbours per point (itself included), 10 epochs per run",
        "device  cpu; outliers counted against the sequential layout (the first row)",
    ]
    table = lines.index(next(line for line in lines if line.startswith("strategy ")))
    assert table > 4 and lines[table + 2].startswith("sequential")
    legend = lines[table + 6 :]  # header, rule, three runs, a blank line
    heads = [
        "strategy",
        "n_chunks",
        "rule",
        "outliers(bounds)",
        "outliers(neighbors)",
        "peak(neighbors)",
        "trust",
        "s/epoch",
        "fingerprint",
    ]
    assert [line.split()[0] for line in legend] == heads  # one line per column, in the table's order
    assert "[min - 2 std, max + 2 std]" in legend[3] and "20 x the median distance" in legend[4]
    assert "about 0.5 here" not in "\n".join(legend)  # moons has structure: no excuse for its trust


def test_demo_cli_says_why_trust_is_about_a_half_on_an_isotropic_gaussian(capsys):
    assert main(["demo", "--dataset", "gaussian", "--n-samples", "500", "--n-epochs", "10", "--n-chunks", "4"]) == 0
    out = capsys.readouterr().out
    assert "gaussian: " in out.splitlines()[0] and "500 points x 256 dimensions, no classes" in out
    trusts = [float(line.split()[-3]) for line in out.splitlines() if line.startswith(("sequential", "buffered"))]
    assert len(trusts) == 2 and all(0.4 < t < 0.6 for t in trusts)  # what the note below the table explains
    lines = out.splitlines()
    trust_line = next(i for i, line in enumerate(lines) if line.startswith("trust "))
    assert lines[trust_line + 1].strip().startswith("about 0.5 here: an isotropic Gaussian has no structure")


def test_compare_cli_names_the_data_and_explains_the_columns_of_both_tables(capsys):
    flags = ["--dataset", "moons", "--n-samples", "200", "--n-epochs", "10", "--n-chunks", "2", "--seeds", "0,1"]
    assert main(["compare", *flags, "--n-neighbors", "10"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("data    moons: ") and lines[1] == "points  200 points x 2 dimensions, 2 classes"
    assert lines[2] == "graph   10 neighbours per point (itself included), 10 epochs per run"
    explained = [line.split()[0] for line in lines[lines.index("", lines.index("", 5) + 1) + 1 :]]
    assert explained == [
        "seed",
        "strategy",
        "n_chunks",
        "rule",
        "outliers(bounds)",
        "outliers(neighbors)",
        "peak(neighbors)",
        "s/epoch",
        "fingerprint",
        "used",
        "clean",
        "most",
        "most",
    ]


def test_demo_reports_the_most_outliers_after_any_epoch_and_when():
    """A point flung early and pulled back by the last epoch is in the peak column, not the final count."""
    rows = run_demo("clusters", n_samples=2000, n_chunks=[4], n_epochs=12, progress=False)
    graph = build_graph(
        datasets.load("clusters", n_samples=2000, random_state=0)[0],
        n_neighbors=15,
        n_epochs=12,
        random_state=0,
        progress=False,
    )
    start = steps._start_layout(graph, "spectral", 0, "cpu")
    assert rows[1]["strategy"] == "buffered" and rows[1]["peak_neighbors"] != "0"  # its hubs fly early
    for row in rows:
        opt = umapviz.LayoutOptimizer(
            graph, strategy=row["strategy"], n_chunks=4, random_state=0, init=start, n_epochs=12
        )
        counts = []
        while not opt.done:
            opt.step(1)
            counts.append(int(metrics.outliers(opt.embedding, graph, method="neighbors").sum()))
        most = max(counts)
        assert row["peak_neighbors"] == (f"{most} @ {counts.index(most) + 1}" if most else "0")
        assert most >= row["outliers_neighbors"] == counts[-1]


def test_demo_figure_has_a_title_and_explains_its_counts_under_the_panels(tmp_path):
    rows = run_demo("moons", n_samples=300, n_chunks=[4], n_epochs=10, progress=False, out=tmp_path)
    figure = np.asarray(Image.open(tmp_path / "side_by_side.png"))
    plain = side_by_side([np.zeros((300, 2))] * 3, titles=["a", "b", "c"])  # no title, no caption
    assert len(rows) == 3 and figure.shape[1] == plain.shape[1]
    assert figure.shape[0] >= plain.shape[0] + 3 * 13  # a title line above, two caption lines below at least
    title_band = figure[: figure.shape[0] - plain.shape[0] - 2 * 13, :, :3].astype(int)
    assert (np.abs(title_band - title_band[0, 0]).sum(axis=2) > 100).any()  # something is written up there
