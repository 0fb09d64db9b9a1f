"""Headless entry points: `umapviz demo` (and `python -m umapviz demo`)."""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np

from .optimize.chunks import RULES, check_n_chunks, resolve_n_chunks

DEFAULT_CHUNKS: tuple[int | str, ...] = (1, 4, 16, "auto", "degree")

# Errors from the Python API name its parameters ("n_neighbors=1 is too small"); the demo's user typed flags.
# Parameters with an underscore are names wherever they appear; device and init are words too, so only their
# "device=..." form is one. "n_epochs=None" (the default) is "leave out --n-epochs" on the command line.
_API_NAMES = re.compile(
    r"\b(?:(n_samples|n_chunks|n_neighbors|n_epochs|random_state|label_column)\b|(device|init)(?==))(=None\b|=)?"
)


def _name_flags(message: str) -> str:
    """An API error message with each parameter (``n_neighbors=1``) said as the demo's flag (``--n-neighbors 1``)."""

    def flag(match: re.Match) -> str:
        name = "--" + (match[1] or match[2]).replace("_", "-")
        if match[3] == "=None":
            return f"leave out {name}"
        return name + (" " if match[3] else "")

    return _API_NAMES.sub(flag, message)


def _parse_chunks(text: str) -> list[int | str]:
    """--n-chunks: whole numbers >= 1 and rule names, comma-separated; a typo fails before any work."""
    out: list[int | str] = []
    for part in text.split(","):
        part = part.strip()
        try:
            out.append(check_n_chunks(int(part) if part.isdigit() else part))
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(
                f"{part!r} is not an n_chunks value: use whole numbers >= 1 or {', '.join(RULES)}, "
                "comma-separated (e.g. 4,16,auto)."
            ) from None
    return out


def run_demo(
    dataset: str | None = None,
    n_samples: int | None = None,
    n_chunks: list[int | str] | None = None,
    random_state: int = 0,
    device: str = "cpu",
    n_epochs: int | None = None,
    init: str = "spectral",
    out: str | Path | None = None,
    progress: bool = True,
    n_neighbors: int = 15,
    label_column: str | None = None,
) -> list[dict]:
    """Run sequential, buffered and chunked (each n_chunks) on one dataset; return one row per run.

    Outliers are counted two ways: "bounds" (outside the sequential layout's per-axis [min - 2 std,
    max + 2 std]) and "neighbors" (far from all graph neighbours); see umapviz.metrics. ``label_column``
    picks the class column of a data file (see umapviz.datasets.load).
    """
    from tqdm.auto import tqdm  # noqa: PLC0415

    from . import datasets, metrics  # noqa: PLC0415
    from .graph import build_graph  # noqa: PLC0415
    from .optimize import LayoutOptimizer  # noqa: PLC0415

    out = None if out is None else Path(out).expanduser()
    if out is not None and out.exists() and not out.is_dir():
        # Checked before the runs: found at the end, it cost every run's work.
        raise ValueError(f"--out {out} is a file; give a folder for the figures (it is made if missing).")
    if out is not None:
        try:  # made now for the same reason: a folder that cannot be made was found after every run
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(
                f"--out {out}: the folder cannot be made ({exc.strerror}); give a writable folder."
            ) from exc
    from ._backend import resolve_device  # noqa: PLC0415

    resolve_device(device)  # no usable GPU is said before the data and graph, not after them
    name = datasets.DEFAULT if dataset is None else dataset  # "" is a typo, not a wish for the default
    X, labels = datasets.load(name, n_samples=n_samples, random_state=random_state, label_column=label_column)
    graph = build_graph(X, n_neighbors=n_neighbors, n_epochs=n_epochs, random_state=random_state, progress=progress)
    trust_k = max(1, min(5, (len(X) - 1) // 2))  # trustworthiness needs k < n / 2 (tiny --n-samples)
    runs: list[tuple[str, int | str]] = [("sequential", 1), ("buffered", 1)]
    runs += [("chunked", c) for c in (n_chunks or DEFAULT_CHUNKS)]
    for _, chunks in runs:  # an n_chunks beyond the graph's edges, before the runs rather than after two of them
        resolve_n_chunks(chunks, graph)
    rows: list[dict] = []
    embeddings: list[np.ndarray] = []
    masks: list[np.ndarray] = []  # bounds outliers, for the table and the figure
    reference = None
    for strategy, chunks in tqdm(runs, desc="demo", disable=not progress):
        opt = LayoutOptimizer(graph, strategy=strategy, n_chunks=chunks, random_state=random_state, init=init,
                              n_epochs=n_epochs, device=device)
        start = time.perf_counter()
        opt.run()
        seconds = time.perf_counter() - start
        emb = opt.embedding
        if reference is None:
            reference = emb
        masks.append(metrics.outliers(emb, method="bounds", reference=reference))
        rows.append({
            "strategy": strategy,
            "n_chunks": opt.n_chunks if strategy == "chunked" else "-",
            "rule": chunks if isinstance(chunks, str) else "",
            "outliers_bounds": int(masks[-1].sum()),
            "outliers_neighbors": int(metrics.outliers(emb, graph, method="neighbors").sum()),
            "trustworthiness": float(metrics.trustworthiness(X, emb, n_neighbors=trust_k)),
            "s_per_epoch": seconds / opt.n_epochs,
            "fingerprint": metrics.fingerprint(emb),
        })
        embeddings.append(emb)
    if out is not None:
        _write_figures(out, rows, embeddings, masks, labels)
    return rows


def _write_figures(out: Path, rows: list[dict], embeddings: list[np.ndarray], masks: list[np.ndarray],
                   labels) -> None:
    from .render import save_png, side_by_side  # noqa: PLC0415 - plotting only when asked for

    out.mkdir(parents=True, exist_ok=True)
    titles = [r["strategy"] + (f" n_chunks={r['n_chunks']}" if r["strategy"] == "chunked" else "")
              + (f" ({r['rule']})" if r["rule"] else "") for r in rows]
    image = side_by_side(embeddings, titles=titles, labels=labels, outliers=masks)
    save_png(image, out / "side_by_side.png")


def format_table(rows: list[dict]) -> str:
    """A plain-text table of demo rows."""
    head = ["strategy", "n_chunks", "rule", "outliers(bounds)", "outliers(neighbors)", "trust", "s/epoch",
            "fingerprint"]
    body = [[r["strategy"], str(r["n_chunks"]), str(r["rule"]), str(r["outliers_bounds"]),
             str(r["outliers_neighbors"]), f"{r['trustworthiness']:.4f}", f"{r['s_per_epoch']:.4f}",
             r["fingerprint"]] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths, strict=True)) for b in body]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="umapviz", description="See how UMAP's layout optimizer behaves.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="compare strategies on a dataset and print a table")
    demo.add_argument("--dataset", default=None, help="dataset name or file path (default: the kit's default)")
    demo.add_argument("--label-column", default=None, metavar="NAME",
                      help="the column of a CSV/Parquet file (or array of an .npz) that holds the classes "
                           "(default: one named label, labels, target or class, in any case)")
    demo.add_argument("--n-samples", type=int, default=None)
    demo.add_argument("--n-chunks", type=_parse_chunks, default=list(DEFAULT_CHUNKS),
                      help="comma-separated n_chunks values for the chunked runs (ints, auto, shipped, degree)")
    demo.add_argument("--n-neighbors", type=int, default=15)
    demo.add_argument("--random-state", type=int, default=0)
    demo.add_argument("--n-epochs", type=int, default=None)
    demo.add_argument("--init", default="spectral", choices=["spectral", "random"])
    demo.add_argument("--device", default="cpu", choices=["cpu", "gpu", "auto"])
    demo.add_argument("--out", default=None, help="folder for figures (PNG side by side)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        try:
            rows = run_demo(args.dataset, args.n_samples, args.n_chunks, args.random_state, args.device,
                            args.n_epochs, args.init, args.out, n_neighbors=args.n_neighbors,
                            label_column=args.label_column)
        except (ValueError, TypeError, RuntimeError, OSError, ImportError) as exc:  # OSError: an unwritable folder
            print(f"umapviz demo: error: {_name_flags(str(exc))}", file=sys.stderr)
            return 2
        print(format_table(rows))
        if args.out:
            print(f"figures written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
