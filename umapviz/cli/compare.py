"""``umapviz compare``: chunked runs for several n_chunks and layout seeds, each against its seed's reference
layout, and which n_chunks are clean on every seed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from .steps import (
    _check_chunks,
    _data_and_graph,
    _device_and_reference,
    _figures_folder,
    _run_series,
    _start_layout,
    _titles,
)
from .tables import DEMO_COLUMNS, FIGURE_CAPTION, _figure_title, describe_data

COMPARE_CHUNKS: tuple[int | str, ...] = (1, 4, 16, "auto")
COMPARE_SEEDS: tuple[int, ...] = (0, 1, 2)


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
                from ..render import side_by_side  # noqa: PLC0415 - plotting only when asked for

                titles = _titles(seed_rows, f", seed {seed}")
                figure_rows.append(side_by_side(embeddings, titles=titles, labels=labels, outliers=masks))
    if out is not None:
        from ..render import add_title_and_caption, save_png  # noqa: PLC0415 - plotting only when asked for

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
