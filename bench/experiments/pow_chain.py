"""The power function on the chunked kernel's critical path (run on the GPU machine): variants of engine_gpu.cu's
pow_portable and of the chunk's negative-sample loads, each built with its compile-time switches, timed beside
the same engine built with CUDA's powf, in one run.

    PYTHONUNBUFFERED=1 PYTHONPATH=. python3 bench/experiments/pow_chain.py [--n 1000000] [--rounds 3]
        [--budget 170] [--out DIR]      (writes DIR/pow_chain.json)

A chunk of chunked("auto") costs the latency of one edge's dependent chain (rows, the attraction, about 5
negative samples one after the other, each with a power), so the power's latency, not its throughput, is what a
chunk pays. Two measurements:

1. ns per call of a dependent chain of powers, one warp, each input made from the previous result's bits (inputs
   spread over 8 binades and every mantissa, so the lanes' table lookups differ), less the same chain without the
   power; alone, and with a grid barrier (the engine's, whose acquire invalidates L1) after every 6 calls, as a
   chunk has.
2. ms per epoch of chunked("auto") on the 1M 384-d mixture graph of bench/gpu_bench.py (200 epochs from a random
   init, CUDA events around all launches, the schedule included), alternating rounds, best round, with each
   run's layout fingerprint: every portable variant must give the same bytes (exit 1 otherwise). Then hogwild,
   buffered and vertex once each for the old and the new portable code.

Switches (engine_gpu.cu): UMV_POW_SHARED (tables in shared memory), UMV_POW_FLAT (no branches in the power),
UMV_NEG_ROLL (a negative sample's slot refilled as soon as it is used), CHUNK_NEG_BATCH, UMV_LIBRARY_POW (powf).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import cupy as cp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: gpu_bench and gpu_mixture
import gpu_bench  # noqa: E402 - after bench/ is on the path
from gpu_mixture import mixture_gpu  # noqa: E402 - idem

from umapviz.graph.clusterwise import graph_from_knn  # noqa: E402 - idem
from umapviz.graph.init import random_init  # noqa: E402 - idem
from umapviz.graph.knn_gpu import exact_knn_gpu  # noqa: E402 - idem
from umapviz.metrics import fingerprint  # noqa: E402 - idem
from umapviz.optimize import engine_gpu  # noqa: E402 - idem
from umapviz.optimize.chunks import resolve_n_chunks  # noqa: E402 - idem
from umapviz.optimize.optimizer import learning_rate_at  # noqa: E402 - idem
from umapviz.optimize.params import EngineParams  # noqa: E402 - idem
from umapviz.optimize.rng import edge_order  # noqa: E402 - idem

OLD = {"UMV_POW_SHARED": 0, "UMV_POW_FLAT": 0, "UMV_NEG_ROLL": 0}
# name: the switches (unset ones take engine_gpu.cu's defaults)
POW_VARIANTS = {
    "portable old": OLD,
    "portable shared": {**OLD, "UMV_POW_SHARED": 1},
    "portable flat": {**OLD, "UMV_POW_FLAT": 1},
    "portable shared+flat": {**OLD, "UMV_POW_SHARED": 1, "UMV_POW_FLAT": 1},
    "powf": {**OLD, "UMV_LIBRARY_POW": 1},
}
LAYOUT_VARIANTS = {
    "portable old": OLD,
    "powf old": {**OLD, "UMV_LIBRARY_POW": 1},
    "portable shared": {**OLD, "UMV_POW_SHARED": 1},
    "portable flat": {**OLD, "UMV_POW_FLAT": 1},
    "portable shared+flat": {**OLD, "UMV_POW_SHARED": 1, "UMV_POW_FLAT": 1},
    "portable shared+flat+roll": {"UMV_POW_SHARED": 1, "UMV_POW_FLAT": 1, "UMV_NEG_ROLL": 1},
    "powf roll": {**OLD, "UMV_LIBRARY_POW": 1, "UMV_NEG_ROLL": 1},
    "portable shared+flat, batch 8": {**OLD, "UMV_POW_SHARED": 1, "UMV_POW_FLAT": 1, "CHUNK_NEG_BATCH": 8},
}
NEW = "portable shared+flat+roll"

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


def defines(switches: dict) -> tuple[str, ...]:
    return tuple(f"-D{k}={v}" for k, v in switches.items())


def chain_kernel(switches: dict, identity: bool):
    """The chain's kernel built with `switches`; `identity`: the chain without the power."""
    options = engine_gpu.NVRTC_OPTIONS + defines(switches) + (f"-DCHAIN_IDENTITY={int(identity)}",)
    return cp.RawModule(code=engine_gpu.KERNELS.read_text() + CHAIN, options=options).get_function("pow_chain")


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


def engine_module(switches: dict):
    """The current engine_gpu module, loaded apart, its kernels built with `switches`."""
    module = gpu_bench.load_engine(str(Path(engine_gpu.__file__).parent))
    module.NVRTC_OPTIONS = (*module.NVRTC_OPTIONS, *defines(switches))
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
            params = EngineParams(strategy=strategy, n_chunks=C, seed=self.seed, a=g.a, b=g.b, gamma=1.0,
                                  negative_sample_rate=5)
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
        out = {"strategy": strategy, "ms_per_epoch": ms, "n_chunks": int(C),
               "fingerprint": fingerprint(eng.embedding())}
        if not keep:
            del self.engines[(id(module), strategy, str(n_chunks))]
            cp.get_default_memory_pool().free_all_blocks()
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000, help="points of the mixture graph")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of the chunked variants")
    ap.add_argument("--budget", type=float, default=170.0, help="seconds: no new round starts past this")
    ap.add_argument("--reps", type=int, default=12000, help="calls per chain launch")
    ap.add_argument("--out", default="", help="folder for pow_chain.json")
    args = ap.parse_args()
    began = time.perf_counter()
    results: dict = {"device": gpu_bench.device_info(), "chain_ns": {}, "layout": [], "others": []}

    identity = chain_kernel(OLD, True)
    for name, switches in POW_VARIANTS.items():
        kernel = chain_kernel(switches, False)
        for barrier_every in (0, 6):  # ns per call, less the chain without the power
            ns = (chain_us(kernel, args.reps, barrier_every) - chain_us(identity, args.reps, barrier_every)) * 1e3
            ns /= args.reps
            results["chain_ns"][f"{name}, barrier every {barrier_every}"] = ns
            log(f"chain: {name:<22} barrier every {barrier_every}: {ns:7.1f} ns per call")

    X, _ = mixture_gpu(args.n)
    idx, dist = exact_knn_gpu(X, 15, "euclidean", return_device=True)
    del X
    graph = graph_from_knn(idx, dist, n_epochs=200, knn="exact-gpu")
    del idx, dist
    cp.get_default_memory_pool().free_all_blocks()
    log("graph", graph, f"({time.perf_counter() - began:.0f} s in)")

    modules = {name: engine_module(sw) for name, sw in LAYOUT_VARIANTS.items()}
    runs = Runs(graph)
    best: dict[str, float] = {}
    prints: dict[str, set] = {}
    names = list(LAYOUT_VARIANTS)
    for rnd in range(args.rounds):
        if rnd and time.perf_counter() - began > args.budget - 40:
            log(f"round {rnd + 1} skipped: the budget is spent")
            break
        for name in names if rnd % 2 == 0 else names[::-1]:
            try:
                r = runs.time(modules[name], "chunked", "auto")
            except Exception as exc:  # keep the other variants' numbers
                log(f"round {rnd + 1} {name} failed: {exc!r}")
                continue
            r.update(variant=name, round=rnd + 1)
            results["layout"].append(r)
            best[name] = min(best.get(name, float("inf")), r["ms_per_epoch"])
            prints.setdefault(name, set()).add(r["fingerprint"])
            log(f"round {rnd + 1} chunked auto ({r['n_chunks']}) {name:<30} {r['ms_per_epoch']:.3f} ms/epoch "
                f"{r['fingerprint']}")
    for name in ("portable old", NEW):
        for strategy in ("hogwild", "buffered", "vertex"):
            if time.perf_counter() - began > args.budget:
                break
            try:
                r = runs.time(modules[name], strategy, 1, keep=False)
            except Exception as exc:  # keep the other numbers
                log(f"{strategy} {name} failed: {exc!r}")
                continue
            r.update(variant=name)
            results["others"].append(r)
            log(f"{strategy:<8} {name:<30} {r['ms_per_epoch']:.3f} ms/epoch {r['fingerprint']}")

    portable = {p for name, ps in prints.items() if not name.startswith("powf") for p in ps}
    powf = {p for name, ps in prints.items() if name.startswith("powf") for p in ps}
    same = len(portable) == 1
    for strategy in ("buffered", "vertex"):  # deterministic: the old and the new code's bytes must agree
        fps = {r["fingerprint"] for r in results["others"] if r["strategy"] == strategy}
        same = same and len(fps) <= 1
        print(f"{strategy}: old and new portable {'the same bytes' if len(fps) <= 1 else 'DIFFERENT BYTES'} "
              f"({sorted(fps)})")
    print("\n| variant | chunked auto ms/epoch (best) | / powf old | / powf roll | fingerprints |")
    print("|---|---|---|---|---|")
    for name in names:
        if name in best:
            ratio = [f"{best[name] / best[b]:.3f}" if b in best else "-" for b in ("powf old", "powf roll")]
            print(f"| {name} | {best[name]:.3f} | {ratio[0]} | {ratio[1]} | {', '.join(sorted(prints[name]))} |")
    print(f"\nportable variants: {'the same bytes' if same else 'DIFFERENT BYTES'} ({sorted(portable)}); "
          f"powf variants: {sorted(powf)}; {time.perf_counter() - began:.0f} s in all")
    results["best_ms"] = best
    results["portable_same_bytes"] = same
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "pow_chain.json").write_text(json.dumps(results, indent=1, default=str))
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
