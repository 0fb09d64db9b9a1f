"""Is a chunked layout clean in every epoch, not just the last? Per-epoch outlier peaks against n_chunks.

For each graph (data seed 0, ``build_graph`` defaults, from the graph cache) and layout seed, from one spectral
start, ``sequential`` runs first (the baseline: what the reference itself shows in each epoch), then ``chunked``
at each n_chunks. After every epoch two counts are taken:

- ``neighbors``: ``metrics.outliers(method="neighbors")``, raw, as the CLI demo's peak(neighbors) column counts it;
- ``bounds``: ``metrics.outliers(method="bounds")`` against the sequential layout *of the same epoch* (the final
  layout is narrower than the early ones, so a final reference would flag the early epochs of every run).

A run's record keeps both counts of every epoch, their peaks from epoch 2 on (and the first epoch with it), the
number of epochs with a count above the sequential baseline's count in that epoch, the last such epoch, and the
busiest vertex's edges per chunk (``inspect.update_steps``: its edges in the largest chunk when every edge is
active). Records are appended to ``--out`` (one JSON line per run, keyed by graph, seed and n_chunks; a run
already there is skipped), so an interrupted study resumes.

    NUMBA_NUM_THREADS=1 nice -n 10 .venv/bin/python bench/experiments/chunk_epochs.py \\
        --graphs clusters "mixture 20k" "gaussian 20k" "clusters zipf1" --seeds 0 1 2 --n-chunks 5 6 8 12 16
    .venv/bin/python bench/experiments/chunk_epochs.py --table   # the summary of bench/chunk_study/epochs.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from umapviz import datasets, metrics
from umapviz.graph import build_graph
from umapviz.graph.start import spectral_init
from umapviz.optimize import LayoutOptimizer
from umapviz.optimize.chunks import resolve_n_chunks
from umapviz.probe import update_steps

OUT = Path(__file__).resolve().parents[1] / "chunk_study" / "epochs.jsonl"
GRAPHS = {
    "clusters": lambda: datasets.load("clusters", random_state=0),
    "clusters zipf1": lambda: datasets.gaussian_clusters(
        20_000, np.random.default_rng(0), centre_scale=1.0, size_exponent=1.0
    ),
    "mixture 20k": lambda: datasets.load("mixture", n_samples=20_000, random_state=0),
    "gaussian 20k": lambda: datasets.load("gaussian", n_samples=20_000, random_state=0),
    "mixture 50k": lambda: datasets.load("mixture", n_samples=50_000, random_state=0),
    "gaussian 50k": lambda: datasets.load("gaussian", n_samples=50_000, random_state=0),
}


def counts(graph, emb: np.ndarray, reference: np.ndarray) -> tuple[int, int]:
    """(neighbors, bounds) outliers of one epoch's layout, bounds against the reference of that epoch."""
    return (
        int(metrics.outliers(emb, graph, method="neighbors").sum()),
        int(metrics.outliers(emb, method="bounds", reference=reference).sum()),
    )


def run(
    graph,
    strategy: str,
    n_chunks: int,
    seed: int,
    start: np.ndarray,
    references: list[np.ndarray] | None,
    n_epochs: int | None,
) -> tuple[list[tuple[int, int]], list[np.ndarray], float]:
    """Per-epoch (neighbors, bounds) counts of one layout, its per-epoch layouts (sequential only) and s/epoch."""
    opt = LayoutOptimizer(graph, strategy=strategy, n_chunks=n_chunks, random_state=seed, init=start)
    last = opt.n_epochs if n_epochs is None else min(n_epochs, opt.n_epochs)
    per_epoch, layouts, seconds = [], [], 0.0
    while opt.epoch < last:
        began = time.perf_counter()
        opt.step()
        seconds += time.perf_counter() - began
        emb = opt.embedding
        if references is None:
            layouts.append(emb)
            per_epoch.append(counts(graph, emb, emb))
        else:
            per_epoch.append(counts(graph, emb, references[len(per_epoch)]))
    return per_epoch, layouts, seconds / max(last, 1)


def summary(per_epoch: list[tuple[int, int]], baseline: list[tuple[int, int]]) -> dict:
    """Per count: the counts of every epoch, the peak from epoch 2 on (epoch 1 moves every run from the same
    start, whose far points some counts flag) and its first epoch, and the epochs above the baseline's count."""
    out = {}
    for i, name in enumerate(("neighbors", "bounds")):
        values = np.array([c[i] for c in per_epoch])
        base = np.array([c[i] for c in baseline])
        above = np.flatnonzero(values > base) + 1
        later = values[1:]
        out[name] = values.tolist()
        out[f"peak_{name}"] = int(later.max(initial=0))
        out[f"peak_{name}_epoch"] = int(later.argmax()) + 2 if later.size and later.max() > 0 else None
        out[f"epochs_above_{name}"] = int(above.size)
        out[f"last_above_{name}"] = int(above[-1]) if above.size else None
    return out


def study(name: str, seeds: list[int], n_chunks: list[int | str], n_epochs: int | None, out: Path) -> None:
    """Runs of one graph, appended to ``out``."""
    done = set()
    if out.exists():
        rows = map(json.loads, out.read_text().splitlines())
        done = {(r["graph"], r["seed"], r["n_chunks"], r["epochs"]) for r in rows}
    X, _ = GRAPHS[name]()
    graph = build_graph(X, random_state=0, progress=False)
    busiest = int(np.argmax(graph.degree))
    picks = [resolve_n_chunks(c if c == "auto" else int(c), graph) for c in n_chunks]
    for seed in seeds:
        start = spectral_init(graph, 2, seed)
        baseline, references, seq_s = run(graph, "sequential", 1, seed, start, None, n_epochs)
        epochs = len(baseline)
        common = {
            "graph": name,
            "n": graph.n_vertices,
            "nnz": graph.nnz,
            "max_degree": graph.max_degree,
            "seed": seed,
            "epochs": epochs,
        }
        if (name, seed, "sequential", epochs) not in done:
            row = {
                **common,
                "n_chunks": "sequential",
                "edges_per_chunk": None,
                **summary(baseline, baseline),
                "s_per_epoch": seq_s,
            }
            with out.open("a") as f:
                f.write(json.dumps(row) + "\n")
        for n in picks:
            if (name, seed, n, epochs) in done:
                continue
            per_epoch, _, s = run(graph, "chunked", n, seed, start, references, n_epochs)
            steps = update_steps(graph, busiest, "chunked", n, seed)[1]
            row = {
                **common,
                "n_chunks": n,
                "edges_per_chunk": int(steps.max(initial=0)),
                "degree_per_chunk": math.ceil(graph.max_degree / n),
                **summary(per_epoch, baseline),
                "s_per_epoch": s,
            }
            with out.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(name, seed, n, {k: v for k, v in row.items() if k.startswith(("peak", "epochs_above"))}, flush=True)


def table(out: Path) -> None:
    """A markdown summary: per graph and n_chunks, each seed's peaks and the epochs above the baseline."""
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    print(
        "| graph (max degree) | n_chunks | edges per chunk: degree / n_chunks (largest chunk) | peak neighbours, "
        "from epoch 2, per seed | peak bounds, per seed | epochs above sequential: neighbours / bounds |"
    )
    print("|---|---|---|---|---|---|")
    for graph, epochs in sorted({(r["graph"], r["epochs"]) for r in rows}):
        mine = [r for r in rows if r["graph"] == graph and r["epochs"] == epochs]
        counts = sorted({r["n_chunks"] for r in mine if r["n_chunks"] != "sequential"})
        for n in ["sequential", *counts]:
            runs = sorted((r for r in mine if r["n_chunks"] == n), key=lambda r: r["seed"])
            seeds = "/".join(str(r["seed"]) for r in runs)
            peaks = {
                k: "/".join(f"{r[f'peak_{k}']}" + (f" @{r[f'peak_{k}_epoch']}" if r[f"peak_{k}"] else "") for r in runs)
                for k in ("neighbors", "bounds")
            }
            if n == "sequential":
                load, above = "-", "-"
            else:
                largest = "/".join(str(r["edges_per_chunk"]) for r in runs)
                load = f"{runs[0]['max_degree'] / n:.0f} ({largest})"
                above = " / ".join(str(sum(r[f"epochs_above_{k}"] for r in runs)) for k in ("neighbors", "bounds"))
            print(
                f"| {graph} ({runs[0]['max_degree']}), seeds {seeds} | {n} | {load} | {peaks['neighbors']} | "
                f"{peaks['bounds']} | {above} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", nargs="+", default=["clusters"], help=f"any of {list(GRAPHS)}")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--n-chunks", nargs="+", default=["auto", "8", "12", "16"], help="counts, or auto (the rule)")
    parser.add_argument("--epochs", type=int, default=None, help="stop after this many epochs (default: all)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--table", action="store_true", help="only print the summary of --out")
    args = parser.parse_args()
    if args.table:
        table(args.out)
        return
    unknown = [g for g in args.graphs if g not in GRAPHS]
    if unknown:
        parser.error(f"unknown graph(s) {unknown}; choose from {list(GRAPHS)}")
    for name in args.graphs:
        study(name, args.seeds, args.n_chunks, args.epochs, args.out)


if __name__ == "__main__":
    main()
