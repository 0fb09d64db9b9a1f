"""What the portable power function costs on the CPU: ms per epoch of each strategy with pow_portable (the
engines' arithmetic) and with the C library's powf (UMAPVIZ_BENCH_LIBRARY_POW=1, benchmark only), side by side.

    PYTHONPATH=$PWD nice -n 10 .venv/bin/python bench/cpu_pow_cost.py [--n-samples 20000] [--epochs 30] [--rounds 2]

Each variant runs in a child process of its own with a fresh Numba cache (Numba freezes the choice into the machine
code), the two alternating for --rounds rounds so that a drifting machine
hits both alike; a strategy's figure is its fastest round. Each child times the first --epochs epochs of the
schedule from a random init, with one thread and with all of Numba's, after a warm-up that compiles every kernel.
The fingerprints show that each variant repeats its bytes and that the two differ (another power function).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

STRATEGIES = ("sequential", "hogwild", "buffered", "chunked", "vertex")


def child(n_samples: int, epochs: int) -> None:
    """Time every strategy in this process (its power function fixed at import) and print one JSON line."""
    import numba  # noqa: PLC0415 - the child's imports come after the parent set its environment

    import umapviz  # noqa: PLC0415 - idem
    from umapviz.metrics import fingerprint  # noqa: PLC0415 - idem
    from umapviz.optimize import LayoutOptimizer, moves_cpu  # noqa: PLC0415 - idem

    X, _ = umapviz.datasets.load("mixture", n_samples=n_samples, random_state=0)
    graph = umapviz.build_graph(X, random_state=0, progress=False)
    for s in STRATEGIES:  # compile every kernel outside the timings
        LayoutOptimizer(graph, strategy=s, n_chunks="auto", random_state=0, init="random", n_epochs=3).run()
    rows = []
    for threads in sorted({1, numba.config.NUMBA_NUM_THREADS}):
        numba.set_num_threads(threads)
        for s in STRATEGIES:
            opt = LayoutOptimizer(graph, strategy=s, n_chunks="auto", random_state=0, init="random")
            start = time.perf_counter()
            opt.step(epochs)
            seconds = (time.perf_counter() - start) / epochs
            rows.append({"strategy": s, "n_chunks": opt.n_chunks, "threads": threads, "ms_per_epoch": 1e3 * seconds,
                         "fingerprint": fingerprint(opt.embedding)})
    print(json.dumps({"library_pow": moves_cpu.LIBRARY_POW, "graph": repr(graph), "rows": rows}))


def run_variant(library_pow: bool, args) -> dict:
    cmd = [sys.executable, __file__, "--child", "--n-samples", str(args.n_samples), "--epochs", str(args.epochs)]
    # A fresh Numba cache: code cached from an earlier version of moves_cpu.py (which the engines inline) would
    # otherwise be timed, since Numba checks only the calling module's own file for changes.
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "UMAPVIZ_BENCH_LIBRARY_POW": "1" if library_pow else "0", "NUMBA_CACHE_DIR": cache}
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result["library_pow"] is library_pow, "the child did not take the power function asked for"
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n-samples", type=int, default=20_000)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.n_samples, args.epochs)
        return
    best: dict = {}
    prints: dict = {}
    graph = ""
    for r in range(args.rounds):
        for library_pow in (False, True):
            result = run_variant(library_pow, args)
            graph = result["graph"]
            for row in result["rows"]:
                key = (row["strategy"], row["threads"], library_pow)
                best[key] = min(best.get(key, float("inf")), row["ms_per_epoch"])
                prints.setdefault(key, set()).add(row["fingerprint"])
            print(f"round {r + 1}/{args.rounds} {'powf' if library_pow else 'portable'} done", file=sys.stderr)
    print(f"{platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} cores; {graph}; "
          f"first {args.epochs} epochs, best of {args.rounds} rounds")
    print("\n| strategy | threads | pow_portable ms/epoch | powf ms/epoch | portable / powf | bytes repeat |")
    print("|---|---|---|---|---|---|")
    for strategy in STRATEGIES:
        for threads in sorted({t for (_, t, _) in best}):
            port, lib = best[(strategy, threads, False)], best[(strategy, threads, True)]
            repeat = "-" if strategy == "hogwild" else str(
                len(prints[(strategy, threads, False)]) == 1 and len(prints[(strategy, threads, True)]) == 1)
            print(f"| {strategy} | {threads} | {port:.1f} | {lib:.1f} | {port / lib:.3f} | {repeat} |")


if __name__ == "__main__":
    main()
