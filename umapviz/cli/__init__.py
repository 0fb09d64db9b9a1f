"""Headless entry points, as ``umapviz COMMAND`` (or ``python -m umapviz COMMAND``):

- ``demo``: sequential, buffered and chunked runs of one dataset, their outliers and fingerprints in a table;
- ``compare``: chunked runs for several n_chunks and layout seeds, each against its seed's sequential layout,
  and which n_chunks are clean on every seed;
- ``bench``: each strategy's time per epoch on this machine (CPU or GPU), its ratio to hogwild, and (with
  ``--repeat 2``) whether the reproducible strategies repeat their bytes.
"""

from __future__ import annotations

import sys

from ..optimize.optimizer import REPRODUCIBLE
from .bench import BENCH_COLUMNS, BENCH_STRATEGIES, bench_table, run_bench
from .compare import COMPARE_CHUNKS, COMPARE_COLUMNS, COMPARE_SEEDS, SUMMARY_COLUMNS, compare_summary, run_compare
from .demo import DEFAULT_CHUNKS, run_demo
from .options import _name_flags, _parser
from .steps import REFERENCES
from .tables import DEMO_COLUMNS, describe_data, explain_columns, format_table

__all__ = [
    "BENCH_COLUMNS",
    "BENCH_STRATEGIES",
    "COMPARE_CHUNKS",
    "COMPARE_COLUMNS",
    "COMPARE_SEEDS",
    "DEFAULT_CHUNKS",
    "DEMO_COLUMNS",
    "REFERENCES",
    "SUMMARY_COLUMNS",
    "bench_table",
    "compare_summary",
    "describe_data",
    "explain_columns",
    "format_table",
    "main",
    "run_bench",
    "run_compare",
    "run_demo",
]


def main(argv: list[str] | None = None) -> int:
    """The ``umapviz`` command: 0 on success, 2 for bad input (said on stderr), 1 if a bench found a
    reproducible strategy that did not repeat its bytes, 130 after a Ctrl-C."""
    args = _parser().parse_args(argv)
    options = {k: v for k, v in vars(args).items() if k != "command"}
    run = {"demo": run_demo, "compare": run_compare, "bench": run_bench}[args.command]
    if args.command != "bench":  # the data's description first: the runs take a while
        options["announce"] = lambda text: print(text + "\n", flush=True)
    try:
        rows = run(**options)
    except (ValueError, TypeError, RuntimeError, OSError, ImportError) as exc:  # OSError: an unwritable folder
        print(f"umapviz {args.command}: error: {_name_flags(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: a line, not a traceback from deep inside a kernel loop
        print(f"umapviz {args.command}: interrupted", file=sys.stderr)
        return 130
    if args.command == "demo":
        print(format_table(rows))
        print()
        print(explain_columns(DEMO_COLUMNS, args.dataset))
    elif args.command == "compare":
        print(format_table(rows, COMPARE_COLUMNS))
        print()
        print(format_table(compare_summary(rows), SUMMARY_COLUMNS))
        print()
        print(explain_columns(COMPARE_COLUMNS + SUMMARY_COLUMNS[2:]))
    else:
        print(bench_table(rows))
        broken = [r["strategy"] for r in rows if r["repeats"] is False and r["strategy"] in REPRODUCIBLE]
        if broken:
            print(
                f"umapviz bench: {', '.join(broken)} did not repeat its bytes, which it promises: please "
                "report it with the command and this table.",
                file=sys.stderr,
            )
            return 1
    if getattr(args, "out", None):
        print(f"figures written to {args.out}")
    return 0
