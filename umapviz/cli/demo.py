"""``umapviz demo``: the reference, buffered and chunked runs of one dataset, their outliers and fingerprints."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from .. import metrics
from .steps import (
    _check_chunks,
    _data_and_graph,
    _device_and_reference,
    _figures_folder,
    _run_series,
    _start_layout,
    _titles,
)
from .tables import FIGURE_CAPTION, _figure_title, describe_data

DEFAULT_CHUNKS: tuple[int | str, ...] = (1, 4, 16, "auto", "degree")


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
        from ..render import save_png, side_by_side  # noqa: PLC0415 - plotting only when asked for

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
