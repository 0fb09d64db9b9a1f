"""``umapviz bench``: each strategy's time per epoch on this machine, its ratio to hogwild, and whether the
reproducible strategies repeat their bytes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from .. import metrics
from .._backend import resolve_device
from .._validation import check_int
from ..optimize import LayoutOptimizer
from ..optimize.optimizer import REPRODUCIBLE, STRATEGIES
from .steps import _check_chunks, _data_and_graph, _start_layout
from .tables import format_table

# Every strategy, hogwild first (the ratio's baseline); on the GPU all but sequential, which runs on one thread.
BENCH_STRATEGIES = {
    "cpu": ("hogwild", *(s for s in STRATEGIES if s != "hogwild")),
    "gpu": ("hogwild", *(s for s in STRATEGIES if s not in ("hogwild", "sequential"))),
}


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
