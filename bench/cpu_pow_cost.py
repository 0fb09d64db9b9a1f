"""What the portable power function costs on the CPU: ms per epoch of each strategy with pow_portable (the
engines' arithmetic) and with the C library's powf (UMAPVIZ_BENCH_LIBRARY_POW=1, benchmark only), side by side.

    PYTHONPATH=$PWD nice -n 10 .venv/bin/python bench/cpu_pow_cost.py [--n-samples 20000] [--epochs 30] [--rounds 2]
        [--before DIR]

--before DIR adds a third variant, pow_portable as another version of the code has it (DIR: a checkout of that
version, e.g. `git archive REV | tar -x -C DIR`), timed in the same rounds: the cost before and after a change
of the power function in one run. NUMBA_NUM_THREADS=1 limits the table to one thread.

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


def child(n_samples: int, epochs: int, clock: str) -> None:
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
            now = time.process_time if clock == "process" else time.perf_counter
            start = now()
            opt.step(epochs)
            seconds = (now() - start) / epochs
            rows.append(
                {
                    "strategy": s,
                    "n_chunks": opt.n_chunks,
                    "threads": threads,
                    "ms_per_epoch": 1e3 * seconds,
                    "fingerprint": fingerprint(opt.embedding),
                }
            )
    print(json.dumps({"library_pow": moves_cpu.LIBRARY_POW, "graph": repr(graph), "rows": rows}))


def run_variant(library_pow: bool, args, code: str | None = None) -> dict:
    """One child's timings: the power function `library_pow` picks, from the umapviz at `code` (a checkout's root;
    None: the one this process would import)."""
    cmd = [
        sys.executable,
        __file__,
        "--child",
        "--n-samples",
        str(args.n_samples),
        "--epochs",
        str(args.epochs),
        "--clock",
        args.clock,
    ]
    # A fresh Numba cache: code cached from an earlier version of moves_cpu.py (which the engines inline) would
    # otherwise be timed, since Numba checks only the calling module's own file for changes.
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "UMAPVIZ_BENCH_LIBRARY_POW": "1" if library_pow else "0", "NUMBA_CACHE_DIR": cache}
        if code is not None:
            env["PYTHONPATH"] = os.path.abspath(code)
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result["library_pow"] is library_pow, "the child did not take the power function asked for"
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n-samples", type=int, default=20_000)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--before", metavar="DIR", help="also time pow_portable from the code checked out at DIR")
    p.add_argument(
        "--clock",
        choices=("wall", "process"),
        default="wall",
        help="time the wall clock (default) or the process's CPU time",
    )
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.n_samples, args.epochs, args.clock)
        return
    variants = [("portable", False, None), ("powf", True, None)]
    if args.before:
        variants.append(("before", False, args.before))
    best: dict = {}
    prints: dict = {}
    graph = ""
    for r in range(args.rounds):
        for name, library_pow, code in variants:
            result = run_variant(library_pow, args, code)
            graph = result["graph"]
            for row in result["rows"]:
                key = (row["strategy"], row["threads"], name)
                best[key] = min(best.get(key, float("inf")), row["ms_per_epoch"])
                prints.setdefault(key, set()).add(row["fingerprint"])
            print(f"round {r + 1}/{args.rounds} {name} done", file=sys.stderr)
    print(
        f"{platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} cores; {graph}; "
        f"first {args.epochs} epochs, best of {args.rounds} rounds, {args.clock} clock"
    )
    before = " pow_portable before ms/epoch | before / powf |" if args.before else ""
    print(f"\n| strategy | threads | pow_portable ms/epoch | powf ms/epoch | portable / powf |{before} bytes repeat |")
    print("|---|---|---|---|---|" + ("---|---|" if args.before else "") + "---|")
    for strategy in STRATEGIES:
        for threads in sorted({t for (_, t, _) in best}):
            port, lib = best[(strategy, threads, "portable")], best[(strategy, threads, "powf")]
            cells = f" {port:.1f} | {lib:.1f} | {port / lib:.3f} |"
            if args.before:
                old = best[(strategy, threads, "before")]
                cells += f" {old:.1f} | {old / lib:.3f} |"
            repeat = (
                "-"
                if strategy == "hogwild"
                else str(all(len(prints[(strategy, threads, name)]) == 1 for name, _, _ in variants))
            )
            print(f"| {strategy} | {threads} |{cells} {repeat} |")


if __name__ == "__main__":
    main()
