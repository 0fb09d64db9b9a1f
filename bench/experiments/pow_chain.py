"""The power function on the chunked kernel's critical path (run on the GPU machine): engine_gpu.cu's pow_portable
against the same engine built with CUDA's powf, and against an earlier version of the engine (--before), in one run.

    PYTHONUNBUFFERED=1 PYTHONPATH=. python3 bench/experiments/pow_chain.py [--before DIR] [--n 1000000]
        [--rounds 3] [--budget 170] [--out DIR]      (writes OUT/pow_chain.json)

DIR holds an earlier engine_gpu.py, engine_gpu.cu and kernels/ (as bench/gpu_bench.py's --baseline), e.g.
    mkdir -p .baseline && git archive REV umapviz/optimize | tar -x -C .baseline --strip-components=2

A chunk of chunked("auto") costs the latency of one edge's dependent chain (rows, the attraction, about 5
negative samples one after the other, each with a power), so the power's latency, not its throughput, is what a
chunk pays. Two measurements:

1. ns per call of a dependent chain of powers, one warp, each input made from the previous result's bits (inputs
   spread over 8 binades and every mantissa, so the lanes' table lookups differ), less the same chain without the
   power; alone, and with a grid barrier (the engine's, whose acquire invalidates L1) after every 6 calls, as a
   chunk has.
2. ms per epoch of chunked("auto") on the 1M 384-d mixture graph of bench/gpu_bench.py (200 epochs from a random
   init, CUDA events around all launches, the schedule included), alternating rounds, best round, with each
   run's layout fingerprint; then hogwild, buffered and vertex once each. The portable code and --before's must
   give the same bytes for every deterministic strategy (exit 1 otherwise).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import cupy as cp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: gpu_bench and gpu_mixture
import gpu_bench
from clusterwise import graph_from_knn
from gpu_mixture import mixture_gpu

from umapviz.graph.knn.knn_gpu import exact_knn_gpu
from umapviz.graph.start import random_init
from umapviz.metrics import fingerprint
from umapviz.optimize import engine_gpu
from umapviz.optimize.chunks import resolve_n_chunks
from umapviz.optimize.optimizer import learning_rate_at
from umapviz.optimize.params import EngineParams
from umapviz.optimize.rng import edge_order

LIBRARY_POW = ("-DUMV_LIBRARY_POW=1",)  # engine_gpu.cu's benchmark-only switch: CUDA's powf
# An engine source from before load_pow_tables reads its tables from global memory: nothing to fill.
NO_TABLES = "__device__ __forceinline__ void load_pow_tables() {}\n"

CHAIN = r"""
extern "C" __global__ void pow_chain(float* out, float y, int reps, int barrier_every, u64* bar) {
    load_pow_tables();
    float x = __int_as_float(0x3c000000 + (int)(((unsigned)threadIdx.x * 2654435761u) >> 6));
    for (int r = 1; r <= reps; ++r) {
#if CHAIN_IDENTITY
        float p = x;
#else
        float p = power(x, y);
#endif
        // the next input from p's bits: a float in [2^-7, 2), any mantissa
        x = __int_as_float(0x3c000000 + (int)(((unsigned)__float_as_int(p) * 2654435761u) >> 6));
        if (barrier_every > 0 && r % barrier_every == 0) grid_barrier(bar);
    }
    out[threadIdx.x] = x;
}
"""


def log(*args) -> None:
    print(f"[{time.strftime('%H:%M:%S')}]", *args, flush=True)


def chain_kernel(source: str, extra: tuple, identity: bool):
    """The chain's kernel from engine source `source` built with the options `extra`; `identity`: the chain
    without the power."""
    if "load_pow_tables" not in source:
        source += NO_TABLES
    options = engine_gpu.NVRTC_OPTIONS + extra + (f"-DCHAIN_IDENTITY={int(identity)}",)
    return cp.RawModule(code=source + CHAIN, options=options).get_function("pow_chain")


def chain_us(kernel, reps: int, barrier_every: int) -> float:
    """us per launch of `reps` calls in one warp, best of five launches."""
    out = cp.zeros(32, dtype=cp.float32)
    bar = cp.zeros(8, dtype=cp.uint64)
    kernel((1,), (32,), (out, cp.float32(0.8951), cp.int32(60), cp.int32(barrier_every), bar))  # load, warm up
    best = float("inf")
    for _ in range(5):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        kernel((1,), (32,), (out, cp.float32(0.8951), cp.int32(reps), cp.int32(barrier_every), bar))
        stop.record()
        stop.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(start, stop) * 1e3)
    return best


def engine_module(directory: Path, extra: tuple = ()):
    """The engine_gpu module in `directory`, loaded apart, its kernels built with the options `extra`."""
    module = gpu_bench.load_engine(str(directory))
    module.NVRTC_OPTIONS = (*module.NVRTC_OPTIONS, *extra)
    return module


class Runs:
    """Engines of one graph, one per (variant, strategy), kept between rounds; the seed's edge order and the
    random init made once (as gpu_bench.make_engine makes them)."""

    def __init__(self, graph, seed: int = 0):
        self.graph, self.seed = graph, seed
        self.perm = edge_order(seed, graph.nnz)
        self.init = random_init(graph.n_vertices, 2, seed)
        self.alphas = [learning_rate_at(t, graph.n_epochs) for t in range(graph.n_epochs)]
        self.engines: dict = {}

    def engine(self, module, strategy: str, n_chunks):
        key = (id(module), strategy, str(n_chunks))
        if key not in self.engines:
            g = self.graph
            C = 1 if strategy == "buffered" else resolve_n_chunks(n_chunks, g)
            params = EngineParams(
                strategy=strategy, n_chunks=C, seed=self.seed, a=g.a, b=g.b, gamma=1.0, negative_sample_rate=5
            )
            eng = module.GpuEngine(g, self.perm, params)
            eng.reset(self.init)
            for t in range(3):  # compiles and loads what the epochs use
                eng.run_epoch(t, self.alphas[t])
            self.engines[key] = (eng, C)
        return self.engines[key]

    def time(self, module, strategy: str, n_chunks, keep: bool = True) -> dict:
        """ms per epoch over the schedule's epochs from the random init (CUDA events around all launches, as
        gpu_bench.time_layout) and the layout's fingerprint."""
        eng, C = self.engine(module, strategy, n_chunks)
        eng.reset(self.init)
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record(eng.stream)
        for t in range(self.graph.n_epochs):
            eng.launch_epoch(t, self.alphas[t])
        stop.record(eng.stream)
        stop.synchronize()
        ms = cp.cuda.get_elapsed_time(start, stop) / self.graph.n_epochs
        out = {
            "strategy": strategy,
            "ms_per_epoch": ms,
            "n_chunks": int(C),
            "fingerprint": fingerprint(eng.embedding()),
        }
        if not keep:
            del self.engines[(id(module), strategy, str(n_chunks))]
            cp.get_default_memory_pool().free_all_blocks()
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", default="", help="folder with an earlier engine_gpu.py, engine_gpu.cu and kernels/")
    ap.add_argument("--n", type=int, default=1_000_000, help="points of the mixture graph")
    ap.add_argument("--rounds", type=int, default=3, help='alternating rounds of chunked("auto")')
    ap.add_argument("--budget", type=float, default=170.0, help="seconds: no new round starts past this")
    ap.add_argument("--reps", type=int, default=12000, help="calls per chain launch")
    ap.add_argument("--out", default="", help="folder for pow_chain.json")
    args = ap.parse_args()
    began = time.perf_counter()
    here = Path(engine_gpu.__file__).parent
    # name: (folder of engine_gpu.py and .cu, extra build options)
    codes = {"portable": (here, ()), "powf": (here, LIBRARY_POW)}
    if args.before:
        codes["portable before"] = (Path(args.before), ())
    results: dict = {"device": gpu_bench.device_info(), "chain_ns": {}, "layout": [], "others": []}

    identity = chain_kernel(engine_gpu.kernel_source(), (), True)
    for name, (folder, extra) in codes.items():
        kernel = chain_kernel(engine_gpu.kernel_source(folder / "engine_gpu.cu"), extra, False)
        for barrier_every in (0, 6):  # ns per call, less the chain without the power
            ns = (chain_us(kernel, args.reps, barrier_every) - chain_us(identity, args.reps, barrier_every)) * 1e3
            ns /= args.reps
            results["chain_ns"][f"{name}, barrier every {barrier_every}"] = ns
            log(f"chain: {name:<16} barrier every {barrier_every}: {ns:7.1f} ns per call")

    X, _ = mixture_gpu(args.n)
    idx, dist = exact_knn_gpu(X, 15, "euclidean", return_device=True)
    del X
    graph = graph_from_knn(idx, dist, n_epochs=200, knn="exact-gpu")
    del idx, dist
    cp.get_default_memory_pool().free_all_blocks()
    log("graph", graph, f"({time.perf_counter() - began:.0f} s in)")

    modules = {name: engine_module(folder, extra) for name, (folder, extra) in codes.items()}
    runs = Runs(graph)
    best: dict[str, float] = {}
    names = list(codes)
    for rnd in range(args.rounds):
        if rnd and time.perf_counter() - began > args.budget - 40:
            log(f"round {rnd + 1} skipped: the budget is spent")
            break
        for name in names if rnd % 2 == 0 else names[::-1]:
            try:
                r = runs.time(modules[name], "chunked", "auto")
            except Exception as exc:  # keep the other codes' numbers
                log(f"round {rnd + 1} {name} failed: {exc!r}")
                continue
            r.update(code=name, round=rnd + 1)
            results["layout"].append(r)
            best[name] = min(best.get(name, float("inf")), r["ms_per_epoch"])
            log(
                f"round {rnd + 1} chunked auto ({r['n_chunks']}) {name:<16} {r['ms_per_epoch']:.3f} ms/epoch "
                f"{r['fingerprint']}"
            )
    runs.engines.clear()
    cp.get_default_memory_pool().free_all_blocks()
    for strategy in ("hogwild", "buffered", "vertex"):
        for name in names:
            if time.perf_counter() - began > args.budget:
                break
            try:
                r = runs.time(modules[name], strategy, 1, keep=False)
            except Exception as exc:  # keep the other numbers
                log(f"{strategy} {name} failed: {exc!r}")
                continue
            r.update(code=name)
            results["others"].append(r)
            log(f"{strategy:<8} {name:<16} {r['ms_per_epoch']:.3f} ms/epoch {r['fingerprint']}")

    same = True
    for strategy in ("chunked", "buffered", "vertex"):  # deterministic: the portable codes' bytes must agree
        fps = {
            r["fingerprint"]
            for r in results["layout"] + results["others"]
            if r["strategy"] == strategy and r["code"] != "powf"
        }
        same = same and len(fps) <= 1
        print(f"{strategy}: portable codes {'the same bytes' if len(fps) <= 1 else 'DIFFERENT BYTES'} ({sorted(fps)})")
    print("\n| code | chunked auto ms/epoch (best) | / powf |")
    print("|---|---|---|")
    for name in names:
        if name in best:
            ratio = f"{best[name] / best['powf']:.3f}" if "powf" in best else "-"
            print(f"| {name} | {best[name]:.3f} | {ratio} |")
    print(f"\n{time.perf_counter() - began:.0f} s in all")
    results["best_ms"] = best
    results["portable_same_bytes"] = same
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "pow_chain.json").write_text(json.dumps(results, indent=1, default=str))
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
