"""How many chunks are enough? Outliers and seconds per epoch of the chunked strategy against n_chunks.

For each dataset, size and seed: build the graph, lay it out with a reference strategy (sequential by
default) and with ``chunked`` at every named rule's pick ("auto", "shipped", "degree") and at n_chunks = 1, 2,
4, ... up to past the shipped rule, all from the same init (spectral by default: the outliers need its
compressed start). Each run records the outliers after the full run (``bounds`` against the reference of the
same graph and seed, ``neighbors``, ``radius``), the seconds per epoch, and the graph's degree statistics
(max, p99, mean) and nnz.

Order of the runs of one graph, most informative first (a --budget cuts the rest): the reference; the
"auto" and "shipped" picks; the ladder from 1 up until two rungs in a row are clean (where the outliers
vanish); the "degree" pick; then the rest of the ladder (up to past the shipped rule, and on while the last
two rungs were not both clean).

Runs are cached one JSON line each in ``--out``, so an interrupted study resumes where it stopped; the
reference and initial layouts are kept in ``--refs`` so later runs need no re-run.
Summarise with ``bench/chunk_report.py``.

Datasets: those of ``umapviz.datasets`` (their graphs as ``build_graph`` makes them: exact GPU kNN on the
GPU) and ``mixture_gpu``, the 384-d mixture of the GPU benches (bench/gpu_mixture.py, generated on the
device) whose graph is exact kNN within each cluster, which the clusters' distance makes exact kNN of all
points (checked on 256 sampled rows: ``knn_check`` in each record). That is what makes 5M points affordable.

    # CPU grid (2 cores: keep it modest)
    .venv/bin/python bench/chunk_study.py --datasets gaussian mixture --sizes 10000 20000
    # GPU, large graphs in a priority order (data:n:seed), spectral inits computed by 4 CPU processes while
    # the GPU builds or lays out other graphs; no new run starts after --budget seconds
    python bench/chunk_study.py --device gpu --cells mixture_gpu:5000000:0 gaussian:2000000:0 \
        --init-workers 4 --max-chunks 2048 --budget 400 --out $OUT/gpu.jsonl --refs /tmp/chunk_refs

On the GPU machine, ``bash bench/device_run.sh chunk_study`` runs the large graphs named in its $CELLS.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import multiprocessing
import os
import platform
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from gpu_mixture_graph import free_gpu_memory  # a sibling script (bench/ is on sys.path)
from gpu_mixture_graph import mixture_graph as build_mixture_graph
from tqdm.auto import tqdm

from umapviz import datasets, metrics
from umapviz._backend import to_host
from umapviz.graph import build_graph
from umapviz.graph.cache import load_graph as read_graph_file
from umapviz.graph.cache import save_graph as write_graph_file
from umapviz.graph.start import random_init, spectral_init
from umapviz.optimize import LayoutOptimizer
from umapviz.optimize.chunks import EDGES_PER_CHUNK_SHIPPED, resolve_n_chunks
from umapviz.optimize.rng import resolve_seed

DEFAULT_DATASETS = ["gaussian", "mixture", "text_like", "blobs", "digits", "mnist"]
STUDY_DATASETS = ("mixture_gpu",)  # made here (bench/gpu_mixture.py), not by umapviz.datasets
RULE_NAMES = ("auto", "shipped", "degree")
# Past the shipped rule: the ladder of powers of two runs at least up to the first one above
# max(LADDER_FLOOR, ceil(nnz / 1e5)), then on while the last two rungs were not both clean.
LADDER_FLOOR = 4
CLEAN_RUNGS = 2  # this many clean rungs in a row: the ladder has found where the outliers vanish
REAL_SETS = {"digits", "mnist"}  # fixed sets: a size above theirs means "all of it"
START = time.monotonic()


def log(message: str) -> None:
    """One progress line: wall-clock time and seconds since the study started."""
    tqdm.write(f"[{time.strftime('%H:%M:%S')} {time.monotonic() - START:6.0f}s] {message}")
    sys.stdout.flush()


def dataset_names() -> list[str]:
    return sorted(datasets.names()) + list(STUDY_DATASETS)


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


def load_graph(name: str, n: int, seed: int, device: str, n_neighbors: int) -> tuple[Any, float, dict]:
    """(graph, seconds to build it, how its kNN was made). The data of each seed differs (made with that seed)."""
    if name == "mixture_gpu":
        return mixture_graph(n, seed, device, n_neighbors)
    X, _ = datasets.load(name, n_samples=n, random_state=seed)
    start = time.perf_counter()
    if device == "gpu":
        try:
            from umapviz.graph.build_gpu import build_graph_gpu  # noqa: PLC0415 - only on a GPU machine
        except ImportError:
            build_graph_gpu = None
        if build_graph_gpu is not None:
            graph = build_graph_gpu(X, n_neighbors=n_neighbors)
            seconds = time.perf_counter() - start
            free_gpu_memory()
            return graph, seconds, {"knn": graph.params["knn"]}
    graph = build_graph(X, n_neighbors=n_neighbors, random_state=seed, progress=False)
    return graph, time.perf_counter() - start, {"knn": graph.params["knn"]}


def mixture_graph(n: int, seed: int, device: str, n_neighbors: int) -> tuple[Any, float, dict]:
    """The mixture of the GPU benches, made on the study's device, with exact kNN inside each cluster; the
    premise (no neighbour lies in another cluster) is checked on 256 sampled rows against brute force."""
    built = build_mixture_graph(n, seed, device, n_neighbors)
    if built.knn_check < 1.0:
        log(
            f"  warning: mixture_gpu n={n} seed={seed}: only {built.knn_check:.1%} of sampled rows have the kNN of "
            "all points (clusters too close for kNN within clusters)"
        )
    info = {"knn": built.graph.params["knn"], "knn_seconds": built.knn_seconds, "knn_check": built.knn_check}
    return built.graph, built.seconds, info


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


def init_job(graph_path: str, key: str, init: str, seed: int, out_path: str) -> float:
    """A worker process's job: read a graph written by the study, compute its initial layout, save it to
    `out_path`; returns the seconds the layout took. Deletes the graph file once read (it can be GBs)."""
    graph = read_graph_file(Path(graph_path), key)
    if graph is None:
        raise RuntimeError(f"the study's graph file {graph_path} is missing or damaged (see the warning above)")
    Path(graph_path).unlink(missing_ok=True)
    start = time.perf_counter()
    layout0 = initial_layout(graph, init, seed)
    seconds = time.perf_counter() - start
    save_array(Path(out_path), layout0)
    return seconds


def start_init_pool(workers: int):
    """A pool of `workers` fresh processes (spawned: the study's process holds a CUDA context, which a fork
    must not inherit) whose BLAS libraries share the CPU cores between them and this process."""
    threads = str(max(1, ((os.cpu_count() or 2) - 2) // workers))
    names = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update(dict.fromkeys(names, threads))  # read by the children's BLAS when they start
    try:
        # Workers ignore Ctrl-C / `timeout -s INT`: one killed while holding the pool's queue lock would hang
        # Pool.terminate(); this process stops them instead.
        return multiprocessing.get_context("spawn").Pool(workers, initializer=_ignore_sigint)  # starts them now
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def cache_edge_order() -> None:
    """Make LayoutOptimizer draw each seed's edge order once: it draws a permutation of all edges for every
    run, ~8 s on one core at 132M edges (5M points), where a layout takes 2-4 s on the GPU. Same seed and nnz,
    same permutation, so the last one is kept (read-only, so no engine can alter the shared array)."""
    from umapviz.optimize import optimizer  # noqa: PLC0415

    if getattr(optimizer.edge_order, "study_cache", False):
        return
    draw = optimizer.edge_order

    @functools.lru_cache(maxsize=1)
    def edge_order(seed: int, nnz: int) -> np.ndarray:
        perm = draw(seed, nnz)
        perm.setflags(write=False)
        return perm

    edge_order.study_cache = True
    optimizer.edge_order = edge_order


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


@dataclass
class Cell:
    """One graph (dataset, size, seed) of the study and where its runs stand."""

    name: str
    n: int
    seed: int
    graph: Any = None
    stats: dict = field(default_factory=dict)
    base: dict = field(default_factory=dict)  # the fields every record of this graph carries
    init: np.ndarray | None = None
    init_seconds: float | None = None
    init_path: Path | None = None
    init_pending: Any = None  # the worker's AsyncResult while the init is being computed elsewhere
    ref_strategy: str = ""
    reference: np.ndarray | None = None
    core: Iterator | None = None  # the runs that matter most, one per next()
    fill: Iterator | None = None  # the rest of the ladder
    rung: int = 0  # next ladder rung to run
    clean_streak: int = 0  # clean rungs in a row so far

    def __str__(self) -> str:
        return f"{self.name} n={self.n} seed={self.seed}"


class Study:
    """Walks the cells (graphs), skipping runs already in the results file, and stops starting runs past a
    budget. With init workers, a cell's spectral init is computed in another process while the GPU builds or
    lays out other cells; the cell whose init is ready and that comes first in the list runs next."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out = Path(args.out)
        self.refs = Path(args.refs)
        self.done = read_results(self.out)
        self.deadline = time.monotonic() + args.budget if args.budget else math.inf
        self.ran = 0
        self.pool = None

    def out_of_time(self) -> bool:
        return time.monotonic() > self.deadline

    def may_build(self) -> bool:
        """A new graph is worth building only if its init and first runs can still finish in the budget."""
        return self.deadline - time.monotonic() > self.args.build_margin

    def sizes_for(self, name: str) -> list[int]:
        if name not in REAL_SETS:
            return list(self.args.sizes)
        full = datasets.load(name, n_samples=None, random_state=0)[0].shape[0]
        return sorted({min(n, full) for n in self.args.sizes})

    def cells(self) -> list[Cell]:
        """--cells in their order, else the grid with the smallest graphs first (a budget cuts the largest)."""
        if self.args.cells:
            return [Cell(name, n, seed) for name, n, seed in self.args.cells]
        grid = [
            (name, n, seed) for name in self.args.datasets for n in self.sizes_for(name) for seed in self.args.seeds
        ]
        return [Cell(*cell) for cell in sorted(grid, key=lambda cell: cell[1])]

    def reference_strategy(self, n: int) -> str:
        if self.args.reference != "auto":
            return self.args.reference
        # the GPU's sequential kernel is one thread: fine for tests, hopeless at a million points
        return "sequential" if self.args.device == "cpu" or n <= 20_000 else "hogwild"

    def key(self, cell: Cell, run: str) -> str:
        a = self.args
        return run_key(cell.name, cell.n, cell.seed, a.init, a.device, run, a.n_neighbors)

    # -- scheduling ----------------------------------------------------------------------------------------
    def run_all(self) -> None:
        if self.args.init_workers and self.args.init == "spectral":
            self.pool = start_init_pool(self.args.init_workers)
            log(f"spectral inits in {self.args.init_workers} worker process(es)")
        try:
            self.schedule(self.cells())
        finally:
            if self.pool is not None:
                self.pool.terminate()  # inits still running are not needed any more
                self.pool.join()

    def schedule(self, todo: list[Cell]) -> None:
        """Until the budget is spent or nothing is left: the core runs of the first cell whose init is ready;
        else build the next graph (its init starts in a worker); else one more fill run; else wait."""
        bar = tqdm(total=len(todo), desc="chunk study", unit="graph", disable=None)
        active: list[Cell] = []
        waited = 0.0
        while True:
            if self.out_of_time():
                log(f"budget of {self.args.budget:g} s spent: stopping (rerun to resume)")
                break
            ready = next((c for c in active if c.core is not None and self.init_ready(c)), None)
            if ready is not None:
                self.advance(ready, "core", until_done=True)
                if self.pool is None:  # nothing to overlap with: finish the cell now
                    self.advance(ready, "fill", until_done=True)
            elif todo and self.may_build():
                cell = todo.pop(0)
                bar.update(1)
                bar.set_postfix_str(str(cell))
                if self.prepare(cell):
                    active.append(cell)
            else:
                filling = next((c for c in active if c.core is None and c.fill is not None), None)
                if filling is not None:
                    self.advance(filling, "fill")
                elif any(c.core is not None for c in active):
                    if time.monotonic() - waited > 30:
                        waiting = ", ".join(str(c) for c in active if c.core is not None)
                        log(f"waiting for the init of {waiting}")
                        waited = time.monotonic()
                    time.sleep(0.2)
                else:
                    if todo:
                        log(
                            f"not building {', '.join(map(str, todo))}: less than {self.args.build_margin:g} s "
                            "of the budget left"
                        )
                    break
            for cell in [c for c in active if c.core is None and c.fill is None]:
                active.remove(cell)  # finished: let its graph and layouts go
        bar.close()
        for cell in active:
            log(f"unfinished: {cell} ({'core runs' if cell.core is not None else 'ladder fill'} left)")

    def advance(self, cell: Cell, phase: str, until_done: bool = False) -> None:
        """Run the next run (or all, within the budget) of a cell's phase ("core" or "fill"). A failure (e.g.
        GPU memory) drops the cell, not the study."""
        try:
            while getattr(cell, phase) is not None and not self.out_of_time():
                try:
                    next(getattr(cell, phase))
                except StopIteration:
                    setattr(cell, phase, None)
                if not until_done:
                    break
        except Exception:
            log(f"{cell}: failed, dropping its other runs:\n{traceback.format_exc()}")
            cell.core = cell.fill = None
            free_gpu_memory()

    # -- one cell ------------------------------------------------------------------------------------------
    def prepare(self, cell: Cell) -> bool:
        """Build the cell's graph and start (or find) its init; False if the build failed."""
        a = self.args
        try:
            cell.graph, graph_seconds, knn_info = load_graph(cell.name, cell.n, cell.seed, a.device, a.n_neighbors)
        except Exception:
            log(f"{cell}: graph build failed, skipping it:\n{traceback.format_exc()}")
            free_gpu_memory()
            return False
        graph = cell.graph
        cell.stats = graph_stats(graph)
        fingerprint = graph.fingerprint
        check = f", kNN check {knn_info['knn_check']:.1%}" if "knn_check" in knn_info else ""
        log(
            f"{cell}: graph in {graph_seconds:.1f} s ({knn_info['knn']}{check}), nnz={cell.stats['nnz']:,}, "
            f"max degree {cell.stats['max_degree']}, rules: auto {cell.stats['rule_auto']}, "
            f"shipped {cell.stats['rule_shipped']}, degree {cell.stats['rule_degree']}"
        )
        cell.base = dict(
            data=cell.name,
            n=cell.n,
            seed=cell.seed,
            init=a.init,
            device=a.device,
            n_neighbors=a.n_neighbors,
            graph_seconds=graph_seconds,
            graph_fingerprint=fingerprint,
            **knn_info,
            **cell.stats,
        )
        cell.ref_strategy = self.reference_strategy(cell.n)
        stem = self.key(cell, "").replace("|", "_")
        cell.init_path = self.refs / f"{stem}init-{a.init}-{fingerprint}.npy"
        cell.init = load_array(cell.init_path, (graph.n_vertices, 2))
        if cell.init is None and self.pool is not None:
            graph_path = self.refs / "graphs" / f"{stem}{fingerprint}.npz"
            write_graph_file(graph_path, graph, fingerprint)
            cell.init_pending = self.pool.apply_async(
                init_job, (str(graph_path), fingerprint, a.init, cell.seed, str(cell.init_path))
            )
            log(f"{cell}: {a.init} init started in a worker")
        cell.core = self.core_runs(cell)
        cell.fill = self.fill_runs(cell)
        return True

    def init_ready(self, cell: Cell) -> bool:
        """True when the cell's runs can start: its init is here, or will be computed on first use."""
        if cell.init_pending is None:
            return True
        if not cell.init_pending.ready():
            return False
        try:
            cell.init_seconds = cell.init_pending.get()
            cell.init = load_array(cell.init_path, (cell.graph.n_vertices, 2))
            if cell.init is None:
                raise RuntimeError(f"the worker's init file {cell.init_path} is missing or has the wrong shape")
            log(f"{cell}: {self.args.init} init ready ({cell.init_seconds:.1f} s in a worker)")
        except Exception:
            log(f"{cell}: init failed, skipping the cell:\n{traceback.format_exc()}")
            cell.core = cell.fill = None
        cell.init_pending = None
        return cell.core is not None

    def init_for(self, cell: Cell) -> np.ndarray:
        if cell.init is None:
            start = time.perf_counter()
            cell.init = initial_layout(cell.graph, self.args.init, cell.seed)
            cell.init_seconds = time.perf_counter() - start
            save_array(cell.init_path, cell.init)
            log(f"  {self.args.init} init in {cell.init_seconds:.1f} s")
        return cell.init

    def ladder(self, cell: Cell) -> list[int]:
        limit = min(cell.graph.nnz, self.args.max_chunks)
        return [1 << i for i in range(limit.bit_length()) if (1 << i) <= limit]

    def core_runs(self, cell: Cell) -> Iterator[None]:
        """The reference; the "auto" and "shipped" picks (the before/after); the ladder from 1 up to where the
        outliers vanish (CLEAN_RUNGS clean rungs in a row); the "degree" pick. One run per next()."""
        self.reference_run(cell)
        yield
        for n_chunks in sorted({cell.stats["rule_auto"], cell.stats["rule_shipped"]}):
            self.chunked(cell, n_chunks)
            yield
        ladder = self.ladder(cell)
        while cell.rung < len(ladder) and cell.clean_streak < CLEAN_RUNGS:
            self.ladder_run(cell, ladder[cell.rung])
            yield
        if cell.stats["rule_degree"] <= self.args.max_chunks:
            self.chunked(cell, cell.stats["rule_degree"])
            yield

    def fill_runs(self, cell: Cell) -> Iterator[None]:
        """The rest of the ladder: at least up to the first power of two above the shipped nnz-based pick, then
        on while the last two rungs were not both clean."""
        ladder = self.ladder(cell)
        top = min(ladder_top(cell.stats), cell.graph.nnz, self.args.max_chunks)
        while cell.rung < len(ladder):
            if ladder[cell.rung] > top and cell.clean_streak >= CLEAN_RUNGS:
                return  # past the shipped rule and clean twice in a row: the ladder has said enough
            self.ladder_run(cell, ladder[cell.rung])
            yield

    def ladder_run(self, cell: Cell, n_chunks: int) -> None:
        record = self.chunked(cell, n_chunks)
        cell.rung += 1
        cell.clean_streak = 0 if record["bounds"] else cell.clean_streak + 1

    def reference_run(self, cell: Cell) -> None:
        a = self.args
        ref_key = self.key(cell, cell.ref_strategy)
        ref_path = self.refs / (ref_key.replace("|", "_") + ".npy")
        reference = load_array(ref_path, (cell.graph.n_vertices, 2))
        if reference is None or ref_key not in self.done:
            Y, timing = layout(cell.graph, cell.ref_strategy, 1, cell.seed, self.init_for(cell), a.device)
            reference = np.asarray(to_host(Y))
            save_array(ref_path, reference)
            self.record(
                cell,
                ref_key,
                dict(
                    run=cell.ref_strategy,
                    strategy=cell.ref_strategy,
                    reference=cell.ref_strategy,
                    **timing,
                    **measure(Y, cell.graph, reference),
                ),
            )
        cell.reference = reference

    def chunked(self, cell: Cell, n_chunks: int) -> dict:
        key = self.key(cell, f"chunked:{n_chunks}")
        if key in self.done:
            return self.done[key]
        Y, timing = layout(cell.graph, "chunked", n_chunks, cell.seed, self.init_for(cell), self.args.device)
        return self.record(
            cell,
            key,
            dict(
                run=f"chunked:{n_chunks}",
                strategy="chunked",
                reference=cell.ref_strategy,
                **timing,
                **measure(Y, cell.graph, cell.reference),
            ),
        )

    def record(self, cell: Cell, key: str, fields: dict) -> dict:
        record = dict(key=key, **cell.base, init_seconds=cell.init_seconds, **fields)
        append_result(self.out, record)
        self.done[key] = record
        self.ran += 1
        log(
            f"{record['data']:>11} n={record['n']:<7} seed={record['seed']} {record['run']:<14} "
            f"bounds={record['bounds']:<5} neighbors={record['neighbors']:<5} "
            f"{record['seconds_per_epoch'] * 1e3:8.2f} ms/epoch"
        )
        return record


def warm_up(device: str) -> None:
    """Compile (or load) the kernels on a tiny graph, so the first timed run does not pay for it."""
    X, _ = datasets.load("gaussian", n_samples=300, random_state=0)
    if device == "gpu":
        from umapviz.graph.build_gpu import build_graph_gpu  # noqa: PLC0415 - compiles the kNN kernels too

        graph = build_graph_gpu(X)
    else:
        graph = build_graph(X, random_state=0, cache=False, progress=False)
    for strategy in ("sequential", "hogwild", "chunked"):
        LayoutOptimizer(graph, strategy=strategy, n_chunks=2, random_state=0, n_epochs=2, device=device).run()


def parse_cell(text: str) -> tuple[str, int, int]:
    """'data:n:seed' -> (data, n, seed), for --cells."""
    parts = text.split(":")
    try:
        name, n, seed = parts[0], int(parts[1]), int(parts[2])
    except (IndexError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not data:n:seed (e.g. mixture_gpu:5000000:0)") from None
    if len(parts) != 3 or name not in dataset_names():
        raise argparse.ArgumentTypeError(f"{text!r}: write data:n:seed with data one of {dataset_names()}")
    return name, n, seed


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=DEFAULT_DATASETS, choices=dataset_names())
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[10_000, 20_000],
        help="points per dataset (digits and mnist: at most their own size)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--cells",
        type=parse_cell,
        nargs="+",
        default=None,
        metavar="DATA:N:SEED",
        help="run these graphs, in this order of priority, instead of the datasets x sizes x seeds grid",
    )
    parser.add_argument("--init", default="spectral", choices=["spectral", "random"])
    parser.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    parser.add_argument(
        "--reference",
        default="auto",
        choices=["auto", "sequential", "hogwild"],
        help="layout the bounds are measured against (auto: sequential on the CPU, hogwild on "
        "the GPU above 20k points)",
    )
    parser.add_argument("--n-neighbors", type=int, default=15)
    parser.add_argument("--max-chunks", type=int, default=1024, help="no ladder rung or degree pick above this")
    parser.add_argument(
        "--budget", type=float, default=0.0, help="seconds after which no new run starts (0: no limit); rerun to resume"
    )
    parser.add_argument(
        "--build-margin",
        type=float,
        default=120.0,
        help="with a budget: build no new graph when fewer seconds than this are left",
    )
    parser.add_argument(
        "--init-workers",
        type=int,
        default=0,
        help="processes that compute spectral inits while this one builds or lays out other "
        "graphs (0: compute each init here, when first needed)",
    )
    parser.add_argument("--out", default="bench/chunk_study/cpu.jsonl", help="results, one JSON line per run")
    parser.add_argument(
        "--refs",
        default="bench/out/chunk_study_refs",
        help="folder for the reference and initial layouts (.npy), reused on resume",
    )
    args = parser.parse_args(argv)
    sizes = [n for _, n, _ in args.cells] if args.cells else args.sizes
    if min(sizes) < 2 * args.n_neighbors:
        parser.error(f"sizes must be at least {2 * args.n_neighbors} points for n_neighbors={args.n_neighbors}")
    if args.max_chunks < 1:
        parser.error("--max-chunks must be at least 1")
    if args.init_workers < 0:
        parser.error("--init-workers must be 0 or more")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    np.seterr(all="ignore")
    log(f"chunk study on {platform.node()} ({args.device}), results in {args.out}")
    if args.device == "gpu":
        cache_edge_order()
    warm_up(args.device)
    log("kernels warm")
    study = Study(args)
    try:
        study.run_all()
    except KeyboardInterrupt:  # Ctrl-C, or the device script's hard time limit
        log(f"interrupted: {study.ran} new runs; {len(study.done)} in {args.out} (rerun to resume)")
        raise SystemExit(130) from None
    log(f"{study.ran} new runs; {len(study.done)} in {args.out}")


if __name__ == "__main__":
    main()
