"""The comparison grid on the default dataset, headless: its table (Markdown and CSV) and the grid as a PNG.

    .venv/bin/python bench/compare_default.py [--n-samples N] [--epochs-per-frame 20]

Writes bench/out/compare_default.md, .csv and .png. Runs umapviz.compare's defaults:
strategy "chunked", n_chunks in [1, 4, 16, "auto"], random_state in [0, 1].
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from umapviz.render import save_png
from umapviz.widgets import compare


def markdown(table) -> str:
    """A Markdown table without the optional 'tabulate' package."""
    cells = [[str(c) for c in table.columns]]
    for row in table.itertuples(index=False):
        cells.append([f"{v:.4f}" if isinstance(v, float) else str(v) for v in row])
    lines = ["| " + " | ".join(r) + " |" for r in cells]
    lines.insert(1, "|" + "---|" * len(table.columns))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n-samples", type=int, default=None)
    parser.add_argument("--epochs-per-frame", type=int, default=20)
    args = parser.parse_args()

    start = time.perf_counter()
    grid = compare(n_samples=args.n_samples, epochs_per_frame=args.epochs_per_frame, panel_size=240)
    table = grid.run(block=True).table()
    seconds = time.perf_counter() - start

    out = Path(__file__).resolve().parent / "out"
    out.mkdir(exist_ok=True)
    table.to_csv(out / "compare_default.csv", index=False)
    text = (f"{markdown(table)}\n\n{grid.graph.n_vertices:,} points, {seconds:.0f} s in all "
            f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)\n")  # fmt: skip
    (out / "compare_default.md").write_text(text)
    print(text)
    frames = grid.frames()
    columns = 4
    rows = [np.concatenate(frames[i : i + columns], axis=1) for i in range(0, len(frames), columns)]
    if len(rows) > 1 and rows[-1].shape != rows[0].shape:
        rows = rows[:-1]  # a ragged last row: the table has every configuration anyway
    save_png(np.concatenate(rows, axis=0), out / "compare_default.png")
    grid.close()


if __name__ == "__main__":
    main()
