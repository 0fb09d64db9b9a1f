"""ns per call of pow_portable against the C library's powf (x**y in Numba), one call at a time: throughput (the
calls independent) and latency (each call's input waits for the previous result, as the layout's negative samples
do), for this checkout and, with --before DIR, for the code checked out at DIR, in alternating child processes.

    PYTHONPATH=$PWD nice -n 10 .venv/bin/python bench/experiments/pow_call_cost.py [--before DIR] [--rounds 5]

Inputs: 200,000 float32 squared distances, log-uniform over [0.01, 100], y = 0.8951 (b of the default curve).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def child() -> None:
    import numpy as np  # noqa: PLC0415 - the child imports the umapviz its PYTHONPATH names
    from numba import njit  # noqa: PLC0415 - idem

    from umapviz.optimize.moves_cpu import pow_portable  # noqa: PLC0415 - idem

    def make(pw):
        @njit
        def throughput(xs, y):
            acc = np.float32(0)
            for _ in range(10):
                for i in range(xs.shape[0]):
                    acc += pw(xs[i], y)
            return acc

        @njit
        def latency(xs, y):
            prev = np.float32(0)
            for _ in range(10):
                for i in range(xs.shape[0]):
                    prev = pw(xs[i] + prev * np.float32(0.0), y)  # the input depends on the previous result
            return prev

        return throughput, latency

    library = njit(inline="always")(lambda x, y: x**y)
    xs = (10.0 ** np.random.default_rng(0).uniform(-2, 2, 200_000)).astype(np.float32)
    y = np.float32(0.8951)
    out = {}
    for name, pw in (("portable", pow_portable), ("powf", library)):
        for kind, fn in zip(("throughput", "latency"), make(pw), strict=True):
            fn(xs[:10], y)
            best = float("inf")
            for _ in range(3):
                start = time.perf_counter()
                fn(xs, y)
                best = min(best, (time.perf_counter() - start) / (10 * xs.size) * 1e9)
            out[f"{name} {kind}"] = best
    print(json.dumps(out))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", metavar="DIR", help="also time pow_portable from the code checked out at DIR")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child()
        return
    codes = {"after": os.environ.get("PYTHONPATH", os.getcwd())}
    if args.before:
        codes["before"] = os.path.abspath(args.before)
    best: dict = {}
    for _ in range(args.rounds):
        for name, code in codes.items():
            with tempfile.TemporaryDirectory() as cache:
                env = {**os.environ, "PYTHONPATH": code, "NUMBA_CACHE_DIR": cache}
                run = subprocess.run(
                    [sys.executable, __file__, "--child"], env=env, capture_output=True, text=True, check=True
                )
            for key, ns in json.loads(run.stdout.strip().splitlines()[-1]).items():
                best[(name, key)] = min(best.get((name, key), float("inf")), ns)
    print("| code | kind | pow_portable ns/call | powf ns/call | portable / powf |\n|---|---|---|---|---|")
    for name in codes:
        for kind in ("throughput", "latency"):
            port, lib = best[(name, f"portable {kind}")], best[(name, f"powf {kind}")]
            print(f"| {name} | {kind} | {port:.2f} | {lib:.2f} | {port / lib:.2f} |")


if __name__ == "__main__":
    main()
