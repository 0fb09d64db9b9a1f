"""Headless entry points, as ``umapviz COMMAND`` (or ``python -m umapviz COMMAND``):

- ``demo``: sequential, buffered and chunked runs of one dataset, their outliers and fingerprints in a table;
- ``compare``: chunked runs for several n_chunks and layout seeds, each against its seed's sequential layout,
  and which n_chunks are clean on every seed;
- ``bench``: each strategy's time per epoch on this machine (CPU or GPU), its ratio to hogwild, and (with
  ``--repeat 2``) whether the reproducible strategies repeat their bytes.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from . import datasets, metrics
from ._backend import resolve_device
from ._validation import check_int, check_random_state
from .graph import build_graph
from .graph.start import spectral_init
from .metrics import BOUNDS_N_STD, NEIGHBOR_FACTOR
from .optimize import LayoutOptimizer
from .optimize.chunks import RULES, check_n_chunks, resolve_n_chunks
from .optimize.optimizer import REPRODUCIBLE, STRATEGIES

DEFAULT_CHUNKS: tuple[int | str, ...] = (1, 4, 16, "auto", "degree")
COMPARE_CHUNKS: tuple[int | str, ...] = (1, 4, 16, "auto")
COMPARE_SEEDS: tuple[int, ...] = (0, 1, 2)
# The GPU's sequential strategy is one thread (for tests and small graphs): named, it runs; by default, not.
REFERENCES = ("sequential", "hogwild")
BENCH_STRATEGIES = {
    "cpu": ("hogwild", "sequential", "buffered", "chunked", "vertex"),
    "gpu": ("hogwild", "buffered", "chunked", "vertex"),
}

# Errors from the Python API name its parameters ("n_neighbors=1 is too small"); the commands' users typed flags.
# Parameters with an underscore are names wherever they appear; device, init and repeat are words too, so only
# their "device=..." form is one. "n_epochs=None" (the default) is "leave out --n-epochs" on the command line.
_API_NAMES = re.compile(
    r"\b(?:(n_samples|n_chunks|n_neighbors|n_epochs|random_state|label_column)\b|(device|init|repeat)(?==))(=None\b|=)?"
)


def _name_flags(message: str) -> str:
    """An API error message with each parameter (``n_neighbors=1``) said as its flag (``--n-neighbors 1``)."""

    def flag(match: re.Match) -> str:
        name = "--" + (match[1] or match[2]).replace("_", "-")
        if match[3] == "=None":
            return f"leave out {name}"
        return name + (" " if match[3] else "")

    return _API_NAMES.sub(flag, message)


def _value(parse: Callable[[str], Any], what: str) -> Callable[[str], Any]:
    """An argparse type: one value through ``parse``, or an error that says what was expected."""

    def parse_one(text: str) -> Any:
        try:
            return parse(text.strip())
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"{text.strip()!r} is not {what}.") from None

    return parse_one


def _comma_list(parse_one: Callable[[str], Any]) -> Callable[[str], list]:
    """An argparse type: comma-separated values, each through ``parse_one``; a typo fails before any work."""
    return lambda text: [parse_one(part) for part in text.split(",")]


def _strategy(name: str) -> str:
    if name not in STRATEGIES:
        raise ValueError(name)
    return name


_n_chunks = _value(
    lambda text: check_n_chunks(int(text) if text.isdigit() else text),
    f"an n_chunks value: use whole numbers >= 1 or {', '.join(RULES)}",
)
_parse_chunks = _comma_list(_n_chunks)
_seed = _value(lambda text: check_random_state(int(text)), "a seed: use whole numbers from 0 to 2**32 - 1")
_parse_seeds = _comma_list(_seed)
_parse_strategies = _comma_list(_value(_strategy, f"a strategy: use {', '.join(STRATEGIES)}"))


# --------------------------------------------------------------------------------------------- shared steps
def _figures_folder(out: str | Path | None) -> Path | None:
    """``out`` as a folder that exists, made now: found at the end, a bad one cost every run's work."""
    if out is None:
        return None
    out = Path(out).expanduser()
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file; give a folder for the figures (it is made if missing).")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"--out {out}: the folder cannot be made ({exc.strerror}); give a writable folder.") from exc
    return out


def _data_and_graph(
    dataset: str | None,
    n_samples: int | None,
    random_state: int,
    label_column: str | None,
    n_neighbors: int,
    n_epochs: int | None,
    device: str,
    progress: bool,
) -> tuple:
    """``(X, labels, graph)`` of a named dataset or file, the graph built on ``device`` (and cached)."""
    name = datasets.DEFAULT if dataset is None else dataset  # "" is a typo, not a wish for the default
    X, labels = datasets.load(name, n_samples=n_samples, random_state=random_state, label_column=label_column)
    graph = build_graph(
        X, n_neighbors=n_neighbors, n_epochs=n_epochs, random_state=random_state, progress=progress, device=device
    )
    return X, labels, graph


def _device_and_reference(device: str, reference: str | None) -> tuple[str, str]:
    """The device resolved ("auto" made "cpu" or "gpu"), before any data is loaded, so that a missing GPU is said
    first; and the reference strategy (see :func:`run_demo`), its default picked by that device."""
    if reference not in (None, *REFERENCES):
        raise ValueError(f"reference={reference!r} is not one of {REFERENCES}.")
    device = resolve_device(device)
    return device, reference or ("hogwild" if device == "gpu" else "sequential")


def _start_layout(graph, init: str, seed: int, device: str) -> Any:
    """The initial layout of every run with this seed, computed once: what ``LayoutOptimizer(init=init)`` makes."""
    if init != "spectral":
        return init  # "random": drawn by each optimizer, in no time
    return spectral_init(graph, 2, seed, device=device)


def _check_chunks(chunks: Sequence[int | str], graph) -> None:
    """An n_chunks beyond the graph's edges, said before the runs rather than after some of them."""
    for value in chunks:
        resolve_n_chunks(value, graph)


def _run_series(
    graph,
    runs: Sequence[tuple[str, int | str]],
    seed: int,
    start: Any,
    n_epochs: int | None,
    device: str,
    done: Callable[[], Any],
) -> tuple[list[dict], list[np.ndarray], list[np.ndarray]]:
    """Full runs of ``(strategy, n_chunks)`` pairs from one start layout. The first is the reference: "bounds"
    outliers lie outside its per-axis [min - 2 std, max + 2 std]; "neighbors" outliers lie far from all their graph
    neighbours (see umapviz.metrics). Returns a row per run, the embeddings and the bounds masks; ``done()`` is
    called after each run (a progress bar's update)."""
    rows, embeddings, masks = [], [], []
    for strategy, chunks in runs:
        opt = LayoutOptimizer(
            graph, strategy=strategy, n_chunks=chunks, random_state=seed, init=start, n_epochs=n_epochs, device=device
        )
        peak = _PeakOutliers(graph)
        began = time.perf_counter()
        opt.run(peak)
        seconds = time.perf_counter() - began - peak.seconds
        emb = opt.embedding
        bounds = metrics.outliers(emb, method="bounds", reference=embeddings[0] if embeddings else emb)
        rows.append(
            {
                "strategy": strategy,
                "n_chunks": opt.n_chunks if strategy == "chunked" else "-",
                "rule": chunks if isinstance(chunks, str) else "",
                "outliers_bounds": int(bounds.sum()),
                "outliers_neighbors": int(metrics.outliers(emb, graph, method="neighbors").sum()),
                "peak_neighbors": f"{peak.count} @ {peak.epoch}" if peak.count else "0",
                "s_per_epoch": seconds / opt.n_epochs,
                "fingerprint": metrics.fingerprint(emb),
            }
        )
        embeddings.append(emb)
        masks.append(bounds)
        done()
    return rows, embeddings, masks


class _PeakOutliers:
    """A ``LayoutOptimizer.run`` callback: the most points the "neighbors" measure flags after any epoch, and the
    first epoch with that many. A point flung early is often pulled back before the last epoch, so the final count
    alone can hide what a strategy did; ``seconds`` is the time spent measuring, kept out of the layout's time."""

    def __init__(self, graph) -> None:
        self.graph, self.count, self.epoch, self.seconds = graph, 0, 0, 0.0

    def __call__(self, opt: LayoutOptimizer, record) -> None:
        began = time.perf_counter()
        count = int(metrics.outliers(opt.device_embedding, self.graph, method="neighbors").sum())
        if count > self.count:
            self.count, self.epoch = count, record.epoch
        self.seconds += time.perf_counter() - began


def _titles(rows: list[dict], suffix: str = "") -> list[str]:
    """Panel titles: the strategy, and for chunked its n_chunks and rule."""
    return [
        r["strategy"]
        + (f" n_chunks={r['n_chunks']}" if r["strategy"] == "chunked" else "")
        + (f" ({r['rule']})" if r["rule"] else "")
        + suffix
        for r in rows
    ]


# Built-in datasets without structure for a 2-D layout to keep: their trustworthiness sits near a random layout's.
STRUCTURELESS = ("gaussian", "gaussian1024")


def describe_data(
    dataset: str | None, X: np.ndarray, labels: np.ndarray | None, graph, device: str, reference: str, start: Any = None
) -> str:
    """The lines printed above a command's table: which data (name, points, dimensions, classes), the graph's
    neighbours and the runs' epochs, the device, and the layout outliers are counted against; with ``start``,
    the fingerprints of the graph and the start layout, which decide whether two runs' layouts can be equal.

    Parameters
    ----------
    dataset : str or None
        The ``--dataset`` given (None: the default dataset).
    X : numpy.ndarray
        The data, (n, d).
    labels : numpy.ndarray or None
        Its class codes, or None for data without classes.
    graph : FuzzyGraph
        The graph the layouts run on (its neighbours per point and epochs are said).
    device : str
        "cpu" or "gpu", as resolved.
    reference : str
        The strategy of the reference layout (the first row).
    start : numpy.ndarray, str or None
        The runs' start layout (an array, or "random": drawn from each run's seed); None leaves the line out.
    """
    name = datasets.DEFAULT if dataset is None else dataset
    builtin = datasets.names().get(name)
    what = f"{name}: {builtin.description}" if builtin is not None else f"{name} (your file)"
    classes = "no classes" if labels is None else f"{len(np.unique(labels)):,} classes"
    n_neighbors = graph.knn_indices.shape[1]
    lines = [
        ("data", what),
        ("points", f"{X.shape[0]:,} points x {X.shape[1]:,} dimensions, {classes}"),
        ("graph", f"{n_neighbors} neighbours per point (itself included), {graph.n_epochs:,} epochs per run"),
        ("device", f"{device}; outliers counted against the {reference} layout (the first row)"),
    ]
    if start is not None:
        begin = "random, from the seed" if isinstance(start, str) else metrics.fingerprint(start)
        lines.append(
            (
                "bytes",
                f"graph {graph.fingerprint}, start {begin}: a run on either device (CPU, GPU) "
                "with these two prints the same fingerprints (hogwild's aside: it races)",
            )
        )
    return "\n".join(f"{key:<8}{value}" for key, value in lines)


# What each column of the tables means, printed under them (the key is the column's header).
COLUMN_NOTES = {
    "seed": "the layout's random seed (the data and the graph stay the same)",
    "strategy": "how each epoch applies its updates (docs/optimizer.md); the first row is the reference",
    "n_chunks": "the chunks a chunked run split each epoch's edges into ('-': not a chunked run)",
    "rule": "the rule that chose n_chunks (auto, degree, ...); empty where a number was given",
    "outliers(bounds)": "after the last epoch, points outside the reference layout's box, per axis [min - {n} std, "
    "max + {n} std]".format(n=f"{BOUNDS_N_STD:g}"),
    "outliers(neighbors)": f"after the last epoch, points over {NEIGHBOR_FACTOR:g} x the median distance from their "
    "nearest graph neighbour",
    "peak(neighbors)": "the most outliers(neighbors) after any epoch, @ the first epoch with that many: a point flung "
    "early is often pulled back before the last epoch",
    "trust": "trustworthiness: are each point's 5 nearest in the layout near it in the data? 1 = all, 0.5 = random",
    "s/epoch": "seconds per epoch of the layout, on this machine (the per-epoch outlier count left out)",
    "fingerprint": "a hash of the layout's bytes: the same fingerprint means bitwise the same layout",
    "used": "the n_chunks each seed's run used (a rule may pick a different one per seed)",
    "clean seeds": "seeds whose layout had no outlier by either count, of all seeds",
    "most outliers(bounds)": "the most outliers(bounds) of any seed",
    "most outliers(neighbors)": "the most outliers(neighbors) of any seed",
}
STRUCTURELESS_TRUST = (
    "about 0.5 here: an isotropic Gaussian has no structure for a 2-D layout to keep (in hundreds",
    "of dimensions a point's nearest neighbours are barely nearer than any other point), so no",
    "layout does much better than a random one",
)


def explain_columns(columns: Sequence[tuple[str, str, Callable]], dataset: str | None = None) -> str:
    """The lines printed under a table: one per column, its header and what it means; and, where the table has a
    trust column and ``dataset`` is one without structure (STRUCTURELESS), why its trust is about 0.5.

    Parameters
    ----------
    columns : sequence of (header, key, format)
        The table's columns, as :func:`format_table` takes them.
    dataset : str or None
        The ``--dataset`` given (None: the default dataset).
    """
    heads = [h for h, _, _ in columns]
    width = max(map(len, heads))
    structureless = (datasets.DEFAULT if dataset is None else dataset) in STRUCTURELESS
    lines = []
    for h in heads:
        lines.append(f"{h:<{width}}  {COLUMN_NOTES[h]}")
        if h == "trust" and structureless:
            lines += [f"{'':<{width}}  {text}" for text in STRUCTURELESS_TRUST]
    return "\n".join(lines)


# The lines under the figures: what the count under each panel and the border triangles' numbers are.
FIGURE_CAPTION = (
    f"outliers: points outside the box of the row's first panel (the reference), per axis [min - {BOUNDS_N_STD:g} "
    f"std, max + {BOUNDS_N_STD:g} std], drawn as discs",
    "N points outside the view: points beyond the panel's view (chosen to show the bulk of the points), drawn as "
    "triangles on its border, each with its count",
)


def _figure_title(command: str, dataset: str | None, X: np.ndarray, graph, device: str) -> str:
    """A figure's overall title: the command and the data it laid out."""
    name = datasets.DEFAULT if dataset is None else Path(dataset).name
    return (
        f"umapviz {command}: {name}, {X.shape[0]:,} points x {X.shape[1]:,}-d, "
        f"{graph.knn_indices.shape[1]} neighbours, {graph.n_epochs:,} epochs, {device}"
    )


# --------------------------------------------------------------------------------------------------- demo
def run_demo(
    dataset: str | None = None,
    n_samples: int | None = None,
    n_chunks: list[int | str] | None = None,
    random_state: int = 0,
    device: str = "cpu",
    n_epochs: int | None = None,
    init: str = "spectral",
    out: str | Path | None = None,
    progress: bool = True,
    n_neighbors: int = 15,
    label_column: str | None = None,
    reference: str | None = None,
    announce: Callable[[str], Any] | None = None,
) -> list[dict]:
    """Run the reference layout, buffered and chunked (each n_chunks) on one dataset; return one row per run.

    Outliers are counted two ways: "bounds" (outside the reference layout's per-axis [min - 2 std,
    max + 2 std]) and "neighbors" (far from all graph neighbours); see umapviz.metrics. ``label_column``
    picks the class column of a data file (see umapviz.datasets.load). ``reference``: "sequential", or "hogwild"
    (near-sequential: its races are rare), the default on a GPU, where sequential runs on one thread.
    ``announce``, if given, is called with :func:`describe_data`'s lines once the data and graph are ready.
    """
    out = _figures_folder(out)
    device, reference = _device_and_reference(device, reference)
    X, labels, graph = _data_and_graph(
        dataset, n_samples, random_state, label_column, n_neighbors, n_epochs, device, progress
    )
    runs: list[tuple[str, int | str]] = [(reference, 1), ("buffered", 1)]
    runs += [("chunked", c) for c in (n_chunks or DEFAULT_CHUNKS)]
    _check_chunks([c for _, c in runs], graph)
    start = _start_layout(graph, init, random_state, device)
    if announce is not None:
        announce(describe_data(dataset, X, labels, graph, device, reference, start=start))
    with tqdm(total=len(runs), desc="demo", disable=not progress) as bar:
        rows, embeddings, masks = _run_series(graph, runs, random_state, start, n_epochs, device, bar.update)
    trust_k = max(1, min(5, (len(X) - 1) // 2))  # trustworthiness needs k < n / 2 (tiny --n-samples)
    for row, emb in zip(rows, embeddings, strict=True):
        row["trustworthiness"] = float(metrics.trustworthiness(X, emb, n_neighbors=trust_k))
    if out is not None:
        from .render import save_png, side_by_side  # noqa: PLC0415 - plotting only when asked for

        image = side_by_side(
            embeddings,
            titles=_titles(rows),
            labels=labels,
            outliers=masks,
            title=_figure_title("demo", dataset, X, graph, device),
            caption=FIGURE_CAPTION,
        )
        save_png(image, out / "side_by_side.png")
    return rows


DEMO_COLUMNS = (
    ("strategy", "strategy", str),
    ("n_chunks", "n_chunks", str),
    ("rule", "rule", str),
    ("outliers(bounds)", "outliers_bounds", str),
    ("outliers(neighbors)", "outliers_neighbors", str),
    ("peak(neighbors)", "peak_neighbors", str),
    ("trust", "trustworthiness", "{:.4f}".format),
    ("s/epoch", "s_per_epoch", "{:.4f}".format),
    ("fingerprint", "fingerprint", str),
)


def format_table(rows: list[dict], columns: Sequence[tuple[str, str, Callable]] = DEMO_COLUMNS) -> str:
    """A plain-text table: one line per row, a column per ``(header, key, format)``."""
    body = [[fmt(r[key]) for _, key, fmt in columns] for r in rows]
    head = [h for h, _, _ in columns]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths, strict=True)).rstrip() for b in body]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ compare
def run_compare(
    dataset: str | None = None,
    n_samples: int | None = None,
    n_chunks: list[int | str] | None = None,
    seeds: list[int] | None = None,
    random_state: int = 0,
    device: str = "cpu",
    n_epochs: int | None = None,
    init: str = "spectral",
    out: str | Path | None = None,
    progress: bool = True,
    n_neighbors: int = 15,
    label_column: str | None = None,
    reference: str | None = None,
    announce: Callable[[str], Any] | None = None,
) -> list[dict]:
    """Chunked runs for every n_chunks and layout seed of one graph, each with that seed's reference layout;
    one row per run (the references first). ``random_state`` seeds the data and graph, ``seeds`` the layouts.
    ``reference``: "sequential", or "hogwild", the default on a GPU (see :func:`run_demo`). With ``out``, writes
    ``compare.png``: a row of panels per seed. ``announce``: as in :func:`run_demo`."""
    out = _figures_folder(out)
    chunk_values = list(n_chunks or COMPARE_CHUNKS)
    seeds = list(COMPARE_SEEDS if seeds is None else seeds)
    if not seeds:
        raise ValueError("--seeds is empty; give at least one layout seed, e.g. --seeds 0,1,2.")
    device, reference = _device_and_reference(device, reference)
    X, labels, graph = _data_and_graph(
        dataset, n_samples, random_state, label_column, n_neighbors, n_epochs, device, progress
    )
    if announce is not None:
        announce(describe_data(dataset, X, labels, graph, device, reference))
    _check_chunks(chunk_values, graph)
    runs = [(reference, 1)] + [("chunked", c) for c in chunk_values]
    rows: list[dict] = []
    figure_rows: list[np.ndarray] = []
    with tqdm(total=len(seeds) * len(runs), desc="compare", disable=not progress) as bar:
        for seed in seeds:
            start = _start_layout(graph, init, seed, device)
            seed_rows, embeddings, masks = _run_series(graph, runs, seed, start, n_epochs, device, bar.update)
            rows += [dict(r, seed=seed) for r in seed_rows]
            if out is not None:
                from .render import side_by_side  # noqa: PLC0415 - plotting only when asked for

                titles = _titles(seed_rows, f", seed {seed}")
                figure_rows.append(side_by_side(embeddings, titles=titles, labels=labels, outliers=masks))
    if out is not None:
        from .render import add_title_and_caption, save_png  # noqa: PLC0415 - plotting only when asked for

        grid = np.vstack(figure_rows)  # equal widths: every row has the same panels
        title = _figure_title("compare", dataset, X, graph, device)
        save_png(add_title_and_caption(grid, title, FIGURE_CAPTION), out / "compare.png")
    return rows


COMPARE_COLUMNS = (("seed", "seed", str),) + tuple(c for c in DEMO_COLUMNS if c[1] != "trustworthiness")


def compare_summary(rows: list[dict]) -> list[dict]:
    """Per n_chunks value asked for (the reference first): on how many seeds its layout had no outlier by either
    test, and the most outliers of any seed by each."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["strategy"], r["rule"] or r["n_chunks"]), []).append(r)
    return [
        {
            "strategy": strategy,
            "n_chunks": value,
            "n_chunks_used": ",".join(sorted({str(r["n_chunks"]) for r in group}, key=lambda s: (len(s), s))),
            "clean": f"{sum(r['outliers_bounds'] == 0 and r['outliers_neighbors'] == 0 for r in group)}/{len(group)}",
            "most_bounds": max(r["outliers_bounds"] for r in group),
            "most_neighbors": max(r["outliers_neighbors"] for r in group),
        }
        for (strategy, value), group in groups.items()
    ]


SUMMARY_COLUMNS = (
    ("strategy", "strategy", str),
    ("n_chunks", "n_chunks", str),
    ("used", "n_chunks_used", str),
    ("clean seeds", "clean", str),
    ("most outliers(bounds)", "most_bounds", str),
    ("most outliers(neighbors)", "most_neighbors", str),
)


# -------------------------------------------------------------------------------------------------- bench
def run_bench(
    dataset: str | None = None,
    n_samples: int | None = None,
    strategies: list[str] | None = None,
    n_chunks: int | str = "auto",
    random_state: int = 0,
    device: str = "cpu",
    n_epochs: int | None = None,
    init: str = "spectral",
    repeat: int = 1,
    progress: bool = True,
    n_neighbors: int = 15,
    label_column: str | None = None,
) -> list[dict]:
    """Time each strategy's layout of one graph, from one initial layout; one row per strategy.

    ms_per_epoch is the mean epoch of full runs (not the median: on the GPU the schedule is computed for 8 epochs
    at a time, so most epochs carry none of it), edges_per_s the active edges over that time, x_hogwild the ratio to
    hogwild's ms_per_epoch (None without a hogwild run), setup_s the optimizer's construction and one warm-up
    epoch, which compiles its kernels (Numba's, or CUDA's) outside the timed runs. With ``repeat`` >= 2 each
    strategy runs that many times from the start, ``repeats`` says whether every run gave the same bytes, and the
    times cover all runs.
    """
    repeat = check_int("repeat", repeat, 1)
    device = resolve_device(device)  # before any data is loaded, so that a missing GPU is said first
    _, _, graph = _data_and_graph(
        dataset, n_samples, random_state, label_column, n_neighbors, n_epochs, device, progress
    )
    strategies = list(strategies or BENCH_STRATEGIES[device])
    _check_chunks([n_chunks], graph)
    start = _start_layout(graph, init, random_state, device)
    epochs = graph.n_epochs if n_epochs is None else n_epochs
    with tqdm(total=len(strategies) * repeat * epochs, desc="bench", unit="epoch", disable=not progress) as bar:
        rows = []
        for strategy in strategies:
            bar.set_postfix_str(strategy)
            rows.append(
                _time_strategy(graph, strategy, n_chunks, random_state, start, n_epochs, device, repeat, bar.update)
            )
    hogwild = next((r["ms_per_epoch"] for r in rows if r["strategy"] == "hogwild"), None)
    for r in rows:
        r["x_hogwild"] = None if hogwild is None else r["ms_per_epoch"] / hogwild
    return rows


def _time_strategy(
    graph,
    strategy: str,
    n_chunks: int | str,
    seed: int,
    start: Any,
    n_epochs: int | None,
    device: str,
    repeat: int,
    tick: Callable[[], Any],
) -> dict:
    """One strategy's bench row (see :func:`run_bench`); ``tick()`` after each timed epoch."""
    began = time.perf_counter()
    opt = LayoutOptimizer(
        graph, strategy=strategy, n_chunks=n_chunks, random_state=seed, init=start, n_epochs=n_epochs, device=device
    )
    opt.step()  # the warm-up: compiles
    setup = time.perf_counter() - began
    seconds, active, prints = [], [], []
    for _ in range(repeat):
        opt.reset()
        for record in opt.epochs():
            seconds.append(record.seconds)
            active.append(record.active_edges)
            tick()
        prints.append(metrics.fingerprint(opt.embedding))
    total = float(np.sum(seconds))
    return {
        "strategy": strategy,
        "n_chunks": opt.n_chunks if strategy == "chunked" else "-",
        "setup_s": setup,
        "ms_per_epoch": 1e3 * total / len(seconds),
        "edges_per_s": sum(active) / total,
        "fingerprint": prints[0],
        "repeats": None if repeat == 1 else len(set(prints)) == 1,
    }


def _repeats_text(row: dict) -> str:
    if row["repeats"] is None:
        return "-"
    if row["strategy"] not in REPRODUCIBLE:
        return "same bytes (not promised)" if row["repeats"] else "differ (racy, as expected)"
    return "same bytes" if row["repeats"] else "DIFFER"


BENCH_COLUMNS = (
    ("strategy", "strategy", str),
    ("n_chunks", "n_chunks", str),
    ("ms/epoch", "ms_per_epoch", "{:.3f}".format),
    ("M active edges/s", "edges_per_s", lambda v: f"{v / 1e6:.1f}"),
    ("x hogwild", "x_hogwild", lambda v: "-" if v is None else f"{v:.2f}"),
    ("set-up s", "setup_s", "{:.2f}".format),
    ("fingerprint", "fingerprint", str),
)


def bench_table(rows: list[dict]) -> str:
    """The bench's rows as a table, with a "repeats" column when the strategies ran more than once."""
    columns = BENCH_COLUMNS
    if rows and rows[0]["repeats"] is not None:
        columns += (("repeats", "repeats_text", str),)
    return format_table([dict(r, repeats_text=_repeats_text(r)) for r in rows], columns)


# --------------------------------------------------------------------------------------------------- main
def _common_options() -> argparse.ArgumentParser:
    """The options every command takes: the data, its graph, the layouts' length and start, the device."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dataset", default=None, help="dataset name or file path (default: the kit's default)")
    common.add_argument(
        "--label-column",
        default=None,
        metavar="NAME",
        help="the column of a CSV/Parquet file (or array of an .npz) that holds the classes "
        "(default: one named label, labels, target or class, in any case)",
    )
    common.add_argument(
        "--n-samples",
        type=int,
        default=None,
        help="points to make (synthetic datasets) or keep (a subsample of real data)",
    )
    common.add_argument("--n-neighbors", type=int, default=15, help="neighbours per point, itself included")
    common.add_argument("--n-epochs", type=int, default=None, help="default: 500 up to 10,000 points, else 200")
    common.add_argument("--init", default="spectral", choices=["spectral", "random"])
    common.add_argument("--device", default="cpu", choices=["cpu", "gpu", "auto"])
    return common


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="umapviz", description="See how UMAP's layout optimizer behaves.")
    sub = parser.add_subparsers(dest="command", required=True)
    common = [_common_options()]
    reference = argparse.ArgumentParser(add_help=False)
    reference.add_argument(
        "--reference",
        default=None,
        choices=REFERENCES,
        help="the layout outliers are counted against (default: sequential on the CPU, hogwild "
        "on the GPU, where sequential runs on one thread)",
    )
    demo = sub.add_parser(
        "demo", parents=[*common, reference], help="compare strategies on a dataset and print a table"
    )
    demo.add_argument(
        "--n-chunks",
        type=_parse_chunks,
        default=list(DEFAULT_CHUNKS),
        help="comma-separated n_chunks values for the chunked runs (ints, auto, shipped, degree)",
    )
    demo.add_argument("--random-state", type=int, default=0)
    demo.add_argument("--out", default=None, help="folder for figures (PNG side by side)")

    compare = sub.add_parser(
        "compare",
        parents=[*common, reference],
        help="chunked runs for several n_chunks and layout seeds: which are clean on every seed",
    )
    compare.add_argument(
        "--n-chunks",
        type=_parse_chunks,
        default=list(COMPARE_CHUNKS),
        help="comma-separated n_chunks values (ints, auto, shipped, degree; 1 is buffered)",
    )
    compare.add_argument(
        "--seeds", type=_parse_seeds, default=list(COMPARE_SEEDS), help="comma-separated layout seeds (default 0,1,2)"
    )
    compare.add_argument("--random-state", type=int, default=0, help="seed of the data and graph")
    compare.add_argument("--out", default=None, help="folder for the figure (compare.png, a row per seed)")

    bench = sub.add_parser(
        "bench", parents=common, help="time per epoch of each strategy on this machine, against hogwild"
    )
    bench.add_argument(
        "--strategies",
        type=_parse_strategies,
        default=None,
        help="comma-separated strategies (default: all; on the GPU all but the one-thread sequential)",
    )
    bench.add_argument(
        "--n-chunks",
        type=_n_chunks,
        default="auto",
        help="the chunked run's n_chunks (an int, auto, shipped or degree)",
    )
    bench.add_argument("--random-state", type=int, default=0)
    bench.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs of each strategy; 2 or more also checks that the runs repeat their bytes",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """The ``umapviz`` command: 0 on success, 2 for bad input (said on stderr), 1 if a bench found a
    reproducible strategy that did not repeat its bytes, 130 after a Ctrl-C."""
    args = _parser().parse_args(argv)
    options = {k: v for k, v in vars(args).items() if k != "command"}
    run = {"demo": run_demo, "compare": run_compare, "bench": run_bench}[args.command]
    if args.command != "bench":  # the data's description first: the runs take a while
        options["announce"] = lambda text: print(text + "\n", flush=True)
    try:
        rows = run(**options)
    except (ValueError, TypeError, RuntimeError, OSError, ImportError) as exc:  # OSError: an unwritable folder
        print(f"umapviz {args.command}: error: {_name_flags(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: a line, not a traceback from deep inside a kernel loop
        print(f"umapviz {args.command}: interrupted", file=sys.stderr)
        return 130
    if args.command == "demo":
        print(format_table(rows))
        print()
        print(explain_columns(DEMO_COLUMNS, args.dataset))
    elif args.command == "compare":
        print(format_table(rows, COMPARE_COLUMNS))
        print()
        print(format_table(compare_summary(rows), SUMMARY_COLUMNS))
        print()
        print(explain_columns(COMPARE_COLUMNS + SUMMARY_COLUMNS[2:]))
    else:
        print(bench_table(rows))
        broken = [r["strategy"] for r in rows if r["repeats"] is False and r["strategy"] in REPRODUCIBLE]
        if broken:
            print(
                f"umapviz bench: {', '.join(broken)} did not repeat its bytes, which it promises: please "
                "report it with the command and this table.",
                file=sys.stderr,
            )
            return 1
    if getattr(args, "out", None):
        print(f"figures written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
