"""What the commands print: the data's description above a table, the tables themselves, what each column
means, and the figures' titles and caption."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import datasets, metrics
from ..metrics import BOUNDS_N_STD, NEIGHBOR_FACTOR

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
