"""How many chunks are enough? Outliers and seconds per epoch of the chunked strategy against n_chunks.

For each dataset, size and seed: build the graph (cached on disk on the CPU), lay it out with a reference
strategy (sequential by default) and with ``chunked`` at n_chunks = 1, 2, 4, ... up to past the shipped
rule, plus the exact pick of every named rule ("auto", "shipped", "degree"), all from the same init
(spectral by default: the outliers need its compressed start). Each run records the outliers after the
full run (``bounds`` against the reference of the same graph and seed, ``neighbors``, ``radius``), the
seconds per epoch, and the graph's degree statistics (max, p99, mean) and nnz.

Runs are cached one JSON line each in ``--out``, so an interrupted study resumes where it stopped; the
reference layouts are kept in ``--refs`` so the bounds of later runs need no re-run.
Summarise with ``bench/chunk_report.py``.

    # CPU grid (2 cores: keep it modest)
    .venv/bin/python bench/chunk_study.py --datasets gaussian mixture --sizes 10000 20000
    # GPU, large sizes (reference: hogwild, since sequential is single-threaded); stops starting runs after
    # --budget seconds, so the whole command stays within a time limit
    python bench/chunk_study.py --device gpu --datasets gaussian mixture --sizes 1000000 2000000 \
        --seeds 0 --budget 400 --out $OUT/chunk_study_gpu.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from umapviz import datasets, metrics
from umapviz._backend import to_host
from umapviz.graph import build_graph
from umapviz.graph.init import random_init, spectral_init
from umapviz.optimize import LayoutOptimizer
from umapviz.optimize.chunks import EDGES_PER_CHUNK_SHIPPED, resolve_n_chunks
from umapviz.optimize.rng import resolve_seed

DEFAULT_DATASETS = ["gaussian", "mixture", "text_like", "blobs", "digits", "mnist"]
RULE_NAMES = ("auto", "shipped", "degree")
# Past the shipped rule: the ladder of powers of two runs at least up to the first one above
# max(LADDER_FLOOR, ceil(nnz / 1e5)), then on while the last two rungs were not both clean.
LADDER_FLOOR = 4
REAL_SETS = {"digits", "mnist"}  # fixed sets: a size above theirs means "all of it"


# ---------------------------------------------------------------------------------------------------
# The results file: one JSON object per line, appended whole; a torn last line is skipped on read.
# ---------------------------------------------------------------------------------------------------


def run_key(data: str, n: int, seed: int, init: str, device: str, run: str, n_neighbors: int) -> str:
    return f"{data}|{n}|{seed}|{init}|{device}|k{n_neighbors}|{run}"


def read_results(path: Path) -> dict[str, dict]:
    """Records by key; lines that do not parse (an interrupted write) are reported and skipped."""
    records: dict[str, dict] = {}
    if not path.exists():
        return records
    with open(path) as fh:
        for number, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
                records[record["key"]] = record
            except (json.JSONDecodeError, KeyError, TypeError):
                print(f"{path}:{number}: skipping a damaged line (an interrupted write?)", file=sys.stderr)
    return records


def append_result(path: Path, record: dict) -> None:
    """Append one record as one line in a single write, then fsync, so a crash loses at most that line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, default=float) + "\n"
    with open(path, "a+b") as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell() > 0:  # a torn last line without its newline must not swallow this record
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                line = "\n" + line
        fh.write(line.encode())
        fh.flush()
        os.fsync(fh.fileno())


def save_array(path: Path, array: np.ndarray) -> None:
    """Write an .npy atomically (temp file in the same folder, then os.replace)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npy.tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.save(fh, array)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; results are for everyone
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_array(path: Path, shape: tuple[int, ...]) -> np.ndarray | None:
    """The saved array if it exists, has the expected shape and is finite-or-not but readable; else None."""
    try:
        array = np.load(path)
    except (OSError, ValueError, EOFError):
        return None
    return array if array.shape == shape else None


# ---------------------------------------------------------------------------------------------------
# Graphs and their statistics.
# ---------------------------------------------------------------------------------------------------


def load_graph(name: str, n: int, seed: int, device: str, n_neighbors: int):
    """(graph, seconds to build or load it). The data of each seed differs (generated with that seed)."""
    X, _ = datasets.load(name, n_samples=n, random_state=seed)
    start = time.perf_counter()
    if device == "gpu":
        try:
            from umapviz.graph.knn_gpu import build_graph_gpu  # noqa: PLC0415 - only on a GPU machine
        except ImportError:
            build_graph_gpu = None
        if build_graph_gpu is not None:
            graph = build_graph_gpu(X, n_neighbors=n_neighbors)
            return graph, time.perf_counter() - start
    graph = build_graph(X, n_neighbors=n_neighbors, random_state=seed, progress=False)
    return graph, time.perf_counter() - start


def graph_stats(graph) -> dict:
    """Degree statistics, the expected active edges per epoch of the busiest head, and every rule's pick."""
    degree = graph.degree
    # An edge is due about once every epochs_per_sample epochs, so sum(1 / eps) over a vertex's edges is
    # how many of them are active in a typical epoch.
    rate = np.bincount(graph.head, weights=1.0 / graph.epochs_per_sample, minlength=graph.n_vertices)
    stats = {
        "n_vertices": graph.n_vertices,
        "nnz": graph.nnz,
        "n_epochs": graph.n_epochs,
        "max_degree": int(degree.max()),
        "p99_degree": float(np.percentile(degree, 99)),
        "mean_degree": float(degree.mean()),
        "max_rate": float(rate.max()),
        "nnz_chunks": math.ceil(graph.nnz / EDGES_PER_CHUNK_SHIPPED),
    }
    for rule in RULE_NAMES:
        stats[f"rule_{rule}"] = resolve_n_chunks(rule, graph)
    return stats


def ladder_top(stats: dict) -> int:
    """The ladder runs at least up to this power of two: the first one above the shipped nnz-based pick."""
    target = max(LADDER_FLOOR, stats["nnz_chunks"])
    return 1 << (int(target).bit_length())  # strictly above target


# ---------------------------------------------------------------------------------------------------
# One layout run.
# ---------------------------------------------------------------------------------------------------


def initial_layout(graph, init: str, seed: int) -> np.ndarray:
    """The init every run of one graph and seed starts from, computed once: the spectral eigen-solve costs
    seconds (minutes at millions of points) and is the same for every run. Same bytes as init="spectral"."""
    if init == "spectral":
        return spectral_init(graph, 2, resolve_seed(seed))
    return random_init(graph.n_vertices, 2, resolve_seed(seed))


def layout(graph, strategy: str, n_chunks: int, seed: int, init: np.ndarray, device: str) -> tuple[np.ndarray, dict]:
    """Run to the end; returns the embedding (on its device) and timings (total and median seconds per epoch)."""
    opt = LayoutOptimizer(graph, strategy=strategy, n_chunks=n_chunks, random_state=seed, init=init, device=device)
    epoch_seconds = []
    start = time.perf_counter()
    for record in opt.epochs():
        epoch_seconds.append(record.seconds)
    total = time.perf_counter() - start
    timing = {
        "seconds": total,
        "seconds_per_epoch": total / opt.n_epochs,
        "median_epoch_seconds": float(np.median(epoch_seconds)),
        "n_chunks": int(opt.n_chunks) if strategy in ("chunked", "buffered") else None,
    }
    return opt.device_embedding, timing


def measure(Y_device, graph, reference: np.ndarray) -> dict:
    """Outlier counts of one layout (on its own device) against the reference layout."""
    summary = metrics.outlier_summary(Y_device, graph, reference=_like(reference, Y_device))
    return {k: summary[k] for k in ("bounds", "neighbors", "radius", "max_radius", "median_radius")}


def _like(array: np.ndarray, other):
    """`array` on the same device as `other` (the metrics want both on one device)."""
    if type(other).__module__.startswith("cupy"):
        import cupy  # noqa: PLC0415 - only when the layouts live on a GPU

        return cupy.asarray(array)
    return array


# ---------------------------------------------------------------------------------------------------
# The study.
# ---------------------------------------------------------------------------------------------------


class Study:
    """Walks the grid, skipping runs already in the results file, and stops starting runs past a budget."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out = Path(args.out)
        self.refs = Path(args.refs)
        self.done = read_results(self.out)
        self.deadline = time.monotonic() + args.budget if args.budget else math.inf
        self.ran = 0

    def out_of_time(self) -> bool:
        return time.monotonic() > self.deadline

    def sizes_for(self, name: str) -> list[int]:
        if name not in REAL_SETS:
            return list(self.args.sizes)
        full = datasets.load(name, n_samples=None, random_state=0)[0].shape[0]
        return sorted({min(n, full) for n in self.args.sizes})

    def reference_strategy(self, n: int) -> str:
        if self.args.reference != "auto":
            return self.args.reference
        # the GPU's sequential kernel is one thread: fine for tests, hopeless at a million points
        return "sequential" if self.args.device == "cpu" or n <= 20_000 else "hogwild"

    def run_all(self) -> None:
        # smallest graphs first, so a budget cuts the most expensive ones
        cells = sorted(((name, n, seed) for name in self.args.datasets for n in self.sizes_for(name)
                        for seed in self.args.seeds), key=lambda cell: cell[1])
        bar = tqdm(cells, desc="chunk study", unit="graph")
        for name, n, seed in bar:
            if self.out_of_time():
                print(f"budget of {self.args.budget} s spent: stopping (rerun to resume)", file=sys.stderr)
                break
            bar.set_postfix_str(f"{name} n={n} seed={seed}")
            self.run_cell(name, n, seed)
        bar.close()

    def key(self, name: str, n: int, seed: int, run: str) -> str:
        a = self.args
        return run_key(name, n, seed, a.init, a.device, run, a.n_neighbors)

    def run_cell(self, name: str, n: int, seed: int) -> None:
        """Reference, then the rules' picks, then the ladder for one graph."""
        a = self.args
        graph, graph_seconds = load_graph(name, n, seed, a.device, a.n_neighbors)
        stats = graph_stats(graph)
        tqdm.write(f"{name} n={n} seed={seed}: graph in {graph_seconds:.1f} s, nnz={stats['nnz']}, "
                   f"max degree {stats['max_degree']}, rules: auto {stats['rule_auto']}, "
                   f"shipped {stats['rule_shipped']}, degree {stats['rule_degree']}")
        self.init = None  # computed on the first run that needs it (a resumed cell may need none)
        self.init_seconds = None
        base = dict(data=name, n=n, seed=seed, init=a.init, device=a.device, n_neighbors=a.n_neighbors,
                    graph_seconds=graph_seconds, graph_fingerprint=graph.fingerprint, **stats)

        ref_strategy = self.reference_strategy(n)
        ref_path = self.refs / (self.key(name, n, seed, ref_strategy).replace("|", "_") + ".npy")
        reference = load_array(ref_path, (graph.n_vertices, 2))
        ref_key = self.key(name, n, seed, ref_strategy)
        if reference is None or ref_key not in self.done:
            Y, timing = layout(graph, ref_strategy, 1, seed, self.init_for(graph, seed), a.device)
            reference = np.asarray(to_host(Y))
            save_array(ref_path, reference)
            self.record(ref_key, base, dict(run=ref_strategy, strategy=ref_strategy, reference=ref_strategy,
                                            **timing, **measure(Y, graph, reference)))

        # The rules' picks first (they matter most when a budget cuts the study short), then the ladder in
        # ascending order (reusing a pick that equals a rung), then the degree rule's pick if still missing.
        top = min(ladder_top(stats), graph.nnz, a.max_chunks)
        ladder = [1 << i for i in range(a.max_chunks.bit_length()) if (1 << i) <= min(graph.nnz, a.max_chunks)]
        for n_chunks in sorted({stats["rule_auto"], stats["rule_shipped"]}):
            if self.out_of_time():
                return
            self.chunked(graph, base, reference, ref_strategy, n_chunks)
        clean_streak = 0
        for n_chunks in ladder:
            if n_chunks > top and clean_streak >= 2:
                break  # past the shipped rule and clean twice in a row: the ladder has said enough
            if self.out_of_time():
                return
            record = self.chunked(graph, base, reference, ref_strategy, n_chunks)
            clean_streak = 0 if record["bounds"] else clean_streak + 1
        if stats["rule_degree"] <= a.max_chunks and not self.out_of_time():
            self.chunked(graph, base, reference, ref_strategy, stats["rule_degree"])

    def init_for(self, graph, seed: int) -> np.ndarray:
        if self.init is None:
            start = time.perf_counter()
            self.init = initial_layout(graph, self.args.init, seed)
            self.init_seconds = time.perf_counter() - start
            tqdm.write(f"  {self.args.init} init in {self.init_seconds:.1f} s")
        return self.init

    def chunked(self, graph, base: dict, reference: np.ndarray, ref_strategy: str, n_chunks: int) -> dict:
        a = self.args
        key = self.key(base["data"], base["n"], base["seed"], f"chunked:{n_chunks}")
        if key in self.done:
            return self.done[key]
        Y, timing = layout(graph, "chunked", n_chunks, base["seed"], self.init_for(graph, base["seed"]), a.device)
        return self.record(key, base, dict(run=f"chunked:{n_chunks}", strategy="chunked", reference=ref_strategy,
                                           **timing, **measure(Y, graph, reference)))

    def record(self, key: str, base: dict, fields: dict) -> dict:
        record = dict(key=key, **base, init_seconds=self.init_seconds, **fields)
        append_result(self.out, record)
        self.done[key] = record
        self.ran += 1
        tqdm.write(f"{record['data']:>9} n={record['n']:<7} seed={record['seed']} {record['run']:<14} "
                   f"bounds={record['bounds']:<5} neighbors={record['neighbors']:<5} "
                   f"{record['seconds_per_epoch'] * 1e3:8.1f} ms/epoch")
        return record


def warm_up(device: str) -> None:
    """Compile (or load) the kernels on a tiny graph, so the first timed run does not pay for it."""
    X, _ = datasets.load("blobs", n_samples=200, random_state=0)
    graph = build_graph(X, random_state=0, cache=False, progress=False)
    for strategy in ("sequential", "hogwild", "chunked"):
        LayoutOptimizer(graph, strategy=strategy, n_chunks=2, random_state=0, n_epochs=2, device=device).run()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=DEFAULT_DATASETS, choices=sorted(datasets.names()))
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 20_000],
                        help="points per dataset (digits and mnist: at most their own size)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--init", default="spectral", choices=["spectral", "random"])
    parser.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    parser.add_argument("--reference", default="auto", choices=["auto", "sequential", "hogwild"],
                        help="layout the bounds are measured against (auto: sequential on the CPU, hogwild on "
                             "the GPU above 20k points)")
    parser.add_argument("--n-neighbors", type=int, default=15)
    parser.add_argument("--max-chunks", type=int, default=1024, help="no ladder rung or rule pick above this")
    parser.add_argument("--budget", type=float, default=0.0,
                        help="seconds after which no new run starts (0: no limit); rerun to resume")
    parser.add_argument("--out", default="bench/chunk_study/cpu.jsonl", help="results, one JSON line per run")
    parser.add_argument("--refs", default="bench/out/chunk_study_refs",
                        help="folder for the reference layouts (.npy), reused on resume")
    args = parser.parse_args(argv)
    if min(args.sizes) < 2 * args.n_neighbors:
        parser.error(f"--sizes must be at least {2 * args.n_neighbors} points for n_neighbors={args.n_neighbors}")
    if args.max_chunks < 1:
        parser.error("--max-chunks must be at least 1")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    np.seterr(all="ignore")
    print(f"chunk study on {platform.node()} ({args.device}), results in {args.out}", file=sys.stderr)
    warm_up(args.device)
    study = Study(args)
    study.run_all()
    print(f"{study.ran} new runs; {len(study.done)} in {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
