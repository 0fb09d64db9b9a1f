"""What a chunk costs on the GPU (run on the GPU machine): ms per epoch of the two chunked kernels side by side on
the 1M-point 384-d mixture graph of bench/gpu_bench.py, with every run's fingerprint.

    PYTHONUNBUFFERED=1 PYTHONPATH=. python3 bench/experiments/chunk_cost_gpu.py [--n 1000000] [--epochs 200]
        [--variants all|first] [--baseline .baseline] [--out DIR]   (one line)

First ns per grid barrier of the pipelined kernel's three barriers (PIPE_BARRIER 0, 1, 2) on grids of 8 to 132
blocks. Then runs, each on a fresh load of the engine module with its constants set (so its kernels compile with
its macros): chunked("auto") with chunked_persistent (two barriers a chunk, the grid sized to the GPU: the
engine's default), with chunked_persistent on a grid sized to the chunk (PERSIST_GRID = "chunk") and with
chunked_pipelined (CHUNK_KERNEL = "pipelined"); hogwild, buffered and vertex for scale; chunked(124) and
chunked(16) with both kernels; then more pipelined variants (barrier, threads per block, edges of a
typical chunk per thread, negative rows loaded together). With --baseline DIR (an earlier engine_gpu.py and
engine_gpu.cu, as gpu_bench.py --baseline takes), chunked("auto") and buffered on it too. Every run of one
n_chunks must give the same fingerprint (deterministic strategies): the script says SAME or DIFFER and exits 1 on
a difference. A run that takes longer than --run-limit stops the script; chunk_cost.json (in --out, default
bench/out) is rewritten after every run, so it and the log hold what ran. bench/CHUNK_STUDY.md ("What a chunk
costs on the GPU") has the figures and what they say.
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib.util
import json
import sys
import time
from pathlib import Path

import cupy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: gpu_bench, gpu_mixture
from gpu_bench import load_engine, time_layout  # noqa: E402
from gpu_mixture import mixture_gpu  # noqa: E402

from umapviz.graph.clusterwise import graph_from_knn  # noqa: E402
from umapviz.graph.knn_gpu import exact_knn_gpu  # noqa: E402
from umapviz.optimize import engine_gpu  # noqa: E402
from umapviz.optimize.chunks import resolve_n_chunks  # noqa: E402

# A loop of the pipelined kernel's barrier (PipeBarrier, cut from engine_gpu.cu), arrive and wait back to back.
BARRIER_LOOP = r"""
extern "C" __global__ void barrier_loop(u64* bar, int reps) {
    PipeBarrier b = {bar, 0ULL, false};
    if (threadIdx.x == 0) b.start();
    for (int r = 0; r < reps; ++r) {
        __syncthreads();
        if (threadIdx.x == 0) b.arrive();
        if (threadIdx.x == 0) b.wait();
        __syncthreads();
    }
}
"""

# (label, constants of engine_gpu set on the fresh module, extra NVRTC macros)
# (label, constants of engine_gpu set on the fresh module, extra NVRTC macros); the first is the engine's default
# (256 threads a block, a typical chunk's edge per thread, barrier 2, 8 negative rows a round trip).
T256 = {"PIPE_THREADS": 256, "PIPE_EDGES_PER_THREAD": 1.0}
PIPE_VARIANTS = [
    ("pipelined t256 e1 bar2 nb8", T256, ()),
    ("pipelined t256 e1 bar0 nb8", T256, ("-DPIPE_BARRIER=0",)),
    ("pipelined t256 e1 bar1 nb8", T256, ("-DPIPE_BARRIER=1",)),
    ("pipelined t256 e1 bar2 nb6", T256, ("-DPIPE_NEG_BATCH=6",)),
    ("pipelined t256 e0.5 bar2 nb8", {"PIPE_THREADS": 256, "PIPE_EDGES_PER_THREAD": 0.5}, ()),
    # fewer threads a multiprocessor: a chunk's scattered row accesses spread over more load/store units
    ("pipelined t128 e1 bar2 nb8", {"PIPE_THREADS": 128, "PIPE_EDGES_PER_THREAD": 1.0}, ()),
    ("pipelined t128 e0.5 bar2 nb8", {"PIPE_THREADS": 128, "PIPE_EDGES_PER_THREAD": 0.5}, ()),
    ("pipelined t64 e1 bar2 nb8", {"PIPE_THREADS": 64, "PIPE_EDGES_PER_THREAD": 1.0}, ()),
    ("pipelined t128 e0.25 bar2 nb8", {"PIPE_THREADS": 128, "PIPE_EDGES_PER_THREAD": 0.25}, ()),
    ("pipelined t32 e1 bar2 nb8", {"PIPE_THREADS": 32, "PIPE_EDGES_PER_THREAD": 1.0}, ()),
]


def log(*args) -> None:
    print(f"[{time.strftime('%H:%M:%S')}]", *args, flush=True)


def engine_variant(label: str, constants: dict, macros: tuple = ()):
    """A fresh copy of this checkout's engine_gpu module with `constants` set and `macros` added to its compile
    flags (its own compile cache, so the kernels build with them)."""
    spec = importlib.util.spec_from_file_location(f"umapviz.optimize.engine_gpu_{abs(hash(label))}",
                                                  engine_gpu.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, value in constants.items():
        setattr(module, name, value)
    module.NVRTC_OPTIONS = (*module.NVRTC_OPTIONS, *macros)
    return module


def barrier_source(mode: int) -> str:
    """engine_gpu.cu's PipeBarrier with PIPE_BARRIER = mode, alone (the text between its markers)."""
    text = engine_gpu.KERNELS.read_text()
    body = text.split("// >>> pipe barrier", 1)[1].split("\n", 1)[1].split("// <<< pipe barrier", 1)[0]
    return f"typedef unsigned long long u64;\n#define PIPE_BARRIER {mode}\n" + body + BARRIER_LOOP


def barrier_ns(blocks_list: list[int], reps: int = 20000) -> list[dict]:
    """ns per barrier of each PIPE_BARRIER mode, `reps` in one launch of 256-thread blocks, best of three."""
    rows = []
    for mode in (0, 1, 2):
        kernel = cp.RawModule(code=barrier_source(mode), options=engine_gpu.NVRTC_OPTIONS).get_function("barrier_loop")
        for blocks in blocks_list:
            bar = cp.zeros(32, dtype=cp.uint64)
            kernel((blocks,), (256,), (bar, cp.int32(10)))
            best = float("inf")
            for _ in range(3):
                start, stop = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                kernel((blocks,), (256,), (bar, cp.int32(reps)))
                stop.record()
                stop.synchronize()
                best = min(best, cp.cuda.get_elapsed_time(start, stop) * 1e6 / reps)
            rows.append({"barrier": mode, "blocks": blocks, "ns": best})
            log(f"barrier mode {mode}: {blocks:>4} blocks: {best:.0f} ns")
    return rows


def build_graph(n: int):
    """The 1M mixture graph of gpu_bench.py (exact kNN of all points, k = 15, 200 epochs)."""
    t = time.perf_counter()
    X, _ = mixture_gpu(n)
    idx, dist = exact_knn_gpu(X, 15, "euclidean", return_device=True)
    del X
    graph = graph_from_knn(idx, dist, n_epochs=200, knn="exact-gpu")
    del idx, dist
    cp.get_default_memory_pool().free_all_blocks()
    log(f"graph in {time.perf_counter() - t:.1f} s: {graph!r}")
    return graph


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--epochs", type=int, default=200, help="epochs timed per run (the schedule's first)")
    ap.add_argument("--baseline", default="", help="folder with an earlier engine_gpu.py and engine_gpu.cu")
    ap.add_argument("--variants", default="all", help="'all', or 'first': only the first pipelined variant")
    ap.add_argument("--run-limit", type=float, default=60.0,
                    help="seconds one run may take before the script stops (a stuck barrier)")
    ap.add_argument("--out", default="bench/out")
    args = ap.parse_args()
    out = {"runs": []}
    graph = build_graph(args.n)
    auto = resolve_n_chunks("auto", graph)
    eps = graph.epochs_per_sample
    typical = float(np.sum(1.0 / np.maximum(eps[np.isfinite(eps)], 1.0)))
    log(f"n_chunks auto = {auto}, max degree {graph.max_degree}, nnz {graph.nnz:,}, "
        f"about {typical:,.0f} active edges an epoch ({typical / auto:,.0f} a chunk under auto)")
    persistent = engine_variant("persistent", {"CHUNK_KERNEL": "persistent"})
    persistent_small = engine_variant("persistent, grid sized to the chunk",
                                      {"CHUNK_KERNEL": "persistent", "PERSIST_GRID": "chunk"})
    variants = PIPE_VARIANTS if args.variants == "all" else PIPE_VARIANTS[:1]
    pipes = [(label, engine_variant(label, {"CHUNK_KERNEL": "pipelined", **c}, m)) for label, c, m in variants]
    baseline = load_engine(args.baseline) if args.baseline else None
    # The figures that matter most first, in case a later run stops the script.
    plan = [("barriers", None, None, None),  # the shortest part first
            ("chunked", "auto", *pipes[0]), ("chunked", "auto", "persistent", persistent),
            ("chunked", "auto", "persistent, grid sized to the chunk", persistent_small),
            ("hogwild", 1, "current", None), ("buffered", 1, "current", None), ("vertex", 1, "current", None),
            ("chunked", 124, "persistent", persistent), ("chunked", 124, *pipes[0]),
            ("chunked", 16, "persistent", persistent), ("chunked", 16, *pipes[0])]
    plan += [("chunked", "auto", label, module) for label, module in pipes[1:]]
    plan += [(s, r, "baseline", baseline) for s, r in (("chunked", "auto"), ("buffered", 1))] if baseline else []
    Path(args.out).mkdir(parents=True, exist_ok=True)
    for strategy, rule, code, module in plan:
        faulthandler.dump_traceback_later(args.run_limit, exit=True)
        if strategy == "barriers":
            out["barriers"] = barrier_ns([8, 16, 32, 66, 132])
            faulthandler.cancel_dump_traceback_later()
            continue
        try:
            r = time_layout(graph, strategy, rule, epochs=args.epochs, engine=module)
        except Exception as exc:  # keep the other numbers
            log(f"{strategy} {rule} {code} failed: {exc!r}")
            continue
        finally:
            faulthandler.cancel_dump_traceback_later()
        r.update(code=code, us_per_chunk=1e3 * r["ms_per_epoch"] / r["n_chunks"])
        out["runs"].append(r)
        log(f"{strategy:<9} {str(rule):<5} C={r['n_chunks']:<5} {code:<30} {r['ms_per_epoch']:8.3f} ms/epoch "
            f"({r['us_per_chunk']:.2f} us/chunk) {r['fingerprint']} finite={r['finite']}")
        (Path(args.out) / "chunk_cost.json").write_text(json.dumps(out, indent=1))  # what ran, whatever follows
    ok = True
    for strategy, rule in sorted({(r["strategy"], str(r["rule"])) for r in out["runs"] if r["strategy"] != "hogwild"}):
        prints = {r["fingerprint"] for r in out["runs"] if (r["strategy"], str(r["rule"])) == (strategy, rule)}
        same = len(prints) == 1
        ok &= same
        log(f"{strategy} {rule}: {'SAME' if same else 'DIFFER'} fingerprints {sorted(prints)}")
    (Path(args.out) / "chunk_cost.json").write_text(json.dumps(out, indent=1))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
