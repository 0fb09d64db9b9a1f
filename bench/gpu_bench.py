"""The GPU layout benchmarks, the end-to-end GPU fit and umap-learn, side by side in one run (on the GPU machine).

    PYTHONUNBUFFERED=1 PYTHONPATH=. python3 bench/gpu_bench.py --sizes 1000000,5000000 --out DIR

Data: a 384-d Gaussian mixture (Zipf-sized clusters, centres far apart) generated on the GPU. The 1M graph
comes from exact kNN of all points (that run is the kNN benchmark); larger graphs from exact kNN inside each
cluster (the clusters are far apart, which the script checks against brute force on sampled queries).

Layout: ms per epoch over all epochs of the schedule (200), CUDA events around launches with no host
round trip, from a random init; active edges per second = all active edges of the run / its time. First,
for hogwild, chunked "auto" and vertex, each kernel's share of an epoch (time_kernels). Strategies: hogwild,
chunked with n_chunks="auto", "shipped" and "degree", buffered, vertex.
Then a full GPU pipeline on 1M x 384 (kNN, fuzzy set, edge list, spectral init, layout) with each stage's share,
and umap-learn on the machine's CPU cores on a subset, beside the same pipeline on the GPU.
Writes results.json and results.md to --out and prints the table last.

The portable power function's cost: --library-pow makes the baseline the current engine compiled with CUDA's
powf (the benchmark-only macro UMV_LIBRARY_POW of engine_gpu.cu), e.g. `bash bench/device_run.sh pow_cost`:
    python3 bench/gpu_bench.py --sizes 1000000,5000000 --skip-fit --skip-kernels --library-pow
        --strategies hogwild,chunked,vertex --strategies-large hogwild,chunked,vertex --out DIR   (one line)

Before and after in one run: put an earlier commit's engine in a folder and pass it as --baseline (git ignores
.baseline/; carry it to the GPU machine):
    mkdir -p .baseline && git archive REV umapviz/optimize | tar -x -C .baseline --strip-components=2
(an engine that takes EngineParams, as engine_gpu.GpuEngine does).

umap-learn is not installed on the GPU machine: bench/device_wheels.sh puts its wheels (with the metadata
umap-learn asks importlib.metadata for) in .whl/, and ``bash bench/device_run.sh umap`` installs them and runs
only the umap-learn comparison at 30,000 points:
    python3 bench/gpu_bench.py --sizes "" --skip-fit --umap-learn 30000 --out DIR
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import cupy as cp
import numpy as np
from clusterwise import graph_from_knn, knn_agreement, knn_within_groups
from gpu_mixture import mixture_gpu  # a sibling script: bench/ is on sys.path

from umapviz import UMAP, LayoutOptimizer
from umapviz.graph.build_gpu import build_graph_gpu
from umapviz.graph.knn.knn_gpu import exact_knn_gpu, query_knn_gpu
from umapviz.graph.start import random_init, spectral_init
from umapviz.metrics import fingerprint
from umapviz.optimize import engine_gpu as current_engine  # imports no CuPy; --baseline loads another version's
from umapviz.optimize.chunks import resolve_n_chunks
from umapviz.optimize.optimizer import learning_rate_at
from umapviz.optimize.params import EngineParams
from umapviz.optimize.rng import edge_order

TARGETS = {
    "hogwild_gedges": ">= 9 G active edges/s",
    "chunked_ratio": "<= 2x hogwild (target 1.5x)",
    "vertex_ratio": "<= 1.5x hogwild",
    "knn_1m": "<= 10 s",
    "fit_1m": "<= 15 s",
}


def log(*args) -> None:
    print(f"[{time.strftime('%H:%M:%S')}]", *args, flush=True)


def load_engine(directory: str):
    """The GPU engine module of another version of the code: `directory` holds its engine_gpu.py, engine_gpu.cu
    and kernels/ (e.g. from `git archive REV umapviz/optimize`), so that before and after are timed in one run."""
    spec = importlib.util.spec_from_file_location(
        "umapviz.optimize.engine_gpu_baseline", Path(directory) / "engine_gpu.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def library_pow_engine():
    """The current GPU engine compiled with CUDA's powf in place of pow_portable (UMV_LIBRARY_POW=1, a
    benchmark-only macro of engine_gpu.cu): the portable power function's cost, timed beside it as a baseline.
    Its layouts are not the CPU's bytes."""
    module = load_engine(str(Path(current_engine.__file__).parent))
    module.NVRTC_OPTIONS = (*module.NVRTC_OPTIONS, "-DUMV_LIBRARY_POW=1")
    return module


def pow_cost_summary(rows: list[dict]) -> dict:
    """For each graph and strategy timed with both codes: ms per epoch with pow_portable (current) against the
    library-powf baseline."""
    out = {}
    for r in rows:
        if r["code"] != "current":
            continue
        base = next(
            (
                b
                for b in rows
                if b["code"] == "baseline"
                and b["graph"] == r["graph"]
                and b["strategy"] == r["strategy"]
                and b["rule"] == r["rule"]
            ),
            None,
        )
        if base is not None:
            out[f"pow_portable cost, {r['graph']} {r['strategy']} ({r['rule']})"] = (
                f"{r['ms_per_epoch']:.3f} ms/epoch vs powf {base['ms_per_epoch']:.3f}: "
                f"{r['ms_per_epoch'] / base['ms_per_epoch'] - 1:+.1%}"
            )
    return out


def make_engine(graph, strategy: str, n_chunks, seed: int = 0, engine=None):
    """(engine, init, n_chunks): a GPU engine of umapviz.optimize.engine_gpu (or of the module `engine`) reset to
    a random init."""
    module = engine or current_engine
    C = 1 if strategy == "buffered" else resolve_n_chunks(n_chunks, graph)
    params = EngineParams(
        strategy=strategy, n_chunks=C, seed=seed, a=graph.a, b=graph.b, gamma=1.0, negative_sample_rate=5
    )
    eng = module.GpuEngine(graph, edge_order(seed, graph.nnz), params)
    init = random_init(graph.n_vertices, 2, seed)
    eng.reset(init)
    return eng, init, C


def _alphas(n_epochs: int) -> list[float]:
    return [learning_rate_at(t, n_epochs) for t in range(n_epochs)]


def time_layout(graph, strategy: str, n_chunks, seed: int = 0, epochs: int | None = None, engine=None) -> dict:
    """Run the schedule's epochs (all, or the first `epochs`) on the GPU engine (umapviz.optimize.engine_gpu,
    or the module `engine`): ms/epoch, active edges/s, and the result's fingerprint."""
    eng, init, C = make_engine(graph, strategy, n_chunks, seed, engine)
    run = graph.n_epochs if epochs is None else min(epochs, graph.n_epochs)
    alphas = _alphas(graph.n_epochs)
    # Warm-up run (compiles, captures graphs) that also counts the active edges of every epoch.
    active = sum(eng.run_epoch(t, alphas[t]) for t in range(run))
    eng.reset(init)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    wall = time.perf_counter()
    start.record(eng.stream)
    for t in range(run):
        eng.launch_epoch(t, alphas[t])
    stop.record(eng.stream)
    stop.synchronize()
    wall = time.perf_counter() - wall
    ms = cp.cuda.get_elapsed_time(start, stop)
    emb = eng.embedding()
    return {
        "strategy": strategy,
        "n_chunks": int(C),
        "rule": str(n_chunks),
        "code": "current" if engine is None else "baseline",
        "epochs": run,
        "ms_per_epoch": ms / run,
        "host_ms_per_epoch": 1e3 * wall / run,
        "active_edges": int(active),
        "gedges_per_s": active / (ms * 1e-3) / 1e9,
        "finite": bool(cp.isfinite(emb).all()),
        "fingerprint": fingerprint(emb),
    }


def time_kernels(graph, strategy: str, n_chunks=1, seed: int = 0, engine=None) -> dict:
    """Where an epoch's time goes: ms per epoch of each of the engine's kernels (its `_k_*` launches, CUDA
    events around each on the stream it runs on) over a whole run, "total" (events around the run on the
    engine's stream, so that copies and gaps between launches count too) and "window" (epochs per schedule pass)."""
    eng, init, _ = make_engine(graph, strategy, n_chunks, seed=seed, engine=engine)
    alphas = _alphas(graph.n_epochs)
    for t in range(2):  # a warm-up that compiles what the first epochs use (CuPy's copy kernels too)
        eng.run_epoch(t, alphas[t])
    eng.reset(init)
    events: dict[str, list] = {}

    def timed(name, kernel):
        def launch(*args):
            pair = cp.cuda.Event(), cp.cuda.Event()
            pair[0].record(cp.cuda.get_current_stream())
            kernel(*args)
            pair[1].record(cp.cuda.get_current_stream())
            events.setdefault(name, []).append(pair)

        return launch

    for attr in [a for a in vars(eng) if a.startswith("_k_")]:
        setattr(eng, attr, timed(attr[3:], getattr(eng, attr)))
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record(eng.stream)
    for t in range(graph.n_epochs):
        eng.launch_epoch(t, alphas[t])
    stop.record(eng.stream)
    stop.synchronize()
    out = {"total": cp.cuda.get_elapsed_time(start, stop) / graph.n_epochs, "window": eng.window}
    for name, pairs in events.items():
        out[name] = sum(cp.cuda.get_elapsed_time(a, b) for a, b in pairs) / graph.n_epochs
    return out


def layout_suite(
    graph, label: str, include=("hogwild", "chunked", "shipped", "degree", "buffered", "vertex"), baseline=None
) -> list[dict]:
    """Time each strategy in `include` on one graph; with a `baseline` engine module (load_engine), hogwild,
    chunked "auto", buffered and vertex run on it too, each beside the current code's."""
    rows = []
    plan = [("hogwild", 1)] if "hogwild" in include else []
    plan += [("chunked", "auto")] if "chunked" in include else []
    plan += [("chunked", "degree")] if "degree" in include else []
    plan += [("buffered", 1)] if "buffered" in include else []
    plan += [("chunked", "shipped")] if "shipped" in include else []
    plan += [("vertex", 1)] if "vertex" in include else []
    paired = {("hogwild", 1), ("chunked", "auto"), ("buffered", 1), ("vertex", 1)} if baseline is not None else set()
    # each baseline run right before the current code's same run, so that drifting clocks hit both alike
    plan = [run + (engine,) for run in plan for engine in ((baseline, None) if run in paired else (None,))]
    for strategy, rule, engine in plan:
        try:
            r = time_layout(graph, strategy, rule, engine=engine)
        except Exception as exc:  # keep the other numbers
            log(f"{label} {strategy}/{rule} failed: {exc!r}")
            continue
        r["graph"] = label
        rows.append(r)
        log(
            f"{label} {r['code']:<8} {strategy:<9} {str(rule):<7} C={r['n_chunks']:<5} "
            f"{r['ms_per_epoch']:.3f} ms/epoch (host {r['host_ms_per_epoch']:.3f}) "
            f"{r['gedges_per_s']:.2f} G edges/s finite={r['finite']} {r['fingerprint']}"
        )
    for code in ("current", "baseline"):  # each against its own code's hogwild
        hog = next((r for r in rows if r["strategy"] == "hogwild" and r["code"] == code), None)
        for r in rows:
            if r["code"] == code:
                r["ratio_to_hogwild"] = r["ms_per_epoch"] / hog["ms_per_epoch"] if hog else float("nan")
    return rows


def full_pipeline(X, n_neighbors: int = 15, seed: int = 0, init: str = "spectral") -> tuple[dict, object]:
    """kNN -> fuzzy set -> edge list -> init -> chunked(auto) layout, all GPU except the edge list's host
    steps and the spectral init's host steps (components, layout); (seconds per stage, the graph)."""
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    stages: dict = {}
    graph = build_graph_gpu(X, n_neighbors=n_neighbors, timings=stages)
    t1 = time.perf_counter()
    # What LayoutOptimizer(init=init) computes, done here to time it as a stage of its own.
    start = (
        spectral_init(graph, 2, seed, device="gpu") if init == "spectral" else random_init(graph.n_vertices, 2, seed)
    )
    t2 = time.perf_counter()
    opt = LayoutOptimizer(graph, strategy="chunked", n_chunks="auto", random_state=seed, init=start, device="gpu")
    t3 = time.perf_counter()
    opt.run()
    emb = opt.device_embedding
    cp.cuda.Device().synchronize()
    t4 = time.perf_counter()
    stages.update(init=t2 - t1, setup=t3 - t2, layout=t4 - t3)
    total = t4 - t0
    return {
        "n": int(X.shape[0]),
        "init": init,
        "total_s": total,
        "stages_s": stages,
        "shares": {k: v / total for k, v in stages.items()},
        "n_chunks": opt.n_chunks,
        "finite": bool(cp.isfinite(emb).all()),
        "graph": repr(graph),
    }, graph


def umap_fit_seconds(X_host: np.ndarray) -> tuple[float, dict]:
    """Seconds of ``UMAP(random_state=0).fit_transform(X_host)`` on the GPU, as a user calls it, and the
    transform timings of that fitted model (:func:`transform_seconds`)."""
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    est = UMAP(random_state=0, device="gpu")
    est.fit_transform(X_host)
    return time.perf_counter() - t0, transform_seconds(est, X_host)


def transform_seconds(est, X_train: np.ndarray, n_new: int = 1000) -> dict:
    """Seconds of ``est.transform`` on n_new points near training points, three calls in a row (the first
    uploads and prepares the training data, the others reuse it), and of its neighbour search alone with and
    without the prepared copy (without: what every call did before the copy was kept)."""
    rng = np.random.default_rng(9)
    X_new = X_train[rng.choice(len(X_train), n_new, replace=False)]
    X_new = (X_new + rng.normal(scale=0.01, size=X_new.shape)).astype(np.float32)
    calls = []
    for _ in range(3):
        t0 = time.perf_counter()
        est.transform(X_new)
        calls.append(time.perf_counter() - t0)
    search = {}
    for name, reference in (("unprepared", None), ("prepared", est._reference)):
        t0 = time.perf_counter()
        query_knn_gpu(est._fit_data, X_new, est.n_neighbors, est.metric, reference=reference)
        search[name] = time.perf_counter() - t0
    return {"n_new": n_new, "calls_s": calls, "search_s": search}


def spectral_init_seconds(graph, timeout: float) -> dict:
    """CPU spectral init of a graph (umapviz.graph.start.spectral_init), in a child process with a time limit."""
    path = Path("/tmp/graph_for_spectral.npz")
    np.savez(
        path,
        head=graph.head,
        tail=graph.tail,
        weight=graph.weight,
        eps=graph.epochs_per_sample,
        knn_i=graph.knn_indices,
        knn_d=graph.knn_dists,
        ab=np.array([graph.a, graph.b, graph.n_epochs]),
    )
    code = (
        "import sys, time, numpy as np\n"
        "from umapviz.graph import FuzzyGraph\n"
        "from umapviz.graph.start import spectral_init\n"
        "z = np.load(sys.argv[1])\n"
        "g = FuzzyGraph(head=z['head'], tail=z['tail'], weight=z['weight'], epochs_per_sample=z['eps'],"
        " knn_indices=z['knn_i'], knn_dists=z['knn_d'], a=float(z['ab'][0]), b=float(z['ab'][1]),"
        " n_epochs=int(z['ab'][2]))\n"
        "t = time.perf_counter(); spectral_init(g, 2, 0); print(time.perf_counter() - t)\n"
    )
    try:
        out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=timeout)
        return {"seconds": float(out.stdout.strip().splitlines()[-1])}
    except subprocess.TimeoutExpired:
        return {"seconds": None, "note": f"did not finish within {timeout:.0f} s"}
    except Exception as exc:
        return {"seconds": None, "note": f"failed: {exc!r}"}


def umap_learn_subset(X_host, n_sub: int) -> dict:
    try:
        import umap  # noqa: F401, PLC0415 - optional: umap-learn travels in .whl/ only when carried
    except ImportError as exc:
        return {"skipped": f"umap-learn not importable ({exc})"}
    code = (
        "import sys, time, numpy as np, umap\n"
        "X = np.load(sys.argv[1])\n"
        "umap.UMAP(n_neighbors=15, n_epochs=10).fit_transform(X[:2000])  # JIT warm-up\n"
        "t = time.perf_counter(); umap.UMAP(n_neighbors=15).fit_transform(X)\n"
        "print(time.perf_counter() - t)\n"
    )
    path = Path("/tmp/umap_subset.npy")
    np.save(path, X_host[:n_sub])
    try:
        out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=150)
        seconds = float(out.stdout.strip().splitlines()[-1])
    except Exception as exc:
        return {"skipped": f"umap-learn run failed: {exc!r}"}
    return {"n": n_sub, "seconds": seconds, "cores": os.cpu_count()}


def device_info() -> dict:
    """The GPU's name, multiprocessors, memory and driver, and its device-to-device copy bandwidth."""
    props = cp.cuda.runtime.getDeviceProperties(0)
    x = cp.empty(2**30 // 4 * 2, dtype=cp.float32)  # 2 GiB copy: bandwidth ceiling
    y = cp.empty_like(x)
    cp.copyto(y, x)
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record()
    for _ in range(5):
        cp.copyto(y, x)
    e.record()
    e.synchronize()
    bw = 5 * 2 * x.nbytes / (cp.cuda.get_elapsed_time(s, e) * 1e-3) / 1e12
    del x, y
    return {
        "name": props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
        "sms": props["multiProcessorCount"],
        "copy_TBps": bw,
        "cupy": cp.__version__,
        "driver": cp.cuda.runtime.driverGetVersion(),
        "python": platform.python_version(),
    }


def markdown(results: dict) -> str:
    lines = [
        f"Device: {results['device']['name']} ({results['device']['sms']} SMs, copy "
        f"{results['device']['copy_TBps']:.2f} TB/s), CuPy {results['device']['cupy']}; "
        f"{results['date']}",
        "",
    ]
    lines += [
        "| graph | code | strategy | n_chunks | epochs | ms/epoch | G active edges/s | x hogwild |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results["layout"]:
        lines.append(
            f"| {r['graph']} | {r['code']} | {r['strategy']} | {r['n_chunks']} ({r['rule']}) | "
            f"{r['epochs']} | {r['ms_per_epoch']:.3f} | {r['gedges_per_s']:.2f} | "
            f"{r['ratio_to_hogwild']:.2f} |"
        )
    lines.append("")
    for key, val in results.get("summary", {}).items():
        lines.append(f"- {key}: {val}")
    return "\n".join(lines)


def bench_size(n: int, args, results: dict) -> None:
    """kNN, graph, schedule and layout timings at one size (results appended in place)."""
    summary = results["summary"]
    X, labels = mixture_gpu(n)
    if n <= 1_000_000:
        # A first call compiles the kernels and loads cuBLAS (CuPy then keeps the binaries on disk, so only a
        # machine's first-ever call pays it): time it apart, as the pipeline's warm-up fit does.
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        exact_knn_gpu(X[:2000], 15, "euclidean", return_device=True)
        cp.cuda.Device().synchronize()
        warm_s = time.perf_counter() - t
        t = time.perf_counter()
        idx, dist = exact_knn_gpu(X, 15, "euclidean", return_device=True)
        cp.cuda.Device().synchronize()
        knn_s = time.perf_counter() - t
        summary[f"exact kNN {n:,} x 384, k=15 (all pairs, TF32 GEMM + exact refine)"] = (
            f"{knn_s:.2f} s (target {TARGETS['knn_1m']}; a first call on 2,000 points before it: {warm_s:.2f} s)"
        )
    else:
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        idx, dist = knn_within_groups(X, labels, 15)
        cp.cuda.Device().synchronize()
        knn_s = time.perf_counter() - t
        ok = knn_agreement(X, idx)
        summary[f"kNN {n:,} x 384 by cluster"] = f"{knn_s:.2f} s; {ok:.1%} of 256 sampled rows equal brute force"
    log(f"kNN {n}: {knn_s:.2f} s")
    del X, labels
    graph = graph_from_knn(idx, dist, n_epochs=200, knn="exact-gpu")
    log("graph", graph)
    summary[f"graph {n:,}"] = repr(graph)
    del idx, dist
    cp.get_default_memory_pool().free_all_blocks()
    label = f"{n / 1e6:g}M"
    codes = [("current", None)] + ([("baseline", args.baseline_engine)] if args.baseline_engine else [])
    for code, engine in codes if not args.skip_kernels else []:
        for strategy, rule in (("hogwild", 1), ("chunked", "auto"), ("vertex", 1)):
            times = time_kernels(graph, strategy, rule, engine=engine)
            key = f"kernels of {strategy} {label}, windows of {times.pop('window')} epochs, {code} code"
            text = (
                f"{times.pop('total'):.3f} ms/epoch in all ("
                + ", ".join(f"{k} {v:.3f}" for k, v in times.items())
                + ")"
            )
            summary[key] = text
            log(f"{key}: {text}")
    include = args.strategies.split(",") if n <= 1_000_000 else args.strategies_large.split(",")
    results["layout"] += layout_suite(graph, label, include=include, baseline=args.baseline_engine)


def bench_probe(n: int, args, results: dict) -> None:
    """The layout on a graph without hubs, like DESIGN.md's probe (degree 15-30): 2-D blobs, exact GPU kNN.
    It tells the cost of hubs apart from the cost of the code."""
    rng = cp.random.RandomState(0)  # 10 round blobs in the plane
    centres = rng.uniform(-10, 10, (10, 2)).astype(cp.float32)
    X = rng.standard_normal((n, 2), dtype=cp.float32) + centres[rng.randint(0, 10, n)]
    idx, dist = exact_knn_gpu(X, 15, "euclidean", return_device=True)
    graph = graph_from_knn(idx, dist, n_epochs=200, knn="exact-gpu")
    del idx, dist
    cp.get_default_memory_pool().free_all_blocks()
    label = f"blobs {n / 1e6:g}M"
    results["summary"][f"graph {label}"] = repr(graph)
    log("probe graph", graph)
    results["layout"] += layout_suite(graph, label, include=("hogwild", "chunked", "buffered", "vertex"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--sizes",
        default="1000000,5000000",
        help='graph sizes to time; "" for none (e.g. with --skip-fit --umap-learn N)',
    )
    ap.add_argument(
        "--strategies", default="hogwild,chunked,shipped,degree,buffered,vertex", help="what to time up to 1M"
    )
    ap.add_argument(
        "--strategies-large", default="hogwild,chunked,shipped,buffered,vertex", help="what to time above 1M"
    )
    ap.add_argument("--probe", type=int, default=0, help="also time a hub-free 2-D blobs graph of this size")
    ap.add_argument("--skip-fit", action="store_true")
    ap.add_argument("--skip-kernels", action="store_true", help="no per-kernel timing pass (time_kernels)")
    ap.add_argument(
        "--baseline",
        default="",
        help="a folder with another version's engine_gpu.py, engine_gpu.cu and kernels/, "
        "timed beside the current code (before and after in one run)",
    )
    ap.add_argument(
        "--library-pow",
        action="store_true",
        help="the baseline is the current engine compiled "
        "with CUDA's powf instead of pow_portable: what the portable power function costs",
    )
    ap.add_argument("--spectral-timeout", type=float, default=0, help="also time CPU spectral init (s limit)")
    ap.add_argument("--umap-learn", type=int, default=0, help="subset size for umap-learn (0: skip)")
    ap.add_argument("--out", default=os.environ.get("OUT", "bench/out"))
    args = ap.parse_args()
    if args.baseline and args.library_pow:
        ap.error("--baseline and --library-pow each name the baseline: pass one")
    args.baseline_engine = (
        library_pow_engine() if args.library_pow else (load_engine(args.baseline) if args.baseline else None)
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": " ".join(sys.argv),
        "device": device_info(),
        "layout": [],
        "summary": {},
    }
    log("device", results["device"])
    summary = results["summary"]
    sizes = [int(float(v)) for v in args.sizes.split(",") if v.strip()]

    def run_size(n):
        try:
            bench_size(n, args, results)
        except Exception as exc:  # keep what the other sizes measured
            log(f"size {n} failed: {exc!r}")
            summary[f"size {n:,}"] = f"failed: {exc!r}"
        cp.get_default_memory_pool().free_all_blocks()
        json.dump(results, open(out / "results.json", "w"), indent=1)

    for n in sizes:  # up to 1M first; larger sizes after the pipeline and umap-learn (they take longest)
        if n <= 1_000_000:
            run_size(n)
    if args.probe:
        try:
            bench_probe(args.probe, args, results)
        except Exception as exc:
            log(f"probe failed: {exc!r}")
    if not args.skip_fit:
        # A small fit first compiles the kernels (CuPy keeps them on disk, so only a first-ever fit pays that),
        # as umap-learn's figure below is taken with its JIT warmed up.
        warm, _ = full_pipeline(mixture_gpu(20_000)[0])
        results["fit_warm_up_20k"] = warm
        summary["GPU pipeline 20k x 384 run first (compiles the kernels)"] = f"{warm['total_s']:.2f} s"
        X, _ = mixture_gpu(1_000_000)
        graph = None
        try:
            fit, graph = full_pipeline(X)
        except Exception as exc:
            fit = {"failed": repr(exc)}
        results["fit_1m"] = fit
        log("fit 1M (spectral init)", fit)
        # What a user runs: UMAP().fit_transform on a NumPy array (its checks, the upload, and the edge order drawn
        # beside the spectral init, which full_pipeline times one after the other).
        X_host = X.get()
        del X
        try:
            umap_s, tr = umap_fit_seconds(X_host)
        except Exception as exc:
            umap_s, tr = float("nan"), None
            log(f"UMAP fit failed: {exc!r}")
        del X_host
        results["umap_fit_transform_1m_s"] = umap_s
        summary["UMAP(random_state=0).fit_transform(1M x 384 NumPy array), default spectral init"] = (
            f"{umap_s:.2f} s (target {TARGETS['fit_1m']})"
        )
        if tr is not None:
            results["transform_1m"] = tr
            calls = " / ".join(f"{v:.3f}" for v in tr["calls_s"])
            summary[f"that model's transform of {tr['n_new']:,} new points, three calls"] = (
                f"{calls} s; its neighbour search alone {tr['search_s']['unprepared']:.3f} s without the prepared "
                f"training data (every call before), {tr['search_s']['prepared']:.3f} s with it"
            )
        if "total_s" in fit:
            shares = ", ".join(f"{k} {v:.2f}s ({fit['shares'][k]:.0%})" for k, v in fit["stages_s"].items())
            summary["GPU pipeline 1M x 384, init=spectral"] = (
                f"{fit['total_s']:.2f} s (target {TARGETS['fit_1m']}): {shares}"
            )
            if args.spectral_timeout > 0:
                spec = spectral_init_seconds(graph, args.spectral_timeout)
                results["spectral_1m_cpu"] = spec
                summary["CPU spectral init of that 1M graph (16 cores)"] = (
                    f"{spec['seconds']:.2f} s" if spec["seconds"] is not None else spec["note"]
                )
        json.dump(results, open(out / "results.json", "w"), indent=1)
    if args.umap_learn:
        n_sub = args.umap_learn
        X, _ = mixture_gpu(n_sub, seed=5)
        gpu_fit, _ = full_pipeline(X)
        gpu_fit, _ = full_pipeline(X)  # second run: without first-call compilation
        ul = umap_learn_subset(X.get(), n_sub)
        results["umap_learn"] = {"umap_learn": ul, "gpu": gpu_fit}
        if "seconds" in ul:
            summary[f"umap-learn {n_sub:,} x 384 on {ul['cores']} CPU cores (JIT warmed up)"] = (
                f"{ul['seconds']:.1f} s vs this GPU pipeline {gpu_fit['total_s']:.2f} s: "
                f"{ul['seconds'] / gpu_fit['total_s']:.0f}x"
            )
        else:
            summary["umap-learn"] = ul["skipped"]
    json.dump(results, open(out / "results.json", "w"), indent=1)
    for n in sizes:
        if n > 1_000_000:
            run_size(n)
    if args.library_pow:
        summary.update(pow_cost_summary(results["layout"]))
    md = markdown(results)
    (out / "results.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
