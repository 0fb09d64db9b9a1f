"""The whole CPU fit, stage by stage: ``UMAP(device="cpu", random_state=0).fit_transform`` beside umap-learn's seeded
``umap.UMAP(random_state=0).fit_transform`` on the same data, each as a user calls it, in one process.

    NUMBA_NUM_THREADS=2 PYTHONPATH=$PWD python3 bench/cpu_fit.py [--data mixture,gaussian,text_like] [--n 100000]

Both libraries first fit --warmup rows (NN-descent included: this kit's with ``force_approximation_algorithm``) so
that every kernel is compiled and the timed fits are those of a user's second fit in a session. The timed fits
alternate (ours, umap-learn, ours, ...) for --rounds rounds; the best round of each counts (the machine is shared).
Stages come from cProfile's cumulative times of each library's own functions: kNN (NN-descent and what follows),
fuzzy set and edge list, the spectral start, the layout. Quality: trustworthiness (5 neighbours, 2,000 sampled
points) and the points flung (``metrics.outliers(..., method="neighbors")`` on this kit's kNN graph), for both.
Prints a Markdown table; ratios measured in one run count, absolute times only on a quiet machine.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import time
import warnings

import numba
import numpy as np

from umapviz import UMAP, datasets, metrics

# Stage -> (file suffix, function name) whose cumulative time is the stage's, per library. The fuzzy set is what
# build_graph (ours) or fit's graph work (umap-learn) spends beyond the kNN.
OURS = {
    "knn": ("graph/knn/knn_cpu.py", "nearest_neighbors"),
    "graph": ("graph/build.py", "build_graph"),
    "start": ("optimize/optimizer.py", "__init__"),
    "layout": ("optimize/optimizer.py", "run"),
}
THEIRS = {
    "knn": ("umap/umap_.py", "nearest_neighbors"),
    "graph": ("umap/umap_.py", "fuzzy_simplicial_set"),
    "start": ("umap/spectral.py", "spectral_layout"),
    "layout": ("umap/layouts.py", "optimize_layout_euclidean"),
}


def _stage_seconds(profile: cProfile.Profile, wanted: dict) -> dict:
    stats = pstats.Stats(profile).stats  # (file, line, name) -> (cc, nc, tottime, cumtime, callers)
    out = {}
    for stage, (suffix, name) in wanted.items():
        out[stage] = max(
            (v[3] for (f, _, fn), v in stats.items() if fn == name and f.replace(os.sep, "/").endswith(suffix)),
            default=float("nan"),
        )
    return out


def _fit(fn, X, wanted):
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    Y = fn(X)
    profile.disable()
    total = time.perf_counter() - start
    stages = _stage_seconds(profile, wanted)
    if wanted is OURS:  # build_graph holds the kNN: the graph stage is the rest
        stages["graph"] -= stages["knn"]
    return Y, total, stages


LAST: dict = {}  # the last fitted estimator of this kit


def ours(X, warm: bool = False):
    LAST["umapviz"] = model = UMAP(device="cpu", random_state=0, force_approximation_algorithm=warm)
    return model.fit_transform(X)


def theirs(X, warm: bool = False):
    import umap  # noqa: PLC0415 - optional: umap-learn, bench only

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="n_jobs value")  # its seeded run is single-threaded, said so
        return umap.UMAP(random_state=0).fit_transform(X)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="mixture,gaussian,text_like")
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--warmup", type=int, default=8_000)
    args = p.parse_args()

    import umap  # noqa: PLC0415 - the same

    print(
        f"CPU fit: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Numba threads "
        f"{numba.get_num_threads()}, umap-learn {umap.__version__}, load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    rows = []
    for name in args.data.split(","):
        X, _ = datasets.load(name, n_samples=args.n, random_state=0)
        X = np.ascontiguousarray(X, dtype=np.float32)
        ours(X[: args.warmup], warm=True)
        theirs(X[: args.warmup])
        best = {}
        for r in range(args.rounds):
            for label, fn, wanted in (("umapviz", ours, OURS), ("umap-learn", theirs, THEIRS)):
                Y, total, stages = _fit(fn, X, wanted)
                s = ", ".join(f"{k} {v:.1f}" for k, v in stages.items())
                print(f"{name} round {r + 1} {label}: {total:.1f} s ({s}), load {os.getloadavg()[0]:.2f}", flush=True)
                if label not in best or total < best[label][1]:
                    best[label] = (Y, total, stages)
        graph = LAST["umapviz"].graph_  # this kit's kNN graph of X (the same in every round: seeded)
        for label, (Y, total, stages) in best.items():
            trust = metrics.trustworthiness(X, Y, n_neighbors=5, random_state=0)
            flung = int(metrics.outliers(Y, graph, method="neighbors").sum())
            rows.append((name, X.shape, label, total, stages, trust, flung))
        speedup = best["umap-learn"][1] / best["umapviz"][1]
        rows.append((name, X.shape, "speed-up", speedup, None, None, None))
    print()
    print("| data | library | total s | kNN s | fuzzy set s | spectral start s | layout s | trust | flung |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, shape, label, total, stages, trust, flung in rows:
        if stages is None:
            print(f"| | umap-learn / umapviz | **{total:.2f}x** | | | | | | |")
            continue
        st = " | ".join(f"{stages[k]:.1f}" for k in ("knn", "graph", "start", "layout"))
        print(f"| {name} {shape[0]:,} x {shape[1]} | {label} | {total:.1f} | {st} | {trust:.4f} | {flung} |")


if __name__ == "__main__":
    main()
