"""Which dataset should the Explorer open with? Candidates x layout seeds, played epoch by epoch as the Explorer does.

A default picture teaches when (1) its colours show structure (labelled clusters, trustworthiness >= 0.9 of the
final layout), (2) ``buffered`` flings points visibly away from their own colour soon after the Explorer starts
playing (within 60 s on the 2-core CPU, graph cached), and (3) ``chunked`` with ``n_chunks="auto"`` flings none.

For each candidate (data seed 0, as the Explorer loads it) and each layout seed, from the spectral start (timed:
the Explorer computes it before the first frame), ``buffered`` and ``chunked`` (``--n-chunks``, "auto" by default)
run one epoch at a time, as the Explorer plays them. After every epoch the points it flung are counted: flagged
by ``metrics.outliers`` "neighbors" and farther from the layout's median than twice the farthest point of the
``sequential`` layout of the same graph and start (see ``play``). After the last epoch the three measures of the
CLI demo are counted as it counts them: "neighbors", "radius" and "bounds" (against that sequential layout).
Reported per run: trustworthiness (k = 5, as the demo) of the final layout; the first epoch with a flung point and
the seconds from the start of the spectral init to the end of that epoch (layout time only: the measuring is not
counted; the graph comes from the cache); the most points flung in any one epoch and the last epoch with one;
the farthest any point went, over the reference's farthest; the final counts; seconds per epoch.

    nice -n 10 .venv/bin/python bench/default_dataset.py --candidates all --seeds 0 1 2
    nice -n 10 .venv/bin/python bench/default_dataset.py --candidates clusters --n-chunks 8 12 16 --no-buffered
    .venv/bin/python bench/default_dataset.py --candidates clusters --figure bench/default_dataset.png
    .venv/bin/python bench/default_dataset.py --candidates clusters --who

Graphs come from the graph cache (UMAPVIZ_CACHE_DIR) after the first build; the graph seconds reported are those
of this invocation (a cache hit takes a fraction of a second).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np
from tqdm.auto import tqdm

from umapviz import datasets, metrics
from umapviz.graph import build_graph
from umapviz.graph.start import spectral_init
from umapviz.optimize import LayoutOptimizer

TRUST_K = 5  # as the CLI demo


@dataclass(frozen=True)
class Candidate:
    """A dataset to try.

    Parameters
    ----------
    name : str
        Its name in the table and on the command line.
    load : callable
        () -> (X, labels) at data seed 0.
    """

    name: str
    load: Callable[[], tuple[np.ndarray, np.ndarray | None]]


def _builtin(name: str, n: int | None = None) -> Candidate:
    label = name if n is None else f"{name} {n // 1000}k"
    return Candidate(label, lambda: datasets.load(name, n_samples=n, random_state=0))


def _clusters(label: str, n: int, **params) -> Candidate:
    return Candidate(label, lambda: datasets.gaussian_clusters(n, np.random.default_rng(0), **params))


CANDIDATES = {
    c.name: c
    for c in (
        _builtin("mnist"),  # 5,000 real images, 10 digits
        _builtin("clusters"),  # gaussian_clusters' defaults: 10 clusters, sizes ~ 1/sqrt(rank), centres 0.7
        _clusters("clusters zipf1", 20_000, centre_scale=1.0, size_exponent=1.0),  # sizes ~ 1/rank
        _clusters("clusters 512-d 12k", 12_000, n_clusters=12, n_features=512, centre_scale=0.6, size_exponent=0.7),
        _builtin("mixture", 20_000),  # 30 clusters, Zipf sizes, centres 0.5 apart per coordinate
        _builtin("gaussian"),  # the harshest case: 50,000 points, no classes
    )
}


def play(
    graph, strategy: str, n_chunks: int | str, seed: int, start: np.ndarray, init_s: float, reach: float
) -> tuple[dict, np.ndarray]:
    """Run one layout epoch by epoch from ``start``, counting after each epoch the points it flung.

    Flung, in an epoch: flagged by ``metrics.outliers`` "neighbors" and farther from the layout's median than
    ``reach`` (twice the reference layout's farthest point, the bar of bench/CHUNK_STUDY.md). The spectral start
    alone has points flagged by "neighbors" and "radius" (it is compressed around a few far points), so those
    measures by themselves flag points in the first epochs of every strategy; the distance bar keeps the ones
    thrown out of the picture.

    Parameters
    ----------
    graph : FuzzyGraph
        The graph to lay out.
    strategy : str
        "buffered" or "chunked".
    n_chunks : int or str
        For chunked: a count or a rule ("auto").
    seed : int
        The layout seed.
    start : numpy.ndarray
        The spectral start of this seed, shared by every run.
    init_s : float
        Seconds the start took, counted in the seconds to the first flung point.
    reach : float
        Distance from the median beyond which a flagged point counts as flung.
    """
    opt = LayoutOptimizer(graph, strategy=strategy, n_chunks=n_chunks, random_state=seed, init=start)
    opt.step(2)  # compiles the epoch kernels (once per process and strategy): not counted in the seconds
    opt.reset()
    layout_s, first_epoch, first_s, last_epoch, most, farthest = 0.0, None, None, None, 0, 0.0
    while not opt.done:
        began = time.perf_counter()
        opt.step()
        layout_s += time.perf_counter() - began
        emb = opt.embedding
        radii = metrics.radii(emb)
        beyond = radii > reach  # cheap, and usually empty: then nothing is flung, whatever the neighbours say
        flung = int((metrics.outliers(emb, graph, method="neighbors") & beyond).sum()) if beyond.any() else 0
        farthest = max(farthest, float(radii.max()))
        if flung:
            most, last_epoch = max(most, flung), opt.epoch
            if first_epoch is None:
                first_epoch, first_s = opt.epoch, init_s + layout_s
    row = {
        "n_chunks": opt.n_chunks,
        "first_epoch": first_epoch,
        "first_s": first_s,
        "last_epoch": last_epoch,
        "most": most,
        "farthest": farthest / (reach / 2),
        "s_per_epoch": layout_s / opt.n_epochs,
    }
    return row, opt.embedding


def study(candidate: Candidate, seeds: list[int], runs: list[tuple[str, int | str]], bar) -> list[dict]:
    """One row per layout seed and run of a candidate (see ``play``), with trustworthiness and final outliers.

    Parameters
    ----------
    candidate : Candidate
        The dataset.
    seeds : list of int
        Layout seeds.
    runs : list of (str, int or str)
        (strategy, n_chunks) pairs.
    bar : tqdm
        Progress bar, advanced once per run.
    """
    X, labels = candidate.load()
    began = time.perf_counter()
    graph = build_graph(X, random_state=0, progress=False)
    graph_s = time.perf_counter() - began
    rows = []
    for seed in seeds:
        began = time.perf_counter()
        start = spectral_init(graph, 2, seed)
        init_s = time.perf_counter() - began
        reference = LayoutOptimizer(graph, strategy="sequential", random_state=seed, init=start)
        reference.run()
        reach = 2 * float(metrics.radii(reference.embedding).max())
        for strategy, n_chunks in runs:
            row, emb = play(graph, strategy, n_chunks, seed, start, init_s, reach)
            row.update(
                data=candidate.name,
                n=len(X),
                dim=X.shape[1],
                classes=0 if labels is None else len(np.unique(labels)),
                max_degree=graph.max_degree,
                graph_s=graph_s,
                seed=seed,
                strategy=strategy,
                init_s=init_s,
                trust=float(metrics.trustworthiness(X, emb, n_neighbors=TRUST_K)),
                final={
                    m: int(metrics.outliers(emb, graph, method=m, reference=reference.embedding).sum())
                    for m in ("neighbors", "radius", "bounds")
                },
            )
            rows.append(row)
            bar.update()
    return rows


def _fmt(value, spec: str = "") -> str:
    return "-" if value is None else format(value, spec)


def figure(candidate: Candidate, path: str, epoch: int = 4, seed: int = 0) -> None:
    """What a newcomer sees, as a PNG: ``buffered`` and ``chunked("auto")`` at ``epoch`` and at the end, coloured
    by class, the points flagged by "neighbors" marked.

    Parameters
    ----------
    candidate : Candidate
        The dataset.
    path : str
        The PNG to write.
    epoch : int
        The early epoch shown.
    seed : int
        The layout seed.
    """
    from umapviz.render import save_png, side_by_side  # noqa: PLC0415 - plotting only for the figure

    X, labels = candidate.load()
    graph = build_graph(X, random_state=0, progress=False)
    start = spectral_init(graph, 2, seed)
    layouts, titles = [], []
    for strategy in ("buffered", "chunked"):
        opt = LayoutOptimizer(graph, strategy=strategy, n_chunks="auto", random_state=seed, init=start)
        for target in (epoch, opt.n_epochs):
            opt.step(target - opt.epoch)
            layouts.append(opt.embedding)
            titles.append(f"{strategy}{'' if strategy == 'buffered' else ' auto'}, epoch {opt.epoch}")
    masks = [metrics.outliers(emb, graph, method="neighbors") for emb in layouts]
    save_png(side_by_side(layouts, titles, labels=labels, outliers=masks, panel_size=360), path)


def flung_degrees(candidate: Candidate, seeds: list[int], epochs: int = 80) -> None:
    """Who is flung: per seed and strategy, the distinct points flung in the first ``epochs`` epochs (as ``play``
    counts them), their graph degrees and degree ranks (0 = the busiest vertex), and their classes.

    Parameters
    ----------
    candidate : Candidate
        The dataset.
    seeds : list of int
        Layout seeds.
    epochs : int
        How many epochs to watch.
    """
    X, labels = candidate.load()
    graph = build_graph(X, random_state=0, progress=False)
    rank = np.empty(graph.n_vertices, dtype=np.int64)
    rank[np.argsort(-graph.degree, kind="stable")] = np.arange(graph.n_vertices)
    print(f"{candidate.name}: max degree {graph.max_degree}, 99th percentile {np.percentile(graph.degree, 99):.0f}")
    for seed in seeds:
        start = spectral_init(graph, 2, seed)
        reference = LayoutOptimizer(graph, strategy="sequential", random_state=seed, init=start)
        reference.run()
        reach = 2 * float(metrics.radii(reference.embedding).max())
        for strategy in ("buffered", "chunked"):
            opt = LayoutOptimizer(graph, strategy=strategy, n_chunks="auto", random_state=seed, init=start)
            flung = np.zeros(graph.n_vertices, dtype=bool)
            for _ in range(epochs):
                opt.step()
                emb = opt.embedding
                flung |= metrics.outliers(emb, graph, method="neighbors") & (metrics.radii(emb) > reach)
            who = np.flatnonzero(flung)
            if who.size == 0:
                print(f"seed {seed} {strategy}: none")
                continue
            classes = "" if labels is None else f", classes {np.bincount(labels[who]).tolist()}"
            print(
                f"seed {seed} {strategy} ({opt.n_chunks} chunks): {who.size} points, degree "
                f"{graph.degree[who].min()}-{graph.degree[who].max()} (median {np.median(graph.degree[who]):.0f}), "
                f"rank {rank[who].min()}-{rank[who].max()}{classes}"
            )


HEAD = (
    "| data | n | d | classes | max degree | graph s | seed | strategy | n_chunks | trust | first flung epoch | "
    "s to it | most flung in an epoch | last epoch with one | farthest / reference's | "
    "final outliers (neighbors / radius / bounds) | s/epoch |"
)


def table_row(r: dict) -> str:
    """One Markdown table row of a run (columns as HEAD).

    Parameters
    ----------
    r : dict
        A row from ``study``.
    """
    return (
        f"| {r['data']} | {r['n']:,d} | {r['dim']} | {r['classes']} | {r['max_degree']} | {r['graph_s']:.1f} | "
        f"{r['seed']} | {r['strategy']} | {r['n_chunks']} | {r['trust']:.3f} | {_fmt(r['first_epoch'])} | "
        f"{_fmt(r['first_s'], '.1f')} | {r['most']} | {_fmt(r['last_epoch'])} | {r['farthest']:.1f} | "
        f"{r['final']['neighbors']} / {r['final']['radius']} / {r['final']['bounds']} | {r['s_per_epoch']:.3f} |"
    )


def main() -> None:
    """The command line: the study table (default), the chunk sweep, the figure or who is flung."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", nargs="+", default=["all"], help=f"any of {list(CANDIDATES)}, or all")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="layout seeds")
    parser.add_argument(
        "--n-chunks",
        nargs="+",
        default=["auto"],
        help="n_chunks of the chunked runs (ints or rule names); after a buffered run, unless:",
    )
    parser.add_argument("--no-buffered", action="store_true", help="chunked runs only")
    parser.add_argument("--figure", default=None, help="only draw the first candidate's panels into this PNG")
    parser.add_argument("--who", action="store_true", help="only list who is flung in the first 80 epochs")
    args = parser.parse_args()
    names = list(CANDIDATES) if args.candidates == ["all"] else args.candidates
    unknown = [n for n in names if n not in CANDIDATES]
    if unknown:
        parser.error(f"unknown candidate(s) {unknown}; choose from {list(CANDIDATES)}")
    if args.who:
        for name in names:
            flung_degrees(CANDIDATES[name], args.seeds)
        return
    if args.figure:
        figure(CANDIDATES[names[0]], args.figure)
        return
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"- **Date**: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; **commit** {commit}")
    print(
        f"- **Machine**: {platform.node()}, {os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
        f"load average {os.getloadavg()[0]:.1f} at the start"
    )
    print(
        f"- **Command**: `.venv/bin/python bench/default_dataset.py --candidates {' '.join(map(repr, names))} "
        f"--seeds {' '.join(map(str, args.seeds))} --n-chunks {' '.join(args.n_chunks)}"
        f"{' --no-buffered' if args.no_buffered else ''}`\n"
    )
    print(HEAD)
    print("|" + "---|" * (HEAD.count("|") - 1), flush=True)
    runs = [] if args.no_buffered else [("buffered", 1)]
    runs += [("chunked", int(c) if c.isdigit() else c) for c in args.n_chunks]
    with tqdm(total=len(names) * len(args.seeds) * len(runs), desc="runs") as bar:
        for name in names:
            for row in study(CANDIDATES[name], args.seeds, runs, bar):
                print(table_row(row), flush=True)  # each candidate's rows as soon as its runs are done
    print(f"\nFinished {datetime.now(timezone.utc):%H:%M} UTC, load average {os.getloadavg()[0]:.1f}.")


if __name__ == "__main__":
    main()
