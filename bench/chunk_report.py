"""Summarise bench/chunk_study.py results: tables (Markdown) and PNG plots of outliers and time against n_chunks.

    .venv/bin/python bench/chunk_report.py bench/chunk_study/cpu.jsonl [bench/chunk_study/gpu.jsonl ...]

Writes ``<out-dir>/tables.md`` and ``<out-dir>/{outliers,time}_vs_chunks[_<device>].png``. The rules' picks are
recomputed from each graph's recorded statistics with the current ``umapviz.optimize.chunks``, so the
tables always judge the rules as they stand in the code (a pick that the study has not run shows as "?":
rerun the study to fill it in). Needs matplotlib (bench only).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from chunk_study import read_results

from umapviz.optimize.chunks import chunks_for

RULES = ("shipped", "degree", "auto")
# On one H200 a chunked epoch costs the buffered one plus ~7 us per chunk, at 1M and at 5M points alike
# (bench/gpu_bench.py's layout runs). Used only for the modelled column; the study's GPU runs measure the
# real thing.
GPU_MS_PER_CHUNK = 0.007
# A run counts its bounds outliers only when its farthest point (from the coordinate-wise median) lies beyond
# FAR_FACTOR x the reference's farthest. Small layouts (a few thousand points) drift as a whole, so the bounds
# test flags up to every point of a layout whose shape matches the reference; flung points land 50-500x out.
FAR_FACTOR = 2.0


def group(records: list[dict]) -> dict[tuple, dict]:
    """(device, data, n) -> {"stats": per-seed graph stats, "runs": {(seed, n_chunks): record}, "ref": ...}."""
    cells: dict[tuple, dict] = defaultdict(lambda: {"stats": {}, "runs": {}, "ref": {}})
    for r in records:
        cell = cells[(r["device"], r["data"], r["n"])]
        cell["stats"][r["seed"]] = r
        if r["strategy"] == "chunked":
            cell["runs"][(r["seed"], r["n_chunks"])] = r
        else:
            cell["ref"][r["seed"]] = r
    return dict(sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])))


def picks(stats: dict) -> dict[str, int]:
    """Each rule's pick for one graph, from its recorded statistics and the rules in the code now."""
    return {rule: chunks_for(rule, stats["n_vertices"], stats["nnz"], stats["max_degree"]) for rule in RULES}


def flung(cell: dict, run: dict) -> int:
    """The run's bounds outliers if it flung a point far (see FAR_FACTOR), else 0."""
    ref = cell["ref"].get(run["seed"])
    if ref is None:
        return run["bounds"]
    return run["bounds"] if run["max_radius"] > FAR_FACTOR * ref["max_radius"] else 0


def outliers_at(cell: dict, seed: int, n_chunks: int) -> int | None:
    run = cell["runs"].get((seed, n_chunks))
    return None if run is None else flung(cell, run)


def drift_only(cell: dict) -> tuple[int, int, int]:
    """(runs, runs with bounds outliers but no far point, the largest such bounds count) of one cell."""
    runs = list(cell["runs"].values())
    drifted = [r["bounds"] for r in runs if r["bounds"] and not flung(cell, r)]
    return len(runs), len(drifted), max(drifted, default=0)


def excess_neighbors(cell: dict, seed: int, n_chunks: int) -> int | None:
    """Neighbour-gap outliers beyond the reference layout's own (which tears 1-D pieces and small clusters)."""
    run = cell["runs"].get((seed, n_chunks))
    ref = cell["ref"].get(seed)
    if run is None or ref is None:
        return None
    return max(0, run["neighbors"] - ref["neighbors"])


def smallest_safe(cell: dict, seed: int) -> tuple[int | None, int | None]:
    """(first tested n_chunks with zero bounds outliers, first one from which every larger tested value is
    zero too) for one seed."""
    tested = sorted(c for (s, c) in cell["runs"] if s == seed)
    first = next((c for c in tested if outliers_at(cell, seed, c) == 0), None)
    settled = None
    for c in reversed(tested):
        if outliers_at(cell, seed, c) != 0:
            break
        settled = c
    return first, settled


def ms_per_epoch(cell: dict, n_chunks: int) -> float | None:
    """Median over seeds of each run's median epoch time, in ms."""
    times = [r["median_epoch_seconds"] for (s, c), r in cell["runs"].items() if c == n_chunks]
    return 1e3 * float(np.median(times)) if times else None


def fmt(value, digits: int = 1) -> str:
    if value is None:
        return "?"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def seed_list(values: list) -> str:
    return "/".join(fmt(v) for v in values)


def tables(cells: dict[tuple, dict]) -> str:
    lines = []
    lines.append("### Graphs, flung points per n_chunks (per seed), smallest safe n_chunks\n")
    lines.append(
        "| device | data | n | kNN | nnz | max deg | p99 deg | mean deg | "
        "reference's own neighbors outliers | flung points at n_chunks = ... (seeds joined by /) | "
        "smallest zero (per seed) | zero from there on | shipped | degree | auto |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (device, data, n), cell in cells.items():
        seeds = sorted(cell["stats"])
        st = [cell["stats"][s] for s in seeds]
        chunk_values = sorted({c for (_, c) in cell["runs"]})
        ladder = "; ".join(f"{c}: {seed_list([outliers_at(cell, s, c) for s in seeds])}" for c in chunk_values)
        safe = [smallest_safe(cell, s) for s in seeds]
        pk = [picks(x) for x in st]
        refs = seed_list([cell["ref"][s]["neighbors"] if s in cell["ref"] else None for s in seeds])
        lines.append(
            f"| {device} | {data} | {n} | {knn_method(st)} | {seed_list([x['nnz'] for x in st])} | "
            f"{seed_list([x['max_degree'] for x in st])} | {seed_list([round(x['p99_degree']) for x in st])} | "
            f"{np.mean([x['mean_degree'] for x in st]):.1f} | {refs} | {ladder} | "
            f"{seed_list([f for f, _ in safe])} | {seed_list([s for _, s in safe])} | "
            + " | ".join(seed_list([p[rule] for p in pk]) for rule in RULES)
            + " |"
        )
    lines.append("")
    lines.append("### The rules' picks: flung points, excess neighbour outliers over the reference, ms per epoch\n")
    lines.append(
        "| device | data | n | rule | n_chunks (per seed) | flung (per seed) | excess neighbors (per seed) | "
        "ms/epoch (median) | safe |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for (device, data, n), cell in cells.items():
        seeds = sorted(cell["stats"])
        for rule in RULES:
            values = [picks(cell["stats"][s])[rule] for s in seeds]
            bounds = [outliers_at(cell, s, c) for s, c in zip(seeds, values, strict=True)]
            excess = [excess_neighbors(cell, s, c) for s, c in zip(seeds, values, strict=True)]
            times = [ms_per_epoch(cell, c) for c in values]
            known = [t for t in times if t is not None]
            safe = "?" if None in bounds else ("yes" if not any(bounds) else "**no**")
            lines.append(
                f"| {device} | {data} | {n} | {rule} | {seed_list(values)} | {seed_list(bounds)} | "
                f"{seed_list(excess)} | {fmt(float(np.mean(known)) if known else None, 2)} | {safe} |"
            )
    lines.append("")
    return "\n".join(lines)


def knn_method(stats: list[dict]) -> str:
    """How the graphs of one cell got their kNN (records before this field: "-"), with the worst share of
    sampled rows that matched brute force where the study checked it (kNN within clusters)."""
    methods = "/".join(sorted({x.get("knn", "-") for x in stats}))
    checks = [x["knn_check"] for x in stats if x.get("knn_check") is not None]
    return f"{methods} (check {min(checks):.1%})" if checks else methods  # 255 of 256 is not 100%


def span(values: list) -> str:
    """'a' or 'a-b' for a list of numbers (the seeds of one cell)."""
    lo, hi = min(values), max(values)
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def summary(cells: dict[tuple, dict]) -> str:
    """One line per graph: flung points at 1, 2 and 4 chunks, the smallest safe n_chunks, and each rule's pick
    with the points it left flung (summed over seeds)."""
    lines = [
        "### Summary: flung points (per seed) and the rules' picks\n",
        "| device | data | n | seeds | max degree | 1 chunk | 2 chunks | 4 chunks | smallest safe (worst seed) | "
        "shipped: pick, flung | degree: pick, flung | auto: pick, flung |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (device, data, n), cell in cells.items():
        seeds = sorted(cell["stats"])
        settled = [smallest_safe(cell, s)[1] for s in seeds]
        worst = "?" if None in settled else str(max(settled))
        row = [device, data, f"{n:,}", str(len(seeds)), span([cell["stats"][s]["max_degree"] for s in seeds])]
        row += [seed_list([outliers_at(cell, s, c) for s in seeds]) for c in (1, 2, 4)]
        row.append(worst)
        for rule in RULES:
            values = [picks(cell["stats"][s])[rule] for s in seeds]
            found = [outliers_at(cell, s, c) for s, c in zip(seeds, values, strict=True)]
            row.append(f"{span(values)}, {'?' if None in found else sum(found)}")
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    return "\n".join(lines)


def drift_table(cells: dict[tuple, dict]) -> str:
    """The cells where the bounds test fired without a far point: whole-layout drift, not flung points."""
    lines = [
        "### Bounds outliers without a far point (layout drift, not counted)\n",
        "| device | data | n | runs | runs with bounds > 0 but no point beyond 2x the reference's extent | "
        "largest such bounds count |",
        "|---|---|---|---|---|---|",
    ]
    for (device, data, n), cell in cells.items():
        runs, drifted, largest = drift_only(cell)
        if drifted:
            lines.append(f"| {device} | {data} | {n} | {runs} | {drifted} | {largest} |")
    lines.append("")
    return "\n".join(lines)


def before_after(cells: dict[tuple, dict]) -> str:
    """Shipped against auto on every graph of the study: outliers summed over seeds and time per epoch."""
    lines = [
        '### "auto" before (shipped rule) and after\n',
        "| device | data | n | shipped: n_chunks | outliers (sum over seeds) | ms/epoch | auto: n_chunks | "
        "outliers | ms/epoch | time auto / shipped | H200 model: auto - shipped, ms/epoch |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ratios = []
    for (device, data, n), cell in cells.items():
        seeds = sorted(cell["stats"])
        row = [device, data, str(n)]
        times = []
        for rule in ("shipped", "auto"):
            values = [picks(cell["stats"][s])[rule] for s in seeds]
            bounds = [outliers_at(cell, s, c) for s, c in zip(seeds, values, strict=True)]
            t = [ms_per_epoch(cell, c) for c in values]
            t_known = [x for x in t if x is not None]
            mean_t = float(np.mean(t_known)) if len(t_known) == len(t) else None
            times.append(mean_t)
            total = None if None in bounds else sum(bounds)
            row += [seed_list(values), fmt(total), fmt(mean_t, 2)]
        ratio = times[1] / times[0] if None not in times and times[0] > 0 else None
        if ratio is not None:
            ratios.append((device, ratio))
        row.append(fmt(ratio, 2))
        mean_picks = [np.mean([picks(cell["stats"][s])[rule] for s in seeds]) for rule in ("shipped", "auto")]
        row.append(f"{GPU_MS_PER_CHUNK * (mean_picks[1] - mean_picks[0]):+.3f}")
        lines.append("| " + " | ".join(row) + " |")
    for device in sorted({d for d, _ in ratios}):
        r = [x for d, x in ratios if d == device]
        lines.append(
            f"\n{device}: auto / shipped time per epoch, geometric mean over {len(r)} graphs: "
            f"{float(np.exp(np.mean(np.log(r)))):.3f} (min {min(r):.2f}, max {max(r):.2f})"
        )
    lines.append("")
    return "\n".join(lines)


def plots(cells: dict[tuple, dict], out_dir: Path, device: str) -> list[Path]:
    import matplotlib  # noqa: PLC0415 - bench-only dependency

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    import matplotlib.ticker  # noqa: PLC0415

    mine = {k: v for k, v in cells.items() if k[0] == device and v["runs"]}
    names = sorted({data for (_, data, _) in mine})
    if not names:
        return []
    written = []
    top_outliers = max([20] + [flung(cell, r) for cell in mine.values() for r in cell["runs"].values()])
    for what in ("outliers", "time"):
        cols = min(3, len(names))
        rows = -(-len(names) // cols)
        fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
        for ax, name in zip(axes.flat, names, strict=False):
            sizes = sorted(n for (_, data, n) in mine if data == name)
            colours = plt.cm.viridis(np.linspace(0, 0.9, max(len(sizes), 1)))
            for colour, n in zip(colours, sizes, strict=True):
                cell = mine[(device, name, n)]
                values = sorted({c for (_, c) in cell["runs"]})
                seeds = sorted(cell["stats"])
                if what == "outliers":
                    y = [max(outliers_at(cell, s, c) or 0 for s in seeds) for c in values]
                else:
                    y = [ms_per_epoch(cell, c) for c in values]
                ax.plot(values, y, "o-", color=colour, label=f"n={n:,}", ms=3)
                for rule, marker in (("shipped", "s"), ("auto", "*")):
                    c = picks(cell["stats"][seeds[0]])[rule]
                    if c in values:
                        ax.plot(
                            [c],
                            [y[values.index(c)]],
                            marker,
                            color=colour,
                            ms=10 if marker == "*" else 7,
                            mfc="none" if marker == "s" else colour,
                        )
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:g}"))
            if what == "outliers":
                ax.set_yscale("symlog", linthresh=1)
                ax.set_ylim(-0.2, top_outliers * 1.5)
                ax.set_yticks([t for t in (0, 1, 3, 10, 30, 100, 300, 1000, 3000, 10000) if t <= top_outliers * 1.5])
                ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
                ax.set_ylabel("flung points (max over seeds)")
            else:
                ax.set_ylabel("ms per epoch (median)")
            ax.set_xlabel("n_chunks  (square: shipped pick, star: auto)")
            ax.set_title(name)
            ax.legend(fontsize=7)
            ax.grid(alpha=0.3)
        for ax in list(axes.flat)[len(names) :]:
            ax.axis("off")
        fig.tight_layout()
        path = out_dir / f"{what}_vs_chunks{'' if device == 'cpu' else '_' + device}.png"
        save_figure(fig, path)
        plt.close(fig)
        written.append(path)
    return written


def save_figure(fig, path: Path) -> None:
    """Save a PNG atomically (temp file, then os.replace)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".png.tmp")
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=110, format="png")
        os.chmod(tmp, 0o644)  # mkstemp makes it private; results are for everyone
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", help="JSON-lines files written by chunk_study.py")
    parser.add_argument("--out-dir", default="bench/chunk_study")
    args = parser.parse_args()
    records: dict[str, dict] = {}
    for path in args.inputs:
        records.update(read_results(Path(path)))
    if not records:
        raise SystemExit(f"no records in {args.inputs}: run bench/chunk_study.py first")
    cells = group(list(records.values()))
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    text = "\n".join([summary(cells), tables(cells), before_after(cells), drift_table(cells)])
    fd, tmp = tempfile.mkstemp(dir=out_dir, suffix=".md.tmp")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, out_dir / "tables.md")
    print(text)
    for device in sorted({k[0] for k in cells}):
        for path in plots(cells, out_dir, device):
            print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
