"""Steps every command shares: the figures' folder, the data and its graph, the device and the reference
strategy, the start layout, and a series of full runs with their outlier counts."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import datasets, metrics
from .._backend import resolve_device
from ..graph import build_graph
from ..graph.start import spectral_init
from ..optimize import LayoutOptimizer
from ..optimize.chunks import resolve_n_chunks
from ..optimize.optimizer import LIVE_STRATEGIES

# The layouts outliers are counted against: the strategies that read the live embedding. The GPU's sequential
# strategy is one thread (for tests and small graphs): named, it runs; by default, not.
REFERENCES = LIVE_STRATEGIES


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
        peak = PeakOutliers(graph)
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


class PeakOutliers:
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
