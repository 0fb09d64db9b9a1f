"""Check that the static HTML replay animates in a browser with no kernel: headless Chromium screenshots.

    python bench/experiments/replay_check.py [--out bench/out] [--chromium chromium]

Writes a synthetic recording's replay to OUT/replay.html, screenshots it at two virtual times, and checks
that the two screenshots differ (different frames are on screen). Needs Debian's ``chromium`` package
(apt-get install -y chromium) or any Chromium/Chrome binary.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from umapviz import datasets, metrics
from umapviz.graph import build_graph
from umapviz.optimize import LayoutOptimizer
from umapviz.render import Recording, save_html


def synthetic_recording(n: int = 20000, frames: int = 8):
    """Three clusters that spread out over the epochs while a growing handful of points is flung away."""
    rng = np.random.default_rng(0)
    centres = np.array([[-6.0, 0.0], [6.0, 0.0], [0.0, 8.0]])
    labels = rng.integers(0, 3, n)
    base = rng.normal(size=(n, 2)) + centres[labels]
    rec = Recording(labels=labels, metadata={"source": "bench/experiments/replay_check.py"})
    for i in range(frames):
        t = (i + 1) / frames
        emb = (base * (0.3 + 0.7 * t)).astype(np.float32)
        flung = np.zeros(n, bool)
        flung[: 5 * i] = True
        angle = rng.uniform(0, 2 * np.pi, flung.sum())
        emb[flung] += (30 * t) * np.stack([np.cos(angle), np.sin(angle)], axis=1)
        rec.add(25 * i, emb, outliers=flung)
    return rec


def buffered_recording(n: int = 5000, n_epochs: int = 100, every: int = 5):
    """A real run: the kit's default dataset laid out with the buffered strategy, recorded every few epochs."""
    X, labels = datasets.load(datasets.DEFAULT, n_samples=n, random_state=0)
    graph = build_graph(X, n_epochs=n_epochs, random_state=0, progress=False)
    reference = LayoutOptimizer(graph, strategy="sequential", random_state=0, n_epochs=n_epochs)
    reference.run()
    opt = LayoutOptimizer(graph, strategy="buffered", random_state=0, n_epochs=n_epochs)
    rec = Recording(labels=labels, metadata={"dataset": datasets.DEFAULT, "strategy": "buffered", "n": n})
    rec.add(0, opt.embedding)

    def flung(embedding):
        return metrics.outliers(embedding, method="bounds", reference=reference.embedding)

    opt.run(callback=rec.recorder(flung), every=every)
    return rec


def screenshot(chromium: str, page: Path, png: Path, ms: int) -> None:
    cmd = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--screenshot={png}",
        "--window-size=720,720",
        f"--virtual-time-budget={ms}",
        page.resolve().as_uri(),
    ]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument(
        "--source",
        choices=("buffered", "synthetic"),
        default="buffered",
        help="a real buffered run of the default dataset, or synthetic moving clusters",
    )
    parser.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("google-chrome") or "")
    args = parser.parse_args(argv)
    if not args.chromium:
        print("no chromium found: apt-get install -y chromium (Debian) or pass --chromium PATH", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    recording = buffered_recording() if args.source == "buffered" else synthetic_recording()
    page = save_html(
        recording,
        args.out / "replay.html",
        fps=4,
        width=560,
        height=560,
        title=f"umapviz replay of a {args.source} run (no kernel)",
    )
    shots = []
    for ms in (100, 1100):  # at 4 frames/s: the first frame, then about the fifth
        png = args.out / f"replay_t{ms}ms.png"
        screenshot(args.chromium, page, png, ms)
        shots.append(np.asarray(Image.open(png).convert("RGB")))
        print(f"screenshot after {ms} ms of page time: {png}")
    changed = float((shots[0] != shots[1]).any(axis=2).mean())
    print(f"{page} ({page.stat().st_size / 1e6:.2f} MB): {changed:.1%} of the pixels differ between the shots")
    if changed == 0:
        print("FAIL: the two screenshots are identical: the replay did not advance", file=sys.stderr)
        return 1
    print("OK: the replay advances in a browser without a kernel")
    return 0


if __name__ == "__main__":
    sys.exit(main())
